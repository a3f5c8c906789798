//! Benchmark programs, built by `zig build bench` (use -Doptimize=ReleaseFast) into
//! zig-out/bin/. Each entry: name, files, and `runtime_only` (link libloomrt instead of libloom).
pub const programs = .{
    // .{ .name = "bench-example", .files = &[_][]const u8{"bench/example/main.c"}, .runtime_only = false },
    .{ .name = "bench-limits", .files = &[_][]const u8{"bench/limits/limits.c"}, .runtime_only = true },
};

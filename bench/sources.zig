//! Benchmark programs, built by `zig build bench` (use -Doptimize=ReleaseFast) into
//! zig-out/bin/. Each entry: name, files, and `runtime_only` (link libloomrt instead of libloom).
pub const programs = .{
    .{ .name = "bench-kernels", .files = &[_][]const u8{ "bench/kernels/main.c", "bench/common/machine_limits.c" }, .runtime_only = false, .system_libs = &[_][]const u8{"openblas"} },
    // .{ .name = "bench-example", .files = &[_][]const u8{"bench/example/main.c"}, .runtime_only = false },
    .{ .name = "bench-libcall", .files = &[_][]const u8{"bench/libcall/main.c"}, .runtime_only = false, .system_libs = &[_][]const u8{"openblas"} },
    .{ .name = "bench-symbolic", .files = &[_][]const u8{"bench/symbolic/bench_symbolic.c"}, .runtime_only = false },
    .{ .name = "bench-vm", .files = &[_][]const u8{"bench/vm/main.c"}, .runtime_only = true },
    // issue 20: one runtime, several threads, random shapes, minutes; not a CI test.
    .{ .name = "bench-soak", .files = &[_][]const u8{"bench/soak/main.c"}, .runtime_only = false },
    .{ .name = "bench-e2e", .files = &[_][]const u8{ "bench/e2e/main.c", "bench/common/machine_limits.c" }, .runtime_only = false },
    .{ .name = "bench-limits", .files = &[_][]const u8{ "bench/limits/limits.c", "bench/common/machine_limits.c" }, .runtime_only = true },
    // issue 23: one compilation, in process (bench/compile runs it cold, warm, after a change).
    .{ .name = "bench-compile", .files = &[_][]const u8{"bench/compiletime/main.c"}, .runtime_only = false },
    // issue 25: the C side of bench/python/overhead.py (per-call cost from Python vs C).
    .{ .name = "bench-pycall-c", .files = &[_][]const u8{"bench/python/call_c.c"}, .runtime_only = false },
    .{ .name = "bench-loom-serve", .files = &[_][]const u8{"bench/loomserve/main.c"}, .runtime_only = false },
};

//! targets/cuda: compiled only when the CUDA toolkit is present (see build.zig).
pub const runtime = [_][]const u8{
    "targets/cuda/device.c",
};
pub const compiler = [_][]const u8{};

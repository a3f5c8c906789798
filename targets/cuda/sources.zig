//! targets/cuda: compile side, built only when the CUDA toolkit is present (see build.zig).
//! The run side (device.c) is in libloomrt's one list, src/runtime/sources.zig.
pub const compiler = [_][]const u8{};

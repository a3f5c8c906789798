//! targets/cuda: compile side, built only when the CUDA toolkit is present (see build.zig):
//! the CUDA target (target_cuda.c) and PTX codegen (ptx.c, through the CPU code generator's
//! lowering with loom_cpu_options.nvptx). The run side (device.c) is in libloomrt's one list,
//! src/runtime/sources.zig.
pub const compiler = [_][]const u8{
    "targets/cuda/ptx.c",
    "targets/cuda/target_cuda.c",
};

//! targets/cpu: code generation through LLVM-C (compiler side, libloom only). The CPU's
//! runtime side (the thread pool, the CPU device) is in vm/.
pub const compiler = [_][]const u8{
    "targets/cpu/host.c",
    "targets/cpu/cg_expr.c",
    "targets/cpu/cg_speculate.c",
    "targets/cpu/cg_numeric.c",
    "targets/cpu/cg_stmt.c",
    "targets/cpu/cg_lanes.c",
    "targets/cpu/cg_transpose.c",
    "targets/cpu/cg_gpu.c",
    "targets/cpu/cg_target.c",
    "targets/cpu/cg_cache.c",
    "targets/cpu/kcache.c",
    "targets/cpu/target_cpu.c",
    "targets/cpu/link.c",
};

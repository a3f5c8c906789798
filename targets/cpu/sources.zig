//! targets/cpu: code generation through LLVM-C (compiler side) and the CPU
//! runtime pieces generated code calls (runtime side).
pub const runtime = [_][]const u8{
    "targets/cpu/threadpool.c",
};
pub const compiler = [_][]const u8{
    "targets/cpu/host.c",
    "targets/cpu/cg_expr.c",
    "targets/cpu/cg_stmt.c",
    "targets/cpu/cg_target.c",
    "targets/cpu/target_cpu.c",
};

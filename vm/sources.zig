//! vm/: source list (runtime part goes into libloomrt, compiler part into libloom only).
pub const runtime = [_][]const u8{
    "vm/object.c",
    "vm/exec_build.c",
    "vm/exec_io.c",
    "vm/verify.c",
    "vm/interp.c",
    "vm/disasm.c",
    "vm/rt_api.c",
    "vm/symeval.c",
};
pub const compiler = [_][]const u8{};

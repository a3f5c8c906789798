//! libcall/: compile side (libloom only). The run side (call.c, blas.c, sigtext.c,
//! provider.c) is in libloomrt's one list, src/runtime/sources.zig.
pub const compiler = [_][]const u8{
    "libcall/decl.c",
};

//! libcall/: source list (runtime part goes into libloomrt, compiler part into libloom only).
pub const runtime = [_][]const u8{
    "libcall/call.c",
    "libcall/blas.c",
    "libcall/sigtext.c",
};
pub const compiler = [_][]const u8{
    "libcall/decl.c",
};

//! src/base/: arena, vectors, map, interning, status, diagnostics, dtypes, logging.
//! All of it is runtime code (part of libloomrt).
pub const runtime = [_][]const u8{
    "src/base/alloc.c",
    "src/base/arena.c",
    "src/base/clock.c",
    "src/base/diag.c",
    "src/base/dtype.c",
    "src/base/file.c",
    "src/base/hash.c",
    "src/base/intern.c",
    "src/base/log.c",
    "src/base/lowp.c",
    "src/base/map.c",
    "src/base/npy.c",
    "src/base/status.c",
    "src/base/strbuf.c",
    "src/base/vec.c",
};
pub const compiler = [_][]const u8{};

//! src/serve/: `loom serve`'s engine (compiler side: it compiles the model, so libloom).
//! http.c (libmicrohttpd) is linked into the `loom` program only (src/driver/sources.zig).
pub const compiler = [_][]const u8{
    "src/serve/pages.c",
    "src/serve/sample.c",
    "src/serve/sched.c",
    "src/serve/cost.c",
    "src/serve/metrics.c",
    "src/serve/engine.c",
};

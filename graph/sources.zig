//! graph/: source list (runtime part goes into libloomrt, compiler part into libloom only).
pub const runtime = [_][]const u8{};
pub const compiler = [_][]const u8{};

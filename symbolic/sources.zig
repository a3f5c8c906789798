//! symbolic/: source list (libloom only: symbolic links GMP, so none of it is runtime code).
pub const compiler = [_][]const u8{
    "symbolic/sym_ctx.c",
    "symbolic/sym_num.c",
    "symbolic/sym_poly.c",
    "symbolic/sym_div.c",
    "symbolic/sym_minmax.c",
    "symbolic/sym_facts.c",
    "symbolic/sym_bounds.c",
    "symbolic/sym_simplify.c",
    "symbolic/sym_eval.c",
    "symbolic/sym_bind.c",
    "symbolic/sym_print.c",
    "symbolic/sym_parse.c",
};

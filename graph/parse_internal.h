/* parse_internal.h — what the text parser's files share (grammar in docs/ir.md). Not a public
 * interface: the parser's entry point is loom_graph_parse in graph.h.
 *
 *   parse_lex.c    errors, tokens, numbers, strings; scopes and symbolic expressions
 *   parse_types.c  struct info (Tensor[...], Shape[...], Tuple[...], ...)
 *   parse_expr.c   leaves, attributes, operator calls and the other values of a binding
 *   parse_decl.c   bindings (with inference), blocks, functions, constants
 *   parse.c        externs, the prescan for forward references, the module and its entry point
 *
 * Scoping is enforced as the text is read: a symbolic variable is defined at its first
 * occurrence in a parameter's struct info or a match_cast target (or as the name of a fresh
 * symbol an op introduced); a graph variable is visible after its binding, and a dataflow block
 * only exports its `output` names. */
#ifndef LOOM_GRAPH_PARSE_INTERNAL_H
#define LOOM_GRAPH_PARSE_INTERNAL_H
#include "graph/graph_internal.h"

typedef struct name_ent {
  const char *name;      /* interned */
  const void *val;       /* loom_graph_expr* (vars) or loom_sym_expr* (symbols) */
} name_ent;
typedef LOOM_VEC(name_ent) name_vec;
typedef LOOM_VEC(const loom_sym_expr *) gp_sym_vec;

/* How a symbolic name not in scope is treated: an error (RESOLVE), a new var (DEFINE), or a new
 * var also recorded in `fresh` (ANNOT: an annotation that may name an op's fresh symbols). */
enum { SYM_RESOLVE, SYM_DEFINE, SYM_ANNOT };

typedef struct parser {
  loom_graph_module *m;
  const loom_source *src;   /* the caller's source: diagnostics point into it */
  const loom_source *ir_src; /* the module's own copy: locations stored in the IR */
  const char *s;
  size_t len, pos;
  loom_diag_list *diags;
  name_vec vars;            /* graph vars in scope (stack) */
  name_vec syms;            /* symbolic vars in scope (stack) */
  name_vec fresh;           /* SYM_ANNOT: names created by the annotation being read */
  int sym_mode;
  const char *fn;           /* function being parsed */
  const char *binding;      /* binding being parsed (for messages) */
  int depth;                /* nesting of struct info and if-branches (bounded) */
  LOOM_VEC(const char *) prims; /* names of every `prim` in the file (prescan): call_tp may refer ahead */
} parser;

/* Deepest nesting of Tuple/Func struct info and `if` branches: hostile input cannot exhaust
 * the stack. */
enum { MAX_DEPTH = 256 };

/* ---- parse_lex.c ---- */
/* A parse error at `off` (file:line:col with a caret, into p->diags). */
loom_status gp_err(parser *p, size_t off, const char *fmt, ...) LOOM_PRINTF(3, 4);
/* A semantic error (inference, scoping) at `off`, with the function and binding named. */
loom_status gp_sem_err(parser *p, size_t off, loom_status cause);
void gp_skip_ws(parser *p);
/* The next character after white space and comments ('\0' at the end). */
char gp_peek(parser *p);
/* Consumes `tok` if it comes next. */
bool gp_accept(parser *p, const char *tok);
loom_status gp_expect(parser *p, const char *tok);
bool gp_is_id0(char c);
/* ident := [A-Za-z_][A-Za-z0-9_]* */
bool gp_ident(parser *p, const char **start, size_t *n);
bool gp_is_kw(const char *s, size_t n, const char *kw);
/* Looks at the next identifier without consuming it. */
bool gp_peek_kw(parser *p, const char *kw);
loom_status gp_expect_ident(parser *p, const char *what, const char **out);
/* '@' ident */
loom_status gp_global_name(parser *p, const char **out);
/* number := '-'? digits ('.' digits)? (('e'|'E') '-'? digits)? | 'inf' | '-inf' | 'nan' */
loom_status gp_number(parser *p, double *out, bool *is_int, int64_t *iv);
/* string := '"' [^"\n]* '"' */
loom_status gp_string_lit(parser *p, const char **out);
/* The innermost entry of scope stack `v` named `name` (interned), or NULL. */
const void *gp_lookup(const name_vec *v, const char *name);
loom_status gp_push_name(parser *p, void *vec, const char *name, const void *val);
/* A symbolic expression; names resolve (or are defined) by p->sym_mode. */
loom_status gp_sym_expr(parser *p, const loom_sym_expr **out);
/* syms := sym (',' sym)* ','?   up to `close` */
loom_status gp_sym_list(parser *p, char close, gp_sym_vec *out);

/* ---- parse_types.c ---- */
loom_status gp_dtype_tok(parser *p, loom_dtype *out);
/* sinfo := 'Object' | 'Scalar' '[' ... ']' | 'Shape' '[' ... ']' | 'Tensor' '[' ... ']' | 'Tuple' | 'Func' */
loom_status gp_sinfo(parser *p, const loom_sinfo **out);
/* Skips balanced text up to (not including) `stop` at depth 0 (annotations are read after
 * the value they describe). */
loom_status gp_skip_to(parser *p, char stop);

/* ---- parse_expr.c ---- */
const loom_graph_const *gp_find_const(parser *p, const char *name);
/* leaf := ident | '@' name | 'const' '(' number ',' dtype ')' | 'shape' '(' syms ')' | 'sym' '(' sym ')' */
loom_status gp_leaf(parser *p, loom_graph_expr **out);
/* A copy of n exprs in the module's arena (never NULL-sized). */
loom_graph_expr **gp_copy_exprs(parser *p, size_t n, loom_graph_expr *const *src);
/* The value of a binding: if, call_tp / call_extern, a function call, a tuple, an operator
 * call, or a leaf with tuple indices. */
loom_status gp_value(parser *p, loom_graph_expr **out);

/* ---- parse_decl.c ---- */
/* Words that cannot name a variable (the printer must be able to print every name). */
bool gp_reserved(const char *name);
/* seq := (dataflow | binding)* 'return' leaf */
loom_status gp_seq(parser *p, loom_graph_seq **out);
/* params := '(' (ident ':' sinfo),* ')' */
loom_status gp_param_list(parser *p, loom_graph_func *f);
/* func := 'fn' '@' name ... (after 'fn') */
loom_status gp_func(parser *p);
/* const := 'const' '@' name ':' sinfo '=' '[' number,* ']'   (after 'const') */
loom_status gp_constant(parser *p);
#endif

/* pass_internal.h — what the graph passes (pass_*.c) share: one walk over a function that
 * substitutes uses, tracks which symbolic vars are in scope, and lets a pass visit each
 * binding; helpers to replace a binding's value or its var, and to recompute dataflow
 * outputs. */
#ifndef LOOM_GRAPH_PASS_INTERNAL_H
#define LOOM_GRAPH_PASS_INTERNAL_H

#include "base/map.h"
#include "graph/graph_internal.h"
#include "graph/passes.h"

typedef struct loom_pass loom_pass;

/* Called for every binding in order, after the uses in its value were substituted (and,
 * for an `if`, after both branches were walked; for a loop, after its body). Set *drop to remove the binding (its var
 * must then have a replacement: loom_pass_replace_var). */
typedef loom_status (*loom_pass_visit_fn)(loom_pass *p, loom_graph_binding *b, bool *drop);

struct loom_pass {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_graph_func *f;                   /* function being rewritten */
  loom_pass_visit_fn visit;             /* per binding (NULL: substitution only) */
  void (*begin)(loom_pass *p);          /* at the start of each function (may be NULL) */
  void (*enter)(loom_pass *p);          /* before an `if` branch or a loop's body is walked (may be NULL) */
  void (*leave)(loom_pass *p);          /* after it */
  void *ud;                             /* the pass's own state */
  loom_map subst;                       /* var id -> replacement leaf (loom_graph_expr *) */
  loom_map producer;                    /* var id -> the binding that defines it (visited so far) */
  LOOM_VEC(const loom_sym_expr *) syms; /* symbolic vars in scope before the current binding */
  LOOM_VEC(loom_graph_binding *) before; /* bindings the visit added, to go before the current one */
  size_t changed;                       /* rewrites made */
};

/* Runs the walk over every graph function of m. `p` has m, visit, begin, enter, leave, ud set; the
 * rest is managed here. Afterwards dataflow outputs are recomputed and empty blocks dropped. */
loom_status loom_pass_run(loom_pass *p);

/* Whether every symbolic var of e / si / a leaf is in scope at the current binding. */
bool loom_pass_sym_in_scope(loom_pass *p, const loom_sym_expr *e);
bool loom_pass_sinfo_in_scope(loom_pass *p, const loom_sinfo *si);
bool loom_pass_leaf_in_scope(loom_pass *p, const loom_graph_expr *leaf);

/* Replaces every later use of b's var by `leaf` (and the caller drops b) when that is
 * safe: the var's struct info is provably a base of the leaf's, and the leaf's symbols are
 * in scope. *ok tells whether it was done. */
void loom_pass_replace_var(loom_pass *p, loom_graph_binding *b, loom_graph_expr *leaf, bool *ok);

/* Gives b the value `v` (a call) when its inferred struct info provably fits b's var;
 * the binding's guards become the new inference's. *ok tells whether it was done. */
loom_status loom_pass_set_value(loom_pass *p, loom_graph_binding *b, loom_graph_expr *v, bool *ok);

/* Adds `<b's name>_<suffix> = value` (a call, inferred here: its struct info and guards are the
 * inference's) just before b, the binding being visited; it is not visited itself. *out is its
 * var, or NULL when inference refuses the call (status OK: the caller's rule does not apply);
 * out-of-memory is the status. */
loom_status loom_pass_add_before(loom_pass *p, const loom_graph_binding *b, const char *suffix, loom_graph_expr *value,
                                 loom_graph_expr **out);

/* The binding that defines var `e` (visited so far in this function), or NULL. */
loom_graph_binding *loom_pass_producer(loom_pass *p, const loom_graph_expr *e);

/* The call of operator `op` that defines var `e` (visited so far), or NULL. */
const loom_graph_expr *loom_pass_producer_op(loom_pass *p, const loom_graph_expr *e, loom_graph_op op);

/* A copy of operator call `c` with new operands and attributes (arena of m). */
loom_graph_expr *loom_pass_call_copy(loom_graph_module *m, const loom_graph_expr *c, size_t nargs,
                                     loom_graph_expr *const *args, size_t nattrs, const loom_graph_attr *attrs);

/* Recomputes the `output` list of every dataflow block of s (and nested branches): the
 * block's vars used after it. Removes empty blocks. */
loom_status loom_pass_fix_outputs(loom_graph_module *m, loom_graph_seq *s);

/* A batch normalization after a convolution into the convolution's constants (pass_simplify_bn.c,
 * part of loom_graph_simplify); adds the rewrites to *changed. */
loom_status loom_graph_simplify_conv_bn(loom_graph_module *m, size_t *changed);

/* A name for a module constant computed from `what` (a var's name) in the current function:
 * "<fn>_<what>", or "<fn>_<what>_<k>" when that is taken. Written to buf (cap bytes). */
const char *loom_pass_const_name(loom_pass *p, const char *what, char *buf, size_t cap);

/* Whether the tensor constant c holds `v` in every element. */
bool loom_pass_const_all(const loom_graph_expr *c, double v);

#endif

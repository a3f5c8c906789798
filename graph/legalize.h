/* legalize.h — lowering operator calls to tensor programs (destination-passing).
 *
 * Each legalized binding `y = op(args, attrs)` becomes
 *     y = call_tp(@prog, (args), <y's struct info>)
 * where @prog is a generated tensor program (tensorprog/tp_gen.h) added to the module.
 * A program depends on the op, its attributes, dtypes, ranks and broadcasting pattern
 * — never on shapes — and is shared by every call with the same key (its name). The
 * broadcasting pattern of each input axis is decided by the prover: provably equal to
 * the output axis (FULL), the constant 1 (ONE), or unknown (GUARD: the program selects
 * index 0 at run time when the extent is 1; inference recorded the guard). */
#ifndef LOOM_GRAPH_LEGALIZE_H
#define LOOM_GRAPH_LEGALIZE_H

#include "graph/graph.h"

/* What one operator call lowers to: a program, and the symbolic values of its i64 scalar
 * parameters (a slice's begins, tril's k), passed after the call's tensor arguments. */
typedef struct loom_graph_legal {
  loom_tp_func *tp;
  size_t nscalars;
  const loom_sym_expr *scalars[8];
} loom_graph_legal;

/* The lowering of one operator call whose result has struct info `out`.
 * UNIMPLEMENTED (naming the op) when the op or this form of it has no legalization. */
loom_status loom_graph_legalize_call(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                     loom_graph_legal *result);

/* Rewrites every operator call of every function that can be legalized. Calls that
 * cannot stay as they are (counted in *out_kept, each named in `diags` as a note). */
loom_status loom_graph_legalize(loom_graph_module *m, loom_diag_list *diags, size_t *out_legalized,
                                size_t *out_kept);

#endif

/* legalize.h — lowering operator calls to tensor programs (destination-passing).
 *
 * Each legalized binding `y = op(args, attrs)` becomes
 *     y = call_tp(@prog, (args), <y's struct info>)
 * where @prog is a generated tensor program (tensorprog/tp_gen.h) added to the module.
 * A program depends on the op, its attributes, dtypes, ranks and broadcasting pattern
 * — never on shapes — and is shared by every call with the same key (the bytes of its
 * generator's parameter struct; graph/legalize.c's loom_legal_program). The
 * broadcasting pattern of each input axis is decided by the prover: provably equal to
 * the output axis (FULL), the constant 1 (ONE), or unknown (GUARD: the program selects
 * index 0 at run time when the extent is 1; inference recorded the guard). */
#ifndef LOOM_GRAPH_LEGALIZE_H
#define LOOM_GRAPH_LEGALIZE_H

#include "graph/graph.h"

enum { LOOM_GRAPH_LEGAL_MAX_GUARDS = 8 };

/* What one operator call lowers to: a program, the symbolic values of its i64 scalar
 * parameters (a slice's begins, tril's k), passed after the call's tensor arguments, and the
 * facts the program relies on that the prover could not show: run-time guards, which the
 * caller adds to the binding (checked before the program runs, by the interpreter and by the
 * VM's CHECK), so an unprovable fact is a clear run-time error where it is false instead of a
 * form without a program. */
typedef struct loom_graph_legal {
  loom_tp_func *tp;                                    /* the program */
  size_t nscalars;                                     /* scalar parameters after the tensors */
  const loom_sym_expr *scalars[8];                     /* their symbolic values */
  size_t nguards;                                      /* run-time guards */
  const loom_sym_expr *guards[LOOM_GRAPH_LEGAL_MAX_GUARDS]; /* each a condition (nonzero: holds) */
  const char *guard_why[LOOM_GRAPH_LEGAL_MAX_GUARDS];  /* its message (module arena) */
} loom_graph_legal;

/* Adds guard `cond` (message `why`, copied into m's arena) to r; a constant true cond adds
 * nothing. */
loom_status loom_graph_legal_guard(loom_graph_module *m, loom_graph_legal *r, const loom_sym_expr *cond, const char *why);

/* Appends the guards of r to binding b's (skipping ones b already has). */
loom_status loom_graph_legal_attach_guards(loom_graph_module *m, const loom_graph_legal *r, loom_graph_binding *b);

/* The lowering of one operator call whose result has struct info `out`.
 * UNIMPLEMENTED (naming the op) when the op or this form of it has no legalization. */
loom_status loom_graph_legalize_call(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                     loom_graph_legal *result);

/* Rewrites every operator call of every function that can be legalized. Calls that
 * cannot stay as they are (counted in *out_kept, each named in `diags` as a note). */
loom_status loom_graph_legalize(loom_graph_module *m, loom_diag_list *diags, size_t *out_legalized,
                                size_t *out_kept);

#endif

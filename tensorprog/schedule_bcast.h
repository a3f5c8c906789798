/* schedule_bcast.h — versioning a nest on its run-time broadcast tests (schedule_bcast.c), shared
 * by the matmul rule (schedule_matmul_bcast.c) and the elementwise rows (schedule_cpu.c, rule 0d).
 *
 * The generators index an operand axis that may be 1 where the output's is not -- the legalizer's
 * GUARD mode (graph/legalize.c loom_legal_bcast_modes: extents not provably equal, a reshape's
 * `max(a, b)`, two inputs whose dims have different names) -- with `select(x == 1, 0, i)`. Such a
 * load is no unit-stride row to the rules. loom_tp_version_bcast makes the nest
 *     if x == E && .. { the nest, each such index i }   (scheduled by `schedule`)
 *     else { the nest as it was }
 * where E is the extent of i's loop. Under x == E the select is i: E == 1 leaves i == 0, the
 * select's value either way; else x != 1 picks i. */
#ifndef LOOM_TENSORPROG_SCHEDULE_BCAST_H
#define LOOM_TENSORPROG_SCHEDULE_BCAST_H

#include "tensorprog/tp_rewrite.h"
#include "tensorprog/tp_schedule_cpu.h"

/* What a CPU rule's variant schedule (the `ud` of loom_tp_schedule_fn) needs: the arena, the
 * context, the machine's parameters and where to explain itself. */
typedef struct loom_tp_rule_ud {
  loom_arena *a;
  loom_sym_ctx *cx;
  const loom_tp_cpu_params *p;
  loom_strbuf *why;
} loom_tp_rule_ud;

/* Versions *slot (a loop of f) on the tests of the selects that index by a loop variable (only
 * those indexing by `only` when it is not NULL). *nguards: the tests (0: none, or more than the
 * walk keeps, and *slot is unchanged). On success *slot is the `if`, its then-branch the variant
 * `schedule` scheduled (through a view of f whose body is the variant) and its else-branch the
 * nest as it was; a failure of `schedule` is returned with *slot unchanged. */
loom_status loom_tp_version_bcast(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                  const loom_sym_expr *only, loom_tp_schedule_fn schedule, void *ud, int *nguards);

#endif

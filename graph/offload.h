/* offload.h — partial lowering: matmul / linear calls handed to BLAS per shape range.
 *
 * Runs before legalize. A call `y = matmul(a, b)` (f32/f64, ranks >= 2, no broadcast of
 * batch dims) or `y = linear(x, w[, bias])` whose result has R rows (the product of every
 * dim but the last) becomes, when the prover cannot decide `R <= threshold`,
 *
 *     y = if (sym(R <= threshold)) {            // small: the generated kernel (GEMV-like)
 *       dataflow { y_gen = matmul(a, b)  output y_gen }  return y_gen
 *     } else {                                   // large: the library
 *       dataflow { y_blas = call_extern(@blas_sgemm_2_2, (a, b), <y's info>)  output y_blas }  return y_blas
 *     }
 *
 * (linear: `blas.sgemm_nt`, its bias added after the call in the library branch). The
 * `if` needs a non-dataflow block, so the dataflow block around the call is split in
 * three (before: exporting every var; the `if`; after). Where the prover decides, no `if`
 * is made: R <= threshold keeps the operator, R > threshold calls the library directly
 * (pure, so it stays in its dataflow block). The externs (`@blas_sgemm_2_2`: A rank 2,
 * B rank 2) are declared in the module once, with symbol "blas.sgemm...".
 * The default threshold is measured (docs/libcall.md, bench/libcall). */
#ifndef LOOM_GRAPH_OFFLOAD_H
#define LOOM_GRAPH_OFFLOAD_H

#include "graph/graph.h"

/* Measured with bench-libcall (docs/libcall.md): the largest row count at which the
 * generated matmul (legalize + the default CPU schedule) is at least as fast as
 * cblas_sgemm at GPT-2's K x N. Today BLAS wins from one row on (7x to 74x at M = 1), so
 * only empty products stay generated; re-measure when matmul gets a tiled/GEMV schedule. */
#define LOOM_OFFLOAD_DEFAULT_THRESHOLD 0

typedef struct loom_graph_offload_stats {
  size_t guarded;   /* calls rewritten to `if R <= threshold { generated } else { BLAS }` */
  size_t library;   /* calls the prover sent to BLAS unconditionally */
  size_t generated; /* calls the prover kept generated (R <= threshold always) */
  size_t skipped;   /* matmul/linear calls of a form BLAS does not take (dtype, broadcast, guards) */
} loom_graph_offload_stats;

/* Rewrites every matmul / linear call of every function (see the banner). */
loom_status loom_graph_offload(loom_graph_module *m, int64_t threshold, loom_graph_offload_stats *stats);

#endif

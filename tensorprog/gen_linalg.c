/* gen_linalg.c — generators of the small dense linear-algebra programs: det.
 *
 * det runs the reference's algorithm (graph/op_misc.c) per matrix: LU decomposition with partial
 * pivoting in f64 on a Local copy, serial over the columns (the column and pivot-search loops are
 * flagged `reduce`, which keeps the CPU rules from running them in parallel); the batch loops
 * around it are independent. */
#include <stdio.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_det(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "det: rank %d (matrices need rank >= 2)", rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "det: dtype %s is not a float", loom_dtype_name(t));
  const char *tn = loom_dtype_name(t);
  int nb = rank - 2;
  const char *const *d = loom_tpg_dims_d();
  char bi[128] = "";
  loom_tpg_loop_indices(bi, sizeof bi, nb);
  const char *sep = nb ? ", " : "";
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(", name);
  for (int k = 0; k < nb; k++) loom_strbuf_printf(&sb, "%s, ", d[k]);
  loom_strbuf_printf(&sb, "m, m), %s], Y: ", tn);
  loom_tpg_buffer_type(&sb, d, nb, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, nb);
  loom_tpg_open_loops(&sb, axes, nb, "i", d, true, false);
  loom_strbuf_printf(&sb,
                     "alloc A: Local[(m, m), f64]\n"
                     "alloc D: Local[(2,), f64]\n" /* D[0]: the determinant so far; D[1]: 1 once a zero pivot ended it */
                     "alloc P: Local[(1,), i64]\n"
                     "for r in 0..m {\nfor k in 0..m {\nA[r, k] = f64(X[%s%sr, k])\n}\n}\n"
                     "D[0] = 1.0f64\nD[1] = 0.0f64\n"
                     "for c in 0..m reduce {\n"
                     "if D[1] == 0.0f64 {\n"
                     "P[0] = c\n"
                     "for u in 0..m - c - 1 reduce {\n"
                     "if abs(A[c + 1 + u, c]) > abs(A[P[0], c]) {\nP[0] = c + 1 + u\n}\n"
                     "}\n"
                     "if A[P[0], c] == 0.0f64 {\nD[0] = 0.0f64\nD[1] = 1.0f64\n} else {\n"
                     "if P[0] != c {\n"
                     "for k2 in 0..m {\nlet sw: f64 = A[c, k2]\nA[c, k2] = A[P[0], k2]\nA[P[0], k2] = sw\n}\n"
                     "D[0] = -D[0]\n"
                     "}\n"
                     "D[0] = D[0] * A[c, c]\n"
                     "for u2 in 0..m - c - 1 {\n"
                     "let fr: f64 = A[c + 1 + u2, c] / A[c, c]\n"
                     "for k3 in 0..m - c {\nA[c + 1 + u2, c + k3] = A[c + 1 + u2, c + k3] - fr * A[c, c + k3]\n}\n"
                     "}\n"
                     "}\n"
                     "}\n"
                     "}\n"
                     "Y[%s] = %s(D[0])\n",
                     bi, sep, bi, tn);
  loom_tpg_close_program(&sb, nb);
  return loom_tpg_finish(a, cx, &sb, result);
}

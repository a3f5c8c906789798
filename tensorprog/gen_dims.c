/* gen_dims.c — programs for operator forms whose result dims depend on data (run-time axes):
 * a "dims" program computes the result's dims into an i64 vector (legalization binds them with
 * tensor_to_shape + match_cast), and the computing program reads its extents from its result
 * buffer, so one program serves every value of the run-time operand. */
#include <stdio.h>
#include <string.h>

#include "tensorprog/gen_internal.h"

/* Y = reduce(X) where each axis k of Y is either 1 (reduced: all of X's axis) or X's extent
 * (kept): loops o_k over Y, reduction loops r_k over d_k - o_k + 1 (d_k when reduced, 1 when
 * kept), X read at o_k + r_k. The caller binds Y's extents (reduce_dims below). */
loom_status loom_tp_gen_reduce_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                                   int rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (op == LOOM_TP_REDUCE_MEAN && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "mean of %s is not supported (use a float dtype)", loom_dtype_name(t));
  static const char *const odims[LOOM_TP_GEN_MAX_RANK] = {"o0", "o1", "o2", "o3", "o4", "o5", "o6", "o7"};
  const char *const *d = loom_tpg_dims_d();
  char ext[LOOM_TP_GEN_MAX_RANK][24];
  const char *exts[LOOM_TP_GEN_MAX_RANK];
  char yi[256], xi[512] = "", count[512] = "";
  for (int k = 0; k < rank; k++) {
    snprintf(ext[k], sizeof ext[k], "%s - %s + 1", d[k], odims[k]);
    exts[k] = ext[k];
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%si%d + r%d", k ? ", " : "", k, k);
    snprintf(count + strlen(count), sizeof count - strlen(count), "%s(%s)", k ? "*" : "", ext[k]);
  }
  loom_tpg_loop_indices(yi, sizeof yi, rank);
  if (rank == 0) snprintf(yi, sizeof yi, "0");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, odims, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", odims, true, false);
  loom_strbuf_printf(&sb, "Y[%s] = ", yi);
  loom_tpg_reduce_init(&sb, op, t);
  loom_strbuf_putc(&sb, '\n');
  loom_tpg_open_loops(&sb, axes, rank, "r", exts, false, true);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN: loom_strbuf_printf(&sb, "Y[%s] = Y[%s] + X[%s]\n", yi, yi, xi); break;
    case LOOM_TP_REDUCE_PROD: loom_strbuf_printf(&sb, "Y[%s] = Y[%s] * X[%s]\n", yi, yi, xi); break;
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN:
      loom_strbuf_printf(&sb, "Y[%s] = %s(Y[%s], X[%s])\n", yi, op == LOOM_TP_REDUCE_MAX ? "max" : "min", yi, xi);
      break;
  }
  loom_tpg_close_loops(&sb, rank);
  if (op == LOOM_TP_REDUCE_MEAN) loom_strbuf_printf(&sb, "Y[%s] = Y[%s] / %s(%s)\n", yi, yi, loom_dtype_name(t), rank ? count : "1");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* S = the dims of reduce(X, axes A) (A: n run-time axes, each in [-rank, rank)): S[0 .. rank)
 * the keepdims dims (1 where reduced, d_k where kept), then without keepdims the rank - n kept
 * dims in order. F[k] counts how often axis k is listed; axes out of range or listed twice make
 * S[0] = -1, which the match_cast binding S refuses ("not a dim"). */
loom_status loom_tp_gen_reduce_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                    loom_dtype ta, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (n < 1 || n > rank) return LOOM_ERROR(INVALID_ARGUMENT, "%d run-time axes for rank %d", n, rank);
  if (ta != LOOM_DTYPE_I64 && ta != LOOM_DTYPE_I32) return LOOM_ERROR(INVALID_ARGUMENT, "axes of dtype %s", loom_dtype_name(ta));
  const char *const *d = loom_tpg_dims_d();
  int q = keepdims ? 0 : rank - n, len = rank + q;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, d, rank, tx);
  loom_strbuf_printf(&sb, ", A: Buffer[(%d,), %s], S: Buffer[(%d,), i64]) {\n", n, loom_dtype_name(ta), len);
  loom_strbuf_printf(&sb, "alloc F: Local[(%d,), i64]\nfor j in 0..%d {\n", rank, n);
  for (int k = 0; k < rank; k++)
    loom_strbuf_printf(&sb, "F[%d] = F[%d] + select(i64(A[j]) == %d || i64(A[j]) == %d, 1, 0)\n", k, k, k, k - rank);
  loom_strbuf_puts(&sb, "}\nlet bad: bool = ");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%sF[%d]", k ? " + " : "(", k);
  loom_strbuf_printf(&sb, ") != %d", n);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, " || F[%d] > 1", k);
  loom_strbuf_putc(&sb, '\n');
  for (int k = 0; k < rank; k++)
    loom_strbuf_printf(&sb, "S[%d] = %sselect(F[%d] > 0, 1, %s)%s\n", k, k ? "" : "select(bad, -1, ", k, d[k], k ? "" : ")");
  /* kept axis k lands at output position k - (F[0] + .. + F[k-1]) */
  for (int j = 0; j < q; j++) {
    loom_strbuf_printf(&sb, "S[%d] = 0", rank + j);
    for (int k = 0; k < rank; k++) {
      loom_strbuf_printf(&sb, " + select(F[%d] == 0 && %d", k, k);
      for (int i = 0; i < k; i++) loom_strbuf_printf(&sb, " - F[%d]", i);
      loom_strbuf_printf(&sb, " == %d, %s, 0)", j, d[k]);
    }
    loom_strbuf_putc(&sb, '\n');
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

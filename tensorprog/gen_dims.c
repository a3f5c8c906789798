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

/* cum(p): "F[0] + .. + F[p-1]" subtracted from p, as text: "p - F[0] - F[1]". */
static void minus_cum(loom_strbuf *sb, int p) {
  loom_strbuf_printf(sb, "%d", p);
  for (int i = 0; i < p; i++) loom_strbuf_printf(sb, " - F[%d]", i);
}

/* "d_k of the k-th kept axis at output position j": the sum over k of
 * select(F[k] == 0 && k - cum(k) == j, d_k, 0). */
static void kept_dim(loom_strbuf *sb, int rank, int j) {
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf_puts(sb, "0");
  for (int k = 0; k < rank; k++) {
    loom_strbuf_printf(sb, " + select(F[%d] == 0 && ", k);
    minus_cum(sb, k);
    loom_strbuf_printf(sb, " == %d, %s, 0)", j, d[k]);
  }
}

/* F[p] counts how often position p (of `space` positions; negative values count from the end)
 * is listed in A; the program's result S is in loom_tp_gen_axes_dims' comment (tp_gen.h). */
loom_status loom_tp_gen_axes_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                  loom_dtype ta, int arank, loom_tp_axes_form form, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  bool expand = form == LOOM_TP_AXES_EXPAND;
  int space = expand ? rank + n : rank;
  if (n < 1 || (!expand && n > rank) || space > LOOM_TP_GEN_MAX_RANK || (form == LOOM_TP_AXES_ONE && n != 1) ||
      (arank == 0 && n != 1) || arank < 0 || arank > 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "%d run-time axes (rank-%d operand) for rank %d", n, arank, rank);
  if (!loom_dtype_is_int(ta)) return LOOM_ERROR(INVALID_ARGUMENT, "axes of dtype %s", loom_dtype_name(ta));
  const char *const *d = loom_tpg_dims_d();
  int len = form == LOOM_TP_AXES_REDUCE_KEEPDIMS ? rank : form == LOOM_TP_AXES_REDUCE ? 2 * rank - n
          : form == LOOM_TP_AXES_SQUEEZE ? rank - n : form == LOOM_TP_AXES_EXPAND ? rank + n : 1;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, d, rank, tx);
  char adims[16] = "";
  if (arank) snprintf(adims, sizeof adims, "%d,", n);
  loom_strbuf_printf(&sb, ", A: Buffer[(%s), %s], S: Buffer[(%d,), i64]) {\n", adims, loom_dtype_name(ta), len);
  loom_strbuf_printf(&sb, "alloc F: Local[(%d,), i64]\nfor j in 0..%d {\n", space, n);
  const char *at = arank ? "i64(A[j])" : "i64(A[])";
  for (int p = 0; p < space; p++)
    loom_strbuf_printf(&sb, "F[%d] = F[%d] + select(%s == %d || %s == %d, 1, 0)\n", p, p, at, p, at, p - space);
  loom_strbuf_puts(&sb, "}\nlet bad: bool = ");
  for (int p = 0; p < space; p++) loom_strbuf_printf(&sb, "%sF[%d]", p ? " + " : "(", p);
  loom_strbuf_printf(&sb, ") != %d", n);
  for (int p = 0; p < space; p++) loom_strbuf_printf(&sb, " || F[%d] > 1", p);
  if (form == LOOM_TP_AXES_SQUEEZE)
    for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, " || (F[%d] > 0 && %s != 1)", k, d[k]);
  loom_strbuf_putc(&sb, '\n');
  for (int i = 0; i < len; i++) {
    loom_strbuf_printf(&sb, "S[%d] = %s", i, i ? "" : "select(bad, -1, ");
    switch (form) {
      case LOOM_TP_AXES_REDUCE_KEEPDIMS:
      case LOOM_TP_AXES_REDUCE:
        if (i < rank) loom_strbuf_printf(&sb, "select(F[%d] > 0, 1, %s)", i, d[i]);
        else kept_dim(&sb, rank, i - rank);
        break;
      case LOOM_TP_AXES_SQUEEZE: kept_dim(&sb, rank, i); break;
      case LOOM_TP_AXES_EXPAND:
        loom_strbuf_printf(&sb, "select(F[%d] > 0, 1, 0", i);
        for (int k = 0; k < rank; k++) {
          loom_strbuf_puts(&sb, " + select(");
          minus_cum(&sb, i);
          loom_strbuf_printf(&sb, " == %d, %s, 0)", k, d[k]);
        }
        loom_strbuf_puts(&sb, ")");
        break;
      case LOOM_TP_AXES_ONE:
        loom_strbuf_puts(&sb, "0");
        for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, " + select(F[%d] > 0, %d, 0)", k, k);
        break;
    }
    loom_strbuf_puts(&sb, i ? "\n" : ")\n");
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* S = the dims of reshape(X, A) with ONNX semantics: 0 copies X's dim at that position
 * (unless allowzero), one -1 takes what the others leave. A second -1, a value below -1, or a
 * -1 that does not divide make S[0] = -1; a count that differs from X's is the view's error. */
loom_status loom_tp_gen_reshape_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     loom_dtype ta, bool allowzero, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (n < 1 || n > LOOM_TP_GEN_MAX_RANK) return LOOM_ERROR(INVALID_ARGUMENT, "a reshape target of %d dims", n);
  if (!loom_dtype_is_int(ta)) return LOOM_ERROR(INVALID_ARGUMENT, "a reshape target of dtype %s", loom_dtype_name(ta));
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, d, rank, tx);
  loom_strbuf_printf(&sb, ", A: Buffer[(%d,), %s], S: Buffer[(%d,), i64]) {\nalloc V: Local[(%d,), i64]\n", n,
                     loom_dtype_name(ta), n, n);
  for (int i = 0; i < n; i++) {
    if (!allowzero && i < rank) loom_strbuf_printf(&sb, "V[%d] = select(i64(A[%d]) == 0, %s, i64(A[%d]))\n", i, i, d[i], i);
    else loom_strbuf_printf(&sb, "V[%d] = i64(A[%d])\n", i, i);
  }
  loom_strbuf_puts(&sb, "let known: i64 = 1");
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, " * select(V[%d] == -1, 1, V[%d])", i, i);
  loom_strbuf_puts(&sb, "\nlet wild: i64 = 0");
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, " + select(V[%d] == -1, 1, 0)", i);
  loom_strbuf_puts(&sb, "\nlet numel: i64 = 1");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, " * %s", d[k]);
  loom_strbuf_puts(&sb, "\nlet bad: bool = wild > 1 || (wild == 1 && (known == 0 || numel % select(known == 0, 1, known) != 0))");
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, " || V[%d] < -1", i);
  loom_strbuf_putc(&sb, '\n');
  for (int i = 0; i < n; i++)
    loom_strbuf_printf(&sb, "S[%d] = %sselect(V[%d] == -1, numel / select(known == 0, 1, known), V[%d])%s\n", i,
                       i ? "" : "select(bad, -1, ", i, i, i ? "" : ")");
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

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
  loom_tpg_open_x(&sb, name, rank, t);
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
  loom_tpg_open_x(&sb, name, rank, tx);
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
  loom_tpg_open_x(&sb, name, rank, tx);
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

/* ---- slice and pad with run-time bounds ---- */

/* Appends "<B>: Buffer[(n,), t], " for an operand buffer. */
static void int_buffer(loom_strbuf *sb, const char *buf, int n, loom_dtype t) {
  loom_strbuf_printf(sb, "%s: Buffer[(%d,), %s], ", buf, n, loom_dtype_name(t));
}

/* Opens `for j in 0..n` with `ax` the listed axis (A[j], or j without an axes operand) and
 * F[a] counting the entries that name axis a. Closes nothing. */
static void open_listed(loom_strbuf *sb, int rank, int n, bool has_axes) {
  loom_strbuf_printf(sb, "alloc F: Local[(%d,), i64]\nfor j in 0..%d {\n", rank, n);
  loom_strbuf_printf(sb, "let ax: i64 = %s\n", has_axes ? "i64(A[j])" : "j");
}

/* bad: an axis listed twice or out of range (the counts do not add up to n). */
static void bad_listed(loom_strbuf *sb, int rank, int n, const char *extra) {
  loom_strbuf_puts(sb, "let bad: bool = (0");
  for (int a = 0; a < rank; a++) loom_strbuf_printf(sb, " + F[%d]", a);
  loom_strbuf_printf(sb, ") != %d", n);
  for (int a = 0; a < rank; a++) loom_strbuf_printf(sb, " || F[%d] > 1", a);
  loom_strbuf_printf(sb, "%s\n", extra);
}

/* ONNX Slice bounds per axis into L = (start, step, extent) x rank: negative bounds count from
 * the end, bounds clamp, a step may be negative (0 is bad). `extents`: S = the extents (S[0] =
 * -1 when bad); else S = the starts then the steps. */
loom_status loom_tp_gen_slice_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     const loom_dtype *types, bool has_axes, bool has_steps, bool extents,
                                     loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (n < 1 || n > rank) return LOOM_ERROR(INVALID_ARGUMENT, "slice bounds for %d axes of rank %d", n, rank);
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, tx);
  loom_strbuf_puts(&sb, ", ");
  int_buffer(&sb, "B", n, types[0]);
  int_buffer(&sb, "E", n, types[1]);
  if (has_axes) int_buffer(&sb, "A", n, types[2]);
  if (has_steps) int_buffer(&sb, "T", n, types[3]);
  loom_strbuf_printf(&sb, "S: Buffer[(%d,), i64]) {\nalloc L: Local[(%d,), i64]\nalloc Z: Local[(1,), i64]\n", extents ? rank : 2 * rank,
                     3 * rank);
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "L[%d] = 1\nL[%d] = %s\n", rank + k, 2 * rank + k, d[k]);
  open_listed(&sb, rank, n, has_axes);
  loom_strbuf_printf(&sb, "let s: i64 = %s\nlet sd: i64 = select(s == 0, 1, s)\nZ[0] = Z[0] + select(s == 0, 1, 0)\n",
                     has_steps ? "i64(T[j])" : "1");
  loom_strbuf_puts(&sb, "let b0: i64 = i64(B[j])\nlet e0: i64 = i64(E[j])\n");
  for (int k = 0; k < rank; k++) {
    const char *dk = d[k];
    loom_strbuf_printf(&sb, "if ax == %d || ax == %d {\nF[%d] = F[%d] + 1\n", k, k - rank, k, k);
    loom_strbuf_printf(&sb, "let b1_%d: i64 = select(b0 < 0, select(b0 < -%s, -%s - 1, b0 + %s), b0)\n", k, dk, dk, dk);
    loom_strbuf_printf(&sb, "let e1_%d: i64 = select(e0 < 0, select(e0 < -%s, -%s - 1, e0 + %s), e0)\n", k, dk, dk, dk);
    loom_strbuf_printf(&sb, "let bp_%d: i64 = max(min(b1_%d, %s), 0)\nlet ep_%d: i64 = max(min(e1_%d, %s), 0)\n", k, k, dk, k, k, dk);
    loom_strbuf_printf(&sb, "let bn_%d: i64 = max(min(b1_%d, %s - 1), -1)\nlet en_%d: i64 = max(min(e1_%d, %s - 1), -1)\n", k, k, dk,
                       k, k, dk);
    loom_strbuf_printf(&sb, "L[%d] = select(s > 0, bp_%d, bn_%d)\nL[%d] = s\n", k, k, k, rank + k);
    loom_strbuf_printf(&sb,
                       "L[%d] = select(s > 0, select(ep_%d > bp_%d, (ep_%d - bp_%d - 1) / sd + 1, 0), "
                       "select(bn_%d > en_%d, (bn_%d - en_%d - 1) / (0 - sd) + 1, 0))\n}\n",
                       2 * rank + k, k, k, k, k, k, k, k, k);
  }
  loom_strbuf_puts(&sb, "}\n");
  bad_listed(&sb, rank, n, " || Z[0] > 0");
  for (int k = 0; k < rank; k++) {
    if (extents) loom_strbuf_printf(&sb, "S[%d] = %sL[%d]%s\n", k, k ? "" : "select(bad, -1, ", 2 * rank + k, k ? "" : ")");
    else loom_strbuf_printf(&sb, "S[%d] = L[%d]\nS[%d] = L[%d]\n", k, k, rank + k, rank + k);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* Y[i] = X[P[k] + i_k * P[rank + k] on each axis k]: a slice whose starts and steps (P, from
 * loom_tp_gen_slice_params) are read at run time and whose extents are Y's. */
loom_status loom_tp_gen_slice_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                  loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  loom_strbuf_printf(&sb, ", P: Buffer[(%d,), i64], ", 2 * rank);
  char yi[256], xi[512] = "";
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  for (int k = 0; k < rank; k++)
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%sP[%d] + i%d * P[%d]", k ? ", " : "", k, k, rank + k);
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", rank ? yi : "", xi);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ONNX Pad's run-time pads P ([before.., after..] over the listed axes, all without A):
 * `extents`: S = X's dims plus the pads (S[0] = -1 when one is negative or an axis is listed
 * twice); else S = the pads before each axis (negative: a crop). */
loom_status loom_tp_gen_pad_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int nax,
                                   loom_dtype tp, bool has_axes, loom_dtype ta, bool extents, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (nax < 1 || nax > rank) return LOOM_ERROR(INVALID_ARGUMENT, "pads for %d axes of rank %d", nax, rank);
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, tx);
  loom_strbuf_puts(&sb, ", ");
  int_buffer(&sb, "P", 2 * nax, tp);
  if (has_axes) int_buffer(&sb, "A", nax, ta);
  loom_strbuf_printf(&sb, "S: Buffer[(%d,), i64]) {\nalloc L: Local[(%d,), i64]\n", rank, 2 * rank);
  open_listed(&sb, rank, nax, has_axes);
  for (int k = 0; k < rank; k++)
    loom_strbuf_printf(&sb, "if ax == %d || ax == %d {\nF[%d] = F[%d] + 1\nL[%d] = i64(P[j])\nL[%d] = i64(P[j + %d])\n}\n", k,
                       k - rank, k, k, k, rank + k, nax);
  loom_strbuf_puts(&sb, "}\n");
  char neg[512] = "";
  for (int k = 0; k < rank; k++)
    snprintf(neg + strlen(neg), sizeof neg - strlen(neg), " || %s + L[%d] + L[%d] < 0", d[k], k, rank + k);
  bad_listed(&sb, rank, nax, neg);
  for (int k = 0; k < rank; k++) {
    if (extents)
      loom_strbuf_printf(&sb, "S[%d] = %s%s + L[%d] + L[%d]%s\n", k, k ? "" : "select(bad, -1, ", d[k], k, rank + k, k ? "" : ")");
    else loom_strbuf_printf(&sb, "S[%d] = L[%d]\n", k, k);
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

/* ---- range with run-time bounds ---- */

/* Loads of the one value of a rank-0 / (1,) buffer. */
static const char *one_value(int rank) { return rank ? "[0]" : "[]"; }

static void scalar_buffer(loom_strbuf *sb, const char *buf, int rank, loom_dtype t) {
  loom_strbuf_printf(sb, "%s: Buffer[(%s), %s], ", buf, rank ? "1," : "", loom_dtype_name(t));
}

/* ONNX Range on run-time scalars B (start), E (limit), D (delta) of dtype t (ranks[] 0 or 1):
 * `extents`: S = (max(ceil((limit - start) / delta), 0)), computed in f64 as the reference does,
 * -1 for a zero delta or a length that is NaN or above 2^30; else Y[i] = start + i * delta
 * (in i64 for integers, f64 for floats, then t), Y's extent bound by the caller. */
loom_status loom_tp_gen_range(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const int *ranks, bool extents,
                              loom_tp_func **result) {
  if (t == LOOM_DTYPE_BOOL || !(loom_dtype_is_int(t) || loom_dtype_is_float(t)))
    return LOOM_ERROR(INVALID_ARGUMENT, "a range of %s", loom_dtype_name(t));
  const char *tn = loom_dtype_name(t);
  char b[32], e[32], d[32];
  snprintf(b, sizeof b, "B%s", one_value(ranks[0]));
  snprintf(e, sizeof e, "E%s", one_value(ranks[1]));
  snprintf(d, sizeof d, "D%s", one_value(ranks[2]));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  scalar_buffer(&sb, "B", ranks[0], t);
  scalar_buffer(&sb, "E", ranks[1], t);
  scalar_buffer(&sb, "D", ranks[2], t);
  if (extents) {
    loom_strbuf_printf(&sb, "S: Buffer[(1,), i64]) {\nlet q: f64 = ceil((f64(%s) - f64(%s)) / f64(%s))\n", e, b, d);
    loom_strbuf_printf(&sb, "S[0] = select(f64(%s) == 0.0 || q != q || q > 1073741824.0, -1, select(q > 0.0, i64(q), 0))\n}\n", d);
  } else if (loom_dtype_is_int(t)) {
    loom_strbuf_printf(&sb, "Y: Buffer[(n,), %s]) {\nfor i in 0..n parallel {\nY[i] = %s(i64(%s) + i * i64(%s))\n}\n}\n", tn, tn, b, d);
  } else {
    loom_strbuf_printf(&sb, "Y: Buffer[(n,), %s]) {\nfor i in 0..n parallel {\nY[i] = %s(f64(%s) + f64(i) * f64(%s))\n}\n}\n", tn, tn,
                       b, d);
  }
  return loom_tpg_finish(a, cx, &sb, result);
}

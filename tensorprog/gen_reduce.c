/* gen_reduce.c — generators of reductions: sum/mean/max/min/prod over axes, softmax and
 * log_softmax, layer_norm and rms_norm, argmax/argmin and cumsum. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_reduce(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                               int rank, unsigned axes_mask, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axes_mask >> rank) return LOOM_ERROR(INVALID_ARGUMENT, "reduction axes 0x%x exceed rank %d", axes_mask, rank);
  if (op == LOOM_TP_REDUCE_MEAN && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "mean of %s is not supported (use a float dtype)", loom_dtype_name(t));
  const char *const *d = loom_tpg_dims_d();
  int keep[LOOM_TP_GEN_MAX_RANK], red[LOOM_TP_GEN_MAX_RANK], nk = 0, nr = 0;
  for (int k = 0; k < rank; k++) {
    if (axes_mask >> k & 1) red[nr++] = k;
    else keep[nk++] = k;
  }
  /* Output dims and index. */
  const char *odims[LOOM_TP_GEN_MAX_RANK];
  char oidx[512] = "";
  int orank = 0;
  for (int k = 0; k < rank; k++) {
    bool r = axes_mask >> k & 1;
    if (r && !keepdims) continue;
    odims[orank++] = r ? "1" : d[k];
    snprintf(oidx + strlen(oidx), sizeof oidx - strlen(oidx), "%s%s%d", orank > 1 ? ", " : "", r ? "0" : "i", k);
    if (r) oidx[strlen(oidx) - 1] = '\0'; /* "0" not "0k" */
  }
  if (orank == 0) snprintf(oidx, sizeof oidx, "0"); /* a full reduction to a 1-element tensor */
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  if (orank == 0) {
    const char *one[1] = {"1"};
    loom_tpg_buffer_type(&sb, one, 1, t);
  } else {
    loom_tpg_buffer_type(&sb, odims, orank, t);
  }
  loom_strbuf_puts(&sb, ") {\n");
  loom_tpg_open_loops(&sb, keep, nk, "i", d, true, false);
  loom_strbuf_printf(&sb, "Y[%s] = ", oidx);
  loom_tpg_reduce_init(&sb, op, t);
  loom_strbuf_putc(&sb, '\n');
  char xidx[512] = "";
  for (int k = 0; k < rank; k++)
    snprintf(xidx + strlen(xidx), sizeof xidx - strlen(xidx), "%s%c%d", k ? ", " : "", axes_mask >> k & 1 ? 'r' : 'i', k);
  loom_tpg_open_loops(&sb, red, nr, "r", d, false, true);
  switch (op) {
    case LOOM_TP_REDUCE_SUM: case LOOM_TP_REDUCE_MEAN:
      loom_strbuf_printf(&sb, "Y[%s] = Y[%s] + X[%s]\n", oidx, oidx, xidx);
      break;
    case LOOM_TP_REDUCE_PROD:
      loom_strbuf_printf(&sb, "Y[%s] = Y[%s] * X[%s]\n", oidx, oidx, xidx);
      break;
    case LOOM_TP_REDUCE_MAX: case LOOM_TP_REDUCE_MIN:
      loom_strbuf_printf(&sb, "Y[%s] = %s(Y[%s], X[%s])\n", oidx, op == LOOM_TP_REDUCE_MAX ? "max" : "min", oidx, xidx);
      break;
  }
  loom_tpg_close_loops(&sb, nr);
  if (op == LOOM_TP_REDUCE_MEAN) {
    loom_strbuf_printf(&sb, "Y[%s] = Y[%s] / %s(", oidx, oidx, loom_dtype_name(t));
    if (nr == 0) loom_strbuf_puts(&sb, "1");
    for (int k = 0; k < nr; k++) loom_strbuf_printf(&sb, "%s%s", k ? "*" : "", d[red[k]]);
    loom_strbuf_puts(&sb, ")\n");
  }
  loom_tpg_close_program(&sb, nk);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_softmax(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool log, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "softmax axis %d is outside [0, %d)", axis, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "softmax of %s is not supported", loom_dtype_name(t));
  const char *const *d = loom_tpg_dims_d();
  loom_dtype st = loom_tpg_stat_type(t);
  /* Conversions are written only where the statistics type differs (an empty cast name
   * leaves a parenthesised expression, which prints without the parentheses). */
  const char *s = loom_dtype_name(st), *tn = st == t ? "" : loom_dtype_name(t);
  const char *sc = st == t ? "" : s;
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  loom_tpg_open_loops(&sb, keep, nk, "i", d, true, false);
  char xr[256];
  loom_tpg_index_with(xr, sizeof xr, rank, axis, "r");
  loom_strbuf_printf(&sb, "alloc M: Local[(1,), %s]\nM[0] = -inf%s\n", s, st == LOOM_DTYPE_F32 ? "" : s);
  loom_strbuf_printf(&sb, "for r in 0..%s reduce {\nM[0] = max(M[0], %s(X[%s]))\n}\n", d[axis], sc, xr);
  loom_strbuf_printf(&sb, "alloc S: Local[(1,), %s]\nS[0] = 0.0%s\n", s, st == LOOM_DTYPE_F32 ? "" : s);
  char xj[256];
  loom_tpg_index_with(xj, sizeof xj, rank, axis, "j");
  if (!log && st == t) {
    /* exp computed once: stored into Y by the sum pass, then scaled in place (the row is
     * still in cache); with a wider statistics type Y would round the terms of the sum */
    loom_strbuf_printf(&sb, "for r in 0..%s reduce {\nY[%s] = exp(X[%s] - M[0])\nS[0] = S[0] + Y[%s]\n}\n", d[axis], xr,
                       xr, xr);
    loom_strbuf_printf(&sb, "let inv: %s = 1.0%s / S[0]\n", s, st == LOOM_DTYPE_F32 ? "" : s);
    loom_strbuf_printf(&sb, "for j in 0..%s {\nY[%s] = Y[%s] * inv\n}\n", d[axis], xj, xj);
    loom_tpg_close_program(&sb, nk);
    return loom_tpg_finish(a, cx, &sb, result);
  }
  loom_strbuf_printf(&sb, "for r in 0..%s reduce {\nS[0] = S[0] + exp(%s(X[%s]) - M[0])\n}\n", d[axis], sc, xr);
  if (log)
    loom_strbuf_printf(&sb, "for j in 0..%s {\nY[%s] = %s(%s(X[%s]) - M[0] - log(S[0]))\n}\n", d[axis], xj, tn, sc, xj);
  else
    loom_strbuf_printf(&sb, "for j in 0..%s {\nY[%s] = %s(exp(%s(X[%s]) - M[0]) / S[0])\n}\n", d[axis], xj, tn, sc, xj);
  loom_tpg_close_program(&sb, nk);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_layer_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int naxes,
                                   double eps, bool rms, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (naxes < 1 || naxes > rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "normalised axes %d is outside [1, %d]", naxes, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "layer_norm of %s is not supported", loom_dtype_name(t));
  const char *const *d = loom_tpg_dims_d();
  loom_dtype st = loom_tpg_stat_type(t);
  const char *s = loom_dtype_name(st), *tn = st == t ? "" : loom_dtype_name(t);
  const char *sc = st == t ? "" : s; /* see loom_tp_gen_softmax */
  int first = rank - naxes;
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, ", gamma: ");
  loom_tpg_buffer_type(&sb, d + first, naxes, t);
  if (!rms) {
    loom_strbuf_puts(&sb, ", beta: ");
    loom_tpg_buffer_type(&sb, d + first, naxes, t);
  }
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int keep[LOOM_TP_GEN_MAX_RANK], red[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < first; k++) keep[k] = k;
  for (int k = 0; k < naxes; k++) red[k] = first + k;
  loom_tpg_open_loops(&sb, keep, first, "i", d, true, false);
  char xr[256] = "", xj[256] = "", gj[256] = "", count[256] = "";
  for (int k = 0; k < rank; k++) {
    snprintf(xr + strlen(xr), sizeof xr - strlen(xr), "%s%c%d", k ? ", " : "", k < first ? 'i' : 'r', k);
    snprintf(xj + strlen(xj), sizeof xj - strlen(xj), "%s%c%d", k ? ", " : "", k < first ? 'i' : 'j', k);
  }
  for (int k = first; k < rank; k++) {
    snprintf(gj + strlen(gj), sizeof gj - strlen(gj), "%sj%d", k > first ? ", " : "", k);
    snprintf(count + strlen(count), sizeof count - strlen(count), "%s%s", k > first ? "*" : "", d[k]);
  }
  char epsbuf[64];
  snprintf(epsbuf, sizeof epsbuf, "%.17g", eps);
  if (!strpbrk(epsbuf, ".eEn")) strcat(epsbuf, ".0");
  const char *sfx = st == LOOM_DTYPE_F32 ? "" : s;
  loom_strbuf_printf(&sb, "alloc Q: Local[(2,), %s]\nQ[0] = 0.0%s\nQ[1] = 0.0%s\n", s, sfx, sfx);
  loom_tpg_open_loops(&sb, red, naxes, "r", d, false, true);
  if (!rms) loom_strbuf_printf(&sb, "Q[0] = Q[0] + %s(X[%s])\n", sc, xr);
  loom_strbuf_printf(&sb, "Q[1] = Q[1] + %s(X[%s]) * %s(X[%s])\n", sc, xr, sc, xr);
  loom_tpg_close_loops(&sb, naxes);
  loom_strbuf_printf(&sb, "let mean: %s = Q[0] / %s(%s)\n", s, s, count);
  /* var = E[x^2] - mean^2, clamped at 0 against rounding; rms uses E[x^2] directly. */
  loom_strbuf_printf(&sb, "let ms: %s = Q[1] / %s(%s)\n", s, s, count);
  if (rms)
    loom_strbuf_printf(&sb, "let inv: %s = rsqrt(ms + %s%s)\n", s, epsbuf, sfx);
  else
    loom_strbuf_printf(&sb, "let inv: %s = rsqrt(max(ms - mean * mean, 0.0%s) + %s%s)\n", s, sfx, epsbuf, sfx);
  loom_tpg_open_loops(&sb, red, naxes, "j", d, false, false);
  if (rms)
    loom_strbuf_printf(&sb, "Y[%s] = %s(%s(X[%s]) * inv * %s(gamma[%s]))\n", xj, tn, sc, xj, sc, gj);
  else
    loom_strbuf_printf(&sb, "Y[%s] = %s((%s(X[%s]) - mean) * inv * %s(gamma[%s]) + %s(beta[%s]))\n", xj, tn, sc, xj, sc, gj,
                       sc, gj);
  loom_tpg_close_loops(&sb, naxes);
  loom_tpg_close_program(&sb, first);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_argext(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool is_max, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "axis %d is outside [0, %d)", axis, rank);
  const char *const *d = loom_tpg_dims_d();
  const char *po[LOOM_TP_GEN_MAX_RANK];
  int orank = 0;
  char oi[256] = "", xr[256] = "";
  for (int k = 0; k < rank; k++) {
    if (k == axis && !keepdims) continue;
    po[orank] = k == axis ? "1" : d[k];
    char tok[8] = "0";
    if (k != axis) snprintf(tok, sizeof tok, "i%d", k);
    snprintf(oi + strlen(oi), sizeof oi - strlen(oi), "%s%s", orank ? ", " : "", tok);
    orank++;
  }
  for (int k = 0; k < rank; k++) snprintf(xr + strlen(xr), sizeof xr - strlen(xr), "%s%s%d", k ? ", " : "", k == axis ? "r" : "i", k);
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  if (orank == 0) {
    const char *one[1] = {"1"};
    loom_tpg_buffer_type(&sb, one, 1, LOOM_DTYPE_I64);
    snprintf(oi, sizeof oi, "0");
  } else {
    loom_tpg_buffer_type(&sb, po, orank, LOOM_DTYPE_I64);
  }
  loom_strbuf_puts(&sb, ") {\n");
  loom_tpg_open_loops(&sb, keep, nk, "i", d, true, false);
  /* The first extreme: replace only on a strictly better value. */
  loom_strbuf_printf(&sb, "alloc best: Local[(1,), %s]\nbest[0] = ", loom_dtype_name(t));
  loom_tpg_reduce_init(&sb, is_max ? LOOM_TP_REDUCE_MAX : LOOM_TP_REDUCE_MIN, t);
  loom_strbuf_printf(&sb, "\nY[%s] = 0\n", oi);
  loom_strbuf_printf(&sb, "for r%d in 0..%s reduce {\n", axis, d[axis]);
  loom_strbuf_printf(&sb, "if X[%s] %s best[0] {\nbest[0] = X[%s]\nY[%s] = r%d\n}\n}\n", xr, is_max ? ">" : "<", xr, oi, axis);
  loom_tpg_close_program(&sb, nk);
  return loom_tpg_finish(a, cx, &sb, result);
}

/* Running sum (prod false) or product along `axis`; the accumulator starts at 0 / 1. */
/* The scan of X along `axis` into Y: loops over the other axes (the first parallel), a running
 * accumulator, positions j (or d - 1 - j when reversed) in order. */
static void scan_nest(loom_strbuf *sb, loom_dtype t, int rank, int axis, bool exclusive, bool reverse, bool prod) {
  const char *const *d = loom_tpg_dims_d();
  int keep[LOOM_TP_GEN_MAX_RANK], nk = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) keep[nk++] = k;
  char xj[256] = "", at[32];
  if (reverse) snprintf(at, sizeof at, "%s - 1 - j%d", d[axis], axis);
  else snprintf(at, sizeof at, "j%d", axis);
  for (int k = 0; k < rank; k++) {
    char ik[8];
    snprintf(ik, sizeof ik, "i%d", k);
    snprintf(xj + strlen(xj), sizeof xj - strlen(xj), "%s%s", k ? ", " : "", k == axis ? at : ik);
  }
  loom_tpg_open_loops(sb, keep, nk, "i", d, true, false);
  loom_strbuf_printf(sb, "alloc acc%d: Local[(1,), %s]\n", axis, loom_dtype_name(t));
  if (prod) {
    loom_strbuf_printf(sb, "acc%d[0] = ", axis);
    loom_tpg_reduce_init(sb, LOOM_TP_REDUCE_PROD, t);
    loom_strbuf_puts(sb, "\n");
  }
  const char *op = prod ? "*" : "+";
  loom_strbuf_printf(sb, "for j%d in 0..%s {\n", axis, d[axis]);
  if (exclusive) loom_strbuf_printf(sb, "Y[%s] = acc%d[0]\nacc%d[0] = acc%d[0] %s X[%s]\n", xj, axis, axis, axis, op, xj);
  else loom_strbuf_printf(sb, "acc%d[0] = acc%d[0] %s X[%s]\nY[%s] = acc%d[0]\n", axis, axis, op, xj, xj, axis);
  loom_strbuf_puts(sb, "}\n");
  loom_tpg_close_loops(sb, nk);
}

/* axis >= 0: the scan along it; axis < 0: along the axis given by i64 scalar parameter `a`
 * (bound at run time, in [0, rank)): one scan nest per axis, under `if a == k`. */
static loom_status gen_cumulative(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                  bool exclusive, bool reverse, bool prod, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis >= rank || rank == 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s axis %d is outside [0, %d)", prod ? "cumprod" : "cumsum", axis, rank);
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  loom_strbuf_puts(&sb, axis < 0 ? ", a: i64, Y: " : ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  for (int k = 0; k < rank; k++) {
    if (axis >= 0 && k != axis) continue;
    if (axis < 0) loom_strbuf_printf(&sb, "if a == %d {\n", k);
    scan_nest(&sb, t, rank, k, exclusive, reverse, prod);
    if (axis < 0) loom_strbuf_puts(&sb, "}\n");
  }
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_cumsum(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool exclusive, bool reverse, loom_tp_func **result) {
  return gen_cumulative(a, cx, name, t, rank, axis, exclusive, reverse, false, result);
}

loom_status loom_tp_gen_cumprod(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool exclusive, bool reverse, loom_tp_func **result) {
  return gen_cumulative(a, cx, name, t, rank, axis, exclusive, reverse, true, result);
}

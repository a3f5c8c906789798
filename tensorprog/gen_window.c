/* gen_window.c — generators of the sliding-window programs over (N, C, spatial...) tensors:
 * N-d convolution and N-d pooling (max, argmax, average with or without counted padding, Lp).
 * Spatial dims are named h<i> (input), k<i> (kernel), y<i> (output); output loops j<i>, window
 * loops r<i>. Every extent stays symbolic; strides, dilations and padding are constants. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

static loom_status check_window(const loom_tp_window *w, const char *what) {
  if (w->n < 1 || w->n > LOOM_TP_MAX_SPATIAL)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %d spatial axes (1 to %d supported)", what, w->n, LOOM_TP_MAX_SPATIAL);
  for (int i = 0; i < w->n; i++)
    if (w->stride[i] < 1 || w->dilation[i] < 1 || w->pad_lo[i] < 0 || w->pad_hi[i] < 0 || w->shift[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d has stride %lld, dilation %lld, padding %lld/%lld, shift %lld",
                        what, i, (long long)w->stride[i], (long long)w->dilation[i], (long long)w->pad_lo[i],
                        (long long)w->pad_hi[i], (long long)w->shift[i]);
  return LOOM_OK;
}

/* "prefix0, prefix1, ..." for the n spatial axes. */
static void spatial_list(loom_strbuf *sb, const char *prefix, int n) {
  for (int i = 0; i < n; i++) loom_strbuf_printf(sb, ", %s%d", prefix, i);
}

/* Opens the output nest: batch (parallel), channel, then one loop per output spatial axis. */
static void open_output(loom_strbuf *sb, const char *channels, int n) {
  loom_strbuf_printf(sb, "for i0 in 0..n parallel {\nfor i1 in 0..%s {\n", channels);
  for (int i = 0; i < n; i++) loom_strbuf_printf(sb, "for j%d in 0..y%d {\n", i, i);
}

/* q[i] = j_i*stride + r_i*dilation - off_i: the input coordinate of a tap (off = padding
 * before, plus the ceil-mode shift where it applies). */
static void tap(char *out, size_t cap, const loom_tp_window *w, int i, int64_t off) {
  snprintf(out, cap, "j%d*%lld + r%d*%lld - %lld", i, (long long)w->stride[i], i, (long long)w->dilation[i], (long long)off);
}

/* "q0 >= 0 && q0 < h0 && ..." */
static void inside(loom_strbuf *sb, char q[][128], int n) {
  for (int i = 0; i < n; i++) loom_strbuf_printf(sb, "%s%s >= 0 && %s < h%d", i ? " && " : "", q[i], q[i], i);
}

/* A convolution's parameters X (n, c, h..), W (<w_lead>, k..), Bias (o)?, Y (n, o, y..); its
 * output nest and accumulator S (initialised with the bias). */
static void open_conv(loom_strbuf *sb, const char *name, loom_dtype t, loom_dtype acc, int n, const char *w_lead, bool bias) {
  const char *tn = loom_dtype_name(t), *an = loom_dtype_name(acc);
  loom_strbuf_printf(sb, "prim @%s(X: Buffer[(n, c", name);
  spatial_list(sb, "h", n);
  loom_strbuf_printf(sb, "), %s], W: Buffer[(%s", tn, w_lead);
  spatial_list(sb, "k", n);
  loom_strbuf_printf(sb, "), %s], ", tn);
  if (bias) loom_strbuf_printf(sb, "Bias: Buffer[(o,), %s], ", tn);
  loom_strbuf_puts(sb, "Y: Buffer[(n, o");
  spatial_list(sb, "y", n);
  loom_strbuf_printf(sb, "), %s]) {\n", tn);
  open_output(sb, "o", n);
  loom_strbuf_printf(sb, "alloc S: Local[(1,), %s]\n", an);
  if (bias) loom_strbuf_printf(sb, "S[0] = %s(Bias[i1])\n", an);
}

/* Closes the window loops (channels + n spatial), stores S and closes the output nest. */
static loom_status close_conv(loom_arena *a, loom_sym_ctx *cx, loom_strbuf *sb, int n, loom_dtype t, loom_tp_func **result) {
  loom_tpg_close_loops(sb, n + 1);
  loom_strbuf_printf(sb, "Y[i0, i1");
  spatial_list(sb, "j", n);
  loom_strbuf_printf(sb, "] = %s(S[0])\n", loom_dtype_name(t));
  loom_tpg_close_loops(sb, n + 2);
  loom_strbuf_puts(sb, "}\n");
  return loom_tpg_finish(a, cx, sb, result);
}

loom_status loom_tp_gen_conv(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                             const loom_tp_window *w, bool bias, loom_tp_func **result) {
  LOOM_PROPAGATE(check_window(w, "conv"));
  if (w->groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv: groups must be >= 1");
  const char *an = loom_dtype_name(acc);
  int n = w->n;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  open_conv(&sb, name, t, acc, n, "o, cg", bias);
  loom_strbuf_puts(&sb, "for rc in 0..cg reduce {\n");
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, "for r%d in 0..k%d reduce {\n", i, i);
  char q[LOOM_TP_MAX_SPATIAL][128];
  for (int i = 0; i < n; i++) tap(q[i], sizeof q[i], w, i, w->pad_lo[i]);
  loom_strbuf_puts(&sb, "if ");
  inside(&sb, q, n);
  loom_strbuf_printf(&sb, " {\nS[0] = S[0] + %s(X[i0, floordiv(i1, floordiv(o, %lld))*cg + rc", an, (long long)w->groups);
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, ", %s", q[i]);
  loom_strbuf_printf(&sb, "]) * %s(W[i1, rc", an);
  spatial_list(&sb, "r", n);
  loom_strbuf_puts(&sb, "])\n}\n");
  return close_conv(a, cx, &sb, n, t, result);
}

/* The flat input index of tap q (argmax): channel-major, then the spatial axes row-major, or
 * column-major over the spatial axes when col_major (ONNX storage_order 1). */
static void flat_index(loom_strbuf *sb, char q[][128], int n, bool col_major) {
  if (!col_major) { /* Horner: ((i0*c + i1)*h0 + q0)*h1 + q1 ... */
    for (int i = 0; i < n; i++) loom_strbuf_putc(sb, '(');
    loom_strbuf_puts(sb, "(i0*c + i1)");
    for (int i = 0; i < n; i++) loom_strbuf_printf(sb, "*h%d + (%s))", i, q[i]);
    return;
  }
  loom_strbuf_puts(sb, "(i0*c + i1)");
  for (int i = 0; i < n; i++) loom_strbuf_printf(sb, "*h%d", i);
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(sb, " + (%s)", q[i]);
    for (int k = 0; k < i; k++) loom_strbuf_printf(sb, "*h%d", k);
  }
}

loom_status loom_tp_gen_pool(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_pool *pool,
                             const loom_tp_window *w, loom_tp_func **result) {
  LOOM_PROPAGATE(check_window(w, "pool"));
  loom_tp_pool_kind kind = pool->kind;
  bool max = kind == LOOM_TP_POOL_MAX || kind == LOOM_TP_POOL_ARGMAX;
  if (!max && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "average and Lp pooling of %s are not supported", loom_dtype_name(t));
  if (kind == LOOM_TP_POOL_LP && pool->p < 1) return LOOM_ERROR(INVALID_ARGUMENT, "Lp pooling with p = %lld", (long long)pool->p);
  for (int i = 0; i < w->n; i++)
    if (w->kernel[i] < 1) return LOOM_ERROR(INVALID_ARGUMENT, "pool: kernel extent %lld on spatial axis %d", (long long)w->kernel[i], i);
  int n = w->n;
  const char *tn = loom_dtype_name(t);
  loom_dtype st = max ? t : loom_tpg_stat_type(t);
  const char *sn = loom_dtype_name(st);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: Buffer[(n, c", name);
  spatial_list(&sb, "h", n);
  loom_strbuf_printf(&sb, "), %s], Y: Buffer[(n, c", tn);
  spatial_list(&sb, "y", n);
  loom_strbuf_printf(&sb, "), %s]) {\n", kind == LOOM_TP_POOL_ARGMAX ? "i64" : tn);
  open_output(&sb, "c", n);
  loom_strbuf_printf(&sb, "alloc S: Local[(2,), %s]\n", sn);
  if (max) {
    loom_strbuf_puts(&sb, "S[0] = ");
    loom_tpg_reduce_init(&sb, LOOM_TP_REDUCE_MAX, t);
    loom_strbuf_putc(&sb, '\n');
  }
  if (kind == LOOM_TP_POOL_ARGMAX) loom_strbuf_puts(&sb, "alloc A: Local[(1,), i64]\nA[0] = -1\n");
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, "for r%d in 0..%lld reduce {\n", i, (long long)w->kernel[i]);
  char q[LOOM_TP_MAX_SPATIAL][128];
  for (int i = 0; i < n; i++) tap(q[i], sizeof q[i], w, i, w->pad_lo[i] + (max ? 0 : w->shift[i]));
  char load[1024];
  int len = snprintf(load, sizeof load, "X[i0, i1");
  for (int i = 0; i < n && len > 0 && (size_t)len < sizeof load; i++) len += snprintf(load + len, sizeof load - (size_t)len, ", %s", q[i]);
  if (len < 0 || (size_t)len + 2 > sizeof load) {
    loom_strbuf_free(&sb);
    return LOOM_ERROR(INTERNAL, "pool: tap expression too long");
  }
  strcat(load, "]");
  /* Average and Lp count a tap only before the end of the padded input (ceil mode's extra
   * windows reach past it): j*s + r*d < h + pad_lo + pad_hi. */
  char counted[LOOM_TP_MAX_SPATIAL * 96] = "";
  for (int i = 0; i < n && !max; i++)
    snprintf(counted + strlen(counted), sizeof counted - strlen(counted), " && j%d*%lld + r%d*%lld < h%d + %lld", i,
             (long long)w->stride[i], i, (long long)w->dilation[i], i, (long long)(w->pad_lo[i] + w->pad_hi[i]));
  loom_strbuf_puts(&sb, "if ");
  inside(&sb, q, n);
  loom_strbuf_printf(&sb, "%s {\n", counted);
  switch (kind) {
    case LOOM_TP_POOL_MAX: loom_strbuf_printf(&sb, "S[0] = max(S[0], %s)\n", load); break;
    case LOOM_TP_POOL_ARGMAX:
      loom_strbuf_printf(&sb, "if A[0] < 0 || %s > S[0] {\nS[0] = %s\nA[0] = ", load, load);
      flat_index(&sb, q, n, pool->col_major);
      loom_strbuf_puts(&sb, "\n}\n");
      break;
    case LOOM_TP_POOL_AVG:
    case LOOM_TP_POOL_AVG_PAD:
      loom_strbuf_printf(&sb, "S[0] = S[0] + %s%s%s%s\n", st != t ? sn : "", st != t ? "(" : "", load, st != t ? ")" : "");
      if (kind == LOOM_TP_POOL_AVG) loom_strbuf_printf(&sb, "S[1] = S[1] + %s(1.0)\n", sn);
      break;
    case LOOM_TP_POOL_LP:
      loom_strbuf_printf(&sb, "S[0] = S[0] + pow(abs(%s%s%s%s), %s(%lld.0))\n", st != t ? sn : "", st != t ? "(" : "", load,
                         st != t ? ")" : "", sn, (long long)pool->p);
      break;
  }
  loom_strbuf_puts(&sb, "}\n");
  if (kind == LOOM_TP_POOL_AVG_PAD) {
    /* every tap before the padded end counts, inside the input or not */
    loom_strbuf_printf(&sb, "if %s {\nS[1] = S[1] + %s(1.0)\n}\n", counted + 4, sn); /* past the leading " && " */
  }
  loom_tpg_close_loops(&sb, n);
  loom_strbuf_puts(&sb, "Y[i0, i1");
  spatial_list(&sb, "j", n);
  loom_strbuf_puts(&sb, "] = ");
  const char *open = st != t ? "(" : "", *close = st != t ? ")" : "", *cast = st != t ? tn : "";
  switch (kind) {
    case LOOM_TP_POOL_MAX: loom_strbuf_puts(&sb, "S[0]\n"); break;
    case LOOM_TP_POOL_ARGMAX: loom_strbuf_puts(&sb, "A[0]\n"); break;
    case LOOM_TP_POOL_AVG:
    case LOOM_TP_POOL_AVG_PAD:
      loom_strbuf_printf(&sb, "%s%sselect(S[1] > %s(0.0), S[0] / S[1], %s(0.0))%s\n", cast, open, sn, sn, close);
      break;
    case LOOM_TP_POOL_LP:
      loom_strbuf_printf(&sb, "%s%spow(S[0], %s(1.0) / %s(%lld.0))%s\n", cast, open, sn, sn, (long long)pool->p, close);
      break;
  }
  loom_tpg_close_loops(&sb, n + 2);
  loom_strbuf_puts(&sb, "}\n");
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_conv_transpose(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                                       const loom_tp_window *w, bool bias, loom_tp_func **result) {
  if (w->n < 1 || w->n > LOOM_TP_MAX_SPATIAL)
    return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: %d spatial axes (1 to %d supported)", w->n, LOOM_TP_MAX_SPATIAL);
  if (w->groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: groups must be >= 1");
  for (int i = 0; i < w->n; i++)
    if (w->stride[i] < 1 || w->dilation[i] < 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: spatial axis %d has stride %lld, dilation %lld", i,
                        (long long)w->stride[i], (long long)w->dilation[i]);
  const char *an = loom_dtype_name(acc);
  int n = w->n;
  long long groups = (long long)w->groups;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  open_conv(&sb, name, t, acc, n, "c, og", bias);
  loom_strbuf_printf(&sb, "for rc in 0..floordiv(c, %lld) reduce {\n", groups);
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, "for r%d in 0..k%d reduce {\n", i, i);
  /* Output y gathers input x where x*s - pad_lo + r*d = y: t = y + pad_lo - r*d must be a
   * non-negative multiple of s with t / s inside the input. */
  char t_of[LOOM_TP_MAX_SPATIAL][128], xi[LOOM_TP_MAX_SPATIAL][160];
  for (int i = 0; i < n; i++) {
    long long lo = (long long)w->pad_lo[i];
    snprintf(t_of[i], sizeof t_of[i], "j%d %c %lld - r%d*%lld", i, lo < 0 ? '-' : '+', lo < 0 ? -lo : lo, i,
             (long long)w->dilation[i]);
    if (w->stride[i] == 1) snprintf(xi[i], sizeof xi[i], "%s", t_of[i]);
    else snprintf(xi[i], sizeof xi[i], "floordiv(%s, %lld)", t_of[i], (long long)w->stride[i]);
  }
  loom_strbuf_puts(&sb, "if ");
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(&sb, "%s%s >= 0 && %s < h%d", i ? " && " : "", t_of[i], xi[i], i);
    if (w->stride[i] > 1) loom_strbuf_printf(&sb, " && floormod(%s, %lld) == 0", t_of[i], (long long)w->stride[i]);
  }
  loom_strbuf_printf(&sb, " {\nS[0] = S[0] + %s(X[i0, floordiv(i1, og)*floordiv(c, %lld) + rc", an, groups);
  for (int i = 0; i < n; i++) loom_strbuf_printf(&sb, ", %s", xi[i]);
  loom_strbuf_printf(&sb, "]) * %s(W[floordiv(i1, og)*floordiv(c, %lld) + rc, floormod(i1, og)", an, groups);
  spatial_list(&sb, "r", n);
  loom_strbuf_puts(&sb, "])\n}\n");
  return close_conv(a, cx, &sb, n, t, result);
}

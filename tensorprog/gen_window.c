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

/* ---- convolutions, built as IR (tp_build.h) ---- */

static const loom_sym_expr *C(loom_sym_ctx *cx, int64_t v) { return loom_sym_const(cx, v); }

/* What a convolution's builder holds between its opening and its closing. */
typedef struct conv_b {
  loom_tpb b;
  const loom_sym_expr *n, *c, *o, *h[LOOM_TP_MAX_SPATIAL], *k[LOOM_TP_MAX_SPATIAL];
  const loom_sym_expr *i0, *i1, *j[LOOM_TP_MAX_SPATIAL]; /* output loop variables */
  const loom_tp_buffer *X, *W, *Y, *S;
  loom_dtype acc;
} conv_b;

/* Spatial names: input dims h<i>, kernel dims k<i>, output dims y<i>, output loops j<i>,
 * window loops r<i>. */
static const char *const spatial_names[5][LOOM_TP_MAX_SPATIAL] = {
    {"h0", "h1", "h2", "h3", "h4", "h5"}, {"k0", "k1", "k2", "k3", "k4", "k5"},
    {"y0", "y1", "y2", "y3", "y4", "y5"}, {"j0", "j1", "j2", "j3", "j4", "j5"},
    {"r0", "r1", "r2", "r3", "r4", "r5"}};

/* Parameters X (n, c, h..), W (<w_lead>, k..), Bias (o)?, Y (n, o, y..); the output nest
 *   for i0 in 0..n parallel { for i1 in 0..o { for j<i> in 0..y<i> {
 * and the accumulator `alloc S: Local[(1,), acc]`, `S[0] = acc(Bias[i1])` with a bias. */
static void open_conv(conv_b *v, loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc, int n,
                      const char *const w_lead[2], bool bias) {
  loom_tpb *b = &v->b;
  loom_tpb_init(b, a, cx, name);
  v->acc = acc;
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *wd[2 + LOOM_TP_MAX_SPATIAL], *yd[2 + LOOM_TP_MAX_SPATIAL];
  xd[0] = v->n = loom_tpb_shape_sym(b, "n");
  xd[1] = v->c = loom_tpb_shape_sym(b, "c");
  for (int i = 0; i < n; i++) xd[2 + i] = v->h[i] = loom_tpb_shape_sym(b, spatial_names[0][i]);
  v->X = loom_tpb_buffer(b, "X", t, 2 + n, xd);
  wd[0] = loom_tpb_shape_sym(b, w_lead[0]);
  wd[1] = loom_tpb_shape_sym(b, w_lead[1]);
  for (int i = 0; i < n; i++) wd[2 + i] = v->k[i] = loom_tpb_shape_sym(b, spatial_names[1][i]);
  v->W = loom_tpb_buffer(b, "W", t, 2 + n, wd);
  const loom_tp_buffer *B = NULL;
  if (bias) {
    const loom_sym_expr *o = loom_tpb_shape_sym(b, "o");
    B = loom_tpb_buffer(b, "Bias", t, 1, &o);
  }
  yd[0] = v->n;
  yd[1] = v->o = loom_tpb_shape_sym(b, "o");
  for (int i = 0; i < n; i++) yd[2 + i] = loom_tpb_shape_sym(b, spatial_names[2][i]);
  v->Y = loom_tpb_buffer(b, "Y", t, 2 + n, yd);
  v->i0 = loom_tpb_for(b, "i0", v->n, LOOM_TP_LOOP_PARALLEL, false);
  v->i1 = loom_tpb_for(b, "i1", v->o, LOOM_TP_LOOP_SERIAL, false);
  for (int i = 0; i < n; i++) v->j[i] = loom_tpb_for(b, spatial_names[3][i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *one = C(cx, 1);
  v->S = loom_tpb_alloc(b, "S", acc, 1, &one, LOOM_TP_SCOPE_LOCAL);
  if (bias) {
    loom_tp_expr *zero = loom_tpb_idx(b, C(cx, 0)), *oi = loom_tpb_idx(b, v->i1);
    loom_tpb_store(b, v->S, &zero, loom_tp_cast(a, acc, loom_tpb_load(b, B, &oi)));
  }
}

/* Inside the window loops: `if cond { S[0] = S[0] + acc(X[xi]) * acc(W[wi]) }`; then closes
 * the window loops (channels + n spatial), stores `Y[i0, i1, j..] = t(S[0])` and finishes. */
static loom_status close_conv(conv_b *v, int n, loom_tp_expr *cond, loom_tp_expr *const *xi, loom_tp_expr *const *wi,
                              loom_tp_func **result) {
  loom_tpb *b = &v->b;
  loom_arena *a = b->a;
  loom_tpb_if(b, cond);
  loom_tp_expr *z0 = loom_tpb_idx(b, C(b->cx, 0));
  loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_cast(a, v->acc, loom_tpb_load(b, v->X, xi)),
                                   loom_tp_cast(a, v->acc, loom_tpb_load(b, v->W, wi)));
  loom_tpb_store(b, v->S, &z0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, v->S, &z0), prod));
  loom_tpb_end_n(b, 1 + n + 1);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL];
  yi[0] = loom_tpb_idx(b, v->i0);
  yi[1] = loom_tpb_idx(b, v->i1);
  for (int i = 0; i < n; i++) yi[2 + i] = loom_tpb_idx(b, v->j[i]);
  loom_tpb_store(b, v->Y, yi, loom_tp_cast(a, v->Y ? v->Y->dtype : LOOM_DTYPE_F32, loom_tpb_load(b, v->S, &z0)));
  return loom_tpb_finish(b, result);
}

/* c1 && c2, or c2 alone when c1 is NULL (the first condition). */
static loom_tp_expr *and_(loom_arena *a, loom_tp_expr *c1, loom_tp_expr *c2) {
  return c1 ? loom_tp_op2(a, LOOM_TP_OP_AND, c1, c2) : c2;
}

/* lhs <op> rhs on index values. */
static loom_tp_expr *cmp(loom_tpb *b, loom_tp_op op, const loom_sym_expr *lhs, const loom_sym_expr *rhs) {
  return loom_tp_op2(b->a, op, loom_tpb_idx(b, lhs), loom_tpb_idx(b, rhs));
}

/*   for rc in 0..cg reduce { for r<i> in 0..k<i> reduce {
 *     if q<i> >= 0 && q<i> < h<i> ... { S[0] = S[0] + acc(X[i0, floordiv(i1, floordiv(o, G))*cg + rc, q..]) * acc(W[i1, rc, r..]) }
 * with q<i> = j<i>*stride + r<i>*dilation - pad_lo. */
loom_status loom_tp_gen_conv(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                             const loom_tp_window *w, bool bias, loom_tp_func **result) {
  LOOM_PROPAGATE(check_window(w, "conv"));
  if (w->groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv: groups must be >= 1");
  int n = w->n;
  conv_b v;
  static const char *const lead[2] = {"o", "cg"};
  open_conv(&v, a, cx, name, t, acc, n, lead, bias);
  loom_tpb *b = &v.b;
  const loom_sym_expr *cg = loom_tpb_sym(b, "cg");
  const loom_sym_expr *rc = loom_tpb_for(b, "rc", cg, LOOM_TP_LOOP_SERIAL, true), *r[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) r[i] = loom_tpb_for(b, spatial_names[4][i], v.k[i], LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *q[LOOM_TP_MAX_SPATIAL];
  loom_tp_expr *cond = NULL, *xi[2 + LOOM_TP_MAX_SPATIAL], *wi[2 + LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    q[i] = loom_sym_sub(cx, loom_sym_add(cx, loom_sym_mul(cx, v.j[i], C(cx, w->stride[i])), loom_sym_mul(cx, r[i], C(cx, w->dilation[i]))),
                        C(cx, w->pad_lo[i]));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_GE, q[i], C(cx, 0)));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_LT, q[i], v.h[i]));
  }
  xi[0] = loom_tpb_idx(b, v.i0);
  xi[1] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, loom_sym_floordiv(cx, v.i1, loom_sym_floordiv(cx, v.o, C(cx, w->groups))), cg), rc));
  wi[0] = loom_tpb_idx(b, v.i1);
  wi[1] = loom_tpb_idx(b, rc);
  for (int i = 0; i < n; i++) {
    xi[2 + i] = loom_tpb_idx(b, q[i]);
    wi[2 + i] = loom_tpb_idx(b, r[i]);
  }
  return close_conv(&v, n, cond, xi, wi, result);
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

/* Output y gathers input x where x*s - pad_lo + r*d = y: t = y + pad_lo - r*d must be a
 * non-negative multiple of s with x = t / s inside the input:
 *   for rc in 0..floordiv(c, G) reduce { for r<i> in 0..k<i> reduce {
 *     if t<i> >= 0 && x<i> < h<i> [&& floormod(t<i>, s) == 0] ... {
 *       S[0] = S[0] + acc(X[i0, floordiv(i1, og)*floordiv(c, G) + rc, x..])
 *                   * acc(W[floordiv(i1, og)*floordiv(c, G) + rc, floormod(i1, og), r..]) } */
loom_status loom_tp_gen_conv_transpose(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype acc,
                                       const loom_tp_window *w, bool bias, loom_tp_func **result) {
  if (w->n < 1 || w->n > LOOM_TP_MAX_SPATIAL)
    return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: %d spatial axes (1 to %d supported)", w->n, LOOM_TP_MAX_SPATIAL);
  if (w->groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: groups must be >= 1");
  for (int i = 0; i < w->n; i++)
    if (w->stride[i] < 1 || w->dilation[i] < 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "conv_transpose: spatial axis %d has stride %lld, dilation %lld", i,
                        (long long)w->stride[i], (long long)w->dilation[i]);
  int n = w->n;
  conv_b v;
  static const char *const lead[2] = {"c", "og"};
  open_conv(&v, a, cx, name, t, acc, n, lead, bias);
  loom_tpb *b = &v.b;
  const loom_sym_expr *og = loom_tpb_sym(b, "og"), *cpg = loom_sym_floordiv(cx, v.c, C(cx, w->groups));
  const loom_sym_expr *rc = loom_tpb_for(b, "rc", cpg, LOOM_TP_LOOP_SERIAL, true), *r[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) r[i] = loom_tpb_for(b, spatial_names[4][i], v.k[i], LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *x[LOOM_TP_MAX_SPATIAL];
  loom_tp_expr *cond = NULL, *xi[2 + LOOM_TP_MAX_SPATIAL], *wi[2 + LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    int64_t lo = w->pad_lo[i];
    const loom_sym_expr *jl = lo < 0 ? loom_sym_sub(cx, v.j[i], C(cx, -lo)) : loom_sym_add(cx, v.j[i], C(cx, lo));
    const loom_sym_expr *ti = loom_sym_sub(cx, jl, loom_sym_mul(cx, r[i], C(cx, w->dilation[i])));
    x[i] = w->stride[i] == 1 ? ti : loom_sym_floordiv(cx, ti, C(cx, w->stride[i]));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_GE, ti, C(cx, 0)));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_LT, x[i], v.h[i]));
    if (w->stride[i] > 1) cond = and_(a, cond, cmp(b, LOOM_TP_OP_EQ, loom_sym_floormod(cx, ti, C(cx, w->stride[i])), C(cx, 0)));
  }
  const loom_sym_expr *ch = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_floordiv(cx, v.i1, og), cpg), rc);
  xi[0] = loom_tpb_idx(b, v.i0);
  xi[1] = loom_tpb_idx(b, ch);
  wi[0] = loom_tpb_idx(b, ch);
  wi[1] = loom_tpb_idx(b, loom_sym_floormod(cx, v.i1, og));
  for (int i = 0; i < n; i++) {
    xi[2 + i] = loom_tpb_idx(b, x[i]);
    wi[2 + i] = loom_tpb_idx(b, r[i]);
  }
  return close_conv(&v, n, cond, xi, wi, result);
}

/* gen_conv_taps.c — the live taps of a dilated convolution, for conv_gemm with K = 1
 * (graph/legalize_window.c decides when; docs/tensorprog.md "Convolution as GEMM").
 *
 * A tap whose every read falls in the padding contributes nothing: DeepLab's ASPP convolutions
 * (3 x 3, dilation and padding 12, 24, 36) on a 14 x 14 feature map read data with the centre
 * tap only for dilations 24 and 36. Along each spatial axis the live taps are a run
 * [a_i, a_i + l_i) (scalar parameters the caller computes from the extents: tap t is live where
 * some output position j has 0 <= j*s + t*d - pad_lo < h), so the patches and the weights keep
 * only those, and the GEMM's reduction shrinks with them. The patches are read from the input
 * itself (no padded copy): zeros where a tap reads the padding.
 *
 *   loom_tp_gen_im2col_taps   col[n, c*L + t', p] = X[n, c, y_i*s_i + (a_i + t'_i)*d_i - lo_i ..] or 0
 *   loom_tp_gen_conv_taps_w   Wl[o, c*L + t'] = W[o, c, a_i + t'_i ..]
 * (L = prod l_i, t' the live tap's flat index, p the flat output position, whole panels of
 * columns as loom_tp_conv_cols rounds them, zero past the last). */
#include "tensorprog/gen_internal.h"

static const loom_sym_expr *C(loom_sym_ctx *cx, int64_t v) { return loom_sym_const(cx, v); }

static loom_status check_taps(const loom_tp_conv_taps *g, const char *what) {
  if (g->n < 1 || g->n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %lld spatial axes", what, (long long)g->n);
  for (int i = 0; i < g->n; i++)
    if (g->kernel[i] < 1 || g->dilation[i] < 1 || g->stride[i] < 1 || g->pad_lo[i] < 0 || g->pad_hi[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d has kernel %lld, dilation %lld, stride %lld, pads %lld, %lld", what,
                        i, (long long)g->kernel[i], (long long)g->dilation[i], (long long)g->stride[i], (long long)g->pad_lo[i],
                        (long long)g->pad_hi[i]);
  return LOOM_OK;
}

/* The scalar parameters a0.., l0.. (the live runs). */
static void live_scalars(loom_tpb *b, int n, const loom_sym_expr **av, const loom_sym_expr **lv) {
  for (int i = 0; i < n; i++) av[i] = loom_tpb_scalar(b, loom_tpg_var('a', i));
  for (int i = 0; i < n; i++) lv[i] = loom_tpb_scalar(b, loom_tpg_var('t', i));
}

void loom_tp_conv_live_taps(loom_sym_ctx *cx, const loom_tp_conv_taps *g, int i, const loom_sym_expr *h, const loom_sym_expr *y,
                            const loom_sym_expr **a, const loom_sym_expr **l) {
  const loom_sym_expr *d = C(cx, g->dilation[i]), *k = C(cx, g->kernel[i]), *zero = C(cx, 0);
  /* a = ceil((lo - (y - 1)*s) / d) = -floordiv((y - 1)*s - lo, d); b = ceil((h + lo) / d) */
  const loom_sym_expr *last = loom_sym_sub(cx, loom_sym_mul(cx, loom_sym_sub(cx, y, C(cx, 1)), C(cx, g->stride[i])), C(cx, g->pad_lo[i]));
  const loom_sym_expr *lo = loom_sym_min(cx, k, loom_sym_max(cx, zero, loom_sym_neg(cx, loom_sym_floordiv(cx, last, d))));
  const loom_sym_expr *hi = loom_sym_min(cx, k, loom_sym_floordiv(cx, loom_sym_add(cx, h, C(cx, g->pad_lo[i] + g->dilation[i] - 1)), d));
  *a = lo;
  *l = loom_sym_max(cx, zero, loom_sym_sub(cx, hi, lo));
}

const loom_sym_expr *loom_tp_conv_taps_out(loom_sym_ctx *cx, const loom_tp_conv_taps *g, int i, const loom_sym_expr *h) {
  int64_t span = g->dilation[i] * (g->kernel[i] - 1) + 1;
  const loom_sym_expr *e = loom_sym_add(cx, h, C(cx, g->pad_lo[i] + g->pad_hi[i] - span));
  return loom_sym_add(cx, loom_sym_floordiv(cx, e, C(cx, g->stride[i])), C(cx, 1));
}

/* Text (2-D; o_i = (a_i + t_i)*d_i - lo_i the tap's offset; the rows of axis 0 outside the input
 * and the columns of axis 1 outside it written 0):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], a0: i64, a1: i64, t0: i64, t1: i64,
 *              col: Buffer[(n, c*t0*t1, cols(y0*y1)), t]) {
 *     for q in 0..n*c { for u0 in 0..t0 { for u1 in 0..t1 { for j0 in 0..y0 {
 *       if 0 <= j0*s0 + o0 && j0*s0 + o0 < h0 {
 *         for z in 0..jlo { col[.., j0*y1 + z] = 0 }                  jlo, jhi: the columns reading inside
 *         (loom_tpg_row_copy: col[.., j0*y1 + j1] = X[q / c, q % c, j0*s0 + o0, j1*s1 + o1], j1 in jlo..jhi)
 *         for z in jhi..y1 { col[.., j0*y1 + z] = 0 }
 *       } else { for z in 0..y1 { col[.., j0*y1 + z] = 0 } } } } } }
 *     (then the columns past y0*y1, zero) } */
loom_status loom_tp_gen_im2col_taps(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_taps *g,
                                    loom_tp_func **result) {
  LOOM_PROPAGATE(check_taps(g, "im2col_taps"));
  int n = (int)g->n;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *cd[3], *y[LOOM_TP_MAX_SPATIAL], *av[LOOM_TP_MAX_SPATIAL], *lv[LOOM_TP_MAX_SPATIAL];
  loom_tpg_dims_d(&b, 2 + n, xd);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd);
  live_scalars(&b, n, av, lv);
  const loom_sym_expr *P = C(cx, 1), *L = C(cx, 1);
  for (int i = 0; i < n; i++) {
    y[i] = loom_tp_conv_taps_out(cx, g, i, xd[2 + i]);
    P = loom_sym_mul(cx, P, y[i]);
    L = loom_sym_mul(cx, L, lv[i]);
  }
  cd[0] = xd[0];
  cd[1] = loom_sym_mul(cx, xd[1], L);
  cd[2] = loom_tp_conv_cols(cx, P);
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  loom_tp_expr *zero = loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *i0 = loom_sym_floordiv(cx, q, xd[1]), *c0 = loom_sym_floormod(cx, q, xd[1]);
  const loom_sym_expr *row = c0, *off[LOOM_TP_MAX_SPATIAL], *jv[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *u = loom_tpb_for(&b, loom_tpg_var('i', i), lv[i], LOOM_TP_LOOP_SERIAL, false);
    row = loom_sym_add(cx, loom_sym_mul(cx, row, lv[i]), u);
    off[i] = loom_sym_sub(cx, loom_sym_mul(cx, loom_sym_add(cx, av[i], u), C(cx, g->dilation[i])), C(cx, g->pad_lo[i]));
  }
  /* the outer axes' rows: inside the input or all zero */
  const loom_sym_expr *p = C(cx, 0);
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL];
  xi[0] = loom_tpb_idx(&b, i0);
  xi[1] = loom_tpb_idx(&b, c0);
  loom_tp_expr *inside = NULL;
  for (int i = 0; i < n - 1; i++) {
    jv[i] = loom_tpb_for(&b, loom_tpg_var('j', i), y[i], LOOM_TP_LOOP_SERIAL, false);
    p = loom_sym_add(cx, loom_sym_mul(cx, p, y[i]), jv[i]);
    const loom_sym_expr *at = loom_sym_add(cx, loom_sym_mul(cx, jv[i], C(cx, g->stride[i])), off[i]);
    xi[2 + i] = loom_tpb_idx(&b, at);
    loom_tp_expr *in = loom_tp_op2(a, LOOM_TP_OP_AND, loom_tpb_cmp(&b, LOOM_TP_OP_GE, at, C(cx, 0)),
                                   loom_tpb_cmp(&b, LOOM_TP_OP_LT, at, xd[2 + i]));
    inside = inside ? loom_tp_op2(a, LOOM_TP_OP_AND, inside, in) : in;
  }
  int l = n - 1;
  p = loom_sym_mul(cx, p, y[l]); /* the row's first position */
  const loom_sym_expr *s = C(cx, g->stride[l]);
  /* columns j reading inside: 0 <= j*s + o < h, j in [ceil(-o / s), ceil((h - o) / s)) within [0, y) */
  const loom_sym_expr *jlo = loom_sym_min(cx, y[l], loom_sym_max(cx, C(cx, 0), loom_sym_neg(cx, loom_sym_floordiv(cx, off[l], s))));
  const loom_sym_expr *jhi =
      loom_sym_min(cx, y[l], loom_sym_max(cx, jlo, loom_sym_neg(cx, loom_sym_floordiv(cx, loom_sym_sub(cx, off[l], xd[2 + l]), s))));
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, row), NULL};
  if (inside) loom_tpb_if(&b, inside);
  const loom_sym_expr *z = loom_tpb_for(&b, "zl", jlo, LOOM_TP_LOOP_SERIAL, false);
  ci[2] = loom_tpb_idx(&b, loom_sym_add(cx, p, z));
  loom_tpb_store(&b, col, ci, loom_tpb_dup(&b, zero));
  loom_tpb_end(&b);
  loom_tpg_row_copy(&b, col, ci, loom_sym_add(cx, p, jlo), X, xi, g->stride[l], loom_sym_add(cx, loom_sym_mul(cx, jlo, s), off[l]), t,
                    0.0, loom_sym_sub(cx, jhi, jlo), "m");
  z = loom_tpb_for(&b, "zh", loom_sym_sub(cx, y[l], jhi), LOOM_TP_LOOP_SERIAL, false);
  ci[2] = loom_tpb_idx(&b, loom_sym_add(cx, p, loom_sym_add(cx, jhi, z)));
  loom_tpb_store(&b, col, ci, loom_tpb_dup(&b, zero));
  loom_tpb_end(&b);
  if (inside) {
    loom_tpb_else(&b);
    z = loom_tpb_for(&b, "zr", y[l], LOOM_TP_LOOP_SERIAL, false);
    ci[2] = loom_tpb_idx(&b, loom_sym_add(cx, p, z));
    loom_tpb_store(&b, col, ci, loom_tpb_dup(&b, zero));
    loom_tpb_end_n(&b, 2); /* zr, the if */
  }
  loom_tpb_end_n(&b, 2 * n - 1 + 1); /* the outer axes' j, the taps' u, q */
  /* the columns past P, up to a whole panel: zeros (their products are cropped away) */
  const loom_sym_expr *r = loom_tpb_for(&b, "r", loom_sym_mul(cx, xd[0], cd[1]), LOOM_TP_LOOP_SERIAL, false);
  z = loom_tpb_for(&b, "z", loom_sym_sub(cx, cd[2], P), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *zi[3] = {loom_tpb_idx(&b, loom_sym_floordiv(cx, r, cd[1])), loom_tpb_idx(&b, loom_sym_floormod(cx, r, cd[1])),
                         loom_tpb_idx(&b, loom_sym_add(cx, P, z))};
  loom_tpb_store(&b, col, zi, zero);
  return loom_tpb_finish(&b, result);
}

/* Text (2-D; Wf is W viewed (o, cg*k0*k1)):
 *   prim @name(W: Buffer[(o, cg, k0, k1), t], Wf: Buffer[(o, q), t], a0: i64, a1: i64, t0: i64, t1: i64,
 *              Wl: Buffer[(o, cg*t0*t1), t]) {
 *     if t0 == k0 && t1 == k1 {                              every tap live: the rows as they are
 *       for i0 in 0..o parallel { (loom_tpg_row_copy of Wf[i0, ..] to Wl[i0, ..], q elements) }
 *     } else { for i0 in 0..o parallel { for i1 in 0..cg { for i2 in 0..t0 {
 *       (loom_tpg_row_copy of W[i0, i1, a0 + i2, a1 + ..] to Wl[i0, (i1*t0 + i2)*t1 + ..], t1 elements) } } } } } */
loom_status loom_tp_gen_conv_taps_w(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_taps *g,
                                    loom_tp_func **result) {
  LOOM_PROPAGATE(check_taps(g, "conv_taps_w"));
  int n = (int)g->n;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *wd[2 + LOOM_TP_MAX_SPATIAL], *av[LOOM_TP_MAX_SPATIAL], *lv[LOOM_TP_MAX_SPATIAL];
  wd[0] = loom_tpb_shape_sym(&b, "o");
  wd[1] = loom_tpb_shape_sym(&b, "cg");
  for (int i = 0; i < n; i++) wd[2 + i] = C(cx, g->kernel[i]);
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2 + n, wd);
  const loom_sym_expr *fd[2] = {wd[0], loom_tpb_shape_sym(&b, "q")};
  const loom_tp_buffer *Wf = loom_tpb_buffer(&b, "Wf", t, 2, fd);
  live_scalars(&b, n, av, lv);
  const loom_sym_expr *L = C(cx, 1);
  loom_tp_expr *all = NULL;
  for (int i = 0; i < n; i++) {
    L = loom_sym_mul(cx, L, lv[i]);
    loom_tp_expr *e = loom_tpb_cmp(&b, LOOM_TP_OP_EQ, lv[i], wd[2 + i]);
    all = all ? loom_tp_op2(a, LOOM_TP_OP_AND, all, e) : e;
  }
  const loom_sym_expr *ld[2] = {wd[0], loom_sym_mul(cx, wd[1], L)};
  const loom_tp_buffer *Wl = loom_tpb_buffer(&b, "Wl", t, 2, ld);
  loom_tpb_if(&b, all);
  const loom_sym_expr *o = loom_tpb_for(&b, "i0", wd[0], LOOM_TP_LOOP_PARALLEL, false);
  loom_tp_expr *li[2] = {loom_tpb_idx(&b, o), NULL}, *fi[2] = {loom_tpb_idx(&b, o), NULL};
  loom_tpg_row_copy(&b, Wl, li, C(cx, 0), Wf, fi, 1, C(cx, 0), t, 0.0, fd[1], "f");
  loom_tpb_end(&b);
  loom_tpb_else(&b);
  o = loom_tpb_for(&b, "i0", wd[0], LOOM_TP_LOOP_PARALLEL, false);
  const loom_sym_expr *c = loom_tpb_for(&b, "i1", wd[1], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *row = c;
  loom_tp_expr *wi[2 + LOOM_TP_MAX_SPATIAL] = {loom_tpb_idx(&b, o), loom_tpb_idx(&b, c)};
  for (int i = 0; i < n - 1; i++) {
    const loom_sym_expr *u = loom_tpb_for(&b, loom_tpg_var('i', i + 2), lv[i], LOOM_TP_LOOP_SERIAL, false);
    row = loom_sym_add(cx, loom_sym_mul(cx, row, lv[i]), u);
    wi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, av[i], u));
  }
  li[0] = loom_tpb_idx(&b, o);
  loom_tpg_row_copy(&b, Wl, li, loom_sym_mul(cx, row, lv[n - 1]), W, wi, 1, av[n - 1], t, 0.0, lv[n - 1], "r");
  return loom_tpb_finish(&b, result);
}

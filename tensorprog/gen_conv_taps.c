/* gen_conv_taps.c — a dilated convolution tap by tap (graph/legalize_window.c decides when and
 * chains the calls; docs/tensorprog.md "Convolution as GEMM").
 *
 * Where the taps reach far past the grid most of them read padding: DeepLab's ASPP (3 x 3,
 * dilation and padding 12, 24, 36) on a 14 x 14 map reads data with the centre tap only at
 * dilations 24 and 36, and at 12 each outer tap with 2 of 14 rows or columns. Tap t's output
 * positions that read data are a box (per axis the run loom_tp_conv_tap_rect gives, from the
 * symbolic extents), so per tap: its patches over that box (tap_cols, read from the input
 * itself: no padded copy, no zeros), one GEMM over the input channels with the tap's weights read
 * in place (conv_gemm's tap form), and the product added into the output's box (tap_add), from
 * an output that starts as the bias (tap_init). A tap that reads no data has an empty box. The
 * tap's position comes in scalar parameters: one program of each kind serves every tap (and
 * every convolution of the same spatial rank; tap_cols of the same strides too). */
#include "tensorprog/gen_internal.h"

static const loom_sym_expr *C(loom_sym_ctx *cx, int64_t v) { return loom_sym_const(cx, v); }

static loom_status check_rank(int n, const char *what) {
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %d spatial axes", what, n);
  return LOOM_OK;
}

void loom_tp_conv_tap_rect(loom_sym_ctx *cx, const loom_tp_conv_taps *g, int i, int64_t t, const loom_sym_expr *h,
                           const loom_sym_expr *y, const loom_sym_expr **jlo, const loom_sym_expr **r) {
  /* output j reads h-coordinate j*s + o, o = t*d - lo: inside for j in [ceil(-o / s), ceil((h - o) / s))
   * within [0, y). Written by the sign of the constant o, so the expressions stay small (they
   * size buffers): o >= 0 starts at 0; o < 0 starts at c = ceil(-o / s) > 0 and its end
   * ceil((h - o) / s) is at least c. */
  int64_t o = t * g->dilation[i] - g->pad_lo[i], s = g->stride[i];
  const loom_sym_expr *end = loom_sym_neg(cx, loom_sym_floordiv(cx, loom_sym_sub(cx, C(cx, o), h), C(cx, s)));
  if (o >= 0) {
    *jlo = C(cx, 0);
    *r = loom_sym_min(cx, y, loom_sym_max(cx, C(cx, 0), end));
  } else {
    *jlo = loom_sym_min(cx, y, C(cx, (-o + s - 1) / s));
    *r = loom_sym_sub(cx, loom_sym_min(cx, y, end), *jlo);
  }
}

/* Scalar parameters <p>0.. (one per spatial axis). */
static void scalars(loom_tpb *b, int n, char p, const loom_sym_expr **v) {
  for (int i = 0; i < n; i++) v[i] = loom_tpb_scalar(b, loom_tpg_var(p, i));
}

/* Text (2-D):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], a0: i64, a1: i64, t0: i64, t1: i64, col: Buffer[(n, c, cols(t0*t1)), t]) {
 *     for q in 0..n*c { for i0 in 0..t0 {
 *       (loom_tpg_row_copy: col[q // c, q % c, i0*t1 + ..] = X[q // c, q % c, a0 + i0*s0, a1 + ..*s1], t1 elements) } }
 *     for r in 0..n*c { for z in 0..cols(t0*t1) - t0*t1 { col[r // c, r % c, t0*t1 + z] = 0 } } } */
loom_status loom_tp_gen_conv_tap_cols(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, const int64_t *stride,
                                      loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(n, "conv_tap_cols"));
  for (int i = 0; i < n; i++)
    if (stride[i] < 1) return LOOM_ERROR(INVALID_ARGUMENT, "conv_tap_cols: spatial axis %d has stride %lld", i, (long long)stride[i]);
  int l = n - 1;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *x0[LOOM_TP_MAX_SPATIAL], *rv[LOOM_TP_MAX_SPATIAL];
  loom_tpg_dims_d(&b, 2 + n, xd);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd);
  scalars(&b, n, 'a', x0);
  scalars(&b, n, 't', rv);
  const loom_sym_expr *R = C(cx, 1);
  for (int i = 0; i < n; i++) R = loom_sym_mul(cx, R, rv[i]);
  const loom_sym_expr *cd[3] = {xd[0], xd[1], loom_tp_conv_cols(cx, R)};
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *i0 = loom_sym_floordiv(cx, q, xd[1]), *c0 = loom_sym_floormod(cx, q, xd[1]);
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, c0)};
  const loom_sym_expr *p = C(cx, 0);
  for (int i = 0; i < l; i++) {
    const loom_sym_expr *v = loom_tpb_for(&b, loom_tpg_var('i', i), rv[i], LOOM_TP_LOOP_SERIAL, false);
    p = loom_sym_add(cx, loom_sym_mul(cx, p, rv[i]), v);
    xi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, x0[i], loom_sym_mul(cx, v, C(cx, stride[i]))));
  }
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, c0), NULL};
  loom_tpg_row_copy(&b, col, ci, loom_sym_mul(cx, p, rv[l]), X, xi, stride[l], x0[l], t, 0.0, rv[l], "m");
  loom_tpb_end_n(&b, l + 1); /* the outer axes, q */
  /* the columns past the box, up to a whole panel: zeros (their products are never read) */
  const loom_sym_expr *r = loom_tpb_for(&b, "r", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *z = loom_tpb_for(&b, "z", loom_sym_sub(cx, cd[2], R), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *zi[3] = {loom_tpb_idx(&b, loom_sym_floordiv(cx, r, xd[1])), loom_tpb_idx(&b, loom_sym_floormod(cx, r, xd[1])),
                         loom_tpb_idx(&b, loom_sym_add(cx, R, z))};
  loom_tpb_store(&b, col, zi, loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  return loom_tpb_finish(&b, result);
}

/* Text (2-D):
 *   prim @name(Yp: Buffer[(n, o, y0, y1), t], Yt: Buffer[(n, o, q), t], j0: i64, j1: i64, t0: i64, t1: i64,
 *              Y: Buffer[(n, o, y0, y1), t]) {
 *     for i0 in 0..n parallel { for i1 in 0..o { for i2 in 0..y0 { for i3 in 0..y1 { Y[..] = Yp[..] } } } }
 *     for i0 in 0..n { for i1 in 0..o { for i2 in 0..t0 { for i3 in 0..t1 {
 *       Y[i0, i1, j0 + i2, j1 + i3] = Y[i0, i1, j0 + i2, j1 + i3] + Yt[i0, i1, i2*t1 + i3] } } } } } */
loom_status loom_tp_gen_conv_tap_add(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(n, "conv_tap_add"));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *yd[2 + LOOM_TP_MAX_SPATIAL], *jv[LOOM_TP_MAX_SPATIAL], *rv[LOOM_TP_MAX_SPATIAL];
  loom_tpg_dims_d(&b, 2 + n, yd);
  const loom_tp_buffer *Yp = loom_tpb_buffer(&b, "Yp", t, 2 + n, yd);
  const loom_sym_expr *td[3] = {yd[0], yd[1], loom_tpb_shape_sym(&b, "q")};
  const loom_tp_buffer *Yt = loom_tpb_buffer(&b, "Yt", t, 3, td);
  scalars(&b, n, 'j', jv);
  scalars(&b, n, 't', rv);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 2 + n, yd);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL];
  loom_tpg_nest(&b, 2 + n, yd, yi);
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, Yp, yi));
  loom_tpb_end_n(&b, 2 + n);
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", yd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *i1 = loom_tpb_for(&b, "i1", yd[1], LOOM_TP_LOOP_SERIAL, false);
  yi[0] = loom_tpb_idx(&b, i0);
  yi[1] = loom_tpb_idx(&b, i1);
  const loom_sym_expr *p = C(cx, 0);
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *v = loom_tpb_for(&b, loom_tpg_var('i', i + 2), rv[i], LOOM_TP_LOOP_SERIAL, false);
    p = loom_sym_add(cx, loom_sym_mul(cx, p, rv[i]), v);
    yi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, jv[i], v));
  }
  loom_tp_expr *ti[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, i1), loom_tpb_idx(&b, p)};
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), loom_tpb_load(&b, Yt, ti)));
  return loom_tpb_finish(&b, result);
}

/* Text (2-D): prim @name([Bias: Buffer[(o,), t],] Y: Buffer[(n, o, y0, y1), t]) {
 *   for i0 in 0..n parallel { for i1 .. { for i2 .. { for i3 .. { Y[i0, i1, i2, i3] = Bias[i1] | 0 } } } } } */
loom_status loom_tp_gen_conv_tap_init(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, bool bias,
                                      loom_tp_func **result) {
  LOOM_PROPAGATE(check_rank(n, "conv_tap_init"));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *yd[2 + LOOM_TP_MAX_SPATIAL];
  loom_tpg_dims_d(&b, 2 + n, yd);
  const loom_tp_buffer *Bias = bias ? loom_tpb_buffer(&b, "Bias", t, 1, &yd[1]) : NULL;
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 2 + n, yd);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL];
  loom_tpg_nest(&b, 2 + n, yd, yi);
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &yi[1]) : loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  return loom_tpb_finish(&b, result);
}

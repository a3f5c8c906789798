/* gen_conv.c — convolution as a GEMM that the CPU matmul rule register-tiles (graph/legalize_window.c
 * decides when; docs/tensorprog.md "Convolution as GEMM").
 *
 *   loom_tp_gen_conv_gemm  Y[n, o, p] = (Bias[o]) + sum over r of W[o, r] * X[n, g*cg + r / K, s*p + off(r)]:
 *                          the implicit GEMM of a convolution over an input padded beforehand and viewed
 *                          flat (X: (n, c, l)), W viewed (o, cg*K). off(r) is the flat offset of kernel
 *                          tap r % K in the padded input (pitches from the padded extents, scalar
 *                          parameters), so B = X[.., s*p + off(r)] is read with unit stride in p (s = 1)
 *                          and packed per panel by the matmul rule: im2col without its buffer. Output
 *                          positions are flat positions of the padded input's grid; the columns past
 *                          each row's output extent are computed and sliced away by the caller.
 *   loom_tp_gen_im2col     col[n, c*K + t, p] = X[n, c, y_i*s_i + t_i*d_i ..] (p: the flat output position):
 *                          the patch matrix of a strided convolution, for conv_gemm with K = 1.
 *
 * Kernel extents, strides, dilations and groups are constants of the program; every extent is
 * symbolic. Programs are built directly as IR (tp_build.h). */
#include "tensorprog/gen_internal.h"

static const loom_sym_expr *C(loom_sym_ctx *cx, int64_t v) { return loom_sym_const(cx, v); }

static loom_status check_geometry(const loom_tp_conv_gemm *g, const char *what) {
  if (g->n < 1 || g->n > LOOM_TP_MAX_SPATIAL || g->groups < 1 || g->stride < 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %d spatial axes, groups %lld, stride %lld", what, g->n, (long long)g->groups,
                      (long long)g->stride);
  for (int i = 0; i < g->n; i++)
    if (g->kernel[i] < 1 || g->dilation[i] < 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d has kernel %lld, dilation %lld", what, i,
                        (long long)g->kernel[i], (long long)g->dilation[i]);
  return LOOM_OK;
}

/* Taps of the kernel: K = prod k_i. */
static int64_t taps(const loom_tp_conv_gemm *g) {
  int64_t k = 1;
  for (int i = 0; i < g->n; i++) k *= g->kernel[i];
  return k;
}

/* Text of what it builds (G > 1; Bias optional; e1.. the padded extents of spatial axes 1..n-1):
 *   prim @name(X: Buffer[(n, c, l), t], W: Buffer[(o, c // G * K), t], Bias: Buffer[(o,), t], e1: i64, ...,
 *              Y: Buffer[(n, o, p), t]) {
 *     for i0 in 0..n { for g in 0..G { for i1 in 0..o // G { for j in 0..p {
 *       Y[i0, g*(o // G) + i1, j] = Bias[g*(o // G) + i1]
 *       for r in 0..c // G * K reduce {
 *         Y[..] = Y[..] + W[g*(o // G) + i1, r] * X[i0, g*(c // G) + r // K, s*j + off(r)] } } } } }
 * off(r) = sum over spatial axes i of ((r // K_i) % k_i) * d_i * pitch_i, K_i the taps of the axes
 * after i, pitch_i the product of e_m for m > i. With G = 1 there is no g loop. */
loom_status loom_tp_gen_conv_gemm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *geo,
                                  loom_tp_func **result) {
  LOOM_PROPAGATE(check_geometry(geo, "conv_gemm"));
  int64_t K = taps(geo), G = geo->groups;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[3], *wd[2], *yd[3];
  xd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = loom_tpb_shape_sym(&b, "c");
  xd[2] = loom_tpb_shape_sym(&b, "l");
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 3, xd);
  const loom_sym_expr *cg = loom_sym_floordiv(cx, xd[1], C(cx, G));
  wd[0] = loom_tpb_shape_sym(&b, "o");
  wd[1] = loom_sym_mul(cx, cg, C(cx, K));
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2, wd);
  const loom_tp_buffer *Bias = geo->bias ? loom_tpb_buffer(&b, "Bias", t, 1, wd) : NULL;
  static const char *const ext[LOOM_TP_MAX_SPATIAL] = {"e0", "e1", "e2", "e3", "e4", "e5"};
  const loom_sym_expr *e[LOOM_TP_MAX_SPATIAL] = {0};
  for (int i = 1; i < geo->n; i++) e[i] = loom_tpb_scalar(&b, ext[i]);
  yd[0] = xd[0];
  yd[1] = wd[0];
  yd[2] = loom_tpb_shape_sym(&b, "p");
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 3, yd); /* the destination: last */

  const loom_sym_expr *og = loom_sym_floordiv(cx, wd[0], C(cx, G));
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", xd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *g = G > 1 ? loom_tpb_for(&b, "g", C(cx, G), LOOM_TP_LOOP_SERIAL, false) : C(cx, 0);
  const loom_sym_expr *i1 = loom_tpb_for(&b, "i1", og, LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *j = loom_tpb_for(&b, "j", yd[2], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *oc = loom_sym_add(cx, loom_sym_mul(cx, g, og), i1);
  loom_tp_expr *yi[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, oc), loom_tpb_idx(&b, j)};
  loom_tp_expr *oi = loom_tpb_idx(&b, oc);
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &oi) : loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  const loom_sym_expr *r = loom_tpb_for(&b, "r", wd[1], LOOM_TP_LOOP_SERIAL, true);
  /* the tap's flat offset: axes from the last (pitch 1) to the first */
  const loom_sym_expr *off = C(cx, 0), *pitch = C(cx, 1);
  int64_t inner = 1;
  for (int i = geo->n - 1; i >= 0; i--) {
    const loom_sym_expr *ti = loom_sym_floormod(cx, loom_sym_floordiv(cx, r, C(cx, inner)), C(cx, geo->kernel[i]));
    if (geo->kernel[i] > 1) off = loom_sym_add(cx, off, loom_sym_mul(cx, loom_sym_mul(cx, ti, C(cx, geo->dilation[i])), pitch));
    inner *= geo->kernel[i];
    if (i > 0) pitch = loom_sym_mul(cx, pitch, e[i]);
  }
  const loom_sym_expr *ch = loom_sym_add(cx, loom_sym_mul(cx, g, cg), K > 1 ? loom_sym_floordiv(cx, r, C(cx, K)) : r);
  loom_tp_expr *xi[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, ch),
                         loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, j, C(cx, geo->stride)), off))};
  loom_tp_expr *wi[2] = {loom_tpb_idx(&b, oc), loom_tpb_idx(&b, r)};
  loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, W, wi), loom_tpb_load(&b, X, xi));
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), prod));
  return loom_tpb_finish(&b, result);
}

/* Text (2-D; y_i = (h_i - d_i*(k_i - 1) - 1) // s_i + 1 of the padded extents h_i):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], col: Buffer[(n, c*K, y0*y1), t]) {
 *     for i0 in 0..n { for c0 in 0..c { for t0 in 0..k0 { for t1 in 0..k1 { for j0 in 0..y0 { for j1 in 0..y1 {
 *       col[i0, (c0*k0 + t0)*k1 + t1, j0*y1 + j1] = X[i0, c0, j0*s0 + t0*d0, j1*s1 + t1*d1] } } } } } } */
loom_status loom_tp_gen_im2col(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *geo,
                               const int64_t *stride, loom_tp_func **result) {
  LOOM_PROPAGATE(check_geometry(geo, "im2col"));
  int n = geo->n;
  for (int i = 0; i < n; i++)
    if (stride[i] < 1) return LOOM_ERROR(INVALID_ARGUMENT, "im2col: spatial axis %d has stride %lld", i, (long long)stride[i]);
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  static const char *const tn[LOOM_TP_MAX_SPATIAL] = {"t0", "t1", "t2", "t3", "t4", "t5"};
  static const char *const jn[LOOM_TP_MAX_SPATIAL] = {"j0", "j1", "j2", "j3", "j4", "j5"};
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *cd[3], *y[LOOM_TP_MAX_SPATIAL];
  xd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = loom_tpb_shape_sym(&b, "c");
  for (int i = 0; i < n; i++) xd[2 + i] = loom_tpb_shape_sym(&b, hn[i]);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd);
  const loom_sym_expr *P = C(cx, 1);
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *span = C(cx, geo->dilation[i] * (geo->kernel[i] - 1) + 1);
    y[i] = loom_sym_add(cx, loom_sym_floordiv(cx, loom_sym_sub(cx, xd[2 + i], span), C(cx, stride[i])), C(cx, 1));
    P = loom_sym_mul(cx, P, y[i]);
  }
  cd[0] = xd[0];
  cd[1] = loom_sym_mul(cx, xd[1], C(cx, taps(geo)));
  cd[2] = P;
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", xd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *row = loom_tpb_for(&b, "c0", xd[1], LOOM_TP_LOOP_SERIAL, false), *tv[LOOM_TP_MAX_SPATIAL],
                      *jv[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    tv[i] = loom_tpb_for(&b, tn[i], C(cx, geo->kernel[i]), LOOM_TP_LOOP_SERIAL, false);
    row = loom_sym_add(cx, loom_sym_mul(cx, row, C(cx, geo->kernel[i])), tv[i]);
  }
  const loom_sym_expr *p = C(cx, 0);
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL];
  xi[0] = loom_tpb_idx(&b, i0);
  xi[1] = loom_tpb_idx(&b, loom_tpb_sym(&b, "c0"));
  for (int i = 0; i < n; i++) {
    jv[i] = loom_tpb_for(&b, jn[i], y[i], LOOM_TP_LOOP_SERIAL, false);
    p = loom_sym_add(cx, loom_sym_mul(cx, p, y[i]), jv[i]);
    xi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, jv[i], C(cx, stride[i])),
                                              loom_sym_mul(cx, tv[i], C(cx, geo->dilation[i]))));
  }
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, row), loom_tpb_idx(&b, p)};
  loom_tpb_store(&b, col, ci, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* Text (2-D): the rows inside the input copy it between zeroed borders, the others are zeroed:
 *   prim @name(X: Buffer[(n, c, h0, h1), t], Y: Buffer[(n, c, h0 + lo0 + hi0, h1 + lo1 + hi1), t]) {
 *     for q in 0..n*c { for r0 in 0..h0 + lo0 + hi0 {
 *       if r0 >= lo0 && r0 - lo0 < h0 {
 *         for z0 in 0..lo1 { Y[q // c, q % c, r0, z0] = 0.0 }
 *         for z1 in 0..h1 { Y[q // c, q % c, r0, lo1 + z1] = X[q // c, q % c, r0 - lo0, z1] }
 *         for z2 in 0..hi1 { Y[q // c, q % c, r0, lo1 + h1 + z2] = 0.0 }
 *       } else { for z3 in 0..h1 + lo1 + hi1 { Y[q // c, q % c, r0, z3] = 0.0 } } } }
 * (the loops over pads of 0 left out). One loop over the (n, c) planes, so that a batch of one
 * still has work for every thread; the inner loops are unit-stride stores the CPU rule vectorises. */
loom_status loom_tp_gen_conv_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, const int64_t *lo,
                                 const int64_t *hi, loom_tp_func **result) {
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "conv_pad: %d spatial axes", n);
  for (int i = 0; i < n; i++)
    if (lo[i] < 0 || hi[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "conv_pad: spatial axis %d pads %lld / %lld", i, (long long)lo[i], (long long)hi[i]);
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  static const char *const rn[LOOM_TP_MAX_SPATIAL] = {"r0", "r1", "r2", "r3", "r4", "r5"};
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *yd[2 + LOOM_TP_MAX_SPATIAL];
  xd[0] = yd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = yd[1] = loom_tpb_shape_sym(&b, "c");
  for (int i = 0; i < n; i++) {
    xd[2 + i] = loom_tpb_shape_sym(&b, hn[i]);
    yd[2 + i] = loom_sym_add(cx, xd[2 + i], C(cx, lo[i] + hi[i]));
  }
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd), *Y = loom_tpb_buffer(&b, "Y", t, 2 + n, yd);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL], *xi[2 + LOOM_TP_MAX_SPATIAL], *inside = NULL;
  yi[0] = xi[0] = loom_tpb_idx(&b, loom_sym_floordiv(cx, q, xd[1]));
  yi[1] = xi[1] = loom_tpb_idx(&b, loom_sym_floormod(cx, q, xd[1]));
  for (int i = 0; i + 1 < n; i++) {
    const loom_sym_expr *r = loom_tpb_for(&b, rn[i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
    yi[2 + i] = loom_tpb_idx(&b, r);
    xi[2 + i] = loom_tpb_idx(&b, loom_sym_sub(cx, r, C(cx, lo[i])));
    if (lo[i] > 0) {
      loom_tp_expr *ge = loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_idx(&b, r), loom_tpb_idx(&b, C(cx, lo[i])));
      inside = inside ? loom_tp_op2(a, LOOM_TP_OP_AND, inside, ge) : ge;
    }
    if (lo[i] > 0 || hi[i] > 0) {
      loom_tp_expr *lt = loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(&b, loom_sym_sub(cx, r, C(cx, lo[i]))), loom_tpb_idx(&b, xd[2 + i]));
      inside = inside ? loom_tp_op2(a, LOOM_TP_OP_AND, inside, lt) : lt;
    }
  }
  int last = 2 + n - 1;
  loom_tp_expr *zero = loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t);
  if (inside) loom_tpb_if(&b, inside);
  if (lo[n - 1] > 0) {
    yi[last] = loom_tpb_idx(&b, loom_tpb_for(&b, "z0", C(cx, lo[n - 1]), LOOM_TP_LOOP_SERIAL, false));
    loom_tpb_store(&b, Y, yi, zero);
    loom_tpb_end(&b);
  }
  const loom_sym_expr *z1 = loom_tpb_for(&b, "z1", xd[last], LOOM_TP_LOOP_SERIAL, false);
  yi[last] = loom_tpb_idx(&b, loom_sym_add(cx, z1, C(cx, lo[n - 1])));
  xi[last] = loom_tpb_idx(&b, z1);
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  loom_tpb_end(&b);
  if (hi[n - 1] > 0) {
    const loom_sym_expr *z2 = loom_tpb_for(&b, "z2", C(cx, hi[n - 1]), LOOM_TP_LOOP_SERIAL, false);
    yi[last] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_add(cx, z2, xd[last]), C(cx, lo[n - 1])));
    loom_tpb_store(&b, Y, yi, loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
    loom_tpb_end(&b);
  }
  if (inside) {
    loom_tpb_else(&b);
    yi[last] = loom_tpb_idx(&b, loom_tpb_for(&b, "z3", yd[last], LOOM_TP_LOOP_SERIAL, false));
    loom_tpb_store(&b, Y, yi, loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
    loom_tpb_end(&b);
    loom_tpb_end(&b);
  }
  return loom_tpb_finish(&b, result);
}

/* Transposed convolution, first half (G > 1 shown; W (c, q) is the weights (C, O/G, k..) viewed with
 * q = O/G * K):
 *   prim @name(X: Buffer[(n, c, l), t], W: Buffer[(c, q), t], col: Buffer[(n, G*q, l), t]) {
 *     for i0 in 0..n { for g in 0..G { for i1 in 0..q { for j in 0..l {
 *       col[i0, g*q + i1, j] = 0.0
 *       for r in 0..c // G reduce { col[..] = col[..] + W[g*(c // G) + r, i1] * X[i0, g*(c // G) + r, j] } } } } }
 * a GEMM (W transposed) the matmul rule tiles: col[n, o*K + tap, x] is what input position x gives
 * output channel o through kernel tap `tap`; loom_tp_gen_col2im adds them up. */
loom_status loom_tp_gen_convt_gemm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int64_t groups,
                                   loom_tp_func **result) {
  if (groups < 1) return LOOM_ERROR(INVALID_ARGUMENT, "convt_gemm: groups %lld", (long long)groups);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[3], *wd[2], *cd[3];
  xd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = loom_tpb_shape_sym(&b, "c");
  xd[2] = loom_tpb_shape_sym(&b, "l");
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 3, xd);
  wd[0] = xd[1];
  wd[1] = loom_tpb_shape_sym(&b, "q");
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2, wd);
  cd[0] = xd[0];
  cd[1] = loom_sym_mul(cx, wd[1], C(cx, groups));
  cd[2] = xd[2];
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  const loom_sym_expr *cg = loom_sym_floordiv(cx, xd[1], C(cx, groups));
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", xd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *g = groups > 1 ? loom_tpb_for(&b, "g", C(cx, groups), LOOM_TP_LOOP_SERIAL, false) : C(cx, 0);
  const loom_sym_expr *i1 = loom_tpb_for(&b, "i1", wd[1], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *j = loom_tpb_for(&b, "j", xd[2], LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, g, wd[1]), i1)),
                         loom_tpb_idx(&b, j)};
  loom_tpb_store(&b, col, ci, loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  const loom_sym_expr *r = loom_tpb_for(&b, "r", cg, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *ch = loom_sym_add(cx, loom_sym_mul(cx, g, cg), r);
  loom_tp_expr *wi[2] = {loom_tpb_idx(&b, ch), loom_tpb_idx(&b, i1)};
  loom_tp_expr *xi[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, ch), loom_tpb_idx(&b, j)};
  loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, W, wi), loom_tpb_load(&b, X, xi));
  loom_tpb_store(&b, col, ci, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, col, ci), prod));
  return loom_tpb_finish(&b, result);
}

/* Transposed convolution, second half (2-D; h0, h1 the input extents as scalar parameters):
 *   prim @name(col: Buffer[(n, m, l), t], Bias: Buffer[(o,), t], h0: i64, h1: i64, Y: Buffer[(n, o, f0, f1), t]) {
 *     for q in 0..n*o {
 *       for a0 in 0..f0 { for a1 in 0..f1 { Y[q // o, q % o, a0, a1] = Bias[q % o] } }
 *       for t0 in 0..k0 { for t1 in 0..k1 { for x0 in 0..h0 { for x1 in 0..h1 {
 *         Y[q // o, q % o, x0*s0 + t0*d0, x1*s1 + t1*d1] = Y[..] + col[q // o, (q % o)*K + t0*k1 + t1, x0*h1 + x1] } } } } }
 * Y is the full output before the transposed convolution's padding is cropped: f_i = (h_i - 1)*s_i +
 * d_i*(k_i - 1) + 1 + output padding (the caller's; every position written stays inside). */
loom_status loom_tp_gen_col2im(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_gemm *geo,
                               const int64_t *stride, loom_tp_func **result) {
  LOOM_PROPAGATE(check_geometry(geo, "col2im"));
  int n = geo->n;
  for (int i = 0; i < n; i++)
    if (stride[i] < 1) return LOOM_ERROR(INVALID_ARGUMENT, "col2im: spatial axis %d has stride %lld", i, (long long)stride[i]);
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  static const char *const fn[LOOM_TP_MAX_SPATIAL] = {"f0", "f1", "f2", "f3", "f4", "f5"};
  static const char *const an[LOOM_TP_MAX_SPATIAL] = {"a0", "a1", "a2", "a3", "a4", "a5"};
  static const char *const tn[LOOM_TP_MAX_SPATIAL] = {"t0", "t1", "t2", "t3", "t4", "t5"};
  static const char *const xn[LOOM_TP_MAX_SPATIAL] = {"x0", "x1", "x2", "x3", "x4", "x5"};
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *cd[3], *yd[2 + LOOM_TP_MAX_SPATIAL], *h[LOOM_TP_MAX_SPATIAL];
  cd[0] = loom_tpb_shape_sym(&b, "n");
  cd[1] = loom_tpb_shape_sym(&b, "m");
  cd[2] = loom_tpb_shape_sym(&b, "l");
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  yd[0] = cd[0];
  yd[1] = loom_tpb_shape_sym(&b, "o");
  const loom_tp_buffer *Bias = geo->bias ? loom_tpb_buffer(&b, "Bias", t, 1, &yd[1]) : NULL;
  for (int i = 0; i < n; i++) h[i] = loom_tpb_scalar(&b, hn[i]);
  for (int i = 0; i < n; i++) yd[2 + i] = loom_tpb_shape_sym(&b, fn[i]);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 2 + n, yd);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, yd[0], yd[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *i0 = loom_sym_floordiv(cx, q, yd[1]), *oc = loom_sym_floormod(cx, q, yd[1]);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL];
  yi[0] = loom_tpb_idx(&b, i0);
  yi[1] = loom_tpb_idx(&b, oc);
  for (int i = 0; i < n; i++) yi[2 + i] = loom_tpb_idx(&b, loom_tpb_for(&b, an[i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false));
  loom_tp_expr *oi = loom_tpb_idx(&b, oc);
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &oi) : loom_tpg_b_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  loom_tpb_end_n(&b, n);
  const loom_sym_expr *tv[LOOM_TP_MAX_SPATIAL], *row = C(cx, 0), *pos = C(cx, 0);
  for (int i = 0; i < n; i++) {
    tv[i] = loom_tpb_for(&b, tn[i], C(cx, geo->kernel[i]), LOOM_TP_LOOP_SERIAL, false);
    row = loom_sym_add(cx, loom_sym_mul(cx, row, C(cx, geo->kernel[i])), tv[i]);
  }
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *xv = loom_tpb_for(&b, xn[i], h[i], LOOM_TP_LOOP_SERIAL, false);
    pos = loom_sym_add(cx, loom_sym_mul(cx, pos, h[i]), xv);
    yi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, xv, C(cx, stride[i])), loom_sym_mul(cx, tv[i], C(cx, geo->dilation[i]))));
  }
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, oc, C(cx, taps(geo))), row)),
                         loom_tpb_idx(&b, pos)};
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), loom_tpb_load(&b, col, ci)));
  return loom_tpb_finish(&b, result);
}

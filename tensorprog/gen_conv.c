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
#include <math.h>

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
  int64_t T = geo->tap_stride; /* the tap form: one tap's weights among T */
  if (T > 0 && (geo->n != 1 || K != 1)) return LOOM_ERROR(INVALID_ARGUMENT, "conv_gemm: the tap form takes a 1-D kernel of 1");
  wd[0] = loom_tpb_shape_sym(&b, "o");
  wd[1] = loom_sym_mul(cx, cg, C(cx, T > 0 ? T : K));
  const loom_tp_buffer *W = loom_tpb_buffer(&b, "W", t, 2, wd);
  const loom_tp_buffer *Bias = geo->bias ? loom_tpb_buffer(&b, "Bias", t, 1, wd) : NULL;
  static const char *const ext[LOOM_TP_MAX_SPATIAL] = {"e0", "e1", "e2", "e3", "e4", "e5"};
  const loom_sym_expr *e[LOOM_TP_MAX_SPATIAL] = {0};
  for (int i = 1; i < geo->n; i++) e[i] = loom_tpb_scalar(&b, ext[i]);
  const loom_sym_expr *wt = T > 0 ? loom_tpb_scalar(&b, "wt") : NULL;
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
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &oi) : loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  const loom_sym_expr *r = loom_tpb_for(&b, "r", T > 0 ? cg : wd[1], LOOM_TP_LOOP_SERIAL, true);
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
  loom_tp_expr *wi[2] = {loom_tpb_idx(&b, oc), loom_tpb_idx(&b, T > 0 ? loom_sym_add(cx, loom_sym_mul(cx, r, C(cx, T)), wt) : r)};
  loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, W, wi), loom_tpb_load(&b, X, xi));
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), prod));
  return loom_tpb_finish(&b, result);
}

/* Text (2-D; y_i = (h_i - d_i*(k_i - 1) - 1) // s_i + 1 of the padded extents h_i):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], col: Buffer[(n, c*K, y0*y1), t]) {
 *     for q in 0..n*c { for t0 in 0..k0 { for t1 in 0..k1 { for j0 in 0..y0 { for j1 in 0..y1 {
 *       col[q // c, ((q % c)*k0 + t0)*k1 + t1, j0*y1 + j1] = X[q // c, q % c, j0*s0 + t0*d0, j1*s1 + t1*d1] } } } } } */
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
  cd[2] = loom_tp_conv_cols(cx, P);
  const loom_tp_buffer *col = loom_tpb_buffer(&b, "col", t, 3, cd);
  /* one loop over the (n, c) planes: a batch of one still has work for every thread */
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *i0 = loom_sym_floordiv(cx, q, xd[1]), *c0 = loom_sym_floormod(cx, q, xd[1]);
  const loom_sym_expr *row = c0, *tv[LOOM_TP_MAX_SPATIAL], *jv[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) {
    tv[i] = loom_tpb_for(&b, tn[i], C(cx, geo->kernel[i]), LOOM_TP_LOOP_SERIAL, false);
    row = loom_sym_add(cx, loom_sym_mul(cx, row, C(cx, geo->kernel[i])), tv[i]);
  }
  const loom_sym_expr *p = C(cx, 0);
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL];
  xi[0] = loom_tpb_idx(&b, i0);
  xi[1] = loom_tpb_idx(&b, c0);
  for (int i = 0; i < n; i++) {
    jv[i] = loom_tpb_for(&b, jn[i], y[i], LOOM_TP_LOOP_SERIAL, false);
    p = loom_sym_add(cx, loom_sym_mul(cx, p, y[i]), jv[i]);
    xi[2 + i] = loom_tpb_idx(&b, loom_sym_add(cx, loom_sym_mul(cx, jv[i], C(cx, stride[i])),
                                              loom_sym_mul(cx, tv[i], C(cx, geo->dilation[i]))));
  }
  loom_tp_expr *ci[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, row), loom_tpb_idx(&b, p)};
  loom_tpb_store(&b, col, ci, loom_tpb_load(&b, X, xi));
  loom_tpb_end_n(&b, n);
  /* the columns past P, up to a whole panel: zeros (their products are cropped away) */
  const loom_sym_expr *z = loom_tpb_for(&b, "z", loom_sym_sub(cx, cd[2], P), LOOM_TP_LOOP_SERIAL, false);
  ci[2] = loom_tpb_idx(&b, loom_sym_add(cx, P, z));
  loom_tpb_store(&b, col, ci, loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  return loom_tpb_finish(&b, result);
}

const loom_sym_expr *loom_tp_conv_cols(loom_sym_ctx *cx, const loom_sym_expr *p) {
  return loom_sym_mul(cx, loom_sym_floordiv(cx, loom_sym_add(cx, p, C(cx, LOOM_TP_CONV_COLS - 1)), C(cx, LOOM_TP_CONV_COLS)),
                      C(cx, LOOM_TP_CONV_COLS));
}

/* Text (2-D; e1 the grid's row pitch, a scalar parameter):
 *   prim @name(Yf: Buffer[(n, o, p), t], e1: i64, Y: Buffer[(n, o, y0, y1), t]) {
 *     for i0 in 0..n { for i1 in 0..o { for j0 in 0..y0 { for j1 in 0..y1 { Y[i0, i1, j0, j1] = Yf[i0, i1, j0*e1 + j1] } } } } }
 * (a plain nest over Y, so that the fuse pass can inline it into an elementwise consumer). */
loom_status loom_tp_gen_conv_crop(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, loom_tp_func **result) {
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "conv_crop: %d spatial axes", n);
  static const char *const en[LOOM_TP_MAX_SPATIAL] = {"e0", "e1", "e2", "e3", "e4", "e5"};
  static const char *const yn[LOOM_TP_MAX_SPATIAL] = {"y0", "y1", "y2", "y3", "y4", "y5"};
  static const char *const jn[LOOM_TP_MAX_SPATIAL] = {"j0", "j1", "j2", "j3", "j4", "j5"};
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *fd[3], *yd[2 + LOOM_TP_MAX_SPATIAL], *e[LOOM_TP_MAX_SPATIAL] = {0};
  fd[0] = yd[0] = loom_tpb_shape_sym(&b, "n");
  fd[1] = yd[1] = loom_tpb_shape_sym(&b, "o");
  fd[2] = loom_tpb_shape_sym(&b, "p");
  const loom_tp_buffer *Yf = loom_tpb_buffer(&b, "Yf", t, 3, fd);
  for (int i = 1; i < n; i++) e[i] = loom_tpb_scalar(&b, en[i]);
  for (int i = 0; i < n; i++) yd[2 + i] = loom_tpb_shape_sym(&b, yn[i]);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 2 + n, yd);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL];
  yi[0] = loom_tpb_idx(&b, loom_tpb_for(&b, "i0", yd[0], LOOM_TP_LOOP_SERIAL, false));
  yi[1] = loom_tpb_idx(&b, loom_tpb_for(&b, "i1", yd[1], LOOM_TP_LOOP_SERIAL, false));
  const loom_sym_expr *flat = C(cx, 0);
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *j = loom_tpb_for(&b, jn[i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
    yi[2 + i] = loom_tpb_idx(&b, j);
    flat = i ? loom_sym_add(cx, loom_sym_mul(cx, flat, e[i]), j) : j;
  }
  loom_tp_expr *fi[3] = {loom_tp_expr_copy(a, yi[0]), loom_tp_expr_copy(a, yi[1]), loom_tpb_idx(&b, flat)};
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, Yf, fi));
  return loom_tpb_finish(&b, result);
}

enum { POOL_LANES = 8 };
/* The chunk widths of pool_chunks, widest first (the last POOL_LANES): a row takes the widest it
 * holds, whose 2 to 8 vectors of 8 (1 to 4 of 16) sum independently; one vector waits on each tap's
 * add (latency-bound: 3-4 cycles a tap where the loads and multiplies would take 1). 64 only where
 * the taps read unit-stride rows of a depthwise or a fused pool (rows_program; lane mode's strided
 * loads stop at 64 lanes of source): with AVX-512, 16 lanes were one chain of 9 dependent FMAs
 * per 3 x 3 output vector (depthwise 96 ch at 112², Zen 5: the FMA chain was most of the kernel's
 * samples). */
enum { POOL_TIERS = 4 };
static const int64_t pool_tier[POOL_TIERS] = {64, 32, 16, POOL_LANES};

/* The chunks of `lanes` (the last moved back to end at the row's end) of loom_tpg_row_copy. */
/* The positions chunks of `lanes` compute over a row of `extent` (the last moved back): lanes * ceil(extent / lanes). */
static const loom_sym_expr *chunked(loom_sym_ctx *cx, const loom_sym_expr *extent, int64_t lanes) {
  return loom_sym_mul(cx, loom_sym_floordiv(cx, loom_sym_add(cx, extent, C(cx, lanes - 1)), C(cx, lanes)), C(cx, lanes));
}

static void row_chunks(loom_tpb *b, const loom_tp_buffer *Y, loom_tp_expr **yi, const loom_sym_expr *yoff, const loom_tp_buffer *X,
                       loom_tp_expr **xi, int64_t xstride, const loom_sym_expr *xoff, loom_dtype t, double fill,
                       const loom_sym_expr *extent, const char *o, const char *i, int64_t lanes) {
  loom_sym_ctx *cx = b->cx;
  const loom_sym_expr *L = C(cx, lanes);
  int ly = Y->ndim - 1, lx = X ? X->ndim - 1 : 0;
  const loom_sym_expr *zo = loom_tpb_for(b, o, loom_sym_floordiv(cx, loom_sym_add(cx, extent, C(cx, lanes - 1)), L),
                                         LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *zi = loom_tpb_for(b, i, L, LOOM_TP_LOOP_VECTORIZE, false);
  const loom_sym_expr *u = loom_sym_add(cx, loom_sym_min(cx, loom_sym_mul(cx, zo, L), loom_sym_sub(cx, extent, L)), zi);
  yi[ly] = loom_tpb_idx(b, loom_sym_add(cx, yoff, u));
  if (X) xi[lx] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, u, C(cx, xstride)), xoff));
  loom_tpb_store(b, Y, yi, X ? loom_tpb_load(b, X, xi) : loom_tp_const_f(b->a, t, fill));
  loom_tpb_end_n(b, 2);
}

void loom_tpg_row_copy(loom_tpb *b, const loom_tp_buffer *Y, loom_tp_expr **yi, const loom_sym_expr *yoff, const loom_tp_buffer *X,
                       loom_tp_expr **xi, int64_t xstride, const loom_sym_expr *xoff, loom_dtype t, double fill,
                       const loom_sym_expr *extent, const char *tag) {
  loom_sym_ctx *cx = b->cx;
  char o[16], i[16], sn[16];
  snprintf(o, sizeof o, "%so", tag);
  snprintf(i, sizeof i, "%si", tag);
  snprintf(sn, sizeof sn, "%ss", tag);
  int ly = Y->ndim - 1, lx = X ? X->ndim - 1 : 0;
  /* a copy computing on the way (a SiLU) wants independent chunks in flight: 32 lanes where they
   * compute no more positions than chunks of 16 would (a row of 56, not 40; unit stride), 16, then
   * 8 and 4 (a strided one's short rows element by element were slow, LLVM's masked vectors of a
   * strided load being gathers; a unit one's too: the padding of a 14 x 14 plane, rows of 14 as 8
   * vector lanes and 6 scalar ones, took 4.5 cycles an element); a fill, chunks of 8 */
  static const int64_t unit[] = {32, 16, 8, 4}, strided[] = {16, 8, 4}, fills[] = {POOL_LANES};
  const int64_t *tier = !X ? fills : xstride > 1 ? strided : unit;
  int ntier = !X ? 1 : xstride > 1 ? 3 : 4;
  for (int k = 0; k < ntier; k++) {
    loom_tp_expr *holds = loom_tpb_cmp(b, LOOM_TP_OP_GE, extent, C(cx, tier[k]));
    if (tier[k] == 32)
      holds = loom_tp_op2(b->a, LOOM_TP_OP_AND, holds, loom_tpb_cmp(b, LOOM_TP_OP_LE, chunked(cx, extent, 32), chunked(cx, extent, 16)));
    loom_tpb_if(b, holds);
    row_chunks(b, Y, yi, yoff, X, xi, xstride, xoff, t, fill, extent, o, i, tier[k]);
    loom_tpb_else(b);
  }
  const loom_sym_expr *zs = loom_tpb_for(b, sn, extent, LOOM_TP_LOOP_SERIAL, false);
  yi[ly] = loom_tpb_idx(b, loom_sym_add(cx, yoff, zs));
  if (X) xi[lx] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, zs, C(cx, xstride)), xoff));
  loom_tpb_store(b, Y, yi, X ? loom_tpb_load(b, X, xi) : loom_tp_const_f(b->a, t, fill));
  loom_tpb_end_n(b, 1 + ntier);
}

/* Text (2-D; `fill` 0.0 shown): the rows inside the input copy it between borders of fill, the others
 * are filled; the row copies and fills as loom_tpg_row_copy writes them:
 *   prim @name(X: Buffer[(n, c, h0, h1), t], Y: Buffer[(n, c, h0 + lo0 + hi0, h1 + lo1 + hi1), t]) {
 *     for q in 0..n*c { for r0 in 0..h0 + lo0 + hi0 {
 *       if r0 >= lo0 && r0 - lo0 < h0 {
 *         for z0 in 0..lo1 { Y[q // c, q % c, r0, z0] = 0.0 }
 *         (loom_tpg_row_copy of X[q // c, q % c, r0 - lo0, ..] to Y[q // c, q % c, r0, lo1 + ..])
 *         for z2 in 0..hi1 { Y[q // c, q % c, r0, lo1 + h1 + z2] = 0.0 }
 *       } else { (loom_tpg_row_copy filling Y[q // c, q % c, r0, ..]) } } }
 * (the loops over pads of 0 left out). One loop over the (n, c) planes, so that a batch of one
 * still has work for every thread. */
loom_status loom_tp_gen_conv_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, const int64_t *lo,
                                 const int64_t *hi, double fill, int64_t flat_extra, int64_t share, loom_tp_func **result) {
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "conv_pad: %d spatial axes", n);
  for (int i = 0; i < n; i++)
    if (lo[i] < 0 || hi[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "conv_pad: spatial axis %d pads %lld / %lld", i, (long long)lo[i], (long long)hi[i]);
  if (share < 0 || share > lo[n - 1] || share > hi[n - 1] || (share && (flat_extra < 0 || n < 2)))
    return LOOM_ERROR(INVALID_ARGUMENT, "conv_pad: %lld shared pads of %lld / %lld (flat rows only)", (long long)share,
                      (long long)lo[n - 1], (long long)hi[n - 1]);
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  static const char *const rn[LOOM_TP_MAX_SPATIAL] = {"r0", "r1", "r2", "r3", "r4", "r5"};
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *yd[2 + LOOM_TP_MAX_SPATIAL];
  xd[0] = yd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = yd[1] = loom_tpb_shape_sym(&b, "c");
  for (int i = 0; i < n; i++) {
    xd[2 + i] = loom_tpb_shape_sym(&b, hn[i]);
    yd[2 + i] = loom_sym_add(cx, xd[2 + i], C(cx, lo[i] + hi[i] - (i == n - 1 ? share : 0)));
  }
  /* flat: Y (n, c, the padded plane's elements + flat_extra zeros), rows at their flat offsets; the
   * last `share` zeros of a row's right padding are the next row's left padding */
  bool flat = flat_extra >= 0;
  const loom_sym_expr *plane = C(cx, 1), *fd[3];
  for (int i = 0; i < n; i++) plane = loom_sym_mul(cx, plane, yd[2 + i]);
  fd[0] = yd[0];
  fd[1] = yd[1];
  fd[2] = loom_sym_add(cx, plane, C(cx, flat ? flat_extra : 0));
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd), *Y = loom_tpb_buffer(&b, "Y", t, flat ? 3 : 2 + n, flat ? fd : yd);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL], *xi[2 + LOOM_TP_MAX_SPATIAL], *inside = NULL;
  yi[0] = xi[0] = loom_tpb_idx(&b, loom_sym_floordiv(cx, q, xd[1]));
  yi[1] = xi[1] = loom_tpb_idx(&b, loom_sym_floormod(cx, q, xd[1]));
  const loom_sym_expr *base = C(cx, 0); /* flat: the row's offset in its plane */
  for (int i = 0; i + 1 < n; i++) {
    const loom_sym_expr *r = loom_tpb_for(&b, rn[i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
    yi[2 + i] = loom_tpb_idx(&b, r);
    base = loom_sym_add(cx, loom_sym_mul(cx, base, yd[2 + i]), r);
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
  int last = 2 + n - 1, ly = flat ? 2 : last;
  /* the row's first element: flat, its offset in the plane; else index 0 of the last axis */
  const loom_sym_expr *row0 = flat ? loom_sym_mul(cx, base, yd[last]) : C(cx, 0);
  if (flat) yi[2] = NULL;
  if (inside) loom_tpb_if(&b, inside);
  if (lo[n - 1] > 0) {
    yi[ly] = loom_tpb_idx(&b, loom_sym_add(cx, row0, loom_tpb_for(&b, "z0", C(cx, lo[n - 1]), LOOM_TP_LOOP_SERIAL, false)));
    loom_tpb_store(&b, Y, yi, loom_tp_const_f(a, t, fill));
    loom_tpb_end(&b);
  }
  loom_tpg_row_copy(&b, Y, yi, loom_sym_add(cx, row0, C(cx, lo[n - 1])), X, xi, 1, C(cx, 0), t, fill, xd[last], "z1");
  if (hi[n - 1] - share > 0) {
    const loom_sym_expr *z2 = loom_tpb_for(&b, "z2", C(cx, hi[n - 1] - share), LOOM_TP_LOOP_SERIAL, false);
    yi[ly] = loom_tpb_idx(&b, loom_sym_add(cx, row0, loom_sym_add(cx, loom_sym_add(cx, z2, xd[last]), C(cx, lo[n - 1]))));
    loom_tpb_store(&b, Y, yi, loom_tp_const_f(a, t, fill));
    loom_tpb_end(&b);
  }
  if (inside) {
    loom_tpb_else(&b);
    loom_tpg_row_copy(&b, Y, yi, row0, NULL, NULL, 1, C(cx, 0), t, fill, yd[last], "z3");
    loom_tpb_end(&b);
  }
  if (flat && flat_extra > 0) { /* the zeros after the plane, where the GEMM's last columns read */
    loom_tpb_end_n(&b, n - 1);
    yi[2] = loom_tpb_idx(&b, loom_sym_add(cx, plane, loom_tpb_for(&b, "z4", C(cx, flat_extra), LOOM_TP_LOOP_SERIAL, false)));
    loom_tpb_store(&b, Y, yi, loom_tp_const_f(a, t, fill));
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
  loom_tpb_store(&b, col, ci, loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
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
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &oi) : loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
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

/* Pooling over an input padded beforehand (conv_pad: -inf for max, 0 for average). Output rows are
 * cut into chunks of POOL_LANES positions whose accumulators are a Local lane mode keeps in one
 * register (the last chunk moved back to end at the row's end: its positions are computed twice, each
 * time the same value), so a short row (28 or 14 wide) still runs as vectors; rows shorter than a chunk
 * take every tap's unit-stride pass over the row (2-D; s, k, d constants):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], Y: Buffer[(n, c, y0, y1), t]) {
 *     for q in 0..n*c { for j0 in 0..y0 {
 *       if y1 >= 8 {
 *         for uo in 0..(y1 + 7) // 8 {
 *           alloc acc: Local[(8,), t]
 *           for ui0 in 0..8 vectorize { acc[ui0] = -inf | 0.0 }
 *           for t0 in 0..k0 { for t1 in 0..k1 { for ui1 in 0..8 vectorize {
 *             acc[ui1] = max(acc[ui1], X[q // c, q % c, j0*s0 + t0*d0, (min(8*uo, y1 - 8) + ui1)*s1 + t1*d1]) | acc[ui1] + X[..] } } }
 *           for ui2 in 0..8 vectorize { Y[q // c, q % c, j0, min(8*uo, y1 - 8) + ui2] = acc[ui2] [/ count] } }
 *       } else {
 *         for u0 in 0..y1 { Y[.., j0, u0] = -inf | 0.0 }
 *         for v0 in 0..k0 { for v1 in 0..k1 { for u1 in 0..y1 { Y[.., j0, u1] = max(Y[.., j0, u1], X[..]) | .. } } }
 *         [for u2 in 0..y1 { Y[.., j0, u2] = Y[.., j0, u2] / count }] } } }
 * count: K when the padding counts (AVG_PAD), else max(1, the product over axes of the taps inside
 * the input, min(j*s - lo + k, h) - max(j*s - lo, 0) with h the extent before padding; dilation 1):
 * a window with no tap inside sums padding zeros only, and 0 / 1 is the reference's 0. */
typedef struct pool_b {
  loom_tpb b;
  const loom_tp_window *w;
  loom_tp_pool_kind kind;
  int n;
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *yd[2 + LOOM_TP_MAX_SPATIAL], *jv[LOOM_TP_MAX_SPATIAL];
  const loom_tp_buffer *X, *Y;
  loom_tp_expr *lead[2]; /* the (n, c) indices */
  loom_tp_expr *xlead[2]; /* X's: lead, or (0, 0) for depthwise_fused's Local of one plane */
  bool dw;               /* a depthwise convolution: the sum of the taps weighted by W[c, 0, tap..] (+ Bias[c]) */
  const loom_tp_buffer *W, *Bias;
  const loom_tp_buffer *Xf; /* X viewed (n, c, h0*h1): the plane's grid for rows shorter than a chunk (NULL: none) */
  /* depthwise over phase planes (loom_tp_dw_phases): X is (n, c, s*s, f), conv_phases' planes of the
   * padded input, e1 their row pitch (a scalar parameter); NULL: X is the padded input */
  const loom_sym_expr *e1;
  /* depthwise_fused: Xin (n, c, h0, h1) the unpadded input, X a Local (1, 1, s*s, f) of one plane's
   * phase planes (geometry g), e1 their row pitch (an expression) */
  bool fused;
  const loom_tp_buffer *Xin;
  loom_tp_conv_packed g;
  /* fused and flat: the Local holds the padded plane alone (1, 1, 1, f), e1 its row pitch, and the
   * taps read it at the window's stride (pooling: the copy of a plane cheaper than its phase split) */
  bool flat;
} pool_b;

static bool pool_avg(const pool_b *p) {
  return !p->dw && (p->kind == LOOM_TP_POOL_AVG || p->kind == LOOM_TP_POOL_AVG_PAD);
}

/* acc's update by the tap at taps tv whose value is x. */
static loom_tp_expr *pool_step(pool_b *p, loom_tp_expr *acc, loom_tp_expr *x, const loom_sym_expr *const *tv) {
  loom_arena *a = p->b.a;
  if (!p->dw) return loom_tp_op2(a, p->kind == LOOM_TP_POOL_MAX ? LOOM_TP_OP_MAX : LOOM_TP_OP_ADD, acc, x);
  loom_tp_expr *wi[2 + LOOM_TP_MAX_SPATIAL] = {loom_tp_expr_copy(a, p->lead[1]), loom_tpb_idx(&p->b, C(p->b.cx, 0))};
  for (int i = 0; i < p->n; i++) wi[2 + i] = loom_tpb_idx(&p->b, tv[i]);
  loom_tp_expr *w = loom_tpb_load(&p->b, p->W, wi);
  /* f32 / f64: one fused multiply-add per tap (a multiply and an add, which LLVM does not contract
   * outside reductions, were twice the vector operations: 3x3 144ch 56x56, Zen 3, loom run min of
   * 50, three alternations: 232-266 -> 228-234 us, the plane's traffic bounding the rest) */
  if (x->dtype == LOOM_DTYPE_F32 || x->dtype == LOOM_DTYPE_F64) return loom_tp_op3(a, LOOM_TP_OP_FMA, w, x, acc);
  return loom_tp_op2(a, LOOM_TP_OP_ADD, acc, loom_tp_op2(a, LOOM_TP_OP_MUL, w, x));
}

/* The divisor of an average at last-axis position u (the other axes at jv). */
static loom_tp_expr *pool_taps_k(pool_b *p, loom_dtype t);

static loom_tp_expr *pool_count(pool_b *p, const loom_sym_expr *u, loom_dtype t) {
  loom_sym_ctx *cx = p->b.cx;
  bool padded = false;
  for (int i = 0; i < p->n; i++) padded |= p->w->pad_lo[i] > 0 || p->w->pad_hi[i] > 0;
  if (p->kind == LOOM_TP_POOL_AVG_PAD || !padded) return pool_taps_k(p, t); /* without padding every window is whole */
  const loom_sym_expr *taps_in = C(cx, 1);
  for (int i = 0; i < p->n; i++) {
    const loom_sym_expr *j = i + 1 < p->n ? p->jv[i] : u;
    const loom_sym_expr *start = loom_sym_sub(cx, loom_sym_mul(cx, j, C(cx, p->w->stride[i])), C(cx, p->w->pad_lo[i]));
    const loom_sym_expr *h = loom_sym_sub(cx, p->xd[2 + i], C(cx, p->w->pad_lo[i] + p->w->pad_hi[i]));
    const loom_sym_expr *ci = loom_sym_sub(cx, loom_sym_min(cx, loom_sym_add(cx, start, C(cx, p->w->kernel[i])), h),
                                           loom_sym_max(cx, start, C(cx, 0)));
    taps_in = loom_sym_mul(cx, taps_in, loom_sym_max(cx, ci, C(cx, 0)));
  }
  return loom_tp_cast(p->b.a, t, loom_tpb_idx(&p->b, loom_sym_max(cx, taps_in, C(cx, 1))));
}

/* K, the taps of a window. */
static loom_tp_expr *pool_taps_k(pool_b *p, loom_dtype t) {
  int64_t K = 1;
  for (int i = 0; i < p->n; i++) K *= p->w->kernel[i];
  return loom_tp_const_f(p->b.a, t, (double)K);
}

/* The test that the windows of the chunk at last-axis positions base .. base + lanes - 1 (the
 * other axes at jv) lie inside the input, or NULL when every window does (no padding). */
static loom_tp_expr *pool_interior(pool_b *p, const loom_sym_expr *base, int64_t lanes) {
  loom_sym_ctx *cx = p->b.cx;
  loom_tp_expr *all = NULL;
  bool padded = false;
  for (int i = 0; i < p->n; i++) padded |= p->w->pad_lo[i] > 0 || p->w->pad_hi[i] > 0;
  if (!padded) return NULL;
  for (int i = 0; i < p->n; i++) {
    bool lastax = i + 1 == p->n;
    const loom_sym_expr *first = lastax ? base : p->jv[i], *end = lastax ? loom_sym_add(cx, base, C(cx, lanes - 1)) : p->jv[i];
    const loom_sym_expr *lo = loom_sym_sub(cx, loom_sym_mul(cx, first, C(cx, p->w->stride[i])), C(cx, p->w->pad_lo[i]));
    const loom_sym_expr *hi = loom_sym_add(cx, loom_sym_sub(cx, loom_sym_mul(cx, end, C(cx, p->w->stride[i])), C(cx, p->w->pad_lo[i])),
                                           C(cx, p->w->kernel[i]));
    const loom_sym_expr *h = loom_sym_sub(cx, p->xd[2 + i], C(cx, p->w->pad_lo[i] + p->w->pad_hi[i]));
    loom_tp_expr *c = loom_tp_op2(p->b.a, LOOM_TP_OP_AND, loom_tp_op2(p->b.a, LOOM_TP_OP_GE, loom_tpb_idx(&p->b, lo), loom_tpb_idx(&p->b, C(cx, 0))),
                                  loom_tp_op2(p->b.a, LOOM_TP_OP_LE, loom_tpb_idx(&p->b, hi), loom_tpb_idx(&p->b, h)));
    all = all ? loom_tp_op2(p->b.a, LOOM_TP_OP_AND, all, c) : c;
  }
  return all;
}

/* Phase planes (p->e1): tap tv's plane (t0 % s)*s + t1 % s and its flat offset there from the
 * output position (j, 0) (row j's first element): (j + t0 // s)*e1 + t1 // s. */
static const loom_sym_expr *phase_plane(pool_b *p, const loom_sym_expr *const *tv) {
  loom_sym_ctx *cx = p->b.cx;
  const loom_sym_expr *s = C(cx, p->w->stride[0]);
  return loom_sym_add(cx, loom_sym_mul(cx, loom_sym_floormod(cx, tv[0], s), s), loom_sym_floormod(cx, tv[1], s));
}

static const loom_sym_expr *phase_offset(pool_b *p, const loom_sym_expr *const *tv, const loom_sym_expr *j) {
  loom_sym_ctx *cx = p->b.cx;
  const loom_sym_expr *s = C(cx, p->w->stride[0]);
  return loom_sym_add(cx, loom_sym_mul(cx, loom_sym_add(cx, j, loom_sym_floordiv(cx, tv[0], s)), p->e1), loom_sym_floordiv(cx, tv[1], s));
}

/* X's indices at taps tv and last-axis position u. */
static void pool_taps(pool_b *p, const loom_sym_expr *const *tv, const loom_sym_expr *u, loom_tp_expr **xi) {
  loom_sym_ctx *cx = p->b.cx;
  xi[0] = p->xlead[0];
  xi[1] = p->xlead[1];
  if (p->flat) { /* the padded plane, flat: row j*s0 + t0*d0, column u*s1 + t1*d1 */
    const loom_sym_expr *r = loom_sym_add(cx, loom_sym_mul(cx, p->jv[0], C(cx, p->w->stride[0])), loom_sym_mul(cx, tv[0], C(cx, p->w->dilation[0])));
    const loom_sym_expr *col = loom_sym_add(cx, loom_sym_mul(cx, u, C(cx, p->w->stride[1])), loom_sym_mul(cx, tv[1], C(cx, p->w->dilation[1])));
    xi[2] = loom_tpb_idx(&p->b, C(cx, 0));
    xi[3] = loom_tpb_idx(&p->b, loom_sym_add(cx, loom_sym_mul(cx, r, p->e1), col));
    return;
  }
  if (p->e1) { /* unit stride along u in the tap's phase plane */
    xi[2] = loom_tpb_idx(&p->b, phase_plane(p, tv));
    xi[3] = loom_tpb_idx(&p->b, loom_sym_add(cx, phase_offset(p, tv, p->jv[0]), u));
    return;
  }
  for (int i = 0; i < p->n; i++) {
    const loom_sym_expr *j = i + 1 < p->n ? p->jv[i] : u;
    xi[2 + i] = loom_tpb_idx(&p->b, loom_sym_add(cx, loom_sym_mul(cx, j, C(cx, p->w->stride[i])),
                                                  loom_sym_mul(cx, tv[i], C(cx, p->w->dilation[i]))));
  }
}

static loom_tp_expr *pool_init(pool_b *p, loom_dtype t) {
  if (p->dw && p->Bias) {
    loom_tp_expr *ci = loom_tp_expr_copy(p->b.a, p->lead[1]);
    return loom_tpb_load(&p->b, p->Bias, &ci);
  }
  return !p->dw && p->kind == LOOM_TP_POOL_MAX ? loom_tp_const_f(p->b.a, t, -INFINITY)
                                                : loom_tpg_reduce_init(&p->b, LOOM_TP_REDUCE_SUM, t);
}

/* Chunks of `lanes` positions of the last axis (rows at least that long). */
static void pool_chunks(pool_b *p, loom_dtype t, int64_t lanes) {
  static const char *const tn[LOOM_TP_MAX_SPATIAL] = {"t0", "t1", "t2", "t3", "t4", "t5"};
  loom_tpb *b = &p->b;
  loom_sym_ctx *cx = b->cx;
  loom_arena *a = b->a;
  const loom_sym_expr *yl = p->yd[1 + p->n], *L = C(cx, lanes);
  const loom_sym_expr *uo = loom_tpb_for(b, "uo", loom_sym_floordiv(cx, loom_sym_add(cx, yl, C(cx, lanes - 1)), L),
                                         LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *base = loom_sym_min(cx, loom_sym_mul(cx, uo, L), loom_sym_sub(cx, yl, L));
  const loom_tp_buffer *acc = loom_tpb_alloc(b, "acc", t, 1, &L, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *ai = loom_tpb_idx(b, loom_tpb_for(b, "ui0", L, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tpb_store(b, acc, &ai, pool_init(p, t));
  loom_tpb_end(b);
  const loom_sym_expr *tv[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < p->n; i++) tv[i] = loom_tpb_for(b, tn[i], C(cx, p->w->kernel[i]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *ui = loom_tpb_for(b, "ui1", L, LOOM_TP_LOOP_VECTORIZE, false);
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL];
  pool_taps(p, tv, loom_sym_add(cx, base, ui), xi);
  ai = loom_tpb_idx(b, ui);
  loom_tpb_store(b, acc, &ai, pool_step(p, loom_tpb_load(b, acc, &ai), loom_tpb_load(b, p->X, xi), tv));
  loom_tpb_end_n(b, p->n + 1);
  const loom_sym_expr *u2 = loom_tpb_for(b, "ui2", L, LOOM_TP_LOOP_VECTORIZE, false), *pos = loom_sym_add(cx, base, u2);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL] = {p->lead[0], p->lead[1]};
  for (int i = 0; i + 1 < p->n; i++) yi[2 + i] = loom_tpb_idx(b, p->jv[i]);
  yi[1 + p->n] = loom_tpb_idx(b, pos);
  ai = loom_tpb_idx(b, u2);
  loom_tp_expr *v = loom_tpb_load(b, acc, &ai);
  loom_tp_expr *inner = pool_avg(p) && p->kind == LOOM_TP_POOL_AVG ? pool_interior(p, base, lanes) : NULL;
  if (inner) { /* every window of the chunk inside the input: the count is K */
    loom_tpb_end(b);
    loom_tpb_if(b, inner);
    u2 = loom_tpb_for(b, "ui2", L, LOOM_TP_LOOP_VECTORIZE, false);
    yi[1 + p->n] = loom_tpb_idx(b, loom_sym_add(cx, base, u2));
    ai = loom_tpb_idx(b, u2);
    loom_tpb_store(b, p->Y, yi, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(b, acc, &ai), pool_taps_k(p, t)));
    loom_tpb_end(b);
    loom_tpb_else(b);
    u2 = loom_tpb_for(b, "ui3", L, LOOM_TP_LOOP_VECTORIZE, false);
    pos = loom_sym_add(cx, base, u2);
    yi[1 + p->n] = loom_tpb_idx(b, pos);
    ai = loom_tpb_idx(b, u2);
    v = loom_tpb_load(b, acc, &ai);
    loom_tpb_store(b, p->Y, yi, loom_tp_op2(a, LOOM_TP_OP_DIV, v, pool_count(p, pos, t)));
    loom_tpb_end_n(b, 3);
    return;
  }
  if (pool_avg(p)) v = loom_tp_op2(a, LOOM_TP_OP_DIV, v, pool_count(p, pos, t));
  loom_tpb_store(b, p->Y, yi, v);
  loom_tpb_end_n(b, 2);
}

/* Every tap's pass over a whole row (rows shorter than a chunk), the sums in a Local row of
 * POOL_LANES, then one store of each output element: Y is only written, so an epilogue can
 * take its stores (loom_tp_fuse_epilogue's store form). */
static void pool_row(pool_b *p, loom_dtype t) {
  static const char *const vn[LOOM_TP_MAX_SPATIAL] = {"v0", "v1", "v2", "v3", "v4", "v5"};
  loom_tpb *b = &p->b;
  loom_arena *a = b->a;
  const loom_sym_expr *yl = p->yd[1 + p->n], *L = C(b->cx, POOL_LANES);
  const loom_tp_buffer *acc = loom_tpb_alloc(b, "accr", t, 1, &L, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL] = {p->lead[0], p->lead[1]}, *xi[2 + LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i + 1 < p->n; i++) yi[2 + i] = loom_tpb_idx(b, p->jv[i]);
  loom_tp_expr *ai = loom_tpb_idx(b, loom_tpb_for(b, "u0", yl, LOOM_TP_LOOP_SERIAL, false));
  loom_tpb_store(b, acc, &ai, pool_init(p, t));
  loom_tpb_end(b);
  const loom_sym_expr *tv[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < p->n; i++) tv[i] = loom_tpb_for(b, vn[i], C(b->cx, p->w->kernel[i]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *u1 = loom_tpb_for(b, "u1", yl, LOOM_TP_LOOP_SERIAL, false);
  ai = loom_tpb_idx(b, u1);
  pool_taps(p, tv, u1, xi);
  loom_tpb_store(b, acc, &ai, pool_step(p, loom_tpb_load(b, acc, &ai), loom_tpb_load(b, p->X, xi), tv));
  loom_tpb_end_n(b, p->n + 1);
  const loom_sym_expr *u2 = loom_tpb_for(b, "u2", yl, LOOM_TP_LOOP_SERIAL, false);
  yi[1 + p->n] = loom_tpb_idx(b, u2);
  ai = loom_tpb_idx(b, u2);
  loom_tp_expr *v = loom_tpb_load(b, acc, &ai);
  if (pool_avg(p)) v = loom_tp_op2(a, LOOM_TP_OP_DIV, v, pool_count(p, u2, t));
  loom_tpb_store(b, p->Y, yi, v);
  loom_tpb_end(b);
}

/* The most grid positions of one plane the grid form keeps in its Local (floats). */
enum { POOL_GRID_MAX = 1024 };
/* The grid form's chunk when the grid has at least that many positions: four vectors of 8 whose
 * sums are independent chains (one chunk of 8 waits on each tap's add: latency-bound). */
enum { POOL_GRID_WIDE = 32 };
/* Unit-stride rows shorter than this take the grid form when the plane's grid fits POOL_GRID_MAX: a
 * row of 14 was two chunks of 8, each one chain of adds waiting on the last (latency-bound), where
 * the grid's chunks of 32 are four. Strided rows only below POOL_LANES: their grid reads every s-th
 * float and s - 1 of s positions of a row are junk (measured: rows of 10 and 13, 5 x 5 and 3 x 3
 * taps at stride 2, were slower as grids). */
enum { POOL_GRID_ROW = 32 };

bool loom_tp_rows_grid(const loom_tp_window *w, loom_tp_pool_kind kind, bool dw) {
  return w->n == 2 && w->stride[0] == w->stride[1] && (dw || kind == LOOM_TP_POOL_MAX || kind == LOOM_TP_POOL_AVG_PAD);
}

/* Rows shorter than a chunk, 2-D, equal strides s (loom_tp_rows_grid): the plane's output positions
 * computed on the grid of the padded input, position g = j0*h1 + u (u >= y1 junk), whose tap
 * (t0, t1) reads Xf at s*g + t0*d0*h1 + t1*d1: unit stride (or s) along g, so that a 7 x 7 output
 * (h1 = 9: 61 grid positions) runs as vectors of POOL_LANES instead of element by element:
 *   G = (y0 - 1)*h1 + y1
 *   alloc accg: Local[(POOL_GRID_MAX,)]
 *   for go in 0..(G + 7) // 8 { base = min(8*go, G - 8)
 *     acc[gi] = init; for taps { for gi vectorize { acc[gi] = step(acc[gi], Xf[.., s*(base + gi) + off]) } }
 *     for gi vectorize { accg[base + gi] = acc[gi] } }
 *   for j0 in 0..y0 { (loom_tpg_row_copy: Y[.., j0, u] = accg[j0*h1 + u], u < y1) }
 *   (AVG_PAD: for j0 in 0..y0 { for u in 0..y1 { Y[.., j0, u] = accg[j0*h1 + u] / K } })
 * Every read is inside the plane: the largest, at g = G - 1, is the last output's last tap. The guard
 * (rows_program) is 1 <= y1, 8 <= G <= POOL_GRID_MAX. Y is only stored (an epilogue takes those
 * stores; a chunk that overlaps the one before stores its elements again, the same values: Y's
 * storage is never one its call reads, graph/memplan.h). */
static void pool_grid(pool_b *p, loom_dtype t, const loom_sym_expr *G, int64_t lanes) {
  loom_tpb *b = &p->b;
  loom_sym_ctx *cx = b->cx;
  loom_arena *a = b->a;
  const loom_sym_expr *L = C(cx, lanes), *h1 = p->e1 ? p->e1 : p->xd[3], *gmax = C(cx, POOL_GRID_MAX);
  int64_t s = p->e1 && !p->flat ? 1 : p->w->stride[1];
  loom_tp_buffer *accg = loom_tpb_alloc(b, "accg", t, 1, &gmax, LOOM_TP_SCOPE_LOCAL);
  accg->uninit = true; /* positions 0 .. G - 1 written before the plane's outputs read them (a 4 KiB fill per plane was
                        * a fifth of a 576-channel 7 x 7 depthwise) */
  const loom_sym_expr *go = loom_tpb_for(b, "go", loom_sym_floordiv(cx, loom_sym_add(cx, G, C(cx, lanes - 1)), L),
                                         LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *base = loom_sym_min(cx, loom_sym_mul(cx, go, L), loom_sym_sub(cx, G, L));
  const loom_tp_buffer *acc = loom_tpb_alloc(b, "accq", t, 1, &L, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *ai = loom_tpb_idx(b, loom_tpb_for(b, "gi0", L, LOOM_TP_LOOP_VECTORIZE, false));
  loom_tpb_store(b, acc, &ai, pool_init(p, t));
  loom_tpb_end(b);
  const loom_sym_expr *tv[2];
  tv[0] = loom_tpb_for(b, "g0", C(cx, p->w->kernel[0]), LOOM_TP_LOOP_SERIAL, false);
  tv[1] = loom_tpb_for(b, "g1", C(cx, p->w->kernel[1]), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *gi = loom_tpb_for(b, "gi1", L, LOOM_TP_LOOP_VECTORIZE, false);
  const loom_sym_expr *off = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_mul(cx, tv[0], C(cx, p->w->dilation[0])), h1),
                                          loom_sym_mul(cx, tv[1], C(cx, p->w->dilation[1])));
  loom_tp_expr *xi[4] = {loom_tp_expr_copy(a, p->xlead[0]), loom_tp_expr_copy(a, p->xlead[1]),
                         loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, loom_sym_add(cx, base, gi), C(cx, s)), off))};
  if (p->flat) { /* the padded plane, flat (4-D: the Local) */
    xi[3] = xi[2];
    xi[2] = loom_tpb_idx(b, C(cx, 0));
  } else if (p->e1) { /* the tap's phase plane at grid position g plus its offset */
    xi[2] = loom_tpb_idx(b, phase_plane(p, tv));
    xi[3] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_add(cx, base, gi), phase_offset(p, tv, C(cx, 0))));
  }
  ai = loom_tpb_idx(b, gi);
  loom_tpb_store(b, acc, &ai, pool_step(p, loom_tpb_load(b, acc, &ai), loom_tpb_load(b, p->e1 ? p->X : p->Xf, xi), tv));
  loom_tpb_end_n(b, 3);
  const loom_sym_expr *g2 = loom_tpb_for(b, "gi2", L, LOOM_TP_LOOP_VECTORIZE, false);
  loom_tp_expr *gx = loom_tpb_idx(b, loom_sym_add(cx, base, g2));
  ai = loom_tpb_idx(b, g2);
  loom_tpb_store(b, accg, &gx, loom_tpb_load(b, acc, &ai));
  loom_tpb_end_n(b, 2);
  const loom_sym_expr *j0 = loom_tpb_for(b, "gj", p->yd[2], LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *yi[4] = {loom_tp_expr_copy(a, p->lead[0]), loom_tp_expr_copy(a, p->lead[1]), loom_tpb_idx(b, j0), NULL};
  if (!pool_avg(p)) { /* a row of the plane in chunks (loom_tpg_row_copy: a 7 x 7 plane's rows of 7 were scalars) */
    loom_tp_expr *gr[1] = {NULL};
    loom_tpg_row_copy(b, p->Y, yi, C(cx, 0), accg, gr, 1, loom_sym_mul(cx, j0, h1), t, 0.0, p->yd[3], "gu");
    loom_tpb_end(b);
    return;
  }
  const loom_sym_expr *u = loom_tpb_for(b, "gu", p->yd[3], LOOM_TP_LOOP_SERIAL, false);
  yi[3] = loom_tpb_idx(b, u);
  gx = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_mul(cx, j0, h1), u));
  /* AVG_PAD: K taps everywhere */
  loom_tpb_store(b, p->Y, yi, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(b, accg, &gx), pool_taps_k(p, t)));
  loom_tpb_end_n(b, 2);
}

/* depthwise_fused's planes per Local: runs of nc // DW_FUSED_RUNS planes (1 to DW_FUSED_PLANES), one
 * allocation each, which the threads take in turn (144 planes: 16 runs of 9; 384: 16 of 24; 32: 16 of 2). */
enum { DW_FUSED_PLANES = 64, DW_FUSED_RUNS = 16 };

/* The program of pool_rows / depthwise_rows: buffers, the plane and row loops, chunks or whole rows. */
static loom_status rows_program(pool_b *p, loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, bool bias,
                                loom_tp_func **result) {
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  static const char *const yn[LOOM_TP_MAX_SPATIAL] = {"y0", "y1", "y2", "y3", "y4", "y5"};
  static const char *const jn[LOOM_TP_MAX_SPATIAL] = {"j0", "j1", "j2", "j3", "j4", "j5"};
  int n = p->n;
  loom_tpb *b = &p->b;
  loom_tpb_init(b, a, cx, name);
  p->xd[0] = p->yd[0] = loom_tpb_shape_sym(b, "n");
  p->xd[1] = p->yd[1] = loom_tpb_shape_sym(b, "c");
  const loom_sym_expr *hd[4] = {p->xd[0], p->xd[1]}; /* depthwise_fused: Xin's extents */
  if (p->fused) { /* X (n, c, h0, h1); the Local's phase planes (1, 1, s*s, f) */
    hd[2] = loom_tpb_shape_sym(b, hn[0]);
    hd[3] = loom_tpb_shape_sym(b, hn[1]);
    p->Xin = loom_tpb_buffer(b, "X", t, 4, hd);
    p->xd[2] = C(cx, loom_tp_conv_phase_planes(&p->g));
    p->xd[3] = loom_tp_conv_phase_plane_size(cx, &p->g, hd + 2);
  } else if (p->e1) { /* (n, c, s*s, f): the phase planes */
    p->xd[2] = C(cx, p->w->stride[0] * p->w->stride[1]);
    p->xd[3] = loom_tpb_shape_sym(b, "f");
  } else {
    for (int i = 0; i < n; i++) p->xd[2 + i] = loom_tpb_shape_sym(b, hn[i]);
  }
  if (!p->fused) p->X = loom_tpb_buffer(b, "X", t, 2 + n, p->xd);
  if (p->dw) {
    const loom_sym_expr *wd[2 + LOOM_TP_MAX_SPATIAL] = {p->xd[1], C(cx, 1)};
    for (int i = 0; i < n; i++) wd[2 + i] = C(cx, p->w->kernel[i]);
    p->W = loom_tpb_buffer(b, "W", t, 2 + n, wd);
    if (bias) p->Bias = loom_tpb_buffer(b, "Bias", t, 1, &p->xd[1]);
  }
  if (p->fused) p->e1 = loom_tp_conv_phase_extent(cx, &p->g, 1, hd[3]);
  else if (p->e1) p->e1 = loom_tpb_scalar(b, "e1");
  else if (loom_tp_rows_grid(p->w, p->kind, p->dw)) {
    const loom_sym_expr *fd[3] = {p->xd[0], p->xd[1], loom_sym_mul(cx, p->xd[2], p->xd[3])};
    p->Xf = loom_tpb_buffer(b, "Xf", t, 3, fd);
  }
  for (int i = 0; i < n; i++) p->yd[2 + i] = loom_tpb_shape_sym(b, yn[i]);
  p->Y = loom_tpb_buffer(b, "Y", t, 2 + n, p->yd);
  const loom_sym_expr *nc = loom_sym_mul(cx, p->xd[0], p->xd[1]), *q;
  if (p->fused) { /* runs of R planes, one Local each: DW_FUSED_RUNS runs, each of 1 to DW_FUSED_PLANES planes */
    const loom_sym_expr *R = loom_sym_max(cx, C(cx, 1), loom_sym_min(cx, C(cx, DW_FUSED_PLANES), loom_sym_floordiv(cx, nc, C(cx, DW_FUSED_RUNS))));
    const loom_sym_expr *qo = loom_tpb_for(b, "qo", loom_sym_floordiv(cx, loom_sym_add(cx, nc, loom_sym_sub(cx, R, C(cx, 1))), R),
                                           LOOM_TP_LOOP_SERIAL, false);
    const loom_sym_expr *td[4] = {C(cx, 1), C(cx, 1), p->xd[2], p->xd[3]};
    loom_tp_buffer *T = loom_tpb_alloc(b, "xs", t, 4, td, LOOM_TP_SCOPE_LOCAL);
    if (T) T->uninit = true; /* every element written by the plane's phases before its taps read it */
    p->X = T;
    /* a constant extent and a guard: the fuse pass counts the input's reads (once per element: a
     * producer's sigmoid computed in the copy) only over loops whose extents no outer loop sets */
    const loom_sym_expr *qi = loom_tpb_for(b, "qi", R, LOOM_TP_LOOP_SERIAL, false);
    q = loom_sym_add(cx, loom_sym_mul(cx, qo, R), qi);
    loom_tpb_if(b, loom_tpb_cmp(b, LOOM_TP_OP_LT, q, nc));
  } else {
    q = loom_tpb_for(b, "q", nc, LOOM_TP_LOOP_SERIAL, false);
  }
  p->lead[0] = loom_tpb_idx(b, loom_sym_floordiv(cx, q, p->xd[1]));
  p->lead[1] = loom_tpb_idx(b, loom_sym_floormod(cx, q, p->xd[1]));
  p->xlead[0] = p->lead[0];
  p->xlead[1] = p->lead[1];
  if (p->fused) { /* the plane's phase planes into the Local */
    p->xlead[0] = loom_tpb_idx(b, C(cx, 0));
    p->xlead[1] = loom_tpb_idx(b, C(cx, 0));
    loom_tpg_conv_phase_plane(b, &p->g, p->Xin, p->X, hd, p->lead, p->xlead, t, !p->dw && p->kind == LOOM_TP_POOL_MAX ? -INFINITY : 0.0);
  }
  bool grid = p->Xf || p->e1;
  if (grid) { /* 1 <= y1 < POOL_GRID_ROW (unit stride: stride 1 or phase planes) or POOL_LANES: the grid form when the plane's grid has 8 to POOL_GRID_MAX positions */
    const loom_sym_expr *G = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_sub(cx, p->yd[2], C(cx, 1)), p->e1 ? p->e1 : p->xd[3]), p->yd[3]);
    int64_t row = p->w->stride[1] == 1 || (p->e1 && !p->flat) ? POOL_GRID_ROW : POOL_LANES;
    loom_tp_expr *c = loom_tp_op2(a, LOOM_TP_OP_AND, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_idx(b, p->yd[3]), loom_tpb_idx(b, C(cx, 1))),
                                  loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_idx(b, p->yd[3]), loom_tpb_idx(b, C(cx, row))));
    c = loom_tp_op2(a, LOOM_TP_OP_AND, c, loom_tp_op2(a, LOOM_TP_OP_AND, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_idx(b, G), loom_tpb_idx(b, C(cx, POOL_LANES))),
                                                      loom_tp_op2(a, LOOM_TP_OP_LE, loom_tpb_idx(b, G), loom_tpb_idx(b, C(cx, POOL_GRID_MAX)))));
    loom_tpb_if(b, c);
    loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_idx(b, G), loom_tpb_idx(b, C(cx, POOL_GRID_WIDE))));
    pool_grid(p, t, G, POOL_GRID_WIDE);
    loom_tpb_else(b);
    pool_grid(p, t, G, POOL_LANES);
    loom_tpb_end(b);
    loom_tpb_else(b);
  }
  for (int i = 0; i + 1 < n; i++) p->jv[i] = loom_tpb_for(b, jn[i], p->yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
  /* 64 where the taps read rows at unit stride and the program has the Local's plane or a
   * depthwise's multiplies: avg_pool_rows over conv_pad's output (adds only, 2 vectors of 16 a
   * chunk hide the add latency) measured 63 -> 70 us with it (256 channels at 28², Zen 5). */
  bool unit = (p->e1 && !p->flat) || p->w->stride[n - 1] == 1;
  int k0 = unit && (p->dw || p->fused) ? 0 : 1;
  for (int k = k0; k < POOL_TIERS; k++) { /* the widest chunk the row holds: its sums are independent chains */
    const loom_sym_expr *yl = p->yd[1 + n];
    loom_tp_expr *holds = loom_tpb_cmp(b, LOOM_TP_OP_GE, yl, C(cx, pool_tier[k]));
    if (k + 1 < POOL_TIERS) /* ... unless its chunks cover more positions than the next tier's (a row of 40: 64, not 48) */
      holds = loom_tp_op2(a, LOOM_TP_OP_AND, holds, loom_tpb_cmp(b, LOOM_TP_OP_LE, chunked(cx, yl, pool_tier[k]), chunked(cx, yl, pool_tier[k + 1])));
    loom_tpb_if(b, holds);
    pool_chunks(p, t, pool_tier[k]);
    loom_tpb_else(b);
  }
  pool_row(p, t);
  loom_tpb_end_n(b, n - 1 + POOL_TIERS - k0); /* the ifs, the loops j0.. */
  if (grid) loom_tpb_end(b);
  return loom_tpb_finish(b, result);
}

loom_status loom_tp_gen_pool_rows(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_pool_kind kind,
                                  const loom_tp_window *w, loom_tp_func **result) {
  int n = w->n;
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL || (kind != LOOM_TP_POOL_MAX && kind != LOOM_TP_POOL_AVG && kind != LOOM_TP_POOL_AVG_PAD))
    return LOOM_ERROR(INVALID_ARGUMENT, "pool_rows: %d spatial axes, kind %d", n, (int)kind);
  for (int i = 0; i < n; i++)
    if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1 || (kind == LOOM_TP_POOL_AVG && w->dilation[i] != 1))
      return LOOM_ERROR(INVALID_ARGUMENT, "pool_rows: spatial axis %d has kernel %lld, stride %lld, dilation %lld", i,
                        (long long)w->kernel[i], (long long)w->stride[i], (long long)w->dilation[i]);
  pool_b p = {.w = w, .kind = kind, .n = n};
  return rows_program(&p, a, cx, name, t, false, result);
}

/* Depthwise convolution (one input and one output channel per group) over an input padded beforehand,
 * as pool_rows computes its windows: Y[n, c, y..] = (Bias[c]) + the sum over taps of W[c, 0, tap..] *
 * X[n, c, y*s + tap*d ..]; W is (c, 1, k..) with the kernel extents of w constants. */
loom_status loom_tp_gen_depthwise_rows(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                       bool bias, loom_tp_func **result) {
  int n = w->n;
  if (n < 1 || n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "depthwise_rows: %d spatial axes", n);
  for (int i = 0; i < n; i++)
    if (w->kernel[i] < 1 || w->stride[i] < 1 || w->dilation[i] < 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "depthwise_rows: spatial axis %d has kernel %lld, stride %lld, dilation %lld", i,
                        (long long)w->kernel[i], (long long)w->stride[i], (long long)w->dilation[i]);
  pool_b p = {.w = w, .kind = LOOM_TP_POOL_AVG_PAD, .n = n, .dw = true};
  return rows_program(&p, a, cx, name, t, bias, result);
}

bool loom_tp_dw_fused(const loom_tp_window *w) {
  return w->n == 2 && w->stride[0] == w->stride[1] && w->stride[0] >= 1 && w->dilation[0] == 1 && w->dilation[1] == 1 &&
         w->kernel[0] >= 1 && w->kernel[1] >= 1 && w->pad_lo[0] >= 0 && w->pad_lo[1] >= 0 && w->pad_hi[0] >= 0 && w->pad_hi[1] >= 0;
}

/* A window program over its unpadded input, each plane's padding and phase planes made in a Local
 * first (loom_tp_dw_fused; tp_gen.h): depthwise_phases' forms with X that Local. */
static loom_status fused_program(pool_b *p, loom_sym_ctx *cx) {
  const loom_tp_window *w = p->w;
  if (!loom_tp_dw_fused(w))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: a 2-D window of equal strides, dilation 1 and padding of 0 or more, "
                      "got %d axes, stride %lld x %lld, dilation %lld x %lld", p->dw ? "depthwise_fused" : "pool_fused", w->n,
                      (long long)w->stride[0], (long long)w->stride[1], (long long)w->dilation[0], (long long)w->dilation[1]);
  p->e1 = C(cx, 0); /* set by rows_program */
  p->fused = true;
  p->g = (loom_tp_conv_packed){.n = 2};
  for (int i = 0; i < 2; i++) {
    p->g.kernel[i] = w->kernel[i];
    p->g.dilation[i] = 1;
    p->g.stride[i] = p->flat ? 1 : w->stride[i];
    p->g.pad_lo[i] = w->pad_lo[i];
    p->g.pad_hi[i] = w->pad_hi[i];
  }
  return LOOM_OK;
}

loom_status loom_tp_gen_depthwise_fused(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                        bool bias, loom_tp_func **result) {
  /* the phase split, not the flat plane: the strided taps of a short grid were slower (5 x 5 s2 144 ch
   * 28²: 0.043-0.045 -> 0.057-0.060 ms, Zen 5, 1 thread, loom run minima), MobileNetV2's 3 x 3 s2 about
   * the same */
  pool_b p = {.w = w, .kind = LOOM_TP_POOL_AVG_PAD, .n = 2, .dw = true};
  LOOM_PROPAGATE(fused_program(&p, cx));
  return rows_program(&p, a, cx, name, t, bias, result);
}

loom_status loom_tp_gen_pool_fused(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_pool_kind kind,
                                   const loom_tp_window *w, loom_tp_func **result) {
  if (kind != LOOM_TP_POOL_MAX && kind != LOOM_TP_POOL_AVG_PAD)
    return LOOM_ERROR(INVALID_ARGUMENT, "pool_fused: kind %d (max or average counting the padding)", (int)kind);
  pool_b p = {.w = w, .kind = kind, .n = 2, .flat = true};
  LOOM_PROPAGATE(fused_program(&p, cx));
  return rows_program(&p, a, cx, name, t, false, result);
}

bool loom_tp_dw_phases(const loom_tp_window *w) {
  return w->n == 2 && w->stride[0] == w->stride[1] && w->stride[0] > 1 && w->dilation[0] == 1 && w->dilation[1] == 1 &&
         w->kernel[0] > 1 && w->kernel[1] > 1;
}

/* Depthwise convolution over conv_phases' planes (loom_tp_dw_phases): the taps of output position
 * (j, u) read plane (t0 % s)*s + t1 % s at (j + t0 // s)*e1 + u + t1 // s, unit stride along u, so a
 * strided convolution's rows (and grids) are the stride-1 forms' (no strided loads). */
loom_status loom_tp_gen_depthwise_phases(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_window *w,
                                         bool bias, loom_tp_func **result) {
  if (!loom_tp_dw_phases(w) || w->pad_lo[0] || w->pad_lo[1] || w->pad_hi[0] || w->pad_hi[1])
    return LOOM_ERROR(INVALID_ARGUMENT, "depthwise_phases: a 2-D window of equal strides above 1, dilation 1, kernel above 1 "
                      "and no padding, got %d axes, stride %lld x %lld, kernel %lld x %lld", w->n, (long long)w->stride[0],
                      (long long)w->stride[1], (long long)w->kernel[0], (long long)w->kernel[1]);
  pool_b p = {.w = w, .kind = LOOM_TP_POOL_AVG_PAD, .n = 2, .dw = true, .e1 = C(cx, 0)}; /* e1 set to the scalar by rows_program */
  return rows_program(&p, a, cx, name, t, bias, result);
}

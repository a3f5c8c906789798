/* gen_conv_packed.c — convolution over weights packed in blocks of output channels (the `pack`
 * pass's conv layout, graph/pass_pack.c) and an input split into phase planes, computed on the
 * grid of output positions (graph/legalize_window.c decides when; docs/tensorprog.md
 * "Convolution over packed weights"; the CPU rule that register-tiles it: schedule_conv.c).
 *
 *   loom_tp_gen_conv_phases  Y[n, c, b, u..] = the padded input at u_i*s_i + b_i*g_i (zero outside):
 *                            each stride's phase (the residues the kernel's taps reach) as its own
 *                            plane, flat, so that a strided convolution reads every phase plane with
 *                            unit stride along its output positions.
 *   loom_tp_gen_conv_packed  Y[n, o, j] = (Bias[o]) + sum over c and the taps t of
 *                            Wp[o / B, K*c + t, o % B] * X[n, c, phase(t), j + off(t)]: an implicit
 *                            GEMM whose B operand is read where it lies (no patch matrix, no packing
 *                            per call) and whose A operand is the packed weight (B output channels
 *                            contiguous per tap).
 *
 * Kernel extents, strides and dilations are constants of the programs; every extent is symbolic.
 * Programs are built directly as IR (tp_build.h). */
#include "tensorprog/gen_internal.h"

static const loom_sym_expr *C(loom_sym_ctx *cx, int64_t v) { return loom_sym_const(cx, v); }

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int64_t loom_tp_conv_phase_step(const loom_tp_conv_packed *g, int i) {
  return g->kernel[i] > 1 ? gcd64(g->dilation[i], g->stride[i]) : g->stride[i];
}

int64_t loom_tp_conv_phase_count(const loom_tp_conv_packed *g, int i) {
  return g->stride[i] / loom_tp_conv_phase_step(g, i);
}

int64_t loom_tp_conv_phase_planes(const loom_tp_conv_packed *g) {
  int64_t s = 1;
  for (int i = 0; i < g->n; i++) s *= loom_tp_conv_phase_count(g, i);
  return s;
}

static loom_status check_packed(const loom_tp_conv_packed *g, const char *what) {
  if (g->n < 1 || g->n > LOOM_TP_MAX_SPATIAL) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %d spatial axes", what, g->n);
  if (g->groups < 0) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %lld groups", what, (long long)g->groups);
  for (int i = 0; i < g->n; i++)
    if (g->kernel[i] < 1 || g->dilation[i] < 1 || g->stride[i] < 1 || g->pad_lo[i] < 0 || g->pad_hi[i] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: spatial axis %d has kernel %lld, dilation %lld, stride %lld, padding %lld / %lld",
                        what, i, (long long)g->kernel[i], (long long)g->dilation[i], (long long)g->stride[i],
                        (long long)g->pad_lo[i], (long long)g->pad_hi[i]);
  return LOOM_OK;
}

const loom_sym_expr *loom_tp_conv_phase_extent(loom_sym_ctx *cx, const loom_tp_conv_packed *g, int i, const loom_sym_expr *h) {
  int64_t s = g->stride[i];
  return loom_sym_floordiv(cx, loom_sym_add(cx, h, C(cx, g->pad_lo[i] + g->pad_hi[i] + s - 1)), C(cx, s));
}

bool loom_tp_conv_phase_extra_row(const loom_tp_conv_packed *g) {
  for (int i = 1; i < g->n; i++)
    if ((g->kernel[i] - 1) * g->dilation[i] / g->stride[i] > 0) return true;
  return false;
}

/* The phase plane of phase indices bv (row-major over the axes' phase counts). */
static const loom_sym_expr *phase_index(loom_sym_ctx *cx, const loom_tp_conv_packed *g, const loom_sym_expr *const *bv) {
  const loom_sym_expr *plane = C(cx, 0);
  for (int i = 0; i < g->n; i++) plane = loom_sym_add(cx, loom_sym_mul(cx, plane, C(cx, loom_tp_conv_phase_count(g, i))), bv[i]);
  return plane;
}

/* One row of phase plane bv inside the input (conv_phases; the last axis' phase bv[n-1] a constant):
 * v0 zeros, the m positions inside the input copied, the rest of the E1 zeros. xi, yi: the leading
 * indices (xi's spatial ones but the last set). */
static void phase_row(loom_tpb *b, const loom_tp_conv_packed *g, const loom_tp_buffer *X, const loom_tp_buffer *Y,
                      const loom_sym_expr *const *xd, const loom_sym_expr *E1, const loom_sym_expr *row0,
                      const loom_sym_expr *const *bv, loom_tp_expr **xi, loom_tp_expr **yi, loom_dtype t, double fill) {
  loom_sym_ctx *cx = b->cx;
  int l = g->n - 1;
  int64_t s = g->stride[l], lo = g->pad_lo[l];
  yi[2] = loom_tpb_idx(b, phase_index(cx, g, bv));
  const loom_sym_expr *off = loom_sym_mul(cx, bv[l], C(cx, loom_tp_conv_phase_step(g, l))); /* the phase's first padded position */
  const loom_sym_expr *v0 = loom_sym_max(cx, loom_sym_floordiv(cx, loom_sym_add(cx, loom_sym_neg(cx, off), C(cx, lo + s - 1)), C(cx, s)),
                                         C(cx, 0));
  const loom_sym_expr *vend = loom_sym_floordiv(cx, loom_sym_add(cx, loom_sym_sub(cx, xd[2 + l], off), C(cx, lo + s - 1)), C(cx, s));
  const loom_sym_expr *m = loom_sym_max(cx, loom_sym_sub(cx, vend, v0), C(cx, 0));
  yi[3] = loom_tpb_idx(b, loom_sym_add(cx, row0, loom_tpb_for(b, "z0", v0, LOOM_TP_LOOP_SERIAL, false)));
  loom_tpb_store(b, Y, yi, loom_tp_const_f(b->a, t, fill));
  loom_tpb_end(b);
  /* the positions inside the input: chunks of 8 (4 below 8) whose loads are strided vectors */
  loom_tpg_row_copy(b, Y, yi, loom_sym_add(cx, row0, v0), X, xi, s,
                    loom_sym_add(cx, loom_sym_mul(cx, v0, C(cx, s)), loom_sym_sub(cx, off, C(cx, lo))), t, 0.0, m, "z1");
  const loom_sym_expr *z2 = loom_tpb_for(b, "z2", loom_sym_sub(cx, loom_sym_sub(cx, E1, v0), m), LOOM_TP_LOOP_SERIAL, false);
  yi[3] = loom_tpb_idx(b, loom_sym_add(cx, loom_sym_add(cx, loom_sym_add(cx, row0, v0), m), z2));
  loom_tpb_store(b, Y, yi, loom_tp_const_f(b->a, t, fill));
  loom_tpb_end(b);
}

/* Text (2-D; E_i = (h_i + lo_i + hi_i + s_i - 1) // s_i the phase extents, P_i phases of step g_i on
 * axis i, E0' = E0 + 1 when the taps of axis 1 reach past a row (loom_tp_conv_phase_extra_row)):
 *   prim @name(X: Buffer[(n, c, h0, h1), t], Y: Buffer[(n, c, P0*P1, E0'*E1), t]) {
 *     for q in 0..n*c { for b0 in 0..P0 { for u0 in 0..E0' {
 *       if u0*s0 + b0*g0 - lo0 >= 0 && u0*s0 + b0*g0 - lo0 < h0 {
 *         for each phase b1 < P1 (the code repeated, b1 a constant) {
 *           for z0 in 0..v0 { Y[q // c, q % c, P1*b0 + b1, E1*u0 + z0] = 0.0 }
 *           (loom_tpg_row_copy: for z1 in 0..m, in chunks of 8 lanes, 4 below 8)
 *             Y[.., E1*u0 + v0 + z1] = X[q // c, q % c, u0*s0 + b0*g0 - lo0, (v0 + z1)*s1 + b1*g1 - lo1]
 *           for z2 in 0..E1 - v0 - m { Y[.., E1*u0 + v0 + m + z2] = 0.0 } }
 *       } else { for each b1 { for z3 in 0..E1 { Y[.., E1*u0 + z3] = 0.0 } } } } } } }
 * v0 = max((lo1 - b1*g1 + s1 - 1) // s1, 0) (the phase's positions in the left padding), m = max((h1 + lo1 -
 * b1*g1 + s1 - 1) // s1 - v0, 0) (its positions inside the input). One loop over the (n, c) planes, so
 * that a batch of one still has work for every thread. */
void loom_tpg_conv_phase_plane(loom_tpb *b, const loom_tp_conv_packed *g, const loom_tp_buffer *X, const loom_tp_buffer *Y,
                               const loom_sym_expr *const *xd, loom_tp_expr *const *xl, loom_tp_expr *const *yl, loom_dtype t,
                               double fill) {
  loom_sym_ctx *cx = b->cx;
  loom_arena *a = b->a;
  int n = g->n;
  bool extra = loom_tp_conv_phase_extra_row(g);
  const loom_sym_expr *E[LOOM_TP_MAX_SPATIAL], *pitch[LOOM_TP_MAX_SPATIAL], *F = C(cx, 1);
  for (int i = n - 1; i >= 0; i--) {
    E[i] = loom_tp_conv_phase_extent(cx, g, i, xd[2 + i]);
    pitch[i] = F;
    F = loom_sym_mul(cx, F, i == 0 && extra ? loom_sym_add(cx, E[i], C(cx, 1)) : E[i]);
  }
  loom_tp_expr *yi[4] = {loom_tp_expr_copy(a, yl[0]), loom_tp_expr_copy(a, yl[1])}, *inside = NULL;
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL] = {loom_tp_expr_copy(a, xl[0]), loom_tp_expr_copy(a, xl[1])};
  const loom_sym_expr *bv[LOOM_TP_MAX_SPATIAL];
  int l = n - 1;
  for (int i = 0; i < l; i++) {
    int64_t np = loom_tp_conv_phase_count(g, i);
    bv[i] = np > 1 ? loom_tpb_for(b, loom_tpg_var('b', i), C(cx, np), LOOM_TP_LOOP_SERIAL, false) : C(cx, 0);
  }
  const loom_sym_expr *row0 = C(cx, 0); /* the row's flat offset in its plane */
  for (int i = 0; i < l; i++) {
    const loom_sym_expr *ext = i == 0 && extra ? loom_sym_add(cx, E[0], C(cx, 1)) : E[i];
    const loom_sym_expr *u = loom_tpb_for(b, loom_tpg_var('i', i), ext, LOOM_TP_LOOP_SERIAL, false);
    row0 = loom_sym_add(cx, row0, loom_sym_mul(cx, u, pitch[i]));
    const loom_sym_expr *src = loom_sym_add(cx, loom_sym_mul(cx, u, C(cx, g->stride[i])),
                                            loom_sym_sub(cx, loom_sym_mul(cx, bv[i], C(cx, loom_tp_conv_phase_step(g, i))),
                                                         C(cx, g->pad_lo[i])));
    xi[2 + i] = loom_tpb_idx(b, src);
    loom_tp_expr *c = loom_tp_op2(a, LOOM_TP_OP_AND, loom_tpb_cmp(b, LOOM_TP_OP_GE, src, C(cx, 0)),
                                  loom_tpb_cmp(b, LOOM_TP_OP_LT, src, xd[2 + i]));
    inside = inside ? loom_tp_op2(a, LOOM_TP_OP_AND, inside, c) : c;
  }
  /* the last axis' phases innermost (a source row's phases copied while it is in L1), the code of
   * phase b1 in the branch `b1 == ph` where b1 is the constant ph: constant bounds that LLVM folds
   * (the loop is unrolled) and the fuse pass counts (a producer's reads: once per element, one pass) */
  int64_t npl = loom_tp_conv_phase_count(g, l);
  if (inside) loom_tpb_if(b, inside);
  const loom_sym_expr *bl = npl > 1 ? loom_tpb_for(b, loom_tpg_var('b', l), C(cx, npl), LOOM_TP_LOOP_UNROLL, false) : NULL;
  for (int64_t ph = 0; ph < npl; ph++) {
    if (ph + 1 < npl) loom_tpb_if(b, loom_tpb_cmp(b, LOOM_TP_OP_LT, bl, C(cx, ph + 1)));
    bv[l] = C(cx, ph);
    phase_row(b, g, X, Y, xd, E[l], row0, bv, xi, yi, t, fill);
    if (ph + 1 < npl) loom_tpb_else(b);
  }
  loom_tpb_end_n(b, (int)npl - 1 + (bl != NULL));
  if (inside) { /* a row outside the input: zeros in every phase */
    loom_tpb_else(b);
    bv[l] = npl > 1 ? loom_tpb_for(b, loom_tpg_var('b', l), C(cx, npl), LOOM_TP_LOOP_UNROLL, false) : C(cx, 0);
    yi[2] = loom_tpb_idx(b, phase_index(cx, g, bv));
    yi[3] = loom_tpb_idx(b, loom_sym_add(cx, row0, loom_tpb_for(b, "z3", E[l], LOOM_TP_LOOP_SERIAL, false)));
    loom_tpb_store(b, Y, yi, loom_tp_const_f(a, t, fill));
    loom_tpb_end_n(b, 1 + (npl > 1));
    loom_tpb_end(b);
  }
  loom_tpb_end_n(b, l); /* the row loops, then the phase loops around them */
  for (int i = 0; i < l; i++)
    if (loom_tp_conv_phase_count(g, i) > 1) loom_tpb_end(b);
}

loom_status loom_tp_gen_conv_phases(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_packed *g,
                                    loom_tp_func **result) {
  LOOM_PROPAGATE(check_packed(g, "conv_phases"));
  int n = g->n;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *yd[4];
  xd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = loom_tpb_shape_sym(&b, "c");
  static const char *const hn[LOOM_TP_MAX_SPATIAL] = {"h0", "h1", "h2", "h3", "h4", "h5"};
  for (int i = 0; i < n; i++) xd[2 + i] = loom_tpb_shape_sym(&b, hn[i]);
  yd[0] = xd[0];
  yd[1] = xd[1];
  yd[2] = C(cx, loom_tp_conv_phase_planes(g));
  yd[3] = loom_tp_conv_phase_plane_size(cx, g, xd + 2);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 2 + n, xd), *Y = loom_tpb_buffer(&b, "Y", t, 4, yd);
  const loom_sym_expr *q = loom_tpb_for(&b, "q", loom_sym_mul(cx, xd[0], xd[1]), LOOM_TP_LOOP_SERIAL, false);
  loom_tp_expr *lead[2] = {loom_tpb_idx(&b, loom_sym_floordiv(cx, q, xd[1])), loom_tpb_idx(&b, loom_sym_floormod(cx, q, xd[1]))};
  loom_tpg_conv_phase_plane(&b, g, X, Y, xd, lead, lead, t, 0.0);
  return loom_tpb_finish(&b, result);
}

const loom_sym_expr *loom_tp_conv_phase_plane_size(loom_sym_ctx *cx, const loom_tp_conv_packed *g, const loom_sym_expr *const *h) {
  bool extra = loom_tp_conv_phase_extra_row(g);
  const loom_sym_expr *F = C(cx, 1);
  for (int i = g->n - 1; i >= 0; i--) {
    const loom_sym_expr *E = loom_tp_conv_phase_extent(cx, g, i, h[i]);
    F = loom_sym_mul(cx, F, i == 0 && extra ? loom_sym_add(cx, E, C(cx, 1)) : E);
  }
  return F;
}

/* Text (2-D; B the block, K = k0*k1, P1 the phases of axis 1, e1 the phase planes' row pitch, a scalar
 * parameter; Bias optional):
 *   prim @name(X: Buffer[(n, c, S, l), t], Wp: Buffer[(q, K*c, B), t], Bias: Buffer[(B*q,), t], e1: i64,
 *              Y: Buffer[(n, B*q, p), t]) {
 *     for i0 in 0..n { for ob in 0..q { for ii in 0..B { for j in 0..p {
 *       Y[i0, B*ob + ii, j] = Bias[B*ob + ii]
 *       for r in 0..c reduce { for t0 in 0..k0 reduce { for t1 in 0..k1 reduce {
 *         Y[i0, B*ob + ii, j] = Y[i0, B*ob + ii, j] + Wp[ob, K*r + k1*t0 + t1, ii] *
 *           X[i0, r, P1*((t0*d0 % s0) // g0) + (t1*d1 % s1) // g1, j + e1*(t0*d0 // s0) + t1*d1 // s1] } } } } } } }
 * (a phase or offset term of an axis with one phase or offset 0 left out). The output is on the grid of
 * the phase planes: position j = u0*e1 + u1, the columns u1 >= the output's extent computed and cropped
 * by the caller, which keeps every read inside X (loom_tp_gen_conv_phases' extra row).
 * With G > 1 groups, Wp is (q, K*(c // G), B), r runs over c // G, and block ob reads the input
 * channels of its group: X[i0, (ob // (q // G))*(c // G) + r, ..] (a block never spans two groups:
 * the caller's O / G is a multiple of B). */
loom_status loom_tp_gen_conv_packed(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const loom_tp_conv_packed *g,
                                    loom_tp_func **result) {
  LOOM_PROPAGATE(check_packed(g, "conv_packed"));
  int n = g->n;
  int64_t K = 1, B = LOOM_TP_CONV_BLOCK;
  for (int i = 0; i < n; i++) K *= g->kernel[i];
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *xd[4], *wd[3], *yd[3], *e[LOOM_TP_MAX_SPATIAL] = {0};
  xd[0] = loom_tpb_shape_sym(&b, "n");
  xd[1] = loom_tpb_shape_sym(&b, "c");
  xd[2] = C(cx, loom_tp_conv_phase_planes(g));
  xd[3] = loom_tpb_shape_sym(&b, "l");
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, 4, xd);
  wd[0] = loom_tpb_shape_sym(&b, "q");
  bool grouped = g->groups > 1;
  const loom_sym_expr *cg = grouped ? loom_sym_floordiv(cx, xd[1], C(cx, g->groups)) : xd[1]; /* the input channels a block reads */
  wd[1] = loom_sym_mul(cx, C(cx, K), cg);
  wd[2] = C(cx, B);
  const loom_tp_buffer *Wp = loom_tpb_buffer(&b, "Wp", t, 3, wd);
  const loom_sym_expr *o = loom_sym_mul(cx, C(cx, B), wd[0]);
  const loom_tp_buffer *Bias = g->bias ? loom_tpb_buffer(&b, "Bias", t, 1, &o) : NULL;
  for (int i = 1; i < n; i++) e[i] = loom_tpb_scalar(&b, loom_tpg_var('e', i));
  yd[0] = xd[0];
  yd[1] = o;
  yd[2] = loom_tpb_shape_sym(&b, "p");
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, 3, yd); /* the destination: last */
  const loom_sym_expr *i0 = loom_tpb_for(&b, "i0", xd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *ob = loom_tpb_for(&b, "ob", wd[0], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *ii = loom_tpb_for(&b, "ii", C(cx, B), LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *j = loom_tpb_for(&b, "j", yd[2], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *oc = loom_sym_add(cx, loom_sym_mul(cx, ob, C(cx, B)), ii);
  loom_tp_expr *yi[3] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, oc), loom_tpb_idx(&b, j)};
  loom_tp_expr *oi = loom_tpb_idx(&b, oc);
  loom_tpb_store(&b, Y, yi, Bias ? loom_tpb_load(&b, Bias, &oi) : loom_tpg_reduce_init(&b, LOOM_TP_REDUCE_SUM, t));
  const loom_sym_expr *r = loom_tpb_for(&b, "r", cg, LOOM_TP_LOOP_SERIAL, true);
  const loom_sym_expr *tv[LOOM_TP_MAX_SPATIAL], *tap = r;
  for (int i = 0; i < n; i++) {
    tv[i] = loom_tpb_for(&b, loom_tpg_var('t', i), C(cx, g->kernel[i]), LOOM_TP_LOOP_SERIAL, true);
    tap = loom_sym_add(cx, loom_sym_mul(cx, tap, C(cx, g->kernel[i])), tv[i]);
  }
  /* the tap's phase plane and its offset in the plane: axes from the last (pitch 1) to the first */
  const loom_sym_expr *plane = C(cx, 0), *off = C(cx, 0), *pitch = C(cx, 1), *pp = C(cx, 1);
  for (int i = n - 1; i >= 0; i--) {
    const loom_sym_expr *td = loom_sym_mul(cx, tv[i], C(cx, g->dilation[i]));
    int64_t s = g->stride[i], np = loom_tp_conv_phase_count(g, i);
    if (np > 1)
      plane = loom_sym_add(cx, plane, loom_sym_mul(cx, pp, loom_sym_floordiv(cx, loom_sym_floormod(cx, td, C(cx, s)),
                                                                              C(cx, loom_tp_conv_phase_step(g, i)))));
    if (g->kernel[i] > 1) off = loom_sym_add(cx, off, loom_sym_mul(cx, pitch, s > 1 ? loom_sym_floordiv(cx, td, C(cx, s)) : td));
    pp = loom_sym_mul(cx, pp, C(cx, np));
    if (i > 0) pitch = loom_sym_mul(cx, pitch, e[i]);
  }
  const loom_sym_expr *xc = r; /* the input channel */
  if (grouped)
    xc = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_floordiv(cx, ob, loom_sym_floordiv(cx, wd[0], C(cx, g->groups))), cg), r);
  loom_tp_expr *xi[4] = {loom_tpb_idx(&b, i0), loom_tpb_idx(&b, xc), loom_tpb_idx(&b, plane), loom_tpb_idx(&b, loom_sym_add(cx, j, off))};
  loom_tp_expr *wi[3] = {loom_tpb_idx(&b, ob), loom_tpb_idx(&b, tap), loom_tpb_idx(&b, ii)};
  loom_tp_expr *prod = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, Wp, wi), loom_tpb_load(&b, X, xi));
  loom_tpb_store(&b, Y, yi, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(&b, Y, yi), prod));
  return loom_tpb_finish(&b, result);
}

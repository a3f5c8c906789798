/* gen_image.c — generators of the image-resizing programs: ONNX Resize (N-d; nearest, linear and
 * cubic, every coordinate transformation mode) and resize2d. Built directly as IR (tp_build.h);
 * each generator's comment shows the program's text (f64 literals written 1.0 for 1.0f64).
 *
 * Resize is separable: for each resized output axis k a source coordinate x_k (from the output
 * index, the scale S[k] and, for tf_crop_and_resize, the roi R) gives a first tap b_k and per-tap
 * weights c_k_j; the output is the product-form sum over the taps of every resized axis of the
 * weights times the input at the clamped tap indices (the reference pads with edge values). The
 * per-axis values are lets inside that axis's loop, so they are computed once per output index.
 * Scales and roi are buffers read at run time: the program depends on the modes, the dtypes, the
 * rank and which axes are resized, never on the shapes or the scale values.
 *
 * Resize with run-time scales or sizes (one value per resized axis) adds three small programs
 * without loops: the output extents (bound by legalization before the resize runs), the
 * full-rank scales and the full-rank roi that the resize program reads. */
#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define OP1(op, x) loom_tp_op1(b->a, LOOM_TP_OP_##op, (x))
#define SEL(c, x, y) loom_tp_select(b->a, (c), (x), (y))
#define CAST(t, e) loom_tp_cast(b->a, (t), (e))
#define F(v) loom_tpg_f64(b, (v))
#define I(v) loom_tpb_cidx(b, (v))
#define IDX(s) loom_tpb_idx(b, (s))
#define R(e) loom_tpb_dup(b, (e))
#define AT(buf, k) loom_tpb_at(b, (buf), (k))
#define LETF(v, ...) loom_tpg_letf(b, (v), __VA_ARGS__)

/* The per-axis lets the source coordinate is computed from. */
typedef struct axis_coord {
  int k;                        /* the axis */
  const loom_sym_expr *i, *d;   /* its output loop variable and output extent */
  loom_tp_expr *sc, *ex, *ow;   /* lets: the scale, the input extent and the output width (f64) */
} axis_coord;

/* The source coordinate of output index i<k> (ONNX's coordinate transformation modes):
 *   half_pixel: (f64(i) + 0.5) / sc - 0.5     asymmetric: f64(i) / sc
 *   half_pixel_symmetric: (ex - 1.0) / 2.0 + (f64(i) + 0.5 - f64(d) / 2.0) / sc
 *     (ONNX's a/2 * (1 - d / (s * a)) + (i + 0.5) / s - 0.5 rearranged so only the division and
 *     the last sum round: integer coordinates stay exact; the same as graph/op_image.c)
 *   pytorch_half_pixel: select(ow == 1.0, -0.5, (f64(i) + 0.5) / sc - 0.5)
 *   align_corners: select(ow == 1.0, 0.0, f64(i) * (ex - 1.0) / (ow - 1.0))
 *   tf_crop_and_resize: select(ow == 1.0, (hi - lo) * (ex - 1.0) / 2.0,
 *                              f64(i) * (hi - lo) * (ex - 1.0) / (ow - 1.0)) + lo * (ex - 1.0)
 *     with lo = f64(R[k]), hi = f64(R[rank + k]). */
static loom_tp_expr *coordinate(loom_tpb *b, const loom_tp_resize *rz, const axis_coord *v, const loom_tp_buffer *Rb, int rank) {
#define FI() CAST(LOOM_DTYPE_F64, IDX(v->i))
#define EXM1() OP2(SUB, R(v->ex), F(1.0))
#define OWM1() OP2(SUB, R(v->ow), F(1.0))
#define OW1() OP2(EQ, R(v->ow), F(1.0))
#define HALF() OP2(SUB, OP2(DIV, OP2(ADD, FI(), F(0.5)), R(v->sc)), F(0.5))
  switch (rz->coord) {
    case LOOM_TP_RESIZE_HALF_PIXEL: return HALF();
    case LOOM_TP_RESIZE_HALF_PIXEL_SYMMETRIC:
      return OP2(ADD, OP2(DIV, EXM1(), F(2.0)),
                 OP2(DIV, OP2(SUB, OP2(ADD, FI(), F(0.5)), OP2(DIV, CAST(LOOM_DTYPE_F64, IDX(v->d)), F(2.0))), R(v->sc)));
    case LOOM_TP_RESIZE_PYTORCH_HALF_PIXEL: return SEL(OW1(), F(-0.5), HALF());
    case LOOM_TP_RESIZE_ALIGN_CORNERS: return SEL(OW1(), F(0.0), OP2(DIV, OP2(MUL, FI(), EXM1()), OWM1()));
    case LOOM_TP_RESIZE_ASYMMETRIC: return OP2(DIV, FI(), R(v->sc));
    case LOOM_TP_RESIZE_TF_CROP_AND_RESIZE: {
#define LO() CAST(LOOM_DTYPE_F64, AT(Rb, v->k))
#define HI() CAST(LOOM_DTYPE_F64, AT(Rb, rank + v->k))
      loom_tp_expr *one = OP2(DIV, OP2(MUL, OP2(SUB, HI(), LO()), EXM1()), F(2.0));
      loom_tp_expr *many = OP2(DIV, OP2(MUL, OP2(MUL, FI(), OP2(SUB, HI(), LO())), EXM1()), OWM1());
      return OP2(ADD, SEL(OW1(), one, many), OP2(MUL, LO(), EXM1()));
#undef LO
#undef HI
    }
  }
#undef FI
#undef EXM1
#undef OWM1
#undef OW1
#undef HALF
  return NULL;
}

/* let sc<k>: f64 = f64(S[k])  let ex<k>: f64 = f64(a<k>)  let ow<k>: f64 = sc<k> * ex<k>
 * let x<k>: f64 = <coordinate>  let fl<k>: f64 = floor(x<k>)
 * let q<k>: f64 = select(x<k> == fl<k>, 1.0, x<k> - fl<k>)   the fractional position, 1 at integer positions (as the reference)
 * (x, fl, q into the out parameters.) */
static void coord_lets(loom_tpb *b, const loom_tp_resize *rz, axis_coord *v, const loom_sym_expr *ak, const loom_tp_buffer *S,
                       const loom_tp_buffer *Rb, int rank, loom_tp_expr **x, loom_tp_expr **fl, loom_tp_expr **q) {
  int k = v->k;
  v->sc = LETF(CAST(LOOM_DTYPE_F64, AT(S, k)), "sc%d", k);
  v->ex = LETF(CAST(LOOM_DTYPE_F64, IDX(ak)), "ex%d", k);
  v->ow = LETF(OP2(MUL, R(v->sc), R(v->ex)), "ow%d", k);
  *x = LETF(coordinate(b, rz, v, Rb, rank), "x%d", k);
  *fl = LETF(OP1(FLOOR, R(*x)), "fl%d", k);
  *q = LETF(SEL(OP2(EQ, R(*x), R(*fl)), F(1.0), OP2(SUB, R(*x), R(*fl))), "q%d", k);
}

/* i64(fl) - back + select(x == fl, 0, 1): the first neighbour, one further right when x is not
 * an integer (back: an index value). */
static loom_tp_expr *first_tap(loom_tpb *b, const loom_tp_expr *x, const loom_tp_expr *fl, loom_tp_expr *back) {
  return OP2(ADD, OP2(SUB, CAST(LOOM_DTYPE_I64, R(fl)), back), SEL(OP2(EQ, R(x), R(fl)), I(0), I(1)));
}

/* min(max(e, 0), hi): an index clamped to [0, hi]. */
static loom_tp_expr *clamp_index(loom_tpb *b, loom_tp_expr *e, const loom_sym_expr *hi) {
  return OP2(MIN, OP2(MAX, e, I(0)), IDX(hi));
}

/* select(bk + j >= 0 && bk + j < ak, w, 0.0): a weight that counts only inside the input. */
static loom_tp_expr *inside(loom_tpb *b, const loom_tp_expr *bk, loom_tp_expr *j, const loom_sym_expr *ak, loom_tp_expr *w) {
  loom_tp_expr *lo = OP2(GE, OP2(ADD, R(bk), R(j)), I(0)), *hi = OP2(LT, OP2(ADD, R(bk), R(j)), IDX(ak));
  return SEL(OP2(AND, lo, hi), w, F(0.0));
}

/* The taps and weights of resized axis k (after coord_lets), at the top of its loop:
 *   let b<k>: i64 = i64(fl<k>) - n/2 + select(x<k> == fl<k>, 0, 1)   (n = 4 cubic, else 2)
 *   [tf_crop_and_resize: let e<k>: bool = x<k> < 0.0 || x<k> > ex<k> - 1.0]
 *   nearest: let t<k>_0: i64 = min(max(b<k> + select(<second>, 1, 0), 0), a<k> - 1)   (one-hot over the two
 *     neighbours: the second when q > 0.5 (round_prefer_floor), q >= 0.5 (prefer_ceil), q == 1.0 (floor), always (ceil))
 *   else per tap j: let t<k>_j: i64 = min(max(b<k> + j, 0), a<k> - 1)
 *     linear: let w<k>_0: f64 = 1.0 - q<k> / let w<k>_1: f64 = q<k>
 *     cubic: let u<k>_j: f64 = abs(<cubic distance>)  let w<k>_j: f64 = <cubic weight of u<k>_j>
 *   exclude_outside: let v<k>_j: f64 = select(b<k> + j >= 0 && b<k> + j < a<k>, w<k>_j, 0.0) ..
 *     let m<k>: f64 = v<k>_0 + ..  let z<k>: f64 = select(m<k> == 0.0, 1.0, m<k>)  let c<k>_j: f64 = v<k>_j / z<k> ..
 *   else: let c<k>_j: f64 = w<k>_j ..
 * t[] and c[] take the taps and the weights; e the crop condition (or NULL). */
static void axis_lets(loom_tpb *b, const loom_tp_resize *rz, axis_coord *v, const loom_sym_expr *ak, const loom_tp_buffer *S,
                      const loom_tp_buffer *Rb, int rank, loom_tp_expr **t, loom_tp_expr **c, loom_tp_expr **e) {
  int k = v->k;
  loom_tp_expr *x, *fl, *q;
  coord_lets(b, rz, v, ak, S, Rb, rank, &x, &fl, &q);
  int n = rz->mode == LOOM_TP_RESIZE_CUBIC ? 4 : 2;
  loom_tp_expr *bk = LETF(first_tap(b, x, fl, I(n / 2)), "b%d", k);
  *e = NULL;
  if (rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE)
    *e = LETF(OP2(OR, OP2(LT, R(x), F(0.0)), OP2(GT, R(x), OP2(SUB, R(v->ex), F(1.0)))), "e%d", k);
  const loom_sym_expr *top = loom_sym_sub(b->cx, ak, loom_sym_const(b->cx, 1));
  if (rz->mode == LOOM_TP_RESIZE_NEAREST) {
    loom_tp_expr *second = NULL;
    switch (rz->nearest) {
      case LOOM_TP_RESIZE_ROUND_PREFER_FLOOR: second = OP2(GT, R(q), F(0.5)); break;
      case LOOM_TP_RESIZE_ROUND_PREFER_CEIL: second = OP2(GE, R(q), F(0.5)); break;
      case LOOM_TP_RESIZE_FLOOR: second = OP2(EQ, R(q), F(1.0)); break; /* only at integer positions */
      case LOOM_TP_RESIZE_CEIL: second = loom_tp_const_i(b->a, LOOM_DTYPE_BOOL, 1); break;
    }
    t[0] = LETF(clamp_index(b, OP2(ADD, R(bk), SEL(second, I(1), I(0))), top), "t%d_0", k);
    return;
  }
  loom_tp_expr *w[4];
  for (int j = 0; j < n; j++) {
    t[j] = LETF(clamp_index(b, OP2(ADD, R(bk), I(j)), top), "t%d_%d", k, j);
    if (rz->mode == LOOM_TP_RESIZE_LINEAR) {
      w[j] = LETF(j ? R(q) : OP2(SUB, F(1.0), R(q)), "w%d_%d", k, j);
    } else {
      loom_tp_expr *u = LETF(OP1(ABS, loom_tpg_cubic_dist(b, q, j)), "u%d_%d", k, j);
      w[j] = LETF(loom_tpg_cubic_weight(b, u, rz->cubic_a), "w%d_%d", k, j);
    }
  }
  if (rz->exclude_outside) {
    /* taps outside the input get weight 0; the rest are renormalised (a zero sum counts as 1) */
    loom_tp_expr *vj[4], *m = NULL;
    for (int j = 0; j < n; j++) vj[j] = LETF(inside(b, bk, I(j), ak, R(w[j])), "v%d_%d", k, j);
    for (int j = 0; j < n; j++) m = m ? OP2(ADD, m, R(vj[j])) : R(vj[j]);
    m = LETF(m, "m%d", k);
    loom_tp_expr *z = LETF(SEL(OP2(EQ, R(m), F(0.0)), F(1.0), R(m)), "z%d", k);
    for (int j = 0; j < n; j++) c[j] = LETF(OP2(DIV, R(vj[j]), R(z)), "c%d_%d", k, j);
  } else {
    for (int j = 0; j < n; j++) c[j] = LETF(R(w[j]), "c%d_%d", k, j);
  }
}

/* Taps per resized axis. */
static int taps_of(const loom_tp_resize *rz) { return rz->mode == LOOM_TP_RESIZE_CUBIC ? 4 : rz->mode == LOOM_TP_RESIZE_LINEAR ? 2 : 1; }

/* X: Buffer[(a<k> resized, d<k> not ..), t], S: Buffer[(rank,), scale_t], [R: Buffer[(2*rank,), roi_t]], Y: d.. ->
 *   [resizing the last axis (not tf_crop_and_resize): alloc T: Local[(d<last>, n), i64]  [alloc C: Local[(d<last>, n), f64]]
 *    for j in 0..d<last> { <axis_lets of the last axis at j>  T[j, 0] = t<last>_0 [C[j, 0] = c<last>_0] .. }, and
 *    in the loop of i<last>: let t<last>_j: i64 = T[i<last>, j] [let c<last>_j: f64 = C[i<last>, j]] ..]
 *   for i0 in 0..d0 parallel { <axis_lets 0 if resized> for i1 .. {
 *     Y[i..] = [select(e<k> || .., t(extrapolation), ] t(c0_0 * c1_0 * f64(X[t0_0, t1_0]) + c0_0 * c1_1 * f64(X[t0_0, t1_1]) + ..)[)]
 * (one term per combination of taps, the last resized axis fastest; nearest: Y[i..] = X[t0_0, ..]; a
 * non-resized axis reads X at i<k>). */
loom_status loom_tp_gen_resize(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                               const loom_tp_resize *rz, loom_tp_func **result) {
  return loom_tp_gen_resize_io(a, cx, name, t, t, rank, rz, result);
}

loom_status loom_tp_gen_resize_io(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tin, loom_dtype t, int rank,
                                  const loom_tp_resize *rz, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1) return LOOM_ERROR(INVALID_ARGUMENT, "resize: rank 0");
  if (rz->mode != LOOM_TP_RESIZE_NEAREST && (!loom_dtype_is_float(t) || !loom_dtype_is_float(tin)))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: interpolation of %s data is not supported",
                      loom_dtype_name(loom_dtype_is_float(t) ? tin : t));
  if (rz->mode == LOOM_TP_RESIZE_NEAREST && tin != t)
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: nearest from %s to %s", loom_dtype_name(tin), loom_dtype_name(t));
  if (rz->mode == LOOM_TP_RESIZE_NEAREST && rz->exclude_outside)
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: exclude_outside with mode nearest is not supported");
  if (!loom_dtype_is_float(rz->scale_t) || (rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE && !loom_dtype_is_float(rz->roi_t)))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: scales and roi must be float tensors");
  int n = taps_of(rz), terms = 1;
  for (int k = 0; k < rank; k++)
    if (rz->axes >> k & 1) terms *= n;
  if (terms > 256) return LOOM_ERROR(INVALID_ARGUMENT, "resize: %d taps per output element (at most 256)", terms);
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE, interp = rz->mode != LOOM_TP_RESIZE_NEAREST;
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  /* X's resized axes are a<k>; the others share Y's extent d<k> */
  const loom_sym_expr *xd[LOOM_TP_GEN_MAX_RANK], *d[LOOM_TP_GEN_MAX_RANK], *nr = loom_sym_const(cx, rank), *n2 = loom_sym_const(cx, 2 * rank);
  for (int k = 0; k < rank; k++) xd[k] = loom_tpb_shape_sym(b, loom_tpg_var(rz->axes >> k & 1 ? 'a' : 'd', k));
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", tin, rank, xd), *S = loom_tpb_buffer(b, "S", rz->scale_t, 1, &nr);
  const loom_tp_buffer *Rb = crop ? loom_tpb_buffer(b, "R", rz->roi_t, 1, &n2) : NULL;
  loom_tpg_dims_d(b, rank, d);
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *tk[LOOM_TP_GEN_MAX_RANK][4], *ck[LOOM_TP_GEN_MAX_RANK][4], *ek[LOOM_TP_GEN_MAX_RANK];
  /* the last axis resized (not tf_crop_and_resize): its taps and weights once, in tables T and C
   * of (d<last>, taps), and the innermost loop only gathers (its coordinate, floor and division
   * are per column, not per output element) */
  int last = rank - 1;
  const loom_tp_buffer *T = NULL, *C = NULL;
  if (!crop && (rz->axes >> last & 1)) {
    const loom_sym_expr *td[2] = {d[last], loom_sym_const(cx, n)};
    T = loom_tpb_alloc(b, "T", LOOM_DTYPE_I64, 2, td, LOOM_TP_SCOPE_LOCAL);
    if (interp) C = loom_tpb_alloc(b, "C", LOOM_DTYPE_F64, 2, td, LOOM_TP_SCOPE_LOCAL);
    const loom_sym_expr *jv = loom_tpb_for(b, "j", d[last], LOOM_TP_LOOP_SERIAL, false);
    axis_coord v = {.k = last, .i = jv, .d = d[last]};
    axis_lets(b, rz, &v, xd[last], S, Rb, rank, tk[last], ck[last], &ek[last]);
    for (int j = 0; j < n; j++) {
      loom_tp_expr *at[2] = {IDX(jv), I(j)};
      loom_tpb_store(b, T, at, R(tk[last][j]));
      if (C) loom_tpb_store(b, C, (loom_tp_expr *[2]){IDX(jv), I(j)}, R(ck[last][j]));
    }
    loom_tpb_end(b);
  }
  for (int k = 0; k < rank; k++) {
    const loom_sym_expr *iv = loom_tpb_for(b, loom_tpg_var('i', k), d[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false);
    yi[k] = IDX(iv);
    axis_coord v = {.k = k, .i = iv, .d = d[k]};
    if (T && k == last) {
      for (int j = 0; j < n; j++) {
        tk[k][j] = LETF(loom_tpb_load(b, T, (loom_tp_expr *[2]){IDX(iv), I(j)}), "t%d_%d", k, j);
        if (C) ck[k][j] = LETF(loom_tpb_load(b, C, (loom_tp_expr *[2]){IDX(iv), I(j)}), "c%d_%d", k, j);
      }
    } else if (rz->axes >> k & 1) {
      axis_lets(b, rz, &v, xd[k], S, Rb, rank, tk[k], ck[k], &ek[k]);
    }
  }
  /* one term per combination of taps (odometer over the resized axes) */
  int tap[LOOM_TP_GEN_MAX_RANK] = {0};
  loom_tp_expr *sum = NULL, *xi[LOOM_TP_GEN_MAX_RANK];
  for (int term = 0; term < terms; term++) {
    loom_tp_expr *w = NULL;
    for (int k = 0; k < rank; k++) {
      bool rs = rz->axes >> k & 1;
      xi[k] = rs ? R(tk[k][tap[k]]) : yi[k];
      if (rs && interp) w = w ? OP2(MUL, w, R(ck[k][tap[k]])) : R(ck[k][tap[k]]);
    }
    loom_tp_expr *x = loom_tpb_load(b, X, xi);
    if (interp) x = CAST(LOOM_DTYPE_F64, x);
    if (w) x = OP2(MUL, w, x);
    sum = sum ? OP2(ADD, sum, x) : x;
    for (int k = rank - 1; k >= 0; k--) {
      if (!(rz->axes >> k & 1)) continue;
      if (++tap[k] < n) break;
      tap[k] = 0;
    }
  }
  if (interp) sum = CAST(t, sum);
  if (crop) {
    loom_tp_expr *out = NULL;
    for (int k = 0; k < rank; k++)
      if (rz->axes >> k & 1) out = out ? OP2(OR, out, R(ek[k])) : R(ek[k]);
    if (!out) out = loom_tp_const_i(a, LOOM_DTYPE_BOOL, 0);
    sum = SEL(out, CAST(t, F(rz->extrapolation)), sum);
  }
  loom_tpb_store(b, Y, yi, sum);
  return loom_tpb_finish(b, result);
}

/* ---- resize with antialias ---------------------------------------------------------------------- */

/* Antialiased linear / cubic resize (downscaling widens the filter by 1 / scale, so the tap
 * count depends on the scale): the reference resizes one axis at a time, and so do these
 * programs. T = the taps per axis from the scales: 2 - 2 * (floor(-support / min(s, 1)) + 1),
 * support 1 (linear) or 2 (cubic); -1 for a scale not > 0 or below 2^-20:
 *   S: Buffer[(rank,), scale_t], T: Buffer[(rank,), i64] -> let s<k>: f64 = f64(S[k])
 *   T[k] = select(!(s<k> >= 0.00000095367431640625), -1, 2 - 2 * (i64(floor(-<support> / min(s<k>, 1.0))) + 1)) .. */
loom_status loom_tp_gen_resize_aa_taps(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype scale_t, int rank,
                                       loom_tp_resize_mode mode, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (mode == LOOM_TP_RESIZE_NEAREST || !loom_dtype_is_float(scale_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize antialias: mode nearest or scales of %s", loom_dtype_name(scale_t));
  double sup = mode == LOOM_TP_RESIZE_CUBIC ? 2.0 : 1.0;
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *nr = loom_sym_const(cx, rank);
  const loom_tp_buffer *S = loom_tpb_buffer(b, "S", scale_t, 1, &nr), *T = loom_tpb_buffer(b, "T", LOOM_DTYPE_I64, 1, &nr);
  for (int k = 0; k < rank; k++) {
    loom_tp_expr *s = LETF(CAST(LOOM_DTYPE_F64, AT(S, k)), "s%d", k);
    loom_tp_expr *bad = OP1(NOT, OP2(GE, R(s), F(0.00000095367431640625)));
    loom_tp_expr *half = OP2(ADD, CAST(LOOM_DTYPE_I64, OP1(FLOOR, OP2(DIV, F(-sup), OP2(MIN, R(s), F(1.0))))), I(1));
    loom_tpb_store_at(b, T, k, SEL(bad, I(-1), OP2(SUB, I(2), OP2(MUL, I(2), half))));
  }
  return loom_tpb_finish(b, result);
}

/* One axis of an antialiased resize: Y = X resized along `axis` (X's extent a<axis>, Y's
 * d<axis>; the other axes equal), with the i64 scalar n the axis's tap count (from the taps
 * program); the weights of the n taps are the widened filter at the tap distances times the
 * scale, normalised by their sum (with exclude_outside, of those inside X). tin / tout: X's and
 * Y's dtypes (the chain keeps f64 between axes, as the reference):
 *   X: (d.., a<k>, d..), S, [R], n: i64, Y: d.. -> for i0 in 0..d0 parallel { .. <coord_lets k>
 *     let b<k>: i64 = i64(fl<k>) - n // 2 + select(x<k> == fl<k>, 0, 1)
 *     let s<k>: f64 = min(sc<k>, 1.0)  let st<k>: f64 = floor(-<support> / s<k>) + 1.0
 *     alloc acc: Local[(2,), f64]  acc[0] = 0.0  acc[1] = 0.0
 *     for j in 0..n reduce { let tj: f64 = (st<k> + f64(j) - q<k>) * s<k>
 *       linear: let wj: f64 = max(0.0, min(1.0, 1.0 - abs(tj)))   cubic: let uj: f64 = abs(tj)  let wj: f64 = <cubic weight of uj>
 *       let wk: f64 = wj (exclude_outside: select(b<k> + j >= 0 && b<k> + j < a<k>, wj, 0.0))
 *       acc[0] = acc[0] + wk  acc[1] = acc[1] + wk * f64(X[.., min(max(b<k> + j, 0), a<k> - 1), ..]) }
 *     Y[i..] = tout([select(x<k> < 0.0 || x<k> > ex<k> - 1.0, extrapolation, ]acc[1] / select(acc[0] == 0.0, 1.0, acc[0])[)]) } */
loom_status loom_tp_gen_resize_aa_axis(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tin, loom_dtype tout, int rank,
                                       int axis, const loom_tp_resize *rz, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank || rz->mode == LOOM_TP_RESIZE_NEAREST || !loom_dtype_is_float(tin) || !loom_dtype_is_float(tout))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize antialias: axis %d of rank %d, %s to %s", axis, rank, loom_dtype_name(tin),
                      loom_dtype_name(tout));
  bool crop = rz->coord == LOOM_TP_RESIZE_TF_CROP_AND_RESIZE;
  int k = axis;
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *xd[LOOM_TP_GEN_MAX_RANK], *d[LOOM_TP_GEN_MAX_RANK], *nr = loom_sym_const(cx, rank), *n2 = loom_sym_const(cx, 2 * rank);
  for (int i = 0; i < rank; i++) xd[i] = loom_tpb_shape_sym(b, loom_tpg_var(i == k ? 'a' : 'd', i));
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", tin, rank, xd), *S = loom_tpb_buffer(b, "S", rz->scale_t, 1, &nr);
  const loom_tp_buffer *Rb = crop ? loom_tpb_buffer(b, "R", rz->roi_t, 1, &n2) : NULL;
  const loom_sym_expr *n = loom_tpb_scalar(b, "n");
  loom_tpg_dims_d(b, rank, d);
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", tout, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(b, rank, d, yi);
  axis_coord v = {.k = k, .i = yi[k] ? yi[k]->u.sym : NULL, .d = d[k]};
  loom_tp_expr *x, *fl, *q;
  coord_lets(b, rz, &v, xd[k], S, Rb, rank, &x, &fl, &q);
  loom_tp_expr *bk = LETF(first_tap(b, x, fl, IDX(loom_sym_floordiv(cx, n, loom_sym_const(cx, 2)))), "b%d", k);
  loom_tp_expr *s = LETF(OP2(MIN, R(v.sc), F(1.0)), "s%d", k);
  loom_tp_expr *st = LETF(OP2(ADD, OP1(FLOOR, OP2(DIV, F(rz->mode == LOOM_TP_RESIZE_CUBIC ? -2.0 : -1.0), R(s))), F(1.0)), "st%d", k);
  const loom_tp_buffer *acc = loom_tpb_local(b, "acc", LOOM_DTYPE_F64, 2);
  loom_tpb_store_at(b, acc, 0, F(0.0));
  loom_tpb_store_at(b, acc, 1, F(0.0));
  loom_tp_expr *j = IDX(loom_tpb_for(b, "j", n, LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *tj = loom_tpb_let(b, "tj", OP2(MUL, OP2(SUB, OP2(ADD, R(st), CAST(LOOM_DTYPE_F64, R(j))), R(q)), R(s)));
  loom_tp_expr *wj;
  if (rz->mode == LOOM_TP_RESIZE_LINEAR) {
    wj = loom_tpb_let(b, "wj", OP2(MAX, F(0.0), OP2(MIN, F(1.0), OP2(SUB, F(1.0), OP1(ABS, R(tj))))));
  } else {
    loom_tp_expr *uj = loom_tpb_let(b, "uj", OP1(ABS, R(tj)));
    wj = loom_tpb_let(b, "wj", loom_tpg_cubic_weight(b, uj, rz->cubic_a));
  }
  loom_tp_expr *wk = loom_tpb_let(b, "wk", rz->exclude_outside ? inside(b, bk, j, xd[k], R(wj)) : R(wj));
  for (int i = 0; i < rank; i++)
    xi[i] = i == k ? clamp_index(b, OP2(ADD, R(bk), R(j)), loom_sym_sub(cx, xd[k], loom_sym_const(cx, 1))) : yi[i];
  loom_tpb_store_at(b, acc, 0, OP2(ADD, AT(acc, 0), R(wk)));
  loom_tpb_store_at(b, acc, 1, OP2(ADD, AT(acc, 1), OP2(MUL, R(wk), CAST(LOOM_DTYPE_F64, loom_tpb_load(b, X, xi)))));
  loom_tpb_end(b);
  loom_tp_expr *out = OP2(DIV, AT(acc, 1), SEL(OP2(EQ, AT(acc, 0), F(0.0)), F(1.0), AT(acc, 0)));
  if (crop)
    out = SEL(OP2(OR, OP2(LT, R(x), F(0.0)), OP2(GT, R(x), OP2(SUB, R(v.ex), F(1.0)))), F(rz->extrapolation), out);
  loom_tpb_store(b, Y, yi, CAST(tout, out));
  return loom_tpb_finish(b, result);
}

/* ---- resize with run-time scales or sizes ---------------------------------------------------- */

/* The resized axes must be distinct axes of the rank; P float scales or i64 sizes. */
static loom_status rt_check(int rank, const loom_tp_resize_rt *rt) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || rt->na < 0 || rt->na > rank) return LOOM_ERROR(INVALID_ARGUMENT, "resize: %d resized axes for rank %d", rt->na, rank);
  unsigned seen = 0;
  for (int j = 0; j < rt->na; j++) {
    int ax = rt->axes[j];
    if (ax < 0 || ax >= rank || (seen >> ax & 1)) return LOOM_ERROR(INVALID_ARGUMENT, "resize: axis %d is out of range or repeated", ax);
    seen |= 1u << ax;
  }
  if (rt->sizes ? rt->p_t != LOOM_DTYPE_I64 : !loom_dtype_is_float(rt->p_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize: %s of dtype %s", rt->sizes ? "sizes" : "scales", loom_dtype_name(rt->p_t));
  return LOOM_OK;
}

/* The position of axis k in P, or -1 when it is not resized. */
static int rt_index(const loom_tp_resize_rt *rt, int k) {
  for (int j = 0; j < rt->na; j++)
    if (rt->axes[j] == k) return j;
  return -1;
}

/* What the run-time resize programs share. */
typedef struct rt_prog {
  loom_tpb b;
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK]; /* X's dims */
  const loom_tp_buffer *P, *out;
  loom_tp_expr *s[LOOM_TP_GEN_MAX_RANK];        /* the lets s<j> */
  loom_tp_expr *sel;                            /* the let sel, or NULL */
} rt_prog;

/* The head `prim @name(X: Buffer[(d0, ..), t], P: Buffer[(na,), p_t], <out>: Buffer[(rank,), out_t])`
 * and the lets s<j>, the scale of resized axis j (sizes: f64(P[j]) / f64(max(d<axis>, 1)): an empty
 * axis divides by 1, its size is refused (dims), the scale never used; scales: f64(P[j])), and
 * under a keep-aspect policy `let sel: f64 = min(s0, min(s1, ..))` (max for not_smaller), the one
 * scale of every resized axis. */
static void rt_head(rt_prog *p, loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, const loom_tp_resize_rt *rt,
                    const char *out, loom_dtype out_t) {
  loom_tpb *b = &p->b;
  loom_tpb_init(b, a, cx, name);
  loom_tpg_dims_d(b, rank, p->d);
  loom_tpb_buffer(b, "X", t, rank, p->d);
  const loom_sym_expr *na = loom_sym_const(cx, rt->na), *nr = loom_sym_const(cx, rank);
  p->P = loom_tpb_buffer(b, "P", rt->p_t, 1, &na);
  p->out = loom_tpb_buffer(b, out, out_t, 1, &nr);
  for (int j = 0; j < rt->na; j++) {
    loom_tp_expr *v = CAST(LOOM_DTYPE_F64, AT(p->P, j));
    if (rt->sizes) v = OP2(DIV, v, CAST(LOOM_DTYPE_F64, IDX(loom_sym_max(cx, p->d[rt->axes[j]], loom_sym_const(cx, 1)))));
    p->s[j] = LETF(v, "s%d", j);
  }
  p->sel = NULL;
  if (!rt->sizes || rt->policy == LOOM_TP_RESIZE_STRETCH || !rt->na) return;
  loom_tp_op f = rt->policy == LOOM_TP_RESIZE_NOT_LARGER ? LOOM_TP_OP_MIN : LOOM_TP_OP_MAX;
  loom_tp_expr *sel = R(p->s[rt->na - 1]);
  for (int j = rt->na - 2; j >= 0; j--) sel = loom_tp_op2(a, f, R(p->s[j]), sel);
  p->sel = loom_tpb_let(b, "sel", sel);
}

/* D (rank,) i64 = the extents: D[k] = d<k> (not resized); select(bad, -1, i64(s<j> * f64(d<k>))) (scales);
 * select(bad, -1, P[j]) (sizes, stretch); select(bad, -1, i64(sel * f64(d<k>) + 0.5)) (sizes, a policy);
 * with what the reference refuses: let bad: bool = !(s0 > 0.0) || .. (scales; a scale not > 0, NaN too),
 * P[0] < 0 || d<axis> == 0 || .. (sizes: a negative size, a size for an empty axis), false without axes. */
loom_status loom_tp_gen_resize_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                    const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  rt_prog p;
  rt_head(&p, a, cx, name, t, rank, rt, "D", LOOM_DTYPE_I64);
  loom_tpb *b = &p.b;
  loom_tp_expr *bad = NULL;
  for (int j = 0; j < rt->na; j++) {
    if (rt->sizes) {
      bad = bad ? OP2(OR, bad, OP2(LT, AT(p.P, j), I(0))) : OP2(LT, AT(p.P, j), I(0));
      bad = OP2(OR, bad, loom_tpb_cmp(b, LOOM_TP_OP_EQ, p.d[rt->axes[j]], loom_sym_const(cx, 0)));
    } else {
      loom_tp_expr *c = OP1(NOT, OP2(GT, R(p.s[j]), F(0.0)));
      bad = bad ? OP2(OR, bad, c) : c;
    }
  }
  bad = loom_tpb_let(b, "bad", bad ? bad : loom_tp_const_i(a, LOOM_DTYPE_BOOL, 0));
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    loom_tp_expr *v;
    if (j < 0) {
      loom_tpb_store_at(b, p.out, k, IDX(p.d[k]));
      continue;
    }
    if (!rt->sizes) v = CAST(LOOM_DTYPE_I64, OP2(MUL, R(p.s[j]), CAST(LOOM_DTYPE_F64, IDX(p.d[k]))));
    else if (rt->policy == LOOM_TP_RESIZE_STRETCH) v = AT(p.P, j);
    else v = CAST(LOOM_DTYPE_I64, OP2(ADD, OP2(MUL, R(p.sel), CAST(LOOM_DTYPE_F64, IDX(p.d[k]))), F(0.5)));
    loom_tpb_store_at(b, p.out, k, SEL(R(bad), I(-1), v));
  }
  return loom_tpb_finish(b, result);
}

/* S (rank,) f64: S[k] = 1.0 (not resized), sel (sizes under a policy) or s<j>. */
loom_status loom_tp_gen_resize_scales(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                      const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  rt_prog p;
  rt_head(&p, a, cx, name, t, rank, rt, "S", LOOM_DTYPE_F64);
  loom_tpb *b = &p.b;
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    loom_tpb_store_at(b, p.out, k, j < 0 ? F(1.0) : p.sel ? R(p.sel) : R(p.s[j]));
  }
  return loom_tpb_finish(b, result);
}

/* R: Buffer[(2*na,), roi_t], Q: Buffer[(2*rank,), f64] -> Q[k] = f64(R[j])  Q[rank + k] = f64(R[na + j])
 * (resized axis k at position j), Q[k] = 0.0  Q[rank + k] = 1.0 (not resized). */
loom_status loom_tp_gen_resize_roi(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype roi_t, int rank,
                                   const loom_tp_resize_rt *rt, loom_tp_func **result) {
  LOOM_PROPAGATE(rt_check(rank, rt));
  if (!loom_dtype_is_float(roi_t)) return LOOM_ERROR(INVALID_ARGUMENT, "resize: roi of dtype %s", loom_dtype_name(roi_t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *nr = loom_sym_const(cx, 2 * rt->na), *nq = loom_sym_const(cx, 2 * rank);
  const loom_tp_buffer *Rb = loom_tpb_buffer(b, "R", roi_t, 1, &nr), *Q = loom_tpb_buffer(b, "Q", LOOM_DTYPE_F64, 1, &nq);
  for (int k = 0; k < rank; k++) {
    int j = rt_index(rt, k);
    loom_tpb_store_at(b, Q, k, j < 0 ? F(0.0) : CAST(LOOM_DTYPE_F64, AT(Rb, j)));
    loom_tpb_store_at(b, Q, rank + k, j < 0 ? F(1.0) : CAST(LOOM_DTYPE_F64, AT(Rb, rt->na + j)));
  }
  return loom_tpb_finish(b, result);
}

/* resize2d (N, C, H, W) -> (N, C, y0, y1), as graph/op_conv.c's reference: nearest takes
 * floor(i * H / y0) (clamped), linear the half-pixel bilinear blend of the clamped corners. An
 * empty input plane gives zeros:
 *   X: (n, c, h, w), Y: (n, c, y0, y1) -> for i0 in 0..n parallel { for i1 in 0..c { for j0 in 0..y0 { for j1 in 0..y1 {
 *     if h > 0 && w > 0 {
 *       nearest: let s0: i64 = min(i64(floor(f64(j0) * f64(h) / f64(y0))), h - 1)  s1 (w, y1) ..  Y[i0, i1, j0, j1] = X[i0, i1, s0, s1]
 *       linear, per axis k (extent h, w): let f<k>: f64 = max((f64(j<k>) + 0.5) * f64(h) / f64(y<k>) - 0.5, 0.0)
 *         let p<k>: i64 = min(i64(f<k>), h - 1)  let q<k>: i64 = min(p<k> + 1, h - 1)  let l<k>: f64 = min(f<k> - f64(p<k>), 1.0)
 *         Y[..] = t((1.0 - l0) * ((1.0 - l1) * f64(X[i0, i1, p0, p1]) + l1 * f64(X[i0, i1, p0, q1]))
 *                   + l0 * ((1.0 - l1) * f64(X[i0, i1, q0, p1]) + l1 * f64(X[i0, i1, q0, q1])))
 *     } else { Y[i0, i1, j0, j1] = t(0) } } } } } */
loom_status loom_tp_gen_resize2d(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, bool linear,
                                 loom_tp_func **result) {
  if (linear && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "resize2d: linear interpolation of %s data is not supported", loom_dtype_name(t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *xd[4], *yd[4];
  static const char *const xn[4] = {"n", "c", "h", "w"}, *const yn[4] = {"n", "c", "y0", "y1"}, *const vn[4] = {"i0", "i1", "j0", "j1"};
  for (int k = 0; k < 4; k++) xd[k] = loom_tpb_shape_sym(b, xn[k]);
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", t, 4, xd);
  for (int k = 0; k < 4; k++) yd[k] = loom_tpb_shape_sym(b, yn[k]);
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, 4, yd);
  loom_tp_expr *yi[4];
  for (int k = 0; k < 4; k++) yi[k] = IDX(loom_tpb_for(b, vn[k], yd[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  const loom_sym_expr *zero = loom_sym_const(cx, 0), *one = loom_sym_const(cx, 1);
  loom_tpb_if(b, OP2(AND, loom_tpb_cmp(b, LOOM_TP_OP_GT, xd[2], zero), loom_tpb_cmp(b, LOOM_TP_OP_GT, xd[3], zero)));
#define F64OF(e) CAST(LOOM_DTYPE_F64, (e))
  if (!linear) {
    loom_tp_expr *s[2];
    for (int k = 0; k < 2; k++) {
      loom_tp_expr *src = OP2(DIV, OP2(MUL, F64OF(R(yi[2 + k])), F64OF(IDX(xd[2 + k]))), F64OF(IDX(yd[2 + k])));
      s[k] = LETF(OP2(MIN, CAST(LOOM_DTYPE_I64, OP1(FLOOR, src)), IDX(loom_sym_sub(cx, xd[2 + k], one))), "s%d", k);
    }
    loom_tpb_store(b, Y, yi, loom_tpb_load(b, X, (loom_tp_expr *[]){yi[0], yi[1], s[0], s[1]}));
  } else {
    loom_tp_expr *p[2], *q[2], *l[2];
    for (int k = 0; k < 2; k++) {
      const loom_sym_expr *top = loom_sym_sub(cx, xd[2 + k], one);
      loom_tp_expr *src = OP2(SUB, OP2(DIV, OP2(MUL, OP2(ADD, F64OF(R(yi[2 + k])), F(0.5)), F64OF(IDX(xd[2 + k]))), F64OF(IDX(yd[2 + k]))), F(0.5));
      loom_tp_expr *f = LETF(OP2(MAX, src, F(0.0)), "f%d", k);
      p[k] = LETF(OP2(MIN, CAST(LOOM_DTYPE_I64, R(f)), IDX(top)), "p%d", k);
      q[k] = LETF(OP2(MIN, OP2(ADD, R(p[k]), I(1)), IDX(top)), "q%d", k);
      l[k] = LETF(OP2(MIN, OP2(SUB, R(f), F64OF(R(p[k]))), F(1.0)), "l%d", k);
    }
#define XL(r, c) F64OF(loom_tpb_load(b, X, (loom_tp_expr *[]){yi[0], yi[1], R(r), R(c)}))
#define ROW(r) OP2(ADD, OP2(MUL, OP2(SUB, F(1.0), R(l[1])), XL(r, p[1])), OP2(MUL, R(l[1]), XL(r, q[1])))
    loom_tp_expr *v = OP2(ADD, OP2(MUL, OP2(SUB, F(1.0), R(l[0])), ROW(p[0])), OP2(MUL, R(l[0]), ROW(q[0])));
#undef XL
#undef ROW
    loom_tpb_store(b, Y, yi, CAST(t, v));
  }
#undef F64OF
  loom_tpb_else(b);
  loom_tpb_store(b, Y, yi, CAST(t, I(0)));
  return loom_tpb_finish(b, result);
}

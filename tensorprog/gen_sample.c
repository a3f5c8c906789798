/* gen_sample.c — the grid_sample generator: X (n, c, h..) sampled at the normalised coordinates
 * of G (n, o.., ns) into Y (n, c, o..), as graph/op_image.c's reference (nearest, linear and
 * cubic taps; zeros, border and reflection padding). Built directly as IR (tp_build.h); the
 * comments show the program's text (f64 literals written 1.0 for 1.0f64). */
#include <stdio.h>

#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define OP1(op, x) loom_tp_op1(b->a, LOOM_TP_OP_##op, (x))
#define SEL(c, x, y) loom_tp_select(b->a, (c), (x), (y))
#define CAST(t, e) loom_tp_cast(b->a, (t), (e))
#define F(v) loom_tpg_f64(b, (v))
#define I(v) loom_tpb_cidx(b, (v))
#define IDX(s) loom_tpb_idx(b, (s))
#define R(e) loom_tpb_dup(b, (e))
#define LETF(v, ...) loom_tpg_letf(b, (v), __VA_ARGS__)

/* Lets reflecting the f64 value x into [lo, hi] by the nearer border until it lies inside (the
 * reference's gs_reflect); the result is the let rf<tag>:
 *   let rn<tag>: f64 = hi - lo
 *   let dl<tag>: f64 = lo - x  let kl<tag>: i64 = i64(dl<tag> / rn<tag>)  let rl<tag>: f64 = dl<tag> - f64(kl<tag>) * rn<tag>
 *   let dh<tag>: f64 = x - hi  let kh<tag>: i64 = i64(dh<tag> / rn<tag>)  let rh<tag>: f64 = dh<tag> - f64(kh<tag>) * rn<tag>
 *   let rf<tag>: f64 = select(x < lo, select(kl<tag> % 2 == 0, lo + rl<tag>, hi - rl<tag>),
 *                             select(x > hi, select(kh<tag> % 2 == 0, hi - rh<tag>, lo + rh<tag>), x))
 * (x and hi are lets, lo an f64 constant). */
static loom_tp_expr *reflect_lets(loom_tpb *b, const loom_tp_expr *x, double lo, const loom_tp_expr *hi, const char *tag) {
  loom_tp_expr *rn = LETF(OP2(SUB, R(hi), F(lo)), "rn%s", tag);
  loom_tp_expr *dl = LETF(OP2(SUB, F(lo), R(x)), "dl%s", tag);
  loom_tp_expr *kl = LETF(CAST(LOOM_DTYPE_I64, OP2(DIV, R(dl), R(rn))), "kl%s", tag);
  loom_tp_expr *rl = LETF(OP2(SUB, R(dl), OP2(MUL, CAST(LOOM_DTYPE_F64, R(kl)), R(rn))), "rl%s", tag);
  loom_tp_expr *dh = LETF(OP2(SUB, R(x), R(hi)), "dh%s", tag);
  loom_tp_expr *kh = LETF(CAST(LOOM_DTYPE_I64, OP2(DIV, R(dh), R(rn))), "kh%s", tag);
  loom_tp_expr *rh = LETF(OP2(SUB, R(dh), OP2(MUL, CAST(LOOM_DTYPE_F64, R(kh)), R(rn))), "rh%s", tag);
#define EVEN(k) OP2(EQ, OP2(MOD, R(k), I(2)), I(0))
  loom_tp_expr *below = SEL(EVEN(kl), OP2(ADD, F(lo), R(rl)), OP2(SUB, R(hi), R(rl)));
  loom_tp_expr *above = SEL(EVEN(kh), OP2(SUB, R(hi), R(rh)), OP2(ADD, F(lo), R(rh)));
#undef EVEN
  return LETF(SEL(OP2(LT, R(x), F(lo)), below, SEL(OP2(GT, R(x), R(hi)), above, R(x))), "rf%s", tag);
}

/* X: (n, c, h0..), G: (n, o0.., ns), Y: (n, c, o0..) ->
 *   for i0 in 0..n parallel { for j0 in 0..o0 { .. if h0 > 0 && .. {       (an empty input plane: the result 0)
 *     per spatial axis i (reading grid component ns - 1 - i: the grid lists x first):
 *       let v<i>: f64 = f64(G[i0, j.., ns - 1 - i])  let dm<i>: f64 = f64(h<i>)  let hi<i>: f64 = dm<i> - 1.0 (0.5 without align_corners)
 *       let ca<i>: f64 = f64(f32((v<i> + 1.0) / 2.0 * (dm<i> - 1.0)))  (align_corners; else f64(f32(((v<i> + 1.0) * dm<i> - 1.0) / 2.0)):
 *         the reference rounds the unnormalised coordinate to f32
 *       let cb<i>: f64 = round(ca<i>) (nearest) / ca<i>
 *       let cc<i>: f64 = cb<i> (zeros) / select(cb<i> < lo || cb<i> > hi<i>, min(max(cb<i>, 0.0), dm<i> - 1.0), cb<i>) (border)
 *         / <reflect_lets of cb<i>, tag i> then rf<i> (reflection); lo = 0.0 (align_corners) or -0.5
 *       nearest: let b<i>: i64 = i64(cc<i>)
 *       else: let fl<i>: f64 = floor(cc<i>)  let q<i>: f64 = cc<i> - fl<i>  let b<i>: i64 = i64(fl<i>) [- 1 cubic]
 *         linear: let w<i>_0: f64 = 1.0 - q<i>  let w<i>_1: f64 = q<i>
 *         cubic: let u<i>_j: f64 = abs(<cubic distance>)  let w<i>_j: f64 = <cubic weight of u<i>_j, A = -0.75> ..
 *       per tap j, its index under the padding mode (ok: inside the input, else the tap adds nothing):
 *         let k<i>_j: i64 = b<i> + j (zeros) / min(max(b<i> + j, 0), h<i> - 1) (border)
 *           / let p<i>_j: f64 = f64(b<i> + j) <reflect_lets of p<i>_j, tag i_j> let k<i>_j: i64 = i64(rf<i>_j) (reflection)
 *         let ok<i>_j: bool = k<i>_j >= 0 && k<i>_j < h<i>  let x<i>_j: i64 = min(max(k<i>_j, 0), h<i> - 1)
 *     for i1 in 0..c { Y[i0, i1, j..] = t(select(ok0_0 && ok1_0, w0_0 * w1_0 * f64(X[i0, i1, x0_0, x1_0]), 0.0) + ..) }
 *   } else { for i1z in 0..c { Y[i0, i1z, j..] = t(0) } } .. } */
loom_status loom_tp_gen_grid_sample(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype grid_t,
                                    const loom_tp_grid_sample *gs, loom_tp_func **result) {
  int ns = gs->n;
  if (ns < 1 || ns > 3) return LOOM_ERROR(INVALID_ARGUMENT, "grid_sample: %d spatial axes (1 to 3 supported)", ns);
  if (!loom_dtype_is_float(t) || !loom_dtype_is_float(grid_t))
    return LOOM_ERROR(INVALID_ARGUMENT, "grid_sample: operands of %s and %s (floats needed)", loom_dtype_name(t), loom_dtype_name(grid_t));
  int n = gs->mode == LOOM_TP_RESIZE_CUBIC ? 4 : gs->mode == LOOM_TP_RESIZE_LINEAR ? 2 : 1, terms = 1;
  for (int i = 0; i < ns; i++) terms *= n;
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  static const char *const hn[3] = {"h0", "h1", "h2"}, *const on[3] = {"o0", "o1", "o2"}, *const jn[3] = {"j0", "j1", "j2"};
  const loom_sym_expr *nn = loom_tpb_shape_sym(b, "n"), *c = loom_tpb_shape_sym(b, "c"), *h[3], *o[3], *d[5];
  d[0] = nn;
  d[1] = c;
  for (int i = 0; i < ns; i++) d[2 + i] = h[i] = loom_tpb_shape_sym(b, hn[i]);
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", t, 2 + ns, d);
  for (int i = 0; i < ns; i++) d[1 + i] = o[i] = loom_tpb_shape_sym(b, on[i]);
  d[1 + ns] = loom_sym_const(cx, ns);
  const loom_tp_buffer *G = loom_tpb_buffer(b, "G", grid_t, 2 + ns, d);
  d[1] = c;
  for (int i = 0; i < ns; i++) d[2 + i] = o[i];
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, 2 + ns, d);
  loom_tp_expr *yi[5], *gi[5];
  yi[0] = gi[0] = IDX(loom_tpb_for(b, "i0", nn, LOOM_TP_LOOP_PARALLEL, false));
  for (int i = 0; i < ns; i++) yi[2 + i] = gi[1 + i] = IDX(loom_tpb_for(b, jn[i], o[i], LOOM_TP_LOOP_SERIAL, false));
  /* an empty input plane: every tap is outside, the result 0 */
  const loom_sym_expr *zero = loom_sym_const(cx, 0), *one = loom_sym_const(cx, 1);
  loom_tp_expr *cond = NULL;
  for (int i = 0; i < ns; i++) {
    loom_tp_expr *ci = loom_tpb_cmp(b, LOOM_TP_OP_GT, h[i], zero);
    cond = cond ? OP2(AND, cond, ci) : ci;
  }
  loom_tpb_if(b, cond);
  bool ac = gs->align_corners;
  double lo = ac ? 0.0 : -0.5;
  loom_tp_expr *w[3][4], *ok[3][4], *xk[3][4];
  for (int i = 0; i < ns; i++) {
    const loom_sym_expr *top = loom_sym_sub(cx, h[i], one);
    gi[1 + ns] = I(ns - 1 - i);
    loom_tp_expr *v = LETF(CAST(LOOM_DTYPE_F64, loom_tpb_load(b, G, gi)), "v%d", i);
    loom_tp_expr *dm = LETF(CAST(LOOM_DTYPE_F64, IDX(h[i])), "dm%d", i);
    loom_tp_expr *hi = LETF(OP2(SUB, R(dm), F(ac ? 1.0 : 0.5)), "hi%d", i);
    loom_tp_expr *un = ac ? OP2(MUL, OP2(DIV, OP2(ADD, R(v), F(1.0)), F(2.0)), OP2(SUB, R(dm), F(1.0)))
                          : OP2(DIV, OP2(SUB, OP2(MUL, OP2(ADD, R(v), F(1.0)), R(dm)), F(1.0)), F(2.0));
    loom_tp_expr *ca = LETF(CAST(LOOM_DTYPE_F64, CAST(LOOM_DTYPE_F32, un)), "ca%d", i);
    loom_tp_expr *cb = LETF(gs->mode == LOOM_TP_RESIZE_NEAREST ? OP1(ROUND, R(ca)) : R(ca), "cb%d", i), *cc = NULL;
    char tag[16];
    switch (gs->padding) {
      case LOOM_TP_GRID_ZEROS: cc = LETF(R(cb), "cc%d", i); break;
      case LOOM_TP_GRID_BORDER: {
        loom_tp_expr *out = OP2(OR, OP2(LT, R(cb), F(lo)), OP2(GT, R(cb), R(hi)));
        cc = LETF(SEL(out, OP2(MIN, OP2(MAX, R(cb), F(0.0)), OP2(SUB, R(dm), F(1.0))), R(cb)), "cc%d", i);
        break;
      }
      case LOOM_TP_GRID_REFLECTION:
        snprintf(tag, sizeof tag, "%d", i);
        cc = LETF(R(reflect_lets(b, cb, lo, hi, tag)), "cc%d", i);
        break;
    }
    loom_tp_expr *bi;
    if (gs->mode == LOOM_TP_RESIZE_NEAREST) {
      bi = LETF(CAST(LOOM_DTYPE_I64, R(cc)), "b%d", i);
    } else {
      loom_tp_expr *fl = LETF(OP1(FLOOR, R(cc)), "fl%d", i);
      loom_tp_expr *q = LETF(OP2(SUB, R(cc), R(fl)), "q%d", i);
      loom_tp_expr *first = CAST(LOOM_DTYPE_I64, R(fl));
      bi = LETF(gs->mode == LOOM_TP_RESIZE_CUBIC ? OP2(SUB, first, I(1)) : first, "b%d", i);
      if (gs->mode == LOOM_TP_RESIZE_LINEAR) {
        w[i][0] = LETF(OP2(SUB, F(1.0), R(q)), "w%d_0", i);
        w[i][1] = LETF(R(q), "w%d_1", i);
      } else {
        for (int j = 0; j < 4; j++) {
          loom_tp_expr *u = LETF(OP1(ABS, loom_tpg_cubic_dist(b, q, j)), "u%d_%d", i, j);
          w[i][j] = LETF(loom_tpg_cubic_weight(b, u, -0.75), "w%d_%d", i, j);
        }
      }
    }
    for (int j = 0; j < n; j++) {
      /* the tap's index under the padding mode; ok: inside the input (else the tap adds nothing) */
      loom_tp_expr *k = NULL, *at = OP2(ADD, R(bi), I(j));
      switch (gs->padding) {
        case LOOM_TP_GRID_ZEROS: k = LETF(at, "k%d_%d", i, j); break;
        case LOOM_TP_GRID_BORDER: k = LETF(OP2(MIN, OP2(MAX, at, I(0)), IDX(top)), "k%d_%d", i, j); break;
        case LOOM_TP_GRID_REFLECTION: {
          loom_tp_expr *p = LETF(CAST(LOOM_DTYPE_F64, at), "p%d_%d", i, j);
          snprintf(tag, sizeof tag, "%d_%d", i, j);
          k = LETF(CAST(LOOM_DTYPE_I64, R(reflect_lets(b, p, lo, hi, tag))), "k%d_%d", i, j);
          break;
        }
      }
      ok[i][j] = LETF(OP2(AND, OP2(GE, R(k), I(0)), OP2(LT, R(k), IDX(h[i]))), "ok%d_%d", i, j);
      xk[i][j] = LETF(OP2(MIN, OP2(MAX, R(k), I(0)), IDX(top)), "x%d_%d", i, j);
    }
  }
  yi[1] = IDX(loom_tpb_for(b, "i1", c, LOOM_TP_LOOP_SERIAL, false));
  int tap[3] = {0, 0, 0};
  loom_tp_expr *sum = NULL, *xi[5];
  xi[0] = yi[0];
  xi[1] = yi[1];
  for (int term = 0; term < terms; term++) {
    loom_tp_expr *inside = NULL, *wt = NULL;
    for (int i = 0; i < ns; i++) {
      inside = inside ? OP2(AND, inside, R(ok[i][tap[i]])) : R(ok[i][tap[i]]);
      if (gs->mode != LOOM_TP_RESIZE_NEAREST) wt = wt ? OP2(MUL, wt, R(w[i][tap[i]])) : R(w[i][tap[i]]);
      xi[2 + i] = R(xk[i][tap[i]]);
    }
    loom_tp_expr *x = CAST(LOOM_DTYPE_F64, loom_tpb_load(b, X, xi));
    loom_tp_expr *e = SEL(inside, wt ? OP2(MUL, wt, x) : x, F(0.0));
    sum = sum ? OP2(ADD, sum, e) : e;
    for (int i = ns - 1; i >= 0; i--) {
      if (++tap[i] < n) break;
      tap[i] = 0;
    }
  }
  loom_tpb_store(b, Y, yi, CAST(t, sum));
  loom_tpb_end(b);
  loom_tpb_else(b);
  yi[1] = IDX(loom_tpb_for(b, "i1z", c, LOOM_TP_LOOP_SERIAL, false));
  loom_tpb_store(b, Y, yi, CAST(t, I(0)));
  return loom_tpb_finish(b, result);
}

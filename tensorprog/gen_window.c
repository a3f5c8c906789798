/* gen_window.c — generators of the sliding-window programs over (N, C, spatial...) tensors:
 * N-d convolution and N-d pooling (max, argmax, average with or without counted padding, Lp).
 * Spatial dims are named h<i> (input), k<i> (kernel), y<i> (output); output loops j<i>, window
 * loops r<i>. Every extent stays symbolic; strides, dilations and padding are constants.
 * Programs are built directly as IR (tp_build.h); each generator's comment shows its text. */
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

/* The flat input index of tap q (argmax): channel-major, then the spatial axes row-major
 * (Horner: ((i0*c + i1)*h0 + q0)*h1 + q1 ...), or column-major over the spatial axes when
 * col_major (ONNX storage_order 1): (i0*c + i1)*h0*h1.. + q0 + q1*h0 + ... */
static const loom_sym_expr *flat_index(loom_sym_ctx *cx, const conv_b *v, const loom_sym_expr *const *q, int n,
                                       bool col_major) {
  const loom_sym_expr *f = loom_sym_add(cx, loom_sym_mul(cx, v->i0, v->c), v->i1);
  if (!col_major) {
    for (int i = 0; i < n; i++) f = loom_sym_add(cx, loom_sym_mul(cx, f, v->h[i]), q[i]);
    return f;
  }
  for (int i = 0; i < n; i++) f = loom_sym_mul(cx, f, v->h[i]);
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *term = q[i];
    for (int k = 0; k < i; k++) term = loom_sym_mul(cx, term, v->h[k]);
    f = loom_sym_add(cx, f, term);
  }
  return f;
}

/* e converted to t, or e itself when it already is of t. */
static loom_tp_expr *conv_to(loom_arena *a, loom_dtype t, loom_dtype from, loom_tp_expr *e) {
  return t == from ? e : loom_tp_cast(a, t, e);
}

/* st(x.0): a float literal converted (as the text "f32(1.0)" parses: a cast of an f32 constant). */
static loom_tp_expr *fcast(loom_arena *a, loom_dtype st, double x) {
  return loom_tp_cast(a, st, loom_tp_const_f(a, LOOM_DTYPE_F32, x));
}

/* Statistics in st (t for max and argmax, else f32 / f64); taps q<i> = j<i>*s + r<i>*d - off<i>:
 *   for i0 in 0..n parallel { for i1 in 0..c { for j<i> in 0..y<i> {
 *     alloc S: Local[(2,), st]  [S[0] = init (max)]  [alloc A: Local[(1,), i64]  A[0] = -1 (argmax)]
 *     for r<i> in 0..kernel<i> reduce {
 *       if q<i> >= 0 && q<i> < h<i> ... [&& j<i>*s + r<i>*d < h<i> + pads (average, Lp)] {
 *         max: S[0] = max(S[0], X[i0, i1, q..])
 *         argmax: if A[0] < 0 || X[..] > S[0] { S[0] = X[..]  A[0] = flat index }
 *         avg: S[0] = S[0] + C(X[..])  [S[1] = S[1] + st(1.0) (not avg_pad)]
 *         Lp: S[0] = S[0] + pow(abs(C(X[..])), st(p.0)) }
 *       [avg_pad: if j<i>*s + r<i>*d < h<i> + pads ... { S[1] = S[1] + st(1.0) }] }
 *     Y[i0, i1, j..] = S[0] | A[0] | T(select(S[1] > st(0.0), S[0] / S[1], st(0.0))) | T(pow(S[0], st(1.0) / st(p.0))) */
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
  loom_dtype st = max ? t : loom_tpg_stat_type(t);
  conv_b v = {0};
  loom_tpb *b = &v.b;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *xd[2 + LOOM_TP_MAX_SPATIAL], *yd[2 + LOOM_TP_MAX_SPATIAL];
  xd[0] = v.n = loom_tpb_shape_sym(b, "n");
  xd[1] = v.c = loom_tpb_shape_sym(b, "c");
  for (int i = 0; i < n; i++) xd[2 + i] = v.h[i] = loom_tpb_shape_sym(b, spatial_names[0][i]);
  v.X = loom_tpb_buffer(b, "X", t, 2 + n, xd);
  yd[0] = v.n;
  yd[1] = v.c;
  for (int i = 0; i < n; i++) yd[2 + i] = loom_tpb_shape_sym(b, spatial_names[2][i]);
  v.Y = loom_tpb_buffer(b, "Y", kind == LOOM_TP_POOL_ARGMAX ? LOOM_DTYPE_I64 : t, 2 + n, yd);
  v.i0 = loom_tpb_for(b, "i0", v.n, LOOM_TP_LOOP_PARALLEL, false);
  v.i1 = loom_tpb_for(b, "i1", v.c, LOOM_TP_LOOP_SERIAL, false);
  for (int i = 0; i < n; i++) v.j[i] = loom_tpb_for(b, spatial_names[3][i], yd[2 + i], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *two = C(cx, 2), *one = C(cx, 1);
  const loom_tp_buffer *S = loom_tpb_alloc(b, "S", st, 1, &two, LOOM_TP_SCOPE_LOCAL), *A = NULL;
  loom_tp_expr *i0 = loom_tpb_idx(b, C(cx, 0)), *i1 = loom_tpb_idx(b, one); /* S[0], S[1] */
  if (max) loom_tpb_store(b, S, &i0, loom_tpg_reduce_init(b, LOOM_TP_REDUCE_MAX, t));
  if (kind == LOOM_TP_POOL_ARGMAX) {
    A = loom_tpb_alloc(b, "A", LOOM_DTYPE_I64, 1, &one, LOOM_TP_SCOPE_LOCAL);
    loom_tpb_store(b, A, &i0, loom_tpb_lit_i(b, LOOM_DTYPE_I64, -1));
  }
  const loom_sym_expr *r[LOOM_TP_MAX_SPATIAL], *q[LOOM_TP_MAX_SPATIAL], *reach[LOOM_TP_MAX_SPATIAL];
  for (int i = 0; i < n; i++) r[i] = loom_tpb_for(b, spatial_names[4][i], C(cx, w->kernel[i]), LOOM_TP_LOOP_SERIAL, true);
  for (int i = 0; i < n; i++) {
    const loom_sym_expr *jr = loom_sym_add(cx, loom_sym_mul(cx, v.j[i], C(cx, w->stride[i])), loom_sym_mul(cx, r[i], C(cx, w->dilation[i])));
    q[i] = loom_sym_sub(cx, jr, C(cx, w->pad_lo[i] + (max ? 0 : w->shift[i])));
    reach[i] = jr;
  }
  /* Average and Lp count a tap only before the end of the padded input (ceil mode's extra
   * windows reach past it): j*s + r*d < h + pad_lo + pad_hi. */
  loom_tp_expr *cond = NULL, *counted = NULL;
  for (int i = 0; i < n; i++) {
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_GE, q[i], C(cx, 0)));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_LT, q[i], v.h[i]));
  }
  for (int i = 0; i < n && !max; i++) {
    const loom_sym_expr *end = loom_sym_add(cx, v.h[i], C(cx, w->pad_lo[i] + w->pad_hi[i]));
    cond = and_(a, cond, cmp(b, LOOM_TP_OP_LT, reach[i], end));
    if (kind == LOOM_TP_POOL_AVG_PAD) counted = and_(a, counted, cmp(b, LOOM_TP_OP_LT, reach[i], end));
  }
  loom_tp_expr *xi[2 + LOOM_TP_MAX_SPATIAL];
  xi[0] = loom_tpb_idx(b, v.i0);
  xi[1] = loom_tpb_idx(b, v.i1);
  for (int i = 0; i < n; i++) xi[2 + i] = loom_tpb_idx(b, q[i]);
  loom_tpb_if(b, cond);
  switch (kind) {
    case LOOM_TP_POOL_MAX:
      loom_tpb_store(b, S, &i0, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tpb_load(b, S, &i0), loom_tpb_load(b, v.X, xi)));
      break;
    case LOOM_TP_POOL_ARGMAX: {
      loom_tp_expr *first = loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_load(b, A, &i0), loom_tpb_idx(b, C(cx, 0)));
      loom_tp_expr *better = loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_load(b, v.X, xi), loom_tpb_load(b, S, &i0));
      loom_tpb_if(b, loom_tp_op2(a, LOOM_TP_OP_OR, first, better));
      loom_tpb_store(b, S, &i0, loom_tpb_load(b, v.X, xi));
      loom_tpb_store(b, A, &i0, loom_tpb_idx(b, flat_index(cx, &v, q, n, pool->col_major)));
      loom_tpb_end(b);
      break;
    }
    case LOOM_TP_POOL_AVG:
    case LOOM_TP_POOL_AVG_PAD:
      loom_tpb_store(b, S, &i0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, S, &i0), conv_to(a, st, t, loom_tpb_load(b, v.X, xi))));
      if (kind == LOOM_TP_POOL_AVG)
        loom_tpb_store(b, S, &i1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, S, &i1), fcast(a, st, 1.0)));
      break;
    case LOOM_TP_POOL_LP: {
      loom_tp_expr *x = loom_tp_op1(a, LOOM_TP_OP_ABS, conv_to(a, st, t, loom_tpb_load(b, v.X, xi)));
      loom_tp_expr *pw = loom_tp_op2(a, LOOM_TP_OP_POW, x, fcast(a, st, (double)pool->p));
      loom_tpb_store(b, S, &i0, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, S, &i0), pw));
      break;
    }
  }
  loom_tpb_end(b);
  if (kind == LOOM_TP_POOL_AVG_PAD) {
    /* every tap before the padded end counts, inside the input or not */
    loom_tpb_if(b, counted);
    loom_tpb_store(b, S, &i1, loom_tp_op2(a, LOOM_TP_OP_ADD, loom_tpb_load(b, S, &i1), fcast(a, st, 1.0)));
    loom_tpb_end(b);
  }
  loom_tpb_end_n(b, n);
  loom_tp_expr *yi[2 + LOOM_TP_MAX_SPATIAL], *out = NULL;
  yi[0] = loom_tpb_idx(b, v.i0);
  yi[1] = loom_tpb_idx(b, v.i1);
  for (int i = 0; i < n; i++) yi[2 + i] = loom_tpb_idx(b, v.j[i]);
  switch (kind) {
    case LOOM_TP_POOL_MAX: out = loom_tpb_load(b, S, &i0); break;
    case LOOM_TP_POOL_ARGMAX: out = loom_tpb_load(b, A, &i0); break;
    case LOOM_TP_POOL_AVG:
    case LOOM_TP_POOL_AVG_PAD: {
      loom_tp_expr *some = loom_tp_op2(a, LOOM_TP_OP_GT, loom_tpb_load(b, S, &i1), fcast(a, st, 0.0));
      loom_tp_expr *mean = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(b, S, &i0), loom_tpb_load(b, S, &i1));
      out = conv_to(a, t, st, loom_tp_select(a, some, mean, fcast(a, st, 0.0)));
      break;
    }
    case LOOM_TP_POOL_LP: {
      loom_tp_expr *inv_p = loom_tp_op2(a, LOOM_TP_OP_DIV, fcast(a, st, 1.0), fcast(a, st, (double)pool->p));
      out = conv_to(a, t, st, loom_tp_op2(a, LOOM_TP_OP_POW, loom_tpb_load(b, S, &i0), inv_p));
      break;
    }
  }
  loom_tpb_store(b, v.Y, yi, out);
  return loom_tpb_finish(b, result);
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

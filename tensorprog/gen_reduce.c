/* gen_reduce.c — generators of reductions: sum/mean/max/min/prod over axes, softmax and
 * log_softmax, layer_norm and rms_norm, argmax/argmin and cumsum. Built directly as IR
 * (tp_build.h); each generator's comment shows the program's text. */
#include <math.h>
#include <string.h>

#include "tensorprog/gen_internal.h"

/* A copy of an expression for a second use (nodes are never shared). */
#define DUP(e) loom_tp_expr_copy(b.a, (e))

/* The index value of a constant. */
static loom_tp_expr *cidx(loom_tpb *b, int64_t v) { return loom_tpb_idx(b, loom_sym_const(b->cx, v)); }

/* e converted to t, or e itself when it already is of t (the generators' "%s(...)" with an
 * empty cast name). */
static loom_tp_expr *conv(loom_arena *a, loom_dtype t, loom_dtype from, loom_tp_expr *e) {
  return t == from ? e : loom_tp_cast(a, t, e);
}

/* The product of dims[k] for k in ks (folded into one symbolic expression; 1 when empty). */
static const loom_sym_expr *dims_product(loom_sym_ctx *cx, const loom_sym_expr *const *dims, const int *ks, int n) {
  if (n == 0) return loom_sym_const(cx, 1);
  const loom_sym_expr *p = dims[ks[0]];
  for (int k = 1; k < n && p; k++) p = loom_sym_mul(cx, p, dims[ks[k]]);
  return p;
}

/* 1-element local `name` of dtype t: `alloc name: Local[(1,), t]` (n = 2: two elements). */
static const loom_tp_buffer *local(loom_tpb *b, const char *name, loom_dtype t, int64_t n) {
  const loom_sym_expr *d = loom_sym_const(b->cx, n);
  return loom_tpb_alloc(b, name, t, 1, &d, LOOM_TP_SCOPE_LOCAL);
}

/* buf[k] for a one-axis local. */
static loom_tp_expr *at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k) {
  loom_tp_expr *i = cidx(b, k);
  return loom_tpb_load(b, buf, &i);
}

static void store_at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k, loom_tp_expr *v) {
  loom_tp_expr *i = cidx(b, k);
  loom_tpb_store(b, buf, &i, v);
}

/* The operation that folds one more element into a reduction's accumulator. */
static const loom_tp_op reduce_ops[] = {[LOOM_TP_REDUCE_SUM] = LOOM_TP_OP_ADD, [LOOM_TP_REDUCE_MEAN] = LOOM_TP_OP_ADD,
                                        [LOOM_TP_REDUCE_PROD] = LOOM_TP_OP_MUL, [LOOM_TP_REDUCE_MAX] = LOOM_TP_OP_MAX,
                                        [LOOM_TP_REDUCE_MIN] = LOOM_TP_OP_MIN};

/* Opens serial loops over axes[0..n) (iv[axes[k]] their indices): the trailing axes of a
 * columns form, innermost and unit-stride. */
static void open_axes(loom_tpb *b, const int *axes, int n, const loom_sym_expr *const *d, loom_tp_expr **iv) {
  for (int k = 0; k < n; k++)
    iv[axes[k]] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('i', axes[k]), d[axes[k]], LOOM_TP_LOOP_SERIAL, false));
}

/* The indices of a reduction's output for the input indices iv. */
static int out_index(loom_tpb *b, int rank, unsigned axes_mask, bool keepdims, loom_tp_expr *const *iv, loom_tp_expr **oi) {
  int no = 0;
  for (int k = 0; k < rank; k++) {
    bool r = axes_mask >> k & 1;
    if (!r || keepdims) oi[no++] = r ? cidx(b, 0) : iv[k];
  }
  return no;
}

/* The columns forms' outer loops: one over each axis before `axis` (the first parallel), xi[k]
 * their indices; trail[] the axes after it (the row). Returns their count. */
static int open_leading(loom_tpb *b, const loom_sym_expr *const *d, int rank, int axis, loom_tp_expr **xi, int *trail) {
  for (int k = 0; k < axis; k++)
    xi[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('i', k), d[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  int nt = 0;
  for (int k = axis + 1; k < rank; k++) trail[nt++] = k;
  return nt;
}

/* A reduction whose last axes are kept (over channels: (n, c, h, w) -> (n, 1, h, w)), as
 * columns: the reduced loops outside the kept trailing ones, so that the output's row is the
 * accumulator and every pass reads a unit-stride row of X (a per-element reduction down a
 * column read X at stride h*w; 2x ONNX Runtime's time):
 *   for i<kept axes before the last reduced> (the first parallel) {
 *     for i<trailing kept> { Y[o] = init }
 *     for r<reduced> reduce { for i<trailing kept> { Y[o] = Y[o] op X[i/r..] } }
 *     [for i<trailing kept> { Y[o] = Y[o] / t(prod of reduced dims) }] } */
static void reduce_columns(loom_tpb *b, loom_tp_reduce_op op, const loom_tp_buffer *X, const loom_tp_buffer *Y,
                           const loom_sym_expr *const *d, int rank, unsigned axes_mask, bool keepdims, const int *keep,
                           int nk, int nouter, const int *red, int nr) {
  loom_arena *a = b->a;
  loom_dtype t = X->dtype;
  loom_tp_expr *iv[LOOM_TP_GEN_MAX_RANK] = {0}, *oi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < nouter; k++)
    iv[keep[k]] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('i', keep[k]), d[keep[k]],
                                               k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  const int *inner = keep + nouter;
  int ni = nk - nouter;
  open_axes(b, inner, ni, d, iv);
  out_index(b, rank, axes_mask, keepdims, iv, oi);
  loom_tpb_store(b, Y, oi, loom_tpg_reduce_init(b, op, t));
  loom_tpb_end_n(b, ni);
  for (int k = 0; k < nr; k++)
    iv[red[k]] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('r', red[k]), d[red[k]], LOOM_TP_LOOP_SERIAL, true));
  open_axes(b, inner, ni, d, iv);
  out_index(b, rank, axes_mask, keepdims, iv, oi);
  loom_tpb_store(b, Y, oi, loom_tp_op2(a, reduce_ops[op], loom_tpb_load(b, Y, oi), loom_tpb_load(b, X, iv)));
  loom_tpb_end_n(b, ni + nr);
  if (op == LOOM_TP_REDUCE_MEAN) {
    open_axes(b, inner, ni, d, iv);
    out_index(b, rank, axes_mask, keepdims, iv, oi);
    loom_tp_expr *count = loom_tp_cast(a, t, loom_tpb_idx(b, dims_product(b->cx, d, red, nr)));
    loom_tpb_store(b, Y, oi, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(b, Y, oi), count));
    loom_tpb_end_n(b, ni);
  }
}

/*   for i<keep> ... { Y[o] = init; for r<red> ... reduce { Y[o] = Y[o] op X[i/r...] }
 *                     [Y[o] = Y[o] / t(prod of reduced dims)] }
 * o: i<k> for kept axes, 0 for reduced ones kept as 1 (just [0] for a full reduction); as
 * columns (reduce_columns) where kept axes come both before and after the reduced ones. */
loom_status loom_tp_gen_reduce(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                               int rank, unsigned axes_mask, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axes_mask >> rank) return LOOM_ERROR(INVALID_ARGUMENT, "reduction axes 0x%x exceed rank %d", axes_mask, rank);
  if (op == LOOM_TP_REDUCE_MEAN && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "mean of %s is not supported (use a float dtype)", loom_dtype_name(t));
  int keep[LOOM_TP_GEN_MAX_RANK], red[LOOM_TP_GEN_MAX_RANK], nk = 0, nr = 0;
  for (int k = 0; k < rank; k++) {
    if (axes_mask >> k & 1) red[nr++] = k;
    else keep[nk++] = k;
  }
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *od[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  int orank = 0;
  for (int k = 0; k < rank; k++) {
    bool r = axes_mask >> k & 1;
    if (!r || keepdims) od[orank++] = r ? loom_sym_const(cx, 1) : d[k];
  }
  if (orank == 0) od[0] = loom_sym_const(cx, 1); /* a full reduction to a 1-element tensor */
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, orank ? orank : 1, od);
  int nouter = 0; /* kept axes before the last reduced one */
  while (nr > 0 && nouter < nk && keep[nouter] < red[nr - 1]) nouter++;
  if (nouter > 0 && nouter < nk) {
    reduce_columns(&b, op, X, Y, d, rank, axes_mask, keepdims, keep, nk, nouter, red, nr);
    return loom_tpb_finish(&b, result);
  }
  loom_tp_expr *iv[LOOM_TP_GEN_MAX_RANK] = {0}, *xi[LOOM_TP_GEN_MAX_RANK], *oi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < nk; k++)
    iv[keep[k]] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', keep[k]), d[keep[k]],
                                                k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  int no = 0;
  for (int k = 0; k < rank; k++) {
    bool r = axes_mask >> k & 1;
    if (!r || keepdims) oi[no++] = r ? cidx(&b, 0) : iv[k];
  }
  if (orank == 0) oi[no++] = cidx(&b, 0);
  loom_tpb_store(&b, Y, oi, loom_tpg_reduce_init(&b, op, t));
  for (int k = 0; k < nr; k++)
    iv[red[k]] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('r', red[k]), d[red[k]], LOOM_TP_LOOP_SERIAL, true));
  for (int k = 0; k < rank; k++) xi[k] = iv[k];
  loom_tp_expr *y = loom_tpb_load(&b, Y, oi), *x = loom_tpb_load(&b, X, xi);
  loom_tpb_store(&b, Y, oi, loom_tp_op2(a, reduce_ops[op], y, x));
  loom_tpb_end_n(&b, nr);
  if (op == LOOM_TP_REDUCE_MEAN) {
    loom_tp_expr *count = loom_tp_cast(a, t, loom_tpb_idx(&b, dims_product(cx, d, red, nr)));
    loom_tpb_store(&b, Y, oi, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tpb_load(&b, Y, oi), count));
  }
  return loom_tpb_finish(&b, result);
}

/* softmax / log_softmax along an axis that is neither the first nor the last ((n, c, h, w) along c),
 * as columns: the statistics are rows M, S over the trailing axes, each pass reads a unit-stride
 * row of X per position along the axis (a per-element softmax down a column read X at stride
 * h*w: 6-8x ONNX Runtime's time):
 *   for i<axes before> (the first parallel) {
 *     alloc M, S: Local[(trailing dims), st]    for j<trailing> { M[j] = -inf  S[j] = 0 }
 *     for r reduce { for j { M[j] = max(M[j], C(X[..r, j])) } }
 *     softmax, st == t: for r reduce { for j { Y[..r, j] = exp(X[..r, j] - M[j])  S[j] = S[j] + Y[..r, j] } }
 *                       for j { S[j] = 1.0 / S[j] }     for r { for j { Y[..r, j] = Y[..r, j] * S[j] } }
 *     otherwise:        for r reduce { for j { S[j] = S[j] + exp(C(X[..r, j]) - M[j]) } }
 *                       [log: for j { S[j] = log(S[j]) }]
 *                       for r { for j { Y[..r, j] = T(C(X) - M[j] - S[j]) (log) or T(exp(C(X) - M[j]) / S[j]) } } } */
static void softmax_columns(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *Y, const loom_sym_expr *const *d,
                            int rank, int axis, bool log, loom_dtype st) {
  loom_arena *a = b->a;
  loom_dtype t = X->dtype;
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK] = {0}, *mi[LOOM_TP_GEN_MAX_RANK];
  int trail[LOOM_TP_GEN_MAX_RANK], nt = open_leading(b, d, rank, axis, xi, trail);
  const loom_tp_buffer *M = loom_tpb_alloc(b, "M", st, nt, d + axis + 1, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *S = loom_tpb_alloc(b, "S", st, nt, d + axis + 1, LOOM_TP_SCOPE_LOCAL);
#define OPEN_ROW() (open_axes(b, trail, nt, d, xi), memcpy(mi, xi + axis + 1, (size_t)nt * sizeof *mi))
#define ROW(buf) loom_tpb_load(b, (buf), mi)
  OPEN_ROW();
  loom_tpb_store(b, M, mi, loom_tp_const_f(a, st, -INFINITY));
  loom_tpb_store(b, S, mi, loom_tp_const_f(a, st, 0.0));
  loom_tpb_end_n(b, nt);
  xi[axis] = loom_tpb_idx(b, loom_tpb_for(b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
  OPEN_ROW();
  loom_tpb_store(b, M, mi, loom_tp_op2(a, LOOM_TP_OP_MAX, ROW(M), conv(a, st, t, loom_tpb_load(b, X, xi))));
  loom_tpb_end_n(b, nt + 1);
  if (!log && st == t) {
    xi[axis] = loom_tpb_idx(b, loom_tpb_for(b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
    OPEN_ROW();
    loom_tpb_store(b, Y, xi, loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(b, X, xi), ROW(M))));
    loom_tpb_store(b, S, mi, loom_tp_op2(a, LOOM_TP_OP_ADD, ROW(S), loom_tpb_load(b, Y, xi)));
    loom_tpb_end_n(b, nt + 1);
    OPEN_ROW();
    loom_tpb_store(b, S, mi, loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, st, 1.0), ROW(S)));
    loom_tpb_end_n(b, nt);
    xi[axis] = loom_tpb_idx(b, loom_tpb_for(b, "j", d[axis], LOOM_TP_LOOP_SERIAL, false));
    OPEN_ROW();
    loom_tpb_store(b, Y, xi, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(b, Y, xi), ROW(S)));
    loom_tpb_end_n(b, nt + 1);
    return;
  }
  xi[axis] = loom_tpb_idx(b, loom_tpb_for(b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
  OPEN_ROW();
  loom_tp_expr *e = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, conv(a, st, t, loom_tpb_load(b, X, xi)), ROW(M)));
  loom_tpb_store(b, S, mi, loom_tp_op2(a, LOOM_TP_OP_ADD, ROW(S), e));
  loom_tpb_end_n(b, nt + 1);
  if (log) {
    OPEN_ROW();
    loom_tpb_store(b, S, mi, loom_tp_op1(a, LOOM_TP_OP_LOG, ROW(S)));
    loom_tpb_end_n(b, nt);
  }
  xi[axis] = loom_tpb_idx(b, loom_tpb_for(b, "j", d[axis], LOOM_TP_LOOP_SERIAL, false));
  OPEN_ROW();
  loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, conv(a, st, t, loom_tpb_load(b, X, xi)), ROW(M));
  loom_tp_expr *v = log ? loom_tp_op2(a, LOOM_TP_OP_SUB, centred, ROW(S))
                        : loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op1(a, LOOM_TP_OP_EXP, centred), ROW(S));
  loom_tpb_store(b, Y, xi, conv(a, t, st, v));
  loom_tpb_end_n(b, nt + 1);
#undef ROW
#undef OPEN_ROW
}

/* Along the first or the last axis (a middle one: softmax_columns). Statistics in st = f32 (f64
 * for f64), C(x) = st(x) and T(x) = t(x) where they differ:
 *   for i<other axes> parallel {
 *     alloc M: Local[(1,), st]   M[0] = -inf     for r reduce { M[0] = max(M[0], C(X[..r..])) }
 *     alloc S: Local[(1,), st]   S[0] = 0.0
 *     softmax, st == t:  for r reduce { Y[..r..] = exp(X[..r..] - M[0])  S[0] = S[0] + Y[..r..] }
 *                        let inv: st = 1.0 / S[0]   for j { Y[..j..] = Y[..j..] * inv }
 *     otherwise:         for r reduce { S[0] = S[0] + exp(C(X[..r..]) - M[0]) }
 *                        let ls = log(S[0])   for j { Y[..j..] = T(C(X[..j..]) - M[0] - ls) }   (log)
 *                        for j { Y[..j..] = T(exp(C(X[..j..]) - M[0]) / S[0]) }      (softmax) } */
loom_status loom_tp_gen_softmax(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool log, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "softmax axis %d is outside [0, %d)", axis, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "softmax of %s is not supported", loom_dtype_name(t));
  loom_dtype st = loom_tpg_stat_type(t);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  if (axis > 0 && axis < rank - 1) {
    softmax_columns(&b, X, Y, d, rank, axis, log, st);
    return loom_tpb_finish(&b, result);
  }
  loom_tp_expr *xr[LOOM_TP_GEN_MAX_RANK], *xj[LOOM_TP_GEN_MAX_RANK];
  bool first = true;
  for (int k = 0; k < rank; k++) {
    if (k == axis) continue;
    xr[k] = xj[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k],
                                                  first ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
    first = false;
  }
  const loom_tp_buffer *M = local(&b, "M", st, 1);
  store_at(&b, M, 0, loom_tp_const_f(a, st, -INFINITY));
  xr[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
  store_at(&b, M, 0, loom_tp_op2(a, LOOM_TP_OP_MAX, at(&b, M, 0), conv(a, st, t, loom_tpb_load(&b, X, xr))));
  loom_tpb_end(&b);
  const loom_tp_buffer *S = local(&b, "S", st, 1);
  store_at(&b, S, 0, loom_tp_const_f(a, st, 0.0));
  if (!log && st == t) {
    /* exp computed once: stored into Y by the sum pass, then scaled in place (the row is
     * still in cache); with a wider statistics type Y would round the terms of the sum */
    xr[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
    loom_tpb_store(&b, Y, xr, loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_load(&b, X, xr), at(&b, M, 0))));
    store_at(&b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, at(&b, S, 0), loom_tpb_load(&b, Y, xr)));
    loom_tpb_end(&b);
    loom_tp_expr *inv = loom_tpb_let(&b, "inv", loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_const_f(a, st, 1.0), at(&b, S, 0)));
    xj[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "j", d[axis], LOOM_TP_LOOP_SERIAL, false));
    loom_tpb_store(&b, Y, xj, loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tpb_load(&b, Y, xj), inv));
    return loom_tpb_finish(&b, result);
  }
  xr[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "r", d[axis], LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *e = loom_tp_op1(a, LOOM_TP_OP_EXP, loom_tp_op2(a, LOOM_TP_OP_SUB, conv(a, st, t, loom_tpb_load(&b, X, xr)), at(&b, M, 0)));
  store_at(&b, S, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, at(&b, S, 0), e));
  loom_tpb_end(&b);
  /* log_softmax: (x - M) - log S, the log computed once before the row (not x - (M + log S):
   * with |M| ~ 1e19 the sum rounds log S away) */
  loom_tp_expr *ls = log ? loom_tpb_let(&b, "ls", loom_tp_op1(a, LOOM_TP_OP_LOG, at(&b, S, 0))) : NULL;
  xj[axis] = loom_tpb_idx(&b, loom_tpb_for(&b, "j", d[axis], LOOM_TP_LOOP_SERIAL, false));
  loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_SUB, conv(a, st, t, loom_tpb_load(&b, X, xj)), at(&b, M, 0));
  loom_tp_expr *v = log ? loom_tp_op2(a, LOOM_TP_OP_SUB, centred, ls)
                        : loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op1(a, LOOM_TP_OP_EXP, centred), at(&b, S, 0));
  loom_tpb_store(&b, Y, xj, conv(a, t, st, v));
  return loom_tpb_finish(&b, result);
}

/* The row statistics pass of a norm over the reduced axes (xi[first ..] are set to the loop
 * variables r<k>): Q[q] = Q[q] + v, x = C(X[..]) [/ scale], v = x, or with `square` x * x,
 * or with a centre `let dv: st = x - centre` and v = dv * dv. */
static void norm_pass(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *Q, int q, const loom_sym_expr *const *d,
                      int first, int rank, loom_tp_expr **xi, loom_dtype st, loom_tp_expr *scale, loom_tp_expr *centre,
                      bool square) {
  loom_arena *a = b->a;
  for (int k = first; k < rank; k++) xi[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('r', k), d[k], LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *x = conv(a, st, X->dtype, loom_tpb_load(b, X, xi));
  if (scale) x = loom_tp_op2(a, LOOM_TP_OP_DIV, x, loom_tp_expr_copy(a, scale));
  if (centre) x = loom_tpb_let(b, "dv", loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, centre)));
  if (square) x = loom_tp_op2(a, LOOM_TP_OP_MUL, x, loom_tp_expr_copy(a, x));
  store_at(b, Q, q, loom_tp_op2(a, LOOM_TP_OP_ADD, at(b, Q, q), x));
  loom_tpb_end_n(b, rank - first);
}

/* The output pass: Y[..] = T((C(X[..]) [/ scale] [- mean]) * inv * C(gamma[j..]) [+ C(beta[j..])]). */
static void norm_output(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *gamma, const loom_tp_buffer *beta,
                        const loom_tp_buffer *Y, const loom_sym_expr *const *d, int first, int rank, loom_tp_expr **xi,
                        loom_dtype st, loom_tp_expr *scale, loom_tp_expr *mean, loom_tp_expr *inv) {
  loom_arena *a = b->a;
  loom_tp_expr *gj[LOOM_TP_GEN_MAX_RANK];
  for (int k = first; k < rank; k++)
    gj[k - first] = xi[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('j', k), d[k], LOOM_TP_LOOP_SERIAL, false));
  loom_tp_expr *x = conv(a, st, X->dtype, loom_tpb_load(b, X, xi)), *g = conv(a, st, X->dtype, loom_tpb_load(b, gamma, gj));
  if (scale) x = loom_tp_op2(a, LOOM_TP_OP_DIV, x, loom_tp_expr_copy(a, scale));
  if (mean) x = loom_tp_op2(a, LOOM_TP_OP_SUB, x, loom_tp_expr_copy(a, mean));
  loom_tp_expr *v = loom_tp_op2(a, LOOM_TP_OP_MUL, loom_tp_op2(a, LOOM_TP_OP_MUL, x, loom_tp_expr_copy(a, inv)), g);
  if (beta) v = loom_tp_op2(a, LOOM_TP_OP_ADD, v, conv(a, st, X->dtype, loom_tpb_load(b, beta, gj)));
  loom_tpb_store(b, Y, xi, conv(a, X->dtype, st, v));
  loom_tpb_end_n(b, rank - first);
}

/* What the paths of one norm share. */
typedef struct norm_ctx {
  loom_tpb *b;
  const loom_tp_buffer *X, *gamma, *beta, *Y, *Q; /* beta: NULL for rms_norm; Q: the row's 2 statistics */
  const loom_sym_expr *const *d;
  const loom_sym_expr *n; /* elements per row */
  int first, rank;
  loom_tp_expr **xi;      /* the row's indices (the first `first` set) */
  loom_dtype st;
  double eps;
} norm_ctx;

static loom_tp_expr *st_n(norm_ctx *c) { return loom_tp_cast(c->b->a, c->st, loom_tpb_idx(c->b, c->n)); }
static loom_tp_expr *st_c(norm_ctx *c, double v) { return loom_tp_const_f(c->b->a, c->st, v); }

/* The scaled path, for rows whose squares overflow: x divided by c = max|x| first.
 *   alloc R: Local[(2,), st]   R[0] = 0.0   R[1] = 0.0   Q[0] = 0.0
 *   for r reduce { Q[0] = max(Q[0], abs(C(X[..]))) }           let c: st = Q[0]
 *   for r reduce { R[0] = R[0] + C(X[..]) / c }                 let mean2: st = R[0] / st(n)   (not rms)
 *   for r reduce { let dv: st = C(X[..]) / c - mean2   R[1] = R[1] + dv * dv }
 *   let inv2: st = rsqrt(max(R[1] / st(n) + st(eps) / c / c, st(smallest normal)))
 *   for j { Y[..] = T((C(X[..]) / c - mean2) * inv2 * C(gamma[j..]) + C(beta[j..])) }
 * (x - mean) / sqrt(var + eps) = (x/c - mean/c) / sqrt(var/c^2 + eps/c^2): every value here is
 * at most 2 in magnitude and no square overflows, so the result is finite wherever the exact one
 * is. x / c, not x * (1 / c): 1 / c is subnormal for c above 2^126, and kernels run with
 * denormals flushed to zero. The smallest normal keeps a row of equal values at 0, not 0 * inf. */
static void norm_scaled(norm_ctx *c) {
  loom_tpb *b = c->b;
  loom_arena *a = b->a;
  const loom_tp_buffer *R = local(b, "R", c->st, 2);
  store_at(b, R, 0, st_c(c, 0.0));
  store_at(b, R, 1, st_c(c, 0.0));
  store_at(b, c->Q, 0, st_c(c, 0.0));
  for (int k = c->first; k < c->rank; k++)
    c->xi[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('r', k), c->d[k], LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *ax = loom_tp_op1(a, LOOM_TP_OP_ABS, conv(a, c->st, c->X->dtype, loom_tpb_load(b, c->X, c->xi)));
  store_at(b, c->Q, 0, loom_tp_op2(a, LOOM_TP_OP_MAX, at(b, c->Q, 0), ax));
  loom_tpb_end_n(b, c->rank - c->first);
  loom_tp_expr *cm = loom_tpb_let(b, "c", at(b, c->Q, 0)), *ms = NULL;
  if (c->beta) {
    norm_pass(b, c->X, R, 0, c->d, c->first, c->rank, c->xi, c->st, cm, NULL, false);
    ms = loom_tpb_let(b, "mean2", loom_tp_op2(a, LOOM_TP_OP_DIV, at(b, R, 0), st_n(c)));
  }
  norm_pass(b, c->X, R, 1, c->d, c->first, c->rank, c->xi, c->st, cm, ms, true);
  loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_DIV, at(b, R, 1), st_n(c));
  loom_tp_expr *eps = loom_tp_op2(a, LOOM_TP_OP_DIV, loom_tp_op2(a, LOOM_TP_OP_DIV, st_c(c, c->eps), loom_tp_expr_copy(a, cm)),
                                  loom_tp_expr_copy(a, cm));
  loom_tp_expr *floor = st_c(c, c->st == LOOM_DTYPE_F64 ? 2.2250738585072014e-308 : 1.1754943508222875e-38);
  loom_tp_expr *inv = loom_tpb_let(b, "inv2", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_MAX, loom_tp_op2(a, LOOM_TP_OP_ADD, var, eps), floor)));
  norm_output(b, c->X, c->gamma, c->beta, c->Y, c->d, c->first, c->rank, c->xi, c->st, cm, ms, inv);
}

/* The two-pass path (layer_norm), exact for any mean: the mean, then the squares about it,
 * then the scaled path if they overflow.
 *   Q[0] = 0.0   for r reduce { Q[0] = Q[0] + C(X[..]) }                  let mean1: st = Q[0] / st(n)
 *   Q[1] = 0.0   for r reduce { let dv: st = C(X[..]) - mean1   Q[1] = Q[1] + dv * dv }
 *   if likely(Q[1] < inf) { let inv1: st = rsqrt(Q[1] / st(n) + st(eps))
 *                   for j { Y[..] = T((C(X[..]) - mean1) * inv1 * C(gamma[j..]) + C(beta[j..])) } }
 *   else { the scaled path } */
static void norm_two_pass(norm_ctx *c) {
  loom_tpb *b = c->b;
  loom_arena *a = b->a;
  store_at(b, c->Q, 0, st_c(c, 0.0));
  store_at(b, c->Q, 1, st_c(c, 0.0));
  norm_pass(b, c->X, c->Q, 0, c->d, c->first, c->rank, c->xi, c->st, NULL, NULL, false);
  loom_tp_expr *mean = loom_tpb_let(b, "mean1", loom_tp_op2(a, LOOM_TP_OP_DIV, at(b, c->Q, 0), st_n(c)));
  norm_pass(b, c->X, c->Q, 1, c->d, c->first, c->rank, c->xi, c->st, NULL, mean, true);
  loom_tpb_if(b, loom_tp_op1(a, LOOM_TP_OP_LIKELY, loom_tp_op2(a, LOOM_TP_OP_LT, at(b, c->Q, 1), st_c(c, INFINITY))));
  loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_DIV, at(b, c->Q, 1), st_n(c));
  loom_tp_expr *inv = loom_tpb_let(b, "inv1", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, var, st_c(c, c->eps))));
  norm_output(b, c->X, c->gamma, c->beta, c->Y, c->d, c->first, c->rank, c->xi, c->st, NULL, mean, inv);
  loom_tpb_else(b);
  norm_scaled(c);
  loom_tpb_end(b);
}

/* Over the last naxes axes (n = their size), statistics in st as softmax's. layer_norm makes
 * one pass over the row for its statistics (sums of x and x^2) and keeps that result only where
 * it is accurate: E[x^2] - mean^2 loses every digit when |mean| is large next to the spread, and
 * the squares overflow for |x| beyond about 1.8e19 in f32. The one-pass variance is kept when the
 * squares did not overflow and |mean| is within 4 standard deviations (mean^2 <= 16 var, i.e.
 * 17 mean^2 <= 16 ms): ms is then at most 17 times the variance, so at most 4 bits cancel. Any
 * other row takes the two-pass path (the mean, then the squares of x - mean), and a row whose
 * squares overflow there the scaled one (norm_two_pass, norm_scaled). The common row costs what
 * the one-pass program did before these paths existed (one comparison more). The overflow paths
 * are `if likely(..)`'s cold else branches (tp_ops.def: plain loops, about a third less for LLVM
 * to compile; the two-pass path stays vectorised, as rows far off centre are not rare enough):
 *   for i<first axes> parallel {
 *     alloc Q: Local[(2,), st]   Q[0] = 0.0   Q[1] = 0.0
 *     for r<axes> reduce { Q[0] = Q[0] + C(X[..])   Q[1] = Q[1] + C(X[..]) * C(X[..]) }
 *     let mean: st = Q[0] / st(n)   let ms: st = Q[1] / st(n)
 *     if Q[1] < inf && mean * mean * st(17.0) <= ms * st(16.0) {
 *       let inv: st = rsqrt(ms - mean * mean + st(eps))
 *       for j<axes> { Y[..] = T((C(X[..]) - mean) * inv * C(gamma[j..]) + C(beta[j..])) }
 *     } else { the two-pass path } }
 * rms_norm needs no mean:
 *   for i<first axes> parallel { alloc Q: Local[(2,), st]
 *     for r<axes> reduce { Q[1] = Q[1] + C(X[..]) * C(X[..]) }
 *     if likely(Q[1] < inf) { let inv: st = rsqrt(Q[1] / st(n) + st(eps))
 *                     for j<axes> { Y[..] = T(C(X[..]) * inv * C(gamma[j..])) } }
 *     else { the scaled path } } */
loom_status loom_tp_gen_layer_norm(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int naxes,
                                   double eps, bool rms, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (naxes < 1 || naxes > rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "normalised axes %d is outside [1, %d]", naxes, rank);
  if (!loom_dtype_is_float(t)) return LOOM_ERROR(INVALID_ARGUMENT, "layer_norm of %s is not supported", loom_dtype_name(t));
  loom_dtype st = loom_tpg_stat_type(t);
  int first = rank - naxes;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK];
  norm_ctx c = {.b = &b, .d = d, .first = first, .rank = rank, .xi = xi, .st = st, .eps = eps};
  c.X = loom_tpb_buffer(&b, "X", t, rank, d);
  c.gamma = loom_tpb_buffer(&b, "gamma", t, naxes, d + first);
  if (!rms) c.beta = loom_tpb_buffer(&b, "beta", t, naxes, d + first);
  c.Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  int red[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < naxes; k++) red[k] = first + k;
  c.n = dims_product(cx, d, red, naxes);
  for (int k = 0; k < first; k++)
    xi[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  c.Q = local(&b, "Q", st, 2);
  store_at(&b, c.Q, 0, st_c(&c, 0.0));
  store_at(&b, c.Q, 1, st_c(&c, 0.0));
  /* the one pass: sums of x (layer_norm) and of x^2 */
  for (int k = first; k < rank; k++) xi[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('r', k), d[k], LOOM_TP_LOOP_SERIAL, true));
  if (!rms) store_at(&b, c.Q, 0, loom_tp_op2(a, LOOM_TP_OP_ADD, at(&b, c.Q, 0), conv(a, st, t, loom_tpb_load(&b, c.X, xi))));
  loom_tp_expr *sq = loom_tp_op2(a, LOOM_TP_OP_MUL, conv(a, st, t, loom_tpb_load(&b, c.X, xi)), conv(a, st, t, loom_tpb_load(&b, c.X, xi)));
  store_at(&b, c.Q, 1, loom_tp_op2(a, LOOM_TP_OP_ADD, at(&b, c.Q, 1), sq));
  loom_tpb_end_n(&b, naxes);
  loom_tp_expr *no_overflow = loom_tp_op2(a, LOOM_TP_OP_LT, at(&b, c.Q, 1), st_c(&c, INFINITY));
  if (rms) {
    loom_tpb_if(&b, loom_tp_op1(a, LOOM_TP_OP_LIKELY, no_overflow));
    loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_DIV, at(&b, c.Q, 1), st_n(&c));
    loom_tp_expr *inv = loom_tpb_let(&b, "inv", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, var, st_c(&c, eps))));
    norm_output(&b, c.X, c.gamma, NULL, c.Y, d, first, rank, xi, st, NULL, NULL, inv);
    loom_tpb_else(&b);
    norm_scaled(&c);
    return loom_tpb_finish(&b, result);
  }
  loom_tp_expr *mean = loom_tpb_let(&b, "mean", loom_tp_op2(a, LOOM_TP_OP_DIV, at(&b, c.Q, 0), st_n(&c)));
  loom_tp_expr *ms = loom_tpb_let(&b, "ms", loom_tp_op2(a, LOOM_TP_OP_DIV, at(&b, c.Q, 1), st_n(&c)));
  loom_tp_expr *mean2 = loom_tp_op2(a, LOOM_TP_OP_MUL, DUP(mean), DUP(mean));
  loom_tp_expr *centred = loom_tp_op2(a, LOOM_TP_OP_LE, loom_tp_op2(a, LOOM_TP_OP_MUL, mean2, st_c(&c, 17.0)),
                                      loom_tp_op2(a, LOOM_TP_OP_MUL, DUP(ms), st_c(&c, 16.0)));
  loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_AND, no_overflow, centred));
  loom_tp_expr *var = loom_tp_op2(a, LOOM_TP_OP_SUB, DUP(ms), loom_tp_op2(a, LOOM_TP_OP_MUL, DUP(mean), DUP(mean)));
  loom_tp_expr *inv = loom_tpb_let(&b, "inv", loom_tp_op1(a, LOOM_TP_OP_RSQRT, loom_tp_op2(a, LOOM_TP_OP_ADD, var, st_c(&c, eps))));
  norm_output(&b, c.X, c.gamma, c.beta, c.Y, d, first, rank, xi, st, NULL, mean, inv);
  loom_tpb_else(&b);
  norm_two_pass(&c);
  return loom_tpb_finish(&b, result);
}

/* The first extreme (replace only on a strictly better value):
 *   for i<other axes> parallel { alloc best: Local[(1,), t]  best[0] = init  Y[o] = 0
 *     for r<axis> reduce { if X[..r..] > best[0] { best[0] = X[..r..]  Y[o] = r<axis> } } } */
loom_status loom_tp_gen_argext(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool is_max, bool keepdims, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "axis %d is outside [0, %d)", axis, rank);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *po[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  int orank = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis || keepdims) po[orank++] = k == axis ? loom_sym_const(cx, 1) : d[k];
  if (orank == 0) po[0] = loom_sym_const(cx, 1);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", LOOM_DTYPE_I64, orank ? orank : 1, po);
  loom_tp_expr *xr[LOOM_TP_GEN_MAX_RANK], *oi[LOOM_TP_GEN_MAX_RANK];
  bool first = true;
  for (int k = 0; k < rank; k++) {
    if (k == axis) continue;
    xr[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], first ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
    first = false;
  }
  int no = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis || keepdims) oi[no++] = k == axis ? cidx(&b, 0) : xr[k];
  if (orank == 0) oi[no++] = cidx(&b, 0);
  const loom_tp_buffer *best = local(&b, "best", t, 1);
  store_at(&b, best, 0, loom_tpg_reduce_init(&b, is_max ? LOOM_TP_REDUCE_MAX : LOOM_TP_REDUCE_MIN, t));
  loom_tpb_store(&b, Y, oi, loom_tpb_lit_i(&b, LOOM_DTYPE_I64, 0));
  const loom_sym_expr *r = loom_tpb_for(&b, loom_tpg_var('r', axis), d[axis], LOOM_TP_LOOP_SERIAL, true);
  xr[axis] = loom_tpb_idx(&b, r);
  loom_tpb_if(&b, loom_tp_op2(a, is_max ? LOOM_TP_OP_GT : LOOM_TP_OP_LT, loom_tpb_load(&b, X, xr), at(&b, best, 0)));
  store_at(&b, best, 0, loom_tpb_load(&b, X, xr));
  loom_tpb_store(&b, Y, oi, loom_tpb_idx(&b, r));
  return loom_tpb_finish(&b, result);
}

/* The scan of X along `axis` into Y: loops over the other axes (the first parallel), a running
 * accumulator, positions j (or d - 1 - j when reversed) in order:
 *   for i<other axes> parallel { alloc acc<axis>: Local[(1,), t]  [acc<axis>[0] = 1 (prod)]
 *     for j<axis> { Y[..] = acc[0]  acc[0] = acc[0] op X[..] (exclusive; else the other order) } } */
static void scan_nest(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *Y, const loom_sym_expr *const *d,
                      int rank, int axis, bool exclusive, bool reverse, bool prod) {
  static const char *const accs[] = {"acc0", "acc1", "acc2", "acc3", "acc4", "acc5", "acc6", "acc7"};
  _Static_assert(sizeof accs / sizeof accs[0] == LOOM_TP_GEN_MAX_RANK, "one name per axis");
  loom_dtype t = X->dtype;
  loom_tp_expr *xj[LOOM_TP_GEN_MAX_RANK];
  int nk = 0;
  for (int k = 0; k < rank; k++) {
    if (k == axis) continue;
    xj[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('i', k), d[k], nk == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
    nk++;
  }
  const loom_tp_buffer *acc = local(b, accs[axis], t, 1);
  if (prod) store_at(b, acc, 0, loom_tpg_reduce_init(b, LOOM_TP_REDUCE_PROD, t));
  const loom_sym_expr *j = loom_tpb_for(b, loom_tpg_var('j', axis), d[axis], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *one = loom_sym_const(b->cx, 1);
  xj[axis] = loom_tpb_idx(b, reverse && j && d[axis] ? loom_sym_sub(b->cx, loom_sym_sub(b->cx, d[axis], one), j) : j);
  loom_tp_op op = prod ? LOOM_TP_OP_MUL : LOOM_TP_OP_ADD;
  if (exclusive) loom_tpb_store(b, Y, xj, at(b, acc, 0));
  store_at(b, acc, 0, loom_tp_op2(b->a, op, at(b, acc, 0), loom_tpb_load(b, X, xj)));
  if (!exclusive) loom_tpb_store(b, Y, xj, at(b, acc, 0));
  loom_tpb_end_n(b, nk + 1);
}

/* The scan along an axis that is neither the first nor the last, as columns: the running
 * accumulators are a row over the trailing axes, each step reads and writes unit-stride rows
 * (a per-element scan down a column read X at stride h*w: 9x ONNX Runtime's time):
 *   for i<axes before> (the first parallel) { alloc acc: Local[(trailing dims), t]
 *     for j<trailing> { acc[j] = 0 (1: prod) }
 *     for k<axis> { for j<trailing> { Y[..k, j] = acc[j]  acc[j] = acc[j] op X[..k, j] (exclusive;
 *                                      else the other order) } } }    (k: d - 1 - k when reversed) */
static void scan_columns(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *Y, const loom_sym_expr *const *d,
                         int rank, int axis, bool exclusive, bool reverse, bool prod) {
  loom_dtype t = X->dtype;
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK] = {0}, *mi[LOOM_TP_GEN_MAX_RANK];
  int trail[LOOM_TP_GEN_MAX_RANK], nt = open_leading(b, d, rank, axis, xi, trail);
  const loom_tp_buffer *acc = loom_tpb_alloc(b, "acc", t, nt, d + axis + 1, LOOM_TP_SCOPE_LOCAL);
  open_axes(b, trail, nt, d, xi);
  memcpy(mi, xi + axis + 1, (size_t)nt * sizeof *mi);
  loom_tpb_store(b, acc, mi, loom_tpg_reduce_init(b, prod ? LOOM_TP_REDUCE_PROD : LOOM_TP_REDUCE_SUM, t));
  loom_tpb_end_n(b, nt);
  const loom_sym_expr *j = loom_tpb_for(b, loom_tpg_var('j', axis), d[axis], LOOM_TP_LOOP_SERIAL, false);
  const loom_sym_expr *one = loom_sym_const(b->cx, 1);
  xi[axis] = loom_tpb_idx(b, reverse && j && d[axis] ? loom_sym_sub(b->cx, loom_sym_sub(b->cx, d[axis], one), j) : j);
  open_axes(b, trail, nt, d, xi);
  memcpy(mi, xi + axis + 1, (size_t)nt * sizeof *mi);
  loom_tp_op op = prod ? LOOM_TP_OP_MUL : LOOM_TP_OP_ADD;
  if (exclusive) loom_tpb_store(b, Y, xi, loom_tpb_load(b, acc, mi));
  loom_tpb_store(b, acc, mi, loom_tp_op2(b->a, op, loom_tpb_load(b, acc, mi), loom_tpb_load(b, X, xi)));
  if (!exclusive) loom_tpb_store(b, Y, xi, loom_tpb_load(b, acc, mi));
  loom_tpb_end_n(b, nt + 1 + axis);
}

/* axis >= 0: the scan along it; axis < 0: along the axis given by i64 scalar parameter `a`
 * (bound at run time, in [0, rank)): one scan nest per axis, under `if a == k`. */
static loom_status gen_cumulative(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                  bool exclusive, bool reverse, bool prod, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis >= rank || rank == 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s axis %d is outside [0, %d)", prod ? "cumprod" : "cumsum", axis, rank);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *av = NULL;
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d);
  if (axis < 0) av = loom_tpb_scalar(&b, "a");
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  for (int k = 0; k < rank; k++) {
    if (axis >= 0 && k != axis) continue;
    if (axis < 0) loom_tpb_if(&b, loom_tp_op2(a, LOOM_TP_OP_EQ, loom_tpb_idx(&b, av), cidx(&b, k)));
    if (k > 0 && k < rank - 1)
      scan_columns(&b, X, Y, d, rank, k, exclusive, reverse, prod);
    else
      scan_nest(&b, X, Y, d, rank, k, exclusive, reverse, prod);
    if (axis < 0) loom_tpb_end(&b);
  }
  return loom_tpb_finish(&b, result);
}

loom_status loom_tp_gen_cumsum(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               bool exclusive, bool reverse, loom_tp_func **result) {
  return gen_cumulative(a, cx, name, t, rank, axis, exclusive, reverse, false, result);
}

loom_status loom_tp_gen_cumprod(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                                bool exclusive, bool reverse, loom_tp_func **result) {
  return gen_cumulative(a, cx, name, t, rank, axis, exclusive, reverse, true, result);
}

/* gen_select.c — programs for the ops whose result extent is a count found in the data
 * (nonzero, unique, non_max_suppression). Each comes as a pair run on the same operands: a
 * `count` program whose one-element result legalization binds to the fresh extent
 * (tensor_to_shape + match_cast), and a program that fills the result of that extent. The
 * walks are serial (loops `reduce`): a running count orders the stores. Built directly as IR
 * (tp_build.h); each generator's comment shows the program's text. */
#include <math.h>

#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define AND(x, y) OP2(AND, x, y)
#define IDX(s) loom_tpb_idx(b, (s))
#define I64(v) loom_tpb_lit_i(b, LOOM_DTYPE_I64, (v))
#define BOOL(v) loom_tp_const_i(b->a, LOOM_DTYPE_BOOL, (v))

/* A serial reduce loop `for var in 0..extent reduce {`; its index value. */
static loom_tp_expr *walk(loom_tpb *b, const char *var, const loom_sym_expr *extent) {
  return IDX(loom_tpb_for(b, var, extent, LOOM_TP_LOOP_SERIAL, true));
}

/* buf[i] = buf[i] + 1 */
static void increment(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *i) {
  loom_tpb_store(b, buf, &i, OP2(ADD, loom_tpb_load(b, buf, &i), I64(1)));
}

/* ---- nonzero ---- */

/* `count`: S = (the number of nonzero elements of X); else Y (rank x nnz, i64) = their indices
 * in row-major order, Y's extent nnz bound by the caller from S. Both walk X serially (the
 * loops are `reduce`: the running count C orders the stores):
 *   X: d.., S: Buffer[(1,), i64] -> S[0] = 0  for i0 in 0..d0 reduce { .. if X[i..] != 0 { S[0] = S[0] + 1 } }
 *   X: d.., Y: Buffer[(rank, nnz), i64] -> alloc C: Local[(1,), i64]
 *     for i0 .. reduce { if X[i..] != 0 { Y[0, C[0]] = i0 .. C[0] = C[0] + 1 } } */
loom_status loom_tp_gen_nonzero(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool count,
                                loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (loom_dtype_is_lowp(t)) return LOOM_ERROR(INVALID_ARGUMENT, "nonzero of %s", loom_dtype_name(t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *yd[2] = {loom_sym_const(cx, rank), NULL};
  loom_tpg_dims_d(b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", t, rank, d), *S = NULL, *Y = NULL, *C = NULL;
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  if (count) {
    S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &one);
    loom_tpb_store_at(b, S, 0, I64(0));
  } else {
    yd[1] = loom_tpb_shape_sym(b, "nnz");
    Y = loom_tpb_buffer(b, "Y", LOOM_DTYPE_I64, 2, yd);
    C = loom_tpb_local(b, "C", LOOM_DTYPE_I64, 1);
  }
  loom_tp_expr *xi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) xi[k] = walk(b, loom_tpg_var('i', k), d[k]);
  loom_tp_expr *zero = t == LOOM_DTYPE_BOOL ? BOOL(0) : loom_dtype_is_float(t) ? loom_tp_const_f(a, t, 0.0) : loom_tpb_lit_i(b, t, 0);
  loom_tpb_if(b, OP2(NE, loom_tpb_load(b, X, xi), zero));
  if (count) {
    increment(b, S, loom_tpb_cidx(b, 0));
  } else {
    for (int k = 0; k < rank; k++) loom_tpb_store(b, Y, (loom_tp_expr *[]){loom_tpb_cidx(b, k), loom_tpb_at(b, C, 0)}, xi[k]);
    increment(b, C, loom_tpb_cidx(b, 0));
  }
  return loom_tpb_finish(b, result);
}

/* ---- unique ---- */

/* The index of X's rank-`rank` buffer: `at` on `axis`, the loop indices vi elsewhere. */
static void slice_index(int rank, int axis, loom_tp_expr *at, loom_tp_expr *const *vi, loom_tp_expr **out) {
  for (int k = 0; k < rank; k++) out[k] = k == axis ? at : vi[k];
}

/* Loops (reduce) over every axis but `axis`, named <var><k>; their index values in vi. */
static int open_other(loom_tpb *b, const loom_sym_expr *const *d, int rank, int axis, char var, loom_tp_expr **vi) {
  int n = 0;
  for (int k = 0; k < rank; k++)
    if (k != axis) vi[k] = walk(b, loom_tpg_var(var, k), d[k]), n++;
  return n;
}

/* K[0] = the lexicographic comparison (-1, 0, 1) of slices sa and sb of X along `axis` (a NaN
 * differs from everything, and compares as larger, as the reference's):
 *   K[0] = 0  for <var><k> .. reduce { if K[0] == 0 && X[a..] != X[b..] { K[0] = select(X[a..] < X[b..], -1, 1) } } */
static void compare_slices(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *K, int rank, int axis, const loom_sym_expr *sa,
                           const loom_sym_expr *sb, char var) {
  loom_tp_expr *vi[LOOM_TP_GEN_MAX_RANK], *ia[LOOM_TP_GEN_MAX_RANK], *ib[LOOM_TP_GEN_MAX_RANK];
  loom_tpb_store_at(b, K, 0, I64(0));
  int n = open_other(b, X ? X->dims : NULL, rank, axis, var, vi);
  slice_index(rank, axis, IDX(sa), vi, ia);
  slice_index(rank, axis, IDX(sb), vi, ib);
  loom_tpb_if(b, AND(OP2(EQ, loom_tpb_at(b, K, 0), I64(0)), OP2(NE, loom_tpb_load(b, X, ia), loom_tpb_load(b, X, ib))));
  loom_tpb_store_at(b, K, 0, loom_tp_select(b->a, OP2(LT, loom_tpb_load(b, X, ia), loom_tpb_load(b, X, ib)), I64(-1), I64(1)));
  loom_tpb_end_n(b, n + 1);
}

/* if G[v] == v { (a first slice) */
static void if_first(loom_tpb *b, const loom_tp_buffer *G, const loom_sym_expr *v) {
  loom_tp_expr *i = IDX(v);
  loom_tpb_if(b, OP2(EQ, loom_tpb_load(b, G, &i), IDX(v)));
}

/* X: d.. and the part's result (S: (1,) i64; Y: X's dims with u on the axis; Y: (d<axis>,) i64
 * for the inverse; else Y: (u,) i64); N = d<axis>:
 *   alloc G: Local[(N,), i64]  alloc K: Local[(1,), i64]  alloc R: Local[(N,), i64]
 *   for i in 0..N reduce { G[i] = i  for j in 0..N reduce { if j < i && G[i] == i {
 *     <K[0] = compare slices j, i (loops e<k>)>  if K[0] == 0 { G[i] = j } } } }     G[i]: the first slice equal to slice i
 *   count: S[0] = 0  for i2 in 0..N reduce { if G[i2] == i2 { S[0] = S[0] + 1 } }
 *   else: for p in 0..N reduce { if G[p] == p { R[p] = 0  for q in 0..N reduce { if G[q] == q && q != p {
 *     sorted: <K[0] = compare slices q, p (loops f<k>)>  if K[0] < 0 { R[p] = R[p] + 1 }
 *     else: if q < p { R[p] = R[p] + 1 } } } } }          R[p] for a first slice p: its position among the distinct ones
 *   then values: for v in 0..N reduce { if G[v] == v { for w<k> .. reduce { Y[.., R[v], ..] = X[.., v, ..] } } }
 *   first: for v .. { if G[v] == v { Y[R[v]] = v } }   inverse: for v .. { Y[v] = R[G[v]] }
 *   counts: for v .. { if G[v] == v { Y[R[v]] = 0 } }  for v2 in 0..N reduce { Y[R[G[v2]]] = Y[R[G[v2]]] + 1 } */
loom_status loom_tp_gen_unique(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis, bool sorted,
                               loom_tp_unique_part part, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "unique axis %d of rank %d", axis, rank);
  if (t == LOOM_DTYPE_BOOL || loom_dtype_is_lowp(t)) return LOOM_ERROR(INVALID_ARGUMENT, "unique of %s", loom_dtype_name(t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *yd[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(b, rank, d);
  const loom_sym_expr *N = d[axis], *one = loom_sym_const(cx, 1);
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", t, rank, d), *S = NULL, *Y = NULL;
  switch (part) {
    case LOOM_TP_UNIQUE_COUNT: S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &one); break;
    case LOOM_TP_UNIQUE_VALUES:
      for (int k = 0; k < rank; k++) yd[k] = k == axis ? loom_tpb_shape_sym(b, "u") : d[k];
      Y = loom_tpb_buffer(b, "Y", t, rank, yd);
      break;
    case LOOM_TP_UNIQUE_INVERSE: Y = loom_tpb_buffer(b, "Y", LOOM_DTYPE_I64, 1, &N); break;
    default:
      yd[0] = loom_tpb_shape_sym(b, "u");
      Y = loom_tpb_buffer(b, "Y", LOOM_DTYPE_I64, 1, yd);
      break;
  }
  const loom_tp_buffer *G = loom_tpb_alloc(b, "G", LOOM_DTYPE_I64, 1, &N, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *K = loom_tpb_local(b, "K", LOOM_DTYPE_I64, 1);
  const loom_tp_buffer *R = loom_tpb_alloc(b, "R", LOOM_DTYPE_I64, 1, &N, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr *i = walk(b, "i", N);
  loom_tpb_store(b, G, &i, loom_tpb_dup(b, i));
  loom_tp_expr *j = walk(b, "j", N);
  loom_tpb_if(b, AND(OP2(LT, loom_tpb_dup(b, j), loom_tpb_dup(b, i)), OP2(EQ, loom_tpb_load(b, G, &i), loom_tpb_dup(b, i))));
  compare_slices(b, X, K, rank, axis, j ? j->u.sym : NULL, i ? i->u.sym : NULL, 'e');
  loom_tpb_if(b, OP2(EQ, loom_tpb_at(b, K, 0), I64(0)));
  loom_tpb_store(b, G, &i, loom_tpb_dup(b, j));
  loom_tpb_end_n(b, 4); /* the ifs, j, i */
  if (part == LOOM_TP_UNIQUE_COUNT) {
    loom_tpb_store_at(b, S, 0, I64(0));
    loom_tp_expr *i2 = walk(b, "i2", N);
    if_first(b, G, i2 ? i2->u.sym : NULL);
    increment(b, S, loom_tpb_cidx(b, 0));
    return loom_tpb_finish(b, result);
  }
  loom_tp_expr *p = walk(b, "p", N);
  if_first(b, G, p ? p->u.sym : NULL);
  loom_tpb_store(b, R, &p, I64(0));
  loom_tp_expr *q = walk(b, "q", N);
  loom_tpb_if(b, AND(OP2(EQ, loom_tpb_load(b, G, &q), loom_tpb_dup(b, q)), OP2(NE, loom_tpb_dup(b, q), loom_tpb_dup(b, p))));
  if (sorted) {
    compare_slices(b, X, K, rank, axis, q ? q->u.sym : NULL, p ? p->u.sym : NULL, 'f');
    loom_tpb_if(b, OP2(LT, loom_tpb_at(b, K, 0), I64(0)));
  } else {
    loom_tpb_if(b, OP2(LT, loom_tpb_dup(b, q), loom_tpb_dup(b, p)));
  }
  increment(b, R, p);
  loom_tpb_end_n(b, 5); /* the ifs, q, the if, p */
  loom_tp_expr *v = walk(b, "v", N);
  loom_tp_expr *rv = loom_tpb_load(b, R, &v);
  switch (part) {
    case LOOM_TP_UNIQUE_VALUES: {
      if_first(b, G, v ? v->u.sym : NULL);
      loom_tp_expr *wi[LOOM_TP_GEN_MAX_RANK], *iy[LOOM_TP_GEN_MAX_RANK], *ix[LOOM_TP_GEN_MAX_RANK];
      open_other(b, d, rank, axis, 'w', wi);
      slice_index(rank, axis, rv, wi, iy);
      slice_index(rank, axis, v, wi, ix);
      loom_tpb_store(b, Y, iy, loom_tpb_load(b, X, ix));
      break;
    }
    case LOOM_TP_UNIQUE_FIRST:
      if_first(b, G, v ? v->u.sym : NULL);
      loom_tpb_store(b, Y, &rv, loom_tpb_dup(b, v));
      break;
    case LOOM_TP_UNIQUE_INVERSE: {
      loom_tp_expr *gv = loom_tpb_load(b, G, &v);
      loom_tpb_store(b, Y, &v, loom_tpb_load(b, R, &gv));
      break;
    }
    default: {
      if_first(b, G, v ? v->u.sym : NULL);
      loom_tpb_store(b, Y, &rv, I64(0));
      loom_tpb_end_n(b, 2);
      loom_tp_expr *v2 = walk(b, "v2", N);
      loom_tp_expr *g2 = loom_tpb_load(b, G, &v2);
      increment(b, Y, loom_tpb_load(b, R, &g2));
      break;
    }
  }
  return loom_tpb_finish(b, result);
}

/* ---- non_max_suppression ---- */

/* The one value of scalar operand `buf` (form: -1 absent, 0 rank 0, 1 shape (1,)) as t(buf[]) /
 * t(buf[0]), or `dflt` when absent. */
static loom_tp_expr *scalar_value(loom_tpb *b, const loom_tp_buffer *buf, int form, loom_dtype t, loom_tp_expr *dflt) {
  if (form < 0) return dflt;
  return loom_tp_cast(b->a, t, form ? loom_tpb_at(b, buf, 0) : loom_tpb_load(b, buf, NULL));
}

/* Declares scalar operand `buf`: Buffer[(), t] (form 0), [(1,), t] (1) or [(0,), t] (absent). */
static const loom_tp_buffer *scalar_param(loom_tpb *b, const char *buf, int form, loom_dtype t) {
  const loom_sym_expr *n = loom_sym_const(b->cx, form == 1);
  return loom_tpb_buffer(b, buf, t, form ? 1 : 0, &n);
}

/* Corners of box `at` of batch `bi` as lets <p>y1, <p>x1, <p>y2, <p>x2 (f64): corners
 * y1 = min(c0, c2), y2 = max(..), x1 = min(c1, c3), x2 = max(..); center boxes
 * x1 = c0 - c2 / 2.0, x2 = c0 + c2 / 2.0, y1 = c1 - c3 / 2.0, y2 = c1 + c3 / 2.0 (ck = f64(BX[b, at, k])).
 * corner[] takes them in the order y1, x1, y2, x2. */
static void box_corners(loom_tpb *b, const loom_tp_buffer *BX, char p, loom_tp_expr *bi, loom_tp_expr *at, bool center,
                        loom_tp_expr **corner) {
  loom_tp_expr *c[4];
  for (int k = 0; k < 4; k++) c[k] = loom_tp_cast(b->a, LOOM_DTYPE_F64, loom_tpb_load(b, BX, (loom_tp_expr *[]){bi, at, loom_tpb_cidx(b, k)}));
  char nm[4] = {p, 0, 0, 0};
  static const char *const tails[4] = {"x1", "x2", "y1", "y2"};
  for (int s = 0; s < 4; s++) {
    int lo = s < 2 ? 0 : 1; /* center: x from c0, c2; y from c1, c3 (corners: y from c0, c2; x from c1, c3) */
    loom_tp_expr *v;
    int slot; /* y1, x1, y2, x2 */
    if (center) {
      loom_tp_expr *half = OP2(DIV, loom_tpb_dup(b, c[lo + 2]), loom_tp_const_f(b->a, LOOM_DTYPE_F64, 2.0));
      v = s % 2 ? OP2(ADD, loom_tpb_dup(b, c[lo]), half) : OP2(SUB, loom_tpb_dup(b, c[lo]), half);
      nm[1] = tails[s][0];
      nm[2] = tails[s][1];
      slot = (s < 2 ? 1 : 0) + (s % 2) * 2;
    } else {
      v = s % 2 ? OP2(MAX, loom_tpb_dup(b, c[lo]), loom_tpb_dup(b, c[lo + 2])) : OP2(MIN, loom_tpb_dup(b, c[lo]), loom_tpb_dup(b, c[lo + 2]));
      nm[1] = tails[(s + 2) % 4][0];
      nm[2] = tails[(s + 2) % 4][1];
      slot = (s < 2 ? 0 : 1) + (s % 2) * 2;
    }
    corner[slot] = loom_tpb_let(b, nm, v);
  }
}

/* BX: Buffer[(nb, n, 4)], SC: Buffer[(nb, nc, n)], M, I, T: scalar operands -> S: (1,) i64 | Y: (sel, 3) i64:
 *   [S[0] = 0 | alloc CNT: Local[(1,), i64]]  alloc U: Local[(n,), bool]  alloc KP: Local[(n,), i64]
 *   alloc NK, BS: Local[(1,), i64]  alloc KEEP: Local[(1,), bool]
 *   let maxk: i64 = i64(M[..]) (0)  let thr: f64 = f64(I[..]) (0.0)  let sthr: f64 = f64(T[..]) (-inf)
 *   for b in 0..nb reduce { for c in 0..nc reduce { NK[0] = 0  for i0 in 0..n reduce { U[i0] = false }
 *     for st in 0..n reduce { BS[0] = -1           each step takes the best unused box above the threshold (ties: the lower index)
 *       for i in 0..n reduce { if !U[i] && f64(SC[b, c, i]) > sthr {
 *         if BS[0] < 0 { BS[0] = i } else { if f64(SC[b, c, i]) > f64(SC[b, c, BS[0]]) { BS[0] = i } } } }
 *       if BS[0] >= 0 && NK[0] < maxk { U[BS[0]] = true  KEEP[0] = true
 *         for q in 0..n reduce { if q < NK[0] && KEEP[0] { <corners of BS[0] as a.., of KP[q] as k..>
 *           let iw: f64 = min(ax2, kx2) - max(ax1, kx1)  let ih: f64 = min(ay2, ky2) - max(ay1, ky1)
 *           let inter: f64 = iw * ih  let uni: f64 = (ax2 - ax1) * (ay2 - ay1) + (kx2 - kx1) * (ky2 - ky1) - inter
 *           let iou: f64 = select(iw <= 0.0 || ih <= 0.0, 0.0, select(uni > 0.0, inter / uni, 0.0))
 *           if iou > thr { KEEP[0] = false } } }
 *         if KEEP[0] { KP[NK[0]] = BS[0]  NK[0] = NK[0] + 1
 *           S[0] = S[0] + 1 | Y[CNT[0], 0] = b  Y[CNT[0], 1] = c  Y[CNT[0], 2] = BS[0]  CNT[0] = CNT[0] + 1 } } } } } */
loom_status loom_tp_gen_nms(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_dtype *types, const int *forms,
                            bool center, bool count, loom_tp_func **result) {
  for (int i = 0; i < 2; i++)
    if (!loom_dtype_is_float(types[i]) || loom_dtype_is_lowp(types[i]))
      return LOOM_ERROR(INVALID_ARGUMENT, "non_max_suppression operand %d of %s", i, loom_dtype_name(types[i]));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *nb = loom_tpb_shape_sym(b, "nb"), *n = loom_tpb_shape_sym(b, "n");
  const loom_sym_expr *bxd[3] = {nb, n, loom_sym_const(cx, 4)};
  const loom_tp_buffer *BX = loom_tpb_buffer(b, "BX", types[0], 3, bxd);
  const loom_sym_expr *nc = loom_tpb_shape_sym(b, "nc"), *scd[3] = {nb, nc, n};
  const loom_tp_buffer *SC = loom_tpb_buffer(b, "SC", types[1], 3, scd);
  const loom_tp_buffer *M = scalar_param(b, "M", forms[0], types[2]);
  const loom_tp_buffer *I = scalar_param(b, "I", forms[1], types[3]);
  const loom_tp_buffer *T = scalar_param(b, "T", forms[2], types[4]);
  const loom_tp_buffer *S = NULL, *Y = NULL, *CNT = NULL;
  if (count) {
    const loom_sym_expr *one = loom_sym_const(cx, 1);
    S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &one);
    loom_tpb_store_at(b, S, 0, I64(0));
  } else {
    const loom_sym_expr *yd[2];
    yd[0] = loom_tpb_shape_sym(b, "sel");
    yd[1] = loom_sym_const(cx, 3);
    Y = loom_tpb_buffer(b, "Y", LOOM_DTYPE_I64, 2, yd);
    CNT = loom_tpb_local(b, "CNT", LOOM_DTYPE_I64, 1);
  }
  const loom_tp_buffer *U = loom_tpb_alloc(b, "U", LOOM_DTYPE_BOOL, 1, &n, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *KP = loom_tpb_alloc(b, "KP", LOOM_DTYPE_I64, 1, &n, LOOM_TP_SCOPE_LOCAL);
  const loom_tp_buffer *NK = loom_tpb_local(b, "NK", LOOM_DTYPE_I64, 1), *BS = loom_tpb_local(b, "BS", LOOM_DTYPE_I64, 1);
  const loom_tp_buffer *KEEP = loom_tpb_local(b, "KEEP", LOOM_DTYPE_BOOL, 1), *DONE = loom_tpb_local(b, "DONE", LOOM_DTYPE_BOOL, 1);
  loom_tp_expr *maxk = loom_tpb_let(b, "maxk", scalar_value(b, M, forms[0], LOOM_DTYPE_I64, I64(0)));
  loom_tp_expr *thr = loom_tpb_let(b, "thr", scalar_value(b, I, forms[1], LOOM_DTYPE_F64, loom_tp_const_f(a, LOOM_DTYPE_F64, 0.0)));
  loom_tp_expr *sthr = loom_tpb_let(b, "sthr", scalar_value(b, T, forms[2], LOOM_DTYPE_F64, loom_tp_const_f(a, LOOM_DTYPE_F64, -INFINITY)));
  loom_tp_expr *bi = walk(b, "b", nb), *ci = walk(b, "c", nc);
  loom_tpb_store_at(b, NK, 0, I64(0));
  loom_tpb_store_at(b, DONE, 0, BOOL(0));
  loom_tp_expr *i0 = walk(b, "i0", n);
  loom_tpb_store(b, U, &i0, BOOL(0));
  loom_tpb_end(b);
  walk(b, "st", n);
  /* once a step finds no box above the threshold, or the class has its maxk boxes, the steps left
   * do nothing: each skips its scans (a detector's 91 classes x 3234 anchors scanned n steps of
   * n boxes each, every step, for ~1 s) */
  loom_tpb_if(b, loom_tp_op1(a, LOOM_TP_OP_NOT, loom_tpb_at(b, DONE, 0)));
  loom_tpb_store_at(b, BS, 0, I64(-1));
  loom_tp_expr *i = walk(b, "i", n);
#define SCORE(at) loom_tp_cast(b->a, LOOM_DTYPE_F64, loom_tpb_load(b, SC, (loom_tp_expr *[]){bi, ci, (at)}))
  loom_tpb_if(b, AND(loom_tp_op1(a, LOOM_TP_OP_NOT, loom_tpb_load(b, U, &i)), OP2(GT, SCORE(i), loom_tpb_dup(b, sthr))));
  loom_tpb_if(b, OP2(LT, loom_tpb_at(b, BS, 0), I64(0)));
  loom_tpb_store_at(b, BS, 0, loom_tpb_dup(b, i));
  loom_tpb_else(b);
  loom_tpb_if(b, OP2(GT, SCORE(i), SCORE(loom_tpb_at(b, BS, 0))));
  loom_tpb_store_at(b, BS, 0, loom_tpb_dup(b, i));
  loom_tpb_end_n(b, 4); /* the ifs, i */
#undef SCORE
  loom_tpb_if(b, OP2(OR, OP2(LT, loom_tpb_at(b, BS, 0), I64(0)), OP2(GE, loom_tpb_at(b, NK, 0), loom_tpb_dup(b, maxk))));
  loom_tpb_store_at(b, DONE, 0, BOOL(1));
  loom_tpb_else(b);
  loom_tp_expr *bs = loom_tpb_at(b, BS, 0);
  loom_tpb_store(b, U, &bs, BOOL(1));
  loom_tpb_store_at(b, KEEP, 0, BOOL(1));
  loom_tp_expr *q = walk(b, "q", n);
  loom_tpb_if(b, AND(OP2(LT, loom_tpb_dup(b, q), loom_tpb_at(b, NK, 0)), loom_tpb_at(b, KEEP, 0)));
  loom_tp_expr *ac[4], *kc[4]; /* y1, x1, y2, x2 */
  box_corners(b, BX, 'a', bi, loom_tpb_at(b, BS, 0), center, ac);
  box_corners(b, BX, 'k', bi, loom_tpb_load(b, KP, &q), center, kc);
#define D(e) loom_tpb_dup(b, (e))
#define F64(v) loom_tp_const_f(a, LOOM_DTYPE_F64, (v))
  loom_tp_expr *iw = loom_tpb_let(b, "iw", OP2(SUB, OP2(MIN, D(ac[3]), D(kc[3])), OP2(MAX, D(ac[1]), D(kc[1]))));
  loom_tp_expr *ih = loom_tpb_let(b, "ih", OP2(SUB, OP2(MIN, D(ac[2]), D(kc[2])), OP2(MAX, D(ac[0]), D(kc[0]))));
  loom_tp_expr *inter = loom_tpb_let(b, "inter", OP2(MUL, D(iw), D(ih)));
  loom_tp_expr *area_a = OP2(MUL, OP2(SUB, D(ac[3]), D(ac[1])), OP2(SUB, D(ac[2]), D(ac[0])));
  loom_tp_expr *area_k = OP2(MUL, OP2(SUB, D(kc[3]), D(kc[1])), OP2(SUB, D(kc[2]), D(kc[0])));
  loom_tp_expr *uni = loom_tpb_let(b, "uni", OP2(SUB, OP2(ADD, area_a, area_k), D(inter)));
  loom_tp_expr *ratio = loom_tp_select(a, OP2(GT, D(uni), F64(0.0)), OP2(DIV, D(inter), D(uni)), F64(0.0));
  loom_tp_expr *iou = loom_tpb_let(b, "iou", loom_tp_select(a, OP2(OR, OP2(LE, D(iw), F64(0.0)), OP2(LE, D(ih), F64(0.0))), F64(0.0), ratio));
  loom_tpb_if(b, OP2(GT, D(iou), D(thr)));
#undef D
#undef F64
  loom_tpb_store_at(b, KEEP, 0, BOOL(0));
  loom_tpb_end_n(b, 3); /* the ifs, q */
  loom_tpb_if(b, loom_tpb_at(b, KEEP, 0));
  loom_tp_expr *nk = loom_tpb_at(b, NK, 0);
  loom_tpb_store(b, KP, &nk, loom_tpb_at(b, BS, 0));
  increment(b, NK, loom_tpb_cidx(b, 0));
  if (count) {
    increment(b, S, loom_tpb_cidx(b, 0));
  } else {
    loom_tp_expr *vals[3] = {bi, ci, loom_tpb_at(b, BS, 0)};
    for (int k = 0; k < 3; k++) loom_tpb_store(b, Y, (loom_tp_expr *[]){loom_tpb_at(b, CNT, 0), loom_tpb_cidx(b, k)}, loom_tpb_dup(b, vals[k]));
    increment(b, CNT, loom_tpb_cidx(b, 0));
  }
  loom_tpb_end_n(b, 2); /* if KEEP, the else of DONE's test; the rest close at finish */
  return loom_tpb_finish(b, result);
}

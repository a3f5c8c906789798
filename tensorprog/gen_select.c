/* gen_select.c — programs for the ops whose result extent is a count found in the data
 * (nonzero, unique; non_max_suppression in gen_nms.c). Each comes as a pair run on the same
 * operands: a `count` program whose one-element result legalization binds to the fresh extent
 * (tensor_to_shape + match_cast), and a program that fills the result of that extent. The
 * walks are serial (loops `reduce`): a running count orders the stores. Built directly as IR
 * (tp_build.h); each generator's comment shows the program's text. */
#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define AND(x, y) OP2(AND, x, y)
#define IDX(s) loom_tpb_idx(b, (s))
#define I64(v) loom_tpb_lit_i(b, LOOM_DTYPE_I64, (v))
#define BOOL(v) loom_tp_const_i(b->a, LOOM_DTYPE_BOOL, (v))

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
  for (int k = 0; k < rank; k++) xi[k] = loom_tpg_walk(b, loom_tpg_var('i', k), d[k]);
  loom_tp_expr *zero = t == LOOM_DTYPE_BOOL ? BOOL(0) : loom_dtype_is_float(t) ? loom_tp_const_f(a, t, 0.0) : loom_tpb_lit_i(b, t, 0);
  loom_tpb_if(b, OP2(NE, loom_tpb_load(b, X, xi), zero));
  if (count) {
    loom_tpg_increment(b, S, loom_tpb_cidx(b, 0));
  } else {
    for (int k = 0; k < rank; k++) loom_tpb_store(b, Y, (loom_tp_expr *[]){loom_tpb_cidx(b, k), loom_tpb_at(b, C, 0)}, xi[k]);
    loom_tpg_increment(b, C, loom_tpb_cidx(b, 0));
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
    if (k != axis) vi[k] = loom_tpg_walk(b, loom_tpg_var(var, k), d[k]), n++;
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
  loom_tp_expr *i = loom_tpg_walk(b, "i", N);
  loom_tpb_store(b, G, &i, loom_tpb_dup(b, i));
  loom_tp_expr *j = loom_tpg_walk(b, "j", N);
  loom_tpb_if(b, AND(OP2(LT, loom_tpb_dup(b, j), loom_tpb_dup(b, i)), OP2(EQ, loom_tpb_load(b, G, &i), loom_tpb_dup(b, i))));
  compare_slices(b, X, K, rank, axis, j ? j->u.sym : NULL, i ? i->u.sym : NULL, 'e');
  loom_tpb_if(b, OP2(EQ, loom_tpb_at(b, K, 0), I64(0)));
  loom_tpb_store(b, G, &i, loom_tpb_dup(b, j));
  loom_tpb_end_n(b, 4); /* the ifs, j, i */
  if (part == LOOM_TP_UNIQUE_COUNT) {
    loom_tpb_store_at(b, S, 0, I64(0));
    loom_tp_expr *i2 = loom_tpg_walk(b, "i2", N);
    if_first(b, G, i2 ? i2->u.sym : NULL);
    loom_tpg_increment(b, S, loom_tpb_cidx(b, 0));
    return loom_tpb_finish(b, result);
  }
  loom_tp_expr *p = loom_tpg_walk(b, "p", N);
  if_first(b, G, p ? p->u.sym : NULL);
  loom_tpb_store(b, R, &p, I64(0));
  loom_tp_expr *q = loom_tpg_walk(b, "q", N);
  loom_tpb_if(b, AND(OP2(EQ, loom_tpb_load(b, G, &q), loom_tpb_dup(b, q)), OP2(NE, loom_tpb_dup(b, q), loom_tpb_dup(b, p))));
  if (sorted) {
    compare_slices(b, X, K, rank, axis, q ? q->u.sym : NULL, p ? p->u.sym : NULL, 'f');
    loom_tpb_if(b, OP2(LT, loom_tpb_at(b, K, 0), I64(0)));
  } else {
    loom_tpb_if(b, OP2(LT, loom_tpb_dup(b, q), loom_tpb_dup(b, p)));
  }
  loom_tpg_increment(b, R, p);
  loom_tpb_end_n(b, 5); /* the ifs, q, the if, p */
  loom_tp_expr *v = loom_tpg_walk(b, "v", N);
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
      loom_tp_expr *v2 = loom_tpg_walk(b, "v2", N);
      loom_tp_expr *g2 = loom_tpb_load(b, G, &v2);
      loom_tpg_increment(b, Y, loom_tpb_load(b, R, &g2));
      break;
    }
  }
  return loom_tpb_finish(b, result);
}

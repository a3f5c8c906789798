/* gen_dims.c — programs for operator forms whose result dims depend on data (run-time axes):
 * a "dims" program computes the result's dims into an i64 vector (legalization binds them with
 * tensor_to_shape + match_cast), and the computing program reads its extents from its result
 * buffer, so one program serves every value of the run-time operand. Built directly as IR
 * (tp_build.h); each generator's comment shows the program's text. The dims arithmetic is
 * on i64 values: integer literals there are index values (as the parser types them). */
#include <stdio.h>

#include "tensorprog/gen_internal.h"

#define OP2(op, x, y) loom_tp_op2(b->a, LOOM_TP_OP_##op, (x), (y))
#define SEL(c, x, y) loom_tp_select(b->a, (c), (x), (y))
#define I(v) loom_tpb_cidx(b, (v))
#define IDX(s) loom_tpb_idx(b, (s))
#define AT(buf, k) loom_tpb_at(b, (buf), (k))
#define REF(e) loom_tpb_dup(b, (e))
#define CAST(t, e) loom_tp_cast(b->a, (t), (e))

/* x op y, or y alone when x is NULL (the first term of a chain). */
static loom_tp_expr *chain(loom_tpb *b, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y) {
  return x ? loom_tp_op2(b->a, op, x, y) : y;
}

/* Y = reduce(X) where each axis k of Y is either 1 (reduced: all of X's axis) or X's extent
 * (kept): loops i<k> over Y's o<k>, reduction loops r<k> over d<k> - o<k> + 1 (d<k> when
 * reduced, 1 when kept), X read at i<k> + r<k>. The caller binds Y's extents:
 *   X: d.., Y: o.. -> for i0 in 0..o0 parallel { .. Y[i..] = init
 *     for r0 in 0..d0 - o0 + 1 reduce { .. Y[i..] = Y[i..] op X[i0 + r0, ..] }
 *     [mean: Y[i..] = Y[i..] / t((d0 - o0 + 1)*..)] } */
loom_status loom_tp_gen_reduce_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_tp_reduce_op op, loom_dtype t,
                                   int rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || (t == LOOM_DTYPE_BOOL && op != LOOM_TP_REDUCE_MAX && op != LOOM_TP_REDUCE_MIN))
    return LOOM_ERROR(INVALID_ARGUMENT, "reduce over run-time axes of rank %d, dtype %s", rank, loom_dtype_name(t));
  if (op == LOOM_TP_REDUCE_MEAN && !loom_dtype_is_float(t))
    return LOOM_ERROR(INVALID_ARGUMENT, "mean of %s is not supported (use a float dtype)", loom_dtype_name(t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *o[LOOM_TP_GEN_MAX_RANK], *iv[LOOM_TP_GEN_MAX_RANK], *ext[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(b, "X", t, rank, d);
  for (int k = 0; k < rank; k++) {
    char on[8] = "o";
    snprintf(on + 1, sizeof on - 1, "%d", k);
    o[k] = loom_tpb_shape_sym(b, on);
  }
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, rank, o);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(b, rank, o, yi);
  const loom_sym_expr *count = NULL, *one = loom_sym_const(cx, 1);
  for (int k = 0; k < rank; k++) {
    iv[k] = yi[k] ? yi[k]->u.sym : NULL;
    ext[k] = loom_sym_add(cx, loom_sym_sub(cx, d[k], o[k]), one);
    count = count ? loom_sym_mul(cx, count, ext[k]) : ext[k];
  }
  loom_tpb_store(b, Y, yi, loom_tpg_reduce_init(b, op, t));
  for (int k = 0; k < rank; k++)
    xi[k] = IDX(loom_sym_add(cx, iv[k], loom_tpb_for(b, loom_tpg_var('r', k), ext[k], LOOM_TP_LOOP_SERIAL, true)));
  loom_tp_op f = op == LOOM_TP_REDUCE_PROD ? LOOM_TP_OP_MUL : op == LOOM_TP_REDUCE_MAX ? LOOM_TP_OP_MAX
               : op == LOOM_TP_REDUCE_MIN ? LOOM_TP_OP_MIN : LOOM_TP_OP_ADD;
  loom_tpb_store(b, Y, yi, loom_tp_op2(a, f, loom_tpb_load(b, Y, yi), loom_tpb_load(b, X, xi)));
  loom_tpb_end_n(b, rank);
  if (op == LOOM_TP_REDUCE_MEAN) loom_tpb_store(b, Y, yi, OP2(DIV, loom_tpb_load(b, Y, yi), CAST(t, IDX(count))));
  return loom_tpb_finish(b, result);
}

/* p - F[0] - F[1] - .. - F[p-1] (the position p less the listed positions before it). */
static loom_tp_expr *minus_cum(loom_tpb *b, const loom_tp_buffer *F, int p) {
  loom_tp_expr *e = I(p);
  for (int i = 0; i < p; i++) e = OP2(SUB, e, AT(F, i));
  return e;
}

/* d<k> of the k-th kept axis at output position j:
 * 0 + select(F[0] == 0 && 0 == j, d0, 0) + select(F[1] == 0 && 1 - F[0] == j, d1, 0) + .. */
static loom_tp_expr *kept_dim(loom_tpb *b, const loom_tp_buffer *F, const loom_sym_expr *const *d, int rank, int j) {
  loom_tp_expr *e = I(0);
  for (int k = 0; k < rank; k++) {
    loom_tp_expr *c = OP2(AND, OP2(EQ, AT(F, k), I(0)), OP2(EQ, minus_cum(b, F, k), I(j)));
    e = OP2(ADD, e, SEL(c, IDX(d[k]), I(0)));
  }
  return e;
}

/* F[p] counts how often position p (of `space` positions; negative values count from the end)
 * is listed in A; the program's result S is in loom_tp_gen_axes_dims' comment (tp_gen.h):
 *   X: d.., A: Buffer[(n,) or (), ta], S: Buffer[(len,), i64] -> alloc F: Local[(space,), i64]
 *   for j in 0..n { F[p] = F[p] + select(i64(A[j]) == p || i64(A[j]) == p - space, 1, 0) .. }
 *   let bad: bool = (F[0] + ..) != n || F[0] > 1 || .. [squeeze: || (F[k] > 0 && d<k> != 1) ..]
 *   S[0] = select(bad, -1, <S 0>)  S[i] = <S i> ..
 * with <S i>: reduce: select(F[i] > 0, 1, d<i>) for i < rank, then the kept dims (kept_dim);
 * squeeze: the kept dims; expand: select(F[i] > 0, 1, 0 + select(minus_cum(i) == k, d<k>, 0) + ..);
 * one: 0 + select(F[0] > 0, 0, 0) + select(F[1] > 0, 1, 0) + .. */
loom_status loom_tp_gen_axes_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                  loom_dtype ta, int arank, loom_tp_axes_form form, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  bool expand = form == LOOM_TP_AXES_EXPAND;
  int space = expand ? rank + n : rank;
  if (n < 1 || (!expand && n > rank) || space > LOOM_TP_GEN_MAX_RANK || (form == LOOM_TP_AXES_ONE && n != 1) ||
      (arank == 0 && n != 1) || arank < 0 || arank > 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "%d run-time axes (rank-%d operand) for rank %d", n, arank, rank);
  if (!loom_dtype_is_int(ta)) return LOOM_ERROR(INVALID_ARGUMENT, "axes of dtype %s", loom_dtype_name(ta));
  int len = form == LOOM_TP_AXES_REDUCE_KEEPDIMS ? rank : form == LOOM_TP_AXES_REDUCE ? 2 * rank - n
          : form == LOOM_TP_AXES_SQUEEZE ? rank - n : form == LOOM_TP_AXES_EXPAND ? rank + n : 1;
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *nd = loom_sym_const(cx, n), *ld = loom_sym_const(cx, len);
  loom_tpg_dims_d(b, rank, d);
  loom_tpb_buffer(b, "X", tx, rank, d);
  const loom_tp_buffer *A = loom_tpb_buffer(b, "A", ta, arank, &nd), *S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &ld);
  const loom_tp_buffer *F = loom_tpb_local(b, "F", LOOM_DTYPE_I64, space);
  loom_tp_expr *j = IDX(loom_tpb_for(b, "j", nd, LOOM_TP_LOOP_SERIAL, false));
  for (int p = 0; p < space; p++) {
#define AX() CAST(LOOM_DTYPE_I64, arank ? loom_tpb_load(b, A, &j) : loom_tpb_load(b, A, NULL))
    loom_tp_expr *listed = OP2(OR, OP2(EQ, AX(), I(p)), OP2(EQ, AX(), I(p - space)));
#undef AX
    loom_tpb_store_at(b, F, p, OP2(ADD, AT(F, p), SEL(listed, I(1), I(0))));
  }
  loom_tpb_end(b);
  loom_tp_expr *sum = NULL, *bad;
  for (int p = 0; p < space; p++) sum = chain(b, LOOM_TP_OP_ADD, sum, AT(F, p));
  bad = OP2(NE, sum, I(n));
  for (int p = 0; p < space; p++) bad = OP2(OR, bad, OP2(GT, AT(F, p), I(1)));
  if (form == LOOM_TP_AXES_SQUEEZE)
    for (int k = 0; k < rank; k++) bad = OP2(OR, bad, OP2(AND, OP2(GT, AT(F, k), I(0)), loom_tpb_cmp(b, LOOM_TP_OP_NE, d[k], loom_sym_const(cx, 1))));
  bad = loom_tpb_let(b, "bad", bad);
  for (int i = 0; i < len; i++) {
    loom_tp_expr *v = NULL;
    switch (form) {
      case LOOM_TP_AXES_REDUCE_KEEPDIMS:
      case LOOM_TP_AXES_REDUCE:
        v = i < rank ? SEL(OP2(GT, AT(F, i), I(0)), I(1), IDX(d[i])) : kept_dim(b, F, d, rank, i - rank);
        break;
      case LOOM_TP_AXES_SQUEEZE: v = kept_dim(b, F, d, rank, i); break;
      case LOOM_TP_AXES_EXPAND:
        v = I(0);
        for (int k = 0; k < rank; k++) v = OP2(ADD, v, SEL(OP2(EQ, minus_cum(b, F, i), I(k)), IDX(d[k]), I(0)));
        v = SEL(OP2(GT, AT(F, i), I(0)), I(1), v);
        break;
      case LOOM_TP_AXES_ONE:
        v = I(0);
        for (int k = 0; k < rank; k++) v = OP2(ADD, v, SEL(OP2(GT, AT(F, k), I(0)), I(k), I(0)));
        break;
    }
    loom_tpb_store_at(b, S, i, i ? v : SEL(REF(bad), I(-1), v));
  }
  return loom_tpb_finish(b, result);
}

/* S = the dims of reshape(X, A) with ONNX semantics: 0 copies X's dim at that position
 * (unless allowzero), one -1 takes what the others leave. A second -1, a value below -1, or a
 * -1 that does not divide make S[0] = -1; a count that differs from X's is the view's error:
 *   X: d.., A: Buffer[(n,), ta], S: Buffer[(n,), i64] -> alloc V: Local[(n,), i64]
 *   V[i] = select(i64(A[i]) == 0, d<i>, i64(A[i])) (allowzero or i >= rank: i64(A[i])) ..
 *   let known: i64 = 1 * select(V[0] == -1, 1, V[0]) * ..  let wild: i64 = 0 + select(V[0] == -1, 1, 0) + ..
 *   let numel: i64 = 1 * d0 * ..
 *   let bad: bool = wild > 1 || (wild == 1 && (known == 0 || numel % select(known == 0, 1, known) != 0)) || V[0] < -1 || ..
 *   S[i] = select(V[i] == -1, numel / select(known == 0, 1, known), V[i]) (S[0]: select(bad, -1, ..)) */
loom_status loom_tp_gen_reshape_dims(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     loom_dtype ta, bool allowzero, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (n < 1 || n > LOOM_TP_GEN_MAX_RANK) return LOOM_ERROR(INVALID_ARGUMENT, "a reshape target of %d dims", n);
  if (!loom_dtype_is_int(ta)) return LOOM_ERROR(INVALID_ARGUMENT, "a reshape target of dtype %s", loom_dtype_name(ta));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], *nd = loom_sym_const(cx, n);
  loom_tpg_dims_d(b, rank, d);
  loom_tpb_buffer(b, "X", tx, rank, d);
  const loom_tp_buffer *A = loom_tpb_buffer(b, "A", ta, 1, &nd), *S = loom_tpb_buffer(b, "S", LOOM_DTYPE_I64, 1, &nd);
  const loom_tp_buffer *V = loom_tpb_local(b, "V", LOOM_DTYPE_I64, n);
  for (int i = 0; i < n; i++) {
    loom_tp_expr *ai = CAST(LOOM_DTYPE_I64, AT(A, i));
    if (!allowzero && i < rank) ai = SEL(OP2(EQ, CAST(LOOM_DTYPE_I64, AT(A, i)), I(0)), IDX(d[i]), ai);
    loom_tpb_store_at(b, V, i, ai);
  }
  loom_tp_expr *known = I(1), *wild = I(0);
  for (int i = 0; i < n; i++) known = OP2(MUL, known, SEL(OP2(EQ, AT(V, i), I(-1)), I(1), AT(V, i)));
  known = loom_tpb_let(b, "known", known);
  for (int i = 0; i < n; i++) wild = OP2(ADD, wild, SEL(OP2(EQ, AT(V, i), I(-1)), I(1), I(0)));
  wild = loom_tpb_let(b, "wild", wild);
  const loom_sym_expr *count = loom_sym_const(cx, 1);
  for (int k = 0; k < rank; k++) count = loom_sym_mul(cx, count, d[k]);
  loom_tp_expr *numel = loom_tpb_let(b, "numel", IDX(count));
#define DIVISOR() SEL(OP2(EQ, REF(known), I(0)), I(1), REF(known))
  loom_tp_expr *rest = OP2(NE, OP2(MOD, REF(numel), DIVISOR()), I(0));
  loom_tp_expr *bad = OP2(OR, OP2(GT, REF(wild), I(1)),
                          OP2(AND, OP2(EQ, REF(wild), I(1)), OP2(OR, OP2(EQ, REF(known), I(0)), rest)));
  for (int i = 0; i < n; i++) bad = OP2(OR, bad, OP2(LT, AT(V, i), I(-1)));
  bad = loom_tpb_let(b, "bad", bad);
  for (int i = 0; i < n; i++) {
    loom_tp_expr *v = SEL(OP2(EQ, AT(V, i), I(-1)), OP2(DIV, REF(numel), DIVISOR()), AT(V, i));
    loom_tpb_store_at(b, S, i, i ? v : SEL(REF(bad), I(-1), v));
  }
#undef DIVISOR
  return loom_tpb_finish(b, result);
}

/* ---- slice and pad with run-time bounds ---- */

/* Declares operand buffer `<buf>: Buffer[(n,), t]`. */
static const loom_tp_buffer *int_buffer(loom_tpb *b, const char *buf, int n, loom_dtype t) {
  const loom_sym_expr *nd = loom_sym_const(b->cx, n);
  return loom_tpb_buffer(b, buf, t, 1, &nd);
}

/* `alloc F: Local[(rank,), i64]  for j in 0..n {  let ax: i64 = i64(A[j])` (j without an axes
 * operand A): ax the listed axis, F[a] to count the entries that name axis a. Closes nothing;
 * *j is the loop's index value. */
static loom_tp_expr *open_listed(loom_tpb *b, const loom_tp_buffer *A, int rank, int n, const loom_tp_buffer **F, loom_tp_expr **j) {
  *F = loom_tpb_local(b, "F", LOOM_DTYPE_I64, rank);
  *j = IDX(loom_tpb_for(b, "j", loom_sym_const(b->cx, n), LOOM_TP_LOOP_SERIAL, false));
  return loom_tpb_let(b, "ax", A ? CAST(LOOM_DTYPE_I64, loom_tpb_load(b, A, j)) : REF(*j));
}

/* if ax == k || ax == k - rank { F[k] = F[k] + 1  (the caller's statements) }: opens the if. */
static void if_listed(loom_tpb *b, const loom_tp_buffer *F, const loom_tp_expr *ax, int k, int rank) {
  loom_tpb_if(b, OP2(OR, OP2(EQ, REF(ax), I(k)), OP2(EQ, REF(ax), I(k - rank))));
  loom_tpb_store_at(b, F, k, OP2(ADD, AT(F, k), I(1)));
}

/* let bad: bool = (0 + F[0] + ..) != n || F[0] > 1 || .. || extra[0] || ..: an axis listed
 * twice or out of range (the counts do not add up to n), or an extra condition. */
static loom_tp_expr *bad_listed(loom_tpb *b, const loom_tp_buffer *F, int rank, int n, loom_tp_expr *const *extra, int nextra) {
  loom_tp_expr *sum = I(0);
  for (int k = 0; k < rank; k++) sum = OP2(ADD, sum, AT(F, k));
  loom_tp_expr *bad = OP2(NE, sum, I(n));
  for (int k = 0; k < rank; k++) bad = OP2(OR, bad, OP2(GT, AT(F, k), I(1)));
  for (int k = 0; k < nextra; k++) bad = OP2(OR, bad, extra[k]);
  return loom_tpb_let(b, "bad", bad);
}

/* let <nm>: i64 = select(v < 0, select(v < -dk, -dk - 1, v + dk), v): a bound counted from the end. */
static loom_tp_expr *from_end(loom_tpb *b, const char *nm, const loom_tp_expr *v, const loom_sym_expr *dk) {
  loom_sym_ctx *cx = b->cx;
  const loom_sym_expr *neg = loom_sym_neg(cx, dk);
  loom_tp_expr *below = SEL(OP2(LT, REF(v), IDX(neg)), IDX(loom_sym_sub(cx, neg, loom_sym_const(cx, 1))), OP2(ADD, REF(v), IDX(dk)));
  return loom_tpb_let(b, nm, SEL(OP2(LT, REF(v), I(0)), below, REF(v)));
}

/* let <nm>: i64 = max(min(v, hi), lo) */
static loom_tp_expr *clamp(loom_tpb *b, const char *nm, const loom_tp_expr *v, const loom_sym_expr *hi, int64_t lo) {
  return loom_tpb_let(b, nm, OP2(MAX, OP2(MIN, REF(v), IDX(hi)), I(lo)));
}

/* select(hi > lo, (hi - lo - 1) / step + 1, 0): the count of a strided run. */
static loom_tp_expr *run_length(loom_tpb *b, const loom_tp_expr *hi, const loom_tp_expr *lo, loom_tp_expr *step) {
  loom_tp_expr *n = OP2(ADD, OP2(DIV, OP2(SUB, OP2(SUB, REF(hi), REF(lo)), I(1)), step), I(1));
  return SEL(OP2(GT, REF(hi), REF(lo)), n, I(0));
}

/* ONNX Slice bounds per axis into L = (start, step, extent) x rank: negative bounds count from
 * the end, bounds clamp, a step may be negative (0 is bad). `extents`: S = the extents (S[0] =
 * -1 when bad); else S = the starts then the steps:
 *   X: d.., B, E[, A][, T]: Buffer[(n,), ..], S -> alloc L: Local[(3*rank,), i64]  alloc Z: Local[(1,), i64]
 *   L[rank + k] = 1  L[2*rank + k] = d<k> ..  <open_listed>
 *   let s: i64 = i64(T[j]) (1)  let sd: i64 = select(s == 0, 1, s)  Z[0] = Z[0] + select(s == 0, 1, 0)
 *   let b0: i64 = i64(B[j])  let e0: i64 = i64(E[j])
 *   if ax == k || ax == k - rank { F[k] = F[k] + 1  let b1_k, e1_k: <from_end(b0, e0)>
 *     let bp_k: i64 = max(min(b1_k, dk), 0)  ep_k ..  let bn_k: i64 = max(min(b1_k, dk - 1), -1)  en_k ..
 *     L[k] = select(s > 0, bp_k, bn_k)  L[rank + k] = s
 *     L[2*rank + k] = select(s > 0, select(ep_k > bp_k, (ep_k - bp_k - 1) / sd + 1, 0),
 *                                   select(bn_k > en_k, (bn_k - en_k - 1) / (0 - sd) + 1, 0)) } .. }
 *   <bad_listed, || Z[0] > 0>  S[k] = L[2*rank + k] (S[0]: select(bad, -1, ..)) | S[k] = L[k]  S[rank + k] = L[rank + k] */
loom_status loom_tp_gen_slice_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int n,
                                     const loom_dtype *types, bool has_axes, bool has_steps, bool extents,
                                     loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (n < 1 || n > rank) return LOOM_ERROR(INVALID_ARGUMENT, "slice bounds for %d axes of rank %d", n, rank);
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(b, rank, d);
  loom_tpb_buffer(b, "X", tx, rank, d);
  const loom_tp_buffer *B = int_buffer(b, "B", n, types[0]), *E = int_buffer(b, "E", n, types[1]);
  const loom_tp_buffer *A = has_axes ? int_buffer(b, "A", n, types[2]) : NULL;
  const loom_tp_buffer *T = has_steps ? int_buffer(b, "T", n, types[3]) : NULL;
  const loom_tp_buffer *S = int_buffer(b, "S", extents ? rank : 2 * rank, LOOM_DTYPE_I64), *F;
  const loom_tp_buffer *L = loom_tpb_local(b, "L", LOOM_DTYPE_I64, 3 * rank), *Z = loom_tpb_local(b, "Z", LOOM_DTYPE_I64, 1);
  for (int k = 0; k < rank; k++) {
    loom_tpb_store_at(b, L, rank + k, I(1));
    loom_tpb_store_at(b, L, 2 * rank + k, IDX(d[k]));
  }
  loom_tp_expr *j, *ax = open_listed(b, A, rank, n, &F, &j);
  loom_tp_expr *s = loom_tpb_let(b, "s", T ? CAST(LOOM_DTYPE_I64, loom_tpb_load(b, T, &j)) : I(1));
  loom_tp_expr *sd = loom_tpb_let(b, "sd", SEL(OP2(EQ, REF(s), I(0)), I(1), REF(s)));
  loom_tpb_store_at(b, Z, 0, OP2(ADD, AT(Z, 0), SEL(OP2(EQ, REF(s), I(0)), I(1), I(0))));
  loom_tp_expr *b0 = loom_tpb_let(b, "b0", CAST(LOOM_DTYPE_I64, loom_tpb_load(b, B, &j)));
  loom_tp_expr *e0 = loom_tpb_let(b, "e0", CAST(LOOM_DTYPE_I64, loom_tpb_load(b, E, &j)));
  for (int k = 0; k < rank; k++) {
    char nm[6][16];
    static const char *const stems[6] = {"b1", "e1", "bp", "ep", "bn", "en"};
    for (int q = 0; q < 6; q++) snprintf(nm[q], sizeof nm[q], "%s_%d", stems[q], k);
    if_listed(b, F, ax, k, rank);
    loom_tp_expr *b1 = from_end(b, nm[0], b0, d[k]), *e1 = from_end(b, nm[1], e0, d[k]);
    const loom_sym_expr *dm1 = loom_sym_sub(cx, d[k], loom_sym_const(cx, 1));
    loom_tp_expr *bp = clamp(b, nm[2], b1, d[k], 0), *ep = clamp(b, nm[3], e1, d[k], 0);
    loom_tp_expr *bn = clamp(b, nm[4], b1, dm1, -1), *en = clamp(b, nm[5], e1, dm1, -1);
    loom_tpb_store_at(b, L, k, SEL(OP2(GT, REF(s), I(0)), REF(bp), REF(bn)));
    loom_tpb_store_at(b, L, rank + k, REF(s));
    loom_tp_expr *fwd = run_length(b, ep, bp, REF(sd)), *bwd = run_length(b, bn, en, OP2(SUB, I(0), REF(sd)));
    loom_tpb_store_at(b, L, 2 * rank + k, SEL(OP2(GT, REF(s), I(0)), fwd, bwd));
    loom_tpb_end(b);
  }
  loom_tpb_end(b);
  loom_tp_expr *zbad = OP2(GT, AT(Z, 0), I(0));
  loom_tp_expr *bad = bad_listed(b, F, rank, n, &zbad, 1);
  for (int k = 0; k < rank; k++) {
    if (extents) {
      loom_tpb_store_at(b, S, k, k ? AT(L, 2 * rank + k) : SEL(REF(bad), I(-1), AT(L, 2 * rank + k)));
    } else {
      loom_tpb_store_at(b, S, k, AT(L, k));
      loom_tpb_store_at(b, S, rank + k, AT(L, rank + k));
    }
  }
  return loom_tpb_finish(b, result);
}

/* Y[i] = X[P[k] + i_k * P[rank + k] on each axis k]: a slice whose starts and steps (P, from
 * loom_tp_gen_slice_params) are read at run time and whose extents are Y's:
 *   X: a.., P: Buffer[(2*rank,), i64], Y: d.. -> Y[i..] = X[P[0] + i0 * P[rank], ..] */
loom_status loom_tp_gen_slice_any(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                  loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_tp_buffer *X = loom_tpg_buffer_a(b, "X", rank, t, NULL), *P = int_buffer(b, "P", 2 * rank, LOOM_DTYPE_I64);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(b, rank, t, NULL, yi);
  for (int k = 0; k < rank; k++) xi[k] = OP2(ADD, AT(P, k), OP2(MUL, REF(yi[k]), AT(P, rank + k)));
  loom_tpb_store(b, Y, yi, loom_tpb_load(b, X, xi));
  return loom_tpb_finish(b, result);
}

/* ONNX Pad's run-time pads P ([before.., after..] over the listed axes, all without A):
 * `extents`: S = X's dims plus the pads (S[0] = -1 when one is negative or an axis is listed
 * twice); else S = the pads before each axis (negative: a crop):
 *   X: d.., P: Buffer[(2*nax,), tp][, A: Buffer[(nax,), ta]], S: Buffer[(rank,), i64] -> alloc L: Local[(2*rank,), i64]
 *   <open_listed>  if ax == k || ax == k - rank { F[k] = F[k] + 1  L[k] = i64(P[j])  L[rank + k] = i64(P[j + nax]) } .. }
 *   <bad_listed, || d<k> + L[k] + L[rank + k] < 0 ..>  S[k] = d<k> + L[k] + L[rank + k] (S[0]: select(bad, -1, ..)) | S[k] = L[k] */
loom_status loom_tp_gen_pad_params(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype tx, int rank, int nax,
                                   loom_dtype tp, bool has_axes, loom_dtype ta, bool extents, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (nax < 1 || nax > rank) return LOOM_ERROR(INVALID_ARGUMENT, "pads for %d axes of rank %d", nax, rank);
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(b, rank, d);
  loom_tpb_buffer(b, "X", tx, rank, d);
  const loom_tp_buffer *P = int_buffer(b, "P", 2 * nax, tp), *A = has_axes ? int_buffer(b, "A", nax, ta) : NULL;
  const loom_tp_buffer *S = int_buffer(b, "S", rank, LOOM_DTYPE_I64), *F;
  const loom_tp_buffer *L = loom_tpb_local(b, "L", LOOM_DTYPE_I64, 2 * rank);
  loom_tp_expr *j, *ax = open_listed(b, A, rank, nax, &F, &j);
  for (int k = 0; k < rank; k++) {
    if_listed(b, F, ax, k, rank);
    loom_tp_expr *after = IDX(j ? loom_sym_add(cx, j->u.sym, loom_sym_const(cx, nax)) : NULL);
    loom_tpb_store_at(b, L, k, CAST(LOOM_DTYPE_I64, loom_tpb_load(b, P, &j)));
    loom_tpb_store_at(b, L, rank + k, CAST(LOOM_DTYPE_I64, loom_tpb_load(b, P, &after)));
    loom_tpb_end(b);
  }
  loom_tpb_end(b);
#define PADDED(k) OP2(ADD, OP2(ADD, IDX(d[k]), AT(L, k)), AT(L, rank + (k)))
  loom_tp_expr *neg[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) neg[k] = OP2(LT, PADDED(k), I(0));
  loom_tp_expr *bad = bad_listed(b, F, rank, nax, neg, rank);
  for (int k = 0; k < rank; k++) {
    if (extents) loom_tpb_store_at(b, S, k, k ? PADDED(k) : SEL(REF(bad), I(-1), PADDED(k)));
    else loom_tpb_store_at(b, S, k, AT(L, k));
  }
#undef PADDED
  return loom_tpb_finish(b, result);
}

/* ---- range with run-time bounds ---- */

/* Declares `<buf>: Buffer[(1,) or (), t]` (rank 1 or 0). */
static const loom_tp_buffer *scalar_buffer(loom_tpb *b, const char *buf, int rank, loom_dtype t) {
  const loom_sym_expr *one = loom_sym_const(b->cx, 1);
  return loom_tpb_buffer(b, buf, t, rank ? 1 : 0, &one);
}

/* as(buf[0]) or as(buf[]): the one value of a rank-0 / (1,) buffer, converted. */
static loom_tp_expr *one_value(loom_tpb *b, const loom_tp_buffer *buf, int rank, loom_dtype as) {
  return CAST(as, rank ? AT(buf, 0) : loom_tpb_load(b, buf, NULL));
}

/* ONNX Range on run-time scalars B (start), E (limit), D (delta) of dtype t (ranks[] 0 or 1):
 * `extents`: S = (max(ceil((limit - start) / delta), 0)), computed in f64 as the reference does,
 * -1 for a zero delta or a length that is NaN or above 2^30; else Y[i] = start + i * delta
 * (in i64 for integers, f64 for floats, then t), Y's extent bound by the caller:
 *   B, E, D, S: Buffer[(1,), i64] -> let q: f64 = ceil((f64(E) - f64(B)) / f64(D))
 *     S[0] = select(f64(D) == 0.0 || q != q || q > 1073741824.0, -1, select(q > 0.0, i64(q), 0))
 *   B, E, D, Y: Buffer[(n,), t] -> for i in 0..n parallel { Y[i] = t(i64(B) + i * i64(D)) }
 *     (floats: t(f64(B) + f64(i) * f64(D))) */
loom_status loom_tp_gen_range(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, const int *ranks, bool extents,
                              loom_tp_func **result) {
  if (t == LOOM_DTYPE_BOOL || !(loom_dtype_is_int(t) || loom_dtype_is_float(t)))
    return LOOM_ERROR(INVALID_ARGUMENT, "a range of %s", loom_dtype_name(t));
  loom_tpb bb, *b = &bb;
  loom_tpb_init(b, a, cx, name);
  const loom_tp_buffer *B = scalar_buffer(b, "B", ranks[0], t), *E = scalar_buffer(b, "E", ranks[1], t);
  const loom_tp_buffer *D = scalar_buffer(b, "D", ranks[2], t);
#define F64(v) loom_tp_const_f(a, LOOM_DTYPE_F64, (v))
  if (extents) {
    const loom_tp_buffer *S = int_buffer(b, "S", 1, LOOM_DTYPE_I64);
    loom_tp_expr *span = OP2(SUB, one_value(b, E, ranks[1], LOOM_DTYPE_F64), one_value(b, B, ranks[0], LOOM_DTYPE_F64));
    loom_tp_expr *q = loom_tpb_let(b, "q", loom_tp_op1(a, LOOM_TP_OP_CEIL, OP2(DIV, span, one_value(b, D, ranks[2], LOOM_DTYPE_F64))));
    loom_tp_expr *bad = OP2(OR, OP2(OR, OP2(EQ, one_value(b, D, ranks[2], LOOM_DTYPE_F64), F64(0.0)), OP2(NE, REF(q), REF(q))),
                            OP2(GT, REF(q), F64(1073741824.0)));
    loom_tpb_store_at(b, S, 0, SEL(bad, I(-1), SEL(OP2(GT, REF(q), F64(0.0)), CAST(LOOM_DTYPE_I64, REF(q)), I(0))));
    return loom_tpb_finish(b, result);
  }
  const loom_sym_expr *n = loom_tpb_shape_sym(b, "n");
  const loom_tp_buffer *Y = loom_tpb_buffer(b, "Y", t, 1, &n);
  loom_tp_expr *i = IDX(loom_tpb_for(b, "i", n, LOOM_TP_LOOP_PARALLEL, false));
  loom_dtype w = loom_dtype_is_int(t) ? LOOM_DTYPE_I64 : LOOM_DTYPE_F64;
  loom_tp_expr *step = OP2(MUL, w == LOOM_DTYPE_I64 ? REF(i) : CAST(w, REF(i)), one_value(b, D, ranks[2], w));
  loom_tpb_store(b, Y, &i, CAST(t, OP2(ADD, one_value(b, B, ranks[0], w), step)));
#undef F64
  return loom_tpb_finish(b, result);
}

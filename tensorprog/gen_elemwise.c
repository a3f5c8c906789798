/* gen_elemwise.c — generators of elementwise programs: unary expressions, n-ary broadcasting
 * expressions (binary, where, broadcast_to), constant fills and tril/triu masks. Built directly
 * as IR (tp_build.h); the callers' expression templates ("exp(x)", "a + b") are parsed with
 * their operands bound to the loads. */
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_unary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                              loom_dtype out, int rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", in, rank, d), *Y = loom_tpb_buffer(&b, "Y", out, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, rank, d, yi);
  const char *const names[1] = {"x"};
  loom_tp_expr *const vals[1] = {loom_tpb_load(&b, X, yi)};
  loom_tpb_store(&b, Y, yi, loom_tpb_parse(&b, expr, names, vals, 1, &out));
  return loom_tpb_finish(&b, result);
}

/* loom_tp_gen_nary with an output rank of at least `min_rank` (broadcast_to may add axes). */
static loom_status gen_nary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, int n, const loom_dtype *in,
                            loom_dtype out, const int *ranks, const loom_tp_bcast *const *modes, int min_rank,
                            loom_tp_func **result) {
  static const char *const vars[4] = {"a", "b", "c", "d"}, *const bufs[4] = {"A", "B", "C", "D"};
  static const char *const prefixes[4] = {"a", "b", "c", "e"}; /* dims of guarded axes: a3, b3, ... */
  if (n < 1 || n > 4) return LOOM_ERROR(INVALID_ARGUMENT, "elementwise generator takes 1 to 4 inputs, not %d", n);
  int R = min_rank;
  for (int i = 0; i < n; i++) {
    if (ranks[i] < 0) return LOOM_ERROR(INVALID_ARGUMENT, "negative rank");
    if (ranks[i] > R) R = ranks[i];
  }
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_tp_buffer *ins[4];
  for (int i = 0; i < n; i++) ins[i] = loom_tpg_bcast_buffer(&b, bufs[i], prefixes[i], ranks[i], R, modes[i], in[i]);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, R, d);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", out, R, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *loads[4];
  loom_tpg_nest(&b, R, d, yi);
  for (int i = 0; i < n; i++) loads[i] = loom_tpg_bcast_load(&b, ins[i], R, modes[i], yi);
  loom_tpb_store(&b, Y, yi, loom_tpb_parse(&b, expr, vars, loads, n, &out));
  return loom_tpb_finish(&b, result);
}

loom_status loom_tp_gen_nary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, int n,
                             const loom_dtype *in, loom_dtype out, const int *ranks, const loom_tp_bcast *const *modes,
                             loom_tp_func **result) {
  return gen_nary(a, cx, name, expr, n, in, out, ranks, modes, 0, result);
}

loom_status loom_tp_gen_broadcast(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                  const loom_tp_bcast *modes, int out_rank, loom_tp_func **result) {
  if (out_rank < rank) return LOOM_ERROR(INVALID_ARGUMENT, "broadcast to rank %d from rank %d", out_rank, rank);
  const loom_tp_bcast *const mp[1] = {modes};
  return gen_nary(a, cx, name, "a", 1, &t, t, &rank, mp, out_rank, result);
}

loom_status loom_tp_gen_binary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                               loom_dtype out, int ra, const loom_tp_bcast *ma, int rb, const loom_tp_bcast *mb,
                               loom_tp_func **result) {
  const loom_dtype ins[2] = {in, in};
  const int ranks[2] = {ra, rb};
  const loom_tp_bcast *const modes[2] = {ma, mb};
  return loom_tp_gen_nary(a, cx, name, expr, 2, ins, out, ranks, modes, result);
}

/* Y[i...] = t(value_text) */
loom_status loom_tp_gen_fill(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             const char *value_text, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, rank, d, yi);
  loom_tpb_store(&b, Y, yi, loom_tp_cast(a, t, loom_tpb_parse(&b, value_text, NULL, NULL, 0, NULL)));
  return loom_tpb_finish(&b, result);
}

/* Y[i...] = select(i<r-1> - i<r-2> <= k, X[i...], 0) (>= for triu); k a scalar or K[0] / K[]. */
loom_status loom_tp_gen_tri(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool upper,
                            loom_dtype kt, int krank, loom_tp_func **result) {
  if (krank >= 0 && (!loom_dtype_is_int(kt) || krank > 1))
    return LOOM_ERROR(INVALID_ARGUMENT, "tril/triu k buffer of dtype %s, rank %d", loom_dtype_name(kt), krank);
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "tril/triu need rank >= 2, not %d", rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, d), *K = NULL;
  const loom_sym_expr *k = NULL, *one = loom_tpb_dim(&b, "1");
  if (krank < 0) k = loom_tpb_scalar(&b, "k");
  else K = loom_tpb_buffer(&b, "K", kt, krank, &one);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_nest(&b, rank, d, yi);
  /* yi[k] is the index value of loop i<k> (NULL after a failure) */
  const loom_sym_expr *hi = yi[rank - 1] ? yi[rank - 1]->u.sym : NULL, *lo = yi[rank - 2] ? yi[rank - 2]->u.sym : NULL;
  loom_tp_expr *diff = loom_tpb_idx(&b, hi && lo ? loom_sym_sub(cx, hi, lo) : NULL);
  loom_tp_expr *zero = loom_tpb_lit_i(&b, LOOM_DTYPE_I64, 0);
  loom_tp_expr *kv = k ? loom_tpb_idx(&b, k) : loom_tp_cast(a, LOOM_DTYPE_I64, loom_tpb_load(&b, K, &zero));
  loom_tp_expr *cond = loom_tp_op2(a, upper ? LOOM_TP_OP_GE : LOOM_TP_OP_LE, diff, kv);
  loom_tpb_store(&b, Y, yi, loom_tp_select(a, cond, loom_tpb_load(&b, X, yi), loom_tpb_lit_i(&b, t, 0)));
  return loom_tpb_finish(&b, result);
}

/* gen_scatter.c — programs that index with data beyond one axis: gather_nd, and the scatters
 * (scatter_nd, scatter_elements) that copy X to Y and then write U at indices read from I, in
 * order. The scatter loops are serial `reduce` loops (two iterations may write one element;
 * the parallel schedule refuses loops that store at indices read from memory). Negative
 * indices count from the end of their axis; an index still outside it fails the kernel
 * (codegen checks every index read from memory; the interpreter checks every access). Built
 * directly as IR (tp_build.h); each generator's comment shows the program's text. */
#include "tensorprog/gen_internal.h"

/* The lets `t<j>: i64 = i64(I[i0, .., i<lead-1>, j])` for j < depth (li: the lead indices). */
static void index_lets(loom_tpb *b, const loom_tp_buffer *I, loom_tp_expr *const *li, int lead, int depth, loom_tp_expr **tj) {
  loom_tp_expr *ii[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < lead; k++) ii[k] = li[k];
  for (int j = 0; j < depth; j++) {
    ii[lead] = loom_tpb_cidx(b, j);
    tj[j] = loom_tpg_index_let(b, loom_tpg_var('t', j), I, ii);
  }
}

/* for c0 in 0..a0 parallel { for c1 .. { Y[c..] = X[c..] } }: Y = X over every element. */
static void copy_nest(loom_tpb *b, const loom_tp_buffer *X, const loom_tp_buffer *Y, int rank, const loom_sym_expr *const *dims) {
  loom_tp_expr *ci[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++)
    ci[k] = loom_tpb_idx(b, loom_tpb_for(b, loom_tpg_var('c', k), dims[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  loom_tpb_store(b, Y, ci, loom_tpb_load(b, X, ci));
  loom_tpb_end_n(b, rank);
}

/* Y[dst] = U[src], or combined with the element already there: Y[dst] + U[src], *, min, max. */
static void scatter_store(loom_tpb *b, const loom_tp_buffer *Y, const loom_tp_buffer *U, loom_tp_scatter_reduction r,
                          loom_tp_expr *const *dst, loom_tp_expr *const *src) {
  loom_tp_expr *u = loom_tpb_load(b, U, src);
  loom_tp_op op;
  switch (r) {
    case LOOM_TP_SCATTER_ADD: op = LOOM_TP_OP_ADD; break;
    case LOOM_TP_SCATTER_MUL: op = LOOM_TP_OP_MUL; break;
    case LOOM_TP_SCATTER_MIN: op = LOOM_TP_OP_MIN; break;
    case LOOM_TP_SCATTER_MAX: op = LOOM_TP_OP_MAX; break;
    default: loom_tpb_store(b, Y, dst, u); return;
  }
  loom_tpb_store(b, Y, dst, loom_tp_op2(b->a, op, loom_tpb_load(b, Y, dst), u));
}

/* add and mul need arithmetic on t (bool has min and max only). */
static loom_status check_reduction(const char *what, loom_dtype t, loom_tp_scatter_reduction r) {
  if (t == LOOM_DTYPE_BOOL && (r == LOOM_TP_SCATTER_ADD || r == LOOM_TP_SCATTER_MUL))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: reduction %s on bool", what, r == LOOM_TP_SCATTER_ADD ? "add" : "mul");
  return LOOM_OK;
}

/* X: Buffer[(d<batch>.., a<indexed>.., d..)], I: Buffer[(d0, .., d<lead-1>, depth)] -> Y (d0, ..):
 *   let t<j>: i64 = i64(I[i0, .., j]) ..
 *   Y[i..] = X[i<batch>.., select(t0 < 0, t0 + a<batch>, t0), .., i<lead>..] */
loom_status loom_tp_gen_gather_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                  int x_rank, int index_rank, int batch, int depth, loom_tp_func **result) {
  int lead = index_rank - 1, R = lead + x_rank - batch - depth;
  if (index_rank < 1 || batch < 0 || batch > lead || depth < 1 || batch + depth > x_rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "gather_nd: batch_dims %d and depth %d do not fit ranks %d and %d", batch, depth,
                      x_rank, index_rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(x_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(index_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *px[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < x_rank; k++)
    px[k] = loom_tpb_shape_sym(&b, k < batch ? loom_tpg_var('d', k) : k < batch + depth ? loom_tpg_var('a', k)
                                                                                        : loom_tpg_var('d', lead + k - batch - depth));
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, x_rank, px);
  for (int k = 0; k < lead; k++) pi[k] = loom_tpb_shape_sym(&b, loom_tpg_var('d', k));
  pi[lead] = loom_sym_const(cx, depth);
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, index_rank, pi);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK], *tj[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, R, t, NULL, yi);
  index_lets(&b, I, yi, lead, depth, tj);
  for (int k = 0; k < x_rank; k++)
    xi[k] = k < batch ? yi[k] : k < batch + depth ? loom_tpg_wrap_index(&b, tj[k - batch], px[k]) : yi[lead + k - batch - depth];
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X: a.., I: Buffer[(d0, .., d<lead-1>, depth)], U: Buffer[(d.., a<depth>..)], Y: a.. ->
 *   <copy X to Y>
 *   for i0 in 0..d0 reduce { .. let t<j>: i64 = i64(I[i0, .., j]) ..
 *     for s<depth> in 0..a<depth> reduce { ..
 *       Y[select(t0 < 0, t0 + a0, t0), .., s<depth>, ..] = [Y[..] op] U[i0, .., s<depth>, ..] } } */
loom_status loom_tp_gen_scatter_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                   int x_rank, int index_rank, int depth, loom_tp_scatter_reduction r,
                                   loom_tp_func **result) {
  int lead = index_rank - 1, ur = lead + x_rank - depth;
  if (index_rank < 1 || depth < 1 || depth > x_rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "scatter_nd: depth %d does not fit ranks %d and %d", depth, x_rank, index_rank);
  LOOM_PROPAGATE(check_reduction("scatter_nd", t, r));
  LOOM_PROPAGATE(loom_tpg_check_rank(x_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(index_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(ur));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK], *pu[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", x_rank, t, ad);
  loom_tpg_dims_d(&b, lead, pi);
  pi[lead] = loom_sym_const(cx, depth);
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, index_rank, pi);
  for (int k = 0; k < lead; k++) pu[k] = pi[k];
  for (int k = depth; k < x_rank; k++) pu[lead + k - depth] = ad[k];
  const loom_tp_buffer *U = loom_tpb_buffer(&b, "U", t, ur, pu);
  const loom_tp_buffer *Y = loom_tpg_buffer_a(&b, "Y", x_rank, t, NULL);
  copy_nest(&b, X, Y, x_rank, ad);
  loom_tp_expr *li[LOOM_TP_GEN_MAX_RANK], *tj[LOOM_TP_GEN_MAX_RANK], *dst[LOOM_TP_GEN_MAX_RANK], *src[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < lead; k++) li[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), pi[k], LOOM_TP_LOOP_SERIAL, true));
  index_lets(&b, I, li, lead, depth, tj);
  for (int k = depth; k < x_rank; k++)
    dst[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('s', k), ad[k], LOOM_TP_LOOP_SERIAL, true));
  for (int k = 0; k < depth; k++) dst[k] = loom_tpg_wrap_index(&b, tj[k], ad[k]);
  for (int k = 0; k < ur; k++) src[k] = k < lead ? li[k] : dst[depth + k - lead];
  scatter_store(&b, Y, U, r, dst, src);
  return loom_tpb_finish(&b, result);
}

/* X: a.., I: Buffer[(d..), index_t], U: Buffer[(d..), t], Y: a.. -> <copy X to Y>
 *   for i0 in 0..d0 reduce { .. let t: i64 = i64(I[i..])
 *     Y[.., select(t < 0, t + a<axis>, t), ..] = [Y[..] op] U[i..] } */
loom_status loom_tp_gen_scatter_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t,
                                         loom_dtype index_t, int rank, int axis, loom_tp_scatter_reduction r,
                                         loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || axis < 0 || axis >= rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "scatter_elements axis %d is outside [0, %d)", axis, rank);
  LOOM_PROPAGATE(check_reduction("scatter_elements", t, r));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *d[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, ad);
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, rank, d);
  const loom_tp_buffer *U = loom_tpb_buffer(&b, "U", t, rank, d);
  const loom_tp_buffer *Y = loom_tpg_buffer_a(&b, "Y", rank, t, NULL);
  copy_nest(&b, X, Y, rank, ad);
  loom_tp_expr *ii[LOOM_TP_GEN_MAX_RANK], *dst[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) ii[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], LOOM_TP_LOOP_SERIAL, true));
  loom_tp_expr *ti = loom_tpg_index_let(&b, "t", I, ii);
  for (int k = 0; k < rank; k++) dst[k] = k == axis ? loom_tpg_wrap_index(&b, ti, ad[k]) : ii[k];
  scatter_store(&b, Y, U, r, dst, ii);
  return loom_tpb_finish(&b, result);
}

/* gen_shape.c — generators of data-movement programs: reshape family, permute, concat, strided
 * slices, take and gather_elements, pad, tile, repeat, one_hot and arange. Built directly as IR
 * (tp_build.h); each generator's comment shows the program's text. Most read X: Buffer[(a0, ..)]
 * into Y: Buffer[(d0, ..)] under the loop nest i0 (parallel), i1, .. over Y. */
#include <stdio.h>

#include "tensorprog/gen_internal.h"

/* Y[i..] = X[floordiv(flat, 1*a1*..), floormod(floordiv(flat, 1*a2*..), a1), ..] with
 * flat = 0 + i0*d1*d2.. + i1*d2.. + .., the row-major position in Y (X[flat] for a 1-D X). */
loom_status loom_tp_gen_reshape(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank_in,
                                int rank_out, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank_in));
  LOOM_PROPAGATE(loom_tpg_check_rank(rank_out));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *iv[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank_in, t, ad);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank_out, t, iv, yi);
  const loom_sym_expr *flat = loom_sym_const(cx, 0);
  for (int k = 0; k < rank_out; k++) {
    const loom_sym_expr *term = iv[k];
    for (int j = k + 1; j < rank_out; j++) term = loom_sym_mul(cx, term, Y ? Y->dims[j] : NULL);
    flat = loom_sym_add(cx, flat, term);
  }
  for (int m = 0; m < rank_in; m++) {
    const loom_sym_expr *stride = loom_sym_const(cx, 1);
    for (int j = m + 1; j < rank_in; j++) stride = loom_sym_mul(cx, stride, ad[j]);
    const loom_sym_expr *q = rank_in == 1 ? flat : loom_sym_floordiv(cx, flat, stride);
    xi[m] = loom_tpb_idx(&b, m == 0 ? q : loom_sym_floormod(cx, q, ad[m]));
  }
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X: Buffer[(d<perm^-1>..)] -> Y[i0, ..] = X[i<perm^-1[0]>, ..] (Y axis k is X axis perm[k]). */
loom_status loom_tp_gen_permute(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                const int *perm, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  unsigned seen = 0;
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k] & 1))
      return LOOM_ERROR(INVALID_ARGUMENT, "permutation entry %d (%d) is not a permutation of [0, %d)", k, perm[k], rank);
    seen |= 1u << perm[k];
  }
  int inv[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) inv[perm[k]] = k;
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *px[LOOM_TP_GEN_MAX_RANK];
  for (int m = 0; m < rank; m++) px[m] = loom_tpb_shape_sym(&b, loom_tpg_var('d', inv[m]));
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, px);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, NULL, yi);
  for (int k = 0; k < rank; k++) xi[perm[k]] = yi[k];
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X<i>: Buffer[(d.., e<i>, d..)] -> Y (the axis e0 + e1 + ..): the loops before the axis, then
 * per input one copy nest into its slice of Y (contiguous inner runs, which the CPU rules
 * vectorise; no select between the inputs per element):
 *   for i<k> in 0..d<k> (k < axis; parallel on axis 0) {
 *     for j0 in 0..e0 { for i<k> (k > axis) { Y[.., j0, ..] = X0[.., j0, ..] } }
 *     for j1 in 0..e1 { .. Y[.., e0 + j1, ..] = X1[.., j1, ..] } .. }
 * with concat along axis 0 each input's j loop parallel. */
loom_status loom_tp_gen_concat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int ninputs, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "concat axis %d is outside [0, %d)", axis, rank);
  if (ninputs < 1) return LOOM_ERROR(INVALID_ARGUMENT, "concat of %d inputs", ninputs);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK], **e = loom_arena_array(a, (size_t)ninputs, sizeof *e, _Alignof(void *)), *total = NULL;
  const loom_tp_buffer **X = loom_arena_array(a, (size_t)ninputs, sizeof *X, _Alignof(void *));
  if (!e || !X) return LOOM_OOM();
  for (int i = 0; i < ninputs; i++) {
    char en[16] = "e";
    snprintf(en + 1, sizeof en - 1, "%d", i);
    for (int k = 0; k < rank; k++) d[k] = loom_tpb_shape_sym(&b, k == axis ? en : loom_tpg_var('d', k));
    e[i] = d[axis];
    total = i ? loom_sym_add(cx, total, e[i]) : e[i];
    char xn[16] = "X";
    snprintf(xn + 1, sizeof xn - 1, "%d", i);
    X[i] = loom_tpb_buffer(&b, xn, t, rank, d);
  }
  d[axis] = total;
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < axis; k++)
    xi[k] = yi[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], k == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false));
  const loom_sym_expr *off = loom_sym_const(cx, 0);
  for (int i = 0; i < ninputs; i++) {
    char jn[16] = "j";
    snprintf(jn + 1, sizeof jn - 1, "%d", i);
    const loom_sym_expr *j = loom_tpb_for(&b, jn, e[i], axis == 0 ? LOOM_TP_LOOP_PARALLEL : LOOM_TP_LOOP_SERIAL, false);
    xi[axis] = loom_tpb_idx(&b, j);
    yi[axis] = loom_tpb_idx(&b, j ? loom_sym_add(cx, off, j) : NULL);
    for (int k = axis + 1; k < rank; k++) xi[k] = yi[k] = loom_tpb_idx(&b, loom_tpb_for(&b, loom_tpg_var('i', k), d[k], LOOM_TP_LOOP_SERIAL, false));
    loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X[i], xi));
    loom_tpb_end_n(&b, rank - axis);
    off = loom_sym_add(cx, off, e[i]);
  }
  return loom_tpb_finish(&b, result);
}

/* X: a.., b<k>: i64 for the sliced axes -> Y[i..] = X[.., b<k> + i<k>*stride<k>, ..]. */
loom_status loom_tp_gen_slice(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                              unsigned axes_mask, const int64_t *strides, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, NULL);
  const loom_sym_expr *bk[LOOM_TP_GEN_MAX_RANK], *iv[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++)
    if (axes_mask >> k & 1) bk[k] = loom_tpb_scalar(&b, loom_tpg_var('b', k));
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, iv, yi);
  for (int k = 0; k < rank; k++)
    xi[k] = axes_mask >> k & 1 ? loom_tpb_idx(&b, loom_sym_add(cx, bk[k], loom_sym_mul(cx, iv[k], loom_sym_const(cx, strides[k]))))
                               : yi[k];
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X: Buffer[(d.., a<axis>, d..)], I: Buffer[(d<axis>, ..)] (the index dims) ->
 *   let t: i64 = i64(I[i<axis>, ..])  Y[i..] = X[.., select(t < 0, t + a<axis>, t), ..] */
loom_status loom_tp_gen_take(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             loom_dtype index_t, int index_rank, loom_tp_func **result) {
  int R = rank - 1 + index_rank;
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "take axis %d is outside [0, %d)", axis, rank);
  if (index_rank < 0) return LOOM_ERROR(INVALID_ARGUMENT, "take: index rank %d", index_rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *px[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++)
    px[k] = loom_tpb_shape_sym(&b, k < axis ? loom_tpg_var('d', k) : k > axis ? loom_tpg_var('d', k - 1 + index_rank)
                                                                              : loom_tpg_var('a', k));
  const loom_tp_buffer *X = loom_tpb_buffer(&b, "X", t, rank, px);
  for (int k = 0; k < index_rank; k++) pi[k] = loom_tpb_shape_sym(&b, loom_tpg_var('d', axis + k));
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, index_rank, pi);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, R, t, NULL, yi);
  loom_tp_expr *ti = loom_tpg_index_let(&b, "t", I, yi + axis);
  for (int k = 0; k < rank; k++)
    xi[k] = k < axis ? yi[k] : k > axis ? yi[k - 1 + index_rank] : loom_tpg_wrap_index(&b, ti, px[axis]);
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X: a.., pads p<k>: i64 (or P: Buffer[(rank,), i64]), [V: Buffer[(1,) or (), t]] ->
 *   if i0 >= p0 && i0 - p0 < a0 && .. { Y[i..] = X[i0 - p0, ..] } else { Y[i..] = t(value) }
 * (an if, not a select: compiled code must never load outside X); rank 0: Y[] = X[]. */
loom_status loom_tp_gen_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            const char *value_text, bool pads_buffer, int value_rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (value_rank > 1) return LOOM_ERROR(INVALID_ARGUMENT, "a pad value of rank %d", value_rank);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *pk[LOOM_TP_GEN_MAX_RANK], *iv[LOOM_TP_GEN_MAX_RANK];
  const loom_sym_expr *nr = loom_sym_const(cx, rank), *one = loom_sym_const(cx, 1);
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, ad), *P = NULL, *V = NULL;
  if (pads_buffer) P = loom_tpb_buffer(&b, "P", LOOM_DTYPE_I64, 1, &nr);
  else
    for (int k = 0; k < rank; k++) pk[k] = loom_tpb_scalar(&b, loom_tpg_var('p', k));
  if (value_rank >= 0) V = loom_tpb_buffer(&b, "V", t, value_rank, &one);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK], *cond = NULL;
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, iv, yi);
  if (!rank) {
    loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
    return loom_tpb_finish(&b, result);
  }
  for (int k = 0; k < rank; k++) {
    loom_tp_expr *lo, *shifted;
    if (P) {
      lo = loom_tp_op2(a, LOOM_TP_OP_GE, loom_tpb_idx(&b, iv[k]), loom_tpb_at(&b, P, k));
      shifted = loom_tp_op2(a, LOOM_TP_OP_SUB, loom_tpb_idx(&b, iv[k]), loom_tpb_at(&b, P, k));
    } else {
      lo = loom_tpb_cmp(&b, LOOM_TP_OP_GE, iv[k], pk[k]);
      shifted = loom_tpb_idx(&b, iv[k] ? loom_sym_sub(cx, iv[k], pk[k]) : NULL);
    }
    xi[k] = shifted;
    loom_tp_expr *hi = loom_tp_op2(a, LOOM_TP_OP_LT, loom_tpb_dup(&b, shifted), loom_tpb_idx(&b, ad[k]));
    cond = cond ? loom_tp_op2(a, LOOM_TP_OP_AND, cond, lo) : lo;
    cond = loom_tp_op2(a, LOOM_TP_OP_AND, cond, hi);
  }
  loom_tpb_if(&b, cond);
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  loom_tpb_else(&b);
  loom_tp_expr *value = V ? (value_rank ? loom_tpb_at(&b, V, 0) : loom_tpb_load(&b, V, NULL))
                          : loom_tpb_parse(&b, value_text, NULL, NULL, 0, NULL);
  loom_tpb_store(&b, Y, yi, loom_tp_cast(a, t, value));
  return loom_tpb_finish(&b, result);
}

/* Y[i..] = X[floormod(i0, a0), ..] */
loom_status loom_tp_gen_tile(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *iv[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, ad);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, iv, yi);
  for (int k = 0; k < rank; k++) xi[k] = loom_tpb_idx(&b, loom_sym_floormod(cx, iv[k], ad[k]));
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* Y[i..] = X[.., floordiv(i<axis>, repeats), ..] */
loom_status loom_tp_gen_repeat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int64_t repeats, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank || repeats < 1) return LOOM_ERROR(INVALID_ARGUMENT, "repeat: bad axis or repeats");
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, NULL);
  const loom_sym_expr *iv[LOOM_TP_GEN_MAX_RANK];
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, iv, yi);
  for (int k = 0; k < rank; k++) xi[k] = k == axis ? loom_tpb_idx(&b, loom_sym_floordiv(cx, iv[k], loom_sym_const(cx, repeats))) : yi[k];
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* X: a.., I: Buffer[(d..), index_t] -> let t: i64 = i64(I[i..])
 *   Y[i..] = X[.., select(t < 0, t + a<axis>, t), ..] */
loom_status loom_tp_gen_gather_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                        int axis, loom_dtype index_t, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "gather_elements axis %d is outside [0, %d)", axis, rank);
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *ad[LOOM_TP_GEN_MAX_RANK], *d[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *X = loom_tpg_buffer_a(&b, "X", rank, t, ad);
  loom_tpg_dims_d(&b, rank, d);
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, rank, d);
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK], *xi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, rank, t, NULL, yi);
  loom_tp_expr *ti = loom_tpg_index_let(&b, "t", I, yi);
  for (int k = 0; k < rank; k++) xi[k] = k == axis ? loom_tpg_wrap_index(&b, ti, ad[k]) : yi[k];
  loom_tpb_store(&b, Y, yi, loom_tpb_load(&b, X, xi));
  return loom_tpb_finish(&b, result);
}

/* I: Buffer[(d0, ..), index_t], Y: Buffer[(d0, .., d<R-1>), t] -> let t: i64 = i64(I[i..])
 *   Y[i..] = select(select(t < 0, t + d<R-1>, t) == i<R-1>, t(on), t(off)) */
loom_status loom_tp_gen_one_hot(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype index_t, int index_rank,
                                loom_dtype t, const char *on_text, const char *off_text, loom_tp_func **result) {
  int R = index_rank + 1;
  if (index_rank < 0) return LOOM_ERROR(INVALID_ARGUMENT, "one_hot: index rank %d", index_rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *d[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_dims_d(&b, index_rank, d);
  const loom_tp_buffer *I = loom_tpb_buffer(&b, "I", index_t, index_rank, d);
  const loom_sym_expr *iv[LOOM_TP_GEN_MAX_RANK];
  loom_tp_expr *yi[LOOM_TP_GEN_MAX_RANK];
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, R, t, iv, yi);
  loom_tp_expr *ti = loom_tpg_index_let(&b, "t", I, yi);
  loom_tp_expr *hit = loom_tp_op2(a, LOOM_TP_OP_EQ, loom_tpg_wrap_index(&b, ti, Y ? Y->dims[R - 1] : NULL),
                                  loom_tpb_idx(&b, iv[R - 1]));
  loom_tp_expr *on = loom_tp_cast(a, t, loom_tpb_parse(&b, on_text, NULL, NULL, 0, NULL));
  loom_tp_expr *off = loom_tp_cast(a, t, loom_tpb_parse(&b, off_text, NULL, NULL, 0, NULL));
  loom_tpb_store(&b, Y, yi, loom_tp_select(a, hit, on, off));
  return loom_tpb_finish(&b, result);
}

/* (start: i64, step: i64, Y: Buffer[(d0,), t]) -> for i0 in 0..d0 parallel { Y[i0] = t(start + i0*step) } */
loom_status loom_tp_gen_arange(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_func **result) {
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  const loom_sym_expr *start = loom_tpb_scalar(&b, "start"), *step = loom_tpb_scalar(&b, "step"), *iv;
  loom_tp_expr *yi;
  const loom_tp_buffer *Y = loom_tpg_output_nest(&b, 1, t, &iv, &yi);
  loom_tpb_store(&b, Y, &yi, loom_tp_cast(a, t, loom_tpb_idx(&b, loom_sym_add(cx, start, loom_sym_mul(cx, iv, step)))));
  return loom_tpb_finish(&b, result);
}

/* (v0: i64, .., Y: Buffer[(n,), t]) -> Y[k] = t(v<k>) for each k; scalar: Y: Buffer[(), t], Y[] = t(v0). */
loom_status loom_tp_gen_sym_tensor(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, bool scalar,
                                   loom_tp_func **result) {
  if (n < (scalar ? 1 : 0)) return LOOM_ERROR(INVALID_ARGUMENT, "sym_tensor of %d values%s", n, scalar ? " as a scalar" : "");
  const loom_sym_expr **v = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, n ? (size_t)n : 1);
  if (!v) return LOOM_OOM();
  loom_tpb b;
  loom_tpb_init(&b, a, cx, name);
  for (int k = 0; k < n; k++) {
    char vn[16] = "v";
    snprintf(vn + 1, sizeof vn - 1, "%d", k);
    v[k] = loom_tpb_scalar(&b, vn);
  }
  const loom_sym_expr *len = loom_sym_const(cx, n);
  const loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", t, scalar ? 0 : 1, &len);
  for (int k = 0; k < (scalar ? 1 : n); k++) {
    loom_tp_expr *value = loom_tp_cast(a, t, loom_tpb_idx(&b, v[k]));
    if (scalar) loom_tpb_store(&b, Y, NULL, value);
    else loom_tpb_store_at(&b, Y, k, value);
  }
  return loom_tpb_finish(&b, result);
}

/* gen_shape.c — generators of data-movement programs: reshape family, permute, concat, strided
 * slices, take and gather_elements, pad, tile, repeat, one_hot and arange. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_reshape(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank_in,
                                int rank_out, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank_in));
  LOOM_PROPAGATE(loom_tpg_check_rank(rank_out));
  const char *const *d = loom_tpg_dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int j = 0; j < rank_in; j++) {
    snprintf(an[j], sizeof an[j], "a%d", j);
    pa[j] = an[j];
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, pa, rank_in, t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank_out, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank_out);
  loom_tpg_open_loops(&sb, axes, rank_out, "i", d, true, false);
  /* flat = row-major index over Y; X axis m: floormod(floordiv(flat, prod a[m+1..]), a[m]). */
  char flat[512] = "0";
  for (int k = 0; k < rank_out; k++) {
    char term[128] = "";
    snprintf(term, sizeof term, "i%d", k);
    for (int j = k + 1; j < rank_out; j++) snprintf(term + strlen(term), sizeof term - strlen(term), "*d%d", j);
    snprintf(flat + strlen(flat), sizeof flat - strlen(flat), " + %s", term);
  }
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank_out; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = X[");
  for (int m = 0; m < rank_in; m++) {
    char stride[128] = "1";
    for (int j = m + 1; j < rank_in; j++) snprintf(stride + strlen(stride), sizeof stride - strlen(stride), "*a%d", j);
    if (m == 0 && rank_in == 1) loom_strbuf_printf(&sb, "%s", flat);
    else if (m == 0) loom_strbuf_printf(&sb, "floordiv(%s, %s)", flat, stride);
    else loom_strbuf_printf(&sb, ", floormod(floordiv(%s, %s), a%d)", flat, stride, m);
  }
  loom_strbuf_puts(&sb, "]\n");
  loom_tpg_close_program(&sb, rank_out);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_permute(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                const int *perm, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  unsigned seen = 0;
  for (int k = 0; k < rank; k++) {
    if (perm[k] < 0 || perm[k] >= rank || (seen >> perm[k] & 1))
      return LOOM_ERROR(INVALID_ARGUMENT, "permutation entry %d (%d) is not a permutation of [0, %d)", k, perm[k], rank);
    seen |= 1u << perm[k];
  }
  const char *const *d = loom_tpg_dims_d();
  const char *px[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) px[perm[k]] = d[k];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, px, rank, t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, true, false);
  char xi[LOOM_TP_GEN_MAX_RANK][8];
  for (int k = 0; k < rank; k++) snprintf(xi[perm[k]], sizeof xi[0], "i%d", k);
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = X[");
  for (int m = 0; m < rank; m++) loom_strbuf_printf(&sb, "%s%s", m ? ", " : "", xi[m]);
  loom_strbuf_puts(&sb, "]\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_concat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int ninputs, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "concat axis %d is outside [0, %d)", axis, rank);
  if (ninputs < 1 || ninputs > 32) return LOOM_ERROR(INVALID_ARGUMENT, "concat of %d inputs (1..32 supported)", ninputs);
  const char *const *d = loom_tpg_dims_d();
  char en[32][8], total[512] = "";
  const char *pdims[LOOM_TP_GEN_MAX_RANK];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  for (int i = 0; i < ninputs; i++) {
    snprintf(en[i], sizeof en[i], "e%d", i);
    for (int k = 0; k < rank; k++) pdims[k] = k == axis ? en[i] : d[k];
    loom_strbuf_printf(&sb, "X%d: ", i);
    loom_tpg_buffer_type(&sb, pdims, rank, t);
    loom_strbuf_puts(&sb, ", ");
    snprintf(total + strlen(total), sizeof total - strlen(total), "%se%d", i ? " + " : "", i);
  }
  for (int k = 0; k < rank; k++) pdims[k] = k == axis ? total : d[k];
  loom_strbuf_puts(&sb, "Y: ");
  loom_tpg_buffer_type(&sb, pdims, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  for (int k = 0; k < rank; k++) {
    if (k == axis) loom_strbuf_printf(&sb, "for i%d in 0..(%s) {\n", k, total);
    else loom_strbuf_printf(&sb, "for i%d in 0..%s%s {\n", k, d[k], k == 0 ? " parallel" : "");
  }
  char yidx[256] = "";
  for (int k = 0; k < rank; k++) snprintf(yidx + strlen(yidx), sizeof yidx - strlen(yidx), "%si%d", k ? ", " : "", k);
  char off[512] = "0";
  for (int i = 0; i < ninputs; i++) {
    char xidx[640] = "";
    for (int k = 0; k < rank; k++) {
      size_t n = strlen(xidx);
      if (k == axis) snprintf(xidx + n, sizeof xidx - n, "%si%d - (%s)", k ? ", " : "", k, off);
      else snprintf(xidx + n, sizeof xidx - n, "%si%d", k ? ", " : "", k);
    }
    char upper[512];
    snprintf(upper, sizeof upper, "%s + e%d", off, i);
    if (i + 1 < ninputs) loom_strbuf_printf(&sb, "%sif i%d < %s {\n", i ? "} else " : "", axis, upper);
    else if (i) loom_strbuf_puts(&sb, "} else {\n");
    loom_strbuf_printf(&sb, "Y[%s] = X%d[%s]\n", yidx, i, xidx);
    snprintf(off + strlen(off), sizeof off - strlen(off), " + e%d", i);
  }
  if (ninputs > 1) loom_strbuf_puts(&sb, "}\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_slice(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                              unsigned axes_mask, const int64_t *strides, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = an[k];
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, pa, rank, t);
  for (int k = 0; k < rank; k++)
    if (axes_mask >> k & 1) loom_strbuf_printf(&sb, ", b%d: i64", k);
  char yi[256];
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  loom_strbuf_printf(&sb, "Y[%s] = X[", yi);
  for (int k = 0; k < rank; k++) {
    if (axes_mask >> k & 1) loom_strbuf_printf(&sb, "%sb%d + i%d*%lld", k ? ", " : "", k, k, (long long)strides[k]);
    else loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_puts(&sb, "]\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_take(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                             loom_dtype index_t, int index_rank, loom_tp_func **result) {
  int R = rank - 1 + index_rank;
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "take axis %d is outside [0, %d)", axis, rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  const char *const *d = loom_tpg_dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8];
  const char *pa[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    pa[k] = k < axis ? d[k] : k > axis ? d[k - 1 + index_rank] : an[k];
  }
  for (int k = 0; k < index_rank; k++) pi[k] = d[axis + k];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, pa, rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  loom_tpg_buffer_type(&sb, pi, index_rank, index_t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, R);
  loom_tpg_open_loops(&sb, axes, R, "i", d, true, false);
  char ii[256] = "", yi[256], xi[512] = "";
  for (int k = 0; k < index_rank; k++) snprintf(ii + strlen(ii), sizeof ii - strlen(ii), "%si%d", k ? ", " : "", axis + k);
  loom_tpg_loop_indices(yi, sizeof yi, R);
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\n", index_rank ? ii : "");
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k < axis) snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
    else if (k > axis) snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k - 1 + index_rank);
    else snprintf(xi + n, sizeof xi - n, "%sselect(t < 0, t + a%d, t)", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  loom_tpg_close_program(&sb, R);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_pad(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                            const char *value_text, bool pads_buffer, int value_rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (value_rank > 1) return LOOM_ERROR(INVALID_ARGUMENT, "a pad value of rank %d", value_rank);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  if (pads_buffer) loom_strbuf_printf(&sb, ", P: Buffer[(%d,), i64]", rank);
  else
    for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, ", p%d: i64", k);
  if (value_rank >= 0) loom_strbuf_printf(&sb, ", V: Buffer[(%s), %s]", value_rank ? "1," : "", loom_dtype_name(t));
  if (value_rank >= 0) value_text = value_rank ? "V[0]" : "V[]";
  char yi[256], xi[512] = "", cond[1024] = "", p[LOOM_TP_GEN_MAX_RANK][8];
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  for (int k = 0; k < rank; k++) {
    snprintf(p[k], sizeof p[k], pads_buffer ? "P[%d]" : "p%d", k);
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%si%d - %s", k ? ", " : "", k, p[k]);
    snprintf(cond + strlen(cond), sizeof cond - strlen(cond), "%si%d >= %s && i%d - %s < a%d", k ? " && " : "", k, p[k], k,
             p[k], k);
  }
  /* An if, not a select: compiled code must never load outside X. */
  if (rank) loom_strbuf_printf(&sb, "if %s {\nY[%s] = X[%s]\n} else {\nY[%s] = %s(%s)\n}\n", cond, yi, xi, yi,
                               loom_dtype_name(t), value_text);
  else loom_strbuf_puts(&sb, "Y[] = X[]\n");
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_tile(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  char yi[256], xi[512] = "";
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  for (int k = 0; k < rank; k++) snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%sfloormod(i%d, a%d)", k ? ", " : "", k, k);
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_repeat(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, int axis,
                               int64_t repeats, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank || repeats < 1) return LOOM_ERROR(INVALID_ARGUMENT, "repeat: bad axis or repeats");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  char yi[256], xi[512] = "";
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k == axis) snprintf(xi + n, sizeof xi - n, "%sfloordiv(i%d, %lld)", k ? ", " : "", k, (long long)repeats);
    else snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", yi, xi);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_gather_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                                        int axis, loom_dtype index_t, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (axis < 0 || axis >= rank) return LOOM_ERROR(INVALID_ARGUMENT, "gather_elements axis %d is outside [0, %d)", axis, rank);
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  loom_tpg_buffer_type(&sb, d, rank, index_t);
  char yi[256], xi[512] = "";
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_open_output_nest(&sb, rank, t, yi, sizeof yi);
  for (int k = 0; k < rank; k++) {
    size_t n = strlen(xi);
    if (k == axis) snprintf(xi + n, sizeof xi - n, "%sselect(t < 0, t + a%d, t)", k ? ", " : "", k);
    else snprintf(xi + n, sizeof xi - n, "%si%d", k ? ", " : "", k);
  }
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\nY[%s] = X[%s]\n", yi, yi, xi);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_one_hot(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype index_t, int index_rank,
                                loom_dtype t, const char *on_text, const char *off_text, loom_tp_func **result) {
  int R = index_rank + 1;
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(I: ", name);
  loom_tpg_buffer_type(&sb, d, index_rank, index_t);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, R, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, R);
  loom_tpg_open_loops(&sb, axes, R, "i", d, true, false);
  char ii[256], yi[256];
  loom_tpg_loop_indices(ii, sizeof ii, index_rank);
  loom_tpg_loop_indices(yi, sizeof yi, R);
  const char *tn = loom_dtype_name(t);
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\n", ii);
  loom_strbuf_printf(&sb, "Y[%s] = select(select(t < 0, t + %s, t) == i%d, %s(%s), %s(%s))\n", yi, d[R - 1], R - 1, tn,
                     on_text, tn, off_text);
  loom_tpg_close_program(&sb, R);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_arange(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_tp_func **result) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(start: i64, step: i64, Y: Buffer[(d0,), %s]) {\n", name, loom_dtype_name(t));
  loom_strbuf_printf(&sb, "for i0 in 0..d0 parallel {\nY[i0] = %s(start + i0*step)\n}\n}\n", loom_dtype_name(t));
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_sym_tensor(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int n, bool scalar,
                                   loom_tp_func **result) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const char *tn = loom_dtype_name(t);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  for (int k = 0; k < n; k++) loom_strbuf_printf(&sb, "v%d: i64, ", k);
  if (scalar) loom_strbuf_printf(&sb, "Y: Buffer[(), %s]) {\nY[] = %s(v0)\n}\n", tn, tn);
  else {
    loom_strbuf_printf(&sb, "Y: Buffer[(%d,), %s]) {\n", n, tn);
    for (int k = 0; k < n; k++) loom_strbuf_printf(&sb, "Y[%d] = %s(v%d)\n", k, tn, k);
    loom_strbuf_puts(&sb, "}\n");
  }
  return loom_tpg_finish(a, cx, &sb, result);
}

/* gen_scatter.c — programs that index with data beyond one axis: gather_nd, and the scatters
 * (scatter_nd, scatter_elements) that copy X to Y and then write U at indices read from I, in
 * order. The scatter loops are serial `reduce` loops (two iterations may write one element;
 * the parallel schedule refuses loops that store at indices read from memory). Negative
 * indices count from the end of their axis; an index still outside it fails the kernel
 * (codegen checks every index read from memory; the interpreter checks every access). */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

/* The combination of the element already in Y (`y`) with the update (`u`). */
static const char *combine_text(loom_tp_scatter_reduction r) {
  switch (r) {
    case LOOM_TP_SCATTER_ADD: return "%s + %s";
    case LOOM_TP_SCATTER_MUL: return "%s * %s";
    case LOOM_TP_SCATTER_MIN: return "min(%s, %s)";
    case LOOM_TP_SCATTER_MAX: return "max(%s, %s)";
    default: return NULL;
  }
}

/* `Y[yi] = X[yi]` over every element of a rank-`rank` Y whose dims are a0.. (outer loop parallel). */
static void copy_nest(loom_strbuf *sb, int rank) {
  char ci[256] = "";
  for (int k = 0; k < rank; k++) {
    loom_strbuf_printf(sb, "for c%d in 0..a%d%s {\n", k, k, k == 0 ? " parallel" : "");
    snprintf(ci + strlen(ci), sizeof ci - strlen(ci), "%sc%d", k ? ", " : "", k);
  }
  loom_strbuf_printf(sb, "Y[%s] = X[%s]\n", ci, ci);
  loom_tpg_close_loops(sb, rank);
}

/* Y[dst] = U[src], or combined with the element already there. */
static void scatter_store(loom_strbuf *sb, loom_tp_scatter_reduction r, const char *dst, const char *src) {
  char y[600], u[600];
  snprintf(y, sizeof y, "Y[%s]", dst);
  snprintf(u, sizeof u, "U[%s]", src);
  const char *fmt = combine_text(r);
  loom_strbuf_printf(sb, "%s = ", y);
  if (fmt) loom_strbuf_printf(sb, fmt, y, u);
  else loom_strbuf_puts(sb, u);
  loom_strbuf_putc(sb, '\n');
}

/* The index text of a data index t on an axis of extent `dim`: negatives count from the end. */
static void wrapped(char *out, size_t cap, const char *t, const char *dim) {
  snprintf(out, cap, "select(%s < 0, %s + %s, %s)", t, t, dim, t);
}

loom_status loom_tp_gen_gather_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                  int x_rank, int index_rank, int batch, int depth, loom_tp_func **result) {
  int lead = index_rank - 1, R = lead + x_rank - batch - depth;
  if (index_rank < 1 || batch < 0 || batch > lead || depth < 1 || batch + depth > x_rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "gather_nd: batch_dims %d and depth %d do not fit ranks %d and %d", batch, depth,
                      x_rank, index_rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(x_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(index_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(R));
  const char *const *d = loom_tpg_dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8], depth_text[24];
  const char *px[LOOM_TP_GEN_MAX_RANK], *pi[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < x_rank; k++) {
    snprintf(an[k], sizeof an[k], "a%d", k);
    px[k] = k < batch ? d[k] : k < batch + depth ? an[k] : d[lead + k - batch - depth];
  }
  for (int k = 0; k < lead; k++) pi[k] = d[k];
  snprintf(depth_text, sizeof depth_text, "%d", depth);
  pi[lead] = depth_text;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(X: ", name);
  loom_tpg_buffer_type(&sb, px, x_rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  loom_tpg_buffer_type(&sb, pi, index_rank, index_t);
  loom_strbuf_puts(&sb, ", ");
  char yi[256], lead_i[256] = "", xi[1024] = "";
  loom_tpg_open_output_nest(&sb, R, t, yi, sizeof yi);
  for (int k = 0; k < lead; k++) snprintf(lead_i + strlen(lead_i), sizeof lead_i - strlen(lead_i), "i%d, ", k);
  for (int j = 0; j < depth; j++) loom_strbuf_printf(&sb, "let t%d: i64 = i64(I[%s%d])\n", j, lead_i, j);
  for (int k = 0; k < x_rank; k++) {
    char part[128], tj[8];
    if (k < batch) snprintf(part, sizeof part, "i%d", k);
    else if (k < batch + depth) {
      snprintf(tj, sizeof tj, "t%d", k - batch);
      wrapped(part, sizeof part, tj, an[k]);
    } else snprintf(part, sizeof part, "i%d", lead + k - batch - depth);
    snprintf(xi + strlen(xi), sizeof xi - strlen(xi), "%s%s", k ? ", " : "", part);
  }
  loom_strbuf_printf(&sb, "Y[%s] = X[%s]\n", R ? yi : "", xi);
  loom_tpg_close_program(&sb, R);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_scatter_nd(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, loom_dtype index_t,
                                   int x_rank, int index_rank, int depth, loom_tp_scatter_reduction r,
                                   loom_tp_func **result) {
  int lead = index_rank - 1, ur = lead + x_rank - depth;
  if (index_rank < 1 || depth < 1 || depth > x_rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "scatter_nd: depth %d does not fit ranks %d and %d", depth, x_rank, index_rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(x_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(index_rank));
  LOOM_PROPAGATE(loom_tpg_check_rank(ur));
  const char *const *d = loom_tpg_dims_d();
  char an[LOOM_TP_GEN_MAX_RANK][8], depth_text[24];
  const char *pi[LOOM_TP_GEN_MAX_RANK], *pu[LOOM_TP_GEN_MAX_RANK];
  for (int k = 0; k < x_rank; k++) snprintf(an[k], sizeof an[k], "a%d", k);
  for (int k = 0; k < lead; k++) pi[k] = pu[k] = d[k];
  snprintf(depth_text, sizeof depth_text, "%d", depth);
  pi[lead] = depth_text;
  for (int k = depth; k < x_rank; k++) pu[lead + k - depth] = an[k];
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", x_rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  loom_tpg_buffer_type(&sb, pi, index_rank, index_t);
  loom_strbuf_puts(&sb, ", U: ");
  loom_tpg_buffer_type(&sb, pu, ur, t);
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_buffer_a(&sb, "Y", x_rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  copy_nest(&sb, x_rank);
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, lead);
  loom_tpg_open_loops(&sb, axes, lead, "i", d, false, true);
  char lead_i[256] = "", dst[1024] = "", src[512] = "";
  for (int k = 0; k < lead; k++) snprintf(lead_i + strlen(lead_i), sizeof lead_i - strlen(lead_i), "i%d, ", k);
  for (int j = 0; j < depth; j++) loom_strbuf_printf(&sb, "let t%d: i64 = i64(I[%s%d])\n", j, lead_i, j);
  for (int k = depth; k < x_rank; k++) loom_strbuf_printf(&sb, "for s%d in 0..a%d reduce {\n", k, k);
  for (int k = 0; k < x_rank; k++) {
    char part[128], tj[8];
    if (k < depth) {
      snprintf(tj, sizeof tj, "t%d", k);
      wrapped(part, sizeof part, tj, an[k]);
    } else snprintf(part, sizeof part, "s%d", k);
    snprintf(dst + strlen(dst), sizeof dst - strlen(dst), "%s%s", k ? ", " : "", part);
  }
  for (int k = 0; k < ur; k++) {
    if (k < lead) snprintf(src + strlen(src), sizeof src - strlen(src), "%si%d", k ? ", " : "", k);
    else snprintf(src + strlen(src), sizeof src - strlen(src), "%ss%d", k ? ", " : "", depth + k - lead);
  }
  scatter_store(&sb, r, dst, src);
  loom_tpg_close_loops(&sb, x_rank - depth);
  loom_tpg_close_program(&sb, lead);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_scatter_elements(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t,
                                         loom_dtype index_t, int rank, int axis, loom_tp_scatter_reduction r,
                                         loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  if (rank < 1 || axis < 0 || axis >= rank)
    return LOOM_ERROR(INVALID_ARGUMENT, "scatter_elements axis %d is outside [0, %d)", axis, rank);
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  loom_tpg_buffer_a(&sb, "X", rank, t);
  loom_strbuf_puts(&sb, ", I: ");
  loom_tpg_buffer_type(&sb, d, rank, index_t);
  loom_strbuf_puts(&sb, ", U: ");
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ", ");
  loom_tpg_buffer_a(&sb, "Y", rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  copy_nest(&sb, rank);
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, false, true);
  char ii[256], dst[512] = "", ax[8];
  loom_tpg_loop_indices(ii, sizeof ii, rank);
  loom_strbuf_printf(&sb, "let t: i64 = i64(I[%s])\n", ii);
  snprintf(ax, sizeof ax, "a%d", axis);
  for (int k = 0; k < rank; k++) {
    char part[96];
    if (k == axis) wrapped(part, sizeof part, "t", ax);
    else snprintf(part, sizeof part, "i%d", k);
    snprintf(dst + strlen(dst), sizeof dst - strlen(dst), "%s%s", k ? ", " : "", part);
  }
  scatter_store(&sb, r, dst, ii);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

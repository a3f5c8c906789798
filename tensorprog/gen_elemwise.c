/* gen_elemwise.c — generators of elementwise programs: unary expressions, n-ary broadcasting
 * expressions (binary, where, broadcast_to), constant fills and tril/triu masks. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "tensorprog/gen_internal.h"

loom_status loom_tp_gen_unary(loom_arena *a, loom_sym_ctx *cx, const char *name, const char *expr, loom_dtype in,
                              loom_dtype out, int rank, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, in);
  loom_strbuf_puts(&sb, ", Y: ");
  loom_tpg_buffer_type(&sb, d, rank, out);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, true, false);
  char load[256] = "X[";
  for (int k = 0; k < rank; k++) snprintf(load + strlen(load), sizeof load - strlen(load), "%si%d", k ? ", " : "", k);
  strcat(load, "]");
  const char *names[1] = {"x"}, *repl[1] = {load};
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < rank; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = ");
  loom_tpg_substitute(&sb, expr, names, repl, 1);
  loom_strbuf_putc(&sb, '\n');
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
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
  char dims[4][LOOM_TP_GEN_MAX_RANK][12], loads[4][512];
  const char *pd[4][LOOM_TP_GEN_MAX_RANK], *repl[4];
  for (int i = 0; i < n; i++) {
    loom_tpg_bcast_input(prefixes[i], ranks[i], R, modes[i], dims[i], loads[i], sizeof loads[i], bufs[i]);
    for (int j = 0; j < ranks[i]; j++) pd[i][j] = dims[i][j];
    repl[i] = loads[i];
  }
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(", name);
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(&sb, "%s: ", bufs[i]);
    loom_tpg_buffer_type(&sb, pd[i], ranks[i], in[i]);
    loom_strbuf_puts(&sb, ", ");
  }
  loom_strbuf_puts(&sb, "Y: ");
  loom_tpg_buffer_type(&sb, d, R, out);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, R);
  loom_tpg_open_loops(&sb, axes, R, "i", d, true, false);
  loom_strbuf_puts(&sb, "Y[");
  for (int k = 0; k < R; k++) loom_strbuf_printf(&sb, "%si%d", k ? ", " : "", k);
  loom_strbuf_puts(&sb, "] = ");
  loom_tpg_substitute(&sb, expr, vars, repl, n);
  loom_strbuf_putc(&sb, '\n');
  loom_tpg_close_program(&sb, R);
  return loom_tpg_finish(a, cx, &sb, result);
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

loom_status loom_tp_gen_fill(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank,
                             const char *value_text, loom_tp_func **result) {
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "prim @%s(Y: ", name);
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256];
  loom_tpg_loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = %s(%s)\n", yi, loom_dtype_name(t), value_text);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

loom_status loom_tp_gen_tri(loom_arena *a, loom_sym_ctx *cx, const char *name, loom_dtype t, int rank, bool upper,
                            loom_dtype kt, int krank, loom_tp_func **result) {
  if (krank >= 0 && (!loom_dtype_is_int(kt) || krank > 1))
    return LOOM_ERROR(INVALID_ARGUMENT, "tril/triu k buffer of dtype %s, rank %d", loom_dtype_name(kt), krank);
  if (rank < 2) return LOOM_ERROR(INVALID_ARGUMENT, "tril/triu need rank >= 2, not %d", rank);
  LOOM_PROPAGATE(loom_tpg_check_rank(rank));
  const char *const *d = loom_tpg_dims_d();
  loom_strbuf sb;
  loom_tpg_open_x(&sb, name, rank, t);
  if (krank < 0) loom_strbuf_puts(&sb, ", k: i64, Y: ");
  else loom_strbuf_printf(&sb, ", K: Buffer[(%s), %s], Y: ", krank ? "1," : "", loom_dtype_name(kt));
  loom_tpg_buffer_type(&sb, d, rank, t);
  loom_strbuf_puts(&sb, ") {\n");
  int axes[LOOM_TP_GEN_MAX_RANK];
  loom_tpg_all_axes(axes, rank);
  loom_tpg_open_loops(&sb, axes, rank, "i", d, true, false);
  char yi[256];
  loom_tpg_loop_indices(yi, sizeof yi, rank);
  loom_strbuf_printf(&sb, "Y[%s] = select(i%d - i%d %s %s, X[%s], 0)\n", yi, rank - 1, rank - 2, upper ? ">=" : "<=",
                     krank < 0 ? "k" : krank ? "i64(K[0])" : "i64(K[])", yi);
  loom_tpg_close_program(&sb, rank);
  return loom_tpg_finish(a, cx, &sb, result);
}

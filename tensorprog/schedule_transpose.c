/* schedule_transpose.c — rule 0b of the default CPU rules (tp_schedule_cpu.h): a transposing
 * copy in tiles.
 *
 * A nest whose innermost loop v writes its output with unit stride while it reads some input
 * at a stride (v indexes an outer axis of that input, and an outer loop u indexes its last
 * axis) walks one of the two across memory: Y[i0, i1] = X[i1, i0] reads a column of X per row
 * of Y, one cache line per element once a column no longer fits the cache (a 768 x 3072
 * transpose ran 4x slower than ONNX Runtime), and with a power-of-two row pitch even a short
 * column maps to one cache set. Strip-mined by T along u, with u's T iterations innermost, each
 * v reads T consecutive elements of the input (one line) and writes T rows of the output, whose
 * T lines stay in L1 across the next T values of v:
 *
 *     for .. { for u { .. for v { Y[.., u, .., v] = f(X[.., v, .., u], ..) } } }
 *  -> for u_o in 0..n // T { for .. { .. for v { for u_i in 0..T { .. } } } }   (T constant: one vector load)
 *     for u_t in 0..n % T { for .. { .. for v { .. } } }                       (the rows left)
 *
 * (u reordered to the top, where its strips are the parallel work even for a batch of one;
 * split; u_i sunk below every loop). The two nests are then scheduled as any (rule 1: parallel
 * outermost, fused with the next). */
#include "tensorprog/tp_schedule_cpu.h"

enum { MAX_NEST = 8, TILE = 8 };

static bool is_var(const loom_tp_expr *e, const loom_sym_expr *var) {
  return e->kind == LOOM_TP_EXPR_SYM && e->u.sym == var;
}

/* The loop (among loops[0..n-2]) whose variable is the last index of a load in `e` that uses
 * v in another index: the strided read. -1 when there is none. */
static int strided_load(const loom_tp_expr *e, const loom_sym_expr *v, loom_tp_stmt *const *loops, int n) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: {
      const loom_tp_buffer *b = e->u.load.buf;
      loom_tp_expr *const *idx = e->u.load.idx;
      if (b->ndim >= 2 && !loom_tp_expr_uses_var(idx[b->ndim - 1], v)) {
        bool strided = false;
        for (int d = 0; d < b->ndim - 1; d++) strided = strided || loom_tp_expr_uses_var(idx[d], v);
        for (int k = 0; k < n - 1 && strided; k++)
          if (is_var(idx[b->ndim - 1], loops[k]->u.loop.var)) return k;
      }
      return -1;
    }
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) {
        int k = strided_load(e->u.op.args[i], v, loops, n);
        if (k >= 0) return k;
      }
      return -1;
    case LOOM_TP_EXPR_CAST: return strided_load(e->u.cast_arg, v, loops, n);
    case LOOM_TP_EXPR_SELECT: {
      int k = strided_load(e->u.select.cond, v, loops, n);
      if (k < 0) k = strided_load(e->u.select.then_e, v, loops, n);
      return k >= 0 ? k : strided_load(e->u.select.else_e, v, loops, n);
    }
    default: return -1;
  }
}

/* An extent below the tile: nothing to gain. */
static bool short_extent(const loom_sym_expr *n) {
  int64_t c;
  return loom_sym_is_const(n, &c) && c < TILE;
}

loom_status loom_tp_schedule_transpose(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, loom_strbuf *why) {
  loom_tp_stmt *loops[MAX_NEST];
  int n = 0;
  for (loom_tp_stmt *l = *slot; l && n < MAX_NEST; l = loom_tp_child_loop(l)) {
    bool kind_ok = l->u.loop.kind == LOOM_TP_LOOP_SERIAL || (n == 0 && l->u.loop.kind == LOOM_TP_LOOP_PARALLEL);
    if (l->u.loop.reduce || !kind_ok) return LOOM_OK;
    loops[n++] = l;
  }
  if (n < 2 || loom_tp_child_loop(loops[n - 1])) return LOOM_OK;
  loom_tp_stmt *body = loops[n - 1]->u.loop.body;
  while (body->kind == LOOM_TP_STMT_SEQ && body->u.seq.n == 1) body = body->u.seq.items[0];
  if (body->kind != LOOM_TP_STMT_STORE) return LOOM_OK;
  const loom_tp_buffer *y = body->u.store.buf;
  const loom_sym_expr *v = loops[n - 1]->u.loop.var;
  if (!is_var(body->u.store.idx[y->ndim - 1], v)) return LOOM_OK;
  int j = strided_load(body->u.store.value, v, loops, n);
  if (j < 0 || short_extent(loops[j]->u.loop.extent) || short_extent(loops[n - 1]->u.loop.extent)) return LOOM_OK;
  const char *un = loom_sym_var_name(loops[j]->u.loop.var), *vn = loom_sym_var_name(v);

  /* u to the top (its strips are the parallel work; a batch of one still splits), split, and
   * its strip sunk below every loop */
  loom_status st = LOOM_OK;
  for (int k = 0; k < n && !st; k++) st = loom_tp_set_kind(cx, loops[k], LOOM_TP_LOOP_SERIAL);
  for (int k = j - 1; k >= 0 && !st; k--) st = loom_tp_reorder(a, cx, f, loops[k]);
  loom_tp_stmt *uo = NULL, *ui = NULL, *ut = NULL;
  if (!st) st = loom_tp_split(a, cx, f, loops[0], TILE, &uo, &ui, &ut);
  loom_tp_stmt *l = ui;
  for (int t = 0; !st && t < n - 1; t++) {
    loom_tp_stmt *c = loom_tp_child_loop(l);
    st = loom_tp_reorder(a, cx, f, l);
    l = c;
  }
  if (st) {
    /* every primitive keeps the program correct: a refusal leaves a partial tiling */
    loom_strbuf_printf(why, "loops %s, %s: transposed copy, tiling stopped (%s)\n", un, vn, loom_status_message(st));
    loom_status_free(st);
    return LOOM_OK;
  }
  loom_strbuf_printf(why, "loop %s: transposed copy, strips of %d innermost (%s indexes the last axis of a read strided in %s)\n",
                     un, TILE, un, vn);
  return LOOM_OK;
}

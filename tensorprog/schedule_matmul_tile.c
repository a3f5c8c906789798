/* schedule_matmul_tile.c — one register tile of rule 0 (the matmul rule): the accumulators in
 * a Local, init and reduction apart, and a heavy epilogue moved after the tile is stored
 * (schedule_matmul_internal.h, docs/codegen.md "Schedule rules"). */
#include <string.h>

#include "tensorprog/schedule_matmul_internal.h"

/* ---- a heavy epilogue after the tile is stored ----------------------------------------------
 *
 * An epilogue that calls a transcendental (GELU's tanh or erf, a sigmoid, exp) applied to the
 * accumulators is unrolled over the tile's rows: 24 inline tanh expansions per 12 x 32 tile,
 * and again in the row-tail tile and the few-rows variant. LLVM spent most of the GPT-2
 * block's MLP kernel's compile time on them. Such an epilogue runs instead after the tile is
 * stored, on the stored rows (in L1), in a loop over the rows: one vector body.
 *     for ii unroll { for ji { acc[ii, ji] = f(acc[ii, ji]) } }; for ii' unroll { for ji' { C[x(ii', ji')] = acc[ii', ji'] } }
 *  -> for ii' unroll { for ji' { C[x(ii', ji')] = acc[ii', ji'] } }; for ii { for ji { C[x(ii, ji)] = f(C[x(ii, ji)]) } } */

static bool heavy_expr(const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_OP:
      switch (e->u.op.op) {
        case LOOM_TP_OP_EXP: case LOOM_TP_OP_LOG: case LOOM_TP_OP_TANH: case LOOM_TP_OP_SIGMOID: case LOOM_TP_OP_ERF:
        case LOOM_TP_OP_SIN: case LOOM_TP_OP_COS: case LOOM_TP_OP_POW: case LOOM_TP_OP_ASIN: case LOOM_TP_OP_ACOS:
        case LOOM_TP_OP_ATAN: return true;
        default: break;
      }
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (heavy_expr(e->u.op.args[i])) return true;
      return false;
    case LOOM_TP_EXPR_CAST: return heavy_expr(e->u.cast_arg);
    case LOOM_TP_EXPR_SELECT:
      return heavy_expr(e->u.select.cond) || heavy_expr(e->u.select.then_e) || heavy_expr(e->u.select.else_e);
    default: return false;
  }
}

/* e with every load of `from` replaced by a load of `to` at idx (a copy where it changes). */
static loom_tp_expr *reload(loom_arena *a, loom_tp_expr *e, const loom_tp_buffer *from, const loom_tp_buffer *to,
                            loom_tp_expr **idx) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: return e->u.load.buf == from ? loom_tp_load(a, to, idx) : e;
    case LOOM_TP_EXPR_OP: {
      loom_tp_expr *r = LOOM_ARENA_NEW(a, loom_tp_expr);
      if (!r) return NULL;
      *r = *e;
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (!(r->u.op.args[i] = reload(a, e->u.op.args[i], from, to, idx))) return NULL;
      return r;
    }
    case LOOM_TP_EXPR_CAST: {
      loom_tp_expr *x = reload(a, e->u.cast_arg, from, to, idx);
      return x ? loom_tp_cast(a, e->dtype, x) : NULL;
    }
    case LOOM_TP_EXPR_SELECT: {
      loom_tp_expr *x = reload(a, e->u.select.cond, from, to, idx), *y = reload(a, e->u.select.then_e, from, to, idx),
                   *z = reload(a, e->u.select.else_e, from, to, idx);
      return x && y && z ? loom_tp_select(a, x, y, z) : NULL;
    }
    default: return e;
  }
}

/* The store two loops down in `l` (for v { for w { store } }), else NULL. */
static loom_tp_stmt *store_in_2d(loom_tp_stmt *l) {
  loom_tp_stmt *in = l && l->kind == LOOM_TP_STMT_FOR ? loom_tp_child_loop(l) : NULL;
  loom_tp_stmt *st = in ? loom_tpmm_strip_seq(in->u.loop.body) : NULL;
  return st && st->kind == LOOM_TP_STMT_STORE ? st : NULL;
}

/* `epi` (parts[2] of the tile's nest) and the store-back, the last item of the tile's body:
 * the epilogue moved after the store-back, from memory, its row loop not unrolled. Nothing
 * changes unless both have the shapes above and the epilogue is heavy. */
static loom_status epilogue_after_store(mm_ctx *c, loom_tp_stmt *tile, loom_tp_stmt *epi) {
  loom_tp_stmt *body = tile->u.loop.body, *es = store_in_2d(epi);
  if (body->kind != LOOM_TP_STMT_SEQ || !es || !heavy_expr(es->u.store.value)) return LOOM_OK;
  loom_tp_stmt *back = body->u.seq.items[body->u.seq.n - 1], *bs = store_in_2d(back);
  const loom_tp_buffer *acc = es->u.store.buf;
  if (!bs || es->u.store.buf->ndim != 2 || bs->u.store.value->kind != LOOM_TP_EXPR_LOAD ||
      bs->u.store.value->u.load.buf != acc || bs->u.store.buf == acc)
    return LOOM_OK;
  loom_tp_expr *const *bi = bs->u.store.value->u.load.idx, *const *ei = es->u.store.idx;
  for (int d = 0; d < 2; d++)
    if (bi[d]->kind != LOOM_TP_EXPR_SYM || ei[d]->kind != LOOM_TP_EXPR_SYM) return LOOM_OK;
  /* the store-back's index of C in the epilogue's variables */
  const loom_sym_expr *vars[2] = {bi[0]->u.sym, bi[1]->u.sym}, *vals[2] = {ei[0]->u.sym, ei[1]->u.sym};
  const loom_tp_buffer *out = bs->u.store.buf;
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, (size_t)out->ndim);
  if (!idx) return LOOM_OOM();
  for (int d = 0; d < out->ndim; d++)
    if (!(idx[d] = loom_tp_expr_copy_subst(c->a, c->cx, bs->u.store.idx[d], vars, vals, 2))) return LOOM_OOM();
  loom_tp_expr *v = reload(c->a, es->u.store.value, acc, out, idx);
  if (!v) return LOOM_OOM();
  es->u.store.buf = out;
  es->u.store.idx = idx;
  es->u.store.value = v;
  epi->u.loop.kind = LOOM_TP_LOOP_SERIAL;
  /* a clamped tile stores its repeated last row more than once: f applied once per row */
  if (c->distinct_rows) epi->u.loop.extent = c->distinct_rows;
  c->epi_moved = true;
  /* epi out of the nest's parts (a sequence in the body), then after the store-back */
  loom_tp_stmt *nothing = loom_tp_seq(c->a, NULL, 0);
  if (!nothing) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_replace(c->view, epi, nothing));
  loom_tp_stmt **items = LOOM_ARENA_ARRAY(c->a, loom_tp_stmt *, body->u.seq.n + 1);
  if (!items) return LOOM_OOM();
  memcpy(items, body->u.seq.items, body->u.seq.n * sizeof *items);
  items[body->u.seq.n] = epi;
  body->u.seq.items = items;
  body->u.seq.n++;
  loom_strbuf_printf(c->why, "  the epilogue (a transcendental) after the tile is stored, over its rows in a loop\n");
  return LOOM_OK;
}

/* One register tile at `tile` (body: [for ii {] [for ji {] init; for r {upd} [}] [}]): the
 * accumulator in a Local, the init and the reduction distributed apart, r moved outermost. */
loom_status loom_tpmm_micro_tile(mm_ctx *c, loom_tp_stmt *tile, const char *ii, const char *ji) {
  loom_tp_stmt *nest = loom_tpmm_strip_seq(tile->u.loop.body); /* kept by cache_write, which wraps it */
  c->epi_moved = false;
  if (c->distinct_rows) /* repeated rows compute and store equal values */
    LOOM_PROPAGATE(loom_tp_cache_write_aliased(c->a, c->cx, tile, c->m->c, "acc", NULL, NULL));
  else
    LOOM_PROPAGATE(loom_tp_cache_write(c->a, c->cx, tile, c->m->c, "acc", NULL, NULL));
  if (!ii && !ji) return LOOM_OK; /* a single accumulator: nothing to move */
  loom_tp_stmt **parts;
  size_t nparts;
  if (ii && ji) LOOM_PROPAGATE(loom_tp_distribute(c->a, c->cx, c->view, loom_tp_child_loop(nest), NULL, NULL));
  LOOM_PROPAGATE(loom_tp_distribute(c->a, c->cx, c->view, nest, &parts, &nparts));
  if (ii && ji) LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, loom_tp_child_loop(parts[1])));
  LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, parts[1]));
  if (ii) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, tile->u.loop.body, ii, LOOM_TP_LOOP_UNROLL));
  if (ji) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, tile->u.loop.body, ji, LOOM_TP_LOOP_VECTORIZE));
  if (ii && ji && nparts == 3) LOOM_PROPAGATE(epilogue_after_store(c, tile, parts[2]));
  return LOOM_OK;
}

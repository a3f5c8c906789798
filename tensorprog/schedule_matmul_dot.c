/* schedule_matmul_dot.c — rule 0's dot-product tiles for a B read as [j, r]
 * (schedule_matmul_internal.h, docs/codegen.md "Schedule rules"). */
#include <stdio.h>

#include "tensorprog/schedule_matmul_internal.h"

/* ---- dot-product tiles: B read as [j, r] ----------------------------------------------------
 *
 * linear(x, W) on a W that is not laid out in panels (a graph input; a tied embedding that
 * `pack` leaves alone, graph/pass_pack.c) reads B[j, r]: each row of B contiguous in r.
 * Packing a panel of such a B transposes it, one strided gather per row of the panel: a
 * 16 x 768 x 50257 product (a tied GPT-2 LM head at 16 tokens) ran at 12% of the FMA peak. When
 * the reduction is long (DOT_MIN_K or more) and the rows few, the rule instead computes
 * DOT_ROWS x DOT_COLS tiles of dot products, r innermost and vectorised by LLVM (`reassoc` in
 * reduce loops: one vector accumulator per output, summed across its lanes once at the end):
 *     for jo parallel { for b.. { for io { acc = 0; for r reduce { for ii unroll { for ji unroll {
 *       acc[ii, ji] += A[.., DOT_ROWS*io + ii, r] * B[DOT_COLS*jo + ji, r] } } }; C = acc }
 *       for it { the same, one row } } }
 *     for jt { the column tail: DOT_ROWS x 1 tiles, then 1 x 1 }
 * per vector step DOT_ROWS + DOT_COLS loads feed DOT_ROWS * DOT_COLS FMAs (a lone dot product:
 * two loads per FMA), DOT_COLS rows of B are read at once and each is read from memory once per
 * DOT_COLS columns, then from L1 by every row tile. The horizontal sums (DOT_ROWS * DOT_COLS
 * per tile) cost about what 8 vector steps do, hence the long reductions only (attention's
 * Q K^T, head dim 64, keeps the packed panels), and packing costs a fixed amount per panel that
 * many rows amortise, hence fewer than DOT_MAX_ROWS rows (a variant; measured, 1 thread, x (m, k)
 * times W (4096, k)^T: k = 256, m = 16: 0.51 against 1.20 ms packed, m = 64: 2.27 against 2.00;
 * k = 768 and W (50257, 768): m = 16 38 against 65 ms, m = 64 66 against 104). One row is the
 * row tail's tile. */

/* Whether the nest can take dot_tiles (f32; B not contiguous in j; the rows of a and b
 * contiguous in r); they are used where r's extent is at least DOT_MIN_K. */
bool loom_tpmm_dot_shaped(const mm_nest *m) {
  return !m->b_unit && !m->panel && m->c->dtype == LOOM_DTYPE_F32 && m->ab_unit_r;
}

/* loom_tp_split of `l` by `factor`; when its extent is known to be below the factor, no tiles:
 * *outer NULL and *tail the loop itself. */
static loom_status split_or_tail(mm_ctx *c, loom_tp_stmt *l, int64_t factor, loom_tp_stmt **outer, loom_tp_stmt **inner,
                                 loom_tp_stmt **tail) {
  loom_status st = loom_tp_split(c->a, c->cx, c->view, l, factor, outer, inner, tail);
  if (!st || loom_status_code(st) != LOOM_CODE_FAILED_PRECONDITION) return st;
  loom_status_free(st);
  *outer = *inner = NULL;
  *tail = l;
  return LOOM_OK;
}

/* The next column tile's rows prefetched into L2, spread over the row tiles: row tile io (tile
 * loop `io` under the column tile loop `jo`, n columns in all) first prefetches every cache
 * line of row DOT_COLS + io of the column tiles (clamped to the last column, so it never names
 * an element outside B), the row tiles past DOT_COLS nothing:
 *     for io { for q in 0..max(0, min(L, (DOT_COLS - io) * L)) {
 *       prefetch_l2 B[DOT_COLS*jo + min(DOT_COLS + io, n - 1 - DOT_COLS*jo), min(16*q, k - 1)] }
 *       tile }
 * with L = floordiv(k + 15, 16), the lines of a row. The reduction loop stays free of them
 * (LLVM 19 does not vectorise a loop holding llvm.prefetch). B's tile is read from memory once
 * and then from cache by every row tile, so the hardware prefetchers alone kept a B larger than
 * the caches (a 154 MB tied GPT-2 LM head, 16 rows) well below the core's bandwidth. Measured,
 * loom run, 16 x 768 times (50257 x 768)^T, 1 thread, 8 rounds alternated on a loaded machine:
 * every round faster than without, minima 49 -> 33-36 ms; into L1 (prefetcht0) it was slower
 * than none (the 12 KB tile evicts A's rows), prefetchnta too, two tiles ahead no better. */
static loom_status prefetch_next_tile(mm_ctx *c, loom_tp_stmt *jo, loom_tp_stmt *io, const char *ji,
                                      const loom_sym_expr *n) {
  loom_sym_ctx *cx = c->cx;
  loom_tp_stmt *rl = loom_tpmm_loop_named(io->u.loop.body, c->m->red);
  loom_tp_stmt *jl = rl ? loom_tpmm_loop_named(rl->u.loop.body, ji) : NULL; /* the j of the load */
  const loom_tp_expr *ld = jl ? loom_tpmm_load_of(jl->u.loop.body, c->m->b) : NULL;
  if (!rl || !jl || !ld || loom_dtype_size(c->m->b->dtype) != 4) return LOOM_OK;
  char name[96];
  snprintf(name, sizeof name, "%s_pf", c->m->red);
  const loom_sym_expr *q = loom_sym_var_new(cx, name, LOOM_SYM_VAR_SHAPE), *k = rl->u.loop.extent;
  const loom_sym_expr *cols = loom_sym_const(cx, DOT_COLS), *one = loom_sym_const(cx, 1);
  const loom_sym_expr *lines = loom_sym_floordiv(cx, loom_sym_add(cx, k, loom_sym_const(cx, 15)), loom_sym_const(cx, 16));
  const loom_sym_expr *last = loom_sym_sub(cx, loom_sym_sub(cx, n, one), loom_sym_mul(cx, cols, jo->u.loop.var));
  const loom_sym_expr *vals[2] = {
      loom_sym_min(cx, loom_sym_add(cx, cols, io->u.loop.var), last),
      loom_sym_min(cx, loom_sym_mul(cx, loom_sym_const(cx, 16), q), loom_sym_sub(cx, k, one))};
  const loom_sym_expr *vars[2] = {jl->u.loop.var, rl->u.loop.var};
  const loom_sym_expr *extent = loom_sym_max(
      cx, loom_sym_const(cx, 0),
      loom_sym_min(cx, lines, loom_sym_mul(cx, loom_sym_sub(cx, cols, io->u.loop.var), lines)));
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, (size_t)c->m->b->ndim);
  if (!q || !vals[0] || !vals[1] || !extent || !idx) return LOOM_OOM();
  for (int d = 0; d < c->m->b->ndim; d++)
    if (!(idx[d] = loom_tp_expr_copy_subst(c->a, cx, ld->u.load.idx[d], vars, vals, 2))) return LOOM_OOM();
  loom_tp_stmt *pf = loom_tp_prefetch(c->a, c->m->b, idx, true);
  loom_tp_stmt *items[2] = {pf ? loom_tp_for(c->a, q, extent, LOOM_TP_LOOP_SERIAL, false, pf) : NULL, io->u.loop.body};
  if (!items[0] || !(io->u.loop.body = loom_tp_seq(c->a, items, 2))) return LOOM_OOM();
  loom_strbuf_printf(c->why, "  the next column tile's rows prefetched into L2, one by each of the first %d row tiles\n",
                     DOT_COLS);
  return LOOM_OK;
}

/* The rows `il` (body: [for ji {] init; for r reduce [}]) in tiles of `rows` rows, the tail
 * rows one by one; ji (NULL: a single column) unrolled, not vectorised: r is the vector loop.
 * Under a column tile loop jo (not NULL) of n columns, the row tiles prefetch the next one. */
static loom_status dot_rows(mm_ctx *c, loom_tp_stmt *il, const char *ji, int64_t rows, loom_tp_stmt *jo,
                            const loom_sym_expr *n) {
  loom_tp_stmt *io, *ii, *it;
  LOOM_PROPAGATE(split_or_tail(c, il, rows, &io, &ii, &it));
  if (io) {
    LOOM_PROPAGATE(loom_tpmm_micro_tile(c, io, loom_sym_var_name(ii->u.loop.var), ji));
    if (ji) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, io->u.loop.body, ji, LOOM_TP_LOOP_UNROLL));
    if (ji && jo) LOOM_PROPAGATE(prefetch_next_tile(c, jo, io, ji, n));
  }
  if (it) {
    LOOM_PROPAGATE(loom_tpmm_micro_tile(c, it, NULL, ji));
    if (ji) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, it->u.loop.body, ji, LOOM_TP_LOOP_UNROLL));
  }
  return LOOM_OK;
}

/* `top` (the j loop, above the batch loops and i) in dot-product tiles (above) of `cols` columns. */
static loom_status dot_tiles(mm_ctx *c, loom_tp_stmt *top, int64_t rows, int64_t cols) {
  loom_tp_stmt *jo, *ji, *jt, *il;
  const loom_sym_expr *n = top->u.loop.extent;
  LOOM_PROPAGATE(split_or_tail(c, top, cols, &jo, &ji, &jt));
  int64_t shown = rows; /* the tile's rows */
  if (jo) {
    LOOM_PROPAGATE(loom_tpmm_sink(c, ji, c->nbatch + 1, &ji));
    il = jo;
    for (int k = 0; k <= c->nbatch; k++) il = loom_tp_child_loop(il);
    if (loom_sym_prove_le(c->cx, il->u.loop.extent, loom_sym_const(c->cx, rows - 1)) == LOOM_SYM_TRUE)
      shown = 1; /* fewer rows than a tile: all of them one by one */
    LOOM_PROPAGATE(dot_rows(c, il, loom_sym_var_name(ji->u.loop.var), rows, jo, n));
    LOOM_PROPAGATE(loom_tp_set_kind(c->cx, jo, LOOM_TP_LOOP_PARALLEL));
  }
  if (jt) {
    il = jt;
    for (int k = 0; k <= c->nbatch; k++) il = loom_tp_child_loop(il);
    LOOM_PROPAGATE(dot_rows(c, il, NULL, rows, NULL, n));
    if (!jo) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, jt, LOOM_TP_LOOP_PARALLEL));
  }
  loom_strbuf_printf(c->why, "  dot-product tiles %lldx%lld over %s (B read as rows), the row and column tails one by "
                     "one, columns parallel\n", (long long)shown, (long long)cols, c->m->red);
  return LOOM_OK;
}

/* The nest in `view` in dot-product tiles of `cols` columns. */
static loom_status dot_nest(mm_ctx c, loom_tp_func *view, int64_t cols) {
  mm_nest m;
  c.view = view;
  c.m = &m;
  LOOM_PROPAGATE(loom_tpmm_j_to_top(&c, view->body, &m));
  return dot_tiles(&c, view->body, c.tile_rows, cols);
}

/* Fewer rows than a row tile (a decode step's GEMV at a batch of 1..3; a tied LM head): there are
 * no row tiles, and rows one by one against a DOT_COLS-column tile kept only four rows of B in
 * flight, which read a B larger than the caches at about two thirds of the core's bandwidth
 * (1 x 768 times (50257 x 768)^T, 1 thread: 10.0 ms, ORT 8.0). Tiles of one row and
 * one_row_cols columns (16 accumulators; AVX2: 8) read it at 7.0 ms (8 columns 7.5, 32 6.9); the
 * rows after the first read the tile again from L2 (2 rows 12.8 -> 7.9 ms, 3 rows 14.1 -> 9.4).
 * Row tiles of that many columns would not fit the registers: DOT_COLS there. */
static loom_status row_by_row(void *ud, loom_tp_func *view) {
  const mm_ctx *c = ud;
  return dot_nest(*c, view, c->one_row_cols);
}

/* The dot-tile variant (a view whose body is a copy of the nest, r's extent >= DOT_MIN_K): under
 * a row count that is a symbol, a variant for fewer rows than a tile (above) first. */
loom_status loom_tpmm_dot_variant(void *ud, loom_tp_func *view) {
  const mm_ctx *c = ud;
  int64_t nr;
  if (c->rows && loom_sym_is_const(c->rows, &nr)) return dot_nest(*c, view, nr < c->tile_rows ? c->one_row_cols : DOT_COLS);
  if (!c->rows || !loom_sym_is_var(c->rows)) return dot_nest(*c, view, DOT_COLS);
  const loom_sym_expr *guard = loom_sym_cmp(c->cx, LOOM_SYM_LT, c->rows, loom_sym_const(c->cx, c->tile_rows));
  if (!guard) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_add_variant(c->a, c->cx, view, guard, row_by_row, (void *)c));
  loom_strbuf_printf(c->why, "  variant %s < %lld: the tiles above, then for more rows:\n", loom_sym_var_name(c->rows),
                     (long long)c->tile_rows);
  loom_tp_func rest = *view;
  rest.body = view->body->u.if_.else_s;
  LOOM_PROPAGATE(dot_nest(*c, &rest, DOT_COLS));
  view->body->u.if_.else_s = rest.body;
  return LOOM_OK;
}

/* schedule_matmul_dot.c — rule 0's dot-product tiles for a B read as [j, r]
 * (schedule_matmul_internal.h, docs/codegen.md "Schedule rules"). */
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

/* The rows `il` (body: [for ji {] init; for r reduce [}]) in tiles of `rows` rows, the tail
 * rows one by one; ji (NULL: a single column) unrolled, not vectorised: r is the vector loop. */
static loom_status dot_rows(mm_ctx *c, loom_tp_stmt *il, const char *ji, int64_t rows) {
  loom_tp_stmt *io, *ii, *it;
  LOOM_PROPAGATE(split_or_tail(c, il, rows, &io, &ii, &it));
  if (io) {
    LOOM_PROPAGATE(loom_tpmm_micro_tile(c, io, loom_sym_var_name(ii->u.loop.var), ji));
    if (ji) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, io->u.loop.body, ji, LOOM_TP_LOOP_UNROLL));
  }
  if (it) {
    LOOM_PROPAGATE(loom_tpmm_micro_tile(c, it, NULL, ji));
    if (ji) LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, it->u.loop.body, ji, LOOM_TP_LOOP_UNROLL));
  }
  return LOOM_OK;
}

/* `top` (the j loop, above the batch loops and i) in dot-product tiles (above). */
static loom_status dot_tiles(mm_ctx *c, loom_tp_stmt *top, int64_t rows) {
  loom_tp_stmt *jo, *ji, *jt, *il;
  LOOM_PROPAGATE(split_or_tail(c, top, DOT_COLS, &jo, &ji, &jt));
  if (jo) {
    LOOM_PROPAGATE(loom_tpmm_sink(c, ji, c->nbatch + 1, &ji));
    il = jo;
    for (int k = 0; k <= c->nbatch; k++) il = loom_tpmm_child_loop(il);
    LOOM_PROPAGATE(dot_rows(c, il, loom_sym_var_name(ji->u.loop.var), rows));
    LOOM_PROPAGATE(loom_tp_set_kind(c->cx, jo, LOOM_TP_LOOP_PARALLEL));
  }
  if (jt) {
    il = jt;
    for (int k = 0; k <= c->nbatch; k++) il = loom_tpmm_child_loop(il);
    LOOM_PROPAGATE(dot_rows(c, il, NULL, rows));
    if (!jo) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, jt, LOOM_TP_LOOP_PARALLEL));
  }
  loom_strbuf_printf(c->why, "  dot-product tiles %lldx%d over %s (B read as rows), the row and column tails one by "
                     "one, columns parallel\n", (long long)rows, DOT_COLS, c->m->red);
  return LOOM_OK;
}

/* The dot-tile variant (a view whose body is a copy of the nest, r's extent >= DOT_MIN_K). */
loom_status loom_tpmm_dot_variant(void *ud, loom_tp_func *view) {
  mm_ctx c = *(const mm_ctx *)ud;
  mm_nest m;
  c.view = view;
  c.m = &m;
  LOOM_PROPAGATE(loom_tpmm_j_to_top(&c, view->body, &m));
  return dot_tiles(&c, view->body, c.tile_rows);
}

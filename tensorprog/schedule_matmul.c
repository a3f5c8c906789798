/* schedule_matmul.c — rule 0 of the default CPU rules: matmul-shaped nests register-tiled
 * (tp_schedule_cpu.h, docs/codegen.md "Schedule rules"). */
#include <string.h>

#include "tensorprog/schedule_matmul_internal.h"

static bool uses(const loom_sym_expr *e, const loom_sym_expr *var) { return loom_sym_uses_var(e, var); }

/* ---- matmul: register-blocked microkernel ---------------------------------------------
 *
 * A nest `for b.. { for i { for j { C[.., i, j] = init; for r reduce { C[.., i, j] =
 * C[.., i, j] + a * b } } } }` (a free of j, b a load free of i; f32) becomes column panels
 * of widths[0] = two vector registers of f32 (then narrower panels for the column tail, down
 * to 1: panel_widths), each with its B
 * panel packed (cache_read) and row tiles of TILE_ROWS (the row tail one more tile ending at the
 * last row when rows >= TILE_ROWS is known, else rows one by one) whose
 * accumulators live in a Local (cache_write) that lane mode keeps in registers:
 *
 *   for jo parallel { for b.. { alloc Bp; pack; for io { alloc acc; init; for r reduce {
 *     for ii unroll { for ji vectorize { acc[ii, ji] += a * Bp[r, ji] } } }; write back }
 *     row tail } }  column tail (the same, narrower)
 *
 * built from split, reorder, fuse, distribute, cache_read/cache_write and loop kinds; the
 * nest is transformed as a copy and installed only when every step applied. */

/* Panel widths for vectors of `vector_bytes`: 2 registers of f32 (6 x 2 accumulators, 2 B
 * loads and a broadcast: 15 of the 16 registers of AVX2, 15 of 32 with AVX-512), one narrower
 * panel for the column tail (8 columns, or 4 with 16-byte vectors), then columns one by one.
 * A 32-wide panel with AVX2 needs 24 accumulators and spills them on every k step (measured on
 * Zen 3: 64 x 768 x 768 ran at 2.2 ms with 32-wide panels). */
static void panel_widths(int vector_bytes, int64_t w[3]) {
  int64_t lanes = vector_bytes >= 64 ? 16 : vector_bytes >= 32 ? 8 : 4;
  w[0] = 2 * lanes;
  w[1] = lanes < 8 ? lanes : 8;
  w[2] = 1;
}

loom_tp_stmt *loom_tpmm_strip_seq(loom_tp_stmt *s) {
  while (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  return s;
}

static bool is_access(const loom_tp_expr *e, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  if (e->kind != LOOM_TP_EXPR_LOAD || e->u.load.buf != buf) return false;
  for (int d = 0; d < buf->ndim; d++)
    if (e->u.load.idx[d]->kind != LOOM_TP_EXPR_SYM || e->u.load.idx[d]->u.sym != idx[d]->u.sym) return false;
  return true;
}

/* Whether every load of c in e is at exactly idx (NULL idx: e does not load c). */
static bool reads_only_at(const loom_tp_expr *e, const loom_tp_buffer *c, loom_tp_expr *const *idx) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (!reads_only_at(e->u.load.idx[d], c, idx)) return false;
      return e->u.load.buf != c || (idx && is_access(e, c, idx));
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (!reads_only_at(e->u.op.args[i], c, idx)) return false;
      return true;
    case LOOM_TP_EXPR_CAST: return reads_only_at(e->u.cast_arg, c, idx);
    case LOOM_TP_EXPR_SELECT:
      return reads_only_at(e->u.select.cond, c, idx) && reads_only_at(e->u.select.then_e, c, idx) &&
             reads_only_at(e->u.select.else_e, c, idx);
    default: return true;
  }
}

/* The panel width P when load y reads B[floordiv(j, P), r, floormod(j, P)] of a (q, k, P)
 * buffer (a weight laid out panel by panel), else 0. */
static int64_t packed_panel(loom_sym_ctx *cx, const loom_tp_expr *y, const loom_sym_expr *j, const loom_sym_expr *r) {
  const loom_tp_buffer *b = y->u.load.buf;
  loom_tp_expr *const *idx = y->u.load.idx;
  int64_t p;
  if (b->ndim != 3 || !loom_sym_is_const(b->dims[2], &p) || p < 2) return 0;
  for (int d = 0; d < 3; d++)
    if (idx[d]->kind != LOOM_TP_EXPR_SYM) return 0;
  const loom_sym_expr *P = loom_sym_const(cx, p);
  if (!P || idx[1]->u.sym != r || idx[0]->u.sym != loom_sym_floordiv(cx, j, P) || idx[2]->u.sym != loom_sym_floormod(cx, j, P))
    return 0;
  return p;
}

/* Recognises the nest (without changing it); false: not a matmul the rule tiles. An epilogue
 * store after the reduction (graph fusion of a bias, an activation, a residual) is carried
 * along: it stays with the register tile, applied to the accumulators before they are
 * stored. */
static bool match_matmul(loom_sym_ctx *cx, loom_tp_stmt *top, mm_nest *m) {
  *m = (mm_nest){0};
  loom_tp_stmt *l = top;
  while (l && l->kind == LOOM_TP_STMT_FOR && !l->u.loop.reduce && m->nloops < MAX_CHAIN) {
    m->loops[m->nloops++] = l;
    l = loom_tp_child_loop(l);
  }
  if (m->nloops < 2 || l) return false;
  loom_tp_stmt *body = m->loops[m->nloops - 1]->u.loop.body;
  if (body->kind != LOOM_TP_STMT_SEQ || (body->u.seq.n != 2 && body->u.seq.n != 3)) return false;
  loom_tp_stmt *init = body->u.seq.items[0], *red = body->u.seq.items[1];
  if (init->kind != LOOM_TP_STMT_STORE || red->kind != LOOM_TP_STMT_FOR || !red->u.loop.reduce) return false;
  loom_tp_stmt *upd = loom_tpmm_strip_seq(red->u.loop.body);
  const loom_tp_buffer *c = init->u.store.buf;
  if (upd->kind != LOOM_TP_STMT_STORE || upd->u.store.buf != c || (c->dtype != LOOM_DTYPE_F32 && c->dtype != LOOM_DTYPE_I32))
    return false;
  const loom_sym_expr *i = m->loops[m->nloops - 2]->u.loop.var, *j = m->loops[m->nloops - 1]->u.loop.var;
  loom_tp_expr *const *idx = init->u.store.idx;
  for (int d = 0; d < c->ndim; d++)
    if (idx[d]->kind != LOOM_TP_EXPR_SYM || upd->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM ||
        idx[d]->u.sym != upd->u.store.idx[d]->u.sym || uses(idx[d]->u.sym, red->u.loop.var))
      return false;
  if (c->ndim < 2 || idx[c->ndim - 1]->u.sym != j) return false;
  if (body->u.seq.n == 3) { /* an epilogue (graph fusion): C[idx] or Y[idx] = f(C[idx], loads free of r) */
    const loom_tp_stmt *epi = body->u.seq.items[2];
    if (epi->kind != LOOM_TP_STMT_STORE || loom_tp_expr_uses_var(epi->u.store.value, red->u.loop.var) ||
        !reads_only_at(epi->u.store.value, c, idx) ||
        (epi->u.store.buf != c && !reads_only_at(epi->u.store.value, epi->u.store.buf, NULL)))
      return false;
    for (int d = 0; d < c->ndim; d++)
      if (epi->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM || epi->u.store.idx[d]->u.sym != idx[d]->u.sym) return false;
  }
  const loom_tp_expr *v = upd->u.store.value;
  if (v->kind != LOOM_TP_EXPR_OP || v->u.op.op != LOOM_TP_OP_ADD) return false;
  const loom_tp_expr *prod = is_access(v->u.op.args[0], c, idx)   ? v->u.op.args[1]
                             : is_access(v->u.op.args[1], c, idx) ? v->u.op.args[0]
                                                                  : NULL;
  /* a * b, or dot2(a, b) of i16 pair words / dot4(a, b) or dot4s(a, b) of byte quads (the int8
   * matmul: i32 accumulators, vpmaddwd / vpdpbusd / vpmaddubsw + vpmaddwd) */
  if (!prod || prod->kind != LOOM_TP_EXPR_OP ||
      (prod->u.op.op != LOOM_TP_OP_MUL &&
       ((prod->u.op.op != LOOM_TP_OP_DOT2 && prod->u.op.op != LOOM_TP_OP_DOT4 && prod->u.op.op != LOOM_TP_OP_DOT4S) ||
        c->dtype != LOOM_DTYPE_I32)))
    return false;
  const loom_tp_expr *x = prod->u.op.args[0], *y = prod->u.op.args[1];
  if (loom_tp_expr_uses_var(x, j)) {
    const loom_tp_expr *t = x;
    x = y;
    y = t;
  }
  if (loom_tp_expr_uses_var(x, j) || y->kind != LOOM_TP_EXPR_LOAD || loom_tp_expr_uses_var(y, i)) return false;
  m->c = c;
  m->red = loom_sym_var_name(red->u.loop.var);
  m->b = y->u.load.buf;
  m->b_unit = loom_tp_cpu_access_unit(cx, y->u.load.buf, y->u.load.idx, j);
  m->panel = packed_panel(cx, y, j, red->u.loop.var);
  m->ab_unit_r = x->kind == LOOM_TP_EXPR_LOAD && loom_tp_cpu_access_unit(cx, x->u.load.buf, x->u.load.idx, red->u.loop.var) &&
                 loom_tp_cpu_access_unit(cx, y->u.load.buf, y->u.load.idx, red->u.loop.var);
  m->red_ext = red->u.loop.extent;
  for (int k = 0; k < m->nloops - 2; k++)
    if (loom_tp_expr_uses_var(y, m->loops[k]->u.loop.var)) m->b_batch[m->nb_batch++] = loom_sym_var_name(m->loops[k]->u.loop.var);
  return true;
}

/* Moves the header of `l` down `times` levels of a perfect nest; returns the node holding it. */
loom_status loom_tpmm_sink(mm_ctx *c, loom_tp_stmt *l, int times, loom_tp_stmt **out) {
  for (int t = 0; t < times; t++) {
    loom_tp_stmt *child = loom_tp_child_loop(l);
    LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, l));
    l = child;
  }
  *out = l;
  return LOOM_OK;
}

/* Sets `kind` on every loop under `s` whose variable is named `name`. */
loom_status loom_tpmm_set_kind_named(loom_sym_ctx *cx, loom_tp_stmt *s, const char *name, loom_tp_loop_kind kind) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) LOOM_PROPAGATE(loom_tpmm_set_kind_named(cx, s->u.seq.items[i], name, kind));
      return LOOM_OK;
    case LOOM_TP_STMT_FOR:
      if (!strcmp(loom_sym_var_name(s->u.loop.var), name)) LOOM_PROPAGATE(loom_tp_set_kind(cx, s, kind));
      return loom_tpmm_set_kind_named(cx, s->u.loop.body, name, kind);
    case LOOM_TP_STMT_IF:
      LOOM_PROPAGATE(loom_tpmm_set_kind_named(cx, s->u.if_.then_s, name, kind));
      return s->u.if_.else_s ? loom_tpmm_set_kind_named(cx, s->u.if_.else_s, name, kind) : LOOM_OK;
    default: return LOOM_OK;
  }
}

/* Row tiles of the i loop `il` (body: [for ji {] init; for r [}]). When the rows are provably
 * at least a tile, the row tail is one more full tile ending at the last row (overlapping the
 * previous tile: those rows are computed twice, at the register tile's speed); else the tail
 * rows run one by one. */
static loom_status row_tiles(mm_ctx *c, loom_tp_stmt *il, const char *ji, int64_t width, bool parallel) {
  loom_tp_stmt *io, *ii, *it, *iti = NULL;
  int64_t rows = c->tile_rows;
  loom_status st;
  if (rows == TALL_ROWS || c->few_rows || c->tail_rows) {
    /* tall tiles: a remainder of 7..11 rows one more (clamped) tall tile, 1..6 a 6-row tile;
     * few rows (1..5, few_rows_panels): FEW_ROWS-row tiles clamped to them, a last row alone;
     * AVX2's 6-row tiles: a remainder of 3..5 rows one more 6-row tile, 1..2 a 2-row tile */
    int64_t small = c->few_rows ? 1 : c->tail_rows ? c->tail_rows : TILE_ROWS;
    st = loom_tp_split_clamped(c->a, c->cx, c->view, il, rows, small, &io, &ii, &it, &iti);
    if (!st) {
      /* tile o covers rows max(min(12*o, m - 12), 0) + ii, the rows from m on repeat m - 1 */
      const loom_sym_expr *m = il->u.loop.extent, *o = io->u.loop.var;
      const loom_sym_expr *start = loom_sym_max(
          c->cx, loom_sym_min(c->cx, loom_sym_mul(c->cx, o, loom_sym_const(c->cx, rows)), loom_sym_sub(c->cx, m, loom_sym_const(c->cx, rows))),
          loom_sym_const(c->cx, 0));
      c->distinct_rows = loom_sym_min(c->cx, loom_sym_const(c->cx, rows), loom_sym_sub(c->cx, m, start));
      if (!c->distinct_rows) return LOOM_OOM();
      st = loom_tpmm_micro_tile(c, io, loom_sym_var_name(ii->u.loop.var), ji);
      c->distinct_rows = NULL;
      LOOM_PROPAGATE(st);
      /* tiles may overlap (the clamped last one): parallel only while every tile stores plain
       * values, equal wherever two tiles meet (not when a heavy epilogue runs on C after) */
      if (parallel && !c->epi_moved) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, io, LOOM_TP_LOOP_PARALLEL));
      if (it) LOOM_PROPAGATE(loom_tpmm_micro_tile(c, it, loom_sym_var_name(iti->u.loop.var), ji));
      if (c->few_rows)
        loom_strbuf_printf(c->why, "%lldx%lld register tiles (the last repeating the last row) + a 1x%lld tile for a row left alone\n",
                           (long long)rows, (long long)width, (long long)width);
      else
        loom_strbuf_printf(c->why, "%lldx%lld register tiles (a remainder above %lld rows: one more, ending at the last row, "
                           "repeating it when fewer rows) + a row tail of at most %lld rows in one %lldx%lld tile ending at the last row\n",
                           (long long)rows, (long long)width, (long long)small, (long long)small, (long long)small, (long long)width);
      return LOOM_OK;
    }
    if (loom_status_code(st) != LOOM_CODE_FAILED_PRECONDITION) return st;
    loom_status_free(st);
  }
  st = loom_tp_split_overlap(c->a, c->cx, c->view, il, rows, &io, &ii, &it, &iti);
  if (st && loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION) {
    loom_status_free(st);
    st = loom_tp_split(c->a, c->cx, c->view, il, rows, &io, &ii, &it);
  }
  if (st && loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION) { /* fewer rows than a tile: rows one by one */
    loom_status_free(st);
    loom_strbuf_printf(c->why, "1x%lld rows\n", (long long)width);
    return loom_tpmm_micro_tile(c, il, NULL, ji);
  }
  LOOM_PROPAGATE(st);
  const char *iin = loom_sym_var_name(ii->u.loop.var);
  LOOM_PROPAGATE(loom_tpmm_micro_tile(c, io, iin, ji));
  if (parallel) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, io, LOOM_TP_LOOP_PARALLEL));
  if (it) LOOM_PROPAGATE(loom_tpmm_micro_tile(c, it, iti ? loom_sym_var_name(iti->u.loop.var) : NULL, ji));
  if (iti)
    loom_strbuf_printf(c->why, "%lldx%lld register tiles + one overlapping %lldx%lld tile for the row tail\n", (long long)rows,
                       (long long)width, (long long)rows, (long long)width);
  else
    loom_strbuf_printf(c->why, "%lldx%lld register tiles + 1x%lld row tail\n", (long long)rows, (long long)width, (long long)width);
  return LOOM_OK;
}

static bool in_names(const char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return true;
  return false;
}

/* Simplifies every symbolic index of the loads of B under `s` given 0 <= var < width. */
static void simplify_b_expr(mm_ctx *c, loom_tp_expr *e, bool *oom) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++) {
        loom_tp_expr *x = e->u.load.idx[d];
        if (e->u.load.buf == c->m->b && x->kind == LOOM_TP_EXPR_SYM) {
          const loom_sym_expr *v = loom_sym_simplify(c->cx, x->u.sym);
          if (v) x->u.sym = v;
          else *oom = true;
        }
        simplify_b_expr(c, x, oom);
      }
      return;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) simplify_b_expr(c, e->u.op.args[i], oom);
      return;
    case LOOM_TP_EXPR_CAST: simplify_b_expr(c, e->u.cast_arg, oom); return;
    case LOOM_TP_EXPR_SELECT:
      simplify_b_expr(c, e->u.select.cond, oom);
      simplify_b_expr(c, e->u.select.then_e, oom);
      simplify_b_expr(c, e->u.select.else_e, oom);
      return;
    default: return;
  }
}

static void simplify_b_stmt(mm_ctx *c, loom_tp_stmt *s, bool *oom) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) simplify_b_stmt(c, s->u.seq.items[i], oom);
      return;
    case LOOM_TP_STMT_FOR: simplify_b_stmt(c, s->u.loop.body, oom); return;
    case LOOM_TP_STMT_STORE: simplify_b_expr(c, s->u.store.value, oom); return;
    case LOOM_TP_STMT_LET: simplify_b_expr(c, s->u.let.value, oom); return;
    case LOOM_TP_STMT_IF:
      simplify_b_expr(c, s->u.if_.cond, oom);
      simplify_b_stmt(c, s->u.if_.then_s, oom);
      if (s->u.if_.else_s) simplify_b_stmt(c, s->u.if_.else_s, oom);
      return;
    default: return;
  }
}

/* B's indices in the inner column loop `ji` (variable v) of a panel, simplified under
 * 0 <= v < width: floordiv(P*jo + v, P) -> jo and floormod(P*jo + v, P) -> v when P = width. */
static loom_status panel_indices(mm_ctx *c, loom_tp_stmt *ji, const loom_sym_expr *v, int64_t width) {
  bool oom = false;
  loom_sym_facts_push(c->cx);
  loom_status st = loom_sym_assume_range(c->cx, v, 0, width - 1);
  if (!st) simplify_b_stmt(c, ji->u.loop.body, &oom);
  loom_sym_facts_pop(c->cx);
  if (!st && oom) st = LOOM_OOM();
  return st;
}

static loom_status panel(mm_ctx *c, loom_tp_stmt *jo, loom_tp_stmt *ji, int64_t width, bool outermost, bool overlap_tail);

enum { FEW_PANELS = 8 };

/* Whether a loop under s (s included) is PARALLEL. */
static bool has_parallel(const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (has_parallel(s->u.seq.items[i])) return true;
      return false;
    case LOOM_TP_STMT_FOR: return s->u.loop.kind == LOOM_TP_LOOP_PARALLEL || has_parallel(s->u.loop.body);
    case LOOM_TP_STMT_IF: return has_parallel(s->u.if_.then_s) || (s->u.if_.else_s && has_parallel(s->u.if_.else_s));
    default: return false;
  }
}

/* ---- software prefetch of a weight laid out in panels ------------------------------------
 *
 * A register tile streams its panel of B (k rows of P contiguous columns) once per row tile;
 * a weight larger than the caches comes from memory, and while the tile computes (6 rows: 12
 * FMAs per row of B) the hardware prefetchers alone kept a 4096 x 4096 panel stream at 5-7
 * GB/s of the core's 10. Each step of the reduction therefore prefetches the panel's row
 * PREFETCH_ROWS ahead (every cache line of it), clamped to the last row so that the hint
 * never names an element outside B:
 *     for r reduce { prefetch B[jo, min(r + 16, k - 1), 0]; prefetch B[.., 16]; for ii ... }
 * Measured in a C model of the kernel (7 rows, 4096 x 4096, best of 5 rounds): 9.6 -> 7.5 ms
 * with the 6-row tiles; one row per pass gained nothing, so the 1-row tiles do not prefetch. */
enum { PREFETCH_ROWS = 16 };

/* The first loop under s whose variable is called `name` (NULL if none). */
loom_tp_stmt *loom_tpmm_loop_named(loom_tp_stmt *s, const char *name) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) {
        loom_tp_stmt *l = loom_tpmm_loop_named(s->u.seq.items[i], name);
        if (l) return l;
      }
      return NULL;
    case LOOM_TP_STMT_FOR:
      return !strcmp(loom_sym_var_name(s->u.loop.var), name) ? s : loom_tpmm_loop_named(s->u.loop.body, name);
    case LOOM_TP_STMT_IF: {
      loom_tp_stmt *l = loom_tpmm_loop_named(s->u.if_.then_s, name);
      return l || !s->u.if_.else_s ? l : loom_tpmm_loop_named(s->u.if_.else_s, name);
    }
    default: return NULL;
  }
}

/* The first load of `b` in e or under s (NULL if none). */
static const loom_tp_expr *load_of_expr(const loom_tp_expr *e, const loom_tp_buffer *b) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: return e->u.load.buf == b ? e : NULL;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) {
        const loom_tp_expr *l = load_of_expr(e->u.op.args[i], b);
        if (l) return l;
      }
      return NULL;
    case LOOM_TP_EXPR_CAST: return load_of_expr(e->u.cast_arg, b);
    default: return NULL;
  }
}

const loom_tp_expr *loom_tpmm_load_of(const loom_tp_stmt *s, const loom_tp_buffer *b) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) {
        const loom_tp_expr *l = loom_tpmm_load_of(s->u.seq.items[i], b);
        if (l) return l;
      }
      return NULL;
    case LOOM_TP_STMT_FOR: return loom_tpmm_load_of(s->u.loop.body, b);
    case LOOM_TP_STMT_STORE: return load_of_expr(s->u.store.value, b);
    default: return NULL;
  }
}

/* Prefetches in every reduction loop called `red` under s that reads B through its vector
 * column loop `ji` (width columns). */
static loom_status add_prefetch(mm_ctx *c, loom_tp_stmt *s, const char *red, const char *ji, int64_t width) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) LOOM_PROPAGATE(add_prefetch(c, s->u.seq.items[i], red, ji, width));
      return LOOM_OK;
    case LOOM_TP_STMT_IF:
      LOOM_PROPAGATE(add_prefetch(c, s->u.if_.then_s, red, ji, width));
      return s->u.if_.else_s ? add_prefetch(c, s->u.if_.else_s, red, ji, width) : LOOM_OK;
    case LOOM_TP_STMT_FOR: break;
    default: return LOOM_OK;
  }
  if (!s->u.loop.reduce || strcmp(loom_sym_var_name(s->u.loop.var), red))
    return add_prefetch(c, s->u.loop.body, red, ji, width);
  const loom_tp_expr *ld = loom_tpmm_load_of(s->u.loop.body, c->m->b);
  loom_tp_stmt *jl = loom_tpmm_loop_named(s->u.loop.body, ji);
  if (!ld || !jl) return LOOM_OK;
  const loom_tp_buffer *b = c->m->b;
  int64_t elem = (int64_t)loom_dtype_size(b->dtype), per_line = 64 / elem;
  int64_t lines = (width * elem + 63) / 64;
  const loom_sym_expr *ahead = loom_sym_min(
      c->cx, loom_sym_add(c->cx, s->u.loop.var, loom_sym_const(c->cx, PREFETCH_ROWS)),
      loom_sym_sub(c->cx, s->u.loop.extent, loom_sym_const(c->cx, 1)));
  if (!ahead) return LOOM_OOM();
  loom_tp_stmt **items = LOOM_ARENA_ARRAY(c->a, loom_tp_stmt *, (size_t)lines + 1);
  if (!items) return LOOM_OOM();
  for (int64_t l = 0; l < lines; l++) {
    const loom_sym_expr *vars[2] = {s->u.loop.var, jl->u.loop.var};
    const loom_sym_expr *vals[2] = {ahead, loom_sym_const(c->cx, l * per_line)};
    loom_tp_expr **idx = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, (size_t)b->ndim);
    if (!idx || !vals[1]) return LOOM_OOM();
    for (int d = 0; d < b->ndim; d++)
      if (!(idx[d] = loom_tp_expr_copy_subst(c->a, c->cx, ld->u.load.idx[d], vars, vals, 2))) return LOOM_OOM();
    if (!(items[l] = loom_tp_prefetch(c->a, b, idx, false))) return LOOM_OOM();
  }
  items[lines] = s->u.loop.body;
  if (!(s->u.loop.body = loom_tp_seq(c->a, items, (size_t)lines + 1))) return LOOM_OOM();
  return LOOM_OK;
}

/* `top`: a loop over columns with, below it, nbatch batch loops, the i loop and the body.
 * Tiles it with panels of c->widths[w] and its column tail with the next widths (or, with
 * c->overlap, the widest panels' tail with one more whole panel ending at the last column). */
static loom_status panels(mm_ctx *c, loom_tp_stmt *top, size_t w, bool outermost) {
  int64_t width = c->widths[w];
  if (width == 1) {
    loom_tp_stmt *il;
    LOOM_PROPAGATE(loom_tpmm_sink(c, top, 0, &il));
    for (int k = 0; k <= c->nbatch; k++) il = loom_tp_child_loop(il);
    loom_strbuf_printf(c->why, "  columns %s one by one: ", loom_sym_var_name(top->u.loop.var));
    return row_tiles(c, il, NULL, 1, true);
  }
  loom_tp_stmt *jo, *ji, *jt, *jti = NULL;
  loom_status st;
  if (w == 0 && c->overlap) {
    st = loom_tp_split_overlap(c->a, c->cx, c->view, top, width, &jo, &ji, &jt, &jti);
    if (!st) {
      LOOM_PROPAGATE(panel(c, jo, ji, width, outermost, false));
      if (!jt) return LOOM_OK;
      loom_strbuf_printf(c->why, "  column tail: one more %lld-column panel ending at the last column,\n", (long long)width);
      return panel(c, jt, jti, width, false, true);
    }
    if (loom_status_code(st) != LOOM_CODE_FAILED_PRECONDITION) return st;
    loom_status_free(st);
  }
  st = loom_tp_split(c->a, c->cx, c->view, top, width, &jo, &ji, &jt);
  if (st && loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION) { /* extent known to be small */
    loom_status_free(st);
    return panels(c, top, w + 1, outermost);
  }
  LOOM_PROPAGATE(st);
  LOOM_PROPAGATE(panel(c, jo, ji, width, outermost, false));
  if (!jt) return LOOM_OK;
  /* B in panels of this width with n not a multiple of it (the last panel zero-padded): the
   * tail's columns P*floordiv(n, P) + t, t < P, all lie in panel floordiv(n, P), read as
   * [floordiv(n, P), r, t] -- unit stride in t, tiled by the narrower panels like any B */
  if (c->m->panel == width) LOOM_PROPAGATE(panel_indices(c, jt, jt->u.loop.var, width));
  return panels(c, jt, w + 1, false);
}

/* One panel loop `jo` of `width` columns (`ji` its inner loop): row tiles, B packed at the
 * deepest batch loop its indices use. `overlap_tail`: the whole panel ending at the last column
 * (loom_tp_split_overlap's tail), which straddles two of B's panels when B is laid out in panels
 * of this width: packed like any B, then the same register tile as every other panel, so each
 * column's sum runs in the same order whatever panel it falls in. */
static loom_status panel(mm_ctx *c, loom_tp_stmt *jo, loom_tp_stmt *ji, int64_t width, bool outermost, bool overlap_tail) {
  const char *jin = loom_sym_var_name(ji->u.loop.var);
  /* B laid out in panels of this width: its index [floordiv(P*jo + ji, P), r, floormod(..)]
   * is [jo, r, ji] given 0 <= ji < P, so each panel is read where it lies (no packing); the
   * column tail (n not a multiple of P: the padded last panel) is the narrower panels' (panels) */
  bool in_place = c->m->panel == width && !overlap_tail;
  if (in_place) LOOM_PROPAGATE(panel_indices(c, ji, ji->u.loop.var, width));
  LOOM_PROPAGATE(loom_tpmm_sink(c, ji, c->nbatch + 1, &ji));
  loom_tp_stmt *il = jo;
  for (int k = 0; k <= c->nbatch; k++) il = loom_tp_child_loop(il);
  /* Fewer panels than FEW_PANELS (a constant count, no batch loops: a 64-channel int8
   * convolution's 2 panels) leave 2 threads one chunk each, none to even out a late start: the
   * row tiles run in parallel inside each panel instead (B packed once per panel, shared). */
  int64_t np = 0;
  bool rows_par = outermost && c->nbatch == 0 && loom_sym_is_const(jo->u.loop.extent, &np) && np < FEW_PANELS;
  loom_strbuf_printf(c->why, "  panel %s: %lld columns, %s, %s", loom_sym_var_name(jo->u.loop.var), (long long)width,
                     in_place ? "B laid out in panels (read in place)" : c->pack ? "B packed" : "B in place",
                     rows_par ? "rows in parallel (few panels), " : "");
  LOOM_PROPAGATE(row_tiles(c, il, jin, width, !outermost || rows_par));
  if (in_place && c->prefetch) {
    LOOM_PROPAGATE(add_prefetch(c, jo, c->m->red, jin, width));
    loom_strbuf_printf(c->why, "  B prefetched %d rows ahead\n", PREFETCH_ROWS);
  }
  /* pack B at the deepest batch loop its indices use (B shared across the others) */
  loom_tp_stmt *at = jo, *l = jo;
  for (int k = 0; k < c->nbatch; k++) {
    l = loom_tp_child_loop(l);
    if (in_names(c->m->b_batch, c->m->nb_batch, loom_sym_var_name(l->u.loop.var))) at = l;
  }
  if ((c->pack || overlap_tail) && !in_place) {
    loom_tp_stmt *fill;
    LOOM_PROPAGATE(loom_tp_cache_read(c->a, c->cx, at, c->m->b, "Bp", &fill));
    LOOM_PROPAGATE(loom_tpmm_set_kind_named(c->cx, fill, jin, LOOM_TP_LOOP_VECTORIZE));
  }
  if (outermost && !(rows_par && has_parallel(jo))) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, jo, LOOM_TP_LOOP_PARALLEL));
  return LOOM_OK;
}

/* The column loop `top` in panels of the widest width. With B laid out in padded panels of
 * that width (n a constant, not a multiple of it) the column tail is one more whole panel
 * ending at the last column, B's part of it packed, and the same register tile as every
 * other panel: each column's sum runs in the same order whichever panel holds it (a narrower
 * tail summed in another order, and a model whose columns are equal, such as the ONNX light
 * suite's AlexNet with every weight 0.02, then gave its softmax unequal values). */
static loom_status padded_panels(mm_ctx *c, loom_tp_stmt *top) {
  int64_t width = c->widths[0], ncols;
  if (c->m->panel != width || !loom_sym_is_const(top->u.loop.extent, &ncols) || ncols <= width || ncols % width == 0)
    return panels(c, top, 0, true);
  bool was = c->overlap;
  c->overlap = true;
  loom_status st = panels(c, top, 0, true);
  c->overlap = was;
  return st;
}

/* The narrow-column variant of the general path (fewer columns than a widest panel). */
static loom_status narrow_cols(void *ud, loom_tp_func *view) {
  mm_ctx c = *(const mm_ctx *)ud;
  c.view = view;
  c.overlap = false;
  return panels(&c, view->body, 1, true);
}

/* The general path's column panels, `*slot` the j loop. When the column extent is a symbol
 * (matmul's n, a convolution's output pixels), a variant for fewer columns than a widest panel
 * (narrower panels, then columns one by one) and, under columns >= that width, the widest
 * panels with their tail as one more whole panel ending at the last column (overlapping: those
 * columns are computed twice, at the register tile's speed, where narrow tail panels ran at a
 * quarter of it and single columns at a sixteenth). */
static loom_status general_panels(mm_ctx *c, loom_tp_stmt **slot) {
  const loom_sym_expr *cols = (*slot)->u.loop.extent;
  int64_t width = c->widths[0];
  if (!loom_sym_is_var(cols) || width <= c->widths[1]) return padded_panels(c, *slot);
  const loom_sym_expr *guard = loom_sym_cmp(c->cx, LOOM_SYM_LT, cols, loom_sym_const(c->cx, width));
  if (!guard) return LOOM_OOM();
  loom_tp_func sub = *c->view;
  sub.body = *slot;
  loom_strbuf narrow;
  loom_strbuf_init(&narrow, NULL);
  mm_ctx nc = *c;
  nc.why = &narrow;
  loom_status st = loom_tp_add_variant(c->a, c->cx, &sub, guard, narrow_cols, &nc);
  if (!st && (sub.body == *slot || sub.body->kind != LOOM_TP_STMT_IF)) { /* not added: as before */
    loom_strbuf_free(&narrow);
    return panels(c, *slot, 0, true);
  }
  if (!st) {
    *slot = sub.body;
    loom_sym_facts_push(c->cx);
    st = loom_sym_assume_range(c->cx, cols, width, INT64_MAX);
    c->overlap = true;
    if (!st) st = panels(c, sub.body->u.if_.else_s, 0, true);
    c->overlap = false;
    loom_sym_facts_pop(c->cx);
    loom_sym_print(cols, c->why);
    loom_strbuf_printf(c->why, " < %lld: narrow columns:\n%s", (long long)width, loom_strbuf_cstr(&narrow));
  }
  loom_strbuf_free(&narrow);
  return st;
}

/* The j loop to the top of the nest (j, batch loops, i). */
loom_status loom_tpmm_j_to_top(mm_ctx *c, loom_tp_stmt *top, mm_nest *m) {
  if (!match_matmul(c->cx, top, m)) return LOOM_ERROR(INTERNAL, "the copy does not match");
  for (int k = 0; k < m->nloops; k++) m->loops[k]->u.loop.kind = LOOM_TP_LOOP_SERIAL;
  c->nbatch = m->nloops - 2;
  for (int t = m->nloops - 2; t >= 0; t--) LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, m->loops[t]));
  return LOOM_OK;
}

/* Below SMALL_M rows (the i extent) packing costs more than it saves: B with unit stride in
 * j is used in place by 1-row tiles (fewer rows than one full tile); B indexed `[j, r]`
 * (linear's W, where packing is a transposition) is used by dot products over r (vectorised
 * by LLVM), j outermost and parallel so each row of B is read once. */
enum { SMALL_M_UNIT = TILE_ROWS, SMALL_M_TRANSPOSED = 12 };

/* Row streaming for few rows (the GEMV shape of decode steps): B is read once, row by row, in
 * chunks of STREAM_CHUNK contiguous columns (4 KiB: the hardware prefetchers follow them; the
 * 32-column panels read 128 bytes per row of B, a new page each, and ran weight-bound at
 * a third of the bandwidth). Per chunk (parallel):
 *     for b.. { for i { for ji { C = 0 } }; for r reduce { for i { for ji vectorize {
 *       C[.., i, j] += A[.., i, r] * B[r, j] } } } }
 * C's chunk rows (at most 5 x 4 KiB) stay in L1; r is then split by STREAM_K and its inner
 * part unrolled inside ji (below). Built from split, loom_tpmm_sink, distribute, reorder. */
enum { STREAM_CHUNK = 1024, STREAM_K = 4 };

/* levels[0..n-1]: the batch loops (outer to inner) then i, each the only loop of the previous;
 * i's body is [for ji { init; for r { upd } }]. Init and update apart, r moved above i and
 * above every batch loop B's indices do not use (B shared across them is read once). */
static loom_status stream_rows(mm_ctx *c, loom_tp_stmt **levels, int n) {
  loom_tp_stmt *jl = loom_tp_child_loop(levels[n - 1]), **parts;
  size_t nparts;
  LOOM_PROPAGATE(loom_tp_distribute(c->a, c->cx, c->view, jl, &parts, &nparts));
  loom_tp_stmt *init = parts[0], *upd = parts[1];
  if (nparts == 3) LOOM_PROPAGATE(loom_tp_set_kind(c->cx, parts[2], LOOM_TP_LOOP_VECTORIZE)); /* the epilogue */
  LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, upd)); /* for r { for ji } */
  LOOM_PROPAGATE(loom_tp_set_kind(c->cx, init, LOOM_TP_LOOP_VECTORIZE));
  LOOM_PROPAGATE(loom_tp_set_kind(c->cx, loom_tp_child_loop(upd), LOOM_TP_LOOP_VECTORIZE));
  loom_tp_stmt *r = upd; /* reorder swaps headers in place: the node that holds r */
  int above = 0;         /* levels r was moved above */
  for (int k = n - 1; k >= 0; k--) {
    if (k < n - 1 && in_names(c->m->b_batch, c->m->nb_batch, loom_sym_var_name(levels[k]->u.loop.var))) break;
    LOOM_PROPAGATE(loom_tp_distribute(c->a, c->cx, c->view, levels[k], &parts, NULL));
    LOOM_PROPAGATE(loom_tp_reorder(c->a, c->cx, c->view, parts[1])); /* r above this level */
    r = parts[1];
    above++;
  }
  /* STREAM_K rows of B per pass over a row of C: r split, its inner part sunk below the
   * rows and the column loop and unrolled, so C is loaded and stored once per STREAM_K FMAs
   * and STREAM_K rows of B (pages) stream at once; the k % STREAM_K rows in a tail loop */
  loom_tp_stmt *ro, *ri, *rt, *sunk;
  LOOM_PROPAGATE(loom_tp_split(c->a, c->cx, c->view, r, STREAM_K, &ro, &ri, &rt));
  LOOM_PROPAGATE(loom_tpmm_sink(c, ri, above + 1, &sunk));
  return loom_tp_set_kind(c->cx, sunk, LOOM_TP_LOOP_UNROLL);
}

/* The width of the column chunks of a matmul of n columns: STREAM_CHUNK, narrowed (to whole
 * vectors of 16) so that a constant n makes an even number of chunks of about equal width. The
 * chunks are the parallel loop: a 768-column projection was one chunk of 1024 and ran on one
 * thread at any thread count, 2304 and 3072 columns were three chunks (two threads: 2 + 1). Even
 * counts balance two threads (768: 2 x 384, 2304: 4 x 576, 3072: 4 x 768). Not more: narrower
 * chunks cost one thread the long runs of B it streams (one 768 x 768 row at one thread, kernel
 * minima on a loaded machine: 4 x 192 columns 25 % slower, 2 x 384 7 %). A symbolic n keeps STREAM_CHUNK. */
static int64_t stream_width(const loom_sym_expr *n) {
  int64_t v;
  if (!loom_sym_is_const(n, &v) || v <= 0) return STREAM_CHUNK;
  int64_t chunks = ((v + STREAM_CHUNK - 1) / STREAM_CHUNK + 1) / 2 * 2;
  int64_t w = ((v + chunks - 1) / chunks + 15) / 16 * 16;
  return w < STREAM_CHUNK ? w : STREAM_CHUNK;
}

static loom_status stream_chunks(mm_ctx *c, loom_tp_stmt *top) {
  loom_tp_stmt *jo, *ji;
  int64_t width = stream_width(top->u.loop.extent);
  LOOM_PROPAGATE(loom_tp_split_ceil(c->a, c->cx, c->view, top, width, &jo, &ji));
  /* sinking swaps loop headers in place: the chunk's node then holds the first batch loop (or
   * i), and i is nbatch levels below it */
  loom_tp_stmt *sunk, *levels[MAX_CHAIN], *l = ji;
  LOOM_PROPAGATE(loom_tpmm_sink(c, ji, c->nbatch + 1, &sunk));
  for (int k = 0; k <= c->nbatch; k++, l = loom_tp_child_loop(l)) levels[k] = l;
  /* The outermost batch loops B's indices use (a grouped convolution's batch and groups, the
   * heads of attention's P.V): B is not shared across them, so they go above the chunks and
   * are fused with them into the parallel loop -- 840 columns in 32 groups were one chunk, one
   * thread. stream_rows left these levels a perfect nest (it stops at the innermost of them). */
  int lead = 0;
  while (lead < c->nbatch && in_names(c->m->b_batch, c->m->nb_batch, loom_sym_var_name(levels[lead]->u.loop.var))) lead++;
  LOOM_PROPAGATE(stream_rows(c, levels, c->nbatch + 1));
  loom_tp_stmt *par = jo;
  LOOM_PROPAGATE(loom_tpmm_sink(c, jo, lead, &sunk)); /* jo's node now holds the first of them */
  for (int k = 0; k < lead; k++) LOOM_PROPAGATE(loom_tp_fuse(c->a, c->cx, c->view, par, &par));
  LOOM_PROPAGATE(loom_tp_set_kind(c->cx, par, LOOM_TP_LOOP_PARALLEL));
  loom_strbuf_printf(c->why, "  rows streamed: B read once, row by row, in chunks of %lld columns (parallel%s, the last "
                             "partial), reduction outside the rows, %d rows of B per pass over C\n", (long long)width,
                     lead ? " with the batch loops B uses" : "", STREAM_K);
  return LOOM_OK;
}

/* Few rows (1..5, proven >= 1) against B in panels: tiles of FEW_ROWS rows, the last clamped to
 * the rows there are, so a panel is read once for up to FEW_ROWS rows (rows one by one read it
 * once a row: 5 rows of a 768 x 3072 weight took 0.44 ms, ORT 0.28); 1 row (a decode step's
 * GEMV) a 1-row tile. FEW_ROWS 4, not 6: the clamped tile computes all its rows, and 2 rows in a
 * 6-row tile (0.24 ms) lost to two passes of 1 row (0.19). */
enum { FEW_ROWS = 4 };
static loom_status few_rows_panels(void *ud, loom_tp_func *view) {
  mm_ctx c = *(const mm_ctx *)ud;
  mm_nest m;
  c.view = view;
  c.m = &m;
  c.few_rows = true;
  c.tile_rows = FEW_ROWS;
  LOOM_PROPAGATE(loom_tpmm_j_to_top(&c, view->body, &m));
  return padded_panels(&c, view->body);
}

static loom_status small_m(void *ud, loom_tp_func *view) {
  const mm_ctx *outer = ud;
  mm_nest m;
  mm_ctx c = *outer;
  c.view = view;
  c.m = &m;
  c.pack = false;
  c.prefetch = false; /* one row per pass: the hardware prefetchers keep up (measured: no gain) */
  if (!match_matmul(c.cx, view->body, &m)) return LOOM_ERROR(INTERNAL, "the copy does not match");
  if (m.panel) { /* B in panels, read where it lies: at least one row, few_rows_panels (none: as it is) */
    const loom_sym_expr *rows = m.loops[m.nloops - 2]->u.loop.extent;
    const loom_sym_expr *guard = loom_sym_cmp(c.cx, LOOM_SYM_LE, loom_sym_const(c.cx, 1), rows);
    if (!guard) return LOOM_OOM();
    loom_strbuf few;
    loom_strbuf_init(&few, NULL);
    mm_ctx fc = c;
    fc.why = &few;
    loom_status st = loom_tp_add_variant(c.a, c.cx, view, guard, few_rows_panels, &fc);
    if (!st) loom_strbuf_printf(c.why, "  B laid out in panels, at least one row:\n%s", loom_strbuf_cstr(&few));
    loom_strbuf_free(&few);
    if (!st || loom_status_code(st) != LOOM_CODE_FAILED_PRECONDITION) return st;
    /* refused (a requantizing epilogue cannot run twice for a repeated row): rows one by one */
    loom_strbuf_printf(c.why, "  B laid out in panels, clamped row tiles refused (%s), rows one by one:\n", loom_status_message(st));
    loom_status_free(st);
    LOOM_PROPAGATE(loom_tpmm_j_to_top(&c, view->body, &m));
    return padded_panels(&c, view->body);
  }
  LOOM_PROPAGATE(loom_tpmm_j_to_top(&c, view->body, &m));
  if (m.b_unit) return stream_chunks(&c, view->body);
  loom_strbuf_printf(c.why, "  dot products over %s, %s outermost and parallel\n", m.red,
                     loom_sym_var_name(view->body->u.loop.var));
  return loom_tp_set_kind(c.cx, view->body, LOOM_TP_LOOP_PARALLEL);
}

/* ---- tall row tiles ------------------------------------------------------------------------
 *
 * With 32 vector registers (AVX-512) an f32 register tile of TALL_ROWS x 32 holds 24
 * accumulators (plus two B registers and a broadcast): each row of a B panel feeds 24 FMAs
 * where the 6-row tile's feeds 12, so a panel is read half as often -- what counts when the
 * weight streams from memory and the rows are few (a 17-token prompt: a 12-row and a 6-row
 * tile read each panel twice, the 6-row tiles three times; MLAS's AVX-512 kernel is 12 rows
 * too). The remainder (loom_tp_split_clamped, row_tiles): 7..11 rows one more 12-row tile
 * ending at the last row (repeating it below 12 rows), 1..6 rows one 6-row tile: 7 rows are one
 * pass over B, 17 rows 12 + 6, with two tile bodies in the code (a third tile body made the
 * MLP's compile 1.8x that of the 6-row tiles). Measurements: docs/codegen.md. AVX2's 16
 * registers hold 6 x 2 accumulators, no more: TILE_ROWS there, and for the i32 (int8) tiles. */

/* AVX2's f32 row tail (mm_ctx.tail_rows): a remainder of 1 or 2 rows past the 6-row tiles is one
 * 2-row tile (4 accumulators) instead of one more whole 6-row tile ending at the last row, which
 * computed 12 rows for 7. Zen 3, the MLP (1024 -> 4096 -> 4096 -> 1024), loom run min of 20, two
 * runs: batch 6 8.3-8.6 ms, batch 7 12.8-14.6, batch 12 11.6-12.4; with the 2-row tail batch 7
 * 10.0-11.9 (docs/codegen.md 2b).
 * 3..5 rows left keep one more whole 6-row tile (not measured against two 2-row passes). */
enum { NARROW_TAIL_ROWS = 2 };

/* The row-tile height for the general path of `orig` (under its rows >= limit fact). */
static int64_t general_tile_rows(loom_sym_ctx *cx, const mm_nest *orig, const loom_tp_cpu_params *p) {
  int64_t n;
  const loom_sym_expr *rows = orig->loops[orig->nloops - 2]->u.loop.extent;
  if (p->vector_bytes < 64 || orig->c->dtype != LOOM_DTYPE_F32) return TILE_ROWS;
  if (loom_sym_is_const(rows, &n)) return n > TILE_ROWS ? TALL_ROWS : TILE_ROWS;
  /* a symbolic extent: the 6-row tail tiles need rows >= TILE_ROWS proven (rows >= limit assumed) */
  return loom_sym_prove_le(cx, loom_sym_const(cx, TILE_ROWS), rows) == LOOM_SYM_TRUE ? TALL_ROWS : TILE_ROWS;
}

/* Tiles the matmul nest held by *slot; on refusal leaves it unchanged and says why. */
static loom_status tile_matmul(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                               const mm_nest *orig, const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  *done = false;
  loom_tp_stmt *copy = loom_tp_stmt_copy_subst(a, cx, *slot, NULL, NULL, 0);
  if (!copy) return LOOM_OOM();
  loom_tp_func view = *f;
  view.body = copy;
  mm_nest m;
  loom_strbuf small, steps, dots;
  loom_strbuf_init(&small, NULL);
  loom_strbuf_init(&steps, NULL);
  loom_strbuf_init(&dots, NULL);
  mm_ctx c = {a, cx, &view, &m, 0, true, &small, {0}, false, true, TILE_ROWS, NULL, false, false,
              orig->loops[orig->nloops - 2]->u.loop.extent, DOT_ONE_ROW_COLS, 0};
  panel_widths(p->vector_bytes, c.widths);
  loom_status st = LOOM_OK;
  /* B read as [j, r], a long reduction and few rows: dot-product tiles, a variant (the general
   * path below for the rest) */
  loom_tp_func *gen = &view, rest; /* where the general path goes */
  bool dots_variant = false, dots_only = false;
  const loom_sym_expr *rows = orig->loops[orig->nloops - 2]->u.loop.extent;
  int64_t k = 0, nrows = 0;
  if (loom_tpmm_dot_shaped(orig) && (!loom_sym_is_const(orig->red_ext, &k) || k >= DOT_MIN_K) &&
      (!loom_sym_is_const(rows, &nrows) || nrows < DOT_MAX_ROWS)) {
    mm_ctx dc = c;
    dc.why = &dots;
    dc.tile_rows = p->vector_bytes >= 64 ? DOT_ROWS : DOT_ROWS / 2; /* AVX2's 16 registers: 2 x 4 accumulators */
    dc.one_row_cols = p->vector_bytes >= 64 ? DOT_ONE_ROW_COLS : DOT_ONE_ROW_COLS / 2;
    const loom_sym_expr *guard =
        loom_sym_and(cx, loom_sym_cmp(cx, LOOM_SYM_LE, loom_sym_const(cx, DOT_MIN_K), orig->red_ext),
                     loom_sym_cmp(cx, LOOM_SYM_LT, rows, loom_sym_const(cx, DOT_MAX_ROWS)));
    int64_t always = 0;
    if (!guard) st = LOOM_OOM();
    else if (loom_sym_is_const(guard, &always) && always) { /* both extents constants: the dot tiles alone */
      st = loom_tpmm_dot_variant(&dc, &view);
      dots_only = !st;
    } else {
      st = loom_tp_add_variant(a, cx, &view, guard, loom_tpmm_dot_variant, &dc);
      dots_variant = !st;
      if (!st) {
        rest = view;
        rest.body = view.body->u.if_.else_s;
        gen = &rest;
        c.view = gen;
      }
    }
    if (st && loom_status_code(st) != LOOM_CODE_RESOURCE_EXHAUSTED) { /* the general path alone */
      loom_strbuf_printf(why, "nest %s: dot-product tiles refused (%s)\n", loom_sym_var_name(orig->loops[0]->u.loop.var),
                         loom_status_message(st));
      loom_status_free(st);
      st = LOOM_OK;
      view.body = copy = loom_tp_stmt_copy_subst(a, cx, *slot, NULL, NULL, 0);
      if (!copy) st = LOOM_OOM();
      dots_only = false;
    }
  }
  int64_t limit = orig->b_unit || orig->panel ? SMALL_M_UNIT : SMALL_M_TRANSPOSED;
  if (!st && !dots_only) {
    const loom_sym_expr *guard = loom_sym_cmp(cx, LOOM_SYM_LT, rows, loom_sym_const(cx, limit));
    st = guard ? loom_tp_add_variant(a, cx, gen, guard, small_m, &c) : LOOM_OOM();
    c.why = &steps;
    /* The general path runs only when rows >= limit (the variant's guard failed): it is
     * scheduled under that fact, so the row tail can be one overlapping full tile. */
    loom_sym_facts_push(cx);
    if (!st && loom_sym_is_var(rows)) st = loom_sym_assume_range(cx, rows, limit, INT64_MAX);
    else if (!st && !loom_sym_is_const(rows, NULL)) /* fused rows (b * s): rows - limit >= 0 */
      st = loom_sym_assume_nonneg(cx, loom_sym_sub(cx, rows, loom_sym_const(cx, limit)));
    c.tile_rows = general_tile_rows(cx, orig, p);
    c.tail_rows = c.tile_rows == TILE_ROWS && p->vector_bytes == 32 && orig->c->dtype == LOOM_DTYPE_F32 ? NARROW_TAIL_ROWS : 0;
    if (!st) st = loom_tpmm_j_to_top(&c, gen->body->u.if_.else_s, &m);
    if (!st) st = general_panels(&c, &gen->body->u.if_.else_s);
    loom_sym_facts_pop(cx);
    if (dots_variant) view.body->u.if_.else_s = gen->body;
  }
  if (st) {
    loom_strbuf_printf(why, "nest %s: matmul, register tiling refused (%s): plain schedule\n",
                       loom_sym_var_name(orig->loops[0]->u.loop.var), loom_status_message(st));
    loom_status_free(st);
  } else {
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_sym_print(rows, &sb);
    loom_strbuf_printf(why, "nest %s: matmul (init + reduction over %s), register-tiled:\n", loom_sym_var_name(orig->loops[0]->u.loop.var),
                       orig->red);
    if (dots_variant)
      loom_strbuf_printf(why, "  variant %s >= %d and %s < %d:\n", orig->red, DOT_MIN_K, loom_strbuf_cstr(&sb), DOT_MAX_ROWS);
    loom_strbuf_puts(why, loom_strbuf_cstr(&dots));
    if (!dots_only)
      loom_strbuf_printf(why, "%s  variant %s < %lld:\n%s", loom_strbuf_cstr(&steps), loom_strbuf_cstr(&sb), (long long)limit,
                         loom_strbuf_cstr(&small));
    loom_strbuf_free(&sb);
    *slot = view.body;
    *done = true;
  }
  loom_strbuf_free(&small);
  loom_strbuf_free(&steps);
  loom_strbuf_free(&dots);
  return LOOM_OK;
}

/* The batch loops right above the row loop i whose index B does not use (a (b, s, k) x (k, n)
 * matmul: the weight shared by every batch) fused with i, outermost last: the register tiles
 * then run over b * s rows, so B is read once per b * s / 12 rows where it was read once per
 * s / 12 for every batch (b = 8, s = 4 read B eight times, through the few-rows path), and the
 * row tail is one per matmul, not one per batch. Each fused access reads [floordiv(x, s),
 * floormod(x, s)]: row-major, that is offset x (targets/cpu cg_elem_ptr, no division). */
static loom_status fuse_shared_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, mm_nest *m,
                                    loom_strbuf *why) {
  while (m->nloops >= 3) {
    loom_tp_stmt *outer = m->loops[m->nloops - 3], *fused;
    const char *bn = loom_sym_var_name(outer->u.loop.var), *in = loom_sym_var_name(m->loops[m->nloops - 2]->u.loop.var);
    if (in_names(m->b_batch, m->nb_batch, bn)) return LOOM_OK;
    loom_status st = loom_tp_fuse(a, cx, f, outer, &fused);
    if (st) { /* a nest fuse does not apply to stays as it is */
      loom_strbuf_printf(why, "loops %s, %s: not fused (%s)\n", bn, in, loom_status_message(st));
      loom_status_free(st);
      return LOOM_OK;
    }
    loom_strbuf_printf(why, "loops %s, %s: fused (rows of every batch against the one B)\n", bn, in);
    if (outer == *slot) *slot = fused;
    if (!match_matmul(cx, *slot, m)) return LOOM_ERROR(INTERNAL, "the matmul nest does not match after fusing its rows");
  }
  return LOOM_OK;
}

loom_status loom_tpmm_schedule_plain(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                     const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  mm_nest m;
  *done = false;
  if ((*slot)->kind != LOOM_TP_STMT_FOR || !match_matmul(cx, *slot, &m)) return LOOM_OK;
  LOOM_PROPAGATE(fuse_shared_rows(a, cx, f, slot, &m, why));
  return tile_matmul(a, cx, f, slot, &m, p, why, done);
}

loom_status loom_tp_schedule_matmul(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                    const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  LOOM_PROPAGATE(loom_tpmm_schedule_plain(a, cx, f, slot, p, why, done));
  return *done || (*slot)->kind != LOOM_TP_STMT_FOR ? LOOM_OK : loom_tpmm_schedule_bcast(a, cx, f, slot, p, why, done);
}

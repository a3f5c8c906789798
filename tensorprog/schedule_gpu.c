/* schedule_gpu.c — default GPU schedule rules (see tp_schedule_gpu.h). */
#include "tensorprog/schedule_gpu_internal.h"

#include <stdio.h>

#include "tensorprog/tp_lanes.h"

/* CPU loop kinds (parallel, vectorize) become serial under `s`; *gpu: a GPU loop was seen. */
static void reset_kinds(loom_tp_stmt *s, bool *gpu) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) reset_kinds(s->u.seq.items[i], gpu);
      return;
    case LOOM_TP_STMT_FOR:
      if (s->u.loop.kind == LOOM_TP_LOOP_GPU_BLOCK || s->u.loop.kind == LOOM_TP_LOOP_GPU_THREAD) *gpu = true;
      else if (s->u.loop.kind != LOOM_TP_LOOP_UNROLL) s->u.loop.kind = LOOM_TP_LOOP_SERIAL;
      reset_kinds(s->u.loop.body, gpu);
      return;
    case LOOM_TP_STMT_IF:
      reset_kinds(s->u.if_.then_s, gpu);
      if (s->u.if_.else_s) reset_kinds(s->u.if_.else_s, gpu);
      return;
    default:
      return;
  }
}

loom_tp_stmt *loom_tpg_sole_loop(loom_tp_stmt *s) {
  while (s && s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  return s && s->kind == LOOM_TP_STMT_FOR ? s : NULL;
}

bool loom_tpg_spatial(const loom_tp_stmt *loop) {
  return !loop->u.loop.reduce && !loom_tp_stmt_scatters(loop->u.loop.body);
}

/* Whether `s` holds a loop (a thread that runs it does a row of work, not one element). */
static bool has_loop(const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (has_loop(s->u.seq.items[i])) return true;
      return false;
    case LOOM_TP_STMT_FOR: return true;
    case LOOM_TP_STMT_IF: return has_loop(s->u.if_.then_s) || (s->u.if_.else_s && has_loop(s->u.if_.else_s));
    default: return false;
  }
}

/* ---- warp per row ------------------------------------------------------------------------ */

/* Below this many iterations in every row loop a row stays one thread's: a warp would leave
 * most of its lanes idle. */
enum { WARP_MIN_ROW = 17 };

/* The row's own loops (not nested in another loop; through sequences and ifs), counted,
 * made gpu_lanes or made serial again (r->mode). */
typedef struct row_loops {
  loom_sym_ctx *cx;
  int n;         /* row loops */
  int lanes;     /* those in the lanes form (spatial, or a reduction of accumulator updates) */
  int reduces;   /* of those, reductions */
  bool long_row; /* a row loop may run WARP_MIN_ROW iterations or more */
  int mode;      /* 0: count; 1: make the lanes-form loops gpu_lanes; 2: make them serial again */
} row_loops;

/* A spatial row loop's iterations may be dealt to the lanes only when no two of them touch one
 * element (not a scatter; loom_tp_iterations_meet): col2im's tap loop is not `reduce`, yet its
 * windows overlap. Local buffers are judged by loom_tp_lanes_form_of. */
static bool independent(loom_sym_ctx *cx, const loom_tp_stmt *loop) {
  if (loom_tp_stmt_scatters(loop->u.loop.body)) return false;
  const loom_tp_buffer *meet = NULL;
  loom_status st = loom_tp_iterations_meet(cx, loop, true, &meet);
  if (st) {
    loom_status_free(st);
    return false;
  }
  return !meet;
}

static void walk_row(row_loops *r, loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_row(r, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_IF:
      walk_row(r, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_row(r, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_FOR: {
      if (r->mode == 2) {
        if (s->u.loop.kind == LOOM_TP_LOOP_GPU_LANES) s->u.loop.kind = LOOM_TP_LOOP_SERIAL;
        return;
      }
      r->n++;
      loom_sym_interval iv = loom_sym_bounds(r->cx, s->u.loop.extent);
      if (iv.hi_inf || iv.hi >= WARP_MIN_ROW) r->long_row = true;
      loom_tp_lanes_form form;
      if (s->u.loop.kind != LOOM_TP_LOOP_SERIAL || (!s->u.loop.reduce && !independent(r->cx, s)) ||
          !loom_tp_lanes_form_of(s, &form))
        return; /* stays serial on every lane: correct, redundant */
      r->lanes++;
      r->reduces += s->u.loop.reduce;
      if (r->mode == 1) s->u.loop.kind = LOOM_TP_LOOP_GPU_LANES;
      return;
    }
    default:
      return;
  }
}

/* The buffers the row's own reduce loops accumulate in memory along the row
 * (loom_tp_lanes_memory_acc): up to 8, in *bufs. */
static void memory_accs(const loom_tp_stmt *s, const loom_tp_buffer **bufs, int *n) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) memory_accs(s->u.seq.items[i], bufs, n);
      return;
    case LOOM_TP_STMT_IF:
      memory_accs(s->u.if_.then_s, bufs, n);
      if (s->u.if_.else_s) memory_accs(s->u.if_.else_s, bufs, n);
      return;
    case LOOM_TP_STMT_FOR: {
      const loom_tp_buffer *b = loom_tp_lanes_memory_acc(s);
      for (int i = 0; b && i < *n; i++)
        if (bufs[i] == b) b = NULL;
      if (b && *n < 8) bufs[(*n)++] = b;
      return;
    }
    default:
      return;
  }
}

/* Each buffer the row accumulates in memory along the row staged in a Local `acc<k>`
 * (loom_tp_cache_write over the row: loaded first unless the row starts by storing it,
 * written back after), so its loop can be dealt to the lanes; one the rewrite refuses stays. */
static loom_status stage_memory_accs(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop) {
  const loom_tp_buffer *bufs[8];
  int n = 0;
  memory_accs(loop->u.loop.body, bufs, &n);
  for (int i = 0; i < n; i++) {
    char name[16];
    snprintf(name, sizeof name, i ? "acc%d" : "acc", i);
    loom_status s = loom_tp_cache_write(a, cx, loop, bufs[i], name, NULL, NULL);
    if (s && loom_status_code(s) == LOOM_CODE_RESOURCE_EXHAUSTED) return s;
    if (s) loom_status_free(s);
  }
  return LOOM_OK;
}

/* Rule 1a: a row per warp. `loop` (the fused outer loops) runs rows that hold loops: it becomes
 * the blocks, each block one warp (`for lane in 0..32 gpu_thread`), and the row's loops are
 * dealt to the lanes (gpu_lanes). Taken when some row loop can be dealt and may run at least
 * WARP_MIN_ROW iterations, and the code around the lanes loops stores no buffer it reads
 * (loom_tp_lanes_row_conflict); *done false otherwise. That code runs on all 32 lanes with the
 * same values (its stores too: the same value to the same place). */
static loom_status warp_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int fused,
                             loom_strbuf *why, bool *done) {
  *done = false;
  LOOM_PROPAGATE(stage_memory_accs(a, cx, loop));
  row_loops r = {.cx = cx};
  walk_row(&r, loop->u.loop.body);
  if (!r.lanes || !r.long_row) return LOOM_OK;
  r = (row_loops){.cx = cx, .mode = 1};
  walk_row(&r, loop->u.loop.body);
  const loom_tp_buffer *race = loom_tp_lanes_row_conflict(loop->u.loop.body);
  if (race) {
    walk_row(&(row_loops){.cx = cx, .mode = 2}, loop->u.loop.body);
    if (why)
      loom_strbuf_printf(why, "program @%s: no warp per row: the code around its loops both stores and reads '%s' "
                              "(every lane runs it)\n", f->name, race->name);
    return LOOM_OK;
  }
  const loom_sym_expr *lane = loom_sym_var_new(cx, "lane", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *w = loom_sym_const(cx, 32);
  if (!lane || !w) return LOOM_OOM();
  loom_tp_stmt *thr = loom_tp_for(a, lane, w, LOOM_TP_LOOP_GPU_THREAD, false, loop->u.loop.body);
  loom_tp_stmt *body = thr ? loom_tp_seq(a, &thr, 1) : NULL;
  if (!body) return LOOM_OOM();
  loop->u.loop.body = body;
  LOOM_PROPAGATE(loom_tp_set_kind(cx, loop, LOOM_TP_LOOP_GPU_BLOCK));
  if (why) {
    loom_strbuf_printf(why, "program @%s: warp per row: %d outer loop%s fused, %d row loop%s over the lanes (%d reduction%s)",
                       f->name, fused, fused == 1 ? "" : "s", r.lanes, r.lanes == 1 ? "" : "s", r.reduces,
                       r.reduces == 1 ? "" : "s");
    if (r.lanes < r.n) loom_strbuf_printf(why, ", %d serial on every lane", r.n - r.lanes);
    loom_strbuf_puts(why, ", blocks over ");
    loom_sym_print(loop->u.loop.extent, why);
    loom_strbuf_putc(why, '\n');
  }
  *done = true;
  return LOOM_OK;
}

/* Rule 1: the outer spatial loops fused, split into chunks of `threads` (`loop_threads` when
 * each thread runs a loop): blocks x threads; a warp per row instead where rule 1a applies. */
static loom_status grid_form(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop, int threads,
                             int loop_threads, loom_strbuf *why, bool *done) {
  *done = false;
  if (!loom_tpg_spatial(loop)) return LOOM_OK;
  int fused = 1;
  for (;;) {
    loom_tp_stmt *inner = loom_tpg_sole_loop(loop->u.loop.body);
    if (!inner || !loom_tpg_spatial(inner)) break;
    loom_tp_stmt *out;
    loom_status s = loom_tp_fuse(a, cx, f, loop, &out);
    if (s) { /* e.g. the inner extent depends on the outer variable: stop here */
      loom_status_free(s);
      break;
    }
    loop = out;
    fused++;
  }
  if (has_loop(loop->u.loop.body)) {
    LOOM_PROPAGATE(warp_rows(a, cx, f, loop, fused, why, done));
    if (*done) return LOOM_OK;
    if (loop_threads) threads = loop_threads;
  }
  loom_tp_stmt *outer, *inner;
  LOOM_PROPAGATE(loom_tp_split_ceil(a, cx, f, loop, threads, &outer, &inner));
  LOOM_PROPAGATE(loom_tp_set_kind(cx, outer, LOOM_TP_LOOP_GPU_BLOCK));
  LOOM_PROPAGATE(loom_tp_set_kind(cx, inner, LOOM_TP_LOOP_GPU_THREAD));
  if (why) {
    loom_strbuf_printf(why, "program @%s: grid form: %d outer loop%s fused, %d threads per block, blocks over ", f->name,
                       fused, fused == 1 ? "" : "s", threads);
    loom_sym_print(outer->u.loop.extent, why);
    loom_strbuf_putc(why, '\n');
  }
  *done = true;
  return LOOM_OK;
}

/* Rule 2: the body as written on one thread of one block. */
static loom_status one_thread(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const char *reason, loom_strbuf *why) {
  const loom_sym_expr *b = loom_sym_var_new(cx, "gpu_b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *t = loom_sym_var_new(cx, "gpu_t", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  if (!b || !t || !one) return LOOM_OOM();
  loom_tp_stmt *thr = loom_tp_for(a, t, one, LOOM_TP_LOOP_GPU_THREAD, false, f->body);
  loom_tp_stmt *blk = thr ? loom_tp_for(a, b, one, LOOM_TP_LOOP_GPU_BLOCK, false, thr) : NULL;
  loom_tp_stmt *body = blk ? loom_tp_seq(a, &blk, 1) : NULL;
  if (!body) return LOOM_OOM();
  f->body = body;
  if (why) loom_strbuf_printf(why, "program @%s: one thread (fallback): %s\n", f->name, reason);
  return LOOM_OK;
}

loom_status loom_tp_schedule_gpu(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_tp_gpu_params *p,
                                 loom_strbuf *why) {
  int threads = p && p->threads ? p->threads : 256;
  bool gpu = false;
  reset_kinds(f->body, &gpu);
  if (gpu) {
    if (why) loom_strbuf_printf(why, "program @%s: already has GPU loops: kept\n", f->name);
    return LOOM_OK;
  }
  bool done;
  LOOM_PROPAGATE(loom_tpg_nests_grid(a, cx, f, threads, why, &done));
  if (done) return loom_tp_verify(cx, f);
  loom_tp_stmt *loop = loom_tpg_sole_loop(f->body);
  const char *reason = "the body is not one loop nest";
  if (loop) {
    LOOM_PROPAGATE(grid_form(a, cx, f, loop, threads, p ? p->loop_threads : 0, why, &done));
    if (done) return loom_tp_verify(cx, f);
    reason = loop->u.loop.reduce ? "the outer loop is a reduction" : "the outer loop stores at indices read from memory";
  }
  LOOM_PROPAGATE(one_thread(a, cx, f, reason, why));
  return loom_tp_verify(cx, f);
}

/* ---- the launch ---------------------------------------------------------------------------- */

typedef struct launch_walk {
  loom_sym_ctx *cx;
  const loom_tp_func *f;
  int64_t threads; /* largest thread extent bound so far */
  loom_status st;  /* first error */
} launch_walk;

static void walk_threads(launch_walk *w, const loom_tp_stmt *s) {
  if (w->st) return;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_threads(w, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (s->u.loop.kind == LOOM_TP_LOOP_GPU_THREAD) {
        loom_sym_interval iv = loom_sym_bounds(w->cx, s->u.loop.extent);
        if (iv.hi_inf || iv.hi > 1024) {
          loom_strbuf e;
          loom_strbuf_init(&e, NULL);
          loom_sym_print(s->u.loop.extent, &e);
          w->st = LOOM_ERROR(INVALID_ARGUMENT, "program @%s: gpu_thread loop '%s' has extent %s, not bounded by a constant <= 1024",
                             w->f->name, loom_sym_var_name(s->u.loop.var), loom_strbuf_cstr(&e));
          loom_strbuf_free(&e);
          return;
        }
        if (iv.hi > w->threads) w->threads = iv.hi;
      }
      walk_threads(w, s->u.loop.body);
      return;
    case LOOM_TP_STMT_IF:
      walk_threads(w, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_threads(w, s->u.if_.else_s);
      return;
    default:
      return;
  }
}

loom_status loom_tp_gpu_launch_of(loom_sym_ctx *cx, const loom_tp_func *f, loom_tp_gpu_launch *out) {
  const loom_tp_stmt *top = NULL;
  const loom_tp_stmt *b = f->body;
  if (b->kind == LOOM_TP_STMT_SEQ) {
    for (size_t i = 0; i < b->u.seq.n; i++) {
      const loom_tp_stmt *c = b->u.seq.items[i];
      if (c->kind == LOOM_TP_STMT_LET || c->kind == LOOM_TP_STMT_ALLOC) continue;
      if (top || c->kind != LOOM_TP_STMT_FOR) {
        top = NULL;
        break;
      }
      top = c;
    }
  } else if (b->kind == LOOM_TP_STMT_FOR) {
    top = b;
  }
  if (!top || top->u.loop.kind != LOOM_TP_LOOP_GPU_BLOCK)
    return LOOM_ERROR(INVALID_ARGUMENT, "program @%s is not scheduled for a GPU: its body is not one gpu_block loop", f->name);
  launch_walk w = {.cx = cx, .f = f, .threads = 1};
  walk_threads(&w, top->u.loop.body);
  if (w.st) return w.st;
  out->grid = top->u.loop.extent;
  out->threads = w.threads;
  return LOOM_OK;
}

/* schedule_cpu.c — default CPU schedule rules (see tp_schedule_cpu.h). */
#include "tensorprog/tp_schedule_cpu.h"
#include "tensorprog/schedule_bcast.h"

#include <string.h>

enum { VECTOR_SPLIT = 64 };

static bool uses(const loom_sym_expr *e, const loom_sym_expr *var) { return loom_sym_uses_var(e, var); }

static bool expr_unit(loom_sym_ctx *cx, const loom_tp_expr *e, const loom_sym_expr *var);

bool loom_tp_cpu_access_unit(loom_sym_ctx *cx, const loom_tp_buffer *b, loom_tp_expr *const *idx,
                             const loom_sym_expr *var) {
  for (int d = 0; d < b->ndim; d++) {
    const loom_tp_expr *x = idx[d];
    if (x->kind != LOOM_TP_EXPR_SYM) {
      if (!expr_unit(cx, x, var)) return false;
      continue;
    }
    if (!uses(x->u.sym, var)) continue;
    int run = 0;
    const loom_sym_expr *pair = loom_tp_fused_run(cx, b, idx, d, &run);
    if (pair && d + run == b->ndim) { /* [.., floordiv(y, E), floormod(y, E)] (or a longer run): the one index y */
      const loom_sym_expr *rest = loom_sym_sub(cx, pair, var);
      return rest && !uses(rest, var);
    }
    if (d != b->ndim - 1) return false;
    const loom_sym_expr *rest = loom_sym_sub(cx, x->u.sym, var);
    if (!rest || uses(rest, var)) return false;
  }
  return true;
}

static bool expr_unit(loom_sym_ctx *cx, const loom_tp_expr *e, const loom_sym_expr *var) {
  switch (e->kind) {
    case LOOM_TP_EXPR_SYM: return true; /* a value, not an address */
    case LOOM_TP_EXPR_LOAD: return loom_tp_cpu_access_unit(cx, e->u.load.buf, e->u.load.idx, var);
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (!expr_unit(cx, e->u.op.args[i], var)) return false;
      return true;
    case LOOM_TP_EXPR_CAST: return expr_unit(cx, e->u.cast_arg, var);
    case LOOM_TP_EXPR_SELECT:
      return expr_unit(cx, e->u.select.cond, var) && expr_unit(cx, e->u.select.then_e, var) &&
             expr_unit(cx, e->u.select.else_e, var);
    default: return true;
  }
}

/* Body of only stores and lets with unit-stride accesses in `var`. */
static bool vectorizable_body(loom_sym_ctx *cx, const loom_tp_stmt *s, const loom_sym_expr *var) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!vectorizable_body(cx, s->u.seq.items[i], var)) return false;
      return true;
    case LOOM_TP_STMT_STORE:
      return loom_tp_cpu_access_unit(cx, s->u.store.buf, s->u.store.idx, var) && expr_unit(cx, s->u.store.value, var);
    case LOOM_TP_STMT_LET: return expr_unit(cx, s->u.let.value, var);
    default: return false;
  }
}

/* Rule 2 on every innermost loop under `s`. */
static loom_status vectorize_inner(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *s,
                                   loom_tp_stmt *par, loom_strbuf *why) {
  if (s->kind == LOOM_TP_STMT_SEQ) {
    for (size_t i = 0; i < s->u.seq.n; i++) LOOM_PROPAGATE(vectorize_inner(a, cx, f, s->u.seq.items[i], par, why));
    return LOOM_OK;
  }
  if (s->kind == LOOM_TP_STMT_IF) {
    LOOM_PROPAGATE(vectorize_inner(a, cx, f, s->u.if_.then_s, par, why));
    return s->u.if_.else_s ? vectorize_inner(a, cx, f, s->u.if_.else_s, par, why) : LOOM_OK;
  }
  if (s->kind != LOOM_TP_STMT_FOR) return LOOM_OK;
  if (s != par) { /* rule 2a: a range test per element split into runs */
    loom_tp_stmt *runs;
    LOOM_PROPAGATE(loom_tp_schedule_pad_rows(a, cx, f, s, why, &runs));
    if (runs) return vectorize_inner(a, cx, f, runs, par, why);
  }
  const char *name = loom_sym_var_name(s->u.loop.var);
  if (!vectorizable_body(cx, s->u.loop.body, s->u.loop.var)) {
    loom_tp_stmt *body = s->u.loop.body;
    return vectorize_inner(a, cx, f, body, par, why);
  }
  if (s->u.loop.reduce) {
    loom_strbuf_printf(why, "loop %s: left serial (innermost, but a reduction)\n", name);
    return LOOM_OK;
  }
  if (s == par) {
    loom_tp_stmt *outer, *inner, *tail;
    loom_status st = loom_tp_split(a, cx, f, s, VECTOR_SPLIT, &outer, &inner, &tail);
    if (st) {
      loom_strbuf_printf(why, "loop %s: parallel only (split refused: %s)\n", name, loom_status_message(st));
      loom_status_free(st);
      return LOOM_OK;
    }
    LOOM_PROPAGATE(loom_tp_set_kind(cx, inner, LOOM_TP_LOOP_VECTORIZE));
    loom_strbuf_printf(why, "loop %s: split by %d, outer parallel, inner vectorized, symbolic tail\n", name,
                       VECTOR_SPLIT);
    return LOOM_OK;
  }
  if (s->u.loop.kind == LOOM_TP_LOOP_SERIAL) {
    LOOM_PROPAGATE(loom_tp_set_kind(cx, s, LOOM_TP_LOOP_VECTORIZE));
    loom_strbuf_printf(why, "loop %s: vectorize (innermost, unit stride)\n", name);
  }
  return LOOM_OK;
}

/* Does every access under `s` (stores and lets only) index its buffer either without u and v, or
 * with exactly u, v as its last two indices over an axis of extent `ev` (and u, v nowhere else)?
 * Then fusing the loops of u and v leaves each such access a fused pair (loom_tp_fused_run). */
static bool rows_pair_access(const loom_tp_buffer *b, loom_tp_expr *const *idx, const loom_sym_expr *u,
                             const loom_sym_expr *v, const loom_sym_expr *ev);

static bool rows_pair_expr(const loom_tp_expr *e, const loom_sym_expr *u, const loom_sym_expr *v,
                           const loom_sym_expr *ev) {
  switch (e->kind) {
    case LOOM_TP_EXPR_SYM: return !uses(e->u.sym, u) && !uses(e->u.sym, v); /* a value: left alone */
    case LOOM_TP_EXPR_LOAD: return rows_pair_access(e->u.load.buf, e->u.load.idx, u, v, ev);
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++)
        if (!rows_pair_expr(e->u.op.args[i], u, v, ev)) return false;
      return true;
    case LOOM_TP_EXPR_CAST: return rows_pair_expr(e->u.cast_arg, u, v, ev);
    case LOOM_TP_EXPR_SELECT:
      return rows_pair_expr(e->u.select.cond, u, v, ev) && rows_pair_expr(e->u.select.then_e, u, v, ev) &&
             rows_pair_expr(e->u.select.else_e, u, v, ev);
    default: return true;
  }
}

static bool rows_pair_access(const loom_tp_buffer *b, loom_tp_expr *const *idx, const loom_sym_expr *u,
                             const loom_sym_expr *v, const loom_sym_expr *ev) {
  int n = b->ndim;
  bool tail = n >= 2 && idx[n - 2]->kind == LOOM_TP_EXPR_SYM && idx[n - 2]->u.sym == u &&
              idx[n - 1]->kind == LOOM_TP_EXPR_SYM && idx[n - 1]->u.sym == v && b->dims[n - 1] == ev;
  for (int d = 0; d < (tail ? n - 2 : n); d++) {
    if (loom_tp_expr_uses_var(idx[d], u) || loom_tp_expr_uses_var(idx[d], v)) return false;
    if (!rows_pair_expr(idx[d], u, v, ev)) return false; /* a loaded index's own accesses */
  }
  return true;
}

static bool rows_pair_body(const loom_tp_stmt *s, const loom_sym_expr *u, const loom_sym_expr *v,
                           const loom_sym_expr *ev) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!rows_pair_body(s->u.seq.items[i], u, v, ev)) return false;
      return true;
    case LOOM_TP_STMT_STORE:
      return rows_pair_access(s->u.store.buf, s->u.store.idx, u, v, ev) && rows_pair_expr(s->u.store.value, u, v, ev);
    case LOOM_TP_STMT_LET: return rows_pair_expr(s->u.let.value, u, v, ev);
    default: return false;
  }
}

/* Rule 0a: four or more perfectly nested loops, none a reduction, whose two innermost index every
 * buffer they touch as its last two axes, row-major (an (n, c, h, w) elementwise pass): those two
 * are fused into one loop over h*w, so that a short row (a 7 x 7 plane's 7) is not a vector loop
 * of its own that runs scalar. */
static loom_status fuse_plane_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *s,
                                   loom_strbuf *why) {
  loom_tp_stmt *chain[4] = {s, NULL, NULL, NULL};
  for (int k = 1; k < 4; k++)
    if (!(chain[k] = loom_tp_child_loop(chain[k - 1]))) return LOOM_OK;
  loom_tp_stmt *u = chain[2], *v = chain[3];
  while (loom_tp_child_loop(v)) u = v, v = loom_tp_child_loop(v);
  for (loom_tp_stmt *l = s;; l = loom_tp_child_loop(l)) {
    bool kind_ok = l->u.loop.kind == LOOM_TP_LOOP_SERIAL || (l == s && l->u.loop.kind == LOOM_TP_LOOP_PARALLEL);
    if (l->u.loop.reduce || !kind_ok) return LOOM_OK;
    if (l == v) break;
  }
  if (!rows_pair_body(v->u.loop.body, u->u.loop.var, v->u.loop.var, v->u.loop.extent)) return LOOM_OK;
  loom_tp_stmt *fused;
  loom_status st = loom_tp_fuse(a, cx, f, u, &fused);
  if (!st) loom_strbuf_printf(why, "loops %s, %s: fused (the rows of a plane are one index)\n",
                              loom_sym_var_name(u->u.loop.var), loom_sym_var_name(v->u.loop.var));
  loom_status_free(st);
  return LOOM_OK;
}

/* Rule 0c: under the outermost loop, a serial loop whose body is one innermost serial loop, both
 * `reduce` or neither, the two indexing every buffer they touch as its last two axes, row-major
 * (a sum over an (h, w) plane, GlobalMaxPool, a norm's statistics over a group's planes, the
 * (h, w) row of a reduction over channels): fused into one loop over h*w, which LLVM vectorises
 * over the whole plane instead of rows of w (at w = 56, vectors of 16 unrolled by 4 left every
 * row to the scalar remainder: a sum over 56 x 56 planes took 1.7x ONNX Runtime's time, 0.55x
 * fused). Applied to every such pair under `s`. */
static loom_status fuse_plane_pairs(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                    loom_strbuf *why) {
  loom_tp_stmt *s = *slot;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) LOOM_PROPAGATE(fuse_plane_pairs(a, cx, f, &s->u.seq.items[i], why));
      return LOOM_OK;
    case LOOM_TP_STMT_IF:
      LOOM_PROPAGATE(fuse_plane_pairs(a, cx, f, &s->u.if_.then_s, why));
      return s->u.if_.else_s ? fuse_plane_pairs(a, cx, f, &s->u.if_.else_s, why) : LOOM_OK;
    case LOOM_TP_STMT_FOR: break;
    default: return LOOM_OK;
  }
  loom_tp_stmt *v = loom_tp_child_loop(s);
  bool pair = v && s->u.loop.reduce == v->u.loop.reduce && s->u.loop.kind == LOOM_TP_LOOP_SERIAL &&
              v->u.loop.kind == LOOM_TP_LOOP_SERIAL && !loom_tp_child_loop(v) &&
              rows_pair_body(v->u.loop.body, s->u.loop.var, v->u.loop.var, v->u.loop.extent);
  if (!pair) return fuse_plane_pairs(a, cx, f, &s->u.loop.body, why);
  loom_tp_stmt *fused;
  loom_status st = loom_tp_fuse(a, cx, f, s, &fused);
  if (!st) {
    loom_strbuf_printf(why, "loops %s, %s: fused (the rows of a plane are one loop under the outermost)\n",
                       loom_sym_var_name(s->u.loop.var), loom_sym_var_name(v->u.loop.var));
    *slot = fused;
  }
  loom_status_free(st);
  return LOOM_OK;
}

static loom_status schedule_seq(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, const loom_tp_cpu_params *p,
                                loom_strbuf *why);
static loom_status schedule_nest(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                 const loom_tp_cpu_params *p, loom_strbuf *why, bool version);

static loom_status schedule_plain_rows(void *ud, loom_tp_func *view) {
  const loom_tp_rule_ud *u = ud;
  return schedule_nest(u->a, u->cx, view, &view->body, u->p, u->why, false);
}

/* Rule 0d: the innermost loop v of a nest reads an operand through `select(x == 1, 0, v)` (an
 * elementwise op whose operands' last dims have different names: the legalizer cannot prove them
 * equal, so each may broadcast at run time). Such a row is no unit-stride access: the loop ran
 * as gathers (Where over (a, b), (c, d), (e, f): 3x ONNX Runtime's time). Versioned
 * (schedule_bcast.h): where every such x equals v's extent, the rows are plain and get the rules
 * below; else the nest as it was, scheduled the same way. *done: versioned. */
static loom_status version_guarded_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                        const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  *done = false;
  loom_tp_stmt *v = *slot;
  for (loom_tp_stmt *in = loom_tp_child_loop(v); in; in = loom_tp_child_loop(in)) v = in;
  if (v->u.loop.reduce) return LOOM_OK;
  const char *name = loom_sym_var_name((*slot)->u.loop.var);
  loom_strbuf inner;
  loom_strbuf_init(&inner, NULL);
  loom_tp_rule_ud u = {a, cx, p, &inner};
  int n;
  loom_status st = loom_tp_version_bcast(a, cx, f, slot, v->u.loop.var, schedule_plain_rows, &u, &n);
  if (st && (loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION || loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED)) {
    loom_status_free(st); /* not versioned (a guard that never holds here): the rules below */
    st = LOOM_OK;
    n = 0;
  }
  if (!st && n) {
    loom_tp_stmt *ifs = *slot;
    if (ifs->kind == LOOM_TP_STMT_IF && ifs->u.if_.else_s)
      st = schedule_nest(a, cx, f, &ifs->u.if_.else_s, p, &inner, false);
    loom_strbuf_printf(why, "nest %s: rows broadcast by a run-time test (%d): versioned, where none broadcasts plain rows:\n%s",
                       name, n, loom_strbuf_cstr(&inner));
    *done = true;
  }
  loom_strbuf_free(&inner);
  return st;
}

static loom_status schedule_nest(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                 const loom_tp_cpu_params *p, loom_strbuf *why, bool version) {
  loom_tp_stmt *s = *slot;
  if (s->kind != LOOM_TP_STMT_FOR) return LOOM_OK;
  bool conv;
  LOOM_PROPAGATE(loom_tp_schedule_conv(a, cx, f, slot, p, why, &conv));
  if (conv) return LOOM_OK;
  bool tiled;
  LOOM_PROPAGATE(loom_tp_schedule_matmul(a, cx, f, slot, p, why, &tiled));
  if (tiled) return LOOM_OK;
  if (version) {
    bool versioned;
    LOOM_PROPAGATE(version_guarded_rows(a, cx, f, slot, p, why, &versioned));
    if (versioned) return LOOM_OK;
  }
  s = *slot; /* its batch rows may have been fused */
  LOOM_PROPAGATE(loom_tp_schedule_transpose(a, cx, f, slot, p, why));
  if ((*slot)->kind == LOOM_TP_STMT_SEQ) return schedule_seq(a, cx, f, slot, p, why); /* strips + rows left */
  s = *slot;
  LOOM_PROPAGATE(fuse_plane_rows(a, cx, f, s, why));
  /* three or more perfectly nested loops: the outer two fused into the (parallel) outermost one, so
   * that a batch of one (an (n, c, h, w) activation's n) still has work for every thread */
  loom_tp_stmt *in = loom_tp_child_loop(s);
  if ((s->u.loop.kind == LOOM_TP_LOOP_SERIAL || s->u.loop.kind == LOOM_TP_LOOP_PARALLEL) && !s->u.loop.reduce && in &&
      !in->u.loop.reduce && in->u.loop.kind == LOOM_TP_LOOP_SERIAL && loom_tp_child_loop(in)) {
    loom_tp_stmt *fused;
    loom_status st = loom_tp_fuse(a, cx, f, s, &fused);
    if (!st) {
      loom_strbuf_printf(why, "loops %s, %s: fused (a batch of one still splits)\n", loom_sym_var_name(s->u.loop.var),
                         loom_sym_var_name(in->u.loop.var));
      *slot = s = fused;
    }
    loom_status_free(st);
  }
  LOOM_PROPAGATE(fuse_plane_pairs(a, cx, f, &s->u.loop.body, why));
  const char *name = loom_sym_var_name(s->u.loop.var);
  loom_tp_stmt *par = NULL;
  if (s->u.loop.kind == LOOM_TP_LOOP_SERIAL && !s->u.loop.reduce) {
    loom_status st = loom_tp_set_kind(cx, s, LOOM_TP_LOOP_PARALLEL);
    if (st) {
      loom_strbuf_printf(why, "loop %s: left serial (%s)\n", name, loom_status_message(st));
      loom_status_free(st);
    } else {
      loom_strbuf_printf(why, "loop %s: parallel (outermost, not a reduction)\n", name);
      par = s;
    }
  } else if (s->u.loop.kind == LOOM_TP_LOOP_PARALLEL) {
    par = s;
  }
  return vectorize_inner(a, cx, f, s, par, why);
}

/* Schedules every nest of the statement list in *slot, descending into nested lists (graph
 * fusion leaves `alloc C; { for .. }` when it merges a one-nest producer with its consumer). */
static loom_status schedule_seq(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, const loom_tp_cpu_params *p,
                                loom_strbuf *why) {
  loom_tp_stmt *body = *slot;
  if (body->kind != LOOM_TP_STMT_SEQ) return schedule_nest(a, cx, f, slot, p, why, true);
  /* items may be replaced by the split: iterate over a snapshot of the count */
  size_t n = body->u.seq.n;
  for (size_t i = 0; i < n && i < body->u.seq.n; i++) LOOM_PROPAGATE(schedule_seq(a, cx, f, &body->u.seq.items[i], p, why));
  return LOOM_OK;
}

loom_status loom_tp_schedule_cpu_for(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_tp_cpu_params *p,
                                     loom_strbuf *why) {
  loom_tp_stmt *body = f->body;
  if (body->kind != LOOM_TP_STMT_SEQ) return schedule_nest(a, cx, f, &f->body, p, why, true);
  size_t dropped;
  LOOM_PROPAGATE(schedule_seq(a, cx, f, &f->body, p, why));
  /* a matmul's accumulator its register tile replaced (a requantizing epilogue's int32 C) */
  LOOM_PROPAGATE(loom_tp_drop_dead_locals(a, f, &dropped));
  if (dropped) loom_strbuf_printf(why, "%zu Local buffers left dead by the tiles removed\n", dropped);
  return LOOM_OK;
}

loom_status loom_tp_schedule_cpu(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_strbuf *why) {
  return loom_tp_schedule_cpu_for(a, cx, f, &(loom_tp_cpu_params){.vector_bytes = 64}, why);
}

const char *loom_tp_cpu_matmul_tiled_text(void) {
  return
    /* The CPU matmul schedule (tensorprog text; the schedule rules are to produce it):
     * column panels of 32 in parallel; when m >= 6 (a full row tile exists) the B panel (k x 32) is packed into a
     * contiguous Local buffer (no cache-set conflicts for power-of-two n; for m < 6
     * packing costs more than it saves and B is read in place); a 6x32 register tile
     * (12 zmm accumulators: a Local buffer kept in registers by lane mode) with the
     * reduction innermost, A broadcast; symbolic tails: a 1x32 kernel for m % 6 rows and a
     * plain vectorised loop for n % 32 columns. */
    "prim @matmul(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for jo in 0..n // 32 parallel {\n"
    "    if m >= 6 {\n"
    "      alloc Bp: Local[(k, 32), f32]\n"
    "      for rp in 0..k { for jp in 0..32 vectorize { Bp[rp, jp] = B[rp, jo * 32 + jp] } }\n"
    "      for io in 0..m // 6 {\n"
    "        alloc acc: Local[(6, 32), f32]\n"
    "        for r in 0..k reduce {\n"
    "          for ii in 0..6 unroll {\n"
    "            let a: f32 = A[io * 6 + ii, r]\n"
    "            for ji in 0..32 vectorize { acc[ii, ji] = acc[ii, ji] + a * Bp[r, ji] }\n"
    "          }\n"
    "        }\n"
    "        for ii2 in 0..6 unroll { for ji2 in 0..32 vectorize { C[io * 6 + ii2, jo * 32 + ji2] = acc[ii2, ji2] } }\n"
    "      }\n"
    "      for it in 0..m % 6 {\n"
    "        alloc acc1: Local[(32,), f32]\n"
    "        for r1 in 0..k reduce {\n"
    "          let a1: f32 = A[m // 6 * 6 + it, r1]\n"
    "          for ji1 in 0..32 vectorize { acc1[ji1] = acc1[ji1] + a1 * Bp[r1, ji1] }\n"
    "        }\n"
    "        for ji3 in 0..32 vectorize { C[m // 6 * 6 + it, jo * 32 + ji3] = acc1[ji3] }\n"
    "      }\n"
    "    } else {\n"
    "      for iou in 0..m // 6 {\n"
    "        alloc accu: Local[(6, 32), f32]\n"
    "        for ru in 0..k reduce {\n"
    "          for iiu in 0..6 unroll {\n"
    "            let au: f32 = A[iou * 6 + iiu, ru]\n"
    "            for jiu in 0..32 vectorize { accu[iiu, jiu] = accu[iiu, jiu] + au * B[ru, jo * 32 + jiu] }\n"
    "          }\n"
    "        }\n"
    "        for ii2u in 0..6 unroll { for ji2u in 0..32 vectorize { C[iou * 6 + ii2u, jo * 32 + ji2u] = accu[ii2u, ji2u] } }\n"
    "      }\n"
    "      for itu in 0..m % 6 {\n"
    "        alloc acc1u: Local[(32,), f32]\n"
    "        for r1u in 0..k reduce {\n"
    "          let a1u: f32 = A[m // 6 * 6 + itu, r1u]\n"
    "          for ji1u in 0..32 vectorize { acc1u[ji1u] = acc1u[ji1u] + a1u * B[r1u, jo * 32 + ji1u] }\n"
    "        }\n"
    "        for ji3u in 0..32 vectorize { C[m // 6 * 6 + itu, jo * 32 + ji3u] = acc1u[ji3u] }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "  for i in 0..m parallel {\n"
    "    for jt in 0..n % 32 { C[i, n // 32 * 32 + jt] = 0.0 }\n"
    "    for rt in 0..k {\n"
    "      let at: f32 = A[i, rt]\n"
    "      for jt2 in 0..n % 32 vectorize { C[i, n // 32 * 32 + jt2] = C[i, n // 32 * 32 + jt2] + at * B[rt, n // 32 * 32 + jt2] }\n"
    "    }\n"
    "  }\n"
    "}\n";
}

/* schedule_gpu_nests.c — GPU rule 0: a sequence of independent loop nests (a concat, a
 * KV-cache append) as one grid of one thread per innermost iteration (tp_schedule_gpu.h).
 *
 * The body is outer spatial loops (perhaps none) around a sequence of k >= 2 perfect nests of
 * spatial loops whose innermost bodies hold only stores (and lets):
 *     for i0 in 0..b { for i1 in 0..12 {
 *       for j0 in 0..past { for e in 0..64 { v[i0, i1, j0, e] = past_v[i0, i1, j0, e] } }
 *       for j1 in 0..s    { for e in 0..64 { v[i0, i1, past + j1, e] = v1[i0, j1, i1, e] } } } }
 * Without this rule the sequence made a row, one warp per (i0, i1) copying past * 64 values:
 * 12 warps for a decode step, ~80 % of its time at past 512 on an H200. The nests become one
 * loop over all of their iterations, outer loops included (T_k = the product of nest k's
 * extents, the outer ones' too):
 *     for u in 0..T_1 + .. + T_k { if u < T_1 { nest 1 at u } else if u < T_1 + T_2 { nest 2 at
 *       u - T_1 } else .. }
 * each nest's variables recovered from its offset by floordiv / floormod (innermost fastest:
 * neighbouring threads store neighbouring elements), then split into blocks of `threads`.
 *
 * Every iteration then runs at once, in no order, so the rule applies only where that gives
 * the program's result: no buffer a nest stores is loaded anywhere in the body, every store is
 * at plain symbolic indices, and two nests that store one buffer do so in regions proven
 * disjoint on some axis: there each index is c + v (v one of the nest's own loop variables,
 * extent E; c free of every loop variable) or c alone, making the interval [c, c + E), and one
 * interval ends where the other begins or before (the concat's [0, past) and [past, past + s)).
 * Within a nest the loops are spatial (no reduction, no scatter), as the grid form asks. */
#include <string.h>

#include "tensorprog/schedule_gpu_internal.h"
#include "tensorprog/tp_rewrite.h"

enum { MAX_NESTS = 8, MAX_DEPTH = 12, MAX_STORES = 8 };

typedef struct nest {
  loom_tp_stmt *loops[MAX_DEPTH]; /* the outer loops, then the nest's own, outer to inner */
  int nloops, nown;               /* all of them; the nest's own (the last nown) */
  loom_tp_stmt *body;             /* the innermost body */
  const loom_tp_stmt *stores[MAX_STORES];
  int nstores;
} nest;

/* The stores (and lets) of a loop-free body, into n->stores; false for anything else. */
static bool collect_stores(nest *n, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!collect_stores(n, s->u.seq.items[i])) return false;
      return true;
    case LOOM_TP_STMT_LET: return true;
    case LOOM_TP_STMT_STORE:
      if (n->nstores == MAX_STORES) return false;
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (s->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM) return false;
      n->stores[n->nstores++] = s;
      return true;
    default: return false;
  }
}

/* Nest `n` (its outer loops already in place) from loop `l` down: a perfect chain of spatial
 * loops ending in a body of stores. */
static bool read_nest(nest *n, loom_tp_stmt *l) {
  while (l) {
    if (!loom_tpg_spatial(l) || n->nloops == MAX_DEPTH) return false;
    n->loops[n->nloops++] = l;
    n->nown++;
    loom_tp_stmt *inner = loom_tpg_sole_loop(l->u.loop.body);
    if (!inner) {
      n->body = l->u.loop.body;
      return collect_stores(n, n->body);
    }
    l = inner;
  }
  return false;
}

static bool uses_loop_var(const nest *n, const loom_sym_expr *e) {
  for (int k = 0; k < n->nloops; k++)
    if (loom_sym_uses_var(e, n->loops[k]->u.loop.var)) return true;
  return false;
}

/* The interval [*lo, *lo + *len) index `e` of nest n covers: e = c + v with v one of the nest's
 * own loop variables and c free of every loop variable, or e = c; false otherwise. */
static bool interval_of(loom_sym_ctx *cx, const nest *n, const loom_sym_expr *e, const loom_sym_expr **lo,
                        const loom_sym_expr **len) {
  if (!uses_loop_var(n, e)) {
    *lo = e;
    *len = loom_sym_const(cx, 1);
    return *len != NULL;
  }
  for (int k = n->nloops - n->nown; k < n->nloops; k++) {
    const loom_sym_expr *v = n->loops[k]->u.loop.var;
    if (!loom_sym_uses_var(e, v)) continue;
    const loom_sym_expr *c = loom_sym_simplify(cx, loom_sym_sub(cx, e, v));
    if (!c || uses_loop_var(n, c)) return false;
    *lo = c;
    *len = n->loops[k]->u.loop.extent;
    return true;
  }
  return false;
}

/* Whether a's store `sa` and b's store `sb` (one buffer) write disjoint regions: on some axis,
 * one interval ends at or before the other's start. */
static bool disjoint(loom_sym_ctx *cx, const nest *a, const loom_tp_stmt *sa, const nest *b, const loom_tp_stmt *sb) {
  for (int d = 0; d < sa->u.store.buf->ndim; d++) {
    const loom_sym_expr *la, *na, *lb, *nb;
    if (!interval_of(cx, a, sa->u.store.idx[d]->u.sym, &la, &na) || !interval_of(cx, b, sb->u.store.idx[d]->u.sym, &lb, &nb))
      continue;
    const loom_sym_expr *ea = loom_sym_add(cx, la, na), *eb = loom_sym_add(cx, lb, nb);
    if (ea && loom_sym_prove_le(cx, ea, lb) == LOOM_SYM_TRUE) return true;
    if (eb && loom_sym_prove_le(cx, eb, la) == LOOM_SYM_TRUE) return true;
  }
  return false;
}

/* The nests of f's body and the outer loops around them; false when the body is not that shape
 * or the iterations could not run in any order. */
static bool read_nests(loom_sym_ctx *cx, const loom_tp_func *f, nest *ns, int *count) {
  loom_tp_stmt *outer[MAX_DEPTH];
  int nouter = 0;
  loom_tp_stmt *s = f->body;
  for (loom_tp_stmt *l; (l = loom_tpg_sole_loop(s));) {
    if (!loom_tpg_spatial(l) || nouter == MAX_DEPTH) return false;
    outer[nouter++] = l;
    s = l->u.loop.body;
  }
  while (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  if (s->kind != LOOM_TP_STMT_SEQ || s->u.seq.n < 2 || s->u.seq.n > MAX_NESTS) return false;
  const loom_tp_stmt *all = s;
  for (size_t i = 0; i < s->u.seq.n; i++) {
    nest *n = &ns[i];
    *n = (nest){0};
    memcpy(n->loops, outer, (size_t)nouter * sizeof *outer);
    n->nloops = nouter;
    if (s->u.seq.items[i]->kind != LOOM_TP_STMT_FOR || !read_nest(n, s->u.seq.items[i])) return false;
  }
  int k = (int)s->u.seq.n;
  for (int i = 0; i < k; i++)
    for (int t = 0; t < ns[i].nstores; t++) {
      const loom_tp_stmt *st = ns[i].stores[t];
      if (loom_tp_stmt_loads(all, st->u.store.buf)) return false;
      for (int j = i + 1; j < k; j++)
        for (int u = 0; u < ns[j].nstores; u++)
          if (ns[j].stores[u]->u.store.buf == st->u.store.buf && !disjoint(cx, &ns[i], st, &ns[j], ns[j].stores[u]))
            return false;
    }
  *count = k;
  return true;
}

/* Nest n's body at position t of its iterations (innermost loop fastest). */
static loom_tp_stmt *nest_at(loom_arena *a, loom_sym_ctx *cx, const nest *n, const loom_sym_expr *t) {
  const loom_sym_expr *vars[MAX_DEPTH], *vals[MAX_DEPTH];
  const loom_sym_expr *rest = t;
  for (int k = n->nloops - 1; k >= 0; k--) {
    const loom_sym_expr *e = n->loops[k]->u.loop.extent;
    vars[k] = n->loops[k]->u.loop.var;
    vals[k] = k ? loom_sym_floormod(cx, rest, e) : rest;
    rest = loom_sym_floordiv(cx, rest, e);
    if (!vals[k] || !rest) return NULL;
  }
  return loom_tp_stmt_copy_subst(a, cx, n->body, vars, vals, (size_t)n->nloops);
}

static const loom_sym_expr *iterations(loom_sym_ctx *cx, const nest *n) {
  const loom_sym_expr *p = loom_sym_const(cx, 1);
  for (int k = 0; k < n->nloops && p; k++) p = loom_sym_mul(cx, p, n->loops[k]->u.loop.extent);
  return p;
}

loom_status loom_tpg_nests_grid(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, int threads, loom_strbuf *why, bool *done) {
  *done = false;
  nest ns[MAX_NESTS];
  int k = 0;
  if (!read_nests(cx, f, ns, &k)) return LOOM_OK;
  const loom_sym_expr *u = loom_sym_var_new(cx, "u", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *start[MAX_NESTS + 1];
  start[0] = loom_sym_const(cx, 0);
  for (int i = 0; i < k && start[i]; i++) start[i + 1] = loom_sym_add(cx, start[i], iterations(cx, &ns[i]));
  if (!u || !start[k]) return LOOM_OOM();
  /* the if-chain, built from the last nest up */
  loom_tp_stmt *chain = nest_at(a, cx, &ns[k - 1], loom_sym_sub(cx, u, start[k - 1]));
  for (int i = k - 2; i >= 0 && chain; i--) {
    loom_tp_stmt *here = nest_at(a, cx, &ns[i], loom_sym_sub(cx, u, start[i]));
    loom_tp_expr *cond = loom_tp_op2(a, LOOM_TP_OP_LT, loom_tp_sym(a, u), loom_tp_sym(a, start[i + 1]));
    chain = here && cond ? loom_tp_if(a, cond, here, chain) : NULL;
  }
  loom_tp_stmt *loop = chain ? loom_tp_for(a, u, start[k], LOOM_TP_LOOP_SERIAL, false, chain) : NULL;
  loom_tp_stmt *body = loop ? loom_tp_seq(a, &loop, 1) : NULL;
  if (!body) return LOOM_OOM();
  f->body = body;
  loom_tp_stmt *blocks, *thr;
  LOOM_PROPAGATE(loom_tp_split_ceil(a, cx, f, loop, threads, &blocks, &thr));
  LOOM_PROPAGATE(loom_tp_set_kind(cx, blocks, LOOM_TP_LOOP_GPU_BLOCK));
  LOOM_PROPAGATE(loom_tp_set_kind(cx, thr, LOOM_TP_LOOP_GPU_THREAD));
  if (why) {
    loom_strbuf_printf(why, "program @%s: grid form over %d disjoint nests, one thread per iteration, %d threads per block, "
                            "blocks over ", f->name, k, threads);
    loom_sym_print(blocks->u.loop.extent, why);
    loom_strbuf_putc(why, '\n');
  }
  *done = true;
  return LOOM_OK;
}

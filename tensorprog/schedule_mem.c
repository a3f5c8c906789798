/* schedule_mem.c — schedule primitives that move statements and data: loop distribution,
 * cache_read (packing a buffer's footprint into a Local) and cache_write (accumulating into
 * a Local, written back once). See tp_rewrite.h. */
#include <stdlib.h>

#include "base/vec.h"
#include "tensorprog/tp_rewrite.h"

enum { MAX_DEPTH = 16 };

static loom_status sym_error(loom_sym_ctx *cx) {
  loom_status s = loom_sym_ctx_take_error(cx);
  return s ? s : LOOM_OOM();
}

/* ---- walking the accesses of a loop body ----------------------------------------- */

/* One walk over a loop body visits every access of every buffer with the loops that
 * enclose it (inside the body) and whether an `if` does. */
typedef struct walker walker;
typedef loom_tp_expr **(*access_fn)(walker *w, const loom_tp_buffer *buf, loom_tp_expr **idx, bool store);

struct walker {
  loom_arena *a;
  loom_sym_ctx *cx;
  access_fn visit;                   /* may return replacement indices (rewrite) or NULL */
  void *ud;                          /* the visitor's state */
  const loom_tp_buffer *to;          /* rewrite: accesses the visitor replaces go to `to` */
  const loom_tp_stmt *loops[MAX_DEPTH];
  int depth;
  int if_depth;
  loom_status err;
  LOOM_VEC(const loom_sym_expr *) inner_vars; /* variables of the loops in the body */
};

static loom_tp_expr *walk_expr(walker *w, loom_tp_expr *e) {
  if (w->err) return e;
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: {
      for (int d = 0; d < e->u.load.buf->ndim; d++) e->u.load.idx[d] = walk_expr(w, e->u.load.idx[d]);
      loom_tp_expr **idx = w->err ? NULL : w->visit(w, e->u.load.buf, e->u.load.idx, false);
      if (!idx) return e;
      loom_tp_expr *r = loom_tp_load(w->a, w->to, idx);
      if (!r) w->err = LOOM_OOM();
      return r ? r : e;
    }
    case LOOM_TP_EXPR_OP: {
      loom_tp_expr *args[3] = {NULL, NULL, NULL};
      bool changed = false;
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) {
        args[i] = walk_expr(w, e->u.op.args[i]);
        changed |= args[i] != e->u.op.args[i];
      }
      if (!changed) return e;
      loom_tp_expr *r = LOOM_ARENA_NEW(w->a, loom_tp_expr);
      if (!r) {
        w->err = LOOM_OOM();
        return e;
      }
      *r = *e;
      for (int i = 0; i < 3; i++) r->u.op.args[i] = args[i];
      return r;
    }
    case LOOM_TP_EXPR_CAST: {
      loom_tp_expr *x = walk_expr(w, e->u.cast_arg);
      return x == e->u.cast_arg ? e : loom_tp_cast(w->a, e->dtype, x);
    }
    case LOOM_TP_EXPR_SELECT: {
      loom_tp_expr *c = walk_expr(w, e->u.select.cond), *x = walk_expr(w, e->u.select.then_e),
                   *y = walk_expr(w, e->u.select.else_e);
      if (c == e->u.select.cond && x == e->u.select.then_e && y == e->u.select.else_e) return e;
      return loom_tp_select(w->a, c, x, y);
    }
    default: return e;
  }
}

static void walk_stmt(walker *w, loom_tp_stmt *s) {
  if (w->err) return;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_stmt(w, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (w->depth == MAX_DEPTH) {
        w->err = LOOM_ERROR(FAILED_PRECONDITION, "loop nest deeper than %d", MAX_DEPTH);
        return;
      }
      if (!LOOM_VEC_PUSH(NULL, &w->inner_vars, s->u.loop.var)) {
        w->err = LOOM_OOM();
        return;
      }
      w->loops[w->depth++] = s;
      walk_stmt(w, s->u.loop.body);
      w->depth--;
      return;
    case LOOM_TP_STMT_STORE: {
      for (int d = 0; d < s->u.store.buf->ndim; d++) s->u.store.idx[d] = walk_expr(w, s->u.store.idx[d]);
      s->u.store.value = walk_expr(w, s->u.store.value);
      loom_tp_expr **idx = w->err ? NULL : w->visit(w, s->u.store.buf, s->u.store.idx, true);
      if (idx) {
        s->u.store.buf = w->to;
        s->u.store.idx = idx;
      }
      return;
    }
    case LOOM_TP_STMT_LET: s->u.let.value = walk_expr(w, s->u.let.value); return;
    case LOOM_TP_STMT_IF:
      s->u.if_.cond = walk_expr(w, s->u.if_.cond);
      w->if_depth++;
      walk_stmt(w, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_stmt(w, s->u.if_.else_s);
      w->if_depth--;
      return;
    case LOOM_TP_STMT_ALLOC: return;
    case LOOM_TP_STMT_BARRIER: return;
    case LOOM_TP_STMT_PREFETCH: { /* follows its buffer as a load does */
      for (int d = 0; d < s->u.prefetch.buf->ndim; d++) s->u.prefetch.idx[d] = walk_expr(w, s->u.prefetch.idx[d]);
      loom_tp_expr **idx = w->err ? NULL : w->visit(w, s->u.prefetch.buf, s->u.prefetch.idx, false);
      if (idx) {
        s->u.prefetch.buf = w->to;
        s->u.prefetch.idx = idx;
      }
      return;
    }
  }
}

static loom_status walk(walker *w, loom_tp_stmt *body) {
  walk_stmt(w, body);
  LOOM_VEC_FREE(NULL, &w->inner_vars);
  return w->err;
}

/* ---- distribution ------------------------------------------------------------------- */

typedef struct access {
  const loom_tp_buffer *buf;
  loom_tp_expr *const *idx;
  bool store;
} access;

typedef LOOM_VEC(access) access_vec;

static loom_tp_expr **collect_visit(walker *w, const loom_tp_buffer *buf, loom_tp_expr **idx, bool store) {
  access x = {buf, idx, store};
  if (!LOOM_VEC_PUSH(NULL, (access_vec *)w->ud, x)) w->err = LOOM_OOM();
  return NULL;
}

/* The rest of index `d` when it is `k*v + rest` (with `pair`, of the fused run of axes from d),
 * rest free of v and of the body's loop variables; NULL otherwise. */
static const loom_sym_expr *own_part(loom_sym_ctx *cx, const access *x, int d, bool pair, int64_t k,
                                     const loom_sym_expr *v, const walker *w) {
  if (x->idx[d]->kind != LOOM_TP_EXPR_SYM) return NULL;
  int run = 0;
  const loom_sym_expr *e = pair ? loom_tp_fused_run(cx, x->buf, x->idx, d, &run) : x->idx[d]->u.sym;
  if (!e) return NULL;
  if (!loom_sym_uses_var(e, v)) return NULL;
  const loom_sym_expr *rest = loom_sym_sub(cx, e, k == 1 ? v : loom_sym_mul(cx, loom_sym_const(cx, k), v));
  if (!rest || loom_sym_uses_var(rest, v)) return NULL;
  for (size_t i = 0; i < w->inner_vars.len; i++)
    if (loom_sym_uses_var(rest, w->inner_vars.data[i])) return NULL;
  return rest;
}

/* Iteration v touches only elements of `buf` whose index d (or fused run from d) is
 * k*v + rest (k = 1 or -1: a row walked backwards), for one d, k and rest shared by all of
 * buf's accesses: distinct iterations never meet. */
static bool separated(loom_sym_ctx *cx, const access_vec *acc, const loom_tp_buffer *buf, const loom_sym_expr *v,
                      const walker *w) {
  for (int d = 0; d < buf->ndim; d++)
    for (int pair = 0; pair < 2; pair++)
      for (int64_t k = 1; k >= -1; k -= 2) {
        const loom_sym_expr *rest = NULL;
        bool ok = true;
        for (size_t i = 0; i < acc->len && ok; i++) {
          if (acc->data[i].buf != buf) continue;
          const loom_sym_expr *r = own_part(cx, &acc->data[i], d, pair, k, v, w);
          if (!r || (rest && r != rest)) ok = false;
          rest = r;
        }
        if (ok) return true;
      }
  return false;
}

loom_status loom_tp_iterations_meet(loom_sym_ctx *cx, const loom_tp_stmt *loop, bool skip_local,
                                   const loom_tp_buffer **meet) {
  *meet = NULL;
  access_vec acc = {0};
  walker w = {.cx = cx, .visit = collect_visit, .ud = &acc};
  walk_stmt(&w, loop->u.loop.body); /* the visitor rewrites nothing: the body stays as it is */
  loom_status st = w.err;
  for (size_t i = 0; i < acc.len && !st && !*meet; i++) {
    const access *x = &acc.data[i];
    if (skip_local && x->buf->scope == LOOM_TP_SCOPE_LOCAL) continue;
    if (x->store && !separated(cx, &acc, x->buf, loop->u.loop.var, &w)) *meet = x->buf;
  }
  LOOM_VEC_FREE(NULL, &acc);
  LOOM_VEC_FREE(NULL, &w.inner_vars);
  return st;
}

static loom_status check_distribute(loom_sym_ctx *cx, loom_tp_stmt *loop) {
  const loom_tp_buffer *meet;
  LOOM_PROPAGATE(loom_tp_iterations_meet(cx, loop, false, &meet));
  if (meet)
    return LOOM_ERROR(FAILED_PRECONDITION, "distribute of loop '%s' does not apply: two iterations may access one element of '%s'",
                      loom_sym_var_name(loop->u.loop.var), meet->name);
  return LOOM_OK;
}

loom_status loom_tp_distribute(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop,
                               loom_tp_stmt ***out_loops, size_t *out_n) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "distribute: not a loop");
  const char *v = loom_sym_var_name(loop->u.loop.var);
  loom_tp_stmt *body = loop->u.loop.body;
  while (body->kind == LOOM_TP_STMT_SEQ && body->u.seq.n == 1) body = body->u.seq.items[0];
  if (body->kind != LOOM_TP_STMT_SEQ || body->u.seq.n < 2)
    return LOOM_ERROR(FAILED_PRECONDITION, "distribute of loop '%s' does not apply: its body is not a sequence", v);
  if (loop->u.loop.reduce)
    return LOOM_ERROR(FAILED_PRECONDITION, "distribute of loop '%s' does not apply: it is a reduction loop", v);
  for (size_t i = 0; i < body->u.seq.n; i++) {
    loom_tp_stmt_kind k = body->u.seq.items[i]->kind;
    if (k == LOOM_TP_STMT_LET || k == LOOM_TP_STMT_ALLOC)
      return LOOM_ERROR(FAILED_PRECONDITION, "distribute of loop '%s' does not apply: its body declares a %s", v,
                        k == LOOM_TP_STMT_LET ? "let" : "local buffer");
  }
  LOOM_PROPAGATE(check_distribute(cx, loop));
  size_t n = body->u.seq.n;
  loom_tp_stmt **loops = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, n);
  if (!loops) return LOOM_OOM();
  for (size_t i = 0; i < n; i++) {
    const loom_sym_expr *var = i ? loom_sym_var_new(cx, v, LOOM_SYM_VAR_SHAPE) : loop->u.loop.var;
    if (!var) return sym_error(cx);
    loom_tp_stmt *item = body->u.seq.items[i];
    if (i) item = loom_tp_stmt_copy_subst(a, cx, item, &loop->u.loop.var, &var, 1);
    loops[i] = item ? loom_tp_for(a, var, loop->u.loop.extent, loop->u.loop.kind, false, item) : NULL;
    if (!loops[i]) return LOOM_OOM();
  }
  loom_tp_stmt *seq = loom_tp_seq(a, loops, n);
  if (!seq) return LOOM_OOM();
  LOOM_PROPAGATE(loom_tp_replace(f, loop, seq));
  if (out_loops) *out_loops = loops;
  if (out_n) *out_n = n;
  return LOOM_OK;
}

/* ---- cache_read / cache_write --------------------------------------------------------- */

/* The footprint of a buffer's accesses inside a loop body: the first access fixes a
 * template (its indices and the enclosing loops whose variables they use, outer to inner);
 * every other access must be the template with its own loops of equal extents in place of
 * the template's. The Local copy has one axis per footprint loop. */
typedef struct footprint {
  const loom_tp_buffer *buf;
  const char *what;                  /* "cache_read" / "cache_write", for messages */
  const char *loop_name;
  bool have;
  loom_tp_expr *const *tidx;
  const loom_sym_expr *tvars[MAX_DEPTH];
  const loom_sym_expr *text[MAX_DEPTH];
  int tn;
  bool first_covers;                 /* the first access is a store under footprint loops only */
  bool stored;
  bool rewrite;                      /* second pass: replace the accesses */
} footprint;

static loom_status fp_fail(const footprint *fp, const char *why) {
  return LOOM_ERROR(FAILED_PRECONDITION, "%s of '%s' in loop '%s' does not apply: %s", fp->what, fp->buf->name,
                    fp->loop_name, why);
}

static loom_tp_expr **fp_visit(walker *w, const loom_tp_buffer *buf, loom_tp_expr **idx, bool store) {
  footprint *fp = w->ud;
  if (buf != fp->buf) return NULL;
  const loom_sym_expr *vars[MAX_DEPTH], *ext[MAX_DEPTH];
  int n = 0;
  for (int d = 0; d < buf->ndim; d++)
    if (idx[d]->kind != LOOM_TP_EXPR_SYM) {
      w->err = fp_fail(fp, "an index is not an index expression");
      return NULL;
    }
  for (int l = 0; l < w->depth; l++) {
    const loom_sym_expr *v = w->loops[l]->u.loop.var;
    bool used = false;
    for (int d = 0; d < buf->ndim && !used; d++) used = loom_sym_uses_var(idx[d]->u.sym, v);
    if (used) {
      vars[n] = v;
      ext[n++] = w->loops[l]->u.loop.extent;
    }
  }
  if (!fp->rewrite) {
    if (w->if_depth) {
      w->err = fp_fail(fp, "an access is under an if");
      return NULL;
    }
    fp->stored |= store;
    if (!fp->have) {
      fp->have = true;
      fp->tidx = idx;
      fp->tn = n;
      for (int i = 0; i < n; i++) {
        fp->tvars[i] = vars[i];
        fp->text[i] = ext[i];
        for (int l = 0; l < w->depth; l++)
          if (loom_sym_uses_var(ext[i], w->loops[l]->u.loop.var)) {
            w->err = fp_fail(fp, "a footprint loop's extent depends on an enclosing loop");
            return NULL;
          }
      }
      fp->first_covers = store && n == w->depth;
      return NULL;
    }
    if (n != fp->tn) {
      w->err = fp_fail(fp, "accesses use different numbers of loops");
      return NULL;
    }
    for (int i = 0; i < n; i++)
      if (ext[i] != fp->text[i] && loom_sym_prove_eq(w->cx, ext[i], fp->text[i]) != LOOM_SYM_TRUE) {
        w->err = fp_fail(fp, "accesses run over loops of different extents");
        return NULL;
      }
    for (int d = 0; d < buf->ndim; d++) {
      const loom_sym_expr *want = loom_sym_subst(w->cx, fp->tidx[d]->u.sym, fp->tvars, vars, (size_t)n);
      if (!want) {
        w->err = sym_error(w->cx);
        return NULL;
      }
      if (want != idx[d]->u.sym) {
        w->err = fp_fail(fp, "accesses are at different indices");
        return NULL;
      }
    }
    return NULL;
  }
  loom_tp_expr **out = LOOM_ARENA_ARRAY(w->a, loom_tp_expr *, n ? (size_t)n : 1);
  if (!out) {
    w->err = LOOM_OOM();
    return NULL;
  }
  for (int i = 0; i < n; i++)
    if (!(out[i] = loom_tp_sym(w->a, vars[i]))) w->err = LOOM_OOM();
  return out;
}

/* for u0 in 0..e0 { ... { dst[..] = src[..] } }: one of dst/src is the Local (indices u),
 * the other the buffer (the template with u for the footprint variables). */
static loom_tp_stmt *copy_nest(loom_arena *a, loom_sym_ctx *cx, const footprint *fp, const loom_tp_buffer *local,
                               bool to_local) {
  const loom_sym_expr *u[MAX_DEPTH];
  for (int i = 0; i < fp->tn; i++)
    if (!(u[i] = loom_sym_var_new(cx, loom_sym_var_name(fp->tvars[i]), LOOM_SYM_VAR_SHAPE))) return NULL;
  int nd = fp->buf->ndim;
  loom_tp_expr **bidx = LOOM_ARENA_ARRAY(a, loom_tp_expr *, nd ? (size_t)nd : 1);
  loom_tp_expr **lidx = LOOM_ARENA_ARRAY(a, loom_tp_expr *, fp->tn ? (size_t)fp->tn : 1);
  if (!bidx || !lidx) return NULL;
  for (int d = 0; d < nd; d++) {
    const loom_sym_expr *x = loom_sym_subst(cx, fp->tidx[d]->u.sym, fp->tvars, u, (size_t)fp->tn);
    if (!x || !(bidx[d] = loom_tp_sym(a, x))) return NULL;
  }
  for (int i = 0; i < fp->tn; i++)
    if (!(lidx[i] = loom_tp_sym(a, u[i]))) return NULL;
  loom_tp_stmt *s = to_local ? loom_tp_store(a, local, lidx, loom_tp_load(a, fp->buf, bidx))
                             : loom_tp_store(a, fp->buf, bidx, loom_tp_load(a, local, lidx));
  for (int i = fp->tn; i-- > 0 && s;) s = loom_tp_for(a, u[i], fp->text[i], LOOM_TP_LOOP_SERIAL, false, s);
  return s;
}

static loom_status footprint_of(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                                footprint *fp) {
  if (loop->kind != LOOM_TP_STMT_FOR) return LOOM_ERROR(INVALID_ARGUMENT, "%s: not a loop", fp->what);
  fp->buf = buf;
  fp->loop_name = loom_sym_var_name(loop->u.loop.var);
  walker w = {.a = a, .cx = cx, .visit = fp_visit, .ud = fp};
  LOOM_PROPAGATE(walk(&w, loop->u.loop.body));
  if (!fp->have) return fp_fail(fp, "the loop does not access it");
  return LOOM_OK;
}

/* Replaces the accesses and wraps the body: seq { alloc; before...; body; after }. */
static loom_status install(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, footprint *fp, loom_tp_buffer *local,
                           loom_tp_stmt *before, loom_tp_stmt *after) {
  fp->rewrite = true;
  walker w = {.a = a, .cx = cx, .visit = fp_visit, .ud = fp, .to = local};
  LOOM_PROPAGATE(walk(&w, loop->u.loop.body));
  loom_tp_stmt *items[4];
  size_t n = 0;
  items[n++] = loom_tp_alloc_stmt(a, local);
  if (before) items[n++] = before;
  items[n++] = loop->u.loop.body;
  if (after) items[n++] = after;
  loom_tp_stmt *seq = items[0] ? loom_tp_seq(a, items, n) : NULL;
  if (!seq) return LOOM_OOM();
  loop->u.loop.body = seq;
  return LOOM_OK;
}

loom_status loom_tp_cache_read(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                               const char *name, loom_tp_stmt **out_fill) {
  footprint fp = {.what = "cache_read"};
  LOOM_PROPAGATE(footprint_of(a, cx, loop, buf, &fp));
  if (fp.stored) return fp_fail(&fp, "the loop writes it");
  loom_tp_buffer *local = loom_tp_buffer_new(a, name, buf->dtype, fp.tn, fp.text, LOOM_TP_SCOPE_LOCAL);
  loom_tp_stmt *fill = local ? copy_nest(a, cx, &fp, local, true) : NULL;
  if (!fill) return sym_error(cx);
  LOOM_PROPAGATE(install(a, cx, loop, &fp, local, fill, NULL));
  if (out_fill) *out_fill = fill;
  return LOOM_OK;
}

/* loom_tp_cache_write; `aliased`: footprint points may be one element (the caller's guarantee). */
static loom_status cache_write(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                               const char *name, bool aliased, loom_tp_stmt **out_load, loom_tp_stmt **out_store) {
  footprint fp = {.what = "cache_write"};
  LOOM_PROPAGATE(footprint_of(a, cx, loop, buf, &fp));
  /* Distinct footprint points must be distinct elements: each footprint variable is alone
   * (with unit coefficient, beside non-footprint terms) in some index, or in the one index
   * of a fused run of axes (loom_tp_fused_run). */
  for (int i = 0; i < fp.tn && !aliased; i++) {
    bool alone = false;
    for (int k = 0; k < 2 * buf->ndim && !alone; k++) {
      int d = k / 2;
      int run = 0;
      const loom_sym_expr *x = k % 2 ? loom_tp_fused_run(cx, buf, fp.tidx, d, &run) : fp.tidx[d]->u.sym;
      if (!x || !loom_sym_uses_var(x, fp.tvars[i])) continue;
      const loom_sym_expr *rest = loom_sym_sub(cx, x, fp.tvars[i]);
      if (!rest) return sym_error(cx);
      alone = true;
      for (int j = 0; j < fp.tn; j++)
        if (loom_sym_uses_var(rest, fp.tvars[j])) alone = false;
    }
    if (!alone) return fp_fail(&fp, "two footprint points may be one element");
  }
  loom_tp_buffer *local = loom_tp_buffer_new(a, name, buf->dtype, fp.tn, fp.text, LOOM_TP_SCOPE_LOCAL);
  if (!local) return LOOM_OOM();
  loom_tp_stmt *load = NULL, *store = NULL;
  if (!fp.first_covers && !(load = copy_nest(a, cx, &fp, local, true))) return sym_error(cx);
  if (fp.stored && !(store = copy_nest(a, cx, &fp, local, false))) return sym_error(cx);
  LOOM_PROPAGATE(install(a, cx, loop, &fp, local, load, store));
  if (out_load) *out_load = load;
  if (out_store) *out_store = store;
  return LOOM_OK;
}

loom_status loom_tp_cache_write(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                                const char *name, loom_tp_stmt **out_load, loom_tp_stmt **out_store) {
  return cache_write(a, cx, loop, buf, name, false, out_load, out_store);
}

loom_status loom_tp_cache_write_aliased(loom_arena *a, loom_sym_ctx *cx, loom_tp_stmt *loop, const loom_tp_buffer *buf,
                                        const char *name, loom_tp_stmt **out_load, loom_tp_stmt **out_store) {
  return cache_write(a, cx, loop, buf, name, true, out_load, out_store);
}

/* ---- dead Local buffers ------------------------------------------------------------ */

typedef struct local_refs {
  const loom_tp_buffer *buf;
  int loads, stores;
} local_refs;

static void refs_expr(local_refs *r, const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      r->loads += e->u.load.buf == r->buf;
      for (int d = 0; d < e->u.load.buf->ndim; d++) refs_expr(r, e->u.load.idx[d]);
      return;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) refs_expr(r, e->u.op.args[i]);
      return;
    case LOOM_TP_EXPR_CAST: refs_expr(r, e->u.cast_arg); return;
    case LOOM_TP_EXPR_SELECT:
      refs_expr(r, e->u.select.cond);
      refs_expr(r, e->u.select.then_e);
      refs_expr(r, e->u.select.else_e);
      return;
    default: return;
  }
}

static void refs_stmt(local_refs *r, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) refs_stmt(r, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR: refs_stmt(r, s->u.loop.body); return;
    case LOOM_TP_STMT_STORE:
      r->stores += s->u.store.buf == r->buf;
      for (int d = 0; d < s->u.store.buf->ndim; d++) refs_expr(r, s->u.store.idx[d]);
      refs_expr(r, s->u.store.value);
      return;
    case LOOM_TP_STMT_LET: refs_expr(r, s->u.let.value); return;
    case LOOM_TP_STMT_PREFETCH: /* counts as a read: the buffer must stay */
      r->loads += s->u.prefetch.buf == r->buf;
      for (int d = 0; d < s->u.prefetch.buf->ndim; d++) refs_expr(r, s->u.prefetch.idx[d]);
      return;
    case LOOM_TP_STMT_IF:
      refs_expr(r, s->u.if_.cond);
      refs_stmt(r, s->u.if_.then_s);
      if (s->u.if_.else_s) refs_stmt(r, s->u.if_.else_s);
      return;
    default: return;
  }
}

static local_refs refs_of(const loom_tp_buffer *buf, const loom_tp_stmt *s) {
  local_refs r = {buf, 0, 0};
  if (s) refs_stmt(&r, s);
  return r;
}

/* Empties every store into buf under s (the statement becomes an empty sequence). */
static void drop_stores(loom_tp_stmt *s, const loom_tp_buffer *buf) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) drop_stores(s->u.seq.items[i], buf);
      return;
    case LOOM_TP_STMT_FOR: drop_stores(s->u.loop.body, buf); return;
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf == buf) *s = (loom_tp_stmt){.kind = LOOM_TP_STMT_SEQ};
      return;
    case LOOM_TP_STMT_IF:
      drop_stores(s->u.if_.then_s, buf);
      if (s->u.if_.else_s) drop_stores(s->u.if_.else_s, buf);
      return;
    default: return;
  }
}

loom_status loom_tp_drop_dead_locals(loom_arena *a, loom_tp_func *f, size_t *out_dropped) {
  size_t dropped = 0;
  loom_tp_stmt *top = f->body;
  if (out_dropped) *out_dropped = 0;
  if (top->kind != LOOM_TP_STMT_SEQ) return LOOM_OK;
  for (size_t ai = 0; ai < top->u.seq.n; ai++) {
    loom_tp_stmt *al = top->u.seq.items[ai];
    if (al->kind != LOOM_TP_STMT_ALLOC || al->u.alloc->scope != LOOM_TP_SCOPE_LOCAL) continue;
    const loom_tp_buffer *x = al->u.alloc;
    /* stores no later statement reads: in a branch that never reads x, or anywhere when
     * nothing reads it */
    for (size_t i = ai + 1; i < top->u.seq.n; i++) {
      loom_tp_stmt *it = top->u.seq.items[i];
      int later = 0;
      for (size_t j = i + 1; j < top->u.seq.n; j++) later += refs_of(x, top->u.seq.items[j]).loads;
      if (later) continue;
      if (it->kind == LOOM_TP_STMT_IF) {
        if (!refs_of(x, it->u.if_.then_s).loads) drop_stores(it->u.if_.then_s, x);
        if (it->u.if_.else_s && !refs_of(x, it->u.if_.else_s).loads) drop_stores(it->u.if_.else_s, x);
      } else if (!refs_of(x, it).loads) {
        drop_stores(it, x);
      }
    }
    /* where x is still used: nowhere (the alloc goes), or one branch of one `if` (it moves there) */
    size_t users = 0, user = 0;
    for (size_t i = ai + 1; i < top->u.seq.n; i++) {
      local_refs r = refs_of(x, top->u.seq.items[i]);
      if (r.loads + r.stores) users++, user = i;
    }
    loom_tp_stmt *move_to = NULL, **slot = NULL;
    if (users == 1 && top->u.seq.items[user]->kind == LOOM_TP_STMT_IF) {
      loom_tp_stmt *it = top->u.seq.items[user];
      local_refs rt = refs_of(x, it->u.if_.then_s), re = refs_of(x, it->u.if_.else_s), rc = refs_of(x, NULL);
      refs_expr(&rc, it->u.if_.cond);
      if (!rc.loads && !(re.loads + re.stores)) move_to = it->u.if_.then_s, slot = &it->u.if_.then_s;
      else if (!rc.loads && !(rt.loads + rt.stores)) move_to = it->u.if_.else_s, slot = &it->u.if_.else_s;
    }
    if (users && !move_to) continue;
    if (move_to) {
      loom_tp_stmt **two = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, 2);
      if (!two) return LOOM_OOM();
      two[0] = al;
      two[1] = move_to;
      if (!(*slot = loom_tp_seq(a, two, 2))) return LOOM_OOM();
    }
    for (size_t i = ai + 1; i < top->u.seq.n; i++) top->u.seq.items[i - 1] = top->u.seq.items[i];
    top->u.seq.n--;
    ai--;
    dropped += !move_to;
  }
  if (out_dropped) *out_dropped = dropped;
  return LOOM_OK;
}

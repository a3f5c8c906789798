/* fuse.c — merging a fused group of calls into one program, and inlining the
 * intermediates that then disappear (see tp_fuse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "tensorprog/tp_build.h"
#include "tensorprog/tp_fuse.h"
#include "tensorprog/tp_rewrite.h"

typedef LOOM_VEC(const loom_sym_expr *) sym_vec;

static bool contains(const sym_vec *v, const loom_sym_expr *e) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == e) return true;
  return false;
}

typedef struct collect {
  sym_vec *vars;
  bool oom;
} collect;

static void collect_var(void *ud, const loom_sym_expr *var) {
  collect *c = ud;
  if (!contains(c->vars, var) && !LOOM_VEC_PUSH(NULL, c->vars, var)) c->oom = true;
}

/* Index of `var` in the program's mapping arrays, or -1. */
static int find_var(const sym_vec *from, const loom_sym_expr *var) {
  for (size_t i = 0; i < from->len; i++)
    if (from->data[i] == var) return (int)i;
  return -1;
}

typedef struct unmapped_probe {
  const sym_vec *mapped;
  const loom_sym_expr *last;
  int count;
} unmapped_probe;

static void count_unmapped(void *ud, const loom_sym_expr *var) {
  unmapped_probe *p = ud;
  if (find_var(p->mapped, var) < 0) {
    p->last = var;
    p->count++;
  }
}

/* Solves the program's symbols of call `ci` against the group shapes: fills from/to. */
static loom_status solve_call(loom_sym_ctx *cx, const loom_tp_group_buf *bufs, size_t nbufs, const loom_tp_group_call *call,
                              size_t ci, sym_vec *from, sym_vec *to) {
  const loom_tp_func *p = call->prog;
  for (size_t i = 0; i < p->nparams; i++) {
    const loom_tp_param *prm = &p->params[i];
    if (prm->is_buffer) {
      size_t g = call->buf_args[i];
      if (g >= nbufs)
        return LOOM_ERROR(INVALID_ARGUMENT, "merge: call %zu (@%s) parameter %zu names group buffer %zu of %zu", ci,
                          p->name, i, g, nbufs);
      if (bufs[g].ndim != prm->buf->ndim || bufs[g].dtype != prm->buf->dtype)
        return LOOM_ERROR(TYPE_ERROR, "merge: call %zu (@%s) buffer '%s' is %d-d %s, group buffer '%s' is %d-d %s", ci,
                          p->name, prm->buf->name, prm->buf->ndim, loom_dtype_name(prm->buf->dtype), bufs[g].name,
                          bufs[g].ndim, loom_dtype_name(bufs[g].dtype));
    } else {
      const loom_sym_expr *v = call->scalar_args ? call->scalar_args[i] : NULL;
      if (!v)
        return LOOM_ERROR(INVALID_ARGUMENT, "merge: call %zu (@%s) gives no value for scalar '%s'", ci, p->name,
                          prm->scalar.name);
      if (!LOOM_VEC_PUSH(NULL, from, prm->scalar.var) || !LOOM_VEC_PUSH(NULL, to, v)) return LOOM_OOM();
    }
  }
  /* Bind until no progress: bare variables, then affine forms k*v + c. */
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < p->nparams; i++) {
      const loom_tp_param *prm = &p->params[i];
      if (!prm->is_buffer) continue;
      const loom_tp_group_buf *g = &bufs[call->buf_args[i]];
      for (int d = 0; d < prm->buf->ndim; d++) {
        unmapped_probe probe = {from, NULL, 0};
        loom_sym_for_each_var(prm->buf->dims[d], count_unmapped, &probe);
        if (probe.count != 1) continue;
        const loom_sym_expr *var, *val = NULL;
        int64_t k, c;
        if (loom_sym_is_var(prm->buf->dims[d])) {
          var = prm->buf->dims[d];
          val = g->dims[d];
        } else if (loom_sym_as_affine(prm->buf->dims[d], &var, &k, &c) && var == probe.last) {
          const loom_sym_expr *num = loom_sym_sub(cx, g->dims[d], loom_sym_const(cx, c));
          if (!num) return loom_sym_ctx_take_error(cx);
          if (loom_sym_prove_divisible(cx, num, k < 0 ? -k : k) != LOOM_SYM_TRUE) continue;
          val = loom_sym_floordiv(cx, num, loom_sym_const(cx, k));
          if (!val) return loom_sym_ctx_take_error(cx);
        } else {
          continue;
        }
        if (!LOOM_VEC_PUSH(NULL, from, var) || !LOOM_VEC_PUSH(NULL, to, val)) return LOOM_OOM();
        progress = true;
      }
    }
  }
  /* Every axis must now be provably equal. */
  for (size_t i = 0; i < p->nparams; i++) {
    const loom_tp_param *prm = &p->params[i];
    if (!prm->is_buffer) continue;
    const loom_tp_group_buf *g = &bufs[call->buf_args[i]];
    for (int d = 0; d < prm->buf->ndim; d++) {
      const loom_sym_expr *want = loom_sym_subst(cx, prm->buf->dims[d], from->data, to->data, from->len);
      if (!want) return loom_sym_ctx_take_error(cx);
      if (loom_sym_prove_eq(cx, want, g->dims[d]) != LOOM_SYM_TRUE) {
        char *a = loom_sym_to_string(want), *b = loom_sym_to_string(g->dims[d]);
        loom_status s = LOOM_ERROR(TYPE_ERROR,
                                   "merge: call %zu (@%s) buffer '%s' axis %d: cannot prove %s == %s (group buffer '%s')",
                                   ci, p->name, prm->buf->name, d, a ? a : "?", b ? b : "?", g->name);
        free(a);
        free(b);
        return s;
      }
    }
  }
  return LOOM_OK;
}

loom_status loom_tp_merge(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_tp_group_buf *bufs,
                          size_t nbufs, const loom_tp_group_call *calls, size_t ncalls, loom_tp_func **out) {
  loom_status st = LOOM_OK;
  sym_vec syms = {0}, from = {0}, to = {0};
  LOOM_VEC(loom_tp_stmt *) items = {0};
  LOOM_VEC(loom_tp_param) params = {0};
  loom_tp_buffer **gb = LOOM_ARENA_ARRAY(a, loom_tp_buffer *, nbufs ? nbufs : 1);
  loom_tp_func *f = LOOM_ARENA_NEW(a, loom_tp_func);
  if (!gb || !f || !(f->name = loom_arena_strdup(a, name))) return LOOM_OOM();
  /* The group's symbols, in first-appearance order, become scalar parameters. */
  collect col = {&syms, false};
  for (size_t i = 0; i < nbufs; i++)
    for (int d = 0; d < bufs[i].ndim; d++) loom_sym_for_each_var(bufs[i].dims[d], collect_var, &col);
  /* ... and those only a scalar argument uses (`tril(x, k=past)`), after them. */
  for (size_t ci = 0; ci < ncalls; ci++)
    for (size_t i = 0; calls[ci].scalar_args && i < calls[ci].prog->nparams; i++)
      if (!calls[ci].prog->params[i].is_buffer && calls[ci].scalar_args[i])
        loom_sym_for_each_var(calls[ci].scalar_args[i], collect_var, &col);
  if (col.oom) {
    st = LOOM_OOM();
    goto done;
  }
  for (size_t i = 0; i < syms.len; i++) {
    loom_tp_param prm = {.is_buffer = false, .scalar = {loom_sym_var_name(syms.data[i]), syms.data[i]}};
    if (!LOOM_VEC_PUSH(NULL, &params, prm)) {
      st = LOOM_OOM();
      goto done;
    }
  }
  /* Group buffers: parameters in order, intermediates as Local allocations. */
  for (size_t i = 0; i < nbufs; i++) {
    gb[i] = loom_tp_buffer_new(a, bufs[i].name, bufs[i].dtype, bufs[i].ndim, bufs[i].dims,
                               bufs[i].is_param ? LOOM_TP_SCOPE_GLOBAL : LOOM_TP_SCOPE_LOCAL);
    if (!gb[i]) {
      st = LOOM_OOM();
      goto done;
    }
    if (bufs[i].is_param) {
      gb[i]->param_index = (int)params.len;
      loom_tp_param prm = {.is_buffer = true, .buf = gb[i]};
      if (!LOOM_VEC_PUSH(NULL, &params, prm)) st = LOOM_OOM();
    } else {
      loom_tp_stmt *s = loom_tp_alloc_stmt(a, gb[i]);
      if (!s || !LOOM_VEC_PUSH(NULL, &items, s)) st = LOOM_OOM();
    }
    if (st) goto done;
  }
  for (size_t ci = 0; ci < ncalls; ci++) {
    const loom_tp_func *p = calls[ci].prog;
    from.len = to.len = 0;
    st = solve_call(cx, bufs, nbufs, &calls[ci], ci, &from, &to);
    if (st) goto done;
    const loom_tp_buffer **bf = LOOM_ARENA_ARRAY(a, const loom_tp_buffer *, p->nparams + 1);
    const loom_tp_buffer **bt = LOOM_ARENA_ARRAY(a, const loom_tp_buffer *, p->nparams + 1);
    if (!bf || !bt) {
      st = LOOM_OOM();
      goto done;
    }
    size_t nb = 0;
    for (size_t i = 0; i < p->nparams; i++) {
      if (!p->params[i].is_buffer) continue;
      bf[nb] = p->params[i].buf;
      bt[nb++] = gb[calls[ci].buf_args[i]];
    }
    loom_tp_stmt *body = loom_tp_stmt_copy_remap(a, cx, p->body, from.data, to.data, from.len, bf, bt, nb);
    if (!body || !LOOM_VEC_PUSH(NULL, &items, body)) {
      st = loom_sym_ctx_take_error(cx);
      if (!st) st = LOOM_OOM();
      goto done;
    }
  }
  f->nparams = params.len;
  f->params = LOOM_ARENA_ARRAY(a, loom_tp_param, params.len ? params.len : 1);
  f->nsyms = syms.len;
  f->syms = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, syms.len ? syms.len : 1);
  f->body = loom_tp_seq(a, items.data, items.len);
  if (!f->params || !f->syms || !f->body) {
    st = LOOM_OOM();
    goto done;
  }
  if (params.len) memcpy(f->params, params.data, params.len * sizeof *params.data);
  if (syms.len) memcpy(f->syms, syms.data, syms.len * sizeof *syms.data);
  *out = f;
done:
  LOOM_VEC_FREE(NULL, &syms);
  LOOM_VEC_FREE(NULL, &from);
  LOOM_VEC_FREE(NULL, &to);
  LOOM_VEC_FREE(NULL, &items);
  LOOM_VEC_FREE(NULL, &params);
  return st;
}

/* ---- inlining ------------------------------------------------------------- */

/* The single store of a perfect, non-reduce loop nest `s` whose indices are its loop
 * variables in order, or NULL. Fills the loop variables. */
static const loom_tp_stmt *defining_store(const loom_tp_stmt *s, const loom_tp_buffer *t, const loom_sym_expr **vars) {
  int depth = 0;
  while (s) {
    if (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) {
      s = s->u.seq.items[0];
    } else if (s->kind == LOOM_TP_STMT_FOR && !s->u.loop.reduce && depth < 16) {
      vars[depth++] = s->u.loop.var;
      s = s->u.loop.body;
    } else {
      break;
    }
  }
  if (!s || s->kind != LOOM_TP_STMT_STORE || s->u.store.buf != t || depth != t->ndim) return NULL;
  for (int d = 0; d < depth; d++)
    if (s->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM || s->u.store.idx[d]->u.sym != vars[d]) return NULL;
  return s;
}

typedef struct access_scan {
  const loom_tp_buffer *t;
  int stores;        /* stores into t */
  bool non_sym_load; /* a load of t with a data-dependent index */
} access_scan;

static void scan_expr(access_scan *sc, const loom_tp_expr *e) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++) {
        if (e->u.load.buf == sc->t && e->u.load.idx[d]->kind != LOOM_TP_EXPR_SYM) sc->non_sym_load = true;
        scan_expr(sc, e->u.load.idx[d]);
      }
      return;
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++) scan_expr(sc, e->u.op.args[k]);
      return;
    case LOOM_TP_EXPR_CAST:
      scan_expr(sc, e->u.cast_arg);
      return;
    case LOOM_TP_EXPR_SELECT:
      scan_expr(sc, e->u.select.cond);
      scan_expr(sc, e->u.select.then_e);
      scan_expr(sc, e->u.select.else_e);
      return;
    default:
      return;
  }
}

static void scan_stmt(access_scan *sc, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) scan_stmt(sc, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      scan_stmt(sc, s->u.loop.body);
      return;
    case LOOM_TP_STMT_STORE:
      sc->stores += s->u.store.buf == sc->t;
      for (int d = 0; d < s->u.store.buf->ndim; d++) scan_expr(sc, s->u.store.idx[d]);
      scan_expr(sc, s->u.store.value);
      return;
    case LOOM_TP_STMT_LET:
      scan_expr(sc, s->u.let.value);
      return;
    case LOOM_TP_STMT_IF:
      scan_expr(sc, s->u.if_.cond);
      scan_stmt(sc, s->u.if_.then_s);
      if (s->u.if_.else_s) scan_stmt(sc, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_PREFETCH: /* a hint naming t keeps t (it is not inlined away) */
      if (s->u.prefetch.buf == sc->t) sc->non_sym_load = true;
      for (int d = 0; d < s->u.prefetch.buf->ndim; d++) scan_expr(sc, s->u.prefetch.idx[d]);
      return;
    case LOOM_TP_STMT_ALLOC:
    case LOOM_TP_STMT_BARRIER:
      return;
  }
}

/* True when `e` loads buffer `t`. */
static bool expr_loads(const loom_tp_expr *e, const loom_tp_buffer *t) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      if (e->u.load.buf == t) return true;
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (expr_loads(e->u.load.idx[d], t)) return true;
      return false;
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
        if (expr_loads(e->u.op.args[k], t)) return true;
      return false;
    case LOOM_TP_EXPR_CAST:
      return expr_loads(e->u.cast_arg, t);
    case LOOM_TP_EXPR_SELECT:
      return expr_loads(e->u.select.cond, t) || expr_loads(e->u.select.then_e, t) ||
             expr_loads(e->u.select.else_e, t);
    default:
      return false;
  }
}

typedef struct inliner {
  loom_arena *a;
  loom_sym_ctx *cx;
  const loom_tp_buffer *t;
  const loom_tp_expr *value;   /* the defining store's value */
  const loom_sym_expr **vars;  /* its loop variables */
  bool failed;
} inliner;

static void inline_expr(inliner *in, loom_tp_expr **slot) {
  loom_tp_expr *e = *slot;
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: {
      for (int d = 0; d < e->u.load.buf->ndim; d++) inline_expr(in, &e->u.load.idx[d]);
      if (e->u.load.buf != in->t) return;
      const loom_sym_expr *vals[16];
      for (int d = 0; d < in->t->ndim; d++) vals[d] = e->u.load.idx[d]->u.sym;
      loom_tp_expr *r = loom_tp_expr_copy_subst(in->a, in->cx, in->value, in->vars, vals, (size_t)in->t->ndim);
      if (!r) in->failed = true;
      else *slot = r;
      return;
    }
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++) inline_expr(in, &e->u.op.args[k]);
      return;
    case LOOM_TP_EXPR_CAST:
      inline_expr(in, &e->u.cast_arg);
      return;
    case LOOM_TP_EXPR_SELECT:
      inline_expr(in, &e->u.select.cond);
      inline_expr(in, &e->u.select.then_e);
      inline_expr(in, &e->u.select.else_e);
      return;
    default:
      return;
  }
}

static void inline_stmt(inliner *in, loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) inline_stmt(in, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      inline_stmt(in, s->u.loop.body);
      return;
    case LOOM_TP_STMT_STORE:
      for (int d = 0; d < s->u.store.buf->ndim; d++) inline_expr(in, &s->u.store.idx[d]);
      inline_expr(in, &s->u.store.value);
      return;
    case LOOM_TP_STMT_LET:
      inline_expr(in, &s->u.let.value);
      return;
    case LOOM_TP_STMT_IF:
      inline_expr(in, &s->u.if_.cond);
      inline_stmt(in, s->u.if_.then_s);
      if (s->u.if_.else_s) inline_stmt(in, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_PREFETCH:
      for (int d = 0; d < s->u.prefetch.buf->ndim; d++) inline_expr(in, &s->u.prefetch.idx[d]);
      return;
    case LOOM_TP_STMT_ALLOC:
    case LOOM_TP_STMT_BARRIER:
      return;
  }
}

loom_status loom_tp_inline_locals(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, size_t *out_count) {
  size_t count = 0;
  loom_tp_stmt *top = f->body;
  if (top->kind != LOOM_TP_STMT_SEQ) goto done;
  for (size_t ai = 0; ai < top->u.seq.n; ai++) {
    loom_tp_stmt *alloc = top->u.seq.items[ai];
    if (alloc->kind != LOOM_TP_STMT_ALLOC || alloc->u.alloc->scope != LOOM_TP_SCOPE_LOCAL) continue;
    const loom_tp_buffer *t = alloc->u.alloc;
    access_scan sc = {t, 0, false};
    scan_stmt(&sc, top);
    if (sc.stores != 1 || sc.non_sym_load || t->ndim > 16) continue;
    /* The writer: a top-level item that is exactly the defining nest. */
    size_t wi = top->u.seq.n;
    const loom_tp_stmt *store = NULL;
    const loom_sym_expr *vars[16];
    for (size_t i = 0; i < top->u.seq.n && !store; i++) {
      store = defining_store(top->u.seq.items[i], t, vars);
      if (store) wi = i;
    }
    if (!store) continue;
    if (expr_loads(store->u.store.value, t)) continue; /* a recurrence: keep the buffer */
    inliner in = {a, cx, t, store->u.store.value, vars, false};
    for (size_t i = 0; i < top->u.seq.n && !in.failed; i++)
      if (i != wi && i != ai) inline_stmt(&in, top->u.seq.items[i]);
    if (in.failed) return LOOM_OOM();
    /* Drop the writer and the alloc. */
    size_t n = 0;
    for (size_t i = 0; i < top->u.seq.n; i++)
      if (i != wi && i != ai) top->u.seq.items[n++] = top->u.seq.items[i];
    top->u.seq.n = n;
    count++;
    ai = (size_t)-1; /* indices moved: start over */
  }
done:
  if (out_count) *out_count = count;
  return LOOM_OK;
}

/* ---- epilogues -------------------------------------------------------------- */

static loom_tp_stmt *unwrap(loom_tp_stmt *s) {
  while (s && s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  return s;
}

/* Whether every access of `c` in `e` is a load at exactly `idx` (symbolic, same symbols). */
static bool loads_only_at(const loom_tp_expr *e, const loom_tp_buffer *c, loom_tp_expr *const *idx) {
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (!loads_only_at(e->u.load.idx[d], c, idx)) return false;
      if (e->u.load.buf != c) return true;
      for (int d = 0; d < c->ndim; d++)
        if (e->u.load.idx[d]->kind != LOOM_TP_EXPR_SYM || e->u.load.idx[d]->u.sym != idx[d]->u.sym) return false;
      return true;
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
        if (!loads_only_at(e->u.op.args[k], c, idx)) return false;
      return true;
    case LOOM_TP_EXPR_CAST: return loads_only_at(e->u.cast_arg, c, idx);
    case LOOM_TP_EXPR_SELECT:
      return loads_only_at(e->u.select.cond, c, idx) && loads_only_at(e->u.select.then_e, c, idx) &&
             loads_only_at(e->u.select.else_e, c, idx);
    default: return true;
  }
}

/* Whether the reduction `s` stores only into c at idx, reads c only there and holds only
 * loops and stores (no lets, ifs or allocs: a plain matmul update). */
static bool plain_reduction(const loom_tp_stmt *s, const loom_tp_buffer *c, loom_tp_expr *const *idx) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!plain_reduction(s->u.seq.items[i], c, idx)) return false;
      return true;
    case LOOM_TP_STMT_FOR: return s->u.loop.reduce && plain_reduction(s->u.loop.body, c, idx);
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf != c) return false;
      for (int d = 0; d < c->ndim; d++)
        if (s->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM || s->u.store.idx[d]->u.sym != idx[d]->u.sym) return false;
      return loads_only_at(s->u.store.value, c, idx);
    default: return false;
  }
}

/* The innermost body of a matmul nest writing `c`: non-reduce loops, then [init; reduction]
 * with c stored at idx = distinct variables of those loops, one per axis. NULL otherwise. */
static loom_tp_stmt *matmul_body(loom_tp_stmt *s, const loom_tp_buffer *c) {
  const loom_sym_expr *vars[16];
  int depth = 0;
  s = unwrap(s);
  while (s && s->kind == LOOM_TP_STMT_FOR && !s->u.loop.reduce && depth < 16) {
    vars[depth++] = s->u.loop.var;
    s = unwrap(s->u.loop.body);
  }
  if (!s || s->kind != LOOM_TP_STMT_SEQ || s->u.seq.n != 2) return NULL;
  const loom_tp_stmt *init = s->u.seq.items[0], *red = s->u.seq.items[1];
  if (init->kind != LOOM_TP_STMT_STORE || init->u.store.buf != c || red->kind != LOOM_TP_STMT_FOR || !red->u.loop.reduce)
    return NULL;
  loom_tp_expr *const *idx = init->u.store.idx;
  for (int d = 0; d < c->ndim; d++) {
    if (idx[d]->kind != LOOM_TP_EXPR_SYM) return NULL;
    bool found = false;
    for (int k = 0; k < depth && !found; k++) found = idx[d]->u.sym == vars[k];
    for (int e = 0; e < d && found; e++) found = idx[e]->u.sym != idx[d]->u.sym;
    if (!found) return NULL;
  }
  if (!loads_only_at(init->u.store.value, c, idx) || expr_loads(init->u.store.value, c)) return NULL;
  return plain_reduction(red, c, idx) ? s : NULL;
}

/* Whether statement s stores into or loads t anywhere. */
static bool stmt_mentions(const loom_tp_stmt *s, const loom_tp_buffer *t) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (stmt_mentions(s->u.seq.items[i], t)) return true;
      return false;
    case LOOM_TP_STMT_FOR: return stmt_mentions(s->u.loop.body, t);
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf == t || expr_loads(s->u.store.value, t)) return true;
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (expr_loads(s->u.store.idx[d], t)) return true;
      return false;
    case LOOM_TP_STMT_LET: return expr_loads(s->u.let.value, t);
    case LOOM_TP_STMT_IF:
      return expr_loads(s->u.if_.cond, t) || stmt_mentions(s->u.if_.then_s, t) ||
             (s->u.if_.else_s && stmt_mentions(s->u.if_.else_s, t));
    default: return false;
  }
}

/* The statements of s with nested sequences spliced in (the merge puts each call's body in
 * one; their allocs then stay visible to the end, which changes nothing: names are unique). */
static loom_tp_stmt *flatten_seq(loom_arena *a, loom_tp_stmt *s) {
  size_t n = 0;
  for (size_t i = 0; i < s->u.seq.n; i++) {
    loom_tp_stmt *it = s->u.seq.items[i];
    n += it->kind == LOOM_TP_STMT_SEQ ? it->u.seq.n : 1;
  }
  if (n == s->u.seq.n) return s;
  loom_tp_stmt **items = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, n);
  if (!items) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < s->u.seq.n; i++) {
    loom_tp_stmt *it = s->u.seq.items[i];
    if (it->kind != LOOM_TP_STMT_SEQ) items[k++] = it;
    else
      for (size_t j = 0; j < it->u.seq.n; j++) items[k++] = it->u.seq.items[j];
  }
  loom_tp_stmt *r = loom_tp_seq(a, items, n);
  return r ? flatten_seq(a, r) : NULL; /* nested deeper: again, until no item is a sequence */
}

/* Whether statement s loads t anywhere (stores into t do not count). */
static bool stmt_loads(const loom_tp_stmt *s, const loom_tp_buffer *t) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (stmt_loads(s->u.seq.items[i], t)) return true;
      return false;
    case LOOM_TP_STMT_FOR: return stmt_loads(s->u.loop.body, t);
    case LOOM_TP_STMT_STORE:
      if (expr_loads(s->u.store.value, t)) return true;
      for (int d = 0; d < s->u.store.buf->ndim; d++)
        if (expr_loads(s->u.store.idx[d], t)) return true;
      return false;
    case LOOM_TP_STMT_LET: return expr_loads(s->u.let.value, t);
    case LOOM_TP_STMT_IF:
      return expr_loads(s->u.if_.cond, t) || stmt_loads(s->u.if_.then_s, t) || (s->u.if_.else_s && stmt_loads(s->u.if_.else_s, t));
    default: return false;
  }
}

/* A copy of e with every load of c replaced by (a copy of) v. */
static loom_tp_expr *replace_loads(loom_arena *a, const loom_tp_expr *e, const loom_tp_buffer *c, const loom_tp_expr *v) {
  if (e->kind == LOOM_TP_EXPR_LOAD && e->u.load.buf == c) return loom_tp_expr_copy(a, v);
  if (!expr_loads(e, c)) return loom_tp_expr_copy(a, e);
  loom_tp_expr *r = LOOM_ARENA_NEW(a, loom_tp_expr); /* this node; its operands below */
  if (!r) return NULL;
  *r = *e;
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD: /* another buffer at an index that reads c */
      if (!(r->u.load.idx = LOOM_ARENA_ARRAY(a, loom_tp_expr *, (size_t)e->u.load.buf->ndim))) return NULL;
      for (int d = 0; d < e->u.load.buf->ndim; d++)
        if (!(r->u.load.idx[d] = replace_loads(a, e->u.load.idx[d], c, v))) return NULL;
      return r;
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
        if (!(r->u.op.args[k] = replace_loads(a, e->u.op.args[k], c, v))) return NULL;
      return r;
    case LOOM_TP_EXPR_CAST: return (r->u.cast_arg = replace_loads(a, e->u.cast_arg, c, v)) ? r : NULL;
    case LOOM_TP_EXPR_SELECT:
      r->u.select.cond = replace_loads(a, e->u.select.cond, c, v);
      r->u.select.then_e = replace_loads(a, e->u.select.then_e, c, v);
      r->u.select.else_e = replace_loads(a, e->u.select.else_e, c, v);
      return r->u.select.cond && r->u.select.then_e && r->u.select.else_e ? r : NULL;
    default: return r;
  }
}

/* Moving an epilogue into a producer that only stores its result C (a rows program: the sum
 * of a depthwise convolution's taps in a register, then one store per output element). */
enum { GRID_FWD_MAX = 16, GRID_SCOPE_MAX = 32 }; /* copies out of a grid: 5 (loom_tpg_row_copy's widths) per grid variant */
typedef struct redirector {
  loom_arena *a;
  loom_sym_ctx *cx;
  const loom_tp_buffer *c, *y;  /* the intermediate, the epilogue's output */
  const loom_tp_expr *e;        /* the epilogue's value, reading c at kv.. */
  const loom_sym_expr *const *kv;
  int depth;                    /* the epilogue's loops (y's axes) */
  bool refused;                 /* a store of c at an index that is not symbolic */
  bool oom;
  int ng;                       /* staging Locals the epilogue moves into (grid_forwards) */
  const loom_tp_buffer *g[GRID_FWD_MAX];
  const loom_tp_expr *ge[GRID_FWD_MAX]; /* e at the index of the first store C[i..] = g[..]; reads c */
} redirector;

/* A copy of s in which each store `C[i..] = v` is `Y[i..] = e[k := i, C[k] := v]`; other
 * statements are shared. NULL with r->refused or r->oom. */
static loom_tp_stmt *redirect(redirector *r, loom_tp_stmt *s) {
  loom_arena *a = r->a;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ: {
      loom_tp_stmt **items = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, s->u.seq.n ? s->u.seq.n : 1);
      if (!items) return r->oom = true, NULL;
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!(items[i] = redirect(r, s->u.seq.items[i]))) return NULL;
      loom_tp_stmt *q = loom_tp_seq(a, items, s->u.seq.n);
      return q ? q : (r->oom = true, NULL);
    }
    case LOOM_TP_STMT_FOR: {
      loom_tp_stmt *b = redirect(r, s->u.loop.body);
      loom_tp_stmt *q = b ? loom_tp_for(a, s->u.loop.var, s->u.loop.extent, s->u.loop.kind, s->u.loop.reduce, b) : NULL;
      return q || !b ? q : (r->oom = true, NULL);
    }
    case LOOM_TP_STMT_IF: {
      loom_tp_stmt *t = redirect(r, s->u.if_.then_s), *e = t && s->u.if_.else_s ? redirect(r, s->u.if_.else_s) : NULL;
      if (!t || (s->u.if_.else_s && !e)) return NULL;
      loom_tp_stmt *q = loom_tp_if(a, s->u.if_.cond, t, e);
      return q ? q : (r->oom = true, NULL);
    }
    case LOOM_TP_STMT_STORE: {
      const loom_tp_expr *sv = s->u.store.value;
      for (int k = 0; k < r->ng; k++) {
        bool write = s->u.store.buf == r->g[k], read = s->u.store.buf == r->c && sv->kind == LOOM_TP_EXPR_LOAD && sv->u.load.buf == r->g[k];
        if (!write && !read) continue;
        loom_tp_expr *v = write ? replace_loads(a, r->ge[k], r->c, sv) : (loom_tp_expr *)sv;
        loom_tp_stmt *q = v ? loom_tp_store(a, write ? r->g[k] : r->y, s->u.store.idx, v) : NULL;
        return q ? q : (r->oom = true, NULL);
      }
      if (s->u.store.buf != r->c) return s;
      const loom_sym_expr *vals[16];
      for (int d = 0; d < r->c->ndim; d++) {
        if (s->u.store.idx[d]->kind != LOOM_TP_EXPR_SYM) return r->refused = true, NULL;
        vals[d] = s->u.store.idx[d]->u.sym;
      }
      loom_tp_expr *at = loom_tp_expr_copy_subst(a, r->cx, r->e, r->kv, vals, (size_t)r->depth);
      loom_tp_expr *v = at ? replace_loads(a, at, r->c, s->u.store.value) : NULL;
      loom_tp_stmt *q = v ? loom_tp_store(a, r->y, s->u.store.idx, v) : NULL;
      return q ? q : (r->oom = true, NULL);
    }
    default: return s;
  }
}

/* ---- the epilogue into a staging Local (the grid form of a rows program) ----------------- */

/* What grid_forwards gathers from the producer: its loop variables, the loops around each Local's
 * alloc, and each store `C[i..] = G[..]` of C from a Local G. */
typedef struct grid_scan {
  const loom_tp_buffer *c;
  const loom_sym_expr *stack[GRID_SCOPE_MAX]; /* the loops around the statement visited */
  int depth;
  const loom_sym_expr *all[4 * GRID_SCOPE_MAX]; /* every loop variable of the producer */
  int nall;
  struct {
    const loom_tp_buffer *g;
    const loom_sym_expr *scope[GRID_SCOPE_MAX];
    int n;
  } alloc[GRID_FWD_MAX];
  int nalloc;
  const loom_tp_stmt *use[GRID_FWD_MAX]; /* the stores C[i..] = G[..] */
  int nuse;
  bool overflow;
} grid_scan;

static void grid_scan_stmt(grid_scan *g, const loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) grid_scan_stmt(g, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (g->depth == GRID_SCOPE_MAX || g->nall == 4 * GRID_SCOPE_MAX) {
        g->overflow = true;
        return;
      }
      g->all[g->nall++] = g->stack[g->depth++] = s->u.loop.var;
      grid_scan_stmt(g, s->u.loop.body);
      g->depth--;
      return;
    case LOOM_TP_STMT_IF:
      grid_scan_stmt(g, s->u.if_.then_s);
      if (s->u.if_.else_s) grid_scan_stmt(g, s->u.if_.else_s);
      return;
    case LOOM_TP_STMT_ALLOC:
      if (s->u.alloc->scope != LOOM_TP_SCOPE_LOCAL) return;
      if (g->nalloc == GRID_FWD_MAX) {
        g->overflow = true;
        return;
      }
      g->alloc[g->nalloc].g = s->u.alloc;
      g->alloc[g->nalloc].n = g->depth;
      memcpy(g->alloc[g->nalloc++].scope, g->stack, (size_t)g->depth * sizeof *g->stack);
      return;
    case LOOM_TP_STMT_STORE:
      if (s->u.store.buf != g->c || s->u.store.value->kind != LOOM_TP_EXPR_LOAD ||
          s->u.store.value->u.load.buf->scope != LOOM_TP_SCOPE_LOCAL)
        return;
      if (g->nuse == GRID_FWD_MAX) g->overflow = true;
      else g->use[g->nuse++] = s;
      return;
    default: return;
  }
}

static bool count_load(void *ud, const loom_tp_expr *load) {
  struct {
    const loom_tp_buffer *g;
    int n;
  } *k = ud;
  k->n += load->u.load.buf == k->g;
  return false;
}

/* The number of loads of G under s (values, indices, lets, conditions). */
static int loads_of(const loom_tp_stmt *s, const loom_tp_buffer *g) {
  struct {
    const loom_tp_buffer *g;
    int n;
  } k = {g, 0};
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ: {
      int n = 0;
      for (size_t i = 0; i < s->u.seq.n; i++) n += loads_of(s->u.seq.items[i], g);
      return n;
    }
    case LOOM_TP_STMT_FOR: return loads_of(s->u.loop.body, g);
    case LOOM_TP_STMT_IF:
      loom_tp_expr_any_load(s->u.if_.cond, count_load, &k);
      return k.n + loads_of(s->u.if_.then_s, g) + (s->u.if_.else_s ? loads_of(s->u.if_.else_s, g) : 0);
    case LOOM_TP_STMT_LET: loom_tp_expr_any_load(s->u.let.value, count_load, &k); return k.n;
    case LOOM_TP_STMT_STORE:
      loom_tp_expr_any_load(s->u.store.value, count_load, &k);
      for (int d = 0; d < s->u.store.buf->ndim; d++) loom_tp_expr_any_load(s->u.store.idx[d], count_load, &k);
      return k.n;
    case LOOM_TP_STMT_PREFETCH: return 1; /* a hint naming it: keep G as it is */
    default: return 0;
  }
}

/* The grid form of a rows program sums a plane's outputs on the grid of its padded input into a
 * Local G (vectors of 8 or 32 positions, junk positions between the rows), then copies the valid
 * ones out, a row at a time: `C[n, c, j, u] = G[j*h1 + u]` (tensorprog/gen_conv.c, pool_grid).
 * A 7 x 7 row is too short for vectors, so an epilogue taken at that copy (EfficientNet's x *
 * sigmoid(x)) ran element by element. When e does not depend on the copy's own loops (only on the
 * loops around G's alloc: the plane q, the signature; it reads C only at k), it is computed where G
 * is written, on whole vectors (junk positions too, which are never read), and the copy stays a copy:
 *     G[..] = v      ->  G[..] = e[k := i, C[k] := v]
 *     C[i..] = G[..] ->  Y[i..] = G[..]
 * G must be read by such stores only (one per chunk width of the copy and its scalar tail), e
 * the same at each (it does not depend on their loops), and have Y's dtype. Fills r->g / r->ge. */
static loom_status grid_forwards(redirector *r, const loom_tp_stmt *mm) {
  grid_scan g = {.c = r->c};
  grid_scan_stmt(&g, mm);
  if (g.overflow) return LOOM_OK;
  for (int u = 0; u < g.nuse; u++) {
    const loom_tp_stmt *st = g.use[u];
    const loom_tp_buffer *gb = st->u.store.value->u.load.buf;
    int al = -1;
    for (int k = 0; k < g.nalloc; k++)
      if (g.alloc[k].g == gb) al = k;
    int copies = 0, seen = 0; /* G read by its copies out only (one per chunk width of loom_tpg_row_copy) */
    for (int v = 0; v < g.nuse; v++) copies += g.use[v]->u.store.value->u.load.buf == gb;
    for (int k = 0; k < r->ng; k++) seen += r->g[k] == gb;
    if (al < 0 || seen || gb->dtype != r->y->dtype || loads_of(mm, gb) != copies) continue;
    const loom_sym_expr *vals[16];
    bool sym = true;
    for (int d = 0; d < r->c->ndim; d++) {
      sym = sym && st->u.store.idx[d]->kind == LOOM_TP_EXPR_SYM;
      if (sym) vals[d] = st->u.store.idx[d]->u.sym;
    }
    if (!sym) continue;
    loom_tp_expr *at = loom_tp_expr_copy_subst(r->a, r->cx, r->e, r->kv, vals, (size_t)r->depth);
    loom_tp_expr *probe = at ? replace_loads(r->a, at, r->c, loom_tp_const_f(r->a, r->c->dtype, 0)) : NULL;
    if (!probe) return LOOM_OOM();
    bool inside = true; /* e mentions no loop but those around G's alloc */
    for (int k = 0; k < g.nall && inside; k++) {
      bool around = false;
      for (int j = 0; j < g.alloc[al].n; j++) around = around || g.alloc[al].scope[j] == g.all[k];
      inside = around || !loom_tp_expr_uses_var(probe, g.all[k]);
    }
    if (!inside) continue;
    r->g[r->ng] = gb;
    r->ge[r->ng++] = at;
  }
  return LOOM_OK;
}

loom_status loom_tp_fuse_epilogue(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, bool *out_done) {
  *out_done = false;
  loom_tp_stmt *top = unwrap(f->body);
  if (!top || top->kind != LOOM_TP_STMT_SEQ) return LOOM_OK;
  if (!(top = flatten_seq(a, top))) return LOOM_OOM();
  if (top->u.seq.n < 3) return LOOM_OK;
  size_t n = top->u.seq.n;
  /* the epilogue, last: for k.. { Y[k..] = e }, Y a parameter of C's dims */
  const loom_sym_expr *kv[16];
  int depth = 0;
  loom_tp_stmt *epi = unwrap(top->u.seq.items[n - 1]);
  while (epi && epi->kind == LOOM_TP_STMT_FOR && !epi->u.loop.reduce && depth < 16) {
    kv[depth++] = epi->u.loop.var;
    epi = unwrap(epi->u.loop.body);
  }
  if (!epi || epi->kind != LOOM_TP_STMT_STORE) return LOOM_OK;
  /* C: the one Local the epilogue reads; the matmul: the one statement that writes it */
  const loom_tp_buffer *c = NULL;
  size_t ci = n, mi = n;
  for (size_t i = 0; i + 1 < n; i++) {
    loom_tp_stmt *it = top->u.seq.items[i];
    if (it->kind != LOOM_TP_STMT_ALLOC || it->u.alloc->scope != LOOM_TP_SCOPE_LOCAL || !expr_loads(epi->u.store.value, it->u.alloc))
      continue;
    if (c) return LOOM_OK;
    c = it->u.alloc, ci = i;
  }
  if (!c || c->ndim > 16) return LOOM_OK;
  for (size_t i = 0; i + 1 < n; i++) {
    if (i == ci || !stmt_mentions(top->u.seq.items[i], c)) continue;
    if (mi != n) return LOOM_OK;
    mi = i;
  }
  if (mi == n || mi < ci) return LOOM_OK;
  loom_tp_stmt *mm = top->u.seq.items[mi], *body = matmul_body(mm, c);
  if (!body && stmt_loads(mm, c)) return LOOM_OK; /* neither a matmul nor a producer that only stores C */
  const loom_tp_buffer *y = epi->u.store.buf;
  if (y->scope != LOOM_TP_SCOPE_GLOBAL || y->ndim != c->ndim || depth != y->ndim) return LOOM_OK;
  for (int d = 0; d < y->ndim; d++) {
    const loom_tp_expr *x = epi->u.store.idx[d];
    if (x->kind != LOOM_TP_EXPR_SYM || x->u.sym != kv[d]) return LOOM_OK;
    if (loom_sym_prove_eq(cx, y->dims[d], c->dims[d]) != LOOM_SYM_TRUE) return LOOM_OK;
  }
  if (!loads_only_at(epi->u.store.value, c, epi->u.store.idx) || expr_loads(epi->u.store.value, y)) return LOOM_OK;
  for (size_t i = 0; i + 1 < n; i++)
    if (i != mi && stmt_mentions(top->u.seq.items[i], y)) return LOOM_OK;
  if (!body) { /* the store form: every store of C becomes a store of Y */
    if (stmt_mentions(mm, y)) return LOOM_OK;
    redirector r = {a, cx, c, y, epi->u.store.value, kv, depth, false, false, 0, {0}, {0}};
    LOOM_PROPAGATE(grid_forwards(&r, mm));
    loom_tp_stmt *nest = redirect(&r, mm);
    if (r.oom || (!nest && !r.refused)) return LOOM_OOM();
    if (r.refused) return LOOM_OK;
    loom_tp_stmt **out = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, n);
    if (!out) return LOOM_OOM();
    size_t k = 0;
    for (size_t i = 0; i + 1 < n; i++)
      if (i != ci) out[k++] = i == mi ? nest : top->u.seq.items[i];
    if (k == 1) f->body = out[0];
    else if (!(f->body = loom_tp_seq(a, out, k))) return LOOM_OOM();
    *out_done = true;
    return LOOM_OK;
  }
  /* e with k := the matmul's indices, appended to the matmul's output loop */
  loom_tp_expr *const *idx = body->u.seq.items[0]->u.store.idx;
  const loom_sym_expr *vals[16];
  for (int d = 0; d < y->ndim; d++) vals[d] = idx[d]->u.sym;
  loom_tp_expr *value = loom_tp_expr_copy_subst(a, cx, epi->u.store.value, kv, vals, (size_t)depth);
  bool same = y->dtype == c->dtype; /* then C := Y; else C stays a Local and the epilogue stores Y */
  loom_tp_stmt *store = value ? loom_tp_store(a, same ? c : y, (loom_tp_expr **)idx, value) : NULL;
  loom_tp_stmt **items = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, 3);
  if (!store || !items) return LOOM_OOM();
  items[0] = body->u.seq.items[0];
  items[1] = body->u.seq.items[1];
  items[2] = store;
  loom_tp_stmt **old_items = body->u.seq.items;
  size_t old_n = body->u.seq.n;
  body->u.seq.items = items;
  body->u.seq.n = 3;
  const loom_tp_buffer *from = c, *to = y;
  loom_tp_stmt *nest = loom_tp_stmt_copy_remap(a, cx, mm, NULL, NULL, 0, &from, &to, same ? 1 : 0);
  body->u.seq.items = old_items; /* the original stays as it was */
  body->u.seq.n = old_n;
  loom_tp_stmt **out = LOOM_ARENA_ARRAY(a, loom_tp_stmt *, n);
  if (!nest || !out) return LOOM_OOM();
  size_t k = 0;
  for (size_t i = 0; i + 1 < n; i++) {
    if (i == ci && same) continue;
    out[k++] = i == mi ? nest : top->u.seq.items[i];
  }
  if (k == 1) f->body = out[0];
  else if (!(f->body = loom_tp_seq(a, out, k))) return LOOM_OOM();
  *out_done = true;
  return LOOM_OK;
}

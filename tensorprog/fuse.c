/* fuse.c — merging a fused group of calls into one program, and inlining the
 * intermediates that then disappear (see tp_fuse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
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
    const loom_tp_buffer *bf[64], *bt[64];
    size_t nb = 0;
    for (size_t i = 0; i < p->nparams && nb < 64; i++) {
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
    case LOOM_TP_STMT_ALLOC:
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
    case LOOM_TP_STMT_ALLOC:
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

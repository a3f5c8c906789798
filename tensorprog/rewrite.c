/* rewrite.c — copying statements with symbolic substitution.
 *
 * The one mechanism every schedule primitive and the fusion merge use: a deep
 * copy of a statement in which given symbolic variables are replaced by
 * expressions (in indices, extents and alloc shapes). Loop variables of copied
 * loops are renamed to fresh variables so a statement can be copied twice
 * (split tails) without two loops binding one variable; LET and ALLOC nodes are
 * copied too, and references to them inside the copy are redirected. Callers may
 * also redirect buffers from the start (a program's params onto a fused group's). */
#include <string.h>

#include "base/vec.h"
#include "tensorprog/tp_rewrite.h"

typedef struct pair {
  const void *from;
  const void *to;
} pair;

typedef struct copier {
  loom_arena *a;
  loom_sym_ctx *cx;
  LOOM_VEC(const loom_sym_expr *) vars;   /* substitution: vars[i] -> vals[i] */
  LOOM_VEC(const loom_sym_expr *) vals;
  LOOM_VEC(pair) remap;                   /* old let/buffer -> new */
  bool simplify;                          /* also simplify every symbolic expression under the facts */
  bool failed;
} copier;

static const void *remapped(const copier *c, const void *p) {
  for (size_t i = c->remap.len; i-- > 0;)
    if (c->remap.data[i].from == p) return c->remap.data[i].to;
  return p;
}

static const loom_sym_expr *subst(copier *c, const loom_sym_expr *e) {
  if (c->failed) return NULL;
  const loom_sym_expr *r = c->vars.len ? loom_sym_subst(c->cx, e, c->vars.data, c->vals.data, c->vars.len) : e;
  if (r && c->simplify) r = loom_sym_simplify(c->cx, r);
  if (!r) c->failed = true;
  return r;
}

static loom_tp_expr *copy_expr(copier *c, const loom_tp_expr *e);

static loom_tp_expr **copy_idx(copier *c, loom_tp_expr *const *idx, int n) {
  loom_tp_expr **out = LOOM_ARENA_ARRAY(c->a, loom_tp_expr *, n ? (size_t)n : 1);
  if (!out) {
    c->failed = true;
    return NULL;
  }
  for (int d = 0; d < n; d++) out[d] = copy_expr(c, idx[d]);
  return out;
}

static loom_tp_expr *copy_expr(copier *c, const loom_tp_expr *e) {
  if (c->failed) return NULL;
  loom_tp_expr *r = NULL;
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST:
      r = LOOM_ARENA_NEW(c->a, loom_tp_expr);
      if (r) *r = *e;
      break;
    case LOOM_TP_EXPR_SYM:
      r = loom_tp_sym(c->a, subst(c, e->u.sym));
      break;
    case LOOM_TP_EXPR_LOAD: {
      const loom_tp_buffer *b = remapped(c, e->u.load.buf);
      loom_tp_expr **idx = copy_idx(c, e->u.load.idx, e->u.load.buf->ndim);
      r = idx ? loom_tp_load(c->a, b, idx) : NULL;
      break;
    }
    case LOOM_TP_EXPR_LETREF:
      r = loom_tp_letref(c->a, remapped(c, e->u.let));
      break;
    case LOOM_TP_EXPR_OP: {
      loom_tp_expr *args[3] = {NULL, NULL, NULL};
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++) args[k] = copy_expr(c, e->u.op.args[k]);
      r = LOOM_ARENA_NEW(c->a, loom_tp_expr);
      if (r) {
        *r = *e;
        memcpy(r->u.op.args, args, sizeof args);
      }
      break;
    }
    case LOOM_TP_EXPR_CAST:
      r = loom_tp_cast(c->a, e->dtype, copy_expr(c, e->u.cast_arg));
      break;
    case LOOM_TP_EXPR_SELECT:
      r = loom_tp_select(c->a, copy_expr(c, e->u.select.cond), copy_expr(c, e->u.select.then_e),
                         copy_expr(c, e->u.select.else_e));
      break;
  }
  if (!r) c->failed = true;
  return r;
}

static bool push_subst(copier *c, const loom_sym_expr *var, const loom_sym_expr *val) {
  if (!LOOM_VEC_PUSH(NULL, &c->vars, var) || !LOOM_VEC_PUSH(NULL, &c->vals, val)) {
    c->failed = true;
    return false;
  }
  return true;
}

static loom_tp_stmt *copy_stmt(copier *c, const loom_tp_stmt *s) {
  if (c->failed) return NULL;
  loom_tp_stmt *r = NULL;
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ: {
      size_t remap_mark = c->remap.len;
      loom_tp_stmt **items = LOOM_ARENA_ARRAY(c->a, loom_tp_stmt *, s->u.seq.n ? s->u.seq.n : 1);
      if (!items) break;
      for (size_t i = 0; i < s->u.seq.n; i++) items[i] = copy_stmt(c, s->u.seq.items[i]);
      c->remap.len = remap_mark;
      r = c->failed ? NULL : loom_tp_seq(c->a, items, s->u.seq.n);
      break;
    }
    case LOOM_TP_STMT_FOR: {
      const loom_sym_expr *extent = subst(c, s->u.loop.extent);
      const loom_sym_expr *var = loom_sym_var_new(c->cx, loom_sym_var_name(s->u.loop.var), LOOM_SYM_VAR_SHAPE);
      if (!var || !push_subst(c, s->u.loop.var, var)) {
        c->failed = true;
        break;
      }
      loom_tp_stmt *body = copy_stmt(c, s->u.loop.body);
      c->vars.len--;
      c->vals.len--;
      r = loom_tp_for(c->a, var, extent, s->u.loop.kind, s->u.loop.reduce, body);
      break;
    }
    case LOOM_TP_STMT_STORE: {
      const loom_tp_buffer *b = remapped(c, s->u.store.buf);
      loom_tp_expr **idx = copy_idx(c, s->u.store.idx, s->u.store.buf->ndim);
      r = idx ? loom_tp_store(c->a, b, idx, copy_expr(c, s->u.store.value)) : NULL;
      break;
    }
    case LOOM_TP_STMT_LET:
      r = loom_tp_let(c->a, s->u.let.name, copy_expr(c, s->u.let.value));
      if (r) {
        pair p = {s, r};
        if (!LOOM_VEC_PUSH(NULL, &c->remap, p)) c->failed = true;
      }
      break;
    case LOOM_TP_STMT_IF:
      r = loom_tp_if(c->a, copy_expr(c, s->u.if_.cond), copy_stmt(c, s->u.if_.then_s),
                     s->u.if_.else_s ? copy_stmt(c, s->u.if_.else_s) : NULL);
      break;
    case LOOM_TP_STMT_ALLOC: {
      const loom_tp_buffer *old = s->u.alloc;
      const loom_sym_expr *dims[16];
      for (int d = 0; d < old->ndim && d < 16; d++) dims[d] = subst(c, old->dims[d]);
      loom_tp_buffer *nb = c->failed ? NULL : loom_tp_buffer_new(c->a, old->name, old->dtype, old->ndim, dims, old->scope);
      if (nb) nb->uninit = old->uninit;
      r = loom_tp_alloc_stmt(c->a, nb);
      if (r) {
        pair p = {old, nb};
        if (!LOOM_VEC_PUSH(NULL, &c->remap, p)) c->failed = true;
      }
      break;
    }
    case LOOM_TP_STMT_BARRIER:
      r = loom_tp_barrier(c->a);
      break;
    case LOOM_TP_STMT_PREFETCH: {
      loom_tp_expr **idx = copy_idx(c, s->u.prefetch.idx, s->u.prefetch.buf->ndim);
      r = idx ? loom_tp_prefetch(c->a, remapped(c, s->u.prefetch.buf), idx, s->u.prefetch.l2) : NULL;
      break;
    }
  }
  if (!r) c->failed = true;
  return r;
}

loom_tp_stmt *loom_tp_stmt_copy_remap(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals, size_t n,
                                      const loom_tp_buffer *const *bufs_from, const loom_tp_buffer *const *bufs_to,
                                      size_t nbufs) {
  copier c = {.a = a, .cx = cx};
  for (size_t i = 0; i < n; i++) push_subst(&c, vars[i], vals[i]);
  for (size_t i = 0; i < nbufs && !c.failed; i++) {
    pair p = {bufs_from[i], bufs_to[i]};
    if (!LOOM_VEC_PUSH(NULL, &c.remap, p)) c.failed = true;
  }
  loom_tp_stmt *r = c.failed ? NULL : copy_stmt(&c, s);
  LOOM_VEC_FREE(NULL, &c.vars);
  LOOM_VEC_FREE(NULL, &c.vals);
  LOOM_VEC_FREE(NULL, &c.remap);
  return c.failed ? NULL : r;
}

loom_tp_stmt *loom_tp_stmt_copy_subst(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals,
                                      size_t n) {
  return loom_tp_stmt_copy_remap(a, cx, s, vars, vals, n, NULL, NULL, 0);
}

loom_tp_expr *loom_tp_expr_copy_subst(loom_arena *a, loom_sym_ctx *cx, const loom_tp_expr *e,
                                      const loom_sym_expr *const *vars, const loom_sym_expr *const *vals,
                                      size_t n) {
  copier c = {.a = a, .cx = cx};
  for (size_t i = 0; i < n; i++) push_subst(&c, vars[i], vals[i]);
  loom_tp_expr *r = c.failed ? NULL : copy_expr(&c, e);
  LOOM_VEC_FREE(NULL, &c.vars);
  LOOM_VEC_FREE(NULL, &c.vals);
  LOOM_VEC_FREE(NULL, &c.remap);
  return c.failed ? NULL : r;
}

loom_tp_stmt *loom_tp_stmt_copy_simplified(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *s) {
  copier c = {.a = a, .cx = cx, .simplify = true};
  loom_tp_stmt *r = copy_stmt(&c, s);
  LOOM_VEC_FREE(NULL, &c.vars);
  LOOM_VEC_FREE(NULL, &c.vals);
  LOOM_VEC_FREE(NULL, &c.remap);
  return c.failed ? NULL : r;
}

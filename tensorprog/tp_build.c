/* tp_build.c — the program builder (tp_build.h): scope, open blocks and parameters of a program
 * being built as IR, in the order the parser would build the same program from its text. */
#include <stdlib.h>
#include <string.h>

#include "tensorprog/tp_build.h"

enum { FRAME_BODY, FRAME_FOR, FRAME_THEN, FRAME_ELSE };

static bool failed(const loom_tpb *b) { return b->status != LOOM_OK; }

static void fail_oom(loom_tpb *b) {
  if (!failed(b)) b->status = LOOM_OOM();
}

static void push_name(loom_tpb *b, const char *name, loom_tp_binding_kind kind, const void *ptr) {
  loom_tp_binding e = {name, kind, ptr};
  if (!LOOM_VEC_PUSH(NULL, &b->scope, e)) fail_oom(b);
}

static const loom_tp_binding *lookup(const loom_tpb *b, const char *name) {
  for (size_t i = b->scope.len; i-- > 0;)
    if (!strcmp(b->scope.data[i].name, name)) return &b->scope.data[i];
  return NULL;
}

static void push_frame(loom_tpb *b, loom_tpb_frame f) {
  f.scope_mark = b->scope.len;
  if (!LOOM_VEC_PUSH(NULL, &b->frames, f)) fail_oom(b);
}

void loom_tpb_init(loom_tpb *b, loom_arena *a, loom_sym_ctx *cx, const char *name) {
  *b = (loom_tpb){.a = a, .cx = cx};
  b->name = loom_arena_strdup(a, name);
  if (!b->name) fail_oom(b);
  push_frame(b, (loom_tpb_frame){.kind = FRAME_BODY});
}

const loom_sym_expr *loom_tpb_shape_sym(loom_tpb *b, const char *name) {
  if (failed(b)) return NULL;
  const loom_tp_binding *e = lookup(b, name);
  if (e && e->kind == LOOM_TP_BIND_SYM) return e->ptr;
  const char *nm = loom_arena_strdup(b->a, name);
  const loom_sym_expr *v = nm ? loom_sym_var_new(b->cx, nm, LOOM_SYM_VAR_SHAPE) : NULL;
  if (!v || !LOOM_VEC_PUSH(NULL, &b->syms, v)) {
    fail_oom(b);
    return NULL;
  }
  push_name(b, nm, LOOM_TP_BIND_SYM, v);
  return v;
}

const loom_sym_expr *loom_tpb_dim(loom_tpb *b, const char *text) {
  if (failed(b)) return NULL;
  if (text[0] >= '0' && text[0] <= '9') {
    const loom_sym_expr *c = loom_sym_const(b->cx, strtoll(text, NULL, 10));
    if (!c) fail_oom(b);
    return c;
  }
  return loom_tpb_shape_sym(b, text);
}

static loom_tp_buffer *add_buffer(loom_tpb *b, const char *name, loom_dtype t, int ndim, const loom_sym_expr *const *dims) {
  if (failed(b)) return NULL;
  loom_tp_buffer *buf = loom_tp_buffer_new(b->a, name, t, ndim, dims, LOOM_TP_SCOPE_GLOBAL);
  loom_tp_param prm = {.is_buffer = true, .buf = buf};
  if (!buf || !LOOM_VEC_PUSH(NULL, &b->params, prm)) {
    fail_oom(b);
    return NULL;
  }
  buf->param_index = (int)b->params.len - 1;
  push_name(b, buf->name, LOOM_TP_BIND_BUF, buf);
  return buf;
}

loom_tp_buffer *loom_tpb_buffer(loom_tpb *b, const char *name, loom_dtype t, int ndim, const loom_sym_expr *const *dims) {
  return add_buffer(b, name, t, ndim, dims);
}

loom_tp_buffer *loom_tpb_buffer_dims(loom_tpb *b, const char *name, loom_dtype t, int ndim, const char *const *dims) {
  const loom_sym_expr *d[16];
  if (ndim > 16) {
    if (!failed(b)) b->status = LOOM_ERROR(INTERNAL, "buffer %s of rank %d: at most 16 dimensions", name, ndim);
    return NULL;
  }
  for (int k = 0; k < ndim; k++) d[k] = loom_tpb_dim(b, dims[k]);
  return add_buffer(b, name, t, ndim, d);
}

const loom_sym_expr *loom_tpb_scalar(loom_tpb *b, const char *name) {
  if (failed(b)) return NULL;
  loom_tp_param prm = {.is_buffer = false};
  prm.scalar.name = loom_arena_strdup(b->a, name);
  prm.scalar.var = prm.scalar.name ? loom_sym_var_new(b->cx, prm.scalar.name, LOOM_SYM_VAR_INT) : NULL;
  if (!prm.scalar.var || !LOOM_VEC_PUSH(NULL, &b->params, prm) || !LOOM_VEC_PUSH(NULL, &b->syms, prm.scalar.var)) {
    fail_oom(b);
    return NULL;
  }
  push_name(b, prm.scalar.name, LOOM_TP_BIND_SYM, prm.scalar.var);
  return prm.scalar.var;
}

const loom_sym_expr *loom_tpb_sym(loom_tpb *b, const char *name) {
  const loom_tp_binding *e = lookup(b, name);
  return e && e->kind == LOOM_TP_BIND_SYM ? e->ptr : NULL;
}

const loom_sym_expr *loom_tpb_for(loom_tpb *b, const char *var, const loom_sym_expr *extent, loom_tp_loop_kind kind,
                                  bool reduce) {
  if (failed(b)) return NULL;
  if (!extent) {
    fail_oom(b);
    return NULL;
  }
  const char *nm = loom_arena_strdup(b->a, var);
  const loom_sym_expr *v = nm ? loom_sym_var_new(b->cx, nm, LOOM_SYM_VAR_SHAPE) : NULL;
  if (!v) {
    fail_oom(b);
    return NULL;
  }
  push_frame(b, (loom_tpb_frame){.kind = FRAME_FOR, .var = v, .extent = extent, .loop_kind = kind, .reduce = reduce});
  push_name(b, nm, LOOM_TP_BIND_SYM, v);
  return v;
}

void loom_tpb_if(loom_tpb *b, loom_tp_expr *cond) {
  if (failed(b)) return;
  if (!cond) return fail_oom(b);
  push_frame(b, (loom_tpb_frame){.kind = FRAME_THEN, .cond = cond});
}

/* The innermost block as one seq statement; its names leave scope. */
static loom_tp_stmt *pop_block(loom_tpb *b, loom_tpb_frame *f) {
  loom_tp_stmt *seq = loom_tp_seq(b->a, f->items.data, f->items.len);
  LOOM_VEC_FREE(NULL, &f->items);
  b->scope.len = f->scope_mark;
  if (!seq) fail_oom(b);
  return seq;
}

void loom_tpb_else(loom_tpb *b) {
  if (failed(b)) return;
  loom_tpb_frame *f = &LOOM_VEC_LAST(&b->frames);
  if (f->kind != FRAME_THEN) {
    b->status = LOOM_ERROR(INTERNAL, "program @%s: else without an open if", b->name);
    return;
  }
  f->then_s = pop_block(b, f);
  f->kind = FRAME_ELSE;
  f->scope_mark = b->scope.len;
}

static void append(loom_tpb *b, loom_tp_stmt *s) {
  if (failed(b)) return;
  if (!s || !LOOM_VEC_PUSH(NULL, &LOOM_VEC_LAST(&b->frames).items, s)) fail_oom(b);
}

void loom_tpb_end(loom_tpb *b) {
  if (failed(b)) return;
  if (b->frames.len < 2) {
    b->status = LOOM_ERROR(INTERNAL, "program @%s: end without an open loop or if", b->name);
    return;
  }
  loom_tpb_frame f = LOOM_VEC_POP(&b->frames);
  loom_tp_stmt *blk = pop_block(b, &f), *s = NULL;
  if (failed(b)) return;
  if (f.kind == FRAME_FOR) s = loom_tp_for(b->a, f.var, f.extent, f.loop_kind, f.reduce, blk);
  else if (f.kind == FRAME_THEN) s = loom_tp_if(b->a, f.cond, blk, NULL);
  else s = loom_tp_if(b->a, f.cond, f.then_s, blk);
  append(b, s);
}

void loom_tpb_end_n(loom_tpb *b, int n) {
  for (int k = 0; k < n; k++) loom_tpb_end(b);
}

static loom_tp_expr **copy_idx(loom_tpb *b, int n, loom_tp_expr *const *idx) {
  loom_tp_expr **c = LOOM_ARENA_ARRAY(b->a, loom_tp_expr *, n ? (size_t)n : 1);
  if (!c) return NULL;
  for (int k = 0; k < n; k++)
    if (!(c[k] = loom_tp_expr_copy(b->a, idx[k]))) return NULL;
  return c;
}

void loom_tpb_store(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *const *idx, loom_tp_expr *value) {
  if (failed(b)) return;
  loom_tp_expr **c = buf ? copy_idx(b, buf->ndim, idx) : NULL;
  append(b, c && value ? loom_tp_store(b->a, buf, c, value) : NULL);
}

loom_tp_expr *loom_tpb_let(loom_tpb *b, const char *name, loom_tp_expr *value) {
  if (failed(b)) return NULL;
  const char *nm = loom_arena_strdup(b->a, name);
  loom_tp_stmt *s = nm && value ? loom_tp_let(b->a, nm, value) : NULL;
  append(b, s);
  if (failed(b)) return NULL;
  push_name(b, nm, LOOM_TP_BIND_LET, s);
  loom_tp_expr *r = loom_tp_letref(b->a, s);
  if (!r) fail_oom(b);
  return r;
}

loom_tp_buffer *loom_tpb_alloc(loom_tpb *b, const char *name, loom_dtype t, int ndim, const loom_sym_expr *const *dims,
                               loom_tp_scope scope) {
  if (failed(b)) return NULL;
  loom_tp_buffer *buf = loom_tp_buffer_new(b->a, name, t, ndim, dims, scope);
  append(b, buf ? loom_tp_alloc_stmt(b->a, buf) : NULL);
  if (failed(b)) return NULL;
  push_name(b, buf->name, LOOM_TP_BIND_BUF, buf);
  return buf;
}

void loom_tpb_emit(loom_tpb *b, loom_tp_stmt *s) { append(b, s); }

loom_tp_expr *loom_tpb_load(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *const *idx) {
  if (failed(b)) return NULL;
  loom_tp_expr **c = buf ? copy_idx(b, buf->ndim, idx) : NULL;
  loom_tp_expr *r = c ? loom_tp_load(b->a, buf, c) : NULL;
  if (!r) fail_oom(b);
  return r;
}

loom_tp_expr *loom_tpb_idx(loom_tpb *b, const loom_sym_expr *e) {
  if (failed(b)) return NULL;
  loom_tp_expr *r = e ? loom_tp_sym(b->a, e) : NULL;
  if (!r) fail_oom(b);
  return r;
}

loom_tp_expr *loom_tpb_cidx(loom_tpb *b, int64_t v) { return loom_tpb_idx(b, loom_sym_const(b->cx, v)); }

loom_tp_expr *loom_tpb_at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k) {
  loom_tp_expr *i = loom_tpb_cidx(b, k);
  return loom_tpb_load(b, buf, &i);
}

void loom_tpb_store_at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k, loom_tp_expr *value) {
  loom_tp_expr *i = loom_tpb_cidx(b, k);
  loom_tpb_store(b, buf, &i, value);
}

const loom_tp_buffer *loom_tpb_local(loom_tpb *b, const char *name, loom_dtype t, int64_t n) {
  const loom_sym_expr *d = loom_sym_const(b->cx, n);
  return loom_tpb_alloc(b, name, t, 1, &d, LOOM_TP_SCOPE_LOCAL);
}

loom_tp_expr *loom_tpb_dup(loom_tpb *b, const loom_tp_expr *e) {
  if (failed(b)) return NULL;
  loom_tp_expr *r = loom_tp_expr_copy(b->a, e);
  if (!r) fail_oom(b);
  return r;
}

loom_tp_expr *loom_tpb_cmp(loom_tpb *b, loom_tp_op op, const loom_sym_expr *lhs, const loom_sym_expr *rhs) {
  return loom_tp_op2(b->a, op, loom_tpb_idx(b, lhs), loom_tpb_idx(b, rhs));
}

loom_tp_expr *loom_tpb_lit_i(loom_tpb *b, loom_dtype t, int64_t v) {
  if (failed(b)) return NULL;
  loom_tp_expr *r = t == LOOM_DTYPE_I64 ? loom_tp_sym(b->a, loom_sym_const(b->cx, v))
                    : loom_dtype_is_float(t) ? loom_tp_const_f(b->a, t, (double)v)
                                             : loom_tp_const_i(b->a, t, v);
  if (!r) fail_oom(b);
  return r;
}

loom_tp_expr *loom_tpb_parse(loom_tpb *b, const char *text, const char *const *names, loom_tp_expr *const *vals, int n,
                             const loom_dtype *store_type) {
  if (failed(b)) return NULL;
  size_t base = b->scope.len;
  for (int k = 0; k < n; k++) {
    if (!vals[k]) {
      fail_oom(b);
      break;
    }
    push_name(b, names[k], LOOM_TP_BIND_EXPR, vals[k]);
  }
  loom_tp_expr *r = NULL;
  if (!failed(b)) b->status = loom_tp_parse_expr(b->a, b->cx, text, b->scope.data, b->scope.len, store_type, &r);
  b->scope.len = base;
  return failed(b) ? NULL : r;
}

static void free_builder(loom_tpb *b) {
  for (size_t i = 0; i < b->frames.len; i++) LOOM_VEC_FREE(NULL, &b->frames.data[i].items);
  LOOM_VEC_FREE(NULL, &b->frames);
  LOOM_VEC_FREE(NULL, &b->scope);
  LOOM_VEC_FREE(NULL, &b->syms);
  LOOM_VEC_FREE(NULL, &b->params);
}

loom_status loom_tpb_finish(loom_tpb *b, loom_tp_func **result) {
  while (!failed(b) && b->frames.len > 1) loom_tpb_end(b);
  loom_tp_func *f = NULL;
  if (!failed(b)) {
    f = LOOM_ARENA_NEW(b->a, loom_tp_func);
    loom_tp_param *params = LOOM_ARENA_ARRAY(b->a, loom_tp_param, b->params.len ? b->params.len : 1);
    const loom_sym_expr **syms = LOOM_ARENA_ARRAY(b->a, const loom_sym_expr *, b->syms.len ? b->syms.len : 1);
    loom_tp_stmt *body = pop_block(b, &b->frames.data[0]);
    if (!f || !params || !syms || !body) {
      fail_oom(b);
    } else {
      if (b->params.len) memcpy(params, b->params.data, b->params.len * sizeof *params);
      if (b->syms.len) memcpy(syms, b->syms.data, b->syms.len * sizeof *syms);
      *f = (loom_tp_func){.name = b->name, .nparams = b->params.len, .params = params, .body = body,
                          .nsyms = b->syms.len, .syms = syms};
    }
  }
  loom_status s = b->status;
  free_builder(b);
  if (s) return s;
  loom_status v = loom_tp_verify(b->cx, f);
  if (v) {
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_tp_print_func(f, &sb);
    loom_status r = LOOM_ERROR(INTERNAL, "generated program does not verify: %s\n%s", loom_status_message(v),
                               sb.oom ? "" : loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    loom_status_free(v);
    return r;
  }
  *result = f;
  return LOOM_OK;
}

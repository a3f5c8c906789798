/* module.c — the module (arena, interner, symbolic context), expression constructors,
 * call inference (dispatch to the op registry plus the helpers ops share), and the
 * C builder that keeps functions in A-normal form. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/tp_bridge.h"

/* ---- module ------------------------------------------------------------------ */

loom_status loom_graph_module_create(loom_allocator *alloc, loom_graph_module **out) {
  *out = NULL;
  loom_graph_module *m = loom_alloc_zero(alloc, sizeof *m);
  if (!m) return LOOM_OOM();
  m->alloc = alloc;
  loom_arena_init(&m->arena, alloc, 0);
  loom_interner_init(&m->names, alloc);
  loom_status st = loom_sym_ctx_create(alloc, &m->cx);
  if (st) {
    loom_interner_destroy(&m->names);
    loom_arena_destroy(&m->arena);
    loom_free(alloc, m, sizeof *m);
    return st;
  }
  *out = m;
  return LOOM_OK;
}

void loom_graph_module_destroy(loom_graph_module *m) {
  if (!m) return;
  LOOM_VEC_FREE(m->alloc, &m->funcs);
  LOOM_VEC_FREE(m->alloc, &m->tps);
  LOOM_VEC_FREE(m->alloc, &m->consts);
  LOOM_VEC_FREE(m->alloc, &m->externs);
  loom_libcall_lib_destroy(m->libcall);
  loom_sym_ctx_destroy(m->cx);
  loom_interner_destroy(&m->names);
  loom_arena_destroy(&m->arena);
  loom_free(m->alloc, m, sizeof *m);
}

loom_sym_ctx *loom_graph_module_sym(loom_graph_module *m) { return m->cx; }
loom_arena *loom_graph_module_arena(loom_graph_module *m) { return &m->arena; }
const char *loom_graph_module_intern(loom_graph_module *m, const char *s, size_t len) {
  return loom_intern(&m->names, s, len);
}

size_t loom_graph_module_num_funcs(const loom_graph_module *m) { return m->funcs.len; }
uint32_t loom_graph_module_num_var_ids(const loom_graph_module *m) { return m->next_var_id; }
loom_graph_func *loom_graph_module_func_at(const loom_graph_module *m, size_t i) { return m->funcs.data[i]; }
size_t loom_graph_module_num_tps(const loom_graph_module *m) { return m->tps.len; }
loom_tp_func *loom_graph_module_tp_at(const loom_graph_module *m, size_t i) { return m->tps.data[i]; }
size_t loom_graph_module_num_consts(const loom_graph_module *m) { return m->consts.len; }
const loom_graph_const *loom_graph_module_const_at(const loom_graph_module *m, size_t i) {
  return &m->consts.data[i];
}
size_t loom_graph_module_num_externs(const loom_graph_module *m) { return m->externs.len; }
const loom_graph_extern *loom_graph_module_extern_at(const loom_graph_module *m, size_t i) {
  return &m->externs.data[i];
}

loom_tp_func *loom_graph_module_find_tp(const loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->tps.len; i++)
    if (!strcmp(loom_graph_tp_name(m->tps.data[i]), name)) return m->tps.data[i];
  return NULL;
}

loom_graph_func *loom_graph_module_find_func(const loom_graph_module *m, const char *name) {
  for (size_t i = 0; i < m->funcs.len; i++)
    if (!strcmp(m->funcs.data[i]->name, name)) return m->funcs.data[i];
  return NULL;
}

loom_status loom_graph_module_add_func(loom_graph_module *m, loom_graph_func *f) {
  if (loom_graph_module_find_func(m, f->name))
    return LOOM_ERROR(ALREADY_EXISTS, "function @%s is defined twice", f->name);
  if (!LOOM_VEC_PUSH(m->alloc, &m->funcs, f)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_graph_module_add_tp(loom_graph_module *m, loom_tp_func *tp) {
  if (!LOOM_VEC_PUSH(m->alloc, &m->tps, tp)) return LOOM_OOM();
  return LOOM_OK;
}

loom_status loom_graph_module_add_const(loom_graph_module *m, const char *name, loom_graph_expr *c) {
  const char *n = loom_graph_module_intern(m, name, strlen(name));
  if (!n) return LOOM_OOM();
  for (size_t i = 0; i < m->consts.len; i++)
    if (m->consts.data[i].name == n) return LOOM_ERROR(ALREADY_EXISTS, "constant @%s is defined twice", name);
  c->u.cnst.name = n;
  loom_graph_const k = {n, c};
  if (!LOOM_VEC_PUSH(m->alloc, &m->consts, k)) return LOOM_OOM();
  return LOOM_OK;
}

/* ---- expressions ---------------------------------------------------------------- */

static loom_graph_expr *expr_new(loom_graph_module *m, loom_graph_expr_kind k) {
  loom_graph_expr *e = LOOM_ARENA_NEW(&m->arena, loom_graph_expr);
  if (e) e->kind = k;
  return e;
}

loom_graph_expr *loom_graph_var_new(loom_graph_module *m, const char *name, const loom_sinfo *si) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_VAR);
  if (!e) return NULL;
  e->u.var.name = loom_graph_module_intern(m, name, strlen(name));
  e->u.var.id = m->next_var_id++;
  e->sinfo = si;
  return e->u.var.name ? e : NULL;
}

loom_graph_expr *loom_graph_shape_new(loom_graph_module *m, size_t n, const loom_sym_expr *const *dims) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_SHAPE);
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (!e || !d) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!dims[i]) return NULL;
    d[i] = dims[i];
  }
  e->u.shape.n = n;
  e->u.shape.dims = d;
  e->sinfo = loom_sinfo_shape(m, (int)n, d);
  return e->sinfo ? e : NULL;
}

loom_graph_expr *loom_graph_sym_new(loom_graph_module *m, const loom_sym_expr *v) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_SYM);
  if (!e || !v) return NULL;
  e->u.sym = v;
  e->sinfo = loom_sinfo_scalar(m, LOOM_DTYPE_I64, v);
  return e->sinfo ? e : NULL;
}

loom_graph_expr *loom_graph_const_new(loom_graph_module *m, const loom_sinfo *si, const void *data,
                                      size_t nbytes) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CONST);
  if (!e || !si) return NULL;
  e->sinfo = si;
  e->u.cnst.data = loom_arena_alloc(&m->arena, nbytes ? nbytes : 1, 16);
  if (!e->u.cnst.data) return NULL;
  if (nbytes) memcpy(e->u.cnst.data, data, nbytes);
  e->u.cnst.nbytes = nbytes;
  return e;
}

loom_graph_expr *loom_graph_const_scalar(loom_graph_module *m, loom_dtype dt, double v) {
  loom_graph_tensor t = {.dtype = dt, .ndim = 0, .numel = 1};
  unsigned char buf[8] = {0};
  t.data = buf;
  loom_graph_tensor_set_f64(&t, 0, v);
  return loom_graph_const_new(m, loom_sinfo_tensor(m, dt, 0, NULL, NULL), buf, loom_dtype_size(dt));
}

static loom_graph_expr **copy_exprs(loom_graph_module *m, size_t n, loom_graph_expr *const *src) {
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, n ? n : 1);
  if (!a) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (!src[i]) return NULL;
    a[i] = src[i];
  }
  return a;
}

loom_graph_expr *loom_graph_tuple_new(loom_graph_module *m, size_t n, loom_graph_expr *const *items) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_TUPLE);
  loom_graph_expr **a = copy_exprs(m, n, items);
  if (!e || !a) return NULL;
  e->u.tuple.n = n;
  e->u.tuple.items = a;
  return e;
}

loom_graph_expr *loom_graph_tuple_get_new(loom_graph_module *m, loom_graph_expr *t, size_t index) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_TUPLE_GET);
  if (!e || !t) return NULL;
  e->u.get.tuple = t;
  e->u.get.index = index;
  return e;
}

static loom_graph_expr *call_named(loom_graph_module *m, loom_graph_callee_kind k, const char *name, size_t nargs,
                                   loom_graph_expr *const *args, const loom_sinfo *out) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CALL);
  loom_graph_expr **a = copy_exprs(m, nargs, args);
  if (!e || !a || !name) return NULL;
  e->u.call.callee = k;
  e->u.call.target = loom_graph_module_intern(m, name, strlen(name));
  e->u.call.nargs = nargs;
  e->u.call.args = a;
  e->u.call.out_sinfo = out;
  return e->u.call.target ? e : NULL;
}

loom_graph_expr *loom_graph_call_func(loom_graph_module *m, const char *name, size_t nargs,
                                      loom_graph_expr *const *args) {
  return call_named(m, LOOM_GRAPH_CALLEE_FUNC, name, nargs, args, NULL);
}

loom_graph_expr *loom_graph_call_tp(loom_graph_module *m, const char *name, size_t nargs,
                                    loom_graph_expr *const *args, const loom_sinfo *out) {
  return out ? call_named(m, LOOM_GRAPH_CALLEE_TP, name, nargs, args, out) : NULL;
}

loom_graph_expr *loom_graph_call_extern(loom_graph_module *m, const char *name, size_t nargs,
                                        loom_graph_expr *const *args, const loom_sinfo *out) {
  return out ? call_named(m, LOOM_GRAPH_CALLEE_EXTERN, name, nargs, args, out) : NULL;
}

bool loom_graph_expr_is_leaf(const loom_graph_expr *e) {
  return e->kind == LOOM_GRAPH_EXPR_VAR || e->kind == LOOM_GRAPH_EXPR_CONST ||
         e->kind == LOOM_GRAPH_EXPR_SHAPE || e->kind == LOOM_GRAPH_EXPR_SYM;
}

const loom_sym_expr **loom_graph_dims_new(loom_graph_module *m, size_t n) {
  return LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, n ? n : 1);
}

const char *loom_graph_sym_str(loom_graph_module *m, const loom_sym_expr *e) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, m->alloc);
  if (e) loom_sym_print(e, &sb);
  else loom_strbuf_puts(&sb, "?");
  const char *r = loom_arena_strdup(&m->arena, loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r ? r : "?";
}

const char *loom_graph_dims_str(loom_graph_module *m, int n, const loom_sym_expr *const *d) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, m->alloc);
  loom_strbuf_putc(&sb, '(');
  for (int i = 0; i < n; i++) {
    if (i) loom_strbuf_puts(&sb, ", ");
    if (d) loom_sym_print(d[i], &sb);
    else loom_strbuf_putc(&sb, '?');
  }
  loom_strbuf_putc(&sb, ')');
  const char *r = loom_arena_strdup(&m->arena, loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r ? r : "?";
}

const loom_sym_expr *loom_graph_dims_prod(loom_sym_ctx *cx, int n, const loom_sym_expr *const *d) {
  const loom_sym_expr *p = loom_sym_const(cx, 1);
  for (int i = 0; i < n; i++) p = loom_sym_mul(cx, p, d[i]);
  return p;
}

/* ---- attributes ------------------------------------------------------------------- */

loom_graph_attr loom_graph_attr_int(loom_graph_module *m, const char *name, int64_t v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_INT, .i = v};
}
loom_graph_attr loom_graph_attr_float(loom_graph_module *m, const char *name, double v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_FLOAT, .f = v};
}
loom_graph_attr loom_graph_attr_bool(loom_graph_module *m, const char *name, bool v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_BOOL, .i = v};
}
loom_graph_attr loom_graph_attr_str(loom_graph_module *m, const char *name, const char *v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_STR,
                           .s = loom_intern_cstr(&m->names, v)};
}
loom_graph_attr loom_graph_attr_dtype(loom_graph_module *m, const char *name, loom_dtype v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_DTYPE, .dtype = v};
}
loom_graph_attr loom_graph_attr_syms(loom_graph_module *m, const char *name, size_t n,
                                     const loom_sym_expr *const *v) {
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (d)
    for (size_t i = 0; i < n; i++) d[i] = v[i];
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_SYMS, .n = n, .syms = d};
}
loom_graph_attr loom_graph_attr_ints(loom_graph_module *m, const char *name, size_t n, const int64_t *v) {
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (d)
    for (size_t i = 0; i < n; i++) d[i] = loom_sym_const(m->cx, v[i]);
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_SYMS, .n = n, .syms = d};
}

const loom_graph_attr *loom_graph_call_attr(const loom_graph_expr *call, const char *name) {
  for (size_t i = 0; i < call->u.call.nattrs; i++)
    if (!strcmp(call->u.call.attrs[i].name, name)) return &call->u.call.attrs[i];
  return NULL;
}

/* ---- inference --------------------------------------------------------------------- */

const loom_sinfo *loom_graph_icx_arg(loom_graph_icx *ic, size_t i) {
  return ic->call->u.call.args[i]->sinfo;
}

loom_status loom_graph_icx_error(loom_graph_icx *ic, const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return LOOM_ERROR(TYPE_ERROR, "%s: %s", ic->op, buf);
}

static const char *kind_word(const loom_sinfo *s) {
  static const char *const w[] = {"an Object", "a Scalar", "a Shape", "a Tensor", "a Tuple", "a Func"};
  return w[s->kind];
}

loom_status loom_graph_icx_tensor(loom_graph_icx *ic, size_t i, bool need_dims, const loom_sinfo **out) {
  const loom_sinfo *s = loom_graph_icx_arg(ic, i);
  *out = s;
  if (s->kind != LOOM_SINFO_TENSOR)
    return loom_graph_icx_error(ic, "operand %zu must be a Tensor, got %s", i, kind_word(s));
  if (need_dims && (s->ndim == LOOM_SINFO_NDIM_UNKNOWN || !s->dims))
    return loom_graph_icx_error(ic, "operand %zu needs a known shape (use match_cast to give it one)", i);
  return LOOM_OK;
}

loom_status loom_graph_icx_guard(loom_graph_icx *ic, const loom_sym_expr *cond, const char *why) {
  if (!cond) return loom_sym_ctx_take_error(ic->cx);
  for (size_t i = 0; i < ic->guards.len; i++)
    if (ic->guards.data[i] == cond) return LOOM_OK;
  const char *w = loom_arena_strdup(&ic->m->arena, why);
  if (!w || !LOOM_VEC_PUSH(ic->m->alloc, &ic->guards, cond) || !LOOM_VEC_PUSH(ic->m->alloc, &ic->why, w))
    return LOOM_OOM();
  return LOOM_OK;
}

const loom_sym_expr *loom_graph_icx_fresh(loom_graph_icx *ic, const char *what) {
  char name[128];
  snprintf(name, sizeof name, "%s%s%s%u", ic->hint ? ic->hint : "", ic->hint ? "_" : "", what,
           ic->m->next_fresh++);
  return loom_sym_var_new(ic->cx, name, LOOM_SYM_VAR_SHAPE);
}

loom_status loom_graph_icx_axis(loom_graph_icx *ic, int64_t axis, int ndim, const char *what, int *out) {
  int64_t a = axis < 0 ? axis + ndim : axis;
  if (a < 0 || a >= ndim)
    return loom_graph_icx_error(ic, "%s %lld is out of range for rank %d", what, (long long)axis, ndim);
  *out = (int)a;
  return LOOM_OK;
}

/* Operand i as a run-time integer list (axes, a shape, k): a 0-d or 1-D i32/i64 tensor whose
 * length is static; *len is that length (1 for 0-d). */
loom_status loom_graph_icx_int_operand(loom_graph_icx *ic, size_t i, const char *what, int64_t *len) {
  const loom_sinfo *s = loom_graph_icx_arg(ic, i);
  if (s->kind != LOOM_SINFO_TENSOR)
    return loom_graph_icx_error(ic, "operand %zu (%s) must be a Tensor, got %s", i, what, kind_word(s));
  if (s->dtype != LOOM_DTYPE_I64 && s->dtype != LOOM_DTYPE_I32)
    return loom_graph_icx_error(ic, "operand %zu (%s) has dtype %s, expected i32 or i64", i, what,
                                s->dtype == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(s->dtype));
  if (s->ndim == 0) {
    *len = 1;
    return LOOM_OK;
  }
  if (s->ndim != 1 || !s->dims || !loom_sym_is_const(s->dims[0], len))
    return loom_graph_icx_error(ic, "operand %zu (%s) must be a 0-d or 1-D tensor of static length", i, what);
  return LOOM_OK;
}

loom_status loom_graph_ecx_int_operand(loom_graph_ecx *ec, const loom_graph_tensor *t, size_t i, const char *what,
                                       int64_t *buf, size_t cap, size_t *n) {
  if (t->ndim > 1 || t->numel > cap)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu (%s) has %zu values in rank %d, at most %zu in rank <= 1",
                      ec->op, i, what, t->numel, t->ndim, cap);
  for (size_t k = 0; k < t->numel; k++) buf[k] = loom_graph_tensor_get_i64(t, k);
  *n = t->numel;
  return LOOM_OK;
}

loom_status loom_graph_ecx_axes(loom_graph_ecx *ec, size_t i, const int64_t *axes, size_t n, int ndim, bool *mask) {
  for (int k = 0; k < ndim; k++) mask[k] = false;
  for (size_t k = 0; k < n; k++) {
    int64_t a = axes[k] < 0 ? axes[k] + ndim : axes[k];
    if (a < 0 || a >= ndim)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu (axes) value %lld is out of range for rank %d", ec->op, i,
                        (long long)axes[k], ndim);
    if (mask[a])
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu (axes) lists axis %lld twice (as %lld)", ec->op, i,
                        (long long)a, (long long)axes[k]);
    mask[a] = true;
  }
  return LOOM_OK;
}

loom_status loom_graph_icx_ints(loom_graph_icx *ic, const char *name, int64_t *buf, size_t cap,
                                size_t *n, bool *present) {
  const loom_graph_attr *a = loom_graph_call_attr(ic->call, name);
  *n = 0;
  *present = a != NULL;
  if (!a) return LOOM_OK;
  if (a->kind == LOOM_GRAPH_ATTR_INT) {
    buf[0] = a->i;
    *n = 1;
    return LOOM_OK;
  }
  if (a->kind != LOOM_GRAPH_ATTR_SYMS) return loom_graph_icx_error(ic, "attribute '%s' must be a list of integers", name);
  if (a->n > cap) return loom_graph_icx_error(ic, "attribute '%s' has %zu entries, at most %zu allowed", name, a->n, cap);
  for (size_t i = 0; i < a->n; i++)
    if (!loom_sym_is_const(a->syms[i], &buf[i]))
      return loom_graph_icx_error(ic, "attribute '%s' entry %zu must be a constant", name, i);
  *n = a->n;
  return LOOM_OK;
}

static bool is_one(const loom_sym_expr *e) {
  int64_t v;
  return loom_sym_is_const(e, &v) && v == 1;
}

/* NumPy broadcasting, right-aligned. Per axis: equal -> that dim; one side provably 1 ->
 * the other; provably different and neither can be 1 -> error; otherwise max(x, y) with the
 * guard x == y || x == 1 || y == 1. */
loom_status loom_graph_icx_broadcast(loom_graph_icx *ic, size_t ia, int na, const loom_sym_expr *const *a,
                                     size_t ib, int nb, const loom_sym_expr *const *b,
                                     const loom_sym_expr **out) {
  loom_sym_ctx *cx = ic->cx;
  int n = na > nb ? na : nb;
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  for (int k = 0; k < n; k++) {
    int xa = k - (n - na), xb = k - (n - nb);
    const loom_sym_expr *da = xa >= 0 ? a[xa] : NULL, *db = xb >= 0 ? b[xb] : NULL;
    if (!da || !db) {
      out[k] = da ? da : db;
      continue;
    }
    if (da == db || loom_sym_prove_eq(cx, da, db) == LOOM_SYM_TRUE) {
      out[k] = da;
      continue;
    }
    if (is_one(da) || loom_sym_prove_eq(cx, da, one) == LOOM_SYM_TRUE) {
      out[k] = db;
      continue;
    }
    if (is_one(db) || loom_sym_prove_eq(cx, db, one) == LOOM_SYM_TRUE) {
      out[k] = da;
      continue;
    }
    loom_sym_truth a1 = loom_sym_prove_eq(cx, da, one), b1 = loom_sym_prove_eq(cx, db, one);
    if (loom_sym_prove_eq(cx, da, db) == LOOM_SYM_FALSE && a1 == LOOM_SYM_FALSE && b1 == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand %zu axis %d is %s, operand %zu axis %d is %s: cannot broadcast",
                                  ia, xa, loom_graph_sym_str(ic->m, da), ib, xb, loom_graph_sym_str(ic->m, db));
    out[k] = loom_sym_max(cx, da, db);
    const loom_sym_expr *cond =
        loom_sym_or(cx, loom_sym_cmp(cx, LOOM_SYM_EQ, da, db),
                    loom_sym_or(cx, loom_sym_cmp(cx, LOOM_SYM_EQ, da, one), loom_sym_cmp(cx, LOOM_SYM_EQ, db, one)));
    char why[512];
    snprintf(why, sizeof why, "%s: operand %zu axis %d is %s, operand %zu axis %d is %s: must be equal or 1",
             ic->op, ia, xa, loom_graph_sym_str(ic->m, da), ib, xb, loom_graph_sym_str(ic->m, db));
    LOOM_PROPAGATE(loom_graph_icx_guard(ic, cond, why));
    if (!out[k]) return loom_sym_ctx_take_error(cx);
  }
  return LOOM_OK;
}

loom_status loom_graph_icx_same_dim(loom_graph_icx *ic, size_t ia, int xa, const loom_sym_expr *a,
                                    size_t ib, int xb, const loom_sym_expr *b) {
  if (a == b) return LOOM_OK;
  loom_sym_truth t = loom_sym_prove_eq(ic->cx, a, b);
  if (t == LOOM_SYM_TRUE) return LOOM_OK;
  if (t == LOOM_SYM_FALSE)
    return loom_graph_icx_error(ic, "operand %zu axis %d is %s, operand %zu axis %d is %s", ia, xa,
                                loom_graph_sym_str(ic->m, a), ib, xb, loom_graph_sym_str(ic->m, b));
  char why[512];
  snprintf(why, sizeof why, "%s: operand %zu axis %d is %s, operand %zu axis %d is %s: must be equal", ic->op, ia,
           xa, loom_graph_sym_str(ic->m, a), ib, xb, loom_graph_sym_str(ic->m, b));
  return loom_graph_icx_guard(ic, loom_sym_cmp(ic->cx, LOOM_SYM_EQ, a, b), why);
}

/* Checks attributes against the op's spec: known names, kinds, required ones present. */
static loom_status check_attrs(loom_graph_icx *ic, const loom_graph_op_impl *impl) {
  const loom_graph_expr *c = ic->call;
  for (size_t i = 0; i < c->u.call.nattrs; i++) {
    const loom_graph_attr *a = &c->u.call.attrs[i];
    const loom_graph_attr_spec *sp = impl->attrs;
    while (sp && sp->name && strcmp(sp->name, a->name)) sp++;
    if (!sp || !sp->name) return loom_graph_icx_error(ic, "unknown attribute '%s'", a->name);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(c->u.call.attrs[j].name, a->name))
        return loom_graph_icx_error(ic, "attribute '%s' given twice", a->name);
    bool ok = a->kind == sp->kind;
    if (sp->kind == LOOM_GRAPH_ATTR_INT && a->kind == LOOM_GRAPH_ATTR_SYMS && a->n == 1) {
      int64_t v;
      ok = loom_sym_is_const(a->syms[0], &v);
    }
    if (sp->kind == LOOM_GRAPH_ATTR_SYMS && a->kind == LOOM_GRAPH_ATTR_INT) ok = true;
    if (sp->kind == LOOM_GRAPH_ATTR_FLOAT && a->kind == LOOM_GRAPH_ATTR_INT) ok = true;
    if (!ok) {
      static const char *const kn[] = {"an integer", "a number", "a bool", "a string", "a dtype", "a list"};
      return loom_graph_icx_error(ic, "attribute '%s' must be %s", a->name, kn[sp->kind]);
    }
  }
  for (const loom_graph_attr_spec *sp = impl->attrs; sp && sp->name; sp++)
    if (sp->required && !loom_graph_call_attr(c, sp->name))
      return loom_graph_icx_error(ic, "missing attribute '%s'", sp->name);
  return LOOM_OK;
}

/* Ops that only move or convert elements; the rest refuse the low-precision dtypes
 * (loom_dtype_is_lowp), which carry no arithmetic: cast them to a wider type first. */
static bool takes_lowp(loom_graph_op op) {
  switch (op) {
  case LOOM_GRAPH_OP_CAST: case LOOM_GRAPH_OP_BITCAST: case LOOM_GRAPH_OP_RESHAPE: case LOOM_GRAPH_OP_PERMUTE_DIMS:
  case LOOM_GRAPH_OP_EXPAND_DIMS: case LOOM_GRAPH_OP_SQUEEZE: case LOOM_GRAPH_OP_FLATTEN:
  case LOOM_GRAPH_OP_BROADCAST_TO: case LOOM_GRAPH_OP_CONCAT: case LOOM_GRAPH_OP_STRIDED_SLICE:
  case LOOM_GRAPH_OP_SHAPE_OF: case LOOM_GRAPH_OP_SPLIT: case LOOM_GRAPH_OP_TILE: case LOOM_GRAPH_OP_REPEAT:
  case LOOM_GRAPH_OP_TAKE: case LOOM_GRAPH_OP_GATHER_ELEMENTS: case LOOM_GRAPH_OP_SCATTER_ELEMENTS:
    return true;
  default: return false;
  }
}

static loom_status check_lowp(loom_graph_icx *ic, const loom_sinfo *result) {
  loom_graph_op op = ic->call->u.call.op;
  if (takes_lowp(op)) return LOOM_OK;
  for (size_t i = 0; i < ic->call->u.call.nargs; i++) {
    const loom_sinfo *a = ic->call->u.call.args[i]->sinfo;
    if ((a->kind == LOOM_SINFO_TENSOR || a->kind == LOOM_SINFO_SCALAR) && loom_dtype_is_lowp(a->dtype))
      return loom_graph_icx_error(ic, "operand %zu has dtype %s, which only data movement and cast accept", i,
                                  loom_dtype_name(a->dtype));
  }
  if ((result->kind == LOOM_SINFO_TENSOR || result->kind == LOOM_SINFO_SCALAR) && loom_dtype_is_lowp(result->dtype))
    return loom_graph_icx_error(ic, "result dtype %s is accepted only by data movement and cast",
                                loom_dtype_name(result->dtype));
  return LOOM_OK;
}

static loom_status infer_op(loom_graph_icx *ic, const loom_sinfo **out) {
  loom_graph_op op = ic->call->u.call.op;
  int lo, hi;
  loom_graph_op_arity(op, &lo, &hi);
  size_t n = ic->call->u.call.nargs;
  if ((int)n < lo || (hi >= 0 && (int)n > hi)) {
    if (lo == hi) return loom_graph_icx_error(ic, "expects %d operand%s, got %zu", lo, lo == 1 ? "" : "s", n);
    if (hi < 0) return loom_graph_icx_error(ic, "expects at least %d operands, got %zu", lo, n);
    return loom_graph_icx_error(ic, "expects %d to %d operands, got %zu", lo, hi, n);
  }
  for (size_t i = 0; i < n; i++)
    if (!ic->call->u.call.args[i]->sinfo) return loom_graph_icx_error(ic, "operand %zu has no struct info", i);
  const loom_graph_op_impl *impl = loom_graph_op_impl_of(op);
  LOOM_PROPAGATE(check_attrs(ic, impl));
  LOOM_PROPAGATE(impl->infer(ic, out));
  if (!*out) {
    loom_status st = loom_sym_ctx_take_error(ic->cx);
    return st ? st : LOOM_OOM();
  }
  return check_lowp(ic, *out);
}

/* Signature check of a call to a graph function / extern: each argument against the param. */
static loom_status check_signature(loom_graph_icx *ic, const char *what, size_t nparams,
                                   const loom_sinfo *const *params) {
  const loom_graph_expr *c = ic->call;
  if (c->u.call.nargs != nparams)
    return LOOM_ERROR(TYPE_ERROR, "call of %s: expects %zu arguments, got %zu", what, nparams, c->u.call.nargs);
  for (size_t i = 0; i < nparams; i++) {
    const loom_sinfo *a = c->u.call.args[i]->sinfo;
    if (a->kind != params[i]->kind && params[i]->kind != LOOM_SINFO_OBJECT)
      return LOOM_ERROR(TYPE_ERROR, "call of %s: argument %zu is %s, parameter is %s", what, i, kind_word(a),
                        kind_word(params[i]));
    if ((a->kind == LOOM_SINFO_TENSOR || a->kind == LOOM_SINFO_SCALAR) && params[i]->dtype != LOOM_DTYPE_UNKNOWN &&
        a->dtype != LOOM_DTYPE_UNKNOWN && a->dtype != params[i]->dtype)
      return LOOM_ERROR(TYPE_ERROR, "call of %s: argument %zu has dtype %s, parameter has %s", what, i,
                        loom_dtype_name(a->dtype), loom_dtype_name(params[i]->dtype));
    if (a->kind == LOOM_SINFO_TENSOR && params[i]->ndim >= 0 && a->ndim >= 0 && a->ndim != params[i]->ndim)
      return LOOM_ERROR(TYPE_ERROR, "call of %s: argument %zu has rank %d, parameter has rank %d", what, i, a->ndim,
                        params[i]->ndim);
  }
  return LOOM_OK;
}

/* Rewrites the symbolic dims of `si` with vars -> values (recursing into tuples). */
static const loom_sinfo *subst_sinfo(loom_graph_module *m, const loom_sinfo *si, const loom_sym_expr *const *from,
                                     const loom_sym_expr *const *to, size_t n) {
  if (si->kind == LOOM_SINFO_TUPLE) {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, si->nfields ? si->nfields : 1);
    if (!f) return NULL;
    for (size_t i = 0; i < si->nfields; i++)
      if (!(f[i] = subst_sinfo(m, si->fields[i], from, to, n))) return NULL;
    return loom_sinfo_tuple(m, si->nfields, f);
  }
  if (si->kind == LOOM_SINFO_SCALAR && si->value)
    return loom_sinfo_scalar(m, si->dtype, loom_sym_subst(m->cx, si->value, from, to, n));
  if ((si->kind != LOOM_SINFO_TENSOR && si->kind != LOOM_SINFO_SHAPE) || !si->dims) return si;
  const loom_sym_expr **d = loom_graph_dims_new(m, (size_t)si->ndim);
  if (!d) return NULL;
  for (int k = 0; k < si->ndim; k++)
    if (!(d[k] = loom_sym_subst(m->cx, si->dims[k], from, to, n))) return NULL;
  return si->kind == LOOM_SINFO_TENSOR ? loom_sinfo_tensor(m, si->dtype, si->ndim, d, si->device)
                                       : loom_sinfo_shape(m, si->ndim, d);
}

/* The callee's result with its params' symbolic vars replaced by the argument dims (where
 * the param dim is a bare var, the usual case). */
static const loom_sinfo *subst_result(loom_graph_module *m, size_t nparams, const loom_sinfo *const *params,
                                      const loom_sinfo *ret, const loom_graph_expr *call) {
  LOOM_VEC(const loom_sym_expr *) from = {0};
  LOOM_VEC(const loom_sym_expr *) to = {0};
  const loom_sinfo *r = ret;
  bool ok = true;
  for (size_t i = 0; i < nparams && i < call->u.call.nargs && ok; i++) {
    const loom_sinfo *p = params[i], *a = call->u.call.args[i]->sinfo;
    if (p->dims && a->dims && p->ndim == a->ndim && (p->kind == LOOM_SINFO_TENSOR || p->kind == LOOM_SINFO_SHAPE))
      for (int k = 0; k < p->ndim && ok; k++)
        if (loom_sym_is_var(p->dims[k])) {
          bool seen = false;
          for (size_t q = 0; q < from.len; q++) seen = seen || from.data[q] == p->dims[k];
          if (!seen) ok = LOOM_VEC_PUSH(m->alloc, &from, p->dims[k]) && LOOM_VEC_PUSH(m->alloc, &to, a->dims[k]);
        }
  }
  if (ok && from.len) r = subst_sinfo(m, r, from.data, to.data, from.len);
  LOOM_VEC_FREE(m->alloc, &from);
  LOOM_VEC_FREE(m->alloc, &to);
  return ok ? r : NULL;
}

loom_status loom_graph_infer_call(loom_graph_module *m, const loom_graph_expr *call, const char *hint,
                                  loom_graph_infer_result *out) {
  memset(out, 0, sizeof *out);
  loom_graph_icx ic = {.m = m, .cx = m->cx, .call = call, .hint = hint};
  loom_status st = LOOM_OK;
  const loom_sinfo *si = NULL;
  switch (call->u.call.callee) {
  case LOOM_GRAPH_CALLEE_OP:
    ic.op = loom_graph_op_name(call->u.call.op);
    st = infer_op(&ic, &si);
    break;
  case LOOM_GRAPH_CALLEE_FUNC: {
    loom_graph_func *f = loom_graph_module_find_func(m, call->u.call.target);
    if (!f) {
      st = LOOM_ERROR(NOT_FOUND, "call of unknown function @%s", call->u.call.target);
      break;
    }
    const loom_sinfo **ps = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, f->nparams ? f->nparams : 1);
    if (!ps) return LOOM_OOM();
    for (size_t i = 0; i < f->nparams; i++) ps[i] = f->params[i]->sinfo;
    char what[160];
    snprintf(what, sizeof what, "@%s", f->name);
    st = check_signature(&ic, what, f->nparams, ps);
    if (!st) si = subst_result(m, f->nparams, ps, f->ret, call);
    break;
  }
  case LOOM_GRAPH_CALLEE_TP:
    si = call->u.call.out_sinfo;
    break;
  case LOOM_GRAPH_CALLEE_EXTERN: {
    const loom_graph_extern *ex = NULL;
    for (size_t i = 0; i < m->externs.len; i++)
      if (!strcmp(m->externs.data[i].name, call->u.call.target)) ex = &m->externs.data[i];
    char what[160];
    snprintf(what, sizeof what, "extern @%s", ex ? ex->name : call->u.call.target);
    if (ex) st = check_signature(&ic, what, ex->sig->nfields, ex->sig->fields);
    si = call->u.call.out_sinfo;
    /* the declaration gives the result shape: the call's result must not contradict it */
    const loom_sinfo *decl = !st && ex ? subst_result(m, ex->sig->nfields, ex->sig->fields, ex->sig->ret, call) : NULL;
    if (!st && ex && !decl) st = LOOM_OOM();
    if (!st && ex && si && loom_sinfo_is_base_of(m->cx, si, decl) == LOOM_SYM_FALSE) {
      loom_strbuf a, b;
      loom_strbuf_init(&a, NULL);
      loom_strbuf_init(&b, NULL);
      loom_sinfo_print(si, &a);
      loom_sinfo_print(decl, &b);
      st = LOOM_ERROR(TYPE_ERROR, "call of %s: the call's result is %s, the declaration gives %s", what,
                      loom_strbuf_cstr(&a), loom_strbuf_cstr(&b));
      loom_strbuf_free(&a);
      loom_strbuf_free(&b);
    }
    break;
  }
  }
  if (!st && !si) st = LOOM_OOM();
  if (!st) {
    out->sinfo = si;
    out->nguards = ic.guards.len;
    if (ic.guards.len) {
      const loom_sym_expr **g = LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, ic.guards.len);
      const char **w = LOOM_ARENA_ARRAY(&m->arena, const char *, ic.guards.len);
      if (!g || !w) st = LOOM_OOM();
      else {
        memcpy(g, ic.guards.data, ic.guards.len * sizeof *g);
        memcpy(w, ic.why.data, ic.guards.len * sizeof *w);
        out->guards = g;
        out->guard_why = w;
      }
    }
  }
  LOOM_VEC_FREE(m->alloc, &ic.guards);
  LOOM_VEC_FREE(m->alloc, &ic.why);
  return st;
}

/* ---- builder ---------------------------------------------------------------------- */

loom_graph_expr *loom_graph_call_op(loom_graph_module *m, loom_graph_op op, size_t nargs,
                                    loom_graph_expr *const *args, size_t nattrs,
                                    const loom_graph_attr *attrs) {
  loom_graph_expr *e = expr_new(m, LOOM_GRAPH_EXPR_CALL);
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, nargs ? nargs : 1);
  loom_graph_attr *at = LOOM_ARENA_ARRAY(&m->arena, loom_graph_attr, nattrs ? nattrs : 1);
  if (!e || !a || !at) return NULL;
  for (size_t i = 0; i < nargs; i++) a[i] = args[i];
  for (size_t i = 0; i < nattrs; i++) {
    if (!attrs[i].name) return NULL;
    at[i] = attrs[i];
  }
  e->u.call.callee = LOOM_GRAPH_CALLEE_OP;
  e->u.call.op = op;
  e->u.call.nargs = nargs;
  e->u.call.args = a;
  e->u.call.nattrs = nattrs;
  e->u.call.attrs = at;
  return e;
}

void loom_graph_builder_begin(loom_graph_builder *b, loom_graph_module *m, const char *name) {
  memset(b, 0, sizeof *b);
  b->m = m;
  b->name = loom_graph_module_intern(m, name, strlen(name));
}

void loom_graph_builder_reset(loom_graph_builder *b) {
  LOOM_VEC_FREE(b->m->alloc, &b->params);
  LOOM_VEC_FREE(b->m->alloc, &b->blocks);
  LOOM_VEC_FREE(b->m->alloc, &b->cur);
}

loom_graph_expr *loom_graph_builder_param(loom_graph_builder *b, const char *name, const loom_sinfo *si) {
  if (!si) return NULL;
  loom_graph_expr *v = loom_graph_var_new(b->m, name, si);
  if (!v || !LOOM_VEC_PUSH(b->m->alloc, &b->params, v)) return NULL;
  return v;
}

static loom_status close_block(loom_graph_builder *b) {
  if (!b->cur.len) return LOOM_OK;
  loom_graph_module *m = b->m;
  loom_graph_block *blk = LOOM_ARENA_NEW(&m->arena, loom_graph_block);
  loom_graph_binding **bs = LOOM_ARENA_ARRAY(&m->arena, loom_graph_binding *, b->cur.len);
  if (!blk || !bs) return LOOM_OOM();
  memcpy(bs, b->cur.data, b->cur.len * sizeof *bs);
  blk->dataflow = b->cur_dataflow;
  blk->n = b->cur.len;
  blk->bindings = bs;
  if (blk->dataflow) {
    /* Every var of a dataflow block stays visible (the builder does not know which are
     * used later); passes may narrow the outputs. */
    loom_graph_expr **outs = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, b->cur.len);
    if (!outs) return LOOM_OOM();
    for (size_t i = 0; i < b->cur.len; i++) outs[i] = b->cur.data[i]->var;
    blk->outputs = outs;
    blk->noutputs = b->cur.len;
  }
  if (!LOOM_VEC_PUSH(m->alloc, &b->blocks, blk)) return LOOM_OOM();
  b->cur.len = 0;
  return LOOM_OK;
}

loom_status loom_graph_builder_block(loom_graph_builder *b, bool dataflow) {
  LOOM_PROPAGATE(close_block(b));
  b->cur_dataflow = dataflow;
  return LOOM_OK;
}

static const char *gen_name(loom_graph_builder *b, char *buf, size_t cap) {
  snprintf(buf, cap, "t%u", b->tmp++);
  return buf;
}

static loom_status bind(loom_graph_builder *b, loom_graph_binding_kind kind, loom_graph_expr *value,
                        const loom_sinfo *cast_to, const char *name, loom_graph_expr **out_var);

/* ANF: non-leaf operands of calls and tuples are bound to vars first. */
static loom_status normalize_operands(loom_graph_builder *b, loom_graph_expr *value) {
  loom_graph_expr **items = NULL;
  size_t n = 0;
  if (value->kind == LOOM_GRAPH_EXPR_CALL) {
    items = (loom_graph_expr **)value->u.call.args;
    n = value->u.call.nargs;
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE) {
    items = (loom_graph_expr **)value->u.tuple.items;
    n = value->u.tuple.n;
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE_GET && !loom_graph_expr_is_leaf(value->u.get.tuple)) {
    return bind(b, LOOM_GRAPH_BIND_VAR, value->u.get.tuple, NULL, NULL, &value->u.get.tuple);
  }
  for (size_t i = 0; i < n; i++)
    if (!loom_graph_expr_is_leaf(items[i]))
      LOOM_PROPAGATE(bind(b, LOOM_GRAPH_BIND_VAR, items[i], NULL, NULL, &items[i]));
  return LOOM_OK;
}

/* Struct info of a non-call expression. */
static loom_status infer_simple(loom_graph_module *m, loom_graph_expr *e) {
  if (e->sinfo) return LOOM_OK;
  if (e->kind == LOOM_GRAPH_EXPR_TUPLE) {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, e->u.tuple.n ? e->u.tuple.n : 1);
    if (!f) return LOOM_OOM();
    for (size_t i = 0; i < e->u.tuple.n; i++) f[i] = e->u.tuple.items[i]->sinfo;
    e->sinfo = loom_sinfo_tuple(m, e->u.tuple.n, f);
  } else if (e->kind == LOOM_GRAPH_EXPR_TUPLE_GET) {
    const loom_sinfo *t = e->u.get.tuple->sinfo;
    if (t->kind != LOOM_SINFO_TUPLE) return LOOM_ERROR(TYPE_ERROR, "tuple-get of %s", kind_word(t));
    if (e->u.get.index >= t->nfields)
      return LOOM_ERROR(TYPE_ERROR, "tuple-get index %zu out of range for a tuple of %zu", e->u.get.index,
                        t->nfields);
    e->sinfo = t->fields[e->u.get.index];
  }
  return e->sinfo ? LOOM_OK : LOOM_OOM();
}

static loom_status bind(loom_graph_builder *b, loom_graph_binding_kind kind, loom_graph_expr *value,
                        const loom_sinfo *cast_to, const char *name, loom_graph_expr **out_var) {
  loom_graph_module *m = b->m;
  char buf[32];
  if (!value) return LOOM_OOM();
  LOOM_PROPAGATE(normalize_operands(b, value));
  if (!name) name = gen_name(b, buf, sizeof buf);
  loom_graph_binding *bd = LOOM_ARENA_NEW(&m->arena, loom_graph_binding);
  if (!bd) return LOOM_OOM();
  bd->kind = kind;
  bd->value = value;
  if (value->kind == LOOM_GRAPH_EXPR_CALL) {
    loom_graph_infer_result r;
    LOOM_RETURN_IF_ERROR(loom_graph_infer_call(m, value, name, &r), "while building '%s' in @%s", name, b->name);
    value->sinfo = r.sinfo;
    bd->nguards = r.nguards;
    bd->guards = r.guards;
    bd->guard_why = r.guard_why;
  } else {
    LOOM_PROPAGATE(infer_simple(m, value));
  }
  const loom_sinfo *si = value->sinfo;
  if (kind == LOOM_GRAPH_BIND_MATCH_CAST) {
    if (loom_sinfo_is_base_of(m->cx, cast_to, value->sinfo) == LOOM_SYM_FALSE && value->sinfo->kind != LOOM_SINFO_OBJECT)
      return LOOM_ERROR(TYPE_ERROR, "match_cast '%s' in @%s can never succeed", name, b->name);
    si = cast_to;
  }
  bd->var = loom_graph_var_new(m, name, si);
  if (!bd->var || !LOOM_VEC_PUSH(m->alloc, &b->cur, bd)) return LOOM_OOM();
  if (out_var) *out_var = bd->var;
  return LOOM_OK;
}

loom_status loom_graph_builder_emit(loom_graph_builder *b, loom_graph_expr *value, const char *name,
                                    loom_graph_expr **out_var) {
  return bind(b, LOOM_GRAPH_BIND_VAR, value, NULL, name, out_var);
}

loom_status loom_graph_builder_match_cast(loom_graph_builder *b, loom_graph_expr *value,
                                          const loom_sinfo *si, const char *name,
                                          loom_graph_expr **out_var) {
  if (!si) return LOOM_OOM();
  return bind(b, LOOM_GRAPH_BIND_MATCH_CAST, value, si, name, out_var);
}

loom_status loom_graph_builder_op(loom_graph_builder *b, const char *op, size_t nargs,
                                  loom_graph_expr *const *args, size_t nattrs,
                                  const loom_graph_attr *attrs, const char *name,
                                  loom_graph_expr **out_var) {
  loom_graph_op id;
  if (!loom_graph_op_lookup(op, strlen(op), &id)) return LOOM_ERROR(NOT_FOUND, "unknown operator '%s'", op);
  return bind(b, LOOM_GRAPH_BIND_VAR, loom_graph_call_op(b->m, id, nargs, args, nattrs, attrs), NULL, name, out_var);
}

loom_status loom_graph_builder_end(loom_graph_builder *b, loom_graph_expr *result,
                                   const loom_sinfo *ret, loom_graph_func **out) {
  loom_graph_module *m = b->m;
  loom_status st = LOOM_OK;
  if (!result) st = LOOM_OOM();
  if (!st && !loom_graph_expr_is_leaf(result)) st = bind(b, LOOM_GRAPH_BIND_VAR, result, NULL, NULL, &result);
  if (!st) st = close_block(b);
  loom_graph_func *f = LOOM_ARENA_NEW(&m->arena, loom_graph_func);
  loom_graph_seq *seq = LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
  loom_graph_expr **ps = LOOM_ARENA_ARRAY(&m->arena, loom_graph_expr *, b->params.len ? b->params.len : 1);
  loom_graph_block **bl = LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, b->blocks.len ? b->blocks.len : 1);
  if (!st && (!f || !seq || !ps || !bl)) st = LOOM_OOM();
  if (!st) {
    if (b->params.len) memcpy(ps, b->params.data, b->params.len * sizeof *ps);
    if (b->blocks.len) memcpy(bl, b->blocks.data, b->blocks.len * sizeof *bl);
    seq->nblocks = b->blocks.len;
    seq->blocks = bl;
    seq->result = result;
    f->name = b->name;
    f->nparams = b->params.len;
    f->params = ps;
    f->body = seq;
    f->ret = ret ? ret : result->sinfo;
    st = loom_graph_module_add_func(m, f);
  }
  loom_graph_builder_reset(b);
  if (!st && out) *out = f;
  return st;
}

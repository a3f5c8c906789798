/* infer.c — call inference: dispatch to the op registry (attributes checked against the op's
 * spec, low-precision dtypes refused where an op does not take them), signature checks of calls
 * to graph functions and externs, and the helpers ops' inference shares (operands, axes,
 * broadcasting, guards, fresh symbols). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"

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

const char *loom_graph_sinfo_kind_word(const loom_sinfo *s) {
  static const char *const w[] = {"an Object", "a Scalar", "a Shape", "a Tensor", "a Tuple", "a Func", "a List"};
  return w[s->kind];
}

loom_status loom_graph_icx_tensor(loom_graph_icx *ic, size_t i, bool need_dims, const loom_sinfo **out) {
  const loom_sinfo *s = loom_graph_icx_arg(ic, i);
  *out = s;
  if (s->kind != LOOM_SINFO_TENSOR)
    return loom_graph_icx_error(ic, "operand %zu must be a Tensor, got %s", i, loom_graph_sinfo_kind_word(s));
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

/* Whether a binding's name is an exporter's path made a name ("/model/Resize_output_0" ->
 * "_model_Resize_output_0", "onnx::Reshape_7" -> "onnx__Reshape_7"): fresh dims are then named
 * after the op instead, so that signatures read `resize_rs3`, not `_model_..._rs3`. */
static bool path_name(const char *s) { return s[0] == '_' || strstr(s, "__") || strlen(s) > 40; }

const loom_sym_expr *loom_graph_icx_fresh(loom_graph_icx *ic, const char *what) {
  char name[128];
  const char *hint = ic->hint && path_name(ic->hint) ? ic->op : ic->hint;
  snprintf(name, sizeof name, "%s%s%s%u", hint ? hint : "", hint ? "_" : "", what, ic->m->next_fresh++);
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
    return loom_graph_icx_error(ic, "operand %zu (%s) must be a Tensor, got %s", i, what, loom_graph_sinfo_kind_word(s));
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
      static const char *const kn[] = {"an integer", "a number", "a bool", "a string", "a dtype", "a list", "a list of strings"};
      return loom_graph_icx_error(ic, "attribute '%s' must be %s", a->name, kn[sp->kind]);
    }
  }
  for (const loom_graph_attr_spec *sp = impl->attrs; sp && sp->name; sp++)
    if (sp->required && !loom_graph_call_attr(c, sp->name))
      return loom_graph_icx_error(ic, "missing attribute '%s'", sp->name);
  return LOOM_OK;
}

/* The variable name of operand i of the call being inferred, or NULL when it is not a variable. */
static const char *arg_name(const loom_graph_icx *ic, size_t i) {
  const loom_graph_expr *a = ic->call->u.call.args[i];
  return a->kind == LOOM_GRAPH_EXPR_VAR ? a->u.var.name : NULL;
}

/* Whether struct info s is a tensor or scalar of dtype string. */
static bool is_string(const loom_sinfo *s) {
  return (s->kind == LOOM_SINFO_TENSOR || s->kind == LOOM_SINFO_SCALAR) && loom_dtype_is_string(s->dtype);
}

static loom_status check_lowp(loom_graph_icx *ic, const loom_sinfo *result) {
  unsigned flags = loom_graph_op_flags(ic->call->u.call.op);
  /* only the ops that know strings (flag STR) take them: an element of another op is a number */
  if (!(flags & LOOM_GRAPH_OPF_STR)) {
    for (size_t i = 0; i < ic->call->u.call.nargs; i++)
      if (is_string(ic->call->u.call.args[i]->sinfo))
        return LOOM_ERROR(UNIMPLEMENTED, "%s: operand %zu%s%s%s is a string tensor, which this operator does not take", ic->op, i,
                          arg_name(ic, i) ? " ('" : "", arg_name(ic, i) ? arg_name(ic, i) : "", arg_name(ic, i) ? "')" : "");
    if (is_string(result)) return LOOM_ERROR(UNIMPLEMENTED, "%s: a string result is not supported by this operator", ic->op);
  }
  /* ops that only move or convert elements (flag LOWP) take the low-precision dtypes
   * (loom_dtype_is_lowp), which carry no arithmetic; the rest refuse them: cast them first */
  if (flags & LOOM_GRAPH_OPF_LOWP) return LOOM_OK;
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
      return LOOM_ERROR(TYPE_ERROR, "call of %s: argument %zu is %s, parameter is %s", what, i, loom_graph_sinfo_kind_word(a),
                        loom_graph_sinfo_kind_word(params[i]));
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

const loom_sinfo *loom_graph_sinfo_subst(loom_graph_module *m, const loom_sinfo *si, const loom_sym_expr *const *from,
                                     const loom_sym_expr *const *to, size_t n) {
  if (si->kind == LOOM_SINFO_TUPLE) {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, si->nfields ? si->nfields : 1);
    if (!f) return NULL;
    for (size_t i = 0; i < si->nfields; i++)
      if (!(f[i] = loom_graph_sinfo_subst(m, si->fields[i], from, to, n))) return NULL;
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
  if (ok && from.len) r = loom_graph_sinfo_subst(m, r, from.data, to.data, from.len);
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

/* op_create.c — tensors made from attributes: zeros, ones, full (symbolic shape), arange
 * (symbolic bounds, or run-time scalar operands start, limit, delta: then a fresh length),
 * sym_tensor (symbolic values), and the triangle masks tril / triu (k an attribute or a
 * run-time operand 1). */
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"

static const loom_graph_attr_spec fill_attrs[] = {
    {"shape", LOOM_GRAPH_ATTR_SYMS, false}, {"dtype", LOOM_GRAPH_ATTR_DTYPE, false}, {NULL, 0, false}};
static const loom_graph_attr_spec full_attrs[] = {{"shape", LOOM_GRAPH_ATTR_SYMS, false},
                                                  {"dtype", LOOM_GRAPH_ATTR_DTYPE, false},
                                                  {"value", LOOM_GRAPH_ATTR_FLOAT, true},
                                                  {NULL, 0, false}};
static const loom_graph_attr_spec arange_attrs[] = {{"start", LOOM_GRAPH_ATTR_SYMS, false},
                                                    {"end", LOOM_GRAPH_ATTR_SYMS, false},
                                                    {"step", LOOM_GRAPH_ATTR_SYMS, false},
                                                    {"dtype", LOOM_GRAPH_ATTR_DTYPE, false},
                                                    {NULL, 0, false}};
static const loom_graph_attr_spec sym_tensor_attrs[] = {{"values", LOOM_GRAPH_ATTR_SYMS, true},
                                                       {"scalar", LOOM_GRAPH_ATTR_INT, false},
                                                       {"dtype", LOOM_GRAPH_ATTR_DTYPE, false},
                                                       {NULL, 0, false}};
static const loom_graph_attr_spec tri_attrs[] = {{"k", LOOM_GRAPH_ATTR_SYMS, false}, {NULL, 0, false}};

static loom_dtype dtype_attr(const loom_graph_expr *call, loom_dtype dflt) {
  const loom_graph_attr *a = loom_graph_call_attr(call, "dtype");
  return a ? a->dtype : dflt;
}

static loom_status infer_fill(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_graph_attr *a = loom_graph_call_attr(ic->call, "shape");
  if (ic->call->u.call.nargs == 1) {
    /* The shape comes from a Shape value (shape_of, shape(...)): ONNX ConstantOfShape. */
    const loom_sinfo *s = loom_graph_icx_arg(ic, 0);
    if (a) return loom_graph_icx_error(ic, "give the shape either as operand 0 or as attribute 'shape', not both");
    if (s->kind != LOOM_SINFO_SHAPE || s->ndim < 0 || s->ndim > 8)
      return loom_graph_icx_error(ic, "operand 0 must be a Shape of known rank (at most 8)");
    const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)s->ndim);
    if (!d) return LOOM_OOM();
    for (int i = 0; i < s->ndim; i++) d[i] = s->dims ? s->dims[i] : loom_graph_icx_fresh(ic, "dim");
    *out = loom_sinfo_tensor(ic->m, dtype_attr(ic->call, LOOM_DTYPE_F32), s->ndim, d, NULL);
    return LOOM_OK;
  }
  if (!a) return loom_graph_icx_error(ic, "missing attribute 'shape' (or a Shape operand 0)");
  if (a->n > 8) return loom_graph_icx_error(ic, "rank %zu above 8", a->n);
  for (size_t i = 0; i < a->n; i++) {
    int64_t c;
    if (loom_sym_is_const(a->syms[i], &c) && c < 0)
      return loom_graph_icx_error(ic, "shape axis %zu is %lld", i, (long long)c);
  }
  *out = loom_sinfo_tensor(ic->m, dtype_attr(ic->call, LOOM_DTYPE_F32), (int)a->n, a->syms, NULL);
  return LOOM_OK;
}

static loom_status eval_fill(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_attr *a = loom_graph_call_attr(ec->call, "shape");
  int64_t sh[8];
  size_t nd = a ? a->n : args[0].n;
  if (nd > 8) return LOOM_ERROR(UNIMPLEMENTED, "%s: rank %zu above 8", ec->op, nd);
  for (size_t i = 0; i < nd; i++) {
    if (a) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, a->syms[i], &sh[i]));
    else sh[i] = args[0].dims[i];
    if (sh[i] < 0) return LOOM_ERROR(OUT_OF_RANGE, "%s: shape axis %zu evaluates to %lld", ec->op, i, (long long)sh[i]);
  }
  loom_graph_op op = ec->call->u.call.op;
  double v = op == LOOM_GRAPH_OP_ONES ? 1 : op == LOOM_GRAPH_OP_FULL ? loom_graph_attr_get_float(ec->call, "value", 0) : 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(dtype_attr(ec->call, LOOM_DTYPE_F32), (int)nd, sh, out));
  for (size_t i = 0; i < out->t.numel; i++) loom_graph_tensor_set_f64(&out->t, i, v);
  return LOOM_OK;
}

static const loom_sym_expr *sym_attr(loom_graph_icx *ic, const char *name, int64_t dflt) {
  const loom_graph_attr *a = loom_graph_call_attr(ic->call, name);
  if (!a) return loom_sym_const(ic->cx, dflt);
  if (a->kind == LOOM_GRAPH_ATTR_INT) return loom_sym_const(ic->cx, a->i);
  return a->n == 1 ? a->syms[0] : NULL;
}

/* arange(start, end, step): length max(ceildiv(end - start, step), 0) for a positive
 * constant step. */
/* arange(start, limit, delta) on run-time scalars of one numeric dtype (ONNX Range): a 1-D
 * result of that dtype with a fresh length max(ceil((limit - start) / delta), 0). */
static loom_status infer_arange_dyn(loom_graph_icx *ic, const loom_sinfo **out) {
  static const char *what[3] = {"start", "limit", "delta"};
  if (ic->call->u.call.nargs != 3) return loom_graph_icx_error(ic, "takes no operand or three (start, limit, delta)");
  if (loom_graph_call_attr(ic->call, "start") || loom_graph_call_attr(ic->call, "end") ||
      loom_graph_call_attr(ic->call, "step") || loom_graph_call_attr(ic->call, "dtype"))
    return loom_graph_icx_error(ic, "give the bounds either as operands or as attributes, not both");
  loom_dtype dt = LOOM_DTYPE_UNKNOWN;
  for (size_t i = 0; i < 3; i++) {
    const loom_sinfo *s;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, true, &s));
    int64_t len;
    if (s->ndim > 1 || (s->ndim == 1 && (!loom_sym_is_const(s->dims[0], &len) || len != 1)))
      return loom_graph_icx_error(ic, "operand %zu (%s) must hold one value", i, what[i]);
    if (i == 0) dt = s->dtype;
    else if (s->dtype != dt)
      return loom_graph_icx_error(ic, "operand %zu (%s) has dtype %s, operand 0 has %s", i, what[i], loom_dtype_name(s->dtype),
                                  loom_dtype_name(dt));
  }
  if (dt == LOOM_DTYPE_UNKNOWN || dt == LOOM_DTYPE_BOOL || loom_dtype_is_lowp(dt))
    return loom_graph_icx_error(ic, "operand 0 (start) has dtype %s; expected an integer or float type",
                                dt == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(dt));
  const loom_sym_expr *len = loom_graph_icx_fresh(ic, "range");
  if (!len) return loom_sym_ctx_take_error(ic->cx);
  *out = loom_sinfo_tensor(ic->m, dt, 1, &len, NULL);
  return LOOM_OK;
}

static loom_status eval_arange_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  loom_dtype dt = args[0].t.dtype;
  int64_t n;
  if (loom_dtype_is_int(dt)) {
    int64_t s = loom_graph_tensor_get_i64(&args[0].t, 0), e = loom_graph_tensor_get_i64(&args[1].t, 0),
            d = loom_graph_tensor_get_i64(&args[2].t, 0);
    if (d == 0) return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 2 (delta) is 0 (start %lld, limit %lld)", ec->op, (long long)s, (long long)e);
    double q = ceil(((double)e - (double)s) / (double)d);
    if (q > (double)(1 << 30))
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: start %lld, limit %lld, delta %lld give %.0f elements (above 2^30)", ec->op,
                        (long long)s, (long long)e, (long long)d, q);
    n = q > 0 ? (int64_t)q : 0;
    LOOM_PROPAGATE(loom_graph_value_tensor(dt, 1, &n, out));
    for (int64_t i = 0; i < n; i++) loom_graph_tensor_set_i64(&out->t, (size_t)i, s + i * d);
    return LOOM_OK;
  }
  double s = loom_graph_tensor_get_f64(&args[0].t, 0), e = loom_graph_tensor_get_f64(&args[1].t, 0),
         d = loom_graph_tensor_get_f64(&args[2].t, 0);
  double q = ceil((e - s) / d);
  if (d == 0 || q != q || q > (double)(1 << 30))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: start %g, limit %g, delta %g do not give a length of at most 2^30", ec->op, s, e, d);
  n = q > 0 ? (int64_t)q : 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(dt, 1, &n, out));
  for (int64_t i = 0; i < n; i++) loom_graph_tensor_set_f64(&out->t, (size_t)i, s + (double)i * d);
  return LOOM_OK;
}

static loom_status infer_arange(loom_graph_icx *ic, const loom_sinfo **out) {
  if (ic->call->u.call.nargs) return infer_arange_dyn(ic, out);
  if (!loom_graph_call_attr(ic->call, "end")) return loom_graph_icx_error(ic, "missing attribute 'end'");
  const loom_sym_expr *s = sym_attr(ic, "start", 0), *e = sym_attr(ic, "end", 0), *st = sym_attr(ic, "step", 1);
  if (!s || !e || !st) return loom_graph_icx_error(ic, "start, end and step must be single values");
  int64_t c;
  if (!loom_sym_is_const(st, &c) || c <= 0) return loom_graph_icx_error(ic, "step must be a positive constant");
  const loom_sym_expr *len = loom_sym_ceildiv(ic->cx, loom_sym_sub(ic->cx, e, s), st);
  if (!len) return loom_sym_ctx_take_error(ic->cx);
  if (loom_sym_prove_le(ic->cx, loom_sym_const(ic->cx, 0), len) != LOOM_SYM_TRUE)
    len = loom_sym_max(ic->cx, len, loom_sym_const(ic->cx, 0));
  *out = loom_sinfo_tensor(ic->m, dtype_attr(ic->call, LOOM_DTYPE_I64), 1, &len, NULL);
  return LOOM_OK;
}

static loom_status eval_arange(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  if (ec->call->u.call.nargs) return eval_arange_dyn(ec, args, out);
  loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
  int64_t s, e, st;
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(&ic, "start", 0), &s));
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(&ic, "end", 0), &e));
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(&ic, "step", 1), &st));
  int64_t n = e > s ? (e - s + st - 1) / st : 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(dtype_attr(ec->call, LOOM_DTYPE_I64), 1, &n, out));
  for (int64_t i = 0; i < n; i++) loom_graph_tensor_set_i64(&out->t, (size_t)i, s + i * st);
  return LOOM_OK;
}

/* sym_tensor: the symbolic `values` as an integer tensor, shape (n,), or () when `scalar` is 1
 * (then exactly one value). The ONNX importer's shape computations (Shape -> Gather -> Concat)
 * become these; their values are known wherever the vars are bound. */
static bool is_int_dtype(loom_dtype dt) {
  loom_dtype_kind k = loom_dtype_kind_of(dt);
  return k == LOOM_DTYPE_KIND_SINT || k == LOOM_DTYPE_KIND_UINT || k == LOOM_DTYPE_KIND_BOOL;
}

static loom_status infer_sym_tensor(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_graph_attr *v = loom_graph_call_attr(ic->call, "values");
  bool scalar = loom_graph_attr_get_int(ic->call, "scalar", 0) != 0;
  loom_dtype dt = dtype_attr(ic->call, LOOM_DTYPE_I64);
  if (!is_int_dtype(dt)) return loom_graph_icx_error(ic, "dtype %s is not an integer type", loom_dtype_name(dt));
  if (scalar && v->n != 1) return loom_graph_icx_error(ic, "a scalar takes one value, got %zu", v->n);
  const loom_sym_expr *n = loom_sym_const(ic->cx, (int64_t)v->n);
  *out = loom_sinfo_tensor(ic->m, dt, scalar ? 0 : 1, scalar ? NULL : &n, NULL);
  return *out ? LOOM_OK : LOOM_OOM();
}

static loom_status eval_sym_tensor(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)args;
  const loom_graph_attr *v = loom_graph_call_attr(ec->call, "values");
  bool scalar = loom_graph_attr_get_int(ec->call, "scalar", 0) != 0;
  int64_t n = (int64_t)v->n;
  LOOM_PROPAGATE(loom_graph_value_tensor(dtype_attr(ec->call, LOOM_DTYPE_I64), scalar ? 0 : 1, &n, out));
  for (size_t i = 0; i < v->n; i++) {
    int64_t x;
    loom_status s = loom_graph_ecx_sym(ec, v->syms[i], &x);
    if (s) return loom_graph_value_free(out), s;
    loom_graph_tensor_set_i64(&out->t, i, x);
  }
  return LOOM_OK;
}

static loom_status infer_tri(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  const loom_graph_attr *ka = loom_graph_call_attr(ic->call, "k");
  if (ka && ka->kind == LOOM_GRAPH_ATTR_SYMS && ka->n != 1) return loom_graph_icx_error(ic, "k must be one value");
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  if (ic->call->u.call.nargs == 2) { /* run-time k: one integer */
    int64_t n;
    if (ka) return loom_graph_icx_error(ic, "give k either as operand 1 or as attribute 'k', not both");
    LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "k", &n));
    if (n != 1) return loom_graph_icx_error(ic, "operand 1 (k) has %lld values, expected one", (long long)n);
  }
  if (x->ndim >= 0 && x->ndim < 2) return loom_graph_icx_error(ic, "operand 0 must have rank >= 2, got %d", x->ndim);
  *out = x;
  return LOOM_OK;
}

static loom_status eval_tri(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  const loom_graph_attr *ka = loom_graph_call_attr(ec->call, "k");
  int64_t k = 0;
  if (ec->call->u.call.nargs == 2) k = loom_graph_tensor_get_i64(&args[1].t, 0);
  else if (ka && ka->kind == LOOM_GRAPH_ATTR_INT) k = ka->i;
  else if (ka) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, ka->syms[0], &k));
  bool lower = ec->call->u.call.op == LOOM_GRAPH_OP_TRIL;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  int64_t rows = x->shape[x->ndim - 2], cols = x->shape[x->ndim - 1];
  size_t es = loom_dtype_size(x->dtype);
  for (size_t i = 0; i < x->numel; i++) {
    int64_t c = (int64_t)i % cols, r = ((int64_t)i / cols) % rows;
    bool keep = lower ? c - r <= k : c - r >= k;
    if (keep) memcpy((char *)out->t.data + i * es, (const char *)x->data + i * es, es);
  }
  return LOOM_OK;
}

const loom_graph_op_impl loom_graph_op_impl_zeros = {fill_attrs, infer_fill, eval_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_ones = {fill_attrs, infer_fill, eval_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_full = {full_attrs, infer_fill, eval_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_arange = {arange_attrs, infer_arange, eval_arange, NULL};
const loom_graph_op_impl loom_graph_op_impl_sym_tensor = {sym_tensor_attrs, infer_sym_tensor, eval_sym_tensor, NULL};
const loom_graph_op_impl loom_graph_op_impl_tril = {tri_attrs, infer_tri, eval_tri, NULL};
const loom_graph_op_impl loom_graph_op_impl_triu = {tri_attrs, infer_tri, eval_tri, NULL};

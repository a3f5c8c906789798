/* op_create.c — tensors made from attributes: zeros, ones, full (symbolic shape), arange
 * (symbolic bounds, or run-time scalar operands start, limit, delta: then a fresh length),
 * sym_tensor (symbolic values), and the triangle masks tril / triu (k an attribute or a
 * run-time operand 1); each with its legalization. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

static const loom_graph_attr_spec fill_attrs[] = {
    {"shape", LOOM_GRAPH_ATTR_SYMS, .required = false}, {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_F32}, {0}};
static const loom_graph_attr_spec full_attrs[] = {{"shape", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_F32},
                                                  {"value", LOOM_GRAPH_ATTR_FLOAT, .required = true},
                                                  {0}};
static const loom_graph_attr_spec arange_attrs[] = {{"start", LOOM_GRAPH_ATTR_SYMS, .dflt = 0},
                                                    {"end", LOOM_GRAPH_ATTR_SYMS, .dflt = 0},
                                                    {"step", LOOM_GRAPH_ATTR_SYMS, .dflt = 1},
                                                    {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_I64},
                                                    {0}};
static const loom_graph_attr_spec sym_tensor_attrs[] = {{"values", LOOM_GRAPH_ATTR_SYMS, .required = true},
                                                       {"scalar", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                       {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_I64},
                                                       {0}};
static const loom_graph_attr_spec tri_attrs[] = {{"k", LOOM_GRAPH_ATTR_SYMS, .dflt = 0}, {0}};

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
    *out = loom_sinfo_tensor(ic->m, loom_graph_call_dtype(ic->call, "dtype"), s->ndim, d, NULL);
    return LOOM_OK;
  }
  if (!a) return loom_graph_icx_error(ic, "missing attribute 'shape' (or a Shape operand 0)");
  if (a->n > 8) return loom_graph_icx_error(ic, "rank %zu above 8", a->n);
  for (size_t i = 0; i < a->n; i++) {
    int64_t c;
    if (loom_sym_is_const(a->syms[i], &c) && c < 0)
      return loom_graph_icx_error(ic, "shape axis %zu is %lld", i, (long long)c);
  }
  *out = loom_sinfo_tensor(ic->m, loom_graph_call_dtype(ic->call, "dtype"), (int)a->n, a->syms, NULL);
  return LOOM_OK;
}

/* The element value of zeros, ones or full. */
static double fill_value(const loom_graph_expr *call) {
  loom_graph_op op = call->u.call.op;
  return op == LOOM_GRAPH_OP_ONES ? 1 : op == LOOM_GRAPH_OP_FULL ? loom_graph_call_float(call, "value") : 0;
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
  double v = fill_value(ec->call);
  LOOM_PROPAGATE(loom_graph_value_tensor(loom_graph_call_dtype(ec->call, "dtype"), (int)nd, sh, out));
  for (size_t i = 0; i < out->t.numel; i++) loom_graph_tensor_set_f64(&out->t, i, v);
  return LOOM_OK;
}

/* A one-value symbolic attribute (start, end, step, k): its value ([e] or a plain integer), or its
 * spec default when absent; NULL for a list of another length. Inference, the reference and
 * legalization all read these through it. */
static const loom_sym_expr *sym_attr(loom_sym_ctx *cx, const loom_graph_expr *call, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (!a || a->kind == LOOM_GRAPH_ATTR_INT) return loom_sym_const(cx, loom_graph_call_int(call, name));
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
  const loom_sym_expr *s = sym_attr(ic->cx, ic->call, "start"), *e = sym_attr(ic->cx, ic->call, "end");
  const loom_sym_expr *st = sym_attr(ic->cx, ic->call, "step");
  if (!s || !e || !st) return loom_graph_icx_error(ic, "start, end and step must be single values");
  int64_t c;
  if (!loom_sym_is_const(st, &c) || c <= 0) return loom_graph_icx_error(ic, "step must be a positive constant");
  const loom_sym_expr *len = loom_sym_ceildiv(ic->cx, loom_sym_sub(ic->cx, e, s), st);
  if (!len) return loom_sym_ctx_take_error(ic->cx);
  if (loom_sym_prove_le(ic->cx, loom_sym_const(ic->cx, 0), len) != LOOM_SYM_TRUE)
    len = loom_sym_max(ic->cx, len, loom_sym_const(ic->cx, 0));
  *out = loom_sinfo_tensor(ic->m, loom_graph_call_dtype(ic->call, "dtype"), 1, &len, NULL);
  return LOOM_OK;
}

static loom_status eval_arange(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  if (ec->call->u.call.nargs) return eval_arange_dyn(ec, args, out);
  loom_sym_ctx *cx = loom_graph_module_sym(ec->m);
  int64_t s, e, st;
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(cx, ec->call, "start"), &s));
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(cx, ec->call, "end"), &e));
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(cx, ec->call, "step"), &st));
  int64_t n = e > s ? (e - s + st - 1) / st : 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(loom_graph_call_dtype(ec->call, "dtype"), 1, &n, out));
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
  bool scalar = loom_graph_call_int(ic->call, "scalar") != 0;
  loom_dtype dt = loom_graph_call_dtype(ic->call, "dtype");
  if (!is_int_dtype(dt)) return loom_graph_icx_error(ic, "dtype %s is not an integer type", loom_dtype_name(dt));
  if (scalar && v->n != 1) return loom_graph_icx_error(ic, "a scalar takes one value, got %zu", v->n);
  const loom_sym_expr *n = loom_sym_const(ic->cx, (int64_t)v->n);
  *out = loom_sinfo_tensor(ic->m, dt, scalar ? 0 : 1, scalar ? NULL : &n, NULL);
  return *out ? LOOM_OK : LOOM_OOM();
}

static loom_status eval_sym_tensor(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)args;
  const loom_graph_attr *v = loom_graph_call_attr(ec->call, "values");
  bool scalar = loom_graph_call_int(ec->call, "scalar") != 0;
  int64_t n = (int64_t)v->n;
  LOOM_PROPAGATE(loom_graph_value_tensor(loom_graph_call_dtype(ec->call, "dtype"), scalar ? 0 : 1, &n, out));
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
  int64_t k;
  if (ec->call->u.call.nargs == 2) k = loom_graph_tensor_get_i64(&args[1].t, 0);
  else LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sym_attr(loom_graph_module_sym(ec->m), ec->call, "k"), &k));
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

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

typedef struct fill_params {
  double value;
  loom_dtype t;
  int32_t rank;
} fill_params;
LOOM_TP_GEN_PARAMS(fill_params, 8 + 2 * 4);

/* The value as a literal of t: for integers the one the reference stores (saturated, NaN 0). */
static loom_status gen_fill(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const fill_params *p = params;
  char text[64];
  if (p->t == LOOM_DTYPE_BOOL) snprintf(text, sizeof text, "%s", p->value != 0 ? "true" : "false");
  else if (loom_dtype_is_float(p->t)) {
    snprintf(text, sizeof text, "%.17g", p->value);
    if (!strpbrk(text, ".eEn")) strcat(text, ".0");
  } else {
    uint64_t bits = 0;
    loom_graph_tensor one = {.dtype = p->t, .numel = 1, .data = &bits};
    loom_graph_tensor_set_f64(&one, 0, p->value);
    int64_t v = loom_graph_tensor_get_i64(&one, 0);
    if (p->t == LOOM_DTYPE_U64) snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    else snprintf(text, sizeof text, "%lld", (long long)v);
  }
  return loom_tp_gen_fill(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, text, tp);
}

/* zeros, ones, full */
static loom_status legal_fill(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  double value = fill_value(call);
  if (call->u.call.nargs != 0) return loom_legal_unsupported(call, "with a Shape operand yet");
  if (out->ndim < 0 || out->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "for this rank");
  char name[256];
  snprintf(name, sizeof name, "fill_%s_r%d_%016llx", loom_dtype_name(out->dtype), out->ndim,
           (unsigned long long)loom_hash_bytes(&value, sizeof value));
  fill_params p = {.value = value, .t = out->dtype, .rank = out->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_fill, p, &r->tp);
}

typedef struct tri_params {
  loom_dtype t, kt;
  int32_t rank, upper, krank; /* krank -1: k is a scalar parameter */
} tri_params;
LOOM_TP_GEN_PARAMS(tri_params, 5 * 4);

static loom_status gen_tri(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const tri_params *p = params;
  return loom_tp_gen_tri(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->upper, p->kt, p->krank, tp);
}

/* tril, triu: k is a scalar parameter, or a run-time operand the program reads */
static loom_status legal_tri(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                             loom_graph_legal *r) {
  bool upper = call->u.call.op == LOOM_GRAPH_OP_TRIU;
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim < 2) return loom_legal_unsupported(call, "below rank 2");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  /* a run-time k (operand 1, one integer) is read by the program from its buffer */
  const loom_sinfo *ks = NULL;
  if (call->u.call.nargs > 1) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &ks));
  if (ks && (ks->ndim > 1 || !loom_dtype_is_int(ks->dtype))) return loom_legal_unsupported(call, "for this k operand");
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d%s%s", upper ? "triu" : "tril", loom_dtype_name(x->dtype), x->ndim, ks ? "_k" : "",
           ks ? loom_dtype_name(ks->dtype) : "");
  if (ks && ks->ndim == 1) strncat(name, "v", sizeof name - strlen(name) - 1);
  tri_params p = {.t = x->dtype, .kt = ks ? ks->dtype : LOOM_DTYPE_I64, .rank = x->ndim, .upper = upper, .krank = ks ? ks->ndim : -1};
  LOOM_PROPAGATE(LOOM_LEGAL_PROGRAM(m, name, gen_tri, p, &r->tp));
  if (!ks) r->scalars[r->nscalars++] = sym_attr(cx, call, "k");
  return LOOM_OK;
}

typedef struct arange_params {
  loom_dtype t;
} arange_params;
LOOM_TP_GEN_PARAMS(arange_params, 4);

static loom_status gen_arange(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  return loom_tp_gen_arange(loom_graph_module_arena(m), loom_graph_module_sym(m), name, ((const arange_params *)params)->t, tp);
}

static loom_status legal_arange(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  if (call->u.call.nargs > 0) return loom_legal_runtime_operand(call, "start/limit/delta");
  if (out->ndim != 1) return loom_legal_unsupported(call, "for a result that is not 1-d");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  char name[64];
  snprintf(name, sizeof name, "arange_%s", loom_dtype_name(out->dtype));
  arange_params p = {.t = out->dtype};
  LOOM_PROPAGATE(LOOM_LEGAL_PROGRAM(m, name, gen_arange, p, &r->tp));
  r->scalars[r->nscalars++] = sym_attr(cx, call, "start");
  r->scalars[r->nscalars++] = sym_attr(cx, call, "step");
  return LOOM_OK;
}

typedef struct sym_tensor_params {
  loom_dtype t;
  int32_t n, scalar;
} sym_tensor_params;
LOOM_TP_GEN_PARAMS(sym_tensor_params, 3 * 4);

static loom_status gen_sym_tensor(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const sym_tensor_params *p = params;
  return loom_tp_gen_sym_tensor(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->n, p->scalar, tp);
}

static loom_status legal_sym_tensor(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r) {
  const loom_graph_attr *v = loom_graph_call_attr(call, "values");
  size_t cap = sizeof r->scalars / sizeof r->scalars[0];
  if (!v || v->n > cap) return loom_legal_unsupported(call, "with more values than a program takes scalars");
  bool scalar = out->ndim == 0;
  char name[64];
  snprintf(name, sizeof name, "sym_tensor_%s_n%zu%s", loom_dtype_name(out->dtype), v->n, scalar ? "_s" : "");
  sym_tensor_params p = {.t = out->dtype, .n = (int32_t)v->n, .scalar = scalar};
  LOOM_PROPAGATE(LOOM_LEGAL_PROGRAM(m, name, gen_sym_tensor, p, &r->tp));
  for (size_t k = 0; k < v->n; k++) r->scalars[r->nscalars++] = v->syms[k];
  return LOOM_OK;
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_zeros = {fill_attrs, infer_fill, eval_fill, legal_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_ones = {fill_attrs, infer_fill, eval_fill, legal_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_full = {full_attrs, infer_fill, eval_fill, legal_fill, NULL};
const loom_graph_op_impl loom_graph_op_impl_arange = {arange_attrs, infer_arange, eval_arange, legal_arange, loom_legal_expand_arange};
const loom_graph_op_impl loom_graph_op_impl_sym_tensor = {sym_tensor_attrs, infer_sym_tensor, eval_sym_tensor, legal_sym_tensor, NULL};
const loom_graph_op_impl loom_graph_op_impl_tril = {tri_attrs, infer_tri, eval_tri, legal_tri, NULL};
const loom_graph_op_impl loom_graph_op_impl_triu = {tri_attrs, infer_tri, eval_tri, legal_tri, NULL};

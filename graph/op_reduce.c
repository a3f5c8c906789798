/* op_reduce.c — reductions over axes with keepdims (sum, mean, max, min, prod) and
 * argmax / argmin along one axis. The axes of sum .. prod are the attribute `axes` or a
 * run-time operand 1 (1-D integer tensor of static length n): then the result's rank is
 * known (r with keepdims, r - n without) and its dims are fresh symbols. Legalized to
 * tensorprog/gen_reduce.c (the run-time axes form by legalize_expand.c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

static const loom_graph_attr_spec reduce_attrs[] = {
    {"axes", LOOM_GRAPH_ATTR_SYMS, .required = false}, {"keepdims", LOOM_GRAPH_ATTR_BOOL, .dflt = 0}, {0}};
static const loom_graph_attr_spec arg_attrs[] = {
    {"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {"keepdims", LOOM_GRAPH_ATTR_BOOL, .dflt = 0}, {0}};

/* Which axes are reduced (mask over ndim). For argmax/argmin one axis (default 0... or all
 * flattened when absent, as NumPy: we require it for rank > 1). */
static loom_status reduced_axes(loom_graph_icx *ic, int ndim, bool *mask) {
  loom_graph_op op = ic->call->u.call.op;
  for (int i = 0; i < ndim; i++) mask[i] = false;
  if (op == LOOM_GRAPH_OP_ARGMAX || op == LOOM_GRAPH_OP_ARGMIN) {
    int a;
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), ndim, "axis", &a));
    mask[a] = true;
    return LOOM_OK;
  }
  int64_t axes[8];
  size_t n;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, "axes", axes, 8, &n, &present));
  if (!present) {
    for (int i = 0; i < ndim; i++) mask[i] = true;
    return LOOM_OK;
  }
  for (size_t i = 0; i < n; i++) {
    int a;
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, axes[i], ndim, "axis", &a));
    if (mask[a]) return loom_graph_icx_error(ic, "axis %lld is listed twice", (long long)axes[i]);
    mask[a] = true;
  }
  return LOOM_OK;
}

/* reduce(x, axes) with run-time axes of static length n: with keepdims rank r, each dim 1
 * where x's is 1 and fresh elsewhere; without, rank r - n, all fresh. */
static loom_status infer_reduce_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out) {
  int64_t n;
  if (loom_graph_call_attr(ic->call, "axes"))
    return loom_graph_icx_error(ic, "give the axes either as operand 1 or as attribute 'axes', not both");
  LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "axes", &n));
  if (ic->call->u.call.args[1]->sinfo->ndim != 1) return loom_graph_icx_error(ic, "operand 1 (axes) must be 1-D");
  bool keep = loom_graph_call_int(ic->call, "keepdims") != 0;
  if (n == 0) return loom_graph_icx_error(ic, "operand 1 (axes) is empty (leave it out to reduce every axis)");
  if (n > x->ndim) return loom_graph_icx_error(ic, "operand 1 (axes) has %lld values for rank %d", (long long)n, x->ndim);
  int nd = keep ? x->ndim : x->ndim - (int)n;
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)(nd ? nd : 1));
  if (!d) return LOOM_OOM();
  for (int i = 0; i < nd; i++) {
    int64_t c;
    d[i] = keep && loom_sym_is_const(x->dims[i], &c) && c == 1 ? x->dims[i] : loom_graph_icx_fresh(ic, "red");
    if (!d[i]) return loom_sym_ctx_take_error(ic->cx);
  }
  if (ic->call->u.call.op == LOOM_GRAPH_OP_MEAN && x->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float(x->dtype))
    return loom_graph_icx_error(ic, "operand 0 has dtype %s; mean needs a float dtype", loom_dtype_name(x->dtype));
  *out = loom_sinfo_tensor(ic->m, x->dtype, nd, d, x->device);
  return LOOM_OK;
}

static loom_status infer_reduce(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  loom_graph_op op = ic->call->u.call.op;
  bool arg = op == LOOM_GRAPH_OP_ARGMAX || op == LOOM_GRAPH_OP_ARGMIN;
  if (x->ndim > 8) return loom_graph_icx_error(ic, "rank %d is above 8", x->ndim);
  if (arg && x->ndim == 0) return loom_graph_icx_error(ic, "operand 0 is 0-d");
  if (ic->call->u.call.nargs == 2) {
    if (arg) return loom_graph_icx_error(ic, "takes one operand");
    return infer_reduce_dyn(ic, x, out);
  }
  bool mask[8];
  LOOM_PROPAGATE(reduced_axes(ic, x->ndim, mask));
  bool keep = loom_graph_call_int(ic->call, "keepdims") != 0;
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  int nd = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (!mask[i]) d[nd++] = x->dims[i];
    else if (keep) d[nd++] = loom_sym_const(ic->cx, 1);
  }
  if (op == LOOM_GRAPH_OP_MEAN && x->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float(x->dtype))
    return loom_graph_icx_error(ic, "operand 0 has dtype %s; mean needs a float dtype", loom_dtype_name(x->dtype));
  *out = loom_sinfo_tensor(ic->m, arg ? LOOM_DTYPE_I64 : x->dtype, nd, d, x->device);
  return LOOM_OK;
}

static loom_status eval_reduce(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_graph_op op = ec->call->u.call.op;
  bool arg = op == LOOM_GRAPH_OP_ARGMAX || op == LOOM_GRAPH_OP_ARGMIN;
  bool mask[8];
  if (ec->call->u.call.nargs == 2) {
    /* run-time axes: validated here */
    int64_t axes[8];
    size_t n;
    LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[1].t, 1, "axes", axes, 8, &n));
    LOOM_PROPAGATE(loom_graph_ecx_axes(ec, 1, axes, n, x->ndim, mask));
  } else {
    /* Re-derive the axes with a throwaway inference context (the checks already passed). */
    loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
    LOOM_PROPAGATE(reduced_axes(&ic, x->ndim, mask));
  }
  bool keep = loom_graph_call_int(ec->call, "keepdims") != 0;
  int64_t osh[8], red[8];
  int on = 0;
  size_t rcount = 1;
  for (int i = 0; i < x->ndim; i++) {
    red[i] = mask[i] ? x->shape[i] : 1;
    if (mask[i]) rcount *= (size_t)x->shape[i];
    if (!mask[i]) osh[on++] = x->shape[i];
    else if (keep) osh[on++] = 1;
  }
  if (rcount == 0 && arg) return LOOM_ERROR(INVALID_ARGUMENT, "%s: reduction over an empty axis", ec->op);
  LOOM_PROPAGATE(loom_graph_value_tensor(arg ? LOOM_DTYPE_I64 : x->dtype, on, osh, out));
  /* Iterate over the kept index (full rank, reduced axes 0) then over the reduced ones. */
  int64_t kshape[8], kidx[8] = {0}, ridx[8], strides[8];
  for (int i = 0; i < x->ndim; i++) kshape[i] = mask[i] ? 1 : x->shape[i];
  loom_graph_strides(x->ndim, x->shape, strides);
  if (out->t.numel == 0) return LOOM_OK;
  /* integers exactly: sum and prod wrap to the dtype's width (as NumPy's and the compiled code's
   * integer arithmetic; a double accumulator clamped u8 sums at 255 and rounded 64-bit ones), max
   * and min compare as integers (unsigned ones as unsigned) */
  bool ints = loom_dtype_is_int(x->dtype), uns = ints && loom_dtype_kind_of(x->dtype) != LOOM_DTYPE_KIND_SINT;
  size_t o = 0;
  do {
    double acc = op == LOOM_GRAPH_OP_PROD ? 1 : 0, best = 0;
    uint64_t iacc = op == LOOM_GRAPH_OP_PROD ? 1 : 0;
    int64_t ibest = 0;
    int64_t best_i = 0, pos = 0;
    bool first = true;
    memset(ridx, 0, sizeof ridx);
    if (rcount) do {
        size_t off = 0;
        for (int i = 0; i < x->ndim; i++) off += (size_t)((mask[i] ? ridx[i] : kidx[i]) * strides[i]);
        if (ints) {
          int64_t v = loom_graph_tensor_get_i64(x, off);
          bool gt = uns ? (uint64_t)v > (uint64_t)ibest : v > ibest, lt = uns ? (uint64_t)v < (uint64_t)ibest : v < ibest;
          switch (op) {
          case LOOM_GRAPH_OP_SUM: iacc += (uint64_t)v; break;
          case LOOM_GRAPH_OP_PROD: iacc *= (uint64_t)v; break;
          case LOOM_GRAPH_OP_MAX:
          case LOOM_GRAPH_OP_ARGMAX:
            if (first || gt) { ibest = v; best_i = pos; }
            break;
          default:
            if (first || lt) { ibest = v; best_i = pos; }
            break;
          }
        } else {
          double v = loom_graph_tensor_get_f64(x, off);
          switch (op) {
          case LOOM_GRAPH_OP_SUM:
          case LOOM_GRAPH_OP_MEAN: acc += v; break;
          case LOOM_GRAPH_OP_PROD: acc *= v; break;
          case LOOM_GRAPH_OP_MAX:
          case LOOM_GRAPH_OP_ARGMAX:
            if (first || v > best || (v != v && best == best)) { best = v; best_i = pos; }
            break;
          default:
            if (first || v < best || (v != v && best == best)) { best = v; best_i = pos; }
            break;
          }
        }
        first = false;
        pos++;
      } while (loom_graph_index_next(x->ndim, red, ridx));
    if (op == LOOM_GRAPH_OP_MEAN) acc = rcount ? acc / (double)rcount : NAN;
    if (op == LOOM_GRAPH_OP_MAX || op == LOOM_GRAPH_OP_MIN) acc = best;
    /* max / min over nothing: the identity of the reduction (ONNX, NumPy's `initial`): -inf /
     * +inf, or the dtype's lowest / highest value for integers */
    if (!rcount && (op == LOOM_GRAPH_OP_MAX || op == LOOM_GRAPH_OP_MIN)) {
      if (loom_dtype_is_int(x->dtype)) {
        size_t bits = loom_dtype_size(x->dtype) * 8;
        bool sgn = loom_dtype_kind_of(x->dtype) == LOOM_DTYPE_KIND_SINT;
        uint64_t hi = sgn ? (UINT64_MAX >> (65 - bits)) : bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
        int64_t lo = sgn ? -(int64_t)hi - 1 : 0;
        loom_graph_tensor_set_i64(&out->t, o++, op == LOOM_GRAPH_OP_MAX ? lo : (int64_t)hi); /* u64: wraps to max */
        continue;
      }
      acc = op == LOOM_GRAPH_OP_MAX ? -INFINITY : INFINITY;
    }
    if (arg) loom_graph_tensor_set_i64(&out->t, o++, best_i);
    else if (ints) loom_graph_tensor_set_i64(&out->t, o++, op == LOOM_GRAPH_OP_SUM || op == LOOM_GRAPH_OP_PROD ? (int64_t)iacc : ibest);
    else loom_graph_tensor_set_f64(&out->t, o++, acc);
  } while (loom_graph_index_next(x->ndim, kshape, kidx));
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

typedef struct reduce_entry {
  loom_graph_op op;
  loom_tp_reduce_op kind;
} reduce_entry;

static const reduce_entry reduce_table[] = {
    {LOOM_GRAPH_OP_SUM, LOOM_TP_REDUCE_SUM},   {LOOM_GRAPH_OP_MEAN, LOOM_TP_REDUCE_MEAN},
    {LOOM_GRAPH_OP_MAX, LOOM_TP_REDUCE_MAX},   {LOOM_GRAPH_OP_MIN, LOOM_TP_REDUCE_MIN},
    {LOOM_GRAPH_OP_PROD, LOOM_TP_REDUCE_PROD},
};

bool loom_legal_reduce_kind(loom_graph_op op, loom_tp_reduce_op *kind) {
  for (size_t i = 0; i < sizeof reduce_table / sizeof reduce_table[0]; i++)
    if (reduce_table[i].op == op) return *kind = reduce_table[i].kind, true;
  return false;
}

typedef struct reduce_params {
  loom_tp_reduce_op op;
  loom_dtype t;
  int32_t rank;
  uint32_t axes; /* mask of the reduced axes */
  int32_t keep;
} reduce_params;
LOOM_TP_GEN_PARAMS(reduce_params, 5 * 4);

static loom_status gen_reduce(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const reduce_params *p = params;
  return loom_tp_gen_reduce(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->op, p->t, p->rank, p->axes, p->keep, tp);
}

/* sum, mean, max, min, prod over constant axes */
static loom_status legal_reduce(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  if (call->u.call.nargs > 1) return loom_legal_runtime_operand(call, "axes");
  (void)out;
  loom_tp_reduce_op kind;
  if (!loom_legal_reduce_kind(call->u.call.op, &kind)) return loom_legal_unsupported(call, "yet");
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  unsigned mask = 0;
  const loom_graph_attr *axes = loom_graph_call_attr(call, "axes");
  if (!axes) {
    mask = x->ndim ? (1u << x->ndim) - 1 : 0;
  } else {
    for (size_t i = 0; i < axes->n; i++) {
      int64_t v;
      int a;
      if (!loom_sym_is_const(axes->syms[i], &v) || !loom_legal_norm_axis(v, x->ndim, &a)) return loom_legal_unsupported(call, "for these axes");
      mask |= 1u << a;
    }
  }
  bool keep = loom_graph_call_int(call, "keepdims") != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%x%s", loom_graph_op_name(call->u.call.op), loom_dtype_name(x->dtype),
           x->ndim, mask, keep ? "_k" : "");
  reduce_params p = {.op = kind, .t = x->dtype, .rank = x->ndim, .axes = mask, .keep = keep};
  return LOOM_LEGAL_PROGRAM(m, name, gen_reduce, p, &r->tp);
}

typedef struct argext_params {
  loom_dtype t;
  int32_t rank, axis, is_max, keep;
} argext_params;
LOOM_TP_GEN_PARAMS(argext_params, 5 * 4);

static loom_status gen_argext(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const argext_params *p = params;
  return loom_tp_gen_argext(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->is_max, p->keep,
                            tp);
}

static loom_status legal_argext(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  (void)out;
  bool is_max = call->u.call.op == LOOM_GRAPH_OP_ARGMAX;
  const loom_sinfo *x;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  bool keep = loom_graph_call_int(call, "keepdims") != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d%s", is_max ? "argmax" : "argmin", loom_dtype_name(x->dtype), x->ndim, axis,
           keep ? "_k" : "");
  argext_params p = {.t = x->dtype, .rank = x->ndim, .axis = axis, .is_max = is_max, .keep = keep};
  return LOOM_LEGAL_PROGRAM(m, name, gen_argext, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_sum = {reduce_attrs, infer_reduce, eval_reduce, legal_reduce, loom_legal_expand_reduce};
const loom_graph_op_impl loom_graph_op_impl_mean = {reduce_attrs, infer_reduce, eval_reduce, legal_reduce, loom_legal_expand_reduce};
const loom_graph_op_impl loom_graph_op_impl_max = {reduce_attrs, infer_reduce, eval_reduce, legal_reduce, loom_legal_expand_reduce};
const loom_graph_op_impl loom_graph_op_impl_min = {reduce_attrs, infer_reduce, eval_reduce, legal_reduce, loom_legal_expand_reduce};
const loom_graph_op_impl loom_graph_op_impl_prod = {reduce_attrs, infer_reduce, eval_reduce, legal_reduce, loom_legal_expand_reduce};
const loom_graph_op_impl loom_graph_op_impl_argmax = {arg_attrs, infer_reduce, eval_reduce, legal_argext, NULL};
const loom_graph_op_impl loom_graph_op_impl_argmin = {arg_attrs, infer_reduce, eval_reduce, legal_argext, NULL};

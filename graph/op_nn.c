/* op_nn.c — neural-network operators: softmax, log_softmax, layer_norm, rms_norm. */
#include <math.h>
#include <string.h>

#include "graph/graph_internal.h"

static const loom_graph_attr_spec softmax_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, false}, {NULL, 0, false}};
static const loom_graph_attr_spec norm_attrs[] = {{"eps", LOOM_GRAPH_ATTR_FLOAT, false}, {NULL, 0, false}};

static loom_status float_tensor(loom_graph_icx *ic, size_t i, const loom_sinfo **out) {
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, true, out));
  if ((*out)->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float((*out)->dtype))
    return loom_graph_icx_error(ic, "operand %zu has dtype %s; a float dtype is required", i,
                                loom_dtype_name((*out)->dtype));
  return LOOM_OK;
}

static loom_status infer_softmax(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(float_tensor(ic, 0, &x));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_attr_get_int(ic->call, "axis", -1), x->ndim, "axis", &a));
  *out = x;
  return LOOM_OK;
}

/* Splits `shape` around `axis` into outer * len * inner. */
static void split3(const loom_graph_tensor *t, int axis, size_t *outer, size_t *len, size_t *inner) {
  *outer = *inner = 1;
  for (int i = 0; i < axis; i++) *outer *= (size_t)t->shape[i];
  *len = (size_t)t->shape[axis];
  for (int i = axis + 1; i < t->ndim; i++) *inner *= (size_t)t->shape[i];
}

static loom_status eval_softmax(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_attr_get_int(ec->call, "axis", -1);
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  bool logsm = ec->call->u.call.op == LOOM_GRAPH_OP_LOG_SOFTMAX;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t outer, len, inner;
  split3(x, a, &outer, &len, &inner);
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      size_t base = o * len * inner + in;
      double mx = -INFINITY, sum = 0;
      for (size_t k = 0; k < len; k++) {
        double v = loom_graph_tensor_get_f64(x, base + k * inner);
        if (v > mx) mx = v;
      }
      for (size_t k = 0; k < len; k++) sum += exp(loom_graph_tensor_get_f64(x, base + k * inner) - mx);
      for (size_t k = 0; k < len; k++) {
        double v = loom_graph_tensor_get_f64(x, base + k * inner) - mx;
        loom_graph_tensor_set_f64(&out->t, base + k * inner, logsm ? v - log(sum) : exp(v) / sum);
      }
    }
  return LOOM_OK;
}

/* layer_norm(x, gamma, beta) / rms_norm(x, gamma): over the last axis; gamma and beta have
 * shape (last,). */
static loom_status infer_norm(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *p;
  LOOM_PROPAGATE(float_tensor(ic, 0, &x));
  if (x->ndim < 1) return loom_graph_icx_error(ic, "operand 0 must have rank >= 1");
  for (size_t i = 1; i < ic->call->u.call.nargs; i++) {
    LOOM_PROPAGATE(float_tensor(ic, i, &p));
    if (p->ndim != 1) return loom_graph_icx_error(ic, "operand %zu must have rank 1, got %d", i, p->ndim);
    if (p->dtype != x->dtype)
      return loom_graph_icx_error(ic, "operand %zu has dtype %s, operand 0 has dtype %s", i,
                                  loom_dtype_name(p->dtype), loom_dtype_name(x->dtype));
    LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, i, 0, p->dims[0], 0, x->ndim - 1, x->dims[x->ndim - 1]));
  }
  *out = x;
  return LOOM_OK;
}

static loom_status eval_norm(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *g = &args[1].t;
  bool ln = ec->call->u.call.op == LOOM_GRAPH_OP_LAYER_NORM;
  const loom_graph_tensor *beta = ln ? &args[2].t : NULL;
  double eps = loom_graph_attr_get_float(ec->call, "eps", 1e-5);
  size_t len = (size_t)x->shape[x->ndim - 1];
  for (size_t i = 1; i < ec->call->u.call.nargs; i++)
    if ((size_t)args[i].t.shape[0] != len)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu axis 0 is %lld, operand 0 axis %d is %zu", ec->op, i,
                        (long long)args[i].t.shape[0], x->ndim - 1, len);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t rows = len ? x->numel / len : 0;
  for (size_t r = 0; r < rows; r++) {
    double mean = 0, var = 0;
    for (size_t k = 0; k < len; k++) mean += loom_graph_tensor_get_f64(x, r * len + k);
    mean /= (double)len;
    for (size_t k = 0; k < len; k++) {
      double v = loom_graph_tensor_get_f64(x, r * len + k);
      var += ln ? (v - mean) * (v - mean) : v * v;
    }
    var /= (double)len;
    double inv = 1.0 / sqrt(var + eps);
    for (size_t k = 0; k < len; k++) {
      double v = loom_graph_tensor_get_f64(x, r * len + k);
      double y = ln ? (v - mean) * inv * loom_graph_tensor_get_f64(g, k) + loom_graph_tensor_get_f64(beta, k)
                    : v * inv * loom_graph_tensor_get_f64(g, k);
      loom_graph_tensor_set_f64(&out->t, r * len + k, y);
    }
  }
  return LOOM_OK;
}

const loom_graph_op_impl loom_graph_op_impl_softmax = {softmax_attrs, infer_softmax, eval_softmax, NULL};
const loom_graph_op_impl loom_graph_op_impl_log_softmax = {softmax_attrs, infer_softmax, eval_softmax, NULL};
const loom_graph_op_impl loom_graph_op_impl_layer_norm = {norm_attrs, infer_norm, eval_norm, NULL};
const loom_graph_op_impl loom_graph_op_impl_rms_norm = {norm_attrs, infer_norm, eval_norm, NULL};

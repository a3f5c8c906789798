/* op_shape_dyn.c — the run-time operand forms of the shape ops (op_shape.c holds their records):
 * reshape(x, shape), expand_dims / squeeze(x, axes), strided_slice(x, starts, ends, axes?,
 * steps?), pad(x, pads, value?, axes?) with integer TENSOR operands read when the op runs (ONNX
 * inputs that are graph inputs): the result's rank is known, its dims are fresh symbols. */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/op_shape_internal.h"

/* n fresh dims (1-D result of rank n) in *out. */
static loom_status fresh_dims(loom_graph_icx *ic, int n, const char *what, const loom_sym_expr ***out) {
  if (n > 8) return loom_graph_icx_error(ic, "result rank %d above 8", n);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)(n > 0 ? n : 1));
  if (!d) return LOOM_OOM();
  for (int i = 0; i < n; i++)
    if (!(d[i] = loom_graph_icx_fresh(ic, what))) return loom_graph_shape_sym_err(ic);
  *out = d;
  return LOOM_OK;
}

/* Prints up to 8 values as "[a, b, ...]" into buf. */
static const char *ints_str(char *buf, size_t cap, const int64_t *v, size_t n) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

/* Copies x into a new tensor of shape (nd, sh) (same element count). */
static loom_status copy_as(const loom_graph_tensor *x, int nd, const int64_t *sh, loom_graph_value *out) {
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, nd, sh, out));
  memcpy(out->t.data, x->data, x->numel * loom_dtype_size(x->dtype));
  return LOOM_OK;
}

/* reshape(x, shape): ONNX semantics — 0 copies x's dim at that position (unless allowzero),
 * one -1 is inferred. Rank = the static length of `shape`. */
loom_status loom_graph_infer_reshape_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out) {
  int64_t n;
  if (loom_graph_call_attr(ic->call, "shape"))
    return loom_graph_icx_error(ic, "give the target either as operand 1 or as attribute 'shape', not both");
  LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "shape", &n));
  if (ic->call->u.call.args[1]->sinfo->ndim != 1) return loom_graph_icx_error(ic, "operand 1 (shape) must be 1-D");
  const loom_sym_expr **d;
  LOOM_PROPAGATE(fresh_dims(ic, (int)n, "dim", &d));
  *out = loom_sinfo_tensor(ic->m, x->dtype, (int)n, d, x->device);
  return LOOM_OK;
}

loom_status loom_graph_eval_reshape_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t sh[8], given[8];
  size_t n;
  char b1[200], b2[200];
  LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[1].t, 1, "shape", sh, 8, &n));
  memcpy(given, sh, n * sizeof *sh);
  bool allowzero = loom_graph_call_int(ec->call, "allowzero") != 0;
  int wild = -1;
  int64_t known = 1;
  for (size_t i = 0; i < n; i++) {
    if (sh[i] == 0 && !allowzero) {
      if ((int)i >= x->ndim)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (shape) %s: 0 at position %zu copies an axis operand 0 %s lacks",
                          ec->op, ints_str(b1, sizeof b1, given, n), i, ints_str(b2, sizeof b2, x->shape, (size_t)x->ndim));
      sh[i] = x->shape[i];
    }
    if (sh[i] == -1) {
      if (wild >= 0)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (shape) %s has -1 at positions %d and %zu", ec->op,
                          ints_str(b1, sizeof b1, given, n), wild, i);
      wild = (int)i;
      continue;
    }
    if (sh[i] < 0 || __builtin_mul_overflow(known, sh[i], &known))
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (shape) %s: value %lld at position %zu is not a dim", ec->op,
                        ints_str(b1, sizeof b1, given, n), (long long)sh[i], i);
  }
  if (wild >= 0) {
    if (known == 0 || (int64_t)x->numel % known)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (shape) %s: cannot infer the -1 from operand 0 %s (%zu elements)",
                        ec->op, ints_str(b1, sizeof b1, given, n), ints_str(b2, sizeof b2, x->shape, (size_t)x->ndim), x->numel);
    sh[wild] = (int64_t)x->numel / known;
  } else if (known != (int64_t)x->numel) {
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (shape) %s has %lld elements, operand 0 %s has %zu", ec->op,
                      ints_str(b1, sizeof b1, given, n), (long long)known, ints_str(b2, sizeof b2, x->shape, (size_t)x->ndim),
                      x->numel);
  }
  return copy_as(x, (int)n, sh, out);
}

/* expand_dims(x, axes): rank r + n; squeeze(x, axes): rank r - n (each listed axis must be 1). */
loom_status loom_graph_infer_expand_squeeze_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out) {
  int64_t n;
  if (loom_graph_call_attr(ic->call, "axes"))
    return loom_graph_icx_error(ic, "give the axes either as operand 1 or as attribute 'axes', not both");
  LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "axes", &n));
  if (ic->call->u.call.args[1]->sinfo->ndim != 1) return loom_graph_icx_error(ic, "operand 1 (axes) must be 1-D");
  bool expand = ic->call->u.call.op == LOOM_GRAPH_OP_EXPAND_DIMS;
  if (!expand && n > x->ndim) return loom_graph_icx_error(ic, "operand 1 (axes) has %lld values for rank %d", (long long)n, x->ndim);
  int nd = expand ? x->ndim + (int)n : x->ndim - (int)n;
  const loom_sym_expr **d;
  LOOM_PROPAGATE(fresh_dims(ic, nd, "dim", &d));
  *out = loom_sinfo_tensor(ic->m, x->dtype, nd, d, x->device);
  return LOOM_OK;
}

loom_status loom_graph_eval_expand_squeeze_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axes[8], sh[8];
  size_t n;
  bool mask[16];
  LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[1].t, 1, "axes", axes, 8, &n));
  if (ec->call->u.call.op == LOOM_GRAPH_OP_EXPAND_DIMS) {
    int on = x->ndim + (int)n, k = 0;
    if (on > 8) return LOOM_ERROR(INVALID_ARGUMENT, "%s: result rank %d above 8", ec->op, on);
    LOOM_PROPAGATE(loom_graph_ecx_axes(ec, 1, axes, n, on, mask));
    for (int i = 0; i < on; i++) sh[i] = mask[i] ? 1 : x->shape[k++];
    return copy_as(x, on, sh, out);
  }
  LOOM_PROPAGATE(loom_graph_ecx_axes(ec, 1, axes, n, x->ndim, mask));
  int k = 0;
  for (int i = 0; i < x->ndim; i++) {
    if (!mask[i]) sh[k++] = x->shape[i];
    else if (x->shape[i] != 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 0 axis %d is %lld, not 1 (operand 1 lists it)", ec->op, i,
                        (long long)x->shape[i]);
  }
  return copy_as(x, k, sh, out);
}

/* strided_slice(x, starts, ends, axes?, steps?) with ONNX Slice semantics: negative bounds
 * count from the end, bounds clamp, steps may be negative (not 0). Rank r, fresh dims. */
loom_status loom_graph_infer_slice_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out) {
  static const char *what[4] = {"starts", "ends", "axes", "steps"};
  size_t na = ic->call->u.call.nargs;
  if (na < 3) return loom_graph_icx_error(ic, "takes operands x, starts, ends (axes, steps optional)");
  if (loom_graph_call_attr(ic->call, "begin") || loom_graph_call_attr(ic->call, "end") ||
      loom_graph_call_attr(ic->call, "axes") || loom_graph_call_attr(ic->call, "strides"))
    return loom_graph_icx_error(ic, "give the bounds either as operands or as attributes, not both");
  int64_t n0 = 0;
  for (size_t i = 1; i < na; i++) {
    int64_t n;
    LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, i, what[i - 1], &n));
    if (ic->call->u.call.args[i]->sinfo->ndim != 1) return loom_graph_icx_error(ic, "operand %zu (%s) must be 1-D", i, what[i - 1]);
    if (i == 1) n0 = n;
    else if (n != n0)
      return loom_graph_icx_error(ic, "operand %zu (%s) has %lld values, operand 1 (starts) has %lld", i, what[i - 1],
                                  (long long)n, (long long)n0);
  }
  if (n0 > x->ndim) return loom_graph_icx_error(ic, "operand 1 (starts) has %lld values for rank %d", (long long)n0, x->ndim);
  const loom_sym_expr **d;
  LOOM_PROPAGATE(fresh_dims(ic, x->ndim, "sl", &d));
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

/* out = the elements of x at start[k] + i_k * step[k] for i_k < sh[k] on every axis (a slice with
 * bounds already clamped; steps may be negative). */
loom_status loom_graph_take_strided(const loom_graph_tensor *x, const int64_t *start, const int64_t *step,
                                    const int64_t *sh, loom_graph_value *out) {
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  if (!out->t.numel) return LOOM_OK;
  int64_t idx[8] = {0}, str[8];
  loom_graph_strides(x->ndim, x->shape, str);
  size_t o = 0, es = loom_dtype_size(x->dtype);
  do {
    int64_t off = 0;
    for (int k = 0; k < x->ndim; k++) off += (start[k] + idx[k] * step[k]) * str[k];
    memcpy((char *)out->t.data + o * es, (const char *)x->data + (size_t)off * es, es);
    o++;
  } while (loom_graph_index_next(x->ndim, sh, idx));
  return LOOM_OK;
}

int64_t loom_graph_slice_axis(int64_t dim, int64_t *lo, int64_t hi, int64_t s) {
  int64_t a = s > 0 ? 0 : -1, b = s > 0 ? dim : dim - 1, l = *lo;
  l = l < a ? a : l > b ? b : l;
  hi = hi < a ? a : hi > b ? b : hi;
  *lo = l;
  if (s > 0) return hi > l ? (hi - l - 1) / s + 1 : 0;
  return l > hi ? (l - hi - 1) / -s + 1 : 0;
}

loom_status loom_graph_eval_slice_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  size_t na = ec->call->u.call.nargs, n, k;
  int64_t st[8], en[8], ax[8], sp[8];
  LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[1].t, 1, "starts", st, 8, &n));
  LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[2].t, 2, "ends", en, 8, &k));
  for (size_t i = 0; i < n; i++) ax[i] = (int64_t)i, sp[i] = 1;
  if (na > 3) LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[3].t, 3, "axes", ax, 8, &k));
  if (na > 4) LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[4].t, 4, "steps", sp, 8, &k));
  bool mask[8];
  LOOM_PROPAGATE(loom_graph_ecx_axes(ec, 3, ax, n, x->ndim, mask));
  int64_t start[8], step[8], sh[8];
  for (int i = 0; i < x->ndim; i++) start[i] = 0, step[i] = 1, sh[i] = x->shape[i];
  for (size_t i = 0; i < n; i++) {
    int a = (int)(ax[i] < 0 ? ax[i] + x->ndim : ax[i]);
    int64_t dim = x->shape[a], lo = st[i], hi = en[i], s = sp[i];
    if (s == 0) return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 4 (steps) value %zu is 0 (axis %d)", ec->op, i, a);
    if (lo < 0) lo = lo < -dim ? -dim - 1 : lo + dim; /* -dim - 1: below any index, as ONNX clamps */
    if (hi < 0) hi = hi < -dim ? -dim - 1 : hi + dim;
    sh[a] = loom_graph_slice_axis(dim, &lo, hi, s);
    start[a] = lo, step[a] = s;
  }
  return loom_graph_take_strided(x, start, step, sh, out);
}

/* pad(x, pads, value?, axes?): constant mode; pads = [before.., after..] over `axes` (all
 * when absent), negative entries crop; value a scalar of x's dtype (else attr value). */
loom_status loom_graph_infer_pad_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out) {
  size_t na = ic->call->u.call.nargs;
  int64_t np, nax = x->ndim;
  if (loom_graph_call_attr(ic->call, "pads"))
    return loom_graph_icx_error(ic, "give the pads either as operand 1 or as attribute 'pads', not both");
  LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "pads", &np));
  if (na > 2) {
    const loom_sinfo *v;
    int64_t len;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &v));
    if (v->dtype != x->dtype)
      return loom_graph_icx_error(ic, "operand 2 (value) has dtype %s, operand 0 has %s", loom_dtype_name(v->dtype),
                                  loom_dtype_name(x->dtype));
    if (v->ndim > 1 || (v->ndim == 1 && (!loom_sym_is_const(v->dims[0], &len) || len != 1)))
      return loom_graph_icx_error(ic, "operand 2 (value) must be a scalar");
  }
  if (na > 3) LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 3, "axes", &nax));
  if (np != 2 * nax)
    return loom_graph_icx_error(ic, "operand 1 (pads) has %lld values for %lld axes (before..., after...)", (long long)np,
                                (long long)nax);
  const loom_sym_expr **d;
  LOOM_PROPAGATE(fresh_dims(ic, x->ndim, "pad", &d));
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

loom_status loom_graph_eval_pad_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  size_t na = ec->call->u.call.nargs, np, nax = (size_t)x->ndim;
  int64_t p[16], ax[8], lo[8] = {0}, sh[8];
  bool mask[8];
  LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[1].t, 1, "pads", p, 16, &np));
  for (int i = 0; i < x->ndim; i++) ax[i] = i;
  if (na > 3) LOOM_PROPAGATE(loom_graph_ecx_int_operand(ec, &args[3].t, 3, "axes", ax, 8, &nax));
  LOOM_PROPAGATE(loom_graph_ecx_axes(ec, 3, ax, nax, x->ndim, mask));
  for (int i = 0; i < x->ndim; i++) sh[i] = x->shape[i];
  for (size_t i = 0; i < nax; i++) {
    int a = (int)(ax[i] < 0 ? ax[i] + x->ndim : ax[i]);
    lo[a] = p[i];
    sh[a] = x->shape[a] + p[i] + p[nax + i];
    if (sh[a] < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (pads) %lld before and %lld after axis %d of size %lld leave %lld",
                        ec->op, (long long)p[i], (long long)p[nax + i], a, (long long)x->shape[a], (long long)sh[a]);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  size_t es = loom_dtype_size(x->dtype);
  char val[16] = {0};
  if (na > 2) memcpy(val, args[2].t.data, es);
  else {
    loom_graph_tensor vt = {.dtype = x->dtype, .ndim = 0, .numel = 1, .data = val};
    loom_graph_tensor_set_f64(&vt, 0, loom_graph_call_float(ec->call, "value"));
  }
  if (!out->t.numel) return LOOM_OK;
  int64_t idx[8] = {0}, str[8];
  loom_graph_strides(x->ndim, x->shape, str);
  size_t o = 0;
  do {
    int64_t off = 0;
    bool in = true;
    for (int i = 0; i < x->ndim && in; i++) {
      int64_t j = idx[i] - lo[i];
      in = j >= 0 && j < x->shape[i];
      off += j * str[i];
    }
    memcpy((char *)out->t.data + o * es, in ? (const char *)x->data + (size_t)off * es : val, es);
    o++;
  } while (loom_graph_index_next(x->ndim, sh, idx));
  return LOOM_OK;
}

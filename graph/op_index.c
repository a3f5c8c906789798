/* op_index.c — indexing: take (gather along an axis) and nonzero (data-dependent count,
 * a fresh symbol). */
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"

static const loom_graph_attr_spec take_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, false}, {NULL, 0, false}};
static const loom_graph_attr_spec no_attrs[] = {{NULL, 0, false}};

/* take(x, idx, axis): x.shape[:axis] + idx.shape + x.shape[axis+1:]. */
static loom_status infer_take(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *idx;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &idx));
  if (idx->dtype != LOOM_DTYPE_I32 && idx->dtype != LOOM_DTYPE_I64)
    return loom_graph_icx_error(ic, "operand 1 (indices) has dtype %s, expected i32 or i64",
                                idx->dtype == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(idx->dtype));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_attr_get_int(ic->call, "axis", 0), x->ndim, "axis", &a));
  int nd = x->ndim - 1 + idx->ndim;
  if (nd > 8) return loom_graph_icx_error(ic, "result rank %d above 8", nd);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)nd);
  if (!d) return LOOM_OOM();
  int k = 0;
  for (int i = 0; i < a; i++) d[k++] = x->dims[i];
  for (int i = 0; i < idx->ndim; i++) d[k++] = idx->dims[i];
  for (int i = a + 1; i < x->ndim; i++) d[k++] = x->dims[i];
  *out = loom_sinfo_tensor(ic->m, x->dtype, nd, d, x->device);
  return LOOM_OK;
}

static loom_status eval_take(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *ix = &args[1].t;
  int64_t axis = loom_graph_attr_get_int(ec->call, "axis", 0);
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  int64_t sh[8];
  int k = 0;
  for (int i = 0; i < a; i++) sh[k++] = x->shape[i];
  for (int i = 0; i < ix->ndim; i++) sh[k++] = ix->shape[i];
  for (int i = a + 1; i < x->ndim; i++) sh[k++] = x->shape[i];
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, k, sh, out));
  size_t outer = 1, inner = 1, es = loom_dtype_size(x->dtype);
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  int64_t len = x->shape[a];
  char *dst = out->t.data;
  for (size_t o = 0; o < outer; o++)
    for (size_t j = 0; j < ix->numel; j++) {
      int64_t i = loom_graph_tensor_get_i64(ix, j);
      if (i < 0) i += len;
      if (i < 0 || i >= len)
        return LOOM_ERROR(OUT_OF_RANGE, "take: index %lld at position %zu is out of range for axis %d of size %lld",
                          (long long)loom_graph_tensor_get_i64(ix, j), j, a, (long long)len);
      memcpy(dst, (const char *)x->data + ((o * (size_t)len + (size_t)i) * inner) * es, inner * es);
      dst += inner * es;
    }
  return LOOM_OK;
}

/* nonzero(x): (ndim, nnz) i64, nnz a fresh symbol (0 <= nnz <= numel holds at run time). */
static loom_status infer_nonzero(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  if (x->ndim < 0) return loom_graph_icx_error(ic, "operand 0 needs a known rank");
  const loom_sym_expr *d[2] = {loom_sym_const(ic->cx, x->ndim), loom_graph_icx_fresh(ic, "nnz")};
  if (!d[0] || !d[1]) return loom_sym_ctx_take_error(ic->cx);
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, 2, d, x->device);
  return LOOM_OK;
}

static loom_status eval_nonzero(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)ec;
  const loom_graph_tensor *x = &args[0].t;
  size_t nnz = 0;
  for (size_t i = 0; i < x->numel; i++) nnz += loom_graph_tensor_get_f64(x, i) != 0;
  int64_t sh[2] = {x->ndim, (int64_t)nnz};
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, sh, out));
  int64_t idx[8] = {0};
  size_t j = 0, i = 0;
  if (!x->numel) return LOOM_OK;
  do {
    if (loom_graph_tensor_get_f64(x, i) != 0) {
      for (int k = 0; k < x->ndim; k++) ((int64_t *)out->t.data)[(size_t)k * nnz + j] = idx[k];
      j++;
    }
    i++;
  } while (loom_graph_index_next(x->ndim, x->shape, idx));
  return LOOM_OK;
}

/* unique(x): the sorted distinct values of x (flattened), (u,) with u a fresh symbol. */
static loom_status infer_unique(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  const loom_sym_expr *u = loom_graph_icx_fresh(ic, "uniq");
  if (!u) return loom_sym_ctx_take_error(ic->cx);
  *out = loom_sinfo_tensor(ic->m, x->dtype, 1, &u, x->device);
  return LOOM_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static loom_status eval_unique(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)ec;
  const loom_graph_tensor *x = &args[0].t;
  double *v = loom_graph_tensor_to_f64(x);
  if (!v) return LOOM_OOM();
  qsort(v, x->numel, sizeof *v, cmp_double);
  size_t n = 0;
  for (size_t i = 0; i < x->numel; i++)
    if (!n || v[i] != v[n - 1]) v[n++] = v[i];
  int64_t sh = (int64_t)n;
  loom_status st = loom_graph_value_tensor(x->dtype, 1, &sh, out);
  for (size_t i = 0; !st && i < n; i++) loom_graph_tensor_set_f64(&out->t, i, v[i]);
  free(v);
  return st;
}

/* ---- gather_elements / scatter_elements ------------------------------------------------- */

static const loom_graph_attr_spec one_hot_attrs[] = {{"depth", LOOM_GRAPH_ATTR_SYMS, true},
                                                     {"on_value", LOOM_GRAPH_ATTR_FLOAT, false},
                                                     {"off_value", LOOM_GRAPH_ATTR_FLOAT, false},
                                                     {"dtype", LOOM_GRAPH_ATTR_DTYPE, false},
                                                     {NULL, 0, false}};
static const loom_graph_attr_spec cumsum_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, false},
                                                    {"exclusive", LOOM_GRAPH_ATTR_BOOL, false},
                                                    {"reverse", LOOM_GRAPH_ATTR_BOOL, false},
                                                    {NULL, 0, false}};

static loom_status index_dtype(loom_graph_icx *ic, size_t i, const loom_sinfo *s) {
  if (s->dtype != LOOM_DTYPE_I32 && s->dtype != LOOM_DTYPE_I64)
    return loom_graph_icx_error(ic, "operand %zu (indices) has dtype %s, expected i32 or i64", i,
                                s->dtype == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(s->dtype));
  return LOOM_OK;
}

/* gather: result has the indices' shape; scatter: the data's. Ranks must agree; on the other
 * axes the indices may not exceed the data (left to the run-time check). */
static loom_status infer_elements(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *idx;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &idx));
  LOOM_PROPAGATE(index_dtype(ic, 1, idx));
  if (idx->ndim != x->ndim) return loom_graph_icx_error(ic, "operand 1 has rank %d, operand 0 has rank %d", idx->ndim, x->ndim);
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_attr_get_int(ic->call, "axis", 0), x->ndim, "axis", &a));
  if (ic->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ELEMENTS) {
    const loom_sinfo *u;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &u));
    if (u->ndim != idx->ndim) return loom_graph_icx_error(ic, "operand 2 has rank %d, operand 1 has rank %d", u->ndim, idx->ndim);
    if (u->dtype != x->dtype) return loom_graph_icx_error(ic, "operand 2 has dtype %s, operand 0 has %s", loom_dtype_name(u->dtype), loom_dtype_name(x->dtype));
    for (int i = 0; i < u->ndim; i++) LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, i, u->dims[i], 1, i, idx->dims[i]));
    *out = x;
    return LOOM_OK;
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, idx->ndim, idx->dims, x->device);
  return LOOM_OK;
}

static loom_status eval_elements(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *ix = &args[1].t;
  bool scatter = ec->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ELEMENTS;
  int64_t axis = loom_graph_attr_get_int(ec->call, "axis", 0);
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  for (int i = 0; i < x->ndim; i++)
    if (i != a && ix->shape[i] > x->shape[i])
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 axis %d is %lld, above operand 0's %lld", ec->op, i, (long long)ix->shape[i], (long long)x->shape[i]);
  if (scatter) {
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
    memcpy(out->t.data, x->data, x->numel * loom_dtype_size(x->dtype));
  } else {
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, ix->ndim, ix->shape, out));
  }
  if (!ix->numel) return LOOM_OK;
  int64_t idx[8] = {0}, st[8];
  loom_graph_strides(x->ndim, x->shape, st);
  size_t i = 0, es = loom_dtype_size(x->dtype);
  do {
    int64_t j = loom_graph_tensor_get_i64(ix, i);
    if (j < 0) j += x->shape[a];
    if (j < 0 || j >= x->shape[a])
      return LOOM_ERROR(OUT_OF_RANGE, "%s: index %lld at position %zu is out of range for axis %d of size %lld", ec->op,
                        (long long)loom_graph_tensor_get_i64(ix, i), i, a, (long long)x->shape[a]);
    size_t off = 0;
    for (int k = 0; k < x->ndim; k++) off += (size_t)((k == a ? j : idx[k]) * st[k]);
    if (scatter) memcpy((char *)out->t.data + off * es, (const char *)args[2].t.data + i * es, es);
    else memcpy((char *)out->t.data + i * es, (const char *)x->data + off * es, es);
    i++;
  } while (loom_graph_index_next(ix->ndim, ix->shape, idx));
  return LOOM_OK;
}

/* one_hot(indices, depth=[d]) -> indices.shape + (d,) */
static loom_status infer_one_hot(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *ix;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &ix));
  LOOM_PROPAGATE(index_dtype(ic, 0, ix));
  const loom_graph_attr *dp = loom_graph_call_attr(ic->call, "depth"), *dt = loom_graph_call_attr(ic->call, "dtype");
  if (dp->n != 1) return loom_graph_icx_error(ic, "depth must be one value");
  if (ix->ndim >= 8) return loom_graph_icx_error(ic, "result rank above 8");
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)ix->ndim + 1);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < ix->ndim; i++) d[i] = ix->dims[i];
  d[ix->ndim] = dp->syms[0];
  *out = loom_sinfo_tensor(ic->m, dt ? dt->dtype : LOOM_DTYPE_F32, ix->ndim + 1, d, ix->device);
  return LOOM_OK;
}

static loom_status eval_one_hot(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *ix = &args[0].t;
  const loom_graph_attr *dp = loom_graph_call_attr(ec->call, "depth"), *dt = loom_graph_call_attr(ec->call, "dtype");
  int64_t depth, sh[8];
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, dp->syms[0], &depth));
  if (depth < 0) return LOOM_ERROR(OUT_OF_RANGE, "one_hot: depth evaluates to %lld", (long long)depth);
  memcpy(sh, ix->shape, sizeof sh);
  sh[ix->ndim] = depth;
  double on = loom_graph_attr_get_float(ec->call, "on_value", 1), off = loom_graph_attr_get_float(ec->call, "off_value", 0);
  LOOM_PROPAGATE(loom_graph_value_tensor(dt ? dt->dtype : LOOM_DTYPE_F32, ix->ndim + 1, sh, out));
  for (size_t i = 0; i < ix->numel; i++) {
    int64_t j = loom_graph_tensor_get_i64(ix, i);
    if (j < 0) j += depth;
    for (int64_t k = 0; k < depth; k++) loom_graph_tensor_set_f64(&out->t, i * (size_t)depth + (size_t)k, k == j ? on : off);
  }
  return LOOM_OK;
}

/* cumsum(x) along attr `axis`, or cumsum(x, axis) with a run-time axis (one integer, checked
 * when it runs); `reverse` sums from the end. The result has x's shape. */
static loom_status infer_cumsum(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (ic->call->u.call.nargs == 2) {
    int64_t n;
    if (loom_graph_call_attr(ic->call, "axis"))
      return loom_graph_icx_error(ic, "give the axis either as operand 1 or as attribute 'axis', not both");
    LOOM_PROPAGATE(loom_graph_icx_int_operand(ic, 1, "axis", &n));
    if (n != 1) return loom_graph_icx_error(ic, "operand 1 (axis) has %lld values, expected one", (long long)n);
    if (x->ndim == 0) return loom_graph_icx_error(ic, "operand 0 is 0-d");
    *out = x;
    return LOOM_OK;
  }
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_attr_get_int(ic->call, "axis", 0), x->ndim, "axis", &a));
  *out = x;
  return LOOM_OK;
}

static loom_status eval_cumsum(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_attr_get_int(ec->call, "axis", 0);
  if (ec->call->u.call.nargs == 2) {
    axis = loom_graph_tensor_get_i64(&args[1].t, 0);
    if (axis < -x->ndim || axis >= x->ndim)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (axis) value %lld is out of range for rank %d", ec->op,
                        (long long)axis, x->ndim);
  }
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  bool excl = loom_graph_attr_get_int(ec->call, "exclusive", 0) != 0;
  bool rev = loom_graph_attr_get_int(ec->call, "reverse", 0) != 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t outer = 1, inner = 1, len = (size_t)x->shape[a];
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  bool ints = loom_dtype_is_int(x->dtype);
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      double acc = 0;
      int64_t iacc = 0;
      for (size_t k = 0; k < len; k++) {
        size_t e = (o * len + (rev ? len - 1 - k : k)) * inner + in;
        if (ints) {
          int64_t v = loom_graph_tensor_get_i64(x, e);
          if (!excl) iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
          loom_graph_tensor_set_i64(&out->t, e, iacc);
          if (excl) iacc = (int64_t)((uint64_t)iacc + (uint64_t)v);
        } else {
          double v = loom_graph_tensor_get_f64(x, e);
          if (!excl) acc += v;
          loom_graph_tensor_set_f64(&out->t, e, acc);
          if (excl) acc += v;
        }
      }
    }
  return LOOM_OK;
}

const loom_graph_op_impl loom_graph_op_impl_take = {take_attrs, infer_take, eval_take, NULL};
const loom_graph_op_impl loom_graph_op_impl_nonzero = {no_attrs, infer_nonzero, eval_nonzero, NULL};
const loom_graph_op_impl loom_graph_op_impl_gather_elements = {take_attrs, infer_elements, eval_elements, NULL};
const loom_graph_op_impl loom_graph_op_impl_scatter_elements = {take_attrs, infer_elements, eval_elements, NULL};
const loom_graph_op_impl loom_graph_op_impl_one_hot = {one_hot_attrs, infer_one_hot, eval_one_hot, NULL};
const loom_graph_op_impl loom_graph_op_impl_cumsum = {cumsum_attrs, infer_cumsum, eval_cumsum, NULL};
const loom_graph_op_impl loom_graph_op_impl_unique = {no_attrs, infer_unique, eval_unique, NULL};

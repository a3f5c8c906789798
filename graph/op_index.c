/* op_index.c — indexing: take (gather along an axis) and nonzero (data-dependent count,
 * a fresh symbol). */
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

const loom_graph_op_impl loom_graph_op_impl_take = {take_attrs, infer_take, eval_take, NULL};
const loom_graph_op_impl loom_graph_op_impl_nonzero = {no_attrs, infer_nonzero, eval_nonzero, NULL};

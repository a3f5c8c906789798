/* tensor.c — host tensors and runtime values of the reference interpreter: allocation,
 * element access through double / int64, multi-index and broadcasting helpers. */
#include <stdlib.h>
#include <string.h>

#include "base/lowp.h"
#include "graph/graph_internal.h"

loom_status loom_graph_tensor_alloc(loom_dtype dt, int ndim, const int64_t *shape, loom_graph_tensor *out) {
  memset(out, 0, sizeof *out);
  if (ndim < 0 || ndim > 8) return LOOM_ERROR(UNIMPLEMENTED, "tensors of rank %d are not supported (at most 8)", ndim);
  size_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0) return LOOM_ERROR(OUT_OF_RANGE, "negative dimension %lld", (long long)shape[i]);
    if (!loom_size_mul(n, (size_t)shape[i], &n)) return LOOM_ERROR(OUT_OF_RANGE, "tensor too large");
    out->shape[i] = shape[i];
  }
  size_t bytes;
  if (!loom_size_mul(n, loom_dtype_size(dt), &bytes) || bytes > ((size_t)1 << 36))
    return LOOM_ERROR(OUT_OF_RANGE, "tensor too large");
  out->data = calloc(bytes ? bytes : 1, 1);
  if (!out->data) return LOOM_OOM();
  out->dtype = dt;
  out->ndim = ndim;
  out->numel = n;
  return LOOM_OK;
}

void loom_graph_tensor_free(loom_graph_tensor *t) {
  if (t->data && t->dtype == LOOM_DTYPE_STRING)
    for (size_t i = 0; i < t->numel; i++) free((void *)((loom_str *)t->data)[i].data);
  free(t->data);
  t->data = NULL;
}

void loom_graph_value_free(loom_graph_value *v) {
  if (!v) return;
  if (v->kind == LOOM_SINFO_TENSOR) loom_graph_tensor_free(&v->t);
  free(v->dims);
  if (v->items) {
    for (size_t i = 0; i < v->n; i++) loom_graph_value_free(&v->items[i]);
    free(v->items);
  }
  memset(v, 0, sizeof *v);
}

loom_status loom_graph_value_tensor(loom_dtype dt, int ndim, const int64_t *shape, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_TENSOR;
  return loom_graph_tensor_alloc(dt, ndim, shape, &out->t);
}

loom_status loom_graph_value_copy(const loom_graph_value *v, loom_graph_value *out) {
  *out = *v;
  out->dims = NULL;
  out->items = NULL;
  out->t.data = NULL;
  if (v->kind == LOOM_SINFO_TENSOR) {
    LOOM_PROPAGATE(loom_graph_tensor_alloc(v->t.dtype, v->t.ndim, v->t.shape, &out->t));
    if (v->t.dtype == LOOM_DTYPE_STRING) LOOM_PROPAGATE(loom_graph_tensor_copy_strs(&out->t, 0, v->t.data, v->t.numel));
    else memcpy(out->t.data, v->t.data, v->t.numel * loom_dtype_size(v->t.dtype));
  }
  if (v->dims) {
    out->dims = malloc((v->n ? v->n : 1) * sizeof *out->dims);
    if (!out->dims) return LOOM_OOM();
    memcpy(out->dims, v->dims, v->n * sizeof *out->dims);
  }
  if (v->items) {
    out->items = calloc(v->n ? v->n : 1, sizeof *out->items);
    if (!out->items) return LOOM_OOM();
    for (size_t i = 0; i < v->n; i++) LOOM_PROPAGATE(loom_graph_value_copy(&v->items[i], &out->items[i]));
  }
  return LOOM_OK;
}

/* ---- string elements ------------------------------------------------------------------- */

loom_status loom_graph_tensor_set_str(loom_graph_tensor *t, size_t i, const char *bytes, size_t len) {
  loom_str *e = &((loom_str *)t->data)[i];
  char *copy = NULL;
  if (len) {
    if (len > ((size_t)1 << 36)) return LOOM_ERROR(OUT_OF_RANGE, "string element %zu of %zu bytes is too long", i, len);
    copy = malloc(len + 1);
    if (!copy) return LOOM_OOM();
    memcpy(copy, bytes, len);
    copy[len] = 0;
  }
  free((void *)e->data);
  *e = (loom_str){copy, len};
  return LOOM_OK;
}

loom_str loom_graph_tensor_get_str(const loom_graph_tensor *t, size_t i) {
  loom_str e;
  memcpy(&e, (const char *)t->data + i * sizeof e, sizeof e); /* constants may lie at any alignment */
  return e;
}

loom_status loom_graph_tensor_copy_strs(loom_graph_tensor *t, size_t at, const void *src, size_t n) {
  for (size_t i = 0; i < n; i++) {
    loom_str e;
    memcpy(&e, (const char *)src + i * sizeof e, sizeof e);
    LOOM_PROPAGATE(loom_graph_tensor_set_str(t, at + i, e.data, (size_t)e.len));
  }
  return LOOM_OK;
}

bool loom_graph_str_equal(loom_str a, loom_str b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.data, b.data, (size_t)a.len) == 0);
}

/* The element at p, of C type T, read bytewise: constants may lie at any alignment (an imported
 * weight used where it lies in its file, graph.h), and a copy of a few bytes compiles to one load. */
#define LOADER(T)                                                                                                   \
  static inline T load_##T(const void *p) {                                                                        \
    T v;                                                                                                             \
    memcpy(&v, p, sizeof v);                                                                                         \
    return v;                                                                                                        \
  }
LOADER(int16_t)
LOADER(int32_t)
LOADER(int64_t)
LOADER(uint16_t)
LOADER(uint32_t)
LOADER(uint64_t)
LOADER(float)
LOADER(double)
#define LOAD(T, p) load_##T(p)

double loom_graph_tensor_get_f64(const loom_graph_tensor *t, size_t i) {
  const void *p = (const char *)t->data + i * loom_dtype_size(t->dtype);
  switch (t->dtype) {
  case LOOM_DTYPE_BOOL: return *(const uint8_t *)p != 0;
  case LOOM_DTYPE_I8: return *(const int8_t *)p;
  case LOOM_DTYPE_I16: return LOAD(int16_t, p);
  case LOOM_DTYPE_I32: return LOAD(int32_t, p);
  case LOOM_DTYPE_I64: return (double)LOAD(int64_t, p);
  case LOOM_DTYPE_U8: return *(const uint8_t *)p;
  case LOOM_DTYPE_U16: return LOAD(uint16_t, p);
  case LOOM_DTYPE_U32: return LOAD(uint32_t, p);
  case LOOM_DTYPE_U64: return (double)LOAD(uint64_t, p);
  case LOOM_DTYPE_F16: return loom_f16_to_f32(LOAD(uint16_t, p));
  case LOOM_DTYPE_BF16: return loom_bf16_to_f32(LOAD(uint16_t, p));
  case LOOM_DTYPE_F32: return LOAD(float, p);
  case LOOM_DTYPE_F64: return LOAD(double, p);
  default: return loom_dtype_is_lowp(t->dtype) ? loom_lowp_to_f64(t->dtype, *(const uint8_t *)p) : 0;
  }
}

int64_t loom_graph_tensor_get_i64(const loom_graph_tensor *t, size_t i) {
  const void *p = (const char *)t->data + i * loom_dtype_size(t->dtype);
  switch (t->dtype) {
  case LOOM_DTYPE_I64: return LOAD(int64_t, p);
  case LOOM_DTYPE_U64: return (int64_t)LOAD(uint64_t, p);
  default: {
    double d = loom_graph_tensor_get_f64(t, i);
    if (d != d) return 0;
    if (d >= 9.2e18) return INT64_MAX;
    if (d <= -9.2e18) return INT64_MIN;
    return (int64_t)d;
  }
  }
}

/* Float to integer conversions saturate (and NaN is 0) so the reference never hits UB. */
static int64_t sat(double d, double lo, double hi) {
  if (d != d) return 0;
  if (d < lo) return (int64_t)lo;
  if (d > hi) return (int64_t)hi;
  return (int64_t)d;
}

void loom_graph_tensor_set_f64(loom_graph_tensor *t, size_t i, double v) {
  void *p = (char *)t->data + i * loom_dtype_size(t->dtype);
  switch (t->dtype) {
  case LOOM_DTYPE_BOOL: *(uint8_t *)p = v != 0; break;
  case LOOM_DTYPE_I8: *(int8_t *)p = (int8_t)sat(v, -128, 127); break;
  case LOOM_DTYPE_I16: *(int16_t *)p = (int16_t)sat(v, -32768, 32767); break;
  case LOOM_DTYPE_I32: *(int32_t *)p = (int32_t)sat(v, -2147483648.0, 2147483647.0); break;
  case LOOM_DTYPE_I64: *(int64_t *)p = v != v ? 0 : v <= -9223372036854775808.0 ? INT64_MIN : v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)v; break;
  case LOOM_DTYPE_U8: *(uint8_t *)p = (uint8_t)sat(v, 0, 255); break;
  case LOOM_DTYPE_U16: *(uint16_t *)p = (uint16_t)sat(v, 0, 65535); break;
  case LOOM_DTYPE_U32: *(uint32_t *)p = (uint32_t)sat(v, 0, 4294967295.0); break;
  case LOOM_DTYPE_U64: *(uint64_t *)p = v != v || v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)v; break;
  case LOOM_DTYPE_F16: *(uint16_t *)p = loom_f32_to_f16((float)v); break;
  case LOOM_DTYPE_BF16: *(uint16_t *)p = loom_f32_to_bf16((float)v); break;
  case LOOM_DTYPE_F32: *(float *)p = (float)v; break;
  case LOOM_DTYPE_F64: *(double *)p = v; break;
  default: /* lowp: float8 saturates (ONNX Cast's default); cast with saturate=false uses lowp.h itself */
    if (loom_dtype_is_lowp(t->dtype)) *(uint8_t *)p = loom_lowp_from_f64(t->dtype, v, true);
    break;
  }
}

void loom_graph_tensor_set_i64(loom_graph_tensor *t, size_t i, int64_t v) {
  void *p = (char *)t->data + i * loom_dtype_size(t->dtype);
  switch (t->dtype) {
  case LOOM_DTYPE_I64: *(int64_t *)p = v; break;
  case LOOM_DTYPE_U64: *(uint64_t *)p = (uint64_t)v; break;
  /* integers wrap to their width, as C's conversions and the compiled code do (ONNX Cast) */
  case LOOM_DTYPE_I32: *(int32_t *)p = (int32_t)(uint32_t)v; break;
  case LOOM_DTYPE_U32: *(uint32_t *)p = (uint32_t)v; break;
  case LOOM_DTYPE_I16: *(int16_t *)p = (int16_t)(uint16_t)v; break;
  case LOOM_DTYPE_U16: *(uint16_t *)p = (uint16_t)v; break;
  case LOOM_DTYPE_I8: *(int8_t *)p = (int8_t)(uint8_t)v; break;
  case LOOM_DTYPE_U8: *(uint8_t *)p = (uint8_t)v; break;
  case LOOM_DTYPE_I4: case LOOM_DTYPE_U4: case LOOM_DTYPE_I2: case LOOM_DTYPE_U2:
    *(uint8_t *)p = loom_lowp_from_i64(t->dtype, v);
    break;
  default: loom_graph_tensor_set_f64(t, i, (double)v); break;
  }
}

void loom_graph_strides(int ndim, const int64_t *shape, int64_t *strides) {
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i];
  }
}

size_t loom_graph_bcast_index(const loom_graph_tensor *t, int ndim, const int64_t *idx) {
  size_t off = 0, stride = 1;
  for (int k = t->ndim - 1; k >= 0; k--) {
    int o = k + (ndim - t->ndim);
    int64_t i = t->shape[k] == 1 ? 0 : idx[o];
    off += (size_t)i * stride;
    stride *= (size_t)t->shape[k];
  }
  return off;
}

bool loom_graph_index_next(int ndim, const int64_t *shape, int64_t *idx) {
  for (int k = ndim - 1; k >= 0; k--) {
    if (++idx[k] < shape[k]) return true;
    idx[k] = 0;
  }
  return false;
}

double *loom_graph_tensor_to_f64(const loom_graph_tensor *t) {
  double *d = malloc((t->numel ? t->numel : 1) * sizeof *d);
  if (!d) return NULL;
  if (t->dtype == LOOM_DTYPE_F32)
    for (size_t i = 0; i < t->numel; i++) d[i] = LOAD(float, (const char *)t->data + 4 * i);
  else
    for (size_t i = 0; i < t->numel; i++) d[i] = loom_graph_tensor_get_f64(t, i);
  return d;
}

/* op_index.c — indexing: take (gather along an axis), nonzero and unique (data-dependent
 * counts, fresh symbols), gather / scatter elements, one_hot, cumsum / cumprod; legalization
 * of take, one_hot and the scans here, of the elements ops in legalize_index.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "graph/legalize_internal.h"

static const loom_graph_attr_spec take_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {0}};
static const loom_graph_attr_spec scatter_attrs[] = {
    {"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {"reduction", LOOM_GRAPH_ATTR_STR, .dflt_str = "none"}, {0}};
static const loom_graph_attr_spec no_attrs[] = {{0}};

/* take(x, idx, axis): x.shape[:axis] + idx.shape + x.shape[axis+1:]. */
static loom_status infer_take(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *idx;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &idx));
  if (idx->dtype != LOOM_DTYPE_I32 && idx->dtype != LOOM_DTYPE_I64)
    return loom_graph_icx_error(ic, "operand 1 (indices) has dtype %s, expected i32 or i64",
                                idx->dtype == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name(idx->dtype));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
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
  int64_t axis = loom_graph_call_int(ec->call, "axis");
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

/* unique(x, axis?, sorted=true, indices=false): the distinct values of x flattened (or its
 * distinct slices along `axis`), in ascending (lexicographic for slices) order or, with
 * sorted=false, in order of first occurrence; u (their count) is fresh. With indices=true the
 * result is Tuple(values, first (u) i64, inverse (n) i64, counts (u) i64): where each one
 * first occurs, which one each element / slice is, how often each occurs. */
static const loom_graph_attr_spec unique_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                    {"sorted", LOOM_GRAPH_ATTR_BOOL, .dflt = 1},
                                                    {"indices", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {0}};

static loom_status infer_unique(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  bool has_axis = loom_graph_call_attr(ic->call, "axis") != NULL;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, has_axis, &x));
  const loom_sym_expr *u = loom_graph_icx_fresh(ic, "uniq"), *n;
  if (!u) return loom_sym_ctx_take_error(ic->cx);
  const loom_sinfo *y;
  if (has_axis) {
    int a;
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
    const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
    if (!d) return LOOM_OOM();
    for (int i = 0; i < x->ndim; i++) d[i] = i == a ? u : x->dims[i];
    y = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
    n = x->dims[a];
  } else {
    y = loom_sinfo_tensor(ic->m, x->dtype, 1, &u, x->device);
    n = x->dims ? loom_graph_dims_prod(ic->cx, x->ndim, x->dims) : NULL;
  }
  if (!loom_graph_call_int(ic->call, "indices")) return *out = y, LOOM_OK;
  if (!n) return loom_graph_icx_error(ic, "indices=true needs the dims of operand 0");
  const loom_sinfo *p[4] = {y, loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, 1, &u, x->device),
                            loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, 1, &n, x->device), NULL};
  p[3] = p[1];
  *out = loom_sinfo_tuple(ic->m, 4, p);
  return LOOM_OK;
}

/* Slices of a [outer, len, inner] view compared lexicographically (ties: lower index). */
typedef struct slices {
  const double *v;
  size_t outer, len, inner;
} slices;

static int cmp_slice(const slices *s, int64_t a, int64_t b) {
  for (size_t o = 0; o < s->outer; o++)
    for (size_t i = 0; i < s->inner; i++) {
      double x = s->v[(o * s->len + (size_t)a) * s->inner + i], y = s->v[(o * s->len + (size_t)b) * s->inner + i];
      if (x != y) return x < y ? -1 : 1;
    }
  return 0;
}

/* Stable merge sort of idx[0..n) by cmp_slice. */
static void sort_slices(const slices *s, int64_t *idx, int64_t *tmp, size_t n) {
  if (n < 2) return;
  size_t h = n / 2;
  sort_slices(s, idx, tmp, h);
  sort_slices(s, idx + h, tmp, n - h);
  size_t i = 0, j = h, k = 0;
  while (i < h && j < n) tmp[k++] = cmp_slice(s, idx[j], idx[i]) < 0 ? idx[j++] : idx[i++];
  while (i < h) tmp[k++] = idx[i++];
  while (j < n) tmp[k++] = idx[j++];
  memcpy(idx, tmp, n * sizeof *idx);
}

static loom_status eval_unique(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  bool has_axis = loom_graph_call_attr(ec->call, "axis") != NULL;
  bool sorted = loom_graph_call_int(ec->call, "sorted") != 0, full = loom_graph_call_int(ec->call, "indices") != 0;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
  int a = has_axis ? (int)(axis < 0 ? axis + x->ndim : axis) : 0;
  slices s = {.outer = 1, .len = x->numel, .inner = 1};
  if (has_axis) {
    s.len = (size_t)x->shape[a];
    for (int i = 0; i < a; i++) s.outer *= (size_t)x->shape[i];
    for (int i = a + 1; i < x->ndim; i++) s.inner *= (size_t)x->shape[i];
  }
  size_t n = s.len, cnt = n ? n : 1;
  double *v = loom_graph_tensor_to_f64(x);
  int64_t *idx = malloc(cnt * sizeof *idx), *tmp = malloc(cnt * sizeof *tmp), *grp = malloc(cnt * sizeof *grp);
  int64_t *first = malloc(cnt * sizeof *first), *count = calloc(cnt, sizeof *count), *rank = malloc(cnt * sizeof *rank);
  loom_status st = v && idx && tmp && grp && first && count && rank ? LOOM_OK : LOOM_OOM();
  size_t u = 0;
  if (!st) {
    s.v = v;
    for (size_t i = 0; i < n; i++) idx[i] = (int64_t)i;
    sort_slices(&s, idx, tmp, n);
    for (size_t i = 0; i < n; i++) { /* groups in sorted order; first = the lowest index */
      if (!u || cmp_slice(&s, idx[i], first[u - 1])) first[u++] = idx[i];
      grp[idx[i]] = (int64_t)u - 1;
      count[u - 1]++;
    }
    for (size_t g = 0; g < u; g++) rank[g] = (int64_t)g;
    if (!sorted) { /* order groups by first occurrence: rank[g] = position of group g */
      for (size_t g = 0; g < u; g++) tmp[g] = (int64_t)g;
      for (size_t g = 1; g < u; g++) /* insertion sort by first index */
        for (size_t h = g; h > 0 && first[tmp[h]] < first[tmp[h - 1]]; h--) {
          int64_t t = tmp[h];
          tmp[h] = tmp[h - 1], tmp[h - 1] = t;
        }
      for (size_t g = 0; g < u; g++) rank[tmp[g]] = (int64_t)g;
    }
  }
  int64_t sh[8];
  if (!st) {
    if (has_axis) memcpy(sh, x->shape, sizeof sh), sh[a] = (int64_t)u;
    else sh[0] = (int64_t)u;
  }
  loom_graph_value *y = out;
  if (!st && full) {
    memset(out, 0, sizeof *out);
    out->kind = LOOM_SINFO_TUPLE, out->n = 4;
    if (!(out->items = calloc(4, sizeof *out->items))) st = LOOM_OOM();
    y = out->items;
  }
  if (!st) st = loom_graph_value_tensor(x->dtype, has_axis ? x->ndim : 1, sh, y);
  for (size_t g = 0; !st && g < u; g++) { /* group g goes to position rank[g] */
    size_t r = (size_t)rank[g];
    for (size_t o = 0; o < s.outer; o++)
      for (size_t i = 0; i < s.inner; i++) {
        size_t src = (o * s.len + (size_t)first[g]) * s.inner + i, dst = (o * u + r) * s.inner + i;
        if (loom_dtype_is_int(x->dtype)) loom_graph_tensor_set_i64(&y->t, dst, loom_graph_tensor_get_i64(x, src));
        else loom_graph_tensor_set_f64(&y->t, dst, v[src]);
      }
  }
  if (!st && full) {
    int64_t nu = (int64_t)u, nn = (int64_t)n;
    st = loom_graph_value_tensor(LOOM_DTYPE_I64, 1, &nu, &out->items[1]);
    if (!st) st = loom_graph_value_tensor(LOOM_DTYPE_I64, 1, &nn, &out->items[2]);
    if (!st) st = loom_graph_value_tensor(LOOM_DTYPE_I64, 1, &nu, &out->items[3]);
    for (size_t g = 0; !st && g < u; g++) {
      ((int64_t *)out->items[1].t.data)[rank[g]] = first[g];
      ((int64_t *)out->items[3].t.data)[rank[g]] = count[g];
    }
    for (size_t i = 0; !st && i < n; i++) ((int64_t *)out->items[2].t.data)[i] = rank[grp[i]];
  }
  free(v), free(idx), free(tmp), free(grp), free(first), free(count), free(rank);
  return st;
}

/* ---- gather_elements / scatter_elements ------------------------------------------------- */

static const loom_graph_attr_spec one_hot_attrs[] = {{"depth", LOOM_GRAPH_ATTR_SYMS, .required = true},
                                                     {"on_value", LOOM_GRAPH_ATTR_FLOAT, .dflt = 1},
                                                     {"off_value", LOOM_GRAPH_ATTR_FLOAT, .dflt = 0},
                                                     {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_F32},
                                                     {0}};
static const loom_graph_attr_spec cumsum_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                    {"exclusive", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {"reverse", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                    {0}};

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
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
  if (ic->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ELEMENTS) {
    const loom_graph_attr *r = loom_graph_call_attr(ic->call, "reduction");
    if (r && strcmp(r->s, "none") && strcmp(r->s, "add") && strcmp(r->s, "mul") && strcmp(r->s, "min") && strcmp(r->s, "max"))
      return loom_graph_icx_error(ic, "reduction is \"%s\" (none | add | mul | min | max)", r->s);
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

/* dst[i] (op) src[j] for scatter reductions: op is '+', '*', '<' (min), '>' (max); integers
 * in int64 (wrapping), floats in double. */
static void combine(loom_graph_tensor *dst, size_t i, const loom_graph_tensor *src, size_t j, char op) {
  if (loom_dtype_is_int(dst->dtype)) {
    int64_t a = loom_graph_tensor_get_i64(dst, i), b = loom_graph_tensor_get_i64(src, j);
    int64_t r = op == '+' ? (int64_t)((uint64_t)a + (uint64_t)b) : op == '*' ? (int64_t)((uint64_t)a * (uint64_t)b)
              : op == '<' ? (a < b ? a : b) : (a > b ? a : b);
    loom_graph_tensor_set_i64(dst, i, r);
  } else {
    double a = loom_graph_tensor_get_f64(dst, i), b = loom_graph_tensor_get_f64(src, j);
    loom_graph_tensor_set_f64(dst, i, op == '+' ? a + b : op == '*' ? a * b : op == '<' ? fmin(a, b) : fmax(a, b));
  }
}

static loom_status eval_elements(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *ix = &args[1].t;
  bool scatter = ec->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ELEMENTS;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
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
  const loom_graph_attr *ra = scatter ? loom_graph_call_attr(ec->call, "reduction") : NULL;
  char red = !ra || !strcmp(ra->s, "none") ? 0 : !strcmp(ra->s, "add") ? '+' : !strcmp(ra->s, "mul") ? '*' : !strcmp(ra->s, "min") ? '<' : '>';
  do {
    int64_t j = loom_graph_tensor_get_i64(ix, i);
    if (j < 0) j += x->shape[a];
    if (j < 0 || j >= x->shape[a])
      return LOOM_ERROR(OUT_OF_RANGE, "%s: index %lld at position %zu is out of range for axis %d of size %lld", ec->op,
                        (long long)loom_graph_tensor_get_i64(ix, i), i, a, (long long)x->shape[a]);
    size_t off = 0;
    for (int k = 0; k < x->ndim; k++) off += (size_t)((k == a ? j : idx[k]) * st[k]);
    if (scatter && red) combine(&out->t, off, &args[2].t, i, red);
    else if (scatter) memcpy((char *)out->t.data + off * es, (const char *)args[2].t.data + i * es, es);
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
  const loom_graph_attr *dp = loom_graph_call_attr(ic->call, "depth");
  if (dp->n != 1) return loom_graph_icx_error(ic, "depth must be one value");
  if (ix->ndim >= 8) return loom_graph_icx_error(ic, "result rank above 8");
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)ix->ndim + 1);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < ix->ndim; i++) d[i] = ix->dims[i];
  d[ix->ndim] = dp->syms[0];
  *out = loom_sinfo_tensor(ic->m, loom_graph_call_dtype(ic->call, "dtype"), ix->ndim + 1, d, ix->device);
  return LOOM_OK;
}

static loom_status eval_one_hot(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *ix = &args[0].t;
  const loom_graph_attr *dp = loom_graph_call_attr(ec->call, "depth");
  int64_t depth, sh[8];
  LOOM_PROPAGATE(loom_graph_ecx_sym(ec, dp->syms[0], &depth));
  if (depth < 0) return LOOM_ERROR(OUT_OF_RANGE, "one_hot: depth evaluates to %lld", (long long)depth);
  memcpy(sh, ix->shape, sizeof sh);
  sh[ix->ndim] = depth;
  double on = loom_graph_call_float(ec->call, "on_value"), off = loom_graph_call_float(ec->call, "off_value");
  LOOM_PROPAGATE(loom_graph_value_tensor(loom_graph_call_dtype(ec->call, "dtype"), ix->ndim + 1, sh, out));
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
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
  *out = x;
  return LOOM_OK;
}

static loom_status eval_cumsum(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
  if (ec->call->u.call.nargs == 2) {
    axis = loom_graph_tensor_get_i64(&args[1].t, 0);
    if (axis < -x->ndim || axis >= x->ndim)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand 1 (axis) value %lld is out of range for rank %d", ec->op,
                        (long long)axis, x->ndim);
  }
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  bool excl = loom_graph_call_int(ec->call, "exclusive") != 0;
  bool prod = ec->call->u.call.op == LOOM_GRAPH_OP_CUMPROD;
  bool rev = loom_graph_call_int(ec->call, "reverse") != 0;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
  size_t outer = 1, inner = 1, len = (size_t)x->shape[a];
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  bool ints = loom_dtype_is_int(x->dtype);
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      double acc = prod ? 1 : 0;
      int64_t iacc = prod ? 1 : 0;
      for (size_t k = 0; k < len; k++) {
        size_t e = (o * len + (rev ? len - 1 - k : k)) * inner + in;
        if (ints) {
          int64_t v = loom_graph_tensor_get_i64(x, e);
          int64_t next = prod ? (int64_t)((uint64_t)iacc * (uint64_t)v) : (int64_t)((uint64_t)iacc + (uint64_t)v);
          loom_graph_tensor_set_i64(&out->t, e, excl ? iacc : next);
          iacc = next;
        } else {
          double v = loom_graph_tensor_get_f64(x, e);
          double next = prod ? acc * v : acc + v;
          loom_graph_tensor_set_f64(&out->t, e, excl ? acc : next);
          acc = next;
        }
      }
    }
  return LOOM_OK;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

/* gather_elements / scatter_elements have theirs in legalize_index.c. */

typedef struct take_params {
  loom_dtype t, index_t;
  int32_t rank, axis, index_rank;
} take_params;
LOOM_TP_GEN_PARAMS(take_params, 5 * 4);

static loom_status gen_take(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const take_params *p = params;
  return loom_tp_gen_take(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->index_t,
                          p->index_rank, tp);
}

static loom_status legal_take(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                              loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x, *idx;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &idx));
  if (!loom_dtype_is_int(idx->dtype)) return loom_legal_unsupported(call, "for non-integer indices");
  char name[256];
  snprintf(name, sizeof name, "take_%s_r%d_a%d_%s_r%d", loom_dtype_name(x->dtype), x->ndim, axis, loom_dtype_name(idx->dtype),
           idx->ndim);
  take_params p = {.t = x->dtype, .index_t = idx->dtype, .rank = x->ndim, .axis = axis, .index_rank = idx->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_take, p, &r->tp);
}

typedef struct scan_params {
  loom_dtype t;
  int32_t rank, axis, exclusive, reverse, prod;
} scan_params;
LOOM_TP_GEN_PARAMS(scan_params, 6 * 4);

static loom_status gen_scan(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const scan_params *p = params;
  return (p->prod ? loom_tp_gen_cumprod : loom_tp_gen_cumsum)(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t,
                                                              p->rank, p->axis, p->exclusive, p->reverse, tp);
}

/* cumsum, cumprod */
static loom_status legal_cumsum(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  if (call->u.call.nargs > 1) return loom_legal_runtime_operand(call, "axis");
  (void)out;
  const loom_sinfo *x;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  bool excl = loom_graph_call_int(call, "exclusive") != 0, prod = call->u.call.op == LOOM_GRAPH_OP_CUMPROD;
  bool rev = loom_graph_call_int(call, "reverse") != 0;
  char name[256];
  snprintf(name, sizeof name, "%s_%s_r%d_a%d%s%s", prod ? "cumprod" : "cumsum", loom_dtype_name(x->dtype), x->ndim, axis,
           excl ? "_x" : "", rev ? "_rev" : "");
  scan_params p = {.t = x->dtype, .rank = x->ndim, .axis = axis, .exclusive = excl, .reverse = rev, .prod = prod};
  return LOOM_LEGAL_PROGRAM(m, name, gen_scan, p, &r->tp);
}

typedef struct one_hot_params {
  double on, off;
  loom_dtype index_t, t;
  int32_t index_rank, unused; /* 0 */
} one_hot_params;
LOOM_TP_GEN_PARAMS(one_hot_params, 2 * 8 + 4 * 4);

static loom_status gen_one_hot(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const one_hot_params *p = params;
  char on[64], off[64];
  loom_legal_literal(p->t, p->on, on, sizeof on);
  loom_legal_literal(p->t, p->off, off, sizeof off);
  return loom_tp_gen_one_hot(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->index_t, p->index_rank, p->t, on, off, tp);
}

static loom_status legal_one_hot(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                 loom_graph_legal *r) {
  const loom_sinfo *idx;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &idx));
  if (!loom_dtype_is_int(idx->dtype) || out->ndim != idx->ndim + 1) return loom_legal_unsupported(call, "for these indices");
  one_hot_params p = {.on = loom_graph_call_float(call, "on_value"), .off = loom_graph_call_float(call, "off_value"),
                      .index_t = idx->dtype, .t = out->dtype, .index_rank = idx->ndim};
  double key[2] = {p.on, p.off};
  char name[128];
  snprintf(name, sizeof name, "one_hot_%s_r%d_%s_%016llx", loom_dtype_name(idx->dtype), idx->ndim, loom_dtype_name(out->dtype),
           (unsigned long long)loom_hash_bytes(key, sizeof key));
  return LOOM_LEGAL_PROGRAM(m, name, gen_one_hot, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_take = {take_attrs, infer_take, eval_take, legal_take, NULL};
const loom_graph_op_impl loom_graph_op_impl_nonzero = {no_attrs, infer_nonzero, eval_nonzero, NULL, loom_legal_expand_nonzero};
const loom_graph_op_impl loom_graph_op_impl_gather_elements = {take_attrs, infer_elements, eval_elements, loom_legal_elements, NULL};
const loom_graph_op_impl loom_graph_op_impl_scatter_elements = {scatter_attrs, infer_elements, eval_elements, loom_legal_elements, NULL};
const loom_graph_op_impl loom_graph_op_impl_one_hot = {one_hot_attrs, infer_one_hot, eval_one_hot, legal_one_hot, NULL};
const loom_graph_op_impl loom_graph_op_impl_cumsum = {cumsum_attrs, infer_cumsum, eval_cumsum, legal_cumsum, loom_legal_expand_cumulative};
const loom_graph_op_impl loom_graph_op_impl_cumprod = {cumsum_attrs, infer_cumsum, eval_cumsum, legal_cumsum, loom_legal_expand_cumulative};
const loom_graph_op_impl loom_graph_op_impl_unique = {unique_attrs, infer_unique, eval_unique, NULL, loom_legal_expand_unique};

/* op_misc.c — sorting, n-d indexing, linear-algebra, signal and detection ops that fit no
 * other family: topk, gather_nd, scatter_nd, det, dft, non_max_suppression. Each result shape that
 * depends on data (topk with a run-time k, non_max_suppression) is a fresh symbol. det and dft
 * legalize here, gather_nd / scatter_nd in legalize_index.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/legalize_internal.h"

static const loom_graph_attr_spec topk_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = -1},
                                                  {"k", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {"largest", LOOM_GRAPH_ATTR_BOOL, .dflt = 1},
                                                  {0}};
static const loom_graph_attr_spec nd_attrs[] = {
    {"batch_dims", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {"reduction", LOOM_GRAPH_ATTR_STR, .dflt_str = "none"}, {0}};
static const loom_graph_attr_spec no_attrs[] = {{0}};
static const loom_graph_attr_spec dft_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .required = true},
                                                 {"inverse", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                 {"onesided", LOOM_GRAPH_ATTR_BOOL, .dflt = 0},
                                                 {"length", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                 {0}};
static const loom_graph_attr_spec nms_attrs[] = {{"center_point_box", LOOM_GRAPH_ATTR_BOOL, .dflt = 0}, {0}};

static loom_status int_operand(loom_graph_icx *ic, size_t i, const loom_sinfo **out) {
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, false, out));
  if ((*out)->dtype != LOOM_DTYPE_I32 && (*out)->dtype != LOOM_DTYPE_I64)
    return loom_graph_icx_error(ic, "operand %zu has dtype %s, expected i32 or i64", i,
                                (*out)->dtype == LOOM_DTYPE_UNKNOWN ? "?" : loom_dtype_name((*out)->dtype));
  return LOOM_OK;
}

/* A Tuple value of n items (zeroed). */
static loom_status tuple_value(size_t n, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_TUPLE;
  out->n = n;
  out->items = calloc(n, sizeof *out->items);
  return out->items ? LOOM_OK : LOOM_OOM();
}

/* ---- topk ------------------------------------------------------------------------------------ */

/* topk(x, k?, axis=-1, largest=true, k=[n]): Tuple(values, i64 indices) of the k largest (or
 * smallest) elements along `axis`, sorted, ties broken by the lower index. k is attribute `k`
 * or operand 1 (one integer, known at run time: the result extent is a fresh symbol). */
static loom_status infer_topk(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *ks;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
  const loom_graph_attr *ka = loom_graph_call_attr(ic->call, "k");
  bool operand = ic->call->u.call.nargs > 1;
  if (operand == (ka != NULL)) return loom_graph_icx_error(ic, "give k either as operand 1 or as attribute 'k', not both");
  const loom_sym_expr *k;
  if (ka) {
    if (ka->n != 1) return loom_graph_icx_error(ic, "k must be one value");
    k = ka->syms[0];
    int64_t kc, d;
    if (loom_sym_is_const(k, &kc) && (kc < 0 || (loom_sym_is_const(x->dims[a], &d) && kc > d)))
      return loom_graph_icx_error(ic, "k is %lld, operand 0 axis %d is %s", (long long)kc, a, loom_graph_sym_str(ic->m, x->dims[a]));
    loom_sym_truth fits = loom_sym_prove_le(ic->cx, k, x->dims[a]);
    if (fits == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "k is %s, operand 0 axis %d is %s", loom_graph_sym_str(ic->m, k), a, loom_graph_sym_str(ic->m, x->dims[a]));
    if (fits != LOOM_SYM_TRUE) {
      char why[256];
      snprintf(why, sizeof why, "topk: k must not exceed operand 0 axis %d", a);
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(ic->cx, LOOM_SYM_LE, k, x->dims[a]), why));
    }
  } else {
    LOOM_PROPAGATE(int_operand(ic, 1, &ks));
    if (!(k = loom_graph_icx_fresh(ic, "k"))) return loom_sym_ctx_take_error(ic->cx);
  }
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim; i++) d[i] = i == a ? k : x->dims[i];
  const loom_sinfo *parts[2] = {loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device),
                                loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, x->ndim, d, x->device)};
  if (!parts[0] || !parts[1]) return LOOM_OOM();
  *out = loom_sinfo_tuple(ic->m, 2, parts);
  return LOOM_OK;
}

typedef struct keyed {
  double v;
  int64_t i;
} keyed;

/* NaN goes last in both orders, NaNs among themselves by index (a total order, so the sort's
 * result does not depend on qsort's algorithm). */
static int by_desc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  bool an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return an ? 1 : -1;
  if (!an && a->v != b->v) return a->v > b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static int by_asc(const void *pa, const void *pb) {
  const keyed *a = pa, *b = pb;
  bool an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return an ? 1 : -1;
  if (!an && a->v != b->v) return a->v < b->v ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

static loom_status eval_topk(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_call_int(ec->call, "axis"), k;
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  bool largest = loom_graph_call_int(ec->call, "largest") != 0;
  const loom_graph_attr *ka = loom_graph_call_attr(ec->call, "k");
  if (ka) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, ka->syms[0], &k));
  else {
    if (args[1].t.numel != 1) return LOOM_ERROR(INVALID_ARGUMENT, "topk: operand 1 (k) holds %zu values, expected 1", args[1].t.numel);
    k = loom_graph_tensor_get_i64(&args[1].t, 0);
  }
  int64_t len = x->shape[a];
  if (k < 0 || k > len)
    return LOOM_ERROR(INVALID_ARGUMENT, "topk: k is %lld, operand 0 axis %d is %lld", (long long)k, a, (long long)len);
  int64_t sh[8];
  memcpy(sh, x->shape, sizeof sh);
  sh[a] = k;
  LOOM_PROPAGATE(tuple_value(2, out));
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, &out->items[0]));
  LOOM_PROPAGATE(loom_graph_value_tensor(LOOM_DTYPE_I64, x->ndim, sh, &out->items[1]));
  size_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  keyed *row = malloc(((size_t)len ? (size_t)len : 1) * sizeof *row);
  if (!row) return LOOM_OOM();
  bool ints = loom_dtype_is_int(x->dtype);
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++) {
      for (int64_t j = 0; j < len; j++) {
        size_t e = (o * (size_t)len + (size_t)j) * inner + in;
        row[j].v = loom_graph_tensor_get_f64(x, e), row[j].i = j;
      }
      if (len) qsort(row, (size_t)len, sizeof *row, largest ? by_desc : by_asc);
      for (int64_t j = 0; j < k; j++) {
        size_t e = (o * (size_t)k + (size_t)j) * inner + in, src = (o * (size_t)len + (size_t)row[j].i) * inner + in;
        if (ints) loom_graph_tensor_set_i64(&out->items[0].t, e, loom_graph_tensor_get_i64(x, src));
        else loom_graph_tensor_set_f64(&out->items[0].t, e, loom_graph_tensor_get_f64(x, src));
        loom_graph_tensor_set_i64(&out->items[1].t, e, row[j].i);
      }
    }
  free(row);
  return LOOM_OK;
}

/* ---- gather_nd / scatter_nd ------------------------------------------------------------------ */

/* gather_nd(x, idx, batch_dims=b): idx (..., m) with m static; the result is
 * idx.shape[:-1] + x.shape[b + m:], the first b dims of x and idx shared. */
static loom_status infer_gather_nd(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x, *ix;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  LOOM_PROPAGATE(int_operand(ic, 1, &ix));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &ix));
  int64_t b = loom_graph_call_int(ic->call, "batch_dims"), m;
  if (ix->ndim < 1) return loom_graph_icx_error(ic, "operand 1 (indices) must have rank >= 1");
  if (!loom_sym_is_const(ix->dims[ix->ndim - 1], &m)) return loom_graph_icx_error(ic, "the last axis of operand 1 must be static");
  if (b < 0 || b >= ix->ndim || b + m > x->ndim)
    return loom_graph_icx_error(ic, "batch_dims %lld and index depth %lld do not fit ranks %d and %d", (long long)b, (long long)m, x->ndim, ix->ndim);
  for (int i = 0; i < b; i++) LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 0, i, x->dims[i], 1, i, ix->dims[i]));
  bool scatter = ic->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ND;
  if (!scatter && loom_graph_call_attr(ic->call, "reduction")) return loom_graph_icx_error(ic, "reduction is an attribute of scatter_nd only");
  int nd = ix->ndim - 1 + x->ndim - (int)(b + m);
  if (nd > 8) return loom_graph_icx_error(ic, "result rank %d above 8", nd);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)(nd ? nd : 1));
  if (!d) return LOOM_OOM();
  int k = 0;
  for (int i = 0; i < ix->ndim - 1; i++) d[k++] = ix->dims[i];
  for (int i = (int)(b + m); i < x->ndim; i++) d[k++] = x->dims[i];
  if (!scatter) {
    *out = loom_sinfo_tensor(ic->m, x->dtype, nd, d, x->device);
    return LOOM_OK;
  }
  const loom_graph_attr *r = loom_graph_call_attr(ic->call, "reduction");
  if (r && strcmp(r->s, "none") && strcmp(r->s, "add") && strcmp(r->s, "mul") && strcmp(r->s, "min") && strcmp(r->s, "max"))
    return loom_graph_icx_error(ic, "reduction is \"%s\" (none | add | mul | min | max)", r->s);
  if (b) return loom_graph_icx_error(ic, "batch_dims must be 0");
  const loom_sinfo *u;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 2, true, &u));
  if (u->dtype != x->dtype) return loom_graph_icx_error(ic, "operand 2 has dtype %s, operand 0 has %s", loom_dtype_name(u->dtype), loom_dtype_name(x->dtype));
  if (u->ndim != nd) return loom_graph_icx_error(ic, "operand 2 has rank %d, expected %d (indices.shape[:-1] + x.shape[m:])", u->ndim, nd);
  for (int i = 0; i < nd; i++) LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 2, i, u->dims[i], 0, i, d[i]));
  *out = x;
  return LOOM_OK;
}

static void combine(loom_graph_tensor *dst, size_t i, const loom_graph_tensor *src, size_t j, char op) {
  if (loom_dtype_is_int(dst->dtype)) {
    int64_t a = loom_graph_tensor_get_i64(dst, i), b = loom_graph_tensor_get_i64(src, j);
    int64_t r = op == '+' ? (int64_t)((uint64_t)a + (uint64_t)b) : op == '*' ? (int64_t)((uint64_t)a * (uint64_t)b)
              : op == '<' ? (a < b ? a : b) : op == '>' ? (a > b ? a : b) : b;
    loom_graph_tensor_set_i64(dst, i, r);
  } else {
    double a = loom_graph_tensor_get_f64(dst, i), b = loom_graph_tensor_get_f64(src, j);
    loom_graph_tensor_set_f64(dst, i, op == '+' ? a + b : op == '*' ? a * b : op == '<' ? fmin(a, b) : op == '>' ? fmax(a, b) : b);
  }
}

/* Both: walk the index tuples; each names a slice of x of `slice` elements at offset `off`. */
static loom_status eval_nd(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t, *ix = &args[1].t;
  bool scatter = ec->call->u.call.op == LOOM_GRAPH_OP_SCATTER_ND;
  int64_t b = loom_graph_call_int(ec->call, "batch_dims"), m = ix->shape[ix->ndim - 1];
  size_t slice = 1, batch = 1, per = 1, es = loom_dtype_size(x->dtype);
  for (int i = (int)(b + m); i < x->ndim; i++) slice *= (size_t)x->shape[i];
  for (int i = 0; i < b; i++) batch *= (size_t)x->shape[i];
  for (int i = (int)b; i < ix->ndim - 1; i++) per *= (size_t)ix->shape[i];
  size_t xbatch = 1; /* elements of x per batch entry */
  for (int i = (int)b; i < x->ndim; i++) xbatch *= (size_t)x->shape[i];
  const loom_graph_attr *ra = scatter ? loom_graph_call_attr(ec->call, "reduction") : NULL;
  char red = !ra || !strcmp(ra->s, "none") ? '=' : !strcmp(ra->s, "add") ? '+' : !strcmp(ra->s, "mul") ? '*' : !strcmp(ra->s, "min") ? '<' : '>';
  if (scatter) {
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, x->shape, out));
    if (x->numel) memcpy(out->t.data, x->data, x->numel * es);
  } else {
    int64_t sh[8];
    int k = 0;
    for (int i = 0; i < ix->ndim - 1; i++) sh[k++] = ix->shape[i];
    for (int i = (int)(b + m); i < x->ndim; i++) sh[k++] = x->shape[i];
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, k, sh, out));
  }
  for (size_t bi = 0; bi < batch; bi++)
    for (size_t p = 0; p < per; p++) {
      size_t t = bi * per + p, off = 0;
      for (int64_t j = 0; j < m; j++) {
        int64_t d = x->shape[b + j], v = loom_graph_tensor_get_i64(ix, t * (size_t)m + (size_t)j);
        if (v < 0) v += d;
        if (v < 0 || v >= d)
          return LOOM_ERROR(OUT_OF_RANGE, "%s: index %lld at position %zu is out of range for axis %lld of size %lld", ec->op,
                            (long long)loom_graph_tensor_get_i64(ix, t * (size_t)m + (size_t)j), t * (size_t)m + (size_t)j,
                            (long long)(b + j), (long long)d);
        off = off * (size_t)d + (size_t)v;
      }
      off = bi * xbatch + off * slice;
      if (!scatter) {
        if (slice) memcpy((char *)out->t.data + t * slice * es, (const char *)x->data + off * es, slice * es);
      } else {
        for (size_t e = 0; e < slice; e++) combine(&out->t, off + e, &args[2].t, t * slice + e, red);
      }
    }
  return LOOM_OK;
}

/* ---- det ------------------------------------------------------------------------------------- */

/* det(x): (..., n, n) -> (...), the determinant of each matrix (float). */
static loom_status infer_det(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim < 2) return loom_graph_icx_error(ic, "operand 0 must have rank >= 2, got %d", x->ndim);
  if (x->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float(x->dtype))
    return loom_graph_icx_error(ic, "operand 0 has dtype %s; a float dtype is required", loom_dtype_name(x->dtype));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 0, x->ndim - 2, x->dims[x->ndim - 2], 0, x->ndim - 1, x->dims[x->ndim - 1]));
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim - 2, x->dims, x->device);
  return LOOM_OK;
}

/* LU decomposition with partial pivoting, in double. */
static loom_status eval_det(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t n = x->shape[x->ndim - 1];
  if (x->shape[x->ndim - 2] != n)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: matrices are %lld x %lld, not square", ec->op, (long long)x->shape[x->ndim - 2], (long long)n);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim - 2, x->shape, out));
  double *v = loom_graph_tensor_to_f64(x);
  if (!v) return LOOM_OOM();
  size_t nn = (size_t)(n * n);
  for (size_t mi = 0; mi < out->t.numel; mi++) {
    double *a = v + mi * nn, det = 1;
    for (int64_t c = 0; c < n; c++) {
      int64_t p = c;
      for (int64_t r = c + 1; r < n; r++)
        if (fabs(a[r * n + c]) > fabs(a[p * n + c])) p = r;
      if (a[p * n + c] == 0) {
        det = 0;
        break;
      }
      if (p != c) {
        for (int64_t k = 0; k < n; k++) {
          double t = a[c * n + k];
          a[c * n + k] = a[p * n + k], a[p * n + k] = t;
        }
        det = -det;
      }
      det *= a[c * n + c];
      for (int64_t r = c + 1; r < n; r++) {
        double f = a[r * n + c] / a[c * n + c];
        for (int64_t k = c; k < n; k++) a[r * n + k] -= f * a[c * n + k];
      }
    }
    loom_graph_tensor_set_f64(&out->t, mi, det);
  }
  free(v);
  return LOOM_OK;
}

/* ---- dft ------------------------------------------------------------------------------------- */

/* dft(x, axis=a, inverse=false, onesided=false, length=[n]): x is (..., 1) real or (..., 2)
 * complex (re, im); along axis a (not the last) the signal is cut or zero-padded to n (default:
 * its extent) and transformed: y[k] = sum_j x[j] e^(-+2 pi i j k / n) (the inverse divides by
 * n). The result is (..., 2) with axis a of n, or floor(n / 2) + 1 when onesided. The inverse
 * with onesided reads the m bins of a onesided spectrum (the rest by Hermitian symmetry,
 * X[n - k] = conj(X[k])) and gives the real signal (..., n, 1), n = 2 (m - 1) by default. */
static loom_status infer_dft(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->dtype != LOOM_DTYPE_UNKNOWN && !loom_dtype_is_float(x->dtype))
    return loom_graph_icx_error(ic, "operand 0 has dtype %s; a float dtype is required", loom_dtype_name(x->dtype));
  int64_t c;
  if (x->ndim < 2 || !loom_sym_is_const(x->dims[x->ndim - 1], &c) || (c != 1 && c != 2))
    return loom_graph_icx_error(ic, "operand 0 must be (..., 1) real or (..., 2) complex, got %s", loom_graph_dims_str(ic->m, x->ndim, x->dims));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim - 1, "axis", &a));
  const loom_graph_attr *la = loom_graph_call_attr(ic->call, "length");
  if (la && la->n != 1) return loom_graph_icx_error(ic, "length must be one value");
  bool inv = loom_graph_call_int(ic->call, "inverse") != 0, one = loom_graph_call_int(ic->call, "onesided") != 0;
  const loom_sym_expr *two = loom_sym_const(ic->cx, 2), *n = la ? la->syms[0] : x->dims[a];
  if (inv && one && !la) n = loom_sym_mul(ic->cx, two, loom_sym_sub(ic->cx, x->dims[a], loom_sym_const(ic->cx, 1)));
  int64_t nc;
  if (loom_sym_is_const(n, &nc) && nc < 1) return loom_graph_icx_error(ic, "length is %lld (at least 1)", (long long)nc);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim; i++) d[i] = x->dims[i];
  d[a] = one && !inv ? loom_sym_add(ic->cx, loom_sym_floordiv(ic->cx, n, two), loom_sym_const(ic->cx, 1)) : n;
  d[x->ndim - 1] = inv && one ? loom_sym_const(ic->cx, 1) : two;
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_dft(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int a = (int)loom_graph_call_int(ec->call, "axis");
  if (a < 0) a += x->ndim - 1;
  const loom_graph_attr *la = loom_graph_call_attr(ec->call, "length");
  bool inv = loom_graph_call_int(ec->call, "inverse") != 0, one = loom_graph_call_int(ec->call, "onesided") != 0;
  bool half = inv && one; /* a onesided spectrum in, a real signal out */
  int64_t n = half ? 2 * (x->shape[a] - 1) : x->shape[a], c = x->shape[x->ndim - 1];
  if (la) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, la->syms[0], &n));
  if (n < 1) return LOOM_ERROR(INVALID_ARGUMENT, "%s: length is %lld (at least 1)", ec->op, (long long)n);
  int64_t sh[8], m = one && !inv ? n / 2 + 1 : n, len = x->shape[a], use = len < n ? len : n;
  memcpy(sh, x->shape, sizeof sh);
  sh[a] = m, sh[x->ndim - 1] = half ? 1 : 2;
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  size_t outer = 1, inner = 1;
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim - 1; i++) inner *= (size_t)x->shape[i];
  double *v = loom_graph_tensor_to_f64(x), sign = inv ? 1 : -1;
  if (!v) return LOOM_OOM();
  for (size_t o = 0; o < outer; o++)
    for (size_t in = 0; in < inner; in++)
      for (int64_t k = 0; k < m; k++) {
        double re = 0, im = 0;
        for (int64_t j = 0; j < (half ? n : use); j++) {
          int64_t src = j;
          bool conj = false;
          if (half && j >= len) src = n - j, conj = true; /* X[n - k] = conj(X[k]) */
          if (src < 0 || src >= len) continue;
          const double *p = v + ((o * (size_t)len + (size_t)src) * inner + in) * (size_t)c;
          double ang = sign * 2 * M_PI * (double)((j * k) % n) / (double)n, cr = cos(ang), ci = sin(ang);
          double xr = p[0], xi = c == 2 ? (conj ? -p[1] : p[1]) : 0;
          re += xr * cr - xi * ci, im += xr * ci + xi * cr;
        }
        if (inv) re /= (double)n, im /= (double)n;
        size_t e = ((o * (size_t)m + (size_t)k) * inner + in) * (half ? 1 : 2);
        loom_graph_tensor_set_f64(&out->t, e, re);
        if (!half) loom_graph_tensor_set_f64(&out->t, e + 1, im);
      }
  free(v);
  return LOOM_OK;
}

/* ---- non_max_suppression ----------------------------------------------------------------------- */

/* non_max_suppression(boxes (B, N, 4), scores (B, C, N), max_per_class (1), iou (1),
 * score_threshold (1)): (sel, 3) i64 rows [batch, class, box], sel fresh. Per batch and class,
 * boxes in descending score order (ties: lower index) above score_threshold are kept unless
 * their IoU with a kept box exceeds iou, at most max_per_class of them. Boxes are
 * [y1, x1, y2, x2] (any corner order) or, with center_point_box, [xc, yc, w, h]. */
static loom_status infer_nms(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *bx, *sc, *t;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &bx));
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 1, true, &sc));
  if (bx->ndim != 3 || sc->ndim != 3) return loom_graph_icx_error(ic, "boxes and scores must be 3-D, got ranks %d and %d", bx->ndim, sc->ndim);
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 0, 0, bx->dims[0], 1, 0, sc->dims[0]));
  LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, 0, 1, bx->dims[1], 1, 2, sc->dims[2]));
  int64_t four;
  if (!loom_sym_is_const(bx->dims[2], &four) || four != 4) return loom_graph_icx_error(ic, "operand 0 axis 2 must be 4");
  LOOM_PROPAGATE(int_operand(ic, 2, &t));
  for (size_t i = 3; i < 5; i++) LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, false, &t));
  const loom_sym_expr *d[2] = {loom_graph_icx_fresh(ic, "sel"), loom_sym_const(ic->cx, 3)};
  if (!d[0] || !d[1]) return loom_sym_ctx_take_error(ic->cx);
  *out = loom_sinfo_tensor(ic->m, LOOM_DTYPE_I64, 2, d, bx->device);
  return LOOM_OK;
}

static double iou(const double *a, const double *b, bool center) {
  double ay1, ax1, ay2, ax2, by1, bx1, by2, bx2;
  if (center) {
    ax1 = a[0] - a[2] / 2, ax2 = a[0] + a[2] / 2, ay1 = a[1] - a[3] / 2, ay2 = a[1] + a[3] / 2;
    bx1 = b[0] - b[2] / 2, bx2 = b[0] + b[2] / 2, by1 = b[1] - b[3] / 2, by2 = b[1] + b[3] / 2;
  } else {
    ay1 = fmin(a[0], a[2]), ay2 = fmax(a[0], a[2]), ax1 = fmin(a[1], a[3]), ax2 = fmax(a[1], a[3]);
    by1 = fmin(b[0], b[2]), by2 = fmax(b[0], b[2]), bx1 = fmin(b[1], b[3]), bx2 = fmax(b[1], b[3]);
  }
  double iw = fmin(ax2, bx2) - fmax(ax1, bx1), ih = fmin(ay2, by2) - fmax(ay1, by1);
  if (iw <= 0 || ih <= 0) return 0;
  double inter = iw * ih, uni = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter;
  return uni > 0 ? inter / uni : 0;
}

static loom_status eval_nms(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *bt = &args[0].t, *st = &args[1].t;
  int64_t nb = bt->shape[0], n = bt->shape[1], nc = st->shape[1];
  if (st->shape[0] != nb || st->shape[2] != n)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: scores are (%lld, %lld, %lld) for boxes (%lld, %lld, 4)", ec->op, (long long)st->shape[0],
                      (long long)nc, (long long)st->shape[2], (long long)nb, (long long)n);
  for (int i = 2; i < 5; i++)
    if (args[i].t.numel > 1) return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %d holds %zu values (a scalar)", ec->op, i, args[i].t.numel);
  int64_t maxk = args[2].t.numel ? loom_graph_tensor_get_i64(&args[2].t, 0) : 0;
  double thr = args[3].t.numel ? loom_graph_tensor_get_f64(&args[3].t, 0) : 0;
  double sthr = args[4].t.numel ? loom_graph_tensor_get_f64(&args[4].t, 0) : -INFINITY;
  bool center = loom_graph_call_int(ec->call, "center_point_box") != 0;
  double *boxes = loom_graph_tensor_to_f64(bt), *scores = loom_graph_tensor_to_f64(st);
  keyed *order = malloc(((size_t)n ? (size_t)n : 1) * sizeof *order);
  int64_t *kept = malloc(((size_t)n ? (size_t)n : 1) * sizeof *kept), *sel = NULL;
  size_t nsel = 0, cap = 0;
  loom_status s = boxes && scores && order && kept ? LOOM_OK : LOOM_OOM();
  for (int64_t b = 0; !s && b < nb; b++)
    for (int64_t c = 0; !s && c < nc; c++) {
      int64_t m = 0, nk = 0;
      for (int64_t i = 0; i < n; i++) {
        double v = scores[(b * nc + c) * n + i];
        if (v > sthr) order[m].v = v, order[m++].i = i;
      }
      if (m) qsort(order, (size_t)m, sizeof *order, by_desc);
      for (int64_t j = 0; j < m && nk < maxk; j++) {
        const double *bj = boxes + (b * n + order[j].i) * 4;
        bool keep = true;
        for (int64_t q = 0; q < nk && keep; q++) keep = iou(bj, boxes + (b * n + kept[q]) * 4, center) <= thr;
        if (!keep) continue;
        kept[nk++] = order[j].i;
        if (nsel == cap) {
          cap = cap ? cap * 2 : 16;
          int64_t *g = realloc(sel, cap * 3 * sizeof *g);
          if (!g) {
            s = LOOM_OOM();
            break;
          }
          sel = g;
        }
        sel[nsel * 3] = b, sel[nsel * 3 + 1] = c, sel[nsel * 3 + 2] = order[j].i;
        nsel++;
      }
    }
  int64_t sh[2] = {(int64_t)nsel, 3};
  if (!s) s = loom_graph_value_tensor(LOOM_DTYPE_I64, 2, sh, out);
  if (!s && nsel) memcpy(out->t.data, sel, nsel * 3 * sizeof *sel);
  free(boxes), free(scores), free(order), free(kept), free(sel);
  return s;
}

/* ---- legalization (the records' legalize hooks; graph/legalize.h) ------------------------------ */

/* gather_nd / scatter_nd have theirs in legalize_index.c; topk and non_max_suppression become
 * several bindings (legalize_expand.c). */

typedef struct det_params {
  loom_dtype t;
  int32_t rank;
} det_params;
LOOM_TP_GEN_PARAMS(det_params, 2 * 4);

static loom_status gen_det(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const det_params *p = params;
  return loom_tp_gen_det(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, tp);
}

/* det: the program reads the order from the last axis; matrices not provably square get the
 * run-time guard that they are (inference records the same one; this keeps the program's
 * assumption next to it). */
static loom_status legal_det(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                             loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  if (x->ndim < 2 || !loom_dtype_is_float(x->dtype)) return loom_legal_unsupported(call, "for this operand (float matrices of rank >= 2)");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *rows = x->dims[x->ndim - 2], *cols = x->dims[x->ndim - 1];
  if (loom_sym_prove_eq(cx, rows, cols) != LOOM_SYM_TRUE) {
    char why[384], on[160];
    loom_legal_operand_name(call, 0, on, sizeof on);
    snprintf(why, sizeof why, "det: %s axes %d and %d (%s, %s) must be equal (square matrices)", on, x->ndim - 2,
             x->ndim - 1, loom_graph_sym_str(m, rows), loom_graph_sym_str(m, cols));
    LOOM_PROPAGATE(loom_graph_legal_guard(m, r, loom_sym_cmp(cx, LOOM_SYM_EQ, rows, cols), why));
  }
  char name[64];
  snprintf(name, sizeof name, "det_%s_r%d", loom_dtype_name(x->dtype), x->ndim);
  det_params p = {.t = x->dtype, .rank = x->ndim};
  return LOOM_LEGAL_PROGRAM(m, name, gen_det, p, &r->tp);
}

typedef struct dft_params {
  loom_dtype t;
  int32_t rank, axis, c, inverse, onesided, has_length;
} dft_params;
LOOM_TP_GEN_PARAMS(dft_params, 7 * 4);

static loom_status gen_dft(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const dft_params *p = params;
  return loom_tp_gen_dft(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, p->axis, p->c, p->inverse,
                         p->onesided, p->has_length, tp);
}

/* dft: the transform length, when given, is an i64 scalar parameter (symbolic at the call). */
static loom_status legal_dft(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                             loom_graph_legal *r) {
  (void)out;
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  int64_t c;
  int axis;
  if (x->ndim < 2 || !loom_dtype_is_float(x->dtype) || !loom_sym_is_const(x->dims[x->ndim - 1], &c) || (c != 1 && c != 2))
    return loom_legal_unsupported(call, "for this operand (float (..., 1) or (..., 2))");
  if (!loom_legal_norm_axis(loom_graph_call_int(call, "axis"), x->ndim - 1, &axis)) return loom_legal_unsupported(call, "for this axis");
  bool inv = loom_graph_call_int(call, "inverse") != 0, one = loom_graph_call_int(call, "onesided") != 0;
  const loom_graph_attr *la = loom_graph_call_attr(call, "length");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  if (la && la->n != 1) return loom_legal_unsupported(call, "for a length of more than one value");
  if (la && loom_sym_prove_le(cx, loom_sym_const(cx, 1), la->syms[0]) != LOOM_SYM_TRUE) {
    char why[256];
    snprintf(why, sizeof why, "dft: length (%s) must be >= 1", loom_graph_sym_str(m, la->syms[0]));
    LOOM_PROPAGATE(loom_graph_legal_guard(m, r, loom_sym_cmp(cx, LOOM_SYM_LE, loom_sym_const(cx, 1), la->syms[0]), why));
  }
  char name[128];
  snprintf(name, sizeof name, "dft_%s_r%d_a%d_c%lld%s%s%s", loom_dtype_name(x->dtype), x->ndim, axis, (long long)c, inv ? "_inv" : "",
           one ? "_onesided" : "", la ? "_len" : "");
  if (la) r->scalars[r->nscalars++] = la->syms[0];
  dft_params p = {.t = x->dtype, .rank = x->ndim, .axis = axis, .c = (int32_t)c, .inverse = inv, .onesided = one, .has_length = la != NULL};
  return LOOM_LEGAL_PROGRAM(m, name, gen_dft, p, &r->tp);
}

/* ---- the records ------------------------------------------------------------------------------- */

const loom_graph_op_impl loom_graph_op_impl_topk = {topk_attrs, infer_topk, eval_topk, NULL, loom_legal_expand_topk};
const loom_graph_op_impl loom_graph_op_impl_gather_nd = {nd_attrs, infer_gather_nd, eval_nd, loom_legal_nd, NULL};
const loom_graph_op_impl loom_graph_op_impl_scatter_nd = {nd_attrs, infer_gather_nd, eval_nd, loom_legal_nd, NULL};
const loom_graph_op_impl loom_graph_op_impl_det = {no_attrs, infer_det, eval_det, legal_det, NULL};
const loom_graph_op_impl loom_graph_op_impl_dft = {dft_attrs, infer_dft, eval_dft, legal_dft, NULL};
const loom_graph_op_impl loom_graph_op_impl_non_max_suppression = {nms_attrs, infer_nms, eval_nms, NULL, loom_legal_expand_nms};

/* op_shape.c — shape manipulation: reshape (symbolic targets, -1), permute_dims,
 * expand_dims, squeeze, flatten, broadcast_to, concat, strided_slice (symbolic bounds),
 * shape_of, tensor_to_shape, split, pad, tile, repeat. Every result keeps its symbolic dims;
 * what cannot be proven becomes a guard. The forms whose structural operands arrive at run
 * time are in op_shape_dyn.c. */
#include <stdlib.h>
#include <string.h>

#include "graph/legalize_internal.h"
#include "graph/op_shape_internal.h"

static const loom_graph_attr_spec reshape_attrs[] = {
    {"shape", LOOM_GRAPH_ATTR_SYMS, .required = false}, {"allowzero", LOOM_GRAPH_ATTR_BOOL, .dflt = 0}, {0}};
static const loom_graph_attr_spec axes_attrs[] = {{"axes", LOOM_GRAPH_ATTR_SYMS, .required = false}, {0}};
static const loom_graph_attr_spec flatten_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 1}, {0}};
static const loom_graph_attr_spec concat_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {0}};
static const loom_graph_attr_spec bcast_attrs[] = {{"shape", LOOM_GRAPH_ATTR_SYMS, .required = true}, {0}};
static const loom_graph_attr_spec slice_attrs[] = {
    {"axes", LOOM_GRAPH_ATTR_SYMS, .required = false}, {"begin", LOOM_GRAPH_ATTR_SYMS, .required = false},
    {"end", LOOM_GRAPH_ATTR_SYMS, .required = false},  {"strides", LOOM_GRAPH_ATTR_SYMS, .required = false},
    {0}};
static const loom_graph_attr_spec no_attrs[] = {{0}};

static bool is_const(const loom_sym_expr *e, int64_t v) {
  int64_t c;
  return loom_sym_is_const(e, &c) && c == v;
}

/* ---- reshape ---------------------------------------------------------------------- */

/* Target from the `shape` attribute or a Shape operand; one entry may be -1. */
static loom_status infer_reshape(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  loom_sym_ctx *cx = ic->cx;
  const loom_graph_attr *a = loom_graph_call_attr(ic->call, "shape");
  size_t n;
  const loom_sym_expr *const *t;
  if (ic->call->u.call.nargs == 2 && loom_graph_icx_arg(ic, 1)->kind == LOOM_SINFO_TENSOR)
    return loom_graph_infer_reshape_dyn(ic, x, out);
  if (ic->call->u.call.nargs == 2) {
    const loom_sinfo *s = loom_graph_icx_arg(ic, 1);
    if (a) return loom_graph_icx_error(ic, "give the target either as operand 1 or as attribute 'shape', not both");
    if (s->kind != LOOM_SINFO_SHAPE || s->ndim < 0)
      return loom_graph_icx_error(ic, "operand 1 must be a Shape of known rank");
    n = (size_t)s->ndim;
    if (!s->dims) {
      const loom_sym_expr **f = loom_graph_dims_new(ic->m, n);
      if (!f) return LOOM_OOM();
      for (size_t i = 0; i < n; i++) f[i] = loom_graph_icx_fresh(ic, "dim");
      t = f;
    } else {
      t = s->dims;
    }
  } else {
    if (!a) return loom_graph_icx_error(ic, "missing attribute 'shape' (or a Shape operand 1)");
    n = a->n;
    t = a->syms;
  }
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, n);
  if (!d) return LOOM_OOM();
  int wild = -1;
  const loom_sym_expr *known = loom_sym_const(cx, 1);
  for (size_t i = 0; i < n; i++) {
    int64_t c;
    if (loom_sym_is_const(t[i], &c) && c < 0) {
      if (c != -1) return loom_graph_icx_error(ic, "target axis %zu is %lld", i, (long long)c);
      if (wild >= 0) return loom_graph_icx_error(ic, "target axes %d and %zu are both -1", wild, i);
      wild = (int)i;
      continue;
    }
    d[i] = t[i];
    known = loom_sym_mul(cx, known, t[i]);
  }
  const loom_sym_expr *total = loom_graph_dims_prod(cx, x->ndim, x->dims);
  if (!known || !total) return loom_graph_shape_sym_err(ic);
  const char *xs = loom_graph_dims_str(ic->m, x->ndim, x->dims);
  if (wild >= 0) {
    /* -1 := total / known, exact when divisibility is provable, else guarded. Dims that
     * appear on both sides cancel first ((b, s, 768) -> (b, s, 12, -1) gives 768 / 12). */
    bool used[64] = {false};
    const loom_sym_expr *num = loom_sym_const(cx, 1), *den = loom_sym_const(cx, 1);
    for (int i = 0; i < x->ndim; i++) {
      bool cancelled = false;
      for (size_t k = 0; k < n && k < 64 && !cancelled; k++)
        if ((int)k != wild && !used[k] && d[k] == x->dims[i]) used[k] = cancelled = true;
      if (!cancelled) num = loom_sym_mul(cx, num, x->dims[i]);
    }
    for (size_t k = 0; k < n; k++)
      if ((int)k != wild && !(k < 64 && used[k])) den = loom_sym_mul(cx, den, d[k]);
    const loom_sym_expr *q = loom_sym_simplify(cx, loom_sym_floordiv(cx, num, den));
    const loom_sym_expr *r = loom_sym_floormod(cx, num, den);
    if (!q || !r) return loom_graph_shape_sym_err(ic);
    loom_sym_truth t0 = loom_sym_prove_eq(cx, r, loom_sym_const(cx, 0));
    if (t0 == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "%s has %s elements, not a multiple of %s", xs, loom_graph_sym_str(ic->m, total),
                                  loom_graph_sym_str(ic->m, known));
    if (t0 == LOOM_SYM_UNKNOWN) {
      char why[512];
      snprintf(why, sizeof why, "reshape: %s elements of %s must be a multiple of %s", loom_graph_sym_str(ic->m, total),
               xs, loom_graph_sym_str(ic->m, known));
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, r, loom_sym_const(cx, 0)), why));
    }
    d[wild] = q;
  } else {
    loom_sym_truth te = loom_sym_prove_eq(cx, total, known);
    if (te == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 %s has %s elements, target %s has %s", xs,
                                  loom_graph_sym_str(ic->m, total), loom_graph_dims_str(ic->m, (int)n, d),
                                  loom_graph_sym_str(ic->m, known));
    if (te == LOOM_SYM_UNKNOWN) {
      char why[512];
      snprintf(why, sizeof why, "reshape: operand 0 %s has %s elements, target %s has %s", xs,
               loom_graph_sym_str(ic->m, total), loom_graph_dims_str(ic->m, (int)n, d), loom_graph_sym_str(ic->m, known));
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, total, known), why));
    }
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, (int)n, d, x->device);
  return LOOM_OK;
}

static loom_status eval_reshape(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t sh[8];
  size_t n;
  if (ec->call->u.call.nargs == 2 && args[1].kind == LOOM_SINFO_TENSOR) return loom_graph_eval_reshape_dyn(ec, args, out);
  if (ec->call->u.call.nargs == 2) {
    n = args[1].n;
    if (n > 8) return LOOM_ERROR(UNIMPLEMENTED, "reshape: rank %zu above 8", n);
    memcpy(sh, args[1].dims, n * sizeof *sh);
  } else {
    const loom_graph_attr *a = loom_graph_call_attr(ec->call, "shape");
    n = a->n;
    if (n > 8) return LOOM_ERROR(UNIMPLEMENTED, "reshape: rank %zu above 8", n);
    for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, a->syms[i], &sh[i]));
  }
  int64_t known = 1;
  int wild = -1;
  for (size_t i = 0; i < n; i++) {
    if (sh[i] == -1) wild = (int)i;
    else known *= sh[i];
  }
  if (wild >= 0) sh[wild] = known ? (int64_t)x->numel / known : 0;
  int64_t total = 1;
  for (size_t i = 0; i < n; i++) total *= sh[i];
  if (total != (int64_t)x->numel)
    return LOOM_ERROR(INVALID_ARGUMENT, "reshape: operand 0 has %zu elements, the target has %lld", x->numel,
                      (long long)total);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, (int)n, sh, out));
  memcpy(out->t.data, x->data, x->numel * loom_dtype_size(x->dtype));
  return LOOM_OK;
}

/* ---- permute_dims ---------------------------------------------------------------------- */

static loom_status perm_of(loom_graph_icx *ic, int ndim, int *perm) {
  int64_t axes[8];
  size_t n;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, "axes", axes, 8, &n, &present));
  if (!present) {
    for (int i = 0; i < ndim; i++) perm[i] = ndim - 1 - i;
    return LOOM_OK;
  }
  if ((int)n != ndim) return loom_graph_icx_error(ic, "axes has %zu entries for rank %d", n, ndim);
  bool seen[8] = {false};
  for (int i = 0; i < ndim; i++) {
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, axes[i], ndim, "axis", &perm[i]));
    if (seen[perm[i]]) return loom_graph_icx_error(ic, "axis %lld is listed twice", (long long)axes[i]);
    seen[perm[i]] = true;
  }
  return LOOM_OK;
}

static loom_status infer_permute(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim > 8) return loom_graph_icx_error(ic, "rank %d above 8", x->ndim);
  int perm[8];
  LOOM_PROPAGATE(perm_of(ic, x->ndim, perm));
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim; i++) d[i] = x->dims[perm[i]];
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_permute(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
  int perm[8];
  LOOM_PROPAGATE(perm_of(&ic, x->ndim, perm));
  int64_t sh[8], st[8], idx[8] = {0};
  for (int i = 0; i < x->ndim; i++) sh[i] = x->shape[perm[i]];
  loom_graph_strides(x->ndim, x->shape, st);
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  if (!out->t.numel) return LOOM_OK;
  size_t o = 0, es = loom_dtype_size(x->dtype);
  do {
    size_t off = 0;
    for (int i = 0; i < x->ndim; i++) off += (size_t)(idx[i] * st[perm[i]]);
    memcpy((char *)out->t.data + o * es, (const char *)x->data + off * es, es);
    o++;
  } while (loom_graph_index_next(x->ndim, sh, idx));
  return LOOM_OK;
}

/* ---- expand_dims / squeeze / flatten ------------------------------------------------------ */

/* Output dims for expand_dims (insert at axes of the output) or squeeze (drop axes). */
static loom_status expand_squeeze(loom_graph_icx *ic, const loom_sinfo *x, const loom_sym_expr **d, int *nd) {
  int64_t axes[8];
  size_t n;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, "axes", axes, 8, &n, &present));
  bool mark[16] = {false};
  if (ic->call->u.call.op == LOOM_GRAPH_OP_EXPAND_DIMS) {
    if (!present) return loom_graph_icx_error(ic, "missing attribute 'axes'");
    int on = x->ndim + (int)n;
    if (on > 8) return loom_graph_icx_error(ic, "result rank %d above 8", on);
    for (size_t i = 0; i < n; i++) {
      int a;
      LOOM_PROPAGATE(loom_graph_icx_axis(ic, axes[i], on, "axis", &a));
      if (mark[a]) return loom_graph_icx_error(ic, "axis %lld is listed twice", (long long)axes[i]);
      mark[a] = true;
    }
    int k = 0;
    for (int i = 0; i < on; i++) d[i] = mark[i] ? loom_sym_const(ic->cx, 1) : x->dims[k++];
    *nd = on;
    return LOOM_OK;
  }
  if (!present) {
    for (int i = 0; i < x->ndim; i++) mark[i] = is_const(x->dims[i], 1);
  } else {
    for (size_t i = 0; i < n; i++) {
      int a;
      LOOM_PROPAGATE(loom_graph_icx_axis(ic, axes[i], x->ndim, "axis", &a));
      loom_sym_truth t = loom_sym_prove_eq(ic->cx, x->dims[a], loom_sym_const(ic->cx, 1));
      if (t == LOOM_SYM_FALSE)
        return loom_graph_icx_error(ic, "operand 0 axis %d is %s, not 1", a, loom_graph_sym_str(ic->m, x->dims[a]));
      if (t == LOOM_SYM_UNKNOWN) {
        char why[256];
        snprintf(why, sizeof why, "squeeze: operand 0 axis %d is %s: must be 1", a,
                 loom_graph_sym_str(ic->m, x->dims[a]));
        LOOM_PROPAGATE(loom_graph_icx_guard(
            ic, loom_sym_cmp(ic->cx, LOOM_SYM_EQ, x->dims[a], loom_sym_const(ic->cx, 1)), why));
      }
      mark[a] = true;
    }
  }
  int k = 0;
  for (int i = 0; i < x->ndim; i++)
    if (!mark[i]) d[k++] = x->dims[i];
  *nd = k;
  return LOOM_OK;
}

static loom_status infer_expand_squeeze(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim > 8) return loom_graph_icx_error(ic, "rank %d above 8", x->ndim);
  if (ic->call->u.call.nargs == 2) return loom_graph_infer_expand_squeeze_dyn(ic, x, out);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, 16);
  int nd;
  if (!d) return LOOM_OOM();
  LOOM_PROPAGATE(expand_squeeze(ic, x, d, &nd));
  *out = loom_sinfo_tensor(ic->m, x->dtype, nd, d, x->device);
  return LOOM_OK;
}

static loom_status infer_flatten(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  int64_t ax = loom_graph_call_int(ic->call, "axis");
  if (ax < 0) ax += x->ndim;
  if (ax < 0 || ax > x->ndim) return loom_graph_icx_error(ic, "axis %lld out of range for rank %d", (long long)ax, x->ndim);
  const loom_sym_expr *d[2] = {loom_graph_dims_prod(ic->cx, (int)ax, x->dims),
                               loom_graph_dims_prod(ic->cx, x->ndim - (int)ax, x->dims + ax)};
  if (!d[0] || !d[1]) return loom_graph_shape_sym_err(ic);
  *out = loom_sinfo_tensor(ic->m, x->dtype, 2, d, x->device);
  return LOOM_OK;
}

/* Shape-only ops evaluate by copying the data under the inferred shape (evaluated in env). */
static loom_status eval_copy_shape(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  const loom_sinfo *si = ec->call->sinfo;
  int64_t sh[8];
  if (ec->call->u.call.nargs == 2) return loom_graph_eval_expand_squeeze_dyn(ec, args, out);
  if (ec->call->u.call.op == LOOM_GRAPH_OP_FLATTEN) {
    int64_t ax = loom_graph_call_int(ec->call, "axis");
    if (ax < 0) ax += x->ndim;
    sh[0] = 1;
    for (int i = 0; i < ax; i++) sh[0] *= x->shape[i];
    sh[1] = sh[0] ? (int64_t)x->numel / sh[0] : 0;
    if (!sh[0]) {
      sh[1] = 1;
      for (int i = (int)ax; i < x->ndim; i++) sh[1] *= x->shape[i];
    }
  } else {
    /* expand_dims / squeeze: recompute from the runtime shape. */
    loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
    loom_graph_module *m = ec->m;
    const loom_sym_expr **xd = loom_graph_dims_new(m, 8), **d = loom_graph_dims_new(m, 16);
    if (!xd || !d) return LOOM_OOM();
    for (int i = 0; i < x->ndim; i++) xd[i] = loom_sym_const(ic.cx, x->shape[i]);
    const loom_sinfo *xs = loom_sinfo_tensor(m, x->dtype, x->ndim, xd, NULL);
    if (!xs) return LOOM_OOM();
    int nd;
    LOOM_PROPAGATE(expand_squeeze(&ic, xs, d, &nd));
    for (int i = 0; i < nd; i++) loom_sym_is_const(d[i], &sh[i]);
    (void)si;
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, nd, sh, out));
    memcpy(out->t.data, x->data, x->numel * loom_dtype_size(x->dtype));
    return LOOM_OK;
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, 2, sh, out));
  memcpy(out->t.data, x->data, x->numel * loom_dtype_size(x->dtype));
  return LOOM_OK;
}

/* ---- broadcast_to ---------------------------------------------------------------------- */

static loom_status infer_broadcast_to(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  const loom_graph_attr *a = loom_graph_call_attr(ic->call, "shape");
  if ((int)a->n < x->ndim) return loom_graph_icx_error(ic, "target rank %zu is below operand rank %d", a->n, x->ndim);
  for (int i = 0; i < x->ndim; i++) {
    int t = i + ((int)a->n - x->ndim);
    const loom_sym_expr *dx = x->dims[i], *dt = a->syms[t];
    if (dx == dt || is_const(dx, 1)) continue;
    loom_sym_truth eq = loom_sym_prove_eq(ic->cx, dx, dt);
    loom_sym_truth one = loom_sym_prove_eq(ic->cx, dx, loom_sym_const(ic->cx, 1));
    if (eq == LOOM_SYM_TRUE || one == LOOM_SYM_TRUE) continue;
    if (eq == LOOM_SYM_FALSE && one == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 axis %d is %s, target axis %d is %s", i,
                                  loom_graph_sym_str(ic->m, dx), t, loom_graph_sym_str(ic->m, dt));
    char why[512];
    snprintf(why, sizeof why, "broadcast_to: operand 0 axis %d is %s, target axis %d is %s: must be equal or 1", i,
             loom_graph_sym_str(ic->m, dx), t, loom_graph_sym_str(ic->m, dt));
    LOOM_PROPAGATE(loom_graph_icx_guard(ic,
                                        loom_sym_or(ic->cx, loom_sym_cmp(ic->cx, LOOM_SYM_EQ, dx, dt),
                                                    loom_sym_cmp(ic->cx, LOOM_SYM_EQ, dx, loom_sym_const(ic->cx, 1))),
                                        why));
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, (int)a->n, a->syms, x->device);
  return LOOM_OK;
}

static loom_status eval_broadcast_to(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  const loom_graph_attr *a = loom_graph_call_attr(ec->call, "shape");
  int64_t sh[8];
  if (a->n > 8) return LOOM_ERROR(UNIMPLEMENTED, "broadcast_to: rank above 8");
  for (size_t i = 0; i < a->n; i++) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, a->syms[i], &sh[i]));
  int nd = (int)a->n;
  for (int i = 0; i < x->ndim; i++) {
    int t = i + (nd - x->ndim);
    if (x->shape[i] != 1 && x->shape[i] != sh[t])
      return LOOM_ERROR(INVALID_ARGUMENT, "broadcast_to: operand 0 axis %d is %lld, target axis %d is %lld", i,
                        (long long)x->shape[i], t, (long long)sh[t]);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, nd, sh, out));
  if (!out->t.numel) return LOOM_OK;
  int64_t idx[8] = {0};
  size_t o = 0, es = loom_dtype_size(x->dtype);
  do {
    size_t src = loom_graph_bcast_index(x, nd, idx);
    memcpy((char *)out->t.data + o * es, (const char *)x->data + src * es, es);
    o++;
  } while (loom_graph_index_next(nd, sh, idx));
  return LOOM_OK;
}

/* ---- concat ------------------------------------------------------------------------------ */

static loom_status infer_concat(loom_graph_icx *ic, const loom_sinfo **out) {
  size_t n = ic->call->u.call.nargs;
  const loom_sinfo *x0;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x0));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x0->ndim, "axis", &a));
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x0->ndim);
  if (!d) return LOOM_OOM();
  for (int k = 0; k < x0->ndim; k++) d[k] = x0->dims[k];
  for (size_t i = 1; i < n; i++) {
    const loom_sinfo *xi;
    LOOM_PROPAGATE(loom_graph_icx_tensor(ic, i, true, &xi));
    if (xi->ndim != x0->ndim)
      return loom_graph_icx_error(ic, "operand %zu has rank %d, operand 0 has rank %d", i, xi->ndim, x0->ndim);
    if (xi->dtype != x0->dtype)
      return loom_graph_icx_error(ic, "operand %zu has dtype %s, operand 0 has dtype %s", i,
                                  loom_dtype_name(xi->dtype), loom_dtype_name(x0->dtype));
    for (int k = 0; k < x0->ndim; k++) {
      if (k == a) d[k] = loom_sym_add(ic->cx, d[k], xi->dims[k]);
      else LOOM_PROPAGATE(loom_graph_icx_same_dim(ic, i, k, xi->dims[k], 0, k, x0->dims[k]));
    }
  }
  if (!d[a]) return loom_graph_shape_sym_err(ic);
  *out = loom_sinfo_tensor(ic->m, x0->dtype, x0->ndim, d, x0->device);
  return LOOM_OK;
}

static loom_status eval_concat(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  size_t n = ec->call->u.call.nargs;
  const loom_graph_tensor *x0 = &args[0].t;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
  int a = (int)(axis < 0 ? axis + x0->ndim : axis);
  int64_t sh[8];
  memcpy(sh, x0->shape, sizeof sh);
  sh[a] = 0;
  for (size_t i = 0; i < n; i++) {
    for (int k = 0; k < x0->ndim; k++)
      if (k != a && args[i].t.shape[k] != x0->shape[k])
        return LOOM_ERROR(INVALID_ARGUMENT, "concat: operand %zu axis %d is %lld, operand 0 axis %d is %lld", i, k,
                          (long long)args[i].t.shape[k], k, (long long)x0->shape[k]);
    sh[a] += args[i].t.shape[a];
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x0->dtype, x0->ndim, sh, out));
  size_t outer = 1, inner = 1, es = loom_dtype_size(x0->dtype);
  for (int k = 0; k < a; k++) outer *= (size_t)sh[k];
  for (int k = a + 1; k < x0->ndim; k++) inner *= (size_t)sh[k];
  char *dst = out->t.data;
  for (size_t o = 0; o < outer; o++)
    for (size_t i = 0; i < n; i++) {
      size_t chunk = (size_t)args[i].t.shape[a] * inner * es;
      memcpy(dst, (const char *)args[i].t.data + o * chunk, chunk);
      dst += chunk;
    }
  return LOOM_OK;
}

/* ---- strided_slice ------------------------------------------------------------------------ */

const loom_sym_expr *loom_graph_slice_bound(loom_sym_ctx *cx, const loom_sym_expr *v, const loom_sym_expr *dim, bool neg) {
  int64_t c;
  if (loom_sym_is_const(v, &c) && c < 0) v = loom_sym_add(cx, dim, v);
  const loom_sym_expr *lo = loom_sym_const(cx, neg ? -1 : 0), *hi = neg ? loom_sym_sub(cx, dim, loom_sym_const(cx, 1)) : dim;
  if (v && loom_sym_prove_le(cx, lo, v) != LOOM_SYM_TRUE) v = loom_sym_max(cx, v, lo);
  if (v && loom_sym_prove_le(cx, v, hi) != LOOM_SYM_TRUE) v = loom_sym_min(cx, v, hi);
  return v ? loom_sym_simplify(cx, v) : NULL;
}

static loom_status slice_params(loom_graph_icx *ic, int ndim, int *axes, size_t *n) {
  const loom_graph_attr *b = loom_graph_call_attr(ic->call, "begin"), *e = loom_graph_call_attr(ic->call, "end");
  const loom_graph_attr *s = loom_graph_call_attr(ic->call, "strides");
  if (!b || !e) return loom_graph_icx_error(ic, "missing attribute 'begin' or 'end'");
  if (b->n != e->n || (s && s->n != b->n))
    return loom_graph_icx_error(ic, "begin, end and strides must have the same length");
  int64_t ax[8];
  size_t na;
  bool present;
  LOOM_PROPAGATE(loom_graph_icx_ints(ic, "axes", ax, 8, &na, &present));
  if (present && na != b->n) return loom_graph_icx_error(ic, "axes has %zu entries, begin has %zu", na, b->n);
  if (!present && b->n > (size_t)ndim) return loom_graph_icx_error(ic, "begin has %zu entries for rank %d", b->n, ndim);
  if (b->n > 8) return loom_graph_icx_error(ic, "more than 8 sliced axes");
  for (size_t i = 0; i < b->n; i++) {
    if (present) LOOM_PROPAGATE(loom_graph_icx_axis(ic, ax[i], ndim, "axis", &axes[i]));
    else axes[i] = (int)i;
    if (s) {
      int64_t st;
      if (!loom_sym_is_const(s->syms[i], &st) || st == 0)
        return loom_graph_icx_error(ic, "stride %zu must be a nonzero constant", i);
    }
  }
  *n = b->n;
  return LOOM_OK;
}

static loom_status infer_slice(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (ic->call->u.call.nargs > 1) return loom_graph_infer_slice_dyn(ic, x, out);
  int axes[8];
  size_t n;
  LOOM_PROPAGATE(slice_params(ic, x->ndim, axes, &n));
  loom_sym_ctx *cx = ic->cx;
  const loom_graph_attr *b = loom_graph_call_attr(ic->call, "begin"), *e = loom_graph_call_attr(ic->call, "end");
  const loom_graph_attr *s = loom_graph_call_attr(ic->call, "strides");
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int k = 0; k < x->ndim; k++) d[k] = x->dims[k];
  for (size_t i = 0; i < n; i++) {
    const loom_sym_expr *dim = x->dims[axes[i]];
    int64_t step = 1;
    if (s) loom_sym_is_const(s->syms[i], &step);
    const loom_sym_expr *lo = loom_graph_slice_bound(cx, b->syms[i], dim, step < 0), *hi = loom_graph_slice_bound(cx, e->syms[i], dim, step < 0);
    if (!lo || !hi) return loom_graph_shape_sym_err(ic);
    /* ceildiv(hi - lo, step), or ceildiv(lo - hi, -step) going down */
    const loom_sym_expr *len = step > 0 ? loom_sym_ceildiv(cx, loom_sym_sub(cx, hi, lo), loom_sym_const(cx, step))
                                        : loom_sym_ceildiv(cx, loom_sym_sub(cx, lo, hi), loom_sym_const(cx, -step));
    if (!len) return loom_graph_shape_sym_err(ic);
    if (loom_sym_prove_le(cx, loom_sym_const(cx, 0), len) != LOOM_SYM_TRUE) len = loom_sym_max(cx, len, loom_sym_const(cx, 0));
    d[axes[i]] = loom_sym_simplify(cx, len);
    if (!d[axes[i]]) return loom_graph_shape_sym_err(ic);
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_slice(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  if (ec->call->u.call.nargs > 1) return loom_graph_eval_slice_dyn(ec, args, out);
  loom_graph_icx ic = {.m = ec->m, .cx = loom_graph_module_sym(ec->m), .call = ec->call, .op = ec->op};
  int axes[8];
  size_t n;
  LOOM_PROPAGATE(slice_params(&ic, x->ndim, axes, &n));
  const loom_graph_attr *b = loom_graph_call_attr(ec->call, "begin"), *e = loom_graph_call_attr(ec->call, "end");
  const loom_graph_attr *s = loom_graph_call_attr(ec->call, "strides");
  int64_t start[8], step[8], sh[8];
  for (int k = 0; k < x->ndim; k++) {
    start[k] = 0;
    step[k] = 1;
    sh[k] = x->shape[k];
  }
  for (size_t i = 0; i < n; i++) {
    int k = axes[i];
    int64_t lo, hi, st = 1, dim = x->shape[k];
    LOOM_PROPAGATE(loom_graph_ecx_sym(ec, b->syms[i], &lo));
    LOOM_PROPAGATE(loom_graph_ecx_sym(ec, e->syms[i], &hi));
    if (s) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, s->syms[i], &st));
    int64_t c;
    if (loom_sym_is_const(b->syms[i], &c) && c < 0) lo += dim;
    if (loom_sym_is_const(e->syms[i], &c) && c < 0) hi += dim;
    sh[k] = loom_graph_slice_axis(dim, &lo, hi, st);
    start[k] = lo;
    step[k] = st;
  }
  return loom_graph_take_strided(x, start, step, sh, out);
}

/* ---- shape_of ------------------------------------------------------------------------------- */

static loom_status infer_shape_of(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, false, &x));
  *out = loom_sinfo_shape(ic->m, x->ndim, x->dims);
  return LOOM_OK;
}

static loom_status eval_shape_of(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  (void)ec;
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_SHAPE;
  out->n = (size_t)args[0].t.ndim;
  out->dims = malloc((out->n ? out->n : 1) * sizeof *out->dims);
  if (!out->dims) return LOOM_OOM();
  memcpy(out->dims, args[0].t.shape, out->n * sizeof *out->dims);
  return LOOM_OK;
}

/* ---- tensor_to_shape ----------------------------------------------------------------------- */

/* A 1-D integer tensor of static length n -> Shape[n] (the values are known only at run time;
 * a match_cast to Shape[(a, b, ...)] names them as symbolic vars). */
static loom_status infer_tensor_to_shape(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (x->ndim != 1) return loom_graph_icx_error(ic, "operand 0 has rank %d, expected 1", x->ndim);
  if (x->dtype != LOOM_DTYPE_I64 && x->dtype != LOOM_DTYPE_I32 && x->dtype != LOOM_DTYPE_UNKNOWN)
    return loom_graph_icx_error(ic, "operand 0 has dtype %s, expected i64 or i32", loom_dtype_name(x->dtype));
  int64_t n;
  if (!loom_sym_is_const(x->dims[0], &n) || n > 64)
    return loom_graph_icx_error(ic, "operand 0 needs a static length of at most 64");
  *out = loom_sinfo_shape(ic->m, (int)n, NULL);
  return LOOM_OK;
}

static loom_status eval_tensor_to_shape(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  for (size_t i = 0; i < x->numel; i++)
    if (loom_graph_tensor_get_i64(x, i) < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: element %zu is %lld; a shape holds dims >= 0", ec->op, i,
                        (long long)loom_graph_tensor_get_i64(x, i));
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_SHAPE;
  out->n = x->numel;
  out->dims = malloc((out->n ? out->n : 1) * sizeof *out->dims);
  if (!out->dims) return LOOM_OOM();
  for (size_t i = 0; i < x->numel; i++) out->dims[i] = loom_graph_tensor_get_i64(x, i);
  return LOOM_OK;
}

/* ---- split / pad / tile / repeat ------------------------------------------------------- */

static const loom_graph_attr_spec split_attrs[] = {{"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0},
                                                  {"sections", LOOM_GRAPH_ATTR_INT, .dflt = 1},
                                                  {"sizes", LOOM_GRAPH_ATTR_SYMS, .required = false},
                                                  {0}};
static const loom_graph_attr_spec pad_attrs[] = {
    {"pads", LOOM_GRAPH_ATTR_SYMS, .required = false}, {"value", LOOM_GRAPH_ATTR_FLOAT, .dflt = 0}, {0}};
static const loom_graph_attr_spec tile_attrs[] = {{"repeats", LOOM_GRAPH_ATTR_SYMS, .required = true}, {0}};
static const loom_graph_attr_spec repeat_attrs[] = {
    {"repeats", LOOM_GRAPH_ATTR_INT, .required = true}, {"axis", LOOM_GRAPH_ATTR_INT, .dflt = 0}, {0}};

/* split(x, sections=k, axis=a): a Tuple of k tensors with axis a of floordiv(d, k); d must be
 * a multiple of k (proved, or guarded). split(x, sizes=[s0, s1, ...], axis=a): parts of
 * extents s0, s1, ... (symbolic, >= 0) along a; their sum must be d (proved, or guarded). */
static loom_status infer_split(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  int a;
  LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
  const loom_graph_attr *sz = loom_graph_call_attr(ic->call, "sizes"), *sec = loom_graph_call_attr(ic->call, "sections");
  if (!sz == !sec) return loom_graph_icx_error(ic, "give exactly one of 'sections' and 'sizes'");
  int64_t k = sz ? (int64_t)sz->n : loom_graph_call_int(ic->call, "sections");
  if (k < 1 || k > 1024) return loom_graph_icx_error(ic, "%s must be in [1, 1024], got %lld", sz ? "the number of sizes" : "sections", (long long)k);
  loom_sym_ctx *cx = ic->cx;
  char why[256];
  const loom_sym_expr *total = loom_sym_const(cx, 0);
  if (sz) {
    for (int64_t i = 0; i < k; i++) {
      int64_t c;
      if (loom_sym_is_const(sz->syms[i], &c) && c < 0) return loom_graph_icx_error(ic, "sizes[%lld] is %lld", (long long)i, (long long)c);
      total = loom_sym_add(cx, total, sz->syms[i]);
    }
    loom_sym_truth t = loom_sym_prove_eq(cx, total, x->dims[a]);
    if (t == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "sizes add up to %s, operand 0 axis %d is %s", loom_graph_sym_str(ic->m, total), a, loom_graph_sym_str(ic->m, x->dims[a]));
    if (t == LOOM_SYM_UNKNOWN) {
      snprintf(why, sizeof why, "split: operand 0 axis %d is %s: the sizes add up to %s", a, loom_graph_sym_str(ic->m, x->dims[a]), loom_graph_sym_str(ic->m, total));
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, total, x->dims[a]), why));
    }
  } else {
    loom_sym_truth t = loom_sym_prove_divisible(cx, x->dims[a], k);
    if (t == LOOM_SYM_FALSE)
      return loom_graph_icx_error(ic, "operand 0 axis %d is %s, not a multiple of %lld sections", a, loom_graph_sym_str(ic->m, x->dims[a]), (long long)k);
    if (t == LOOM_SYM_UNKNOWN) {
      snprintf(why, sizeof why, "split: operand 0 axis %d is %s: must be a multiple of %lld", a, loom_graph_sym_str(ic->m, x->dims[a]), (long long)k);
      LOOM_PROPAGATE(loom_graph_icx_guard(ic, loom_sym_cmp(cx, LOOM_SYM_EQ, loom_sym_floormod(cx, x->dims[a], loom_sym_const(cx, k)), loom_sym_const(cx, 0)), why));
    }
  }
  const loom_sinfo **parts = LOOM_ARENA_ARRAY(loom_graph_module_arena(ic->m), const loom_sinfo *, (size_t)k);
  if (!parts) return LOOM_OOM();
  for (int64_t p = 0; p < k; p++) {
    if (p > 0 && !sz) {
      parts[p] = parts[0];
      continue;
    }
    const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
    if (!d) return LOOM_OOM();
    for (int i = 0; i < x->ndim; i++) d[i] = x->dims[i];
    d[a] = sz ? sz->syms[p] : loom_sym_floordiv(cx, x->dims[a], loom_sym_const(cx, k));
    if (!(parts[p] = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device))) return LOOM_OOM();
  }
  *out = loom_sinfo_tuple(ic->m, (size_t)k, parts);
  return LOOM_OK;
}

static loom_status eval_split(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  int64_t axis = loom_graph_call_int(ec->call, "axis");
  int a = (int)(axis < 0 ? axis + x->ndim : axis);
  const loom_graph_attr *sz = loom_graph_call_attr(ec->call, "sizes");
  int64_t k = sz ? (int64_t)sz->n : loom_graph_call_int(ec->call, "sections"), len[1024], total = 0;
  for (int64_t p = 0; p < k; p++) {
    if (sz) LOOM_PROPAGATE(loom_graph_ecx_sym(ec, sz->syms[p], &len[p]));
    else len[p] = x->shape[a] / k;
    if (len[p] < 0) return LOOM_ERROR(INVALID_ARGUMENT, "split: size %lld is %lld", (long long)p, (long long)len[p]);
    total += len[p];
  }
  if (total != x->shape[a])
    return LOOM_ERROR(INVALID_ARGUMENT, "split: operand 0 axis %d is %lld; the %s give %lld", a, (long long)x->shape[a],
                      sz ? "sizes" : "sections", (long long)total);
  memset(out, 0, sizeof *out);
  out->kind = LOOM_SINFO_TUPLE;
  out->n = (size_t)k;
  out->items = calloc((size_t)k, sizeof *out->items);
  if (!out->items) return LOOM_OOM();
  int64_t sh[8];
  memcpy(sh, x->shape, sizeof sh);
  size_t outer = 1, inner = 1, es = loom_dtype_size(x->dtype), row = (size_t)x->shape[a];
  for (int i = 0; i < a; i++) outer *= (size_t)x->shape[i];
  for (int i = a + 1; i < x->ndim; i++) inner *= (size_t)x->shape[i];
  size_t at = 0;
  for (int64_t p = 0; p < k; p++) {
    sh[a] = len[p];
    LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, &out->items[p]));
    size_t chunk = (size_t)len[p] * inner * es;
    for (size_t o = 0; chunk && o < outer; o++)
      memcpy((char *)out->items[p].t.data + o * chunk, (const char *)x->data + (o * row + at) * inner * es, chunk);
    at += (size_t)len[p];
  }
  return LOOM_OK;
}

static loom_status infer_pad(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  if (ic->call->u.call.nargs > 1) return loom_graph_infer_pad_dyn(ic, x, out);
  const loom_graph_attr *p = loom_graph_call_attr(ic->call, "pads");
  if (!p) return loom_graph_icx_error(ic, "missing attribute 'pads' (or a run-time operand 1)");
  if ((int)p->n != 2 * x->ndim) return loom_graph_icx_error(ic, "pads has %zu entries; rank %d needs %d (before..., after...)", p->n, x->ndim, 2 * x->ndim);
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim; i++) {
    for (int s2 = 0; s2 < 2; s2++)
      if (loom_sym_prove_le(ic->cx, loom_sym_const(ic->cx, 0), p->syms[i + s2 * x->ndim]) == LOOM_SYM_FALSE)
        return loom_graph_icx_error(ic, "pads entry %d is negative", i + s2 * x->ndim);
    d[i] = loom_sym_add(ic->cx, x->dims[i], loom_sym_add(ic->cx, p->syms[i], p->syms[i + x->ndim]));
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_pad(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  if (ec->call->u.call.nargs > 1) return loom_graph_eval_pad_dyn(ec, args, out);
  const loom_graph_attr *p = loom_graph_call_attr(ec->call, "pads");
  double val = loom_graph_call_float(ec->call, "value");
  int64_t lo[8], sh[8];
  for (int i = 0; i < x->ndim; i++) {
    int64_t hi;
    LOOM_PROPAGATE(loom_graph_ecx_sym(ec, p->syms[i], &lo[i]));
    LOOM_PROPAGATE(loom_graph_ecx_sym(ec, p->syms[i + x->ndim], &hi));
    if (lo[i] < 0 || hi < 0) return LOOM_ERROR(OUT_OF_RANGE, "pad: negative padding on axis %d", i);
    sh[i] = x->shape[i] + lo[i] + hi;
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  for (size_t i = 0; i < out->t.numel; i++) loom_graph_tensor_set_f64(&out->t, i, val);
  if (!x->numel) return LOOM_OK;
  int64_t idx[8] = {0}, ost[8];
  loom_graph_strides(x->ndim, sh, ost);
  size_t i = 0, es = loom_dtype_size(x->dtype);
  do {
    size_t o = 0;
    for (int k = 0; k < x->ndim; k++) o += (size_t)((idx[k] + lo[k]) * ost[k]);
    memcpy((char *)out->t.data + o * es, (const char *)x->data + i * es, es);
    i++;
  } while (loom_graph_index_next(x->ndim, x->shape, idx));
  return LOOM_OK;
}

static loom_status infer_tile_repeat(loom_graph_icx *ic, const loom_sinfo **out) {
  const loom_sinfo *x;
  LOOM_PROPAGATE(loom_graph_icx_tensor(ic, 0, true, &x));
  const loom_sym_expr **d = loom_graph_dims_new(ic->m, (size_t)x->ndim);
  if (!d) return LOOM_OOM();
  for (int i = 0; i < x->ndim; i++) d[i] = x->dims[i];
  if (ic->call->u.call.op == LOOM_GRAPH_OP_TILE) {
    const loom_graph_attr *r = loom_graph_call_attr(ic->call, "repeats");
    if ((int)r->n != x->ndim) return loom_graph_icx_error(ic, "repeats has %zu entries for rank %d", r->n, x->ndim);
    for (int i = 0; i < x->ndim; i++) d[i] = loom_sym_mul(ic->cx, x->dims[i], r->syms[i]);
  } else {
    int a;
    LOOM_PROPAGATE(loom_graph_icx_axis(ic, loom_graph_call_int(ic->call, "axis"), x->ndim, "axis", &a));
    int64_t r = loom_graph_call_int(ic->call, "repeats");
    if (r < 0) return loom_graph_icx_error(ic, "repeats must be >= 0");
    d[a] = loom_sym_mul(ic->cx, x->dims[a], loom_sym_const(ic->cx, r));
  }
  *out = loom_sinfo_tensor(ic->m, x->dtype, x->ndim, d, x->device);
  return LOOM_OK;
}

static loom_status eval_tile_repeat(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out) {
  const loom_graph_tensor *x = &args[0].t;
  bool tile = ec->call->u.call.op == LOOM_GRAPH_OP_TILE;
  int64_t rep[8], sh[8];
  int a = -1;
  for (int i = 0; i < x->ndim; i++) rep[i] = 1;
  if (tile) {
    const loom_graph_attr *r = loom_graph_call_attr(ec->call, "repeats");
    for (int i = 0; i < x->ndim; i++) {
      LOOM_PROPAGATE(loom_graph_ecx_sym(ec, r->syms[i], &rep[i]));
      if (rep[i] < 0) return LOOM_ERROR(OUT_OF_RANGE, "tile: repeats entry %d is negative", i);
    }
  } else {
    int64_t axis = loom_graph_call_int(ec->call, "axis");
    a = (int)(axis < 0 ? axis + x->ndim : axis);
    rep[a] = loom_graph_call_int(ec->call, "repeats");
  }
  for (int i = 0; i < x->ndim; i++) sh[i] = x->shape[i] * rep[i];
  LOOM_PROPAGATE(loom_graph_value_tensor(x->dtype, x->ndim, sh, out));
  if (!out->t.numel) return LOOM_OK;
  int64_t idx[8] = {0}, st[8];
  loom_graph_strides(x->ndim, x->shape, st);
  size_t o = 0, es = loom_dtype_size(x->dtype);
  do {
    size_t src = 0;
    for (int k = 0; k < x->ndim; k++) src += (size_t)((tile ? idx[k] % x->shape[k] : (k == a ? idx[k] / rep[k] : idx[k])) * st[k]);
    memcpy((char *)out->t.data + o * es, (const char *)x->data + src * es, es);
    o++;
  } while (loom_graph_index_next(x->ndim, sh, idx));
  return LOOM_OK;
}

const loom_graph_op_impl loom_graph_op_impl_reshape = {reshape_attrs, infer_reshape, eval_reshape, loom_legal_reshape, loom_legal_expand_view};
const loom_graph_op_impl loom_graph_op_impl_permute_dims = {axes_attrs, infer_permute, eval_permute, loom_legal_permute, NULL};
const loom_graph_op_impl loom_graph_op_impl_expand_dims = {axes_attrs, infer_expand_squeeze, eval_copy_shape, loom_legal_reshape, loom_legal_expand_view};
const loom_graph_op_impl loom_graph_op_impl_squeeze = {axes_attrs, infer_expand_squeeze, eval_copy_shape, loom_legal_reshape, loom_legal_expand_view};
const loom_graph_op_impl loom_graph_op_impl_flatten = {flatten_attrs, infer_flatten, eval_copy_shape, loom_legal_reshape, NULL};
const loom_graph_op_impl loom_graph_op_impl_broadcast_to = {bcast_attrs, infer_broadcast_to, eval_broadcast_to, loom_legal_broadcast_to, NULL};
const loom_graph_op_impl loom_graph_op_impl_concat = {concat_attrs, infer_concat, eval_concat, loom_legal_concat, NULL};
const loom_graph_op_impl loom_graph_op_impl_strided_slice = {slice_attrs, infer_slice, eval_slice, loom_legal_slice, loom_legal_expand_slice};
const loom_graph_op_impl loom_graph_op_impl_shape_of = {no_attrs, infer_shape_of, eval_shape_of, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_tensor_to_shape = {no_attrs, infer_tensor_to_shape, eval_tensor_to_shape, NULL, NULL};
const loom_graph_op_impl loom_graph_op_impl_split = {split_attrs, infer_split, eval_split, NULL, loom_legal_expand_split};
const loom_graph_op_impl loom_graph_op_impl_pad = {pad_attrs, infer_pad, eval_pad, loom_legal_pad, loom_legal_expand_pad};
const loom_graph_op_impl loom_graph_op_impl_tile = {tile_attrs, infer_tile_repeat, eval_tile_repeat, loom_legal_tile, NULL};
const loom_graph_op_impl loom_graph_op_impl_repeat = {repeat_attrs, infer_tile_repeat, eval_tile_repeat, loom_legal_repeat, NULL};

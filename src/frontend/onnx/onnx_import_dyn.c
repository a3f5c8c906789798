/* onnx_import_dyn.c — ONNX operands that decide structure (axes, a target shape, k, pads,
 * slice bounds, a CumSum axis, Range's bounds) but arrive at RUN TIME: graph inputs, or values computed from
 * data. A constant or a value computed from shapes (onnx_import_symval.c) is handled by the op's
 * own handler first; only what is neither comes here, and becomes the graph op's run-time
 * operand form: the value is an extra tensor operand read when the op runs, the result's rank
 * is exact and its data-dependent dims are fresh symbols (graph/op_reduce.c, op_shape.c,
 * op_create.c, op_index.c). Those forms run on the interpreter; legalization refuses them. */
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

bool oimp_runtime_input(const nctx *c, size_t i) {
  return oimp_has_input(c, i) && !c->consts[i] && !c->syms[i] && c->args[i];
}

/* Input i (named `what`) as a run-time integer list: a 1-D (or, with `scalar_ok`, 0-d) i32/i64
 * tensor whose length is static; *len its length. */
static loom_status int_input(const nctx *c, size_t i, const char *what, bool scalar_ok, int64_t *len) {
  const loom_sinfo *si = c->args[i]->sinfo;
  bool isint = si->kind == LOOM_SINFO_TENSOR && (si->dtype == LOOM_DTYPE_I64 || si->dtype == LOOM_DTYPE_I32);
  if (isint && si->ndim == 0 && scalar_ok) {
    *len = 1;
    return LOOM_OK;
  }
  if (!isint || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], len))
    return UNSUP(c->n, "input %zu (%s) must be a constant or a 1-D integer tensor of static length (it is computed at run time)", i, what);
  return LOOM_OK;
}

/* ReduceXxx(x, axes) with run-time axes of static length n: n = 0 is the default (every axis,
 * or nothing with noop_with_empty_axes); otherwise the op takes the axes as operand 1. */
loom_status oimp_dyn_reduce(nctx *c, const op_entry *e, bool keep, bool noop, loom_graph_expr **out) {
  int64_t n;
  LOOM_PROPAGATE(int_input(c, 1, "axes", false, &n));
  if (n == 0) {
    if (noop) return oimp_h_identity(c, e, out);
    int r = oimp_in_rank(c, 0);
    if (r < 0) return UNSUP(c->n, "reducing all axes needs a known rank");
    int64_t ax[8];
    if (r > 8) return UNSUP(c->n, "rank %d above 8", r);
    for (int k = 0; k < r; k++) ax[k] = k;
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", (size_t)r, ax));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep));
    return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
  }
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep));
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

/* Trilu(x, k) with a run-time k (0-d or one value): x's shape exactly. */
loom_status oimp_dyn_trilu(nctx *c, bool upper, loom_graph_expr **out) {
  int64_t n;
  LOOM_PROPAGATE(int_input(c, 1, "k", true, &n));
  if (n != 1) return BAD(c->n, "input 1 (k) must hold one value, got %lld", (long long)n);
  return oimp_emit(c, upper ? LOOM_GRAPH_OP_TRIU : LOOM_GRAPH_OP_TRIL, 2, c->args, c->n->outputs[0], out);
}

/* Reshape(x, shape) with a run-time shape of static length k: rank k; 0 (copy), -1 (infer) and
 * allowzero are resolved when it runs. */
loom_status oimp_dyn_reshape(nctx *c, const op_entry *e, bool allowzero, loom_graph_expr **out) {
  int64_t n;
  LOOM_PROPAGATE(int_input(c, 1, "shape", false, &n));
  if (n > 8) return UNSUP(c->n, "input 1 (shape) has %lld values; rank above 8", (long long)n);
  if (allowzero) oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "allowzero", true));
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

/* Unsqueeze / Squeeze(x, axes) with run-time axes: rank r + n / r - n. */
loom_status oimp_dyn_axes_shape(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t n;
  LOOM_PROPAGATE(int_input(c, 1, "axes", false, &n));
  if (n == 0 && strcmp(e->onnx, "Squeeze") == 0) return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
  if (n == 0) return oimp_h_identity(c, e, out);
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

/* CumSum(x, axis) with a run-time axis: x's shape; reverse is the op's attribute here (the
 * static path reverses along a known axis instead). */
loom_status oimp_dyn_cumsum(nctx *c, const op_entry *e, bool excl, bool rev, loom_graph_expr **out) {
  int64_t n;
  LOOM_PROPAGATE(int_input(c, 1, "axis", true, &n));
  if (n != 1) return BAD(c->n, "input 1 (axis) must hold one value, got %lld", (long long)n);
  if (excl) oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "exclusive", true));
  if (rev) oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "reverse", true));
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

/* Range(start, limit, delta) with a bound known only at run time: arange on three scalar
 * operands, a fresh length. */
loom_status oimp_dyn_range(nctx *c, loom_graph_expr **out) {
  for (size_t i = 0; i < 3; i++) {
    const loom_sinfo *si = c->args[i]->sinfo;
    int64_t len;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim > 1 ||
        (si->ndim == 1 && (!si->dims || !loom_sym_is_const(si->dims[0], &len) || len != 1)))
      return BAD(c->n, "input %zu must be a scalar", i);
  }
  return oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 3, c->args, c->n->outputs[0], out);
}

/* An i64 constant 1-D tensor 0, 1, ..., n-1 (Slice's default axes). */
static loom_status iota(nctx *c, int64_t n, loom_graph_expr **out) {
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 1, &n);
  if (!t) return LOOM_OOM();
  for (int64_t k = 0; k < n; k++) ((int64_t *)t->data)[k] = k;
  *out = oimp_const_of(c->im, t);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* Slice(x, starts, ends, axes?, steps?) (opset >= 10) with any of them at run time: every
 * given one becomes an operand (constants too); rank r, fresh dims. */
loom_status oimp_dyn_slice(nctx *c, const op_entry *e, loom_graph_expr **out) {
  static const char *what[5] = {NULL, "starts", "ends", "axes", "steps"};
  int64_t n = 0, len;
  loom_graph_expr *args[5] = {c->args[0], c->args[1], c->args[2], NULL, NULL};
  size_t na = 3;
  for (size_t i = 1; i < 5; i++) {
    if (!oimp_has_input(c, i)) continue;
    LOOM_PROPAGATE(int_input(c, i, what[i], false, &len));
    if (i == 1) n = len;
    else if (len != n) return BAD(c->n, "input %zu (%s) has %lld values, starts has %lld", i, what[i], (long long)len, (long long)n);
  }
  if (oimp_has_input(c, 3)) args[3] = c->args[3], na = 4;
  if (oimp_has_input(c, 4)) {
    if (na == 3) LOOM_PROPAGATE(iota(c, n, &args[3]));
    args[4] = c->args[4], na = 5;
  }
  return oimp_emit(c, e->op, na, args, c->n->outputs[0], out);
}

/* Pad(x, pads, constant_value?, axes?) in constant mode with any input at run time: the given
 * ones become operands (a missing value before axes: 0 of x's dtype); rank r, fresh dims. */
loom_status oimp_dyn_pad(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t np, nax = oimp_in_rank(c, 0);
  loom_graph_expr *args[4] = {c->args[0], c->args[1], NULL, NULL};
  size_t na = 2;
  LOOM_PROPAGATE(int_input(c, 1, "pads", false, &np));
  const loom_sinfo *xs = c->args[0]->sinfo;
  if (oimp_has_input(c, 2)) {
    const loom_sinfo *v = c->args[2]->sinfo;
    if (v->kind != LOOM_SINFO_TENSOR || v->dtype != xs->dtype)
      return BAD(c->n, "input 2 (constant_value) must have the input's dtype");
    args[2] = c->args[2], na = 3;
  }
  if (oimp_has_input(c, 3)) {
    LOOM_PROPAGATE(int_input(c, 3, "axes", false, &nax));
    if (na == 2 && !(args[2] = loom_graph_const_scalar(c->im->m, xs->dtype, 0))) return LOOM_OOM();
    args[3] = c->args[3], na = 4;
  }
  if (np != 2 * nax) return BAD(c->n, "pads has %lld values for %lld axes", (long long)np, (long long)nax);
  return oimp_emit(c, e->op, na, args, c->n->outputs[0], out);
}

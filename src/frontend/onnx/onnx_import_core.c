/* onnx_import_core.c — the core op table: ONNX ops that map directly to one graph op
 * (elementwise, reductions, matmul, shape ops) and their handlers: attributes and constant
 * inputs turned into graph attributes, Reshape / Slice / Pad / Expand / Range with constant or
 * symbolic operands, Div / Mod with ONNX's integer semantics, Gemm, the normalizations. */
#include "frontend/onnx/onnx_import_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- handlers: each emits the node's first output into *out ------------------- */


loom_status oimp_h_simple(nctx *c, const op_entry *e, loom_graph_expr **out) {
  return oimp_emit(c, e->op, c->nargs, c->args, c->n->outputs[0], out);
}

loom_status oimp_h_identity(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  *out = c->args[0];
  return LOOM_OK;
}

static loom_status h_minmax(nctx *c, const op_entry *e, loom_graph_expr **out) {
  if (c->nargs == 1) return oimp_h_identity(c, e, out);
  loom_graph_expr *y = c->args[0], *ab[2];
  for (size_t i = 1; i < c->nargs; i++) {
    ab[0] = y, ab[1] = c->args[i];
    LOOM_PROPAGATE(oimp_emit(c, e->op, 2, ab, i + 1 == c->nargs ? c->n->outputs[0] : NULL, &y));
  }
  *out = y;
  return LOOM_OK;
}

/* Softmax / LogSoftmax before opset 13 along `axis` < rank - 1: over the input flattened to
 * (d0*..*d(axis-1), d(axis)*..), reshaped back (the input's dims must be known). */
static loom_status softmax_flattened(nctx *c, const op_entry *e, int64_t axis, loom_graph_expr **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 1 || !si->dims || axis < 0 || axis >= si->ndim)
    return UNSUP(c->n, "%s before opset 13 at axis %lld flattens the input, whose dims are unknown", e->onnx, (long long)axis);
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *two[2] = {loom_sym_const(cx, 1), loom_sym_const(cx, 1)};
  for (int k = 0; k < si->ndim; k++) two[k >= axis] = loom_sym_mul(cx, two[k >= axis], si->dims[k]);
  if (!two[0] || !two[1]) return LOOM_OOM();
  loom_graph_expr *t;
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 2, two));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, c->args[0], &t));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
  LOOM_PROPAGATE(oimp_op1(c, e->op, t, &t));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)si->ndim, si->dims));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &t, c->n->outputs[0], out);
}

static loom_status h_axis(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis;
  bool softmax = strcmp(e->onnx, "Softmax") == 0 || strcmp(e->onnx, "LogSoftmax") == 0;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", softmax ? (c->im->opset >= 13 ? -1 : 1) : (strcmp(e->onnx, "Flatten") == 0 ? 1 : 0), &axis));
  int r = oimp_in_rank(c, 0);
  if (axis < 0 && r >= 0 && !(strcmp(e->onnx, "Flatten") == 0 && axis + r < 0)) axis += r;
  if (softmax && c->im->opset < 13 && r >= 0 && axis != r - 1) return softmax_flattened(c, e, axis, out);
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_h_simple(c, e, out);
}

/* Reshape to a constant shape or one computed from shapes (symbolic elements): 0 copies the
 * input's dim (unless allowzero), -1 is inferred by the graph op. */
static loom_status h_reshape(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t allowzero, k0;
  size_t n;
  const loom_sym_expr *dims[16];
  LOOM_PROPAGATE(oimp_attr_int(c, "allowzero", 0, &allowzero));
  if (oimp_runtime_input(c, 1)) return oimp_dyn_reshape(c, e, allowzero != 0, out);
  LOOM_PROPAGATE(oimp_sym_ints(c, 1, "shape", dims, 16, &n));
  const loom_sinfo *si = c->args[0]->sinfo;
  for (size_t k = 0; k < n; k++) {
    if (!loom_sym_is_const(dims[k], &k0) || k0 != 0 || allowzero) continue;
    if (si->kind != LOOM_SINFO_TENSOR || !si->dims || (int)k >= si->ndim)
      return UNSUP(c->n, "shape 0 (copy) needs the input's dims");
    dims[k] = si->dims[k];
  }
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", n, dims));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_transpose(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const int64_t *perm;
  size_t n;
  bool present;
  LOOM_PROPAGATE(oimp_attr_ints(c, "perm", &perm, &n, &present));
  if (present) oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, perm));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_axes_shape(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t ax[16];
  size_t n;
  bool present;
  if (c->im->opset >= 13 && oimp_runtime_input(c, 1)) return oimp_dyn_axes_shape(c, e, out);
  LOOM_PROPAGATE(oimp_get_axes(c, 13, ax, 16, &n, &present));
  bool unsq = strcmp(e->onnx, "Unsqueeze") == 0;
  if (unsq && !present) return BAD(c->n, "axes are required");
  int r = oimp_in_rank(c, 0);
  LOOM_PROPAGATE(oimp_norm_axes(c, unsq ? (r < 0 ? r : r + (int)n) : r, ax, n));
  if (present) oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, ax));
  if (!unsq && !present) { /* every dim that is 1 when it runs: each must be known to be 1 or not */
    const loom_sinfo *si = c->args[0]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "Squeeze without axes needs a known rank");
    for (int k = 0; k < si->ndim; k++) {
      loom_sym_truth t = loom_sym_prove_eq(c->im->cx, si->dims[k], loom_sym_const(c->im->cx, 1));
      if (t == LOOM_SYM_UNKNOWN) {
        char *d = loom_sym_to_string(si->dims[k]);
        loom_status st = UNSUP(c->n, "Squeeze without axes: whether dim %d (%s) is 1 is known only at run time", k, d ? d : "?");
        free(d);
        return st;
      }
    }
  }
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

loom_status oimp_h_reduce(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t ax[16], keep, noop;
  size_t n;
  bool present;
  LOOM_PROPAGATE(oimp_attr_int(c, "keepdims", 1, &keep));
  LOOM_PROPAGATE(oimp_attr_int(c, "noop_with_empty_axes", 0, &noop));
  int64_t since = strcmp(e->onnx, "ReduceSum") == 0 ? 13 : 18;
  if (c->im->opset >= since && oimp_runtime_input(c, 1)) return oimp_dyn_reduce(c, e, keep != 0, noop != 0, out);
  LOOM_PROPAGATE(oimp_get_axes(c, since, ax, 16, &n, &present));
  if (n == 0 && noop) return oimp_h_identity(c, e, out);
  int r = oimp_in_rank(c, 0);
  LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, n));
  if (n == 0) {
    if (r < 0) return UNSUP(c->n, "reducing all axes needs a known rank");
    for (int k = 0; k < r; k++) ax[k] = k;
    n = (size_t)r;
  }
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, ax));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep != 0));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_concat(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis;
  if (!loom_onnx_node_attr(c->n, "axis")) return BAD(c->n, "attribute 'axis' is required");
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  int r = oimp_in_rank(c, 0);
  if (axis < 0 && r >= 0) axis += r;
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_h_simple(c, e, out);
}

static loom_status h_clip(nctx *c, const op_entry *e, loom_graph_expr **out) {
  double lo = 0, hi = 0;
  bool has_lo = false, has_hi = false;
  if (c->im->opset < 11) {
    has_lo = loom_onnx_node_attr(c->n, "min") != NULL, has_hi = loom_onnx_node_attr(c->n, "max") != NULL;
    LOOM_PROPAGATE(oimp_attr_float(c, "min", 0, &lo));
    LOOM_PROPAGATE(oimp_attr_float(c, "max", 0, &hi));
  } else {
    for (size_t i = 1; i < 3; i++) {
      if (!oimp_has_input(c, i)) continue;
      const loom_onnx_tensor *t = c->consts[i];
      if (!t || t->numel != 1) {
        /* a runtime bound: maximum / minimum with broadcasting */
        loom_graph_expr *y = c->args[0], *ab[2];
        for (size_t j = 1; j < 3; j++) {
          if (!oimp_has_input(c, j)) continue;
          ab[0] = y, ab[1] = c->args[j];
          LOOM_PROPAGATE(oimp_emit(c, j == 1 ? LOOM_GRAPH_OP_MAXIMUM : LOOM_GRAPH_OP_MINIMUM, 2, ab, NULL, &y));
        }
        *out = y;
        return LOOM_OK;
      }
      if (i == 1) has_lo = true, lo = oimp_scalar_f64(t);
      else has_hi = true, hi = oimp_scalar_f64(t);
    }
  }
  if (has_lo) oimp_add_attr(c, loom_graph_attr_float(c->im->m, "min", lo));
  if (has_hi) oimp_add_attr(c, loom_graph_attr_float(c->im->m, "max", hi));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_pow(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const loom_sinfo *a = c->args[0]->sinfo, *b = c->args[1]->sinfo;
  if (a->dtype != LOOM_DTYPE_UNKNOWN && b->dtype != LOOM_DTYPE_UNKNOWN && a->dtype != b->dtype) {
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", a->dtype));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &c->args[1], NULL, &c->args[1]));
  }
  return oimp_h_simple(c, e, out);
}

/* Shape and Size of a ranked input are symbolic values (onnx_import_symval.c); these handlers
 * see only inputs of unknown rank. */
static loom_status h_shape(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  return UNSUP(c->n, "the input's rank is unknown");
}

bool oimp_is_signed_int(loom_dtype dt) {
  return dt == LOOM_DTYPE_I8 || dt == LOOM_DTYPE_I16 || dt == LOOM_DTYPE_I32 || dt == LOOM_DTYPE_I64;
}

/* Div: ONNX truncates integer quotients, the graph op floors; for signed integers add 1 where
 * the remainder is nonzero and the signs differ. */
static loom_status h_div(nctx *c, const op_entry *e, loom_graph_expr **out) {
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if (!oimp_is_signed_int(dt)) return oimp_h_simple(c, e, out);
  loom_graph_module *m = c->im->m;
  loom_graph_expr *a = c->args[0], *b = c->args[1], *q, *r, *zero = loom_graph_const_scalar(m, dt, 0), *t[2], *nz, *sa, *sb, *d;
  if (!zero) return LOOM_OOM();
  loom_graph_expr *ab[2] = {a, b};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_DIV, 2, ab, NULL, &q));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MOD, 2, ab, NULL, &r));
  t[0] = r, t[1] = zero;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_NOT_EQUAL, 2, t, NULL, &nz));
  t[0] = a;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LESS, 2, t, NULL, &sa));
  t[0] = b;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LESS, 2, t, NULL, &sb));
  t[0] = sa, t[1] = sb;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LOGICAL_XOR, 2, t, NULL, &d));
  t[0] = nz, t[1] = d;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LOGICAL_AND, 2, t, NULL, &d));
  oimp_add_attr(c, loom_graph_attr_dtype(m, "dtype", dt));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &d, NULL, &d));
  t[0] = q, t[1] = d;
  return oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, t, c->n->outputs[0], out);
}

static loom_status h_mod(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t fmod;
  LOOM_PROPAGATE(oimp_attr_int(c, "fmod", 0, &fmod));
  if (!fmod) return oimp_h_simple(c, e, out);
  /* C fmod (sign of the dividend) from the floored mod (sign of the divisor): where the
   * remainder is nonzero and the operands' signs differ, subtract the divisor. */
  loom_graph_module *m = c->im->m;
  loom_dtype dt = c->args[0]->sinfo->dtype;
  loom_graph_expr *a = c->args[0], *b = c->args[1], *r, *zero = loom_graph_const_scalar(m, dt, 0), *t[3], *nz, *sa, *sb, *d, *rb;
  if (!zero) return LOOM_OOM();
  t[0] = a, t[1] = b;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MOD, 2, t, NULL, &r));
  t[0] = r, t[1] = zero;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_NOT_EQUAL, 2, t, NULL, &nz));
  t[0] = a;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LESS, 2, t, NULL, &sa));
  t[0] = b;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LESS, 2, t, NULL, &sb));
  t[0] = sa, t[1] = sb;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LOGICAL_XOR, 2, t, NULL, &d));
  t[0] = nz, t[1] = d;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LOGICAL_AND, 2, t, NULL, &d));
  t[0] = r, t[1] = b;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SUB, 2, t, NULL, &rb));
  t[0] = d, t[1] = rb, t[2] = r;
  return oimp_emit(c, LOOM_GRAPH_OP_WHERE, 3, t, c->n->outputs[0], out);
}


/* ConstantOfShape as full(shape=dims) of value attribute `a`'s element (0 without one): the
 * shapes known at run time, and constants too large to fold. */
static loom_status full_of(nctx *c, const loom_sym_expr *const *dims, size_t n, loom_dtype dt, const loom_onnx_attr *a,
                           loom_graph_expr **out) {
  double v = 0;
  if (a) {
    loom_graph_tensor g = {.dtype = dt, .ndim = 0, .numel = 1, .data = a->t->data};
    v = loom_graph_tensor_get_f64(&g, 0);
  }
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", n, dims));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", v));
  return oimp_emit(c, LOOM_GRAPH_OP_FULL, 0, NULL, c->n->outputs[0], out);
}

static loom_status h_constant_of_shape(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, "value");
  loom_dtype dt = LOOM_DTYPE_F32;
  if (a) {
    if (a->kind != LOOM_ONNX_ATTR_TENSOR || a->t->numel != 1) return BAD(c->n, "attribute 'value' must be a one-element tensor");
    dt = a->t->dtype;
  }
  if (!c->consts[0]) { /* a shape known at run time: full(shape=[v_0, ...]) */
    const loom_sym_expr *dims[16];
    size_t n;
    LOOM_PROPAGATE(oimp_shape_syms(c, 0, "shape", dims, 16, &n));
    return full_of(c, dims, n, dt, a, out);
  }
  int64_t shp[16], numel = 1;
  size_t n;
  LOOM_PROPAGATE(oimp_const_ints(c, 0, "shape", shp, 16, &n));
  bool large = false;
  for (size_t k = 0; k < n; k++) {
    if (shp[k] < 0) return BAD(c->n, "shape[%zu] is %lld", k, (long long)shp[k]);
    if (shp[k] && numel > OIMP_FOLD_MAX / shp[k]) large = true;
    else numel *= shp[k];
  }
  if (large) { /* too large to fold: full(shape=[...]) fills it when the model runs */
    const loom_sym_expr *dims[16];
    for (size_t k = 0; k < n; k++)
      if (!(dims[k] = loom_sym_const(c->im->cx, shp[k]))) return LOOM_OOM();
    return full_of(c, dims, n, dt, a, out);
  }
  loom_onnx_tensor *t = oimp_new_tensor(c->im, dt, n, shp);
  if (!t) return LOOM_OOM();
  size_t es = loom_dtype_size(dt);
  if (a)
    for (int64_t i = 0; i < t->numel; i++) memcpy((char *)t->data + (size_t)i * es, a->t->data, es);
  return oimp_fold_const(c, t, out);
}

/* Range(start, limit, delta) with symbolic start / limit (computed from shapes) and a positive
 * constant delta: arange with symbolic bounds. */
static loom_status h_range_sym(nctx *c, loom_graph_expr **out) {
  oimp_symval v[3];
  const char *names[3] = {"start", "end", "step"};
  int64_t d;
  for (size_t i = 0; i < 3; i++)
    if (!oimp_symval_of(c, i, &v[i]) || v[i].n != 1 || v[i].dtype == LOOM_DTYPE_BOOL)
      return UNSUP(c->n, "input %zu must be a constant scalar or computed from shapes", i);
  if (!loom_sym_is_const(v[2].v[0], &d) || d <= 0) return UNSUP(c->n, "delta must be a positive constant when the bounds are symbolic");
  for (size_t i = 0; i < 3; i++) oimp_add_attr(c, loom_graph_attr_syms(c->im->m, names[i], 1, v[i].v));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", v[0].dtype));
  return oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 0, NULL, c->n->outputs[0], out);
}

static loom_status h_range(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  for (size_t i = 0; i < 3; i++)
    if (c->syms[i]) return h_range_sym(c, out);
  for (size_t i = 0; i < 3; i++)
    if (!c->consts[i] || c->consts[i]->numel != 1) return oimp_dyn_range(c, out);
  loom_dtype dt = c->consts[0]->dtype;
  double st = oimp_scalar_f64(c->consts[0]), lim = oimp_scalar_f64(c->consts[1]), d = oimp_scalar_f64(c->consts[2]);
  if (d == 0) return BAD(c->n, "delta is 0");
  double nn = ceil((lim - st) / d);
  int64_t n = nn > 0 ? (int64_t)nn : 0;
  if (n > (1 << 24)) return UNSUP(c->n, "range of %lld elements is too large to fold", (long long)n);
  loom_onnx_tensor *t = oimp_new_tensor(c->im, dt, 1, &n);
  if (!t) return LOOM_OOM();
  loom_graph_tensor g = {.dtype = dt, .ndim = 1, .numel = (size_t)n, .data = t->data};
  bool integral = !(dt == LOOM_DTYPE_F32 || dt == LOOM_DTYPE_F64 || dt == LOOM_DTYPE_F16 || dt == LOOM_DTYPE_BF16);
  for (int64_t i = 0; i < n; i++) {
    if (integral) loom_graph_tensor_set_i64(&g, (size_t)i, (int64_t)st + i * (int64_t)d);
    else loom_graph_tensor_set_f64(&g, (size_t)i, st + (double)i * d);
  }
  return oimp_fold_const(c, t, out);
}

static loom_status h_argminmax(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis, keep, last;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  LOOM_PROPAGATE(oimp_attr_int(c, "keepdims", 1, &keep));
  LOOM_PROPAGATE(oimp_attr_int(c, "select_last_index", 0, &last));
  int r = oimp_in_rank(c, 0);
  if (axis < 0 && r >= 0) axis += r;
  if (!last) {
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep != 0));
    return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
  }
  /* the last extreme: the first one of the input reversed along the axis, d - 1 - i */
  loom_graph_expr *rev, *i, *k;
  int64_t d;
  LOOM_PROPAGATE(oimp_reverse_axis(c, c->args[0], axis, &rev));
  if (!loom_sym_is_const(rev->sinfo->dims[axis], &d)) return UNSUP(c->n, "select_last_index needs a static axis");
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep != 0));
  LOOM_PROPAGATE(oimp_emit(c, e->op, 1, &rev, NULL, &i));
  if (!(k = loom_graph_const_scalar(c->im->m, LOOM_DTYPE_I64, (double)(d - 1)))) return LOOM_OOM();
  loom_graph_expr *ab[2] = {k, i};
  return oimp_emit(c, LOOM_GRAPH_OP_SUB, 2, ab, c->n->outputs[0], out);
}

/* Dropout at inference (no training_mode, or a constant false): y = x and a mask of all
 * true (output 1, when named); training_mode otherwise: oimp_dropout_training. */
static loom_status h_dropout(nctx *c, const op_entry *e, loom_graph_expr **out) {
  if (oimp_has_input(c, 2)) {
    const loom_onnx_tensor *t = c->consts[2];
    if (!t || t->numel != 1 || oimp_scalar_f64(t) != 0) return oimp_dropout_training(c, out);
  }
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) {
    const loom_sinfo *si = c->args[0]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "the mask needs the input's rank");
    loom_graph_expr *mask;
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)si->ndim, si->dims));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_BOOL));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", 1));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_FULL, 0, NULL, c->n->outputs[1], &mask));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], mask, NULL));
  }
  for (size_t i = 2; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return BAD(c->n, "Dropout has two outputs");
  return oimp_h_identity(c, e, out);
}

static loom_status h_trilu(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t upper;
  size_t n = 1;
  const loom_sym_expr *k = loom_sym_const(c->im->cx, 0);
  LOOM_PROPAGATE(oimp_attr_int(c, "upper", 1, &upper));
  if (oimp_runtime_input(c, 1)) return oimp_dyn_trilu(c, upper != 0, out);
  if (oimp_has_input(c, 1)) LOOM_PROPAGATE(oimp_sym_ints(c, 1, "k", &k, 1, &n));
  if (n != 1) return BAD(c->n, "input 1 (k) must hold one value, got %zu", n);
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "k", 1, &k));
  return oimp_emit(c, upper ? LOOM_GRAPH_OP_TRIU : LOOM_GRAPH_OP_TRIL, 1, c->args, c->n->outputs[0], out);
}

static loom_status norm_flattened(nctx *c, loom_graph_op op, int64_t axis, size_t nin, double eps, loom_graph_expr **out);

static loom_status h_rmsnorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis, stash;
  double eps;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", -1, &axis));
  LOOM_PROPAGATE(oimp_attr_float(c, "epsilon", 1e-5, &eps));
  LOOM_PROPAGATE(oimp_attr_int(c, "stash_type", 1, &stash));
  int r = oimp_in_rank(c, 0);
  if (!(axis == -1 || (r >= 0 && axis == r - 1))) return norm_flattened(c, e->op, axis, 2, eps, out);
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "eps", eps));
  return oimp_emit(c, e->op, 2, c->args, c->n->outputs[0], out);
}

static loom_status h_gelu(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, "approximate");
  bool tanh_ = false;
  if (a) {
    if (a->kind != LOOM_ONNX_ATTR_STRING) return BAD(c->n, "attribute 'approximate' must be a string");
    if (strcmp(a->s, "tanh") == 0) tanh_ = true;
    else if (strcmp(a->s, "none") != 0) return BAD(c->n, "attribute 'approximate' is '%s' (none | tanh)", a->s);
  }
  return oimp_emit(c, tanh_ ? LOOM_GRAPH_OP_GELU_TANH : LOOM_GRAPH_OP_GELU, 1, c->args, c->n->outputs[0], out);
}

static loom_status h_reciprocal(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_graph_expr *ab[2] = {loom_graph_const_scalar(c->im->m, c->args[0]->sinfo->dtype, 1.0), c->args[0]};
  if (!ab[0]) return LOOM_OOM();
  return oimp_emit(c, LOOM_GRAPH_OP_DIV, 2, ab, c->n->outputs[0], out);
}

/* Sum / Mean of N inputs: a chain of adds (Mean divides by N). */
static loom_status h_variadic(nctx *c, const op_entry *e, loom_graph_expr **out) {
  bool mean = strcmp(e->onnx, "Mean") == 0;
  loom_graph_expr *y = c->args[0], *ab[2];
  for (size_t i = 1; i < c->nargs; i++) {
    ab[0] = y, ab[1] = c->args[i];
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, ab, i + 1 == c->nargs && !mean ? c->n->outputs[0] : NULL, &y));
  }
  if (mean && c->nargs > 1) {
    ab[0] = y, ab[1] = loom_graph_const_scalar(c->im->m, y->sinfo->dtype, (double)c->nargs);
    if (!ab[1]) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_DIV, 2, ab, c->n->outputs[0], &y));
  }
  *out = y;
  return LOOM_OK;
}

static loom_status h_tile(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const loom_sym_expr *rep[16];
  size_t n;
  LOOM_PROPAGATE(oimp_shape_syms(c, 1, "repeats", rep, 16, &n));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "repeats", n, rep));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

/* Expand: bidirectional broadcast to `shape` (a 1 there keeps the input's dim). With a
 * shape known at run time, each overlapping dim is select(v == 1, in, v). */
static loom_status h_expand(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const loom_sym_expr *shp[16];
  size_t n;
  LOOM_PROPAGATE(oimp_shape_syms(c, 1, "shape", shp, 16, &n));
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "the input's rank is unknown");
  size_t r = (size_t)si->ndim, o = r > n ? r : n;
  const loom_sym_expr *dims[16], *one = loom_sym_const(c->im->cx, 1);
  if (o > 16) return UNSUP(c->n, "rank over 16");
  for (size_t k = 0; k < o; k++) {
    ssize_t ik = (ssize_t)k - (ssize_t)(o - r), sk = (ssize_t)k - (ssize_t)(o - n);
    const loom_sym_expr *in = ik >= 0 ? si->dims[ik] : NULL, *want = sk >= 0 ? shp[sk] : one;
    int64_t w;
    if (!in) dims[k] = want;
    else if (loom_sym_is_const(want, &w)) dims[k] = w == 1 ? in : want;
    else dims[k] = loom_sym_select(c->im->cx, loom_sym_cmp(c->im->cx, LOOM_SYM_EQ, want, one), in, want);
    if (!dims[k]) return LOOM_OOM();
  }
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", o, dims));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

/* BatchNormalization with training_mode=1 (opset >= 14), as the reference: the batch's mean
 * and (population) variance over every axis but 1 normalize x (batch_norm with them as the
 * statistics); outputs 1 and 2, when named, are the running statistics
 * input_mean * momentum + batch_mean * (1 - momentum) (likewise the variance). */
static loom_status batchnorm_train(nctx *c, const op_entry *e, double eps, double mom, loom_graph_expr **out) {
  imp *im = c->im;
  int r = oimp_in_rank(c, 0);
  if (r < 2 || r > 8) return UNSUP(c->n, "training_mode=1 needs an input of known rank 2 to 8 (rank %d)", r);
  for (size_t i = 3; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return UNSUP(c->n, "output %zu (saved statistics, opset < 14) is not supported", i);
  int64_t ax[8];
  size_t na = 0;
  for (int k = 0; k < r; k++)
    if (k != 1) ax[na++] = k;
  loom_graph_expr *mk, *dev, *var, *mean, *args[5];
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", na, ax));
  oimp_add_attr(c, loom_graph_attr_bool(im->m, "keepdims", true));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_MEAN, c->args[0], &mk));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, c->args[0], mk, &dev));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, dev, dev, &dev));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", na, ax));
  oimp_add_attr(c, loom_graph_attr_bool(im->m, "keepdims", false));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_MEAN, dev, &var));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", na, ax));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, mk, &mean));
  args[0] = c->args[0], args[1] = c->args[1], args[2] = c->args[2], args[3] = mean, args[4] = var;
  oimp_add_attr(c, loom_graph_attr_float(im->m, "eps", eps));
  LOOM_PROPAGATE(oimp_emit(c, e->op, 5, args, c->n->outputs[0], out));
  loom_graph_expr *stat[2] = {mean, var};
  for (size_t i = 1; i < 3 && i < c->n->n_outputs; i++) {
    if (!*c->n->outputs[i]) continue;
    loom_graph_expr *a, *b, *y;
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, c->args[2 + i], mom, &a));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, stat[i - 1], 1 - mom, &b));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, (loom_graph_expr *[]){a, b}, c->n->outputs[i], &y));
    LOOM_PROPAGATE(oimp_bind(im, c->n->outputs[i], y, NULL));
  }
  return LOOM_OK;
}

static loom_status h_batchnorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t train;
  double eps, mom;
  LOOM_PROPAGATE(oimp_attr_int(c, "training_mode", 0, &train));
  if (loom_onnx_node_attr(c->n, "is_test")) { /* before opset 7: is_test=0 is training */
    int64_t test;
    LOOM_PROPAGATE(oimp_attr_int(c, "is_test", 0, &test));
    train = !test;
  }
  LOOM_PROPAGATE(oimp_attr_float(c, "epsilon", 1e-5, &eps));
  LOOM_PROPAGATE(oimp_attr_float(c, "momentum", 0.9, &mom));
  if (train) return batchnorm_train(c, e, eps, mom, out);
  for (size_t i = 1; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return UNSUP(c->n, "output %zu (running statistics) is not supported", i);
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "eps", eps));
  return oimp_emit(c, e->op, 5, c->args, c->n->outputs[0], out);
}

/* Bound v of a Slice on an axis of constant extent d, clamped as the op clamps it
 * (loom_graph_slice_bound): to [0, d] for a positive step, to [-1, d - 1] for a negative one,
 * where -1 (before index 0) is written -d - 1, since the op reads a negative constant from
 * the end. */
static int64_t slice_bound(int64_t v, int64_t d, int64_t step) {
  int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? d : d - 1;
  if (v < 0) v = v < -d ? lo : v + d;
  v = v < lo ? lo : v > hi ? hi : v;
  return v < 0 ? -d - 1 : v;
}

/* Slice: starts / ends / axes / steps from constant inputs (opset >= 10; starts and ends may
 * also be computed from shapes, i.e. symbolic) or attributes; steps of either sign. */
static loom_status h_slice(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t ax[16], sp[16];
  const loom_sym_expr *st[16], *en[16];
  size_t ns, ne, na = 0, np = 0;
  bool has_axes = false;
  loom_sym_ctx *cx = c->im->cx;
  if (c->im->opset < 10) {
    const int64_t *v;
    bool pr;
    LOOM_PROPAGATE(oimp_attr_ints(c, "starts", &v, &ns, &pr));
    if (!pr || ns > 16) return BAD(c->n, "attribute 'starts' is required");
    for (size_t k = 0; k < ns; k++) st[k] = loom_sym_const(cx, v[k]);
    LOOM_PROPAGATE(oimp_attr_ints(c, "ends", &v, &ne, &pr));
    if (!pr || ne > 16) return BAD(c->n, "attribute 'ends' is required");
    for (size_t k = 0; k < ne; k++) en[k] = loom_sym_const(cx, v[k]);
    LOOM_PROPAGATE(oimp_attr_ints(c, "axes", &v, &na, &has_axes));
    if (na > 16) return UNSUP(c->n, "too many axes");
    if (has_axes) memcpy(ax, v, na * sizeof *v);
  } else {
    if (c->n->n_attrs) return UNSUP(c->n, "attributes are inputs since opset 10");
    for (size_t i = 1; i < 5; i++)
      if (oimp_runtime_input(c, i)) return oimp_dyn_slice(c, e, out);
    LOOM_PROPAGATE(oimp_sym_ints(c, 1, "starts", st, 16, &ns));
    LOOM_PROPAGATE(oimp_sym_ints(c, 2, "ends", en, 16, &ne));
    if (oimp_has_input(c, 3)) {
      LOOM_PROPAGATE(oimp_const_ints(c, 3, "axes", ax, 16, &na));
      has_axes = true;
    }
    if (oimp_has_input(c, 4)) LOOM_PROPAGATE(oimp_const_ints(c, 4, "steps", sp, 16, &np));
  }
  if (ne != ns || (has_axes && na != ns) || (np && np != ns)) return BAD(c->n, "starts, ends, axes and steps differ in length");
  int r = oimp_in_rank(c, 0);
  if (!has_axes)
    for (size_t k = 0; k < ns; k++) ax[k] = (int64_t)k;
  LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, ns));
  const loom_sinfo *si = c->args[0]->sinfo;
  const loom_sym_expr *stp[16];
  for (size_t k = 0; k < ns; k++) {
    int64_t step = np ? sp[k] : 1;
    if (step == 0) return BAD(c->n, "step 0 on axis %lld", (long long)ax[k]);
    stp[k] = loom_sym_const(cx, step);
    int64_t d, lo, hi;
    if (!loom_sym_is_const(st[k], &lo) || !loom_sym_is_const(en[k], &hi)) continue; /* symbolic: the op clamps */
    if (si->dims && loom_sym_is_const(si->dims[ax[k]], &d)) {
      lo = slice_bound(lo, d, step), hi = slice_bound(hi, d, step);
    } else {
      const int64_t big = (int64_t)1 << 40;
      lo = lo > big ? big : lo < -big ? -big : lo;
      hi = hi > big ? big : hi < -big ? -big : hi;
    }
    st[k] = loom_sym_const(cx, lo), en[k] = loom_sym_const(cx, hi);
  }
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", ns, ax));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "begin", ns, st));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", ns, en));
  if (np) oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "strides", ns, stp));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

/* Pad, constant mode: pads (and the value, axes) from constant inputs or attributes. */
static loom_status h_pad(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const loom_onnx_attr *mode = loom_onnx_node_attr(c->n, "mode");
  if (mode && mode->kind != LOOM_ONNX_ATTR_STRING) return BAD(c->n, "attribute 'mode' must be a string");
  const char *md = mode ? mode->s : "constant";
  if (strcmp(md, "constant") && strcmp(md, "reflect") && strcmp(md, "edge") && strcmp(md, "wrap"))
    return BAD(c->n, "mode '%s' is not constant, reflect, edge or wrap", md);
  int64_t pads[32], ax[16];
  size_t n, na = 0;
  double value = 0;
  int r = oimp_in_rank(c, 0);
  if (r < 0) return UNSUP(c->n, "the input's rank is unknown");
  if (c->im->opset < 11) {
    const int64_t *v;
    bool pr;
    LOOM_PROPAGATE(oimp_attr_ints(c, "pads", &v, &n, &pr));
    if (!pr || n > 32) return BAD(c->n, "attribute 'pads' is required");
    memcpy(pads, v, n * sizeof *v);
    LOOM_PROPAGATE(oimp_attr_float(c, "value", 0, &value));
  } else {
    for (size_t i = 1; i < 4; i++)
      if (oimp_runtime_input(c, i)) {
        if (strcmp(md, "constant")) return oimp_pad_mode_dyn(c, md, out);
        return oimp_dyn_pad(c, e, out);
      }
    LOOM_PROPAGATE(oimp_const_ints(c, 1, "pads", pads, 32, &n));
    if (oimp_has_input(c, 2)) {
      if (!c->consts[2] || c->consts[2]->numel != 1) return UNSUP(c->n, "input 2 (constant_value) must be a constant scalar");
      value = oimp_scalar_f64(c->consts[2]);
    }
    if (oimp_has_input(c, 3)) LOOM_PROPAGATE(oimp_const_ints(c, 3, "axes", ax, 16, &na));
  }
  int64_t full[32] = {0};
  if (na) {
    LOOM_PROPAGATE(oimp_norm_axes(c, r, ax, na));
    if (n != 2 * na) return BAD(c->n, "pads has %zu values for %zu axes", n, na);
    for (size_t k = 0; k < na; k++) full[ax[k]] = pads[k], full[r + ax[k]] = pads[na + k];
  } else {
    if (n != 2 * (size_t)r) return BAD(c->n, "pads has %zu values for rank %d", n, r);
    memcpy(full, pads, n * sizeof *pads);
  }
  for (int k = 0; k < 2 * r; k++)
    if (full[k] < 0) return UNSUP(c->n, "negative pads are not supported");
  if (strcmp(md, "constant")) return oimp_pad_mode(c, md, full, out);
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "pads", 2 * (size_t)r, full));
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", value));
  return oimp_emit(c, e->op, 1, c->args, c->n->outputs[0], out);
}

/* ReduceSumSquare / L1 / L2 / LogSum / LogSumExp: an elementwise op, a sum, an elementwise op. */
static loom_status h_reduce_composite(nctx *c, const op_entry *e, loom_graph_expr **out) {
  loom_graph_op pre = OIMP_OP_NONE, post = OIMP_OP_NONE; /* none: no elementwise op */
  if (strcmp(e->onnx, "ReduceSumSquare") == 0 || strcmp(e->onnx, "ReduceL2") == 0) pre = LOOM_GRAPH_OP_MUL;
  if (strcmp(e->onnx, "ReduceL1") == 0) pre = LOOM_GRAPH_OP_ABS;
  if (strcmp(e->onnx, "ReduceLogSumExp") == 0) pre = LOOM_GRAPH_OP_EXP;
  if (strcmp(e->onnx, "ReduceL2") == 0) post = LOOM_GRAPH_OP_SQRT;
  if (strcmp(e->onnx, "ReduceLogSum") == 0 || strcmp(e->onnx, "ReduceLogSumExp") == 0) post = LOOM_GRAPH_OP_LOG;
  loom_graph_expr *x = c->args[0];
  if (pre != OIMP_OP_NONE) {
    loom_graph_expr *ab[2] = {x, x};
    LOOM_PROPAGATE(oimp_emit(c, pre, pre == LOOM_GRAPH_OP_MUL ? 2 : 1, ab, NULL, &x));
  }
  loom_graph_expr *saved = c->args[0];
  c->args[0] = x;
  op_entry sum = *e;
  sum.onnx = "ReduceSumComposite";
  sum.op = LOOM_GRAPH_OP_SUM;
  loom_graph_expr *y;
  LOOM_PROPAGATE(oimp_h_reduce(c, &sum, &y));
  c->args[0] = saved;
  if (post != OIMP_OP_NONE) LOOM_PROPAGATE(oimp_emit(c, post, 1, &y, NULL, &y));
  *out = y;
  return LOOM_OK;
}


static loom_status h_gemm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t ta, tb;
  double alpha, beta;
  LOOM_PROPAGATE(oimp_attr_int(c, "transA", 0, &ta));
  LOOM_PROPAGATE(oimp_attr_int(c, "transB", 0, &tb));
  LOOM_PROPAGATE(oimp_attr_float(c, "alpha", 1.0, &alpha));
  LOOM_PROPAGATE(oimp_attr_float(c, "beta", 1.0, &beta));
  loom_graph_expr *a = c->args[0], *b = c->args[1], *y;
  if (ta) LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PERMUTE_DIMS, 1, &a, NULL, &a));
  if (tb) LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PERMUTE_DIMS, 1, &b, NULL, &b));
  loom_graph_expr *ab[2] = {a, b};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MATMUL, 2, ab, c->nargs > 2 || alpha != 1.0 ? NULL : c->n->outputs[0], &y));
  if (alpha != 1.0) {
    const loom_sinfo *si = y->sinfo;
    ab[0] = y, ab[1] = loom_graph_const_scalar(c->im->m, si->dtype, alpha);
    if (!ab[1]) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MUL, 2, ab, c->nargs > 2 ? NULL : c->n->outputs[0], &y));
  }
  if (c->nargs > 2) {
    loom_graph_expr *cc = c->args[2];
    if (beta != 1.0) {
      ab[0] = cc, ab[1] = loom_graph_const_scalar(c->im->m, y->sinfo->dtype, beta);
      if (!ab[1]) return LOOM_OOM();
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MUL, 2, ab, NULL, &cc));
    }
    ab[0] = y, ab[1] = cc;
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, ab, c->n->outputs[0], &y));
  }
  *out = y;
  return LOOM_OK;
}

/* LayerNormalization / RMSNormalization over the axes from `axis` on: flatten x to 2-D at
 * `axis`, the scale / bias to 1-D, normalize over the last axis, reshape back. */
static loom_status norm_flattened(nctx *c, loom_graph_op op, int64_t axis, size_t nin, double eps, loom_graph_expr **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "the input's rank is unknown");
  int r = si->ndim;
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return BAD(c->n, "axis %lld out of range for rank %d", (long long)axis, r);
  loom_graph_module *m = c->im->m;
  loom_graph_expr *a[3];
  oimp_add_attr(c, loom_graph_attr_int(m, "axis", axis));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_FLATTEN, 1, &c->args[0], NULL, &a[0]));
  const loom_sym_expr *minus1 = loom_sym_const(c->im->cx, -1);
  for (size_t i = 1; i < nin; i++) {
    oimp_add_attr(c, loom_graph_attr_syms(m, "shape", 1, &minus1));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &c->args[i], NULL, &a[i]));
  }
  oimp_add_attr(c, loom_graph_attr_float(m, "eps", eps));
  loom_graph_expr *y;
  LOOM_PROPAGATE(oimp_emit(c, op, nin, a, NULL, &y));
  oimp_add_attr(c, loom_graph_attr_syms(m, "shape", (size_t)r, si->dims));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, c->n->outputs[0], out);
}

static loom_status h_layernorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis, stash;
  double eps;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", -1, &axis));
  LOOM_PROPAGATE(oimp_attr_float(c, "epsilon", 1e-5, &eps));
  LOOM_PROPAGATE(oimp_attr_int(c, "stash_type", 1, &stash));
  int r = oimp_in_rank(c, 0);
  if (c->nargs < 3) return UNSUP(c->n, "the bias input B is required");
  if ((c->n->n_outputs > 1 && *c->n->outputs[1]) || (c->n->n_outputs > 2 && *c->n->outputs[2]))
    LOOM_PROPAGATE(oimp_layernorm_stats(c, axis, eps));
  if (!(axis == -1 || (r >= 0 && axis == r - 1))) return norm_flattened(c, e->op, axis, 3, eps, out);
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "eps", eps));
  return oimp_emit(c, e->op, 3, c->args, c->n->outputs[0], out);
}

static loom_status h_gather(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  int r = oimp_in_rank(c, 0);
  if (axis < 0 && r >= 0) axis += r;
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_h_simple(c, e, out);
}

#define NOATTR " "
const op_entry oimp_core_table[] = {
    {"Add", LOOM_GRAPH_OP_ADD, oimp_h_simple, 2, 2, NOATTR, false},
    {"Sub", LOOM_GRAPH_OP_SUB, oimp_h_simple, 2, 2, NOATTR, false},
    {"Mul", LOOM_GRAPH_OP_MUL, oimp_h_simple, 2, 2, NOATTR, false},
    {"Div", LOOM_GRAPH_OP_DIV, h_div, 2, 2, NOATTR, false},
    {"Mod", LOOM_GRAPH_OP_MOD, h_mod, 2, 2, " fmod ", false},
    {"Size", OIMP_OP_NONE, h_shape, 1, 1, NOATTR, false},
    {"ConstantOfShape", OIMP_OP_NONE, h_constant_of_shape, 1, 1, " value ", false},
    {"Range", OIMP_OP_NONE, h_range, 3, 3, NOATTR, false},
    {"ArgMax", LOOM_GRAPH_OP_ARGMAX, h_argminmax, 1, 1, " axis keepdims select_last_index ", false},
    {"ArgMin", LOOM_GRAPH_OP_ARGMIN, h_argminmax, 1, 1, " axis keepdims select_last_index ", false},
    {"Dropout", OIMP_OP_NONE, h_dropout, 1, 3, " seed ratio is_test ", true},
    {"Trilu", OIMP_OP_NONE, h_trilu, 1, 2, " upper ", false},
    {"RMSNormalization", LOOM_GRAPH_OP_RMS_NORM, h_rmsnorm, 2, 2, " axis epsilon stash_type ", false},
    {"Gelu", OIMP_OP_NONE, h_gelu, 1, 1, " approximate ", false},
    {"Reciprocal", OIMP_OP_NONE, h_reciprocal, 1, 1, NOATTR, false},
    {"Sum", OIMP_OP_NONE, h_variadic, 1, OIMP_VARIADIC, NOATTR, false},
    {"Mean", OIMP_OP_NONE, h_variadic, 1, OIMP_VARIADIC, NOATTR, false},
    {"Tile", LOOM_GRAPH_OP_TILE, h_tile, 2, 2, NOATTR, false},
    {"ReduceSumSquare", OIMP_OP_NONE, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceL1", OIMP_OP_NONE, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceL2", OIMP_OP_NONE, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceLogSum", OIMP_OP_NONE, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceLogSumExp", OIMP_OP_NONE, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"Slice", LOOM_GRAPH_OP_STRIDED_SLICE, h_slice, 1, 5, " starts ends axes ", false},
    {"Pad", LOOM_GRAPH_OP_PAD, h_pad, 1, 4, " mode pads value ", false},
    {"Expand", LOOM_GRAPH_OP_BROADCAST_TO, h_expand, 2, 2, NOATTR, false},
    {"BatchNormalization", LOOM_GRAPH_OP_BATCH_NORM, h_batchnorm, 5, 5, " epsilon momentum training_mode spatial is_test ", true},
    {"GatherElements", LOOM_GRAPH_OP_GATHER_ELEMENTS, h_gather, 2, 2, " axis ", false},
    {"Pow", LOOM_GRAPH_OP_POW, h_pow, 2, 2, NOATTR, false},
    {"Shape", OIMP_OP_NONE, h_shape, 1, 1, " start end ", false},
    {"Neg", LOOM_GRAPH_OP_NEG, oimp_h_simple, 1, 1, NOATTR, false},
    {"Abs", LOOM_GRAPH_OP_ABS, oimp_h_simple, 1, 1, NOATTR, false},
    {"Exp", LOOM_GRAPH_OP_EXP, oimp_h_simple, 1, 1, NOATTR, false},
    {"Log", LOOM_GRAPH_OP_LOG, oimp_h_simple, 1, 1, NOATTR, false},
    {"Sqrt", LOOM_GRAPH_OP_SQRT, oimp_h_simple, 1, 1, NOATTR, false},
    {"Tanh", LOOM_GRAPH_OP_TANH, oimp_h_simple, 1, 1, NOATTR, false},
    {"Sigmoid", LOOM_GRAPH_OP_SIGMOID, oimp_h_simple, 1, 1, NOATTR, false},
    {"Relu", LOOM_GRAPH_OP_RELU, oimp_h_simple, 1, 1, NOATTR, false},
    {"Erf", LOOM_GRAPH_OP_ERF, oimp_h_simple, 1, 1, NOATTR, false},
    {"Sin", LOOM_GRAPH_OP_SIN, oimp_h_simple, 1, 1, NOATTR, false},
    {"Cos", LOOM_GRAPH_OP_COS, oimp_h_simple, 1, 1, NOATTR, false},
    {"Floor", LOOM_GRAPH_OP_FLOOR, oimp_h_simple, 1, 1, NOATTR, false},
    {"Ceil", LOOM_GRAPH_OP_CEIL, oimp_h_simple, 1, 1, NOATTR, false},
    {"Round", LOOM_GRAPH_OP_ROUND, oimp_h_simple, 1, 1, NOATTR, false},
    {"Sign", LOOM_GRAPH_OP_SIGN, oimp_h_simple, 1, 1, NOATTR, false},
    {"Not", LOOM_GRAPH_OP_NOT, oimp_h_simple, 1, 1, NOATTR, false},
    {"Equal", LOOM_GRAPH_OP_EQUAL, oimp_h_simple, 2, 2, NOATTR, false},
    {"Less", LOOM_GRAPH_OP_LESS, oimp_h_simple, 2, 2, NOATTR, false},
    {"LessOrEqual", LOOM_GRAPH_OP_LESS_EQUAL, oimp_h_simple, 2, 2, NOATTR, false},
    {"Greater", LOOM_GRAPH_OP_GREATER, oimp_h_simple, 2, 2, NOATTR, false},
    {"GreaterOrEqual", LOOM_GRAPH_OP_GREATER_EQUAL, oimp_h_simple, 2, 2, NOATTR, false},
    {"And", LOOM_GRAPH_OP_LOGICAL_AND, oimp_h_simple, 2, 2, NOATTR, false},
    {"Or", LOOM_GRAPH_OP_LOGICAL_OR, oimp_h_simple, 2, 2, NOATTR, false},
    {"Xor", LOOM_GRAPH_OP_LOGICAL_XOR, oimp_h_simple, 2, 2, NOATTR, false},
    {"Where", LOOM_GRAPH_OP_WHERE, oimp_h_simple, 3, 3, NOATTR, false},
    {"Max", LOOM_GRAPH_OP_MAXIMUM, h_minmax, 1, OIMP_VARIADIC, NOATTR, false},
    {"Min", LOOM_GRAPH_OP_MINIMUM, h_minmax, 1, OIMP_VARIADIC, NOATTR, false},
    {"MatMul", LOOM_GRAPH_OP_MATMUL, oimp_h_simple, 2, 2, NOATTR, false},
    {"Gemm", LOOM_GRAPH_OP_MATMUL, h_gemm, 2, 3, " transA transB alpha beta ", false},
    {"Softmax", LOOM_GRAPH_OP_SOFTMAX, h_axis, 1, 1, " axis ", false},
    {"LogSoftmax", LOOM_GRAPH_OP_LOG_SOFTMAX, h_axis, 1, 1, " axis ", false},
    {"Identity", OIMP_OP_NONE, oimp_h_identity, 1, 1, NOATTR, false},
    {"Reshape", LOOM_GRAPH_OP_RESHAPE, h_reshape, 2, 2, " allowzero ", false},
    {"Transpose", LOOM_GRAPH_OP_PERMUTE_DIMS, h_transpose, 1, 1, " perm ", false},
    {"Unsqueeze", LOOM_GRAPH_OP_EXPAND_DIMS, h_axes_shape, 1, 2, " axes ", false},
    {"Squeeze", LOOM_GRAPH_OP_SQUEEZE, h_axes_shape, 1, 2, " axes ", false},
    {"Concat", LOOM_GRAPH_OP_CONCAT, h_concat, 1, OIMP_VARIADIC, " axis ", false},
    {"ReduceSum", LOOM_GRAPH_OP_SUM, oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMean", LOOM_GRAPH_OP_MEAN, oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMax", LOOM_GRAPH_OP_MAX, oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMin", LOOM_GRAPH_OP_MIN, oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceProd", LOOM_GRAPH_OP_PROD, oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"Gather", LOOM_GRAPH_OP_TAKE, h_gather, 2, 2, " axis ", false},
    {"Flatten", LOOM_GRAPH_OP_FLATTEN, h_axis, 1, 1, " axis ", false},
    {"Clip", LOOM_GRAPH_OP_CLIP, h_clip, 1, 3, " min max ", false},
    {"LayerNormalization", LOOM_GRAPH_OP_LAYER_NORM, h_layernorm, 2, 3, " axis epsilon stash_type ", true},
};
const size_t oimp_core_table_len = sizeof oimp_core_table / sizeof oimp_core_table[0];

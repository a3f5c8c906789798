/* onnx_import_symval.c — shape computations folded into symbolic expressions at import.
 *
 * Exporters compute shapes at run time: Shape(x) -> Gather -> Unsqueeze -> Concat -> Reshape,
 * Shape -> Slice -> ConstantOfShape, Range(0, Shape(x)[1]), ... When x has symbolic dims these
 * chains cannot be folded to constants, but each value is a short integer vector whose
 * elements are symbolic expressions of the graph's vars (b, s, 3*s, s + past). This file
 * tracks such values (oimp_symval) through the shape ops, so that the consumers (Reshape,
 * Expand, ConstantOfShape, Tile, Range, Slice) receive symbolic dims instead of run-time
 * tensors, and no shape tensor is left at run time. A value that leaves this world (cast to
 * float, fed to a data op) is still a real graph value: a `sym_tensor` op materialises it. */
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

static oimp_symval *symval_new(imp *im, loom_dtype dt, int rank, size_t n) {
  oimp_symval *sv = LOOM_ARENA_NEW(loom_graph_module_arena(im->m), oimp_symval);
  if (sv) sv->dtype = dt, sv->rank = rank, sv->n = n;
  return sv;
}

static bool is_index_dtype(loom_dtype dt) { return dt == LOOM_DTYPE_I64 || dt == LOOM_DTYPE_I32; }

bool oimp_symval_of(const nctx *c, size_t i, oimp_symval *out) {
  if (i >= c->nargs) return false;
  if (c->syms[i]) {
    *out = *c->syms[i];
    return true;
  }
  const loom_onnx_tensor *t = c->consts[i];
  if (!c->args[i] || !t || t->rank > 1 || t->numel > OIMP_SYMVAL_MAX) return false;
  if (!is_index_dtype(t->dtype) && t->dtype != LOOM_DTYPE_BOOL) return false;
  loom_graph_tensor g = {.dtype = t->dtype, .ndim = (int)t->rank, .numel = (size_t)t->numel, .data = t->data};
  out->dtype = t->dtype, out->rank = (int)t->rank, out->n = (size_t)t->numel;
  for (size_t k = 0; k < out->n; k++)
    if (!(out->v[k] = loom_sym_const(c->im->cx, loom_graph_tensor_get_i64(&g, k)))) return false;
  return true;
}

loom_status oimp_sym_ints(const nctx *c, size_t i, const char *what, const loom_sym_expr **buf, size_t cap, size_t *n) {
  oimp_symval sv;
  if (!oimp_symval_of(c, i, &sv) || !is_index_dtype(sv.dtype))
    return UNSUP(c->n, "input %zu (%s) must be a constant or computed from shapes", i, what);
  if (sv.n > cap) return UNSUP(c->n, "input %zu (%s) has %zu values (at most %zu)", i, what, sv.n, cap);
  memcpy(buf, sv.v, sv.n * sizeof *buf);
  *n = sv.n;
  return LOOM_OK;
}

/* ---- the ops ------------------------------------------------------------------------- */

typedef enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MOD, BIN_MAX, BIN_MIN, BIN_EQ, BIN_LT, BIN_LE, BIN_GT, BIN_GE } bin_kind;

/* One element of a binary op; NULL when it cannot be expressed (the caller then leaves the node
 * to run at run time). Integer Div truncates in ONNX, so it is folded only where floor and
 * truncation agree (a >= 0, b > 0 provably); likewise Mod (sign of the divisor) for b > 0. */
static const loom_sym_expr *bin_elem(loom_sym_ctx *cx, bin_kind k, const loom_sym_expr *a, const loom_sym_expr *b) {
  const loom_sym_expr *zero = loom_sym_const(cx, 0);
  switch (k) {
    case BIN_ADD: return loom_sym_add(cx, a, b);
    case BIN_SUB: return loom_sym_sub(cx, a, b);
    case BIN_MUL: return loom_sym_mul(cx, a, b);
    case BIN_MAX: return loom_sym_max(cx, a, b);
    case BIN_MIN: return loom_sym_min(cx, a, b);
    case BIN_DIV:
    case BIN_MOD:
      if (loom_sym_prove_lt(cx, zero, b) != LOOM_SYM_TRUE) return NULL;
      if (k == BIN_MOD) return loom_sym_floormod(cx, a, b);
      if (loom_sym_prove_le(cx, zero, a) != LOOM_SYM_TRUE) return NULL;
      return loom_sym_floordiv(cx, a, b);
    case BIN_EQ: return loom_sym_cmp(cx, LOOM_SYM_EQ, a, b);
    case BIN_LT: return loom_sym_cmp(cx, LOOM_SYM_LT, a, b);
    case BIN_LE: return loom_sym_cmp(cx, LOOM_SYM_LE, a, b);
    case BIN_GT: return loom_sym_cmp(cx, LOOM_SYM_LT, b, a);
    case BIN_GE: return loom_sym_cmp(cx, LOOM_SYM_LE, b, a);
  }
  return NULL;
}

static const struct {
  const char *onnx;
  bin_kind k;
} bin_ops[] = {{"Add", BIN_ADD},   {"Sub", BIN_SUB},  {"Mul", BIN_MUL},     {"Div", BIN_DIV},
               {"Mod", BIN_MOD},   {"Max", BIN_MAX},  {"Min", BIN_MIN},     {"Equal", BIN_EQ},
               {"Less", BIN_LT},   {"LessOrEqual", BIN_LE}, {"Greater", BIN_GT}, {"GreaterOrEqual", BIN_GE}};

/* A condition as 0/1: decided when provable, else kept as a select. */
static const loom_sym_expr *as_bool(loom_sym_ctx *cx, const loom_sym_expr *cond) {
  loom_sym_truth t = loom_sym_prove(cx, cond);
  if (t == LOOM_SYM_TRUE) return loom_sym_const(cx, 1);
  if (t == LOOM_SYM_FALSE) return loom_sym_const(cx, 0);
  return loom_sym_select(cx, cond, loom_sym_const(cx, 1), loom_sym_const(cx, 0));
}

static bool broadcast_n(const oimp_symval *a, const oimp_symval *b, size_t *n) {
  if (a->n != b->n && a->n != 1 && b->n != 1) return false;
  *n = a->n > b->n ? a->n : b->n;
  if (a->n == 0 || b->n == 0) *n = 0;
  return true;
}

static loom_status sv_binary(nctx *c, bin_kind k, oimp_symval **out) {
  oimp_symval a, b;
  size_t n;
  if (!oimp_symval_of(c, 0, &a) || !oimp_symval_of(c, 1, &b) || !broadcast_n(&a, &b, &n)) return LOOM_OK;
  if (a.dtype == LOOM_DTYPE_BOOL || b.dtype == LOOM_DTYPE_BOOL) return LOOM_OK;
  bool cmp = k >= BIN_EQ;
  oimp_symval *r = symval_new(c->im, cmp ? LOOM_DTYPE_BOOL : a.dtype, a.rank > b.rank ? a.rank : b.rank, n);
  if (!r) return LOOM_OOM();
  loom_sym_ctx *cx = c->im->cx;
  for (size_t i = 0; i < n; i++) {
    const loom_sym_expr *e = bin_elem(cx, k, a.v[a.n == 1 ? 0 : i], b.v[b.n == 1 ? 0 : i]);
    if (e && cmp) e = as_bool(cx, e);
    if (e) e = loom_sym_simplify(cx, e);
    if (!e) {
      loom_status s = loom_sym_ctx_take_error(cx);
      if (s) loom_status_free(s);
      return LOOM_OK;
    }
    r->v[i] = e;
  }
  *out = r;
  return LOOM_OK;
}

static loom_status sv_shape(nctx *c, oimp_symval **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return LOOM_OK;
  int r = si->ndim;
  int64_t start, end;
  LOOM_PROPAGATE(oimp_attr_int(c, "start", 0, &start));
  LOOM_PROPAGATE(oimp_attr_int(c, "end", r, &end));
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < start ? start : end > r ? r : end;
  oimp_symval *sv = symval_new(c->im, LOOM_DTYPE_I64, 1, (size_t)(end - start));
  if (!sv) return LOOM_OOM();
  for (int64_t k = start; k < end; k++) sv->v[k - start] = si->dims[k];
  *out = sv;
  return LOOM_OK;
}

static loom_status sv_size(nctx *c, oimp_symval **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return LOOM_OK;
  const loom_sym_expr *p = loom_sym_const(c->im->cx, 1);
  for (int k = 0; k < si->ndim && p; k++) p = loom_sym_mul(c->im->cx, p, si->dims[k]);
  oimp_symval *sv = symval_new(c->im, LOOM_DTYPE_I64, 0, 1);
  if (!sv || !p) return LOOM_OOM();
  sv->v[0] = p;
  *out = sv;
  return LOOM_OK;
}

/* Gather along axis 0 of a 1-D value with constant indices. */
static loom_status sv_gather(nctx *c, oimp_symval **out) {
  int64_t axis;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  oimp_symval d, idx;
  if ((axis != 0 && axis != -1) || !oimp_symval_of(c, 0, &d) || d.rank != 1 || !c->consts[1] ||
      !oimp_symval_of(c, 1, &idx))
    return LOOM_OK;
  oimp_symval *r = symval_new(c->im, d.dtype, idx.rank, idx.n);
  if (!r) return LOOM_OOM();
  for (size_t i = 0; i < idx.n; i++) {
    int64_t j;
    if (!loom_sym_is_const(idx.v[i], &j)) return LOOM_OK;
    if (j < 0) j += (int64_t)d.n;
    if (j < 0 || j >= (int64_t)d.n) return BAD(c->n, "index %lld out of range for %zu values", (long long)j, d.n);
    r->v[i] = d.v[j];
  }
  *out = r;
  return LOOM_OK;
}

/* Slice of a 1-D value with constant starts / ends / axes / steps (opset >= 10). */
static loom_status sv_slice(nctx *c, oimp_symval **out) {
  oimp_symval d;
  if (c->im->opset < 10 || !oimp_symval_of(c, 0, &d) || d.rank != 1) return LOOM_OK;
  int64_t st, en, ax = 0, sp = 1, v[2];
  size_t n;
  for (size_t i = 1; i < c->nargs; i++)
    if ((c->args[i] || c->syms[i]) && !c->consts[i]) return LOOM_OK;
  LOOM_PROPAGATE(oimp_const_ints(c, 1, "starts", v, 1, &n));
  if (n != 1) return LOOM_OK;
  st = v[0];
  LOOM_PROPAGATE(oimp_const_ints(c, 2, "ends", v, 1, &n));
  if (n != 1) return LOOM_OK;
  en = v[0];
  if (oimp_has_input(c, 3)) {
    LOOM_PROPAGATE(oimp_const_ints(c, 3, "axes", v, 1, &n));
    if (n != 1 || (v[0] != 0 && v[0] != -1)) return LOOM_OK;
  }
  if (oimp_has_input(c, 4)) {
    LOOM_PROPAGATE(oimp_const_ints(c, 4, "steps", v, 1, &n));
    if (n != 1 || v[0] == 0) return LOOM_OK;
    sp = v[0];
  }
  (void)ax;
  int64_t len = (int64_t)d.n;
  /* ONNX / NumPy clamping: negative counts from the end; then into [0, len] (step > 0) or
   * [-1, len - 1] (step < 0). */
  if (st < 0) st += len;
  if (en < 0) en += len;
  if (sp > 0) {
    st = st < 0 ? 0 : st > len ? len : st;
    en = en < 0 ? 0 : en > len ? len : en;
  } else {
    st = st < -1 ? -1 : st > len - 1 ? len - 1 : st;
    en = en < -1 ? -1 : en > len - 1 ? len - 1 : en;
  }
  oimp_symval *r = symval_new(c->im, d.dtype, 1, 0);
  if (!r) return LOOM_OOM();
  for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp) r->v[r->n++] = d.v[i];
  *out = r;
  return LOOM_OK;
}

static loom_status sv_concat(nctx *c, oimp_symval **out) {
  int64_t axis;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  if (axis != 0 && axis != -1) return LOOM_OK;
  oimp_symval *r = symval_new(c->im, LOOM_DTYPE_I64, 1, 0);
  if (!r) return LOOM_OOM();
  for (size_t i = 0; i < c->nargs; i++) {
    oimp_symval a;
    if (!oimp_symval_of(c, i, &a) || a.rank != 1 || r->n + a.n > OIMP_SYMVAL_MAX) return LOOM_OK;
    if (i == 0) r->dtype = a.dtype;
    memcpy(&r->v[r->n], a.v, a.n * sizeof a.v[0]);
    r->n += a.n;
  }
  *out = r;
  return LOOM_OK;
}

/* Unsqueeze of a scalar to (1,), Squeeze of (1,) to a scalar, Reshape between the two or
 * to (-1,) / (n,): the only reshapes a shape value goes through. */
static loom_status sv_rerank(nctx *c, int rank, oimp_symval **out) {
  oimp_symval a;
  if (!oimp_symval_of(c, 0, &a)) return LOOM_OK;
  if (rank == 0 && a.n != 1) return LOOM_OK;
  oimp_symval *r = symval_new(c->im, a.dtype, rank, a.n);
  if (!r) return LOOM_OOM();
  memcpy(r->v, a.v, a.n * sizeof a.v[0]);
  *out = r;
  return LOOM_OK;
}

static loom_status sv_unsqueeze(nctx *c, oimp_symval **out) {
  int64_t ax[2];
  size_t n;
  bool pr;
  oimp_symval a;
  if (!oimp_symval_of(c, 0, &a) || a.rank != 0) return LOOM_OK;
  if (c->im->opset >= 13 && (c->nargs < 2 || !c->consts[1])) return LOOM_OK;
  LOOM_PROPAGATE(oimp_get_axes(c, 13, ax, 2, &n, &pr));
  if (n != 1 || (ax[0] != 0 && ax[0] != -1)) return LOOM_OK;
  return sv_rerank(c, 1, out);
}

static loom_status sv_squeeze(nctx *c, oimp_symval **out) {
  oimp_symval a;
  if (!oimp_symval_of(c, 0, &a) || a.rank != 1 || a.n != 1) return LOOM_OK;
  if (c->nargs > 1 && (c->args[1] || c->syms[1]) && !c->consts[1]) return LOOM_OK;
  return sv_rerank(c, 0, out);
}

static loom_status sv_reshape(nctx *c, oimp_symval **out) {
  oimp_symval a;
  int64_t shp[2];
  size_t n;
  if (!oimp_symval_of(c, 0, &a) || !c->consts[1]) return LOOM_OK;
  if (c->consts[1]->numel > 1) return LOOM_OK;
  LOOM_PROPAGATE(oimp_const_ints(c, 1, "shape", shp, 1, &n));
  if (n == 0) return a.n == 1 ? sv_rerank(c, 0, out) : LOOM_OK;
  if (shp[0] == -1 || shp[0] == (int64_t)a.n) return sv_rerank(c, 1, out);
  return LOOM_OK;
}

static loom_status sv_cast(nctx *c, oimp_symval **out) {
  int64_t to;
  oimp_symval a;
  loom_dtype dt;
  LOOM_PROPAGATE(oimp_attr_int(c, "to", 0, &to));
  if (!oimp_symval_of(c, 0, &a) || !loom_onnx_elem_dtype((int)to, &dt) || !is_index_dtype(dt)) return LOOM_OK;
  if (a.dtype == LOOM_DTYPE_BOOL) return LOOM_OK;
  oimp_symval *r = symval_new(c->im, dt, a.rank, a.n);
  if (!r) return LOOM_OOM();
  memcpy(r->v, a.v, a.n * sizeof a.v[0]);
  *out = r;
  return LOOM_OK;
}

static loom_status sv_where(nctx *c, oimp_symval **out) {
  oimp_symval k, a, b;
  size_t n, n2;
  if (!oimp_symval_of(c, 0, &k) || !oimp_symval_of(c, 1, &a) || !oimp_symval_of(c, 2, &b)) return LOOM_OK;
  if (!broadcast_n(&a, &b, &n) || !broadcast_n(&k, &(oimp_symval){.n = n}, &n2) || a.dtype == LOOM_DTYPE_BOOL) return LOOM_OK;
  int rank = k.rank > a.rank ? k.rank : a.rank;
  oimp_symval *r = symval_new(c->im, a.dtype, rank > b.rank ? rank : b.rank, n2);
  if (!r) return LOOM_OOM();
  loom_sym_ctx *cx = c->im->cx;
  for (size_t i = 0; i < n2; i++) {
    const loom_sym_expr *cond = k.v[k.n == 1 ? 0 : i], *x = a.v[a.n == 1 ? 0 : i], *y = b.v[b.n == 1 ? 0 : i];
    int64_t kv;
    if (loom_sym_is_const(cond, &kv)) r->v[i] = kv ? x : y;
    else {
      const loom_sym_expr *nz = loom_sym_cmp(cx, LOOM_SYM_NE, cond, loom_sym_const(cx, 0));
      if (!nz || !(r->v[i] = loom_sym_select(cx, nz, x, y))) return LOOM_OOM();
    }
  }
  *out = r;
  return LOOM_OK;
}

static loom_status sv_neg(nctx *c, oimp_symval **out) {
  oimp_symval a;
  if (!oimp_symval_of(c, 0, &a) || a.dtype == LOOM_DTYPE_BOOL) return LOOM_OK;
  oimp_symval *r = symval_new(c->im, a.dtype, a.rank, a.n);
  if (!r) return LOOM_OOM();
  for (size_t i = 0; i < a.n; i++)
    if (!(r->v[i] = loom_sym_neg(c->im->cx, a.v[i]))) return LOOM_OOM();
  *out = r;
  return LOOM_OK;
}

loom_status oimp_symval_node(nctx *c, oimp_symval **out) {
  *out = NULL;
  const char *op = c->n->op_type;
  if (c->nargs == 0 || (!c->args[0] && !c->syms[0])) return LOOM_OK;
  if (!c->args[0]) { /* Shape / Size of a symbolic value: its shape is static */
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
      bool shape = strcmp(op, "Shape") == 0;
      oimp_symval *r = symval_new(c->im, LOOM_DTYPE_I64, shape ? 1 : 0, shape ? (size_t)c->syms[0]->rank : 1);
      if (!r) return LOOM_OOM();
      if (r->n) r->v[0] = loom_sym_const(c->im->cx, (int64_t)c->syms[0]->n);
      *out = r;
      return LOOM_OK;
    }
  } else if (strcmp(op, "Shape") == 0) {
    return sv_shape(c, out);
  } else if (strcmp(op, "Size") == 0) {
    return sv_size(c, out);
  }
  bool any = false;
  for (size_t i = 0; i < c->nargs; i++) any = any || c->syms[i];
  if (!any) return LOOM_OK;
  for (size_t i = 0; i < sizeof bin_ops / sizeof bin_ops[0]; i++)
    if (strcmp(op, bin_ops[i].onnx) == 0) return c->nargs == 2 ? sv_binary(c, bin_ops[i].k, out) : LOOM_OK;
  if (strcmp(op, "Identity") == 0) return sv_rerank(c, c->syms[0]->rank, out);
  if (strcmp(op, "Gather") == 0) return sv_gather(c, out);
  if (strcmp(op, "Slice") == 0) return sv_slice(c, out);
  if (strcmp(op, "Concat") == 0) return sv_concat(c, out);
  if (strcmp(op, "Unsqueeze") == 0) return sv_unsqueeze(c, out);
  if (strcmp(op, "Squeeze") == 0) return sv_squeeze(c, out);
  if (strcmp(op, "Reshape") == 0) return sv_reshape(c, out);
  if (strcmp(op, "Cast") == 0) return sv_cast(c, out);
  if (strcmp(op, "Where") == 0) return sv_where(c, out);
  if (strcmp(op, "Neg") == 0) return sv_neg(c, out);
  return LOOM_OK;
}

loom_status oimp_symval_bind(imp *im, const char *name, const oimp_symval *sv) {
  int64_t k;
  bool all_const = true;
  for (size_t i = 0; i < sv->n; i++) all_const = all_const && loom_sym_is_const(sv->v[i], &k);
  if (all_const) {
    int64_t n = (int64_t)sv->n;
    loom_onnx_tensor *t = oimp_new_tensor(im, sv->dtype, (size_t)sv->rank, &n);
    if (!t) return LOOM_OOM();
    loom_graph_tensor g = {.dtype = sv->dtype, .ndim = sv->rank, .numel = sv->n, .data = t->data};
    for (size_t i = 0; i < sv->n; i++) {
      loom_sym_is_const(sv->v[i], &k);
      loom_graph_tensor_set_i64(&g, i, k);
    }
    loom_graph_expr *e = oimp_const_of(im, t);
    if (!e) return LOOM_OOM();
    return oimp_bind(im, name, e, t);
  }
  LOOM_PROPAGATE(oimp_bind(im, name, NULL, NULL)); /* the graph expr is made on first use */
  im->val_syms[im->nvals - 1] = sv;
  return LOOM_OK;
}

loom_status oimp_symval_expr(imp *im, const char *name, const oimp_symval *sv, loom_graph_expr **out) {
  loom_graph_attr attrs[3];
  size_t na = 0;
  attrs[na++] = loom_graph_attr_syms(im->m, "values", sv->n, sv->v);
  if (sv->rank == 0) attrs[na++] = loom_graph_attr_int(im->m, "scalar", 1);
  if (sv->dtype != LOOM_DTYPE_I64) attrs[na++] = loom_graph_attr_dtype(im->m, "dtype", sv->dtype);
  const char *nm = oimp_ir_name(im, name);
  if (!nm) return LOOM_OOM();
  return loom_graph_builder_emit(&im->b, loom_graph_call_op(im->m, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, na, attrs), nm, out);
}

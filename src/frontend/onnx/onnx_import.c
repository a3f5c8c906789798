/* onnx_import.c — ONNX nodes -> graph ops through one table (see onnx_import.h). */
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_import_internal.h"
#include "graph/passes.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


loom_status oimp_node_err(loom_code code, const loom_onnx_node *n, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return loom_status_make(code, __FILE__, __LINE__, "node %zu (%s%s%s%s): %s", n->index, n->op_type,
                          *n->name ? " '" : "", n->name, *n->name ? "'" : "", msg);
}

static bool name_used(const imp *im, const char *n) {
  for (size_t i = 0; i < im->nused; i++)
    if (im->used[i] == n) return true;
  return false;
}

const char *oimp_ir_name(imp *im, const char *onnx) {
  static const char *const reserved[] = {"return", "dataflow", "output", "if", "else", "match_cast", "fn", "const",
                                         "extern", "prim", "shape", "sym", "call_tp", "call_extern"};
  size_t n = strlen(onnx);
  if (n > 200) n = 200;
  char buf[256];
  size_t k = 0;
  if (n == 0 || (onnx[0] >= '0' && onnx[0] <= '9')) buf[k++] = 'v';
  for (size_t i = 0; i < n; i++) {
    char ch = onnx[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    buf[k++] = ok ? ch : '_';
  }
  buf[k] = 0;
  bool clash = buf[0] == 't' && k > 1 && strspn(buf + 1, "0123456789") == k - 1; /* the builder's tN */
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (strcmp(buf, reserved[i]) == 0) clash = true;
  if (clash) buf[k++] = '_', buf[k] = 0;
  const char *r = loom_graph_module_intern(im->m, buf, k);
  for (unsigned s = 2; r && name_used(im, r); s++) {
    int w = snprintf(buf + k, sizeof buf - k, "_%u", s);
    r = loom_graph_module_intern(im->m, buf, k + (size_t)w);
  }
  if (!r) return NULL;
  if (im->nused == im->capused) {
    size_t c = im->capused ? im->capused * 2 : 64;
    const char **a = realloc(im->used, c * sizeof *a);
    if (!a) return NULL;
    im->used = a, im->capused = c;
  }
  im->used[im->nused++] = r;
  return r;
}

loom_status oimp_bind(imp *im, const char *name, loom_graph_expr *e, const loom_onnx_tensor *t) {
  if (im->nvals == im->capvals) {
    size_t c = im->capvals ? im->capvals * 2 : 64;
    const char **a = realloc(im->val_names, c * sizeof *a);
    if (!a) return LOOM_OOM();
    im->val_names = a;
    loom_graph_expr **v = realloc(im->vals, c * sizeof *v);
    if (!v) return LOOM_OOM();
    im->vals = v;
    const loom_onnx_tensor **k = realloc(im->val_consts, c * sizeof *k);
    if (!k) return LOOM_OOM();
    im->val_consts = k;
    const oimp_symval **sy = realloc(im->val_syms, c * sizeof *sy);
    if (!sy) return LOOM_OOM();
    im->val_syms = sy;
    const oimp_seq **sq = realloc(im->val_seqs, c * sizeof *sq);
    if (!sq) return LOOM_OOM();
    im->val_seqs = sq;
    im->capvals = c;
  }
  im->val_names[im->nvals] = name;
  im->vals[im->nvals] = e;
  im->val_consts[im->nvals] = t;
  im->val_syms[im->nvals] = NULL;
  im->val_seqs[im->nvals] = NULL;
  im->nvals++;
  return LOOM_OK;
}

loom_status oimp_bind_seq(imp *im, const char *name, const oimp_seq *sq) {
  LOOM_PROPAGATE(oimp_bind(im, name, NULL, NULL));
  im->val_seqs[im->nvals - 1] = sq;
  return LOOM_OK;
}

/* The innermost binding of `name`: the values bound last (a subgraph's, inside its scope) are
 * searched first, so a body sees the enclosing graphs' values. */
static ssize_t find_val(const imp *im, const char *name) {
  for (size_t i = im->nvals; i-- > 0;)
    if (im->val_names[i] == name || strcmp(im->val_names[i], name) == 0) return (ssize_t)i;
  return -1;
}

/* The graph expr of value v: a symbolic value is materialised (sym_tensor) on its first use as
 * a tensor, so shape computations consumed only symbolically leave nothing in the graph. */
static loom_status value_expr(imp *im, size_t v, loom_graph_expr **out) {
  if (!im->vals[v] && !im->val_syms[v])
    return LOOM_ERROR(UNIMPLEMENTED, "'%s' is a sequence or optional, not a tensor", im->val_names[v]);
  if (!im->vals[v]) {
    LOOM_PROPAGATE(oimp_symval_expr(im, im->val_names[v], im->val_syms[v], &im->vals[v]));
    im->nsymvals++;
  }
  *out = im->vals[v];
  return LOOM_OK;
}

bool oimp_lookup(imp *im, const char *name, oimp_binding *out) {
  ssize_t v = find_val(im, name);
  if (v < 0) return false;
  *out = (oimp_binding){im->vals[v], im->val_consts[v], im->val_syms[v], im->val_seqs[v]};
  return true;
}

loom_status oimp_lookup_expr(imp *im, const char *name, loom_graph_expr **out) {
  ssize_t v = find_val(im, name);
  if (v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "value '%s' is not defined", name);
  return value_expr(im, (size_t)v, out);
}

loom_status oimp_bind_as(imp *im, const char *name, const oimp_binding *b) {
  LOOM_PROPAGATE(oimp_bind(im, name, b->e, b->k));
  im->val_syms[im->nvals - 1] = b->sym;
  im->val_seqs[im->nvals - 1] = b->seq;
  return LOOM_OK;
}

static const loom_sym_expr *dim_sym(imp *im, const loom_onnx_dim *d) {
  if (d->kind == LOOM_ONNX_DIM_VALUE) return loom_sym_const(im->cx, d->value);
  char buf[32];
  const char *name = d->param;
  if (d->kind == LOOM_ONNX_DIM_UNKNOWN) {
    snprintf(buf, sizeof buf, "unk%u", im->unk++);
    name = buf;
  } else {
    for (size_t i = 0; i < im->nsyms; i++)
      if (strcmp(im->sym_names[i], name) == 0) return im->syms[i];
  }
  const loom_sym_expr *v = loom_sym_var_new(im->cx, name, LOOM_SYM_VAR_SHAPE);
  if (!v) return NULL;
  if (d->kind == LOOM_ONNX_DIM_PARAM) {
    if (im->nsyms == im->capsyms) {
      size_t c = im->capsyms ? im->capsyms * 2 : 8;
      const char **a = realloc(im->sym_names, c * sizeof *a);
      if (!a) return NULL;
      im->sym_names = a;
      const loom_sym_expr **s = realloc(im->syms, c * sizeof *s);
      if (!s) return NULL;
      im->syms = s;
      im->capsyms = c;
    }
    im->sym_names[im->nsyms] = name;
    im->syms[im->nsyms++] = v;
  }
  return v;
}

loom_graph_expr *oimp_const_of(imp *im, const loom_onnx_tensor *t) {
  const loom_sym_expr *dims[16];
  if (t->rank > 16) return NULL;
  for (size_t k = 0; k < t->rank; k++) dims[k] = loom_sym_const(im->cx, t->dims[k]);
  const loom_sinfo *si = loom_sinfo_tensor(im->m, t->dtype, (int)t->rank, dims, NULL);
  if (!si) return NULL;
  return loom_graph_const_new(im->m, si, t->data, t->nbytes);
}

/* A fresh host tensor in the module arena (for folded constants). */
loom_onnx_tensor *oimp_new_tensor(imp *im, loom_dtype dt, size_t rank, const int64_t *dims) {
  loom_arena *a = loom_graph_module_arena(im->m);
  loom_onnx_tensor *t = LOOM_ARENA_NEW(a, loom_onnx_tensor);
  if (!t) return NULL;
  t->name = "", t->dtype = dt, t->rank = rank, t->numel = 1;
  t->dims = loom_arena_array(a, rank ? rank : 1, sizeof(int64_t), _Alignof(int64_t));
  if (!t->dims) return NULL;
  for (size_t k = 0; k < rank; k++) {
    if (dims[k] < 0 || (dims[k] && t->numel > OIMP_FOLD_MAX / dims[k])) return NULL; /* see OIMP_FOLD_MAX */
    t->dims[k] = dims[k], t->numel *= dims[k];
  }
  t->nbytes = (size_t)t->numel * loom_dtype_size(dt);
  t->data = loom_arena_alloc_zero(a, t->nbytes ? t->nbytes : 1, 16);
  return t->data ? t : NULL;
}

/* ---- node context ---------------------------------------------------------- */


bool oimp_has_input(const nctx *c, size_t i) { return i < c->n->n_inputs && *c->n->inputs[i]; }

int oimp_in_rank(const nctx *c, size_t i) {
  const loom_sinfo *s = c->args[i] ? c->args[i]->sinfo : NULL;
  return s && s->kind == LOOM_SINFO_TENSOR ? s->ndim : LOOM_SINFO_NDIM_UNKNOWN;
}

loom_status oimp_attr_int(const nctx *c, const char *name, int64_t def, int64_t *out) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  *out = def;
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_INT)
    return BAD(c->n, "attribute '%s' must be int, not %s", name, loom_onnx_attr_kind_name(a->kind));
  *out = a->i;
  return LOOM_OK;
}

loom_status oimp_attr_float(const nctx *c, const char *name, double def, double *out) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  *out = def;
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_FLOAT)
    return BAD(c->n, "attribute '%s' must be float, not %s", name, loom_onnx_attr_kind_name(a->kind));
  *out = a->f;
  return LOOM_OK;
}

/* Integers from attribute `name` (INTS), or NULL/0 when absent. */
loom_status oimp_attr_ints(const nctx *c, const char *name, const int64_t **v, size_t *n, bool *present) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  *v = NULL, *n = 0, *present = a != NULL;
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_INTS)
    return BAD(c->n, "attribute '%s' must be ints, not %s", name, loom_onnx_attr_kind_name(a->kind));
  *v = a->ints, *n = a->count;
  return LOOM_OK;
}

/* Integers of constant input `i` (i64 / i32), folded. */
loom_status oimp_const_ints(const nctx *c, size_t i, const char *what, int64_t *buf, size_t cap, size_t *n) {
  const loom_onnx_tensor *t = c->consts[i];
  if (!t) return UNSUP(c->n, "input %zu (%s) must be a constant (initializer or Constant)", i, what);
  if (t->rank > 1 || (size_t)t->numel > cap)
    return UNSUP(c->n, "input %zu (%s) must be a small 1-D tensor", i, what);
  for (int64_t k = 0; k < t->numel; k++) {
    if (t->dtype == LOOM_DTYPE_I64) buf[k] = ((const int64_t *)t->data)[k];
    else if (t->dtype == LOOM_DTYPE_I32) buf[k] = ((const int32_t *)t->data)[k];
    else return BAD(c->n, "input %zu (%s) must be int64", i, what);
  }
  *n = (size_t)t->numel;
  return LOOM_OK;
}

/* Shape-like operand i (ConstantOfShape's shape, Expand's shape, Tile's repeats) as symbolic
 * dims: its values when it is a constant; else those of oimp_runtime_syms. */
loom_status oimp_shape_syms(nctx *c, size_t i, const char *what, const loom_sym_expr **dims, size_t cap, size_t *n) {
  imp *im = c->im;
  if (c->syms[i]) return oimp_sym_ints(c, i, what, dims, cap, n);
  if (c->consts[i]) {
    int64_t v[16];
    LOOM_PROPAGATE(oimp_const_ints(c, i, what, v, cap < 16 ? cap : 16, n));
    for (size_t k = 0; k < *n; k++)
      if (!(dims[k] = loom_sym_const(im->cx, v[k]))) return LOOM_OOM();
    return LOOM_OK;
  }
  const loom_sinfo *si = c->args[i]->sinfo;
  int64_t len;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim != 1 || !si->dims || !loom_sym_is_const(si->dims[0], &len) ||
      len > (int64_t)cap || (si->dtype != LOOM_DTYPE_I64 && si->dtype != LOOM_DTYPE_I32))
    return UNSUP(c->n, "input %zu (%s) must be a constant or a 1-D integer tensor of static length", i, what);
  *n = (size_t)len;
  return oimp_runtime_syms(c, c->args[i], c->n->inputs[i], dims, *n);
}

/* The n values of v (a 1-D i32 / i64 tensor of static length n, computed at run time) as
 * symbolic dims: `tensor_to_shape` then a match_cast to Shape[(v_0, ..., v_n-1)] binds each
 * element to a fresh symbolic var named after `onnx` (they must be dims: >= 0, checked when
 * it runs). */
loom_status oimp_runtime_syms(nctx *c, loom_graph_expr *v, const char *onnx, const loom_sym_expr **dims, size_t n) {
  imp *im = c->im;
  loom_graph_expr *sv;
  LOOM_PROPAGATE(oimp_emit(c, "tensor_to_shape", 1, &v, NULL, &sv));
  for (size_t k = 0; k < n; k++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s_%zu", onnx, k);
    const char *nm = oimp_ir_name(im, buf);
    for (size_t j = 0; nm && j < im->nsyms; j++) /* not a dim_param's name */
      if (strcmp(im->sym_names[j], nm) == 0) j = 0, nm = oimp_ir_name(im, buf);
    if (!nm || !(dims[k] = loom_sym_var_new(im->cx, nm, LOOM_SYM_VAR_SHAPE))) return LOOM_OOM();
  }
  const loom_sinfo *to = loom_sinfo_shape(im->m, (int)n, dims);
  char buf[256];
  snprintf(buf, sizeof buf, "%s_dims", onnx);
  const char *nm = oimp_ir_name(im, buf);
  if (!nm) return LOOM_OOM();
  loom_status s = loom_graph_builder_match_cast(&im->b, sv, to, nm, &sv);
  if (s) {
    loom_status e = oimp_node_err(loom_status_code(s), c->n, "%s", loom_status_message(s));
    loom_status_free(s);
    return e;
  }
  return LOOM_OK;
}

/* Axes from the attribute `axes` (opset < since) or input 1 (opset >= since). */
loom_status oimp_get_axes(const nctx *c, int64_t since, int64_t *buf, size_t cap, size_t *n, bool *present) {
  if (c->im->opset >= since) {
    if (loom_onnx_node_attr(c->n, "axes")) return BAD(c->n, "attribute 'axes' is an input since opset %lld", (long long)since);
    *present = oimp_has_input(c, 1), *n = 0;
    if (!*present) return LOOM_OK;
    return oimp_const_ints(c, 1, "axes", buf, cap, n);
  }
  const int64_t *v;
  LOOM_PROPAGATE(oimp_attr_ints(c, "axes", &v, n, present));
  if (*n > cap) return UNSUP(c->n, "too many axes");
  for (size_t k = 0; k < *n; k++) buf[k] = v[k];
  return LOOM_OK;
}

loom_status oimp_norm_axes(const nctx *c, int rank, int64_t *ax, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (ax[k] < 0) {
      if (rank < 0) return UNSUP(c->n, "a negative axis needs a known rank");
      ax[k] += rank;
    }
    if (ax[k] < 0 || (rank >= 0 && ax[k] >= rank)) return BAD(c->n, "axis %lld out of range for rank %d", (long long)ax[k], rank);
  }
  return LOOM_OK;
}

void oimp_add_attr(nctx *c, loom_graph_attr a) { c->attrs[c->nattrs++] = a; }

/* Emits `op` on c->args with c->attrs, returning the var. */
loom_status oimp_emit(nctx *c, const char *op, size_t nargs, loom_graph_expr *const *args, const char *name,
                        loom_graph_expr **out) {
  if (name && !(name = oimp_ir_name(c->im, name))) return LOOM_OOM();
  loom_status s = loom_graph_builder_op(&c->im->b, op, nargs, args, c->nattrs, c->attrs, name, out);
  c->nattrs = 0;
  if (s) {
    const loom_onnx_node *n = c->n;
    loom_status e = oimp_node_err(loom_status_code(s), n, "%s", loom_status_message(s));
    loom_status_free(s);
    return e;
  }
  return LOOM_OK;
}

loom_status oimp_op1(nctx *c, const char *op, loom_graph_expr *x, loom_graph_expr **y) {
  return oimp_emit(c, op, 1, &x, NULL, y);
}

loom_status oimp_op2(nctx *c, const char *op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr **y) {
  loom_graph_expr *ab[2] = {a, b};
  return oimp_emit(c, op, 2, ab, NULL, y);
}

loom_status oimp_op3(nctx *c, const char *op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr *d,
                     loom_graph_expr **y) {
  loom_graph_expr *abd[3] = {a, b, d};
  return oimp_emit(c, op, 3, abd, NULL, y);
}

loom_status oimp_scalar(nctx *c, loom_dtype dt, double v, loom_graph_expr **out) {
  *out = loom_graph_const_scalar(c->im->m, dt, v);
  return *out ? LOOM_OK : LOOM_OOM();
}

loom_status oimp_op_k(nctx *c, const char *op, loom_graph_expr *x, double v, loom_graph_expr **y) {
  loom_graph_expr *k;
  LOOM_PROPAGATE(oimp_scalar(c, x->sinfo->dtype, v, &k));
  return oimp_op2(c, op, x, k, y);
}

loom_status oimp_k_op(nctx *c, const char *op, double v, loom_graph_expr *x, loom_graph_expr **y) {
  loom_graph_expr *k;
  LOOM_PROPAGATE(oimp_scalar(c, x->sinfo->dtype, v, &k));
  return oimp_op2(c, op, k, x, y);
}

loom_status oimp_attr_str(const nctx *c, const char *name, const char *def, const char **out) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  *out = def;
  if (!a) return LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_STRING)
    return BAD(c->n, "attribute '%s' must be string, not %s", name, loom_onnx_attr_kind_name(a->kind));
  *out = a->s;
  return LOOM_OK;
}

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

static loom_status h_axis(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t axis;
  bool softmax = strcmp(e->onnx, "Softmax") == 0 || strcmp(e->onnx, "LogSoftmax") == 0;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", softmax ? (c->im->opset >= 13 ? -1 : 1) : (strcmp(e->onnx, "Flatten") == 0 ? 1 : 0), &axis));
  int r = oimp_in_rank(c, 0);
  if (axis < 0 && r >= 0 && !(strcmp(e->onnx, "Flatten") == 0 && axis + r < 0)) axis += r;
  if (softmax && c->im->opset < 13 && r >= 0 && axis != r - 1)
    return UNSUP(c->n, "%s before opset 13 flattens at axis %lld; only the last axis is supported", e->onnx, (long long)axis);
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

double oimp_scalar_f64(const loom_onnx_tensor *t) {
  loom_graph_tensor g = {.dtype = t->dtype, .ndim = 0, .numel = 1, .data = t->data};
  return loom_graph_tensor_get_f64(&g, 0);
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
          LOOM_PROPAGATE(oimp_emit(c, j == 1 ? "maximum" : "minimum", 2, ab, NULL, &y));
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
    LOOM_PROPAGATE(oimp_emit(c, "cast", 1, &c->args[1], NULL, &c->args[1]));
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
  LOOM_PROPAGATE(oimp_emit(c, "div", 2, ab, NULL, &q));
  LOOM_PROPAGATE(oimp_emit(c, "mod", 2, ab, NULL, &r));
  t[0] = r, t[1] = zero;
  LOOM_PROPAGATE(oimp_emit(c, "not_equal", 2, t, NULL, &nz));
  t[0] = a;
  LOOM_PROPAGATE(oimp_emit(c, "less", 2, t, NULL, &sa));
  t[0] = b;
  LOOM_PROPAGATE(oimp_emit(c, "less", 2, t, NULL, &sb));
  t[0] = sa, t[1] = sb;
  LOOM_PROPAGATE(oimp_emit(c, "logical_xor", 2, t, NULL, &d));
  t[0] = nz, t[1] = d;
  LOOM_PROPAGATE(oimp_emit(c, "logical_and", 2, t, NULL, &d));
  oimp_add_attr(c, loom_graph_attr_dtype(m, "dtype", dt));
  LOOM_PROPAGATE(oimp_emit(c, "cast", 1, &d, NULL, &d));
  t[0] = q, t[1] = d;
  return oimp_emit(c, "add", 2, t, c->n->outputs[0], out);
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
  LOOM_PROPAGATE(oimp_emit(c, "mod", 2, t, NULL, &r));
  t[0] = r, t[1] = zero;
  LOOM_PROPAGATE(oimp_emit(c, "not_equal", 2, t, NULL, &nz));
  t[0] = a;
  LOOM_PROPAGATE(oimp_emit(c, "less", 2, t, NULL, &sa));
  t[0] = b;
  LOOM_PROPAGATE(oimp_emit(c, "less", 2, t, NULL, &sb));
  t[0] = sa, t[1] = sb;
  LOOM_PROPAGATE(oimp_emit(c, "logical_xor", 2, t, NULL, &d));
  t[0] = nz, t[1] = d;
  LOOM_PROPAGATE(oimp_emit(c, "logical_and", 2, t, NULL, &d));
  t[0] = r, t[1] = b;
  LOOM_PROPAGATE(oimp_emit(c, "sub", 2, t, NULL, &rb));
  t[0] = d, t[1] = rb, t[2] = r;
  return oimp_emit(c, "where", 3, t, c->n->outputs[0], out);
}

loom_status oimp_fold_const(nctx *c, loom_onnx_tensor *t, loom_graph_expr **out) {
  loom_graph_expr *k = oimp_const_of(c->im, t);
  if (!k) return LOOM_OOM();
  c->folded = t;
  *out = k;
  return LOOM_OK;
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
    double v = 0;
    if (a) {
      loom_graph_tensor g = {.dtype = dt, .ndim = 0, .numel = 1, .data = a->t->data};
      v = loom_graph_tensor_get_f64(&g, 0);
    }
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", n, dims));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", v));
    return oimp_emit(c, "full", 0, NULL, c->n->outputs[0], out);
  }
  int64_t shp[16], numel = 1;
  size_t n;
  LOOM_PROPAGATE(oimp_const_ints(c, 0, "shape", shp, 16, &n));
  for (size_t k = 0; k < n; k++) {
    if (shp[k] < 0) return BAD(c->n, "shape[%zu] is %lld", k, (long long)shp[k]);
    if (shp[k] && numel > OIMP_FOLD_MAX / shp[k]) return UNSUP(c->n, "a constant of over %d elements", OIMP_FOLD_MAX);
    numel *= shp[k];
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
  return oimp_emit(c, "arange", 0, NULL, c->n->outputs[0], out);
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
  return oimp_emit(c, "sub", 2, ab, c->n->outputs[0], out);
}

/* Dropout at inference (no training_mode, or a constant false): y = x and a mask of all
 * true (output 1, when named). */
static loom_status h_dropout(nctx *c, const op_entry *e, loom_graph_expr **out) {
  if (oimp_has_input(c, 2)) {
    const loom_onnx_tensor *t = c->consts[2];
    if (!t || t->numel != 1 || oimp_scalar_f64(t) != 0) return UNSUP(c->n, "training_mode must be a constant false");
  }
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) {
    const loom_sinfo *si = c->args[0]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "the mask needs the input's rank");
    loom_graph_expr *mask;
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", (size_t)si->ndim, si->dims));
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_BOOL));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "value", 1));
    LOOM_PROPAGATE(oimp_emit(c, "full", 0, NULL, c->n->outputs[1], &mask));
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
  return oimp_emit(c, upper ? "triu" : "tril", 1, c->args, c->n->outputs[0], out);
}

static loom_status norm_flattened(nctx *c, const char *op, int64_t axis, size_t nin, double eps, loom_graph_expr **out);

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
  return oimp_emit(c, tanh_ ? "gelu_tanh" : "gelu", 1, c->args, c->n->outputs[0], out);
}

static loom_status h_reciprocal(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_graph_expr *ab[2] = {loom_graph_const_scalar(c->im->m, c->args[0]->sinfo->dtype, 1.0), c->args[0]};
  if (!ab[0]) return LOOM_OOM();
  return oimp_emit(c, "div", 2, ab, c->n->outputs[0], out);
}

/* Sum / Mean of N inputs: a chain of adds (Mean divides by N). */
static loom_status h_variadic(nctx *c, const op_entry *e, loom_graph_expr **out) {
  bool mean = strcmp(e->onnx, "Mean") == 0;
  loom_graph_expr *y = c->args[0], *ab[2];
  for (size_t i = 1; i < c->nargs; i++) {
    ab[0] = y, ab[1] = c->args[i];
    LOOM_PROPAGATE(oimp_emit(c, "add", 2, ab, i + 1 == c->nargs && !mean ? c->n->outputs[0] : NULL, &y));
  }
  if (mean && c->nargs > 1) {
    ab[0] = y, ab[1] = loom_graph_const_scalar(c->im->m, y->sinfo->dtype, (double)c->nargs);
    if (!ab[1]) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_emit(c, "div", 2, ab, c->n->outputs[0], &y));
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

static loom_status h_batchnorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  int64_t train;
  double eps, mom;
  LOOM_PROPAGATE(oimp_attr_int(c, "training_mode", 0, &train));
  LOOM_PROPAGATE(oimp_attr_float(c, "epsilon", 1e-5, &eps));
  LOOM_PROPAGATE(oimp_attr_float(c, "momentum", 0.9, &mom));
  if (train) return UNSUP(c->n, "training_mode=1 is not supported");
  for (size_t i = 1; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return UNSUP(c->n, "output %zu (running statistics) is not supported", i);
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "eps", eps));
  return oimp_emit(c, e->op, 5, c->args, c->n->outputs[0], out);
}

/* Slice: starts / ends / axes / steps from constant inputs (opset >= 10; starts and ends may
 * also be computed from shapes, i.e. symbolic) or attributes; positive steps only (the graph
 * op's limit). */
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
    if (step <= 0) return UNSUP(c->n, "step %lld on axis %lld (only positive steps)", (long long)step, (long long)ax[k]);
    stp[k] = loom_sym_const(cx, step);
    int64_t d, lo, hi;
    if (!loom_sym_is_const(st[k], &lo) || !loom_sym_is_const(en[k], &hi)) continue; /* symbolic: the op clamps */
    if (si->dims && loom_sym_is_const(si->dims[ax[k]], &d)) {
      if (lo < 0) lo = lo < -d ? 0 : lo + d;
      if (hi < 0) hi = hi < -d ? 0 : hi + d;
      lo = lo > d ? d : lo, hi = hi > d ? d : hi;
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
        if (strcmp(md, "constant")) return UNSUP(c->n, "mode '%s' with pads known only at run time", md);
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
  const char *pre = NULL, *post = NULL;
  if (strcmp(e->onnx, "ReduceSumSquare") == 0 || strcmp(e->onnx, "ReduceL2") == 0) pre = "mul";
  if (strcmp(e->onnx, "ReduceL1") == 0) pre = "abs";
  if (strcmp(e->onnx, "ReduceLogSumExp") == 0) pre = "exp";
  if (strcmp(e->onnx, "ReduceL2") == 0) post = "sqrt";
  if (strcmp(e->onnx, "ReduceLogSum") == 0 || strcmp(e->onnx, "ReduceLogSumExp") == 0) post = "log";
  loom_graph_expr *x = c->args[0];
  if (pre) {
    loom_graph_expr *ab[2] = {x, x};
    LOOM_PROPAGATE(oimp_emit(c, pre, strcmp(pre, "mul") == 0 ? 2 : 1, ab, NULL, &x));
  }
  loom_graph_expr *saved = c->args[0];
  c->args[0] = x;
  op_entry sum = *e;
  sum.onnx = "ReduceSumComposite";
  sum.op = "sum";
  loom_graph_expr *y;
  LOOM_PROPAGATE(oimp_h_reduce(c, &sum, &y));
  c->args[0] = saved;
  if (post) LOOM_PROPAGATE(oimp_emit(c, post, 1, &y, NULL, &y));
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
  if (ta) LOOM_PROPAGATE(oimp_emit(c, "permute_dims", 1, &a, NULL, &a));
  if (tb) LOOM_PROPAGATE(oimp_emit(c, "permute_dims", 1, &b, NULL, &b));
  loom_graph_expr *ab[2] = {a, b};
  LOOM_PROPAGATE(oimp_emit(c, "matmul", 2, ab, c->nargs > 2 || alpha != 1.0 ? NULL : c->n->outputs[0], &y));
  if (alpha != 1.0) {
    const loom_sinfo *si = y->sinfo;
    ab[0] = y, ab[1] = loom_graph_const_scalar(c->im->m, si->dtype, alpha);
    if (!ab[1]) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_emit(c, "mul", 2, ab, c->nargs > 2 ? NULL : c->n->outputs[0], &y));
  }
  if (c->nargs > 2) {
    loom_graph_expr *cc = c->args[2];
    if (beta != 1.0) {
      ab[0] = cc, ab[1] = loom_graph_const_scalar(c->im->m, y->sinfo->dtype, beta);
      if (!ab[1]) return LOOM_OOM();
      LOOM_PROPAGATE(oimp_emit(c, "mul", 2, ab, NULL, &cc));
    }
    ab[0] = y, ab[1] = cc;
    LOOM_PROPAGATE(oimp_emit(c, "add", 2, ab, c->n->outputs[0], &y));
  }
  *out = y;
  return LOOM_OK;
}

/* LayerNormalization / RMSNormalization over the axes from `axis` on: flatten x to 2-D at
 * `axis`, the scale / bias to 1-D, normalize over the last axis, reshape back. */
static loom_status norm_flattened(nctx *c, const char *op, int64_t axis, size_t nin, double eps, loom_graph_expr **out) {
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "the input's rank is unknown");
  int r = si->ndim;
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return BAD(c->n, "axis %lld out of range for rank %d", (long long)axis, r);
  loom_graph_module *m = c->im->m;
  loom_graph_expr *a[3];
  oimp_add_attr(c, loom_graph_attr_int(m, "axis", axis));
  LOOM_PROPAGATE(oimp_emit(c, "flatten", 1, &c->args[0], NULL, &a[0]));
  const loom_sym_expr *minus1 = loom_sym_const(c->im->cx, -1);
  for (size_t i = 1; i < nin; i++) {
    oimp_add_attr(c, loom_graph_attr_syms(m, "shape", 1, &minus1));
    LOOM_PROPAGATE(oimp_emit(c, "reshape", 1, &c->args[i], NULL, &a[i]));
  }
  oimp_add_attr(c, loom_graph_attr_float(m, "eps", eps));
  loom_graph_expr *y;
  LOOM_PROPAGATE(oimp_emit(c, op, nin, a, NULL, &y));
  oimp_add_attr(c, loom_graph_attr_syms(m, "shape", (size_t)r, si->dims));
  return oimp_emit(c, "reshape", 1, &y, c->n->outputs[0], out);
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
    {"Add", "add", oimp_h_simple, 2, 2, NOATTR, false},
    {"Sub", "sub", oimp_h_simple, 2, 2, NOATTR, false},
    {"Mul", "mul", oimp_h_simple, 2, 2, NOATTR, false},
    {"Div", "div", h_div, 2, 2, NOATTR, false},
    {"Mod", "mod", h_mod, 2, 2, " fmod ", false},
    {"Size", NULL, h_shape, 1, 1, NOATTR, false},
    {"ConstantOfShape", NULL, h_constant_of_shape, 1, 1, " value ", false},
    {"Range", NULL, h_range, 3, 3, NOATTR, false},
    {"ArgMax", "argmax", h_argminmax, 1, 1, " axis keepdims select_last_index ", false},
    {"ArgMin", "argmin", h_argminmax, 1, 1, " axis keepdims select_last_index ", false},
    {"Dropout", NULL, h_dropout, 1, 3, " seed ratio is_test ", true},
    {"Trilu", NULL, h_trilu, 1, 2, " upper ", false},
    {"RMSNormalization", "rms_norm", h_rmsnorm, 2, 2, " axis epsilon stash_type ", false},
    {"Gelu", NULL, h_gelu, 1, 1, " approximate ", false},
    {"Reciprocal", NULL, h_reciprocal, 1, 1, NOATTR, false},
    {"Sum", NULL, h_variadic, 1, 8, NOATTR, false},
    {"Mean", NULL, h_variadic, 1, 8, NOATTR, false},
    {"Tile", "tile", h_tile, 2, 2, NOATTR, false},
    {"ReduceSumSquare", NULL, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceL1", NULL, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceL2", NULL, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceLogSum", NULL, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceLogSumExp", NULL, h_reduce_composite, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"Slice", "strided_slice", h_slice, 1, 5, " starts ends axes ", false},
    {"Pad", "pad", h_pad, 1, 4, " mode pads value ", false},
    {"Expand", "broadcast_to", h_expand, 2, 2, NOATTR, false},
    {"BatchNormalization", "batch_norm", h_batchnorm, 5, 5, " epsilon momentum training_mode spatial ", true},
    {"GatherElements", "gather_elements", h_gather, 2, 2, " axis ", false},
    {"Pow", "pow", h_pow, 2, 2, NOATTR, false},
    {"Shape", NULL, h_shape, 1, 1, " start end ", false},
    {"Neg", "neg", oimp_h_simple, 1, 1, NOATTR, false},
    {"Abs", "abs", oimp_h_simple, 1, 1, NOATTR, false},
    {"Exp", "exp", oimp_h_simple, 1, 1, NOATTR, false},
    {"Log", "log", oimp_h_simple, 1, 1, NOATTR, false},
    {"Sqrt", "sqrt", oimp_h_simple, 1, 1, NOATTR, false},
    {"Tanh", "tanh", oimp_h_simple, 1, 1, NOATTR, false},
    {"Sigmoid", "sigmoid", oimp_h_simple, 1, 1, NOATTR, false},
    {"Relu", "relu", oimp_h_simple, 1, 1, NOATTR, false},
    {"Erf", "erf", oimp_h_simple, 1, 1, NOATTR, false},
    {"Sin", "sin", oimp_h_simple, 1, 1, NOATTR, false},
    {"Cos", "cos", oimp_h_simple, 1, 1, NOATTR, false},
    {"Floor", "floor", oimp_h_simple, 1, 1, NOATTR, false},
    {"Ceil", "ceil", oimp_h_simple, 1, 1, NOATTR, false},
    {"Round", "round", oimp_h_simple, 1, 1, NOATTR, false},
    {"Sign", "sign", oimp_h_simple, 1, 1, NOATTR, false},
    {"Not", "not", oimp_h_simple, 1, 1, NOATTR, false},
    {"Equal", "equal", oimp_h_simple, 2, 2, NOATTR, false},
    {"Less", "less", oimp_h_simple, 2, 2, NOATTR, false},
    {"LessOrEqual", "less_equal", oimp_h_simple, 2, 2, NOATTR, false},
    {"Greater", "greater", oimp_h_simple, 2, 2, NOATTR, false},
    {"GreaterOrEqual", "greater_equal", oimp_h_simple, 2, 2, NOATTR, false},
    {"And", "logical_and", oimp_h_simple, 2, 2, NOATTR, false},
    {"Or", "logical_or", oimp_h_simple, 2, 2, NOATTR, false},
    {"Xor", "logical_xor", oimp_h_simple, 2, 2, NOATTR, false},
    {"Where", "where", oimp_h_simple, 3, 3, NOATTR, false},
    {"Max", "maximum", h_minmax, 1, 8, NOATTR, false},
    {"Min", "minimum", h_minmax, 1, 8, NOATTR, false},
    {"MatMul", "matmul", oimp_h_simple, 2, 2, NOATTR, false},
    {"Gemm", "matmul", h_gemm, 2, 3, " transA transB alpha beta ", false},
    {"Softmax", "softmax", h_axis, 1, 1, " axis ", false},
    {"LogSoftmax", "log_softmax", h_axis, 1, 1, " axis ", false},
    {"Identity", NULL, oimp_h_identity, 1, 1, NOATTR, false},
    {"Reshape", "reshape", h_reshape, 2, 2, " allowzero ", false},
    {"Transpose", "permute_dims", h_transpose, 1, 1, " perm ", false},
    {"Unsqueeze", "expand_dims", h_axes_shape, 1, 2, " axes ", false},
    {"Squeeze", "squeeze", h_axes_shape, 1, 2, " axes ", false},
    {"Concat", "concat", h_concat, 1, 8, " axis ", false},
    {"ReduceSum", "sum", oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMean", "mean", oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMax", "max", oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceMin", "min", oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"ReduceProd", "prod", oimp_h_reduce, 1, 2, " axes keepdims noop_with_empty_axes ", false},
    {"Gather", "take", h_gather, 2, 2, " axis ", false},
    {"Flatten", "flatten", h_axis, 1, 1, " axis ", false},
    {"Clip", "clip", h_clip, 1, 3, " min max ", false},
    {"LayerNormalization", "layer_norm", h_layernorm, 2, 3, " axis epsilon stash_type ", true},
};
const size_t oimp_core_table_len = sizeof oimp_core_table / sizeof oimp_core_table[0];

/* Constant folding: a node whose inputs are all constants is built alone in a scratch
 * module and run in the interpreter; its result becomes a constant (so shape arithmetic
 * feeding Reshape / axes / ConstantOfShape folds). False when it cannot be folded. */
static bool fold_node(imp *im, const op_entry *e, const nctx *c, loom_onnx_tensor **out) {
  *out = NULL;
  imp sub = {.model = im->model, .g = im->g, .opset = im->opset};
  if (loom_graph_module_create(NULL, &sub.m)) return false;
  sub.cx = loom_graph_module_sym(sub.m);
  loom_graph_builder_begin(&sub.b, sub.m, "main");
  nctx c2 = *c;
  c2.im = &sub;
  bool ok = true;
  for (size_t i = 0; i < c2.nargs && ok; i++)
    if (c2.args[i]) ok = (c2.args[i] = oimp_const_of(&sub, c->consts[i])) != NULL;
  loom_graph_expr *y = NULL;
  loom_status s = ok ? e->h(&c2, e, &y) : LOOM_OK;
  if (s) loom_status_free(s), ok = false;
  if (ok && (s = loom_graph_builder_end(&sub.b, y, NULL, NULL))) loom_status_free(s), ok = false;
  loom_graph_builder_reset(&sub.b);
  loom_graph_value res;
  if (ok && (s = loom_graph_eval(sub.m, "main", 0, NULL, NULL, &res))) loom_status_free(s), ok = false;
  if (ok) {
    if (res.kind == LOOM_SINFO_TENSOR && res.t.numel <= (1u << 20)) {
      *out = oimp_new_tensor(im, res.t.dtype, (size_t)res.t.ndim, res.t.shape);
      if (*out && (*out)->nbytes) memcpy((*out)->data, res.t.data, (*out)->nbytes);
    }
    loom_graph_value_free(&res);
  }
  free(sub.val_names), free(sub.vals), free(sub.val_consts), free(sub.val_syms), free(sub.val_seqs), free(sub.sym_names), free(sub.syms), free(sub.used);
  loom_graph_module_destroy(sub.m);
  return *out != NULL;
}

const op_entry *oimp_find_entry(const char *op_type) {
  static const struct {
    const op_entry *rows;
    const size_t *len;
  } tables[] = {
#define OIMP_TABLE(family) {oimp_##family##_table, &oimp_##family##_table_len},
#include "frontend/onnx/onnx_tables.def"
#undef OIMP_TABLE
  };
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (size_t i = 0; i < *tables[t].len; i++)
      if (strcmp(tables[t].rows[i].onnx, op_type) == 0) return &tables[t].rows[i];
  return NULL;
}

loom_status oimp_import_node(imp *im, const loom_onnx_node *n) {
  /* ai.onnx.preview is accepted for the ops of it the importer handles (FlexAttention) */
  bool preview = !strcmp(n->domain, "ai.onnx.preview") && !strcmp(n->op_type, "FlexAttention");
  if (*n->domain && strcmp(n->domain, "ai.onnx") != 0 && !preview) return UNSUP(n, "domain '%s' is not supported", n->domain);
  if (strcmp(n->op_type, "Constant") == 0) {
    if (n->n_attrs != 1) return BAD(n, "exactly one value attribute is required");
    const loom_onnx_attr *a = &n->attrs[0];
    if (strcmp(a->name, "value") != 0) {
      const char *an = a->name;
      bool isf = strcmp(an, "value_float") == 0 || strcmp(an, "value_floats") == 0;
      bool isi = strcmp(an, "value_int") == 0 || strcmp(an, "value_ints") == 0;
      if (!isf && !isi) return UNSUP(n, "attribute '%s' is not supported", an);
      bool list = an[strlen(an) - 1] == 's';
      loom_onnx_attr_kind want = isf ? (list ? LOOM_ONNX_ATTR_FLOATS : LOOM_ONNX_ATTR_FLOAT) : (list ? LOOM_ONNX_ATTR_INTS : LOOM_ONNX_ATTR_INT);
      if (a->kind != want) return BAD(n, "attribute '%s' must be %s, not %s", an, loom_onnx_attr_kind_name(want), loom_onnx_attr_kind_name(a->kind));
      int64_t cnt = list ? (int64_t)a->count : 1;
      loom_onnx_tensor *t = oimp_new_tensor(im, isf ? LOOM_DTYPE_F32 : LOOM_DTYPE_I64, list ? 1 : 0, &cnt);
      if (!t) return LOOM_OOM();
      for (int64_t k = 0; k < cnt; k++) {
        if (isf) ((float *)t->data)[k] = list ? a->floats[k] : a->f;
        else ((int64_t *)t->data)[k] = list ? a->ints[k] : a->i;
      }
      loom_graph_expr *k = oimp_const_of(im, t);
      if (!k) return LOOM_OOM();
      return oimp_bind(im, n->outputs[0], k, t);
    }
    if (a->kind != LOOM_ONNX_ATTR_TENSOR) return BAD(n, "attribute 'value' must be tensor, not %s", loom_onnx_attr_kind_name(a->kind));
    loom_graph_expr *k = oimp_const_of(im, a->t);
    if (!k) return UNSUP(n, "the constant tensor cannot be represented");
    return oimp_bind(im, n->outputs[0], k, a->t);
  }
  const op_entry *e = oimp_find_entry(n->op_type);
  if (!e) return UNSUP(n, "op type %s is not supported", n->op_type);
  for (size_t i = 0; i < n->n_attrs; i++) {
    char key[80];
    snprintf(key, sizeof key, " %s ", n->attrs[i].name);
    if (!strstr(e->attrs, key)) return UNSUP(n, "attribute '%s' is not supported", n->attrs[i].name);
  }
  nctx c = {.im = im, .n = n};
  bool has_seq = false;
  size_t vidx[8];
  size_t last = n->n_inputs;
  while (last > 0 && !*n->inputs[last - 1]) last--;
  if ((int)last < e->min_in || (int)last > e->max_in)
    return UNSUP(n, "%zu inputs (supported: %d to %d)", last, e->min_in, e->max_in);
  for (size_t i = 0; i < last; i++) {
    if (!*n->inputs[i] && (int)i < e->min_in) return BAD(n, "input %zu is required but has no name", i);
    if (!*n->inputs[i]) { c.args[c.nargs++] = NULL; continue; }
    ssize_t v = find_val(im, n->inputs[i]);
    if (v < 0) return BAD(n, "input %zu '%s' is not defined", i, n->inputs[i]);
    c.consts[c.nargs] = im->val_consts[v];
    c.syms[c.nargs] = im->val_syms[v];
    c.seqs[c.nargs] = im->val_seqs[v];
    if (c.seqs[c.nargs]) {
      if (strcmp(n->op_type, "Identity") == 0) return oimp_bind_seq(im, n->outputs[0], c.seqs[c.nargs]);
      if (!oimp_ctl_takes_seq(e))
        return UNSUP(n, "input %zu '%s' is a sequence or optional, which %s does not take", i, n->inputs[i], n->op_type);
      has_seq = true;
    }
    vidx[c.nargs] = (size_t)v;
    c.args[c.nargs++] = im->vals[v]; /* NULL for a symbolic value not yet materialised */
  }
  for (size_t i = 1; i < n->n_outputs; i++)
    if (*n->outputs[i] && !e->multi_out)
      return UNSUP(n, "output %zu is not supported", i);
  bool all_const = c.nargs > 0 && n->n_outputs == 1 && !e->multi_out && !has_seq;
  for (size_t i = 0; i < c.nargs; i++)
    if ((c.args[i] || c.syms[i]) && !c.consts[i]) all_const = false;
  loom_onnx_tensor *folded_t;
  if (all_const && fold_node(im, e, &c, &folded_t)) {
    loom_graph_expr *k = oimp_const_of(im, folded_t);
    if (!k) return LOOM_OOM();
    return oimp_bind(im, n->outputs[0], k, folded_t);
  }
  oimp_symval *sv = NULL;
  if (n->n_outputs == 1 && !has_seq) LOOM_PROPAGATE(oimp_symval_node(&c, &sv));
  if (sv) return oimp_symval_bind(im, n->outputs[0], sv);
  for (size_t i = 0; i < c.nargs; i++)
    if (!c.args[i] && c.syms[i]) LOOM_PROPAGATE(value_expr(im, vidx[i], &c.args[i]));
  loom_graph_expr *y = NULL;
  LOOM_PROPAGATE(e->h(&c, e, &y));
  if (c.bound) return LOOM_OK;
  /* a handler that folded its result recorded it; one that passed its input through keeps the
   * input's constant or symbolic value */
  bool same = y == c.args[0];
  LOOM_PROPAGATE(oimp_bind(im, n->outputs[0], y, c.folded ? c.folded : same ? c.consts[0] : NULL));
  if (same && !c.folded) im->val_syms[im->nvals - 1] = c.syms[0];
  return LOOM_OK;
}

loom_status oimp_inline_graph(imp *im, const loom_onnx_graph *g, size_t nin, loom_graph_expr *const *ins, loom_graph_expr **out) {
  if (g->n_inputs != nin) return LOOM_ERROR(INVALID_ARGUMENT, "subgraph '%s' has %zu inputs, expected %zu", g->name, g->n_inputs, nin);
  if (g->n_outputs != 1) return LOOM_ERROR(UNIMPLEMENTED, "subgraph '%s' has %zu outputs, expected 1", g->name, g->n_outputs);
  size_t mark = im->nvals; /* a scope of its own (see oimp_binding) */
  loom_status s = LOOM_OK;
  for (size_t i = 0; !s && i < nin; i++) s = oimp_bind(im, g->inputs[i].name, ins[i], NULL);
  if (!s) s = oimp_import_graph(im, g);
  if (!s) s = oimp_lookup_expr(im, g->outputs[0].name, out);
  im->nvals = mark;
  return s;
}

/* Gives a module-constant name to a constant operand that is not 0-d (the text format
 * writes only 0-d constants inline): the ONNX name it came from when there is one, else kN. */
static loom_status name_const(imp *im, loom_graph_expr *e) {
  if (e->kind != LOOM_GRAPH_EXPR_CONST || e->u.cnst.name || (e->sinfo->ndim == 0)) return LOOM_OK;
  const char *src = NULL;
  for (size_t i = 0; i < im->nvals && !src; i++)
    if (im->vals[i] == e) src = im->val_names[i];
  char buf[32];
  if (!src) snprintf(buf, sizeof buf, "k%u", im->nconst++), src = buf;
  const char *nm = oimp_ir_name(im, src);
  if (!nm) return LOOM_OOM();
  return loom_graph_module_add_const(im->m, nm, e);
}

static loom_status name_consts(imp *im, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      loom_graph_expr *v = s->blocks[i]->bindings[j]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL)
        for (size_t a = 0; a < v->u.call.nargs; a++) LOOM_PROPAGATE(name_const(im, v->u.call.args[a]));
      else if (v->kind == LOOM_GRAPH_EXPR_TUPLE)
        for (size_t a = 0; a < v->u.tuple.n; a++) LOOM_PROPAGATE(name_const(im, v->u.tuple.items[a]));
      else if (v->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(name_consts(im, v->u.if_.then_seq));
        LOOM_PROPAGATE(name_consts(im, v->u.if_.else_seq));
      } else LOOM_PROPAGATE(name_const(im, v));
    }
  return name_const(im, s->result);
}

loom_status oimp_import_graph(imp *im, const loom_onnx_graph *g) {
  const loom_onnx_graph *outer = im->g;
  im->g = g;
  loom_status s = LOOM_OK;
  for (size_t i = 0; !s && i < g->n_initializers; i++) {
    loom_graph_expr *k = oimp_const_of(im, &g->initializers[i]);
    if (!k) s = LOOM_ERROR(UNIMPLEMENTED, "initializer '%s' cannot be represented", g->initializers[i].name);
    else s = oimp_bind(im, g->initializers[i].name, k, &g->initializers[i]);
  }
  for (size_t i = 0; !s && i < g->n_nodes; i++) s = oimp_import_node(im, &g->nodes[i]);
  im->g = outer;
  return s;
}

static loom_status import_main(imp *im) {
  const loom_onnx_graph *g = im->g;
  for (size_t i = 0; i < g->n_inputs; i++) {
    const loom_onnx_value *v = &g->inputs[i];
    if (loom_onnx_graph_find_initializer(g, v->name)) continue;
    const loom_onnx_tensor *frozen = NULL;
    for (size_t f = 0; im->opts && f < im->opts->n_frozen; f++)
      if (strcmp(im->opts->frozen_names[f], v->name) == 0) frozen = im->opts->frozen_values[f];
    if (frozen) {
      loom_graph_expr *k = oimp_const_of(im, frozen);
      if (!k) return LOOM_ERROR(UNIMPLEMENTED, "frozen input '%s' cannot be represented", v->name);
      LOOM_PROPAGATE(oimp_bind(im, v->name, k, frozen));
      continue;
    }
    if (v->kind != LOOM_ONNX_TYPE_TENSOR) return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s' is not a tensor", v->name);
    loom_dtype dt;
    if (!loom_onnx_elem_dtype(v->elem_type, &dt))
      return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': element type %s is not supported", v->name, loom_onnx_elem_name(v->elem_type));
    const loom_sinfo *si;
    if (!v->has_shape) {
      si = loom_sinfo_tensor(im->m, dt, LOOM_SINFO_NDIM_UNKNOWN, NULL, NULL);
    } else {
      const loom_sym_expr *dims[16];
      if (v->rank > 8) return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': rank %zu is over 8", v->name, v->rank);
      for (size_t k = 0; k < v->rank; k++)
        if (!(dims[k] = dim_sym(im, &v->dims[k]))) return LOOM_OOM();
      si = loom_sinfo_tensor(im->m, dt, (int)v->rank, dims, NULL);
    }
    if (!si) return LOOM_OOM();
    const char *nm = oimp_ir_name(im, v->name);
    loom_graph_expr *p = nm ? loom_graph_builder_param(&im->b, nm, si) : NULL;
    if (!p) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_bind(im, v->name, p, NULL));
  }
  LOOM_PROPAGATE(oimp_import_graph(im, g));
  loom_graph_expr *res[64];
  if (g->n_outputs == 0 || g->n_outputs > 64) return LOOM_ERROR(UNIMPLEMENTED, "%zu graph outputs", g->n_outputs);
  for (size_t i = 0; i < g->n_outputs; i++) {
    ssize_t v = find_val(im, g->outputs[i].name);
    if (v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "graph output '%s' is not produced", g->outputs[i].name);
    LOOM_PROPAGATE(value_expr(im, (size_t)v, &res[i]));
  }
  loom_graph_expr *r = res[0];
  if (g->n_outputs > 1 && !(r = loom_graph_tuple_new(im->m, g->n_outputs, res))) return LOOM_OOM();
  loom_graph_func *f;
  LOOM_PROPAGATE(loom_graph_builder_end(&im->b, r, NULL, &f));
  LOOM_PROPAGATE(name_consts(im, f->body));
  /* a shape computation materialised for a handler that then used only its symbolic value
   * (Reshape's shape, Expand's shape, ...) is dead: drop it */
  return im->nsymvals ? loom_graph_dce(im->m, NULL) : LOOM_OK;
}

loom_status loom_onnx_import(const loom_onnx_model *model, loom_graph_module **out) {
  return loom_onnx_import_ex(model, NULL, out);
}

loom_status loom_onnx_import_ex(const loom_onnx_model *model, const loom_onnx_import_opts *opts,
                                loom_graph_module **out) {
  *out = NULL;
  imp im = {.model = model, .opts = opts, .g = model->graph, .opset = loom_onnx_model_opset(model, "")};
  LOOM_PROPAGATE(loom_graph_module_create(NULL, &im.m));
  im.cx = loom_graph_module_sym(im.m);
  loom_graph_builder_begin(&im.b, im.m, "main");
  loom_status s = import_main(&im);
  loom_graph_builder_reset(&im.b);
  free(im.val_names), free(im.vals), free(im.val_consts), free(im.val_syms), free(im.val_seqs), free(im.sym_names), free(im.syms), free(im.used);
  if (s) {
    loom_graph_module_destroy(im.m);
    return loom_status_annotate(s, __FILE__, __LINE__, "while importing %s", model->path);
  }
  *out = im.m;
  return LOOM_OK;
}

/* onnx_import.c — the importer's engine (see onnx_import.h): ONNX values bound to graph exprs
 * in scopes, IR names, dim_param symbols, the node context (attributes, constant inputs, axes)
 * and the emitters handlers build with, the dispatch of each node through the op tables
 * (onnx_tables.def; folding first when every input is constant, then symbolic values), and
 * the import of the main graph. The core op table is in onnx_import_core.c, constants and
 * folding in onnx_import_fold.c. */
#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_import_internal.h"
#include "graph/passes.h"

#include <stdarg.h>
#include <stdio.h>
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
    loom_graph_expr *e;
    LOOM_PROPAGATE(oimp_symval_expr(im, im->val_names[v], im->val_syms[v], &e));
    im->nsymvals++;
    if (v < im->body_mark) { /* made inside a loop's body: valid there only */
      *out = e;
      return LOOM_OK;
    }
    im->vals[v] = e;
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
  return oimp_runtime_syms(c, c->args[i], c->n->inputs[i], what, dims, *n);
}

/* Whether an ONNX value's name reads as a name: a letter, then letters, digits and '_'
 * (a user's graph input), not an exporter's path ("/model/Concat_output_0", "onnx::Reshape_7"). */
static bool readable_name(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')) || strlen(s) > 40) return false;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_')) return false;
  return true;
}

const char *oimp_sym_base(const nctx *c, const char *onnx, const char *what, char *buf, size_t cap) {
  if (readable_name(onnx)) {
    snprintf(buf, cap, "%s", onnx);
    return buf;
  }
  snprintf(buf, cap, "%s_%s", c->n->op_type, what);
  for (char *p = buf; *p; p++)
    if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
  return buf;
}

/* The n values of v (a 1-D i32 / i64 tensor of static length n, computed at run time) as
 * symbolic dims: `tensor_to_shape` then a match_cast to Shape[(v_0, ..., v_n-1)] binds each
 * element to a fresh symbolic var (they must be dims: >= 0, checked when it runs), named
 * after `onnx` when that reads as a name, else after the op and its operand `what`. */
loom_status oimp_runtime_syms(nctx *c, loom_graph_expr *v, const char *onnx, const char *what, const loom_sym_expr **dims,
                              size_t n) {
  imp *im = c->im;
  char base[128];
  onnx = oimp_sym_base(c, onnx, what, base, sizeof base);
  loom_graph_expr *sv;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TENSOR_TO_SHAPE, 1, &v, NULL, &sv));
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
loom_status oimp_emit(nctx *c, loom_graph_op op, size_t nargs, loom_graph_expr *const *args, const char *name,
                        loom_graph_expr **out) {
  if (name && !(name = oimp_ir_name(c->im, name))) return LOOM_OOM();
  loom_graph_builder *b = &c->im->b;
  loom_status s = loom_graph_builder_emit(b, loom_graph_call_op(b->m, op, nargs, args, c->nattrs, c->attrs), name, out);
  c->nattrs = 0;
  if (s) {
    const loom_onnx_node *n = c->n;
    loom_status e = oimp_node_err(loom_status_code(s), n, "%s", loom_status_message(s));
    loom_status_free(s);
    return e;
  }
  return LOOM_OK;
}

loom_status oimp_op1(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr **y) {
  return oimp_emit(c, op, 1, &x, NULL, y);
}

loom_status oimp_op2(nctx *c, loom_graph_op op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr **y) {
  loom_graph_expr *ab[2] = {a, b};
  return oimp_emit(c, op, 2, ab, NULL, y);
}

loom_status oimp_op3(nctx *c, loom_graph_op op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr *d,
                     loom_graph_expr **y) {
  loom_graph_expr *abd[3] = {a, b, d};
  return oimp_emit(c, op, 3, abd, NULL, y);
}

loom_status oimp_scalar(nctx *c, loom_dtype dt, double v, loom_graph_expr **out) {
  *out = loom_graph_const_scalar(c->im->m, dt, v);
  return *out ? LOOM_OK : LOOM_OOM();
}

loom_status oimp_op_k(nctx *c, loom_graph_op op, loom_graph_expr *x, double v, loom_graph_expr **y) {
  loom_graph_expr *k;
  LOOM_PROPAGATE(oimp_scalar(c, x->sinfo->dtype, v, &k));
  return oimp_op2(c, op, x, k, y);
}

loom_status oimp_k_op(nctx *c, loom_graph_op op, double v, loom_graph_expr *x, loom_graph_expr **y) {
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


/* Is `d` the default domain? */
static bool default_domain(const char *d) { return !d || !*d || !strcmp(d, "ai.onnx"); }

const op_entry *oimp_find_entry(const char *domain, const char *op_type) {
  static const struct {
    const op_entry *rows;
    const size_t *len;
    const char *domain;
  } tables[] = {
#define OIMP_TABLE(family, domain) {oimp_##family##_table, &oimp_##family##_table_len, domain},
#include "frontend/onnx/onnx_tables.def"
#undef OIMP_TABLE
  };
  /* ai.onnx.preview's FlexAttention lives in the default domain's tables */
  if (domain && !strcmp(domain, "ai.onnx.preview") && !strcmp(op_type, "FlexAttention")) domain = NULL;
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++) {
    const char *d = tables[t].domain;
    if (default_domain(d) ? !default_domain(domain) : default_domain(domain) || strcmp(d, domain)) continue;
    for (size_t i = 0; i < *tables[t].len; i++)
      if (strcmp(tables[t].rows[i].onnx, op_type) == 0) return &tables[t].rows[i];
  }
  return NULL;
}

/* Does node n carry the attributes of broadcasting before opset 7 (`broadcast`, and `axis`
 * except on Gemm)? Those ops are the binary elementwise ones and Gemm (for C). */
static bool legacy_broadcast_op(const imp *im, const loom_onnx_node *n) {
  static const char *ops[] = {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less", "Gemm"};
  if (im->opset >= 7 || !default_domain(n->domain)) return false;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (!strcmp(n->op_type, ops[i])) return true;
  return false;
}

/* Broadcasting before opset 7: with broadcast=1, B's dims line up with A's from `axis` (absent:
 * the trailing dims, numpy's rule) — B gets trailing 1-dims for the axes of A after its own, and
 * then numpy broadcasting gives the same result; broadcast=0 requires equal shapes, which numpy
 * broadcasting also takes. Gemm's broadcast (of C) is the unidirectional broadcasting of today. */
static loom_status legacy_broadcast(nctx *c, size_t *vidx) {
  const loom_onnx_attr *b = loom_onnx_node_attr(c->n, "broadcast"), *ax = loom_onnx_node_attr(c->n, "axis");
  if (!ax || !strcmp(c->n->op_type, "Gemm")) return LOOM_OK;
  if (ax->kind != LOOM_ONNX_ATTR_INT) return BAD(c->n, "attribute 'axis' must be an int");
  if (!b || b->kind != LOOM_ONNX_ATTR_INT || !b->i) return LOOM_OK;
  if (c->nargs != 2) return LOOM_OK;
  if (!c->args[1] && c->syms[1]) LOOM_PROPAGATE(value_expr(c->im, vidx[1], &c->args[1]));
  int ra = oimp_in_rank(c, 0), rb = oimp_in_rank(c, 1);
  int64_t axis = ax->i < 0 ? ax->i + ra : ax->i;
  if (ra < 0 || rb < 0) return UNSUP(c->n, "broadcast with 'axis' needs the inputs' ranks");
  if (axis < 0 || axis + rb > ra)
    return BAD(c->n, "broadcast axis %lld: B of rank %d does not fit A of rank %d from it", (long long)ax->i, rb, ra);
  if (axis + rb == ra) return LOOM_OK;
  int64_t add[8];
  size_t na = 0;
  for (int64_t k = axis + rb; k < ra && na < 8; k++, na++) add[na] = rb + (int64_t)na;
  if ((int64_t)na != ra - axis - rb) return UNSUP(c->n, "broadcast over more than 8 trailing axes");
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", na, add));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, c->args[1], &c->args[1]));
  c->consts[1] = NULL, c->syms[1] = NULL;
  return LOOM_OK;
}

loom_status oimp_import_node(imp *im, const loom_onnx_node *n) {
  if (default_domain(n->domain) && strcmp(n->op_type, "Constant") == 0) {
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
  const op_entry *e = oimp_find_entry(n->domain, n->op_type);
  if (!e && !default_domain(n->domain)) return UNSUP(n, "op type %s of domain '%s' is not supported", n->op_type, n->domain);
  if (!e) return UNSUP(n, "op type %s is not supported", n->op_type);
  bool legacy = legacy_broadcast_op(im, n);
  for (size_t i = 0; i < n->n_attrs; i++) {
    char key[80];
    snprintf(key, sizeof key, " %s ", n->attrs[i].name);
    if (legacy && (!strcmp(n->attrs[i].name, "broadcast") || (!strcmp(n->attrs[i].name, "axis") && strcmp(n->op_type, "Gemm"))))
      continue;
    if (!strstr(e->attrs, key)) return UNSUP(n, "attribute '%s' is not supported", n->attrs[i].name);
  }
  bool has_seq = false;
  size_t last = n->n_inputs;
  while (last > 0 && !*n->inputs[last - 1]) last--;
  if ((int)last < e->min_in || last > (size_t)e->max_in) {
    if (e->max_in == OIMP_VARIADIC) return UNSUP(n, "%zu inputs (at least %d)", last, e->min_in);
    return UNSUP(n, "%zu inputs (supported: %d to %d)", last, e->min_in, e->max_in);
  }
  loom_graph_expr *args_s[OIMP_MAX_IN] = {0};
  const loom_onnx_tensor *consts_s[OIMP_MAX_IN] = {0};
  const oimp_symval *syms_s[OIMP_MAX_IN] = {0};
  const oimp_seq *seqs_s[OIMP_MAX_IN] = {0};
  size_t vidx_s[OIMP_MAX_IN], *vidx = vidx_s;
  nctx c = {.im = im, .n = n, .args = args_s, .consts = consts_s, .syms = syms_s, .seqs = seqs_s};
  if (last > OIMP_MAX_IN) { /* a variadic node: its operand slots live as long as the module */
    loom_arena *a = loom_graph_module_arena(im->m);
    c.args = loom_arena_array(a, last, sizeof *c.args, _Alignof(void *));
    c.consts = loom_arena_array(a, last, sizeof *c.consts, _Alignof(void *));
    c.syms = loom_arena_array(a, last, sizeof *c.syms, _Alignof(void *));
    c.seqs = loom_arena_array(a, last, sizeof *c.seqs, _Alignof(void *));
    vidx = loom_arena_array(a, last, sizeof *vidx, _Alignof(size_t));
    if (!c.args || !c.consts || !c.syms || !c.seqs || !vidx) return LOOM_OOM();
  }
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
  bool has_list = false; /* a list value known only at run time (onnx_import_list.c) */
  for (size_t i = 0; i < c.nargs; i++) has_list |= c.args[i] && c.args[i]->sinfo && c.args[i]->sinfo->kind == LOOM_SINFO_LIST;
  has_list = has_list && strcmp(n->op_type, "Loop") != 0;
  for (size_t i = 1; i < n->n_outputs; i++)
    if (*n->outputs[i] && !e->multi_out)
      return UNSUP(n, "output %zu is not supported", i);
  if (legacy) LOOM_PROPAGATE(legacy_broadcast(&c, vidx));
  bool all_const = c.nargs > 0 && n->n_outputs == 1 && !e->multi_out && !has_seq && !has_list;
  for (size_t i = 0; i < c.nargs; i++)
    if ((c.args[i] || c.syms[i]) && !c.consts[i]) all_const = false;
  loom_onnx_tensor *folded_t;
  if (all_const && oimp_fold_node(im, e, &c, &folded_t)) {
    loom_graph_expr *k = oimp_const_of(im, folded_t);
    if (!k) return LOOM_OOM();
    return oimp_bind(im, n->outputs[0], k, folded_t);
  }
  oimp_symval *sv = NULL;
  if (n->n_outputs == 1 && !has_seq && !has_list) LOOM_PROPAGATE(oimp_symval_node(&c, &sv));
  if (sv) return oimp_symval_bind(im, n->outputs[0], sv);
  for (size_t i = 0; i < c.nargs; i++)
    if (!c.args[i] && c.syms[i]) LOOM_PROPAGATE(value_expr(im, vidx[i], &c.args[i]));
  if (has_list) return oimp_list_node(&c);
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
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        if (v->u.loop.count) LOOM_PROPAGATE(name_const(im, v->u.loop.count));
        if (v->u.loop.cond) LOOM_PROPAGATE(name_const(im, v->u.loop.cond));
        for (size_t a = 0; a < v->u.loop.ncarry; a++) LOOM_PROPAGATE(name_const(im, v->u.loop.inits[a]));
        LOOM_PROPAGATE(name_consts(im, v->u.loop.body));
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
    if (v->kind == LOOM_ONNX_TYPE_SEQUENCE || v->kind == LOOM_ONNX_TYPE_OPTIONAL) { /* a list value */
      const loom_sinfo *ls;
      LOOM_PROPAGATE(oimp_list_sinfo(im, v, 0, &ls));
      const char *nm = oimp_ir_name(im, v->name);
      loom_graph_expr *p = nm ? loom_graph_builder_param(&im->b, nm, ls) : NULL;
      if (!p) return LOOM_OOM();
      LOOM_PROPAGATE(oimp_bind(im, v->name, p, NULL));
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
  /* the graph's nodes are one dataflow block (pure: control flow is resolved while importing), so
   * that the graph passes which work block by block (fuse) see them */
  LOOM_PROPAGATE(loom_graph_builder_block(&im->b, true));
  LOOM_PROPAGATE(oimp_import_graph(im, g));
  loom_graph_expr *res[64];
  if (g->n_outputs == 0 || g->n_outputs > 64) return LOOM_ERROR(UNIMPLEMENTED, "%zu graph outputs", g->n_outputs);
  for (size_t i = 0; i < g->n_outputs; i++) {
    ssize_t v = find_val(im, g->outputs[i].name);
    if (v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "graph output '%s' is not produced", g->outputs[i].name);
    if (!im->vals[v] && im->val_seqs[v]) LOOM_PROPAGATE(oimp_seq_to_list(im, im->val_seqs[v], g->outputs[i].name, &res[i]));
    else LOOM_PROPAGATE(value_expr(im, (size_t)v, &res[i]));
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

static void free_model(void *p) { loom_onnx_model_free(p); }

loom_status loom_onnx_import_adopting(loom_onnx_model *model, loom_graph_module **out) {
  loom_onnx_import_opts o = {.borrow_tensors = true};
  loom_status st = loom_onnx_import_ex(model, &o, out);
  if (st) {
    loom_onnx_model_free(model);
    return st;
  }
  /* the raw_data left in the file mapping: the pack pass may key it by the file's identity */
  if (model->has_file_id && model->file_map && model->file_len)
    st = loom_graph_module_add_source(*out, model->file_map, model->file_len, model->path, &model->file_id);
  for (size_t i = 0; i < model->nmaps && !st; i++) /* external data files */
    if (model->maps[i].has_id)
      st = loom_graph_module_add_source(*out, model->maps[i].base, model->maps[i].len, model->maps[i].path,
                                        &model->maps[i].id);
  if (st) {
    loom_onnx_model_free(model);
    loom_graph_module_destroy(*out);
    *out = NULL;
    return st;
  }
  st = loom_graph_module_adopt(*out, model, free_model);
  if (st) {
    loom_graph_module_destroy(*out);
    *out = NULL;
  }
  return st;
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

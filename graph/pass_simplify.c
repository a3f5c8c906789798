/* pass_simplify.c — algebraic simplification of operator calls (loom_graph_simplify).
 *
 * Each rule rewrites one binding where it stands: either its uses read an operand instead
 * (the rule's result is an existing value), or its value becomes a simpler call on the
 * operands of its producer. A rewrite is made only when the binding's struct info
 * provably still holds (the symbolic prover decides shape equalities), and a new
 * attribute only names symbols in scope before the binding. */
#include <math.h>
#include <string.h>

#include "graph/pass_internal.h"

static bool reshape_like(loom_graph_op op) {
  return op == LOOM_GRAPH_OP_RESHAPE || op == LOOM_GRAPH_OP_EXPAND_DIMS || op == LOOM_GRAPH_OP_SQUEEZE ||
         op == LOOM_GRAPH_OP_FLATTEN;
}

/* The reshape-like call that defines var e, or NULL. */
static const loom_graph_expr *reshape_producer(loom_pass *p, const loom_graph_expr *e) {
  loom_graph_binding *b = loom_pass_producer(p, e);
  if (!b || b->kind != LOOM_GRAPH_BIND_VAR || b->value->kind != LOOM_GRAPH_EXPR_CALL ||
      b->value->u.call.callee != LOOM_GRAPH_CALLEE_OP || !reshape_like(b->value->u.call.op))
    return NULL;
  return b->value;
}

/* Whether two dims are provably equal. */
static bool dim_eq(loom_pass *p, const loom_sym_expr *a, const loom_sym_expr *b) {
  return a == b || loom_sym_prove_eq(p->cx, a, b) == LOOM_SYM_TRUE;
}

/* Whether tensors a and b provably have the same rank and dims. */
static bool same_dims(loom_pass *p, const loom_sinfo *a, const loom_sinfo *b) {
  if (a->kind != LOOM_SINFO_TENSOR || b->kind != LOOM_SINFO_TENSOR || a->ndim < 0 || a->ndim != b->ndim) return false;
  if (!a->ndim) return true;
  if (!a->dims || !b->dims) return false;
  for (int i = 0; i < a->ndim; i++)
    if (!dim_eq(p, a->dims[i], b->dims[i])) return false;
  return true;
}

/* permute_dims axes (default: reversed) of a call on a rank-n operand; false when not constant. */
static bool perm_of(const loom_graph_expr *c, int n, int64_t *axes) {
  if (n < 0 || n > 8) return false;
  const loom_graph_attr *a = loom_graph_call_attr(c, "axes");
  if (!a) {
    for (int i = 0; i < n; i++) axes[i] = n - 1 - i;
    return true;
  }
  if (a->kind != LOOM_GRAPH_ATTR_SYMS || (int)a->n != n) return false;
  for (int i = 0; i < n; i++) {
    if (!loom_sym_is_const(a->syms[i], &axes[i])) return false;
    if (axes[i] < 0) axes[i] += n;
  }
  return true;
}

static bool identity_perm(const int64_t *axes, int n) {
  for (int i = 0; i < n; i++)
    if (axes[i] != i) return false;
  return true;
}

/* All constant `name` entries equal v (absent counts as `dflt`). */
static bool attr_all(const loom_graph_expr *c, const char *name, int64_t v, bool absent_ok) {
  const loom_graph_attr *a = loom_graph_call_attr(c, name);
  if (!a) return absent_ok;
  if (a->kind == LOOM_GRAPH_ATTR_INT) return a->i == v;
  if (a->kind != LOOM_GRAPH_ATTR_SYMS) return false;
  for (size_t i = 0; i < a->n; i++) {
    int64_t k;
    if (!loom_sym_is_const(a->syms[i], &k) || k != v) return false;
  }
  return true;
}

/* ---- GELU patterns ------------------------------------------------------------------------------
 *
 * 0.5 * x * (1 + erf(x / sqrt(2)))                                        -> gelu(x)
 * 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))                 -> gelu_tanh(x)
 * 0.5 * x * (1 + tanh(sqrt(2/pi) * x * (1 + 0.044715 * x * x)))           -> gelu_tanh(x)
 * as PyTorch and Hugging Face export them (GELU before opset 20, GPT-2's "gelu_new"): products
 * in any association and order, x / sqrt(2) or x * (1 / sqrt(2)), x^3 as pow(x, 3) or
 * x * x * x; constants are one-element tensors within 1e-6 (relative) of the exact values. */

/* The factors of a product: mul calls followed through their producers (a few levels), the
 * one-element constants multiplied into k. */
typedef struct factors {
  const loom_graph_expr *v[6];
  size_t n;
  double k;
  bool ok; /* false: more factors than fit */
} factors;

/* The value of a one-element float constant. */
static bool scalar_const(const loom_graph_expr *e, double *out) {
  if (e->kind != LOOM_GRAPH_EXPR_CONST || e->sinfo->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_float(e->sinfo->dtype))
    return false;
  size_t es = loom_dtype_size(e->sinfo->dtype);
  if (!es || e->u.cnst.nbytes != es) return false;
  loom_graph_tensor t = {.dtype = e->sinfo->dtype, .data = e->u.cnst.data};
  *out = loom_graph_tensor_get_f64(&t, 0);
  return true;
}

static void collect_factors(loom_pass *p, const loom_graph_expr *e, factors *f, int depth) {
  double c;
  const loom_graph_expr *m = depth > 0 ? loom_pass_producer_op(p, e, LOOM_GRAPH_OP_MUL) : NULL;
  if (scalar_const(e, &c)) f->k *= c;
  else if (m && m->u.call.nargs == 2) {
    collect_factors(p, m->u.call.args[0], f, depth - 1);
    collect_factors(p, m->u.call.args[1], f, depth - 1);
  } else if (f->n < sizeof f->v / sizeof *f->v) f->v[f->n++] = e;
  else f->ok = false;
}

static factors product(loom_pass *p, const loom_graph_expr *e) {
  factors f = {.k = 1, .ok = true};
  collect_factors(p, e, &f, 4);
  return f;
}

static bool near(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* e is `1 + t` (either order): t, else NULL. */
static const loom_graph_expr *one_plus(loom_pass *p, const loom_graph_expr *e) {
  const loom_graph_expr *a = loom_pass_producer_op(p, e, LOOM_GRAPH_OP_ADD);
  double c;
  if (!a || a->u.call.nargs != 2) return NULL;
  if (scalar_const(a->u.call.args[1], &c) && c == 1) return a->u.call.args[0];
  if (scalar_const(a->u.call.args[0], &c) && c == 1) return a->u.call.args[1];
  return NULL;
}

/* Whether the factors are exactly `x` repeated n times, times k0. */
static bool is_power(const factors *f, const loom_graph_expr *x, size_t n, double k0) {
  if (!f->ok || f->n != n || !near(f->k, k0)) return false;
  for (size_t i = 0; i < n; i++)
    if (f->v[i] != x) return false;
  return true;
}

/* e is 0.044715 * x^3. */
static bool cubic_term(loom_pass *p, const loom_graph_expr *e, const loom_graph_expr *x) {
  factors f = product(p, e);
  if (is_power(&f, x, 3, 0.044715)) return true;
  if (!f.ok || f.n != 1 || !near(f.k, 0.044715)) return false;
  const loom_graph_expr *pw = loom_pass_producer_op(p, f.v[0], LOOM_GRAPH_OP_POW);
  double c;
  return pw && pw->u.call.args[0] == x && scalar_const(pw->u.call.args[1], &c) && c == 3;
}

/* e is erf(x / sqrt(2)) or erf(x * (1 / sqrt(2))). */
static bool erf_of_scaled(loom_pass *p, const loom_graph_expr *e, const loom_graph_expr *x) {
  const loom_graph_expr *er = loom_pass_producer_op(p, e, LOOM_GRAPH_OP_ERF);
  if (!er) return false;
  const loom_graph_expr *u = er->u.call.args[0], *d = loom_pass_producer_op(p, u, LOOM_GRAPH_OP_DIV);
  double c;
  if (d) return d->u.call.args[0] == x && scalar_const(d->u.call.args[1], &c) && near(c, 1.41421356237309504880);
  factors f = product(p, u);
  return is_power(&f, x, 1, 0.70710678118654752440);
}

/* e is tanh(sqrt(2/pi) * (x + 0.044715 x^3)) or tanh(sqrt(2/pi) * x * (1 + 0.044715 x^2)). */
static bool tanh_of_cubic(loom_pass *p, const loom_graph_expr *e, const loom_graph_expr *x) {
  const loom_graph_expr *th = loom_pass_producer_op(p, e, LOOM_GRAPH_OP_TANH);
  if (!th) return false;
  const double c = 0.79788456080286535588; /* sqrt(2 / pi) */
  factors f = product(p, th->u.call.args[0]);
  if (!f.ok || !near(f.k, c)) return false;
  if (f.n == 1) { /* x + 0.044715 x^3 */
    const loom_graph_expr *a = loom_pass_producer_op(p, f.v[0], LOOM_GRAPH_OP_ADD);
    if (!a || a->u.call.nargs != 2) return false;
    const loom_graph_expr *a0 = a->u.call.args[0], *a1 = a->u.call.args[1];
    return (a0 == x && cubic_term(p, a1, x)) || (a1 == x && cubic_term(p, a0, x));
  }
  if (f.n != 2 || (f.v[0] != x && f.v[1] != x)) return false; /* x * (1 + 0.044715 x^2) */
  const loom_graph_expr *q = one_plus(p, f.v[0] == x ? f.v[1] : f.v[0]);
  if (!q) return false;
  factors g = product(p, q);
  return is_power(&g, x, 2, 0.044715);
}

/* The GELU op that binding value v (a mul) computes, or LOOM_GRAPH_OP_COUNT; *x its input. */
static loom_graph_op gelu_pattern(loom_pass *p, const loom_graph_expr *v, const loom_graph_expr **x) {
  factors f = {.k = 1, .ok = true};
  collect_factors(p, v->u.call.args[0], &f, 4);
  collect_factors(p, v->u.call.args[1], &f, 4);
  if (!f.ok || f.n != 2 || !near(f.k, 0.5)) return LOOM_GRAPH_OP_COUNT;
  for (int i = 0; i < 2; i++) {
    const loom_graph_expr *t = one_plus(p, f.v[1 - i]);
    *x = f.v[i];
    if (!t || (*x)->kind != LOOM_GRAPH_EXPR_VAR) continue;
    if (erf_of_scaled(p, t, *x)) return LOOM_GRAPH_OP_GELU;
    if (tanh_of_cubic(p, t, *x)) return LOOM_GRAPH_OP_GELU_TANH;
  }
  return LOOM_GRAPH_OP_COUNT;
}

/* ---- int8 matmul ------------------------------------------------------------------------------- */

/* e is i32(q) - i32(z) or i32(q) - c or i32(q): q a u8 / i8 tensor of rank >= min_rank; z a
 * one-element tensor of q's dtype, or c a one-element i32 constant whose value q's dtype holds
 * (*z is then that constant in q's dtype), or none (*z a 0 of q's dtype). Every centred value
 * q - z then lies in [-255, 255]: the pair words of the int8 kernel hold it exactly. */
static loom_status centred_int8(loom_pass *p, const loom_graph_expr *e, int min_rank, loom_graph_expr **q,
                                loom_graph_expr **z, bool *ok) {
  *ok = false;
  const loom_graph_expr *s = loom_pass_producer_op(p, e, LOOM_GRAPH_OP_SUB);
  const loom_graph_expr *c = loom_pass_producer_op(p, s ? s->u.call.args[0] : e, LOOM_GRAPH_OP_CAST);
  if (!c) return LOOM_OK;
  const loom_sinfo *qs = c->u.call.args[0]->sinfo;
  if (c->sinfo->dtype != LOOM_DTYPE_I32 || qs->kind != LOOM_SINFO_TENSOR ||
      (qs->dtype != LOOM_DTYPE_U8 && qs->dtype != LOOM_DTYPE_I8) || qs->ndim < min_rank)
    return LOOM_OK;
  *q = c->u.call.args[0];
  if (!s) {
    *z = loom_graph_const_scalar(p->m, qs->dtype, 0);
    *ok = *z != NULL;
    return *z ? LOOM_OK : LOOM_OOM();
  }
  const loom_graph_expr *zv = s->u.call.args[1];
  const loom_sinfo *zs = zv->sinfo;
  if (zs->kind != LOOM_SINFO_TENSOR || zs->ndim < 0 || (zs->ndim && !zs->dims)) return LOOM_OK;
  for (int d = 0; d < zs->ndim; d++) {
    int64_t v;
    if (!loom_sym_is_const(zs->dims[d], &v) || v != 1) return LOOM_OK;
  }
  const loom_graph_expr *zc = loom_pass_producer_op(p, zv, LOOM_GRAPH_OP_CAST);
  if (zc && zc->u.call.args[0]->sinfo->dtype == qs->dtype) { /* i32(z) of q's dtype */
    *z = zc->u.call.args[0];
    *ok = true;
    return LOOM_OK;
  }
  double v;
  if (zv->kind != LOOM_GRAPH_EXPR_CONST || zs->dtype != LOOM_DTYPE_I32 || zv->u.cnst.nbytes != sizeof(int32_t)) return LOOM_OK;
  v = *(const int32_t *)zv->u.cnst.data;
  if (v < (qs->dtype == LOOM_DTYPE_U8 ? 0 : -128) || v > (qs->dtype == LOOM_DTYPE_U8 ? 255 : 127)) return LOOM_OK;
  *z = loom_graph_const_scalar(p->m, qs->dtype, v);
  *ok = *z != NULL;
  return *z ? LOOM_OK : LOOM_OOM();
}

/* matmul(i32(a) - za, i32(b) - zb) -> matmul_integer(a, b, za, zb)   a, b u8 / i8 (b 2-D), za
 * and zb one-element zero points of a's and b's dtypes (centred_int8): the composed
 * MatMulInteger / QLinearMatMul / DynamicQuantizeLinear forms of the ONNX importer. The i32
 * copies of the operands go with dce; the kernel multiplies i16 pairs (tensorprog/gen_nn.c). */
static loom_status int8_matmul(loom_pass *p, loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  if (v->u.call.nargs != 2 || v->u.call.nattrs || b->var->sinfo->dtype != LOOM_DTYPE_I32) return LOOM_OK;
  loom_graph_expr *args[4];
  bool oka, okb;
  LOOM_PROPAGATE(centred_int8(p, v->u.call.args[0], 2, &args[0], &args[2], &oka));
  if (!oka) return LOOM_OK;
  LOOM_PROPAGATE(centred_int8(p, v->u.call.args[1], 2, &args[1], &args[3], &okb));
  if (!okb || args[1]->sinfo->ndim != 2) return LOOM_OK;
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 4, args, 0, NULL);
  if (!nc) return LOOM_OOM();
  nc->u.call.op = LOOM_GRAPH_OP_MATMUL_INTEGER;
  bool ok;
  return loom_pass_set_value(p, b, nc, &ok);
}

/* ---- views before copies ---------------------------------------------------------------------
 * An exporter's reshape of a slice or a transposition is a copy and then a view. Where the same
 * elements are a view of the source and a copy after it, the copy comes last: it is the one
 * fusion takes into its reader (a split of a QKV projection into heads, a key cache transposed
 * over merged batch and head axes), so no call of its own is left. */

/* A constant int of attribute `name` of c (one entry; a list of one), else false. */
static bool attr_one(const loom_graph_expr *c, const char *name, int64_t *v) {
  const loom_graph_attr *a = loom_graph_call_attr(c, name);
  if (!a) return false;
  if (a->kind == LOOM_GRAPH_ATTR_INT) return *v = a->i, true;
  return a->kind == LOOM_GRAPH_ATTR_SYMS && a->n == 1 && loom_sym_is_const(a->syms[0], v);
}

static bool dims_known(const loom_sinfo *t) {
  return t->kind == LOOM_SINFO_TENSOR && t->ndim > 0 && t->ndim <= 8 && t->dims;
}

/* b = reshape(strided_slice(x, axes=[r-1], begin=[lo], end=[hi]), shape=[d0, .., d(r-2), k, m])
 *   -> b_rows = reshape(x, shape=[d0, .., d(r-2), L/m, m]);  b = strided_slice(b_rows, axes=[r-1],
 *      begin=[lo/m], end=[hi/m])
 * when the slice (stride 1) is of x's last axis, of constant extent L, the reshape splits only
 * that axis (d0.. provably x's), and m divides L, lo and hi: GPT-2's q, k and v taken from the
 * fused projection and split into heads. */
static loom_status slice_rows(loom_pass *p, loom_graph_binding *b, bool *done) {
  *done = false;
  const loom_graph_expr *v = b->value, *sl = loom_pass_producer_op(p, v->u.call.args[0], LOOM_GRAPH_OP_STRIDED_SLICE);
  const loom_sinfo *out = b->var->sinfo;
  if (!sl || sl->u.call.nargs != 1 || !dims_known(out)) return LOOM_OK;
  loom_graph_expr *x = sl->u.call.args[0];
  const loom_sinfo *xs = x->sinfo;
  int r = dims_known(xs) ? xs->ndim : 0;
  int64_t axis, lo, hi, L, k, m, stride = 1;
  if (r < 1 || out->ndim != r + 1 || !attr_one(sl, "axes", &axis) || !attr_one(sl, "begin", &lo) ||
      !attr_one(sl, "end", &hi) || (loom_graph_call_attr(sl, "strides") && !attr_one(sl, "strides", &stride)) ||
      stride != 1 || (axis != r - 1 && axis != -1) || !loom_sym_is_const(xs->dims[r - 1], &L) ||
      !loom_sym_is_const(out->dims[r - 1], &k) || !loom_sym_is_const(out->dims[r], &m) || m < 1 || L % m ||
      lo < 0 || lo % m || hi > L || hi - lo != k * m || !loom_pass_sinfo_in_scope(p, xs))
    return LOOM_OK;
  const loom_sym_expr *dims[9];
  for (int i = 0; i < r - 1; i++) {
    if (!dim_eq(p, out->dims[i], xs->dims[i])) return LOOM_OK;
    dims[i] = xs->dims[i];
  }
  dims[r - 1] = loom_sym_const(p->cx, L / m);
  dims[r] = out->dims[r];
  loom_graph_attr shape = loom_graph_attr_syms(p->m, "shape", (size_t)r + 1, dims);
  loom_graph_expr *rs = shape.name && shape.syms ? loom_graph_call_op(p->m, LOOM_GRAPH_OP_RESHAPE, 1, &x, 1, &shape) : NULL;
  if (!rs) return LOOM_OOM();
  loom_graph_expr *rows;
  LOOM_PROPAGATE(loom_pass_add_before(p, b, "rows", rs, &rows));
  if (!rows) return LOOM_OK;
  loom_graph_attr at[3] = {loom_graph_attr_ints(p->m, "axes", 1, &(int64_t){r - 1}),
                           loom_graph_attr_ints(p->m, "begin", 1, &(int64_t){lo / m}),
                           loom_graph_attr_ints(p->m, "end", 1, &(int64_t){hi / m})};
  if (!at[0].name || !at[1].name || !at[2].name) return LOOM_OOM();
  loom_graph_expr *nc = loom_graph_call_op(p->m, LOOM_GRAPH_OP_STRIDED_SLICE, 1, &rows, 3, at);
  if (!nc) return LOOM_OOM();
  return loom_pass_set_value(p, b, nc, done);
}

/* b = reshape(permute_dims(reshape(x, shape=[d0*..*dg, e1, ..]), axes=[0, q1, ..]), shape=[d0, .., dg, ..])
 *   -> b = permute_dims(x, axes=[0, .., g, g + q1, ..])
 * when the inner reshape merges x's leading axes d0..dg (the rest provably x's), the
 * transposition keeps the merged axis first and the outer reshape splits it back: attention's
 * K^T over (batch * heads) of a (batch, heads, t, d) key cache. */
static loom_status merged_permute(loom_pass *p, loom_graph_binding *b, bool *done) {
  *done = false;
  const loom_graph_expr *pm = loom_pass_producer_op(p, b->value->u.call.args[0], LOOM_GRAPH_OP_PERMUTE_DIMS);
  const loom_graph_expr *inner = pm ? loom_pass_producer_op(p, pm->u.call.args[0], LOOM_GRAPH_OP_RESHAPE) : NULL;
  if (!inner) return LOOM_OK;
  loom_graph_expr *x = inner->u.call.args[0];
  /* x -> z (merged) -> y (transposed) -> b */
  const loom_sinfo *out = b->var->sinfo, *xs = x->sinfo, *zs = pm->u.call.args[0]->sinfo,
                   *ys = b->value->u.call.args[0]->sinfo;
  if (!dims_known(out) || !dims_known(xs) || !dims_known(zs) || !dims_known(ys)) return LOOM_OK;
  int n = xs->ndim, mr = zs->ndim, g = n - mr;
  int64_t q[8];
  if (g < 1 || out->ndim != n || ys->ndim != mr || !perm_of(pm, mr, q) || q[0] != 0) return LOOM_OK;
  const loom_sym_expr *lead = xs->dims[0];
  for (int i = 1; i <= g; i++) lead = loom_sym_mul(p->cx, lead, xs->dims[i]);
  if (!lead || !dim_eq(p, zs->dims[0], lead)) return LOOM_OK;
  for (int i = 1; i < mr; i++)
    if (!dim_eq(p, zs->dims[i], xs->dims[g + i])) return LOOM_OK;
  for (int i = 0; i <= g; i++)
    if (!dim_eq(p, out->dims[i], xs->dims[i])) return LOOM_OK;
  for (int i = 1; i < mr; i++)
    if (!dim_eq(p, out->dims[g + i], ys->dims[i])) return LOOM_OK;
  int64_t axes[8];
  for (int i = 0; i <= g; i++) axes[i] = i;
  for (int i = 1; i < mr; i++) axes[g + i] = g + q[i];
  loom_graph_attr at = loom_graph_attr_ints(p->m, "axes", (size_t)n, axes);
  loom_graph_expr *nc = at.name ? loom_graph_call_op(p->m, LOOM_GRAPH_OP_PERMUTE_DIMS, 1, &x, 1, &at) : NULL;
  if (!nc) return LOOM_OOM();
  return loom_pass_set_value(p, b, nc, done);
}

/* b = matmul(mul(x, c1), mul(y, c2))  ->  b_unscaled = matmul(x, y);  b = mul(b_unscaled, c1*c2)
 * (either mul may be absent, the constant on either side) when c1, c2 are one-element float
 * constants and each mul has its operand's dims and dtype, x and y not constants (fold scales a
 * weight once): torch's scaled_dot_product_attention
 * export scales q and K^T by d^(-1/4) each; with the scales out of the operands K^T is read in
 * place (transpose_b, the rule below) instead of copied and scaled every call (a KV cache: the
 * whole cache each decode step), and the one scale goes into the scores' reader (a matmul
 * epilogue, softmax). Rounding may move by an ulp (the attention pass merges such scales too). */
static loom_status scale_after_matmul(loom_pass *p, loom_graph_binding *b, bool *done) {
  *done = false;
  const loom_graph_expr *v = b->value;
  const loom_sinfo *out = b->var->sinfo;
  if (v->u.call.nargs != 2 || out->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_float(out->dtype)) return LOOM_OK;
  loom_graph_expr *ops[2];
  double scale = 1;
  int found = 0;
  for (int i = 0; i < 2; i++) {
    ops[i] = v->u.call.args[i];
    const loom_graph_expr *m = loom_pass_producer_op(p, ops[i], LOOM_GRAPH_OP_MUL);
    if (!m || m->u.call.nargs != 2) continue;
    double c;
    loom_graph_expr *x = NULL;
    if (scalar_const(m->u.call.args[1], &c)) x = m->u.call.args[0];
    else if (scalar_const(m->u.call.args[0], &c)) x = m->u.call.args[1];
    /* a scaled constant (a weight) stays: fold computes it once, no multiply at run time */
    if (!x || x->kind == LOOM_GRAPH_EXPR_CONST || x->sinfo->kind != LOOM_SINFO_TENSOR ||
        x->sinfo->dtype != ops[i]->sinfo->dtype || !same_dims(p, ops[i]->sinfo, x->sinfo))
      continue;
    ops[i] = x;
    scale *= c;
    found++;
  }
  if (!found) return LOOM_OK;
  loom_graph_expr *mm = loom_pass_call_copy(p->m, v, 2, ops, v->u.call.nattrs, v->u.call.attrs);
  if (!mm) return LOOM_OOM();
  loom_graph_expr *args[2];
  LOOM_PROPAGATE(loom_pass_add_before(p, b, "unscaled", mm, &args[0]));
  if (!args[0]) return LOOM_OK;
  args[1] = loom_graph_const_scalar(p->m, out->dtype, scale);
  loom_graph_expr *nc = args[1] ? loom_graph_call_op(p->m, LOOM_GRAPH_OP_MUL, 2, args, 0, NULL) : NULL;
  if (!nc) return LOOM_OOM();
  return loom_pass_set_value(p, b, nc, done);
}

/* Uses of b read `x` (when its struct info provably fits). */
static void forward(loom_pass *p, loom_graph_binding *b, loom_graph_expr *x, bool *drop) {
  bool ok;
  loom_pass_replace_var(p, b, x, &ok);
  *drop = ok;
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return LOOM_OK;
  const loom_sinfo *out = b->var->sinfo;
  size_t n = v->u.call.nargs;
  loom_graph_expr *x = n ? v->u.call.args[0] : NULL;
  loom_graph_expr *y = n > 1 ? v->u.call.args[1] : NULL;
  bool ok;
  switch (v->u.call.op) {
  /* the scales and the int8 matmul above */
  case LOOM_GRAPH_OP_MATMUL:
    LOOM_PROPAGATE(scale_after_matmul(p, b, &ok));
    return ok ? LOOM_OK : int8_matmul(p, b);

  /* dropout(x) -> x   (identity at inference) */
  case LOOM_GRAPH_OP_DROPOUT:
    forward(p, b, x, drop);
    return LOOM_OK;

  /* cast(x, dtype=t) -> x   if x has dtype t */
  case LOOM_GRAPH_OP_CAST:
    if (x->sinfo->kind == LOOM_SINFO_TENSOR && x->sinfo->dtype == out->dtype) forward(p, b, x, drop);
    return LOOM_OK;

  /* neg(neg(x)) -> x */
  case LOOM_GRAPH_OP_NEG: {
    const loom_graph_expr *inner = loom_pass_producer_op(p, x, LOOM_GRAPH_OP_NEG);
    if (inner) forward(p, b, inner->u.call.args[0], drop);
    return LOOM_OK;
  }

  /* concat(x) -> x */
  case LOOM_GRAPH_OP_CONCAT:
    if (n == 1) forward(p, b, x, drop);
    return LOOM_OK;

  /* mul(x, 1) -> x, mul(1, x) -> x, div(x, 1) -> x   if the result is x's shape and dtype */
  case LOOM_GRAPH_OP_MUL:
  case LOOM_GRAPH_OP_DIV:
    if (v->u.call.op == LOOM_GRAPH_OP_MUL && loom_dtype_is_float(out->dtype)) {
      /* the GELU patterns above -> gelu(g) / gelu_tanh(g)   if the result is g's shape and dtype */
      const loom_graph_expr *g;
      loom_graph_op op = gelu_pattern(p, v, &g);
      if (op != LOOM_GRAPH_OP_COUNT && same_dims(p, out, g->sinfo) && out->dtype == g->sinfo->dtype) {
        loom_graph_expr *arg = (loom_graph_expr *)g;
        loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 1, &arg, 0, NULL);
        if (!nc) return LOOM_OOM();
        nc->u.call.op = op;
        return loom_pass_set_value(p, b, nc, &ok);
      }
    }
    if (loom_pass_const_all(y, 1) && same_dims(p, out, x->sinfo) && out->dtype == x->sinfo->dtype) forward(p, b, x, drop);
    else if (v->u.call.op == LOOM_GRAPH_OP_MUL && loom_pass_const_all(x, 1) && same_dims(p, out, y->sinfo) &&
             out->dtype == y->sinfo->dtype)
      forward(p, b, y, drop);
    return LOOM_OK;

  /* add(x, 0) -> x, add(0, x) -> x, sub(x, 0) -> x   if the result is x's shape and dtype */
  case LOOM_GRAPH_OP_ADD:
  case LOOM_GRAPH_OP_SUB:
    if (loom_pass_const_all(y, 0) && same_dims(p, out, x->sinfo) && out->dtype == x->sinfo->dtype) forward(p, b, x, drop);
    else if (v->u.call.op == LOOM_GRAPH_OP_ADD && loom_pass_const_all(x, 0) && same_dims(p, out, y->sinfo) &&
             out->dtype == y->sinfo->dtype)
      forward(p, b, y, drop);
    return LOOM_OK;

  /* broadcast_to(x, shape) -> x   if shape provably equals x's dims */
  case LOOM_GRAPH_OP_BROADCAST_TO:
    if (same_dims(p, out, x->sinfo)) forward(p, b, x, drop);
    return LOOM_OK;

  /* strided_slice(x) -> x   if every begin is 0, every stride 1 and the result has x's dims */
  case LOOM_GRAPH_OP_STRIDED_SLICE:
    if (attr_all(v, "begin", 0, false) && attr_all(v, "strides", 1, true) && same_dims(p, out, x->sinfo))
      forward(p, b, x, drop);
    return LOOM_OK;

  case LOOM_GRAPH_OP_PERMUTE_DIMS: {
    int64_t q[8], p1[8];
    int r = x->sinfo->kind == LOOM_SINFO_TENSOR ? x->sinfo->ndim : -1;
    if (!perm_of(v, r, q)) return LOOM_OK;
    /* permute_dims(x, identity) -> x */
    if (identity_perm(q, r)) {
      forward(p, b, x, drop);
      return LOOM_OK;
    }
    /* permute_dims(permute_dims(x, p1), p2) -> permute_dims(x, p1[p2[i]]) */
    const loom_graph_expr *inner = loom_pass_producer_op(p, x, LOOM_GRAPH_OP_PERMUTE_DIMS);
    loom_graph_expr *ix = inner ? inner->u.call.args[0] : NULL;
    if (!inner || !perm_of(inner, ix->sinfo->kind == LOOM_SINFO_TENSOR ? ix->sinfo->ndim : -1, p1) || ix->sinfo->ndim != r)
      return LOOM_OK;
    int64_t c[8];
    for (int i = 0; i < r; i++) c[i] = p1[q[i]];
    if (identity_perm(c, r)) {
      forward(p, b, ix, drop);
      return LOOM_OK;
    }
    loom_graph_attr at = loom_graph_attr_ints(p->m, "axes", (size_t)r, c);
    if (!at.name || !at.syms) return LOOM_OOM();
    loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 1, &ix, 1, &at);
    if (!nc) return LOOM_OOM();
    return loom_pass_set_value(p, b, nc, &ok);
  }

  case LOOM_GRAPH_OP_RESHAPE:
  case LOOM_GRAPH_OP_EXPAND_DIMS:
  case LOOM_GRAPH_OP_SQUEEZE:
  case LOOM_GRAPH_OP_FLATTEN: {
    /* reshape(x, shape) -> x   if the result provably has x's dims (likewise expand_dims, squeeze, flatten) */
    if (same_dims(p, out, x->sinfo)) {
      forward(p, b, x, drop);
      return LOOM_OK;
    }
    if (v->u.call.op == LOOM_GRAPH_OP_RESHAPE) { /* the views before copies above */
      LOOM_PROPAGATE(slice_rows(p, b, &ok));
      if (!ok) LOOM_PROPAGATE(merged_permute(p, b, &ok));
      if (ok) return LOOM_OK;
    }
    /* reshape(reshape(x, A), B) -> reshape(x, B)   for any chain of reshape-likes; B is the
     * result's dims, which must be in scope before this binding */
    const loom_graph_expr *inner = reshape_producer(p, x);
    if (!inner || out->kind != LOOM_SINFO_TENSOR || out->ndim < 0 || (out->ndim && !out->dims) ||
        !loom_pass_sinfo_in_scope(p, out))
      return LOOM_OK;
    loom_graph_expr *ix = inner->u.call.args[0];
    if (same_dims(p, out, ix->sinfo)) {
      forward(p, b, ix, drop);
      return LOOM_OK;
    }
    loom_graph_attr at = loom_graph_attr_syms(p->m, "shape", (size_t)out->ndim, out->dims);
    if (!at.name || !at.syms) return LOOM_OOM();
    loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 1, &ix, 1, &at);
    if (!nc) return LOOM_OOM();
    nc->u.call.op = LOOM_GRAPH_OP_RESHAPE;
    return loom_pass_set_value(p, b, nc, &ok);
  }
  default:
    return LOOM_OK;
  }
}

/* Whether permutation q of rank r swaps the last two axes and keeps the others. */
static bool swaps_last_two(const int64_t *q, int r) {
  if (r < 2 || q[r - 2] != r - 1 || q[r - 1] != r - 2) return false;
  for (int i = 0; i < r - 2; i++)
    if (q[i] != i) return false;
  return true;
}

/* The transposed-B rule's state: how often each constant is read, and the rewrites of a constant. */
typedef struct tb_state {
  loom_map reads; /* constant data pointer -> the operands (and const bindings) that read it */
  size_t tied;    /* rewrites whose x is a constant read elsewhere too */
} tb_state;

/* matmul(a, permute_dims(x, [0, .., r-3, r-1, r-2]))  -> matmul(a, x, transpose_b=true)
 * matmul(a, permute_dims(x, [.., r-1, r-2]), transpose_b=true) -> matmul(a, x)
 * The kernel reads B transposed (its B-panel packing does the transposition): no
 * transposition kernel, no intermediate. Not when x is a constant that only this permute_dims
 * reads: fold transposes it once and the kernel then packs B's [k, n] layout by plain copies.
 * A constant read elsewhere too (a tied LM head: take(wte, ids) and matmul(h, permute_dims(wte)))
 * is rewritten: folding would keep a transposed copy beside it (154 MB for GPT-2's wte). */
static loom_status matmul_transpose_b(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  tb_state *ts = p->ud;
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP ||
      v->u.call.op != LOOM_GRAPH_OP_MATMUL || v->u.call.nargs != 2)
    return LOOM_OK;
  const loom_graph_expr *perm = loom_pass_producer_op(p, v->u.call.args[1], LOOM_GRAPH_OP_PERMUTE_DIMS);
  if (!perm) return LOOM_OK;
  loom_graph_expr *x = perm->u.call.args[0];
  int64_t q[8];
  int r = x->sinfo->kind == LOOM_SINFO_TENSOR ? x->sinfo->ndim : -1;
  uint64_t nreads = 0;
  if (x->kind == LOOM_GRAPH_EXPR_CONST && (!x->u.cnst.data || !loom_map_get(&ts->reads, (uint64_t)(uintptr_t)x->u.cnst.data, &nreads) ||
                                           nreads < 2))
    return LOOM_OK;
  if (!perm_of(perm, r, q) || !swaps_last_two(q, r)) return LOOM_OK;
  bool tb = loom_graph_call_int(v, "transpose_b") != 0;
  loom_graph_attr attrs[16];
  size_t na = 0;
  for (size_t i = 0; i < v->u.call.nattrs && na < 15; i++)
    if (strcmp(v->u.call.attrs[i].name, "transpose_b")) attrs[na++] = v->u.call.attrs[i];
  if (!tb) {
    attrs[na] = loom_graph_attr_bool(p->m, "transpose_b", true);
    if (!attrs[na++].name) return LOOM_OOM();
  }
  loom_graph_expr *args[2] = {v->u.call.args[0], x};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, v, 2, args, na, attrs);
  if (!nc) return LOOM_OOM();
  bool ok;
  LOOM_PROPAGATE(loom_pass_set_value(p, b, nc, &ok));
  if (ok && x->kind == LOOM_GRAPH_EXPR_CONST) ts->tied++;
  return LOOM_OK;
}

/* Counts in p->ud's reads the operands of binding b that are constants, and b's value when it
 * is one. */
static loom_status count_const_reads(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  loom_map *reads = &((tb_state *)p->ud)->reads;
  const loom_graph_expr *v = b->value;
  size_t n = v->kind == LOOM_GRAPH_EXPR_CALL ? v->u.call.nargs : 1;
  for (size_t i = 0; i < n; i++) {
    const loom_graph_expr *a = v->kind == LOOM_GRAPH_EXPR_CALL ? v->u.call.args[i] : v;
    if (!a || a->kind != LOOM_GRAPH_EXPR_CONST || !a->u.cnst.data) continue;
    uint64_t key = (uint64_t)(uintptr_t)a->u.cnst.data, c = 0;
    (void)loom_map_get(reads, key, &c);
    if (!loom_map_put(reads, key, c + 1)) return LOOM_OOM();
  }
  return LOOM_OK;
}

/* The transposed-B rule over every function, with the constants' read counts of the moment. */
static loom_status run_transpose_b(loom_graph_module *m, size_t *changed, size_t *tied) {
  tb_state ts = {.tied = 0};
  loom_map_init(&ts.reads, NULL);
  loom_pass c = {.m = m, .visit = count_const_reads, .ud = &ts};
  loom_status st = loom_pass_run(&c);
  loom_pass t = {.m = m, .visit = matmul_transpose_b, .ud = &ts};
  if (!st) st = loom_pass_run(&t);
  loom_map_destroy(&ts.reads);
  *changed += t.changed;
  *tied += ts.tied;
  return st;
}

loom_status loom_graph_simplify(loom_graph_module *m, size_t *out_changed) {
  /* The transposed-B rule before permutations compose (attention's K: permute_dims(
   * permute_dims(k, [0, 2, 1, 3]), [0, 1, 3, 2]) would become one permutation that is no
   * longer a swap of the last two axes), and again after (a composition may be one). */
  size_t changed = 0, tied = 0;
  LOOM_PROPAGATE(loom_graph_simplify_conv_bn(m, &changed));
  LOOM_PROPAGATE(run_transpose_b(m, &changed, &tied));
  loom_pass p = {.m = m, .visit = visit};
  LOOM_PROPAGATE(loom_pass_run(&p));
  LOOM_PROPAGATE(run_transpose_b(m, &changed, &tied));
  /* a tied constant's permute_dims is dead now: removed before fold would transpose it (12 s
   * through the reference for GPT-2's 768 x 50257 wte) */
  if (tied) LOOM_PROPAGATE(loom_graph_dce(m, NULL));
  if (out_changed) *out_changed = changed + p.changed;
  return LOOM_OK;
}

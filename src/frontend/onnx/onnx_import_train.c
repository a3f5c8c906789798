/* onnx_import_train.c — the optimizers of domain ai.onnx.preview.training (Adagrad, Momentum,
 * Adam) built from elementwise graph ops, one update per optimized tensor. Each follows the
 * pseudo code of its schema (onnx/defs/training) and the reference (onnx.reference's
 * aionnx_preview_training); the learning rate R and the update count T are scalars known at
 * run time, so the conditions on T (T > 0) are `where`s, not import-time branches.
 *
 * Inputs are R, T and then groups of n tensors each (Adagrad: X..., G..., H...; Momentum:
 * X..., G..., V...; Adam: X..., G..., V..., H...); outputs are the new values in the same group
 * order (X_new..., then the state). Arithmetic is in X's dtype (R and T converted to it). */
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

/* The optimizer's tensors: n per group, `groups` groups after R and T. */
static loom_status split_groups(nctx *c, size_t groups, size_t *n) {
  size_t in = c->nargs, out = c->n->n_outputs;
  if (in < 2 + groups || (in - 2) % groups) return BAD(c->n, "%zu inputs: R, T and %zu groups of equal length", in, groups);
  *n = (in - 2) / groups;
  if (out != (groups - 1) * *n)
    return BAD(c->n, "%zu outputs for %zu optimized tensors (expected %zu)", out, *n, (groups - 1) * *n);
  for (size_t i = 0; i < in; i++) {
    if (!c->args[i]) return BAD(c->n, "input %zu is missing", i);
    const loom_sinfo *si = c->args[i]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR) return UNSUP(c->n, "input %zu is not a tensor", i);
    if (i >= 2 && !loom_dtype_is_float(si->dtype)) return BAD(c->n, "input %zu has dtype %s; a float dtype is required", i, loom_dtype_name(si->dtype));
    if (i < 2 && si->ndim != 0) return BAD(c->n, "input %zu (%s) must be a scalar, not of rank %d", i, i ? "T" : "R", si->ndim);
  }
  if (!loom_dtype_is_int(c->args[1]->sinfo->dtype)) return BAD(c->n, "input 1 (T) must be an integer");
  for (size_t o = 0; o < out; o++)
    if (!*c->n->outputs[o]) return UNSUP(c->n, "output %zu is not named", o);
  c->bound = true;
  return LOOM_OK;
}

/* Scalar input i (R or T) in dtype t. */
static loom_status scalar_as(nctx *c, size_t i, loom_dtype t, loom_graph_expr **y) {
  if (c->args[i]->sinfo->dtype == t) return *y = c->args[i], LOOM_OK;
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", t));
  return oimp_op1(c, LOOM_GRAPH_OP_CAST, c->args[i], y);
}

/* a * x + y with a scalar constant a (x and y of one dtype). */
static loom_status axpy(nctx *c, double a, loom_graph_expr *x, loom_graph_expr *y, loom_graph_expr **out) {
  loom_graph_expr *ax;
  LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, a, x, &ax));
  return oimp_op2(c, LOOM_GRAPH_OP_ADD, ax, y, out);
}

/* Binds output o to op(a, b), named after it. */
static loom_status out2(nctx *c, size_t o, loom_graph_op op, loom_graph_expr *a, loom_graph_expr *b) {
  loom_graph_expr *ab[2] = {a, b}, *y;
  LOOM_PROPAGATE(oimp_emit(c, op, 2, ab, c->n->outputs[o], &y));
  return oimp_bind(c->im, c->n->outputs[o], y, NULL);
}

static loom_status attr_f(nctx *c, const char *name, double dflt, double *v) { return oimp_attr_float(c, name, dflt, v); }

/* Adagrad:  r = R / (1 + T * decay_factor);  G' = norm_coefficient * X + G;
 *           H_new = H + G' * G';  X_new = X - r * G' / (sqrt(H_new) + epsilon). */
static loom_status h_adagrad(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  size_t n;
  double decay, eps, lambda;
  LOOM_PROPAGATE(attr_f(c, "decay_factor", 0.0, &decay));
  LOOM_PROPAGATE(attr_f(c, "epsilon", 0.0, &eps));
  LOOM_PROPAGATE(attr_f(c, "norm_coefficient", 0.0, &lambda));
  LOOM_PROPAGATE(split_groups(c, 3, &n));
  for (size_t i = 0; i < n; i++) {
    loom_graph_expr *x = c->args[2 + i], *g = c->args[2 + n + i], *h = c->args[2 + 2 * n + i];
    loom_dtype t = x->sinfo->dtype;
    loom_graph_expr *R, *T, *r, *gr, *g2, *hn, *sq, *step;
    LOOM_PROPAGATE(scalar_as(c, 0, t, &R));
    LOOM_PROPAGATE(scalar_as(c, 1, t, &T));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, T, decay, &r));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, r, 1.0, &r));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, R, r, &r));
    LOOM_PROPAGATE(axpy(c, lambda, x, g, &gr));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, gr, gr, &g2));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, (loom_graph_expr *[]){h, g2}, c->n->outputs[n + i], &hn));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[n + i], hn, NULL));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, hn, &sq));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, sq, eps, &sq));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, r, gr, &step));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, step, sq, &step));
    LOOM_PROPAGATE(out2(c, i, LOOM_GRAPH_OP_SUB, x, step));
  }
  return LOOM_OK;
}

/* Momentum:  G' = norm_coefficient * X + G;  b = T > 0 ? beta : 1;  V_new = alpha * V + b * G';
 *            standard: X_new = X - R * V_new;  nesterov: X_new = X - R * (G' + alpha * V_new). */
static loom_status h_momentum(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  size_t n;
  double alpha, beta, lambda;
  const char *mode;
  LOOM_PROPAGATE(attr_f(c, "alpha", 0.0, &alpha));
  LOOM_PROPAGATE(attr_f(c, "beta", 0.0, &beta));
  LOOM_PROPAGATE(attr_f(c, "norm_coefficient", 0.0, &lambda));
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "standard", &mode));
  bool nesterov = !strcmp(mode, "nesterov");
  if (!nesterov && strcmp(mode, "standard")) return BAD(c->n, "attribute 'mode' is '%s' (standard | nesterov)", mode);
  LOOM_PROPAGATE(split_groups(c, 3, &n));
  for (size_t i = 0; i < n; i++) {
    loom_graph_expr *x = c->args[2 + i], *g = c->args[2 + n + i], *v = c->args[2 + 2 * n + i];
    loom_dtype t = x->sinfo->dtype;
    loom_graph_expr *R, *pos, *b, *one, *gr, *bg, *av, *vn, *d;
    LOOM_PROPAGATE(scalar_as(c, 0, t, &R));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, c->args[1], 0, &pos));
    LOOM_PROPAGATE(oimp_scalar(c, t, beta, &b));
    LOOM_PROPAGATE(oimp_scalar(c, t, 1.0, &one));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, pos, b, one, &b));
    LOOM_PROPAGATE(axpy(c, lambda, x, g, &gr));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, b, gr, &bg));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, alpha, v, &av));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ADD, 2, (loom_graph_expr *[]){av, bg}, c->n->outputs[n + i], &vn));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[n + i], vn, NULL));
    d = vn;
    if (nesterov) LOOM_PROPAGATE(axpy(c, alpha, vn, gr, &d));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, R, d, &d));
    LOOM_PROPAGATE(out2(c, i, LOOM_GRAPH_OP_SUB, x, d));
  }
  return LOOM_OK;
}

/* Adam:  G' = norm_coefficient * X + G;  V_new = alpha * V + (1 - alpha) * G';
 *        H_new = beta * H + (1 - beta) * G' * G';
 *        r = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R;
 *        X_new = (1 - norm_coefficient_post) * (X - r * V_new / (sqrt(H_new) + epsilon)). */
static loom_status h_adam(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  size_t n;
  double alpha, beta, eps, lambda, post;
  LOOM_PROPAGATE(attr_f(c, "alpha", 0.9, &alpha));
  LOOM_PROPAGATE(attr_f(c, "beta", 0.999, &beta));
  LOOM_PROPAGATE(attr_f(c, "epsilon", 0.0, &eps));
  LOOM_PROPAGATE(attr_f(c, "norm_coefficient", 0.0, &lambda));
  LOOM_PROPAGATE(attr_f(c, "norm_coefficient_post", 0.0, &post));
  LOOM_PROPAGATE(split_groups(c, 4, &n));
  for (size_t i = 0; i < n; i++) {
    loom_graph_expr *x = c->args[2 + i], *g = c->args[2 + n + i], *v = c->args[2 + 2 * n + i], *h = c->args[2 + 3 * n + i];
    loom_dtype t = x->sinfo->dtype;
    loom_graph_expr *R, *T, *pos, *gr, *av, *vn, *g2, *bh, *hn, *ka, *kb, *pa, *pb, *r, *sq, *d;
    LOOM_PROPAGATE(scalar_as(c, 0, t, &R));
    LOOM_PROPAGATE(scalar_as(c, 1, t, &T));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, c->args[1], 0, &pos));
    LOOM_PROPAGATE(axpy(c, lambda, x, g, &gr));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, alpha, v, &av));
    LOOM_PROPAGATE(axpy(c, 1.0 - alpha, gr, av, &vn));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, gr, gr, &g2));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_MUL, beta, h, &bh));
    LOOM_PROPAGATE(axpy(c, 1.0 - beta, g2, bh, &hn));
    /* r: 1 - alpha^T and 1 - beta^T in X's dtype */
    LOOM_PROPAGATE(oimp_scalar(c, t, alpha, &ka));
    LOOM_PROPAGATE(oimp_scalar(c, t, beta, &kb));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_POW, ka, T, &pa));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_POW, kb, T, &pb));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_SUB, 1.0, pa, &pa));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_SUB, 1.0, pb, &pb));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, pb, &pb));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, R, pb, &r));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, r, pa, &r));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, pos, r, R, &r));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, hn, &sq));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, sq, eps, &sq));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, vn, sq, &d));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, r, d, &d));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, x, d, &d));
    LOOM_PROPAGATE(oimp_scalar(c, t, 1.0 - post, &ka));
    LOOM_PROPAGATE(out2(c, i, LOOM_GRAPH_OP_MUL, ka, d));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[n + i], vn, NULL));
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[2 * n + i], hn, NULL));
  }
  return LOOM_OK;
}

/* domain ai.onnx.preview.training (onnx_tables.def) */
const op_entry oimp_train_table[] = {
    {"Adagrad", OIMP_OP_NONE, h_adagrad, 5, OIMP_MAX_IN, " decay_factor epsilon norm_coefficient ", true},
    {"Momentum", OIMP_OP_NONE, h_momentum, 5, OIMP_MAX_IN, " alpha beta mode norm_coefficient ", true},
    {"Adam", OIMP_OP_NONE, h_adam, 6, OIMP_MAX_IN, " alpha beta epsilon norm_coefficient norm_coefficient_post ", true},
};
const size_t oimp_train_table_len = sizeof oimp_train_table / sizeof oimp_train_table[0];

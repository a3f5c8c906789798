/* onnx_import_nn.c — ONNX ops the importer builds from several graph ops: losses
 * (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), activations (Elu, Selu, HardSwish,
 * ...), hyperbolic and inverse-hyperbolic functions, normalizations (LpNormalization,
 * MeanVarianceNormalization, InstanceNormalization, GroupNormalization), Hardmax,
 * EyeLike, DepthToSpace / SpaceToDepth, GlobalMaxPool, and FlexAttention (ai.onnx.preview) with its
 * modifier subgraphs inlined. Each follows the ONNX reference
 * (the function body in the operator's schema where there is one). */
#include <math.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

static loom_status reduce(nctx *c, loom_graph_op op, loom_graph_expr *x, size_t n, const int64_t *axes, bool keep,
                          loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", n, axes));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", keep));
  return oimp_op1(c, op, x, y);
}

/* Every axis of x (for reductions to a scalar). */
static loom_status all_axes(nctx *c, loom_graph_expr *x, int64_t *ax, size_t *n) {
  const loom_sinfo *s = x->sinfo;
  if (s->kind != LOOM_SINFO_TENSOR || s->ndim < 0) return UNSUP(c->n, "the rank of an intermediate is unknown");
  for (int k = 0; k < s->ndim; k++) ax[k] = k;
  *n = (size_t)s->ndim;
  return LOOM_OK;
}

/* The static extent of axis `axis` of x. */
static loom_status static_dim(nctx *c, loom_graph_expr *x, int64_t axis, const char *why, int64_t *d) {
  const loom_sinfo *s = x->sinfo;
  if (s->kind != LOOM_SINFO_TENSOR || !s->dims || axis < 0 || axis >= s->ndim || !loom_sym_is_const(s->dims[axis], d))
    return UNSUP(c->n, "%s needs a static extent on axis %lld", why, (long long)axis);
  return LOOM_OK;
}

/* x reversed along `axis` (static extent): take with the indices d-1 .. 0. */
loom_status oimp_reverse_axis(nctx *c, loom_graph_expr *x, int64_t axis, loom_graph_expr **y) {
  int64_t d;
  LOOM_PROPAGATE(static_dim(c, x, axis, "reversing", &d));
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 1, &d);
  if (!t) return LOOM_OOM();
  for (int64_t i = 0; i < d; i++) ((int64_t *)t->data)[i] = d - 1 - i;
  loom_graph_expr *idx = oimp_const_of(c->im, t);
  if (!idx) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_op2(c, LOOM_GRAPH_OP_TAKE, x, idx, y);
}

/* Moves the last axis of y (rank r) to position `axis`. */
static loom_status last_axis_to(nctx *c, loom_graph_expr *y, int r, int64_t axis, loom_graph_expr **out) {
  if (axis == r - 1) return *out = y, LOOM_OK;
  int64_t perm[16];
  for (int k = 0; k < r; k++) perm[k] = k < axis ? k : k == axis ? r - 1 : k - 1;
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", (size_t)r, perm));
  return oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, y, out);
}

/* ---- losses -------------------------------------------------------------------------- */

/* NLL of log-probabilities x (N, C, d...) at targets t (N, d...), optional class weights w
 * (C), attributes reduction (none | sum | mean) and ignore_index. Mean divides by the sum of
 * the weights that applied (the count of targets not ignored when there are no weights). */
static loom_status nll(nctx *c, loom_graph_expr *x, loom_graph_expr *t, loom_graph_expr *w, loom_graph_expr **out) {
  const char *red;
  LOOM_PROPAGATE(oimp_attr_str(c, "reduction", "mean", &red));
  bool none = strcmp(red, "none") == 0, sum = strcmp(red, "sum") == 0, mean = strcmp(red, "mean") == 0;
  if (!none && !sum && !mean) return BAD(c->n, "attribute 'reduction' is '%s' (none | sum | mean)", red);
  const loom_onnx_attr *ia = loom_onnx_node_attr(c->n, "ignore_index");
  if (ia && ia->kind != LOOM_ONNX_ATTR_INT) return BAD(c->n, "attribute 'ignore_index' must be int");
  if (oimp_in_rank(c, 0) < 2) return UNSUP(c->n, "input rank %d (at least 2: N, C)", oimp_in_rank(c, 0));
  loom_dtype xdt = x->sinfo->dtype, tdt = t->sinfo->dtype;
  loom_graph_expr *mask = NULL, *k, *g, *loss, *wt = NULL;
  if (ia) {
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_NOT_EQUAL, t, (double)ia->i, &mask));
    LOOM_PROPAGATE(oimp_scalar(c, tdt, 0, &k));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, mask, t, k, &t));
  }
  int64_t one = 1;
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &one));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, t, &g));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_GATHER_ELEMENTS, x, g, &g));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &one));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, g, &g));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_NEG, g, &loss));
  if (w) {
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_TAKE, w, t, &wt));
  }
  if (mask) {
    loom_graph_expr *mf;
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", xdt));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, mask, &mf));
    if (wt) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, wt, mf, &wt));
    else wt = mf;
  }
  if (wt) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, loss, wt, &loss));
  if (none) return *out = loss, LOOM_OK;
  int64_t ax[16];
  size_t n;
  LOOM_PROPAGATE(all_axes(c, loss, ax, &n));
  if (sum || !wt) return reduce(c, sum ? LOOM_GRAPH_OP_SUM : LOOM_GRAPH_OP_MEAN, loss, n, ax, false, out);
  loom_graph_expr *num, *den;
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_SUM, loss, n, ax, false, &num));
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_SUM, wt, n, ax, false, &den));
  return oimp_op2(c, LOOM_GRAPH_OP_DIV, num, den, out);
}

static loom_status h_nll(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  return nll(c, c->args[0], c->args[1], c->nargs > 2 ? c->args[2] : NULL, out);
}

/* SoftmaxCrossEntropyLoss: log_softmax over the class axis 1, then NLL; output 1 is the
 * log-probabilities. */
static loom_status h_sce(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  loom_graph_expr *lp;
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_LOG_SOFTMAX, c->args[0], &lp));
  LOOM_PROPAGATE(nll(c, lp, c->args[1], c->nargs > 2 ? c->args[2] : NULL, out));
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], lp, NULL));
  return LOOM_OK;
}

/* ---- activations and elementwise functions ---------------------------------------------- */

static loom_status h_act(nctx *c, const op_entry *e, loom_graph_expr **out) {
  const char *o = e->onnx;
  loom_graph_expr *x = c->args[0], *t, *u, *v, *z;
  double alpha, beta, gamma;
  if (!strcmp(o, "LeakyRelu") || !strcmp(o, "Elu") || !strcmp(o, "Celu") || !strcmp(o, "ThresholdedRelu")) {
    LOOM_PROPAGATE(oimp_attr_float(c, "alpha", !strcmp(o, "LeakyRelu") ? 0.01 : 1.0, &alpha));
    if (!strcmp(o, "ThresholdedRelu")) { /* x > alpha ? x : 0 */
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, x, alpha, &t));
      LOOM_PROPAGATE(oimp_scalar(c, x->sinfo->dtype, 0, &z));
      return oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, x, z, out);
    }
    if (!strcmp(o, "Celu")) { /* max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) */
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_DIV, x, alpha, &t));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, t, &t));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, t, 1, &t));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, t, alpha, &t));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MINIMUM, t, 0, &t));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MAXIMUM, x, 0, &u));
      return oimp_op2(c, LOOM_GRAPH_OP_ADD, u, t, out);
    }
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_LESS, x, 0, &t));
    if (!strcmp(o, "LeakyRelu")) LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, x, alpha, &u));
    else { /* Elu: alpha * (exp(x) - 1) */
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, x, &u));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, u, 1, &u));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, u, alpha, &u));
    }
    return oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, u, x, out);
  }
  if (!strcmp(o, "Selu")) { /* gamma * (x <= 0 ? alpha * exp(x) - alpha : x) */
    LOOM_PROPAGATE(oimp_attr_float(c, "alpha", 1.67326319217681884765625, &alpha));
    LOOM_PROPAGATE(oimp_attr_float(c, "gamma", 1.05070102214813232421875, &gamma));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_LESS_EQUAL, x, 0, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, x, &u));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, u, alpha, &u));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, u, alpha, &u));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, u, x, &v));
    return oimp_op_k(c, LOOM_GRAPH_OP_MUL, v, gamma, out);
  }
  if (!strcmp(o, "HardSigmoid") || !strcmp(o, "HardSwish")) { /* clip(alpha * x + beta, 0, 1) (* x) */
    bool swish = !strcmp(o, "HardSwish");
    alpha = 1.0 / 6, beta = 0.5;
    if (!swish) {
      LOOM_PROPAGATE(oimp_attr_float(c, "alpha", 0.2, &alpha));
      LOOM_PROPAGATE(oimp_attr_float(c, "beta", 0.5, &beta));
    }
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, x, alpha, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, t, beta, &t));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "min", 0));
    oimp_add_attr(c, loom_graph_attr_float(c->im->m, "max", 1));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CLIP, t, &t));
    return swish ? oimp_op2(c, LOOM_GRAPH_OP_MUL, x, t, out) : (*out = t, LOOM_OK);
  }
  if (!strcmp(o, "Softplus") || !strcmp(o, "Mish")) { /* log(exp(x) + 1); Mish: x * tanh(softplus) */
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, x, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, t, 1, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_LOG, t, &t));
    if (!strcmp(o, "Softplus")) return *out = t, LOOM_OK;
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_TANH, t, &t));
    return oimp_op2(c, LOOM_GRAPH_OP_MUL, x, t, out);
  }
  if (!strcmp(o, "Softsign")) { /* x / (1 + |x|) */
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ABS, x, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, t, 1, &t));
    return oimp_op2(c, LOOM_GRAPH_OP_DIV, x, t, out);
  }
  if (!strcmp(o, "Shrink")) { /* x < -l ? x + bias : x > l ? x - bias : 0 */
    double l, bias;
    LOOM_PROPAGATE(oimp_attr_float(c, "lambd", 0.5, &l));
    LOOM_PROPAGATE(oimp_attr_float(c, "bias", 0.0, &bias));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, x, l, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_SUB, x, bias, &u));
    LOOM_PROPAGATE(oimp_scalar(c, x->sinfo->dtype, 0, &z));
    LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, u, z, &v));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_LESS, x, -l, &t));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, x, bias, &u));
    return oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, u, v, out);
  }
  if (!strcmp(o, "PRelu")) { /* x < 0 ? slope * x : x */
    loom_graph_expr *slope = c->args[1];
    int xr = oimp_in_rank(c, 0), sr = oimp_in_rank(c, 1);
    if (c->im->opset < 7 && xr >= 3 && sr == 1) {
      /* opset 6 and earlier: a 1-D slope is per channel (axis 1), not broadcast from the right */
      int64_t axes[16];
      if (xr - 2 > 16) return UNSUP(c->n, "opset-6 per-channel slope on an input of rank %d (at most 18)", xr);
      for (int k = 0; k < xr - 2; k++) axes[k] = 1 + k;
      oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", (size_t)(xr - 2), axes));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, slope, &slope));
    }
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_LESS, x, 0, &t));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, x, slope, &u));
    return oimp_op3(c, LOOM_GRAPH_OP_WHERE, t, u, x, out);
  }
  if (!strcmp(o, "Swish")) { /* x * sigmoid(alpha * x) */
    LOOM_PROPAGATE(oimp_attr_float(c, "alpha", 1.0, &alpha));
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_MUL, x, alpha, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SIGMOID, t, &t));
    return oimp_op2(c, LOOM_GRAPH_OP_MUL, x, t, out);
  }
  if (!strcmp(o, "Tan")) {
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SIN, x, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_COS, x, &u));
    return oimp_op2(c, LOOM_GRAPH_OP_DIV, t, u, out);
  }
  if (!strcmp(o, "Sinh") || !strcmp(o, "Cosh")) { /* (exp(x) -+ exp(-x)) / 2 */
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, x, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_NEG, x, &u));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXP, u, &u));
    LOOM_PROPAGATE(oimp_op2(c, !strcmp(o, "Sinh") ? LOOM_GRAPH_OP_SUB : LOOM_GRAPH_OP_ADD, t, u, &v));
    return oimp_op_k(c, LOOM_GRAPH_OP_MUL, v, 0.5, out);
  }
  if (!strcmp(o, "Asinh") || !strcmp(o, "Acosh")) { /* log(x + sqrt(x^2 +- 1)) */
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, x, x, &t));
    LOOM_PROPAGATE(oimp_op_k(c, !strcmp(o, "Asinh") ? LOOM_GRAPH_OP_ADD : LOOM_GRAPH_OP_SUB, t, 1, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, t, &t));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_ADD, x, t, &t));
    return oimp_op1(c, LOOM_GRAPH_OP_LOG, t, out);
  }
  if (!strcmp(o, "Atanh")) { /* log((1 + x) / (1 - x)) / 2 */
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_ADD, 1, x, &t));
    LOOM_PROPAGATE(oimp_k_op(c, LOOM_GRAPH_OP_SUB, 1, x, &u));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_DIV, t, u, &t));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_LOG, t, &t));
    return oimp_op_k(c, LOOM_GRAPH_OP_MUL, t, 0.5, out);
  }
  if (!strcmp(o, "IsNaN")) return oimp_op2(c, LOOM_GRAPH_OP_NOT_EQUAL, x, x, out);
  if (!strcmp(o, "IsInf")) {
    int64_t pos, neg;
    LOOM_PROPAGATE(oimp_attr_int(c, "detect_positive", 1, &pos));
    LOOM_PROPAGATE(oimp_attr_int(c, "detect_negative", 1, &neg));
    if (!pos && !neg) return oimp_op_k(c, LOOM_GRAPH_OP_LESS, x, -INFINITY, out); /* all false */
    if (pos && neg) LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ABS, x, &x));
    return oimp_op_k(c, LOOM_GRAPH_OP_EQUAL, x, pos ? INFINITY : -INFINITY, out);
  }
  return UNSUP(c->n, "op type %s has no composition", o);
}

/* ---- normalizations ------------------------------------------------------------------------ */

static loom_status h_lpnorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t axis, p;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", -1, &axis));
  LOOM_PROPAGATE(oimp_attr_int(c, "p", 2, &p));
  if (p != 1 && p != 2) return BAD(c->n, "p is %lld (1 | 2)", (long long)p);
  LOOM_PROPAGATE(oimp_norm_axes(c, oimp_in_rank(c, 0), &axis, 1));
  loom_graph_expr *x = c->args[0], *t;
  if (p == 1) LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ABS, x, &t));
  else LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, x, x, &t));
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_SUM, t, 1, &axis, true, &t));
  if (p == 2) LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, t, &t));
  loom_graph_expr *z, *one; /* a zero norm divides by 1 (the reference's choice) */
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_EQUAL, t, 0, &z));
  LOOM_PROPAGATE(oimp_scalar(c, t->sinfo->dtype, 1, &one));
  LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, z, one, t, &t));
  return oimp_op2(c, LOOM_GRAPH_OP_DIV, x, t, out);
}

/* The schema's function: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`. */
static loom_status h_mvn(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t ax[16] = {0, 2, 3};
  size_t n = 3;
  const int64_t *v;
  bool pr;
  LOOM_PROPAGATE(oimp_attr_ints(c, "axes", &v, &n, &pr));
  if (!pr) n = 3;
  else if (n > 16) return UNSUP(c->n, "too many axes");
  else memcpy(ax, v, n * sizeof *v);
  LOOM_PROPAGATE(oimp_norm_axes(c, oimp_in_rank(c, 0), ax, n));
  loom_graph_expr *x = c->args[0], *m, *m2, *x2, *ex2, *var, *d;
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_MEAN, x, n, ax, true, &m));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, m, m, &m2));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, x, x, &x2));
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_MEAN, x2, n, ax, true, &ex2));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, ex2, m2, &var));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SQRT, var, &var));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, var, 1e-9, &var));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, x, m, &d));
  return oimp_op2(c, LOOM_GRAPH_OP_DIV, d, var, out);
}

/* InstanceNormalization = group_norm with one group per channel; GroupNormalization maps
 * directly (before opset 21 its scale and bias are per group: repeated per channel). */
static loom_status h_groupnorm(nctx *c, const op_entry *e, loom_graph_expr **out) {
  bool inst = !strcmp(e->onnx, "InstanceNormalization");
  double eps;
  int64_t groups, ch;
  LOOM_PROPAGATE(oimp_attr_float(c, "epsilon", 1e-5, &eps));
  LOOM_PROPAGATE(static_dim(c, c->args[0], 1, e->onnx, &ch));
  if (inst) groups = ch;
  else {
    if (!loom_onnx_node_attr(c->n, "num_groups")) return BAD(c->n, "attribute 'num_groups' is required");
    LOOM_PROPAGATE(oimp_attr_int(c, "num_groups", 1, &groups));
    if (groups <= 0 || ch % groups) return BAD(c->n, "num_groups %lld does not divide the %lld channels", (long long)groups, (long long)ch);
  }
  loom_graph_expr *a[3] = {c->args[0], c->args[1], c->args[2]};
  int64_t sd;
  if (!inst && ch != groups && loom_sym_is_const(a[1]->sinfo->dims[0], &sd) && sd == groups) {
    for (int i = 1; i < 3; i++) {
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "repeats", ch / groups));
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_REPEAT, a[i], &a[i]));
    }
  }
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "num_groups", groups));
  oimp_add_attr(c, loom_graph_attr_float(c->im->m, "eps", eps));
  return oimp_emit(c, LOOM_GRAPH_OP_GROUP_NORM, 3, a, c->n->outputs[0], out);
}

/* LayerNormalization's optional outputs: Mean and InvStdDev over the axes from `axis` on,
 * kept as size-1 dims (in f32 when stash_type is 1). */
loom_status oimp_layernorm_stats(nctx *c, int64_t axis, double eps) {
  int r = oimp_in_rank(c, 0);
  if (r < 0) return UNSUP(c->n, "the input's rank is unknown");
  if (axis < 0) axis += r;
  int64_t ax[16], stash;
  size_t n = 0;
  for (int64_t k = axis; k < r; k++) ax[n++] = k;
  LOOM_PROPAGATE(oimp_attr_int(c, "stash_type", 1, &stash));
  loom_graph_expr *x = c->args[0], *m, *d, *var;
  if (stash == 1 && x->sinfo->dtype != LOOM_DTYPE_F32) {
    oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, x, &x));
  }
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_MEAN, x, n, ax, true, &m));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, x, m, &d));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MUL, d, d, &d));
  LOOM_PROPAGATE(reduce(c, LOOM_GRAPH_OP_MEAN, d, n, ax, true, &var));
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_ADD, var, eps, &var));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RSQRT, var, &var));
  if (c->n->n_outputs > 1 && *c->n->outputs[1]) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[1], m, NULL));
  if (c->n->n_outputs > 2 && *c->n->outputs[2]) LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[2], var, NULL));
  return LOOM_OK;
}

/* ---- index and layout ------------------------------------------------------------------------ */

/* Hardmax: one_hot(argmax) along `axis`, in x's dtype. */
static loom_status h_hardmax(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t axis, d;
  int r = oimp_in_rank(c, 0);
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", c->im->opset >= 13 ? -1 : 1, &axis));
  LOOM_PROPAGATE(oimp_norm_axes(c, r, &axis, 1));
  if (c->im->opset < 13 && axis != r - 1) return UNSUP(c->n, "Hardmax before opset 13 flattens at axis %lld; only the last axis is supported", (long long)axis);
  LOOM_PROPAGATE(static_dim(c, c->args[0], axis, "Hardmax", &d));
  loom_graph_expr *am, *oh;
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "keepdims", false));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ARGMAX, c->args[0], &am));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "depth", 1, &d));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", c->args[0]->sinfo->dtype));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_ONE_HOT, am, &oh));
  return last_axis_to(c, oh, r, axis, out);
}

/* EyeLike of a statically shaped 2-D input: a constant. */
static loom_status h_eyelike(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int64_t k, dtc, dims[2];
  LOOM_PROPAGATE(oimp_attr_int(c, "k", 0, &k));
  LOOM_PROPAGATE(oimp_attr_int(c, "dtype", -1, &dtc));
  if (oimp_in_rank(c, 0) != 2) return BAD(c->n, "the input must be 2-D");
  for (int i = 0; i < 2; i++) LOOM_PROPAGATE(static_dim(c, c->args[0], i, "EyeLike", &dims[i]));
  loom_dtype dt = c->args[0]->sinfo->dtype;
  if (dtc >= 0 && !loom_onnx_elem_dtype((int32_t)dtc, &dt)) return UNSUP(c->n, "dtype %s is not supported", loom_onnx_elem_name((int32_t)dtc));
  if (dims[1] && dims[0] > OIMP_FOLD_MAX / dims[1]) return UNSUP(c->n, "a constant of over %d elements", OIMP_FOLD_MAX);
  loom_onnx_tensor *t = oimp_new_tensor(c->im, dt, 2, dims);
  if (!t) return LOOM_OOM();
  loom_graph_tensor g = {.dtype = dt, .ndim = 2, .numel = (size_t)t->numel, .data = t->data};
  for (int64_t i = 0; i < dims[0]; i++)
    if (i + k >= 0 && i + k < dims[1]) loom_graph_tensor_set_f64(&g, (size_t)(i * dims[1] + i + k), 1.0);
  return oimp_fold_const(c, t, out);
}

/* DepthToSpace (DCR / CRD) and SpaceToDepth on (N, C, H, W): reshape, permute, reshape. */
static loom_status h_depth_space(nctx *c, const op_entry *e, loom_graph_expr **out) {
  bool d2s = !strcmp(e->onnx, "DepthToSpace");
  int64_t b, ch;
  const char *mode;
  if (!loom_onnx_node_attr(c->n, "blocksize")) return BAD(c->n, "attribute 'blocksize' is required");
  LOOM_PROPAGATE(oimp_attr_int(c, "blocksize", 1, &b));
  LOOM_PROPAGATE(oimp_attr_str(c, "mode", "DCR", &mode));
  if (b <= 0) return BAD(c->n, "blocksize is %lld", (long long)b);
  if (oimp_in_rank(c, 0) != 4) return UNSUP(c->n, "only 4-D inputs");
  bool crd = d2s && !strcmp(mode, "CRD");
  if (d2s && !crd && strcmp(mode, "DCR")) return BAD(c->n, "mode '%s' (DCR | CRD)", mode);
  LOOM_PROPAGATE(static_dim(c, c->args[0], 1, e->onnx, &ch));
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *const *in = c->args[0]->sinfo->dims, *B = loom_sym_const(cx, b), *s6[6], *s4[4];
  const loom_sym_expr *N = in[0], *H = in[2], *W = in[3];
  int64_t perm[6];
  if (d2s) {
    if (ch % (b * b)) return BAD(c->n, "%lld channels are not a multiple of blocksize^2 = %lld", (long long)ch, (long long)(b * b));
    const loom_sym_expr *C2 = loom_sym_const(cx, ch / (b * b));
    if (crd) s6[0] = N, s6[1] = C2, s6[2] = B, s6[3] = B, s6[4] = H, s6[5] = W;
    else s6[0] = N, s6[1] = B, s6[2] = B, s6[3] = C2, s6[4] = H, s6[5] = W;
    static const int64_t p_crd[6] = {0, 1, 4, 2, 5, 3}, p_dcr[6] = {0, 3, 4, 1, 5, 2};
    memcpy(perm, crd ? p_crd : p_dcr, sizeof perm);
    s4[0] = N, s4[1] = C2, s4[2] = loom_sym_mul(cx, H, B), s4[3] = loom_sym_mul(cx, W, B);
  } else {
    s6[0] = N, s6[1] = loom_sym_const(cx, ch), s6[2] = loom_sym_floordiv(cx, H, B), s6[3] = B;
    s6[4] = loom_sym_floordiv(cx, W, B), s6[5] = B;
    static const int64_t p[6] = {0, 3, 5, 1, 2, 4};
    memcpy(perm, p, sizeof perm);
    s4[0] = N, s4[1] = loom_sym_const(cx, ch * b * b), s4[2] = s6[2], s4[3] = s6[4];
  }
  loom_graph_expr *y;
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 6, s6));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, c->args[0], &y));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 6, perm));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, y, &y));
  oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 4, s4));
  return oimp_emit(c, LOOM_GRAPH_OP_RESHAPE, 1, &y, c->n->outputs[0], out);
}

static loom_status h_global_max_pool(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  int r = oimp_in_rank(c, 0);
  if (r < 3) return UNSUP(c->n, "rank %d input (N, C, spatial...)", r);
  int64_t ax[16];
  for (int k = 2; k < r; k++) ax[k - 2] = k;
  return reduce(c, LOOM_GRAPH_OP_MAX, c->args[0], (size_t)r - 2, ax, true, out);
}

#define NOATTR " "
/* ---- FlexAttention (ai.onnx.preview) -------------------------------------------------------- */

/* The graph attribute `name` inlined on x (x itself when absent). */
static loom_status apply_mod(nctx *c, const char *name, loom_graph_expr *x, loom_graph_expr **y) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  if (!a) return *y = x, LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_GRAPH || !a->g) return BAD(c->n, "attribute '%s' must be a graph", name);
  if (a->g->n_inputs != 1)
    return UNSUP(c->n, "attribute '%s': a subgraph of %zu inputs (only the one-input form, the whole score tensor)", name, a->g->n_inputs);
  loom_status s = oimp_inline_graph(c->im, a->g, 1, &x, y);
  return s ? loom_status_annotate(s, __FILE__, __LINE__, "in attribute '%s' of node '%s' (FlexAttention)", name, c->n->name) : LOOM_OK;
}

/* Y = prob_mod(softmax(mask_mod(score_mod(Q K^T * scale)))) V on (B, H, L, E); K and V may have
 * fewer heads dividing H (each serves H / Hkv consecutive query heads). */
static loom_status h_flex_attention(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  imp *im = c->im;
  if (strcmp(c->n->domain, "ai.onnx.preview")) return UNSUP(c->n, "FlexAttention is an op of domain ai.onnx.preview, not '%s'", c->n->domain);
  for (size_t i = 0; i < 3; i++)
    if (oimp_in_rank(c, i) != 4) return BAD(c->n, "input %zu has rank %d; Q, K and V must be rank 4", i, oimp_in_rank(c, i));
  loom_graph_expr *q = c->args[0], *k = c->args[1], *v = c->args[2], *t, *p;
  int64_t hq, hk, hd;
  const loom_sym_expr *const *qd = q->sinfo->dims, *const *kd = k->sinfo->dims;
  if (qd[1] != kd[1] && loom_sym_prove_eq(im->cx, qd[1], kd[1]) != LOOM_SYM_TRUE) {
    if (!loom_sym_is_const(qd[1], &hq) || !loom_sym_is_const(kd[1], &hk) || hk <= 0 || hq % hk)
      return UNSUP(c->n, "grouped heads need static head counts of Q and K where K's divides Q's");
    for (int i = 0; i < 2; i++) {
      oimp_add_attr(c, loom_graph_attr_int(im->m, "repeats", hq / hk));
      oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", 1));
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_REPEAT, 1, i ? &v : &k, NULL, i ? &v : &k));
    }
  }
  double scale;
  if (loom_onnx_node_attr(c->n, "scale")) LOOM_PROPAGATE(oimp_attr_float(c, "scale", 1, &scale));
  else if (loom_sym_is_const(qd[3], &hd) && hd > 0) scale = 1 / sqrt((double)hd);
  else return UNSUP(c->n, "the default scale needs a constant, non-zero head size");
  static const int64_t kt[4] = {0, 1, 3, 2};
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 4, kt));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_PERMUTE_DIMS, 1, &k, NULL, &k));
  loom_graph_expr *a[2] = {q, k};
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MATMUL, 2, a, NULL, &t));
  LOOM_PROPAGATE(oimp_scalar(c, q->sinfo->dtype, scale, &a[1]));
  a[0] = t;
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_MUL, 2, a, NULL, &t));
  LOOM_PROPAGATE(apply_mod(c, "score_mod", t, &t));
  LOOM_PROPAGATE(apply_mod(c, "mask_mod", t, &t));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", -1));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SOFTMAX, 1, &t, NULL, &p));
  LOOM_PROPAGATE(apply_mod(c, "prob_mod", p, &p));
  a[0] = p, a[1] = v;
  return oimp_emit(c, LOOM_GRAPH_OP_MATMUL, 2, a, c->n->outputs[0], out);
}

const op_entry oimp_nn_table[] = {
    {"NegativeLogLikelihoodLoss", OIMP_OP_NONE, h_nll, 2, 3, " ignore_index reduction ", false},
    {"SoftmaxCrossEntropyLoss", OIMP_OP_NONE, h_sce, 2, 3, " ignore_index reduction ", true},
    {"LeakyRelu", OIMP_OP_NONE, h_act, 1, 1, " alpha ", false},
    {"Elu", OIMP_OP_NONE, h_act, 1, 1, " alpha ", false},
    {"Celu", OIMP_OP_NONE, h_act, 1, 1, " alpha ", false},
    {"Selu", OIMP_OP_NONE, h_act, 1, 1, " alpha gamma ", false},
    {"ThresholdedRelu", OIMP_OP_NONE, h_act, 1, 1, " alpha ", false},
    {"HardSigmoid", OIMP_OP_NONE, h_act, 1, 1, " alpha beta ", false},
    {"HardSwish", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Softplus", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Softsign", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Mish", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Shrink", OIMP_OP_NONE, h_act, 1, 1, " bias lambd ", false},
    {"PRelu", OIMP_OP_NONE, h_act, 2, 2, NOATTR, false},
    {"Swish", OIMP_OP_NONE, h_act, 1, 1, " alpha ", false},
    {"Tan", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Sinh", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Cosh", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Asinh", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Acosh", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"Atanh", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"IsNaN", OIMP_OP_NONE, h_act, 1, 1, NOATTR, false},
    {"IsInf", OIMP_OP_NONE, h_act, 1, 1, " detect_negative detect_positive ", false},
    {"LpNormalization", OIMP_OP_NONE, h_lpnorm, 1, 1, " axis p ", false},
    {"MeanVarianceNormalization", OIMP_OP_NONE, h_mvn, 1, 1, " axes ", false},
    {"InstanceNormalization", OIMP_OP_NONE, h_groupnorm, 3, 3, " epsilon ", false},
    {"GroupNormalization", OIMP_OP_NONE, h_groupnorm, 3, 3, " epsilon num_groups stash_type ", false},
    {"Hardmax", OIMP_OP_NONE, h_hardmax, 1, 1, " axis ", false},
    {"EyeLike", OIMP_OP_NONE, h_eyelike, 1, 1, " dtype k ", false},
    {"DepthToSpace", OIMP_OP_NONE, h_depth_space, 1, 1, " blocksize mode ", false},
    {"SpaceToDepth", OIMP_OP_NONE, h_depth_space, 1, 1, " blocksize ", false},
    {"GlobalMaxPool", OIMP_OP_NONE, h_global_max_pool, 1, 1, NOATTR, false},
    {"NonZero", LOOM_GRAPH_OP_NONZERO, oimp_h_simple, 1, 1, NOATTR, false},
    {"FlexAttention", OIMP_OP_NONE, h_flex_attention, 3, 3, " mask_mod prob_mod scale score_mod ", false},
};
const size_t oimp_nn_table_len = sizeof oimp_nn_table / sizeof oimp_nn_table[0];

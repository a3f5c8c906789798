/* pass_simplify_bn.c — a batch normalization after a convolution goes into the convolution's
 * constants (part of loom_graph_simplify; fold then computes them once):
 *
 *   c = conv2d(x, W[, B], ..);  y = batch_norm(c, g, beta, mean, var, eps=e)
 *     ->  y_bn_var = add(var, e);  y_bn_std = sqrt(y_bn_var);  y_bn_scale = div(g, y_bn_std)
 *         y_bn_scale_w = reshape(y_bn_scale, shape=[O, 1, ..]);  y_w = mul(W, y_bn_scale_w)
 *         y_bn_shift = sub(B, mean) (no B: neg(mean));  y_bn_shifted = mul(y_bn_shift, y_bn_scale)
 *         y_b = add(y_bn_shifted, beta);  y = conv2d(x, y_w, y_b, ..)
 *
 * (conv1d, conv2d and the N-d conv alike) when W, B, g, beta, mean and var are constants of y's
 * float dtype (f32, f64), the parameters one-dimensional of W's O output channels, and c read
 * by nothing but the batch normalization (else both convolutions would run). What ONNX Runtime's
 * Conv+BatchNormalization fusion does: a CNN exported in eval mode (torchvision's ResNet,
 * MobileNet) keeps every BatchNormalization, whose pass over the activations (a scale, a shift and
 * an rsqrt per channel) then disappears, and the convolution's bias becomes its epilogue. Rounding
 * moves by an ulp or so (x * (W * s) instead of (x * W) * s). */
#include <stdio.h>

#include "graph/pass_internal.h"

/* ---- uses ------------------------------------------------------------------------------------- */

static loom_status count_leaf(loom_map *uses, const loom_graph_expr *e) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR) return LOOM_OK;
  uint64_t n = 0;
  (void)loom_map_get(uses, e->u.var.id, &n);
  return loom_map_put(uses, e->u.var.id, n + 1) ? LOOM_OK : LOOM_OOM();
}

static loom_status count_seq(loom_map *uses, const loom_graph_seq *s);

/* Every var the value of b reads, once per reading (a nested branch's or body's too). */
static loom_status count_binding(loom_map *uses, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < v->u.call.nargs; i++) LOOM_PROPAGATE(count_leaf(uses, v->u.call.args[i]));
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) LOOM_PROPAGATE(count_leaf(uses, v->u.tuple.items[i]));
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    return count_leaf(uses, v->u.get.tuple);
  case LOOM_GRAPH_EXPR_IF:
    LOOM_PROPAGATE(count_leaf(uses, v->u.if_.cond));
    LOOM_PROPAGATE(count_seq(uses, v->u.if_.then_seq));
    return count_seq(uses, v->u.if_.else_seq);
  case LOOM_GRAPH_EXPR_LOOP:
    LOOM_PROPAGATE(count_leaf(uses, v->u.loop.count));
    LOOM_PROPAGATE(count_leaf(uses, v->u.loop.cond));
    for (size_t i = 0; i < v->u.loop.ncarry; i++) LOOM_PROPAGATE(count_leaf(uses, v->u.loop.inits[i]));
    return count_seq(uses, v->u.loop.body);
  default:
    return count_leaf(uses, v);
  }
}

static loom_status count_seq(loom_map *uses, const loom_graph_seq *s) {
  if (!s) return LOOM_OK;
  for (size_t bi = 0; bi < s->nblocks; bi++)
    for (size_t i = 0; i < s->blocks[bi]->n; i++) LOOM_PROPAGATE(count_binding(uses, s->blocks[bi]->bindings[i]));
  return count_leaf(uses, s->result);
}

typedef struct bn_state {
  loom_map uses; /* var id -> its readings in the function being walked */
  loom_status st;
} bn_state;

static void count_function(loom_pass *p) {
  bn_state *s = p->ud;
  loom_map_clear(&s->uses);
  if (!s->st) s->st = count_seq(&s->uses, p->f->body);
}

/* ---- the rule ---------------------------------------------------------------------------------- */

/* Whether e is a constant of dtype t: 1-D of o elements (o < 0: of any shape, rank >= 3). */
static bool const_of(const loom_graph_expr *e, loom_dtype t, int64_t o) {
  const loom_sinfo *si = e->sinfo;
  if (e->kind != LOOM_GRAPH_EXPR_CONST || !si || si->kind != LOOM_SINFO_TENSOR || si->dtype != t || !si->dims) return false;
  int64_t d;
  if (o < 0) return si->ndim >= 3 && loom_sym_is_const(si->dims[0], &d);
  return si->ndim == 1 && loom_sym_is_const(si->dims[0], &d) && d == o;
}

/* `<y>_<suffix> = op(args)` before b; *out NULL where inference refuses it. */
static loom_status before(loom_pass *p, const loom_graph_binding *b, const char *suffix, loom_graph_op op, size_t n,
                          loom_graph_expr *const *args, size_t nattrs, const loom_graph_attr *attrs, loom_graph_expr **out) {
  *out = NULL;
  for (size_t i = 0; i < n; i++)
    if (!args[i]) return LOOM_OK;
  loom_graph_expr *c = loom_graph_call_op(p->m, op, n, args, nattrs, attrs);
  if (!c) return LOOM_OOM();
  return loom_pass_add_before(p, b, suffix, c, out);
}

static loom_status conv_bn(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  bn_state *s = p->ud;
  if (s->st) return LOOM_OK;
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP ||
      v->u.call.op != LOOM_GRAPH_OP_BATCH_NORM || v->u.call.nargs != 5)
    return LOOM_OK;
  loom_dtype t = b->var->sinfo->kind == LOOM_SINFO_TENSOR ? b->var->sinfo->dtype : LOOM_DTYPE_UNKNOWN;
  if (t != LOOM_DTYPE_F32 && t != LOOM_DTYPE_F64) return LOOM_OK;
  const loom_graph_expr *conv = loom_pass_producer_op(p, v->u.call.args[0], LOOM_GRAPH_OP_CONV2D);
  if (!conv) conv = loom_pass_producer_op(p, v->u.call.args[0], LOOM_GRAPH_OP_CONV1D);
  if (!conv) conv = loom_pass_producer_op(p, v->u.call.args[0], LOOM_GRAPH_OP_CONV);
  uint64_t n = 0;
  if (!conv || conv->u.call.nargs < 2 || !loom_map_get(&s->uses, v->u.call.args[0]->u.var.id, &n) || n != 1) return LOOM_OK;
  loom_graph_expr *w = conv->u.call.args[1], *bias = conv->u.call.nargs > 2 ? conv->u.call.args[2] : NULL;
  int64_t o;
  if (!const_of(w, t, -1) || !loom_sym_is_const(w->sinfo->dims[0], &o) || (bias && !const_of(bias, t, o))) return LOOM_OK;
  for (size_t i = 1; i < 5; i++)
    if (!const_of(v->u.call.args[i], t, o)) return LOOM_OK;
  loom_graph_expr *gamma = v->u.call.args[1], *beta = v->u.call.args[2], *mean = v->u.call.args[3], *var = v->u.call.args[4];

  /* the scale per output channel, s = g / sqrt(var + eps), and its [O, 1, ..] shape for W */
  loom_graph_expr *a[2], *r[10];
  a[0] = var;
  a[1] = loom_graph_const_scalar(p->m, t, loom_graph_call_float(v, "eps"));
  if (!a[1]) return LOOM_OOM();
  LOOM_PROPAGATE(before(p, b, "bn_var", LOOM_GRAPH_OP_ADD, 2, a, 0, NULL, &r[0]));
  LOOM_PROPAGATE(before(p, b, "bn_std", LOOM_GRAPH_OP_SQRT, 1, &r[0], 0, NULL, &r[1]));
  a[0] = gamma, a[1] = r[1];
  LOOM_PROPAGATE(before(p, b, "bn_scale", LOOM_GRAPH_OP_DIV, 2, a, 0, NULL, &r[2]));
  int rank = w->sinfo->ndim;
  const loom_sym_expr *dims[8];
  if (rank > 8) return LOOM_OK;
  dims[0] = w->sinfo->dims[0];
  for (int i = 1; i < rank; i++) dims[i] = loom_sym_const(p->cx, 1);
  loom_graph_attr shape = loom_graph_attr_syms(p->m, "shape", (size_t)rank, dims);
  if (!shape.name || !shape.syms) return LOOM_OOM();
  LOOM_PROPAGATE(before(p, b, "bn_scale_w", LOOM_GRAPH_OP_RESHAPE, 1, &r[2], 1, &shape, &r[3]));
  a[0] = w, a[1] = r[3];
  LOOM_PROPAGATE(before(p, b, "w", LOOM_GRAPH_OP_MUL, 2, a, 0, NULL, &r[4]));

  /* the bias: (B - mean) * s + beta, without B -mean * s + beta */
  if (bias) {
    a[0] = bias, a[1] = mean;
    LOOM_PROPAGATE(before(p, b, "bn_shift", LOOM_GRAPH_OP_SUB, 2, a, 0, NULL, &r[5]));
  } else {
    LOOM_PROPAGATE(before(p, b, "bn_shift", LOOM_GRAPH_OP_NEG, 1, &mean, 0, NULL, &r[5]));
  }
  a[0] = r[5], a[1] = r[2];
  LOOM_PROPAGATE(before(p, b, "bn_shifted", LOOM_GRAPH_OP_MUL, 2, a, 0, NULL, &r[6]));
  a[0] = r[6], a[1] = beta;
  LOOM_PROPAGATE(before(p, b, "b", LOOM_GRAPH_OP_ADD, 2, a, 0, NULL, &r[7]));
  if (!r[4] || !r[7]) return LOOM_OK; /* inference refused a step: the added ones are dead, dce drops them */

  loom_graph_expr *args[3] = {conv->u.call.args[0], r[4], r[7]};
  loom_graph_expr *nc = loom_pass_call_copy(p->m, conv, 3, args, conv->u.call.nattrs, conv->u.call.attrs);
  if (!nc) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, nc, &ok);
}

loom_status loom_graph_simplify_conv_bn(loom_graph_module *m, size_t *changed) {
  bn_state s = {.st = LOOM_OK};
  loom_map_init(&s.uses, m->alloc);
  loom_pass p = {.m = m, .visit = conv_bn, .begin = count_function, .ud = &s};
  loom_status st = loom_pass_run(&p);
  loom_map_destroy(&s.uses);
  if (!st) st = s.st;
  else loom_status_free(s.st);
  *changed += p.changed;
  return st;
}

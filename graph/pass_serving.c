/* pass_serving.c — an ONNX decoder with past/present key/values rewritten into `loom serve`'s
 * serving form (docs/serve.md): the ragged batch of a step, the paged K/V cache as parameters,
 * `paged_attention` in place of each layer's attention, the logits of each sequence's last
 * token and the step's new keys and values as results.
 *
 * What it recognises in @main (the import of an exporter's decoder, batch 1 by padding):
 *   input_ids (1, s) i64, position_ids (1, s) i64     -> reshape(tokens, [1, t]), reshape(positions, [1, t])
 *   past_k (1, hk, p, d), past_v (1, hk, p, dv)       -> k_cache<L>, v_cache<L> (n, pg, hk, d / dv)
 * and, per layer, its attention:
 *     K = concat(past_k, k_new, axis=2)                 present key (a result, or not)
 *     V = concat(past_v, v_new, axis=2)                 present value
 *     S0 = matmul(q, permute_dims(K, [0, 1, 3, 2])) | matmul(q, K, transpose_b=true)
 *     S1 = S0 | mul(S0, c) | mul(c, S0) | div(S0, c)    c a one-element constant
 *     S = S1 | add(S1, M) | add(M, S1)                  M a graph input (the additive mask)
 *     y = matmul(softmax(S, axis=-1), V)
 *  -> y = permute(reshape(paged_attention(q', k', v', k_cache<L>, v_cache<L>, block_tables,
 *         ctx_lens, seq_ids, positions, scale=c)))      q', k', v' the (t, heads, d) views
 * Every other binding is copied as it is, on the new inputs: the batch-by-padding axis of 1
 * and s tokens becomes one row of the step's t tokens, which every per-token operator (norms,
 * projections, embeddings, activations) computes the same. The mask input M is the causal
 * mask over past + new keys the exporter's caller passes (make_model.py's `mask`): it is
 * dropped, and paged_attention is causal within each sequence and reads its cached keys
 * through the block table. The logits (1, s, V) become those of each sequence's last token,
 * gathered at `last_index` — before the last matmul when the logits are matmul(h, W), so the
 * vocabulary projection runs for b rows, not t.
 *
 * Refused, naming the input / binding / result: a binding that still uses a past input, the
 * mask or an intermediate of an attention (its scores, its softmax, a present tensor) other
 * than as above; a copied operator that acts along an axis whose extent depends on the step's
 * tokens (it would mix the sequences of a step: per_token) or is not known to act token by
 * token; a constant token axis; control flow and match_casts; shape literals and attributes with symbolic
 * dims (they would name the padded s); a result that is neither the logits nor a present key
 * or value; a past input without its attention; heads or head widths that are not constants.
 * What is refused is never served: the engine reports the message and stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "graph/graph_internal.h"
#include "graph/passes.h"

enum { MAX_LAYERS = 128 };

/* One layer's attention, as found. */
typedef struct serving_layer {
  loom_graph_binding *root;      /* y = matmul(softmax(..), V) */
  loom_graph_expr *past_k, *past_v; /* the two past parameters */
  loom_graph_expr *q, *k_new, *v_new; /* (1, h, s, d), (1, hk, s, d), (1, hk, s, dv) in the ONNX graph */
  loom_graph_expr *present_k, *present_v; /* the concat vars */
  double scale;                  /* the scores' factor */
  int64_t hk, d, dv;             /* key heads, key and value widths */
  loom_graph_expr *kc, *vc;      /* the new cache parameters */
} serving_layer;

/* The rewrite's state. */
typedef struct serving {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_graph_func *f;            /* the ONNX @main */
  const char *what;              /* the model's name, for messages */
  loom_map producer;             /* var id -> its binding */
  loom_map skip;                 /* var id -> 1: an attention intermediate (not copied) */
  loom_map repl;                 /* var id -> its new leaf (loom_graph_expr *) */
  loom_map layer_of;             /* var id of an attention root -> layer index + 1 */
  serving_layer layers[MAX_LAYERS];
  int nlayers;
  loom_graph_expr *ids, *pos;    /* input_ids, position_ids */
  const loom_sym_expr *t;        /* the step's token count (the new @main's) */
  int64_t pos_rows;              /* rows of the table position_ids index (0: none found) */
  unsigned tmp;                  /* names of the bindings the rewrite adds: sv0, sv1, ... */
  char why[256];                 /* why the last matmul over a present value was not an attention */
} serving;

/* Notes why the attention rooted at `root` (its values a concat of a past) was not matched. */
static bool miss(serving *s, const loom_graph_binding *root, const char *what, const loom_graph_expr *at) {
  if (s->why[0]) return false; /* the first one */
  snprintf(s->why, sizeof s->why, "at binding '%s', %s%s%s", root->var->u.var.name, what, at && at->kind == LOOM_GRAPH_EXPR_VAR ? " " : "",
           at && at->kind == LOOM_GRAPH_EXPR_VAR ? at->u.var.name : "");
  return false;
}

/* A fresh name for a binding the rewrite adds (the builder's own t<N> may clash with the
 * ONNX names). NULL on OOM. */
static const char *fresh(serving *s) {
  char nm[24];
  snprintf(nm, sizeof nm, "sv%u", s->tmp++);
  return loom_graph_module_intern(s->m, nm, strlen(nm));
}

static loom_status refuse(const serving *s, const char *fmt, const char *a, const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  return LOOM_ERROR(UNIMPLEMENTED, "'%s' cannot be served as a decoder with a paged cache: %s (docs/serve.md, \"ONNX\")", s->what, msg);
}

static loom_graph_binding *producer(const serving *s, const loom_graph_expr *e) {
  uint64_t v;
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR || !loom_map_get(&s->producer, e->u.var.id, &v)) return NULL;
  return (loom_graph_binding *)(uintptr_t)v;
}

/* The op call bound to `e`, when it is a call of `op`. */
static const loom_graph_expr *call_of(const serving *s, const loom_graph_expr *e, loom_graph_op op) {
  loom_graph_binding *b = producer(s, e);
  if (!b || b->kind != LOOM_GRAPH_BIND_VAR || b->value->kind != LOOM_GRAPH_EXPR_CALL) return NULL;
  const loom_graph_expr *c = b->value;
  return c->u.call.callee == LOOM_GRAPH_CALLEE_OP && c->u.call.op == op ? c : NULL;
}

static bool is_param(const serving *s, const loom_graph_expr *e) {
  for (size_t i = 0; e && i < s->f->nparams; i++)
    if (s->f->params[i] == e) return true;
  return false;
}

/* The value of a one-element f32 / f64 constant. */
static bool const_scalar(const loom_graph_expr *e, double *out) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_CONST || e->sinfo->kind != LOOM_SINFO_TENSOR) return false;
  if (e->sinfo->dtype == LOOM_DTYPE_F32 && e->u.cnst.nbytes == 4) *out = *(const float *)e->u.cnst.data;
  else if (e->sinfo->dtype == LOOM_DTYPE_F64 && e->u.cnst.nbytes == 8) *out = *(const double *)e->u.cnst.data;
  else return false;
  return true;
}

/* A constant dim of a tensor's struct info. */
static bool dim_const(const loom_sinfo *si, int axis, int64_t *out) {
  return si && si->kind == LOOM_SINFO_TENSOR && si->dims && axis < si->ndim && loom_sym_is_const(si->dims[axis], out);
}

/* The axis attribute normalised against ndim. */
static int64_t axis_of(const loom_graph_expr *c, const char *name, int ndim) {
  int64_t a = loom_graph_call_int(c, name);
  return a < 0 ? a + ndim : a;
}

/* K = concat(past, new, axis=2) with past a (1, hk, p, d) parameter: the past and the new part. */
static bool concat_past(const serving *s, const loom_graph_expr *K, loom_graph_expr **past, loom_graph_expr **knew) {
  const loom_graph_expr *c = call_of(s, K, LOOM_GRAPH_OP_CONCAT);
  if (!c || c->u.call.nargs != 2 || K->sinfo->ndim != 4 || axis_of(c, "axis", 4) != 2) return false;
  if (!is_param(s, c->u.call.args[0])) return false;
  *past = c->u.call.args[0];
  *knew = c->u.call.args[1];
  return true;
}

/* Matches the attention rooted at binding b (y = matmul(P, V)); fills *L. */
static bool match_attention(serving *s, loom_graph_binding *b, serving_layer *L) {
  const loom_graph_expr *y = b->value;
  if (y->kind != LOOM_GRAPH_EXPR_CALL || y->u.call.callee != LOOM_GRAPH_CALLEE_OP || y->u.call.op != LOOM_GRAPH_OP_MATMUL ||
      y->u.call.nattrs)
    return false;
  memset(L, 0, sizeof *L);
  L->root = b;
  loom_graph_expr *P = y->u.call.args[0], *V = y->u.call.args[1];
  if (!concat_past(s, V, &L->past_v, &L->v_new)) return false;
  const loom_graph_expr *sm = call_of(s, P, LOOM_GRAPH_OP_SOFTMAX);
  if (!sm || axis_of(sm, "axis", 4) != 3) return miss(s, b, "the weights are not a softmax over the keys (last axis):", P);
  loom_graph_expr *S = sm->u.call.args[0], *S1 = S;
  const loom_graph_expr *add = call_of(s, S, LOOM_GRAPH_OP_ADD);
  if (add) {
    loom_graph_expr *a0 = add->u.call.args[0], *a1 = add->u.call.args[1];
    if (is_param(s, a1)) S1 = a0;
    else if (is_param(s, a0)) S1 = a1;
    else return miss(s, b, "the scores are masked by a value computed in the graph, not a mask input (only a mask input is taken as the causal mask):", S);
  }
  loom_graph_expr *S0 = S1;
  L->scale = 1.0;
  const loom_graph_expr *sc;
  double c;
  if ((sc = call_of(s, S1, LOOM_GRAPH_OP_MUL))) {
    if (const_scalar(sc->u.call.args[1], &c)) S0 = sc->u.call.args[0];
    else if (const_scalar(sc->u.call.args[0], &c)) S0 = sc->u.call.args[1];
    else return miss(s, b, "the scores are scaled by a value that is not a one-element constant:", S1);
    L->scale = c;
  } else if ((sc = call_of(s, S1, LOOM_GRAPH_OP_DIV))) {
    if (!const_scalar(sc->u.call.args[1], &c) || c == 0) return miss(s, b, "the scores are divided by a value that is not a nonzero one-element constant:", S1);
    S0 = sc->u.call.args[0];
    L->scale = 1.0 / c;
  }
  const loom_graph_expr *mm = call_of(s, S0, LOOM_GRAPH_OP_MATMUL);
  if (!mm) return miss(s, b, "the scores are not matmul(q, keys^T):", S0);
  L->q = mm->u.call.args[0];
  loom_graph_expr *KT = mm->u.call.args[1], *K;
  const loom_graph_attr *tb = loom_graph_call_attr(mm, "transpose_b");
  if (tb && tb->i && mm->u.call.nattrs == 1) {
    K = KT;
  } else {
    if (mm->u.call.nattrs) return miss(s, b, "the scores' matmul has attributes:", S0);
    const loom_graph_expr *pd = call_of(s, KT, LOOM_GRAPH_OP_PERMUTE_DIMS);
    const loom_graph_attr *ax = pd ? loom_graph_call_attr(pd, "axes") : NULL;
    int64_t want[4] = {0, 1, 3, 2}, v;
    if (!ax || ax->kind != LOOM_GRAPH_ATTR_SYMS || ax->n != 4) return miss(s, b, "the keys are not permute_dims(present key, [0, 1, 3, 2]):", KT);
    for (int i = 0; i < 4; i++)
      if (!loom_sym_is_const(ax->syms[i], &v) || v != want[i]) return miss(s, b, "the keys are not permute_dims(present key, [0, 1, 3, 2]):", KT);
    K = pd->u.call.args[0];
    loom_map_put(&s->skip, KT->u.var.id, 1);
  }
  if (!concat_past(s, K, &L->past_k, &L->k_new)) return miss(s, b, "the keys are not concat(past key input, new keys, axis=2):", K);
  L->present_k = K, L->present_v = V;
  /* the scores, their scaling, masking and softmax are this attention's own */
  const loom_graph_expr *inner[] = {P, S, S1, S0, K, V};
  for (size_t i = 0; i < sizeof inner / sizeof *inner; i++)
    if (!loom_map_put(&s->skip, inner[i]->u.var.id, 1)) return false;
  return true;
}

/* Checks the layer's tensors: q (1, h, s, d), the new and past keys and values (1, hk, ., d). */
static loom_status check_layer(serving *s, serving_layer *L) {
  int64_t one, h, d2, hv, dv;
  const loom_sinfo *pk = L->past_k->sinfo, *pv = L->past_v->sinfo, *q = L->q->sinfo;
  const char *pkn = L->past_k->u.var.name;
  if (pk->ndim != 4 || !dim_const(pk, 0, &one) || one != 1 || !dim_const(pk, 1, &L->hk) || !dim_const(pk, 3, &L->d))
    return refuse(s, "past input '%s' is not (1, heads, past, dim) with constant heads and dim%s", pkn, "");
  if (pv->ndim != 4 || !dim_const(pv, 1, &hv) || hv != L->hk || !dim_const(pv, 3, &dv))
    return refuse(s, "past input '%s' is not (1, heads, past, dim) with the heads of '%s'", L->past_v->u.var.name, pkn);
  L->dv = dv;
  if (q->kind != LOOM_SINFO_TENSOR || q->ndim != 4 || !dim_const(q, 0, &one) || one != 1 || !dim_const(q, 1, &h) ||
      !dim_const(q, 3, &d2) || d2 != L->d || h % L->hk)
    return refuse(s, "the query of the attention over '%s' is not (1, heads, s, dim) with a multiple of its heads%s", pkn, "");
  return LOOM_OK;
}

/* ---- the token axis ---------------------------------------------------------------------------- */

/* Does a dim depend on the step's token count t? */
static bool dim_has_t(serving *s, const loom_sym_expr *d) {
  const loom_sym_expr *zero = loom_sym_const(s->cx, 0);
  return loom_sym_subst(s->cx, d, &s->t, &zero, 1) != d;
}

/* Does a leaf's tensor have a dim over the tokens? */
static bool has_t(serving *s, const loom_graph_expr *x) {
  const loom_sinfo *si = x->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims) return si->kind == LOOM_SINFO_TENSOR; /* unknown dims: assume so */
  for (int i = 0; i < si->ndim; i++)
    if (dim_has_t(s, si->dims[i])) return true;
  return false;
}

/* Axis `a` (negative from the end) of x: does its extent depend on t? Out of range: true. */
static bool axis_has_t(serving *s, const loom_graph_expr *x, int64_t a) {
  const loom_sinfo *si = x->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims) return true;
  if (a < 0) a += si->ndim;
  return a < 0 || a >= si->ndim || dim_has_t(s, si->dims[a]);
}

/* The axes attribute `name` of call c on x: does any of them run over the tokens? Absent: all
 * axes. */
static bool axes_have_t(serving *s, const loom_graph_expr *c, const loom_graph_expr *x, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(c, name);
  if (!a) return has_t(s, x);
  int64_t v;
  if (a->kind == LOOM_GRAPH_ATTR_INT) return axis_has_t(s, x, a->i);
  for (size_t i = 0; i < a->n; i++)
    if (!loom_sym_is_const(a->syms[i], &v) || axis_has_t(s, x, v)) return true;
  return false;
}

/* Is the copied call c (on the new leaves) computed token by token: nothing it does combines
 * the values of different tokens? Every operand row of the step's t tokens is one padded row of
 * the ONNX graph, so an operator that reduces, gathers, slices, pads, convolves or multiplies
 * along an axis whose extent depends on t would mix the sequences of a batch (or the tokens of
 * one: a causal mask the rewrite does not see). What is not known to be per token is refused. */
static bool per_token(serving *s, const loom_graph_expr *c) {
  loom_graph_expr *const *a = c->u.call.args;
  size_t n = c->u.call.nargs;
  bool any = false;
  for (size_t i = 0; i < n; i++) any |= has_t(s, a[i]);
  if (!any) return true;
  loom_graph_op op = c->u.call.op;
  switch (op) {
  case LOOM_GRAPH_OP_RESHAPE:
  case LOOM_GRAPH_OP_PERMUTE_DIMS:
  case LOOM_GRAPH_OP_EXPAND_DIMS:
  case LOOM_GRAPH_OP_SQUEEZE:
  case LOOM_GRAPH_OP_FLATTEN: return true; /* a later operator along a merged axis is checked there */
  case LOOM_GRAPH_OP_SOFTMAX:
  case LOOM_GRAPH_OP_LOG_SOFTMAX: return !axis_has_t(s, a[0], loom_graph_call_int(c, "axis"));
  case LOOM_GRAPH_OP_LAYER_NORM:
  case LOOM_GRAPH_OP_RMS_NORM: {
    /* over the trailing axes of the gain's rank */
    int r = n > 1 && a[1]->sinfo->kind == LOOM_SINFO_TENSOR ? a[1]->sinfo->ndim : 1;
    for (int i = 1; i <= (r < 1 ? 1 : r); i++)
      if (axis_has_t(s, a[0], -i)) return false;
    return !(n > 1 && has_t(s, a[1])) && !(n > 2 && has_t(s, a[2]));
  }
  case LOOM_GRAPH_OP_SUM:
  case LOOM_GRAPH_OP_MEAN:
  case LOOM_GRAPH_OP_MAX:
  case LOOM_GRAPH_OP_MIN:
  case LOOM_GRAPH_OP_PROD: return !axes_have_t(s, c, a[0], "axes");
  case LOOM_GRAPH_OP_ARGMAX:
  case LOOM_GRAPH_OP_ARGMIN: return !axis_has_t(s, a[0], loom_graph_call_int(c, "axis"));
  case LOOM_GRAPH_OP_MATMUL:
  case LOOM_GRAPH_OP_LINEAR: return !has_t(s, a[1]) && !(n > 2 && has_t(s, a[2])) && !axis_has_t(s, a[0], -1);
  case LOOM_GRAPH_OP_CONCAT: {
    int64_t ax = loom_graph_call_int(c, "axis");
    for (size_t i = 0; i < n; i++)
      if (axis_has_t(s, a[i], ax)) return false;
    return true;
  }
  case LOOM_GRAPH_OP_SPLIT: return !axis_has_t(s, a[0], loom_graph_call_int(c, "axis"));
  case LOOM_GRAPH_OP_STRIDED_SLICE: return !axes_have_t(s, c, a[0], "axes");
  case LOOM_GRAPH_OP_TAKE: return !axis_has_t(s, a[0], loom_graph_call_int(c, "axis"));
  default: break;
  }
  loom_tp_pattern pk = loom_graph_op_pattern(op);
  return pk == LOOM_TP_PATTERN_ELEMWISE || pk == LOOM_TP_PATTERN_BROADCAST;
}

/* ---- emission --------------------------------------------------------------------------------- */

static loom_status op(serving *s, loom_graph_builder *b, const char *name, size_t nargs, loom_graph_expr *const *args, size_t nattrs,
                      const loom_graph_attr *attrs, loom_graph_expr **out) {
  return loom_graph_builder_op(b, name, nargs, args, nattrs, attrs, fresh(s), out);
}

static loom_status reshape(serving *s, loom_graph_builder *b, loom_graph_expr *x, size_t n, const loom_sym_expr *const *dims, loom_graph_expr **out) {
  loom_graph_attr a = loom_graph_attr_syms(b->m, "shape", n, dims);
  return op(s, b, "reshape", 1, &x, 1, &a, out);
}

/* x (1, hk, t, d) -> (t, hk, d). */
static loom_status to_rows(serving *s, loom_graph_builder *b, loom_graph_expr *x, const loom_sym_expr *t, loom_graph_expr **out) {
  int64_t perm[4] = {0, 2, 1, 3};
  loom_graph_attr a = loom_graph_attr_ints(s->m, "axes", 4, perm);
  loom_graph_expr *p;
  LOOM_PROPAGATE(op(s, b, "permute_dims", 1, &x, 1, &a, &p));
  const loom_sym_expr *dims[3] = {t, x->sinfo->dims[1], x->sinfo->dims[3]};
  return reshape(s, b, p, 3, dims, out);
}

/* The new leaf of an old one: a var through the replacement map (NULL: refused), a constant as
 * it is, a shape or symbolic literal only when constant. */
static loom_status leaf(serving *s, const loom_graph_binding *user, loom_graph_expr *e, loom_graph_expr **out) {
  uint64_t v;
  const char *uname = user ? user->var->u.var.name : "the result";
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
    if (!loom_map_get(&s->repl, e->u.var.id, &v)) {
      if (loom_map_contains(&s->skip, e->u.var.id))
        return refuse(s, "binding '%s' uses '%s', an intermediate of an attention the rewrite replaces", uname, e->u.var.name);
      return refuse(s, "binding '%s' uses input '%s', which the serving form has no value for", uname, e->u.var.name);
    }
    *out = (loom_graph_expr *)(uintptr_t)v;
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_CONST: *out = e; return LOOM_OK;
  case LOOM_GRAPH_EXPR_SHAPE:
    for (size_t i = 0; i < e->u.shape.n; i++)
      if (!loom_sym_is_const(e->u.shape.dims[i], NULL)) return refuse(s, "binding '%s' has a symbolic shape literal%s", uname, "");
    *out = e;
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_SYM:
    if (!loom_sym_is_const(e->u.sym, NULL)) return refuse(s, "binding '%s' has a symbolic scalar literal%s", uname, "");
    *out = e;
    return LOOM_OK;
  default: return refuse(s, "binding '%s' has an operand that is not a leaf%s", uname, "");
  }
}

static loom_status set_repl(serving *s, const loom_graph_expr *old, loom_graph_expr *nw) {
  return loom_map_put(&s->repl, old->u.var.id, (uint64_t)(uintptr_t)nw) ? LOOM_OK : LOOM_OOM();
}

/* Layer L's attention on the new inputs: y (1, h, t, dv) from paged_attention. */
static loom_status emit_attention(serving *s, loom_graph_builder *b, serving_layer *L, loom_graph_expr *const *batch,
                                  const loom_sym_expr *t, loom_graph_expr **kv_out) {
  loom_graph_expr *q, *k, *v, *q3, *k3, *v3, *y, *y4, *y5;
  LOOM_PROPAGATE(leaf(s, L->root, L->q, &q));
  LOOM_PROPAGATE(leaf(s, L->root, L->k_new, &k));
  LOOM_PROPAGATE(leaf(s, L->root, L->v_new, &v));
  LOOM_PROPAGATE(to_rows(s, b, q, t, &q3));
  LOOM_PROPAGATE(to_rows(s, b, k, t, &k3));
  LOOM_PROPAGATE(to_rows(s, b, v, t, &v3));
  /* batch: block_tables, ctx_lens, seq_ids, positions */
  loom_graph_expr *args[9] = {q3, k3, v3, L->kc, L->vc, batch[0], batch[1], batch[2], batch[3]};
  loom_graph_attr a = loom_graph_attr_float(s->m, "scale", L->scale);
  LOOM_PROPAGATE(loom_graph_builder_op(b, "paged_attention", 9, args, 1, &a, L->root->var->u.var.name, &y));
  const loom_sym_expr *d4[4] = {loom_sym_const(s->cx, 1), t, q->sinfo->dims[1], loom_sym_const(s->cx, L->dv)};
  LOOM_PROPAGATE(reshape(s, b, y, 4, d4, &y4));
  int64_t perm[4] = {0, 2, 1, 3};
  loom_graph_attr pa = loom_graph_attr_ints(s->m, "axes", 4, perm);
  LOOM_PROPAGATE(op(s, b, "permute_dims", 1, &y4, 1, &pa, &y5));
  kv_out[0] = k3, kv_out[1] = v3;
  return set_repl(s, L->root->var, y5);
}

/* A copy of binding `bd`'s value on the new leaves. */
static loom_status emit_copy(serving *s, loom_graph_builder *b, loom_graph_binding *bd) {
  const char *name = bd->var->u.var.name;
  if (bd->kind != LOOM_GRAPH_BIND_VAR) return refuse(s, "binding '%s' is a match_cast%s", name, "");
  loom_graph_expr *e = bd->value, *ne = NULL, *out;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
  case LOOM_GRAPH_EXPR_CONST:
  case LOOM_GRAPH_EXPR_SHAPE:
  case LOOM_GRAPH_EXPR_SYM: LOOM_PROPAGATE(leaf(s, bd, e, &ne)); break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: {
    loom_graph_expr *t;
    LOOM_PROPAGATE(leaf(s, bd, e->u.get.tuple, &t));
    ne = loom_graph_tuple_get_new(s->m, t, e->u.get.index);
    break;
  }
  case LOOM_GRAPH_EXPR_TUPLE: {
    loom_graph_expr **items = LOOM_ARENA_ARRAY(loom_graph_module_arena(s->m), loom_graph_expr *, e->u.tuple.n ? e->u.tuple.n : 1);
    if (!items) return LOOM_OOM();
    for (size_t i = 0; i < e->u.tuple.n; i++) LOOM_PROPAGATE(leaf(s, bd, e->u.tuple.items[i], &items[i]));
    ne = loom_graph_tuple_new(s->m, e->u.tuple.n, items);
    break;
  }
  case LOOM_GRAPH_EXPR_CALL: {
    if (e->u.call.callee != LOOM_GRAPH_CALLEE_OP)
      return refuse(s, "binding '%s' calls @%s; only operators are rewritten", name, e->u.call.target);
    for (size_t i = 0; i < e->u.call.nattrs; i++) {
      const loom_graph_attr *a = &e->u.call.attrs[i];
      for (size_t k = 0; a->kind == LOOM_GRAPH_ATTR_SYMS && k < a->n; k++)
        if (!loom_sym_is_const(a->syms[k], NULL))
          return refuse(s, "binding '%s' has attribute '%s' with a symbolic dim (it would name the padded axis)", name, a->name);
    }
    loom_graph_expr **args = LOOM_ARENA_ARRAY(loom_graph_module_arena(s->m), loom_graph_expr *, e->u.call.nargs ? e->u.call.nargs : 1);
    if (!args) return LOOM_OOM();
    for (size_t i = 0; i < e->u.call.nargs; i++) LOOM_PROPAGATE(leaf(s, bd, e->u.call.args[i], &args[i]));
    ne = loom_graph_call_op(s->m, e->u.call.op, e->u.call.nargs, args, e->u.call.nattrs, e->u.call.attrs);
    if (ne && !per_token(s, ne))
      return refuse(s, "binding '%s' (%s) may combine different tokens: it acts along the token axis, or is not known to act token by token",
                    name, loom_graph_op_name(e->u.call.op));
    break;
  }
  default: return refuse(s, "binding '%s' is control flow (if / loop)%s", name, "");
  }
  if (!ne) return LOOM_OOM();
  LOOM_RETURN_IF_ERROR(loom_graph_builder_emit(b, ne, name, &out), "while rewriting binding '%s' for serving", name);
  return set_repl(s, bd->var, out);
}

/* The logits of each sequence's last token from the ONNX logits (1, t, V): the rows taken
 * before the projection when the logits are matmul(h, W) with W a constant of rank 2. */
static loom_status emit_logits(serving *s, loom_graph_builder *b, loom_graph_expr *logits, loom_graph_expr *last,
                               const loom_sym_expr *t, loom_graph_expr **out) {
  const loom_graph_expr *mm = call_of(s, logits, LOOM_GRAPH_OP_MATMUL);
  loom_graph_attr ax = loom_graph_attr_int(s->m, "axis", 0);
  if (mm && !mm->u.call.nattrs && mm->u.call.args[1]->kind == LOOM_GRAPH_EXPR_CONST && mm->u.call.args[1]->sinfo->ndim == 2 &&
      mm->u.call.args[0]->sinfo->ndim == 3) {
    loom_graph_expr *h, *h2, *hl, *w = mm->u.call.args[1];
    LOOM_PROPAGATE(leaf(s, NULL, mm->u.call.args[0], &h));
    const loom_sym_expr *d2[2] = {t, h->sinfo->dims[2]};
    LOOM_PROPAGATE(reshape(s, b, h, 2, d2, &h2));
    loom_graph_expr *ta[2] = {h2, last};
    LOOM_PROPAGATE(op(s, b, "take", 2, ta, 1, &ax, &hl));
    loom_graph_expr *ma[2] = {hl, w};
    return loom_graph_builder_op(b, "matmul", 2, ma, 0, NULL, "logits_last", out);
  }
  loom_graph_expr *l, *l2;
  LOOM_PROPAGATE(leaf(s, NULL, logits, &l));
  if (l->sinfo->kind != LOOM_SINFO_TENSOR || l->sinfo->ndim != 3) return refuse(s, "the logits '%s' are not (1, s, vocabulary)%s", logits->u.var.name, "");
  const loom_sym_expr *d2[2] = {t, l->sinfo->dims[2]};
  LOOM_PROPAGATE(reshape(s, b, l, 2, d2, &l2));
  loom_graph_expr *ta[2] = {l2, last};
  return loom_graph_builder_op(b, "take", 2, ta, 1, &ax, "logits_last", out);
}

/* The function's results: (logits, present...) as a tuple var, or one var (in one[0]). */
static loom_status results(serving *s, loom_graph_expr **one, loom_graph_expr *const **items, size_t *n) {
  loom_graph_expr *r = s->f->body->result;
  loom_graph_binding *rb = producer(s, r);
  if (rb && rb->value->kind == LOOM_GRAPH_EXPR_TUPLE) {
    *items = rb->value->u.tuple.items;
    *n = rb->value->u.tuple.n;
    loom_map_put(&s->skip, r->u.var.id, 1);
    return LOOM_OK;
  }
  if (r->kind != LOOM_GRAPH_EXPR_VAR) return refuse(s, "@main's result is not a var%s%s", "", "");
  one[0] = r;
  *items = one;
  *n = 1;
  return LOOM_OK;
}

static loom_status rewrite(serving *s, loom_graph_func **out_f) {
  loom_graph_module *m = s->m;
  loom_graph_func *f = s->f;
  /* producers, in order */
  for (size_t k = 0; k < f->body->nblocks; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      if (!loom_map_put(&s->producer, bd->var->u.var.id, (uint64_t)(uintptr_t)bd)) return LOOM_OOM();
    }
  for (size_t i = 0; i < f->nparams; i++) {
    const char *pn = f->params[i]->u.var.name;
    if (!strcmp(pn, "input_ids")) s->ids = f->params[i];
    if (!strcmp(pn, "position_ids")) s->pos = f->params[i];
  }
  if (!s->ids) return refuse(s, "@main has no input 'input_ids' (the token ids, (1, s) i64)%s%s", "", "");
  if (!s->pos) return refuse(s, "@main has no input 'position_ids' (positions computed inside the graph are not recognised)%s%s", "", "");
  const loom_sinfo *idsi = s->ids->sinfo, *posi = s->pos->sinfo;
  int64_t one;
  if (idsi->ndim != 2 || idsi->dtype != LOOM_DTYPE_I64 || !dim_const(idsi, 0, &one) || one != 1)
    return refuse(s, "input '%s' is not (1, s) i64 (batch by padding of one sequence)%s", "input_ids", "");
  int64_t fixed;
  if (dim_const(idsi, 1, &fixed))
    return refuse(s, "input 'input_ids' has a constant token axis (%s); the rewrite needs it symbolic%s", loom_graph_sym_str(s->m, idsi->dims[1]), "");
  if (posi->ndim != 2 || (posi->dtype != LOOM_DTYPE_I64) || !dim_const(posi, 0, &one) || one != 1)
    return refuse(s, "input '%s' is not (1, s) i64%s", "position_ids", "");
  /* the attentions, in order */
  for (size_t k = 0; k < f->body->nblocks; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      serving_layer L;
      if (!match_attention(s, bd, &L)) continue;
      if (s->nlayers == MAX_LAYERS) return refuse(s, "more than %s layers%s", "128", "");
      LOOM_PROPAGATE(check_layer(s, &L));
      s->layers[s->nlayers++] = L;
      if (!loom_map_put(&s->layer_of, bd->var->u.var.id, (uint64_t)s->nlayers)) return LOOM_OOM();
    }
  /* every past input belongs to one attention */
  for (size_t i = 0; i < f->nparams; i++) {
    loom_graph_expr *p = f->params[i];
    if (p == s->ids || p == s->pos) continue;
    int uses = 0;
    for (int l = 0; l < s->nlayers; l++) uses += (s->layers[l].past_k == p) + (s->layers[l].past_v == p);
    if (uses > 1) return refuse(s, "input '%s' is the past of two attentions%s", p->u.var.name, "");
    if (!uses && p->sinfo->kind == LOOM_SINFO_TENSOR && p->sinfo->ndim == 4 && (strstr(p->u.var.name, "past") || strstr(p->u.var.name, "cache")))
    {
      char msg[400];
      snprintf(msg, sizeof msg, "input '%s' looks like a past key / value, but no attention over concat('%s', new, axis=2) was recognised%s%s",
               p->u.var.name, p->u.var.name, s->why[0] ? ": " : "", s->why);
      return refuse(s, "%s%s", msg, "");
    }
  }
  if (!s->nlayers) return refuse(s, "no attention over a past key / value input was recognised%s%s", "", "");

  /* the serving form's parameters */
  loom_sym_ctx *cx = s->cx;
  const loom_sym_expr *t = loom_sym_var_new(cx, "t", LOOM_SYM_VAR_SHAPE), *bq = loom_sym_var_new(cx, "b", LOOM_SYM_VAR_SHAPE),
                      *mq = loom_sym_var_new(cx, "m", LOOM_SYM_VAR_SHAPE), *nq = loom_sym_var_new(cx, "n", LOOM_SYM_VAR_SHAPE),
                      *pg = loom_sym_var_new(cx, "pg", LOOM_SYM_VAR_SHAPE);
  if (!t || !bq || !mq || !nq || !pg) return LOOM_OOM();
  s->t = t;
  loom_graph_builder b;
  loom_graph_builder_begin(&b, m, "main");
  const loom_sym_expr *bm[2] = {bq, mq};
  loom_graph_expr *tokens = loom_graph_builder_param(&b, "tokens", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 1, &t, NULL));
  loom_graph_expr *positions = loom_graph_builder_param(&b, "positions", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 1, &t, NULL));
  loom_graph_expr *seq_ids = loom_graph_builder_param(&b, "seq_ids", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 1, &t, NULL));
  loom_graph_expr *ctx_lens = loom_graph_builder_param(&b, "ctx_lens", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 1, &bq, NULL));
  loom_graph_expr *bt = loom_graph_builder_param(&b, "block_tables", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 2, bm, NULL));
  loom_graph_expr *last = loom_graph_builder_param(&b, "last_index", loom_sinfo_tensor(m, LOOM_DTYPE_I64, 1, &bq, NULL));
  loom_status st = LOOM_OK;
  for (int l = 0; l < s->nlayers && !st; l++) {
    serving_layer *L = &s->layers[l];
    char kn[32], vn[32];
    snprintf(kn, sizeof kn, "k_cache%d", l);
    snprintf(vn, sizeof vn, "v_cache%d", l);
    const loom_sym_expr *kd[4] = {nq, pg, loom_sym_const(cx, L->hk), loom_sym_const(cx, L->d)};
    const loom_sym_expr *vd[4] = {nq, pg, loom_sym_const(cx, L->hk), loom_sym_const(cx, L->dv)};
    loom_dtype dt = L->past_k->sinfo->dtype;
    L->kc = loom_graph_builder_param(&b, kn, loom_sinfo_tensor(m, dt, 4, kd, NULL));
    L->vc = loom_graph_builder_param(&b, vn, loom_sinfo_tensor(m, L->past_v->sinfo->dtype, 4, vd, NULL));
    if (!L->kc || !L->vc) st = LOOM_OOM();
  }
  if (!tokens || !positions || !seq_ids || !ctx_lens || !bt || !last) st = LOOM_OOM();
  loom_graph_expr *ids2 = NULL, *pos2 = NULL;
  const loom_sym_expr *d1t[2] = {loom_sym_const(cx, 1), t};
  if (!st) st = loom_graph_builder_block(&b, true);
  if (!st) st = reshape(s, &b, tokens, 2, d1t, &ids2);
  if (!st) st = reshape(s, &b, positions, 2, d1t, &pos2);
  if (!st) st = set_repl(s, s->ids, ids2);
  if (!st) st = set_repl(s, s->pos, pos2);
  /* the results (their tuple is not copied) */
  loom_graph_expr *res1[1], *const *items = NULL;
  size_t nitems = 0;
  if (!st) st = results(s, res1, &items, &nitems);
  /* the bindings, the attentions replaced */
  loom_graph_expr *batch[4] = {bt, ctx_lens, seq_ids, positions};
  loom_graph_expr **kv = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_expr *, 2 * (size_t)s->nlayers + 1);
  if (!kv && !st) st = LOOM_OOM();
  for (size_t k = 0; k < f->body->nblocks && !st; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n && !st; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      uint64_t li;
      if (loom_map_get(&s->layer_of, bd->var->u.var.id, &li)) st = emit_attention(s, &b, &s->layers[li - 1], batch, t, &kv[1 + 2 * (li - 1)]);
      else if (!loom_map_contains(&s->skip, bd->var->u.var.id)) {
        /* a binding only the logits' projection uses is copied too; dce removes it */
        st = emit_copy(s, &b, bd);
      }
    }
  /* position table rows: take(TABLE, position_ids) */
  for (size_t k = 0; k < f->body->nblocks && !st; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      const loom_graph_expr *v = f->body->blocks[k]->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP && v->u.call.op == LOOM_GRAPH_OP_TAKE &&
          v->u.call.args[1] == s->pos && v->u.call.args[0]->kind == LOOM_GRAPH_EXPR_CONST)
        dim_const(v->u.call.args[0]->sinfo, 0, &s->pos_rows);
    }
  /* the results: logits, then each layer's new keys and values */
  loom_graph_expr *logits = NULL;
  for (size_t i = 0; i < nitems && !st; i++) {
    loom_graph_expr *it = items[i];
    bool present = false;
    for (int l = 0; l < s->nlayers; l++) present |= it == s->layers[l].present_k || it == s->layers[l].present_v;
    if (present) continue;
    if (logits || it->kind != LOOM_GRAPH_EXPR_VAR)
      st = refuse(s, "result %s ('%s') is neither the logits (the first other result) nor a present key / value", i == 0 ? "0" : "after the logits",
                  it->kind == LOOM_GRAPH_EXPR_VAR ? it->u.var.name : "?");
    else logits = it;
  }
  if (!st && !logits) st = refuse(s, "no result is the logits%s%s", "", "");
  if (!st) st = emit_logits(s, &b, logits, last, t, &kv[0]);
  loom_graph_expr *res = NULL;
  /* bound here, under a fresh name: the builder's own t<N> may be an ONNX name */
  if (!st) st = loom_graph_builder_emit(&b, loom_graph_tuple_new(m, 2 * (size_t)s->nlayers + 1, kv), fresh(s), &res);
  if (st) {
    loom_graph_builder_reset(&b);
    return st;
  }
  /* @main is replaced: the old one leaves the module first */
  LOOM_PROPAGATE(loom_graph_module_remove_func(m, f->name));
  return loom_graph_builder_end(&b, res, NULL, out_f);
}

loom_status loom_graph_serving_from_decoder(loom_graph_module *m, const char *what, loom_graph_serving_info *out) {
  memset(out, 0, sizeof *out);
  serving *s = calloc(1, sizeof *s);
  if (!s) return LOOM_OOM();
  s->m = m;
  s->cx = loom_graph_module_sym(m);
  s->what = what ? what : "model";
  s->f = loom_graph_module_find_func(m, "main");
  loom_map_init(&s->producer, NULL);
  loom_map_init(&s->skip, NULL);
  loom_map_init(&s->repl, NULL);
  loom_map_init(&s->layer_of, NULL);
  loom_status st = s->f ? LOOM_OK : refuse(s, "it has no function @main%s%s", "", "");
  loom_graph_func *nf = NULL;
  if (!st) st = rewrite(s, &nf);
  if (!st) {
    out->layers = s->nlayers;
    out->position_rows = s->pos_rows;
  }
  loom_map_destroy(&s->producer);
  loom_map_destroy(&s->skip);
  loom_map_destroy(&s->repl);
  loom_map_destroy(&s->layer_of);
  free(s);
  return st;
}

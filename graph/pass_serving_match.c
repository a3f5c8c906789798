/* pass_serving_match.c — what graph/pass_serving.c recognises in an imported ONNX decoder
 * (docs/serve.md, "ONNX"): each layer's attention over concat(past, new), the causal mask an
 * exporter builds in the graph from the shapes and attention_mask, the positions it computes
 * as arange(past, past + s).
 *
 * The attention, per layer (any of the alternatives; c1, c2, c3 one-element constants, their
 * product the scale):
 *     K = concat(past_k, k_new, axis=2)          past_k a parameter, or concat(past_k) (an alias)
 *     V = concat(past_v, v_new, axis=2)
 *     KR = K | repeat_kv(K), VR = V | repeat_kv(V)   reshape(broadcast_to(expand_dims(K, axes=[2]),
 *                                                  [1, hk, r, T, d]), [1, hk * r, T, d]) (GQA)
 *     S0 = matmul(q | mul(q, c1), KT | mul(KT, c2)) | matmul(q, KR, transpose_b=true)
 *          KT = permute_dims(KR, [0, 1, 3, 2]), or reshape(permute_dims(reshape(KR, [h, T, d]),
 *          [0, 2, 1]), [1, h, d, T]) (torch's dynamo exporter)
 *     S1 = S0 | mul(S0, c3) | mul(c3, S0) | div(S0, c3)
 *     S = S1 | add(S1, M) | add(M, S1)           M a mask input, or the causal mask (below)
 *     P = softmax(S, axis=-1), then optionally cast to its own dtype and where(isnan(P), c, P)
 *         (the NaN guard of torch's exported sdpa: a causal row always keeps its diagonal key,
 *         so no row is all -inf and P has no NaN from the mask)
 *     y = matmul(P, VR)
 *
 * The causal mask built in the graph: M = where(C, 0, m) with m <= -1e9 (or -inf), and C proven,
 * by evaluating the graph on abstract values, to be true exactly where key j <= query i + past
 * when attention_mask is all ones — the one unpadded sequence the serving form serves. The
 * abstract values: ONES (every element nonzero: attention_mask, a nonzero constant, and what
 * widening casts, reshapes, broadcasts, gathers and gather_nd's make of them), PAST (the
 * scalar p), IDX (arange(0, s) along an axis), QPOS (IDX + p: the queries' positions), KEYIDX
 * (arange(0, s + p) along an axis: the keys' positions), CAUSAL (KEYIDX <= QPOS). Anything else
 * in C is refused, naming the binding. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pass_serving_internal.h"

/* Notes why the attention rooted at `root` (its values a concat of a past) was not matched. */
static bool miss(serving *s, const loom_graph_binding *root, const char *what, const loom_graph_expr *at) {
  if (s->why[0]) return false; /* the first one */
  snprintf(s->why, sizeof s->why, "at binding '%s', %s%s%s", root->var->u.var.name, what, at && at->kind == LOOM_GRAPH_EXPR_VAR ? " " : "",
           at && at->kind == LOOM_GRAPH_EXPR_VAR ? at->u.var.name : "");
  return false;
}

loom_status sv_refuse(const serving *s, const char *fmt, const char *a, const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  return LOOM_ERROR(UNIMPLEMENTED, "'%s' cannot be served as a decoder with a paged cache: %s (docs/serve.md, \"ONNX\")", s->what, msg);
}

loom_graph_binding *sv_producer(const serving *s, const loom_graph_expr *e) {
  uint64_t v;
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR || !loom_map_get(&s->producer, e->u.var.id, &v)) return NULL;
  return (loom_graph_binding *)(uintptr_t)v;
}

/* The op call bound to `e`, when it is a call of `op`. */
const loom_graph_expr *sv_call_of(const serving *s, const loom_graph_expr *e, loom_graph_op op) {
  loom_graph_binding *b = sv_producer(s, e);
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
bool sv_dim_const(const loom_sinfo *si, int axis, int64_t *out) {
  return si && si->kind == LOOM_SINFO_TENSOR && si->dims && axis < si->ndim && loom_sym_is_const(si->dims[axis], out);
}

/* The axis attribute normalised against ndim. */
static int64_t axis_of(const loom_graph_expr *c, const char *name, int ndim) {
  int64_t a = loom_graph_call_int(c, name);
  return a < 0 ? a + ndim : a;
}

/* ---- the causal mask and the positions, on abstract values --------------------------------------- */

/* What an integer / bool tensor of the mask's computation is known to hold. */
typedef enum { AV_NONE, AV_ONES, AV_PAST, AV_IDX, AV_QPOS, AV_KEYIDX, AV_CAUSAL } av_kind;

/* An abstract value: its kind, its rank, and the axes it varies along (IDX / QPOS: qa; KEYIDX:
 * ka; CAUSAL: both), constant along every other. */
typedef struct av {
  av_kind k;
  int rank;
  int qa, ka;
} av;

/* Notes why a mask binding was not recognised (the first reason); returns false. */
static bool av_fail(serving *s, const loom_graph_expr *e, const char *what) {
  if (!s->mwhy[0])
    snprintf(s->mwhy, sizeof s->mwhy, "the mask's '%s' %s", e->kind == LOOM_GRAPH_EXPR_VAR ? e->u.var.name : "(a literal)", what);
  return false;
}

/* Is the SYMS attribute `name` of c one symbolic value equal to want? */
static bool attr_is(const loom_graph_expr *c, const char *name, const loom_sym_expr *want) {
  const loom_graph_attr *a = loom_graph_call_attr(c, name);
  return a && a->kind == LOOM_GRAPH_ATTR_SYMS && a->n == 1 && a->syms[0] == want;
}

/* v moved to an out rank `rank` by right-aligned broadcasting. */
static av av_widen(av v, int rank) {
  int sh = rank - v.rank;
  v.qa += sh, v.ka += sh, v.rank = rank;
  return v;
}

/* Does every element of constant e (integer or bool) differ from zero? */
static bool const_nonzero(const loom_graph_expr *e) {
  loom_dtype dt = e->sinfo->dtype;
  size_t w = loom_dtype_size(dt);
  if (!(dt == LOOM_DTYPE_BOOL || loom_dtype_is_int(dt)) || !w || !e->u.cnst.nbytes) return false;
  const unsigned char *p = e->u.cnst.data;
  for (size_t i = 0; i < e->u.cnst.nbytes; i += w) {
    bool nz = false;
    for (size_t k = 0; k < w; k++) nz |= p[i + k] != 0;
    if (!nz) return false;
  }
  return true;
}

/* The abstract value of e (false: not one of the forms; a reason in s->why). */
static bool absval(serving *s, const loom_graph_expr *e, av *out, int depth) {
  memset(out, 0, sizeof *out);
  const loom_sinfo *si = e->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims || depth > 64) return av_fail(s, e, "is not a tensor of known rank");
  int rank = si->ndim;
  out->rank = rank;
  if (e->kind == LOOM_GRAPH_EXPR_CONST) {
    out->k = AV_ONES;
    return const_nonzero(e) || av_fail(s, e, "is a constant with a zero element");
  }
  if (e->kind != LOOM_GRAPH_EXPR_VAR) return av_fail(s, e, "is not a var or a constant");
  if (s->amask && e == s->amask) {
    out->k = AV_ONES; /* taken as all ones: one unpadded sequence */
    return true;
  }
  loom_graph_binding *b = sv_producer(s, e);
  const loom_graph_expr *c = b && b->kind == LOOM_GRAPH_BIND_VAR ? b->value : NULL;
  if (!c || c->kind != LOOM_GRAPH_EXPR_CALL || c->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return av_fail(s, e, "is an input or not an operator call");
  loom_graph_expr *const *a = c->u.call.args;
  av x, y;
  switch (c->u.call.op) {
  case LOOM_GRAPH_OP_ARANGE: {
    if (c->u.call.nargs || !attr_is(c, "start", loom_sym_const(s->cx, 0)) || !attr_is(c, "step", loom_sym_const(s->cx, 1))) break;
    if (attr_is(c, "end", s->seq)) out->k = AV_IDX, out->qa = 0;
    else if (s->past && attr_is(c, "end", loom_sym_add(s->cx, s->seq, s->past))) out->k = AV_KEYIDX, out->ka = 0;
    else break;
    return true;
  }
  case LOOM_GRAPH_OP_SYM_TENSOR:
    if (!s->past || !attr_is(c, "values", s->past) || rank > 1) break;
    out->k = AV_PAST;
    return true;
  case LOOM_GRAPH_OP_ADD:
    if (!absval(s, a[0], &x, depth + 1) || !absval(s, a[1], &y, depth + 1)) return false;
    if (x.k == AV_PAST) { av t = x; x = y, y = t; }
    if (x.k != AV_IDX || y.k != AV_PAST) break;
    *out = av_widen(x, rank);
    out->k = AV_QPOS;
    return true;
  case LOOM_GRAPH_OP_LESS_EQUAL:
  case LOOM_GRAPH_OP_GREATER_EQUAL: {
    bool le = c->u.call.op == LOOM_GRAPH_OP_LESS_EQUAL;
    if (!absval(s, a[le ? 0 : 1], &x, depth + 1) || !absval(s, a[le ? 1 : 0], &y, depth + 1)) return false;
    if (x.k != AV_KEYIDX || y.k != AV_QPOS) break; /* keys <= queries */
    x = av_widen(x, rank), y = av_widen(y, rank);
    if (x.ka == y.qa) break;
    out->k = AV_CAUSAL, out->ka = x.ka, out->qa = y.qa;
    return true;
  }
  case LOOM_GRAPH_OP_LOGICAL_AND:
    if (!absval(s, a[0], &x, depth + 1) || !absval(s, a[1], &y, depth + 1)) return false;
    if (x.k == AV_ONES) { av t = x; x = y, y = t; }
    x = av_widen(x, rank), y = av_widen(y, rank);
    if (y.k == AV_ONES && (x.k == AV_ONES || x.k == AV_CAUSAL)) *out = x;
    else if (x.k == AV_CAUSAL && y.k == AV_CAUSAL && x.ka == y.ka && x.qa == y.qa) *out = x;
    else break;
    return true;
  case LOOM_GRAPH_OP_CAST: {
    loom_dtype from = a[0]->sinfo->dtype, to = si->dtype;
    if (!absval(s, a[0], &x, depth + 1)) return false;
    bool intish = from == LOOM_DTYPE_BOOL || loom_dtype_is_int(from);
    bool widening = to == LOOM_DTYPE_BOOL || loom_dtype_is_float(to) || loom_dtype_size(to) >= loom_dtype_size(from);
    if (x.k == AV_ONES && intish && widening) *out = x; /* a nonzero integer stays nonzero (not through a narrowing cast) */
    else if (x.k == AV_CAUSAL && (to == LOOM_DTYPE_BOOL || to == from)) *out = x;
    else if (x.k != AV_ONES && x.k != AV_CAUSAL && to == from) *out = x;
    else break;
    return true;
  }
  case LOOM_GRAPH_OP_BROADCAST_TO:
    if (!absval(s, a[0], &x, depth + 1)) return false;
    *out = av_widen(x, rank);
    return true;
  case LOOM_GRAPH_OP_EXPAND_DIMS: {
    const loom_graph_attr *ax = loom_graph_call_attr(c, "axes");
    if (!ax || ax->kind != LOOM_GRAPH_ATTR_SYMS || c->u.call.nargs != 1) return av_fail(s, e, "has no constant axes");
    if (!absval(s, a[0], &x, depth + 1)) return false;
    bool ins[16] = {0};
    int64_t v;
    for (size_t i = 0; i < ax->n; i++) {
      if (!loom_sym_is_const(ax->syms[i], &v)) return av_fail(s, e, "has a symbolic axis");
      if (v < 0) v += rank;
      if (v < 0 || v >= rank || rank > 16) return av_fail(s, e, "has an axis out of range");
      ins[v] = true;
    }
    /* old axis k lands on the k-th axis not inserted */
    int map[16], k = 0;
    for (int i = 0; i < rank; i++)
      if (!ins[i]) map[k++] = i;
    *out = x;
    out->rank = rank;
    if (x.k == AV_IDX || x.k == AV_QPOS || x.k == AV_CAUSAL) out->qa = map[x.qa];
    if (x.k == AV_KEYIDX || x.k == AV_CAUSAL) out->ka = map[x.ka];
    return true;
  }
  case LOOM_GRAPH_OP_RESHAPE:
  case LOOM_GRAPH_OP_FLATTEN:
  case LOOM_GRAPH_OP_SQUEEZE:
  case LOOM_GRAPH_OP_TAKE: /* the elements of an all-nonzero tensor, rearranged or gathered */
  case LOOM_GRAPH_OP_GATHER_ND:
    if (!absval(s, a[0], &x, depth + 1)) return false;
    if (x.k != AV_ONES) break;
    *out = x;
    out->rank = rank;
    return true;
  default: break;
  }
  char what[96];
  snprintf(what, sizeof what, "(%s) is not recognised as part of the causal mask", loom_graph_op_name(c->u.call.op));
  return av_fail(s, e, what);
}

bool sv_is_positions(serving *s, const loom_graph_expr *e) {
  av v;
  s->mwhy[0] = 0;
  return e->kind == LOOM_GRAPH_EXPR_VAR && e->sinfo->kind == LOOM_SINFO_TENSOR && e->sinfo->dtype == LOOM_DTYPE_I64 &&
         sv_call_of(s, e, LOOM_GRAPH_OP_ADD) && absval(s, e, &v, 0) && v.k == AV_QPOS && v.rank == 1;
}

/* Is M (added to the scores (1, h, s, p + s)) the causal mask over past + new keys, under an
 * all-ones attention_mask: where(C, 0, m), m <= -1e9, C CAUSAL on M's last two axes? */
static bool causal_mask(serving *s, const loom_graph_binding *root, const loom_graph_expr *M) {
  const loom_graph_expr *w = sv_call_of(s, M, LOOM_GRAPH_OP_WHERE);
  double zero, neg;
  if (!w || !const_scalar(w->u.call.args[1], &zero) || zero != 0 || !const_scalar(w->u.call.args[2], &neg) || !(neg <= -1e9))
    return miss(s, root, "the scores are masked by a value computed in the graph that is not where(mask, 0, -inf or a value <= -1e9) (only a mask input or the causal mask is recognised):", M);
  av v;
  int r = M->sinfo->kind == LOOM_SINFO_TENSOR ? M->sinfo->ndim : 0;
  s->mwhy[0] = 0;
  if (!absval(s, w->u.call.args[0], &v, 0)) {
    char msg[224];
    snprintf(msg, sizeof msg, "the scores' mask is not proven causal: %s", s->mwhy);
    return miss(s, root, msg, NULL);
  }
  v = av_widen(v, r);
  if (v.k != AV_CAUSAL || v.ka != r - 1 || v.qa != r - 2 || r > 4)
    return miss(s, root, "the scores' mask is not the causal mask (keys on the last axis, queries on the one before) of one unpadded sequence:", M);
  return true;
}

/* ---- the attention ----------------------------------------------------------------------------- */

/* Marks var e an intermediate of an attention (not copied). */
static bool skip(serving *s, const loom_graph_expr *e) {
  return e->kind != LOOM_GRAPH_EXPR_VAR || loom_map_put(&s->skip, e->u.var.id, 1);
}

/* K = concat(past, new, axis=2) with past a (1, hk, p, d) parameter, or concat(past) of one
 * (an alias torch's exporter writes): the past and the new part. Every past shares one p. */
static bool concat_past(serving *s, const loom_graph_expr *K, loom_graph_expr **past, loom_graph_expr **knew) {
  const loom_graph_expr *c = sv_call_of(s, K, LOOM_GRAPH_OP_CONCAT);
  if (!c || c->u.call.nargs != 2 || K->sinfo->ndim != 4 || axis_of(c, "axis", 4) != 2) return false;
  loom_graph_expr *p = c->u.call.args[0];
  const loom_graph_expr *alias = sv_call_of(s, p, LOOM_GRAPH_OP_CONCAT);
  if (alias && alias->u.call.nargs == 1 && is_param(s, alias->u.call.args[0])) {
    if (!skip(s, p)) return false;
    p = alias->u.call.args[0];
  }
  if (!is_param(s, p) || p->sinfo->kind != LOOM_SINFO_TENSOR || p->sinfo->ndim != 4 || !p->sinfo->dims) return false;
  if (!s->past) s->past = p->sinfo->dims[2];
  if (p->sinfo->dims[2] != s->past) return false;
  *past = p;
  *knew = c->u.call.args[1];
  return true;
}

/* KR = reshape(broadcast_to(expand_dims(K, axes=[2]), [1, hk, r, T, d]), [1, hk * r, T, d]) —
 * transformers' repeat_kv: query head i reads key head i / r, as paged_attention's grouped
 * heads do. K (the present) in *K, r in *rep, its three intermediates in chain. false: not one. */
static bool unrepeat(serving *s, loom_graph_expr *KR, loom_graph_expr **K, int64_t *rep, loom_graph_expr **chain) {
  const loom_graph_expr *rs = sv_call_of(s, KR, LOOM_GRAPH_OP_RESHAPE), *bc, *ed;
  if (!rs || rs->u.call.nargs != 1 || !(bc = sv_call_of(s, rs->u.call.args[0], LOOM_GRAPH_OP_BROADCAST_TO)) ||
      !(ed = sv_call_of(s, bc->u.call.args[0], LOOM_GRAPH_OP_EXPAND_DIMS)) || ed->u.call.nargs != 1)
    return false;
  const loom_graph_attr *ax = loom_graph_call_attr(ed, "axes");
  int64_t v, hk, r, h;
  if (!ax || ax->kind != LOOM_GRAPH_ATTR_SYMS || ax->n != 1 || !loom_sym_is_const(ax->syms[0], &v) || v != 2) return false;
  loom_graph_expr *k = ed->u.call.args[0];
  const loom_sinfo *ks = k->sinfo, *bs = rs->u.call.args[0]->sinfo, *os = KR->sinfo;
  if (ks->kind != LOOM_SINFO_TENSOR || ks->ndim != 4 || !ks->dims || bs->ndim != 5 || !bs->dims || os->ndim != 4 || !os->dims)
    return false;
  if (!sv_dim_const(ks, 1, &hk) || !sv_dim_const(bs, 1, &v) || v != hk || !sv_dim_const(bs, 2, &r) || !sv_dim_const(os, 1, &h) ||
      h != hk * r || !sv_dim_const(bs, 0, &v) || v != 1 || !sv_dim_const(os, 0, &v) || v != 1)
    return false;
  if (bs->dims[3] != ks->dims[2] || bs->dims[4] != ks->dims[3] || os->dims[2] != ks->dims[2] || os->dims[3] != ks->dims[3]) return false;
  chain[0] = KR, chain[1] = rs->u.call.args[0], chain[2] = bc->u.call.args[0];
  *K = k;
  *rep = r;
  return true;
}

/* x = mul(y, c) | mul(c, y) with c a one-element constant: y, *scale multiplied by c. */
static loom_graph_expr *unscale(serving *s, loom_graph_expr *x, double *scale) {
  const loom_graph_expr *m = sv_call_of(s, x, LOOM_GRAPH_OP_MUL);
  double c;
  if (!m) return x;
  if (const_scalar(m->u.call.args[1], &c)) {
    *scale *= c;
    return m->u.call.args[0];
  }
  if (const_scalar(m->u.call.args[0], &c)) {
    *scale *= c;
    return m->u.call.args[1];
  }
  return x;
}

/* P after softmax: through cast(P) to its own dtype and where(isnan(P) | not_equal(P, P), c, P),
 * c a one-element constant. The ones passed are skipped. */
static loom_graph_expr *through_guards(serving *s, loom_graph_expr *P) {
  for (int i = 0; i < 4; i++) {
    const loom_graph_expr *c = sv_call_of(s, P, LOOM_GRAPH_OP_CAST), *w, *ne;
    double v;
    if (c && c->u.call.args[0]->sinfo->dtype == P->sinfo->dtype) {
      skip(s, P);
      P = c->u.call.args[0];
      continue;
    }
    w = sv_call_of(s, P, LOOM_GRAPH_OP_WHERE);
    if (!w || !const_scalar(w->u.call.args[1], &v)) break;
    loom_graph_expr *x = w->u.call.args[2];
    ne = sv_call_of(s, w->u.call.args[0], LOOM_GRAPH_OP_NOT_EQUAL);
    if (!ne || ne->u.call.args[0] != x || ne->u.call.args[1] != x) break;
    skip(s, P);
    skip(s, w->u.call.args[0]);
    P = x;
  }
  return P;
}

/* KT = reshape(permute_dims(reshape(KR, [h, T, d]), [0, 2, 1]), [1, h, d, T]) — the keys
 * transposed through rank 3, as torch's dynamo exporter writes it: the permute_dims var (KT3),
 * or NULL. */
static loom_graph_expr *keys_t3(serving *s, loom_graph_expr *KT) {
  const loom_graph_expr *r2 = sv_call_of(s, KT, LOOM_GRAPH_OP_RESHAPE), *pd, *r1;
  if (!r2 || r2->u.call.nargs != 1 || !(pd = sv_call_of(s, r2->u.call.args[0], LOOM_GRAPH_OP_PERMUTE_DIMS)) ||
      !(r1 = sv_call_of(s, pd->u.call.args[0], LOOM_GRAPH_OP_RESHAPE)) || r1->u.call.nargs != 1)
    return NULL;
  const loom_graph_attr *ax = loom_graph_call_attr(pd, "axes");
  int64_t want[3] = {0, 2, 1}, v, one;
  if (!ax || ax->kind != LOOM_GRAPH_ATTR_SYMS || ax->n != 3) return NULL;
  for (int i = 0; i < 3; i++)
    if (!loom_sym_is_const(ax->syms[i], &v) || v != want[i]) return NULL;
  const loom_sinfo *k = r1->u.call.args[0]->sinfo, *k3 = pd->u.call.args[0]->sinfo, *o = KT->sinfo;
  if (k->kind != LOOM_SINFO_TENSOR || !k->dims || k->ndim != 4 || !k3->dims || k3->ndim != 3 || !o->dims || o->ndim != 4) return NULL;
  /* (1, h, T, d) -> (h, T, d) -> (h, d, T) -> (1, h, d, T) */
  if (!sv_dim_const(k, 0, &one) || one != 1 || !sv_dim_const(o, 0, &one) || one != 1 || k3->dims[0] != k->dims[1] || k3->dims[1] != k->dims[2] ||
      k3->dims[2] != k->dims[3] || o->dims[1] != k->dims[1] || o->dims[2] != k->dims[3] || o->dims[3] != k->dims[2])
    return NULL;
  return r2->u.call.args[0];
}

bool sv_match_attention(serving *s, loom_graph_binding *b, serving_layer *L) {
  const loom_graph_expr *y = b->value;
  if (y->kind != LOOM_GRAPH_EXPR_CALL || y->u.call.callee != LOOM_GRAPH_CALLEE_OP || y->u.call.op != LOOM_GRAPH_OP_MATMUL ||
      y->u.call.nattrs)
    return false;
  memset(L, 0, sizeof *L);
  L->root = b;
  loom_graph_expr *P0 = y->u.call.args[0], *VR = y->u.call.args[1], *V = VR, *chain[6];
  for (int i = 0; i < 6; i++) chain[i] = VR; /* (no repeat_kv: V itself, skipped below anyway) */
  if (!concat_past(s, V, &L->past_v, &L->v_new) &&
      !(unrepeat(s, VR, &V, &L->rep_v, chain + 3) && concat_past(s, V, &L->past_v, &L->v_new)))
    return false;
  loom_graph_expr *P = through_guards(s, P0);
  const loom_graph_expr *sm = sv_call_of(s, P, LOOM_GRAPH_OP_SOFTMAX);
  if (!sm || axis_of(sm, "axis", 4) != 3) return miss(s, b, "the weights are not a softmax over the keys (last axis):", P);
  loom_graph_expr *S = sm->u.call.args[0], *S1 = S;
  const loom_graph_expr *add = sv_call_of(s, S, LOOM_GRAPH_OP_ADD);
  if (add) {
    loom_graph_expr *a0 = add->u.call.args[0], *a1 = add->u.call.args[1];
    if (is_param(s, a1)) S1 = a0;
    else if (is_param(s, a0)) S1 = a1;
    else if (a1->kind == LOOM_GRAPH_EXPR_VAR && sv_call_of(s, a1, LOOM_GRAPH_OP_WHERE) && causal_mask(s, b, a1) && skip(s, a1)) S1 = a0;
    else if (a0->kind == LOOM_GRAPH_EXPR_VAR && sv_call_of(s, a0, LOOM_GRAPH_OP_WHERE) && causal_mask(s, b, a0) && skip(s, a0)) S1 = a1;
    else return miss(s, b, "the scores are masked by a value computed in the graph that is not recognised (a mask input or the causal mask where(C, 0, -inf) are):", S);
  }
  loom_graph_expr *S0 = S1;
  L->scale = 1.0;
  const loom_graph_expr *sc;
  double c;
  if ((sc = sv_call_of(s, S1, LOOM_GRAPH_OP_MUL))) {
    if (const_scalar(sc->u.call.args[1], &c)) S0 = sc->u.call.args[0];
    else if (const_scalar(sc->u.call.args[0], &c)) S0 = sc->u.call.args[1];
    else return miss(s, b, "the scores are scaled by a value that is not a one-element constant:", S1);
    L->scale = c;
  } else if ((sc = sv_call_of(s, S1, LOOM_GRAPH_OP_DIV))) {
    if (!const_scalar(sc->u.call.args[1], &c) || c == 0) return miss(s, b, "the scores are divided by a value that is not a nonzero one-element constant:", S1);
    S0 = sc->u.call.args[0];
    L->scale = 1.0 / c;
  }
  const loom_graph_expr *mm = sv_call_of(s, S0, LOOM_GRAPH_OP_MATMUL);
  if (!mm) return miss(s, b, "the scores are not matmul(q, keys^T):", S0);
  loom_graph_expr *QS = mm->u.call.args[0], *KS = mm->u.call.args[1];
  L->q = unscale(s, QS, &L->scale);
  loom_graph_expr *KT = unscale(s, KS, &L->scale), *KR, *K;
  const loom_graph_attr *tb = loom_graph_call_attr(mm, "transpose_b");
  if (tb && tb->i && mm->u.call.nattrs == 1) {
    KR = KT;
  } else {
    if (mm->u.call.nattrs) return miss(s, b, "the scores' matmul has attributes:", S0);
    const loom_graph_expr *pd = sv_call_of(s, KT, LOOM_GRAPH_OP_PERMUTE_DIMS);
    loom_graph_expr *KT3 = NULL;
    if (!pd && (KT3 = keys_t3(s, KT))) {
      skip(s, KT);
      skip(s, KT3);
      KR = sv_call_of(s, KT3, LOOM_GRAPH_OP_PERMUTE_DIMS)->u.call.args[0];
      KR = sv_call_of(s, KR, LOOM_GRAPH_OP_RESHAPE)->u.call.args[0];
      skip(s, sv_call_of(s, KT3, LOOM_GRAPH_OP_PERMUTE_DIMS)->u.call.args[0]);
      goto keys_found;
    }
    const loom_graph_attr *ax = pd ? loom_graph_call_attr(pd, "axes") : NULL;
    int64_t want[4] = {0, 1, 3, 2}, v;
    if (!ax || ax->kind != LOOM_GRAPH_ATTR_SYMS || ax->n != 4) return miss(s, b, "the keys are not permute_dims(present key, [0, 1, 3, 2]):", KT);
    for (int i = 0; i < 4; i++)
      if (!loom_sym_is_const(ax->syms[i], &v) || v != want[i]) return miss(s, b, "the keys are not permute_dims(present key, [0, 1, 3, 2]):", KT);
    KR = pd->u.call.args[0];
    skip(s, KT);
  }
keys_found:
  K = KR;
  chain[0] = chain[1] = chain[2] = KR;
  if (!concat_past(s, K, &L->past_k, &L->k_new) && !(unrepeat(s, KR, &K, &L->rep_k, chain) && concat_past(s, K, &L->past_k, &L->k_new)))
    return miss(s, b, "the keys are not concat(past key input, new keys, axis=2) (or its repeat_kv):", K);
  if (L->rep_k != L->rep_v) return miss(s, b, "the keys and the values are repeated differently:", K);
  L->present_k = K, L->present_v = V;
  /* the scores, their scaling, masking and softmax are this attention's own */
  const loom_graph_expr *inner[] = {P0, P, S, S1, S0, QS != L->q ? QS : P, KS, K, V, chain[0], chain[1], chain[2], chain[3], chain[4], chain[5]};
  for (size_t i = 0; i < sizeof inner / sizeof *inner; i++)
    if (!skip(s, inner[i])) return false;
  return true;
}

/* Checks the layer's tensors: q (1, h, s, d), the new and past keys and values (1, hk, ., d). */
loom_status sv_check_layer(serving *s, serving_layer *L) {
  int64_t one, h, d2, hv, dv;
  const loom_sinfo *pk = L->past_k->sinfo, *pv = L->past_v->sinfo, *q = L->q->sinfo;
  const char *pkn = L->past_k->u.var.name;
  if (pk->ndim != 4 || !sv_dim_const(pk, 0, &one) || one != 1 || !sv_dim_const(pk, 1, &L->hk) || !sv_dim_const(pk, 3, &L->d))
    return sv_refuse(s, "past input '%s' is not (1, heads, past, dim) with constant heads and dim%s", pkn, "");
  if (pv->ndim != 4 || !sv_dim_const(pv, 1, &hv) || hv != L->hk || !sv_dim_const(pv, 3, &dv))
    return sv_refuse(s, "past input '%s' is not (1, heads, past, dim) with the heads of '%s'", L->past_v->u.var.name, pkn);
  L->dv = dv;
  if (q->kind != LOOM_SINFO_TENSOR || q->ndim != 4 || !sv_dim_const(q, 0, &one) || one != 1 || !sv_dim_const(q, 1, &h) ||
      !sv_dim_const(q, 3, &d2) || d2 != L->d || h % L->hk || (L->rep_k && h != L->hk * L->rep_k))
    return sv_refuse(s, "the query of the attention over '%s' is not (1, heads, s, dim) with a multiple of its heads%s", pkn, "");
  return LOOM_OK;
}

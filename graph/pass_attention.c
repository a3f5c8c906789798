/* pass_attention.c — scaled dot-product attention written out as operators, the way models
 * exported from PyTorch carry it, recognised as the `attention` op (loom_graph_attention), so
 * that the fused kernel (tensorprog/gen_attn.c) runs instead of a matmul, a score matrix of
 * s x t per head, a softmax and a second matmul.
 *
 *     y = matmul(softmax(X, axis=-1), v)                         the root (or a reshape of it)
 *     X = S' | add(S', M) | add(M, S') | where(C, S', F)         mask
 *     S' = S0 | mul(S0, c) | mul(c, S0) | div(S0, c) (nested)    scale placement
 *     S0 = matmul(q', k', transpose_b=true)                       q' = q | mul(q, c) | div(q, c), k' too
 *  -> y = attention(q, k, v[, mask], scale=c.., causal=.., empty_nan=true)
 *     y = matmul(where(P != P, 0, P), v), P = softmax(X, axis=-1)  (torch's scaled_dot_product_attention)
 *  -> y = attention(.., empty_nan=false)
 *
 * Exact where it fires: the op computes softmax(q k^T * scale + mask) v with the same dtypes
 * (the scale of q, k and the scores folded into one factor: equal up to float rounding), and
 * `empty_nan` keeps what softmax then matmul give for a row whose every score is -inf (NaN;
 * the op's default is 0); where(P != P, 0, P) after the softmax (torch's export) is empty_nan=false:
 * an empty row gives 0 in both, while a NaN or +inf score (a NaN in q, k or the mask) gives a
 * NaN row in the op where the composed form gives 0. The mask:
 *   - M a float tensor of the scores' dtype: the op's additive mask, as it is;
 *   - where(C, S', -inf), C bool: the op's bool mask C (keep where true);
 *   - M = (tril(ones(s, t), k) - 1) * c with c >= LOOM_ATTN_CAUSAL_FILL (or (1 - tril) * -c),
 *     or where(tril(..) != 0, S', F) with F <= -LOOM_ATTN_CAUSAL_FILL: `causal=true` when
 *     k = t - s and t >= s are proven (row i keeps keys j <= i + t - s, and every row keeps key
 *     0, so no row is empty). The masked keys then weigh exp(score - max - c) in the composed
 *     form, 0 in the op: below 1e-4000 of the row's sum for any |score| below c / 2;
 *   - anything else (a finite fill of a data mask: uniform weights for a row it masks
 *     completely) is left alone.
 * Layouts: rank 4, q (b, h, s, d), k (b, hk, t, d) with hk = h or 1, or k = reshape(
 * broadcast_to(expand_dims(k0, 2))) (Hugging Face's repeat_kv: k0's hk heads, no copy);
 * rank 5 grouped-query, q' = reshape(q4 (b, hk*g, s, d)) as (b, hk, g, s, d) and k' =
 * expand_dims(k4, 2) as (b, hk, 1, t, d), y reshaped back to (b, hk*g, s, dv) (the root is
 * that reshape); rank 3, (b*h, s, d) views of (b, h, s, d) tensors, y reshaped back. Masks of
 * rank <= 2 in the last two. Every intermediate (scores, scaled, masked, softmax) must have
 * no other use; dce removes them afterwards. */
#include <math.h>
#include <string.h>

#include "graph/pass_internal.h"

/* The smallest fill magnitude read as "masked" when an additive or `where` mask is turned into
 * `causal=true` (exporters write 1e4, 1e9, the dtype's lowest value or -inf). */
#define LOOM_ATTN_CAUSAL_FILL 1e4

typedef struct attn_state {
  loom_map uses;     /* var id -> number of uses in the function (its values and result) */
  loom_map consumer; /* var id -> the binding that uses it last (the only one when used once) */
  bool oom;
} attn_state;

/* ---- uses ------------------------------------------------------------------------------- */

static void count_seq(attn_state *st, const loom_graph_seq *s);

static void count_leaf(attn_state *st, const loom_graph_expr *e, const loom_graph_binding *by) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR) return;
  uint64_t n = 0;
  loom_map_get(&st->uses, e->u.var.id, &n);
  if (!loom_map_put(&st->uses, e->u.var.id, n + 1) ||
      !loom_map_put(&st->consumer, e->u.var.id, (uint64_t)(uintptr_t)by))
    st->oom = true;
}

static void count_expr(attn_state *st, const loom_graph_expr *e, const loom_graph_binding *by) {
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR: count_leaf(st, e, by); break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < e->u.tuple.n; i++) count_leaf(st, e->u.tuple.items[i], by);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: count_leaf(st, e->u.get.tuple, by); break;
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < e->u.call.nargs; i++) count_leaf(st, e->u.call.args[i], by);
    break;
  case LOOM_GRAPH_EXPR_IF:
    count_leaf(st, e->u.if_.cond, by);
    count_seq(st, e->u.if_.then_seq);
    count_seq(st, e->u.if_.else_seq);
    break;
  default: break;
  }
}

static void count_seq(attn_state *st, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) count_expr(st, s->blocks[i]->bindings[j]->value, s->blocks[i]->bindings[j]);
  if (s->result) count_expr(st, s->result, NULL);
}

static void begin(loom_pass *p) {
  attn_state *st = p->ud;
  loom_map_clear(&st->uses);
  loom_map_clear(&st->consumer);
  count_seq(st, p->f->body);
}

/* Whether var e is used exactly `times` times in the function. */
static bool used_n(loom_pass *p, const loom_graph_expr *e, uint64_t times) {
  attn_state *st = p->ud;
  uint64_t n = 0;
  return e->kind == LOOM_GRAPH_EXPR_VAR && loom_map_get(&st->uses, e->u.var.id, &n) && n == times;
}

static bool used_once(loom_pass *p, const loom_graph_expr *e) { return used_n(p, e, 1); }

/* ---- matching helpers ---------------------------------------------------------------------- */

/* The operator call `op` that defines var e, or NULL. A guarded call (a relation the prover
 * could not decide, checked at run time) is not looked through: the check must stay. */
static const loom_graph_expr *call_of(loom_pass *p, const loom_graph_expr *e, loom_graph_op op) {
  loom_graph_binding *b = loom_pass_producer(p, e);
  if (!b || b->kind != LOOM_GRAPH_BIND_VAR || b->nguards || b->value->kind != LOOM_GRAPH_EXPR_CALL ||
      b->value->u.call.callee != LOOM_GRAPH_CALLEE_OP || b->value->u.call.op != op)
    return NULL;
  return b->value;
}

/* The value of a one-element float constant. */
static bool scalar_f(const loom_graph_expr *e, double *out) {
  if (e->kind != LOOM_GRAPH_EXPR_CONST || e->sinfo->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_float(e->sinfo->dtype))
    return false;
  size_t es = loom_dtype_size(e->sinfo->dtype);
  if (!es || e->u.cnst.nbytes != es) return false;
  loom_graph_tensor t = {.dtype = e->sinfo->dtype, .data = e->u.cnst.data};
  *out = loom_graph_tensor_get_f64(&t, 0);
  return true;
}

static bool eq(loom_pass *p, const loom_sym_expr *a, const loom_sym_expr *b) {
  return a == b || loom_sym_prove_eq(p->cx, a, b) == LOOM_SYM_TRUE;
}

static bool is_const(const loom_sym_expr *a, int64_t v) {
  int64_t c;
  return loom_sym_is_const(a, &c) && c == v;
}

/* A float tensor of rank n with known dims. */
static bool tensor_of(const loom_graph_expr *e, int n) {
  const loom_sinfo *s = e->sinfo;
  return s->kind == LOOM_SINFO_TENSOR && s->ndim == n && (n == 0 || s->dims);
}

/* A matmul call with transpose_b as given and no other attribute set (no packed B). */
static bool plain_matmul(const loom_graph_expr *c, bool transpose_b) {
  for (size_t i = 0; i < c->u.call.nattrs; i++) {
    const loom_graph_attr *a = &c->u.call.attrs[i];
    if (strcmp(a->name, "transpose_b") == 0) {
      if ((a->i != 0) != transpose_b) return false;
    } else if (strcmp(a->name, "transpose_a") == 0 || strcmp(a->name, "packed_b") == 0 || strcmp(a->name, "quads") == 0) {
      if (a->i != 0) return false;
    } else {
      return false;
    }
  }
  return transpose_b ? loom_graph_call_attr(c, "transpose_b") != NULL : true;
}

/* x = mul(y, c) | mul(c, y) | div(y, c), c a one-element float constant, repeatedly (at most
 * four): y, with *k multiplied by c (divided). `once`: every peeled var must have one use. */
static const loom_graph_expr *peel_scale(loom_pass *p, const loom_graph_expr *x, double *k, bool once) {
  for (int depth = 0; depth < 4; depth++) {
    if (once && x->kind == LOOM_GRAPH_EXPR_VAR && !used_once(p, x)) return x;
    const loom_graph_expr *m = call_of(p, x, LOOM_GRAPH_OP_MUL), *d = m ? NULL : call_of(p, x, LOOM_GRAPH_OP_DIV);
    double c;
    if (m && m->u.call.nargs == 2 && scalar_f(m->u.call.args[1], &c) && isfinite(c)) {
      *k *= c;
      x = m->u.call.args[0];
    } else if (m && m->u.call.nargs == 2 && scalar_f(m->u.call.args[0], &c) && isfinite(c)) {
      *k *= c;
      x = m->u.call.args[1];
    } else if (d && d->u.call.nargs == 2 && scalar_f(d->u.call.args[1], &c) && isfinite(c) && c != 0) {
      *k /= c;
      x = d->u.call.args[0];
    } else {
      return x;
    }
  }
  return x;
}

/* ---- the causal triangle ------------------------------------------------------------------ */

/* tri = tril(ones (s, t), k) of any dtype (ones, full(1) or a constant 1 broadcast), with
 * k = t - s and t >= s proven (a row keeps keys j <= i + t - s, as the op's causal rule; no row
 * empty). */
static bool causal_tril(loom_pass *p, const loom_graph_expr *tri, const loom_sym_expr *s, const loom_sym_expr *t) {
  const loom_graph_expr *tr = call_of(p, tri, LOOM_GRAPH_OP_TRIL);
  if (!tr || tr->u.call.nargs != 1 || !tensor_of(tri, 2)) return false;
  if (!eq(p, tri->sinfo->dims[0], s) || !eq(p, tri->sinfo->dims[1], t)) return false;
  const loom_graph_attr *ka = loom_graph_call_attr(tr, "k");
  const loom_sym_expr *k = loom_sym_const(p->cx, 0);
  if (ka) {
    if (ka->kind != LOOM_GRAPH_ATTR_SYMS || ka->n != 1) return false;
    k = ka->syms[0];
  }
  const loom_sym_expr *off = loom_sym_sub(p->cx, t, s);
  if (!off || !eq(p, k, off) || loom_sym_prove_le(p->cx, loom_sym_const(p->cx, 0), off) != LOOM_SYM_TRUE) return false;
  const loom_graph_expr *src = tr->u.call.args[0], *f;
  if ((f = call_of(p, src, LOOM_GRAPH_OP_FULL)) && !f->u.call.nargs) return loom_graph_call_float(f, "value") == 1.0;
  if ((f = call_of(p, src, LOOM_GRAPH_OP_ONES)) && !f->u.call.nargs) return true;
  /* a constant 1 broadcast (torch.onnx's Expand of a Constant: scaled_dot_product_attention with
   * is_causal, exported without the dynamo exporter) */
  if ((f = call_of(p, src, LOOM_GRAPH_OP_BROADCAST_TO)) && f->u.call.nargs == 1 &&
      f->u.call.args[0]->kind == LOOM_GRAPH_EXPR_CONST)
    return loom_pass_const_all(f->u.call.args[0], 1.0);
  return false;
}

/* m = (tri - 1) * c | c * (tri - 1) with c >= FILL, or (1 - tri) * c with c <= -FILL: 0 on
 * and below the diagonal, <= -FILL above it. */
static bool causal_bias(loom_pass *p, const loom_graph_expr *m, const loom_sym_expr *s, const loom_sym_expr *t) {
  const loom_graph_expr *mul = call_of(p, m, LOOM_GRAPH_OP_MUL);
  if (!mul || mul->u.call.nargs != 2) return false;
  for (int i = 0; i < 2; i++) {
    double c, one;
    const loom_graph_expr *sub = call_of(p, mul->u.call.args[i], LOOM_GRAPH_OP_SUB);
    if (!scalar_f(mul->u.call.args[1 - i], &c) || !sub || sub->u.call.nargs != 2) continue;
    if (c >= LOOM_ATTN_CAUSAL_FILL && scalar_f(sub->u.call.args[1], &one) && one == 1.0 &&
        causal_tril(p, sub->u.call.args[0], s, t))
      return true;
    if (c <= -LOOM_ATTN_CAUSAL_FILL && scalar_f(sub->u.call.args[0], &one) && one == 1.0 &&
        causal_tril(p, sub->u.call.args[1], s, t))
      return true;
  }
  return false;
}

/* The one-element constant of where's operand, or false. */
static bool where_const(const loom_graph_expr *w, size_t i, double *v) { return scalar_f(w->u.call.args[i], v); }

/* m = where(cond, 0, F) with cond true on and below the diagonal, or where(ncond, F, 0) with ncond
 * true above it ((tri == 0), not(tri)), F <= -FILL: PyTorch's scaled_dot_product_attention with
 * is_causal exports its mask so. */
static bool causal_cond(loom_pass *p, const loom_graph_expr *cond, const loom_sym_expr *s, const loom_sym_expr *t);
static bool causal_where(loom_pass *p, const loom_graph_expr *m, const loom_sym_expr *s, const loom_sym_expr *t) {
  const loom_graph_expr *w = call_of(p, m, LOOM_GRAPH_OP_WHERE);
  double a, b;
  if (!w || !where_const(w, 1, &a) || !where_const(w, 2, &b)) return false;
  if (a == 0 && b <= -LOOM_ATTN_CAUSAL_FILL) return causal_cond(p, w->u.call.args[0], s, t);
  if (b != 0 || a > -LOOM_ATTN_CAUSAL_FILL) return false;
  const loom_graph_expr *c = w->u.call.args[0], *eq = call_of(p, c, LOOM_GRAPH_OP_EQUAL), *nt = call_of(p, c, LOOM_GRAPH_OP_NOT);
  if (eq && eq->u.call.nargs == 2 && loom_pass_const_all(eq->u.call.args[1], 0)) return causal_tril(p, eq->u.call.args[0], s, t);
  if (nt) return causal_cond(p, nt->u.call.args[0], s, t);
  return false;
}

/* cond = tril(..) (bool) or tril(..) != 0 / cast(tril(..), bool): true on and below the diagonal. */
static bool causal_cond(loom_pass *p, const loom_graph_expr *cond, const loom_sym_expr *s, const loom_sym_expr *t) {
  if (!tensor_of(cond, 2) || cond->sinfo->dtype != LOOM_DTYPE_BOOL) return false;
  if (causal_tril(p, cond, s, t)) return true;
  const loom_graph_expr *c = call_of(p, cond, LOOM_GRAPH_OP_CAST), *ne = c ? NULL : call_of(p, cond, LOOM_GRAPH_OP_NOT_EQUAL);
  if (c) return causal_tril(p, c->u.call.args[0], s, t);
  if (ne && ne->u.call.nargs == 2 && loom_pass_const_all(ne->u.call.args[1], 0)) return causal_tril(p, ne->u.call.args[0], s, t);
  return false;
}

/* ---- operand layouts ---------------------------------------------------------------------- */

/* x = reshape / expand_dims / squeeze / flatten of a var: that var, else NULL. */
static const loom_graph_expr *view_source(loom_pass *p, const loom_graph_expr *x) {
  static const loom_graph_op views[] = {LOOM_GRAPH_OP_RESHAPE, LOOM_GRAPH_OP_EXPAND_DIMS, LOOM_GRAPH_OP_SQUEEZE,
                                        LOOM_GRAPH_OP_FLATTEN};
  for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
    const loom_graph_expr *c = call_of(p, x, views[i]);
    if (c && c->u.call.nargs == 1) return c->u.call.args[0];
  }
  return NULL;
}

/* x (rank 4, (b, h, t, d)) = reshape(broadcast_to(y (b, hk, 1, t, d)) as (b, hk, g, t, d)) with
 * y a view of k0 (b, hk, t, d) and h = hk * g: k0 (Hugging Face's repeat_kv), else NULL. */
static const loom_graph_expr *repeated_kv(loom_pass *p, const loom_graph_expr *x) {
  const loom_graph_expr *bc = view_source(p, x), *y, *k0;
  const loom_graph_expr *bt = bc ? call_of(p, bc, LOOM_GRAPH_OP_BROADCAST_TO) : NULL;
  if (!bt || !tensor_of(x, 4) || !tensor_of(bc, 5) || !tensor_of(y = bt->u.call.args[0], 5)) return NULL;
  if (!(k0 = view_source(p, y)) || !tensor_of(k0, 4)) return NULL;
  const loom_sym_expr *const *xd = x->sinfo->dims, *const *bd = bc->sinfo->dims, *const *yd = y->sinfo->dims,
                             *const *kd = k0->sinfo->dims;
  if (!is_const(yd[2], 1) || !eq(p, yd[0], kd[0]) || !eq(p, yd[1], kd[1]) || !eq(p, yd[3], kd[2]) || !eq(p, yd[4], kd[3]))
    return NULL;
  if (!eq(p, bd[0], kd[0]) || !eq(p, bd[1], kd[1]) || !eq(p, bd[3], kd[2]) || !eq(p, bd[4], kd[3])) return NULL;
  const loom_sym_expr *h = loom_sym_mul(p->cx, bd[1], bd[2]);
  if (!h || !eq(p, xd[0], kd[0]) || !eq(p, xd[1], h) || !eq(p, xd[2], kd[2]) || !eq(p, xd[3], kd[3])) return NULL;
  return k0;
}

/* x a view of a rank-4 var whose dims are `want` (NULL entries: anything): that var. */
static const loom_graph_expr *view_of4(loom_pass *p, const loom_graph_expr *x, const loom_sym_expr *const *want) {
  const loom_graph_expr *y = view_source(p, x);
  if (!y || !tensor_of(y, 4) || y->sinfo->dtype != x->sinfo->dtype) return NULL;
  for (int i = 0; i < 4; i++)
    if (want[i] && !eq(p, y->sinfo->dims[i], want[i])) return NULL;
  return y;
}

/* What a match found: the op's operands and attributes. */
typedef struct attn_form {
  const loom_graph_expr *q, *k, *v; /* (b, h, s, d), (b, hk, t, d), (b, hk, t, dv); bshd: (b, s, h, d) .. */
  const loom_graph_expr *mask;      /* NULL, or the op's mask operand */
  double scale;
  bool causal;
  bool bshd;                        /* q, k, v (and the result) in (batch, seq, heads, dim) */
  bool zero_nan;                    /* the probabilities' NaN made 0 (empty_nan=false) */
} attn_form;

/* Whether call c is permute_dims with constant axes `want` (n of them). */
static bool permute_is(const loom_graph_expr *c, const int64_t *want, int n) {
  const loom_graph_attr *a = loom_graph_call_attr(c, "axes");
  if (!a || a->kind != LOOM_GRAPH_ATTR_SYMS || (int)a->n != n || c->u.call.nargs != 1) return false;
  for (int i = 0; i < n; i++) {
    int64_t ax;
    if (!loom_sym_is_const(a->syms[i], &ax)) return false;
    if (ax < 0) ax += n;
    if (ax != want[i]) return false;
  }
  return true;
}

static const int64_t swap_heads[4] = {0, 2, 1, 3}; /* (b, s, h, d) <-> (b, h, s, d) */

/* x = permute_dims(y, [0, 2, 1, 3]), y rank 4: y (the heads split from a projection's rows). */
static const loom_graph_expr *heads_of(loom_pass *p, const loom_graph_expr *x) {
  const loom_graph_expr *pd = x ? call_of(p, x, LOOM_GRAPH_OP_PERMUTE_DIMS) : NULL;
  return pd && permute_is(pd, swap_heads, 4) && tensor_of(pd->u.call.args[0], 4) ? pd->u.call.args[0] : NULL;
}

/* The composed form's rank-r operands qm (.., s, d), km (.., t, d) (transposed-B layout) and
 * vm (.., t, dv) as rank-4 operands of the op (f->q, f->k, f->v); false when their layout is
 * not one the op reads without a copy. `kbshd`: K^T was permute_dims(kbshd, [0, 2, 3, 1]) (no
 * km: only the bshd layout reads it); with `bshd` allowed (the result is transposed back to
 * (b, s, h, dv) by the root) q, k and v are read where the heads were split from rows. */
static bool layout(loom_pass *p, int r, const loom_graph_expr *qm, const loom_graph_expr *km, const loom_graph_expr *kbshd,
                   const loom_graph_expr *vm, bool bshd, attn_form *f) {
  if (r == 4 && bshd) {
    const loom_graph_expr *q = heads_of(p, qm), *k = kbshd ? kbshd : heads_of(p, km), *v = heads_of(p, vm);
    if (q && k && v && tensor_of(k, 4)) {
      const loom_sym_expr *const *qd = q->sinfo->dims, *const *kd = k->sinfo->dims, *const *vd = v->sinfo->dims;
      if (eq(p, kd[0], qd[0]) && eq(p, vd[0], qd[0]) && eq(p, vd[1], kd[1]) && eq(p, vd[2], kd[2]) &&
          (eq(p, kd[2], qd[2]) || is_const(kd[2], 1))) {
        f->q = q, f->k = k, f->v = v, f->bshd = true;
        return true;
      }
    }
  }
  if (!km) return false;
  const loom_sym_expr *const *qd = qm->sinfo->dims, *const *kd = km->sinfo->dims, *const *vd = vm->sinfo->dims;
  if (r == 4) {
    if (!eq(p, kd[0], qd[0]) || !eq(p, vd[0], qd[0]) || !eq(p, vd[2], kd[2])) return false;
    const loom_graph_expr *k0 = repeated_kv(p, km), *v0 = repeated_kv(p, vm);
    if (k0 && v0 && eq(p, k0->sinfo->dims[1], v0->sinfo->dims[1])) {
      f->q = qm, f->k = k0, f->v = v0;
      return true;
    }
    if (!eq(p, vd[1], kd[1]) || !(eq(p, kd[1], qd[1]) || is_const(kd[1], 1))) return false;
    f->q = qm, f->k = km, f->v = vm;
    return true;
  }
  if (r == 5) { /* (b, hk, g, s, d) x (b, hk, 1, t, d) */
    if (!is_const(kd[2], 1) || !is_const(vd[2], 1)) return false;
    if (!eq(p, kd[0], qd[0]) || !eq(p, vd[0], qd[0]) || !eq(p, kd[1], qd[1]) || !eq(p, vd[1], qd[1]) || !eq(p, vd[3], kd[3]))
      return false;
    const loom_sym_expr *h = loom_sym_mul(p->cx, qd[1], qd[2]);
    const loom_sym_expr *wq[4] = {qd[0], h, qd[3], qd[4]}, *wk[4] = {qd[0], qd[1], kd[3], kd[4]},
                        *wv[4] = {qd[0], qd[1], vd[3], vd[4]};
    f->q = view_of4(p, qm, wq), f->k = view_of4(p, km, wk), f->v = view_of4(p, vm, wv);
    return f->q && f->k && f->v;
  }
  if (r == 3) { /* (b*h, s, d) views of (b, h, s, d) */
    const loom_sym_expr *any[4] = {NULL, NULL, qd[1], qd[2]};
    if (!(f->q = view_of4(p, qm, any))) return false;
    const loom_sym_expr *b = f->q->sinfo->dims[0], *h = f->q->sinfo->dims[1], *bh = loom_sym_mul(p->cx, b, h);
    const loom_sym_expr *wk[4] = {b, h, kd[1], kd[2]}, *wv[4] = {b, h, vd[1], vd[2]};
    if (!bh || !eq(p, qd[0], bh) || !eq(p, kd[0], bh) || !eq(p, vd[0], bh)) return false;
    f->k = view_of4(p, km, wk), f->v = view_of4(p, vm, wv);
    return f->k && f->v;
  }
  return false;
}

/* The keys (.., t, d) of the score matmul qk: its operand 1 read transposed (transpose_b), or
 * operand 1 = permute_dims(k', swapping the last two axes), the scalar scales before and after
 * the transposition multiplied into *scale (PyTorch's scaled_dot_product_attention exports
 * `q * sqrt(scale)` and `k^T * sqrt(scale)`). NULL when neither; then *kbshd is set when K^T
 * is permute_dims(x, [0, 2, 3, 1]) of a rank-4 x (b, t, hk, d): the heads split from rows and
 * transposed in one (a module exported from `k.transpose(1, 2)` then `.transpose(-2, -1)`). */
static const loom_graph_expr *key_operand(loom_pass *p, const loom_graph_expr *qk, int r, double *scale,
                                          const loom_graph_expr **kbshd) {
  *kbshd = NULL;
  const loom_graph_expr *b = peel_scale(p, qk->u.call.args[1], scale, false);
  if (plain_matmul(qk, true)) return b;
  const loom_graph_expr *pd = call_of(p, b, LOOM_GRAPH_OP_PERMUTE_DIMS);
  if (!pd || pd->u.call.nargs != 1) return NULL;
  int64_t swap[8];
  for (int i = 0; i < r && r <= 8; i++) swap[i] = i < r - 2 ? i : i == r - 2 ? r - 1 : r - 2;
  if (r <= 8 && permute_is(pd, swap, r)) return peel_scale(p, pd->u.call.args[0], scale, false);
  static const int64_t kt[4] = {0, 2, 3, 1};
  if (r == 4 && permute_is(pd, kt, 4)) *kbshd = peel_scale(p, pd->u.call.args[0], scale, false);
  return NULL;
}

/* cond true above the diagonal (the keys a row must not see): not(causal) or causal == 0. */
static bool above_diagonal(loom_pass *p, const loom_graph_expr *cond, const loom_sym_expr *s, const loom_sym_expr *t) {
  const loom_graph_expr *nt = call_of(p, cond, LOOM_GRAPH_OP_NOT), *eq0 = call_of(p, cond, LOOM_GRAPH_OP_EQUAL);
  if (nt) return causal_cond(p, nt->u.call.args[0], s, t);
  if (eq0 && eq0->u.call.nargs == 2 && loom_pass_const_all(eq0->u.call.args[1], 0)) return causal_tril(p, eq0->u.call.args[0], s, t);
  return false;
}

/* Whether var y's one use is permute_dims(y, [0, 2, 1, 3]) (the heads merged back into rows). */
static bool transposed_back(loom_pass *p, const loom_graph_expr *y) {
  attn_state *st = p->ud;
  uint64_t c;
  if (!used_once(p, y) || !loom_map_get(&st->consumer, y->u.var.id, &c) || !c) return false;
  const loom_graph_binding *b = (const loom_graph_binding *)(uintptr_t)c;
  const loom_graph_expr *v = b->value;
  return b->kind == LOOM_GRAPH_BIND_VAR && !b->nguards && v->kind == LOOM_GRAPH_EXPR_CALL &&
         v->u.call.callee == LOOM_GRAPH_CALLEE_OP && v->u.call.op == LOOM_GRAPH_OP_PERMUTE_DIMS && permute_is(v, swap_heads, 4);
}

/* pv = where(not_equal(P, P), 0, P), P used there alone: the probabilities with NaN made 0
 * (torch's scaled_dot_product_attention export: a row masked whole gives 0). P, else NULL. */
static const loom_graph_expr *nan_zeroed(loom_pass *p, const loom_graph_expr *pv) {
  const loom_graph_expr *w = call_of(p, pv, LOOM_GRAPH_OP_WHERE);
  double zero;
  if (!w || w->u.call.nargs != 3 || !scalar_f(w->u.call.args[1], &zero) || zero != 0) return NULL;
  const loom_graph_expr *c = w->u.call.args[0], *P = w->u.call.args[2];
  const loom_graph_expr *ne = used_once(p, c) ? call_of(p, c, LOOM_GRAPH_OP_NOT_EQUAL) : NULL;
  if (!ne || ne->u.call.nargs != 2 || P->kind != LOOM_GRAPH_EXPR_VAR || !used_n(p, P, 3)) return NULL;
  for (int i = 0; i < 2; i++)
    if (ne->u.call.args[i]->kind != LOOM_GRAPH_EXPR_VAR || ne->u.call.args[i]->u.var.id != P->u.var.id) return NULL;
  return P;
}

/* y = matmul(P, vm) (rank r, the composed attention): fills f. `bshd`: the root transposes y
 * back to (b, s, h, dv), so operands whose heads were split from rows may be read in place. */
static bool match(loom_pass *p, const loom_graph_expr *mm, bool bshd, attn_form *f) {
  *f = (attn_form){.scale = 1.0};
  if (mm->u.call.nargs != 2 || !plain_matmul(mm, false)) return false;
  const loom_graph_expr *pv = mm->u.call.args[0], *vm = mm->u.call.args[1];
  int r = pv->sinfo->ndim;
  if (r < 3 || r > 5 || !tensor_of(pv, r) || !tensor_of(vm, r) || !loom_dtype_is_float(pv->sinfo->dtype) ||
      vm->sinfo->dtype != pv->sinfo->dtype || !used_once(p, pv))
    return false;
  const loom_graph_expr *sm = call_of(p, pv, LOOM_GRAPH_OP_SOFTMAX);
  if (!sm) { /* where(P != P, 0, P): empty_nan=false, the op's default */
    const loom_graph_expr *pz = nan_zeroed(p, pv);
    sm = pz ? call_of(p, pz, LOOM_GRAPH_OP_SOFTMAX) : NULL;
    f->zero_nan = true;
  }
  if (!sm) return false;
  int64_t axis = loom_graph_call_int(sm, "axis");
  if (axis != -1 && axis != r - 1) return false;
  const loom_graph_expr *x = sm->u.call.args[0], *scores = x, *m = NULL, *cond = NULL;
  double fill = 0;
  if (!used_once(p, x)) return false;
  const loom_sym_expr *s = pv->sinfo->dims[r - 2], *t = pv->sinfo->dims[r - 1];
  const loom_graph_expr *add = call_of(p, x, LOOM_GRAPH_OP_ADD), *wh = add ? NULL : call_of(p, x, LOOM_GRAPH_OP_WHERE);
  /* the scores: a chain of scalar scales down to matmul(q', k'); in an add either operand, in a
   * where the kept (then) value or the replaced (else) one */
  const loom_graph_expr *qk = NULL;
  int at = 0;
  for (int i = 0; i < (add || wh ? 2 : 1); i++) {
    double k = 1.0;
    scores = add ? add->u.call.args[i] : wh ? wh->u.call.args[1 + i] : x;
    const loom_graph_expr *s0 = peel_scale(p, scores, &k, true);
    qk = used_once(p, s0) ? call_of(p, s0, LOOM_GRAPH_OP_MATMUL) : NULL;
    if (qk && qk->u.call.nargs == 2 && (plain_matmul(qk, true) || plain_matmul(qk, false))) {
      f->scale = k;
      m = add ? add->u.call.args[1 - i] : NULL;
      at = i;
      break;
    }
    qk = NULL;
  }
  if (!qk) return false;
  if (wh) {
    cond = wh->u.call.args[0];
    if (!scalar_f(wh->u.call.args[at ? 1 : 2], &fill)) return false;
  }
  const loom_graph_expr *kbshd, *qm = peel_scale(p, qk->u.call.args[0], &f->scale, false);
  const loom_graph_expr *km = key_operand(p, qk, r, &f->scale, &kbshd);
  if ((!km && !kbshd) || !tensor_of(qm, r) || (km && !tensor_of(km, r)) || qm->sinfo->dtype != pv->sinfo->dtype ||
      (km && km->sinfo->dtype != pv->sinfo->dtype) || (kbshd && kbshd->sinfo->dtype != pv->sinfo->dtype) || !isfinite(f->scale))
    return false;
  if (!layout(p, r, qm, km, kbshd, vm, bshd, f)) return false;
  /* the mask */
  if (m) {
    if (causal_bias(p, m, s, t) || causal_where(p, m, s, t)) {
      f->causal = true;
    } else {
      const loom_sinfo *ms = m->sinfo;
      if (ms->kind != LOOM_SINFO_TENSOR || ms->dtype != pv->sinfo->dtype || ms->ndim < 0 || ms->ndim > (r == 4 ? 4 : 2))
        return false;
      f->mask = m;
    }
  } else if (cond && at == 1) { /* where(cond, F, S'): cond says which keys are masked */
    if (!(fill <= -LOOM_ATTN_CAUSAL_FILL && above_diagonal(p, cond, s, t))) return false;
    f->causal = true;
  } else if (cond) {
    if (fill <= -LOOM_ATTN_CAUSAL_FILL && causal_cond(p, cond, s, t)) {
      f->causal = true;
    } else {
      const loom_sinfo *cs = cond->sinfo;
      if (!(isinf(fill) && fill < 0) || cs->kind != LOOM_SINFO_TENSOR || cs->dtype != LOOM_DTYPE_BOOL || cs->ndim < 0 ||
          cs->ndim > (r == 4 ? 4 : 2))
        return false;
      f->mask = cond;
    }
  }
  return true;
}

/* ---- the rewrite ------------------------------------------------------------------------------- */

/* b's value becomes attention(f) when its struct info provably stays. */
static loom_status rewrite(loom_pass *p, loom_graph_binding *b, const attn_form *f) {
  loom_graph_module *m = p->m;
  loom_graph_expr *args[4] = {(loom_graph_expr *)f->q, (loom_graph_expr *)f->k, (loom_graph_expr *)f->v,
                              (loom_graph_expr *)f->mask};
  loom_graph_attr attrs[4] = {loom_graph_attr_float(m, "scale", f->scale), loom_graph_attr_bool(m, "causal", f->causal),
                              loom_graph_attr_bool(m, "empty_nan", !f->zero_nan), loom_graph_attr_str(m, "layout", "bshd")};
  loom_graph_expr *call = loom_graph_call_op(m, LOOM_GRAPH_OP_ATTENTION, f->mask ? 4 : 3, args, f->bshd ? 4 : 3, attrs);
  if (!call) return LOOM_OOM();
  call->loc = b->value->loc;
  bool ok;
  return loom_pass_set_value(p, b, call, &ok);
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  (void)drop;
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP || b->nguards)
    return LOOM_OK;
  attn_form f;
  /* rank 4: y = matmul(softmax(..), v) is the attention itself — unless y's one use transposes
   * it back to (b, s, h, dv): that binding is the root then (below), reading q, k, v in place */
  if (v->u.call.op == LOOM_GRAPH_OP_MATMUL) {
    if (!tensor_of(b->var, 4) || transposed_back(p, b->var)) return LOOM_OK;
    return match(p, v, false, &f) ? rewrite(p, b, &f) : LOOM_OK;
  }
  if (v->u.call.op == LOOM_GRAPH_OP_PERMUTE_DIMS && permute_is(v, swap_heads, 4)) {
    const loom_graph_expr *y = v->u.call.args[0], *mm = call_of(p, y, LOOM_GRAPH_OP_MATMUL);
    loom_graph_binding *yb = loom_pass_producer(p, y);
    if (!mm || !used_once(p, y) || !tensor_of(y, 4)) return LOOM_OK;
    if (match(p, mm, true, &f)) return f.bshd ? rewrite(p, b, &f) : rewrite(p, yb, &f);
    return LOOM_OK;
  }
  /* ranks 5 and 3: y = reshape(matmul(softmax(..), v)) back to (b, h, s, dv) */
  if (v->u.call.op == LOOM_GRAPH_OP_RESHAPE && v->u.call.nargs == 1 && tensor_of(b->var, 4)) {
    const loom_graph_expr *y = v->u.call.args[0], *mm = call_of(p, y, LOOM_GRAPH_OP_MATMUL);
    if (!mm || !used_once(p, y) || (y->sinfo->ndim != 5 && y->sinfo->ndim != 3) || !match(p, mm, false, &f)) return LOOM_OK;
    return rewrite(p, b, &f);
  }
  return LOOM_OK;
}

loom_status loom_graph_attention(loom_graph_module *m, size_t *out_changed) {
  attn_state st = {0};
  loom_map_init(&st.uses, m->alloc);
  loom_map_init(&st.consumer, m->alloc);
  loom_pass p = {.m = m, .visit = visit, .begin = begin, .ud = &st};
  loom_status s = loom_pass_run(&p);
  loom_map_destroy(&st.uses);
  loom_map_destroy(&st.consumer);
  if (!s && st.oom) s = LOOM_OOM();
  if (!s && p.changed) s = loom_graph_dce(m, NULL);
  if (out_changed) *out_changed = p.changed;
  return s;
}

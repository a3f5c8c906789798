/* pass_serving.c — an ONNX decoder with past/present key/values rewritten into `loom serve`'s
 * serving form (docs/serve.md): the ragged batch of a step, the paged K/V cache as parameters,
 * `paged_attention` in place of each layer's attention, the logits of each sequence's last
 * token and the step's new keys and values as results.
 *
 * What it recognises in @main (the import of an exporter's decoder, batch 1 by padding):
 *   input_ids (1, s) i64                              -> reshape(tokens, [1, t])
 *   position_ids (1, s) i64, or add(arange(0, s), p)  -> reshape(positions, [1, t]), or positions
 *   past_k (1, hk, p, d), past_v (1, hk, p, dv)       -> k_cache<L>, v_cache<L> (n, pg, hk, d / dv)
 *   attention_mask (1, p + s)                         -> taken as all ones (one unpadded sequence)
 * and, per layer, its attention (the forms: graph/pass_serving_match.c) — concat(past, new) of
 * the keys and values, their scores, scale, mask (an input, or the causal mask built in the
 * graph, proven there), softmax and weighted sum:
 *  -> y = permute(reshape(paged_attention(q', k', v', k_cache<L>, v_cache<L>, block_tables,
 *         ctx_lens, seq_ids, positions, scale=c)))      q', k', v' the (t, heads, d) views
 * Every other binding is copied as it is, on the new inputs: the batch-by-padding axis of 1
 * and s tokens becomes one row of the step's t tokens, which every per-token operator (norms,
 * projections, embeddings, activations) computes the same; s in a reshape's or broadcast's
 * shape becomes t. The mask is dropped — paged_attention is causal within each sequence and
 * reads its cached keys through the block table — and with it what only the mask, the computed
 * positions and the attentions use (mark_unused). The logits (1, s, V) become those of each
 * sequence's last token, gathered at `last_index` — before the last matmul when the logits are
 * matmul(h, W), so the vocabulary projection runs for b rows, not t.
 *
 * Refused, naming the input / binding / result: a binding that still uses a past input, the
 * mask, attention_mask or an intermediate of an attention (its scores, its softmax, a present
 * tensor) other than as above; a copied operator that acts along an axis whose extent depends
 * on the step's tokens (it would mix the sequences of a step: per_token) or is not known to act
 * token by token; a constant token axis; control flow and match_casts; shape literals and
 * attributes with symbolic dims other than s in a shape (they would name the padded s in a
 * value, or the past); a result that is neither the logits nor a present key or value; a past
 * input without its attention; heads or head widths that are not constants.
 * What is refused is never served: the engine reports the message and stops. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pass_serving_internal.h"
#include "graph/passes.h"

/* A fresh name for a binding the rewrite adds (the builder's own t<N> may clash with the
 * ONNX names). NULL on OOM. */
static const char *fresh(serving *s) {
  char nm[24];
  snprintf(nm, sizeof nm, "sv%u", s->tmp++);
  return loom_graph_module_intern(s->m, nm, strlen(nm));
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
        return sv_refuse(s, "binding '%s' uses '%s', an intermediate of an attention the rewrite replaces", uname, e->u.var.name);
      return sv_refuse(s, "binding '%s' uses input '%s', which the serving form has no value for", uname, e->u.var.name);
    }
    *out = (loom_graph_expr *)(uintptr_t)v;
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_CONST: *out = e; return LOOM_OK;
  case LOOM_GRAPH_EXPR_SHAPE:
    for (size_t i = 0; i < e->u.shape.n; i++)
      if (!loom_sym_is_const(e->u.shape.dims[i], NULL)) return sv_refuse(s, "binding '%s' has a symbolic shape literal%s", uname, "");
    *out = e;
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_SYM:
    if (!loom_sym_is_const(e->u.sym, NULL)) return sv_refuse(s, "binding '%s' has a symbolic scalar literal%s", uname, "");
    *out = e;
    return LOOM_OK;
  default: return sv_refuse(s, "binding '%s' has an operand that is not a leaf%s", uname, "");
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

/* The attributes of call e for its copy: constant ones as they are; the `shape` of a reshape or
 * broadcast_to may name the padded token axis s (input_ids' dim), which becomes the step's t —
 * the extent of the one row of the step's tokens, as the reshape of input_ids makes it. Any other
 * symbolic dim is refused: it would name the padded axis in a value (arange(0, s) counts the
 * tokens of every sequence of a step) or the past length, which the serving form has not. */
static loom_status copy_attrs(serving *s, const loom_graph_expr *e, const char *name, const loom_graph_attr **out) {
  *out = e->u.call.attrs;
  loom_graph_attr *na = NULL;
  loom_graph_op o = e->u.call.op;
  const loom_sym_expr *one = loom_sym_const(s->cx, 1);
  for (size_t i = 0; i < e->u.call.nattrs; i++) {
    const loom_graph_attr *a = &e->u.call.attrs[i];
    bool shape = (o == LOOM_GRAPH_OP_RESHAPE || o == LOOM_GRAPH_OP_BROADCAST_TO) && !strcmp(a->name, "shape");
    for (size_t k = 0; a->kind == LOOM_GRAPH_ATTR_SYMS && k < a->n; k++) {
      if (loom_sym_is_const(a->syms[k], NULL)) continue;
      if (!shape || !loom_sym_is_const(loom_sym_subst(s->cx, a->syms[k], &s->seq, &one, 1), NULL))
        return sv_refuse(s, "binding '%s' has attribute '%s' with a symbolic dim other than the token axis of a shape (it would name the padded axis or the past)", name, a->name);
      if (!na) {
        na = LOOM_ARENA_ARRAY(loom_graph_module_arena(s->m), loom_graph_attr, e->u.call.nattrs);
        if (!na) return LOOM_OOM();
        memcpy(na, e->u.call.attrs, e->u.call.nattrs * sizeof *na);
      }
      if (na[i].syms == a->syms) {
        const loom_sym_expr **d = LOOM_ARENA_ARRAY(loom_graph_module_arena(s->m), const loom_sym_expr *, a->n);
        if (!d) return LOOM_OOM();
        memcpy(d, a->syms, a->n * sizeof *d);
        na[i].syms = d;
      }
      ((const loom_sym_expr **)na[i].syms)[k] = loom_sym_subst(s->cx, a->syms[k], &s->seq, &s->t, 1);
    }
  }
  if (na) *out = na;
  return LOOM_OK;
}

/* A copy of binding `bd`'s value on the new leaves. */
static loom_status emit_copy(serving *s, loom_graph_builder *b, loom_graph_binding *bd) {
  const char *name = bd->var->u.var.name;
  if (bd->kind != LOOM_GRAPH_BIND_VAR) return sv_refuse(s, "binding '%s' is a match_cast%s", name, "");
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
      return sv_refuse(s, "binding '%s' calls @%s; only operators are rewritten", name, e->u.call.target);
    const loom_graph_attr *attrs;
    LOOM_PROPAGATE(copy_attrs(s, e, name, &attrs));
    loom_graph_expr **args = LOOM_ARENA_ARRAY(loom_graph_module_arena(s->m), loom_graph_expr *, e->u.call.nargs ? e->u.call.nargs : 1);
    if (!args) return LOOM_OOM();
    for (size_t i = 0; i < e->u.call.nargs; i++) LOOM_PROPAGATE(leaf(s, bd, e->u.call.args[i], &args[i]));
    ne = loom_graph_call_op(s->m, e->u.call.op, e->u.call.nargs, args, e->u.call.nattrs, attrs);
    if (ne && !per_token(s, ne))
      return sv_refuse(s, "binding '%s' (%s) may combine different tokens: it acts along the token axis, or is not known to act token by token",
                    name, loom_graph_op_name(e->u.call.op));
    break;
  }
  default: return sv_refuse(s, "binding '%s' is control flow (if / loop)%s", name, "");
  }
  if (!ne) return LOOM_OOM();
  LOOM_RETURN_IF_ERROR(loom_graph_builder_emit(b, ne, name, &out), "while rewriting binding '%s' for serving", name);
  return set_repl(s, bd->var, out);
}

/* The logits of each sequence's last token from the ONNX logits (1, t, V): the rows taken
 * before the projection when the logits are matmul(h, W) with W a constant of rank 2. */
static loom_status emit_logits(serving *s, loom_graph_builder *b, loom_graph_expr *logits, loom_graph_expr *last,
                               const loom_sym_expr *t, loom_graph_expr **out) {
  const loom_graph_expr *mm = sv_call_of(s, logits, LOOM_GRAPH_OP_MATMUL);
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
  if (l->sinfo->kind != LOOM_SINFO_TENSOR || l->sinfo->ndim != 3) return sv_refuse(s, "the logits '%s' are not (1, s, vocabulary)%s", logits->u.var.name, "");
  const loom_sym_expr *d2[2] = {t, l->sinfo->dims[2]};
  LOOM_PROPAGATE(reshape(s, b, l, 2, d2, &l2));
  loom_graph_expr *ta[2] = {l2, last};
  return loom_graph_builder_op(b, "take", 2, ta, 1, &ax, "logits_last", out);
}

/* The function's results: (logits, present...) as a tuple var, or one var (in one[0]). */
static loom_status results(serving *s, loom_graph_expr **one, loom_graph_expr *const **items, size_t *n) {
  loom_graph_expr *r = s->f->body->result;
  loom_graph_binding *rb = sv_producer(s, r);
  if (rb && rb->value->kind == LOOM_GRAPH_EXPR_TUPLE) {
    *items = rb->value->u.tuple.items;
    *n = rb->value->u.tuple.n;
    loom_map_put(&s->skip, r->u.var.id, 1);
    return LOOM_OK;
  }
  if (r->kind != LOOM_GRAPH_EXPR_VAR) return sv_refuse(s, "@main's result is not a var%s%s", "", "");
  one[0] = r;
  *items = one;
  *n = 1;
  return LOOM_OK;
}

/* Is e the positions: position_ids, arange(past, past + s) computed in the graph, or their
 * reshape / expand_dims / cast to an integer type? */
static bool is_positions(const serving *s, const loom_graph_expr *e, int depth) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR || depth > 8) return false;
  if (e == s->pos || loom_map_contains(&s->posv, e->u.var.id)) return true;
  const loom_graph_binding *b = sv_producer(s, e);
  const loom_graph_expr *c = b && b->kind == LOOM_GRAPH_BIND_VAR ? b->value : NULL;
  if (!c || c->kind != LOOM_GRAPH_EXPR_CALL || c->u.call.callee != LOOM_GRAPH_CALLEE_OP || c->u.call.nargs != 1) return false;
  loom_graph_op o = c->u.call.op;
  if (o == LOOM_GRAPH_OP_CAST && !loom_dtype_is_int(e->sinfo->dtype)) return false;
  return (o == LOOM_GRAPH_OP_RESHAPE || o == LOOM_GRAPH_OP_EXPAND_DIMS || o == LOOM_GRAPH_OP_CAST) && is_positions(s, c->u.call.args[0], depth + 1);
}

/* Calls f on each var operand of binding bd's value. */
static void each_operand(const loom_graph_binding *bd, void (*fn)(serving *, const loom_graph_expr *), serving *s) {
  const loom_graph_expr *e = bd->value;
  if (bd->kind != LOOM_GRAPH_BIND_VAR) {
    fn(s, e);
    return;
  }
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR: fn(s, e); break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: fn(s, e->u.get.tuple); break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < e->u.tuple.n; i++) fn(s, e->u.tuple.items[i]);
    break;
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < e->u.call.nargs; i++) fn(s, e->u.call.args[i]);
    break;
  default: break;
  }
}

/* each_operand callbacks: a use by a copied binding; an operand of a binding not copied. */
static void count_use(serving *s, const loom_graph_expr *e) {
  uint64_t n = 0;
  if (e->kind != LOOM_GRAPH_EXPR_VAR) return;
  loom_map_get(&s->uses, e->u.var.id, &n);
  if (!loom_map_put(&s->uses, e->u.var.id, n + 1)) s->oom = true;
}
static void mark_cand(serving *s, const loom_graph_expr *e) {
  if (e->kind == LOOM_GRAPH_EXPR_VAR && !loom_map_put(&s->cand, e->u.var.id, 1)) s->oom = true;
}

/* Finds the positions computed in the graph (s->posv) and what, besides the attentions'
 * intermediates, only the bindings not copied use — the causal mask built from the shapes and
 * attention_mask, the arange behind the positions, a past's alias —, and marks it not copied
 * either (s->skip). One pass from the last binding back: a binding's users come after it. What
 * no replaced binding reaches stays copied (and is refused if it uses what the serving form has
 * no value for); so do the results. */
static loom_status mark_unused(serving *s, loom_graph_expr *const *items, size_t nitems) {
  loom_graph_func *f = s->f;
  for (size_t k = 0; k < f->body->nblocks; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      if (!s->pos && !loom_map_contains(&s->skip, bd->var->u.var.id) && sv_is_positions(s, bd->var) &&
          !loom_map_put(&s->posv, bd->var->u.var.id, 1))
        return LOOM_OOM();
    }
  for (size_t k = f->body->nblocks; k-- > 0;)
    for (size_t i = f->body->blocks[k]->n; i-- > 0;) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      uint32_t id = bd->var->u.var.id;
      uint64_t li, n = 0;
      bool result = false;
      for (size_t r = 0; r < nitems; r++) result |= items[r] == bd->var;
      loom_map_get(&s->uses, id, &n);
      if (!result && !n && loom_map_contains(&s->cand, id) && !loom_map_contains(&s->posv, id) && !loom_map_put(&s->skip, id, 1))
        return LOOM_OOM();
      if (loom_map_get(&s->layer_of, id, &li)) {
        serving_layer *L = &s->layers[li - 1];
        count_use(s, L->q), count_use(s, L->k_new), count_use(s, L->v_new);
        each_operand(bd, mark_cand, s);
      } else if (loom_map_contains(&s->skip, id) || loom_map_contains(&s->posv, id)) {
        each_operand(bd, mark_cand, s);
      } else {
        each_operand(bd, count_use, s);
      }
      if (s->oom) return LOOM_OOM();
    }
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
    if (!strcmp(pn, "attention_mask")) s->amask = f->params[i];
  }
  if (!s->ids) return sv_refuse(s, "@main has no input 'input_ids' (the token ids, (1, s) i64)%s%s", "", "");
  const loom_sinfo *idsi = s->ids->sinfo, *posi = s->pos ? s->pos->sinfo : NULL;
  int64_t one;
  if (idsi->ndim != 2 || idsi->dtype != LOOM_DTYPE_I64 || !sv_dim_const(idsi, 0, &one) || one != 1)
    return sv_refuse(s, "input '%s' is not (1, s) i64 (batch by padding of one sequence)%s", "input_ids", "");
  int64_t fixed;
  if (sv_dim_const(idsi, 1, &fixed))
    return sv_refuse(s, "input 'input_ids' has a constant token axis (%s); the rewrite needs it symbolic%s", loom_graph_sym_str(s->m, idsi->dims[1]), "");
  s->seq = idsi->dims[1];
  if (posi && (posi->ndim != 2 || (posi->dtype != LOOM_DTYPE_I64) || !sv_dim_const(posi, 0, &one) || one != 1))
    return sv_refuse(s, "input '%s' is not (1, s) i64%s", "position_ids", "");
  const loom_sinfo *ami = s->amask ? s->amask->sinfo : NULL;
  if (ami && (ami->kind != LOOM_SINFO_TENSOR || ami->ndim != 2 || !sv_dim_const(ami, 0, &one) || one != 1))
    return sv_refuse(s, "input '%s' is not (1, p + s)%s", "attention_mask", "");
  /* the attentions, in order */
  for (size_t k = 0; k < f->body->nblocks; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      serving_layer L;
      if (!sv_match_attention(s, bd, &L)) continue;
      if (s->nlayers == MAX_LAYERS) return sv_refuse(s, "more than %s layers%s", "128", "");
      LOOM_PROPAGATE(sv_check_layer(s, &L));
      s->layers[s->nlayers++] = L;
      if (!loom_map_put(&s->layer_of, bd->var->u.var.id, (uint64_t)s->nlayers)) return LOOM_OOM();
    }
  /* every past input belongs to one attention */
  for (size_t i = 0; i < f->nparams; i++) {
    loom_graph_expr *p = f->params[i];
    if (p == s->ids || p == s->pos) continue;
    int uses = 0;
    for (int l = 0; l < s->nlayers; l++) uses += (s->layers[l].past_k == p) + (s->layers[l].past_v == p);
    if (uses > 1) return sv_refuse(s, "input '%s' is the past of two attentions%s", p->u.var.name, "");
    if (!uses && p->sinfo->kind == LOOM_SINFO_TENSOR && p->sinfo->ndim == 4 && (strstr(p->u.var.name, "past") || strstr(p->u.var.name, "cache")))
    {
      char msg[400];
      snprintf(msg, sizeof msg, "input '%s' looks like a past key / value, but no attention over concat('%s', new, axis=2) was recognised%s%s",
               p->u.var.name, p->u.var.name, s->why[0] ? ": " : "", s->why);
      return sv_refuse(s, "%s%s", msg, "");
    }
  }
  if (!s->nlayers) return sv_refuse(s, "no attention over a past key / value input was recognised%s%s", "", "");
  /* the results (their tuple is not copied) */
  loom_graph_expr *res1[1], *const *items = NULL;
  size_t nitems = 0;
  LOOM_PROPAGATE(results(s, res1, &items, &nitems));
  LOOM_PROPAGATE(mark_unused(s, items, nitems));

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
  if (!st && s->pos) st = set_repl(s, s->pos, pos2);
  /* the bindings, the attentions replaced */
  loom_graph_expr *batch[4] = {bt, ctx_lens, seq_ids, positions};
  loom_graph_expr **kv = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_expr *, 2 * (size_t)s->nlayers + 1);
  if (!kv && !st) st = LOOM_OOM();
  for (size_t k = 0; k < f->body->nblocks && !st; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n && !st; i++) {
      loom_graph_binding *bd = f->body->blocks[k]->bindings[i];
      uint64_t li;
      if (loom_map_get(&s->layer_of, bd->var->u.var.id, &li)) st = emit_attention(s, &b, &s->layers[li - 1], batch, t, &kv[1 + 2 * (li - 1)]);
      else if (loom_map_contains(&s->posv, bd->var->u.var.id)) st = set_repl(s, bd->var, positions);
      else if (!loom_map_contains(&s->skip, bd->var->u.var.id)) {
        /* a binding only the logits' projection uses is copied too; dce removes it */
        st = emit_copy(s, &b, bd);
      }
    }
  /* position table rows: take(TABLE, positions) */
  for (size_t k = 0; k < f->body->nblocks && !st; k++)
    for (size_t i = 0; i < f->body->blocks[k]->n; i++) {
      const loom_graph_expr *v = f->body->blocks[k]->bindings[i]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP && v->u.call.op == LOOM_GRAPH_OP_TAKE &&
          is_positions(s, v->u.call.args[1], 0) && v->u.call.args[0]->kind == LOOM_GRAPH_EXPR_CONST)
        sv_dim_const(v->u.call.args[0]->sinfo, 0, &s->pos_rows);
    }
  /* the results: logits, then each layer's new keys and values */
  loom_graph_expr *logits = NULL;
  for (size_t i = 0; i < nitems && !st; i++) {
    loom_graph_expr *it = items[i];
    bool present = false;
    for (int l = 0; l < s->nlayers; l++) present |= it == s->layers[l].present_k || it == s->layers[l].present_v;
    if (present) continue;
    if (logits || it->kind != LOOM_GRAPH_EXPR_VAR)
      st = sv_refuse(s, "result %s ('%s') is neither the logits (the first other result) nor a present key / value", i == 0 ? "0" : "after the logits",
                  it->kind == LOOM_GRAPH_EXPR_VAR ? it->u.var.name : "?");
    else logits = it;
  }
  if (!st && !logits) st = sv_refuse(s, "no result is the logits%s%s", "", "");
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
  loom_map_init(&s->posv, NULL);
  loom_map_init(&s->uses, NULL);
  loom_map_init(&s->cand, NULL);
  loom_status st = s->f ? LOOM_OK : sv_refuse(s, "it has no function @main%s%s", "", "");
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
  loom_map_destroy(&s->posv);
  loom_map_destroy(&s->uses);
  loom_map_destroy(&s->cand);
  free(s);
  return st;
}

/* pass_normalize.c — the canonical form the other passes rely on (loom_graph_normalize).
 *
 * After normalize:
 *   - no binding's value is a bare leaf: `y = x`, `y = const(...)`, `y = shape(...)`,
 *     `y = sym(...)` are propagated into the uses of y (copy and literal propagation), so
 *     fold and simplify see literals directly as operands;
 *   - a match_cast that is statically true and defines no symbol is a plain copy, and is
 *     propagated like one (one that defines a symbol always stays: it is the symbol's
 *     definition);
 *   - `t.i` of a tuple `t = (a, b, ...)` built in the function is the field itself, and
 *     `t.i` of `t = split(x, ...)` is a strided_slice of x (when the split is provably even),
 *     so a split leaves no tuple behind for the later passes;
 *   - commutative operators list var operands in definition order and literals last,
 *     so `add(b, a)` and `add(a, b)` are the same expression for CSE and a constant is
 *     always operand 1 for simplify;
 *   - a binding outside a dataflow block that may stand in one (not an `if`, a graph-function
 *     call or a call of an impure extern) is in one: runs of such bindings in a plain block
 *     become dataflow blocks (the ONNX importer writes plain blocks; fusion works on
 *     dataflow blocks);
 *   - adjacent dataflow blocks are one block; each block's outputs are exactly the vars
 *     used after it; no block is empty. */
#include <string.h>

#include "graph/pass_internal.h"

static bool commutative(loom_graph_op op) {
  switch (op) {
  case LOOM_GRAPH_OP_ADD:
  case LOOM_GRAPH_OP_MUL:
  case LOOM_GRAPH_OP_MAXIMUM:
  case LOOM_GRAPH_OP_MINIMUM:
  case LOOM_GRAPH_OP_EQUAL:
  case LOOM_GRAPH_OP_NOT_EQUAL:
  case LOOM_GRAPH_OP_LOGICAL_AND:
  case LOOM_GRAPH_OP_LOGICAL_OR:
  case LOOM_GRAPH_OP_LOGICAL_XOR:
    return true;
  default:
    return false;
  }
}

/* Sort key of an operand: vars by definition order, then literals. */
static uint64_t operand_key(const loom_graph_expr *e) {
  return e->kind == LOOM_GRAPH_EXPR_VAR ? e->u.var.id : UINT64_MAX;
}

/* y = split(x, axis=a, sections=k).i  ->  y = strided_slice(x, axes=[a], begin=[i*d/k], end=[(i+1)*d/k])
 * where d is x's axis a, provably a multiple of k; with sizes=[s0, s1, ...] (provably adding up
 * to d) the part runs from s0 + ... + s(i-1) for s_i. Unproved splits keep their guard and stay. */
static loom_status split_part(loom_pass *p, loom_graph_binding *b, const loom_graph_expr *split, size_t i) {
  const loom_sinfo *x = split->u.call.args[0]->sinfo;
  int64_t axis = loom_graph_call_int(split, "axis");
  if (x->kind != LOOM_SINFO_TENSOR || x->ndim < 0 || !x->dims) return LOOM_OK;
  if (axis < 0) axis += x->ndim;
  if (axis < 0 || axis >= x->ndim) return LOOM_OK;
  loom_sym_ctx *cx = p->cx;
  const loom_sym_expr *d = x->dims[axis], *lo, *hi;
  const loom_graph_attr *sizes = loom_graph_call_attr(split, "sizes");
  if (sizes) {
    if (i >= sizes->n) return LOOM_OK;
    const loom_sym_expr *total = loom_sym_const(cx, 0);
    lo = total;
    for (size_t k = 0; k < sizes->n && total; k++) {
      if (k == i) lo = total;
      total = loom_sym_add(cx, total, sizes->syms[k]);
    }
    if (!total || loom_sym_prove_eq(cx, total, d) != LOOM_SYM_TRUE) return LOOM_OK;
    hi = loom_sym_add(cx, lo, sizes->syms[i]);
  } else {
    int64_t k = loom_graph_call_int(split, "sections");
    if (k < 1 || loom_sym_prove_divisible(cx, d, k) != LOOM_SYM_TRUE) return LOOM_OK;
    const loom_sym_expr *part = loom_sym_floordiv(cx, d, loom_sym_const(cx, k));
    lo = loom_sym_mul(cx, part, loom_sym_const(cx, (int64_t)i));
    hi = loom_sym_mul(cx, part, loom_sym_const(cx, (int64_t)i + 1));
  }
  if (!lo || !hi) return loom_sym_ctx_take_error(cx);
  loom_graph_attr attrs[3] = {loom_graph_attr_ints(p->m, "axes", 1, &axis), loom_graph_attr_syms(p->m, "begin", 1, &lo),
                              loom_graph_attr_syms(p->m, "end", 1, &hi)};
  loom_graph_expr *c = loom_pass_call_copy(p->m, split, 1, split->u.call.args, 3, attrs);
  if (!c) return LOOM_OOM();
  c->u.call.op = LOOM_GRAPH_OP_STRIDED_SLICE;
  bool ok;
  return loom_pass_set_value(p, b, c, &ok);
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  loom_graph_expr *v = b->value;
  bool ok;
  /* y = leaf  ->  uses of y read the leaf */
  if (b->kind == LOOM_GRAPH_BIND_VAR && loom_graph_expr_is_leaf(v)) {
    loom_pass_replace_var(p, b, v, &ok);
    *drop = ok;
    return LOOM_OK;
  }
  /* y = match_cast(x, S)  ->  uses of y read x   if S is statically a base of x and defines no symbol */
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST && loom_graph_expr_is_leaf(v) && loom_pass_sinfo_in_scope(p, b->var->sinfo) &&
      loom_sinfo_is_base_of(p->cx, b->var->sinfo, v->sinfo) == LOOM_SYM_TRUE) {
    loom_pass_replace_var(p, b, v, &ok);
    *drop = ok;
    return LOOM_OK;
  }
  /* y = t.i with t = (a0, a1, ...)  ->  uses of y read a_i */
  if (b->kind == LOOM_GRAPH_BIND_VAR && v->kind == LOOM_GRAPH_EXPR_TUPLE_GET) {
    loom_graph_binding *tb = loom_pass_producer(p, v->u.get.tuple);
    if (tb && tb->kind == LOOM_GRAPH_BIND_VAR && tb->value->kind == LOOM_GRAPH_EXPR_TUPLE &&
        v->u.get.index < tb->value->u.tuple.n) {
      loom_pass_replace_var(p, b, tb->value->u.tuple.items[v->u.get.index], &ok);
      *drop = ok;
    }
    if (tb && tb->kind == LOOM_GRAPH_BIND_VAR && tb->value->kind == LOOM_GRAPH_EXPR_CALL &&
        tb->value->u.call.callee == LOOM_GRAPH_CALLEE_OP && tb->value->u.call.op == LOOM_GRAPH_OP_SPLIT)
      return split_part(p, b, tb->value, v->u.get.index);
    return LOOM_OK;
  }
  /* op(a, b) -> op(b, a)   for commutative ops, ordered by operand_key */
  if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP && commutative(v->u.call.op) &&
      v->u.call.nargs == 2 && operand_key(v->u.call.args[0]) > operand_key(v->u.call.args[1])) {
    loom_graph_expr *args[2] = {v->u.call.args[1], v->u.call.args[0]};
    loom_graph_expr *c = loom_pass_call_copy(p->m, v, 2, args, v->u.call.nattrs, v->u.call.attrs);
    if (!c) return LOOM_OOM();
    return loom_pass_set_value(p, b, c, &ok);
  }
  return LOOM_OK;
}

/* Whether binding b may stand in a dataflow block: not an `if` or a loop, not a call of an
 * extern that is not declared pure, not a graph-function call (it may make one). */
static bool dataflow_ok(const loom_graph_module *m, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  if (v->kind == LOOM_GRAPH_EXPR_IF || v->kind == LOOM_GRAPH_EXPR_LOOP) return false;
  if (v->kind != LOOM_GRAPH_EXPR_CALL) return true;
  if (v->u.call.callee == LOOM_GRAPH_CALLEE_FUNC) return false;
  if (v->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN) {
    const loom_graph_extern *ex = loom_graph_module_find_extern(m, v->u.call.target);
    return ex && ex->decl && ex->decl->pure;
  }
  return true;
}

/* Splits every plain (non-dataflow) block of s, and of nested branches, into maximal runs of
 * bindings that may stand in a dataflow block (which become dataflow blocks) and runs that
 * may not: a module written without `dataflow { }` (the ONNX importer's) gets the blocks
 * that fusion works on. */
static loom_status form_dataflow(loom_graph_module *m, loom_graph_seq *s, size_t *changed) {
  loom_arena *a = loom_graph_module_arena(m);
  size_t cap = 0;
  for (size_t i = 0; i < s->nblocks; i++) cap += s->blocks[i]->dataflow ? 1 : s->blocks[i]->n;
  loom_graph_block **out = LOOM_ARENA_ARRAY(a, loom_graph_block *, cap ? cap : 1);
  if (!out) return LOOM_OOM();
  size_t k = 0;
  for (size_t i = 0; i < s->nblocks; i++) {
    loom_graph_block *blk = s->blocks[i];
    for (size_t j = 0; j < blk->n; j++)
      if (blk->bindings[j]->value->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(form_dataflow(m, blk->bindings[j]->value->u.if_.then_seq, changed));
        LOOM_PROPAGATE(form_dataflow(m, blk->bindings[j]->value->u.if_.else_seq, changed));
      } else if (blk->bindings[j]->value->kind == LOOM_GRAPH_EXPR_LOOP) {
        LOOM_PROPAGATE(form_dataflow(m, blk->bindings[j]->value->u.loop.body, changed));
      }
    if (blk->dataflow) {
      out[k++] = blk;
      continue;
    }
    for (size_t j = 0; j < blk->n;) {
      bool df = dataflow_ok(m, blk->bindings[j]);
      size_t e = j + 1;
      while (e < blk->n && dataflow_ok(m, blk->bindings[e]) == df) e++;
      loom_graph_block *nb = LOOM_ARENA_NEW(a, loom_graph_block);
      if (!nb) return LOOM_OOM();
      *nb = (loom_graph_block){.dataflow = df, .n = e - j, .bindings = blk->bindings + j};
      if (df) (*changed)++;
      out[k++] = nb;
      j = e;
    }
  }
  s->blocks = out;
  s->nblocks = k;
  return LOOM_OK;
}

/* Merges runs of adjacent dataflow blocks of s (and of nested branches). */
static loom_status merge_blocks(loom_graph_module *m, loom_graph_seq *s, size_t *changed) {
  loom_arena *a = loom_graph_module_arena(m);
  loom_graph_block **blocks = (loom_graph_block **)s->blocks;
  size_t k = 0;
  for (size_t i = 0; i < s->nblocks; i++) {
    loom_graph_block *blk = blocks[i];
    for (size_t j = 0; j < blk->n; j++)
      if (blk->bindings[j]->value->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(merge_blocks(m, blk->bindings[j]->value->u.if_.then_seq, changed));
        LOOM_PROPAGATE(merge_blocks(m, blk->bindings[j]->value->u.if_.else_seq, changed));
      } else if (blk->bindings[j]->value->kind == LOOM_GRAPH_EXPR_LOOP) {
        LOOM_PROPAGATE(merge_blocks(m, blk->bindings[j]->value->u.loop.body, changed));
      }
    if (k && blk->dataflow && blocks[k - 1]->dataflow) {
      loom_graph_block *prev = blocks[k - 1];
      loom_graph_binding **bs = LOOM_ARENA_ARRAY(a, loom_graph_binding *, prev->n + blk->n);
      if (!bs) return LOOM_OOM();
      memcpy(bs, prev->bindings, prev->n * sizeof *bs);
      memcpy(bs + prev->n, blk->bindings, blk->n * sizeof *bs);
      prev->bindings = bs;
      prev->n += blk->n;
      (*changed)++;
      continue;
    }
    blocks[k++] = blk;
  }
  s->nblocks = k;
  return LOOM_OK;
}

loom_status loom_graph_normalize(loom_graph_module *m, size_t *out_changed) {
  loom_pass p = {.m = m, .visit = visit};
  LOOM_PROPAGATE(loom_pass_run(&p));
  size_t merged = 0;
  for (size_t i = 0; i < m->funcs.len; i++) {
    LOOM_PROPAGATE(form_dataflow(m, m->funcs.data[i]->body, &merged));
    LOOM_PROPAGATE(merge_blocks(m, m->funcs.data[i]->body, &merged));
    LOOM_PROPAGATE(loom_pass_fix_outputs(m, m->funcs.data[i]->body));
  }
  if (out_changed) *out_changed = p.changed + merged;
  return LOOM_OK;
}

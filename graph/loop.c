/* loop.c — the graph IR's loop (docs/ir.md "Loops"): its constructor and its struct info.
 *
 *   r = loop (i < count, while c0) (h: Tensor[(b, 4), f32] = h0, acc: Tensor[(k, 4), f32] = a0) {
 *     ...
 *     return t        // t = (c1, h1, acc1, y): next condition, next carried values, scan items
 *   }
 *
 * runs the body while i < count and the condition holds (either may be absent, not both).
 * Each iteration starts by matching the carried values against the params' struct info, which
 * binds the params' own symbols (`k` above: the loop's locals) anew; the iteration number `i`
 * is a symbolic var of the body. The loop's value is Tuple[final carried values..., scan items
 * stacked along a new axis 0]. Its struct info keeps every fact: a carried value whose struct
 * info uses no local keeps it; a local becomes a fresh symbol of the binding (`r_k0`), bound
 * when the loop ends; the stacked axis is `count` when the loop has no condition, else fresh; a
 * scan item's dim that names a symbol of the body (which may differ per iteration as far as the
 * prover knows) becomes a fresh symbol too, bound from the items (every item must have the first
 * one's shape, checked when each is stacked). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/map.h"
#include "graph/graph_internal.h"

loom_graph_expr *loom_graph_loop_new(loom_graph_module *m, loom_graph_expr *count, loom_graph_expr *cond,
                                     const loom_sym_expr *iter, size_t ncarry, loom_graph_expr *const *params,
                                     loom_graph_expr *const *inits, size_t nlocals, const loom_sym_expr *const *locals,
                                     loom_graph_seq *body) {
  loom_arena *a = loom_graph_module_arena(m);
  loom_graph_expr *e = LOOM_ARENA_NEW(a, loom_graph_expr);
  loom_graph_expr **p = LOOM_ARENA_ARRAY(a, loom_graph_expr *, ncarry ? ncarry : 1);
  loom_graph_expr **in = LOOM_ARENA_ARRAY(a, loom_graph_expr *, ncarry ? ncarry : 1);
  const loom_sym_expr **lo = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, nlocals ? nlocals : 1);
  if (!e || !p || !in || !lo || !iter || !body) return NULL;
  for (size_t i = 0; i < ncarry; i++) {
    if (!params[i] || !inits[i]) return NULL;
    p[i] = params[i];
    in[i] = inits[i];
  }
  for (size_t i = 0; i < nlocals; i++) lo[i] = locals[i];
  e->kind = LOOM_GRAPH_EXPR_LOOP;
  e->u.loop.count = count;
  e->u.loop.cond = cond;
  e->u.loop.iter = iter;
  e->u.loop.ncarry = ncarry;
  e->u.loop.params = p;
  e->u.loop.inits = in;
  e->u.loop.nlocals = nlocals;
  e->u.loop.locals = lo;
  e->u.loop.body = body;
  return e;
}

const loom_sym_expr *loom_graph_loop_iter_new(loom_graph_module *m, const char *name, const loom_graph_expr *count) {
  loom_sym_ctx *cx = m->cx;
  const loom_sym_expr *i = loom_sym_var_new(cx, name, LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *c = !count ? NULL
                           : count->kind == LOOM_GRAPH_EXPR_SYM ? count->u.sym
                           : count->sinfo && count->sinfo->kind == LOOM_SINFO_SCALAR ? count->sinfo->value
                                                                                     : NULL;
  if (i && c) {
    /* i < count wherever i has a value (the body runs only then): a fact for good, since i
     * appears nowhere else */
    loom_status st = loom_sym_assume_nonneg(cx, loom_sym_sub(cx, loom_sym_sub(cx, c, i), loom_sym_const(cx, 1)));
    if (st && loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) i = NULL;
    loom_status_free(st);
  }
  return i;
}

size_t loom_graph_loop_nscan(const loom_graph_expr *e) {
  const loom_graph_seq *b = e->u.loop.body;
  size_t fixed = (e->u.loop.cond ? 1 : 0) + e->u.loop.ncarry;
  if (!b || !b->result || !b->result->sinfo || b->result->sinfo->kind != LOOM_SINFO_TUPLE) return 0;
  return b->result->sinfo->nfields > fixed ? b->result->sinfo->nfields - fixed : 0;
}

/* Is `s` one element: rank 0, or every dim the constant 1? */
static bool one_element(const loom_sinfo *s) {
  if (s->ndim < 0 || (s->ndim > 0 && !s->dims)) return false;
  for (int i = 0; i < s->ndim; i++) {
    int64_t v;
    if (!loom_sym_is_const(s->dims[i], &v) || v != 1) return false;
  }
  return true;
}

/* Whether a trip count (ints) or a condition (ints or bools) may have struct info `s`: a
 * symbolic scalar, or one element of such a dtype. */
static bool scalar_like(const loom_sinfo *s, bool bools) {
  bool dt = loom_dtype_is_int(s->dtype) || (bools && s->dtype == LOOM_DTYPE_BOOL);
  if (s->kind == LOOM_SINFO_SCALAR) return dt;
  return s->kind == LOOM_SINFO_TENSOR && dt && one_element(s);
}

static loom_status kind_error(loom_graph_module *m, const char *what, bool bools, const loom_sinfo *s) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, m->alloc);
  loom_sinfo_print(s, &sb);
  const char *dt = bools ? "bool or integer" : "integer";
  loom_status st = LOOM_ERROR(TYPE_ERROR, "loop: %s must be sym(...), a Scalar or a one-element tensor of a%s %s dtype, not %s",
                              what, bools ? "" : "n", dt, loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return st;
}

const loom_sym_expr *loom_graph_fresh_sym(loom_graph_module *m, const char *hint, const char *what) {
  char name[160];
  snprintf(name, sizeof name, "%s%s%s%u", hint ? hint : "", hint ? "_" : "", what, m->next_fresh++);
  return loom_sym_var_new(m->cx, name, LOOM_SYM_VAR_SHAPE);
}

/* Does `si` use symbolic var v (dims, scalar values, tuple fields)? */
static bool sinfo_uses(const loom_sinfo *si, const loom_sym_expr *v) {
  if (!si) return false;
  for (int i = 0; si->dims && i < si->ndim; i++)
    if (loom_sym_uses_var(si->dims[i], v)) return true;
  if (si->value && loom_sym_uses_var(si->value, v)) return true;
  for (size_t i = 0; i < si->nfields; i++)
    if (sinfo_uses(si->fields[i], v)) return true;
  return sinfo_uses(si->ret, v);
}

/* ---- the body's own symbols ------------------------------------------------------------ */

/* A set of symbolic vars (the map's keys). */
typedef struct symset {
  loom_map set;
  bool oom;
} symset;

static void add_cb(void *ud, const loom_sym_expr *v) {
  symset *s = ud;
  if (!loom_map_put(&s->set, (uint64_t)(uintptr_t)v, 1)) s->oom = true;
}

static void sinfo_vars(const loom_sinfo *si, void (*fn)(void *, const loom_sym_expr *), void *ud) {
  if (!si) return;
  for (int i = 0; si->dims && i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], fn, ud);
  if (si->value) loom_sym_for_each_var(si->value, fn, ud);
  for (size_t i = 0; i < si->nfields; i++) sinfo_vars(si->fields[i], fn, ud);
  sinfo_vars(si->ret, fn, ud);
}

static void leaf_vars(const loom_graph_expr *e, symset *s) {
  if (!e) return;
  sinfo_vars(e->sinfo, add_cb, s);
  if (e->kind == LOOM_GRAPH_EXPR_SYM) loom_sym_for_each_var(e->u.sym, add_cb, s);
  for (size_t i = 0; e->kind == LOOM_GRAPH_EXPR_SHAPE && i < e->u.shape.n; i++) loom_sym_for_each_var(e->u.shape.dims[i], add_cb, s);
}

typedef struct intro_ctx {
  const symset *known; /* vars the binding's operands and attributes name */
  symset *body;        /* the body's own vars */
} intro_ctx;

static void intro_cb(void *ud, const loom_sym_expr *v) {
  intro_ctx *c = ud;
  if (!loom_map_contains(&c->known->set, (uint64_t)(uintptr_t)v)) add_cb(c->body, v);
}

static void body_vars(const loom_graph_seq *s, symset *body, loom_allocator *alloc);

/* The vars binding b introduces (its struct info names them, its operands and attributes do
 * not: a match_cast's new symbols, an op's fresh extent, a loop's fresh symbols) go into body;
 * a nested body's own vars too. Over-approximate: a var counted here that is defined outside
 * only makes a scan dim fresh. */
static void binding_vars(const loom_graph_binding *b, symset *body, loom_allocator *alloc) {
  const loom_graph_expr *v = b->value;
  symset known;
  loom_map_init(&known.set, alloc);
  known.oom = false;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < v->u.call.nargs; i++) leaf_vars(v->u.call.args[i], &known);
    for (size_t i = 0; i < v->u.call.nattrs; i++)
      for (size_t k = 0; v->u.call.attrs[i].kind == LOOM_GRAPH_ATTR_SYMS && k < v->u.call.attrs[i].n; k++)
        loom_sym_for_each_var(v->u.call.attrs[i].syms[k], add_cb, &known);
    break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) leaf_vars(v->u.tuple.items[i], &known);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: leaf_vars(v->u.get.tuple, &known); break;
  case LOOM_GRAPH_EXPR_IF:
    leaf_vars(v->u.if_.cond, &known);
    body_vars(v->u.if_.then_seq, body, alloc);
    body_vars(v->u.if_.else_seq, body, alloc);
    break;
  case LOOM_GRAPH_EXPR_LOOP:
    leaf_vars(v->u.loop.count, &known);
    leaf_vars(v->u.loop.cond, &known);
    for (size_t i = 0; i < v->u.loop.ncarry; i++) leaf_vars(v->u.loop.inits[i], &known);
    add_cb(body, v->u.loop.iter);
    for (size_t i = 0; i < v->u.loop.nlocals; i++) add_cb(body, v->u.loop.locals[i]);
    body_vars(v->u.loop.body, body, alloc);
    break;
  default: leaf_vars(v, &known); break;
  }
  intro_ctx c = {&known, body};
  sinfo_vars(b->var->sinfo, intro_cb, &c);
  body->oom = body->oom || known.oom;
  loom_map_destroy(&known.set);
}

static void body_vars(const loom_graph_seq *s, symset *body, loom_allocator *alloc) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) binding_vars(s->blocks[i]->bindings[j], body, alloc);
}

typedef struct uses_ctx {
  const symset *body;
  bool hit;
} uses_ctx;
static void uses_cb(void *ud, const loom_sym_expr *v) {
  uses_ctx *c = ud;
  if (loom_map_contains(&c->body->set, (uint64_t)(uintptr_t)v)) c->hit = true;
}

/* ---- the loop's struct info ----------------------------------------------------------------- */

static int by_var_name(const void *a, const void *b) {
  return strcmp(loom_sym_var_name(*(const loom_sym_expr *const *)a), loom_sym_var_name(*(const loom_sym_expr *const *)b));
}

loom_status loom_graph_loop_infer(loom_graph_module *m, const loom_graph_expr *e, const char *hint,
                                  const loom_sinfo **out) {
  loom_sym_ctx *cx = m->cx;
  const loom_graph_expr *count = e->u.loop.count, *cond = e->u.loop.cond;
  size_t nc = e->u.loop.ncarry, hc = cond ? 1 : 0;
  *out = NULL;
  if (!count && !cond) return LOOM_ERROR(TYPE_ERROR, "loop: it needs a trip count, a condition or both (it would never end)");
  if (count && count->kind != LOOM_GRAPH_EXPR_SYM && !scalar_like(count->sinfo, false))
    return kind_error(m, "the trip count", false, count->sinfo);
  if (cond && cond->kind != LOOM_GRAPH_EXPR_SYM && !scalar_like(cond->sinfo, true))
    return kind_error(m, "the condition", true, cond->sinfo);
  const loom_graph_expr *res = e->u.loop.body ? e->u.loop.body->result : NULL;
  if (!res || !res->sinfo || res->sinfo->kind != LOOM_SINFO_TUPLE || res->kind != LOOM_GRAPH_EXPR_VAR)
    return LOOM_ERROR(TYPE_ERROR, "loop: the body must return a tuple var (%snext carried values, then scan items)",
                      cond ? "the next condition, " : "");
  const loom_sinfo *rt = res->sinfo;
  if (rt->nfields < hc + nc)
    return LOOM_ERROR(TYPE_ERROR, "loop: the body returns %zu values, fewer than %s%zu carried value%s", rt->nfields,
                      cond ? "the condition and " : "", nc, nc == 1 ? "" : "s");
  if (cond && !scalar_like(rt->fields[0], true))
    return kind_error(m, "the body's next condition (its result's field 0)", true, rt->fields[0]);
  size_t nscan = rt->nfields - hc - nc;
  const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, nc + nscan ? nc + nscan : 1);
  const loom_sym_expr **from = LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, e->u.loop.nlocals + 1);
  const loom_sym_expr **to = LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, e->u.loop.nlocals + 1);
  if (!f || !from || !to) return LOOM_OOM();
  /* each local a carried value's struct info uses becomes one fresh symbol of the binding, numbered
   * in the locals' name order: their order of first use in the text is not kept by printing (which
   * writes `W + H` as `H + W`), and a reparsed module must name them the same */
  const loom_sym_expr **by_name = LOOM_ARENA_ARRAY(&m->arena, const loom_sym_expr *, e->u.loop.nlocals + 1);
  if (!by_name) return LOOM_OOM();
  if (e->u.loop.nlocals) memcpy(by_name, e->u.loop.locals, e->u.loop.nlocals * sizeof *by_name);
  qsort(by_name, e->u.loop.nlocals, sizeof *by_name, by_var_name);
  size_t n = 0;
  for (size_t k = 0; k < e->u.loop.nlocals; k++) {
    const loom_sym_expr *v = by_name[k];
    bool used = false;
    for (size_t i = 0; i < nc && !used; i++) used = sinfo_uses(e->u.loop.params[i]->sinfo, v);
    if (!used) continue;
    from[n] = v;
    if (!(to[n++] = loom_graph_fresh_sym(m, hint, loom_sym_var_name(v)))) return loom_sym_ctx_take_error(cx);
  }
  for (size_t i = 0; i < nc; i++) {
    const loom_sinfo *p = e->u.loop.params[i]->sinfo;
    if (!(f[i] = n ? loom_graph_sinfo_subst(m, p, from, to, n) : p)) return LOOM_OOM();
  }
  /* stacked scan items: (iterations, item dims...), a dim that names a symbol of the body fresh */
  symset body;
  loom_map_init(&body.set, m->alloc);
  body.oom = false;
  if (nscan) {
    add_cb(&body, e->u.loop.iter);
    for (size_t k = 0; k < e->u.loop.nlocals; k++) add_cb(&body, e->u.loop.locals[k]);
    body_vars(e->u.loop.body, &body, m->alloc);
  }
  loom_status st = body.oom ? LOOM_OOM() : LOOM_OK;
  const loom_sym_expr *iters = NULL;
  if (!cond && count && (count->kind == LOOM_GRAPH_EXPR_SYM || count->sinfo->kind == LOOM_SINFO_SCALAR)) {
    const loom_sym_expr *c = count->kind == LOOM_GRAPH_EXPR_SYM ? count->u.sym : count->sinfo->value;
    if (c) iters = loom_sym_prove_le(cx, loom_sym_const(cx, 0), c) == LOOM_SYM_TRUE ? c : loom_sym_max(cx, c, loom_sym_const(cx, 0));
  }
  for (size_t j = 0; j < nscan && !st; j++) {
    const loom_sinfo *s = rt->fields[hc + nc + j];
    if (s->kind != LOOM_SINFO_TENSOR || s->ndim < 0 || (s->ndim > 0 && !s->dims) || s->ndim >= 8 ||
        s->dtype == LOOM_DTYPE_UNKNOWN) {
      st = LOOM_ERROR(TYPE_ERROR, "loop: scan item %zu (the body's result field %zu) must be a tensor of known dtype and "
                      "rank below 8 to be stacked, not %s", j, hc + nc + j, loom_graph_sinfo_kind_word(s));
      break;
    }
    if (!iters && !(iters = loom_graph_fresh_sym(m, hint, "n"))) st = loom_sym_ctx_take_error(cx);
    const loom_sym_expr **d = st ? NULL : loom_graph_dims_new(m, (size_t)s->ndim + 1);
    if (!st && !d) st = LOOM_OOM();
    if (st) break;
    d[0] = iters;
    for (int k = 0; k < s->ndim && !st; k++) {
      uses_ctx u = {&body, false};
      loom_sym_for_each_var(s->dims[k], uses_cb, &u);
      d[k + 1] = u.hit ? loom_graph_fresh_sym(m, hint, "s") : s->dims[k];
      if (!d[k + 1]) st = loom_sym_ctx_take_error(cx);
    }
    if (!st && !(f[nc + j] = loom_sinfo_tensor(m, s->dtype, s->ndim + 1, d, s->device))) st = LOOM_OOM();
  }
  loom_map_destroy(&body.set);
  if (st) return st;
  *out = loom_sinfo_tuple(m, nc + nscan, f);
  return *out ? LOOM_OK : LOOM_OOM();
}

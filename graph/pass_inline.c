/* pass_inline.c — two rewrites that expose a module's weights to the constant passes
 * (docs/passes.md "inline"):
 *  - loom_graph_inline_const_calls: a call of a graph function that passes a constant (a
 *    layer function called with its weights) is replaced by a copy of the callee's bindings,
 *    its parameters read as the arguments and its symbolic vars as the arguments' dims, so
 *    that fold, pack and the others see the weights where they are used;
 *  - loom_graph_bind_params: parameters of a function given values at compile time (the
 *    weights `loom serve` binds from a weights file) become module constants. */
#include <stdio.h>
#include <string.h>

#include "graph/pass_internal.h"

/* Most rounds of inlining (a callee's own calls of constant-taking functions are inlined in
 * the next round); a recursive function stops here. */
#define INLINE_MAX_ROUNDS 8

/* A list of bindings (a block being rebuilt). */
typedef LOOM_VEC(loom_graph_binding *) binding_vec;

/* The copy of one call's callee: its vars and symbols in the caller's terms. */
typedef struct inliner {
  loom_graph_module *m;
  loom_graph_expr **vars;            /* callee var id -> the caller's leaf (NULL: not yet bound) */
  uint32_t nvars;                    /* entries of vars */
  LOOM_VEC(const loom_sym_expr *) from; /* the callee's symbolic vars ... */
  LOOM_VEC(const loom_sym_expr *) to;   /* ... and the caller's expressions for them */
  const char *prefix;                /* the call's var name: names of the copies are prefix_name */
} inliner;

/* Records that callee symbol `v` is `e` in the caller; false when v was already bound to an
 * expression not provably equal (the call does not fit the callee: it is left as it is). */
static bool bind_sym(inliner *in, const loom_sym_expr *v, const loom_sym_expr *e, bool *oom) {
  for (size_t q = 0; q < in->from.len; q++)
    if (in->from.data[q] == v) return loom_sym_prove_eq(in->m->cx, in->to.data[q], e) == LOOM_SYM_TRUE;
  if (!LOOM_VEC_PUSH(in->m->alloc, &in->from, v) || !LOOM_VEC_PUSH(in->m->alloc, &in->to, e)) *oom = true;
  return !*oom;
}

/* Maps the callee's parameter symbols onto the arguments' dims: every parameter dim must be a
 * constant or a symbolic var (the usual signature); false when one is not, or the argument
 * has another rank, or a var would stand for two different dims. */
static bool bind_params_syms(inliner *in, const loom_graph_func *f, const loom_graph_expr *call, bool *oom) {
  if (call->u.call.nargs != f->nparams) return false;
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_sinfo *p = f->params[i]->sinfo, *a = call->u.call.args[i]->sinfo;
    if (p->kind == LOOM_SINFO_TUPLE) return false;
    if (p->kind == LOOM_SINFO_SCALAR && p->value) {
      if (!loom_sym_is_var(p->value) || a->kind != LOOM_SINFO_SCALAR || !a->value) return false;
      if (!bind_sym(in, p->value, a->value, oom)) return false;
    }
    if ((p->kind != LOOM_SINFO_TENSOR && p->kind != LOOM_SINFO_SHAPE) || !p->dims) continue;
    if (!a->dims || a->ndim != p->ndim) return false;
    for (int k = 0; k < p->ndim; k++) {
      int64_t c;
      if (loom_sym_is_const(p->dims[k], &c)) continue;
      if (!loom_sym_is_var(p->dims[k]) || !bind_sym(in, p->dims[k], a->dims[k], oom)) return false;
    }
  }
  return true;
}

/* Whether f's body can be copied into a block (dataflow: `into_dataflow`): plain bindings of
 * leaves, tuples, tuple-gets, operator calls and graph-function calls; no match_cast (it would
 * define symbols), no control flow, no tensor-program or external call. */
static bool inlinable(const loom_graph_func *f, bool into_dataflow) {
  for (size_t bi = 0; bi < f->body->nblocks; bi++) {
    const loom_graph_block *blk = f->body->blocks[bi];
    if (into_dataflow && !blk->dataflow) return false;
    for (size_t i = 0; i < blk->n; i++) {
      const loom_graph_binding *b = blk->bindings[i];
      const loom_graph_expr *v = b->value;
      if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind == LOOM_GRAPH_EXPR_IF || v->kind == LOOM_GRAPH_EXPR_LOOP) return false;
      if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee != LOOM_GRAPH_CALLEE_OP &&
          v->u.call.callee != LOOM_GRAPH_CALLEE_FUNC)
        return false;
    }
  }
  return true;
}

/* The caller's symbolic expression for callee expression e. */
static const loom_sym_expr *map_sym(inliner *in, const loom_sym_expr *e) {
  return in->from.len ? loom_sym_subst(in->m->cx, e, in->from.data, in->to.data, in->from.len) : e;
}

/* The caller's leaf for callee leaf e. */
static loom_graph_expr *map_leaf(inliner *in, loom_graph_expr *e) {
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR: return e->u.var.id < in->nvars ? in->vars[e->u.var.id] : NULL;
  case LOOM_GRAPH_EXPR_SHAPE: {
    const loom_sym_expr **d = loom_graph_dims_new(in->m, e->u.shape.n);
    if (!d) return NULL;
    for (size_t k = 0; k < e->u.shape.n; k++)
      if (!(d[k] = map_sym(in, e->u.shape.dims[k]))) return NULL;
    return loom_graph_shape_new(in->m, e->u.shape.n, d);
  }
  case LOOM_GRAPH_EXPR_SYM: {
    const loom_sym_expr *s = map_sym(in, e->u.sym);
    return s ? loom_graph_sym_new(in->m, s) : NULL;
  }
  default: return e; /* a constant: the same data, constant dims */
  }
}

/* The caller's copy of callee value v (a leaf, tuple, tuple-get or call), without struct info
 * for calls (inferred by the caller). */
static loom_graph_expr *map_value(inliner *in, const loom_graph_expr *v) {
  loom_graph_module *m = in->m;
  loom_arena *a = loom_graph_module_arena(m);
  if (loom_graph_expr_is_leaf(v)) return map_leaf(in, (loom_graph_expr *)v);
  if (v->kind == LOOM_GRAPH_EXPR_TUPLE_GET) {
    loom_graph_expr *t = map_leaf(in, v->u.get.tuple);
    return t ? loom_graph_tuple_get_new(m, t, v->u.get.index) : NULL;
  }
  size_t n = v->kind == LOOM_GRAPH_EXPR_TUPLE ? v->u.tuple.n : v->u.call.nargs;
  loom_graph_expr *const *src = v->kind == LOOM_GRAPH_EXPR_TUPLE ? v->u.tuple.items : v->u.call.args;
  loom_graph_expr **items = LOOM_ARENA_ARRAY(a, loom_graph_expr *, n ? n : 1);
  if (!items) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!(items[i] = map_leaf(in, src[i]))) return NULL;
  if (v->kind == LOOM_GRAPH_EXPR_TUPLE) return loom_graph_tuple_new(m, n, items);
  loom_graph_attr *at = LOOM_ARENA_ARRAY(a, loom_graph_attr, v->u.call.nattrs ? v->u.call.nattrs : 1);
  if (!at) return NULL;
  for (size_t i = 0; i < v->u.call.nattrs; i++) {
    at[i] = v->u.call.attrs[i];
    if (at[i].kind != LOOM_GRAPH_ATTR_SYMS || !in->from.len) continue;
    const loom_sym_expr **s = loom_graph_dims_new(m, at[i].n);
    if (!s) return NULL;
    for (size_t k = 0; k < at[i].n; k++)
      if (!(s[k] = map_sym(in, at[i].syms[k]))) return NULL;
    at[i].syms = s;
  }
  loom_graph_expr *c = loom_pass_call_copy(m, v, n, items, v->u.call.nattrs, at);
  if (c) c->sinfo = NULL;
  return c;
}

/* A binding `name = value` in the caller, value's struct info inferred there (with its guards). */
static loom_status new_binding(loom_graph_module *m, loom_graph_expr *value, const char *name, loom_loc loc,
                               loom_graph_binding **out) {
  loom_graph_binding *bd = LOOM_ARENA_NEW(loom_graph_module_arena(m), loom_graph_binding);
  if (!bd || !value) return LOOM_OOM();
  bd->kind = LOOM_GRAPH_BIND_VAR;
  bd->value = value;
  bd->loc = loc;
  if (value->kind == LOOM_GRAPH_EXPR_CALL) {
    loom_graph_infer_result r;
    LOOM_RETURN_IF_ERROR(loom_graph_infer_call(m, value, name, &r), "while inlining '%s'", name);
    value->sinfo = r.sinfo;
    bd->nguards = r.nguards;
    bd->guards = r.guards;
    bd->guard_why = r.guard_why;
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE) {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), const loom_sinfo *, value->u.tuple.n ? value->u.tuple.n : 1);
    if (!f) return LOOM_OOM();
    for (size_t i = 0; i < value->u.tuple.n; i++) f[i] = value->u.tuple.items[i]->sinfo;
    value->sinfo = loom_sinfo_tuple(m, value->u.tuple.n, f);
  } else if (value->kind == LOOM_GRAPH_EXPR_TUPLE_GET) {
    const loom_sinfo *t = value->u.get.tuple->sinfo;
    if (t->kind != LOOM_SINFO_TUPLE || value->u.get.index >= t->nfields)
      return LOOM_ERROR(INTERNAL, "while inlining '%s': a tuple-get of a non-tuple", name);
    value->sinfo = t->fields[value->u.get.index];
  }
  if (!value->sinfo) return LOOM_OOM();
  bd->var = loom_graph_var_new(m, name, value->sinfo);
  *out = bd;
  return bd->var ? LOOM_OK : LOOM_OOM();
}

/* Appends to `out` the copy of f's bindings for `call` (bound by b), then `b.var = result`.
 * *done false: the call does not fit (nothing appended). */
static loom_status inline_call(inliner *in, const loom_graph_func *f, const loom_graph_binding *b,
                               binding_vec *out, bool *done) {
  loom_graph_module *m = in->m;
  const loom_graph_expr *call = b->value;
  *done = false;
  in->from.len = in->to.len = 0;
  bool oom = false;
  if (!bind_params_syms(in, f, call, &oom)) return oom ? LOOM_OOM() : LOOM_OK;
  memset(in->vars, 0, in->nvars * sizeof *in->vars);
  for (size_t i = 0; i < f->nparams; i++) in->vars[f->params[i]->u.var.id] = call->u.call.args[i];
  in->prefix = b->var->u.var.name;
  char name[256];
  for (size_t bi = 0; bi < f->body->nblocks; bi++) {
    const loom_graph_block *blk = f->body->blocks[bi];
    for (size_t i = 0; i < blk->n; i++) {
      const loom_graph_binding *cb = blk->bindings[i];
      snprintf(name, sizeof name, "%s_%s", in->prefix, cb->var->u.var.name);
      loom_graph_binding *nb;
      LOOM_PROPAGATE(new_binding(m, map_value(in, cb->value), name, cb->loc, &nb));
      in->vars[cb->var->u.var.id] = nb->var;
      if (!LOOM_VEC_PUSH(m->alloc, out, nb)) return LOOM_OOM();
    }
  }
  /* the call's own var reads the callee's result (normalize propagates the copy) */
  loom_graph_binding *last = LOOM_ARENA_NEW(loom_graph_module_arena(m), loom_graph_binding);
  loom_graph_expr *res = map_leaf(in, f->body->result);
  if (!last || !res) return LOOM_OOM();
  *last = *b;
  last->value = res;
  last->nguards = 0;
  if (!LOOM_VEC_PUSH(m->alloc, out, last)) return LOOM_OOM();
  *done = true;
  return LOOM_OK;
}

/* Whether call v passes a constant to a graph function of m other than `self`. */
static loom_graph_func *const_call_target(loom_graph_module *m, const loom_graph_expr *v, const loom_graph_func *self) {
  if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_FUNC) return NULL;
  bool has_const = false;
  for (size_t i = 0; i < v->u.call.nargs; i++) has_const |= v->u.call.args[i]->kind == LOOM_GRAPH_EXPR_CONST;
  loom_graph_func *f = has_const ? loom_graph_module_find_func(m, v->u.call.target) : NULL;
  return f == self ? NULL : f;
}

/* One round over the top-level blocks of every function. */
static loom_status inline_round(loom_graph_module *m, size_t *count) {
  inliner in = {.m = m};
  loom_status st = LOOM_OK;
  binding_vec out = {0};
  for (size_t fi = 0; fi < loom_graph_module_num_funcs(m) && !st; fi++) {
    loom_graph_func *f = loom_graph_module_func_at(m, fi);
    for (size_t bi = 0; bi < f->body->nblocks && !st; bi++) {
      loom_graph_block *blk = f->body->blocks[bi];
      out.len = 0;
      size_t here = 0;
      for (size_t i = 0; i < blk->n && !st; i++) {
        loom_graph_binding *b = blk->bindings[i];
        loom_graph_func *g = const_call_target(m, b->value, f);
        bool done = false;
        if (g && inlinable(g, blk->dataflow)) {
          uint32_t nv = loom_graph_module_num_var_ids(m);
          if (nv > in.nvars) {
            loom_graph_expr **nvp = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_expr *, nv);
            if (!nvp) st = LOOM_OOM();
            in.vars = nvp, in.nvars = nv;
          }
          if (!st) st = inline_call(&in, g, b, &out, &done);
          if (st) st = loom_status_annotate(st, __FILE__, __LINE__, "while inlining the call of @%s in @%s", g->name, f->name);
          here += done;
        }
        if (!st && !done && !LOOM_VEC_PUSH(m->alloc, &out, b)) st = LOOM_OOM();
      }
      if (!st && here) {
        loom_graph_binding **bs = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_binding *, out.len);
        if (!bs) st = LOOM_OOM();
        else {
          memcpy(bs, out.data, out.len * sizeof *bs);
          blk->bindings = bs;
          blk->n = out.len;
          *count += here;
        }
      }
    }
    if (!st) st = loom_pass_fix_outputs(m, f->body);
  }
  LOOM_VEC_FREE(m->alloc, &out);
  LOOM_VEC_FREE(m->alloc, &in.from);
  LOOM_VEC_FREE(m->alloc, &in.to);
  return st;
}

loom_status loom_graph_inline_const_calls(loom_graph_module *m, size_t *out_changed) {
  size_t total = 0;
  for (int r = 0; r < INLINE_MAX_ROUNDS; r++) {
    size_t n = 0;
    LOOM_PROPAGATE(inline_round(m, &n));
    total += n;
    if (!n) break;
  }
  if (out_changed) *out_changed = total;
  return LOOM_OK;
}

/* ---- parameters bound to constants ---------------------------------------------------------- */

/* What bind_params's walk substitutes: the function and its params' replacements. */
typedef struct bind_state {
  const loom_graph_func *f;       /* the function whose params are bound */
  size_t n;                       /* params bound */
  const size_t *index;            /* their positions in f's params */
  loom_graph_expr *const *values; /* their constants */
} bind_state;

/* At the start of the bound function: each bound param reads its constant. */
static void bind_begin(loom_pass *p) {
  bind_state *s = p->ud;
  if (p->f != s->f) return;
  for (size_t i = 0; i < s->n; i++)
    if (!loom_map_put(&p->subst, s->f->params[s->index[i]]->u.var.id, (uint64_t)(uintptr_t)s->values[i])) return;
}

loom_status loom_graph_bind_params(loom_graph_module *m, const char *func, size_t n, const char *const *names,
                                   const loom_sinfo *const *sinfos, const void *const *data, size_t *out_bound) {
  if (out_bound) *out_bound = 0;
  loom_graph_func *f = loom_graph_module_find_func(m, func);
  if (!f) return LOOM_ERROR(NOT_FOUND, "no function @%s to bind parameters of", func);
  loom_arena *a = loom_graph_module_arena(m);
  size_t *index = LOOM_ARENA_ARRAY(a, size_t, n ? n : 1);
  loom_graph_expr **values = LOOM_ARENA_ARRAY(a, loom_graph_expr *, n ? n : 1);
  bool *bound = LOOM_ARENA_ARRAY(a, bool, f->nparams ? f->nparams : 1);
  if (!index || !values || !bound) return LOOM_OOM();
  memset(bound, 0, (f->nparams ? f->nparams : 1) * sizeof *bound);
  for (size_t i = 0; i < n; i++) {
    size_t k = 0;
    while (k < f->nparams && strcmp(f->params[k]->u.var.name, names[i])) k++;
    if (k == f->nparams) return LOOM_ERROR(NOT_FOUND, "@%s has no parameter '%s' to bind", func, names[i]);
    if (bound[k]) return LOOM_ERROR(INVALID_ARGUMENT, "parameter '%s' of @%s is bound twice", names[i], func);
    const loom_sinfo *p = f->params[k]->sinfo, *si = sinfos[i];
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || loom_sinfo_is_base_of(m->cx, p, si) != LOOM_SYM_TRUE) {
      loom_strbuf x, y;
      loom_strbuf_init(&x, NULL);
      loom_strbuf_init(&y, NULL);
      loom_sinfo_print(p, &x);
      loom_sinfo_print(si, &y);
      loom_status st = LOOM_ERROR(TYPE_ERROR, "parameter '%s' of @%s is %s; the value bound to it is %s", names[i], func,
                                  loom_strbuf_cstr(&x), loom_strbuf_cstr(&y));
      loom_strbuf_free(&x);
      loom_strbuf_free(&y);
      return st;
    }
    size_t elems = 1;
    for (int d = 0; d < si->ndim; d++) {
      int64_t c = 0;
      loom_sym_is_const(si->dims[d], &c);
      elems *= (size_t)c;
    }
    values[i] = loom_graph_const_borrow(m, si, data[i], elems * loom_dtype_size(si->dtype));
    if (!values[i]) return LOOM_OOM();
    LOOM_RETURN_IF_ERROR(loom_graph_module_add_const(m, names[i], values[i]), "while binding parameter '%s' of @%s", names[i], func);
    index[i] = k;
    bound[k] = true;
  }
  bind_state s = {f, n, index, values};
  loom_pass p = {.m = m, .begin = bind_begin, .ud = &s};
  LOOM_PROPAGATE(loom_pass_run(&p));
  size_t w = 0;
  loom_graph_expr **params = (loom_graph_expr **)f->params;
  for (size_t k = 0; k < f->nparams; k++)
    if (!bound[k]) params[w++] = params[k];
  f->nparams = w;
  if (out_bound) *out_bound = n;
  return LOOM_OK;
}

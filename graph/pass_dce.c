/* pass_dce.c — dead-code elimination (loom_graph_dce).
 *
 * Liveness runs backwards over each function from its result. A binding is live when
 *   - its var is used by live code, or
 *   - it has an effect: a match_cast (a run-time check that defines symbols), an
 *     external call, a call of a graph function that (transitively) makes one, an `if`
 *     whose branches or a loop whose body hold such a binding, or
 *   - it defines a symbolic var (first occurrence in its struct info, e.g. the fresh
 *     count of nonzero) that live code uses — after fold turns shape_of(nz) into
 *     shape(2, nz_nnz0), `nz` stays although no var reads it.
 * Guards belong to the computation they protect: a dead guarded binding goes with its
 * guard. Module constants that no function uses are removed too. */
#include <string.h>

#include "graph/pass_internal.h"

typedef struct dce_state {
  loom_map live_vars;  /* var id -> 1 */
  loom_map live_syms;  /* symbolic var -> 1 */
  loom_map sym_def;    /* symbolic var -> the binding where it first occurs (0: a parameter) */
  loom_map live;       /* binding -> 1 */
  bool oom;
} dce_state;

/* ---- effects ------------------------------------------------------------------------- */

static bool seq_has_effects(const loom_graph_module *m, const loom_graph_seq *s, int depth);

static bool binding_has_effects(const loom_graph_module *m, const loom_graph_binding *b, int depth) {
  const loom_graph_expr *v = b->value;
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST) return true;
  if (v->kind == LOOM_GRAPH_EXPR_IF)
    return seq_has_effects(m, v->u.if_.then_seq, depth) || seq_has_effects(m, v->u.if_.else_seq, depth);
  if (v->kind == LOOM_GRAPH_EXPR_LOOP) return seq_has_effects(m, v->u.loop.body, depth);
  if (v->kind != LOOM_GRAPH_EXPR_CALL) return false;
  if (v->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN) return true;
  if (v->u.call.callee == LOOM_GRAPH_CALLEE_FUNC) {
    const loom_graph_func *f = loom_graph_module_find_func(m, v->u.call.target);
    /* Deep (or recursive) call chains are assumed to have effects. */
    return !f || depth > 16 || seq_has_effects(m, f->body, depth + 1);
  }
  return false;
}

static bool seq_has_effects(const loom_graph_module *m, const loom_graph_seq *s, int depth) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      const loom_graph_binding *b = s->blocks[i]->bindings[j];
      /* A match_cast inside a called function checks that function's own values; what
       * matters to the caller is whether the call can do something beyond its result. */
      if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST && depth > 0) continue;
      if (binding_has_effects(m, b, depth)) return true;
    }
  return false;
}

/* ---- symbol definitions (forward) ------------------------------------------------------ */

typedef struct def_walk {
  dce_state *d;
  const loom_graph_binding *b; /* NULL: a parameter */
} def_walk;

static void def_cb(void *ud, const loom_sym_expr *var) {
  def_walk *w = ud;
  if (loom_map_contains(&w->d->sym_def, (uint64_t)(uintptr_t)var)) return;
  if (!loom_map_put(&w->d->sym_def, (uint64_t)(uintptr_t)var, (uint64_t)(uintptr_t)w->b)) w->d->oom = true;
}

static void sinfo_vars(const loom_sinfo *si, void (*fn)(void *, const loom_sym_expr *), void *ud) {
  if (!si) return;
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], fn, ud);
  if (si->value) loom_sym_for_each_var(si->value, fn, ud);
  for (size_t i = 0; i < si->nfields; i++) sinfo_vars(si->fields[i], fn, ud);
  sinfo_vars(si->ret, fn, ud);
}

static void defs_seq(dce_state *d, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      const loom_graph_binding *b = s->blocks[i]->bindings[j];
      if (b->value->kind == LOOM_GRAPH_EXPR_IF) {
        defs_seq(d, b->value->u.if_.then_seq);
        defs_seq(d, b->value->u.if_.else_seq);
      } else if (b->value->kind == LOOM_GRAPH_EXPR_LOOP) { /* the loop defines its body's own symbols */
        def_walk lw = {d, b};
        def_cb(&lw, b->value->u.loop.iter);
        for (size_t k = 0; k < b->value->u.loop.nlocals; k++) def_cb(&lw, b->value->u.loop.locals[k]);
        defs_seq(d, b->value->u.loop.body);
      }
      def_walk w = {d, b};
      sinfo_vars(b->var->sinfo, def_cb, &w);
    }
}

/* ---- liveness (backward) ------------------------------------------------------------------ */

static void use_sym_cb(void *ud, const loom_sym_expr *var) {
  dce_state *d = ud;
  if (!loom_map_put(&d->live_syms, (uint64_t)(uintptr_t)var, 1)) d->oom = true;
}

static void use_leaf(dce_state *d, const loom_graph_expr *e) {
  if (e->kind == LOOM_GRAPH_EXPR_VAR) {
    if (!loom_map_put(&d->live_vars, e->u.var.id, 1)) d->oom = true;
  } else if (e->kind == LOOM_GRAPH_EXPR_SHAPE) {
    for (size_t i = 0; i < e->u.shape.n; i++) loom_sym_for_each_var(e->u.shape.dims[i], use_sym_cb, d);
  } else if (e->kind == LOOM_GRAPH_EXPR_SYM) {
    loom_sym_for_each_var(e->u.sym, use_sym_cb, d);
  }
}

typedef struct defines_walk {
  dce_state *d;
  const loom_graph_binding *b;
  bool hit;
} defines_walk;

static void defines_cb(void *ud, const loom_sym_expr *var) {
  defines_walk *w = ud;
  uint64_t def;
  if (loom_map_contains(&w->d->live_syms, (uint64_t)(uintptr_t)var) &&
      loom_map_get(&w->d->sym_def, (uint64_t)(uintptr_t)var, &def) && def == (uint64_t)(uintptr_t)w->b)
    w->hit = true;
}

static void live_seq(const loom_graph_module *m, dce_state *d, const loom_graph_seq *s);

static void live_binding(const loom_graph_module *m, dce_state *d, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  defines_walk w = {d, b, false};
  sinfo_vars(b->var->sinfo, defines_cb, &w);
  if (!loom_map_contains(&d->live_vars, b->var->u.var.id) && !w.hit && !binding_has_effects(m, b, 0)) return;
  if (!loom_map_put(&d->live, (uint64_t)(uintptr_t)b, 1)) d->oom = true;
  sinfo_vars(b->var->sinfo, use_sym_cb, d);
  for (size_t i = 0; i < b->nguards; i++) loom_sym_for_each_var(b->guards[i], use_sym_cb, d);
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < v->u.call.nargs; i++) use_leaf(d, v->u.call.args[i]);
    for (size_t i = 0; i < v->u.call.nattrs; i++)
      if (v->u.call.attrs[i].kind == LOOM_GRAPH_ATTR_SYMS)
        for (size_t k = 0; k < v->u.call.attrs[i].n; k++) loom_sym_for_each_var(v->u.call.attrs[i].syms[k], use_sym_cb, d);
    sinfo_vars(v->u.call.out_sinfo, use_sym_cb, d);
    break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) use_leaf(d, v->u.tuple.items[i]);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    use_leaf(d, v->u.get.tuple);
    break;
  case LOOM_GRAPH_EXPR_IF:
    use_leaf(d, v->u.if_.cond);
    live_seq(m, d, v->u.if_.then_seq);
    live_seq(m, d, v->u.if_.else_seq);
    break;
  case LOOM_GRAPH_EXPR_LOOP:
    if (v->u.loop.count) use_leaf(d, v->u.loop.count);
    if (v->u.loop.cond) use_leaf(d, v->u.loop.cond);
    for (size_t i = 0; i < v->u.loop.ncarry; i++) {
      use_leaf(d, v->u.loop.inits[i]);
      sinfo_vars(v->u.loop.params[i]->sinfo, use_sym_cb, d);
    }
    live_seq(m, d, v->u.loop.body); /* the body's result (every field) is used by the next iteration */
    break;
  default:
    use_leaf(d, v);
    break;
  }
}

static void live_seq(const loom_graph_module *m, dce_state *d, const loom_graph_seq *s) {
  use_leaf(d, s->result);
  for (size_t i = s->nblocks; i-- > 0;)
    for (size_t j = s->blocks[i]->n; j-- > 0;) live_binding(m, d, s->blocks[i]->bindings[j]);
}

static void begin(loom_pass *p) {
  dce_state *d = p->ud;
  loom_map_clear(&d->live_vars);
  loom_map_clear(&d->live_syms);
  loom_map_clear(&d->sym_def);
  loom_map_clear(&d->live);
  def_walk w = {d, NULL};
  for (size_t i = 0; i < p->f->nparams; i++) sinfo_vars(p->f->params[i]->sinfo, def_cb, &w);
  defs_seq(d, p->f->body);
  sinfo_vars(p->f->ret, use_sym_cb, d);
  live_seq(p->m, d, p->f->body);
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  dce_state *d = p->ud;
  if (d->oom) return LOOM_OOM();
  if (!loom_map_contains(&d->live, (uint64_t)(uintptr_t)b)) {
    *drop = true;
    p->changed++;
  }
  return LOOM_OK;
}

/* ---- module constants -------------------------------------------------------------------- */

static void const_leaf(loom_map *used, const loom_graph_expr *e, bool *oom) {
  if (e && e->kind == LOOM_GRAPH_EXPR_CONST && e->u.cnst.name && !loom_map_put(used, (uint64_t)(uintptr_t)e->u.cnst.name, 1))
    *oom = true;
}

static void const_seq(loom_map *used, const loom_graph_seq *s, bool *oom) {
  const_leaf(used, s->result, oom);
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) {
      const loom_graph_expr *v = s->blocks[i]->bindings[j]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL)
        for (size_t k = 0; k < v->u.call.nargs; k++) const_leaf(used, v->u.call.args[k], oom);
      else if (v->kind == LOOM_GRAPH_EXPR_TUPLE)
        for (size_t k = 0; k < v->u.tuple.n; k++) const_leaf(used, v->u.tuple.items[k], oom);
      else if (v->kind == LOOM_GRAPH_EXPR_IF) {
        const_leaf(used, v->u.if_.cond, oom);
        const_seq(used, v->u.if_.then_seq, oom);
        const_seq(used, v->u.if_.else_seq, oom);
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        if (v->u.loop.count) const_leaf(used, v->u.loop.count, oom);
        if (v->u.loop.cond) const_leaf(used, v->u.loop.cond, oom);
        for (size_t k = 0; k < v->u.loop.ncarry; k++) const_leaf(used, v->u.loop.inits[k], oom);
        const_seq(used, v->u.loop.body, oom);
      } else const_leaf(used, v, oom);
    }
}

static loom_status drop_unused_consts(loom_graph_module *m, size_t *changed) {
  loom_map used;
  loom_map_init(&used, m->alloc);
  bool oom = false;
  for (size_t i = 0; i < m->funcs.len; i++) const_seq(&used, m->funcs.data[i]->body, &oom);
  size_t k = 0;
  for (size_t i = 0; i < m->consts.len && !oom; i++) {
    if (loom_map_contains(&used, (uint64_t)(uintptr_t)m->consts.data[i].name)) m->consts.data[k++] = m->consts.data[i];
    else (*changed)++;
  }
  if (!oom) m->consts.len = k;
  loom_map_destroy(&used);
  return oom ? LOOM_OOM() : LOOM_OK;
}

loom_status loom_graph_dce(loom_graph_module *m, size_t *out_changed) {
  dce_state d = {0};
  loom_map_init(&d.live_vars, m->alloc);
  loom_map_init(&d.live_syms, m->alloc);
  loom_map_init(&d.sym_def, m->alloc);
  loom_map_init(&d.live, m->alloc);
  loom_pass p = {.m = m, .visit = visit, .begin = begin, .ud = &d};
  loom_status st = loom_pass_run(&p);
  size_t changed = p.changed;
  if (!st && d.oom) st = LOOM_OOM();
  if (!st) st = drop_unused_consts(m, &changed);
  loom_map_destroy(&d.live_vars);
  loom_map_destroy(&d.live_syms);
  loom_map_destroy(&d.sym_def);
  loom_map_destroy(&d.live);
  if (out_changed) *out_changed = changed;
  return st;
}

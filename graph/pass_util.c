/* pass_util.c — the walk every graph pass uses (see pass_internal.h).
 *
 * The walk visits bindings in program order. Before a binding is visited, each use in
 * its value is replaced by the var's replacement, if an earlier visit gave it one; a
 * call whose operands changed is re-inferred so its guards stay exact. The walk keeps
 * the symbolic vars in scope the way the verifier does (params, then the first
 * occurrence in each binding's struct info; an `if` branch's own symbols end with it, and a
 * loop's iteration var, locals and body symbols with its body),
 * so a pass can check that a rewrite never uses a symbol above its definition. */
#include <stdio.h>
#include <string.h>

#include "graph/pass_internal.h"

/* ---- symbol scope ------------------------------------------------------------------------ */

typedef struct scope_walk {
  loom_pass *p;
  bool define; /* add vars not in scope */
  bool ok;     /* every var in scope (when not defining) */
} scope_walk;

static bool has_sym(loom_pass *p, const loom_sym_expr *v) {
  for (size_t i = 0; i < p->syms.len; i++)
    if (p->syms.data[i] == v) return true;
  return false;
}

static void scope_cb(void *ud, const loom_sym_expr *var) {
  scope_walk *w = ud;
  if (has_sym(w->p, var)) return;
  if (w->define) {
    if (!LOOM_VEC_PUSH(w->p->m->alloc, &w->p->syms, var)) w->ok = false;
  } else {
    w->ok = false;
  }
}

static void scope_sinfo(scope_walk *w, const loom_sinfo *si) {
  if (!si) return;
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], scope_cb, w);
  if (si->value) loom_sym_for_each_var(si->value, scope_cb, w);
  for (size_t i = 0; i < si->nfields; i++) scope_sinfo(w, si->fields[i]);
  scope_sinfo(w, si->ret);
}

bool loom_pass_sym_in_scope(loom_pass *p, const loom_sym_expr *e) {
  scope_walk w = {p, false, true};
  if (e) loom_sym_for_each_var(e, scope_cb, &w);
  return w.ok;
}

bool loom_pass_sinfo_in_scope(loom_pass *p, const loom_sinfo *si) {
  scope_walk w = {p, false, true};
  scope_sinfo(&w, si);
  return w.ok;
}

bool loom_pass_leaf_in_scope(loom_pass *p, const loom_graph_expr *leaf) {
  switch (leaf->kind) {
  case LOOM_GRAPH_EXPR_SHAPE:
    for (size_t i = 0; i < leaf->u.shape.n; i++)
      if (!loom_pass_sym_in_scope(p, leaf->u.shape.dims[i])) return false;
    return true;
  case LOOM_GRAPH_EXPR_SYM:
    return loom_pass_sym_in_scope(p, leaf->u.sym);
  default:
    return true; /* vars are scoped by the walk itself; constants have constant shapes */
  }
}

static loom_status define_sinfo(loom_pass *p, const loom_sinfo *si) {
  scope_walk w = {p, true, true};
  scope_sinfo(&w, si);
  return w.ok ? LOOM_OK : LOOM_OOM();
}

/* ---- rewriting helpers --------------------------------------------------------------------- */

void loom_pass_replace_var(loom_pass *p, loom_graph_binding *b, loom_graph_expr *leaf, bool *ok) {
  *ok = false;
  if (!loom_graph_expr_is_leaf(leaf) || leaf == b->var) return;
  if (loom_sinfo_is_base_of(p->cx, b->var->sinfo, leaf->sinfo) != LOOM_SYM_TRUE) return;
  if (!loom_pass_leaf_in_scope(p, leaf)) return;
  if (!loom_map_put(&p->subst, b->var->u.var.id, (uint64_t)(uintptr_t)leaf)) return;
  p->changed++;
  *ok = true;
}

loom_status loom_pass_set_value(loom_pass *p, loom_graph_binding *b, loom_graph_expr *v, bool *ok) {
  *ok = false;
  loom_graph_infer_result r;
  loom_status st = loom_graph_infer_call(p->m, v, b->var->u.var.name, &r);
  if (st) {
    /* A rewrite the operator refuses is simply not made. */
    if (loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) return st;
    loom_status_free(st);
    return LOOM_OK;
  }
  if (b->kind != LOOM_GRAPH_BIND_VAR || loom_sinfo_is_base_of(p->cx, b->var->sinfo, r.sinfo) != LOOM_SYM_TRUE ||
      !loom_pass_sinfo_in_scope(p, r.sinfo))
    return LOOM_OK;
  v->sinfo = r.sinfo;
  b->value = v;
  b->nguards = r.nguards;
  b->guards = r.guards;
  b->guard_why = r.guard_why;
  p->changed++;
  *ok = true;
  return LOOM_OK;
}

loom_graph_binding *loom_pass_producer(loom_pass *p, const loom_graph_expr *e) {
  uint64_t v;
  if (e->kind != LOOM_GRAPH_EXPR_VAR || !loom_map_get(&p->producer, e->u.var.id, &v)) return NULL;
  return (loom_graph_binding *)(uintptr_t)v;
}

const loom_graph_expr *loom_pass_producer_op(loom_pass *p, const loom_graph_expr *e, loom_graph_op op) {
  loom_graph_binding *b = loom_pass_producer(p, e);
  if (!b || b->kind != LOOM_GRAPH_BIND_VAR || b->value->kind != LOOM_GRAPH_EXPR_CALL ||
      b->value->u.call.callee != LOOM_GRAPH_CALLEE_OP || b->value->u.call.op != op)
    return NULL;
  return b->value;
}

loom_graph_expr *loom_pass_call_copy(loom_graph_module *m, const loom_graph_expr *c, size_t nargs,
                                     loom_graph_expr *const *args, size_t nattrs, const loom_graph_attr *attrs) {
  loom_arena *a = loom_graph_module_arena(m);
  loom_graph_expr *e = LOOM_ARENA_NEW(a, loom_graph_expr);
  loom_graph_expr **na = LOOM_ARENA_ARRAY(a, loom_graph_expr *, nargs ? nargs : 1);
  loom_graph_attr *nt = LOOM_ARENA_ARRAY(a, loom_graph_attr, nattrs ? nattrs : 1);
  if (!e || !na || !nt) return NULL;
  *e = *c;
  for (size_t i = 0; i < nargs; i++) na[i] = args[i];
  for (size_t i = 0; i < nattrs; i++) nt[i] = attrs[i];
  e->u.call.nargs = nargs;
  e->u.call.args = na;
  e->u.call.nattrs = nattrs;
  e->u.call.attrs = nt;
  return e;
}

const char *loom_pass_const_name(loom_pass *p, const char *what, char *buf, size_t cap) {
  for (unsigned k = 0;; k++) {
    if (k) snprintf(buf, cap, "%s_%s_%u", p->f->name, what, k);
    else snprintf(buf, cap, "%s_%s", p->f->name, what);
    bool taken = false;
    for (size_t i = 0; i < loom_graph_module_num_consts(p->m) && !taken; i++)
      taken = !strcmp(loom_graph_module_const_at(p->m, i)->name, buf);
    if (!taken) return buf;
  }
}

bool loom_pass_const_all(const loom_graph_expr *c, double v) {
  if (c->kind != LOOM_GRAPH_EXPR_CONST || c->sinfo->kind != LOOM_SINFO_TENSOR || c->sinfo->dtype == LOOM_DTYPE_UNKNOWN)
    return false;
  size_t es = loom_dtype_size(c->sinfo->dtype), n = es ? c->u.cnst.nbytes / es : 0;
  loom_graph_tensor t = {.dtype = c->sinfo->dtype, .data = c->u.cnst.data};
  for (size_t i = 0; i < n; i++)
    if (loom_graph_tensor_get_f64(&t, i) != v) return false;
  return n > 0;
}

/* ---- substitution ------------------------------------------------------------------------------ */

static loom_graph_expr *subst_leaf(loom_pass *p, loom_graph_expr *e) {
  uint64_t v;
  if (e && e->kind == LOOM_GRAPH_EXPR_VAR && loom_map_get(&p->subst, e->u.var.id, &v)) return (loom_graph_expr *)(uintptr_t)v;
  return e;
}

static loom_status walk_seq(loom_pass *p, loom_graph_seq *s);

/* Substitutes the uses in b's value (copy on write); re-infers a call whose operands changed. */
static loom_status subst_binding(loom_pass *p, loom_graph_binding *b) {
  loom_graph_module *m = p->m;
  loom_graph_expr *v = b->value;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL: {
    size_t n = v->u.call.nargs;
    bool changed = false;
    for (size_t i = 0; i < n; i++) changed |= subst_leaf(p, v->u.call.args[i]) != v->u.call.args[i];
    if (!changed) return LOOM_OK;
    loom_graph_expr *args[256];
    if (n > 256) return LOOM_ERROR(UNIMPLEMENTED, "a call of more than 256 operands");
    for (size_t i = 0; i < n; i++) args[i] = subst_leaf(p, v->u.call.args[i]);
    loom_graph_expr *c = loom_pass_call_copy(m, v, n, args, v->u.call.nattrs, v->u.call.attrs);
    if (!c) return LOOM_OOM();
    b->value = c;
    /* The operands are the same values (equal or more precise struct info): the old guards
     * stay valid; take the new ones when inference still fits the binding. */
    loom_graph_infer_result r;
    loom_status st = loom_graph_infer_call(m, c, b->var->u.var.name, &r);
    if (!st && loom_sinfo_is_base_of(p->cx, b->var->sinfo, r.sinfo) == LOOM_SYM_TRUE && loom_pass_sinfo_in_scope(p, r.sinfo)) {
      c->sinfo = r.sinfo;
      b->nguards = r.nguards;
      b->guards = r.guards;
      b->guard_why = r.guard_why;
    } else if (st) {
      if (loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) return st;
      loom_status_free(st);
    }
    return LOOM_OK;
  }
  case LOOM_GRAPH_EXPR_TUPLE: {
    size_t n = v->u.tuple.n;
    bool changed = false;
    for (size_t i = 0; i < n; i++) changed |= subst_leaf(p, v->u.tuple.items[i]) != v->u.tuple.items[i];
    if (!changed) return LOOM_OK;
    loom_arena *a = loom_graph_module_arena(m);
    loom_graph_expr **items = LOOM_ARENA_ARRAY(a, loom_graph_expr *, n ? n : 1);
    const loom_sinfo **f = LOOM_ARENA_ARRAY(a, const loom_sinfo *, n ? n : 1);
    loom_graph_expr *t = LOOM_ARENA_NEW(a, loom_graph_expr);
    if (!items || !f || !t) return LOOM_OOM();
    for (size_t i = 0; i < n; i++) {
      items[i] = subst_leaf(p, v->u.tuple.items[i]);
      f[i] = items[i]->sinfo;
    }
    *t = *v;
    t->u.tuple.items = items;
    t->sinfo = loom_sinfo_tuple(m, n, f);
    if (!t->sinfo) return LOOM_OOM();
    b->value = t;
    return LOOM_OK;
  }
  case LOOM_GRAPH_EXPR_TUPLE_GET: {
    loom_graph_expr *t = subst_leaf(p, v->u.get.tuple);
    if (t == v->u.get.tuple) return LOOM_OK;
    loom_graph_expr *g = LOOM_ARENA_NEW(loom_graph_module_arena(m), loom_graph_expr);
    if (!g) return LOOM_OOM();
    *g = *v;
    g->u.get.tuple = t;
    if (t->sinfo->kind == LOOM_SINFO_TUPLE && v->u.get.index < t->sinfo->nfields) g->sinfo = t->sinfo->fields[v->u.get.index];
    b->value = g;
    return LOOM_OK;
  }
  case LOOM_GRAPH_EXPR_IF: {
    v->u.if_.cond = subst_leaf(p, v->u.if_.cond);
    size_t mark = p->syms.len;
    if (p->enter) p->enter(p);
    loom_status st = walk_seq(p, v->u.if_.then_seq);
    if (p->leave) p->leave(p);
    p->syms.len = mark;
    if (st) return st;
    if (p->enter) p->enter(p);
    st = walk_seq(p, v->u.if_.else_seq);
    if (p->leave) p->leave(p);
    p->syms.len = mark;
    return st;
  }
  case LOOM_GRAPH_EXPR_LOOP: {
    /* the leaves are replaced in place: a loop's value is this very expression */
    if (v->u.loop.count) v->u.loop.count = subst_leaf(p, v->u.loop.count);
    if (v->u.loop.cond) v->u.loop.cond = subst_leaf(p, v->u.loop.cond);
    loom_graph_expr **inits = (loom_graph_expr **)v->u.loop.inits;
    for (size_t i = 0; i < v->u.loop.ncarry; i++) inits[i] = subst_leaf(p, inits[i]);
    size_t mark = p->syms.len;
    loom_status st = LOOM_VEC_PUSH(m->alloc, &p->syms, v->u.loop.iter) ? LOOM_OK : LOOM_OOM();
    for (size_t i = 0; i < v->u.loop.nlocals && !st; i++)
      if (!LOOM_VEC_PUSH(m->alloc, &p->syms, v->u.loop.locals[i])) st = LOOM_OOM();
    if (!st) {
      if (p->enter) p->enter(p);
      st = walk_seq(p, v->u.loop.body);
      if (p->leave) p->leave(p);
    }
    p->syms.len = mark;
    return st;
  }
  default:
    b->value = subst_leaf(p, v);
    return LOOM_OK;
  }
}

static loom_status walk_seq(loom_pass *p, loom_graph_seq *s) {
  loom_graph_module *m = p->m;
  for (size_t bi = 0; bi < s->nblocks; bi++) {
    loom_graph_block *blk = s->blocks[bi];
    size_t cap = blk->n ? blk->n : 1, nk = 0;
    loom_graph_binding **kept = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_binding *, cap);
    if (!kept) return LOOM_OOM();
    for (size_t i = 0; i < blk->n; i++) {
      loom_graph_binding *b = blk->bindings[i];
      LOOM_PROPAGATE(subst_binding(p, b));
      bool drop = false;
      p->before.len = 0;
      if (p->visit) LOOM_PROPAGATE(p->visit(p, b, &drop));
      if (p->before.len) { /* what the visit added goes first (the block grows) */
        loom_graph_binding **k2 = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_binding *, cap + p->before.len);
        if (!k2) return LOOM_OOM();
        memcpy(k2, kept, nk * sizeof *kept);
        kept = k2, cap += p->before.len;
        for (size_t j = 0; j < p->before.len; j++) {
          loom_graph_binding *nb = p->before.data[j];
          kept[nk++] = nb;
          LOOM_PROPAGATE(define_sinfo(p, nb->var->sinfo));
          if (!loom_map_put(&p->producer, nb->var->u.var.id, (uint64_t)(uintptr_t)nb)) return LOOM_OOM();
        }
      }
      if (drop) continue;
      kept[nk++] = b;
      LOOM_PROPAGATE(define_sinfo(p, b->var->sinfo));
      if (!loom_map_put(&p->producer, b->var->u.var.id, (uint64_t)(uintptr_t)b)) return LOOM_OOM();
    }
    blk->bindings = kept;
    blk->n = nk;
  }
  s->result = subst_leaf(p, s->result);
  return LOOM_OK;
}

/* ---- dataflow outputs ---------------------------------------------------------------------------- */

static loom_status use_leaf(loom_map *used, const loom_graph_expr *e) {
  if (e && e->kind == LOOM_GRAPH_EXPR_VAR && !loom_map_put(used, e->u.var.id, 1)) return LOOM_OOM();
  return LOOM_OK;
}

static loom_status fix_seq(loom_graph_module *m, loom_graph_seq *s, loom_map *used);

/* Adds the vars b uses to `used` (recomputing the outputs of nested branches on the way). */
static loom_status use_binding(loom_graph_module *m, loom_graph_binding *b, loom_map *used) {
  const loom_graph_expr *v = b->value;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < v->u.call.nargs; i++) LOOM_PROPAGATE(use_leaf(used, v->u.call.args[i]));
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) LOOM_PROPAGATE(use_leaf(used, v->u.tuple.items[i]));
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    return use_leaf(used, v->u.get.tuple);
  case LOOM_GRAPH_EXPR_IF:
    LOOM_PROPAGATE(use_leaf(used, v->u.if_.cond));
    LOOM_PROPAGATE(fix_seq(m, v->u.if_.then_seq, used));
    return fix_seq(m, v->u.if_.else_seq, used);
  case LOOM_GRAPH_EXPR_LOOP:
    if (v->u.loop.count) LOOM_PROPAGATE(use_leaf(used, v->u.loop.count));
    if (v->u.loop.cond) LOOM_PROPAGATE(use_leaf(used, v->u.loop.cond));
    for (size_t i = 0; i < v->u.loop.ncarry; i++) LOOM_PROPAGATE(use_leaf(used, v->u.loop.inits[i]));
    return fix_seq(m, v->u.loop.body, used);
  default:
    return use_leaf(used, v);
  }
}

/* Walks s backwards: a block's outputs are its vars used after it. Vars are bound once, so
 * `used` only grows. */
static loom_status fix_seq(loom_graph_module *m, loom_graph_seq *s, loom_map *used) {
  LOOM_PROPAGATE(use_leaf(used, s->result));
  for (size_t bi = s->nblocks; bi-- > 0;) {
    loom_graph_block *blk = s->blocks[bi];
    if (blk->dataflow && blk->n) {
      loom_graph_expr **outs = LOOM_ARENA_ARRAY(loom_graph_module_arena(m), loom_graph_expr *, blk->n);
      if (!outs) return LOOM_OOM();
      size_t no = 0;
      for (size_t i = 0; i < blk->n; i++)
        if (loom_map_contains(used, blk->bindings[i]->var->u.var.id)) outs[no++] = blk->bindings[i]->var;
      /* The text format needs one output; a block kept for its match_casts exports its last var. */
      if (!no) outs[no++] = blk->bindings[blk->n - 1]->var;
      blk->outputs = outs;
      blk->noutputs = no;
    }
    for (size_t i = blk->n; i-- > 0;) LOOM_PROPAGATE(use_binding(m, blk->bindings[i], used));
  }
  size_t k = 0;
  loom_graph_block **blocks = (loom_graph_block **)s->blocks;
  for (size_t bi = 0; bi < s->nblocks; bi++)
    if (s->blocks[bi]->n) blocks[k++] = s->blocks[bi];
  s->nblocks = k;
  return LOOM_OK;
}

loom_status loom_pass_fix_outputs(loom_graph_module *m, loom_graph_seq *s) {
  loom_map used;
  loom_map_init(&used, m->alloc);
  loom_status st = fix_seq(m, s, &used);
  loom_map_destroy(&used);
  return st;
}

/* ---- the run ------------------------------------------------------------------------------------ */

loom_status loom_pass_run(loom_pass *p) {
  loom_graph_module *m = p->m;
  p->cx = m->cx;
  loom_map_init(&p->subst, m->alloc);
  loom_map_init(&p->producer, m->alloc);
  loom_status st = LOOM_OK;
  for (size_t fi = 0; fi < m->funcs.len && !st; fi++) {
    loom_graph_func *f = m->funcs.data[fi];
    p->f = f;
    loom_map_clear(&p->subst);
    loom_map_clear(&p->producer);
    p->syms.len = 0;
    if (p->begin) p->begin(p);
    for (size_t i = 0; i < f->nparams && !st; i++) st = define_sinfo(p, f->params[i]->sinfo);
    if (!st) st = walk_seq(p, f->body);
    if (!st) st = loom_pass_fix_outputs(m, f->body);
    if (st) st = loom_status_annotate(st, __FILE__, __LINE__, "in @%s", f->name);
  }
  loom_map_destroy(&p->subst);
  loom_map_destroy(&p->producer);
  LOOM_VEC_FREE(m->alloc, &p->syms);
  LOOM_VEC_FREE(m->alloc, &p->before);
  return st;
}

loom_status loom_pass_add_before(loom_pass *p, const loom_graph_binding *b, const char *suffix, loom_graph_expr *value,
                                 loom_graph_expr **out) {
  *out = NULL;
  loom_graph_infer_result r;
  loom_status st = loom_graph_infer_call(p->m, value, b->var->u.var.name, &r);
  if (st) return loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED ? st : (loom_status_free(st), LOOM_OK);
  char name[256];
  snprintf(name, sizeof name, "%s_%s", b->var->u.var.name, suffix);
  loom_graph_binding *nb = LOOM_ARENA_NEW(loom_graph_module_arena(p->m), loom_graph_binding);
  if (!nb || !(nb->var = loom_graph_var_new(p->m, name, r.sinfo))) return LOOM_OOM();
  value->sinfo = r.sinfo;
  value->loc = b->value->loc;
  nb->kind = LOOM_GRAPH_BIND_VAR;
  nb->value = value;
  nb->nguards = r.nguards;
  nb->guards = r.guards;
  nb->guard_why = r.guard_why;
  nb->loc = b->loc;
  if (!LOOM_VEC_PUSH(p->m->alloc, &p->before, nb)) return LOOM_OOM();
  *out = nb->var;
  return LOOM_OK;
}

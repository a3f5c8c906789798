/* pass_cse.c — common subexpression elimination (loom_graph_cse).
 *
 * A binding is a candidate when it is pure and deterministic: an operator call, a
 * call_tp, a tuple or a tuple-get (not a graph-function call, an external call, an `if`
 * or a match_cast). Two candidates are equal when their values are structurally equal
 * (same callee, operands, attributes, declared result) and their vars have the same
 * struct info — so a binding whose struct info names a fresh symbol of its own is never
 * merged into another that names a different one. The later binding's uses read the
 * earlier var, which is defined before them: nothing moves, so no symbol is used above
 * its match_cast. An `if` branch sees what was available before the `if`; what it binds
 * itself is forgotten after the branch. Dataflow outputs are recomputed afterwards, so an
 * earlier block exports the vars later blocks now read. */
#include <string.h>

#include "base/hash.h"
#include "graph/pass_internal.h"

typedef struct entry {
  uint64_t hash;
  const loom_graph_binding *b;
} entry;

typedef struct cse_state {
  LOOM_VEC(entry) avail;  /* available expressions, in program order */
  LOOM_VEC(size_t) marks; /* avail.len at each open `if` branch */
  bool oom;
} cse_state;

static uint64_t leaf_hash(const loom_graph_expr *e) {
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
    return loom_hash_combine(1, e->u.var.id);
  case LOOM_GRAPH_EXPR_CONST:
    if (e->u.cnst.name) return loom_hash_combine(2, (uint64_t)(uintptr_t)e->u.cnst.name);
    return loom_hash_combine(3, loom_hash_bytes(e->u.cnst.data, e->u.cnst.nbytes));
  case LOOM_GRAPH_EXPR_SHAPE: {
    uint64_t h = 4;
    for (size_t i = 0; i < e->u.shape.n; i++) h = loom_hash_combine(h, (uint64_t)(uintptr_t)e->u.shape.dims[i]);
    return h;
  }
  case LOOM_GRAPH_EXPR_SYM:
    return loom_hash_combine(5, (uint64_t)(uintptr_t)e->u.sym);
  default:
    return 6;
  }
}

static bool leaf_equal(const loom_graph_expr *a, const loom_graph_expr *b) {
  if (a == b) return true;
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case LOOM_GRAPH_EXPR_CONST:
    if (a->u.cnst.name || b->u.cnst.name) return a->u.cnst.name == b->u.cnst.name;
    return loom_sinfo_equal(a->sinfo, b->sinfo) && a->u.cnst.nbytes == b->u.cnst.nbytes &&
           !memcmp(a->u.cnst.data, b->u.cnst.data, a->u.cnst.nbytes);
  case LOOM_GRAPH_EXPR_SHAPE:
    if (a->u.shape.n != b->u.shape.n) return false;
    for (size_t i = 0; i < a->u.shape.n; i++)
      if (a->u.shape.dims[i] != b->u.shape.dims[i]) return false;
    return true;
  case LOOM_GRAPH_EXPR_SYM:
    return a->u.sym == b->u.sym;
  default:
    return false; /* vars: only the same var */
  }
}

static bool attr_equal(const loom_graph_attr *a, const loom_graph_attr *b) {
  if (a->name != b->name || a->kind != b->kind) return false;
  switch (a->kind) {
  case LOOM_GRAPH_ATTR_INT:
  case LOOM_GRAPH_ATTR_BOOL:
    return a->i == b->i;
  case LOOM_GRAPH_ATTR_FLOAT:
    return !memcmp(&a->f, &b->f, sizeof a->f);
  case LOOM_GRAPH_ATTR_STR:
    return !strcmp(a->s, b->s);
  case LOOM_GRAPH_ATTR_DTYPE:
    return a->dtype == b->dtype;
  case LOOM_GRAPH_ATTR_SYMS:
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
      if (a->syms[i] != b->syms[i]) return false;
    return true;
  case LOOM_GRAPH_ATTR_STRS:
    if (a->n != b->n) return false;
    for (size_t i = 0; i < a->n; i++)
      if (strcmp(a->strs[i], b->strs[i])) return false;
    return true;
  }
  return false;
}

static bool candidate(const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  if (b->kind != LOOM_GRAPH_BIND_VAR) return false;
  if (v->kind == LOOM_GRAPH_EXPR_TUPLE || v->kind == LOOM_GRAPH_EXPR_TUPLE_GET) return true;
  return v->kind == LOOM_GRAPH_EXPR_CALL &&
         (v->u.call.callee == LOOM_GRAPH_CALLEE_OP || v->u.call.callee == LOOM_GRAPH_CALLEE_TP);
}

static uint64_t value_hash(const loom_graph_expr *v) {
  uint64_t h = loom_hash_combine(7, (uint64_t)v->kind);
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    h = loom_hash_combine(h, (uint64_t)v->u.call.callee);
    h = loom_hash_combine(h, (uint64_t)v->u.call.op);
    h = loom_hash_combine(h, (uint64_t)(uintptr_t)v->u.call.target);
    for (size_t i = 0; i < v->u.call.nargs; i++) h = loom_hash_combine(h, leaf_hash(v->u.call.args[i]));
    return loom_hash_combine(h, v->u.call.nattrs);
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) h = loom_hash_combine(h, leaf_hash(v->u.tuple.items[i]));
    return h;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    return loom_hash_combine(loom_hash_combine(h, leaf_hash(v->u.get.tuple)), v->u.get.index);
  default:
    return h;
  }
}

static bool value_equal(const loom_graph_expr *a, const loom_graph_expr *b) {
  if (a->kind != b->kind) return false;
  switch (a->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    if (a->u.call.callee != b->u.call.callee || a->u.call.op != b->u.call.op || a->u.call.target != b->u.call.target ||
        a->u.call.nargs != b->u.call.nargs || a->u.call.nattrs != b->u.call.nattrs)
      return false;
    if ((a->u.call.out_sinfo || b->u.call.out_sinfo) && !loom_sinfo_equal(a->u.call.out_sinfo, b->u.call.out_sinfo))
      return false;
    for (size_t i = 0; i < a->u.call.nargs; i++)
      if (!leaf_equal(a->u.call.args[i], b->u.call.args[i])) return false;
    for (size_t i = 0; i < a->u.call.nattrs; i++)
      if (!attr_equal(&a->u.call.attrs[i], &b->u.call.attrs[i])) return false;
    return true;
  case LOOM_GRAPH_EXPR_TUPLE:
    if (a->u.tuple.n != b->u.tuple.n) return false;
    for (size_t i = 0; i < a->u.tuple.n; i++)
      if (!leaf_equal(a->u.tuple.items[i], b->u.tuple.items[i])) return false;
    return true;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    return a->u.get.index == b->u.get.index && leaf_equal(a->u.get.tuple, b->u.get.tuple);
  default:
    return false;
  }
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  cse_state *cs = p->ud;
  if (!candidate(b)) return LOOM_OK;
  uint64_t h = value_hash(b->value);
  for (size_t i = 0; i < cs->avail.len; i++) {
    const loom_graph_binding *e = cs->avail.data[i].b;
    if (cs->avail.data[i].hash != h || !loom_sinfo_equal(e->var->sinfo, b->var->sinfo) || !value_equal(e->value, b->value))
      continue;
    bool ok;
    loom_pass_replace_var(p, b, e->var, &ok);
    if (ok) {
      *drop = true;
      return LOOM_OK;
    }
  }
  entry en = {h, b};
  if (!LOOM_VEC_PUSH(p->m->alloc, &cs->avail, en)) return LOOM_OOM();
  return LOOM_OK;
}

static void enter(loom_pass *p) {
  cse_state *cs = p->ud;
  if (!LOOM_VEC_PUSH(p->m->alloc, &cs->marks, cs->avail.len)) cs->oom = true;
}

static void leave(loom_pass *p) {
  cse_state *cs = p->ud;
  if (cs->marks.len) cs->avail.len = LOOM_VEC_POP(&cs->marks);
}

static void begin(loom_pass *p) {
  cse_state *cs = p->ud;
  cs->avail.len = cs->marks.len = 0; /* functions are separate scopes */
}

loom_status loom_graph_cse(loom_graph_module *m, size_t *out_changed) {
  cse_state cs = {0};
  loom_pass p = {.m = m, .visit = visit, .begin = begin, .enter = enter, .leave = leave, .ud = &cs};
  loom_status st = loom_pass_run(&p);
  if (!st && cs.oom) st = LOOM_OOM();
  LOOM_VEC_FREE(m->alloc, &cs.avail);
  LOOM_VEC_FREE(m->alloc, &cs.marks);
  if (out_changed) *out_changed = p.changed;
  return st;
}

/* memplan.c — memory planning with symbolic sizes (see memplan.h for the rules). */
#include "graph/memplan.h"

#include <string.h>

#include "base/map.h"
#include "base/vec.h"
#include "graph/graph_internal.h"

/* A value's possible sources: planned tensors (>= 0) or params (-1 - index). */
typedef LOOM_VEC(int32_t) src_vec;

typedef struct analysis {
  loom_graph_module *m;
  loom_allocator *alloc;
  src_vec *srcs;               /* per var id */
  uint32_t nids;
  LOOM_VEC(const loom_graph_binding *) bindings;
  LOOM_VEC(int32_t) tensor_binding; /* per tensor: binding index */
  bool oom;
} analysis;

static bool src_add(analysis *a, src_vec *v, int32_t s) {
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == s) return true;
  if (!LOOM_VEC_PUSH(a->alloc, v, s)) a->oom = true;
  return !a->oom;
}

static src_vec *srcs_of(analysis *a, const loom_graph_expr *e) {
  if (!e || e->kind != LOOM_GRAPH_EXPR_VAR || e->u.var.id >= a->nids) return NULL;
  return &a->srcs[e->u.var.id];
}

static void src_union(analysis *a, src_vec *dst, const loom_graph_expr *e) {
  src_vec *s = srcs_of(a, e);
  if (!s || s == dst) return;
  for (size_t i = 0; i < s->len; i++) src_add(a, dst, s->data[i]);
}

static void analysis_free(analysis *a) {
  if (a->srcs)
    for (uint32_t i = 0; i < a->nids; i++) LOOM_VEC_FREE(a->alloc, &a->srcs[i]);
  loom_free(a->alloc, a->srcs, sizeof *a->srcs * a->nids);
  LOOM_VEC_FREE(a->alloc, &a->bindings);
  LOOM_VEC_FREE(a->alloc, &a->tensor_binding);
}

static loom_status analyze(loom_graph_module *m, size_t nparams, loom_graph_expr *const *params, const loom_graph_seq *body,
                           int depth, analysis *a);

/* Which params of callee `g` the result may alias (bit i: param i; all bits when unknown). */
static uint64_t callee_returns(loom_graph_module *m, const char *name, int depth) {
  const loom_graph_func *g = loom_graph_module_find_func(m, name);
  if (!g || depth > 8 || g->nparams > 64) return UINT64_MAX;
  analysis a = {0};
  uint64_t mask = 0;
  if (analyze(m, g->nparams, g->params, g->body, depth + 1, &a) || a.oom) mask = UINT64_MAX;
  else {
    src_vec *r = srcs_of(&a, g->body->result);
    for (size_t i = 0; r && i < r->len; i++)
      if (r->data[i] < 0) mask |= 1ull << (uint32_t)(-1 - r->data[i]);
  }
  analysis_free(&a);
  return mask;
}

typedef void (*use_fn)(void *ud, const loom_graph_expr *var);
static void seq_uses(const loom_graph_seq *s, use_fn fn, void *ud);
static void expr_uses(const loom_graph_expr *e, use_fn fn, void *ud);

/* A loop's value may alias what its body reads from outside (a carried value passed on, an
 * initial value when it runs no iteration): every var it uses adds its sources. */
typedef struct alias_ctx {
  analysis *a;
  src_vec *dst;
} alias_ctx;
static void alias_use(void *ud, const loom_graph_expr *var) {
  alias_ctx *c = ud;
  src_union(c->a, c->dst, var);
}

/* Sources of the value a binding defines. */
static void define(analysis *a, const loom_graph_binding *b, int depth) {
  src_vec *dst = srcs_of(a, b->var);
  const loom_graph_expr *v = b->value;
  if (!dst) return;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_VAR: src_union(a, dst, v); break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < v->u.tuple.n; i++) src_union(a, dst, v->u.tuple.items[i]);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: src_union(a, dst, v->u.get.tuple); break;
  case LOOM_GRAPH_EXPR_CALL:
    if (v->u.call.callee == LOOM_GRAPH_CALLEE_TP || v->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN) {
      int32_t t = (int32_t)a->tensor_binding.len;
      if (!LOOM_VEC_PUSH(a->alloc, &a->tensor_binding, (int32_t)(a->bindings.len - 1))) a->oom = true;
      src_add(a, dst, t);
    } else if (v->u.call.callee == LOOM_GRAPH_CALLEE_OP && loom_graph_op_is_view(v->u.call.op) && v->u.call.nargs) {
      src_union(a, dst, v->u.call.args[0]); /* a view shares its input's memory */
    } else if (v->u.call.callee == LOOM_GRAPH_CALLEE_OP && v->sinfo && (v->sinfo->kind == LOOM_SINFO_LIST ||
                                                                       v->u.call.op == LOOM_GRAPH_OP_LIST_GET)) {
      /* a list holds its operands' tensors, and list_get returns one of them (op_list.c) */
      for (size_t i = 0; i < v->u.call.nargs; i++) src_union(a, dst, v->u.call.args[i]);
    } else if (v->u.call.callee == LOOM_GRAPH_CALLEE_FUNC) {
      uint64_t mask = callee_returns(a->m, v->u.call.target, depth);
      for (size_t i = 0; i < v->u.call.nargs; i++)
        if (i >= 64 || (mask >> i & 1)) src_union(a, dst, v->u.call.args[i]);
    }
    break;
  case LOOM_GRAPH_EXPR_IF: /* either branch's result: whatever the branches may return */
    src_union(a, dst, v->u.if_.then_seq->result);
    src_union(a, dst, v->u.if_.else_seq->result);
    break;
  case LOOM_GRAPH_EXPR_LOOP: { /* its own tensors are made in its body (a plan of its own) */
    alias_ctx c = {a, dst};
    expr_uses(v, alias_use, &c);
    break;
  }
  default: break; /* constants, shapes, symbols: no planned storage */
  }
}

static loom_status analyze(loom_graph_module *m, size_t nparams, loom_graph_expr *const *params, const loom_graph_seq *body,
                           int depth, analysis *a) {
  a->m = m;
  a->alloc = m->alloc;
  a->nids = m->next_var_id;
  a->srcs = loom_alloc_zero(a->alloc, sizeof *a->srcs * (a->nids ? a->nids : 1));
  if (!a->srcs) return LOOM_OOM();
  for (size_t i = 0; i < nparams; i++) {
    src_vec *s = srcs_of(a, params[i]);
    if (s) src_add(a, s, -1 - (int32_t)i);
  }
  for (size_t bi = 0; bi < body->nblocks; bi++) {
    const loom_graph_block *blk = body->blocks[bi];
    for (size_t j = 0; j < blk->n; j++) {
      if (!LOOM_VEC_PUSH(a->alloc, &a->bindings, blk->bindings[j])) return LOOM_OOM();
      define(a, blk->bindings[j], depth);
    }
  }
  return a->oom ? LOOM_OOM() : LOOM_OK;
}

/* ---- uses ------------------------------------------------------------------ */

static void expr_uses(const loom_graph_expr *e, use_fn fn, void *ud) {
  if (!e) return;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR: fn(ud, e); break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < e->u.tuple.n; i++) expr_uses(e->u.tuple.items[i], fn, ud);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: expr_uses(e->u.get.tuple, fn, ud); break;
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < e->u.call.nargs; i++) expr_uses(e->u.call.args[i], fn, ud);
    break;
  case LOOM_GRAPH_EXPR_IF:
    expr_uses(e->u.if_.cond, fn, ud);
    seq_uses(e->u.if_.then_seq, fn, ud);
    seq_uses(e->u.if_.else_seq, fn, ud);
    break;
  case LOOM_GRAPH_EXPR_LOOP:
    expr_uses(e->u.loop.count, fn, ud);
    expr_uses(e->u.loop.cond, fn, ud);
    for (size_t i = 0; i < e->u.loop.ncarry; i++) expr_uses(e->u.loop.inits[i], fn, ud);
    seq_uses(e->u.loop.body, fn, ud);
    break;
  default: break;
  }
}

static void seq_uses(const loom_graph_seq *s, use_fn fn, void *ud) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) expr_uses(s->blocks[i]->bindings[j]->value, fn, ud);
  expr_uses(s->result, fn, ud);
}

typedef struct use_ctx {
  analysis *a;
  loom_memplan *p;
  uint32_t at;
  bool returned;
} use_ctx;

static void mark_use(void *ud, const loom_graph_expr *var) {
  use_ctx *u = ud;
  src_vec *s = srcs_of(u->a, var);
  for (size_t i = 0; s && i < s->len; i++) {
    if (s->data[i] < 0) continue;
    loom_memplan_tensor *t = &u->p->tensors[s->data[i]];
    if (t->last_use == LOOM_MEMPLAN_NONE || t->last_use < u->at) t->last_use = u->at;
    if (u->returned) t->output = true;
  }
}

/* ---- var definitions --------------------------------------------------------- */

typedef struct def_ctx {
  loom_map *defs;         /* var pointer -> binding index + 1 (0: params; a loop's iteration var and locals) */
  const loom_map *outer;  /* vars defined outside a loop's body (not its own), or NULL */
  uint64_t at;
  bool oom;
} def_ctx;

static void note_def(void *ud, const loom_sym_expr *var) {
  def_ctx *d = ud;
  if (d->outer && loom_map_contains(d->outer, (uint64_t)(uintptr_t)var)) return;
  if (!loom_map_contains(d->defs, (uint64_t)(uintptr_t)var) && !loom_map_put(d->defs, (uint64_t)(uintptr_t)var, d->at))
    d->oom = true;
}

static void sinfo_defs(const loom_sinfo *s, def_ctx *d) {
  if (!s) return;
  if (s->dims)
    for (int i = 0; i < s->ndim; i++) loom_sym_for_each_var(s->dims[i], note_def, d);
  if (s->value) loom_sym_for_each_var(s->value, note_def, d);
  for (size_t i = 0; i < s->nfields; i++) sinfo_defs(s->fields[i], d);
}

typedef struct late_ctx {
  const loom_map *defs;
  uint64_t limit; /* vars must be defined at or before this (index + 1) */
  bool late;
} late_ctx;

/* A var the plan does not define comes from outside a loop's body: defined before all of it. */
static void check_late(void *ud, const loom_sym_expr *var) {
  late_ctx *l = ud;
  uint64_t at = 0;
  if (loom_map_get(l->defs, (uint64_t)(uintptr_t)var, &at) && at > l->limit) l->late = true;
}

/* Whether an expression names a var the plan defines (in a loop's body: one of its own). */
typedef struct local_ctx {
  const loom_map *defs;
  bool local;
} local_ctx;

static void check_local(void *ud, const loom_sym_expr *var) {
  local_ctx *l = ud;
  if (loom_map_contains(l->defs, (uint64_t)(uintptr_t)var)) l->local = true;
}

/* ---- placement ---------------------------------------------------------------- */

static const loom_sym_expr *tensor_bytes(loom_sym_ctx *cx, const loom_sinfo *s) {
  if (!s || s->kind != LOOM_SINFO_TENSOR || !s->dims || s->dtype == LOOM_DTYPE_UNKNOWN) return NULL;
  const loom_sym_expr *n = loom_sym_const(cx, (int64_t)loom_dtype_size(s->dtype));
  for (int i = 0; i < s->ndim; i++) n = loom_sym_mul(cx, n, s->dims[i]);
  return n;
}

/* Picks a free storage for tensor t (see memplan.h), or LOOM_MEMPLAN_NONE. */
static uint32_t pick(loom_sym_ctx *cx, loom_memplan *p, const loom_map *defs, const loom_memplan_tensor *t,
                     const uint32_t *storage_end) {
  uint32_t best_ge = LOOM_MEMPLAN_NONE, best_le = LOOM_MEMPLAN_NONE, any = LOOM_MEMPLAN_NONE;
  for (uint32_t s = 0; s < p->nstorages; s++) {
    const loom_memplan_storage *st = &p->storages[s];
    if (st->output || storage_end[s] >= t->def) continue;
    late_ctx l = {defs, (uint64_t)st->first + 1, false};
    loom_sym_for_each_var(t->bytes, check_late, &l);
    if (l.late) continue;
    if (loom_sym_prove_le(cx, t->bytes, st->size) == LOOM_SYM_TRUE) {
      if (best_ge == LOOM_MEMPLAN_NONE || loom_sym_prove_le(cx, st->size, p->storages[best_ge].size) == LOOM_SYM_TRUE)
        best_ge = s;
    } else if (loom_sym_prove_le(cx, st->size, t->bytes) == LOOM_SYM_TRUE) {
      if (best_le == LOOM_MEMPLAN_NONE || loom_sym_prove_le(cx, p->storages[best_le].size, st->size) == LOOM_SYM_TRUE)
        best_le = s;
    } else if (any == LOOM_MEMPLAN_NONE) {
      any = s;
    }
  }
  return best_ge != LOOM_MEMPLAN_NONE ? best_ge : best_le != LOOM_MEMPLAN_NONE ? best_le : any;
}

/* A storage's size is the max of the distinct sizes of its tensors: `terms` keeps only
 * those no other term provably dominates, so the printed size stays readable. */
typedef LOOM_VEC(const loom_sym_expr *) term_vec;

static bool add_term(loom_sym_ctx *cx, loom_allocator *alloc, term_vec *t, const loom_sym_expr *need) {
  for (size_t i = 0; i < t->len; i++)
    if (loom_sym_prove_le(cx, need, t->data[i]) == LOOM_SYM_TRUE) return true;
  size_t k = 0;
  for (size_t i = 0; i < t->len; i++)
    if (loom_sym_prove_le(cx, t->data[i], need) != LOOM_SYM_TRUE) t->data[k++] = t->data[i];
  t->len = k;
  return LOOM_VEC_PUSH(alloc, t, need);
}

static const loom_sym_expr *max_of(loom_sym_ctx *cx, const term_vec *t) {
  const loom_sym_expr *m = t->data[0];
  for (size_t i = 1; i < t->len; i++) m = loom_sym_max(cx, m, t->data[i]);
  return m;
}

static loom_status place(loom_graph_module *m, loom_memplan *p, const loom_map *defs) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  p->storages = loom_arena_array(&p->arena, p->ntensors ? p->ntensors : 1, sizeof *p->storages, 8);
  uint32_t *end = loom_arena_array(&p->arena, p->ntensors ? p->ntensors : 1, sizeof *end, 4);
  term_vec *terms = loom_alloc_zero(m->alloc, sizeof *terms * (p->ntensors ? p->ntensors : 1));
  loom_status st = (!p->storages || !end || !terms) ? LOOM_OOM() : LOOM_OK;
  for (uint32_t i = 0; i < p->ntensors && !st; i++) {
    loom_memplan_tensor *t = &p->tensors[i];
    if (t->last_use == LOOM_MEMPLAN_NONE) t->last_use = t->def; /* never read: dies at once */
    uint32_t s = t->output ? LOOM_MEMPLAN_NONE : pick(cx, p, defs, t, end);
    if (s == LOOM_MEMPLAN_NONE) {
      s = p->nstorages++;
      p->storages[s] = (loom_memplan_storage){.first = t->def, .last = t->last_use, .output = t->output};
    } else if (t->last_use > p->storages[s].last) {
      p->storages[s].last = t->last_use;
    }
    if (!add_term(cx, m->alloc, &terms[s], t->bytes)) st = LOOM_OOM();
    else p->storages[s].size = max_of(cx, &terms[s]);
    end[s] = p->storages[s].last;
    p->storages[s].ntensors++;
    t->storage = s;
  }
  if (terms)
    for (uint32_t s = 0; s < p->ntensors; s++) LOOM_VEC_FREE(m->alloc, &terms[s]);
  loom_free(m->alloc, terms, sizeof *terms * (p->ntensors ? p->ntensors : 1));
  if (st) return st;
  const loom_sym_expr *peak = loom_sym_const(cx, 0), *naive = loom_sym_const(cx, 0);
  for (uint32_t s = 0; s < p->nstorages; s++) peak = loom_sym_add(cx, peak, p->storages[s].size);
  for (uint32_t i = 0; i < p->ntensors; i++) naive = loom_sym_add(cx, naive, p->tensors[i].bytes);
  p->peak = peak;
  p->naive = naive;
  if (!peak || !naive) return loom_sym_ctx_take_error(cx);
  return LOOM_OK;
}

static loom_status build(loom_graph_module *m, const loom_graph_func *f, const loom_graph_binding *loop_b,
                         const loom_map *outer, int depth, loom_memplan **out);
static loom_status loop_bytes(loom_graph_module *m, const loom_graph_binding *b, const loom_memplan *body,
                              const loom_sym_expr **out);

/* Bytes of the tensors made inside a branch (own storage each, not reused; nested ifs take
 * their larger branch; a loop there adds what its own plan holds). */
static loom_status seq_bytes(loom_graph_module *m, const loom_graph_seq *seq, int depth, const loom_sym_expr **out) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *sum = loom_sym_const(cx, 0);
  for (size_t i = 0; i < seq->nblocks; i++)
    for (size_t j = 0; j < seq->blocks[i]->n; j++) {
      const loom_graph_binding *b = seq->blocks[i]->bindings[j];
      const loom_graph_expr *v = b->value;
      const loom_sym_expr *x, *y;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(seq_bytes(m, v->u.if_.then_seq, depth, &x));
        LOOM_PROPAGATE(seq_bytes(m, v->u.if_.else_seq, depth, &y));
        sum = loom_sym_add(cx, sum, loom_sym_max(cx, x, y));
      } else if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        loom_memplan *body;
        LOOM_PROPAGATE(build(m, NULL, b, NULL, depth + 1, &body));
        loom_status st = loop_bytes(m, b, body, &x);
        loom_memplan_free(body);
        LOOM_PROPAGATE(st);
        sum = loom_sym_add(cx, sum, x);
      } else if (v->kind == LOOM_GRAPH_EXPR_CALL &&
               (v->u.call.callee == LOOM_GRAPH_CALLEE_TP || v->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN)) {
        const loom_sym_expr *t = tensor_bytes(cx, b->var->sinfo);
        if (t) sum = loom_sym_add(cx, sum, t);
      }
    }
  *out = sum;
  return sum ? LOOM_OK : loom_sym_ctx_take_error(cx);
}

/* ---- loops ---------------------------------------------------------------------- */

/* The struct info of field f of loop v's value as the body returns it (a scan item: one row). */
static const loom_sinfo *item_sinfo(const loom_graph_expr *v, size_t f) {
  const loom_sinfo *rt = v->u.loop.body->result ? v->u.loop.body->result->sinfo : NULL;
  size_t at = (v->u.loop.cond ? 1 : 0) + f;
  return rt && rt->kind == LOOM_SINFO_TUPLE && at < rt->nfields && rt->fields[at]->dims ? rt->fields[at] : NULL;
}

/* What loop binding b holds at most, from its body's plan: the body's peak (hoisted and
 * per-iteration storages, nested loops), once more every output storage (the carried values
 * of the last iteration stay live while the next ones are made: double buffering), and the
 * stacked scan items (their final size; with a condition, or items of a shape the body decides,
 * the stack grows by doubling: up to 3 n + 8 rows while it is copied). A carried value's
 * locals are counted at their final values (the loop's fresh symbols): exact for values that
 * grow, like a row appended per step. */
static loom_status loop_bytes(loom_graph_module *m, const loom_graph_binding *b, const loom_memplan *body,
                              const loom_sym_expr **out) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_graph_expr *v = b->value;
  const loom_sinfo *rs = b->var->sinfo;
  size_t nc = v->u.loop.ncarry, nscan = loom_graph_loop_nscan(v);
  const loom_sym_expr *t = body->peak;
  for (uint32_t s = 0; s < body->nstorages; s++)
    if (body->storages[s].output) t = loom_sym_add(cx, t, body->storages[s].size);
  for (size_t j = 0; rs->kind == LOOM_SINFO_TUPLE && j < nscan && nc + j < rs->nfields; j++) {
    const loom_sinfo *f = rs->fields[nc + j], *item = item_sinfo(v, nc + j);
    const loom_sym_expr *bytes = tensor_bytes(cx, f);
    if (!bytes) continue;
    bool grows = v->u.loop.cond != NULL; /* stacked in a growing buffer: with a condition, or items the body shapes */
    for (int d = 1; !grows && item && d < f->ndim && d - 1 < item->ndim; d++) grows = f->dims[d] != item->dims[d - 1];
    if (grows) { /* (3 n + 8) rows */
      const loom_sym_expr *row = loom_sym_const(cx, (int64_t)loom_dtype_size(f->dtype));
      for (int d = 1; d < f->ndim; d++) row = loom_sym_mul(cx, row, f->dims[d]);
      bytes = loom_sym_mul(cx, loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, 3), f->dims[0]), loom_sym_const(cx, 8)), row);
    }
    t = loom_sym_add(cx, t, bytes);
  }
  /* locals -> the fresh symbols the binding gave the final values */
  LOOM_VEC(const loom_sym_expr *) from = {0}, to = {0};
  bool ok = true;
  for (size_t i = 0; i < nc && ok && rs->kind == LOOM_SINFO_TUPLE && i < rs->nfields; i++) {
    const loom_sinfo *ps = v->u.loop.params[i]->sinfo, *fs = rs->fields[i];
    if (!ps->dims || !fs->dims || ps->ndim != fs->ndim) continue;
    for (int d = 0; d < ps->ndim && ok; d++) {
      bool local = false;
      for (size_t k = 0; k < v->u.loop.nlocals; k++) local = local || v->u.loop.locals[k] == ps->dims[d];
      if (local && ps->dims[d] != fs->dims[d])
        ok = LOOM_VEC_PUSH(m->alloc, &from, ps->dims[d]) && LOOM_VEC_PUSH(m->alloc, &to, fs->dims[d]);
    }
  }
  if (ok && from.len) t = loom_sym_subst(cx, t, from.data, to.data, from.len);
  LOOM_VEC_FREE(m->alloc, &from);
  LOOM_VEC_FREE(m->alloc, &to);
  if (!ok) return LOOM_OOM();
  *out = t ? loom_sym_simplify(cx, t) : NULL;
  return *out ? LOOM_OK : loom_sym_ctx_take_error(cx);
}

loom_status loom_memplan_build(loom_graph_module *m, const loom_graph_func *f, loom_memplan **out) {
  return build(m, f, NULL, NULL, 0, out);
}

loom_status loom_memplan_build_loop(loom_graph_module *m, const loom_graph_binding *b, loom_memplan **out) {
  *out = NULL;
  if (b->value->kind != LOOM_GRAPH_EXPR_LOOP) return LOOM_ERROR(INVALID_ARGUMENT, "binding '%s' is not a loop", b->var->u.var.name);
  return build(m, NULL, b, NULL, 1, out);
}

/* The plan of function f, or (f NULL) of the body of loop binding loop_b, whose symbols
 * defined outside it are `outer` (NULL: not known, so no storage is hoisted out of it). */
static loom_status build(loom_graph_module *m, const loom_graph_func *f, const loom_graph_binding *loop_b,
                         const loom_map *outer, int depth, loom_memplan **out) {
  *out = NULL;
  if (depth > 64) return LOOM_ERROR(UNIMPLEMENTED, "loops nest deeper than 64");
  const loom_graph_expr *lp = loop_b ? loop_b->value : NULL;
  const char *fname = f ? f->name : loop_b->var->u.var.name;
  size_t nparams = f ? f->nparams : lp->u.loop.ncarry;
  loom_graph_expr *const *params = f ? f->params : lp->u.loop.params;
  const loom_graph_seq *seq = f ? f->body : lp->u.loop.body;
  loom_memplan *p = loom_alloc_zero(m->alloc, sizeof *p);
  if (!p) return LOOM_OOM();
  loom_arena_init(&p->arena, m->alloc, 0);
  p->func = f;
  p->loop = loop_b;
  analysis a = {0};
  loom_map defs, merged;
  loom_map_init(&defs, m->alloc);
  loom_map_init(&merged, m->alloc);
  loom_status st = analyze(m, nparams, params, seq, 0, &a);
  if (st) goto done;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  p->nbindings = (uint32_t)a.bindings.len;
  p->ntensors = (uint32_t)a.tensor_binding.len;
  p->bindings = loom_arena_array(&p->arena, a.bindings.len + 1, sizeof *p->bindings, 8);
  p->tensor_of = loom_arena_array(&p->arena, a.bindings.len + 1, sizeof *p->tensor_of, 4);
  p->tensors = loom_arena_array(&p->arena, p->ntensors + 1, sizeof *p->tensors, 8);
  p->sub = loom_arena_array(&p->arena, a.bindings.len + 1, sizeof *p->sub, 8);
  if (!p->bindings || !p->tensor_of || !p->tensors || !p->sub) {
    st = LOOM_OOM();
    goto done;
  }
  if (a.bindings.len) memcpy(p->bindings, a.bindings.data, a.bindings.len * sizeof *p->bindings);
  for (uint32_t i = 0; i < p->nbindings; i++) p->tensor_of[i] = LOOM_MEMPLAN_NONE, p->sub[i] = NULL;
  /* var definitions: params at 0 (a loop's body: its iteration var and locals), then each
   * binding's struct info at index + 1 (a body: only the vars not defined outside it) */
  def_ctx dc = {&defs, outer, 0, false};
  if (f) {
    for (size_t i = 0; i < f->nparams; i++) sinfo_defs(f->params[i]->sinfo, &dc);
  } else {
    note_def(&dc, lp->u.loop.iter);
    for (size_t i = 0; i < lp->u.loop.nlocals; i++) note_def(&dc, lp->u.loop.locals[i]);
  }
  for (uint32_t i = 0; i < p->nbindings; i++) {
    dc.at = i + 1;
    sinfo_defs(p->bindings[i]->var->sinfo, &dc);
  }
  if (dc.oom) {
    st = LOOM_OOM();
    goto done;
  }
  for (uint32_t t = 0; t < p->ntensors; t++) {
    uint32_t bi = (uint32_t)a.tensor_binding.data[t];
    const loom_graph_binding *b = p->bindings[bi];
    const loom_sym_expr *bytes = tensor_bytes(cx, b->var->sinfo);
    if (!bytes) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      loom_sinfo_print(b->var->sinfo, &sb);
      st = LOOM_ERROR(UNIMPLEMENTED, "%s @%s binding '%s': cannot plan storage for %s (a dense tensor of known dtype and rank is needed)",
                      f ? "function" : "loop body of", fname, b->var->u.var.name, loom_strbuf_cstr(&sb));
      loom_strbuf_free(&sb);
      goto done;
    }
    p->tensors[t] = (loom_memplan_tensor){.binding = b, .bytes = bytes, .def = bi, .last_use = LOOM_MEMPLAN_NONE,
                                          .storage = LOOM_MEMPLAN_NONE};
    p->tensor_of[bi] = t;
  }
  use_ctx uc = {&a, p, 0, false};
  for (uint32_t i = 0; i < p->nbindings; i++) {
    uc.at = i;
    expr_uses(p->bindings[i]->value, mark_use, &uc);
  }
  uc.at = p->nbindings;
  uc.returned = true;
  expr_uses(seq->result, mark_use, &uc);
  st = place(m, p, &defs);
  /* a body's storage whose size uses no symbol of the body is allocated once, before the loop */
  for (uint32_t s = 0; !st && lp && outer && s < p->nstorages; s++) {
    local_ctx lc = {&defs, false};
    loom_sym_for_each_var(p->storages[s].size, check_local, &lc);
    p->storages[s].hoist = !p->storages[s].output && !lc.local;
  }
  /* tensors inside `if` branches: storage of their own, added to the peak; loops: their plans */
  p->branches = loom_sym_const(cx, 0);
  p->loops = loom_sym_const(cx, 0);
  if (!st && (outer || f)) { /* what the loops' bodies see defined outside them */
    uint64_t k, v;
    for (size_t it = 0; outer && loom_map_next(outer, &it, &k, &v);)
      if (!loom_map_put(&merged, k, v)) st = LOOM_OOM();
    for (size_t it = 0; !st && loom_map_next(&defs, &it, &k, &v);)
      if (!loom_map_put(&merged, k, v)) st = LOOM_OOM();
  }
  for (uint32_t i = 0; !st && i < p->nbindings; i++) {
    const loom_graph_expr *v = p->bindings[i]->value;
    const loom_sym_expr *x, *y;
    if (v->kind == LOOM_GRAPH_EXPR_IF) {
      st = seq_bytes(m, v->u.if_.then_seq, depth, &x);
      if (!st) st = seq_bytes(m, v->u.if_.else_seq, depth, &y);
      if (!st) p->branches = loom_sym_add(cx, p->branches, loom_sym_max(cx, x, y));
    }
    if (st || v->kind != LOOM_GRAPH_EXPR_LOOP) continue;
    st = build(m, NULL, p->bindings[i], (outer || f) ? &merged : NULL, depth + 1, &p->sub[i]);
    if (!st) st = loop_bytes(m, p->bindings[i], p->sub[i], &x);
    if (!st) p->loops = loom_sym_add(cx, p->loops, x);
  }
  if (!st) {
    p->peak = loom_sym_add(cx, loom_sym_add(cx, p->peak, p->branches), p->loops);
    if (!p->peak || !p->branches || !p->loops) st = loom_sym_ctx_take_error(cx);
  }
done:
  analysis_free(&a);
  loom_map_destroy(&defs);
  loom_map_destroy(&merged);
  if (st) {
    loom_memplan_free(p);
    return st;
  }
  *out = p;
  return LOOM_OK;
}

static loom_status total_peak(loom_graph_module *m, const loom_graph_func *f, int depth, const loom_sym_expr **out);

/* Adds to *total what the graph functions called in plan p (and in its loops' bodies) hold. */
static loom_status calls_peak(loom_graph_module *m, const loom_memplan *p, int depth, const loom_sym_expr **total) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_status st = LOOM_OK;
  for (uint32_t i = 0; i < p->nbindings && !st; i++) {
    const loom_graph_expr *v = p->bindings[i]->value;
    if (p->sub[i]) st = calls_peak(m, p->sub[i], depth, total);
    if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_FUNC) continue;
    const loom_graph_func *g = loom_graph_module_find_func(m, v->u.call.target);
    const loom_sym_expr *sub = NULL;
    st = g ? total_peak(m, g, depth + 1, &sub) : LOOM_ERROR(NOT_FOUND, "unknown function @%s", v->u.call.target);
    if (st) break;
    /* the callee's vars are its own: at this call they are the caller's arguments' dims */
    LOOM_VEC(const loom_sym_expr *) from = {0}, to = {0};
    for (size_t a = 0; a < g->nparams && a < v->u.call.nargs && !st; a++) {
      const loom_sinfo *ps = g->params[a]->sinfo, *as = v->u.call.args[a]->sinfo;
      if (!ps->dims || !as || !as->dims || ps->ndim != as->ndim) continue;
      for (int d = 0; d < ps->ndim; d++)
        if (loom_sym_is_var(ps->dims[d]) && (!LOOM_VEC_PUSH(NULL, &from, ps->dims[d]) || !LOOM_VEC_PUSH(NULL, &to, as->dims[d])))
          st = LOOM_OOM();
    }
    if (!st) *total = loom_sym_add(cx, *total, loom_sym_subst(cx, sub, from.data, to.data, from.len));
    LOOM_VEC_FREE(NULL, &from);
    LOOM_VEC_FREE(NULL, &to);
  }
  return st;
}

static loom_status total_peak(loom_graph_module *m, const loom_graph_func *f, int depth, const loom_sym_expr **out) {
  if (depth > 16) return LOOM_ERROR(UNIMPLEMENTED, "@%s: calls nest deeper than 16 (recursion?)", f->name);
  loom_memplan *p;
  LOOM_PROPAGATE(loom_memplan_build(m, f, &p));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *total = p->peak;
  loom_status st = calls_peak(m, p, depth, &total);
  loom_memplan_free(p);
  if (!st && !total) st = loom_sym_ctx_take_error(cx);
  *out = st ? NULL : total;
  return st;
}

loom_status loom_memplan_total_peak(loom_graph_module *m, const loom_graph_func *f, const loom_sym_expr **out) {
  return total_peak(m, f, 0, out);
}

void loom_memplan_free(loom_memplan *p) {
  if (!p) return;
  for (uint32_t i = 0; p->sub && i < p->nbindings; i++) loom_memplan_free(p->sub[i]);
  loom_allocator *alloc = p->arena.alloc;
  loom_arena_destroy(&p->arena);
  loom_free(alloc, p, sizeof *p);
}

static void at_text(const loom_memplan *p, uint32_t i, loom_strbuf *sb) {
  if (i >= p->nbindings) loom_strbuf_puts(sb, "return");
  else loom_strbuf_puts(sb, p->bindings[i]->var->u.var.name);
}

static void print_plan(const loom_memplan *p, int depth, loom_strbuf *sb) {
  for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
  if (p->func) loom_strbuf_printf(sb, "memory plan of @%s: %u tensors in %u storages\n", p->func->name, p->ntensors, p->nstorages);
  else loom_strbuf_printf(sb, "loop '%s', its body (planned once): %u tensors in %u storages\n", p->loop->var->u.var.name, p->ntensors, p->nstorages);
  for (uint32_t s = 0; s < p->nstorages; s++) {
    const loom_memplan_storage *st = &p->storages[s];
    for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
    loom_strbuf_printf(sb, "  storage s%u%s: ", s, st->output ? (p->func ? " (output)" : " (output, each iteration)")
                                                   : st->hoist ? " (allocated before the loop)" : "");
    loom_sym_print(st->size, sb);
    loom_strbuf_puts(sb, " bytes, ");
    at_text(p, st->first, sb);
    loom_strbuf_puts(sb, " .. ");
    at_text(p, st->last, sb);
    loom_strbuf_puts(sb, ": ");
    bool first = true;
    for (uint32_t t = 0; t < p->ntensors; t++) {
      if (p->tensors[t].storage != s) continue;
      loom_strbuf_printf(sb, "%s%s", first ? "" : ", ", p->tensors[t].binding->var->u.var.name);
      first = false;
    }
    loom_strbuf_puts(sb, "\n");
  }
  for (uint32_t i = 0; i < p->nbindings; i++)
    if (p->sub[i]) print_plan(p->sub[i], depth + 1, sb);
  int64_t zero;
  if (!loom_sym_is_const(p->branches, &zero) || zero) {
    for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
    loom_strbuf_puts(sb, "  tensors inside if branches (own storage): ");
    loom_sym_print(p->branches, sb);
    loom_strbuf_puts(sb, " bytes\n");
  }
  if (!loom_sym_is_const(p->loops, &zero) || zero) {
    for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
    loom_strbuf_puts(sb, "  loops (bodies, carried values twice, stacked scan items): ");
    loom_sym_print(p->loops, sb);
    loom_strbuf_puts(sb, " bytes\n");
  }
  for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
  loom_strbuf_puts(sb, "  peak = ");
  loom_sym_print(p->peak, sb);
  loom_strbuf_puts(sb, " bytes (without reuse: ");
  loom_sym_print(p->naive, sb);
  loom_strbuf_puts(sb, " bytes)\n");
}

void loom_memplan_print(const loom_memplan *p, loom_strbuf *sb) { print_plan(p, 0, sb); }

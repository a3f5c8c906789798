/* schedule_bcast.c — versioning a nest on its run-time broadcast tests (schedule_bcast.h). */
#include "tensorprog/schedule_bcast.h"

enum { MAX_GUARDS = 8, MAX_DEPTH = 16 };

/* The enclosing loops (variable, extent) while walking a nest. */
typedef struct walk {
  const loom_sym_expr *var[MAX_DEPTH], *ext[MAX_DEPTH];
  int depth;
  loom_sym_ctx *cx;
  bool rewrite;                                  /* false: collect; true: replace the selects the facts allow */
  const loom_sym_expr *x[MAX_GUARDS], *e[MAX_GUARDS];
  int n;
  bool full;                                     /* more guards than MAX_GUARDS: not versioned */
  const loom_sym_expr *only;                     /* collect only the selects indexing by this variable */
} walk;

/* `select(x == 1, 0, v)` with v an enclosing loop's variable: x and that loop's extent. */
static bool guard_select(const walk *w, const loom_tp_expr *s, const loom_sym_expr **x, const loom_sym_expr **ext) {
  if (s->kind != LOOM_TP_EXPR_SELECT) return false;
  const loom_tp_expr *c = s->u.select.cond, *t = s->u.select.then_e, *f = s->u.select.else_e;
  int64_t one = 0, zero = 1;
  if (c->kind != LOOM_TP_EXPR_OP || c->u.op.op != LOOM_TP_OP_EQ || c->u.op.args[0]->kind != LOOM_TP_EXPR_SYM ||
      c->u.op.args[1]->kind != LOOM_TP_EXPR_SYM || !loom_sym_is_const(c->u.op.args[1]->u.sym, &one) || one != 1 ||
      t->kind != LOOM_TP_EXPR_SYM || !loom_sym_is_const(t->u.sym, &zero) || zero != 0 || f->kind != LOOM_TP_EXPR_SYM)
    return false;
  for (int d = w->depth - 1; d >= 0; d--)
    if (w->var[d] == f->u.sym) {
      *x = c->u.op.args[0]->u.sym;
      *ext = w->ext[d];
      return true;
    }
  return false;
}

static void walk_expr(walk *w, loom_tp_expr **slot);

static void walk_index(walk *w, loom_tp_expr **slot) {
  const loom_sym_expr *x, *ext;
  if (!guard_select(w, *slot, &x, &ext)) {
    walk_expr(w, slot);
    return;
  }
  if (w->rewrite) {
    if (loom_sym_prove_eq(w->cx, x, ext) == LOOM_SYM_TRUE) *slot = (*slot)->u.select.else_e;
    return;
  }
  if (w->only && (*slot)->u.select.else_e->u.sym != w->only) return;
  for (int k = 0; k < w->n; k++)
    if (w->x[k] == x && w->e[k] == ext) return;
  if (w->n == MAX_GUARDS) w->full = true;
  else w->x[w->n] = x, w->e[w->n++] = ext;
}

static void walk_expr(walk *w, loom_tp_expr **slot) {
  loom_tp_expr *e = *slot;
  switch (e->kind) {
    case LOOM_TP_EXPR_LOAD:
      for (int d = 0; d < e->u.load.buf->ndim; d++) walk_index(w, &e->u.load.idx[d]);
      return;
    case LOOM_TP_EXPR_OP:
      for (int i = 0; i < loom_tp_op_arity(e->u.op.op); i++) walk_expr(w, &e->u.op.args[i]);
      return;
    case LOOM_TP_EXPR_CAST: walk_expr(w, &e->u.cast_arg); return;
    case LOOM_TP_EXPR_SELECT:
      walk_expr(w, &e->u.select.cond);
      walk_expr(w, &e->u.select.then_e);
      walk_expr(w, &e->u.select.else_e);
      return;
    default: return;
  }
}

static void walk_stmt(walk *w, loom_tp_stmt *s) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++) walk_stmt(w, s->u.seq.items[i]);
      return;
    case LOOM_TP_STMT_FOR:
      if (w->depth == MAX_DEPTH) {
        w->full = true;
        return;
      }
      w->var[w->depth] = s->u.loop.var, w->ext[w->depth++] = s->u.loop.extent;
      walk_stmt(w, s->u.loop.body);
      w->depth--;
      return;
    case LOOM_TP_STMT_STORE:
      for (int d = 0; d < s->u.store.buf->ndim; d++) walk_index(w, &s->u.store.idx[d]);
      walk_expr(w, &s->u.store.value);
      return;
    case LOOM_TP_STMT_LET: walk_expr(w, &s->u.let.value); return;
    case LOOM_TP_STMT_IF:
      walk_expr(w, &s->u.if_.cond);
      walk_stmt(w, s->u.if_.then_s);
      if (s->u.if_.else_s) walk_stmt(w, s->u.if_.else_s);
      return;
    default: return;
  }
}

typedef struct variant_ud {
  loom_sym_ctx *cx;
  loom_tp_schedule_fn schedule;
  void *ud;
} variant_ud;

/* The variant: the selects the guard's facts make plain indices, then the caller's schedule. */
static loom_status plain_indices(void *ud, loom_tp_func *view) {
  const variant_ud *v = ud;
  walk w = {.cx = v->cx, .rewrite = true};
  walk_stmt(&w, view->body);
  return v->schedule(v->ud, view);
}

loom_status loom_tp_version_bcast(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                  const loom_sym_expr *only, loom_tp_schedule_fn schedule, void *ud, int *nguards) {
  *nguards = 0;
  walk w = {.cx = cx, .only = only};
  walk_stmt(&w, *slot);
  if (!w.n || w.full) return LOOM_OK;
  const loom_sym_expr *guard = NULL;
  for (int k = 0; k < w.n; k++) {
    const loom_sym_expr *eq = loom_sym_cmp(cx, LOOM_SYM_EQ, w.x[k], w.e[k]);
    guard = guard && eq ? loom_sym_and(cx, guard, eq) : eq;
    if (!guard) return LOOM_OOM();
  }
  loom_tp_func view = *f;
  view.body = *slot;
  variant_ud vu = {cx, schedule, ud};
  LOOM_PROPAGATE(loom_tp_add_variant(a, cx, &view, guard, plain_indices, &vu));
  *slot = view.body;
  *nguards = w.n;
  return LOOM_OK;
}

/* schedule_matmul_bcast.c — rule 0 (the matmul rule) on a nest whose batch axes broadcast by a
 * run-time test (schedule_matmul_internal.h, docs/codegen.md "Schedule rules").
 *
 * The generators index an operand axis that may be 1 where the output's is not -- the legalizer's
 * GUARD mode (graph/legalize.c loom_legal_bcast_modes: extents not provably equal, a reshape's
 * `max(a, b)`, Swin's window attention after its mask) -- with `select(x == 1, 0, i)`. Such a load
 * is no row of an operand to the rule, and the nest ran as scalar loops (a 49 x 32 x 49 batched
 * matmul at 7 GFLOP/s). The nest is versioned instead:
 *     if x == E && .. { the nest, each such index i: the plain batched matmul, tiled }
 *     else { the nest as it was, its outermost loop parallel }
 * where E is the extent of i's loop. Under x == E the select is i: E == 1 leaves i == 0, the
 * select's value either way; else x != 1 picks i. */
#include <string.h>

#include "tensorprog/schedule_matmul_internal.h"

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
  loom_arena *a;
  loom_sym_ctx *cx;
  const loom_tp_cpu_params *p;
  loom_strbuf *why;
} variant_ud;

/* The variant: the selects the guard's facts make plain indices, then the rule; refused (the
 * program left as it was) unless the rule tiles it. */
static loom_status plain_batches(void *ud, loom_tp_func *view) {
  const variant_ud *v = ud;
  walk w = {.cx = v->cx, .rewrite = true};
  walk_stmt(&w, view->body);
  bool done;
  LOOM_PROPAGATE(loom_tpmm_schedule_plain(v->a, v->cx, view, &view->body, v->p, v->why, &done));
  return done ? LOOM_OK : LOOM_ERROR(FAILED_PRECONDITION, "the nest with plain batch indices is no matmul the rule tiles");
}

loom_status loom_tpmm_schedule_bcast(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                     const loom_tp_cpu_params *p, loom_strbuf *why, bool *done) {
  *done = false;
  walk w = {.cx = cx};
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
  loom_strbuf inner;
  loom_strbuf_init(&inner, NULL);
  variant_ud ud = {a, cx, p, &inner};
  loom_status st = loom_tp_add_variant(a, cx, &view, guard, plain_batches, &ud);
  if (!st) {
    /* the fallback (a batch axis that does broadcast): its outermost loop in parallel */
    loom_tp_stmt *fb = view.body->kind == LOOM_TP_STMT_IF ? view.body->u.if_.else_s : NULL;
    if (fb && fb->kind == LOOM_TP_STMT_FOR && !fb->u.loop.reduce && fb->u.loop.kind == LOOM_TP_LOOP_SERIAL) {
      loom_status ps = loom_tp_set_kind(cx, fb, LOOM_TP_LOOP_PARALLEL);
      loom_status_free(ps);
    }
    loom_strbuf_printf(why, "nest %s: batch axes broadcast by a run-time test (%d): versioned, where each equals its loop's "
                            "extent the plain batched matmul:\n%s", loom_sym_var_name((*slot)->u.loop.var), w.n, loom_strbuf_cstr(&inner));
    *slot = view.body;
    *done = true;
  } else if (loom_status_code(st) == LOOM_CODE_FAILED_PRECONDITION || loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) {
    loom_status_free(st);
    st = LOOM_OK;
  }
  loom_strbuf_free(&inner);
  return st;
}

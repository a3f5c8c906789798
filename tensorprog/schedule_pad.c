/* schedule_pad.c — rule 2a of the default CPU rules (tp_schedule_cpu.h): an innermost loop whose
 * body chooses between two stores by a range test, a constant pad's form
 *
 *   for v in 0..d { if C_out && v >= L && v - p < a .. { Y[.., v] = X[.., v - p] } else { Y[.., v] = c } }
 *
 * (C_out free of v; every term that reads v bounds it from one side: `v + o >= e`, `v + o > e`,
 * `v + o < e`, `v + o <= e`, either side, o and e free of v), is split by the range the terms
 * leave, so that no loop tests a condition per element and each of the three runs is a unit-stride
 * loop that rule 2 vectorises:
 *
 *   if C_out { for v in 0..lo { else[v] }  for w in 0..hi - lo { then[v := lo + w] }  for w in 0..d - hi { else[v := hi + w] } }
 *   else { for v in 0..d { else[v] } }
 *
 * lo = min(max(lower, 0), d), hi = max(min(upper, d), lo): exactly the v where the terms hold, so
 * each store runs on the elements it ran on before. Only an if with an else, both branches plain
 * stores (and lets) to the same buffer: a guard without an else (a masked tail) keeps its form. The
 * generic pad of a 28 x 28 x 64 u8 plane, whose loop tested all four axes per element, ran at
 * ~1 ns per element. */
#include <stdio.h>

#include "tensorprog/tp_schedule_cpu.h"

enum { MAX_TERMS = 16 };

static bool uses(const loom_sym_expr *e, const loom_sym_expr *v) { return loom_sym_uses_var(e, v); }

/* The terms of a conjunction (&& of bools), in order; false when more than MAX_TERMS. */
static bool terms_of(const loom_tp_expr *c, const loom_tp_expr **out, int *n) {
  if (c->kind == LOOM_TP_EXPR_OP && c->u.op.op == LOOM_TP_OP_AND && c->dtype == LOOM_DTYPE_BOOL)
    return terms_of(c->u.op.args[0], out, n) && terms_of(c->u.op.args[1], out, n);
  if (*n >= MAX_TERMS) return false;
  out[(*n)++] = c;
  return true;
}

/* Stores and lets only, every store to `y`. */
static bool plain_stores(const loom_tp_stmt *s, const loom_tp_buffer **y) {
  switch (s->kind) {
    case LOOM_TP_STMT_SEQ:
      for (size_t i = 0; i < s->u.seq.n; i++)
        if (!plain_stores(s->u.seq.items[i], y)) return false;
      return true;
    case LOOM_TP_STMT_STORE:
      if (*y && *y != s->u.store.buf) return false;
      *y = s->u.store.buf;
      return true;
    case LOOM_TP_STMT_LET: return true;
    default: return false;
  }
}

/* Folds a term that bounds v into [*lower, *upper); false when it is not such a term. */
static bool bound(loom_sym_ctx *cx, const loom_tp_expr *t, const loom_sym_expr *v, const loom_sym_expr **lower,
                  const loom_sym_expr **upper) {
  if (t->kind != LOOM_TP_EXPR_OP) return false;
  loom_tp_op op = t->u.op.op;
  if ((op != LOOM_TP_OP_GE && op != LOOM_TP_OP_GT && op != LOOM_TP_OP_LT && op != LOOM_TP_OP_LE) ||
      t->u.op.args[0]->kind != LOOM_TP_EXPR_SYM || t->u.op.args[1]->kind != LOOM_TP_EXPR_SYM)
    return false; /* a unary term (likely(..), !..) has no second operand */
  const loom_sym_expr *x = t->u.op.args[0]->u.sym, *y = t->u.op.args[1]->u.sym;
  if (uses(y, v)) { /* e cmp v + o: v + o cmp' e */
    const loom_sym_expr *s = x;
    x = y, y = s;
    op = op == LOOM_TP_OP_LT ? LOOM_TP_OP_GT : op == LOOM_TP_OP_LE ? LOOM_TP_OP_GE : op == LOOM_TP_OP_GT ? LOOM_TP_OP_LT
         : op == LOOM_TP_OP_GE ? LOOM_TP_OP_LE : op;
  }
  const loom_sym_expr *o = loom_sym_sub(cx, x, v); /* x = v + o */
  if (!o || uses(o, v) || uses(y, v)) return false;
  const loom_sym_expr *e = loom_sym_sub(cx, y, o), *one = loom_sym_const(cx, 1); /* v cmp e */
  if (!e) return false;
  switch (op) {
    case LOOM_TP_OP_GE: *lower = loom_sym_max(cx, *lower, e); break;
    case LOOM_TP_OP_GT: *lower = loom_sym_max(cx, *lower, loom_sym_add(cx, e, one)); break;
    case LOOM_TP_OP_LT: *upper = loom_sym_min(cx, *upper, e); break;
    default: *upper = loom_sym_min(cx, *upper, loom_sym_add(cx, e, one)); break; /* LE */
  }
  return *lower && *upper;
}

/* A loop of the fresh variable `name` over n running `body` with v := at + w. */
static loom_tp_stmt *run(loom_arena *a, loom_sym_ctx *cx, const loom_tp_stmt *body, const loom_sym_expr *v,
                         const loom_sym_expr *at, const loom_sym_expr *n, const char *name) {
  const loom_sym_expr *w = loom_sym_var_new(cx, name, LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *val = w && at ? loom_sym_add(cx, at, w) : NULL;
  loom_tp_stmt *b = val ? loom_tp_stmt_copy_subst(a, cx, body, &v, &val, 1) : NULL;
  return b && n ? loom_tp_for(a, w, n, LOOM_TP_LOOP_SERIAL, false, b) : NULL;
}

loom_status loom_tp_schedule_pad_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop,
                                      loom_strbuf *why, loom_tp_stmt **out) {
  *out = NULL;
  if (loop->kind != LOOM_TP_STMT_FOR || loop->u.loop.reduce || loop->u.loop.kind != LOOM_TP_LOOP_SERIAL) return LOOM_OK;
  const loom_tp_stmt *s = loop->u.loop.body;
  while (s->kind == LOOM_TP_STMT_SEQ && s->u.seq.n == 1) s = s->u.seq.items[0];
  if (s->kind != LOOM_TP_STMT_IF || !s->u.if_.else_s) return LOOM_OK;
  const loom_tp_buffer *y = NULL;
  if (!plain_stores(s->u.if_.then_s, &y) || !plain_stores(s->u.if_.else_s, &y)) return LOOM_OK;
  const loom_sym_expr *v = loop->u.loop.var, *d = loop->u.loop.extent;
  const loom_tp_expr *terms[MAX_TERMS];
  int n = 0, nv = 0;
  if (!terms_of(s->u.if_.cond, terms, &n)) return LOOM_OK;
  const loom_sym_expr *lower = loom_sym_const(cx, 0), *upper = d; /* so lower >= 0 and upper <= d */
  loom_tp_expr *outer = NULL;
  for (int i = 0; i < n; i++) {
    if (!loom_tp_expr_uses_var(terms[i], v)) {
      loom_tp_expr *t = loom_tp_expr_copy_subst(a, cx, terms[i], NULL, NULL, 0);
      outer = t && outer ? loom_tp_op2(a, LOOM_TP_OP_AND, outer, t) : t;
      if (!outer) return LOOM_OOM();
      continue;
    }
    if (!bound(cx, terms[i], v, &lower, &upper)) return LOOM_OK;
    nv++;
  }
  if (!nv) return LOOM_OK; /* nothing per element to split by (loop unswitching's case) */
  const loom_sym_expr *lo = loom_sym_min(cx, lower, d);
  const loom_sym_expr *hi = lo ? loom_sym_max(cx, upper, lo) : NULL;
  if (!lo || !hi) return LOOM_OOM();
  char name[3][64];
  for (int k = 0; k < 3; k++) snprintf(name[k], sizeof name[k], "%s_%c", loom_sym_var_name(v), "lmh"[k]);
  loom_tp_stmt *parts[3] = {run(a, cx, s->u.if_.else_s, v, loom_sym_const(cx, 0), lo, name[0]),
                            run(a, cx, s->u.if_.then_s, v, lo, loom_sym_sub(cx, hi, lo), name[1]),
                            run(a, cx, s->u.if_.else_s, v, hi, loom_sym_sub(cx, d, hi), name[2])};
  loom_tp_stmt *split = parts[0] && parts[1] && parts[2] ? loom_tp_seq(a, parts, 3) : NULL;
  if (!split) return LOOM_OOM();
  loom_tp_stmt *with = split;
  if (outer) {
    loom_tp_stmt *all = run(a, cx, s->u.if_.else_s, v, loom_sym_const(cx, 0), d, loom_sym_var_name(v));
    if (!all || !(with = loom_tp_if(a, outer, split, all))) return LOOM_OOM();
  }
  LOOM_PROPAGATE(loom_tp_replace(f, loop, with));
  loom_strbuf_printf(why, "loop %s: split by its range test into the runs before, inside and after it\n", loom_sym_var_name(v));
  *out = with;
  return LOOM_OK;
}

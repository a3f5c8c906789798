/* variants.c — shape-range variants: a program body specialised under a guard on its
 * symbols, selected at run time, with the general body as fallback (see tp_rewrite.h). */
#include "tensorprog/tp_rewrite.h"

/* Adds the facts a guard states. Unrecognised conjuncts add nothing (still correct:
 * the variant is then only less simplified). */
static loom_status assume_guard(loom_sym_ctx *cx, const loom_sym_expr *g) {
  loom_sym_kind k = loom_sym_kind_of(g);
  if (k == LOOM_SYM_AND) {
    LOOM_PROPAGATE(assume_guard(cx, loom_sym_operand(g, 0)));
    return assume_guard(cx, loom_sym_operand(g, 1));
  }
  if (k != LOOM_SYM_EQ && k != LOOM_SYM_LE && k != LOOM_SYM_LT) return LOOM_OK;
  const loom_sym_expr *a = loom_sym_operand(g, 0), *b = loom_sym_operand(g, 1);
  int64_t c, d;
  if (k == LOOM_SYM_EQ) {
    /* floormod(v, d) == 0: v is divisible by d */
    if (loom_sym_kind_of(a) == LOOM_SYM_FLOORMOD && loom_sym_is_var(loom_sym_operand(a, 0)) &&
        loom_sym_is_const(loom_sym_operand(a, 1), &d) && d > 0 && loom_sym_is_const(b, &c) && c == 0)
      return loom_sym_assume_divisible(cx, loom_sym_operand(a, 0), d);
    return loom_sym_assume_eq(cx, a, b);
  }
  bool lt = k == LOOM_SYM_LT;
  if (loom_sym_is_var(a) && loom_sym_is_const(b, &c)) return loom_sym_assume_range(cx, a, INT64_MIN, lt ? c - 1 : c);
  if (loom_sym_is_const(a, &c) && loom_sym_is_var(b)) return loom_sym_assume_range(cx, b, lt ? c + 1 : c, INT64_MAX);
  /* any other form a <= b with b - a = ±v + c (canonical forms such as -5 <= -m) */
  const loom_sym_expr *diff = loom_sym_sub(cx, b, a), *v;
  int64_t coef, off;
  if (!diff) return LOOM_OOM();
  int64_t need = lt ? 1 : 0; /* coef*v + off >= need */
  if (!loom_sym_as_affine(diff, &v, &coef, &off)) {
    /* a relation of a product (fused rows: batch*seq < 6): diff - need >= 0 for the prover */
    const loom_sym_expr *e = loom_sym_sub(cx, diff, loom_sym_const(cx, need));
    if (!e) return LOOM_OOM();
    return loom_sym_is_const(e, NULL) ? LOOM_OK : loom_sym_assume_nonneg(cx, e);
  }
  if (coef != 1 && coef != -1) return LOOM_OK;
  if (off < INT64_MIN / 2 || off > INT64_MAX / 2) return LOOM_OK;
  return coef == 1 ? loom_sym_assume_range(cx, v, need - off, INT64_MAX)
                   : loom_sym_assume_range(cx, v, INT64_MIN, off - need);
}

/* The guard as a bool tensor-program expression (comparisons of index values). */
static loom_tp_expr *guard_expr(loom_arena *ar, loom_sym_ctx *cx, const loom_sym_expr *g) {
  static const struct {
    loom_sym_kind sk;
    loom_tp_op op;
  } map[] = {{LOOM_SYM_EQ, LOOM_TP_OP_EQ}, {LOOM_SYM_NE, LOOM_TP_OP_NE}, {LOOM_SYM_LT, LOOM_TP_OP_LT},
             {LOOM_SYM_LE, LOOM_TP_OP_LE}, {LOOM_SYM_AND, LOOM_TP_OP_AND}, {LOOM_SYM_OR, LOOM_TP_OP_OR}};
  loom_sym_kind k = loom_sym_kind_of(g);
  for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
    if (map[i].sk != k) continue;
    bool logic = k == LOOM_SYM_AND || k == LOOM_SYM_OR;
    loom_tp_expr *x = logic ? guard_expr(ar, cx, loom_sym_operand(g, 0)) : loom_tp_sym(ar, loom_sym_operand(g, 0));
    loom_tp_expr *y = logic ? guard_expr(ar, cx, loom_sym_operand(g, 1)) : loom_tp_sym(ar, loom_sym_operand(g, 1));
    return loom_tp_op2(ar, map[i].op, x, y);
  }
  if (k == LOOM_SYM_NOT) {
    loom_tp_expr *x = guard_expr(ar, cx, loom_sym_operand(g, 0));
    return x ? loom_tp_op1(ar, LOOM_TP_OP_NOT, x) : NULL;
  }
  /* Any other value: nonzero means true. */
  return loom_tp_op2(ar, LOOM_TP_OP_NE, loom_tp_sym(ar, g), loom_tp_sym(ar, loom_sym_const(cx, 0)));
}

/* The guard's negation as a comparison the facts can hold (a <= b: b < a; a < b: b <= a), or NULL
 * for any other guard (a conjunction's negation is a disjunction: no fact). */
static const loom_sym_expr *negated(loom_sym_ctx *cx, const loom_sym_expr *g) {
  loom_sym_kind k = loom_sym_kind_of(g);
  if (k != LOOM_SYM_LE && k != LOOM_SYM_LT) return NULL;
  return loom_sym_cmp(cx, k == LOOM_SYM_LE ? LOOM_SYM_LT : LOOM_SYM_LE, loom_sym_operand(g, 1), loom_sym_operand(g, 0));
}

/* Whether `s` provably runs no iteration of any of its loops: a loop of extent <= 0, or a sequence
 * of such (under the context's facts). */
static bool never_runs(loom_sym_ctx *cx, const loom_tp_stmt *s) {
  if (s->kind == LOOM_TP_STMT_FOR) return loom_sym_prove_le(cx, s->u.loop.extent, loom_sym_const(cx, 0)) == LOOM_SYM_TRUE;
  if (s->kind != LOOM_TP_STMT_SEQ) return false;
  for (size_t i = 0; i < s->u.seq.n; i++)
    if (!never_runs(cx, s->u.seq.items[i])) return false;
  return true;
}

/* Whether the fallback `body` does nothing whenever `guard` fails: a few-rows variant guarded by
 * 1 <= rows leaves a fallback that runs only with no rows at all, whose loops LLVM would still
 * vectorise and compile (34 ms of the GPT-2 block's 320 ms of LLVM CPU time). */
static bool fallback_is_dead(loom_sym_ctx *cx, const loom_sym_expr *guard, const loom_tp_stmt *body) {
  const loom_sym_expr *neg = negated(cx, guard);
  if (!neg) return false;
  loom_sym_facts_push(cx);
  loom_status st = assume_guard(cx, neg);
  bool dead = !st && never_runs(cx, body);
  loom_sym_facts_pop(cx);
  loom_status_free(st);
  return dead;
}

loom_status loom_tp_add_variant(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_sym_expr *guard,
                                loom_tp_schedule_fn schedule, void *ud) {
  loom_tp_expr *cond = guard_expr(a, cx, guard);
  if (!cond) return LOOM_OOM();
  loom_sym_facts_push(cx);
  loom_status st = assume_guard(cx, guard);
  if (st && loom_status_code(st) != LOOM_CODE_RESOURCE_EXHAUSTED) {
    /* the guard contradicts the facts here (a few-rows guard 1 <= 197*b inside rows < 6): the
     * variant could never run; the program stays as it is */
    loom_sym_facts_pop(cx);
    loom_status r = LOOM_ERROR(FAILED_PRECONDITION, "variant of program @%s: its guard never holds here (%s)", f->name,
                               loom_status_message(st));
    loom_status_free(st);
    return r;
  }
  loom_tp_stmt *variant = st ? NULL : loom_tp_stmt_copy_simplified(a, cx, f->body);
  if (!st && !variant) st = LOOM_OOM();
  if (!st && schedule) {
    loom_tp_func view = *f;
    view.body = variant;
    st = schedule(ud, &view);
    variant = view.body;
  }
  loom_sym_facts_pop(cx);
  if (st) return loom_status_annotate(st, __FILE__, __LINE__, "while adding a variant of program @%s", f->name);
  loom_tp_stmt *wrapped = loom_tp_if(a, cond, variant, fallback_is_dead(cx, guard, f->body) ? NULL : f->body);
  if (!wrapped) return LOOM_OOM();
  f->body = wrapped;
  return LOOM_OK;
}

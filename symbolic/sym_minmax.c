/* sym_minmax.c — min / max, comparisons, logic and select: their fact-free rules.
 *
 * Comparisons are normalised so equal conditions are the same node:
 *   a <= b, a < b  ->  LE(k, r)   meaning k <= r, r without constant term, content 1
 *   a == b, a != b ->  EQ/NE(r, k) meaning r == k, r's leading coefficient positive, content 1
 * Logic operands are made 0/1-valued first (x -> x != 0 unless x already is). */
#include "symbolic/sym_internal.h"

static const loom_sym_expr *node2(loom_sym_ctx *cx, loom_sym_kind k, const loom_sym_expr *a,
                                  const loom_sym_expr *b) {
  return sym_intern(cx, k, NULL, (const loom_sym_expr *[]){a, b}, NULL, 2);
}

/* Shared body of min and max. */
static const loom_sym_expr *minmax(loom_sym_ctx *cx, bool is_min, const loom_sym_expr *a,
                                   const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  // min(a, a) -> a
  if (a == b) return a;
  // min(a, a + c) -> a if c >= 0, else a + c   (difference is a constant; constants fold)
  const loom_sym_expr *d = loom_sym_sub(cx, b, a);
  if (!d) return NULL;
  if (d->kind == LOOM_SYM_CONST) return (sym_num_sign(d) >= 0) == is_min ? a : b;
  // min(a, max(a, b)) -> a ; max(a, min(a, b)) -> a   (absorption; either operand, either order)
  loom_sym_kind other = is_min ? LOOM_SYM_MAX : LOOM_SYM_MIN;
  if (b->kind == other && (b->ops[0] == a || b->ops[1] == a)) return a;
  if (a->kind == other && (a->ops[0] == b || a->ops[1] == b)) return b;
  // min(b, a) -> min(a, b)   (operands in canonical order, a constant last)
  if (a->kind == LOOM_SYM_CONST || (b->kind != LOOM_SYM_CONST && sym_order(a, b) > 0)) {
    const loom_sym_expr *t = a;
    a = b;
    b = t;
  }
  return node2(cx, is_min ? LOOM_SYM_MIN : LOOM_SYM_MAX, a, b);
}

const loom_sym_expr *loom_sym_min(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  return minmax(cx, true, a, b);
}
const loom_sym_expr *loom_sym_max(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  return minmax(cx, false, a, b);
}

/* Leading (first) coefficient of a non-constant canonical polynomial without constant. */
static const loom_sym_expr *leading_coef(loom_sym_ctx *cx, const loom_sym_expr *r) {
  return sym_term_coef(cx, r->kind == LOOM_SYM_ADD ? r->ops[0] : r);
}

const loom_sym_expr *loom_sym_cmp(loom_sym_ctx *cx, loom_sym_kind op, const loom_sym_expr *a,
                                  const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  if (op != LOOM_SYM_EQ && op != LOOM_SYM_NE && op != LOOM_SYM_LT && op != LOOM_SYM_LE)
    return sym_fail(cx, LOOM_ERROR(INVALID_ARGUMENT, "loom_sym_cmp: '%s' is not a comparison",
                                   loom_sym_kind_name(op)));
  bool order = op == LOOM_SYM_LT || op == LOOM_SYM_LE;
  /* order: a <= b  <=>  0 <= (b - a);  equality: a == b  <=>  (a - b) == 0 */
  const loom_sym_expr *d = order ? loom_sym_sub(cx, b, a) : loom_sym_sub(cx, a, b);
  if (!d) return NULL;
  const loom_sym_expr *c0, *r;
  sym_split_const(cx, d, &c0, &r);
  if (!r) return NULL;
  if (sym_is_zero(r)) {
    // c1 <= c2, c1 < c2, c1 == c2, c1 != c2 -> 0 or 1
    int s = sym_num_sign(c0);
    bool v = op == LOOM_SYM_LE ? s >= 0 : op == LOOM_SYM_LT ? s > 0 : op == LOOM_SYM_EQ ? s == 0 : s != 0;
    return v ? cx->c1 : cx->c0;
  }
  const loom_sym_expr *g = sym_content(cx, r);
  const loom_sym_expr *k = sym_num_neg(cx, c0);
  if (!g || !k) return NULL;
  if (order) {
    // a < b -> a + 1 <= b
    if (op == LOOM_SYM_LT) k = sym_num_add(cx, k, cx->c1);
    // k <= g*x -> ceildiv(k, g) <= x
    const loom_sym_expr *nk = k ? sym_num_neg(cx, k) : NULL;
    const loom_sym_expr *q = nk ? sym_num_fdiv(cx, nk, g) : NULL;
    k = q ? sym_num_neg(cx, q) : NULL;
    const loom_sym_expr *x = sym_div_exact(cx, r, g);
    if (!k || !x) return NULL;
    return node2(cx, LOOM_SYM_LE, k, x);
  }
  // -x == k -> x == -k   (leading coefficient positive)
  if (sym_num_sign(leading_coef(cx, r)) < 0) {
    r = loom_sym_neg(cx, r);
    k = sym_num_neg(cx, k);
    if (!r || !k) return NULL;
  }
  // g*x == k -> 0 if g does not divide k ; else x == k/g   (and != likewise)
  if (!sym_num_divides(cx, g, k)) return op == LOOM_SYM_EQ ? cx->c0 : cx->c1;
  const loom_sym_expr *x = sym_div_exact(cx, r, g), *kk = sym_num_fdiv(cx, k, g);
  if (!x || !kk) return NULL;
  return node2(cx, op, x, kk);
}

/* x as a 0/1 value: x itself when it already is one, else x != 0. */
static const loom_sym_expr *truth(loom_sym_ctx *cx, const loom_sym_expr *x) {
  if (!x) return NULL;
  // bool(x) -> x if x is 0/1-valued, else x != 0
  return sym_is_bool(x) ? x : loom_sym_cmp(cx, LOOM_SYM_NE, x, cx->c0);
}

const loom_sym_expr *loom_sym_not(loom_sym_ctx *cx, const loom_sym_expr *a) {
  a = truth(cx, a);
  if (!a) return NULL;
  switch (a->kind) {
  // !0 -> 1 ; !1 -> 0
  case LOOM_SYM_CONST: return sym_is_zero(a) ? cx->c1 : cx->c0;
  // !!x -> x   (x is 0/1-valued)
  case LOOM_SYM_NOT: return a->ops[0];
  // !(x == k) -> x != k ; !(x != k) -> x == k
  case LOOM_SYM_EQ: return node2(cx, LOOM_SYM_NE, a->ops[0], a->ops[1]);
  case LOOM_SYM_NE: return node2(cx, LOOM_SYM_EQ, a->ops[0], a->ops[1]);
  // !(k <= x) -> x < k
  case LOOM_SYM_LE: return loom_sym_cmp(cx, LOOM_SYM_LT, a->ops[1], a->ops[0]);
  default: return sym_intern(cx, LOOM_SYM_NOT, NULL, &a, NULL, 1);
  }
}

static const loom_sym_expr *logic(loom_sym_ctx *cx, bool is_and, const loom_sym_expr *a,
                                  const loom_sym_expr *b) {
  a = truth(cx, a);
  b = truth(cx, b);
  if (!a || !b) return NULL;
  if (b->kind == LOOM_SYM_CONST) {
    const loom_sym_expr *t = a;
    a = b;
    b = t;
  }
  // 0 && x -> 0 ; 1 && x -> x ; 1 || x -> 1 ; 0 || x -> x
  if (a->kind == LOOM_SYM_CONST) {
    if (is_and) return sym_is_zero(a) ? cx->c0 : b;
    return sym_is_zero(a) ? b : cx->c1;
  }
  // x && x -> x ; x || x -> x
  if (a == b) return a;
  // x && !x -> 0 ; x || !x -> 1
  const loom_sym_expr *na = loom_sym_not(cx, a);
  if (!na) return NULL;
  if (na == b) return is_and ? cx->c0 : cx->c1;
  if (sym_order(a, b) > 0) {
    const loom_sym_expr *t = a;
    a = b;
    b = t;
  }
  return node2(cx, is_and ? LOOM_SYM_AND : LOOM_SYM_OR, a, b);
}

const loom_sym_expr *loom_sym_and(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  return logic(cx, true, a, b);
}
const loom_sym_expr *loom_sym_or(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  return logic(cx, false, a, b);
}

const loom_sym_expr *loom_sym_select(loom_sym_ctx *cx, const loom_sym_expr *cond,
                                     const loom_sym_expr *then_e, const loom_sym_expr *else_e) {
  cond = truth(cx, cond);
  if (!cond || !then_e || !else_e) return NULL;
  // select(1, a, b) -> a ; select(0, a, b) -> b
  if (cond->kind == LOOM_SYM_CONST) return sym_is_zero(cond) ? else_e : then_e;
  // select(c, a, a) -> a
  if (then_e == else_e) return then_e;
  // select(!c, a, b) -> select(c, b, a) ; select(x != k, a, b) -> select(x == k, b, a)
  if (cond->kind == LOOM_SYM_NOT || cond->kind == LOOM_SYM_NE) {
    const loom_sym_expr *nc = loom_sym_not(cx, cond);
    if (!nc) return NULL;
    return loom_sym_select(cx, nc, else_e, then_e);
  }
  // select(x == k, a, b) -> b  when b is a at x = k (x a variable): both branches give b,
  // e.g. an exporter's select(batch == 1, 1, batch) -> batch
  if (cond->kind == LOOM_SYM_EQ && cond->ops[0]->kind == LOOM_SYM_VAR) {
    const loom_sym_expr *at = loom_sym_subst(cx, else_e, &cond->ops[0], &cond->ops[1], 1);
    if (!at) return NULL;
    if (at == then_e) return else_e;
  }
  // select(l == r, a, b) -> b  when a - b is +-(l - r): where l == r the branches are equal,
  // e.g. an exporter's select(s + past == 1, 1, s + past) -> s + past
  if (cond->kind == LOOM_SYM_EQ) {
    const loom_sym_expr *d = loom_sym_sub(cx, then_e, else_e), *e = loom_sym_sub(cx, cond->ops[0], cond->ops[1]);
    if (!d || !e) return NULL;
    if (d == e || d == loom_sym_neg(cx, e)) return else_e;
  }
  return sym_intern(cx, LOOM_SYM_SELECT, NULL, (const loom_sym_expr *[]){cond, then_e, else_e}, NULL, 3);
}

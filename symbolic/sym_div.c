/* sym_div.c — floordiv / floormod / ceildiv constructors and their fact-free rules.
 *
 * With a constant divisor c > 0 the dividend a = c0 + sum ci*mi is split into a
 * quotient part (coefficients and constant divided by c, floored) and a remainder
 * part whose coefficients and constant lie in [0, c); then the gcd g of the remainder's
 * coefficients and c is divided out. The result is exact for every integer value of
 * the variables, and applying the rule again to its output changes nothing. */
#include <stdlib.h>

#include "symbolic/sym_internal.h"

/* Splits a = q*c + r with every coefficient of r (constant included) in [0, c). */
static bool split_mod(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *c,
                      const loom_sym_expr **q, const loom_sym_expr **r_rest, const loom_sym_expr **r0) {
  const loom_sym_expr *const *ts = &a;
  uint32_t n = 1;
  const loom_sym_expr *k = cx->c0;
  if (a->kind == LOOM_SYM_CONST) {
    n = 0;
    k = a;
  } else if (a->kind == LOOM_SYM_ADD) {
    ts = a->ops;
    n = a->n;
    k = a->k;
  }
  const loom_sym_expr *qq = sym_num_fdiv(cx, k, c);
  const loom_sym_expr *rr = cx->c0;
  *r0 = sym_num_fmod(cx, k, c);
  if (!qq || !*r0) return false;
  for (uint32_t i = 0; i < n; i++) {
    const loom_sym_expr *coef = sym_term_coef(cx, ts[i]), *unit = ts[i]->unit;
    const loom_sym_expr *qi = sym_num_fdiv(cx, coef, c), *ri = sym_num_fmod(cx, coef, c);
    if (!qi || !ri) return false;
    qq = loom_sym_add(cx, qq, sym_scale(cx, unit, qi));
    rr = loom_sym_add(cx, rr, sym_scale(cx, unit, ri));
    if (!qq || !rr) return false;
  }
  *q = qq;
  *r_rest = rr;
  return true;
}

static const loom_sym_expr *div_by_zero(loom_sym_ctx *cx, const char *op, const loom_sym_expr *a) {
  char *s = loom_sym_to_string(a);
  loom_status st = LOOM_ERROR(INVALID_ARGUMENT, "division by zero: %s(%s, 0)", op, s ? s : "...");
  free(s);
  return sym_fail(cx, st);
}

const loom_sym_expr *loom_sym_floordiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  if (sym_is_zero(b)) return div_by_zero(cx, "floordiv", a);
  // floordiv(c1, c2) -> floor(c1 / c2)
  if (a->kind == LOOM_SYM_CONST && b->kind == LOOM_SYM_CONST) return sym_num_fdiv(cx, a, b);
  if (b->kind != LOOM_SYM_CONST) {
    // floordiv(0, b) stays: b may be 0 at run time, and that must stay an error.
    return sym_intern(cx, LOOM_SYM_FLOORDIV, NULL, (const loom_sym_expr *[]){a, b}, NULL, 2);
  }
  // floordiv(a, c) -> floordiv(-a, -c)  if c < 0   (floor(a/c) = floor(-a/-c))
  if (sym_num_sign(b) < 0) return loom_sym_floordiv(cx, loom_sym_neg(cx, a), sym_num_neg(cx, b));
  // floordiv(a, 1) -> a
  if (sym_is_one(b)) return a;
  // floordiv(q*c + r, c) -> q + floordiv(r, c)   (coefficients of r in [0, c))
  const loom_sym_expr *q, *rr, *r0;
  if (!split_mod(cx, a, b, &q, &rr, &r0)) return NULL;
  // floordiv(r0, c) -> 0   if 0 <= r0 < c
  if (sym_is_zero(rr)) return q;
  // floordiv(g*x + r0, g*d) -> floordiv(x + floordiv(r0, g), d)   g = gcd(coefficients of x, c)
  const loom_sym_expr *g = sym_num_gcd(cx, sym_content(cx, rr), b);
  if (!g) return NULL;
  const loom_sym_expr *x = loom_sym_add(cx, sym_div_exact(cx, rr, g), sym_num_fdiv(cx, r0, g));
  const loom_sym_expr *d = sym_num_fdiv(cx, b, g);
  if (!x || !d) return NULL;
  // floordiv(x, 1) -> x
  if (sym_is_one(d)) return loom_sym_add(cx, q, x);
  // floordiv(floordiv(y, a), d) -> floordiv(y, a*d)   a, d > 0
  if (x->kind == LOOM_SYM_FLOORDIV && x->ops[1]->kind == LOOM_SYM_CONST && sym_num_sign(x->ops[1]) > 0)
    return loom_sym_add(cx, q, loom_sym_floordiv(cx, x->ops[0], sym_num_mul(cx, x->ops[1], d)));
  return loom_sym_add(cx, q, sym_intern(cx, LOOM_SYM_FLOORDIV, NULL, (const loom_sym_expr *[]){x, d}, NULL, 2));
}

const loom_sym_expr *loom_sym_floormod(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  if (sym_is_zero(b)) return div_by_zero(cx, "floormod", a);
  // floormod(c1, c2) -> c1 - c2*floor(c1 / c2)
  if (a->kind == LOOM_SYM_CONST && b->kind == LOOM_SYM_CONST) return sym_num_fmod(cx, a, b);
  if (b->kind != LOOM_SYM_CONST)
    return sym_intern(cx, LOOM_SYM_FLOORMOD, NULL, (const loom_sym_expr *[]){a, b}, NULL, 2);
  // floormod(a, c) -> -floormod(-a, -c)  if c < 0
  if (sym_num_sign(b) < 0)
    return loom_sym_neg(cx, loom_sym_floormod(cx, loom_sym_neg(cx, a), sym_num_neg(cx, b)));
  // floormod(a, 1) -> 0
  if (sym_is_one(b)) return cx->c0;
  // floormod(q*c + r, c) -> floormod(r, c)   (coefficients of r in [0, c))
  const loom_sym_expr *q, *rr, *r0;
  if (!split_mod(cx, a, b, &q, &rr, &r0)) return NULL;
  // floormod(r0, c) -> r0   if 0 <= r0 < c   (so floormod(2*n, 2) -> 0)
  if (sym_is_zero(rr)) return r0;
  // floormod(g*x + r, g*d) -> g*floormod(x + floordiv(r, g), d) + floormod(r, g)
  const loom_sym_expr *g = sym_num_gcd(cx, sym_content(cx, rr), b);
  if (!g) return NULL;
  const loom_sym_expr *x = loom_sym_add(cx, sym_div_exact(cx, rr, g), sym_num_fdiv(cx, r0, g));
  const loom_sym_expr *d = sym_num_fdiv(cx, b, g);
  const loom_sym_expr *low = sym_num_fmod(cx, r0, g);
  if (!x || !d || !low) return NULL;
  if (sym_is_one(d)) return low;
  const loom_sym_expr *m;
  // floormod(floormod(y, a), d) -> floormod(y, d)   if d divides a (a, d > 0)
  if (x->kind == LOOM_SYM_FLOORMOD && x->ops[1]->kind == LOOM_SYM_CONST && sym_num_sign(x->ops[1]) > 0 &&
      sym_num_divides(cx, d, x->ops[1]))
    m = loom_sym_floormod(cx, x->ops[0], d);
  else
    m = sym_intern(cx, LOOM_SYM_FLOORMOD, NULL, (const loom_sym_expr *[]){x, d}, NULL, 2);
  return loom_sym_add(cx, loom_sym_mul(cx, g, m), low);
}

const loom_sym_expr *loom_sym_ceildiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  if (sym_is_zero(b)) return div_by_zero(cx, "ceildiv", a);
  // ceildiv(a, c) -> floordiv(a + c - 1, c)   if c > 0
  if (b->kind == LOOM_SYM_CONST && sym_num_sign(b) > 0)
    return loom_sym_floordiv(cx, loom_sym_add(cx, a, sym_num_add(cx, b, cx->cm1)), b);
  // ceildiv(a, b) -> -floordiv(-a, b)
  return loom_sym_neg(cx, loom_sym_floordiv(cx, loom_sym_neg(cx, a), b));
}

/* sym_bounds.c — interval bounds and known divisors of expressions under the facts.
 *
 * Bounds are computed in __int128 with +-SYM_INF for infinity and clamped to int64 at
 * every node (a lower end above INT64_MAX becomes INT64_MAX, below INT64_MIN becomes
 * -inf; upper ends likewise), so every product of two ends fits and the result is
 * always sound: the true value lies inside. Two refinements keep relations that plain
 * intervals lose:
 *   c*min(x, y) + r = min(c*x + r, c*y + r)  for c > 0 (max for c < 0), and max alike;
 *   c*floordiv(x, k) + r = (c/k)*x - (c/k)*floormod(x, k) + r  when k > 0 divides c. */
#include "symbolic/sym_internal.h"

#define I64MAX ((__int128)INT64_MAX)
#define I64MIN ((__int128)INT64_MIN)

static sym_ival clamp(sym_ival v) {
  if (v.lo > I64MAX) v.lo = I64MAX;
  if (v.lo < I64MIN) v.lo = -SYM_INF;
  if (v.hi > I64MAX) v.hi = SYM_INF;
  if (v.hi < I64MIN) v.hi = I64MIN;
  return v;
}

static const sym_ival FULL = {-SYM_INF, SYM_INF};

static __int128 mul_ext(__int128 a, __int128 b) {
  if (a == 0 || b == 0) return 0;
  bool inf = a <= -SYM_INF || a >= SYM_INF || b <= -SYM_INF || b >= SYM_INF;
  if (inf) return ((a < 0) != (b < 0)) ? -SYM_INF : SYM_INF;
  return a * b;
}

static sym_ival iv_mul(sym_ival a, sym_ival b) {
  __int128 p[4] = {mul_ext(a.lo, b.lo), mul_ext(a.lo, b.hi), mul_ext(a.hi, b.lo), mul_ext(a.hi, b.hi)};
  sym_ival r = {p[0], p[0]};
  for (int i = 1; i < 4; i++) {
    if (p[i] < r.lo) r.lo = p[i];
    if (p[i] > r.hi) r.hi = p[i];
  }
  return clamp(r);
}

static sym_ival iv_add(sym_ival a, sym_ival b) { return clamp((sym_ival){a.lo + b.lo, a.hi + b.hi}); }

static __int128 fdiv128(__int128 a, __int128 c) { /* c > 0 */
  if (a <= -SYM_INF || a >= SYM_INF) return a;
  __int128 q = a / c;
  if (a % c != 0 && a < 0) q--;
  return q;
}

static sym_ival const_ival(const loom_sym_expr *c) {
  if (!c->u.num.is_big) return (sym_ival){c->u.num.small, c->u.num.small};
  return mpz_sgn(c->u.num.big) > 0 ? (sym_ival){I64MAX, SYM_INF} : (sym_ival){-SYM_INF, I64MIN};
}

static sym_ival bounds_rec(loom_sym_ctx *cx, const loom_sym_expr *e, int depth);

/* A term c*f(x, y) of an ADD whose relation the refinements above can use; -1 if none. */
static int find_special(loom_sym_ctx *cx, const loom_sym_expr *e) {
  for (uint32_t i = 0; i < e->n; i++) {
    const loom_sym_expr *t = e->ops[i], *u = t->unit;
    if (u->kind == LOOM_SYM_MIN || u->kind == LOOM_SYM_MAX) return (int)i;
    if (u->kind == LOOM_SYM_FLOORDIV && u->ops[1]->kind == LOOM_SYM_CONST && sym_num_sign(u->ops[1]) > 0 &&
        sym_num_divides(cx, u->ops[1], sym_term_coef(cx, t)))
      return (int)i;
  }
  return -1;
}

static sym_ival bounds_add(loom_sym_ctx *cx, const loom_sym_expr *e, int depth) {
  int s = depth < 8 ? find_special(cx, e) : -1;
  if (s >= 0) {
    const loom_sym_expr *t = e->ops[s], *u = t->unit, *c = sym_term_coef(cx, t);
    const loom_sym_expr *rest = loom_sym_sub(cx, e, t);
    if (rest) {
      if (u->kind == LOOM_SYM_FLOORDIV) {
        const loom_sym_expr *q = sym_num_fdiv(cx, c, u->ops[1]);
        const loom_sym_expr *alt = loom_sym_add(
            cx, rest, loom_sym_mul(cx, q, loom_sym_sub(cx, u->ops[0], loom_sym_floormod(cx, u->ops[0], u->ops[1]))));
        if (alt && alt != e) return bounds_rec(cx, alt, depth + 1);
      } else {
        sym_ival x = bounds_rec(cx, loom_sym_add(cx, rest, loom_sym_mul(cx, c, u->ops[0])), depth + 1);
        sym_ival y = bounds_rec(cx, loom_sym_add(cx, rest, loom_sym_mul(cx, c, u->ops[1])), depth + 1);
        bool take_min = (u->kind == LOOM_SYM_MIN) == (sym_num_sign(c) > 0);
        if (take_min) return (sym_ival){x.lo < y.lo ? x.lo : y.lo, x.hi < y.hi ? x.hi : y.hi};
        return (sym_ival){x.lo > y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi};
      }
    }
  }
  sym_ival r = const_ival(e->k);
  for (uint32_t i = 0; i < e->n; i++) r = iv_add(r, bounds_rec(cx, e->ops[i], depth + 1));
  return r;
}

static sym_ival bounds_var(loom_sym_ctx *cx, const loom_sym_expr *e, int depth) {
  const sym_var_facts *f = sym_facts_of(cx, e);
  if (!f) return FULL;
  sym_ival r = {f->lo_inf ? -SYM_INF : f->lo, f->hi_inf ? SYM_INF : f->hi};
  if (f->div > 1) { /* round the finite ends inward to multiples of div */
    if (!f->lo_inf) r.lo = -fdiv128(-r.lo, f->div) * f->div;
    if (!f->hi_inf) r.hi = fdiv128(r.hi, f->div) * f->div;
  }
  if (f->subst && depth < 16) {
    sym_ival s = bounds_rec(cx, f->subst, depth + 1);
    if (s.lo > r.lo) r.lo = s.lo;
    if (s.hi < r.hi) r.hi = s.hi;
  }
  return clamp(r);
}

static sym_ival bounds_rec(loom_sym_ctx *cx, const loom_sym_expr *e, int depth) {
  if (!e) return FULL;
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_CONST: return const_ival(e);
  case LOOM_SYM_VAR: return bounds_var(cx, e, depth);
  case LOOM_SYM_ADD: return bounds_add(cx, e, depth);
  case LOOM_SYM_MUL: {
    sym_ival r = const_ival(e->k);
    for (uint32_t i = 0; i < e->n; i++) {
      sym_ival a = bounds_rec(cx, e->ops[i], depth + 1), p = a;
      for (uint32_t j = 1; j < e->exps[i] && j < 64; j++) p = iv_mul(p, a);
      if (e->exps[i] >= 64) p = (a.lo >= 0) ? (sym_ival){0, SYM_INF} : FULL;
      if (e->exps[i] % 2 == 0 && p.lo < 0) p.lo = 0; /* even powers are >= 0 */
      r = iv_mul(r, p);
    }
    return r;
  }
  case LOOM_SYM_FLOORDIV: {
    sym_ival a = bounds_rec(cx, e->ops[0], depth + 1), b = bounds_rec(cx, e->ops[1], depth + 1);
    if (b.lo >= 1 && b.lo == b.hi) return clamp((sym_ival){fdiv128(a.lo, b.lo), fdiv128(a.hi, b.lo)});
    if (b.lo >= 1) { /* floor(a/b) lies between min(a, 0) and max(a, 0) */
      sym_ival r = {a.lo < 0 ? a.lo : 0, a.hi > 0 ? a.hi : 0};
      if (a.lo >= 0 && b.hi < SYM_INF) r.lo = fdiv128(a.lo, b.hi);
      if (a.hi >= 0 && a.hi < SYM_INF) r.hi = fdiv128(a.hi, b.lo);
      return clamp(r);
    }
    return FULL;
  }
  case LOOM_SYM_FLOORMOD: {
    sym_ival a = bounds_rec(cx, e->ops[0], depth + 1), b = bounds_rec(cx, e->ops[1], depth + 1);
    if (b.lo >= 1) {
      sym_ival r = {0, b.hi >= SYM_INF ? SYM_INF : b.hi - 1};
      if (b.lo == b.hi && a.lo > -SYM_INF && a.hi < SYM_INF &&
          fdiv128(a.lo, b.lo) == fdiv128(a.hi, b.lo)) { /* no wrap: x - q*c */
        __int128 q = fdiv128(a.lo, b.lo) * b.lo;
        return (sym_ival){a.lo - q, a.hi - q};
      }
      if (a.lo >= 0 && a.hi < r.hi) r.hi = a.hi;
      return clamp(r);
    }
    if (b.hi <= -1) return clamp((sym_ival){b.lo <= -SYM_INF ? -SYM_INF : b.lo + 1, 0});
    return FULL;
  }
  case LOOM_SYM_MIN:
  case LOOM_SYM_MAX: {
    sym_ival a = bounds_rec(cx, e->ops[0], depth + 1), b = bounds_rec(cx, e->ops[1], depth + 1);
    if (e->kind == LOOM_SYM_MIN) return (sym_ival){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
    return (sym_ival){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
  case LOOM_SYM_SELECT: {
    sym_ival a = bounds_rec(cx, e->ops[1], depth + 1), b = bounds_rec(cx, e->ops[2], depth + 1);
    return (sym_ival){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
  default: return (sym_ival){0, 1}; /* comparisons and logic */
  }
}

/* The refinements build expressions; an error there (out of memory) only costs
 * precision, so it is dropped and the caller's sticky error is kept. */
sym_ival sym_bounds128(loom_sym_ctx *cx, const loom_sym_expr *e) {
  loom_status prev = cx->err;
  cx->err = LOOM_OK;
  sym_ival r = bounds_rec(cx, e, 0);
  loom_status_free(cx->err);
  cx->err = prev;
  return r;
}

loom_sym_interval loom_sym_bounds(loom_sym_ctx *cx, const loom_sym_expr *e) {
  sym_ival b = e ? sym_bounds128(cx, sym_apply_eqs(cx, e)) : FULL;
  loom_sym_interval r = {0, 0, b.lo < I64MIN, b.hi > I64MAX};
  if (!r.lo_inf) r.lo = (int64_t)b.lo;
  if (!r.hi_inf) r.hi = (int64_t)b.hi;
  return r;
}

/* ---- known divisors ------------------------------------------------------------ */

#define DIV_CAP ((int64_t)1 << 62)

static int64_t const_div(const loom_sym_expr *c) {
  if (c->u.num.is_big) { /* largest power of two dividing it, capped */
    mp_bitcnt_t z = mpz_scan1(c->u.num.big, 0);
    return z >= 62 ? DIV_CAP : (int64_t)1 << z;
  }
  int64_t v = c->u.num.small;
  if (v == INT64_MIN) return DIV_CAP;
  v = v < 0 ? -v : v;
  return v > DIV_CAP ? sym_gcd64(v, DIV_CAP) : v;
}

static int64_t kd(loom_sym_ctx *cx, const loom_sym_expr *e, int depth) {
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_CONST: return const_div(e);
  case LOOM_SYM_VAR: {
    const sym_var_facts *f = sym_facts_of(cx, e);
    if (!f) return 1;
    int64_t d = f->div;
    if (f->subst && depth < 16) {
      int64_t s = kd(cx, f->subst, depth + 1);
      d = s == 0 ? 0 : (d > s ? d : s); /* both divide e; the larger is a valid answer */
    }
    if (!f->lo_inf && !f->hi_inf && f->lo == 0 && f->hi == 0) return 0;
    return d;
  }
  case LOOM_SYM_ADD: {
    int64_t g = const_div(e->k);
    for (uint32_t i = 0; i < e->n && g != 1; i++) g = sym_gcd64(g, kd(cx, e->ops[i], depth + 1));
    return g;
  }
  case LOOM_SYM_MUL: {
    int64_t d = const_div(e->k);
    for (uint32_t i = 0; i < e->n; i++) {
      int64_t a = kd(cx, e->ops[i], depth + 1);
      if (a == 0) return 0;
      for (uint32_t j = 0; j < e->exps[i]; j++) {
        int64_t p;
        if (__builtin_mul_overflow(d, a, &p) || p > DIV_CAP) return d; /* a divisor still */
        d = p;
      }
    }
    return d;
  }
  case LOOM_SYM_FLOORMOD: /* a - b*q: divisible by gcd(kd(a), kd(b)) */
    return sym_gcd64(kd(cx, e->ops[0], depth + 1), kd(cx, e->ops[1], depth + 1));
  case LOOM_SYM_MIN:
  case LOOM_SYM_MAX: return sym_gcd64(kd(cx, e->ops[0], depth + 1), kd(cx, e->ops[1], depth + 1));
  case LOOM_SYM_SELECT: return sym_gcd64(kd(cx, e->ops[1], depth + 1), kd(cx, e->ops[2], depth + 1));
  default: return 1;
  }
}

int64_t loom_sym_known_divisor(loom_sym_ctx *cx, const loom_sym_expr *e) {
  if (!e) return 1;
  int64_t d = kd(cx, e, 0);
  return d > DIV_CAP ? DIV_CAP : d;
}

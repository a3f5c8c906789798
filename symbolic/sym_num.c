/* sym_num.c — exact integer arithmetic on CONST nodes: an int64 fast path with
 * __builtin_*_overflow, and GMP when a result does not fit. Results are interned
 * constants (a value that fits int64 is always stored small). */
#include "symbolic/sym_internal.h"

/* Loads a constant into an mpz (inside SYM_GUARD). */
static void load(mpz_t dst, const loom_sym_expr *a) {
  if (a->u.num.is_big) mpz_set(dst, a->u.num.big);
  else mpz_set_si(dst, (long)a->u.num.small);
}

int sym_num_sign(const loom_sym_expr *a) {
  if (a->u.num.is_big) return mpz_sgn(a->u.num.big);
  return (a->u.num.small > 0) - (a->u.num.small < 0);
}

int sym_num_cmp(const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a->u.num.is_big && !b->u.num.is_big)
    return (a->u.num.small > b->u.num.small) - (a->u.num.small < b->u.num.small);
  if (a->u.num.is_big && b->u.num.is_big) {
    int c = mpz_cmp(a->u.num.big, b->u.num.big);
    return (c > 0) - (c < 0);
  }
  if (a->u.num.is_big) return mpz_sgn(a->u.num.big); /* |big| > any int64 */
  return -mpz_sgn(b->u.num.big);
}

typedef enum { OP_ADD, OP_MUL, OP_FDIV, OP_FMOD, OP_GCD } num_op;

/* The GMP path of every binary operation. */
static const loom_sym_expr *slow(loom_sym_ctx *cx, num_op op, const loom_sym_expr *a,
                                 const loom_sym_expr *b) {
  const loom_sym_expr *r = NULL;
  SYM_GUARD(
      {
        load(cx->t1, a);
        load(cx->t2, b);
        switch (op) {
        case OP_ADD: mpz_add(cx->t0, cx->t1, cx->t2); break;
        case OP_MUL: mpz_mul(cx->t0, cx->t1, cx->t2); break;
        case OP_FDIV: mpz_fdiv_q(cx->t0, cx->t1, cx->t2); break;
        case OP_FMOD: mpz_fdiv_r(cx->t0, cx->t1, cx->t2); break;
        case OP_GCD: mpz_gcd(cx->t0, cx->t1, cx->t2); break;
        }
        r = sym_const_mpz(cx, cx->t0);
      },
      r = sym_oom(cx));
  return r;
}

const loom_sym_expr *sym_num_add(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  int64_t r;
  if (!a->u.num.is_big && !b->u.num.is_big) {
    if (a->u.num.small == 0) return b;
    if (b->u.num.small == 0) return a;
    if (!__builtin_add_overflow(a->u.num.small, b->u.num.small, &r)) return loom_sym_const(cx, r);
  }
  return slow(cx, OP_ADD, a, b);
}

const loom_sym_expr *sym_num_mul(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  int64_t r;
  if (!a->u.num.is_big && !b->u.num.is_big) {
    if (a->u.num.small == 1) return b;
    if (b->u.num.small == 1) return a;
    if (!__builtin_mul_overflow(a->u.num.small, b->u.num.small, &r)) return loom_sym_const(cx, r);
  }
  return slow(cx, OP_MUL, a, b);
}

const loom_sym_expr *sym_num_neg(loom_sym_ctx *cx, const loom_sym_expr *a) {
  return sym_num_mul(cx, a, cx->cm1);
}

/* Floor division of int64 values; false on overflow (INT64_MIN / -1). */
static bool fdiv64(int64_t a, int64_t b, int64_t *q) {
  if (b == -1 && a == INT64_MIN) return false;
  int64_t t = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) t--;
  *q = t;
  return true;
}

const loom_sym_expr *sym_num_fdiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  int64_t q;
  if (!a->u.num.is_big && !b->u.num.is_big && fdiv64(a->u.num.small, b->u.num.small, &q))
    return loom_sym_const(cx, q);
  return slow(cx, OP_FDIV, a, b);
}

const loom_sym_expr *sym_num_fmod(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a->u.num.is_big && !b->u.num.is_big) {
    int64_t x = a->u.num.small, y = b->u.num.small;
    if (y == -1) return cx->c0;
    int64_t r = x % y;
    if (r != 0 && ((r < 0) != (y < 0))) r += y;
    return loom_sym_const(cx, r);
  }
  return slow(cx, OP_FMOD, a, b);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

static uint64_t abs_u64(int64_t v) { return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v; }

const loom_sym_expr *sym_num_gcd(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a->u.num.is_big && !b->u.num.is_big) {
    uint64_t g = gcd_u64(abs_u64(a->u.num.small), abs_u64(b->u.num.small));
    if (g <= (uint64_t)INT64_MAX) return loom_sym_const(cx, (int64_t)g);
  }
  return slow(cx, OP_GCD, a, b);
}

bool sym_num_divides(loom_sym_ctx *cx, const loom_sym_expr *b, const loom_sym_expr *a) {
  if (!a->u.num.is_big && !b->u.num.is_big) {
    if (b->u.num.small == -1) return true;
    return a->u.num.small % b->u.num.small == 0;
  }
  if (a->u.num.is_big && b->u.num.is_big) return mpz_divisible_p(a->u.num.big, b->u.num.big) != 0;
  if (a->u.num.is_big) return mpz_divisible_ui_p(a->u.num.big, abs_u64(b->u.num.small)) != 0;
  (void)cx;
  return a->u.num.small == 0; /* |b| > |a| */
}

void sym_num_print(const loom_sym_expr *a, loom_strbuf *sb) {
  if (!a->u.num.is_big) {
    loom_strbuf_printf(sb, "%lld", (long long)a->u.num.small);
    return;
  }
  size_t n = mpz_sizeinbase(a->u.num.big, 10) + 2;
  char *buf = loom_alloc(NULL, n);
  if (!buf) {
    sb->oom = true;
    return;
  }
  bool ok = true;
  SYM_GUARD(mpz_get_str(buf, 10, a->u.num.big), ok = false);
  if (ok) loom_strbuf_puts(sb, buf);
  else sb->oom = true;
  loom_free(NULL, buf, n);
}

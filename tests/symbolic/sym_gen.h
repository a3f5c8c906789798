/* sym_gen.h — random expression trees for the symbolic property tests and benchmark.
 *
 * A tree is built from a seeded splitmix64 stream; it can be turned into a canonical
 * loom_sym_expr (through the public constructors) and evaluated naively with checked
 * int64 arithmetic, independently of symbolic/. Header-only (static functions). */
#ifndef LOOM_TESTS_SYM_GEN_H
#define LOOM_TESTS_SYM_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolic/sym.h"

enum {
  G_CONST, G_VAR, G_ADD, G_SUB, G_NEG, G_MUL, G_FDIV, G_FMOD, G_CDIV, G_MIN, G_MAX,
  G_LT, G_LE, G_EQ, G_NE, G_AND, G_OR, G_NOT, G_SELECT
};

typedef struct gnode {
  int op;
  int a, b, c;   /* children (indices into the tree) */
  int64_t value; /* G_CONST */
  int var;       /* G_VAR: index into the variable array */
} gnode;

#define GEN_MAX 96
typedef struct gtree {
  gnode n[GEN_MAX];
  int len;
  int root;
  int nvars; /* variables 0 .. nvars-1 may appear */
  bool logic; /* comparisons / select allowed */
} gtree;

static inline uint64_t gen_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
static inline int64_t gen_range(uint64_t *s, int64_t lo, int64_t hi) {
  return lo + (int64_t)(gen_next(s) % (uint64_t)(hi - lo + 1));
}

static inline int64_t gen_const(uint64_t *s) {
  switch (gen_next(s) % 10) {
  case 0: return 0;
  case 1: return 1;
  case 2: return -1;
  case 3: return gen_range(s, -1000, 1000);
  case 4: return (int64_t)1 << gen_range(s, 1, 62);
  case 5: return INT64_MAX - gen_range(s, 0, 3);
  case 6: return gen_range(s, 2, 16) * (gen_next(s) & 1 ? 1 : -1);
  default: return gen_range(s, -12, 12);
  }
}

/* A random subtree of about `size` nodes; returns its index. */
static inline int gen_rec(gtree *t, uint64_t *s, int size) {
  if (t->len >= GEN_MAX - 4) size = 1;
  int i = t->len++;
  gnode *g = &t->n[i];
  g->a = g->b = g->c = -1;
  if (size <= 1) {
    if (gen_next(s) % 3 == 0) {
      g->op = G_CONST;
      g->value = gen_const(s);
    } else {
      g->op = G_VAR;
      g->var = (int)(gen_next(s) % (uint64_t)t->nvars);
    }
    return i;
  }
  int r = (int)(gen_next(s) % 100);
  int op = r < 22 ? G_ADD : r < 32 ? G_SUB : r < 36 ? G_NEG : r < 54 ? G_MUL : r < 64 ? G_FDIV
         : r < 72 ? G_FMOD : r < 76 ? G_CDIV : r < 84 ? G_MIN : r < 92 ? G_MAX : G_ADD;
  if (t->logic && r >= 92) {
    static const int lops[] = {G_LT, G_LE, G_EQ, G_NE, G_AND, G_OR, G_NOT, G_SELECT};
    op = lops[gen_next(s) % 8];
  }
  g->op = op;
  if (op == G_NEG || op == G_NOT) {
    int a = gen_rec(t, s, size - 1);
    t->n[i].a = a;
    return i;
  }
  if (op == G_SELECT && size >= 3) {
    int k = (size - 1) / 3;
    int a = gen_rec(t, s, k > 0 ? k : 1);
    int b = gen_rec(t, s, k > 0 ? k : 1);
    int c = gen_rec(t, s, size - 1 - 2 * (k > 0 ? k : 1) > 0 ? size - 1 - 2 * (k > 0 ? k : 1) : 1);
    t->n[i].a = a, t->n[i].b = b, t->n[i].c = c;
    return i;
  }
  if (op == G_SELECT) t->n[i].op = op = G_ADD;
  int left = 1 + (int)(gen_next(s) % (uint64_t)(size - 1 > 1 ? size - 1 : 1));
  if (left >= size - 1) left = size - 2 > 0 ? size - 2 : 1;
  int a = gen_rec(t, s, left);
  int b;
  if ((op == G_FDIV || op == G_FMOD || op == G_CDIV) && gen_next(s) % 4 != 0) {
    b = t->len++; /* mostly constant divisors, sometimes symbolic ones */
    t->n[b].op = G_CONST;
    t->n[b].a = t->n[b].b = t->n[b].c = -1;
    int64_t d = gen_range(s, -9, 16);
    t->n[b].value = d == 0 ? 4 : d;
  } else {
    b = gen_rec(t, s, size - 1 - left > 0 ? size - 1 - left : 1);
  }
  t->n[i].a = a, t->n[i].b = b;
  return i;
}

static inline void gen_tree(gtree *t, uint64_t *s, int size, int nvars, bool logic) {
  t->len = 0;
  t->nvars = nvars;
  t->logic = logic;
  t->root = gen_rec(t, s, size);
}

/* Canonical expression through the public constructors; `swap` builds commutative
 * operations with their operands swapped (same canonical form expected). */
static inline const loom_sym_expr *gen_build(loom_sym_ctx *cx, const gtree *t, int i, const loom_sym_expr *const *vars,
                                      bool swap) {
  const gnode *g = &t->n[i];
  if (g->op == G_CONST) return loom_sym_const(cx, g->value);
  if (g->op == G_VAR) return vars[g->var];
  const loom_sym_expr *a = gen_build(cx, t, g->a, vars, swap);
  if (g->op == G_NEG) return loom_sym_neg(cx, a);
  if (g->op == G_NOT) return loom_sym_not(cx, a);
  const loom_sym_expr *b = gen_build(cx, t, g->b, vars, swap);
  const loom_sym_expr *x = swap ? b : a, *y = swap ? a : b;
  switch (g->op) {
  case G_ADD: return loom_sym_add(cx, x, y);
  case G_SUB: return loom_sym_sub(cx, a, b);
  case G_MUL: return loom_sym_mul(cx, x, y);
  case G_FDIV: return loom_sym_floordiv(cx, a, b);
  case G_FMOD: return loom_sym_floormod(cx, a, b);
  case G_CDIV: return loom_sym_ceildiv(cx, a, b);
  case G_MIN: return loom_sym_min(cx, x, y);
  case G_MAX: return loom_sym_max(cx, x, y);
  case G_LT: return loom_sym_cmp(cx, LOOM_SYM_LT, a, b);
  case G_LE: return loom_sym_cmp(cx, LOOM_SYM_LE, a, b);
  case G_EQ: return loom_sym_cmp(cx, LOOM_SYM_EQ, x, y);
  case G_NE: return loom_sym_cmp(cx, LOOM_SYM_NE, x, y);
  case G_AND: return loom_sym_and(cx, x, y);
  case G_OR: return loom_sym_or(cx, x, y);
  case G_SELECT: return loom_sym_select(cx, a, b, gen_build(cx, t, g->c, vars, swap));
  default: return NULL;
  }
}

/* Naive checked evaluation; false when it overflows or divides by zero. */
static inline bool gen_eval(const gtree *t, int i, const int64_t *vals, int64_t *out) {
  const gnode *g = &t->n[i];
  int64_t a, b, r;
  if (g->op == G_CONST) return *out = g->value, true;
  if (g->op == G_VAR) return *out = vals[g->var], true;
  if (!gen_eval(t, g->a, vals, &a)) return false;
  if (g->op == G_NEG) return !__builtin_sub_overflow((int64_t)0, a, out);
  if (g->op == G_NOT) return *out = a == 0, true;
  if (g->op == G_SELECT) return gen_eval(t, a ? g->b : g->c, vals, out);
  if (!gen_eval(t, g->b, vals, &b)) return false;
  switch (g->op) {
  case G_ADD: return !__builtin_add_overflow(a, b, out);
  case G_SUB: return !__builtin_sub_overflow(a, b, out);
  case G_MUL: return !__builtin_mul_overflow(a, b, out);
  case G_FDIV:
  case G_FMOD:
  case G_CDIV:
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    if (g->op == G_CDIV) {
      r = a / b;
      if (a % b != 0 && ((a < 0) == (b < 0))) r++;
      return *out = r, true;
    }
    r = a / b;
    if (a % b != 0 && ((a < 0) != (b < 0))) r--;
    if (g->op == G_FDIV) return *out = r, true;
    return *out = (int64_t)((__int128)a - (__int128)r * b), true;
  case G_MIN: return *out = a < b ? a : b, true;
  case G_MAX: return *out = a > b ? a : b, true;
  case G_LT: return *out = a < b, true;
  case G_LE: return *out = a <= b, true;
  case G_EQ: return *out = a == b, true;
  case G_NE: return *out = a != b, true;
  case G_AND: return *out = a && b, true;
  case G_OR: return *out = a || b, true;
  default: return false;
  }
}

#endif

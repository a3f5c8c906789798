/* sym_internal.h — what the files of symbolic/ share: the node layout, the context,
 * exact numbers (int64 fast path, GMP beyond), canonical-polynomial helpers and the
 * out-of-memory recovery used around GMP.
 *
 * Node layout by kind (every node is hash-consed; `ops` is a flexible array):
 *   CONST   num.small (fits int64) or num.big (mpz, only when it does not fit)
 *   VAR     var.name, var.id, var.kind
 *   ADD     k = constant term (a CONST node, may be 0); ops = >= 1 terms, each a
 *           monomial with its coefficient (an atom, or a MUL); sorted, distinct monomials
 *   MUL     k = coefficient (CONST, nonzero); ops = atoms; exps = their exponents (>= 1);
 *           atoms sorted and distinct. A MUL with k == 1 and one atom of exponent 1 is
 *           never built (it is the atom itself).
 *   others  ops = operands (arity from sym_kinds.def)
 * `unit` of a term is the same monomial with coefficient 1 (used as the sort key of terms).
 *
 * GMP and out of memory: GMP cannot take a NULL from its allocator. The allocator
 * installed by loom_sym_ctx_create routes through loom_alloc; when that fails it
 * longjmps to the recovery point of the symbolic operation in progress (SYM_GUARD),
 * which records the sticky out-of-memory error and returns NULL. Scratch mpz values
 * live in the context (not on the stack), so nothing is lost by the jump. */
#ifndef LOOM_SYMBOLIC_SYM_INTERNAL_H
#define LOOM_SYMBOLIC_SYM_INTERNAL_H

#include <gmp.h>
#include <setjmp.h>

#include "base/arena.h"
#include "base/intern.h"
#include "base/map.h"
#include "base/vec.h"
#include "symbolic/sym.h"

struct loom_sym_expr {
  uint64_t hash;              /* structural hash */
  uint8_t kind;               /* loom_sym_kind */
  uint32_t n;                 /* number of ops */
  const loom_sym_expr *next;  /* next node in the same intern bucket */
  const loom_sym_expr *k;     /* ADD: constant term; MUL: coefficient; else NULL */
  const loom_sym_expr *unit;  /* monomial with coefficient 1 (atoms: itself) */
  uint32_t *exps;             /* MUL: exponent of each op */
  union {
    struct {
      int64_t small;          /* the value when !is_big */
      bool is_big;            /* value does not fit int64: see big */
      mpz_t big;              /* the value when is_big */
    } num;
    struct {
      const char *name;       /* interned name */
      uint32_t id;            /* unique id in the context */
      uint8_t vkind;          /* loom_sym_var_kind */
    } var;
  } u;
  const loom_sym_expr *ops[]; /* operands */
};

/* Facts about one variable (indexed by var id). */
typedef struct sym_var_facts {
  int64_t lo, hi;             /* range; lo_inf/hi_inf below */
  bool lo_inf, hi_inf;        /* open ends */
  int64_t div;                /* var % div == 0 (1: nothing known) */
  const loom_sym_expr *subst; /* learned equality: var == subst (NULL: none) */
  const loom_sym_expr *var;   /* the variable itself */
} sym_var_facts;

/* Undo records of the facts kept in lists rather than per variable. */
#define SYM_UNDO_ZERO UINT32_MAX        /* a zero fact (cx->zeros) was appended */
#define SYM_UNDO_NONNEG (UINT32_MAX - 1) /* a non-negativity fact (cx->nonnegs) was appended */
/* One undo-log record: restores a var's facts as they were. */
typedef struct sym_undo {
  uint32_t id;                /* var id; SYM_UNDO_ZERO / SYM_UNDO_NONNEG: such a fact was appended */
  sym_var_facts old;          /* previous facts */
} sym_undo;

struct loom_sym_ctx {
  loom_allocator *alloc;      /* where everything comes from */
  loom_arena arena;           /* nodes */
  loom_interner names;        /* variable names */
  loom_map table;             /* hash -> first node of the bucket chain */
  size_t count;               /* nodes interned */
  uint32_t next_var;          /* next variable id */
  loom_status err;            /* sticky error */
  LOOM_VEC(const loom_sym_expr *) bigs;   /* CONST nodes holding an mpz (cleared at destroy) */
  LOOM_VEC(sym_var_facts) facts;          /* by var id */
  LOOM_VEC(sym_undo) undo;                /* fact changes, newest last */
  LOOM_VEC(size_t) scopes;                /* undo length at each push */
  LOOM_VEC(const loom_sym_expr *) zeros;  /* learned "e == 0" facts that are not substitutions */
  LOOM_VEC(const loom_sym_expr *) nonnegs; /* "e >= 0" facts relating variables (loom_sym_assume_nonneg) */
  loom_map simp_memo;         /* simplify cache (cleared when facts change) */
  uint64_t facts_gen;         /* bumped on every fact change */
  mpz_t t0, t1, t2;           /* GMP scratch */
  const loom_sym_expr *c0, *c1, *cm1; /* constants 0, 1, -1 */
};

/* ---- errors and GMP recovery (sym_ctx.c) ---- */
/* Records `s` as the sticky error if none is set (else frees it); returns NULL. */
const loom_sym_expr *sym_fail(loom_sym_ctx *cx, loom_status s);
const loom_sym_expr *sym_oom(loom_sym_ctx *cx);
/* The recovery point of the innermost guarded region on this thread. */
extern _Thread_local jmp_buf *sym_gmp_jmp;

/* Runs `stmt` (GMP calls) guarded: on GMP allocation failure, `on_oom` runs instead. */
#define SYM_GUARD(stmt, on_oom)                          \
  do {                                                   \
    jmp_buf sym_jb_;                                     \
    jmp_buf *sym_prev_ = sym_gmp_jmp;                    \
    if (setjmp(sym_jb_) == 0) {                          \
      sym_gmp_jmp = &sym_jb_;                            \
      stmt;                                              \
      sym_gmp_jmp = sym_prev_;                           \
    } else {                                             \
      sym_gmp_jmp = sym_prev_;                           \
      on_oom;                                            \
    }                                                    \
  } while (0)

/* ---- interning (sym_ctx.c) ---- */
/* Interns a node of `kind` with operands; `k` and `exps` as in the layout above. */
const loom_sym_expr *sym_intern(loom_sym_ctx *cx, loom_sym_kind kind, const loom_sym_expr *k,
                                const loom_sym_expr *const *ops, const uint32_t *exps, uint32_t n);
/* Interns the constant in cx->t0 (small if it fits). */
const loom_sym_expr *sym_const_mpz(loom_sym_ctx *cx, const mpz_t v);
static inline bool sym_is_kind(const loom_sym_expr *e, loom_sym_kind k) { return e->kind == k; }
static inline bool sym_is_small(const loom_sym_expr *e) {
  return e->kind == LOOM_SYM_CONST && !e->u.num.is_big;
}
static inline bool sym_is_zero(const loom_sym_expr *e) { return sym_is_small(e) && e->u.num.small == 0; }
static inline bool sym_is_one(const loom_sym_expr *e) { return sym_is_small(e) && e->u.num.small == 1; }
/* Atoms are everything but CONST, ADD and MUL. */
static inline bool sym_is_atom(const loom_sym_expr *e) {
  return e->kind != LOOM_SYM_CONST && e->kind != LOOM_SYM_ADD && e->kind != LOOM_SYM_MUL;
}
/* Boolean-valued kinds (value always 0 or 1). */
static inline bool sym_is_bool(const loom_sym_expr *e) {
  return (e->kind >= LOOM_SYM_EQ && e->kind <= LOOM_SYM_NOT) ||
         (sym_is_small(e) && (e->u.num.small == 0 || e->u.num.small == 1));
}

/* gcd(|a|, |b|) of int64 values (gcd(0, b) = |b|); a, b != INT64_MIN. */
static inline int64_t sym_gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a < 0 ? -a : a;
}

/* ---- exact numbers on CONST nodes (sym_num.c) ---- */
int sym_num_sign(const loom_sym_expr *a);
int sym_num_cmp(const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *sym_num_add(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *sym_num_mul(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *sym_num_neg(loom_sym_ctx *cx, const loom_sym_expr *a);
/* Floor division / floor modulo; b != 0. */
const loom_sym_expr *sym_num_fdiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *sym_num_fmod(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* gcd(|a|, |b|) (gcd(0, b) = |b|). */
const loom_sym_expr *sym_num_gcd(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* a divisible by b (b != 0). */
bool sym_num_divides(loom_sym_ctx *cx, const loom_sym_expr *b, const loom_sym_expr *a);
void sym_num_print(const loom_sym_expr *a, loom_strbuf *sb);

/* ---- polynomials (sym_poly.c) ---- */
/* Total order of expressions used for canonical sorting. */
int sym_order(const loom_sym_expr *a, const loom_sym_expr *b);
/* Coefficient and coefficient-1 monomial of a term (atom or MUL). */
const loom_sym_expr *sym_term_coef(loom_sym_ctx *cx, const loom_sym_expr *t);
/* Splits e into constant term and the non-constant rest (rest may be 0). */
void sym_split_const(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr **c0,
                     const loom_sym_expr **rest);
/* coef * unit-monomial, canonical. */
const loom_sym_expr *sym_scale(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr *c);
/* gcd of the coefficients of the non-constant terms of e (0 if none). */
const loom_sym_expr *sym_content(loom_sym_ctx *cx, const loom_sym_expr *e);
/* e / c for a constant c that divides every coefficient and the constant term. */
const loom_sym_expr *sym_div_exact(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr *c);
/* Number of terms (constant included) and access to them as expressions. */
size_t sym_num_terms(const loom_sym_expr *e);

/* ---- div/mod and min/max (sym_div.c, sym_minmax.c) ---- */
const loom_sym_expr *sym_floordiv_raw(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *sym_floormod_raw(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);

/* ---- facts (sym_facts.c) ---- */
/* Facts of `var` (defaults by kind if nothing assumed); NULL when memory runs out. */
const sym_var_facts *sym_facts_of(loom_sym_ctx *cx, const loom_sym_expr *var);
/* Applies learned substitutions to `e` (canonical result). */
const loom_sym_expr *sym_apply_eqs(loom_sym_ctx *cx, const loom_sym_expr *e);

/* ---- bounds (sym_bounds.c) ---- */
/* Interval with __int128 ends; +-SYM_INF stands for infinity. */
#define SYM_INF (((__int128)1) << 100)
typedef struct sym_ival {
  __int128 lo, hi; /* lo <= value <= hi */
} sym_ival;
sym_ival sym_bounds128(loom_sym_ctx *cx, const loom_sym_expr *e);

/* ---- text helpers (sym_print.c) ---- */
/* Writes "n = 3, m = 5" for the variables of e bound in env. */
void sym_print_bindings(const loom_sym_expr *e, const loom_sym_env *env, loom_strbuf *sb);

#endif

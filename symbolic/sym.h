/* sym.h — symbolic integer expressions for shapes: the public interface of symbolic/.
 *
 *     loom_sym_ctx *cx;
 *     LOOM_PROPAGATE(loom_sym_ctx_create(NULL, &cx));
 *     const loom_sym_expr *b = loom_sym_var_new(cx, "b", LOOM_SYM_VAR_SHAPE);
 *     const loom_sym_expr *s = loom_sym_var_new(cx, "s", LOOM_SYM_VAR_SHAPE);
 *     const loom_sym_expr *rows = loom_sym_mul(cx, b, s);            // b*s
 *     const loom_sym_expr *half = loom_sym_floordiv(cx, loom_sym_add(cx, rows, rows),
 *                                                   loom_sym_const(cx, 2)); // b*s
 *     assert(half == rows);                                          // canonical: same pointer
 *     if (!half) return loom_sym_ctx_take_error(cx);                 // sticky error (OOM, /0)
 *
 * Expressions are immutable and hash-consed in a context: two expressions
 * built in one context are structurally equal iff they are the same pointer.
 * Every constructor returns the CANONICAL form (see "Canonical form" below), which
 * does not depend on facts. Fact-aware rewriting (ranges, divisibility, learned
 * equalities) is loom_sym_simplify.
 *
 * Errors: constructors never fail loudly. On out-of-memory, or a constant
 * division by zero, a constructor returns NULL and records a sticky error in the
 * context; any constructor given a NULL operand returns NULL. Callers check the
 * final result once and call loom_sym_ctx_take_error.
 *
 * Canonical form (fact-free):
 *   - a sum  c0 + c1*m1 + ... + ck*mk  of monomials with exact nonzero integer
 *     coefficients (GMP where int64 would overflow), monomials in a fixed total order;
 *   - a monomial is a product of atoms with positive exponents, atoms in a fixed order;
 *   - atoms: variables, and floordiv / floormod / min / max / comparison / select
 *     nodes whose operands are themselves canonical;
 *   - constant folding everywhere; floordiv/floormod by constants rewritten exactly
 *     where divisibility is structural: floordiv(4*n + 8, 4) = n + 2,
 *     floormod(2*n, 2) = 0, floordiv(n, 1) = n, floordiv(floordiv(n, a), b) = floordiv(n, a*b)
 *     for positive constants a, b; min/max of provably ordered operands (difference is a
 *     constant) fold: max(n, n + 1) = n + 1.
 *
 * Printing a canonical expression and parsing it back gives the same pointer.
 */
#ifndef LOOM_SYMBOLIC_SYM_H
#define LOOM_SYMBOLIC_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/diag.h"
#include "base/status.h"
#include "base/strbuf.h"

typedef struct loom_sym_ctx loom_sym_ctx;
typedef struct loom_sym_expr loom_sym_expr;

/* Node kinds, from symbolic/sym_kinds.def (one line per kind with its meaning). */
typedef enum loom_sym_kind {
#define LOOM_SYM_KIND(name, text, arity) LOOM_SYM_##name,
#include "symbolic/sym_kinds.def"
#undef LOOM_SYM_KIND
  LOOM_SYM_KIND_COUNT
} loom_sym_kind;

/* What a variable ranges over by default. */
typedef enum loom_sym_var_kind {
  LOOM_SYM_VAR_SHAPE, /* a dimension: range [0, +inf) unless facts say more */
  LOOM_SYM_VAR_INT,   /* any int64 value: range (-inf, +inf) */
} loom_sym_var_kind;

/* Three-valued answer of the prover. TRUE and FALSE are never wrong. */
typedef enum loom_sym_truth {
  LOOM_SYM_UNKNOWN = 0,
  LOOM_SYM_TRUE = 1,
  LOOM_SYM_FALSE = 2,
} loom_sym_truth;

/* ---- context ---------------------------------------------------------- */

/* `alloc` NULL means the system allocator. Also installs GMP's memory functions
 * (once per process) so GMP never aborts on its own. */
loom_status loom_sym_ctx_create(loom_allocator *alloc, loom_sym_ctx **out);
void loom_sym_ctx_destroy(loom_sym_ctx *cx);
/* The sticky error recorded by a failed constructor (LOOM_OK if none); clears it. */
loom_status loom_sym_ctx_take_error(loom_sym_ctx *cx);
/* Number of distinct expressions interned (for tests and benchmarks). */
size_t loom_sym_ctx_size(const loom_sym_ctx *cx);

/* ---- constructors (canonical, hash-consed; NULL + sticky error on failure) ---- */

const loom_sym_expr *loom_sym_const(loom_sym_ctx *cx, int64_t v);
/* A constant given in decimal (any size; GMP). NULL on a malformed string. */
const loom_sym_expr *loom_sym_const_str(loom_sym_ctx *cx, const char *decimal);
/* A FRESH variable each call (distinct id), even for a name used before. */
const loom_sym_expr *loom_sym_var_new(loom_sym_ctx *cx, const char *name, loom_sym_var_kind kind);
const loom_sym_expr *loom_sym_add(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_sub(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_neg(loom_sym_ctx *cx, const loom_sym_expr *a);
const loom_sym_expr *loom_sym_mul(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* Floor division and its remainder (sign of the divisor, as Python's // and %). */
const loom_sym_expr *loom_sym_floordiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_floormod(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* ceil(a / b) = floordiv(a + b - 1, b) for b > 0; provided because shapes need it often. */
const loom_sym_expr *loom_sym_ceildiv(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_min(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_max(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* Comparisons and logic evaluate to 0 or 1; used by guards. */
const loom_sym_expr *loom_sym_cmp(loom_sym_ctx *cx, loom_sym_kind op, const loom_sym_expr *a,
                                  const loom_sym_expr *b); /* op: EQ NE LT LE (GT/GE swap) */
const loom_sym_expr *loom_sym_and(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_or(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
const loom_sym_expr *loom_sym_not(loom_sym_ctx *cx, const loom_sym_expr *a);
const loom_sym_expr *loom_sym_select(loom_sym_ctx *cx, const loom_sym_expr *cond,
                                     const loom_sym_expr *then_e, const loom_sym_expr *else_e);

/* ---- inspection ------------------------------------------------------- */

loom_sym_kind loom_sym_kind_of(const loom_sym_expr *e);
const char *loom_sym_kind_name(loom_sym_kind k);
/* True and the value when `e` is a constant that fits int64. */
bool loom_sym_is_const(const loom_sym_expr *e, int64_t *out_value);
bool loom_sym_is_var(const loom_sym_expr *e);
/* Variable name (not unique: two variables may share a name) and unique id. */
const char *loom_sym_var_name(const loom_sym_expr *var);
uint32_t loom_sym_var_id(const loom_sym_expr *var);
/* Operands of an interior node, in canonical order (for ADD/MUL: the terms/factors
 * as expressions, with coefficients and exponents folded into them). */
size_t loom_sym_num_operands(const loom_sym_expr *e);
const loom_sym_expr *loom_sym_operand(const loom_sym_expr *e, size_t i);
/* Structural hash (stable within a process run). */
uint64_t loom_sym_hash(const loom_sym_expr *e);
/* Calls fn once for each distinct variable in `e`, in order of first appearance. */
void loom_sym_for_each_var(const loom_sym_expr *e, void (*fn)(void *ud, const loom_sym_expr *var),
                           void *ud);
/* Whether variable `var` occurs in e. */
bool loom_sym_uses_var(const loom_sym_expr *e, const loom_sym_expr *var);
/* Affine view: if e == k*var + c with int64 k != 0 and c, fills them and returns true. */
bool loom_sym_as_affine(const loom_sym_expr *e, const loom_sym_expr **out_var, int64_t *out_k,
                        int64_t *out_c);

/* ---- facts (scoped) --------------------------------------------------- */

/* Facts live in the context and are scoped: push opens a scope, pop drops every fact
 * added since the matching push. Facts never change how constructors canonicalise. */
void loom_sym_facts_push(loom_sym_ctx *cx);
void loom_sym_facts_pop(loom_sym_ctx *cx);
/* lo <= var <= hi; use INT64_MIN / INT64_MAX for an open end. Intersects with what is known.
 * Returns an error when the fact contradicts known facts (empty range). */
loom_status loom_sym_assume_range(loom_sym_ctx *cx, const loom_sym_expr *var, int64_t lo, int64_t hi);
/* var % k == 0 (k > 0). */
loom_status loom_sym_assume_divisible(loom_sym_ctx *cx, const loom_sym_expr *var, int64_t k);
/* a == b for expressions learned equal at a match site (union-find on variables and
 * expressions); later proofs and simplify use it. Error when provably false. */
loom_status loom_sym_assume_eq(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* e >= 0, for a relation between variables that no range states (a loop's iteration number
 * below its count: `n - i - 1 >= 0`): the prover then takes 0 <= d when d - e is provably
 * >= 0. Error when e is a negative constant. */
loom_status loom_sym_assume_nonneg(loom_sym_ctx *cx, const loom_sym_expr *e);
/* Parses and adds a fact written as text: "n >= 1", "n <= 4096", "n % 8 == 0", "m == n".
 * A name resolves to the most recently created variable of the context with that name
 * (a fresh shape variable if there is none). */
loom_status loom_sym_assume_text(loom_sym_ctx *cx, const char *text);

/* ---- analyses ---------------------------------------------------------- */

/* An interval with possibly infinite ends. */
typedef struct loom_sym_interval {
  int64_t lo, hi;       /* valid when the matching flag is false */
  bool lo_inf, hi_inf;  /* -inf / +inf */
} loom_sym_interval;

/* Bounds of `e` under the current facts (sound: the true value always lies inside). */
loom_sym_interval loom_sym_bounds(loom_sym_ctx *cx, const loom_sym_expr *e);
/* Largest k (up to 2^62) such that e % k == 0 is provable (1 when nothing is known; 0 if e == 0). */
int64_t loom_sym_known_divisor(loom_sym_ctx *cx, const loom_sym_expr *e);
loom_sym_truth loom_sym_prove_eq(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
loom_sym_truth loom_sym_prove_le(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
loom_sym_truth loom_sym_prove_lt(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b);
/* a % k == 0 for constant k > 0. */
loom_sym_truth loom_sym_prove_divisible(loom_sym_ctx *cx, const loom_sym_expr *a, int64_t k);
/* A comparison/logic expression (EQ, LT, AND, ...) proved under the facts, by simplification
 * alone (cheap: the importer's shape conditions). loom_sym_prove_cases also splits into cases
 * on min / max / select nodes as loom_sym_prove_eq / le / lt do (min(a, b) + max(a, b) == a + b:
 * true), at up to 2^3 times the work: `loom sym prove`, the Python package's loom.sym. */
loom_sym_truth loom_sym_prove(loom_sym_ctx *cx, const loom_sym_expr *cond);
loom_sym_truth loom_sym_prove_cases(loom_sym_ctx *cx, const loom_sym_expr *cond);
/* Fact-aware simplification (idempotent): uses ranges, divisibility and learned
 * equalities, e.g. floordiv(n, 8) -> 0 when 0 <= n < 8, min(n, 4096) -> n when n <= 4096. */
const loom_sym_expr *loom_sym_simplify(loom_sym_ctx *cx, const loom_sym_expr *e);

/* ---- substitution and evaluation -------------------------------------- */

/* A map from variables to values (evaluation) or to expressions (substitution). */
typedef struct loom_sym_env loom_sym_env;
loom_status loom_sym_env_create(loom_allocator *alloc, loom_sym_env **out);
void loom_sym_env_destroy(loom_sym_env *env);
void loom_sym_env_clear(loom_sym_env *env);
loom_status loom_sym_env_set(loom_sym_env *env, const loom_sym_expr *var, int64_t value);
bool loom_sym_env_get(const loom_sym_env *env, const loom_sym_expr *var, int64_t *out);
/* Makes dst hold exactly src's bindings (a loop's body restores the bindings it started
 * with this way at every iteration). */
loom_status loom_sym_env_assign(loom_sym_env *dst, const loom_sym_env *src);
/* Substitution of expressions for variables (canonical result; NULL + sticky error on failure). */
const loom_sym_expr *loom_sym_subst(loom_sym_ctx *cx, const loom_sym_expr *e,
                                    const loom_sym_expr *const *vars,
                                    const loom_sym_expr *const *values, size_t n);
/* Evaluates `e` with every variable bound in `env`. Errors (never a silent wrap):
 * unbound variable (named), int64 overflow (naming the expression and the bindings),
 * division or modulo by zero. */
loom_status loom_sym_eval(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_env *env,
                          int64_t *out);

/* ---- binding at match sites ------------------------------------------- */

/* Binds the unbound variables of `pattern[0..n)` (one expression per axis) from the
 * concrete `values`, then checks every axis. Bare variables bind directly; affine
 * forms k*v + c are solved (with a divisibility check); axes are processed until no
 * more progress, then every axis is checked. New bindings go into `env`.
 * `what` names the value for messages ("input 'x'"). Failure messages name the axis,
 * the expression, the expected and actual value, and where a variable got its value:
 *   "input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10" */
loom_status loom_sym_bind(loom_sym_ctx *cx, const loom_sym_expr *const *pattern,
                          const int64_t *values, size_t n, loom_sym_env *env, const char *what);

/* ---- text --------------------------------------------------------------- */

/* Appends the canonical text of `e` ("4*n + floordiv(m, 2)", "min(s, 4096)"). Variables
 * print by name; a name shared by two distinct variables in one expression gets "#id". */
void loom_sym_print(const loom_sym_expr *e, loom_strbuf *sb);
/* Same, into a malloc'd string (NULL on OOM). */
char *loom_sym_to_string(const loom_sym_expr *e);

/* Name resolution for the parser: returns the variable for `name`, or NULL to report
 * "unknown symbolic variable". */
typedef const loom_sym_expr *(*loom_sym_resolve_fn)(void *ud, const char *name, size_t len);

/* Parses one expression from src->text starting at *pos; stops before a character that
 * cannot continue it (',' ')' ']' end of text ...), and sets *pos there. Errors are
 * added to `diags` with their location (and the function returns a PARSE_ERROR status).
 * Grammar (precedence low to high):
 *   expr   := or ; or := and ('||' and)* ; and := not ('&&' not)* ; not := '!' not | cmp
 *   cmp    := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)?
 *   sum    := term (('+'|'-') term)* ; term := unary (('*'|'//'|'%') unary)*
 *   unary  := '-' unary | atom
 *   atom   := INT | NAME | '(' expr ')' | NAME '(' expr (',' expr)* ')'
 *             -- calls: floordiv, floormod, ceildiv, min, max, select */
loom_status loom_sym_parse(loom_sym_ctx *cx, const loom_source *src, size_t *pos,
                           loom_sym_resolve_fn resolve, void *ud, loom_diag_list *diags,
                           const loom_sym_expr **out);

/* A name table for callers that want "same name, same variable" (CLI, tests):
 * unknown names get a fresh variable of `kind`. */
typedef struct loom_sym_names loom_sym_names;
loom_status loom_sym_names_create(loom_sym_ctx *cx, loom_sym_var_kind kind, loom_sym_names **out);
void loom_sym_names_destroy(loom_sym_names *names);
const loom_sym_expr *loom_sym_names_get(loom_sym_names *names, const char *name, size_t len);
/* Resolver that uses a loom_sym_names as its `ud`. */
const loom_sym_expr *loom_sym_names_resolve(void *names, const char *name, size_t len);
/* Parses a whole string (all of it must be one expression) using `names`. Errors name
 * `source_name` and the column, with a caret. */
loom_status loom_sym_parse_string(loom_sym_ctx *cx, loom_sym_names *names, const char *source_name,
                                  const char *text, const loom_sym_expr **out);

#endif

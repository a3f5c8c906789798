/* sym_simplify.c — substitution, learned-equality application, fact-aware
 * simplification and the three-valued prover.
 *
 * Simplify rebuilds an expression bottom-up through the canonical constructors, with
 * learned substitutions applied to variables and the fact rules below applied to each
 * rebuilt node, and repeats until nothing changes (so it is idempotent). The prover
 * reduces every question to the bounds / known divisor of one simplified difference;
 * it says TRUE or FALSE only when those analyses (which are sound) decide it, splitting into
 * cases on the difference's min / max / select nodes when they do not (min(a, b) + max(a, b)
 * == a + b: a <= b gives a + b, b < a gives b + a). */
#include "symbolic/sym_internal.h"

typedef const loom_sym_expr *(*var_fn)(loom_sym_ctx *cx, void *ud, const loom_sym_expr *var);
typedef const loom_sym_expr *(*post_fn)(loom_sym_ctx *cx, const loom_sym_expr *e);

static const loom_sym_expr *power(loom_sym_ctx *cx, const loom_sym_expr *x, uint32_t n) {
  const loom_sym_expr *r = cx->c1;
  while (n && r && x) {
    if (n & 1) r = loom_sym_mul(cx, r, x);
    n >>= 1;
    if (n) x = loom_sym_mul(cx, x, x);
  }
  return r;
}

/* The node of e's kind over new operands, through the canonical constructors. */
static const loom_sym_expr *remake(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr **ops) {
  const loom_sym_expr *r;
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_ADD:
    r = e->k;
    for (uint32_t i = 0; i < e->n; i++) r = loom_sym_add(cx, r, ops[i]);
    return r;
  case LOOM_SYM_MUL:
    r = e->k;
    for (uint32_t i = 0; i < e->n; i++) r = loom_sym_mul(cx, r, power(cx, ops[i], e->exps[i]));
    return r;
  case LOOM_SYM_FLOORDIV: return loom_sym_floordiv(cx, ops[0], ops[1]);
  case LOOM_SYM_FLOORMOD: return loom_sym_floormod(cx, ops[0], ops[1]);
  case LOOM_SYM_MIN: return loom_sym_min(cx, ops[0], ops[1]);
  case LOOM_SYM_MAX: return loom_sym_max(cx, ops[0], ops[1]);
  case LOOM_SYM_EQ:
  case LOOM_SYM_NE:
  case LOOM_SYM_LT:
  case LOOM_SYM_LE: return loom_sym_cmp(cx, (loom_sym_kind)e->kind, ops[0], ops[1]);
  case LOOM_SYM_AND: return loom_sym_and(cx, ops[0], ops[1]);
  case LOOM_SYM_OR: return loom_sym_or(cx, ops[0], ops[1]);
  case LOOM_SYM_NOT: return loom_sym_not(cx, ops[0]);
  case LOOM_SYM_SELECT: return loom_sym_select(cx, ops[0], ops[1], ops[2]);
  default: return e;
  }
}

/* Bottom-up rebuild: variables through `vf`, every rebuilt interior node through `pf`. */
static const loom_sym_expr *rebuild(loom_sym_ctx *cx, const loom_sym_expr *e, var_fn vf, void *ud,
                                    post_fn pf, loom_map *memo) {
  if (!e) return NULL;
  if (e->kind == LOOM_SYM_CONST) return e;
  if (e->kind == LOOM_SYM_VAR) return vf(cx, ud, e);
  uint64_t hit;
  if (loom_map_get(memo, (uint64_t)(uintptr_t)e, &hit)) return (const loom_sym_expr *)(uintptr_t)hit;
  const loom_sym_expr *sops[8];
  const loom_sym_expr **ops = sops;
  if (e->n > 8) {
    ops = loom_alloc_array(cx->alloc, e->n, sizeof *ops);
    if (!ops) return sym_oom(cx);
  }
  bool same = true, ok = true;
  for (uint32_t i = 0; i < e->n; i++) {
    ops[i] = rebuild(cx, e->ops[i], vf, ud, pf, memo);
    if (!ops[i]) {
      ok = false;
      break;
    }
    same = same && ops[i] == e->ops[i];
  }
  const loom_sym_expr *r = NULL;
  if (ok) {
    r = same ? e : remake(cx, e, ops);
    if (r && pf && r->kind != LOOM_SYM_CONST && r->kind != LOOM_SYM_VAR) r = pf(cx, r);
  }
  if (ops != sops) loom_free(cx->alloc, ops, e->n * sizeof *ops);
  if (r && !loom_map_put(memo, (uint64_t)(uintptr_t)e, (uint64_t)(uintptr_t)r)) return sym_oom(cx);
  return r;
}

/* ---- substitution ----------------------------------------------------------------- */

typedef struct subst_ud {
  const loom_sym_expr *const *vars, *const *values;
  size_t n;
} subst_ud;

static const loom_sym_expr *subst_var(loom_sym_ctx *cx, void *ud, const loom_sym_expr *v) {
  (void)cx;
  const subst_ud *s = ud;
  for (size_t i = 0; i < s->n; i++)
    if (s->vars[i] == v) return s->values[i];
  return v;
}

const loom_sym_expr *loom_sym_subst(loom_sym_ctx *cx, const loom_sym_expr *e,
                                    const loom_sym_expr *const *vars,
                                    const loom_sym_expr *const *values, size_t n) {
  if (!e) return NULL;
  for (size_t i = 0; i < n; i++)
    if (!values[i]) return NULL;
  subst_ud ud = {vars, values, n};
  loom_map memo;
  loom_map_init(&memo, cx->alloc);
  const loom_sym_expr *r = rebuild(cx, e, subst_var, &ud, NULL, &memo);
  loom_map_destroy(&memo);
  return r;
}

/* A variable under the facts: its learned value, or the constant of a one-point range. */
static const loom_sym_expr *fact_var(loom_sym_ctx *cx, void *ud, const loom_sym_expr *v) {
  (void)ud;
  const sym_var_facts *f = sym_facts_of(cx, v);
  if (!f) return v;
  if (f->subst) return f->subst;
  if (!f->lo_inf && !f->hi_inf && f->lo == f->hi) return loom_sym_const(cx, f->lo);
  return v;
}

const loom_sym_expr *sym_apply_eqs(loom_sym_ctx *cx, const loom_sym_expr *e) {
  if (!e) return NULL;
  loom_map memo;
  loom_map_init(&memo, cx->alloc);
  const loom_sym_expr *r = rebuild(cx, e, fact_var, NULL, NULL, &memo);
  loom_map_destroy(&memo);
  return r;
}

/* ---- raw prover on simplified operands ----------------------------------------------- */

static loom_sym_truth le0_raw(loom_sym_ctx *cx, const loom_sym_expr *d) { /* 0 <= d ? */
  if (!d) return LOOM_SYM_UNKNOWN;
  sym_ival b = sym_bounds128(cx, d);
  if (b.lo >= 0) return LOOM_SYM_TRUE;
  if (b.hi < 0) return LOOM_SYM_FALSE;
  // 0 <= d   if 0 <= d - f for a fact f >= 0 (d = (d - f) + f)
  for (size_t i = 0; i < cx->nonnegs.len; i++) {
    const loom_sym_expr *f = sym_apply_eqs(cx, cx->nonnegs.data[i]);
    const loom_sym_expr *r = f ? loom_sym_sub(cx, d, f) : NULL;
    if (r && sym_bounds128(cx, r).lo >= 0) return LOOM_SYM_TRUE;
  }
  return LOOM_SYM_UNKNOWN;
}

static loom_sym_truth eq0_raw(loom_sym_ctx *cx, const loom_sym_expr *d) { /* d == 0 ? */
  if (!d) return LOOM_SYM_UNKNOWN;
  if (d->kind == LOOM_SYM_CONST) return sym_is_zero(d) ? LOOM_SYM_TRUE : LOOM_SYM_FALSE;
  sym_ival b = sym_bounds128(cx, d);
  if (b.lo > 0 || b.hi < 0) return LOOM_SYM_FALSE;
  if (b.lo == 0 && b.hi == 0) return LOOM_SYM_TRUE;
  /* c0 + rest with every value of rest a multiple of g, and g not dividing c0 */
  const loom_sym_expr *c0, *rest;
  sym_split_const(cx, d, &c0, &rest);
  if (rest) {
    int64_t g = loom_sym_known_divisor(cx, rest);
    if (g > 1 && !sym_num_divides(cx, loom_sym_const(cx, g), c0)) return LOOM_SYM_FALSE;
  }
  for (size_t i = 0; i < cx->zeros.len; i++) {
    const loom_sym_expr *z = sym_apply_eqs(cx, cx->zeros.data[i]);
    if (z && (z == d || loom_sym_neg(cx, z) == d)) return LOOM_SYM_TRUE;
  }
  return LOOM_SYM_UNKNOWN;
}

static const loom_sym_expr *truth_const(loom_sym_ctx *cx, loom_sym_truth t, const loom_sym_expr *e) {
  return t == LOOM_SYM_TRUE ? cx->c1 : t == LOOM_SYM_FALSE ? cx->c0 : e;
}

static bool point(sym_ival b) { return b.lo == b.hi && b.lo > -SYM_INF && b.hi < SYM_INF; }

/* The fact rules, applied to each node simplify rebuilds. */
static const loom_sym_expr *fact_rules(loom_sym_ctx *cx, const loom_sym_expr *e) {
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_FLOORDIV: {
    sym_ival x = sym_bounds128(cx, e->ops[0]), y = sym_bounds128(cx, e->ops[1]);
    // floordiv(x, c) -> q   if every value of x has floor(x / c) == q  (c > 0)
    if (point(y) && y.lo >= 1 && x.lo > -SYM_INF && x.hi < SYM_INF) {
      __int128 q1 = x.lo / y.lo - (x.lo % y.lo != 0 && x.lo < 0), q2 = x.hi / y.lo - (x.hi % y.lo != 0 && x.hi < 0);
      if (q1 == q2) return loom_sym_const(cx, (int64_t)q1);
    }
    // floordiv(x, y) -> 0   if 0 <= x < y
    if (y.lo >= 1 && x.lo >= 0 && x.hi < y.lo) return cx->c0;
    return e;
  }
  case LOOM_SYM_FLOORMOD: {
    const loom_sym_expr *x = e->ops[0], *c = e->ops[1];
    // floormod(x, c) -> 0   if c divides every value of x
    if (c->kind == LOOM_SYM_CONST && !c->u.num.is_big && c->u.num.small > 0) {
      int64_t d = loom_sym_known_divisor(cx, x);
      if (d == 0 || d % c->u.num.small == 0) return cx->c0;
      // floormod(r + k, c) -> floormod(k, c)   if c divides every value of r (k constant)
      const loom_sym_expr *k0, *rest;
      sym_split_const(cx, x, &k0, &rest);
      if (rest && !sym_is_zero(k0)) {
        int64_t g = loom_sym_known_divisor(cx, rest);
        if (g == 0 || g % c->u.num.small == 0) return sym_num_fmod(cx, k0, c);
      }
    }
    sym_ival bx = sym_bounds128(cx, x), by = sym_bounds128(cx, c);
    // floormod(x, c) -> x - q*c   if every value of x has floor(x / c) == q  (c > 0)
    if (point(by) && by.lo >= 1 && bx.lo > -SYM_INF && bx.hi < SYM_INF) {
      __int128 q1 = bx.lo / by.lo - (bx.lo % by.lo != 0 && bx.lo < 0);
      __int128 q2 = bx.hi / by.lo - (bx.hi % by.lo != 0 && bx.hi < 0);
      if (q1 == q2) return loom_sym_sub(cx, x, loom_sym_const(cx, (int64_t)(q1 * by.lo)));
    }
    // floormod(x, y) -> x   if 0 <= x < y
    if (by.lo >= 1 && bx.lo >= 0 && bx.hi < by.lo) return x;
    return e;
  }
  case LOOM_SYM_MIN:
  case LOOM_SYM_MAX: {
    // min(a, b) -> a  if a <= b provably ; min(a, b) -> b if b <= a ; max alike
    bool is_min = e->kind == LOOM_SYM_MIN;
    const loom_sym_expr *a = e->ops[0], *b = e->ops[1];
    if (le0_raw(cx, loom_sym_sub(cx, b, a)) == LOOM_SYM_TRUE) return is_min ? a : b;
    if (le0_raw(cx, loom_sym_sub(cx, a, b)) == LOOM_SYM_TRUE) return is_min ? b : a;
    return e;
  }
  case LOOM_SYM_LE:
    // k <= x -> 1 / 0   when provable from the bounds of x - k
    return truth_const(cx, le0_raw(cx, loom_sym_sub(cx, e->ops[1], e->ops[0])), e);
  case LOOM_SYM_EQ:
  case LOOM_SYM_NE: {
    // x == k -> 1 / 0 ; x != k -> 0 / 1   when provable
    loom_sym_truth t = eq0_raw(cx, loom_sym_sub(cx, e->ops[0], e->ops[1]));
    if (e->kind == LOOM_SYM_NE && t != LOOM_SYM_UNKNOWN) t = t == LOOM_SYM_TRUE ? LOOM_SYM_FALSE : LOOM_SYM_TRUE;
    return truth_const(cx, t, e);
  }
  default: {
    // e -> c   if the bounds of e are the single point c
    sym_ival b = sym_bounds128(cx, e);
    if (point(b)) return loom_sym_const(cx, (int64_t)b.lo);
    return e;
  }
  }
}

const loom_sym_expr *loom_sym_simplify(loom_sym_ctx *cx, const loom_sym_expr *e) {
  if (!e) return NULL;
  uint64_t hit;
  if (loom_map_get(&cx->simp_memo, (uint64_t)(uintptr_t)e, &hit)) return (const loom_sym_expr *)(uintptr_t)hit;
  const loom_sym_expr *r = e;
  bool converged = false;
  for (int iter = 0; iter < 8 && r; iter++) {
    loom_map memo;
    loom_map_init(&memo, cx->alloc);
    const loom_sym_expr *r2 = rebuild(cx, r, fact_var, NULL, fact_rules, &memo);
    loom_map_destroy(&memo);
    if (r2 == r) {
      converged = true;
      break;
    }
    r = r2;
  }
  if (!r) return NULL;
  if (!loom_map_put(&cx->simp_memo, (uint64_t)(uintptr_t)e, (uint64_t)(uintptr_t)r)) return sym_oom(cx);
  if (converged && !loom_map_put(&cx->simp_memo, (uint64_t)(uintptr_t)r, (uint64_t)(uintptr_t)r))
    return sym_oom(cx);
  return r;
}

/* ---- case splits ------------------------------------------------------------------ */

/* The first min / max / select node of e, depth first, or NULL. */
static const loom_sym_expr *first_branch(const loom_sym_expr *e) {
  if (!e || e->kind == LOOM_SYM_CONST || e->kind == LOOM_SYM_VAR) return NULL;
  if (e->kind == LOOM_SYM_MIN || e->kind == LOOM_SYM_MAX || e->kind == LOOM_SYM_SELECT) return e;
  for (uint32_t i = 0; i < e->n; i++) {
    const loom_sym_expr *b = first_branch(e->ops[i]);
    if (b) return b;
  }
  return NULL;
}

/* One case of a split on node `at`: min / max(p, q) under p <= q (first) or q < p, select(c, ..)
 * under c (first) or !c. Every node the case decides is replaced by the operand it equals there:
 * min(p, q) and max(p, q) both, or every select on c. */
typedef struct split_case {
  const loom_sym_expr *p, *q, *cond; /* min / max operands, or the select's condition */
  bool first;
} split_case;

static const loom_sym_expr *case_of(loom_sym_ctx *cx, const split_case *sc, const loom_sym_expr *e, loom_map *memo) {
  if (!e || e->kind == LOOM_SYM_CONST || e->kind == LOOM_SYM_VAR) return e;
  uint64_t hit;
  if (loom_map_get(memo, (uint64_t)(uintptr_t)e, &hit)) return (const loom_sym_expr *)(uintptr_t)hit;
  const loom_sym_expr *r = NULL;
  if (!sc->cond && (e->kind == LOOM_SYM_MIN || e->kind == LOOM_SYM_MAX) && e->ops[0] == sc->p && e->ops[1] == sc->q)
    r = (e->kind == LOOM_SYM_MIN) == sc->first ? sc->p : sc->q;
  else if (sc->cond && e->kind == LOOM_SYM_SELECT && e->ops[0] == sc->cond)
    r = case_of(cx, sc, sc->first ? e->ops[1] : e->ops[2], memo);
  else {
    const loom_sym_expr *sops[8];
    const loom_sym_expr **ops = sops;
    if (e->n > 8 && !(ops = loom_alloc_array(cx->alloc, e->n, sizeof *ops))) return sym_oom(cx);
    bool ok = true;
    for (uint32_t i = 0; i < e->n && ok; i++) ok = (ops[i] = case_of(cx, sc, e->ops[i], memo)) != NULL;
    r = ok ? remake(cx, e, ops) : NULL;
    if (ops != sops) loom_free(cx->alloc, ops, e->n * sizeof *ops);
  }
  if (r && !loom_map_put(memo, (uint64_t)(uintptr_t)e, (uint64_t)(uintptr_t)r)) return sym_oom(cx);
  return r;
}

typedef loom_sym_truth (*decide_fn)(loom_sym_ctx *cx, const loom_sym_expr *d);

/* decide(d), splitting into cases on the min / max / select nodes of d (at most `depth` deep)
 * when the bounds alone do not decide it: an answer is given only when every case gives it.
 * Sound: d equals each case's expression wherever that case holds, and the cases cover all.
 * A case carries no constraint beyond the nodes it decides (and x = k in the case x == k), so
 * correlated conditions stay unknown: select(n < m, n, m) == min(n, m) is not proved. */
static loom_sym_truth decide_split(loom_sym_ctx *cx, const loom_sym_expr *d, decide_fn decide, int depth) {
  loom_sym_truth t = decide(cx, d);
  const loom_sym_expr *at = t == LOOM_SYM_UNKNOWN && depth > 0 ? first_branch(d) : NULL;
  if (!at) return t;
  loom_sym_truth both = LOOM_SYM_UNKNOWN;
  for (int k = 0; k < 2; k++) {
    split_case sc = {.first = k == 0};
    if (at->kind == LOOM_SYM_SELECT) sc.cond = at->ops[0];
    else sc.p = at->ops[0], sc.q = at->ops[1];
    loom_map memo;
    loom_map_init(&memo, cx->alloc);
    const loom_sym_expr *dk = case_of(cx, &sc, d, &memo);
    loom_map_destroy(&memo);
    /* the case x == k of a select on it: x is k throughout */
    if (dk && sc.first && sc.cond && sc.cond->kind == LOOM_SYM_EQ && sc.cond->ops[0]->kind == LOOM_SYM_VAR)
      dk = loom_sym_subst(cx, dk, &sc.cond->ops[0], &sc.cond->ops[1], 1);
    if (!dk || dk == d) return LOOM_SYM_UNKNOWN;
    loom_sym_truth tk = decide_split(cx, loom_sym_simplify(cx, dk), decide, depth - 1);
    if (tk == LOOM_SYM_UNKNOWN || (k && tk != both)) return LOOM_SYM_UNKNOWN;
    both = tk;
  }
  return both;
}

/* How many min / max / select nodes deep the prover splits (each split doubles the work). */
#define SPLIT_DEPTH 3

/* ---- the prover -------------------------------------------------------------------- */

loom_sym_truth loom_sym_prove_le(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return LOOM_SYM_UNKNOWN;
  return decide_split(cx, loom_sym_simplify(cx, loom_sym_sub(cx, b, a)), le0_raw, SPLIT_DEPTH);
}

loom_sym_truth loom_sym_prove_lt(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return LOOM_SYM_UNKNOWN;
  return decide_split(cx, loom_sym_simplify(cx, loom_sym_sub(cx, loom_sym_sub(cx, b, a), cx->c1)), le0_raw, SPLIT_DEPTH);
}

loom_sym_truth loom_sym_prove_eq(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return LOOM_SYM_UNKNOWN;
  return decide_split(cx, loom_sym_simplify(cx, loom_sym_sub(cx, a, b)), eq0_raw, SPLIT_DEPTH);
}

loom_sym_truth loom_sym_prove_divisible(loom_sym_ctx *cx, const loom_sym_expr *a, int64_t k) {
  if (!a || k <= 0) return LOOM_SYM_UNKNOWN;
  const loom_sym_expr *d = loom_sym_simplify(cx, a);
  if (!d) return LOOM_SYM_UNKNOWN;
  int64_t g = loom_sym_known_divisor(cx, d);
  if (g == 0 || g % k == 0) return LOOM_SYM_TRUE;
  return eq0_raw(cx, loom_sym_simplify(cx, loom_sym_floormod(cx, d, loom_sym_const(cx, k))));
}

static loom_sym_truth negate(loom_sym_truth t) {
  return t == LOOM_SYM_UNKNOWN ? t : t == LOOM_SYM_TRUE ? LOOM_SYM_FALSE : LOOM_SYM_TRUE;
}

/* A comparison or logic node decided through the case-splitting prover above (simplify alone
 * decides a comparison by bounds only: min(a, b) + max(a, b) == a + b needs the split). */
static loom_sym_truth prove_split(loom_sym_ctx *cx, const loom_sym_expr *c) {
  const loom_sym_expr *const *o = c->ops;
  switch ((loom_sym_kind)c->kind) {
  case LOOM_SYM_EQ: return loom_sym_prove_eq(cx, o[0], o[1]);
  case LOOM_SYM_NE: {
    /* a != b when a < b or b < a is proved; false when a == b is */
    loom_sym_truth eq = loom_sym_prove_eq(cx, o[0], o[1]);
    if (eq != LOOM_SYM_UNKNOWN) return negate(eq);
    if (loom_sym_prove_lt(cx, o[0], o[1]) == LOOM_SYM_TRUE || loom_sym_prove_lt(cx, o[1], o[0]) == LOOM_SYM_TRUE)
      return LOOM_SYM_TRUE;
    return LOOM_SYM_UNKNOWN;
  }
  case LOOM_SYM_LE: {
    loom_sym_truth t = loom_sym_prove_le(cx, o[0], o[1]);
    if (t == LOOM_SYM_UNKNOWN && loom_sym_prove_lt(cx, o[1], o[0]) == LOOM_SYM_TRUE) t = LOOM_SYM_FALSE;
    return t;
  }
  case LOOM_SYM_LT: {
    loom_sym_truth t = loom_sym_prove_lt(cx, o[0], o[1]);
    if (t == LOOM_SYM_UNKNOWN && loom_sym_prove_le(cx, o[1], o[0]) == LOOM_SYM_TRUE) t = LOOM_SYM_FALSE;
    return t;
  }
  case LOOM_SYM_NOT: return negate(prove_split(cx, o[0]));
  case LOOM_SYM_AND:
  case LOOM_SYM_OR: {
    /* AND: false if either is, true if both are; OR the dual */
    loom_sym_truth stop = c->kind == LOOM_SYM_AND ? LOOM_SYM_FALSE : LOOM_SYM_TRUE;
    loom_sym_truth a = prove_split(cx, o[0]);
    if (a == stop) return a;
    loom_sym_truth b = prove_split(cx, o[1]);
    if (b == stop) return b;
    return a == b ? a : LOOM_SYM_UNKNOWN;
  }
  default: return LOOM_SYM_UNKNOWN;
  }
}

loom_sym_truth loom_sym_prove(loom_sym_ctx *cx, const loom_sym_expr *cond) {
  if (!cond) return LOOM_SYM_UNKNOWN;
  const loom_sym_expr *c = loom_sym_simplify(cx, loom_sym_and(cx, cond, cx->c1));
  if (!c || c->kind != LOOM_SYM_CONST) return LOOM_SYM_UNKNOWN;
  return sym_is_zero(c) ? LOOM_SYM_FALSE : LOOM_SYM_TRUE;
}

loom_sym_truth loom_sym_prove_cases(loom_sym_ctx *cx, const loom_sym_expr *cond) {
  if (!cond) return LOOM_SYM_UNKNOWN;
  const loom_sym_expr *c = loom_sym_simplify(cx, loom_sym_and(cx, cond, cx->c1));
  if (!c) return LOOM_SYM_UNKNOWN;
  if (c->kind != LOOM_SYM_CONST) return prove_split(cx, c);
  return sym_is_zero(c) ? LOOM_SYM_FALSE : LOOM_SYM_TRUE;
}

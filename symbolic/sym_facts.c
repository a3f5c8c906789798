/* sym_facts.c — scoped facts: variable ranges, divisibility, and equalities learned at
 * match sites.
 *
 * Facts are per variable (cx->facts, indexed by id). Equalities are a union-find in
 * substitution form: `var == subst` where subst mentions only representative
 * variables (those with no subst). Var-var equalities keep the older variable as
 * representative and merge ranges and divisors into it. An equality that cannot be
 * solved for a variable is kept as a "zero fact" (e == 0) the prover consults.
 * Every change is logged (cx->undo) so facts_pop restores the state of the matching push. */
#include <stdlib.h>
#include <string.h>

#include "symbolic/sym_internal.h"

const sym_var_facts *sym_facts_of(loom_sym_ctx *cx, const loom_sym_expr *var) {
  uint32_t id = var->u.var.id;
  if (id >= cx->facts.len || cx->facts.data[id].var != var) return NULL;
  return &cx->facts.data[id];
}

static void changed(loom_sym_ctx *cx) {
  cx->facts_gen++;
  loom_map_clear(&cx->simp_memo);
}

/* Logs the current facts of `id` so they can be restored; false on OOM. */
static bool save(loom_sym_ctx *cx, uint32_t id) {
  sym_undo u = {.id = id};
  if (id < SYM_UNDO_NONNEG) u.old = cx->facts.data[id];
  if (!LOOM_VEC_PUSH(cx->alloc, &cx->undo, u)) return false;
  changed(cx);
  return true;
}

void loom_sym_facts_push(loom_sym_ctx *cx) {
  if (!LOOM_VEC_PUSH(cx->alloc, &cx->scopes, cx->undo.len)) (void)sym_oom(cx);
}

void loom_sym_facts_pop(loom_sym_ctx *cx) {
  size_t mark = cx->scopes.len ? LOOM_VEC_POP(&cx->scopes) : 0;
  while (cx->undo.len > mark) {
    sym_undo u = LOOM_VEC_POP(&cx->undo);
    if (u.id == SYM_UNDO_ZERO) cx->zeros.len--;
    else if (u.id == SYM_UNDO_NONNEG) cx->nonnegs.len--;
    else cx->facts.data[u.id] = u.old;
  }
  changed(cx);
}

static loom_status check_var(loom_sym_ctx *cx, const loom_sym_expr *var, const char *what) {
  if (!var) return loom_sym_ctx_take_error(cx);
  if (var->kind != LOOM_SYM_VAR || !sym_facts_of(cx, var))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: not a variable of this context", what);
  return LOOM_OK;
}

/* The variable that carries `var`'s facts: its representative when var == other var. */
static const loom_sym_expr *rep(loom_sym_ctx *cx, const loom_sym_expr *var) {
  const loom_sym_expr *s = cx->facts.data[var->u.var.id].subst;
  return s && s->kind == LOOM_SYM_VAR ? s : var;
}

static loom_status intersect(loom_sym_ctx *cx, const loom_sym_expr *var, bool lo_inf, int64_t lo,
                             bool hi_inf, int64_t hi) {
  var = rep(cx, var);
  sym_var_facts f = cx->facts.data[var->u.var.id];
  if (!lo_inf && (f.lo_inf || lo > f.lo)) f.lo = lo, f.lo_inf = false;
  if (!hi_inf && (f.hi_inf || hi < f.hi)) f.hi = hi, f.hi_inf = false;
  if (!f.lo_inf && !f.hi_inf && f.lo > f.hi)
    return LOOM_ERROR(INVALID_ARGUMENT, "contradictory facts: %s would lie in the empty range [%lld, %lld]",
                      var->u.var.name, (long long)f.lo, (long long)f.hi);
  if (!save(cx, var->u.var.id)) return LOOM_OOM();
  cx->facts.data[var->u.var.id] = f;
  return LOOM_OK;
}

loom_status loom_sym_assume_range(loom_sym_ctx *cx, const loom_sym_expr *var, int64_t lo, int64_t hi) {
  LOOM_PROPAGATE(check_var(cx, var, "loom_sym_assume_range"));
  return intersect(cx, var, lo == INT64_MIN, lo, hi == INT64_MAX, hi);
}

loom_status loom_sym_assume_divisible(loom_sym_ctx *cx, const loom_sym_expr *var, int64_t k) {
  LOOM_PROPAGATE(check_var(cx, var, "loom_sym_assume_divisible"));
  if (k <= 0) return LOOM_ERROR(INVALID_ARGUMENT, "divisibility fact needs a positive divisor, got %lld", (long long)k);
  var = rep(cx, var);
  sym_var_facts f = cx->facts.data[var->u.var.id];
  int64_t l;
  if (__builtin_mul_overflow(f.div / sym_gcd64(f.div, k), k, &l))
    return LOOM_ERROR(OUT_OF_RANGE, "divisibility of %s overflows int64", var->u.var.name);
  if (!save(cx, var->u.var.id)) return LOOM_OOM();
  cx->facts.data[var->u.var.id].div = l;
  return LOOM_OK;
}

/* Does `e` mention `var`? */
static bool mentions(const loom_sym_expr *e, const loom_sym_expr *var) {
  if (e == var) return true;
  if (e->kind == LOOM_SYM_VAR) return false;
  for (uint32_t i = 0; i < e->n; i++)
    if (mentions(e->ops[i], var)) return true;
  return false;
}

/* Records var := value (value canonical, free of var and of mapped variables). */
static loom_status bind_var(loom_sym_ctx *cx, const loom_sym_expr *var, const loom_sym_expr *value) {
  uint32_t id = var->u.var.id;
  sym_var_facts f = cx->facts.data[id];
  if (value->kind == LOOM_SYM_VAR) {
    /* var and value are one class now: value's facts get var's. */
    LOOM_PROPAGATE(intersect(cx, value, f.lo_inf, f.lo, f.hi_inf, f.hi));
    if (f.div > 1) LOOM_PROPAGATE(loom_sym_assume_divisible(cx, value, f.div));
  }
  if (!save(cx, id)) return LOOM_OOM();
  cx->facts.data[id].subst = value;
  /* Earlier substitutions that mention var now mention value instead. */
  for (size_t i = 0; i < cx->facts.len; i++) {
    const loom_sym_expr *s = cx->facts.data[i].subst;
    if (i == id || !s || !mentions(s, var)) continue;
    const loom_sym_expr *ns = loom_sym_subst(cx, s, &var, &value, 1);
    if (!ns) return loom_sym_ctx_take_error(cx);
    if (!save(cx, (uint32_t)i)) return LOOM_OOM();
    cx->facts.data[i].subst = ns;
  }
  return LOOM_OK;
}

loom_status loom_sym_assume_eq(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return loom_sym_ctx_take_error(cx);
  const loom_sym_expr *x = sym_apply_eqs(cx, a), *y = sym_apply_eqs(cx, b);
  const loom_sym_expr *d = loom_sym_sub(cx, x, y);
  if (!d) return loom_sym_ctx_take_error(cx);
  if (sym_is_zero(d)) return LOOM_OK;
  if (loom_sym_prove_eq(cx, x, y) == LOOM_SYM_FALSE) {
    char *sa = loom_sym_to_string(a), *sb = loom_sym_to_string(b);
    loom_status s = LOOM_ERROR(INVALID_ARGUMENT, "contradictory facts: %s == %s is provably false",
                               sa ? sa : "?", sb ? sb : "?");
    free(sa);
    free(sb);
    return s;
  }
  // v == w for variables -> the newer one maps to the older one
  if (x->kind == LOOM_SYM_VAR && y->kind == LOOM_SYM_VAR)
    return x->u.var.id > y->u.var.id ? bind_var(cx, x, y) : bind_var(cx, y, x);
  if (x->kind == LOOM_SYM_VAR && !mentions(y, x)) return bind_var(cx, x, y);
  if (y->kind == LOOM_SYM_VAR && !mentions(x, y)) return bind_var(cx, y, x);
  /* d == 0: solve for a variable term with coefficient +-1 that appears nowhere else. */
  if (d->kind == LOOM_SYM_ADD) {
    for (uint32_t i = 0; i < d->n; i++) {
      const loom_sym_expr *t = d->ops[i], *v = t->unit;
      const loom_sym_expr *c = sym_term_coef(cx, t);
      if (v->kind != LOOM_SYM_VAR || !(sym_is_one(c) || c == cx->cm1)) continue;
      const loom_sym_expr *rest = loom_sym_sub(cx, d, t);
      if (!rest) return loom_sym_ctx_take_error(cx);
      if (mentions(rest, v)) continue;
      // c*v + rest == 0 -> v == -rest/c   (c = +-1)
      const loom_sym_expr *val = sym_is_one(c) ? loom_sym_neg(cx, rest) : rest;
      if (!val) return loom_sym_ctx_take_error(cx);
      return bind_var(cx, v, val);
    }
  }
  if (!LOOM_VEC_PUSH(cx->alloc, &cx->zeros, d)) return LOOM_OOM();
  if (!save(cx, SYM_UNDO_ZERO)) {
    cx->zeros.len--;
    return LOOM_OOM();
  }
  return LOOM_OK;
}

loom_status loom_sym_assume_nonneg(loom_sym_ctx *cx, const loom_sym_expr *e) {
  if (!e) return loom_sym_ctx_take_error(cx);
  const loom_sym_expr *d = loom_sym_simplify(cx, e);
  if (!d) return loom_sym_ctx_take_error(cx);
  int64_t k;
  if (loom_sym_is_const(d, &k)) {
    if (k < 0) return LOOM_ERROR(INVALID_ARGUMENT, "fact %lld >= 0 is always false", (long long)k);
    return LOOM_OK;
  }
  if (loom_sym_prove_le(cx, cx->c0, d) == LOOM_SYM_TRUE) return LOOM_OK; /* known already */
  if (!LOOM_VEC_PUSH(cx->alloc, &cx->nonnegs, d)) return LOOM_OOM();
  if (!save(cx, SYM_UNDO_NONNEG)) {
    cx->nonnegs.len--;
    return LOOM_OOM();
  }
  return LOOM_OK;
}

/* ---- facts as text ------------------------------------------------------------- */

/* "n >= 1", "n <= 4096", "n < 8", "n % 8 == 0", "m == n", "2*n == m + 1", also "a && b". */
static loom_status assume_cond(loom_sym_ctx *cx, const loom_sym_expr *c, const char *text) {
  int64_t k;
  switch (c->kind) {
  case LOOM_SYM_CONST:
    if (sym_is_zero(c)) return LOOM_ERROR(INVALID_ARGUMENT, "fact '%s' is always false", text);
    return LOOM_OK;
  case LOOM_SYM_AND:
    LOOM_PROPAGATE(assume_cond(cx, c->ops[0], text));
    return assume_cond(cx, c->ops[1], text);
  case LOOM_SYM_LE: {
    /* LE(k, r): k <= r. r = v or -v gives a range. */
    const loom_sym_expr *r = c->ops[1], *v;
    int64_t kk, cc;
    if (loom_sym_is_const(c->ops[0], &k) && loom_sym_as_affine(r, &v, &kk, &cc) && cc == 0) {
      if (kk == 1) return loom_sym_assume_range(cx, v, k, INT64_MAX);
      if (kk == -1 && k != INT64_MIN) return loom_sym_assume_range(cx, v, INT64_MIN, -k);
    }
    break;
  }
  case LOOM_SYM_EQ: {
    /* floormod(v, k) == 0 is divisibility; anything else is an equality. */
    const loom_sym_expr *l = c->ops[0];
    if (sym_is_zero(c->ops[1]) && l->kind == LOOM_SYM_FLOORMOD && l->ops[0]->kind == LOOM_SYM_VAR &&
        loom_sym_is_const(l->ops[1], &k))
      return loom_sym_assume_divisible(cx, l->ops[0], k);
    return loom_sym_assume_eq(cx, c->ops[0], c->ops[1]);
  }
  default: break;
  }
  return LOOM_ERROR(UNIMPLEMENTED,
                    "fact '%s' is not supported (use v >= c, v <= c, v %% k == 0, or a == b)", text);
}

/* Names in a fact resolve to the most recent variable of the context with that name;
 * an unknown name gets a fresh shape variable. */
static const loom_sym_expr *resolve_latest(void *ud, const char *name, size_t len) {
  loom_sym_ctx *cx = ud;
  for (size_t i = cx->facts.len; i-- > 0;) {
    const char *vn = cx->facts.data[i].var->u.var.name;
    if (strlen(vn) == len && memcmp(vn, name, len) == 0) return cx->facts.data[i].var;
  }
  char buf[128];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, name, len);
  buf[len] = 0;
  return loom_sym_var_new(cx, buf, LOOM_SYM_VAR_SHAPE);
}

loom_status loom_sym_assume_text(loom_sym_ctx *cx, const char *text) {
  loom_source src = {"<fact>", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, cx->alloc);
  size_t pos = 0;
  const loom_sym_expr *c = NULL;
  loom_status s = loom_sym_parse(cx, &src, &pos, resolve_latest, cx, &dl, &c);
  if (s == LOOM_OK && pos != src.len) {
    loom_diag_add(&dl, LOOM_DIAG_ERROR, (loom_loc){&src, pos}, "unexpected '%c' after the fact", text[pos]);
  }
  if (dl.errors || dl.oom) {
    loom_status_free(s);
    s = dl.oom ? LOOM_OOM() : loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR);
  }
  loom_diag_list_destroy(&dl);
  LOOM_PROPAGATE(s);
  return assume_cond(cx, c, text);
}

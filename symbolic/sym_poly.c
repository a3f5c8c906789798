/* sym_poly.c — canonical arithmetic: the fixed total order of expressions, and
 * add / sub / neg / mul on sums of monomials with exact coefficients.
 *
 * A canonical polynomial is  c0 + c1*m1 + ... + ck*mk  with the monomials m_i
 * distinct, sorted by sym_order, and every c_i nonzero. Products are fully
 * distributed, so (n + 1)*(n - 1) and n*n - 1 are the same node. */
#include <stdlib.h>

#include "symbolic/sym_internal.h"

/* ---- the total order --------------------------------------------------------- */

/* Atom list of a monomial: (atoms, exps, count). */
static void mono_view(const loom_sym_expr *u, const loom_sym_expr *const **atoms, const uint32_t **exps,
                      uint32_t *n) {
  static const uint32_t one = 1;
  if (u->kind == LOOM_SYM_MUL) {
    *atoms = u->ops;
    *exps = u->exps;
    *n = u->n;
  } else {
    *atoms = &u->unit; /* an atom's unit is itself */
    *exps = &one;
    *n = 1;
  }
}

static int rank(const loom_sym_expr *e) {
  if (e->kind == LOOM_SYM_CONST) return 0;
  if (e->kind == LOOM_SYM_ADD) return 2;
  return 1; /* atoms and monomials */
}

static int cmp_atoms(const loom_sym_expr *a, const loom_sym_expr *b);

/* Monomials: lexicographic on (atom, exponent) lists; at the first difference the
 * smaller atom, or the higher exponent, comes first; a longer list before its prefix.
 * So n*n < n*m < n < m for variables n < m. Ties compare coefficients. */
static int cmp_monos(const loom_sym_expr *a, const loom_sym_expr *b) {
  const loom_sym_expr *const *aa, *const *ba;
  const uint32_t *ae, *be;
  uint32_t an, bn;
  mono_view(a->unit, &aa, &ae, &an);
  mono_view(b->unit, &ba, &be, &bn);
  for (uint32_t i = 0; i < an && i < bn; i++) {
    int c = cmp_atoms(aa[i], ba[i]);
    if (c) return c;
    if (ae[i] != be[i]) return ae[i] > be[i] ? -1 : 1;
  }
  if (an != bn) return an > bn ? -1 : 1;
  const loom_sym_expr *ka = a->kind == LOOM_SYM_MUL ? a->k : NULL;
  const loom_sym_expr *kb = b->kind == LOOM_SYM_MUL ? b->k : NULL;
  if (ka == kb) return 0;
  if (!ka) return -1;
  if (!kb) return 1;
  return sym_num_cmp(ka, kb);
}

static int cmp_atoms(const loom_sym_expr *a, const loom_sym_expr *b) {
  if (a == b) return 0;
  bool av = a->kind == LOOM_SYM_VAR, bv = b->kind == LOOM_SYM_VAR;
  if (av && bv) return a->u.var.id < b->u.var.id ? -1 : 1;
  if (av != bv) return av ? -1 : 1;
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  for (uint32_t i = 0; i < a->n && i < b->n; i++) {
    int c = sym_order(a->ops[i], b->ops[i]);
    if (c) return c;
  }
  return a->n < b->n ? -1 : a->n > b->n ? 1 : 0;
}

int sym_order(const loom_sym_expr *a, const loom_sym_expr *b) {
  if (a == b) return 0;
  int ra = rank(a), rb = rank(b);
  if (ra != rb) return ra < rb ? -1 : 1;
  if (ra == 0) return sym_num_cmp(a, b);
  if (ra == 1) return cmp_monos(a, b);
  for (uint32_t i = 0; i < a->n && i < b->n; i++) {
    int c = sym_order(a->ops[i], b->ops[i]);
    if (c) return c;
  }
  if (a->n != b->n) return a->n > b->n ? -1 : 1;
  return sym_num_cmp(a->k, b->k);
}

/* ---- term lists -------------------------------------------------------------- */

typedef struct term {
  const loom_sym_expr *coef; /* nonzero constant */
  const loom_sym_expr *unit; /* monomial with coefficient 1 */
} term;

typedef LOOM_VEC(term) term_vec;

const loom_sym_expr *sym_term_coef(loom_sym_ctx *cx, const loom_sym_expr *t) {
  return t->kind == LOOM_SYM_MUL ? t->k : cx->c1;
}

size_t sym_num_terms(const loom_sym_expr *e) {
  if (e->kind == LOOM_SYM_CONST) return 1;
  if (e->kind == LOOM_SYM_ADD) return e->n + 1;
  return 1;
}

void sym_split_const(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr **c0,
                     const loom_sym_expr **rest) {
  if (e->kind == LOOM_SYM_CONST) {
    *c0 = e;
    *rest = cx->c0;
  } else if (e->kind == LOOM_SYM_ADD) {
    *c0 = e->k;
    *rest = e->n == 1 ? e->ops[0] : sym_intern(cx, LOOM_SYM_ADD, cx->c0, e->ops, NULL, e->n);
  } else {
    *c0 = cx->c0;
    *rest = e;
  }
}

/* Appends the terms of `e` times `scale` to `v`; returns e's constant times scale. */
static bool push_terms(loom_sym_ctx *cx, term_vec *v, const loom_sym_expr *e, const loom_sym_expr *scale,
                       const loom_sym_expr **c0) {
  const loom_sym_expr *const *ts = &e;
  uint32_t n = 1;
  *c0 = cx->c0;
  if (e->kind == LOOM_SYM_CONST) {
    *c0 = sym_num_mul(cx, e, scale);
    return *c0 != NULL;
  }
  if (e->kind == LOOM_SYM_ADD) {
    ts = e->ops;
    n = e->n;
    *c0 = sym_num_mul(cx, e->k, scale);
    if (!*c0) return false;
  }
  if (!LOOM_VEC_RESERVE(cx->alloc, v, v->len + n)) return sym_oom(cx) != NULL;
  for (uint32_t i = 0; i < n; i++) {
    const loom_sym_expr *c = sym_num_mul(cx, sym_term_coef(cx, ts[i]), scale);
    if (!c) return false;
    v->data[v->len++] = (term){c, ts[i]->unit};
  }
  return true;
}

static int cmp_term(const void *x, const void *y) {
  return sym_order(((const term *)x)->unit, ((const term *)y)->unit);
}

const loom_sym_expr *sym_scale(loom_sym_ctx *cx, const loom_sym_expr *u, const loom_sym_expr *c) {
  if (sym_is_zero(c)) return cx->c0;
  if (sym_is_one(c)) return u;
  if (u->kind == LOOM_SYM_MUL) return sym_intern(cx, LOOM_SYM_MUL, c, u->ops, u->exps, u->n);
  static const uint32_t one = 1;
  return sym_intern(cx, LOOM_SYM_MUL, c, &u, &one, 1);
}

/* k*E*floordiv(u, E) + k*floormod(v, E) == k*u when floormod(u, E) is floormod(v, E) as the
 * simplifier writes it (floor division, E a nonzero constant): the pair of terms found in v
 * (merged: one term per unit) is replaced by u's terms times k, u's constant added to *c0. Fused
 * loops index [floordiv(x, E), floormod(x, E)] (three axes: [floordiv(x, E*F), floordiv(floormod(x,
 * E*F), F), floormod(x, F)]), and the simplifier takes whole multiples of E out of the quotient
 * and the remainder (x = 196*b - 6 + i: b - 1 + floordiv(i + 190, 196), floormod(i + 43, 49)), so
 * the run's linear offset is recovered only with this identity. 1: replaced, 0: none, -1: OOM. */
static int recombine_divmod(loom_sym_ctx *cx, term_vec *v, const loom_sym_expr **c0) {
  bool mod_term = false;
  for (size_t i = 0; i < v->len && !mod_term; i++) mod_term = v->data[i].unit->kind == LOOM_SYM_FLOORMOD;
  if (!mod_term) return 0;
  for (size_t j = 0; j < v->len; j++) {
    const loom_sym_expr *d = v->data[j].unit;
    if (d->kind != LOOM_SYM_FLOORDIV || d->ops[1]->kind != LOOM_SYM_CONST || sym_is_zero(d->ops[1])) continue;
    const loom_sym_expr *u = d->ops[0], *E = d->ops[1], *fm = loom_sym_floormod(cx, u, E);
    if (!fm) return -1;
    for (size_t i = 0; i < v->len; i++) {
      if (i == j || v->data[i].unit != fm) continue;
      const loom_sym_expr *k = v->data[i].coef, *want = sym_num_mul(cx, k, E);
      if (!want) return -1;
      if (sym_num_cmp(v->data[j].coef, want)) continue;
      size_t w = 0; /* drop terms i and j */
      for (size_t t = 0; t < v->len; t++)
        if (t != i && t != j) v->data[w++] = v->data[t];
      v->len = w;
      const loom_sym_expr *cu;
      if (!push_terms(cx, v, u, k, &cu)) return -1;
      *c0 = sym_num_add(cx, *c0, cu);
      return *c0 ? 1 : -1;
    }
  }
  return 0;
}

/* Sorts, merges equal monomials, drops zero coefficients, and builds the canonical sum. */
static const loom_sym_expr *build(loom_sym_ctx *cx, term_vec *v, const loom_sym_expr *c0) {
  if (v->len > 1) qsort(v->data, v->len, sizeof(term), cmp_term);
  size_t w = 0;
  for (size_t i = 0; i < v->len; i++) {
    if (w > 0 && v->data[w - 1].unit == v->data[i].unit) {
      v->data[w - 1].coef = sym_num_add(cx, v->data[w - 1].coef, v->data[i].coef);
      if (!v->data[w - 1].coef) return NULL;
    } else {
      v->data[w++] = v->data[i];
    }
    if (sym_is_zero(v->data[w - 1].coef)) w--;
  }
  /* A zero coefficient dropped above may have left two equal neighbours apart only if the
   * zero was between them, which sorting rules out (equal units are adjacent). */
  v->len = w;
  int rc = w >= 2 ? recombine_divmod(cx, v, &c0) : 0;
  if (rc < 0) return NULL;
  if (rc > 0) return build(cx, v, c0); /* two units fewer, y's terms more: y is smaller, it ends */
  if (w == 0) return c0;
  if (w == 1 && sym_is_zero(c0)) return sym_scale(cx, v->data[0].unit, v->data[0].coef);
  const loom_sym_expr *stackops[16];
  const loom_sym_expr **ops = stackops;
  if (w > 16) {
    ops = loom_alloc_array(cx->alloc, w, sizeof *ops);
    if (!ops) return sym_oom(cx);
  }
  const loom_sym_expr *r = NULL;
  size_t i;
  for (i = 0; i < w; i++) {
    ops[i] = sym_scale(cx, v->data[i].unit, v->data[i].coef);
    if (!ops[i]) break;
  }
  if (i == w) r = sym_intern(cx, LOOM_SYM_ADD, c0, ops, NULL, (uint32_t)w);
  if (ops != stackops) loom_free(cx->alloc, ops, w * sizeof *ops);
  return r;
}

/* ---- public arithmetic ---------------------------------------------------------- */

/* a*s + b*t for constants s, t. */
static const loom_sym_expr *lincomb(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *s,
                                    const loom_sym_expr *b, const loom_sym_expr *t) {
  term_vec v = {0};
  const loom_sym_expr *ca, *cb, *r = NULL;
  if (push_terms(cx, &v, a, s, &ca) && push_terms(cx, &v, b, t, &cb)) {
    const loom_sym_expr *c0 = sym_num_add(cx, ca, cb);
    if (c0) r = build(cx, &v, c0);
  }
  LOOM_VEC_FREE(cx->alloc, &v);
  return r;
}

const loom_sym_expr *loom_sym_add(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  // a + 0 -> a ; constants fold
  if (sym_is_zero(b)) return a;
  if (sym_is_zero(a)) return b;
  if (a->kind == LOOM_SYM_CONST && b->kind == LOOM_SYM_CONST) return sym_num_add(cx, a, b);
  return lincomb(cx, a, cx->c1, b, cx->c1);
}

const loom_sym_expr *loom_sym_sub(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  // a - a -> 0
  if (a == b) return cx->c0;
  if (sym_is_zero(b)) return a;
  if (a->kind == LOOM_SYM_CONST && b->kind == LOOM_SYM_CONST)
    return sym_num_add(cx, a, sym_num_neg(cx, b));
  return lincomb(cx, a, cx->c1, b, cx->cm1);
}

const loom_sym_expr *loom_sym_neg(loom_sym_ctx *cx, const loom_sym_expr *a) {
  if (!a) return NULL;
  return lincomb(cx, a, cx->cm1, cx->c0, cx->c1);
}

/* Product of two monomials (coefficient 1): merged atom lists, exponents added. */
static const loom_sym_expr *mono_mul(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (sym_is_one(a)) return b;
  if (sym_is_one(b)) return a;
  const loom_sym_expr *const *aa, *const *ba;
  const uint32_t *ae, *be;
  uint32_t an, bn;
  mono_view(a, &aa, &ae, &an);
  mono_view(b, &ba, &be, &bn);
  size_t cap = (size_t)an + bn;
  const loom_sym_expr *sops[16];
  uint32_t sexps[16];
  const loom_sym_expr **ops = sops;
  uint32_t *exps = sexps;
  if (cap > 16) {
    ops = loom_alloc_array(cx->alloc, cap, sizeof *ops);
    exps = loom_alloc_array(cx->alloc, cap, sizeof *exps);
  }
  const loom_sym_expr *r = NULL;
  if (ops && exps) {
    uint32_t i = 0, j = 0, n = 0;
    bool overflow = false;
    while (i < an || j < bn) {
      int c = i == an ? 1 : j == bn ? -1 : cmp_atoms(aa[i], ba[j]);
      if (c < 0) {
        ops[n] = aa[i];
        exps[n++] = ae[i++];
      } else if (c > 0) {
        ops[n] = ba[j];
        exps[n++] = be[j++];
      } else {
        ops[n] = aa[i];
        if (__builtin_add_overflow(ae[i], be[j], &exps[n])) overflow = true;
        n++, i++, j++;
      }
    }
    if (overflow)
      r = sym_fail(cx, LOOM_ERROR(OUT_OF_RANGE, "symbolic exponent overflows 32 bits"));
    else
      r = sym_intern(cx, LOOM_SYM_MUL, cx->c1, ops, exps, n);
  } else {
    r = sym_oom(cx);
  }
  if (ops != sops) loom_free(cx->alloc, ops, cap * sizeof *ops);
  if (exps != sexps) loom_free(cx->alloc, exps, cap * sizeof *exps);
  return r;
}

const loom_sym_expr *loom_sym_mul(loom_sym_ctx *cx, const loom_sym_expr *a, const loom_sym_expr *b) {
  if (!a || !b) return NULL;
  // c1 * c2 -> constant ; 0 * a -> 0 ; 1 * a -> a ; c * (sum) distributes
  if (a->kind == LOOM_SYM_CONST && b->kind == LOOM_SYM_CONST) return sym_num_mul(cx, a, b);
  if (b->kind == LOOM_SYM_CONST) {
    const loom_sym_expr *t = a;
    a = b;
    b = t;
  }
  if (a->kind == LOOM_SYM_CONST) {
    if (sym_is_zero(a)) return cx->c0;
    if (sym_is_one(a)) return b;
    return lincomb(cx, b, a, cx->c0, cx->c1);
  }
  // (a0 + sum ai*mi) * (b0 + sum bj*nj) -> a0*b0 + sum a0*bj*nj + sum ai*b0*mi + sum ai*bj*(mi*nj)
  term_vec ta = {0}, tb = {0}, out = {0};
  const loom_sym_expr *ca, *cb, *r = NULL;
  if (!push_terms(cx, &ta, a, cx->c1, &ca) || !push_terms(cx, &tb, b, cx->c1, &cb)) goto done;
  size_t need = (ta.len + 1) * (tb.len + 1);
  if (!LOOM_VEC_RESERVE(cx->alloc, &out, need)) {
    sym_oom(cx);
    goto done;
  }
  for (size_t i = 0; i < ta.len; i++) {
    if (!sym_is_zero(cb)) {
      const loom_sym_expr *c = sym_num_mul(cx, ta.data[i].coef, cb);
      if (!c) goto done;
      out.data[out.len++] = (term){c, ta.data[i].unit};
    }
    for (size_t j = 0; j < tb.len; j++) {
      const loom_sym_expr *c = sym_num_mul(cx, ta.data[i].coef, tb.data[j].coef);
      const loom_sym_expr *m = mono_mul(cx, ta.data[i].unit, tb.data[j].unit);
      if (!c || !m) goto done;
      out.data[out.len++] = (term){c, m};
    }
  }
  if (!sym_is_zero(ca)) {
    for (size_t j = 0; j < tb.len; j++) {
      const loom_sym_expr *c = sym_num_mul(cx, ca, tb.data[j].coef);
      if (!c) goto done;
      out.data[out.len++] = (term){c, tb.data[j].unit};
    }
  }
  const loom_sym_expr *c0 = sym_num_mul(cx, ca, cb);
  if (c0) r = build(cx, &out, c0);
done:
  LOOM_VEC_FREE(cx->alloc, &ta);
  LOOM_VEC_FREE(cx->alloc, &tb);
  LOOM_VEC_FREE(cx->alloc, &out);
  return r;
}

/* ---- helpers for the div/mod rules ------------------------------------------------ */

const loom_sym_expr *sym_content(loom_sym_ctx *cx, const loom_sym_expr *e) {
  if (e->kind == LOOM_SYM_CONST) return cx->c0;
  if (e->kind != LOOM_SYM_ADD) return sym_num_gcd(cx, cx->c0, sym_term_coef(cx, e));
  const loom_sym_expr *g = cx->c0;
  for (uint32_t i = 0; i < e->n && g; i++) g = sym_num_gcd(cx, g, sym_term_coef(cx, e->ops[i]));
  return g;
}

const loom_sym_expr *sym_div_exact(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_expr *c) {
  if (sym_is_one(c)) return e;
  term_vec v = {0};
  const loom_sym_expr *c0, *r = NULL;
  if (push_terms(cx, &v, e, cx->c1, &c0)) {
    c0 = sym_num_fdiv(cx, c0, c);
    size_t i;
    for (i = 0; c0 && i < v.len; i++) {
      v.data[i].coef = sym_num_fdiv(cx, v.data[i].coef, c);
      if (!v.data[i].coef) break;
    }
    if (c0 && i == v.len) r = build(cx, &v, c0);
  }
  LOOM_VEC_FREE(cx->alloc, &v);
  return r;
}

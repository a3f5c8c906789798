/* sym_print.c — the canonical text of expressions: "4*n + floordiv(m, 2) - 1".
 *
 * Sums print their terms in canonical order then the constant; a negative
 * coefficient prints as " - "; products print the coefficient first and repeat an
 * atom by its exponent (n*n). Comparisons and logic inside arithmetic are wrapped in
 * parentheses. The output parses back (loom_sym_parse) to the same node. */
#include <stdlib.h>
#include <string.h>

#include "symbolic/sym_internal.h"

typedef struct pctx {
  loom_strbuf *sb;
  const loom_sym_expr *dups[16]; /* variables whose name is shared in this expression */
  size_t ndups;
} pctx;

static void pr(pctx *p, const loom_sym_expr *e, int prec);

/* Precedences: 0 logic-or, 1 and, 2 not, 3 comparison, 4 sum, 5 product, 6 unary/atom. */
static void pr_var(pctx *p, const loom_sym_expr *v) {
  loom_strbuf_puts(p->sb, v->u.var.name);
  for (size_t i = 0; i < p->ndups; i++)
    if (p->dups[i] == v) loom_strbuf_printf(p->sb, "#%u", v->u.var.id);
}

/* Prints |c|. */
static void pr_abs(pctx *p, const loom_sym_expr *c) {
  loom_strbuf tmp;
  loom_strbuf_init(&tmp, NULL);
  sym_num_print(c, &tmp);
  if (tmp.oom || tmp.len == 0) p->sb->oom = true;
  const char *s = loom_strbuf_cstr(&tmp);
  loom_strbuf_puts(p->sb, s[0] == '-' ? s + 1 : s);
  loom_strbuf_free(&tmp);
}

/* Prints "|c|*" unless |c| == 1. */
static void pr_coef(pctx *p, const loom_sym_expr *c) {
  if (!c->u.num.is_big && (c->u.num.small == 1 || c->u.num.small == -1)) return;
  pr_abs(p, c);
  loom_strbuf_putc(p->sb, '*');
}

/* A monomial with coefficient 1 (or an atom). */
static void pr_unit(pctx *p, const loom_sym_expr *u) {
  if (u->kind != LOOM_SYM_MUL) {
    pr(p, u, 5);
    return;
  }
  bool first = true;
  for (uint32_t i = 0; i < u->n; i++)
    for (uint32_t j = 0; j < u->exps[i]; j++) {
      if (!first) loom_strbuf_putc(p->sb, '*');
      pr(p, u->ops[i], 6);
      first = false;
    }
}

/* A term c*m; `lead` when it starts the sum (sign printed as '-' not ' - '). */
static void pr_term(pctx *p, const loom_sym_expr *t, bool lead) {
  const loom_sym_expr *c = t->kind == LOOM_SYM_MUL ? t->k : NULL;
  bool neg = c && sym_num_sign(c) < 0;
  if (!lead) loom_strbuf_puts(p->sb, neg ? " - " : " + ");
  else if (neg) loom_strbuf_putc(p->sb, '-');
  if (c) pr_coef(p, c);
  pr_unit(p, t->unit);
}

static int term_sign(const loom_sym_expr *t) {
  return t->kind == LOOM_SYM_MUL ? sym_num_sign(t->k) : 1;
}

/* Prints a sum: the terms whose sign matches `which` (+1 positive, -1 negative, 0 all:
 * positive ones first), negated when `flip`, then the constant k (NULL or 0: none).
 * Prints "0" when nothing is printed. */
static void pr_sum(pctx *p, const loom_sym_expr *const *ts, uint32_t n, int which,
                   const loom_sym_expr *k, bool flip) {
  bool any = false;
  for (int pass = 0; pass < 2; pass++) {
    int want = pass == 0 ? 1 : -1;
    if (which != 0 && which != want) continue;
    for (uint32_t i = 0; i < n; i++) {
      if (term_sign(ts[i]) != want) continue;
      if (flip) { /* print -t */
        const loom_sym_expr *c = ts[i]->kind == LOOM_SYM_MUL ? ts[i]->k : NULL;
        bool neg = want > 0; /* sign after flipping */
        if (any) loom_strbuf_puts(p->sb, neg ? " - " : " + ");
        else if (neg) loom_strbuf_putc(p->sb, '-');
        if (c) pr_coef(p, c);
        pr_unit(p, ts[i]->unit);
      } else {
        pr_term(p, ts[i], !any);
      }
      any = true;
    }
  }
  if (k && !sym_is_zero(k)) {
    bool neg = sym_num_sign(k) < 0;
    if (any) loom_strbuf_puts(p->sb, neg ? " - " : " + ");
    if (any || !neg) pr_abs(p, k);
    else sym_num_print(k, p->sb);
    any = true;
  }
  if (!any) loom_strbuf_putc(p->sb, '0');
}

static void terms_of(const loom_sym_expr *r, const loom_sym_expr *const **ts, uint32_t *n) {
  if (r->kind == LOOM_SYM_ADD) {
    *ts = r->ops;
    *n = r->n;
  } else {
    *ts = &r->unit; /* placeholder, replaced below */
    *n = 1;
  }
}

/* LE(k, r), i.e. k <= P - N with P/N the positive/negative terms of r:
 *   "P >= k" when N is empty, "N <= -k" when P is empty, "N < P" when k == 1,
 *   else "N <= P - k". */
static void pr_le(pctx *p, const loom_sym_expr *k, const loom_sym_expr *r) {
  const loom_sym_expr *const *ts;
  uint32_t n;
  const loom_sym_expr *one[1] = {r};
  terms_of(r, &ts, &n);
  if (r->kind != LOOM_SYM_ADD) ts = one;
  bool has_pos = false, has_neg = false;
  for (uint32_t i = 0; i < n; i++) {
    if (term_sign(ts[i]) > 0) has_pos = true;
    else has_neg = true;
  }
  if (!has_neg) {
    pr_sum(p, ts, n, 1, NULL, false);
    loom_strbuf_puts(p->sb, " >= ");
    sym_num_print(k, p->sb);
  } else if (!has_pos) {
    pr_sum(p, ts, n, -1, NULL, true);
    loom_strbuf_puts(p->sb, " <= ");
    if (sym_num_sign(k) > 0) loom_strbuf_putc(p->sb, '-');
    pr_abs(p, k);
  } else {
    pr_sum(p, ts, n, -1, NULL, true);
    bool lt = sym_is_one(k);
    loom_strbuf_puts(p->sb, lt ? " < " : " <= ");
    pr_sum(p, ts, n, 1, NULL, false);
    if (!lt && !sym_is_zero(k)) {
      bool neg = sym_num_sign(k) < 0; /* -k > 0 */
      loom_strbuf_puts(p->sb, neg ? " + " : " - ");
      pr_abs(p, k);
    }
  }
}

/* EQ/NE(r, k): "P == N + k" with P/N the positive/negative terms of r. */
static void pr_eq(pctx *p, const char *op, const loom_sym_expr *r, const loom_sym_expr *k) {
  const loom_sym_expr *const *ts;
  uint32_t n;
  const loom_sym_expr *one[1] = {r};
  terms_of(r, &ts, &n);
  if (r->kind != LOOM_SYM_ADD) ts = one;
  pr_sum(p, ts, n, 1, NULL, false);
  loom_strbuf_puts(p->sb, op);
  bool has_neg = false;
  for (uint32_t i = 0; i < n; i++) has_neg |= term_sign(ts[i]) < 0;
  if (has_neg) pr_sum(p, ts, n, -1, k, true);
  else sym_num_print(k, p->sb);
}

static void pr_call(pctx *p, const char *name, const loom_sym_expr *e) {
  loom_strbuf_printf(p->sb, "%s(", name);
  for (uint32_t i = 0; i < e->n; i++) {
    if (i) loom_strbuf_puts(p->sb, ", ");
    pr(p, e->ops[i], 0);
  }
  loom_strbuf_putc(p->sb, ')');
}

static void pr(pctx *p, const loom_sym_expr *e, int prec) {
  int mine;
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_CONST:
    if (prec >= 5 && sym_num_sign(e) < 0) {
      loom_strbuf_putc(p->sb, '(');
      sym_num_print(e, p->sb);
      loom_strbuf_putc(p->sb, ')');
    } else {
      sym_num_print(e, p->sb);
    }
    return;
  case LOOM_SYM_VAR: pr_var(p, e); return;
  case LOOM_SYM_ADD: mine = 4; break;
  case LOOM_SYM_MUL: mine = sym_num_sign(e->k) < 0 ? 4 : 5; break;
  case LOOM_SYM_FLOORDIV:
  case LOOM_SYM_FLOORMOD:
  case LOOM_SYM_MIN:
  case LOOM_SYM_MAX:
  case LOOM_SYM_SELECT: pr_call(p, loom_sym_kind_name((loom_sym_kind)e->kind), e); return;
  case LOOM_SYM_EQ:
  case LOOM_SYM_NE:
  case LOOM_SYM_LT:
  case LOOM_SYM_LE: mine = 3; break;
  case LOOM_SYM_AND: mine = 1; break;
  case LOOM_SYM_OR: mine = 0; break;
  case LOOM_SYM_NOT: mine = 2; break;
  default: return;
  }
  bool paren = mine < prec || (mine == 3 && prec == 3);
  if (paren) loom_strbuf_putc(p->sb, '(');
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_ADD: pr_sum(p, e->ops, e->n, 0, e->k, false); break;
  case LOOM_SYM_MUL: pr_term(p, e, true); break;
  case LOOM_SYM_NOT:
    loom_strbuf_putc(p->sb, '!');
    pr(p, e->ops[0], 6);
    break;
  case LOOM_SYM_LE: pr_le(p, e->ops[0], e->ops[1]); break;
  case LOOM_SYM_EQ:
  case LOOM_SYM_NE: pr_eq(p, e->kind == LOOM_SYM_EQ ? " == " : " != ", e->ops[0], e->ops[1]); break;
  default:
    pr(p, e->ops[0], mine + (mine >= 3 ? 1 : 0));
    loom_strbuf_printf(p->sb, " %s ", loom_sym_kind_name((loom_sym_kind)e->kind));
    pr(p, e->ops[1], mine + 1);
    break;
  }
  if (paren) loom_strbuf_putc(p->sb, ')');
}

typedef struct dup_scan {
  const loom_sym_expr *vars[64];
  size_t n;
  pctx *p;
} dup_scan;

static void note_var(void *ud, const loom_sym_expr *v) {
  dup_scan *d = ud;
  for (size_t i = 0; i < d->n; i++) {
    if (d->vars[i]->u.var.name == v->u.var.name && d->p->ndups + 2 <= 16) {
      d->p->dups[d->p->ndups++] = d->vars[i];
      d->p->dups[d->p->ndups++] = v;
    }
  }
  if (d->n < 64) d->vars[d->n++] = v;
}

void loom_sym_print(const loom_sym_expr *e, loom_strbuf *sb) {
  if (!e) {
    loom_strbuf_puts(sb, "<null>");
    return;
  }
  pctx p = {.sb = sb};
  dup_scan d = {.p = &p};
  loom_sym_for_each_var(e, note_var, &d);
  pr(&p, e, 0);
}

char *loom_sym_to_string(const loom_sym_expr *e) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_sym_print(e, &sb);
  if (sb.oom) {
    loom_strbuf_free(&sb);
    return NULL;
  }
  const char *s = loom_strbuf_cstr(&sb);
  size_t n = strlen(s) + 1;
  char *r = malloc(n);
  if (r) memcpy(r, s, n);
  loom_strbuf_free(&sb);
  return r;
}

typedef struct bind_print {
  const loom_sym_env *env;
  loom_strbuf *sb;
} bind_print;

static void print_binding(void *ud, const loom_sym_expr *v) {
  bind_print *b = ud;
  int64_t x;
  if (!loom_sym_env_get(b->env, v, &x)) return;
  if (b->sb->len) loom_strbuf_puts(b->sb, ", ");
  loom_strbuf_printf(b->sb, "%s = %lld", v->u.var.name, (long long)x);
}

void sym_print_bindings(const loom_sym_expr *e, const loom_sym_env *env, loom_strbuf *sb) {
  bind_print b = {env, sb};
  loom_sym_for_each_var(e, print_binding, &b);
}

/* sym_bind.c — binding symbolic variables at match sites.
 *
 * Given one pattern expression per axis and the concrete sizes, repeat until no
 * progress: for every axis whose pattern, with the variables bound so far substituted,
 * is k*v + c for one unbound variable v, solve v = (value - c) / k (the division must
 * be exact, and v must lie in its known range). Then every axis is evaluated and
 * compared. Messages name the axis, the expression, the expected and actual values,
 * and where each variable got its value:
 *   input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10 */
#include <stdlib.h>

#include "symbolic/sym_internal.h"

#define NO_AXIS ((size_t)-1)

typedef struct binder {
  loom_sym_ctx *cx;
  loom_sym_env *env;
  const loom_sym_expr *vars[32]; /* variables bound here, with the axis that bound them */
  size_t axis[32];
  size_t n;
  const loom_sym_expr *unbound;  /* scratch: an unbound variable found by count_unbound */
  size_t nunbound;
} binder;

static void count_unbound(void *ud, const loom_sym_expr *v) {
  binder *b = ud;
  if (!loom_sym_env_get(b->env, v, NULL)) {
    b->unbound = v;
    b->nunbound++;
  }
}

/* "(n = 4 from axis 0, m = 3)" for the variables of e. */
typedef struct origin_print {
  binder *b;
  loom_strbuf *sb;
} origin_print;

static void print_origin(void *ud, const loom_sym_expr *v) {
  origin_print *o = ud;
  int64_t x;
  if (!loom_sym_env_get(o->b->env, v, &x)) return;
  loom_strbuf_puts(o->sb, o->sb->len ? ", " : " (");
  loom_strbuf_printf(o->sb, "%s = %lld", v->u.var.name, (long long)x);
  for (size_t i = 0; i < o->b->n; i++)
    if (o->b->vars[i] == v) loom_strbuf_printf(o->sb, " from axis %zu", o->b->axis[i]);
}

static loom_status fail(binder *b, loom_code code, const char *what, size_t axis, const loom_sym_expr *e,
                        const char *fmt, int64_t x, int64_t y) {
  loom_strbuf sb, org;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_init(&org, NULL);
  loom_sym_print(e, &sb);
  origin_print o = {b, &org};
  loom_sym_for_each_var(e, print_origin, &o);
  if (org.len) loom_strbuf_putc(&org, ')');
  loom_strbuf msg;
  loom_strbuf_init(&msg, NULL);
  loom_strbuf_printf(&msg, fmt, loom_strbuf_cstr(&sb), (long long)x, loom_strbuf_cstr(&org), (long long)y);
  loom_status s = (sb.oom || org.oom || msg.oom)
                      ? LOOM_OOM()
                      : loom_status_make(code, __FILE__, __LINE__, "%s axis %zu: %s", what ? what : "value", axis,
                                         loom_strbuf_cstr(&msg));
  loom_strbuf_free(&sb);
  loom_strbuf_free(&org);
  loom_strbuf_free(&msg);
  return s;
}

/* The pattern with every bound variable (bound here or before the call) replaced by
 * its value. */
typedef struct bound_vars {
  binder *b;
  const loom_sym_expr *vars[32], *values[32];
  size_t n;
} bound_vars;

static void collect_bound(void *ud, const loom_sym_expr *v) {
  bound_vars *bv = ud;
  int64_t x;
  if (bv->n < 32 && loom_sym_env_get(bv->b->env, v, &x)) {
    bv->vars[bv->n] = v;
    bv->values[bv->n++] = loom_sym_const(bv->b->cx, x);
  }
}

static const loom_sym_expr *partial(binder *b, const loom_sym_expr *e) {
  bound_vars bv = {.b = b};
  loom_sym_for_each_var(e, collect_bound, &bv);
  return bv.n ? loom_sym_subst(b->cx, e, bv.vars, bv.values, bv.n) : e;
}

loom_status loom_sym_bind(loom_sym_ctx *cx, const loom_sym_expr *const *pattern,
                          const int64_t *values, size_t n, loom_sym_env *env, const char *what) {
  binder b = {.cx = cx, .env = env};
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < n; i++) {
      if (!pattern[i]) return LOOM_ERROR(INVALID_ARGUMENT, "%s axis %zu: no pattern", what, i);
      b.nunbound = 0;
      loom_sym_for_each_var(pattern[i], count_unbound, &b);
      if (b.nunbound != 1) continue;
      const loom_sym_expr *v = b.unbound, *av;
      const loom_sym_expr *pe = partial(&b, pattern[i]);
      if (!pe) return loom_sym_ctx_take_error(cx);
      int64_t k, c, x;
      if (!loom_sym_as_affine(pe, &av, &k, &c) || av != v) continue;
      // k*v + c = value  ->  v = (value - c) / k   when k divides value - c
      int64_t diff;
      if (__builtin_sub_overflow(values[i], c, &diff))
        return fail(&b, LOOM_CODE_OUT_OF_RANGE, what, i, pattern[i], "%s = %lld overflows int64 when solved%s (got %lld)",
                    values[i], values[i]);
      if (diff % k != 0 || (k == -1 && diff == INT64_MIN))
        return fail(&b, LOOM_CODE_INVALID_ARGUMENT, what, i, pattern[i],
                    "expected %s = %lld has no integer solution%s (the size is not of that form)", values[i], 0);
      x = diff / k;
      const sym_var_facts *f = sym_facts_of(cx, v);
      if (f && ((!f->lo_inf && x < f->lo) || (!f->hi_inf && x > f->hi) || (f->div > 1 && x % f->div != 0))) {
        loom_strbuf sb;
        loom_strbuf_init(&sb, NULL);
        loom_sym_print(pattern[i], &sb);
        loom_status s = LOOM_ERROR(INVALID_ARGUMENT, "%s axis %zu: %s = %lld gives %s = %lld, outside what is known of %s",
                                   what ? what : "value", i, loom_strbuf_cstr(&sb), (long long)values[i],
                                   v->u.var.name, (long long)x, v->u.var.name);
        loom_strbuf_free(&sb);
        return s;
      }
      LOOM_PROPAGATE(loom_sym_env_set(env, v, x));
      if (b.n < 32) {
        b.vars[b.n] = v;
        b.axis[b.n++] = i;
      }
      progress = true;
    }
  }
  for (size_t i = 0; i < n; i++) {
    int64_t got;
    b.nunbound = 0;
    loom_sym_for_each_var(pattern[i], count_unbound, &b);
    if (b.nunbound) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      loom_sym_print(pattern[i], &sb);
      loom_status s = LOOM_ERROR(INVALID_ARGUMENT, "%s axis %zu: cannot bind '%s' from %s = %lld (not affine in one unbound variable)",
                                 what ? what : "value", i, b.unbound->u.var.name, loom_strbuf_cstr(&sb), (long long)values[i]);
      loom_strbuf_free(&sb);
      return s;
    }
    loom_status s = loom_sym_eval(cx, pattern[i], env, &got);
    if (s) return loom_status_annotate(s, __FILE__, __LINE__, "while checking %s axis %zu", what ? what : "value", i);
    if (got != values[i])
      return fail(&b, LOOM_CODE_INVALID_ARGUMENT, what, i, pattern[i], "expected %s = %lld%s, got %lld", got, values[i]);
  }
  return LOOM_OK;
}

/* sym_eval.c — evaluation under concrete bindings, never silently wrapping.
 *
 * Sums and products are accumulated in __int128 with overflow checks, so an
 * intermediate term may exceed int64 as long as the node's value fits; any node whose
 * value does not fit int64 is an overflow error naming the expression and bindings. */
#include <stdlib.h>

#include "symbolic/sym_internal.h"

typedef enum { EV_OK, EV_OVERFLOW, EV_DIVZERO, EV_UNBOUND } ev_code;

typedef struct ev {
  const loom_sym_env *env;
  const loom_sym_expr *where; /* the offending node (variable for EV_UNBOUND) */
} ev;

static bool fits(__int128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

static ev_code eval_rec(ev *s, const loom_sym_expr *e, int64_t *out);

static ev_code eval_term(ev *s, const loom_sym_expr *t, __int128 *out) {
  if (t->kind != LOOM_SYM_MUL) {
    int64_t v;
    ev_code c = eval_rec(s, t, &v);
    *out = v;
    return c;
  }
  __int128 acc = 1;
  for (uint32_t i = 0; i < t->n; i++) {
    int64_t v;
    ev_code c = eval_rec(s, t->ops[i], &v);
    if (c) return c;
    for (uint32_t j = 0; j < t->exps[i]; j++) {
      if (acc == 0) break;
      if (__builtin_mul_overflow(acc, (__int128)v, &acc) || !fits(acc)) goto overflow;
    }
  }
  if (acc == 0) {
    *out = 0;
    return EV_OK;
  }
  if (t->k->u.num.is_big) goto overflow;
  if (__builtin_mul_overflow(acc, (__int128)t->k->u.num.small, &acc)) goto overflow;
  *out = acc;
  return EV_OK;
overflow:
  s->where = t;
  return EV_OVERFLOW;
}

static __int128 fdiv(__int128 a, __int128 b) {
  __int128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) q--;
  return q;
}

static ev_code eval_rec(ev *s, const loom_sym_expr *e, int64_t *out) {
  int64_t a, b;
  ev_code c;
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_CONST:
    if (e->u.num.is_big) {
      s->where = e;
      return EV_OVERFLOW;
    }
    *out = e->u.num.small;
    return EV_OK;
  case LOOM_SYM_VAR:
    if (!loom_sym_env_get(s->env, e, out)) {
      s->where = e;
      return EV_UNBOUND;
    }
    return EV_OK;
  case LOOM_SYM_ADD:
  case LOOM_SYM_MUL: {
    __int128 acc = 0, t;
    if (e->kind == LOOM_SYM_MUL) {
      if ((c = eval_term(s, e, &acc))) return c;
    } else {
      if (e->k->u.num.is_big) {
        s->where = e->k;
        return EV_OVERFLOW;
      }
      acc = e->k->u.num.small;
      for (uint32_t i = 0; i < e->n; i++) {
        if ((c = eval_term(s, e->ops[i], &t))) return c;
        if (__builtin_add_overflow(acc, t, &acc)) {
          acc = SYM_INF;
          break;
        }
      }
    }
    if (!fits(acc)) {
      s->where = e;
      return EV_OVERFLOW;
    }
    *out = (int64_t)acc;
    return EV_OK;
  }
  default: break;
  }
  if ((c = eval_rec(s, e->ops[0], &a))) return c;
  if (e->kind == LOOM_SYM_NOT) {
    *out = a == 0;
    return EV_OK;
  }
  if (e->kind == LOOM_SYM_SELECT) return eval_rec(s, a ? e->ops[1] : e->ops[2], out);
  if ((c = eval_rec(s, e->ops[1], &b))) return c;
  __int128 r = 0;
  switch ((loom_sym_kind)e->kind) {
  case LOOM_SYM_FLOORDIV:
  case LOOM_SYM_FLOORMOD:
    if (b == 0) {
      s->where = e;
      return EV_DIVZERO;
    }
    r = fdiv(a, b);
    if (e->kind == LOOM_SYM_FLOORMOD) r = (__int128)a - r * b;
    break;
  case LOOM_SYM_MIN: r = a < b ? a : b; break;
  case LOOM_SYM_MAX: r = a > b ? a : b; break;
  case LOOM_SYM_EQ: r = a == b; break;
  case LOOM_SYM_NE: r = a != b; break;
  case LOOM_SYM_LT: r = a < b; break;
  case LOOM_SYM_LE: r = a <= b; break;
  case LOOM_SYM_AND: r = a && b; break;
  case LOOM_SYM_OR: r = a || b; break;
  default: break;
  }
  if (!fits(r)) {
    s->where = e;
    return EV_OVERFLOW;
  }
  *out = (int64_t)r;
  return EV_OK;
}

loom_status loom_sym_eval(loom_sym_ctx *cx, const loom_sym_expr *e, const loom_sym_env *env,
                          int64_t *out) {
  (void)cx;
  if (!e) return LOOM_ERROR(INVALID_ARGUMENT, "loom_sym_eval: no expression");
  ev s = {env, NULL};
  ev_code c = eval_rec(&s, e, out);
  if (c == EV_OK) return LOOM_OK;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_sym_print(e, &sb);
  loom_strbuf binds;
  loom_strbuf_init(&binds, NULL);
  sym_print_bindings(e, env, &binds);
  loom_status st;
  if (sb.oom || binds.oom) {
    st = LOOM_OOM();
  } else if (c == EV_UNBOUND) {
    st = LOOM_ERROR(INVALID_ARGUMENT, "unbound symbolic variable '%s' in '%s'", s.where->u.var.name,
                    loom_strbuf_cstr(&sb));
  } else {
    loom_strbuf at;
    loom_strbuf_init(&at, NULL);
    if (s.where != e) {
      loom_strbuf_puts(&at, " at '");
      loom_sym_print(s.where, &at);
      loom_strbuf_puts(&at, "'");
    }
    st = loom_status_make(c == EV_OVERFLOW ? LOOM_CODE_OUT_OF_RANGE : LOOM_CODE_INVALID_ARGUMENT, __FILE__, __LINE__,
                    "%s evaluating '%s'%s with %s", c == EV_OVERFLOW ? "int64 overflow" : "division by zero",
                    loom_strbuf_cstr(&sb), loom_strbuf_cstr(&at), binds.len ? loom_strbuf_cstr(&binds) : "no variables");
    loom_strbuf_free(&at);
  }
  loom_strbuf_free(&sb);
  loom_strbuf_free(&binds);
  return st;
}

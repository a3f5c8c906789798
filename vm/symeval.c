/* symeval.c — recursive-descent evaluator for symbolic dim text (symeval.h). */
#include "vm/symeval.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

typedef struct P {
  const char *s, *p, *err;
  const char *const *names;
  const int64_t *values;
  size_t n;
  const char *unbound; /* name of an unbound var */
  size_t unbound_len;
} P;

static void ws(P *p) {
  while (isspace((unsigned char)*p->p)) p->p++;
}

static bool expr(P *p, int64_t *v);

static bool fdiv(P *p, int64_t a, int64_t b, bool mod, int64_t *v) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return p->err = b == 0 ? "division by zero" : "overflow", false;
  int64_t q = a / b, r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) q -= 1, r += b;
  *v = mod ? r : q;
  return true;
}

static bool atom(P *p, int64_t *v) {
  ws(p);
  if (*p->p == '(') {
    p->p++;
    if (!expr(p, v)) return false;
    ws(p);
    if (*p->p != ')') return p->err = "expected ')'", false;
    p->p++;
    return true;
  }
  if (isdigit((unsigned char)*p->p)) {
    int64_t x = 0;
    while (isdigit((unsigned char)*p->p)) {
      if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *p->p - '0', &x)) return p->err = "overflow", false;
      p->p++;
    }
    *v = x;
    return true;
  }
  if (isalpha((unsigned char)*p->p) || *p->p == '_') {
    const char *b = p->p;
    while (isalnum((unsigned char)*p->p) || *p->p == '_') p->p++;
    size_t len = (size_t)(p->p - b);
    ws(p);
    if (*p->p == '(') {
      static const char *fns[] = {"floordiv", "floormod", "min", "max", "select"};
      int which = -1;
      for (int i = 0; i < 5; i++)
        if (strlen(fns[i]) == len && !strncmp(fns[i], b, len)) which = i;
      if (which < 0) return p->err = "unknown function", false;
      p->p++;
      int64_t x[3];
      int nargs = which == 4 ? 3 : 2;
      for (int i = 0; i < nargs; i++) {
        if (i) {
          ws(p);
          if (*p->p != ',') return p->err = "expected ','", false;
          p->p++;
        }
        if (!expr(p, &x[i])) return false;
      }
      ws(p);
      if (*p->p != ')') return p->err = "expected ')'", false;
      p->p++;
      if (which < 2) return fdiv(p, x[0], x[1], which == 1, v);
      if (which == 4) *v = x[0] ? x[1] : x[2];
      else *v = which == 2 ? (x[0] < x[1] ? x[0] : x[1]) : (x[0] > x[1] ? x[0] : x[1]);
      return true;
    }
    for (size_t i = 0; i < p->n; i++)
      if (strlen(p->names[i]) == len && !strncmp(p->names[i], b, len)) {
        *v = p->values[i];
        return true;
      }
    p->unbound = b, p->unbound_len = len;
    return p->err = "unbound", false;
  }
  return p->err = "expected a number, a name or '('", false;
}

static bool unary(P *p, int64_t *v) {
  ws(p);
  if (*p->p == '!' && p->p[1] != '=') {
    p->p++;
    if (!unary(p, v)) return false;
    *v = !*v;
    return true;
  }
  if (*p->p == '-') {
    p->p++;
    if (!unary(p, v)) return false;
    if (__builtin_sub_overflow((int64_t)0, *v, v)) return p->err = "overflow", false;
    return true;
  }
  return atom(p, v);
}

static bool term(P *p, int64_t *v) {
  if (!unary(p, v)) return false;
  for (;;) {
    ws(p);
    int64_t r;
    if (p->p[0] == '/' && p->p[1] == '/') {
      p->p += 2;
      if (!unary(p, &r) || !fdiv(p, *v, r, false, v)) return false;
    } else if (*p->p == '%') {
      p->p++;
      if (!unary(p, &r) || !fdiv(p, *v, r, true, v)) return false;
    } else if (*p->p == '*') {
      p->p++;
      if (!unary(p, &r)) return false;
      if (__builtin_mul_overflow(*v, r, v)) return p->err = "overflow", false;
    } else {
      return true;
    }
  }
}

static bool sum(P *p, int64_t *v) {
  if (!term(p, v)) return false;
  for (;;) {
    ws(p);
    char c = *p->p;
    if (c != '+' && c != '-') return true;
    p->p++;
    int64_t r;
    if (!term(p, &r)) return false;
    if (c == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v)) return p->err = "overflow", false;
  }
}

/* cmp = sum [("==" | "!=" | "<=" | ">=" | "<" | ">") sum]: 1 or 0 */
static bool cmp(P *p, int64_t *v) {
  if (!sum(p, v)) return false;
  ws(p);
  static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  for (int i = 0; i < 6; i++) {
    size_t n = strlen(ops[i]);
    if (strncmp(p->p, ops[i], n)) continue;
    p->p += n;
    int64_t r;
    if (!sum(p, &r)) return false;
    int64_t l = *v;
    *v = i == 0 ? l == r : i == 1 ? l != r : i == 2 ? l <= r : i == 3 ? l >= r : i == 4 ? l < r : l > r;
    return true;
  }
  return true;
}

/* expr = conj {"||" conj}; conj = cmp {"&&" cmp} */
static bool conj(P *p, int64_t *v) {
  if (!cmp(p, v)) return false;
  for (;;) {
    ws(p);
    if (p->p[0] != '&' || p->p[1] != '&') return true;
    p->p += 2;
    int64_t r;
    if (!cmp(p, &r)) return false;
    *v = *v && r;
  }
}

static bool expr(P *p, int64_t *v) {
  if (!conj(p, v)) return false;
  for (;;) {
    ws(p);
    if (p->p[0] != '|' || p->p[1] != '|') return true;
    p->p += 2;
    int64_t r;
    if (!conj(p, &r)) return false;
    *v = *v || r;
  }
}

loom_status loom_vm_symeval(const char *text, const char *const *names, const int64_t *values, size_t n, int64_t *out) {
  P p = {text, text, NULL, names, values, n, NULL, 0};
  int64_t v = 0;
  bool ok = expr(&p, &v);
  if (ok) {
    ws(&p);
    if (*p.p) ok = false, p.err = "unexpected text";
  }
  if (!ok) {
    if (p.unbound)
      return LOOM_ERROR(INVALID_ARGUMENT, "'%s': symbolic var '%.*s' has no value (give it with --bind %.*s=N)", text,
                        (int)p.unbound_len, p.unbound, (int)p.unbound_len, p.unbound);
    return LOOM_ERROR(INVALID_ARGUMENT, "'%s': %s at column %d", text, p.err, (int)(p.p - p.s) + 1);
  }
  *out = v;
  return LOOM_OK;
}

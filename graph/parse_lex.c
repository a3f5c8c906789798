/* parse_lex.c — the text parser's lexer: errors at a source offset, white space and comments,
 * punctuation, identifiers and keywords, numbers and strings; the scope stacks of graph and
 * symbolic variables, and symbolic expressions (read by loom_sym_parse with names resolved
 * here). Shared with the other parser files through parse_internal.h. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "graph/parse_internal.h"

/* ---- errors and lexing ------------------------------------------------------------ */

static loom_status errv(parser *p, size_t off, loom_code code, const char *fmt, va_list ap) {
  loom_diag_addv(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, fmt, ap);
  return loom_diag_list_status(p->diags, code);
}

loom_status gp_err(parser *p, size_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  loom_status st = errv(p, off, LOOM_CODE_PARSE_ERROR, fmt, ap);
  va_end(ap);
  return st;
}

/* A semantic error (inference, scoping) at `off`, with the function and binding named. */
loom_status gp_sem_err(parser *p, size_t off, loom_status cause) {
  const char *msg = loom_status_message(cause);
  loom_code code = loom_status_code(cause);
  loom_status st;
  if (p->binding)
    loom_diag_add(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, "in @%s, binding '%s': %s", p->fn ? p->fn : "?",
                  p->binding, msg);
  else
    loom_diag_add(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, "in @%s: %s", p->fn ? p->fn : "?", msg);
  st = loom_diag_list_status(p->diags, code == LOOM_CODE_RESOURCE_EXHAUSTED ? code : LOOM_CODE_TYPE_ERROR);
  loom_status_free(cause);
  return st;
}

void gp_skip_ws(parser *p) {
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      p->pos++;
    } else if (c == '#' || (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/')) {
      while (p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
    } else {
      break;
    }
  }
}

char gp_peek(parser *p) {
  gp_skip_ws(p);
  return p->pos < p->len ? p->s[p->pos] : '\0';
}

bool gp_accept(parser *p, const char *tok) {
  gp_skip_ws(p);
  size_t n = strlen(tok);
  if (p->pos + n <= p->len && !memcmp(p->s + p->pos, tok, n)) {
    p->pos += n;
    return true;
  }
  return false;
}

loom_status gp_expect(parser *p, const char *tok) {
  if (gp_accept(p, tok)) return LOOM_OK;
  if (p->pos >= p->len) return gp_err(p, p->pos, "expected '%s', found the end of the file", tok);
  return gp_err(p, p->pos, "expected '%s'", tok);
}

bool gp_is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return gp_is_id0(c) || (c >= '0' && c <= '9'); }

/* ident := [A-Za-z_][A-Za-z0-9_]* */
bool gp_ident(parser *p, const char **start, size_t *n) {
  gp_skip_ws(p);
  if (p->pos >= p->len || !gp_is_id0(p->s[p->pos])) return false;
  size_t b = p->pos;
  while (p->pos < p->len && is_id(p->s[p->pos])) p->pos++;
  *start = p->s + b;
  *n = p->pos - b;
  return true;
}

bool gp_is_kw(const char *s, size_t n, const char *kw) { return strlen(kw) == n && !memcmp(s, kw, n); }

/* Looks at the next identifier without consuming it. */
bool gp_peek_kw(parser *p, const char *kw) {
  size_t save = p->pos;
  const char *s;
  size_t n;
  bool r = gp_ident(p, &s, &n) && gp_is_kw(s, n, kw);
  p->pos = save;
  return r;
}

loom_status gp_expect_ident(parser *p, const char *what, const char **out) {
  const char *s;
  size_t n;
  if (!gp_ident(p, &s, &n)) return gp_err(p, p->pos, "expected %s", what);
  *out = loom_graph_module_intern(p->m, s, n);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* '@' ident */
loom_status gp_global_name(parser *p, const char **out) {
  LOOM_PROPAGATE(gp_expect(p, "@"));
  if (p->pos >= p->len || !gp_is_id0(p->s[p->pos])) return gp_err(p, p->pos, "expected a name after '@'");
  return gp_expect_ident(p, "a name", out);
}

/* number := '-'? digits ('.' digits)? (('e'|'E') '-'? digits)? | 'inf' | '-inf' | 'nan' */
loom_status gp_number(parser *p, double *out, bool *is_int, int64_t *iv) {
  gp_skip_ws(p);
  size_t b = p->pos;
  char buf[80];
  size_t e = b;
  if (e < p->len && (p->s[e] == '-' || p->s[e] == '+')) e++;
  if (e + 3 <= p->len && (!memcmp(p->s + e, "inf", 3) || !memcmp(p->s + e, "nan", 3))) {
    bool neg = p->s[b] == '-';
    bool nan = p->s[e] == 'n';
    p->pos = e + 3;
    *out = nan ? (double)NAN : neg ? -(double)INFINITY : (double)INFINITY;
    *is_int = false;
    return LOOM_OK;
  }
  while (e < p->len && (is_id(p->s[e]) || p->s[e] == '.' ||
                        ((p->s[e] == '-' || p->s[e] == '+') && (p->s[e - 1] == 'e' || p->s[e - 1] == 'E'))))
    e++;
  if (e == b || e - b >= sizeof buf) return gp_err(p, b, "expected a number");
  memcpy(buf, p->s + b, e - b);
  buf[e - b] = '\0';
  char *end;
  *is_int = !strpbrk(buf, ".eE");
  if (*is_int) {
    long long v = strtoll(buf, &end, 10);
    *iv = v;
    *out = (double)v;
  } else {
    *out = strtod(buf, &end);
  }
  if (*end || end == buf) return gp_err(p, b, "malformed number '%s'", buf);
  p->pos = e;
  return LOOM_OK;
}

/* ---- scopes ------------------------------------------------------------------------- */

const void *gp_lookup(const name_vec *v, const char *name) {
  for (size_t i = v->len; i-- > 0;)
    if (v->data[i].name == name) return v->data[i].val;
  return NULL;
}

loom_status gp_push_name(parser *p, void *vec, const char *name, const void *val) {
  LOOM_VEC(name_ent) *v = vec;
  name_ent e = {name, val};
  if (!LOOM_VEC_PUSH(p->m->alloc, v, e)) return LOOM_OOM();
  return LOOM_OK;
}

static const loom_sym_expr *resolve(void *ud, const char *name, size_t len) {
  parser *p = ud;
  const char *n = loom_graph_module_intern(p->m, name, len);
  if (!n) return NULL;
  const loom_sym_expr *v = gp_lookup((const void *)&p->syms, n);
  if (v || p->sym_mode == SYM_RESOLVE) return v;
  v = loom_sym_var_new(p->m->cx, n, LOOM_SYM_VAR_SHAPE);
  if (!v) return NULL;
  loom_status st = gp_push_name(p, &p->syms, n, v);
  if (!st && p->sym_mode == SYM_ANNOT) st = gp_push_name(p, &p->fresh, n, v);
  if (st) {
    loom_status_free(st);
    return NULL;
  }
  return v;
}

loom_status gp_sym_expr(parser *p, const loom_sym_expr **out) {
  gp_skip_ws(p);
  size_t b = p->pos;
  loom_status st = loom_sym_parse(p->m->cx, p->src, &p->pos, resolve, p, p->diags, out);
  if (st) return st;
  if (!*out) return gp_err(p, b, "expected a symbolic expression");
  return LOOM_OK;
}

/* syms := sym (',' sym)* ','?   up to `close` */
loom_status gp_sym_list(parser *p, char close, gp_sym_vec *out) {
  while (gp_peek(p) != close) {
    const loom_sym_expr *e;
    LOOM_PROPAGATE(gp_sym_expr(p, &e));
    if (!LOOM_VEC_PUSH(p->m->alloc, out, e)) return LOOM_OOM();
    if (!gp_accept(p, ",")) break;
  }
  char t[2] = {close, 0};
  return gp_expect(p, t);
}

/* string := '"' [^"\n]* '"' */
loom_status gp_string_lit(parser *p, const char **out) {
  size_t b = (gp_skip_ws(p), p->pos);
  if (gp_peek(p) != '"') return gp_err(p, b, "expected a \"string\"");
  size_t e = ++p->pos;
  while (e < p->len && p->s[e] != '"' && p->s[e] != '\n') e++;
  if (e >= p->len || p->s[e] != '"') return gp_err(p, b, "unterminated string");
  *out = loom_arena_strndup(&p->m->arena, p->s + p->pos, e - p->pos);
  p->pos = e + 1;
  return *out ? LOOM_OK : LOOM_OOM();
}

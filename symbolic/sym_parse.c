/* sym_parse.c — the text parser for expressions (grammar in sym.h) and the name
 * table used by the CLI and tests. Errors are diagnostics at a byte offset, printed
 * with the source line and a caret. */
#include <string.h>

#include "symbolic/sym_internal.h"

typedef struct parser {
  loom_sym_ctx *cx;
  const loom_source *src;
  size_t pos;
  loom_sym_resolve_fn resolve;
  void *ud;
  loom_diag_list *diags;
  bool failed; /* an error was reported; unwind */
  bool oom;    /* memory ran out: the result is an out-of-memory status, not a diagnostic */
  int depth;   /* nesting of expr(): bounded so hostile input cannot exhaust the stack */
} parser;

#define MAX_DEPTH 256

static const loom_sym_expr *fail_at(parser *p, size_t at, const char *fmt, const char *arg) {
  if (!p->failed) loom_diag_add(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, at}, fmt, arg);
  p->failed = true;
  return NULL;
}

/* A constructor returned NULL: report the context's error at `at`. */
static const loom_sym_expr *check(parser *p, const loom_sym_expr *e, size_t at) {
  if (e || p->failed) return e;
  loom_status s = loom_sym_ctx_take_error(p->cx);
  if (loom_status_code(s) == LOOM_CODE_RESOURCE_EXHAUSTED) {
    p->oom = p->failed = true;
    loom_status_free(s);
    return NULL;
  }
  fail_at(p, at, "%s", s ? loom_status_message(s) : "invalid expression");
  loom_status_free(s);
  return NULL;
}

static void skip_ws(parser *p) {
  while (p->pos < p->src->len && (p->src->text[p->pos] == ' ' || p->src->text[p->pos] == '\t' ||
                                  p->src->text[p->pos] == '\n' || p->src->text[p->pos] == '\r'))
    p->pos++;
}

static bool peek(parser *p, const char *tok) {
  skip_ws(p);
  size_t n = strlen(tok);
  return p->pos + n <= p->src->len && memcmp(p->src->text + p->pos, tok, n) == 0;
}

static bool accept(parser *p, const char *tok) {
  if (!peek(p, tok)) return false;
  p->pos += strlen(tok);
  return true;
}

static bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_name_char(char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }

static const loom_sym_expr *expr(parser *p);
static const loom_sym_expr *or_(parser *p);

/* atom := INT | NAME | '(' expr ')' | NAME '(' expr (',' expr)* ')' */
static const loom_sym_expr *atom(parser *p) {
  skip_ws(p);
  size_t start = p->pos;
  const char *t = p->src->text;
  if (p->pos >= p->src->len) return fail_at(p, start, "expected an expression%s", "");
  char c = t[p->pos];
  if (c >= '0' && c <= '9') {
    while (p->pos < p->src->len && t[p->pos] >= '0' && t[p->pos] <= '9') p->pos++;
    char buf[512];
    size_t n = p->pos - start;
    if (n >= sizeof buf) return fail_at(p, start, "integer constant too long%s", "");
    memcpy(buf, t + start, n);
    buf[n] = 0;
    return check(p, loom_sym_const_str(p->cx, buf), start);
  }
  if (c == '(') {
    p->pos++;
    const loom_sym_expr *e = expr(p);
    if (!e) return NULL;
    if (!accept(p, ")")) return fail_at(p, p->pos, "expected ')'%s", "");
    return e;
  }
  if (!is_name_start(c)) {
    char what[2] = {c, 0};
    return fail_at(p, start, "unexpected '%s': expected an expression", what);
  }
  while (p->pos < p->src->len && is_name_char(t[p->pos])) p->pos++;
  size_t len = p->pos - start;
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), t + start);
  if (!accept(p, "(")) {
    const loom_sym_expr *v = p->resolve ? p->resolve(p->ud, t + start, len) : NULL;
    if (!v) {
      loom_status s = loom_sym_ctx_take_error(p->cx); /* a resolver may have run out of memory */
      bool oom = loom_status_code(s) == LOOM_CODE_RESOURCE_EXHAUSTED;
      loom_status_free(s);
      if (oom) {
        p->oom = p->failed = true;
        return NULL;
      }
      return fail_at(p, start, "unknown symbolic variable '%s'", name);
    }
    return v;
  }
  /* a call */
  static const struct { const char *name; int arity; } fns[] = {
      {"floordiv", 2}, {"floormod", 2}, {"ceildiv", 2}, {"min", 2}, {"max", 2}, {"select", 3}};
  int which = -1;
  for (int i = 0; i < (int)LOOM_ARRAY_LEN(fns); i++)
    if (strlen(fns[i].name) == len && memcmp(fns[i].name, t + start, len) == 0) which = i;
  if (which < 0) return fail_at(p, start, "unknown function '%s' (known: floordiv, floormod, ceildiv, min, max, select)", name);
  const loom_sym_expr *args[3];
  int n = 0;
  if (peek(p, ")")) return fail_at(p, p->pos, "expected an argument of '%s'", name);
  do {
    if (n == 3) return fail_at(p, p->pos, "too many arguments to '%s'", name);
    args[n] = expr(p);
    if (!args[n++]) return NULL;
  } while (accept(p, ","));
  if (!accept(p, ")")) return fail_at(p, p->pos, "expected ',' or ')' in the call of '%s'", name);
  if (n != fns[which].arity) {
    char msg[96];
    snprintf(msg, sizeof msg, "'%s' takes %d arguments, got %d", fns[which].name, fns[which].arity, n);
    return fail_at(p, start, "%s", msg);
  }
  const loom_sym_expr *r = NULL;
  switch (which) {
  case 0: r = loom_sym_floordiv(p->cx, args[0], args[1]); break;
  case 1: r = loom_sym_floormod(p->cx, args[0], args[1]); break;
  case 2: r = loom_sym_ceildiv(p->cx, args[0], args[1]); break;
  case 3: r = loom_sym_min(p->cx, args[0], args[1]); break;
  case 4: r = loom_sym_max(p->cx, args[0], args[1]); break;
  default: r = loom_sym_select(p->cx, args[0], args[1], args[2]); break;
  }
  return check(p, r, start);
}

/* unary := '-' unary | atom */
static const loom_sym_expr *unary(parser *p) {
  skip_ws(p);
  size_t at = p->pos;
  if (accept(p, "-")) {
    if (p->depth >= MAX_DEPTH) return fail_at(p, at, "expression nested too deeply (more than %s levels)", "256");
    p->depth++;
    const loom_sym_expr *e = unary(p);
    p->depth--;
    return e ? check(p, loom_sym_neg(p->cx, e), at) : NULL;
  }
  return atom(p);
}

/* term := unary (('*'|'//'|'%') unary)* */
static const loom_sym_expr *term(parser *p) {
  const loom_sym_expr *e = unary(p);
  while (e) {
    skip_ws(p);
    size_t at = p->pos;
    int op = accept(p, "*") ? 0 : accept(p, "//") ? 1 : accept(p, "%") ? 2 : -1;
    if (op < 0) break;
    const loom_sym_expr *r = unary(p);
    if (!r) return NULL;
    e = op == 0 ? loom_sym_mul(p->cx, e, r) : op == 1 ? loom_sym_floordiv(p->cx, e, r) : loom_sym_floormod(p->cx, e, r);
    e = check(p, e, at);
  }
  return e;
}

/* sum := term (('+'|'-') term)* */
static const loom_sym_expr *sum(parser *p) {
  const loom_sym_expr *e = term(p);
  while (e) {
    skip_ws(p);
    size_t at = p->pos;
    int op = accept(p, "+") ? 0 : accept(p, "-") ? 1 : -1;
    if (op < 0) break;
    const loom_sym_expr *r = term(p);
    if (!r) return NULL;
    e = check(p, op == 0 ? loom_sym_add(p->cx, e, r) : loom_sym_sub(p->cx, e, r), at);
  }
  return e;
}

/* cmp := sum (('=='|'!='|'<'|'<='|'>'|'>=') sum)? */
static const loom_sym_expr *cmp(parser *p) {
  const loom_sym_expr *e = sum(p);
  if (!e) return NULL;
  skip_ws(p);
  size_t at = p->pos;
  static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
  int op = -1;
  for (int i = 0; i < 6 && op < 0; i++)
    if (accept(p, ops[i])) op = i;
  if (op < 0) return e;
  const loom_sym_expr *r = sum(p);
  if (!r) return NULL;
  switch (op) {
  case 0: e = loom_sym_cmp(p->cx, LOOM_SYM_EQ, e, r); break;
  case 1: e = loom_sym_cmp(p->cx, LOOM_SYM_NE, e, r); break;
  case 2: e = loom_sym_cmp(p->cx, LOOM_SYM_LE, e, r); break;
  case 3: e = loom_sym_cmp(p->cx, LOOM_SYM_LE, r, e); break;
  case 4: e = loom_sym_cmp(p->cx, LOOM_SYM_LT, e, r); break;
  default: e = loom_sym_cmp(p->cx, LOOM_SYM_LT, r, e); break;
  }
  return check(p, e, at);
}

/* not := '!' not | cmp */
static const loom_sym_expr *not_(parser *p) {
  skip_ws(p);
  size_t at = p->pos;
  if (!peek(p, "!=") && accept(p, "!")) {
    if (p->depth >= MAX_DEPTH) return fail_at(p, at, "expression nested too deeply (more than %s levels)", "256");
    p->depth++;
    const loom_sym_expr *e = not_(p);
    p->depth--;
    return e ? check(p, loom_sym_not(p->cx, e), at) : NULL;
  }
  return cmp(p);
}

/* and := not ('&&' not)* */
static const loom_sym_expr *and_(parser *p) {
  const loom_sym_expr *e = not_(p);
  while (e) {
    skip_ws(p);
    size_t at = p->pos;
    if (!accept(p, "&&")) break;
    const loom_sym_expr *r = not_(p);
    if (!r) return NULL;
    e = check(p, loom_sym_and(p->cx, e, r), at);
  }
  return e;
}

/* expr := or ; or := and ('||' and)* */
static const loom_sym_expr *expr(parser *p) {
  if (p->depth >= MAX_DEPTH) {
    skip_ws(p);
    return fail_at(p, p->pos, "expression nested too deeply (more than %s levels)", "256");
  }
  p->depth++;
  const loom_sym_expr *e = or_(p);
  p->depth--;
  return e;
}

static const loom_sym_expr *or_(parser *p) {
  const loom_sym_expr *e = and_(p);
  while (e) {
    skip_ws(p);
    size_t at = p->pos;
    if (!accept(p, "||")) break;
    const loom_sym_expr *r = and_(p);
    if (!r) return NULL;
    e = check(p, loom_sym_or(p->cx, e, r), at);
  }
  return e;
}

loom_status loom_sym_parse(loom_sym_ctx *cx, const loom_source *src, size_t *pos,
                           loom_sym_resolve_fn resolve, void *ud, loom_diag_list *diags,
                           const loom_sym_expr **out) {
  parser p = {cx, src, *pos, resolve, ud, diags, false, false, 0};
  *out = NULL;
  const loom_sym_expr *e = expr(&p);
  skip_ws(&p);
  *pos = p.pos;
  if (!e) {
    if (p.oom || diags->oom) return LOOM_OOM();
    return loom_diag_list_status(diags, LOOM_CODE_PARSE_ERROR);
  }
  *out = e;
  return LOOM_OK;
}

/* ---- name tables --------------------------------------------------------------- */

struct loom_sym_names {
  loom_sym_ctx *cx;       /* where variables are made */
  loom_sym_var_kind kind; /* kind of new variables */
  loom_map by_name;       /* interned name pointer -> variable */
};

loom_status loom_sym_names_create(loom_sym_ctx *cx, loom_sym_var_kind kind, loom_sym_names **out) {
  loom_sym_names *n = loom_alloc_zero(cx->alloc, sizeof *n);
  *out = n;
  if (!n) return LOOM_OOM();
  n->cx = cx;
  n->kind = kind;
  loom_map_init(&n->by_name, cx->alloc);
  return LOOM_OK;
}

void loom_sym_names_destroy(loom_sym_names *names) {
  if (!names) return;
  loom_map_destroy(&names->by_name);
  loom_free(names->cx->alloc, names, sizeof *names);
}

const loom_sym_expr *loom_sym_names_get(loom_sym_names *names, const char *name, size_t len) {
  const char *in = loom_intern(&names->cx->names, name, len);
  if (!in) return sym_oom(names->cx);
  uint64_t v;
  if (loom_map_get(&names->by_name, (uint64_t)(uintptr_t)in, &v)) return (const loom_sym_expr *)(uintptr_t)v;
  const loom_sym_expr *var = loom_sym_var_new(names->cx, in, names->kind);
  if (!var) return NULL;
  if (!loom_map_put(&names->by_name, (uint64_t)(uintptr_t)in, (uint64_t)(uintptr_t)var)) return sym_oom(names->cx);
  return var;
}

const loom_sym_expr *loom_sym_names_resolve(void *names, const char *name, size_t len) {
  return loom_sym_names_get(names, name, len);
}

loom_status loom_sym_parse_string(loom_sym_ctx *cx, loom_sym_names *names, const char *source_name,
                                  const char *text, const loom_sym_expr **out) {
  loom_source src = {source_name ? source_name : "<expr>", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, cx->alloc);
  size_t pos = 0;
  loom_status s = loom_sym_parse(cx, &src, &pos, loom_sym_names_resolve, names, &dl, out);
  if (s == LOOM_OK && pos != src.len) {
    loom_diag_add(&dl, LOOM_DIAG_ERROR, (loom_loc){&src, pos}, "unexpected '%c' after the expression", text[pos]);
    *out = NULL;
    s = dl.oom ? LOOM_OOM() : loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR);
  }
  loom_diag_list_destroy(&dl);
  return s;
}

/* parse.c — the text parser (grammar in docs/ir.md). Recursive descent over the source
 * text; symbolic expressions inside struct info and attributes go to loom_sym_parse.
 * Inference runs as each binding is read, so a module that parses is typed; errors are
 * file:line:col with the source line and a caret.
 *
 * Scoping is enforced here as it is read: a symbolic variable is defined at its first
 * occurrence in a parameter's struct info or a match_cast target (or as the name of a
 * fresh symbol an op introduced); a graph variable is visible after its binding, and a
 * dataflow block only exports its `output` names. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/tp_bridge.h"

typedef struct name_ent {
  const char *name;      /* interned */
  const void *val;       /* loom_graph_expr* (vars) or loom_sym_expr* (symbols) */
} name_ent;

enum { SYM_RESOLVE, SYM_DEFINE, SYM_ANNOT };

typedef struct parser {
  loom_graph_module *m;
  const loom_source *src;   /* the caller's source: diagnostics point into it */
  const loom_source *ir_src; /* the module's own copy: locations stored in the IR */
  const char *s;
  size_t len, pos;
  loom_diag_list *diags;
  LOOM_VEC(name_ent) vars;  /* graph vars in scope (stack) */
  LOOM_VEC(name_ent) syms;  /* symbolic vars in scope (stack) */
  LOOM_VEC(name_ent) fresh; /* SYM_ANNOT: names created by the annotation being read */
  int sym_mode;
  const char *fn;           /* function being parsed */
  const char *binding;      /* binding being parsed (for messages) */
  int depth;                /* nesting of struct info and if-branches (bounded) */
  LOOM_VEC(const char *) prims; /* names of every `prim` in the file (prescan): call_tp may refer ahead */
} parser;

/* Deepest nesting of Tuple/Func struct info and `if` branches: hostile input cannot exhaust
 * the stack. */
enum { MAX_DEPTH = 256 };

/* ---- errors and lexing ------------------------------------------------------------ */

static loom_status errv(parser *p, size_t off, loom_code code, const char *fmt, va_list ap) {
  loom_diag_addv(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, fmt, ap);
  return loom_diag_list_status(p->diags, code);
}

static loom_status err(parser *p, size_t off, const char *fmt, ...) LOOM_PRINTF(3, 4);
static loom_status err(parser *p, size_t off, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  loom_status st = errv(p, off, LOOM_CODE_PARSE_ERROR, fmt, ap);
  va_end(ap);
  return st;
}

/* A semantic error (inference, scoping) at `off`, with the function and binding named. */
static loom_status sem_err(parser *p, size_t off, loom_status cause) {
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

/* A declaration error at `off`: the message and code of `cause`. */
static loom_status decl_err(parser *p, size_t off, loom_status cause) {
  loom_diag_add(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, "%s", loom_status_message(cause));
  loom_code code = loom_status_code(cause);
  loom_status_free(cause);
  return loom_diag_list_status(p->diags, code);
}

static void skip_ws(parser *p) {
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

static char peek(parser *p) {
  skip_ws(p);
  return p->pos < p->len ? p->s[p->pos] : '\0';
}

static bool accept(parser *p, const char *tok) {
  skip_ws(p);
  size_t n = strlen(tok);
  if (p->pos + n <= p->len && !memcmp(p->s + p->pos, tok, n)) {
    p->pos += n;
    return true;
  }
  return false;
}

static loom_status expect(parser *p, const char *tok) {
  if (accept(p, tok)) return LOOM_OK;
  if (p->pos >= p->len) return err(p, p->pos, "expected '%s', found the end of the file", tok);
  return err(p, p->pos, "expected '%s'", tok);
}

static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

/* ident := [A-Za-z_][A-Za-z0-9_]* */
static bool ident(parser *p, const char **start, size_t *n) {
  skip_ws(p);
  if (p->pos >= p->len || !is_id0(p->s[p->pos])) return false;
  size_t b = p->pos;
  while (p->pos < p->len && is_id(p->s[p->pos])) p->pos++;
  *start = p->s + b;
  *n = p->pos - b;
  return true;
}

static bool is_kw(const char *s, size_t n, const char *kw) { return strlen(kw) == n && !memcmp(s, kw, n); }

/* Looks at the next identifier without consuming it. */
static bool peek_kw(parser *p, const char *kw) {
  size_t save = p->pos;
  const char *s;
  size_t n;
  bool r = ident(p, &s, &n) && is_kw(s, n, kw);
  p->pos = save;
  return r;
}

static loom_status expect_ident(parser *p, const char *what, const char **out) {
  const char *s;
  size_t n;
  if (!ident(p, &s, &n)) return err(p, p->pos, "expected %s", what);
  *out = loom_graph_module_intern(p->m, s, n);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* '@' ident */
static loom_status global_name(parser *p, const char **out) {
  LOOM_PROPAGATE(expect(p, "@"));
  if (p->pos >= p->len || !is_id0(p->s[p->pos])) return err(p, p->pos, "expected a name after '@'");
  return expect_ident(p, "a name", out);
}

/* number := '-'? digits ('.' digits)? (('e'|'E') '-'? digits)? | 'inf' | '-inf' | 'nan' */
static loom_status number(parser *p, double *out, bool *is_int, int64_t *iv) {
  skip_ws(p);
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
  if (e == b || e - b >= sizeof buf) return err(p, b, "expected a number");
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
  if (*end || end == buf) return err(p, b, "malformed number '%s'", buf);
  p->pos = e;
  return LOOM_OK;
}

/* ---- scopes ------------------------------------------------------------------------- */

static const void *lookup(const LOOM_VEC(name_ent) * v, const char *name) {
  for (size_t i = v->len; i-- > 0;)
    if (v->data[i].name == name) return v->data[i].val;
  return NULL;
}

static loom_status push_name(parser *p, void *vec, const char *name, const void *val) {
  LOOM_VEC(name_ent) *v = vec;
  name_ent e = {name, val};
  if (!LOOM_VEC_PUSH(p->m->alloc, v, e)) return LOOM_OOM();
  return LOOM_OK;
}

static const loom_sym_expr *resolve(void *ud, const char *name, size_t len) {
  parser *p = ud;
  const char *n = loom_graph_module_intern(p->m, name, len);
  if (!n) return NULL;
  const loom_sym_expr *v = lookup((const void *)&p->syms, n);
  if (v || p->sym_mode == SYM_RESOLVE) return v;
  v = loom_sym_var_new(p->m->cx, n, LOOM_SYM_VAR_SHAPE);
  if (!v) return NULL;
  loom_status st = push_name(p, &p->syms, n, v);
  if (!st && p->sym_mode == SYM_ANNOT) st = push_name(p, &p->fresh, n, v);
  if (st) {
    loom_status_free(st);
    return NULL;
  }
  return v;
}

static loom_status sym_expr(parser *p, const loom_sym_expr **out) {
  skip_ws(p);
  size_t b = p->pos;
  loom_status st = loom_sym_parse(p->m->cx, p->src, &p->pos, resolve, p, p->diags, out);
  if (st) return st;
  if (!*out) return err(p, b, "expected a symbolic expression");
  return LOOM_OK;
}

/* syms := sym (',' sym)* ','?   up to `close` */
static loom_status sym_list(parser *p, char close, LOOM_VEC(const loom_sym_expr *) * out) {
  while (peek(p) != close) {
    const loom_sym_expr *e;
    LOOM_PROPAGATE(sym_expr(p, &e));
    if (!LOOM_VEC_PUSH(p->m->alloc, out, e)) return LOOM_OOM();
    if (!accept(p, ",")) break;
  }
  char t[2] = {close, 0};
  return expect(p, t);
}

/* ---- struct info ---------------------------------------------------------------------- */

static loom_status dtype_tok(parser *p, loom_dtype *out) {
  if (accept(p, "?")) {
    *out = LOOM_DTYPE_UNKNOWN;
    return LOOM_OK;
  }
  size_t b = (skip_ws(p), p->pos);
  const char *s;
  size_t n;
  if (!ident(p, &s, &n) || !loom_dtype_parse(s, n, out)) return err(p, b, "expected a dtype (f32, i64, bool, ...)");
  return LOOM_OK;
}

/* dims := '?' | INT | '(' syms ')' */
static loom_status dims(parser *p, int *ndim, const loom_sym_expr ***out) {
  *out = NULL;
  if (accept(p, "?")) {
    *ndim = LOOM_SINFO_NDIM_UNKNOWN;
    return LOOM_OK;
  }
  if (accept(p, "(")) {
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = sym_list(p, ')', (void *)&v);
    if (!st && v.len > 64) st = err(p, p->pos, "more than 64 dimensions");
    if (!st) {
      *ndim = (int)v.len;
      *out = loom_graph_dims_new(p->m, v.len);
      if (!*out) st = LOOM_OOM();
      else if (v.len) memcpy(*out, v.data, v.len * sizeof **out);
    }
    LOOM_VEC_FREE(p->m->alloc, &v);
    return st;
  }
  double d;
  bool is_int;
  int64_t iv = 0;
  size_t b = (skip_ws(p), p->pos);
  LOOM_PROPAGATE(number(p, &d, &is_int, &iv));
  if (!is_int || iv < 0 || iv > 64) return err(p, b, "expected a rank (0 to 64), '?' or a shape '(...)'");
  *ndim = (int)iv;
  return LOOM_OK;
}

static loom_status sinfo(parser *p, const loom_sinfo **out);

static loom_status sinfo_list(parser *p, char close, LOOM_VEC(const loom_sinfo *) * v) {
  while (peek(p) != close) {
    const loom_sinfo *s;
    LOOM_PROPAGATE(sinfo(p, &s));
    if (!LOOM_VEC_PUSH(p->m->alloc, v, s)) return LOOM_OOM();
    if (!accept(p, ",")) break;
  }
  char t[2] = {close, 0};
  return expect(p, t);
}

/* sinfo := 'Object' | 'Scalar' '[' dtype (',' sym)? ']' | 'Shape' '[' dims ']'
 *        | 'Tensor' '[' dims ',' dtype (',' 'device' '=' ident)? ']'
 *        | 'Tuple' '[' sinfo,* ']' | 'Func' '[' '(' sinfo,* ')' '->' sinfo ']' */
static loom_status sinfo_inner(parser *p, const loom_sinfo **out);

static loom_status sinfo(parser *p, const loom_sinfo **out) {
  if (p->depth >= MAX_DEPTH) return err(p, p->pos, "struct info nested more than %d deep", MAX_DEPTH);
  p->depth++;
  loom_status st = sinfo_inner(p, out);
  p->depth--;
  return st;
}

static loom_status sinfo_inner(parser *p, const loom_sinfo **out) {
  size_t b = (skip_ws(p), p->pos);
  const char *s;
  size_t n;
  loom_graph_module *m = p->m;
  if (!ident(p, &s, &n)) return err(p, b, "expected struct info (Tensor[...], Shape[...], Scalar[...], ...)");
  if (is_kw(s, n, "Object")) {
    *out = loom_sinfo_object(m);
    return *out ? LOOM_OK : LOOM_OOM();
  }
  LOOM_PROPAGATE(expect(p, "["));
  if (is_kw(s, n, "Scalar")) {
    loom_dtype dt;
    const loom_sym_expr *v = NULL;
    LOOM_PROPAGATE(dtype_tok(p, &dt));
    if (accept(p, ",")) LOOM_PROPAGATE(sym_expr(p, &v));
    LOOM_PROPAGATE(expect(p, "]"));
    *out = loom_sinfo_scalar(m, dt, v);
  } else if (is_kw(s, n, "Shape")) {
    int nd;
    const loom_sym_expr **d;
    LOOM_PROPAGATE(dims(p, &nd, &d));
    LOOM_PROPAGATE(expect(p, "]"));
    *out = loom_sinfo_shape(m, nd, d);
  } else if (is_kw(s, n, "Tensor")) {
    int nd;
    const loom_sym_expr **d;
    loom_dtype dt;
    const char *dev = NULL;
    LOOM_PROPAGATE(dims(p, &nd, &d));
    LOOM_PROPAGATE(expect(p, ","));
    LOOM_PROPAGATE(dtype_tok(p, &dt));
    if (accept(p, ",")) {
      const char *k;
      size_t kn;
      if (!ident(p, &k, &kn) || !is_kw(k, kn, "device")) return err(p, p->pos, "expected 'device='");
      LOOM_PROPAGATE(expect(p, "="));
      LOOM_PROPAGATE(expect_ident(p, "a device name", &dev));
    }
    LOOM_PROPAGATE(expect(p, "]"));
    *out = loom_sinfo_tensor(m, dt, nd, d, dev);
  } else if (is_kw(s, n, "Tuple")) {
    LOOM_VEC(const loom_sinfo *) v = {0};
    loom_status st = sinfo_list(p, ']', (void *)&v);
    if (!st) *out = loom_sinfo_tuple(m, v.len, v.data);
    LOOM_VEC_FREE(m->alloc, &v);
    LOOM_PROPAGATE(st);
  } else if (is_kw(s, n, "Func")) {
    LOOM_VEC(const loom_sinfo *) v = {0};
    const loom_sinfo *r = NULL;
    loom_status st = expect(p, "(");
    if (!st) st = sinfo_list(p, ')', (void *)&v);
    if (!st) st = expect(p, "->");
    if (!st) st = sinfo(p, &r);
    if (!st) st = expect(p, "]");
    if (!st) *out = loom_sinfo_func(m, v.len, v.data, r);
    LOOM_VEC_FREE(m->alloc, &v);
    LOOM_PROPAGATE(st);
  } else {
    return err(p, b, "unknown struct info '%.*s' (expected Object, Scalar, Shape, Tensor, Tuple or Func)", (int)n, s);
  }
  return *out ? LOOM_OK : LOOM_OOM();
}

/* Skips balanced text up to (not including) `stop` at depth 0 ('=' never matches '=='
 * or '->'). Used to read annotations after the value they describe. */
static loom_status skip_to(parser *p, char stop) {
  size_t b = p->pos;
  int depth = 0;
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c == '\n' && stop == '=' && depth == 0) break;
    if (c == '(' || c == '[') depth++;
    else if (c == ')' || c == ']') depth--;
    else if (depth == 0 && c == stop) {
      bool eqeq = stop == '=' && ((p->pos + 1 < p->len && p->s[p->pos + 1] == '=') ||
                                  (p->pos > 0 && strchr("=!<>", p->s[p->pos - 1])));
      if (!eqeq) return LOOM_OK;
      p->pos++;
    }
    if (depth < 0) break;
    p->pos++;
  }
  return err(p, b, "expected '%c' after the struct info", stop);
}

/* ---- expressions ---------------------------------------------------------------------- */

static loom_graph_expr *new_expr(parser *p, loom_graph_expr_kind k, size_t off) {
  loom_graph_expr *e = LOOM_ARENA_NEW(&p->m->arena, loom_graph_expr);
  if (e) {
    e->kind = k;
    e->loc = (loom_loc){p->ir_src, off};
  }
  return e;
}

static const loom_graph_const *find_const(parser *p, const char *name) {
  for (size_t i = 0; i < p->m->consts.len; i++)
    if (p->m->consts.data[i].name == name) return &p->m->consts.data[i];
  return NULL;
}

/* leaf := ident | '@' name | 'const' '(' number ',' dtype ')' | 'shape' '(' syms ')'
 *       | 'sym' '(' sym ')' */
static loom_status leaf(parser *p, loom_graph_expr **out) {
  size_t b = (skip_ws(p), p->pos);
  loom_graph_module *m = p->m;
  if (peek(p) == '@') {
    const char *name;
    LOOM_PROPAGATE(global_name(p, &name));
    const loom_graph_const *c = find_const(p, name);
    if (!c) return err(p, b, "unknown constant @%s", name);
    *out = c->expr;
    return LOOM_OK;
  }
  const char *s;
  size_t n;
  if (!ident(p, &s, &n)) return err(p, b, "expected a variable, constant, shape(...) or sym(...)");
  if (is_kw(s, n, "const") && peek(p) == '(') {
    p->pos++;
    double v;
    bool is_int;
    int64_t iv;
    loom_dtype dt;
    LOOM_PROPAGATE(number(p, &v, &is_int, &iv));
    LOOM_PROPAGATE(expect(p, ","));
    LOOM_PROPAGATE(dtype_tok(p, &dt));
    if (dt == LOOM_DTYPE_UNKNOWN) return err(p, b, "a constant needs a dtype");
    LOOM_PROPAGATE(expect(p, ")"));
    if (is_int && !loom_dtype_is_float(dt)) {
      unsigned char buf[8] = {0};
      loom_graph_tensor t = {.dtype = dt, .data = buf, .numel = 1};
      loom_graph_tensor_set_i64(&t, 0, iv);
      *out = loom_graph_const_new(m, loom_sinfo_tensor(m, dt, 0, NULL, NULL), buf, loom_dtype_size(dt));
    } else {
      *out = loom_graph_const_scalar(m, dt, v);
    }
    if (!*out) return LOOM_OOM();
    (*out)->loc = (loom_loc){p->ir_src, b};
    return LOOM_OK;
  }
  if (is_kw(s, n, "shape") && peek(p) == '(') {
    p->pos++;
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = sym_list(p, ')', (void *)&v);
    if (!st) {
      *out = loom_graph_shape_new(m, v.len, v.data);
      if (!*out) st = LOOM_OOM();
      else (*out)->loc = (loom_loc){p->ir_src, b};
    }
    LOOM_VEC_FREE(m->alloc, &v);
    return st;
  }
  if (is_kw(s, n, "sym") && peek(p) == '(') {
    p->pos++;
    const loom_sym_expr *e;
    LOOM_PROPAGATE(sym_expr(p, &e));
    LOOM_PROPAGATE(expect(p, ")"));
    *out = loom_graph_sym_new(m, e);
    if (!*out) return LOOM_OOM();
    (*out)->loc = (loom_loc){p->ir_src, b};
    return LOOM_OK;
  }
  const char *name = loom_graph_module_intern(m, s, n);
  if (!name) return LOOM_OOM();
  const loom_graph_expr *v = lookup((const void *)&p->vars, name);
  if (!v) return err(p, b, "unknown variable '%s'", name);
  *out = (loom_graph_expr *)v;
  return LOOM_OK;
}

/* leaves := leaf (',' leaf)*   up to ')' */
static loom_status leaves(parser *p, LOOM_VEC(loom_graph_expr *) * v) {
  while (peek(p) != ')') {
    loom_graph_expr *e;
    LOOM_PROPAGATE(leaf(p, &e));
    if (!LOOM_VEC_PUSH(p->m->alloc, v, e)) return LOOM_OOM();
    if (!accept(p, ",")) break;
  }
  return expect(p, ")");
}

static loom_graph_expr **copy_exprs(parser *p, size_t n, loom_graph_expr *const *src) {
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&p->m->arena, loom_graph_expr *, n ? n : 1);
  if (a && n) memcpy(a, src, n * sizeof *a);
  return a;
}

/* attr_value := '[' syms ']' | number | 'true' | 'false' | dtype | '"' chars '"' */
static loom_status attr_value(parser *p, loom_graph_attr *a) {
  size_t b = (skip_ws(p), p->pos);
  char c = peek(p);
  if (c == '[') {
    p->pos++;
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = sym_list(p, ']', (void *)&v);
    if (!st) {
      a->kind = LOOM_GRAPH_ATTR_SYMS;
      a->n = v.len;
      const loom_sym_expr **d = loom_graph_dims_new(p->m, v.len);
      if (!d) st = LOOM_OOM();
      else if (v.len) memcpy(d, v.data, v.len * sizeof *d);
      a->syms = d;
    }
    LOOM_VEC_FREE(p->m->alloc, &v);
    return st;
  }
  if (c == '"') {
    size_t e = ++p->pos;
    while (e < p->len && p->s[e] != '"' && p->s[e] != '\n') e++;
    if (e >= p->len || p->s[e] != '"') return err(p, b, "unterminated string");
    a->kind = LOOM_GRAPH_ATTR_STR;
    a->s = loom_arena_strndup(&p->m->arena, p->s + p->pos, e - p->pos);
    p->pos = e + 1;
    return a->s ? LOOM_OK : LOOM_OOM();
  }
  if (is_id0(c) && !peek_kw(p, "inf") && !peek_kw(p, "nan")) {
    const char *s;
    size_t n;
    ident(p, &s, &n);
    if (is_kw(s, n, "true") || is_kw(s, n, "false")) {
      a->kind = LOOM_GRAPH_ATTR_BOOL;
      a->i = is_kw(s, n, "true");
      return LOOM_OK;
    }
    if (loom_dtype_parse(s, n, &a->dtype)) {
      a->kind = LOOM_GRAPH_ATTR_DTYPE;
      return LOOM_OK;
    }
    return err(p, b, "expected an attribute value (number, [list], true/false, dtype or \"string\")");
  }
  double d;
  bool is_int;
  int64_t iv = 0;
  LOOM_PROPAGATE(number(p, &d, &is_int, &iv));
  a->kind = is_int ? LOOM_GRAPH_ATTR_INT : LOOM_GRAPH_ATTR_FLOAT;
  a->i = iv;
  a->f = d;
  return LOOM_OK;
}

/* Is the text at pos `ident '=' not '='`? (an attribute, not a leaf) */
static bool at_attr(parser *p) {
  size_t save = p->pos;
  const char *s;
  size_t n;
  bool r = ident(p, &s, &n) && (skip_ws(p), p->pos < p->len && p->s[p->pos] == '=') &&
           !(p->pos + 1 < p->len && p->s[p->pos + 1] == '=');
  p->pos = save;
  return r;
}

/* op_call := ident '(' (leaf | name '=' attr_value),* ')' */
static loom_status op_call(parser *p, loom_graph_op op, size_t b, loom_graph_expr **out) {
  LOOM_VEC(loom_graph_expr *) args = {0};
  LOOM_VEC(loom_graph_attr) attrs = {0};
  loom_status st = LOOM_OK;
  loom_graph_module *m = p->m;
  while (!st && peek(p) != ')') {
    if (at_attr(p)) {
      loom_graph_attr a = {0};
      size_t ab = (skip_ws(p), p->pos);
      st = expect_ident(p, "an attribute name", &a.name);
      if (!st) {
        for (size_t i = 0; i < attrs.len; i++)
          if (attrs.data[i].name == a.name) st = err(p, ab, "attribute '%s' given twice", a.name);
      }
      if (!st) st = expect(p, "=");
      if (!st) st = attr_value(p, &a);
      if (!st && !LOOM_VEC_PUSH(m->alloc, &attrs, a)) st = LOOM_OOM();
    } else {
      if (attrs.len) st = err(p, p->pos, "operands must come before attributes");
      loom_graph_expr *e = NULL;
      if (!st) st = leaf(p, &e);
      if (!st && !LOOM_VEC_PUSH(m->alloc, &args, e)) st = LOOM_OOM();
    }
    if (!st && !accept(p, ",")) break;
  }
  if (!st) st = expect(p, ")");
  if (!st) {
    *out = loom_graph_call_op(m, op, args.len, args.data, attrs.len, attrs.data);
    if (!*out) st = LOOM_OOM();
    else (*out)->loc = (loom_loc){p->ir_src, b};
  }
  LOOM_VEC_FREE(m->alloc, &args);
  LOOM_VEC_FREE(m->alloc, &attrs);
  return st;
}

static loom_status seq(parser *p, loom_graph_seq **out);

/* value := 'if' '(' leaf ')' '{' seq '}' 'else' '{' seq '}'
 *        | ('call_tp' | 'call_extern') '(' '@' name ',' '(' leaves ')' ',' sinfo ')'
 *        | '@' name '(' leaves ')' | '(' leaves ')' | op_call | leaf ('.' INT)* */
static loom_status value(parser *p, loom_graph_expr **out) {
  size_t b = (skip_ws(p), p->pos);
  loom_graph_module *m = p->m;
  if (peek(p) == '(') {
    p->pos++;
    LOOM_VEC(loom_graph_expr *) v = {0};
    loom_status st = leaves(p, (void *)&v);
    if (!st) {
      *out = new_expr(p, LOOM_GRAPH_EXPR_TUPLE, b);
      loom_graph_expr **items = copy_exprs(p, v.len, v.data);
      if (!*out || !items) st = LOOM_OOM();
      else {
        (*out)->u.tuple.n = v.len;
        (*out)->u.tuple.items = items;
      }
    }
    LOOM_VEC_FREE(m->alloc, &v);
    return st;
  }
  if (peek(p) == '@') {
    size_t save = p->pos;
    const char *name;
    LOOM_PROPAGATE(global_name(p, &name));
    if (peek(p) != '(') {
      p->pos = save;
      return leaf(p, out);
    }
    p->pos++;
    if (!loom_graph_module_find_func(m, name))
      return err(p, b, "unknown function @%s", name);
    LOOM_VEC(loom_graph_expr *) v = {0};
    loom_status st = leaves(p, (void *)&v);
    if (!st) {
      *out = new_expr(p, LOOM_GRAPH_EXPR_CALL, b);
      loom_graph_expr **a = copy_exprs(p, v.len, v.data);
      if (!*out || !a) st = LOOM_OOM();
      else {
        (*out)->u.call.callee = LOOM_GRAPH_CALLEE_FUNC;
        (*out)->u.call.target = name;
        (*out)->u.call.nargs = v.len;
        (*out)->u.call.args = a;
      }
    }
    LOOM_VEC_FREE(m->alloc, &v);
    return st;
  }
  size_t save = p->pos;
  const char *s;
  size_t n;
  if (ident(p, &s, &n) && peek(p) == '(') {
    if (is_kw(s, n, "if")) {
      if (p->depth >= MAX_DEPTH) return err(p, b, "'if' nested more than %d deep", MAX_DEPTH);
      p->pos++;
      loom_graph_expr *e = new_expr(p, LOOM_GRAPH_EXPR_IF, b);
      if (!e) return LOOM_OOM();
      LOOM_PROPAGATE(leaf(p, &e->u.if_.cond));
      LOOM_PROPAGATE(expect(p, ")"));
      LOOM_PROPAGATE(expect(p, "{"));
      size_t vmark = p->vars.len, smark = p->syms.len;
      p->depth++;
      loom_status bst = seq(p, &e->u.if_.then_seq);
      if (!bst) {
        p->vars.len = vmark;
        p->syms.len = smark;
        bst = expect(p, "}");
      }
      if (!bst && !peek_kw(p, "else")) bst = err(p, p->pos, "expected 'else'");
      if (!bst) {
        accept(p, "else");
        bst = expect(p, "{");
      }
      if (!bst) bst = seq(p, &e->u.if_.else_seq);
      p->depth--;
      LOOM_PROPAGATE(bst);
      p->vars.len = vmark;
      p->syms.len = smark;
      LOOM_PROPAGATE(expect(p, "}"));
      *out = e;
      return LOOM_OK;
    }
    if (is_kw(s, n, "call_tp") || is_kw(s, n, "call_extern")) {
      bool tp = is_kw(s, n, "call_tp");
      p->pos++;
      loom_graph_expr *e = new_expr(p, LOOM_GRAPH_EXPR_CALL, b);
      if (!e) return LOOM_OOM();
      e->u.call.callee = tp ? LOOM_GRAPH_CALLEE_TP : LOOM_GRAPH_CALLEE_EXTERN;
      size_t nb = (skip_ws(p), p->pos);
      LOOM_PROPAGATE(global_name(p, &e->u.call.target));
      if (tp) {
        bool found = false;
        for (size_t i = 0; i < m->tps.len; i++)
          if (!strcmp(loom_graph_tp_name(m->tps.data[i]), e->u.call.target)) found = true;
        for (size_t i = 0; i < p->prims.len; i++)
          if (p->prims.data[i] == e->u.call.target) found = true; /* defined later in the file */
        if (!found) return err(p, nb, "unknown tensor program @%s", e->u.call.target);
      } else {
        bool found = false;
        for (size_t i = 0; i < m->externs.len; i++)
          if (m->externs.data[i].name == e->u.call.target) found = true;
        if (!found) return err(p, nb, "unknown extern @%s (declare it with 'extern @name: Func[...]')", e->u.call.target);
      }
      LOOM_PROPAGATE(expect(p, ","));
      LOOM_PROPAGATE(expect(p, "("));
      LOOM_VEC(loom_graph_expr *) v = {0};
      loom_status st = leaves(p, (void *)&v);
      if (!st) {
        e->u.call.nargs = v.len;
        e->u.call.args = copy_exprs(p, v.len, v.data);
        if (!e->u.call.args) st = LOOM_OOM();
      }
      LOOM_VEC_FREE(m->alloc, &v);
      LOOM_PROPAGATE(st);
      LOOM_PROPAGATE(expect(p, ","));
      int mode = p->sym_mode;
      p->sym_mode = SYM_RESOLVE;
      st = sinfo(p, &e->u.call.out_sinfo);
      p->sym_mode = mode;
      LOOM_PROPAGATE(st);
      LOOM_PROPAGATE(expect(p, ")"));
      *out = e;
      return LOOM_OK;
    }
    if (!is_kw(s, n, "const") && !is_kw(s, n, "shape") && !is_kw(s, n, "sym")) {
      loom_graph_op op;
      if (!loom_graph_op_lookup(s, n, &op)) return err(p, b, "unknown operator '%.*s'", (int)n, s);
      p->pos++;
      return op_call(p, op, b, out);
    }
  }
  p->pos = save;
  loom_graph_expr *e;
  LOOM_PROPAGATE(leaf(p, &e));
  while (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    double d;
    bool is_int;
    int64_t iv = 0;
    size_t ib = p->pos;
    LOOM_PROPAGATE(number(p, &d, &is_int, &iv));
    if (!is_int || iv < 0) return err(p, ib, "expected a tuple index");
    loom_graph_expr *g = new_expr(p, LOOM_GRAPH_EXPR_TUPLE_GET, b);
    if (!g) return LOOM_OOM();
    g->u.get.tuple = e;
    g->u.get.index = (size_t)iv;
    e = g;
  }
  *out = e;
  return LOOM_OK;
}

/* ---- bindings, blocks, functions --------------------------------------------------------- */

/* Struct info of a non-call value (tuple, tuple-get, if, leaf). */
static loom_status simple_sinfo(parser *p, loom_graph_expr *e) {
  loom_graph_module *m = p->m;
  if (e->sinfo) return LOOM_OK;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_TUPLE: {
    const loom_sinfo **f = LOOM_ARENA_ARRAY(&m->arena, const loom_sinfo *, e->u.tuple.n ? e->u.tuple.n : 1);
    if (!f) return LOOM_OOM();
    for (size_t i = 0; i < e->u.tuple.n; i++) f[i] = e->u.tuple.items[i]->sinfo;
    e->sinfo = loom_sinfo_tuple(m, e->u.tuple.n, f);
    break;
  }
  case LOOM_GRAPH_EXPR_TUPLE_GET: {
    const loom_sinfo *t = e->u.get.tuple->sinfo;
    if (t->kind != LOOM_SINFO_TUPLE) return LOOM_ERROR(TYPE_ERROR, "'.%zu' applied to a value that is not a tuple", e->u.get.index);
    if (e->u.get.index >= t->nfields)
      return LOOM_ERROR(TYPE_ERROR, "tuple index %zu out of range (the tuple has %zu fields)", e->u.get.index, t->nfields);
    e->sinfo = t->fields[e->u.get.index];
    break;
  }
  case LOOM_GRAPH_EXPR_IF: {
    const loom_sinfo *a = e->u.if_.then_seq->result->sinfo, *b = e->u.if_.else_seq->result->sinfo;
    const loom_sinfo *c = e->u.if_.cond->sinfo;
    if (!(c->kind == LOOM_SINFO_SCALAR || (c->kind == LOOM_SINFO_TENSOR && c->ndim == 0)))
      return LOOM_ERROR(TYPE_ERROR, "the condition of 'if' must be a 0-d tensor or a scalar");
    if (loom_sinfo_equal(a, b)) e->sinfo = a;
    else if (a->kind == LOOM_SINFO_TENSOR && b->kind == LOOM_SINFO_TENSOR && a->dtype == b->dtype)
      e->sinfo = loom_sinfo_tensor(m, a->dtype, a->ndim == b->ndim ? a->ndim : LOOM_SINFO_NDIM_UNKNOWN, NULL, a->device);
    else e->sinfo = loom_sinfo_object(m);
    break;
  }
  default:
    break;
  }
  return e->sinfo ? LOOM_OK : LOOM_OOM();
}

/* Adds the symbolic vars of `si` not yet in scope (fresh symbols an op made) to the scope. */
static void add_fresh_cb(void *ud, const loom_sym_expr *v) {
  parser *p = ud;
  const char *n = loom_graph_module_intern(p->m, loom_sym_var_name(v), strlen(loom_sym_var_name(v)));
  if (n && lookup((const void *)&p->syms, n) != v) loom_status_free(push_name(p, &p->syms, n, v));
}

static void add_fresh(parser *p, const loom_sinfo *si) {
  if ((si->kind == LOOM_SINFO_TENSOR || si->kind == LOOM_SINFO_SHAPE) && si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], add_fresh_cb, p);
  if (si->kind == LOOM_SINFO_TUPLE)
    for (size_t i = 0; i < si->nfields; i++) add_fresh(p, si->fields[i]);
}

/* The declared annotation may name fresh symbols the op made (nonzero's count): pair them
 * position by position and rewrite the inferred info with the declared names. */
static const loom_sinfo *rename_fresh(parser *p, const loom_sinfo *declared, const loom_sinfo *inferred) {
  if (p->fresh.len && declared->kind == LOOM_SINFO_TUPLE && inferred->kind == LOOM_SINFO_TUPLE &&
      declared->nfields == inferred->nfields) { /* item by item (topk, unique) */
    const loom_sinfo **f = LOOM_ARENA_ARRAY(loom_graph_module_arena(p->m), const loom_sinfo *, inferred->nfields ? inferred->nfields : 1);
    if (!f) return NULL;
    for (size_t i = 0; i < inferred->nfields; i++)
      if (!(f[i] = rename_fresh(p, declared->fields[i], inferred->fields[i]))) return NULL;
    return loom_sinfo_tuple(p->m, inferred->nfields, f);
  }
  if (!p->fresh.len || !declared->dims || !inferred->dims || declared->ndim != inferred->ndim ||
      declared->kind != inferred->kind || (inferred->kind != LOOM_SINFO_TENSOR && inferred->kind != LOOM_SINFO_SHAPE))
    return inferred;
  const loom_sym_expr **d = loom_graph_dims_new(p->m, (size_t)inferred->ndim);
  if (!d) return NULL;
  for (int i = 0; i < inferred->ndim; i++) {
    d[i] = inferred->dims[i];
    const char *iname = loom_sym_is_var(inferred->dims[i]) ? loom_sym_var_name(inferred->dims[i]) : NULL;
    const char *in = iname ? loom_graph_module_intern(p->m, iname, strlen(iname)) : NULL;
    bool in_scope = in && lookup((const void *)&p->syms, in) == inferred->dims[i];
    if (iname && !in_scope && loom_sym_is_var(declared->dims[i]))
      for (size_t k = 0; k < p->fresh.len; k++)
        if (p->fresh.data[k].val == declared->dims[i]) d[i] = declared->dims[i];
  }
  return inferred->kind == LOOM_SINFO_TENSOR ? loom_sinfo_tensor(p->m, inferred->dtype, inferred->ndim, d, inferred->device)
                                             : loom_sinfo_shape(p->m, inferred->ndim, d);
}

static bool sinfo_uses(const loom_sinfo *si, const loom_sym_expr *v);

typedef struct uses_ud {
  const loom_sym_expr *v;
  bool found;
} uses_ud;
static void uses_cb(void *ud, const loom_sym_expr *var) {
  uses_ud *u = ud;
  if (var == u->v) u->found = true;
}
static bool sinfo_uses(const loom_sinfo *si, const loom_sym_expr *v) {
  uses_ud u = {v, false};
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], uses_cb, &u);
  if (si->value) loom_sym_for_each_var(si->value, uses_cb, &u);
  for (size_t i = 0; i < si->nfields; i++) u.found = u.found || sinfo_uses(si->fields[i], v);
  if (si->ret) u.found = u.found || sinfo_uses(si->ret, v);
  return u.found;
}

/* Words that cannot name a variable (the printer must be able to print every name). */
static bool reserved(const char *name) {
  static const char *const words[] = {"return", "dataflow", "output", "if", "else", "match_cast", "fn", "const",
                                      "extern", "prim", "shape", "sym", "call_tp", "call_extern"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(name, words[i])) return true;
  return false;
}

/* binding := ident (':' sinfo)? '=' ('match_cast' '(' leaf ',' sinfo ')' | value) */
static loom_status binding(parser *p, loom_graph_binding **out) {
  loom_graph_module *m = p->m;
  size_t b = (skip_ws(p), p->pos);
  const char *name;
  LOOM_PROPAGATE(expect_ident(p, "a binding 'name = value', 'dataflow', 'output' or 'return'", &name));
  if (reserved(name)) return err(p, b, "'%s' is a reserved word and cannot name a variable", name);
  p->binding = name;
  size_t annot = 0;
  bool has_annot = accept(p, ":");
  if (has_annot) {
    annot = (skip_ws(p), p->pos);
    LOOM_PROPAGATE(skip_to(p, '='));
  }
  LOOM_PROPAGATE(expect(p, "="));
  loom_graph_binding *bd = LOOM_ARENA_NEW(&m->arena, loom_graph_binding);
  if (!bd) return LOOM_OOM();
  bd->loc = (loom_loc){p->ir_src, b};
  size_t vb = (skip_ws(p), p->pos);
  const loom_sinfo *si;
  if (peek_kw(p, "match_cast")) {
    const char *s;
    size_t n;
    ident(p, &s, &n);
    bd->kind = LOOM_GRAPH_BIND_MATCH_CAST;
    LOOM_PROPAGATE(expect(p, "("));
    LOOM_PROPAGATE(leaf(p, &bd->value));
    LOOM_PROPAGATE(expect(p, ","));
    size_t cb = (skip_ws(p), p->pos);
    p->sym_mode = SYM_DEFINE;
    loom_status st = sinfo(p, &si);
    p->sym_mode = SYM_RESOLVE;
    LOOM_PROPAGATE(st);
    LOOM_PROPAGATE(expect(p, ")"));
    if (bd->value->sinfo->kind != LOOM_SINFO_OBJECT && loom_sinfo_is_base_of(m->cx, si, bd->value->sinfo) == LOOM_SYM_FALSE)
      return sem_err(p, cb, LOOM_ERROR(TYPE_ERROR, "match_cast can never succeed: the value is never of this struct info"));
  } else {
    LOOM_PROPAGATE(value(p, &bd->value));
    loom_graph_expr *v = bd->value;
    if (v->kind == LOOM_GRAPH_EXPR_CALL) {
      loom_graph_infer_result r;
      loom_status st = loom_graph_infer_call(m, v, name, &r);
      if (st) return sem_err(p, vb, st);
      v->sinfo = r.sinfo;
      bd->nguards = r.nguards;
      bd->guards = r.guards;
      bd->guard_why = r.guard_why;
    } else {
      loom_status st = simple_sinfo(p, v);
      if (st) return sem_err(p, vb, st);
    }
    si = v->sinfo;
  }
  size_t end = p->pos;
  if (has_annot) {
    /* Read the annotation now that the value's symbols are known. */
    p->pos = annot;
    p->fresh.len = 0;
    p->sym_mode = SYM_ANNOT;
    const loom_sinfo *decl;
    loom_status st = sinfo(p, &decl);
    p->sym_mode = SYM_RESOLVE;
    LOOM_PROPAGATE(st);
    const loom_sinfo *inf = rename_fresh(p, decl, si);
    if (!inf) return LOOM_OOM();
    for (size_t k = 0; k < p->fresh.len; k++)
      if (!sinfo_uses(inf, p->fresh.data[k].val)) {
        /* Undo the definition so the message is about scope. */
        return sem_err(p, annot,
                       LOOM_ERROR(TYPE_ERROR, "symbolic variable '%s' is not defined here (define it in a parameter or a match_cast)",
                                  p->fresh.data[k].name));
      }
    loom_sym_truth t = loom_sinfo_is_base_of(m->cx, decl, inf);
    if (t != LOOM_SYM_TRUE) {
      loom_strbuf a, c;
      loom_strbuf_init(&a, m->alloc);
      loom_strbuf_init(&c, m->alloc);
      loom_sinfo_print(decl, &a);
      loom_sinfo_print(inf, &c);
      loom_status e = LOOM_ERROR(TYPE_ERROR, "declared %s but the value is %s%s", loom_strbuf_cstr(&a), loom_strbuf_cstr(&c),
                                 t == LOOM_SYM_UNKNOWN ? " (not provably the same; use match_cast to check at run time)" : "");
      loom_strbuf_free(&a);
      loom_strbuf_free(&c);
      return sem_err(p, annot, e);
    }
    /* Fresh symbols keep their declared names; otherwise the inferred info is kept (it is at
     * least as precise, and printing it is what round-trips). */
    if (p->fresh.len || bd->kind == LOOM_GRAPH_BIND_MATCH_CAST || !loom_sinfo_equal(decl, si)) {
      if (bd->kind == LOOM_GRAPH_BIND_MATCH_CAST && loom_sinfo_is_base_of(m->cx, si, decl) != LOOM_SYM_TRUE)
        return sem_err(p, annot, LOOM_ERROR(TYPE_ERROR, "the annotation of a match_cast must be its target struct info"));
      si = decl;
    }
    p->pos = end;
  }
  add_fresh(p, si);
  bd->var = loom_graph_var_new(m, name, si);
  if (!bd->var) return LOOM_OOM();
  bd->var->loc = (loom_loc){p->ir_src, b};
  if (lookup((const void *)&p->vars, bd->var->u.var.name))
    return err(p, b, "variable '%s' is already defined (names are single-assignment)", name);
  LOOM_PROPAGATE(push_name(p, &p->vars, bd->var->u.var.name, bd->var));
  p->binding = NULL;
  *out = bd;
  return LOOM_OK;
}

typedef LOOM_VEC(loom_graph_binding *) binding_vec;
typedef LOOM_VEC(loom_graph_block *) block_vec;

static loom_status make_block(parser *p, bool dataflow, binding_vec *bs, block_vec *blocks,
                              size_t noutputs, loom_graph_expr *const *outputs) {
  loom_graph_block *blk = LOOM_ARENA_NEW(&p->m->arena, loom_graph_block);
  loom_graph_binding **a = LOOM_ARENA_ARRAY(&p->m->arena, loom_graph_binding *, bs->len ? bs->len : 1);
  if (!blk || !a) return LOOM_OOM();
  if (bs->len) memcpy(a, bs->data, bs->len * sizeof *a);
  blk->dataflow = dataflow;
  blk->n = bs->len;
  blk->bindings = a;
  blk->noutputs = noutputs;
  blk->outputs = outputs;
  bs->len = 0;
  if (!LOOM_VEC_PUSH(p->m->alloc, blocks, blk)) return LOOM_OOM();
  return LOOM_OK;
}

/* dataflow := 'dataflow' '{' binding* 'output' ident,* '}' */
static loom_status dataflow_block(parser *p, block_vec *blocks) {
  loom_graph_module *m = p->m;
  binding_vec bs = {0};
  LOOM_VEC(loom_graph_expr *) outs = {0};
  size_t mark = p->vars.len;
  loom_status st = expect(p, "{");
  while (!st && !peek_kw(p, "output")) {
    if (peek(p) == '}' || p->pos >= p->len) {
      st = err(p, p->pos, "a dataflow block ends with 'output NAMES'");
      break;
    }
    loom_graph_binding *b;
    st = binding(p, &b);
    if (!st && b->value->kind == LOOM_GRAPH_EXPR_IF)
      st = err(p, b->loc.offset, "'if' is not allowed in a dataflow block (dataflow blocks are free of control flow)");
    if (!st && !LOOM_VEC_PUSH(m->alloc, &bs, b)) st = LOOM_OOM();
  }
  if (!st) {
    const char *s;
    size_t n;
    ident(p, &s, &n);
    do {
      size_t ob = (skip_ws(p), p->pos);
      const char *name;
      st = expect_ident(p, "an output variable", &name);
      if (st) break;
      const loom_graph_expr *v = NULL;
      for (size_t i = mark; i < p->vars.len; i++)
        if (p->vars.data[i].name == name) v = p->vars.data[i].val;
      if (!v) {
        st = err(p, ob, "'%s' is not defined in this dataflow block", name);
        break;
      }
      if (!LOOM_VEC_PUSH(m->alloc, &outs, (loom_graph_expr *)v)) st = LOOM_OOM();
    } while (!st && accept(p, ","));
  }
  if (!st) st = expect(p, "}");
  if (!st) {
    loom_graph_expr **o = copy_exprs(p, outs.len, outs.data);
    if (!o) st = LOOM_OOM();
    else st = make_block(p, true, &bs, blocks, outs.len, o);
    /* Only the outputs stay visible. */
    size_t k = mark;
    for (size_t i = mark; i < p->vars.len; i++) {
      bool keep = false;
      for (size_t j = 0; j < outs.len; j++)
        if (outs.data[j] == p->vars.data[i].val) keep = true;
      if (keep) p->vars.data[k++] = p->vars.data[i];
    }
    p->vars.len = k;
  }
  LOOM_VEC_FREE(m->alloc, &bs);
  LOOM_VEC_FREE(m->alloc, &outs);
  return st;
}

/* seq := (dataflow | binding)* 'return' leaf */
static loom_status seq(parser *p, loom_graph_seq **out) {
  loom_graph_module *m = p->m;
  binding_vec cur = {0};
  block_vec blocks = {0};
  loom_status st = LOOM_OK;
  loom_graph_seq *s = LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
  if (!s) return LOOM_OOM();
  for (;;) {
    if (p->pos >= p->len || peek(p) == '\0') {
      st = err(p, p->pos, "expected 'return' before the end of the file");
      break;
    }
    if (peek(p) == '}') {
      st = err(p, p->pos, "expected 'return' before '}'");
      break;
    }
    if (peek_kw(p, "return")) {
      const char *k;
      size_t n;
      ident(p, &k, &n);
      if (cur.len) st = make_block(p, false, &cur, &blocks, 0, NULL);
      if (!st) st = leaf(p, &s->result);
      break;
    }
    if (peek_kw(p, "dataflow")) {
      const char *k;
      size_t n;
      ident(p, &k, &n);
      if (cur.len) st = make_block(p, false, &cur, &blocks, 0, NULL);
      if (!st) st = dataflow_block(p, &blocks);
      if (st) break;
      continue;
    }
    loom_graph_binding *b;
    st = binding(p, &b);
    if (!st && !LOOM_VEC_PUSH(m->alloc, &cur, b)) st = LOOM_OOM();
    if (st) break;
  }
  if (!st) {
    s->nblocks = blocks.len;
    s->blocks = LOOM_ARENA_ARRAY(&m->arena, loom_graph_block *, blocks.len ? blocks.len : 1);
    if (!s->blocks) st = LOOM_OOM();
    else if (blocks.len) memcpy((void *)s->blocks, blocks.data, blocks.len * sizeof *s->blocks);
  }
  LOOM_VEC_FREE(m->alloc, &cur);
  LOOM_VEC_FREE(m->alloc, &blocks);
  *out = s;
  return st;
}

/* params := '(' (ident ':' sinfo),* ')'   (each sinfo defines its new symbols) */
static loom_status param_list(parser *p, loom_graph_func *f) {
  loom_graph_module *m = p->m;
  LOOM_PROPAGATE(expect(p, "("));
  LOOM_VEC(loom_graph_expr *) params = {0};
  loom_status st = LOOM_OK;
  while (!st && peek(p) != ')') {
    size_t pb = (skip_ws(p), p->pos);
    const char *name;
    const loom_sinfo *si = NULL;
    st = expect_ident(p, "a parameter name", &name);
    if (!st && reserved(name)) st = err(p, pb, "'%s' is a reserved word and cannot name a variable", name);
    if (!st) st = expect(p, ":");
    if (!st) {
      p->sym_mode = SYM_DEFINE;
      st = sinfo(p, &si);
      p->sym_mode = SYM_RESOLVE;
    }
    if (!st && lookup((const void *)&p->vars, name)) st = err(p, pb, "parameter '%s' is given twice", name);
    if (st) break;
    loom_graph_expr *v = loom_graph_var_new(m, name, si);
    if (!v || !LOOM_VEC_PUSH(m->alloc, &params, v)) st = LOOM_OOM();
    else {
      v->loc = (loom_loc){p->ir_src, pb};
      st = push_name(p, &p->vars, v->u.var.name, v);
    }
    if (!st && !accept(p, ",")) break;
  }
  if (!st) st = expect(p, ")");
  if (!st) {
    f->nparams = params.len;
    f->params = copy_exprs(p, params.len, params.data);
    if (!f->params) st = LOOM_OOM();
  }
  LOOM_VEC_FREE(m->alloc, &params);
  LOOM_PROPAGATE(st);
  return LOOM_OK;
}

/* func := 'fn' '@' name '(' (ident ':' sinfo),* ')' '->' sinfo '{' seq '}' */
static loom_status func(parser *p) {
  loom_graph_module *m = p->m;
  size_t b = p->pos;
  loom_graph_func *f = LOOM_ARENA_NEW(&m->arena, loom_graph_func);
  if (!f) return LOOM_OOM();
  f->loc = (loom_loc){p->ir_src, b};
  LOOM_PROPAGATE(global_name(p, &f->name));
  p->fn = f->name;
  p->vars.len = 0;
  p->syms.len = 0;
  loom_graph_func *stub = loom_graph_module_find_func(m, f->name);
  if (stub && stub->body) return err(p, b, "function @%s is defined twice", f->name);
  LOOM_PROPAGATE(param_list(p, f));
  LOOM_PROPAGATE(expect(p, "->"));
  size_t ret_at = (skip_ws(p), p->pos);
  LOOM_PROPAGATE(skip_to(p, '{'));
  LOOM_PROPAGATE(expect(p, "{"));
  LOOM_PROPAGATE(seq(p, &f->body));
  LOOM_PROPAGATE(expect(p, "}"));
  size_t end = p->pos;
  /* The declared result is read after the body: it may name symbols the body defines. */
  p->pos = ret_at;
  LOOM_PROPAGATE(sinfo(p, &f->ret));
  p->pos = end;
  loom_sym_truth t = loom_sinfo_is_base_of(m->cx, f->ret, f->body->result->sinfo);
  if (t != LOOM_SYM_TRUE) {
    loom_strbuf a, c;
    loom_strbuf_init(&a, m->alloc);
    loom_strbuf_init(&c, m->alloc);
    loom_sinfo_print(f->ret, &a);
    loom_sinfo_print(f->body->result->sinfo, &c);
    loom_status e = LOOM_ERROR(TYPE_ERROR, "declared result %s but the function returns %s", loom_strbuf_cstr(&a),
                               loom_strbuf_cstr(&c));
    loom_strbuf_free(&a);
    loom_strbuf_free(&c);
    return sem_err(p, ret_at, e);
  }
  p->fn = NULL;
  if (stub) {
    /* Replace the forward declaration in place (definition order is kept). */
    for (size_t i = 0; i < m->funcs.len; i++)
      if (m->funcs.data[i] == stub) m->funcs.data[i] = f;
    return LOOM_OK;
  }
  return loom_graph_module_add_func(m, f);
}

/* const := 'const' '@' name ':' sinfo '=' '[' number,* ']' */
static loom_status constant(parser *p) {
  loom_graph_module *m = p->m;
  size_t b = (skip_ws(p), p->pos);
  const char *name;
  const loom_sinfo *si;
  LOOM_PROPAGATE(global_name(p, &name));
  if (find_const(p, name)) return err(p, b, "constant @%s is defined twice", name);
  LOOM_PROPAGATE(expect(p, ":"));
  p->syms.len = 0;
  size_t sb = (skip_ws(p), p->pos);
  LOOM_PROPAGATE(sinfo(p, &si));
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims || si->dtype == LOOM_DTYPE_UNKNOWN)
    return err(p, sb, "a constant needs a Tensor struct info with a constant shape and dtype");
  size_t numel = 1;
  for (int i = 0; i < si->ndim; i++) {
    int64_t d;
    if (!loom_sym_is_const(si->dims[i], &d) || d < 0 || !loom_size_mul(numel, (size_t)d, &numel) || numel > (1u << 26))
      return err(p, sb, "a constant needs a constant shape (at most 2^26 elements)");
  }
  LOOM_PROPAGATE(expect(p, "="));
  LOOM_PROPAGATE(expect(p, "["));
  size_t es = loom_dtype_size(si->dtype);
  loom_graph_tensor t = {.dtype = si->dtype, .numel = numel};
  t.data = loom_arena_alloc(&m->arena, numel * es + 1, 16);
  if (!t.data) return LOOM_OOM();
  size_t i = 0;
  while (peek(p) != ']') {
    double d;
    bool is_int;
    int64_t iv = 0;
    size_t nb = (skip_ws(p), p->pos);
    LOOM_PROPAGATE(number(p, &d, &is_int, &iv));
    if (i >= numel) return err(p, nb, "constant @%s has more than %zu values", name, numel);
    if (is_int) loom_graph_tensor_set_i64(&t, i, iv);
    else loom_graph_tensor_set_f64(&t, i, d);
    i++;
    if (!accept(p, ",")) break;
  }
  LOOM_PROPAGATE(expect(p, "]"));
  if (i != numel) return err(p, b, "constant @%s has %zu values, its shape needs %zu", name, i, numel);
  loom_graph_expr *e = loom_graph_const_new(m, si, t.data, numel * es);
  if (!e) return LOOM_OOM();
  e->loc = (loom_loc){p->ir_src, b};
  return loom_graph_module_add_const(m, name, e);
}

/* string := '"' [^"\n]* '"' */
static loom_status string_lit(parser *p, const char **out) {
  size_t b = (skip_ws(p), p->pos);
  if (peek(p) != '"') return err(p, b, "expected a \"string\"");
  size_t e = ++p->pos;
  while (e < p->len && p->s[e] != '"' && p->s[e] != '\n') e++;
  if (e >= p->len || p->s[e] != '"') return err(p, b, "unterminated string");
  *out = loom_arena_strndup(&p->m->arena, p->s + p->pos, e - p->pos);
  p->pos = e + 1;
  return *out ? LOOM_OK : LOOM_OOM();
}

/* The conversion spelled `s` (i32 i64 f32 f64), or VOID when it is none. */
static loom_libcall_ctype ctype_word(const char *s, size_t n) {
  for (int t = LOOM_LIBCALL_CT_I32; t < LOOM_LIBCALL_CT_COUNT; t++)
    if (is_kw(s, n, loom_libcall_ctype_name((loom_libcall_ctype)t))) return (loom_libcall_ctype)t;
  return LOOM_LIBCALL_CT_VOID;
}

/* carg := INT | name | ('i32' | 'i64' | 'f32' | 'f64') '(' (name | INT) ')' */
static loom_status c_arg(parser *p, loom_libcall_cref *out) {
  memset(out, 0, sizeof *out);
  size_t b = (skip_ws(p), p->pos);
  const char *s;
  size_t n;
  bool wrapped = false;
  if (ident(p, &s, &n)) {
    loom_libcall_ctype t = ctype_word(s, n);
    if (t != LOOM_LIBCALL_CT_VOID && peek(p) == '(') {
      p->pos++;
      out->cast = t;
      wrapped = true;
    } else {
      p->pos = b;
    }
  }
  if (ident(p, &s, &n)) {
    if (!(out->name = loom_graph_module_intern(p->m, s, n))) return LOOM_OOM();
  } else {
    double d;
    bool is_int;
    LOOM_PROPAGATE(number(p, &d, &is_int, &out->value));
    if (!is_int) return err(p, b, "a constant C argument is an integer (convert it: f64(2))");
  }
  return wrapped ? expect(p, ")") : LOOM_OK;
}

/* ext_attr := 'symbol' '=' string | 'library' '=' string | 'pure'
 *           | 'abi' '=' ('kernel' | 'c' '(' carg,* ')' ('->' ('i32' | 'void'))?) */
static loom_status extern_attrs(parser *p, loom_libcall_decl *d, bool *any) {
  LOOM_VEC(loom_libcall_cref) cargs = {0};
  loom_status st = LOOM_OK;
  for (;;) {
    size_t b = (skip_ws(p), p->pos);
    const char *s;
    size_t n;
    if (!ident(p, &s, &n)) break;
    if (is_kw(s, n, "pure")) {
      d->pure = *any = true;
    } else if (is_kw(s, n, "symbol") || is_kw(s, n, "library")) {
      const char **slot = is_kw(s, n, "symbol") ? &d->symbol : &d->library;
      if (*slot) st = err(p, b, "'%.*s' is given twice", (int)n, s);
      if (!st) st = expect(p, "=");
      if (!st) st = string_lit(p, slot);
      if (!st && !(*slot)[0]) st = err(p, b, "'%.*s' is empty", (int)n, s);
      *any = true;
    } else if (is_kw(s, n, "abi")) {
      *any = true;
      st = expect(p, "=");
      size_t ab = (skip_ws(p), p->pos);
      if (!st && !ident(p, &s, &n)) st = err(p, ab, "expected 'kernel' or 'c(...)' after abi=");
      if (!st && is_kw(s, n, "kernel")) {
        d->abi = LOOM_LIBCALL_ABI_KERNEL;
      } else if (!st && is_kw(s, n, "c")) {
        d->abi = LOOM_LIBCALL_ABI_C;
        st = expect(p, "(");
        while (!st && peek(p) != ')') {
          loom_libcall_cref c;
          st = c_arg(p, &c);
          if (!st && !LOOM_VEC_PUSH(p->m->alloc, &cargs, c)) st = LOOM_OOM();
          if (!st && !accept(p, ",")) break;
        }
        if (!st) st = expect(p, ")");
        if (!st && accept(p, "->")) {
          size_t rb = (skip_ws(p), p->pos);
          if (!ident(p, &s, &n) || (!is_kw(s, n, "void") && !is_kw(s, n, "i32")))
            st = err(p, rb, "a C function returns void or i32 (a status: nonzero is a failure)");
          else d->ret = is_kw(s, n, "i32") ? LOOM_LIBCALL_CT_I32 : LOOM_LIBCALL_CT_VOID;
        }
      } else if (!st) {
        st = err(p, ab, "unknown ABI '%.*s' (expected 'kernel' or 'c(...)')", (int)n, s);
      }
    } else {
      p->pos = b;
      break;
    }
    if (st) break;
  }
  if (!st && cargs.len) {
    loom_libcall_cref *c = LOOM_ARENA_ARRAY(&p->m->arena, loom_libcall_cref, cargs.len);
    if (!c) st = LOOM_OOM();
    else memcpy(c, cargs.data, cargs.len * sizeof *c);
    d->cargs = c;
    d->ncargs = cargs.len;
  }
  LOOM_VEC_FREE(p->m->alloc, &cargs);
  return st;
}

/* extern := 'extern' '@' name ':' sinfo ext_attr*                               (a Func)
 *         | 'extern' '@' name '(' (name ':' sinfo),* ')' '->' sinfo ext_attr*    (named parameters) */
static loom_status extern_decl(parser *p) {
  size_t b = (skip_ws(p), p->pos);
  const char *name;
  const loom_sinfo *si = NULL;
  LOOM_PROPAGATE(global_name(p, &name));
  p->syms.len = 0;
  loom_status st = LOOM_OK;
  LOOM_VEC(const char *) names = {0};
  LOOM_VEC(const loom_sinfo *) params = {0};
  bool named = accept(p, "(");
  if (named) {
    while (!st && peek(p) != ')') {
      size_t pb = (skip_ws(p), p->pos);
      const char *pn;
      const loom_sinfo *ps = NULL;
      st = expect_ident(p, "a parameter name", &pn);
      if (!st && reserved(pn)) st = err(p, pb, "'%s' is a reserved word and cannot name a parameter", pn);
      if (!st) st = expect(p, ":");
      if (!st) {
        p->sym_mode = SYM_DEFINE;
        st = sinfo(p, &ps);
        p->sym_mode = SYM_RESOLVE;
      }
      if (!st && (!LOOM_VEC_PUSH(p->m->alloc, &names, pn) || !LOOM_VEC_PUSH(p->m->alloc, &params, ps))) st = LOOM_OOM();
      if (!st && !accept(p, ",")) break;
    }
    if (!st) st = expect(p, ")");
    if (!st) st = expect(p, "->");
    const loom_sinfo *ret = NULL;
    if (!st) st = sinfo(p, &ret); /* the result's dims are expressions of the parameters' dims */
    if (!st && !(si = loom_sinfo_func(p->m, params.len, params.data, ret))) st = LOOM_OOM();
  } else {
    st = expect(p, ":");
    p->sym_mode = SYM_DEFINE;
    if (!st) st = sinfo(p, &si);
    p->sym_mode = SYM_RESOLVE;
    if (!st && si->kind != LOOM_SINFO_FUNC) st = err(p, b, "an extern needs a Func[...] struct info");
  }
  loom_libcall_decl d = {0};
  bool any = false;
  if (!st) st = extern_attrs(p, &d, &any);
  if (!st) {
    loom_status ds = loom_graph_module_declare_extern(p->m, name, si, named ? names.data : NULL, any ? &d : NULL);
    if (ds) {
      st = loom_status_code(ds) == LOOM_CODE_RESOURCE_EXHAUSTED ? ds : decl_err(p, b, ds);
    }
  }
  LOOM_VEC_FREE(p->m->alloc, &names);
  LOOM_VEC_FREE(p->m->alloc, &params);
  return st;
}

/* Skips one extern declaration (prescan), after the `extern` keyword. */
static bool skip_balanced(parser *p, char open, char close);
static bool skip_past(parser *p, char c);
static bool skip_extern(parser *p) {
  if (peek(p) == '@') p->pos++;
  const char *s;
  size_t n;
  if (!ident(p, &s, &n)) return false;
  if (peek(p) == '(' && !skip_balanced(p, '(', ')')) return false;
  if (!skip_past(p, '[') || !skip_balanced(p, '[', ']')) return false;
  for (;;) {
    size_t b = (skip_ws(p), p->pos);
    if (!ident(p, &s, &n)) return true;
    if (is_kw(s, n, "symbol") || is_kw(s, n, "library")) {
      if (!skip_past(p, '"')) return false;
      p->pos++;
      if (!skip_past(p, '"')) return false;
      p->pos++;
    } else if (is_kw(s, n, "abi")) {
      accept(p, "=");
      if (!ident(p, &s, &n)) return false;
      if (is_kw(s, n, "c")) {
        if (peek(p) != '(' || !skip_balanced(p, '(', ')')) return false;
        if (accept(p, "->") && !ident(p, &s, &n)) return false;
      }
    } else if (!is_kw(s, n, "pure")) {
      p->pos = b;
      return true;
    }
  }
}

/* Skips a bracketed region starting at `open` (comments and strings inside are skipped). */
static bool skip_balanced(parser *p, char open, char close) {
  int depth = 0;
  while (p->pos < p->len) {
    char c = p->s[p->pos];
    if (c == '"') {
      p->pos++;
      while (p->pos < p->len && p->s[p->pos] != '"' && p->s[p->pos] != '\n') p->pos++;
    } else if (c == '#' || (c == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/')) {
      while (p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
      continue;
    } else if (c == open) {
      depth++;
    } else if (c == close && --depth <= 0) {
      p->pos++;
      return depth == 0;
    }
    p->pos++;
  }
  return false;
}

/* Skips forward to the next `c` (outside comments); false at the end. */
static bool skip_past(parser *p, char c) {
  while (p->pos < p->len && p->s[p->pos] != c) {
    if (p->s[p->pos] == '#' || (p->s[p->pos] == '/' && p->pos + 1 < p->len && p->s[p->pos + 1] == '/'))
      while (p->pos < p->len && p->s[p->pos] != '\n') p->pos++;
    else p->pos++;
  }
  return p->pos < p->len;
}

/* Forward declarations: the signature of every function whose declared result only names its
 * parameters' symbols is registered (with no body) before the bodies are read, so a function
 * may call one defined later in the file. Errors here are silent: the main pass reports them. */
static void prescan(parser *p) {
  loom_diag_list quiet;
  loom_diag_list_init(&quiet, p->diags->alloc);
  loom_diag_list *saved = p->diags;
  p->diags = &quiet;
  for (;;) {
    skip_ws(p);
    const char *s;
    size_t n;
    if (p->pos >= p->len || !ident(p, &s, &n)) break;
    if (is_kw(s, n, "fn")) {
      loom_graph_func *f = LOOM_ARENA_NEW(&p->m->arena, loom_graph_func);
      loom_status st = f ? global_name(p, &f->name) : LOOM_OOM();
      if (!st && loom_graph_module_find_func(p->m, f->name)) st = LOOM_ERROR(ALREADY_EXISTS, "twice");
      p->vars.len = p->syms.len = 0;
      if (!st) st = param_list(p, f);
      if (!st) st = expect(p, "->");
      if (st) {
        loom_status_free(st);
        break;
      }
      size_t ret_at = p->pos;
      loom_status rs = sinfo(p, &f->ret);
      if (!rs && peek(p) == '{') {
        loom_status_free(loom_graph_module_add_func(p->m, f));
      } else {
        loom_status_free(rs);
        p->pos = ret_at;
        if (!skip_past(p, '{')) break;
      }
      if (!skip_balanced(p, '{', '}')) break;
    } else if (is_kw(s, n, "const")) {
      if (!skip_past(p, '=') || !skip_past(p, '[') || !skip_balanced(p, '[', ']')) break;
    } else if (is_kw(s, n, "extern")) {
      if (!skip_extern(p)) break;
    } else if (is_kw(s, n, "prim")) {
      const char *name;
      loom_status st = global_name(p, &name);
      if (st) {
        loom_status_free(st);
        break;
      }
      if (!LOOM_VEC_PUSH(p->m->alloc, &p->prims, name)) break;
      if (!skip_past(p, '{') || !skip_balanced(p, '{', '}')) break;
    } else {
      break;
    }
  }
  p->diags = saved;
  loom_diag_list_destroy(&quiet);
  p->pos = 0;
  p->vars.len = p->syms.len = 0;
  p->sym_mode = SYM_RESOLVE;
  p->depth = 0;
}

/* module := (func | const | extern | prim)* */
static loom_status module(parser *p) {
  prescan(p);
  for (;;) {
    skip_ws(p);
    if (p->pos >= p->len) return LOOM_OK;
    size_t b = p->pos;
    const char *s;
    size_t n;
    if (!ident(p, &s, &n)) return err(p, b, "expected 'fn', 'const', 'extern' or 'prim'");
    if (is_kw(s, n, "fn")) {
      LOOM_PROPAGATE(func(p));
    } else if (is_kw(s, n, "const")) {
      LOOM_PROPAGATE(constant(p));
    } else if (is_kw(s, n, "extern")) {
      LOOM_PROPAGATE(extern_decl(p));
    } else if (is_kw(s, n, "prim")) {
      p->pos = b;
      loom_tp_func *tp;
      LOOM_PROPAGATE(loom_graph_tp_parse(p->m, p->src, &p->pos, p->diags, &tp));
      LOOM_PROPAGATE(loom_graph_module_add_tp(p->m, tp));
    } else {
      return err(p, b, "expected 'fn', 'const', 'extern' or 'prim', found '%.*s'", (int)n, s);
    }
  }
}

loom_status loom_graph_parse(const loom_source *src, loom_diag_list *diags, loom_graph_module **out) {
  *out = NULL;
  loom_graph_module *m;
  LOOM_PROPAGATE(loom_graph_module_create(diags->alloc, &m));
  /* The module keeps its own copy of the source so locations stay valid. */
  loom_source *copy = LOOM_ARENA_NEW(&m->arena, loom_source);
  char *text = loom_arena_alloc(&m->arena, src->len + 1, 1);
  if (!copy || !text) {
    loom_graph_module_destroy(m);
    return LOOM_OOM();
  }
  if (src->len) memcpy(text, src->text, src->len);
  text[src->len] = '\0';
  copy->name = loom_arena_strdup(&m->arena, src->name ? src->name : "<input>");
  copy->text = text;
  copy->len = src->len;
  if (!copy->name) {
    loom_graph_module_destroy(m);
    return LOOM_OOM();
  }
  const char *slash = src->name ? strrchr(src->name, '/') : NULL;
  if (slash && !(m->dir = loom_arena_strndup(&m->arena, src->name, slash == src->name ? 1 : (size_t)(slash - src->name)))) {
    loom_graph_module_destroy(m);
    return LOOM_OOM();
  }
  parser p = {.m = m, .src = src, .ir_src = copy, .s = text, .len = src->len, .diags = diags};
  loom_status st = module(&p);
  LOOM_VEC_FREE(m->alloc, &p.vars);
  LOOM_VEC_FREE(m->alloc, &p.prims);
  LOOM_VEC_FREE(m->alloc, &p.syms);
  LOOM_VEC_FREE(m->alloc, &p.fresh);
  if (st) {
    loom_graph_module_destroy(m);
    return st;
  }
  *out = m;
  return LOOM_OK;
}

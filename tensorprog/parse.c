/* parse.c — tensor programs from text.
 *
 * Grammar (newlines are not significant; '#' starts a comment to end of line):
 *
 *   func    := 'prim' '@' NAME '(' [param (',' param)*] ')' block
 *   param   := NAME ':' (buftype | 'i64')              -- i64: a scalar parameter
 *   buftype := ('Buffer' | 'Local' | 'Shared') '[' '(' [expr (',' expr)* [',']] ')' ',' DTYPE ']'
 *   block   := '{' stmt* '}'
 *   stmt    := 'for' NAME 'in' '0' '..' expr [LOOPKIND] ['reduce'] block
 *            | 'let' NAME ':' DTYPE '=' expr
 *            | 'if' expr block ['else' (block | if-stmt)]
 *            | 'alloc' NAME ':' buftype
 *            | NAME '[' expr (',' expr)* ']' '=' expr
 *   expr    := or;  or := and ('||' and)*;  and := cmp ('&&' cmp)*
 *   cmp     := sum [('=='|'!='|'<'|'<='|'>'|'>=') sum]
 *   sum     := term (('+'|'-') term)*;  term := unary (('*'|'/'|'%'|'//') unary)*
 *   unary   := '-' unary | '!' unary | primary
 *   primary := NUMBER | 'true' | 'false' | 'inf' | 'nan' | '(' expr ')'
 *            | NAME                                   -- let, loop var, symbol
 *            | NAME '[' expr (',' expr)* ']'          -- load
 *            | NAME '(' expr (',' expr)* ')'          -- op from tp_ops.def, DTYPE cast, select
 *
 * Numbers take an optional dtype suffix (`1.5f16`, `3i32`). A literal without
 * suffix takes the dtype of the other operand of its operator; alone, floats are
 * f32 and integers are i64 index values. Integer arithmetic on index values
 * (loop variables, symbols, integer literals) folds into ONE symbolic expression,
 * so `A[i*4 + floordiv(j, 2)]` has a single symbolic index. In symbolic context
 * `%` and `//` are floormod and floordiv (Python semantics, as in symbolic/).
 *
 * Names in parameter shapes define symbolic variables at their first occurrence;
 * everywhere else a name must already be known. Loop variables and lets must not
 * shadow another name (so printed programs are unambiguous). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/vec.h"
#include "tensorprog/tp_build.h"
#include "tensorprog/tp_ir.h"

typedef enum tok_kind { T_EOF, T_NAME, T_INT, T_FLOAT, T_PUNCT } tok_kind;

typedef struct token {
  tok_kind kind;
  size_t start, len;  /* in src->text */
  char punct[3];      /* T_PUNCT: the operator text */
  int64_t ival;       /* T_INT */
  double fval;        /* T_FLOAT */
  bool has_suffix;    /* number with a dtype suffix */
  loom_dtype suffix;
} token;

typedef enum name_kind { N_SYM, N_LOOP, N_LET, N_BUF, N_SCALAR, N_EXPR } name_kind;

typedef struct name_entry {
  const char *name;
  size_t len;
  name_kind kind;
  const void *ptr; /* sym expr, let stmt, buffer or (N_EXPR) an expression copied at each use */
} name_entry;

typedef struct parser {
  loom_arena *arena;
  loom_sym_ctx *cx;
  const loom_source *src;
  size_t pos;             /* next unread byte */
  token tok;              /* current token */
  loom_diag_list *diags;
  bool failed;            /* an error was reported: unwind */
  LOOM_VEC(name_entry) names; /* scope stack (innermost last) */
  bool defining_shapes;   /* unknown names define symbolic vars (param shapes) */
  const char *func_name;
} parser;

/* A parsed operand: the expression and whether it is an untyped literal. */
typedef struct operand {
  loom_tp_expr *e;
  bool literal;
} operand;

static void error_at(parser *p, size_t offset, const char *fmt, ...) LOOM_PRINTF(3, 4);
static void error_at(parser *p, size_t offset, const char *fmt, ...) {
  if (p->failed) return;
  p->failed = true;
  va_list ap;
  va_start(ap, fmt);
  loom_diag_addv(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, offset}, fmt, ap);
  va_end(ap);
}

static void oom(parser *p) { error_at(p, p->tok.start, "out of memory"); }

/* ---- lexer ---------------------------------------------------------------- */

static bool ident_start(int c) { return isalpha(c) || c == '_'; }

/* Splits a dtype suffix off the end of a numeric token like "1.5f16" or "3i32". */
static bool split_suffix(const char *s, size_t len, size_t *num_len, loom_dtype *t) {
  for (size_t i = 0; i < len; i++) {
    if (s[i] == 'f' || s[i] == 'i' || s[i] == 'u' || s[i] == 'b') {
      if (s[i] == 'b' && !(i + 1 < len && s[i + 1] == 'f') && strncmp(s + i, "bool", 4) != 0) continue;
      if (loom_dtype_parse(s + i, len - i, t)) {
        *num_len = i;
        return true;
      }
    }
  }
  return false;
}

static void next(parser *p) {
  const char *t = p->src->text;
  size_t n = p->src->len;
  for (;;) {
    while (p->pos < n && isspace((unsigned char)t[p->pos])) p->pos++;
    if (p->pos < n && t[p->pos] == '#') {
      while (p->pos < n && t[p->pos] != '\n') p->pos++;
      continue;
    }
    break;
  }
  token *k = &p->tok;
  memset(k, 0, sizeof *k);
  k->start = p->pos;
  if (p->pos >= n) {
    k->kind = T_EOF;
    return;
  }
  unsigned char c = (unsigned char)t[p->pos];
  if (ident_start(c)) {
    size_t e = p->pos;
    while (e < n && (isalnum((unsigned char)t[e]) || t[e] == '_')) e++;
    k->kind = T_NAME;
    k->len = e - p->pos;
    p->pos = e;
    return;
  }
  if (isdigit(c)) {
    size_t e = p->pos;
    bool is_float = false;
    while (e < n && isdigit((unsigned char)t[e])) e++;
    if (e + 1 < n && t[e] == '.' && isdigit((unsigned char)t[e + 1])) {
      is_float = true;
      e++;
      while (e < n && isdigit((unsigned char)t[e])) e++;
    }
    if (e < n && (t[e] == 'e' || t[e] == 'E')) {
      size_t f = e + 1;
      if (f < n && (t[f] == '+' || t[f] == '-')) f++;
      if (f < n && isdigit((unsigned char)t[f])) {
        is_float = true;
        e = f;
        while (e < n && isdigit((unsigned char)t[e])) e++;
      }
    }
    size_t num_end = e;
    while (e < n && (isalnum((unsigned char)t[e]))) e++; /* suffix */
    k->len = e - p->pos;
    if (e > num_end) {
      size_t dummy;
      if (!loom_dtype_parse(t + num_end, e - num_end, &k->suffix) ||
          !split_suffix(t + p->pos, k->len, &dummy, &k->suffix)) {
        error_at(p, num_end, "unknown dtype suffix '%.*s' on a number", (int)(e - num_end), t + num_end);
        k->kind = T_EOF;
        return;
      }
      k->has_suffix = true;
    }
    char buf[128];
    size_t nl = num_end - p->pos < sizeof buf - 1 ? num_end - p->pos : sizeof buf - 1;
    memcpy(buf, t + p->pos, nl);
    buf[nl] = '\0';
    errno = 0;
    if (is_float || (k->has_suffix && loom_dtype_is_float(k->suffix))) {
      k->kind = T_FLOAT;
      k->fval = strtod(buf, NULL);
    } else {
      k->kind = T_INT;
      unsigned long long u = strtoull(buf, NULL, 10);
      if (errno == ERANGE || (u > (unsigned long long)INT64_MAX && !(k->has_suffix && k->suffix == LOOM_DTYPE_U64))) {
        error_at(p, p->pos, "integer literal '%s' does not fit in 64 bits", buf);
        k->kind = T_EOF;
        return;
      }
      k->ival = (int64_t)u;
    }
    p->pos = e;
    return;
  }
  static const char *const two[] = {"==", "!=", "<=", ">=", "&&", "||", "..", "//"};
  for (size_t i = 0; i < sizeof two / sizeof two[0]; i++) {
    if (p->pos + 1 < n && t[p->pos] == two[i][0] && t[p->pos + 1] == two[i][1]) {
      k->kind = T_PUNCT;
      memcpy(k->punct, two[i], 2);
      k->len = 2;
      p->pos += 2;
      return;
    }
  }
  if (strchr("()[]{},:=<>+-*/%!@", c)) {
    k->kind = T_PUNCT;
    k->punct[0] = (char)c;
    k->len = 1;
    p->pos++;
    return;
  }
  error_at(p, p->pos, "unexpected character '%c'", c);
  k->kind = T_EOF;
}

static bool is_punct(const parser *p, const char *s) {
  return p->tok.kind == T_PUNCT && strcmp(p->tok.punct, s) == 0;
}

static bool is_name(const parser *p, const char *s) {
  return p->tok.kind == T_NAME && p->tok.len == strlen(s) &&
         memcmp(p->src->text + p->tok.start, s, p->tok.len) == 0;
}

static const char *tok_text(const parser *p) { return p->src->text + p->tok.start; }

static void describe_tok(const parser *p, char *buf, size_t cap) {
  if (p->tok.kind == T_EOF)
    snprintf(buf, cap, "end of input");
  else
    snprintf(buf, cap, "'%.*s'", (int)(p->tok.len > 40 ? 40 : p->tok.len), tok_text(p));
}

static bool expect_punct(parser *p, const char *s) {
  if (p->failed) return false;
  if (!is_punct(p, s)) {
    char got[64];
    describe_tok(p, got, sizeof got);
    error_at(p, p->tok.start, "expected '%s', found %s", s, got);
    return false;
  }
  next(p);
  return true;
}

static bool expect_name(parser *p, const char *what, const char **out, size_t *out_len) {
  if (p->failed) return false;
  if (p->tok.kind != T_NAME) {
    char got[64];
    describe_tok(p, got, sizeof got);
    error_at(p, p->tok.start, "expected %s, found %s", what, got);
    return false;
  }
  *out = tok_text(p);
  *out_len = p->tok.len;
  next(p);
  return true;
}

static bool parse_dtype(parser *p, loom_dtype *out) {
  if (p->failed) return false;
  if (p->tok.kind != T_NAME || !loom_dtype_parse(tok_text(p), p->tok.len, out)) {
    char got[64];
    describe_tok(p, got, sizeof got);
    error_at(p, p->tok.start, "expected a dtype (f32, i64, ...), found %s", got);
    return false;
  }
  next(p);
  return true;
}

/* ---- names ---------------------------------------------------------------- */

static const name_entry *lookup(const parser *p, const char *name, size_t len) {
  for (size_t i = p->names.len; i-- > 0;) {
    const name_entry *e = &p->names.data[i];
    if (e->len == len && memcmp(e->name, name, len) == 0) return e;
  }
  return NULL;
}

static bool declare(parser *p, size_t at, const char *name, size_t len, name_kind kind, const void *ptr) {
  if (lookup(p, name, len)) {
    error_at(p, at, "'%.*s' is already defined in program @%s (names may not shadow)", (int)len, name,
             p->func_name);
    return false;
  }
  name_entry e = {name, len, kind, ptr};
  if (!LOOM_VEC_PUSH(NULL, &p->names, e)) {
    oom(p);
    return false;
  }
  return true;
}

/* In parameter shapes, an unknown name defines a symbolic variable (its first occurrence). */
static const name_entry *define_shape_sym(parser *p, const char *name, size_t len, size_t at) {
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)len, name);
  const loom_sym_expr *v = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_SHAPE);
  const char *nm = loom_arena_strndup(p->arena, name, len);
  if (!v || !nm) {
    oom(p);
    return NULL;
  }
  if (!declare(p, at, nm, len, N_SYM, v)) return NULL;
  return &LOOM_VEC_LAST(&p->names);
}

/* ---- expressions ---------------------------------------------------------- */

static operand parse_expr(parser *p);

static bool is_index(const loom_tp_expr *e) { return e && e->kind == LOOM_TP_EXPR_SYM; }

/* Gives an untyped literal the dtype `t`. */
static loom_tp_expr *retype_literal(parser *p, loom_tp_expr *lit, loom_dtype t) {
  if (lit->dtype == t) return lit;
  if (lit->kind == LOOM_TP_EXPR_SYM) {
    int64_t v = 0;
    loom_sym_is_const(lit->u.sym, &v);
    return loom_dtype_is_float(t) ? loom_tp_const_f(p->arena, t, (double)v) : loom_tp_const_i(p->arena, t, v);
  }
  if (loom_dtype_is_float(t)) return loom_tp_const_f(p->arena, t, lit->u.c.f);
  return loom_tp_const_i(p->arena, t, lit->u.c.i);
}

/* Unifies the dtypes of two operands where one is an untyped literal. */
static void unify(parser *p, operand *a, operand *b) {
  if (a->literal && !b->literal && b->e) a->e = retype_literal(p, a->e, b->e->dtype);
  else if (b->literal && !a->literal && a->e) b->e = retype_literal(p, b->e, a->e->dtype);
  else if (a->literal && b->literal && a->e && b->e && a->e->dtype != b->e->dtype) {
    /* int literal with float literal: both become the float's dtype */
    if (loom_dtype_is_float(b->e->dtype)) a->e = retype_literal(p, a->e, b->e->dtype);
    else b->e = retype_literal(p, b->e, a->e->dtype);
  }
}

/* Folds an integer operator on two index values into one symbolic expression. */
static const loom_sym_expr *fold_sym(parser *p, loom_tp_op op, const loom_sym_expr *a, const loom_sym_expr *b) {
  switch (op) {
    case LOOM_TP_OP_ADD: return loom_sym_add(p->cx, a, b);
    case LOOM_TP_OP_SUB: return loom_sym_sub(p->cx, a, b);
    case LOOM_TP_OP_MUL: return loom_sym_mul(p->cx, a, b);
    case LOOM_TP_OP_FLOORDIV: return loom_sym_floordiv(p->cx, a, b);
    case LOOM_TP_OP_FLOORMOD: return loom_sym_floormod(p->cx, a, b);
    case LOOM_TP_OP_MIN: return loom_sym_min(p->cx, a, b);
    case LOOM_TP_OP_MAX: return loom_sym_max(p->cx, a, b);
    default: return NULL;
  }
}

static bool foldable(loom_tp_op op) {
  switch (op) {
    case LOOM_TP_OP_ADD: case LOOM_TP_OP_SUB: case LOOM_TP_OP_MUL: case LOOM_TP_OP_FLOORDIV:
    case LOOM_TP_OP_FLOORMOD: case LOOM_TP_OP_MIN: case LOOM_TP_OP_MAX: return true;
    default: return false;
  }
}

static operand make_binary(parser *p, size_t at, loom_tp_op op, operand a, operand b) {
  operand r = {NULL, false};
  if (p->failed || !a.e || !b.e) return r;
  if (is_index(a.e) && is_index(b.e) && foldable(op)) {
    const loom_sym_expr *s = fold_sym(p, op, a.e->u.sym, b.e->u.sym);
    if (!s) {
      loom_status st = loom_sym_ctx_take_error(p->cx);
      error_at(p, at, "%s", st ? loom_status_message(st) : "invalid symbolic expression");
      loom_status_free(st);
      return r;
    }
    r.e = loom_tp_sym(p->arena, s);
    r.literal = a.literal && b.literal;
    if (!r.e) oom(p);
    return r;
  }
  unify(p, &a, &b);
  if (!a.e || !b.e) {
    oom(p);
    return r;
  }
  r.e = loom_tp_op2(p->arena, op, a.e, b.e);
  if (!r.e) oom(p);
  return r;
}

static operand parse_args(parser *p, operand *args, int max, int *count) {
  operand none = {NULL, false};
  *count = 0;
  if (!expect_punct(p, "(")) return none;
  if (!is_punct(p, ")")) {
    for (;;) {
      if (*count == max) {
        error_at(p, p->tok.start, "too many arguments (at most %d)", max);
        return none;
      }
      args[(*count)++] = parse_expr(p);
      if (p->failed) return none;
      if (!is_punct(p, ",")) break;
      next(p);
    }
  }
  expect_punct(p, ")");
  return none;
}

static loom_tp_expr **parse_indices(parser *p, const loom_tp_buffer *buf, size_t at) {
  if (!expect_punct(p, "[")) return NULL;
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(p->arena, loom_tp_expr *, buf->ndim ? (size_t)buf->ndim : 1);
  if (!idx) {
    oom(p);
    return NULL;
  }
  int n = 0;
  if (!is_punct(p, "]")) {
    for (;;) {
      operand o = parse_expr(p);
      if (p->failed) return NULL;
      if (n < buf->ndim) idx[n] = o.e;
      n++;
      if (!is_punct(p, ",")) break;
      next(p);
    }
  }
  if (!expect_punct(p, "]")) return NULL;
  if (n != buf->ndim) {
    error_at(p, at, "buffer '%s' has %d dimension%s, indexed with %d", buf->name, buf->ndim,
             buf->ndim == 1 ? "" : "s", n);
    return NULL;
  }
  return idx;
}

static operand parse_call(parser *p, const char *name, size_t len, size_t at) {
  operand r = {NULL, false};
  operand args[3];
  int n;
  loom_dtype cast_to;
  if (loom_dtype_parse(name, len, &cast_to)) {
    parse_args(p, args, 1, &n);
    if (p->failed) return r;
    if (n != 1) {
      error_at(p, at, "cast to %s takes 1 argument, given %d", loom_dtype_name(cast_to), n);
      return r;
    }
    r.e = loom_tp_cast(p->arena, cast_to, args[0].e);
    if (!r.e) oom(p);
    return r;
  }
  if (len == 6 && memcmp(name, "select", 6) == 0) {
    parse_args(p, args, 3, &n);
    if (p->failed) return r;
    if (n != 3) {
      error_at(p, at, "select takes 3 arguments, given %d", n);
      return r;
    }
    unify(p, &args[1], &args[2]);
    r.e = loom_tp_select(p->arena, args[0].e, args[1].e, args[2].e);
    if (!r.e) oom(p);
    return r;
  }
  for (int op = 0; op < LOOM_TP_OP_COUNT; op++) {
    const char *sp = loom_tp_op_spelling((loom_tp_op)op);
    if (!isalpha((unsigned char)sp[0]) || strlen(sp) != len || memcmp(sp, name, len) != 0) continue;
    int arity = loom_tp_op_arity((loom_tp_op)op);
    parse_args(p, args, 3, &n);
    if (p->failed) return r;
    if (n != arity) {
      error_at(p, at, "%s takes %d argument%s, given %d", sp, arity, arity == 1 ? "" : "s", n);
      return r;
    }
    if (loom_tp_op_class_of((loom_tp_op)op) == LOOM_TP_CLASS_BITS) {
      /* bitcast(x, 0i32): the literal names the result dtype (an untyped integer is i64) */
      if (args[1].e->kind == LOOM_TP_EXPR_SYM && args[1].literal) args[1].e = retype_literal(p, args[1].e, LOOM_DTYPE_I64);
      if (!args[1].e || args[1].e->kind != LOOM_TP_EXPR_CONST) {
        error_at(p, at, "%s takes a literal naming the result dtype as its second argument (e.g. 0i32)", sp);
        return r;
      }
      r.e = loom_tp_op2(p->arena, (loom_tp_op)op, args[0].e, args[1].e);
      if (!r.e) oom(p);
      return r;
    }
    if (arity == 2) return make_binary(p, at, (loom_tp_op)op, args[0], args[1]);
    if (arity == 3) {
      unify(p, &args[0], &args[1]);
      unify(p, &args[1], &args[2]);
      unify(p, &args[0], &args[2]);
      r.e = loom_tp_op3(p->arena, (loom_tp_op)op, args[0].e, args[1].e, args[2].e);
    } else {
      if (args[0].literal && args[0].e->kind == LOOM_TP_EXPR_SYM && loom_tp_op_class_of((loom_tp_op)op) == LOOM_TP_CLASS_MATH)
        args[0].e = retype_literal(p, args[0].e, LOOM_DTYPE_F32);
      r.e = loom_tp_op1(p->arena, (loom_tp_op)op, args[0].e);
      r.literal = args[0].literal;
    }
    if (!r.e) oom(p);
    return r;
  }
  error_at(p, at, "unknown function '%.*s'", (int)len, name);
  return r;
}

/* A deep copy of `e`: each use of a bound expression gets its own nodes, as if its text had
 * been written there. */
loom_tp_expr *loom_tp_expr_copy(loom_arena *a, const loom_tp_expr *e) {
  if (!e) return NULL;
  loom_tp_expr *c = LOOM_ARENA_NEW(a, loom_tp_expr);
  if (!c) return NULL;
  *c = *e;
  switch (e->kind) {
    case LOOM_TP_EXPR_CONST: case LOOM_TP_EXPR_SYM: case LOOM_TP_EXPR_LETREF:
      return c;
    case LOOM_TP_EXPR_LOAD: {
      int nd = e->u.load.buf->ndim;
      c->u.load.idx = LOOM_ARENA_ARRAY(a, loom_tp_expr *, nd ? (size_t)nd : 1);
      if (!c->u.load.idx) return NULL;
      for (int k = 0; k < nd; k++)
        if (!(c->u.load.idx[k] = loom_tp_expr_copy(a, e->u.load.idx[k]))) return NULL;
      return c;
    }
    case LOOM_TP_EXPR_OP:
      for (int k = 0; k < loom_tp_op_arity(e->u.op.op); k++)
        if (!(c->u.op.args[k] = loom_tp_expr_copy(a, e->u.op.args[k]))) return NULL;
      return c;
    case LOOM_TP_EXPR_CAST:
      return (c->u.cast_arg = loom_tp_expr_copy(a, e->u.cast_arg)) ? c : NULL;
    case LOOM_TP_EXPR_SELECT:
      c->u.select.cond = loom_tp_expr_copy(a, e->u.select.cond);
      c->u.select.then_e = loom_tp_expr_copy(a, e->u.select.then_e);
      c->u.select.else_e = loom_tp_expr_copy(a, e->u.select.else_e);
      return c->u.select.cond && c->u.select.then_e && c->u.select.else_e ? c : NULL;
  }
  return NULL;
}

static operand parse_primary(parser *p) {
  operand r = {NULL, false};
  if (p->failed) return r;
  size_t at = p->tok.start;
  if (p->tok.kind == T_INT) {
    if (p->tok.has_suffix)
      r.e = loom_tp_const_i(p->arena, p->tok.suffix, p->tok.ival);
    else {
      r.e = loom_tp_sym(p->arena, loom_sym_const(p->cx, p->tok.ival));
      r.literal = true;
    }
    next(p);
    if (!r.e) oom(p);
    return r;
  }
  if (p->tok.kind == T_FLOAT) {
    r.e = loom_tp_const_f(p->arena, p->tok.has_suffix ? p->tok.suffix : LOOM_DTYPE_F32, p->tok.fval);
    r.literal = !p->tok.has_suffix;
    next(p);
    if (!r.e) oom(p);
    return r;
  }
  if (is_punct(p, "(")) {
    next(p);
    r = parse_expr(p);
    expect_punct(p, ")");
    return r;
  }
  if (p->tok.kind != T_NAME) {
    char got[64];
    describe_tok(p, got, sizeof got);
    error_at(p, at, "expected an expression, found %s", got);
    return r;
  }
  const char *name = tok_text(p);
  size_t len = p->tok.len;
  next(p);
  if ((len == 4 && !memcmp(name, "true", 4)) || (len == 5 && !memcmp(name, "false", 5))) {
    r.e = loom_tp_const_i(p->arena, LOOM_DTYPE_BOOL, len == 4);
    if (!r.e) oom(p);
    return r;
  }
  if ((len >= 3 && (!memcmp(name, "inf", 3) || !memcmp(name, "nan", 3)))) {
    loom_dtype t = LOOM_DTYPE_F32;
    bool ok = len == 3 || loom_dtype_parse(name + 3, len - 3, &t);
    if (ok && loom_dtype_is_float(t)) {
      r.e = loom_tp_const_f(p->arena, t, name[0] == 'i' ? INFINITY : NAN);
      r.literal = len == 3;
      if (!r.e) oom(p);
      return r;
    }
  }
  if (is_punct(p, "(")) return parse_call(p, name, len, at);
  const name_entry *ne = lookup(p, name, len);
  if (is_punct(p, "[")) {
    if (!ne || ne->kind != N_BUF) {
      error_at(p, at, "'%.*s' is not a buffer", (int)len, name);
      return r;
    }
    const loom_tp_buffer *buf = ne->ptr;
    loom_tp_expr **idx = parse_indices(p, buf, at);
    if (!idx) return r;
    r.e = loom_tp_load(p->arena, buf, idx);
    if (!r.e) oom(p);
    return r;
  }
  if (!ne && p->defining_shapes) ne = define_shape_sym(p, name, len, at);
  if (!ne) {
    error_at(p, at, "unknown name '%.*s' in program @%s", (int)len, name, p->func_name);
    return r;
  }
  switch (ne->kind) {
    case N_SYM: case N_LOOP: case N_SCALAR:
      r.e = loom_tp_sym(p->arena, ne->ptr);
      break;
    case N_LET:
      r.e = loom_tp_letref(p->arena, ne->ptr);
      break;
    case N_EXPR:
      r.e = loom_tp_expr_copy(p->arena, ne->ptr);
      break;
    case N_BUF:
      error_at(p, at, "buffer '%.*s' used without indices", (int)len, name);
      return r;
  }
  if (!r.e) oom(p);
  return r;
}

static operand parse_unary(parser *p) {
  if (is_punct(p, "-") || is_punct(p, "!")) {
    bool neg = is_punct(p, "-");
    size_t at = p->tok.start;
    next(p);
    operand x = parse_unary(p);
    if (p->failed || !x.e) return x;
    if (neg && is_index(x.e)) {
      x.e = loom_tp_sym(p->arena, loom_sym_neg(p->cx, x.e->u.sym));
    } else if (neg && x.e->kind == LOOM_TP_EXPR_CONST) {
      x.e = loom_dtype_is_float(x.e->dtype) ? loom_tp_const_f(p->arena, x.e->dtype, -x.e->u.c.f)
                                            : loom_tp_const_i(p->arena, x.e->dtype, -x.e->u.c.i);
    } else {
      x.e = loom_tp_op1(p->arena, neg ? LOOM_TP_OP_NEG : LOOM_TP_OP_NOT, x.e);
      x.literal = false;
    }
    if (!x.e) error_at(p, at, "out of memory");
    return x;
  }
  return parse_primary(p);
}

static operand parse_term(parser *p) {
  operand a = parse_unary(p);
  for (;;) {
    loom_tp_op op;
    if (is_punct(p, "*")) op = LOOM_TP_OP_MUL;
    else if (is_punct(p, "/")) op = LOOM_TP_OP_DIV;
    else if (is_punct(p, "//")) op = LOOM_TP_OP_FLOORDIV;
    else if (is_punct(p, "%")) op = LOOM_TP_OP_MOD;
    else return a;
    size_t at = p->tok.start;
    next(p);
    operand b = parse_unary(p);
    /* On index values, % is floormod (symbolic semantics). */
    if (op == LOOM_TP_OP_MOD && a.e && b.e && is_index(a.e) && is_index(b.e)) op = LOOM_TP_OP_FLOORMOD;
    a = make_binary(p, at, op, a, b);
  }
}

static operand parse_sum(parser *p) {
  operand a = parse_term(p);
  while (is_punct(p, "+") || is_punct(p, "-")) {
    loom_tp_op op = is_punct(p, "+") ? LOOM_TP_OP_ADD : LOOM_TP_OP_SUB;
    size_t at = p->tok.start;
    next(p);
    a = make_binary(p, at, op, a, parse_term(p));
  }
  return a;
}

static operand parse_cmp(parser *p) {
  operand a = parse_sum(p);
  static const struct { const char *s; loom_tp_op op; } cmps[] = {
      {"==", LOOM_TP_OP_EQ}, {"!=", LOOM_TP_OP_NE}, {"<=", LOOM_TP_OP_LE},
      {">=", LOOM_TP_OP_GE}, {"<", LOOM_TP_OP_LT},  {">", LOOM_TP_OP_GT}};
  for (size_t i = 0; i < sizeof cmps / sizeof cmps[0]; i++) {
    if (is_punct(p, cmps[i].s)) {
      size_t at = p->tok.start;
      next(p);
      operand b = parse_sum(p);
      operand r = make_binary(p, at, cmps[i].op, a, b);
      r.literal = false;
      return r;
    }
  }
  return a;
}

static operand parse_and(parser *p) {
  operand a = parse_cmp(p);
  while (is_punct(p, "&&")) {
    size_t at = p->tok.start;
    next(p);
    a = make_binary(p, at, LOOM_TP_OP_AND, a, parse_cmp(p));
  }
  return a;
}

static operand parse_expr(parser *p) {
  operand a = parse_and(p);
  while (is_punct(p, "||")) {
    size_t at = p->tok.start;
    next(p);
    a = make_binary(p, at, LOOM_TP_OP_OR, a, parse_and(p));
  }
  return a;
}

/* An expression that must be a symbolic index value (extents, shapes). */
static const loom_sym_expr *parse_sym(parser *p, const char *what) {
  size_t at = p->tok.start;
  operand o = parse_expr(p);
  if (p->failed) return NULL;
  if (!is_index(o.e)) {
    error_at(p, at, "%s must be a symbolic integer expression", what);
    return NULL;
  }
  return o.e->u.sym;
}

/* ---- types, statements, programs ------------------------------------------ */

static loom_tp_buffer *parse_buftype(parser *p, const char *name, size_t name_len, bool param) {
  loom_tp_scope scope;
  size_t at = p->tok.start;
  if (is_name(p, "Buffer")) scope = LOOM_TP_SCOPE_GLOBAL;
  else if (is_name(p, "Local")) scope = LOOM_TP_SCOPE_LOCAL;
  else if (is_name(p, "Shared")) scope = LOOM_TP_SCOPE_SHARED;
  else {
    char got[64];
    describe_tok(p, got, sizeof got);
    error_at(p, at, "expected Buffer[...], Local[...] or Shared[...], found %s", got);
    return NULL;
  }
  if (param != (scope == LOOM_TP_SCOPE_GLOBAL)) {
    error_at(p, at, param ? "parameters are Buffer[...]" : "allocations are Local[...] or Shared[...]");
    return NULL;
  }
  next(p);
  if (!expect_punct(p, "[") || !expect_punct(p, "(")) return NULL;
  const loom_sym_expr *dims[16];
  int ndim = 0;
  p->defining_shapes = param;
  while (!p->failed && !is_punct(p, ")")) {
    if (ndim == 16) {
      error_at(p, p->tok.start, "more than 16 dimensions");
      break;
    }
    dims[ndim++] = parse_sym(p, "a buffer dimension");
    if (!is_punct(p, ",")) break;
    next(p);
  }
  p->defining_shapes = false;
  loom_dtype t;
  if (!expect_punct(p, ")") || !expect_punct(p, ",") || !parse_dtype(p, &t) || !expect_punct(p, "]"))
    return NULL;
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)name_len, name);
  loom_tp_buffer *b = loom_tp_buffer_new(p->arena, nbuf, t, ndim, dims, scope);
  if (!b) oom(p);
  return b;
}

static loom_tp_stmt *parse_stmt(parser *p);

/* Parses '{' stmt* '}'; names declared inside go out of scope at the '}'. */
static loom_tp_stmt *parse_block(parser *p) {
  if (!expect_punct(p, "{")) return NULL;
  size_t mark = p->names.len;
  LOOM_VEC(loom_tp_stmt *) items = {0};
  while (!p->failed && !is_punct(p, "}")) {
    if (p->tok.kind == T_EOF) {
      error_at(p, p->tok.start, "expected '}' before end of input");
      break;
    }
    loom_tp_stmt *s = parse_stmt(p);
    if (s && !LOOM_VEC_PUSH(NULL, &items, s)) oom(p);
  }
  loom_tp_stmt *seq = NULL;
  if (!p->failed && expect_punct(p, "}")) {
    seq = loom_tp_seq(p->arena, items.data, items.len);
    if (!seq) oom(p);
  }
  LOOM_VEC_FREE(NULL, &items);
  p->names.len = mark;
  return seq;
}

static loom_tp_stmt *parse_for(parser *p) {
  next(p); /* for */
  const char *name;
  size_t len, at = p->tok.start;
  if (!expect_name(p, "a loop variable", &name, &len)) return NULL;
  if (!is_name(p, "in")) {
    error_at(p, p->tok.start, "expected 'in' after the loop variable");
    return NULL;
  }
  next(p);
  if (p->tok.kind != T_INT || p->tok.ival != 0 || p->tok.has_suffix) {
    error_at(p, p->tok.start, "loops start at 0: expected '0..EXTENT'");
    return NULL;
  }
  next(p);
  if (!expect_punct(p, "..")) return NULL;
  const loom_sym_expr *extent = parse_sym(p, "a loop extent");
  if (!extent) return NULL;
  loom_tp_loop_kind kind = LOOM_TP_LOOP_SERIAL;
  for (int k = 0; k < LOOM_TP_LOOP_KIND_COUNT; k++) {
    if (is_name(p, loom_tp_loop_kind_name((loom_tp_loop_kind)k))) {
      kind = (loom_tp_loop_kind)k;
      next(p);
      break;
    }
  }
  bool reduce = false;
  if (is_name(p, "reduce")) {
    reduce = true;
    next(p);
  }
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)len, name);
  const loom_sym_expr *var = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_SHAPE);
  if (!var) {
    oom(p);
    return NULL;
  }
  size_t mark = p->names.len;
  if (!declare(p, at, name, len, N_LOOP, var)) return NULL;
  loom_tp_stmt *body = parse_block(p);
  p->names.len = mark;
  if (!body) return NULL;
  loom_tp_stmt *s = loom_tp_for(p->arena, var, extent, kind, reduce, body);
  if (!s) oom(p);
  return s;
}

static loom_tp_stmt *parse_if(parser *p) {
  next(p); /* if */
  size_t at = p->tok.start;
  operand c = parse_expr(p);
  if (p->failed) return NULL;
  if (c.e->dtype != LOOM_DTYPE_BOOL) {
    error_at(p, at, "the condition of 'if' must be bool, not %s", loom_dtype_name(c.e->dtype));
    return NULL;
  }
  loom_tp_stmt *then_s = parse_block(p), *else_s = NULL;
  if (!then_s) return NULL;
  if (is_name(p, "else")) {
    next(p);
    if (is_name(p, "if")) {
      loom_tp_stmt *nested = parse_if(p);
      if (!nested) return NULL;
      else_s = loom_tp_seq(p->arena, &nested, 1);
    } else {
      else_s = parse_block(p);
    }
    if (!else_s) return NULL;
  }
  loom_tp_stmt *s = loom_tp_if(p->arena, c.e, then_s, else_s);
  if (!s) oom(p);
  return s;
}

static loom_tp_stmt *parse_stmt(parser *p) {
  if (p->failed) return NULL;
  if (is_name(p, "for")) return parse_for(p);
  if (is_name(p, "if")) return parse_if(p);
  size_t at = p->tok.start;
  if (is_name(p, "let")) {
    next(p);
    const char *name;
    size_t len;
    loom_dtype t;
    size_t name_at = p->tok.start;
    if (!expect_name(p, "a name", &name, &len) || !expect_punct(p, ":") || !parse_dtype(p, &t) ||
        !expect_punct(p, "="))
      return NULL;
    size_t vat = p->tok.start;
    operand v = parse_expr(p);
    if (p->failed) return NULL;
    if (v.literal) v.e = retype_literal(p, v.e, t);
    if (v.e->dtype != t) {
      error_at(p, vat, "let %.*s: %s is given a %s value", (int)len, name, loom_dtype_name(t),
               loom_dtype_name(v.e->dtype));
      return NULL;
    }
    char *nm = loom_arena_strndup(p->arena, name, len);
    loom_tp_stmt *s = nm ? loom_tp_let(p->arena, nm, v.e) : NULL;
    if (!s) {
      oom(p);
      return NULL;
    }
    declare(p, name_at, nm, len, N_LET, s);
    return s;
  }
  if (is_name(p, "alloc")) {
    next(p);
    const char *name;
    size_t len;
    size_t name_at = p->tok.start;
    if (!expect_name(p, "a buffer name", &name, &len) || !expect_punct(p, ":")) return NULL;
    loom_tp_buffer *b = parse_buftype(p, name, len, false);
    if (!b) return NULL;
    declare(p, name_at, b->name, len, N_BUF, b);
    loom_tp_stmt *s = loom_tp_alloc_stmt(p->arena, b);
    if (!s) oom(p);
    return s;
  }
  if (p->tok.kind == T_NAME) {
    const char *name = tok_text(p);
    size_t len = p->tok.len;
    const name_entry *ne = lookup(p, name, len);
    next(p);
    if (!ne || ne->kind != N_BUF) {
      error_at(p, at, "expected a statement: '%.*s' is not a buffer", (int)len, name);
      return NULL;
    }
    const loom_tp_buffer *buf = ne->ptr;
    loom_tp_expr **idx = parse_indices(p, buf, at);
    if (!idx || !expect_punct(p, "=")) return NULL;
    operand v = parse_expr(p);
    if (p->failed) return NULL;
    if (v.literal) v.e = retype_literal(p, v.e, buf->dtype);
    loom_tp_stmt *s = v.e ? loom_tp_store(p->arena, buf, idx, v.e) : NULL;
    if (!s) oom(p);
    return s;
  }
  char got[64];
  describe_tok(p, got, sizeof got);
  error_at(p, at, "expected a statement (for, let, if, alloc or a store), found %s", got);
  return NULL;
}

static loom_tp_func *parse_func(parser *p) {
  if (!is_name(p, "prim")) {
    error_at(p, p->tok.start, "expected 'prim'");
    return NULL;
  }
  next(p);
  const char *name;
  size_t len;
  if (!expect_punct(p, "@") || !expect_name(p, "a program name", &name, &len)) return NULL;
  loom_tp_func *f = LOOM_ARENA_NEW(p->arena, loom_tp_func);
  if (!f || !(f->name = loom_arena_strndup(p->arena, name, len))) {
    oom(p);
    return NULL;
  }
  p->func_name = f->name;
  if (!expect_punct(p, "(")) return NULL;
  LOOM_VEC(loom_tp_param) params = {0};
  while (!p->failed && !is_punct(p, ")")) {
    const char *pname;
    size_t plen, at = p->tok.start;
    if (!expect_name(p, "a parameter name", &pname, &plen) || !expect_punct(p, ":")) break;
    loom_tp_param prm = {0};
    if (is_name(p, "i64")) {
      next(p);
      char nbuf[128];
      snprintf(nbuf, sizeof nbuf, "%.*s", (int)plen, pname);
      prm.scalar.name = loom_arena_strdup(p->arena, nbuf);
      prm.scalar.var = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_INT);
      if (!prm.scalar.name || !prm.scalar.var) {
        oom(p);
        break;
      }
      declare(p, at, prm.scalar.name, plen, N_SCALAR, prm.scalar.var);
    } else {
      prm.is_buffer = true;
      prm.buf = parse_buftype(p, pname, plen, true);
      if (!prm.buf) break;
      prm.buf->param_index = (int)params.len;
      declare(p, at, prm.buf->name, plen, N_BUF, prm.buf);
    }
    if (!LOOM_VEC_PUSH(NULL, &params, prm)) oom(p);
    if (!is_punct(p, ",")) break;
    next(p);
  }
  if (!p->failed && expect_punct(p, ")")) {
    f->nparams = params.len;
    f->params = LOOM_ARENA_ARRAY(p->arena, loom_tp_param, params.len ? params.len : 1);
    if (!f->params) oom(p);
    else if (params.len) memcpy(f->params, params.data, params.len * sizeof *params.data);
  }
  LOOM_VEC_FREE(NULL, &params);
  /* The signature's symbols: every N_SYM / N_SCALAR name declared so far. */
  if (!p->failed) {
    size_t n = 0;
    for (size_t i = 0; i < p->names.len; i++)
      n += p->names.data[i].kind == N_SYM || p->names.data[i].kind == N_SCALAR;
    f->syms = LOOM_ARENA_ARRAY(p->arena, const loom_sym_expr *, n ? n : 1);
    if (!f->syms) oom(p);
    for (size_t i = 0; f->syms && i < p->names.len; i++)
      if (p->names.data[i].kind == N_SYM || p->names.data[i].kind == N_SCALAR)
        f->syms[f->nsyms++] = p->names.data[i].ptr;
  }
  if (p->failed) return NULL;
  f->body = parse_block(p);
  return f->body ? f : NULL;
}

static loom_status run_parser(parser *p, loom_tp_func **out) {
  next(p);
  loom_tp_func *f = p->failed ? NULL : parse_func(p);
  LOOM_VEC_FREE(NULL, &p->names);
  if (p->failed || !f) {
    loom_status s = loom_diag_list_status(p->diags, LOOM_CODE_PARSE_ERROR);
    return s ? s : LOOM_ERROR(PARSE_ERROR, "could not parse a tensor program");
  }
  *out = f;
  return LOOM_OK;
}

loom_status loom_tp_parse_func(loom_arena *arena, loom_sym_ctx *cx, const loom_source *src, size_t *pos,
                               loom_diag_list *diags, loom_tp_func **out) {
  parser p = {.arena = arena, .cx = cx, .src = src, .pos = *pos, .diags = diags, .func_name = "?"};
  loom_status s = run_parser(&p, out);
  /* The parser read one token past the closing '}'; hand back the position of that token. */
  if (!s) *pos = p.tok.start;
  return s;
}

/* An expression template (tp_build.h): the bindings are the scope, later ones innermost. */
loom_status loom_tp_parse_expr(loom_arena *a, loom_sym_ctx *cx, const char *text, const loom_tp_binding *names,
                               size_t n, const loom_dtype *store_type, loom_tp_expr **out) {
  loom_source src = {"<template>", text, strlen(text)};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  parser p = {.arena = a, .cx = cx, .src = &src, .diags = &diags, .func_name = "<template>"};
  static const name_kind kinds[] = {[LOOM_TP_BIND_SYM] = N_SYM, [LOOM_TP_BIND_LET] = N_LET,
                                    [LOOM_TP_BIND_BUF] = N_BUF, [LOOM_TP_BIND_EXPR] = N_EXPR};
  for (size_t i = 0; i < n && !p.failed; i++) {
    name_entry e = {names[i].name, strlen(names[i].name), kinds[names[i].kind], names[i].ptr};
    if (!LOOM_VEC_PUSH(NULL, &p.names, e)) oom(&p);
  }
  operand o = {NULL, false};
  if (!p.failed) {
    next(&p);
    o = parse_expr(&p);
    if (!p.failed && p.tok.kind != T_EOF) {
      char got[64];
      describe_tok(&p, got, sizeof got);
      error_at(&p, p.tok.start, "expected the end of the expression, found %s", got);
    }
    if (!p.failed && o.e && o.literal && store_type) o.e = retype_literal(&p, o.e, *store_type);
    if (!p.failed && !o.e) oom(&p);
  }
  LOOM_VEC_FREE(NULL, &p.names);
  loom_status s = LOOM_OK;
  if (p.failed) {
    loom_status d = loom_diag_list_status(&diags, LOOM_CODE_PARSE_ERROR);
    s = LOOM_ERROR(INTERNAL, "expression template '%s' does not parse: %s", text, d ? loom_status_message(d) : "?");
    loom_status_free(d);
  } else {
    *out = o.e;
  }
  loom_diag_list_destroy(&diags);
  return s;
}

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
 *            | 'barrier'                              -- GPU block-wide sync
 *            | 'prefetch' NAME '[' expr (',' expr)* ']' -- a cache hint, no effect on results
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

#include "tensorprog/parse_internal.h"
#include "tensorprog/tp_build.h"

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
      tpp_error_at(p, at, "%s", st ? loom_status_message(st) : "invalid symbolic expression");
      loom_status_free(st);
      return r;
    }
    r.e = loom_tp_sym(p->arena, s);
    r.literal = a.literal && b.literal;
    if (!r.e) tpp_oom(p);
    return r;
  }
  unify(p, &a, &b);
  if (!a.e || !b.e) {
    tpp_oom(p);
    return r;
  }
  r.e = loom_tp_op2(p->arena, op, a.e, b.e);
  if (!r.e) tpp_oom(p);
  return r;
}

static operand parse_args(parser *p, operand *args, int max, int *count) {
  operand none = {NULL, false};
  *count = 0;
  if (!tpp_expect_punct(p, "(")) return none;
  if (!tpp_is_punct(p, ")")) {
    for (;;) {
      if (*count == max) {
        tpp_error_at(p, p->tok.start, "too many arguments (at most %d)", max);
        return none;
      }
      args[(*count)++] = parse_expr(p);
      if (p->failed) return none;
      if (!tpp_is_punct(p, ",")) break;
      tpp_next(p);
    }
  }
  tpp_expect_punct(p, ")");
  return none;
}

static loom_tp_expr **parse_indices(parser *p, const loom_tp_buffer *buf, size_t at) {
  if (!tpp_expect_punct(p, "[")) return NULL;
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(p->arena, loom_tp_expr *, buf->ndim ? (size_t)buf->ndim : 1);
  if (!idx) {
    tpp_oom(p);
    return NULL;
  }
  int n = 0;
  if (!tpp_is_punct(p, "]")) {
    for (;;) {
      operand o = parse_expr(p);
      if (p->failed) return NULL;
      if (n < buf->ndim) idx[n] = o.e;
      n++;
      if (!tpp_is_punct(p, ",")) break;
      tpp_next(p);
    }
  }
  if (!tpp_expect_punct(p, "]")) return NULL;
  if (n != buf->ndim) {
    tpp_error_at(p, at, "buffer '%s' has %d dimension%s, indexed with %d", buf->name, buf->ndim,
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
      tpp_error_at(p, at, "cast to %s takes 1 argument, given %d", loom_dtype_name(cast_to), n);
      return r;
    }
    r.e = loom_tp_cast(p->arena, cast_to, args[0].e);
    if (!r.e) tpp_oom(p);
    return r;
  }
  if (len == 6 && memcmp(name, "select", 6) == 0) {
    parse_args(p, args, 3, &n);
    if (p->failed) return r;
    if (n != 3) {
      tpp_error_at(p, at, "select takes 3 arguments, given %d", n);
      return r;
    }
    unify(p, &args[1], &args[2]);
    r.e = loom_tp_select(p->arena, args[0].e, args[1].e, args[2].e);
    if (!r.e) tpp_oom(p);
    return r;
  }
  for (int op = 0; op < LOOM_TP_OP_COUNT; op++) {
    const char *sp = loom_tp_op_spelling((loom_tp_op)op);
    if (!isalpha((unsigned char)sp[0]) || strlen(sp) != len || memcmp(sp, name, len) != 0) continue;
    int arity = loom_tp_op_arity((loom_tp_op)op);
    parse_args(p, args, 3, &n);
    if (p->failed) return r;
    if (n != arity) {
      tpp_error_at(p, at, "%s takes %d argument%s, given %d", sp, arity, arity == 1 ? "" : "s", n);
      return r;
    }
    if (loom_tp_op_class_of((loom_tp_op)op) == LOOM_TP_CLASS_BITS) {
      /* bitcast(x, 0i32): the literal names the result dtype (an untyped integer is i64) */
      if (args[1].e->kind == LOOM_TP_EXPR_SYM && args[1].literal) args[1].e = retype_literal(p, args[1].e, LOOM_DTYPE_I64);
      if (!args[1].e || args[1].e->kind != LOOM_TP_EXPR_CONST) {
        tpp_error_at(p, at, "%s takes a literal naming the result dtype as its second argument (e.g. 0i32)", sp);
        return r;
      }
      r.e = loom_tp_op2(p->arena, (loom_tp_op)op, args[0].e, args[1].e);
      if (!r.e) tpp_oom(p);
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
    if (!r.e) tpp_oom(p);
    return r;
  }
  tpp_error_at(p, at, "unknown function '%.*s'", (int)len, name);
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
    tpp_next(p);
    if (!r.e) tpp_oom(p);
    return r;
  }
  if (p->tok.kind == T_FLOAT) {
    r.e = loom_tp_const_f(p->arena, p->tok.has_suffix ? p->tok.suffix : LOOM_DTYPE_F32, p->tok.fval);
    r.literal = !p->tok.has_suffix;
    tpp_next(p);
    if (!r.e) tpp_oom(p);
    return r;
  }
  if (tpp_is_punct(p, "(")) {
    tpp_next(p);
    r = parse_expr(p);
    tpp_expect_punct(p, ")");
    return r;
  }
  if (p->tok.kind != T_NAME) {
    char got[64];
    tpp_describe_tok(p, got, sizeof got);
    tpp_error_at(p, at, "expected an expression, found %s", got);
    return r;
  }
  const char *name = tpp_tok_text(p);
  size_t len = p->tok.len;
  tpp_next(p);
  if ((len == 4 && !memcmp(name, "true", 4)) || (len == 5 && !memcmp(name, "false", 5))) {
    r.e = loom_tp_const_i(p->arena, LOOM_DTYPE_BOOL, len == 4);
    if (!r.e) tpp_oom(p);
    return r;
  }
  if ((len >= 3 && (!memcmp(name, "inf", 3) || !memcmp(name, "nan", 3)))) {
    loom_dtype t = LOOM_DTYPE_F32;
    bool ok = len == 3 || loom_dtype_parse(name + 3, len - 3, &t);
    if (ok && loom_dtype_is_float(t)) {
      r.e = loom_tp_const_f(p->arena, t, name[0] == 'i' ? INFINITY : NAN);
      r.literal = len == 3;
      if (!r.e) tpp_oom(p);
      return r;
    }
  }
  if (tpp_is_punct(p, "(")) return parse_call(p, name, len, at);
  const name_entry *ne = tpp_lookup(p, name, len);
  if (tpp_is_punct(p, "[")) {
    if (!ne || ne->kind != N_BUF) {
      tpp_error_at(p, at, "'%.*s' is not a buffer", (int)len, name);
      return r;
    }
    const loom_tp_buffer *buf = ne->ptr;
    loom_tp_expr **idx = parse_indices(p, buf, at);
    if (!idx) return r;
    r.e = loom_tp_load(p->arena, buf, idx);
    if (!r.e) tpp_oom(p);
    return r;
  }
  if (!ne && p->defining_shapes) ne = tpp_define_shape_sym(p, name, len, at);
  if (!ne) {
    tpp_error_at(p, at, "unknown name '%.*s' in program @%s", (int)len, name, p->func_name);
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
      tpp_error_at(p, at, "buffer '%.*s' used without indices", (int)len, name);
      return r;
  }
  if (!r.e) tpp_oom(p);
  return r;
}

static operand parse_unary(parser *p) {
  if (tpp_is_punct(p, "-") || tpp_is_punct(p, "!")) {
    bool neg = tpp_is_punct(p, "-");
    size_t at = p->tok.start;
    tpp_next(p);
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
    if (!x.e) tpp_error_at(p, at, "out of memory");
    return x;
  }
  return parse_primary(p);
}

static operand parse_term(parser *p) {
  operand a = parse_unary(p);
  for (;;) {
    loom_tp_op op;
    if (tpp_is_punct(p, "*")) op = LOOM_TP_OP_MUL;
    else if (tpp_is_punct(p, "/")) op = LOOM_TP_OP_DIV;
    else if (tpp_is_punct(p, "//")) op = LOOM_TP_OP_FLOORDIV;
    else if (tpp_is_punct(p, "%")) op = LOOM_TP_OP_MOD;
    else return a;
    size_t at = p->tok.start;
    tpp_next(p);
    operand b = parse_unary(p);
    /* On index values, % is floormod (symbolic semantics). */
    if (op == LOOM_TP_OP_MOD && a.e && b.e && is_index(a.e) && is_index(b.e)) op = LOOM_TP_OP_FLOORMOD;
    a = make_binary(p, at, op, a, b);
  }
}

static operand parse_sum(parser *p) {
  operand a = parse_term(p);
  while (tpp_is_punct(p, "+") || tpp_is_punct(p, "-")) {
    loom_tp_op op = tpp_is_punct(p, "+") ? LOOM_TP_OP_ADD : LOOM_TP_OP_SUB;
    size_t at = p->tok.start;
    tpp_next(p);
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
    if (tpp_is_punct(p, cmps[i].s)) {
      size_t at = p->tok.start;
      tpp_next(p);
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
  while (tpp_is_punct(p, "&&")) {
    size_t at = p->tok.start;
    tpp_next(p);
    a = make_binary(p, at, LOOM_TP_OP_AND, a, parse_cmp(p));
  }
  return a;
}

static operand parse_expr(parser *p) {
  operand a = parse_and(p);
  while (tpp_is_punct(p, "||")) {
    size_t at = p->tok.start;
    tpp_next(p);
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
    tpp_error_at(p, at, "%s must be a symbolic integer expression", what);
    return NULL;
  }
  return o.e->u.sym;
}

/* ---- types, statements, programs ------------------------------------------ */

static loom_tp_buffer *parse_buftype(parser *p, const char *name, size_t name_len, bool param) {
  loom_tp_scope scope;
  size_t at = p->tok.start;
  if (tpp_is_name(p, "Buffer")) scope = LOOM_TP_SCOPE_GLOBAL;
  else if (tpp_is_name(p, "Local")) scope = LOOM_TP_SCOPE_LOCAL;
  else if (tpp_is_name(p, "Shared")) scope = LOOM_TP_SCOPE_SHARED;
  else {
    char got[64];
    tpp_describe_tok(p, got, sizeof got);
    tpp_error_at(p, at, "expected Buffer[...], Local[...] or Shared[...], found %s", got);
    return NULL;
  }
  if (param != (scope == LOOM_TP_SCOPE_GLOBAL)) {
    tpp_error_at(p, at, param ? "parameters are Buffer[...]" : "allocations are Local[...] or Shared[...]");
    return NULL;
  }
  tpp_next(p);
  if (!tpp_expect_punct(p, "[") || !tpp_expect_punct(p, "(")) return NULL;
  const loom_sym_expr *dims[16];
  int ndim = 0;
  p->defining_shapes = param;
  while (!p->failed && !tpp_is_punct(p, ")")) {
    if (ndim == 16) {
      tpp_error_at(p, p->tok.start, "more than 16 dimensions");
      break;
    }
    dims[ndim++] = parse_sym(p, "a buffer dimension");
    if (!tpp_is_punct(p, ",")) break;
    tpp_next(p);
  }
  p->defining_shapes = false;
  loom_dtype t;
  if (!tpp_expect_punct(p, ")") || !tpp_expect_punct(p, ",") || !tpp_parse_dtype(p, &t)) return NULL;
  bool uninit = false;
  if (scope == LOOM_TP_SCOPE_LOCAL && tpp_is_punct(p, ",")) { /* Local[(..), t, uninit] */
    tpp_next(p);
    if (!tpp_is_name(p, "uninit")) {
      char got[64];
      tpp_describe_tok(p, got, sizeof got);
      tpp_error_at(p, p->tok.start, "expected `uninit` after a Local's dtype, found %s", got);
      return NULL;
    }
    tpp_next(p);
    uninit = true;
  }
  if (!tpp_expect_punct(p, "]")) return NULL;
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)name_len, name);
  loom_tp_buffer *b = loom_tp_buffer_new(p->arena, nbuf, t, ndim, dims, scope);
  if (!b) tpp_oom(p);
  else b->uninit = uninit;
  return b;
}

static loom_tp_stmt *parse_stmt(parser *p);

/* Parses '{' stmt* '}'; names declared inside go out of scope at the '}'. */
static loom_tp_stmt *parse_block(parser *p) {
  if (!tpp_expect_punct(p, "{")) return NULL;
  size_t mark = p->names.len;
  LOOM_VEC(loom_tp_stmt *) items = {0};
  while (!p->failed && !tpp_is_punct(p, "}")) {
    if (p->tok.kind == T_EOF) {
      tpp_error_at(p, p->tok.start, "expected '}' before end of input");
      break;
    }
    loom_tp_stmt *s = parse_stmt(p);
    if (s && !LOOM_VEC_PUSH(NULL, &items, s)) tpp_oom(p);
  }
  loom_tp_stmt *seq = NULL;
  if (!p->failed && tpp_expect_punct(p, "}")) {
    seq = loom_tp_seq(p->arena, items.data, items.len);
    if (!seq) tpp_oom(p);
  }
  LOOM_VEC_FREE(NULL, &items);
  p->names.len = mark;
  return seq;
}

static loom_tp_stmt *parse_for(parser *p) {
  tpp_next(p); /* for */
  const char *name;
  size_t len, at = p->tok.start;
  if (!tpp_expect_name(p, "a loop variable", &name, &len)) return NULL;
  if (!tpp_is_name(p, "in")) {
    tpp_error_at(p, p->tok.start, "expected 'in' after the loop variable");
    return NULL;
  }
  tpp_next(p);
  if (p->tok.kind != T_INT || p->tok.ival != 0 || p->tok.has_suffix) {
    tpp_error_at(p, p->tok.start, "loops start at 0: expected '0..EXTENT'");
    return NULL;
  }
  tpp_next(p);
  if (!tpp_expect_punct(p, "..")) return NULL;
  const loom_sym_expr *extent = parse_sym(p, "a loop extent");
  if (!extent) return NULL;
  loom_tp_loop_kind kind = LOOM_TP_LOOP_SERIAL;
  for (int k = 0; k < LOOM_TP_LOOP_KIND_COUNT; k++) {
    if (tpp_is_name(p, loom_tp_loop_kind_name((loom_tp_loop_kind)k))) {
      kind = (loom_tp_loop_kind)k;
      tpp_next(p);
      break;
    }
  }
  bool reduce = false;
  if (tpp_is_name(p, "reduce")) {
    reduce = true;
    tpp_next(p);
  }
  char nbuf[128];
  snprintf(nbuf, sizeof nbuf, "%.*s", (int)len, name);
  const loom_sym_expr *var = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_SHAPE);
  if (!var) {
    tpp_oom(p);
    return NULL;
  }
  size_t mark = p->names.len;
  if (!tpp_declare(p, at, name, len, N_LOOP, var)) return NULL;
  loom_tp_stmt *body = parse_block(p);
  p->names.len = mark;
  if (!body) return NULL;
  loom_tp_stmt *s = loom_tp_for(p->arena, var, extent, kind, reduce, body);
  if (!s) tpp_oom(p);
  return s;
}

static loom_tp_stmt *parse_if(parser *p) {
  tpp_next(p); /* if */
  size_t at = p->tok.start;
  operand c = parse_expr(p);
  if (p->failed) return NULL;
  if (c.e->dtype != LOOM_DTYPE_BOOL) {
    tpp_error_at(p, at, "the condition of 'if' must be bool, not %s", loom_dtype_name(c.e->dtype));
    return NULL;
  }
  loom_tp_stmt *then_s = parse_block(p), *else_s = NULL;
  if (!then_s) return NULL;
  if (tpp_is_name(p, "else")) {
    tpp_next(p);
    if (tpp_is_name(p, "if")) {
      loom_tp_stmt *nested = parse_if(p);
      if (!nested) return NULL;
      else_s = loom_tp_seq(p->arena, &nested, 1);
    } else {
      else_s = parse_block(p);
    }
    if (!else_s) return NULL;
  }
  loom_tp_stmt *s = loom_tp_if(p->arena, c.e, then_s, else_s);
  if (!s) tpp_oom(p);
  return s;
}

static loom_tp_stmt *parse_stmt(parser *p) {
  if (p->failed) return NULL;
  if (tpp_is_name(p, "for")) return parse_for(p);
  if (tpp_is_name(p, "if")) return parse_if(p);
  size_t at = p->tok.start;
  if (tpp_is_name(p, "let")) {
    tpp_next(p);
    const char *name;
    size_t len;
    loom_dtype t;
    size_t name_at = p->tok.start;
    if (!tpp_expect_name(p, "a name", &name, &len) || !tpp_expect_punct(p, ":") || !tpp_parse_dtype(p, &t) ||
        !tpp_expect_punct(p, "="))
      return NULL;
    size_t vat = p->tok.start;
    operand v = parse_expr(p);
    if (p->failed) return NULL;
    if (v.literal) v.e = retype_literal(p, v.e, t);
    if (v.e->dtype != t) {
      tpp_error_at(p, vat, "let %.*s: %s is given a %s value", (int)len, name, loom_dtype_name(t),
               loom_dtype_name(v.e->dtype));
      return NULL;
    }
    char *nm = loom_arena_strndup(p->arena, name, len);
    loom_tp_stmt *s = nm ? loom_tp_let(p->arena, nm, v.e) : NULL;
    if (!s) {
      tpp_oom(p);
      return NULL;
    }
    tpp_declare(p, name_at, nm, len, N_LET, s);
    return s;
  }
  if (tpp_is_name(p, "barrier")) {
    tpp_next(p);
    loom_tp_stmt *s = loom_tp_barrier(p->arena);
    if (!s) tpp_oom(p);
    return s;
  }
  if (tpp_is_name(p, "prefetch") || tpp_is_name(p, "prefetch_l2")) {
    bool l2 = tpp_is_name(p, "prefetch_l2");
    tpp_next(p);
    size_t name_at = p->tok.start;
    const char *name;
    size_t len;
    if (!tpp_expect_name(p, "a buffer name", &name, &len)) return NULL;
    const name_entry *ne = tpp_lookup(p, name, len);
    if (!ne || ne->kind != N_BUF) {
      tpp_error_at(p, name_at, "prefetch: '%.*s' is not a buffer", (int)len, name);
      return NULL;
    }
    loom_tp_expr **idx = parse_indices(p, ne->ptr, name_at);
    if (!idx) return NULL;
    loom_tp_stmt *s = loom_tp_prefetch(p->arena, ne->ptr, idx, l2);
    if (!s) tpp_oom(p);
    return s;
  }
  if (tpp_is_name(p, "alloc")) {
    tpp_next(p);
    const char *name;
    size_t len;
    size_t name_at = p->tok.start;
    if (!tpp_expect_name(p, "a buffer name", &name, &len) || !tpp_expect_punct(p, ":")) return NULL;
    loom_tp_buffer *b = parse_buftype(p, name, len, false);
    if (!b) return NULL;
    tpp_declare(p, name_at, b->name, len, N_BUF, b);
    loom_tp_stmt *s = loom_tp_alloc_stmt(p->arena, b);
    if (!s) tpp_oom(p);
    return s;
  }
  if (p->tok.kind == T_NAME) {
    const char *name = tpp_tok_text(p);
    size_t len = p->tok.len;
    const name_entry *ne = tpp_lookup(p, name, len);
    tpp_next(p);
    if (!ne || ne->kind != N_BUF) {
      tpp_error_at(p, at, "expected a statement: '%.*s' is not a buffer", (int)len, name);
      return NULL;
    }
    const loom_tp_buffer *buf = ne->ptr;
    loom_tp_expr **idx = parse_indices(p, buf, at);
    if (!idx || !tpp_expect_punct(p, "=")) return NULL;
    operand v = parse_expr(p);
    if (p->failed) return NULL;
    if (v.literal) v.e = retype_literal(p, v.e, buf->dtype);
    loom_tp_stmt *s = v.e ? loom_tp_store(p->arena, buf, idx, v.e) : NULL;
    if (!s) tpp_oom(p);
    return s;
  }
  char got[64];
  tpp_describe_tok(p, got, sizeof got);
  tpp_error_at(p, at, "expected a statement (for, let, if, alloc, barrier, prefetch or a store), found %s", got);
  return NULL;
}

static loom_tp_func *parse_func(parser *p) {
  if (!tpp_is_name(p, "prim")) {
    tpp_error_at(p, p->tok.start, "expected 'prim'");
    return NULL;
  }
  tpp_next(p);
  const char *name;
  size_t len;
  if (!tpp_expect_punct(p, "@") || !tpp_expect_name(p, "a program name", &name, &len)) return NULL;
  loom_tp_func *f = LOOM_ARENA_NEW(p->arena, loom_tp_func);
  if (!f || !(f->name = loom_arena_strndup(p->arena, name, len))) {
    tpp_oom(p);
    return NULL;
  }
  p->func_name = f->name;
  if (!tpp_expect_punct(p, "(")) return NULL;
  LOOM_VEC(loom_tp_param) params = {0};
  while (!p->failed && !tpp_is_punct(p, ")")) {
    const char *pname;
    size_t plen, at = p->tok.start;
    if (!tpp_expect_name(p, "a parameter name", &pname, &plen) || !tpp_expect_punct(p, ":")) break;
    loom_tp_param prm = {0};
    if (tpp_is_name(p, "i64")) {
      tpp_next(p);
      char nbuf[128];
      snprintf(nbuf, sizeof nbuf, "%.*s", (int)plen, pname);
      prm.scalar.name = loom_arena_strdup(p->arena, nbuf);
      prm.scalar.var = loom_sym_var_new(p->cx, nbuf, LOOM_SYM_VAR_INT);
      if (!prm.scalar.name || !prm.scalar.var) {
        tpp_oom(p);
        break;
      }
      tpp_declare(p, at, prm.scalar.name, plen, N_SCALAR, prm.scalar.var);
    } else {
      prm.is_buffer = true;
      prm.buf = parse_buftype(p, pname, plen, true);
      if (!prm.buf) break;
      prm.buf->param_index = (int)params.len;
      tpp_declare(p, at, prm.buf->name, plen, N_BUF, prm.buf);
    }
    if (!LOOM_VEC_PUSH(NULL, &params, prm)) tpp_oom(p);
    if (!tpp_is_punct(p, ",")) break;
    tpp_next(p);
  }
  if (!p->failed && tpp_expect_punct(p, ")")) {
    f->nparams = params.len;
    f->params = LOOM_ARENA_ARRAY(p->arena, loom_tp_param, params.len ? params.len : 1);
    if (!f->params) tpp_oom(p);
    else if (params.len) memcpy(f->params, params.data, params.len * sizeof *params.data);
  }
  LOOM_VEC_FREE(NULL, &params);
  /* The signature's symbols: every N_SYM / N_SCALAR name declared so far. */
  if (!p->failed) {
    size_t n = 0;
    for (size_t i = 0; i < p->names.len; i++)
      n += p->names.data[i].kind == N_SYM || p->names.data[i].kind == N_SCALAR;
    f->syms = LOOM_ARENA_ARRAY(p->arena, const loom_sym_expr *, n ? n : 1);
    if (!f->syms) tpp_oom(p);
    for (size_t i = 0; f->syms && i < p->names.len; i++)
      if (p->names.data[i].kind == N_SYM || p->names.data[i].kind == N_SCALAR)
        f->syms[f->nsyms++] = p->names.data[i].ptr;
  }
  if (p->failed) return NULL;
  f->body = parse_block(p);
  return f->body ? f : NULL;
}

static loom_status run_parser(parser *p, loom_tp_func **out) {
  tpp_next(p);
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
    if (!LOOM_VEC_PUSH(NULL, &p.names, e)) tpp_oom(&p);
  }
  operand o = {NULL, false};
  if (!p.failed) {
    tpp_next(&p);
    o = parse_expr(&p);
    if (!p.failed && p.tok.kind != T_EOF) {
      char got[64];
      tpp_describe_tok(&p, got, sizeof got);
      tpp_error_at(&p, p.tok.start, "expected the end of the expression, found %s", got);
    }
    if (!p.failed && o.e && o.literal && store_type) o.e = retype_literal(&p, o.e, *store_type);
    if (!p.failed && !o.e) tpp_oom(&p);
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

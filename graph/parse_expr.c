/* parse_expr.c — the values of a binding: leaves (variables, constants, shape(...), sym(...)),
 * operator calls with attributes, function calls, call_tp / call_extern, tuples, tuple
 * indexing and `if`. */
#include <ctype.h>
#include <string.h>

#include "graph/parse_internal.h"
#include "graph/tp_bridge.h"

/* ---- expressions ---------------------------------------------------------------------- */

static loom_graph_expr *new_expr(parser *p, loom_graph_expr_kind k, size_t off) {
  loom_graph_expr *e = LOOM_ARENA_NEW(&p->m->arena, loom_graph_expr);
  if (e) {
    e->kind = k;
    e->loc = (loom_loc){p->ir_src, off};
  }
  return e;
}

const loom_graph_const *gp_find_const(parser *p, const char *name) {
  for (size_t i = 0; i < p->m->consts.len; i++)
    if (p->m->consts.data[i].name == name) return &p->m->consts.data[i];
  return NULL;
}

/* leaf := ident | '@' name | 'const' '(' number ',' dtype ')' | 'shape' '(' syms ')'
 *       | 'sym' '(' sym ')' */
loom_status gp_leaf(parser *p, loom_graph_expr **out) {
  size_t b = (gp_skip_ws(p), p->pos);
  loom_graph_module *m = p->m;
  if (gp_peek(p) == '@') {
    const char *name;
    LOOM_PROPAGATE(gp_global_name(p, &name));
    const loom_graph_const *c = gp_find_const(p, name);
    if (!c) return gp_err(p, b, "unknown constant @%s", name);
    *out = c->expr;
    return LOOM_OK;
  }
  const char *s;
  size_t n;
  if (!gp_ident(p, &s, &n)) return gp_err(p, b, "expected a variable, constant, shape(...) or sym(...)");
  if (gp_is_kw(s, n, "const") && gp_peek(p) == '(') {
    p->pos++;
    double v;
    bool is_int;
    int64_t iv;
    loom_dtype dt;
    LOOM_PROPAGATE(gp_number(p, &v, &is_int, &iv));
    LOOM_PROPAGATE(gp_expect(p, ","));
    LOOM_PROPAGATE(gp_dtype_tok(p, &dt));
    if (dt == LOOM_DTYPE_UNKNOWN) return gp_err(p, b, "a constant needs a dtype");
    LOOM_PROPAGATE(gp_expect(p, ")"));
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
  if (gp_is_kw(s, n, "shape") && gp_peek(p) == '(') {
    p->pos++;
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = gp_sym_list(p, ')', (void *)&v);
    if (!st) {
      *out = loom_graph_shape_new(m, v.len, v.data);
      if (!*out) st = LOOM_OOM();
      else (*out)->loc = (loom_loc){p->ir_src, b};
    }
    LOOM_VEC_FREE(m->alloc, &v);
    return st;
  }
  if (gp_is_kw(s, n, "sym") && gp_peek(p) == '(') {
    p->pos++;
    const loom_sym_expr *e;
    LOOM_PROPAGATE(gp_sym_expr(p, &e));
    LOOM_PROPAGATE(gp_expect(p, ")"));
    *out = loom_graph_sym_new(m, e);
    if (!*out) return LOOM_OOM();
    (*out)->loc = (loom_loc){p->ir_src, b};
    return LOOM_OK;
  }
  const char *name = loom_graph_module_intern(m, s, n);
  if (!name) return LOOM_OOM();
  const loom_graph_expr *v = gp_lookup((const void *)&p->vars, name);
  if (!v) return gp_err(p, b, "unknown variable '%s'", name);
  *out = (loom_graph_expr *)v;
  return LOOM_OK;
}

/* leaves := leaf (',' leaf)*   up to ')' */
static loom_status leaves(parser *p, LOOM_VEC(loom_graph_expr *) * v) {
  while (gp_peek(p) != ')') {
    loom_graph_expr *e;
    LOOM_PROPAGATE(gp_leaf(p, &e));
    if (!LOOM_VEC_PUSH(p->m->alloc, v, e)) return LOOM_OOM();
    if (!gp_accept(p, ",")) break;
  }
  return gp_expect(p, ")");
}

loom_graph_expr **gp_copy_exprs(parser *p, size_t n, loom_graph_expr *const *src) {
  loom_graph_expr **a = LOOM_ARENA_ARRAY(&p->m->arena, loom_graph_expr *, n ? n : 1);
  if (a && n) memcpy(a, src, n * sizeof *a);
  return a;
}

/* quoted := '"' (char | '\\' ('"' | '\\' | 'x' hex hex))* '"'   (print.c's print_quoted) */
static loom_status quoted(parser *p, const char **out) {
  size_t b = (gp_skip_ws(p), p->pos);
  if (gp_peek(p) != '"') return gp_err(p, b, "expected a \"string\"");
  size_t end = b + 1;
  while (end < p->len && p->s[end] != '"' && p->s[end] != '\n') end += p->s[end] == '\\' ? 2 : 1;
  char *buf = loom_arena_alloc(&p->m->arena, end - b + 1, 1);
  if (!buf) return LOOM_OOM();
  size_t n = 0, e = b + 1;
  for (; e < p->len && p->s[e] != '"' && p->s[e] != '\n'; e++) {
    char ch = p->s[e];
    if (ch == '\\' && e + 1 < p->len && (p->s[e + 1] == '"' || p->s[e + 1] == '\\')) ch = p->s[++e];
    else if (ch == '\\' && e + 3 < p->len && p->s[e + 1] == 'x') {
      unsigned v;
      char hex[3] = {p->s[e + 2], p->s[e + 3], 0};
      if (!isxdigit((unsigned char)hex[0]) || !isxdigit((unsigned char)hex[1]) || sscanf(hex, "%2x", &v) != 1 || !v)
        return gp_err(p, e, "bad \\x escape (two hex digits, not 00)");
      ch = (char)v, e += 3;
    } else if (ch == '\\') return gp_err(p, e, "unknown escape (\\\", \\\\ or \\xHH)");
    buf[n++] = ch;
  }
  if (e >= p->len || p->s[e] != '"') return gp_err(p, b, "unterminated string");
  buf[n] = 0;
  p->pos = e + 1;
  *out = loom_graph_module_intern(p->m, buf, n);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* strs := quoted (',' quoted)* ']' */
static loom_status str_list(parser *p, loom_graph_attr *a) {
  LOOM_VEC(const char *) v = {0};
  loom_status st = LOOM_OK;
  do {
    const char *s;
    if ((st = quoted(p, &s))) break;
    if (!LOOM_VEC_PUSH(p->m->alloc, &v, s)) {
      st = LOOM_OOM();
      break;
    }
  } while (gp_accept(p, ","));
  if (!st) st = gp_expect(p, "]");
  if (!st) {
    const char **d = LOOM_ARENA_ARRAY(&p->m->arena, const char *, v.len ? v.len : 1);
    if (!d) st = LOOM_OOM();
    else {
      if (v.len) memcpy(d, v.data, v.len * sizeof *d);
      a->kind = LOOM_GRAPH_ATTR_STRS, a->n = v.len, a->strs = d;
    }
  }
  LOOM_VEC_FREE(p->m->alloc, &v);
  return st;
}

/* attr_value := '[' syms ']' | '[' strs | number | 'true' | 'false' | dtype | '"' chars '"' */
static loom_status attr_value(parser *p, loom_graph_attr *a) {
  size_t b = (gp_skip_ws(p), p->pos);
  char c = gp_peek(p);
  if (c == '[') {
    p->pos++;
    if (gp_peek(p) == '"') return str_list(p, a);
    LOOM_VEC(const loom_sym_expr *) v = {0};
    loom_status st = gp_sym_list(p, ']', (void *)&v);
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
    if (e >= p->len || p->s[e] != '"') return gp_err(p, b, "unterminated string");
    a->kind = LOOM_GRAPH_ATTR_STR;
    a->s = loom_arena_strndup(&p->m->arena, p->s + p->pos, e - p->pos);
    p->pos = e + 1;
    return a->s ? LOOM_OK : LOOM_OOM();
  }
  if (gp_is_id0(c) && !gp_peek_kw(p, "inf") && !gp_peek_kw(p, "nan")) {
    const char *s;
    size_t n;
    gp_ident(p, &s, &n);
    if (gp_is_kw(s, n, "true") || gp_is_kw(s, n, "false")) {
      a->kind = LOOM_GRAPH_ATTR_BOOL;
      a->i = gp_is_kw(s, n, "true");
      return LOOM_OK;
    }
    if (loom_dtype_parse(s, n, &a->dtype)) {
      a->kind = LOOM_GRAPH_ATTR_DTYPE;
      return LOOM_OK;
    }
    return gp_err(p, b, "expected an attribute value (number, [list], true/false, dtype or \"string\")");
  }
  double d;
  bool is_int;
  int64_t iv = 0;
  LOOM_PROPAGATE(gp_number(p, &d, &is_int, &iv));
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
  bool r = gp_ident(p, &s, &n) && (gp_skip_ws(p), p->pos < p->len && p->s[p->pos] == '=') &&
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
  while (!st && gp_peek(p) != ')') {
    if (at_attr(p)) {
      loom_graph_attr a = {0};
      size_t ab = (gp_skip_ws(p), p->pos);
      st = gp_expect_ident(p, "an attribute name", &a.name);
      if (!st) {
        for (size_t i = 0; i < attrs.len; i++)
          if (attrs.data[i].name == a.name) st = gp_err(p, ab, "attribute '%s' given twice", a.name);
      }
      if (!st) st = gp_expect(p, "=");
      if (!st) st = attr_value(p, &a);
      if (!st && !LOOM_VEC_PUSH(m->alloc, &attrs, a)) st = LOOM_OOM();
    } else {
      if (attrs.len) st = gp_err(p, p->pos, "operands must come before attributes");
      loom_graph_expr *e = NULL;
      if (!st) st = gp_leaf(p, &e);
      if (!st && !LOOM_VEC_PUSH(m->alloc, &args, e)) st = LOOM_OOM();
    }
    if (!st && !gp_accept(p, ",")) break;
  }
  if (!st) st = gp_expect(p, ")");
  if (!st) {
    *out = loom_graph_call_op(m, op, args.len, args.data, attrs.len, attrs.data);
    if (!*out) st = LOOM_OOM();
    else (*out)->loc = (loom_loc){p->ir_src, b};
  }
  LOOM_VEC_FREE(m->alloc, &args);
  LOOM_VEC_FREE(m->alloc, &attrs);
  return st;
}

/* loop := 'loop' '(' ident ('<' leaf)? (',' 'while' leaf)? ')' '(' (ident ':' sinfo '=' leaf),* ')' '{' seq '}'
 * (after 'loop' '('). The count, the condition and the initial values are read in the enclosing
 * scope; the params' struct info defines the loop's locals; the iteration var, the locals and the
 * params are visible in the body only. */
static loom_status loop_value(parser *p, size_t b, loom_graph_expr **out) {
  loom_graph_module *m = p->m;
  size_t ib = (gp_skip_ws(p), p->pos);
  const char *iname;
  LOOM_PROPAGATE(gp_expect_ident(p, "the loop's iteration variable", &iname));
  if (gp_lookup((const void *)&p->syms, iname) || gp_reserved(iname))
    return gp_err(p, ib, "'%s' cannot name the loop's iteration variable (it is %s)", iname,
                  gp_reserved(iname) ? "a reserved word" : "a symbolic variable already defined here");
  loom_graph_expr *count = NULL, *cond = NULL;
  if (gp_accept(p, "<")) LOOM_PROPAGATE(gp_leaf(p, &count));
  if (gp_accept(p, ",")) {
    if (!gp_peek_kw(p, "while")) return gp_err(p, p->pos, "expected 'while COND' after the loop's count");
    const char *k;
    size_t kn;
    gp_ident(p, &k, &kn);
    LOOM_PROPAGATE(gp_leaf(p, &cond));
  }
  LOOM_PROPAGATE(gp_expect(p, ")"));
  LOOM_PROPAGATE(gp_expect(p, "("));
  size_t vmark = p->vars.len, smark = p->syms.len;
  LOOM_VEC(loom_graph_expr *) params = {0};
  LOOM_VEC(loom_graph_expr *) inits = {0};
  LOOM_VEC(const loom_sym_expr *) locals = {0};
  loom_status st = LOOM_OK;
  while (!st && gp_peek(p) != ')') {
    size_t pb = (gp_skip_ws(p), p->pos);
    const char *name;
    const loom_sinfo *si = NULL;
    loom_graph_expr *init = NULL;
    st = gp_expect_ident(p, "a loop-carried variable", &name);
    if (!st && gp_reserved(name)) st = gp_err(p, pb, "'%s' is a reserved word and cannot name a variable", name);
    for (size_t i = 0; !st && i < params.len; i++)
      if (params.data[i]->u.var.name == name) st = gp_err(p, pb, "loop-carried variable '%s' is given twice", name);
    if (!st) st = gp_expect(p, ":");
    if (!st) {
      p->sym_mode = SYM_DEFINE;
      st = gp_sinfo(p, &si);
      p->sym_mode = SYM_RESOLVE;
    }
    if (!st) st = gp_expect(p, "=");
    if (!st) st = gp_leaf(p, &init);
    if (st) break;
    loom_graph_expr *v = loom_graph_var_new(m, name, si);
    if (!v || !LOOM_VEC_PUSH(m->alloc, &params, v) || !LOOM_VEC_PUSH(m->alloc, &inits, init)) st = LOOM_OOM();
    else v->loc = (loom_loc){p->ir_src, pb};
    if (!st && !gp_accept(p, ",")) break;
  }
  if (!st) st = gp_expect(p, ")");
  for (size_t i = smark; !st && i < p->syms.len; i++)
    if (!LOOM_VEC_PUSH(m->alloc, &locals, (const loom_sym_expr *)p->syms.data[i].val)) st = LOOM_OOM();
  const loom_sym_expr *iter = NULL;
  if (!st) {
    iter = loom_graph_loop_iter_new(m, iname, count);
    st = iter ? gp_push_name(p, &p->syms, iname, iter) : LOOM_OOM();
  }
  for (size_t i = 0; !st && i < params.len; i++) st = gp_push_name(p, &p->vars, params.data[i]->u.var.name, params.data[i]);
  if (!st) st = gp_expect(p, "{");
  loom_graph_seq *body = NULL;
  const char *binding = p->binding; /* the loop's binding names its fresh symbols */
  if (!st) {
    p->depth++;
    st = gp_seq(p, &body);
    p->depth--;
  }
  p->binding = binding;
  p->vars.len = vmark;
  p->syms.len = smark;
  if (!st) st = gp_expect(p, "}");
  if (!st) {
    *out = loom_graph_loop_new(m, count, cond, iter, params.len, params.data, inits.data, locals.len, locals.data, body);
    if (!*out) st = LOOM_OOM();
    else (*out)->loc = (loom_loc){p->ir_src, b};
  }
  LOOM_VEC_FREE(m->alloc, &params);
  LOOM_VEC_FREE(m->alloc, &inits);
  LOOM_VEC_FREE(m->alloc, &locals);
  return st;
}

/* value := 'if' '(' leaf ')' '{' seq '}' 'else' '{' seq '}' | loop
 *        | ('call_tp' | 'call_extern') '(' '@' name ',' '(' leaves ')' ',' sinfo ')'
 *        | '@' name '(' leaves ')' | '(' leaves ')' | op_call | leaf ('.' INT)* */
loom_status gp_value(parser *p, loom_graph_expr **out) {
  size_t b = (gp_skip_ws(p), p->pos);
  loom_graph_module *m = p->m;
  if (gp_peek(p) == '(') {
    p->pos++;
    LOOM_VEC(loom_graph_expr *) v = {0};
    loom_status st = leaves(p, (void *)&v);
    if (!st) {
      *out = new_expr(p, LOOM_GRAPH_EXPR_TUPLE, b);
      loom_graph_expr **items = gp_copy_exprs(p, v.len, v.data);
      if (!*out || !items) st = LOOM_OOM();
      else {
        (*out)->u.tuple.n = v.len;
        (*out)->u.tuple.items = items;
      }
    }
    LOOM_VEC_FREE(m->alloc, &v);
    return st;
  }
  if (gp_peek(p) == '@') {
    size_t save = p->pos;
    const char *name;
    LOOM_PROPAGATE(gp_global_name(p, &name));
    if (gp_peek(p) != '(') {
      p->pos = save;
      return gp_leaf(p, out);
    }
    p->pos++;
    if (!loom_graph_module_find_func(m, name))
      return gp_err(p, b, "unknown function @%s", name);
    LOOM_VEC(loom_graph_expr *) v = {0};
    loom_status st = leaves(p, (void *)&v);
    if (!st) {
      *out = new_expr(p, LOOM_GRAPH_EXPR_CALL, b);
      loom_graph_expr **a = gp_copy_exprs(p, v.len, v.data);
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
  if (gp_ident(p, &s, &n) && gp_peek(p) == '(') {
    if (gp_is_kw(s, n, "if")) {
      if (p->depth >= MAX_DEPTH) return gp_err(p, b, "'if' nested more than %d deep", MAX_DEPTH);
      p->pos++;
      loom_graph_expr *e = new_expr(p, LOOM_GRAPH_EXPR_IF, b);
      if (!e) return LOOM_OOM();
      LOOM_PROPAGATE(gp_leaf(p, &e->u.if_.cond));
      LOOM_PROPAGATE(gp_expect(p, ")"));
      LOOM_PROPAGATE(gp_expect(p, "{"));
      size_t vmark = p->vars.len, smark = p->syms.len;
      p->depth++;
      loom_status bst = gp_seq(p, &e->u.if_.then_seq);
      if (!bst) {
        p->vars.len = vmark;
        p->syms.len = smark;
        bst = gp_expect(p, "}");
      }
      if (!bst && !gp_peek_kw(p, "else")) bst = gp_err(p, p->pos, "expected 'else'");
      if (!bst) {
        gp_accept(p, "else");
        bst = gp_expect(p, "{");
      }
      if (!bst) bst = gp_seq(p, &e->u.if_.else_seq);
      p->depth--;
      LOOM_PROPAGATE(bst);
      p->vars.len = vmark;
      p->syms.len = smark;
      LOOM_PROPAGATE(gp_expect(p, "}"));
      *out = e;
      return LOOM_OK;
    }
    if (gp_is_kw(s, n, "loop")) {
      if (p->depth >= MAX_DEPTH) return gp_err(p, b, "'loop' nested more than %d deep", MAX_DEPTH);
      p->pos++;
      return loop_value(p, b, out);
    }
    if (gp_is_kw(s, n, "call_tp") || gp_is_kw(s, n, "call_extern")) {
      bool tp = gp_is_kw(s, n, "call_tp");
      p->pos++;
      loom_graph_expr *e = new_expr(p, LOOM_GRAPH_EXPR_CALL, b);
      if (!e) return LOOM_OOM();
      e->u.call.callee = tp ? LOOM_GRAPH_CALLEE_TP : LOOM_GRAPH_CALLEE_EXTERN;
      size_t nb = (gp_skip_ws(p), p->pos);
      LOOM_PROPAGATE(gp_global_name(p, &e->u.call.target));
      if (tp) {
        bool found = false;
        for (size_t i = 0; i < m->tps.len; i++)
          if (!strcmp(loom_graph_tp_name(m->tps.data[i]), e->u.call.target)) found = true;
        for (size_t i = 0; i < p->prims.len; i++)
          if (p->prims.data[i] == e->u.call.target) found = true; /* defined later in the file */
        if (!found) return gp_err(p, nb, "unknown tensor program @%s", e->u.call.target);
      } else {
        bool found = false;
        for (size_t i = 0; i < m->externs.len; i++)
          if (m->externs.data[i].name == e->u.call.target) found = true;
        if (!found) return gp_err(p, nb, "unknown extern @%s (declare it with 'extern @name: Func[...]')", e->u.call.target);
      }
      LOOM_PROPAGATE(gp_expect(p, ","));
      LOOM_PROPAGATE(gp_expect(p, "("));
      LOOM_VEC(loom_graph_expr *) v = {0};
      loom_status st = leaves(p, (void *)&v);
      if (!st) {
        e->u.call.nargs = v.len;
        e->u.call.args = gp_copy_exprs(p, v.len, v.data);
        if (!e->u.call.args) st = LOOM_OOM();
      }
      LOOM_VEC_FREE(m->alloc, &v);
      LOOM_PROPAGATE(st);
      LOOM_PROPAGATE(gp_expect(p, ","));
      int mode = p->sym_mode;
      p->sym_mode = SYM_RESOLVE;
      st = gp_sinfo(p, &e->u.call.out_sinfo);
      p->sym_mode = mode;
      LOOM_PROPAGATE(st);
      LOOM_PROPAGATE(gp_expect(p, ")"));
      *out = e;
      return LOOM_OK;
    }
    if (!gp_is_kw(s, n, "const") && !gp_is_kw(s, n, "shape") && !gp_is_kw(s, n, "sym")) {
      loom_graph_op op;
      if (!loom_graph_op_lookup(s, n, &op)) return gp_err(p, b, "unknown operator '%.*s'", (int)n, s);
      p->pos++;
      return op_call(p, op, b, out);
    }
  }
  p->pos = save;
  loom_graph_expr *e;
  LOOM_PROPAGATE(gp_leaf(p, &e));
  while (p->pos < p->len && p->s[p->pos] == '.') {
    p->pos++;
    double d;
    bool is_int;
    int64_t iv = 0;
    size_t ib = p->pos;
    LOOM_PROPAGATE(gp_number(p, &d, &is_int, &iv));
    if (!is_int || iv < 0) return gp_err(p, ib, "expected a tuple index");
    loom_graph_expr *g = new_expr(p, LOOM_GRAPH_EXPR_TUPLE_GET, b);
    if (!g) return LOOM_OOM();
    g->u.get.tuple = e;
    g->u.get.index = (size_t)iv;
    e = g;
  }
  *out = e;
  return LOOM_OK;
}

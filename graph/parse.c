/* parse.c — the text parser (grammar in docs/ir.md): the module's top level (functions,
 * constants, extern declarations, tensor programs), the prescan that registers forward
 * declarations, and the entry point loom_graph_parse. Recursive descent over the source text;
 * symbolic expressions inside struct info and attributes go to loom_sym_parse. Errors are
 * file:line:col with the source line and a caret. The parser's other files are listed in
 * parse_internal.h. */
#include <string.h>

#include "graph/parse_internal.h"
#include "graph/tp_bridge.h"

/* A declaration error at `off`: the message and code of `cause`. */
static loom_status decl_err(parser *p, size_t off, loom_status cause) {
  loom_diag_add(p->diags, LOOM_DIAG_ERROR, (loom_loc){p->src, off}, "%s", loom_status_message(cause));
  loom_code code = loom_status_code(cause);
  loom_status_free(cause);
  return loom_diag_list_status(p->diags, code);
}

/* The conversion spelled `s` (i32 i64 f32 f64), or VOID when it is none. */
static loom_libcall_ctype ctype_word(const char *s, size_t n) {
  for (int t = LOOM_LIBCALL_CT_I32; t < LOOM_LIBCALL_CT_COUNT; t++)
    if (gp_is_kw(s, n, loom_libcall_ctype_name((loom_libcall_ctype)t))) return (loom_libcall_ctype)t;
  return LOOM_LIBCALL_CT_VOID;
}

/* carg := INT | name | ('i32' | 'i64' | 'f32' | 'f64') '(' (name | INT) ')' */
static loom_status c_arg(parser *p, loom_libcall_cref *out) {
  memset(out, 0, sizeof *out);
  size_t b = (gp_skip_ws(p), p->pos);
  const char *s;
  size_t n;
  bool wrapped = false;
  if (gp_ident(p, &s, &n)) {
    loom_libcall_ctype t = ctype_word(s, n);
    if (t != LOOM_LIBCALL_CT_VOID && gp_peek(p) == '(') {
      p->pos++;
      out->cast = t;
      wrapped = true;
    } else {
      p->pos = b;
    }
  }
  if (gp_ident(p, &s, &n)) {
    if (!(out->name = loom_graph_module_intern(p->m, s, n))) return LOOM_OOM();
  } else {
    double d;
    bool is_int;
    LOOM_PROPAGATE(gp_number(p, &d, &is_int, &out->value));
    if (!is_int) return gp_err(p, b, "a constant C argument is an integer (convert it: f64(2))");
  }
  return wrapped ? gp_expect(p, ")") : LOOM_OK;
}

/* ext_attr := 'symbol' '=' string | 'library' '=' string | 'pure'
 *           | 'abi' '=' ('kernel' | 'c' '(' carg,* ')' ('->' ('i32' | 'void'))?) */
static loom_status extern_attrs(parser *p, loom_libcall_decl *d, bool *any) {
  LOOM_VEC(loom_libcall_cref) cargs = {0};
  loom_status st = LOOM_OK;
  for (;;) {
    size_t b = (gp_skip_ws(p), p->pos);
    const char *s;
    size_t n;
    if (!gp_ident(p, &s, &n)) break;
    if (gp_is_kw(s, n, "pure")) {
      d->pure = *any = true;
    } else if (gp_is_kw(s, n, "symbol") || gp_is_kw(s, n, "library")) {
      const char **slot = gp_is_kw(s, n, "symbol") ? &d->symbol : &d->library;
      if (*slot) st = gp_err(p, b, "'%.*s' is given twice", (int)n, s);
      if (!st) st = gp_expect(p, "=");
      if (!st) st = gp_string_lit(p, slot);
      if (!st && !(*slot)[0]) st = gp_err(p, b, "'%.*s' is empty", (int)n, s);
      *any = true;
    } else if (gp_is_kw(s, n, "abi")) {
      *any = true;
      st = gp_expect(p, "=");
      size_t ab = (gp_skip_ws(p), p->pos);
      if (!st && !gp_ident(p, &s, &n)) st = gp_err(p, ab, "expected 'kernel' or 'c(...)' after abi=");
      if (!st && gp_is_kw(s, n, "kernel")) {
        d->abi = LOOM_LIBCALL_ABI_KERNEL;
      } else if (!st && gp_is_kw(s, n, "c")) {
        d->abi = LOOM_LIBCALL_ABI_C;
        st = gp_expect(p, "(");
        while (!st && gp_peek(p) != ')') {
          loom_libcall_cref c;
          st = c_arg(p, &c);
          if (!st && !LOOM_VEC_PUSH(p->m->alloc, &cargs, c)) st = LOOM_OOM();
          if (!st && !gp_accept(p, ",")) break;
        }
        if (!st) st = gp_expect(p, ")");
        if (!st && gp_accept(p, "->")) {
          size_t rb = (gp_skip_ws(p), p->pos);
          if (!gp_ident(p, &s, &n) || (!gp_is_kw(s, n, "void") && !gp_is_kw(s, n, "i32")))
            st = gp_err(p, rb, "a C function returns void or i32 (a status: nonzero is a failure)");
          else d->ret = gp_is_kw(s, n, "i32") ? LOOM_LIBCALL_CT_I32 : LOOM_LIBCALL_CT_VOID;
        }
      } else if (!st) {
        st = gp_err(p, ab, "unknown ABI '%.*s' (expected 'kernel' or 'c(...)')", (int)n, s);
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
  size_t b = (gp_skip_ws(p), p->pos);
  const char *name;
  const loom_sinfo *si = NULL;
  LOOM_PROPAGATE(gp_global_name(p, &name));
  p->syms.len = 0;
  loom_status st = LOOM_OK;
  LOOM_VEC(const char *) names = {0};
  LOOM_VEC(const loom_sinfo *) params = {0};
  bool named = gp_accept(p, "(");
  if (named) {
    while (!st && gp_peek(p) != ')') {
      size_t pb = (gp_skip_ws(p), p->pos);
      const char *pn;
      const loom_sinfo *ps = NULL;
      st = gp_expect_ident(p, "a parameter name", &pn);
      if (!st && gp_reserved(pn)) st = gp_err(p, pb, "'%s' is a reserved word and cannot name a parameter", pn);
      if (!st) st = gp_expect(p, ":");
      if (!st) {
        p->sym_mode = SYM_DEFINE;
        st = gp_sinfo(p, &ps);
        p->sym_mode = SYM_RESOLVE;
      }
      if (!st && (!LOOM_VEC_PUSH(p->m->alloc, &names, pn) || !LOOM_VEC_PUSH(p->m->alloc, &params, ps))) st = LOOM_OOM();
      if (!st && !gp_accept(p, ",")) break;
    }
    if (!st) st = gp_expect(p, ")");
    if (!st) st = gp_expect(p, "->");
    const loom_sinfo *ret = NULL;
    if (!st) st = gp_sinfo(p, &ret); /* the result's dims are expressions of the parameters' dims */
    if (!st && !(si = loom_sinfo_func(p->m, params.len, params.data, ret))) st = LOOM_OOM();
  } else {
    st = gp_expect(p, ":");
    p->sym_mode = SYM_DEFINE;
    if (!st) st = gp_sinfo(p, &si);
    p->sym_mode = SYM_RESOLVE;
    if (!st && si->kind != LOOM_SINFO_FUNC) st = gp_err(p, b, "an extern needs a Func[...] struct info");
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
  if (gp_peek(p) == '@') p->pos++;
  const char *s;
  size_t n;
  if (!gp_ident(p, &s, &n)) return false;
  if (gp_peek(p) == '(' && !skip_balanced(p, '(', ')')) return false;
  if (!skip_past(p, '[') || !skip_balanced(p, '[', ']')) return false;
  for (;;) {
    size_t b = (gp_skip_ws(p), p->pos);
    if (!gp_ident(p, &s, &n)) return true;
    if (gp_is_kw(s, n, "symbol") || gp_is_kw(s, n, "library")) {
      if (!skip_past(p, '"')) return false;
      p->pos++;
      if (!skip_past(p, '"')) return false;
      p->pos++;
    } else if (gp_is_kw(s, n, "abi")) {
      gp_accept(p, "=");
      if (!gp_ident(p, &s, &n)) return false;
      if (gp_is_kw(s, n, "c")) {
        if (gp_peek(p) != '(' || !skip_balanced(p, '(', ')')) return false;
        if (gp_accept(p, "->") && !gp_ident(p, &s, &n)) return false;
      }
    } else if (!gp_is_kw(s, n, "pure")) {
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
    gp_skip_ws(p);
    const char *s;
    size_t n;
    if (p->pos >= p->len || !gp_ident(p, &s, &n)) break;
    if (gp_is_kw(s, n, "fn")) {
      size_t at = p->pos - n;
      loom_graph_func *f = LOOM_ARENA_NEW(&p->m->arena, loom_graph_func);
      if (f) f->loc = (loom_loc){p->ir_src, at};
      loom_status st = f ? gp_global_name(p, &f->name) : LOOM_OOM();
      if (!st && loom_graph_module_find_func(p->m, f->name)) st = LOOM_ERROR(ALREADY_EXISTS, "twice");
      p->vars.len = p->syms.len = 0;
      if (!st) st = gp_param_list(p, f);
      if (!st) st = gp_expect(p, "->");
      if (st) {
        loom_status_free(st);
        break;
      }
      size_t ret_at = p->pos;
      loom_status rs = gp_sinfo(p, &f->ret);
      if (!rs && gp_peek(p) == '{') {
        loom_status_free(loom_graph_module_add_func(p->m, f));
      } else {
        loom_status_free(rs);
        p->pos = ret_at;
        if (!skip_past(p, '{')) break;
      }
      if (!skip_balanced(p, '{', '}')) break;
    } else if (gp_is_kw(s, n, "const")) {
      if (!skip_past(p, '=')) break;
      p->pos++;
      bool ok = gp_peek_kw(p, "weights") ? skip_past(p, '(') && skip_balanced(p, '(', ')')
                                         : skip_past(p, '[') && skip_balanced(p, '[', ']');
      if (!ok) break;
    } else if (gp_is_kw(s, n, "extern")) {
      if (!skip_extern(p)) break;
    } else if (gp_is_kw(s, n, "prim")) {
      const char *name;
      loom_status st = gp_global_name(p, &name);
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

/* A function the prescan declared and the main pass never defined: its text was read as part of
 * an earlier, malformed one (a body left open) -- an error at its `fn`, not a function without a
 * body for the passes to meet (the fuzzer's graph target found one). */
static loom_status undefined_funcs(parser *p) {
  for (size_t i = 0; i < loom_graph_module_num_funcs(p->m); i++) {
    const loom_graph_func *f = loom_graph_module_func_at(p->m, i);
    if (!f->body)
      return gp_err(p, f->loc.offset, "function @%s is not defined here: its text was read as part of the function "
                                      "before it (is a brace of that one left open?)", f->name);
  }
  return LOOM_OK;
}

/* module := (func | const | extern | prim)* */
static loom_status module(parser *p) {
  prescan(p);
  for (;;) {
    gp_skip_ws(p);
    if (p->pos >= p->len) return undefined_funcs(p);
    size_t b = p->pos;
    const char *s;
    size_t n;
    if (!gp_ident(p, &s, &n)) return gp_err(p, b, "expected 'fn', 'const', 'extern' or 'prim'");
    if (gp_is_kw(s, n, "fn")) {
      LOOM_PROPAGATE(gp_func(p));
    } else if (gp_is_kw(s, n, "const")) {
      LOOM_PROPAGATE(gp_constant(p));
    } else if (gp_is_kw(s, n, "extern")) {
      LOOM_PROPAGATE(extern_decl(p));
    } else if (gp_is_kw(s, n, "prim")) {
      p->pos = b;
      loom_tp_func *tp;
      LOOM_PROPAGATE(loom_graph_tp_parse(p->m, p->src, &p->pos, p->diags, &tp));
      LOOM_PROPAGATE(loom_graph_module_add_tp(p->m, tp));
    } else {
      return gp_err(p, b, "expected 'fn', 'const', 'extern' or 'prim', found '%.*s'", (int)n, s);
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

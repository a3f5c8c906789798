/* parse_decl.c — bindings (inference runs as each is read, so a module that parses is typed;
 * annotations are checked against what inference found), dataflow and plain blocks, sequences,
 * functions and constants. */
#include <stdio.h>
#include <string.h>

#include "base/strbuf.h"
#include "graph/parse_internal.h"
#include "graph/safetensors.h"

/* ---- bindings, blocks, functions --------------------------------------------------------- */

/* Struct info of a non-call value (tuple, tuple-get, if, loop, leaf). */
static loom_status simple_sinfo(parser *p, loom_graph_expr *e) {
  loom_graph_module *m = p->m;
  if (e->sinfo) return LOOM_OK;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_LOOP:
    return loom_graph_loop_infer(m, e, p->binding, &e->sinfo);
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
  if (n && gp_lookup((const void *)&p->syms, n) != v) loom_status_free(gp_push_name(p, &p->syms, n, v));
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
    bool in_scope = in && gp_lookup((const void *)&p->syms, in) == inferred->dims[i];
    if (iname && !in_scope && loom_sym_is_var(declared->dims[i]))
      for (size_t k = 0; k < p->fresh.len; k++)
        if (p->fresh.data[k].val == declared->dims[i]) d[i] = declared->dims[i];
  }
  return inferred->kind == LOOM_SINFO_TENSOR ? loom_sinfo_tensor(p->m, inferred->dtype, inferred->ndim, d, inferred->device)
                                             : loom_sinfo_shape(p->m, inferred->ndim, d);
}

/* Calls cb on every symbolic var `si` uses (dims, scalar values, fields, a function's result). */
static void sinfo_for_each_var(const loom_sinfo *si, void (*cb)(void *, const loom_sym_expr *), void *ud) {
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], cb, ud);
  if (si->value) loom_sym_for_each_var(si->value, cb, ud);
  for (size_t i = 0; i < si->nfields; i++) sinfo_for_each_var(si->fields[i], cb, ud);
  if (si->ret) sinfo_for_each_var(si->ret, cb, ud);
}

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
  sinfo_for_each_var(si, uses_cb, &u);
  return u.found;
}

/* Pairs of (an inferred fresh symbol, the annotation's symbol of the same name). */
typedef struct same_name_ud {
  parser *p;
  LOOM_VEC(const loom_sym_expr *) from, to;
  bool oom;
} same_name_ud;
static void same_name_cb(void *ud, const loom_sym_expr *v) {
  same_name_ud *u = ud;
  const char *name = loom_sym_var_name(v);
  const char *in = name ? loom_graph_module_intern(u->p->m, name, strlen(name)) : NULL;
  if (!in) return;
  for (size_t k = 0; k < u->from.len; k++)
    if (u->from.data[k] == v) return;
  for (size_t k = 0; k < u->p->fresh.len; k++) {
    const loom_sym_expr *d = u->p->fresh.data[k].val;
    if (u->p->fresh.data[k].name != in || d == v) continue;
    if (!LOOM_VEC_PUSH(u->p->m->alloc, &u->from, v) || !LOOM_VEC_PUSH(u->p->m->alloc, &u->to, d)) u->oom = true;
    return;
  }
}

/* The annotation names fresh symbols the value made (a loop's `r_k0`, printed inside any dim
 * expression) by the names they were made with: the inferred info takes the declared symbols. */
static const loom_sinfo *rename_fresh_by_name(parser *p, const loom_sinfo *inferred) {
  if (!p->fresh.len) return inferred;
  same_name_ud u = {p, {0}, {0}, false};
  sinfo_for_each_var(inferred, same_name_cb, &u);
  const loom_sinfo *r = u.oom ? NULL : u.from.len ? loom_graph_sinfo_subst(p->m, inferred, u.from.data, u.to.data, u.from.len) : inferred;
  LOOM_VEC_FREE(p->m->alloc, &u.from);
  LOOM_VEC_FREE(p->m->alloc, &u.to);
  return r;
}

/* Words that cannot name a variable (the printer must be able to print every name). */
bool gp_reserved(const char *name) {
  static const char *const words[] = {"return", "dataflow", "output", "if", "else", "match_cast", "fn", "const",
                                      "extern", "prim", "shape", "sym", "call_tp", "call_extern", "loop"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(name, words[i])) return true;
  return false;
}

/* binding := ident (':' sinfo)? '=' ('match_cast' '(' leaf ',' sinfo ')' | value) */
static loom_status binding(parser *p, loom_graph_binding **out) {
  loom_graph_module *m = p->m;
  size_t b = (gp_skip_ws(p), p->pos);
  const char *name;
  LOOM_PROPAGATE(gp_expect_ident(p, "a binding 'name = value', 'dataflow', 'output' or 'return'", &name));
  if (gp_reserved(name)) return gp_err(p, b, "'%s' is a reserved word and cannot name a variable", name);
  p->binding = name;
  size_t annot = 0;
  bool has_annot = gp_accept(p, ":");
  if (has_annot) {
    annot = (gp_skip_ws(p), p->pos);
    LOOM_PROPAGATE(gp_skip_to(p, '='));
  }
  LOOM_PROPAGATE(gp_expect(p, "="));
  loom_graph_binding *bd = LOOM_ARENA_NEW(&m->arena, loom_graph_binding);
  if (!bd) return LOOM_OOM();
  bd->loc = (loom_loc){p->ir_src, b};
  size_t vb = (gp_skip_ws(p), p->pos);
  const loom_sinfo *si;
  if (gp_peek_kw(p, "match_cast")) {
    const char *s;
    size_t n;
    gp_ident(p, &s, &n);
    bd->kind = LOOM_GRAPH_BIND_MATCH_CAST;
    LOOM_PROPAGATE(gp_expect(p, "("));
    LOOM_PROPAGATE(gp_leaf(p, &bd->value));
    LOOM_PROPAGATE(gp_expect(p, ","));
    size_t cb = (gp_skip_ws(p), p->pos);
    p->sym_mode = SYM_DEFINE;
    loom_status st = gp_sinfo(p, &si);
    p->sym_mode = SYM_RESOLVE;
    LOOM_PROPAGATE(st);
    LOOM_PROPAGATE(gp_expect(p, ")"));
    if (bd->value->sinfo->kind != LOOM_SINFO_OBJECT && loom_sinfo_is_base_of(m->cx, si, bd->value->sinfo) == LOOM_SYM_FALSE)
      return gp_sem_err(p, cb, LOOM_ERROR(TYPE_ERROR, "match_cast can never succeed: the value is never of this struct info"));
  } else {
    LOOM_PROPAGATE(gp_value(p, &bd->value));
    loom_graph_expr *v = bd->value;
    if (v->kind == LOOM_GRAPH_EXPR_CALL) {
      loom_graph_infer_result r;
      loom_status st = loom_graph_infer_call(m, v, name, &r);
      if (st) return gp_sem_err(p, vb, st);
      v->sinfo = r.sinfo;
      bd->nguards = r.nguards;
      bd->guards = r.guards;
      bd->guard_why = r.guard_why;
    } else {
      loom_status st = simple_sinfo(p, v);
      if (st) return gp_sem_err(p, vb, st);
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
    loom_status st = gp_sinfo(p, &decl);
    p->sym_mode = SYM_RESOLVE;
    LOOM_PROPAGATE(st);
    const loom_sinfo *inf = rename_fresh_by_name(p, si);
    if (inf) inf = rename_fresh(p, decl, inf);
    if (!inf) return LOOM_OOM();
    for (size_t k = 0; k < p->fresh.len; k++)
      if (!sinfo_uses(inf, p->fresh.data[k].val)) {
        /* Undo the definition so the message is about scope. */
        return gp_sem_err(p, annot,
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
      return gp_sem_err(p, annot, e);
    }
    /* Fresh symbols keep their declared names; otherwise the inferred info is kept (it is at
     * least as precise, and printing it is what round-trips). */
    if (p->fresh.len || bd->kind == LOOM_GRAPH_BIND_MATCH_CAST || !loom_sinfo_equal(decl, si)) {
      if (bd->kind == LOOM_GRAPH_BIND_MATCH_CAST && loom_sinfo_is_base_of(m->cx, si, decl) != LOOM_SYM_TRUE)
        return gp_sem_err(p, annot, LOOM_ERROR(TYPE_ERROR, "the annotation of a match_cast must be its target struct info"));
      si = decl;
    }
    p->pos = end;
  }
  add_fresh(p, si);
  bd->var = loom_graph_var_new(m, name, si);
  if (!bd->var) return LOOM_OOM();
  bd->var->loc = (loom_loc){p->ir_src, b};
  if (gp_lookup((const void *)&p->vars, bd->var->u.var.name))
    return gp_err(p, b, "variable '%s' is already defined (names are single-assignment)", name);
  LOOM_PROPAGATE(gp_push_name(p, &p->vars, bd->var->u.var.name, bd->var));
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
  loom_status st = gp_expect(p, "{");
  while (!st && !gp_peek_kw(p, "output")) {
    if (gp_peek(p) == '}' || p->pos >= p->len) {
      st = gp_err(p, p->pos, "a dataflow block ends with 'output NAMES'");
      break;
    }
    loom_graph_binding *b;
    st = binding(p, &b);
    if (!st && (b->value->kind == LOOM_GRAPH_EXPR_IF || b->value->kind == LOOM_GRAPH_EXPR_LOOP))
      st = gp_err(p, b->loc.offset, "'%s' is not allowed in a dataflow block (dataflow blocks are free of control flow)",
                  b->value->kind == LOOM_GRAPH_EXPR_IF ? "if" : "loop");
    if (!st && !LOOM_VEC_PUSH(m->alloc, &bs, b)) st = LOOM_OOM();
  }
  if (!st) {
    const char *s;
    size_t n;
    gp_ident(p, &s, &n);
    do {
      size_t ob = (gp_skip_ws(p), p->pos);
      const char *name;
      st = gp_expect_ident(p, "an output variable", &name);
      if (st) break;
      const loom_graph_expr *v = NULL;
      for (size_t i = mark; i < p->vars.len; i++)
        if (p->vars.data[i].name == name) v = p->vars.data[i].val;
      if (!v) {
        st = gp_err(p, ob, "'%s' is not defined in this dataflow block", name);
        break;
      }
      if (!LOOM_VEC_PUSH(m->alloc, &outs, (loom_graph_expr *)v)) st = LOOM_OOM();
    } while (!st && gp_accept(p, ","));
  }
  if (!st) st = gp_expect(p, "}");
  if (!st) {
    loom_graph_expr **o = gp_copy_exprs(p, outs.len, outs.data);
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
loom_status gp_seq(parser *p, loom_graph_seq **out) {
  loom_graph_module *m = p->m;
  binding_vec cur = {0};
  block_vec blocks = {0};
  loom_status st = LOOM_OK;
  loom_graph_seq *s = LOOM_ARENA_NEW(&m->arena, loom_graph_seq);
  if (!s) return LOOM_OOM();
  for (;;) {
    if (p->pos >= p->len || gp_peek(p) == '\0') {
      st = gp_err(p, p->pos, "expected 'return' before the end of the file");
      break;
    }
    if (gp_peek(p) == '}') {
      st = gp_err(p, p->pos, "expected 'return' before '}'");
      break;
    }
    if (gp_peek_kw(p, "return")) {
      const char *k;
      size_t n;
      gp_ident(p, &k, &n);
      if (cur.len) st = make_block(p, false, &cur, &blocks, 0, NULL);
      if (!st) st = gp_leaf(p, &s->result);
      break;
    }
    if (gp_peek_kw(p, "dataflow")) {
      const char *k;
      size_t n;
      gp_ident(p, &k, &n);
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
loom_status gp_param_list(parser *p, loom_graph_func *f) {
  loom_graph_module *m = p->m;
  LOOM_PROPAGATE(gp_expect(p, "("));
  LOOM_VEC(loom_graph_expr *) params = {0};
  loom_status st = LOOM_OK;
  while (!st && gp_peek(p) != ')') {
    size_t pb = (gp_skip_ws(p), p->pos);
    const char *name;
    const loom_sinfo *si = NULL;
    st = gp_expect_ident(p, "a parameter name", &name);
    if (!st && gp_reserved(name)) st = gp_err(p, pb, "'%s' is a reserved word and cannot name a variable", name);
    if (!st) st = gp_expect(p, ":");
    if (!st) {
      p->sym_mode = SYM_DEFINE;
      st = gp_sinfo(p, &si);
      p->sym_mode = SYM_RESOLVE;
    }
    if (!st && gp_lookup((const void *)&p->vars, name)) st = gp_err(p, pb, "parameter '%s' is given twice", name);
    if (st) break;
    loom_graph_expr *v = loom_graph_var_new(m, name, si);
    if (!v || !LOOM_VEC_PUSH(m->alloc, &params, v)) st = LOOM_OOM();
    else {
      v->loc = (loom_loc){p->ir_src, pb};
      st = gp_push_name(p, &p->vars, v->u.var.name, v);
    }
    if (!st && !gp_accept(p, ",")) break;
  }
  if (!st) st = gp_expect(p, ")");
  if (!st) {
    f->nparams = params.len;
    f->params = gp_copy_exprs(p, params.len, params.data);
    if (!f->params) st = LOOM_OOM();
  }
  LOOM_VEC_FREE(m->alloc, &params);
  LOOM_PROPAGATE(st);
  return LOOM_OK;
}

/* func := 'fn' '@' name '(' (ident ':' sinfo),* ')' '->' sinfo '{' seq '}' */
loom_status gp_func(parser *p) {
  loom_graph_module *m = p->m;
  size_t b = p->pos;
  loom_graph_func *f = LOOM_ARENA_NEW(&m->arena, loom_graph_func);
  if (!f) return LOOM_OOM();
  f->loc = (loom_loc){p->ir_src, b};
  LOOM_PROPAGATE(gp_global_name(p, &f->name));
  p->fn = f->name;
  p->vars.len = 0;
  p->syms.len = 0;
  loom_graph_func *stub = loom_graph_module_find_func(m, f->name);
  if (stub && stub->body) return gp_err(p, b, "function @%s is defined twice", f->name);
  LOOM_PROPAGATE(gp_param_list(p, f));
  LOOM_PROPAGATE(gp_expect(p, "->"));
  size_t ret_at = (gp_skip_ws(p), p->pos);
  LOOM_PROPAGATE(gp_skip_to(p, '{'));
  LOOM_PROPAGATE(gp_expect(p, "{"));
  LOOM_PROPAGATE(gp_seq(p, &f->body));
  LOOM_PROPAGATE(gp_expect(p, "}"));
  size_t end = p->pos;
  /* The declared result is read after the body: it may name symbols the body defines. */
  p->pos = ret_at;
  LOOM_PROPAGATE(gp_sinfo(p, &f->ret));
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
    return gp_sem_err(p, ret_at, e);
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

/* Formats a struct-info-like description of a file's tensor: [768, 768] of F32. */
static void weights_desc(const loom_safetensors_tensor *t, char *buf, size_t cap) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < t->rank && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
  if (k < cap) snprintf(buf + k, cap - k, "] of %s", loom_safetensors_dtype_name(t->dtype));
}

/* weights := 'weights' '(' STRING ',' STRING ')'    (the 'weights' keyword already read)
 * Constant @name of struct info si points into the mapped file (no copy); its dtype and shape must
 * be the file's. */
static loom_status weights_ref(parser *p, size_t b, const char *name, const loom_sinfo *si) {
  loom_graph_module *m = p->m;
  const char *file, *tensor;
  LOOM_PROPAGATE(gp_expect(p, "("));
  size_t fb = (gp_skip_ws(p), p->pos);
  LOOM_PROPAGATE(gp_string_lit(p, &file));
  LOOM_PROPAGATE(gp_expect(p, ","));
  size_t tb = (gp_skip_ws(p), p->pos);
  LOOM_PROPAGATE(gp_string_lit(p, &tensor));
  LOOM_PROPAGATE(gp_expect(p, ")"));
  loom_safetensors *f;
  loom_status st = loom_graph_module_weights(m, file, &f);
  if (st) {
    loom_status e = gp_err(p, fb, "constant @%s: %s", name, loom_status_message(st));
    loom_status_free(st);
    return e;
  }
  const loom_safetensors_tensor *t = loom_safetensors_find(f, tensor);
  if (!t) return gp_err(p, tb, "constant @%s: weights file '%s' has no tensor '%s'", name, loom_safetensors_path(f), tensor);
  bool same = t->dtype == si->dtype && t->rank == si->ndim;
  for (int i = 0; same && i < si->ndim; i++) {
    int64_t d;
    same = loom_sym_is_const(si->dims[i], &d) && d == t->dims[i];
  }
  if (!same) {
    char want[512], have[512];
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_sinfo_print(si, &sb);
    snprintf(want, sizeof want, "%s", sb.oom ? "?" : loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    weights_desc(t, have, sizeof have);
    return gp_err(p, b, "constant @%s is declared %s, but tensor '%s' of '%s' is %s", name, want, tensor,
                  loom_safetensors_path(f), have);
  }
  loom_graph_expr *e;
  if ((uintptr_t)t->data % loom_dtype_size(t->dtype) == 0) {
    e = loom_graph_const_borrow(m, si, t->data, t->nbytes);
  } else {
    e = loom_graph_const_new(m, si, t->data, t->nbytes); /* a file laid out by another writer: copy */
  }
  if (!e) return LOOM_OOM();
  e->loc = (loom_loc){p->ir_src, b};
  LOOM_PROPAGATE(loom_graph_module_add_const(m, name, e));
  return loom_graph_module_const_set_weights(m, loom_graph_module_num_consts(m) - 1, file, tensor);
}

/* const := 'const' '@' name ':' sinfo '=' ('[' number,* ']' | weights) */
loom_status gp_constant(parser *p) {
  loom_graph_module *m = p->m;
  size_t b = (gp_skip_ws(p), p->pos);
  const char *name;
  const loom_sinfo *si;
  LOOM_PROPAGATE(gp_global_name(p, &name));
  if (gp_find_const(p, name)) return gp_err(p, b, "constant @%s is defined twice", name);
  LOOM_PROPAGATE(gp_expect(p, ":"));
  p->syms.len = 0;
  size_t sb = (gp_skip_ws(p), p->pos);
  LOOM_PROPAGATE(gp_sinfo(p, &si));
  if (si->kind != LOOM_SINFO_TENSOR || !si->dims || si->dtype == LOOM_DTYPE_UNKNOWN)
    return gp_err(p, sb, "a constant needs a Tensor struct info with a constant shape and dtype");
  LOOM_PROPAGATE(gp_expect(p, "="));
  if (gp_peek_kw(p, "weights")) {
    const char *kw;
    size_t kn;
    (void)gp_ident(p, &kw, &kn);
    for (int i = 0; i < si->ndim; i++)
      if (!loom_sym_is_const(si->dims[i], NULL)) return gp_err(p, sb, "a constant needs a constant shape");
    return weights_ref(p, b, name, si);
  }
  size_t numel = 1;
  for (int i = 0; i < si->ndim; i++) {
    int64_t d;
    if (!loom_sym_is_const(si->dims[i], &d) || d < 0 || !loom_size_mul(numel, (size_t)d, &numel) || numel > (1u << 26))
      return gp_err(p, sb, "a constant needs a constant shape (at most 2^26 elements written inline; larger ones go in a weights file)");
  }
  LOOM_PROPAGATE(gp_expect(p, "["));
  size_t es = loom_dtype_size(si->dtype);
  loom_graph_tensor t = {.dtype = si->dtype, .numel = numel};
  t.data = loom_arena_alloc(&m->arena, numel * es + 1, 16);
  if (!t.data) return LOOM_OOM();
  size_t i = 0;
  while (gp_peek(p) != ']') {
    double d;
    bool is_int;
    int64_t iv = 0;
    size_t nb = (gp_skip_ws(p), p->pos);
    LOOM_PROPAGATE(gp_number(p, &d, &is_int, &iv));
    if (i >= numel) return gp_err(p, nb, "constant @%s has more than %zu values", name, numel);
    if (is_int) loom_graph_tensor_set_i64(&t, i, iv);
    else loom_graph_tensor_set_f64(&t, i, d);
    i++;
    if (!gp_accept(p, ",")) break;
  }
  LOOM_PROPAGATE(gp_expect(p, "]"));
  if (i != numel) return gp_err(p, b, "constant @%s has %zu values, its shape needs %zu", name, i, numel);
  loom_graph_expr *e = loom_graph_const_new(m, si, t.data, numel * es);
  if (!e) return LOOM_OOM();
  e->loc = (loom_loc){p->ir_src, b};
  return loom_graph_module_add_const(m, name, e);
}

/* verify.c — the well-formedness checker. Rules (each message names the function, the
 * binding and the problem):
 *   scope      every var used is a param or bound earlier and visible (dataflow blocks
 *              export only their outputs); a var is bound once
 *   symbols    every symbolic var used is defined before: in a param's struct info, a
 *              match_cast target, or as a fresh symbol an op introduces (nonzero)
 *   anf        call arguments, tuple fields, if conditions and results are leaves
 *   dataflow   dataflow blocks hold no `if` or `loop` and no call of an extern not declared `pure`
 *   sinfo      each binding's struct info agrees with re-inference (which also checks
 *              attributes and call signatures); the function result fits its declared info
 *   loop       its iteration var and locals are new; each initial value can fit its carried
 *              var's struct info, and so can each next value the body returns */
#include <stdio.h>
#include <string.h>

#include "graph/graph_internal.h"

typedef struct vctx {
  loom_graph_module *m;
  loom_diag_list *diags;
  const loom_graph_func *f;
  LOOM_VEC(const loom_graph_expr *) vars;  /* in scope */
  LOOM_VEC(const loom_graph_expr *) bound; /* every var bound so far (single assignment) */
  LOOM_VEC(const loom_sym_expr *) syms;    /* symbolic vars defined */
  size_t errors;
} vctx;

static void report(vctx *v, const loom_graph_binding *b, loom_loc loc, const char *fmt, ...) LOOM_PRINTF(4, 5);
static void report(vctx *v, const loom_graph_binding *b, loom_loc loc, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (b)
    loom_diag_add(v->diags, LOOM_DIAG_ERROR, loc, "in @%s, binding '%s': %s", v->f->name, b->var->u.var.name, msg);
  else
    loom_diag_add(v->diags, LOOM_DIAG_ERROR, loc, "in @%s: %s", v->f->name, msg);
  v->errors++;
}

static bool has(const void *vec, const void *x) {
  const LOOM_VEC(const void *) *v = vec;
  for (size_t i = 0; i < v->len; i++)
    if (v->data[i] == x) return true;
  return false;
}

static void push(vctx *v, void *vec, const void *x) {
  LOOM_VEC(const void *) *vv = vec;
  if (!LOOM_VEC_PUSH(v->m->alloc, vv, x)) v->diags->oom = true;
}

/* ---- symbols ---------------------------------------------------------------------------- */

typedef struct sym_walk {
  vctx *v;
  bool define;           /* add unknown vars */
  const loom_sym_expr *bad; /* first undefined var */
} sym_walk;

static void sym_cb(void *ud, const loom_sym_expr *var) {
  sym_walk *w = ud;
  if (has(&w->v->syms, var)) return;
  if (w->define) push(w->v, &w->v->syms, var);
  else if (!w->bad) w->bad = var;
}

static void walk_sym(sym_walk *w, const loom_sym_expr *e) {
  if (e) loom_sym_for_each_var(e, sym_cb, w);
}

static void walk_sinfo(sym_walk *w, const loom_sinfo *si) {
  if (!si) return;
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) walk_sym(w, si->dims[i]);
  walk_sym(w, si->value);
  for (size_t i = 0; i < si->nfields; i++) walk_sinfo(w, si->fields[i]);
  walk_sinfo(w, si->ret);
}

static void use_syms_sinfo(vctx *v, const loom_graph_binding *b, loom_loc loc, const loom_sinfo *si, const char *where) {
  sym_walk w = {v, false, NULL};
  walk_sinfo(&w, si);
  if (w.bad)
    report(v, b, loc, "symbolic variable '%s' in %s is not defined here (define it in a parameter or a match_cast)",
           loom_sym_var_name(w.bad), where);
}

/* Every dim of an annotation can be a size: none is negative for every value of its
 * variables (`(b, -784)`, `(n - n - 1)`); the loader, the VM and the kernels rely on it. */
static void check_dims(vctx *v, const loom_graph_binding *b, loom_loc loc, const loom_sinfo *si, const char *where) {
  if (!si) return;
  for (int i = 0; si->dims && i < si->ndim; i++) {
    loom_sym_interval iv = loom_sym_bounds(v->m->cx, si->dims[i]);
    if (iv.hi_inf || iv.hi >= 0) continue;
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_sym_print(si->dims[i], &sb);
    report(v, b, loc, "%s: axis %d is %s, negative for every value of its variables (a dim is a size, >= 0)", where, i,
           loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
  }
  for (size_t i = 0; i < si->nfields; i++) check_dims(v, b, loc, si->fields[i], where);
  check_dims(v, b, loc, si->ret, where);
}

/* ---- expressions ---------------------------------------------------------------------------- */

static void check_leaf(vctx *v, const loom_graph_binding *b, const loom_graph_expr *e, const char *what) {
  if (!loom_graph_expr_is_leaf(e)) {
    report(v, b, e->loc.src ? e->loc : b->loc, "%s is not a leaf (the IR is in A-normal form: bind it first)", what);
    return;
  }
  if (e->kind == LOOM_GRAPH_EXPR_VAR && !has(&v->vars, e))
    report(v, b, e->loc.src ? e->loc : b->loc, "variable '%s' is used outside its scope", e->u.var.name);
  sym_walk w = {v, false, NULL};
  if (e->kind == LOOM_GRAPH_EXPR_SHAPE)
    for (size_t i = 0; i < e->u.shape.n; i++) walk_sym(&w, e->u.shape.dims[i]);
  if (e->kind == LOOM_GRAPH_EXPR_SYM) walk_sym(&w, e->u.sym);
  if (w.bad) report(v, b, b->loc, "symbolic variable '%s' is not defined here", loom_sym_var_name(w.bad));
}

static void verify_seq(vctx *v, const loom_graph_seq *s);
static void sinfo_text(const loom_sinfo *si, char *buf, size_t cap);

/* The loop rule (see the banner); `b` binds loop `e`. Re-inference (loom_graph_loop_infer) has
 * checked the kinds of the count, the condition and the body's result; `inferred` is its
 * result (NULL when it failed), whose carried fields are the params' struct info with the
 * locals fresh: what an initial or next value is checked against (a local is bound anew by
 * each iteration: acc (k, 4) takes a next value (k + 1, 4)). */
static void verify_loop(vctx *v, const loom_graph_binding *b, const loom_graph_expr *e, const loom_sinfo *inferred) {
  loom_graph_module *m = v->m;
  char a[256], c[256], what[96];
  if (e->u.loop.count) check_leaf(v, b, e->u.loop.count, "the loop's count");
  if (e->u.loop.cond) check_leaf(v, b, e->u.loop.cond, "the loop's condition");
  for (size_t i = 0; i < e->u.loop.ncarry; i++) {
    snprintf(what, sizeof what, "the initial value of '%s'", e->u.loop.params[i]->u.var.name);
    check_leaf(v, b, e->u.loop.inits[i], what);
  }
  size_t vmark = v->vars.len, smark = v->syms.len;
  for (size_t k = 0; k <= e->u.loop.nlocals; k++) {
    const loom_sym_expr *s = k ? e->u.loop.locals[k - 1] : e->u.loop.iter;
    if (has(&v->syms, s))
      report(v, b, b->loc, "symbolic variable '%s' of the loop is defined outside it (a loop's iteration var and locals are its own)",
             loom_sym_var_name(s));
    push(v, &v->syms, s);
  }
  for (size_t i = 0; i < e->u.loop.ncarry; i++) {
    const loom_graph_expr *p = e->u.loop.params[i], *init = e->u.loop.inits[i];
    snprintf(what, sizeof what, "loop-carried '%s'", p->u.var.name);
    if (p->kind != LOOM_GRAPH_EXPR_VAR || has(&v->bound, p)) report(v, b, b->loc, "%s is bound twice", what);
    use_syms_sinfo(v, b, b->loc, p->sinfo, what);
    check_dims(v, b, b->loc, p->sinfo, what);
    const loom_sinfo *any = inferred ? inferred->fields[i] : p->sinfo;
    if (init->sinfo && init->sinfo->kind != LOOM_SINFO_OBJECT && loom_sinfo_is_base_of(m->cx, any, init->sinfo) == LOOM_SYM_FALSE) {
      sinfo_text(p->sinfo, a, sizeof a);
      sinfo_text(init->sinfo, c, sizeof c);
      report(v, b, b->loc, "%s is %s, but its initial value is %s: it can never fit", what, a, c);
    }
    push(v, &v->vars, p);
    push(v, &v->bound, p);
  }
  verify_seq(v, e->u.loop.body);
  const loom_graph_expr *res = e->u.loop.body->result;
  const loom_sinfo *rt = res ? res->sinfo : NULL;
  size_t hc = e->u.loop.cond ? 1 : 0, nc = e->u.loop.ncarry;
  if (rt && rt->kind == LOOM_SINFO_TUPLE && rt->nfields >= hc + nc) {
    for (size_t i = 0; i < nc; i++) {
      const loom_graph_expr *p = e->u.loop.params[i];
      const loom_sinfo *nx = rt->fields[hc + i], *any = inferred ? inferred->fields[i] : p->sinfo;
      if (nx->kind != LOOM_SINFO_OBJECT && loom_sinfo_is_base_of(m->cx, any, nx) == LOOM_SYM_FALSE) {
        sinfo_text(p->sinfo, a, sizeof a);
        sinfo_text(nx, c, sizeof c);
        report(v, b, b->loc, "loop-carried '%s' is %s, but the body's next value for it (result field %zu) is %s: it can never fit",
               p->u.var.name, a, hc + i, c);
      }
    }
  }
  v->vars.len = vmark;
  v->syms.len = smark;
}

/* Positions where `inferred` has a var not yet defined (a fresh symbol) and `declared` has a
 * var: the declared one stands for it. */
static const loom_sinfo *rename_fresh(vctx *v, const loom_sinfo *declared, const loom_sinfo *inferred) {
  if (declared->kind == LOOM_SINFO_TUPLE && inferred->kind == LOOM_SINFO_TUPLE && declared->nfields == inferred->nfields) {
    /* item by item (topk, unique: Tuples whose extents are fresh) */
    const loom_sinfo **f = LOOM_ARENA_ARRAY(loom_graph_module_arena(v->m), const loom_sinfo *, inferred->nfields ? inferred->nfields : 1);
    if (!f) return inferred;
    bool changed = false;
    for (size_t i = 0; i < inferred->nfields; i++) {
      f[i] = rename_fresh(v, declared->fields[i], inferred->fields[i]);
      changed = changed || f[i] != inferred->fields[i];
    }
    const loom_sinfo *r = changed ? loom_sinfo_tuple(v->m, inferred->nfields, f) : inferred;
    return r ? r : inferred;
  }
  if (!declared->dims || !inferred->dims || declared->ndim != inferred->ndim || declared->kind != inferred->kind ||
      (inferred->kind != LOOM_SINFO_TENSOR && inferred->kind != LOOM_SINFO_SHAPE))
    return inferred;
  const loom_sym_expr **d = loom_graph_dims_new(v->m, (size_t)inferred->ndim);
  if (!d) return inferred;
  bool changed = false;
  for (int i = 0; i < inferred->ndim; i++) {
    d[i] = inferred->dims[i];
    if (loom_sym_is_var(inferred->dims[i]) && !has(&v->syms, inferred->dims[i]) && loom_sym_is_var(declared->dims[i]) &&
        !has(&v->syms, declared->dims[i])) {
      d[i] = declared->dims[i];
      changed = true;
    }
  }
  if (!changed) return inferred;
  const loom_sinfo *r = inferred->kind == LOOM_SINFO_TENSOR
                            ? loom_sinfo_tensor(v->m, inferred->dtype, inferred->ndim, d, inferred->device)
                            : loom_sinfo_shape(v->m, inferred->ndim, d);
  return r ? r : inferred;
}

static void sinfo_text(const loom_sinfo *si, char *buf, size_t cap) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_sinfo_print(si, &sb);
  snprintf(buf, cap, "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
}

static void verify_binding(vctx *v, const loom_graph_block *blk, const loom_graph_binding *b) {
  const loom_graph_expr *e = b->value;
  loom_graph_module *m = v->m;
  if (!b->var || b->var->kind != LOOM_GRAPH_EXPR_VAR || !b->var->sinfo) {
    loom_diag_add(v->diags, LOOM_DIAG_ERROR, b->loc, "in @%s: a binding without a variable or struct info", v->f->name);
    v->errors++;
    return;
  }
  if (has(&v->bound, b->var)) report(v, b, b->loc, "the variable is bound twice");
  check_dims(v, b, b->loc, b->var->sinfo, "its type");
  if (!e) {
    report(v, b, b->loc, "the binding has no value");
    return;
  }
  const loom_sinfo *inferred = NULL;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    for (size_t i = 0; i < e->u.call.nargs; i++) {
      char what[64];
      snprintf(what, sizeof what, "argument %zu", i);
      check_leaf(v, b, e->u.call.args[i], what);
    }
    for (size_t i = 0; i < e->u.call.nattrs; i++)
      if (e->u.call.attrs[i].kind == LOOM_GRAPH_ATTR_SYMS) {
        sym_walk w = {v, false, NULL};
        for (size_t k = 0; k < e->u.call.attrs[i].n; k++) walk_sym(&w, e->u.call.attrs[i].syms[k]);
        if (w.bad)
          report(v, b, b->loc, "symbolic variable '%s' in attribute '%s' is not defined here", loom_sym_var_name(w.bad),
                 e->u.call.attrs[i].name);
      }
    if (e->u.call.callee == LOOM_GRAPH_CALLEE_EXTERN && blk->dataflow) {
      const loom_graph_extern *ex = loom_graph_module_find_extern(m, e->u.call.target);
      if (!ex || !ex->decl || !ex->decl->pure)
        report(v, b, b->loc, "external call @%s inside a dataflow block (the extern is not declared pure)",
               e->u.call.target);
    }
    if (e->u.call.out_sinfo) use_syms_sinfo(v, b, b->loc, e->u.call.out_sinfo, "the call's result struct info");
    {
      loom_graph_infer_result r;
      loom_status st = loom_graph_infer_call(m, e, b->var->u.var.name, &r);
      if (st) {
        report(v, b, b->loc, "%s", loom_status_message(st));
        loom_status_free(st);
        return;
      }
      inferred = r.sinfo;
    }
    break;
  case LOOM_GRAPH_EXPR_TUPLE:
    for (size_t i = 0; i < e->u.tuple.n; i++) check_leaf(v, b, e->u.tuple.items[i], "a tuple field");
    inferred = e->sinfo;
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET:
    check_leaf(v, b, e->u.get.tuple, "the tuple of a tuple-get");
    if (e->u.get.tuple->sinfo->kind != LOOM_SINFO_TUPLE || e->u.get.index >= e->u.get.tuple->sinfo->nfields)
      report(v, b, b->loc, "tuple-get .%zu of a value that is not a tuple with that many fields", e->u.get.index);
    else inferred = e->u.get.tuple->sinfo->fields[e->u.get.index];
    break;
  case LOOM_GRAPH_EXPR_LOOP: {
    if (blk->dataflow) report(v, b, b->loc, "'loop' inside a dataflow block (dataflow blocks are free of control flow)");
    loom_status st = loom_graph_loop_infer(m, e, b->var->u.var.name, &inferred);
    if (st) {
      report(v, b, b->loc, "%s", loom_status_message(st));
      loom_status_free(st);
      inferred = NULL;
    }
    verify_loop(v, b, e, inferred);
    break;
  }
  case LOOM_GRAPH_EXPR_IF: {
    if (blk->dataflow) report(v, b, b->loc, "'if' inside a dataflow block (dataflow blocks are free of control flow)");
    check_leaf(v, b, e->u.if_.cond, "the condition");
    size_t vmark = v->vars.len, smark = v->syms.len;
    verify_seq(v, e->u.if_.then_seq);
    v->vars.len = vmark;
    v->syms.len = smark;
    verify_seq(v, e->u.if_.else_seq);
    v->vars.len = vmark;
    v->syms.len = smark;
    inferred = e->sinfo;
    break;
  }
  default:
    check_leaf(v, b, e, "the value");
    inferred = e->sinfo;
    break;
  }
  const loom_sinfo *si = b->var->sinfo;
  if (b->kind == LOOM_GRAPH_BIND_MATCH_CAST) {
    /* The cast target defines its symbols. */
    if (inferred && inferred->kind != LOOM_SINFO_OBJECT && loom_sinfo_is_base_of(m->cx, si, inferred) == LOOM_SYM_FALSE) {
      char a[256], c[256];
      sinfo_text(si, a, sizeof a);
      sinfo_text(inferred, c, sizeof c);
      report(v, b, b->loc, "match_cast to %s can never succeed: the value is %s", a, c);
    }
    sym_walk w = {v, true, NULL};
    walk_sinfo(&w, si);
  } else if (inferred) {
    const loom_sinfo *inf = rename_fresh(v, si, inferred);
    /* Fresh symbols the op introduced are defined by this binding. */
    sym_walk w = {v, false, NULL};
    walk_sinfo(&w, si);
    if (w.bad && inf != inferred) {
      sym_walk d = {v, true, NULL};
      walk_sinfo(&d, inf);
      w.bad = NULL;
      walk_sinfo(&w, si);
    }
    if (w.bad)
      report(v, b, b->loc, "symbolic variable '%s' in the struct info is not defined here (define it in a parameter or a match_cast)",
             loom_sym_var_name(w.bad));
    else if (loom_sinfo_is_base_of(m->cx, si, inf) != LOOM_SYM_TRUE) {
      char a[256], c[256];
      sinfo_text(si, a, sizeof a);
      sinfo_text(inf, c, sizeof c);
      report(v, b, b->loc, "struct info %s disagrees with re-inference %s", a, c);
    }
  }
  push(v, &v->vars, b->var);
  push(v, &v->bound, b->var);
}

static void verify_seq(vctx *v, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++) {
    const loom_graph_block *blk = s->blocks[i];
    size_t mark = v->vars.len;
    for (size_t j = 0; j < blk->n; j++) verify_binding(v, blk, blk->bindings[j]);
    if (blk->dataflow) {
      for (size_t j = 0; j < blk->noutputs; j++) {
        bool in_block = false;
        for (size_t k = 0; k < blk->n; k++)
          if (blk->bindings[k]->var == blk->outputs[j]) in_block = true;
        if (!in_block)
          report(v, NULL, v->f->loc, "dataflow output '%s' is not bound in its block", blk->outputs[j]->u.var.name);
      }
      size_t k = mark;
      for (size_t j = mark; j < v->vars.len; j++) {
        bool keep = false;
        for (size_t o = 0; o < blk->noutputs; o++)
          if (blk->outputs[o] == v->vars.data[j]) keep = true;
        if (keep) v->vars.data[k++] = v->vars.data[j];
      }
      v->vars.len = k;
    }
  }
  if (!s->result) {
    report(v, NULL, v->f->loc, "a body without a result");
    return;
  }
  if (!loom_graph_expr_is_leaf(s->result)) report(v, NULL, v->f->loc, "the result is not a leaf");
  else if (s->result->kind == LOOM_GRAPH_EXPR_VAR && !has(&v->vars, s->result))
    report(v, NULL, v->f->loc, "the result '%s' is used outside its scope", s->result->u.var.name);
}

static void verify_func(vctx *v, const loom_graph_func *f) {
  v->f = f;
  v->vars.len = v->bound.len = v->syms.len = 0;
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_graph_expr *p = f->params[i];
    if (has(&v->vars, p)) report(v, NULL, f->loc, "parameter '%s' appears twice", p->u.var.name);
    push(v, &v->vars, p);
    push(v, &v->bound, p);
    sym_walk w = {v, true, NULL};
    walk_sinfo(&w, p->sinfo);
    char where[160];
    snprintf(where, sizeof where, "parameter '%s'", p->u.var.name);
    check_dims(v, NULL, p->loc.src ? p->loc : f->loc, p->sinfo, where);
  }
  check_dims(v, NULL, f->loc, f->ret, "the declared result");
  if (!f->body) { /* a declaration never defined (the parser refuses those; a module built in code may not) */
    report(v, NULL, f->loc, "function @%s has no body", f->name);
    return;
  }
  verify_seq(v, f->body);
  if (f->body->result && f->ret && f->body->result->sinfo) {
    use_syms_sinfo(v, NULL, f->loc, f->ret, "the declared result");
    if (loom_sinfo_is_base_of(v->m->cx, f->ret, f->body->result->sinfo) != LOOM_SYM_TRUE) {
      char a[256], c[256];
      sinfo_text(f->ret, a, sizeof a);
      sinfo_text(f->body->result->sinfo, c, sizeof c);
      report(v, NULL, f->loc, "declared result %s but the function returns %s", a, c);
    }
  }
}

loom_status loom_graph_verify(loom_graph_module *m, loom_diag_list *diags) {
  vctx v = {.m = m, .diags = diags};
  for (size_t i = 0; i < m->funcs.len; i++) verify_func(&v, m->funcs.data[i]);
  LOOM_VEC_FREE(m->alloc, &v.vars);
  LOOM_VEC_FREE(m->alloc, &v.bound);
  LOOM_VEC_FREE(m->alloc, &v.syms);
  if (diags->oom) return LOOM_OOM();
  return v.errors ? loom_diag_list_status(diags, LOOM_CODE_TYPE_ERROR) : LOOM_OK;
}

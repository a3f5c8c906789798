/* pass_fuse_merge.c — one fused group of calls as one program (pass_fuse_internal.h): the
 * group's buffers named without clashes, the calls merged (loom_tp_merge), the intermediates
 * inlined (loom_tp_inline_locals), or for an epilogue group moved into the matmul's output
 * loop (loom_tp_fuse_epilogue). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pass_fuse_internal.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_fuse.h"

/* ---- names inside merged programs ------------------------------------------------------ */

typedef LOOM_VEC(const char *) name_vec;

static bool has_name(const name_vec *v, const char *s) {
  for (size_t i = 0; i < v->len; i++)
    if (!strcmp(v->data[i], s)) return true;
  return false;
}

/* Loop variables, lets and local buffers of a program body: merged buffers must not
 * shadow them (the text format has one namespace per program). */
static void body_names(fuser *fz, const loom_tp_stmt *s, name_vec *out) {
  const char *n = NULL;
  switch (s->kind) {
  case LOOM_TP_STMT_SEQ:
    for (size_t i = 0; i < s->u.seq.n; i++) body_names(fz, s->u.seq.items[i], out);
    return;
  case LOOM_TP_STMT_FOR:
    n = loom_sym_var_name(s->u.loop.var);
    body_names(fz, s->u.loop.body, out);
    break;
  case LOOM_TP_STMT_LET:
    n = s->u.let.name;
    break;
  case LOOM_TP_STMT_IF:
    body_names(fz, s->u.if_.then_s, out);
    if (s->u.if_.else_s) body_names(fz, s->u.if_.else_s, out);
    return;
  case LOOM_TP_STMT_ALLOC:
    n = s->u.alloc->name;
    break;
  default:
    return;
  }
  if (n && !has_name(out, n) && !LOOM_VEC_PUSH(fz->m->alloc, out, n)) fz->oom = true;
}

/* Words of the program text a buffer may not be called. */
static bool reserved_word(const char *s) {
  static const char *const words[] = {"prim",   "for",    "in",     "let",   "if",    "else",     "alloc",
                                      "reduce", "true",   "false",  "inf",   "nan",   "select",   "Buffer",
                                      "Local",  "Shared", "i64",    "barrier", "prefetch"};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (!strcmp(s, words[i])) return true;
  loom_dtype dt;
  if (loom_dtype_parse(s, strlen(s), &dt)) return true;
  for (int op = 0; op < LOOM_TP_OP_COUNT; op++)
    if (!strcmp(s, loom_tp_op_spelling((loom_tp_op)op))) return true;
  for (int k = 0; k < LOOM_TP_LOOP_KIND_COUNT; k++)
    if (!strcmp(s, loom_tp_loop_kind_name((loom_tp_loop_kind)k))) return true;
  return false;
}

static bool plain_identifier(const char *s) {
  if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_')) return false;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_')) return false;
  return strlen(s) < 64;
}

/* A name for a group buffer: the graph var's name when it is free, else `base_N`. */
static const char *pick_name(fuser *fz, loom_arena *a, const char *want, const char *fallback, name_vec *taken) {
  const char *base = want && plain_identifier(want) && !reserved_word(want) ? want : fallback;
  const char *n = loom_arena_strdup(a, base);
  for (unsigned k = 1; n && has_name(taken, n); k++) n = loom_arena_printf(a, "%s_%u", base, k);
  if (!n || !LOOM_VEC_PUSH(fz->m->alloc, taken, n)) {
    fz->oom = true;
    return NULL;
  }
  return n;
}

/* ---- merging a group ------------------------------------------------------------------- */

/* The value of a scalar argument, or NULL. */
static const loom_sym_expr *scalar_value(const loom_graph_expr *e) {
  if (e->kind == LOOM_GRAPH_EXPR_SYM) return e->u.sym;
  if (e->sinfo && e->sinfo->kind == LOOM_SINFO_SCALAR) return e->sinfo->value;
  return NULL;
}

static bool tensor_known(const loom_sinfo *si) {
  return si && si->kind == LOOM_SINFO_TENSOR && si->dtype != LOOM_DTYPE_UNKNOWN && si->ndim >= 0 &&
         (si->ndim == 0 || si->dims);
}

bool loom_fuse_same_leaf(const loom_graph_expr *a, const loom_graph_expr *b) {
  if (a->kind == LOOM_GRAPH_EXPR_VAR && b->kind == LOOM_GRAPH_EXPR_VAR) return a->u.var.id == b->u.var.id;
  return a == b;
}

typedef struct sym_collect {
  fuser *fz;
  LOOM_VEC(const loom_sym_expr *) v;
} sym_collect;

static void collect_cb(void *ud, const loom_sym_expr *var) {
  sym_collect *c = ud;
  for (size_t i = 0; i < c->v.len; i++)
    if (c->v.data[i] == var) return;
  if (!LOOM_VEC_PUSH(c->fz->m->alloc, &c->v, var)) c->fz->oom = true;
}


/* The index in mem[0..n) of the member binding `e` (a var), or -1. */
static int member_index(const loom_graph_block *blk, const size_t *mem, size_t n, const loom_graph_expr *e) {
  if (e->kind != LOOM_GRAPH_EXPR_VAR) return -1;
  for (size_t j = 0; j < n; j++)
    if (blk->bindings[mem[j]]->var->u.var.id == e->u.var.id) return (int)j;
  return -1;
}

loom_status loom_fuse_merge_group(fuser *fz, const loom_graph_block *blk, const size_t *mem, size_t n, bool epilogue,
                                  loom_arena *a, const char *name, merged *out, bool *ok) {
  *ok = false;
  loom_status st = LOOM_OK;
  const loom_graph_binding *root = blk->bindings[mem[n - 1]];
  loom_tp_group_buf bufs[MAX_INPUTS + MAX_GROUP];
  const loom_graph_expr *leaf_of[MAX_INPUTS + MAX_GROUP]; /* the graph value each buffer holds */
  loom_tp_group_call calls[MAX_GROUP];
  size_t nbufs = 0, ninputs = 0;
  name_vec taken = {0};
  sym_collect syms = {fz, {0}};

  /* Which member defines a var (its index in mem), or -1. */
#define MEMBER_OF(e) member_index(blk, mem, n, (e))
  /* 1. External inputs, in order of first use. */
  for (size_t j = 0; j < n; j++) {
    const loom_graph_expr *c = blk->bindings[mem[j]]->value;
    const loom_tp_func *tp = loom_fuse_prog_of(fz, blk->bindings[mem[j]]);
    if (!tp || tp->nparams != c->u.call.nargs + 1 || !tp->params[tp->nparams - 1].is_buffer) goto done;
    for (size_t i = 0; i < c->u.call.nargs; i++) {
      const loom_graph_expr *e = c->u.call.args[i];
      if (!tp->params[i].is_buffer) {
        if (!scalar_value(e)) goto done;
        continue;
      }
      if (!tensor_known(e->sinfo) || (e->kind != LOOM_GRAPH_EXPR_VAR && e->kind != LOOM_GRAPH_EXPR_CONST)) goto done;
      if (MEMBER_OF(e) >= 0) continue;
      bool seen = false;
      for (size_t k = 0; k < ninputs && !seen; k++) seen = loom_fuse_same_leaf(leaf_of[k], e);
      if (seen) continue;
      if (ninputs == MAX_INPUTS) goto done;
      leaf_of[ninputs++] = e;
    }
  }
  /* 2. Intermediates (members but the root), then the root's result, last. */
  nbufs = ninputs;
  for (size_t j = 0; j < n; j++) {
    const loom_graph_expr *v = blk->bindings[mem[j]]->var;
    if (!tensor_known(v->sinfo)) goto done;
    leaf_of[nbufs++] = v;
  }
  /* 3. Names: no clash with the group's symbols or the members' loops, lets and locals. */
  for (size_t k = 0; k < nbufs; k++) {
    const loom_sinfo *si = leaf_of[k]->sinfo;
    for (int d = 0; d < si->ndim; d++) loom_sym_for_each_var(si->dims[d], collect_cb, &syms);
  }
  for (size_t j = 0; j < n; j++) {
    const loom_graph_expr *c = blk->bindings[mem[j]]->value;
    for (size_t i = 0; i < c->u.call.nargs; i++)
      if (c->u.call.args[i]->kind == LOOM_GRAPH_EXPR_SYM || c->u.call.args[i]->sinfo->kind == LOOM_SINFO_SCALAR)
        loom_sym_for_each_var(scalar_value(c->u.call.args[i]), collect_cb, &syms);
    body_names(fz, loom_fuse_prog_of(fz, blk->bindings[mem[j]])->body, &taken);
  }
  if (fz->oom) goto oom;
  for (size_t k = 0; k < syms.v.len; k++) {
    const char *sn = loom_sym_var_name(syms.v.data[k]);
    if (has_name(&taken, sn)) goto done; /* a shape symbol named like a loop variable */
    if (!LOOM_VEC_PUSH(fz->m->alloc, &taken, sn)) goto oom;
  }
  /* The fused call stands at the root: each symbol it passes must be defined above it. */
  {
    scope_probe p = {fz, loom_fuse_pos_of(fz, root), true};
    for (size_t k = 0; k < syms.v.len; k++) loom_fuse_scope_cb(&p, syms.v.data[k]);
    if (!p.ok) goto done;
  }
  for (size_t k = 0; k < nbufs; k++) {
    const loom_graph_expr *e = leaf_of[k];
    char fallback[16];
    snprintf(fallback, sizeof fallback, k < ninputs ? "in%zu" : "t%zu", k);
    const char *nm = pick_name(fz, a, e->kind == LOOM_GRAPH_EXPR_VAR ? e->u.var.name : NULL, fallback, &taken);
    if (!nm) goto oom;
    bufs[k] = (loom_tp_group_buf){nm, e->sinfo->dtype, e->sinfo->ndim, e->sinfo->dims, k < ninputs || k + 1 == nbufs};
  }
  /* 4. The calls. */
  for (size_t j = 0; j < n; j++) {
    const loom_graph_binding *b = blk->bindings[mem[j]];
    const loom_graph_expr *c = b->value;
    const loom_tp_func *tp = loom_fuse_prog_of(fz, b);
    size_t *ba = LOOM_ARENA_ARRAY(a, size_t, tp->nparams);
    const loom_sym_expr **sa = LOOM_ARENA_ARRAY(a, const loom_sym_expr *, tp->nparams);
    if (!ba || !sa) goto oom;
    for (size_t i = 0; i < tp->nparams; i++) {
      sa[i] = NULL;
      ba[i] = 0;
      if (i + 1 == tp->nparams) {
        ba[i] = ninputs + j;
      } else if (!tp->params[i].is_buffer) {
        sa[i] = scalar_value(c->u.call.args[i]);
      } else {
        const loom_graph_expr *e = c->u.call.args[i];
        int mj = MEMBER_OF(e);
        if (mj >= 0) {
          ba[i] = ninputs + (size_t)mj;
        } else {
          for (size_t k = 0; k < ninputs; k++)
            if (loom_fuse_same_leaf(leaf_of[k], e)) ba[i] = k;
        }
      }
    }
    calls[j] = (loom_tp_group_call){tp, ba, sa};
  }
#undef MEMBER_OF
  loom_tp_func *f = NULL;
  st = loom_tp_merge(a, fz->cx, name, bufs, nbufs, calls, n, &f);
  if (st) {
    if (loom_status_code(st) == LOOM_CODE_RESOURCE_EXHAUSTED) goto done;
    loom_status_free(st); /* a shape the merge cannot prove equal: not one program */
    st = LOOM_OK;
    goto done;
  }
  size_t inlined = 0;
  /* an epilogue group is a matmul and one elementwise program: no intermediate to inline (the
   * matmul's own Locals, int8 pair words, must stay) */
  if (!epilogue && (st = loom_tp_inline_locals(a, fz->cx, f, &inlined))) goto done;
  if (!epilogue && inlined != n - 1) goto done;
  if (epilogue) {
    bool moved = false;
    if ((st = loom_tp_fuse_epilogue(a, fz->cx, f, &moved)) || !moved) goto done;
  }
  /* One body is left, wrapped in the merge's sequence: unwrap it, so the schedule rules see
   * its loop nests at the top as in any generated program. */
  while (f->body->kind == LOOM_TP_STMT_SEQ && f->body->u.seq.n == 1 && f->body->u.seq.items[0]->kind == LOOM_TP_STMT_SEQ)
    f->body = f->body->u.seq.items[0];
  if ((st = loom_tp_verify(fz->cx, f))) {
    /* A member that is ill-formed on its own (a program the verifier rejects but codegen
     * takes) is not fused; an ill-formed merge of well-formed members is a bug here. */
    bool members_ok = true;
    for (size_t j = 0; j < n && members_ok; j++) {
      loom_status ms = loom_tp_verify(fz->cx, loom_fuse_prog_of(fz, blk->bindings[mem[j]]));
      members_ok = !ms;
      loom_status_free(ms);
    }
    if (!members_ok) {
      loom_status_free(st);
      st = LOOM_OK;
      goto done;
    }
    st = loom_status_annotate(st, __FILE__, __LINE__, "fuse: the merged program of the group rooted at '%s' is ill-formed",
                              root->var->u.var.name);
    goto done;
  }
  out->prog = f;
  out->ninputs = ninputs;
  memcpy(out->inputs, leaf_of, ninputs * sizeof *leaf_of);
  *ok = true;
  goto done;
oom:
  st = LOOM_OOM();
done:
  LOOM_VEC_FREE(fz->m->alloc, &taken);
  LOOM_VEC_FREE(fz->m->alloc, &syms.v);
  return st;
}

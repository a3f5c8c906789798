/* legalize.c — the legalize pass (see legalize.h): each operator call lowered through its
 * record's expand hook, then its legalize hook (graph_internal.h), which its family's file
 * fills; the program cache the hooks make their programs through (loom_legal_program); and the
 * helpers the hooks share (legalize_internal.h). No operator is named here: what the pass skips
 * (views, ops the VM runs) it reads from the registry's flags. */
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"
#include "tensorprog/tp_ir.h"

loom_status loom_legal_unsupported(const loom_graph_expr *call, const char *why) {
  return LOOM_ERROR(UNIMPLEMENTED, "%s: no legalization %s", loom_graph_op_name(call->u.call.op), why);
}

loom_status loom_legal_runtime_operand(const loom_graph_expr *call, const char *what) {
  return LOOM_ERROR(UNIMPLEMENTED, "%s: no legalization for a run-time %s operand as one program (the legalize pass expands it: legalize_expand.c)",
                    loom_graph_op_name(call->u.call.op), what);
}

loom_status loom_graph_legal_guard(loom_graph_module *m, loom_graph_legal *r, const loom_sym_expr *cond, const char *why) {
  int64_t v;
  if (!cond) return loom_sym_ctx_take_error(loom_graph_module_sym(m));
  if (loom_sym_is_const(cond, &v) && v) return LOOM_OK;
  if (r->nguards == LOOM_GRAPH_LEGAL_MAX_GUARDS) return LOOM_ERROR(INTERNAL, "legalize: more than %d guards", LOOM_GRAPH_LEGAL_MAX_GUARDS);
  const char *w = loom_arena_strdup(loom_graph_module_arena(m), why);
  if (!w) return LOOM_OOM();
  r->guards[r->nguards] = cond;
  r->guard_why[r->nguards++] = w;
  return LOOM_OK;
}

loom_status loom_graph_legal_attach_guards(loom_graph_module *m, const loom_graph_legal *r, loom_graph_binding *b) {
  if (!r->nguards) return LOOM_OK;
  loom_arena *ar = loom_graph_module_arena(m);
  const loom_sym_expr **g = LOOM_ARENA_ARRAY(ar, const loom_sym_expr *, b->nguards + r->nguards);
  const char **w = LOOM_ARENA_ARRAY(ar, const char *, b->nguards + r->nguards);
  if (!g || !w) return LOOM_OOM();
  size_t n = 0;
  for (size_t k = 0; k < b->nguards; k++, n++) g[n] = b->guards[k], w[n] = b->guard_why ? b->guard_why[k] : "";
  for (size_t k = 0; k < r->nguards; k++) {
    bool dup = false; /* interned: equal conditions are one pointer */
    for (size_t j = 0; j < n && !dup; j++) dup = g[j] == r->guards[k];
    if (!dup) g[n] = r->guards[k], w[n++] = r->guard_why[k];
  }
  b->guards = g;
  b->guard_why = w;
  b->nguards = n;
  return LOOM_OK;
}

/* The name a message gives operand i of call: its variable's ("operand 1 'ids'"), or its index. */
void loom_legal_operand_name(const loom_graph_expr *call, size_t i, char *buf, size_t cap) {
  const loom_graph_expr *a = i < call->u.call.nargs ? call->u.call.args[i] : NULL;
  if (a && a->kind == LOOM_GRAPH_EXPR_VAR) snprintf(buf, cap, "operand %zu '%s'", i, a->u.var.name);
  else snprintf(buf, cap, "operand %zu", i);
}

loom_status loom_legal_tensor_arg(const loom_graph_expr *call, size_t i, const loom_sinfo **out) {
  if (i >= call->u.call.nargs) return loom_legal_unsupported(call, "(missing operand)");
  const loom_sinfo *s = call->u.call.args[i]->sinfo;
  if (!s || s->kind != LOOM_SINFO_TENSOR || s->ndim < 0 || !s->dims || s->dtype == LOOM_DTYPE_UNKNOWN)
    return loom_legal_unsupported(call, "for operands of unknown rank, dims or dtype");
  if (s->ndim > LOOM_TP_GEN_MAX_RANK) return loom_legal_unsupported(call, "above rank 8");
  *out = s;
  return LOOM_OK;
}

loom_status loom_legal_axis_arg(const loom_graph_expr *call, const loom_sinfo **x, int *axis) {
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, x));
  if (!loom_legal_norm_axis(loom_graph_call_int(call, "axis"), (*x)->ndim, axis)) return loom_legal_unsupported(call, "for this axis");
  return LOOM_OK;
}

/* The cache is a list searched by key: a module holds some hundreds of programs, and a lookup
 * costs one compare of 64 bits per entry. */
loom_status loom_legal_program(loom_graph_module *m, const char *name, loom_graph_gen_fn gen, const void *params, size_t size,
                               loom_tp_func **tp) {
  uint64_t key = loom_tp_gen_key(params, size);
  for (size_t i = 0; i < m->generated.len; i++) {
    const loom_graph_generated *g = &m->generated.data[i];
    if (g->key == key && g->gen == gen && g->size == size && !memcmp(g->params, params, size)) {
      *tp = g->tp;
      return LOOM_OK;
    }
  }
  char unique[300];
  const char *nm = name;
  for (int k = 2; loom_graph_module_find_tp(m, nm); k++) {
    snprintf(unique, sizeof unique, "%s_%d", name, k);
    nm = unique;
  }
  LOOM_PROPAGATE(gen(m, nm, params, tp));
  void *copy = loom_arena_alloc(loom_graph_module_arena(m), size ? size : 1, 8);
  if (!copy) return LOOM_OOM();
  if (size) memcpy(copy, params, size);
  loom_graph_generated g = {key, gen, copy, size, *tp};
  if (!LOOM_VEC_PUSH(m->alloc, &m->generated, g)) return LOOM_OOM();
  return loom_graph_module_add_tp(m, *tp);
}

/* Broadcast mode of each axis of `in` against the output dims (aligned right). Appends a
 * letter per axis to `key` (F, 1, G). */
void loom_legal_bcast_modes(loom_sym_ctx *cx, const loom_sinfo *in, const loom_sym_expr *const *out_dims, int out_rank,
                            loom_tp_bcast *modes, char *key, size_t cap) {
  for (int j = 0; j < in->ndim; j++) {
    const loom_sym_expr *od = out_dims[j + out_rank - in->ndim];
    int64_t c;
    if (loom_sym_prove_eq(cx, in->dims[j], od) == LOOM_SYM_TRUE) modes[j] = LOOM_TP_BCAST_FULL;
    else if (loom_sym_is_const(in->dims[j], &c) && c == 1) modes[j] = LOOM_TP_BCAST_ONE;
    else modes[j] = LOOM_TP_BCAST_GUARD;
    size_t n = strlen(key);
    if (n + 1 < cap) {
      key[n] = modes[j] == LOOM_TP_BCAST_FULL ? 'F' : modes[j] == LOOM_TP_BCAST_ONE ? '1' : 'G';
      key[n + 1] = '\0';
    }
  }
}

/* Normalises an axis given possibly negative. */
bool loom_legal_norm_axis(int64_t ax, int ndim, int *out) {
  if (ax < 0) ax += ndim;
  if (ax < 0 || ax >= ndim) return false;
  *out = (int)ax;
  return true;
}

/* A float attribute as a literal of dtype t. */
void loom_legal_literal(loom_dtype t, double v, char *buf, size_t cap) {
  if (t == LOOM_DTYPE_BOOL) snprintf(buf, cap, "%s", v != 0 ? "true" : "false");
  else if (loom_dtype_is_float(t)) {
    snprintf(buf, cap, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strncat(buf, ".0", cap - strlen(buf) - 1);
  } else snprintf(buf, cap, "%lld", (long long)v);
}

loom_status loom_graph_legalize_call(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                     loom_graph_legal *result) {
  memset(result, 0, sizeof *result);
  if (call->kind != LOOM_GRAPH_EXPR_CALL || call->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return LOOM_ERROR(INVALID_ARGUMENT, "legalize: not an operator call");
  if (!out || out->kind != LOOM_SINFO_TENSOR || out->dtype == LOOM_DTYPE_UNKNOWN)
    return loom_legal_unsupported(call, "for a non-tensor result");
  loom_graph_legalize_fn legalize = loom_graph_op_impl_of(call->u.call.op)->legalize;
  if (!legalize) return loom_legal_unsupported(call, "yet");
  return legalize(m, call, out, result);
}

loom_status loom_legal_lower_call(loom_graph_module *m, const loom_graph_expr *v, loom_graph_binding *b, loom_graph_expr **out) {
  loom_graph_legal lg;
  LOOM_PROPAGATE(loom_graph_legalize_call(m, v, v->sinfo, &lg));
  LOOM_PROPAGATE(loom_graph_legal_attach_guards(m, &lg, b));
  loom_tp_func *tp = lg.tp;
  loom_arena *ar = loom_graph_module_arena(m);
  loom_graph_expr *call = LOOM_ARENA_NEW(ar, loom_graph_expr);
  if (!call) return LOOM_OOM();
  *call = *v;
  if (lg.nscalars) {
    /* Scalar parameters follow the tensor arguments, as sym(...) leaves. */
    size_t n = v->u.call.nargs + lg.nscalars;
    loom_graph_expr **args = LOOM_ARENA_ARRAY(ar, loom_graph_expr *, n);
    if (!args) return LOOM_OOM();
    for (size_t k = 0; k < v->u.call.nargs; k++) args[k] = v->u.call.args[k];
    for (size_t k = 0; k < lg.nscalars; k++)
      if (!(args[v->u.call.nargs + k] = loom_graph_sym_new(m, lg.scalars[k]))) return LOOM_OOM();
    call->u.call.args = args;
    call->u.call.nargs = n;
  }
  call->u.call.callee = LOOM_GRAPH_CALLEE_TP;
  call->u.call.target = loom_graph_module_intern(m, loom_tp_func_name(tp), strlen(loom_tp_func_name(tp)));
  call->u.call.nattrs = 0;
  call->u.call.attrs = NULL;
  call->u.call.out_sinfo = v->sinfo;
  if (!call->u.call.target) return LOOM_OOM();
  *out = call;
  return LOOM_OK;
}

/* Whether call v takes or makes a string tensor: such calls have no tensor program (op_string.c). */
static bool touches_string(const loom_graph_expr *v) {
  for (size_t k = 0; k < v->u.call.nargs; k++)
    if (loom_sinfo_holds_string(v->u.call.args[k]->sinfo)) return true;
  return loom_sinfo_holds_string(v->sinfo);
}

/* Rewrites the bindings of one sequence (and of nested if branches and loop bodies). */
static loom_status legalize_seq(loom_graph_module *m, loom_graph_seq *seq, loom_diag_list *diags, size_t *done,
                                size_t *kept) {
  for (size_t bi = 0; bi < seq->nblocks; bi++) {
    loom_graph_block *blk = seq->blocks[bi];
    for (size_t i = 0; i < blk->n; i++) {
      loom_graph_binding *b = blk->bindings[i];
      loom_graph_expr *v = b->value;
      if (v->kind == LOOM_GRAPH_EXPR_IF) {
        LOOM_PROPAGATE(legalize_seq(m, v->u.if_.then_seq, diags, done, kept));
        LOOM_PROPAGATE(legalize_seq(m, v->u.if_.else_seq, diags, done, kept));
        continue;
      }
      if (v->kind == LOOM_GRAPH_EXPR_LOOP) {
        LOOM_PROPAGATE(legalize_seq(m, v->u.loop.body, diags, done, kept));
        continue;
      }
      if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP) continue;
      /* views keep their op: the VM gives them the input's memory (loom_graph_op_is_view);
       * so do the ops the VM runs itself (tensor_to_shape: MATCHV reads the values) */
      unsigned flags = loom_graph_op_flags(v->u.call.op);
      if (((flags & LOOM_GRAPH_OPF_VIEW) && v->u.call.nargs == 1) || (flags & LOOM_GRAPH_OPF_VM)) continue;
      bool expanded = false;
      loom_status s = touches_string(v) ? LOOM_ERROR(UNIMPLEMENTED, "%s: string tensors run on the host, through the interpreter's implementation (docs/vm.md \"Host operators\")",
                                                     loom_graph_op_name(v->u.call.op))
                                        : loom_legalize_expand(m, blk, i, &expanded);
      if (!s && !expanded) {
        loom_graph_expr *call;
        s = loom_legal_lower_call(m, v, b, &call);
        if (!s) b->value = call;
      }
      if (s && loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED) {
        if (diags) loom_diag_add(diags, LOOM_DIAG_NOTE, v->loc, "kept as an operator: %s", loom_status_message(s));
        loom_status_free(s);
        (*kept)++;
        continue;
      }
      LOOM_PROPAGATE(s);
      (*done)++;
    }
  }
  return LOOM_OK;
}

loom_status loom_graph_legalize(loom_graph_module *m, loom_diag_list *diags, size_t *out_legalized, size_t *out_kept) {
  size_t done = 0, kept = 0;
  for (size_t i = 0; i < loom_graph_module_num_funcs(m); i++)
    LOOM_RETURN_IF_ERROR(legalize_seq(m, loom_graph_module_func_at(m, i)->body, diags, &done, &kept),
                         "while legalizing @%s", loom_graph_module_func_at(m, i)->name);
  if (out_legalized) *out_legalized = done;
  if (out_kept) *out_kept = kept;
  return LOOM_OK;
}

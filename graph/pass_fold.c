/* pass_fold.c — constant folding and shape computations (loom_graph_fold).
 *
 * Three rules, tried on each binding in order:
 *   1. op(x, shape(d0, ..)) -> op(x, shape=[d0, ..])  for reshape, zeros, ones, full: a
 *      Shape literal operand becomes the `shape` attribute (the form legalization lowers);
 *   2. y = op(c0, c1, ..)  with every operand a constant (tensor constants, Shape / sym
 *      literals of constant value), every attribute constant, every guard constant true and
 *      a result of constant shape with at most LOOM_GRAPH_FOLD_MAX_ELEMS elements (any
 *      number for a one-pass op whose result is no larger than its operands: fold_large):
 *      the op's reference implementation (the interpreter's) computes y once; a 0-d result
 *      becomes an inline `const(v, dtype)`, a larger one a module constant `@<fn>_<y>`;
 *   3. y: Shape[(d0, ..)] = ...  ->  shape(d0, ..), and y: Scalar[i64, e] = ... -> sym(e),
 *      for operator calls, call_tp and tuple-gets: a value its struct info determines is a
 *      symbolic literal, never a runtime computation. shape_of(x) of x: Tensor[(b, s), f32]
 *      becomes shape(b, s). The literal replaces y's uses only where its symbols are in scope
 *      (they are: y's struct info was made from symbols defined before y). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/pass_internal.h"

static bool sym_const(const loom_sym_expr *e, int64_t *v) { return e && loom_sym_is_const(e, v); }

/* Rule 1. */
static loom_status shape_operand_to_attr(loom_pass *p, loom_graph_binding *b) {
  loom_graph_expr *v = b->value;
  if (v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP) return LOOM_OK;
  loom_graph_op op = v->u.call.op;
  size_t si;
  if (op == LOOM_GRAPH_OP_RESHAPE && v->u.call.nargs == 2) si = 1;
  else if ((op == LOOM_GRAPH_OP_ZEROS || op == LOOM_GRAPH_OP_ONES || op == LOOM_GRAPH_OP_FULL) && v->u.call.nargs == 1) si = 0;
  else return LOOM_OK;
  const loom_graph_expr *s = v->u.call.args[si];
  if (s->kind != LOOM_GRAPH_EXPR_SHAPE || v->u.call.nattrs >= 15) return LOOM_OK;
  loom_graph_attr attrs[16];
  memcpy(attrs, v->u.call.attrs, v->u.call.nattrs * sizeof *attrs);
  attrs[v->u.call.nattrs] = loom_graph_attr_syms(p->m, "shape", s->u.shape.n, s->u.shape.dims);
  if (!attrs[v->u.call.nattrs].name || !attrs[v->u.call.nattrs].syms) return LOOM_OOM();
  loom_graph_expr *c = loom_pass_call_copy(p->m, v, si, v->u.call.args, v->u.call.nattrs + 1, attrs);
  if (!c) return LOOM_OOM();
  bool ok;
  return loom_pass_set_value(p, b, c, &ok);
}

/* The value of a constant operand; false when it is not one. */
static bool const_value(const loom_graph_expr *e, loom_graph_value *out, loom_status *st) {
  memset(out, 0, sizeof *out);
  *st = LOOM_OK;
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_CONST: {
    const loom_sinfo *si = e->sinfo;
    int64_t sh[8];
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || si->ndim > 8 || (si->ndim && !si->dims)) return false;
    if (loom_dtype_is_string(si->dtype)) return false; /* string calls are not folded (their bytes have owners) */
    for (int i = 0; i < si->ndim; i++)
      if (!sym_const(si->dims[i], &sh[i])) return false;
    if ((*st = loom_graph_value_tensor(si->dtype, si->ndim, sh, out))) return false;
    memcpy(out->t.data, e->u.cnst.data, out->t.numel * loom_dtype_size(si->dtype));
    return true;
  }
  case LOOM_GRAPH_EXPR_SHAPE: {
    int64_t d[8];
    if (e->u.shape.n > 8) return false;
    for (size_t i = 0; i < e->u.shape.n; i++)
      if (!sym_const(e->u.shape.dims[i], &d[i])) return false;
    out->kind = LOOM_SINFO_SHAPE;
    out->n = e->u.shape.n;
    out->dims = malloc(8 * sizeof *out->dims);
    if (!out->dims) {
      *st = LOOM_OOM();
      return false;
    }
    memcpy(out->dims, d, out->n * sizeof *d);
    return true;
  }
  case LOOM_GRAPH_EXPR_SYM:
    if (!sym_const(e->u.sym, &out->i)) return false;
    out->kind = LOOM_SINFO_SCALAR;
    out->sdtype = LOOM_DTYPE_I64;
    out->f = (double)out->i;
    return true;
  default:
    return false;
  }
}

/* Rule 2 beyond LOOM_GRAPH_FOLD_MAX_ELEMS elements: operators whose reference costs about one
 * pass over its operands (elementwise, broadcast, injective: permute_dims, reshape, slices,
 * casts; reductions), when the result has no more bytes than the constant tensor operands
 * together. A constant weight's transposition (Gemm's transB, `x @ w.T`) or its cast is then
 * computed once here, not on every call, and the module does not grow: the folded constant
 * replaces its operands, which dce removes when nothing else uses them. Contractions
 * (matmul, conv: a sum per element) and opaque ops keep the limit. */
static bool fold_large(const loom_graph_expr *v, size_t out_bytes) {
  loom_tp_pattern k = loom_graph_op_pattern(v->u.call.op);
  if (k != LOOM_TP_PATTERN_ELEMWISE && k != LOOM_TP_PATTERN_BROADCAST && k != LOOM_TP_PATTERN_INJECTIVE &&
      k != LOOM_TP_PATTERN_REDUCTION)
    return false;
  size_t in_bytes = 0;
  for (size_t i = 0; i < v->u.call.nargs; i++) {
    const loom_graph_expr *a = v->u.call.args[i];
    if (a->kind == LOOM_GRAPH_EXPR_CONST) in_bytes += a->u.cnst.nbytes;
  }
  return out_bytes <= in_bytes;
}

/* Rule 2. */
static loom_status fold_constant(loom_pass *p, loom_graph_binding *b, bool *drop) {
  const loom_graph_expr *v = b->value;
  const loom_sinfo *si = b->var->sinfo;
  if (b->kind != LOOM_GRAPH_BIND_VAR || v->kind != LOOM_GRAPH_EXPR_CALL || v->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return LOOM_OK;
  if (si->kind != LOOM_SINFO_TENSOR || si->dtype == LOOM_DTYPE_UNKNOWN || loom_dtype_is_string(si->dtype) || si->ndim < 0 ||
      si->ndim > 8 || (si->ndim && !si->dims))
    return LOOM_OK;
  int64_t shape[8];
  size_t numel = 1;
  for (int i = 0; i < si->ndim; i++) {
    if (!sym_const(si->dims[i], &shape[i]) || shape[i] < 0) return LOOM_OK;
    if (__builtin_mul_overflow(numel, (size_t)shape[i], &numel)) return LOOM_OK;
  }
  if (numel > LOOM_GRAPH_FOLD_MAX_ELEMS && !fold_large(v, numel * loom_dtype_size(si->dtype))) return LOOM_OK;
  for (size_t i = 0; i < b->nguards; i++) {
    int64_t g;
    if (!sym_const(b->guards[i], &g) || !g) return LOOM_OK;
  }
  for (size_t i = 0; i < v->u.call.nattrs; i++) {
    const loom_graph_attr *a = &v->u.call.attrs[i];
    int64_t c;
    if (a->kind == LOOM_GRAPH_ATTR_SYMS)
      for (size_t k = 0; k < a->n; k++)
        if (!sym_const(a->syms[k], &c)) return LOOM_OK;
  }
  size_t n = v->u.call.nargs;
  loom_graph_value args[16];
  if (n > 16) return LOOM_OK;
  size_t made = 0;
  loom_status st = LOOM_OK;
  bool all = true;
  for (; made < n && all; made++) {
    all = const_value(v->u.call.args[made], &args[made], &st);
    if (!all) loom_graph_value_free(&args[made]);
  }
  if (!all) made--;
  loom_graph_value out;
  memset(&out, 0, sizeof out);
  loom_sym_env *env = NULL;
  if (all && !st) st = loom_sym_env_create(p->m->alloc, &env);
  if (all && !st) {
    loom_graph_ecx ec = {.m = p->m, .call = v, .env = env, .op = loom_graph_op_name(v->u.call.op)};
    loom_status es = loom_graph_op_impl_of(v->u.call.op)->eval(&ec, args, &out);
    if (es) {
      /* Data the op rejects (an index out of range, ...) stays a runtime error. */
      if (loom_status_code(es) == LOOM_CODE_RESOURCE_EXHAUSTED) st = es;
      else loom_status_free(es);
      all = false;
    }
  }
  loom_sym_env_destroy(env);
  for (size_t i = 0; i < made; i++) loom_graph_value_free(&args[i]);
  if (st || !all) {
    loom_graph_value_free(&out);
    return st;
  }
  bool fits = out.kind == LOOM_SINFO_TENSOR && out.t.dtype == si->dtype && out.t.ndim == si->ndim;
  for (int i = 0; fits && i < si->ndim; i++) fits = out.t.shape[i] == shape[i];
  if (!fits) {
    loom_graph_value_free(&out);
    return LOOM_OK;
  }
  loom_graph_expr *c = loom_graph_const_new(p->m, si, out.t.data, out.t.numel * loom_dtype_size(si->dtype));
  loom_graph_value_free(&out);
  if (!c) return LOOM_OOM();
  if (si->ndim > 0) {
    char name[256];
    LOOM_PROPAGATE(loom_graph_module_add_const(p->m, loom_pass_const_name(p, b->var->u.var.name, name, sizeof name), c));
  }
  bool ok;
  loom_pass_replace_var(p, b, c, &ok);
  *drop = ok;
  return LOOM_OK;
}

/* Rule 3. */
static loom_status fold_shape(loom_pass *p, loom_graph_binding *b, bool *drop) {
  const loom_graph_expr *v = b->value;
  const loom_sinfo *si = b->var->sinfo;
  if (b->kind != LOOM_GRAPH_BIND_VAR) return LOOM_OK;
  bool pure = v->kind == LOOM_GRAPH_EXPR_TUPLE_GET ||
              (v->kind == LOOM_GRAPH_EXPR_CALL &&
               (v->u.call.callee == LOOM_GRAPH_CALLEE_OP || v->u.call.callee == LOOM_GRAPH_CALLEE_TP));
  if (!pure) return LOOM_OK;
  loom_graph_expr *lit = NULL;
  if (si->kind == LOOM_SINFO_SHAPE && si->ndim >= 0 && (si->dims || si->ndim == 0))
    lit = loom_graph_shape_new(p->m, (size_t)si->ndim, si->dims);
  else if (si->kind == LOOM_SINFO_SCALAR && si->value && si->dtype == LOOM_DTYPE_I64)
    lit = loom_graph_sym_new(p->m, si->value);
  else return LOOM_OK;
  if (!lit) return LOOM_OOM();
  bool ok;
  loom_pass_replace_var(p, b, lit, &ok);
  *drop = ok;
  return LOOM_OK;
}

static loom_status visit(loom_pass *p, loom_graph_binding *b, bool *drop) {
  LOOM_PROPAGATE(shape_operand_to_attr(p, b));
  LOOM_PROPAGATE(fold_constant(p, b, drop));
  if (*drop) return LOOM_OK;
  return fold_shape(p, b, drop);
}

loom_status loom_graph_fold(loom_graph_module *m, size_t *out_changed) {
  loom_pass p = {.m = m, .visit = visit};
  LOOM_PROPAGATE(loom_pass_run(&p));
  if (out_changed) *out_changed = p.changed;
  return LOOM_OK;
}

/* interp.c — the reference interpreter: runs a graph function on concrete values.
 *
 * Naive on purpose (it is the oracle compiled code is checked against): every binding
 * is evaluated in order into a fresh value; symbolic vars are bound from the argument
 * shapes with loom_sym_bind; every guard inference recorded is evaluated before its
 * binding runs, and every result is checked against its binding's struct info (which
 * also binds fresh symbols such as nonzero's count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "tensorprog/tp_ir.h"

typedef struct interp {
  loom_graph_module *m;
  loom_sym_env *env;
  loom_graph_value *vals; /* by var id */
  bool *set;
  size_t nvals;
  const char *fn;
  int depth;
} interp;

loom_status loom_graph_ecx_sym(loom_graph_ecx *ec, const loom_sym_expr *e, int64_t *out) {
  return loom_sym_eval(loom_graph_module_sym(ec->m), e, ec->env, out);
}

static const char *kind_name(loom_sinfo_kind k) {
  static const char *const n[] = {"an object", "a scalar", "a shape", "a tensor", "a tuple", "a function", "a list"};
  return n[k];
}

/* Checks (and binds) a value against struct info. `what` names it for messages. */
static loom_status check_value(interp *it, const loom_sinfo *si, const loom_graph_value *v, const char *what) {
  loom_sym_ctx *cx = it->m->cx;
  if (si->kind == LOOM_SINFO_OBJECT) return LOOM_OK;
  if (si->kind != v->kind)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected %s, got %s", what, kind_name(si->kind), kind_name(v->kind));
  switch (si->kind) {
  case LOOM_SINFO_TENSOR: {
    if (si->dtype != LOOM_DTYPE_UNKNOWN && si->dtype != v->t.dtype)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected dtype %s, got %s", what, loom_dtype_name(si->dtype),
                        loom_dtype_name(v->t.dtype));
    if (si->ndim >= 0 && si->ndim != v->t.ndim)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected rank %d, got %d", what, si->ndim, v->t.ndim);
    if (si->dims && si->ndim > 0) return loom_sym_bind(cx, si->dims, v->t.shape, (size_t)si->ndim, it->env, what);
    return LOOM_OK;
  }
  case LOOM_SINFO_SHAPE:
    if (si->ndim >= 0 && (size_t)si->ndim != v->n)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected a shape of %d dims, got %zu", what, si->ndim, v->n);
    if (si->dims && si->ndim > 0) return loom_sym_bind(cx, si->dims, v->dims, (size_t)si->ndim, it->env, what);
    return LOOM_OK;
  case LOOM_SINFO_SCALAR:
    if (si->value) return loom_sym_bind(cx, &si->value, &v->i, 1, it->env, what);
    return LOOM_OK;
  case LOOM_SINFO_TUPLE:
    if (si->nfields != v->n)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected a tuple of %zu, got %zu", what, si->nfields, v->n);
    for (size_t i = 0; i < v->n; i++) {
      char w[256];
      snprintf(w, sizeof w, "%s field %zu", what, i);
      LOOM_PROPAGATE(check_value(it, si->fields[i], &v->items[i], w));
    }
    return LOOM_OK;
  case LOOM_SINFO_LIST:
    /* items may differ in shape: only their kind, dtype and rank are checked (no binding) */
    if (si->optional && v->n > 1)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected an optional (at most one item), got a list of %zu", what, v->n);
    for (size_t i = 0; i < v->n; i++) {
      char w[256];
      snprintf(w, sizeof w, "%s item %zu", what, i);
      const loom_graph_value *x = &v->items[i];
      const loom_sinfo *ri = si->ret;
      if (ri->kind != x->kind)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected %s, got %s", w, kind_name(ri->kind), kind_name(x->kind));
      if (ri->kind == LOOM_SINFO_TENSOR && ri->dtype != LOOM_DTYPE_UNKNOWN && ri->dtype != x->t.dtype)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected dtype %s, got %s", w, loom_dtype_name(ri->dtype),
                          loom_dtype_name(x->t.dtype));
      if (ri->kind == LOOM_SINFO_TENSOR && ri->ndim >= 0 && ri->ndim != x->t.ndim)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: expected rank %d, got %d", w, ri->ndim, x->t.ndim);
      if (ri->kind == LOOM_SINFO_LIST) LOOM_PROPAGATE(check_value(it, (const loom_sinfo *)ri, x, w));
    }
    if (si->value) {
      int64_t n = (int64_t)v->n;
      return loom_sym_bind(it->m->cx, &si->value, &n, 1, it->env, what);
    }
    return LOOM_OK;
  default:
    return LOOM_OK;
  }
}

static loom_status eval_seq(interp *it, const loom_graph_seq *s, loom_graph_value *out);
static loom_status run_func(loom_graph_module *m, const loom_graph_func *f, size_t nargs, const loom_graph_value *args,
                            loom_sym_env *env, int depth, loom_graph_value *out);

static loom_status leaf_value(interp *it, const loom_graph_expr *e, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  switch (e->kind) {
  case LOOM_GRAPH_EXPR_VAR:
    if (e->u.var.id >= it->nvals || !it->set[e->u.var.id])
      return LOOM_ERROR(INTERNAL, "variable '%s' has no value", e->u.var.name);
    return loom_graph_value_copy(&it->vals[e->u.var.id], out);
  case LOOM_GRAPH_EXPR_CONST: {
    const loom_sinfo *si = e->sinfo;
    int64_t sh[8];
    if (si->ndim > 8) return LOOM_ERROR(UNIMPLEMENTED, "constant of rank %d", si->ndim);
    for (int i = 0; i < si->ndim; i++) loom_sym_is_const(si->dims[i], &sh[i]);
    LOOM_PROPAGATE(loom_graph_value_tensor(si->dtype, si->ndim, sh, out));
    if (si->dtype == LOOM_DTYPE_STRING) return loom_graph_tensor_copy_strs(&out->t, 0, e->u.cnst.data, out->t.numel);
    memcpy(out->t.data, e->u.cnst.data, out->t.numel * loom_dtype_size(si->dtype));
    return LOOM_OK;
  }
  case LOOM_GRAPH_EXPR_SHAPE:
    out->kind = LOOM_SINFO_SHAPE;
    out->n = e->u.shape.n;
    out->dims = malloc((out->n ? out->n : 1) * sizeof *out->dims);
    if (!out->dims) return LOOM_OOM();
    for (size_t i = 0; i < out->n; i++) LOOM_PROPAGATE(loom_sym_eval(it->m->cx, e->u.shape.dims[i], it->env, &out->dims[i]));
    return LOOM_OK;
  case LOOM_GRAPH_EXPR_SYM:
    out->kind = LOOM_SINFO_SCALAR;
    out->sdtype = LOOM_DTYPE_I64;
    LOOM_PROPAGATE(loom_sym_eval(it->m->cx, e->u.sym, it->env, &out->i));
    out->f = (double)out->i;
    return LOOM_OK;
  default:
    return LOOM_ERROR(INTERNAL, "expected a leaf expression");
  }
}

/* call_tp(@prog, (args), sinfo) in destination-passing style: the call's arguments fill the
 * program's parameters in order (tensors to buffers, scalar leaves to i64 parameters); the
 * program's LAST buffer parameter is the destination, allocated here from `sinfo` evaluated
 * under the bound symbols. The program runs in the tensor-program interpreter. */
static loom_status run_tp(interp *it, const loom_graph_expr *c, const loom_graph_value *args, size_t n,
                          loom_graph_value *out) {
  loom_graph_module *m = it->m;
  const loom_tp_func *tp = loom_graph_module_find_tp(m, c->u.call.target);
  if (!tp) return LOOM_ERROR(NOT_FOUND, "unknown tensor program @%s", c->u.call.target);
  const loom_sinfo *os = c->u.call.out_sinfo;
  if (!os || os->kind != LOOM_SINFO_TENSOR || os->ndim < 0 || !os->dims || os->ndim > 8)
    return LOOM_ERROR(UNIMPLEMENTED, "call_tp(@%s): the interpreter needs a tensor result of known shape", tp->name);
  if (n + 1 != tp->nparams)
    return LOOM_ERROR(INVALID_ARGUMENT, "call_tp(@%s): %zu arguments for a program of %zu parameters (the last is the result)",
                      tp->name, n, tp->nparams);
  if (!tp->params[tp->nparams - 1].is_buffer)
    return LOOM_ERROR(INVALID_ARGUMENT, "call_tp(@%s): the last parameter must be the result buffer", tp->name);
  int64_t shape[8];
  for (int d = 0; d < os->ndim; d++) LOOM_PROPAGATE(loom_sym_eval(m->cx, os->dims[d], it->env, &shape[d]));
  LOOM_PROPAGATE(loom_graph_value_tensor(os->dtype, os->ndim, shape, out));
  loom_tp_arg *targs = malloc(tp->nparams * sizeof *targs);
  loom_status st = targs ? LOOM_OK : LOOM_OOM();
  for (size_t i = 0; i < n && !st; i++) {
    const loom_tp_param *prm = &tp->params[i];
    if (prm->is_buffer && args[i].kind == LOOM_SINFO_TENSOR)
      targs[i] = (loom_tp_arg){args[i].t.data, args[i].t.shape, 0};
    else if (!prm->is_buffer && args[i].kind == LOOM_SINFO_SCALAR)
      targs[i] = (loom_tp_arg){NULL, NULL, args[i].i};
    else
      st = LOOM_ERROR(TYPE_ERROR, "call_tp(@%s): argument %zu does not match parameter '%s'", tp->name, i,
                      prm->is_buffer ? prm->buf->name : prm->scalar.name);
  }
  if (!st) {
    targs[n] = (loom_tp_arg){out->t.data, out->t.shape, 0};
    st = loom_tp_interpret(m->cx, tp, targs, n + 1);
  }
  free(targs);
  if (st) loom_graph_value_free(out);
  return st;
}

static loom_status eval_call(interp *it, const loom_graph_binding *b, loom_graph_value *out) {
  const loom_graph_expr *c = b->value;
  loom_graph_module *m = it->m;
  /* Guards first: they are what made the struct info exact. */
  for (size_t i = 0; i < b->nguards; i++) {
    int64_t v;
    LOOM_PROPAGATE(loom_sym_eval(m->cx, b->guards[i], it->env, &v));
    if (!v) {
      char *g = loom_sym_to_string(b->guards[i]);
      loom_status st = LOOM_ERROR(INVALID_ARGUMENT, "guard failed: %s (%s)", b->guard_why ? b->guard_why[i] : "",
                                  g ? g : "?");
      free(g);
      return st;
    }
  }
  size_t n = c->u.call.nargs;
  loom_graph_value *args = calloc(n ? n : 1, sizeof *args);
  bool *owned = calloc(n ? n : 1, sizeof *owned);
  if (!args || !owned) {
    free(args);
    free(owned);
    return LOOM_OOM();
  }
  loom_status st = LOOM_OK;
  /* Vars are borrowed (ops never modify their operands); literals are made fresh. */
  for (size_t i = 0; i < n && !st; i++) {
    const loom_graph_expr *a = c->u.call.args[i];
    if (a->kind == LOOM_GRAPH_EXPR_VAR && a->u.var.id < it->nvals && it->set[a->u.var.id]) {
      args[i] = it->vals[a->u.var.id];
    } else {
      st = leaf_value(it, a, &args[i]);
      owned[i] = true;
    }
  }
  if (!st) {
    switch (c->u.call.callee) {
    case LOOM_GRAPH_CALLEE_OP: {
      loom_graph_ecx ec = {.m = m, .call = c, .env = it->env, .op = loom_graph_op_name(c->u.call.op)};
      for (size_t i = 0; i < n && !st; i++)
        if (args[i].kind != LOOM_SINFO_TENSOR && c->u.call.args[i]->sinfo->kind == LOOM_SINFO_TENSOR)
          st = LOOM_ERROR(INTERNAL, "%s: operand %zu is not a tensor", ec.op, i);
      if (!st) st = loom_graph_op_impl_of(c->u.call.op)->eval(&ec, args, out);
      break;
    }
    case LOOM_GRAPH_CALLEE_FUNC: {
      const loom_graph_func *f = loom_graph_module_find_func(m, c->u.call.target);
      loom_sym_env *env;
      st = f ? loom_sym_env_create(m->alloc, &env) : LOOM_ERROR(NOT_FOUND, "unknown function @%s", c->u.call.target);
      if (!st) {
        st = run_func(m, f, n, args, env, it->depth + 1, out);
        loom_sym_env_destroy(env);
      }
      break;
    }
    case LOOM_GRAPH_CALLEE_TP:
      st = run_tp(it, c, args, n, out);
      break;
    case LOOM_GRAPH_CALLEE_EXTERN:
      st = loom_graph_eval_extern(m, c, it->env, args, out);
      break;
    }
  }
  for (size_t i = 0; i < n; i++)
    if (owned[i]) loom_graph_value_free(&args[i]);
  free(args);
  free(owned);
  return st;
}

/* The integer a loop's count or condition holds: a scalar, or a tensor of one element. */
static loom_status value_int(const loom_graph_value *v, const char *what, int64_t *out) {
  if (v->kind == LOOM_SINFO_SCALAR) {
    *out = v->i;
    return LOOM_OK;
  }
  if (v->kind != LOOM_SINFO_TENSOR || v->t.numel != 1 || loom_dtype_is_float(v->t.dtype))
    return LOOM_ERROR(INVALID_ARGUMENT, "loop: %s must hold one integer or bool, got %s of %zu elements", what,
                      v->kind == LOOM_SINFO_TENSOR ? loom_dtype_name(v->t.dtype) : "a non-tensor",
                      v->kind == LOOM_SINFO_TENSOR ? v->t.numel : (size_t)0);
  *out = loom_graph_tensor_get_i64(&v->t, 0);
  return LOOM_OK;
}

/* Stacks the n rows of a scan item (each of struct info `si`, which names no symbol of the
 * loop's body) along a new axis 0. */
static loom_status stack_rows(interp *it, const loom_sinfo *si, const loom_graph_value *rows, size_t n, size_t j,
                              loom_graph_value *out) {
  int64_t shape[8];
  int nd = si->ndim;
  shape[0] = (int64_t)n;
  for (int k = 0; k < nd; k++) {
    if (n) {
      shape[k + 1] = rows[0].t.shape[k];
      continue;
    }
    loom_status st = loom_sym_eval(it->m->cx, si->dims[k], it->env, &shape[k + 1]);
    if (st) { /* a dim of the body's: only the items tell it */
      loom_status_free(st);
      return LOOM_ERROR(INVALID_ARGUMENT, "loop: scan item %zu: the loop ran no iteration, and the items' shape is known "
                        "only from them (axis %d names a symbol of the body)", j, k);
    }
  }
  for (size_t r = 0; r < n; r++) {
    bool same = rows[r].kind == LOOM_SINFO_TENSOR && rows[r].t.dtype == si->dtype && rows[r].t.ndim == nd;
    for (int k = 0; same && k < nd; k++) same = rows[r].t.shape[k] == shape[k + 1];
    if (!same)
      return LOOM_ERROR(INVALID_ARGUMENT, "loop: scan item %zu of iteration %zu differs in shape or dtype from iteration 0's", j, r);
  }
  LOOM_PROPAGATE(loom_graph_value_tensor(si->dtype, nd + 1, shape, out));
  size_t rb = n ? rows[0].t.numel * loom_dtype_size(si->dtype) : 0;
  if (si->dtype == LOOM_DTYPE_STRING) {
    for (size_t r = 0; r < n; r++) LOOM_PROPAGATE(loom_graph_tensor_copy_strs(&out->t, r * rows[0].t.numel, rows[r].t.data, rows[0].t.numel));
    return LOOM_OK;
  }
  for (size_t r = 0; r < n; r++) memcpy((char *)out->t.data + r * rb, rows[r].t.data, rb);
  return LOOM_OK;
}

/* loop (i < count, while cond) (params = inits) { body }: every iteration starts from the
 * symbolic bindings the loop started with, binds i, matches each carried value against its
 * param's struct info (binding the loop's locals), runs the body and takes its result apart.
 * The value is (final carried values..., stacked scan items...). */
static loom_status eval_loop(interp *it, const loom_graph_binding *b, loom_graph_value *out) {
  const loom_graph_expr *e = b->value;
  loom_graph_module *m = it->m;
  size_t nc = e->u.loop.ncarry, hc = e->u.loop.cond ? 1 : 0, nscan = loom_graph_loop_nscan(e);
  const loom_sinfo *rt = e->u.loop.body->result->sinfo;
  int64_t count = INT64_MAX, c = 1;
  loom_graph_value tmp;
  loom_status st = LOOM_OK;
  if (e->u.loop.count) {
    LOOM_PROPAGATE(leaf_value(it, e->u.loop.count, &tmp));
    st = value_int(&tmp, "the trip count", &count);
    loom_graph_value_free(&tmp);
    LOOM_PROPAGATE(st);
  }
  if (e->u.loop.cond) {
    LOOM_PROPAGATE(leaf_value(it, e->u.loop.cond, &tmp));
    st = value_int(&tmp, "the condition", &c);
    loom_graph_value_free(&tmp);
    LOOM_PROPAGATE(st);
  }
  loom_sym_env *saved = NULL;
  loom_graph_value *carry = calloc(nc + 1, sizeof *carry);
  LOOM_VEC(loom_graph_value) *scans = calloc(nscan + 1, sizeof *scans);
  if (!carry || !scans) st = LOOM_OOM();
  if (!st) st = loom_sym_env_create(m->alloc, &saved);
  if (!st) st = loom_sym_env_assign(saved, it->env);
  for (size_t k = 0; k < nc && !st; k++) st = leaf_value(it, e->u.loop.inits[k], &carry[k]);
  int64_t i = 0;
  for (; !st && i < count && c; i++) {
    st = loom_sym_env_assign(it->env, saved);
    if (!st) st = loom_sym_env_set(it->env, e->u.loop.iter, i);
    for (size_t k = 0; k < nc && !st; k++) {
      const loom_graph_expr *p = e->u.loop.params[k];
      char what[256];
      snprintf(what, sizeof what, "loop iteration %lld: carried '%s'", (long long)i, p->u.var.name);
      st = check_value(it, p->sinfo, &carry[k], what);
      if (st) break;
      uint32_t id = p->u.var.id;
      if (it->set[id]) loom_graph_value_free(&it->vals[id]);
      it->vals[id] = carry[k]; /* moved */
      it->set[id] = true;
      memset(&carry[k], 0, sizeof carry[k]);
    }
    loom_graph_value res;
    memset(&res, 0, sizeof res);
    if (!st) st = eval_seq(it, e->u.loop.body, &res);
    if (!st && (res.kind != LOOM_SINFO_TUPLE || res.n != rt->nfields))
      st = LOOM_ERROR(INTERNAL, "loop: the body's result is not a tuple of %zu", rt->nfields);
    if (!st && hc) st = value_int(&res.items[0], "the body's next condition", &c);
    for (size_t k = 0; k < nc && !st; k++) st = loom_graph_value_copy(&res.items[hc + k], &carry[k]);
    for (size_t j = 0; j < nscan && !st; j++) {
      loom_graph_value row;
      st = loom_graph_value_copy(&res.items[hc + nc + j], &row);
      if (!st && !LOOM_VEC_PUSH(m->alloc, &scans[j], row)) {
        loom_graph_value_free(&row);
        st = LOOM_OOM();
      }
    }
    loom_graph_value_free(&res);
  }
  if (saved) {
    loom_status s2 = loom_sym_env_assign(it->env, saved);
    if (!st) st = s2;
    else loom_status_free(s2);
  }
  if (!st) {
    out->kind = LOOM_SINFO_TUPLE;
    out->n = nc + nscan;
    out->items = calloc(out->n ? out->n : 1, sizeof *out->items);
    if (!out->items) st = LOOM_OOM();
    for (size_t k = 0; k < nc && !st; k++) {
      out->items[k] = carry[k];
      memset(&carry[k], 0, sizeof carry[k]);
    }
    for (size_t j = 0; j < nscan && !st; j++)
      st = stack_rows(it, rt->fields[hc + nc + j], scans[j].data, scans[j].len, j, &out->items[nc + j]);
    if (st) loom_graph_value_free(out);
  }
  for (size_t k = 0; carry && k < nc; k++) loom_graph_value_free(&carry[k]);
  for (size_t j = 0; scans && j < nscan; j++) {
    for (size_t r = 0; r < scans[j].len; r++) loom_graph_value_free(&scans[j].data[r]);
    LOOM_VEC_FREE(m->alloc, &scans[j]);
  }
  free(carry);
  free(scans);
  loom_sym_env_destroy(saved);
  return st;
}

static loom_status eval_binding(interp *it, const loom_graph_binding *b) {
  const loom_graph_expr *v = b->value;
  loom_graph_value out;
  memset(&out, 0, sizeof out);
  loom_status st = LOOM_OK;
  switch (v->kind) {
  case LOOM_GRAPH_EXPR_CALL:
    st = eval_call(it, b, &out);
    break;
  case LOOM_GRAPH_EXPR_TUPLE:
    out.kind = LOOM_SINFO_TUPLE;
    out.n = v->u.tuple.n;
    out.items = calloc(out.n ? out.n : 1, sizeof *out.items);
    if (!out.items) st = LOOM_OOM();
    for (size_t i = 0; i < out.n && !st; i++) st = leaf_value(it, v->u.tuple.items[i], &out.items[i]);
    break;
  case LOOM_GRAPH_EXPR_TUPLE_GET: {
    loom_graph_value t;
    st = leaf_value(it, v->u.get.tuple, &t);
    if (!st && (t.kind != LOOM_SINFO_TUPLE || v->u.get.index >= t.n)) st = LOOM_ERROR(INTERNAL, "bad tuple-get");
    if (!st) st = loom_graph_value_copy(&t.items[v->u.get.index], &out);
    loom_graph_value_free(&t);
    break;
  }
  case LOOM_GRAPH_EXPR_LOOP:
    st = eval_loop(it, b, &out);
    break;
  case LOOM_GRAPH_EXPR_IF: {
    loom_graph_value c;
    st = leaf_value(it, v->u.if_.cond, &c);
    if (!st) {
      bool cond = c.kind == LOOM_SINFO_TENSOR ? loom_graph_tensor_get_f64(&c.t, 0) != 0 : c.i != 0;
      loom_graph_value_free(&c);
      st = eval_seq(it, cond ? v->u.if_.then_seq : v->u.if_.else_seq, &out);
    }
    break;
  }
  default:
    st = leaf_value(it, v, &out);
    break;
  }
  if (!st) {
    char what[256];
    snprintf(what, sizeof what, "%s '%s'", b->kind == LOOM_GRAPH_BIND_MATCH_CAST ? "match_cast" : "value of",
             b->var->u.var.name);
    st = check_value(it, b->var->sinfo, &out, what);
  }
  if (st) {
    loom_graph_value_free(&out);
    return loom_status_annotate(st, __FILE__, __LINE__, "in @%s, binding '%s'", it->fn, b->var->u.var.name);
  }
  uint32_t id = b->var->u.var.id;
  if (it->set[id]) loom_graph_value_free(&it->vals[id]);
  it->vals[id] = out;
  it->set[id] = true;
  return LOOM_OK;
}

static loom_status eval_seq(interp *it, const loom_graph_seq *s, loom_graph_value *out) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) LOOM_PROPAGATE(eval_binding(it, s->blocks[i]->bindings[j]));
  return leaf_value(it, s->result, out);
}

static loom_status run_func(loom_graph_module *m, const loom_graph_func *f, size_t nargs, const loom_graph_value *args,
                            loom_sym_env *env, int depth, loom_graph_value *out) {
  if (depth > 64) return LOOM_ERROR(OUT_OF_RANGE, "call depth above 64 (recursion?)");
  if (nargs != f->nparams)
    return LOOM_ERROR(INVALID_ARGUMENT, "@%s takes %zu arguments, got %zu", f->name, f->nparams, nargs);
  interp it = {.m = m, .env = env, .fn = f->name, .depth = depth, .nvals = m->next_var_id};
  it.vals = calloc(it.nvals ? it.nvals : 1, sizeof *it.vals);
  it.set = calloc(it.nvals ? it.nvals : 1, sizeof *it.set);
  loom_status st = (!it.vals || !it.set) ? LOOM_OOM() : LOOM_OK;
  for (size_t i = 0; i < nargs && !st; i++) {
    char what[256];
    snprintf(what, sizeof what, "input '%s'", f->params[i]->u.var.name);
    st = check_value(&it, f->params[i]->sinfo, &args[i], what);
    if (!st) st = loom_graph_value_copy(&args[i], &it.vals[f->params[i]->u.var.id]);
    if (!st) it.set[f->params[i]->u.var.id] = true;
  }
  if (!st) st = eval_seq(&it, f->body, out);
  if (!st) {
    st = check_value(&it, f->ret, out, "the result");
    if (st) loom_graph_value_free(out);
  }
  for (size_t i = 0; i < it.nvals && it.set; i++)
    if (it.set[i]) loom_graph_value_free(&it.vals[i]);
  free(it.vals);
  free(it.set);
  return st;
}

loom_status loom_graph_eval(loom_graph_module *m, const char *fn, size_t nargs, const loom_graph_value *args,
                            loom_sym_env *env, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  const loom_graph_func *f = loom_graph_module_find_func(m, fn);
  if (!f) return LOOM_ERROR(NOT_FOUND, "no function @%s in the module", fn);
  loom_sym_env *own = NULL;
  if (!env) {
    LOOM_PROPAGATE(loom_sym_env_create(m->alloc, &own));
    env = own;
  }
  loom_status st = run_func(m, f, nargs, args, env, 0, out);
  loom_sym_env_destroy(own);
  return st;
}

/* One operator call on values: what the VM's host operators run (docs/vm.md "Host operators"),
 * the same implementation the interpreter runs. The module is only read, so calls may run
 * on several threads at once. */
loom_status loom_graph_call_eval(loom_graph_module *m, const loom_graph_expr *call, const loom_graph_value *args,
                                 loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  if (call->kind != LOOM_GRAPH_EXPR_CALL || call->u.call.callee != LOOM_GRAPH_CALLEE_OP)
    return LOOM_ERROR(INVALID_ARGUMENT, "loom_graph_call_eval: not an operator call");
  loom_graph_ecx ec = {.m = m, .call = call, .op = loom_graph_op_name(call->u.call.op)};
  for (size_t i = 0; i < call->u.call.nargs; i++)
    if (args[i].kind != LOOM_SINFO_TENSOR && call->u.call.args[i]->sinfo->kind == LOOM_SINFO_TENSOR)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: operand %zu is not a tensor", ec.op, i);
  loom_sym_env *env;
  LOOM_PROPAGATE(loom_sym_env_create(NULL, &env));
  ec.env = env;
  loom_status st = loom_graph_op_impl_of(call->u.call.op)->eval(&ec, args, out);
  loom_sym_env_destroy(env);
  return st;
}

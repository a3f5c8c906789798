/* onnx_import_loop.c — ONNX control flow onto the graph IR's loop (docs/onnx.md "Loop",
 * "Scan"; docs/ir.md "Loops"): a trip count or a length known only at run time, a condition the
 * body computes, carried values whose shapes change per iteration.
 *
 * oimp_loop_build is the one way the importer makes a loop (Loop, Scan, RNN / GRU / LSTM): the
 * body is imported once into a nested sequence, its inputs bound to the iteration var and the
 * carried values' params. A param starts with its initial value's struct info; when the body's
 * next value for it is not provably of that shape, each differing axis gets a local (a symbol
 * the loop binds anew at each iteration) and the body is imported again, so no shape fact is
 * lost and none is invented (a row appended per step: (k, 4) -> (k + 1, 4) carried as (k, 4)).
 *
 * Loop: M, when it is not a constant or a shape value, is bound to a symbolic var from
 * max(M, 0) when the loop starts; `cond` (true when absent) is the loop's condition and the
 * body's first output its next one (ONNX Runtime honours that output without a `cond` too); the iteration number is the body's symbolic var (a shape value: Slice bounds on it
 * stay symbolic); cond_in is true (the body runs only then). Scan: the count is the scan
 * inputs' length along their axes; each iteration reads one slice of each (strided_slice at
 * i, or length - 1 - i in reverse), and each scan output is stacked along axis 0, then
 * reversed and moved to its axis as the node says. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

/* Loops a body is imported at most this many times (widening carried shapes). */
#define LOOP_ATTEMPTS 4
#define LOOP_MAX_CARRY 64
/* The most dims of a carried value. */
#define LOOP_MAX_RANK 16

/* ---- the loop builder ------------------------------------------------------------------------- */

/* Items describing both a and b: tensors of their common dtype and rank (else unknown), lists
 * of such items; NULL when their kinds differ (or out of memory). */
static const loom_sinfo *item_join(loom_graph_module *m, const loom_sinfo *a, const loom_sinfo *b) {
  if (a->kind == LOOM_SINFO_LIST && b->kind == LOOM_SINFO_LIST && a->optional == b->optional) {
    const loom_sinfo *it = item_join(m, a->ret, b->ret);
    return it ? loom_sinfo_list(m, it, NULL, a->optional) : NULL;
  }
  if (a->kind != LOOM_SINFO_TENSOR || b->kind != LOOM_SINFO_TENSOR) return NULL;
  return loom_sinfo_tensor(m, a->dtype == b->dtype ? a->dtype : LOOM_DTYPE_UNKNOWN,
                           a->ndim == b->ndim ? a->ndim : LOOM_SINFO_NDIM_UNKNOWN, NULL, NULL);
}

/* A carried list: the body's next list nx against param ps (List[item], no length): *out is ps
 * with an item describing both when nx's items are not ps's (NULL: ps fits). */
static loom_status list_widen(nctx *c, const char *name, const loom_sinfo *ps, const loom_sinfo *nx, const loom_sinfo **out) {
  *out = NULL;
  if (nx->kind != LOOM_SINFO_LIST || nx->optional != ps->optional || nx->ret->kind != ps->ret->kind)
    return UNSUP(c->n, "loop-carried '%s' is a list, but the body's next value for it is %s", name,
                 nx->kind == LOOM_SINFO_LIST ? "a list of other items" : "not a list");
  if (loom_sinfo_is_base_of(c->im->cx, ps->ret, nx->ret) == LOOM_SYM_TRUE) return LOOM_OK;
  const loom_sinfo *it = item_join(c->im->m, ps->ret, nx->ret);
  if (!it) return UNSUP(c->n, "loop-carried '%s' is a list whose items change kind", name);
  *out = loom_sinfo_list(c->im->m, it, NULL, ps->optional);
  return *out ? LOOM_OK : LOOM_OOM();
}

/* The shape the next value `nx` of a carried value of struct info `ps` needs: ps with a fresh
 * local (appended to locals) on every axis the prover cannot show equal (NULL: ps already fits;
 * an error when the dtype or rank changes). */
static loom_status widen(nctx *c, const char *name, const loom_sinfo *ps, const loom_sinfo *nx, const loom_sym_expr **locals,
                         size_t *nlocals, const loom_sinfo **out) {
  imp *im = c->im;
  *out = NULL;
  if (ps->kind != LOOM_SINFO_LIST && (nx->kind != LOOM_SINFO_TENSOR || nx->ndim < 0 || (nx->ndim && !nx->dims)))
    return UNSUP(c->n, "the body's next value of loop-carried '%s' is not a tensor of known rank", name);
  if (nx->dtype != ps->dtype || nx->ndim != ps->ndim)
    return UNSUP(c->n, "loop-carried '%s' changes its %s across iterations (%s of rank %d, then %s of rank %d)", name,
                 nx->dtype != ps->dtype ? "dtype" : "rank", loom_dtype_name(ps->dtype), ps->ndim,
                 loom_dtype_name(nx->dtype), nx->ndim);
  const loom_sym_expr *d[LOOP_MAX_RANK];
  bool changed = false;
  if (ps->kind == LOOM_SINFO_LIST) /* its item's facts shared with the next value's */
    return list_widen(c, name, ps, nx, out);
  for (int k = 0; k < ps->ndim; k++) {
    d[k] = ps->dims[k];
    bool local = false;
    for (size_t q = 0; q < *nlocals; q++) local = local || locals[q] == ps->dims[k];
    if (local || ps->dims[k] == nx->dims[k] || loom_sym_prove_eq(im->cx, ps->dims[k], nx->dims[k]) == LOOM_SYM_TRUE) continue;
    if (*nlocals >= 2 * LOOP_MAX_CARRY) return UNSUP(c->n, "too many changing dims in the loop's carried values");
    char what[16];
    snprintf(what, sizeof what, "d%d_", k);
    if (!(d[k] = loom_graph_fresh_sym(im->m, name, what))) return loom_sym_ctx_take_error(im->cx);
    locals[(*nlocals)++] = d[k];
    changed = true;
  }
  if (!changed) return LOOM_OK;
  *out = loom_sinfo_tensor(im->m, ps->dtype, ps->ndim, d, ps->device);
  return *out ? LOOM_OK : LOOM_OOM();
}

loom_status oimp_loop_build(nctx *c, const char *name, loom_graph_expr *count, loom_graph_expr *cond, size_t ncarry,
                            loom_graph_expr *const *inits, const char *const *param_names, size_t nscan,
                            oimp_loop_body_fn body, void *ud, loom_graph_expr **finals, loom_graph_expr **stacks) {
  imp *im = c->im;
  loom_graph_module *m = im->m;
  if (ncarry > LOOP_MAX_CARRY || nscan > LOOP_MAX_CARRY) return UNSUP(c->n, "more than %d carried values or scan outputs", LOOP_MAX_CARRY);
  const loom_sinfo *ps[LOOP_MAX_CARRY];
  const loom_sym_expr *locals[2 * LOOP_MAX_CARRY];
  const char *pn[LOOP_MAX_CARRY];
  size_t nlocals = 0;
  for (size_t k = 0; k < ncarry; k++) {
    const loom_sinfo *si = inits[k]->sinfo;
    if (si->kind == LOOM_SINFO_LIST) { /* a list's length changes: the param does not say it */
      if (!(si = loom_sinfo_list(m, si->ret, NULL, si->optional))) return LOOM_OOM();
    } else if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || (si->ndim && !si->dims) || si->ndim > LOOP_MAX_RANK)
      return UNSUP(c->n, "loop-carried value %zu is not a tensor of known rank", k);
    ps[k] = si;
    if (!(pn[k] = oimp_ir_name(im, param_names[k]))) return LOOM_OOM();
  }
  char iname[160];
  snprintf(iname, sizeof iname, "%s_i", name);
  const char *in = oimp_ir_name(im, iname);
  if (!in) return LOOM_OOM();
  loom_graph_expr *params[LOOP_MAX_CARRY], *next[LOOP_MAX_CARRY], *scans[LOOP_MAX_CARRY], *cond_out = NULL;
  loom_graph_seq *seq = NULL;
  const loom_sym_expr *iter = NULL;
  loom_status s = LOOM_OK;
  for (int attempt = 0; !seq && !s; attempt++) {
    if (attempt == LOOP_ATTEMPTS) return UNSUP(c->n, "the loop's carried shapes do not settle after %d imports of its body", attempt);
    if (!(iter = loom_graph_loop_iter_new(m, in, count))) return LOOM_OOM();
    for (size_t k = 0; k < ncarry; k++)
      if (!(params[k] = loom_graph_var_new(m, pn[k], ps[k]))) return LOOM_OOM();
    loom_graph_builder_nest nest;
    LOOM_PROPAGATE(loom_graph_builder_nest_begin(&im->b, &nest, true));
    size_t mark = im->nvals, body_mark = im->body_mark, nused = im->nused;
    im->body_mark = mark;
    cond_out = NULL;
    s = body(c, ud, iter, params, cond ? &cond_out : NULL, next, scans);
    im->nvals = mark;
    im->body_mark = body_mark;
    bool again = false;
    for (size_t k = 0; k < ncarry && !s; k++) {
      const loom_sinfo *w;
      s = widen(c, pn[k], ps[k], next[k]->sinfo, locals, &nlocals, &w);
      if (w) ps[k] = w, again = true;
    }
    for (size_t j = 0; j < nscan && !s; j++)
      if (scans[j]->sinfo->kind != LOOM_SINFO_TENSOR || scans[j]->sinfo->ndim < 0)
        s = UNSUP(c->n, "scan output %zu of the loop is not a tensor of known rank", j);
    if (s || again) {
      loom_status e = loom_graph_builder_nest_end(&im->b, &nest, NULL, NULL);
      if (e) return s ? (loom_status_free(e), s) : e;
      im->nused = nused; /* the names of the dropped body are free again */
      continue;
    }
    loom_graph_expr *items[1 + 2 * LOOP_MAX_CARRY];
    size_t n = 0;
    if (cond) items[n++] = cond_out;
    for (size_t k = 0; k < ncarry; k++) items[n++] = next[k];
    for (size_t j = 0; j < nscan; j++) items[n++] = scans[j];
    loom_graph_expr *t = loom_graph_tuple_new(m, n, items);
    s = t ? loom_graph_builder_nest_end(&im->b, &nest, t, &seq) : LOOM_OOM();
  }
  LOOM_PROPAGATE(s);
  loom_graph_expr *loop = loom_graph_loop_new(m, count, cond, iter, ncarry, params, inits, nlocals, locals, seq);
  if (!loop) return LOOM_OOM();
  /* a loop is control flow: outside dataflow blocks */
  loom_graph_expr *r;
  const char *rn = oimp_ir_name(im, name);
  if (!rn) return LOOM_OOM();
  LOOM_PROPAGATE(loom_graph_builder_block(&im->b, false));
  s = loom_graph_builder_emit(&im->b, loop, rn, &r);
  if (s) {
    loom_status e = oimp_node_err(loom_status_code(s), c->n, "%s", loom_status_message(s));
    loom_status_free(s);
    return e;
  }
  LOOM_PROPAGATE(loom_graph_builder_block(&im->b, true));
  for (size_t f = 0; f < ncarry + nscan; f++) {
    loom_graph_expr *g = loom_graph_tuple_get_new(m, r, f);
    loom_graph_expr **dst = f < ncarry ? &finals[f] : &stacks[f - ncarry];
    LOOM_PROPAGATE(loom_graph_builder_emit(&im->b, g, NULL, dst));
  }
  return LOOM_OK;
}

/* ---- helpers ----------------------------------------------------------------------------------- */

int64_t oimp_unroll_steps(void) {
  const char *e = getenv("LOOM_UNROLL_STEPS");
  if (!e || !*e) return OIMP_UNROLL_STEPS;
  char *end;
  long long v = strtoll(e, &end, 10);
  return *end || v < 0 || v > 100000 ? OIMP_UNROLL_STEPS : (int64_t)v;
}

loom_status oimp_loop_count(nctx *c, size_t i, const char *what, loom_graph_expr **out) {
  imp *im = c->im;
  oimp_symval sv;
  if (oimp_symval_of(c, i, &sv)) { /* a constant or a value computed from shapes */
    if (sv.n != 1) return BAD(c->n, "input %zu (%s) must hold one integer, not %zu", i, what, sv.n);
    *out = loom_graph_sym_new(im->m, sv.v[0]);
    return *out ? LOOM_OK : LOOM_OOM();
  }
  loom_graph_expr *v = c->args[i], *zero;
  const loom_sinfo *si = v->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_int(si->dtype) || si->ndim > 1 || (si->ndim == 1 && !si->dims))
    return BAD(c->n, "input %zu (%s) must be an integer tensor of one element", i, what);
  if (si->dtype != LOOM_DTYPE_I64) {
    oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", LOOM_DTYPE_I64));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, v, &v));
  }
  LOOM_PROPAGATE(oimp_scalar(c, LOOM_DTYPE_I64, 0, &zero));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_MAXIMUM, v, zero, &v)); /* a negative count runs nothing */
  if (si->ndim == 0) {
    const loom_sym_expr *one = loom_sym_const(im->cx, 1);
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "shape", 1, &one));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, v, &v));
  }
  const loom_sym_expr *n;
  LOOM_PROPAGATE(oimp_runtime_syms(c, v, c->n->inputs[i], what, &n, 1));
  *out = loom_graph_sym_new(im->m, n);
  return *out ? LOOM_OK : LOOM_OOM();
}

loom_status oimp_reverse_dyn(nctx *c, loom_graph_expr *x, int64_t axis, loom_graph_expr **y) {
  imp *im = c->im;
  const loom_sym_expr *n = x->sinfo->dims[axis], *zero = loom_sym_const(im->cx, 0);
  const loom_sym_expr *last = loom_sym_sub(im->cx, n, loom_sym_const(im->cx, 1));
  loom_graph_expr *ar, *top, *idx;
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "start", 1, &zero));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "end", 1, &n));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_ARANGE, 0, NULL, NULL, &ar));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "values", 1, &last));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "scalar", 1));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, NULL, &top));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_SUB, top, ar, &idx));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "axis", axis));
  return oimp_op2(c, LOOM_GRAPH_OP_TAKE, x, idx, y);
}

/* ---- Loop and Scan nodes ------------------------------------------------------------------------ */

/* What the body callback needs of a Loop or Scan node. */
typedef struct node_loop {
  const loom_onnx_graph *g; /* the body */
  bool scan;                /* Scan (else Loop) */
  size_t nstate, nin;       /* carried values; Scan: scan inputs */
  loom_graph_expr *xs[8];   /* Scan: the scan inputs */
  int64_t in_axes[8];       /* Scan: their axes (normalized) */
  int64_t in_rev[8];        /* Scan: read backwards */
  const loom_sym_expr *len; /* Scan: the length */
  bool *wrapped;            /* Loop: carried k is an Optional whose body gives the plain sequence,
                             * wrapped back into an Optional for the next iteration (node_body) */
} node_loop;

/* Slice i (or len - 1 - i) of scan input j along its axis, the axis removed. */
static loom_status scan_slice(nctx *c, const node_loop *nl, size_t j, const loom_sym_expr *i, loom_graph_expr **y) {
  imp *im = c->im;
  const loom_sym_expr *t = nl->in_rev[j] ? loom_sym_sub(im->cx, loom_sym_sub(im->cx, nl->len, i), loom_sym_const(im->cx, 1)) : i;
  const loom_sym_expr *t1 = loom_sym_add(im->cx, t, loom_sym_const(im->cx, 1));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, &nl->in_axes[j]));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "begin", 1, &t));
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "end", 1, &t1));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, nl->xs[j], y));
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, &nl->in_axes[j]));
  return oimp_op1(c, LOOM_GRAPH_OP_SQUEEZE, *y, y);
}

static loom_status node_body(nctx *c, void *ud, const loom_sym_expr *iter, loom_graph_expr *const *params,
                             loom_graph_expr **cond_out, loom_graph_expr **next, loom_graph_expr **scans) {
  const node_loop *nl = ud;
  imp *im = c->im;
  const loom_onnx_graph *g = nl->g;
  size_t k = 0;
  if (!nl->scan) { /* iteration_num as a shape value, cond_in true */
    oimp_symval *sv = LOOM_ARENA_NEW(loom_graph_module_arena(im->m), oimp_symval);
    loom_onnx_tensor *t = oimp_new_tensor(im, LOOM_DTYPE_BOOL, 0, NULL);
    if (!sv || !t) return LOOM_OOM();
    *sv = (oimp_symval){.dtype = LOOM_DTYPE_I64, .rank = 0, .n = 1, .v = {iter}};
    *(uint8_t *)t->data = 1;
    oimp_binding bi = {NULL, NULL, sv, NULL}, bc = {oimp_const_of(im, t), t, NULL, NULL};
    if (!bc.e) return LOOM_OOM();
    LOOM_PROPAGATE(oimp_bind_as(im, g->inputs[0].name, &bi));
    LOOM_PROPAGATE(oimp_bind_as(im, g->inputs[1].name, &bc));
    k = 2;
  }
  for (size_t i = 0; i < nl->nstate; i++) LOOM_PROPAGATE(oimp_bind(im, g->inputs[k + i].name, params[i], NULL));
  for (size_t j = 0; j < nl->nin; j++) {
    loom_graph_expr *x;
    LOOM_PROPAGATE(scan_slice(c, nl, j, iter, &x));
    LOOM_PROPAGATE(oimp_bind(im, g->inputs[nl->nstate + j].name, x, NULL));
  }
  loom_status s = oimp_import_graph(im, g);
  for (size_t o = 0; !s && o < g->n_outputs; o++) {
    loom_graph_expr *e;
    oimp_binding b;
    if (!oimp_lookup(im, g->outputs[o].name, &b)) s = BAD(c->n, "output '%s' of the body is not produced", g->outputs[o].name);
    else if (b.seq) s = UNSUP(c->n, "output '%s' of the body is a sequence or optional: a loop of a run-time count carries tensors only", g->outputs[o].name);
    else s = oimp_lookup_expr(im, g->outputs[o].name, &e);
    if (s) break;
    size_t first = nl->scan ? 0 : 1;
    if (!nl->scan && o == 0) {
      if (cond_out) *cond_out = e;
    } else if (o - first < nl->nstate) {
      size_t q = o - first;
      const loom_sinfo *ps = params[q]->sinfo, *ns = e->sinfo;
      nl->wrapped[q] = ps->kind == LOOM_SINFO_LIST && ps->optional && ps->ret->kind == LOOM_SINFO_LIST &&
                       ns->kind == LOOM_SINFO_LIST && !ns->optional;
      if (nl->wrapped[q]) { /* an Optional of a sequence carried, the sequence given: Optional(it) next */
        oimp_add_attr(c, loom_graph_attr_bool(im->m, "optional", true));
        s = oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 1, &e, NULL, &e);
        if (s) break;
      }
      next[q] = e;
    }
    else scans[o - first - nl->nstate] = e;
  }
  if (s) {
    const loom_onnx_node *n = c->n;
    return loom_status_annotate(s, __FILE__, __LINE__, "in the body of node %zu (%s%s%s%s)", n->index, n->op_type,
                                *n->name ? " '" : "", n->name, *n->name ? "'" : "");
  }
  return LOOM_OK;
}

/* The node's first named output's IR name, for the loop binding. */
static const char *loop_name(const nctx *c) {
  for (size_t i = 0; i < c->n->n_outputs; i++)
    if (*c->n->outputs[i]) return c->n->outputs[i];
  return "loop";
}

/* Binds the node's output i (when named) to e. */
static loom_status bind_output(nctx *c, size_t i, loom_graph_expr *e) {
  if (i >= c->n->n_outputs || !*c->n->outputs[i]) return LOOM_OK;
  return oimp_bind(c->im, c->n->outputs[i], e, NULL);
}

static loom_status scan_attrs(const nctx *c, const char *name, size_t n, int64_t *v) {
  const int64_t *a;
  size_t k;
  bool present;
  LOOM_PROPAGATE(oimp_attr_ints(c, name, &a, &k, &present));
  for (size_t i = 0; i < n; i++) v[i] = present && i < k ? a[i] : 0;
  if (present && k != n) return BAD(c->n, "attribute '%s' has %zu values, not %zu", name, k, n);
  return LOOM_OK;
}

loom_status oimp_loop_node(nctx *c, const loom_onnx_graph *g) {
  imp *im = c->im;
  bool scan = !strcmp(c->n->op_type, "Scan");
  bool wrapped[LOOP_MAX_CARRY] = {false};
  node_loop nl = {.g = g, .scan = scan, .wrapped = wrapped};
  loom_graph_expr *count = NULL, *cond = NULL, *inits[LOOP_MAX_CARRY];
  const char *names[LOOP_MAX_CARRY];
  size_t nscan;
  int64_t out_axes[8] = {0}, out_rev[8] = {0};
  if (!scan) {
    nl.nstate = c->nargs > 2 ? c->nargs - 2 : 0;
    if (g->n_inputs != 2 + nl.nstate) return BAD(c->n, "the body takes %zu inputs, not 2 + %zu", g->n_inputs, nl.nstate);
    if (g->n_outputs < 1 + nl.nstate) return BAD(c->n, "the body has %zu outputs, fewer than 1 + %zu", g->n_outputs, nl.nstate);
    nscan = g->n_outputs - 1 - nl.nstate;
    if (oimp_has_input(c, 0)) LOOM_PROPAGATE(oimp_loop_count(c, 0, "M", &count));
    if (oimp_has_input(c, 1)) {
      cond = c->args[1];
      if (!cond || !cond->sinfo || cond->sinfo->dtype != LOOM_DTYPE_BOOL) return BAD(c->n, "input 1 (cond) must be a bool tensor");
    } else { /* no entry condition: true, and the body's still decides (as ONNX Runtime runs it) */
      loom_onnx_tensor *t = oimp_new_tensor(im, LOOM_DTYPE_BOOL, 0, NULL);
      if (!t) return LOOM_OOM();
      *(uint8_t *)t->data = 1;
      if (!(cond = oimp_const_of(im, t))) return LOOM_OOM();
    }
    for (size_t k = 0; k < nl.nstate; k++) {
      if (c->seqs[2 + k]) /* a sequence built in the graph, carried: a list value */
        LOOM_PROPAGATE(oimp_seq_to_list(im, c->seqs[2 + k], c->n->inputs[2 + k], &c->args[2 + k]));
      if (!c->args[2 + k]) return UNSUP(c->n, "loop-carried input %zu has no value", 2 + k);
      inits[k] = c->args[2 + k];
      names[k] = g->inputs[2 + k].name;
    }
  } else {
    int64_t nin;
    if (c->im->opset < 9) return UNSUP(c->n, "Scan-8 with a batch axis and a run-time length");
    LOOM_PROPAGATE(oimp_attr_int(c, "num_scan_inputs", 0, &nin));
    if (nin < 1 || nin > 8 || (size_t)nin > c->nargs) return BAD(c->n, "num_scan_inputs %lld does not fit the %zu inputs", (long long)nin, c->nargs);
    nl.nin = (size_t)nin, nl.nstate = c->nargs - nl.nin;
    if (g->n_outputs < nl.nstate) return BAD(c->n, "the body has %zu outputs, fewer than its %zu states", g->n_outputs, nl.nstate);
    nscan = g->n_outputs - nl.nstate;
    if (nscan > 8) return UNSUP(c->n, "%zu scan outputs (at most 8)", nscan);
    LOOM_PROPAGATE(scan_attrs(c, "scan_input_axes", nl.nin, nl.in_axes));
    LOOM_PROPAGATE(scan_attrs(c, "scan_input_directions", nl.nin, nl.in_rev));
    LOOM_PROPAGATE(scan_attrs(c, "scan_output_axes", nscan, out_axes));
    LOOM_PROPAGATE(scan_attrs(c, "scan_output_directions", nscan, out_rev));
    for (size_t j = 0; j < nl.nin; j++) {
      loom_graph_expr *x = c->args[nl.nstate + j];
      if (!x || c->seqs[nl.nstate + j]) return UNSUP(c->n, "scan input %zu is not a tensor", j);
      const loom_sinfo *si = x->sinfo;
      if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 1 || !si->dims) return UNSUP(c->n, "scan input %zu's rank is unknown", j);
      int64_t a = nl.in_axes[j] < 0 ? nl.in_axes[j] + si->ndim : nl.in_axes[j];
      if (a < 0 || a >= si->ndim) return BAD(c->n, "scan input %zu: axis %lld out of range for rank %d", j, (long long)nl.in_axes[j], si->ndim);
      nl.xs[j] = x, nl.in_axes[j] = a;
      if (!nl.len) nl.len = si->dims[a];
      else if (loom_sym_prove_eq(im->cx, nl.len, si->dims[a]) != LOOM_SYM_TRUE) {
        char *ta = loom_sym_to_string(si->dims[a]), *tb = loom_sym_to_string(nl.len);
        loom_status e = UNSUP(c->n, "scan input %zu's length %s is not provably scan input 0's, %s", j, ta ? ta : "?", tb ? tb : "?");
        free(ta), free(tb);
        return e;
      }
    }
    if (!(count = loom_graph_sym_new(im->m, nl.len))) return LOOM_OOM();
    for (size_t k = 0; k < nl.nstate; k++) {
      if (c->seqs[k] || !c->args[k]) return UNSUP(c->n, "state %zu is not a tensor", k);
      inits[k] = c->args[k];
      names[k] = g->inputs[k].name;
    }
  }
  if (nl.nstate > LOOP_MAX_CARRY) return UNSUP(c->n, "%zu loop-carried values (at most %d)", nl.nstate, LOOP_MAX_CARRY);
  if (c->n->n_outputs > nl.nstate + nscan) return BAD(c->n, "%zu outputs, the body gives %zu", c->n->n_outputs, nl.nstate + nscan);
  loom_graph_expr *finals[LOOP_MAX_CARRY], *stacks[LOOP_MAX_CARRY];
  LOOM_PROPAGATE(oimp_loop_build(c, loop_name(c), count, cond, nl.nstate, inits, names, nscan, node_body, &nl, finals, stacks));
  c->bound = true;
  for (size_t k = 0; k < nl.nstate; k++) {
    if (wrapped[k]) /* the sequence the last iteration gave (a loop that ran none: an error naming the list) */
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_GET, 1, &finals[k], NULL, &finals[k]));
    LOOM_PROPAGATE(bind_output(c, k, finals[k]));
  }
  for (size_t j = 0; j < nscan; j++) {
    loom_graph_expr *y = stacks[j];
    if (scan) {
      int r = y->sinfo->ndim;
      int64_t a = out_axes[j] < 0 ? out_axes[j] + r : out_axes[j];
      if (a < 0 || a >= r) return BAD(c->n, "scan output %zu: axis %lld out of range for rank %d", j, (long long)out_axes[j], r);
      if (out_rev[j]) LOOM_PROPAGATE(oimp_reverse_dyn(c, y, 0, &y));
      if (a) { /* axis 0 -> a */
        int64_t perm[16];
        for (int q = 0; q < r; q++) perm[q] = q < a ? q + 1 : q == a ? 0 : q;
        oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", (size_t)r, perm));
        LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_PERMUTE_DIMS, y, &y));
      }
    }
    LOOM_PROPAGATE(bind_output(c, nl.nstate + j, y));
  }
  return LOOM_OK;
}

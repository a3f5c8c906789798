/* onnx_import_ctl.c — control flow, sequences and optionals, resolved while importing.
 *
 * A body (If's branches, Loop's and Scan's body) is imported into the current builder: its
 * inputs are bound in a new scope, its nodes imported by oimp_import_graph (outer values are
 * found by name through the scope stack), its outputs read, and the scope closed.
 * - If: a condition that is a constant (or folds) imports only the taken branch; one known
 *   only at run time imports both branches and selects each output with `where`, which needs
 *   the two outputs to have the same dtype and provably equal shapes (graph ops have no side
 *   effects, so evaluating the branch not taken changes no result).
 * - Loop and Scan are unrolled when the trip count / scan length is static and at most
 *   OIMP_UNROLL_STEPS, and Loop's condition is a constant at entry and folds in every iteration;
 *   scan outputs are stacked (expand_dims + concat) along their axes, in their directions.
 *   Otherwise (a run-time count, a data-dependent exit, a long loop) they become the graph IR's
 *   loop (onnx_import_loop.c); a Loop's unrolling is tried in a nested sequence, dropped when the
 *   body's condition turns out not to fold.
 * - Sequences and optionals built in the graph are static lists of graph values (oimp_seq);
 *   SequenceAt / SequenceLength / ConcatFromSequence / OptionalGetElement ... read the list;
 *   SequenceMap imports its body once per element.
 *   Positions must be constants. A sequence cannot be a graph input or output here (the
 *   loader refuses such test data anyway). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

/* Unrolling gives way to the loop form past this many imported body nodes in one node (and
 * past OIMP_UNROLL_STEPS steps). */
#define CTL_MAX_UNROLLED_NODES 200000

/* ---- small helpers ------------------------------------------------------------------------ */

static loom_status op1(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr **y) {
  return oimp_emit(c, op, 1, &x, NULL, y);
}

static oimp_binding in_binding(const nctx *c, size_t i) {
  return (oimp_binding){c->args[i], c->consts[i], c->syms[i], c->seqs[i]};
}

static loom_status body_attr(const nctx *c, const char *name, const loom_onnx_graph **g) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  if (!a) return BAD(c->n, "attribute '%s' is required", name);
  if (a->kind != LOOM_ONNX_ATTR_GRAPH) return BAD(c->n, "attribute '%s' must be graph, not %s", name, loom_onnx_attr_kind_name(a->kind));
  *g = a->g;
  return LOOM_OK;
}

/* A constant scalar of dtype dt (i64 or bool) holding v, as a binding. */
static loom_status const_scalar(imp *im, loom_dtype dt, int64_t v, oimp_binding *b) {
  loom_onnx_tensor *t = oimp_new_tensor(im, dt, 0, NULL);
  if (!t) return LOOM_OOM();
  if (dt == LOOM_DTYPE_I64) *(int64_t *)t->data = v;
  else *(uint8_t *)t->data = v != 0;
  loom_graph_expr *e = oimp_const_of(im, t);
  if (!e) return LOOM_OOM();
  *b = (oimp_binding){e, t, NULL, NULL};
  return LOOM_OK;
}

/* The integer in constant input i (a one-element integer tensor). */
static loom_status const_int(const nctx *c, size_t i, const char *what, int64_t *v) {
  const loom_onnx_tensor *t = c->consts[i];
  if (!t) return UNSUP(c->n, "input %zu (%s) must be a constant", i, what);
  if (t->numel != 1 || (t->dtype != LOOM_DTYPE_I64 && t->dtype != LOOM_DTYPE_I32))
    return BAD(c->n, "input %zu (%s) must hold one int64 or int32", i, what);
  *v = t->dtype == LOOM_DTYPE_I64 ? *(const int64_t *)t->data : *(const int32_t *)t->data;
  return LOOM_OK;
}

/* Refuses a sequence or optional where input i must be a tensor. */
static loom_status need_tensor(const nctx *c, size_t i) {
  if (i < c->nargs && c->seqs[i]) return BAD(c->n, "input %zu '%s' must be a tensor, not a sequence or optional", i, c->n->inputs[i]);
  return LOOM_OK;
}

static bool truthy(const loom_onnx_tensor *t) { return oimp_scalar_f64(t) != 0; }

/* Imports body g with its inputs bound to ins[0..nin) and reads its outputs into outs (each
 * output in want_expr[] — or every one when want_expr is NULL and it is a tensor — as a
 * materialised graph expr). Errors name the body and the node holding it. */
static loom_status run_body(nctx *c, const char *attr, const loom_onnx_graph *g, size_t nin, const oimp_binding *ins,
                            oimp_binding *outs) {
  imp *im = c->im;
  if (g->n_inputs != nin)
    return BAD(c->n, "the %s takes %zu inputs, not the %zu this node gives it", attr, g->n_inputs, nin);
  size_t mark = im->nvals;
  loom_status s = LOOM_OK;
  for (size_t i = 0; !s && i < nin; i++) s = oimp_bind_as(im, g->inputs[i].name, &ins[i]);
  if (!s) s = oimp_import_graph(im, g);
  for (size_t j = 0; !s && j < g->n_outputs; j++) {
    if (!oimp_lookup(im, g->outputs[j].name, &outs[j])) {
      s = BAD(c->n, "output '%s' of the %s is not produced", g->outputs[j].name, attr);
      break;
    }
    if (!outs[j].seq && !outs[j].e) s = oimp_lookup_expr(im, g->outputs[j].name, &outs[j].e);
  }
  im->nvals = mark;
  if (s) {
    const loom_onnx_node *n = c->n;
    return loom_status_annotate(s, __FILE__, __LINE__, "in the %s of node %zu (%s%s%s%s)", attr, n->index, n->op_type,
                                *n->name ? " '" : "", n->name, *n->name ? "'" : "");
  }
  return LOOM_OK;
}

/* Binds the node's output i (when it is named) to b. */
static loom_status bind_out(nctx *c, size_t i, const oimp_binding *b) {
  if (i >= c->n->n_outputs || !*c->n->outputs[i]) return LOOM_OK;
  return oimp_bind_as(c->im, c->n->outputs[i], b);
}

/* The n values ys stacked along a new axis `axis` (in reverse order when rev). */
static loom_status stack(nctx *c, loom_graph_expr **ys, size_t n, int64_t axis, bool rev, loom_graph_expr **out) {
  loom_graph_expr **parts = malloc(n * sizeof *parts);
  if (!parts) return LOOM_OOM();
  loom_status s = LOOM_OK;
  int r = ys[0]->sinfo->kind == LOOM_SINFO_TENSOR ? ys[0]->sinfo->ndim : -1;
  if (r < 0) s = UNSUP(c->n, "a scan output's rank is unknown");
  if (!s && axis < 0) axis += r + 1;
  if (!s && (axis < 0 || axis > r)) s = BAD(c->n, "scan output axis %lld out of range for rank %d", (long long)axis, r + 1);
  for (size_t t = 0; !s && t < n; t++) {
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &axis));
    s = op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, ys[rev ? n - 1 - t : t], &parts[t]);
  }
  if (!s && n == 1) *out = parts[0];
  else if (!s) {
    oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
    s = oimp_emit(c, LOOM_GRAPH_OP_CONCAT, n, parts, NULL, out);
  }
  free(parts);
  return s;
}

/* x[idx] along axis (the axis removed). */
static loom_status take_at(nctx *c, loom_graph_expr *x, int64_t axis, int64_t idx, loom_graph_expr **y) {
  oimp_binding k;
  LOOM_PROPAGATE(const_scalar(c->im, LOOM_DTYPE_I64, idx, &k));
  loom_graph_expr *args[2] = {x, k.e};
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, args, NULL, y);
}

/* ---- If ------------------------------------------------------------------------------------ */

/* *shaped: same dtype and rank, dims not provably equal (the output then goes through a list chosen
 * at run time, its dims named afresh). */
static loom_status same_type(nctx *c, size_t j, const loom_graph_expr *a, const loom_graph_expr *b, bool *shaped) {
  *shaped = false;
  const loom_sinfo *x = a->sinfo, *y = b->sinfo;
  const char *why = "the condition is computed at run time and the branches' outputs differ";
  if (x->kind != LOOM_SINFO_TENSOR || y->kind != LOOM_SINFO_TENSOR) return UNSUP(c->n, "%s: output %zu is not a tensor", why, j);
  if (x->dtype != y->dtype)
    return UNSUP(c->n, "%s: output %zu has dtype %s in then_branch, %s in else_branch", why, j, loom_dtype_name(x->dtype),
                 loom_dtype_name(y->dtype));
  if (x->ndim < 0 || x->ndim != y->ndim || (x->ndim > 0 && (!x->dims || !y->dims)))
    return UNSUP(c->n, "%s: output %zu has rank %d in then_branch, %d in else_branch", why, j, x->ndim, y->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (x->dims[k] != y->dims[k] && loom_sym_prove_eq(c->im->cx, x->dims[k], y->dims[k]) != LOOM_SYM_TRUE) *shaped = true;
  return LOOM_OK;
}

static loom_status h_if(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  const loom_onnx_graph *br[2];
  LOOM_PROPAGATE(body_attr(c, "then_branch", &br[0]));
  LOOM_PROPAGATE(body_attr(c, "else_branch", &br[1]));
  size_t nout = c->n->n_outputs;
  for (int b = 0; b < 2; b++)
    if (br[b]->n_outputs != nout)
      return BAD(c->n, "%s has %zu outputs, the node %zu", b ? "else_branch" : "then_branch", br[b]->n_outputs, nout);
  if (nout > 64) return UNSUP(c->n, "%zu outputs (at most 64)", nout);
  oimp_binding o[2][64];
  LOOM_PROPAGATE(need_tensor(c, 0));
  c->bound = true;
  if (c->consts[0]) {
    if (c->consts[0]->numel != 1) return BAD(c->n, "the condition has %lld elements, not 1", (long long)c->consts[0]->numel);
    int b = truthy(c->consts[0]) ? 0 : 1;
    LOOM_PROPAGATE(run_body(c, b ? "else_branch" : "then_branch", br[b], 0, NULL, o[0]));
    for (size_t j = 0; j < nout; j++) LOOM_PROPAGATE(bind_out(c, j, &o[0][j]));
    return LOOM_OK;
  }
  loom_graph_expr *cond = c->args[0];
  const loom_sinfo *cs = cond->sinfo;
  if (cs->dtype != LOOM_DTYPE_BOOL) return BAD(c->n, "the condition must be bool, not %s", loom_dtype_name(cs->dtype));
  LOOM_PROPAGATE(run_body(c, "then_branch", br[0], 0, NULL, o[0]));
  LOOM_PROPAGATE(run_body(c, "else_branch", br[1], 0, NULL, o[1]));
  bool lists[64], shaped[64];
  for (size_t j = 0; j < nout; j++) {
    lists[j] = o[0][j].seq || o[1][j].seq || (o[0][j].e && o[0][j].e->sinfo->kind == LOOM_SINFO_LIST) ||
               (o[1][j].e && o[1][j].e->sinfo->kind == LOOM_SINFO_LIST);
    shaped[j] = false;
    if (!lists[j]) LOOM_PROPAGATE(same_type(c, j, o[0][j].e, o[1][j].e, &shaped[j]));
  }
  if (cs->ndim != 0) { /* a one-element tensor: to a scalar, so `where` broadcasts like the outputs */
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 0, NULL));
    LOOM_PROPAGATE(op1(c, LOOM_GRAPH_OP_RESHAPE, cond, &cond));
  }
  for (size_t j = 0; j < nout; j++) {
    if (!*c->n->outputs[j]) continue;
    loom_graph_expr *args[3] = {cond, o[0][j].e, o[1][j].e}, *y;
    if (lists[j]) { /* sequences or optionals: each branch's as a list value, one chosen at run time */
      for (int b = 0; b < 2; b++) {
        char nm[256];
        snprintf(nm, sizeof nm, "%s_%s", c->n->outputs[j], b ? "else" : "then");
        if (o[b][j].seq) LOOM_PROPAGATE(oimp_seq_to_list(c->im, o[b][j].seq, nm, &args[1 + b]));
        else if (!args[1 + b] || args[1 + b]->sinfo->kind != LOOM_SINFO_LIST)
          return UNSUP(c->n, "the condition is computed at run time and output %zu is a sequence in one branch only", j);
      }
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_SELECT, 3, args, c->n->outputs[j], &y));
    } else if (shaped[j]) {
      /* shapes that differ at run time (a detector's boxes: none kept, or the ones kept): each
       * branch's tensor an optional of one item, one chosen, its item read with fresh dims */
      for (int b = 0; b < 2; b++) {
        oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "optional", true));
        LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 1, &o[b][j].e, NULL, &args[1 + b]));
      }
      loom_graph_expr *sel, *item;
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_SELECT, 3, args, NULL, &sel));
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_GET, 1, &sel, NULL, &item));
      LOOM_PROPAGATE(oimp_name_dims(c, item, c->n->outputs[j], &y));
    } else {
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_WHERE, 3, args, c->n->outputs[j], &y));
    }
    LOOM_PROPAGATE(oimp_bind(c->im, c->n->outputs[j], y, NULL));
  }
  return LOOM_OK;
}

/* ---- Loop ---------------------------------------------------------------------------------- */

/* The loop unrolled (trip < 0: no M, the condition must fold to false within the cap). Sets
 * *dynamic when it cannot be (the body's condition depends on data, or the loop runs past the
 * cap) and nothing was bound: the caller imports the loop form instead. */
static loom_status unroll_loop(nctx *c, const loom_onnx_graph *g, int64_t trip, bool cond, bool *dynamic) {
  *dynamic = false;
  size_t nstate = c->nargs > 2 ? c->nargs - 2 : 0;
  if (g->n_outputs < 1 + nstate) return BAD(c->n, "the body has %zu outputs, fewer than 1 + %zu loop-carried values", g->n_outputs, nstate);
  size_t nscan = g->n_outputs - 1 - nstate;
  if (c->n->n_outputs > nstate + nscan)
    return BAD(c->n, "%zu outputs, the body gives %zu", c->n->n_outputs, nstate + nscan);
  if (trip < 0 && !cond) trip = 0;
  size_t cap_it = g->n_nodes ? CTL_MAX_UNROLLED_NODES / g->n_nodes : CTL_MAX_UNROLLED_NODES;
  if ((int64_t)cap_it > oimp_unroll_steps()) cap_it = (size_t)oimp_unroll_steps();
  if (trip > (int64_t)cap_it) return *dynamic = true, LOOM_OK;
  oimp_binding *st = calloc(2 * (1 + nstate + nscan) + 2, sizeof *st);
  size_t nit_cap = trip >= 0 ? (size_t)trip : 16, nit = 0;
  loom_graph_expr **scan = calloc(nscan * nit_cap + 1, sizeof *scan);
  if (!st || !scan) return free(st), free(scan), LOOM_OOM();
  oimp_binding *ins = st, *outs = st + 2 + nstate; /* ins: iter, cond, state...; outs: cond, state..., scan... */
  for (size_t i = 0; i < nstate; i++) {
    ins[2 + i] = in_binding(c, 2 + i);
    if (!ins[2 + i].e && !ins[2 + i].seq) { free(st), free(scan); return BAD(c->n, "loop-carried input %zu has no value", 2 + i); }
  }
  loom_status s = LOOM_OK;
  for (int64_t it = 0; !s && cond && (trip < 0 || it < trip); it++) {
    if (trip < 0 && nit == cap_it) {
      *dynamic = true;
      break;
    }
    if (!s) s = const_scalar(c->im, LOOM_DTYPE_I64, it, &ins[0]);
    if (!s) s = const_scalar(c->im, LOOM_DTYPE_BOOL, 1, &ins[1]);
    if (!s) s = run_body(c, "body", g, 2 + nstate, ins, outs);
    if (s) break;
    if (!outs[0].k || outs[0].k->numel != 1) { /* a data-dependent early exit */
      *dynamic = true;
      break;
    }
    cond = truthy(outs[0].k);
    for (size_t i = 0; i < nstate; i++) ins[2 + i] = outs[1 + i];
    if (nit == nit_cap) {
      loom_graph_expr **a = realloc(scan, nscan * nit_cap * 2 * sizeof *a + sizeof *a);
      if (!a) { s = LOOM_OOM(); break; }
      /* re-lay out rows [j][it] for the doubled capacity */
      for (size_t j = nscan; j-- > 0;)
        memmove(a + j * nit_cap * 2, a + j * nit_cap, nit_cap * sizeof *a);
      scan = a, nit_cap *= 2;
    }
    for (size_t j = 0; j < nscan; j++) {
      if (outs[1 + nstate + j].seq) { s = UNSUP(c->n, "scan output %zu of the body is a sequence", j); break; }
      scan[j * nit_cap + nit] = outs[1 + nstate + j].e;
    }
    nit++;
  }
  for (size_t i = 0; !s && !*dynamic && i < nstate; i++) s = bind_out(c, i, &ins[2 + i]);
  for (size_t j = 0; !s && !*dynamic && j < nscan; j++) {
    if (nstate + j >= c->n->n_outputs || !*c->n->outputs[nstate + j]) continue;
    if (nit == 0) return *dynamic = true, free(st), free(scan), LOOM_OK; /* the loop form knows the shape, or says why not */
    loom_graph_expr *y;
    s = stack(c, scan + j * nit_cap, nit, 0, false, &y);
    if (!s) s = oimp_bind(c->im, c->n->outputs[nstate + j], y, NULL);
  }
  free(st), free(scan);
  c->bound = true;
  return s;
}

/* Loop: unrolled when M and the condition are constants and every iteration's condition folds
 * (within the unrolling cap); otherwise the graph IR's loop (onnx_import_loop.c). The unrolling
 * is tried in a nested sequence that is dropped when it turns out impossible. */
static loom_status h_loop(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  const loom_onnx_graph *g;
  LOOM_PROPAGATE(body_attr(c, "body", &g));
  bool dynamic = (oimp_has_input(c, 0) && !c->consts[0]) ||
                 (oimp_has_input(c, 1) && (!c->consts[1] || c->consts[1]->numel != 1));
  int64_t trip = -1;
  bool cond = true;
  if (!dynamic && oimp_has_input(c, 0)) {
    LOOM_PROPAGATE(const_int(c, 0, "M", &trip));
    if (trip < 0) trip = 0;
  }
  if (!dynamic && oimp_has_input(c, 1)) cond = truthy(c->consts[1]);
  if (!dynamic) {
    loom_graph_builder_nest nest;
    imp *im = c->im;
    size_t mark = im->nvals, nused = im->nused;
    LOOM_PROPAGATE(loom_graph_builder_nest_begin(&im->b, &nest, true));
    loom_status s = unroll_loop(c, g, trip, cond, &dynamic);
    if (!s && !dynamic) return loom_graph_builder_nest_splice(&im->b, &nest);
    loom_status s2 = loom_graph_builder_nest_end(&im->b, &nest, NULL, NULL);
    if (s) return s2 ? (loom_status_free(s2), s) : s;
    LOOM_PROPAGATE(s2);
    im->nvals = mark, im->nused = nused;
    c->bound = false;
  }
  return oimp_loop_node(c, g);
}

/* ---- Scan ---------------------------------------------------------------------------------- */

typedef struct scan_spec {
  const loom_onnx_graph *g;
  size_t nstate, nin, nout;          /* loop-carried values, scan inputs, scan outputs */
  int64_t in_axes[8], in_rev[8];
  int64_t out_axes[8], out_rev[8];
} scan_spec;

static loom_status scan_ints(const nctx *c, const char *name, size_t n, int64_t *v) {
  const int64_t *a;
  size_t k;
  bool present;
  LOOM_PROPAGATE(oimp_attr_ints(c, name, &a, &k, &present));
  for (size_t i = 0; i < n; i++) v[i] = 0;
  if (!present) return LOOM_OK;
  if (k != n) return BAD(c->n, "attribute '%s' has %zu values, not %zu", name, k, n);
  for (size_t i = 0; i < n; i++) v[i] = a[i];
  return LOOM_OK;
}

/* One scan over states st[] and scan inputs xs[]: final states into st, each scan output's
 * stacked value into ys. Sets *dynamic (nothing made) when the length is not static or too
 * large to unroll: the loop form does it. */
static loom_status scan_run(nctx *c, const scan_spec *sp, oimp_binding *st, loom_graph_expr **xs, loom_graph_expr **ys,
                            bool *dynamic) {
  *dynamic = false;
  int64_t len = -1, ax[8];
  for (size_t j = 0; j < sp->nin; j++) {
    const loom_sinfo *si = xs[j]->sinfo;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 0 || !si->dims) return UNSUP(c->n, "scan input %zu's rank is unknown", j);
    ax[j] = sp->in_axes[j] < 0 ? sp->in_axes[j] + si->ndim : sp->in_axes[j];
    if (ax[j] < 0 || ax[j] >= si->ndim)
      return BAD(c->n, "scan input %zu: axis %lld out of range for rank %d", j, (long long)sp->in_axes[j], si->ndim);
    int64_t n;
    if (!loom_sym_is_const(si->dims[ax[j]], &n)) return *dynamic = true, LOOM_OK;
    if (len >= 0 && n != len) return BAD(c->n, "scan input %zu has length %lld along its axis, scan input 0 has %lld", j, (long long)n, (long long)len);
    len = n;
  }
  size_t cap_it = sp->g->n_nodes ? CTL_MAX_UNROLLED_NODES / sp->g->n_nodes : CTL_MAX_UNROLLED_NODES;
  if (len <= 0 || len > (int64_t)cap_it || len > oimp_unroll_steps()) return *dynamic = true, LOOM_OK;
  size_t nb = sp->nstate + sp->nin + sp->g->n_outputs;
  oimp_binding *b = calloc(nb, sizeof *b);
  loom_graph_expr **acc = calloc(sp->nout * (size_t)len + 1, sizeof *acc);
  if (!b || !acc) return free(b), free(acc), LOOM_OOM();
  oimp_binding *ins = b, *outs = b + sp->nstate + sp->nin;
  for (size_t i = 0; i < sp->nstate; i++) ins[i] = st[i];
  loom_status s = LOOM_OK;
  for (int64_t t = 0; !s && t < len; t++) {
    for (size_t j = 0; !s && j < sp->nin; j++) {
      loom_graph_expr *x;
      s = take_at(c, xs[j], ax[j], sp->in_rev[j] ? len - 1 - t : t, &x);
      ins[sp->nstate + j] = (oimp_binding){x, NULL, NULL, NULL};
    }
    if (!s) s = run_body(c, "body", sp->g, sp->nstate + sp->nin, ins, outs);
    for (size_t i = 0; !s && i < sp->nstate; i++) ins[i] = outs[i];
    for (size_t k = 0; !s && k < sp->nout; k++) {
      if (outs[sp->nstate + k].seq) s = UNSUP(c->n, "scan output %zu of the body is a sequence", k);
      acc[k * (size_t)len + (size_t)t] = outs[sp->nstate + k].e;
    }
  }
  for (size_t i = 0; !s && i < sp->nstate; i++) st[i] = ins[i];
  for (size_t k = 0; !s && k < sp->nout; k++) s = stack(c, acc + k * (size_t)len, (size_t)len, sp->out_axes[k], sp->out_rev[k] != 0, &ys[k]);
  free(b), free(acc);
  return s;
}

static loom_status h_scan(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  scan_spec sp = {0};
  int64_t nin;
  LOOM_PROPAGATE(body_attr(c, "body", &sp.g));
  if (!loom_onnx_node_attr(c->n, "num_scan_inputs")) return BAD(c->n, "attribute 'num_scan_inputs' is required");
  LOOM_PROPAGATE(oimp_attr_int(c, "num_scan_inputs", 0, &nin));
  bool v8 = c->im->opset < 9;
  size_t first = v8 ? 1 : 0; /* opset 8: input 0 is sequence_lens */
  static const char *const v9_attrs[] = {"scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"};
  for (size_t i = 0; i < 4; i++)
    if (v8 && loom_onnx_node_attr(c->n, v9_attrs[i])) return BAD(c->n, "attribute '%s' is not in Scan before opset 9", v9_attrs[i]);
  if (!v8 && loom_onnx_node_attr(c->n, "directions")) return BAD(c->n, "attribute 'directions' is Scan-8's (opset 9: scan_input_directions)");
  if (v8 && oimp_has_input(c, 0)) return UNSUP(c->n, "input 0 (sequence_lens) is not supported");
  if (nin < 1 || (size_t)nin > c->nargs - first || nin > 8)
    return BAD(c->n, "num_scan_inputs %lld does not fit the %zu inputs", (long long)nin, c->nargs - first);
  sp.nin = (size_t)nin, sp.nstate = c->nargs - first - sp.nin;
  if (sp.g->n_outputs < sp.nstate) return BAD(c->n, "the body has %zu outputs, fewer than its %zu states", sp.g->n_outputs, sp.nstate);
  sp.nout = sp.g->n_outputs - sp.nstate;
  if (sp.nout > 8) return UNSUP(c->n, "%zu scan outputs (at most 8)", sp.nout);
  if (c->n->n_outputs > sp.nstate + sp.nout) return BAD(c->n, "%zu outputs, the body gives %zu", c->n->n_outputs, sp.nstate + sp.nout);
  if (v8) {
    LOOM_PROPAGATE(scan_ints(c, "directions", sp.nin, sp.in_rev));
  } else {
    LOOM_PROPAGATE(scan_ints(c, "scan_input_axes", sp.nin, sp.in_axes));
    LOOM_PROPAGATE(scan_ints(c, "scan_input_directions", sp.nin, sp.in_rev));
    LOOM_PROPAGATE(scan_ints(c, "scan_output_axes", sp.nout, sp.out_axes));
    LOOM_PROPAGATE(scan_ints(c, "scan_output_directions", sp.nout, sp.out_rev));
  }
  oimp_binding st[8];
  loom_graph_expr *xs[8], *ys[8];
  for (size_t i = 0; i < sp.nstate; i++) {
    st[i] = in_binding(c, first + i);
    if (!st[i].e) return UNSUP(c->n, "state %zu is not a tensor", i);
  }
  for (size_t j = 0; j < sp.nin; j++) {
    LOOM_PROPAGATE(need_tensor(c, first + sp.nstate + j));
    xs[j] = c->args[first + sp.nstate + j];
  }
  c->bound = true;
  bool dynamic;
  if (!v8) {
    LOOM_PROPAGATE(scan_run(c, &sp, st, xs, ys, &dynamic));
    if (dynamic) {
      c->bound = false;
      return oimp_loop_node(c, sp.g); /* a run-time (or very large) length: the loop form */
    }
  } else {
    /* opset 8: axis 0 of every input and output is a batch, scanned separately */
    const loom_sinfo *si = xs[0]->sinfo;
    int64_t nbatch;
    if (si->kind != LOOM_SINFO_TENSOR || si->ndim < 1 || !si->dims || !loom_sym_is_const(si->dims[0], &nbatch) || nbatch < 1)
      return UNSUP(c->n, "the batch size (axis 0 of scan input 0) must be static and positive");
    if (nbatch > 1024) return UNSUP(c->n, "batch size %lld is too large to unroll", (long long)nbatch);
    loom_graph_expr **per = calloc((size_t)nbatch * (sp.nstate + sp.nout) + 1, sizeof *per);
    if (!per) return LOOM_OOM();
    loom_status s = LOOM_OK;
    for (int64_t bi = 0; !s && bi < nbatch; bi++) {
      oimp_binding sb[8];
      loom_graph_expr *xb[8], *yb[8];
      for (size_t i = 0; !s && i < sp.nstate; i++) {
        sb[i] = (oimp_binding){NULL, NULL, NULL, NULL};
        s = take_at(c, st[i].e, 0, bi, &sb[i].e);
      }
      for (size_t j = 0; !s && j < sp.nin; j++) s = take_at(c, xs[j], 0, bi, &xb[j]);
      if (!s) s = scan_run(c, &sp, sb, xb, yb, &dynamic);
      if (!s && dynamic) s = UNSUP(c->n, "Scan-8 needs a static positive length (the loop form takes Scan from opset 9)");
      for (size_t i = 0; !s && i < sp.nstate; i++) {
        if (!sb[i].e) s = UNSUP(c->n, "state %zu of the body is not a tensor", i);
        per[i * (size_t)nbatch + (size_t)bi] = sb[i].e;
      }
      for (size_t k = 0; !s && k < sp.nout; k++) per[(sp.nstate + k) * (size_t)nbatch + (size_t)bi] = yb[k];
    }
    for (size_t i = 0; !s && i < sp.nstate; i++) {
      st[i] = (oimp_binding){NULL, NULL, NULL, NULL};
      s = stack(c, per + i * (size_t)nbatch, (size_t)nbatch, 0, false, &st[i].e);
    }
    for (size_t k = 0; !s && k < sp.nout; k++) s = stack(c, per + (sp.nstate + k) * (size_t)nbatch, (size_t)nbatch, 0, false, &ys[k]);
    free(per);
    LOOM_PROPAGATE(s);
  }
  for (size_t i = 0; i < sp.nstate; i++) {
    if (!st[i].e) return UNSUP(c->n, "final state %zu is not a tensor", i);
    LOOM_PROPAGATE(bind_out(c, i, &st[i]));
  }
  for (size_t k = 0; k < sp.nout; k++) {
    oimp_binding y = {ys[k], NULL, NULL, NULL};
    LOOM_PROPAGATE(bind_out(c, sp.nstate + k, &y));
  }
  return LOOM_OK;
}

/* ---- sequences and optionals ---------------------------------------------------------------- */

static oimp_seq *new_seq(imp *im, size_t n, loom_dtype dt, bool optional) {
  loom_arena *a = loom_graph_module_arena(im->m);
  oimp_seq *q = LOOM_ARENA_NEW(a, oimp_seq);
  if (!q) return NULL;
  q->optional = optional, q->dtype = dt, q->n = n;
  q->items = LOOM_ARENA_ARRAY(a, loom_graph_expr *, n ? n : 1);
  q->consts = LOOM_ARENA_ARRAY(a, const loom_onnx_tensor *, n ? n : 1);
  return q->items && q->consts ? q : NULL;
}

/* Input i as a sequence (not an optional). */
static loom_status seq_in(const nctx *c, size_t i, const oimp_seq **q) {
  *q = c->seqs[i];
  if (!*q || (*q)->optional) return BAD(c->n, "input %zu '%s' must be a sequence", i, c->n->inputs[i]);
  return LOOM_OK;
}

/* Input i as a tensor of a sequence whose elements are dt. */
static loom_status tensor_in(const nctx *c, size_t i, loom_dtype dt) {
  if (!c->args[i]) return BAD(c->n, "input %zu '%s' must be a tensor", i, c->n->inputs[i]);
  loom_dtype x = c->args[i]->sinfo->dtype;
  if (dt != LOOM_DTYPE_UNKNOWN && x != LOOM_DTYPE_UNKNOWN && x != dt)
    return BAD(c->n, "input %zu '%s' is %s, the sequence holds %s", i, c->n->inputs[i], loom_dtype_name(x), loom_dtype_name(dt));
  return LOOM_OK;
}

/* A position in [0, n) (or [0, n] when `end_ok`, for insertion) from constant input i, or def. */
static loom_status position(const nctx *c, size_t i, size_t n, bool end_ok, int64_t def, size_t *pos) {
  int64_t p = def;
  if (oimp_has_input(c, i)) LOOM_PROPAGATE(const_int(c, i, "position", &p));
  int64_t orig = p;
  if (p < 0) p += (int64_t)n;
  if (p < 0 || p > (int64_t)n || (!end_ok && p == (int64_t)n))
    return BAD(c->n, "position %lld is out of range for a sequence of length %zu", (long long)orig, n);
  *pos = (size_t)p;
  return LOOM_OK;
}

static loom_status bind_seq_out(nctx *c, const oimp_seq *q) {
  c->bound = true;
  return oimp_bind_seq(c->im, c->n->outputs[0], q);
}

static loom_status h_seq_empty(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  int64_t code;
  LOOM_PROPAGATE(oimp_attr_int(c, "dtype", LOOM_ONNX_ELEM_FLOAT, &code));
  loom_dtype dt;
  if (!loom_onnx_elem_dtype((int32_t)code, &dt)) return UNSUP(c->n, "dtype %s is not supported", loom_onnx_elem_name((int32_t)code));
  oimp_seq *q = new_seq(c->im, 0, dt, false);
  return q ? bind_seq_out(c, q) : LOOM_OOM();
}

static loom_status h_seq_construct(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  loom_dtype dt = c->args[0] ? c->args[0]->sinfo->dtype : LOOM_DTYPE_UNKNOWN;
  for (size_t i = 0; i < c->nargs; i++) LOOM_PROPAGATE(tensor_in(c, i, dt));
  oimp_seq *q = new_seq(c->im, c->nargs, dt, false);
  if (!q) return LOOM_OOM();
  for (size_t i = 0; i < c->nargs; i++) q->items[i] = c->args[i], q->consts[i] = c->consts[i];
  return bind_seq_out(c, q);
}

static loom_status h_seq_insert(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  const oimp_seq *s;
  size_t p;
  LOOM_PROPAGATE(seq_in(c, 0, &s));
  LOOM_PROPAGATE(tensor_in(c, 1, s->dtype));
  LOOM_PROPAGATE(position(c, 2, s->n, true, (int64_t)s->n, &p));
  loom_dtype dt = s->dtype != LOOM_DTYPE_UNKNOWN ? s->dtype : c->args[1]->sinfo->dtype;
  oimp_seq *q = new_seq(c->im, s->n + 1, dt, false);
  if (!q) return LOOM_OOM();
  for (size_t i = 0, k = 0; i <= s->n; i++) {
    if (i == p) q->items[i] = c->args[1], q->consts[i] = c->consts[1];
    else q->items[i] = s->items[k], q->consts[i] = s->consts[k], k++;
  }
  return bind_seq_out(c, q);
}

static loom_status h_seq_erase(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  const oimp_seq *s;
  size_t p;
  LOOM_PROPAGATE(seq_in(c, 0, &s));
  LOOM_PROPAGATE(position(c, 1, s->n, false, -1, &p));
  oimp_seq *q = new_seq(c->im, s->n - 1, s->dtype, false);
  if (!q) return LOOM_OOM();
  for (size_t i = 0, k = 0; i < s->n; i++)
    if (i != p) q->items[k] = s->items[i], q->consts[k] = s->consts[i], k++;
  return bind_seq_out(c, q);
}

static loom_status h_seq_at(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const oimp_seq *s;
  size_t p;
  LOOM_PROPAGATE(seq_in(c, 0, &s));
  LOOM_PROPAGATE(position(c, 1, s->n, false, 0, &p));
  *out = s->items[p];
  c->folded = s->consts[p];
  return LOOM_OK;
}

static loom_status h_seq_length(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const oimp_seq *s;
  LOOM_PROPAGATE(seq_in(c, 0, &s));
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_I64, 0, NULL);
  if (!t) return LOOM_OOM();
  *(int64_t *)t->data = (int64_t)s->n;
  return oimp_fold_const(c, t, out);
}

static loom_status h_concat_from_seq(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const oimp_seq *s;
  int64_t axis, new_axis;
  LOOM_PROPAGATE(seq_in(c, 0, &s));
  if (!loom_onnx_node_attr(c->n, "axis")) return BAD(c->n, "attribute 'axis' is required");
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  LOOM_PROPAGATE(oimp_attr_int(c, "new_axis", 0, &new_axis));
  if (s->n == 0) return UNSUP(c->n, "the sequence is empty: the result's shape is unknown");
  if (new_axis) return stack(c, s->items, s->n, axis, false, out);
  int r = s->items[0]->sinfo->kind == LOOM_SINFO_TENSOR ? s->items[0]->sinfo->ndim : -1;
  if (axis < 0 && r < 0) return UNSUP(c->n, "a negative axis needs a known rank");
  if (axis < 0) axis += r;
  if (axis < 0 || (r >= 0 && axis >= r)) return BAD(c->n, "axis %lld out of range for rank %d", (long long)axis, r);
  if (s->n == 1) {
    *out = s->items[0];
    c->folded = s->consts[0];
    return LOOM_OK;
  }
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", axis));
  return oimp_emit(c, LOOM_GRAPH_OP_CONCAT, s->n, s->items, c->n->outputs[0], out);
}

static loom_status h_split_to_seq(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  int64_t axis, keep;
  LOOM_PROPAGATE(oimp_attr_int(c, "axis", 0, &axis));
  LOOM_PROPAGATE(oimp_attr_int(c, "keepdims", 1, &keep));
  LOOM_PROPAGATE(need_tensor(c, 0));
  LOOM_PROPAGATE(need_tensor(c, 1));
  const loom_sinfo *si = c->args[0]->sinfo;
  int r = oimp_in_rank(c, 0);
  if (r < 0 || !si->dims) return UNSUP(c->n, "the input's rank is unknown");
  int64_t ax = axis < 0 ? axis + r : axis, len;
  if (ax < 0 || ax >= r) return BAD(c->n, "axis %lld out of range for rank %d", (long long)axis, r);
  if (!loom_sym_is_const(si->dims[ax], &len)) {
    if (!oimp_has_input(c, 1)) return UNSUP(c->n, "the input's axis %lld must have a static length", (long long)ax);
    return oimp_split_runtime(c, ax, si->dims[ax]); /* onnx_import_list.c */
  }
  int64_t sizes[1024];
  size_t n = 0;
  bool squeeze = false;
  if (!oimp_has_input(c, 1)) {
    if (len > 1024) return UNSUP(c->n, "%lld parts (at most 1024)", (long long)len);
    for (int64_t k = 0; k < len; k++) sizes[n++] = 1;
    squeeze = keep == 0;
  } else {
    const loom_onnx_tensor *t = c->consts[1];
    if (!t) return oimp_split_runtime(c, ax, si->dims[ax]); /* sizes known only at run time: onnx_import_list.c */
    if (t->rank == 0) {
      int64_t chunk;
      LOOM_PROPAGATE(const_int(c, 1, "split", &chunk));
      if (chunk <= 0) return BAD(c->n, "split %lld must be positive", (long long)chunk);
      if (len / chunk + 1 > 1024) return UNSUP(c->n, "too many parts (at most 1024)");
      for (int64_t k = 0; k < len; k += chunk) sizes[n++] = len - k < chunk ? len - k : chunk;
    } else {
      LOOM_PROPAGATE(oimp_const_ints(c, 1, "split", sizes, 1024, &n));
      int64_t sum = 0;
      for (size_t k = 0; k < n; k++) {
        if (sizes[k] < 0) return BAD(c->n, "split %zu is negative (%lld)", k, (long long)sizes[k]);
        sum += sizes[k];
      }
      if (sum != len) return BAD(c->n, "the splits sum to %lld, the input's axis %lld has %lld", (long long)sum, (long long)ax, (long long)len);
    }
  }
  oimp_seq *q = new_seq(c->im, n, si->dtype, false);
  if (!q) return LOOM_OOM();
  int64_t at = 0;
  for (size_t k = 0; k < n; k++) {
    const loom_sym_expr *b = loom_sym_const(c->im->cx, at), *en = loom_sym_const(c->im->cx, at + sizes[k]);
    if (!b || !en) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &ax));
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "begin", 1, &b));
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "end", 1, &en));
    LOOM_PROPAGATE(op1(c, LOOM_GRAPH_OP_STRIDED_SLICE, c->args[0], &q->items[k]));
    if (squeeze) {
      oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &ax));
      LOOM_PROPAGATE(op1(c, LOOM_GRAPH_OP_SQUEEZE, q->items[k], &q->items[k]));
    }
    q->consts[k] = NULL, at += sizes[k];
  }
  return bind_seq_out(c, q);
}

static loom_status h_optional(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  if (c->nargs == 0) {
    const loom_onnx_attr *ty = loom_onnx_node_attr(c->n, "type");
    if (!ty) return BAD(c->n, "attribute 'type' is required when there is no input");
    const loom_onnx_value *sq = ty->type; /* the type of the element */
    if (sq && sq->kind == LOOM_ONNX_TYPE_SEQUENCE) { /* an empty Optional of a sequence: a list value of lists */
      loom_dtype dt = LOOM_DTYPE_F32;
      if (sq->elem && sq->elem->elem_type && !loom_onnx_elem_dtype(sq->elem->elem_type, &dt))
        return UNSUP(c->n, "element type %s is not supported", loom_onnx_elem_name(sq->elem->elem_type));
      loom_graph_expr *y;
      oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", dt));
      oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "optional", true));
      oimp_add_attr(c, loom_graph_attr_int(c->im->m, "nest", 1));
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 0, NULL, c->n->outputs[0], &y));
      c->bound = true;
      return oimp_bind(c->im, c->n->outputs[0], y, NULL);
    }
    oimp_seq *q = new_seq(c->im, 0, LOOM_DTYPE_UNKNOWN, true);
    return q ? bind_seq_out(c, q) : LOOM_OOM();
  }
  if (c->seqs[0]) { /* an Optional of a sequence built in the graph: a list value holding the sequence's */
    loom_graph_expr *l, *y;
    char nm[256];
    snprintf(nm, sizeof nm, "%s_seq", c->n->outputs[0]);
    LOOM_PROPAGATE(oimp_seq_to_list(c->im, c->seqs[0], nm, &l));
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "optional", true));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 1, &l, c->n->outputs[0], &y));
    c->bound = true;
    return oimp_bind(c->im, c->n->outputs[0], y, NULL);
  }
  oimp_seq *q = new_seq(c->im, 1, c->args[0]->sinfo->dtype, true);
  if (!q) return LOOM_OOM();
  q->items[0] = c->args[0], q->consts[0] = c->consts[0];
  return bind_seq_out(c, q);
}

static loom_status h_opt_has(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  bool has = c->nargs > 0 && c->args[0] ? true : c->nargs > 0 && c->seqs[0] ? (!c->seqs[0]->optional || c->seqs[0]->n > 0) : false;
  loom_onnx_tensor *t = oimp_new_tensor(c->im, LOOM_DTYPE_BOOL, 0, NULL);
  if (!t) return LOOM_OOM();
  *(uint8_t *)t->data = has;
  return oimp_fold_const(c, t, out);
}

static loom_status h_opt_get(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const oimp_seq *q = c->seqs[0];
  if (!q) { /* a tensor: itself */
    *out = c->args[0];
    return LOOM_OK;
  }
  if (!q->optional) return bind_seq_out(c, q);
  if (q->n == 0) return BAD(c->n, "input 0 '%s' is an empty optional", c->n->inputs[0]);
  *out = q->items[0];
  c->folded = q->consts[0];
  return LOOM_OK;
}

/* SequenceMap: the body once per element; additional inputs that are sequences give their
 * element i, tensors themselves. Each body output makes one output sequence. */
static loom_status h_seq_map(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e, (void)out;
  const loom_onnx_graph *g;
  const oimp_seq *s0;
  LOOM_PROPAGATE(body_attr(c, "body", &g));
  LOOM_PROPAGATE(seq_in(c, 0, &s0));
  for (size_t j = 1; j < c->nargs; j++) {
    if (!c->seqs[j]) continue;
    if (c->seqs[j]->optional) return BAD(c->n, "input %zu '%s' is an optional, not a sequence or tensor", j, c->n->inputs[j]);
    if (c->seqs[j]->n != s0->n)
      return BAD(c->n, "input %zu '%s' has %zu elements, input 0 has %zu", j, c->n->inputs[j], c->seqs[j]->n, s0->n);
  }
  size_t nout = g->n_outputs;
  if (c->n->n_outputs != nout) return BAD(c->n, "%zu outputs, the body gives %zu", c->n->n_outputs, nout);
  if (nout > 8) return UNSUP(c->n, "%zu outputs (at most 8)", nout);
  oimp_seq *res[8];
  for (size_t k = 0; k < nout; k++)
    if (!(res[k] = new_seq(c->im, s0->n, LOOM_DTYPE_UNKNOWN, false))) return LOOM_OOM();
  oimp_binding ins[8], outs[8];
  for (size_t i = 0; i < s0->n; i++) {
    for (size_t j = 0; j < c->nargs; j++)
      ins[j] = c->seqs[j] ? (oimp_binding){c->seqs[j]->items[i], c->seqs[j]->consts[i], NULL, NULL} : in_binding(c, j);
    LOOM_PROPAGATE(run_body(c, "body", g, c->nargs, ins, outs));
    for (size_t k = 0; k < nout; k++) {
      if (outs[k].seq) return UNSUP(c->n, "output %zu of the body is a sequence", k);
      res[k]->items[i] = outs[k].e, res[k]->consts[i] = outs[k].k;
      res[k]->dtype = outs[k].e->sinfo->dtype;
    }
  }
  c->bound = true;
  for (size_t k = 0; k < nout; k++)
    if (*c->n->outputs[k]) LOOM_PROPAGATE(oimp_bind_seq(c->im, c->n->outputs[k], res[k]));
  return LOOM_OK;
}

#define NOATTR " "
const op_entry oimp_ctl_table[] = {
    {"If", OIMP_OP_NONE, h_if, 1, 1, " then_branch else_branch ", true},
    {"Loop", OIMP_OP_NONE, h_loop, 0, 8, " body ", true},
    {"Scan", OIMP_OP_NONE, h_scan, 0, 8,
     " body num_scan_inputs scan_input_axes scan_input_directions scan_output_axes scan_output_directions directions ", true},
    {"SequenceEmpty", OIMP_OP_NONE, h_seq_empty, 0, 0, " dtype ", true},
    {"SequenceConstruct", OIMP_OP_NONE, h_seq_construct, 1, 8, NOATTR, true},
    {"SequenceInsert", OIMP_OP_NONE, h_seq_insert, 2, 3, NOATTR, true},
    {"SequenceErase", OIMP_OP_NONE, h_seq_erase, 1, 2, NOATTR, true},
    {"SequenceAt", OIMP_OP_NONE, h_seq_at, 2, 2, NOATTR, false},
    {"SequenceLength", OIMP_OP_NONE, h_seq_length, 1, 1, NOATTR, false},
    {"ConcatFromSequence", OIMP_OP_NONE, h_concat_from_seq, 1, 1, " axis new_axis ", false},
    {"SplitToSequence", OIMP_OP_NONE, h_split_to_seq, 1, 2, " axis keepdims ", true},
    {"SequenceMap", OIMP_OP_NONE, h_seq_map, 1, 8, " body ", true},
    {"Optional", OIMP_OP_NONE, h_optional, 0, 1, " type ", true},
    {"OptionalHasElement", OIMP_OP_NONE, h_opt_has, 0, 1, NOATTR, false},
    {"OptionalGetElement", OIMP_OP_NONE, h_opt_get, 1, 1, NOATTR, true},
};
const size_t oimp_ctl_table_len = sizeof oimp_ctl_table / sizeof oimp_ctl_table[0];

bool oimp_ctl_takes_seq(const op_entry *e) {
  for (size_t i = 0; i < oimp_ctl_table_len; i++)
    if (e == &oimp_ctl_table[i]) return true;
  return false;
}

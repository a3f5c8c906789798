/* onnx_import_ml.c — ops of domain ai.onnx.ml built from graph ops at import: Binarizer,
 * ArrayFeatureExtractor and TreeEnsemble (opset 5), each as onnx.reference's aionnxml does.
 *
 * TreeEnsemble: the trees are expanded at import from their roots as the reference builds them
 * (node, its true branch, its false branch; a node reached twice is expanded twice; the set of
 * a BRANCH_MEMBER node is the next run of membership_values up to a NaN, in that order) into
 * one table of states: internal nodes, then leaves, each leaf its own successor. Evaluation is
 * a fixed number of steps (the deepest tree's depth) on a [N, trees] state: gather each state's
 * feature, split and mode, compare, pick the true or false successor; then each tree's leaf
 * weight goes to its target under the aggregate function (SUM, AVERAGE, MIN, MAX). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

/* A new zeroed rank-1 tensor of n elements, to fill and then make a graph constant (as_const). */
static loom_status vec_const(nctx *c, loom_dtype dt, int64_t n, loom_onnx_tensor **t) {
  return (*t = oimp_new_tensor(c->im, dt, 1, &n)) ? LOOM_OK : LOOM_OOM();
}

/* The filled tensor t as a graph constant (the module copies the data now). */
static loom_status as_const(nctx *c, const loom_onnx_tensor *t, loom_graph_expr **e) {
  return (*e = oimp_const_of(c->im, t)) ? LOOM_OK : LOOM_OOM();
}

/* Stores v as element i of a float tensor (f32 or f64). */
static void put_f(loom_onnx_tensor *t, int64_t i, double v) {
  if (t->dtype == LOOM_DTYPE_F32) ((float *)t->data)[i] = (float)v;
  else ((double *)t->data)[i] = v;
}

/* Element i of a float tensor (f16 is not read: callers check the dtype). */
static double get_f(const loom_onnx_tensor *t, int64_t i) {
  return t->dtype == LOOM_DTYPE_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* ---- Binarizer: y = x > threshold, in x's dtype ------------------------------------------- */

static loom_status h_binarizer(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  double thr;
  LOOM_PROPAGATE(oimp_attr_float(c, "threshold", 0.0, &thr));
  const loom_sinfo *si = c->args[0]->sinfo;
  if (si->kind != LOOM_SINFO_TENSOR || si->dtype == LOOM_DTYPE_UNKNOWN) return UNSUP(c->n, "input 0 (X) needs a known dtype");
  if (si->dtype == LOOM_DTYPE_BOOL) return BAD(c->n, "input 0 (X) is bool; a number type is required");
  loom_graph_expr *gt;
  if (!loom_dtype_is_float(si->dtype)) thr = floor(thr); /* an integer x > thr exactly when x > floor(thr) */
  LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, c->args[0], thr, &gt));
  oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", si->dtype));
  return oimp_emit(c, LOOM_GRAPH_OP_CAST, 1, &gt, c->n->outputs[0], out);
}

/* ---- ArrayFeatureExtractor: X[..., indices.ravel()] (rank-1 X: a [1, k] result) ----------- */

static loom_status h_array_feature_extractor(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const loom_sinfo *xs = c->args[0]->sinfo, *is = c->args[1]->sinfo;
  if (xs->kind != LOOM_SINFO_TENSOR || xs->ndim < 1) return UNSUP(c->n, "input 0 (X) needs a known rank >= 1");
  if (is->kind != LOOM_SINFO_TENSOR || is->ndim < 0 || !is->dims) return UNSUP(c->n, "input 1 (Y) needs known dims");
  if (is->dtype != LOOM_DTYPE_I64 && is->dtype != LOOM_DTYPE_I32) return BAD(c->n, "input 1 (Y) must be int64 indices, not %s", loom_dtype_name(is->dtype));
  loom_graph_expr *idx = c->args[1], *y;
  if (is->ndim != 1) {
    const loom_sym_expr *k = loom_sym_const(c->im->cx, 1);
    for (int d = 0; k && d < is->ndim; d++) k = loom_sym_mul(c->im->cx, k, is->dims[d]);
    if (!k) return LOOM_OOM();
    oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 1, &k));
    LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_RESHAPE, idx, &idx));
  }
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", xs->ndim - 1));
  if (xs->ndim > 1) return oimp_emit(c, LOOM_GRAPH_OP_TAKE, 2, (loom_graph_expr *[]){c->args[0], idx}, c->n->outputs[0], out);
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_TAKE, c->args[0], idx, &y));
  int64_t zero = 0;
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &zero));
  return oimp_emit(c, LOOM_GRAPH_OP_EXPAND_DIMS, 1, &y, c->n->outputs[0], out);
}

/* ---- TreeEnsemble ------------------------------------------------------------------------- */

/* The most states (expanded nodes and leaves), tree depth and set size accepted. */
#define TE_MAX_STATES 65536
#define TE_MAX_DEPTH 64
#define TE_MAX_SET 256

/* Compare modes (the schema's nodes_modes). */
enum { TE_LEQ, TE_LT, TE_GTE, TE_GT, TE_EQ, TE_NEQ, TE_MEMBER, TE_NMODES };

/* One expanded state: an internal node, or a leaf (mode -1). */
typedef struct te_state {
  int mode;            /* TE_*, or -1 for a leaf */
  int64_t feature;     /* internal: the feature compared */
  double split;        /* internal: the split value; leaf: the weight */
  int64_t target;      /* leaf: the target */
  bool missing_true;   /* internal: a NaN feature takes the true branch */
  int64_t set_at, nset;/* MEMBER: the set, membership_values[set_at .. set_at + nset) */
  int64_t t, f;        /* internal: the successors (state indexes) */
} te_state;

/* The node's attributes and the expansion under way. */
typedef struct te {
  nctx *c;
  size_t nnodes;                              /* nodes_* length */
  const int64_t *feat, *tid, *fid, *tleaf, *fleaf, *mtt, *ltarget;
  size_t nleaves, nmtt;                       /* leaf_* length; nodes_missing_value_tracks_true length */
  int64_t nfeatures;                          /* X's dim 1 when known at import, else -1 */
  const loom_onnx_tensor *splits, *modes, *lweights, *members;
  int64_t next_member;                        /* the reference's iterator over membership_values */
  te_state *st;
  size_t nst, cap;
  int depth;                                  /* the deepest tree seen */
} te;

static loom_status te_push(te *s, te_state v, int64_t *at) {
  if (s->nst == TE_MAX_STATES) return UNSUP(s->c->n, "more than %d expanded tree nodes", TE_MAX_STATES);
  if (s->nst == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    te_state *p = realloc(s->st, cap * sizeof *p);
    if (!p) return LOOM_OOM();
    s->st = p, s->cap = cap;
  }
  s->st[s->nst] = v;
  *at = (int64_t)s->nst++;
  return LOOM_OK;
}

/* Expands node (or leaf) i at depth d into state *at, as the reference's build_node. */
static loom_status te_build(te *s, int64_t i, bool leaf, int d, int64_t *at) {
  nctx *c = s->c;
  if (d > TE_MAX_DEPTH) return UNSUP(c->n, "a tree deeper than %d nodes (or a cycle)", TE_MAX_DEPTH);
  if (d > s->depth) s->depth = d;
  te_state v = {.mode = -1};
  if (leaf) {
    if (i < 0 || (size_t)i >= s->nleaves) return BAD(c->n, "leaf %lld is out of range (%zu leaves)", (long long)i, s->nleaves);
    v.split = get_f(s->lweights, i), v.target = s->ltarget[i];
    return te_push(s, v, at);
  }
  if (i < 0 || (size_t)i >= s->nnodes) return BAD(c->n, "node %lld is out of range (%zu nodes)", (long long)i, s->nnodes);
  v.mode = ((const uint8_t *)s->modes->data)[i];
  if (v.mode >= TE_NMODES) return BAD(c->n, "nodes_modes[%lld] is %d (0 to 6)", (long long)i, v.mode);
  v.feature = s->feat[i], v.split = get_f(s->splits, i), v.missing_true = (size_t)i < s->nmtt && s->mtt[i];
  if (v.feature < 0 || (s->nfeatures >= 0 && v.feature >= s->nfeatures))
    return BAD(c->n, "nodes_featureids[%lld] = %lld is out of range (%lld features)", (long long)i, (long long)v.feature, (long long)s->nfeatures);
  if (v.mode == TE_MEMBER) {
    if (!s->members) return BAD(c->n, "node %lld is a set membership node but membership_values is absent", (long long)i);
    v.set_at = s->next_member;
    while (s->next_member < s->members->numel) { /* the reference stops at a NaN, or (its quirk) at a 0 */
      double m = get_f(s->members, s->next_member++);
      if (m == 0 || isnan(m)) break;
      v.nset++;
    }
    if (v.nset > TE_MAX_SET) return UNSUP(c->n, "a membership set of %lld values (at most %d)", (long long)v.nset, TE_MAX_SET);
  }
  LOOM_PROPAGATE(te_push(s, v, at));
  int64_t t, f, me = *at;
  LOOM_PROPAGATE(te_build(s, s->tid[i], s->tleaf[i] != 0, d + 1, &t));
  LOOM_PROPAGATE(te_build(s, s->fid[i], s->fleaf[i] != 0, d + 1, &f));
  s->st[me].t = t, s->st[me].f = f;
  return LOOM_OK;
}

/* An INTS attribute that must be present, of length want (0: any; *n gets it). */
static loom_status te_ints(nctx *c, const char *name, size_t want, const int64_t **v, size_t *n) {
  bool pr;
  LOOM_PROPAGATE(oimp_attr_ints(c, name, v, n, &pr));
  if (!pr) return BAD(c->n, "attribute '%s' is required", name);
  if (want && *n != want) return BAD(c->n, "attribute '%s' has %zu values for %zu nodes", name, *n, want);
  return LOOM_OK;
}

/* A TENSOR attribute of `want` elements (0: any) and dtype dt (LOOM_DTYPE_UNKNOWN: X's float dtype). */
static loom_status te_tensor(nctx *c, const char *name, bool required, int64_t want, loom_dtype dt, const loom_onnx_tensor **t) {
  const loom_onnx_attr *a = loom_onnx_node_attr(c->n, name);
  *t = NULL;
  if (!a) return required ? BAD(c->n, "attribute '%s' is required", name) : LOOM_OK;
  if (a->kind != LOOM_ONNX_ATTR_TENSOR || !a->t) return BAD(c->n, "attribute '%s' must be a tensor", name);
  if (a->t->dtype != dt) return BAD(c->n, "attribute '%s' has dtype %s (%s expected)", name, loom_dtype_name(a->t->dtype), loom_dtype_name(dt));
  if (want && a->t->numel != want) return BAD(c->n, "attribute '%s' has %lld values (%lld expected)", name, (long long)a->t->numel, (long long)want);
  *t = a->t;
  return LOOM_OK;
}

/* take(table, state) along axis 0. */
static loom_status te_take(nctx *c, loom_graph_expr *table, loom_graph_expr *state, loom_graph_expr **y) {
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 0));
  return oimp_op2(c, LOOM_GRAPH_OP_TAKE, table, state, y);
}

/* The tables of the expanded states as graph constants: feature, split, mode, missing-true,
 * successors, and the membership sets ([states, K] padded with NaN). */
typedef struct te_tables {
  loom_graph_expr *feat, *split, *mode, *mtt, *t, *f, *sets;
  int64_t k; /* set columns (0: no MEMBER node) */
} te_tables;

static loom_status te_make_tables(te *s, loom_dtype dt, te_tables *tb) {
  nctx *c = s->c;
  int64_t n = (int64_t)s->nst;
  loom_onnx_tensor *feat, *split, *mode, *mtt, *t, *f;
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_I64, n, &feat));
  LOOM_PROPAGATE(vec_const(c, dt, n, &split));
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_I64, n, &mode));
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_BOOL, n, &mtt));
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_I64, n, &t));
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_I64, n, &f));
  tb->k = 0;
  for (int64_t i = 0; i < n; i++) {
    const te_state *v = &s->st[i];
    bool leaf = v->mode < 0;
    ((int64_t *)feat->data)[i] = leaf ? 0 : v->feature;
    put_f(split, i, leaf ? 0 : v->split);
    ((int64_t *)mode->data)[i] = leaf ? TE_LEQ : v->mode;
    ((uint8_t *)mtt->data)[i] = !leaf && v->missing_true;
    ((int64_t *)t->data)[i] = leaf ? i : v->t;
    ((int64_t *)f->data)[i] = leaf ? i : v->f;
    if (v->mode == TE_MEMBER && v->nset > tb->k) tb->k = v->nset;
  }
  LOOM_PROPAGATE(as_const(c, feat, &tb->feat));
  LOOM_PROPAGATE(as_const(c, split, &tb->split));
  LOOM_PROPAGATE(as_const(c, mode, &tb->mode));
  LOOM_PROPAGATE(as_const(c, mtt, &tb->mtt));
  LOOM_PROPAGATE(as_const(c, t, &tb->t));
  LOOM_PROPAGATE(as_const(c, f, &tb->f));
  if (!tb->k) return LOOM_OK;
  int64_t dims[2] = {n, tb->k};
  loom_onnx_tensor *sets = oimp_new_tensor(c->im, dt, 2, dims);
  if (!sets) return LOOM_OOM();
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < tb->k; j++) {
      const te_state *v = &s->st[i];
      put_f(sets, i * tb->k + j, v->mode == TE_MEMBER && j < v->nset ? get_f(s->members, v->set_at + j) : NAN);
    }
  return as_const(c, sets, &tb->sets);
}

/* One step: state -> its true or false successor (x: [N, F], state: [N, T] i64). */
static loom_status te_step(nctx *c, const te_tables *tb, loom_graph_expr *x, loom_graph_expr *state, loom_graph_expr **next) {
  loom_graph_expr *fe, *xv, *sp, *md, *cond = NULL, *tn, *fn;
  LOOM_PROPAGATE(te_take(c, tb->feat, state, &fe));
  oimp_add_attr(c, loom_graph_attr_int(c->im->m, "axis", 1));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_GATHER_ELEMENTS, x, fe, &xv));
  LOOM_PROPAGATE(te_take(c, tb->split, state, &sp));
  LOOM_PROPAGATE(te_take(c, tb->mode, state, &md));
  static const loom_graph_op cmp[TE_NMODES - 1] = {LOOM_GRAPH_OP_LESS_EQUAL, LOOM_GRAPH_OP_LESS,  LOOM_GRAPH_OP_GREATER_EQUAL,
                                                   LOOM_GRAPH_OP_GREATER,    LOOM_GRAPH_OP_EQUAL, LOOM_GRAPH_OP_NOT_EQUAL};
  for (int m = 0; m < TE_NMODES; m++) {
    loom_graph_expr *r, *is;
    if (m == TE_MEMBER) {
      if (!tb->k) continue;
      loom_graph_expr *sets, *xe;
      int64_t two = 2;
      LOOM_PROPAGATE(te_take(c, tb->sets, state, &sets)); /* [N, T, K] */
      oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &two));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, xv, &xe));
      LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_EQUAL, xe, sets, &r));
      oimp_add_attr(c, loom_graph_attr_dtype(c->im->m, "dtype", LOOM_DTYPE_F32));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_CAST, r, &r));
      oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &two));
      LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_MAX, r, &r));
      LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_GREATER, r, 0, &r));
    } else {
      LOOM_PROPAGATE(oimp_op2(c, cmp[m], xv, sp, &r));
    }
    LOOM_PROPAGATE(oimp_op_k(c, LOOM_GRAPH_OP_EQUAL, md, m, &is));
    LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, is, r, &r));
    if (cond) LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_OR, cond, r, &cond));
    else cond = r;
  }
  loom_graph_expr *nan, *mt;
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_NOT_EQUAL, xv, xv, &nan));
  LOOM_PROPAGATE(te_take(c, tb->mtt, state, &mt));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_AND, nan, mt, &mt));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_LOGICAL_OR, cond, mt, &cond));
  LOOM_PROPAGATE(te_take(c, tb->t, state, &tn));
  LOOM_PROPAGATE(te_take(c, tb->f, state, &fn));
  return oimp_op3(c, LOOM_GRAPH_OP_WHERE, cond, tn, fn, next);
}

/* Reads the attributes and expands the trees into s; roots[k]: tree k's first state. */
static loom_status te_expand(nctx *c, te *s, loom_dtype dt, int64_t **roots, size_t *ntrees) {
  size_t n, nm;
  const int64_t *r;
  LOOM_PROPAGATE(te_ints(c, "nodes_featureids", 0, &s->feat, &s->nnodes));
  n = s->nnodes;
  LOOM_PROPAGATE(te_ints(c, "nodes_truenodeids", n, &s->tid, &nm));
  LOOM_PROPAGATE(te_ints(c, "nodes_falsenodeids", n, &s->fid, &nm));
  LOOM_PROPAGATE(te_ints(c, "nodes_trueleafs", n, &s->tleaf, &nm));
  LOOM_PROPAGATE(te_ints(c, "nodes_falseleafs", n, &s->fleaf, &nm));
  LOOM_PROPAGATE(te_ints(c, "leaf_targetids", 0, &s->ltarget, &s->nleaves));
  LOOM_PROPAGATE(te_ints(c, "tree_roots", 0, &r, ntrees));
  if (!*ntrees) return BAD(c->n, "attribute 'tree_roots' is empty");
  bool pr;
  LOOM_PROPAGATE(oimp_attr_ints(c, "nodes_missing_value_tracks_true", &s->mtt, &s->nmtt, &pr));
  if (pr && s->nmtt != n) return BAD(c->n, "attribute 'nodes_missing_value_tracks_true' has %zu values for %zu nodes", s->nmtt, n);
  LOOM_PROPAGATE(te_tensor(c, "nodes_splits", true, (int64_t)n, dt, &s->splits));
  LOOM_PROPAGATE(te_tensor(c, "nodes_modes", true, (int64_t)n, LOOM_DTYPE_U8, &s->modes));
  LOOM_PROPAGATE(te_tensor(c, "leaf_weights", true, (int64_t)s->nleaves, dt, &s->lweights));
  LOOM_PROPAGATE(te_tensor(c, "membership_values", false, 0, dt, &s->members));
  if (!(*roots = malloc(*ntrees * sizeof **roots))) return LOOM_OOM();
  for (size_t k = 0; k < *ntrees; k++) {
    int64_t i = r[k];
    if (i < 0 || (size_t)i >= n) return BAD(c->n, "tree_roots[%zu] = %lld is out of range (%zu nodes)", k, (long long)i, n);
    bool leaf = s->tleaf[i] && s->fleaf[i] && s->tid[i] == s->fid[i]; /* a tree that is one leaf */
    LOOM_PROPAGATE(te_build(s, leaf ? s->tid[i] : i, leaf, 0, &(*roots)[k]));
  }
  return LOOM_OK;
}

/* The leaves' weights per target: [N, T] leaf weights and targets -> [N, n_targets]. */
static loom_status te_aggregate(nctx *c, int64_t agg, int64_t ntargets, size_t ntrees, loom_graph_expr *w, loom_graph_expr *tg,
                                loom_graph_expr **y) {
  loom_onnx_tensor *ar;
  loom_graph_expr *are, *hot, *we, *v;
  int64_t two = 2, one = 1;
  loom_dtype dt = w->sinfo->dtype;
  LOOM_PROPAGATE(vec_const(c, LOOM_DTYPE_I64, ntargets, &ar));
  for (int64_t j = 0; j < ntargets; j++) ((int64_t *)ar->data)[j] = j;
  LOOM_PROPAGATE(as_const(c, ar, &are));
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &two));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, tg, &tg));
  LOOM_PROPAGATE(oimp_op2(c, LOOM_GRAPH_OP_EQUAL, tg, are, &hot)); /* [N, T, n_targets] */
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &two));
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_EXPAND_DIMS, w, &we));
  double fill = agg == 2 ? (dt == LOOM_DTYPE_F32 ? 3.4028234663852886e38 : 1.7976931348623157e308) : agg == 3 ? (dt == LOOM_DTYPE_F32 ? -3.4028234663852886e38 : -1.7976931348623157e308) : 0;
  loom_graph_expr *k;
  LOOM_PROPAGATE(oimp_scalar(c, dt, fill, &k));
  LOOM_PROPAGATE(oimp_op3(c, LOOM_GRAPH_OP_WHERE, hot, we, k, &v));
  static const loom_graph_op red[4] = {LOOM_GRAPH_OP_SUM, LOOM_GRAPH_OP_SUM, LOOM_GRAPH_OP_MIN, LOOM_GRAPH_OP_MAX};
  oimp_add_attr(c, loom_graph_attr_ints(c->im->m, "axes", 1, &one));
  if (agg != 0) return oimp_emit(c, red[agg], 1, &v, c->n->outputs[0], y);
  LOOM_PROPAGATE(oimp_op1(c, LOOM_GRAPH_OP_SUM, v, &v));
  LOOM_PROPAGATE(oimp_scalar(c, dt, (double)ntrees, &k));
  return oimp_emit(c, LOOM_GRAPH_OP_DIV, 2, (loom_graph_expr *[]){v, k}, c->n->outputs[0], y);
}

static loom_status h_tree_ensemble(nctx *c, const op_entry *e, loom_graph_expr **out) {
  (void)e;
  const loom_sinfo *xs = c->args[0]->sinfo;
  if (xs->kind != LOOM_SINFO_TENSOR || xs->ndim != 2 || !xs->dims) return UNSUP(c->n, "input 0 (X) must be [N, features] of known rank 2");
  loom_dtype dt = xs->dtype;
  if (dt != LOOM_DTYPE_F32 && dt != LOOM_DTYPE_F64) return UNSUP(c->n, "input 0 (X) has dtype %s (float or double only)", loom_dtype_name(dt));
  int64_t agg, post, ntargets;
  LOOM_PROPAGATE(oimp_attr_int(c, "aggregate_function", 1, &agg));
  LOOM_PROPAGATE(oimp_attr_int(c, "post_transform", 0, &post));
  LOOM_PROPAGATE(oimp_attr_int(c, "n_targets", 0, &ntargets));
  if (agg < 0 || agg > 3) return BAD(c->n, "attribute 'aggregate_function' is %lld (0 to 3)", (long long)agg);
  if (post != 0) return UNSUP(c->n, "attribute 'post_transform' is %lld (only 0, NONE)", (long long)post);
  if (ntargets < 1 || ntargets > (1 << 20)) return BAD(c->n, "attribute 'n_targets' is %lld (>= 1 required)", (long long)ntargets);
  te s = {.c = c, .nfeatures = -1};
  if (!loom_sym_is_const(xs->dims[1], &s.nfeatures)) s.nfeatures = -1;
  int64_t *roots = NULL;
  size_t ntrees = 0;
  loom_status st = te_expand(c, &s, dt, &roots, &ntrees);
  for (size_t i = 0; !st && i < s.nst; i++) {
    const te_state *v = &s.st[i];
    if (v->mode < 0 && (v->target < 0 || v->target >= ntargets))
      st = BAD(c->n, "a leaf's target %lld is out of range (n_targets %lld)", (long long)v->target, (long long)ntargets);
  }
  te_tables tb;
  loom_graph_expr *state = NULL, *w, *tg;
  loom_onnx_tensor *rt = NULL, *wt, *tt;
  if (!st) st = te_make_tables(&s, dt, &tb);
  if (!st) st = vec_const(c, LOOM_DTYPE_I64, (int64_t)ntrees, &rt);
  if (!st) memcpy(rt->data, roots, ntrees * sizeof *roots), st = as_const(c, rt, &state);
  if (!st) {
    const loom_sym_expr *nt = loom_sym_const(c->im->cx, (int64_t)ntrees), *sh[2] = {xs->dims[0], nt};
    if (!nt) st = LOOM_OOM();
    else {
      oimp_add_attr(c, loom_graph_attr_syms(c->im->m, "shape", 2, sh));
      st = oimp_op1(c, LOOM_GRAPH_OP_BROADCAST_TO, state, &state);
    }
  }
  for (int d = 0; !st && d < s.depth; d++) st = te_step(c, &tb, c->args[0], state, &state);
  if (!st) st = vec_const(c, dt, (int64_t)s.nst, &wt);
  if (!st) st = vec_const(c, LOOM_DTYPE_I64, (int64_t)s.nst, &tt);
  if (!st) {
    for (size_t i = 0; i < s.nst; i++) {
      bool leaf = s.st[i].mode < 0;
      put_f(wt, (int64_t)i, leaf ? s.st[i].split : 0);
      ((int64_t *)tt->data)[i] = leaf ? s.st[i].target : 0;
    }
    st = as_const(c, wt, &w);
  }
  if (!st) st = as_const(c, tt, &tg);
  if (!st) st = te_take(c, w, state, &w);
  if (!st) st = te_take(c, tg, state, &tg);
  if (!st) st = te_aggregate(c, agg, ntargets, ntrees, w, tg, out);
  free(s.st), free(roots);
  return st;
}

/* domain ai.onnx.ml (onnx_tables.def) */
const op_entry oimp_ml_table[] = {
    {"Binarizer", OIMP_OP_NONE, h_binarizer, 1, 1, " threshold ", false},
    {"ArrayFeatureExtractor", OIMP_OP_NONE, h_array_feature_extractor, 2, 2, " ", false},
    {"TreeEnsemble", OIMP_OP_NONE, h_tree_ensemble, 1, 1,
     " aggregate_function leaf_targetids leaf_weights membership_values n_targets nodes_falseleafs nodes_falsenodeids"
     " nodes_featureids nodes_hitrates nodes_missing_value_tracks_true nodes_modes nodes_splits nodes_trueleafs"
     " nodes_truenodeids post_transform tree_roots ",
     false},
};
const size_t oimp_ml_table_len = sizeof oimp_ml_table / sizeof oimp_ml_table[0];

/* onnx_import_list.c — sequences and optionals known only at run time, as the graph IR's list
 * values (docs/ir.md "Lists"; graph/op_list.c).
 *
 * The importer keeps its static lists (oimp_seq, onnx_import_ctl.c) wherever a sequence's
 * length and an optional's presence are known at import: every op on them resolves while
 * importing and nothing reaches the graph. A list value appears where they are not known:
 * - a graph input declared as a sequence or optional is a List / Optional parameter (items: the
 *   declared element type and rank; each item's dims are its own);
 * - an op given a list value runs as a list op: Identity, SequenceInsert / Erase / At / Length,
 *   OptionalHasElement / OptionalGetElement, Optional of a list value;
 * - a static list that is a graph output is made a list value there (list_new).
 * A tensor read out of a list (SequenceAt, OptionalGetElement) of known rank is match_cast to
 * fresh dims named after the ONNX value, so later ops see symbolic shapes. */
#include <stdio.h>
#include <string.h>

#include "frontend/onnx/onnx_import_internal.h"

loom_status oimp_list_sinfo(imp *im, const loom_onnx_value *v, int depth, const loom_sinfo **out) {
  bool opt = v->kind == LOOM_ONNX_TYPE_OPTIONAL;
  const loom_onnx_value *e = v->elem;
  if (depth > 8) return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': lists nested more than 8 deep", v->name);
  const loom_sinfo *it;
  if (e && (e->kind == LOOM_ONNX_TYPE_SEQUENCE || e->kind == LOOM_ONNX_TYPE_OPTIONAL)) {
    LOOM_PROPAGATE(oimp_list_sinfo(im, e, depth + 1, &it));
  } else if (e && e->kind != LOOM_ONNX_TYPE_TENSOR) {
    return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': a %s of maps or sparse tensors is not supported", v->name,
                      opt ? "optional" : "sequence");
  } else {
    loom_dtype dt = LOOM_DTYPE_UNKNOWN;
    if (e && e->elem_type && !loom_onnx_elem_dtype(e->elem_type, &dt))
      return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': element type %s is not supported", v->name,
                        loom_onnx_elem_name(e->elem_type));
    int nd = e && e->has_shape ? (int)e->rank : LOOM_SINFO_NDIM_UNKNOWN;
    if (nd > 8) return LOOM_ERROR(UNIMPLEMENTED, "graph input '%s': items of rank %d", v->name, nd);
    it = loom_sinfo_tensor(im->m, dt, nd, NULL, NULL);
  }
  *out = it ? loom_sinfo_list(im->m, it, NULL, opt) : NULL;
  return *out ? LOOM_OK : LOOM_OOM();
}

loom_status oimp_seq_to_list(imp *im, const oimp_seq *sq, const char *name, loom_graph_expr **out) {
  nctx c = {.im = im};
  loom_graph_expr *items[OIMP_MAX_IN];
  if (sq->n > OIMP_MAX_IN)
    return LOOM_ERROR(UNIMPLEMENTED, "'%s': a sequence of %zu items as a graph output (at most %d)", name, sq->n, OIMP_MAX_IN);
  for (size_t i = 0; i < sq->n; i++) {
    if (!sq->items[i]) return LOOM_ERROR(UNIMPLEMENTED, "'%s': item %zu is not a tensor", name, i);
    items[i] = sq->items[i];
  }
  loom_dtype dt = sq->dtype == LOOM_DTYPE_UNKNOWN ? LOOM_DTYPE_F32 : sq->dtype;
  oimp_add_attr(&c, loom_graph_attr_dtype(im->m, "dtype", dt));
  if (sq->optional) oimp_add_attr(&c, loom_graph_attr_bool(im->m, "optional", true));
  loom_graph_builder *b = &im->b;
  const char *nm = oimp_ir_name(im, name);
  if (!nm) return LOOM_OOM();
  return loom_graph_builder_emit(b, loom_graph_call_op(im->m, LOOM_GRAPH_OP_LIST_NEW, sq->n, items, c.nattrs, c.attrs), nm,
                                 out);
}

/* Whether input i of the node is a list value. */
static bool is_list(const nctx *c, size_t i) {
  return i < c->nargs && c->args[i] && c->args[i]->sinfo && c->args[i]->sinfo->kind == LOOM_SINFO_LIST;
}

loom_status oimp_name_dims(nctx *c, loom_graph_expr *y, const char *onnx, loom_graph_expr **out) {
  const loom_sinfo *s = y->sinfo;
  *out = y;
  if (s->kind != LOOM_SINFO_TENSOR || s->ndim < 0 || s->dims) return LOOM_OK;
  imp *im = c->im;
  const loom_sym_expr *dims[8];
  char base[128];
  onnx = oimp_sym_base(c, onnx, "item", base, sizeof base);
  for (int k = 0; k < s->ndim; k++) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s_d%d", onnx, k);
    const char *nm = oimp_ir_name(im, buf);
    if (!nm || !(dims[k] = loom_sym_var_new(im->cx, nm, LOOM_SYM_VAR_SHAPE))) return LOOM_OOM();
  }
  const loom_sinfo *to = loom_sinfo_tensor(im->m, s->dtype, s->ndim, dims, s->device);
  char buf[256];
  snprintf(buf, sizeof buf, "%s_shaped", onnx);
  const char *nm = oimp_ir_name(im, buf);
  if (!to || !nm) return LOOM_OOM();
  loom_status st = loom_graph_builder_match_cast(&im->b, y, to, nm, out);
  if (st) {
    loom_status e = oimp_node_err(loom_status_code(st), c->n, "%s", loom_status_message(st));
    loom_status_free(st);
    return e;
  }
  return LOOM_OK;
}

/* ---- SequenceMap over a list value: a loop over its length ------------------------------------ */

/* What the loop's body needs: the node's body graph and how many outputs it has. */
typedef struct map_loop {
  const loom_onnx_graph *g; /* the `body` attribute */
} map_loop;

/* One iteration: item i of every list input (match_cast to fresh dims), the other inputs as
 * they are, the body imported on them, each output appended to its carried list. */
static loom_status map_body(nctx *c, void *ud, const loom_sym_expr *iter, loom_graph_expr *const *params,
                            loom_graph_expr **cond_out, loom_graph_expr **next, loom_graph_expr **scans) {
  (void)cond_out, (void)scans;
  const map_loop *ml = ud;
  imp *im = c->im;
  const loom_onnx_graph *g = ml->g;
  loom_graph_expr *pos;
  oimp_add_attr(c, loom_graph_attr_syms(im->m, "values", 1, &iter));
  oimp_add_attr(c, loom_graph_attr_int(im->m, "scalar", 1));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, NULL, &pos));
  for (size_t j = 0; j < c->nargs; j++) {
    loom_graph_expr *x = c->args[j];
    if (is_list(c, j)) {
      loom_graph_expr *ab[2] = {c->args[j], pos}, *g0;
      LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_GET, 2, ab, NULL, &g0));
      LOOM_PROPAGATE(oimp_name_dims(c, g0, g->inputs[j].name, &x));
    }
    LOOM_PROPAGATE(oimp_bind(im, g->inputs[j].name, x, NULL));
  }
  loom_status s = oimp_import_graph(im, g);
  for (size_t o = 0; !s && o < g->n_outputs; o++) {
    loom_graph_expr *y;
    s = oimp_lookup_expr(im, g->outputs[o].name, &y);
    if (s) break;
    loom_graph_expr *ab[2] = {params[o], y};
    s = oimp_emit(c, LOOM_GRAPH_OP_LIST_INSERT, 2, ab, NULL, &next[o]);
  }
  if (s) {
    const loom_onnx_node *n = c->n;
    return loom_status_annotate(s, __FILE__, __LINE__, "in the body of node %zu (%s%s%s%s)", n->index, n->op_type,
                                *n->name ? " '" : "", n->name, *n->name ? "'" : "");
  }
  return LOOM_OK;
}

/* SequenceMap whose input 0 is a list value: for i < length(input 0), the body on item i of each
 * list input (every list must be that long: list_get checks) and on the tensor inputs as they are;
 * output k is the list of the body's output k. */
static loom_status seq_map(nctx *c) {
  imp *im = c->im;
  const loom_onnx_node *n = c->n;
  const loom_onnx_attr *a = loom_onnx_node_attr(n, "body");
  if (!a || a->kind != LOOM_ONNX_ATTR_GRAPH) return BAD(n, "attribute 'body' (a graph) is required");
  const loom_onnx_graph *g = a->g;
  if (g->n_inputs != c->nargs) return BAD(n, "the body takes %zu inputs, the node gives %zu", g->n_inputs, c->nargs);
  if (g->n_outputs != n->n_outputs || g->n_outputs > 16)
    return BAD(n, "the body has %zu outputs, the node %zu (at most 16)", g->n_outputs, n->n_outputs);
  for (size_t j = 0; j < c->nargs; j++)
    if (!c->args[j]) return BAD(n, "input %zu has no value", j);
  loom_graph_expr *count, *inits[16], *finals[16];
  const char *names[16];
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_LENGTH, 1, c->args, NULL, &count));
  for (size_t o = 0; o < g->n_outputs; o++) {
    loom_dtype dt = LOOM_DTYPE_F32;
    if (g->outputs[o].elem_type && !loom_onnx_elem_dtype(g->outputs[o].elem_type, &dt))
      return UNSUP(n, "body output %zu: element type %s", o, loom_onnx_elem_name(g->outputs[o].elem_type));
    oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", dt));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 0, NULL, NULL, &inits[o]));
    names[o] = n->outputs[o];
  }
  map_loop ml = {g};
  LOOM_PROPAGATE(oimp_loop_build(c, n->outputs[0], count, NULL, g->n_outputs, inits, names, 0, map_body, &ml, finals, NULL));
  for (size_t o = 0; o < g->n_outputs; o++)
    if (*n->outputs[o]) LOOM_PROPAGATE(oimp_bind(im, n->outputs[o], finals[o], NULL));
  return LOOM_OK;
}

/* ---- SplitToSequence by sizes known only at run time --------------------------------------------- */

/* x[begin : end] along axis. */
static loom_status slice_axis(nctx *c, loom_graph_expr *x, int64_t axis, const loom_sym_expr *begin, const loom_sym_expr *end,
                              loom_graph_expr **out) {
  loom_graph_module *m = c->im->m;
  oimp_add_attr(c, loom_graph_attr_ints(m, "axes", 1, &axis));
  oimp_add_attr(c, loom_graph_attr_syms(m, "begin", 1, &begin));
  oimp_add_attr(c, loom_graph_attr_syms(m, "end", 1, &end));
  return oimp_emit(c, LOOM_GRAPH_OP_STRIDED_SLICE, 1, &x, NULL, out);
}

/* What the chunk loop's body needs. */
typedef struct split_loop {
  int64_t axis;                /* the split axis */
  const loom_sym_expr *len;    /* its length */
  const loom_sym_expr *chunk;  /* the run-time chunk size (a symbol bound before the loop) */
} split_loop;

/* Iteration i: x[i * chunk : min((i + 1) * chunk, len)] appended to the carried list. */
static loom_status split_body(nctx *c, void *ud, const loom_sym_expr *iter, loom_graph_expr *const *params,
                              loom_graph_expr **cond_out, loom_graph_expr **next, loom_graph_expr **scans) {
  (void)cond_out, (void)scans;
  const split_loop *sl = ud;
  loom_sym_ctx *cx = c->im->cx;
  const loom_sym_expr *b = loom_sym_mul(cx, iter, sl->chunk);
  const loom_sym_expr *e = b ? loom_sym_min(cx, loom_sym_add(cx, b, sl->chunk), sl->len) : NULL;
  if (!e) return loom_sym_ctx_take_error(cx);
  loom_graph_expr *part;
  LOOM_PROPAGATE(slice_axis(c, c->args[0], sl->axis, b, e, &part));
  loom_graph_expr *ab[2] = {params[0], part};
  return oimp_emit(c, LOOM_GRAPH_OP_LIST_INSERT, 2, ab, NULL, &next[0]);
}

loom_status oimp_split_runtime(nctx *c, int64_t axis, const loom_sym_expr *len) {
  imp *im = c->im;
  loom_sym_ctx *cx = im->cx;
  const loom_onnx_node *n = c->n;
  const loom_sinfo *ss = c->args[1]->sinfo;
  if (ss->kind != LOOM_SINFO_TENSOR || (ss->dtype != LOOM_DTYPE_I64 && ss->dtype != LOOM_DTYPE_I32))
    return BAD(n, "input 1 (split) must be an integer tensor");
  if (ss->ndim == 1) { /* sizes: as many parts as it has elements */
    const loom_sym_expr *sz[64];
    size_t np;
    LOOM_PROPAGATE(oimp_shape_syms(c, 1, "split", sz, 64, &np));
    oimp_seq *q = LOOM_ARENA_NEW(loom_graph_module_arena(im->m), oimp_seq);
    loom_graph_expr **items = LOOM_ARENA_ARRAY(loom_graph_module_arena(im->m), loom_graph_expr *, np ? np : 1);
    const loom_onnx_tensor **consts = LOOM_ARENA_ARRAY(loom_graph_module_arena(im->m), const loom_onnx_tensor *, np ? np : 1);
    if (!q || !items || !consts) return LOOM_OOM();
    *q = (oimp_seq){.dtype = c->args[0]->sinfo->dtype, .n = np, .items = items, .consts = consts};
    const loom_sym_expr *at = loom_sym_const(cx, 0);
    for (size_t k = 0; k < np; k++) {
      const loom_sym_expr *en = loom_sym_add(cx, at, sz[k]);
      if (!en) return loom_sym_ctx_take_error(cx);
      LOOM_PROPAGATE(slice_axis(c, c->args[0], axis, at, en, &items[k]));
      consts[k] = NULL, at = en;
    }
    /* the sizes must cover the axis: their sum, as a Shape value (sym_tensor, tensor_to_shape),
     * matched against Shape[(len,)] at run time */
    const loom_sinfo *to = loom_sinfo_shape(im->m, 1, &len);
    char buf[256];
    snprintf(buf, sizeof buf, "%s_split_sum", n->outputs[0]);
    const char *nm = oimp_ir_name(im, buf);
    if (!to || !nm) return LOOM_OOM();
    loom_graph_expr *st1, *sv, *chk;
    oimp_add_attr(c, loom_graph_attr_syms(im->m, "values", 1, &at));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_SYM_TENSOR, 0, NULL, NULL, &st1));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_TENSOR_TO_SHAPE, 1, &st1, NULL, &sv));
    loom_status st = loom_graph_builder_match_cast(&im->b, sv, to, nm, &chk);
    if (st) {
      loom_status e = oimp_node_err(loom_status_code(st), n, "the splits must sum to the axis' length: %s",
                                    loom_status_message(st));
      loom_status_free(st);
      return e;
    }
    c->bound = true;
    return oimp_bind_seq(im, n->outputs[0], q);
  }
  if (ss->ndim != 0) return BAD(n, "input 1 (split) must be a scalar or 1-D, not of rank %d", ss->ndim);
  /* one chunk size: ceil(len / chunk) parts, the last one shorter */
  loom_graph_expr *v1;
  const loom_sym_expr *chunk;
  int64_t zero = 0;
  oimp_add_attr(c, loom_graph_attr_ints(im->m, "axes", 1, &zero));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_EXPAND_DIMS, 1, &c->args[1], NULL, &v1));
  LOOM_PROPAGATE(oimp_runtime_syms(c, v1, n->inputs[1], "split", &chunk, 1));
  const loom_sym_expr *cnt = loom_sym_floordiv(cx, loom_sym_add(cx, len, loom_sym_sub(cx, chunk, loom_sym_const(cx, 1))), chunk);
  if (!cnt) return loom_sym_ctx_take_error(cx);
  loom_graph_expr *count = loom_graph_sym_new(im->m, cnt), *init, *fin;
  if (!count) return LOOM_OOM();
  oimp_add_attr(c, loom_graph_attr_dtype(im->m, "dtype", c->args[0]->sinfo->dtype));
  LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 0, NULL, NULL, &init));
  split_loop sl = {axis, len, chunk};
  const char *names[1] = {n->outputs[0]};
  LOOM_PROPAGATE(oimp_loop_build(c, n->outputs[0], count, NULL, 1, &init, names, 0, split_body, &sl, &fin, NULL));
  c->bound = true;
  return oimp_bind(im, n->outputs[0], fin, NULL);
}

loom_status oimp_list_node(nctx *c) {
  const loom_onnx_node *n = c->n;
  const char *op = n->op_type;
  loom_graph_expr *y = NULL;
  const char *out = n->outputs[0];
  for (size_t i = 0; i < c->nargs; i++)
    if (c->seqs[i]) return UNSUP(n, "input %zu '%s' is a sequence built in the graph and another input a list known only at "
                                 "run time", i, n->inputs[i]);
  if (!strcmp(op, "Identity")) return oimp_bind(c->im, out, c->args[0], NULL);
  if (!strcmp(op, "SequenceMap") && is_list(c, 0)) return seq_map(c);
  if (!strcmp(op, "OptionalHasElement") && is_list(c, 0)) {
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_HAS, 1, c->args, out, &y));
  } else if (!strcmp(op, "SequenceLength") && is_list(c, 0)) {
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_LENGTH, 1, c->args, out, &y));
  } else if ((!strcmp(op, "OptionalGetElement") || !strcmp(op, "SequenceAt")) && is_list(c, 0)) {
    bool at = op[0] == 'S';
    if (at && (c->nargs < 2 || !c->args[1])) return BAD(n, "input 1 (position) is required");
    if (!at && !c->args[0]->sinfo->optional) return oimp_bind(c->im, out, c->args[0], NULL); /* a sequence: itself */
    loom_graph_expr *g;
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_GET, at ? 2 : 1, c->args, NULL, &g));
    LOOM_PROPAGATE(oimp_name_dims(c, g, out, &y));
  } else if (!strcmp(op, "SequenceInsert") && is_list(c, 0) && !is_list(c, 1)) {
    size_t na = c->nargs > 2 && c->args[2] ? 3 : 2;
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_INSERT, na, c->args, out, &y));
  } else if (!strcmp(op, "SequenceErase") && is_list(c, 0)) {
    size_t na = c->nargs > 1 && c->args[1] ? 2 : 1;
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_ERASE, na, c->args, out, &y));
  } else if (!strcmp(op, "Optional") && is_list(c, 0)) {
    oimp_add_attr(c, loom_graph_attr_bool(c->im->m, "optional", true));
    LOOM_PROPAGATE(oimp_emit(c, LOOM_GRAPH_OP_LIST_NEW, 1, c->args, out, &y));
  } else {
    for (size_t i = 0; i < c->nargs; i++)
      if (is_list(c, i))
        return UNSUP(n, "input %zu '%s' is a sequence or optional known only at run time, which %s does not take", i,
                     n->inputs[i], op);
    return UNSUP(n, "a list operand in a form %s does not take", op);
  }
  return oimp_bind(c->im, out, y, NULL);
}

/* legalize_index.c — the legalize hooks of the ops that index with data: gather_elements,
 * scatter_elements (op_index.c), gather_nd and scatter_nd (op_misc.c), to tensorprog/gen_shape.c
 * and gen_scatter.c programs. Indices
 * read from memory are checked by the kernels; the extents the programs index with loop
 * variables (the indices' dims on the other axes) must fit the data: proven here, or guarded
 * at run time. */
#include <stdio.h>
#include <string.h>

#include "graph/legalize_internal.h"

static loom_status reduction_of(const loom_graph_expr *call, loom_tp_scatter_reduction *r, const char **key) {
  static const struct {
    const char *name;
    loom_tp_scatter_reduction r;
  } table[] = {{"none", LOOM_TP_SCATTER_NONE}, {"add", LOOM_TP_SCATTER_ADD}, {"mul", LOOM_TP_SCATTER_MUL},
               {"min", LOOM_TP_SCATTER_MIN},   {"max", LOOM_TP_SCATTER_MAX}};
  const char *s = loom_graph_call_str(call, "reduction");
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (!strcmp(s, table[i].name)) {
      *r = table[i].r;
      *key = table[i].name;
      return LOOM_OK;
    }
  return loom_legal_unsupported(call, "for this reduction");
}

typedef struct elements_params {
  loom_dtype t, index_t;
  int32_t rank, axis, scatter;
  loom_tp_scatter_reduction reduction;
} elements_params;
LOOM_TP_GEN_PARAMS(elements_params, 6 * 4);

static loom_status gen_elements(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const elements_params *p = params;
  loom_arena *a = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  return p->scatter ? loom_tp_gen_scatter_elements(a, cx, name, p->t, p->index_t, p->rank, p->axis, p->reduction, tp)
                    : loom_tp_gen_gather_elements(a, cx, name, p->t, p->rank, p->axis, p->index_t, tp);
}

/* gather_elements / scatter_elements: on every axis but `axis` the program indexes the data
 * with the loop variables over the indices' extent (the indices' values are checked by the
 * kernel only on `axis`), so those extents must fit the data's: where the prover cannot show
 * it, a run-time guard per axis (the reference refuses the same calls). */
loom_status loom_legal_elements(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r) {
  (void)out;
  bool scatter = call->u.call.op == LOOM_GRAPH_OP_SCATTER_ELEMENTS;
  const loom_sinfo *x, *idx, *u = NULL;
  int axis;
  LOOM_PROPAGATE(loom_legal_axis_arg(call, &x, &axis));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &idx));
  if (scatter) LOOM_PROPAGATE(loom_legal_tensor_arg(call, 2, &u));
  if (!loom_dtype_is_int(idx->dtype) || idx->ndim != x->ndim) return loom_legal_unsupported(call, "for these indices");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const char *op = loom_graph_op_name(call->u.call.op);
  for (int k = 0; k < x->ndim; k++) {
    if (k == axis || loom_sym_prove_le(cx, idx->dims[k], x->dims[k]) == LOOM_SYM_TRUE) continue;
    char why[512], on[2][160];
    loom_legal_operand_name(call, 1, on[0], sizeof on[0]);
    loom_legal_operand_name(call, 0, on[1], sizeof on[1]);
    snprintf(why, sizeof why, "%s: indices (%s) axis %d (%s) must not exceed data (%s) axis %d (%s)", op, on[0], k,
             loom_graph_sym_str(m, idx->dims[k]), on[1], k, loom_graph_sym_str(m, x->dims[k]));
    LOOM_PROPAGATE(loom_graph_legal_guard(m, r, loom_sym_cmp(cx, LOOM_SYM_LE, idx->dims[k], x->dims[k]), why));
  }
  loom_tp_scatter_reduction red = LOOM_TP_SCATTER_NONE;
  const char *rk = "";
  if (scatter) LOOM_PROPAGATE(reduction_of(call, &red, &rk));
  char name[160];
  snprintf(name, sizeof name, "%s_elements_%s_r%d_a%d_%s%s%s", scatter ? "scatter" : "gather", loom_dtype_name(x->dtype),
           x->ndim, axis, loom_dtype_name(idx->dtype), scatter ? "_" : "", rk);
  elements_params p = {.t = x->dtype, .index_t = idx->dtype, .rank = x->ndim, .axis = axis, .scatter = scatter, .reduction = red};
  return LOOM_LEGAL_PROGRAM(m, name, gen_elements, p, &r->tp);
}

typedef struct nd_params {
  loom_dtype t, index_t;
  int32_t x_rank, index_rank, batch, depth, scatter;
  loom_tp_scatter_reduction reduction;
} nd_params;
LOOM_TP_GEN_PARAMS(nd_params, 8 * 4);

static loom_status gen_nd(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const nd_params *p = params;
  loom_arena *a = loom_graph_module_arena(m);
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  return p->scatter ? loom_tp_gen_scatter_nd(a, cx, name, p->t, p->index_t, p->x_rank, p->index_rank, p->depth, p->reduction, tp)
                    : loom_tp_gen_gather_nd(a, cx, name, p->t, p->index_t, p->x_rank, p->index_rank, p->batch, p->depth, tp);
}

/* gather_nd / scatter_nd (scatter_nd without batch_dims). */
loom_status loom_legal_nd(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r) {
  (void)out;
  bool scatter = call->u.call.op == LOOM_GRAPH_OP_SCATTER_ND;
  const loom_sinfo *x, *idx;
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 0, &x));
  LOOM_PROPAGATE(loom_legal_tensor_arg(call, 1, &idx));
  int64_t depth, batch = loom_graph_call_int(call, "batch_dims");
  if (!loom_dtype_is_int(idx->dtype) || idx->ndim < 1 || !loom_sym_is_const(idx->dims[idx->ndim - 1], &depth))
    return loom_legal_unsupported(call, "for these indices");
  if (scatter && batch) return loom_legal_unsupported(call, "with batch_dims");
  loom_tp_scatter_reduction red = LOOM_TP_SCATTER_NONE;
  const char *rk = "";
  if (scatter) LOOM_PROPAGATE(reduction_of(call, &red, &rk));
  char name[160];
  snprintf(name, sizeof name, "%s_nd_%s_r%d_%s_r%d_b%lld_m%lld%s%s", scatter ? "scatter" : "gather", loom_dtype_name(x->dtype),
           x->ndim, loom_dtype_name(idx->dtype), idx->ndim, (long long)batch, (long long)depth, scatter ? "_" : "", rk);
  nd_params p = {.t = x->dtype, .index_t = idx->dtype, .x_rank = x->ndim, .index_rank = idx->ndim, .batch = (int32_t)batch,
                 .depth = (int32_t)depth, .scatter = scatter, .reduction = red};
  return LOOM_LEGAL_PROGRAM(m, name, gen_nd, p, &r->tp);
}

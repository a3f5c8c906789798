/* legalize_internal.h — what the legalization files (legalize*.c) share. */
#ifndef LOOM_GRAPH_LEGALIZE_INTERNAL_H
#define LOOM_GRAPH_LEGALIZE_INTERNAL_H

#include "graph/graph_internal.h"
#include "graph/legalize.h"
#include "tensorprog/tp_gen.h"

/* UNIMPLEMENTED "<op>: no legalization <why>". */
loom_status loom_legal_unsupported(const loom_graph_expr *call, const char *why);
/* Tensor argument i with known rank (<= 8), dims and dtype, else UNIMPLEMENTED. */
loom_status loom_legal_tensor_arg(const loom_graph_expr *call, size_t i, const loom_sinfo **out);

/* The axis `ax` (negative: from the end) of a rank-ndim tensor in [0, ndim), or false. */
bool loom_legal_norm_axis(int64_t ax, int ndim, int *out);

/* gather_elements, scatter_elements, gather_nd, scatter_nd (legalize_index.c). */
loom_status loom_legalize_indexed(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp);

/* conv1d / conv2d / conv_transpose, max_pool2d / avg_pool2d and the image family's max_pool / max_pool_indices /
 * avg_pool / lp_pool (legalize_window.c). */
loom_status loom_legalize_window(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp);

/* resize, resize2d, grid_sample (legalize_image.c). */
loom_status loom_legalize_image(loom_graph_module *m, const loom_graph_expr *call, loom_tp_func **tp);

/* The call_tp that op call v (v->sinfo its result) lowers to (loom_graph_legalize_call), in *out. */
loom_status loom_legal_lower_call(loom_graph_module *m, const loom_graph_expr *v, loom_graph_expr **out);

/* Binding i of blk, an op call that lowers to several bindings (legalize_expand.c): split and
 * topk (a tuple of programs), and the forms whose result dims depend on data (topk with a
 * run-time k, reductions over run-time axes), which first compute and bind those dims.
 * *expanded false: not one of these (blk unchanged). */
loom_status loom_legalize_expand(loom_graph_module *m, loom_graph_block *blk, size_t i, bool *expanded);

#endif

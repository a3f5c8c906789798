/* op_shape_internal.h — what op_shape.c and op_shape_dyn.c share: the run-time operand forms
 * of reshape, expand_dims / squeeze, strided_slice and pad (inference and evaluation when a
 * structural operand is an integer tensor read when the op runs), and the strided copy both
 * slice forms evaluate with. Not a public interface. */
#ifndef LOOM_GRAPH_OP_SHAPE_INTERNAL_H
#define LOOM_GRAPH_OP_SHAPE_INTERNAL_H
#include "graph/graph_internal.h"

/* The symbolic context's pending error (or out of memory). */
static inline loom_status loom_graph_shape_sym_err(loom_graph_icx *ic) {
  loom_status st = loom_sym_ctx_take_error(ic->cx);
  return st ? st : LOOM_OOM();
}

/* reshape(x, shape) with ONNX semantics (0 copies x's dim unless allowzero; one -1). */
loom_status loom_graph_infer_reshape_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out);
loom_status loom_graph_eval_reshape_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out);
/* expand_dims(x, axes): rank r + n; squeeze(x, axes): rank r - n. */
loom_status loom_graph_infer_expand_squeeze_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out);
loom_status loom_graph_eval_expand_squeeze_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out);
/* strided_slice(x, starts, ends, axes?, steps?) with ONNX Slice semantics. */
loom_status loom_graph_infer_slice_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out);
loom_status loom_graph_eval_slice_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out);
/* pad(x, pads, value?, axes?), constant mode. */
loom_status loom_graph_infer_pad_dyn(loom_graph_icx *ic, const loom_sinfo *x, const loom_sinfo **out);
loom_status loom_graph_eval_pad_dyn(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out);
/* One sliced axis of extent dim, step s != 0, begin *lo and end hi already counted from the end
 * (a negative bound plus dim): clamps *lo and hi as loom_graph_slice_bound does and returns the
 * extent of the result (0 when empty). */
int64_t loom_graph_slice_axis(int64_t dim, int64_t *lo, int64_t hi, int64_t s);
/* out = the elements of x at start[k] + i_k * step[k] for i_k < sh[k] on every axis (bounds
 * already clamped; steps may be negative). */
loom_status loom_graph_take_strided(const loom_graph_tensor *x, const int64_t *start, const int64_t *step,
                                    const int64_t *sh, loom_graph_value *out);
#endif

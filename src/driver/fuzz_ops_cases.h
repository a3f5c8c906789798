/* fuzz_ops_cases.h — the fuzz-ops generators (fuzz_ops_cases.c, fuzz_ops_cases2.c) and the
 * helpers they share. Each `fz_gen_<family>` draws one case of its family (fuzz_ops_internal.h). */
#ifndef LOOM_DRIVER_FUZZ_OPS_CASES_H
#define LOOM_DRIVER_FUZZ_OPS_CASES_H

#include <stdio.h>

#include "driver/fuzz_ops_internal.h"

loom_dtype fz_float_dtype(fz_gen *g, fz_case *c, bool halves);
loom_dtype fz_int_dtype(fz_gen *g, bool unsigned_too);
int64_t fz_axis_cap(int rank);
void fz_shape(fz_gen *g, const char *prefix, int rank, int64_t lo, fz_dim *out);
void fz_broadcast(fz_gen *g, int n, int rank, fz_dim out[][FZ_MAX_RANK], int *ranks);

#define FZ_GENERATORS(X)                                                                                              \
  X(unary) X(binary) X(where) X(clip) X(cast) X(bitcast) X(dropout) X(reduce) X(argminmax) X(softmax) X(norm)       \
  X(attention) X(matmul) X(linear) X(conv1d) X(conv2d) X(conv3d) X(conv_transpose) X(pool) X(pool2d) X(resize2d) X(resize)    \
  X(grid_sample) X(concat) X(split) X(strided_slice) X(slice_rt) X(permute_dims) X(reshape) X(expand_squeeze)       \
  X(broadcast_to) X(pad) X(tile_repeat) X(take) X(gather_elements) X(scatter_elements) X(gather_nd) X(scatter_nd)   \
  X(one_hot) X(cumsum) X(topk) X(tril_triu) X(arange) X(full) X(nonzero_unique) X(det) X(dft)
#define FZ_DECLARE(name) bool fz_gen_##name(fz_gen *g, fz_case *c);
FZ_GENERATORS(FZ_DECLARE)
#undef FZ_DECLARE

#endif

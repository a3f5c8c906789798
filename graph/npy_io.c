/* npy_io.c — NumPy .npy files to and from interpreter tensors: a thin adapter over the one
 * .npy implementation, src/base/npy.h (format versions 1-3, every dtype Loom knows). */
#include <string.h>

#include "base/npy.h"
#include "graph/graph_internal.h"
#include "graph/npy_io.h"

loom_status loom_graph_npy_read(const char *path, loom_graph_tensor *out) {
  memset(out, 0, sizeof *out);
  loom_npy n;
  LOOM_PROPAGATE(loom_npy_read(path, &n)); /* its status names the file */
  loom_status st = LOOM_OK;
  if (n.rank > 8)
    st = LOOM_ERROR(UNIMPLEMENTED, "'%s': rank %d is above the interpreter's limit of 8", path, (int)n.rank);
  if (!st) st = loom_graph_tensor_alloc(n.dtype, (int)n.rank, n.shape, out);
  if (!st && out->numel * loom_dtype_size(out->dtype) != n.nbytes) {
    st = LOOM_ERROR(INTERNAL, "'%s': %zu data bytes for shape of %zu elements", path, n.nbytes, out->numel);
    loom_graph_tensor_free(out);
  }
  if (!st && n.nbytes) memcpy(out->data, n.data, n.nbytes);
  loom_npy_free(&n);
  return st;
}

loom_status loom_graph_npy_write(const char *path, const loom_graph_tensor *t) {
  return loom_npy_write(path, t->dtype, t->ndim, t->shape, t->data);
}

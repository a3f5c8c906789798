/* npy_io.h — NumPy .npy files to and from interpreter tensors (see npy_io.c). */
#ifndef LOOM_GRAPH_NPY_IO_H
#define LOOM_GRAPH_NPY_IO_H

#include "graph/graph.h"

/* Reads a little-endian C-order .npy file into a fresh tensor. */
loom_status loom_graph_npy_read(const char *path, loom_graph_tensor *out);
/* Writes `t` as a version-1 .npy file. */
loom_status loom_graph_npy_write(const char *path, const loom_graph_tensor *t);

#endif

/* graph_file.h — loading a module for the CLI commands: a .loom file (parse + verify) or an
 * ONNX model (.onnx: load + import + verify); errors printed. */
#ifndef LOOM_DRIVER_GRAPH_FILE_H
#define LOOM_DRIVER_GRAPH_FILE_H

#include <stdbool.h>

#include "base/diag.h"
#include "graph/graph.h"

/* Reads, parses and verifies `path` (a path ending in .onnx is loaded and imported with
 * loom_onnx_import instead). On failure prints the located errors to stderr and returns
 * nonzero (`dl` is then destroyed); on success the caller destroys *out and `dl`. */
int loom_driver_load_graph(const char *path, loom_diag_list *dl, loom_graph_module **out);
/* Whether `path` names an ONNX model (ends in .onnx). */
bool loom_driver_is_onnx_path(const char *path);

#endif

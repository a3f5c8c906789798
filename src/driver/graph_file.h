/* graph_file.h — loading a .loom file for the CLI commands (parse + verify, errors printed). */
#ifndef LOOM_DRIVER_GRAPH_FILE_H
#define LOOM_DRIVER_GRAPH_FILE_H

#include "base/diag.h"
#include "graph/graph.h"

/* Reads, parses and verifies `path`. On failure prints the located errors to stderr and
 * returns nonzero (`dl` is then destroyed); on success the caller destroys *out and `dl`. */
int loom_driver_load_graph(const char *path, loom_diag_list *dl, loom_graph_module **out);

#endif

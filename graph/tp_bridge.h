/* tp_bridge.h — graph/'s calls into tensorprog/ (parse, print, name), isolated in tp_bridge.c. */
#ifndef LOOM_GRAPH_TP_BRIDGE_H
#define LOOM_GRAPH_TP_BRIDGE_H

#include "graph/graph.h"

/* Parses `prim @name ...` at *pos (at the keyword). */
loom_status loom_graph_tp_parse(loom_graph_module *m, const loom_source *src, size_t *pos, loom_diag_list *diags,
                                loom_tp_func **out);
void loom_graph_tp_print(const loom_tp_func *tp, loom_strbuf *sb);
const char *loom_graph_tp_name(const loom_tp_func *tp);

#endif

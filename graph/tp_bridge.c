/* tp_bridge.c — the one place graph/ meets tensorprog/'s parser and printer.
 *
 * Until tensorprog/ implements loom_tp_parse_func / loom_tp_print_func, a module that
 * contains `prim @name ...` fails to parse with a clear "not available" error. When it
 * lands, these two functions call it (and nothing else in graph/ changes). */
#include "graph/graph_internal.h"
#include "graph/tp_bridge.h"

loom_status loom_graph_tp_parse(loom_graph_module *m, const loom_source *src, size_t *pos, loom_diag_list *diags,
                                loom_tp_func **out) {
  (void)m;
  (void)out;
  loom_diag_add(diags, LOOM_DIAG_ERROR, (loom_loc){src, *pos},
                "tensor programs ('prim') are not available in this build yet (tensorprog/ has no parser)");
  return loom_diag_list_status(diags, LOOM_CODE_UNIMPLEMENTED);
}

void loom_graph_tp_print(const loom_tp_func *tp, loom_strbuf *sb) {
  (void)tp;
  loom_strbuf_puts(sb, "// (tensor program: printer not available)\n");
}

const char *loom_graph_tp_name(const loom_tp_func *tp) {
  (void)tp;
  return "?";
}

/* tp_bridge.c — the one place graph/ meets tensorprog/'s parser and printer: tensor
 * programs in module text are parsed into the module's arena with the module's
 * symbolic context, and printed in the form the parser reads back. */
#include "graph/graph_internal.h"
#include "graph/tp_bridge.h"
#include "tensorprog/tp.h"

loom_status loom_graph_tp_parse(loom_graph_module *m, const loom_source *src, size_t *pos, loom_diag_list *diags,
                                loom_tp_func **out) {
  return loom_tp_parse_func(loom_graph_module_arena(m), loom_graph_module_sym(m), src, pos, diags, out);
}

void loom_graph_tp_print(const loom_tp_func *tp, loom_strbuf *sb) { loom_tp_print_func(tp, sb); }

const char *loom_graph_tp_name(const loom_tp_func *tp) { return loom_tp_func_name(tp); }

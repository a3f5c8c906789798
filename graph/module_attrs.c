/* module_attrs.c — attribute constructors (names interned into the module) and the getters
 * that read a call's attribute with a default. */
#include <string.h>

#include "graph/graph_internal.h"

/* ---- attributes ------------------------------------------------------------------- */

loom_graph_attr loom_graph_attr_int(loom_graph_module *m, const char *name, int64_t v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_INT, .i = v};
}
loom_graph_attr loom_graph_attr_float(loom_graph_module *m, const char *name, double v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_FLOAT, .f = v};
}
loom_graph_attr loom_graph_attr_bool(loom_graph_module *m, const char *name, bool v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_BOOL, .i = v};
}
loom_graph_attr loom_graph_attr_str(loom_graph_module *m, const char *name, const char *v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_STR,
                           .s = loom_intern_cstr(&m->names, v)};
}
loom_graph_attr loom_graph_attr_dtype(loom_graph_module *m, const char *name, loom_dtype v) {
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_DTYPE, .dtype = v};
}
loom_graph_attr loom_graph_attr_syms(loom_graph_module *m, const char *name, size_t n,
                                     const loom_sym_expr *const *v) {
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (d)
    for (size_t i = 0; i < n; i++) d[i] = v[i];
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_SYMS, .n = n, .syms = d};
}
loom_graph_attr loom_graph_attr_ints(loom_graph_module *m, const char *name, size_t n, const int64_t *v) {
  const loom_sym_expr **d = loom_graph_dims_new(m, n);
  if (d)
    for (size_t i = 0; i < n; i++) d[i] = loom_sym_const(m->cx, v[i]);
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_SYMS, .n = n, .syms = d};
}

loom_graph_attr loom_graph_attr_strs(loom_graph_module *m, const char *name, size_t n, const char *const *v) {
  const char **d = LOOM_ARENA_ARRAY(&m->arena, const char *, n ? n : 1);
  if (d)
    for (size_t i = 0; i < n; i++) d[i] = loom_intern_cstr(&m->names, v[i]);
  return (loom_graph_attr){.name = loom_intern_cstr(&m->names, name), .kind = LOOM_GRAPH_ATTR_STRS, .n = n, .strs = d};
}

const loom_graph_attr *loom_graph_call_attr(const loom_graph_expr *call, const char *name) {
  for (size_t i = 0; i < call->u.call.nattrs; i++)
    if (!strcmp(call->u.call.attrs[i].name, name)) return &call->u.call.attrs[i];
  return NULL;
}

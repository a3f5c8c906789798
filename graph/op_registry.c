/* op_registry.c — the operator table, generated from ops.def: names, arity, pattern kinds
 * flags and the implementation record each family file defines; attribute reads that fall back on
 * the defaults the records' specs declare. */
#include <assert.h>
#include <string.h>

#include "graph/graph_internal.h"

typedef struct op_row {
  const char *name;
  loom_tp_pattern pattern;
  int min_args, max_args;
  unsigned flags; /* LOOM_GRAPH_OPF_* */
  const loom_graph_op_impl *impl;
} op_row;

static const op_row table[] = {
#define LOOM_GRAPH_OP(e, nm, family, pat, lo, hi, fl) \
  [LOOM_GRAPH_OP_##e] = {#nm, LOOM_TP_PATTERN_##pat, lo, hi, LOOM_GRAPH_OPF_##fl, &loom_graph_op_impl_##nm},
#include "graph/ops.def"
#undef LOOM_GRAPH_OP
};
_Static_assert(sizeof table / sizeof table[0] == LOOM_GRAPH_OP_COUNT, "ops.def and the op table disagree");


bool loom_graph_op_lookup(const char *name, size_t len, loom_graph_op *out) {
  for (size_t i = 0; i < LOOM_GRAPH_OP_COUNT; i++)
    if (strlen(table[i].name) == len && !memcmp(table[i].name, name, len)) {
      *out = (loom_graph_op)i;
      return true;
    }
  return false;
}

const char *loom_graph_op_name(loom_graph_op op) { return table[op].name; }
loom_tp_pattern loom_graph_op_pattern(loom_graph_op op) { return table[op].pattern; }
const loom_graph_op_impl *loom_graph_op_impl_of(loom_graph_op op) { return table[op].impl; }
void loom_graph_op_arity(loom_graph_op op, int *min_args, int *max_args) {
  *min_args = table[op].min_args;
  *max_args = table[op].max_args;
}

unsigned loom_graph_op_flags(loom_graph_op op) { return table[op].flags; }
bool loom_graph_op_is_view(loom_graph_op op) { return table[op].flags & LOOM_GRAPH_OPF_VIEW; }

/* The spec row of attribute `name` of op call `call`; a read of an attribute the op does not
 * declare is a bug in Loom (asserted; NULL reads as 0 / ""). */
static const loom_graph_attr_spec *spec_of(const loom_graph_expr *call, const char *name) {
  const loom_graph_attr_spec *sp = table[call->u.call.op].impl->attrs;
  while (sp && sp->name && strcmp(sp->name, name)) sp++;
  assert(sp && sp->name && "attribute not in the op's spec");
  return sp && sp->name ? sp : NULL;
}

int64_t loom_graph_call_int(const loom_graph_expr *call, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (!a) {
    const loom_graph_attr_spec *sp = spec_of(call, name);
    return sp ? (int64_t)sp->dflt : 0;
  }
  if (a->kind == LOOM_GRAPH_ATTR_SYMS && a->n == 1) {
    int64_t v;
    if (loom_sym_is_const(a->syms[0], &v)) return v;
  }
  return a->i;
}

double loom_graph_call_float(const loom_graph_expr *call, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (!a) {
    const loom_graph_attr_spec *sp = spec_of(call, name);
    return sp ? sp->dflt : 0;
  }
  return a->kind == LOOM_GRAPH_ATTR_FLOAT ? a->f : (double)a->i;
}

const char *loom_graph_call_str(const loom_graph_expr *call, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (a && a->kind == LOOM_GRAPH_ATTR_STR) return a->s;
  const loom_graph_attr_spec *sp = spec_of(call, name);
  return sp && sp->dflt_str ? sp->dflt_str : "";
}

const char *const *loom_graph_call_strs(const loom_graph_expr *call, const char *name, size_t *n) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (a && a->kind == LOOM_GRAPH_ATTR_STRS) return *n = a->n, a->strs;
  return *n = 0, NULL;
}

loom_dtype loom_graph_call_dtype(const loom_graph_expr *call, const char *name) {
  const loom_graph_attr *a = loom_graph_call_attr(call, name);
  if (a) return a->dtype;
  const loom_graph_attr_spec *sp = spec_of(call, name);
  return sp ? sp->dflt_dtype : LOOM_DTYPE_F32;
}

/* onnx_print.c — a readable summary of a loaded ONNX model.
 *
 *   model: test_add/model.onnx (ir_version 10, producer 'backend-test')
 *   opsets: ai.onnx 22
 *   inputs (2):
 *     x: f32[3, 4, 5]
 *     y: f32[N, seq, ?]
 *   outputs (1):
 *     sum: f32[3, 4, 5]
 *   initializers (0):
 *   nodes (1):
 *     0  Add(x, y) -> (sum)
 *
 * Dims print as numbers, dim_param names, or `?` when dynamic and unnamed. Subgraphs
 * (If / Loop / Scan bodies) are printed under their node, indented. */
#include <inttypes.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

static void indent(loom_strbuf *sb, int depth) {
  for (int i = 0; i < depth; i++) loom_strbuf_puts(sb, "  ");
}

static void print_elem(loom_strbuf *sb, int32_t elem) {
  loom_dtype dt;
  if (loom_onnx_elem_dtype(elem, &dt)) loom_strbuf_puts(sb, loom_dtype_name(dt));
  else loom_strbuf_puts(sb, loom_onnx_elem_name(elem));
}

static void print_value(loom_strbuf *sb, const loom_onnx_value *v) {
  loom_strbuf_printf(sb, "%s: ", v->name);
  switch (v->kind) {
  case LOOM_ONNX_TYPE_NONE: loom_strbuf_puts(sb, "(no type)"); return;
  case LOOM_ONNX_TYPE_SEQUENCE: loom_strbuf_puts(sb, "sequence"); return;
  case LOOM_ONNX_TYPE_MAP: loom_strbuf_puts(sb, "map"); return;
  case LOOM_ONNX_TYPE_OPTIONAL: loom_strbuf_puts(sb, "optional"); return;
  case LOOM_ONNX_TYPE_SPARSE_TENSOR: loom_strbuf_puts(sb, "sparse "); break;
  case LOOM_ONNX_TYPE_TENSOR: break;
  }
  print_elem(sb, v->elem_type);
  if (!v->has_shape) {
    loom_strbuf_puts(sb, "[rank unknown]");
    return;
  }
  loom_strbuf_putc(sb, '[');
  for (size_t i = 0; i < v->rank; i++) {
    if (i) loom_strbuf_puts(sb, ", ");
    const loom_onnx_dim *d = &v->dims[i];
    if (d->kind == LOOM_ONNX_DIM_VALUE) loom_strbuf_printf(sb, "%" PRId64, d->value);
    else if (d->kind == LOOM_ONNX_DIM_PARAM) loom_strbuf_puts(sb, d->param);
    else loom_strbuf_putc(sb, '?');
  }
  loom_strbuf_putc(sb, ']');
}

static void print_tensor_type(loom_strbuf *sb, const loom_onnx_tensor *t) {
  loom_strbuf_printf(sb, "%s[", loom_dtype_name(t->dtype));
  for (size_t i = 0; i < t->rank; i++) loom_strbuf_printf(sb, "%s%" PRId64, i ? ", " : "", t->dims[i]);
  loom_strbuf_putc(sb, ']');
}

static void print_graph(loom_strbuf *sb, const loom_onnx_graph *g, int depth);

/* Lists are shortened past this many elements. */
#define MAX_LIST 8

static void print_attr(loom_strbuf *sb, const loom_onnx_attr *a) {
  loom_strbuf_printf(sb, "%s=", a->name);
  switch (a->kind) {
  case LOOM_ONNX_ATTR_FLOAT: loom_strbuf_printf(sb, "%g", (double)a->f); break;
  case LOOM_ONNX_ATTR_INT: loom_strbuf_printf(sb, "%" PRId64, a->i); break;
  case LOOM_ONNX_ATTR_STRING: loom_strbuf_printf(sb, "\"%s\"", a->s); break;
  case LOOM_ONNX_ATTR_TENSOR: print_tensor_type(sb, a->t); break;
  case LOOM_ONNX_ATTR_GRAPH: loom_strbuf_printf(sb, "<graph '%s'>", a->g->name); break;
  case LOOM_ONNX_ATTR_FLOATS:
  case LOOM_ONNX_ATTR_INTS:
  case LOOM_ONNX_ATTR_STRINGS:
  case LOOM_ONNX_ATTR_TENSORS:
  case LOOM_ONNX_ATTR_GRAPHS:
    loom_strbuf_putc(sb, '[');
    for (size_t i = 0; i < a->count && i < MAX_LIST; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      if (a->kind == LOOM_ONNX_ATTR_FLOATS) loom_strbuf_printf(sb, "%g", (double)a->floats[i]);
      else if (a->kind == LOOM_ONNX_ATTR_INTS) loom_strbuf_printf(sb, "%" PRId64, a->ints[i]);
      else if (a->kind == LOOM_ONNX_ATTR_STRINGS) loom_strbuf_printf(sb, "\"%s\"", a->strings[i]);
      else if (a->kind == LOOM_ONNX_ATTR_TENSORS) print_tensor_type(sb, a->tensors[i]);
      else loom_strbuf_printf(sb, "<graph '%s'>", a->graphs[i]->name);
    }
    if (a->count > MAX_LIST) loom_strbuf_printf(sb, ", ... (%zu)", a->count);
    loom_strbuf_putc(sb, ']');
    break;
  default: loom_strbuf_printf(sb, "<%s>", loom_onnx_attr_kind_name(a->kind)); break;
  }
}

static void print_node(loom_strbuf *sb, const loom_onnx_node *n, int depth) {
  indent(sb, depth);
  loom_strbuf_printf(sb, "%zu  ", n->index);
  if (*n->domain) loom_strbuf_printf(sb, "%s.", n->domain);
  loom_strbuf_puts(sb, n->op_type);
  if (*n->name) loom_strbuf_printf(sb, " '%s'", n->name);
  loom_strbuf_putc(sb, '(');
  for (size_t i = 0; i < n->n_inputs; i++) loom_strbuf_printf(sb, "%s%s", i ? ", " : "", *n->inputs[i] ? n->inputs[i] : "<none>");
  loom_strbuf_puts(sb, ") -> (");
  for (size_t i = 0; i < n->n_outputs; i++) loom_strbuf_printf(sb, "%s%s", i ? ", " : "", *n->outputs[i] ? n->outputs[i] : "<none>");
  loom_strbuf_putc(sb, ')');
  if (n->n_attrs) {
    loom_strbuf_puts(sb, " {");
    for (size_t i = 0; i < n->n_attrs; i++) {
      if (i) loom_strbuf_puts(sb, ", ");
      print_attr(sb, &n->attrs[i]);
    }
    loom_strbuf_putc(sb, '}');
  }
  loom_strbuf_putc(sb, '\n');
  for (size_t i = 0; i < n->n_attrs; i++) {
    const loom_onnx_attr *a = &n->attrs[i];
    if (a->kind == LOOM_ONNX_ATTR_GRAPH) {
      indent(sb, depth + 1);
      loom_strbuf_printf(sb, "%s: graph '%s'\n", a->name, a->g->name);
      print_graph(sb, a->g, depth + 2);
    } else if (a->kind == LOOM_ONNX_ATTR_GRAPHS) {
      for (size_t k = 0; k < a->count; k++) {
        indent(sb, depth + 1);
        loom_strbuf_printf(sb, "%s[%zu]: graph '%s'\n", a->name, k, a->graphs[k]->name);
        print_graph(sb, a->graphs[k], depth + 2);
      }
    }
  }
}

static void print_values(loom_strbuf *sb, const char *title, const loom_onnx_value *vs, size_t n, int depth) {
  indent(sb, depth);
  loom_strbuf_printf(sb, "%s (%zu):\n", title, n);
  for (size_t i = 0; i < n; i++) {
    indent(sb, depth + 1);
    print_value(sb, &vs[i]);
    loom_strbuf_putc(sb, '\n');
  }
}

static void print_graph(loom_strbuf *sb, const loom_onnx_graph *g, int depth) {
  print_values(sb, "inputs", g->inputs, g->n_inputs, depth);
  print_values(sb, "outputs", g->outputs, g->n_outputs, depth);
  indent(sb, depth);
  loom_strbuf_printf(sb, "initializers (%zu):\n", g->n_initializers);
  for (size_t i = 0; i < g->n_initializers; i++) {
    indent(sb, depth + 1);
    loom_strbuf_printf(sb, "%s: ", g->initializers[i].name);
    print_tensor_type(sb, &g->initializers[i]);
    loom_strbuf_putc(sb, '\n');
  }
  if (g->n_sparse_initializers) {
    indent(sb, depth);
    loom_strbuf_printf(sb, "sparse initializers: %zu (not loaded)\n", g->n_sparse_initializers);
  }
  indent(sb, depth);
  loom_strbuf_printf(sb, "nodes (%zu):\n", g->n_nodes);
  for (size_t i = 0; i < g->n_nodes; i++) print_node(sb, &g->nodes[i], depth + 1);
}

void loom_onnx_model_print_sb(const loom_onnx_model *m, loom_strbuf *sb) {
  loom_strbuf_printf(sb, "model: %s (ir_version %" PRId64, m->path, m->ir_version);
  if (*m->producer_name) loom_strbuf_printf(sb, ", producer '%s'", m->producer_name);
  if (*m->producer_version) loom_strbuf_printf(sb, " %s", m->producer_version);
  loom_strbuf_puts(sb, ")\n");
  loom_strbuf_puts(sb, "opsets:");
  for (size_t i = 0; i < m->n_opsets; i++)
    loom_strbuf_printf(sb, " %s %" PRId64, *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx", m->opsets[i].version);
  loom_strbuf_putc(sb, '\n');
  if (m->n_functions) loom_strbuf_printf(sb, "model-local functions: %zu (not loaded)\n", m->n_functions);
  loom_strbuf_printf(sb, "graph '%s':\n", m->graph->name);
  print_graph(sb, m->graph, 1);
}

void loom_onnx_model_print(const loom_onnx_model *m, FILE *f) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_onnx_model_print_sb(m, &sb);
  fputs(loom_strbuf_cstr(&sb), f);
  if (sb.oom) fputs("... (out of memory: summary truncated)\n", f);
  loom_strbuf_free(&sb);
}

/* onnx_model.c — ModelProto (via protobuf-c) to loom_onnx_model, with the checks of load.
 *
 * Loading is: map the file; walk the wire format (onnx_wire.c) so a broken file gets
 * a message that says where it breaks; unpack with protobuf-c; convert every graph
 * (recursively for If / Loop / Scan bodies) into arena-held plain structs, checking
 * names as it goes. The model keeps the protobuf: initializers' raw_data are used in place, and
 * those of LOOM_ALLOC_LARGE_MIN or more were unpacked onto mappings of their own (pb_alloc). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/file.h"
#include "base/map.h"
#include "frontend/onnx/onnx_internal.h"
#include "frontend/onnx/onnx_view.h"

/* One graph being converted: the names it defines (interned pointer -> 1) and the graph
 * around it, whose names its nodes may use. */
typedef struct scope {
  loom_map defined;
  const struct scope *parent;
} scope;

typedef struct conv {
  loom_onnx_model *m;
  const char *file; /* for messages */
  const char *dir;  /* external data directory, or NULL */
} conv;

static const char *str_or_empty(const char *s) { return s ? s : ""; }

static loom_status intern(conv *c, const char *s, const char **out) {
  s = str_or_empty(s);
  *out = loom_intern(&c->m->names, s, strlen(s));
  return *out ? LOOM_OK : LOOM_OOM();
}

static bool scope_has(const scope *sc, const char *name) {
  for (; sc; sc = sc->parent)
    if (loom_map_contains(&sc->defined, (uint64_t)(uintptr_t)name)) return true;
  return false;
}

/* Labels live in stack buffers of this size: they are only needed for messages. */
#define LABEL_SIZE 256

/* Text naming a node in messages: "node 3 (Add 'add_1')" or "node 3 (Add)", written to `buf`. */
static const char *node_label(const loom_onnx_node *n, char buf[LABEL_SIZE]) {
  if (*n->name) snprintf(buf, LABEL_SIZE, "node %zu (%s '%s')", n->index, n->op_type, n->name);
  else snprintf(buf, LABEL_SIZE, "node %zu (%s)", n->index, n->op_type);
  return buf;
}

static loom_status convert_graph(conv *c, const Onnx__GraphProto *gp, const scope *parent, loom_onnx_graph *g);

/* ------------------------------------------------------------------------- */
/* Values (graph inputs, outputs, value_info)                                 */
/* ------------------------------------------------------------------------- */

static loom_status convert_shape(conv *c, const Onnx__TensorShapeProto *sp, const char *what, loom_onnx_value *v) {
  if (!sp) return LOOM_OK;
  v->has_shape = true;
  v->rank = sp->n_dim;
  v->dims = LOOM_ARENA_ARRAY(&c->m->arena, loom_onnx_dim, sp->n_dim ? sp->n_dim : 1);
  if (!v->dims) return LOOM_OOM();
  for (size_t i = 0; i < sp->n_dim; i++) {
    const Onnx__TensorShapeProto__Dimension *d = sp->dim[i];
    loom_onnx_dim *o = &v->dims[i];
    o->kind = LOOM_ONNX_DIM_UNKNOWN;
    if (!d) continue;
    if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
      if (d->dim_value < 0)
        return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s '%s': dim %zu is %" PRId64 " (negative)", c->file, what, v->name, i,
                          d->dim_value);
      o->kind = LOOM_ONNX_DIM_VALUE;
      o->value = d->dim_value;
    } else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && d->dim_param &&
               *d->dim_param) {
      o->kind = LOOM_ONNX_DIM_PARAM;
      LOOM_PROPAGATE(intern(c, d->dim_param, &o->param));
    }
  }
  return LOOM_OK;
}

static loom_status convert_type(conv *c, const Onnx__TypeProto *tp, const char *what, int depth, loom_onnx_value *v);

/* The declared items of a sequence or optional (type `tp`) of value v. */
static loom_status convert_elem(conv *c, const Onnx__TypeProto *tp, const char *what, int depth, loom_onnx_value *v) {
  if (!tp) return LOOM_OK;
  if (depth > 16) return LOOM_ERROR(UNIMPLEMENTED, "%s: '%s' nests sequences / optionals more than 16 deep", c->file, v->name);
  loom_onnx_value *e = LOOM_ARENA_NEW(&c->m->arena, loom_onnx_value);
  if (!e) return LOOM_OOM();
  memset(e, 0, sizeof *e);
  e->name = v->name;
  LOOM_PROPAGATE(convert_type(c, tp, what, depth + 1, e));
  v->elem = e;
  return LOOM_OK;
}

static loom_status convert_value(conv *c, const Onnx__ValueInfoProto *vp, const char *what, size_t index,
                                 loom_onnx_value *v) {
  memset(v, 0, sizeof *v);
  if (!vp || !vp->name || !*vp->name)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s %zu has no name", c->file, what, index);
  LOOM_PROPAGATE(intern(c, vp->name, &v->name));
  return vp->type ? convert_type(c, vp->type, what, 0, v) : LOOM_OK;
}

static loom_status convert_type(conv *c, const Onnx__TypeProto *tp, const char *what, int depth, loom_onnx_value *v) {
  switch (tp->value_case) {
  case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
    v->kind = LOOM_ONNX_TYPE_TENSOR;
    if (tp->tensor_type) {
      v->elem_type = tp->tensor_type->has_elem_type ? tp->tensor_type->elem_type : 0;
      LOOM_PROPAGATE(convert_shape(c, tp->tensor_type->shape, what, v));
    }
    break;
  case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
    v->kind = LOOM_ONNX_TYPE_SPARSE_TENSOR;
    if (tp->sparse_tensor_type) {
      v->elem_type = tp->sparse_tensor_type->has_elem_type ? tp->sparse_tensor_type->elem_type : 0;
      LOOM_PROPAGATE(convert_shape(c, tp->sparse_tensor_type->shape, what, v));
    }
    break;
  case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
    v->kind = LOOM_ONNX_TYPE_SEQUENCE;
    if (tp->sequence_type) LOOM_PROPAGATE(convert_elem(c, tp->sequence_type->elem_type, what, depth, v));
    break;
  case ONNX__TYPE_PROTO__VALUE_MAP_TYPE: v->kind = LOOM_ONNX_TYPE_MAP; break;
  case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
    v->kind = LOOM_ONNX_TYPE_OPTIONAL;
    if (tp->optional_type) LOOM_PROPAGATE(convert_elem(c, tp->optional_type->elem_type, what, depth, v));
    break;
  default: break;
  }
  return LOOM_OK;
}

static loom_status convert_values(conv *c, size_t n, Onnx__ValueInfoProto *const *vps, const char *what,
                                  loom_onnx_value **out) {
  *out = LOOM_ARENA_ARRAY(&c->m->arena, loom_onnx_value, n ? n : 1);
  if (!*out) return LOOM_OOM();
  for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(convert_value(c, vps[i], what, i, &(*out)[i]));
  return LOOM_OK;
}

/* ------------------------------------------------------------------------- */
/* Attributes                                                                 */
/* ------------------------------------------------------------------------- */

/* Old models may leave AttributeProto.type unset; the field that is present says it. */
static int infer_attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type && a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED) return (int)a->type;
  if (a->has_f) return LOOM_ONNX_ATTR_FLOAT;
  if (a->has_i) return LOOM_ONNX_ATTR_INT;
  if (a->has_s) return LOOM_ONNX_ATTR_STRING;
  if (a->t) return LOOM_ONNX_ATTR_TENSOR;
  if (a->g) return LOOM_ONNX_ATTR_GRAPH;
  if (a->n_floats) return LOOM_ONNX_ATTR_FLOATS;
  if (a->n_ints) return LOOM_ONNX_ATTR_INTS;
  if (a->n_strings) return LOOM_ONNX_ATTR_STRINGS;
  if (a->n_tensors) return LOOM_ONNX_ATTR_TENSORS;
  if (a->n_graphs) return LOOM_ONNX_ATTR_GRAPHS;
  return LOOM_ONNX_ATTR_UNDEFINED;
}

const char *loom_onnx_attr_kind_name(loom_onnx_attr_kind k) {
  switch (k) {
  case LOOM_ONNX_ATTR_UNDEFINED: return "undefined";
  case LOOM_ONNX_ATTR_FLOAT: return "float";
  case LOOM_ONNX_ATTR_INT: return "int";
  case LOOM_ONNX_ATTR_STRING: return "string";
  case LOOM_ONNX_ATTR_TENSOR: return "tensor";
  case LOOM_ONNX_ATTR_GRAPH: return "graph";
  case LOOM_ONNX_ATTR_FLOATS: return "floats";
  case LOOM_ONNX_ATTR_INTS: return "ints";
  case LOOM_ONNX_ATTR_STRINGS: return "strings";
  case LOOM_ONNX_ATTR_TENSORS: return "tensors";
  case LOOM_ONNX_ATTR_GRAPHS: return "graphs";
  case LOOM_ONNX_ATTR_SPARSE_TENSOR: return "sparse_tensor";
  case LOOM_ONNX_ATTR_SPARSE_TENSORS: return "sparse_tensors";
  case LOOM_ONNX_ATTR_TYPE_PROTO: return "type_proto";
  case LOOM_ONNX_ATTR_TYPE_PROTOS: return "type_protos";
  }
  return "?";
}

static loom_status convert_subgraph(conv *c, const Onnx__GraphProto *gp, const scope *sc, const loom_onnx_graph *parent,
                                    const loom_onnx_node *owner, const char *owner_attr, const char *where,
                                    loom_onnx_graph **out) {
  loom_onnx_graph *g = LOOM_ARENA_NEW(&c->m->arena, loom_onnx_graph);
  if (!g) return LOOM_OOM();
  g->parent = parent;
  g->owner = owner;
  g->owner_attr = owner_attr;
  LOOM_RETURN_IF_ERROR(convert_graph(c, gp, sc, g), "while loading the graph in %s", where);
  *out = g;
  return LOOM_OK;
}

static loom_status convert_attr(conv *c, const Onnx__AttributeProto *ap, const loom_onnx_node *n, const scope *sc,
                                const loom_onnx_graph *g, loom_onnx_attr *a) {
  loom_arena *ar = &c->m->arena;
  char label[LABEL_SIZE], where[2 * LABEL_SIZE]; /* for messages */
  memset(a, 0, sizeof *a);
  if (!ap->name || !*ap->name)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: an attribute has no name", c->file, node_label(n, label));
  LOOM_PROPAGATE(intern(c, ap->name, &a->name));
  if (ap->ref_attr_name) LOOM_PROPAGATE(intern(c, ap->ref_attr_name, &a->ref_attr_name));
  snprintf(where, sizeof where, "attribute '%s' of %s", a->name, node_label(n, label));
  int type = infer_attr_type(ap);
  a->kind = (loom_onnx_attr_kind)type;
  switch (type) {
  case LOOM_ONNX_ATTR_FLOAT: a->f = ap->f; break;
  case LOOM_ONNX_ATTR_INT: a->i = ap->i; break;
  case LOOM_ONNX_ATTR_STRING:
    a->len = ap->s.len;
    a->s = loom_arena_strndup(ar, ap->s.len ? (const char *)ap->s.data : "", ap->s.len);
    if (!a->s) return LOOM_OOM();
    break;
  case LOOM_ONNX_ATTR_TENSOR:
    if (!ap->t) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: type tensor but no tensor", c->file, where);
    a->t = LOOM_ARENA_NEW(ar, loom_onnx_tensor);
    if (!a->t) return LOOM_OOM();
    LOOM_PROPAGATE(loom_onnx_tensor_decode(ap->t, c->file, where, c->dir, c->m, ar, a->t));
    break;
  case LOOM_ONNX_ATTR_GRAPH:
    if (!ap->g) return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: type graph but no graph", c->file, where);
    LOOM_PROPAGATE(convert_subgraph(c, ap->g, sc, g, n, a->name, where, &a->g));
    break;
  case LOOM_ONNX_ATTR_FLOATS:
    a->count = ap->n_floats;
    a->floats = LOOM_ARENA_ARRAY(ar, float, a->count ? a->count : 1);
    if (!a->floats) return LOOM_OOM();
    if (a->count) memcpy(a->floats, ap->floats, a->count * sizeof(float));
    break;
  case LOOM_ONNX_ATTR_INTS:
    a->count = ap->n_ints;
    a->ints = LOOM_ARENA_ARRAY(ar, int64_t, a->count ? a->count : 1);
    if (!a->ints) return LOOM_OOM();
    if (a->count) memcpy(a->ints, ap->ints, a->count * sizeof(int64_t));
    break;
  case LOOM_ONNX_ATTR_STRINGS:
    a->count = ap->n_strings;
    a->strings = LOOM_ARENA_ARRAY(ar, const char *, a->count ? a->count : 1);
    a->string_lens = LOOM_ARENA_ARRAY(ar, size_t, a->count ? a->count : 1);
    if (!a->strings || !a->string_lens) return LOOM_OOM();
    for (size_t i = 0; i < a->count; i++) {
      const ProtobufCBinaryData *b = &ap->strings[i];
      a->string_lens[i] = b->len;
      a->strings[i] = loom_arena_strndup(ar, b->len ? (const char *)b->data : "", b->len);
      if (!a->strings[i]) return LOOM_OOM();
    }
    break;
  case LOOM_ONNX_ATTR_TENSORS:
    a->count = ap->n_tensors;
    a->tensors = LOOM_ARENA_ARRAY(ar, loom_onnx_tensor *, a->count ? a->count : 1);
    if (!a->tensors) return LOOM_OOM();
    for (size_t i = 0; i < a->count; i++) {
      a->tensors[i] = LOOM_ARENA_NEW(ar, loom_onnx_tensor);
      if (!a->tensors[i]) return LOOM_OOM();
      LOOM_PROPAGATE(loom_onnx_tensor_decode(ap->tensors[i], c->file, where, c->dir, c->m, ar, a->tensors[i]));
    }
    break;
  case LOOM_ONNX_ATTR_GRAPHS:
    a->count = ap->n_graphs;
    a->graphs = LOOM_ARENA_ARRAY(ar, loom_onnx_graph *, a->count ? a->count : 1);
    if (!a->graphs) return LOOM_OOM();
    for (size_t i = 0; i < a->count; i++) LOOM_PROPAGATE(convert_subgraph(c, ap->graphs[i], sc, g, n, a->name, where, &a->graphs[i]));
    break;
  case LOOM_ONNX_ATTR_TYPE_PROTO: {
    loom_onnx_value *v = LOOM_ARENA_NEW(ar, loom_onnx_value);
    if (!v) return LOOM_OOM();
    v->name = a->name;
    if (ap->tp) LOOM_PROPAGATE(convert_type(c, ap->tp, where, 0, v));
    a->type = v;
    break;
  }
  case LOOM_ONNX_ATTR_SPARSE_TENSOR:
  case LOOM_ONNX_ATTR_SPARSE_TENSORS:
  case LOOM_ONNX_ATTR_TYPE_PROTOS:
    break; /* kept as a kind; the importer reports it if an op needs it */
  case LOOM_ONNX_ATTR_UNDEFINED:
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s has no type and no value", c->file, where);
  default:
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s has unknown attribute type %d", c->file, where, type);
  }
  return LOOM_OK;
}

/* ------------------------------------------------------------------------- */
/* Nodes and graphs                                                           */
/* ------------------------------------------------------------------------- */

/* Defines `name` in `sc`: LOOM_OK, out of memory, or 1 when it is defined already (the caller
 * words that message, so no label is built unless it is needed). */
static int define(scope *sc, const char *name) {
  if (loom_map_contains(&sc->defined, (uint64_t)(uintptr_t)name)) return 1;
  return loom_map_put(&sc->defined, (uint64_t)(uintptr_t)name, 1) ? 0 : -1;
}

static loom_status convert_names(conv *c, size_t n, char *const *in, const char ***out) {
  *out = LOOM_ARENA_ARRAY(&c->m->arena, const char *, n ? n : 1);
  if (!*out) return LOOM_OOM();
  for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(intern(c, in[i], &(*out)[i]));
  return LOOM_OK;
}

static loom_status convert_node(conv *c, const Onnx__NodeProto *np, size_t index, scope *sc, const loom_onnx_graph *g,
                                loom_onnx_node *n) {
  char label[LABEL_SIZE]; /* for messages */
  memset(n, 0, sizeof *n);
  n->index = index;
  LOOM_PROPAGATE(intern(c, np->name, &n->name));
  LOOM_PROPAGATE(intern(c, np->op_type, &n->op_type));
  LOOM_PROPAGATE(intern(c, np->domain, &n->domain));
  if (!*n->op_type) return LOOM_ERROR(INVALID_ARGUMENT, "%s: node %zu ('%s') has no op_type", c->file, index, n->name);
  LOOM_PROPAGATE(convert_names(c, np->n_input, np->input, &n->inputs));
  n->n_inputs = np->n_input;
  LOOM_PROPAGATE(convert_names(c, np->n_output, np->output, &n->outputs));
  n->n_outputs = np->n_output;
  if (n->n_outputs == 0) /* every ONNX operator has at least one output; handlers bind outputs[0] */
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s has no outputs", c->file, node_label(n, label));
  for (size_t i = 0; i < n->n_inputs; i++)
    if (*n->inputs[i] && !scope_has(sc, n->inputs[i]))
      return LOOM_ERROR(NOT_FOUND,
                        "%s: %s: input %zu '%s' is not a graph input, an initializer or an output of an earlier node",
                        c->file, node_label(n, label), i, n->inputs[i]);
  n->attrs = LOOM_ARENA_ARRAY(&c->m->arena, loom_onnx_attr, np->n_attribute ? np->n_attribute : 1);
  if (!n->attrs) return LOOM_OOM();
  for (size_t i = 0; i < np->n_attribute; i++) {
    LOOM_PROPAGATE(convert_attr(c, np->attribute[i], n, sc, g, &n->attrs[i]));
    for (size_t j = 0; j < i; j++)
      if (n->attrs[j].name == n->attrs[i].name)
        return LOOM_ERROR(ALREADY_EXISTS, "%s: %s: attribute '%s' appears twice", c->file, node_label(n, label),
                          n->attrs[i].name);
    n->n_attrs = i + 1;
  }
  /* Outputs are defined after the node's own inputs and subgraphs are checked. */
  for (size_t i = 0; i < n->n_outputs; i++) {
    if (!*n->outputs[i]) continue;
    int r = define(sc, n->outputs[i]);
    if (r < 0) return LOOM_OOM();
    if (r > 0)
      return LOOM_ERROR(ALREADY_EXISTS, "%s: %s output %zu: the name '%s' is already defined in this graph", c->file,
                        node_label(n, label), i, n->outputs[i]);
  }
  return LOOM_OK;
}

static loom_status convert_graph_in_scope(conv *c, const Onnx__GraphProto *gp, scope *sc, loom_onnx_graph *g) {
  loom_arena *ar = &c->m->arena;
  LOOM_PROPAGATE(intern(c, gp->name, &g->name));
  LOOM_PROPAGATE(convert_values(c, gp->n_input, gp->input, "graph input", &g->inputs));
  g->n_inputs = gp->n_input;
  LOOM_PROPAGATE(convert_values(c, gp->n_output, gp->output, "graph output", &g->outputs));
  g->n_outputs = gp->n_output;
  LOOM_PROPAGATE(convert_values(c, gp->n_value_info, gp->value_info, "value_info", &g->value_info));
  g->n_value_info = gp->n_value_info;
  for (size_t i = 0; i < g->n_inputs; i++) {
    int r = define(sc, g->inputs[i].name);
    if (r < 0) return LOOM_OOM();
    if (r > 0)
      return LOOM_ERROR(ALREADY_EXISTS, "%s: graph input %zu: the name '%s' is already defined in this graph", c->file,
                        i, g->inputs[i].name);
  }

  /* Initializers: unique among themselves; a graph input of the same name is its declaration. */
  g->initializers = LOOM_ARENA_ARRAY(ar, loom_onnx_tensor, gp->n_initializer ? gp->n_initializer : 1);
  if (!g->initializers) return LOOM_OOM();
  loom_map inits;
  loom_map_init(&inits, NULL);
  loom_status s = LOOM_OK;
  for (size_t i = 0; i < gp->n_initializer && !s; i++) {
    loom_onnx_tensor *t = &g->initializers[i];
    const Onnx__TensorProto *tp = gp->initializer[i];
    if (!tp->name || !*tp->name) {
      s = LOOM_ERROR(INVALID_ARGUMENT, "%s: initializer %zu has no name", c->file, i);
      break;
    }
    char what[LABEL_SIZE];
    snprintf(what, sizeof what, "initializer '%s'", tp->name);
    s = loom_onnx_tensor_decode(tp, c->file, what, c->dir, c->m, ar, t);
    if (!s) s = intern(c, tp->name, &t->name);
    if (s) break;
    g->n_initializers = i + 1;
    uint64_t key = (uint64_t)(uintptr_t)t->name;
    if (loom_map_contains(&inits, key)) {
      s = LOOM_ERROR(ALREADY_EXISTS, "%s: initializer %zu: the name '%s' is already used by another initializer",
                     c->file, i, t->name);
    } else if (!loom_map_put(&inits, key, 1)) {
      s = LOOM_OOM();
    } else if (!loom_map_contains(&sc->defined, key) && !loom_map_put(&sc->defined, key, 1)) {
      s = LOOM_OOM();
    }
  }
  loom_map_destroy(&inits);
  LOOM_PROPAGATE(s);
  /* A graph input named like an initializer declares it (its default value): they must agree. */
  for (size_t i = 0; i < g->n_inputs; i++) {
    const loom_onnx_value *v = &g->inputs[i];
    for (size_t k = 0; k < g->n_initializers; k++) {
      if (g->initializers[k].name != v->name) continue;
      char where[2 * LABEL_SIZE];
      snprintf(where, sizeof where, "%s: initializer '%s' (also graph input %zu)", c->file, v->name, i);
      LOOM_PROPAGATE(loom_onnx_tensor_check(where, &g->initializers[k], v));
    }
  }
  g->n_sparse_initializers = gp->n_sparse_initializer;
  for (size_t i = 0; i < gp->n_sparse_initializer; i++) {
    const Onnx__SparseTensorProto *sp = gp->sparse_initializer[i];
    const char *name = sp->values && sp->values->name ? sp->values->name : "";
    const char *iname;
    LOOM_PROPAGATE(intern(c, name, &iname));
    if (*iname && !loom_map_contains(&sc->defined, (uint64_t)(uintptr_t)iname) &&
        !loom_map_put(&sc->defined, (uint64_t)(uintptr_t)iname, 1))
      return LOOM_OOM();
  }

  g->nodes = LOOM_ARENA_ARRAY(ar, loom_onnx_node, gp->n_node ? gp->n_node : 1);
  if (!g->nodes) return LOOM_OOM();
  for (size_t i = 0; i < gp->n_node; i++) {
    LOOM_PROPAGATE(convert_node(c, gp->node[i], i, sc, g, &g->nodes[i]));
    g->n_nodes = i + 1;
  }
  for (size_t i = 0; i < g->n_outputs; i++)
    if (!scope_has(sc, g->outputs[i].name))
      return LOOM_ERROR(NOT_FOUND, "%s: graph output %zu '%s' is not produced by any node, input or initializer",
                        c->file, i, g->outputs[i].name);
  return LOOM_OK;
}

static loom_status convert_graph(conv *c, const Onnx__GraphProto *gp, const scope *parent, loom_onnx_graph *g) {
  scope sc = {.parent = parent};
  loom_map_init(&sc.defined, NULL);
  loom_status s = convert_graph_in_scope(c, gp, &sc, g);
  loom_map_destroy(&sc.defined);
  return s;
}

/* ------------------------------------------------------------------------- */
/* Models                                                                     */
/* ------------------------------------------------------------------------- */

static loom_status convert_model(conv *c, const Onnx__ModelProto *mp) {
  loom_onnx_model *m = c->m;
  m->ir_version = mp->has_ir_version ? mp->ir_version : 0;
  LOOM_PROPAGATE(intern(c, mp->producer_name, &m->producer_name));
  LOOM_PROPAGATE(intern(c, mp->producer_version, &m->producer_version));
  m->n_functions = mp->n_functions;
  m->opsets = LOOM_ARENA_ARRAY(&m->arena, loom_onnx_opset, mp->n_opset_import ? mp->n_opset_import : 1);
  if (!m->opsets) return LOOM_OOM();
  for (size_t i = 0; i < mp->n_opset_import; i++) {
    const Onnx__OperatorSetIdProto *op = mp->opset_import[i];
    const char *d = str_or_empty(op->domain);
    if (strcmp(d, "ai.onnx") == 0) d = "";
    LOOM_PROPAGATE(intern(c, d, &m->opsets[i].domain));
    m->opsets[i].version = op->has_version ? op->version : 0;
    for (size_t j = 0; j < i; j++)
      if (m->opsets[j].domain == m->opsets[i].domain)
        return LOOM_ERROR(ALREADY_EXISTS, "%s: opset_import %zu: domain '%s' is imported twice", c->file, i,
                          *d ? d : "ai.onnx");
    m->n_opsets = i + 1;
  }
  if (!mp->graph) return LOOM_ERROR(INVALID_ARGUMENT, "%s: the model has no graph", c->file);
  m->graph = LOOM_ARENA_NEW(&m->arena, loom_onnx_graph);
  if (!m->graph) return LOOM_OOM();
  return convert_graph(c, mp->graph, NULL, m->graph);
}

/* The protobuf's allocator (allocator_data: the model): a large block (a weight's raw_data) is a
 * mapping of its own, tracked in m->larges; everything else is malloc's. */
static void *pb_alloc(void *data, size_t size) {
  loom_onnx_model *m = data;
  if (size < LOOM_ALLOC_LARGE_MIN) return malloc(size);
  if (m->nlarges == m->caplarges) {
    size_t cap = m->caplarges ? 2 * m->caplarges : 64;
    loom_onnx_large *n = realloc(m->larges, cap * sizeof *n);
    if (!n) return NULL;
    m->larges = n;
    m->caplarges = cap;
  }
  void *p = loom_alloc_large(size);
  if (!p) {
    m->large_failed = true;
    return NULL;
  }
  m->larges[m->nlarges++] = (loom_onnx_large){p, size};
  return p;
}

static void pb_free(void *data, void *p) {
  loom_onnx_model *m = data;
  if (((uintptr_t)p & 4095) == 0) /* mappings are page aligned; malloc's blocks seldom */
    for (size_t i = m->nlarges; i-- > 0;)
      if (m->larges[i].p == p) {
        loom_free_large(p, m->larges[i].len);
        m->larges[i] = m->larges[--m->nlarges];
        return;
      }
  free(p);
}

static ProtobufCAllocator pb_allocator(loom_onnx_model *m) {
  return (ProtobufCAllocator){.alloc = pb_alloc, .free = pb_free, .allocator_data = m};
}

/* Parses `bytes`; with view_min > 0, raw_data of view_min bytes or more are left in `bytes`
 * (onnx_view.c) instead of copied by protobuf-c. `map` (or NULL): the file's mapping, which the
 * model then owns (unmapped by loom_onnx_model_free, also on failure). */
static loom_status parse(const void *bytes, size_t len, const char *name, const char *dir, size_t view_min,
                         const void *map, loom_onnx_model **out) {
  loom_onnx_model *m = calloc(1, sizeof *m);
  if (!m) {
    if (map) loom_file_unmap(map, len);
    return LOOM_OOM();
  }
  m->file_map = map;
  m->file_len = map ? len : 0;
  loom_onnx_stripped st = {0};
  if (view_min) {
    loom_status s = loom_onnx_views_strip(bytes, len, view_min, &st);
    if (s) {
      loom_onnx_model_free(m);
      return s;
    }
    m->views = st.views;
    m->nviews = st.nviews;
  }
  ProtobufCAllocator pa = pb_allocator(m);
  Onnx__ModelProto *mp = st.bytes ? onnx__model_proto__unpack(&pa, st.len, st.bytes) : onnx__model_proto__unpack(&pa, len, bytes);
  free(st.bytes);
  if (!mp) {
    bool oom = m->large_failed;
    loom_onnx_model_free(m);
    if (oom) return LOOM_ERROR(RESOURCE_EXHAUSTED, "%s: out of memory for an initializer's bytes", name);
    return LOOM_ERROR(DATA_LOSS, "%s: not a valid ONNX model (%zu bytes do not parse as a ModelProto)", name, len);
  }
  loom_arena_init(&m->arena, NULL, 0);
  loom_interner_init(&m->names, NULL);
  loom_status s = LOOM_OK;
  m->path = loom_arena_strdup(&m->arena, name);
  if (!m->path) s = LOOM_OOM();
  conv c = {.m = m, .file = m->path ? m->path : name, .dir = dir};
  m->proto = mp; /* initializers' raw bytes are used in place: kept until loom_onnx_model_free */
  if (!s) s = convert_model(&c, mp);
  if (s) {
    loom_onnx_model_free(m);
    return s;
  }
  *out = m;
  return LOOM_OK;
}

loom_status loom_onnx_model_parse(const void *bytes, size_t len, const char *name, const char *dir,
                                  loom_onnx_model **out) {
  if (!bytes) bytes = ""; /* (NULL, 0): no pointer arithmetic on NULL below */
  LOOM_PROPAGATE(loom_onnx_wire_check(bytes, len, LOOM_ONNX_WIRE_MODEL, name));
  return parse(bytes, len, name, dir, 0, NULL, out);
}

loom_status loom_onnx_model_parse_in_place(const void *bytes, size_t len, const char *name, const char *dir,
                                           size_t view_min, loom_onnx_model **out) {
  if (!bytes) bytes = "";
  LOOM_PROPAGATE(loom_onnx_wire_check(bytes, len, LOOM_ONNX_WIRE_MODEL, name));
  return parse(bytes, len, name, dir, view_min, NULL, out);
}

loom_status loom_onnx_model_load(const char *path, loom_onnx_model **out) {
  const void *buf;
  size_t len;
  /* mapped, not read, and kept mapped: large raw_data are used where they lie (onnx_view.c) */
  loom_file_id id;
  LOOM_PROPAGATE(loom_file_map_limited_id(path, "model file", LOOM_FILE_LIMIT_ONNX, &buf, &len, &id));
  loom_status s = loom_onnx_wire_check(buf, len, LOOM_ONNX_WIRE_MODEL, path);
  if (s) {
    loom_file_unmap(buf, len);
    return s;
  }
  /* External data lives in the model's directory. */
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
  if (!dir) {
    loom_file_unmap(buf, len);
    return LOOM_OOM();
  }
  s = parse(buf, len, path, dir, LOOM_ONNX_VIEW_MIN, buf, out); /* the model owns the mapping now */
  free(dir);
  if (!s) (*out)->has_file_id = true, (*out)->file_id = id;
  return s;
}

void loom_onnx_model_free(loom_onnx_model *m) {
  if (!m) return;
  ProtobufCAllocator pa = pb_allocator(m);
  if (m->proto) onnx__model_proto__free_unpacked(m->proto, &pa);
  for (size_t i = 0; i < m->nlarges; i++) loom_free_large(m->larges[i].p, m->larges[i].len); /* a failed unpack's */
  free(m->larges);
  for (size_t i = 0; i < m->nmaps; i++) {
    munmap(m->maps[i].base, m->maps[i].len);
    free(m->maps[i].path);
  }
  free(m->maps);
  free(m->views);
  if (m->file_map) loom_file_unmap(m->file_map, m->file_len);
  loom_interner_destroy(&m->names);
  loom_arena_destroy(&m->arena);
  free(m);
}

int64_t loom_onnx_model_opset(const loom_onnx_model *m, const char *domain) {
  if (strcmp(domain, "ai.onnx") == 0) domain = "";
  for (size_t i = 0; i < m->n_opsets; i++)
    if (strcmp(m->opsets[i].domain, domain) == 0) return m->opsets[i].version;
  return 0;
}

const loom_onnx_tensor *loom_onnx_graph_find_initializer(const loom_onnx_graph *g, const char *name) {
  for (; g; g = g->parent)
    for (size_t i = 0; i < g->n_initializers; i++)
      if (strcmp(g->initializers[i].name, name) == 0) return &g->initializers[i];
  return NULL;
}

const loom_onnx_value *loom_onnx_graph_find_value(const loom_onnx_graph *g, const char *name) {
  const loom_onnx_value *lists[3] = {g->inputs, g->outputs, g->value_info};
  size_t counts[3] = {g->n_inputs, g->n_outputs, g->n_value_info};
  for (int l = 0; l < 3; l++)
    for (size_t i = 0; i < counts[l]; i++)
      if (strcmp(lists[l][i].name, name) == 0) return &lists[l][i];
  return NULL;
}

const loom_onnx_attr *loom_onnx_node_attr(const loom_onnx_node *n, const char *name) {
  for (size_t i = 0; i < n->n_attrs; i++)
    if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
  return NULL;
}

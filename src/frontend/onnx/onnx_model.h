/* onnx_model.h — ONNX models, tensors and test data, loaded into plain C structs.
 *
 *     loom_onnx_model *m;
 *     loom_status s = loom_onnx_model_load("model.onnx", &m);
 *     if (s) { loom_status_fprint(stderr, s); loom_status_free(s); return 1; }
 *     for (size_t i = 0; i < m->graph->n_nodes; i++)
 *       printf("%s\n", m->graph->nodes[i].op_type);
 *     loom_onnx_model_print(m, stdout);
 *     loom_onnx_model_free(m);
 *
 * Everything a model holds (names, nodes, attributes, decoded initializers, subgraphs)
 * lives in the model's arena and is freed with it; names are interned, so two names
 * are equal exactly when their pointers are. No protobuf-c type appears here: the
 * protobuf is parsed, checked, converted and released inside loom_onnx_model_load.
 *
 * What is checked at load (each failure names the file and the node, tensor or value):
 * the file exists and parses; there is a graph; value names are unique (graph inputs,
 * initializers, node outputs, in every subgraph); every tensor decodes (known element
 * type, dims >= 0, size without overflow, data length matching the dims); external
 * data stays inside the model's directory and within its file. Whether op types or
 * attributes make sense is the graph importer's business, not this layer's. */
#ifndef LOOM_FRONTEND_ONNX_MODEL_H
#define LOOM_FRONTEND_ONNX_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/arena.h"
#include "base/dtype.h"
#include "base/file.h"
#include "base/intern.h"
#include "base/status.h"
#include "base/strbuf.h"

/* ONNX element type codes (TensorProto.DataType), from onnx_types.def. */
typedef enum loom_onnx_elem {
#define LOOM_ONNX_TYPE(code, name, dtype) LOOM_ONNX_ELEM_##name = code,
#include "frontend/onnx/onnx_types.def"
#undef LOOM_ONNX_TYPE
} loom_onnx_elem;

/* The ONNX spelling of an element type code ("FLOAT", "FLOAT8E4M3FN"), or "type N". The
 * result for an unknown code lives in a static buffer per call site: print it at once. */
const char *loom_onnx_elem_name(int32_t code);
/* The loom_dtype an ONNX element type loads as; false when Loom does not load it. */
bool loom_onnx_elem_dtype(int32_t code, loom_dtype *out);

/* A host tensor: decoded, little-endian element data in `data`, row-major. */
typedef struct loom_onnx_tensor {
  const char *name;  /* the tensor's name ("" when it has none) */
  loom_dtype dtype;  /* element type */
  size_t rank;       /* number of dims */
  int64_t *dims;     /* `rank` dims, each >= 0 */
  int64_t numel;     /* product of dims (1 for a scalar) */
  size_t nbytes;     /* numel * element size */
  void *data;        /* nbytes bytes, aligned to 16 — except raw_data of LOOM_ONNX_VIEW_MIN bytes or more
                        in a model loaded from a file, used where it lies in the file (any alignment:
                        read its elements with memcpy); NULL when nbytes is 0 */
  /* Test data only (loom_onnx_test_set_load): a SequenceProto or OptionalProto read as a list. */
  int kind;          /* LOOM_ONNX_TYPE_TENSOR (0 reads the same), _SEQUENCE or _OPTIONAL */
  size_t nitems;     /* SEQUENCE / OPTIONAL: items (an optional: 0 or 1) */
  struct loom_onnx_tensor **items; /* each a tensor or a list */
} loom_onnx_tensor;

/* One dim of a declared shape. */
typedef enum loom_onnx_dim_kind {
  LOOM_ONNX_DIM_VALUE,   /* a fixed size: `value` */
  LOOM_ONNX_DIM_PARAM,   /* a named dynamic size (dim_param): `param` */
  LOOM_ONNX_DIM_UNKNOWN, /* dynamic and unnamed: the importer gives it a fresh name */
} loom_onnx_dim_kind;

typedef struct loom_onnx_dim {
  loom_onnx_dim_kind kind; /* which of the fields below holds */
  int64_t value;           /* LOOM_ONNX_DIM_VALUE: the size */
  const char *param;       /* LOOM_ONNX_DIM_PARAM: the interned name */
} loom_onnx_dim;

/* What kind of value a graph input, output or value_info declares. */
typedef enum loom_onnx_type_kind {
  LOOM_ONNX_TYPE_NONE,          /* no type given */
  LOOM_ONNX_TYPE_TENSOR,        /* a tensor: elem_type and maybe a shape */
  LOOM_ONNX_TYPE_SEQUENCE,      /* a sequence (not loaded further) */
  LOOM_ONNX_TYPE_MAP,           /* a map (not loaded further) */
  LOOM_ONNX_TYPE_OPTIONAL,      /* an optional (not loaded further) */
  LOOM_ONNX_TYPE_SPARSE_TENSOR, /* a sparse tensor: elem_type and maybe a shape */
} loom_onnx_type_kind;

/* A declared value: a graph input or output, or a value_info entry. */
typedef struct loom_onnx_value {
  const char *name;          /* interned */
  loom_onnx_type_kind kind;  /* what is declared */
  int32_t elem_type;         /* ONNX element type code (tensors; 0 when absent) */
  bool has_shape;            /* false: the rank itself is unknown */
  size_t rank;               /* number of dims when has_shape */
  loom_onnx_dim *dims;       /* `rank` dims */
  const struct loom_onnx_value *elem; /* SEQUENCE, OPTIONAL: the declared items (same name), or NULL */
} loom_onnx_value;

typedef struct loom_onnx_graph loom_onnx_graph;

/* Attribute kinds, numbered as AttributeProto.AttributeType. */
typedef enum loom_onnx_attr_kind {
  LOOM_ONNX_ATTR_UNDEFINED = 0,
  LOOM_ONNX_ATTR_FLOAT = 1,          /* f */
  LOOM_ONNX_ATTR_INT = 2,            /* i */
  LOOM_ONNX_ATTR_STRING = 3,         /* s, len */
  LOOM_ONNX_ATTR_TENSOR = 4,         /* t */
  LOOM_ONNX_ATTR_GRAPH = 5,          /* g */
  LOOM_ONNX_ATTR_FLOATS = 6,         /* floats[count] */
  LOOM_ONNX_ATTR_INTS = 7,           /* ints[count] */
  LOOM_ONNX_ATTR_STRINGS = 8,        /* strings[count], string_lens[count] */
  LOOM_ONNX_ATTR_TENSORS = 9,        /* tensors[count] */
  LOOM_ONNX_ATTR_GRAPHS = 10,        /* graphs[count] */
  LOOM_ONNX_ATTR_SPARSE_TENSOR = 11, /* kept as a kind only (no payload) */
  LOOM_ONNX_ATTR_SPARSE_TENSORS = 12,/* kept as a kind only (no payload) */
  LOOM_ONNX_ATTR_TYPE_PROTO = 13,    /* `type` */
  LOOM_ONNX_ATTR_TYPE_PROTOS = 14,   /* kept as a kind only (no payload) */
} loom_onnx_attr_kind;

const char *loom_onnx_attr_kind_name(loom_onnx_attr_kind k);

typedef struct loom_onnx_attr {
  const char *name;          /* interned */
  loom_onnx_attr_kind kind;  /* which payload holds */
  const char *ref_attr_name; /* inside a function body: the referenced attribute, else NULL */
  float f;                   /* FLOAT */
  int64_t i;                 /* INT */
  const char *s;             /* STRING: bytes, NUL-terminated (may hold NULs: use len) */
  size_t len;                /* STRING: byte length */
  loom_onnx_tensor *t;       /* TENSOR */
  loom_onnx_graph *g;        /* GRAPH (If / Loop / Scan bodies) */
  size_t count;              /* element count of the list kinds */
  float *floats;             /* FLOATS */
  int64_t *ints;             /* INTS */
  const char **strings;      /* STRINGS (each NUL-terminated) */
  size_t *string_lens;       /* STRINGS: byte lengths */
  loom_onnx_tensor **tensors;/* TENSORS */
  loom_onnx_graph **graphs;  /* GRAPHS */
  const struct loom_onnx_value *type; /* TYPE_PROTO: the declared type (Optional's `type`) */
} loom_onnx_attr;

typedef struct loom_onnx_node {
  size_t index;           /* position in its graph */
  const char *name;       /* interned ("" when unnamed) */
  const char *op_type;    /* interned */
  const char *domain;     /* interned; "" is the default domain ai.onnx */
  size_t n_inputs;        /* inputs, in order; "" marks an omitted optional input */
  const char **inputs;
  size_t n_outputs;       /* outputs, in order; "" marks an omitted optional output */
  const char **outputs;
  size_t n_attrs;         /* attributes, in file order, names unique */
  loom_onnx_attr *attrs;
} loom_onnx_node;

struct loom_onnx_graph {
  const char *name;                /* interned */
  size_t n_inputs;                 /* graph inputs (may include initializer names, IR < 4) */
  loom_onnx_value *inputs;
  size_t n_outputs;                /* graph outputs */
  loom_onnx_value *outputs;
  size_t n_value_info;             /* intermediate values with declared types */
  loom_onnx_value *value_info;
  size_t n_initializers;           /* constant tensors, decoded */
  loom_onnx_tensor *initializers;
  size_t n_sparse_initializers;    /* sparse initializers: counted, not loaded */
  size_t n_nodes;                  /* nodes in file order (ONNX requires topological order) */
  loom_onnx_node *nodes;
  const loom_onnx_graph *parent;   /* the graph of the node holding this one, or NULL */
  const loom_onnx_node *owner;     /* the node whose attribute holds this graph, or NULL */
  const char *owner_attr;          /* that attribute's name ("body", "then_branch"), or NULL */
};

typedef struct loom_onnx_opset {
  const char *domain; /* interned; "" is ai.onnx */
  int64_t version;
} loom_onnx_opset;

/* An external data file mapped for the model's tensors (read only, unmapped with the model). */
typedef struct loom_onnx_mapping {
  char *path; /* resolved */
  void *base;
  size_t len;
  bool has_id;     /* id is set */
  loom_file_id id; /* the file's identity when it was mapped (the packed-weight cache's key) */
} loom_onnx_mapping;

/* A bytes field of the protobuf (an initializer's raw_data) of LOOM_ALLOC_LARGE_MIN or more: a
 * mapping of its own (loom_alloc_large), so that 340 MB of weights land on huge pages. */
typedef struct loom_onnx_large {
  void *p;
  size_t len;
} loom_onnx_large;

typedef struct loom_onnx_model {
  const char *path;             /* the file it came from (or the name given to parse) */
  int64_t ir_version;           /* ModelProto.ir_version (0 when absent) */
  const char *producer_name;    /* "" when absent */
  const char *producer_version; /* "" when absent */
  size_t n_opsets;              /* opset imports */
  loom_onnx_opset *opsets;
  size_t n_functions;           /* model-local functions: counted, not loaded */
  loom_onnx_graph *graph;       /* the main graph */
  loom_arena arena;             /* owns everything above */
  loom_interner names;          /* interned names */
  struct Onnx__ModelProto *proto; /* the unpacked protobuf: initializers' bytes point into it */
  loom_onnx_mapping *maps;      /* external data files its tensors point into */
  size_t nmaps;
  loom_onnx_large *larges;      /* the protobuf's large allocations (its allocator's state) */
  size_t nlarges, caplarges;
  bool large_failed;            /* one of them could not be made: the unpack failed for memory */
  /* Large initializers' raw_data in place (onnx_view.c): the model file stays mapped. */
  const void *file_map;         /* the model file's read-only mapping, or NULL */
  size_t file_len;              /* its length */
  struct loom_onnx_view *views; /* the raw_data left in it, indexed by the markers of the unpacked proto */
  size_t nviews;
  size_t view_bytes;            /* bytes of the decoded tensors that point into file_map (not copied) */
  bool has_file_id;             /* file_id is set (the model was loaded from a file) */
  loom_file_id file_id;         /* the identity of the model file when it was mapped (base/file.h) */
} loom_onnx_model;

/* raw_data of this many bytes or more is read in place from the model file's mapping (at any
 * alignment: loom_onnx_tensor.data of such a tensor is aligned only when its place in the file is). */
#define LOOM_ONNX_VIEW_MIN ((size_t)64 << 10)

/* Loads `path`. External data files are looked up in the model's directory. */
LOOM_MUST_USE loom_status loom_onnx_model_load(const char *path, loom_onnx_model **out);
/* Parses a model from memory. `name` is used in messages; `dir` is where external
 * data lives (NULL: external data is refused). */
LOOM_MUST_USE loom_status loom_onnx_model_parse(const void *bytes, size_t len, const char *name,
                                                const char *dir, loom_onnx_model **out);
/* As loom_onnx_model_parse, but raw_data of `view_min` bytes or more (0: none) are used where
 * they lie in `bytes` (at any alignment), which must then outlive the model: what
 * loom_onnx_model_load does with the file's mapping (view_min LOOM_ONNX_VIEW_MIN). */
LOOM_MUST_USE loom_status loom_onnx_model_parse_in_place(const void *bytes, size_t len, const char *name,
                                                         const char *dir, size_t view_min, loom_onnx_model **out);
void loom_onnx_model_free(loom_onnx_model *m);

/* The version of `domain` ("" or "ai.onnx" for the default domain) the model imports, 0 if none. */
int64_t loom_onnx_model_opset(const loom_onnx_model *m, const char *domain);
/* The initializer called `name` in `g` or an enclosing graph, or NULL. */
const loom_onnx_tensor *loom_onnx_graph_find_initializer(const loom_onnx_graph *g, const char *name);
/* The declared value called `name` in `g` (inputs, then outputs, then value_info), or NULL. */
const loom_onnx_value *loom_onnx_graph_find_value(const loom_onnx_graph *g, const char *name);
/* The attribute `name` of `n`, or NULL. */
const loom_onnx_attr *loom_onnx_node_attr(const loom_onnx_node *n, const char *name);

/* Summary: inputs and outputs with their (symbolic) shapes, opsets, initializers with
 * shapes, and the node list with inputs, outputs and attributes. */
void loom_onnx_model_print(const loom_onnx_model *m, FILE *f);
void loom_onnx_model_print_sb(const loom_onnx_model *m, loom_strbuf *sb);

/* Loads one serialized TensorProto (a test-data file `input_0.pb`) into `arena`. */
LOOM_MUST_USE loom_status loom_onnx_tensor_load(const char *path, loom_arena *arena,
                                                loom_onnx_tensor **out);
LOOM_MUST_USE loom_status loom_onnx_tensor_parse(const void *bytes, size_t len, const char *name,
                                                 loom_arena *arena, loom_onnx_tensor **out);

/* One test_data_set_N directory of a conformance test: input_K.pb and output_K.pb. */
typedef struct loom_onnx_test_set {
  size_t n_inputs;            /* input_0.pb ... in order */
  loom_onnx_tensor **inputs;
  size_t n_outputs;           /* output_0.pb ... in order */
  loom_onnx_tensor **outputs;
  loom_arena arena;           /* owns everything above */
} loom_onnx_test_set;

/* Loads `dir`/input_K.pb and output_K.pb for K = 0, 1, ... as long as they exist. The
 * model says what each file holds: a graph input or output that is a sequence, map or
 * optional is reported as unsupported (UNIMPLEMENTED). Counts must match the model's
 * graph inputs (those without an initializer) and outputs. */
LOOM_MUST_USE loom_status loom_onnx_test_set_load(const char *dir, const loom_onnx_model *m,
                                                  loom_onnx_test_set **out);
void loom_onnx_test_set_free(loom_onnx_test_set *ts);

#endif

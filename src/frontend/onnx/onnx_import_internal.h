/* onnx_import_internal.h — what the importer's files share (onnx_import.c: the engine — values,
 * names, the node context and emitters, dispatch through the op tables, the main graph;
 * onnx_import_core.c: the table of direct mappings and the shape ops; onnx_import_fold.c:
 * constants and constant folding; onnx_import_nn.c: ops composed of several graph ops — losses,
 * activations, normalizations, index tricks; onnx_import_seq.c: attention, rotary embedding,
 * recurrences; onnx_import_quant.c: casts and quantization; onnx_import_image.c: convolution,
 * pooling, resize; onnx_import_imgcomp.c: image ops composed of graph ops, FlexAttention;
 * onnx_import_symval.c: shape computations as symbolic values; onnx_import_dyn.c: structural
 * inputs known only at run time; onnx_import_ctl.c: If / Loop / Scan, sequences and optionals;
 * onnx_import_train.c: the training optimizers; onnx_import_ml.c: ai.onnx.ml ops;
 * onnx_import_text.c: TfIdfVectorizer; onnx_import_random.c: Dropout in training mode).
 * Not a public interface. */
#ifndef LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H
#define LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H
#include "frontend/onnx/onnx_import.h"

/* A small integer value computed from shapes whose elements are symbolic expressions
 * (onnx_import_symval.c): rank 0 (one element) or 1. */
#define OIMP_SYMVAL_MAX 16
typedef struct oimp_symval {
  loom_dtype dtype; /* i64, i32 or bool */
  int rank;
  size_t n;
  const loom_sym_expr *v[OIMP_SYMVAL_MAX];
} oimp_symval;

/* A sequence or an optional built inside the graph (onnx_import_ctl.c), tracked at import as a
 * static list of graph values: ops on it are resolved while importing, none reaches the graph. */
typedef struct oimp_seq {
  bool optional;                       /* an optional: n is 0 (empty) or 1 */
  loom_dtype dtype;                    /* element type (LOOM_DTYPE_UNKNOWN: not known) */
  size_t n;
  loom_graph_expr **items;             /* n tensors */
  const loom_onnx_tensor **consts;     /* the constant value of each, or NULL */
} oimp_seq;

/* One import: the ONNX graph being read and the graph module being built. */
typedef struct imp {
  const loom_onnx_model *model;
  const loom_onnx_import_opts *opts;
  const loom_onnx_graph *g;
  loom_graph_module *m;
  loom_sym_ctx *cx;
  loom_graph_builder b;
  int64_t opset;                       /* of the ai.onnx domain */
  size_t nvals, capvals;               /* ONNX value name -> graph expr */
  const char **val_names;              /* interned in the ONNX model */
  loom_graph_expr **vals;
  const loom_onnx_tensor **val_consts; /* the constant tensor, when known */
  const oimp_symval **val_syms;        /* the symbolic value, when computed from shapes */
  const oimp_seq **val_seqs;           /* the sequence or optional (vals[i] is then NULL) */
  size_t nsymvals;                     /* symbolic values materialised as sym_tensor ops */
  size_t nsyms, capsyms;               /* dim_param name -> symbolic var */
  const char **sym_names;
  const loom_sym_expr **syms;
  unsigned unk;                        /* next unkN var number */
  size_t nused, capused;               /* IR names given out (interned in m) */
  const char **used;
  unsigned nconst;                     /* next kN constant name */
  size_t body_mark;                    /* values below this index belong to scopes outside the loop body
                                          being imported: made into exprs there, not cached (0: none) */
} imp;

/* The operand slots a node gets on the stack: a node with more inputs (a variadic op such as
 * Concat, Sum or Max; OIMP_VARIADIC in its table row) gets them from the module arena. Every
 * node has at least this many slots, the ones past its inputs NULL. */
#define OIMP_MAX_IN 16
/* max_in of a variadic op: any number of inputs. */
#define OIMP_VARIADIC INT32_MAX

/* One node being imported. The four operand arrays have max(nargs, OIMP_MAX_IN) slots. */
typedef struct nctx {
  imp *im;
  const loom_onnx_node *n;
  size_t nargs;
  loom_graph_expr **args;          /* one per input; NULL for an omitted optional one */
  const loom_onnx_tensor **consts; /* constant value of each input, or NULL */
  const oimp_symval **syms;        /* symbolic value of each input (not constant), or NULL */
  const oimp_seq **seqs;           /* the sequence or optional an input is (args[i] NULL), or NULL */
  bool bound;                        /* the handler bound every output itself (*out unused) */
  const loom_onnx_tensor *folded;    /* the result, when the handler folded it (oimp_fold_const) */
  size_t nattrs;                     /* attributes for the next oimp_emit */
  loom_graph_attr attrs[8];
} nctx;

/* An op table entry whose handler picks the graph ops itself. */
#define OIMP_OP_NONE LOOM_GRAPH_OP_COUNT

typedef struct op_entry op_entry;
/* Emits the node's first output into *out (other outputs: oimp_bind them). */
typedef loom_status (*handler)(nctx *c, const op_entry *e, loom_graph_expr **out);
/* Binds output k of the node to item k of tuple t for k < n (outputs without a name are
 * skipped); *first gets item 0 (onnx_import_misc.c). */
loom_status oimp_bind_items(nctx *c, loom_graph_expr *t, size_t n, loom_graph_expr **first);
struct op_entry {
  const char *onnx;   /* op type */
  loom_graph_op op;   /* graph op (OIMP_OP_NONE when the handler picks) */
  handler h;
  int min_in, max_in; /* accepted input counts */
  const char *attrs;  /* accepted attribute names, space-separated with leading/trailing space */
  bool multi_out;     /* the handler binds (or refuses) the outputs after the first itself */
};

/* Each family's table (oimp_<family>_table in onnx_import_<family>.c; the list is onnx_tables.def,
 * which gives each table's domain). */
#define OIMP_TABLE(family, domain)                  \
  extern const op_entry oimp_##family##_table[]; \
  extern const size_t oimp_##family##_table_len;
#include "frontend/onnx/onnx_tables.def"
#undef OIMP_TABLE
/* The entry for an op type of `domain` (NULL, "" and "ai.onnx": the default domain), searched
 * in every family's table; NULL when none has it. */
const op_entry *oimp_find_entry(const char *domain, const char *op_type);

loom_status oimp_node_err(loom_code code, const loom_onnx_node *n, const char *fmt, ...) LOOM_PRINTF(3, 4);
#define UNSUP(n, ...) oimp_node_err(LOOM_CODE_UNIMPLEMENTED, n, __VA_ARGS__)
#define BAD(n, ...) oimp_node_err(LOOM_CODE_INVALID_ARGUMENT, n, __VA_ARGS__)

/* A legal, unused IR variable name for ONNX name `onnx` ([A-Za-z_][A-Za-z0-9_]*, not a
 * reserved word, not of the builder's tN form; _2, _3, ... on a clash); NULL on OOM. */
const char *oimp_ir_name(imp *im, const char *onnx);
loom_status oimp_bind(imp *im, const char *name, loom_graph_expr *e, const loom_onnx_tensor *t);
loom_status oimp_bind_seq(imp *im, const char *name, const oimp_seq *sq);

/* Everything bound to one ONNX value. Bindings form a stack searched innermost first: a
 * subgraph (If / Loop / Scan body) is imported into the current builder after its inputs are
 * bound, so it sees its own values and the enclosing graphs'; closing the scope (im->nvals back
 * to its mark) forgets them, ready for the next unrolled iteration. */
typedef struct oimp_binding {
  loom_graph_expr *e;          /* NULL for a sequence, or a symbolic value not yet materialised */
  const loom_onnx_tensor *k;   /* the constant value, or NULL */
  const oimp_symval *sym;
  const oimp_seq *seq;
} oimp_binding;
bool oimp_lookup(imp *im, const char *name, oimp_binding *out);
/* The tensor value of `name` (a symbolic value is materialised); an error for a sequence. */
loom_status oimp_lookup_expr(imp *im, const char *name, loom_graph_expr **out);
loom_status oimp_bind_as(imp *im, const char *name, const oimp_binding *b);
/* Imports one node, or a graph's initializers and nodes (the main graph or a body, in scope). */
loom_status oimp_import_node(imp *im, const loom_onnx_node *n);
loom_status oimp_import_graph(imp *im, const loom_onnx_graph *g);
/* Loops, scans and recurrences of a static count up to this many steps are unrolled (their
 * step numbers fold into constants); longer ones and counts known only at run time become the
 * graph IR's loop. Measured (docs/onnx.md "Loop"): an LSTM / GRU step of 128 hidden units runs
 * equally fast either way at 16 steps, unrolled ~1% faster at 8, the loop ~2% faster at 32,
 * and the unrolled form's compile time grows with the count (past 32 steps it does not compile:
 * concat takes at most 32 inputs). */
#define OIMP_UNROLL_STEPS 16
/* The unrolling limit in force: OIMP_UNROLL_STEPS, or $LOOM_UNROLL_STEPS (0 to 100000) to
 * measure the two forms against each other (bench/rnn_forms). */
int64_t oimp_unroll_steps(void);

/* onnx_import_loop.c: a graph loop built by the importer. The body callback emits one
 * iteration (in the builder, nested) from the iteration var and the carried values' params, and
 * returns the next condition (when the loop has one), the next carried values and the scan
 * items (each a graph expr). Params start with the initial values' struct info; a carried value
 * whose next value the prover cannot show to have it gets a fresh local per differing axis (a
 * symbol bound at each iteration) and the body is imported again. The loop is bound as
 * `name`; finals[k] and stacks[j] are its final carried values and stacked scan items. */
typedef loom_status (*oimp_loop_body_fn)(nctx *c, void *ud, const loom_sym_expr *iter, loom_graph_expr *const *params,
                                          loom_graph_expr **cond_out, loom_graph_expr **next, loom_graph_expr **scans);
loom_status oimp_loop_build(nctx *c, const char *name, loom_graph_expr *count, loom_graph_expr *cond, size_t ncarry,
                            loom_graph_expr *const *inits, const char *const *param_names, size_t nscan,
                            oimp_loop_body_fn body, void *ud, loom_graph_expr **finals, loom_graph_expr **stacks);
/* An integer input as a loop's count: a constant or shape value as sym(...), a run-time tensor as
 * a symbolic var bound from max(value, 0) when the loop starts (tensor_to_shape + match_cast). */
loom_status oimp_loop_count(nctx *c, size_t i, const char *what, loom_graph_expr **out);
/* Loop (onnx_import_ctl.c's h_loop when it does not unroll) and Scan of a run-time length. */
loom_status oimp_loop_node(nctx *c, const loom_onnx_graph *g);
/* x reversed along `axis`, whose extent may be symbolic (a take of n - 1 - arange(n)). */
loom_status oimp_reverse_dyn(nctx *c, loom_graph_expr *x, int64_t axis, loom_graph_expr **y);
/* onnx_import_list.c: list values (sequences and optionals known only at run time). The List /
 * Optional struct info of graph input v declared as a sequence or optional. */
loom_status oimp_list_sinfo(imp *im, const loom_onnx_value *v, int depth, const loom_sinfo **out);
/* The node (some input of which is a list value) as list ops; UNIMPLEMENTED naming the input
 * for an op that takes no list. */
loom_status oimp_list_node(nctx *c);
/* SplitToSequence of input 0 along `axis` (of length len) by input 1 known only at run time, or
 * over an axis whose length is: 1-D sizes (a static count: a static list of parts, the sizes bound
 * as symbols and their sum checked against len) or one chunk size (ceil(len / chunk) parts: a loop
 * building a list value); binds the output. */
loom_status oimp_split_runtime(nctx *c, int64_t axis, const loom_sym_expr *len);
/* Static list sq made a list value (list_new) bound as `name`: a graph output. */
loom_status oimp_seq_to_list(imp *im, const oimp_seq *sq, const char *name, loom_graph_expr **out);
/* onnx_import_ctl.c: whether an op table entry takes sequence / optional inputs. */
bool oimp_ctl_takes_seq(const op_entry *e);
loom_graph_expr *oimp_const_of(imp *im, const loom_onnx_tensor *t);
/* Constants the importer makes (folded nodes, ConstantOfShape, EyeLike) hold at most this many
 * elements; oimp_new_tensor returns NULL for more (or a negative dim). */
#define OIMP_FOLD_MAX (1 << 24)
loom_onnx_tensor *oimp_new_tensor(imp *im, loom_dtype dt, size_t rank, const int64_t *dims);
loom_status oimp_fold_const(nctx *c, loom_onnx_tensor *t, loom_graph_expr **out);
/* onnx_import_fold.c: the node's one result computed at import time (every input constant; the
 * node built alone in a scratch module and run in the interpreter); false when it cannot be. */
bool oimp_fold_node(imp *im, const op_entry *e, const nctx *c, loom_onnx_tensor **out);
double oimp_scalar_f64(const loom_onnx_tensor *t);
bool oimp_is_signed_int(loom_dtype dt);

bool oimp_has_input(const nctx *c, size_t i);
int oimp_in_rank(const nctx *c, size_t i);
loom_status oimp_attr_int(const nctx *c, const char *name, int64_t def, int64_t *out);
loom_status oimp_attr_float(const nctx *c, const char *name, double def, double *out);
loom_status oimp_attr_ints(const nctx *c, const char *name, const int64_t **v, size_t *n, bool *present);
loom_status oimp_const_ints(const nctx *c, size_t i, const char *what, int64_t *buf, size_t cap, size_t *n);
loom_status oimp_get_axes(const nctx *c, int64_t since, int64_t *buf, size_t cap, size_t *n, bool *present);
loom_status oimp_norm_axes(const nctx *c, int rank, int64_t *ax, size_t n);
/* Shape-like input i as symbolic dims: a constant's values, or (a 1-D integer tensor of
 * static length known at run time) oimp_runtime_syms of it. */
loom_status oimp_shape_syms(nctx *c, size_t i, const char *what, const loom_sym_expr **dims, size_t cap, size_t *n);
/* The n values of v (1-D i32 / i64, static length n, computed at run time) bound to fresh
 * symbolic vars (tensor_to_shape + match_cast) named `<onnx>_<k>` when the ONNX value's name
 * reads as a name (a graph input such as "new_shape"), else `<op>_<what>_<k>` (an exporter's
 * "/model/Concat_output_0" feeding Reshape's shape: reshape_shape_0, ...). */
/* The base of fresh symbols' names for ONNX value `onnx`, operand `what` of c's node: the
 * value's name when it reads as a name, else `<op>_<what>` (lower case), into buf. */
const char *oimp_sym_base(const nctx *c, const char *onnx, const char *what, char *buf, size_t cap);
loom_status oimp_runtime_syms(nctx *c, loom_graph_expr *v, const char *onnx, const char *what, const loom_sym_expr **dims,
                              size_t n);
void oimp_add_attr(nctx *c, loom_graph_attr a);
/* y, an item read out of a list, match_cast to fresh dims (named after ONNX value `onnx`,
 * oimp_sym_base) when its rank is known and its dims are not (onnx_import_list.c). */
loom_status oimp_name_dims(nctx *c, loom_graph_expr *y, const char *onnx, loom_graph_expr **out);
/* Emits graph op `op` on args with c->attrs (then cleared); errors name the node. */
loom_status oimp_emit(nctx *c, loom_graph_op op, size_t nargs, loom_graph_expr *const *args, const char *name,
                      loom_graph_expr **out);

/* onnx_import_symval.c. The symbolic value of the node's result when its op is a shape
 * computation on shapes / symbolic values (else *out NULL: import the node normally). */
loom_status oimp_symval_node(nctx *c, oimp_symval **out);
/* Binds ONNX value `name` to sv: a constant when every element is one, else a sym_tensor op. */
loom_status oimp_symval_bind(imp *im, const char *name, const oimp_symval *sv);
/* Emits the sym_tensor op holding sv (named after ONNX value `name`). */
loom_status oimp_symval_expr(imp *im, const char *name, const oimp_symval *sv, loom_graph_expr **out);
/* Elements of input i as a symbolic value (from its symbolic value or a small integer constant). */
bool oimp_symval_of(const nctx *c, size_t i, oimp_symval *out);
/* Integers of input i as symbolic exprs: a constant or a value computed from shapes. */
loom_status oimp_sym_ints(const nctx *c, size_t i, const char *what, const loom_sym_expr **buf, size_t cap, size_t *n);

/* Small emitters for composite ops (unnamed results): op on one, two or three operands; a
 * rank-0 constant; x (op) v and v (op) x with v a scalar of x's dtype; a string attribute. */
loom_status oimp_op1(nctx *c, loom_graph_op op, loom_graph_expr *x, loom_graph_expr **y);
loom_status oimp_op2(nctx *c, loom_graph_op op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr **y);
loom_status oimp_op3(nctx *c, loom_graph_op op, loom_graph_expr *a, loom_graph_expr *b, loom_graph_expr *d,
                     loom_graph_expr **y);
loom_status oimp_scalar(nctx *c, loom_dtype dt, double v, loom_graph_expr **out);
loom_status oimp_op_k(nctx *c, loom_graph_op op, loom_graph_expr *x, double v, loom_graph_expr **y);
loom_status oimp_k_op(nctx *c, loom_graph_op op, double v, loom_graph_expr *x, loom_graph_expr **y);
loom_status oimp_attr_str(const nctx *c, const char *name, const char *def, const char **out);
/* Imports the nodes of subgraph g (an attribute's body: it may read the enclosing graph's
 * values) with its inputs bound to ins; *out is its one output. */
loom_status oimp_inline_graph(imp *im, const loom_onnx_graph *g, size_t nin, loom_graph_expr *const *ins, loom_graph_expr **out);

/* From onnx_import_image.c: a string graph attribute; int list attribute `name` of `want`
 * entries (`dflt` each when absent); the constant extent of axis `ax` of input i (-1 when not
 * constant). */
loom_graph_attr oimp_str_attr(imp *im, const char *name, const char *s);
loom_status oimp_ints_or(const nctx *c, const char *name, int64_t *buf, size_t want, int64_t dflt);
int64_t oimp_const_dim(const nctx *c, size_t i, int ax);
/* pads (2 * ns: before..., after...) from attribute auto_pad (SAME_* need constant extents of input 0). */
loom_status oimp_auto_pads(const nctx *c, size_t ns, const int64_t *kern, const int64_t *strides, const int64_t *dil, int64_t *pads);

/* From onnx_import_imgcomp.c: Pad's reflect / edge / wrap modes on input 0 with pads
 * [before.., after..] over every axis (a gather of computed indices per padded axis). */
loom_status oimp_pad_mode(nctx *c, const char *mode, const int64_t *pads, loom_graph_expr **out);
/* The same with input 1 (pads) known only at run time (input 3, axes, absent or constant). */
loom_status oimp_pad_mode_dyn(nctx *c, const char *mode, loom_graph_expr **out);

loom_status oimp_h_simple(nctx *c, const op_entry *e, loom_graph_expr **out);
loom_status oimp_h_identity(nctx *c, const op_entry *e, loom_graph_expr **out);
loom_status oimp_h_reduce(nctx *c, const op_entry *e, loom_graph_expr **out);

/* onnx_import_dyn.c: inputs that decide structure but arrive at run time (neither constant
 * nor computed from shapes) become the graph op's run-time operand form. */
bool oimp_runtime_input(const nctx *c, size_t i);
loom_status oimp_dyn_reduce(nctx *c, const op_entry *e, bool keep, bool noop, loom_graph_expr **out);
loom_status oimp_dyn_trilu(nctx *c, bool upper, loom_graph_expr **out);
loom_status oimp_dyn_reshape(nctx *c, const op_entry *e, bool allowzero, loom_graph_expr **out);
loom_status oimp_dyn_axes_shape(nctx *c, const op_entry *e, loom_graph_expr **out);
loom_status oimp_dyn_cumsum(nctx *c, const op_entry *e, bool excl, bool rev, loom_graph_expr **out);
loom_status oimp_dyn_range(nctx *c, loom_graph_expr **out);
loom_status oimp_dyn_slice(nctx *c, const op_entry *e, loom_graph_expr **out);
loom_status oimp_dyn_pad(nctx *c, const op_entry *e, loom_graph_expr **out);

/* From onnx_import_nn.c: x reversed along a static axis; LayerNormalization's Mean and
 * InvStdDev outputs (bound when the node names them). */
loom_status oimp_reverse_axis(nctx *c, loom_graph_expr *x, int64_t axis, loom_graph_expr **y);
loom_status oimp_layernorm_stats(nctx *c, int64_t axis, double eps);
/* From onnx_import_random.c: Dropout whose training_mode is not a constant false. */
loom_status oimp_dropout_training(nctx *c, loom_graph_expr **out);
#endif

/* graph_internal.h — what the files of graph/ share: the module layout, the operator
 * implementation record, and helpers for inference and the reference interpreter. */
#ifndef LOOM_GRAPH_INTERNAL_H
#define LOOM_GRAPH_INTERNAL_H

#include "base/vec.h"
#include "graph/graph.h"
#include "graph/legalize.h"

/* Makes program `name` from a parameter struct (tensorprog/tp_gen.h, LOOM_TP_GEN_PARAMS): an
 * adapter of legalization's over a tp_gen.h generator. */
typedef loom_status (*loom_graph_gen_fn)(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp);

/* A program legalization generated, and what from (loom_legal_program's cache). */
typedef struct loom_graph_generated {
  uint64_t key;          /* loom_tp_gen_key of the parameters */
  loom_graph_gen_fn gen; /* the generator */
  const void *params;    /* a copy of the parameter struct (module arena) */
  size_t size;           /* its size in bytes */
  loom_tp_func *tp;      /* the program */
} loom_graph_generated;

/* A weights file a module's constants point into (loom_graph_module_weights). */
typedef struct loom_graph_weights {
  const char *path;                      /* the resolved path (module arena) */
  loom_safetensors *file;                /* mapped; closed with the module */
} loom_graph_weights;

/* A file's bytes mapped at [base, base + len) that borrowed constants may point into, with the
 * file's identity when it was mapped (loom_graph_module_add_source). */
typedef struct loom_graph_source {
  const uint8_t *base;                   /* the mapping */
  size_t len;                            /* its length */
  const char *path;                      /* the file (module arena) */
  loom_file_id id;                       /* its identity when mapped */
} loom_graph_source;

/* Memory a module's borrowed constants point into, freed with the module (loom_graph_module_adopt). */
typedef struct loom_graph_adopted {
  void *p;
  void (*free_fn)(void *p);
} loom_graph_adopted;

struct loom_graph_module {
  loom_allocator *alloc;
  loom_arena arena;                      /* every IR node of the module */
  loom_interner names;                   /* names of vars, functions, attrs */
  loom_sym_ctx *cx;                      /* the one symbolic context */
  LOOM_VEC(loom_graph_func *) funcs;
  LOOM_VEC(loom_tp_func *) tps;
  LOOM_VEC(loom_graph_const) consts;
  LOOM_VEC(loom_graph_extern) externs;
  LOOM_VEC(loom_graph_generated) generated; /* programs legalization made, with their parameters */
  uint32_t next_var_id;                  /* ids of graph vars */
  uint32_t next_fresh;                   /* counter for fresh symbol names */
  const loom_sinfo *object;              /* the shared Object info */
  const char *dir;                       /* directory of the parsed file (arena), or NULL */
  loom_libcall_lib *libcall;             /* the externs, loaded when the interpreter first calls one */
  LOOM_VEC(loom_graph_weights) weights;  /* weights files mapped for its constants */
  LOOM_VEC(loom_graph_adopted) adopted;  /* freed last, in order (loom_graph_module_adopt) */
  LOOM_VEC(loom_graph_source) sources;   /* files its constants' bytes lie in (loom_graph_module_add_source) */
  int vector_bytes;                      /* the target's vector width (loom_graph_module_set_vector_bytes) */
};

/* ---- operator implementations -------------------------------------------- */

/* One attribute an op accepts, with the value it has when the call leaves it out. Rows name the
 * fields after the kind: {"axis", LOOM_GRAPH_ATTR_INT, .dflt = -1}, {"mode", LOOM_GRAPH_ATTR_STR,
 * .dflt_str = "nearest"}, {"dtype", LOOM_GRAPH_ATTR_DTYPE, .dflt_dtype = LOOM_DTYPE_F32},
 * {"shape", LOOM_GRAPH_ATTR_SYMS, .required = true}; a list ends with {0}. Reads go through the
 * spec (loom_graph_call_int / _float / _str / _dtype), so each default is written once. */
typedef struct loom_graph_attr_spec {
  const char *name;           /* spelling */
  loom_graph_attr_kind kind;  /* INT also accepts a one-constant SYMS; FLOAT accepts INT */
  bool required;              /* missing -> error (its default is never read) */
  double dflt;                /* INT, BOOL, FLOAT: the value when absent */
  const char *dflt_str;       /* STR: the value when absent (NULL reads as "") */
  loom_dtype dflt_dtype;      /* DTYPE: the dtype when absent */
} loom_graph_attr_spec;

/* State of inferring one call. */
typedef struct loom_graph_icx {
  loom_graph_module *m;
  loom_sym_ctx *cx;
  const loom_graph_expr *call;
  const char *op;             /* op name for messages */
  const char *hint;           /* name hint for fresh symbols (may be NULL) */
  LOOM_VEC(const loom_sym_expr *) guards; /* system allocator; moved to the arena at the end */
  LOOM_VEC(const char *) why;
} loom_graph_icx;

/* Window parameters of a convolution or pooling call, per spatial axis (constants of the call). */
enum { LOOM_GRAPH_MAX_SPATIAL = 6 };
typedef struct loom_graph_window {
  int n; /* spatial rank */
  int64_t kernel[LOOM_GRAPH_MAX_SPATIAL], stride[LOOM_GRAPH_MAX_SPATIAL], dilation[LOOM_GRAPH_MAX_SPATIAL];
  int64_t pad_lo[LOOM_GRAPH_MAX_SPATIAL], pad_hi[LOOM_GRAPH_MAX_SPATIAL]; /* padding before / after */
  int64_t out_pad[LOOM_GRAPH_MAX_SPATIAL];                                  /* conv_transpose's output_padding */
  int64_t groups;                                                           /* convolution */
  bool ceil;                                                                /* ONNX ceil_mode (image pools) */
} loom_graph_window;

/* conv1d / conv2d / conv (pool false) and max_pool2d / avg_pool2d (pool true) of spatial rank n: a list
 * attribute of 1 entry broadcasts, n entries, or 2n for padding (befores, then afters) (op_conv.c). */
loom_status loom_graph_conv_window(loom_graph_icx *ic, int n, bool pool, loom_graph_window *w);
/* Whether the flat form of a convolution (its output computed on the grid of the padded input's
 * rows, the columns past each row's output computed and cropped) would compute at least
 * LOOM_GRAPH_CONV_GRID_WASTE columns per row for nothing: a dilated kernel, whose padding widens
 * every row (DeepLab's ASPP, 3 x 3 at dilation 36: 72 columns past a 14-column row). Such a
 * convolution goes tap by tap over each tap's positions that read data (legalize_window.c; the
 * patches of every tap and one GEMM when the kernel has too many taps). kernel: the n spatial
 * extents. */
enum { LOOM_GRAPH_CONV_GRID_WASTE = 8 };
bool loom_graph_conv_grid_wasteful(const loom_graph_window *w, const int64_t *kernel, int n);
/* The spatial rank of convolution op `op` (conv1d: 1, conv2d: 2, conv: ndim - 2) on an input of
 * rank ndim (op_conv.c). */
int loom_graph_conv_rank(loom_graph_op op, int ndim);
/* conv_transpose over an input of rank ndim (op_image.c). */
loom_status loom_graph_convt_window(loom_graph_icx *ic, int ndim, loom_graph_window *w);
/* max_pool / max_pool_indices / avg_pool / lp_pool over an input of rank ndim (op_image.c). */
loom_status loom_graph_pool_window(loom_graph_icx *ic, int ndim, loom_graph_window *w);
/* Output extent of an image pool's spatial axis i for input extent `in`, or -1 when the input is
 * smaller than the dilated kernel; *extra_lo (may be NULL) is the shift ceil mode adds before the
 * average and Lp windows. */
int64_t loom_graph_pool_extent(const loom_graph_window *w, int i, int64_t in, int64_t *extra_lo);

/* A constant-bounds strided_slice's begin or end `v` on an axis of extent `dim`, as the
 * reference reads it (ONNX Slice with numpy's clamping): a negative constant counts from the
 * end, then the bound is clamped to [0, dim] for a positive step and to [-1, dim - 1] for a
 * negative one (-1: before index 0). NULL on a symbolic error. */
const loom_sym_expr *loom_graph_slice_bound(loom_sym_ctx *cx, const loom_sym_expr *v, const loom_sym_expr *dim, bool neg);

/* State of evaluating one call in the interpreter. */
typedef struct loom_graph_ecx {
  loom_graph_module *m;
  const loom_graph_expr *call;
  const loom_sym_env *env;    /* bound symbolic vars */
  const char *op;
} loom_graph_ecx;

/* Lowers one call (its args have struct info; `out` is its result's, a tensor of known dtype) to a
 * tensor program (graph/legalize.h): r->tp, plus the scalar parameters and run-time guards the
 * program needs. UNIMPLEMENTED (loom_legal_unsupported) for a form without a program: the call
 * stays an operator. The legalize pass (graph/legalize.c) calls it through the op's record. */
typedef loom_status (*loom_graph_legalize_fn)(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                              loom_graph_legal *r);

typedef struct loom_lx loom_lx;
/* Lowers the binding x->b, an op call, to several bindings (legalize_expand.c): the tuple-valued
 * ops, and the forms whose result dims depend on data, which first compute and bind them.
 * *value: the binding's new value (the added bindings go before it), or NULL for a form that
 * lowers to one program (through the legalize hook), with nothing added. */
typedef loom_status (*loom_graph_expand_fn)(loom_lx *x, loom_graph_expr **value);

/* Everything about one operator but its registry row (ops.def): defined in its family's file. */
typedef struct loom_graph_op_impl {
  const loom_graph_attr_spec *attrs; /* terminated by {0} (a NULL name) */
  /* Infers the result struct info (args have theirs). */
  loom_status (*infer)(loom_graph_icx *ic, const loom_sinfo **out);
  /* Computes the result from concrete args (reference implementation). */
  loom_status (*eval)(loom_graph_ecx *ec, const loom_graph_value *args, loom_graph_value *out);
  /* Lowers a call to a tensor program; NULL: no program (the call stays an operator, or
   * its expand hook rewrites it into several bindings). */
  loom_graph_legalize_fn legalize;
  /* Lowers the forms that take several bindings; tried first. NULL: the op has none. */
  loom_graph_expand_fn expand;
} loom_graph_op_impl;

#define LOOM_GRAPH_OP(e, name, family, pattern, min_args, max_args, flags) \
  extern const loom_graph_op_impl loom_graph_op_impl_##name;
#include "graph/ops.def"
#undef LOOM_GRAPH_OP

const loom_graph_op_impl *loom_graph_op_impl_of(loom_graph_op op);
void loom_graph_op_arity(loom_graph_op op, int *min_args, int *max_args);

/* ---- inference helpers ----------------------------------------------------- */

/* The i-th argument's struct info. */
const loom_sinfo *loom_graph_icx_arg(loom_graph_icx *ic, size_t i);
/* A TYPE_ERROR status "OP: ..." */
loom_status loom_graph_icx_error(loom_graph_icx *ic, const char *fmt, ...) LOOM_PRINTF(2, 3);
/* "an Object", "a Scalar", "a Tensor", ... for messages. */
const char *loom_graph_sinfo_kind_word(const loom_sinfo *s);
/* Requires argument i to be a tensor of known rank; *out is its info. */
loom_status loom_graph_icx_tensor(loom_graph_icx *ic, size_t i, bool need_dims, const loom_sinfo **out);
/* Records a runtime guard with its explanation. */
loom_status loom_graph_icx_guard(loom_graph_icx *ic, const loom_sym_expr *cond, const char *why);
/* A fresh shape symbol named after the hint ("nnz" -> "<hint>_nnz0"). */
const loom_sym_expr *loom_graph_icx_fresh(loom_graph_icx *ic, const char *what);
/* Attribute lookup on the call (NULL when absent). */
const loom_graph_attr *loom_graph_call_attr(const loom_graph_expr *call, const char *name);
/* Attribute `name` of op call `call` (INT, BOOL or a one-constant SYMS / FLOAT or INT / STR /
 * DTYPE), or,
 * when the call leaves it out, the default its op's spec declares (op_registry.c). */
int64_t loom_graph_call_int(const loom_graph_expr *call, const char *name);
double loom_graph_call_float(const loom_graph_expr *call, const char *name);
const char *loom_graph_call_str(const loom_graph_expr *call, const char *name);
/* Attribute `name` of `call` as a list of strings (STRS): *n of them; an absent one is empty. */
const char *const *loom_graph_call_strs(const loom_graph_expr *call, const char *name, size_t *n);
loom_dtype loom_graph_call_dtype(const loom_graph_expr *call, const char *name);
/* Normalises `axis` against `ndim` (negative counts from the end); error when out of range. */
loom_status loom_graph_icx_axis(loom_graph_icx *ic, int64_t axis, int ndim, const char *what, int *out);
/* Constant int list attribute (axes); error when an element is not constant. */
loom_status loom_graph_icx_ints(loom_graph_icx *ic, const char *name, int64_t *buf, size_t cap,
                                size_t *n, bool *present);
/* Operand i as a run-time integer list (axes, shape, k): a 0-d or 1-D i32/i64 tensor of static
 * length, *len (1 for 0-d); the values are read when the op runs. */
loom_status loom_graph_icx_int_operand(loom_graph_icx *ic, size_t i, const char *what, int64_t *len);
/* Broadcasts dims a (rank na) and b (rank nb) into out (rank max); records guards. `ia`, `ib`
 * are operand indices for messages. */
loom_status loom_graph_icx_broadcast(loom_graph_icx *ic, size_t ia, int na, const loom_sym_expr *const *a,
                                     size_t ib, int nb, const loom_sym_expr *const *b,
                                     const loom_sym_expr **out);
/* Proves a == b or fails with "OP: operand ia axis xa is A, operand ib axis xb is B"; when the
 * prover says UNKNOWN a guard a == b is recorded. */
loom_status loom_graph_icx_same_dim(loom_graph_icx *ic, size_t ia, int xa, const loom_sym_expr *a,
                                    size_t ib, int xb, const loom_sym_expr *b);
/* `si` with the symbolic vars from[i] replaced by to[i] in every dim and scalar value (recursing
 * into tuples); NULL on OOM. */
const loom_sinfo *loom_graph_sinfo_subst(loom_graph_module *m, const loom_sinfo *si, const loom_sym_expr *const *from,
                                         const loom_sym_expr *const *to, size_t n);
/* A dims array in the module arena. */
const loom_sym_expr **loom_graph_dims_new(loom_graph_module *m, size_t n);
/* Prints a symbolic expression / a dims list into a module-arena string (for messages). */
const char *loom_graph_sym_str(loom_graph_module *m, const loom_sym_expr *e);
const char *loom_graph_dims_str(loom_graph_module *m, int n, const loom_sym_expr *const *d);
/* Product of dims (symbolic). */
const loom_sym_expr *loom_graph_dims_prod(loom_sym_ctx *cx, int n, const loom_sym_expr *const *d);

/* ---- interpreter helpers --------------------------------------------------- */

/* Evaluates a symbolic expression with the bound vars. */
loom_status loom_graph_ecx_sym(loom_graph_ecx *ec, const loom_sym_expr *e, int64_t *out);
/* The values of run-time integer operand i (tensor t), at most cap; error naming op and operand. */
loom_status loom_graph_ecx_int_operand(loom_graph_ecx *ec, const loom_graph_tensor *t, size_t i, const char *what,
                                       int64_t *buf, size_t cap, size_t *n);
/* Marks run-time `axes` (operand i) in mask[ndim]; INVALID_ARGUMENT naming the value when one is
 * out of range or listed twice. */
loom_status loom_graph_ecx_axes(loom_graph_ecx *ec, size_t i, const int64_t *axes, size_t n, int ndim, bool *mask);
/* Calls extern `call` (graph/extern.c) through libcall: the result is allocated from the
 * call's result struct info evaluated under `env`. */
loom_status loom_graph_eval_extern(loom_graph_module *m, const loom_graph_expr *call, const loom_sym_env *env,
                                   const loom_graph_value *args, loom_graph_value *out);
/* The elements of `t` as a malloc'd array of doubles (NULL on OOM); the hot loops of the
 * reference read these instead of converting element by element. */
double *loom_graph_tensor_to_f64(const loom_graph_tensor *t);
/* Row-major strides of a shape. */
void loom_graph_strides(int ndim, const int64_t *shape, int64_t *strides);
/* Index of the element of `t` (rank `t->ndim`) that broadcasts to the output multi-index `idx`
 * of rank `ndim`. */
size_t loom_graph_bcast_index(const loom_graph_tensor *t, int ndim, const int64_t *idx);
/* Steps a multi-index through `shape`; false after the last. */
bool loom_graph_index_next(int ndim, const int64_t *shape, int64_t *idx);

/* cast (op_elemwise.c) to or from dtype string, y allocated (op_string.c): numbers print as
 * NumPy's str() does (ONNX's reference: astype(str)); strings parse as numbers (an integer
 * literal exactly; "100.5" to an integer truncates) or are refused naming the element. */
loom_status loom_graph_cast_string(loom_graph_ecx *ec, const loom_graph_tensor *x, loom_graph_tensor *y);

/* ---- parsing/printing helpers shared with the verifier ---------------------- */

/* Whether a binding's declared info agrees with re-inference (fresh symbols of the inferred
 * info may stand for any symbol of the declared info). */
loom_sym_truth loom_graph_sinfo_agrees(loom_sym_ctx *cx, const loom_sinfo *declared,
                                       const loom_sinfo *inferred);

#endif

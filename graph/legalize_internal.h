/* legalize_internal.h — what the legalization code shares: the helpers of legalize.c that the
 * legalize hooks use (each op family's file fills its records' hooks, graph_internal.h), the hooks
 * defined in a legalize_<family>.c beside their family file, and the expander of
 * legalize_expand.c. */
#ifndef LOOM_GRAPH_LEGALIZE_INTERNAL_H
#define LOOM_GRAPH_LEGALIZE_INTERNAL_H

#include "graph/graph_internal.h"
#include "graph/legalize.h"
#include "tensorprog/tp_gen.h"

/* UNIMPLEMENTED "<op>: no legalization <why>". */
loom_status loom_legal_unsupported(const loom_graph_expr *call, const char *why);
/* UNIMPLEMENTED for a call whose run-time operand `what` (axes, shape, ... read when the op runs)
 * gives data-dependent dims: no one program; the legalize pass expands it (legalize_expand.c). */
loom_status loom_legal_runtime_operand(const loom_graph_expr *call, const char *what);
/* Tensor argument i with known rank (<= 8), dims and dtype, else UNIMPLEMENTED. */
loom_status loom_legal_tensor_arg(const loom_graph_expr *call, size_t i, const loom_sinfo **out);

/* The program gen makes of params (a parameter struct of `size` bytes: tensorprog/tp_gen.h,
 * LOOM_TP_GEN_PARAMS): the module's when gen already made one of equal parameters (keyed by
 * loom_tp_gen_key, confirmed byte for byte), else a new one added to the module and named
 * `name` — or name_2, name_3, .. when another program has that name, so programs whose readable
 * names coincide stay apart. LOOM_LEGAL_PROGRAM passes a struct variable and its size. */
loom_status loom_legal_program(loom_graph_module *m, const char *name, loom_graph_gen_fn gen, const void *params, size_t size,
                               loom_tp_func **tp);
#define LOOM_LEGAL_PROGRAM(m, name, gen, params, tp) loom_legal_program((m), (name), (gen), &(params), sizeof(params), (tp))

/* Operand 0 as a tensor (loom_legal_tensor_arg) and its attribute `axis` normalised to its rank
 * (UNIMPLEMENTED "for this axis" when it is out of range). */
loom_status loom_legal_axis_arg(const loom_graph_expr *call, const loom_sinfo **x, int *axis);

/* The reduction of graph op `op` (sum, mean, max, min, prod), or false (op_reduce.c). */
bool loom_legal_reduce_kind(loom_graph_op op, loom_tp_reduce_op *kind);

/* The broadcast mode of each axis of `in` against the output dims out_dims[out_rank] (aligned
 * right): FULL where the prover shows the extents equal, ONE for a constant 1, else GUARD; appends
 * a letter per axis (F, 1, G) to `key` (capacity cap), the program's name part. */
void loom_legal_bcast_modes(loom_sym_ctx *cx, const loom_sinfo *in, const loom_sym_expr *const *out_dims, int out_rank,
                            loom_tp_bcast *modes, char *key, size_t cap);

/* v as a tensor-program literal of dtype t ("1.5", "3", "true"). */
void loom_legal_literal(loom_dtype t, double v, char *buf, size_t cap);

/* The axis `ax` (negative: from the end) of a rank-ndim tensor in [0, ndim), or false. */
bool loom_legal_norm_axis(int64_t ax, int ndim, int *out);

/* "operand i 'name'" (its variable's name when it is one), for messages. */
void loom_legal_operand_name(const loom_graph_expr *call, size_t i, char *buf, size_t cap);

/* ---- legalize hooks defined beside their family file (loom_graph_legalize_fn) ---- */

/* legalize_shape.c (op_shape.c): reshape / expand_dims / squeeze / flatten share one. */
loom_status loom_legal_reshape(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_permute(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_concat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_broadcast_to(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                    loom_graph_legal *r);
loom_status loom_legal_slice(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_pad(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_tile(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_repeat(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
/* The pad program's parameters (loom_tp_gen_pad) and its generator: constant pads (scalar
 * parameters) here, run-time pads (a buffer) in legalize_expand.c. */
typedef struct loom_legal_pad_params {
  double value;     /* the pad value without a value operand */
  loom_dtype t;
  int32_t rank;
  int32_t pads_buffer; /* the pads are read from a buffer */
  int32_t value_rank;  /* the value operand's rank, -1 without one */
} loom_legal_pad_params;
LOOM_TP_GEN_PARAMS(loom_legal_pad_params, 8 + 4 * 4);
loom_status loom_legal_gen_pad(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp);

/* legalize_window.c: conv1d / conv2d / conv (op_conv.c) and conv_transpose (op_image.c);
 * legalize_pool.c: every pooling op but global_avg_pool2d: max_pool2d / avg_pool2d (op_conv.c),
 * max_pool / max_pool_indices / avg_pool / lp_pool (op_image.c). */
loom_status loom_legal_conv(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_pool(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);

/* What a window program is made of: the window (padding-free, 0 past its n axes), the dtypes and
 * the form. conv and pool share it; their generators differ. */
typedef struct loom_legal_window_params {
  int64_t kernel[LOOM_TP_MAX_SPATIAL], stride[LOOM_TP_MAX_SPATIAL], dilation[LOOM_TP_MAX_SPATIAL];
  int64_t pad_lo[LOOM_TP_MAX_SPATIAL], pad_hi[LOOM_TP_MAX_SPATIAL], shift[LOOM_TP_MAX_SPATIAL];
  int64_t groups, p;     /* conv groups; lp's p */
  loom_dtype t, acc;
  int32_t n, bias, transpose;
  loom_tp_pool_kind kind;
  int32_t col_major, fused; /* depthwise: the phase-plane form; the form over the unpadded input (loom_tp_dw_fused) */
} loom_legal_window_params;
LOOM_TP_GEN_PARAMS(loom_legal_window_params, (6 * LOOM_TP_MAX_SPATIAL + 2) * 8 + 8 * 4);

/* conv_pad's parameters (padding-free: they are its program's key). */
typedef struct loom_legal_pad_key {
  int64_t lo[LOOM_TP_MAX_SPATIAL], hi[LOOM_TP_MAX_SPATIAL];
  double fill;
  int64_t flat_extra; /* conv_pad's flat form (>= 0) */
  int32_t n, share; /* conv_pad's shared pads of the last axis (flat form) */
} loom_legal_pad_key;
LOOM_TP_GEN_PARAMS(loom_legal_pad_key, (2 * LOOM_TP_MAX_SPATIAL + 2) * 8 + 2 * 4);

/* Shared by legalize_window.c (where they live) and legalize_pool.c: a program key's
 * "_<tag><v0>x<v1>..." for the n entries of v (a negative one as m<|v|>); a window's key (its
 * kernel when `kernel`, stride, dilation, padding and shift); the tensorprog window of a graph
 * window; the infer context of a call; window_params of a window and back. */
void loom_legal_key_list(char *name, size_t cap, const char *tag, const int64_t *v, int n);
void loom_legal_key_window(char *name, size_t cap, const loom_tp_window *w, bool kernel);
loom_tp_window loom_legal_window_of(const loom_graph_window *g);
loom_graph_icx loom_legal_icx_for(loom_graph_module *m, const loom_graph_expr *call);
loom_legal_window_params loom_legal_window_params_of(const loom_tp_window *w, loom_dtype t);
loom_tp_window loom_legal_window_from(const loom_legal_window_params *p);
/* `<b>_xp` = x (struct info xs) padded by k (conv_pad); *xin becomes it. */
loom_status loom_legal_pad_input(loom_lx *x, const loom_sinfo *xs, const loom_legal_pad_key *k, loom_graph_expr **xin);
/* `<b>_xg` = xp (x padded by k) viewed (n, c, hp0*hp1): the rows programs' grid operand (loom_tp_rows_grid). */
loom_status loom_legal_plane_view(loom_lx *x, const loom_sinfo *xs, const loom_legal_pad_key *k, loom_graph_expr *xp,
                                  loom_graph_expr **out);
/* The final value: op(arg, attrs) with result struct info `out`, lowered (a view stays an op call). */
loom_status loom_legal_final_call(loom_lx *x, loom_graph_op op, loom_graph_expr *arg, size_t nattrs, const loom_graph_attr *attrs,
                                  const loom_sinfo *out, loom_graph_expr **value);

/* legalize_image.c: resize and grid_sample (op_image.c), resize2d (op_conv.c). */
loom_status loom_legal_resize(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_resize2d(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);
loom_status loom_legal_grid_sample(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                   loom_graph_legal *r);

/* legalize_index.c: gather_elements / scatter_elements (op_index.c; may add guards to r) and
 * gather_nd / scatter_nd (op_misc.c). */
loom_status loom_legal_elements(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out,
                                loom_graph_legal *r);
loom_status loom_legal_nd(loom_graph_module *m, const loom_graph_expr *call, const loom_sinfo *out, loom_graph_legal *r);

/* The call_tp that op call v (v->sinfo its result) lowers to (loom_graph_legalize_call), in *out;
 * the run-time guards the lowering needs go to b, the binding that will hold it. */
loom_status loom_legal_lower_call(loom_graph_module *m, const loom_graph_expr *v, loom_graph_binding *b, loom_graph_expr **out);

/* ---- rewriting one binding into several (legalize_expand.c) ---- */

#define LOOM_LX_MAX_ADDED 128 /* a dilated convolution tap by tap adds 3 per tap (legalize_window.c) */

/* The bindings added before the one being rewritten (b), spliced in when the rewrite succeeds
 * (loom_lx is declared in graph_internal.h for the expand hooks' type). */
struct loom_lx {
  loom_graph_module *m;
  loom_graph_binding *b; /* rewritten: its value is replaced last, its var kept */
  loom_graph_binding *added[LOOM_LX_MAX_ADDED];
  size_t n;
};

/* Adds `<b's var>_<suffix> = value` with struct info si; its var, or NULL (out of memory, or
 * LOOM_LX_MAX_ADDED bindings added: an expander with more checks x->n first). */
loom_graph_expr *loom_lx_add(loom_lx *x, const char *suffix, loom_graph_binding_kind kind, loom_graph_expr *value,
                             const loom_sinfo *si);
/* The call of the program gen makes of params (size bytes; loom_legal_program, named `name`) on
 * args, result struct info si, in *call (no binding: the rewritten binding's value). */
loom_status loom_lx_call(loom_lx *x, const char *name, loom_graph_gen_fn gen, const void *params, size_t size, size_t nargs,
                         loom_graph_expr *const *args, const loom_sinfo *si, loom_graph_expr **call);
/* Adds `<b's var>_<suffix> =` that call. */
loom_status loom_lx_add_tp(loom_lx *x, const char *suffix, const char *name, loom_graph_gen_fn gen, const void *params, size_t size,
                           size_t nargs, loom_graph_expr *const *args, const loom_sinfo *si, loom_graph_expr **out);
/* Adds `op(args, attrs)` with result struct info si, lowered through loom_graph_legalize_call. */
loom_status loom_lx_add_lowered(loom_lx *x, const char *suffix, loom_graph_op op, size_t nargs, loom_graph_expr *const *args,
                                size_t nattrs, const loom_graph_attr *attrs, const loom_sinfo *si, loom_graph_expr **out);
/* Binds dims[0 .. n) (new symbols, or expressions to check) to the values of vec, a 1-D i64 /
 * i32 tensor of length n: tensor_to_shape, then match_cast to Shape[(dims)]. */
loom_status loom_lx_bind_dims(loom_lx *x, const char *suffix, loom_graph_expr *vec, size_t n, const loom_sym_expr *const *dims);
/* Runs the program gen makes of params (size bytes, named `name`) on args into `<b>_<what>`, an
 * i64 vector of n values, and binds them to dims[0 .. n) as `<b>_<bind>` (loom_lx_bind_dims): how
 * a form computes the dims data decides. */
loom_status loom_lx_bind_program(loom_lx *x, const char *what, const char *bind, const char *name, loom_graph_gen_fn gen,
                                 const void *params, size_t size, size_t nargs, loom_graph_expr *const *args, size_t n,
                                 const loom_sym_expr *const *dims);
/* New shape symbols <b's var>_<tag><k> for k < n, in out[]. */
loom_status loom_lx_new_syms(loom_lx *x, const char *tag, int n, const loom_sym_expr **out);
/* The view `reshape(v, shape=[dims])` of dtype t (rank n): its call, with its struct info. */
loom_graph_expr *loom_lx_view(loom_lx *x, loom_graph_expr *v, loom_dtype t, int n, const loom_sym_expr *const *dims);
/* Adds run-time guard `cond` (message why) to b's guards. */
loom_status loom_lx_add_guard(loom_lx *x, const loom_sym_expr *cond, const char *why);
/* An expander of one form: *value the rewritten value and *applies true, or *applies false (the
 * call keeps its one-program lowering). */
typedef loom_status (*loom_lx_expander)(loom_lx *x, loom_graph_expr **value, bool *applies);
/* An expand hook's result from fn: *value NULL where fn does not apply. */
loom_status loom_lx_expand_with(loom_lx *x, loom_lx_expander fn, loom_graph_expr **value);

/* ---- expand hooks (loom_graph_expand_fn): the op records' forms that take several bindings ---- */

/* legalize_expand.c: split (op_shape.c: one strided_slice per part) and topk (op_misc.c: values
 * and indices, a run-time k bound first) always; the reductions over run-time axes (op_reduce.c),
 * reshape / expand_dims / squeeze by a run-time operand (op_shape.c), cumsum / cumprod on a
 * run-time axis (op_index.c), strided_slice and pad with run-time bounds (op_shape.c), arange
 * with run-time bounds (op_create.c); nonzero and unique (op_index.c) and non_max_suppression
 * (op_misc.c), whose extents are counted in the data. */
loom_status loom_legal_expand_split(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_topk(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_reduce(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_view(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_cumulative(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_slice(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_pad(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_arange(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_nonzero(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_unique(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_nms(loom_lx *x, loom_graph_expr **value);
/* legalize_window.c: conv1d / conv2d / conv / conv_transpose in f32 with constant kernel extents
 * as bindings the CPU matmul rule tiles; legalize_pool.c: max / average pooling row by row,
 * global_avg_pool2d as a mean over planes. *value NULL for another form (the call keeps its
 * one-program lowering). */
loom_status loom_legal_expand_window(loom_lx *x, loom_graph_expr **value);
loom_status loom_legal_expand_pool(loom_lx *x, loom_graph_expr **value);
/* legalize_image.c: resize (op_image.c) with run-time scales or sizes (no attribute `size`), or
 * with antialias (one program per resized axis). */
loom_status loom_legal_expand_resize(loom_lx *x, loom_graph_expr **value);

/* Binding i of blk, an op call, through its record's expand hook: *expanded false when the op
 * has none or the hook leaves this form to the legalize hook (blk unchanged); else the added
 * bindings are spliced in before it (legalize_expand.c). */
loom_status loom_legalize_expand(loom_graph_module *m, loom_graph_block *blk, size_t i, bool *expanded);

#endif

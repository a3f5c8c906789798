/* gen_internal.h — helpers shared by the program generators (gen_*.c). Generated programs name
 * their dims d0, d1, ... (a0, ... for a second buffer), loop variables i<axis>, reduction
 * variables r<axis>. */
#ifndef LOOM_TENSORPROG_GEN_INTERNAL_H
#define LOOM_TENSORPROG_GEN_INTERNAL_H

#include <stddef.h>

#include "base/strbuf.h"
#include "tensorprog/tp_build.h"
#include "tensorprog/tp_gen.h"

/* Parses the generated text into `result`; a parse failure is a bug in the generator (INTERNAL). */
loom_status loom_tpg_finish(loom_arena *a, loom_sym_ctx *cx, loom_strbuf *sb, loom_tp_func **result);
/* Appends `expr` with each whole-word occurrence of names[i] replaced by (repl[i]). */
void loom_tpg_substitute(loom_strbuf *sb, const char *expr, const char *const *names, const char *const *repl, int n);
/* Starts a program in a fresh sb: "prim @name(X: Buffer[(d0, d1, ..), t]" (its first buffer X,
 * dims named d<k>); the caller appends the other parameters. */
void loom_tpg_open_x(loom_strbuf *sb, const char *name, int rank, loom_dtype t);
/* Appends "Buffer[(dims...), t]". */
void loom_tpg_buffer_type(loom_strbuf *sb, const char *const *dims, int rank, loom_dtype t);
/* Appends "X: Buffer[(a0, a1, ...), t]" with dims named a<k>. */
void loom_tpg_buffer_a(loom_strbuf *sb, const char *buf, int rank, loom_dtype t);
/* Opens one loop per listed axis: `for <var><axis> in 0..<dims[axis]> [parallel on the first] [reduce]`. */
void loom_tpg_open_loops(loom_strbuf *sb, const int *axes, int n, const char *var, const char *const *dims,
                         bool parallel_first, bool reduce);
void loom_tpg_close_loops(loom_strbuf *sb, int n);
/* Ends a parameter list with the result `Y: Buffer[(d0, ...), t]`, opens the loop nest over every
 * axis of Y (outermost parallel) and writes Y's index list "i0, i1, ..." into `yi`. */
void loom_tpg_open_output_nest(loom_strbuf *sb, int rank, loom_dtype t, char *yi, size_t yi_cap);
/* Closes `nloops` loops and the program. */
void loom_tpg_close_program(loom_strbuf *sb, int nloops);
/* The dim names "d0", "d1", ... */
const char *const *loom_tpg_dims_d(void);
loom_status loom_tpg_check_rank(int rank);
/* axes[k] = k for k < n. */
void loom_tpg_all_axes(int *axes, int n);
/* The dims of one broadcast input ("d3", "1" or "<prefix>3") and its load text `buf[...]`. */
void loom_tpg_bcast_input(const char *prefix, int r, int R, const loom_tp_bcast *m, char dims[][12], char *load,
                          size_t load_cap, const char *buf);
/* The identity element of a reduction as a literal of dtype t. */
void loom_tpg_reduce_init(loom_strbuf *sb, loom_tp_reduce_op op, loom_dtype t);
/* Index text "i0, .., var, .." of rank dims with axis `axis` replaced by `var`. */
void loom_tpg_index_with(char *out, size_t cap, int rank, int axis, const char *var);
/* The accumulation dtype for statistics of t (f64 for f64, else f32). */
loom_dtype loom_tpg_stat_type(loom_dtype t);
/* Index list "i0, i1, ..." of rank r. */
void loom_tpg_loop_indices(char *buf, size_t cap, int r);

/* ---- builder helpers (generators that build IR directly, tp_build.h) ---- */

/* The shape symbols d0 .. d<rank-1> (declared at their first use). */
void loom_tpg_b_dims_d(loom_tpb *b, int rank, const loom_sym_expr **dims);
/* Opens `for i<k> in 0..dims[k]` for k < rank (the first parallel) and sets idx[k] to the
 * index value of i<k>. */
void loom_tpg_b_nest(loom_tpb *b, int rank, const loom_sym_expr *const *dims, loom_tp_expr **idx);
/* Declares buffer `buf` of dtype t with dims a0 .. a<rank-1> (into dims when not NULL). */
loom_tp_buffer *loom_tpg_b_buffer_a(loom_tpb *b, const char *buf, int rank, loom_dtype t, const loom_sym_expr **dims);
/* Declares the result `Y: Buffer[(d0, ..), t]` and opens the loop nest over its axes
 * (loom_tpg_b_nest): iv[k] the loop variables (when not NULL), yi[k] their index values. */
loom_tp_buffer *loom_tpg_b_output_nest(loom_tpb *b, int rank, loom_dtype t, const loom_sym_expr **iv, loom_tp_expr **yi);
/* The let `name: i64 = i64(I[idx])` of an index read from buffer I (its reference). */
loom_tp_expr *loom_tpg_b_index_let(loom_tpb *b, const char *name, const loom_tp_buffer *I, loom_tp_expr *const *idx);
/* select(t < 0, t + extent, t): index t (a let's reference; copied for each use) with a
 * negative value counting from the end of an axis of `extent`. */
loom_tp_expr *loom_tpg_b_wrap_index(loom_tpb *b, const loom_tp_expr *t, const loom_sym_expr *extent);
/* The dims of a broadcast input of rank r against output rank R: d<j>, 1 or <prefix><j>. */
void loom_tpg_b_bcast_dims(loom_tpb *b, const char *prefix, int r, int R, const loom_tp_bcast *m,
                           const loom_sym_expr **dims);
/* The r indices of a broadcast input with those dims inside the output nest (oi: the output's
 * loop indices): i<d>, 0, or select(dim == 1, 0, i<d>). */
void loom_tpg_b_bcast_index(loom_tpb *b, const loom_sym_expr *const *dims, int r, int R, const loom_tp_bcast *m,
                            loom_tp_expr *const *oi, loom_tp_expr **idx);
/* Declares broadcast input `buf` of rank r against output rank R (its dims d<j>, 1 or
 * <prefix><j>, as loom_tpg_bcast_input spells them). */
loom_tp_buffer *loom_tpg_b_bcast_buffer(loom_tpb *b, const char *buf, const char *prefix, int r, int R,
                                        const loom_tp_bcast *m, loom_dtype t);
/* The load of a broadcast input inside the output nest (oi: the output's loop indices). */
loom_tp_expr *loom_tpg_b_bcast_load(loom_tpb *b, const loom_tp_buffer *buf, int R, const loom_tp_bcast *m,
                                    loom_tp_expr *const *oi);
/* The identity of a reduction as the value stored into a buffer of dtype t (the expression
 * the parser makes of loom_tpg_reduce_init's literal there). */
loom_tp_expr *loom_tpg_b_reduce_init(loom_tpb *b, loom_tp_reduce_op op, loom_dtype t);
/* Names "<var><k>" for k < LOOM_TP_GEN_MAX_RANK and var one of a b c d e f i j k p r s t w: loop variables
 * i0, r3, j1, dims d2, a0, ... */
const char *loom_tpg_var(char var, int k);

#endif

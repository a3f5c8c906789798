/* gen_internal.h — helpers shared by the program generators (gen_*.c), on top of the program
 * builder (tp_build.h). Generated programs name their dims d0, d1, ... (a0, ... for a second
 * buffer), loop variables i<axis>, reduction variables r<axis>. */
#ifndef LOOM_TENSORPROG_GEN_INTERNAL_H
#define LOOM_TENSORPROG_GEN_INTERNAL_H

#include <stddef.h>

#include "base/compiler.h"
#include "tensorprog/tp_build.h"
#include "tensorprog/tp_gen.h"

/* INVALID_ARGUMENT unless 0 <= rank <= LOOM_TP_GEN_MAX_RANK. */
loom_status loom_tpg_check_rank(int rank);
/* The accumulation dtype for statistics of t (f64 for f64, else f32). */
loom_dtype loom_tpg_stat_type(loom_dtype t);

/* The shape symbols d0 .. d<rank-1> (declared at their first use). */
void loom_tpg_dims_d(loom_tpb *b, int rank, const loom_sym_expr **dims);
/* Opens `for i<k> in 0..dims[k]` for k < rank (the first parallel) and sets idx[k] to the
 * index value of i<k>. */
void loom_tpg_nest(loom_tpb *b, int rank, const loom_sym_expr *const *dims, loom_tp_expr **idx);
/* Declares buffer `buf` of dtype t with dims a0 .. a<rank-1> (into dims when not NULL). */
loom_tp_buffer *loom_tpg_buffer_a(loom_tpb *b, const char *buf, int rank, loom_dtype t, const loom_sym_expr **dims);
/* Declares the result `Y: Buffer[(d0, ..), t]` and opens the loop nest over its axes
 * (loom_tpg_nest): iv[k] the loop variables (when not NULL), yi[k] their index values. */
loom_tp_buffer *loom_tpg_output_nest(loom_tpb *b, int rank, loom_dtype t, const loom_sym_expr **iv, loom_tp_expr **yi);
/* The let `name: i64 = i64(I[idx])` of an index read from buffer I (its reference). */
loom_tp_expr *loom_tpg_index_let(loom_tpb *b, const char *name, const loom_tp_buffer *I, loom_tp_expr *const *idx);
/* select(t < 0, t + extent, t): index t (a let's reference; copied for each use) with a
 * negative value counting from the end of an axis of `extent`. */
loom_tp_expr *loom_tpg_wrap_index(loom_tpb *b, const loom_tp_expr *t, const loom_sym_expr *extent);
/* The dims of a broadcast input of rank r against output rank R: d<j>, 1 or <prefix><j>. */
void loom_tpg_bcast_dims(loom_tpb *b, const char *prefix, int r, int R, const loom_tp_bcast *m,
                           const loom_sym_expr **dims);
/* The r indices of a broadcast input with those dims inside the output nest (oi: the output's
 * loop indices): i<d>, 0, or select(dim == 1, 0, i<d>). */
void loom_tpg_bcast_index(loom_tpb *b, const loom_sym_expr *const *dims, int r, int R, const loom_tp_bcast *m,
                            loom_tp_expr *const *oi, loom_tp_expr **idx);
/* Declares broadcast input `buf` of rank r against output rank R (its dims d<j>, 1 or
 * <prefix><j>). */
loom_tp_buffer *loom_tpg_bcast_buffer(loom_tpb *b, const char *buf, const char *prefix, int r, int R,
                                        const loom_tp_bcast *m, loom_dtype t);
/* The load of a broadcast input inside the output nest (oi: the output's loop indices). */
loom_tp_expr *loom_tpg_bcast_load(loom_tpb *b, const loom_tp_buffer *buf, int R, const loom_tp_bcast *m,
                                    loom_tp_expr *const *oi);
/* The identity of a reduction as the value stored into a buffer of dtype t (the expression
 * the parser makes of loom_tpg_reduce_init's literal there). */
loom_tp_expr *loom_tpg_reduce_init(loom_tpb *b, loom_tp_reduce_op op, loom_dtype t);
/* The f64 constant v (any NaN as the parser's `nanf64`). */
loom_tp_expr *loom_tpg_f64(loom_tpb *b, double v);
/* A let named by a printf format (names like "sc0", "t1_2"); its reference. */
loom_tp_expr *loom_tpg_letf(loom_tpb *b, loom_tp_expr *value, const char *fmt, ...) LOOM_PRINTF(3, 4);
/* The reference's cubic kernel weight of the f64 distance u (a let's reference, copied for each
 * use; already |distance|) with coefficient A (an f64 constant):
 *   select(u <= 1.0, ((A + 2.0) * u - (A + 3.0)) * u * u + 1.0,
 *          select(u < 2.0, ((A * u - 5.0 * A) * u + 8.0 * A) * u - 4.0 * A, 0.0)) */
loom_tp_expr *loom_tpg_cubic_weight(loom_tpb *b, const loom_tp_expr *u, double A);
/* The distance of cubic tap j (0..3) from fractional position q: q + 1.0, q, 1.0 - q, 2.0 - q. */
loom_tp_expr *loom_tpg_cubic_dist(loom_tpb *b, const loom_tp_expr *q, int j);
/* Copies (X non-NULL) or fills a row of `extent` elements: Y[yi.., yoff + u] = X[xi.., u*xstride + xoff]
 * | fill (yi, xi: the leading indices, the last one set here). In chunks of lanes (the last moved
 * back to end at the row's end: a few elements written twice with the same value), so that short
 * rows run as vectors (a strided X as lane mode's strided loads); x(u) = u*xstride + xoff:
 *   if extent >= 8 { for <tag>o in 0..(extent + 7) // 8 { for <tag>i in 0..8 vectorize {
 *     Y[.., yoff + min(8*<tag>o, extent - 8) + <tag>i] = X[.., x(min(..) + <tag>i)] } } }
 *   else { for <tag>s in 0..extent { Y[.., yoff + <tag>s] = X[.., x(<tag>s)] } }
 * A copy takes chunks of 32 (where they cover no more positions than chunks of 16), 16 (a value
 * computed on the way, a SiLU, wants independent chunks in flight), 8 or 4, a strided one 16, 8 or 4
 * (short rows element by element were slow: LLVM's masked vectors of a strided load are gathers,
 * and a unit row of 14 ran 8 lanes and 6 scalars). */
void loom_tpg_row_copy(loom_tpb *b, const loom_tp_buffer *Y, loom_tp_expr **yi, const loom_sym_expr *yoff, const loom_tp_buffer *X,
                       loom_tp_expr **xi, int64_t xstride, const loom_sym_expr *xoff, loom_dtype t, double fill,
                       const loom_sym_expr *extent, const char *tag);
/* conv_phases' work for one (n, c) plane (gen_conv_packed.c): X's plane at leading indices xl[0..1]
 * (X (.., .., h..), extents xd) padded by g's padding (`fill`: 0, or -inf for max pooling) and split
 * into its phase planes, Y's plane at yl[0..1] (Y (.., .., prod P_i, F)); the loops it opens are closed. */
void loom_tpg_conv_phase_plane(loom_tpb *b, const loom_tp_conv_packed *g, const loom_tp_buffer *X, const loom_tp_buffer *Y,
                               const loom_sym_expr *const *xd, loom_tp_expr *const *xl, loom_tp_expr *const *yl, loom_dtype t,
                               double fill);
/* A serial reduce loop `for var in 0..extent reduce {` (a walk whose steps depend on the ones
 * before: a running count, a heap); its index value. */
loom_tp_expr *loom_tpg_walk(loom_tpb *b, const char *var, const loom_sym_expr *extent);
/* buf[i] = buf[i] + 1 (an i64 buffer). */
void loom_tpg_increment(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *i);
/* Names "<var><k>" for k < LOOM_TP_GEN_MAX_RANK and var one of a b c d e f i j k p r s t w: loop variables
 * i0, r3, j1, dims d2, a0, ... */
const char *loom_tpg_var(char var, int k);

#endif

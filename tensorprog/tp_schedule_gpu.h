/* tp_schedule_gpu.h — default GPU schedule rules for tensor programs (targets/cuda).
 *
 *     loom_tp_gpu_params p = {.threads = 256};
 *     LOOM_PROPAGATE(loom_tp_schedule_gpu(&arena, cx, f, &p, &why));  // f changed in place
 *     loom_tp_gpu_launch l;
 *     LOOM_PROPAGATE(loom_tp_gpu_launch_of(cx, f, &l));  // grid = l.grid (over f's symbols), block = l.threads
 *
 * Every program gets a schedule, never a refusal; the result is ONE gpu_block loop holding the
 * whole body (one kernel launch), its thread loops inside:
 *   0. disjoint nests (schedule_gpu_nests.c): when the body is a sequence of perfect nests of
 *      spatial loops over stores (under outer spatial loops, or none) that load nothing any of
 *      them stores and store one buffer only in regions proven disjoint — a concat, a KV-cache
 *      append — all their iterations become one loop (nest k's at offsets after nest k-1's,
 *      chosen by an if-chain) split into blocks of `threads`: one thread per element;
 *   1. grid form: when the body is one loop nest whose outer loops are perfectly nested, not
 *      `reduce` and store at no index read from memory, those loops are fused into one and
 *      split into chunks of `threads` (split_ceil): the chunks are the blocks, the iterations
 *      of a chunk its threads — one thread per output element (elementwise, injective);
 *      1a. warp per row: when the fused loop's body (a row) holds loops — a softmax, a norm, a
 *      reduction's row — each row is one block of ONE warp (`for lane in 0..32 gpu_thread`)
 *      and the row's own loops (not nested in another; through ifs and sequences) in the
 *      lanes form of tp_lanes.h become `gpu_lanes`: spatial ones, and reductions whose Local
 *      accumulators are only updated as Q[c] = Q[c] OP e (combined across the lanes by
 *      shuffles; a sum kept in the output, as a generated mean keeps it, is first staged in a
 *      Local when the loop reads along the row: loom_tp_lanes_memory_acc); other loops run
 *      whole on every lane (correct, redundant), as does the code
 *      between the loops (stores too: the same value to the same place). Not taken when no
 *      row loop is in the lanes form, every row loop runs at most 16 iterations, or the code
 *      around the lanes loops stores a buffer it reads (loom_tp_lanes_row_conflict): then one
 *      thread per row (a matmul's output, short rows), `loop_threads` per block;
 *   2. fallback: anything else (nests in sequence that rule 0 refuses, a scatter, a reduction at the top)
 *      runs as written on one thread of one block: `for b in 0..1 gpu_block { for t in 0..1
 *      gpu_thread { body } }`. Correct, slow: `why` names the program so a later rule can take it.
 * Before either, CPU loop kinds (parallel, vectorize) become serial: they mean nothing on a GPU.
 * Each decision is one line in `why`. */
#ifndef LOOM_TENSORPROG_TP_SCHEDULE_GPU_H
#define LOOM_TENSORPROG_TP_SCHEDULE_GPU_H

#include "base/strbuf.h"
#include "tensorprog/tp_rewrite.h"

/* What the rules need to know of the device. */
typedef struct loom_tp_gpu_params {
  int threads; /* threads per block of the grid form (a power of two, 32..1024; 0: 256) */
  /* the same when each thread runs a loop (a row of a softmax, a norm, a reduction): fewer per
   * block spreads few long rows over more multiprocessors (0: `threads`) */
  int loop_threads;
} loom_tp_gpu_params;

/* The rules above, in place. */
loom_status loom_tp_schedule_gpu(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_tp_gpu_params *p,
                                 loom_strbuf *why);

/* How a scheduled program is launched: the grid and block sizes, from its shape symbols. */
typedef struct loom_tp_gpu_launch {
  const loom_sym_expr *grid; /* blocks: the extent of the top gpu_block loop (f's symbols only) */
  int64_t threads;           /* threads per block: the largest upper bound of a gpu_thread extent */
} loom_tp_gpu_launch;

/* Reads the launch of a program scheduled for the GPU (its body one gpu_block loop, possibly
 * after allocs and lets; every gpu_thread extent bounded by a constant). Refused (INVALID_ARGUMENT,
 * naming the program and what is missing) otherwise. */
loom_status loom_tp_gpu_launch_of(loom_sym_ctx *cx, const loom_tp_func *f, loom_tp_gpu_launch *out);

#endif

/* tp_lanes.h — when a loop's iterations can be dealt to the 32 lanes of a GPU warp
 * (`gpu_lanes`: lane L runs iterations L, L+32, ...), and the accumulators a `reduce` one
 * combines across the lanes after it.
 *
 * One source for the verifier (verify.c refuses a gpu_lanes loop not in this form), the GPU
 * schedule rule (schedule_gpu.c makes a row's loops gpu_lanes only in this form) and the
 * NVPTX code generator (targets/cpu/cg_gpu.c combines the accumulators found here).
 *
 * The form, for a loop L (the enclosing code runs on every lane with the same values):
 *   - a Local buffer allocated outside L ("outer Local": each lane has its own copy) is
 *     stored in L only by accumulator updates `Q[c] = Q[c] OP e` or `Q[c] = e OP Q[c]`, OP
 *     one of + * max min, c constant indices, Q's dtype an f16 / bf16 / f32 / f64 or an 8- to
 *     64-bit integer, one OP per element, and only when L is `reduce`; Q is read in L only
 *     by those updates (not in e, not elsewhere);
 *   - in a `reduce` L, every other store is to a buffer allocated inside L, or writes the
 *     iteration's own element: one of its indices is L's variable and every load of that
 *     buffer in L is at the same indices (softmax's `Y[r] = exp(..)` beside its sum);
 *   - in a spatial L (not reduce), stores to other buffers are the caller's to judge (the
 *     schedule rule takes only loops whose iterations are independent).
 * A `reduce` L then starts each accumulator at OP's identity on every lane, runs its share of
 * the iterations, combines the 32 partial values (butterfly shuffles: every lane ends with the
 * same total) and applies the total to the value the accumulator held before L. */
#ifndef LOOM_TENSORPROG_TP_LANES_H
#define LOOM_TENSORPROG_TP_LANES_H

#include "tensorprog/tp_ir.h"

enum { LOOM_TP_LANES_MAX_ACCS = 16 }; /* accumulator elements one loop may combine */

/* One accumulator element of a `reduce` gpu_lanes loop. */
typedef struct loom_tp_lanes_acc {
  const loom_tp_buffer *buf; /* an outer Local buffer */
  loom_tp_expr **idx;        /* its constant indices (from the first update seen) */
  int64_t offset;            /* the element's row-major offset */
  loom_tp_op op;             /* LOOM_TP_OP_ADD, _MUL, _MIN or _MAX */
} loom_tp_lanes_acc;

typedef struct loom_tp_lanes_form {
  loom_tp_lanes_acc accs[LOOM_TP_LANES_MAX_ACCS]; /* in the order first updated */
  size_t naccs;
  char why[240]; /* when not in the form: what is wrong, naming the buffer */
} loom_tp_lanes_form;

/* Is `loop` (a FOR) in the form above? Fills `out` (its accumulators, or `why` not). */
bool loom_tp_lanes_form_of(const loom_tp_stmt *loop, loom_tp_lanes_form *out);

/* A buffer (not Local) that the code of `row` (a warp's body) outside its gpu_lanes loops
 * both stores and loads, or NULL. That code runs on every lane, each at its own pace between
 * the warp syncs around the lanes loops: a lane could read what another lane already
 * rewrote (`Y[i] = Y[i] + 1` would add up to 32). Stores of values read nowhere there are
 * benign: every lane writes the same value. */
const loom_tp_buffer *loom_tp_lanes_row_conflict(const loom_tp_stmt *row);

/* The buffer (not Local) a `reduce` loop accumulates in memory — its first store at indices
 * free of the loop's variable (a generated mean: Y[i] = Y[i] + X[i, r]) — when the loop reads
 * along that variable (every other load using it has it alone as its last index: a row's
 * consecutive elements, not a matmul's column B[r, j], where a thread per output reads
 * coalesced across threads); else NULL. Staged in a Local (loom_tp_cache_write), such a loop
 * can take the lanes form. */
const loom_tp_buffer *loom_tp_lanes_memory_acc(const loom_tp_stmt *loop);

#endif

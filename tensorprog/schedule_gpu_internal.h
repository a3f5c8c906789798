/* schedule_gpu_internal.h — the GPU schedule rules' files share these (tp_schedule_gpu.h is the
 * interface). */
#ifndef LOOM_TP_SCHEDULE_GPU_INTERNAL_H
#define LOOM_TP_SCHEDULE_GPU_INTERNAL_H

#include "tensorprog/tp_schedule_gpu.h"

/* The one loop that is the whole of `s` (itself, or the single item of a sequence), or NULL. */
loom_tp_stmt *loom_tpg_sole_loop(loom_tp_stmt *s);
/* Can `loop`'s iterations be the threads of a grid (independent, not a scatter)? */
bool loom_tpg_spatial(const loom_tp_stmt *loop);

/* Rule 0 (schedule_gpu_nests.c): a body that is a sequence of independent loop nests with
 * disjoint stores (under outer spatial loops or none) becomes one grid of one thread per
 * iteration, `threads` per block; *done false (f unchanged) where it does not apply. */
loom_status loom_tpg_nests_grid(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, int threads, loom_strbuf *why, bool *done);

#endif

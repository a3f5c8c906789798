/* tp_schedule_cpu.h — default CPU schedule rules for tensor programs.
 *
 *     loom_strbuf why; loom_strbuf_init(&why, NULL);
 *     LOOM_PROPAGATE(loom_tp_schedule_cpu(&arena, cx, f, &why));   // f changed in place
 *     // why: one line per decision, e.g. "loop i: parallel (outermost, not a reduction)"
 *
 * Rules, applied to every top-level loop nest of the program:
 *   1. the outermost loop of a nest, when it is serial and not a reduction, becomes
 *      PARALLEL (rows of softmax / norms, output rows of a matmul);
 *   2. an innermost non-reduce loop whose statements only store, and whose variable
 *      appears in every access only as `+ v` of the LAST index (unit stride), becomes
 *      VECTORIZE; when that loop is also the parallel one (a 1-D nest), it is split by
 *      64 first: parallel outer, vectorized inner of 64 lanes, symbolic tail;
 *   3. anything else stays as it is, and `why` says why (e.g. a reduction innermost).
 * Matmul register tiling (the 6x32 tile of bench/kernels) is NOT produced here yet: it
 * needs loop distribution of the init store out of the j loop, which tp_rewrite.h does
 * not offer; a matmul gets rule 1 (and says so). Rules never make a program incorrect:
 * every change is a primitive of tp_rewrite.h, which refuses what it cannot prove. */
#ifndef LOOM_TENSORPROG_TP_SCHEDULE_CPU_H
#define LOOM_TENSORPROG_TP_SCHEDULE_CPU_H

#include "base/strbuf.h"
#include "tensorprog/tp_rewrite.h"

loom_status loom_tp_schedule_cpu(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_strbuf *why);

/* The register-tiled f32 matmul the CPU rules are meant to produce (6x32 tile, packed B
 * panels, symbolic tails), as program text: benchmarked by bench-kernels and checked against
 * the interpreter by the cpu suite until a rule generates it. */
const char *loom_tp_cpu_matmul_tiled_text(void);

#endif

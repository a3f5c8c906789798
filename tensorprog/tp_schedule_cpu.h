/* tp_schedule_cpu.h — default CPU schedule rules for tensor programs.
 *
 *     loom_strbuf why; loom_strbuf_init(&why, NULL);
 *     LOOM_PROPAGATE(loom_tp_schedule_cpu(&arena, cx, f, &why));   // f changed in place
 *     // why: one line per decision, e.g. "loop i: parallel (outermost, not a reduction)"
 *
 * Rules, applied to every top-level loop nest of the program:
 *   0'. a convolution over packed weights (loom_tp_gen_conv_packed's nest) is register-tiled by
 *      loom_tp_schedule_conv (below);
 *   0. a matmul-shaped nest (init store + `C = C + a * b` reduction, f32: matmul, batched
 *      matmul, linear) is register-tiled: column panels of two vector registers (32 with
 *      AVX-512, 16 with AVX2; then 8 (4 with SSE), 1 for the tail) in parallel (fewer than 8
 *      panels, a constant count: their row tiles in parallel instead), B panels packed (cache_read), 6-row tiles whose accumulators are a
 *      Local kept in registers by lane mode (cache_write + distribute + reorder), a 1-row
 *      tail; plus a variant for few rows (dot products for linear's W, unpacked 1-row tiles
 *      for matmul). Built on a copy; when a primitive refuses, the nest keeps rules 1-3;
 *   0b. a transposing copy (the innermost loop writes with unit stride, reads across rows) is
 *      strip-mined by 8 along the input's last axis, the strip innermost, so that each read is
 *      a vector and the 8 output rows written stay in L1; a plain copy gets square tiles of one
 *      vector a side instead, transposed in registers (loom_tp_schedule_transpose);
 *   1. the outermost loop of a nest, when it is serial and not a reduction, becomes
 *      PARALLEL (rows of softmax / norms, output rows of a matmul); with three or more perfectly
 *      nested loops the outer two are fused into it first (a batch of one still splits);
 *   2a. an innermost loop whose body is `if C { stores } else { stores }` to one buffer, C's terms
 *      that read the loop variable each bounding it from one side (a constant pad), is split into
 *      the runs before, inside and after that range (loom_tp_schedule_pad_rows), then rule 2;
 *   2. an innermost non-reduce loop whose statements only store, and whose variable
 *      appears in every access only as `+ v` of the LAST index (unit stride), becomes
 *      VECTORIZE; when that loop is also the parallel one (a 1-D nest), it is split by
 *      64 first: parallel outer, vectorized inner of 64 lanes, symbolic tail;
 *   3. anything else stays as it is, and `why` says why (e.g. a reduction innermost).
 * Rules never make a program incorrect: every change is a primitive of tp_rewrite.h,
 * which refuses what it cannot prove. docs/codegen.md describes the matmul form. */
#ifndef LOOM_TENSORPROG_TP_SCHEDULE_CPU_H
#define LOOM_TENSORPROG_TP_SCHEDULE_CPU_H

#include "base/strbuf.h"
#include "tensorprog/tp_rewrite.h"

/* What the rules need to know of the machine. */
typedef struct loom_tp_cpu_params {
  int vector_bytes; /* width of the widest vector registers: 64 (AVX-512), 32 (AVX2), 16 */
  bool splits_512;  /* 512-bit arithmetic runs as two 256-bit halves (Zen 4): 256-bit FMAs at the same FLOP rate */
} loom_tp_cpu_params;

/* The rules for the machine `p` describes. */
loom_status loom_tp_schedule_cpu_for(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, const loom_tp_cpu_params *p,
                                     loom_strbuf *why);
/* The rules for a machine with AVX-512 (vector_bytes 64). */
loom_status loom_tp_schedule_cpu(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_strbuf *why);

/* Rule 0 for a convolution over packed weights (schedule_conv.c; the nest of
 * loom_tp_gen_conv_packed): register tiles of the weight block's rows by one to three vectors of
 * output positions, read where they lie. *done: the nest at *slot matched and was replaced. */
loom_status loom_tp_schedule_conv(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot, const loom_tp_cpu_params *p,
                                  loom_strbuf *why, bool *done);

/* Rule 0 for a matmul-shaped nest (schedule_matmul.c): its batch loops that B does not use
 * fused with its rows, then register tiles and the few-rows variant. *done: the nest at *slot
 * was tiled; when not, *slot may still hold the nest with its rows fused. */
loom_status loom_tp_schedule_matmul(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                    const loom_tp_cpu_params *p, loom_strbuf *why, bool *done);

/* Rule 0b for a transposing copy (schedule_transpose.c): the innermost loop writes with unit
 * stride and reads some input across its rows; the loop indexing that input's last axis goes to
 * the top, in strips of 8 run innermost (a plain copy: square tiles of one vector of p's a side),
 * and a nest of the rows left. *slot may become the sequence of the two nests. */
loom_status loom_tp_schedule_transpose(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt **slot,
                                       const loom_tp_cpu_params *p, loom_strbuf *why);

/* Rule 2a (schedule_pad.c): the innermost serial `loop` whose body is `if C { stores } else
 * { stores }` to one buffer, C a conjunction whose terms either do not read the loop variable or
 * bound it from one side, becomes `if C_out { before; inside; after } else { all }` (loops of the
 * else branch, the then branch, the else branch; no C_out: the three runs alone), replacing it in
 * f; *out the replacement, or NULL when the loop is not of that form (left unchanged). */
loom_status loom_tp_schedule_pad_rows(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, loom_tp_stmt *loop,
                                      loom_strbuf *why, loom_tp_stmt **out);

/* Whether `var` appears in an access's indices only as `x + var` in the last one (unit
 * stride; loads inside the indices checked the same way). */
bool loom_tp_cpu_access_unit(loom_sym_ctx *cx, const loom_tp_buffer *b, loom_tp_expr *const *idx,
                             const loom_sym_expr *var);

/* A hand-written register-tiled f32 matmul (6x32 tile, packed B panels, symbolic tails), as
 * program text: the form rule 0 was modelled on, kept as a benchmark reference and a
 * differential test. */
const char *loom_tp_cpu_matmul_tiled_text(void);

#endif

/* tp_fuse.h — merging a fused group of tensor-program calls into ONE program.
 *
 * A group (chosen by the graph-level fusion pass) is a sequence of calls; each
 * call passes group buffers to a program's buffer parameters. Group buffers have
 * shapes in the group's symbols (the caller's: `b`, `s`, `b*s`, ...). The merge:
 *
 *   1. solves each program's own symbols against the group shapes it is given
 *      (bare vars bind, affine `k*v + c` is solved exactly, every axis is then
 *      PROVEN equal — an unprovable match is an error, never an assumption);
 *   2. copies each body with its symbols substituted and its buffers redirected;
 *   3. makes every intermediate (a group buffer that is not a parameter) a Local
 *      allocation of the merged program;
 *   4. (loom_tp_inline_locals) inlines intermediates defined by one elementwise or
 *      injective store into their readers, so they disappear.
 *
 * The merged program's parameters are one i64 scalar per group symbol (in first
 * appearance order in the group's shapes, then in the calls' scalar arguments), then
 * the group's parameter buffers in order. Symbols are passed explicitly because products like `b*s` cannot be
 * bound from shapes alone. */
#ifndef LOOM_TENSORPROG_TP_FUSE_H
#define LOOM_TENSORPROG_TP_FUSE_H

#include "tensorprog/tp_ir.h"

typedef struct loom_tp_group_buf {
  const char *name;                 /* its name in the merged program */
  loom_dtype dtype;
  int ndim;
  const loom_sym_expr *const *dims; /* shape in the group's symbols */
  bool is_param;                    /* input or output of the group (else an intermediate) */
} loom_tp_group_buf;

typedef struct loom_tp_group_call {
  const loom_tp_func *prog;
  /* Per parameter of prog: for a buffer parameter, the index of the group buffer passed;
   * for a scalar parameter, ignored (see scalar_args). */
  const size_t *buf_args;
  /* Per parameter of prog: for a scalar parameter, its value in the group's symbols;
   * NULL entries (or a NULL array) for buffer parameters. */
  const loom_sym_expr *const *scalar_args;
} loom_tp_group_call;

loom_status loom_tp_merge(loom_arena *a, loom_sym_ctx *cx, const char *name, const loom_tp_group_buf *bufs,
                          size_t nbufs, const loom_tp_group_call *calls, size_t ncalls, loom_tp_func **out);

/* Inlines each Local buffer of `f` whose only writer is a top-level perfect loop nest
 * storing `T[l1, ..., lk] = e` (k = ndim, not reduce loops) into every load of it,
 * provided every load indexes it with symbolic indices; the nest and the alloc are
 * removed. `out_count` (optional) gets the number inlined. */
loom_status loom_tp_inline_locals(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, size_t *out_count);

/* Moves an elementwise epilogue into the output loop of the matmul it reads, when `f` (what
 * loom_tp_merge and loom_tp_inline_locals made of a matmul and its one reader) is
 *     alloc C: Local[..]
 *     for l.. { C[l..] = init; for r.. reduce { C[l..] = C[l..] + ... } }   (l.. distinct
 *                                                              non-reduce loop variables)
 *     for k.. { Y[k..] = e }   (a perfect nest over Y's axes; e reads C only at [k..])
 * with Y a parameter of provably C's dims; of C's dtype:
 *     for l.. { Y[l..] = init; for r.. reduce { Y[l..] = Y[l..] + ... }; Y[l..] = e[k := l, C := Y] }
 * (C disappears); of another dtype (an int32 matmul's requantization to u8):
 *     alloc C: Local[..]
 *     for l.. { C[l..] = init; for r.. reduce { C[l..] = C[l..] + ... }; Y[l..] = e[k := l] }
 * (the CPU matmul rule keeps C's tile in registers; the stores to C then die and C goes:
 * loom_tp_drop_dead_locals). The epilogue runs once per element after its reduction.
 * The store form: when the statement writing C never reads it (a rows program: depthwise_rows,
 * pool_rows), each of its stores `C[i..] = v` (symbolic indices) becomes `Y[i..] = e[k := i,
 * C[k] := v]` and C goes; a second store of one element (an overlapping chunk) computes e again.
 * *out_done is false (f unchanged) for any other form. */
loom_status loom_tp_fuse_epilogue(loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f, bool *out_done);

#endif

/* ptx.h — tensor programs scheduled for the GPU -> PTX through LLVM's NVPTX back end.
 *
 *     loom_strbuf ptx; loom_strbuf_init(&ptx, NULL);
 *     LOOM_PROPAGATE(loom_cuda_emit_ptx("sm_80", cx, fs, n, &ptx));   // one PTX module, n kernels
 *
 * THE KERNEL ABI (what a launcher passes, in cuLaunchKernel's parameter array):
 *     .entry loom_kernel_<program>(.u64 buf0, .., .u64 bufK, .s64 sym0, .., .s64 symJ, .u64 err)
 *   bufK  device pointer of the K-th BUFFER parameter, in declaration order (as the CPU kernel's
 *         buffers[K]: dense row-major, element 0);
 *   symJ  value of f->syms[J] (as the CPU kernel's symbols[J]);
 *   err   device pointer to an i32 the kernel sets to 1 (a run-time error: integer division by
 *         zero, a device-heap allocation failure) or 2 (an index read from data out of range);
 *         the host reads it after the launch.
 * Launch: grid (loom_tp_gpu_launch.grid evaluated from the symbols, 1-D), block
 * (loom_tp_gpu_launch.threads, 1-D), no dynamic shared memory (Shared allocs are static).
 *
 * The expressions and statements are the CPU code generator's (targets/cpu/cg_*.c with
 * loom_cpu_options.nvptx): one lowering of every operator, dtype and index form. Math
 * functions without an NVPTX instruction (exp, log, sin, pow, erf, ... in f32 and f64) become
 * calls to libdevice's __nv_* functions, linked from the toolkit's libdevice.10.bc. */
#ifndef LOOM_TARGETS_CUDA_PTX_H
#define LOOM_TARGETS_CUDA_PTX_H

#include <stddef.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "symbolic/sym.h"
#include "tensorprog/tp_ir.h"

/* The default GPU architecture (what `--target cuda` means). */
#define LOOM_CUDA_DEFAULT_ARCH "sm_80"

/* PTX text of the programs `fs` (each scheduled for the GPU: tp_schedule_gpu.h) for `arch`
 * ("sm_80", "sm_90"; NULL: the default), appended to `out`. */
loom_status loom_cuda_emit_ptx(const char *arch, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                               loom_strbuf *out);

/* The libdevice bitcode used (the toolkit's, or $LOOM_LIBDEVICE). */
const char *loom_cuda_libdevice_path(void);

#endif

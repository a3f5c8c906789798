/* driver.h — the CUDA driver API, loaded at run time (dlopen of libcuda.so.1), and the launch
 * logic of Loom's GPU kernels (the ABI of targets/cuda/ptx.h). Run side: in libloomrt, no
 * compiler header, no link-time dependency on CUDA (a machine without the NVIDIA driver gets a
 * clear UNAVAILABLE status, never a loader error).
 *
 *     loom_cuda_driver *d;
 *     LOOM_PROPAGATE(loom_cuda_driver_open(NULL, &d));          // libcuda.so.1, cuInit, device 0, a context
 *     loom_cuda_module *m;
 *     LOOM_PROPAGATE(loom_cuda_module_load(d, ptx_text, &m));   // the driver JITs the PTX for the GPU
 *     void *fn;
 *     LOOM_PROPAGATE(loom_cuda_kernel_get(d, m, "loom_kernel_add", &fn));
 *     loom_cuda_launch_dims dims;
 *     LOOM_PROPAGATE(loom_cuda_launch_dims_of("add", blocks, threads, &dims));
 *     LOOM_PROPAGATE(loom_cuda_launch(d, fn, &dims, bufs, nbufs, syms, nsyms));  // synchronous, err word checked
 *     loom_cuda_module_unload(d, m); loom_cuda_driver_close(d);
 *
 * The CUDA device of vm/device.h is built on this (device_cuda.h). */
#ifndef LOOM_TARGETS_CUDA_DRIVER_H
#define LOOM_TARGETS_CUDA_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct loom_cuda_driver loom_cuda_driver;
typedef struct loom_cuda_module loom_cuda_module;

/* Opens the driver library `lib` (NULL: $LOOM_CUDA_DRIVER, else "libcuda.so.1"), initialises
 * it and makes a context on device 0. UNAVAILABLE, saying what is missing (the library, a
 * symbol, a device), when there is no usable GPU. */
LOOM_MUST_USE loom_status loom_cuda_driver_open(const char *lib, loom_cuda_driver **out);
void loom_cuda_driver_close(loom_cuda_driver *d);

/* Loads PTX text (NUL-terminated) into the context; the driver's JIT log names a failure. */
LOOM_MUST_USE loom_status loom_cuda_module_load(loom_cuda_driver *d, const char *ptx, loom_cuda_module **out);
void loom_cuda_module_unload(loom_cuda_driver *d, loom_cuda_module *m);
/* The kernel `name` of a loaded module (a CUfunction). */
LOOM_MUST_USE loom_status loom_cuda_kernel_get(loom_cuda_driver *d, loom_cuda_module *m, const char *name, void **out);

/* Device memory: n bytes (n 0 gives a valid 1-byte block), and the copies at the boundary. */
LOOM_MUST_USE loom_status loom_cuda_mem_alloc(loom_cuda_driver *d, size_t n, uint64_t *out_ptr);
void loom_cuda_mem_free(loom_cuda_driver *d, uint64_t ptr);
LOOM_MUST_USE loom_status loom_cuda_copy_to_device(loom_cuda_driver *d, uint64_t dst, const void *src, size_t n);
LOOM_MUST_USE loom_status loom_cuda_copy_to_host(loom_cuda_driver *d, void *dst, uint64_t src, size_t n);

/* Device to device, zeroing (in order with launches on the context's stream). */
LOOM_MUST_USE loom_status loom_cuda_copy_device(loom_cuda_driver *d, uint64_t dst, uint64_t src, size_t n);
LOOM_MUST_USE loom_status loom_cuda_zero(loom_cuda_driver *d, uint64_t dst, size_t n);
/* Makes the driver's context current on the calling thread (every thread that uses `d` first). */
void loom_cuda_make_current(loom_cuda_driver *d);
/* The profile's timer (cuEvent*, on the context's stream; one caller at a time): mark, issue
 * work, then elapsed waits for that work and returns its device time in ns. mark is false and
 * elapsed 0 where the driver has no events or they fail. */
bool loom_cuda_timer_mark(loom_cuda_driver *d);
uint64_t loom_cuda_timer_elapsed_ns(loom_cuda_driver *d);
/* Waits for everything issued to the context. */
LOOM_MUST_USE loom_status loom_cuda_sync(loom_cuda_driver *d);

/* ---- launch logic (no GPU needed: unit-tested everywhere) ------------------------------ */

/* A launch's grid and block (1-D: what the GPU schedule rules make). */
typedef struct loom_cuda_launch_dims {
  uint32_t grid_x;  /* blocks (0: nothing to run, the launch is skipped) */
  uint32_t block_x; /* threads per block */
} loom_cuda_launch_dims;

/* The dims of kernel `name` from its launch (tensorprog/tp_schedule_gpu.h: `blocks` the grid
 * extent evaluated from the call's symbols, `threads` the block size). INVALID_ARGUMENT naming
 * the kernel and the value: blocks < 0 or above 2^31 - 1 (CUDA's grid.x limit), threads outside
 * 1..1024. */
LOOM_MUST_USE loom_status loom_cuda_launch_dims_of(const char *name, int64_t blocks, int64_t threads,
                                                   loom_cuda_launch_dims *out);

/* The kernel parameter array cuLaunchKernel takes (ptx.h's ABI): out[k] points to bufs[k]
 * (k < nbufs), out[nbufs + j] to syms[j], out[nbufs + nsyms] to *err (the device address of
 * the error word). `out` has room for nbufs + nsyms + 1 entries. */
void loom_cuda_kernel_params(const uint64_t *bufs, size_t nbufs, const int64_t *syms, size_t nsyms, const uint64_t *err,
                             void **out);

/* Launches `fn` with dims (a grid of 0 runs nothing) on the context's stream without waiting;
 * `err` is the device address of the error word the kernel may set. */
LOOM_MUST_USE loom_status loom_cuda_launch_async(loom_cuda_driver *d, void *fn, const char *name,
                                                 const loom_cuda_launch_dims *dims, const uint64_t *bufs, size_t nbufs,
                                                 const int64_t *syms, size_t nsyms, uint64_t err);
/* The status an error word read back after launches means (0: LOOM_OK), `what` naming them. */
LOOM_MUST_USE loom_status loom_cuda_error_word(const char *what, int32_t word);

/* Launches `fn` with dims (a grid of 0 runs nothing) on the context's stream, waits, and reads
 * the error word: 1 or 2 (ptx.h) is INTERNAL / OUT_OF_RANGE naming the kernel. */
LOOM_MUST_USE loom_status loom_cuda_launch(loom_cuda_driver *d, void *fn, const char *name,
                                           const loom_cuda_launch_dims *dims, const uint64_t *bufs, size_t nbufs,
                                           const int64_t *syms, size_t nsyms);

#endif

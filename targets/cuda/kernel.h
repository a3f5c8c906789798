/* kernel.h — how a CUDA kernel is described to the CUDA device (device_cuda.h): the handle the
 * VM holds in its kernel table for a kernel that runs on the GPU. Run side: plain data, no CUDA
 * header; the compiler fills it (target_cuda.c, in process) and so will an artifact.
 *
 *     static const char *const names[] = {"n"};
 *     static const loom_cuda_kernel k = {LOOM_CUDA_KERNEL_MAGIC, 256, "loom_kernel_add", "floordiv(n + 255, 256)",
 *                                        3, 1, names, &module};
 *     loom_kernel_fn fn = loom_cuda_kernel_fn(&k);   // what the VM's kernel table holds
 *
 * A launch (device_cuda.c) evaluates `grid` (vm/symeval.h's text) at the call's symbols, named
 * `sym_names[0 .. nsyms)` in the order the kernel takes them, runs `entry` of the module's PTX
 * with a block of `threads`, and passes the kernel ABI of ptx.h (buffers, symbols, error word). */
#ifndef LOOM_TARGETS_CUDA_KERNEL_H
#define LOOM_TARGETS_CUDA_KERNEL_H

#include <stdint.h>

#include "vm/kernel_abi.h"

#define LOOM_CUDA_KERNEL_MAGIC 0x4B445543u /* "CUDK" little-endian */

/* One PTX module: the text the driver JIT-compiles, loaded once per device (device_cuda.c keeps
 * the loaded module by this struct's address). */
typedef struct loom_cuda_module_src {
  const char *ptx; /* NUL-terminated PTX text */
  const char *arch; /* the sm_NN it was made for (for messages) */
} loom_cuda_module_src;

typedef struct loom_cuda_kernel {
  uint32_t magic;    /* LOOM_CUDA_KERNEL_MAGIC: a launch refuses anything else */
  uint32_t threads;  /* threads per block (1..1024) */
  const char *entry; /* the .entry in the module: loom_kernel_<program> */
  const char *grid;  /* blocks, as symeval text over sym_names ("0" when nothing runs) */
  uint32_t nbufs;    /* buffer parameters */
  uint32_t nsyms;    /* symbol parameters */
  const char *const *sym_names; /* nsyms names, the kernel's symbol order */
  const loom_cuda_module_src *module;
} loom_cuda_kernel;

/* A kernel description as the VM's kernel-table entry (the CUDA device's launch casts it back). */
static inline loom_kernel_fn loom_cuda_kernel_fn(const loom_cuda_kernel *k) {
  union {
    const loom_cuda_kernel *k;
    loom_kernel_fn fn;
  } u = {.k = k};
  return u.fn;
}
static inline const loom_cuda_kernel *loom_cuda_kernel_of(loom_kernel_fn fn) {
  union {
    loom_kernel_fn fn;
    const loom_cuda_kernel *k;
  } u = {.fn = fn};
  return u.k;
}

#endif

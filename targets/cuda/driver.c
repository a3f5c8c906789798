/* driver.c — the CUDA driver API through dlopen, and the launch logic (see driver.h). The
 * few driver types are declared here (CUresult an int, handles opaque pointers, device
 * pointers 64-bit), so this file needs no toolkit header and builds everywhere. */
#include "targets/cuda/driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int cu_result; /* CUresult: 0 is CUDA_SUCCESS */

/* The driver entry points Loom uses, by their versioned symbol names (cuda.h maps the API
 * names to these; every one returns a CUresult). X(field, symbol, parameter types) */
#define LOOM_CUDA_SYMBOLS(X)                                                                              \
  X(init, "cuInit", (unsigned))                                                                           \
  X(device_get, "cuDeviceGet", (int *, int))                                                              \
  X(device_count, "cuDeviceGetCount", (int *))                                                            \
  X(ctx_retain, "cuDevicePrimaryCtxRetain", (void **, int))                                               \
  X(ctx_release, "cuDevicePrimaryCtxRelease_v2", (int))                                                   \
  X(ctx_set, "cuCtxSetCurrent", (void *))                                                                 \
  X(module_load, "cuModuleLoadDataEx", (void **, const void *, unsigned, int *, void **))                 \
  X(module_unload, "cuModuleUnload", (void *))                                                            \
  X(module_function, "cuModuleGetFunction", (void **, void *, const char *))                              \
  X(mem_alloc, "cuMemAlloc_v2", (uint64_t *, size_t))                                                     \
  X(mem_free, "cuMemFree_v2", (uint64_t))                                                                 \
  X(htod, "cuMemcpyHtoD_v2", (uint64_t, const void *, size_t))                                            \
  X(dtoh, "cuMemcpyDtoH_v2", (void *, uint64_t, size_t))                                                  \
  X(dtod, "cuMemcpyDtoD_v2", (uint64_t, uint64_t, size_t))                                                \
  X(memset8, "cuMemsetD8_v2", (uint64_t, unsigned char, size_t))                                          \
  X(launch, "cuLaunchKernel",                                                                             \
    (void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **)) \
  X(sync, "cuCtxSynchronize", (void))                                                                     \
  X(error_string, "cuGetErrorString", (cu_result, const char **))

/* Entry points used when present (a stand-in driver may lack them): the profile's timers. */
#define LOOM_CUDA_OPTIONAL_SYMBOLS(X)                                                                     \
  X(event_create, "cuEventCreate", (void **, unsigned))                                                   \
  X(event_record, "cuEventRecord", (void *, void *))                                                      \
  X(event_sync, "cuEventSynchronize", (void *))                                                           \
  X(event_elapsed, "cuEventElapsedTime", (float *, void *, void *))                                       \
  X(event_destroy, "cuEventDestroy_v2", (void *))

struct loom_cuda_driver {
  void *lib; /* the dlopen handle */
  void *ctx; /* the primary context of device 0: the one the CUDA runtime (cuBLAS, PyTorch) uses too */
  int dev;   /* CUdevice 0 */
#define FIELD(f, sym, args) cu_result(*f) args; /* sym */
  LOOM_CUDA_SYMBOLS(FIELD)
  LOOM_CUDA_OPTIONAL_SYMBOLS(FIELD)
#undef FIELD
  void *ev[2]; /* the timer's events (CUevent), made at its first mark */
  bool marked; /* ev[0] recorded by the last mark */
};

struct loom_cuda_module {
  void *mod; /* CUmodule */
};

/* A failed driver call as a status: the call, the driver's name for the code. */
static loom_status cu_error(loom_cuda_driver *d, cu_result r, const char *what) {
  const char *s = NULL;
  if (d && d->error_string) d->error_string(r, &s);
  return LOOM_ERROR(INTERNAL, "CUDA driver: %s failed: %s (CUresult %d)", what, s ? s : "unknown error", r);
}

loom_status loom_cuda_driver_open(const char *lib, loom_cuda_driver **out) {
  *out = NULL;
  if (!lib) lib = getenv("LOOM_CUDA_DRIVER");
  if (!lib || !*lib) lib = "libcuda.so.1";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return LOOM_ERROR(UNAVAILABLE, "the CUDA driver '%s' cannot be loaded (%s): this machine has no NVIDIA driver, "
                      "so CUDA devices are unavailable", lib, e ? e : "?");
  }
  loom_cuda_driver *d = calloc(1, sizeof *d);
  if (!d) {
    dlclose(h);
    return LOOM_OOM();
  }
  d->lib = h;
#define RESOLVE(f, sym, args)                                                                                  \
  if (!(*(void **)&d->f = dlsym(h, sym))) {                                                                   \
    loom_cuda_driver_close(d);                                                                                \
    return LOOM_ERROR(UNAVAILABLE, "the CUDA driver '%s' lacks %s (a driver older than CUDA 11?)", lib, sym); \
  }
  LOOM_CUDA_SYMBOLS(RESOLVE)
#undef RESOLVE
#define RESOLVE_OPTIONAL(f, sym, args) *(void **)&d->f = dlsym(h, sym);
  LOOM_CUDA_OPTIONAL_SYMBOLS(RESOLVE_OPTIONAL)
#undef RESOLVE_OPTIONAL
  cu_result r = d->init(0);
  int n = 0;
  if (r == 0) r = d->device_count(&n);
  if (r != 0 || n == 0) {
    loom_status st = r != 0 ? cu_error(d, r, "cuInit") : LOOM_ERROR(UNAVAILABLE, "the CUDA driver '%s' sees no device", lib);
    if (r != 0) st = loom_status_annotate(st, __FILE__, __LINE__, "no usable CUDA device");
    loom_cuda_driver_close(d);
    return st;
  }
  if ((r = d->device_get(&d->dev, 0)) || (r = d->ctx_retain(&d->ctx, d->dev)) || (r = d->ctx_set(d->ctx))) {
    loom_status st = cu_error(d, r, "making a context on device 0");
    loom_cuda_driver_close(d);
    return st;
  }
  *out = d;
  return LOOM_OK;
}

void loom_cuda_driver_close(loom_cuda_driver *d) {
  if (!d) return;
  for (int i = 0; i < 2; i++)
    if (d->ev[i]) d->event_destroy(d->ev[i]);
  if (d->ctx && d->ctx_release) d->ctx_release(d->dev);
  if (d->lib) dlclose(d->lib);
  free(d);
}

loom_status loom_cuda_module_load(loom_cuda_driver *d, const char *ptx, loom_cuda_module **out) {
  *out = NULL;
  loom_cuda_module *m = calloc(1, sizeof *m);
  if (!m) return LOOM_OOM();
  /* the JIT's error log (CU_JIT_ERROR_LOG_BUFFER 5, _SIZE_BYTES 6) */
  char log[4096] = "";
  int opts[2] = {5, 6};
  void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
  d->ctx_set(d->ctx);
  cu_result r = d->module_load(&m->mod, ptx, 2, opts, vals);
  if (r) {
    free(m);
    loom_status st = cu_error(d, r, "loading PTX (cuModuleLoadDataEx)");
    return log[0] ? loom_status_annotate(st, __FILE__, __LINE__, "JIT log: %s", log) : st;
  }
  *out = m;
  return LOOM_OK;
}

void loom_cuda_module_unload(loom_cuda_driver *d, loom_cuda_module *m) {
  if (!m) return;
  if (m->mod) d->module_unload(m->mod);
  free(m);
}

loom_status loom_cuda_kernel_get(loom_cuda_driver *d, loom_cuda_module *m, const char *name, void **out) {
  cu_result r = d->module_function(out, m->mod, name);
  return r ? cu_error(d, r, name) : LOOM_OK;
}

loom_status loom_cuda_mem_alloc(loom_cuda_driver *d, size_t n, uint64_t *out_ptr) {
  cu_result r = d->mem_alloc(out_ptr, n ? n : 1);
  return r ? cu_error(d, r, "cuMemAlloc") : LOOM_OK;
}

void loom_cuda_mem_free(loom_cuda_driver *d, uint64_t ptr) {
  if (ptr) d->mem_free(ptr);
}

loom_status loom_cuda_copy_to_device(loom_cuda_driver *d, uint64_t dst, const void *src, size_t n) {
  cu_result r = n ? d->htod(dst, src, n) : 0;
  return r ? cu_error(d, r, "cuMemcpyHtoD") : LOOM_OK;
}

loom_status loom_cuda_copy_to_host(loom_cuda_driver *d, void *dst, uint64_t src, size_t n) {
  cu_result r = n ? d->dtoh(dst, src, n) : 0;
  return r ? cu_error(d, r, "cuMemcpyDtoH") : LOOM_OK;
}

/* ---- launch logic ------------------------------------------------------------------------- */

loom_status loom_cuda_launch_dims_of(const char *name, int64_t blocks, int64_t threads, loom_cuda_launch_dims *out) {
  if (blocks < 0 || blocks > INT32_MAX)
    return LOOM_ERROR(INVALID_ARGUMENT, "kernel %s: a grid of %lld blocks (CUDA allows 0 to 2147483647 in x)", name,
                      (long long)blocks);
  if (threads < 1 || threads > 1024)
    return LOOM_ERROR(INVALID_ARGUMENT, "kernel %s: a block of %lld threads (CUDA allows 1 to 1024)", name,
                      (long long)threads);
  out->grid_x = (uint32_t)blocks;
  out->block_x = (uint32_t)threads;
  return LOOM_OK;
}

void loom_cuda_kernel_params(const uint64_t *bufs, size_t nbufs, const int64_t *syms, size_t nsyms, const uint64_t *err,
                             void **out) {
  for (size_t k = 0; k < nbufs; k++) out[k] = (void *)&bufs[k];
  for (size_t j = 0; j < nsyms; j++) out[nbufs + j] = (void *)&syms[j];
  out[nbufs + nsyms] = (void *)err;
}

loom_status loom_cuda_copy_device(loom_cuda_driver *d, uint64_t dst, uint64_t src, size_t n) {
  cu_result r = n ? d->dtod(dst, src, n) : 0;
  return r ? cu_error(d, r, "cuMemcpyDtoD") : LOOM_OK;
}

loom_status loom_cuda_zero(loom_cuda_driver *d, uint64_t dst, size_t n) {
  cu_result r = n ? d->memset8(dst, 0, n) : 0;
  return r ? cu_error(d, r, "cuMemsetD8") : LOOM_OK;
}

void loom_cuda_make_current(loom_cuda_driver *d) { d->ctx_set(d->ctx); }

bool loom_cuda_timer_mark(loom_cuda_driver *d) {
  if (!d->event_create || !d->event_record || !d->event_sync || !d->event_elapsed || !d->event_destroy) return false;
  for (int i = 0; i < 2; i++)
    if (!d->ev[i] && d->event_create(&d->ev[i], 0)) { /* CU_EVENT_DEFAULT: timed */
      d->ev[i] = NULL;
      return false;
    }
  d->marked = d->event_record(d->ev[0], NULL) == 0;
  return d->marked;
}

uint64_t loom_cuda_timer_elapsed_ns(loom_cuda_driver *d) {
  float ms = 0;
  bool marked = d->marked;
  d->marked = false;
  if (!marked || !d->ev[1] || d->event_record(d->ev[1], NULL) || d->event_sync(d->ev[1]) ||
      d->event_elapsed(&ms, d->ev[0], d->ev[1]) || !(ms > 0))
    return 0;
  return (uint64_t)((double)ms * 1e6 + 0.5);
}

loom_status loom_cuda_sync(loom_cuda_driver *d) {
  cu_result r = d->sync();
  return r ? cu_error(d, r, "cuCtxSynchronize") : LOOM_OK;
}

loom_status loom_cuda_launch_async(loom_cuda_driver *d, void *fn, const char *name, const loom_cuda_launch_dims *dims,
                                   const uint64_t *bufs, size_t nbufs, const int64_t *syms, size_t nsyms, uint64_t err) {
  if (dims->grid_x == 0) return LOOM_OK;
  void *small[64];
  size_t np = nbufs + nsyms + 1;
  void **params = np <= 64 ? small : malloc(np * sizeof *params);
  if (!params) return LOOM_OOM();
  loom_cuda_kernel_params(bufs, nbufs, syms, nsyms, &err, params);
  cu_result r = d->launch(fn, dims->grid_x, 1, 1, dims->block_x, 1, 1, 0, NULL, params, NULL);
  if (params != small) free(params);
  return r ? cu_error(d, r, name) : LOOM_OK;
}

loom_status loom_cuda_error_word(const char *name, int32_t word) {
  if (word == 1) return LOOM_ERROR(INTERNAL, "%s failed on the GPU: integer division by zero or a device-heap allocation", name);
  if (word == 2) return LOOM_ERROR(OUT_OF_RANGE, "%s failed on the GPU: an index read from data is out of range", name);
  if (word) return LOOM_ERROR(INTERNAL, "%s failed on the GPU (error word %d)", name, word);
  return LOOM_OK;
}

loom_status loom_cuda_launch(loom_cuda_driver *d, void *fn, const char *name, const loom_cuda_launch_dims *dims,
                             const uint64_t *bufs, size_t nbufs, const int64_t *syms, size_t nsyms) {
  if (dims->grid_x == 0) return LOOM_OK;
  uint64_t err = 0;
  int32_t zero = 0, word = 0;
  loom_status st = loom_cuda_mem_alloc(d, sizeof(int32_t), &err);
  if (!st) st = loom_cuda_copy_to_device(d, err, &zero, sizeof zero);
  if (!st) st = loom_cuda_launch_async(d, fn, name, dims, bufs, nbufs, syms, nsyms, err);
  if (!st) st = loom_cuda_sync(d);
  if (!st) st = loom_cuda_copy_to_host(d, &word, err, sizeof word);
  if (!st && word) {
    char what[300];
    snprintf(what, sizeof what, "kernel %s", name);
    st = loom_cuda_error_word(what, word);
  }
  loom_cuda_mem_free(d, err);
  return st;
}

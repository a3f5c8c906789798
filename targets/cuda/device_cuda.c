/* device_cuda.c — the CUDA device (device_cuda.h) on the driver of driver.h. */
#include "targets/cuda/device_cuda.h"

#include <dlpack/dlpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "targets/cuda/driver.h"
#include "targets/cuda/kernel.h"
#include "vm/symeval.h"

/* A module loaded on this device, by the address of its source. */
typedef struct loaded_module {
  const loom_cuda_module_src *src;
  loom_cuda_module *m;
  struct loaded_module *next;
} loaded_module;

/* A kernel's CUfunction, by the address of its description (open addressing). */
typedef struct fn_slot {
  const loom_cuda_kernel *k;
  void *fn;
} fn_slot;

typedef struct cuda_state {
  loom_cuda_driver *drv;
  uint64_t err;         /* the device's error word (an int32) */
  pthread_mutex_t mu;   /* guards what follows */
  loaded_module *mods;
  fn_slot *slots;       /* cap entries, a power of two, at most half full */
  size_t cap, n;
  loom_status pending;  /* a failed copy or launch, returned by the next sync */
  bool sync_each;       /* $LOOM_CUDA_SYNC=1: wait after every launch (per-kernel times in --profile) */
} cuda_state;

static cuda_state *state(loom_device *d) { return d->impl; }
static uint64_t dptr(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Keeps the first failure of a call that cannot return one (copy, zero) for the next sync. */
static void keep(loom_device *d, loom_status st) {
  if (!st) return;
  cuda_state *s = state(d);
  pthread_mutex_lock(&s->mu);
  if (!s->pending) s->pending = st;
  else loom_status_free(st);
  pthread_mutex_unlock(&s->mu);
}

static void *cu_alloc(loom_device *d, size_t size, size_t align) {
  (void)align; /* cuMemAlloc's blocks are aligned to 256 bytes at least */
  cuda_state *s = state(d);
  loom_cuda_make_current(s->drv);
  uint64_t p = 0;
  loom_status st = loom_cuda_mem_alloc(s->drv, size, &p);
  if (st) {
    loom_status_free(st); /* NULL: the pool reports the allocation that failed */
    return NULL;
  }
  return (void *)(uintptr_t)p;
}

static void cu_free(loom_device *d, void *p, size_t size) {
  (void)size;
  loom_cuda_make_current(state(d)->drv);
  loom_cuda_mem_free(state(d)->drv, dptr(p));
}

static void cu_copy(loom_device *d, void *dst, const void *src, size_t n) {
  loom_cuda_make_current(state(d)->drv);
  keep(d, loom_cuda_copy_device(state(d)->drv, dptr(dst), dptr(src), n));
}

static void cu_zero(loom_device *d, void *dst, size_t n) {
  loom_cuda_make_current(state(d)->drv);
  keep(d, loom_cuda_zero(state(d)->drv, dptr(dst), n));
}

static loom_status cu_from_host(loom_device *d, void *dst, const void *host_src, size_t n) {
  loom_cuda_make_current(state(d)->drv);
  return loom_cuda_copy_to_device(state(d)->drv, dptr(dst), host_src, n);
}

static loom_status cu_to_host(loom_device *d, void *host_dst, const void *src, size_t n) {
  loom_cuda_make_current(state(d)->drv);
  return loom_cuda_copy_to_host(state(d)->drv, host_dst, dptr(src), n);
}

/* A CUDA artifact is a shared object like the CPU's (vm/device.h's loader), whose kernel table
 * points at the kernels' descriptions (kernel.h) instead of host code; `launch` checks each. */
static loom_status cu_image_load(loom_device *d, const char *path, const loom_vm_artifact_pubkey *trust,
                                 void **out_image, const loom_artifact_desc **out_desc) {
  (void)d;
  return loom_vm_so_load(path, trust, true, out_image, out_desc);
}
static void cu_image_unload(loom_device *d, void *image) {
  (void)d;
  loom_vm_so_unload(image);
}
static void cu_image_data(loom_device *d, void *image, const uint8_t **out_data, uint64_t *out_len) {
  (void)d;
  loom_vm_so_data(image, out_data, out_len);
}
static loom_kernel_fn cu_kernel_find(loom_device *d, void *image, const char *name) {
  (void)d;
  return loom_vm_so_kernel(image, name);
}

static size_t slot_of(const fn_slot *slots, size_t cap, const loom_cuda_kernel *k) {
  size_t i = ((uintptr_t)k >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1);
  while (slots[i].k && slots[i].k != k) i = (i + 1) & (cap - 1);
  return i;
}

/* k's CUfunction: its module loaded at the first launch of any of its kernels. Under s->mu. */
static loom_status function_of(cuda_state *s, const loom_cuda_kernel *k, void **out) {
  if (s->cap) {
    size_t i = slot_of(s->slots, s->cap, k);
    if (s->slots[i].k) {
      *out = s->slots[i].fn;
      return LOOM_OK;
    }
  }
  loaded_module *lm = s->mods;
  while (lm && lm->src != k->module) lm = lm->next;
  if (!lm) {
    lm = calloc(1, sizeof *lm);
    if (!lm) return LOOM_OOM();
    loom_status st = loom_cuda_module_load(s->drv, k->module->ptx, &lm->m);
    if (st) {
      free(lm);
      return loom_status_annotate(st, __FILE__, __LINE__, "loading the PTX module made for %s",
                                  k->module->arch ? k->module->arch : "?");
    }
    lm->src = k->module;
    lm->next = s->mods;
    s->mods = lm;
  }
  void *fn;
  LOOM_PROPAGATE(loom_cuda_kernel_get(s->drv, lm->m, k->entry, &fn));
  if (2 * (s->n + 1) > s->cap) { /* grow to keep the table at most half full */
    size_t cap = s->cap ? 2 * s->cap : 64;
    fn_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return LOOM_OOM();
    for (size_t i = 0; i < s->cap; i++)
      if (s->slots[i].k) slots[slot_of(slots, cap, s->slots[i].k)] = s->slots[i];
    free(s->slots);
    s->slots = slots, s->cap = cap;
  }
  size_t i = slot_of(s->slots, s->cap, k);
  s->slots[i] = (fn_slot){k, fn};
  s->n++;
  *out = fn;
  return LOOM_OK;
}

static loom_status launch(loom_device *d, const loom_cuda_kernel *k, void *const *buffers, const int64_t *symbols) {
  cuda_state *s = state(d);
  if (!k || k->magic != LOOM_CUDA_KERNEL_MAGIC)
    return LOOM_ERROR(FAILED_PRECONDITION, "the CUDA device was given a kernel that is not a CUDA kernel (code "
                                           "compiled for another target)");
  int64_t blocks = 0;
  LOOM_RETURN_IF_ERROR(loom_vm_symeval(k->grid, k->sym_names, symbols, k->nsyms, &blocks), "%s: its grid '%s'",
                       k->entry, k->grid);
  loom_cuda_launch_dims dims;
  LOOM_PROPAGATE(loom_cuda_launch_dims_of(k->entry, blocks, k->threads, &dims));
  if (!dims.grid_x) return LOOM_OK;
  void *fn;
  pthread_mutex_lock(&s->mu);
  loom_status st = function_of(s, k, &fn);
  pthread_mutex_unlock(&s->mu);
  LOOM_PROPAGATE(st);
  uint64_t small[32];
  uint64_t *bufs = k->nbufs <= 32 ? small : malloc(k->nbufs * sizeof *bufs);
  if (!bufs) return LOOM_OOM();
  for (uint32_t i = 0; i < k->nbufs; i++) bufs[i] = dptr(buffers[i]);
  st = loom_cuda_launch_async(s->drv, fn, k->entry, &dims, bufs, k->nbufs, symbols, k->nsyms, s->err);
  if (bufs != small) free(bufs);
  if (!st && s->sync_each) st = loom_cuda_sync(s->drv);
  return st;
}

static int32_t cu_launch(loom_device *d, loom_kernel_fn fn, void *const *buffers, const int64_t *symbols,
                         const loom_kernel_ctx *ctx) {
  loom_cuda_make_current(state(d)->drv);
  loom_status st = launch(d, loom_cuda_kernel_of(fn), buffers, symbols);
  if (!st) return 0;
  ctx->set_error(ctx, loom_status_message(st));
  loom_status_free(st);
  return 1;
}

/* --profile: each kernel's and each cuBLAS call's own time on the GPU (an event pair around
 * it, waited for), not the host's launch time. */
static void cu_prof_mark(loom_device *d) {
  loom_cuda_make_current(state(d)->drv);
  loom_cuda_timer_mark(state(d)->drv);
}

static uint64_t cu_prof_elapsed(loom_device *d) { return loom_cuda_timer_elapsed_ns(state(d)->drv); }

static loom_status cu_sync(loom_device *d) {
  cuda_state *s = state(d);
  loom_cuda_make_current(s->drv);
  loom_status st = loom_cuda_sync(s->drv);
  int32_t word = 0;
  if (!st) st = loom_cuda_copy_to_host(s->drv, &word, s->err, sizeof word);
  if (!st && word) {
    int32_t zero = 0;
    st = loom_cuda_error_word("a kernel of this call", word);
    loom_status_free(loom_cuda_copy_to_device(s->drv, s->err, &zero, sizeof zero));
  }
  pthread_mutex_lock(&s->mu);
  loom_status pending = s->pending;
  s->pending = NULL;
  pthread_mutex_unlock(&s->mu);
  if (st) {
    loom_status_free(pending);
    return st;
  }
  return pending;
}

/* GPU kernels do not use the host's parallel-for: one thread runs the body. */
static int32_t cu_serial_for(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}

static void cu_destroy(loom_device *d) {
  cuda_state *s = state(d);
  if (!s) return;
  loom_cuda_make_current(s->drv);
  for (loaded_module *m = s->mods, *next; m; m = next) {
    next = m->next;
    loom_cuda_module_unload(s->drv, m->m);
    free(m);
  }
  loom_cuda_mem_free(s->drv, s->err);
  loom_status_free(s->pending);
  free(s->slots);
  pthread_mutex_destroy(&s->mu);
  loom_cuda_driver_close(s->drv);
  free(s);
}

static const loom_device_vtable cuda_vtable = {
    .name = "cuda",
    .host = false,
    .alloc = cu_alloc,
    .free = cu_free,
    .copy = cu_copy,
    .zero = cu_zero,
    .copy_from_host = cu_from_host,
    .copy_to_host = cu_to_host,
    .image_load = cu_image_load,
    .image_unload = cu_image_unload,
    .image_data = cu_image_data,
    .kernel_find = cu_kernel_find,
    .launch = cu_launch,
    .sync = cu_sync,
    .prof_mark = cu_prof_mark,
    .prof_elapsed = cu_prof_elapsed,
    .parallel_for = cu_serial_for,
    .destroy = cu_destroy,
};

loom_status loom_device_cuda_create(loom_allocator *alloc, const char *driver_lib, loom_device **out) {
  *out = NULL;
  cuda_state *s = calloc(1, sizeof *s);
  if (!s) return LOOM_OOM();
  pthread_mutex_init(&s->mu, NULL);
  const char *sync_env = getenv("LOOM_CUDA_SYNC");
  s->sync_each = sync_env && !strcmp(sync_env, "1");
  loom_status st = loom_cuda_driver_open(driver_lib, &s->drv);
  int32_t zero = 0;
  if (!st) st = loom_cuda_mem_alloc(s->drv, sizeof zero, &s->err);
  if (!st) st = loom_cuda_copy_to_device(s->drv, s->err, &zero, sizeof zero);
  if (!st) st = loom_device_create(alloc, &cuda_vtable, s, kDLCUDA, 0, out);
  if (st) {
    if (s->drv) {
      loom_cuda_mem_free(s->drv, s->err);
      loom_cuda_driver_close(s->drv);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
  }
  return st;
}

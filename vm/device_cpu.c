/* device_cpu.c — the CPU (host) device of vm/device.h: host memory, AOT shared objects as
 * kernel images, kernels called directly, the thread pool's parallel-for. */
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <string.h>

#include "vm/device.h"
#include "vm/threadpool.h"

static void *cpu_alloc(loom_device *d, size_t size, size_t align) {
  return loom_alloc_aligned(d->alloc, size ? size : 1, align);
}
static void cpu_free(loom_device *d, void *p, size_t size) { loom_free(d->alloc, p, size ? size : 1); }
static void cpu_copy(loom_device *d, void *dst, const void *src, size_t n) {
  (void)d;
  if (n) memcpy(dst, src, n);
}
static void cpu_zero(loom_device *d, void *dst, size_t n) {
  (void)d;
  if (n) memset(dst, 0, n);
}
/* Host and device memory are the same memory. */
static loom_status cpu_copy_host(loom_device *d, void *dst, const void *src, size_t n) {
  cpu_copy(d, dst, src, n);
  return LOOM_OK;
}

/* A kernel image of the CPU is an AOT artifact: a shared object exporting loom_artifact_v1
 * (kernel_abi.h). The handle is the dlopen handle; its artifact is looked up again when
 * needed (dlsym is cheap next to loading). */
static loom_status cpu_image_load(loom_device *d, const char *path, void **out_image,
                                  const loom_artifact_desc **out_desc) {
  (void)d;
  *out_image = NULL;
  *out_desc = NULL;
  char buf[4096];
  /* dlopen searches the library path for names without a slash */
  snprintf(buf, sizeof buf, "%s%s", strchr(path, '/') ? "" : "./", path);
  void *dl = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
  if (!dl) return LOOM_ERROR(NOT_FOUND, "cannot load artifact '%s': %s", path, dlerror());
  const loom_artifact_desc *a = dlsym(dl, LOOM_ARTIFACT_SYMBOL);
  loom_status st = LOOM_OK;
  if (!a)
    st = LOOM_ERROR(NOT_FOUND, "'%s' is a shared object without the symbol %s: not a Loom artifact", path,
                    LOOM_ARTIFACT_SYMBOL);
  else if (a->magic != LOOM_ARTIFACT_MAGIC && a->magic != LOOM_ARTIFACT_MAGIC2)
    st = LOOM_ERROR(DATA_LOSS, "'%s': %s has a bad magic number", path, LOOM_ARTIFACT_SYMBOL);
  else if (a->abi_version != LOOM_KERNEL_ABI_VERSION)
    st = LOOM_ERROR(DATA_LOSS, "'%s': kernels were built for kernel ABI %u, this runtime has %u", path, a->abi_version,
                    LOOM_KERNEL_ABI_VERSION);
  if (st) {
    dlclose(dl);
    return st;
  }
  *out_image = dl;
  *out_desc = a;
  return LOOM_OK;
}

static void cpu_image_unload(loom_device *d, void *image) {
  (void)d;
  if (image) dlclose(image);
}

static loom_kernel_fn cpu_kernel_find(loom_device *d, void *image, const char *name) {
  (void)d;
  const loom_artifact_desc *a = image ? dlsym(image, LOOM_ARTIFACT_SYMBOL) : NULL;
  if (!a) return NULL;
  for (uint32_t i = 0; i < a->nkernels; i++)
    if (a->kernels[i].name && !strcmp(a->kernels[i].name, name)) return a->kernels[i].fn;
  return NULL;
}

static int32_t cpu_launch(loom_device *d, loom_kernel_fn fn, void *const *buffers, const int64_t *symbols,
                          const loom_kernel_ctx *ctx) {
  (void)d;
  return fn(buffers, symbols, ctx);
}

/* Kernels have returned when launch does: nothing is in flight. */
static loom_status cpu_sync(loom_device *d) {
  (void)d;
  return LOOM_OK;
}

static const loom_device_vtable cpu_vtable = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .copy_from_host = cpu_copy_host,
    .copy_to_host = cpu_copy_host,
    .image_load = cpu_image_load,
    .image_unload = cpu_image_unload,
    .kernel_find = cpu_kernel_find,
    .launch = cpu_launch,
    .sync = cpu_sync,
    .parallel_for = loom_cpu_pool_parallel_for,
    .destroy = NULL,
};

loom_status loom_device_cpu_create(loom_allocator *alloc, loom_device **out) {
  return loom_device_create(alloc, &cpu_vtable, NULL, kDLCPU, 0, out);
}

/* device_cpu.c — the CPU (host) device of vm/device.h: host memory, AOT shared objects as
 * kernel images, kernels called directly, the thread pool's parallel-for. */
#include <dlfcn.h>
#include <dlpack/dlpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
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

/* A path naming open descriptor `fd` that no earlier call returned: "/proc/self/" and
 * "fd/N" with a process-wide count written between them as "./" (bit 1) and "/" (bit 0)
 * tokens. dlopen treats a name it has loaded before as that library without opening it,
 * and descriptor numbers are reused, so "/proc/self/fd/N" alone could return an artifact
 * loaded earlier through the same number. */
static void fd_path(int fd, char *buf, size_t n) {
  static _Atomic uint64_t count;
  uint64_t c = count++;
  size_t at = (size_t)snprintf(buf, n, "/proc/self/");
  for (; c && at + 3 < n; c >>= 1) at += (size_t)snprintf(buf + at, n - at, "%s", c & 1 ? "./" : "/");
  snprintf(buf + at, n - at, "fd/%d", fd);
}

/* A kernel image of the CPU is an AOT artifact: a shared object exporting loom_artifact_v1
 * (kernel_abi.h). It is opened once; the open file is checked (vm/artifact.h: nothing of it
 * runs before the check passes) and then dlopen'ed through /proc/self/fd, so the bytes
 * checked are the bytes loaded even if `path` is replaced meanwhile. The handle is the
 * dlopen handle; its artifact is looked up again when needed (dlsym is cheap next to
 * loading). */
/* A loaded artifact: the shared object and its mapped DATA region. */
typedef struct cpu_image {
  void *dl;            /* dlopen handle */
  const uint8_t *data; /* the DATA region (vm/artifact.h), or NULL */
  uint64_t data_len;   /* its size */
} cpu_image;

void loom_vm_so_unload(void *image) {
  cpu_image *im = image;
  if (!im) return;
  if (im->dl) dlclose(im->dl);
  loom_vm_artifact_unmap_data(im->data, im->data_len);
  free(im);
}

static void cpu_image_unload(loom_device *d, void *image) {
  (void)d;
  loom_vm_so_unload(image);
}

loom_status loom_vm_so_load(const char *path, const loom_vm_artifact_pubkey *trust, bool device_code, void **out_image,
                            const loom_artifact_desc **out_desc) {
  *out_image = NULL;
  *out_desc = NULL;
  int fd;
  uint64_t size;
  loom_vm_artifact_info info;
  LOOM_PROPAGATE(loom_file_open_regular(path, "artifact", LOOM_FILE_LIMIT_ARTIFACT, &fd, &size));
  cpu_image *im = calloc(1, sizeof *im);
  loom_status st = im ? loom_vm_artifact_check_fd(fd, path, trust, &info) : LOOM_OOM();
  /* the weights: mapped and checked before any of the artifact's code is loaded */
  if (!st) st = loom_vm_artifact_map_data(fd, path, &info, trust != NULL, &im->data);
  if (st) {
    close(fd);
    free(im);
    return st;
  }
  im->data_len = im->data ? info.data_size : 0;
  char buf[256];
  fd_path(fd, buf, sizeof buf);
  im->dl = dlopen(buf, RTLD_NOW | RTLD_LOCAL);
  if (!im->dl && access("/proc/self/fd", F_OK) != 0) {
    /* no /proc: load by name (dlopen searches the library path for names without a slash) */
    char name[4096];
    snprintf(name, sizeof name, "%s%s", strchr(path, '/') ? "" : "./", path);
    im->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  }
  close(fd);
  const loom_artifact_desc *a = NULL;
  if (!im->dl) st = LOOM_ERROR(NOT_FOUND, "cannot load artifact '%s': %s", path, dlerror());
  else if (!(a = dlsym(im->dl, LOOM_ARTIFACT_SYMBOL)))
    st = LOOM_ERROR(NOT_FOUND, "'%s' is a shared object without the symbol %s: not a Loom artifact", path,
                    LOOM_ARTIFACT_SYMBOL);
  else if (a->magic == LOOM_ARTIFACT_MAGIC_DEVICE && !device_code)
    st = LOOM_ERROR(INVALID_ARGUMENT, "'%s' holds GPU kernels (compiled with --target cuda): open it on the cuda device "
                    "(loom-run --device cuda)", path);
  else if (device_code && a->magic != LOOM_ARTIFACT_MAGIC_DEVICE)
    st = LOOM_ERROR(INVALID_ARGUMENT, "'%s' holds CPU kernels: compile it with --target cuda to run it on a GPU", path);
  else if (a->magic != LOOM_ARTIFACT_MAGIC && a->magic != LOOM_ARTIFACT_MAGIC2 && a->magic != LOOM_ARTIFACT_MAGIC_DEVICE)
    st = LOOM_ERROR(DATA_LOSS, "'%s': %s has a bad magic number", path, LOOM_ARTIFACT_SYMBOL);
  else if (a->abi_version != LOOM_KERNEL_ABI_VERSION)
    st = LOOM_ERROR(DATA_LOSS, "'%s': kernels were built for kernel ABI %u, this runtime has %u", path, a->abi_version,
                    LOOM_KERNEL_ABI_VERSION);
  else if (a->exec_size != info.exec_size)
    st = LOOM_ERROR(DATA_LOSS, "'%s': %s holds an executable of %llu bytes, the trailer records %llu", path,
                    LOOM_ARTIFACT_SYMBOL, (unsigned long long)a->exec_size, (unsigned long long)info.exec_size);
  if (st) {
    loom_vm_so_unload(im);
    return st;
  }
  *out_image = im;
  *out_desc = a;
  return LOOM_OK;
}

static loom_status cpu_image_load(loom_device *d, const char *path, const loom_vm_artifact_pubkey *trust,
                                  void **out_image, const loom_artifact_desc **out_desc) {
  (void)d;
  return loom_vm_so_load(path, trust, false, out_image, out_desc);
}

static void cpu_image_data(loom_device *d, void *image, const uint8_t **out_data, uint64_t *out_len) {
  (void)d;
  loom_vm_so_data(image, out_data, out_len);
}

void loom_vm_so_data(void *image, const uint8_t **out_data, uint64_t *out_len) {
  const cpu_image *im = image;
  *out_data = im ? im->data : NULL;
  *out_len = im ? im->data_len : 0;
}

static loom_kernel_fn cpu_kernel_find(loom_device *d, void *image, const char *name) {
  (void)d;
  return loom_vm_so_kernel(image, name);
}

loom_kernel_fn loom_vm_so_kernel(void *image, const char *name) {
  const cpu_image *im = image;
  const loom_artifact_desc *a = im && im->dl ? dlsym(im->dl, LOOM_ARTIFACT_SYMBOL) : NULL;
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
    .host = true,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .copy_from_host = cpu_copy_host,
    .copy_to_host = cpu_copy_host,
    .image_load = cpu_image_load,
    .image_unload = cpu_image_unload,
    .image_data = cpu_image_data,
    .kernel_find = cpu_kernel_find,
    .launch = cpu_launch,
    .sync = cpu_sync,
    .parallel_for = loom_cpu_pool_parallel_for,
    .destroy = NULL,
};

loom_status loom_device_cpu_create(loom_allocator *alloc, loom_device **out) {
  return loom_device_create(alloc, &cpu_vtable, NULL, kDLCPU, 0, out);
}

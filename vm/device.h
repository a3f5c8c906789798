/* device.h — the device interface of the runtime (after IREE's HAL device): memory, kernel
 * images, launches, synchronisation, as a table of functions.
 *
 *     loom_device *cpu;
 *     LOOM_PROPAGATE(loom_device_cpu_create(NULL, &cpu));        // the host device (device_cpu.c)
 *     void *img; const loom_artifact_desc *a;
 *     LOOM_PROPAGATE(cpu->vt->image_load(cpu, "model.so", NULL, &img, &a));
 *     loom_kernel_fn k = cpu->vt->kernel_find(cpu, img, "add");
 *     int32_t rc = cpu->vt->launch(cpu, k, buffers, symbols, &ctx);
 *     LOOM_PROPAGATE(cpu->vt->sync(cpu));
 *     cpu->vt->image_unload(cpu, img); loom_device_release(cpu);
 *
 * vm/ uses a device only through this table. The CPU device (vm/device_cpu.c) is built in:
 * it is the host, the VM's default and where constants, DLPack tensors and loom-run's
 * inputs live. Other devices (targets/cuda/device_cuda.h) implement the table in their own
 * folder and are created by the runtime's top layer (src/runtime/), never included by vm/.
 *
 * Storage pooling (loom_storage_alloc, vm/object.c) is generic: released blocks go back
 * to a per-size-class free list of their device, whatever the device.
 *
 * Threads: a device is shared by every call of a runtime, so its reference count is atomic
 * and its pool and statistics are guarded by `mu`; every vtable entry may be called from
 * several threads at once (the CPU's are: memory, copies and launches touch no shared
 * state, and its parallel_for is the thread pool's, which takes concurrent loops). */
#ifndef LOOM_VM_DEVICE_H
#define LOOM_VM_DEVICE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/status.h"
#include "vm/artifact.h"
#include "vm/kernel_abi.h"

typedef struct loom_device loom_device;
typedef struct loom_storage loom_storage;

/* What a device implements. Every entry is set (a device without kernel images of its
 * own returns UNIMPLEMENTED from image_load). */
typedef struct loom_device_vtable {
  const char *name; /* "cpu" */
  /* The host itself: its memory is the CPU's (the VM reads and writes tensor data in place)
   * and its kernels are host functions (CALLK calls them directly). A device that is not the
   * host gets every tensor byte the VM needs through copy_to_host / copy_from_host and its
   * kernels through `launch`; externs are called directly with its pointers (their provider
   * must be made for that device: libcall's cuBLAS built-ins for cuda). */
  bool host;

  /* ---- memory ---- */
  /* Raw device memory: `size` bytes aligned to `align`, or NULL. */
  void *(*alloc)(loom_device *dev, size_t size, size_t align);
  void (*free)(loom_device *dev, void *ptr, size_t size);
  /* Copies n bytes between two buffers of this device. */
  void (*copy)(loom_device *dev, void *dst, const void *src, size_t n);
  /* Sets n bytes to zero. */
  void (*zero)(loom_device *dev, void *dst, size_t n);
  /* Host memory -> device buffer, and back (synchronous: the bytes are there on return). */
  LOOM_MUST_USE loom_status (*copy_from_host)(loom_device *dev, void *dst, const void *host_src, size_t n);
  LOOM_MUST_USE loom_status (*copy_to_host)(loom_device *dev, void *host_dst, const void *src, size_t n);

  /* ---- kernels ---- */
  /* Loads a kernel image from `path` (CPU: an AOT shared object exporting loom_artifact_v1,
   * checked by vm/artifact.h BEFORE it is loaded: trailer, size, ELF headers, content hash,
   * and the signature when `trust` is not NULL; then its magic and kernel ABI version).
   * *out_image is the device's handle (freed by image_unload), *out_desc the artifact it
   * carries (the executable, the kernel table, the externs' signatures), valid while the
   * image is loaded. */
  LOOM_MUST_USE loom_status (*image_load)(loom_device *dev, const char *path, const loom_vm_artifact_pubkey *trust,
                                          void **out_image, const loom_artifact_desc **out_desc);
  void (*image_unload)(loom_device *dev, void *image);
  /* The image's DATA region (the weights an artifact stores apart from its executable,
   * vm/artifact.h: mapped and checked by image_load), valid while the image is loaded; NULL
   * and 0 when the executable holds its constants itself. */
  void (*image_data)(loom_device *dev, void *image, const uint8_t **out_data, uint64_t *out_len);
  /* The kernel `name` of a loaded image, or NULL. */
  loom_kernel_fn (*kernel_find)(loom_device *dev, void *image, const char *name);
  /* Runs one kernel through the kernel ABI and returns its code. The VM's CALLK calls a
   * CPU kernel directly (the CPU's launch is exactly that call, so the hot path keeps one
   * indirect call); a device whose kernels are not host functions routes CALLK here. */
  int32_t (*launch)(loom_device *dev, loom_kernel_fn fn, void *const *buffers, const int64_t *symbols,
                    const loom_kernel_ctx *ctx);
  /* Waits until every copy and launch issued to the device has finished (the VM calls it
   * at the end of each call). */
  LOOM_MUST_USE loom_status (*sync)(loom_device *dev);
  /* Optional (NULL on the host, where the VM's clock is the kernel's time): the device's own
   * time of one kernel or extern for the profile (--profile). prof_mark notes the point in the
   * device's queue before the call is issued; prof_elapsed waits for what was issued since and
   * returns its device time in ns (0: not measured; the VM keeps its host time). */
  void (*prof_mark)(loom_device *dev);
  uint64_t (*prof_elapsed)(loom_device *dev);
  /* The parallel-for a kernel's ctx carries when the VM has a pool (kernel_abi.h;
   * CPU: loom_cpu_pool_parallel_for of vm/threadpool.h, `pool` a loom_cpu_pool *). */
  int32_t (*parallel_for)(void *pool, int64_t n, loom_parallel_body body, void *arg);
  /* Frees the device's own state (dev->impl) when the last reference goes; may be NULL. */
  void (*destroy)(loom_device *dev);
} loom_device_vtable;

#define LOOM_DEVICE_POOL_CLASSES 48 /* size classes 2^6 .. 2^53 bytes */
/* A request whose class has no free block takes one from the next LOOM_DEVICE_POOL_BORROW classes
 * (up to 2^4 = 16x its size) before allocating: with shapes that change from call to call, a
 * smaller call then reuses the pages a larger one already faulted in instead of mapping fresh ones. */
#define LOOM_DEVICE_POOL_BORROW 4

struct loom_device {
  const loom_device_vtable *vt; /* the implementation */
  void *impl;                   /* the implementation's state, or NULL (the CPU has none) */
  loom_allocator *alloc;        /* host memory for objects */
  int32_t dl_type;              /* DLDeviceType (kDLCPU) */
  int32_t dl_id;                /* device ordinal */
  _Atomic uint32_t refs;        /* live storage + owners; freed (with its pool) at 0 */
  pthread_mutex_t mu;           /* guards the pool and the statistics below */
  loom_storage *pool[LOOM_DEVICE_POOL_CLASSES]; /* free lists per size class */
  size_t pooled_bytes;          /* bytes held in the free lists */
  uint64_t pool_hits, pool_misses; /* allocations served from / not from the pool */
  size_t live_bytes;            /* bytes requested by pooled storage now live */
  size_t peak_live_bytes;       /* high-water mark of live_bytes (loom_device_reset_peak) */
  size_t max_alloc_bytes;       /* the largest one storage may be (0: no limit); larger is RESOURCE_EXHAUSTED */
};

/* A device of implementation `vt` with state `impl` (one reference, the caller's; on
 * failure `impl` stays the caller's to free): how a device implementation makes its
 * loom_device. */
LOOM_MUST_USE loom_status loom_device_create(loom_allocator *alloc, const loom_device_vtable *vt, void *impl,
                                             int32_t dl_type, int32_t dl_id, loom_device **out);
/* The AOT shared-object loader the CPU device's image entries are (and a device whose artifacts
 * are shared objects too uses): the file checked before any of it runs (vm/artifact.h), its
 * DATA mapped, dlopen'ed, its loom_artifact_desc checked — kernels of host code (ALM1/ALM2), or
 * with `device_code` a device's kernel descriptions (LOOM_ARTIFACT_MAGIC_DEVICE); each refuses
 * the other by name. unload frees the image; data gives its DATA region; kernel finds a
 * kernel-table entry by name (NULL if none). */
LOOM_MUST_USE loom_status loom_vm_so_load(const char *path, const loom_vm_artifact_pubkey *trust, bool device_code,
                                          void **out_image, const loom_artifact_desc **out_desc);
void loom_vm_so_unload(void *image);
void loom_vm_so_data(void *image, const uint8_t **out_data, uint64_t *out_len);
loom_kernel_fn loom_vm_so_kernel(void *image, const char *name);

/* A new CPU device with its own pool (one reference, the caller's). */
LOOM_MUST_USE loom_status loom_device_cpu_create(loom_allocator *alloc, loom_device **out);
void loom_device_retain(loom_device *d);
void loom_device_release(loom_device *d);
/* Frees every pooled block now. */
void loom_device_trim(loom_device *d);
/* Starts a new high-water mark: peak_live_bytes := live_bytes. */
void loom_device_reset_peak(loom_device *d);
/* A consistent copy of the pool's statistics (read under the device's lock). */
typedef struct loom_device_stats {
  size_t pooled_bytes, live_bytes, peak_live_bytes;
  uint64_t pool_hits, pool_misses;
} loom_device_stats;
loom_device_stats loom_device_get_stats(loom_device *d);

#endif

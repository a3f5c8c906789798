/* device_cuda.h — the CUDA device of vm/device.h: device memory through the CUDA driver
 * (driver.h, loaded at run time), kernels described by loom_cuda_kernel (kernel.h) launched on
 * the context's stream, copies at the boundary. Run side (libloomrt), no CUDA header and no
 * link-time dependency: without the NVIDIA driver creating it is a clear UNAVAILABLE.
 *
 *     loom_device *gpu;
 *     LOOM_PROPAGATE(loom_device_cuda_create(NULL, NULL, &gpu));   // libcuda.so.1, device 0
 *     LOOM_PROPAGATE(loom_vm_create_on(NULL, gpu, exe, resolve, ctx, NULL, &vm));  // kernels: loom_cuda_kernel_fn
 *     loom_device_release(gpu);
 *
 * What it does:
 *   memory       cuMemAlloc per block; the generic pool (vm/object.c) keeps released blocks per
 *                size class, so a steady state allocates nothing;
 *   launches     asynchronous, in issue order on the context's (legacy) stream with the copies;
 *                the grid from the kernel's `grid` text at the call's symbols; each kernel's
 *                module is JIT-compiled by the driver at its first launch and kept;
 *   errors       one error word per device that every kernel may set (ptx.h's ABI); `sync` (the
 *                end of every VM call) reads it back, so a kernel's run-time error fails the call
 *                that ran it, without naming which kernel; a failed copy or launch is kept and
 *                returned by the next `sync` too;
 *   profiling    $LOOM_CUDA_SYNC=1 waits after every launch, so `loom run --profile` times each
 *                kernel on the GPU (without it a launch returns at once and its time is the host's);
 *   not yet      kernel images (CUDA artifacts: PTX inside an AOT artifact), streams per caller
 *                (concurrent calls share the stream and the error word), DLPack kDLCUDA. */
#ifndef LOOM_TARGETS_CUDA_DEVICE_CUDA_H
#define LOOM_TARGETS_CUDA_DEVICE_CUDA_H

#include "base/alloc.h"
#include "base/status.h"
#include "vm/device.h"

/* A CUDA device on GPU 0 through the driver library `driver_lib` (NULL: $LOOM_CUDA_DRIVER, else
 * libcuda.so.1). One reference, the caller's. */
LOOM_MUST_USE loom_status loom_device_cuda_create(loom_allocator *alloc, const char *driver_lib, loom_device **out);

#endif

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
 *   profiling    `loom run --profile` times each kernel and cuBLAS call on the GPU (an event pair
 *                around it, waited for: prof_mark / prof_elapsed); $LOOM_CUDA_SYNC=1 still
 *                waits after every launch;
 *   DLPack       tensors of this GPU (kDLCUDA, device 0: a PyTorch CUDA tensor) import onto this
 *                device and are read in place (loom_rt_tensor_from_dlpack); results export as
 *                kDLCUDA (loom_tensor_to_dlpack);
 *   not yet      streams per caller (concurrent calls share the stream and the error word). */
#ifndef LOOM_TARGETS_CUDA_DEVICE_CUDA_H
#define LOOM_TARGETS_CUDA_DEVICE_CUDA_H

#include "base/alloc.h"
#include "base/status.h"
#include "vm/device.h"

/* A CUDA device on GPU 0 through the driver library `driver_lib` (NULL: $LOOM_CUDA_DRIVER, else
 * libcuda.so.1). One reference, the caller's. */
LOOM_MUST_USE loom_status loom_device_cuda_create(loom_allocator *alloc, const char *driver_lib, loom_device **out);

#endif

/* device.c — probing the CUDA runtime for devices. In libloomrt's one source list
 * (src/runtime/sources.zig); without the toolkit (LOOM_HAVE_CUDA 0) it compiles to nothing
 * and device.h's inline fallback answers. */
#include "targets/cuda/device.h"

#if LOOM_HAVE_CUDA
#include <stdio.h>
#include <cuda_runtime_api.h>

int loom_cuda_device_count(int *out_runtime_version, char *why, size_t why_cap) {
  int version = 0;
  if (cudaRuntimeGetVersion(&version) != cudaSuccess) version = 0;
  *out_runtime_version = version;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    if (why && why_cap) snprintf(why, why_cap, "%s", cudaGetErrorString(err));
    return 0;
  }
  if (count == 0 && why && why_cap) snprintf(why, why_cap, "no CUDA device present");
  return count;
}
#endif

/* device.h — the CUDA runtime device: presence and properties.
 * Built only when the CUDA toolkit is found (LOOM_HAVE_CUDA); without it the
 * inline fallbacks below say so, and every caller treats CUDA as absent. */
#ifndef LOOM_TARGETS_CUDA_DEVICE_H
#define LOOM_TARGETS_CUDA_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#if LOOM_HAVE_CUDA
/* Number of usable CUDA devices (0 when no driver or no GPU), the runtime version
 * (e.g. 13000) and, when there are none, the reason in `why`. Never fails. */
int loom_cuda_device_count(int *out_runtime_version, char *why, size_t why_cap);
#else
static inline int loom_cuda_device_count(int *out_runtime_version, char *why, size_t why_cap) {
  (void)why_cap;
  *out_runtime_version = 0;
  if (why && why_cap) why[0] = '\0';
  return 0;
}
#endif

#endif

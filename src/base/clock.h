/* clock.h — monotonic time for timing passes, kernels and benchmarks. */
#ifndef LOOM_BASE_CLOCK_H
#define LOOM_BASE_CLOCK_H

#include <stdint.h>

/* Nanoseconds from an arbitrary fixed origin (CLOCK_MONOTONIC). */
uint64_t loom_clock_ns(void);

#endif

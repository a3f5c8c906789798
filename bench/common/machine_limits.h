/* machine_limits.h — the machine's measured limits (FP32 FMA peak, triad bandwidth), measured the
 * same way for every benchmark program so that "% of peak" means one thing everywhere. */
#ifndef LOOM_BENCH_MACHINE_LIMITS_H
#define LOOM_BENCH_MACHINE_LIMITS_H

#include <stddef.h>

typedef struct loom_bench_limits {
  const char *isa;    /* "avx512", "avx2" or "scalar": the FMA path used */
  int lanes;          /* fp32 lanes of that path */
  int chains;         /* independent accumulator chains per thread */
  double fma_gflops;  /* FP32 FMA peak on the given threads */
  double triad_gbs;   /* triad bandwidth on the given threads */
} loom_bench_limits;

/* Measures both limits on `threads` threads: triad over three arrays of `triad_elems` floats,
 * FMA runs of about `fma_seconds` each (best of 5 after a warm-up). Exits on allocation failure
 * (a benchmark program, not library code). */
void loom_bench_measure_limits(int threads, size_t triad_elems, double fma_seconds, loom_bench_limits *out);
const char *loom_bench_isa_name(void);
int loom_bench_isa_lanes(void);

#endif

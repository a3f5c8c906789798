/* limits.c — bench-limits: prints the machine's measured limits as one JSON object.
 *
 * Measures, on 1..T threads (default T = 2), the FP32 FMA peak and the triad bandwidth with
 * bench/common/machine_limits (see there for the method). Run it under the same `taskset` as the
 * systems being compared. Output, for bench/harness:
 *
 *   {"isa": "avx512", "threads": [1, 2], "fma_gflops": [..], "triad_gbs": [..], ...}
 *
 * Usage: bench-limits [--threads T] [--triad-mib M] [--quick]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/common/machine_limits.h"

enum { MAX_THREADS = 64 };

static void usage(void) {
  fprintf(stderr, "usage: bench-limits [--threads T] [--triad-mib M] [--quick]\n"
                  "  measures FP32 FMA peak and triad bandwidth on 1..T threads (default T=2),\n"
                  "  triad arrays of M MiB each (default 64); prints one JSON object.\n");
}

int main(int argc, char **argv) {
  int max_threads = 2;
  long triad_mib = 64;
  double fma_target_s = 0.2;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      max_threads = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--triad-mib") == 0 && i + 1 < argc) {
      triad_mib = atol(argv[++i]);
    } else if (strcmp(argv[i], "--quick") == 0) {
      fma_target_s = 0.05;
    } else {
      usage();
      return 2;
    }
  }
  if (max_threads < 1 || max_threads > MAX_THREADS || triad_mib < 1) {
    usage();
    return 2;
  }
  size_t n = (size_t)triad_mib * 1024 * 1024 / sizeof(float);
  double fma[MAX_THREADS], bw[MAX_THREADS];
  loom_bench_limits lim = {0};
  for (int t = 1; t <= max_threads; t++) {
    loom_bench_measure_limits(t, n, fma_target_s, &lim);
    fma[t - 1] = lim.fma_gflops;
    bw[t - 1] = lim.triad_gbs;
  }
  printf("{\"isa\": \"%s\", \"lanes\": %d, \"chains\": %d, \"triad_mib_per_array\": %ld, \"threads\": [",
         lim.isa, lim.lanes, lim.chains, triad_mib);
  for (int t = 1; t <= max_threads; t++) printf("%s%d", t > 1 ? ", " : "", t);
  printf("], \"fma_gflops\": [");
  for (int t = 1; t <= max_threads; t++) printf("%s%.2f", t > 1 ? ", " : "", fma[t - 1]);
  printf("], \"triad_gbs\": [");
  for (int t = 1; t <= max_threads; t++) printf("%s%.2f", t > 1 ? ", " : "", bw[t - 1]);
  printf("]}\n");
  return 0;
}

/* bench/python/call_c.c — the C side of the Python per-call overhead benchmark (a program,
 * not a timed test; bench/python/overhead.py runs it and the same calls from Python).
 *
 *   zig-out/bin/bench-pycall-c MODEL.loom N ITERS
 *
 * Compiles MODEL (a function @main(x: f32(n), y: f32(n))), opens it with one thread and times
 * ITERS calls of loom_rt_call on two f32(N) inputs made once, each result released — what a C
 * caller pays per call. Prints "c_call_ns <median of 5 rounds, ns per call>". */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "loom.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int fail(loom_status s) {
  loom_status_fprint(stderr, s);
  loom_status_free(s);
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.loom N ITERS\n", argv[0]);
    return 2;
  }
  int64_t n = strtoll(argv[2], NULL, 10);
  long iters = strtol(argv[3], NULL, 10);
  loom_compiled *c;
  loom_status s = loom_compile_file(argv[1], NULL, &c);
  if (s) return fail(s);
  loom_rt *rt;
  loom_rt_options o = {.threads = 1};
  s = loom_compiled_open(c, &o, &rt);
  if (s) return fail(s);
  loom_tensor *in[2];
  for (int i = 0; i < 2; i++) {
    s = loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 1, &n, &in[i]);
    if (s) return fail(s);
    for (int64_t k = 0; k < n; k++) ((float *)in[i]->data)[k] = (float)k;
  }
  uint64_t rounds[5];
  for (int r = 0; r < 5; r++) {
    uint64_t t0 = now_ns();
    for (long i = 0; i < iters; i++) {
      loom_rt_outputs out;
      s = loom_rt_call(rt, "main", in, 2, &out);
      if (s) return fail(s);
      loom_rt_outputs_free(&out);
    }
    rounds[r] = (now_ns() - t0) / (uint64_t)iters;
  }
  qsort(rounds, 5, sizeof rounds[0], cmp_u64);
  printf("c_call_ns %llu\n", (unsigned long long)rounds[2]);
  for (int i = 0; i < 2; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  return 0;
}

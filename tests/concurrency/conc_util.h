/* conc_util.h — what the concurrency tests share: a model compiled once (JIT), input sets of
 * mixed shapes built once and shared by every thread, serial reference outputs, and a
 * hammer that calls one runtime from many threads and compares every output bit for bit. */
#ifndef LOOM_TESTS_CONC_UTIL_H
#define LOOM_TESTS_CONC_UTIL_H

#include <stdint.h>

#include "loom.h"
#include "support/loom_test.h"

#define CONC_MAX_PARAMS 16
#define CONC_MAX_OUTS 4
#define CONC_MAX_SETS 16

/* One input set (its own shape) and the outputs a serial call returned for it. */
typedef struct conc_set {
  loom_tensor *in[CONC_MAX_PARAMS]; /* shared by every thread (read only) */
  uint32_t nin;
  uint32_t nout;
  size_t out_bytes[CONC_MAX_OUTS];
  void *out[CONC_MAX_OUTS];         /* the serial call's output bytes */
  int64_t out_numel[CONC_MAX_OUTS];
} conc_set;

/* A compiled model, its runtime, and its input sets. */
typedef struct conc_model {
  const char *path;
  loom_compiled *c;
  loom_rt *rt;
  conc_set sets[CONC_MAX_SETS];
  uint32_t nsets;
} conc_model;

/* Compiles `path` once and opens a runtime of `pool_threads` threads. */
void conc_model_open(conc_model *m, const char *path, uint32_t pool_threads);
/* Adds an input set: the symbol values `vals` for `names` (n of them) fix every parameter's
 * shape; parameter p is filled deterministically. Every set shares the parameters whose shape
 * does not depend on a symbol (the weights), so the threads share those tensors too. */
void conc_model_add_set(conc_model *m, const char *const *names, const int64_t *vals, uint32_t n);
/* Runs every set once, serially, and keeps its outputs as the reference. */
void conc_model_reference(conc_model *m);
void conc_model_close(conc_model *m);

/* A hang fails the test after this many seconds (the slowest test takes a fraction of it). */
#define CONC_TIMEOUT_S 240

/* Runs fn(args + t * arg_size) on `n` threads (at most 64) and joins them; when they have not
 * all finished within CONC_TIMEOUT_S seconds (a deadlock), says so and aborts the test. */
void conc_run_threads(uint32_t n, void *(*fn)(void *), void *args, size_t arg_size);

/* Calls the runtime from `threads` threads at once, `calls` calls each over the sets in a
 * per-thread pseudo-random order, and asserts that every output equals the reference bit for
 * bit and no call failed. */
void conc_hammer(conc_model *m, uint32_t threads, uint32_t calls, uint64_t seed);

#endif

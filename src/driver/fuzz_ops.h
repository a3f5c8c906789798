/* fuzz_ops.h — `loom fuzz-ops`: a randomized differential checker of the operators.
 *
 * Each case is a one-op module (symbolic dims, so it is compiled once) drawn at random over
 * the op's attribute space and shapes (0, 1, primes, sizes past the vector and tile widths).
 * It runs in the reference interpreter and compiled (the JIT pipeline of `loom run`) with
 * each thread count, on the same inputs; results must agree (integers exactly, floats within
 * the case's tolerance, NaN positions exactly). A case runs in a child process, so a crash of
 * the compiled code is a reported mismatch, not the checker's death. A failing case is shrunk
 * (its random choices are lowered one by one while it still fails) and printed as module text.
 *
 *     loom_fuzz_ops_options o = {.seconds = 30, .threads = {1, 2}, .nthreads = 2};
 *     loom_fuzz_ops_report r;
 *     loom_fuzz_ops_run(&o, stdout, &r);   // ... "fuzz-ops: N cases, M mismatches"
 */
#ifndef LOOM_DRIVER_FUZZ_OPS_H
#define LOOM_DRIVER_FUZZ_OPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define LOOM_FUZZ_OPS_MAX_FAMILIES 64

typedef struct loom_fuzz_ops_options {
  uint64_t seed;        /* case i uses seed + i */
  long cases;           /* stop after this many cases (0: no bound) */
  double seconds;       /* stop after this time (0: no bound); both 0: 200 cases */
  const char *op;       /* only families (or ops) named in this comma list; NULL: all */
  const char *skip;     /* families (or ops) left out, comma list; NULL: none */
  uint32_t threads[4];  /* thread counts the compiled module runs with */
  int nthreads;
  bool no_fork;         /* run cases in this process (a crash then ends the run) */
  bool no_shrink;       /* report failures without shrinking them */
  bool verbose;         /* print every case */
  double shrink_seconds; /* time bound of one shrink (0: 60 s) */
  const char *target;   /* where the compiled side runs: NULL/"cpu", or "cuda[:sm_NN]" (the GPU) */
} loom_fuzz_ops_options;

/* Counts of one family (or of the whole run). */
typedef struct loom_fuzz_ops_counts {
  long cases;      /* cases run */
  long mismatches; /* compiled differs from the interpreter, fails, or crashes */
  long skipped;    /* the compiler refused the case as unsupported (UNIMPLEMENTED) */
  long invalid;    /* the interpreter refused the case (a generator bug: should stay 0) */
} loom_fuzz_ops_counts;

typedef struct loom_fuzz_ops_report {
  loom_fuzz_ops_counts total;
  loom_fuzz_ops_counts family[LOOM_FUZZ_OPS_MAX_FAMILIES];
} loom_fuzz_ops_report;

/* Runs the checker; prints mismatches (seed, repro line, shrunk module), per-family counts and
 * the last line "fuzz-ops: N cases, M mismatches" to `out`. Returns false on a bad option
 * (message on `out`). */
bool loom_fuzz_ops_run(const loom_fuzz_ops_options *o, FILE *out, loom_fuzz_ops_report *r);

/* The families, in order: their count and names (for --list), and the ops one covers. */
int loom_fuzz_ops_family_count(void);
const char *loom_fuzz_ops_family_name(int i);
const char *loom_fuzz_ops_family_ops(int i);

#endif

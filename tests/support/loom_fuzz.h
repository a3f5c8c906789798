/* loom_fuzz.h — deterministic mutation fuzzing inside the test suite.
 *
 * Parsers and loaders must never crash on any input. A fuzz test gives valid
 * seed inputs and a target that consumes bytes; loom_fuzz_run feeds the target
 * mutants of the seeds (bit flips, interesting byte values, truncations, chunk
 * duplication and deletion, random insertions, splices of two seeds) for a
 * bounded number of iterations and seconds. Under ASan + UBSan any memory error,
 * UB or leak fails the test; the target itself only has to return. The run is
 * reproducible from its seed (LOOM_TEST_SEED), and LOOM_FUZZ_SECONDS raises the
 * time bound for longer local runs. */
#ifndef LOOM_TESTS_LOOM_FUZZ_H
#define LOOM_TESTS_LOOM_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Consumes one input. Must not keep `data` after returning. */
typedef void (*loom_fuzz_target)(const uint8_t *data, size_t len, void *ud);

typedef struct loom_fuzz_opts {
  size_t max_iterations;    /* upper bound on mutants run */
  double max_seconds;       /* time bound (LOOM_FUZZ_SECONDS overrides when larger) */
  uint64_t seed;            /* PRNG seed; 0 means loom_test_seed() */
  const char *const *dict;  /* optional tokens of the input language, inserted as mutations */
  size_t ndict;
} loom_fuzz_opts;

/* Runs the target on every seed, then on mutants; returns the number of inputs run. */
size_t loom_fuzz_run(const loom_fuzz_opts *opts, const uint8_t *const *seeds, const size_t *seed_lens, size_t nseeds,
                     loom_fuzz_target target, void *ud);

#endif

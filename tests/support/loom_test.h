/* loom_test.h — what every Loom test suite includes.
 *
 * LOOM_TEST(suite, name) { ... } is Criterion's Test() plus a leak check at the
 * end of the test: LeakSanitizer runs after the body and a leak fails the test
 * (a plain Test() would only print the report after Criterion has counted it as
 * passed). Use LOOM_TEST for every test. */
#ifndef LOOM_TESTS_LOOM_TEST_H
#define LOOM_TESTS_LOOM_TEST_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nonzero when LeakSanitizer finds memory leaked since the last check. */
int loom_test_leaks(void);

#define LOOM_TEST(suite, name, ...)                                                  \
  static void suite##_##name##_body(void);                                           \
  Test(suite, name, ##__VA_ARGS__) {                                                 \
    suite##_##name##_body();                                                         \
    cr_assert(!loom_test_leaks(), "memory leaked (LeakSanitizer report above)");    \
  }                                                                                  \
  static void suite##_##name##_body(void)

/* Result of running a command line through the shell. */
typedef struct loom_test_proc {
  int exit_code; /* exit status, or 128 + signal */
  char *out;     /* captured stdout (malloc'd, NUL-terminated) */
  char *err;     /* captured stderr */
} loom_test_proc;

/* Runs `cmdline` (printf-style) with stdout and stderr captured. */
loom_test_proc loom_test_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void loom_test_proc_free(loom_test_proc *p);
/* Path of the sanitized `loom` (LOOM_BIN) and `loom-run` (LOOM_RUN_BIN) programs. */
const char *loom_test_loom_bin(void);
const char *loom_test_loom_run_bin(void);

/* A deterministic PRNG for property tests (splitmix64). */
typedef struct loom_test_rng {
  uint64_t state;
} loom_test_rng;
uint64_t loom_test_rng_next(loom_test_rng *r);
/* Uniform in [lo, hi]. */
int64_t loom_test_rng_range(loom_test_rng *r, int64_t lo, int64_t hi);
/* The seed for property tests: LOOM_TEST_SEED or a fixed default, printed on failure. */
uint64_t loom_test_seed(void);

#endif

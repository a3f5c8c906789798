/* test_fuzz_ops.c — a bounded run of `loom fuzz-ops` (src/driver/fuzz_ops.h): one-op modules
 * of every family with random attributes and shapes, the reference interpreter against the
 * compiled JIT path with 1 and 2 threads. 30 s by default; LOOM_FUZZ_SECONDS sets the bound,
 * LOOM_TEST_SEED the seed. Every mismatch is printed with its seed, a repro line and the
 * shrunk module. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/fuzz_ops.h"
#include "support/loom_test.h"

LOOM_TEST(fuzz_ops, interpreter_equals_compiled_for_every_family) {
  const char *env = getenv("LOOM_FUZZ_SECONDS");
  double secs = env && atof(env) > 0 ? atof(env) : 30;
  loom_fuzz_ops_options o = {.seed = loom_test_seed(), .seconds = secs, .threads = {1, 2}, .nthreads = 2, .shrink_seconds = 30};
  loom_fuzz_ops_report r;
  cr_assert(loom_fuzz_ops_run(&o, stdout, &r));
  cr_assert_gt(r.total.cases, 0);
  cr_assert_eq(r.total.mismatches, 0, "fuzz-ops: %ld cases, %ld mismatches (seeds and repro lines above)", r.total.cases,
               r.total.mismatches);
}

LOOM_TEST(fuzz_ops, cli_lists_families_and_reproduces_one_case) {
  loom_test_proc p = loom_test_run("%s fuzz-ops --list", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "conv1d"), "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s fuzz-ops --op add --seed 7 --cases 2 --threads 1", loom_test_loom_bin());
  cr_assert(strstr(p.out, "fuzz-ops: 2 cases, "), "%s\n%s", p.out, p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s fuzz-ops --op no_such_op", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 2, "%s", p.out);
  loom_test_proc_free(&p);
}

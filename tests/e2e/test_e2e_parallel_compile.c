/* test_e2e_parallel_compile.c — parallel compilation, the default (docs/codegen.md, "Parallel
 * compilation"): a module's kernels are compiled on several workers, each in its own LLVM
 * context with its own target machine. Compiled on 4 workers with no cache, many times in one
 * process (the sanitized and the ThreadSanitizer build both run this suite), every compile's
 * kernels run like the interpreter; the artifacts are the same bytes whatever the worker count
 * and the cache state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

/* Compiles `path` `times` times on `threads` workers without the disk cache (every kernel
 * through LLVM each time) and checks each compile at the shapes `sets` (nsets of nb binds). */
static void compile_and_check(const char *path, const char *threads, int times, const e2e_bind *sets, size_t nb,
                              size_t nsets) {
  cr_assert_eq(setenv("LOOM_COMPILE_THREADS", threads, 1), 0);
  loom_compile_options o = {.no_cache = true};
  for (int t = 0; t < times; t++) {
    e2e_model md = e2e_compile_with(path, &o);
    loom_compile_times ct = loom_compiled_times(md.c);
    cr_assert_eq(ct.kernels_compiled, ct.kernels_unique, "%s compile %d: every distinct kernel through LLVM", path, t);
    cr_assert_gt(ct.kernels_compiled, 4, "%s: enough kernels for the workers to share", path);
    for (size_t k = 0; k < nsets; k++) {
      double err = e2e_check(&md, "main", sets + k * nb, nb, false, NULL);
      cr_assert_lt(err, 1e-4, "%s compile %d on %s workers, shape set %zu: relative error %g", path, t, threads, k, err);
    }
    e2e_model_free(&md);
  }
  unsetenv("LOOM_COMPILE_THREADS");
}

LOOM_TEST(e2e_parallel_compile, a_transformer_compiled_on_four_workers_six_times_runs_like_the_interpreter) {
  static const e2e_bind s[] = {{"b", 2}, {"s", 3}, {"b", 1}, {"s", 17}};
  compile_and_check("tests/graph/corpus/gpt2_tiny.loom", "4", 6, s, 2, 2);
}

LOOM_TEST(e2e_parallel_compile, a_llama_block_with_cache_compiled_on_three_workers_runs_like_the_interpreter) {
  static const e2e_bind s[] = {{"b", 2}, {"s", 5}, {"past", 3}, {"b", 1}, {"s", 1}, {"past", 11}};
  compile_and_check("models/llama_block.loom", "3", 3, s, 3, 2);
}

/* `loom compile` of the llama block into dir/<name>.so on `threads` workers (NULL: the default),
 * with the cache at dir/cache or none; asserts the cache line's hits and misses. */
static void compile_artifact(const char *dir, const char *name, const char *threads, bool cache, const char *want) {
  char env[96] = "";
  if (threads) snprintf(env, sizeof env, "LOOM_COMPILE_THREADS=%s", threads);
  loom_test_proc p = loom_test_run("%s LOOM_CACHE_DIR=%s/cache %s compile models/llama_block.loom -o %s/%s.so --time %s", env,
                                   dir, loom_test_loom_bin(), dir, name, cache ? "" : "--no-cache");
  cr_assert_eq(p.exit_code, 0, "%s: exit %d\n%s", name, p.exit_code, p.err);
  cr_assert(strstr(p.out, want), "%s: stdout lacks '%s':\n%s", name, want, p.out);
  loom_test_proc_free(&p);
}

LOOM_TEST(e2e_parallel_compile, artifacts_are_the_same_bytes_for_every_worker_count_and_cache_state) {
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/loom-pc-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  compile_artifact(dir, "t1", "1", false, "14 misses compiled by LLVM");
  compile_artifact(dir, "t3", "3", false, "14 misses compiled by LLVM");
  compile_artifact(dir, "t8", "8", false, "14 misses compiled by LLVM");
  compile_artifact(dir, "cold", NULL, true, "0 cache hits, 14 misses");
  compile_artifact(dir, "warm", "2", true, "14 cache hits, 0 misses");
  static const char *const names[] = {"t3", "t8", "cold", "warm"};
  char a[96], b[96];
  snprintf(a, sizeof a, "%s/t1.so", dir);
  size_t la;
  char *x = e2e_slurp(a, &la);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(b, sizeof b, "%s/%s.so", dir, names[i]);
    size_t lb;
    char *y = e2e_slurp(b, &lb);
    cr_assert(la == lb && !memcmp(x, y, la), "t1.so (%zu bytes) and %s.so (%zu bytes) differ", la, names[i], lb);
    free(y);
  }
  free(x);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

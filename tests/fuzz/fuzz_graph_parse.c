/* fuzz_graph_parse.c — the graph text parser under fuzzing.
 *
 * loom_fuzz_graph_parse_one() (fuzz_graph_harness.c, also the libFuzzer target) is the
 * harness: parse; when that succeeds, verify, print, parse the printed text again and
 * require the same text (round trip). In the test suite the shared mutation loop
 * (tests/support/loom_fuzz.h, with a dictionary of the text format's tokens) runs it over
 * models/ and tests/graph/corpus/ for a bounded time (LOOM_FUZZ_SECONDS, default 3).
 * Sanitizers turn any memory error into a failure. */
#include <dirent.h>

#include "support/loom_fuzz.h"
#include "tests/graph/graph_test_util.h"

int loom_fuzz_graph_parse_one(const uint8_t *data, size_t size); /* fuzz_graph_harness.c */

static const char *const dict[] = {"(", ")", "[", "]", ",", "=", ":", "@", "{", "}", "->", ".0", "?", "-1",
                                   "Tensor[", "Shape[", "Tuple[", "Scalar[i64, ", "Object", "f32", "i64", "bool",
                                   "n", "m + 1", "floordiv(n, 2)", "dataflow {", "output ", "return ", "match_cast(",
                                   "if (", "else", "const(1.5, f32)", "shape(n, 2)", "sym(n)", "axis=", "axes=[0]",
                                   "add(", "matmul(", "reshape(", "concat(", "nonzero(", "\n", " ", "//", "9999999999999999999",
                                   "loop (", "i < sym(n)", ", while ", "sym(i)", "(k, 4)"};

/* Counts inputs that broke the round trip. */
static void target(const uint8_t *data, size_t len, void *ud) { *(size_t *)ud += (size_t)loom_fuzz_graph_parse_one(data, len); }

static size_t load_seeds(const char *dir, char **seeds, size_t *lens, size_t cap, size_t n) {
  DIR *d = opendir(dir);
  if (!d) return n;
  struct dirent *e;
  while ((e = readdir(d)) && n < cap) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".loom")) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    seeds[n] = gt_read_file(path, &lens[n]);
    if (seeds[n]) n++;
  }
  closedir(d);
  return n;
}

LOOM_TEST(graph_fuzz, parser_mutation_loop_no_crash) {
  char *seeds[64];
  size_t lens[64];
  size_t ns = load_seeds("models", seeds, lens, 64, 0);
  ns = load_seeds("tests/graph/corpus", seeds, lens, 64, ns);
  cr_assert_geq(ns, 3);
  loom_fuzz_opts o = {.max_iterations = 1000000, .max_seconds = 3.0, .dict = dict, .ndict = sizeof dict / sizeof dict[0]};
  size_t bugs = 0;
  size_t iters = loom_fuzz_run(&o, (const uint8_t *const *)seeds, lens, ns, target, &bugs);
  for (size_t i = 0; i < ns; i++) free(seeds[i]);
  cr_log_info("graph parser fuzz: %zu inputs", iters);
  cr_assert_eq(bugs, 0, "%zu inputs broke the round trip (printed above)", bugs);
  cr_assert_gt(iters, 10);
}

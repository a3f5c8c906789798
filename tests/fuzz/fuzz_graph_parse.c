/* fuzz_graph_parse.c — the graph text parser under fuzzing.
 *
 * loom_fuzz_graph_parse_one() is the harness: parse; when that succeeds, verify, print,
 * parse the printed text again and require the same text (round trip). Built with
 * -DLOOM_LIBFUZZER it is a libFuzzer target (LLVMFuzzerTestOneInput); in the test suite the
 * shared mutation loop (tests/support/loom_fuzz.h, with a dictionary of the text format's
 * tokens) runs it over models/ and tests/graph/corpus/ for a bounded time (LOOM_FUZZ_SECONDS,
 * default 3). Sanitizers turn any memory error into a failure. */
#include <dirent.h>

#include "support/loom_fuzz.h"
#include "tests/graph/graph_test_util.h"

/* Returns 0 when the input was handled (parsed or cleanly rejected), 1 on a round-trip bug. */
static int loom_fuzz_graph_parse_one(const uint8_t *data, size_t size) {
  loom_source src = {"fuzz.loom", (const char *)data, size};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = NULL;
  loom_status st = loom_graph_parse(&src, &dl, &m);
  int bad = 0;
  if (st) {
    /* Formatting the diagnostic must be safe too. */
    if (dl.items.len) free(loom_diag_format(&dl.items.data[0]));
    loom_status_free(st);
  } else {
    loom_status vs = loom_graph_verify(m, &dl);
    loom_status_free(vs);
    char *p1 = gt_print(m);
    loom_graph_module *m2 = gt_parse(p1, NULL);
    if (!m2) {
      bad = 1;
    } else {
      char *p2 = gt_print(m2);
      bad = strcmp(p1, p2) != 0;
      free(p2);
      loom_graph_module_destroy(m2);
    }
    if (bad) fprintf(stderr, "round trip failed for:\n%.*s\nprinted:\n%s\n", (int)size, (const char *)data, p1);
    free(p1);
    loom_graph_module_destroy(m);
  }
  loom_diag_list_destroy(&dl);
  return bad;
}

#ifdef LOOM_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (loom_fuzz_graph_parse_one(data, size)) __builtin_trap();
  return 0;
}
#endif

static const char *const dict[] = {"(", ")", "[", "]", ",", "=", ":", "@", "{", "}", "->", ".0", "?", "-1",
                                   "Tensor[", "Shape[", "Tuple[", "Scalar[i64, ", "Object", "f32", "i64", "bool",
                                   "n", "m + 1", "floordiv(n, 2)", "dataflow {", "output ", "return ", "match_cast(",
                                   "if (", "else", "const(1.5, f32)", "shape(n, 2)", "sym(n)", "axis=", "axes=[0]",
                                   "add(", "matmul(", "reshape(", "concat(", "nonzero(", "\n", " ", "//", "9999999999999999999"};

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

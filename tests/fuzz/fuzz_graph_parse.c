/* fuzz_graph_parse.c — the graph text parser under fuzzing.
 *
 * loom_fuzz_graph_parse_one() is the harness: parse; when that succeeds, verify, print,
 * parse the printed text again and require the same text (round trip). Built with
 * -DLOOM_LIBFUZZER it is a libFuzzer target (LLVMFuzzerTestOneInput); in the test suite a
 * deterministic mutation loop over models/ and tests/graph/corpus/ runs it for a bounded
 * time (LOOM_FUZZ_SECONDS, default 3). Sanitizers turn any memory error into a failure. */
#include <dirent.h>
#include <time.h>

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

static void mutate(loom_test_rng *r, char *buf, size_t *len, size_t cap) {
  int kind = (int)loom_test_rng_range(r, 0, 5);
  size_t n = *len;
  size_t at = n ? (size_t)loom_test_rng_range(r, 0, (int64_t)n - 1) : 0;
  switch (kind) {
  case 0: /* flip a byte */
    if (n) buf[at] = (char)loom_test_rng_range(r, 1, 127);
    break;
  case 1: { /* delete a range */
    size_t k = (size_t)loom_test_rng_range(r, 1, 16);
    if (at + k > n) k = n - at;
    memmove(buf + at, buf + at + k, n - at - k);
    *len = n - k;
    break;
  }
  case 2: { /* insert a dictionary token */
    const char *t = dict[loom_test_rng_range(r, 0, (int64_t)(sizeof dict / sizeof dict[0]) - 1)];
    size_t k = strlen(t);
    if (n + k >= cap) break;
    memmove(buf + at + k, buf + at, n - at);
    memcpy(buf + at, t, k);
    *len = n + k;
    break;
  }
  case 3: { /* duplicate a range */
    size_t k = (size_t)loom_test_rng_range(r, 1, 32);
    if (at + k > n) k = n - at;
    if (n + k >= cap) break;
    memmove(buf + at + k, buf + at, n - at);
    *len = n + k;
    break;
  }
  case 4: /* truncate */
    *len = at;
    break;
  default: { /* swap two bytes */
    size_t b = n ? (size_t)loom_test_rng_range(r, 0, (int64_t)n - 1) : 0;
    if (n) {
      char c = buf[at];
      buf[at] = buf[b];
      buf[b] = c;
    }
    break;
  }
  }
}

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
  const char *env = getenv("LOOM_FUZZ_SECONDS");
  double seconds = env ? atof(env) : 3.0;
  loom_test_rng r = {loom_test_seed()};
  size_t cap = 1 << 16, iters = 0, bugs = 0;
  char *buf = malloc(cap);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9 > seconds) break;
    size_t s = (size_t)loom_test_rng_range(&r, 0, (int64_t)ns - 1);
    size_t len = lens[s] < cap ? lens[s] : cap - 1;
    memcpy(buf, seeds[s], len);
    int nm = (int)loom_test_rng_range(&r, 1, 4);
    for (int k = 0; k < nm; k++) mutate(&r, buf, &len, cap);
    bugs += (size_t)loom_fuzz_graph_parse_one((const uint8_t *)buf, len);
    iters++;
  }
  free(buf);
  for (size_t i = 0; i < ns; i++) free(seeds[i]);
  cr_log_info("graph parser fuzz: %zu inputs in %.1f s", iters, seconds);
  cr_assert_eq(bugs, 0, "%zu inputs broke the round trip (printed above)", bugs);
  cr_assert_gt(iters, 10);
}

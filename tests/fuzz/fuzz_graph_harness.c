/* fuzz_graph_harness.c — the graph text parser's fuzz harness (no Criterion, so libFuzzer
 * can link it): parse; when that succeeds, verify, print, parse the printed text again and
 * require the same text (round trip). The suite's mutation loop (fuzz_graph_parse.c) and
 * libFuzzer (-DLOOM_LIBFUZZER, tests/fuzz/run_libfuzzer) drive it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

int loom_fuzz_graph_parse_one(const uint8_t *data, size_t size);

/* The module as text (malloc'd), or NULL when out of memory. */
static char *print(loom_graph_module *m) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  char *r = sb.oom ? NULL : strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r;
}

static loom_graph_module *parse(const char *name, const char *text, size_t len, loom_diag_list *dl) {
  loom_source src = {name, text, len};
  loom_graph_module *m = NULL;
  loom_status st = loom_graph_parse(&src, dl, &m);
  if (st) {
    if (dl->items.len) free(loom_diag_format(&dl->items.data[0])); /* formatting must be safe too */
    loom_status_free(st);
    return NULL;
  }
  return m;
}

/* Returns 0 when the input was handled (parsed or cleanly rejected), 1 on a round-trip bug. */
int loom_fuzz_graph_parse_one(const uint8_t *data, size_t size) {
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = parse("fuzz.loom", (const char *)data, size, &dl);
  int bad = 0;
  if (m) {
    loom_status vs = loom_graph_verify(m, &dl);
    loom_status_free(vs);
    char *p1 = print(m);
    loom_diag_list dl2;
    loom_diag_list_init(&dl2, NULL);
    loom_graph_module *m2 = p1 ? parse("printed.loom", p1, strlen(p1), &dl2) : NULL;
    loom_diag_list_destroy(&dl2);
    char *p2 = m2 ? print(m2) : NULL;
    bad = p1 && (!p2 || strcmp(p1, p2) != 0);
    if (bad) fprintf(stderr, "round trip failed for:\n%.*s\nprinted:\n%s\n", (int)size, (const char *)data, p1);
    free(p1);
    free(p2);
    loom_graph_module_destroy(m2);
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

/* passes_test_util.c — the parse, verify, check and pack helpers of the graph-pass tests. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "passes_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "support/loom_test.h"

loom_status pt_parse_text(const char *text, loom_graph_module **m) {
  loom_source src = {"test.loom", text, strlen(text)};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_status s = loom_graph_parse(&src, &diags, m);
  loom_diag_list_destroy(&diags);
  return s;
}

loom_graph_module *pt_parse(const char *text) {
  loom_graph_module *m = NULL;
  loom_status s = pt_parse_text(text, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  return m;
}

void pt_verify(loom_graph_module *m) {
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_status s = loom_graph_verify(m, &diags);
  if (s) loom_diag_list_print(stderr, &diags);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&diags);
}

char *pt_checked_main(loom_pipeline_check *c, const char *pass, loom_graph_module *m) {
  loom_status s = loom_pipeline_check_after(c, pass);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_pipeline_check_end(c);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(m, loom_graph_module_find_func(m, "main"), &sb);
  char *fn = strdup(loom_strbuf_cstr(&sb));
  cr_assert_not_null(fn);
  loom_strbuf_free(&sb);
  return fn;
}

char *pt_pack_checked(loom_graph_module *m, int samples, uint64_t seed, int64_t panel, size_t want) {
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, samples, seed, NULL, &c));
  size_t n = 0;
  cr_assert_null(loom_graph_pack_weights(m, panel, &n));
  cr_assert_eq(n, want, "%zu weights packed, %zu expected", n, want);
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  return pt_checked_main(c, "pack", m);
}

/* passes_test_util.c — the parse and verify helpers of the graph-pass tests. */
#include "passes_test_util.h"

#include <stdio.h>
#include <string.h>

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

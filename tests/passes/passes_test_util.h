/* passes_test_util.h — what the graph-pass tests share: a module parsed from IR text and a
 * verified module, each failing the test with the parser's or verifier's message. */
#ifndef LOOM_TESTS_PASSES_TEST_UTIL_H
#define LOOM_TESTS_PASSES_TEST_UTIL_H

#include "driver/pipeline.h"
#include "graph/graph.h"

/* Parses `text` (named test.loom in messages) into *m; the parse status, diagnostics dropped. */
loom_status pt_parse_text(const char *text, loom_graph_module **m);

/* Parses `text`; fails the test with the parse error. The caller frees the module. */
loom_graph_module *pt_parse(const char *text);

/* Verifies `m`; fails the test with the verifier's message (its diagnostics printed). */
void pt_verify(loom_graph_module *m);

/* Ends the numeric check `c` after `pass` (failing the test with its message) and returns the
 * printed main of `m`; the caller frees it. */
char *pt_checked_main(loom_pipeline_check *c, const char *pass, loom_graph_module *m);

/* Runs `pack` (panels of `panel` columns) then dce on `m` under the numeric check (`samples`
 * shape sets from `seed`), asserts that it packed `want` weights and that the module verifies, and
 * returns the printed main (pt_checked_main); the caller frees it. */
char *pt_pack_checked(loom_graph_module *m, int samples, uint64_t seed, int64_t panel, size_t want);

#endif

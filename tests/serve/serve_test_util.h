/* Helpers shared by the serve tests: the deterministic prompts and a greedy run of several
 * requests at once on an open engine. */
#ifndef LOOM_TESTS_SERVE_TEST_UTIL_H
#define LOOM_TESTS_SERVE_TEST_UTIL_H

#include <stdint.h>
#include "graph/graph.h"
#include "serve/serve.h"

/* Prompt r of `len` tokens below `vocab`: token j is (r * 37 + j * 11 + 5) % vocab (the
 * generators under tests/serve/data use the same rule). */
void serve_test_prompt(int r, int len, int64_t vocab, int64_t *out);

/* Submits nreq greedy requests (prompt r: serve_test_prompt(r, lens[r], vocab), at most 64
 * tokens) to `e`, all before any finishes, waits for each (at most 600 s), asserts that each
 * ran to `steps` tokens with its prompt length reported, and writes request r's tokens to
 * got[r * steps .. r * steps + steps - 1]. */
void serve_test_greedy(loom_serve_engine *e, int nreq, const int *lens, int64_t vocab, int steps, int64_t *got);

/* The greedy token of a decode step: the argmax (first of equals) of row s - 1 of logits
 * (1, s, vocab). */
int64_t serve_test_argmax_last(const loom_graph_tensor *logits, int s, int64_t vocab);

/* Asserts that rewriting a decoder variant (`from` replaced by `to` in its text) was refused with
 * `st`, whose message holds `needle` and says the model cannot be served; frees st. */
void serve_test_expect_refused(loom_status st, const char *from, const char *to, const char *needle);

#endif

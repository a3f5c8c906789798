/* Helpers shared by the serve tests (serve_test_util.h). */
#include "serve_test_util.h"

#include <stdbool.h>
#include <string.h>
#include <time.h>
#include "support/loom_test.h"

void serve_test_prompt(int r, int len, int64_t vocab, int64_t *out) {
  for (int j = 0; j < len; j++) out[j] = (r * 37 + j * 11 + 5) % vocab;
}

void serve_test_greedy(loom_serve_engine *e, int nreq, const int *lens, int64_t vocab, int steps, int64_t *got) {
  enum { MAX_REQ = 16, MAX_PROMPT = 64 };
  cr_assert(nreq <= MAX_REQ);
  loom_serve_req *req[MAX_REQ];
  loom_serve_params p = {.max_tokens = steps, .temperature = 0, .top_p = 1};
  for (int r = 0; r < nreq; r++) {
    int64_t prompt[MAX_PROMPT];
    cr_assert(lens[r] <= MAX_PROMPT);
    serve_test_prompt(r, lens[r], vocab, prompt);
    const int64_t *pp = prompt;
    size_t len = (size_t)lens[r];
    loom_status st = loom_serve_submit(e, &pp, &len, 1, &p, &req[r]);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
  }
  for (int r = 0; r < nreq; r++) {
    int64_t seen = 0, n = 0, plen = 0;
    bool fin = false;
    loom_serve_finish f = LOOM_SERVE_RUNNING;
    time_t t0 = time(NULL);
    while (f == LOOM_SERVE_RUNNING && time(NULL) - t0 < 600) {
      loom_serve_req_wait(req[r], &seen, &fin, 100);
      seen = n = loom_serve_req_read(req[r], 0, 0, got + (size_t)r * (size_t)steps, steps, &f, &plen);
    }
    cr_assert_eq(f, LOOM_SERVE_LENGTH, "request %d: %s", r, f == LOOM_SERVE_FAILED ? loom_serve_req_error(req[r]) : "not finished");
    cr_assert_eq(n, steps);
    cr_assert_eq(plen, lens[r]);
    loom_serve_req_release(req[r]);
  }
}

int64_t serve_test_argmax_last(const loom_graph_tensor *logits, int s, int64_t vocab) {
  size_t row = (size_t)(s - 1) * (size_t)vocab;
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; v++)
    if (loom_graph_tensor_get_f64(logits, row + (size_t)v) > loom_graph_tensor_get_f64(logits, row + (size_t)best)) best = v;
  return best;
}

void serve_test_expect_refused(loom_status st, const char *from, const char *to, const char *needle) {
  cr_assert_not_null(st, "'%s' -> '%s' was accepted", from, to);
  const char *msg = loom_status_text(st, 0);
  cr_assert(strstr(msg, needle) && strstr(msg, "cannot be served as a decoder with a paged cache"), "'%s' -> '%s': %s", from, to, msg);
  loom_status_free(st);
}

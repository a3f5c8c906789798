/* test_serve_e2e.c — `loom serve` end to end: the (sanitized) server is started on a free
 * loopback port with the bundled decoder (models/serve_decoder.loom, seeded random weights),
 * small pages and a small cache (chunked prefill, paging and preemption all happen), and
 *   - concurrent greedy requests (single prompts, a list of prompts, a stream) must equal the
 *     reference interpreter's token-by-token greedy decode of the same model (each step the
 *     whole prefix, no cache: an oracle that shares nothing with the engine's paging);
 *   - seeded sampling is reproducible;
 *   - malformed JSON, unknown fields, tokens out of the vocabulary, prompts over the context,
 *     wrong methods and paths, an oversized body each get their HTTP error and message;
 *   - a client that disconnects mid-stream is cancelled; the server stays healthy;
 *   - SIGTERM stops it cleanly (exit 0).
 * Every wait is bounded; the server is killed if anything goes wrong. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph/graph.h"
#include "serve/serve.h"
#include "support/loom_test.h"

static const char *const model_path = "models/serve_decoder.loom";
enum { SEED = 7, PAGES = 24, PAGE = 4, VOCAB = 256 };

static pid_t server_pid;
static int server_port;
static FILE *server_out;

/* Starts the server; reads its "listening on" line (within 300 s: the sanitized JIT is slow). */
static void start_server(void) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  char seed[16], pages[16], page[16];
  snprintf(seed, sizeof seed, "%d", SEED);
  snprintf(pages, sizeof pages, "%d", PAGES);
  snprintf(page, sizeof page, "%d", PAGE);
  server_pid = fork();
  cr_assert_geq(server_pid, 0);
  if (server_pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(loom_test_loom_bin(), loom_test_loom_bin(), "serve", model_path, "--port", "0", "--random-weights", seed, "--kv-pages", pages,
          "--page-size", page, "--max-step-tokens", "24", "--max-batch", "6", "--threads", "2", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  /* raw reads (a FILE's buffer would hide a line from poll) */
  struct pollfd pf = {.fd = fds[0], .events = POLLIN};
  static char seen[8192];
  size_t len = 0;
  time_t t0 = time(NULL);
  const char *key = "listening on http://127.0.0.1:";
  while (!server_port && time(NULL) - t0 < 300 && len + 1 < sizeof seen) {
    if (poll(&pf, 1, 1000) <= 0) continue;
    ssize_t k = read(fds[0], seen + len, sizeof seen - 1 - len);
    if (k <= 0) break;
    len += (size_t)k;
    seen[len] = 0;
    char *at = strstr(seen, key);
    if (at && strchr(at, '\n')) server_port = atoi(at + strlen(key));
  }
  server_out = fdopen(fds[0], "r");
  cr_assert_gt(server_port, 0, "the server did not start: %s", seen);
}

/* The test's .fini: a server still running (the test failed) is killed, so nothing outlives
 * the test (nor holds its output pipe open). */
static void kill_server(void) {
  if (server_pid > 0) {
    kill(server_pid, SIGKILL);
    waitpid(server_pid, NULL, 0);
    server_pid = 0;
  }
}

/* Sends SIGTERM; the server must exit 0 within 60 s and say it stopped. */
static void stop_server(void) {
  cr_assert_eq(kill(server_pid, SIGTERM), 0);
  int status = -1;
  for (int i = 0; i < 600 && waitpid(server_pid, &status, WNOHANG) == 0; i++) usleep(100000);
  if (!WIFEXITED(status)) cr_assert_fail("the server did not stop on SIGTERM"); /* .fini kills it */
  server_pid = 0;
  char rest[4096] = "";
  size_t n = fread(rest, 1, sizeof rest - 1, server_out);
  rest[n] = 0;
  fclose(server_out);
  cr_assert_eq(WEXITSTATUS(status), 0, "exit status %d; output: %s", WEXITSTATUS(status), rest);
  cr_assert(strstr(rest, "stopped"), "no 'stopped' line: %s", rest);
}

static int connect_server(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)server_port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0, "connect: %s", strerror(errno));
  struct timeval tv = {120, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static void send_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return;
    p += k, n -= (size_t)k;
  }
}

/* One HTTP/1.1 request (Connection: close); returns the status; *body the malloc'd body. */
static int http(const char *method, const char *path, const char *body, size_t blen, char **out) {
  int fd = connect_server();
  char head[512];
  int hn = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
                    method, path, blen);
  send_all(fd, head, (size_t)hn);
  send_all(fd, body, blen);
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  ssize_t k;
  while ((k = recv(fd, buf + len, cap - len - 1, 0)) > 0) {
    len += (size_t)k;
    if (len + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  close(fd);
  buf[len] = 0;
  int status = 0;
  sscanf(buf, "HTTP/1.1 %d", &status);
  char *b = strstr(buf, "\r\n\r\n");
  *out = strdup(b ? b + 4 : "");
  free(buf);
  return status;
}

static int post(const char *json, char **out) { return http("POST", "/v1/completions", json, strlen(json), out); }

/* The token ids after the first `"tokens":[` at or after `from`. */
static int parse_tokens(const char *from, int64_t *out, int cap) {
  const char *p = strstr(from, "\"tokens\":[");
  if (!p) return -1;
  p += strlen("\"tokens\":[");
  int n = 0;
  while (*p && *p != ']' && n < cap) {
    out[n++] = strtoll(p, (char **)&p, 10);
    if (*p == ',') p++;
  }
  return n;
}

/* ---- the oracle: the interpreter's greedy decode ------------------------------------------------ */

static loom_graph_module *oracle_model;
static loom_graph_value oracle_weights[64];
static size_t oracle_np;
static bool oracle_set[64]; /* which of oracle_weights hold a value */

static void oracle_open(void) {
  FILE *f = fopen(model_path, "rb");
  cr_assert_not_null(f);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text, f);
  fclose(f);
  loom_source src = {model_path, text, n};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_assert_null(loom_graph_parse(&src, &dl, &oracle_model));
  loom_diag_list_destroy(&dl);
  loom_graph_func *fm = loom_graph_module_find_func(oracle_model, "main");
  oracle_np = fm->nparams;
  for (size_t i = 0; i < oracle_np; i++) {
    const loom_graph_expr *p = fm->params[i];
    const char *name = p->u.var.name;
    const loom_sinfo *si = p->sinfo;
    int64_t shape[4];
    bool weight = strcmp(name, "tokens") && strcmp(name, "positions") && strcmp(name, "seq_ids") && strcmp(name, "ctx_lens") &&
                  strcmp(name, "block_tables") && strcmp(name, "last_index");
    if (!weight) continue;
    bool cache = !strncmp(name, "k_cache", 7) || !strncmp(name, "v_cache", 7);
    for (int k = 0; k < si->ndim; k++) {
      int64_t v = 1;
      if (!loom_sym_is_const(si->dims[k], &v)) v = 1; /* a cache: one page of one slot, never read */
      shape[k] = v;
    }
    cr_assert_null(loom_graph_value_tensor(si->dtype, si->ndim, shape, &oracle_weights[i]));
    oracle_set[i] = true;
    float *w = malloc(oracle_weights[i].t.numel * sizeof *w);
    if (cache) memset(w, 0, oracle_weights[i].t.numel * sizeof *w);
    else loom_serve_random_weight(name, SEED, w, oracle_weights[i].t.numel);
    for (size_t k = 0; k < oracle_weights[i].t.numel; k++) loom_graph_tensor_set_f64(&oracle_weights[i].t, k, w[k]);
    free(w);
  }
}

static void oracle_close(void) {
  for (size_t i = 0; i < oracle_np; i++)
    if (oracle_set[i]) loom_graph_value_free(&oracle_weights[i]);
  loom_graph_module_destroy(oracle_model);
}

/* Greedy decode of `prompt` for `steps` tokens: each step the whole prefix as one sequence
 * with nothing cached. */
static void oracle_decode(const int64_t *prompt, int n, int steps, int64_t *out) {
  loom_graph_func *fm = loom_graph_module_find_func(oracle_model, "main");
  int64_t toks[512];
  memcpy(toks, prompt, (size_t)n * sizeof *toks);
  for (int s = 0; s < steps; s++, n++) {
    loom_graph_value args[64];
    memcpy(args, oracle_weights, sizeof args);
    loom_graph_value own[6];
    int k = 0;
    for (size_t i = 0; i < oracle_np; i++) {
      const char *name = fm->params[i]->u.var.name;
      int64_t shape[2] = {n, 1};
      if (!strcmp(name, "tokens") || !strcmp(name, "positions") || !strcmp(name, "seq_ids")) {
        cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 1, shape, &own[k]));
        for (int j = 0; j < n; j++) loom_graph_tensor_set_i64(&own[k].t, (size_t)j, name[0] == 't' ? toks[j] : name[0] == 'p' ? j : 0);
      } else if (!strcmp(name, "ctx_lens") || !strcmp(name, "last_index")) {
        shape[0] = 1;
        cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 1, shape, &own[k]));
        loom_graph_tensor_set_i64(&own[k].t, 0, name[0] == 'c' ? 0 : n - 1);
      } else if (!strcmp(name, "block_tables")) {
        shape[0] = 1;
        cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, shape, &own[k]));
        loom_graph_tensor_set_i64(&own[k].t, 0, -1);
      } else {
        continue;
      }
      args[i] = own[k++];
    }
    loom_graph_value res;
    loom_status st = loom_graph_eval(oracle_model, "main", oracle_np, args, NULL, &res);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    const loom_graph_tensor *lg = &res.items[0].t;
    int64_t best = 0;
    for (int64_t v = 1; v < VOCAB; v++)
      if (loom_graph_tensor_get_f64(lg, (size_t)v) > loom_graph_tensor_get_f64(lg, (size_t)best)) best = v;
    out[s] = toks[n] = best;
    loom_graph_value_free(&res);
    for (int j = 0; j < k; j++) loom_graph_value_free(&own[j]);
  }
}

/* ---- concurrent clients ------------------------------------------------------------------------- */

typedef struct client {
  pthread_barrier_t *start; /* every client posts at once (or NULL) */
  int64_t prompt[64];
  int n, steps;
  int status;
  int64_t got[64];
  int ngot;
} client;

static void prompt_json(const int64_t *p, int n, char *buf, size_t cap) {
  size_t at = 0;
  at += (size_t)snprintf(buf + at, cap - at, "[");
  for (int i = 0; i < n; i++) at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? "," : "", (long long)p[i]);
  snprintf(buf + at, cap - at, "]");
}

static void *client_main(void *arg) {
  client *c = arg;
  char pj[1024], body[1200], *res;
  prompt_json(c->prompt, c->n, pj, sizeof pj);
  snprintf(body, sizeof body, "{\"prompt\": %s, \"max_tokens\": %d, \"temperature\": 0}", pj, c->steps);
  if (c->start) pthread_barrier_wait(c->start);
  c->status = post(body, &res);
  c->ngot = parse_tokens(res, c->got, 64);
  free(res);
  return NULL;
}

/* 8 concurrent greedy clients, prompts of 1 .. 41 tokens (several prefill chunks of 24), 12 tokens
 * each, every token checked against the interpreter: 48 pages of 4 slots cannot hold all of them
 * at once, so sequences get preempted -- when the server has them in flight together, which the
 * barrier makes likely but a loaded machine can still defeat (a server that finishes one before
 * the next arrives). Returns the server's preemption count after the burst. */
static long long greedy_burst(loom_test_rng *r) {
  enum { NC = 8 };
  static const int lens[NC] = {1, 2, 7, 13, 19, 24, 31, 41};
  client cl[NC];
  pthread_t th[NC];
  pthread_barrier_t start; /* all in flight together: a quick server must not finish one before the next arrives */
  pthread_barrier_init(&start, NULL, NC);
  for (int i = 0; i < NC; i++) {
    cl[i].start = &start;
    cl[i].n = lens[i], cl[i].steps = 12;
    for (int j = 0; j < lens[i]; j++) cl[i].prompt[j] = loom_test_rng_range(r, 0, VOCAB - 1);
    pthread_create(&th[i], NULL, client_main, &cl[i]);
  }
  for (int i = 0; i < NC; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&start);
  for (int i = 0; i < NC; i++) {
    cr_assert_eq(cl[i].status, 200, "client %d: status %d", i, cl[i].status);
    cr_assert_eq(cl[i].ngot, 12, "client %d: %d tokens", i, cl[i].ngot);
    int64_t want[64];
    oracle_decode(cl[i].prompt, cl[i].n, 12, want);
    for (int s = 0; s < 12; s++)
      cr_assert_eq(cl[i].got[s], want[s], "client %d (prompt of %d) token %d: server %lld, interpreter %lld", i, cl[i].n, s,
                   (long long)cl[i].got[s], (long long)want[s]);
  }
  char *res;
  cr_assert_eq(http("GET", "/metrics", "", 0, &res), 200);
  cr_assert(strstr(res, "loom_serve_compilations 1"), "%s", res);
  const char *at = strstr(res, "\nloom_serve_preemptions_total "); /* the sample line, not its # HELP */
  cr_assert_not_null(at, "%s", res);
  long long n = strtoll(at + strlen("\nloom_serve_preemptions_total "), NULL, 10);
  free(res);
  return n;
}

LOOM_TEST(serve_e2e, greedy_equals_interpreter_errors_disconnects_sigterm, .fini = kill_server) {
  start_server();
  oracle_open();
  char *res;
  loom_test_rng r = {loom_test_seed()};
  /* the small cache is meant to preempt: up to three bursts until one did */
  long long preempted = 0;
  for (int burst = 0; burst < 3 && !preempted; burst++) preempted = greedy_burst(&r);
  cr_assert_gt(preempted, 0, "three bursts of 8 clients never preempted: the small cache was meant to");

  /* a list of prompts: one choice each, in order */
  cr_assert_eq(post("{\"prompt\": [[5, 6, 7], [9]], \"max_tokens\": 4, \"temperature\": 0}", &res), 200);
  int64_t got[64], want[64];
  int64_t p0[3] = {5, 6, 7}, p1[1] = {9};
  cr_assert_eq(parse_tokens(res, got, 64), 4);
  oracle_decode(p0, 3, 4, want);
  for (int s = 0; s < 4; s++) cr_assert_eq(got[s], want[s]);
  cr_assert_eq(parse_tokens(strstr(res, "\"index\":1"), got, 64), 4, "%s", res);
  oracle_decode(p1, 1, 4, want);
  for (int s = 0; s < 4; s++) cr_assert_eq(got[s], want[s]);
  cr_assert(strstr(res, "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":8,\"total_tokens\":12}"), "%s", res);
  free(res);

  /* a stream: one event per token, then the finish event and [DONE] */
  cr_assert_eq(post("{\"prompt\": [5, 6, 7], \"max_tokens\": 4, \"temperature\": 0, \"stream\": true}", &res), 200);
  oracle_decode(p0, 3, 4, want);
  const char *at = res;
  for (int s = 0; s < 4; s++) {
    at = strstr(at, "\"token\":");
    cr_assert_not_null(at, "%s", res);
    at += 8;
    cr_assert_eq(strtoll(at, NULL, 10), want[s], "stream token %d: %s", s, res);
  }
  cr_assert(strstr(res, "\"finish_reason\":\"length\"") && strstr(res, "data: [DONE]"), "%s", res);
  free(res);

  /* a stop token ends the choice before it: the first generated token not seen before it */
  int k = 1;
  while (k < 4 && (want[k] == want[0] || (k > 1 && want[k] == want[1]) || (k > 2 && want[k] == want[2]))) k++;
  if (k < 4) {
    char body[256];
    snprintf(body, sizeof body, "{\"prompt\": [5, 6, 7], \"max_tokens\": 4, \"temperature\": 0, \"stop\": [%lld]}", (long long)want[k]);
    cr_assert_eq(post(body, &res), 200);
    cr_assert_eq(parse_tokens(res, got, 64), k, "%s", res);
    cr_assert(strstr(res, "\"finish_reason\":\"stop\""), "%s", res);
    free(res);
  }

  /* seeded sampling is reproducible */
  char *r1, *r2;
  const char *sampled = "{\"prompt\": [1, 2, 3], \"max_tokens\": 16, \"temperature\": 0.9, \"top_k\": 50, \"top_p\": 0.9, \"seed\": 11}";
  cr_assert_eq(post(sampled, &r1), 200);
  cr_assert_eq(post(sampled, &r2), 200);
  int64_t g1[64], g2[64];
  cr_assert_eq(parse_tokens(r1, g1, 64), 16);
  cr_assert_eq(parse_tokens(r2, g2, 64), 16);
  cr_assert_eq(memcmp(g1, g2, sizeof(int64_t) * 16), 0, "%s\n%s", r1, r2);
  free(r1), free(r2);

  /* errors: each an HTTP status and a message that names the problem */
  static const struct {
    const char *method, *path, *body;
    int status;
    const char *msg;
  } errs[] = {
      {"POST", "/v1/completions", "{\"prompt\": [1, 2", 400, "malformed JSON at line 1"},
      {"POST", "/v1/completions", "[1, 2]", 400, "the body must be a JSON object"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"frequency_penalty\": 0}", 400, "unknown field 'frequency_penalty'"},
      {"POST", "/v1/completions", "{\"prompt\": [1, 256]}", 400, "prompt 0 token 1 is 256, outside the vocabulary [0, 256)"},
      {"POST", "/v1/completions", "{\"prompt\": [1, -3]}", 400, "prompt 0 token 1 is -3"},
      {"POST", "/v1/completions", "{\"prompt\": \"hello\"}", 400, "no tokenizer"},
      {"POST", "/v1/completions", "{\"prompt\": [1, 2.5]}", 400, "prompt[1] is not an integer token id"},
      {"POST", "/v1/completions", "{\"max_tokens\": 3}", 400, "prompt is required"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"max_tokens\": 0}", 400, "max_tokens must be at least 1"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"top_p\": 0}", 400, "top_p must be in (0, 1]"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"temperature\": \"hot\"}", 400, "temperature must be a number"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"max_tokens\": 500}", 400, "over the context of 96"},
      {"POST", "/v1/completions", "{\"prompt\": [1], \"prompt\": [2]}", 400, "duplicate object key"},
      {"GET", "/v1/completions", "", 405, "use POST"},
      {"POST", "/metrics", "", 405, "use GET"},
      {"GET", "/nope", "", 404, "no such path: /nope"},
  };
  for (size_t i = 0; i < sizeof errs / sizeof errs[0]; i++) {
    int st = http(errs[i].method, errs[i].path, errs[i].body, strlen(errs[i].body), &res);
    cr_assert_eq(st, errs[i].status, "case %zu: status %d: %s", i, st, res);
    cr_assert(strstr(res, errs[i].msg) && strstr(res, "\"error\""), "case %zu: '%s' not in %s", i, errs[i].msg, res);
    free(res);
  }
  size_t big = (1 << 20) + 10;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  cr_assert_eq(http("POST", "/v1/completions", huge, big, &res), 413);
  cr_assert(strstr(res, "the body is over"), "%s", res);
  free(res);
  free(huge);

  /* a client that disconnects mid-stream is cancelled */
  int fd = connect_server();
  const char *sb = "{\"prompt\": [3, 4], \"max_tokens\": 90, \"temperature\": 0, \"stream\": true}";
  char head[256];
  int hn = snprintf(head, sizeof head, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s", strlen(sb), sb);
  send_all(fd, head, (size_t)hn);
  char first[512];
  cr_assert_gt(recv(fd, first, sizeof first, 0), 0);
  close(fd);
  bool cancelled = false;
  for (int i = 0; i < 200 && !cancelled; i++) {
    usleep(50000);
    cr_assert_eq(http("GET", "/metrics", "", 0, &res), 200);
    cancelled = strstr(res, "loom_serve_cancelled_total 1\n") != NULL && strstr(res, "loom_serve_running 0\n") != NULL;
    free(res);
  }
  cr_assert(cancelled, "the disconnected stream was not cancelled");
  cr_assert_eq(http("GET", "/health", "", 0, &res), 200);
  cr_assert(strstr(res, "\"ok\""));
  free(res);

  oracle_close();
  stop_server();
}

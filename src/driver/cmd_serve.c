/* cmd_serve.c — `loom serve MODEL`: compiles a decoder in the serving form once
 * (docs/serve.md) and serves OpenAI-style completions over HTTP with continuous batching and
 * a paged K/V cache (src/serve/). Stops cleanly on SIGTERM or SIGINT. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "driver/commands.h"
#include "serve/http.h"
#include "serve/serve.h"

/* The default token budget of a step that decodes (--decode-step-tokens). */
#define DECODE_BUDGET 32
#define DECODE_BUDGET_TEXT "32"
/* --step-ratio's default (sched.c; docs/serve.md "The engine" and "What a step costs": at 16
 * clients on GPT-2 small's geometry a step of 16 decodes is already about 1.5x one client's
 * p99 step, so a step with prompt chunks may take little more than that for the inter-token
 * p99 to stay within 2x one client's) */
#define STEP_RATIO 1.2
#define STEP_RATIO_TEXT "1.2"

/* An integer option within [lo, hi], or its default. */
static loom_status int_opt(const loom_cli_args *args, const char *name, int64_t dflt, int64_t lo, int64_t hi, int64_t *out) {
  const char *v = loom_cli_get(args, name);
  *out = dflt;
  if (!v) return LOOM_OK;
  char *end;
  long long x = strtoll(v, &end, 10);
  if (end == v || *end || x < lo || x > hi)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s %s: give an integer in [%lld, %lld]", name, v, (long long)lo, (long long)hi);
  *out = x;
  return LOOM_OK;
}

/* --step-ratio: 0 (off) or a number in [1, 100], or its default. */
static loom_status ratio_opt(const loom_cli_args *args, double *out) {
  const char *v = loom_cli_get(args, "--step-ratio");
  *out = STEP_RATIO;
  if (!v) return LOOM_OK;
  char *end;
  double x = strtod(v, &end);
  if (end == v || *end || !(x == 0 || (x >= 1 && x <= 100)))
    return LOOM_ERROR(INVALID_ARGUMENT, "--step-ratio %s: give 0 (off) or a number in [1, 100]", v);
  *out = x;
  return LOOM_OK;
}

static int run(const loom_cli_args *args) {
  loom_serve_options o = {.model = args->positional[0], .weights = loom_cli_get(args, "--weights"), .log = stdout};
  int64_t port = 0, threads = 0, seed = -1;
  loom_status st = int_opt(args, "--port", 8000, 0, 65535, &port);
  if (!st) st = int_opt(args, "--threads", 0, 0, 1024, &threads);
  if (!st) st = int_opt(args, "--kv-pages", 1024, 1, INT32_MAX, &o.kv_pages);
  if (!st) st = int_opt(args, "--page-size", 16, 1, 4096, &o.page_size);
  if (!st) st = int_opt(args, "--max-batch", 64, 1, 4096, &o.max_batch);
  if (!st) st = int_opt(args, "--max-step-tokens", 256, 1, 1 << 20, &o.max_step_tokens);
  if (!st) st = int_opt(args, "--max-queue", 1024, 1, 1 << 20, &o.max_queue);
  if (!st) st = int_opt(args, "--decode-step-tokens", DECODE_BUDGET, 0, 1 << 20, &o.decode_step_tokens);
  if (!st) st = ratio_opt(args, &o.step_ratio);
  if (!st) st = int_opt(args, "--max-context", 0, 0, INT32_MAX, &o.max_context);
  if (!st) st = int_opt(args, "--random-weights", -1, 0, INT64_MAX, &seed);
  if (!st && o.weights && seed >= 0) st = LOOM_ERROR(INVALID_ARGUMENT, "give --weights or --random-weights, not both");
  o.threads = (uint32_t)threads;
  o.offload = loom_cli_flag(args, "--offload");
  o.profile = loom_cli_flag(args, "--profile");
  o.step_log = loom_cli_get(args, "--step-log");
  o.chunk_by_keys = loom_cli_flag(args, "--chunk-by-keys");
  o.pack_tied = loom_cli_flag(args, "--pack-tied");
  o.random_weights = seed >= 0, o.weight_seed = (uint64_t)seed;
  const char *host = loom_cli_get(args, "--host") ? loom_cli_get(args, "--host") : "127.0.0.1";
  /* SIGTERM / SIGINT are taken by sigwait in the HTTP runner: blocked here, before any thread
   * starts, so every thread inherits the mask */
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, NULL);
  signal(SIGPIPE, SIG_IGN); /* a client that goes away is a failed write, not a signal */
  loom_serve_engine *e = NULL;
  if (!st) st = loom_serve_engine_open(&o, &e);
  if (!st) st = loom_serve_http_run(e, host, (int)port, stdout, &stop);
  loom_serve_engine_close(e);
  if (!st) printf("loom serve: stopped\n");
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_serve = {
    .name = "serve",
    .summary = "serve a decoder over HTTP (OpenAI completions) with continuous batching and a paged KV cache",
    .positional = "MODEL",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){
        {"--port", "N", "TCP port (default 8000; 0: any free port, printed at start)", false},
        {"--host", "ADDR", "IPv4 address to listen on (default 127.0.0.1)", false},
        {"--threads", "N", "kernel threads (default: LOOM_NUM_THREADS or all cores)", false},
        {"--kv-pages", "N", "pages of the paged K/V cache (default 1024)", false},
        {"--page-size", "N", "tokens per page (default 16)", false},
        {"--max-batch", "N", "sequences in one step at most (default 64)", false},
        {"--max-step-tokens", "N", "tokens in one step at most; longer prompts are prefilled in chunks (default 256)", false},
        {"--decode-step-tokens", "N",
         "tokens per step while D sequences decode: every decode, then prompt chunks in what is left, at least D (default " DECODE_BUDGET_TEXT
         "; 0: only --max-step-tokens)",
         false},
        {"--chunk-by-keys", NULL,
         "with --decode-step-tokens: a prompt chunk whose tokens read more cached keys than the decodes' mean counts as its keys in "
         "units of that mean (at least one token a step)",
         false},
        {"--step-ratio", "R",
         "while sequences decode, cut prompt chunks so that a step's time, predicted from the steps measured so far, stays within "
         "R times a decode-only step of every sequence held, running or waiting (default " STEP_RATIO_TEXT "; 0: off)",
         false},
        {"--max-queue", "N", "waiting sequences at most before requests get 503 (default 1024)", false},
        {"--max-context", "N", "positions per sequence at most (default: the model's position table, else the cache)", false},
        {"--pack-tied", NULL,
         "lay a tied LM head's weight (the embedding it also gathers) out in panels too: faster steps of many sequences, one more "
         "copy of that weight in memory",
         false},
        {"--weights", "FILE", "safetensors file holding every weight parameter by name", false},
        {"--random-weights", "SEED", "seeded random weights instead (tests and benchmarks)", false},
        {"--offload", NULL, "hand large matmuls to BLAS (the offload pass, libcall/)", false},
        {"--profile", NULL, "time every instruction and kernel; printed when the server stops", false},
        {"--step-log", "FILE", "write one line per step: its time (ms), decodes, their keys, prompt tokens, their keys", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "MODEL is a .loom or .onnx decoder in the serving form (docs/serve.md). The model is compiled once;\n"
               "every step of every batch shape runs on that one compilation. POST /v1/completions takes\n"
               "{\"prompt\": [ids] or [[ids], ...], \"max_tokens\", \"temperature\", \"top_k\", \"top_p\", \"seed\", \"stop\": [ids],\n"
               "\"stream\"}; GET /health; GET /metrics (Prometheus).",
};

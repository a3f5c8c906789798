/* serve.h — `loom serve`'s engine: one compiled decoder in the serving form (docs/serve.md),
 * a paged K/V cache the engine owns, and one engine thread that runs continuous batching
 * (serve_internal.h: pages, scheduler, sampler) over requests submitted from any thread.
 *
 *     loom_serve_engine *e;
 *     loom_serve_engine_open(&opts, &e);                 // compiles once, loads weights, starts
 *     loom_serve_req *r;
 *     loom_serve_submit(e, prompts, lens, 1, &params, &r);  // 400-type errors: INVALID_ARGUMENT
 *     while (!done) { loom_serve_req_wait(r, seen, 100); ... loom_serve_req_read(r, 0, ...) }
 *     loom_serve_req_release(r);
 *     loom_serve_engine_close(e);
 *
 * Every function here is thread-safe except open and close. http.c is the HTTP front. */
#ifndef LOOM_SERVE_SERVE_H
#define LOOM_SERVE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"

/* What `loom serve` is started with. */
typedef struct loom_serve_options {
  const char *model;        /* .loom or .onnx in the serving form */
  const char *weights;      /* safetensors file with every weight parameter by name, or NULL */
  bool random_weights;      /* without a file: seeded random weights (tests, benchmarks) */
  uint64_t weight_seed;     /* their seed */
  uint32_t threads;         /* kernel threads (0: the runtime's default) */
  int64_t kv_pages;         /* pages of the K/V cache */
  int64_t page_size;        /* slots (tokens) per page */
  int64_t max_batch;        /* sequences per step at most */
  int64_t max_step_tokens;  /* tokens per step at most (prefill chunking) */
  int64_t decode_step_tokens; /* tokens per step while sequences decode: decodes, then prompt chunks (0: no budget) */
  bool chunk_by_keys;       /* count prompt chunks against that budget by the keys they read (sched.c) */
  double step_ratio;        /* > 0: a step with prompt chunks is predicted to take at most this times a decode-only step
                             * of every sequence held (running or waiting; sched.c); 0: off. `loom serve`'s default is 1.2 */
  bool pack_tied;           /* --pack-tied: the tied LM head gets its own packed copy (loom_compile_options.pack_tied) */
  int64_t max_queue;        /* sequences waiting at most before new requests get 503 */
  int64_t max_context;      /* positions per sequence at most (0: the model's position table, else the cache) */
  bool offload;             /* matmuls to BLAS above the measured size (the offload pass, libcall/) */
  bool profile;             /* time every instruction and kernel; printed to `log` at close */
  const char *step_log;     /* a file that gets one line per step (what it held, what it took), or NULL */
  FILE *log;                /* start-up and shutdown lines (NULL: quiet) */
} loom_serve_options;

/* A request's sampling and stopping parameters (validated by loom_serve_submit). */
typedef struct loom_serve_params {
  int64_t max_tokens;   /* tokens to generate (>= 1) */
  double temperature;   /* 0: greedy */
  int64_t top_k;        /* 0: no limit */
  double top_p;         /* (0, 1] */
  uint64_t seed;        /* the sampling stream's seed */
  bool has_seed;        /* false: a seed from the request's id */
  const int64_t *stop;  /* token ids that end a sequence (not included in its output) */
  size_t nstop;
} loom_serve_params;

/* Why a choice ended. */
typedef enum loom_serve_finish {
  LOOM_SERVE_RUNNING = 0,   /* not yet */
  LOOM_SERVE_LENGTH,        /* max_tokens or the context's end */
  LOOM_SERVE_STOP,          /* a stop token */
  LOOM_SERVE_CANCELLED,     /* the client went away, or the server is shutting down */
  LOOM_SERVE_FAILED,        /* the model call failed (the message is in the request) */
} loom_serve_finish;

typedef struct loom_serve_engine loom_serve_engine;
typedef struct loom_serve_req loom_serve_req;

/* Compiles the model once, binds its serving interface (errors name the parameter), loads the
 * weights, allocates the cache, runs one probe step (which tells the vocabulary) and starts the
 * engine thread. */
LOOM_MUST_USE loom_status loom_serve_engine_open(const loom_serve_options *o, loom_serve_engine **out);
/* Cancels what is in flight, stops the thread, frees everything. Requests still held by
 * callers stay readable (finished, CANCELLED) until they release them. */
void loom_serve_engine_close(loom_serve_engine *e);
/* Stops admitting: new submissions fail with UNAVAILABLE; in-flight requests are cancelled. */
void loom_serve_engine_shutdown(loom_serve_engine *e);
/* The model's vocabulary and the longest sequence (prompt + generated) a request may ask for. */
int64_t loom_serve_vocab(const loom_serve_engine *e);
int64_t loom_serve_max_context(const loom_serve_engine *e);
const char *loom_serve_model_name(const loom_serve_engine *e);

/* Submits `n` prompts (one choice each). INVALID_ARGUMENT names what is wrong (a token out of
 * the vocabulary with its index and value, a prompt plus max_tokens over the context);
 * UNAVAILABLE when the queue is full or the engine shuts down. The caller owns *out. */
LOOM_MUST_USE loom_status loom_serve_submit(loom_serve_engine *e, const int64_t *const *prompts, const size_t *lens, size_t n,
                                           const loom_serve_params *p, loom_serve_req **out);
/* Waits until some choice c has more than seen[c] tokens or has finished beyond what the
 * caller saw (finished[c] false), or `timeout_ms` passes. Returns true when all choices are
 * finished. */
bool loom_serve_req_wait(loom_serve_req *r, const int64_t *seen, const bool *finished, int timeout_ms);
/* Copies choice c's generated tokens from `from` (at most cap) into buf; returns how many;
 * *finish is its state, *prompt_len its prompt's length. */
int64_t loom_serve_req_read(loom_serve_req *r, size_t c, int64_t from, int64_t *buf, int64_t cap, loom_serve_finish *finish,
                            int64_t *prompt_len);
size_t loom_serve_req_choices(const loom_serve_req *r);
uint64_t loom_serve_req_id(const loom_serve_req *r);
/* The failure message of a FAILED request (valid while it is held). */
const char *loom_serve_req_error(loom_serve_req *r);
/* Marks the request cancelled (the client went away); its pages go back at the next step. */
void loom_serve_req_cancel(loom_serve_req *r);
void loom_serve_req_release(loom_serve_req *r);

/* Counts HTTP answers by status (the metrics' requests). */
void loom_serve_count_response(loom_serve_engine *e, int http_status);
/* The Prometheus text of the metrics. */
void loom_serve_metrics_text(loom_serve_engine *e, loom_strbuf *sb);

/* The seeded random value of weight `name` (what --random-weights makes): gains (names with
 * "_g") 1, biases ("b_" prefix, "_b" in the name) 0, the rest normal with standard deviation
 * 0.1, drawn in order from a stream seeded by the seed and the name. The e2e test builds the
 * interpreter's weights with it. */
void loom_serve_random_weight(const char *name, uint64_t seed, float *out, size_t n);

#endif

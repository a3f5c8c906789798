/* http.c — `loom serve`'s HTTP front, on GNU libmicrohttpd (HTTP/1.1, a thread per
 * connection) and jansson (JSON): POST /v1/completions in the OpenAI shape with token-id
 * prompts (server-sent events with "stream": true), GET /health, GET /metrics. Handlers block
 * on their request (serve.h) while the engine thread works; a client that goes away is
 * noticed (a failed write when streaming, a closed socket while waiting) and its request
 * cancelled. Every error is an HTTP status with a JSON body {"error": {"message", "type",
 * "param"}}. Linked into the `loom` program only: libloom and loom-run do not link
 * libmicrohttpd. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "serve/http.h"

enum { MAX_BODY = 1 << 20, MAX_PROMPTS = 64, MAX_STOP_IDS = 64 };

/* One connection's upload (the POST body as it arrives). */
typedef struct upload {
  char *buf;      /* the body so far */
  size_t len;     /* its length */
  bool too_big;   /* over MAX_BODY: answered 413 */
} upload;

/* A streamed response: what the reader callback has sent and what it owes. */
typedef struct stream {
  loom_serve_engine *e;
  loom_serve_req *r;
  int64_t seen[MAX_PROMPTS];   /* tokens sent per choice */
  bool fin[MAX_PROMPTS];       /* finish event sent per choice */
  char *pending;               /* bytes to send (events), malloc'd */
  size_t npending, sent;       /* its length; how much of it went out */
  bool done;                   /* [DONE] queued */
  long created;                /* the response's "created" */
} stream;

static enum MHD_Result send_text(struct MHD_Connection *c, loom_serve_engine *e, int status, const char *type, const char *text) {
  struct MHD_Response *res = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!res) return MHD_NO;
  MHD_add_response_header(res, "Content-Type", type);
  enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, res);
  MHD_destroy_response(res);
  loom_serve_count_response(e, status);
  return ok;
}

static enum MHD_Result send_json(struct MHD_Connection *c, loom_serve_engine *e, int status, json_t *j) {
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  enum MHD_Result ok = text ? send_text(c, e, status, "application/json", text) : MHD_NO;
  free(text);
  return ok;
}

static enum MHD_Result send_error(struct MHD_Connection *c, loom_serve_engine *e, int status, const char *param, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *type = status == 400 || status == 413 ? "invalid_request_error" : status == 404 || status == 405 ? "not_found_error"
                     : status == 503                ? "overloaded_error"
                                                    : "server_error";
  json_t *j = json_pack("{s:{s:s, s:s, s:s?, s:n}}", "error", "message", msg, "type", type, "param", param, "code");
  return send_json(c, e, status, j);
}

static const char *finish_name(loom_serve_finish f) {
  switch (f) {
  case LOOM_SERVE_LENGTH: return "length";
  case LOOM_SERVE_STOP: return "stop";
  case LOOM_SERVE_CANCELLED: return "cancelled";
  case LOOM_SERVE_FAILED: return "error";
  default: return NULL;
  }
}

/* ---- the request body ---------------------------------------------------------------------- */

/* A parsed completion request. */
typedef struct completion {
  int64_t *ids;                /* every prompt's tokens, one after another */
  const int64_t *prompts[MAX_PROMPTS];
  size_t lens[MAX_PROMPTS];
  size_t n;                    /* prompts */
  int64_t stop[MAX_STOP_IDS];
  loom_serve_params p;
  bool stream;
} completion;

/* An integer field; 400 naming it otherwise. */
static bool int_field(json_t *v, const char *name, int64_t *out, char *err, size_t cap) {
  if (!json_is_integer(v)) {
    snprintf(err, cap, "%s must be an integer", name);
    return false;
  }
  *out = (int64_t)json_integer_value(v);
  return true;
}

static bool num_field(json_t *v, const char *name, double *out, char *err, size_t cap) {
  if (!json_is_number(v)) {
    snprintf(err, cap, "%s must be a number", name);
    return false;
  }
  *out = json_number_value(v);
  return true;
}

/* A list of token ids. */
static bool id_list(json_t *a, const char *name, int64_t *out, size_t *n, size_t cap, char *err, size_t ecap) {
  size_t i;
  json_t *x;
  if (json_array_size(a) > cap) {
    snprintf(err, ecap, "%s has %zu token ids; at most %zu", name, json_array_size(a), cap);
    return false;
  }
  json_array_foreach(a, i, x) {
    if (!json_is_integer(x)) {
      snprintf(err, ecap, "%s[%zu] is not an integer token id", name, i);
      return false;
    }
    out[i] = (int64_t)json_integer_value(x);
  }
  *n = json_array_size(a);
  return true;
}

/* Reads the body into *c; on failure writes the message and the offending field. */
static bool parse_completion(const char *body, size_t len, completion *c, char *err, size_t ecap, const char **param) {
  memset(c, 0, sizeof *c);
  c->p = (loom_serve_params){.max_tokens = 16, .temperature = 1.0, .top_k = 0, .top_p = 1.0, .stop = c->stop};
  *param = NULL;
  json_error_t je;
  json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
  if (!root) {
    snprintf(err, ecap, "malformed JSON at line %d, column %d: %s", je.line, je.column, je.text);
    return false;
  }
  bool ok = json_is_object(root);
  if (!ok) snprintf(err, ecap, "the body must be a JSON object");
  const char *key;
  json_t *v;
  size_t total = 0;
  json_object_foreach(root, key, v) {
    if (!ok) break;
    *param = key;
    if (!strcmp(key, "prompt")) {
      if (!json_is_array(v) || !json_array_size(v)) {
        snprintf(err, ecap, "prompt must be a non-empty list of token ids, or a list of such lists (this server has no tokenizer)");
        ok = false;
        break;
      }
      bool nested = json_is_array(json_array_get(v, 0));
      size_t np = nested ? json_array_size(v) : 1;
      if (np > MAX_PROMPTS) {
        snprintf(err, ecap, "prompt holds %zu prompts; at most %d", np, MAX_PROMPTS);
        ok = false;
        break;
      }
      for (size_t i = 0; i < np; i++) {
        json_t *a = nested ? json_array_get(v, i) : v;
        if (!json_is_array(a)) {
          snprintf(err, ecap, "prompt[%zu] is not a list of token ids", i);
          ok = false;
          break;
        }
        total += json_array_size(a);
      }
      if (!ok) break;
      c->ids = malloc((total ? total : 1) * sizeof *c->ids);
      if (!c->ids) {
        snprintf(err, ecap, "out of memory");
        ok = false;
        break;
      }
      size_t at = 0;
      for (size_t i = 0; i < np && ok; i++) {
        json_t *a = nested ? json_array_get(v, i) : v;
        char name[32];
        snprintf(name, sizeof name, nested ? "prompt[%zu]" : "prompt", i);
        c->prompts[i] = c->ids + at;
        ok = id_list(a, name, c->ids + at, &c->lens[i], total - at, err, ecap);
        at += c->lens[i];
      }
      c->n = np;
    } else if (!strcmp(key, "max_tokens")) {
      ok = int_field(v, key, &c->p.max_tokens, err, ecap);
    } else if (!strcmp(key, "temperature")) {
      ok = num_field(v, key, &c->p.temperature, err, ecap);
    } else if (!strcmp(key, "top_k")) {
      ok = int_field(v, key, &c->p.top_k, err, ecap);
    } else if (!strcmp(key, "top_p")) {
      ok = num_field(v, key, &c->p.top_p, err, ecap);
    } else if (!strcmp(key, "seed")) {
      int64_t s = 0;
      ok = json_is_null(v) || int_field(v, key, &s, err, ecap);
      c->p.seed = (uint64_t)s, c->p.has_seed = !json_is_null(v);
    } else if (!strcmp(key, "stop")) {
      if (json_is_integer(v)) c->stop[0] = (int64_t)json_integer_value(v), c->p.nstop = 1;
      else if (json_is_array(v)) ok = id_list(v, "stop", c->stop, &c->p.nstop, MAX_STOP_IDS, err, ecap);
      else if (!json_is_null(v)) ok = false, snprintf(err, ecap, "stop must be a token id or a list of token ids");
    } else if (!strcmp(key, "stream")) {
      ok = json_is_boolean(v);
      if (!ok) snprintf(err, ecap, "stream must be true or false");
      c->stream = json_is_true(v);
    } else if (!strcmp(key, "n")) {
      ok = json_is_integer(v) && json_integer_value(v) == 1;
      if (!ok) snprintf(err, ecap, "n must be 1 (give several prompts for several completions)");
    } else if (!strcmp(key, "model") || !strcmp(key, "user")) {
      ok = json_is_string(v) || json_is_null(v);
      if (!ok) snprintf(err, ecap, "%s must be a string", key);
    } else {
      snprintf(err, ecap, "unknown field '%s' (known: prompt, max_tokens, temperature, top_k, top_p, seed, stop, stream, n, model, user)", key);
      ok = false;
    }
  }
  /* the offending field, in a static spelling (the key's memory goes with root) */
  static const char *const names[] = {"prompt", "max_tokens", "temperature", "top_k", "top_p", "seed", "stop", "stream", "n", "model", "user"};
  const char *field = NULL;
  for (size_t i = 0; !ok && *param && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(*param, names[i])) field = names[i];
  if (ok && !c->n) {
    field = "prompt";
    snprintf(err, ecap, "prompt is required: a list of token ids");
    ok = false;
  }
  *param = ok ? NULL : field;
  json_decref(root);
  return ok;
}

/* ---- responses -------------------------------------------------------------------------------- */

/* Whether the client closed its end (a read of 0 bytes, or an error other than "try later"). */
static bool client_gone(struct MHD_Connection *conn) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci) return false;
  struct pollfd pf = {.fd = ci->connect_fd, .events = POLLIN};
  if (poll(&pf, 1, 0) <= 0) return false;
  if (pf.revents & (POLLHUP | POLLERR)) return true;
  char b;
  ssize_t k = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  return k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static enum MHD_Result answer_whole(struct MHD_Connection *conn, loom_serve_engine *e, loom_serve_req *r) {
  size_t n = loom_serve_req_choices(r);
  int64_t seen[MAX_PROMPTS] = {0};
  bool fin[MAX_PROMPTS] = {0};
  while (!loom_serve_req_wait(r, seen, fin, 100)) {
    if (client_gone(conn)) {
      loom_serve_req_cancel(r);
      loom_serve_req_release(r);
      return MHD_NO; /* nobody to answer */
    }
  }
  json_t *choices = json_array();
  int64_t ptoks = 0, gtoks = 0;
  bool failed = false;
  for (size_t c = 0; c < n; c++) {
    json_t *toks = json_array();
    loom_serve_finish f = LOOM_SERVE_RUNNING;
    int64_t buf[256], from = 0, got, plen = 0;
    while ((got = loom_serve_req_read(r, c, from, buf, 256, &f, &plen)) > 0) {
      for (int64_t i = 0; i < got; i++) json_array_append_new(toks, json_integer(buf[i]));
      from += got;
    }
    ptoks += plen, gtoks += from;
    failed |= f == LOOM_SERVE_FAILED || f == LOOM_SERVE_CANCELLED;
    json_array_append_new(choices, json_pack("{s:I, s:s, s:o, s:n, s:s}", "index", (json_int_t)c, "text", "", "tokens", toks, "logprobs",
                                             "finish_reason", finish_name(f)));
  }
  if (failed) {
    json_decref(choices);
    const char *why = loom_serve_req_error(r);
    enum MHD_Result ok = send_error(conn, e, *why ? 500 : 503, NULL, "%s", *why ? why : "the request was cancelled: the server is shutting down");
    loom_serve_req_release(r);
    return ok;
  }
  char id[64];
  snprintf(id, sizeof id, "cmpl-%llu", (unsigned long long)loom_serve_req_id(r));
  json_t *j = json_pack("{s:s, s:s, s:I, s:s, s:o, s:{s:I, s:I, s:I}}", "id", id, "object", "text_completion", "created", (json_int_t)time(NULL),
                        "model", loom_serve_model_name(e), "choices", choices, "usage", "prompt_tokens", (json_int_t)ptoks,
                        "completion_tokens", (json_int_t)gtoks, "total_tokens", (json_int_t)(ptoks + gtoks));
  loom_serve_req_release(r);
  return send_json(conn, e, 200, j);
}

/* Appends one server-sent event holding `j` (consumed). */
static void push_event(stream *s, json_t *j) {
  char *text = json_dumps(j, JSON_COMPACT);
  json_decref(j);
  if (!text) return;
  size_t k = strlen(text);
  char *p = realloc(s->pending, s->npending + k + 8);
  if (p) {
    s->pending = p;
    memcpy(p + s->npending, "data: ", 6);
    memcpy(p + s->npending + 6, text, k);
    memcpy(p + s->npending + 6 + k, "\n\n", 2);
    s->npending += k + 8;
  }
  free(text);
}

static json_t *event(stream *s, size_t c, json_t *token, const char *finish) {
  char id[64];
  snprintf(id, sizeof id, "cmpl-%llu", (unsigned long long)loom_serve_req_id(s->r));
  return json_pack("{s:s, s:s, s:I, s:s, s:[{s:I, s:s, s:o, s:n, s:s?}]}", "id", id, "object", "text_completion", "created",
                   (json_int_t)s->created, "model", loom_serve_model_name(s->e), "choices", "index", (json_int_t)c, "text", "", "token", token,
                   "logprobs", "finish_reason", finish);
}

/* libmicrohttpd's content reader: the next events, waiting for tokens when there are none. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  stream *s = cls;
  size_t n = loom_serve_req_choices(s->r);
  while (s->sent == s->npending) {
    s->sent = s->npending = 0;
    if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
    bool all = true;
    for (size_t c = 0; c < n; c++) {
      int64_t toks[64], plen;
      loom_serve_finish f;
      int64_t got = loom_serve_req_read(s->r, c, s->seen[c], toks, 64, &f, &plen);
      for (int64_t i = 0; i < got; i++) push_event(s, event(s, c, json_integer(toks[i]), NULL));
      s->seen[c] += got;
      if (f != LOOM_SERVE_RUNNING && !s->fin[c]) {
        push_event(s, event(s, c, json_null(), finish_name(f)));
        s->fin[c] = true;
      }
      all &= s->fin[c];
    }
    if (all) {
      const char *done = "data: [DONE]\n\n";
      char *p = realloc(s->pending, s->npending + strlen(done));
      if (p) memcpy(p + s->npending, done, strlen(done)), s->pending = p, s->npending += strlen(done);
      s->done = true;
    }
    if (s->npending == 0) loom_serve_req_wait(s->r, s->seen, s->fin, 1000);
  }
  size_t k = s->npending - s->sent < max ? s->npending - s->sent : max;
  memcpy(buf, s->pending + s->sent, k);
  s->sent += k;
  return (ssize_t)k;
}

/* The response is gone (sent, or the client went away): cancel what still runs. */
static void stream_free(void *cls) {
  stream *s = cls;
  loom_serve_req_cancel(s->r);
  loom_serve_req_release(s->r);
  free(s->pending);
  free(s);
}

static enum MHD_Result answer_stream(struct MHD_Connection *conn, loom_serve_engine *e, loom_serve_req *r) {
  stream *s = calloc(1, sizeof *s);
  if (!s) {
    loom_serve_req_cancel(r);
    loom_serve_req_release(r);
    return send_error(conn, e, 500, NULL, "out of memory");
  }
  s->e = e, s->r = r, s->created = (long)time(NULL);
  struct MHD_Response *res = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_free);
  if (!res) {
    stream_free(s);
    return MHD_NO;
  }
  MHD_add_response_header(res, "Content-Type", "text/event-stream");
  MHD_add_response_header(res, "Cache-Control", "no-cache");
  enum MHD_Result ok = MHD_queue_response(conn, 200, res);
  MHD_destroy_response(res);
  loom_serve_count_response(e, 200);
  return ok;
}

static enum MHD_Result completions(struct MHD_Connection *conn, loom_serve_engine *e, const upload *u) {
  completion c;
  char err[1024];
  const char *param;
  if (!parse_completion(u->buf ? u->buf : "", u->len, &c, err, sizeof err, &param)) {
    free(c.ids);
    return send_error(conn, e, 400, param, "%s", err);
  }
  loom_serve_req *r;
  loom_status st = loom_serve_submit(e, c.prompts, c.lens, c.n, &c.p, &r);
  free(c.ids);
  if (st) {
    int code = loom_status_code(st) == LOOM_CODE_UNAVAILABLE ? 503 : loom_status_code(st) == LOOM_CODE_INVALID_ARGUMENT ? 400 : 500;
    enum MHD_Result ok = send_error(conn, e, code, NULL, "%s", loom_status_message(st));
    loom_status_free(st);
    return ok;
  }
  return c.stream ? answer_stream(conn, e, r) : answer_whole(conn, e, r);
}

/* ---- routing ------------------------------------------------------------------------------------ */

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method, const char *version,
                              const char *data, size_t *size, void **con_cls) {
  (void)version;
  loom_serve_engine *e = cls;
  bool post = !strcmp(method, "POST");
  if (!*con_cls) { /* the headers: start the upload */
    upload *u = calloc(1, sizeof *u);
    if (!u) return MHD_NO;
    *con_cls = u;
    return MHD_YES;
  }
  upload *u = *con_cls;
  if (*size) { /* a piece of the body */
    if (!u->too_big && u->len + *size <= MAX_BODY) {
      char *p = realloc(u->buf, u->len + *size + 1);
      if (!p) return MHD_NO;
      memcpy(p + u->len, data, *size);
      u->buf = p, u->len += *size, p[u->len] = 0;
    } else {
      u->too_big = true;
    }
    *size = 0;
    return MHD_YES;
  }
  if (!strcmp(url, "/v1/completions")) {
    if (!post) return send_error(conn, e, 405, NULL, "%s %s: use POST", method, url);
    if (u->too_big) return send_error(conn, e, 413, NULL, "the body is over %d bytes", MAX_BODY);
    return completions(conn, e, u);
  }
  if (!strcmp(url, "/health") || !strcmp(url, "/metrics")) {
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) return send_error(conn, e, 405, NULL, "%s %s: use GET", method, url);
    if (!strcmp(url, "/health")) return send_text(conn, e, 200, "application/json", "{\"status\":\"ok\"}");
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_serve_metrics_text(e, &sb);
    enum MHD_Result ok = send_text(conn, e, 200, "text/plain; version=0.0.4", loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    return ok;
  }
  return send_error(conn, e, 404, NULL, "no such path: %s (POST /v1/completions, GET /health, GET /metrics)", url);
}

static void completed(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode why) {
  (void)cls, (void)conn, (void)why;
  upload *u = *con_cls;
  if (u) free(u->buf), free(u);
  *con_cls = NULL;
}

loom_status loom_serve_http_run(loom_serve_engine *e, const char *host, int port, FILE *out, const sigset_t *stop_signals) {
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  const char *h = !strcmp(host, "localhost") ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, h, &sa.sin_addr) != 1) return LOOM_ERROR(INVALID_ARGUMENT, "--host '%s' is not an IPv4 address", host);
  if (port < 0 || port > 65535) return LOOM_ERROR(INVALID_ARGUMENT, "--port %d is not a port (0 .. 65535; 0: any free one)", port);
  struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, (uint16_t)port, NULL,
                                          NULL, handle, e, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED, completed,
                                          NULL, MHD_OPTION_CONNECTION_LIMIT, (unsigned)512, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60,
                                          MHD_OPTION_END);
  if (!d) return LOOM_ERROR(IO_ERROR, "cannot listen on %s:%d: %s", host, port, strerror(errno));
  const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  fprintf(out, "loom serve: listening on http://%s:%u\n", h, di ? (unsigned)di->port : (unsigned)port);
  fflush(out);
  int sig = 0;
  sigwait(stop_signals, &sig);
  fprintf(out, "loom serve: %s: stopping\n", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  fflush(out);
  loom_serve_engine_shutdown(e); /* in-flight requests end CANCELLED; new ones get 503 */
  MHD_stop_daemon(d);
  return LOOM_OK;
}

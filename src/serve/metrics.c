/* metrics.c — counters and histograms of `loom serve` in the Prometheus text format (version
 * 0.0.4): each metric's HELP and TYPE lines, histograms as cumulative `_bucket{le=...}` series
 * with `_sum` and `_count`. */
#include <string.h>

#include "serve/metrics.h"

static const int statuses[LOOM_SERVE_NSTATUS] = {200, 400, 404, 405, 413, 500, 503, 408};

static void hist_init(loom_serve_hist *h, const char *name, const char *help, const double *bounds, int nb) {
  memset(h, 0, sizeof *h);
  h->name = name, h->help = help, h->nb = nb;
  memcpy(h->bounds, bounds, (size_t)nb * sizeof *bounds);
}

void loom_serve_metrics_init(loom_serve_metrics *m) {
  memset(m, 0, sizeof *m);
  static const double batch[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  static const double ttft[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  static const double itl[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
  static const double toks[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  hist_init(&m->batch, "loom_serve_batch_size", "sequences in one engine step", batch, 9);
  hist_init(&m->step_tokens, "loom_serve_step_tokens", "tokens in one engine step (decodes and prefill chunks)", toks, 11);
  hist_init(&m->step, "loom_serve_step_seconds", "time of one engine step: model call, cache writes, sampling", itl, 14);
  hist_init(&m->ttft, "loom_serve_time_to_first_token_seconds", "from a request's submission to a choice's first token", ttft, 14);
  hist_init(&m->itl, "loom_serve_inter_token_latency_seconds", "between two tokens of one choice", itl, 14);
}

void loom_serve_metrics_destroy(loom_serve_metrics *m) { (void)m; }

void loom_serve_hist_add(loom_serve_hist *h, double v) {
  int b = 0;
  while (b < h->nb && v > h->bounds[b]) b++;
  h->counts[b]++;
  h->sum += v;
  h->count++;
}

void loom_serve_metrics_count_status(loom_serve_metrics *m, int status) {
  int i = 0;
  while (i < LOOM_SERVE_NSTATUS && statuses[i] != status) i++;
  m->responses[i]++;
}

static void counter(loom_strbuf *sb, const char *name, const char *help, const char *type, double v) {
  loom_strbuf_printf(sb, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void hist(loom_strbuf *sb, const loom_serve_hist *h) {
  loom_strbuf_printf(sb, "# HELP %s %s\n# TYPE %s histogram\n", h->name, h->help, h->name);
  uint64_t c = 0;
  for (int b = 0; b < h->nb; b++) {
    c += h->counts[b];
    loom_strbuf_printf(sb, "%s_bucket{le=\"%g\"} %llu\n", h->name, h->bounds[b], (unsigned long long)c);
  }
  loom_strbuf_printf(sb, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.17g\n%s_count %llu\n", h->name, (unsigned long long)h->count, h->name, h->sum,
                     h->name, (unsigned long long)h->count);
}

void loom_serve_metrics_print(const loom_serve_metrics *m, const loom_serve_metrics_gauges *g, loom_strbuf *sb) {
  loom_strbuf_puts(sb, "# HELP loom_serve_requests_total HTTP answers by status\n# TYPE loom_serve_requests_total counter\n");
  for (int i = 0; i <= LOOM_SERVE_NSTATUS; i++) {
    if (i < LOOM_SERVE_NSTATUS) loom_strbuf_printf(sb, "loom_serve_requests_total{code=\"%d\"} %llu\n", statuses[i], (unsigned long long)m->responses[i]);
    else loom_strbuf_printf(sb, "loom_serve_requests_total{code=\"other\"} %llu\n", (unsigned long long)m->responses[i]);
  }
  counter(sb, "loom_serve_prompt_tokens_total", "prompt tokens submitted", "counter", (double)m->prompt_tokens);
  counter(sb, "loom_serve_generated_tokens_total", "tokens generated", "counter", (double)m->generated_tokens);
  counter(sb, "loom_serve_steps_total", "engine steps (model calls)", "counter", (double)m->steps);
  counter(sb, "loom_serve_failed_steps_total", "engine steps whose model call failed", "counter", (double)m->failed_steps);
  counter(sb, "loom_serve_cancelled_total", "requests cancelled by their client", "counter", (double)m->cancelled);
  counter(sb, "loom_serve_preemptions_total", "sequences preempted for pages (recomputed later)", "counter", (double)g->preemptions);
  counter(sb, "loom_serve_queue_depth", "sequences waiting", "gauge", (double)g->waiting);
  counter(sb, "loom_serve_running", "sequences running", "gauge", (double)g->running);
  counter(sb, "loom_serve_kv_pages_used", "pages of the K/V cache in use", "gauge", (double)g->pages_used);
  counter(sb, "loom_serve_kv_pages_total", "pages of the K/V cache", "gauge", (double)g->pages_total);
  counter(sb, "loom_serve_compilations", "compilations of the model since start (every shape runs on one)", "gauge", 1);
  counter(sb, "loom_serve_compile_seconds", "time of that compilation", "gauge", m->compile_seconds);
  hist(sb, &m->batch);
  hist(sb, &m->step_tokens);
  hist(sb, &m->step);
  hist(sb, &m->ttft);
  hist(sb, &m->itl);
}

/* metrics.h — `loom serve`'s counters and histograms, printed as Prometheus text
 * (GET /metrics). Not thread-safe: the engine updates and prints them under its lock. */
#ifndef LOOM_SERVE_METRICS_H
#define LOOM_SERVE_METRICS_H

#include <stdint.h>

#include "base/strbuf.h"

enum { LOOM_SERVE_HIST_MAX = 24 };

/* A cumulative histogram with fixed upper bounds (the last bucket, +Inf, is implicit). */
typedef struct loom_serve_hist {
  const char *name, *help;                 /* metric name and its HELP line */
  int nb;                                  /* bounds */
  double bounds[LOOM_SERVE_HIST_MAX];      /* upper bounds, increasing */
  uint64_t counts[LOOM_SERVE_HIST_MAX + 1]; /* per bucket (not cumulative); [nb] is +Inf */
  double sum;                              /* of the observations */
  uint64_t count;                          /* observations */
} loom_serve_hist;

/* HTTP statuses counted separately (the rest go to "other"). */
enum { LOOM_SERVE_NSTATUS = 8 };

typedef struct loom_serve_metrics {
  uint64_t prompt_tokens;      /* prompt tokens submitted */
  uint64_t generated_tokens;   /* tokens generated */
  uint64_t steps;              /* model calls of the engine */
  uint64_t failed_steps;       /* model calls that failed */
  uint64_t cancelled;          /* requests cancelled by their client */
  uint64_t responses[LOOM_SERVE_NSTATUS + 1]; /* by status (statuses[]), then other */
  double compile_seconds;      /* the one compilation's time */
  loom_serve_hist batch;       /* sequences per step */
  loom_serve_hist step_tokens; /* tokens per step */
  loom_serve_hist step;        /* seconds per step (the model call, the cache writes, the sampling) */
  loom_serve_hist ttft;        /* seconds from submission to a choice's first token */
  loom_serve_hist itl;         /* seconds between a choice's tokens */
} loom_serve_metrics;

/* What the scheduler knows at the time of printing. */
typedef struct loom_serve_metrics_gauges {
  int64_t waiting, running;         /* sequences queued / running */
  int64_t pages_used, pages_total;  /* the K/V cache */
  int64_t preemptions;              /* sequences preempted so far */
} loom_serve_metrics_gauges;

void loom_serve_metrics_init(loom_serve_metrics *m);
void loom_serve_metrics_destroy(loom_serve_metrics *m);
void loom_serve_hist_add(loom_serve_hist *h, double v);
void loom_serve_metrics_count_status(loom_serve_metrics *m, int status);
void loom_serve_metrics_print(const loom_serve_metrics *m, const loom_serve_metrics_gauges *g, loom_strbuf *sb);

#endif

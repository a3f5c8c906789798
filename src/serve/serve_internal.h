/* serve_internal.h — the parts of `loom serve`'s engine (docs/serve.md), each small and tested
 * on its own (tests/serve/test_serve_units.c): the page allocator (pages.c), the sampler
 * (sample.c) and the scheduler (sched.c). engine.c puts them together around one compiled
 * model; http.c is the HTTP front. Nothing here is thread-safe: the engine calls these under
 * its one lock. */
#ifndef LOOM_SERVE_SERVE_INTERNAL_H
#define LOOM_SERVE_SERVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* ---- pages.c: fixed-size pages of the paged K/V cache ------------------------------------ */

/* The free list of pages 0 .. npages-1. */
typedef struct loom_serve_pages {
  int32_t *free_ids; /* the free pages, a stack */
  int64_t nfree;     /* how many are free */
  int64_t npages;    /* pages in the cache */
  int64_t page_size; /* slots (tokens) per page */
} loom_serve_pages;

LOOM_MUST_USE loom_status loom_serve_pages_init(loom_serve_pages *p, int64_t npages, int64_t page_size);
void loom_serve_pages_destroy(loom_serve_pages *p);
/* Pages needed to hold `ntokens` tokens. */
int64_t loom_serve_pages_for(const loom_serve_pages *p, int64_t ntokens);
/* Takes `n` pages into out[0..n) if that many are free (all or nothing). */
bool loom_serve_pages_take(loom_serve_pages *p, int64_t n, int32_t *out);
/* Gives pages back. */
void loom_serve_pages_give(loom_serve_pages *p, const int32_t *ids, int64_t n);

/* ---- sample.c: sampling one token from a row of logits ------------------------------------ */

/* How a request samples. temperature 0 (or top_k 1) is greedy: the first maximum. */
typedef struct loom_serve_sampling {
  double temperature; /* > 0: logits / temperature before the softmax; 0: greedy */
  int64_t top_k;      /* keep the k largest (0: all) */
  double top_p;       /* keep the smallest set whose probability reaches top_p (1: all) */
} loom_serve_sampling;

/* A request's random stream (splitmix64): the same seed gives the same draws. */
typedef struct loom_serve_rng {
  uint64_t s; /* state */
} loom_serve_rng;

uint64_t loom_serve_rng_next(loom_serve_rng *r);
/* A double in [0, 1). */
double loom_serve_rng_uniform(loom_serve_rng *r);
/* The token drawn from `logits` (n of them); `scratch` holds 2n doubles' worth (n doubles and n
 * int32 indices). Greedy draws nothing from `r`; every other mode draws exactly one number. */
int64_t loom_serve_sample(const float *logits, int64_t n, const loom_serve_sampling *s, loom_serve_rng *r, void *scratch);

/* ---- sched.c: which tokens of which sequences run in the next step ---------------------------- */

/* A sequence's place in the scheduler. */
typedef enum loom_serve_seq_state {
  LOOM_SERVE_SEQ_WAITING, /* queued (new, or preempted: its cache is gone and is recomputed) */
  LOOM_SERVE_SEQ_RUNNING, /* holds pages; prefilling or decoding */
  LOOM_SERVE_SEQ_DONE,    /* finished or cancelled; pages given back */
} loom_serve_seq_state;

/* One sequence (a prompt of a request and what it generated). */
typedef struct loom_serve_seq {
  int64_t *tokens;            /* the prompt, then the generated tokens */
  int64_t ntokens, cap;       /* tokens held; capacity of `tokens` */
  int64_t nprompt;            /* prompt length */
  int64_t max_tokens;         /* tokens to generate at most */
  int64_t ncached;            /* tokens whose K/V are in the pages (positions 0 .. ncached-1) */
  int32_t *pages;             /* the block table: page of positions [i*page_size, (i+1)*page_size) */
  int64_t npages, pages_cap;  /* pages held; capacity of `pages` */
  loom_serve_seq_state state; /* where it is */
  uint64_t admitted;          /* admission stamp (older ones run first, younger ones are preempted first) */
  int64_t step_tokens;        /* tokens it runs in the step being planned (0: not in it) */
  int64_t preemptions;        /* times its cache was dropped to make room */
  struct loom_serve_seq *next_wait; /* the waiting queue */
  void *owner;                /* the engine's request */
  int choice;                 /* its index in the request */
} loom_serve_seq;

/* A step's time learned from the steps run (cost.c): ms = coef[0] + coef[1]·tokens +
 * coef[2]·keys/1000, least squares with exponential forgetting. */
typedef struct loom_serve_cost {
  double xx[3][3];  /* decayed sums of f·fᵀ, f = (1, tokens, keys/1000) */
  double xy[3];     /* decayed sums of f·ms */
  double coef[3];   /* the fit (each >= 0) */
  int64_t steps;    /* steps observed */
} loom_serve_cost;

void loom_serve_cost_init(loom_serve_cost *c);
/* Adds a step of `tokens` tokens whose attention read `keys` keys and took `ms`, and refits. */
void loom_serve_cost_observe(loom_serve_cost *c, int64_t tokens, int64_t keys, double ms);
/* True once enough steps were observed for the fit to be used. */
bool loom_serve_cost_ready(const loom_serve_cost *c);
/* The fit's time (ms) of a step of `tokens` tokens reading `keys` keys. */
double loom_serve_cost_predict(const loom_serve_cost *c, int64_t tokens, int64_t keys);

/* The scheduler: the waiting queue (FIFO, preempted sequences at its front) and the running
 * set, limits per step, and the pages. */
typedef struct loom_serve_sched {
  loom_serve_pages pages;       /* the cache's pages */
  loom_serve_seq **running;     /* running sequences, oldest first */
  int64_t nrunning, running_cap;
  loom_serve_seq *wait_head, *wait_tail; /* waiting queue */
  int64_t nwaiting;             /* its length */
  int64_t max_batch;            /* sequences in one step at most */
  int64_t max_step_tokens;      /* tokens in one step at most (prefill chunks share it) */
  int64_t decode_budget;        /* tokens in a step while D sequences decode in it: the decodes, then prompt
                                 * chunks in max(decode_budget - D, D) tokens (0: no budget) */
  bool chunk_by_keys;           /* with a decode budget: a prompt chunk counts against it as
                                 * max(tokens, its keys / the decodes' mean keys), at least one token */
  double step_ratio;            /* > 0: while D sequences decode, prompt chunks only while the step's predicted
                                 * time stays within step_ratio x that of its decodes alone (cost), the
                                 * first chunk at least one token; 0: off. "Its decodes" are all the sequences
                                 * held (running or waiting, up to max_batch) at the decodes' mean context */
  loom_serve_cost cost;         /* the step times measured (the engine observes every step) */
  uint64_t stamp;               /* the next admission stamp */
  int64_t preemptions;          /* total, for the metrics */
} loom_serve_sched;

LOOM_MUST_USE loom_status loom_serve_sched_init(loom_serve_sched *s, int64_t npages, int64_t page_size, int64_t max_batch,
                                               int64_t max_step_tokens);
void loom_serve_sched_destroy(loom_serve_sched *s);
/* Queues a new sequence (state WAITING). */
void loom_serve_sched_add(loom_serve_sched *s, loom_serve_seq *q);
/* Removes a sequence wherever it is and gives its pages back (state DONE). */
void loom_serve_sched_finish(loom_serve_sched *s, loom_serve_seq *q);
/* Plans the next step: out[0..*n) are the sequences that run, each with step_tokens > 0 tokens
 * from position ncached (running ones oldest first, then admitted ones); while any running
 * sequence decodes, prompt chunks share what decode_budget leaves after the D decodes, but at
 * least D tokens (a step's time is what every decoding sequence waits for its next token: a
 * step holds at most max(decode_budget, 2D) tokens; with chunk_by_keys a chunk whose tokens read
 * more keys than the decodes' mean counts as its keys in units of that mean, so that its
 * attention stays within what the decodes' would be at that many tokens, but a prompt chunk
 * always has one token); each holds pages for
 * ncached + step_tokens positions. Running sequences that cannot get a page preempt the
 * youngest (back to the waiting queue's front, cache dropped: recomputed when readmitted). A
 * waiting sequence is admitted only with free pages for its chunk and one spare page per
 * running sequence. out has room for max_batch. Fails only when memory runs out. */
LOOM_MUST_USE loom_status loom_serve_sched_plan(loom_serve_sched *s, loom_serve_seq **out, int64_t *n);
/* After a step ran: each planned sequence's step_tokens become cached. */
void loom_serve_sched_commit(loom_serve_sched *s, loom_serve_seq *const *planned, int64_t n);
/* Appends a generated token (growing the array). */
LOOM_MUST_USE loom_status loom_serve_seq_push(loom_serve_seq *q, int64_t token);
void loom_serve_seq_free(loom_serve_seq *q);

#endif

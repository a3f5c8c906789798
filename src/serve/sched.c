/* sched.c — iteration-level (continuous) batching: before every step the scheduler decides
 * which sequences run and how many of their tokens. Running sequences go first, oldest first
 * (a decode is one token, a prompt a chunk of what the step's token budget leaves: while any
 * sequence decodes, the decode budget less the decodes but at least as many tokens as decode,
 * so a step's time, which every decoding sequence waits for, stays within about twice a
 * decode-only step's — vLLM's chunked-prefill policy; with chunk_by_keys a chunk is counted
 * by the keys its attention reads, in units of the decodes' mean, when that is more than its
 * tokens; with step_ratio (the CLI's default 1.2), chunks are also cut so that the step's time,
 * predicted from the steps measured (cost.c), stays within step_ratio times that of a
 * decode-only step of every sequence held, running or waiting: the decodes to come), then
 * waiting sequences are admitted while seats, budget and pages allow. When a running sequence
 * needs a page and none is free, the youngest running sequence is preempted: its pages go
 * back and it returns to the front of the queue, to be recomputed from its tokens when it is
 * readmitted. The oldest sequence always makes progress, and a sequence that fits the cache
 * alone always fits eventually (the engine refuses any other), so nothing runs out of memory
 * and nothing starves. */
#include <stdlib.h>
#include <string.h>

#include "serve/serve_internal.h"

loom_status loom_serve_sched_init(loom_serve_sched *s, int64_t npages, int64_t page_size, int64_t max_batch, int64_t max_step_tokens) {
  memset(s, 0, sizeof *s);
  if (max_batch < 1 || max_step_tokens < 1)
    return LOOM_ERROR(INVALID_ARGUMENT, "--max-batch (%lld) and --max-step-tokens (%lld) must be positive", (long long)max_batch,
                      (long long)max_step_tokens);
  LOOM_PROPAGATE(loom_serve_pages_init(&s->pages, npages, page_size));
  s->max_batch = max_batch;
  s->max_step_tokens = max_step_tokens;
  return LOOM_OK;
}

void loom_serve_sched_destroy(loom_serve_sched *s) {
  loom_serve_pages_destroy(&s->pages);
  free(s->running);
  s->running = NULL;
}

void loom_serve_sched_add(loom_serve_sched *s, loom_serve_seq *q) {
  q->state = LOOM_SERVE_SEQ_WAITING;
  q->next_wait = NULL;
  if (s->wait_tail) s->wait_tail->next_wait = q;
  else s->wait_head = q;
  s->wait_tail = q;
  s->nwaiting++;
}

static void wait_remove(loom_serve_sched *s, loom_serve_seq *q) {
  loom_serve_seq **pp = &s->wait_head, *prev = NULL;
  while (*pp && *pp != q) prev = *pp, pp = &(*pp)->next_wait;
  if (!*pp) return;
  *pp = q->next_wait;
  if (s->wait_tail == q) s->wait_tail = prev;
  q->next_wait = NULL;
  s->nwaiting--;
}

static void running_remove(loom_serve_sched *s, loom_serve_seq *q) {
  for (int64_t i = 0; i < s->nrunning; i++)
    if (s->running[i] == q) {
      memmove(&s->running[i], &s->running[i + 1], (size_t)(s->nrunning - i - 1) * sizeof *s->running);
      s->nrunning--;
      return;
    }
}

static void drop_pages(loom_serve_sched *s, loom_serve_seq *q) {
  loom_serve_pages_give(&s->pages, q->pages, q->npages);
  q->npages = 0;
  q->ncached = 0;
  q->step_tokens = 0;
}

void loom_serve_sched_finish(loom_serve_sched *s, loom_serve_seq *q) {
  if (q->state == LOOM_SERVE_SEQ_WAITING) wait_remove(s, q);
  else if (q->state == LOOM_SERVE_SEQ_RUNNING) running_remove(s, q);
  drop_pages(s, q);
  q->state = LOOM_SERVE_SEQ_DONE;
}

/* The youngest running sequence goes back to the front of the queue without its cache. */
static void preempt_youngest(loom_serve_sched *s) {
  loom_serve_seq *q = s->running[--s->nrunning];
  drop_pages(s, q);
  q->state = LOOM_SERVE_SEQ_WAITING;
  q->preemptions++;
  s->preemptions++;
  q->next_wait = s->wait_head;
  s->wait_head = q;
  if (!s->wait_tail) s->wait_tail = q;
  s->nwaiting++;
}

/* Grows q's block table to hold `total` pages, taking the new ones; false when not enough are free. */
static bool grow(loom_serve_sched *s, loom_serve_seq *q, int64_t total, loom_status *st) {
  int64_t more = total - q->npages;
  if (more <= 0) return true;
  if (more > s->pages.nfree) return false;
  if (total > q->pages_cap) {
    int64_t cap = q->pages_cap ? q->pages_cap : 4;
    while (cap < total) cap *= 2;
    int32_t *p = realloc(q->pages, (size_t)cap * sizeof *p);
    if (!p) {
      *st = LOOM_OOM();
      return false;
    }
    q->pages = p, q->pages_cap = cap;
  }
  loom_serve_pages_take(&s->pages, more, q->pages + q->npages);
  q->npages = total;
  return true;
}

/* Keys the attention of a chunk of k tokens after p cached ones reads: token j sees p + j + 1. */
static int64_t chunk_keys(int64_t p, int64_t k) { return k * p + k * (k + 1) / 2; }

/* What a prompt chunk of k tokens after p cached ones counts against the prompt tokens of a step
 * whose D decodes read dkeys keys: k, or, when its tokens read more keys than the decodes' mean,
 * its keys in units of that mean (ceil(keys * D / dkeys)): a prompt token late in a long prompt
 * costs a step as much attention as several decodes. dkeys 0: k. */
static int64_t chunk_cost(int64_t p, int64_t k, int64_t decoding, int64_t dkeys) {
  if (!dkeys) return k;
  int64_t by_keys = (chunk_keys(p, k) * decoding + dkeys - 1) / dkeys;
  return by_keys > k ? by_keys : k;
}

/* The longest chunk of at most `want` tokens after p cached ones whose cost fits `left`, but at
 * least one token (so that a prompt always advances). */
static int64_t chunk_fit(int64_t p, int64_t want, int64_t left, int64_t decoding, int64_t dkeys) {
  int64_t lo = 1, hi = want;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (chunk_cost(p, mid, decoding, dkeys) <= left) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* The step-time bound (step_ratio): the tokens and keys planned so far and the predicted time
 * the step may reach; `on` false when there is no bound (off, no decodes, the cost not learned). */
typedef struct time_bound {
  bool on;
  int64_t tokens, keys; /* planned so far */
  double limit;         /* ms */
  bool chunked;         /* a prompt chunk is planned already (the first gets its token regardless) */
} time_bound;

/* The longest chunk of at most `want` tokens after p cached ones that keeps the step's predicted
 * time within the bound; the step's first chunk gets at least one token, a later one may get 0. */
static int64_t time_fit(const loom_serve_sched *s, const time_bound *tb, int64_t p, int64_t want) {
  if (!tb->on) return want;
  int64_t lo = tb->chunked ? 0 : 1, hi = want;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (loom_serve_cost_predict(&s->cost, tb->tokens + mid, tb->keys + chunk_keys(p, mid)) <= tb->limit) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

static void time_add(time_bound *tb, int64_t p, int64_t k) {
  tb->tokens += k, tb->keys += chunk_keys(p, k);
  tb->chunked = true;
}

loom_status loom_serve_sched_plan(loom_serve_sched *s, loom_serve_seq **out, int64_t *n) {
  *n = 0;
  int64_t budget = s->max_step_tokens, decoding = 0, dkeys = 0;
  loom_status st = LOOM_OK;
  for (int64_t i = 0; i < s->nrunning; i++) {
    loom_serve_seq *q = s->running[i];
    q->step_tokens = 0;
    if (q->ntokens - q->ncached == 1) decoding++, dkeys += q->ncached + 1;
  }
  /* the decodes run whatever the bound (they are what it protects); chunks fill up to it */
  time_bound tb = {.on = s->step_ratio > 0 && decoding > 0 && loom_serve_cost_ready(&s->cost), .tokens = decoding, .keys = dkeys};
  if (tb.on) {
    /* the decode-only step of every sequence held (running or waiting, up to max_batch), each at
     * the decodes' mean context: while some are in their prompts fewer decode, and the prompts
     * may take what those decodes to come leave — the bound does not shrink as the prompts queue
     * (which would slow them further), and no step is predicted longer than R x the step the
     * load's decodes will make */
    int64_t load = s->nrunning + s->nwaiting < s->max_batch ? s->nrunning + s->nwaiting : s->max_batch;
    tb.limit = s->step_ratio * loom_serve_cost_predict(&s->cost, load, dkeys * load / decoding);
  }
  if (s->decode_budget <= 0 || !s->chunk_by_keys) dkeys = 0; /* prompt chunks counted in tokens only */
  /* prompt tokens this step may take: while someone decodes, what the decode budget leaves
   * after the decodes, and at least as many as decode (so a step with a prompt chunk holds at
   * most max(budget, twice the decodes) tokens, and prompts advance however many decode) */
  int64_t prefill = budget;
  if (decoding && s->decode_budget > 0) prefill = s->decode_budget - decoding > decoding ? s->decode_budget - decoding : decoding;
  for (int64_t i = 0; i < s->nrunning && *n < s->max_batch && budget > 0;) {
    loom_serve_seq *q = s->running[i];
    int64_t need = q->ntokens - q->ncached, take = need;
    if (need > 1 && take > prefill) take = prefill;
    if (take > budget) take = budget;
    if (need > 1 && take > 0) take = time_fit(s, &tb, q->ncached, chunk_fit(q->ncached, take, prefill, decoding, dkeys));
    if (take <= 0) {
      i++;
      continue;
    }
    int64_t total = loom_serve_pages_for(&s->pages, q->ncached + take);
    bool self = false;
    while (!grow(s, q, total, &st)) {
      if (st) return st;
      self = s->running[s->nrunning - 1] == q;
      preempt_youngest(s);
      if (self) break;
    }
    if (self) break; /* q was the youngest: everything older is planned */
    q->step_tokens = take;
    out[(*n)++] = q;
    budget -= take;
    if (need > 1) prefill -= chunk_cost(q->ncached, take, decoding, dkeys), time_add(&tb, q->ncached, take);
    i++;
  }
  while (s->wait_head && *n < s->max_batch && budget > 0 && prefill > 0) {
    loom_serve_seq *q = s->wait_head;
    int64_t take = q->ntokens - q->ncached;
    if (take > budget) take = budget;
    if (take > prefill) take = prefill;
    take = time_fit(s, &tb, q->ncached, chunk_fit(q->ncached, take, prefill, decoding, dkeys));
    if (take <= 0) break;
    int64_t need = loom_serve_pages_for(&s->pages, take);
    if (need + s->nrunning > s->pages.nfree) break; /* keep a spare page for each running sequence */
    if (s->nrunning == s->running_cap) {
      int64_t cap = s->running_cap ? s->running_cap * 2 : 16;
      loom_serve_seq **r = realloc(s->running, (size_t)cap * sizeof *r);
      if (!r) return LOOM_OOM();
      s->running = r, s->running_cap = cap;
    }
    if (!grow(s, q, need, &st)) return st ? st : LOOM_ERROR(INTERNAL, "serve: pages counted free are not");
    wait_remove(s, q);
    q->state = LOOM_SERVE_SEQ_RUNNING;
    q->admitted = s->stamp++;
    s->running[s->nrunning++] = q;
    q->step_tokens = take;
    out[(*n)++] = q;
    budget -= take;
    prefill -= chunk_cost(q->ncached, take, decoding, dkeys);
    time_add(&tb, q->ncached, take);
  }
  return LOOM_OK;
}

void loom_serve_sched_commit(loom_serve_sched *s, loom_serve_seq *const *planned, int64_t n) {
  (void)s;
  for (int64_t i = 0; i < n; i++) {
    planned[i]->ncached += planned[i]->step_tokens;
    planned[i]->step_tokens = 0;
  }
}

loom_status loom_serve_seq_push(loom_serve_seq *q, int64_t token) {
  if (q->ntokens == q->cap) {
    int64_t cap = q->cap ? q->cap * 2 : 64;
    int64_t *t = realloc(q->tokens, (size_t)cap * sizeof *t);
    if (!t) return LOOM_OOM();
    q->tokens = t, q->cap = cap;
  }
  q->tokens[q->ntokens++] = token;
  return LOOM_OK;
}

void loom_serve_seq_free(loom_serve_seq *q) {
  free(q->tokens);
  free(q->pages);
  q->tokens = NULL;
  q->pages = NULL;
}

/* test_serve_units.c — the engine's parts on their own (src/serve/serve_internal.h): the page
 * allocator, the sampler (greedy, top-k, top-p, seeded reproducibility, the distribution it
 * draws from), the step cost learned from measured steps (cost.c) and the scheduler (token
 * budget and chunked prefill, admission, preemption when pages run out, recompute after it,
 * the step-time bound). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_internal.h"
#include "support/loom_test.h"

LOOM_TEST(serve_pages, all_or_nothing) {
  loom_serve_pages p;
  cr_assert_null(loom_serve_pages_init(&p, 5, 4));
  cr_assert_eq(loom_serve_pages_for(&p, 0), 0);
  cr_assert_eq(loom_serve_pages_for(&p, 1), 1);
  cr_assert_eq(loom_serve_pages_for(&p, 4), 1);
  cr_assert_eq(loom_serve_pages_for(&p, 5), 2);
  int32_t a[5], b[5];
  cr_assert(loom_serve_pages_take(&p, 3, a));
  cr_assert_eq(a[0], 0, "a fresh cache hands out page 0 first");
  cr_assert(!loom_serve_pages_take(&p, 3, b), "only 2 are free");
  cr_assert_eq(p.nfree, 2, "a refused take takes nothing");
  loom_serve_pages_give(&p, a, 3);
  cr_assert(loom_serve_pages_take(&p, 5, b));
  loom_serve_pages_give(&p, b, 5);
  loom_serve_pages_destroy(&p);
  loom_status st = loom_serve_pages_init(&p, 0, 4);
  cr_assert(st && strstr(loom_status_message(st), "given 0 pages of 4"));
  loom_status_free(st);
}

LOOM_TEST(serve_sample, greedy_topk_topp_and_seeds) {
  float lg[6] = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, NAN};
  double scratch[12];
  loom_serve_rng r = {1};
  loom_serve_sampling greedy = {0, 0, 1};
  cr_assert_eq(loom_serve_sample(lg, 6, &greedy, &r, scratch), 1, "the first maximum; NaN never wins");
  cr_assert_eq(r.s, 1, "greedy draws nothing");
  loom_serve_sampling k1 = {1.0, 1, 1};
  cr_assert_eq(loom_serve_sample(lg, 5, &k1, &r, scratch), 1, "top_k 1 is greedy");
  loom_serve_sampling p0 = {1.0, 0, 1e-9};
  for (int i = 0; i < 20; i++) cr_assert_eq(loom_serve_sample(lg, 5, &p0, &r, scratch), 1, "a tiny top_p keeps the top token");
  loom_serve_sampling k2 = {1.0, 2, 1};
  for (int i = 0; i < 50; i++) {
    int64_t t = loom_serve_sample(lg, 5, &k2, &r, scratch);
    cr_assert(t == 1 || t == 3, "top_k 2 keeps tokens 1 and 3, drew %lld", (long long)t);
  }
  /* the same seed gives the same draws; another seed other draws */
  loom_serve_sampling s = {0.8, 0, 0.95};
  loom_serve_rng a = {42}, b = {42}, c = {43};
  int same = 0, differ = 0;
  for (int i = 0; i < 64; i++) {
    int64_t x = loom_serve_sample(lg, 5, &s, &a, scratch), y = loom_serve_sample(lg, 5, &s, &b, scratch);
    same += x == y;
    differ += x != loom_serve_sample(lg, 5, &s, &c, scratch);
  }
  cr_assert_eq(same, 64);
  cr_assert_gt(differ, 0);
}

LOOM_TEST(serve_sample, draws_follow_the_softmax) {
  /* logits 0 and log 3 at temperature 1: probabilities 1/4 and 3/4 */
  float lg[2] = {0.0f, (float)log(3.0)};
  double scratch[4];
  loom_serve_rng r = {7};
  loom_serve_sampling s = {1.0, 0, 1};
  int ones = 0, n = 20000;
  for (int i = 0; i < n; i++) ones += loom_serve_sample(lg, 2, &s, &r, scratch) == 1;
  cr_assert(fabs((double)ones / n - 0.75) < 0.015, "token 1 drawn %d of %d times", ones, n);
  /* temperature 0.5 squares the odds: 9/10 */
  s.temperature = 0.5;
  ones = 0;
  for (int i = 0; i < n; i++) ones += loom_serve_sample(lg, 2, &s, &r, scratch) == 1;
  cr_assert(fabs((double)ones / n - 0.9) < 0.012, "token 1 drawn %d of %d times at temperature 0.5", ones, n);
}

static void seq_init(loom_serve_seq *q, int64_t prompt) {
  memset(q, 0, sizeof *q);
  q->cap = prompt + 64;
  q->tokens = calloc((size_t)q->cap, sizeof *q->tokens);
  q->ntokens = q->nprompt = prompt;
  q->max_tokens = 64;
}

/* One step of the plan as the engine runs it: commit, then a token for every sequence that
 * reached its end. */
static int64_t step(loom_serve_sched *s, loom_serve_seq **plan) {
  int64_t n;
  cr_assert_null(loom_serve_sched_plan(s, plan, &n));
  for (int64_t i = 0; i < n; i++)
    cr_assert_geq(plan[i]->npages * s->pages.page_size, plan[i]->ncached + plan[i]->step_tokens, "planned without pages");
  loom_serve_seq *fin[64];
  int64_t nf = 0;
  for (int64_t i = 0; i < n; i++)
    if (plan[i]->ncached + plan[i]->step_tokens == plan[i]->ntokens) fin[nf++] = plan[i];
  loom_serve_sched_commit(s, plan, n);
  for (int64_t i = 0; i < nf; i++) cr_assert_null(loom_serve_seq_push(fin[i], 1));
  return n;
}

LOOM_TEST(serve_sched, budget_chunks_prefill_and_decodes_run_first) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 100, 4, 8, 10));
  loom_serve_seq a, b, *plan[8];
  seq_init(&a, 3);
  seq_init(&b, 25);
  loom_serve_sched_add(&s, &a);
  loom_serve_sched_add(&s, &b);
  cr_assert_eq(step(&s, plan), 2);
  cr_assert_eq(a.ncached, 3, "a's prompt whole");
  cr_assert_eq(b.ncached, 7, "b gets what the budget of 10 leaves");
  cr_assert_eq(a.ntokens, 4, "a got its first token");
  cr_assert_eq(b.ntokens, 25, "b's prompt is not done: no token");
  cr_assert_eq(step(&s, plan), 2);
  cr_assert_eq(plan[0], &a, "the decode (older) first");
  cr_assert_eq(a.ncached, 4);
  cr_assert_eq(b.ncached, 16);
  step(&s, plan);
  cr_assert_eq(b.ncached, 25);
  cr_assert_eq(b.ntokens, 26);
  cr_assert_eq(b.npages, 7, "25 positions in pages of 4");
  loom_serve_sched_finish(&s, &a);
  loom_serve_sched_finish(&s, &b);
  cr_assert_eq(s.pages.nfree, 100, "every page back");
  loom_serve_seq_free(&a);
  loom_serve_seq_free(&b);
  loom_serve_sched_destroy(&s);
}

LOOM_TEST(serve_sched, preempts_the_youngest_and_recomputes) {
  /* 6 pages of 2 slots; two sequences of 5 tokens each take 3 pages, then decoding needs more */
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 6, 2, 4, 64));
  loom_serve_seq a, b, c, *plan[4];
  seq_init(&a, 5);
  seq_init(&b, 5);
  seq_init(&c, 1);
  loom_serve_sched_add(&s, &a);
  loom_serve_sched_add(&s, &b);
  loom_serve_sched_add(&s, &c);
  cr_assert_eq(step(&s, plan), 1, "b waits: 3 free pages minus a spare for a are not enough for it");
  cr_assert_eq(step(&s, plan), 1);
  cr_assert_eq(a.ncached, 6);
  /* a grows to 4 pages; then b (3 pages) can never be admitted while a runs with a spare */
  for (int i = 0; i < 4; i++) step(&s, plan);
  cr_assert_eq(a.state, LOOM_SERVE_SEQ_RUNNING);
  loom_serve_sched_finish(&s, &a);
  int64_t n = step(&s, plan);
  cr_assert_eq(n, 2, "b and c admitted once a is gone");
  cr_assert_eq(b.ncached, 5);
  /* b decodes until the pages run out; c is younger and is preempted, then readmitted */
  int64_t pre = s.preemptions;
  for (int i = 0; i < 6 && s.preemptions == pre; i++) step(&s, plan);
  cr_assert_gt(s.preemptions, pre, "a full cache preempts");
  cr_assert_eq(c.state, LOOM_SERVE_SEQ_WAITING, "the youngest went back");
  cr_assert_eq(c.ncached, 0, "its cache is dropped");
  cr_assert_eq(c.npages, 0);
  cr_assert_eq(s.wait_head, &c, "at the front of the queue");
  int64_t ctoks = c.ntokens;
  loom_serve_sched_finish(&s, &b);
  step(&s, plan);
  cr_assert_eq(c.state, LOOM_SERVE_SEQ_RUNNING, "readmitted");
  cr_assert_eq(c.ncached, ctoks, "its tokens recomputed in one prefill");
  loom_serve_sched_finish(&s, &c);
  cr_assert_eq(s.pages.nfree, 6);
  loom_serve_seq_free(&a);
  loom_serve_seq_free(&b);
  loom_serve_seq_free(&c);
  loom_serve_sched_destroy(&s);
}

/* While D sequences decode, a step holds the decode budget: every decode, then prompt chunks in
 * what is left, never less than D tokens; alone, a prompt takes the step budget. */
LOOM_TEST(serve_sched, decode_budget_bounds_steps_that_decode) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 100, 4, 8, 50));
  s.decode_budget = 8;
  loom_serve_seq a, b, c, d, *plan[8];
  seq_init(&a, 2);
  seq_init(&b, 2);
  seq_init(&c, 1);
  seq_init(&d, 40);
  loom_serve_sched_add(&s, &a);
  loom_serve_sched_add(&s, &b);
  loom_serve_sched_add(&s, &c);
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(a.ncached + b.ncached + c.ncached, 5, "nobody decodes: whole prompts");
  loom_serve_sched_add(&s, &d);
  cr_assert_eq(step(&s, plan), 4);
  cr_assert_eq(plan[0], &a, "decodes first");
  cr_assert_eq(plan[3], &d, "then the prompt");
  cr_assert_eq(d.ncached, 5, "d's chunk is what the budget of 8 leaves after 3 decodes");
  cr_assert_eq(s.pages.npages - s.pages.nfree, 3 + 2, "pages for the decodes' positions and d's chunk");
  loom_serve_sched_finish(&s, &b);
  step(&s, plan);
  cr_assert_eq(d.ncached, 11, "2 decodes leave 6");
  s.decode_budget = 9;
  step(&s, plan);
  cr_assert_eq(d.ncached, 18, "9 - 2");
  s.decode_budget = 3; /* 2 decode: 1 left, but the floor is as many as decode */
  step(&s, plan);
  cr_assert_eq(d.ncached, 20, "floor: 2 decodes, 2 prompt tokens");
  s.decode_budget = 7; /* 7 - 2 = 5 is above the floor */
  step(&s, plan);
  cr_assert_eq(d.ncached, 25);
  s.decode_budget = 1; /* fewer than the decodes: every decode still runs, and the floor */
  cr_assert_eq(step(&s, plan), 3, "decodes are never dropped");
  cr_assert_eq(d.ncached, 27);
  cr_assert_eq(a.ncached, 8, "a decoded in every step");
  loom_serve_sched_finish(&s, &a);
  loom_serve_sched_finish(&s, &c);
  step(&s, plan);
  cr_assert_eq(d.ncached, 40, "alone, d takes what the step budget allows");
  loom_serve_sched_finish(&s, &d);
  cr_assert_eq(s.pages.nfree, 100, "every page back");
  loom_serve_seq_free(&a);
  loom_serve_seq_free(&b);
  loom_serve_seq_free(&c);
  loom_serve_seq_free(&d);
  loom_serve_sched_destroy(&s);
}

/* With chunk_by_keys, a prompt chunk in a step that decodes counts against the prompt tokens as
 * max(tokens, ceil(its keys * D / the decodes' keys)) — a chunk of k tokens after p cached reads
 * k*p + k(k+1)/2 keys, a decode at context c reads c + 1 — and always gets one token. */
LOOM_TEST(serve_sched, chunk_by_keys_counts_a_chunk_by_the_keys_it_reads) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 200, 4, 8, 64));
  s.decode_budget = 8;
  s.chunk_by_keys = true;
  loom_serve_seq a, b, d, *plan[8];
  seq_init(&a, 9);
  seq_init(&b, 9);
  seq_init(&d, 100);
  loom_serve_sched_add(&s, &a);
  loom_serve_sched_add(&s, &b);
  cr_assert_eq(step(&s, plan), 2);
  loom_serve_sched_add(&s, &d);
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(d.ncached, 6, "6 tokens at the start read 21 keys, 2.1 decodes' worth (20 keys for 2): they count as 6");
  step(&s, plan);
  cr_assert_eq(d.ncached, 12, "after 6: 57 keys, ceil(57 * 2 / 22) = 6 decodes: fits the 6 left");
  step(&s, plan);
  cr_assert_eq(d.ncached, 16, "after 12: 6 tokens read 93 keys (8 decodes of 12), 5 read 75 (7); 4 read 58 (5)");
  s.decode_budget = 3; /* 2 prompt tokens: the floor of 2 decodes */
  step(&s, plan);
  cr_assert_eq(d.ncached, 17, "after 16: 2 tokens read 35 keys (3 decodes of 13), 1 reads 17 (2)");
  cr_assert_eq(a.ncached, 13, "a decoded in every step");
  s.chunk_by_keys = false;
  step(&s, plan);
  cr_assert_eq(d.ncached, 19, "counted in tokens: the 2 the floor gives");
  for (loom_serve_seq *q = &a; q; q = q == &a ? &b : q == &b ? &d : NULL) loom_serve_sched_finish(&s, q);
  /* a chunk late in a long prompt beside a decode at a short context: one token, never none */
  loom_serve_seq e, f;
  seq_init(&e, 1);
  seq_init(&f, 100);
  s.max_step_tokens = 40;
  s.decode_budget = 4;
  s.chunk_by_keys = true;
  loom_serve_sched_add(&s, &e);
  loom_serve_sched_add(&s, &f);
  cr_assert_eq(step(&s, plan), 2);
  cr_assert_eq(f.ncached, 39, "nobody decoded: the step budget");
  cr_assert_eq(step(&s, plan), 2);
  cr_assert_eq(f.ncached, 40, "after 39, 1 token reads 40 keys, 20 decodes of 2: over the 3 left, but one token runs");
  s.chunk_by_keys = false;
  step(&s, plan);
  cr_assert_eq(f.ncached, 43, "counted in tokens: 4 - 1");
  loom_serve_sched_finish(&s, &e);
  loom_serve_sched_finish(&s, &f);
  cr_assert_eq(s.pages.nfree, 200, "every page back");
  loom_serve_seq *all[5] = {&a, &b, &d, &e, &f};
  for (int i = 0; i < 5; i++) loom_serve_seq_free(all[i]);
  loom_serve_sched_destroy(&s);
}

LOOM_TEST(serve_sched, max_batch_and_errors) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 64, 4, 2, 100));
  loom_serve_seq q[3], *plan[2];
  for (int i = 0; i < 3; i++) seq_init(&q[i], 2), loom_serve_sched_add(&s, &q[i]);
  cr_assert_eq(step(&s, plan), 2, "two seats");
  cr_assert_eq(s.nwaiting, 1);
  loom_serve_sched_finish(&s, &q[2]); /* cancelled while waiting */
  cr_assert_eq(s.nwaiting, 0);
  cr_assert_null(s.wait_head);
  for (int i = 0; i < 2; i++) loom_serve_sched_finish(&s, &q[i]);
  for (int i = 0; i < 3; i++) loom_serve_seq_free(&q[i]);
  loom_serve_sched_destroy(&s);
  loom_status st = loom_serve_sched_init(&s, 4, 4, 0, 1);
  cr_assert(st && strstr(loom_status_message(st), "--max-batch (0)"));
  loom_status_free(st);
}

/* The step cost (cost.c): ms = a + b*tokens + c*keys/1000 fitted by least squares. */
static double cost_law(int64_t t, int64_t k) { return 0.5 + 0.05 * (double)t + 1.5 * (double)k / 1000; }

LOOM_TEST(serve_cost, recovers_a_linear_law_after_enough_steps) {
  loom_serve_cost c;
  loom_serve_cost_init(&c);
  for (int i = 0; i < 30; i++) {
    int64_t t = 1 + (i * 7) % 23, k = 100 + (i * 389) % 5000;
    loom_serve_cost_observe(&c, t, k, cost_law(t, k));
    cr_assert_eq(loom_serve_cost_ready(&c), i >= 15, "ready after 16 steps, not before (step %d)", i + 1);
  }
  cr_assert(fabs(c.coef[0] - 0.5) < 1e-6 && fabs(c.coef[1] - 0.05) < 1e-6 && fabs(c.coef[2] - 1.5) < 1e-6, "fit %g %g %g", c.coef[0],
            c.coef[1], c.coef[2]);
  cr_assert(fabs(loom_serve_cost_predict(&c, 16, 2568) - cost_law(16, 2568)) < 1e-6);
  /* a stall counts as three times the prediction: the same fit as a step of exactly that */
  loom_serve_cost d = c;
  loom_serve_cost_observe(&c, 16, 2568, 1000 * cost_law(16, 2568));
  loom_serve_cost_observe(&d, 16, 2568, 3 * cost_law(16, 2568));
  for (int i = 0; i < 3; i++) cr_assert(fabs(c.coef[i] - d.coef[i]) < 1e-9, "coef %d: %g, capped %g", i, c.coef[i], d.coef[i]);
  cr_assert(loom_serve_cost_predict(&c, 16, 2568) < 1.2 * cost_law(16, 2568), "one stall moves the fit little: %g",
            loom_serve_cost_predict(&c, 16, 2568));
  /* what cannot be a step is not observed */
  int64_t steps = c.steps;
  loom_serve_cost_observe(&c, 0, 0, 1.0);
  loom_serve_cost_observe(&c, 4, 10, NAN);
  loom_serve_cost_observe(&c, 4, 10, -1.0);
  cr_assert_eq(c.steps, steps);
}

LOOM_TEST(serve_cost, never_a_negative_cost) {
  /* time falling with the keys (noise, or a feature that does not matter): keys dropped */
  loom_serve_cost c;
  loom_serve_cost_init(&c);
  for (int i = 0; i < 20; i++) {
    int64_t t = 1 + i % 5, k = 100 * (i % 7);
    loom_serve_cost_observe(&c, t, k, 2 + 0.1 * (double)t - 0.5 * (double)k / 1000);
  }
  cr_assert(c.coef[0] >= 0 && c.coef[1] >= 0 && c.coef[2] == 0, "fit %g %g %g", c.coef[0], c.coef[1], c.coef[2]);
  /* nothing varies (decodes of one size): the mean */
  loom_serve_cost_init(&c);
  for (int i = 0; i < 20; i++) loom_serve_cost_observe(&c, 4, 40, i % 2 ? 3.0 : 5.0);
  cr_assert(fabs(loom_serve_cost_predict(&c, 4, 40) - 4.0) < 0.1, "mean 4, predicted %g", loom_serve_cost_predict(&c, 4, 40));
  cr_assert(fabs(loom_serve_cost_predict(&c, 400, 4000) - loom_serve_cost_predict(&c, 4, 40)) < 1e-9, "no slope from no variation");
}

/* With step_ratio R and a learned cost (here exactly ms = 1 + 0.1*tokens + 2*keys/1000), a
 * step's prompt chunks stop where its predicted time would pass R times its decodes' alone; the
 * step's first chunk gets one token whatever the bound, a later prompt none; R 0 or a cost not
 * yet learned: the token budget alone. */
static double sched_law(int64_t t, int64_t k) { return 1 + 0.1 * (double)t + 2 * (double)k / 1000; }

/* The longest chunk k after p cached ones that sched_law predicts within `limit` for a step of
 * d decodes reading dk keys. */
static int64_t law_fit(int64_t d, int64_t dk, int64_t p, double limit) {
  int64_t k = 0;
  while (sched_law(d + k + 1, dk + (k + 1) * p + (k + 1) * (k + 2) / 2) <= limit) k++;
  return k;
}

LOOM_TEST(serve_sched, step_ratio_bounds_the_predicted_step_time) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 200, 4, 8, 64));
  s.decode_budget = 32;
  s.step_ratio = 1.5;
  for (int i = 0; i < 15; i++) {
    int64_t t = 1 + (i * 5) % 17, k = (i * 131) % 900;
    loom_serve_cost_observe(&s.cost, t, k, sched_law(t, k));
  }
  loom_serve_seq a, b, d, e, *plan[8];
  seq_init(&a, 9);
  seq_init(&b, 9);
  seq_init(&d, 100);
  seq_init(&e, 50);
  loom_serve_sched_add(&s, &a);
  loom_serve_sched_add(&s, &b);
  cr_assert_eq(step(&s, plan), 2);
  cr_assert_eq(a.ncached, 9, "nobody decoded: no bound");
  loom_serve_sched_add(&s, &d);
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(d.ncached, 30, "15 steps learned: not ready, the token budget (32 - 2 decodes)");
  loom_serve_cost_observe(&s.cost, 3, 500, sched_law(3, 500)); /* the 16th */
  cr_assert(loom_serve_cost_ready(&s.cost));
  /* 2 decodes at 10 cached read 22 keys; the 3 sequences held as decodes at that mean context
   * (33 keys) predict 1.366 ms, 1.5x is 2.049; a chunk of k after 30 reads 30k + k(k+1)/2: k = 4
   * predicts 1 + 0.6 + 2 * (22 + 130) / 1000 = 1.904, k = 5 2.074 */
  step(&s, plan);
  cr_assert_eq(d.ncached, 34, "the bound cuts the chunk to 4 tokens");
  cr_assert_eq(a.ncached, 11, "the decodes ran");
  s.step_ratio = 2.0; /* 2 * (1.3 + 2 * 36 / 1000) = 2.744: k = 8 after 34 reads 308 keys, 2.664; k = 9 2.85 */
  step(&s, plan);
  cr_assert_eq(d.ncached, 42, "8 tokens");
  s.step_ratio = 1.0; /* nothing fits: one token for the first chunk */
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(d.ncached, 43, "one token, never none");
  loom_serve_sched_add(&s, &e);
  /* e waiting counts as a decode to come: 4 held at the decodes' mean context 14 (56 keys)
   * predict 1.512 ms; d, the older prompt, gets 1 token (1.444; 2 would be 1.634), e none (1.546) */
  cr_assert_eq(step(&s, plan), 3, "e is not admitted");
  cr_assert_eq(d.ncached, 44);
  cr_assert_eq(e.state, LOOM_SERVE_SEQ_WAITING);
  s.step_ratio = 0;
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(d.ncached, 74, "off: the token budget, 32 - 2 decodes, to d first (the oldest)");
  cr_assert_eq(e.state, LOOM_SERVE_SEQ_WAITING, "and nothing left for e");
  loom_serve_seq *all[4] = {&a, &b, &d, &e};
  for (int i = 0; i < 4; i++) loom_serve_sched_finish(&s, all[i]);
  cr_assert_eq(s.pages.nfree, 200, "every page back");
  for (int i = 0; i < 4; i++) loom_serve_seq_free(all[i]);
  loom_serve_sched_destroy(&s);
}

/* The bound scales the decode-only step of every sequence held, running or waiting (the decodes
 * to come), each at the decodes' mean context: with 2 decoding and 4 prompts arriving, the
 * first gets what keeps the step within R x 6 decodes' step (10 tokens, against 5 within R x
 * the 2 decodes' own), the next one what is left (1), the others none. */
LOOM_TEST(serve_sched, step_ratio_counts_the_decodes_to_come) {
  loom_serve_sched s;
  cr_assert_null(loom_serve_sched_init(&s, 400, 4, 16, 256));
  s.step_ratio = 1.5;
  for (int i = 0; i < 16; i++) {
    int64_t t = 1 + (i * 5) % 17, k = (i * 131) % 900;
    loom_serve_cost_observe(&s.cost, t, k, sched_law(t, k));
  }
  loom_serve_seq d[2], p[4], *plan[16];
  for (int i = 0; i < 2; i++) seq_init(&d[i], 1), loom_serve_sched_add(&s, &d[i]);
  cr_assert_eq(step(&s, plan), 2, "2 one-token prompts admitted");
  for (int i = 0; i < 4; i++) seq_init(&p[i], 200), loom_serve_sched_add(&s, &p[i]);
  /* 2 decodes at context 1 read 4 keys; 6 held: 6 decodes of 12 keys predict 1.624 ms, 1.5x is
   * 2.436. p[0]: 10 tokens predict 1 + 1.2 + 2 * (4 + 55) / 1000 = 2.318 (11: 2.44); p[1] one
   * more, 2.42; p[2] none (2.522) */
  cr_assert_eq(step(&s, plan), 4);
  cr_assert_eq(p[0].ncached, 10, "R x the 6 decodes to come, got %lld", (long long)p[0].ncached);
  cr_assert_eq(p[1].ncached, 1);
  cr_assert_eq(p[2].state, LOOM_SERVE_SEQ_WAITING);
  cr_assert_eq(law_fit(2, 4, 0, 1.5 * sched_law(2, 4)), 5, "what R x the 2 decodes alone would allow");
  /* next step (decodes at context 2, 6 keys; 6 held, 18 keys: 1.5 x 1.636 = 2.454): p[0], the
   * oldest prompt, 9 more tokens (2.382; 10 would be 2.522), nothing left for the others */
  cr_assert_eq(step(&s, plan), 3);
  cr_assert_eq(p[0].ncached, 19);
  cr_assert_eq(p[1].ncached, 1);
  cr_assert_eq(p[2].state, LOOM_SERVE_SEQ_WAITING);
  for (int i = 0; i < 2; i++) loom_serve_sched_finish(&s, &d[i]);
  for (int i = 0; i < 4; i++) loom_serve_sched_finish(&s, &p[i]);
  cr_assert_eq(s.pages.nfree, 400, "every page back");
  for (int i = 0; i < 2; i++) loom_serve_seq_free(&d[i]);
  for (int i = 0; i < 4; i++) loom_serve_seq_free(&p[i]);
  loom_serve_sched_destroy(&s);
}

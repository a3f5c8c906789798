/* test_threadpool.c — the runtime thread pool: coverage, threads, nesting, FTZ/DAZ. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "support/loom_test.h"
#include "vm/threadpool.h"

typedef struct cover {
  _Atomic int *hits;
  _Atomic int workers_seen[8];
  loom_cpu_pool *pool;
} cover;

static int32_t cover_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  cover *c = arg;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
  if (w < 8) atomic_fetch_add(&c->workers_seen[w], 1);
  return 0;
}

static void check_cover(uint32_t threads, int64_t n) {
  loom_cpu_pool *p;
  loom_status s = loom_cpu_pool_create(NULL, threads, &p);
  cr_assert(s == LOOM_OK);
  cr_assert_eq(loom_cpu_pool_threads(p), threads);
  cover c = {0};
  c.hits = calloc((size_t)(n ? n : 1), sizeof *c.hits);
  for (int rep = 0; rep < 50; rep++) {
    for (int64_t i = 0; i < n; i++) atomic_store(&c.hits[i], 0);
    cr_assert_eq(loom_cpu_pool_parallel_for(p, n, cover_body, &c), 0);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(atomic_load(&c.hits[i]), 1, "index %lld ran %d times (%u threads, n %lld)", (long long)i, atomic_load(&c.hits[i]), threads, (long long)n);
  }
  free(c.hits);
  loom_cpu_pool_destroy(p);
}

LOOM_TEST(threadpool, parallel_for_covers_every_index_once) {
  int64_t sizes[] = {0, 1, 2, 3, 7, 100, 1001};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(sizes); i++) {
    check_cover(1, sizes[i]);
    check_cover(2, sizes[i]);
    check_cover(3, sizes[i]);
  }
  /* the same with no spinning: every wait sleeps on a condition variable */
  cr_assert(setenv("LOOM_POOL_SPIN_US", "0", 1) == 0);
  for (size_t i = 0; i < LOOM_ARRAY_LEN(sizes); i++) {
    check_cover(2, sizes[i]);
    check_cover(3, sizes[i]);
  }
  cr_assert(unsetenv("LOOM_POOL_SPIN_US") == 0);
}

/* Each chunk waits (up to a second) until every chunk has started: the loop can only
 * finish early if the workers really run chunks beside the caller. */
typedef struct rendezvous {
  _Atomic int started;
  int chunks;
  _Atomic int met;
  _Atomic int workers_seen[8];
} rendezvous;

static int32_t rendezvous_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  rendezvous *r = arg;
  (void)b, (void)e;
  atomic_fetch_add(&r->started, 1);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do clock_gettime(CLOCK_MONOTONIC, &t);
  while (atomic_load(&r->started) < r->chunks && (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
  if (atomic_load(&r->started) >= r->chunks) atomic_fetch_add(&r->met, 1);
  if (w < 8) atomic_fetch_add(&r->workers_seen[w], 1);
  return 0;
}

LOOM_TEST(threadpool, workers_run_chunks_beside_the_caller) {
  for (uint32_t threads = 2; threads <= 4; threads++) {
    loom_cpu_pool *p;
    cr_assert(loom_cpu_pool_create(NULL, threads, &p) == LOOM_OK);
    for (int rep = 0; rep < 5; rep++) {
      rendezvous r = {.chunks = (int)threads};
      cr_assert_eq(loom_cpu_pool_parallel_for(p, threads, rendezvous_body, &r), 0);
      cr_assert_eq(atomic_load(&r.met), (int)threads, "%u threads: every chunk ran at the same time", threads);
      for (uint32_t w = 0; w < threads; w++) cr_assert_eq(atomic_load(&r.workers_seen[w]), 1, "thread %u ran one chunk", w);
    }
    loom_cpu_pool_destroy(p);
  }
}

/* The first chunk to start stalls (as a thread the OS preempts) until every other chunk has
 * finished, for up to 5 seconds: with more chunks than threads, the other threads take the
 * stalled thread's share, so the loop does not wait for it chunk by chunk. */
typedef struct stall {
  _Atomic int started, finished, ranges;
  _Atomic bool stalled_once, others_done;
  int64_t chunks;
} stall;

static int32_t stall_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  stall *st = arg;
  (void)b, (void)e, (void)w;
  atomic_fetch_add(&st->ranges, 1);
  bool was = false;
  if (atomic_fetch_add(&st->started, 1) == 0 && atomic_compare_exchange_strong(&st->stalled_once, &was, true)) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while (atomic_load(&st->finished) < st->chunks - 1 && (t.tv_sec - t0.tv_sec) < 5);
    atomic_store(&st->others_done, atomic_load(&st->finished) == st->chunks - 1);
  }
  atomic_fetch_add(&st->finished, 1);
  return 0;
}

LOOM_TEST(threadpool, more_chunks_than_threads_and_a_stalled_thread_does_not_hold_the_rest) {
  cr_assert_eq(loom_cpu_pool_chunks(1, 1000), 1);
  cr_assert_eq(loom_cpu_pool_chunks(2, 0), 0);
  cr_assert_eq(loom_cpu_pool_chunks(2, 3), 3, "never more chunks than iterations");
  cr_assert_eq(loom_cpu_pool_chunks(2, 1000), 2 * LOOM_CPU_POOL_CHUNKS_PER_THREAD);
  for (uint32_t threads = 2; threads <= 3; threads++) {
    loom_cpu_pool *p;
    cr_assert(loom_cpu_pool_create(NULL, threads, &p) == LOOM_OK);
    stall st = {.chunks = loom_cpu_pool_chunks(threads, 1000)};
    cr_assert_gt(st.chunks, threads);
    cr_assert_eq(loom_cpu_pool_parallel_for(p, 1000, stall_body, &st), 0);
    cr_assert_eq(atomic_load(&st.ranges), st.chunks, "%u threads: the body ran once per chunk", threads);
    cr_assert(atomic_load(&st.others_done), "%u threads: the other threads ran all %lld other chunks while one stalled",
              threads, (long long)st.chunks - 1);
    loom_cpu_pool_destroy(p);
  }
}

static int32_t fail_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  (void)arg, (void)e, (void)w;
  return b > 0 ? 5 : 0;
}

static int32_t nested_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  cover *c = arg;
  (void)w;
  /* a nested loop runs serially on this thread */
  for (int64_t i = b; i < e; i++) loom_cpu_pool_parallel_for(c->pool, 1, cover_body, &(cover){.hits = c->hits + i});
  return 0;
}

LOOM_TEST(threadpool, errors_nesting_and_limits) {
  loom_cpu_pool *p;
  cr_assert(loom_cpu_pool_create(NULL, 2, &p) == LOOM_OK);
  cr_assert_eq(loom_cpu_pool_parallel_for(p, 10, fail_body, NULL), 5, "a chunk's failure is returned");
  cover c = {0};
  c.hits = calloc(64, sizeof *c.hits);
  c.pool = p;
  cr_assert_eq(loom_cpu_pool_parallel_for(p, 64, nested_body, &c), 0);
  for (int i = 0; i < 64; i++) cr_assert_eq(atomic_load(&c.hits[i]), 1);
  free(c.hits);
  loom_cpu_pool_destroy(p);
  loom_status s = loom_cpu_pool_create(NULL, 100000, &p);
  cr_assert(s != LOOM_OK);
  cr_assert(strstr(loom_status_message(s), "above the maximum") != NULL);
  loom_status_free(s);
}

LOOM_TEST(threadpool, thread_count_from_environment) {
  setenv("LOOM_NUM_THREADS", "3", 1);
  cr_assert_eq(loom_cpu_pool_default_threads(), 3);
  loom_cpu_pool *p;
  cr_assert(loom_cpu_pool_create(NULL, 0, &p) == LOOM_OK);
  cr_assert_eq(loom_cpu_pool_threads(p), 3);
  loom_cpu_pool_destroy(p);
  setenv("LOOM_NUM_THREADS", "zero", 1);
  cr_assert(loom_cpu_pool_default_threads() >= 1);
  unsetenv("LOOM_NUM_THREADS");
}

#if defined(__x86_64__)
#include <xmmintrin.h>
static int32_t mxcsr_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  _Atomic int *bad = arg;
  (void)e, (void)w, (void)b;
  if ((_mm_getcsr() & 0x8040u) != 0x8040u) atomic_fetch_add(bad, 1);
  return 0;
}
LOOM_TEST(threadpool, ftz_daz_on_workers_and_caller) {
  loom_cpu_pool *p;
  cr_assert(loom_cpu_pool_create(NULL, 2, &p) == LOOM_OK);
  _Atomic int bad = 0;
  uint32_t saved = loom_cpu_fpenv_enter();
  loom_cpu_pool_parallel_for(p, 2, mxcsr_body, &bad);
  loom_cpu_fpenv_leave(saved);
  cr_assert_eq(atomic_load(&bad), 0);
  cr_assert_eq(_mm_getcsr(), saved, "caller's state restored");
  loom_cpu_pool_destroy(p);
}
#endif

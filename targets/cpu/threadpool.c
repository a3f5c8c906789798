/* threadpool.c — persistent pthread pool with static-chunk parallel-for (threadpool.h). */
#include "targets/cpu/threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define LOOM_HAVE_MXCSR 1
#else
#define LOOM_HAVE_MXCSR 0
#endif

struct loom_cpu_pool {
  loom_allocator *alloc;      /* where the pool and its thread array live */
  uint32_t threads;           /* threads counting the caller */
  pthread_t *workers;         /* threads - 1 workers */
  uint32_t started;           /* workers actually started */
  pthread_mutex_t mu;         /* guards everything below */
  pthread_cond_t wake;        /* workers wait here for a new generation */
  pthread_cond_t done;        /* the caller waits here for `pending` to reach 0 */
  uint64_t generation;        /* bumped once per parallel loop */
  bool stop;                  /* workers exit when set */
  uint32_t active;            /* chunks in the current loop (<= threads) */
  uint32_t pending;           /* worker chunks not finished yet */
  int64_t n;                  /* iterations of the current loop */
  loom_parallel_body body;    /* the current loop's body */
  void *arg;                  /* its argument */
  int32_t result;             /* first nonzero body result */
};

/* Set in workers and while the caller runs a body: nested loops run serially. */
static _Thread_local int in_parallel;

uint32_t loom_cpu_fpenv_enter(void) {
#if LOOM_HAVE_MXCSR
  uint32_t saved = _mm_getcsr();
  _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
  return saved;
#else
  return 0;
#endif
}

void loom_cpu_fpenv_leave(uint32_t saved) {
#if LOOM_HAVE_MXCSR
  _mm_setcsr(saved);
#else
  (void)saved;
#endif
}

uint32_t loom_cpu_pool_default_threads(void) {
  const char *env = getenv("LOOM_NUM_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 1 && v <= LOOM_CPU_POOL_MAX_THREADS) return (uint32_t)v;
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    if (c >= 1) return c > LOOM_CPU_POOL_MAX_THREADS ? LOOM_CPU_POOL_MAX_THREADS : (uint32_t)c;
  }
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c >= 1 ? (uint32_t)(c > LOOM_CPU_POOL_MAX_THREADS ? LOOM_CPU_POOL_MAX_THREADS : c) : 1;
}

/* Chunk w of n iterations over `active` chunks. */
static void chunk(int64_t n, uint32_t active, uint32_t w, int64_t *b, int64_t *e) {
  /* w*n/active without overflow for any n < 2^63 and active <= 256 */
  *b = (int64_t)(((__int128)n * w) / active);
  *e = (int64_t)(((__int128)n * (w + 1)) / active);
}

typedef struct worker_arg {
  loom_cpu_pool *pool;
  uint32_t index; /* 1..threads-1 */
} worker_arg;

static void *worker_main(void *p) {
  loom_cpu_pool *pool = ((worker_arg *)p)->pool;
  uint32_t index = ((worker_arg *)p)->index;
  free(p);
  in_parallel = 1;
  (void)loom_cpu_fpenv_enter();
  pthread_mutex_lock(&pool->mu);
  uint64_t seen = 0; /* the generation at creation: a loop may start before this thread runs */
  for (;;) {
    while (!pool->stop && pool->generation == seen) pthread_cond_wait(&pool->wake, &pool->mu);
    if (pool->stop) break;
    seen = pool->generation;
    if (index >= pool->active) continue;
    int64_t n = pool->n;
    uint32_t active = pool->active;
    loom_parallel_body body = pool->body;
    void *arg = pool->arg;
    pthread_mutex_unlock(&pool->mu);
    int64_t b, e;
    chunk(n, active, index, &b, &e);
    int32_t r = b < e ? body(arg, b, e, index) : 0;
    pthread_mutex_lock(&pool->mu);
    if (r != 0 && pool->result == 0) pool->result = r;
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

loom_status loom_cpu_pool_create(loom_allocator *alloc, uint32_t threads, loom_cpu_pool **out_pool) {
  *out_pool = NULL;
  if (threads == 0) threads = loom_cpu_pool_default_threads();
  if (threads > LOOM_CPU_POOL_MAX_THREADS)
    return LOOM_ERROR(INVALID_ARGUMENT, "thread count %u is above the maximum %d", threads,
                      LOOM_CPU_POOL_MAX_THREADS);
  loom_cpu_pool *pool = loom_alloc_zero(alloc, sizeof *pool);
  if (!pool) return LOOM_OOM();
  pool->alloc = alloc;
  pool->threads = threads;
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  if (threads > 1) {
    pool->workers = loom_alloc_array(alloc, threads - 1, sizeof(pthread_t));
    if (!pool->workers) {
      loom_cpu_pool_destroy(pool);
      return LOOM_OOM();
    }
  }
  for (uint32_t i = 1; i < threads; i++) {
    worker_arg *wa = malloc(sizeof *wa);
    if (!wa) {
      loom_cpu_pool_destroy(pool);
      return LOOM_OOM();
    }
    wa->pool = pool;
    wa->index = i;
    if (pthread_create(&pool->workers[i - 1], NULL, worker_main, wa) != 0) {
      free(wa);
      loom_cpu_pool_destroy(pool);
      return LOOM_ERROR(UNAVAILABLE, "cannot start worker thread %u of %u", i, threads);
    }
    pool->started++;
  }
  *out_pool = pool;
  return LOOM_OK;
}

void loom_cpu_pool_destroy(loom_cpu_pool *pool) {
  if (!pool) return;
  pthread_mutex_lock(&pool->mu);
  pool->stop = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  for (uint32_t i = 0; i < pool->started; i++) pthread_join(pool->workers[i], NULL);
  if (pool->workers) loom_free(pool->alloc, pool->workers, (pool->threads - 1) * sizeof(pthread_t));
  pthread_mutex_destroy(&pool->mu);
  pthread_cond_destroy(&pool->wake);
  pthread_cond_destroy(&pool->done);
  loom_free(pool->alloc, pool, sizeof *pool);
}

uint32_t loom_cpu_pool_threads(const loom_cpu_pool *pool) { return pool ? pool->threads : 1; }

int32_t loom_cpu_pool_parallel_for(void *p, int64_t n, loom_parallel_body body, void *arg) {
  loom_cpu_pool *pool = p;
  if (n <= 0) return 0;
  uint32_t active = pool ? pool->threads : 1;
  if ((int64_t)active > n) active = (uint32_t)n;
  if (active <= 1 || in_parallel) return body(arg, 0, n, 0);
  pthread_mutex_lock(&pool->mu);
  pool->n = n;
  pool->active = active;
  pool->body = body;
  pool->arg = arg;
  pool->result = 0;
  pool->pending = active - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  int64_t b, e;
  chunk(n, active, 0, &b, &e);
  in_parallel = 1;
  int32_t r = b < e ? body(arg, b, e, 0) : 0;
  in_parallel = 0;
  pthread_mutex_lock(&pool->mu);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->mu);
  if (r == 0) r = pool->result;
  pthread_mutex_unlock(&pool->mu);
  return r;
}

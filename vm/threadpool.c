/* threadpool.c — persistent pthread pool with static-chunk parallel-for (threadpool.h). */
#include "vm/threadpool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
  int64_t spin_ns;            /* how long a waiting thread spins before it sleeps */
  /* The current loop: written by the caller before it publishes `work`, read by a thread
   * only after it has claimed one of the loop's chunks; the caller rewrites them only when
   * every chunk is finished. */
  int64_t n;                  /* iterations */
  loom_parallel_body body;    /* the body */
  void *arg;                  /* its argument */
  /* generation (32 bits) | chunks (16) | next chunk to claim (16): a claim is a CAS on the
   * whole word, so a thread can never claim a chunk of a loop other than the one it saw */
  _Atomic uint64_t work;
  _Atomic uint32_t finished;    /* chunks of the current loop finished */
  _Atomic int32_t result;       /* first nonzero body result */
  _Atomic uint32_t sleepers;    /* workers blocked on `wake` */
  _Atomic bool caller_waiting;  /* the caller is blocked on `done` */
  _Atomic bool stop;            /* workers exit when set */
  pthread_mutex_t mu;           /* with the two conditions below: sleeping only */
  pthread_cond_t wake;          /* workers sleep here for a new generation */
  pthread_cond_t done;          /* the caller sleeps here for `finished` to reach the chunks */
};

#define WORK(gen, chunks, next) (((uint64_t)(gen) << 32) | ((uint64_t)(chunks) << 16) | (uint64_t)(next))
#define WORK_GEN(w) ((uint32_t)((w) >> 32))
#define WORK_CHUNKS(w) ((uint32_t)((w) >> 16) & 0xffffu)
#define WORK_NEXT(w) ((uint32_t)(w) & 0xffffu)

/* Set in workers and while the caller runs a body: nested loops run serially. */
static _Thread_local int in_parallel;

/* Default spin before sleeping: long enough to bridge the VM's work between two kernels
 * and the short kernels of a decode step (microseconds each), short enough that an idle
 * pool is asleep at once for a person watching `top`. */
#define DEFAULT_SPIN_NS 1000000

static void cpu_relax(void) {
#if LOOM_HAVE_MXCSR
  _mm_pause();
#endif
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The waits below use seq_cst loads: each pairs with a seq_cst store on the other side
 * made before that side reads the sleeper's flag, so a wake-up is never lost. */
static bool new_loop(loom_cpu_pool *pool, uint32_t seen) {
  return WORK_GEN(atomic_load(&pool->work)) != seen || atomic_load(&pool->stop);
}

static bool all_done(loom_cpu_pool *pool, uint32_t chunks) { return atomic_load(&pool->finished) == chunks; }

/* Spins until `ready(pool, v)` or `spin_ns` pass; true when ready. No sched_yield: on a
 * core shared with a background (niced) process, yielding hands it a whole time slice. */
static bool spin_until(loom_cpu_pool *pool, bool (*ready)(loom_cpu_pool *, uint32_t), uint32_t v) {
  if (ready(pool, v)) return true;
  if (pool->spin_ns <= 0) return false;
  int64_t deadline = now_ns() + pool->spin_ns;
  for (uint32_t i = 1;; i++) {
    cpu_relax();
    if (ready(pool, v)) return true;
    if ((i & 63) == 0 && now_ns() > deadline) return false;
  }
}

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

/* Claims and runs chunks of loop `gen` until none is left (the caller claims too, so a
 * worker that wakes late finds nothing to do and the loop never waits for it). */
static void run_chunks(loom_cpu_pool *pool, uint32_t gen, uint32_t worker) {
  uint64_t w = atomic_load(&pool->work);
  for (;;) {
    if (WORK_GEN(w) != gen || WORK_NEXT(w) >= WORK_CHUNKS(w)) return;
    if (!atomic_compare_exchange_weak(&pool->work, &w, w + 1)) continue;
    uint32_t c = WORK_NEXT(w), chunks = WORK_CHUNKS(w);
    int64_t b, e;
    chunk(pool->n, chunks, c, &b, &e);
    int32_t r = b < e ? pool->body(pool->arg, b, e, worker) : 0;
    int32_t zero = 0;
    if (r != 0) atomic_compare_exchange_strong(&pool->result, &zero, r);
    if (atomic_fetch_add(&pool->finished, 1) + 1 == chunks && worker != 0 && atomic_load(&pool->caller_waiting)) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_signal(&pool->done);
      pthread_mutex_unlock(&pool->mu);
    }
    w = atomic_load(&pool->work);
  }
}

static void *worker_main(void *p) {
  loom_cpu_pool *pool = ((worker_arg *)p)->pool;
  uint32_t index = ((worker_arg *)p)->index;
  free(p);
  in_parallel = 1;
  (void)loom_cpu_fpenv_enter();
  uint32_t seen = 0; /* the generation at creation: a loop may start before this thread runs */
  for (;;) {
    if (!spin_until(pool, new_loop, seen)) {
      pthread_mutex_lock(&pool->mu);
      atomic_fetch_add(&pool->sleepers, 1); /* pairs with the caller's `work` store */
      while (!new_loop(pool, seen)) pthread_cond_wait(&pool->wake, &pool->mu);
      atomic_fetch_sub(&pool->sleepers, 1);
      pthread_mutex_unlock(&pool->mu);
    }
    if (atomic_load(&pool->stop)) break;
    seen = WORK_GEN(atomic_load(&pool->work));
    run_chunks(pool, seen, index);
  }
  return NULL;
}

/* LOOM_POOL_SPIN_US if set to a valid count of microseconds (0: sleep at once), else the default. */
static int64_t spin_ns_from_env(void) {
  const char *env = getenv("LOOM_POOL_SPIN_US");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 0 && v <= 10000000) return (int64_t)v * 1000;
  }
  return DEFAULT_SPIN_NS;
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
  pool->spin_ns = spin_ns_from_env();
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
  atomic_store(&pool->stop, true);
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
  uint32_t chunks = pool ? pool->threads : 1;
  if ((int64_t)chunks > n) chunks = (uint32_t)n;
  if (chunks <= 1 || in_parallel) return body(arg, 0, n, 0);
  pool->n = n;
  pool->body = body;
  pool->arg = arg;
  atomic_store_explicit(&pool->result, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->finished, 0, memory_order_relaxed);
  uint32_t gen = WORK_GEN(atomic_load_explicit(&pool->work, memory_order_relaxed)) + 1;
  atomic_store(&pool->work, WORK(gen, chunks, 0)); /* publishes the fields above; pairs with `sleepers` */
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_mutex_lock(&pool->mu);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
  }
  in_parallel = 1;
  run_chunks(pool, gen, 0);
  in_parallel = 0;
  /* every chunk is claimed; wait for the ones other threads are still running */
  if (!spin_until(pool, all_done, chunks)) {
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->caller_waiting, true); /* pairs with the workers' `finished` increment */
    while (!all_done(pool, chunks)) pthread_cond_wait(&pool->done, &pool->mu);
    atomic_store(&pool->caller_waiting, false);
    pthread_mutex_unlock(&pool->mu);
  }
  return atomic_load_explicit(&pool->result, memory_order_relaxed);
}

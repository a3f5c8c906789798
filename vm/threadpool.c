/* threadpool.c — persistent pthread pool with a chunked parallel-for (threadpool.h). */
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

/* One loop in flight: a slot of the pool, owned by the thread that called parallel_for
 * from acquiring it (a bit of `busy`) until every chunk of its loop has finished. */
typedef struct slot {
  _Alignas(64) /* a cache line of its own: owners of different slots do not share one */
  /* The loop: written by the owner before it publishes `work`, read by a thread only after
   * it has claimed one of the loop's chunks; rewritten only when every chunk is finished. */
  int64_t n;                   /* iterations */
  loom_parallel_body body;     /* the body */
  void *arg;                   /* its argument */
  /* generation (32 bits) | chunks (16) | next chunk to claim (16): a claim is a CAS on the
   * whole word, so a thread can never claim a chunk of a loop other than the one it saw */
  _Atomic uint64_t work;
  _Atomic uint32_t finished;   /* chunks of the current loop finished */
  _Atomic int32_t result;      /* first nonzero body result */
  _Atomic bool owner_waiting;  /* the owner is blocked on `done` */
  pthread_cond_t done;         /* the owner sleeps here for `finished` to reach the chunks */
} slot;

struct loom_cpu_pool {
  loom_allocator *alloc;      /* where the pool and its thread array live */
  uint32_t threads;           /* threads counting the caller */
  pthread_t *workers;         /* threads - 1 workers */
  uint32_t started;           /* workers actually started */
  int64_t spin_ns;            /* how long a waiting thread spins before it sleeps */
  _Atomic uint32_t busy;      /* bit s: slot s has an owner */
  _Atomic uint32_t epoch;     /* advanced after a loop is published: what sleeping workers wait for */
  _Atomic uint32_t sleepers;  /* workers blocked on `wake` */
  _Atomic bool stop;          /* workers exit when set */
  pthread_mutex_t mu;         /* with `wake` and the slots' `done`: sleeping only */
  pthread_cond_t wake;        /* workers sleep here for a new epoch */
  slot slots[LOOM_CPU_POOL_SLOTS];
};
_Static_assert(LOOM_CPU_POOL_SLOTS <= 32, "`busy` has one bit per slot");

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
static bool new_epoch(loom_cpu_pool *pool, const void *sl, uint32_t seen) {
  (void)sl;
  return atomic_load(&pool->epoch) != seen || atomic_load(&pool->stop);
}

static bool all_done(loom_cpu_pool *pool, const void *sl, uint32_t chunks) {
  (void)pool;
  return atomic_load(&((const slot *)sl)->finished) == chunks;
}

/* Spins until `ready(pool, sl, v)` or `spin_ns` pass; true when ready. No sched_yield: on a
 * core shared with a background (niced) process, yielding hands it a whole time slice. */
static bool spin_until(loom_cpu_pool *pool, bool (*ready)(loom_cpu_pool *, const void *, uint32_t), const void *sl,
                       uint32_t v) {
  if (ready(pool, sl, v)) return true;
  if (pool->spin_ns <= 0) return false;
  int64_t deadline = now_ns() + pool->spin_ns;
  for (uint32_t i = 1;; i++) {
    cpu_relax();
    if (ready(pool, sl, v)) return true;
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

uint32_t loom_cpu_cores_available(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    if (c >= 1) return c > LOOM_CPU_POOL_MAX_THREADS ? LOOM_CPU_POOL_MAX_THREADS : (uint32_t)c;
  }
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c >= 1 ? (uint32_t)(c > LOOM_CPU_POOL_MAX_THREADS ? LOOM_CPU_POOL_MAX_THREADS : c) : 1;
}

uint32_t loom_cpu_pool_default_threads(void) {
  const char *env = getenv("LOOM_NUM_THREADS");
  if (env && *env) {
    char *end;
    long v = strtol(env, &end, 10);
    if (*end == '\0' && v >= 1 && v <= LOOM_CPU_POOL_MAX_THREADS) return (uint32_t)v;
  }
  return loom_cpu_cores_available();
}

/* Chunk w of n iterations over `active` chunks. */
static void chunk(int64_t n, uint32_t active, uint32_t w, int64_t *b, int64_t *e) {
  /* w*n/active without overflow for any n < 2^63 and active < 2^16 */
  *b = (int64_t)(((__int128)n * w) / active);
  *e = (int64_t)(((__int128)n * (w + 1)) / active);
}

typedef struct worker_arg {
  loom_cpu_pool *pool;
  uint32_t index; /* 1..threads-1 */
} worker_arg;

/* Claims and runs chunks of the loop of generation `gen` in slot `sl` until none is left
 * (the owner claims too, so a worker that wakes late finds nothing to do and the loop
 * never waits for it). True when it ran at least one chunk. */
static bool run_chunks(loom_cpu_pool *pool, slot *sl, uint32_t gen, uint32_t worker) {
  bool ran = false;
  uint64_t w = atomic_load(&sl->work);
  for (;;) {
    if (WORK_GEN(w) != gen || WORK_NEXT(w) >= WORK_CHUNKS(w)) return ran;
    if (!atomic_compare_exchange_weak(&sl->work, &w, w + 1)) continue;
    ran = true;
    uint32_t c = WORK_NEXT(w), chunks = WORK_CHUNKS(w);
    int64_t b, e;
    chunk(sl->n, chunks, c, &b, &e);
    int32_t r = b < e ? sl->body(sl->arg, b, e, worker) : 0;
    int32_t zero = 0;
    if (r != 0) atomic_compare_exchange_strong(&sl->result, &zero, r);
    if (atomic_fetch_add(&sl->finished, 1) + 1 == chunks && worker != 0 && atomic_load(&sl->owner_waiting)) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_signal(&sl->done);
      pthread_mutex_unlock(&pool->mu);
    }
    w = atomic_load(&sl->work);
  }
}

/* A worker's pass over the slots that have an owner, starting at its own index so that
 * workers spread over the loops in flight; true when it ran a chunk. */
static bool run_any(loom_cpu_pool *pool, uint32_t index) {
  bool ran = false;
  uint32_t busy = atomic_load(&pool->busy);
  for (uint32_t k = 0; busy && k < LOOM_CPU_POOL_SLOTS; k++) {
    uint32_t s = (index + k) % LOOM_CPU_POOL_SLOTS;
    if (!(busy & (1u << s))) continue;
    uint64_t w = atomic_load(&pool->slots[s].work);
    if (WORK_NEXT(w) < WORK_CHUNKS(w)) ran |= run_chunks(pool, &pool->slots[s], WORK_GEN(w), index);
  }
  return ran;
}

static void *worker_main(void *p) {
  loom_cpu_pool *pool = ((worker_arg *)p)->pool;
  uint32_t index = ((worker_arg *)p)->index;
  free(p);
  in_parallel = 1;
  (void)loom_cpu_fpenv_enter();
  for (;;) {
    /* the epoch is read before the pass: a loop published during the pass advances it,
     * so the wait below returns at once and the next pass finds that loop */
    uint32_t seen = atomic_load(&pool->epoch);
    while (run_any(pool, index)) {
    }
    if (!spin_until(pool, new_epoch, NULL, seen)) {
      pthread_mutex_lock(&pool->mu);
      atomic_fetch_add(&pool->sleepers, 1); /* pairs with the owner's `epoch` increment */
      while (!new_epoch(pool, NULL, seen)) pthread_cond_wait(&pool->wake, &pool->mu);
      atomic_fetch_sub(&pool->sleepers, 1);
      pthread_mutex_unlock(&pool->mu);
    }
    if (atomic_load(&pool->stop)) break;
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
  loom_cpu_pool *pool = loom_alloc_aligned(alloc, sizeof *pool, _Alignof(loom_cpu_pool));
  if (!pool) return LOOM_OOM();
  memset(pool, 0, sizeof *pool);
  pool->alloc = alloc;
  pool->threads = threads;
  pool->spin_ns = spin_ns_from_env();
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->wake, NULL);
  for (uint32_t s = 0; s < LOOM_CPU_POOL_SLOTS; s++) pthread_cond_init(&pool->slots[s].done, NULL);
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
  for (uint32_t s = 0; s < LOOM_CPU_POOL_SLOTS; s++) pthread_cond_destroy(&pool->slots[s].done);
  loom_free(pool->alloc, pool, sizeof *pool);
}

uint32_t loom_cpu_pool_threads(const loom_cpu_pool *pool) { return pool ? pool->threads : 1; }

/* Every slot is owned (more loops in flight than slots): the caller runs its loop alone, in
 * the same chunks the pool would have made, so the result does not depend on who ran it. */
static int32_t run_alone(int64_t n, uint32_t chunks, loom_parallel_body body, void *arg) {
  int32_t result = 0;
  in_parallel = 1;
  for (uint32_t c = 0; c < chunks; c++) {
    int64_t b, e;
    chunk(n, chunks, c, &b, &e);
    int32_t r = b < e ? body(arg, b, e, 0) : 0;
    if (r != 0 && result == 0) result = r;
  }
  in_parallel = 0;
  return result;
}

/* Takes a free slot: its index, or LOOM_CPU_POOL_SLOTS when every slot is owned. */
static uint32_t acquire_slot(loom_cpu_pool *pool) {
  uint32_t busy = atomic_load(&pool->busy);
  for (;;) {
    uint32_t free_slots = ~busy & (uint32_t)((1ull << LOOM_CPU_POOL_SLOTS) - 1);
    if (!free_slots) return LOOM_CPU_POOL_SLOTS;
    uint32_t s = (uint32_t)__builtin_ctz(free_slots);
    if (atomic_compare_exchange_weak(&pool->busy, &busy, busy | (1u << s))) return s;
  }
}

int64_t loom_cpu_pool_chunks(uint32_t threads, int64_t n) {
  if (n <= 0) return 0;
  if (threads <= 1) return 1;
  int64_t c = (int64_t)threads * LOOM_CPU_POOL_CHUNKS_PER_THREAD;
  return c < n ? c : n;
}

int32_t loom_cpu_pool_parallel_for(void *p, int64_t n, loom_parallel_body body, void *arg) {
  loom_cpu_pool *pool = p;
  if (n <= 0) return 0;
  uint32_t chunks = (uint32_t)loom_cpu_pool_chunks(pool ? pool->threads : 1, n);
  if (chunks <= 1 || in_parallel) return body(arg, 0, n, 0);
  uint32_t s = acquire_slot(pool);
  if (s == LOOM_CPU_POOL_SLOTS) return run_alone(n, chunks, body, arg);
  slot *sl = &pool->slots[s];
  sl->n = n;
  sl->body = body;
  sl->arg = arg;
  atomic_store_explicit(&sl->result, 0, memory_order_relaxed);
  atomic_store_explicit(&sl->finished, 0, memory_order_relaxed);
  uint32_t gen = WORK_GEN(atomic_load_explicit(&sl->work, memory_order_relaxed)) + 1;
  atomic_store(&sl->work, WORK(gen, chunks, 0)); /* publishes the fields above */
  atomic_fetch_add(&pool->epoch, 1);             /* pairs with `sleepers` */
  if (atomic_load(&pool->sleepers) > 0) {
    pthread_mutex_lock(&pool->mu);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
  }
  in_parallel = 1;
  run_chunks(pool, sl, gen, 0);
  in_parallel = 0;
  /* every chunk is claimed; wait for the ones other threads are still running */
  if (!spin_until(pool, all_done, sl, chunks)) {
    pthread_mutex_lock(&pool->mu);
    atomic_store(&sl->owner_waiting, true); /* pairs with the workers' `finished` increment */
    while (!all_done(pool, sl, chunks)) pthread_cond_wait(&sl->done, &pool->mu);
    atomic_store(&sl->owner_waiting, false);
    pthread_mutex_unlock(&pool->mu);
  }
  int32_t r = atomic_load_explicit(&sl->result, memory_order_relaxed);
  atomic_fetch_and(&pool->busy, ~(1u << s)); /* the slot is free again (release) */
  return r;
}

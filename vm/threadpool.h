/* threadpool.h — the runtime's persistent thread pool and its parallel-for.
 *
 * Generated kernels reach it through loom_kernel_ctx (vm/kernel_abi.h): the VM passes
 * loom_cpu_pool_parallel_for and the pool as ctx->parallel_for / ctx->pool.
 *
 *     loom_cpu_pool *p;
 *     LOOM_PROPAGATE(loom_cpu_pool_create(NULL, 0, &p));   // 0: LOOM_NUM_THREADS or all cores
 *     loom_cpu_pool_parallel_for(p, n, body, arg);         // body(arg, begin, end, worker)
 *     loom_cpu_pool_destroy(p);
 *
 * Work is split statically into C = loom_cpu_pool_chunks(T, n) chunks (T threads: C is
 * min(n, LOOM_CPU_POOL_CHUNKS_PER_THREAD * T)), chunk c being [c*n/C, (c+1)*n/C), and chunks
 * are claimed (a CAS), not assigned: the calling thread claims chunks as the workers do, so a
 * loop never waits for a worker that has not woken, only for chunks others are running. More
 * chunks than threads balance uneven work (a causal triangle, a tail panel) and a thread that
 * the OS preempts on a shared machine: the others take its remaining chunks.
 * Between loops a worker spins for LOOM_POOL_SPIN_US microseconds (default 1000; 0 sleeps
 * at once) on the loop counter, without yielding, before it sleeps on a condition
 * variable; the caller waits for running chunks the same way. Spinning is what makes a
 * 2-microsecond kernel worth splitting: a condition-variable wake-up costs 10-50 us.
 * Every worker sets FTZ/DAZ (flush-to-zero, denormals-are-zero)
 * at start when the pool flushes denormals; loom_cpu_fpenv_enter/leave does the same
 * for the calling thread.
 *
 * Any number of threads may call parallel_for on one pool at once (one runtime serving
 * several calls): each loop takes a slot of the pool (LOOM_CPU_POOL_SLOTS of them), the
 * workers run chunks of whichever loops are in flight, and each caller runs chunks of its
 * own loop and waits only for its chunks that other threads are running, so no caller
 * waits on another's loop and nothing can deadlock. A caller that finds every slot taken
 * runs its loop alone, in the same chunks. Chunk boundaries depend only on n and the
 * pool's thread count, never on who runs them, so results are the same either way.
 * Nested calls from inside a body (on any pool) run serially. create/destroy are not
 * concurrent with parallel_for on that pool. */
#ifndef LOOM_VM_THREADPOOL_H
#define LOOM_VM_THREADPOOL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/status.h"
#include "vm/kernel_abi.h"

typedef struct loom_cpu_pool loom_cpu_pool;

/* Most threads a pool may have. */
#define LOOM_CPU_POOL_MAX_THREADS 256
/* Chunks per thread of a parallel loop (at most; never more chunks than iterations). */
#define LOOM_CPU_POOL_CHUNKS_PER_THREAD 4
/* Loops that may be in flight on one pool at once (callers beyond it run their loop alone). */
#define LOOM_CPU_POOL_SLOTS 16

/* The cores available to this process (sched_getaffinity, else the online CPUs), 1 to
 * LOOM_CPU_POOL_MAX_THREADS. */
uint32_t loom_cpu_cores_available(void);
/* Threads to use by default: LOOM_NUM_THREADS if set to a valid count, else the cores
 * available to this process, at least 1. */
uint32_t loom_cpu_pool_default_threads(void);

/* Creates a pool of `threads` threads counting the caller (0 = the default above).
 * Fails with INVALID_ARGUMENT above LOOM_CPU_POOL_MAX_THREADS. */
LOOM_MUST_USE loom_status loom_cpu_pool_create(loom_allocator *alloc, uint32_t threads,
                                               loom_cpu_pool **out_pool);
/* Stops and joins every worker, frees the pool (NULL is a no-op). */
void loom_cpu_pool_destroy(loom_cpu_pool *pool);
uint32_t loom_cpu_pool_threads(const loom_cpu_pool *pool);

/* The chunks a pool of `threads` threads makes of a loop of n iterations: 0 when n <= 0,
 * else min(n, LOOM_CPU_POOL_CHUNKS_PER_THREAD * threads), 1 for one thread. */
int64_t loom_cpu_pool_chunks(uint32_t threads, int64_t n);

/* The parallel-for of the kernel ABI (`pool` is a loom_cpu_pool *). */
int32_t loom_cpu_pool_parallel_for(void *pool, int64_t n, loom_parallel_body body, void *arg);

/* Floating-point environment of the calling thread: enter sets FTZ/DAZ and returns the
 * previous state; leave restores it. No-ops on targets without MXCSR. */
uint32_t loom_cpu_fpenv_enter(void);
void loom_cpu_fpenv_leave(uint32_t saved);

#endif

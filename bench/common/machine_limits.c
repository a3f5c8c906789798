/* machine_limits.c — the machine's measured limits, shared by every benchmark program.
 *
 *   - FP32 FMA peak: each thread runs isa_chains[isa] independent accumulator chains of vector FMAs
 *     (acc = acc * x + y), enough chains to cover FMA latency times the number of FMA ports, so the
 *     loop is throughput-bound. The widest path the CPU supports is chosen at run time (CPUID, see
 *     detect_isa): AVX-512F (16 lanes), else AVX2+FMA (8 lanes), else scalar; each kernel is compiled
 *     for its ISA with `__attribute__((target(...)))`, the rest of the file for the baseline.
 *     flops = 2 per lane per FMA.
 *   - Triad bandwidth (STREAM's a[i] = b[i] + s * c[i]) over three arrays far larger than the
 *     last-level cache; each thread takes a contiguous slice and touches its own pages first. Bytes
 *     counted as STREAM counts them: 3 * 4 bytes per element (the write-allocate read is not counted).
 *
 * Each figure is the best of REPEATS timed runs after one warm-up run. */
#include "bench/common/machine_limits.h"

#include <cpuid.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
  CHAINS_WIDE = 16,   /* AVX-512: independent accumulators >= FMA latency (4) x ports (2), with margin
                        (32 zmm registers hold them and the two operands) */
  CHAINS_NARROW = 12, /* AVX2 / scalar: 16 ymm/xmm registers; 16 chains plus the operands spilled one
                        chain to the stack every round, and the "peak" read 23-29 GFLOP/s on a Zen 3
                        core that does two 256-bit FMAs per cycle */
  REPEATS = 5,     /* timed runs per figure; the best is kept */
  MAX_THREADS = 64 /* upper bound on --threads */
};

/* The instruction-set path used for the FMA peak. */
typedef enum {
  LIMITS_ISA_SCALAR, /* no vector FMA available: plain C (compiler may still vectorise) */
  LIMITS_ISA_AVX2,   /* AVX2 + FMA3, 8 fp32 lanes */
  LIMITS_ISA_AVX512  /* AVX-512F, 16 fp32 lanes */
} limits_isa;

static const char *const isa_names[] = {"scalar", "avx2", "avx512"};
static const int isa_lanes[] = {1, 8, 16};
static const int isa_chains[] = {CHAINS_NARROW, CHAINS_NARROW, CHAINS_WIDE};
_Static_assert(sizeof isa_names / sizeof isa_names[0] == LIMITS_ISA_AVX512 + 1, "isa_names matches limits_isa");
_Static_assert(sizeof isa_lanes / sizeof isa_lanes[0] == LIMITS_ISA_AVX512 + 1, "isa_lanes matches limits_isa");
_Static_assert(sizeof isa_chains / sizeof isa_chains[0] == LIMITS_ISA_AVX512 + 1, "isa_chains matches limits_isa");

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A sink the compiler cannot see through, so that the accumulators stay live. */
static volatile float sink;

/* ---------------------------------------------------------------------------------------------- */
/* FMA kernels: `iters` rounds of isa_chains[isa] independent FMAs each. Returns nothing useful but keeps the
 * result alive through `sink`. x is slightly below 1 and y small so values stay finite and normal.
 * KEEP hides each accumulator from the optimiser after every round (an empty asm that "changes"
 * the register): every lane of a chain starts equal, and clang otherwise computes some chains
 * as scalars (vfmadd132sd, one lane) and counts them as 16 -- the AVX-512 "peak" read 170-201
 * GFLOP/s on a Zen 4 core whose FMA pipes do one 512-bit FMA per cycle (~118 GFLOP/s measured
 * with the chains kept, any count from 4 to 24, zmm or ymm). */
#define KEEP(v) __asm__ volatile("" : "+x"(v))

__attribute__((target("avx512f,evex512"))) static void fma_avx512(long iters) {
  __m512 acc[CHAINS_WIDE];
  for (int c = 0; c < CHAINS_WIDE; c++) acc[c] = _mm512_set1_ps(1.0f + 0.01f * (float)c);
  const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
  for (long i = 0; i < iters; i++) {
    for (int c = 0; c < CHAINS_WIDE; c++) acc[c] = _mm512_fmadd_ps(acc[c], x, y);
    for (int c = 0; c < CHAINS_WIDE; c++) KEEP(acc[c]);
  }
  __m512 s = acc[0];
  for (int c = 1; c < CHAINS_WIDE; c++) s = _mm512_add_ps(s, acc[c]);
  sink = _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"))) static void fma_avx2(long iters) {
  __m256 acc[CHAINS_NARROW];
  for (int c = 0; c < CHAINS_NARROW; c++) acc[c] = _mm256_set1_ps(1.0f + 0.01f * (float)c);
  const __m256 x = _mm256_set1_ps(0.999999f), y = _mm256_set1_ps(1e-6f);
  for (long i = 0; i < iters; i++) {
    for (int c = 0; c < CHAINS_NARROW; c++) acc[c] = _mm256_fmadd_ps(acc[c], x, y);
    for (int c = 0; c < CHAINS_NARROW; c++) KEEP(acc[c]);
  }
  __m256 s = acc[0];
  for (int c = 1; c < CHAINS_NARROW; c++) s = _mm256_add_ps(s, acc[c]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  float t = 0.0f;
  for (int l = 0; l < 8; l++) t += lanes[l];
  sink = t;
}

static void fma_scalar(long iters) {
  float acc[CHAINS_NARROW];
  for (int c = 0; c < CHAINS_NARROW; c++) acc[c] = 1.0f + 0.01f * (float)c;
  for (long i = 0; i < iters; i++) {
    for (int c = 0; c < CHAINS_NARROW; c++) acc[c] = acc[c] * 0.999999f + 1e-6f;
    for (int c = 0; c < CHAINS_NARROW; c++) KEEP(acc[c]);
  }
  float t = 0.0f;
  for (int c = 0; c < CHAINS_NARROW; c++) t += acc[c];
  sink = t;
}

/* ---------------------------------------------------------------------------------------------- */
/* Threads: every worker waits at a barrier, runs its share, waits again; thread 0 times the span
 * between the two barriers, so the figure covers the slowest thread. */

typedef struct {
  pthread_barrier_t *start;  /* all workers released together */
  pthread_barrier_t *finish; /* all workers done */
  limits_isa isa;            /* FMA path */
  long fma_iters;            /* FMA rounds per thread (0: run the triad instead) */
  float *a, *b, *c;          /* triad slice of this thread (a = b + s * c) */
  size_t n;                  /* triad slice length in elements */
  double seconds;            /* written by thread 0: time between the barriers */
} worker;

static void triad(float *restrict a, const float *restrict b, const float *restrict c, size_t n) {
  const float s = 3.0f;
  for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

static void *worker_run(void *arg) {
  worker *w = arg;
  pthread_barrier_wait(w->start);
  double t0 = now_s();
  if (w->fma_iters > 0) {
    switch (w->isa) {
    case LIMITS_ISA_AVX512: fma_avx512(w->fma_iters); break;
    case LIMITS_ISA_AVX2: fma_avx2(w->fma_iters); break;
    case LIMITS_ISA_SCALAR: fma_scalar(w->fma_iters); break;
    }
  } else {
    triad(w->a, w->b, w->c, w->n);
  }
  pthread_barrier_wait(w->finish);
  w->seconds = now_s() - t0;
  return NULL;
}

/* Runs one measurement on `threads` threads; returns the time of the slowest, or a negative value if
 * a thread could not be started. */
static double run_threads(int threads, worker *ws) {
  pthread_barrier_t start, finish;
  pthread_t tid[MAX_THREADS];
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  pthread_barrier_init(&finish, NULL, (unsigned)threads);
  int started = 0;
  for (int t = 1; t < threads; t++) {
    ws[t].start = &start;
    ws[t].finish = &finish;
    if (pthread_create(&tid[t], NULL, worker_run, &ws[t]) != 0) break;
    started++;
  }
  double seconds = -1.0;
  if (started == threads - 1) {
    ws[0].start = &start;
    ws[0].finish = &finish;
    worker_run(&ws[0]);
    seconds = ws[0].seconds;
  } else {
    fprintf(stderr, "bench-limits: could not start %d threads\n", threads);
    exit(1); /* a program, not library code: the barrier would never open */
  }
  for (int t = 1; t < threads; t++) pthread_join(tid[t], NULL);
  pthread_barrier_destroy(&start);
  pthread_barrier_destroy(&finish);
  return seconds;
}

static double fma_gflops(limits_isa isa, int threads, long iters) {
  worker ws[MAX_THREADS];
  memset(ws, 0, sizeof ws);
  for (int t = 0; t < threads; t++) {
    ws[t].isa = isa;
    ws[t].fma_iters = iters;
  }
  run_threads(threads, ws); /* warm-up: clocks ramp, pages and code are touched */
  double best = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    double s = run_threads(threads, ws);
    if (s < best) best = s;
  }
  double flops = 2.0 * (double)isa_lanes[isa] * isa_chains[isa] * (double)iters * threads;
  return flops / best * 1e-9;
}

/* Each thread first-touches its own slice, so pages land near the core that uses them. */
static void *first_touch(void *arg) {
  worker *w = arg;
  for (size_t i = 0; i < w->n; i++) {
    w->a[i] = 0.0f;
    w->b[i] = 1.0f;
    w->c[i] = 2.0f;
  }
  return NULL;
}

static double triad_gbs(int threads, size_t n_total) {
  float *a = aligned_alloc(64, n_total * sizeof(float));
  float *b = aligned_alloc(64, n_total * sizeof(float));
  float *c = aligned_alloc(64, n_total * sizeof(float));
  if (!a || !b || !c) {
    fprintf(stderr, "bench-limits: out of memory for triad arrays (%zu elements)\n", n_total);
    exit(1);
  }
  worker ws[MAX_THREADS];
  memset(ws, 0, sizeof ws);
  size_t per = n_total / (size_t)threads;
  for (int t = 0; t < threads; t++) {
    ws[t].a = a + (size_t)t * per;
    ws[t].b = b + (size_t)t * per;
    ws[t].c = c + (size_t)t * per;
    ws[t].n = (t == threads - 1) ? n_total - (size_t)t * per : per;
  }
  pthread_t tid[MAX_THREADS];
  for (int t = 0; t < threads; t++) pthread_create(&tid[t], NULL, first_touch, &ws[t]);
  for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
  run_threads(threads, ws); /* warm-up */
  double best = 1e30;
  for (int r = 0; r < REPEATS; r++) {
    double s = run_threads(threads, ws);
    if (s < best) best = s;
  }
  sink = a[n_total / 2];
  free(a);
  free(b);
  free(c);
  return 3.0 * sizeof(float) * (double)n_total / best * 1e-9;
}

/* Picks the widest FMA path the CPU and the OS support. `__builtin_cpu_supports` would be the natural
 * call, but Zig 0.14's compiler-rt does not provide `__cpu_model` / `__cpu_indicator_init`, so the
 * program links nothing it cannot find and asks CPUID directly: the feature bits, plus XGETBV to
 * check that the OS saves the YMM (and, for AVX-512, opmask and ZMM) state. */
static limits_isa detect_isa(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return LIMITS_ISA_SCALAR;
  int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
  if (!osxsave || !avx) return LIMITS_ISA_SCALAR;
  unsigned xlo, xhi;
  __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
  (void)xhi;
  int ymm_saved = (xlo & 0x6u) == 0x6u, zmm_saved = (xlo & 0xE6u) == 0xE6u;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return LIMITS_ISA_SCALAR;
  int avx2 = (b >> 5) & 1, avx512f = (b >> 16) & 1;
  if (avx512f && zmm_saved) return LIMITS_ISA_AVX512;
  if (avx2 && fma && ymm_saved) return LIMITS_ISA_AVX2;
  return LIMITS_ISA_SCALAR;
}

/* Calibrates the FMA round count so that one run takes about `target_s` seconds on one thread. */
static long calibrate_fma(limits_isa isa, double target_s) {
  long iters = 1 << 16;
  for (;;) {
    worker w;
    memset(&w, 0, sizeof w);
    w.isa = isa;
    w.fma_iters = iters;
    double s = run_threads(1, &w);
    if (s > target_s / 4 || iters > (1L << 40)) return (long)((double)iters * target_s / (s > 0 ? s : 1e-9));
    iters *= 4;
  }
}

const char *loom_bench_isa_name(void) { return isa_names[detect_isa()]; }
int loom_bench_isa_lanes(void) { return isa_lanes[detect_isa()]; }

void loom_bench_measure_limits(int threads, size_t triad_elems, double fma_seconds, loom_bench_limits *out) {
  if (threads < 1) threads = 1;
  if (threads > MAX_THREADS) threads = MAX_THREADS;
  limits_isa isa = detect_isa();
  long iters = calibrate_fma(isa, fma_seconds);
  out->isa = isa_names[isa];
  out->lanes = isa_lanes[isa];
  out->chains = isa_chains[isa];
  out->fma_gflops = fma_gflops(isa, threads, iters);
  out->triad_gbs = triad_gbs(threads, triad_elems);
}

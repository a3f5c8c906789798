/* tile_model.c — a C model of the f32 AVX-512 matmul register tile (docs/codegen.md "Schedule
 * rules" 2a), not part of the build: C[M][2304] = A[M][768] x B, B laid out in panels [72][768][32]
 * (as Loom lays out a Linear weight), one thread, rows tiled inside each panel as Loom does.
 * Variants of the k loop: the row addressing of A, B's prefetch 16 rows ahead (clamped with a
 * cmov, unclamped, none), k unrolled, A packed per k, other tile shapes; and, as the ceiling, a
 * loop of register-only FMAs (peak_fma). Each figure is the best of ROUNDS interleaved rounds
 * of 3 timed runs.
 *   cc -O3 -march=native -o /tmp/tile_model bench/limits/tile_model.c && /tmp/tile_model [M] [resident] [rounds]
 * resident = 1: every tile reads the same A rows and B panel (in cache: the instruction stream's
 * own limit). Figures: bench/results/2026-11-30-w21-mk-tile-model.md. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifndef K
#define K 768
#endif
#define PF 16
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define OPAQUE(p) __asm__ volatile("" : "+r"(p))

// V0: 12 row pointers (opaque), prefetch clamped (cmov), loop k by 1
static void tile_v0(const float *A, long lda, const float *B, float *C, long ldc, int kk, int clamp, int pf) {
  const float *a[12];
  for (int i = 0; i < 12; i++) { a[i] = A + i * lda; }
  const float *a0=a[0],*a1=a[1],*a2=a[2],*a3=a[3],*a4=a[4],*a5=a[5],*a6=a[6],*a7=a[7],*a8=a[8],*a9=a[9],*a10=a[10],*a11=a[11];
  OPAQUE(a0);OPAQUE(a1);OPAQUE(a2);OPAQUE(a3);OPAQUE(a4);OPAQUE(a5);OPAQUE(a6);OPAQUE(a7);OPAQUE(a8);OPAQUE(a9);OPAQUE(a10);OPAQUE(a11);
  __m512 c[12][2];
  for (int i = 0; i < 12; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (long k = 0; k < kk; k++) {
    if (pf) { long kp = clamp ? (k + PF < kk - 1 ? k + PF : kk - 1) : k + PF;
      _mm_prefetch((const char *)(B + kp * 32), _MM_HINT_T0); _mm_prefetch((const char *)(B + kp * 32 + 16), _MM_HINT_T0); }
    __m512 b0 = _mm512_loadu_ps(B + k * 32), b1 = _mm512_loadu_ps(B + k * 32 + 16);
#define R(i, p) { __m512 x = _mm512_set1_ps(p[k]); c[i][0] = _mm512_fmadd_ps(x, b0, c[i][0]); c[i][1] = _mm512_fmadd_ps(x, b1, c[i][1]); }
    R(0,a0) R(1,a1) R(2,a2) R(3,a3) R(4,a4) R(5,a5) R(6,a6) R(7,a7) R(8,a8) R(9,a9) R(10,a10) R(11,a11)
#undef R
  }
  for (int i = 0; i < 12; i++) { _mm512_storeu_ps(C + i * ldc, c[i][0]); _mm512_storeu_ps(C + i * ldc + 16, c[i][1]); }
}

// V1: base + stride A (compiler addressing), prefetch clamped or not, unroll U
#define TILE_BS(NAME, U) \
static void NAME(const float *A, long lda, const float *B, float *C, long ldc, int kk, int clamp, int pf) { \
  __m512 c[12][2]; \
  for (int i = 0; i < 12; i++) c[i][0] = c[i][1] = _mm512_setzero_ps(); \
  for (long k = 0; k < kk; k += U) { \
    _Pragma("unroll") for (int u = 0; u < U; u++) { long q = k + u; \
    if (pf) { long kp = clamp ? (q + PF < kk - 1 ? q + PF : kk - 1) : q + PF; \
      _mm_prefetch((const char *)(B + kp * 32), _MM_HINT_T0); _mm_prefetch((const char *)(B + kp * 32 + 16), _MM_HINT_T0); } \
    __m512 b0 = _mm512_loadu_ps(B + q * 32), b1 = _mm512_loadu_ps(B + q * 32 + 16); \
    _Pragma("unroll") for (int i = 0; i < 12; i++) { __m512 x = _mm512_set1_ps(A[i * lda + q]); \
      c[i][0] = _mm512_fmadd_ps(x, b0, c[i][0]); c[i][1] = _mm512_fmadd_ps(x, b1, c[i][1]); } } \
  } \
  for (int i = 0; i < 12; i++) { _mm512_storeu_ps(C + i * ldc, c[i][0]); _mm512_storeu_ps(C + i * ldc + 16, c[i][1]); } \
}
TILE_BS(tile_v1, 1)
TILE_BS(tile_v1u2, 2)
TILE_BS(tile_v1u4, 4)

// packed A: Ap[k][12]
static void tile_pk(const float *Ap, long lda, const float *B, float *C, long ldc, int kk, int clamp, int pf) {
  (void)lda; __m512 c[12][2];
  for (int i = 0; i < 12; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (long k = 0; k < kk; k++) {
    if (pf) { long kp = clamp ? (k + PF < kk - 1 ? k + PF : kk - 1) : k + PF;
      _mm_prefetch((const char *)(B + kp * 32), _MM_HINT_T0); _mm_prefetch((const char *)(B + kp * 32 + 16), _MM_HINT_T0); }
    __m512 b0 = _mm512_loadu_ps(B + k * 32), b1 = _mm512_loadu_ps(B + k * 32 + 16);
    _Pragma("unroll") for (int i = 0; i < 12; i++) { __m512 x = _mm512_set1_ps(Ap[k * 12 + i]);
      c[i][0] = _mm512_fmadd_ps(x, b0, c[i][0]); c[i][1] = _mm512_fmadd_ps(x, b1, c[i][1]); }
  }
  for (int i = 0; i < 12; i++) { _mm512_storeu_ps(C + i * ldc, c[i][0]); _mm512_storeu_ps(C + i * ldc + 16, c[i][1]); }
}

// 8 x 48 tile: B panel [K][48]
static void tile_8x48(const float *A, long lda, const float *B, float *C, long ldc, int kk, int clamp, int pf) {
  __m512 c[8][3];
  for (int i = 0; i < 8; i++) c[i][0] = c[i][1] = c[i][2] = _mm512_setzero_ps();
  for (long k = 0; k < kk; k++) {
    if (pf) { long kp = clamp ? (k + PF < kk - 1 ? k + PF : kk - 1) : k + PF;
      for (int l = 0; l < 3; l++) _mm_prefetch((const char *)(B + kp * 48 + 16 * l), _MM_HINT_T0); }
    __m512 b0 = _mm512_loadu_ps(B + k * 48), b1 = _mm512_loadu_ps(B + k * 48 + 16), b2 = _mm512_loadu_ps(B + k * 48 + 32);
    _Pragma("unroll") for (int i = 0; i < 8; i++) { __m512 x = _mm512_set1_ps(A[i * lda + k]);
      c[i][0] = _mm512_fmadd_ps(x, b0, c[i][0]); c[i][1] = _mm512_fmadd_ps(x, b1, c[i][1]); c[i][2] = _mm512_fmadd_ps(x, b2, c[i][2]); }
  }
  for (int i = 0; i < 8; i++) for (int l = 0; l < 3; l++) _mm512_storeu_ps(C + i * ldc + 16 * l, c[i][l]);
}
// 14 x 32
static void tile_14(const float *A, long lda, const float *B, float *C, long ldc, int kk, int clamp, int pf) {
  __m512 c[14][2];
  for (int i = 0; i < 14; i++) c[i][0] = c[i][1] = _mm512_setzero_ps();
  for (long k = 0; k < kk; k++) {
    if (pf) { long kp = clamp ? (k + PF < kk - 1 ? k + PF : kk - 1) : k + PF;
      _mm_prefetch((const char *)(B + kp * 32), _MM_HINT_T0); _mm_prefetch((const char *)(B + kp * 32 + 16), _MM_HINT_T0); }
    __m512 b0 = _mm512_loadu_ps(B + k * 32), b1 = _mm512_loadu_ps(B + k * 32 + 16);
    _Pragma("unroll") for (int i = 0; i < 14; i++) { __m512 x = _mm512_set1_ps(A[i * lda + k]);
      c[i][0] = _mm512_fmadd_ps(x, b0, c[i][0]); c[i][1] = _mm512_fmadd_ps(x, b1, c[i][1]); }
  }
  for (int i = 0; i < 14; i++) { _mm512_storeu_ps(C + i * ldc, c[i][0]); _mm512_storeu_ps(C + i * ldc + 16, c[i][1]); }
}

/* the ceiling: 24 independent register FMA chains, each hidden from the optimiser every round */
static double peak_fma(void) {
  double best = 0;
  for (int r = 0; r < 5; r++) {
    __m512 c[24];
    for (int i = 0; i < 24; i++) c[i] = _mm512_set1_ps(1.0f + 1e-3f * (float)i);
    const __m512 x = _mm512_set1_ps(0.999999f), y = _mm512_set1_ps(1e-6f);
    long n = 2000000;
    double t0 = now();
    for (long k = 0; k < n; k++) {
      for (int i = 0; i < 24; i++) c[i] = _mm512_fmadd_ps(c[i], x, y);
      for (int i = 0; i < 24; i++) __asm__ volatile("" : "+v"(c[i]));
    }
    double t = now() - t0, g = 2.0 * 16 * 24 * (double)n / t * 1e-9;
    float s = 0;
    for (int i = 0; i < 24; i++) s += _mm512_reduce_add_ps(c[i]);
    if (s == 0.5f) printf(" ");
    if (g > best) best = g;
  }
  return best;
}

typedef void (*tile_fn)(const float *, long, const float *, float *, long, int, int, int);
static float *A, *Ap, *B, *C; static long M, N; static int resident;
static double run(tile_fn f, int rows, int width, int clamp, int pf, int packed) {
  double best = 1e9;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = now();
    for (long jo = 0; jo + width <= N; jo += width) {
      const float *Bp = resident ? B : B + jo * (K + PF);
      for (long i = 0; i + rows <= M; i += rows) {
        if (packed) { // pack A tile per panel? (amortised: pack once per row tile; here counted per panel for honesty only on first)
          f(Ap + (resident ? 0 : i * K), K, Bp, C + i * N + jo, N, K, clamp, pf);
        } else f(A + (resident ? 0 : i * K), K, Bp, C + i * N + jo, N, K, clamp, pf);
      }
    }
    double t = now() - t0; if (t < best) best = t;
  }
  long mm = M / rows * rows, nn = N / width * width;
  return 2.0 * mm * nn * K / best * 1e-9;
}
int main(int argc, char **argv) {
  M = argc > 1 ? atol(argv[1]) : 1936; N = 2304;
  A = aligned_alloc(64, sizeof(float) * (M + 16) * K); Ap = aligned_alloc(64, sizeof(float) * (M + 16) * K);
  B = aligned_alloc(64, sizeof(float) * (N + 64) * (K + PF)); C = aligned_alloc(64, sizeof(float) * (M + 16) * N);
  for (long i = 0; i < (M + 16) * K; i++) A[i] = Ap[i] = (float)(i % 7) * 0.1f;
  for (long i = 0; i < (N + 64) * (K + PF); i++) B[i] = (float)(i % 5) * 0.1f;
  memset(C, 0, sizeof(float) * (M + 16) * N);
  resident = argc > 2 ? atoi(argv[2]) : 0;
  struct { const char *name; tile_fn f; int rows, width, clamp, pf, packed; double best; } v[] = {
    {"v0 12 ptrs, pf clamped", tile_v0, 12, 32, 1, 1, 0, 0},
    {"v0 12 ptrs, pf unclamped", tile_v0, 12, 32, 0, 1, 0, 0},
    {"v0 12 ptrs, no pf", tile_v0, 12, 32, 0, 0, 0, 0},
    {"v1 base+stride, pf clamped", tile_v1, 12, 32, 1, 1, 0, 0},
    {"v1 base+stride, pf unclamped", tile_v1, 12, 32, 0, 1, 0, 0},
    {"v1 base+stride, no pf", tile_v1, 12, 32, 0, 0, 0, 0},
    {"v1 k unroll 2, unclamped", tile_v1u2, 12, 32, 0, 1, 0, 0},
    {"v1 k unroll 4, unclamped", tile_v1u4, 12, 32, 0, 1, 0, 0},
    {"packed A (per k 12 floats), unclamped", tile_pk, 12, 32, 0, 1, 1, 0},
    {"8x48, unclamped", tile_8x48, 8, 48, 0, 1, 0, 0},
    {"14x32, unclamped", tile_14, 14, 32, 0, 1, 0, 0},
  };
  int nv = sizeof v / sizeof v[0], rounds = argc > 3 ? atoi(argv[3]) : 6;
  double peak = 0;
  for (int r = 0; r < rounds; r++) {
    double g = peak_fma();
    if (g > peak) peak = g;
    for (int k = 0; k < nv; k++) { g = run(v[k].f, v[k].rows, v[k].width, v[k].clamp, v[k].pf, v[k].packed); if (g > v[k].best) v[k].best = g; }
  }
  printf("M=%ld K=%d N=%ld resident=%d: GFLOP/s, best of %d interleaved rounds x 5\n", M, K, N, resident, rounds);
  printf("  %-40s %6.1f\n", "register-only FMAs (the ceiling)", peak);
  for (int k = 0; k < nv; k++) printf("  %-40s %6.1f  (%.0f%%)\n", v[k].name, v[k].best, 100 * v[k].best / peak);
  return 0;
}

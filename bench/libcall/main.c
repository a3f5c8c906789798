/* bench/libcall — where BLAS beats the generated matmul: the offload threshold.
 *
 *   scripts/zig build bench -Doptimize=ReleaseFast && zig-out/bin/bench-libcall [--threads T] [--quick]
 *
 * In ONE run, for rows M (the offload pass's guard variable) at the K x N of GPT-2 layers,
 * it times (1) the generated path: the program `legalize` makes for matmul, with the
 * default CPU schedule (`schedule`), JIT-compiled by targets/cpu, (2) the library path:
 * the `blas.sgemm` built-in called through libcall exactly as the VM calls it (kernel ABI,
 * ffi closure), and (3) cblas_sgemm called directly. It prints the ratio generated/BLAS
 * (> 1: the generated kernel is slower) and libcall/direct (the offload's overhead), and
 * the largest M at which the generated kernel is still at least as fast for every K x N:
 * the value to use for LOOM_OFFLOAD_DEFAULT_THRESHOLD (graph/offload.h). Best of several
 * repetitions; the machine may be shared: expect noise. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "graph/graph.h"
#include "graph/legalize.h"
#include "libcall/libcall.h"
#include "targets/cpu/codegen.h"
#include "vm/threadpool.h"
#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_schedule_cpu.h"

void openblas_set_num_threads(int);

static void set_error(const loom_kernel_ctx *c, const char *m) {
  (void)c;
  fprintf(stderr, "kernel error: %s\n", m);
}

static int fail(loom_status s) {
  fprintf(stderr, "error: %s\n", loom_status_text(s, 0));
  loom_status_free(s);
  return 1;
}

/* Best time (s) of fn over repetitions lasting ~0.2 s. */
static double best_of(loom_kernel_fn fn, void **bufs, const int64_t *syms, const loom_kernel_ctx *ctx) {
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 500 && (rep < 3 || total < 0.2); rep++) {
    uint64_t t0 = loom_clock_ns();
    if (fn(bufs, syms, ctx)) return -1;
    double t = (double)(loom_clock_ns() - t0) * 1e-9;
    total += t;
    if (t < best) best = t;
  }
  return best;
}

static int32_t direct_sgemm(void *const *b, const int64_t *s, const loom_kernel_ctx *c) {
  (void)c;
  int M = (int)s[0], K = (int)s[1], N = (int)s[3];
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, b[0], K, b[1], N, 0.0f, b[2], N);
  return 0;
}

int main(int argc, char **argv) {
  int threads = 2, quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else return fprintf(stderr, "usage: bench-libcall [--threads T] [--quick]\n"), 2;
  }
  if (threads < 1) threads = 1;
  openblas_set_num_threads(threads);
  /* the generated path: legalize + schedule of a 2-d matmul */
  static const char *text = "fn @main(x: Tensor[(m, k), f32], w: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] {\n"
                            "  y = matmul(x, w)\n  return y\n}\n";
  loom_source src = {"bench", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m;
  loom_status s = loom_graph_parse(&src, &dl, &m);
  if (!s) s = loom_graph_legalize(m, NULL, NULL, NULL);
  if (s) return fail(s);
  loom_tp_func *tp = loom_graph_module_tp_at(m, 0);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  if ((s = loom_tp_schedule_cpu(loom_graph_module_arena(m), loom_graph_module_sym(m), tp, &why))) return fail(s);
  loom_strbuf_free(&why);
  loom_cpu_jit *jit;
  loom_kernel_fn gen;
  if ((s = loom_cpu_jit_create(NULL, &jit))) return fail(s);
  const loom_tp_func *fs[1] = {tp};
  if ((s = loom_cpu_jit_compile(jit, loom_graph_module_sym(m), fs, 1, &gen))) return fail(s);
  /* the library path: blas.sgemm through libcall */
  loom_dtype dt[3] = {LOOM_DTYPE_F32, LOOM_DTYPE_F32, LOOM_DTYPE_F32};
  int32_t rk[3] = {2, 2, 2};
  loom_libcall_sig sig = {.name = "mm", .symbol = "blas.sgemm", .nbuf = 3, .buf_dtypes = dt, .buf_ranks = rk, .nsym = 6};
  loom_libcall_lib *lib;
  if ((s = loom_libcall_lib_create(NULL, &sig, 1, NULL, &lib))) return fail(s);
  loom_kernel_fn blas = loom_libcall_lib_find(lib, "mm");
  loom_cpu_pool *pool;
  if ((s = loom_cpu_pool_create(NULL, (uint32_t)threads, &pool))) return fail(s);
  loom_kernel_ctx ctx = {LOOM_KERNEL_ABI_VERSION, sizeof(loom_kernel_ctx), (uint32_t)threads, 0,
                         loom_cpu_pool_parallel_for, pool, set_error, NULL, NULL, NULL};
  printf("bench-libcall: %d threads; generated = legalize+schedule matmul (JIT), blas = blas.sgemm via libcall\n", threads);
  static const int64_t kn[][2] = {{768, 768}, {768, 3072}, {3072, 768}};
  static const int64_t rows[] = {1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 128, 256};
  int64_t threshold = -1;
  bool crossed[3] = {false, false, false};
  int64_t first_cross[3] = {0, 0, 0};
  for (size_t c = 0; c < (quick ? 1u : 3u); c++) {
    int64_t K = kn[c][0], N = kn[c][1];
    printf("  K=%lld N=%lld\n      M   generated us   blas us   direct us   gen/blas   libcall/direct\n", (long long)K,
           (long long)N);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
      int64_t M = rows[r];
      float *A = malloc((size_t)(M * K) * 4), *B = malloc((size_t)(K * N) * 4), *C = malloc((size_t)(M * N) * 4);
      for (int64_t i = 0; i < M * K; i++) A[i] = (float)(i % 7) * 0.1f;
      for (int64_t i = 0; i < K * N; i++) B[i] = (float)(i % 5) * 0.1f;
      void *bufs[3] = {A, B, C};
      /* the generated program's symbols, bound from its buffer dims by name (m, k, n) */
      int64_t gsyms[8];
      for (size_t j = 0; j < tp->nsyms && j < 8; j++) {
        const char *nm = loom_sym_var_name(tp->syms[j]);
        if (strcmp(nm, "m") && strcmp(nm, "k") && strcmp(nm, "n"))
          return fprintf(stderr, "error: the generated matmul has symbol '%s' (expected m, k, n)\n", nm), 1;
        gsyms[j] = !strcmp(nm, "m") ? M : !strcmp(nm, "k") ? K : N;
      }
      int64_t bsyms[6] = {M, K, K, N, M, N};
      double tg = best_of(gen, bufs, gsyms, &ctx), tb = best_of(blas, bufs, bsyms, &ctx),
             td = best_of(direct_sgemm, bufs, bsyms, &ctx);
      printf("  %5lld   %12.1f   %7.1f   %9.1f   %8.2f   %14.3f\n", (long long)M, tg * 1e6, tb * 1e6, td * 1e6, tg / tb,
             td / tb);
      if (tg > tb && !crossed[c]) crossed[c] = true, first_cross[c] = M;
      free(A), free(B), free(C);
    }
  }
  /* the threshold: the largest measured M below every shape's first crossing */
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    bool below = true;
    for (size_t c = 0; c < (quick ? 1u : 3u); c++) below = below && (!crossed[c] || rows[r] < first_cross[c]);
    if (below) threshold = rows[r];
  }
  printf("threshold: generated is at least as fast as BLAS up to M = %lld rows (0: BLAS is faster from M = 1)\n",
         (long long)(threshold < 0 ? 0 : threshold));
  loom_cpu_pool_destroy(pool);
  loom_libcall_lib_destroy(lib);
  loom_cpu_jit_destroy(jit);
  loom_graph_module_destroy(m);
  loom_diag_list_destroy(&dl);
  return 0;
}

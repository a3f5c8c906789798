/* bench/kernels — Loom's CPU kernels against this machine's limits and OpenBLAS.
 *
 *   scripts/zig build bench -Doptimize=ReleaseFast && zig-out/bin/bench-kernels [--threads T] [--quick]
 *
 * In ONE run it measures (1) the FP32 FMA peak (independent chains of 16-wide FMAs, per
 * thread count), (2) triad bandwidth (a = b + s*c, arrays far larger than the caches),
 * then JIT-compiles Loom tensor programs (tensorprog text -> targets/cpu) and reports each
 * kernel as GFLOP/s or GB/s, as a percent of the peak it is bound by, and for matmul as a
 * ratio to OpenBLAS cblas_sgemm with the same thread count; plus compile time per kernel.
 * Times are the best of several repetitions (the machine is shared: expect noise).
 * Parallel loops run on the runtime's thread pool (vm/threadpool.h).
 *
 * "generated" kernels are what `loom compile` runs: the program legalization generates
 * (tensorprog/gen_nn.c: linear X·Wᵀ + bias, matmul, batched matmul) scheduled by the default
 * CPU rule (loom_tp_schedule_cpu); compile time includes the schedule. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "bench/common/machine_limits.h"
#include "targets/cpu/codegen.h"
#include "vm/threadpool.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_schedule_cpu.h"

void openblas_set_num_threads(int);

/* ---- the runtime's thread pool (vm/threadpool.h) ---------------------------- */

enum { MAXT = 16 };
typedef struct pool {
  loom_cpu_pool *p;
  int nthreads;
} pool;

static int pool_start(pool *p, int n) {
  p->nthreads = n;
  loom_status s = loom_cpu_pool_create(NULL, (uint32_t)n, &p->p);
  if (s) {
    fprintf(stderr, "error: %s\n", loom_status_text(s, 0));
    loom_status_free(s);
    return -1;
  }
  return 0;
}

static void pool_stop(pool *p) { loom_cpu_pool_destroy(p->p); }

static void set_error(const loom_kernel_ctx *c, const char *m) {
  (void)c;
  fprintf(stderr, "kernel error: %s\n", m);
}

static double now_s(void) { return (double)loom_clock_ns() * 1e-9; }

/* ---- Loom kernels ------------------------------------------------------------------- */

typedef struct prog {
  loom_sym_ctx *cx;
  loom_arena arena;
  loom_diag_list diags;
  loom_tp_func *f;
  loom_kernel_fn fn;
  double compile_ms;
  double schedule_ms, irgen_ms, opt_ms, codegen_ms; /* parts of compile_ms (generated kernels) */
} prog;

static loom_cpu_jit *g_jit;

static int prog_load(prog *p, const char *text) {
  memset(p, 0, sizeof *p);
  if (loom_sym_ctx_create(NULL, &p->cx)) return -1;
  loom_arena_init(&p->arena, NULL, 0);
  loom_diag_list_init(&p->diags, NULL);
  loom_source src = {"bench", text, strlen(text)};
  size_t pos = 0;
  loom_status s = loom_tp_parse_func(&p->arena, p->cx, &src, &pos, &p->diags, &p->f);
  if (!s) s = loom_tp_verify(p->cx, p->f);
  uint64_t t0 = loom_clock_ns();
  const loom_tp_func *fs[1] = {p->f};
  if (!s) s = loom_cpu_jit_compile(g_jit, p->cx, fs, 1, &p->fn);
  p->compile_ms = (double)(loom_clock_ns() - t0) / 1e6;
  if (s) {
    fprintf(stderr, "error: %s\n", loom_status_text(s, 0));
    loom_status_free(s);
    return -1;
  }
  return 0;
}

static void prog_free(prog *p) {
  loom_diag_list_destroy(&p->diags);
  loom_arena_destroy(&p->arena);
  loom_sym_ctx_destroy(p->cx);
}

/* Best time of `fn` over repetitions lasting at least ~0.3 s in all. */
static double time_kernel(prog *p, void **bufs, const int64_t *syms, const loom_kernel_ctx *ctx) {
  double best = 1e30, total = 0;
  for (int rep = 0; rep < 200 && (rep < 3 || total < 0.3); rep++) {
    double t0 = now_s();
    if (p->fn(bufs, syms, ctx)) return -1;
    double t = now_s() - t0;
    total += t;
    if (t < best) best = t;
  }
  return best;
}

static float *rnd(int64_t n) {
  float *x = malloc((size_t)(n ? n : 1) * 4);
  uint64_t s = 0x9e3779b97f4a7c15ull * (uint64_t)(n + 1);
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (float)((s >> 40) & 0xffff) / 65536.0f - 0.5f;
  }
  return x;
}

static double g_peak, g_triad;
static loom_kernel_ctx *g_ctx;



static void bench_matmul(prog *p, pool *pl, const loom_kernel_ctx *ctx, int64_t m, int64_t k, int64_t n,
                         double *out_ratio) {
  float *A = rnd(m * k), *B = rnd(k * n), *C = malloc((size_t)(m * n) * 4), *R = malloc((size_t)(m * n) * 4);
  void *bufs[3] = {A, B, C};
  int64_t syms[3] = {m, k, n}; /* f->syms order: m, k, n (first appearance) */
  double t = time_kernel(p, bufs, syms, ctx);
  double tb = 1e30, total = 0;
  for (int rep = 0; rep < 200 && (rep < 3 || total < 0.3); rep++) {
    double t0 = now_s();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, A, (int)k, B, (int)n, 0.0f,
                R, (int)n);
    double s = now_s() - t0;
    total += s;
    if (s < tb) tb = s;
  }
  double maxerr = 0;
  for (int64_t i = 0; i < m * n; i++) maxerr = fmax(maxerr, fabs(C[i] - R[i]));
  double gf = 2.0 * (double)m * (double)n * (double)k / t * 1e-9, gfb = 2.0 * (double)m * (double)n * (double)k / tb * 1e-9;
  printf("  matmul %5lld x %5lld x %5lld  %7.1f GFLOP/s  %5.1f%% of peak  OpenBLAS %7.1f GFLOP/s  ratio %.2f  (max|diff| %.1e)\n",
         (long long)m, (long long)k, (long long)n, gf, 100 * gf / g_peak, gfb, gf / gfb, maxerr);
  if (out_ratio) *out_ratio = gf;
  (void)pl;
  free(A);
  free(B);
  free(C);
  free(R);
}

static void bench_rowwise(const char *name, prog *p, const loom_kernel_ctx *ctx, int64_t rows, int64_t cols,
                          int nbuf, double bytes_per_elem) {
  float *X = rnd(rows * cols), *Y = malloc((size_t)(rows * cols) * 4), *Z = rnd(rows * cols);
  float *G = rnd(cols), *Bt = rnd(cols);
  void *bufs[5] = {X, Y, Z, G, Bt};
  (void)nbuf;
  int64_t syms[2] = {rows, cols};
  double t = time_kernel(p, bufs, syms, ctx);
  double gbs = bytes_per_elem * (double)(rows * cols) / t * 1e-9;
  printf("  %-10s %5lld x %5lld  %7.3f ms  %6.1f GB/s  %5.1f%% of triad\n", name, (long long)rows, (long long)cols,
         t * 1e3, gbs, 100 * gbs / g_triad);
  free(X);
  free(Y);
  free(Z);
  free(G);
  free(Bt);
}

/* ---- generated (default-rule) kernels ------------------------------------------------- */

typedef loom_status (*gen_fn)(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out);

static loom_status gen_linear(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_linear(a, cx, "gen_linear", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, true, out);
}
static loom_status gen_matmul(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul(a, cx, "gen_matmul", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, NULL, 2, NULL, out);
}
static loom_status gen_bmm(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast m[] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL};
  return loom_tp_gen_matmul(a, cx, "gen_bmm", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 4, m, 4, m, out);
}

static const loom_tp_bcast full2[] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL};
static loom_status gen_add(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_binary(a, cx, "gen_add", "a + b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, full2, 2, full2, out);
}
/* a fused chain as the fusion pass makes it: bias-add, GELU (tanh form), residual add */
static loom_status gen_chain(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_dtype in[3] = {LOOM_DTYPE_F32, LOOM_DTYPE_F32, LOOM_DTYPE_F32};
  static const int ranks[3] = {2, 2, 2};
  static const loom_tp_bcast *const modes[3] = {full2, full2, full2};
  return loom_tp_gen_nary(a, cx, "gen_chain",
                          "0.5 * (a + b) * (1.0 + tanh(0.7978846 * ((a + b) + 0.044715 * (a + b) * (a + b) * (a + b)))) + c",
                          3, in, LOOM_DTYPE_F32, ranks, modes, out);
}
static loom_status gen_softmax(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_softmax(a, cx, "gen_softmax", LOOM_DTYPE_F32, 2, 1, false, out);
}
static loom_status gen_layer_norm(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_layer_norm(a, cx, "gen_layer_norm", LOOM_DTYPE_F32, 2, 1, 1e-5, false, out);
}
static loom_status gen_rms_norm(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_layer_norm(a, cx, "gen_rms_norm", LOOM_DTYPE_F32, 2, 1, 1e-5, true, out);
}

static int prog_generate(prog *p, gen_fn gen) {
  memset(p, 0, sizeof *p);
  if (loom_sym_ctx_create(NULL, &p->cx)) return -1;
  loom_arena_init(&p->arena, NULL, 0);
  loom_diag_list_init(&p->diags, NULL);
  loom_status s = gen(&p->arena, p->cx, &p->f);
  uint64_t t0 = loom_clock_ns();
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  if (!s) s = loom_tp_schedule_cpu(&p->arena, p->cx, p->f, &why);
  p->schedule_ms = (double)(loom_clock_ns() - t0) / 1e6;
  if (!s && strstr(p->f->name, "mm") && !strstr(loom_strbuf_cstr(&why), "register-tiled"))
    fprintf(stderr, "note: @%s not register-tiled:\n%s", p->f->name, loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  const loom_tp_func *fs[1] = {p->f};
  if (!s) s = loom_cpu_jit_compile(g_jit, p->cx, fs, 1, &p->fn);
  p->compile_ms = (double)(loom_clock_ns() - t0) / 1e6;
  loom_cpu_jit_last_times(g_jit, &p->irgen_ms, &p->opt_ms, &p->codegen_ms);
  if (s) {
    fprintf(stderr, "error: %s\n", loom_status_text(s, 0));
    loom_status_free(s);
    return -1;
  }
  return 0;
}

static void print_compile(const char *name, const prog *p) {
  printf("  compile %-15s %7.1f ms (schedule %.1f, IR gen %.1f, O3 %.1f, machine code %.1f)\n", name, p->compile_ms,
         p->schedule_ms, p->irgen_ms, p->opt_ms, p->codegen_ms);
}

/* The program's symbols in its own order, by name. */
static void bind_syms(const loom_tp_func *f, const char *const *names, const int64_t *values, size_t n,
                      int64_t *syms) {
  for (size_t j = 0; j < f->nsyms; j++) {
    syms[j] = 0;
    for (size_t i = 0; i < n; i++)
      if (!strcmp(loom_sym_var_name(f->syms[j]), names[i])) syms[j] = values[i];
  }
}

/* A generated row-wise program on (rows, cols): its buffers bound by name (X/A, B, C, gamma,
 * beta; Y the result), d0 = rows, d1 = cols. */
static void bench_rowwise_generated(const char *name, prog *p, int64_t rows, int64_t cols, double bytes_per_elem) {
  float *in[3] = {rnd(rows * cols), rnd(rows * cols), rnd(rows * cols)}, *Y = malloc((size_t)(rows * cols) * 4);
  float *G = rnd(cols), *Bt = rnd(cols);
  void *bufs[8];
  for (size_t i = 0; i < p->f->nparams && i < 8; i++) {
    const char *bn = p->f->params[i].buf->name;
    bufs[i] = !strcmp(bn, "gamma") ? (void *)G : !strcmp(bn, "beta") ? (void *)Bt : !strcmp(bn, "Y") ? (void *)Y
            : !strcmp(bn, "B") ? (void *)in[1] : !strcmp(bn, "C") ? (void *)in[2] : (void *)in[0];
  }
  int64_t syms[8];
  static const char *const names[] = {"d0", "d1"};
  int64_t vals[] = {rows, cols};
  bind_syms(p->f, names, vals, 2, syms);
  double t = time_kernel(p, bufs, syms, g_ctx);
  double gbs = bytes_per_elem * (double)(rows * cols) / t * 1e-9;
  printf("  %-10s %5lld x %5lld  %7.3f ms  %6.1f GB/s  %5.1f%% of triad  (compile %.1f ms)\n", name, (long long)rows,
         (long long)cols, t * 1e3, gbs, 100 * gbs / g_triad, p->compile_ms);
  for (int i = 0; i < 3; i++) free(in[i]);
  free(Y);
  free(G);
  free(Bt);
}

static double time_blas(int batch, int64_t m, int64_t k, int64_t n, const float *A, const float *B, float *R,
                        bool bt) {
  double tb = 1e30, total = 0;
  for (int rep = 0; rep < 200 && (rep < 3 || total < 0.3); rep++) {
    double t0 = now_s();
    for (int b = 0; b < batch; b++)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, bt ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f,
                  A + b * m * k, (int)k, B + b * k * n, bt ? (int)k : (int)n, 0.0f, R + b * m * n, (int)n);
    double s = now_s() - t0;
    total += s;
    if (s < tb) tb = s;
  }
  return tb;
}

/* kind 0: linear Y = X·Wᵀ + bias (OpenBLAS: sgemm NoTrans/Trans, bias not added — a rounding
 * error in the ratio); 1: matmul; 2: batched matmul of `batch` (b=1, heads) problems. */
static void bench_generated(const char *label, prog *p, int kind, int64_t batch, int64_t m, int64_t k, int64_t n) {
  float *A = rnd(batch * m * k), *B = rnd(batch * k * n), *bias = rnd(n);
  float *C = malloc((size_t)(batch * m * n + 1) * 4), *R = malloc((size_t)(batch * m * n + 1) * 4);
  int64_t syms[8];
  static const char *const names[] = {"d0", "d1", "m", "k", "n"};
  int64_t vals[] = {kind == 2 ? 1 : m, batch, m, k, n};
  bind_syms(p->f, names, vals, 5, syms);
  void *bufs[4] = {A, B, kind == 0 ? (void *)bias : (void *)C, C};
  loom_kernel_ctx *ctx = g_ctx;
  double t = time_kernel(p, bufs, syms, ctx);
  double tb = time_blas((int)batch, m, k, n, A, B, R, kind == 0);
  double maxerr = 0;
  for (int64_t i = 0; i < batch * m * n; i++)
    maxerr = fmax(maxerr, fabs(C[i] - R[i] - (kind == 0 ? bias[i % n] : 0.0f)));
  double flop = 2.0 * (double)batch * (double)m * (double)n * (double)k;
  double gf = flop / t * 1e-9, gfb = flop / tb * 1e-9;
  printf("  %-7s %3lldx %5lld x %5lld x %5lld  %7.1f GFLOP/s  %5.1f%% of peak  OpenBLAS %7.1f  ratio %.2f  "
         "(max|diff| %.1e)\n",
         label, (long long)batch, (long long)m, (long long)k, (long long)n, gf, 100 * gf / g_peak, gfb, gf / gfb,
         maxerr);
  free(A);
  free(B);
  free(bias);
  free(C);
  free(R);
}

static const char *add_text =
    "prim @add(X: Buffer[(r, c), f32], Y: Buffer[(r, c), f32], Z: Buffer[(r, c), f32]) {\n"
    "  for i in 0..r parallel { for j in 0..c vectorize { Y[i, j] = X[i, j] + Z[i, j] } }\n}\n";
static const char *softmax_text =
    /* exp computed once: stored into Y during the sum pass, then scaled in place (the
     * row is in L1/L2 by then) */
    "prim @softmax(X: Buffer[(r, c), f32], Y: Buffer[(r, c), f32]) {\n"
    "  for i in 0..r parallel {\n"
    "    alloc acc: Local[(2,), f32]\n"
    "    acc[0] = -1.0e18\n"
    "    for j in 0..c reduce { acc[0] = max(acc[0], X[i, j]) }\n"
    "    acc[1] = 0.0\n"
    "    for k in 0..c vectorize { Y[i, k] = exp(X[i, k] - acc[0]) }\n"
    "    for k2 in 0..c reduce { acc[1] = acc[1] + Y[i, k2] }\n"
    "    let inv: f32 = 1.0 / acc[1]\n"
    "    for l in 0..c vectorize { Y[i, l] = Y[i, l] * inv }\n"
    "  }\n}\n";
static const char *layernorm_text =
    "prim @layer_norm(X: Buffer[(r, c), f32], Y: Buffer[(r, c), f32], Z: Buffer[(r, c), f32], G: Buffer[(c,), f32],\n"
    "                 Bt: Buffer[(c,), f32]) {\n"
    "  for i in 0..r parallel {\n"
    "    alloc acc: Local[(2,), f32]\n"
    "    acc[0] = 0.0\n"
    "    for j in 0..c reduce { acc[0] = acc[0] + X[i, j] }\n"
    "    let mean: f32 = acc[0] / f32(c)\n"
    "    acc[1] = 0.0\n"
    "    for k in 0..c reduce { acc[1] = acc[1] + (X[i, k] - mean) * (X[i, k] - mean) }\n"
    "    let inv: f32 = rsqrt(acc[1] / f32(c) + 0.00001)\n"
    "    for l in 0..c vectorize { Y[i, l] = (X[i, l] - mean) * inv * G[l] + Bt[l] }\n"
    "  }\n}\n";
static const char *rmsnorm_text =
    "prim @rms_norm(X: Buffer[(r, c), f32], Y: Buffer[(r, c), f32], Z: Buffer[(r, c), f32], G: Buffer[(c,), f32]) {\n"
    "  for i in 0..r parallel {\n"
    "    alloc acc: Local[(1,), f32]\n"
    "    acc[0] = 0.0\n"
    "    for j in 0..c reduce { acc[0] = acc[0] + X[i, j] * X[i, j] }\n"
    "    let inv: f32 = rsqrt(acc[0] / f32(c) + 0.00001)\n"
    "    for l in 0..c vectorize { Y[i, l] = X[i, l] * inv * G[l] }\n"
    "  }\n}\n";

int main(int argc, char **argv) {
  int threads = 2;
  int quick = 0;
  const char *cpu = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick")) quick = 1;
    else if (!strcmp(argv[i], "--cpu") && i + 1 < argc) cpu = argv[++i];
    else {
      fprintf(stderr, "usage: bench-kernels [--threads T] [--quick] [--cpu NAME]\n");
      return 2;
    }
  }
  if (threads < 1 || threads > MAXT) threads = 2;
  loom_cpu_options opt = {.cpu = cpu};
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  if (!loom_cpu_describe_target(&opt, &sb)) {
    const char *d = loom_strbuf_cstr(&sb);
    printf("target: %.*s\n", (int)(strchr(d, ' ') ? strchr(strchr(d, ' ') + 1, ' ') - d : (long)strlen(d)), d);
  }
  loom_strbuf_free(&sb);
  if (loom_cpu_jit_create(&opt, &g_jit)) return 1;
  openblas_set_num_threads(threads);
  pool pl;
  if (pool_start(&pl, threads)) return 1;
  loom_kernel_ctx ctx = {LOOM_KERNEL_ABI_VERSION, sizeof(loom_kernel_ctx), (uint32_t)threads, 0,
                         loom_cpu_pool_parallel_for, pl.p, set_error, NULL, NULL, NULL};
  /* The same measurement as bench-limits (bench/common/machine_limits), so "% of peak" agrees. */
  g_ctx = &ctx;
  loom_bench_limits lim;
  loom_bench_measure_limits(threads, quick ? (size_t)4 << 20 : (size_t)16 << 20, quick ? 0.05 : 0.2, &lim);
  g_peak = lim.fma_gflops;
  g_triad = lim.triad_gbs;
  printf("threads %d: FP32 FMA peak %.1f GFLOP/s (%s, %d lanes), triad %.1f GB/s (bench/common/machine_limits)\n", threads,
         g_peak, lim.isa, lim.lanes, g_triad);

  prog mm, add, sm, ln, rms;
  if (prog_load(&mm, loom_tp_cpu_matmul_tiled_text()) || prog_load(&add, add_text) || prog_load(&sm, softmax_text) ||
      prog_load(&ln, layernorm_text) || prog_load(&rms, rmsnorm_text))
    return 1;
  if (getenv("LOOM_DUMP_OBJ")) { /* for inspecting the machine code: objdump -d $LOOM_DUMP_OBJ */
    const char *which = getenv("LOOM_DUMP_KERNEL"); /* matmul (default) or softmax */
    prog *d = which && !strcmp(which, "softmax") ? &sm : &mm;
    const loom_tp_func *fs[1] = {d->f};
    loom_status s = loom_cpu_emit_object(&opt, d->cx, fs, 1, getenv("LOOM_DUMP_OBJ"));
    if (s) loom_status_free(s);
  }
  printf("compile time (parse+verify excluded; IR gen + O3 + machine code): matmul %.1f ms, add %.1f ms, "
         "softmax %.1f ms, layer_norm %.1f ms, rms_norm %.1f ms\n",
         mm.compile_ms, add.compile_ms, sm.compile_ms, ln.compile_ms, rms.compile_ms);

  printf("hand-written row-wise programs (bytes moved: add 12 B/elem, softmax/norms 8 B/elem):\n");
  bench_rowwise("add", &add, &ctx, 4096, quick ? 1024 : 4096, 3, 12);
  bench_rowwise("softmax", &sm, &ctx, quick ? 512 : 2048, 3072, 2, 8);
  bench_rowwise("layer_norm", &ln, &ctx, quick ? 2048 : 8192, 768, 2, 8);
  bench_rowwise("rms_norm", &rms, &ctx, quick ? 2048 : 8192, 768, 2, 8);

  prog gadd, gchain, gsm, gln, grms;
  if (prog_generate(&gadd, gen_add) || prog_generate(&gchain, gen_chain) || prog_generate(&gsm, gen_softmax) ||
      prog_generate(&gln, gen_layer_norm) || prog_generate(&grms, gen_rms_norm))
    return 1;
  printf("generated row-wise kernels (legalized program + default CPU schedule rule; add 12 B/elem, chain 16 B/elem: "
         "bias-add + tanh-GELU + residual add, softmax/norms 8 B/elem):\n");
  bench_rowwise_generated("add", &gadd, 4096, quick ? 1024 : 4096, 12);
  bench_rowwise_generated("chain", &gchain, 4096, quick ? 1024 : 4096, 16);
  bench_rowwise_generated("softmax", &gsm, quick ? 512 : 2048, 3072, 8);
  bench_rowwise_generated("layer_norm", &gln, quick ? 2048 : 8192, 768, 8);
  bench_rowwise_generated("rms_norm", &grms, quick ? 2048 : 8192, 768, 8);
  prog_free(&gadd);
  prog_free(&gchain);
  prog_free(&gsm);
  prog_free(&gln);
  prog_free(&grms);

  printf("matmul (ratio = Loom / OpenBLAS, same thread count):\n");
  static const int64_t sq[] = {1024, 1021};
  for (size_t i = 0; i < (quick ? 1u : 2u); i++) bench_matmul(&mm, &pl, &ctx, sq[i], sq[i], sq[i], NULL);
  static const int64_t ms[] = {1, 16, 128, 509, 512, 2048};
  static const int64_t kn[][2] = {{768, 3072}, {3072, 768}};
  for (size_t s = 0; s < 2; s++)
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
      if (quick && ms[i] > 512) continue;
      bench_matmul(&mm, &pl, &ctx, ms[i], kn[s][0], kn[s][1], NULL);
    }

  prog lin, gmm, bmm;
  if (prog_generate(&lin, gen_linear) || prog_generate(&gmm, gen_matmul) || prog_generate(&bmm, gen_bmm)) return 1;
  printf("generated kernels (legalized program + default CPU schedule rule):\n");
  print_compile("linear", &lin);
  print_compile("matmul", &gmm);
  print_compile("batched matmul", &bmm);
  for (size_t i = 0; i < (quick ? 1u : 2u); i++) bench_generated("matmul", &gmm, 1, 1, sq[i], sq[i], sq[i]);
  for (size_t s = 0; s < 2; s++)
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
      if (quick && ms[i] > 512) continue;
      bench_generated("linear", &lin, 0, 1, ms[i], kn[s][0], kn[s][1]);
      bench_generated("matmul", &gmm, 1, 1, ms[i], kn[s][0], kn[s][1]);
    }
  static const int64_t seqs[] = {128, 509, 512};
  for (size_t i = 0; i < sizeof seqs / sizeof seqs[0]; i++) {
    bench_generated("q*k^T", &bmm, 2, 12, seqs[i], 64, seqs[i]);
    bench_generated("p*v", &bmm, 2, 12, seqs[i], seqs[i], 64);
  }
  prog_free(&lin);
  prog_free(&gmm);
  prog_free(&bmm);
  prog_free(&mm);
  prog_free(&add);
  prog_free(&sm);
  prog_free(&ln);
  prog_free(&rms);
  pool_stop(&pl);
  loom_cpu_jit_destroy(g_jit);
  return 0;
}

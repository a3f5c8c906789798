/* test_cuda.c — the CUDA target's run-side logic without a GPU (the driver loader's messages,
 * launch dims, the kernel parameter array) and, where a GPU and its driver are present, the
 * whole path: programs scheduled by the GPU rules, compiled to PTX, loaded by the driver,
 * launched, and compared with the tensor-program interpreter at 0, 1, primes and odd sizes.
 * Without a device those tests skip and print why (scripts/test-gpu runs them on a GPU). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/loom_test.h"
#include "targets/cuda/driver.h"
#include "../tensorprog/tp_test_util.h"
#include "../tensorprog/tp_gpu_rows.h"

LOOM_TEST(cuda_driver, a_missing_driver_is_a_clear_unavailable_status) {
  loom_cuda_driver *d = (loom_cuda_driver *)1;
  loom_status s = loom_cuda_driver_open("libloom-no-such-cuda-driver.so.1", &d);
  cr_assert_not_null(s);
  cr_assert_null(d);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_UNAVAILABLE);
  cr_assert(strstr(loom_status_message(s), "the CUDA driver 'libloom-no-such-cuda-driver.so.1' cannot be loaded") != NULL,
            "%s", loom_status_message(s));
  cr_assert(strstr(loom_status_message(s), "no NVIDIA driver") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
}

/* The toolkit's stub library has every symbol and fails cuInit: the loader resolves all of
 * them and names the failing call. */
LOOM_TEST(cuda_driver, the_toolkit_stub_resolves_every_symbol_and_fails_init_by_name) {
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  FILE *f = fopen(stub, "rb");
  if (!f) cr_skip_test("no CUDA toolkit stub at %s", stub);
  fclose(f);
  loom_cuda_driver *d = NULL;
  loom_status s = loom_cuda_driver_open(stub, &d);
  cr_assert_not_null(s, "the stub driver opened a device");
  cr_assert(strstr(loom_status_message(s), "cuInit failed") != NULL, "%s", loom_status_text(s, 0));
  loom_status_free(s);
}

LOOM_TEST(cuda_launch, dims_from_the_launch_and_their_limits_by_name) {
  loom_cuda_launch_dims d;
  cr_assert_null(loom_cuda_launch_dims_of("k", 0, 256, &d));
  cr_assert_eq(d.grid_x, 0);
  cr_assert_null(loom_cuda_launch_dims_of("k", 2147483647, 1024, &d));
  cr_assert_eq(d.grid_x, 2147483647u);
  cr_assert_eq(d.block_x, 1024u);
  static const struct {
    int64_t blocks, threads;
    const char *msg;
  } bad[] = {
      {-1, 256, "kernel k: a grid of -1 blocks"},
      {2147483648LL, 256, "kernel k: a grid of 2147483648 blocks (CUDA allows 0 to 2147483647 in x)"},
      {1, 0, "kernel k: a block of 0 threads (CUDA allows 1 to 1024)"},
      {1, 1025, "kernel k: a block of 1025 threads"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    loom_status s = loom_cuda_launch_dims_of("k", bad[i].blocks, bad[i].threads, &d);
    cr_assert_not_null(s);
    cr_assert(strstr(loom_status_message(s), bad[i].msg) != NULL, "%s", loom_status_message(s));
    loom_status_free(s);
  }
}

LOOM_TEST(cuda_launch, kernel_parameters_follow_the_ptx_abi) {
  uint64_t bufs[3] = {0x1000, 0x2000, 0x3000};
  int64_t syms[2] = {7, -3};
  uint64_t err = 0x4000;
  void *p[6];
  loom_cuda_kernel_params(bufs, 3, syms, 2, &err, p);
  for (int k = 0; k < 3; k++) cr_assert_eq(*(uint64_t *)p[k], bufs[k]);
  cr_assert_eq(*(int64_t *)p[3], 7);
  cr_assert_eq(*(int64_t *)p[4], -3);
  cr_assert_eq(*(uint64_t *)p[5], 0x4000u);
  loom_cuda_kernel_params(NULL, 0, NULL, 0, &err, p); /* a kernel of no buffers, no symbols */
  cr_assert_eq(p[0], (void *)&err);
}

#if LOOM_HAVE_CUDA
#include "targets/cpu/codegen.h"
#include "targets/cuda/ptx.h"
#include "tensorprog/tp_schedule_gpu.h"
#include "driver/pipeline.h"

/* GPU programs: scheduled by the rules unless they are GPU programs already; after them the
 * row programs of tp_gpu_rows.h (a warp per row). Buffer shapes as in test_tp_gpu.c: one
 * letter per axis ('m', 'n', 'k', '8' for 8*m, '1', and tp_gpu_rows.h's '2', 'E', 'T'); the
 * last buffer is the output. */
typedef struct gpu_prog {
  const char *text;
  int nbuf;
  const char *dims[4];
} gpu_prog;

static const gpu_prog progs[] = {
    {"prim @add(A: Buffer[(m, n), f32], B: Buffer[(n,), f32], C: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m { for j in 0..n { C[i, j] = A[i, j] + B[j] } }\n}\n",
     3, {"mn", "n", "mn"}},
    {"prim @softmax(X: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc mx: Local[(1,), f32]\n    mx[0] = -inf\n"
     "    for j in 0..n reduce { mx[0] = max(mx[0], X[i, j]) }\n"
     "    alloc s: Local[(1,), f32]\n    s[0] = 0.0\n"
     "    for j2 in 0..n reduce { s[0] = s[0] + exp(X[i, j2] - mx[0]) }\n"
     "    for j3 in 0..n { Y[i, j3] = exp(X[i, j3] - mx[0]) / s[0] }\n  }\n}\n",
     2, {"mn", "mn"}},
    {"prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m { for j in 0..n {\n    C[i, j] = 0.0\n"
     "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n  } }\n}\n",
     3, {"mk", "kn", "mn"}},
    {"prim @concat(A: Buffer[(m,), f32], B: Buffer[(n,), f32], Y: Buffer[(m + n,), f32]) {\n"
     "  for i in 0..m { Y[i] = A[i] }\n  for j in 0..n { Y[m + j] = B[j] + 0.5 }\n}\n",
     3, {"m", "n", "M"}},
    {"prim @rev8(A: Buffer[(8*m,), f32], Y: Buffer[(8*m,), f32]) {\n"
     "  for b in 0..m gpu_block {\n    alloc S: Shared[(8,), f32]\n"
     "    for t in 0..8 gpu_thread {\n      S[t] = A[8*b + t]\n      barrier\n      Y[8*b + t] = S[-t + 7]\n    }\n  }\n}\n",
     2, {"8", "8"}},
};

static int64_t dim_of(char c, int64_t m, int64_t n, int64_t k) {
  return c == 'm' ? m : c == 'n' ? n : c == 'k' ? k : c == 'M' ? m + n : c == '8' ? 8 * m : c == '2' ? 2
         : c == 'E' ? 8 : c == 'T' ? 24 : 1;
}

/* One program on the GPU against the interpreter at sizes (m, n, k). */
static void run_on_gpu(loom_cuda_driver *d, tp_fixture *fx, loom_cuda_module *mod, const gpu_prog *p, int64_t m,
                       int64_t n, int64_t k) {
  char name[200];
  snprintf(name, sizeof name, "loom_kernel_%s", fx->f->name);
  void *fn;
  loom_status s = loom_cuda_kernel_get(d, mod, name, &fn);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  int64_t shapes[4][2];
  size_t counts[4];
  float *host[4];
  uint64_t dev[4];
  loom_tp_arg args[4];
  for (int b = 0; b < p->nbuf; b++) {
    size_t cnt = 1;
    for (size_t a = 0; a < strlen(p->dims[b]); a++) cnt *= (size_t)(shapes[b][a] = dim_of(p->dims[b][a], m, n, k));
    counts[b] = cnt;
    host[b] = calloc(cnt + 1, sizeof(float));
    for (size_t i = 0; i < cnt; i++) host[b][i] = (float)((int)((i * 7 + (size_t)b * 3) % 23) - 11) * 0.25f;
    cr_assert_null(loom_cuda_mem_alloc(d, cnt * sizeof(float), &dev[b]));
    cr_assert_null(loom_cuda_copy_to_device(d, dev[b], host[b], cnt * sizeof(float)));
    args[b] = (loom_tp_arg){host[b], shapes[b], 0};
  }
  int64_t syms[16];
  cr_assert_null(loom_cpu_bind_symbols(fx->cx, fx->f, args, (size_t)p->nbuf, syms));
  loom_tp_gpu_launch l;
  cr_assert_null(loom_tp_gpu_launch_of(fx->cx, fx->f, &l));
  loom_sym_env *env;
  cr_assert_null(loom_sym_env_create(NULL, &env));
  for (size_t j = 0; j < fx->f->nsyms; j++) cr_assert_null(loom_sym_env_set(env, fx->f->syms[j], syms[j]));
  int64_t blocks;
  cr_assert_null(loom_sym_eval(fx->cx, l.grid, env, &blocks));
  loom_sym_env_destroy(env);
  loom_cuda_launch_dims dims;
  cr_assert_null(loom_cuda_launch_dims_of(name, blocks, l.threads, &dims));
  s = loom_cuda_launch(d, fn, name, &dims, dev, (size_t)p->nbuf, syms, fx->f->nsyms);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  int o = p->nbuf - 1;
  float *got = calloc(counts[o] + 1, sizeof(float));
  cr_assert_null(loom_cuda_copy_to_host(d, got, dev[o], counts[o] * sizeof(float)));
  cr_assert_null(loom_tp_interpret(fx->cx, fx->f, args, (size_t)p->nbuf));
  for (size_t i = 0; i < counts[o]; i++)
    cr_assert(fabsf(got[i] - host[o][i]) <= 1e-5f * (1.0f + fabsf(host[o][i])), "@%s m=%lld n=%lld k=%lld [%zu]: GPU %g, interpreter %g",
              fx->f->name, (long long)m, (long long)n, (long long)k, i, got[i], host[o][i]);
  free(got);
  for (int b = 0; b < p->nbuf; b++) {
    free(host[b]);
    loom_cuda_mem_free(d, dev[b]);
  }
}

/* The compile side, everywhere: PTX for sm_80 and sm_90 with one entry per program, the
 * kernel ABI's parameters, bar.sync for a thread loop, .shared for a Shared alloc, libdevice's
 * exp inlined (no extern left); unknown architectures refused by name. */
LOOM_TEST(cuda_ptx, programs_compile_to_ptx_for_sm_80_and_sm_90) {
  tp_fixture fx[2];
  const loom_tp_func *fs[2];
  for (int i = 0; i < 2; i++) {
    cr_assert_null(tp_parse(&fx[i], progs[i == 0 ? 1 : 4].text));
    loom_tp_gpu_params gp = {.threads = 256};
    cr_assert_null(loom_tp_schedule_gpu(&fx[i].arena, fx[i].cx, fx[i].f, &gp, NULL));
    fs[i] = fx[i].f;
  }
  static const char *const archs[] = {"sm_80", "sm_90"};
  for (int a = 0; a < 2; a++) {
    loom_strbuf ptx;
    loom_strbuf_init(&ptx, NULL);
    /* one module per program: each fixture has its own symbol context */
    for (int i = 0; i < 2; i++) {
      loom_status s = loom_cuda_emit_ptx(archs[a], fx[i].cx, &fs[i], 1, &ptx);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
    }
    const char *t = loom_strbuf_cstr(&ptx);
    char want[64];
    snprintf(want, sizeof want, ".target %s", archs[a]);
    cr_assert(strstr(t, want) != NULL, "%s", t);
    cr_assert(strstr(t, ".entry loom_kernel_softmax(") != NULL);
    cr_assert(strstr(t, ".entry loom_kernel_rev8(") != NULL);
    cr_assert(strstr(t, "bar.sync") != NULL);
    cr_assert(strstr(t, ".shared .align 16 .b8 S[32]") != NULL, "%s", t);
    cr_assert(strstr(t, ".extern") == NULL, "an unresolved function is left: %s", t);
    loom_strbuf_free(&ptx);
  }
  static const char *const bad[] = {"sm_12", "xyz", "sm_"};
  for (size_t i = 0; i < 3; i++) {
    loom_strbuf ptx;
    loom_strbuf_init(&ptx, NULL);
    loom_status s = loom_cuda_emit_ptx(bad[i], fx[0].cx, &fs[0], 1, &ptx);
    cr_assert_not_null(s);
    char want[80];
    snprintf(want, sizeof want, "CUDA architecture '%s' is not one LLVM's NVPTX back end knows", bad[i]);
    cr_assert(strstr(loom_status_message(s), want) != NULL, "%s", loom_status_message(s));
    loom_status_free(s);
    loom_strbuf_free(&ptx);
  }
  for (int i = 0; i < 2; i++) tp_fixture_free(&fx[i]);
}

/* A warp per row: the softmax and every row program of tp_gpu_rows.h that the rule gives a
 * warp compile for sm_80 and sm_90 with butterfly shuffles combining the lanes' partial
 * values and a warp sync after the lanes' loops; their Local accumulators live in registers
 * (no .local memory, as in the thread-per-row form). */
LOOM_TEST(cuda_ptx, a_warp_per_row_combines_lanes_with_shuffles_in_registers) {
  size_t nrows = sizeof gpu_row_cases / sizeof gpu_row_cases[0];
  int nwarp = 0;
  for (size_t i = 0; i <= nrows; i++) {
    if (i < nrows && gpu_row_cases[i].form != 'w') continue;
    tp_fixture fx;
    cr_assert_null(tp_parse(&fx, i < nrows ? gpu_row_cases[i].text : progs[1].text));
    loom_tp_gpu_params gp = {.threads = 256, .loop_threads = 32};
    cr_assert_null(loom_tp_schedule_gpu(&fx.arena, fx.cx, fx.f, &gp, NULL));
    const loom_tp_func *fs[1] = {fx.f};
    for (int a = 0; a < 2; a++) {
      loom_strbuf ptx;
      loom_strbuf_init(&ptx, NULL);
      loom_status s = loom_cuda_emit_ptx(a ? "sm_90" : "sm_80", fx.cx, fs, 1, &ptx);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
      const char *t = loom_strbuf_cstr(&ptx);
      bool reduces = i == nrows || !gpu_row_cases[i].why || !strstr(gpu_row_cases[i].why, "(0 reductions)");
      cr_assert(!reduces || strstr(t, "shfl.sync.bfly.b32") != NULL, "@%s: no shuffle:\n%s", fx.f->name, t);
      cr_assert(strstr(t, "bar.warp.sync") != NULL, "@%s: no warp sync:\n%s", fx.f->name, t);
      cr_assert(strstr(t, ".local") == NULL, "@%s: local memory:\n%s", fx.f->name, t);
      loom_strbuf_free(&ptx);
    }
    nwarp++;
    tp_fixture_free(&fx);
  }
  cr_assert_gt(nwarp, 5);
}

LOOM_TEST(cuda_gpu, scheduled_programs_on_the_gpu_equal_the_interpreter) {
  loom_cuda_driver *d;
  loom_status s = loom_cuda_driver_open(NULL, &d);
  if (s) {
    printf("cuda_gpu: skipped: %s\n", loom_status_message(s));
    cr_skip_test("no GPU: %s", loom_status_message(s));
  }
  static const int64_t sizes[] = {0, 1, 2, 7, 13, 257, 1031};
  size_t nprogs = sizeof progs / sizeof progs[0], nrows = sizeof gpu_row_cases / sizeof gpu_row_cases[0];
  for (size_t pi = 0; pi < nprogs + nrows; pi++) {
    const gpu_case *rc = pi < nprogs ? NULL : &gpu_row_cases[pi - nprogs];
    const gpu_prog prog = rc ? (gpu_prog){rc->text, rc->nbuf, {rc->dims[0], rc->dims[1], rc->dims[2], rc->dims[3]}} : progs[pi];
    tp_fixture fx;
    cr_assert_null(tp_parse(&fx, prog.text));
    loom_tp_gpu_params gp = {.threads = 256};
    cr_assert_null(loom_tp_schedule_gpu(&fx.arena, fx.cx, fx.f, &gp, NULL));
    loom_strbuf ptx;
    loom_strbuf_init(&ptx, NULL);
    const loom_tp_func *fs[1] = {fx.f};
    s = loom_cuda_emit_ptx(NULL, fx.cx, fs, 1, &ptx);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_cuda_module *mod;
    s = loom_cuda_module_load(d, loom_strbuf_cstr(&ptx), &mod);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (size_t a = 0; a < 7; a++)
      for (size_t b = 0; b < 7; b++) run_on_gpu(d, &fx, mod, &prog, sizes[a], sizes[b], sizes[(a + b) % 5]);
    loom_cuda_module_unload(d, mod);
    loom_strbuf_free(&ptx);
    tp_fixture_free(&fx);
  }
  loom_cuda_driver_close(d);
}
#endif

/* Target names: "cuda" and "cuda:ARCH" pick the CUDA target where the build has it; the cpu
 * target takes no machine; an unknown name is refused with the list. */
LOOM_TEST(cuda, target_names) {
  const loom_target *t;
  cr_assert_null(loom_pipeline_target("cpu", &t));
  cr_assert_eq(t, &loom_target_cpu);
  loom_status s = loom_pipeline_target("cpu:x", &t);
  cr_assert(s && strstr(loom_status_message(s), "target 'cpu:x': the cpu target takes no ':MACHINE'"), "%s",
            s ? loom_status_message(s) : "accepted");
  loom_status_free(s);
  s = loom_pipeline_target("tpu", &t);
  cr_assert(s && strstr(loom_status_message(s), "unknown target 'tpu'; targets: cpu"), "%s", s ? loom_status_message(s) : "accepted");
  loom_status_free(s);
#if LOOM_HAVE_CUDA
  cr_assert_null(loom_pipeline_target("cuda:sm_90", &t));
  cr_assert_eq(t, &loom_target_cuda);
#endif
}

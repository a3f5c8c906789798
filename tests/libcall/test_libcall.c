/* test_libcall.c — the run side of libcall/: libffi calls with mixed C signatures, the
 * CBLAS built-ins against a naive loop, load-time errors, and the user-kernel example of
 * models/user_kernel end to end through a VM built by hand (and through loom_rt_open). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "graph/graph.h"
#include "libcall/libcall.h"
#include "loomrt.h"
#include "vm/vm_fixture.h"

static char err_buf[256];
static void set_err(const loom_kernel_ctx *c, const char *m) {
  (void)c;
  snprintf(err_buf, sizeof err_buf, "%s", m);
}
static int32_t serial(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}
static const loom_kernel_ctx ctx = {LOOM_KERNEL_ABI_VERSION, sizeof(loom_kernel_ctx), 2, 0, serial, NULL, set_err, NULL, NULL, NULL};

/* ---- libffi: mixed signatures ------------------------------------------------------ */

/* out[i] = alpha * x[i] + k + beta; fails when k < 0. */
static int32_t mixed(const float *x, int64_t n, double alpha, float *out, int32_t k, float beta) {
  if (k < 0) return 7;
  for (int64_t i = 0; i < n; i++) out[i] = (float)(alpha * x[i]) + (float)k + beta;
  return 0;
}

static double total;
/* A void function of doubles and an int64: accumulates into a global. */
static void accumulate(const double *v, int64_t n, double scale) {
  for (int64_t i = 0; i < n; i++) total += v[i] * scale;
}

LOOM_TEST(libcall, ffi_calls_with_mixed_signatures_by_hand) {
  /* buffers: x (n) f32, alpha () f64, out (n) f32; symbols: n, n, k */
  loom_dtype dt[3] = {LOOM_DTYPE_F32, LOOM_DTYPE_F64, LOOM_DTYPE_F32};
  int32_t rk[3] = {1, 0, 1};
  loom_libcall_carg ca[6] = {
      {LOOM_LIBCALL_CT_PTR, LOOM_LIBCALL_SRC_BUF, 0, LOOM_DTYPE_F32, 0},
      {LOOM_LIBCALL_CT_I64, LOOM_LIBCALL_SRC_SYM, 0, LOOM_DTYPE_I64, 0},
      {LOOM_LIBCALL_CT_F64, LOOM_LIBCALL_SRC_LOAD, 1, LOOM_DTYPE_F64, 0},
      {LOOM_LIBCALL_CT_PTR, LOOM_LIBCALL_SRC_BUF, 2, LOOM_DTYPE_F32, 0},
      {LOOM_LIBCALL_CT_I32, LOOM_LIBCALL_SRC_SYM, 2, LOOM_DTYPE_I64, 0},
      {LOOM_LIBCALL_CT_F32, LOOM_LIBCALL_SRC_CONST, 0, LOOM_DTYPE_I64, 3},
  };
  loom_dtype dt2[1] = {LOOM_DTYPE_F64};
  int32_t rk2[1] = {1};
  loom_libcall_carg ca2[3] = {
      {LOOM_LIBCALL_CT_PTR, LOOM_LIBCALL_SRC_BUF, 0, LOOM_DTYPE_F64, 0},
      {LOOM_LIBCALL_CT_I64, LOOM_LIBCALL_SRC_SYM, 0, LOOM_DTYPE_I64, 0},
      {LOOM_LIBCALL_CT_F64, LOOM_LIBCALL_SRC_CONST, 0, LOOM_DTYPE_I64, -2},
  };
  loom_libcall_sig sigs[2] = {
      {.name = "mixed", .symbol = "mixed_c", .abi = LOOM_LIBCALL_ABI_C, .nbuf = 3, .buf_dtypes = dt, .buf_ranks = rk,
       .nsym = 3, .ret = LOOM_LIBCALL_CT_I32, .ncargs = 6, .cargs = ca},
      {.name = "acc", .symbol = "accumulate", .abi = LOOM_LIBCALL_ABI_C, .nbuf = 1, .buf_dtypes = dt2, .buf_ranks = rk2,
       .nsym = 1, .ret = LOOM_LIBCALL_CT_VOID, .ncargs = 3, .cargs = ca2},
  };
  loom_libcall_symbol host[2] = {{"mixed_c", (void *)(uintptr_t)mixed}, {"accumulate", (void *)(uintptr_t)accumulate}};
  loom_libcall_options o = {.symbols = host, .nsymbols = 2};
  loom_libcall_lib *lib;
  OK(loom_libcall_lib_create(NULL, sigs, 2, &o, &lib));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_libcall_sig_print(&sigs[0], &sb);
  cr_assert_str_eq(loom_strbuf_cstr(&sb), "i32 mixed_c(f32*, i64, f64, f32*, i32, f32)");
  loom_strbuf_free(&sb);
  loom_kernel_fn f = loom_libcall_lib_find(lib, "mixed");
  cr_assert(f && !loom_libcall_lib_find(lib, "nope"));
  float x[5] = {1, 2, 3, 4, 5}, out[5] = {0};
  double alpha = 0.5;
  void *bufs[3] = {x, &alpha, out};
  int64_t syms[3] = {5, 5, 10};
  cr_assert_eq(f(bufs, syms, &ctx), 0);
  for (int i = 0; i < 5; i++) cr_assert_float_eq(out[i], 0.5f * x[i] + 13.0f, 1e-6);
  syms[2] = -1;
  err_buf[0] = 0;
  cr_assert_eq(f(bufs, syms, &ctx), 7);
  cr_assert_str_eq(err_buf, "mixed_c returned 7");
  double v[3] = {1, 2, 4};
  void *b2[1] = {v};
  int64_t s2[1] = {3};
  total = 0;
  cr_assert_eq(loom_libcall_lib_find(lib, "acc")(b2, s2, &ctx), 0);
  cr_assert_float_eq(total, -14.0, 1e-12);
  /* the extern table for loom_rt_options */
  uint32_t n;
  const loom_artifact_kernel *t = loom_libcall_lib_externs(lib, &n);
  cr_assert_eq(n, 2);
  cr_assert_str_eq(t[1].name, "acc");
  cr_assert(loom_libcall_resolve(lib, "mixed", 1) == f && !loom_libcall_resolve(lib, "mixed", 0));
  loom_libcall_lib_destroy(lib);
}

/* The kernel ABI fast path: the host's function pointer itself is what the VM calls. */
static int32_t kernel_fill(void *const *b, const int64_t *s, const loom_kernel_ctx *c) {
  (void)c;
  for (int64_t i = 0; i < s[0]; i++) ((float *)b[0])[i] = (float)s[1];
  return 0;
}

LOOM_TEST(libcall, kernel_abi_is_called_directly) {
  loom_dtype dt[1] = {LOOM_DTYPE_F32};
  int32_t rk[1] = {1};
  loom_libcall_sig s = {.name = "fill", .symbol = "kfill", .nbuf = 1, .buf_dtypes = dt, .buf_ranks = rk, .nsym = 2};
  loom_libcall_symbol host[1] = {{"kfill", (void *)(uintptr_t)kernel_fill}};
  loom_libcall_options o = {.symbols = host, .nsymbols = 1};
  loom_libcall_lib *lib;
  OK(loom_libcall_lib_create(NULL, &s, 1, &o, &lib));
  cr_assert(loom_libcall_lib_find(lib, "fill") == kernel_fill);
  loom_libcall_lib_destroy(lib);
}

/* ---- BLAS built-ins against a naive loop ------------------------------------------- */

static uint64_t rng_state;
static double urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)((rng_state >> 33) & 0xffffff) / (double)0x1000000 - 0.5;
}

/* One GEMM built-in on random data of the given shape; compared with a naive loop. */
static void check_gemm(bool f64, bool ta, bool tb, int64_t batch, bool batched_a, bool batched_b, int64_t M, int64_t K,
                       int64_t N) {
  int rc = batch > 0 ? 3 : 2, ra = batched_a && rc == 3 ? 3 : 2, rb = batched_b && rc == 3 ? 3 : 2;
  int64_t nb = rc == 3 ? batch : 1, nba = ra == 3 ? nb : 1, nbb = rb == 3 ? nb : 1;
  char sym[32];
  snprintf(sym, sizeof sym, "blas.%sgemm%s%s", f64 ? "d" : "s", ta || tb ? "_" : "", ta || tb ? (ta ? (tb ? "tt" : "tn") : "nt") : "");
  loom_dtype d = f64 ? LOOM_DTYPE_F64 : LOOM_DTYPE_F32, dt[3] = {d, d, d};
  int32_t rk[3] = {ra, rb, rc};
  loom_libcall_sig s = {.name = "g", .symbol = sym, .nbuf = 3, .buf_dtypes = dt, .buf_ranks = rk, .nsym = (uint32_t)(ra + rb + rc), .pure = true};
  loom_libcall_lib *lib;
  OK(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib));
  size_t es = f64 ? 8 : 4;
  int64_t na = nba * M * K, nbn = nbb * K * N, nc = nb * M * N;
  char *A = malloc((size_t)(na + 1) * es), *B = malloc((size_t)(nbn + 1) * es), *C = malloc((size_t)(nc + 1) * es);
  double *ad = malloc((size_t)(na + 1) * 8), *bd = malloc((size_t)(nbn + 1) * 8);
  for (int64_t i = 0; i < na; i++) ad[i] = urand(), f64 ? (void)(((double *)A)[i] = ad[i]) : (void)(((float *)A)[i] = (float)ad[i]);
  for (int64_t i = 0; i < nbn; i++) bd[i] = urand(), f64 ? (void)(((double *)B)[i] = bd[i]) : (void)(((float *)B)[i] = (float)bd[i]);
  int64_t syms[9], *p = syms;
  if (ra == 3) *p++ = nb;
  *p++ = ta ? K : M, *p++ = ta ? M : K;
  if (rb == 3) *p++ = nb;
  *p++ = tb ? N : K, *p++ = tb ? K : N;
  if (rc == 3) *p++ = nb;
  *p++ = M, *p++ = N;
  void *bufs[3] = {A, B, C};
  err_buf[0] = 0;
  cr_assert_eq(loom_libcall_lib_find(lib, "g")(bufs, syms, &ctx), 0, "%s: %s", sym, err_buf);
  for (int64_t b = 0; b < nb; b++)
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) {
        double acc = 0;
        const double *a0 = ad + (ra == 3 ? b * M * K : 0), *b0 = bd + (rb == 3 ? b * K * N : 0);
        for (int64_t k = 0; k < K; k++) acc += (ta ? a0[k * M + i] : a0[i * K + k]) * (tb ? b0[j * K + k] : b0[k * N + j]);
        double got = f64 ? ((double *)C)[b * M * N + i * N + j] : ((float *)C)[b * M * N + i * N + j];
        double tol = f64 ? 1e-12 * (double)(K + 1) : 1e-5 * (double)(K + 1);
        cr_assert(fabs(got - acc) <= tol, "%s batch %lld (A%s B%s) M=%lld K=%lld N=%lld: C[%lld,%lld,%lld] = %g, naive %g",
                  sym, (long long)nb, ra == 3 ? " batched" : "", rb == 3 ? " batched" : "", (long long)M, (long long)K,
                  (long long)N, (long long)b, (long long)i, (long long)j, got, acc);
      }
  free(A), free(B), free(C), free(ad), free(bd);
  loom_libcall_lib_destroy(lib);
}

LOOM_TEST(libcall, blas_gemm_builtins_match_a_naive_loop_on_random_shapes) {
  rng_state = loom_test_seed();
  static const int64_t sizes[] = {0, 1, 2, 7, 13, 64, 97};
  for (int trial = 0; trial < 48; trial++) {
    bool f64 = trial % 2, ta = (trial / 2) % 2, tb = (trial / 4) % 2;
    int64_t M = sizes[rng_state % 7], K = sizes[(rng_state >> 8) % 7], N = sizes[(rng_state >> 16) % 7];
    urand();
    int form = (trial / 8) % 6; /* plain; batched A+B; batched A, shared B; shared A, batched B; batch 0; batch 1 */
    int64_t batch = form == 0 ? 0 : form == 4 ? 0 : form == 5 ? 1 : 3;
    if (form == 4) { /* a zero batch: nothing to compute */
      check_gemm(f64, ta, tb, 0, false, false, M, K, N);
      continue;
    }
    check_gemm(f64, ta, tb, batch, form != 3, form != 2, M, K, N);
  }
  /* the linear layer's form: x (b, s, k) @ w^T with w (n, k): one GEMM of b*s rows */
  check_gemm(false, false, true, 5, true, false, 11, 64, 13);
}

LOOM_TEST(libcall, blas_builtin_checks_ranks_and_dtypes_at_load) {
  loom_dtype dt[3] = {LOOM_DTYPE_F32, LOOM_DTYPE_F64, LOOM_DTYPE_F32};
  int32_t rk[3] = {2, 2, 2};
  loom_libcall_sig s = {.name = "mm", .symbol = "blas.sgemm", .nbuf = 3, .buf_dtypes = dt, .buf_ranks = rk, .nsym = 6};
  loom_libcall_lib *lib;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "B (operand 1) has dtype f64, this GEMM takes f32");
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "while loading extern @mm (built-in 'blas.sgemm')");
  dt[1] = LOOM_DTYPE_F32;
  int32_t rk3[3] = {3, 2, 2};
  s.buf_ranks = rk3, s.nsym = 7;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "A (operand 0) has rank 3, the result has rank 2");
  s.buf_ranks = rk, s.nsym = 6, s.nbuf = 2;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "GEMM takes 3 buffers");
  s.nbuf = 3, s.abi = LOOM_LIBCALL_ABI_C;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "built-in 'blas.sgemm' is called with the kernel ABI");
  /* a shape disagreement at the call is an error message, not a bad read */
  s.abi = LOOM_LIBCALL_ABI_KERNEL;
  OK(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib));
  float a[6] = {0}, b[6] = {0}, c[4];
  void *bufs[3] = {a, b, c};
  int64_t syms[6] = {2, 3, 2, 3, 2, 2}; /* B is 2x3 where 3x2 is needed */
  err_buf[0] = 0;
  cr_assert_neq(loom_libcall_lib_find(lib, "mm")(bufs, syms, &ctx), 0);
  cr_assert(strstr(err_buf, "GEMM shapes disagree") != NULL, "%s", err_buf);
  loom_libcall_lib_destroy(lib);
}

/* ---- shared objects: the user-kernel example and load-time errors --------------------- */

static char *make_dir(void) {
  char *d = strdup("/tmp/loom-libcall-XXXXXX");
  cr_assert(mkdtemp(d) != NULL);
  return d;
}

static void remove_dir(char *d) {
  loom_test_proc p = loom_test_run("rm -rf %s", d);
  loom_test_proc_free(&p);
  free(d);
}

/* Builds models/user_kernel/scale_rows.c into dir/scale_rows.so (and `extra` C text into dir/bad.so). */
static void build_kernels(const char *dir) {
  loom_test_proc p = loom_test_run("cc -O1 -shared -fPIC -o %s/scale_rows.so models/user_kernel/scale_rows.c", dir);
  cr_assert_eq(p.exit_code, 0, "cc failed: %s", p.err);
  loom_test_proc_free(&p);
  char path[512];
  snprintf(path, sizeof path, "%s/bad.c", dir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fputs("#include <stdint.h>\n"
        "const char loom_example_scale_rows__loom_sig[] = \"i32(f32*, f32*, f32*, i64, i64, f64)\";\n"
        "int32_t loom_example_scale_rows(void) { return 0; }\n",
        f);
  fclose(f);
  p = loom_test_run("cc -O1 -shared -fPIC -o %s/bad.so %s", dir, path);
  cr_assert_eq(p.exit_code, 0, "cc failed: %s", p.err);
  loom_test_proc_free(&p);
}

/* Reads models/user_kernel/scale_rows.loom, optionally with its library= replaced. */
static loom_graph_module *example_module(const char *library) {
  loom_test_proc p = loom_test_run("sed 's|library=\"scale_rows.so\"|library=\"%s\"|' models/user_kernel/scale_rows.loom",
                                   library);
  cr_assert_eq(p.exit_code, 0);
  loom_source src = {"models/user_kernel/scale_rows.loom", p.out, strlen(p.out)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m;
  OK(loom_graph_parse(&src, &dl, &m));
  loom_diag_list_destroy(&dl);
  loom_test_proc_free(&p);
  return m;
}

/* Loads the externs of `m` (search_dir `dir`); the status of loom_libcall_lib_create. */
static loom_status load_module_externs(loom_graph_module *m, const char *dir, loom_libcall_lib **lib) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(m, &a, &sigs, &n);
  loom_libcall_options o = {.search_dir = dir};
  if (!st) st = loom_libcall_lib_create(NULL, sigs, (uint32_t)n, &o, lib);
  loom_arena_destroy(&a);
  return st;
}

/* main(x: f32(n, m), w: f32(m), alpha: f64()) = scale_rows(x, w, alpha, k = 3), built by hand
 * with the VM lowering's CALLX layout: buffers x, w, alpha, out; symbols n, m, m, n, m, k. */
static loom_vm_exec *example_exec(void) {
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  /* signature: x (s0, s1), w (s2), alpha (), out (s3, s4); symbols s0 .. s5 */
  enum { S = LOOM_VM_SIG_SYM };
  uint32_t sig[] = {LOOM_DTYPE_F32, 2, 1, S, 0, 1, S, 1, LOOM_DTYPE_F32, 1, 1, S, 2, LOOM_DTYPE_F64, 0,
                    LOOM_DTYPE_F32, 2, 1, S, 3, 1, S, 4, 0, 0, 0, 0, 0, 0};
  for (int j = 0; j < 6; j++) {
    char nm[8];
    snprintf(nm, sizeof nm, "s%d", j);
    sig[23 + j] = loom_vm_builder_str(b, nm);
  }
  uint32_t ext = loom_vm_builder_extern(b, "scale_rows", 4, 6, sig, 29);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dx[] = {"n", "m"}, *dw[] = {"m"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 2, dx);
  uint32_t w = loom_vm_fb_param(f, "w", LOOM_DTYPE_F32, 1, dw);
  uint32_t al = loom_vm_fb_param(f, "alpha", LOOM_DTYPE_F64, 0, NULL);
  uint32_t out = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(f, "n"), m = loom_vm_fb_ireg(f, "m"), k = loom_vm_fb_ireg(f, NULL);
  uint32_t px[] = {loom_vm_builder_str(b, "x"), LOOM_DTYPE_F32, 2, LOOM_VM_AXIS_BIND, n, 1, 0, LOOM_VM_AXIS_BIND, m, 1, 0};
  uint32_t pw[] = {loom_vm_builder_str(b, "w"), LOOM_DTYPE_F32, 1, LOOM_VM_AXIS_AFFINE, m, 1, 0};
  uint32_t pa[] = {loom_vm_builder_str(b, "alpha"), LOOM_DTYPE_F64, 0};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(f, px, 11)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, w, loom_vm_fb_list(f, pw, 7)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, al, loom_vm_fb_list(f, pa, 3)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, k, loom_vm_builder_intconst(b, 3)));
  uint32_t le[] = {LOOM_DTYPE_F32, 0, 2, n, m};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, out, loom_vm_fb_list(f, le, 5)));
  uint32_t lx[] = {4, x, w, al, out, 6, n, m, m, n, m, k};
  loom_vm_fb_debug(f, "y = call_extern(@scale_rows, (x, w, alpha, sym(3)), Tensor[(n, m), f32])");
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLX, ext, loom_vm_fb_list(f, lx, 12)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, out, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

static void check_scaled(const loom_tensor *o, const loom_tensor *x, const loom_tensor *w, double alpha, int64_t n,
                         int64_t m) {
  cr_assert_eq(o->rank, 2);
  cr_assert(o->dims[0] == n && o->dims[1] == m);
  for (int64_t i = 0; i < n * m; i++)
    cr_assert_float_eq(((float *)o->data)[i],
                       (float)(alpha * ((float *)x->data)[i] * ((float *)w->data)[i % m] + 3.0), 1e-5, "element %lld",
                       (long long)i);
}

LOOM_TEST(libcall, user_kernel_example_runs_through_the_vm_and_loom_rt_open) {
  char *dir = make_dir();
  build_kernels(dir);
  loom_graph_module *m = example_module("scale_rows.so");
  loom_libcall_lib *lib;
  OK(load_module_externs(m, dir, &lib));
  loom_vm_exec *e = example_exec();
  OK(loom_libcall_lib_check_exec(lib, e));
  loom_vm *vm;
  OK(loom_vm_create(NULL, e, loom_libcall_resolve, lib, NULL, &vm));
  static const int64_t shapes[][2] = {{0, 4}, {1, 1}, {3, 5}, {17, 13}};
  for (size_t t = 0; t < 4; t++) {
    int64_t n = shapes[t][0], mm = shapes[t][1], sx[2] = {n, mm}, sw[1] = {mm};
    loom_tensor *x, *w, *al;
    OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 2, sx, &x));
    OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, sw, &w));
    OK(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F64, 0, NULL, &al));
    for (int64_t i = 0; i < n * mm; i++) ((float *)x->data)[i] = (float)i * 0.25f - 1;
    for (int64_t i = 0; i < mm; i++) ((float *)w->data)[i] = (float)(i + 1);
    *(double *)al->data = -1.5;
    loom_vm_obj *args[3] = {&x->hdr, &w->hdr, &al->hdr}, *out;
    OK(loom_vm_call(vm, loom_vm_exec_find_func(e, "main"), args, 3, &out));
    check_scaled((loom_tensor *)out, x, w, -1.5, n, mm);
    loom_vm_obj_release(out);
    loom_vm_obj_release(&x->hdr);
    loom_vm_obj_release(&w->hdr);
    loom_vm_obj_release(&al->hdr);
  }
  loom_vm_destroy(vm);
  /* loom_rt_open: the executable file plus the lib's extern table */
  char exe_path[512];
  snprintf(exe_path, sizeof exe_path, "%s/scale.loomexe", dir);
  OK(loom_vm_exec_save(e, exe_path));
  loom_rt *rt;
  FAILS_WITH(loom_rt_open(exe_path, NULL, &rt), "extern 0 'scale_rows' is not provided");
  uint32_t nx;
  const loom_artifact_kernel *tab = loom_libcall_lib_externs(lib, &nx);
  loom_rt_options ro = {.externs = tab, .nexterns = nx, .threads = 1};
  OK(loom_rt_open(exe_path, &ro, &rt));
  int64_t sx[2] = {2, 3}, sw[1] = {3};
  loom_tensor *x, *w, *al;
  OK(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 2, sx, &x));
  OK(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 1, sw, &w));
  OK(loom_rt_tensor_new(rt, LOOM_DTYPE_F64, 0, NULL, &al));
  for (int i = 0; i < 6; i++) ((float *)x->data)[i] = (float)i;
  for (int i = 0; i < 3; i++) ((float *)w->data)[i] = 2;
  *(double *)al->data = 0.5;
  loom_tensor *in[3] = {x, w, al};
  loom_rt_outputs outs;
  OK(loom_rt_call(rt, "main", in, 3, &outs));
  check_scaled((loom_tensor *)outs.items[0], x, w, 0.5, 2, 3);
  loom_rt_outputs_free(&outs);
  loom_tensor_release(x), loom_tensor_release(w), loom_tensor_release(al);
  loom_rt_close(rt);
  loom_vm_exec_free(e);
  loom_libcall_lib_destroy(lib);
  loom_graph_module_destroy(m);
  remove_dir(dir);
}

LOOM_TEST(libcall, load_time_errors_name_the_extern_and_the_symbol) {
  char *dir = make_dir();
  build_kernels(dir);
  loom_libcall_lib *lib;
  loom_graph_module *m = example_module("missing.so");
  FAILS_WITH(load_module_externs(m, dir, &lib), "extern @scale_rows (symbol 'loom_example_scale_rows'): cannot load library");
  loom_graph_module_destroy(m);
  m = example_module("bad.so");
  FAILS_WITH(load_module_externs(m, dir, &lib),
             "extern @scale_rows (symbol 'loom_example_scale_rows'): signature mismatch: declared "
             "i32(f32*, f32*, f32*, i64, i64, f64, i64), the library says i32(f32*, f32*, f32*, i64, i64, f64)");
  loom_graph_module_destroy(m);
  /* a symbol the library lacks */
  loom_dtype dt[1] = {LOOM_DTYPE_F32};
  int32_t rk[1] = {1};
  char so[512];
  snprintf(so, sizeof so, "%s/scale_rows.so", dir);
  loom_libcall_sig s = {.name = "k", .symbol = "no_such_fn", .library = so, .nbuf = 1, .buf_dtypes = dt, .buf_ranks = rk, .nsym = 1};
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "extern @k: symbol 'no_such_fn' not found in");
  s.library = NULL;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "extern @k: symbol 'no_such_fn' is not a host function");
  s.symbol = "kfill", s.nsym = 0;
  FAILS_WITH(loom_libcall_lib_create(NULL, &s, 1, NULL, &lib), "1 dims of its buffers");
  /* the executable's CALLX disagrees with the declaration */
  m = example_module("scale_rows.so");
  OK(load_module_externs(m, dir, &lib));
  loom_vm_builder *b;
  OK(loom_vm_builder_new(NULL, &b));
  uint32_t s0 = loom_vm_builder_str(b, "s");
  uint32_t sig3[] = {LOOM_DTYPE_F32, 0, LOOM_DTYPE_F32, 0, LOOM_DTYPE_F32, 0, s0, s0, s0, s0, s0, s0};
  loom_vm_builder_extern(b, "scale_rows", 3, 6, sig3, 12);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dm[] = {"m"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dm);
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  OK(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  FAILS_WITH(loom_libcall_lib_check_exec(lib, e),
             "extern 'scale_rows' (symbol 'loom_example_scale_rows'): the executable passes 3 buffers and 6 symbols, "
             "the declaration takes 4 and 6");
  loom_vm_exec_free(e);
  loom_libcall_lib_destroy(lib);
  loom_graph_module_destroy(m);
  remove_dir(dir);
}

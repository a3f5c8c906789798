/* test_aot.c — AOT artifacts (a shared object built here from hand-written C kernels
 * plus an executable from the builder), the runtime C API, `loom-run` and `loom disasm`. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/npy.h"
#include "loomrt.h"
#include "vm/threadpool.h"
#include "aot_util.h"
#include "vm_fixture.h"

/* Builds the fixture artifact dir/add.so (sealed) and dir/add.loomexe. */
static void build_artifact(const char *dir, char *so, size_t n) { aot_build_artifact(dir, "add", NULL, AOT_SEAL, so, n); }

static char *make_dir(void) { return aot_make_dir(); }
static void remove_dir(char *d) { aot_remove_dir(d); }

LOOM_TEST(aot, artifact_loads_with_dlopen_and_runs_through_the_c_api) {
  char *dir = make_dir(), so[512];
  build_artifact(dir, so, sizeof so);
  loom_rt *rt;
  OK(loom_rt_open(so, NULL, &rt));
  cr_assert_eq(loom_rt_function_count(rt), 1);
  char sig[256];
  loom_rt_signature_text(rt, 0, sig, sizeof sig);
  cr_assert_str_eq(sig, "main(x: f32(n, 2*n + 1), y: f32(n, 2*n + 1))");
  for (uint32_t threads = 1; threads <= 2; threads++) {
    OK(loom_rt_set_threads(rt, threads));
    cr_assert_eq(loom_rt_threads(rt), threads);
    int64_t shape[2] = {5, 11};
    loom_tensor *x, *y;
    OK(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 2, shape, &x));
    OK(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 2, shape, &y));
    for (int i = 0; i < 55; i++) ((float *)x->data)[i] = (float)i, ((float *)y->data)[i] = 1000;
    loom_tensor *in[2] = {x, y};
    loom_rt_outputs out;
    OK(loom_rt_call(rt, "main", in, 2, &out));
    cr_assert_eq(out.count, 1);
    loom_tensor *o = (loom_tensor *)out.items[0];
    for (int i = 0; i < 55; i++) cr_assert_float_eq(((float *)o->data)[i], 1000.0f + (float)i, 0);
    loom_rt_outputs_free(&out);
    FAILS_WITH(loom_rt_call(rt, "main", in, 1, &out), "takes 2 inputs, got 1");
    FAILS_WITH(loom_rt_call(rt, "nope", in, 2, &out), "no function 'nope'");
    loom_tensor_release(x);
    loom_tensor_release(y);
  }
  loom_rt_set_profile(rt, true);
  loom_rt_close(rt);
  /* the plain executable needs its kernels from the host */
  char exe_path[512];
  snprintf(exe_path, sizeof exe_path, "%s/add.loomexe", dir);
  FAILS_WITH(loom_rt_open(exe_path, NULL, &rt), "kernel 0 'add' is not provided");
  loom_artifact_kernel ks[] = {{.name = "add", .fn = kernel_add}};
  loom_rt_options o = {.kernels = ks, .nkernels = 1, .threads = 1};
  OK(loom_rt_open(exe_path, &o, &rt));
  loom_rt_close(rt);
  FAILS_WITH(loom_rt_open("/nonexistent/x.so", NULL, &rt), "cannot open '/nonexistent/x.so'");
  remove_dir(dir);
}

/* --profile of a module whose only calls are externs (no kernel): the externs' rows, no crash. */
LOOM_TEST(aot, loom_run_profiles_a_module_of_externs_only) {
  char *dir = make_dir(), path[512];
  snprintf(path, sizeof path, "%s/ext_only.loom", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs("extern @mm(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] symbol=\"blas.sgemm\" pure\n"
        "fn @main(a: Tensor[(m, k), f32], b: Tensor[(k, n), f32]) -> Tensor[(m, n), f32] {\n"
        "  dataflow {\n"
        "    y = call_extern(@mm, (a, b), Tensor[(m, n), f32])\n"
        "    output y\n"
        "  }\n"
        "  return y\n"
        "}\n", f);
  fclose(f);
  loom_test_proc p = loom_test_run("%s run %s --bind m=2,k=3,n=4 --repeat 2 --profile --no-cache", loom_test_loom_bin(), path);
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, "extern:mm") != NULL && strstr(p.out, "CALLX") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
  remove_dir(dir);
}

LOOM_TEST(aot, loom_run_bind_input_output_profile_and_errors) {
  char *dir = make_dir(), so[512];
  build_artifact(dir, so, sizeof so);
  const char *bin = loom_test_loom_run_bin();
  loom_test_proc p = loom_test_run("%s %s --bind n=3 --repeat 3 --profile --threads 2", bin, so);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "output 0: f32(3, 7)") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "time: 3 runs") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "MATCH") != NULL && strstr(p.out, "add ") != NULL, "profile lists opcodes and kernels: %s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("%s %s --list", bin, so);
  cr_assert(strstr(p.out, "main(x: f32(n, 2*n + 1), y: f32(n, 2*n + 1))") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
  /* explicit inputs, an .npy round trip */
  char x_npy[512], out_npy[512];
  snprintf(x_npy, sizeof x_npy, "%s/x.npy", dir);
  snprintf(out_npy, sizeof out_npy, "%s/out.npy", dir);
  float xs[2 * 5];
  for (int i = 0; i < 10; i++) xs[i] = (float)i;
  int64_t shape[2] = {2, 5};
  OK(loom_npy_write(x_npy, LOOM_DTYPE_F32, 2, shape, xs));
  p = loom_test_run("%s %s --input x=@%s --input y=@%s --output %s", bin, so, x_npy, x_npy, out_npy);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  loom_npy r;
  OK(loom_npy_read(out_npy, &r));
  cr_assert_eq(r.dtype, LOOM_DTYPE_F32);
  cr_assert_eq(r.rank, 2);
  cr_assert_eq(r.shape[1], 5);
  cr_assert_float_eq(((float *)r.data)[9], 18.0f, 0);
  loom_npy_free(&r);
  struct {
    const char *args, *msg;
  } bad[] = {
      {"--input 'x=random:(4,10)' --input 'y=random:(4,9)'", "input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10"},
      {"--input 'x=random:(4,9)'", "input 'y' is missing"},
      {"--bind m=3", "symbolic var 'n' has no value (give it with --bind n=N)"},
      {"--input 'z=random:(1)'", "'main' has no such parameter"},
      {"--input x=@/nonexistent.npy --input 'y=random:(1,3)'", "cannot open '/nonexistent.npy'"},
      {"--fn other --bind n=1", "no function 'other'"},
      {"--bind n", "expected VAR=VALUE"},
  };
  for (size_t i = 0; i < LOOM_ARRAY_LEN(bad); i++) {
    p = loom_test_run("%s %s %s", bin, so, bad[i].args);
    cr_assert_eq(p.exit_code, 1, "'%s' exited %d: %s", bad[i].args, p.exit_code, p.err);
    cr_assert(strstr(p.err, bad[i].msg) != NULL, "'%s': stderr was %s", bad[i].args, p.err);
    loom_test_proc_free(&p);
  }
  /* a corrupt artifact file */
  char junk[512];
  snprintf(junk, sizeof junk, "%s/junk.loomexe", dir);
  FILE *f = fopen(junk, "wb");
  fputs("LOOMEXE", f);
  fputc(0, f);
  fputs("0000000000000000", f);
  fclose(f);
  p = loom_test_run("%s %s --bind n=1", bin, junk);
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "format version") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  remove_dir(dir);
}

LOOM_TEST(aot, loom_disasm_prints_artifacts_and_executables) {
  char *dir = make_dir(), so[512], exe[512];
  build_artifact(dir, so, sizeof so);
  snprintf(exe, sizeof exe, "%s/add.loomexe", dir);
  for (int k = 0; k < 2; k++) {
    loom_test_proc p = loom_test_run("%s disasm %s", loom_test_loom_bin(), k ? exe : so);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_assert(strstr(p.out, "func 0 main(x: f32(n, 2*n + 1), y: f32(n, 2*n + 1))") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "MATCH     r0, 'x' f32(bind i0, 2*i0 + 1)") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "CALLK     add(r0, r1, r2; i3)") != NULL, "%s", p.out);
    cr_assert(strstr(p.out, "; add(x, y, lv0)") != NULL, "%s", p.out);
    loom_test_proc_free(&p);
  }
  loom_test_proc p = loom_test_run("%s disasm %s/missing", loom_test_loom_bin(), dir);
  cr_assert_eq(p.exit_code, 1);
  loom_test_proc_free(&p);
  remove_dir(dir);
}

LOOM_TEST(aot, npy_rejects_malformed_files) {
  struct {
    const char *bytes;
    size_t n;
    const char *msg;
  } cases[] = {
      {"hello", 5, "bad magic"},
      {"\x93NUMPY\x09\x00\x10\x00", 10, "version 9.0 is not supported"},
      {"\x93NUMPY\x01\x00\x50\x00{'descr': '<f4'}", 26, "header says 80 bytes"},
      {"\x93NUMPY\x01\x00\x10\x00{'descr': '>f4'}", 26, "dtype '>f4' is not supported"},
      {"\x93NUMPY\x01\x00\x29\x00{'descr': '<f4', 'fortran_order': True, }", 51, "Fortran order"},
      {"\x93NUMPY\x01\x00\x39\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }xxxx", 71, "data is 4 bytes, shape and dtype need 8"},
  };
  for (size_t i = 0; i < LOOM_ARRAY_LEN(cases); i++) {
    loom_npy n;
    FAILS_WITH(loom_npy_parse((const uint8_t *)cases[i].bytes, cases[i].n, &n), cases[i].msg);
  }
}

LOOM_TEST(aot, loom_run_links_no_llvm_and_no_gmp) {
  loom_test_proc p = loom_test_run("ldd %s", loom_test_loom_run_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "LLVM") == NULL && strstr(p.out, "gmp") == NULL, "ldd loom-run: %s", p.out);
  loom_test_proc_free(&p);
}

/* The CPU device through the device interface (vm/device.h): the artifact as a kernel image,
 * a kernel found by name and launched, host copies, sync. */
LOOM_TEST(aot, cpu_device_loads_the_artifact_as_a_kernel_image) {
  char *dir = make_dir(), so[512];
  build_artifact(dir, so, sizeof so);
  loom_device *d;
  OK(loom_device_cpu_create(NULL, &d));
  const loom_device_vtable *vt = d->vt;
  cr_assert_str_eq(vt->name, "cpu");
  void *img;
  const loom_artifact_desc *a;
  OK(vt->image_load(d, so, NULL, &img, &a));
  cr_assert_eq(a->nkernels, 1);
  cr_assert_null(vt->kernel_find(d, img, "nope"));
  loom_kernel_fn add = vt->kernel_find(d, img, "add");
  cr_assert_not_null(add);
  float x[4] = {1, 2, 3, 4}, y[4] = {10, 20, 30, 40}, o[4], back[4];
  loom_storage *s;
  OK(loom_storage_alloc(d, sizeof o, &s));
  OK(vt->copy_from_host(d, s->data, x, sizeof x));
  void *bufs[3] = {s->data, y, o};
  int64_t n = 4;
  loom_kernel_ctx ctx = {.abi_version = LOOM_KERNEL_ABI_VERSION, .size = sizeof ctx, .num_threads = 1,
                         .parallel_for = vt->parallel_for, .pool = NULL};
  loom_cpu_pool *pool;
  OK(loom_cpu_pool_create(NULL, 1, &pool));
  ctx.pool = pool;
  cr_assert_eq(vt->launch(d, add, bufs, &n, &ctx), 0);
  OK(vt->sync(d));
  OK(vt->copy_to_host(d, back, o, sizeof o));
  for (int i = 0; i < 4; i++) cr_assert_float_eq(back[i], x[i] + y[i], 0);
  loom_cpu_pool_destroy(pool);
  loom_vm_obj_release(&s->hdr);
  vt->image_unload(d, img);
  FAILS_WITH(vt->image_load(d, "/nonexistent/x.so", NULL, &img, &a), "cannot open '/nonexistent/x.so'");
  cr_assert_null(img);
  loom_device_release(d);
  remove_dir(dir);
}

/* test_cuda_device.c — the CUDA device (targets/cuda/device_cuda.h) and the VM on a device that
 * is not the host, without a GPU: the driver is tests/cuda/fake_driver.c, whose device pointers
 * fault when host code dereferences them and whose launches are counted, not run. What is
 * tested: every tensor byte the VM reads or writes goes through the device's copies (constants
 * uploaded, shapes read back, inputs copied at the boundary), kernels go through its launch,
 * and failures (no driver, out of device memory, CPU kernels on the GPU, host tensors handed to
 * the VM) are clear errors. The numbers themselves are checked on a GPU (scripts/test-gpu). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dlpack/dlpack.h>

#include "loom.h"
#include "loomrt.h"
#include "support/loom_test.h"
#include "targets/cuda/device_cuda.h"

#define FAKE "zig-out/lib/libloom_test_fakecuda.so"

typedef struct fake {
  void *h;
  long (*launches)(void);
  long (*bad_launches)(void);
  long (*gemms)(void);
  void (*set)(long fail_alloc_after);
} fake;

static fake fake_open(void) {
  fake f = {0};
  f.h = dlopen(FAKE, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(f.h, "%s (zig build test-plugins makes it): %s", FAKE, dlerror());
  *(void **)&f.launches = dlsym(f.h, "loom_fakecuda_launches");
  *(void **)&f.bad_launches = dlsym(f.h, "loom_fakecuda_bad_launches");
  *(void **)&f.set = dlsym(f.h, "loom_fakecuda_set");
  *(void **)&f.gemms = dlsym(f.h, "loom_fakecuda_gemms");
  cr_assert(f.launches && f.bad_launches && f.set && f.gemms);
  setenv("LOOM_CUDA_DRIVER", FAKE, 1); /* the same library: dlopen returns this handle again */
  setenv("LOOM_CUBLAS_LIBRARY", FAKE, 1); /* cuBLAS too (libcall/cublas.c opens it once per process) */
  f.set(-1);
  return f;
}

static void fake_close(fake *f) {
  unsetenv("LOOM_CUDA_DRIVER");
  unsetenv("LOOM_CUBLAS_LIBRARY");
  dlclose(f->h);
}

LOOM_TEST(cuda_device, without_a_driver_the_device_is_unavailable_by_name) {
  loom_device *d = (loom_device *)1;
  loom_status s = loom_device_cuda_create(NULL, "libloom-no-such-cuda-driver.so.1", &d);
  cr_assert_not_null(s);
  cr_assert_null(d);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_UNAVAILABLE);
  cr_assert(strstr(loom_status_message(s), "no NVIDIA driver") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  loom_rt_options o = {.device = "tpu"};
  loom_rt *rt = NULL;
  s = loom_rt_open("models/mlp.loom", &o, &rt);
  cr_assert(s && strstr(loom_status_message(s), "unknown device 'tpu'; devices: cpu, cuda"), "%s",
            s ? loom_status_message(s) : "opened");
  loom_status_free(s);
}

/* The device's memory through its table: copies in and out, device to device, zeroing. */
LOOM_TEST(cuda_device, memory_moves_only_through_the_device) {
  fake f = fake_open();
  loom_device *d;
  loom_status s = loom_device_cuda_create(NULL, NULL, &d);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert(!d->vt->host);
  cr_assert_str_eq(d->vt->name, "cuda");
  loom_storage *a, *b;
  cr_assert_null(loom_storage_alloc(d, 1000, &a));
  cr_assert_null(loom_storage_alloc(d, 1000, &b));
  char in[1000], out[1000];
  for (int i = 0; i < 1000; i++) in[i] = (char)(i * 7);
  cr_assert_null(d->vt->copy_from_host(d, a->data, in, sizeof in));
  d->vt->copy(d, b->data, a->data, 600);
  d->vt->zero(d, (char *)b->data + 600, 400);
  cr_assert_null(d->vt->sync(d));
  cr_assert_null(d->vt->copy_to_host(d, out, b->data, sizeof out));
  cr_assert(!memcmp(out, in, 600));
  for (int i = 600; i < 1000; i++) cr_assert_eq(out[i], 0);
  /* a copy the driver refuses (a host address as a device one) is kept for the next sync */
  d->vt->copy(d, b->data, in, 10);
  s = d->vt->sync(d);
  cr_assert(s && strstr(loom_status_message(s), "cuMemcpyDtoD failed"), "%s", s ? loom_status_message(s) : "no error");
  loom_status_free(s);
  cr_assert_null(d->vt->sync(d), "the kept error is reported once");
  loom_vm_obj_release(&a->hdr);
  loom_vm_obj_release(&b->hdr);
  loom_device_release(d);
  fake_close(&f);
}

#if LOOM_HAVE_CUDA
/* Zero-filled host inputs for every parameter of main, dims from names=values (or numbers). */
static uint32_t make_inputs(loom_rt *rt, const char *const *names, const int64_t *values, size_t nvals, loom_tensor **in) {
  uint32_t fn = loom_rt_function_find(rt, "main");
  uint32_t np = loom_rt_param_count(rt, fn);
  cr_assert(np <= 16);
  for (uint32_t i = 0; i < np; i++) {
    loom_rt_param p;
    loom_rt_param_get(rt, fn, i, &p);
    int64_t shape[8];
    for (uint32_t k = 0; k < p.rank; k++) {
      shape[k] = -1;
      for (size_t v = 0; v < nvals; v++)
        if (!strcmp(p.dims[k], names[v])) shape[k] = values[v];
      if (shape[k] < 0) shape[k] = strtoll(p.dims[k], NULL, 10);
    }
    cr_assert_null(loom_rt_tensor_new(rt, (loom_dtype)p.dtype, (int32_t)p.rank, shape, &in[i]));
    cr_assert(in[i]->device->vt->host, "loom_rt_tensor_new makes host tensors");
    memset(in[i]->data, 0, loom_tensor_numel(in[i]) * loom_dtype_size(in[i]->dtype));
  }
  return np;
}

/* A whole model compiled for the CUDA target and called through the runtime: inputs made on the
 * host are copied in, every kernel is launched by the device (none run on the host: a host
 * dereference of device memory faults), outputs come back with loom_rt_tensor_to_host. */
static void run_model(const char *path, const char *const *names, const int64_t *values, size_t nvals, long *launches,
                      long *gemms) {
  fake f = fake_open();
  loom_compile_options co = {.target = "cuda", .emit = LOOM_TARGET_EMIT_JIT, .no_cache = true};
  loom_compiled *c;
  loom_status s = loom_compile_file(path, &co, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_rt *rt;
  s = loom_compiled_open(c, NULL, &rt);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_str_eq(loom_rt_run_device(rt)->vt->name, "cuda");
  loom_tensor *in[16];
  uint32_t np = make_inputs(rt, names, values, nvals, in);
  long before = f.launches(), gemms_before = f.gemms();
  loom_rt_outputs out;
  s = loom_rt_call(rt, "main", in, np, &out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  *launches = f.launches() - before;
  *gemms = f.gemms() - gemms_before;
  cr_assert_gt(*launches, 0);
  cr_assert_eq(f.bad_launches(), 0);
  for (uint32_t i = 0; i < out.count; i++) {
    loom_tensor *t = (loom_tensor *)out.items[i];
    cr_assert_str_eq(t->device->vt->name, "cuda", "outputs stay on the device");
    loom_tensor *h;
    cr_assert_null(loom_rt_tensor_to_host(rt, t, &h));
    cr_assert(h->device->vt->host);
    volatile float first = ((float *)h->data)[0]; /* readable on the host */
    (void)first;
    loom_tensor_release(h);
  }
  loom_rt_outputs_free(&out);
  /* the same inputs moved once (what loom run --repeat does) give a second call no copies */
  loom_tensor *moved;
  cr_assert_null(loom_rt_tensor_to_device(rt, in[0], &moved));
  cr_assert_str_eq(moved->device->vt->name, "cuda");
  loom_tensor *again;
  cr_assert_null(loom_rt_tensor_to_device(rt, moved, &again));
  cr_assert_eq(again, moved, "a tensor already on the device is not copied");
  loom_tensor_release(again);
  loom_tensor_release(moved);
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  fake_close(&f);
}

LOOM_TEST(cuda_device, a_transformer_block_runs_through_the_device_at_several_shapes) {
  static const char *const names[] = {"b", "s"};
  static const int64_t shapes[][2] = {{1, 1}, {2, 5}, {3, 17}};
  for (size_t i = 0; i < 3; i++) {
    long launches = 0, gemms = 0;
    run_model("models/gpt2_block.loom", names, shapes[i], 2, &launches, &gemms);
    cr_assert_geq(launches, 8, "%ld launches", launches);
    cr_assert_geq(gemms, 4, "the block's linear layers go to cuBLAS: %ld GEMMs", gemms);
  }
}

LOOM_TEST(cuda_device, an_mlp_runs_through_the_device) {
  static const char *const names[] = {"b"};
  static const int64_t b[] = {7};
  long launches = 0, gemms = 0;
  run_model("models/mlp.loom", names, b, 1, &launches, &gemms);
  cr_assert_eq(gemms, 2, "two linear layers, two GEMMs: %ld", gemms);
}

/* models/mlp.loom compiled for cuda, opened, and its inputs at b = 7 (zeros, on the host). */
static uint32_t open_mlp(loom_compiled **c, loom_rt **rt, loom_tensor **in) {
  loom_compile_options co = {.target = "cuda", .emit = LOOM_TARGET_EMIT_JIT, .no_cache = true};
  cr_assert_null(loom_compile_file("models/mlp.loom", &co, c));
  loom_status s = loom_compiled_open(*c, NULL, rt);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const char *const names[] = {"b"};
  static const int64_t b[] = {7};
  return make_inputs(*rt, names, b, 1, in);
}

/* --profile on the GPU times each kernel and each cuBLAS call on the device (an event pair around
 * it; the fake's events all measure 0.25 ms), externs in rows of their own; LOOM_CUDA_TF32=1 puts
 * cuBLAS in TF32 math (cublasMath_t 3) when its handle is made. */
LOOM_TEST(cuda_device, the_profile_shows_device_times_and_tf32_reaches_cublas) {
  fake f = fake_open();
  long (*math_mode)(void);
  *(void **)&math_mode = dlsym(f.h, "loom_fakecuda_math_mode");
  cr_assert(math_mode);
  setenv("LOOM_CUDA_TF32", "1", 1);
  loom_compiled *c;
  loom_rt *rt;
  loom_tensor *in[16];
  uint32_t np = open_mlp(&c, &rt, in);
  loom_rt_set_profile(rt, true);
  loom_rt_outputs out;
  loom_status s = loom_rt_call(rt, "main", in, np, &out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_rt_outputs_free(&out);
  cr_assert_eq(math_mode(), 3, "cuBLAS in TF32 math: mode %ld", math_mode());
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  loom_rt_profile_print(rt, m);
  fclose(m);
  int kernels = 0, externs = 0;
  bool in_kernels = false;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    if (!strncmp(line, "profile: kernels", 16)) in_kernels = true;
    char name[128];
    unsigned long calls;
    double total, per, min;
    if (!in_kernels || sscanf(line, " %127s %lu %lf %lf %lf", name, &calls, &total, &per, &min) != 5) continue;
    cr_assert_float_eq(per, 250.0, 1e-6, "%s: %.3f us per call, not the device's 250", name, per);
    if (!strncmp(name, "extern:", 7)) externs++;
    else kernels++;
  }
  free(text);
  cr_assert_gt(kernels, 0);
  cr_assert_eq(externs, 1, "the mlp's GEMMs are one extern called twice: %d rows", externs);
  unsetenv("LOOM_CUDA_TF32");
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  fake_close(&f);
}

/* DLPack on the GPU: a kDLCUDA tensor of the runtime's GPU (what a PyTorch CUDA tensor's
 * __dlpack__ gives) is imported onto the CUDA device and read in place by a call (the stand-in's
 * device pointers fault if host code touches them); results export as kDLCUDA, and the packed
 * call (python/loom's) brings them to the host; another GPU's tensor and a GPU tensor given to
 * a CPU runtime are clear errors. */
typedef struct dl_owned {
  DLManagedTensor m;
  loom_storage *s;
  int64_t shape[2];
  int *deleted;
} dl_owned;

static void dl_owned_delete(DLManagedTensor *m) {
  dl_owned *o = (dl_owned *)m;
  (*o->deleted)++;
  if (o->s) loom_vm_obj_release(&o->s->hdr);
  free(o);
}

static DLManagedTensor *dl_on(loom_storage *s, int device_type, int device_id, int64_t rows, int64_t cols, int *deleted) {
  dl_owned *o = calloc(1, sizeof *o);
  cr_assert_not_null(o);
  o->s = s;
  o->shape[0] = rows, o->shape[1] = cols;
  o->deleted = deleted;
  o->m.dl_tensor = (DLTensor){.data = s ? s->data : (void *)16, .device = {(DLDeviceType)device_type, device_id}, .ndim = 2,
                              .dtype = {kDLFloat, 32, 1}, .shape = o->shape};
  o->m.deleter = dl_owned_delete;
  return &o->m;
}

LOOM_TEST(cuda_device, dlpack_tensors_of_the_gpu_are_read_in_place) {
  fake f = fake_open();
  loom_compiled *c;
  loom_rt *rt;
  loom_tensor *in[16];
  uint32_t np = open_mlp(&c, &rt, in);
  loom_device *gpu = loom_rt_run_device(rt);
  loom_storage *s;
  cr_assert_null(loom_storage_alloc(gpu, (size_t)loom_tensor_numel(in[0]) * 4, &s));
  gpu->vt->zero(gpu, s->data, (size_t)loom_tensor_numel(in[0]) * 4);
  int deleted = 0;
  loom_tensor *x;
  loom_status st = loom_rt_tensor_from_dlpack(rt, dl_on(s, kDLCUDA, 0, in[0]->shape[0], in[0]->shape[1], &deleted), &x);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_eq(x->device, gpu, "imported onto the run device");
  cr_assert_eq(x->data, s->data, "no copy");
  long before = f.launches();
  loom_tensor *args[16];
  for (uint32_t i = 0; i < np; i++) args[i] = i ? in[i] : x; /* x: (b, 784), the rest from host memory */
  loom_rt_outputs out;
  st = loom_rt_call(rt, "main", args, np, &out);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_gt(f.launches(), before);
  DLManagedTensor *y;
  cr_assert_null(loom_tensor_to_dlpack((loom_tensor *)out.items[0], &y));
  cr_assert_eq(y->dl_tensor.device.device_type, kDLCUDA, "a result on the GPU exports as kDLCUDA");
  y->deleter(y);
  loom_rt_outputs_free(&out);
  /* the packed call (python/loom's path) describes host addresses: its results come to the host */
  int64_t desc[32], res[16];
  size_t nd = 0;
  for (uint32_t i = 0; i < np; i++) desc[nd++] = LOOM_RT_ARG_TENSOR, desc[nd++] = (int64_t)(uintptr_t)args[i];
  st = loom_rt_call_packed(rt, "main", desc, nd, np, &out, res, LOOM_ARRAY_LEN(res));
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_eq(res[0], 1);
  cr_assert(((loom_tensor *)out.items[0])->device->vt->host, "the packed call's result is on the host");
  volatile float first = *(const float *)(uintptr_t)res[1 + 3 + res[3]]; /* readable: a host address */
  (void)first;
  loom_rt_outputs_free(&out);
  loom_tensor_release(x);
  cr_assert_eq(deleted, 1, "the producer's deleter ran when the tensor went");
  /* another GPU's memory, and GPU memory for a CPU runtime */
  st = loom_rt_tensor_from_dlpack(rt, dl_on(NULL, kDLCUDA, 1, 2, 2, &deleted), &x);
  cr_assert(st && strstr(loom_status_message(st), "DLPack tensor on device type 2 id 1: this device (cuda, DLPack type 2 id 0)"),
            "%s", st ? loom_status_message(st) : "accepted");
  loom_status_free(st);
  cr_assert_eq(deleted, 2, "a refused tensor is released at once");
  st = loom_rt_tensor_from_dlpack(NULL, dl_on(NULL, kDLCUDA, 0, 2, 2, &deleted), &x);
  cr_assert(st && strstr(loom_status_message(st), "takes CPU memory"), "%s", st ? loom_status_message(st) : "accepted");
  loom_status_free(st);
  cr_assert_eq(deleted, 3);
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  fake_close(&f);
}

/* Device memory running out is an error naming the device, not a crash. */
LOOM_TEST(cuda_device, running_out_of_device_memory_is_a_clear_error) {
  fake f = fake_open();
  loom_compiled *c;
  loom_rt *rt;
  loom_tensor *in[16];
  uint32_t np = open_mlp(&c, &rt, in);
  f.set(0);
  loom_rt_outputs out;
  loom_status s = loom_rt_call(rt, "main", in, np, &out);
  f.set(-1);
  cr_assert(s && strstr(loom_status_message(s), "on device cuda"), "%s", s ? loom_status_text(s, 0) : "no error");
  loom_status_free(s);
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  fake_close(&f);
}

/* An artifact compiled for cuda (PTX and kernel descriptions inside a sealed shared object) runs
 * on the CUDA device as the in-process module does; each device refuses the other's artifact. */
LOOM_TEST(cuda_device, a_cuda_artifact_runs_on_the_device_and_each_device_refuses_the_others) {
  fake f = fake_open();
  const char *gpu = "/tmp/loom-test-cuda-artifact.so", *cpu = "/tmp/loom-test-cpu-artifact.so";
  loom_compile_options co = {.target = "cuda:sm_90", .cpu = "sm_90", .emit = LOOM_TARGET_EMIT_OBJECT, .no_cache = true};
  loom_compiled *c;
  loom_status s = loom_compile_file("models/gpt2_block.loom", &co, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_compiled_save(c, gpu);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_compiled_free(c);
  loom_compile_options cc = {.emit = LOOM_TARGET_EMIT_OBJECT, .no_cache = true};
  cr_assert_null(loom_compile_file("models/mlp.loom", &cc, &c));
  cr_assert_null(loom_compiled_save(c, cpu));
  loom_compiled_free(c);
  loom_rt *rt = NULL;
  s = loom_rt_open(gpu, NULL, &rt);
  cr_assert(s && strstr(loom_status_message(s), "holds GPU kernels (compiled with --target cuda): open it on the cuda device"),
            "%s", s ? loom_status_message(s) : "opened on the CPU");
  loom_status_free(s);
  loom_rt_options gpu_opts = {.device = "cuda"};
  s = loom_rt_open(cpu, &gpu_opts, &rt);
  cr_assert(s && strstr(loom_status_message(s), "holds CPU kernels: compile it with --target cuda"), "%s",
            s ? loom_status_message(s) : "opened on the GPU");
  loom_status_free(s);
  s = loom_rt_open(gpu, &gpu_opts, &rt);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const char *const names[] = {"b", "s"};
  static const int64_t bs[] = {2, 5};
  loom_tensor *in[16];
  uint32_t np = make_inputs(rt, names, bs, 2, in);
  long before = f.launches(), gemms = f.gemms();
  loom_rt_outputs out;
  s = loom_rt_call(rt, "main", in, np, &out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_gt(f.launches() - before, 4);
  cr_assert_gt(f.gemms() - gemms, 0, "the artifact's GEMMs reach cuBLAS");
  cr_assert_eq(f.bad_launches(), 0);
  loom_rt_outputs_free(&out);
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  unlink(gpu);
  unlink(cpu);
  fake_close(&f);
}

/* Without cuBLAS the model still compiles, and opening it says what is missing. */
LOOM_TEST(cuda_device, a_missing_cublas_is_a_clear_error_and_generated_matmuls_need_none) {
  fake f = fake_open();
  setenv("LOOM_CUBLAS_LIBRARY", "libloom-no-such-cublas.so", 1);
  loom_compile_options co = {.target = "cuda", .emit = LOOM_TARGET_EMIT_JIT, .no_cache = true};
  loom_compiled *c = NULL;
  loom_status s = loom_compile_file("models/mlp.loom", &co, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_rt *rt = NULL;
  s = loom_compiled_open(c, NULL, &rt);
  /* (a machine with the toolkit on its library path finds a real libcublas after the named one) */
  if (s) {
    cr_assert(strstr(loom_status_text(s, 0), "no cuBLAS library found"), "%s", loom_status_text(s, 0));
    loom_status_free(s);
  }
  loom_rt_close(rt);
  loom_compiled_free(c);
  /* the matmuls generated (LOOM_OFFLOAD_THRESHOLD above any batch): no library at all */
  setenv("LOOM_OFFLOAD_THRESHOLD", "1000000", 1);
  cr_assert_null(loom_compile_file("models/mlp.loom", &co, &c));
  s = loom_compiled_open(c, NULL, &rt);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_rt_close(rt);
  loom_compiled_free(c);
  unsetenv("LOOM_OFFLOAD_THRESHOLD");
  fake_close(&f);
}
/* `--target cuda:sm_80` names the machine: the PTX is for sm_80 (loom_compile reads the colon, no
 * caller splits it); a cpu option that names another machine is refused, naming both. */
LOOM_TEST(cuda_device, the_target_string_names_the_gpu_and_a_conflicting_cpu_option_is_refused) {
  loom_compile_options co = {.target = "cuda:sm_80", .emit = LOOM_TARGET_EMIT_OBJECT, .no_cache = true};
  loom_compiled *c;
  loom_status s = loom_compile_file("models/mlp.loom", &co, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  const char *ptx = "/tmp/loom-test-target-sm80.ptx";
  s = loom_compiled_save_kernels(c, ptx);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_compiled_free(c);
  FILE *fp = fopen(ptx, "r");
  cr_assert_not_null(fp);
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, fp);
  text[n] = 0;
  fclose(fp);
  unlink(ptx);
  cr_assert(strstr(text, ".target sm_80") != NULL, "%.300s", text);
  loom_compile_options bad = {.target = "cuda:sm_80", .cpu = "sm_90", .no_cache = true};
  s = loom_compile_file("models/mlp.loom", &bad, &c);
  cr_assert(s && strstr(loom_status_message(s), "target 'cuda:sm_80' names machine 'sm_80' but the cpu option names 'sm_90'"),
            "%s", s ? loom_status_message(s) : "accepted");
  loom_status_free(s);
}
#endif

/* A CUDA kernel's grid travels as text (kernel.h) that the runtime evaluates without the
 * symbolic module: every form symbolic/ prints must evaluate to what symbolic/ computes.
 * Random expressions over three shape variables (sums, products, floordiv/mod, min/max,
 * comparisons, and/or/not, select), at random values including 0 and 1. */
#include "symbolic/sym.h"
#include "vm/symeval.h"

static uint64_t prop_rng = 0x243F6A8885A308D3ull;
static uint64_t prop_next(void) {
  prop_rng ^= prop_rng << 13, prop_rng ^= prop_rng >> 7, prop_rng ^= prop_rng << 17;
  return prop_rng;
}

static const loom_sym_expr *random_expr(loom_sym_ctx *cx, const loom_sym_expr *const *vars, int depth, bool boolean) {
  if (boolean) {
    switch (depth <= 0 ? 3 : prop_next() % 4) {
    case 0: return loom_sym_and(cx, random_expr(cx, vars, depth - 1, true), random_expr(cx, vars, depth - 1, true));
    case 1: return loom_sym_or(cx, random_expr(cx, vars, depth - 1, true), random_expr(cx, vars, depth - 1, true));
    case 2: return loom_sym_not(cx, random_expr(cx, vars, depth - 1, true));
    default: {
      static const loom_sym_kind ops[] = {LOOM_SYM_EQ, LOOM_SYM_NE, LOOM_SYM_LT, LOOM_SYM_LE};
      return loom_sym_cmp(cx, ops[prop_next() % 4], random_expr(cx, vars, depth - 1, false),
                          random_expr(cx, vars, depth - 1, false));
    }
    }
  }
  if (depth <= 0 || prop_next() % 4 == 0)
    return prop_next() % 3 ? vars[prop_next() % 3] : loom_sym_const(cx, (int64_t)(prop_next() % 9) - 2);
  const loom_sym_expr *a = random_expr(cx, vars, depth - 1, false), *b = random_expr(cx, vars, depth - 1, false);
  switch (prop_next() % 8) {
  case 0: return loom_sym_add(cx, a, b);
  case 1: return loom_sym_sub(cx, a, b);
  case 2: return loom_sym_mul(cx, a, b);
  case 3: return loom_sym_floordiv(cx, a, loom_sym_const(cx, (int64_t)(prop_next() % 7) + 1));
  case 4: return loom_sym_floormod(cx, a, loom_sym_const(cx, (int64_t)(prop_next() % 7) + 1));
  case 5: return loom_sym_min(cx, a, b);
  case 6: return loom_sym_max(cx, a, b);
  default: return loom_sym_select(cx, random_expr(cx, vars, depth - 1, true), a, b);
  }
}

LOOM_TEST(cuda_grid_text, every_printed_form_evaluates_at_run_time_as_symbolic_does) {
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  const loom_sym_expr *vars[3] = {loom_sym_var_new(cx, "s0", LOOM_SYM_VAR_SHAPE),
                                  loom_sym_var_new(cx, "s1", LOOM_SYM_VAR_SHAPE),
                                  loom_sym_var_new(cx, "s2", LOOM_SYM_VAR_SHAPE)};
  static const char *const names[3] = {"s0", "s1", "s2"};
  loom_sym_env *env;
  cr_assert_null(loom_sym_env_create(NULL, &env));
  int checked = 0, selects = 0, compares = 0;
  for (int i = 0; i < 3000; i++) {
    const loom_sym_expr *e = random_expr(cx, vars, 4, i % 5 == 4);
    cr_assert_not_null(e);
    char *text = loom_sym_to_string(e);
    cr_assert_not_null(text);
    selects += strstr(text, "select(") != NULL;
    compares += strstr(text, "==") || strstr(text, "<");
    for (int r = 0; r < 4; r++) {
      int64_t vals[3];
      for (int k = 0; k < 3; k++) vals[k] = r == 0 ? 0 : r == 1 ? 1 : (int64_t)(prop_next() % 50);
      loom_sym_env_clear(env);
      for (int k = 0; k < 3; k++) cr_assert_null(loom_sym_env_set(env, vars[k], vals[k]));
      int64_t want = 0, got = 0;
      loom_status ws = loom_sym_eval(cx, e, env, &want);
      loom_status gs = loom_vm_symeval(text, names, vals, 3, &got);
      if (ws) { /* symbolic/ refuses (overflow): so may the text, never with another value */
        loom_status_free(ws);
        loom_status_free(gs);
        continue;
      }
      cr_assert_null(gs, "'%s' at s0=%lld s1=%lld s2=%lld: %s", text, (long long)vals[0], (long long)vals[1],
                     (long long)vals[2], loom_status_message(gs));
      cr_assert_eq(got, want, "'%s' at s0=%lld s1=%lld s2=%lld: %lld, symbolic/ says %lld", text, (long long)vals[0],
                   (long long)vals[1], (long long)vals[2], (long long)got, (long long)want);
      checked++;
    }
    free(text);
  }
  cr_assert_gt(checked, 8000);
  cr_assert_gt(selects, 100, "select printed %d times", selects);
  cr_assert_gt(compares, 100, "comparisons printed %d times", compares);
  loom_sym_env_destroy(env);
  loom_sym_ctx_destroy(cx);
}

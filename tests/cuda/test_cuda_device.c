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

#include "loom.h"
#include "loomrt.h"
#include "support/loom_test.h"
#include "targets/cuda/device_cuda.h"

#define FAKE "zig-out/lib/libloom_test_fakecuda.so"

typedef struct fake {
  void *h;
  long (*launches)(void);
  long (*bad_launches)(void);
  void (*set)(long fail_alloc_after);
} fake;

static fake fake_open(void) {
  fake f = {0};
  f.h = dlopen(FAKE, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(f.h, "%s (zig build test-plugins makes it): %s", FAKE, dlerror());
  *(void **)&f.launches = dlsym(f.h, "loom_fakecuda_launches");
  *(void **)&f.bad_launches = dlsym(f.h, "loom_fakecuda_bad_launches");
  *(void **)&f.set = dlsym(f.h, "loom_fakecuda_set");
  cr_assert(f.launches && f.bad_launches && f.set);
  setenv("LOOM_CUDA_DRIVER", FAKE, 1); /* the same library: dlopen returns this handle again */
  f.set(-1);
  return f;
}

static void fake_close(fake *f) {
  unsetenv("LOOM_CUDA_DRIVER");
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
static void run_model(const char *path, const char *const *names, const int64_t *values, size_t nvals, long *launches) {
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
  long before = f.launches();
  loom_rt_outputs out;
  s = loom_rt_call(rt, "main", in, np, &out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  *launches = f.launches() - before;
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
    long launches = 0;
    run_model("models/gpt2_block.loom", names, shapes[i], 2, &launches);
    cr_assert_geq(launches, 10, "%ld launches", launches);
  }
}

LOOM_TEST(cuda_device, an_mlp_runs_through_the_device) {
  static const char *const names[] = {"b"};
  static const int64_t b[] = {7};
  long launches = 0;
  run_model("models/mlp.loom", names, b, 1, &launches);
}

/* Device memory running out is an error naming the device, not a crash. */
LOOM_TEST(cuda_device, running_out_of_device_memory_is_a_clear_error) {
  fake f = fake_open();
  loom_compile_options co = {.target = "cuda", .emit = LOOM_TARGET_EMIT_JIT, .no_cache = true};
  loom_compiled *c;
  cr_assert_null(loom_compile_file("models/mlp.loom", &co, &c));
  loom_rt *rt;
  loom_status s = loom_compiled_open(c, NULL, &rt);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const char *const names[] = {"b"};
  static const int64_t b[] = {7};
  loom_tensor *in[16];
  uint32_t np = make_inputs(rt, names, b, 1, in);
  f.set(0);
  loom_rt_outputs out;
  s = loom_rt_call(rt, "main", in, np, &out);
  f.set(-1);
  cr_assert(s && strstr(loom_status_message(s), "on device cuda"), "%s", s ? loom_status_text(s, 0) : "no error");
  loom_status_free(s);
  for (uint32_t i = 0; i < np; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_compiled_free(c);
  fake_close(&f);
}

/* --offload hands matmuls to the host's BLAS: refused for the GPU, naming both. */
LOOM_TEST(cuda_device, offload_is_refused_for_the_cuda_target) {
  loom_compile_options co = {.target = "cuda", .emit = LOOM_TARGET_EMIT_JIT, .offload = true, .no_cache = true};
  loom_compiled *c = NULL;
  loom_status s = loom_compile_file("models/mlp.loom", &co, &c);
  cr_assert(s && strstr(loom_status_message(s), "--offload hands matmuls to the host's BLAS: not with target 'cuda'"),
            "%s", s ? loom_status_message(s) : "compiled");
  cr_assert_null(c);
  loom_status_free(s);
}
#endif

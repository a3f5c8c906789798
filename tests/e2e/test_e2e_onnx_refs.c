/* test_e2e_onnx_refs.c — ONNX models compiled once (JIT) against ONNX Runtime's outputs saved
 * beside them (models/<name>/ref_<shape>_<x|y>.npy, written by the model's gen.py), at every
 * saved shape, with 1 and 2 threads. */
#include <math.h>
#include <stdio.h>

#include "e2e/e2e_util.h"
#include "graph/npy_io.h"

/* Runs dir/model.onnx compiled on ref_<shape>_x.npy and compares with ref_<shape>_y.npy. */
static void check_refs(const char *dir, const char *const *shapes, size_t nshapes, double tol) {
  char path[256];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  e2e_model md = e2e_compile(path);
  for (size_t i = 0; i < nshapes; i++) {
    loom_graph_tensor x, want;
    snprintf(path, sizeof path, "%s/ref_%s_x.npy", dir, shapes[i]);
    loom_status s = loom_graph_npy_read(path, &x);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    snprintf(path, sizeof path, "%s/ref_%s_y.npy", dir, shapes[i]);
    s = loom_graph_npy_read(path, &want);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_tensor *in;
    cr_assert_null(loom_rt_tensor_new(md.rt, x.dtype, x.ndim, x.shape, &in));
    memcpy(in->data, x.data, x.numel * loom_dtype_size(x.dtype));
    double scale = 0;
    for (size_t k = 0; k < want.numel; k++) scale = fmax(scale, fabs(loom_graph_tensor_get_f64(&want, k)));
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      loom_rt_outputs out;
      s = loom_rt_call(md.rt, "main", &in, 1, &out);
      cr_assert_null(s, "%s %s: %s", dir, shapes[i], loom_status_text(s, 0));
      cr_assert_eq(out.count, 1);
      const loom_tensor *y = (const loom_tensor *)out.items[0];
      cr_assert_eq(y->rank, want.ndim);
      for (int d = 0; d < want.ndim; d++) cr_assert_eq(y->shape[d], want.shape[d], "%s %s axis %d", dir, shapes[i], d);
      loom_graph_tensor got = want;
      got.data = y->data;
      double worst = 0;
      for (size_t k = 0; k < want.numel; k++) {
        double a = loom_graph_tensor_get_f64(&got, k), b = loom_graph_tensor_get_f64(&want, k);
        cr_assert(isfinite(a), "%s %s: element %zu is %g", dir, shapes[i], k, a);
        worst = fmax(worst, fabs(a - b) / scale);
      }
      cr_assert_lt(worst, tol, "%s %s, %u threads: relative error %g against ONNX Runtime", dir, shapes[i], threads, worst);
      loom_rt_outputs_free(&out);
    }
    loom_tensor_release(in);
    loom_graph_tensor_free(&x);
    loom_graph_tensor_free(&want);
  }
  e2e_model_free(&md);
}

/* wav2vec2's positional convolution: kernel 32, padding 16, groups 16 (issue 27). */
LOOM_TEST(e2e_onnx, wav2vec2_positional_conv_equals_onnx_runtime) {
  static const char *const shapes[] = {"1x400", "2x203", "3x1000"};
  check_refs("models/wav2vec2_pos", shapes, 3, 1e-5);
}

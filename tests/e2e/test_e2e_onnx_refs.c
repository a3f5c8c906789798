/* test_e2e_onnx_refs.c — ONNX models compiled once (JIT) against ONNX Runtime's outputs saved
 * beside them (models/<name>/ref_<shape>_<x|y>.npy, written by the model's gen.py), at every
 * saved shape, with 1 and 2 threads. */
#include <math.h>
#include <stdio.h>

#include "e2e/e2e_util.h"
#include "frontend/onnx/onnx_model.h"
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

/* The backend suite's light/ models (nine ImageNet CNNs: AlexNet, DenseNet-121, Inception v1 / v2,
 * ResNet-50, ShuffleNet, SqueezeNet, VGG-19, ZFNet-512; every weight a ConstantOfShape, so the
 * expected output, NAME_output_0.pb from ONNX's reference evaluator, does not depend on the
 * image), compiled and run against it. They take opset-7 Softmax on axis 1 of (1, 1000, 1, 1)
 * and fc weights too large to fold (full). */
LOOM_TEST(e2e_onnx, light_models_equal_their_expected_outputs, .timeout = 600) {
  static const char *const names[] = {"bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
                                      "shufflenet",   "squeezenet",  "vgg19",        "zfnet512"};
  const char *dir = "../shared/conformance/onnx-backend-1.22/light";
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/light_%s.onnx", dir, names[i]);
    e2e_model md = e2e_compile(path);
    snprintf(path, sizeof path, "%s/light_%s_output_0.pb", dir, names[i]);
    loom_arena arena;
    loom_arena_init(&arena, NULL, 0);
    loom_onnx_tensor *want;
    loom_status s = loom_onnx_tensor_load(path, &arena, &want);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_eq(want->dtype, LOOM_DTYPE_F32);
    loom_tensor *in;
    cr_assert_null(loom_rt_tensor_new(md.rt, LOOM_DTYPE_F32, 4, (int64_t[]){1, 3, 224, 224}, &in));
    float *x = in->data;
    for (size_t k = 0; k < 3 * 224 * 224; k++) x[k] = (float)(k % 255) / 255.0f;
    loom_rt_outputs out;
    s = loom_rt_call(md.rt, "main", &in, 1, &out);
    cr_assert_null(s, "%s: %s", names[i], loom_status_text(s, 0));
    const loom_tensor *y = (const loom_tensor *)out.items[0];
    int64_t n = 1;
    for (int32_t d = 0; d < y->rank; d++) n *= y->shape[d];
    cr_assert_eq(n, want->numel, "%s: %lld elements, expected %lld", names[i], (long long)n, (long long)want->numel);
    const float *got = y->data, *ref = want->data;
    for (int64_t k = 0; k < n; k++)
      cr_assert(fabsf(got[k] - ref[k]) <= 1e-6f + 1e-5f * fabsf(ref[k]), "%s element %lld: %g, expected %g", names[i],
                (long long)k, got[k], ref[k]);
    loom_rt_outputs_free(&out);
    loom_tensor_release(in);
    loom_arena_destroy(&arena);
    e2e_model_free(&md);
  }
}

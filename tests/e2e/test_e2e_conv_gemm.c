/* test_e2e_conv_gemm.c — convolution with constant kernel extents, which legalization turns into a GEMM
 * the CPU matmul rule register-tiles (graph/legalize_window.c: padded input viewed flat + implicit GEMM
 * + crop, or patches + GEMM when strided; depthwise row by row; docs/tensorprog.md "Convolution as GEMM"), against the
 * reference interpreter. Each form is compiled once with batch and spatial extents symbolic and run at
 * batch 0, 1 and 2, at the smallest spatial extent with an output, at primes and at extents that are
 * not multiples of the 16-column panels or the 6-row tiles, with 1 and 2 threads. Output channels 7
 * and 13 leave a row tail; groups, depthwise, strides, dilations and asymmetric pads are covered in
 * 1-D, 2-D and 3-D, and dilations that reach past the grid. Every form is checked to have taken its path (a program named conv_gemm, or
 * depthwise_rows for depthwise), so that a change sending it back to the generic nest fails here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

enum { MAX_N = 3 };

typedef struct gemm_form {
  int n; /* spatial axes */
  int64_t kernel[MAX_N], pad_lo[MAX_N], pad_hi[MAX_N], stride[MAX_N], dilation[MAX_N];
  int64_t groups, c, o;
  bool bias;
} gemm_form;

static const char *const spatial_in[MAX_N] = {"h", "v", "u"};

static void list(char *buf, size_t cap, const int64_t *a, int n, const int64_t *b) {
  size_t len = strlen(buf);
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)a[i]);
  for (int i = 0; b && i < n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %lld", (long long)b[i]);
}

static void form_text(const gemm_form *w, char *buf, size_t cap) {
  const char *op = w->n == 1 ? "conv1d" : w->n == 2 ? "conv2d" : "conv";
  size_t len = (size_t)snprintf(buf, cap, "fn @main(x: Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %s", spatial_in[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32], w: Tensor[(%lld, %lld", (long long)w->o, (long long)(w->c / w->groups));
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %lld", (long long)w->kernel[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32]");
  if (w->bias) len += (size_t)snprintf(buf + len, cap - len, ", bias: Tensor[(%lld,), f32]", (long long)w->o);
  len += (size_t)snprintf(buf + len, cap - len, ") -> Tensor[(b, %lld", (long long)w->o);
  for (int i = 0; i < w->n; i++)
    len += (size_t)snprintf(buf + len, cap - len, ", floordiv(%s + %lld, %lld) + 1", spatial_in[i],
                            (long long)(w->pad_lo[i] + w->pad_hi[i] - w->dilation[i] * (w->kernel[i] - 1) - 1),
                            (long long)w->stride[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32] {\n  dataflow {\n    y = %s(x, w%s, padding=[", op, w->bias ? ", bias" : "");
  list(buf, cap, w->pad_lo, w->n, w->pad_hi);
  len = strlen(buf);
  len += (size_t)snprintf(buf + len, cap - len, "], strides=[");
  list(buf, cap, w->stride, w->n, NULL);
  len = strlen(buf);
  len += (size_t)snprintf(buf + len, cap - len, "], dilation=[");
  list(buf, cap, w->dilation, w->n, NULL);
  len = strlen(buf);
  snprintf(buf + len, cap - len, "], groups=%lld)\n    output y\n  }\n  return y\n}\n", (long long)w->groups);
}

/* True when the compiled module holds a program whose name starts with `prefix`. */
static bool has_program(const e2e_model *md, const char *prefix) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    if (!strncmp(loom_tp_func_name(loom_graph_module_tp_at(m, i)), prefix, strlen(prefix))) return true;
  return false;
}

/* Compiles the form once and runs it at batch 0, 1, 2 and spatial extents from the smallest valid
 * one up (a prime, a non-multiple of the panel width); returns the number of runs. */
static int check_form(const gemm_form *w, const char *also) {
  char text[2048], path[] = "/tmp/loom-convgemm-XXXXXX";
  form_text(w, text, sizeof text);
  e2e_model md = e2e_compile_text(text, path);
  /* depthwise (one channel per group in and out) takes pooling's row form, the rest the GEMM */
  const char *want = w->groups == w->c && w->groups == w->o ? "depthwise_rows" : "conv_gemm";
  cr_assert(has_program(&md, want), "%s did not take the %s path:\n%s", path, want, text);
  if (also) cr_assert(has_program(&md, also), "%s has no %s program:\n%s", path, also, text);
  /* past the smallest extents; with `also` (dilations past the grid) the later axes grow too, so
   * that their outer taps read data at some extents and not at others */
  static const int64_t extras[2][4][MAX_N] = {{{0, 0, 0}, {12, 6, 1}, {16, 4, 2}, {40, 1, 0}},
                                              {{0, 0, 0}, {12, 13, 10}, {16, 29, 1}, {40, 7, 17}}};
  const int64_t(*extra)[MAX_N] = extras[also != NULL];
  static const int64_t batches[] = {2, 1, 1, 0};
  int runs = 0;
  for (size_t e = 0; e < 4; e++) {
    e2e_bind b[1 + MAX_N] = {{"b", batches[e]}};
    for (int i = 0; i < w->n; i++) {
      int64_t span = w->dilation[i] * (w->kernel[i] - 1) + 1 - w->pad_lo[i] - w->pad_hi[i];
      b[1 + i] = (e2e_bind){spatial_in[i], (span > 1 ? span : 1) + extra[e][w->n == 1 ? 0 : i]};
    }
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      double err = e2e_check(&md, "main", b, 1 + (size_t)w->n, false, NULL);
      cr_assert_lt(err, 1e-4, "%s: sizes %zu, %u threads: relative error %g\n%s", path, e, threads, err, text);
      runs++;
    }
  }
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

static gemm_form f1(int64_t k, int64_t lo, int64_t hi, int64_t s, int64_t d, int64_t g, int64_t c, int64_t o, bool bias) {
  return (gemm_form){.n = 1, .kernel = {k}, .pad_lo = {lo}, .pad_hi = {hi}, .stride = {s}, .dilation = {d},
                     .groups = g, .c = c, .o = o, .bias = bias};
}

static gemm_form f2(int64_t kh, int64_t kw, int64_t t, int64_t l, int64_t bo, int64_t r, int64_t sy, int64_t sx, int64_t dy,
                    int64_t dx, int64_t g, int64_t c, int64_t o, bool bias) {
  return (gemm_form){.n = 2, .kernel = {kh, kw}, .pad_lo = {t, l}, .pad_hi = {bo, r}, .stride = {sy, sx},
                     .dilation = {dy, dx}, .groups = g, .c = c, .o = o, .bias = bias};
}

/* 1-D: strides on the flat index, dilation, groups, a kernel of 1. */
LOOM_TEST(e2e_conv_gemm, conv1d_forms) {
  const gemm_form forms[] = {f1(5, 2, 2, 1, 1, 1, 6, 13, true), f1(3, 0, 4, 2, 2, 1, 5, 7, false),
                             f1(1, 0, 0, 3, 1, 2, 4, 6, true), f1(3, 1, 1, 1, 1, 5, 5, 5, false)};
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i], NULL);
  cr_log_info("conv1d as GEMM: %d runs", runs);
}

/* 2-D stride 1 (the flat implicit GEMM and its crop): 1 x 1, 3 x 3 same padding, asymmetric pads,
 * dilation, a 1 x 5 kernel, groups, depthwise. */
LOOM_TEST(e2e_conv_gemm, conv2d_stride_one) {
  const gemm_form forms[] = {
      f2(1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 8, 13, true),  f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 5, 7, true),
      f2(3, 2, 0, 2, 1, 0, 1, 1, 1, 1, 1, 3, 6, false),  f2(3, 3, 2, 2, 2, 2, 1, 1, 2, 2, 1, 4, 7, false),
      f2(1, 5, 0, 2, 0, 2, 1, 1, 1, 1, 1, 2, 9, true),   f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 8, 12, true),
      f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6, false),
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i], NULL);
  cr_log_info("conv2d stride 1 as GEMM: %d runs", runs);
}

/* 2-D strided (patches + GEMM): the 7 x 7 stem, 3 x 3 and 1 x 1 downsampling, unequal strides with
 * dilation and groups, depthwise stride 2. */
LOOM_TEST(e2e_conv_gemm, conv2d_strided) {
  const gemm_form forms[] = {
      f2(7, 7, 3, 3, 3, 3, 2, 2, 1, 1, 1, 3, 8, true), f2(3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 1, 4, 7, false),
      f2(1, 1, 0, 0, 0, 0, 2, 2, 1, 1, 1, 6, 13, true), f2(3, 2, 0, 1, 2, 0, 3, 1, 1, 2, 2, 4, 6, false),
      f2(3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 5, 5, 5, true),   f2(5, 3, 2, 0, 1, 2, 3, 2, 2, 1, 7, 7, 7, false),
      f2(5, 9, 1, 0, 2, 3, 1, 1, 1, 1, 1, 2, 3, true), /* 45 taps past the grid: too many to go tap by tap, the patches */
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i], NULL);
  cr_log_info("conv2d strided as GEMM: %d runs", runs);
}

/* Dilated past the grid ((k - 1) * d / s >= 8 on the last axis): the live taps' patches and weights
 * (tensorprog/gen_conv_taps.c). At the smallest extents only the centre taps read data (ASPP on a
 * small map), at the larger ones some or all; same and asymmetric pads, strides, groups, 2-D and
 * 3-D (1-D keeps the flat GEMM: its grid is the output). */
LOOM_TEST(e2e_conv_gemm, dilated_live_taps) {
  const gemm_form forms[] = {
      f2(3, 3, 12, 12, 12, 12, 1, 1, 12, 12, 1, 5, 7, true), f2(3, 3, 9, 9, 9, 9, 2, 2, 9, 9, 1, 3, 6, false),
      f2(3, 3, 10, 3, 8, 20, 1, 1, 11, 13, 2, 4, 6, true),   f2(2, 3, 0, 5, 1, 9, 1, 2, 3, 9, 1, 2, 9, false),
      f2(2, 9, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 5, false), /* no padding: every tap's box starts at 0 (fuzz-ops conv3d, shrunk) */
      {.n = 3, .kernel = {3, 1, 3}, .pad_lo = {2, 0, 8}, .pad_hi = {2, 0, 8}, .stride = {1, 1, 1}, .dilation = {2, 1, 8},
       .groups = 1, .c = 3, .o = 4, .bias = true},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i], "conv_tap_cols");
  cr_log_info("dilated convolutions by their live taps: %d runs", runs);
}

/* 3-D: stride 1 with padding (two crops), and strided with groups. */
LOOM_TEST(e2e_conv_gemm, conv3d_forms) {
  const gemm_form forms[] = {
      {.n = 3, .kernel = {3, 2, 3}, .pad_lo = {1, 0, 1}, .pad_hi = {1, 1, 0}, .stride = {1, 1, 1}, .dilation = {1, 1, 2},
       .groups = 1, .c = 3, .o = 7, .bias = true},
      {.n = 3, .kernel = {2, 3, 1}, .pad_lo = {0, 1, 0}, .pad_hi = {1, 1, 0}, .stride = {2, 1, 2}, .dilation = {1, 1, 1},
       .groups = 2, .c = 4, .o = 6, .bias = false},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i], NULL);
  cr_log_info("conv3d as GEMM: %d runs", runs);
}

/* conv_transpose (GEMM with the weights transposed, then col2im): `loom eval` semantics against the
 * compiled module over strides, padding, output padding, dilation, groups and a bias. */
typedef struct convt_form {
  int n;
  int64_t kernel[MAX_N], pad_lo[MAX_N], pad_hi[MAX_N], stride[MAX_N], dilation[MAX_N], out_pad[MAX_N];
  int64_t groups, c, og;
  bool bias;
} convt_form;

static int check_convt(const convt_form *w) {
  char text[2048], path[] = "/tmp/loom-convt-XXXXXX";
  size_t len = (size_t)snprintf(text, sizeof text, "fn @main(x: Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(text + len, sizeof text - len, ", %s", spatial_in[i]);
  len += (size_t)snprintf(text + len, sizeof text - len, "), f32], w: Tensor[(%lld, %lld", (long long)w->c, (long long)w->og);
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(text + len, sizeof text - len, ", %lld", (long long)w->kernel[i]);
  len += (size_t)snprintf(text + len, sizeof text - len, "), f32]");
  if (w->bias) len += (size_t)snprintf(text + len, sizeof text - len, ", bias: Tensor[(%lld,), f32]", (long long)(w->og * w->groups));
  len += (size_t)snprintf(text + len, sizeof text - len, ") -> Tensor[(b, %lld", (long long)(w->og * w->groups));
  for (int i = 0; i < w->n; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, ", %lld*%s + %lld", (long long)w->stride[i], spatial_in[i],
                            (long long)(w->out_pad[i] - w->pad_lo[i] - w->pad_hi[i] - w->stride[i] + w->dilation[i] * (w->kernel[i] - 1) + 1));
  len += (size_t)snprintf(text + len, sizeof text - len, "), f32] {\n  dataflow {\n    y = conv_transpose(x, w%s, strides=[",
                          w->bias ? ", bias" : "");
  list(text, sizeof text, w->stride, w->n, NULL);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], padding=[");
  list(text, sizeof text, w->pad_lo, w->n, w->pad_hi);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], dilation=[");
  list(text, sizeof text, w->dilation, w->n, NULL);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], output_padding=[");
  list(text, sizeof text, w->out_pad, w->n, NULL);
  len = strlen(text);
  snprintf(text + len, sizeof text - len, "], groups=%lld)\n    output y\n  }\n  return y\n}\n", (long long)w->groups);
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(has_program(&md, "convt_gemm"), "%s did not take the GEMM path:\n%s", path, text);
  static const int64_t sizes[][MAX_N] = {{1, 1, 1}, {7, 5, 2}, {17, 9, 3}, {3, 2, 1}};
  static const int64_t batches[] = {2, 1, 1, 0};
  int runs = 0;
  for (size_t e = 0; e < sizeof sizes / sizeof sizes[0]; e++) {
    e2e_bind b[1 + MAX_N] = {{"b", batches[e]}};
    for (int i = 0; i < w->n; i++) b[1 + i] = (e2e_bind){spatial_in[i], sizes[e][w->n == 1 ? 0 : i]};
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      double err = e2e_check(&md, "main", b, 1 + (size_t)w->n, false, NULL);
      cr_assert_lt(err, 1e-4, "%s: sizes %zu, %u threads: relative error %g\n%s", path, e, threads, err, text);
      runs++;
    }
  }
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

LOOM_TEST(e2e_conv_gemm, conv_transpose_forms) {
  const convt_form forms[] = {
      {.n = 2, .kernel = {3, 3}, .pad_lo = {1, 1}, .pad_hi = {1, 1}, .stride = {2, 2}, .dilation = {1, 1}, .out_pad = {1, 1},
       .groups = 1, .c = 5, .og = 7, .bias = true},
      {.n = 2, .kernel = {2, 2}, .pad_lo = {0, 0}, .pad_hi = {0, 0}, .stride = {2, 2}, .dilation = {1, 1}, .out_pad = {0, 0},
       .groups = 1, .c = 4, .og = 3, .bias = false},
      {.n = 2, .kernel = {4, 3}, .pad_lo = {2, 0}, .pad_hi = {1, 1}, .stride = {3, 1}, .dilation = {1, 2}, .out_pad = {2, 0},
       .groups = 2, .c = 6, .og = 4, .bias = true},
      {.n = 1, .kernel = {5}, .pad_lo = {2}, .pad_hi = {1}, .stride = {2}, .dilation = {1}, .out_pad = {1}, .groups = 3, .c = 6,
       .og = 2, .bias = false},
      {.n = 3, .kernel = {2, 2, 3}, .pad_lo = {0, 1, 1}, .pad_hi = {0, 0, 1}, .stride = {2, 1, 2}, .dilation = {1, 1, 1},
       .out_pad = {1, 0, 0}, .groups = 1, .c = 3, .og = 2, .bias = true},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_convt(&forms[i]);
  cr_log_info("conv_transpose as GEMM: %d runs", runs);
}

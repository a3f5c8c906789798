/* test_e2e_window.c — convolution compiled once per window form (padding, strides,
 * dilation, groups), with the kernel extents symbolic, against the reference interpreter
 * over kernel sizes 1-13 and every padding up to kernel - 1, spatial sizes from the smallest
 * valid one to primes past the vector width, 1 and 2 threads; 3-D (the N-d `conv`) over kernels
 * 1, 3, 8 and 9.
 *
 * Issue 27: with a kernel of 8 or more and padding, LLVM's loop vectoriser computed the
 * channel offset `floordiv(o, o / groups)` (guarded by the padding test) for the first lane
 * only; the compiled convolution gave NaN, wrong values or read outside its input. The
 * tests here run under ASan, so a read outside the input fails them too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

enum { MAX_N = 3 };

typedef struct window_form {
  int n;                     /* spatial axes */
  int64_t pad_lo[MAX_N], pad_hi[MAX_N];
  int64_t stride[MAX_N], dilation[MAX_N];
  int64_t groups, c, o;      /* input and output channels */
} window_form;

static const char *const spatial_in[MAX_N] = {"h", "v", "u"};
static const char *const spatial_k[MAX_N] = {"k", "l", "m"};

static void list(char *buf, size_t cap, const int64_t *a, int n, const int64_t *b) {
  size_t len = strlen(buf);
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)a[i]);
  for (int i = 0; b && i < n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %lld", (long long)b[i]);
}

/* The module of one form, kernel extents and spatial sizes symbolic. */
static void form_text(const window_form *w, char *buf, size_t cap) {
  const char *op = w->n == 1 ? "conv1d" : w->n == 2 ? "conv2d" : "conv";
  size_t len = (size_t)snprintf(buf, cap, "fn @main(x: Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %s", spatial_in[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32], w: Tensor[(%lld, %lld", (long long)w->o,
                          (long long)(w->c / w->groups));
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %s", spatial_k[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32]) -> Tensor[(b, %lld", (long long)w->o);
  for (int i = 0; i < w->n; i++)
    len += (size_t)snprintf(buf + len, cap - len, ", floordiv(%s + %lld - %lld*%s, %lld) + 1", spatial_in[i],
                            (long long)(w->pad_lo[i] + w->pad_hi[i] + w->dilation[i] - 1), (long long)w->dilation[i],
                            spatial_k[i], (long long)w->stride[i]);
  len += (size_t)snprintf(buf + len, cap - len, "), f32] {\n  dataflow {\n    y = %s(x, w, padding=[", op);
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

static int64_t max_pad(const window_form *w, int i) { return w->pad_lo[i] > w->pad_hi[i] ? w->pad_lo[i] : w->pad_hi[i]; }

/* Compiles the form once; runs every kernel size from 1 to 13 whose extent exceeds the
 * padding (on each axis: the same kernel size on every axis, and on 2-D also a 1 x K and a
 * K x 3 kernel), at the smallest spatial size with a non-empty output, a prime and one past
 * a vector width, with 1 and 2 threads. Returns the number of runs. */
static int check_form(const window_form *w) {
  char text[2048], path[] = "/tmp/loom-window-XXXXXX";
  form_text(w, text, sizeof text);
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  e2e_model md = e2e_compile(path);
  int runs = 0;
  static const int64_t sizes1[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}, sizes2[] = {1, 2, 3, 5, 7, 8, 9, 11, 13},
                       sizes3[] = {1, 3, 8, 9};
  const int64_t *sizes = w->n == 1 ? sizes1 : w->n == 2 ? sizes2 : sizes3;
  size_t nk = w->n == 1 ? sizeof sizes1 / sizeof sizes1[0] : w->n == 2 ? sizeof sizes2 / sizeof sizes2[0] : 4;
  for (size_t ki = 0; ki < nk; ki++) {
    int64_t k = sizes[ki];
    int64_t ks[3][MAX_N] = {{k, k, k}, {1, k, k}, {k, 3, k}};
    for (int shape = 0; shape < (w->n == 2 ? 3 : 1); shape++) {
      bool ok = true;
      for (int i = 0; i < w->n; i++) ok &= ks[shape][i] > max_pad(w, i);
      if (!ok) continue;
      /* past the smallest valid size: 0, a prime, past a vector split (1-D) */
      static const int64_t extra1[] = {0, 37, 70}, extra2[] = {0, 9, 0}, extra3[] = {0, 3, 0};
      for (size_t e = 0; e < (w->n == 1 ? 3 : 2); e++) {
        e2e_bind b[1 + 2 * MAX_N] = {{"b", e == 2 ? 1 : 2}};
        size_t nb = 1;
        for (int i = 0; i < w->n; i++) {
          int64_t span = w->dilation[i] * (ks[shape][i] - 1) + 1 - w->pad_lo[i] - w->pad_hi[i];
          int64_t in = (span > 1 ? span : 1) + (w->n == 1 ? extra1[e] : w->n == 2 ? extra2[e] : extra3[e]);
          b[nb++] = (e2e_bind){spatial_in[i], in};
          b[nb++] = (e2e_bind){spatial_k[i], ks[shape][i]};
        }
        for (uint32_t threads = 1; threads <= 2; threads++) {
          cr_assert_null(loom_rt_set_threads(md.rt, threads));
          double err = e2e_check(&md, "main", b, nb, false, NULL);
          cr_assert_lt(err, 1e-4, "%s: kernel %lld (axis shape %d), size %zu, %u threads: relative error %g\n%s", path,
                       (long long)k, shape, e, threads, err, text);
          runs++;
        }
      }
    }
  }
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

static window_form form1(int64_t lo, int64_t hi, int64_t stride, int64_t dilation, int64_t groups, int64_t c, int64_t o) {
  return (window_form){.n = 1, .pad_lo = {lo}, .pad_hi = {hi}, .stride = {stride}, .dilation = {dilation},
                       .groups = groups, .c = c, .o = o};
}

/* Every padding 0..12 (symmetric, and one more after), each with all kernels above it. */
LOOM_TEST(e2e_window, conv1d_every_padding_and_kernel_size) {
  int runs = 0;
  for (int64_t p = 0; p <= 12; p++) {
    window_form sym = form1(p, p, 1, 1, 1, 16, 16), asym = form1(p, p + 1, 1, 1, 1, 3, 5);
    runs += check_form(&sym);
    if (p < 12) runs += check_form(&asym);
  }
  cr_log_info("conv1d: %d runs", runs);
}

/* Strides, dilations and groups (wav2vec2's positional conv: kernel up to 13 here, groups 16, pad 6). */
LOOM_TEST(e2e_window, conv1d_strides_dilations_groups) {
  const window_form forms[] = {
      form1(4, 4, 2, 1, 1, 8, 8),  form1(3, 5, 3, 1, 1, 4, 6),   form1(5, 5, 1, 2, 1, 6, 4),
      form1(2, 7, 2, 3, 2, 8, 6),  form1(6, 6, 1, 1, 16, 16, 16), form1(8, 8, 1, 1, 4, 8, 12),
      form1(0, 9, 1, 1, 8, 8, 8),  form1(7, 0, 4, 2, 2, 2, 2),
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) check_form(&forms[i]);
}

static window_form form2(int64_t t, int64_t l, int64_t bo, int64_t r, int64_t sy, int64_t sx, int64_t dy, int64_t dx,
                         int64_t groups, int64_t c, int64_t o) {
  return (window_form){.n = 2, .pad_lo = {t, l}, .pad_hi = {bo, r}, .stride = {sy, sx}, .dilation = {dy, dx},
                       .groups = groups, .c = c, .o = o};
}

/* 2-D: AlexNet's 11x11 pad 5 stride 4, pads 4 and 1 with 16 channels (the crash), asymmetric
 * pads, strides, dilations, groups and depthwise. */
LOOM_TEST(e2e_window, conv2d_large_kernels_with_padding) {
  const window_form forms[] = {
      form2(4, 4, 4, 4, 1, 1, 1, 1, 1, 16, 16), form2(5, 5, 5, 5, 4, 4, 1, 1, 1, 3, 8),
      form2(1, 1, 1, 1, 1, 1, 1, 1, 1, 16, 16), form2(0, 2, 3, 1, 2, 1, 1, 2, 2, 4, 6),
      form2(2, 2, 2, 2, 1, 1, 1, 1, 8, 8, 8),   form2(6, 0, 0, 6, 1, 3, 2, 1, 1, 2, 3),
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) check_form(&forms[i]);
}

static window_form form3(int64_t pad, int64_t stride, int64_t dilation, int64_t groups, int64_t c, int64_t o) {
  return (window_form){.n = 3, .pad_lo = {pad, pad, pad}, .pad_hi = {pad, 0, pad}, .stride = {stride, 1, stride},
                       .dilation = {1, dilation, 1}, .groups = groups, .c = c, .o = o};
}

/* 3-D (video models): padding up to 7 with kernels 8 and 9, strides, dilation, groups. */
LOOM_TEST(e2e_window, conv3d_large_kernels_with_padding) {
  const window_form forms[] = {form3(0, 1, 1, 1, 2, 3), form3(4, 1, 1, 1, 3, 4), form3(7, 2, 2, 2, 4, 2)};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) check_form(&forms[i]);
}


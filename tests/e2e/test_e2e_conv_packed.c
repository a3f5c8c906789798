/* test_e2e_conv_packed.c — convolution with a constant weight, which the pack pass lays out in blocks
 * of 8 output channels and legalization computes over the input's phase planes on the output grid
 * (graph/pass_pack.c, graph/legalize_window.c, tensorprog/gen_conv_packed.c, the CPU rule of
 * tensorprog/schedule_conv.c; docs/tensorprog.md "Convolution over packed weights"), against the
 * reference interpreter running the module as written. Each form is compiled once with batch and
 * spatial extents symbolic and run at batch 0 to 3, at the smallest spatial extent with an output,
 * at primes, and at grids of fewer than 16 columns (column tiles), 16-31 (8 x 16 tiles), 32-191
 * (8 x 32) and 192 and more (8 x 48; the last tile overlapping), with 1 and 2 threads. Output
 * channels 8, 16, 24 and 40, odd input channels, strides 1 to 3 with and without dilation (one, two
 * and three phases per axis), asymmetric padding, 1-D, 2-D and 3-D are covered. Every form is checked
 * to have taken the path (a program named conv_packed), grouped ones whose groups hold whole blocks
 * too, and groups of fewer than 8 output channels and output channels not a multiple of 8 to have
 * kept theirs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "e2e/e2e_util.h"

enum { MAX_N = 3 };

typedef struct packed_form {
  int n; /* spatial axes */
  int64_t kernel[MAX_N], pad_lo[MAX_N], pad_hi[MAX_N], stride[MAX_N], dilation[MAX_N];
  int64_t groups, c, o;
  bool bias;
} packed_form;

static const char *const spatial_in[MAX_N] = {"h", "v", "u"};

static void list(loom_strbuf *sb, const int64_t *a, int n, const int64_t *b) {
  for (int i = 0; i < n; i++) loom_strbuf_printf(sb, "%s%lld", i ? ", " : "", (long long)a[i]);
  for (int i = 0; b && i < n; i++) loom_strbuf_printf(sb, ", %lld", (long long)b[i]);
}

/* The module: the weight (and bias) constants of deterministic values, the convolution of x. */
static void form_text(const packed_form *w, loom_strbuf *sb) {
  const char *op = w->n == 1 ? "conv1d" : w->n == 2 ? "conv2d" : "conv";
  int64_t per_o = w->c / w->groups;
  loom_strbuf_printf(sb, "const @w: Tensor[(%lld, %lld", (long long)w->o, (long long)per_o);
  for (int i = 0; i < w->n; i++) {
    loom_strbuf_printf(sb, ", %lld", (long long)w->kernel[i]);
    per_o *= w->kernel[i];
  }
  loom_strbuf_printf(sb, "), f32] = [");
  for (int64_t i = 0; i < w->o * per_o; i++) loom_strbuf_printf(sb, "%s%.4f", i ? ", " : "", (double)((i * 7919) % 201 - 100) / 128.0);
  loom_strbuf_printf(sb, "]\n");
  if (w->bias) {
    loom_strbuf_printf(sb, "const @bias: Tensor[(%lld,), f32] = [", (long long)w->o);
    for (int64_t i = 0; i < w->o; i++) loom_strbuf_printf(sb, "%s%.3f", i ? ", " : "", (double)(i % 9) / 4.0 - 1.0);
    loom_strbuf_printf(sb, "]\n");
  }
  loom_strbuf_printf(sb, "fn @main(x: Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++) loom_strbuf_printf(sb, ", %s", spatial_in[i]);
  loom_strbuf_printf(sb, "), f32]) -> Tensor[(b, %lld", (long long)w->o);
  for (int i = 0; i < w->n; i++)
    loom_strbuf_printf(sb, ", floordiv(%s + %lld, %lld) + 1", spatial_in[i],
                       (long long)(w->pad_lo[i] + w->pad_hi[i] - w->dilation[i] * (w->kernel[i] - 1) - 1), (long long)w->stride[i]);
  loom_strbuf_printf(sb, "), f32] {\n  dataflow {\n    y = %s(x, @w%s, padding=[", op, w->bias ? ", @bias" : "");
  list(sb, w->pad_lo, w->n, w->pad_hi);
  loom_strbuf_printf(sb, "], strides=[");
  list(sb, w->stride, w->n, NULL);
  loom_strbuf_printf(sb, "], dilation=[");
  list(sb, w->dilation, w->n, NULL);
  loom_strbuf_printf(sb, "], groups=%lld)\n    output y\n  }\n  return y\n}\n", (long long)w->groups);
}

/* True when the compiled module holds a program whose name starts with `prefix`. */
static bool has_program(const e2e_model *md, const char *prefix) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    if (!strncmp(loom_tp_func_name(loom_graph_module_tp_at(m, i)), prefix, strlen(prefix))) return true;
  return false;
}

static e2e_model compile_form(const packed_form *w, char *path, loom_strbuf *text) {
  form_text(w, text);
  return e2e_compile_text(loom_strbuf_cstr(text), path);
}

/* Compiles the form once, checks it took the packed path, and runs it at batch 0 to 3 over spatial
 * extents from the smallest valid one up to grids of every tile width; returns the number of runs. */
static int check_form(const packed_form *w) {
  char path[] = "/tmp/loom-convpacked-XXXXXX";
  loom_strbuf text;
  loom_strbuf_init(&text, NULL);
  e2e_model md = compile_form(w, path, &text);
  cr_assert(has_program(&md, "conv_packed"), "%s did not take the packed path:\n%.2000s", path, loom_strbuf_cstr(&text));
  /* extra extent over the smallest valid one, per axis (1-D: the first column) */
  static const int64_t extra[][MAX_N] = {{0, 0, 0}, {2, 3, 1}, {4, 9, 0}, {12, 16, 1}, {40, 1, 2}, {200, 30, 3}, {7, 53, 0}};
  static const int64_t batches[] = {2, 1, 3, 1, 0, 1, 1};
  int runs = 0;
  for (size_t e = 0; e < sizeof extra / sizeof extra[0]; e++) {
    if (w->n == 3 && e >= 5) break; /* the 3-D grids are large enough before */
    e2e_bind b[1 + MAX_N] = {{"b", batches[e]}};
    for (int i = 0; i < w->n; i++) {
      int64_t span = w->dilation[i] * (w->kernel[i] - 1) + 1 - w->pad_lo[i] - w->pad_hi[i];
      b[1 + i] = (e2e_bind){spatial_in[i], (span > 1 ? span : 1) + extra[e][w->n == 1 ? 0 : i]};
    }
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      double err = e2e_check(&md, "main", b, 1 + (size_t)w->n, false, NULL);
      cr_assert_lt(err, 1e-4, "%s: sizes %zu, %u threads: relative error %g\n%.2000s", path, e, threads, err, loom_strbuf_cstr(&text));
      runs++;
    }
  }
  e2e_model_free(&md);
  unlink(path);
  loom_strbuf_free(&text);
  return runs;
}

static packed_form f1(int64_t k, int64_t lo, int64_t hi, int64_t s, int64_t d, int64_t c, int64_t o, bool bias) {
  return (packed_form){.n = 1, .kernel = {k}, .pad_lo = {lo}, .pad_hi = {hi}, .stride = {s}, .dilation = {d}, .groups = 1,
                       .c = c, .o = o, .bias = bias};
}

static packed_form f2(int64_t kh, int64_t kw, int64_t t, int64_t l, int64_t bo, int64_t r, int64_t sy, int64_t sx, int64_t dy,
                      int64_t dx, int64_t c, int64_t o, bool bias) {
  return (packed_form){.n = 2, .kernel = {kh, kw}, .pad_lo = {t, l}, .pad_hi = {bo, r}, .stride = {sy, sx}, .dilation = {dy, dx},
                       .groups = 1, .c = c, .o = o, .bias = bias};
}

/* 1-D: the output grid is the output (no crop): same padding, a stride of 2 (two phases), dilation. */
LOOM_TEST(e2e_conv_packed, conv1d_forms) {
  const packed_form forms[] = {f1(5, 2, 2, 1, 1, 7, 24, true), f1(3, 0, 4, 2, 1, 5, 8, false), f1(3, 1, 2, 1, 3, 3, 16, true),
                               f1(4, 3, 0, 3, 2, 2, 8, false)};
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("conv1d over packed weights: %d runs", runs);
}

/* 2-D stride 1 (one phase plane: the padded input flat, rows sharing their padding): 3 x 3 same
 * padding, asymmetric pads and kernel, dilation, a 1 x 5 kernel, a 1 x 1 kernel with padding (no
 * sharing: the taps do not reach the next row), a 1 x 1 kernel without (x itself, the grid the
 * output), no padding, more padding than the taps reach (shared up to (k - 1)*d). */
LOOM_TEST(e2e_conv_packed, conv2d_stride_one) {
  const packed_form forms[] = {
      f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5, 16, true), f2(3, 2, 0, 2, 1, 0, 1, 1, 1, 1, 3, 8, false),
      f2(3, 3, 2, 2, 2, 2, 1, 1, 2, 2, 4, 24, false), f2(1, 5, 0, 2, 0, 2, 1, 1, 1, 1, 2, 8, true),
      f2(1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 6, 8, true),  f2(1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 9, 16, true),
      f2(2, 3, 0, 0, 0, 0, 1, 1, 1, 1, 3, 40, false), f2(3, 2, 2, 3, 2, 3, 1, 1, 1, 1, 2, 8, true),
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("conv2d stride 1 over packed weights: %d runs", runs);
}

/* 2-D strided (phase planes): the 7 x 7 stem, 3 x 3 and 1 x 1 downsampling (one phase), unequal
 * strides with dilation (stride 3 dilation 2: three phases; stride 2 dilation 2: one), asymmetric. */
LOOM_TEST(e2e_conv_packed, conv2d_strided) {
  const packed_form forms[] = {
      f2(7, 7, 3, 3, 3, 3, 2, 2, 1, 1, 3, 16, true), f2(3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 4, 8, false),
      f2(1, 1, 0, 0, 0, 0, 2, 2, 1, 1, 6, 16, true), f2(3, 2, 0, 1, 2, 0, 3, 1, 2, 2, 4, 8, false),
      f2(3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 5, 8, true),  f2(5, 3, 2, 0, 1, 2, 3, 2, 1, 1, 3, 24, false),
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("conv2d strided over packed weights: %d runs", runs);
}

/* 3-D: stride 1 with padding and dilation (two crops, the extra row), and strided. */
LOOM_TEST(e2e_conv_packed, conv3d_forms) {
  const packed_form forms[] = {
      {.n = 3, .kernel = {3, 2, 3}, .pad_lo = {1, 0, 1}, .pad_hi = {1, 1, 0}, .stride = {1, 1, 1}, .dilation = {1, 1, 2},
       .groups = 1, .c = 3, .o = 8, .bias = true},
      {.n = 3, .kernel = {2, 3, 1}, .pad_lo = {0, 1, 0}, .pad_hi = {1, 1, 0}, .stride = {2, 1, 2}, .dilation = {1, 1, 1},
       .groups = 1, .c = 2, .o = 16, .bias = false},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("conv3d over packed weights: %d runs", runs);
}

/* Grouped (each block of 8 output channels inside one group, reading its group's input channels):
 * groups of 8 output channels (one block, so that AVX2's channel tiles of two blocks span two
 * groups), of 16 and 24 (two and three blocks), input channels per group 1, 2, 5 and 16 (a reduction
 * of 144: the channel tiles), stride 1 and 2, a 1 x 1 without padding (x itself), 1-D and 3-D. */
LOOM_TEST(e2e_conv_packed, grouped_forms) {
  packed_form forms[] = {
      f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 16, true),  f2(3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 6, 48, false),
      f2(1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 8, 32, true),  f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 32, 32, true),
      f2(3, 3, 1, 1, 1, 1, 2, 2, 1, 1, 48, 24, false), f1(3, 1, 1, 1, 1, 10, 48, true),
      {.n = 3, .kernel = {3, 2, 3}, .pad_lo = {1, 0, 1}, .pad_hi = {1, 1, 0}, .stride = {1, 2, 1}, .dilation = {1, 1, 1},
       .groups = 2, .c = 4, .o = 16, .bias = true},
  };
  static const int64_t groups[] = {2, 3, 4, 2, 3, 2, 2};
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    forms[i].groups = groups[i];
    runs += check_form(&forms[i]);
  }
  cr_log_info("grouped convolutions over packed weights: %d runs", runs);
}

/* What pack leaves alone keeps its path: groups of fewer than 8 output channels, output channels not
 * a multiple of 8 (the flat GEMM); a dilation whose padding widens each row of the grid by 8 columns or more
 * (loom_graph_conv_grid_wasteful: DeepLab's ASPP at dilation 12, 24, 36) goes tap by tap over each
 * tap's positions that read data (conv_tap_cols and a GEMM per tap), the kernel's taps reading past
 * the input too (h and v below the dilation). */
LOOM_TEST(e2e_conv_packed, forms_left_unpacked) {
  const packed_form forms[] = {
      {.n = 2, .kernel = {3, 3}, .pad_lo = {1, 1}, .pad_hi = {1, 1}, .stride = {1, 1}, .dilation = {1, 1}, .groups = 4, .c = 4,
       .o = 16, .bias = false},
      f2(3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 4, 12, true),
      f2(3, 3, 12, 12, 12, 12, 1, 1, 12, 12, 3, 16, true),
      f2(3, 3, 4, 5, 4, 3, 1, 1, 2, 4, 5, 8, false),
  };
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    char path[] = "/tmp/loom-convpacked-XXXXXX";
    loom_strbuf text;
    loom_strbuf_init(&text, NULL);
    e2e_model md = compile_form(&forms[i], path, &text);
    cr_assert(!has_program(&md, "conv_packed") && has_program(&md, "conv_gemm"), "form %zu:\n%.2000s", i, loom_strbuf_cstr(&text));
    cr_assert_eq(has_program(&md, "conv_tap_cols"), i >= 2, "form %zu: the taps' patches %s", i, i >= 2 ? "missing" : "unexpected");
    e2e_bind b[3] = {{"b", 2}, {"h", 9}, {"v", 7}};
    double err = e2e_check(&md, "main", b, 3, false, NULL);
    cr_assert_lt(err, 1e-4, "form %zu: relative error %g", i, err);
    e2e_model_free(&md);
    unlink(path);
    loom_strbuf_free(&text);
  }
}

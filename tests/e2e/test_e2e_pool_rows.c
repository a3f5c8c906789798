/* test_e2e_pool_rows.c — max and average pooling as legalization lowers them for speed (graph/
 * legalize_window.c: conv_pad with -inf / 0, then pool_rows: chunks of 8 lanes with the last one moved
 * back to the row's end, rows shorter than a chunk position by position, averages divided by K except
 * in chunks whose windows reach the padding; docs/tensorprog.md), against the reference interpreter.
 * Each form is compiled once with batch and spatial extents symbolic and run at batch 0, 1 and 2 with
 * output rows shorter than a chunk, exactly a chunk, a prime past it and a long odd one, with 1 and 2
 * threads, in 1-D, 2-D and 3-D. Every form is checked to have taken that path (a program named
 * *pool_rows*), and global average pooling to be the mean over planes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"
#include "base/strbuf.h"
#include "tensorprog/tp.h"

enum { MAX_N = 3 };

typedef struct pool_form {
  const char *op; /* max_pool, avg_pool */
  int n;
  int64_t kernel[MAX_N], pad_lo[MAX_N], pad_hi[MAX_N], stride[MAX_N], dilation[MAX_N];
  bool count_pad;
  int64_t c;
} pool_form;

static const char *const spatial_in[MAX_N] = {"h", "v", "u"};

static void list(char *buf, size_t cap, const int64_t *a, int n, const int64_t *b) {
  size_t len = strlen(buf);
  for (int i = 0; i < n; i++) len += (size_t)snprintf(buf + len, cap - len, "%s%lld", i ? ", " : "", (long long)a[i]);
  for (int i = 0; b && i < n; i++) len += (size_t)snprintf(buf + len, cap - len, ", %lld", (long long)b[i]);
}

static bool has_program(const e2e_model *md, const char *part) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    if (strstr(loom_tp_func_name(loom_graph_module_tp_at(m, i)), part)) return true;
  return false;
}

/* Runs the module at batch 0-2 and the given input extents (per run, per axis), 1 and 2 threads. */
static int run_sizes(e2e_model *md, const char *path, const char *text, int n, const int64_t (*sizes)[MAX_N], size_t nsizes) {
  static const int64_t batches[] = {2, 1, 0, 1, 2, 1};
  int runs = 0;
  for (size_t e = 0; e < nsizes; e++) {
    e2e_bind b[1 + MAX_N] = {{"b", batches[e % 6]}};
    for (int i = 0; i < n; i++) b[1 + i] = (e2e_bind){spatial_in[i], sizes[e][i]};
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md->rt, threads));
      double err = e2e_check(md, "main", b, 1 + (size_t)n, false, NULL);
      cr_assert_lt(err, 1e-5, "%s: sizes %zu, %u threads: relative error %g\n%s", path, e, threads, err, text);
      runs++;
    }
  }
  return runs;
}

static int check_form(const pool_form *w) {
  char text[2048], path[] = "/tmp/loom-poolrows-XXXXXX";
  size_t len = (size_t)snprintf(text, sizeof text, "fn @main(x: Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++) len += (size_t)snprintf(text + len, sizeof text - len, ", %s", spatial_in[i]);
  len += (size_t)snprintf(text + len, sizeof text - len, "), f32]) -> Tensor[(b, %lld", (long long)w->c);
  for (int i = 0; i < w->n; i++)
    len += (size_t)snprintf(text + len, sizeof text - len, ", floordiv(%s + %lld, %lld) + 1", spatial_in[i],
                            (long long)(w->pad_lo[i] + w->pad_hi[i] - w->dilation[i] * (w->kernel[i] - 1) - 1),
                            (long long)w->stride[i]);
  len += (size_t)snprintf(text + len, sizeof text - len, "), f32] {\n  dataflow {\n    y = %s(x, kernel=[", w->op);
  list(text, sizeof text, w->kernel, w->n, NULL);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], strides=[");
  list(text, sizeof text, w->stride, w->n, NULL);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], padding=[");
  list(text, sizeof text, w->pad_lo, w->n, w->pad_hi);
  len = strlen(text);
  len += (size_t)snprintf(text + len, sizeof text - len, "], dilation=[");
  list(text, sizeof text, w->dilation, w->n, NULL);
  len = strlen(text);
  snprintf(text + len, sizeof text - len, "]%s)\n    output y\n  }\n  return y\n}\n", w->count_pad ? ", count_include_pad=true" : "");
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(has_program(&md, "pool_rows"), "%s did not take the row path:\n%s", path, text);
  /* output rows (last axis) shorter than a chunk, one chunk, a prime past it, long and odd */
  int64_t sizes[4][MAX_N];
  static const int64_t outs[4] = {5, 8, 11, 37};
  for (int e = 0; e < 4; e++)
    for (int i = 0; i < w->n; i++) {
      int64_t o = i + 1 == w->n ? outs[e] : outs[(e + 1) % 4] % 9 + 1;
      int64_t in = (o - 1) * w->stride[i] + w->dilation[i] * (w->kernel[i] - 1) + 1 - w->pad_lo[i] - w->pad_hi[i];
      sizes[e][i] = in > 1 ? in : 1;
    }
  int runs = run_sizes(&md, path, text, w->n, (const int64_t (*)[MAX_N])sizes, 4);
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

static pool_form p2(const char *op, int64_t kh, int64_t kw, int64_t t, int64_t l, int64_t bo, int64_t r, int64_t sy, int64_t sx,
                    int64_t dy, int64_t dx, bool count_pad) {
  return (pool_form){.op = op, .n = 2, .kernel = {kh, kw}, .pad_lo = {t, l}, .pad_hi = {bo, r}, .stride = {sy, sx},
                     .dilation = {dy, dx}, .count_pad = count_pad, .c = 3};
}

LOOM_TEST(e2e_pool_rows, max_pool_forms) {
  const pool_form forms[] = {
      p2("max_pool", 3, 3, 1, 1, 1, 1, 2, 2, 1, 1, false), p2("max_pool", 2, 2, 0, 0, 0, 0, 2, 2, 1, 1, false),
      p2("max_pool", 3, 5, 0, 2, 1, 1, 1, 3, 2, 1, false), p2("max_pool", 1, 3, 0, 0, 0, 2, 1, 1, 1, 2, false),
      {.op = "max_pool", .n = 1, .kernel = {4}, .pad_lo = {2}, .pad_hi = {1}, .stride = {3}, .dilation = {1}, .c = 2},
      {.op = "max_pool", .n = 3, .kernel = {2, 3, 3}, .pad_lo = {0, 1, 1}, .pad_hi = {1, 1, 0}, .stride = {1, 2, 1},
       .dilation = {1, 1, 2}, .c = 2},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("max pooling by rows: %d runs", runs);
}

LOOM_TEST(e2e_pool_rows, average_pool_forms) {
  const pool_form forms[] = {
      p2("avg_pool", 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, false), p2("avg_pool", 3, 3, 1, 1, 1, 1, 2, 2, 1, 1, true),
      p2("avg_pool", 2, 2, 0, 0, 0, 0, 2, 2, 1, 1, false), p2("avg_pool", 5, 3, 2, 0, 2, 2, 1, 2, 1, 1, false),
      p2("avg_pool", 3, 2, 0, 1, 2, 0, 3, 1, 2, 1, true),
      {.op = "avg_pool", .n = 1, .kernel = {5}, .pad_lo = {2}, .pad_hi = {2}, .stride = {1}, .dilation = {1}, .c = 2},
      {.op = "avg_pool", .n = 3, .kernel = {2, 3, 3}, .pad_lo = {1, 1, 1}, .pad_hi = {0, 1, 1}, .stride = {1, 1, 2},
       .dilation = {1, 1, 1}, .c = 2},
  };
  int runs = 0;
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) runs += check_form(&forms[i]);
  cr_log_info("average pooling by rows: %d runs", runs);
}

LOOM_TEST(e2e_pool_rows, global_average_pool_over_planes) {
  const char *text = "fn @main(x: Tensor[(b, c, h, w), f32]) -> Tensor[(b, c, 1, 1), f32] {\n  dataflow {\n"
                     "    y = global_avg_pool2d(x)\n    output y\n  }\n  return y\n}\n";
  char path[] = "/tmp/loom-gap-XXXXXX";
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(has_program(&md, "mean_planes"), "global_avg_pool2d is not a mean over planes");
  static const e2e_bind shapes[][4] = {{{"b", 1}, {"c", 13}, {"h", 7}, {"w", 7}}, {{"b", 0}, {"c", 3}, {"h", 5}, {"w", 2}},
                                       {{"b", 2}, {"c", 1}, {"h", 1}, {"w", 1}}, {{"b", 3}, {"c", 5}, {"h", 17}, {"w", 33}}};
  for (size_t e = 0; e < 4; e++)
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      double err = e2e_check(&md, "main", shapes[e], 4, false, NULL);
      cr_assert_lt(err, 1e-5, "shape %zu, %u threads: relative error %g", e, threads, err);
    }
  e2e_model_free(&md);
  unlink(path);
}

/* Activations moved into the stores of the rows programs (pass_fuse's epilogues, the store form of
 * loom_tp_fuse_epilogue): a depthwise convolution + batch_norm + clip (MobileNetV2), a strided one +
 * batch_norm + x * sigmoid(x) (EfficientNet's SiLU), a 5 x 5 one with a bias + hardswish-like clip,
 * max pooling + relu and average pooling + a per-channel scale, against the interpreter running
 * them as written; one compilation, batch 0-2, output rows shorter than a chunk (5, 7: the Local
 * row), exactly one (8), a prime past it (11) and long and odd (37), 1 and 2 threads. Every
 * depthwise and pooling program is checked to have taken its reader (none is left on its own). */
LOOM_TEST(e2e_pool_rows, activations_in_the_stores_of_depthwise_and_pooling_rows) {
  const char *text =
      "fn @main(x: Tensor[(b, 6, h, v), f32], k: Tensor[(6, 1, 3, 3), f32], k5: Tensor[(6, 1, 5, 5), f32], kb: Tensor[(6,), f32],\n"
      "         g: Tensor[(6,), f32], be: Tensor[(6,), f32], m: Tensor[(6,), f32], va: Tensor[(6,), f32], s: Tensor[(6, 1, 1), f32]) -> Object {\n"
      "  dataflow {\n"
      "    vp = abs(va)\n"
      "    y1 = conv2d(x, k, groups=6, padding=[1])\n"
      "    bn1 = batch_norm(y1, g, be, m, vp)\n"
      "    c1 = clip(bn1, min=0.0, max=6.0)\n"
      "    y2 = conv2d(x, k, groups=6, strides=[2, 2], padding=[1])\n"
      "    bn2 = batch_norm(y2, g, be, m, vp)\n"
      "    s2 = sigmoid(bn2)\n"
      "    o2 = mul(bn2, s2)\n"
      "    y3 = conv2d(x, k5, kb, groups=6, padding=[2])\n"
      "    a3 = add(y3, const(3.0, f32))\n"
      "    c3 = clip(a3, min=0.0, max=6.0)\n"
      "    o3 = mul(y3, c3)\n"
      "    p4 = max_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])\n"
      "    r4 = relu(p4)\n"
      "    p5 = avg_pool(x, kernel=[3, 3], padding=[1, 1, 1, 1])\n"
      "    o5 = mul(p5, s)\n"
      "    out = (c1, o2, o3, r4, o5)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  char path[] = "/tmp/loom-rowsepi-XXXXXX";
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(!has_program(&md, "depthwise_rows") && !has_program(&md, "pool_rows"), "a rows program kept its reader apart");
  static const int64_t sizes[][MAX_N] = {{5, 5}, {9, 7}, {8, 8}, {11, 11}, {6, 37}, {13, 16}};
  int runs = run_sizes(&md, path, text, 2, sizes, sizeof sizes / sizeof *sizes);
  cr_log_info("activations in the stores of rows programs: %d runs", runs);
  e2e_model_free(&md);
  unlink(path);
}

/* Whether some program of md whose name holds `part` has `text` in its printed form. */
static bool program_has(const e2e_model *md, const char *part, const char *text) {
  loom_graph_module *m = loom_compiled_module(md->c);
  bool found = false;
  for (size_t i = 0; i < loom_graph_module_num_tps(m) && !found; i++) {
    const loom_tp_func *f = loom_graph_module_tp_at(m, i);
    if (!strstr(loom_tp_func_name(f), part)) continue;
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_tp_print_func(f, &sb);
    found = strstr(loom_strbuf_cstr(&sb), text) != NULL;
    loom_strbuf_free(&sb);
  }
  return found;
}

/* A program whose name holds `prog` has (want) or has not `text` in its printed form. */
typedef struct prog_check {
  const char *prog, *text;
  bool want;
} prog_check;

/* Compiles the 2-D module `text`, checks its programs, then runs it against the interpreter at the
 * input extents `sizes` (batch 0-2, 1 and 2 threads). */
static void run_checked(const char *text, const prog_check *checks, size_t nchecks, const int64_t (*sizes)[MAX_N], size_t nsizes,
                        const char *what) {
  char path[] = "/tmp/loom-rows-XXXXXX";
  e2e_model md = e2e_compile_text(text, path);
  for (size_t i = 0; i < nchecks; i++)
    cr_assert(program_has(&md, checks[i].prog, checks[i].text) == checks[i].want, "%s: a %s program %s `%s`", what,
              checks[i].prog, checks[i].want ? "lacks" : "has", checks[i].text);
  int runs = run_sizes(&md, path, text, 2, sizes, nsizes);
  cr_log_info("%s: %d runs", what, runs);
  e2e_model_free(&md);
  unlink(path);
}

/* Rows shorter than a chunk on the padded plane's grid (gen_conv.c pool_grid: 2-D, equal strides):
 * depthwise 3 x 3 at strides 1, 2 and 3, 5 x 5 dilated 2, 11 x 11 with a bias, max pooling at stride
 * 2 and average pooling counting the padding, against the interpreter; one compilation, batch 0-2,
 * planes whose grid has fewer than 8 positions (one output row of 1-3: the Local row), 8 to 1024
 * (7 x 7, 9 x 5, 3 x 7 at stride 3, 13 x 2) and more than 1024 (1100 rows of 6: the Local row
 * again), rows of 8 and more (the chunks), 1 and 2 threads. The programs are checked to hold the
 * grid form (its Local `accg`) and average pooling without the padding counted not to. */
LOOM_TEST(e2e_pool_rows, short_rows_on_the_planes_grid) {
  const char *text =
      "fn @main(x: Tensor[(b, 4, h, v), f32], k: Tensor[(4, 1, 3, 3), f32], k5: Tensor[(4, 1, 5, 5), f32],\n"
      "         k11: Tensor[(4, 1, 11, 11), f32], kb: Tensor[(4,), f32]) -> Object {\n"
      "  dataflow {\n"
      "    y1 = conv2d(x, k, groups=4, padding=[1])\n"
      "    y2 = conv2d(x, k, groups=4, strides=[2, 2], padding=[1])\n"
      "    y3 = conv2d(x, k, groups=4, strides=[3, 3], padding=[2, 1, 0, 2])\n"
      "    y4 = conv2d(x, k5, groups=4, dilation=[2, 2], padding=[4])\n"
      "    y5 = conv2d(x, k11, kb, groups=4, padding=[5])\n"
      "    p6 = max_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])\n"
      "    p7 = avg_pool(x, kernel=[3, 3], padding=[1, 1, 1, 1], count_include_pad=true)\n"
      "    p8 = avg_pool(x, kernel=[3, 3], padding=[1, 1, 1, 1])\n"
      "    out = (y1, y2, y3, y4, y5, p6, p7, p8)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  static const prog_check checks[] = {
      {"depthwise_rows", "accg", true}, {"max_pool_rows", "accg", true}, {"avgpad_pool_rows", "accg", true},
      {"avg_pool_rows", "accg", false}, /* the divisor varies per position */
      /* max and average counting the padding pad each plane in their own Local (the _fused forms:
       * the padded plane flat, read at the stride), the depthwise ones split it into phase planes */
      {"max_pool_rows", "xs: Local[(1, 1, 1, ", true}, {"avgpad_pool_rows", "xs: Local[(1, 1, 1, ", true},
      {"depthwise_rows_f32_n2_k3x3_s2x2", "xs: Local[(1, 1, 4, ", true},
  };
  static const int64_t sizes[][MAX_N] = {{7, 7}, {1, 3}, {9, 5}, {2, 1}, {13, 2}, {1100, 6}, {14, 13}, {5, 20}, {3, 7}, {8, 8}};
  run_checked(text, checks, sizeof checks / sizeof *checks, sizes, sizeof sizes / sizeof *sizes, "short rows on the plane's grid");
}

/* Strided depthwise convolutions over the phase planes of their input, made one plane at a time in
 * the kernel's Local (depthwise_rows_.._fused: graph/legalize_window.c, gen_conv.c
 * loom_tp_gen_depthwise_fused; no conv_phases or conv_pad call): 3 x 3 and 5 x 5 (a bias) at stride 2,
 * 3 x 3 at stride 3 with uneven padding, 2 x 2 at stride 2 (the kernel the stride), and a 5 x 5 whose
 * input is a SiLU (computed in the plane's copy) and whose output takes one, against the interpreter;
 * one compilation, batch 0-2, 1 and 2 threads, planes of 1 x 1 to 57 x 31 (odd, prime, rows under 4,
 * 8 and 32: the copy's chunks, the grid and the rows forms; 8 channels: one run of planes per batch
 * element, 16 and 24 at batch 2 and 3 more). */
LOOM_TEST(e2e_pool_rows, strided_depthwise_on_phase_planes) {
  const char *text =
      "fn @main(x: Tensor[(b, 8, h, v), f32], k: Tensor[(8, 1, 3, 3), f32], k5: Tensor[(8, 1, 5, 5), f32],\n"
      "         k2: Tensor[(8, 1, 2, 2), f32], kb: Tensor[(8,), f32]) -> Object {\n"
      "  dataflow {\n"
      "    y1 = conv2d(x, k, groups=8, strides=[2, 2], padding=[1])\n"
      "    y2 = conv2d(x, k5, kb, groups=8, strides=[2, 2], padding=[2])\n"
      "    y3 = conv2d(x, k, groups=8, strides=[3, 3], padding=[0, 1, 2, 1])\n"
      "    y4 = conv2d(x, k2, groups=8, strides=[2, 2], padding=[1])\n"
      "    s = sigmoid(x)\n"
      "    a = mul(x, s)\n"
      "    y5 = conv2d(a, k5, kb, groups=8, strides=[2, 2], padding=[2])\n"
      "    t = sigmoid(y5)\n"
      "    y6 = mul(y5, t)\n"
      "    out = (y1, y2, y3, y4, y6)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  static const prog_check checks[] = {
      {"depthwise_rows", "xs: Local[(1, 1, 4, ", true}, {"depthwise_rows", "accg: Local[(1024,), f32, uninit]", true},
      {"fused_fused_mul", "sigmoid(x[", true}, /* the SiLU before the convolution: in the plane's copy (the one after: an epilogue) */
      {"conv_pad", "", false}, {"conv_phases", "", false}, /* no padded copy of a whole tensor */
  };
  static const int64_t sizes[][MAX_N] = {{1, 1}, {2, 3}, {7, 7}, {13, 10}, {28, 28}, {57, 31}, {5, 66}, {3, 2}, {31, 17}};
  run_checked(text, checks, sizeof checks / sizeof *checks, sizes, sizeof sizes / sizeof *sizes, "strided depthwise on phase planes");
}

/* The padding copy of a depthwise convolution (its plane's copy into the Local of depthwise_fused:
 * rows in chunks, the last moved back to the row's end, or whole when shorter) computing
 * EfficientNet's SiLU before it: batch_norm, sigmoid and the multiply all in
 * `fused_depthwise_rows_*` (the fuse pass counts the copy's reads at once per element), 3 x 3 at
 * strides 1 and 2 and 5 x 5; a squeeze-excite scale sigmoid(s) broadcast
 * over the plane stays a call of its own. Against the interpreter running them as written; one
 * compilation, batch 0-2, rows shorter than a chunk, one chunk, a prime past it, long and odd, 1
 * and 2 threads. */
LOOM_TEST(e2e_pool_rows, silu_in_the_padding_of_a_depthwise_convolution) {
  const char *text =
      "fn @main(x: Tensor[(b, 6, h, v), f32], k: Tensor[(6, 1, 3, 3), f32], k5: Tensor[(6, 1, 5, 5), f32], g: Tensor[(6,), f32],\n"
      "         be: Tensor[(6,), f32], m: Tensor[(6,), f32], va: Tensor[(6,), f32], s: Tensor[(b, 6, 1, 1), f32]) -> Object {\n"
      "  dataflow {\n"
      "    vp = abs(va)\n"
      "    bn = batch_norm(x, g, be, m, vp)\n"
      "    sg = sigmoid(bn)\n"
      "    a = mul(bn, sg)\n"
      "    y1 = conv2d(a, k, groups=6, padding=[1])\n"
      "    y2 = conv2d(a, k, groups=6, strides=[2, 2], padding=[1])\n"
      "    e = sigmoid(x)\n"
      "    a5 = mul(x, e)\n"
      "    y3 = conv2d(a5, k5, groups=6, padding=[2])\n"
      "    se = sigmoid(s)\n"
      "    sx = mul(x, se)\n"
      "    y4 = conv2d(sx, k, groups=6, padding=[1])\n"
      "    out = (y1, y2, y3, y4)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  char path[] = "/tmp/loom-silupad-XXXXXX";
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(program_has(&md, "fused_depthwise_rows", "sigmoid("), "no depthwise convolution's plane copy computes the sigmoid");
  /* the only sigmoid program left is the squeeze-excite scale's (b, 6, 1, 1) */
  cr_assert(program_has(&md, "sigmoid_f32", "sigmoid("), "the squeeze-excite sigmoid was recomputed per element");
  loom_graph_module *gm = loom_compiled_module(md.c);
  int alone = 0;
  for (size_t i = 0; i < loom_graph_module_num_tps(gm); i++) alone += strncmp(loom_tp_func_name(loom_graph_module_tp_at(gm, i)), "sigmoid_", 8) == 0;
  cr_assert_eq(alone, 1, "%d sigmoid programs of their own, want 1 (the squeeze-excite scale)", alone);
  static const int64_t sizes[][MAX_N] = {{5, 5}, {9, 7}, {8, 8}, {11, 11}, {6, 37}, {13, 16}, {1, 1}};
  int runs = run_sizes(&md, path, text, 2, sizes, sizeof sizes / sizeof *sizes);
  cr_log_info("SiLU in the padding of depthwise convolutions: %d runs", runs);
  e2e_model_free(&md);
  unlink(path);
}

/* The widest chunk a row holds (gen_conv.c pool_tier: 32, 16 or 8 lanes, whose vectors of 8 sum
 * independently) and the grid form's chunks of 32 on grids of 32 positions or more: depthwise 3 x 3,
 * 5 x 5 at stride 2 with a bias and SiLU after it, 7 x 7, max pooling at stride 2 and average pooling
 * without the padding counted (its per-chunk interior test spans the wider chunk), 5 channels,
 * against the interpreter; one compilation, batch 0-2, output rows of 1, 7, 8, 15, 16, 17, 31, 32,
 * 33 and 47, grids under and over 32 positions, 1 and 2 threads. The programs are checked to hold
 * the 32- and 16-lane chunks and the grid's 32-lane accumulators (none of them before). */
LOOM_TEST(e2e_pool_rows, wide_chunks_of_depthwise_and_pooling_rows) {
  const char *text =
      "fn @main(x: Tensor[(b, 5, h, v), f32], k: Tensor[(5, 1, 3, 3), f32], k5: Tensor[(5, 1, 5, 5), f32],\n"
      "         k7: Tensor[(5, 1, 7, 7), f32], kb: Tensor[(5,), f32]) -> Object {\n"
      "  dataflow {\n"
      "    y1 = conv2d(x, k, groups=5, padding=[1])\n"
      "    c2 = conv2d(x, k5, kb, groups=5, strides=[2, 2], padding=[2])\n"
      "    s2 = sigmoid(c2)\n"
      "    y2 = mul(c2, s2)\n"
      "    y3 = conv2d(x, k7, groups=5, padding=[3])\n"
      "    p4 = max_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1])\n"
      "    p5 = avg_pool(x, kernel=[3, 3], padding=[1, 1, 1, 1])\n"
      "    out = (y1, y2, y3, p4, p5)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  static const prog_check checks[] = {
      {"depthwise_rows", "in 0..32 vectorize", true}, {"depthwise_rows", "in 0..16 vectorize", true},
      {"depthwise_rows", "accq: Local[(32,)", true},  {"max_pool_rows", "in 0..32 vectorize", true},
      {"avg_pool_rows", "in 0..16 vectorize", true},
  };
  static const int64_t sizes[][MAX_N] = {{9, 7},  {5, 8},  {3, 15}, {6, 16}, {2, 17}, {4, 31},
                                         {7, 32}, {1, 33}, {3, 47}, {5, 5},  {9, 3},  {1, 1}, {12, 66}};
  run_checked(text, checks, sizeof checks / sizeof *checks, sizes, sizeof sizes / sizeof *sizes, "wide chunks of rows programs");
}

/* The grid form's epilogue on whole vectors (tensorprog/fuse.c grid_forwards) and its rows up to 31
 * at stride 1 (gen_conv.c POOL_GRID_ROW): depthwise 5 x 5 with a bias and SiLU after it (computed
 * where the grid Local is written), 3 x 3 at stride 2 times a per-channel scale (the same: it reads
 * only the plane's channel), and 3 x 3 plus a tensor of the output's shape (read per position: it
 * stays at the copy out of the grid), 4 channels, against the interpreter; one compilation, batch
 * 0-2, rows of 1, 5, 7, 13, 14, 17, 29, 31 (the grid), 32 and 23 x 40 (a grid over 1024 positions:
 * the chunks), 1 and 2 threads. The programs are checked to compute the SiLU and the scale on the
 * grid's accumulators, the sum alone into the grid for the add, and the unit-stride guard at 32. */
LOOM_TEST(e2e_pool_rows, epilogues_on_the_grid_of_short_rows) {
  const char *text =
      "fn @main(x: Tensor[(b, 4, h, v), f32], k: Tensor[(4, 1, 3, 3), f32], k5: Tensor[(4, 1, 5, 5), f32], kb: Tensor[(4,), f32],\n"
      "         g: Tensor[(4, 1, 1), f32], z: Tensor[(b, 4, h, v), f32]) -> Object {\n"
      "  dataflow {\n"
      "    y1 = conv2d(x, k5, kb, groups=4, padding=[2])\n"
      "    s1 = sigmoid(y1)\n"
      "    a1 = mul(y1, s1)\n"
      "    y2 = conv2d(x, k, groups=4, padding=[1])\n"
      "    r2 = add(y2, z)\n"
      "    y3 = conv2d(x, k, groups=4, strides=[2, 2], padding=[1])\n"
      "    m3 = mul(y3, g)\n"
      "    out = (a1, r2, m3)\n"
      "    output out\n"
      "  }\n"
      "  return out\n"
      "}\n";
  static const prog_check checks[] = {
      {"fused_fused_mul", "= accq[gi2] * sigmoid(accq[gi2])", true},
      {"fused_fused_mul", "v >= 1 && v < 32 &&", true},
      {"fused_mul_f32_F11", ", 4), 0, 0] * accq[gi2]", true}, /* g[channel, 0, 0] */
      {"fused_add", "] = accq[gi2]\n", true},
  };
  static const int64_t sizes[][MAX_N] = {{7, 7}, {14, 14}, {9, 13}, {5, 31}, {3, 32}, {11, 17}, {1, 1},
                                         {2, 29}, {40, 23}, {6, 5}, {13, 1}};
  run_checked(text, checks, sizeof checks / sizeof *checks, sizes, sizeof sizes / sizeof *sizes, "epilogues on the grid of short rows");
}

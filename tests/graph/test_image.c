/* test_image.c — the N-d spatial ops of graph/op_image.c on the reference interpreter:
 * hand-computed pooling (dilation, ceil mode, counted padding, Lp, argmax indices, an empty
 * batch), resize (static and run-time sizes; half_pixel_symmetric against ONNX Runtime), grid
 * sampling, transposed convolution, and the inference errors for bad attributes. */
#include <math.h>

#include "tests/graph/graph_test_util.h"

static void expect_parse_error(const char *text, const char *needle) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert_null(m, "parse should fail");
  cr_assert(err && strstr(err, needle), "error '%s' lacks '%s'", err ? err : "", needle);
  free(err);
}

LOOM_TEST(graph_image, pool_1d_variants) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(b, 1, 5), f32]) -> Object {\n"
      "  a = max_pool(x, kernel=[2], strides=[2], ceil_mode=true)\n"
      "  i = max_pool_indices(x, kernel=[2], strides=[2], ceil_mode=true)\n"
      "  c = avg_pool(x, kernel=[3], padding=[1, 1], count_include_pad=true)\n"
      "  e = avg_pool(x, kernel=[3], padding=[1, 1])\n"
      "  l = lp_pool(x, kernel=[2], p=2)\n"
      "  d = max_pool(x, kernel=[2], dilation=[2])\n"
      "  r = (a, i, c, e, l, d)\n  return r\n}\n");
  double xv[] = {1, 3, 2, 5, 4};
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 1, 5}, xv);
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  /* ceil mode: windows [1 3] [2 5] [4] */
  gt_expect_values(&r.items[0], 3, (int64_t[]){1, 1, 3}, (double[]){3, 5, 4}, 0);
  gt_expect_values(&r.items[1], 3, (int64_t[]){1, 1, 3}, (double[]){1, 3, 4}, 0);
  gt_expect_values(&r.items[2], 3, (int64_t[]){1, 1, 5}, (double[]){4.0 / 3, 2, 10.0 / 3, 11.0 / 3, 3}, 1e-6);
  gt_expect_values(&r.items[3], 3, (int64_t[]){1, 1, 5}, (double[]){2, 2, 10.0 / 3, 11.0 / 3, 4.5}, 1e-6);
  gt_expect_values(&r.items[4], 3, (int64_t[]){1, 1, 4}, (double[]){sqrt(10), sqrt(13), sqrt(29), sqrt(41)}, 1e-5);
  gt_expect_values(&r.items[5], 3, (int64_t[]){1, 1, 3}, (double[]){2, 5, 4}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  /* an empty batch and a size-1 spatial axis */
  loom_graph_value e = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){0, 1, 5}, NULL);
  r = gt_eval_ok(m, 1, &e, NULL);
  gt_expect_values(&r.items[0], 3, (int64_t[]){0, 1, 3}, NULL, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&e);
  loom_graph_module_destroy(m);

  m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 1, 1, 3, 1), f32]) -> Object {\n"
      "  a = max_pool(x, kernel=[1, 2, 1], strides=[1, 1, 1], padding=[0, 0, 0, 0, 1, 0])\n"
      "  i = max_pool_indices(x, kernel=[1, 2, 1], padding=[0, 0, 0, 0, 1, 0], storage_order=1)\n"
      "  r = (a, i)\n  return r\n}\n");
  x = gt_tensor(LOOM_DTYPE_F32, 5, (int64_t[]){1, 1, 1, 3, 1}, (double[]){7, 9, 8});
  r = gt_eval_ok(m, 1, &x, NULL);
  gt_expect_values(&r.items[0], 5, (int64_t[]){1, 1, 1, 3, 1}, (double[]){9, 9, 8}, 0);
  gt_expect_values(&r.items[1], 5, (int64_t[]){1, 1, 1, 3, 1}, (double[]){1, 1, 2}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_image, resize_static_and_runtime) {
  loom_graph_module *m = gt_parse_ok(
      "const @s2: Tensor[(4,), f64] = [1, 1, 2, 2]\n"
      "const @s1: Tensor[(1,), f64] = [1.6666666666666667]\n"
      "const @n5: Tensor[(1,), i64] = [5]\n"
      "fn @main(x: Tensor[(1, 1, 2, 2), f32], y: Tensor[(3,), f32]) -> Object {\n"
      "  a = resize(x, @s2, size=[1, 1, 4, 4], coord=\"asymmetric\", nearest_mode=\"floor\")\n"
      "  b = resize(y, @s1, size=[5], mode=\"linear\", coord=\"align_corners\")\n"
      "  c = resize(y, @n5, by=\"sizes\", mode=\"linear\", coord=\"align_corners\")\n"
      "  d = resize(y, @s1, size=[5], mode=\"cubic\", coord=\"align_corners\")\n"
      "  r = (a, b, c, d)\n  return r\n}\n");
  loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 2, 3, 4}),
                              gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){0, 10, 20})};
  loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
  gt_expect_values(&r.items[0], 4, (int64_t[]){1, 1, 4, 4}, (double[]){1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}, 0);
  gt_expect_values(&r.items[1], 1, (int64_t[]){5}, (double[]){0, 5, 10, 15, 20}, 1e-5);
  gt_expect_values(&r.items[2], 1, (int64_t[]){5}, (double[]){0, 5, 10, 15, 20}, 1e-5);
  /* cubic on a linear ramp: the interior stays on the ramp; the ends use edge padding */
  cr_assert(fabs(loom_graph_tensor_get_f64(&r.items[3].t, 2) - 10) < 1e-5);
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[0]);
  loom_graph_value_free(&args[1]);
  loom_graph_module_destroy(m);
}

/* half_pixel_symmetric downsampling lands on integer source positions (9 -> 4 at scale 0.5:
 * x = 1, 3, 5, 7). The spec's order of operations gives 1 + 2^-52 there, and the interpreter
 * then took its taps from floor(x + padding) = 2 + 0, one left of its weights; now the
 * coordinate is exact and the taps follow floor(x). Expected values from ONNX Runtime 1.31
 * (Resize opset 19, scales [1, s]); the 7 -> 5 cases are mostly off the integers. */
LOOM_TEST(graph_image, resize_half_pixel_symmetric_matches_onnxruntime) {
  loom_graph_module *m = gt_parse_ok(
      "const @h: Tensor[(1,), f32] = [0.5]\n"
      "const @q: Tensor[(1,), f32] = [0.75]\n"
      "fn @main(x: Tensor[(9,), f32], y: Tensor[(7,), f32]) -> Object {\n"
      "  a = resize(x, @h, size=[4], mode=\"linear\", coord=\"half_pixel_symmetric\")\n"
      "  b = resize(x, @h, size=[4], mode=\"cubic\", coord=\"half_pixel_symmetric\", exclude_outside=true)\n"
      "  c = resize(x, @h, size=[4], coord=\"half_pixel_symmetric\", nearest_mode=\"ceil\")\n"
      "  d = resize(x, @h, size=[4], mode=\"linear\", coord=\"half_pixel_symmetric\", antialias=true)\n"
      "  e = resize(x, @h, size=[4], mode=\"cubic\", coord=\"half_pixel_symmetric\", antialias=true)\n"
      "  f = resize(y, @q, size=[5], mode=\"cubic\", coord=\"half_pixel_symmetric\")\n"
      "  g = resize(y, @q, size=[5], mode=\"linear\", coord=\"half_pixel_symmetric\", antialias=true)\n"
      "  r = (a, b, c, d, e, f, g)\n  return r\n}\n");
  loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){9}, (double[]){3, -1, 4, 1, -5, 9, 2, -6, 5}),
                              gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){7}, (double[]){2, 7, -1, 8, 2, -8, 1})};
  loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
  double odd[] = {-1, 1, 9, -6}; /* x[1], x[3], x[5], x[7] */
  for (int i = 0; i < 3; i++) gt_expect_values(&r.items[i], 1, (int64_t[]){4}, odd, 1e-5);
  gt_expect_values(&r.items[3], 1, (int64_t[]){4}, (double[]){1.25, 0.25, 3.75, -1.25}, 1e-5);
  gt_expect_values(&r.items[4], 1, (int64_t[]){4}, (double[]){1.671875, -0.03125, 3.1875, -0.921875}, 1e-5);
  gt_expect_values(&r.items[5], 1, (int64_t[]){5}, (double[]){4.01851845, 0.796296, 8, -2.31481791, -2.38889217}, 1e-5);
  gt_expect_values(&r.items[6], 1, (int64_t[]){5}, (double[]){4, 2.20000076, 5.50000048, -2.00000095, -2.60000086}, 1e-5);
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[0]);
  loom_graph_value_free(&args[1]);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_image, grid_sample_and_conv_transpose) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 1, 2, 2), f32], g: Tensor[(1, 1, 5, 2), f32], v: Tensor[(1, 1, 3), f32],\n"
      "         w: Tensor[(1, 1, 2), f32]) -> Object {\n"
      "  a = grid_sample(x, g, align_corners=true)\n"
      "  n = grid_sample(x, g, mode=\"nearest\", padding_mode=\"border\", align_corners=true)\n"
      "  t = conv_transpose(v, w, strides=[2])\n"
      "  p = conv_transpose(v, w, strides=[2], padding=[1, 1])\n"
      "  r = (a, n, t, p)\n  return r\n}\n");
  loom_graph_value args[4] = {gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 2, 3, 4}),
                              gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 1, 5, 2}, (double[]){-1, -1, 1, -1, 0, 0, 1, 1, -3, 0}),
                              gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 1, 3}, (double[]){1, 2, 3}),
                              gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 1, 2}, (double[]){1, 10})};
  loom_graph_value r = gt_eval_ok(m, 4, args, NULL);
  /* (x, y) = (-3, 0) lies outside: zeros padding gives 0, border clamps to column 0; nearest rounds 0.5 to even */
  gt_expect_values(&r.items[0], 4, (int64_t[]){1, 1, 1, 5}, (double[]){1, 2, 2.5, 4, 0}, 1e-6);
  gt_expect_values(&r.items[1], 4, (int64_t[]){1, 1, 1, 5}, (double[]){1, 2, 1, 4, 1}, 1e-6);
  gt_expect_values(&r.items[2], 3, (int64_t[]){1, 1, 6}, (double[]){1, 10, 2, 20, 3, 30}, 0);
  gt_expect_values(&r.items[3], 3, (int64_t[]){1, 1, 4}, (double[]){10, 2, 20, 3}, 0);
  loom_graph_value_free(&r);
  for (int i = 0; i < 4; i++) loom_graph_value_free(&args[i]);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_image, bad_attributes) {
  expect_parse_error("fn @main(x: Tensor[(1, 1, 5), f32]) -> Object {\n  a = max_pool(x, kernel=[2, 2])\n  return a\n}\n",
                     "a 2-entry kernel needs rank 4");
  expect_parse_error("fn @main(x: Tensor[(1, 1, 5), f32]) -> Object {\n  a = avg_pool(x, kernel=[2], strides=[0])\n  return a\n}\n",
                     "attribute 'strides' entry 0 is 0");
  expect_parse_error("const @s: Tensor[(1,), f64] = [2]\nfn @main(x: Tensor[(3,), f32]) -> Object {\n"
                     "  a = resize(x, @s, size=[6], mode=\"bogus\")\n  return a\n}\n",
                     "mode \"bogus\" is not nearest, linear or cubic");
  expect_parse_error("const @s: Tensor[(2,), f64] = [2, 2]\nfn @main(x: Tensor[(3,), f32]) -> Object {\n"
                     "  a = resize(x, @s, by=\"scales\")\n  return a\n}\n",
                     "has 2 values for 1 resized axes");
  expect_parse_error("fn @main(x: Tensor[(1, 1, 2, 2), f32], g: Tensor[(1, 3, 3, 3), f32]) -> Object {\n"
                     "  a = grid_sample(x, g, padding_mode=\"wrap\")\n  return a\n}\n",
                     "axis 3 is 3; expected 2 coordinates");
  expect_parse_error("fn @main(x: Tensor[(1, 2, 4), f32], w: Tensor[(3, 1, 2), f32]) -> Object {\n"
                     "  a = conv_transpose(x, w)\n  return a\n}\n",
                     "operand 1 axis 0 is 3");
}

/* PyTorch's / ONNX Runtime's ceil-mode extent, step by step: ceildiv(in + lo + hi - sw, s) + 1
 * windows, less the last when it starts at or past in + lo (in the end padding). */
static int64_t ceil_extent(int64_t in, int64_t k, int64_t s, int64_t d, int64_t lo, int64_t hi) {
  int64_t num = in + lo + hi - d * (k - 1) - 1, o = (num > 0 ? (num + s - 1) / s : -(-num / s)) + 1;
  if ((o - 1) * s >= in + lo) o--;
  return o;
}

/* Ceil mode on a symbolic spatial extent: one floordiv of the extent (not a nest of min / max,
 * which a network of pools would grow past the VM's expression limit), and at every extent
 * from 1 up to 40 (primes, odd sizes) the step-by-step extent, in inference and in the
 * reference (an input shorter than the kernel still has a window while one starts inside it); windows hanging past the input average over their inside taps (count_include_pad:
 * over the taps before the end padding). */
LOOM_TEST(graph_image, ceil_mode_symbolic_extent) {
  static const struct {
    int64_t k, s, d, lo, hi;
    const char *op;
  } cfg[] = {{3, 2, 1, 0, 0, "max_pool"},  {2, 2, 1, 0, 0, "avg_pool"},      {3, 3, 1, 1, 1, "avg_pool"},
             {3, 2, 2, 1, 0, "max_pool"},  {2, 3, 1, 1, 1, "lp_pool"},       {1, 2, 1, 0, 2, "avg_pool"},
             {3, 2, 1, 1, 1, "avg_pool_incl"}};
  for (size_t t = 0; t < sizeof cfg / sizeof cfg[0]; t++) {
    char text[512];
    bool incl = strstr(cfg[t].op, "_incl") != NULL;
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[(1, 1, n), f32]) -> Object {\n  a = %.*s(x, kernel=[%lld], strides=[%lld], dilation=[%lld], "
             "padding=[%lld, %lld], ceil_mode=true%s)\n  return a\n}\n",
             incl ? 8 : (int)strlen(cfg[t].op), cfg[t].op, (long long)cfg[t].k, (long long)cfg[t].s, (long long)cfg[t].d,
             (long long)cfg[t].lo, (long long)cfg[t].hi, incl ? ", count_include_pad=true" : "");
    loom_graph_module *m = gt_parse_ok(text);
    loom_sym_ctx *cx = loom_graph_module_sym(m);
    const loom_sym_expr *ext = gt_binding(m, "main", "a")->var->sinfo->dims[2];
    char *str = loom_sym_to_string(ext);
    cr_assert(str && !strstr(str, "min") && !strstr(str, "max"), "%s: extent %s", text, str ? str : "");
    free(str);
    for (int64_t n = 1; n <= 40; n++) {
      int64_t want = ceil_extent(n, cfg[t].k, cfg[t].s, cfg[t].d, cfg[t].lo, cfg[t].hi), got;
      loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 1, n}, NULL);
      for (int64_t i = 0; i < n; i++) loom_graph_tensor_set_f64(&x.t, (size_t)i, (double)(i % 7) - 2.5);
      if (want < 1) { /* no window starts inside the input */
        char *msg = gt_eval_err(m, 1, &x);
        cr_assert(strstr(msg, "is smaller than the (dilated) kernel"), "%s: n = %lld: %s", text, (long long)n, msg);
        free(msg);
        loom_graph_value_free(&x);
        continue;
      }
      loom_sym_env *env;
      cr_assert(!loom_sym_env_create(NULL, &env));
      cr_assert(!loom_sym_env_set(env, gt_pdim(m, 0, 2), n));
      cr_assert(!loom_sym_eval(cx, ext, env, &got));
      loom_sym_env_destroy(env);
      cr_assert_eq(got, want, "%s: n = %lld: inferred %lld, want %lld", text, (long long)n, (long long)got, (long long)want);
      loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
      cr_assert_eq(r.t.shape[2], want, "%s: n = %lld: evaluated extent %lld", text, (long long)n, (long long)r.t.shape[2]);
      /* the last window: its taps inside the input (max, average) or before the end padding */
      int64_t o = want - 1, first = o * cfg[t].s - cfg[t].lo;
      double mx = -INFINITY, sum = 0;
      int64_t cnt = 0, cnt_incl = 0;
      for (int64_t j = 0; j < cfg[t].k; j++) {
        int64_t q = first + j * cfg[t].d;
        if (q < n + cfg[t].hi) cnt_incl++;
        if (q < 0 || q >= n) continue;
        double v = (double)(q % 7) - 2.5;
        mx = v > mx ? v : mx, sum += v, cnt++;
      }
      double last = loom_graph_tensor_get_f64(&r.t, (size_t)o);
      if (!strcmp(cfg[t].op, "max_pool")) cr_assert_eq(last, mx, "%s: n = %lld", text, (long long)n);
      else if (!strcmp(cfg[t].op, "avg_pool")) cr_assert_float_eq(last, cnt ? sum / (double)cnt : 0, 1e-6, "%s: n = %lld", text, (long long)n);
      else if (incl) cr_assert_float_eq(last, sum / (double)cnt_incl, 1e-6, "%s: n = %lld", text, (long long)n);
      loom_graph_value_free(&r);
      loom_graph_value_free(&x);
    }
    loom_graph_module_destroy(m);
  }
}

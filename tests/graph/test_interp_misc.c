/* test_interp_misc.c — the reference interpreter on the bitwise / shift / inverse-trig
 * elementwise ops, split with explicit sizes, cumprod, scatter reductions, topk, unique
 * with indices, gather_nd / scatter_nd, det and non_max_suppression: hand-computed cases,
 * empty and size-1 dims, and the errors bad operands give. */
#include <math.h>

#include "tests/graph/graph_test_util.h"

static void expect_parse_error(const char *text, const char *needle) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert_null(m, "parsed but should have failed");
  cr_assert(err && strstr(err, needle), "message lacks '%s': %s", needle, err ? err : "(none)");
  free(err);
}

/* Asserts @main fails with a message containing `needle`. */
static void run_err(loom_graph_module *m, size_t n, loom_graph_value *args, const char *needle) {
  char *msg = gt_eval_err(m, n, args);
  cr_assert(strstr(msg, needle), "message lacks '%s': %s", needle, msg);
  free(msg);
}

LOOM_TEST(graph_interp_misc, bitwise_shift_and_inverse_trig) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(a: Tensor[(4,), u8], b: Tensor[(4,), u8], c: Tensor[(3,), i8], s: Tensor[(3,), i8],\n"
      "         d: Tensor[(2,), u64], e: Tensor[(2,), u64], x: Tensor[(3,), f32]) -> Object {\n"
      "  an = bitwise_and(a, b)\n  o = bitwise_or(a, b)\n  xo = bitwise_xor(a, b)\n  nt = bitwise_not(a)\n"
      "  sl = shift_left(a, b)\n  sr = shift_right(c, s)\n  su = shift_right(d, e)\n  nc = bitwise_not(c)\n"
      "  as = asin(x)\n  ac = acos(x)\n  at = atan(x)\n"
      "  r = (an, o, xo, nt, sl, sr, su, nc, as, ac, at)\n  return r\n}\n");
  loom_graph_value a[7] = {gt_tensor(LOOM_DTYPE_U8, 1, (int64_t[]){4}, (double[]){240, 15, 255, 1}),
                           gt_tensor(LOOM_DTYPE_U8, 1, (int64_t[]){4}, (double[]){2, 1, 8, 7}),
                           gt_tensor(LOOM_DTYPE_I8, 1, (int64_t[]){3}, (double[]){-128, -7, 100}),
                           gt_tensor(LOOM_DTYPE_I8, 1, (int64_t[]){3}, (double[]){1, 2, 9}),
                           gt_tensor(LOOM_DTYPE_U64, 1, (int64_t[]){2}, NULL),
                           gt_tensor(LOOM_DTYPE_U64, 1, (int64_t[]){2}, (double[]){62, 2}),
                           gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){0.5, -1, 0})};
  ((uint64_t *)a[4].t.data)[0] = (uint64_t)1 << 63; /* the top bit: a logical shift */
  ((uint64_t *)a[4].t.data)[1] = 12;
  loom_graph_value r = gt_eval_ok(m, 7, a, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){4}, (double[]){0, 1, 8, 1}, 0);
  gt_expect_values(&r.items[1], 1, (int64_t[]){4}, (double[]){242, 15, 255, 7}, 0);
  gt_expect_values(&r.items[2], 1, (int64_t[]){4}, (double[]){242, 14, 247, 6}, 0);
  gt_expect_values(&r.items[3], 1, (int64_t[]){4}, (double[]){15, 240, 0, 254}, 0);
  /* 240 << 2 = 960 wraps to 192; a shift by the width (8) gives 0 */
  gt_expect_values(&r.items[4], 1, (int64_t[]){4}, (double[]){192, 30, 0, 128}, 0);
  /* arithmetic for signed: -7 >> 2 = -2; 100 >> 9 (past the width) = 0 */
  gt_expect_values(&r.items[5], 1, (int64_t[]){3}, (double[]){-64, -2, 0}, 0);
  cr_assert_eq(((uint64_t *)r.items[6].t.data)[0], 2u);
  cr_assert_eq(((uint64_t *)r.items[6].t.data)[1], 3u);
  gt_expect_values(&r.items[7], 1, (int64_t[]){3}, (double[]){127, 6, -101}, 0);
  gt_expect_values(&r.items[8], 1, (int64_t[]){3}, (double[]){asin(0.5), -M_PI / 2, 0}, 1e-6);
  gt_expect_values(&r.items[9], 1, (int64_t[]){3}, (double[]){acos(0.5), M_PI, M_PI / 2}, 1e-6);
  gt_expect_values(&r.items[10], 1, (int64_t[]){3}, (double[]){atan(0.5), -M_PI / 4, 0}, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(a, 7);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(a: Tensor[(4,), f32]) -> Tensor[(4,), f32] {\n  y = bitwise_and(a, a)\n  return y\n}\n",
                     "an integer dtype is required");
  expect_parse_error("fn @main(a: Tensor[(4,), f32]) -> Tensor[(4,), f32] {\n  y = bitwise_not(a)\n  return y\n}\n",
                     "an integer dtype is required");
}

LOOM_TEST(graph_interp_misc, split_sizes_and_cumprod) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(2, n), f32]) -> Object {\n"
      "  sp = split(x, sizes=[1, 0, n - 1], axis=1)\n  p0 = sp.0\n  p1 = sp.1\n  p2 = sp.2\n"
      "  cp = cumprod(x, axis=1)\n  ce = cumprod(x, axis=1, exclusive=true)\n"
      "  r = (p0, p1, p2, cp, ce)\n  return r\n}\n");
  loom_graph_value a[1] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 5}, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10})};
  loom_graph_value r = gt_eval_ok(m, 1, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 1}, (double[]){1, 6}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 0}, NULL, 0);
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 4}, (double[]){2, 3, 4, 5, 7, 8, 9, 10}, 0);
  gt_expect_values(&r.items[3], 2, (int64_t[]){2, 5}, (double[]){1, 2, 6, 24, 120, 6, 42, 336, 3024, 30240}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){2, 5}, (double[]){1, 1, 2, 6, 24, 1, 6, 42, 336, 3024}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 1);
  loom_graph_module_destroy(m);
  /* sizes that need not add up to the axis: a guard, failing at run time with both values */
  m = gt_parse_ok("fn @main(x: Tensor[(2, n), f32]) -> Object {\n  sp = split(x, sizes=[2, 2], axis=1)\n  return sp\n}\n");
  a[0] = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 5}, NULL);
  run_err(m, 1, a, "the sizes add up to 4");
  gt_free_args(a, 1);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(2, 5), f32]) -> Object {\n  sp = split(x, sizes=[2, 2], axis=1)\n  return sp\n}\n",
                     "sizes add up to 4, operand 0 axis 1 is 5");
  expect_parse_error("fn @main(x: Tensor[(2, 5), f32]) -> Object {\n  sp = split(x, sizes=[5], sections=1, axis=1)\n  return sp\n}\n",
                     "exactly one of 'sections' and 'sizes'");
}

LOOM_TEST(graph_interp_misc, scatter_elements_reductions) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 5), f32], i: Tensor[(1, 3), i64], u: Tensor[(1, 3), f32]) -> Object {\n"
      "  ad = scatter_elements(x, i, u, axis=1, reduction=\"add\")\n  mx = scatter_elements(x, i, u, axis=1, reduction=\"max\")\n"
      "  mu = scatter_elements(x, i, u, axis=1, reduction=\"mul\")\n  no = scatter_elements(x, i, u, axis=1)\n"
      "  r = (ad, mx, mu, no)\n  return r\n}\n");
  loom_graph_value a[3] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 5}, (double[]){1, 2, 3, 4, 5}),
                           gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){1, 3}, (double[]){1, 3, -4}),
                           gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 3}, (double[]){1.5, 2.5, 3})};
  loom_graph_value r = gt_eval_ok(m, 3, a, NULL);
  /* index -4 is 1: position 1 gets 1.5 and 3 */
  gt_expect_values(&r.items[0], 2, (int64_t[]){1, 5}, (double[]){1, 6.5, 3, 6.5, 5}, 1e-6);
  gt_expect_values(&r.items[1], 2, (int64_t[]){1, 5}, (double[]){1, 3, 3, 4, 5}, 1e-6);
  gt_expect_values(&r.items[2], 2, (int64_t[]){1, 5}, (double[]){1, 9, 3, 10, 5}, 1e-6);
  gt_expect_values(&r.items[3], 2, (int64_t[]){1, 5}, (double[]){1, 3, 3, 2.5, 5}, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(a, 3);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(1, 5), f32], i: Tensor[(1, 3), i64], u: Tensor[(1, 3), f32]) -> Object {\n"
                     "  y = scatter_elements(x, i, u, axis=1, reduction=\"avg\")\n  return y\n}\n",
                     "reduction is \"avg\"");
}

LOOM_TEST(graph_interp_misc, topk_attr_and_runtime_k) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(2, 4), f32], k: Tensor[(1,), i64]) -> Object {\n"
      "  t = topk(x, k=[2], axis=1)\n  v = t.0\n  i = t.1\n  s = topk(x, k=[3], axis=-1, largest=false)\n  sv = s.0\n  si = s.1\n"
      "  d = topk(x, k)\n  dv = d.0\n  di = d.1\n  z = topk(x, k=[0], axis=0)\n  zv = z.0\n"
      "  r = (v, i, sv, si, dv, di, zv)\n  return r\n}\n");
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 4}, (double[]){1, 3, 3, 2, 4, 0, -1, 4}),
                           gt_tensor(LOOM_DTYPE_I64, 1, (int64_t[]){1}, (double[]){1})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  /* ties: the lower index first */
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 2}, (double[]){3, 3, 4, 4}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 2}, (double[]){1, 2, 0, 3}, 0);
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, -1, 0, 4}, 0);
  gt_expect_values(&r.items[3], 2, (int64_t[]){2, 3}, (double[]){0, 3, 1, 2, 1, 0}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){2, 1}, (double[]){3, 4}, 0);
  gt_expect_values(&r.items[5], 2, (int64_t[]){2, 1}, (double[]){1, 0}, 0);
  gt_expect_values(&r.items[6], 2, (int64_t[]){0, 4}, NULL, 0);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_i64(&a[1].t, 0, 5);
  run_err(m, 2, a, "k is 5, operand 0 axis 1 is 4");
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(2, 4), f32]) -> Object {\n  t = topk(x, k=[5])\n  return t\n}\n",
                     "k is 5, operand 0 axis 1 is 4");
  expect_parse_error("fn @main(x: Tensor[(2, 4), f32]) -> Object {\n  t = topk(x)\n  return t\n}\n",
                     "give k either as operand 1 or as attribute 'k'");
}

LOOM_TEST(graph_interp_misc, unique_slices_and_indices) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(3, 2), f32]) -> Object {\n"
      "  u = unique(x, axis=0, indices=true)\n  y = u.0\n  f = u.1\n  inv = u.2\n  c = u.3\n"
      "  w = unique(x, axis=0, sorted=false, indices=true)\n  wy = w.0\n  wf = w.1\n  wi = w.2\n  wc = w.3\n"
      "  flat = unique(x)\n  r = (y, f, inv, c, wy, wf, wi, wc, flat)\n  return r\n}\n");
  loom_graph_value a[1] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 1, 2, 0, 5})};
  loom_graph_value r = gt_eval_ok(m, 1, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 2}, (double[]){0, 5, 1, 2}, 0);
  gt_expect_values(&r.items[1], 1, (int64_t[]){2}, (double[]){2, 0}, 0);
  gt_expect_values(&r.items[2], 1, (int64_t[]){3}, (double[]){1, 1, 0}, 0);
  gt_expect_values(&r.items[3], 1, (int64_t[]){2}, (double[]){1, 2}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){2, 2}, (double[]){1, 2, 0, 5}, 0);
  gt_expect_values(&r.items[5], 1, (int64_t[]){2}, (double[]){0, 2}, 0);
  gt_expect_values(&r.items[6], 1, (int64_t[]){3}, (double[]){0, 0, 1}, 0);
  gt_expect_values(&r.items[7], 1, (int64_t[]){2}, (double[]){2, 1}, 0);
  gt_expect_values(&r.items[8], 1, (int64_t[]){4}, (double[]){0, 1, 2, 5}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 1);
  /* empty input: no values */
  a[0] = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){0, 2}, NULL);
  loom_graph_module *m0 = gt_parse_ok("fn @main(x: Tensor[(n, 2), f32]) -> Object {\n  u = unique(x, axis=0, indices=true)\n  return u\n}\n");
  r = gt_eval_ok(m0, 1, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){0, 2}, NULL, 0);
  gt_expect_values(&r.items[2], 1, (int64_t[]){0}, NULL, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 1);
  loom_graph_module_destroy(m0);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp_misc, gather_nd_and_scatter_nd) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(2, 2, 2), f32], b: Tensor[(2, 1), i64], i: Tensor[(2, 2), i64], v: Tensor[(4,), f32],\n"
      "         j: Tensor[(3, 1), i64], u: Tensor[(3,), f32]) -> Object {\n"
      "  g = gather_nd(x, b, batch_dims=1)\n  h = gather_nd(x, i)\n  s = scatter_nd(v, j, u, reduction=\"add\")\n"
      "  t = scatter_nd(v, j, u)\n  r = (g, h, s, t)\n  return r\n}\n");
  loom_graph_value a[6] = {gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){2, 2, 2}, (double[]){0, 1, 2, 3, 4, 5, 6, 7}),
                           gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){2, 1}, (double[]){1, 0}),
                           gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){2, 2}, (double[]){1, 1, 0, -2}),
                           gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){4}, (double[]){1, 2, 3, 4}),
                           gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){3, 1}, (double[]){1, 1, 3}),
                           gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){10, 20, 30})};
  loom_graph_value r = gt_eval_ok(m, 6, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 2}, (double[]){2, 3, 4, 5}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 2}, (double[]){6, 7, 0, 1}, 0);
  gt_expect_values(&r.items[2], 1, (int64_t[]){4}, (double[]){1, 32, 3, 34}, 0);
  gt_expect_values(&r.items[3], 1, (int64_t[]){4}, (double[]){1, 20, 3, 30}, 0);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_i64(&a[2].t, 1, 2);
  run_err(m, 6, a, "index 2 at position 1 is out of range for axis 1 of size 2");
  gt_free_args(a, 6);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(2, 2), f32], i: Tensor[(2, 3), i64]) -> Object {\n  g = gather_nd(x, i)\n  return g\n}\n",
                     "do not fit ranks 2 and 2");
}

LOOM_TEST(graph_interp_misc, det_and_non_max_suppression) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(b, 3, 3), f32], y: Tensor[(1, 2, 2), f32], bx: Tensor[(1, 3, 4), f32], sc: Tensor[(1, 1, 3), f32],\n"
      "         mx: Tensor[(1,), i64], io: Tensor[(1,), f32], st: Tensor[(1,), f32]) -> Object {\n"
      "  d = det(x)\n  e = det(y)\n  n = non_max_suppression(bx, sc, mx, io, st)\n  r = (d, e, n)\n  return r\n}\n");
  loom_graph_value a[7] = {
      gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){2, 3, 3}, (double[]){0, 1, 0, 1, 0, 0, 0, 0, 2, 2, 0, 0, 1, 3, 0, 4, 5, 6}),
      gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 2, 2}, (double[]){1, 2, 3, 4}),
      gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 3, 4}, (double[]){0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3}),
      gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 1, 3}, (double[]){0.9, 0.8, 0.7}),
      gt_tensor(LOOM_DTYPE_I64, 1, (int64_t[]){1}, (double[]){3}),
      gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){1}, (double[]){0.5}),
      gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){1}, (double[]){0})};
  loom_graph_value r = gt_eval_ok(m, 7, a, NULL);
  /* a row swap: -2; lower triangular 2 * 3 * 6 = 36 */
  gt_expect_values(&r.items[0], 1, (int64_t[]){2}, (double[]){-2, 36}, 1e-5);
  gt_expect_values(&r.items[1], 1, (int64_t[]){1}, (double[]){-2}, 1e-5);
  /* box 1 overlaps box 0 with IoU 0.9 / 1.1: suppressed */
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 3}, (double[]){0, 0, 0, 0, 0, 2}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&a[0]);
  a[0] = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){0, 3, 3}, NULL); /* no matrices */
  loom_graph_tensor_set_f64(&a[6].t, 0, 0.75);                    /* box 2 scores below */
  r = gt_eval_ok(m, 7, a, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){0}, NULL, 0);
  gt_expect_values(&r.items[2], 2, (int64_t[]){1, 3}, (double[]){0, 0, 0}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 7);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(2, 3), f32]) -> Object {\n  d = det(x)\n  return d\n}\n",
                     "operand 0 axis 0 is 2, operand 0 axis 1 is 3");
}

LOOM_TEST(graph_interp_misc, dft_forward_inverse_onesided_length) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(4, 1), f32]) -> Object {\n"
      "  f = dft(x, axis=0)\n  h = dft(x, axis=0, onesided=true)\n  s = dft(x, axis=0, length=[2])\n"
      "  b = dft(f, axis=0, inverse=true)\n  p = dft(x, axis=-1, length=[5])\n  i = dft(h, axis=0, inverse=true, onesided=true)\n"
      "  r = (f, h, s, b, p, i)\n  return r\n}\n");
  loom_graph_value a[1] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){4, 1}, (double[]){1, 2, 3, 4})};
  loom_graph_value r = gt_eval_ok(m, 1, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){4, 2}, (double[]){10, 0, -2, 2, -2, 0, -2, -2}, 1e-5);
  gt_expect_values(&r.items[1], 2, (int64_t[]){3, 2}, (double[]){10, 0, -2, 2, -2, 0}, 1e-5);
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 2}, (double[]){3, 0, -1, 0}, 1e-5);
  gt_expect_values(&r.items[3], 2, (int64_t[]){4, 2}, (double[]){1, 0, 2, 0, 3, 0, 4, 0}, 1e-5);
  /* zero-padded to 5: y[k] = sum_j x[j] e^(-2 pi i j k / 5); y[0] = 10 */
  double re1 = 0, im1 = 0;
  for (int j = 0; j < 4; j++) re1 += (j + 1) * cos(-2 * M_PI * j / 5), im1 += (j + 1) * sin(-2 * M_PI * j / 5);
  cr_assert_eq(r.items[4].t.shape[0], 5);
  cr_assert(fabs(loom_graph_tensor_get_f64(&r.items[4].t, 0) - 10) < 1e-5);
  cr_assert(fabs(loom_graph_tensor_get_f64(&r.items[4].t, 2) - re1) < 1e-5 && fabs(loom_graph_tensor_get_f64(&r.items[4].t, 3) - im1) < 1e-5);
  /* the onesided spectrum's inverse: the real signal of 2 * (3 - 1) samples */
  gt_expect_values(&r.items[5], 2, (int64_t[]){4, 1}, (double[]){1, 2, 3, 4}, 1e-5);
  loom_graph_value_free(&r);
  gt_free_args(a, 1);
  loom_graph_module_destroy(m);
  expect_parse_error("fn @main(x: Tensor[(4, 3), f32]) -> Object {\n  f = dft(x, axis=0)\n  return f\n}\n",
                     "(..., 1) real or (..., 2) complex");
  expect_parse_error("fn @main(x: Tensor[(4, 1), f32]) -> Object {\n  f = dft(x, axis=1)\n  return f\n}\n", "axis");
}

/* A Tuple whose items share a fresh extent (topk with a run-time k, unique) is written with the
 * declared names, parses back, and verifies. */
LOOM_TEST(graph_interp_misc, fresh_extents_inside_tuples_round_trip) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(3, 4), f32], k: Tensor[(1,), i64]) -> Object {\n"
      "  t: Tuple[Tensor[(3, kk), f32], Tensor[(3, kk), i64]] = topk(x, k)\n"
      "  u: Tuple[Tensor[(nu,), f32], Tensor[(nu,), i64], Tensor[(12,), i64], Tensor[(nu,), i64]] = unique(x, indices=true)\n"
      "  v: Tensor[(3, kk), f32] = t.0\n  r = (v, u)\n  return r\n}\n");
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_verify(m, &dl);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  loom_diag_list_destroy(&dl);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "Tensor[(3, kk), i64]"), "%s", loom_strbuf_cstr(&sb));
  loom_graph_module *back = gt_parse_ok(loom_strbuf_cstr(&sb));
  loom_graph_module_destroy(back);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
  /* a new name where the op's extent is not fresh is still an error */
  expect_parse_error("fn @main(x: Tensor[(3, 4), f32], k: Tensor[(1,), i64]) -> Object {\n"
                     "  t: Tuple[Tensor[(zz, kk), f32], Tensor[(3, kk), i64]] = topk(x, k)\n  return t\n}\n",
                     "zz");
}

/* test_lowp.c — the low-precision dtypes in graph functions: cast with saturate / round_mode,
 * bitcast, data movement, the text round trip, and the ops that refuse them. Expected codes
 * come from ml_dtypes / ONNX's reference (see tests/base/test_lowp.c). */
#include <math.h>

#include "graph/legalize.h"
#include "tests/graph/graph_test_util.h"

static loom_graph_value eval_ok(loom_graph_module *m, size_t n, loom_graph_value *args) {
  loom_graph_value out;
  loom_status st = loom_graph_eval(m, "main", n, args, NULL, &out);
  cr_assert(!st, "eval failed: %s", st ? loom_status_text(st, 0) : "");
  return out;
}

static const uint8_t *bytes(const loom_graph_value *v) { return v->t.data; }

/* The first parse / inference error of `text` (malloc'd). */
static char *parse_err(const char *text) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert_null(m, "parsed but should not have");
  cr_assert(err);
  return err;
}

LOOM_TEST(graph_lowp, cast_to_float8_saturates_or_not) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n), f32]) -> Object {\n"
      "  a = cast(x, dtype=f8e4m3fn)\n"
      "  b = cast(x, dtype=f8e4m3fn, saturate=false)\n"
      "  c = cast(x, dtype=f8e5m2, saturate=false)\n"
      "  d = cast(a, dtype=f32)\n"
      "  r = (a, b, c, d)\n  return r\n}\n");
  /* 7 elements (a prime): overflow, a tie (464 -> 448, even), rounding, -0, NaN, inf */
  double xv[] = {1000, 464, 0.3, -0.0, NAN, -INFINITY, 61440};
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){7}, xv);
  loom_graph_value r = eval_ok(m, 1, &x);
  static const uint8_t a[] = {0x7e, 0x7e, 0x2a, 0x80, 0x7f, 0xfe, 0x7e};
  static const uint8_t b[] = {0x7f, 0x7e, 0x2a, 0x80, 0x7f, 0xff, 0x7f};
  static const uint8_t c[] = {0x64, 0x5f, 0x35, 0x80, 0x7e, 0xfc, 0x7c};
  for (size_t i = 0; i < 7; i++) {
    cr_assert_eq(bytes(&r.items[0])[i], a[i], "saturating %zu: 0x%02x", i, bytes(&r.items[0])[i]);
    cr_assert_eq(bytes(&r.items[1])[i], b[i], "e4m3fn %zu: 0x%02x", i, bytes(&r.items[1])[i]);
    cr_assert_eq(bytes(&r.items[2])[i], c[i], "e5m2 %zu: 0x%02x", i, bytes(&r.items[2])[i]);
  }
  cr_assert_eq(r.items[0].t.dtype, LOOM_DTYPE_F8E4M3FN);
  static const double d[] = {448, 448, 0.3125, 0, NAN, -448, 448};
  for (size_t i = 0; i < 7; i++) {
    double g = loom_graph_tensor_get_f64(&r.items[3].t, i);
    cr_assert(isnan(d[i]) ? isnan(g) : g == d[i], "back to f32 %zu: %g", i, g);
  }
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  /* empty and single-element inputs */
  for (int64_t n = 0; n < 2; n++) {
    x = gt_tensor(LOOM_DTYPE_F32, 1, &n, (double[]){-1000});
    r = eval_ok(m, 1, &x);
    cr_assert_eq(r.items[0].t.numel, (size_t)n);
    if (n) cr_assert_eq(bytes(&r.items[0])[0], 0xfe);
    loom_graph_value_free(&r);
    loom_graph_value_free(&x);
  }
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_lowp, cast_to_e8m0_round_modes_and_small_ints) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(5), f32]) -> Object {\n"
      "  u = cast(x, dtype=f8e8m0)\n"
      "  d = cast(x, dtype=f8e8m0, round_mode=\"down\")\n"
      "  e = cast(x, dtype=f8e8m0, round_mode=\"nearest\")\n"
      "  i = cast(x, dtype=i4)\n"
      "  v = cast(x, dtype=u2)\n"
      "  w = cast(i, dtype=i8)\n"
      "  r = (u, d, e, i, v, w)\n  return r\n}\n");
  double xv[] = {1.1, 1.5, 0.124, -9, 2.7};
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){5}, xv);
  loom_graph_value r = eval_ok(m, 1, &x);
  static const uint8_t u[] = {0x80, 0x80, 0x7c, 0x83, 0x81}, d[] = {0x7f, 0x7f, 0x7b, 0x82, 0x80},
                       e[] = {0x7f, 0x80, 0x7c, 0x82, 0x80};
  static const int8_t i4[] = {1, 1, 0, 7, 2};
  static const uint8_t u2[] = {1, 1, 0, 3, 2};
  for (size_t k = 0; k < 5; k++) {
    cr_assert_eq(bytes(&r.items[0])[k], u[k], "up %zu: 0x%02x", k, bytes(&r.items[0])[k]);
    cr_assert_eq(bytes(&r.items[1])[k], d[k], "down %zu: 0x%02x", k, bytes(&r.items[1])[k]);
    cr_assert_eq(bytes(&r.items[2])[k], e[k], "nearest %zu: 0x%02x", k, bytes(&r.items[2])[k]);
    cr_assert_eq((int8_t)bytes(&r.items[3])[k], i4[k], "i4 %zu", k);
    cr_assert_eq(bytes(&r.items[4])[k], u2[k], "u2 %zu", k);
    cr_assert_eq(loom_graph_tensor_get_i64(&r.items[5].t, k), i4[k], "i4 -> i8 %zu", k);
  }
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_lowp, bitcast_keeps_the_bits) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n), f32], q: Tensor[(3), i4], b: Tensor[(2), bool]) -> Object {\n"
      "  a = bitcast(x, dtype=i32)\n"
      "  u = bitcast(q, dtype=u4)\n"
      "  f = bitcast(u, dtype=f4e2m1)\n"
      "  s = bitcast(u, dtype=i4)\n"
      "  c = bitcast(b, dtype=u8)\n"
      "  r = (a, u, f, s, c)\n  return r\n}\n");
  loom_graph_value args[3] = {gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){2}, (double[]){1.0, -2.0}),
                              gt_tensor(LOOM_DTYPE_I4, 1, (int64_t[]){3}, (double[]){-1, 7, -8}),
                              gt_tensor(LOOM_DTYPE_BOOL, 1, (int64_t[]){2}, (double[]){1, 0})};
  loom_graph_value r = eval_ok(m, 3, args);
  cr_assert_eq(loom_graph_tensor_get_i64(&r.items[0].t, 0), 0x3f800000);
  cr_assert_eq(loom_graph_tensor_get_i64(&r.items[0].t, 1), (int32_t)0xc0000000);
  static const double u[] = {15, 7, 8}, f[] = {-6, 6, -0.0}, s[] = {-1, 7, -8};
  for (size_t k = 0; k < 3; k++) {
    cr_assert_eq(loom_graph_tensor_get_f64(&r.items[1].t, k), u[k], "u4 %zu", k);
    cr_assert_eq(loom_graph_tensor_get_f64(&r.items[2].t, k), f[k], "f4e2m1 %zu", k);
    cr_assert_eq(loom_graph_tensor_get_f64(&r.items[3].t, k), s[k], "i4 %zu", k);
  }
  cr_assert_eq(r.items[4].t.dtype, LOOM_DTYPE_U8);
  cr_assert_eq(bytes(&r.items[4])[0], 1);
  loom_graph_value_free(&r);
  for (size_t i = 0; i < 3; i++) loom_graph_value_free(&args[i]);
  loom_graph_module_destroy(m);
  char *err = parse_err("fn @main(x: Tensor[(2), f32]) -> Tensor[(2), i8] {\n  y = bitcast(x, dtype=i8)\n  return y\n}\n");
  cr_assert(strstr(err, "bitcast: operand 0 has dtype f32 (32 bits), dtype i8 has 8 bits"), "%s", err);
  free(err);
}

LOOM_TEST(graph_lowp, data_movement_and_text_round_trip) {
  const char *text =
      "fn @main(x: Tensor[(2, 3), f8e5m2fnuz], z: Tensor[(3), u4]) -> Object {\n"
      "  t = permute_dims(x, axes=[1, 0])\n"
      "  s = reshape(t, shape=[6])\n"
      "  c = concat(z, z, axis=0)\n"
      "  k = cast(s, dtype=f8e8m0, saturate=false, round_mode=\"nearest\")\n"
      "  r = (s, c, k)\n  return r\n}\n";
  loom_graph_module *m = gt_parse_ok(text);
  char *p1 = gt_print(m);
  cr_assert(strstr(p1, "f8e5m2fnuz") && strstr(p1, "round_mode=\"nearest\"") && strstr(p1, "saturate=false"), "%s", p1);
  loom_graph_module *m2 = gt_parse_ok(p1);
  char *p2 = gt_print(m2);
  cr_assert_str_eq(p1, p2);
  loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F8E5M2FNUZ, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, -4, 5, 6}),
                              gt_tensor(LOOM_DTYPE_U4, 1, (int64_t[]){3}, (double[]){0, 9, 15})};
  loom_graph_value r = eval_ok(m2, 2, args);
  static const double s[] = {1, -4, 2, 5, 3, 6}, c[] = {0, 9, 15, 0, 9, 15};
  for (size_t k = 0; k < 6; k++) {
    cr_assert_eq(loom_graph_tensor_get_f64(&r.items[0].t, k), s[k], "permuted %zu", k);
    cr_assert_eq(loom_graph_tensor_get_f64(&r.items[1].t, k), c[k], "concat %zu", k);
  }
  /* e8m0 keeps the exponent only: |-4| -> 2^2 */
  cr_assert_eq(loom_graph_tensor_get_f64(&r.items[2].t, 1), 4);
  loom_graph_value_free(&r);
  for (size_t i = 0; i < 2; i++) loom_graph_value_free(&args[i]);
  free(p1);
  free(p2);
  loom_graph_module_destroy(m);
  loom_graph_module_destroy(m2);
}

LOOM_TEST(graph_lowp, arithmetic_refuses_them) {
  char *err = parse_err("fn @main(x: Tensor[(2), i4]) -> Tensor[(2), i4] {\n  y = add(x, x)\n  return y\n}\n");
  cr_assert(strstr(err, "add: operand 0 has dtype i4, which only data movement and cast accept"), "%s", err);
  free(err);
  err = parse_err("fn @main() -> Tensor[(2), f8e4m3fn] {\n  y = zeros(shape=[2], dtype=f8e4m3fn)\n  return y\n}\n");
  cr_assert(strstr(err, "zeros: result dtype f8e4m3fn is accepted only by data movement and cast"), "%s", err);
  free(err);
  err = parse_err("fn @main(x: Tensor[(2), f32]) -> Tensor[(2), f8e8m0] {\n"
                  "  y = cast(x, dtype=f8e8m0, round_mode=\"sideways\")\n  return y\n}\n");
  cr_assert(strstr(err, "round_mode \"sideways\" is not one of"), "%s", err);
  free(err);
}

/* float8 / float4, e8m0 and the 4- and 2-bit integers are legalized (storage types in
 * programs), and so are casts with saturate=false (since issue 22's conformance work): nothing
 * stays an operator. */
LOOM_TEST(graph_lowp, legalization_takes_e8m0_and_unsaturated_casts) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(n), f32]) -> Tensor[(n), f32] {\n"
                                     "  q = cast(x, dtype=f8e8m0)\n  r = cast(x, dtype=f8e5m2, saturate=false)\n"
                                     "  s = cast(x, dtype=f8e4m3fn)\n  y = cast(s, dtype=f32)\n  return y\n}\n");
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  size_t done = 9, kept = 9;
  loom_status st = loom_graph_legalize(m, &dl, &done, &kept);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  cr_assert_eq(done, 4, "%zu legalized", done);
  cr_assert_eq(kept, 0, "%zu kept", kept);
  cr_assert(dl.items.len == 0, "%zu diagnostics", (size_t)dl.items.len);
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(m);
}

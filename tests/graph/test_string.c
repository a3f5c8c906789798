/* test_string.c — string tensors on the reference interpreter (graph/op_string.c, docs/ir.md
 * "Strings"): equal, string_concat, string_split, string_normalize, regex_full_match and
 * label_encode and cast to / from strings on hand-computed cases (empty strings, 0-element and 0-d tensors, broadcasting,
 * UTF-8), the STRS attribute through the printer and the parser, and the refusals: a string
 * operand of an op that takes numbers, RE2 features POSIX lacks, invalid UTF-8, a compile. */
#include "tests/graph/graph_test_util.h"

/* A string tensor of the given shape holding strs[] (NUL-terminated). */
static loom_graph_value st_tensor(int nd, const int64_t *shape, const char *const *strs) {
  loom_graph_value v;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_STRING, nd, shape, &v));
  for (size_t i = 0; i < v.t.numel; i++) cr_assert(!loom_graph_tensor_set_str(&v.t, i, strs[i], strlen(strs[i])));
  return v;
}

/* v is a string tensor of shape[0..nd) holding want[]. */
static void st_expect(const loom_graph_value *v, int nd, const int64_t *shape, const char *const *want) {
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR);
  cr_assert_eq(v->t.dtype, LOOM_DTYPE_STRING, "dtype %s", loom_dtype_name(v->t.dtype));
  cr_assert_eq(v->t.ndim, nd, "rank %d vs %d", v->t.ndim, nd);
  for (int i = 0; i < nd; i++) cr_assert_eq(v->t.shape[i], shape[i], "axis %d: %lld", i, (long long)v->t.shape[i]);
  for (size_t i = 0; i < v->t.numel; i++) {
    loom_str s = loom_graph_tensor_get_str(&v->t, i);
    cr_assert(s.len == strlen(want[i]) && (!s.len || !memcmp(s.data, want[i], s.len)), "element %zu: \"%.*s\", want \"%s\"",
              i, (int)s.len, s.data ? s.data : "", want[i]);
  }
}

/* Asserts that parsing `text` fails with a message holding `needle`. */
static void parse_err(const char *text, const char *needle) {
  char *err = NULL;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert_null(m, "parsed, should have failed (%s)", needle);
  cr_assert(err && strstr(err, needle), "message lacks '%s': %s", needle, err ? err : "(none)");
  free(err);
}

LOOM_TEST(graph_string, concat_and_equal_broadcast) {
  loom_graph_module *m = gt_parse_ok("fn @main(a: Tensor[(3,), string], b: Tensor[(1,), string]) -> Object {\n"
                                     "  c = string_concat(a, b)\n  e = equal(a, b)\n  r = (c, e)\n  return r\n}\n");
  loom_graph_value a[2] = {st_tensor(1, (int64_t[]){3}, (const char *[]){"cat", "", "\xe7\x9a\x84"}),
                           st_tensor(1, (int64_t[]){1}, (const char *[]){"s"})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  st_expect(&r.items[0], 1, (int64_t[]){3}, (const char *[]){"cats", "s", "\xe7\x9a\x84s"});
  gt_expect_values(&r.items[1], 1, (int64_t[]){3}, (double[]){0, 0, 0}, 0);
  loom_graph_value_free(&r);
  /* equal holds where the bytes agree; "" == "" */
  loom_graph_value_free(&a[1]);
  a[1] = st_tensor(1, (int64_t[]){1}, (const char *[]){""});
  r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r.items[1], 1, (int64_t[]){3}, (double[]){0, 1, 0}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);

  /* 0-d and 0-element operands */
  m = gt_parse_ok("fn @main(a: Tensor[(), string], b: Tensor[(0,), string]) -> Object {\n"
                  "  c = string_concat(a, a)\n  d = string_concat(a, b)\n  r = (c, d)\n  return r\n}\n");
  loom_graph_value z[2] = {st_tensor(0, NULL, (const char *[]){"ab"}), st_tensor(1, (int64_t[]){0}, NULL)};
  r = gt_eval_ok(m, 2, z, NULL);
  st_expect(&r.items[0], 0, NULL, (const char *[]){"abab"});
  st_expect(&r.items[1], 1, (int64_t[]){0}, NULL);
  loom_graph_value_free(&r);
  gt_free_args(z, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_string, split_whitespace_delimiter_maxsplit) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(2, 2), string]) -> Object {\n"
                                     "  w = string_split(x)\n  d = string_split(x, delimiter=\"-\")\n"
                                     "  k = string_split(x, maxsplit=1)\n  r = (w, d, k)\n  return r\n}\n");
  loom_graph_value x = st_tensor(2, (int64_t[]){2, 2}, (const char *[]){"  a  b c ", "", "x--y", "one"});
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  /* whitespace runs separate; "" has no pieces */
  st_expect(&r.items[0].items[0], 3, (int64_t[]){2, 2, 3}, (const char *[]){"a", "b", "c", "", "", "", "x--y", "", "", "one", "", ""});
  gt_expect_values(&r.items[0].items[1], 2, (int64_t[]){2, 2}, (double[]){3, 0, 1, 1}, 0);
  /* a delimiter keeps empty pieces; "" is one empty piece */
  st_expect(&r.items[1].items[0], 3, (int64_t[]){2, 2, 3},
            (const char *[]){"  a  b c ", "", "", "", "", "", "x", "", "y", "one", "", ""});
  gt_expect_values(&r.items[1].items[1], 2, (int64_t[]){2, 2}, (double[]){1, 1, 3, 1}, 0);
  /* maxsplit 1: the rest (trailing whitespace dropped) is the last piece */
  st_expect(&r.items[2].items[0], 3, (int64_t[]){2, 2, 2}, (const char *[]){"a", "b c", "", "", "x--y", "", "one", ""});
  gt_expect_values(&r.items[2].items[1], 2, (int64_t[]){2, 2}, (double[]){2, 0, 1, 1}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_string, normalize_stopwords_and_case) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(1, 4), string]) -> Object {\n"
                                     "  u = string_normalize(x, case=\"UPPER\", stopwords=[\"monday\", \"q\\\"x\\\\\"])\n"
                                     "  s = string_normalize(x, case=\"LOWER\", case_sensitive=true, stopwords=[\"monday\"])\n"
                                     "  a = string_normalize(x, stopwords=[\"MONDAY\", \"Tue\", \"wed\", \"q\\\"x\\\\\"])\n"
                                     "  r = (u, s, a)\n  return r\n}\n");
  loom_graph_value x = st_tensor(2, (int64_t[]){1, 4}, (const char *[]){"Monday", "tue", "Wed", "q\"x\\"});
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  st_expect(&r.items[0], 2, (int64_t[]){1, 2}, (const char *[]){"TUE", "WED"});
  st_expect(&r.items[1], 2, (int64_t[]){1, 4}, (const char *[]){"monday", "tue", "wed", "q\"x\\"});
  /* every element dropped: one empty string stays */
  st_expect(&r.items[2], 2, (int64_t[]){1, 1}, (const char *[]){""});
  loom_graph_value_free(&r);
  /* the printed module parses back with the same escapes */
  char *text = gt_print(m);
  cr_assert(strstr(text, "stopwords=[\"monday\", \"q\\\"x\\\\\"]"), "%s", text);
  loom_graph_module *m2 = gt_parse_ok(text);
  r = gt_eval_ok(m2, 1, &x, NULL);
  st_expect(&r.items[0], 2, (int64_t[]){1, 2}, (const char *[]){"TUE", "WED"});
  loom_graph_value_free(&r);
  free(text);
  loom_graph_module_destroy(m2);
  /* invalid UTF-8 is refused by element */
  loom_graph_value_free(&x);
  x = st_tensor(2, (int64_t[]){1, 4}, (const char *[]){"a", "b", "\xc3", "d"});
  char *msg = gt_eval_err(m, 1, &x);
  cr_assert(strstr(msg, "element 2 of operand 0 ('x') is not valid UTF-8"), "%s", msg);
  free(msg);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
  parse_err("fn @main(x: Tensor[(2, 4), string]) -> Object {\n  y = string_normalize(x)\n  return y\n}\n", "expected (c) or (1, c)");
  parse_err("fn @main(x: Tensor[(4,), string]) -> Object {\n  y = string_normalize(x, case=\"TITLE\")\n  return y\n}\n",
            "is not NONE, LOWER or UPPER");
  parse_err("fn @main(x: Tensor[(4,), string]) -> Object {\n  y = string_normalize(x, stopwords=[\"a\\q\"])\n  return y\n}\n",
            "unknown escape");
  parse_err("fn @main(x: Tensor[(4,), string]) -> Object {\n  y = string_normalize(x, stopwords=[\"a\\x4\"])\n  return y\n}\n",
            "bad \\x escape");
  parse_err("fn @main(x: Tensor[(4,), string]) -> Object {\n  y = string_normalize(x, stopwords=[\"a\\x00\"])\n  return y\n}\n",
            "bad \\x escape");
  parse_err("fn @main(x: Tensor[(4,), string]) -> Object {\n  y = string_normalize(x, stopwords=[\"ab)\n  return y\n}\n",
            "unterminated string");
}

LOOM_TEST(graph_string, regex_full_match_posix) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(5,), string]) -> Object {\n"
                                     "  a = regex_full_match(x, pattern=\"www\\.[\\w.\\-]+\\.\\bcom\\b\")\n"
                                     "  d = regex_full_match(x, pattern=\"[a-z]+\\d{2}\")\n  r = (a, d)\n  return r\n}\n");
  loom_graph_value x = st_tensor(1, (int64_t[]){5}, (const char *[]){"www.go-o.gle.com", "www.bbc.co.uk", "", "ab12", "xwww.a.com"});
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){5}, (double[]){1, 0, 0, 0, 0}, 0);
  gt_expect_values(&r.items[1], 1, (int64_t[]){5}, (double[]){0, 0, 0, 1, 0}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
  parse_err("fn @main(x: Tensor[(5,), string]) -> Object {\n  y = regex_full_match(x, pattern=\"(?i)a\")\n  return y\n}\n",
            "uses (?...) groups and flags, which the POSIX regex engine does not have");
  parse_err("fn @main(x: Tensor[(5,), string]) -> Object {\n  y = regex_full_match(x, pattern=\"a+?\")\n  return y\n}\n",
            "lazy quantifiers");
  parse_err("fn @main(x: Tensor[(5,), string]) -> Object {\n  y = regex_full_match(x, pattern=\"\\pL\")\n  return y\n}\n",
            "the escape \\p");
  parse_err("fn @main(x: Tensor[(5,), string]) -> Object {\n  y = regex_full_match(x, pattern=\"a(\")\n  return y\n}\n",
            "does not compile");
}

LOOM_TEST(graph_string, label_encode) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(2, 3), string]) -> Object {\n"
                                     "  y = label_encode(x, keys=[\"a\", \"b\", \"\"], values=[0, 1, 7], default=42, dtype=i16)\n"
                                     "  z = label_encode(x, keys=[\"a\"], values=[5])\n  r = (y, z)\n  return r\n}\n");
  loom_graph_value x = st_tensor(2, (int64_t[]){2, 3}, (const char *[]){"a", "b", "d", "", "A", "a"});
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  cr_assert_eq(r.items[0].t.dtype, LOOM_DTYPE_I16);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 3}, (double[]){0, 1, 42, 7, 42, 0}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 3}, (double[]){5, -1, -1, -1, -1, 5}, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
  parse_err("fn @main(x: Tensor[(2,), string]) -> Object {\n  y = label_encode(x, keys=[\"a\", \"b\"], values=[1])\n  return y\n}\n",
            "2 keys but 1 values");
  parse_err("fn @main(x: Tensor[(2,), f32]) -> Object {\n  y = label_encode(x, keys=[\"a\"], values=[1])\n  return y\n}\n",
            "operand 0 has dtype f32, expected string");
}

LOOM_TEST(graph_string, numeric_ops_refuse_strings) {
  parse_err("fn @main(x: Tensor[(2,), string]) -> Object {\n  y = reshape(x, shape=[1, 2])\n  return y\n}\n",
            "reshape: operand 0 ('x') is a string tensor, which this operator does not take");
  parse_err("fn @main(x: Tensor[(2,), string]) -> Object {\n  y = add(x, x)\n  return y\n}\n",
            "add: operand 0 ('x') is a string tensor");
  parse_err("fn @main(x: Tensor[(2,), string], y: Tensor[(2,), f32]) -> Object {\n  z = equal(x, y)\n  return z\n}\n",
            "operand 0 has dtype string, operand 1 has dtype f32");
}

LOOM_TEST(graph_string, value_copy_owns_its_bytes) {
  loom_graph_value a = st_tensor(1, (int64_t[]){2}, (const char *[]){"left", ""}), b;
  cr_assert(!loom_graph_value_copy(&a, &b));
  loom_str s0 = loom_graph_tensor_get_str(&a.t, 0), c0 = loom_graph_tensor_get_str(&b.t, 0);
  cr_assert_neq(s0.data, c0.data, "a copy shares the bytes");
  cr_assert(!loom_graph_tensor_set_str(&a.t, 0, "changed", 7));
  loom_graph_value_free(&a); /* b must not read freed bytes (ASan) */
  st_expect(&b, 1, (int64_t[]){2}, (const char *[]){"left", ""});
  loom_graph_value_free(&b);
}

/* cast to string prints as NumPy's str() (ONNX's reference: astype(str)); these are NumPy
 * 2.4's strings for the same values (f32 switches to scientific at 1e6, f16 at 1e3, f64 at 1e16). */
LOOM_TEST(graph_string, cast_numbers_to_and_from_strings) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(20,), string]) -> Object {\n"
                                     "  f = cast(x, dtype=f32)\n  d = cast(x, dtype=f64)\n  h = cast(x, dtype=f16)\n"
                                     "  fs = cast(f, dtype=string)\n  ds = cast(d, dtype=string)\n  hs = cast(h, dtype=string)\n"
                                     "  r = (fs, ds, hs)\n  return r\n}\n");
  static const char *in[20] = {"0.1", " 100.5 ", "1e-5", "-INF", "NaN", "1e20", "123456789", "-0", "3.14159", "1e16",
                               "9999999999999998", "0.0001", "7", "999", "1000", "65504", "0.00011", "1234567.5", "999999", "1e6"};
  static const char *f32[20] = {"0.1", "100.5", "1e-05", "-inf", "nan", "1e+20", "1.2345679e+08", "-0.0", "3.14159", "1e+16",
                                "1e+16", "1e-04", "7.0", "999.0", "1000.0", "65504.0", "0.00011", "1.2345675e+06", "999999.0", "1e+06"};
  static const char *f64[20] = {"0.1", "100.5", "1e-05", "-inf", "nan", "1e+20", "123456789.0", "-0.0", "3.14159", "1e+16",
                                "9999999999999998.0", "0.0001", "7.0", "999.0", "1000.0", "65504.0", "0.00011", "1234567.5",
                                "999999.0", "1000000.0"};
  static const char *f16[20] = {"0.1", "100.5", "1e-05", "-inf", "nan", "inf", "inf", "-0.0", "3.14", "inf", "inf", "0.0001",
                                "7.0", "999.0", "1e+03", "6.55e+04", "0.00011", "inf", "inf", "inf"};
  loom_graph_value x = st_tensor(1, (int64_t[]){20}, in);
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  st_expect(&r.items[0], 1, (int64_t[]){20}, f32);
  st_expect(&r.items[1], 1, (int64_t[]){20}, f64);
  st_expect(&r.items[2], 1, (int64_t[]){20}, f16);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);

  /* integers and bools; "100.5" to an integer truncates (ONNX's Cast); i64 literals exactly */
  m = gt_parse_ok("fn @main(x: Tensor[(4,), string], b: Tensor[(2,), bool], u: Tensor[(1,), u64]) -> Object {\n"
                  "  i = cast(x, dtype=i64)\n  s = cast(i, dtype=string)\n  t = cast(b, dtype=string)\n  v = cast(u, dtype=string)\n"
                  "  r = (i, s, t, v)\n  return r\n}\n");
  loom_graph_value a[3] = {st_tensor(1, (int64_t[]){4}, (const char *[]){"100.5", " -3 ", "9007199254740993", "-7.9"}),
                           gt_tensor(LOOM_DTYPE_BOOL, 1, (int64_t[]){2}, (double[]){1, 0}),
                           gt_tensor(LOOM_DTYPE_U64, 1, (int64_t[]){1}, NULL)};
  ((uint64_t *)a[2].t.data)[0] = UINT64_MAX;
  r = gt_eval_ok(m, 3, a, NULL);
  const int64_t *iv = r.items[0].t.data;
  cr_assert(iv[0] == 100 && iv[1] == -3 && iv[2] == 9007199254740993LL && iv[3] == -7, "%lld %lld %lld %lld", (long long)iv[0],
            (long long)iv[1], (long long)iv[2], (long long)iv[3]);
  st_expect(&r.items[1], 1, (int64_t[]){4}, (const char *[]){"100", "-3", "9007199254740993", "-7"});
  st_expect(&r.items[2], 1, (int64_t[]){2}, (const char *[]){"True", "False"});
  st_expect(&r.items[3], 1, (int64_t[]){1}, (const char *[]){"18446744073709551615"});
  loom_graph_value_free(&r);
  /* text that is not a number is refused naming the element */
  loom_graph_value_free(&a[0]);
  a[0] = st_tensor(1, (int64_t[]){4}, (const char *[]){"1", "2", "12abc", "4"});
  char *msg = gt_eval_err(m, 3, a);
  cr_assert(strstr(msg, "cast: element 2 of 'x', \"12abc\", is not a number"), "%s", msg);
  free(msg);
  gt_free_args(a, 3);
  loom_graph_module_destroy(m);
  parse_err("fn @main(x: Tensor[(2,), string]) -> Object {\n  y = cast(x, dtype=bool)\n  return y\n}\n",
            "a cast from string to bool is not supported");
  parse_err("fn @main(x: Tensor[(2,), f8e4m3fn]) -> Object {\n  y = cast(x, dtype=string)\n  return y\n}\n",
            "a cast from f8e4m3fn to string is not supported");
}

/* test_tp_text.c — tensor-program text: round trips and parse errors. */
#include <stdlib.h>
#include <string.h>

#include "tp_test_util.h"

/* Each program is already in printed form: parse then print must give it back. */
static const char *const canonical[] = {
    "prim @add(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {\n"
    "  for i in 0..n parallel {\n"
    "    for j in 0..m vectorize {\n"
    "      C[i, j] = A[i, j] + B[i, j]\n"
    "    }\n"
    "  }\n"
    "}\n",
    "prim @rowsum(A: Buffer[(n, k), f32], C: Buffer[(n,), f32]) {\n"
    "  for i in 0..n {\n"
    "    C[i] = 0.0\n"
    "    for r in 0..k reduce {\n"
    "      C[i] = C[i] + A[i, r]\n"
    "    }\n"
    "  }\n"
    "}\n",
    "prim @mixed(X: Buffer[(n,), f16], Y: Buffer[(n,), i32], Z: Buffer[(n,), f16], s: i64) {\n"
    "  alloc T: Local[(4,), f16]\n"
    "  for i in 0..n {\n"
    "    let t: f16 = X[i] * 2.0f16 - -1.5f16\n"
    "    if i < s && Y[i] >= 3i32 {\n"
    "      Z[i] = select(Y[i] == 0i32, t, exp(t))\n"
    "    } else {\n"
    "      Z[i] = f16(Y[i]) / (t + 1.0f16)\n"
    "    }\n"
    "  }\n"
    "}\n",
    "prim @bits(X: Buffer[(n,), f32], Y: Buffer[(n,), i32], Z: Buffer[(n,), f64], W: Buffer[(n,), f16]) {\n"
    "  for i in 0..n {\n"
    "    Y[i] = bitcast(X[i], 0i32)\n"
    "    X[i] = bitcast(Y[i] + 1i32, 0.0)\n"
    "    Z[i] = bitcast(i, 0.0f64)\n"
    "    W[i] = bitcast(i16(Y[i]), 0.0f16)\n"
    "  }\n"
    "}\n",
    "prim @pf(A: Buffer[(n, k), f32], C: Buffer[(n,), f32]) {\n"
    "  for i in 0..n {\n"
    "    C[i] = 0.0\n"
    "    for r in 0..k reduce {\n"
    "      prefetch A[i, min(k - 1, r + 16)]\n"
    "      prefetch_l2 A[min(n - 1, i + 1), r]\n"
    "      C[i] = C[i] + A[i, r]\n"
    "    }\n"
    "  }\n"
    "}\n",
    "prim @staged(X: Buffer[(n,), f32], Y: Buffer[(n,), f32]) {\n"
    "  alloc S: Local[(64,), f32, uninit]\n"
    "  for i in 0..min(n, 64) {\n"
    "    S[i] = X[i] * 2.0\n"
    "  }\n"
    "  for j in 0..min(n, 64) {\n"
    "    Y[j] = S[j]\n"
    "  }\n"
    "}\n",
    "prim @gather(D: Buffer[(v, d), f32], I: Buffer[(n,), i64], O: Buffer[(n, d), f32]) {\n"
    "  for i in 0..n parallel {\n"
    "    for j in 0..d {\n"
    "      O[i, j] = D[I[i], j]\n"
    "    }\n"
    "  }\n"
    "}\n",
};

LOOM_TEST(tp_text, canonical_programs_round_trip) {
  for (size_t k = 0; k < sizeof canonical / sizeof canonical[0]; k++) {
    tp_fixture fx;
    loom_status s = tp_parse(&fx, canonical[k]);
    cr_assert_null(s, "program %zu: %s", k, loom_status_text(s, 0));
    cr_assert_null(loom_tp_verify(fx.cx, fx.f));
    char *out = tp_print(fx.f);
    cr_assert_str_eq(out, canonical[k]);
    free(out);
    tp_fixture_free(&fx);
  }
}

LOOM_TEST(tp_text, index_arithmetic_folds_into_one_symbolic_expression) {
  tp_fixture fx;
  loom_status s = tp_parse(&fx,
                           "prim @p(A: Buffer[(4*n,), f32], B: Buffer[(n,), f32]) {\n"
                           "  for i in 0..n { B[i] = A[i * 4 + 2 - 2] + A[(i + i) * 2 + 3 - i * 4] }\n"
                           "}\n");
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  char *out = tp_print(fx.f);
  cr_assert(strstr(out, "B[i] = A[4*i] + A[3]") != NULL, "%s", out);
  free(out);
  tp_fixture_free(&fx);
}

static void expect_error(const char *text, const char *where, const char *message) {
  tp_fixture fx;
  loom_status s = tp_parse(&fx, text);
  cr_assert_not_null(s, "expected an error for:\n%s", text);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_PARSE_ERROR);
  const char *msg = loom_status_message(s);
  cr_assert(strstr(msg, where) != NULL, "location '%s' missing in: %s", where, msg);
  cr_assert(strstr(msg, message) != NULL, "message '%s' missing in: %s", message, msg);
  cr_assert(strstr(msg, "^") != NULL, "caret missing in: %s", msg);
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_text, errors_are_located) {
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[0, 1] = 1.0\n}\n", "test.loom:2:3:",
               "buffer 'A' has 1 dimension, indexed with 2");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[k] = 1.0\n}\n", "test.loom:2:5:", "unknown name 'k'");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  for i in 0..n {\n    for i in 0..n { A[i] = 1.0 }\n  }\n}\n",
               "test.loom:3:9:", "'i' is already defined");
  expect_error("prim @p(A: Buffer[(n,), f33]) { }", "test.loom:1:25:", "expected a dtype");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[0] = frobnicate(1.0)\n}\n", "test.loom:2:10:",
               "unknown function 'frobnicate'");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  for i in 1..n { }\n}\n", "test.loom:2:12:", "loops start at 0");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[0] = 1.0\n", "test.loom:3:1:", "expected '}'");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[0] = 99999999999999999999\n}\n", "test.loom:2:10:",
               "does not fit in 64 bits");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  for i in 0..A[0] { }\n}\n", "test.loom:2:15:",
               "a loop extent must be a symbolic integer expression");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  for i in 0..n { A[i] = bitcast(1i32, f32(i)) }\n}\n", "test.loom:2:26:",
               "bitcast takes a literal naming the result dtype");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  A[0] = 1.0 $\n}\n", "test.loom:2:14:", "unexpected character");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  for i in 0..n { prefetch i[0] }\n}\n", "test.loom:2:28:",
               "prefetch: 'i' is not a buffer");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  prefetch A[0, 1]\n}\n", "test.loom:2:12:",
               "buffer 'A' has 1 dimension, indexed with 2");
  expect_error("prim @p(A: Buffer[(n,), f32]) {\n  alloc S: Local[(4,), f32, zeroed]\n}\n", "test.loom:2:29:",
               "expected `uninit` after a Local's dtype");
}

LOOM_TEST(tp_text, truncations_of_a_valid_program_never_crash) {
  const char *text = canonical[2];
  size_t n = strlen(text) - 1; /* the last byte is a newline: cutting it leaves a valid program */
  for (size_t cut = 0; cut < n; cut++) {
    char *prefix = strndup(text, cut);
    tp_fixture fx;
    loom_status s = tp_parse(&fx, prefix);
    cr_assert_not_null(s, "a truncated program (%zu bytes) must not parse", cut);
    loom_status_free(s);
    tp_fixture_free(&fx);
    free(prefix);
  }
}

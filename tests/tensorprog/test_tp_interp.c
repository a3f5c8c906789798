/* test_tp_interp.c — the tensor-program interpreter against hand-computed results,
 * on shapes including 0, 1, primes and larger values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test_util.h"

static void parse_ok(tp_fixture *fx, const char *text) {
  loom_status s = tp_parse(fx, text);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_verify(fx->cx, fx->f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
}

static const int64_t sizes[] = {0, 1, 2, 7, 13, 64};

LOOM_TEST(tp_interp, elementwise_add_on_many_shapes) {
  tp_fixture fx;
  parse_ok(&fx, "prim @add(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {\n"
                "  for i in 0..n parallel { for j in 0..m vectorize { C[i, j] = A[i, j] + B[i, j] } }\n}\n");
  for (size_t a = 0; a < 6; a++) {
    for (size_t b = 0; b < 6; b++) {
      int64_t shape[2] = {sizes[a], sizes[b]};
      size_t n = (size_t)(shape[0] * shape[1]);
      float *A = calloc(n + 1, 4), *B = calloc(n + 1, 4), *C = calloc(n + 1, 4);
      for (size_t i = 0; i < n; i++) {
        A[i] = (float)i * 0.5f;
        B[i] = 3.0f - (float)i;
      }
      loom_tp_arg args[3] = {{A, shape, 0}, {B, shape, 0}, {C, shape, 0}};
      loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 3);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
      for (size_t i = 0; i < n; i++) cr_assert_float_eq(C[i], A[i] + B[i], 0);
      free(A);
      free(B);
      free(C);
    }
  }
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, matmul_with_reduction) {
  tp_fixture fx;
  parse_ok(&fx, "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
                "  for i in 0..m { for j in 0..n {\n"
                "    C[i, j] = 0.0\n"
                "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
                "  } }\n}\n");
  int64_t m = 5, k = 7, n = 3;
  float A[35], B[21], C[15];
  for (int i = 0; i < 35; i++) A[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < 21; i++) B[i] = (float)(i % 3) + 0.25f;
  int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
  loom_tp_arg args[3] = {{A, sa, 0}, {B, sb, 0}, {C, sc, 0}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 3));
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float want = 0;
      for (int r = 0; r < k; r++) want += A[i * k + r] * B[r * n + j];
      cr_assert_float_eq(C[i * n + j], want, 1e-5, "C[%d, %d]", i, j);
    }
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, lets_ifs_selects_casts_and_locals) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(X: Buffer[(n,), f32], Y: Buffer[(n,), i32], Z: Buffer[(n,), f64]) {\n"
                "  alloc T: Local[(2,), i32]\n"
                "  T[0] = 10i32\n"
                "  T[1] = T[0] * 3i32\n"
                "  for i in 0..n {\n"
                "    let t: f32 = X[i] * 2.0 + 1.0\n"
                "    if i % 2 == 0 {\n"
                "      Z[i] = f64(select(t > 3.0, t, -t))\n"
                "    } else {\n"
                "      Z[i] = f64(Y[i] + T[1]) / 4.0f64\n"
                "    }\n"
                "  }\n}\n");
  int64_t shape[1] = {5};
  float X[5] = {0, 1, 2, -3, 4};
  int32_t Y[5] = {1, 2, 3, 4, 5};
  double Z[5];
  loom_tp_arg args[3] = {{X, shape, 0}, {Y, shape, 0}, {Z, shape, 0}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 3));
  double want[5] = {-1.0, (2 + 30) / 4.0, 5.0, (4 + 30) / 4.0, 9.0};
  for (int i = 0; i < 5; i++) cr_assert_float_eq(Z[i], want[i], 0, "Z[%d] = %g", i, Z[i]);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, integer_semantics_wrap_and_floor) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(A: Buffer[(n,), i32], B: Buffer[(n,), i32], Q: Buffer[(n,), i32], F: Buffer[(n,), i32],"
                " W: Buffer[(n,), i32]) {\n"
                "  for i in 0..n { Q[i] = A[i] / B[i]\n F[i] = floordiv(A[i], B[i])\n W[i] = A[i] * 65536i32 }\n}\n");
  int64_t shape[1] = {3};
  int32_t A[3] = {-7, 7, 65536}, B[3] = {2, -2, 3}, Q[3], F[3], W[3];
  loom_tp_arg args[5] = {{A, shape, 0}, {B, shape, 0}, {Q, shape, 0}, {F, shape, 0}, {W, shape, 0}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 5));
  cr_assert_eq(Q[0], -3);
  cr_assert_eq(F[0], -4);
  cr_assert_eq(Q[1], -3);
  cr_assert_eq(F[1], -4);
  cr_assert_eq(W[2], 0, "65536 * 65536 wraps to 0 in i32");
  B[0] = 0;
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 5);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "integer / by zero") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, out_of_bounds_is_an_error_naming_buffer_axis_index) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                "  for i in 0..n { B[i] = A[i + 1] }\n}\n");
  int64_t shape[1] = {4};
  float A[4] = {0}, B[4];
  loom_tp_arg args[2] = {{A, shape, 0}, {B, shape, 0}};
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
  cr_assert_not_null(s);
  cr_assert_str_eq(loom_status_message(s), "program @p: buffer 'A' axis 0: index 4 is outside [0, 4)");
  loom_status_free(s);
  tp_fixture_free(&fx);
}

/* A prefetch changes nothing, but its element must exist: the hint the schedule makes is
 * clamped into the buffer, and the interpreter checks that it is. */
LOOM_TEST(tp_interp, prefetch_has_no_effect_and_its_index_is_bounds_checked) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(A: Buffer[(n,), f32], B: Buffer[(n,), f32], d: i64) {\n"
                "  for i in 0..n { prefetch A[min(i + d, n - 1)]\n B[i] = A[i] }\n}\n");
  int64_t shape[1] = {4};
  float A[4] = {1, 2, 3, 4}, B[4] = {0};
  loom_tp_arg args[3] = {{A, shape, 0}, {B, shape, 0}, {NULL, NULL, 2}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 3));
  for (int i = 0; i < 4; i++) cr_assert_eq(B[i], A[i]);
  tp_fixture_free(&fx);
  parse_ok(&fx, "prim @p(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                "  for i in 0..n { prefetch A[i + 1]\n B[i] = A[i] }\n}\n");
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
  cr_assert_not_null(s);
  cr_assert_str_eq(loom_status_message(s), "program @p: buffer 'A' axis 0: index 4 is outside [0, 4)");
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, shapes_bind_symbols_and_mismatches_are_named) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(A: Buffer[(n, 2*n + 1), f32], B: Buffer[(n,), f32]) {\n"
                "  for i in 0..n { B[i] = A[i, 2*i] }\n}\n");
  float A[3 * 7] = {0}, B[3];
  int64_t sa[2] = {3, 7}, sb[1] = {3};
  loom_tp_arg args[2] = {{A, sa, 0}, {B, sb, 0}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 2));
  sa[1] = 8;
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
  cr_assert_not_null(s);
  const char *msg = loom_status_message(s);
  cr_assert(strstr(msg, "buffer 'A'") && strstr(msg, "axis 1") && strstr(msg, "= 7") && strstr(msg, "got 8"), "%s", msg);
  loom_status_free(s);
  sa[1] = 7;
  sb[0] = 2;
  s = loom_tp_interpret(fx.cx, fx.f, args, 2);
  cr_assert_not_null(s, "B's extent must equal n = 3");
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_interp, math_intrinsics_match_libm) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(X: Buffer[(n,), f64], Y: Buffer[(n, 8), f64]) {\n"
                "  for i in 0..n {\n"
                "    Y[i, 0] = exp(X[i])\n    Y[i, 1] = tanh(X[i])\n    Y[i, 2] = erf(X[i])\n"
                "    Y[i, 3] = sigmoid(X[i])\n    Y[i, 4] = sqrt(abs(X[i]))\n    Y[i, 5] = round(X[i])\n"
                "    Y[i, 6] = pow(abs(X[i]), 1.5f64)\n    Y[i, 7] = fma(X[i], X[i], 1.0f64)\n"
                "  }\n}\n");
  double X[4] = {-2.5, -0.5, 0.5, 3.25}, Y[32];
  int64_t sx[1] = {4}, sy[2] = {4, 8};
  loom_tp_arg args[2] = {{X, sx, 0}, {Y, sy, 0}};
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 2));
  for (int i = 0; i < 4; i++) {
    double x = X[i];
    double want[8] = {exp(x), tanh(x), erf(x), 1 / (1 + exp(-x)), sqrt(fabs(x)), nearbyint(x), pow(fabs(x), 1.5), x * x + 1};
    for (int k = 0; k < 8; k++) cr_assert_float_eq(Y[i * 8 + k], want[k], 1e-15, "x=%g k=%d", x, k);
  }
  cr_assert_float_eq(Y[0 * 8 + 5], -2.0, 0, "round half to even");
  cr_assert_float_eq(Y[1 * 8 + 5], -0.0, 0);
  tp_fixture_free(&fx);
}

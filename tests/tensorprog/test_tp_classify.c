/* test_tp_classify.c — pattern classification, each kind and programs that must be opaque. */
#include <string.h>

#include "tensorprog/tp_pattern.h"
#include "tp_test_util.h"

static void expect_pattern(const char *text, loom_tp_pattern want) {
  tp_fixture fx;
  loom_status s = tp_parse(&fx, text);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_tp_class c = loom_tp_classify(fx.f);
  cr_assert_eq(c.pattern, want, "got %s (%s), want %s for:\n%s", loom_tp_pattern_name(c.pattern), c.reason,
               loom_tp_pattern_name(want), text);
  cr_assert_not_null(c.reason);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_classify, each_kind) {
  expect_pattern("prim @p(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {\n"
                 "  for i in 0..n { for j in 0..m { C[i, j] = exp(A[i, j]) * B[i, j] } } }",
                 LOOM_TP_PATTERN_ELEMWISE);
  expect_pattern("prim @p(A: Buffer[(n, m), f32], B: Buffer[(m,), f32], Z: Buffer[(1, m), f32], C: Buffer[(n, m), f32]) {\n"
                 "  for i in 0..n { for j in 0..m { C[i, j] = A[i, j] + B[j] + Z[0, j] } } }",
                 LOOM_TP_PATTERN_BROADCAST);
  expect_pattern("prim @p(A: Buffer[(n, m), f32], C: Buffer[(m, n), f32]) {\n"
                 "  for j in 0..m { for i in 0..n { C[j, i] = A[i, j] } } }",
                 LOOM_TP_PATTERN_INJECTIVE);
  expect_pattern("prim @p(D: Buffer[(v, d), f32], I: Buffer[(n,), i64], O: Buffer[(n, d), f32]) {\n"
                 "  for i in 0..n { for j in 0..d { O[i, j] = D[I[i], j] } } }",
                 LOOM_TP_PATTERN_INJECTIVE);
  expect_pattern("prim @p(A: Buffer[(n, k), f32], C: Buffer[(n,), f32]) {\n"
                 "  for i in 0..n { C[i] = 0.0\n for r in 0..k reduce { C[i] = C[i] + A[i, r] } } }",
                 LOOM_TP_PATTERN_REDUCTION);
  expect_pattern("prim @p(A: Buffer[(n, k), f32], C: Buffer[(n,), f32]) {\n"
                 "  for i in 0..n { C[i] = -inf\n for r in 0..k reduce { C[i] = max(C[i], A[i, r]) } } }",
                 LOOM_TP_PATTERN_REDUCTION);
  expect_pattern("prim @p(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
                 "  for i in 0..m { for j in 0..n { C[i, j] = 0.0\n"
                 "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] } } } }",
                 LOOM_TP_PATTERN_OUT_FUSABLE);
  /* the int8 matmul reading u8 quads in place (dot4 of a word made of four loads): a producer
   * fused into A would be recomputed per column panel */
  expect_pattern("prim @p(A: Buffer[(m, 8), u8], B: Buffer[(2, n), i32], C: Buffer[(m, n), i32]) {\n"
                 "  for i in 0..m { for j in 0..n { C[i, j] = 0i32\n"
                 "    for r in 0..2 reduce { C[i, j] = C[i, j] + dot4(i32(A[i, 4*r]) || shl(i32(A[i, 4*r + 1]), 8i32) ||\n"
                 "      shl(i32(A[i, 4*r + 2]), 16i32) || shl(i32(A[i, 4*r + 3]), 24i32), B[r, j]) } } } }",
                 LOOM_TP_PATTERN_OUT_FUSABLE);
  /* dot2 of i16 pair words (the int8 matmul without VNNI): no producer either */
  expect_pattern("prim @p(A: Buffer[(m, k), i32], B: Buffer[(k, n), i32], C: Buffer[(m, n), i32]) {\n"
                 "  for i in 0..m { for j in 0..n { C[i, j] = 0i32\n"
                 "    for r in 0..k reduce { C[i, j] = C[i, j] + dot2(A[i, r], B[r, j]) } } } }",
                 LOOM_TP_PATTERN_OUT_FUSABLE);
}

LOOM_TEST(tp_classify, opaque_programs) {
  /* scatter: data-dependent store index */
  expect_pattern("prim @p(I: Buffer[(n,), i64], U: Buffer[(n,), f32], O: Buffer[(m,), f32]) {\n"
                 "  for i in 0..n { O[I[i]] = U[i] } }",
                 LOOM_TP_PATTERN_OPAQUE);
  /* two outputs */
  expect_pattern("prim @p(A: Buffer[(n,), f32], B: Buffer[(n,), f32], C: Buffer[(n,), f32]) {\n"
                 "  for i in 0..n { B[i] = A[i]\n C[i] = A[i] } }",
                 LOOM_TP_PATTERN_OPAQUE);
  /* local buffer */
  expect_pattern("prim @p(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                 "  alloc T: Local[(1,), f32]\n for i in 0..n { T[0] = A[i]\n B[i] = T[0] } }",
                 LOOM_TP_PATTERN_OPAQUE);
  /* store index is not the loop variable (strided write) */
  expect_pattern("prim @p(A: Buffer[(n,), f32], B: Buffer[(2*n,), f32]) {\n"
                 "  for i in 0..n { B[2*i] = A[i] } }",
                 LOOM_TP_PATTERN_OPAQUE);
  /* no store at all */
  expect_pattern("prim @p(A: Buffer[(n,), f32]) { }", LOOM_TP_PATTERN_OPAQUE);
}

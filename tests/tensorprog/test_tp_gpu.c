/* test_tp_gpu.c — the GPU forms of the tensor-program IR: gpu_block / gpu_thread loops,
 * Shared allocations and barriers through the printer, the parser, the verifier (one
 * negative test per rule, checked by its message) and the interpreter (thread loops run in
 * order, a thread loop with barriers phase by phase). */
#include <stdlib.h>
#include <string.h>

#include "tp_test_util.h"

/* Reverses each block of 8 elements through shared memory: every thread writes its
 * element, the barrier, then every thread reads its mirror. Without the barrier honoured,
 * thread 0 would read S[7] before thread 7 wrote it. */
static const char reverse_text[] =
    "prim @rev8(A: Buffer[(8*nb,), f32], Y: Buffer[(8*nb,), f32]) {\n"
    "  for b in 0..nb gpu_block {\n"
    "    alloc S: Shared[(8,), f32]\n"
    "    for t in 0..8 gpu_thread {\n"
    "      S[t] = A[8*b + t]\n"
    "      barrier\n"
    "      Y[8*b + t] = S[-t + 7]\n"
    "    }\n"
    "  }\n"
    "}\n";

static void parse_ok(tp_fixture *fx, const char *text) {
  loom_status s = tp_parse(fx, text);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_verify(fx->cx, fx->f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
}

LOOM_TEST(tp_gpu, gpu_forms_print_and_parse_back) {
  tp_fixture fx;
  parse_ok(&fx, reverse_text);
  char *text = tp_print(fx.f);
  cr_assert_str_eq(text, reverse_text);
  tp_fixture fx2;
  parse_ok(&fx2, text);
  char *again = tp_print(fx2.f);
  cr_assert_str_eq(again, text);
  free(text);
  free(again);
  tp_fixture_free(&fx);
  tp_fixture_free(&fx2);
}

LOOM_TEST(tp_gpu, barriers_are_honoured_by_the_interpreter) {
  tp_fixture fx;
  parse_ok(&fx, reverse_text);
  for (int64_t nb = 0; nb <= 3; nb++) {
    int64_t n = 8 * nb;
    float A[24] = {0}, Y[24] = {0};
    for (int64_t i = 0; i < n; i++) A[i] = (float)i + 0.5f;
    loom_tp_arg args[2] = {{A, &n, 0}, {Y, &n, 0}};
    loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (int64_t i = 0; i < n; i++) cr_assert_float_eq(Y[i], A[(i / 8) * 8 + 7 - i % 8], 0, "nb=%lld i=%lld", (long long)nb, (long long)i);
  }
  tp_fixture_free(&fx);
}

/* A row sum with a shared-memory tree: 4 threads, strided partial sums, then two halving
 * steps, each a thread loop (a thread loop ends at an implicit barrier). */
LOOM_TEST(tp_gpu, shared_tree_reduction_over_thread_loops) {
  tp_fixture fx;
  parse_ok(&fx, "prim @rowsum(A: Buffer[(m, n), f32], Y: Buffer[(m,), f32]) {\n"
                "  for b in 0..m gpu_block {\n"
                "    alloc P: Shared[(4,), f32]\n"
                "    for t in 0..4 gpu_thread {\n"
                "      P[t] = 0.0\n"
                "      for r in 0..(n + 3 - t) // 4 reduce { P[t] = P[t] + A[b, 4*r + t] }\n"
                "    }\n"
                "    for t2 in 0..2 gpu_thread { P[t2] = P[t2] + P[t2 + 2] }\n"
                "    for t3 in 0..1 gpu_thread { Y[b] = P[0] + P[1] }\n"
                "  }\n"
                "}\n");
  static const int64_t ns[] = {0, 1, 2, 3, 5, 13, 64};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    int64_t shape[2] = {3, ns[k]};
    float A[3 * 64], Y[3];
    for (int64_t i = 0; i < 3 * ns[k]; i++) A[i] = (float)(i % 7) - 2.0f;
    loom_tp_arg args[2] = {{A, shape, 0}, {Y, shape, 0}};
    loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (int64_t i = 0; i < 3; i++) {
      float want = 0;
      for (int64_t j = 0; j < ns[k]; j++) want += A[i * ns[k] + j];
      cr_assert_float_eq(Y[i], want, 1e-4, "n=%lld row %lld", (long long)ns[k], (long long)i);
    }
  }
  tp_fixture_free(&fx);
}

/* Parses `body` inside a two-buffer program and expects the verifier to refuse it with a
 * message containing `message`. */
static void expect_refused(const char *body, const char *message) {
  char text[2048];
  snprintf(text, sizeof text, "prim @p(A: Buffer[(n,), f32], Y: Buffer[(n,), f32]) {\n%s\n}\n", body);
  tp_fixture fx;
  loom_status s = tp_parse(&fx, text);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_verify(fx.cx, fx.f);
  cr_assert_not_null(s, "expected a refusal: %s", message);
  cr_assert(strstr(loom_status_message(s), message) != NULL, "'%s' not in: %s", message, loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_gpu, verifier_rules_each_refused_by_name) {
  expect_refused("for t in 0..n gpu_thread { Y[t] = A[t] }", "gpu_thread loop 't' outside a gpu_block loop");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { for u in 0..1 gpu_thread { Y[t] = A[t] } } }",
                 "gpu_thread loop 'u' inside another gpu_thread loop");
  expect_refused("for b in 0..1 gpu_block { for c in 0..n gpu_block { for t in 0..1 gpu_thread { Y[c] = A[c] } } }",
                 "gpu_block loop 'c' inside another GPU loop");
  expect_refused("for b in 0..n gpu_block reduce { for t in 0..1 gpu_thread { Y[0] = A[b] } }",
                 "loop 'b' is gpu_block and reduce");
  expect_refused("for b in 0..n gpu_block { Y[b] = A[b] }",
                 "store to 'Y' in a gpu_block outside every gpu_thread loop");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { alloc S: Shared[(4,), f32]\n S[0] = A[t] } }",
                 "Shared alloc 'S' inside a gpu_thread loop");
  expect_refused("alloc S: Shared[(4,), f32]", "Shared alloc 'S' outside a gpu_block loop");
  expect_refused("for b in 0..1 gpu_block { alloc S: Shared[(n,), f32]\n for t in 0..n gpu_thread { S[t] = A[t] } }",
                 "Shared alloc 'S' axis 0 is not a constant");
  expect_refused("for b in 0..1 gpu_block { barrier\n for t in 0..n gpu_thread { Y[t] = A[t] } }",
                 "a barrier must be an item of a gpu_thread loop's body");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { if t < 3 { barrier } } }",
                 "a barrier must be an item of a gpu_thread loop's body");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { for r in 0..2 { barrier } } }",
                 "a barrier must be an item of a gpu_thread loop's body");
  expect_refused("for i in 0..n { barrier }", "a barrier must be an item of a gpu_thread loop's body");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { let x: f32 = A[t]\n barrier\n Y[t] = x } }",
                 "let 'x' in a gpu_thread loop body with a barrier");
}

LOOM_TEST(tp_gpu, out_of_bounds_shared_access_is_an_error) {
  tp_fixture fx;
  parse_ok(&fx, "prim @p(A: Buffer[(n,), f32]) {\n"
                "  for b in 0..1 gpu_block {\n"
                "    alloc S: Shared[(4,), f32]\n"
                "    for t in 0..n gpu_thread { S[t] = A[t] }\n"
                "  }\n"
                "}\n");
  int64_t n = 5;
  float A[5] = {0};
  loom_tp_arg args[1] = {{A, &n, 0}};
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 1);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "'S'") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

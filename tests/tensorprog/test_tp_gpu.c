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

/* A row sum and a scaled copy dealt to a warp's lanes: the reduce loop's accumulator
 * combined across the lanes, the copy spatial. */
static const char lanes_text[] =
    "prim @rows(A: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
    "  for b in 0..m gpu_block {\n"
    "    for lane in 0..32 gpu_thread {\n"
    "      alloc S: Local[(1,), f32]\n"
    "      S[0] = 0.0\n"
    "      for r in 0..n gpu_lanes reduce {\n"
    "        S[0] = S[0] + A[b, r]\n"
    "      }\n"
    "      for j in 0..n gpu_lanes {\n"
    "        Y[b, j] = A[b, j] / S[0]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

LOOM_TEST(tp_gpu, gpu_lanes_print_parse_back_and_interpret_as_serial) {
  tp_fixture fx;
  parse_ok(&fx, lanes_text);
  char *text = tp_print(fx.f);
  cr_assert_str_eq(text, lanes_text);
  free(text);
  int64_t shape[2] = {2, 37};
  float A[2 * 37], Y[2 * 37];
  for (int i = 0; i < 2 * 37; i++) A[i] = (float)(i % 5) + 1.0f;
  loom_tp_arg args[2] = {{A, shape, 0}, {Y, shape, 0}};
  loom_status s = loom_tp_interpret(fx.cx, fx.f, args, 2);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (int b = 0; b < 2; b++) {
    float sum = 0;
    for (int j = 0; j < 37; j++) sum += A[b * 37 + j];
    for (int j = 0; j < 37; j++) cr_assert_float_eq(Y[b * 37 + j], A[b * 37 + j] / sum, 1e-6);
  }
  tp_fixture_free(&fx);
}

/* A gpu_lanes program around `loop` (one warp per block, A and Y of (n,) and a Local Q(2)). */
static void expect_lanes_refused(const char *loop, const char *message) {
  char body[1024];
  snprintf(body, sizeof body,
           "for b in 0..1 gpu_block { for t in 0..32 gpu_thread {\n alloc Q: Local[(2,), f32]\n Q[0] = 0.0\n Q[1] = 1.0\n%s\n"
           " Y[0] = Q[0] } }",
           loop);
  expect_refused(body, message);
}

LOOM_TEST(tp_gpu, gpu_lanes_verifier_rules_each_refused_by_name) {
  expect_refused("for j in 0..n gpu_lanes { Y[j] = A[j] }", "gpu_lanes loop 'j' outside a gpu_thread loop");
  expect_refused("for b in 0..1 gpu_block { for j in 0..n gpu_lanes { Y[j] = A[j] } }",
                 "gpu_lanes loop 'j' outside a gpu_thread loop");
  expect_refused("for b in 0..1 gpu_block { for t in 0..64 gpu_thread { for j in 0..n gpu_lanes { Y[j] = A[j] } } }",
                 "gpu_lanes loop 'j' is in gpu_thread loop 't' of extent 64, not 32");
  expect_refused("for b in 0..1 gpu_block { for t in 0..n gpu_thread { for j in 0..n gpu_lanes { Y[j] = A[j] } } }",
                 "gpu_lanes loop 'j' is in gpu_thread loop 't' of extent n, not 32");
  expect_refused("for b in 0..1 gpu_block { for t in 0..32 gpu_thread { for j in 0..1 gpu_lanes { for k in 0..n gpu_lanes { Y[k] = A[k] } } } }",
                 "gpu_lanes loop 'k' inside another gpu_lanes loop");
  expect_lanes_refused("for j in 0..n gpu_lanes { Q[0] = A[j] }",
                       "gpu_lanes loop 'j': it stores to Local 'Q' allocated outside it (each lane has its own copy)");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] * 0.5 + A[j] }",
                       "gpu_lanes loop 'j': it stores to Local 'Q' (allocated outside it) other than as 'Q[c] = Q[c] OP e'");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + A[j]\n Q[0] = max(Q[0], A[j]) }",
                       "gpu_lanes loop 'j': its accumulator 'Q' is updated with both '+' and 'max'");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + A[j]\n Y[j] = Q[0] }",
                       "gpu_lanes loop 'j': it reads its accumulator 'Q' other than in its updates");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + A[j]\n Q[1] = Q[1] * Q[0] }",
                       "gpu_lanes loop 'j': it reads its accumulator 'Q' other than in its updates");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + A[j]\n Y[0] = A[j] }",
                       "gpu_lanes loop 'j': it stores to 'Y' at an element other iterations may touch");
  expect_lanes_refused("for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + Y[j]\n Y[j] = Y[n - 1 - j] }",
                       "gpu_lanes loop 'j': it stores to 'Y' at an element other iterations may touch");
  expect_refused("for b in 0..1 gpu_block { for t in 0..32 gpu_thread {\n alloc Q: Local[(1,), f8e5m2]\n Q[0] = f8e5m2(0.0)\n"
                 " for j in 0..n gpu_lanes reduce { Q[0] = Q[0] + f8e5m2(A[j]) } } }",
                 "gpu_lanes loop 'j': its accumulator 'Q' is f8e5m2 (lanes combine f16, bf16, f32, f64 and 8- to 64-bit integers)");
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

/* ---- GPU schedule rules: scheduled programs equal the unscheduled ones ---------------------- */

#include "tensorprog/tp_schedule_gpu.h"
#include "tp_gpu_rows.h"

static const gpu_case gpu_cases[] = {
    {"prim @add(A: Buffer[(m, n), f32], B: Buffer[(n,), f32], C: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m { for j in 0..n { C[i, j] = A[i, j] + B[j] } }\n}\n",
     3, {"mn", "n", "mn"}, 'g', NULL},
    {"prim @transpose(X: Buffer[(m, n), f32], Y: Buffer[(n, m), f32]) {\n"
     "  for i in 0..m { for j in 0..n { Y[j, i] = X[i, j] * 2.0 } }\n}\n",
     2, {"mn", "nm"}, 'g', NULL},
    {"prim @softmax(X: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc mx: Local[(1,), f32]\n"
     "    mx[0] = -inf\n"
     "    for j in 0..n reduce { mx[0] = max(mx[0], X[i, j]) }\n"
     "    alloc s: Local[(1,), f32]\n"
     "    s[0] = 0.0\n"
     "    for j2 in 0..n reduce { s[0] = s[0] + exp(X[i, j2] - mx[0]) }\n"
     "    for j3 in 0..n { Y[i, j3] = exp(X[i, j3] - mx[0]) / s[0] }\n"
     "  }\n}\n",
     2, {"mn", "mn"}, 'w', "3 row loops over the lanes (2 reductions), blocks over m"},
    {"prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m { for j in 0..n {\n"
     "    C[i, j] = 0.0\n"
     "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
     "  } }\n}\n",
     3, {"mk", "kn", "mn"}, 'r', NULL},
    {"prim @lower(X: Buffer[(m, m), f32], Y: Buffer[(m, m), f32]) {\n"
     "  for i in 0..m { for j in 0..i + 1 { Y[i, j] = X[i, j] - 1.0 } }\n}\n",
     2, {"mm", "mm"}, 'w', NULL},
    {"prim @sum_all(X: Buffer[(m, n), f32], Y: Buffer[(1,), f32]) {\n"
     "  Y[0] = 0.0\n"
     "  for i in 0..m reduce { for j in 0..n reduce { Y[0] = Y[0] + X[i, j] } }\n}\n",
     2, {"mn", "1"}, 'o', NULL},
    {"prim @concat(A: Buffer[(m,), f32], B: Buffer[(n,), f32], Y: Buffer[(m + n,), f32]) {\n"
     "  for i in 0..m { Y[i] = A[i] }\n"
     "  for j in 0..n { Y[m + j] = B[j] + 0.5 }\n}\n",
     3, {"m", "n", "M"}, 'g', "grid form over 2 disjoint nests"},
    /* the KV-cache append under outer loops (a decode step's concat): one thread per element,
     * where a warp per (i, h) row copied the whole row */
    {"prim @kv(P: Buffer[(m, 2, n, 8), f32], N: Buffer[(m, 2, 3, 8), f32], Y: Buffer[(m, 2, n + 3, 8), f32]) {\n"
     "  for i in 0..m { for h in 0..2 {\n"
     "    for j in 0..n { for e in 0..8 { Y[i, h, j, e] = P[i, h, j, e] } }\n"
     "    for j2 in 0..3 { for e2 in 0..8 { Y[i, h, n + j2, e2] = N[i, h, j2, e2] * 2.0 } }\n"
     "  } }\n}\n",
     3, {"m2nE", "m23E", "m2PE"}, 'g', "grid form over 2 disjoint nests"},
    /* overlapping regions (the second nest rewrites Y[0..1]): the order matters, no rule 0 */
    {"prim @overlap(A: Buffer[(m,), f32], Y: Buffer[(m + 2,), f32]) {\n"
     "  for i in 0..m + 2 { Y[i] = 1.0 }\n"
     "  for j in 0..m { Y[j] = A[j] }\n}\n",
     2, {"m", "Q"}, 'o', NULL},
    /* a nest reading what another stores: no rule 0 */
    {"prim @chain(A: Buffer[(m,), f32], T: Buffer[(m,), f32], Y: Buffer[(m,), f32]) {\n"
     "  for i in 0..m { T[i] = A[i] + 1.0 }\n"
     "  for j in 0..m { Y[j] = T[j] * 2.0 }\n}\n",
     3, {"m", "m", "m"}, 'o', NULL},
    /* a scan: the accumulator is read outside its update, so the loop stays whole per lane */
    {"prim @cumsum(X: Buffer[(m, n), f32], Y: Buffer[(m, n), f32]) {\n"
     "  for i in 0..m {\n"
     "    alloc acc: Local[(1,), f32]\n"
     "    for j in 0..n reduce { acc[0] = acc[0] + X[i, j]\n Y[i, j] = acc[0] }\n"
     "  }\n}\n",
     2, {"mn", "mn"}, 'r', NULL},
};

static int64_t dim_of(char c, int64_t m, int64_t n, int64_t k) {
  switch (c) {
    case 'm': return m;
    case 'n': return n;
    case 'k': return k;
    case 'M': return m + n;
    case '2': return 2;
    case 'E': return 8;
    case 'T': return 24;
    case '3': return 3;
    case 'P': return n + 3;
    case 'Q': return m + 2;
    default: return 1;
  }
}

/* Runs `ref` and `gpu` (the same program, one scheduled) on the sizes and compares the
 * outputs bit for bit (the schedule keeps every reduction's order). */
static void run_pair(tp_fixture *ref, tp_fixture *gpu, const gpu_case *c, int64_t m, int64_t n, int64_t k) {
  int64_t shapes[4][4];
  size_t counts[4];
  float *data[4], *out2;
  loom_tp_arg a1[4], a2[4];
  for (int b = 0; b < c->nbuf; b++) {
    size_t cnt = 1;
    for (size_t d = 0; d < strlen(c->dims[b]); d++) {
      shapes[b][d] = dim_of(c->dims[b][d], m, n, k);
      cnt *= (size_t)shapes[b][d];
    }
    counts[b] = cnt;
    data[b] = calloc(cnt + 1, sizeof(float));
    for (size_t i = 0; i < cnt; i++) data[b][i] = (float)((int)((i * 7 + (size_t)b * 3) % 23) - 11) * 0.25f;
    a1[b] = (loom_tp_arg){data[b], shapes[b], 0};
    a2[b] = a1[b];
  }
  int o = c->nbuf - 1;
  out2 = calloc(counts[o] + 1, sizeof(float));
  memcpy(out2, data[o], counts[o] * sizeof(float)); /* what a program leaves unwritten stays equal */
  a2[o].data = out2;
  loom_status s1 = loom_tp_interpret(ref->cx, ref->f, a1, (size_t)c->nbuf);
  loom_status s2 = loom_tp_interpret(gpu->cx, gpu->f, a2, (size_t)c->nbuf);
  cr_assert_null(s1, "@%s m=%lld n=%lld k=%lld: %s", ref->f->name, (long long)m, (long long)n, (long long)k, loom_status_text(s1, 0));
  cr_assert_null(s2, "@%s (GPU) m=%lld n=%lld k=%lld: %s", ref->f->name, (long long)m, (long long)n, (long long)k, loom_status_text(s2, 0));
  cr_assert(memcmp(data[o], out2, counts[o] * sizeof(float)) == 0, "@%s: the GPU schedule differs at m=%lld n=%lld k=%lld",
            ref->f->name, (long long)m, (long long)n, (long long)k);
  for (int b = 0; b < c->nbuf; b++) free(data[b]);
  free(out2);
}

LOOM_TEST(tp_gpu, scheduled_programs_equal_unscheduled_at_0_1_primes_odd_sizes) {
  static const int64_t sizes[] = {0, 1, 2, 3, 7, 13, 257};
  static const int64_t ks[] = {0, 1, 5, 13};
  size_t nsz = sizeof sizes / sizeof sizes[0];
  int nforms[256] = {0}; /* cases by form */
  size_t ncases = sizeof gpu_cases / sizeof gpu_cases[0], nrows = sizeof gpu_row_cases / sizeof gpu_row_cases[0];
  for (size_t ci = 0; ci < ncases + nrows; ci++) {
    const gpu_case *c = ci < ncases ? &gpu_cases[ci] : &gpu_row_cases[ci - ncases];
    tp_fixture ref, gpu;
    parse_ok(&ref, c->text);
    parse_ok(&gpu, c->text);
    loom_strbuf why;
    loom_strbuf_init(&why, NULL);
    loom_tp_gpu_params p = {.threads = 256};
    loom_status s = loom_tp_schedule_gpu(&gpu.arena, gpu.cx, gpu.f, &p, &why);
    cr_assert_null(s, "@%s: %s", c->text, loom_status_text(s, 0));
    char *text = tp_print(gpu.f);
    cr_assert(strstr(text, "gpu_block") && strstr(text, "gpu_thread"), "%s", text);
    const char *want = c->form == 'w' ? "warp per row" : c->form == 'o' ? "one thread" : "grid form";
    cr_assert(strstr(loom_strbuf_cstr(&why), want) != NULL, "%s: %s", text, loom_strbuf_cstr(&why));
    cr_assert(!c->why || strstr(loom_strbuf_cstr(&why), c->why) != NULL, "'%s' not in: %s", c->why, loom_strbuf_cstr(&why));
    cr_assert_eq(strstr(text, "gpu_lanes") != NULL, c->form == 'w', "%s", text);
    /* the scheduled program prints and parses back to itself (the verifier passing it) */
    tp_fixture back;
    parse_ok(&back, text);
    char *again = tp_print(back.f);
    cr_assert_str_eq(again, text);
    free(again);
    tp_fixture_free(&back);
    /* the launch: 256 threads in the grid form, a warp for a warp per row, 1 in the fallback */
    loom_tp_gpu_launch l;
    s = loom_tp_gpu_launch_of(gpu.cx, gpu.f, &l);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_eq(l.threads, c->form == 'w' ? 32 : c->form == 'o' ? 1 : 256, "@%s: %lld threads", gpu.f->name, (long long)l.threads);
    /* with loop_threads, a grid whose threads each run a loop has that many per block */
    tp_fixture rows;
    parse_ok(&rows, c->text);
    loom_tp_gpu_params pr = {.threads = 256, .loop_threads = 64};
    cr_assert_null(loom_tp_schedule_gpu(&rows.arena, rows.cx, rows.f, &pr, NULL));
    cr_assert_null(loom_tp_gpu_launch_of(rows.cx, rows.f, &l));
    char *rtext = tp_print(rows.f);
    nforms[(unsigned char)c->form]++;
    cr_assert_eq(l.threads, c->form == 'g' ? 256 : c->form == 'r' ? 64 : c->form == 'w' ? 32 : 1, "@%s: %lld threads:\n%s",
                 rows.f->name, (long long)l.threads, rtext);
    free(rtext);
    tp_fixture_free(&rows);
    free(text);
    loom_strbuf_free(&why);
    for (size_t a = 0; a < nsz; a++)
      for (size_t b = 0; b < nsz; b++)
        for (size_t kk = 0; kk < sizeof ks / sizeof ks[0]; kk++) {
          if (!strchr(c->text, 'k') || strstr(c->text, "@mm") == NULL) {
            if (kk) break; /* k only matters to the matmul */
          }
          if (sizes[a] * sizes[b] > 4000 && strstr(c->text, "@lower") == NULL) continue;
          if (strstr(c->text, "@lower") && b) break; /* one size: m */
          run_pair(&ref, &gpu, c, sizes[a], sizes[b], ks[kk]);
        }
    tp_fixture_free(&ref);
    tp_fixture_free(&gpu);
  }
  cr_assert(nforms['g'] && nforms['w'] && nforms['r'] && nforms['o'], "a form has no case");
}

LOOM_TEST(tp_gpu, launch_of_an_unscheduled_program_is_refused_by_name) {
  tp_fixture fx;
  parse_ok(&fx, gpu_cases[0].text);
  loom_tp_gpu_launch l;
  loom_status s = loom_tp_gpu_launch_of(fx.cx, fx.f, &l);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "program @add is not scheduled for a GPU") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

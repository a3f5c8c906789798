/* test_cpu_parallel.c — a parallel loop hands its iterations to ctx->parallel_for only when its
 * estimated work pays for the hand-over (LOOM_CPU_PARALLEL_MIN_WORK in cg_stmt.c); below, the
 * calling thread runs the body over every iteration itself. Checked by counting the calls of a
 * parallel_for that runs its body inline, at sizes on both sides of the threshold, and for a loop
 * whose inner extent depends on the parallel variable (work unknown: parallel). */
#include <stdlib.h>

#include "cpu_test_util.h"

static int calls;

static int32_t counting_pf(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  calls++;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}

/* Runs `text` (one f32 buffer X of (n, 64) and Y alike) at n rows: how many parallel_for calls. */
static int run_rows(const char *text, int64_t n) {
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int64_t shape[2] = {n, 64};
  float *x = calloc((size_t)(n * 64 + 1), sizeof *x), *y = calloc((size_t)(n * 64 + 1), sizeof *y);
  for (int64_t i = 0; i < n * 64; i++) x[i] = (float)(i % 7);
  loom_tp_arg args[2] = {{x, shape, 0}, {y, shape, 0}};
  cpu_ctx c;
  cpu_ctx_init(&c, 2);
  c.ctx.parallel_for = counting_pf;
  calls = 0;
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 2, &c), 0);
  for (int64_t i = 0; i < n * 64; i++) cr_assert_float_eq(y[i], x[i] * 2.0f + 1.0f, 1e-6, "row %lld", (long long)(i / 64));
  cpu_ctx_fini(&c);
  free(x);
  free(y);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
  return calls;
}

LOOM_TEST(cpu, parallel_loops_with_little_work_run_in_the_calling_thread) {
  /* per row: 64 vectorised stores of 1 + 4 operations (320): 16 rows are 5120, 4096 rows 1.3M */
  const char *rows = "prim @rows(X: Buffer[(n, 64), f32], Y: Buffer[(n, 64), f32]) {\n"
                     "  for i in 0..n parallel { for j in 0..64 vectorize { Y[i, j] = X[i, j] * 2.0 + 1.0 } }\n}\n";
  cr_assert_eq(run_rows(rows, 16), 0);
  cr_assert_eq(run_rows(rows, 4096), 1);
  /* a triangle: the inner extent depends on i, the work is not estimated: parallel */
  const char *tri = "prim @tri(X: Buffer[(n, 64), f32], Y: Buffer[(n, 64), f32]) {\n"
                    "  for i in 0..n parallel {\n"
                    "    for j in 0..min(i + 1, 64) { Y[i, j] = X[i, j] * 2.0 + 1.0 }\n"
                    "    for j2 in 0..64 - min(i + 1, 64) { Y[i, min(i + 1, 64) + j2] = X[i, min(i + 1, 64) + j2] * 2.0 + 1.0 }\n"
                    "  }\n}\n";
  cr_assert_eq(run_rows(tri, 16), 1);
}

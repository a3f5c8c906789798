/* test_cpu_columns.c — reductions, softmax and scans along an axis that has kept axes after it
 * (tensorprog/gen_reduce.c: reduce_columns, softmax_columns, scan_columns), and the CPU rule that
 * fuses the rows of a plane under the outermost loop (tensorprog/schedule_cpu.c, rule 0c). The
 * generated text must take the columns form (the reduced axis outside a row of the trailing
 * axes, the statistics in a Local row), and each program, scheduled for 64-, 32- and 16-byte
 * vectors, must equal the reference interpreter's run of the unscheduled program at extents 0,
 * 1, primes and sizes around the vectors, with 1 thread, 2 threads and the runtime pool. */
#include <stdlib.h>
#include <string.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_schedule_cpu.h"

static const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 33};

/* One generator call, bound to its arguments by the test. */
typedef struct gen_call {
  enum { REDUCE, SOFTMAX, CUMSUM, CUMPROD } kind;
  loom_tp_reduce_op op;
  int rank, axis; /* axis: softmax and scans */
  unsigned axes;  /* reduce: the bitmask */
  bool flag_a;    /* reduce: keepdims; softmax: log; scans: exclusive */
  bool flag_b;    /* scans: reverse */
} gen_call;

static const gen_call *current; /* the call gen_current makes */

static loom_status gen_current(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **f) {
  const gen_call *g = current;
  switch (g->kind) {
    case REDUCE: return loom_tp_gen_reduce(a, cx, "r", g->op, LOOM_DTYPE_F32, g->rank, g->axes, g->flag_a, f);
    case SOFTMAX: return loom_tp_gen_softmax(a, cx, "sm", LOOM_DTYPE_F32, g->rank, g->axis, g->flag_a, f);
    case CUMSUM: return loom_tp_gen_cumsum(a, cx, "cs", LOOM_DTYPE_F32, g->rank, g->axis, g->flag_a, g->flag_b, f);
    case CUMPROD: return loom_tp_gen_cumprod(a, cx, "cp", LOOM_DTYPE_F32, g->rank, g->axis, g->flag_a, g->flag_b, f);
  }
  return LOOM_ERROR(INTERNAL, "unknown generator kind %d", (int)g->kind);
}

static char *generated(const gen_call *g) {
  current = g;
  return cpu_generated_text(gen_current);
}

/* Asserts `text` holds every '|'-separated part of `parts`. */
static void holds(const char *text, const char *parts, const char *what) {
  for (const char *part = parts; part && *part;) {
    const char *bar = strchr(part, '|');
    size_t len = bar ? (size_t)(bar - part) : strlen(part);
    char want[256];
    snprintf(want, sizeof want, "%.*s", (int)len, part);
    cr_assert(strstr(text, want) != NULL, "missing '%s' in %s:\n%s", want, what, text);
    part = bar ? bar + 1 : NULL;
  }
}

/* Generates g, checks its text for `form`, then schedules it for each vector width (the
 * explanation holding `why`) and compares the compiled program with the interpreter. */
static void columns_case(const gen_call *g, const char *form, const char *why) {
  char *text = generated(g);
  holds(text, form, "the generated program");
  cpu_diff_opts o = cpu_opts(sizes, LOOM_ARRAY_LEN(sizes), 1e-4);
  o.trials = 8;
  static const int vbytes[] = {64, 32, 16};
  for (size_t v = 0; v < LOOM_ARRAY_LEN(vbytes); v++) {
    tp_fixture fx, ref;
    cpu_parse_ok(&fx, text);
    cpu_parse_ok(&ref, text);
    loom_strbuf w;
    loom_strbuf_init(&w, NULL);
    loom_tp_cpu_params params = {.vector_bytes = vbytes[v]};
    loom_status s = loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &w);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_null(loom_tp_verify(fx.cx, fx.f));
    holds(loom_strbuf_cstr(&w), why, "the schedule's explanation");
    loom_cpu_jit *jit;
    cr_assert_null(loom_cpu_jit_create(NULL, &jit));
    loom_kernel_fn fn = cpu_jit(jit, &fx);
    cpu_diff_opts against = o;
    against.oracle = &ref;
    cpu_diff(&fx, fn, &against, loom_test_seed() + v);
    loom_cpu_jit_destroy(jit);
    loom_strbuf_free(&w);
    tp_fixture_free(&fx);
    tp_fixture_free(&ref);
  }
  free(text);
}

/* A reduction over the channels of NCHW (ReduceMax(axis=1), a channel mean): the kept (h, w)
 * after the reduced axis are a row initialised once, then accumulated for each channel; the
 * row's two axes fused into one loop over h*w by rule 0c. */
LOOM_TEST(cpu, columns_reduce_over_channels) {
  static const loom_tp_reduce_op ops[] = {LOOM_TP_REDUCE_SUM, LOOM_TP_REDUCE_MEAN, LOOM_TP_REDUCE_MAX,
                                          LOOM_TP_REDUCE_MIN, LOOM_TP_REDUCE_PROD};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(ops); i++) {
    gen_call g = {.kind = REDUCE, .op = ops[i], .rank = 4, .axes = 1u << 1, .flag_a = i % 2 == 0};
    columns_case(&g, "for i0 in 0..d0 parallel {|for r1 in 0..d1 reduce {", "(the rows of a plane are one loop under the outermost)");
  }
  /* rank 3, the middle axis (a sum over the sequence of (b, s, h)) */
  gen_call g3 = {.kind = REDUCE, .op = LOOM_TP_REDUCE_SUM, .rank = 3, .axes = 1u << 1, .flag_a = false};
  columns_case(&g3, "for i0 in 0..d0 parallel {|for r1 in 0..d1 reduce {", "");
}

/* Axes 0 and 2 of four: the kept axis 1 outside, the reduced 0 and 2 around the kept 3. */
LOOM_TEST(cpu, columns_reduce_around_a_kept_axis) {
  gen_call g = {.kind = REDUCE, .op = LOOM_TP_REDUCE_MEAN, .rank = 4, .axes = (1u << 0) | (1u << 2), .flag_a = true};
  columns_case(&g, "for i1 in 0..d1 parallel {|for r0 in 0..d0 reduce {|for r2 in 0..d2 reduce {", "");
}

/* Softmax over the channels (axis 1 of (n, c, h*w)), softmax and log-softmax, rank 3 and 4:
 * the running max and sum in Local rows over the trailing axes, passes over the channels. */
LOOM_TEST(cpu, columns_softmax_over_a_middle_axis) {
  for (int rank = 3; rank <= 4; rank++)
    for (int log = 0; log <= 1; log++) {
      gen_call g = {.kind = SOFTMAX, .rank = rank, .axis = 1, .flag_a = log};
      columns_case(&g, rank == 3 ? "alloc M: Local[(d2,), f32]|for r in 0..d1 reduce {"
                                 : "alloc M: Local[(d2, d3), f32]|for r in 0..d1 reduce {",
                   "");
    }
  gen_call g = {.kind = SOFTMAX, .rank = 4, .axis = 2, .flag_a = false};
  columns_case(&g, "alloc M: Local[(d3,), f32]|alloc S: Local[(d3,), f32]", "");
}

/* CumSum / CumProd along a middle axis, inclusive and exclusive, forward and reversed: the running
 * values in a Local row over the trailing axes. */
LOOM_TEST(cpu, columns_scan_along_a_middle_axis) {
  for (int kind = CUMSUM; kind <= CUMPROD; kind++)
    for (int ex = 0; ex <= 1; ex++)
      for (int rev = 0; rev <= 1; rev++) {
        gen_call g = {.kind = kind, .rank = 3, .axis = 1, .flag_a = ex, .flag_b = rev};
        columns_case(&g, "alloc acc: Local[(d2,), f32]|for j1 in 0..d1 {", "");
      }
  gen_call g4 = {.kind = CUMSUM, .rank = 4, .axis = 2};
  columns_case(&g4, "alloc acc: Local[(d3,), f32]|for j2 in 0..d2 {", "");
}

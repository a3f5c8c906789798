/* test_e2e_topk.c — topk as legalization lowers it (tensorprog/gen_linalg.c: a binary heap of
 * the best k per slice, later elements tested 8 at a time against its root; the values gathered
 * from the indices), compiled once with symbolic extents (and a symbolic k) and run against the
 * reference interpreter: slices of 0, 1, primes and long ones, k = 0, 1, a prime, k = n,
 * distinct values, many ties (the lower index first), NaNs (last, in index order), sorted
 * ascending and descending (every element entering the heap, none after the first k), largest
 * and smallest, the last and a strided axis, float and integer dtypes, 1 and 2 threads. Values
 * and indices are compared exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

typedef enum fill_kind { FILL_DISTINCT, FILL_TIES, FILL_NAN, FILL_ASC, FILL_DESC, FILL_KINDS } fill_kind;

static double fill_value(fill_kind f, size_t i, bool is_float) {
  uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  switch (f) {
  case FILL_DISTINCT: return is_float ? (double)(h % 100000) / 997.0 - 50.0 : (double)(h % 200001) - 100000.0;
  case FILL_TIES: return (double)(h % 4) - 1.0;
  case FILL_NAN: return is_float && h % 5 == 0 ? NAN : (double)(h % 3);
  case FILL_ASC: return (double)i;
  default: return -(double)i;
  }
}

static loom_tensor *make_input(e2e_model *md, loom_dtype t, int rank, const int64_t *shape, fill_kind f) {
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(md->rt, t, rank, shape, &x));
  loom_graph_tensor view = {.dtype = t, .ndim = rank, .data = x->data, .numel = loom_tensor_numel(x)};
  for (int d = 0; d < rank; d++) view.shape[d] = shape[d];
  for (size_t i = 0; i < view.numel; i++) loom_graph_tensor_set_f64(&view, i, fill_value(f, i, loom_dtype_is_float(t)));
  return x;
}

static bool has_program(const e2e_model *md, const char *part) {
  loom_graph_module *m = loom_compiled_module(md->c);
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    if (strstr(loom_tp_func_name(loom_graph_module_tp_at(m, i)), part)) return true;
  return false;
}

/* Runs one case at both thread counts: x of `shape` filled by f (the other inputs generated);
 * returns the runs made. */
static int run_case(e2e_model *md, const char *text, loom_dtype t, int rank, const int64_t *shape, const e2e_bind *b,
                    size_t nb, int64_t k, fill_kind f) {
  e2e_io io = {.nan_ok = true, .ngiven = 1};
  io.given[0] = make_input(md, t, rank, shape, f);
  for (uint32_t threads = 1; threads <= 2; threads++) {
    cr_assert_null(loom_rt_set_threads(md->rt, threads));
    double err = e2e_check(md, "main", b, nb, false, &io);
    cr_assert_eq(err, 0.0, "fill %d, k %lld, %u threads: relative error %g\n%s", (int)f, (long long)k, threads, err, text);
    e2e_io_free(&io);
    io.nout = 0;
  }
  loom_tensor_release((loom_tensor *)io.given[0]);
  return 2;
}

/* topk of x: (r, n) along axis 1 with a symbolic k (the extent of the unused operand s; the
 * guard k <= n), over rows and slice lengths. */
static int check_last_axis(const char *dtype, loom_dtype t, bool largest) {
  char text[1024], path[] = "/tmp/loom-topk-XXXXXX";
  snprintf(text, sizeof text,
           "fn @main(x: Tensor[(r, n), %s], s: Tensor[(k,), f32]) -> Object {\n  dataflow {\n"
           "    y = topk(x, k=[k], axis=1, largest=%s)\n    output y\n  }\n  return y\n}\n",
           dtype, largest ? "true" : "false");
  e2e_model md = e2e_compile_text(text, path);
  cr_assert(has_program(&md, "topk"), "%s: no topk program\n%s", path, text);
  static const int64_t rows[] = {1, 3, 2, 0, 5};
  static const int64_t lens[] = {0, 1, 2, 7, 31, 257, 1000};
  int runs = 0;
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int64_t n = lens[li];
    const int64_t ks[] = {0, n < 1 ? n : 1, n < 3 ? n : 3, n < 13 ? n : 13, n / 2, n - 1 > 0 ? n - 1 : 0, n};
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++)
      for (int f = 0; f < FILL_KINDS; f++) {
        if ((f == FILL_NAN || f == FILL_DESC) && (ki % 2) != 0) continue; /* fewer runs: every fill still meets k = 0, 3, n/2, n */
        int64_t shape[2] = {rows[(li + ki + (size_t)f) % 5], n};
        e2e_bind b[3] = {{"r", shape[0]}, {"n", n}, {"k", ks[ki]}};
        runs += run_case(&md, text, t, 2, shape, b, 3, ks[ki], (fill_kind)f);
      }
  }
  e2e_model_free(&md);
  unlink(path);
  return runs;
}

LOOM_TEST(e2e_topk, last_axis_symbolic_k) {
  int runs = check_last_axis("f32", LOOM_DTYPE_F32, true) + check_last_axis("f32", LOOM_DTYPE_F32, false) +
             check_last_axis("f64", LOOM_DTYPE_F64, true) + check_last_axis("i32", LOOM_DTYPE_I32, false) +
             check_last_axis("i64", LOOM_DTYPE_I64, true);
  cr_log_info("topk along the last axis: %d runs", runs);
}

/* A constant k along a middle axis (strided slices) of a rank-3 tensor. */
LOOM_TEST(e2e_topk, strided_axis_constant_k) {
  static const struct {
    int64_t k;
    bool largest;
  } forms[] = {{1, true}, {4, false}, {7, true}};
  int runs = 0;
  for (size_t fi = 0; fi < sizeof forms / sizeof forms[0]; fi++) {
    char text[1024], path[] = "/tmp/loom-topk-XXXXXX";
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[(a, n, c), f32]) -> Object {\n  dataflow {\n"
             "    y = topk(x, k=[%lld], axis=1, largest=%s)\n    output y\n  }\n  return y\n}\n",
             (long long)forms[fi].k, forms[fi].largest ? "true" : "false");
    e2e_model md = e2e_compile_text(text, path);
    static const int64_t shapes[][3] = {{2, 7, 3}, {1, 11, 1}, {3, 40, 5}, {0, 9, 2}, {2, 7, 0}, {1, 131, 17}};
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      if (shapes[si][1] < forms[fi].k) continue;
      e2e_bind b[3] = {{"a", shapes[si][0]}, {"n", shapes[si][1]}, {"c", shapes[si][2]}};
      for (int f = 0; f < FILL_KINDS; f++) runs += run_case(&md, text, LOOM_DTYPE_F32, 3, shapes[si], b, 3, forms[fi].k, (fill_kind)f);
    }
    e2e_model_free(&md);
    unlink(path);
  }
  cr_log_info("topk along a strided axis: %d runs", runs);
}

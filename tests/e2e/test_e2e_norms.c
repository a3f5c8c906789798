/* test_e2e_norms.c — the compiled norms and softmaxes (tests/e2e/data/norms.loom) on inputs
 * of every magnitude, against the interpreter (which works in f64): values near 1e19, 1e20,
 * 1e30 and the f32 maximum, such values mixed with small ones, one huge value in a row of
 * small ones, and a large common offset (the case E[x^2] - mean^2 gets wrong). Before issue 20
 * the compiled layer_norm returned 0 around 1e19 - 1e20 and NaN from 1e30. Shapes 1, primes
 * and 768 wide, at 1 and 2 threads. */
#include <math.h>

#include "e2e/e2e_util.h"

/* How a test fills x: value i of an input of n per row. */
typedef enum magnitude {
  MAG_PLAIN,   /* u in [-1, 1] */
  MAG_SCALED,  /* s * u */
  MAG_MIXED,   /* s * u at even positions, u at odd ones */
  MAG_OUTLIER, /* s at the first position of each row, u elsewhere */
  MAG_OFFSET,  /* s + u */
} magnitude;

static const char *const mag_names[] = {"plain", "scaled", "mixed", "outlier", "offset"};

static double u_at(size_t i) { return sin((double)i * 1.7 + 0.3); }

static double value(magnitude m, double s, size_t i, size_t row_len) {
  double u = u_at(i);
  switch (m) {
  case MAG_PLAIN: return u;
  case MAG_SCALED: return s * u;
  case MAG_MIXED: return i % 2 ? u : s * u;
  case MAG_OUTLIER: return row_len && i % row_len == 0 ? s : u;
  default: return s + u;
  }
}

/* Runs @fn at shape (r, c) with x filled as (m, s): compiled at 1 and 2 threads against the
 * interpreter, worst relative error below tol. */
static void check(e2e_model *md, const char *fn, int rank, int64_t r, int64_t c, loom_dtype dt, magnitude m, double s,
                  double tol) {
  int64_t shape[3] = {r, 4, c};
  if (rank == 2) shape[1] = c;
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(md->rt, dt, rank, shape, &x));
  size_t n = loom_tensor_numel(x), row = (size_t)(rank == 2 ? c : 4 * c);
  for (size_t i = 0; i < n; i++) {
    double v = value(m, s, i, row);
    if (dt == LOOM_DTYPE_F32) ((float *)x->data)[i] = (float)v;
    else ((double *)x->data)[i] = v;
  }
  e2e_bind b[2] = {{"r", r}, {"c", c}};
  for (uint32_t threads = 1; threads <= 2; threads++) {
    cr_assert_null(loom_rt_set_threads(md->rt, threads));
    e2e_io io = {.given = {x}, .ngiven = 1};
    double err = e2e_check(md, fn, b, 2, false, &io);
    e2e_io_free(&io);
    cr_assert_lt(err, tol, "@%s %s x %g at (%lld, %lld), %u threads: relative error %g", fn, mag_names[m], s,
                 (long long)r, (long long)c, threads, err);
  }
  loom_tensor_release(x);
}

static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {2, 768}, {5, 13}};

LOOM_TEST(e2e_norms, layer_rms_and_group_norm_at_every_magnitude) {
  e2e_model md = e2e_compile("tests/e2e/data/norms.loom");
  static const double scales[] = {1e19, 1e20, 1e30, 3e38};
  for (size_t k = 0; k < LOOM_ARRAY_LEN(shapes); k++) {
    int64_t r = shapes[k][0], c = shapes[k][1];
    for (magnitude m = MAG_PLAIN; m <= MAG_OUTLIER; m++)
      for (size_t j = 0; j < (m == MAG_PLAIN ? 1 : LOOM_ARRAY_LEN(scales)); j++) {
        check(&md, "ln", 2, r, c, LOOM_DTYPE_F32, m, scales[j], 1e-4);
        check(&md, "rms", 2, r, c, LOOM_DTYPE_F32, m, scales[j], 1e-4);
        check(&md, "gn", 3, r, c > 64 ? 64 : c, LOOM_DTYPE_F32, m, scales[j], 1e-4);
      }
    /* a common offset a hundred times the spread: the variance is taken about the mean */
    check(&md, "ln", 2, r, c, LOOM_DTYPE_F32, MAG_OFFSET, 100, 1e-3);
    check(&md, "gn", 3, r, c > 64 ? 64 : c, LOOM_DTYPE_F32, MAG_OFFSET, 100, 1e-3);
    check(&md, "ln64", 2, r, c, LOOM_DTYPE_F64, MAG_MIXED, 1e150, 1e-8);
    check(&md, "ln64", 2, r, c, LOOM_DTYPE_F64, MAG_OFFSET, 1e6, 1e-8);
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e_norms, softmax_and_log_softmax_at_every_magnitude) {
  e2e_model md = e2e_compile("tests/e2e/data/norms.loom");
  static const double scales[] = {1e19, 1e30, 3e38};
  for (size_t k = 0; k < LOOM_ARRAY_LEN(shapes); k++)
    for (magnitude m = MAG_PLAIN; m <= MAG_OFFSET; m++)
      for (size_t j = 0; j < (m == MAG_PLAIN ? 1 : LOOM_ARRAY_LEN(scales)); j++) {
        check(&md, "sm", 2, shapes[k][0], shapes[k][1], LOOM_DTYPE_F32, m, scales[j], 1e-5);
        /* log_softmax of +-3e38 is about -6e38: not an f32, so not a test */
        if (scales[j] < 1e38) check(&md, "lsm", 2, shapes[k][0], shapes[k][1], LOOM_DTYPE_F32, m, scales[j], 1e-5);
      }
  e2e_model_free(&md);
}

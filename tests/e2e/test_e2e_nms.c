/* test_e2e_nms.c — non_max_suppression as legalization lowers it (tensorprog/gen_nms.c: the
 * candidates on a max-heap, each popped box tested against the kept ones in branch-free blocks
 * of 64), compiled once with symbolic extents and run against the reference interpreter: 0, 1,
 * 2, primes and thousands of boxes (a kept count across several blocks), batches and classes,
 * corner boxes given in either corner order and center boxes, scores distinct, tied (the lower
 * index first), with NaNs and below the score threshold, IoU thresholds 0.5, 0, 1 and below 0
 * (every kept box suppresses), max per class 0, 1, 5 and unbounded, sparse and dense fields, 1
 * and 2 threads. Coordinates sit on a grid of 1/8 so every area and intersection is exact (the
 * compiled IoU test may contract where the interpreter rounds). Rows are compared exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e/e2e_util.h"

typedef enum score_kind { SCORE_DISTINCT, SCORE_TIES, SCORE_NAN, SCORE_KINDS } score_kind;

static uint64_t next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static loom_tensor *new_tensor(e2e_model *md, loom_dtype t, int rank, const int64_t *shape) {
  loom_tensor *x;
  cr_assert_null(loom_rt_tensor_new(md->rt, t, rank, shape, &x));
  return x;
}

/* Boxes (nb, n, 4) in a field of `field` units: corners (either order) or center + size. */
static loom_tensor *make_boxes(e2e_model *md, int64_t nb, int64_t n, bool center, int field, uint64_t *rng) {
  const int64_t shape[3] = {nb, n, 4};
  loom_tensor *x = new_tensor(md, LOOM_DTYPE_F32, 3, shape);
  float *p = x->data;
  for (int64_t i = 0; i < nb * n; i++) {
    float cx = (float)(next(rng) % (uint64_t)(8 * field)) / 8.0f, cy = (float)(next(rng) % (uint64_t)(8 * field)) / 8.0f;
    float w = (float)(1 + next(rng) % 32) / 8.0f, h = (float)(1 + next(rng) % 32) / 8.0f;
    if (center) {
      p[4 * i] = cx, p[4 * i + 1] = cy, p[4 * i + 2] = w, p[4 * i + 3] = h;
    } else if (next(rng) % 2) { /* y1, x1, y2, x2 */
      p[4 * i] = cy, p[4 * i + 1] = cx, p[4 * i + 2] = cy + h, p[4 * i + 3] = cx + w;
    } else { /* the corners the other way round */
      p[4 * i] = cy + h, p[4 * i + 1] = cx + w, p[4 * i + 2] = cy, p[4 * i + 3] = cx;
    }
  }
  return x;
}

static loom_tensor *make_scores(e2e_model *md, int64_t nb, int64_t nc, int64_t n, score_kind f, uint64_t *rng) {
  const int64_t shape[3] = {nb, nc, n};
  loom_tensor *x = new_tensor(md, LOOM_DTYPE_F32, 3, shape);
  float *p = x->data;
  for (int64_t i = 0; i < nb * nc * n; i++) {
    uint64_t h = next(rng);
    p[i] = f == SCORE_DISTINCT ? (float)(h % 1000003) / 1000003.0f
           : f == SCORE_TIES   ? (float)(h % 4) / 4.0f
                               : (h % 7 == 0 ? NAN : (float)(h % 50) / 50.0f);
  }
  return x;
}

static loom_tensor *scalar_i64(e2e_model *md, int64_t v) {
  const int64_t one = 1;
  loom_tensor *x = new_tensor(md, LOOM_DTYPE_I64, 1, &one);
  *(int64_t *)x->data = v;
  return x;
}

static loom_tensor *scalar_f32(e2e_model *md, double v) {
  const int64_t one = 1;
  loom_tensor *x = new_tensor(md, LOOM_DTYPE_F32, 1, &one);
  *(float *)x->data = (float)v;
  return x;
}

typedef struct nms_case {
  int64_t nb, nc, n, maxk;
  double iou, score;
  int field;
} nms_case;

/* One case at 1 and 2 threads; adds the rows selected to *rows. */
static void run_case(e2e_model *md, bool center, const nms_case *c, score_kind f, int64_t *rows) {
  uint64_t rng = (uint64_t)(c->n * 131 + c->nb * 17 + c->nc * 7 + f + c->field);
  e2e_io io = {.nan_ok = true, .data_dims = true, .ngiven = 5};
  io.given[0] = make_boxes(md, c->nb, c->n, center, c->field, &rng);
  io.given[1] = make_scores(md, c->nb, c->nc, c->n, f, &rng);
  io.given[2] = scalar_i64(md, c->maxk);
  io.given[3] = scalar_f32(md, c->iou);
  io.given[4] = scalar_f32(md, c->score);
  e2e_bind b[3] = {{"nb", c->nb}, {"nc", c->nc}, {"n", c->n}};
  for (uint32_t threads = 1; threads <= 2; threads++) {
    cr_assert_null(loom_rt_set_threads(md->rt, threads));
    double err = e2e_check(md, "main", b, 3, false, &io);
    cr_assert_eq(err, 0.0, "%s boxes nb %lld nc %lld n %lld, max %lld, iou %g, score %g, field %d, scores %d, %u threads: error %g",
                 center ? "center" : "corner", (long long)c->nb, (long long)c->nc, (long long)c->n, (long long)c->maxk, c->iou,
                 c->score, c->field, (int)f, threads, err);
    cr_assert_eq(io.nout, 1);
    if (threads == 1) *rows += io.out[0]->shape[0];
    e2e_io_free(&io);
    io.nout = 0;
  }
  for (int i = 0; i < 5; i++) loom_tensor_release((loom_tensor *)io.given[i]);
}

static void check_form(bool center) {
  char text[1024], path[] = "/tmp/loom-nms-XXXXXX";
  snprintf(text, sizeof text,
           "fn @main(bx: Tensor[(nb, n, 4), f32], sc: Tensor[(nb, nc, n), f32], m: Tensor[(1,), i64], i: Tensor[(1,), f32], "
           "t: Tensor[(1,), f32]) -> Object {\n  dataflow {\n"
           "    y = non_max_suppression(bx, sc, m, i, t%s)\n    output y\n  }\n  return y\n}\n",
           center ? ", center_point_box=true" : "");
  e2e_model md = e2e_compile_text(text, path);
  static const nms_case cases[] = {
      {1, 1, 0, 10, 0.5, 0.0, 8},          {2, 3, 1, 10, 0.5, 0.0, 8},       {1, 2, 2, 10, 0.0, -1.0, 2},
      {2, 1, 37, 5, 0.5, 0.3, 6},          {1, 3, 37, INT64_MAX, 0.5, -1e30, 4}, {2, 2, 131, 1, 0.3, 0.0, 10},
      {1, 1, 131, INT64_MAX, -0.1, 0.0, 10}, {1, 2, 300, 0, 0.5, 0.0, 10},    {1, 1, 300, INT64_MAX, 1.0, 0.0, 12},
      {2, 1, 1031, INT64_MAX, 0.5, 0.1, 40}, {1, 1, 4099, INT64_MAX, 0.55, -1e30, 200}, {1, 1, 2000, INT64_MAX, 0.5, 0.0, 3},
  };
  int64_t rows = 0;
  int runs = 0;
  for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
    for (int f = 0; f < SCORE_KINDS; f++, runs += 2) run_case(&md, center, &cases[ci], (score_kind)f, &rows);
  /* the cases select rows (the test compares something): the sparse fields keep hundreds */
  cr_assert_gt(rows, 1000, "%lld rows selected in all", (long long)rows);
  cr_log_info("non_max_suppression (%s boxes): %d runs, %lld rows", center ? "center" : "corner", runs, (long long)rows);
  e2e_model_free(&md);
  unlink(path);
}

LOOM_TEST(e2e_nms, corner_boxes_against_the_interpreter) { check_form(false); }

LOOM_TEST(e2e_nms, center_boxes_against_the_interpreter) { check_form(true); }

/* test_dyn.c — the run-time operand forms (axes, shape, k, bounds, pads given as tensor
 * operands read when the op runs, as ONNX graph inputs): inference keeps the rank exact and
 * makes the data-dependent dims fresh; the interpreter agrees with the attribute forms on
 * random shapes (0, 1, primes), with hand-computed ONNX cases, and rejects bad values with
 * errors naming the op, the operand and the values; legalization refuses these forms. */
#include <math.h>

#include "graph/legalize.h"
#include "tests/graph/graph_test_util.h"

/* Both tensors have the same shape and elements (NaN equals NaN). */
static void expect_same(const loom_graph_value *a, const loom_graph_value *b, const char *what) {
  cr_assert_eq(a->t.ndim, b->t.ndim, "%s: rank %d vs %d", what, a->t.ndim, b->t.ndim);
  for (int i = 0; i < a->t.ndim; i++) cr_assert_eq(a->t.shape[i], b->t.shape[i], "%s: axis %d", what, i);
  for (size_t i = 0; i < a->t.numel; i++) {
    double x = loom_graph_tensor_get_f64(&a->t, i), y = loom_graph_tensor_get_f64(&b->t, i);
    cr_assert(x == y || (x != x && y != y), "%s: element %zu: %g vs %g", what, i, x, y);
  }
}

static uint64_t rng = 0x9E3779B97F4A7C15u;
static unsigned rnd(unsigned n) {
  rng = rng * 6364136223846793005u + 1442695040888963407u;
  return (unsigned)(rng >> 33) % n;
}

/* x: random values of shape sh (f32). */
static loom_graph_value rand_tensor(int nd, const int64_t *sh) {
  loom_graph_value v = gt_tensor(LOOM_DTYPE_F32, nd, sh, NULL);
  for (size_t i = 0; i < v.t.numel; i++) loom_graph_tensor_set_f64(&v.t, i, (double)((int)rnd(17) - 8) / 4);
  return v;
}

static loom_graph_value ints(int nd, int64_t n, const int64_t *v) {
  loom_graph_value t = gt_tensor(LOOM_DTYPE_I64, nd, &n, NULL);
  for (int64_t i = 0; i < n; i++) loom_graph_tensor_set_i64(&t.t, (size_t)i, v[i]);
  return t;
}

/* "(2, 0, 5)" */
static void dims_text(char *buf, size_t cap, int nd, const int64_t *sh) {
  size_t k = (size_t)snprintf(buf, cap, "(");
  for (int i = 0; i < nd; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)sh[i]);
  snprintf(buf + k, cap - k, "%s)", nd == 1 ? "," : "");
}

static void list_text(char *buf, size_t cap, size_t n, const int64_t *v) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)v[i]);
  snprintf(buf + k, cap - k, "]");
}

LOOM_TEST(graph_dyn, reduce_with_runtime_axes_matches_attribute_axes) {
  static const char *ops[] = {"sum", "mean", "max", "min", "prod"};
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 7};
  for (int trial = 0; trial < 60; trial++) {
    int nd = 1 + (int)rnd(4);
    int64_t sh[4], ax[4];
    for (int i = 0; i < nd; i++) sh[i] = sizes[rnd(6)];
    size_t na = 0;
    for (int i = 0; i < nd; i++)
      if (rnd(2)) ax[na++] = rnd(2) ? i : i - nd; /* negative axes count from the end */
    if (!na) ax[na++] = (int64_t)rnd((unsigned)nd);
    bool keep = rnd(2);
    const char *op = ops[rnd(5)];
    char xt[64], lt[64], text[512];
    dims_text(xt, sizeof xt, nd, sh);
    list_text(lt, sizeof lt, na, ax);
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[%s, f32], a: Tensor[(%zu,), i64]) -> Object {\n"
             "  s = %s(x, axes=%s, keepdims=%s)\n  d = %s(x, a, keepdims=%s)\n  r = (s, d)\n  return r\n}\n",
             xt, na, op, lt, keep ? "true" : "false", op, keep ? "true" : "false");
    loom_graph_module *m = gt_parse_ok(text);
    const loom_sinfo *ds = gt_binding(m, "main", "d")->var->sinfo;
    cr_assert_eq(ds->ndim, keep ? nd : nd - (int)na, "%s", text);
    loom_graph_value args[2] = {rand_tensor(nd, sh), ints(1, (int64_t)na, ax)};
    loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
    expect_same(&r.items[0], &r.items[1], text);
    loom_graph_value_free(&r);
    gt_free_args(args, 2);
    loom_graph_module_destroy(m);
  }
}

LOOM_TEST(graph_dyn, reduce_inference_keeps_rank_and_ones) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(n, 1, 3), f32], a: Tensor[(2,), i64]) -> Object {\n"
                                     "  k = sum(x, a, keepdims=true)\n  d = max(x, a)\n  r = (k, d)\n  return r\n}\n");
  const loom_sinfo *k = gt_binding(m, "main", "k")->var->sinfo, *d = gt_binding(m, "main", "d")->var->sinfo;
  cr_assert_eq(k->ndim, 3);
  int64_t c;
  cr_assert(loom_sym_is_const(k->dims[1], &c) && c == 1, "x's size-1 axis stays 1 with keepdims");
  cr_assert(!loom_sym_is_const(k->dims[0], &c) && !loom_sym_is_const(k->dims[2], &c));
  cr_assert_eq(d->ndim, 1);
  loom_graph_module_destroy(m);
  /* bad operands are refused when the module is read */
  static const struct {
    const char *body, *want;
  } bad[] = {
      {"  y = sum(x, a, axes=[0])\n", "not both"},
      {"  y = sum(x, f)\n", "operand 1 (axes) has dtype f32"},
      {"  y = argmax(x, a)\n", "argmax"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char text[512], *err;
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[(2, 3), f32], a: Tensor[(1,), i64], f: Tensor[(1,), f32]) -> Object {\n%s  return y\n}\n",
             bad[i].body);
    loom_graph_module *mm = gt_parse(text, &err);
    cr_assert_null(mm, "%s parsed", bad[i].body);
    cr_assert(err && strstr(err, bad[i].want), "%s: %s", bad[i].body, err ? err : "?");
    free(err);
  }
}

LOOM_TEST(graph_dyn, reduce_axes_errors_name_the_values) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(2, 3), f32], a: Tensor[(2,), i64]) -> Object {\n"
                                     "  y = sum(x, a, keepdims=true)\n  return y\n}\n");
  loom_graph_value args[2] = {rand_tensor(2, (int64_t[]){2, 3}), ints(1, 2, (int64_t[]){0, -2})};
  char *msg = gt_eval_err(m, 2, args);
  cr_assert(strstr(msg, "sum: operand 1 (axes) lists axis 0 twice"), "%s", msg);
  free(msg);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 2, (int64_t[]){0, 2});
  msg = gt_eval_err(m, 2, args);
  cr_assert(strstr(msg, "sum: operand 1 (axes) value 2 is out of range for rank 2"), "%s", msg);
  free(msg);
  gt_free_args(args, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, max_min_over_an_empty_axis_give_the_identity) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(2, 0), f32], i: Tensor[(2, 0), i32]) -> Object {\n"
                                     "  a = max(x, axes=[1])\n  b = min(x, axes=[1])\n  c = max(i, axes=[1])\n"
                                     "  r = (a, b, c)\n  return r\n}\n");
  loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 0}, NULL), gt_tensor(LOOM_DTYPE_I32, 2, (int64_t[]){2, 0}, NULL)};
  loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){2}, (double[]){-INFINITY, -INFINITY}, 1e-6);
  gt_expect_values(&r.items[1], 1, (int64_t[]){2}, (double[]){INFINITY, INFINITY}, 1e-6);
  gt_expect_values(&r.items[2], 1, (int64_t[]){2}, (double[]){-2147483648.0, -2147483648.0}, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(args, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, reshape_with_a_runtime_shape) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(a, b, c), f32], s: Tensor[(2,), i64]) -> Object {\n"
                                     "  y = reshape(x, s)\n  return y\n}\n");
  cr_assert_eq(gt_binding(m, "main", "y")->var->sinfo->ndim, 2);
  double xv[24];
  for (int i = 0; i < 24; i++) xv[i] = i;
  loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, xv), ints(1, 2, (int64_t[]){0, -1})};
  loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
  gt_expect_values(&r, 2, (int64_t[]){2, 12}, xv, 1e-6); /* 0 copies axis 0, -1 is 24 / 2 */
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 2, (int64_t[]){5, -1});
  char *msg = gt_eval_err(m, 2, args);
  cr_assert(strstr(msg, "reshape: operand 1 (shape) [5, -1]: cannot infer the -1 from operand 0 [2, 3, 4] (24 elements)"), "%s", msg);
  free(msg);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 2, (int64_t[]){-1, -1});
  msg = gt_eval_err(m, 2, args);
  cr_assert(strstr(msg, "has -1 at positions 0 and 1"), "%s", msg);
  free(msg);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 2, (int64_t[]){4, 5});
  msg = gt_eval_err(m, 2, args);
  cr_assert(strstr(msg, "operand 1 (shape) [4, 5] has 20 elements, operand 0 [2, 3, 4] has 24"), "%s", msg);
  free(msg);
  gt_free_args(args, 2);
  loom_graph_module_destroy(m);
  /* allowzero: 0 is a real size (an empty input) */
  m = gt_parse_ok("fn @main(x: Tensor[(a, b), f32], s: Tensor[(2,), i64]) -> Object {\n"
                  "  y = reshape(x, s, allowzero=true)\n  return y\n}\n");
  loom_graph_value e[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){0, 3}, NULL), ints(1, 2, (int64_t[]){3, 0})};
  r = gt_eval_ok(m, 2, e, NULL);
  gt_expect_values(&r, 2, (int64_t[]){3, 0}, NULL, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(e, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, slice_with_runtime_bounds) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(n,), f32], b: Tensor[(1,), i64], e: Tensor[(1,), i64],"
                                     " a: Tensor[(1,), i64], s: Tensor[(1,), i64]) -> Object {\n"
                                     "  y = strided_slice(x, b, e, a, s)\n  return y\n}\n");
  double xv[10];
  for (int i = 0; i < 10; i++) xv[i] = i;
  static const struct {
    int64_t b, e, s, n;
    double want[10];
  } cases[] = {
      {-1, -100, -3, 4, {9, 6, 3, 0}},  /* negative step from the end, clamped below */
      {20, 2, -2, 4, {9, 7, 5, 3}},     /* start clamped to the last index */
      {2, 1000, 3, 3, {2, 5, 8}},       /* end clamped */
      {-3, 100, 1, 3, {7, 8, 9}},
      {5, 5, 1, 0, {0}},                /* empty */
      {0, -1, -1, 0, {0}},              /* empty, negative step */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    loom_graph_value args[5] = {gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){10}, xv), ints(1, 1, &cases[i].b),
                                ints(1, 1, &cases[i].e), ints(1, 1, (int64_t[]){0}), ints(1, 1, &cases[i].s)};
    loom_graph_value r = gt_eval_ok(m, 5, args, NULL);
    gt_expect_values(&r, 1, &cases[i].n, cases[i].want, 1e-6);
    loom_graph_value_free(&r);
    gt_free_args(args, 5);
  }
  loom_graph_value args[5] = {gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){10}, xv), ints(1, 1, (int64_t[]){0}),
                              ints(1, 1, (int64_t[]){3}), ints(1, 1, (int64_t[]){0}), ints(1, 1, (int64_t[]){0})};
  char *msg = gt_eval_err(m, 5, args);
  cr_assert(strstr(msg, "strided_slice: operand 4 (steps) value 0 is 0"), "%s", msg);
  free(msg);
  loom_graph_value_free(&args[3]);
  args[3] = ints(1, 1, (int64_t[]){1});
  msg = gt_eval_err(m, 5, args);
  cr_assert(strstr(msg, "operand 3 (axes) value 1 is out of range for rank 1"), "%s", msg);
  free(msg);
  gt_free_args(args, 5);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, slice_with_runtime_bounds_matches_attribute_bounds) {
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 7};
  for (int trial = 0; trial < 40; trial++) {
    int nd = 1 + (int)rnd(3);
    int64_t sh[3], b[3], e[3], ax[3], st[3];
    for (int i = 0; i < nd; i++) sh[i] = sizes[rnd(6)];
    size_t na = 1 + rnd((unsigned)nd);
    for (size_t k = 0; k < na; k++) {
      ax[k] = (int64_t)((k + (size_t)trial) % (size_t)nd);
      for (size_t j = 0; j < k; j++)
        if (ax[j] == ax[k]) ax[k] = -1;
      b[k] = (int64_t)rnd(9) - 4, e[k] = (int64_t)rnd(11) - 3, st[k] = (int64_t)(1 + rnd(3)) * (rnd(2) ? 1 : -1);
    }
    size_t w = 0; /* drop duplicate axes */
    for (size_t k = 0; k < na; k++)
      if (ax[k] >= 0) ax[w] = ax[k], b[w] = b[k], e[w] = e[k], st[w] = st[k], w++;
    na = w;
    char xt[64], at[64], bt[64], et[64], stt[64], text[768];
    dims_text(xt, sizeof xt, nd, sh);
    list_text(at, sizeof at, na, ax);
    list_text(bt, sizeof bt, na, b);
    list_text(et, sizeof et, na, e);
    list_text(stt, sizeof stt, na, st);
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[%s, f32], b: Tensor[(%zu,), i64], e: Tensor[(%zu,), i64], a: Tensor[(%zu,), i64],"
             " s: Tensor[(%zu,), i64]) -> Object {\n"
             "  y = strided_slice(x, axes=%s, begin=%s, end=%s, strides=%s)\n  d = strided_slice(x, b, e, a, s)\n"
             "  r = (y, d)\n  return r\n}\n",
             xt, na, na, na, na, at, bt, et, stt);
    loom_graph_module *m = gt_parse_ok(text);
    loom_graph_value args[5] = {rand_tensor(nd, sh), ints(1, (int64_t)na, b), ints(1, (int64_t)na, e),
                                ints(1, (int64_t)na, ax), ints(1, (int64_t)na, st)};
    loom_graph_value r = gt_eval_ok(m, 5, args, NULL);
    expect_same(&r.items[0], &r.items[1], text);
    loom_graph_value_free(&r);
    gt_free_args(args, 5);
    loom_graph_module_destroy(m);
  }
}

LOOM_TEST(graph_dyn, pad_with_runtime_pads_value_and_axes) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(a, b), f32], p: Tensor[(4,), i64], v: Tensor[(), f32]) -> Object {\n"
                                     "  y = pad(x, p, v)\n  return y\n}\n");
  cr_assert_eq(gt_binding(m, "main", "y")->var->sinfo->ndim, 2);
  /* pads [1, -1, 0, 2]: one row before; the first column cropped, two after */
  loom_graph_value args[3] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                              ints(1, 4, (int64_t[]){1, -1, 0, 2}), gt_tensor(LOOM_DTYPE_F32, 0, NULL, (double[]){9})};
  loom_graph_value r = gt_eval_ok(m, 3, args, NULL);
  gt_expect_values(&r, 2, (int64_t[]){3, 4}, (double[]){9, 9, 9, 9, 2, 3, 9, 9, 5, 6, 9, 9}, 1e-6);
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 4, (int64_t[]){0, -2, 0, -2});
  char *msg = gt_eval_err(m, 3, args);
  cr_assert(strstr(msg, "pad: operand 1 (pads) -2 before and -2 after axis 1 of size 3 leave -1"), "%s", msg);
  free(msg);
  gt_free_args(args, 3);
  loom_graph_module_destroy(m);
  /* axes: pads only the listed axes; an empty input */
  m = gt_parse_ok("fn @main(x: Tensor[(a, b), f32], p: Tensor[(2,), i64], v: Tensor[(), f32], ax: Tensor[(1,), i64]) -> Object {\n"
                  "  y = pad(x, p, v, ax)\n  return y\n}\n");
  loom_graph_value c[4] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){0, 2}, NULL), ints(1, 2, (int64_t[]){1, 1}),
                           gt_tensor(LOOM_DTYPE_F32, 0, NULL, (double[]){7}), ints(1, 1, (int64_t[]){-2})};
  r = gt_eval_ok(m, 4, c, NULL);
  gt_expect_values(&r, 2, (int64_t[]){2, 2}, (double[]){7, 7, 7, 7}, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(c, 4);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, tri_cumsum_range_with_runtime_operands) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, n), f32], k: Tensor[(), i64], v: Tensor[(m,), f32], a: Tensor[(), i64]) -> Object {\n"
      "  u = triu(x, k)\n  l = tril(x, k)\n  c = cumsum(v, a, reverse=true)\n  e = cumsum(v, a, reverse=true, exclusive=true)\n"
      "  r = (u, l, c, e)\n  return r\n}\n");
  const loom_sinfo *us = gt_binding(m, "main", "u")->var->sinfo, *xs = loom_graph_module_find_func(m, "main")->params[0]->sinfo;
  cr_assert(loom_sinfo_equal(us, xs), "triu with a run-time k keeps x's shape exactly");
  loom_graph_value args[4] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){3, 3}, (double[]){1, 1, 1, 1, 1, 1, 1, 1, 1}),
                              gt_tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){1}),
                              gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3}),
                              gt_tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){-1})};
  loom_graph_value r = gt_eval_ok(m, 4, args, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){3, 3}, (double[]){0, 1, 1, 0, 0, 1, 0, 0, 0}, 1e-6);
  gt_expect_values(&r.items[1], 2, (int64_t[]){3, 3}, (double[]){1, 1, 0, 1, 1, 1, 1, 1, 1}, 1e-6);
  gt_expect_values(&r.items[2], 1, (int64_t[]){3}, (double[]){6, 5, 3}, 1e-6);
  gt_expect_values(&r.items[3], 1, (int64_t[]){3}, (double[]){5, 3, 0}, 1e-6);
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[3]);
  args[3] = gt_tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){1});
  char *msg = gt_eval_err(m, 4, args);
  cr_assert(strstr(msg, "cumsum: operand 1 (axis) value 1 is out of range for rank 1"), "%s", msg);
  free(msg);
  gt_free_args(args, 4);
  loom_graph_module_destroy(m);

  m = gt_parse_ok("fn @main(s: Tensor[(), i32], l: Tensor[(), i32], d: Tensor[(), i32], f: Tensor[(), f32]) -> Object {\n"
                  "  a = arange(s, l, d)\n  b = arange(f, f, f)\n  r = (a, b)\n  return r\n}\n");
  cr_assert_eq(gt_binding(m, "main", "a")->var->sinfo->dtype, LOOM_DTYPE_I32);
  loom_graph_value ra[4] = {gt_tensor(LOOM_DTYPE_I32, 0, NULL, (double[]){10}), gt_tensor(LOOM_DTYPE_I32, 0, NULL, (double[]){2}),
                            gt_tensor(LOOM_DTYPE_I32, 0, NULL, (double[]){-3}), gt_tensor(LOOM_DTYPE_F32, 0, NULL, (double[]){1})};
  r = gt_eval_ok(m, 4, ra, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){3}, (double[]){10, 7, 4}, 1e-6);
  gt_expect_values(&r.items[1], 1, (int64_t[]){0}, NULL, 1e-6);
  loom_graph_value_free(&r);
  loom_graph_value_free(&ra[2]);
  ra[2] = gt_tensor(LOOM_DTYPE_I32, 0, NULL, (double[]){0});
  msg = gt_eval_err(m, 4, ra);
  cr_assert(strstr(msg, "arange: operand 2 (delta) is 0 (start 10, limit 2)"), "%s", msg);
  free(msg);
  gt_free_args(ra, 4);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, expand_dims_and_squeeze_with_runtime_axes) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(a, b), f32], e: Tensor[(2,), i64], s: Tensor[(2,), i64]) -> Object {\n"
                                     "  y = expand_dims(x, e)\n  z = squeeze(y, s)\n  r = (y, z)\n  return r\n}\n");
  cr_assert_eq(gt_binding(m, "main", "y")->var->sinfo->ndim, 4);
  cr_assert_eq(gt_binding(m, "main", "z")->var->sinfo->ndim, 2);
  double xv[6] = {1, 2, 3, 4, 5, 6};
  loom_graph_value args[3] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, xv), ints(1, 2, (int64_t[]){0, -1}),
                              ints(1, 2, (int64_t[]){3, 0})};
  loom_graph_value r = gt_eval_ok(m, 3, args, NULL);
  gt_expect_values(&r.items[0], 4, (int64_t[]){1, 2, 3, 1}, xv, 1e-6);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 3}, xv, 1e-6);
  loom_graph_value_free(&r);
  loom_graph_value_free(&args[2]);
  args[2] = ints(1, 2, (int64_t[]){0, 2});
  char *msg = gt_eval_err(m, 3, args);
  cr_assert(strstr(msg, "squeeze: operand 0 axis 2 is 3, not 1"), "%s", msg);
  free(msg);
  loom_graph_value_free(&args[1]);
  args[1] = ints(1, 2, (int64_t[]){1, -3});
  msg = gt_eval_err(m, 3, args);
  cr_assert(strstr(msg, "expand_dims: operand 1 (axes) lists axis 1 twice"), "%s", msg);
  free(msg);
  gt_free_args(args, 3);
  loom_graph_module_destroy(m);
}

/* sum over run-time axes and reshape to a run-time target bind their dims from data first
 * (legalize_expand.c): a dims program, tensor_to_shape, match_cast; the reshape is then a view. */
LOOM_TEST(graph_dyn, legalization_binds_runtime_dims_before_the_programs) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(n, 4), f32], a: Tensor[(1,), i64], s: Tensor[(2,), i64]) -> Object {\n"
                                     "  y = sum(x, a)\n  z = reshape(x, s)\n  w = exp(x)\n  r = (y, z, w)\n  return r\n}\n");
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  size_t done = 0, kept = 0;
  loom_status st = loom_graph_legalize(m, &dl, &done, &kept);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  cr_assert_eq(done, 3);
  cr_assert_eq(kept, 0);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  const char *text = loom_strbuf_cstr(&sb);
  cr_assert(strstr(text, "= tensor_to_shape(y_dims)") && strstr(text, "match_cast(y_shape_v, Shape[("), "%s", text);
  cr_assert(strstr(text, "call_tp(@reshape_dims_f32_r2_n2_i64, (x, s)") && strstr(text, "= reshape(x, shape=["), "%s", text);
  loom_strbuf_free(&sb);
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_dyn, printed_forms_parse_back_with_their_fresh_dims) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 1, 3), f32], a: Tensor[(2,), i64], s: Tensor[(2,), i64], k: Tensor[(), i64],"
      " p: Tensor[(6,), i64]) -> Object {\n"
      "  y = sum(x, a, keepdims=true)\n  z = reshape(x, s, allowzero=true)\n  t = triu(z, k)\n"
      "  c = cumsum(x, k, reverse=true)\n  q = pad(x, p)\n  u = strided_slice(x, s, s, a)\n  r = (y, t, c, q, u)\n  return r\n}\n");
  char *once = gt_print(m);
  loom_graph_module *m2 = gt_parse_ok(once);
  char *twice = gt_print(m2);
  cr_assert_str_eq(once, twice);
  cr_assert(strstr(once, "= sum(x, a, keepdims=true)"), "%s", once);
  free(once);
  free(twice);
  loom_graph_module_destroy(m2);
  loom_graph_module_destroy(m);
}

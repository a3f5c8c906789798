/* test_onnx_import_misc.c — the importer's indexing / bitwise / math ops
 * (onnx_import_misc.c): bad attributes name the node and the value; inputs known only at
 * run time (TopK's K, CumSum's axis, Split's sizes) give the right answer for every value and
 * a clear error for a bad one. */
#include <math.h>
#include <stdlib.h>

#include "base/strbuf.h"
#include "frontend/onnx/onnx_import.h"
#include "onnx/onnx_test.h"

/* Imports a one-node model: op with inputs `ins` (each 1-D f32 of 5, or the i64 `idx` of 5),
 * a STRING attribute name=value, returning the import status. */
static loom_status import_one(const char *op, const char **ins, const char *aname, const char *aval) {
  pb g = {0}, model = {0}, attrs = {0}, a = {0};
  if (aname) {
    pb_str(&a, 1, aname), pb_int(&a, 20, 3), pb_str(&a, 4, aval), pb_msg(&attrs, 5, &a);
  }
  const char *outs[] = {"y", NULL};
  pb_node(&g, op, NULL, ins, outs, aname ? &attrs : NULL);
  const char *dims[] = {"5"};
  for (const char **i = ins; *i; i++) {
    bool dup = false;
    for (const char **j = ins; j < i; j++) dup = dup || !strcmp(*i, *j);
    if (!dup) pb_value_info(&g, 11, *i, !strcmp(*i, "idx") ? 7 : !strcmp(*i, "u") ? 2 : 1, 1, dims);
  }
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 18, &g);
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &m);
  pb_free(&model);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(m, &gm);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  return s;
}

LOOM_TEST(onnx, misc_bad_attributes_name_the_node) {
  const char *bs[] = {"u", "u", NULL}, *sc[] = {"x", "idx", "x", NULL}, *ein[] = {"x", NULL};
  EXPECT_ERROR(import_one("BitShift", bs, "direction", "UP"), INVALID_ARGUMENT,
               "node 0 (BitShift): attribute 'direction' is 'UP' (LEFT | RIGHT)");
  EXPECT_ERROR(import_one("ScatterElements", sc, "reduction", "avg"), INVALID_ARGUMENT,
               "node 0 (ScatterElements): attribute 'reduction' is 'avg'");
  EXPECT_ERROR(import_one("Einsum", ein, "equation", "i,i->"), INVALID_ARGUMENT,
               "node 0 (Einsum): equation has more terms than the 1 inputs");
  EXPECT_ERROR(import_one("Einsum", ein, "equation", "ij->i"), INVALID_ARGUMENT,
               "equation: a term has 2 labels for an operand of rank 1");
  EXPECT_ERROR(import_one("Einsum", ein, "equation", "i->j"), INVALID_ARGUMENT,
               "equation: output label 'j' is not an input label");
  cr_assert(import_one("BitShift", bs, "direction", "LEFT") == LOOM_OK);
  cr_assert(import_one("Einsum", ein, "equation", "i -> i") == LOOM_OK);
}

static loom_graph_value vec(loom_dtype dt, int nd, const int64_t *shape, const double *v) {
  loom_graph_value r;
  cr_assert(loom_graph_value_tensor(dt, nd, shape, &r) == LOOM_OK);
  for (size_t i = 0; i < r.t.numel; i++) loom_graph_tensor_set_f64(&r.t, i, v[i]);
  return r;
}

static loom_graph_module *import_node_test(const char *test, loom_onnx_model **m) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, test);
  loom_status s = loom_onnx_model_load(path, m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(*m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  return gm;
}

/* CumSum with its axis a graph input: every axis of the 2-D input, negative ones too. */
LOOM_TEST(onnx, cumsum_runtime_axis_every_value) {
  loom_onnx_model *m;
  loom_graph_module *gm = import_node_test("test_cumsum_2d_axis_0", &m);
  static const double want[2][6] = {{1, 2, 3, 5, 7, 9}, {1, 3, 6, 4, 9, 15}};
  for (int64_t ax = -2; ax < 2; ax++) {
    loom_graph_value args[2] = {vec(LOOM_DTYPE_F64, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                                vec(LOOM_DTYPE_I32, 0, NULL, (double[]){(double)ax})};
    loom_graph_value res;
    loom_status s = loom_graph_eval(gm, "main", 2, args, NULL, &res);
    cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
    for (size_t i = 0; i < 6; i++)
      cr_assert_eq(loom_graph_tensor_get_f64(&res.t, i), want[(ax + 2) % 2][i], "axis %lld element %zu", (long long)ax, i);
    loom_graph_value_free(&res);
    loom_graph_value_free(&args[0]);
    loom_graph_value_free(&args[1]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* TopK with K a graph input: the result extent follows K; K above the axis is an error. */
LOOM_TEST(onnx, topk_runtime_k) {
  loom_onnx_model *m;
  loom_graph_module *gm = import_node_test("test_top_k", &m);
  for (int64_t k = 0; k <= 5; k++) {
    loom_graph_value args[2] = {vec(LOOM_DTYPE_F32, 2, (int64_t[]){3, 4}, (double[]){0, 1, 2, 3, 7, 6, 5, 4, 8, 11, 9, 10}),
                                vec(LOOM_DTYPE_I64, 1, (int64_t[]){1}, (double[]){(double)k})};
    loom_graph_value res;
    loom_status s = loom_graph_eval(gm, "main", 2, args, NULL, &res);
    if (k == 5) {
      EXPECT_ERROR(s, INVALID_ARGUMENT, "k is 5, operand 0 axis 1 is 4");
    } else {
      cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
      cr_assert_eq(res.kind, LOOM_SINFO_TUPLE);
      cr_assert_eq(res.items[0].t.shape[1], k);
      if (k >= 2) { /* row 2: 11 (1), 10 (3) */
        cr_assert_eq(loom_graph_tensor_get_f64(&res.items[0].t, 2 * (size_t)k + 1), 10);
        cr_assert_eq(loom_graph_tensor_get_i64(&res.items[1].t, 2 * (size_t)k + 1), 3);
      }
      loom_graph_value_free(&res);
    }
    loom_graph_value_free(&args[0]);
    loom_graph_value_free(&args[1]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* Split with its sizes a graph input: sizes that do not add up to the axis are an error. */
LOOM_TEST(onnx, split_runtime_sizes) {
  loom_onnx_model *m;
  loom_graph_module *gm = import_node_test("test_split_variable_parts_1d_opset13", &m);
  for (int bad = 0; bad < 2; bad++) {
    loom_graph_value args[2] = {vec(LOOM_DTYPE_F32, 1, (int64_t[]){6}, (double[]){1, 2, 3, 4, 5, 6}),
                                vec(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){bad ? 3 : 0, bad ? 4 : 6})};
    loom_graph_value res;
    loom_status s = loom_graph_eval(gm, "main", 2, args, NULL, &res);
    if (bad) {
      EXPECT_ERROR(s, INVALID_ARGUMENT, "the sizes add up to");
    } else {
      cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
      cr_assert_eq(res.items[0].t.shape[0], 0);
      cr_assert_eq(res.items[1].t.shape[0], 6);
      cr_assert_eq(loom_graph_tensor_get_f64(&res.items[1].t, 5), 6);
      loom_graph_value_free(&res);
    }
    loom_graph_value_free(&args[0]);
    loom_graph_value_free(&args[1]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* ---- Einsum through one matmul ------------------------------------------------------------------ */

/* A naive einsum of two operands with letter labels (no repeats within a term): y[o] = sum over
 * the other labels of a[la] * b[lb]. `size` maps a label to its extent. */
static void naive_einsum(const char *la, const char *lb, const char *lo, const int64_t size[128], const float *a,
                         const float *b, double *y, size_t ny) {
  char all[32];
  int n = 0;
  for (const char *s = lo; *s; s++) all[n++] = *s;
  for (const char *s = la; *s; s++)
    if (!memchr(all, *s, (size_t)n)) all[n++] = *s;
  for (const char *s = lb; *s; s++)
    if (!memchr(all, *s, (size_t)n)) all[n++] = *s;
  for (size_t i = 0; i < ny; i++) y[i] = 0;
  int64_t idx[128] = {0}, total = 1;
  for (int k = 0; k < n; k++) total *= size[(int)all[k]];
  for (int64_t it = 0; it < total; it++) {
    int64_t r = it;
    for (int k = n - 1; k >= 0; k--) idx[(int)all[k]] = r % size[(int)all[k]], r /= size[(int)all[k]];
    size_t ia = 0, ib = 0, io = 0;
    for (const char *s = la; *s; s++) ia = ia * (size_t)size[(int)*s] + (size_t)idx[(int)*s];
    for (const char *s = lb; *s; s++) ib = ib * (size_t)size[(int)*s] + (size_t)idx[(int)*s];
    for (const char *s = lo; *s; s++) io = io * (size_t)size[(int)*s] + (size_t)idx[(int)*s];
    y[io] += (double)a[ia] * b[ib];
  }
}

/* Two-operand equations (batch, free, contracted, summed-away labels, every output order) with
 * every dim symbolic, evaluated at random extents among 0, 1, small primes and 16 against a
 * naive einsum; the ones with a contraction must import as a matmul. */
LOOM_TEST(onnx, einsum_two_operands_as_matmul) {
  static const struct { const char *eq; bool mm; } cases[] = {
      {"ij,jk->ik", true},       {"bij,bjk->bik", true},    {"bhqd,bhkd->bhqk", true},  {"ik,jk->ij", true},
      {"ij,j->i", true},         {"i,ij->j", true},         {"i,i->", true},            {"bqhd,bkhd->bhqk", true},
      {"ijk,ikl->lj", true},     {"abcd,cdeb->aeb", true},  {"ijx,jk->ki", true},       {"ij,kj->", true},
      {"ij,jk", true},           {"ij,kl->ijkl", false},    {"bi,bi->b", true},         {"ab,ba->", true},
  };
  static const int64_t sizes[] = {0, 1, 2, 3, 5, 7, 13, 16};
  loom_test_rng rng = {loom_test_seed()};
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    char la[8] = {0}, lb[8] = {0}, lo[8] = {0};
    const char *eq = cases[ci].eq, *comma = strchr(eq, ','), *arrow = strstr(eq, "->");
    memcpy(la, eq, (size_t)(comma - eq));
    if (arrow) memcpy(lb, comma + 1, (size_t)(arrow - comma - 1)), strcpy(lo, arrow + 2);
    else { /* implicit output: labels used once, alphabetically */
      strcpy(lb, comma + 1);
      int no = 0;
      for (char ch = 'a'; ch <= 'z'; ch++)
        if ((strchr(la, ch) != NULL) + (strchr(lb, ch) != NULL) == 1) lo[no++] = ch;
    }
    onnx_test_io ins[2] = {{"a", 1, (int)strlen(la), {0}}, {"b", 1, (int)strlen(lb), {0}}};
    static const char *names[26] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
                                    "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "x", "y", "z"};
    for (int k = 0; la[k]; k++) ins[0].dims[k] = names[la[k] - 'a'];
    for (int k = 0; lb[k]; k++) ins[1].dims[k] = names[lb[k] - 'a'];
    onnx_test_io out = {"y", 1, -1, {0}};
    pb attrs = {0}, at = {0};
    pb_str(&at, 1, "equation"), pb_int(&at, 20, 3), pb_str(&at, 4, eq), pb_msg(&attrs, 5, &at);
    loom_onnx_model *m = NULL;
    loom_graph_module *gm = NULL;
    loom_status s = onnx_test_import_one("Einsum", "ein", ins, 2, &out, &attrs, &m, &gm);
    cr_assert(s == LOOM_OK, "%s: %s", eq, loom_status_text(s, 1));
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_graph_print_module(gm, &sb);
    cr_assert_eq(strstr(sb.data, "matmul(") != NULL, cases[ci].mm, "%s: matmul %s expected\n%s", eq,
                 cases[ci].mm ? "" : "not", sb.data);
    loom_strbuf_free(&sb);
    for (int trial = 0; trial < 4; trial++) {
      int64_t size[128] = {0}, sa[8], sbz[8];
      for (char ch = 'a'; ch <= 'z'; ch++) size[(int)ch] = sizes[loom_test_rng_range(&rng, trial ? 0 : 1, 7)];
      for (int k = 0; la[k]; k++) sa[k] = size[(int)la[k]];
      for (int k = 0; lb[k]; k++) sbz[k] = size[(int)lb[k]];
      loom_graph_value args[2];
      cr_assert(loom_graph_value_tensor(LOOM_DTYPE_F32, (int)strlen(la), sa, &args[0]) == LOOM_OK);
      cr_assert(loom_graph_value_tensor(LOOM_DTYPE_F32, (int)strlen(lb), sbz, &args[1]) == LOOM_OK);
      float *fa = malloc(sizeof(float) * (args[0].t.numel + 1)), *fb = malloc(sizeof(float) * (args[1].t.numel + 1));
      for (size_t i = 0; i < args[0].t.numel; i++)
        fa[i] = (float)loom_test_rng_range(&rng, -8, 8) / 4, loom_graph_tensor_set_f64(&args[0].t, i, fa[i]);
      for (size_t i = 0; i < args[1].t.numel; i++)
        fb[i] = (float)loom_test_rng_range(&rng, -8, 8) / 4, loom_graph_tensor_set_f64(&args[1].t, i, fb[i]);
      size_t ny = 1;
      for (int k = 0; lo[k]; k++) ny *= (size_t)size[(int)lo[k]];
      double *want = malloc(sizeof(double) * (ny + 1));
      naive_einsum(la, lb, lo, size, fa, fb, want, ny);
      loom_graph_value res;
      s = loom_graph_eval(gm, "main", 2, args, NULL, &res);
      cr_assert(s == LOOM_OK, "%s: %s", eq, loom_status_text(s, 1));
      cr_assert_eq(res.t.ndim, (int)strlen(lo), "%s: rank", eq);
      for (int k = 0; lo[k]; k++) cr_assert_eq(res.t.shape[k], size[(int)lo[k]], "%s: axis %d", eq, k);
      for (size_t i = 0; i < ny; i++) /* quarter-integer inputs: exact in f32 at these sizes */
        cr_assert_eq(loom_graph_tensor_get_f64(&res.t, i), want[i], "%s trial %d element %zu: %g vs %g", eq, trial, i,
                     loom_graph_tensor_get_f64(&res.t, i), want[i]);
      loom_graph_value_free(&res), loom_graph_value_free(&args[0]), loom_graph_value_free(&args[1]);
      free(fa), free(fb), free(want);
    }
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
  }
}

/* Imports the model `model` (freed), failing the test on an error. */
static loom_graph_module *import_model(pb *model, loom_onnx_model **m) {
  loom_status s = loom_onnx_model_parse(model->d, model->len, "mem.onnx", NULL, m);
  pb_free(model);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(*m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  return gm;
}

/* Softmax / LogSoftmax before opset 13 at an axis short of the last: over the input flattened
 * at that axis (squeezenet's (1, 1000, 1, 1) output, axis 1), against a reference in double. */
LOOM_TEST(onnx, softmax_before_opset_13_flattens_at_its_axis) {
  for (int lg = 0; lg < 2; lg++)
    for (int64_t axis = 0; axis < 3; axis++) {
      pb g = {0}, model = {0}, attrs = {0}, a = {0};
      pb_str(&a, 1, "axis"), pb_int(&a, 20, 2), pb_int(&a, 3, axis), pb_msg(&attrs, 5, &a);
      const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL}, *dims[] = {"2", "3", "4"};
      pb_node(&g, lg ? "LogSoftmax" : "Softmax", "sm", ins, outs, &attrs);
      pb_value_info(&g, 11, "x", 1, 3, dims);
      pb_value_info(&g, 12, "y", 1, 3, dims);
      pb_model(&model, 11, &g);
      loom_onnx_model *m;
      loom_graph_module *gm = import_model(&model, &m);
      double x[24];
      for (int i = 0; i < 24; i++) x[i] = (double)((i * 7) % 11) / 3.0 - 1.5;
      loom_graph_value args[1] = {vec(LOOM_DTYPE_F32, 3, (int64_t[]){2, 3, 4}, x)};
      loom_graph_value res;
      loom_status s = loom_graph_eval(gm, "main", 1, args, NULL, &res);
      cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
      size_t outer = axis == 0 ? 1 : axis == 1 ? 2 : 6, inner = 24 / outer;
      for (size_t o = 0; o < outer; o++) {
        double mx = -1e300, sum = 0;
        for (size_t i = 0; i < inner; i++) mx = fmax(mx, (double)(float)x[o * inner + i]);
        for (size_t i = 0; i < inner; i++) sum += exp((double)(float)x[o * inner + i] - mx);
        for (size_t i = 0; i < inner; i++) {
          double e = (double)(float)x[o * inner + i] - mx, want = lg ? e - log(sum) : exp(e) / sum;
          double got = loom_graph_tensor_get_f64(&res.t, o * inner + i);
          cr_assert(fabs(got - want) <= 1e-6 * (1 + fabs(want)), "%s axis %lld element %zu: %g, want %g",
                    lg ? "LogSoftmax" : "Softmax", (long long)axis, o * inner + i, got, want);
        }
      }
      loom_graph_value_free(&res);
      loom_graph_value_free(&args[0]);
      loom_graph_module_destroy(gm);
      loom_onnx_model_free(m);
    }
}

/* ConstantOfShape of a constant shape too large to fold (AlexNet's and VGG's light models make
 * their fc weights so) becomes full(shape=[...]) filled when the model runs. */
LOOM_TEST(onnx, constant_of_shape_too_large_to_fold_is_a_full) {
  pb g = {0}, model = {0}, t = {0}, attrs = {0}, a = {0}, v = {0};
  int64_t shape[2] = {5000, 5000};
  pb_int(&t, 1, 2), pb_int(&t, 2, 7), pb_str(&t, 8, "shape"), pb_bytes(&t, 9, shape, sizeof shape);
  pb_msg(&g, 5, &t);
  float half = 0.5f;
  pb_int(&v, 1, 1), pb_int(&v, 2, 1), pb_bytes(&v, 9, &half, sizeof half);
  pb_str(&a, 1, "value"), pb_int(&a, 20, 4), pb_msg(&a, 5, &v), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"shape", NULL}, *outs[] = {"y", NULL}, *dims[] = {"5000", "5000"}, *sd[] = {"2"};
  pb_node(&g, "ConstantOfShape", "c", ins, outs, &attrs);
  pb_value_info(&g, 11, "shape", 7, 1, sd);
  pb_value_info(&g, 12, "y", 1, 2, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = import_model(&model, &m);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(gm, &sb);
  cr_assert(strstr(sb.data, "full(shape=[5000, 5000], dtype=f32, value=0.5)") != NULL, "%s", sb.data);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* A constant node whose result is larger than the importer folds (a tied LM head's
 * Transpose(wte)) stays an operator, and is not computed in the importer only to be dropped
 * (that took 60% of `loom import` for GPT-2 124M); a small one is folded. Both compute the
 * transposition. */
LOOM_TEST(onnx, transpose_of_a_large_initializer_is_not_folded_in_the_importer) {
  enum { R = 1024, C = 1025 }; /* 1,049,600 elements: just over the importer's 1 Mi */
  float *w = malloc(sizeof(float) * R * C), s[6] = {1, 2, 3, 4, 5, 6};
  cr_assert_not_null(w);
  for (size_t i = 0; i < (size_t)R * C; i++) w[i] = (float)(i % 1000) * 0.25f;
  pb g = {0}, model = {0}, tw = {0}, ts = {0};
  pb_int(&tw, 1, R), pb_int(&tw, 1, C), pb_int(&tw, 2, 1), pb_str(&tw, 8, "w"), pb_bytes(&tw, 9, w, sizeof(float) * R * C);
  pb_msg(&g, 5, &tw);
  pb_int(&ts, 1, 2), pb_int(&ts, 1, 3), pb_int(&ts, 2, 1), pb_str(&ts, 8, "s"), pb_bytes(&ts, 9, s, sizeof s);
  pb_msg(&g, 5, &ts);
  const char *in_w[] = {"w", NULL}, *in_s[] = {"s", NULL}, *out_w[] = {"wt", NULL}, *out_s[] = {"st", NULL};
  const char *dw[] = {"1025", "1024"}, *ds[] = {"3", "2"};
  pb_node(&g, "Transpose", "tw", in_w, out_w, NULL);
  pb_node(&g, "Transpose", "ts", in_s, out_s, NULL);
  pb_value_info(&g, 12, "wt", 1, 2, dw);
  pb_value_info(&g, 12, "st", 1, 2, ds);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = import_model(&model, &m);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(gm, loom_graph_module_find_func(gm, "main"), &sb);
  cr_assert(strstr(sb.data, "permute_dims(@w") != NULL, "the large transposition is an operator:\n%s", sb.data);
  cr_assert(strstr(sb.data, "permute_dims(@s") == NULL, "the small one is folded:\n%s", sb.data);
  loom_strbuf_free(&sb);
  loom_graph_value res;
  cr_assert_null(loom_graph_eval(gm, "main", 0, NULL, NULL, &res));
  cr_assert_eq(res.kind, LOOM_SINFO_TUPLE);
  const loom_graph_tensor *a = &res.items[0].t, *b = &res.items[1].t;
  cr_assert_eq(a->numel, (size_t)R * C);
  for (size_t j = 0; j < C; j += 97)
    for (size_t i = 0; i < R; i += 31)
      cr_assert_eq(loom_graph_tensor_get_f64(a, j * R + i), w[i * C + j], "wt[%zu, %zu]", j, i);
  for (size_t j = 0; j < 3; j++)
    for (size_t i = 0; i < 2; i++) cr_assert_eq(loom_graph_tensor_get_f64(b, j * 2 + i), s[i * 3 + j], "st[%zu, %zu]", j, i);
  loom_graph_value_free(&res);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  free(w);
}

/* test_onnx_ml.c — TfIdfVectorizer (onnx_import_text.c) and the ai.onnx.ml ops Binarizer,
 * ArrayFeatureExtractor and TreeEnsemble (onnx_import_ml.c) on the interpreter against
 * hand-computed values (the n-gram counts per skip distance, the weighting modes, a pool n-gram
 * given twice; tree paths per compare mode, NaN features, set membership, the four aggregate
 * functions), inputs of 0, 1 and prime lengths; bad attributes refused naming the node and the
 * attribute. The node suite runs the onnx test data through both paths (tests/e2e). */
#include <math.h>

#include "graph/graph.h"
#include "onnx/onnx_test.h"

/* A model of one node `op` of `domain` (NULL: the default) on input x (elem type, dims) and,
 * when y_dims is given, an int64 input y; output z (float, unranked), attributes attrs. */
static loom_status import_ml(const char *domain, const char *op, int elem, int rank, const char **dims, int yrank,
                             const char **ydims, pb *attrs, loom_onnx_model **mm, loom_graph_module **gm) {
  pb g = {0}, model = {0}, n = {0}, opset = {0};
  pb_str(&n, 1, "x");
  if (ydims) pb_str(&n, 1, "y");
  pb_str(&n, 2, "z"), pb_str(&n, 3, "node"), pb_str(&n, 4, op);
  if (domain) pb_str(&n, 7, domain);
  if (attrs) pb_raw(&n, attrs->d, attrs->len), pb_free(attrs);
  pb_msg(&g, 1, &n);
  pb_value_info(&g, 11, "x", elem, rank, dims);
  if (ydims) pb_value_info(&g, 11, "y", 7, yrank, ydims);
  pb_value_info(&g, 12, "z", elem == 11 ? 11 : 1, -1, NULL);
  pb_model(&model, 21, &g);
  if (domain) pb_str(&opset, 1, domain), pb_int(&opset, 2, 5), pb_msg(&model, 8, &opset);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  return s ? s : loom_onnx_import(*mm, gm);
}

static void ints_attr(pb *attrs, const char *name, size_t n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 7);
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(attrs, 5, &a);
}

static void floats_attr(pb *attrs, const char *name, size_t n, const float *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 6);
  for (size_t i = 0; i < n; i++) pb_f32(&a, 7, v[i]);
  pb_msg(attrs, 5, &a);
}

static void str_attr(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 3), pb_str(&a, 4, v), pb_msg(attrs, 5, &a);
}

static void float_attr(pb *attrs, const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 1), pb_f32(&a, 2, v), pb_msg(attrs, 5, &a);
}

/* A TENSOR attribute: rank 1, n elements of ONNX type elem (1 float, 11 double, 2 uint8), raw. */
static void tensor_attr(pb *attrs, const char *name, int elem, size_t n, const void *data) {
  pb a = {0}, t = {0};
  size_t es = elem == 11 ? 8 : elem == 1 ? 4 : 1;
  pb_int(&t, 1, (int64_t)n), pb_int(&t, 2, elem), pb_bytes(&t, 9, data, n * es);
  pb_str(&a, 1, name), pb_int(&a, 20, 4), pb_msg(&a, 5, &t), pb_msg(attrs, 5, &a);
}

/* Runs @main on x (and y when ny > 0); *out is the result. */
static void run_ml(loom_graph_module *gm, loom_dtype dt, int rank, const int64_t *dims, const void *x, size_t ny,
                   const int64_t *y, loom_graph_value *out) {
  loom_graph_value args[2];
  cr_assert_null(loom_graph_value_tensor(dt, rank, dims, &args[0]));
  if (args[0].t.numel) memcpy(args[0].t.data, x, args[0].t.numel * loom_dtype_size(dt));
  int64_t n = (int64_t)ny;
  if (ny) {
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 1, &n, &args[1]));
    memcpy(args[1].t.data, y, ny * sizeof *y);
  }
  loom_status s = loom_graph_eval(gm, "main", ny ? 2 : 1, args, NULL, out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (size_t k = 0; k < (ny ? 2u : 1u); k++) loom_graph_value_free(&args[k]);
}

static void expect_values(const loom_graph_value *v, int rank, const int64_t *dims, const double *want) {
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR);
  cr_assert_eq(v->t.ndim, rank);
  size_t n = 1;
  for (int k = 0; k < rank; k++) {
    cr_assert_eq(v->t.shape[k], dims[k], "dim %d: %lld, want %lld", k, (long long)v->t.shape[k], (long long)dims[k]);
    n *= (size_t)dims[k];
  }
  for (size_t i = 0; i < n; i++) {
    double got = loom_graph_tensor_get_f64(&v->t, i);
    cr_assert(fabs(got - want[i]) <= 1e-6 * (1 + fabs(want[i])), "element %zu: got %.9g, want %.9g", i, got, want[i]);
  }
}

/* ---- TfIdfVectorizer ---- */

/* Pool: unigrams {2, 3}, bigrams {(3, 5), (5, 3), (3, 5) again}: the repeated bigram counts in
 * the later one's column only (the reference's trie keeps the last id). */
static pb tfidf_attrs(const char *mode, int64_t min_n, int64_t max_n, int64_t skip, bool weights) {
  pb attrs = {0};
  static const int64_t pool[] = {2, 3, 3, 5, 5, 3, 3, 5}, counts[] = {0, 2}, index[] = {0, 1, 2, 3, 4};
  static const float w[] = {0.5f, 2, 4, 8, 16};
  onnx_test_int_attr(&attrs, "min_gram_length", min_n), onnx_test_int_attr(&attrs, "max_gram_length", max_n);
  onnx_test_int_attr(&attrs, "max_skip_count", skip), str_attr(&attrs, "mode", mode);
  ints_attr(&attrs, "pool_int64s", 8, pool), ints_attr(&attrs, "ngram_counts", 2, counts), ints_attr(&attrs, "ngram_indexes", 5, index);
  if (weights) floats_attr(&attrs, "weights", 5, w);
  return attrs;
}

/* x = [3 5 3 7 5 3 2] (C = 7, a prime). (3 5) at distance d: d=1 at 0; d=2 at 2 (x[4]); d=4 at 0
 * (x[4]) -> 1, 2, 2, 3 up to d = 1, 2, 3, 4. (5 3) at d: d=1 at 1 and 4; d=4 at 1 (x[5]) -> 2, 2,
 * 2, 3. Unigrams once whatever the skip. (The same values as onnx.reference's TfIdfVectorizer.) */
LOOM_TEST(onnx, tfidf_counts_per_skip_distance_by_hand) {
  static const int32_t x[] = {3, 5, 3, 7, 5, 3, 2};
  const char *dims[] = {"7"};
  int64_t c = 7, five = 5;
  struct {
    int64_t min_n, max_n, skip;
    double want[5]; /* columns: 2, 3, (3 5) first (never), (5 3), (3 5) */
  } cases[] = {
      {1, 1, 3, {1, 3, 0, 0, 0}}, /* unigrams only, the skip changes nothing */
      {2, 2, 0, {0, 0, 0, 2, 1}}, /* bigrams, adjacent */
      {1, 2, 1, {1, 3, 0, 2, 2}}, /* d = 1, 2 */
      {1, 2, 3, {1, 3, 0, 3, 3}}, /* d = 1..4 */
      {2, 2, 5, {0, 0, 0, 3, 3}}, /* d = 1..6: windows past the row's end count nothing */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    pb attrs = tfidf_attrs("TF", cases[k].min_n, cases[k].max_n, cases[k].skip, false);
    loom_onnx_model *mm;
    loom_graph_module *gm;
    loom_status s = import_ml(NULL, "TfIdfVectorizer", 6, 1, dims, 0, NULL, &attrs, &mm, &gm);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_graph_value out;
    run_ml(gm, LOOM_DTYPE_I32, 1, &c, x, 0, NULL, &out);
    cr_log_info("case %zu", k);
    expect_values(&out, 1, &five, cases[k].want);
    loom_graph_value_free(&out);
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(mm);
  }
}

/* Batches of rows [B, C] with C = 0, 1, 2 and 13; IDF and TFIDF with and without weights. */
LOOM_TEST(onnx, tfidf_modes_and_row_lengths) {
  const char *dims[] = {"B", "C"};
  static const int64_t x13[2 * 13] = {3, 5, 2, 2, 9, 3, 5, 3, 1, 1, 1, 5, 3, /* row 2: */ 5, 3, 5, 3, 5, 3, 0, 0, 0, 0, 0, 0, 2};
  struct {
    const char *mode;
    bool w;
  } modes[] = {{"TF", false}, {"IDF", false}, {"IDF", true}, {"TFIDF", false}, {"TFIDF", true}};
  static const float wv[] = {0.5f, 2, 4, 8, 16};
  for (size_t m = 0; m < 5; m++) {
    pb attrs = tfidf_attrs(modes[m].mode, 1, 2, 0, modes[m].w);
    loom_onnx_model *mm;
    loom_graph_module *gm;
    loom_status s = import_ml(NULL, "TfIdfVectorizer", 7, 2, dims, 0, NULL, &attrs, &mm, &gm);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (int64_t cl = 0; cl <= 13; cl++) {
      if (cl > 2 && cl != 13) continue;
      int64_t xd[2] = {2, cl}, od[2] = {2, 5};
      int64_t xb[26];
      for (int64_t r = 0; r < 2; r++)
        for (int64_t i = 0; i < cl; i++) xb[r * cl + i] = x13[r * 13 + i];
      double want[10] = {0};
      for (int64_t r = 0; r < 2; r++) {
        const int64_t *row = xb + r * cl;
        for (int64_t i = 0; i < cl; i++) {
          want[r * 5 + 0] += row[i] == 2, want[r * 5 + 1] += row[i] == 3;
          if (i + 1 < cl) want[r * 5 + 3] += row[i] == 5 && row[i + 1] == 3, want[r * 5 + 4] += row[i] == 3 && row[i + 1] == 5;
        }
        for (int j = 0; j < 5; j++) {
          double f = want[r * 5 + j], wj = modes[m].w ? wv[j] : 1;
          want[r * 5 + j] = !strcmp(modes[m].mode, "TF") ? f : !strcmp(modes[m].mode, "IDF") ? (f > 0 ? wj : 0) : f * wj;
        }
      }
      loom_graph_value out;
      run_ml(gm, LOOM_DTYPE_I64, 2, xd, xb, 0, NULL, &out);
      cr_log_info("mode %s%s C %lld", modes[m].mode, modes[m].w ? " weights" : "", (long long)cl);
      expect_values(&out, 2, od, want);
      loom_graph_value_free(&out);
    }
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(mm);
  }
}

LOOM_TEST(onnx, tfidf_bad_attributes_name_the_node) {
  const char *dims[] = {"4"};
  loom_onnx_model *mm;
  loom_graph_module *gm;
  pb attrs = tfidf_attrs("BM25", 1, 2, 0, false);
  EXPECT_ERROR(import_ml(NULL, "TfIdfVectorizer", 7, 1, dims, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "node 0 (TfIdfVectorizer 'node'): attribute 'mode' is 'BM25' (TF | IDF | TFIDF)");
  loom_onnx_model_free(mm);
  attrs = tfidf_attrs("TF", 2, 1, 0, false);
  EXPECT_ERROR(import_ml(NULL, "TfIdfVectorizer", 7, 1, dims, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "min_gram_length 2 and max_gram_length 1");
  loom_onnx_model_free(mm);
  pb a2 = {0};
  static const int64_t pool[] = {1, 2, 3, 4}, counts[] = {0, 1}, idx[] = {0, 1};
  onnx_test_int_attr(&a2, "min_gram_length", 1), onnx_test_int_attr(&a2, "max_gram_length", 2), str_attr(&a2, "mode", "TF");
  ints_attr(&a2, "pool_int64s", 4, pool), ints_attr(&a2, "ngram_counts", 2, counts), ints_attr(&a2, "ngram_indexes", 2, idx);
  EXPECT_ERROR(import_ml(NULL, "TfIdfVectorizer", 7, 1, dims, 0, NULL, &a2, &mm, &gm), INVALID_ARGUMENT,
               "3 pool items for grams of length 2 (not a multiple)");
  loom_onnx_model_free(mm);
  pb a3 = {0};
  static const int64_t idx3[] = {0, 1, 2};
  onnx_test_int_attr(&a3, "min_gram_length", 1), onnx_test_int_attr(&a3, "max_gram_length", 1), str_attr(&a3, "mode", "TF");
  ints_attr(&a3, "pool_int64s", 2, pool), ints_attr(&a3, "ngram_counts", 1, counts), ints_attr(&a3, "ngram_indexes", 3, idx3);
  EXPECT_ERROR(import_ml(NULL, "TfIdfVectorizer", 7, 1, dims, 0, NULL, &a3, &mm, &gm), INVALID_ARGUMENT,
               "ngram_indexes has 3 entries for the pool's 2 n-grams");
  loom_onnx_model_free(mm);
  attrs = tfidf_attrs("TF", 1, 2, 0, false);
  const char *d3[] = {"2", "2", "2"};
  EXPECT_ERROR(import_ml(NULL, "TfIdfVectorizer", 7, 3, d3, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "input 0 (X) has rank 3; [C] or [B, C] is required");
  loom_onnx_model_free(mm);
}

/* ---- Binarizer, ArrayFeatureExtractor ---- */

LOOM_TEST(onnx, binarizer_and_array_feature_extractor) {
  const char *dims[] = {"N"};
  pb attrs = {0};
  float_attr(&attrs, "threshold", 0.5f);
  loom_onnx_model *mm;
  loom_graph_module *gm;
  loom_status s = import_ml("ai.onnx.ml", "Binarizer", 11, 1, dims, 0, NULL, &attrs, &mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const double x[5] = {-1, 0.5, 0.50001, 7, NAN}, want[5] = {0, 0, 1, 1, 0};
  for (int64_t n = 0; n <= 5; n += 5) {
    loom_graph_value out;
    run_ml(gm, LOOM_DTYPE_F64, 1, &n, x, 0, NULL, &out);
    cr_assert_eq(out.t.dtype, LOOM_DTYPE_F64);
    expect_values(&out, 1, &n, want);
    loom_graph_value_free(&out);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);

  /* integers against a fractional threshold: x > -0.5 holds for 0 (the threshold is not truncated) */
  pb ia = {0};
  float_attr(&ia, "threshold", -0.5f);
  s = import_ml("ai.onnx.ml", "Binarizer", 7, 1, dims, 0, NULL, &ia, &mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const int64_t xi[3] = {-1, 0, 1};
  static const double wi[3] = {0, 1, 1};
  int64_t three = 3;
  loom_graph_value oi;
  run_ml(gm, LOOM_DTYPE_I64, 1, &three, xi, 0, NULL, &oi);
  expect_values(&oi, 1, &three, wi);
  loom_graph_value_free(&oi);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);

  /* X [3, 5] (rows of a prime width), indices [2, 0, 4, 2]; a rank-1 X gives [1, k] */
  const char *xd2[] = {"3", "5"}, *yd[] = {"K"};
  s = import_ml("ai.onnx.ml", "ArrayFeatureExtractor", 1, 2, xd2, 1, yd, NULL, &mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  float xv[15];
  for (int i = 0; i < 15; i++) xv[i] = (float)(i * i);
  static const int64_t idx[] = {2, 0, 4, 2};
  int64_t xs[2] = {3, 5}, os[2] = {3, 4};
  double w2[12];
  for (int r = 0; r < 3; r++)
    for (int j = 0; j < 4; j++) w2[r * 4 + j] = xv[r * 5 + idx[j]];
  loom_graph_value out;
  run_ml(gm, LOOM_DTYPE_F32, 2, xs, xv, 4, idx, &out);
  expect_values(&out, 2, os, w2);
  loom_graph_value_free(&out);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);
  const char *xd1[] = {"5"};
  s = import_ml("ai.onnx.ml", "ArrayFeatureExtractor", 1, 1, xd1, 1, yd, NULL, &mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  int64_t x1 = 5, o1[2] = {1, 4};
  run_ml(gm, LOOM_DTYPE_F32, 1, &x1, xv, 4, idx, &out);
  expect_values(&out, 2, o1, w2);
  loom_graph_value_free(&out);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);
}

/* ---- TreeEnsemble ---- */

/* Two trees on X [N, 2] (double):
 *   tree 0: node 0 (x0 <= 1.5, NaN -> true) ? node 1 : leaf 2;  node 1 (x1 in {2, 4}) ? leaf 0 : leaf 1
 *   tree 1: node 2 (x1 > 0) ? leaf 3 : leaf 4
 * leaves (target, weight): 0 (0, 10), 1 (1, 20), 2 (0, 30), 3 (1, 1), 4 (0, 2). */
static pb tree_attrs(int64_t agg, int64_t post) {
  pb attrs = {0};
  static const int64_t feat[] = {0, 1, 1}, tid[] = {1, 0, 3}, fid[] = {2, 1, 4}, tleaf[] = {0, 1, 1}, fleaf[] = {1, 1, 1};
  static const int64_t mtt[] = {1, 0, 0}, ltarget[] = {0, 1, 0, 1, 0}, roots[] = {0, 2};
  static const double splits[] = {1.5, NAN, 0}, lw[] = {10, 20, 30, 1, 2}, members[] = {2, 4, NAN};
  static const uint8_t modes[] = {0, 6, 3};
  ints_attr(&attrs, "nodes_featureids", 3, feat), ints_attr(&attrs, "nodes_truenodeids", 3, tid);
  ints_attr(&attrs, "nodes_falsenodeids", 3, fid), ints_attr(&attrs, "nodes_trueleafs", 3, tleaf);
  ints_attr(&attrs, "nodes_falseleafs", 3, fleaf), ints_attr(&attrs, "nodes_missing_value_tracks_true", 3, mtt);
  ints_attr(&attrs, "leaf_targetids", 5, ltarget), ints_attr(&attrs, "tree_roots", 2, roots);
  tensor_attr(&attrs, "nodes_splits", 11, 3, splits), tensor_attr(&attrs, "leaf_weights", 11, 5, lw);
  tensor_attr(&attrs, "membership_values", 11, 3, members), tensor_attr(&attrs, "nodes_modes", 2, 3, modes);
  onnx_test_int_attr(&attrs, "n_targets", 2), onnx_test_int_attr(&attrs, "aggregate_function", agg);
  onnx_test_int_attr(&attrs, "post_transform", post);
  return attrs;
}

LOOM_TEST(onnx, tree_ensemble_paths_and_aggregates) {
  /* rows: (1, 2) -> t0 leaf 0 (0,10), t1 leaf 3 (1,1); (1, 3) -> leaf 1 (1,20), leaf 3 (1,1);
   * (2, -1) -> leaf 2 (0,30), leaf 4 (0,2); (NaN, 4) -> leaf 0 (0,10), leaf 3 (1,1);
   * (1.5, NaN) -> x1 NaN is not a member: leaf 1 (1,20); NaN > 0 is false: leaf 4 (0,2) */
  static const double x[] = {1, 2, 1, 3, 2, -1, NAN, 4, 1.5, NAN};
  const double big = 1.7976931348623157e308;
  static const double sum[] = {10, 1, 0, 21, 32, 0, 10, 1, 2, 20};
  const double avg[] = {5, 0.5, 0, 10.5, 16, 0, 5, 0.5, 1, 10};
  const double mn[] = {10, 1, big, 1, 2, big, 10, 1, 2, 20};
  const double mx[] = {10, 1, -big, 20, 30, -big, 10, 1, 2, 20};
  const double *want[4] = {avg, sum, mn, mx};
  const char *dims[] = {"N", "2"};
  for (int64_t agg = 0; agg < 4; agg++) {
    pb attrs = tree_attrs(agg, 0);
    loom_onnx_model *mm;
    loom_graph_module *gm;
    loom_status s = import_ml("ai.onnx.ml", "TreeEnsemble", 11, 2, dims, 0, NULL, &attrs, &mm, &gm);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    for (int64_t n = 0; n <= 5; n += 5) {
      int64_t xd[2] = {n, 2}, od[2] = {n, 2};
      loom_graph_value out;
      run_ml(gm, LOOM_DTYPE_F64, 2, xd, x, 0, NULL, &out);
      cr_log_info("aggregate %lld N %lld", (long long)agg, (long long)n);
      expect_values(&out, 2, od, want[agg]);
      loom_graph_value_free(&out);
    }
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(mm);
  }
}

LOOM_TEST(onnx, ml_bad_input_names_the_node) {
  const char *dims[] = {"N", "2"}, *yd[] = {"2"};
  loom_onnx_model *mm;
  loom_graph_module *gm;
  pb attrs = tree_attrs(1, 2);
  EXPECT_ERROR(import_ml("ai.onnx.ml", "TreeEnsemble", 11, 2, dims, 0, NULL, &attrs, &mm, &gm), UNIMPLEMENTED,
               "node 0 (TreeEnsemble 'node'): attribute 'post_transform' is 2 (only 0, NONE)");
  loom_onnx_model_free(mm);
  attrs = tree_attrs(7, 0);
  EXPECT_ERROR(import_ml("ai.onnx.ml", "TreeEnsemble", 11, 2, dims, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "attribute 'aggregate_function' is 7 (0 to 3)");
  loom_onnx_model_free(mm);
  attrs = tree_attrs(1, 0);
  EXPECT_ERROR(import_ml("ai.onnx.ml", "TreeEnsemble", 1, 2, dims, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "attribute 'nodes_splits' has dtype f64 (f32 expected)");
  loom_onnx_model_free(mm);
  EXPECT_ERROR(import_ml("ai.onnx.ml", "Binarizer", 9, 2, dims, 0, NULL, NULL, &mm, &gm), INVALID_ARGUMENT,
               "node 0 (Binarizer 'node'): input 0 (X) is bool; a number type is required");
  loom_onnx_model_free(mm);
  attrs = tree_attrs(1, 0);
  const char *one_feature[] = {"N", "1"};
  EXPECT_ERROR(import_ml("ai.onnx.ml", "TreeEnsemble", 11, 2, one_feature, 0, NULL, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "nodes_featureids[1] = 1 is out of range (1 features)");
  loom_onnx_model_free(mm);
  const char *x3[] = {"2", "2", "2"};
  EXPECT_ERROR(import_ml("ai.onnx.ml", "TreeEnsemble", 11, 3, x3, 0, NULL, NULL, &mm, &gm), UNIMPLEMENTED,
               "input 0 (X) must be [N, features] of known rank 2");
  loom_onnx_model_free(mm);
  (void)yd;
  EXPECT_ERROR(import_ml("ai.onnx.ml", "Scaler", 1, 2, dims, 0, NULL, NULL, &mm, &gm), UNIMPLEMENTED,
               "op type Scaler of domain 'ai.onnx.ml' is not supported");
  loom_onnx_model_free(mm);
}

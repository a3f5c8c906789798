/* test_onnx_train.c — the optimizers of domain ai.onnx.preview.training (onnx_import_train.c):
 * values against the schema's formulas on both sides of T > 0 (the node tests fix T), several
 * optimized tensors at once, and errors that name the node; ops of a domain the importer does not
 * have are refused naming op type and domain. Dropout in training mode (onnx_import_random.c):
 * numpy's RandomState(seed) draws, ratio and training_mode at run time. */
#include <math.h>

#include "graph/graph.h"
#include "onnx/onnx_test.h"

/* A model of one node `op` of `domain`: inputs R (f32 scalar), T (i64 scalar), then the f32
 * tensors named in ins (2 elements each), outputs outs (f32, 2 elements). */
static loom_status import_opt(const char *domain, const char *op, const char **ins, const char **outs, pb *attrs,
                              loom_onnx_model **mm, loom_graph_module **gm) {
  pb g = {0}, model = {0}, n = {0}, opset = {0};
  pb_str(&n, 1, "R"), pb_str(&n, 1, "T");
  for (const char **i = ins; *i; i++) pb_str(&n, 1, *i);
  for (const char **o = outs; *o; o++) pb_str(&n, 2, *o);
  pb_str(&n, 3, "opt"), pb_str(&n, 4, op), pb_str(&n, 7, domain);
  if (attrs) pb_raw(&n, attrs->d, attrs->len), pb_free(attrs);
  pb_msg(&g, 1, &n);
  const char *two[] = {"2"};
  pb_value_info(&g, 11, "R", 1, 0, NULL);
  pb_value_info(&g, 11, "T", 7, 0, NULL);
  for (const char **i = ins; *i; i++) pb_value_info(&g, 11, *i, 1, 1, two);
  for (const char **o = outs; *o; o++) pb_value_info(&g, 12, *o, 1, 1, two);
  pb_model(&model, 18, &g);
  pb_str(&opset, 1, domain), pb_int(&opset, 2, 1), pb_msg(&model, 8, &opset);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  return s ? s : loom_onnx_import(*mm, gm);
}

static void float_attr(pb *attrs, const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 1), pb_f32(&a, 2, v), pb_msg(attrs, 5, &a);
}

/* Runs @main on R, T and the 2-element tensors vals[k] (k < nin), into out (a tuple). */
static void run_opt(loom_graph_module *gm, float r, int64_t t, size_t nin, const float (*vals)[2], loom_graph_value *out) {
  loom_graph_value args[10];
  int64_t two = 2;
  cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 0, NULL, &args[0]));
  cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 0, NULL, &args[1]));
  ((float *)args[0].t.data)[0] = r, ((int64_t *)args[1].t.data)[0] = t;
  for (size_t k = 0; k < nin; k++) {
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &two, &args[2 + k]));
    memcpy(args[2 + k].t.data, vals[k], sizeof vals[k]);
  }
  loom_status s = loom_graph_eval(gm, "main", 2 + nin, args, NULL, out);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (size_t k = 0; k < 2 + nin; k++) loom_graph_value_free(&args[k]);
}

static void expect_near(const loom_graph_value *v, size_t item, size_t i, double want) {
  cr_assert_eq(v->kind, LOOM_SINFO_TUPLE);
  double got = loom_graph_tensor_get_f64(&v->items[item].t, i);
  cr_assert(fabs(got - want) <= 1e-5 * (1 + fabs(want)), "output %zu element %zu: got %.9g, want %.9g", item, i, got, want);
}

/* Adam, both sides of T > 0: T = 0 takes R unadjusted, T = 3 R * sqrt(1 - beta^3) / (1 - alpha^3). */
LOOM_TEST(onnx, adam_learning_rate_follows_the_update_count) {
  const double alpha = 0.9, beta = 0.8, eps = 0.01, lambda = 0.1, post = 0.25;
  pb attrs = {0};
  float_attr(&attrs, "alpha", (float)alpha), float_attr(&attrs, "beta", (float)beta), float_attr(&attrs, "epsilon", (float)eps);
  float_attr(&attrs, "norm_coefficient", (float)lambda), float_attr(&attrs, "norm_coefficient_post", (float)post);
  const char *ins[] = {"X", "G", "V", "H", NULL}, *outs[] = {"Xn", "Vn", "Hn", NULL};
  loom_onnx_model *mm;
  loom_graph_module *gm;
  loom_status s = import_opt("ai.onnx.preview.training", "Adam", ins, outs, &attrs, &mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const float vals[4][2] = {{1.5f, -2}, {0.25f, 0.5f}, {0.1f, -0.2f}, {0.3f, 0.05f}};
  for (int64_t t = 0; t <= 3; t += 3) {
    loom_graph_value out;
    run_opt(gm, 0.5f, t, 4, vals, &out);
    for (size_t i = 0; i < 2; i++) {
      double x = (float)vals[0][i], g = (float)vals[1][i], v = (float)vals[2][i], h = (float)vals[3][i];
      double gr = (float)lambda * x + g, vn = (float)alpha * v + (1 - (float)alpha) * gr, hn = (float)beta * h + (1 - (float)beta) * gr * gr;
      double r = t > 0 ? 0.5 * sqrt(1 - pow((float)beta, (double)t)) / (1 - pow((float)alpha, (double)t)) : 0.5;
      double xn = (1 - (float)post) * (x - r * vn / (sqrt(hn) + (float)eps));
      expect_near(&out, 0, i, xn), expect_near(&out, 1, i, vn), expect_near(&out, 2, i, hn);
    }
    loom_graph_value_free(&out);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);
}

/* Momentum over two tensors: beta applies once T > 0 (1 before); nesterov adds alpha * V_new. */
LOOM_TEST(onnx, momentum_two_tensors_both_modes) {
  for (int nesterov = 0; nesterov < 2; nesterov++) {
    pb attrs = {0}, a = {0};
    float_attr(&attrs, "alpha", 0.5f), float_attr(&attrs, "beta", 0.25f), float_attr(&attrs, "norm_coefficient", 0.125f);
    pb_str(&a, 1, "mode"), pb_int(&a, 20, 3), pb_str(&a, 4, nesterov ? "nesterov" : "standard"), pb_msg(&attrs, 5, &a);
    const char *ins[] = {"X1", "X2", "G1", "G2", "V1", "V2", NULL}, *outs[] = {"X1n", "X2n", "V1n", "V2n", NULL};
    loom_onnx_model *mm;
    loom_graph_module *gm;
    loom_status s = import_opt("ai.onnx.preview.training", "Momentum", ins, outs, &attrs, &mm, &gm);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    static const float vals[6][2] = {{1, 2}, {-1, 0.5f}, {0.5f, 0.25f}, {2, -4}, {0.125f, 1}, {-0.5f, 0}};
    for (int64_t t = 0; t <= 1; t++) {
      loom_graph_value out;
      run_opt(gm, 0.75, t, 6, vals, &out);
      for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < 2; i++) {
          double x = vals[k][i], g = vals[2 + k][i], v = vals[4 + k][i], b = t > 0 ? 0.25 : 1;
          double gr = 0.125 * x + g, vn = 0.5 * v + b * gr, xn = x - 0.75 * (nesterov ? gr + 0.5 * vn : vn);
          expect_near(&out, k, i, xn), expect_near(&out, 2 + k, i, vn);
        }
      loom_graph_value_free(&out);
    }
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(mm);
  }
}

LOOM_TEST(onnx, optimizer_errors_name_the_node) {
  loom_onnx_model *mm;
  loom_graph_module *gm;
  const char *ins[] = {"X", "G", "H", "X2", NULL}, *outs[] = {"Xn", "Hn", NULL};
  EXPECT_ERROR(import_opt("ai.onnx.preview.training", "Adagrad", ins, outs, NULL, &mm, &gm), INVALID_ARGUMENT,
               "node 0 (Adagrad 'opt'): 6 inputs: R, T and 3 groups of equal length");
  loom_onnx_model_free(mm);
  const char *ins1[] = {"X", "G", "H", NULL}, *outs1[] = {"Xn", NULL};
  EXPECT_ERROR(import_opt("ai.onnx.preview.training", "Adagrad", ins1, outs1, NULL, &mm, &gm), INVALID_ARGUMENT,
               "1 outputs for 1 optimized tensors (expected 2)");
  loom_onnx_model_free(mm);
  pb attrs = {0}, a = {0};
  pb_str(&a, 1, "mode"), pb_int(&a, 20, 3), pb_str(&a, 4, "heavy"), pb_msg(&attrs, 5, &a);
  const char *outs2[] = {"Xn", "Hn", NULL};
  EXPECT_ERROR(import_opt("ai.onnx.preview.training", "Momentum", ins1, outs2, &attrs, &mm, &gm), INVALID_ARGUMENT,
               "attribute 'mode' is 'heavy' (standard | nesterov)");
  loom_onnx_model_free(mm);
  EXPECT_ERROR(import_opt("com.example", "Adagrad", ins1, outs2, NULL, &mm, &gm), UNIMPLEMENTED,
               "node 0 (Adagrad 'opt'): op type Adagrad of domain 'com.example' is not supported");
  loom_onnx_model_free(mm);
  EXPECT_ERROR(import_opt("ai.onnx.preview.training", "Gradient", ins1, outs2, NULL, &mm, &gm), UNIMPLEMENTED,
               "op type Gradient of domain 'ai.onnx.preview.training' is not supported");
  loom_onnx_model_free(mm);
}

/* Dropout(x [7], ratio, training_mode) with seed 0, both outputs. numpy's
 * RandomState(0).uniform(0, 1, 7) = 0.5488135, 0.71518937, 0.60276338, 0.54488318, 0.4236548,
 * 0.64589411, 0.43758721: ratio 0.55 keeps elements 1, 2 and 5 (times 1 / 0.45); ratio 0 or
 * training_mode false keeps all unscaled. */
LOOM_TEST(onnx, dropout_training_mode_draws_as_numpy) {
  pb g = {0}, model = {0}, attrs = {0};
  const char *ins[] = {"x", "r", "t", NULL}, *outs[] = {"y", "mask", NULL}, *seven[] = {"7"};
  onnx_test_int_attr(&attrs, "seed", 0);
  pb_node(&g, "Dropout", "drop", ins, outs, &attrs);
  pb_value_info(&g, 11, "x", 1, 1, seven), pb_value_info(&g, 11, "r", 1, 0, NULL), pb_value_info(&g, 11, "t", 9, 0, NULL);
  pb_value_info(&g, 12, "y", 1, 1, seven), pb_value_info(&g, 12, "mask", 9, 1, seven);
  pb_model(&model, 22, &g);
  loom_onnx_model *mm;
  loom_graph_module *gm = NULL;
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &mm);
  pb_free(&model);
  if (!s) s = loom_onnx_import(mm, &gm);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  static const float x[7] = {1, -2, 3, 4, -5, 6, 7};
  static const bool kept[7] = {false, true, true, false, false, true, false};
  struct {
    float r;
    bool t;
  } cases[] = {{0.55f, true}, {0.55f, false}, {0, true}};
  for (size_t k = 0; k < 3; k++) {
    loom_graph_value args[3], out;
    int64_t n = 7;
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &n, &args[0]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 0, NULL, &args[1]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_BOOL, 0, NULL, &args[2]));
    memcpy(args[0].t.data, x, sizeof x);
    ((float *)args[1].t.data)[0] = cases[k].r, ((bool *)args[2].t.data)[0] = cases[k].t;
    s = loom_graph_eval(gm, "main", 3, args, NULL, &out);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    bool active = cases[k].t && cases[k].r != 0;
    for (size_t i = 0; i < 7; i++) {
      bool keep = !active || kept[i];
      double want = keep ? (active ? x[i] / (1 - (double)cases[k].r) : x[i]) : 0;
      expect_near(&out, 0, i, want);
      cr_assert_eq(loom_graph_tensor_get_i64(&out.items[1].t, i), keep, "case %zu mask %zu", k, i);
    }
    loom_graph_value_free(&out);
    for (size_t i = 0; i < 3; i++) loom_graph_value_free(&args[i]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(mm);
}

/* Draws need X's dims at import and a seed (without one ONNX asks for fresh draws per run). */
LOOM_TEST(onnx, dropout_training_mode_needs_known_dims_and_a_seed) {
  static const struct {
    const char *dim, *want;
  } cases[] = {
      {"N", "node 0 (Dropout 'drop'): training_mode needs the dims of input 0 (data) known at import"},
      {"7", "node 0 (Dropout 'drop'): training_mode without a 'seed' attribute (the draws would differ per run)"},
  };
  for (size_t k = 0; k < 2; k++) {
    pb g = {0}, model = {0};
    const char *ins[] = {"x", "r", "t", NULL}, *outs[] = {"y", NULL}, *dims[] = {cases[k].dim};
    pb_node(&g, "Dropout", "drop", ins, outs, NULL);
    pb_value_info(&g, 11, "x", 1, 1, dims), pb_value_info(&g, 11, "r", 1, 0, NULL), pb_value_info(&g, 11, "t", 9, 0, NULL);
    pb_value_info(&g, 12, "y", 1, 1, dims);
    pb_model(&model, 22, &g);
    loom_onnx_model *mm;
    loom_graph_module *gm = NULL;
    cr_assert_null(loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &mm));
    pb_free(&model);
    EXPECT_ERROR(loom_onnx_import(mm, &gm), UNIMPLEMENTED, cases[k].want);
    loom_onnx_model_free(mm);
  }
}

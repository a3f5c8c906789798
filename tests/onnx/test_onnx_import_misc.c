/* test_onnx_import_misc.c — the importer's indexing / bitwise / math ops
 * (onnx_import_misc.c): bad attributes name the node and the value; inputs known only at
 * run time (TopK's K, CumSum's axis, Split's sizes) give the right answer for every value and
 * a clear error for a bad one. */
#include <stdlib.h>

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

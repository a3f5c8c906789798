/* test_conformance_run.c — the ONNX importer: the whole backend node suite through the
 * conformance runner (the pass count must not drop below tests/onnx/conformance_floor.txt,
 * and no test may FAIL: a wrong answer is worse than an honest UNSUPPORTED), symbolic
 * input dims, and errors that name the node. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "frontend/onnx/onnx_import.h"
#include "onnx/onnx_test.h"

#define FLOOR_FILE "tests/onnx/conformance_floor.txt"

LOOM_TEST(onnx, conformance_node_suite_pass_floor) {
  FILE *f = fopen(FLOOR_FILE, "r");
  cr_assert_not_null(f, "cannot open %s", FLOOR_FILE);
  size_t floor_ = 0;
  cr_assert_eq(fscanf(f, "%zu", &floor_), 1, "%s must start with the pass count", FLOOR_FILE);
  fclose(f);
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  loom_onnx_conformance_totals t;
  loom_status s = loom_onnx_conformance_run(NODE_DIR, NULL, out, &t);
  fclose(out);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  printf("ONNX node suite on the interpreter: %zu passed, %zu failed, %zu unsupported of %zu (floor %zu)\n",
         t.passed, t.failed, t.unsupported, t.total, floor_);
  if (t.failed) /* show the failures */
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
      if (strncmp(line, "FAIL ", 5) == 0) printf("  %s\n", line);
  free(buf);
  cr_assert(t.total > 1000, "the node suite should hold over 1000 tests, found %zu", t.total);
  cr_assert_geq(t.passed, floor_, "pass count %zu dropped below the floor %zu", t.passed, floor_);
  cr_assert_eq(t.failed, 0, "%zu tests give wrong answers or errors", t.failed);
}

/* The other suites of the backend's conformance set, each with its pass floor (raise it when
 * Loom gains ops) and no FAIL allowed. */
LOOM_TEST(onnx, conformance_other_suites_pass_floors) {
  static const struct {
    const char *suite;
    size_t floor;
  } suites[] = {{"pytorch-converted", 82}, {"pytorch-operator", 35}, {"simple", 21}};
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    char dir[512], *buf = NULL;
    size_t len = 0;
    snprintf(dir, sizeof dir, "../shared/conformance/onnx-backend-1.22/%s", suites[i].suite);
    FILE *out = open_memstream(&buf, &len);
    loom_onnx_conformance_totals t;
    loom_status s = loom_onnx_conformance_run(dir, NULL, out, &t);
    fclose(out);
    cr_assert(s == LOOM_OK, "%s: %s", suites[i].suite, loom_status_text(s, 1));
    printf("ONNX %s suite on the interpreter: %zu passed, %zu failed, %zu unsupported of %zu (floor %zu)\n", suites[i].suite,
           t.passed, t.failed, t.unsupported, t.total, suites[i].floor);
    if (t.failed)
      for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        if (strncmp(line, "FAIL ", 5) == 0) printf("  %s\n", line);
    free(buf);
    cr_assert_geq(t.passed, suites[i].floor, "%s: pass count %zu dropped below the floor %zu", suites[i].suite, t.passed,
                  suites[i].floor);
    cr_assert_eq(t.failed, 0, "%s: %zu tests give wrong answers or errors", suites[i].suite, t.failed);
  }
}

static loom_status import_pb(pb *p, loom_onnx_model **mm, loom_graph_module **out) {
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(p->d, p->len, "mem.onnx", NULL, &m);
  pb_free(p);
  *mm = m;
  if (s) return s;
  return loom_onnx_import(m, out);
}

LOOM_TEST(onnx, import_symbolic_dims) {
  pb g = {0}, model = {0};
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Relu", "r", ins, outs, NULL);
  const char *dims[] = {"batch", "?", "4"};
  pb_value_info(&g, 11, "x", 1, 3, dims);
  pb_value_info(&g, 12, "y", 1, 3, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = NULL;
  loom_status s = import_pb(&model, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(gm, &sb);
  cr_assert(strstr(sb.data, "batch") && strstr(sb.data, "unk0"), "%s", sb.data);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, import_unsupported_op_names_the_node) {
  pb g = {0}, model = {0};
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "FancyOp", "fancy", ins, outs, NULL);
  const char *dims[] = {"2"};
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = NULL;
  EXPECT_ERROR(import_pb(&model, &m, &gm), UNIMPLEMENTED, "node 0 (FancyOp 'fancy'): op type FancyOp is not supported");
  cr_assert_null(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, import_malformed_attribute_names_the_node) {
  pb g = {0}, model = {0}, attrs = {0}, a = {0};
  pb_str(&a, 1, "axis"), pb_int(&a, 20, 1), pb_f32(&a, 2, 0.5f), pb_msg(&attrs, 5, &a); /* FLOAT, not INT */
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Softmax", "sm", ins, outs, &attrs);
  const char *dims[] = {"2", "3"};
  pb_value_info(&g, 11, "x", 1, 2, dims);
  pb_value_info(&g, 12, "y", 1, 2, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = NULL;
  EXPECT_ERROR(import_pb(&model, &m, &gm), INVALID_ARGUMENT, "node 0 (Softmax 'sm'): attribute 'axis' must be int, not float");
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, import_unsupported_attribute_names_the_node) {
  pb g = {0}, model = {0}, attrs = {0}, a = {0};
  pb_str(&a, 1, "fmod"), pb_int(&a, 20, 2), pb_int(&a, 3, 1), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"x", "x", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Add", NULL, ins, outs, &attrs);
  const char *dims[] = {"2"};
  pb_value_info(&g, 11, "x", 1, 1, dims);
  pb_value_info(&g, 12, "y", 1, 1, dims);
  pb_model(&model, 13, &g);
  loom_onnx_model *m;
  loom_graph_module *gm = NULL;
  EXPECT_ERROR(import_pb(&model, &m, &gm), UNIMPLEMENTED, "node 0 (Add): attribute 'fmod' is not supported");
  loom_onnx_model_free(m);
}

/* Writes `p` to dir/name and frees it. */
static void write_pb(const char *dir, const char *name, pb *p) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "cannot write %s", path);
  cr_assert_eq(fwrite(p->d, 1, p->len, f), p->len);
  fclose(f);
  pb_free(p);
}

/* TensorProto { dims, data_type, name, raw_data } */
static void tensor_pb(pb *p, const char *name, int elem, int rank, const int64_t *dims, const void *raw, size_t n) {
  for (int i = 0; i < rank; i++) pb_int(p, 1, dims[i]);
  pb_int(p, 2, elem);
  pb_str(p, 8, name);
  pb_bytes(p, 9, raw, n);
}

LOOM_TEST(onnx, conformance_fold_int_inputs) {
  /* A test (written here) whose ReduceSum axes are a graph input of unknown length: the
   * importer cannot give the result a rank, so it is unsupported as is, and passes when the
   * runner freezes integer inputs to the test's values. */
  char root[] = "/tmp/loom-fold-XXXXXX", dir[256], sets[300];
  cr_assert_not_null(mkdtemp(root));
  snprintf(dir, sizeof dir, "%s/test_reduce_sum_axes_of_unknown_length", root);
  snprintf(sets, sizeof sets, "%s/test_data_set_0", dir);
  cr_assert_eq(mkdir(dir, 0700), 0);
  cr_assert_eq(mkdir(sets, 0700), 0);
  pb g = {0}, model = {0}, attrs = {0}, a = {0};
  pb_str(&a, 1, "keepdims"), pb_int(&a, 20, 2), pb_int(&a, 3, 0), pb_msg(&attrs, 5, &a);
  const char *ins[] = {"x", "axes", NULL}, *outs[] = {"y", NULL}, *xd[] = {"2", "3"}, *ad[] = {"?"}, *yd[] = {"2"};
  pb_node(&g, "ReduceSum", NULL, ins, outs, &attrs);
  pb_value_info(&g, 11, "x", 1, 2, xd);
  pb_value_info(&g, 11, "axes", 7, 1, ad);
  pb_value_info(&g, 12, "y", 1, 1, yd);
  pb_model(&model, 13, &g);
  write_pb(dir, "model.onnx", &model);
  const float xv[] = {1, 2, 3, 4, 5, 6}, yv[] = {6, 15};
  const int64_t axv[] = {1}, x_dims[] = {2, 3}, a_dims[] = {1}, y_dims[] = {2};
  pb t = {0};
  tensor_pb(&t, "x", 1, 2, x_dims, xv, sizeof xv), write_pb(sets, "input_0.pb", &t);
  tensor_pb(&t, "axes", 7, 1, a_dims, axv, sizeof axv), write_pb(sets, "input_1.pb", &t);
  tensor_pb(&t, "y", 1, 1, y_dims, yv, sizeof yv), write_pb(sets, "output_0.pb", &t);
  loom_onnx_conformance_totals plain, fold;
  loom_status s = loom_onnx_conformance_run(root, NULL, NULL, &plain);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  s = loom_onnx_conformance_run_ex(root, NULL, true, NULL, &fold);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  cr_assert_eq(plain.total, 1);
  cr_assert_eq(plain.unsupported, 1);
  cr_assert_eq(fold.passed, 1);
  cr_assert_eq(fold.passed_folded, 1, "the test should pass with folded integer inputs");
  cr_assert_eq(fold.failed, 0);
  char path[512];
  static const char *files[] = {"test_data_set_0/input_0.pb", "test_data_set_0/input_1.pb", "test_data_set_0/output_0.pb",
                                "test_data_set_0", "model.onnx"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, files[i]);
    remove(path);
  }
  remove(dir);
  remove(root);
}

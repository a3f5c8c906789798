/* test_onnx_views.c — large initializers used where they lie in the model file (onnx_view.c):
 * initializers, a Constant's tensor and a subgraph's initializer at odd offsets are views into
 * the mapping with the file's values, small ones are aligned copies; a view marker planted in
 * the file is dropped, never followed; a raw_data given twice (the last wins) is loaded as
 * protobuf-c would. tests/fuzz/fuzz_onnx_model.c loads every fuzz input both ways. */
#include <stdio.h>
#include <unistd.h>

#include "onnx/onnx_test.h"

#define VIEW_FIELD 0x0AF1E0u /* onnx_view.h's LOOM_ONNX_VIEW_FIELD (tests may not include it) */

/* TensorProto `name`: f32[n] of v0 + i, raw_data (`extra`: fields appended before raw_data). */
static void tensor(pb *t, const char *name, size_t n, float v0, pb *extra) {
  float *v = malloc((n ? n : 1) * sizeof *v);
  cr_assert_not_null(v);
  for (size_t i = 0; i < n; i++) v[i] = v0 + (float)i;
  pb_int(t, 1, (int64_t)n), pb_int(t, 2, 1), pb_str(t, 8, name);
  if (extra) {
    pb_raw(t, extra->d, extra->len);
    pb_free(extra);
  }
  pb_bytes(t, 9, v, n * sizeof *v);
  free(v);
}

/* Checks tensor t (f32[n], v0 + i): in the file's mapping when `view`, else a 16-byte aligned copy. */
static void expect(const loom_onnx_model *m, const loom_onnx_tensor *t, size_t n, float v0, bool view) {
  cr_assert_not_null(t);
  cr_assert_eq(t->nbytes, n * 4, "%s", t->name);
  const uint8_t *d = t->data, *map = m->file_map;
  bool inside = map && d >= map && d + t->nbytes <= map + m->file_len;
  cr_assert_eq(inside, view, "%s: %s", t->name, view ? "copied, not used in place" : "used in place");
  if (!view) cr_assert_eq((uintptr_t)d % 16, 0, "%s: a copy not 16-byte aligned", t->name);
  for (size_t i = 0; i < n; i += (n / 7) | 1) {
    float f;
    memcpy(&f, d + 4 * i, 4);
    cr_assert_eq(f, v0 + (float)i, "%s[%zu]", t->name, i);
  }
}

static loom_onnx_model *load_file(pb *model, char *path) {
  strcpy(path, "/tmp/loom-test-views-XXXXXX");
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, model->d, model->len), (ssize_t)model->len);
  close(fd);
  pb_free(model);
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_load(path, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  return m;
}

LOOM_TEST(onnx_views, large_initializers_are_used_where_they_lie_in_the_file) {
  const size_t big = LOOM_ONNX_VIEW_MIN / 4 + 3, small = 5;
  pb g = {0}, t = {0};
  /* w (odd name length: an odd offset), s (small), a Constant 'c' (big), If's then-branch 'u' (big) */
  tensor(&t, "w_odd", big, 1.0f, NULL), pb_msg(&g, 5, &t);
  tensor(&t, "s", small, 7.0f, NULL), pb_msg(&g, 5, &t);
  pb attr = {0}, a = {0};
  pb_str(&a, 1, "value"), pb_int(&a, 20, 4);
  tensor(&t, "cv", big + 1, -3.0f, NULL), pb_msg(&a, 5, &t);
  pb_msg(&attr, 5, &a);
  const char *cout[] = {"c", NULL};
  pb_node(&g, "Constant", "const0", NULL, cout, &attr);
  /* the If: then_branch holds initializer u and returns it, else_branch returns w */
  pb then = {0}, els = {0};
  tensor(&t, "u", big + 2, 5.0f, NULL), pb_msg(&then, 5, &t);
  pb_str(&then, 2, "then");
  char len[32];
  snprintf(len, sizeof len, "%zu", big + 2);
  const char *ud[] = {len};
  pb_value_info(&then, 12, "u", 1, 1, ud);
  const char *ins[] = {"w_odd", NULL}, *iout[] = {"wi", NULL};
  pb_node(&els, "Identity", NULL, ins, iout, NULL);
  pb_str(&els, 2, "else");
  pb_value_info(&els, 12, "wi", 1, 1, ud);
  pb branches = {0}, b1 = {0}, b2 = {0};
  pb_str(&b1, 1, "then_branch"), pb_int(&b1, 20, 5), pb_msg(&b1, 6, &then), pb_msg(&branches, 5, &b1);
  pb_str(&b2, 1, "else_branch"), pb_int(&b2, 20, 5), pb_msg(&b2, 6, &els), pb_msg(&branches, 5, &b2);
  const char *ifin[] = {"cond", NULL}, *ifout[] = {"y", NULL};
  pb_node(&g, "If", "if0", ifin, ifout, &branches);
  pb_str(&g, 2, "g");
  const char *one[] = {"1"};
  pb_value_info(&g, 11, "cond", 9, 1, one);
  pb_value_info(&g, 12, "y", 1, 1, ud);
  pb model = {0};
  pb_model(&model, 13, &g);
  char path[64];
  loom_onnx_model *m = load_file(&model, path);
  cr_assert_eq(m->nviews, 3);
  expect(m, loom_onnx_graph_find_initializer(m->graph, "w_odd"), big, 1.0f, true);
  expect(m, loom_onnx_graph_find_initializer(m->graph, "s"), small, 7.0f, false);
  const loom_onnx_attr *cv = loom_onnx_node_attr(&m->graph->nodes[0], "value");
  cr_assert(cv && cv->t);
  expect(m, cv->t, big + 1, -3.0f, true);
  const loom_onnx_attr *tb = loom_onnx_node_attr(&m->graph->nodes[1], "then_branch");
  cr_assert(tb && tb->g);
  expect(m, loom_onnx_graph_find_initializer(tb->g, "u"), big + 2, 5.0f, true);
  cr_assert_eq(m->view_bytes, (3 * big + 3) * 4);
  loom_onnx_model_free(m);
  unlink(path);
}

/* A marker field already in the file is dropped: the small tensor keeps its own bytes (it would
 * otherwise stand for view 0, the big one's). */
LOOM_TEST(onnx_views, a_view_marker_in_the_file_is_never_followed) {
  const size_t big = LOOM_ONNX_VIEW_MIN / 4 + 1;
  pb g = {0}, t = {0}, planted = {0};
  tensor(&t, "w", big, 1.0f, NULL), pb_msg(&g, 5, &t);
  pb_int(&planted, VIEW_FIELD, 0);
  tensor(&t, "s", 4, 9.0f, &planted), pb_msg(&g, 5, &t);
  const char *ins[] = {"s", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Relu", NULL, ins, outs, NULL);
  const char *d4[] = {"4"};
  pb_value_info(&g, 12, "y", 1, 1, d4);
  pb model = {0};
  pb_model(&model, 13, &g);
  char path[64];
  loom_onnx_model *m = load_file(&model, path);
  cr_assert_eq(m->nviews, 1);
  expect(m, loom_onnx_graph_find_initializer(m->graph, "w"), big, 1.0f, true);
  expect(m, loom_onnx_graph_find_initializer(m->graph, "s"), 4, 9.0f, false);
  loom_onnx_model_free(m);
  unlink(path);
}

/* raw_data twice in one tensor: protobuf keeps the last; the in-place walk gives up and the
 * file is unpacked as it is, with the same result. */
LOOM_TEST(onnx_views, a_raw_data_given_twice_loads_as_protobuf_does) {
  const size_t big = LOOM_ONNX_VIEW_MIN / 4 + 1;
  float *first = calloc(big, sizeof *first);
  cr_assert_not_null(first);
  pb g = {0}, t = {0}, extra = {0};
  pb_bytes(&extra, 9, first, big * sizeof *first); /* a first raw_data of zeros, then the ramp */
  free(first);
  tensor(&t, "w", big, 2.0f, &extra), pb_msg(&g, 5, &t);
  const char *ins[] = {"w", NULL}, *outs[] = {"y", NULL};
  pb_node(&g, "Relu", NULL, ins, outs, NULL);
  char len[32];
  snprintf(len, sizeof len, "%zu", big);
  const char *d[] = {len};
  pb_value_info(&g, 12, "y", 1, 1, d);
  pb model = {0};
  pb_model(&model, 13, &g);
  char path[64];
  loom_onnx_model *m = load_file(&model, path);
  cr_assert_eq(m->nviews, 0, "the walk should have given up");
  expect(m, loom_onnx_graph_find_initializer(m->graph, "w"), big, 2.0f, false);
  loom_onnx_model_free(m);
  unlink(path);
}

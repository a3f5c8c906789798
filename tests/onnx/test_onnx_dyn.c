/* test_onnx_dyn.c — ONNX operands that decide structure fed as graph inputs (Reduce* axes,
 * Reshape's shape, Trilu's k, Range's bounds, Pad's pads in every mode, Slice's bounds, CumSum's axis,
 * CenterCropPad's shape, AffineGrid's size, Col2Im's image and block shapes):
 * imported as the graph ops' run-time operand forms, evaluated by the interpreter, and the
 * import / run errors for bad ones name the node, the input and the values. */
#include "frontend/onnx/onnx_import.h"
#include "graph/graph.h"
#include "onnx/onnx_test.h"

typedef onnx_test_io io;

enum { F32 = 1, I32 = 6, I64 = 7 };

#define EXPECT_IMPORT_ERROR(op, ins, out, attrs, code, needle)                                             \
  do {                                                                                                     \
    loom_onnx_model *m_;                                                                                   \
    loom_graph_module *gm_;                                                                                \
    EXPECT_ERROR(onnx_test_import_one(op, "d", ins, sizeof(ins) / sizeof(ins)[0], out, attrs, &m_, &gm_), code, needle); \
    cr_assert_null(gm_);                                                                                   \
    loom_onnx_model_free(m_);                                                                              \
  } while (0)

static loom_graph_value tensor(loom_dtype dt, int nd, const int64_t *sh, const double *v) {
  loom_graph_value t;
  cr_assert(!loom_graph_value_tensor(dt, nd, sh, &t));
  for (size_t i = 0; i < t.t.numel; i++) loom_graph_tensor_set_f64(&t.t, i, v[i]);
  return t;
}

LOOM_TEST(onnx_dyn, bad_runtime_operands_are_refused_at_import) {
  /* axes of unknown length: the result's rank would be unknown */
  io r1[] = {{"x", F32, 2, {"2", "3"}}, {"a", I64, 1, {"?"}}};
  io y = {"y", F32, -1, {NULL}};
  EXPECT_IMPORT_ERROR("ReduceSum", r1, &y, NULL, UNIMPLEMENTED,
                      "node 0 (ReduceSum 'd'): input 1 (axes) must be a constant or a 1-D integer tensor of static length");
  io r2[] = {{"x", F32, 2, {"2", "3"}}, {"a", F32, 1, {"1"}}};
  EXPECT_IMPORT_ERROR("ReduceMax", r2, &y, NULL, UNIMPLEMENTED, "(it is computed at run time)");
  io t1[] = {{"x", F32, 2, {"2", "3"}}, {"k", I64, 1, {"2"}}};
  EXPECT_IMPORT_ERROR("Trilu", t1, &y, NULL, INVALID_ARGUMENT, "node 0 (Trilu 'd'): input 1 (k) must hold one value, got 2");
  io s1[] = {{"x", F32, 2, {"2", "3"}}, {"b", I64, 1, {"2"}}, {"e", I64, 1, {"1"}}};
  EXPECT_IMPORT_ERROR("Slice", s1, &y, NULL, INVALID_ARGUMENT, "input 2 (ends) has 1 values, starts has 2");
  io p1[] = {{"x", F32, 2, {"2", "3"}}, {"p", I64, 1, {"4"}}, {"v", I32, 0, {NULL}}};
  EXPECT_IMPORT_ERROR("Pad", p1, &y, NULL, INVALID_ARGUMENT, "input 2 (constant_value) must have the input's dtype");
  io p2[] = {{"x", F32, 2, {"2", "3"}}, {"p", I64, 1, {"2"}}};
  EXPECT_IMPORT_ERROR("Pad", p2, &y, NULL, INVALID_ARGUMENT, "pads has 2 values for 2 axes");
  io c1[] = {{"x", F32, 1, {"3"}}, {"a", I64, 1, {"2"}}};
  EXPECT_IMPORT_ERROR("CumSum", c1, &y, NULL, INVALID_ARGUMENT, "input 1 (axis) must hold one value, got 2");
  io g1[] = {{"s", F32, 0, {NULL}}, {"l", F32, 1, {"2"}}, {"d", F32, 0, {NULL}}};
  EXPECT_IMPORT_ERROR("Range", g1, &y, NULL, INVALID_ARGUMENT, "node 0 (Range 'd'): input 1 must be a scalar");
}

LOOM_TEST(onnx_dyn, runtime_axes_run_and_bad_values_name_the_op) {
  io ins[] = {{"x", F32, 2, {"N", "3"}}, {"a", I64, 1, {"1"}}};
  io out = {"y", F32, -1, {NULL}};
  pb attrs = {0};
  onnx_test_int_attr(&attrs, "keepdims", 0);
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("ReduceMean", "d", ins, 2, &out, &attrs, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value args[2] = {tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 9}),
                              tensor(LOOM_DTYPE_I64, 1, (int64_t[]){1}, (double[]){-1})}, r;
  s = loom_graph_eval(gm, "main", 2, args, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert_eq(r.t.ndim, 1);
  cr_assert_eq(r.t.shape[0], 2);
  cr_assert_eq(loom_graph_tensor_get_f64(&r.t, 0), 2);
  cr_assert_eq(loom_graph_tensor_get_f64(&r.t, 1), 6);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_f64(&args[1].t, 0, 2);
  EXPECT_ERROR(loom_graph_eval(gm, "main", 2, args, NULL, &r), INVALID_ARGUMENT,
               "mean: operand 1 (axes) value 2 is out of range for rank 2");
  for (size_t i = 0; i < 2; i++) loom_graph_value_free(&args[i]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx_dyn, reshape_and_range_from_graph_inputs) {
  io ins[] = {{"x", F32, 2, {"2", "3"}}, {"s", I64, 1, {"3"}}};
  io out = {"y", F32, -1, {NULL}};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("Reshape", "d", ins, 2, &out, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value args[2] = {tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                              tensor(LOOM_DTYPE_I64, 1, (int64_t[]){3}, (double[]){0, -1, 1})}, r;
  s = loom_graph_eval(gm, "main", 2, args, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert(r.t.ndim == 3 && r.t.shape[0] == 2 && r.t.shape[1] == 3 && r.t.shape[2] == 1);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_f64(&args[1].t, 1, 4);
  EXPECT_ERROR(loom_graph_eval(gm, "main", 2, args, NULL, &r), INVALID_ARGUMENT,
               "reshape: operand 1 (shape) [0, 4, 1] has 8 elements, operand 0 [2, 3] has 6");
  for (size_t i = 0; i < 2; i++) loom_graph_value_free(&args[i]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);

  io rin[] = {{"s", I64, 0, {NULL}}, {"l", I64, 0, {NULL}}, {"d", I64, 0, {NULL}}};
  io rout = {"y", I64, 1, {"?"}};
  s = onnx_test_import_one("Range", "d", rin, 3, &rout, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value ra[3] = {tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){1}), tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){8}),
                            tensor(LOOM_DTYPE_I64, 0, NULL, (double[]){3})};
  s = loom_graph_eval(gm, "main", 3, ra, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert(r.t.ndim == 1 && r.t.shape[0] == 3);
  cr_assert(loom_graph_tensor_get_i64(&r.t, 2) == 7);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_i64(&ra[2].t, 0, 0);
  EXPECT_ERROR(loom_graph_eval(gm, "main", 3, ra, NULL, &r), INVALID_ARGUMENT, "arange: operand 2 (delta) is 0");
  for (size_t i = 0; i < 3; i++) loom_graph_value_free(&ra[i]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* The module text of a one-node model (op, inputs ins, output out). */
static char *import_text(const char *op, io *ins, size_t n, io *out) {
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one(op, "d", ins, n, out, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(gm, &sb);
  char *text = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  return text;
}

/* Issue 22: fresh dims are named after what they are. A run-time operand's values are named
 * after the ONNX value when its name reads as one (a user's graph input "r": r_0, r_1), else after
 * the op and its operand (an exporter's "/model/Concat_output_0" as Tile's repeats:
 * tile_repeats_0, ...); dims an op's result gets fresh are named after the result, or after the
 * op when the result's name is an exporter's path (reshape_dim...). */
LOOM_TEST(onnx_dyn, fresh_dims_have_readable_names) {
  const char *names[] = {"r", "/model/Concat_output_0"}, *want[] = {"r_0", "tile_repeats_0"},
             *never[] = {"tile_repeats_0", "_model_Concat_output_0_0"};
  for (int k = 0; k < 2; k++) {
    io ins[] = {{"x", F32, 2, {"2", "3"}}, {names[k], I64, 1, {"2"}}};
    io out = {"y", F32, -1, {NULL}};
    char *text = import_text("Tile", ins, 2, &out);
    cr_assert(strstr(text, want[k]) != NULL, "no '%s' in\n%s", want[k], text);
    cr_assert(strstr(text, never[k]) == NULL, "'%s' in\n%s", never[k], text);
    free(text);
  }
  io ins[] = {{"x", F32, 2, {"2", "3"}}, {"s", I64, 1, {"3"}}};
  io out = {"/model/Reshape_output_0", F32, -1, {NULL}};
  char *text = import_text("Reshape", ins, 2, &out);
  cr_assert(strstr(text, "reshape_dim") != NULL, "%s", text);
  cr_assert(strstr(text, "_output_0_dim") == NULL, "%s", text);
  free(text);
}

/* Runs @main of gm on args (n of them, freed) and checks a 1-D / 2-D f32 result against want. */
static void expect_run(loom_graph_module *gm, size_t n, loom_graph_value *args, int nd, const int64_t *shape, const double *want) {
  loom_graph_value r;
  loom_status s = loom_graph_eval(gm, "main", n, args, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert_eq(r.t.ndim, nd);
  size_t numel = 1;
  for (int k = 0; k < nd; k++) {
    cr_assert_eq(r.t.shape[k], shape[k], "axis %d: %lld, want %lld", k, (long long)r.t.shape[k], (long long)shape[k]);
    numel *= (size_t)shape[k];
  }
  for (size_t i = 0; i < numel; i++)
    cr_assert_eq(loom_graph_tensor_get_f64(&r.t, i), want[i], "element %zu: %g, want %g", i, loom_graph_tensor_get_f64(&r.t, i), want[i]);
  loom_graph_value_free(&r);
  for (size_t i = 0; i < n; i++) loom_graph_value_free(&args[i]);
}

/* CenterCropPad with its shape as a graph input: axis 0 cropped (5 -> 3, from row 1), axis 1
 * padded (2 -> 4, one zero column each side); the same shape as the input is the identity. */
LOOM_TEST(onnx_dyn, center_crop_pad_with_a_runtime_shape) {
  io ins[] = {{"x", F32, 2, {"5", "2"}}, {"s", I64, 1, {"2"}}};
  io out = {"y", F32, -1, {NULL}};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("CenterCropPad", "d", ins, 2, &out, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  static const double x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  loom_graph_value a1[2] = {tensor(LOOM_DTYPE_F32, 2, (int64_t[]){5, 2}, x), tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){3, 4})};
  expect_run(gm, 2, a1, 2, (int64_t[]){3, 4}, (double[]){0, 2, 3, 0, 0, 4, 5, 0, 0, 6, 7, 0});
  loom_graph_value a2[2] = {tensor(LOOM_DTYPE_F32, 2, (int64_t[]){5, 2}, x), tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){5, 2})};
  expect_run(gm, 2, a2, 2, (int64_t[]){5, 2}, x);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  io bad[] = {{"x", F32, 2, {"5", "2"}}, {"s", I64, 1, {"1"}}};
  EXPECT_IMPORT_ERROR("CenterCropPad", bad, &out, NULL, INVALID_ARGUMENT, "node 0 (CenterCropPad 'd'): shape has 1 values for 2 axes");
  io sym[] = {{"x", F32, 2, {"N", "2"}}, {"s", I64, 1, {"2"}}};
  EXPECT_IMPORT_ERROR("CenterCropPad", sym, &out, NULL, UNIMPLEMENTED, "node 0 (CenterCropPad 'd'): axis 0 needs a constant extent");
}

/* Pad's edge / reflect / wrap modes with run-time pads: [1, 2, 3] padded 2 before, 1 after;
 * a negative pad crops. */
LOOM_TEST(onnx_dyn, pad_modes_with_runtime_pads) {
  static const char *modes[] = {"edge", "reflect", "wrap"};
  static const double want[3][6] = {{1, 1, 1, 2, 3, 3}, {3, 2, 1, 2, 3, 2}, {2, 3, 1, 2, 3, 1}};
  io ins[] = {{"x", F32, 1, {"3"}}, {"p", I64, 1, {"2"}}};
  io out = {"y", F32, -1, {NULL}};
  for (int k = 0; k < 3; k++) {
    pb attrs = {0}, a = {0};
    pb_str(&a, 1, "mode"), pb_int(&a, 20, 3), pb_str(&a, 4, modes[k]), pb_msg(&attrs, 5, &a);
    loom_onnx_model *m;
    loom_graph_module *gm;
    loom_status s = onnx_test_import_one("Pad", "d", ins, 2, &out, &attrs, &m, &gm);
    cr_assert(!s, "%s: %s", modes[k], s ? loom_status_text(s, 0) : "");
    loom_graph_value a1[2] = {tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3}), tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){2, 1})};
    expect_run(gm, 2, a1, 1, (int64_t[]){6}, want[k]);
    loom_graph_value a2[2] = {tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, (double[]){1, 2, 3}), tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){-1, 0})};
    expect_run(gm, 2, a2, 1, (int64_t[]){2}, (double[]){2, 3});
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
  }
  pb attrs = {0}, a = {0};
  pb_str(&a, 1, "mode"), pb_int(&a, 20, 3), pb_str(&a, 4, "edge"), pb_msg(&attrs, 5, &a);
  io bad[] = {{"x", F32, 1, {"3"}}, {"p", I64, 1, {"3"}}};
  EXPECT_IMPORT_ERROR("Pad", bad, &out, &attrs, INVALID_ARGUMENT, "node 0 (Pad 'd'): pads has 3 values for 1 axes");
}

/* AffineGrid with its size as a graph input: a 1 x 2 x 3 grid of the identity theta gives the
 * pixel centres (x, y); a size of the wrong length is refused. */
LOOM_TEST(onnx_dyn, affine_grid_with_a_runtime_size) {
  io ins[] = {{"t", F32, 3, {"1", "2", "3"}}, {"s", I64, 1, {"4"}}};
  io out = {"y", F32, -1, {NULL}};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("AffineGrid", "d", ins, 2, &out, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value a1[2] = {tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 2, 3}, (double[]){1, 0, 0, 0, 1, 0.5}),
                            tensor(LOOM_DTYPE_I64, 1, (int64_t[]){4}, (double[]){1, 1, 2, 4})};
  /* x: (2j + 1) / 4 - 1 = -0.75, -0.25, 0.25, 0.75; y: -0.5, 0.5, shifted by 0.5 */
  expect_run(gm, 2, a1, 4, (int64_t[]){1, 2, 4, 2},
             (double[]){-0.75, 0, -0.25, 0, 0.25, 0, 0.75, 0, -0.75, 1, -0.25, 1, 0.25, 1, 0.75, 1});
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  io bad[] = {{"t", F32, 3, {"1", "2", "3"}}, {"s", I64, 1, {"3"}}};
  EXPECT_IMPORT_ERROR("AffineGrid", bad, &out, NULL, INVALID_ARGUMENT,
                      "node 0 (AffineGrid 'd'): size has 3 values; expected 4 (N, C, H, W) or 5 (N, C, D, H, W)");
}

/* Col2Im with image_shape and block_shape as graph inputs: two channels (the block's two
 * offsets) of two blocks over a 1 x 3 image overlap in the middle. */
LOOM_TEST(onnx_dyn, col2im_with_runtime_shapes) {
  io ins[] = {{"x", F32, 3, {"1", "2", "2"}}, {"i", I64, 1, {"2"}}, {"b", I64, 1, {"2"}}};
  io out = {"y", F32, -1, {NULL}};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = onnx_test_import_one("Col2Im", "d", ins, 3, &out, NULL, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value a1[3] = {tensor(LOOM_DTYPE_F32, 3, (int64_t[]){1, 2, 2}, (double[]){1, 2, 3, 4}),
                            tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){1, 3}), tensor(LOOM_DTYPE_I64, 1, (int64_t[]){2}, (double[]){1, 2})};
  expect_run(gm, 3, a1, 4, (int64_t[]){1, 1, 1, 3}, (double[]){1, 5, 4});
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  io bad[] = {{"x", F32, 3, {"1", "2", "2"}}, {"i", I64, 1, {"2"}}, {"b", I64, 1, {"1"}}};
  EXPECT_IMPORT_ERROR("Col2Im", bad, &out, NULL, INVALID_ARGUMENT, "node 0 (Col2Im 'd'): image_shape and block_shape must have 2 values");
}

/* Broadcasting before opset 7 (the importer, not a run-time operand): B (2,) lines up with
 * A (2, 3) at axis 0, so row i gets B[i]; an axis from which B does not fit is refused. */
LOOM_TEST(onnx_dyn, legacy_broadcast_with_an_axis) {
  for (int bad = 0; bad < 2; bad++) {
    pb g = {0}, model = {0}, attrs = {0};
    onnx_test_int_attr(&attrs, "broadcast", 1);
    onnx_test_int_attr(&attrs, "axis", bad ? 2 : 0);
    const char *ins[] = {"a", "b", NULL}, *outs[] = {"y", NULL}, *ad[] = {"2", "3"}, *bd[] = {"2"};
    pb_node(&g, "Add", "d", ins, outs, &attrs);
    pb_value_info(&g, 11, "a", F32, 2, ad);
    pb_value_info(&g, 11, "b", F32, 1, bd);
    pb_value_info(&g, 12, "y", F32, 2, ad);
    pb_model(&model, 6, &g);
    loom_onnx_model *m;
    loom_graph_module *gm = NULL;
    loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, &m);
    pb_free(&model);
    cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
    if (bad) {
      EXPECT_ERROR(loom_onnx_import(m, &gm), INVALID_ARGUMENT, "node 0 (Add 'd'): broadcast axis 2: B of rank 1 does not fit A of rank 2 from it");
    } else {
      s = loom_onnx_import(m, &gm);
      cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
      loom_graph_value a[2] = {tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                               tensor(LOOM_DTYPE_F32, 1, (int64_t[]){2}, (double[]){10, 20})};
      expect_run(gm, 2, a, 2, (int64_t[]){2, 3}, (double[]){11, 12, 13, 24, 25, 26});
      loom_graph_module_destroy(gm);
    }
    loom_onnx_model_free(m);
  }
}

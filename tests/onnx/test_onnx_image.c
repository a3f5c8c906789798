/* test_onnx_image.c — the importer's image ops composed of graph ops (onnx_import_image.c):
 * numerics the node suite does not reach (Pad's reflect / edge / wrap with pads longer than the
 * axis, CenterCropPad cropping and padding odd amounts, Col2Im's overlapping sums, MaxUnpool
 * on a symbolic batch, MelWeightMatrix from constants) against hand-computed values (numpy's
 * np.pad and the ONNX reference evaluator for MelWeightMatrix), and the errors for bad
 * attributes and shapes; and what torchvision models bring on symbolic extents (ceil-mode
 * pools, a flip as a Slice of step -1, a Concat of 64 inputs, a Resize to constant sizes, RoiAlign). */
#include <math.h>
#include <stdlib.h>

#include "frontend/onnx/onnx_import.h"
#include "graph/graph.h"
#include "onnx/onnx_test.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* One node input: a graph input (data NULL; dims may be names) or an initializer of `n` values
 * (int64 when elem is 7, else float). */
typedef struct arg {
  const char *name;
  int elem; /* ONNX element type (1 float, 7 int64) */
  int rank;
  const char *dims[4];
  const void *data;
  size_t n;
} arg;

static void attr_int(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 2), pb_int(&a, 3, v), pb_msg(attrs, 5, &a);
}

static void attr_ints(pb *attrs, const char *name, size_t n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 7);
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(attrs, 5, &a);
}

static void attr_str(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 3), pb_str(&a, 4, v), pb_msg(attrs, 5, &a);
}

static void initializer(pb *g, const arg *a) {
  pb t = {0};
  for (int i = 0; i < a->rank; i++) pb_int(&t, 1, strtoll(a->dims[i], NULL, 10));
  pb_int(&t, 2, a->elem);
  pb_str(&t, 8, a->name);
  pb_bytes(&t, 9, a->data, a->n * (a->elem == 7 ? 8 : 4));
  pb_msg(g, 5, &t);
}

static loom_status import_node(const char *op, const arg *ins, size_t nin, pb *attrs, int opset, loom_onnx_model **mm,
                               loom_graph_module **gm) {
  pb g = {0}, model = {0};
  const char *names[80], *outs[] = {"y", NULL};
  cr_assert(nin < 80);
  for (size_t i = 0; i < nin; i++) names[i] = ins[i].name;
  names[nin] = NULL;
  pb_node(&g, op, "n", names, outs, attrs);
  for (size_t i = 0; i < nin; i++)
    if (ins[i].data) initializer(&g, &ins[i]);
  for (size_t i = 0; i < nin; i++)
    if (*ins[i].name && !ins[i].data) pb_value_info(&g, 11, ins[i].name, ins[i].elem, ins[i].rank, (const char **)ins[i].dims);
  pb_value_info(&g, 12, "y", 1, -1, NULL);
  pb_model(&model, opset, &g);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  if (s) return s;
  return loom_onnx_import(*mm, gm);
}

/* Imports and runs the node on the given graph-input values (freed); checks y. */
static void check(const char *op, const arg *ins, size_t nin, pb *attrs, int opset, size_t nargs, loom_graph_value *args, int ndim,
                  const int64_t *shape, const double *want) {
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node(op, ins, nin, attrs, opset, &m, &gm);
  cr_assert(s == LOOM_OK, "%s: %s", op, loom_status_text(s, 1));
  loom_graph_value y;
  s = loom_graph_eval(gm, "main", nargs, args, NULL, &y);
  cr_assert(s == LOOM_OK, "%s: %s", op, loom_status_text(s, 1));
  for (size_t i = 0; i < nargs; i++) loom_graph_value_free(&args[i]);
  cr_assert_eq(y.kind, LOOM_SINFO_TENSOR);
  cr_assert_eq(y.t.ndim, ndim, "%s: rank %d, want %d", op, y.t.ndim, ndim);
  size_t n = 1;
  for (int k = 0; k < ndim; k++) {
    cr_assert_eq(y.t.shape[k], shape[k], "%s: axis %d is %lld, want %lld", op, k, (long long)y.t.shape[k], (long long)shape[k]);
    n *= (size_t)shape[k];
  }
  for (size_t i = 0; i < n; i++) {
    double got = loom_graph_tensor_get_f64(&y.t, i);
    cr_assert(fabs(got - want[i]) <= 1e-6 + 1e-5 * fabs(want[i]), "%s: y[%zu] = %.7g, want %.7g", op, i, got, want[i]);
  }
  loom_graph_value_free(&y);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

static loom_graph_value floats(int ndim, const int64_t *shape, const float *v) {
  loom_graph_value x;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, ndim, shape, &x));
  for (size_t i = 0; i < x.t.numel; i++) ((float *)x.t.data)[i] = v[i];
  return x;
}

static loom_graph_value i64s(int ndim, const int64_t *shape, const int64_t *v) {
  loom_graph_value x;
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_I64, ndim, shape, &x));
  for (size_t i = 0; i < x.t.numel; i++) ((int64_t *)x.t.data)[i] = v[i];
  return x;
}

static void expect_refused(const char *op, const arg *ins, size_t nin, pb *attrs, int opset, loom_code code, const char *needle) {
  loom_onnx_model *m = NULL;
  loom_graph_module *gm = NULL;
  loom_status s = import_node(op, ins, nin, attrs, opset, &m, &gm);
  cr_assert(s != LOOM_OK, "%s: expected an error containing '%s'", op, needle);
  const char *t = loom_status_text(s, 0);
  cr_assert_eq(loom_status_code(s), code, "wrong code: %s", t);
  cr_assert(strstr(t, needle) != NULL, "message lacks '%s': %s", needle, t);
  loom_status_free(s);
  cr_assert_null(gm);
  loom_onnx_model_free(m);
}

/* ---- numerics ----------------------------------------------------------------------------- */

/* pads (4, 5) on an axis of 3: several periods of each mode (numpy's np.pad). */
LOOM_TEST(onnx, image_pad_modes_longer_than_the_axis) {
  static const int64_t pads[] = {4, 5}, sh[] = {3}, ysh[] = {12};
  static const float x[] = {1, 2, 3};
  static const double reflect[] = {1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}, edge[] = {1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3},
                      wrap[] = {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2};
  const char *modes[] = {"reflect", "edge", "wrap"};
  const double *want[] = {reflect, edge, wrap};
  const arg ins[] = {{"x", 1, 1, {"3"}, NULL, 0}, {"pads", 7, 1, {"2"}, pads, 2}};
  for (int i = 0; i < 3; i++) {
    pb a = {0};
    attr_str(&a, "mode", modes[i]);
    loom_graph_value v = floats(1, sh, x);
    check("Pad", ins, N(ins), &a, 19, 1, &v, 1, ysh, want[i]);
  }
}

/* pads (4, 5) on an axis of symbolic extent L (an audio model's frames), given as a constant and
 * as a graph input, at L = 1, 2, 3, 5 (numpy's np.pad): the indices are computed at run time from
 * L (a reflect over one element gives that element everywhere). */
LOOM_TEST(onnx, image_pad_modes_on_a_symbolic_extent) {
  static const int64_t pads[] = {4, 5}, lens[] = {1, 2, 3, 5}, psh[] = {2};
  static const double want[4][3][14] = {
      {{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      {{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}, {1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2}, {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1}},
      {{1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2}, {1, 1, 1, 1, 1, 2, 3, 3, 3, 3, 3, 3}, {3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2}},
      {{5, 4, 3, 2, 1, 2, 3, 4, 5, 4, 3, 2, 1, 2}, {1, 1, 1, 1, 1, 2, 3, 4, 5, 5, 5, 5, 5, 5}, {2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5}}};
  static const float x[] = {1, 2, 3, 4, 5};
  const char *modes[] = {"reflect", "edge", "wrap"};
  const arg constant[] = {{"x", 1, 1, {"L"}, NULL, 0}, {"pads", 7, 1, {"2"}, pads, 2}};
  const arg runtime[] = {{"x", 1, 1, {"L"}, NULL, 0}, {"pads", 7, 1, {"2"}, NULL, 0}};
  for (int l = 0; l < 4; l++)
    for (int i = 0; i < 3; i++)
      for (int dyn = 0; dyn <= 1; dyn++) {
        pb a = {0};
        attr_str(&a, "mode", modes[i]);
        const int64_t sh[] = {lens[l]}, ysh[] = {lens[l] + 9};
        loom_graph_value v[2] = {floats(1, sh, x)};
        if (dyn) v[1] = i64s(1, psh, pads);
        check("Pad", dyn ? runtime : constant, 2, &a, 19, dyn ? 2 : 1, v, 1, ysh, want[l][i]);
      }
}

/* Two padded axes of a symbolic-batch input: rows reflected first, then columns. */
LOOM_TEST(onnx, image_pad_reflect_two_axes_symbolic_batch) {
  static const int64_t pads[] = {0, 1, 0, 0, 0, 1}, sh[] = {1, 2, 2}, ysh[] = {1, 3, 3};
  static const float x[] = {1, 2, 3, 4};
  static const double want[] = {3, 4, 3, 1, 2, 1, 3, 4, 3};
  const arg ins[] = {{"x", 1, 3, {"B", "2", "2"}, NULL, 0}, {"pads", 7, 1, {"6"}, pads, 6}};
  pb a = {0};
  attr_str(&a, "mode", "reflect");
  loom_graph_value v = floats(3, sh, x);
  check("Pad", ins, N(ins), &a, 19, 1, &v, 3, ysh, want);
}

/* (5, 2) -> (2, 5): rows cropped from (5 - 2) / 2 = 1, columns padded 1 before and 2 after. */
LOOM_TEST(onnx, image_center_crop_pad_odd_amounts) {
  static const int64_t shape[] = {2, 5}, sh[] = {5, 2}, ysh[] = {2, 5};
  static const float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  static const double want[] = {0, 2, 3, 0, 0, 0, 4, 5, 0, 0};
  const arg ins[] = {{"x", 1, 2, {"5", "2"}, NULL, 0}, {"shape", 7, 1, {"2"}, shape, 2}};
  loom_graph_value v = floats(2, sh, x);
  check("CenterCropPad", ins, N(ins), NULL, 18, 1, &v, 2, ysh, want);
}

/* A block of 2 sliding over 5 positions: image[i] = col[0][i] + col[1][i - 1]. */
LOOM_TEST(onnx, image_col2im_overlaps_add) {
  static const int64_t img[] = {5}, blk[] = {2}, sh[] = {1, 2, 4}, ysh[] = {1, 1, 5};
  static const float x[] = {1, 2, 3, 4, 10, 20, 30, 40};
  static const double want[] = {1, 12, 23, 34, 40};
  const arg ins[] = {{"x", 1, 3, {"1", "2", "4"}, NULL, 0}, {"image_shape", 7, 1, {"1"}, img, 1}, {"block_shape", 7, 1, {"1"}, blk, 1}};
  loom_graph_value v = floats(3, sh, x);
  check("Col2Im", ins, N(ins), NULL, 18, 1, &v, 3, ysh, want);
}

/* Stride 2, kernel 2 on (B, 1, 2): values go to their flat indices in (B, 1, 4). */
LOOM_TEST(onnx, image_max_unpool_symbolic_batch) {
  static const int64_t sh[] = {2, 1, 2}, ysh[] = {2, 1, 4}, k[] = {2}, idx[] = {1, 2, 4, 7};
  static const float x[] = {5, 6, 7, 8};
  static const double want[] = {0, 5, 6, 0, 7, 0, 0, 8};
  const arg ins[] = {{"x", 1, 3, {"B", "1", "2"}, NULL, 0}, {"i", 7, 3, {"B", "1", "2"}, NULL, 0}};
  pb a = {0};
  attr_ints(&a, "kernel_shape", 1, k), attr_ints(&a, "strides", 1, k);
  loom_graph_value v[2] = {floats(3, sh, x), i64s(3, sh, idx)};
  check("MaxUnpool", ins, N(ins), &a, 22, 2, v, 3, ysh, want);
}

/* From the ONNX reference evaluator: MelWeightMatrix(3, 16, 100, 0, 50). */
LOOM_TEST(onnx, image_mel_weight_matrix_from_constants) {
  static const int64_t nm = 3, dl = 16, sr = 100, ysh[] = {9, 3};
  static const float lo = 0, hi = 50;
  static const double want[] = {0, 0, 0, 1, 0, 0, .5, .5, 0, 0, 1, 0, 0, .5, .5, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const arg ins[] = {{"nm", 7, 0, {0}, &nm, 1}, {"dl", 7, 0, {0}, &dl, 1}, {"sr", 7, 0, {0}, &sr, 1}, {"lo", 1, 0, {0}, &lo, 1}, {"hi", 1, 0, {0}, &hi, 1}};
  check("MelWeightMatrix", ins, N(ins), NULL, 17, 0, NULL, 2, ysh, want);
}

/* ---- errors ------------------------------------------------------------------------------- */

LOOM_TEST(onnx, image_bad_inputs_name_the_node) {
  static const int64_t pads2[] = {1, 1}, shape1[] = {2}, sz3[] = {1, 1, 4}, img[] = {5}, blk2[] = {2, 2};
  pb a = {0};
  const arg pad[] = {{"x", 1, 1, {"3"}, NULL, 0}, {"pads", 7, 1, {"2"}, pads2, 2}};
  attr_str(&a, "mode", "mirror");
  expect_refused("Pad", pad, 2, &a, 19, LOOM_CODE_INVALID_ARGUMENT, "node 0 (Pad 'n'): mode 'mirror' is not constant, reflect, edge or wrap");
  const arg pad0[] = {{"x", 1, 1, {"0"}, NULL, 0}, {"pads", 7, 1, {"2"}, pads2, 2}};
  attr_str(&a, "mode", "reflect");
  expect_refused("Pad", pad0, 2, &a, 19, LOOM_CODE_INVALID_ARGUMENT, "mode 'reflect' cannot pad axis 0 of extent 0");
  const arg ccp[] = {{"x", 1, 2, {"4", "4"}, NULL, 0}, {"shape", 7, 1, {"1"}, shape1, 1}};
  expect_refused("CenterCropPad", ccp, 2, NULL, 18, LOOM_CODE_INVALID_ARGUMENT, "shape has 1 values for 2 axes");
  const arg c2i[] = {{"x", 1, 3, {"1", "4", "4"}, NULL, 0}, {"image_shape", 7, 1, {"1"}, img, 1}, {"block_shape", 7, 1, {"2"}, blk2, 2}};
  expect_refused("Col2Im", c2i, 3, NULL, 18, LOOM_CODE_INVALID_ARGUMENT, "image_shape has 1 values and block_shape 2");
  const arg ag[] = {{"theta", 1, 3, {"1", "2", "3"}, NULL, 0}, {"size", 7, 1, {"3"}, sz3, 3}};
  expect_refused("AffineGrid", ag, 2, NULL, 20, LOOM_CODE_INVALID_ARGUMENT, "size has 3 values; expected 4 (N, C, H, W) or 5");
  const arg mu[] = {{"x", 1, 4, {"1", "1", "2", "2"}, NULL, 0}, {"i", 7, 4, {"1", "1", "2", "2"}, NULL, 0}};
  expect_refused("MaxUnpool", mu, 2, NULL, 22, LOOM_CODE_INVALID_ARGUMENT, "node 0 (MaxUnpool 'n'): attribute 'kernel_shape' is required");
  const arg dc[] = {{"x", 1, 4, {"1", "1", "3", "3"}, NULL, 0}, {"w", 1, 4, {"1", "1", "2", "2"}, NULL, 0}, {"off", 1, 4, {"1", "6", "2", "2"}, NULL, 0}};
  expect_refused("DeformConv", dc, 3, NULL, 22, LOOM_CODE_INVALID_ARGUMENT, "offset has 6 channels; expected offset_group * kh * kw * 2 = 8");
  const arg ra[] = {{"x", 1, 4, {"1", "1", "4", "4"}, NULL, 0}, {"rois", 1, 2, {"2", "4"}, NULL, 0}, {"b", 7, 1, {"2"}, NULL, 0}};
  attr_str(&a, "mode", "sum"), attr_int(&a, "sampling_ratio", 2);
  expect_refused("RoiAlign", ra, 3, &a, 22, LOOM_CODE_INVALID_ARGUMENT, "mode 'sum' is not avg or max");
  attr_int(&a, "sampling_ratio", 0);
  expect_refused("RoiAlign", ra, 3, &a, 22, LOOM_CODE_UNIMPLEMENTED, "sampling_ratio 0 (adaptive, data-dependent)");
  const arg qkv[] = {{"q", 1, 4, {"1", "1", "2", "4"}, NULL, 0}, {"k", 1, 4, {"1", "1", "2", "4"}, NULL, 0}, {"v", 1, 4, {"1", "1", "2", "4"}, NULL, 0}};
  expect_refused("FlexAttention", qkv, 3, NULL, 22, LOOM_CODE_UNIMPLEMENTED, "FlexAttention is an op of domain ai.onnx.preview, not ''");
  attr_str(&a, "coordinate_transformation_mode", "corner");
  expect_refused("RoiAlign", ra, 3, &a, 22, LOOM_CODE_INVALID_ARGUMENT, "coordinate_transformation_mode 'corner'");
}

/* ---- torchvision's forms on symbolic extents ----------------------------------------------- */

/* MaxPool / AveragePool with ceil_mode on a symbolic H x W (squeezenet, googlenet): at 6 x 5 ceil
 * mode adds a row and a column of windows hanging past the input (ONNX Runtime's values). */
LOOM_TEST(onnx, image_ceil_mode_pools_on_symbolic_extents) {
  static const int64_t k[] = {3, 2}, st[] = {2, 2}, sh[] = {1, 1, 6, 5};
  float x[30];
  for (int i = 0; i < 30; i++) x[i] = (float)((i * 7) % 11);
  static const double mx[] = {9, 10, 8, 9}, avg[] = {22.0 / 6, 29.0 / 6, 4, 31.0 / 6};
  static const double mx3[] = {9, 10, 10, 8, 9, 10, 10, 9, 5}, avg3[] = {22.0 / 6, 29.0 / 6, 8, 4, 31.0 / 6, 28.0 / 6, 7, 4.5, 4};
  const arg ins[] = {{"x", 1, 4, {"N", "C", "H", "W"}, NULL, 0}};
  const char *ops[] = {"MaxPool", "AveragePool"};
  for (int ceil = 0; ceil < 2; ceil++)
    for (int i = 0; i < 2; i++) {
      pb a = {0};
      attr_ints(&a, "kernel_shape", 2, k);
      attr_ints(&a, "strides", 2, st);
      attr_int(&a, "ceil_mode", ceil);
      loom_graph_value v = floats(4, sh, x);
      const double *want = ceil ? (i ? avg3 : mx3) : (i ? avg : mx);
      check(ops[i], ins, 1, &a, 13, 1, &v, 4, ceil ? (int64_t[]){1, 1, 3, 3} : (int64_t[]){1, 1, 2, 2}, want);
    }
}

/* torch.flip as ONNX exports it: Slice(starts -1, ends -INT64_MAX, axes 0, steps -1) on a
 * symbolic axis; and steps -2 from the middle with ends past the front (INT64_MIN). */
LOOM_TEST(onnx, image_slice_negative_steps_on_a_symbolic_axis) {
  static const int64_t b[] = {-1}, e[] = {-INT64_MAX}, ax[] = {0}, st[] = {-1};
  const arg ins[] = {{"x", 1, 2, {"N", "2"}, NULL, 0}, {"b", 7, 1, {"1"}, b, 1}, {"e", 7, 1, {"1"}, e, 1},
                     {"a", 7, 1, {"1"}, ax, 1},       {"s", 7, 1, {"1"}, st, 1}};
  static const float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  static const double flip[] = {8, 9, 6, 7, 4, 5, 2, 3, 0, 1};
  loom_graph_value v = floats(2, (int64_t[]){5, 2}, x);
  check("Slice", ins, 5, NULL, 13, 1, &v, 2, (int64_t[]){5, 2}, flip);
  v = floats(2, (int64_t[]){0, 2}, x);
  check("Slice", ins, 5, NULL, 13, 1, &v, 2, (int64_t[]){0, 2}, flip);
  static const int64_t b2[] = {3, 1}, e2[] = {INT64_MIN, -3}, ax2[] = {0, 1}, st2[] = {-2, -1};
  const arg ins2[] = {{"x", 1, 2, {"N", "M"}, NULL, 0}, {"b", 7, 1, {"2"}, b2, 2}, {"e", 7, 1, {"2"}, e2, 2},
                      {"a", 7, 1, {"2"}, ax2, 2},       {"s", 7, 1, {"2"}, st2, 2}};
  /* N = 5, M = 2: rows 3, 1; columns 1 down to -3 + 2 = -1 exclusive: 1, 0 */
  static const double want2[] = {7, 6, 3, 2};
  v = floats(2, (int64_t[]){5, 2}, x);
  check("Slice", ins2, 5, NULL, 13, 1, &v, 2, (int64_t[]){2, 2}, want2);
  /* N = 1: row 3 clamps to row 0 */
  v = floats(2, (int64_t[]){1, 2}, x);
  check("Slice", ins2, 5, NULL, 13, 1, &v, 2, (int64_t[]){1, 2}, (double[]){1, 0});
  static const int64_t zero[] = {0};
  const arg bad[] = {{"x", 1, 2, {"N", "2"}, NULL, 0}, {"b", 7, 1, {"1"}, b, 1}, {"e", 7, 1, {"1"}, e, 1},
                     {"a", 7, 1, {"1"}, ax, 1},       {"s", 7, 1, {"1"}, zero, 1}};
  expect_refused("Slice", bad, 5, NULL, 13, LOOM_CODE_INVALID_ARGUMENT, "step 0 on axis 0");
}

/* Concat of 64 inputs on a symbolic batch (densenet joins up to ~50), and Sum of 20. */
LOOM_TEST(onnx, image_concat_of_64_inputs) {
  enum { NIN = 64 };
  arg ins[NIN];
  char names[NIN][8];
  for (int i = 0; i < NIN; i++) {
    snprintf(names[i], sizeof names[i], "x%d", i);
    ins[i] = (arg){names[i], 1, 2, {"N", "1"}, NULL, 0};
  }
  loom_graph_value v[NIN];
  double want[2 * NIN];
  for (int i = 0; i < NIN; i++) {
    v[i] = floats(2, (int64_t[]){2, 1}, (float[]){(float)i, (float)(100 + i)});
    want[i] = i, want[NIN + i] = 100 + i;
  }
  pb a = {0};
  attr_int(&a, "axis", 1);
  check("Concat", ins, NIN, &a, 13, NIN, v, 2, (int64_t[]){2, NIN}, want);
  for (int i = 0; i < 20; i++) v[i] = floats(2, (int64_t[]){2, 1}, (float[]){(float)i, 1});
  check("Sum", ins, 20, NULL, 13, 20, v, 2, (int64_t[]){2, 1}, (double[]){190, 20});
}

/* Resize to constant sizes from a symbolic H x W (torchvision's detection transform resizing any
 * image to 320 x 320): the scales are known at run time only, the output extents are the sizes.
 * Nearest, asymmetric, floor: x' = floor(x * in / size). */
LOOM_TEST(onnx, image_resize_constant_sizes_of_symbolic_extents) {
  static const int64_t sz[] = {4, 2}, axes[] = {2, 3};
  const arg ins[] = {{"x", 1, 4, {"N", "C", "H", "W"}, NULL, 0}, {"", 0, 0, {0}, NULL, 0}, {"", 0, 0, {0}, NULL, 0},
                     {"s", 7, 1, {"2"}, sz, 2}};
  static const float x[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  static const double from_2x3[] = {0, 1, 0, 1, 3, 4, 3, 4}, from_3x4[] = {0, 2, 0, 2, 4, 6, 8, 10};
  for (int i = 0; i < 2; i++) {
    pb a = {0};
    attr_ints(&a, "axes", 2, axes);
    attr_str(&a, "mode", "nearest");
    attr_str(&a, "coordinate_transformation_mode", "asymmetric");
    attr_str(&a, "nearest_mode", "floor");
    loom_graph_value v = floats(4, i ? (int64_t[]){1, 1, 3, 4} : (int64_t[]){1, 1, 2, 3}, x);
    check("Resize", ins, 4, &a, 18, 1, &v, 4, (int64_t[]){1, 1, 4, 2}, i ? from_3x4 : from_2x3);
  }
}

/* RoiAlign on a symbolic N x C x H x W (Faster R-CNN exported with dynamic image extents):
 * the same values as with the extents constant, at two image sizes, rois inside, across and
 * outside the image, avg and max, both coordinate modes. */
LOOM_TEST(onnx, image_roi_align_on_symbolic_extents) {
  static const int64_t sizes[][2] = {{5, 7}, {9, 4}};
  static const float rois[] = {0.5f, 1.0f, 3.5f, 4.0f, -2.0f, -1.0f, 6.0f, 8.0f, 10.0f, 9.0f, 12.0f, 11.0f, 1.2f, 0.3f, 1.9f, 2.6f};
  static const int64_t bidx[] = {0, 1, 1, 0};
  const char *modes[] = {"avg", "max"}, *ctms[] = {"half_pixel", "output_half_pixel"};
  for (size_t si = 0; si < N(sizes); si++)
    for (int m = 0; m < 2; m++) {
      char hs[8], ws[8];
      snprintf(hs, sizeof hs, "%lld", (long long)sizes[si][0]);
      snprintf(ws, sizeof ws, "%lld", (long long)sizes[si][1]);
      const arg sym[] = {{"x", 1, 4, {"N", "C", "H", "W"}, NULL, 0}, {"rois", 1, 2, {"R", "4"}, NULL, 0}, {"b", 7, 1, {"R"}, NULL, 0}};
      const arg fixed[] = {{"x", 1, 4, {"2", "3", hs, ws}, NULL, 0}, {"rois", 1, 2, {"4", "4"}, NULL, 0}, {"b", 7, 1, {"4"}, NULL, 0}};
      loom_graph_value y[2];
      for (int v = 0; v < 2; v++) {
        pb a = {0};
        attr_str(&a, "mode", modes[m]);
        attr_str(&a, "coordinate_transformation_mode", ctms[m]);
        attr_int(&a, "output_height", 3);
        attr_int(&a, "output_width", 2);
        attr_int(&a, "sampling_ratio", 2);
        loom_onnx_model *mm;
        loom_graph_module *gm;
        loom_status s = import_node("RoiAlign", v ? fixed : sym, 3, &a, 22, &mm, &gm);
        cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
        int64_t xs[4] = {2, 3, sizes[si][0], sizes[si][1]};
        float x[2 * 3 * 9 * 7];
        for (int i = 0; i < 2 * 3 * sizes[si][0] * sizes[si][1]; i++) x[i] = (float)((i * 37) % 23) - 11.0f;
        loom_graph_value in[3] = {floats(4, xs, x), floats(2, (int64_t[]){4, 4}, rois), i64s(1, (int64_t[]){4}, bidx)};
        s = loom_graph_eval(gm, "main", 3, in, NULL, &y[v]);
        cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
        for (int i = 0; i < 3; i++) loom_graph_value_free(&in[i]);
        loom_graph_module_destroy(gm);
        loom_onnx_model_free(mm);
      }
      cr_assert_eq(y[0].t.numel, y[1].t.numel);
      cr_assert_eq(y[0].t.numel, (size_t)(4 * 3 * 3 * 2));
      double nonzero = 0;
      for (size_t i = 0; i < y[0].t.numel; i++) {
        double a = loom_graph_tensor_get_f64(&y[0].t, i), b = loom_graph_tensor_get_f64(&y[1].t, i);
        cr_assert(fabs(a - b) <= 1e-6 * (1 + fabs(b)), "%lldx%lld %s: y[%zu] %.7g symbolic, %.7g constant", (long long)sizes[si][0],
                  (long long)sizes[si][1], modes[m], i, a, b);
        nonzero += fabs(b);
      }
      cr_assert_gt(nonzero, 0.0);
      loom_graph_value_free(&y[0]);
      loom_graph_value_free(&y[1]);
    }
}

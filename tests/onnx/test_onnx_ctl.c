/* test_onnx_ctl.c — control flow, sequences and optionals in the importer (onnx_import_ctl.c):
 * unrolled Loop / Scan with bodies that read the enclosing scope and nest an If, an If on a
 * run-time condition (both branches + where), sequences and optionals built in the graph, and
 * the refusals (symbolic trip count or scan length, data-dependent early exit, branches of
 * different shapes, bad positions, sequences as graph outputs). Expected values by hand. */
#include "frontend/onnx/onnx_import.h"
#include "onnx/onnx_test.h"

#define L(...) ((const char *[]){__VA_ARGS__, NULL})
#define NONE ((const char *[]){NULL})

enum { F32 = 1, I64 = 7, BOOL = 9 };

static void a_int(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 2), pb_int(&a, 3, v), pb_msg(attrs, 5, &a);
}

static void a_ints(pb *attrs, const char *name, size_t n, const int64_t *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 7);
  for (size_t i = 0; i < n; i++) pb_int(&a, 8, v[i]);
  pb_msg(attrs, 5, &a);
}

static void a_float(pb *attrs, const char *name, float v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 1), pb_f32(&a, 2, v), pb_msg(attrs, 5, &a);
}

/* A graph attribute; `g` is consumed. */
static void a_graph(pb *attrs, const char *name, pb *g) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 5), pb_msg(&a, 6, g), pb_msg(attrs, 5, &a);
}

static void node(pb *g, const char *op, const char **ins, const char **outs, pb *attrs) { pb_node(g, op, NULL, ins, outs, attrs); }

static void k_int(pb *g, const char *out, int64_t v) {
  pb a = {0};
  a_int(&a, "value_int", v);
  node(g, "Constant", NONE, L(out), &a);
}

static void k_float(pb *g, const char *out, float v) {
  pb a = {0};
  a_float(&a, "value_float", v);
  node(g, "Constant", NONE, L(out), &a);
}

static void in(pb *g, const char *name, int elem, int rank, const char **dims) { pb_value_info(g, 11, name, elem, rank, dims); }
static void out(pb *g, const char *name, int elem, int rank, const char **dims) { pb_value_info(g, 12, name, elem, rank, dims); }

static loom_status import(pb *g, int opset, loom_onnx_model **m, loom_graph_module **gm) {
  pb model = {0};
  pb_model(&model, opset, g);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "ctl.onnx", NULL, m);
  pb_free(&model);
  *gm = NULL;
  return s ? s : loom_onnx_import(*m, gm);
}

#define EXPECT_REFUSED(g, opset, code, needle)                  \
  do {                                                          \
    loom_onnx_model *m_ = NULL;                                 \
    loom_graph_module *gm_;                                     \
    EXPECT_ERROR(import(g, opset, &m_, &gm_), code, needle);    \
    cr_assert_null(gm_);                                        \
    loom_onnx_model_free(m_);                                   \
  } while (0)

static void f32_arg(loom_graph_value *v, int ndim, const int64_t *shape, const float *x) {
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, ndim, shape, v));
  for (size_t i = 0; i < v->t.numel; i++) loom_graph_tensor_set_f64(&v->t, i, x[i]);
}

static void expect_f32(const loom_graph_value *v, int ndim, const int64_t *shape, const float *want) {
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR);
  cr_assert_eq(v->t.ndim, ndim);
  for (int k = 0; k < ndim; k++) cr_assert_eq(v->t.shape[k], shape[k], "dim %d", k);
  for (size_t i = 0; i < v->t.numel; i++)
    cr_assert_float_eq(loom_graph_tensor_get_f64(&v->t, i), want[i], 1e-6, "element %zu: %g, want %g", i,
                       loom_graph_tensor_get_f64(&v->t, i), (double)want[i]);
}

/* Loop body: y_out = If(i < 2, y_in + x, y_in - x) (x from the main graph), s = y_out + i. */
static void loop_body(pb *body, bool runtime_exit) {
  in(body, "i", I64, 0, NULL), in(body, "c_in", BOOL, 0, NULL), in(body, "y_in", F32, 1, L("3"));
  k_int(body, "two", 2);
  node(body, "Less", L("i", "two"), L("early"), NULL);
  pb then = {0}, els = {0}, at = {0}, cast = {0};
  node(&then, "Add", L("y_in", "x"), L("t_out"), NULL), out(&then, "t_out", F32, 1, L("3"));
  node(&els, "Sub", L("y_in", "x"), L("e_out"), NULL), out(&els, "e_out", F32, 1, L("3"));
  a_graph(&at, "then_branch", &then), a_graph(&at, "else_branch", &els);
  node(body, "If", L("early"), L("y_out"), &at);
  a_int(&cast, "to", F32);
  node(body, "Cast", L("i"), L("fi"), &cast);
  node(body, "Add", L("y_out", "fi"), L("s"), NULL);
  if (runtime_exit) {
    pb r = {0};
    a_int(&r, "keepdims", 0);
    node(body, "ReduceSum", L("y_out"), L("tot"), &r);
    k_float(body, "lim", 10);
    node(body, "Less", L("tot", "lim"), L("c_out"), NULL);
  } else {
    node(body, "Identity", L("c_in"), L("c_out"), NULL);
  }
  out(body, "c_out", BOOL, 0, NULL), out(body, "y_out", F32, 1, L("3")), out(body, "s", F32, 1, L("3"));
}

static void loop_model(pb *g, bool static_trip, bool runtime_exit) {
  pb body = {0}, at = {0};
  in(g, "x", F32, 1, L("3"));
  if (static_trip) k_int(g, "M", 4);
  else in(g, "M", I64, 0, NULL);
  loop_body(&body, runtime_exit);
  a_graph(&at, "body", &body);
  node(g, "Loop", L("M", "", "x"), L("y", "scan"), &at);
  out(g, "y", F32, 1, L("3")), out(g, "scan", F32, 2, L("4", "3"));
}

LOOM_TEST(onnx_ctl, loop_is_unrolled_with_outer_values_and_a_folded_if) {
  pb g = {0};
  loop_model(&g, true, false);
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import(&g, 13, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value x, r;
  f32_arg(&x, 1, (int64_t[]){3}, (float[]){1, 2, 3});
  s = loom_graph_eval(gm, "main", 1, &x, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert_eq(r.kind, LOOM_SINFO_TUPLE);
  /* y: x -> 2x -> 3x (i = 0, 1 add) -> 2x -> x (i = 2, 3 subtract); scan: y_i + i */
  expect_f32(&r.items[0], 1, (int64_t[]){3}, (float[]){1, 2, 3});
  expect_f32(&r.items[1], 2, (int64_t[]){4, 3}, (float[]){2, 4, 6, 4, 7, 10, 4, 6, 8, 4, 5, 6});
  loom_graph_value_free(&r), loom_graph_value_free(&x);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* Whether @main holds a graph loop (a binding whose value is `loop`). */
static bool has_loop(loom_graph_module *gm) {
  const loom_graph_seq *b = loom_graph_module_find_func(gm, "main")->body;
  for (size_t i = 0; i < b->nblocks; i++)
    for (size_t j = 0; j < b->blocks[i]->n; j++)
      if (b->blocks[i]->bindings[j]->value->kind == LOOM_GRAPH_EXPR_LOOP) return true;
  return false;
}

/* A trip count known only at run time, or a condition the body computes from data: the graph
 * IR's loop (onnx_import_loop.c), which the interpreter runs like the unrolled form. */
LOOM_TEST(onnx_ctl, loop_of_a_runtime_count_or_exit_is_a_graph_loop) {
  pb g = {0};
  loop_model(&g, false, false);
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import(&g, 13, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert(has_loop(gm));
  loom_graph_value a[2], r;
  f32_arg(&a[0], 1, (int64_t[]){3}, (float[]){1, 2, 3});
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_I64, 0, NULL, &a[1]));
  static const int64_t ms[] = {4, 2, 0, -1};
  for (size_t k = 0; k < 4; k++) {
    loom_graph_tensor_set_i64(&a[1].t, 0, ms[k]);
    s = loom_graph_eval(gm, "main", 2, a, NULL, &r);
    cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
    static const float y4[3] = {1, 2, 3}, y2[3] = {3, 6, 9}, y0[3] = {1, 2, 3};
    static const float s4[12] = {2, 4, 6, 4, 7, 10, 4, 6, 8, 4, 5, 6};
    int64_t n = ms[k] > 0 ? ms[k] : 0;
    expect_f32(&r.items[0], 1, (int64_t[]){3}, n == 4 ? y4 : n == 2 ? y2 : y0);
    expect_f32(&r.items[1], 2, (int64_t[]){n, 3}, s4);
    loom_graph_value_free(&r);
  }
  loom_graph_value_free(&a[0]), loom_graph_value_free(&a[1]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
  /* a static count with a data-dependent exit: sum(y) < 10 stops after the first step here */
  loop_model(&g, true, true);
  s = import(&g, 13, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  cr_assert(has_loop(gm));
  f32_arg(&a[0], 1, (int64_t[]){3}, (float[]){1, 2, 3});
  s = loom_graph_eval(gm, "main", 1, a, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  expect_f32(&r.items[0], 1, (int64_t[]){3}, (float[]){2, 4, 6});
  expect_f32(&r.items[1], 2, (int64_t[]){1, 3}, (float[]){2, 4, 6});
  loom_graph_value_free(&r);
  /* smaller values run all four steps: y = 2x, 3x, 2x, x; scan y_i + i */
  loom_graph_value_free(&a[0]);
  f32_arg(&a[0], 1, (int64_t[]){3}, (float[]){0.5f, 0.5f, 0.5f});
  s = loom_graph_eval(gm, "main", 1, a, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  expect_f32(&r.items[0], 1, (int64_t[]){3}, (float[]){0.5f, 0.5f, 0.5f});
  expect_f32(&r.items[1], 2, (int64_t[]){4, 3}, (float[]){1, 1, 1, 2.5f, 2.5f, 2.5f, 3, 3, 3, 3.5f, 3.5f, 3.5f});
  loom_graph_value_free(&r), loom_graph_value_free(&a[0]);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx_ctl, loop_refusals) {
  pb g = {0};
  /* the body's error names the node inside the body and the Loop holding it */
  pb body = {0}, at = {0};
  in(&g, "x", F32, 1, L("3"));
  k_int(&g, "M", 2);
  in(&body, "i", I64, 0, NULL), in(&body, "c_in", BOOL, 0, NULL), in(&body, "y_in", F32, 1, L("3"));
  node(&body, "Frobnicate", L("y_in"), L("y_out"), NULL);
  out(&body, "c_in", BOOL, 0, NULL), out(&body, "y_out", F32, 1, L("3"));
  a_graph(&at, "body", &body);
  node(&g, "Loop", L("M", "", "x"), L("y"), &at);
  out(&g, "y", F32, 1, L("3"));
  EXPECT_REFUSED(&g, 13, UNIMPLEMENTED, "in the body of node 1 (Loop)");
}

LOOM_TEST(onnx_ctl, loop_carries_a_sequence) {
  /* seq = []; for i in 0..3: seq.insert(x * i); y = concat(seq) — the loop13_seq pattern */
  pb g = {0}, body = {0}, at = {0}, ad = {0}, cast = {0};
  in(&g, "x", F32, 1, L("2"));
  k_int(&g, "M", 3);
  a_int(&ad, "dtype", F32);
  node(&g, "SequenceEmpty", NONE, L("empty"), &ad);
  in(&body, "i", I64, 0, NULL), in(&body, "c_in", BOOL, 0, NULL);
  pb_value_info(&body, 11, "s_in", F32, -1, NULL);
  a_int(&cast, "to", F32);
  node(&body, "Cast", L("i"), L("fi"), &cast);
  node(&body, "Mul", L("x", "fi"), L("xi"), NULL);
  node(&body, "SequenceInsert", L("s_in", "xi"), L("s_out"), NULL);
  node(&body, "Identity", L("c_in"), L("c_out"), NULL);
  out(&body, "c_out", BOOL, 0, NULL);
  pb_value_info(&body, 12, "s_out", F32, -1, NULL);
  a_graph(&at, "body", &body);
  node(&g, "Loop", L("M", "", "empty"), L("seq"), &at);
  a_int(&ad, "axis", 0);
  node(&g, "ConcatFromSequence", L("seq"), L("y"), &ad);
  out(&g, "y", F32, 1, L("6"));
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import(&g, 13, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value x, r;
  f32_arg(&x, 1, (int64_t[]){2}, (float[]){1, 3});
  s = loom_graph_eval(gm, "main", 1, &x, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  expect_f32(&r, 1, (int64_t[]){6}, (float[]){0, 0, 1, 3, 2, 6});
  loom_graph_value_free(&r), loom_graph_value_free(&x);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* Scan (opset 9) summing the columns of x (2, n) right to left, outputs stacked on axis 1. */
static void scan_model(pb *g, const char *n) {
  pb body = {0}, at = {0};
  in(g, "init", F32, 1, L("2")), in(g, "x", F32, 2, L("2", n));
  in(&body, "sum_in", F32, 1, L("2")), in(&body, "next", F32, 1, L("2"));
  node(&body, "Add", L("sum_in", "next"), L("sum_out"), NULL);
  node(&body, "Mul", L("sum_out", "x_scale"), L("scan_out"), NULL); /* x_scale: from the main graph */
  out(&body, "sum_out", F32, 1, L("2")), out(&body, "scan_out", F32, 1, L("2"));
  k_float(g, "x_scale", 10);
  a_graph(&at, "body", &body);
  a_int(&at, "num_scan_inputs", 1);
  a_ints(&at, "scan_input_axes", 1, (int64_t[]){1});
  a_ints(&at, "scan_input_directions", 1, (int64_t[]){1});
  a_ints(&at, "scan_output_axes", 1, (int64_t[]){-1});
  node(g, "Scan", L("init", "x"), L("final", "ys"), &at);
  out(g, "final", F32, 1, L("2")), out(g, "ys", F32, 2, L("2", n));
}

LOOM_TEST(onnx_ctl, scan_is_unrolled_along_axes_and_directions) {
  pb g = {0};
  loom_onnx_model *m;
  loom_graph_module *gm;
  /* a static length is unrolled; a symbolic one is the graph IR's loop, with the same values */
  static const char *const lens[] = {"3", "T"};
  for (int k = 0; k < 2; k++) {
    scan_model(&g, lens[k]);
    loom_status s = import(&g, 16, &m, &gm);
    cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
    cr_assert_eq(has_loop(gm), k == 1);
    loom_graph_value a[2], r;
    f32_arg(&a[0], 1, (int64_t[]){2}, (float[]){0, 100});
    f32_arg(&a[1], 2, (int64_t[]){2, 3}, (float[]){1, 2, 3, 4, 5, 6});
    s = loom_graph_eval(gm, "main", 2, a, NULL, &r);
    cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
    /* columns read 2, 1, 0: sums (3, 106), (5, 111), (6, 115); stacked on the last axis */
    expect_f32(&r.items[0], 1, (int64_t[]){2}, (float[]){6, 115});
    expect_f32(&r.items[1], 2, (int64_t[]){2, 3}, (float[]){30, 50, 60, 1060, 1110, 1150});
    loom_graph_value_free(&r), loom_graph_value_free(&a[0]), loom_graph_value_free(&a[1]);
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
  }
  scan_model(&g, "3"); /* Scan-8 has no scan_input_axes */
  EXPECT_REFUSED(&g, 8, INVALID_ARGUMENT, "attribute 'scan_input_axes' is not in Scan before opset 9");
}

/* y = If(c, x + 1, x * 2); the else branch's shape is (2n) when `differ`. */
static void if_model(pb *g, bool differ) {
  pb then = {0}, els = {0}, at = {0};
  in(g, "c", BOOL, 1, L("1")), in(g, "x", F32, 1, L("n"));
  k_float(g, "one", 1), k_float(g, "two", 2);
  node(&then, "Add", L("x", "one"), L("t"), NULL), out(&then, "t", F32, 1, L("n"));
  if (differ) {
    pb ax = {0};
    a_int(&ax, "axis", 0);
    node(&els, "Concat", L("x", "x"), L("e"), &ax);
  } else {
    node(&els, "Mul", L("x", "two"), L("e"), NULL);
  }
  out(&els, "e", F32, 1, L("?"));
  a_graph(&at, "then_branch", &then), a_graph(&at, "else_branch", &els);
  node(g, "If", L("c"), L("y"), &at);
  out(g, "y", F32, 1, L("n"));
}

/* The If model (if_model) imported and run at both conditions on x = [1, 2, 5]: then x + 1, else
 * x * 2 (same shape: `where`) or concat(x, x) (differ: an optional list, its item's dims fresh). */
static void check_if(bool differ) {
  pb g = {0};
  if_model(&g, differ);
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import(&g, 13, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  for (int c = 0; c < 2; c++) {
    loom_graph_value a[2], r;
    cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_BOOL, 1, (int64_t[]){1}, &a[0]));
    ((uint8_t *)a[0].t.data)[0] = (uint8_t)c;
    f32_arg(&a[1], 1, (int64_t[]){3}, (float[]){1, 2, 5});
    s = loom_graph_eval(gm, "main", 2, a, NULL, &r);
    cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
    if (c) expect_f32(&r, 1, (int64_t[]){3}, (float[]){2, 3, 6});
    else if (differ) expect_f32(&r, 1, (int64_t[]){6}, (float[]){1, 2, 5, 1, 2, 5});
    else expect_f32(&r, 1, (int64_t[]){3}, (float[]){2, 4, 10});
    loom_graph_value_free(&r), loom_graph_value_free(&a[0]), loom_graph_value_free(&a[1]);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* branches whose outputs differ in shape at run time (a detector: no boxes kept, or some) */
LOOM_TEST(onnx_ctl, if_on_a_runtime_condition_selects_with_where_or_a_list) {
  check_if(false);
  check_if(true);
}

LOOM_TEST(onnx_ctl, sequences_and_optionals_built_in_the_graph) {
  /* x (3, 2) split into rows; insert x[0] + 1 at the front; erase the last; length; stack on
   * axis 1; SequenceAt(-1); an optional of x and an empty one; SequenceMap adding 1, concatenated */
  pb g = {0}, a = {0};
  in(&g, "x", F32, 2, L("3", "2"));
  a_int(&a, "keepdims", 0);
  node(&g, "SplitToSequence", L("x"), L("rows"), &a);
  k_int(&g, "zero", 0), k_int(&g, "neg1", -1), k_float(&g, "one", 1);
  node(&g, "SequenceAt", L("rows", "zero"), L("r0"), NULL);
  node(&g, "Add", L("r0", "one"), L("r0p"), NULL);
  node(&g, "SequenceInsert", L("rows", "r0p", "zero"), L("s2"), NULL);
  node(&g, "SequenceErase", L("s2"), L("s3"), NULL);
  node(&g, "SequenceLength", L("s3"), L("len"), NULL);
  a_int(&a, "axis", 1), a_int(&a, "new_axis", 1);
  node(&g, "ConcatFromSequence", L("s3"), L("stacked"), &a);
  node(&g, "SequenceAt", L("s3", "neg1"), L("last"), NULL);
  node(&g, "Optional", L("x"), L("ox"), NULL);
  node(&g, "OptionalGetElement", L("ox"), L("gx"), NULL);
  node(&g, "OptionalHasElement", L(""), L("none"), NULL);
  node(&g, "OptionalHasElement", L("ox"), L("some"), NULL);
  pb body = {0}, mb = {0};
  in(&body, "el", F32, 1, L("2")), in(&body, "kk", F32, 0, NULL);
  node(&body, "Add", L("el", "kk"), L("m"), NULL);
  out(&body, "m", F32, 1, L("2"));
  a_graph(&mb, "body", &body);
  node(&g, "SequenceMap", L("s3", "one"), L("mapped"), &mb);
  a_int(&a, "axis", 0);
  node(&g, "ConcatFromSequence", L("mapped"), L("flat"), &a);
  out(&g, "len", I64, 0, NULL), out(&g, "stacked", F32, 2, L("2", "3")), out(&g, "last", F32, 1, L("2"));
  out(&g, "gx", F32, 2, L("3", "2")), out(&g, "none", BOOL, 0, NULL), out(&g, "some", BOOL, 0, NULL);
  out(&g, "flat", F32, 1, L("6"));
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import(&g, 18, &m, &gm);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  loom_graph_value x, r;
  float xv[] = {1, 2, 3, 4, 5, 6};
  f32_arg(&x, 2, (int64_t[]){3, 2}, xv);
  s = loom_graph_eval(gm, "main", 1, &x, NULL, &r);
  cr_assert(!s, "%s", s ? loom_status_text(s, 0) : "");
  /* s3 = [x0 + 1, x0, x1] */
  cr_assert_eq(((int64_t *)r.items[0].t.data)[0], 3);
  expect_f32(&r.items[1], 2, (int64_t[]){2, 3}, (float[]){2, 1, 3, 3, 2, 4});
  expect_f32(&r.items[2], 1, (int64_t[]){2}, (float[]){3, 4});
  expect_f32(&r.items[3], 2, (int64_t[]){3, 2}, xv);
  cr_assert_eq(((uint8_t *)r.items[4].t.data)[0], 0);
  cr_assert_eq(((uint8_t *)r.items[5].t.data)[0], 1);
  expect_f32(&r.items[6], 1, (int64_t[]){6}, (float[]){3, 4, 2, 3, 4, 5}); /* SequenceMap: + 1 */
  loom_graph_value_free(&r), loom_graph_value_free(&x);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx_ctl, sequence_refusals) {
  pb g = {0};
  in(&g, "x", F32, 1, L("4"));
  node(&g, "SequenceConstruct", L("x", "x"), L("s"), NULL);
  k_int(&g, "five", 5);
  node(&g, "SequenceAt", L("s", "five"), L("y"), NULL);
  out(&g, "y", F32, 1, L("4"));
  EXPECT_REFUSED(&g, 18, INVALID_ARGUMENT, "node 2 (SequenceAt): position 5 is out of range for a sequence of length 2");
  in(&g, "x", F32, 1, L("4"));
  node(&g, "SequenceConstruct", L("x", "x"), L("s"), NULL);
  node(&g, "Relu", L("s"), L("y"), NULL);
  out(&g, "y", F32, 1, L("4"));
  EXPECT_REFUSED(&g, 18, UNIMPLEMENTED, "node 1 (Relu): input 0 's' is a sequence or optional, which Relu does not take");
  /* a sequence built in the graph that is a graph output: a list value there (list_new) */
  in(&g, "x", F32, 1, L("4"));
  node(&g, "SequenceConstruct", L("x", "x"), L("s"), NULL);
  pb_value_info(&g, 12, "s", F32, 1, L("4"));
  {
    loom_onnx_model *m = NULL;
    loom_graph_module *gm = NULL;
    loom_status st = import(&g, 18, &m, &gm);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    const loom_graph_func *f = loom_graph_module_find_func(gm, "main");
    cr_assert_eq(f->ret->kind, LOOM_SINFO_LIST);
    cr_assert_not_null(f->ret->value);
    int64_t len = -1;
    cr_expect(loom_sym_is_const(f->ret->value, &len) && len == 2, "a list of 2");
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
  }
  pb t = {0};
  in(&g, "x", F32, 1, L("4"));
  pb_str(&t, 1, "type"), pb_int(&t, 20, 13);
  pb at = {0};
  pb_msg(&at, 5, &t);
  node(&g, "Optional", NONE, L("o"), &at);
  node(&g, "OptionalGetElement", L("o"), L("y"), NULL);
  out(&g, "y", F32, 1, L("4"));
  EXPECT_REFUSED(&g, 18, INVALID_ARGUMENT, "node 1 (OptionalGetElement): input 0 'o' is an empty optional");
  in(&g, "x", F32, 1, L("4"));
  node(&g, "SequenceConstruct", L("x"), L("s"), NULL);
  k_int(&g, "k", 0);
  node(&g, "SequenceInsert", L("s", "k"), L("s2"), NULL);
  node(&g, "SequenceLength", L("s2"), L("y"), NULL);
  out(&g, "y", I64, 0, NULL);
  EXPECT_REFUSED(&g, 18, INVALID_ARGUMENT, "node 2 (SequenceInsert): input 1 'k' is i64, the sequence holds f32");
  in(&g, "x", F32, 1, L("4"));
  node(&g, "SequenceConstruct", L("x"), L("s"), NULL);
  node(&g, "SplitToSequence", L("s"), L("s2"), NULL);
  node(&g, "SequenceLength", L("s2"), L("y"), NULL);
  out(&g, "y", I64, 0, NULL);
  EXPECT_REFUSED(&g, 18, INVALID_ARGUMENT, "node 1 (SplitToSequence): input 0 's' must be a tensor, not a sequence or optional");
}

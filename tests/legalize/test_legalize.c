/* test_legalize.c — legalization, operator by operator: the graph interpreter's result on a
 * one-op module equals the generated tensor program run by the tensor-program interpreter on
 * the same inputs, on shapes including 0, 1 and primes (bit-exact for integers and bools,
 * a stated tolerance for floats). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/legalize.h"
#include "graph/legalize_internal.h" /* loom_legal_program */
#include "support/loom_test.h"
#include "tensorprog/tp_ir.h"

/* Case tables below leave index_range out unless a case needs it (zero). */
#pragma clang diagnostic ignored "-Wmissing-field-initializers"

typedef struct op_case {
  const char *params;  /* "x: Tensor[(n, 5), f32], y: Tensor[(5,), f32]" */
  const char *call;    /* "gelu(x)" */
  int nshapes;         /* shape sets to try */
  int64_t shapes[4][5][6]; /* [set][param][axis]; ranks come from the text */
  int64_t index_range;     /* > 0: integer inputs are indices in [0, index_range) */
  const char *prelude;     /* module constants before @main, or NULL */
  const double *given[5];  /* [param]: its values (as many as it has elements) instead of the fill, or NULL */
} op_case;

static void fill(loom_graph_tensor *t, int seed, int64_t index_range) {
  for (size_t i = 0; i < t->numel; i++) {
    double v = (double)(((int)i * 29 + seed * 13) % 19) / 4.0 - 2.2;
    if (loom_dtype_is_float(t->dtype)) loom_graph_tensor_set_f64(t, i, v);
    else if (t->dtype == LOOM_DTYPE_BOOL) loom_graph_tensor_set_i64(t, i, ((int)i + seed) % 3 == 0);
    else if (index_range > 0) loom_graph_tensor_set_i64(t, i, (int64_t)((i * 7 + (size_t)seed) % (size_t)index_range));
    else {
      int64_t k = (int64_t)floor(v * 3) + (((int)i % 5 == 0) ? 7 : 0);
      loom_graph_tensor_set_i64(t, i, k ? k : 1); /* nonzero: the same data serves as divisors */
    }
  }
}

/* got equals ref: tensors elementwise (bit-exact for integers, 1e-5 relative for floats), tuples
 * item by item. */
static void expect_same(const op_case *c, int k, const loom_graph_value *ref, const loom_graph_value *got, const char *text) {
  cr_assert_eq(got->kind, ref->kind, "%s: result kinds differ", c->call);
  if (ref->kind == LOOM_SINFO_TUPLE) {
    cr_assert_eq(got->n, ref->n);
    for (size_t j = 0; j < ref->n; j++) expect_same(c, k, &ref->items[j], &got->items[j], text);
    return;
  }
  const loom_graph_tensor *rt = &ref->t;
  cr_assert_eq(got->t.numel, rt->numel);
  for (size_t i = 0; i < rt->numel; i++) {
    if (loom_dtype_is_float(rt->dtype)) {
      double want = loom_graph_tensor_get_f64(rt, i), have = loom_graph_tensor_get_f64(&got->t, i);
      double tol = 1e-5 * (1 + fabs(want));
      cr_assert(fabs(want - have) <= tol || want == have || (isnan(want) && isnan(have)), "%s set %d elem %zu: want %.9g got %.9g\n%s", c->call, k, i,
                want, have, text);
    } else {
      cr_assert_eq(loom_graph_tensor_get_i64(&got->t, i), loom_graph_tensor_get_i64(rt, i), "%s set %d elem %zu: want %lld got %lld",
                   c->call, k, i, (long long)loom_graph_tensor_get_i64(rt, i), (long long)loom_graph_tensor_get_i64(&got->t, i));
    }
  }
}

/* The module of `text` (which must parse); *diags initialised for the caller to destroy. */
static loom_graph_module *parse_case(const char *text, loom_diag_list *diags) {
  loom_source src = {"case.loom", text, strlen(text)};
  loom_diag_list_init(diags, NULL);
  loom_graph_module *m = NULL;
  loom_status s = loom_graph_parse(&src, diags, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  return m;
}

static void run_case(const op_case *c) {
  char text[2048];
  snprintf(text, sizeof text, "%sfn @main(%s) -> Object {\n  dataflow {\n    out = %s\n    output out\n  }\n  return out\n}\n",
           c->prelude ? c->prelude : "", c->params, c->call);
  loom_diag_list diags;
  loom_graph_module *m = parse_case(text, &diags);
  loom_status s;
  loom_graph_func *f = loom_graph_module_find_func(m, "main");
  size_t np = f->nparams;
  /* Reference results before legalization, one per shape set. */
  loom_graph_value refs[4], inputs[4][5];
  for (int k = 0; k < c->nshapes; k++) {
    for (size_t p = 0; p < np; p++) {
      const loom_sinfo *si = f->params[p]->sinfo;
      cr_assert_null(loom_graph_value_tensor(si->dtype, si->ndim, c->shapes[k][p], &inputs[k][p]));
      fill(&inputs[k][p].t, (int)(k * 3 + p), c->index_range);
      for (size_t i = 0; c->given[p] && i < inputs[k][p].t.numel; i++) loom_graph_tensor_set_f64(&inputs[k][p].t, i, c->given[p][i]);
    }
    s = loom_graph_eval(m, "main", np, inputs[k], NULL, &refs[k]);
    cr_assert_null(s, "%s: %s", c->call, loom_status_text(s, 0));
  }
  size_t done = 0, kept = 0;
  const loom_graph_expr *before = f->body->blocks[0]->bindings[0]->value;
  bool view = before->u.call.callee == LOOM_GRAPH_CALLEE_OP && loom_graph_op_is_view(before->u.call.op) && before->u.call.nargs == 1;
  s = loom_graph_legalize(m, &diags, &done, &kept);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  const loom_graph_expr *call = f->body->blocks[0]->bindings[0]->value;
  if (view) { /* views stay operators (the VM gives them their input's memory) */
    cr_assert_eq(done + kept, 0, "%s: a view was lowered", c->call);
    cr_assert_eq(call->u.call.callee, LOOM_GRAPH_CALLEE_OP);
  } else {
    /* one binding, or several (tuple results, dims bound from data before the program) */
    cr_assert_eq(done, 1, "%s: not legalized (%zu kept)", c->call, kept);
    cr_assert_eq(kept, 0, "%s: %zu calls kept", c->call, kept);
    const loom_graph_block *blk = f->body->blocks[0];
    for (size_t j = 0; j < blk->n; j++) {
      const loom_graph_expr *v = blk->bindings[j]->value;
      if (v->kind == LOOM_GRAPH_EXPR_CALL && v->u.call.callee == LOOM_GRAPH_CALLEE_OP)
        cr_assert(loom_graph_op_is_view(v->u.call.op) || v->u.call.op == LOOM_GRAPH_OP_TENSOR_TO_SHAPE,
                  "%s: binding %zu is still operator %s", c->call, j, loom_graph_op_name(v->u.call.op));
    }
  }
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++)
    cr_assert_null(loom_tp_verify(loom_graph_module_sym(m), loom_graph_module_tp_at(m, i)));
  loom_diag_list vdiags;
  loom_diag_list_init(&vdiags, NULL);
  s = loom_graph_verify(m, &vdiags);
  cr_assert_null(s, "%s: the legalized module does not verify: %s", c->call, loom_status_text(s, 0));
  loom_diag_list_destroy(&vdiags);
  /* The legalized module runs its call_tp through the tensor-program interpreter. */
  for (int k = 0; k < c->nshapes; k++) {
    loom_graph_value got;
    s = loom_graph_eval(m, "main", np, inputs[k], NULL, &got);
    cr_assert_null(s, "%s (shape set %d): %s", c->call, k, loom_status_text(s, 0));
    expect_same(c, k, &refs[k], &got, text);
    loom_graph_value_free(&got);
    loom_graph_value_free(&refs[k]);
    for (size_t p = 0; p < np; p++) loom_graph_value_free(&inputs[k][p]);
  }
  loom_diag_list_destroy(&diags);
  loom_graph_module_destroy(m);
}

/* Values for the casts to float8 / e8m0: overflow bounds and ties (e5m2: 61440, e4m3fn: 464,
 * e4m3fnuz: 248), infinities, NaN, f32 subnormals (2^-127 is e8m0's smallest), 2^127 * 1.5. */
static const double cast_big[] = {1e5, -1e5, 61440, -61439, 57344, INFINITY, -INFINITY, NAN, 464, -465};
static const double cast_mid[] = {248, -247, 464, -465, 500, 6, 7, INFINITY, -INFINITY, 0.375};
static const double cast_int[] = {70000, -61440, 61439, 3, -100000};
static const double cast_e8[] = {0, 5.877471754111438e-39, 1.5, 3, 2.552117751907038e38,
                                 INFINITY, NAN, -0.75, 1e-39, 1.7014118346046923e38};

#define SH1(a) {{a}}
static const op_case unary_cases[] = {
    {"x: Tensor[(n, 5), f32]", "gelu(x)", 3, {{{3, 5}}, {{0, 5}}, {{1, 5}}}},
    {"x: Tensor[(n, 5), f32]", "gelu_tanh(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "silu(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "relu(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "sign(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "tanh(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "sigmoid(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "neg(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "round(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "clip(x, min=-0.5, max=0.75)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=i32)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), i32]", "cast(x, dtype=f64)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=i4)", 1, {{{7, 5}}}}, /* the 4- / 2-bit integers: integers of that width */
    {"x: Tensor[(n, 5), i32]", "cast(x, dtype=u2)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), u4]", "cast(x, dtype=f32)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e4m3fn)", 1, {{{7, 5}}}}, /* float8 / float4: storage types */
    {"x: Tensor[(n, 5), f64]", "cast(x, dtype=f8e5m2fnuz)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f4e2m1)", 1, {{{7, 5}}}},
    {"x: Tensor[(n, 5), f8e5m2]", "cast(x, dtype=f32)", 1, {{{7, 5}}}},
    /* saturate=false: past the overflow bound inf (e5m2) or NaN, with the sign; ties at the bound */
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e5m2, saturate=false)", 1, {{{2, 5}}}, .given = {cast_big}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e4m3fn, saturate=false)", 1, {{{2, 5}}}, .given = {cast_big}},
    {"x: Tensor[(n, 5), f16]", "cast(x, dtype=f8e4m3fnuz, saturate=false)", 1, {{{2, 5}}}, .given = {cast_mid}},
    {"x: Tensor[(n, 5), f64]", "cast(x, dtype=f8e5m2fnuz, saturate=false)", 1, {{{2, 5}}}, .given = {cast_big}},
    {"x: Tensor[(n, 5), i32]", "cast(x, dtype=f8e5m2, saturate=false)", 1, {{{1, 5}}}, .given = {cast_int}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f4e2m1, saturate=false)", 1, {{{2, 5}}}, .given = {cast_mid}},
    {"x: Tensor[(n, 5), f8e5m2]", "cast(x, dtype=f8e4m3fn, saturate=false)", 1, {{{7, 5}}}},
    /* e8m0: each round_mode, saturating or not, at the ends of its range, subnormals, inf, NaN */
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e8m0)", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e8m0, saturate=false)", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e8m0, round_mode=\"down\")", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f32]", "cast(x, dtype=f8e8m0, round_mode=\"nearest\")", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f64]", "cast(x, dtype=f8e8m0, round_mode=\"nearest\", saturate=false)", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f16]", "cast(x, dtype=f8e8m0, round_mode=\"nearest\")", 1, {{{2, 5}}}, .given = {cast_mid}},
    {"x: Tensor[(n, 5), i64]", "cast(x, dtype=f8e8m0, round_mode=\"down\")", 1, {{{1, 5}}}, .given = {cast_int}},
    {"x: Tensor[(n, 5), f8e8m0]", "cast(x, dtype=f32)", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), f8e8m0]", "cast(x, dtype=f16)", 1, {{{2, 5}}}, .given = {cast_e8}},
    {"x: Tensor[(n, 5), i64]", "abs(x)", 1, {{{7, 5}}}},
    {"x: Tensor[(n,), bool]", "not(x)", 1, {{{11}}}},
    /* bitcast: float <-> integer through the program's bitcast, the rest as value casts */
    {"x: Tensor[(n, 5), f32]", "bitcast(x, dtype=i32)", 3, {{{7, 5}}, {{0, 5}}, {{1, 5}}}},
    {"x: Tensor[(n, 5), f64]", "bitcast(x, dtype=u64)", 1, {{{3, 5}}}},
    {"x: Tensor[(n, 5), f16]", "bitcast(x, dtype=i16)", 1, {{{3, 5}}}},
    {"x: Tensor[(n, 5), bf16]", "bitcast(x, dtype=u16)", 1, {{{3, 5}}}},
    {"x: Tensor[(n, 5), i32]", "bitcast(x, dtype=f32)", 1, {{{13, 5}}}},
    {"x: Tensor[(n, 5), i64]", "bitcast(x, dtype=f64)", 1, {{{2, 5}}}},
    {"x: Tensor[(n, 5), i16]", "bitcast(x, dtype=f16)", 1, {{{2, 5}}}},
    {"x: Tensor[(n, 5), i16]", "bitcast(x, dtype=bf16)", 1, {{{2, 5}}}},
    {"x: Tensor[(n, 5), i8]", "bitcast(x, dtype=u8)", 1, {{{3, 5}}}},
    {"x: Tensor[(n,), bool]", "bitcast(x, dtype=u8)", 1, {{{11}}}},
    {"x: Tensor[(n,), i8]", "bitcast(x, dtype=bool)", 1, {{{11}}}},
};

static const op_case binary_cases[] = {
    {"x: Tensor[(n, 5), f32], y: Tensor[(5,), f32]", "add(x, y)", 3, {{{3, 5}, {5}}, {{0, 5}, {5}}, {{13, 5}, {5}}}},
    {"x: Tensor[(n, 1), f32], y: Tensor[(1, m), f32]", "mul(x, y)", 2, {{{3, 1}, {1, 4}}, {{1, 1}, {1, 7}}}},
    {"x: Tensor[(n, m), f32], y: Tensor[(k, m), f32]", "sub(x, y)", 2, {{{3, 4}, {1, 4}}, {{3, 4}, {3, 4}}}},
    {"x: Tensor[(n, 4), i32], y: Tensor[(n, 4), i32]", "div(x, y)", 1, {{{5, 4}, {5, 4}}}},
    {"x: Tensor[(n, 4), i32], y: Tensor[(n, 4), i32]", "mod(x, y)", 1, {{{5, 4}, {5, 4}}}},
    {"x: Tensor[(n, 4), f32], y: Tensor[(4,), f32]", "less(x, y)", 1, {{{5, 4}, {4}}}},
    {"x: Tensor[(n, 4), f32], y: Tensor[(n, 4), f32]", "maximum(x, y)", 1, {{{5, 4}, {5, 4}}}},
    {"x: Tensor[(n, 4), f32], y: Tensor[(n, 4), f32]", "pow(x, y)", 1, {{{5, 4}, {5, 4}}}},
    {"x: Tensor[(n,), bool], y: Tensor[(n,), bool]", "logical_xor(x, y)", 1, {{{9}, {9}}}},
    {"x: Tensor[(n, 5), i32], y: Tensor[(5,), i32]", "shift_left(x, y)", 2, {{{3, 5}, {5}}, {{0, 5}, {5}}}},
    {"x: Tensor[(n, 5), i64], y: Tensor[(n, 5), i64]", "shift_right(x, y)", 1, {{{4, 5}, {4, 5}}}},
    {"x: Tensor[(n, 5), u8], y: Tensor[(n, 1), u8]", "shift_right(x, y)", 1, {{{4, 5}, {4, 1}}}},
    /* integer pow: small operands (the two layers convert an out-of-range float to a narrow integer differently) */
    {"x: Tensor[(n, 5), i32], y: Tensor[(5,), i32]", "pow(x, y)", 1, {{{3, 5}, {5}}}, 5},
    {"x: Tensor[(n, 5), i64], y: Tensor[(n, 5), i64]", "pow(x, y)", 1, {{{4, 5}, {4, 5}}}, 5},
};

static const op_case reduce_cases[] = {
    {"x: Tensor[(n, 5, 3), f32]", "sum(x, axes=[1], keepdims=true)", 2, {{{2, 5, 3}}, {{0, 5, 3}}}},
    {"x: Tensor[(n, 5, 3), f32]", "mean(x, axes=[0, 2])", 2, {{{2, 5, 3}}, {{7, 5, 3}}}},
    {"x: Tensor[(n, 5, 3), f32]", "max(x, axes=[-1])", 1, {{{4, 5, 3}}}},
    {"x: Tensor[(n, 5), i32]", "prod(x, axes=[0], keepdims=true)", 1, {{{3, 5}}}},
    {"x: Tensor[(n, 4), f32]", "softmax(x, axis=-1)", 2, {{{3, 4}}, {{1, 4}}}},
    {"x: Tensor[(n, 4), f32]", "log_softmax(x, axis=0)", 1, {{{5, 4}}}},
    {"x: Tensor[(b, s, 8), f32], g: Tensor[(8,), f32], bt: Tensor[(8,), f32]", "layer_norm(x, g, bt, eps=0.00001)", 2,
     {{{2, 3, 8}, {8}, {8}}, {{1, 1, 8}, {8}, {8}}}},
    {"x: Tensor[(n, 8), f32], g: Tensor[(8,), f32]", "rms_norm(x, g)", 1, {{{5, 8}, {8}}}},
    {"a: Tensor[(m, 6), f32], w: Tensor[(6, 4), f32]", "matmul(a, w)", 3, {{{3, 6}, {6, 4}}, {{1, 6}, {6, 4}}, {{0, 6}, {6, 4}}}},
    {"a: Tensor[(b, m, 6), f32], w: Tensor[(6, 4), f32]", "matmul(a, w)", 1, {{{2, 3, 6}, {6, 4}}}},
    {"a: Tensor[(b, m, k), f32], w: Tensor[(b, k, n), f32]", "matmul(a, w)", 1, {{{2, 3, 5}, {2, 5, 7}}}},
    {"a: Tensor[(k,), f32], b: Tensor[(k,), f32]", "matmul(a, b)", 2, {{{7}, {7}}, {{0}, {0}}}},
    {"a: Tensor[(k,), f32], b: Tensor[(2, k, n), f32]", "matmul(a, b)", 1, {{{5}, {2, 5, 3}}}},
    {"a: Tensor[(b, 3, m, k), f32], b: Tensor[(k,), f32]", "matmul(a, b)", 1, {{{2, 3, 4, 5}, {5}}}},
    {"a: Tensor[(m, k), f32], b: Tensor[(k,), f32]", "matmul(a, b)", 1, {{{4, 6}, {6}}}},
};

static const op_case shape_cases[] = {
    {"x: Tensor[(n, 6), f32], w: Tensor[(4, 6), f32], bb: Tensor[(4,), f32]", "linear(x, w, bb)", 2,
     {{{3, 6}, {4, 6}, {4}}, {{0, 6}, {4, 6}, {4}}}},
    {"x: Tensor[(b, s, 6), f32], w: Tensor[(4, 6), f32]", "linear(x, w)", 1, {{{2, 3, 6}, {4, 6}}}},
    {"x: Tensor[(b, s, 12), f32]", "reshape(x, shape=[b, s, 3, 4])", 2, {{{2, 3, 12}}, {{1, 1, 12}}}},
    {"x: Tensor[(b, s, 3, 4), f32]", "reshape(x, shape=[b*s, 12])", 1, {{{2, 5, 3, 4}}}},
    {"x: Tensor[(n, 5), f32]", "expand_dims(x, axes=[1])", 1, {{{3, 5}}}},
    {"x: Tensor[(n, 1, 5), f32]", "squeeze(x, axes=[1])", 1, {{{3, 1, 5}}}},
    {"x: Tensor[(b, s, 3, 4), f32]", "permute_dims(x, axes=[0, 2, 1, 3])", 2, {{{2, 5, 3, 4}}, {{1, 0, 3, 4}}}},
    {"x: Tensor[(n, 7), f32]", "permute_dims(x)", 1, {{{3, 7}}}},
    {"x: Tensor[(n, 4), f32], y: Tensor[(m, 4), f32]", "concat(x, y, axis=0)", 3, {{{2, 4}, {3, 4}}, {{0, 4}, {3, 4}}, {{2, 4}, {0, 4}}}},
    {"x: Tensor[(n, 2), i32], y: Tensor[(n, 3), i32], z: Tensor[(n, 1), i32]", "concat(x, y, z, axis=-1)", 1,
     {{{4, 2}, {4, 3}, {4, 1}}}},
};

static const op_case more_cases[] = {
    {"c: Tensor[(n, 4), bool], x: Tensor[(n, 4), f32], y: Tensor[(4,), f32]", "where(c, x, y)", 2,
     {{{3, 4}, {3, 4}, {4}}, {{0, 4}, {0, 4}, {4}}}},
    {"x: Tensor[(b, s, 12), f32]", "strided_slice(x, axes=[2], begin=[4], end=[8])", 2, {{{2, 3, 12}}, {{1, 1, 12}}}},
    {"x: Tensor[(n, 9), f32]", "strided_slice(x, axes=[1], begin=[1], end=[9], strides=[3])", 1, {{{4, 9}}}},
    /* negative steps (ONNX Slice going down: bounds clamped to [-1, extent - 1]; torch's flip as
     * begin -1, end -2^40 on a symbolic axis) */
    {"x: Tensor[(n, 6), f32]", "strided_slice(x, axes=[0], begin=[-1], end=[-1099511627776], strides=[-1])", 4,
     {{{4, 6}}, {{1, 6}}, {{0, 6}}, {{7, 6}}}},
    {"x: Tensor[(n, m), f32]", "strided_slice(x, axes=[1, 0], begin=[-2, n - 2], end=[0, -7], strides=[-3, -2])", 4,
     {{{5, 6}}, {{1, 1}}, {{0, 3}}, {{11, 13}}}},
    {"x: Tensor[(n, 9), f32]", "strided_slice(x, axes=[0], begin=[1], end=[n])", 2, {{{4, 9}}, {{7, 9}}}},
    /* begins not provably >= 0 (or <= the extent): the program gets the reference's clamped begin */
    {"x: Tensor[(n, 6), f32], p: Tensor[(k,), f32]", "strided_slice(x, axes=[0], begin=[k - 3], end=[n])", 4,
     {{{7, 6}, {0}}, {{7, 6}, {2}}, {{7, 6}, {5}}, {{7, 6}, {12}}}},
    {"x: Tensor[(n, 6), f32], p: Tensor[(k,), f32]", "strided_slice(x, axes=[0, 1], begin=[k - 5, -4], end=[n, 6], strides=[2, 1])", 3,
     {{{7, 6}, {1}}, {{7, 6}, {6}}, {{3, 6}, {9}}}},
    {"x: Tensor[(n, m), f32]", "tril(x)", 2, {{{4, 5}}, {{3, 3}}}},
    {"x: Tensor[(n, m), f32]", "triu(x, k=[1])", 1, {{{4, 5}}}},
    {"x: Tensor[(n, m), bool]", "tril(x, k=[-1])", 1, {{{5, 5}}}},
    {"x: Tensor[(v, 6), f32], i: Tensor[(n,), i64]", "take(x, i, axis=0)", 1, {{{7, 6}, {5}}}, 7},
    {"x: Tensor[(b, v), f32], i: Tensor[(n, m), i32]", "take(x, i, axis=1)", 1, {{{2, 9}, {3, 2}}}, 9},
    {"x: Tensor[(n, 7), f32]", "argmax(x, axis=1)", 2, {{{4, 7}}, {{1, 7}}}},
    {"x: Tensor[(n, 7), f32]", "argmin(x, axis=0, keepdims=true)", 1, {{{4, 7}}}},
    {"x: Tensor[(n, 7), f32]", "cumsum(x, axis=1)", 2, {{{4, 7}}, {{0, 7}}}},
    {"x: Tensor[(n, 7), i64]", "cumsum(x, axis=0, exclusive=true)", 1, {{{5, 7}}}},
    {"x: Tensor[(n, 7), f32]", "cumprod(x, axis=1)", 2, {{{4, 7}}, {{0, 7}}}},
    {"x: Tensor[(n, 3), i32]", "cumprod(x, axis=0, exclusive=true)", 1, {{{5, 3}}}},
    {"x: Tensor[(n, 3), f32]", "pad(x, pads=[1, 0, 2, 2], value=-1.5)", 2, {{{4, 3}}, {{0, 3}}}},
    {"x: Tensor[(n, 3), f32]", "tile(x, repeats=[2, 3])", 1, {{{4, 3}}}},
    {"x: Tensor[(n, 3), f32]", "repeat(x, repeats=2, axis=1)", 1, {{{4, 3}}}},
    {"x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64]", "gather_elements(x, i, axis=1)", 1, {{{3, 5}, {3, 2}}}, 5},
    /* the indices' extent on the other axis (k) not provably <= the data's (n): a run-time guard, here holding */
    {"x: Tensor[(n, 5), f32], i: Tensor[(k, 2), i64]", "gather_elements(x, i, axis=1)", 3, {{{3, 5}, {3, 2}}, {{6, 5}, {2, 2}}, {{4, 5}, {0, 2}}}, 5},
    {"x: Tensor[(n, 5), f32], i: Tensor[(k, m), i32], u: Tensor[(k, m), f32]", "scatter_elements(x, i, u, axis=0, reduction=\"add\")", 2,
     {{{4, 5}, {3, 2}, {3, 2}}, {{4, 5}, {4, 5}, {4, 5}}}, 4},
    {"x: Tensor[(n, 4, 3), f32], i: Tensor[(k, 2), i64]", "gather_nd(x, i)", 2, {{{5, 4, 3}, {6, 2}}, {{4, 4, 3}, {0, 2}}}, 4},
    {"x: Tensor[(b, 5, 3), f32], i: Tensor[(b, k, 1), i32]", "gather_nd(x, i, batch_dims=1)", 1, {{{2, 5, 3}, {2, 4, 1}}}, 5},
    {"x: Tensor[(n, 4), f32], i: Tensor[(k, 1), i64], u: Tensor[(k, 4), f32]", "scatter_nd(x, i, u)", 2,
     {{{5, 4}, {3, 1}, {3, 4}}, {{5, 4}, {0, 1}, {0, 4}}}, 5},
    {"x: Tensor[(n, 4), i32], i: Tensor[(k, 2), i64], u: Tensor[(k,), i32]", "scatter_nd(x, i, u, reduction=\"add\")", 1,
     {{{4, 4}, {9, 2}, {9}}}, 4},
    {"x: Tensor[(n, 5), f32], i: Tensor[(n, 2), i64], u: Tensor[(n, 2), f32]", "scatter_elements(x, i, u, axis=1, reduction=\"max\")", 1,
     {{{3, 5}, {3, 2}, {3, 2}}}, 5},
    {"x: Tensor[(n, 5), f32], i: Tensor[(k, 5), i64], u: Tensor[(k, 5), f32]", "scatter_elements(x, i, u, axis=0)", 1,
     {{{4, 5}, {7, 5}, {7, 5}}}, 4},
    {"i: Tensor[(n,), i64]", "one_hot(i, depth=[6], on_value=2.0, off_value=-1.0, dtype=f32)", 1, {{{7}}}, 6},
    {"x: Tensor[(n,), f32]", "arange(start=[2], end=[n + 2], step=[1], dtype=i64)", 1, {{{5}}}},
    /* plain integers for symbolic attributes: the program's scalars are the values the reference
     * reads (legalization used to pass the defaults, start 0 and k 0) */
    {"x: Tensor[(n,), f32]", "arange(start=2, end=[n + 2], step=1, dtype=i64)", 1, {{{5}}}},
    {"x: Tensor[(n, m), f32]", "tril(x, k=1)", 1, {{{4, 5}}}},
    {"x: Tensor[(n, 1), f32]", "broadcast_to(x, shape=[2, n, 3])", 2, {{{3, 1}}, {{1, 1}}}},
    {"x: Tensor[(n,), i32]", "broadcast_to(x, shape=[4, 1, n])", 2, {{{5}}, {{0}}}},
};

static const op_case cnn_cases[] = {
    /* conv: N-d (the spatial rank from the input's), the same window programs */
    {"x: Tensor[(n, 4, d, h, w), f32], k: Tensor[(6, 2, 3, 2, 3), f32], bb: Tensor[(6,), f32]",
     "conv(x, k, bb, strides=[1, 2, 1], padding=[1, 0, 2, 0, 1, 1], dilation=[2, 1, 1], groups=2)", 3,
     {{{2, 4, 5, 6, 7}, {6, 2, 3, 2, 3}, {6}}, {{1, 4, 3, 2, 1}, {6, 2, 3, 2, 3}, {6}}, {{0, 4, 5, 5, 5}, {6, 2, 3, 2, 3}, {6}}}},
    {"x: Tensor[(n, 2, l), f32], k: Tensor[(3, 2, 3), f32]", "conv(x, k, padding=[1])", 2, {{{2, 2, 5}, {3, 2, 3}}, {{1, 2, 1}, {3, 2, 3}}}},
    {"x: Tensor[(n, 1, a, b, e, f), f32], k: Tensor[(2, 1, 2, 1, 2, 2), f32]", "conv(x, k, padding=[1, 0, 0, 1, 0, 1, 1, 0])", 1,
     {{{1, 1, 3, 2, 3, 2}, {2, 1, 2, 1, 2, 2}}}},
    {"x: Tensor[(n, 3, h, w), f32], k: Tensor[(4, 3, 3, 3), f32]", "conv2d(x, k, padding=[1])", 2,
     {{{2, 3, 5, 4}, {4, 3, 3, 3}}, {{1, 3, 1, 1}, {4, 3, 3, 3}}}},
    {"x: Tensor[(n, 4, h, w), f32], k: Tensor[(6, 2, 3, 1), f32], bb: Tensor[(6,), f32]",
     "conv2d(x, k, bb, strides=[2, 1], dilation=[1, 1], padding=[0, 1, 1, 0], groups=2)", 1,
     {{{1, 4, 7, 5}, {6, 2, 3, 1}, {6}}}},
    {"x: Tensor[(n, c, h, w), f32]", "max_pool2d(x, kernel=[3, 3], strides=[2, 2], padding=[1])", 2,
     {{{1, 2, 7, 6}}, {{2, 1, 3, 3}}}},
    {"x: Tensor[(n, c, h, w), f32]", "avg_pool2d(x, kernel=[2, 2], padding=[1])", 1, {{{1, 2, 5, 4}}}},
    {"x: Tensor[(n, c, h, w), f32]", "global_avg_pool2d(x)", 1, {{{2, 3, 5, 4}}}},
    {"x: Tensor[(n, 4, l), f32], k: Tensor[(6, 2, 3), f32], bb: Tensor[(6,), f32]",
     "conv1d(x, k, bb, strides=[2], dilation=[2], padding=[1, 2], groups=2)", 3,
     {{{1, 4, 11}, {6, 2, 3}, {6}}, {{2, 4, 2}, {6, 2, 3}, {6}}, {{0, 4, 7}, {6, 2, 3}, {6}}}},
    {"x: Tensor[(n, 3, l), f32], k: Tensor[(5, 3, 1), f32]", "conv1d(x, k)", 1, {{{2, 3, 13}, {5, 3, 1}}}},
    {"x: Tensor[(n, 4, h, w), f32], k: Tensor[(4, 3, 3, 2), f32], bb: Tensor[(6,), f32]",
     "conv_transpose(x, k, bb, strides=[2, 3], padding=[1, 0, 0, 1], dilation=[1, 2], groups=2, output_padding=[1, 0])", 2,
     {{{1, 4, 3, 2}, {4, 3, 3, 2}, {6}}, {{2, 4, 1, 1}, {4, 3, 3, 2}, {6}}}},
    {"x: Tensor[(n, 2, l), f32], k: Tensor[(2, 3, 3), f32]", "conv_transpose(x, k)", 2, {{{1, 2, 5}, {2, 3, 3}}, {{1, 2, 0}, {2, 3, 3}}}},
    {"x: Tensor[(n, 1, a, b, e), f32], k: Tensor[(1, 2, 2, 2, 2), f32]", "conv_transpose(x, k, strides=[2, 2, 2])", 1,
     {{{1, 1, 2, 3, 2}, {1, 2, 2, 2, 2}}}},
};

/* The image family's N-d pools: every knob (dilation, padding before/after, ceil mode with its
 * window shift, counted padding, Lp, argmax indices in both storage orders). */
static const op_case pool_cases[] = {
    {"x: Tensor[(n, c, l), f32]", "max_pool(x, kernel=[3], strides=[2], padding=[1, 1])", 3,
     {{{2, 3, 7}}, {{1, 1, 1}}, {{1, 2, 13}}}},
    {"x: Tensor[(n, c, a, b, e), f32]", "max_pool(x, kernel=[2, 2, 2], strides=[1, 2, 1], dilation=[1, 1, 2])", 2,
     {{{1, 2, 3, 5, 4}}, {{2, 1, 2, 2, 3}}}},
    {"x: Tensor[(n, c, h, w), i32]", "max_pool(x, kernel=[2, 3], padding=[1, 0, 0, 2])", 1, {{{1, 2, 5, 4}}}},
    {"x: Tensor[(n, c, h, w), f32]", "avg_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], count_include_pad=true)", 2,
     {{{1, 2, 7, 6}}, {{2, 1, 3, 3}}}},
    {"x: Tensor[(n, c, h, w), f32]", "avg_pool(x, kernel=[3, 2], strides=[2, 1], padding=[1, 0, 1, 1])", 1, {{{1, 2, 7, 5}}}},
    {"x: Tensor[(n, 2, 6, 5), f32]", "avg_pool(x, kernel=[3, 2], strides=[2, 2], ceil_mode=true)", 1, {{{1, 2, 6, 5}}}},
    {"x: Tensor[(n, 2, 6, 5), f32]", "avg_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=true, count_include_pad=true)", 1,
     {{{2, 2, 6, 5}}}},
    {"x: Tensor[(n, 1, 5, 5), f32]", "max_pool(x, kernel=[2, 2], strides=[2, 2], ceil_mode=true)", 1, {{{1, 1, 5, 5}}}},
    /* ceil mode on symbolic extents: the last window hangs past the input at odd / prime extents */
    {"x: Tensor[(n, c, h, w), f32]", "max_pool(x, kernel=[3, 3], strides=[2, 2], ceil_mode=true)", 4,
     {{{1, 2, 7, 6}}, {{2, 1, 3, 4}}, {{1, 1, 13, 8}}, {{0, 2, 5, 11}}}},
    {"x: Tensor[(n, c, h, w), f32]", "avg_pool(x, kernel=[3, 2], strides=[2, 3], padding=[1, 0, 1, 1], ceil_mode=true)", 3,
     {{{1, 2, 7, 5}}, {{1, 1, 2, 1}}, {{2, 1, 11, 13}}}},
    {"x: Tensor[(n, c, h, w), f32]",
     "avg_pool(x, kernel=[3, 3], strides=[2, 2], padding=[1, 1, 1, 1], ceil_mode=true, count_include_pad=true)", 3,
     {{{1, 2, 6, 5}}, {{1, 1, 1, 2}}, {{2, 1, 7, 12}}}},
    {"x: Tensor[(n, c, l), f32]", "avg_pool(x, kernel=[1], strides=[2], padding=[0, 2], ceil_mode=true)", 3,
     {{{1, 2, 5}}, {{1, 1, 1}}, {{2, 1, 8}}}},
    {"x: Tensor[(n, c, l), f32]", "lp_pool(x, kernel=[3], strides=[2], ceil_mode=true)", 2, {{{1, 2, 8}}, {{1, 1, 5}}}},
    {"x: Tensor[(n, c, h, w), f32]", "max_pool_indices(x, kernel=[2, 3], strides=[2, 2], ceil_mode=true)", 2,
     {{{1, 2, 5, 4}}, {{1, 1, 3, 7}}}},
    {"x: Tensor[(n, c, h, w), f32]", "lp_pool(x, kernel=[2, 2], p=3, padding=[0, 1, 1, 0])", 1, {{{1, 2, 5, 4}}}},
    {"x: Tensor[(n, c, l), f32]", "lp_pool(x, kernel=[3], strides=[2])", 1, {{{2, 1, 9}}}},
    {"x: Tensor[(n, c, h, w), f32]", "max_pool_indices(x, kernel=[2, 2], strides=[2, 2])", 2, {{{1, 2, 5, 4}}, {{2, 3, 4, 7}}}},
    {"x: Tensor[(n, c, h, w), f32]", "max_pool_indices(x, kernel=[3, 2], padding=[1, 1, 1, 1], storage_order=1)", 1, {{{1, 2, 5, 4}}}},
};

/* resize with static output extents (scales as constants; axes n, c copied where the scale is 1),
 * every mode, coordinate transformation and nearest mode; resize2d. Shapes with an empty axis
 * give empty results. */
#define RS_CONSTS                                                                                  \
  "const @s23: Tensor[(4,), f64] = [1, 1, 2, 3]\n"                                                 \
  "const @sdown: Tensor[(4,), f64] = [1, 1, 0.5, 0.6]\n"                                           \
  "const @sup: Tensor[(4,), f32] = [1, 1, 1.5, 2.5]\n"                                             \
  "const @snc: Tensor[(4,), f64] = [2, 1, 1.5, 1]\n"                                               \
  "const @s1d: Tensor[(1,), f64] = [2.5]\n"                                                        \
  "const @roi: Tensor[(8,), f64] = [0, 0, 0.4, 0.6, 1, 1, 0.6, 0.8]\n"                             \
  "const @roi1: Tensor[(8,), f64] = [0, 0, -0.2, 0.1, 1, 1, 1.3, 0.7]\n"                             \
  "const @shalf: Tensor[(4,), f32] = [1, 1, 1, 0.5]\n"                                             \
  "const @s3c: Tensor[(4,), f64] = [1, 2, 1.5, 2.5]\n"
static const op_case resize_cases[] = {
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @s23, size=[n, c, 2*h, 3*w], coord=\"asymmetric\", nearest_mode=\"floor\")", 3,
     {{{1, 2, 3, 2}}, {{2, 1, 1, 5}}, {{1, 1, 0, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @s23, size=[n, c, 2*h, 3*w])", 2, {{{1, 2, 3, 2}}, {{1, 1, 7, 1}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), i32]", "resize(x, @sdown, size=[n, c, floordiv(h, 2), floordiv(3*w, 5)], nearest_mode=\"round_prefer_ceil\")", 2,
     {{{1, 2, 5, 7}}, {{1, 1, 4, 10}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @sup, size=[n, c, 3, 5], coord=\"align_corners\", nearest_mode=\"ceil\")", 1,
     {{{1, 2, 2, 2}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @s23, size=[n, c, 2*h, 3*w], mode=\"linear\")", 3,
     {{{1, 2, 3, 2}}, {{1, 1, 1, 1}}, {{2, 1, 0, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @sdown, size=[n, c, floordiv(h, 2), floordiv(3*w, 5)], mode=\"linear\", coord=\"pytorch_half_pixel\")", 2,
     {{{1, 2, 5, 7}}, {{1, 1, 2, 10}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @sup, size=[n, c, 4, 5], mode=\"linear\", coord=\"half_pixel_symmetric\")", 1,
     {{{1, 2, 3, 2}}}, 0, RS_CONSTS},
    /* half_pixel_symmetric halving w = 9 or 7: source positions 1, 3, 5, 7, which the spec's order
     * of operations rounds to 1 + 2^-52 (the interpreter then took its taps one position left of
     * its weights; both sides now sum the coordinate with one rounding, exactly 1) */
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @shalf, size=[n, c, h, floordiv(w, 2)], mode=\"linear\", coord=\"half_pixel_symmetric\")", 2,
     {{{1, 1, 2, 9}}, {{1, 2, 1, 7}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @shalf, size=[n, c, h, floordiv(w, 2)], mode=\"cubic\", coord=\"half_pixel_symmetric\")", 2,
     {{{1, 1, 2, 9}}, {{1, 2, 1, 7}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @shalf, size=[n, c, h, floordiv(w, 2)], coord=\"half_pixel_symmetric\", nearest_mode=\"floor\")", 1, {{{1, 1, 2, 9}}}, 0,
     RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @shalf, size=[n, c, h, floordiv(w, 2)], mode=\"cubic\", coord=\"half_pixel_symmetric\", antialias=true)", 2,
     {{{1, 1, 2, 9}}, {{1, 2, 1, 7}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f64]", "resize(x, @sup, size=[n, c, 4, 5], mode=\"linear\", coord=\"align_corners\")", 1,
     {{{2, 1, 3, 2}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @s23, size=[n, c, 2*h, 3*w], mode=\"cubic\")", 2, {{{1, 2, 3, 2}}, {{1, 1, 5, 1}}}, 0,
     RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @sdown, size=[n, c, floordiv(h, 2), floordiv(3*w, 5)], mode=\"cubic\", cubic_coeff_a=-0.5, exclude_outside=true)", 1,
     {{{1, 2, 7, 11}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @sup, size=[n, c, 4, 5], mode=\"cubic\", coord=\"asymmetric\")", 1,
     {{{1, 1, 3, 2}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @snc, size=[2*n, c, 6, w], mode=\"linear\", coord=\"align_corners\")", 1,
     {{{2, 2, 4, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(l,), f32]", "resize(x, @s1d, size=[5], mode=\"linear\", coord=\"asymmetric\")", 1, {{{2}}}, 0, RS_CONSTS},
    /* three cubic axes (64 taps an element): one pass per axis, f64 between them (sep_chain) */
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @s3c, size=[n, 2*c, 3, 5], mode=\"cubic\")", 2, {{{1, 2, 2, 2}}, {{2, 1, 2, 2}}}, 0,
     RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @s23, @roi, size=[n, c, 2*h, 3*w], mode=\"linear\", coord=\"tf_crop_and_resize\", extrapolation_value=10.0)", 1,
     {{{1, 2, 4, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @s23, @roi1, size=[n, c, 2*h, 3*w], mode=\"nearest\", coord=\"tf_crop_and_resize\", extrapolation_value=-3.5)", 1,
     {{{1, 2, 4, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @s23, @roi1, size=[n, c, 2*h, 3*w], mode=\"cubic\", coord=\"tf_crop_and_resize\")", 1,
     {{{1, 1, 5, 3}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]", "resize2d(x, size=[2*h + 1, w])", 2, {{{1, 2, 3, 4}}, {{1, 1, 0, 3}}}},
    {"x: Tensor[(n, c, h, w), i64]", "resize2d(x, size=[3, 7])", 2, {{{2, 1, 5, 3}}, {{1, 1, 1, 1}}}},
    {"x: Tensor[(n, c, h, w), f32]", "resize2d(x, size=[floordiv(h, 2), 3*w], method=\"linear\")", 3,
     {{{1, 2, 5, 3}}, {{1, 1, 1, 1}}, {{1, 1, 0, 2}}}},
    {"x: Tensor[(n, c, h, w), f32]", "resize(x, @sdown, size=[n, c, floordiv(h, 2), floordiv(3*w, 5)], mode=\"linear\", antialias=true)", 2,
     {{{1, 2, 7, 11}}, {{1, 1, 4, 10}}}, 0, RS_CONSTS},
    {"x: Tensor[(n, c, h, w), f32]",
     "resize(x, @sdown, size=[n, c, floordiv(h, 2), floordiv(3*w, 5)], mode=\"cubic\", coord=\"pytorch_half_pixel\", antialias=true)", 1,
     {{{2, 1, 6, 9}}}, 0, RS_CONSTS},
};

/* resize with run-time scales or sizes (no attribute `size`): the legalized module computes the
 * extents (bound by match_cast before the resize program runs) and the full-rank scales / roi.
 * Scales and roi are given (the fill would make scales negative); sizes come from index_range;
 * axes in and out of order, each policy, nearest / linear / cubic, tf_crop_and_resize. */
static const double rs_up[] = {1, 1, 2, 1.5}, rs_down[] = {1, 1, 0.6, 0.8}, rs_nc[] = {2, 0.5, 1.7, 1};
static const double rs_hw[] = {1.5, 0.7}, rs_wh[] = {2, 1.5}, rs_1d[] = {2.5}, rs_i[] = {1, 1, 0.5, 2.5};
static const double rs_roi_wh[] = {0.1, 0.2, 0.9, 0.7}, rs_roi_all[] = {0, 0, 0.2, -0.1, 1, 1, 0.8, 1.2};
static const op_case resize_rt_cases[] = {
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f32]", "resize(x, s, by=\"scales\")", 3,
     {{{1, 2, 3, 4}, {4}}, {{2, 1, 1, 5}, {4}}, {{1, 1, 0, 3}, {4}}}, 0, NULL, {NULL, rs_up}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f64]", "resize(x, s, by=\"scales\", mode=\"linear\", coord=\"align_corners\")", 2,
     {{{1, 2, 5, 7}, {4}}, {{1, 1, 2, 3}, {4}}}, 0, NULL, {NULL, rs_down}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f32]", "resize(x, s, by=\"scales\", mode=\"linear\", coord=\"pytorch_half_pixel\")", 1,
     {{{2, 3, 3, 2}, {4}}}, 0, NULL, {NULL, rs_nc}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(2,), f32]", "resize(x, s, axes=[2, 3], by=\"scales\", mode=\"cubic\", exclude_outside=true)", 2,
     {{{1, 2, 4, 5}, {2}}, {{2, 1, 1, 3}, {2}}}, 0, NULL, {NULL, rs_hw}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(2,), f64]", "resize(x, s, axes=[-1, 2], by=\"scales\", mode=\"cubic\", coord=\"asymmetric\")", 1,
     {{{1, 2, 3, 4}, {2}}}, 0, NULL, {NULL, rs_wh}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(2,), f32], r: Tensor[(4,), f32]",
     "resize(x, s, r, axes=[3, 2], by=\"scales\", mode=\"linear\", coord=\"tf_crop_and_resize\", extrapolation_value=9.0)", 2,
     {{{1, 2, 4, 3}, {2}, {4}}, {{1, 1, 2, 5}, {2}, {4}}}, 0, NULL, {NULL, rs_wh, rs_roi_wh}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f64], r: Tensor[(8,), f64]",
     "resize(x, s, r, by=\"scales\", coord=\"tf_crop_and_resize\", nearest_mode=\"ceil\")", 1,
     {{{1, 2, 4, 3}, {4}, {8}}}, 0, NULL, {NULL, rs_up, rs_roi_all}},
    {"x: Tensor[(l,), f64], s: Tensor[(1,), f64]", "resize(x, s, by=\"scales\", mode=\"cubic\", coord=\"half_pixel_symmetric\")", 2,
     {{{2}, {1}}, {{7}, {1}}}, 0, NULL, {NULL, rs_1d}},
    {"x: Tensor[(n, c, h, w), i32], s: Tensor[(4,), f32]", "resize(x, s, by=\"scales\", nearest_mode=\"floor\", coord=\"asymmetric\")", 1,
     {{{1, 2, 5, 3}, {4}}}, 0, NULL, {NULL, rs_i}},
    /* every axis cubic at run time (256 taps an element): one pass per axis (sep_chain) */
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f32]", "resize(x, s, by=\"scales\", mode=\"cubic\")", 2,
     {{{1, 2, 3, 4}, {4}}, {{1, 1, 0, 3}, {4}}}, 0, NULL, {NULL, rs_up}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f32]",
     "resize(x, s, by=\"scales\", mode=\"cubic\", coord=\"pytorch_half_pixel\", exclude_outside=true)", 1,
     {{{2, 3, 3, 2}, {4}}}, 0, NULL, {NULL, rs_nc}},
    /* sizes (i64) from index_range 9: (1, 8), (4, 2), (7, 5) for the three shape sets */
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(2,), i64]", "resize(x, z, axes=[2, 3], by=\"sizes\")", 3,
     {{{1, 2, 3, 4}, {2}}, {{2, 1, 5, 1}, {2}}, {{1, 1, 2, 3}, {2}}}, 9},
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(2,), i64]", "resize(x, z, axes=[2, 3], by=\"sizes\", policy=\"not_larger\", mode=\"linear\")", 3,
     {{{1, 2, 3, 4}, {2}}, {{2, 1, 5, 1}, {2}}, {{1, 1, 2, 3}, {2}}}, 9},
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(2,), i64]",
     "resize(x, z, axes=[3, 2], by=\"sizes\", policy=\"not_smaller\", mode=\"cubic\", coord=\"align_corners\")", 2,
     {{{1, 1, 3, 2}, {2}}, {{1, 2, 4, 4}, {2}}}, 9},
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(4,), i64]", "resize(x, z, by=\"sizes\", policy=\"not_larger\")", 1,
     {{{2, 3, 4, 5}, {4}}}, 9},
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(4,), i64]", "resize(x, z, by=\"sizes\", policy=\"not_larger\", mode=\"cubic\")", 1,
     {{{2, 3, 4, 5}, {4}}}, 9},
    /* antialias: one program per resized axis, each with its tap count bound from the scales */
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(4,), f64]", "resize(x, s, by=\"scales\", mode=\"linear\", antialias=true)", 2,
     {{{1, 2, 5, 7}, {4}}, {{1, 1, 2, 3}, {4}}}, 0, NULL, {NULL, rs_down}},
    {"x: Tensor[(n, c, h, w), f32], s: Tensor[(2,), f32]",
     "resize(x, s, axes=[2, 3], by=\"scales\", mode=\"cubic\", antialias=true, exclude_outside=true)", 2,
     {{{1, 2, 4, 5}, {2}}, {{2, 1, 1, 3}, {2}}}, 0, NULL, {NULL, rs_hw}},
    {"x: Tensor[(n, c, h, w), f64], z: Tensor[(2,), i64]",
     "resize(x, z, axes=[2, 3], by=\"sizes\", mode=\"cubic\", coord=\"align_corners\", antialias=true)", 3,
     {{{1, 2, 3, 4}, {2}}, {{2, 1, 5, 1}, {2}}, {{1, 1, 9, 8}, {2}}}, 9},
    {"x: Tensor[(a, b, l), f32], z: Tensor[(3,), i64]", "resize(x, z, by=\"sizes\", mode=\"linear\", coord=\"half_pixel_symmetric\")", 2,
     {{{2, 3, 4}, {3}}, {{1, 1, 6}, {3}}}, 9},
    {"x: Tensor[(n, c, h, w), f32], z: Tensor[(2,), i64], r: Tensor[(4,), f32]",
     "resize(x, z, r, axes=[2, 3], by=\"sizes\", mode=\"linear\", coord=\"tf_crop_and_resize\", extrapolation_value=0.5)", 2,
     {{{1, 2, 4, 3}, {2}, {4}}, {{1, 1, 2, 5}, {2}, {4}}}, 9},
};

LOOM_TEST(legalize, resize_with_runtime_scales_or_sizes) {
  for (size_t i = 0; i < sizeof resize_rt_cases / sizeof resize_rt_cases[0]; i++) run_case(&resize_rt_cases[i]);
}

/* det: batches (including empty ones), 0x0 (det 1), 1x1, pivoting and singular matrices (the
 * integer-valued fill repeats rows: some matrices are singular). */
static const op_case det_cases[] = {
    {"x: Tensor[(b, n, n), f32]", "det(x)", 4, {{{3, 4, 4}}, {{2, 1, 1}}, {{0, 3, 3}}, {{2, 0, 0}}}},
    {"x: Tensor[(n, n), f64]", "det(x)", 3, {{{5, 5}}, {{7, 7}}, {{2, 2}}}},
    {"x: Tensor[(a, b, 3, 3), f32]", "det(x)", 1, {{{2, 3, 3, 3}}}},
    {"x: Tensor[(b, n, m), f32]", "det(x)", 2, {{{2, 3, 3}}, {{1, 5, 5}}}}, /* square only at run time: a guard */
};

/* dft: real and complex input, axis not 0, cut and zero-padded lengths (a scalar parameter),
 * onesided, inverse, the onesided inverse (Hermitian symmetry). */
static const op_case dft_cases[] = {
    {"x: Tensor[(b, n, 1), f32]", "dft(x, axis=1)", 3, {{{2, 7, 1}}, {{1, 1, 1}}, {{0, 4, 1}}}},
    {"x: Tensor[(n, b, 2), f32]", "dft(x, axis=0)", 2, {{{8, 3, 2}}, {{5, 1, 2}}}},
    {"x: Tensor[(b, n, 2), f64]", "dft(x, axis=1, inverse=true)", 1, {{{2, 6, 2}}}},
    {"x: Tensor[(b, n, 1), f32]", "dft(x, axis=1, onesided=true)", 2, {{{2, 7, 1}}, {{1, 8, 1}}}},
    {"x: Tensor[(b, n, 2), f32]", "dft(x, axis=1, length=[n + 3])", 1, {{{2, 5, 2}}}},
    /* a length not provably >= 1: a guard */
    {"x: Tensor[(b, n, 2), f32], l: Tensor[(k,), f32]", "dft(x, axis=1, length=[k - 2])", 3, {{{2, 5, 2}, {3}}, {{1, 4, 2}, {9}}, {{1, 4, 2}, {6}}}},
    {"x: Tensor[(b, n, 2), f32]", "dft(x, axis=-1, length=[4])", 1, {{{2, 9, 2}}}},
    {"x: Tensor[(b, n, 2), f32]", "dft(x, axis=1, inverse=true, onesided=true)", 2, {{{2, 5, 2}}, {{1, 2, 2}}}},
    {"x: Tensor[(b, n, 2), f32]", "dft(x, axis=1, inverse=true, onesided=true, length=[7])", 1, {{{2, 4, 2}}}},
};

LOOM_TEST(legalize, dft) {
  for (size_t i = 0; i < sizeof dft_cases / sizeof dft_cases[0]; i++) run_case(&dft_cases[i]);
}

/* topk with attribute k: a tuple result, legalized as two programs (values, indices) and a
 * tuple. Ties (the fill repeats values) go to the lower index. */
static const op_case topk_cases[] = {
    {"x: Tensor[(n, 7), f32]", "topk(x, k=[3], axis=1)", 3, {{{4, 7}}, {{1, 7}}, {{0, 7}}}},
    {"x: Tensor[(n, 7), f32]", "topk(x, k=[7], axis=-1, largest=false)", 1, {{{3, 7}}}},
    {"x: Tensor[(n, m), i64]", "topk(x, k=[2], axis=0)", 1, {{{5, 3}}}},
    {"x: Tensor[(n, 4, m), u8]", "topk(x, k=[0], axis=1)", 1, {{{2, 4, 3}}}},
    {"x: Tensor[(n,), f64]", "topk(x, k=[4], largest=false)", 1, {{{11}}}},
};

/* Run-time operands whose values set the result's dims: the legalized module binds the
 * dims from data (a dims program or the operand, tensor_to_shape, match_cast) before the
 * program that reads its extents from its result buffer. */
static const op_case runtime_cases[] = {
    {"x: Tensor[(n, 3, 4), f32], a: Tensor[(2,), i64]", "sum(x, a, keepdims=false)", 3,
     {{{2, 3, 4}, {2}}, {{0, 3, 4}, {2}}, {{5, 3, 4}, {2}}}, 3},
    {"x: Tensor[(n, 3, 4), f32], a: Tensor[(1,), i32]", "max(x, a, keepdims=true)", 3,
     {{{2, 3, 4}, {1}}, {{1, 3, 4}, {1}}, {{3, 3, 4}, {1}}}, 3},
    {"x: Tensor[(n, 5), f64], a: Tensor[(2,), i64]", "mean(x, a, keepdims=true)", 2, {{{7, 5}, {2}}, {{1, 5}, {2}}}, 2},
    {"x: Tensor[(n, 5), i32], a: Tensor[(1,), i64]", "prod(x, a)", 2, {{{3, 5}, {1}}, {{4, 5}, {1}}}, 2},
    {"x: Tensor[(n, 2, 3), f32], a: Tensor[(3,), i64]", "min(x, a)", 1, {{{4, 2, 3}, {3}}}, 3},
    {"x: Tensor[(n, 7), f32], k: Tensor[(1,), i64]", "topk(x, k, axis=1)", 3, {{{4, 7}, {1}}, {{1, 7}, {1}}, {{0, 7}, {1}}}, 8},
    {"x: Tensor[(n, m), f32], k: Tensor[(), i64]", "tril(x, k)", 3, {{{4, 5}, {}}, {{3, 3}, {}}, {{6, 2}, {}}}},
    {"x: Tensor[(b, n, m), i32], k: Tensor[(1,), i32]", "triu(x, k)", 2, {{{2, 4, 5}, {1}}, {{1, 3, 3}, {1}}}},
    {"x: Tensor[(n, 4), f32], a: Tensor[(), i64]", "cumsum(x, a)", 2, {{{3, 4}, {}}, {{5, 4}, {}}}, 2},
    {"x: Tensor[(n, 4, 3), i32], a: Tensor[(1,), i32]", "cumprod(x, a, exclusive=true, reverse=true)", 2,
     {{{2, 4, 3}, {1}}, {{1, 4, 3}, {1}}}, 3},
    {"x: Tensor[(n, 7), f64]", "cumsum(x, axis=1, reverse=true)", 2, {{{3, 7}}, {{0, 7}}}},
    {"x: Tensor[(n, 1, 3), f32], a: Tensor[(1,), i64]", "squeeze(x, a)", 1, {{{4, 1, 3}, {1}}}, 2},
    {"x: Tensor[(n, 3), f32], a: Tensor[(2,), i64]", "expand_dims(x, a)", 2, {{{4, 3}, {2}}, {{0, 3}, {2}}}, 4},
    {"x: Tensor[(n, 6), f32], b: Tensor[(2,), i64], e: Tensor[(2,), i32]", "strided_slice(x, b, e)", 2,
     {{{5, 6}, {2}, {2}}, {{7, 6}, {2}, {2}}}},
    {"x: Tensor[(n, 6), i32], b: Tensor[(2,), i64], e: Tensor[(2,), i64], a: Tensor[(2,), i64]", "strided_slice(x, b, e, a)", 1,
     {{{5, 6}, {2}, {2}, {2}}}, 2},
    {"x: Tensor[(n, 3), f32], p: Tensor[(4,), i64]", "pad(x, p)", 2, {{{4, 3}, {4}}, {{0, 3}, {4}}}, 3},
    {"x: Tensor[(n, 3), i64], p: Tensor[(2,), i64], v: Tensor[(), i64], a: Tensor[(1,), i64]", "pad(x, p, v, a)", 1,
     {{{4, 3}, {2}, {}, {1}}}, 2},
    {"s: Tensor[(), i64], l: Tensor[(), i64], d: Tensor[(1,), i64]", "arange(s, l, d)", 2, {{{}, {}, {1}}, {{}, {}, {1}}}, 7},
    {"s: Tensor[(), f32], l: Tensor[(), f32], d: Tensor[(), f32]", "arange(s, l, d)", 1, {{{}, {}, {}}}},
    {"x: Tensor[(n, 4), bool]", "nonzero(x)", 3, {{{3, 4}}, {{1, 4}}, {{0, 4}}}},
    {"x: Tensor[(n,), bool]", "nonzero(x)", 1, {{{11}}}},
    {"x: Tensor[(n,), i32]", "unique(x, sorted=false, indices=true)", 3, {{{11}}, {{1}}, {{0}}}},
    {"x: Tensor[(n, 3), f32]", "unique(x)", 2, {{{4, 3}}, {{2, 3}}}},
    {"x: Tensor[(n, 2), i64]", "unique(x, axis=0, indices=true)", 2, {{{9, 2}}, {{1, 2}}}, 2},
    {"x: Tensor[(2, n, 2), f64]", "unique(x, axis=-2, sorted=false)", 1, {{{2, 5, 2}}}},
    {"b: Tensor[(2, n, 4), f32], s: Tensor[(2, 3, n), f32], m: Tensor[(1,), i64], i: Tensor[(1,), f32], t: Tensor[(1,), f32]",
     "non_max_suppression(b, s, m, i, t)", 2, {{{2, 6, 4}, {2, 3, 6}, {1}, {1}, {1}}, {{2, 0, 4}, {2, 3, 0}, {1}, {1}, {1}}}, 4},
    {"b: Tensor[(1, n, 4), f32], s: Tensor[(1, 2, n), f32], m: Tensor[(), i64], i: Tensor[(), f32], t: Tensor[(1,), f32]",
     "non_max_suppression(b, s, m, i, t, center_point_box=true)", 1, {{{1, 7, 4}, {1, 2, 7}, {}, {}, {1}}}, 5},
};

LOOM_TEST(legalize, runtime_operands_bind_their_dims_first) {
  for (size_t i = 0; i < sizeof runtime_cases / sizeof runtime_cases[0]; i++) run_case(&runtime_cases[i]);
}

LOOM_TEST(legalize, topk) {
  for (size_t i = 0; i < sizeof topk_cases / sizeof topk_cases[0]; i++) run_case(&topk_cases[i]);
}

LOOM_TEST(legalize, det) {
  for (size_t i = 0; i < sizeof det_cases / sizeof det_cases[0]; i++) run_case(&det_cases[i]);
}

/* grid_sample: every mode x padding mode, both align_corners, 1-3 spatial axes; the fill puts
 * grid values in [-2.2, 2.3], so taps fall inside, on and beyond the borders. */
static const op_case grid_cases[] = {
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g)", 3,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}, {{2, 1, 1, 1}, {2, 2, 2, 2}}, {{1, 1, 0, 3}, {1, 2, 2, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, align_corners=true, padding_mode=\"border\")", 2,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}, {{1, 1, 0, 2}, {1, 2, 2, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, padding_mode=\"reflection\")", 1,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, align_corners=true, padding_mode=\"reflection\")", 1,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"nearest\")", 1, {{{1, 2, 3, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"nearest\", padding_mode=\"border\", align_corners=true)", 1,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"nearest\", padding_mode=\"reflection\")", 1,
     {{{1, 2, 3, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"cubic\")", 1, {{{1, 2, 5, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f32], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"cubic\", padding_mode=\"border\", align_corners=true)", 1,
     {{{1, 2, 5, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, h, w), f64], g: Tensor[(n, p, q, 2), f32]", "grid_sample(x, g, mode=\"cubic\", padding_mode=\"reflection\")", 1,
     {{{1, 2, 5, 4}, {1, 5, 3, 2}}}},
    {"x: Tensor[(n, c, l), f32], g: Tensor[(n, p, 1), f32]", "grid_sample(x, g, padding_mode=\"border\")", 1, {{{2, 3, 7}, {2, 5, 1}}}},
    {"x: Tensor[(n, c, a, h, w), f32], g: Tensor[(n, p, q, r, 3), f32]", "grid_sample(x, g, align_corners=true)", 1,
     {{{1, 2, 3, 2, 4}, {1, 2, 3, 2, 3}}}},
};

LOOM_TEST(legalize, grid_sample) {
  for (size_t i = 0; i < sizeof grid_cases / sizeof grid_cases[0]; i++) run_case(&grid_cases[i]);
}

LOOM_TEST(legalize, resize) {
  for (size_t i = 0; i < sizeof resize_cases / sizeof resize_cases[0]; i++) run_case(&resize_cases[i]);
}

LOOM_TEST(legalize, nd_pooling) {
  for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) run_case(&pool_cases[i]);
}

static const op_case attention_cases[] = {
    {"q: Tensor[(b, 4, s, 8), f32], k: Tensor[(b, 2, t, 8), f32], v: Tensor[(b, 2, t, 6), f32]", "attention(q, k, v)", 2,
     {{{2, 4, 3, 8}, {2, 2, 5, 8}, {2, 2, 5, 6}}, {{1, 4, 1, 8}, {1, 2, 1, 8}, {1, 2, 1, 6}}}},
    {"q: Tensor[(b, 2, s, 4), f32], k: Tensor[(b, 2, s, 4), f32], v: Tensor[(b, 2, s, 4), f32]",
     "attention(q, k, v, causal=true, scale=0.25)", 1, {{{2, 2, 5, 4}, {2, 2, 5, 4}, {2, 2, 5, 4}}}},
};

/* attention with a mask (4 inputs) is covered by the BERT and Llama models in test_legalize_models.c. */
LOOM_TEST(legalize, attention) {
  for (size_t i = 0; i < sizeof attention_cases / sizeof attention_cases[0]; i++) run_case(&attention_cases[i]);
}

static const op_case norm_cases[] = {
    {"x: Tensor[(n, 6, h, w), f32], g: Tensor[(6,), f32], b: Tensor[(6,), f32]", "group_norm(x, g, b, num_groups=3, eps=0.001)", 2,
     {{{2, 6, 3, 5}, {6}, {6}}, {{1, 6, 1, 1}, {6}, {6}}}},
    {"x: Tensor[(n, c, l), f32], g: Tensor[(c,), f32], b: Tensor[(c,), f32]", "group_norm(x, g, b, num_groups=1)", 1,
     {{{2, 4, 7}, {4}, {4}}}},
    {"x: Tensor[(n, c), f64], g: Tensor[(c,), f64], b: Tensor[(c,), f64]", "group_norm(x, g, b, num_groups=2)", 1,
     {{{3, 8}, {8}, {8}}}},
};

LOOM_TEST(legalize, group_norm) {
  for (size_t i = 0; i < sizeof norm_cases / sizeof norm_cases[0]; i++) run_case(&norm_cases[i]);
}

/* batch_norm (5 inputs) is covered by the ResNet model in test_legalize_models.c. */
LOOM_TEST(legalize, cnn_ops) {
  for (size_t i = 0; i < sizeof cnn_cases / sizeof cnn_cases[0]; i++) run_case(&cnn_cases[i]);
}

LOOM_TEST(legalize, where_slices_tri_take_arg_cumsum) {
  for (size_t i = 0; i < sizeof more_cases / sizeof more_cases[0]; i++) run_case(&more_cases[i]);
}

LOOM_TEST(legalize, linear_and_shape_ops) {
  for (size_t i = 0; i < sizeof shape_cases / sizeof shape_cases[0]; i++) run_case(&shape_cases[i]);
}

LOOM_TEST(legalize, unary_ops) {
  for (size_t i = 0; i < sizeof unary_cases / sizeof unary_cases[0]; i++) run_case(&unary_cases[i]);
}

LOOM_TEST(legalize, binary_ops_with_broadcasting) {
  for (size_t i = 0; i < sizeof binary_cases / sizeof binary_cases[0]; i++) run_case(&binary_cases[i]);
}

LOOM_TEST(legalize, reductions_nn_and_matmul) {
  for (size_t i = 0; i < sizeof reduce_cases / sizeof reduce_cases[0]; i++) run_case(&reduce_cases[i]);
}

/* Parses `text` and legalizes it; the caller destroys diags and the module. */
static loom_graph_module *parse_and_legalize(const char *text, loom_diag_list *diags, size_t *done, size_t *kept) {
  loom_source src = {"case.loom", text, strlen(text)};
  loom_diag_list_init(diags, NULL);
  loom_graph_module *m = NULL;
  loom_status s = loom_graph_parse(&src, diags, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_null(loom_graph_legalize(m, diags, done, kept));
  return m;
}

/* float -> int casts saturate at the target's range (NaN -> 0) in the legalized program as in
 * the graph reference. */
LOOM_TEST(legalize, float_to_int_casts_saturate_like_the_reference) {
  static const char *const dts[] = {"i8", "u8", "i16", "u32", "i64", "u64"};
  static const float xs[] = {300.0f, -300.0f, 1e10f, -1e10f, NAN, 2.7f, -2.7f, 70000.0f, -1e30f, 1e30f};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    char text[256];
    snprintf(text, sizeof text, "fn @main(x: Tensor[(n,), f32]) -> Object {\n  out = cast(x, dtype=%s)\n  return out\n}\n", dts[d]);
    loom_source src = {"case.loom", text, strlen(text)};
    loom_diag_list diags;
    loom_diag_list_init(&diags, NULL);
    loom_graph_module *m = NULL;
    cr_assert_null(loom_graph_parse(&src, &diags, &m));
    int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
    loom_graph_value in, ref, got;
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 1, &n, &in));
    memcpy(in.t.data, xs, sizeof xs);
    cr_assert_null(loom_graph_eval(m, "main", 1, &in, NULL, &ref));
    size_t done, kept;
    cr_assert_null(loom_graph_legalize(m, &diags, &done, &kept));
    cr_assert_eq(done, 1);
    cr_assert_null(loom_graph_eval(m, "main", 1, &in, NULL, &got));
    for (size_t i = 0; i < (size_t)n; i++)
      cr_assert_eq(loom_graph_tensor_get_i64(&got.t, i), loom_graph_tensor_get_i64(&ref.t, i), "%s of %g: program %lld, reference %lld",
                   dts[d], (double)xs[i], (long long)loom_graph_tensor_get_i64(&got.t, i), (long long)loom_graph_tensor_get_i64(&ref.t, i));
    loom_graph_value_free(&in);
    loom_graph_value_free(&ref);
    loom_graph_value_free(&got);
    loom_diag_list_destroy(&diags);
    loom_graph_module_destroy(m);
  }
}

/* Runs the legalized one-op module `text` on inputs of the given shapes (filled with indices in
 * [0, 3)) and expects the guard naming `why` to fail: a clean error before the program reads
 * anything (the test build runs under ASan). */
static void expect_guard_fails(const char *text, size_t np, const int64_t shapes[][3], const int *ranks, const loom_dtype *dts,
                               const char *why) {
  loom_diag_list diags;
  size_t done, kept;
  loom_graph_module *m = parse_and_legalize(text, &diags, &done, &kept);
  cr_assert_eq(kept, 0, "%s: kept as an operator: %s", text, diags.items.len ? diags.items.data[0].message : "");
  loom_graph_value in[4], got;
  for (size_t p = 0; p < np; p++) {
    cr_assert_null(loom_graph_value_tensor(dts[p], ranks[p], shapes[p], &in[p]));
    fill(&in[p].t, (int)p, 3);
  }
  loom_status s = loom_graph_eval(m, "main", np, in, NULL, &got);
  cr_assert_not_null(s, "%s: ran where the guard is false", text);
  cr_assert(strstr(loom_status_message(s), "guard failed") && strstr(loom_status_message(s), why), "%s", loom_status_message(s));
  loom_status_free(s);
  for (size_t p = 0; p < np; p++) loom_graph_value_free(&in[p]);
  loom_diag_list_destroy(&diags);
  loom_graph_module_destroy(m);
}

/* scatter_elements / gather_elements index the other axes with loop variables: where the
 * indices' extent there is not provably within the data's, the program is guarded (the
 * differential cases above hold it); where the fact is false, the guard is the error. */
LOOM_TEST(legalize, elements_ops_guard_unprovable_index_extents) {
  const char *text =
      "fn @main(x: Tensor[(n, 5), f32], i: Tensor[(k, m), i64], u: Tensor[(k, m), f32]) -> Object {\n  dataflow {\n"
      "    y = scatter_elements(x, i, u, axis=0)\n    z = gather_elements(y, i, axis=0)\n    output z\n  }\n  return z\n}\n";
  loom_diag_list diags;
  size_t done, kept;
  loom_graph_module *m = parse_and_legalize(text, &diags, &done, &kept);
  cr_assert_eq(done, 2);
  cr_assert_eq(kept, 0);
  const loom_graph_binding *y = loom_graph_module_find_func(m, "main")->body->blocks[0]->bindings[0];
  cr_assert_eq(y->nguards, 1, "one guard: m <= 5 (axis 1)");
  cr_assert(strstr(y->guard_why[0], "scatter_elements: indices (operand 1 'i') axis 1 (m) must not exceed data (operand 0 'x') axis 1 (5)"),
            "%s", y->guard_why[0]);
  loom_diag_list_destroy(&diags);
  loom_graph_module_destroy(m);
  static const int64_t sh[3][3] = {{4, 5}, {3, 7}, {3, 7}};
  static const int rk[3] = {2, 2, 2};
  static const loom_dtype dt[3] = {LOOM_DTYPE_F32, LOOM_DTYPE_I64, LOOM_DTYPE_F32};
  expect_guard_fails(text, 3, sh, rk, dt, "scatter_elements: indices (operand 1 'i') axis 1 (m) must not exceed data (operand 0 'x') axis 1 (5)");
  const char *g = "fn @main(x: Tensor[(n, 5), f32], i: Tensor[(k, 2), i64]) -> Object {\n  y = gather_elements(x, i, axis=1)\n  return y\n}\n";
  static const int64_t sg[2][3] = {{3, 5}, {4, 2}};
  expect_guard_fails(g, 2, sg, rk, dt, "gather_elements: indices (operand 1 'i') axis 0 (k) must not exceed data (operand 0 'x') axis 0 (n)");
}

/* det of matrices not provably square and dft with a length not provably >= 1: guarded, the
 * guard fails cleanly where the fact is false. */
LOOM_TEST(legalize, det_and_dft_guard_what_they_cannot_prove) {
  static const int rk[2] = {3, 1};
  static const loom_dtype dt[2] = {LOOM_DTYPE_F32, LOOM_DTYPE_F32};
  static const int64_t sd[1][3] = {{2, 3, 4}};
  expect_guard_fails("fn @main(x: Tensor[(b, n, m), f32]) -> Object {\n  y = det(x)\n  return y\n}\n", 1, sd, rk, dt,
                     "det: operand 0 axis 1 is n, operand 0 axis 2 is m: must be equal");
  static const int64_t sf[2][3] = {{2, 5, 2}, {2}};
  expect_guard_fails("fn @main(x: Tensor[(b, n, 2), f32], l: Tensor[(k,), f32]) -> Object {\n  y = dft(x, axis=1, length=[k - 2])\n  return y\n}\n",
                     2, sf, rk, dt, "dft: length (k - 2) must be >= 1");
}

/* Invalid run-time values (a scale not > 0, a negative size) make the dims program's vector
 * hold -1, which binding the dims refuses (tensor_to_shape in the interpreter, MATCHV in the VM):
 * an error, as the reference's, never a crash. */
LOOM_TEST(legalize, resize_runtime_values_the_reference_refuses_are_errors) {
  static const char *const calls[] = {"resize(x, p, by=\"scales\")", "resize(x, p, axes=[2, 3], by=\"sizes\")"};
  static const char *const types[] = {"Tensor[(4,), f32]", "Tensor[(2,), i64]"};
  static const double bad[][4] = {{1, 1, -2, 1}, {1, 1, 2, NAN}, {1, 1, 0, 1}, {3, -1}, {-4, 2}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int f = i < 3 ? 0 : 1;
    char text[512];
    snprintf(text, sizeof text, "fn @main(x: Tensor[(n, c, h, w), f32], p: %s) -> Object {\n  dataflow {\n    y = %s\n    output y\n  }\n  return y\n}\n",
             types[f], calls[f]);
    loom_diag_list diags;
    size_t done, kept;
    loom_graph_module *m = parse_and_legalize(text, &diags, &done, &kept);
    cr_assert_eq(done, 1, "%s", text);
    cr_assert_eq(kept, 0);
    loom_graph_value in[2];
    int64_t xs[4] = {1, 2, 3, 4}, ps[1] = {f ? 2 : 4};
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 4, xs, &in[0]));
    cr_assert_null(loom_graph_value_tensor(f ? LOOM_DTYPE_I64 : LOOM_DTYPE_F32, 1, ps, &in[1]));
    for (size_t k = 0; k < in[0].t.numel; k++) loom_graph_tensor_set_f64(&in[0].t, k, (double)k);
    for (size_t k = 0; k < in[1].t.numel; k++) loom_graph_tensor_set_f64(&in[1].t, k, bad[i][k]);
    loom_graph_value got;
    loom_status s = loom_graph_eval(m, "main", 2, in, NULL, &got);
    cr_assert_not_null(s, "%s: values %zu were accepted", calls[f], i);
    cr_assert(strstr(loom_status_message(s), "is -1") != NULL, "%s", loom_status_message(s)); /* tensor_to_shape refuses it */
    loom_status_free(s);
    loom_graph_value_free(&in[0]);
    loom_graph_value_free(&in[1]);
    loom_diag_list_destroy(&diags);
    loom_graph_module_destroy(m);
  }
}

/* The forms resize refuses stay operators, with the reason in the note. */
LOOM_TEST(legalize, resize_forms_without_a_program_are_kept_with_a_reason) {
  const char *text =
      "const @s: Tensor[(4,), f64] = [1, 1, 0.5, 0.5]\n"
      "const @r: Tensor[(8,), f64] = [0, 0, 0, 0, 1, 1, 1, 1]\n"
      "fn @main(x: Tensor[(1, 1, 4, 4), f32], i: Tensor[(1, 1, 4, 4), i32], t: Tensor[(4,), f32]) -> Object {\n  dataflow {\n"
      "    a = resize(i, @s, size=[1, 1, 2, 2], mode=\"linear\", antialias=true)\n"
      "    b = resize(i, t, by=\"scales\", mode=\"cubic\")\n"
      "    c = resize(x, @s, @r, size=[1, 1, 2, 2])\n"
      "    y = (a, b, c)\n    output y\n  }\n  return y\n}\n";
  loom_diag_list diags;
  size_t done, kept;
  loom_graph_module *m = parse_and_legalize(text, &diags, &done, &kept);
  cr_assert_eq(done, 0);
  cr_assert_eq(kept, 3);
  cr_assert_eq(loom_graph_module_num_tps(m), 0, "the run-time form adds no program before refusing");
  static const char *const why[] = {"for interpolation of integer data", "for interpolation of integer data", "with a roi operand outside"};
  for (int i = 0; i < 3; i++)
    cr_assert(strstr(diags.items.data[i].message, why[i]) != NULL, "%s", diags.items.data[i].message);
  loom_diag_list_destroy(&diags);
  loom_graph_module_destroy(m);
}

LOOM_TEST(legalize, programs_are_shared_and_unsupported_ops_are_kept) {
  const char *text =
      "const @s: Tensor[(4,), f64] = [1, 1, 0.5, 0.5]\n"
      "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(n, 4), f32], i: Tensor[(1, 1, 4, 4), i32]) -> Object {\n  dataflow {\n"
      "    a = exp(x)\n    b = exp(y)\n    c = add(a, b)\n"
      "    d = resize(i, @s, size=[1, 1, 2, 2], mode=\"linear\", antialias=true)\n    e = (c, d)\n    output e\n  }\n  return e\n}\n";
  loom_diag_list diags;
  size_t done, kept;
  loom_graph_module *m = parse_and_legalize(text, &diags, &done, &kept);
  cr_assert_eq(done, 3);
  cr_assert_eq(kept, 1, "antialiased linear resize of integer data has no tensor program");
  cr_assert_eq(loom_graph_module_num_tps(m), 2, "both exp calls share one program");
  cr_assert_eq(diags.items.len, 1);
  cr_assert(strstr(diags.items.data[0].message, "for interpolation of integer data") != NULL, "%s", diags.items.data[0].message);
  /* The legalized module prints and verifies. */
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  cr_assert(strstr(loom_strbuf_cstr(&sb), "call_tp(@exp_f32_f32_r2, (x,)") != NULL, "%s", loom_strbuf_cstr(&sb));
  cr_assert(strstr(loom_strbuf_cstr(&sb), "prim @exp_f32_f32_r2(") != NULL);
  loom_diag_list verify_diags;
  loom_diag_list_init(&verify_diags, NULL);
  loom_status s = loom_graph_verify(m, &verify_diags);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&verify_diags);
  loom_strbuf_free(&sb);
  loom_diag_list_destroy(&diags);
  loom_graph_module_destroy(m);
}

/* ---- program keys (loom_legal_program) ---- */

/* A parameter struct whose field `value` the readable name below does not encode. */
typedef struct key_test_params {
  double value;
  loom_dtype t;
  int32_t rank;
} key_test_params;
LOOM_TP_GEN_PARAMS(key_test_params, 8 + 2 * 4);

static int key_test_generated; /* generator calls */

static loom_status gen_key_test(loom_graph_module *m, const char *name, const void *params, loom_tp_func **tp) {
  const key_test_params *p = params;
  char text[64];
  snprintf(text, sizeof text, "%.17g", p->value);
  key_test_generated++;
  return loom_tp_gen_fill(loom_graph_module_arena(m), loom_graph_module_sym(m), name, p->t, p->rank, text, tp);
}

/* The value a fill program stores (run on a (1, 1) result). */
static float run_fill(loom_graph_module *m, const loom_tp_func *tp) {
  float y = 0;
  int64_t shape[2] = {1, 1};
  loom_tp_arg arg = {&y, shape, 0};
  cr_assert_null(loom_tp_interpret(loom_graph_module_sym(m), tp, &arg, 1));
  return y;
}

/* Two parameter structs that differ only in a field the readable name does not encode make two
 * programs (the second named name_2, so the module's names stay unique); equal structs share
 * one, without calling the generator again. */
LOOM_TEST(legalize, program_keys_separate_fields_the_name_leaves_out) {
  loom_graph_module *m;
  cr_assert_null(loom_graph_module_create(NULL, &m));
  key_test_generated = 0;
  key_test_params a = {.value = 1.5, .t = LOOM_DTYPE_F32, .rank = 2}, b = {.value = 2.5, .t = LOOM_DTYPE_F32, .rank = 2};
  loom_tp_func *pa, *pb, *pa2;
  cr_assert_null(LOOM_LEGAL_PROGRAM(m, "fill_same", gen_key_test, a, &pa));
  cr_assert_null(LOOM_LEGAL_PROGRAM(m, "fill_same", gen_key_test, b, &pb));
  key_test_params a2 = {.value = 1.5, .t = LOOM_DTYPE_F32, .rank = 2};
  cr_assert_null(LOOM_LEGAL_PROGRAM(m, "fill_same", gen_key_test, a2, &pa2));
  cr_assert_neq(pa, pb, "different parameters share a program");
  cr_assert_eq(pa, pa2, "equal parameters made a second program");
  cr_assert_eq(key_test_generated, 2);
  cr_assert_eq(loom_graph_module_num_tps(m), 2);
  cr_assert_str_eq(loom_tp_func_name(pa), "fill_same");
  cr_assert_str_eq(loom_tp_func_name(pb), "fill_same_2");
  cr_assert_eq(run_fill(m, pa), 1.5f);
  cr_assert_eq(run_fill(m, pb), 2.5f);
  /* a third value under the same name: the next free suffix */
  key_test_params c = {.value = 3.5, .t = LOOM_DTYPE_F32, .rank = 2};
  loom_tp_func *pc;
  cr_assert_null(LOOM_LEGAL_PROGRAM(m, "fill_same", gen_key_test, c, &pc));
  cr_assert_str_eq(loom_tp_func_name(pc), "fill_same_3");
  cr_assert_eq(run_fill(m, pc), 3.5f);
  loom_graph_module_destroy(m);
}

/* A concat of 64 inputs (densenet joins up to ~50): one program with a buffer and an extent
 * per input, against the reference at n = 0, 1 and 7, along the leading and an inner axis. */
LOOM_TEST(legalize, concat_of_64_inputs) {
  enum { N = 64 };
  for (int axis = 0; axis < 2; axis++) {
    char text[8192] = "fn @main(";
    for (int i = 0; i < N; i++)
      if (axis) snprintf(text + strlen(text), sizeof text - strlen(text), "%sx%d: Tensor[(n, %d), f32]", i ? ", " : "", i, i % 3 + 1);
      else snprintf(text + strlen(text), sizeof text - strlen(text), "%sx%d: Tensor[(e%d, 2), f32]", i ? ", " : "", i, i);
    snprintf(text + strlen(text), sizeof text - strlen(text), ") -> Object {\n  dataflow {\n    out = concat(");
    for (int i = 0; i < N; i++) snprintf(text + strlen(text), sizeof text - strlen(text), "x%d, ", i);
    snprintf(text + strlen(text), sizeof text - strlen(text), "axis=%d)\n    output out\n  }\n  return out\n}\n", axis);
    loom_diag_list diags;
    loom_graph_module *m = parse_case(text, &diags);
    loom_status s;
    static const int64_t rows[] = {0, 1, 7};
    loom_graph_value in[3][N], ref[3];
    for (int k = 0; k < 3; k++) {
      for (int i = 0; i < N; i++) {
        int64_t sh[2] = {axis ? rows[k] : (i + k) % 4, axis ? i % 3 + 1 : 2}; /* axis 0: some inputs empty */
        cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 2, sh, &in[k][i]));
        fill(&in[k][i].t, k * N + i, 0);
      }
      s = loom_graph_eval(m, "main", N, in[k], NULL, &ref[k]);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
    }
    size_t done = 0, kept = 0;
    s = loom_graph_legalize(m, &diags, &done, &kept);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_eq(done, 1, "the concat is one program (%zu kept)", kept);
    op_case c = {.call = "concat of 64"};
    for (int k = 0; k < 3; k++) {
      loom_graph_value got;
      s = loom_graph_eval(m, "main", N, in[k], NULL, &got);
      cr_assert_null(s, "%s", loom_status_text(s, 0));
      expect_same(&c, k, &ref[k], &got, "concat of 64");
      loom_graph_value_free(&got);
      loom_graph_value_free(&ref[k]);
      for (int i = 0; i < N; i++) loom_graph_value_free(&in[k][i]);
    }
    loom_diag_list_destroy(&diags);
    loom_graph_module_destroy(m);
  }
}

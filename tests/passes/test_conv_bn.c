/* test_conv_bn.c — a batch normalization after a convolution goes into the convolution's constants
 * (graph/pass_simplify_bn.c, part of simplify, which computes the new weight and bias): conv2d with
 * and without a bias, a depthwise one, conv1d and the N-d conv become one convolution each, the
 * module computing the same before and after (the interpreter at 4 shape sets, sizes from 1 up);
 * the forms that must stay do: a convolution read by something else too, parameters or a weight
 * that are not constants, a transposed convolution. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* const @<name>: Tensor[(dims), t] with element i = base + step * ((i * 7) % 11) (varied signs
 * and sizes; base > 0 and step >= 0 keep a variance positive). */
static void tensor(loom_strbuf *sb, const char *name, const char *t, const int *d, int n, double base, double step) {
  int count = 1;
  loom_strbuf_printf(sb, "const @%s: Tensor[(", name);
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(sb, "%s%d", i ? ", " : "", d[i]);
    count *= d[i];
  }
  loom_strbuf_printf(sb, "%s), %s] = [", n == 1 ? "," : "", t);
  for (int i = 0; i < count; i++) loom_strbuf_printf(sb, "%s%.4f", i ? ", " : "", base + step * ((i * 7) % 11));
  loom_strbuf_printf(sb, "]\n");
}

/* The four parameters of a normalization of o channels: @<p>g, @<p>b, @<p>m, @<p>v. */
static void bn_params(loom_strbuf *sb, const char *p, int o) {
  char name[32];
  const int d[1] = {o};
  snprintf(name, sizeof name, "%sg", p);
  tensor(sb, name, "f32", d, 1, -0.9, 0.3);
  snprintf(name, sizeof name, "%sb", p);
  tensor(sb, name, "f32", d, 1, -0.5, 0.1);
  snprintf(name, sizeof name, "%sm", p);
  tensor(sb, name, "f32", d, 1, -0.4, 0.15);
  snprintf(name, sizeof name, "%sv", p);
  tensor(sb, name, "f32", d, 1, 0.05, 0.4);
}

static size_t count(const char *s, const char *what) {
  size_t n = 0;
  for (const char *q = strstr(s, what); q; q = strstr(q + 1, what)) n++;
  return n;
}

LOOM_TEST(conv_bn, folds_the_normalization_into_the_convolution) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const int w3[4] = {6, 3, 3, 3}, w1[4] = {4, 6, 1, 1}, b4[1] = {4}, wd[4] = {6, 1, 3, 3}, wc[3] = {5, 4, 3}, b5[1] = {5};
  const int wn[5] = {2, 4, 1, 2, 2};
  tensor(&sb, "w3", "f32", w3, 4, -0.35, 0.07);
  tensor(&sb, "w1", "f32", w1, 4, -0.3, 0.06);
  tensor(&sb, "b1", "f32", b4, 1, -0.2, 0.05);
  tensor(&sb, "wd", "f32", wd, 4, -0.25, 0.05);
  tensor(&sb, "wc", "f32", wc, 3, -0.2, 0.04);
  tensor(&sb, "bc", "f32", b5, 1, 0.1, 0.02);
  tensor(&sb, "wn", "f32", wn, 5, -0.3, 0.06);
  bn_params(&sb, "p", 6);
  bn_params(&sb, "q", 4);
  bn_params(&sb, "r", 6);
  bn_params(&sb, "s", 5);
  bn_params(&sb, "t", 2);
  loom_strbuf_printf(&sb,
                     "fn @main(x: Tensor[(n, 3, h, w), f32], z: Tensor[(n, 4, l), f32], v: Tensor[(n, 4, d, h, w), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    c1 = conv2d(x, @w3, strides=[2, 2], padding=[1, 1, 1, 1])\n"
                     "    y1 = batch_norm(c1, @pg, @pb, @pm, @pv, eps=0.001)\n"
                     "    a1 = clip(y1, min=0.0, max=6.0)\n"
                     "    c2 = conv2d(a1, @wd, groups=6, padding=[1, 1, 1, 1])\n"
                     "    y2 = batch_norm(c2, @rg, @rb, @rm, @rv)\n"
                     "    c3 = conv2d(y2, @w1, @b1)\n"
                     "    y3 = batch_norm(c3, @qg, @qb, @qm, @qv, eps=0.00001)\n"
                     "    c4 = conv1d(z, @wc, @bc, padding=[1, 1])\n"
                     "    y4 = batch_norm(c4, @sg, @sb, @sm, @sv)\n"
                     "    c5 = conv(v, @wn, padding=[0, 1, 0, 0, 1, 0])\n"
                     "    y5 = batch_norm(c5, @tg, @tb, @tm, @tv)\n"
                     "    out = (y3, y4, y5)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&sb));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 21, NULL, &c));
  cr_assert_eq(loom_pipeline_check_count(c), 4);
  size_t changed = 0;
  cr_assert_null(loom_graph_simplify(m, &changed));
  cr_assert_null(loom_pipeline_check_after(c, "simplify"));
  cr_assert_null(loom_graph_fold(m, NULL));
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  char *fn = pt_checked_main(c, "fold", m);
  cr_assert_eq(count(fn, "batch_norm("), 0, "%s", fn);
  cr_assert_eq(count(fn, "conv2d("), 3, "%s", fn);
  cr_assert_eq(count(fn, "conv1d("), 1, "%s", fn);
  cr_assert_eq(count(fn, "= conv("), 1, "%s", fn);
  /* each convolution reads its folded weight and bias, computed once (no sqrt left at run time) */
  cr_assert_not_null(strstr(fn, "conv2d(x, @main_y1_w, @main_y1_b, "), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(a1, @main_y2_w, @main_y2_b, groups=6"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(y2, @main_y3_w, @main_y3_b"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv1d(z, @main_y4_w, @main_y4_b"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv(v, @main_y5_w, @main_y5_b"), "%s", fn);
  cr_assert_eq(count(fn, "sqrt("), 0, "%s", fn);
  free(fn);
  loom_graph_module_destroy(m);
  loom_strbuf_free(&sb);
}

LOOM_TEST(conv_bn, leaves_what_it_cannot_fold) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const int w1[4] = {4, 3, 1, 1};
  tensor(&sb, "w1", "f32", w1, 4, -0.3, 0.06);
  const int wt[4] = {3, 4, 1, 1};
  tensor(&sb, "wt", "f32", wt, 4, -0.3, 0.06);
  bn_params(&sb, "q", 4);
  loom_strbuf_printf(&sb,
                     "fn @main(x: Tensor[(n, 3, h, w), f32], g: Tensor[(4,), f32], wv: Tensor[(4, 3, 1, 1), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    c1 = conv2d(x, @w1)\n"
                     "    y1 = batch_norm(c1, @qg, @qb, @qm, @qv)\n"     /* c1 is read twice: stays */
                     "    c2 = conv2d(x, @w1)\n"
                     "    y2 = batch_norm(c2, g, @qb, @qm, @qv)\n"       /* gamma a parameter */
                     "    c3 = conv_transpose(x, @wt)\n"
                     "    y3 = batch_norm(c3, @qg, @qb, @qm, @qv)\n"     /* not a convolution's weight layout */
                     "    c4 = conv2d(x, wv)\n"
                     "    y4 = batch_norm(c4, @qg, @qb, @qm, @qv)\n"     /* the weight a parameter */
                     "    out = (y1, c1, y2, y3, y4)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&sb));
  size_t changed = 0;
  cr_assert_null(loom_graph_simplify(m, &changed));
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  loom_strbuf out;
  loom_strbuf_init(&out, NULL);
  loom_graph_print_func(m, loom_graph_module_find_func(m, "main"), &out);
  const char *fn = loom_strbuf_cstr(&out);
  cr_assert_eq(changed, 0, "%s", fn);
  cr_assert_eq(count(fn, "batch_norm("), 4, "%s", fn);
  cr_assert_eq(count(fn, "conv2d("), 3, "%s", fn);
  loom_strbuf_free(&out);
  loom_graph_module_destroy(m);
  loom_strbuf_free(&sb);
}

/* test_pack_conv.c — the pack pass on convolution weights (graph/pass_pack.c): a constant f32
 * weight whose output channels per group are a multiple of 8 becomes the blocked constant of
 * `packed_w=8`, its values W[q*8 + b, c, t..] at [q, c, t.., b], and the module computes the same
 * before and after (the interpreter reads the packed form); the forms it leaves alone stay as they
 * were. Inference of the packed form refuses what does not fit it, naming the operand and axis. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* const @<name>: Tensor[(o, c, k..), f32] with W[i] = i + 0.25 (flat index i). */
static void weight(loom_strbuf *sb, const char *name, int o, int c, const int *k, int n) {
  int count = o * c;
  loom_strbuf_printf(sb, "const @%s: Tensor[(%d, %d", name, o, c);
  for (int i = 0; i < n; i++) {
    loom_strbuf_printf(sb, ", %d", k[i]);
    count *= k[i];
  }
  loom_strbuf_printf(sb, "), f32] = [");
  for (int i = 0; i < count; i++) loom_strbuf_printf(sb, "%s%d.25", i ? ", " : "", i);
  loom_strbuf_printf(sb, "]\n");
}

LOOM_TEST(pack_conv, lays_conv_weights_out_in_blocks_of_8) {
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  static const int k33[2] = {3, 3}, k11[2] = {1, 1}, k5[1] = {5}, k3[1] = {3};
  weight(&in, "w", 16, 3, k33, 2);  /* packed */
  weight(&in, "u", 8, 3, k11, 2);   /* 1 x 1, stride 2: packed */
  weight(&in, "v", 12, 3, k33, 2);  /* 12 output channels: left */
  weight(&in, "g", 24, 1, k33, 2);  /* groups 3 of 8 output channels: packed */
  weight(&in, "h", 12, 1, k33, 2);  /* groups 3 of 4: left */
  weight(&in, "d", 8, 2, k5, 1);    /* conv1d: packed */
  weight(&in, "e", 8, 2, k3, 1);    /* conv1d, a run-time weight beside it: left */
  loom_strbuf_printf(&in, "const @bias: Tensor[(16,), f32] = [");
  for (int i = 0; i < 16; i++) loom_strbuf_printf(&in, "%s%d.5", i ? ", " : "", i - 8);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(x: Tensor[(n, 3, h, v), f32], s: Tensor[(n, 2, l), f32], r: Tensor[(8, 2, 3), f32]) -> Object {\n"
                          "  dataflow {\n"
                          "    a = conv2d(x, @w, @bias, padding=[1, 1, 1, 1])\n"
                          "    b = conv2d(x, @u, strides=[2, 2])\n"
                          "    c = conv2d(x, @v, padding=[1, 1, 1, 1])\n"
                          "    g = conv2d(x, @g, padding=[1, 1, 1, 1], groups=3)\n"
                          "    h = conv2d(x, @h, padding=[1, 1, 1, 1], groups=3)\n"
                          "    d = conv1d(s, @d, padding=[2, 2])\n"
                          "    e = conv1d(s, r)\n"
                          "    out = (a, b, c, g, h, d, e)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n");
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 3, 7, NULL, &c));
  size_t n = 0;
  cr_assert_null(loom_graph_pack_weights(m, 32, &n));
  cr_assert_eq(n, 4);
  cr_assert_null(loom_graph_dce(m, NULL));
  char *fn = pt_checked_main(c, "pack", m);
  cr_assert_not_null(strstr(fn, "conv2d(x, @main_a_packed, @bias, padding=[1, 1, 1, 1], packed_w=8)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(x, @main_b_packed, strides=[2, 2], packed_w=8)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(x, @v, padding=[1, 1, 1, 1])"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(x, @main_g_packed, padding=[1, 1, 1, 1], groups=3, packed_w=8)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv2d(x, @h, padding=[1, 1, 1, 1], groups=3)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv1d(s, @main_d_packed, padding=[2, 2], packed_w=8)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "conv1d(s, r)"), "%s", fn);
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
    const loom_graph_const *k = loom_graph_module_const_at(m, i);
    cr_assert(strcmp(k->name, "w") && strcmp(k->name, "u") && strcmp(k->name, "d") && strcmp(k->name, "g"),
              "the packed weight @%s was not dropped", k->name);
    if (!strcmp(k->name, "main_g_packed")) { /* (3, 1, 3, 3, 8): a block per group */
      const float *p = k->expr->u.cnst.data;
      for (int o = 0; o < 24; o++)
        for (int r = 0; r < 9; r++) cr_assert_eq(p[((o / 8) * 9 + r) * 8 + o % 8], (float)(o * 9 + r) + 0.25f, "g: o %d, r %d", o, r);
    }
    if (strcmp(k->name, "main_a_packed")) continue;
    const loom_sinfo *si = k->expr->sinfo;
    int64_t d[5];
    cr_assert_eq(si->ndim, 5);
    for (int j = 0; j < 5; j++) cr_assert(loom_sym_is_const(si->dims[j], &d[j]));
    cr_assert(d[0] == 2 && d[1] == 3 && d[2] == 3 && d[3] == 3 && d[4] == 8, "(%lld, %lld, %lld, %lld, %lld)", (long long)d[0],
              (long long)d[1], (long long)d[2], (long long)d[3], (long long)d[4]);
    const float *p = k->expr->u.cnst.data;
    for (int o = 0; o < 16; o++)
      for (int r = 0; r < 27; r++) cr_assert_eq(p[((o / 8) * 27 + r) * 8 + o % 8], (float)(o * 27 + r) + 0.25f, "o %d, r %d", o, r);
  }
  free(fn);
  loom_strbuf_free(&in);
  loom_graph_module_destroy(m);
}

/* The packed form written by hand: each misfit named. */
LOOM_TEST(pack_conv, packed_form_errors_name_the_operand) {
  static const struct {
    const char *call, *want;
  } cases[] = {
      {"conv2d(x, w5, packed_w=8)", "operand 1 must have rank 5 (O/8, C, kernel, 8: packed_w), got 4"},
      {"conv2d(x, w, packed_w=4)", "operand 1 axis 4 is 8, must be packed_w (4)"},
      {"conv2d(x, w, packed_w=-1)", "attribute 'packed_w' is -1, must be >= 0"},
      {"conv2d(x, w1, packed_w=8, groups=3)", "operand 1 axis 0 is 2, not a multiple of groups 3"},
      {"conv2d(x, wq, packed_w=8, groups=3)", "operand 1 axis 0 is q, not a provable multiple of groups 3"},
      {"conv2d(x, w, b5, packed_w=8)", "operand 2 (bias) has 5 channels, the packed weight 16"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[1024];
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[(n, 3, h, v), f32], w: Tensor[(2, 3, 3, 3, 8), f32], w5: Tensor[(16, 3, 3, 3), f32],\n"
             "         b5: Tensor[(5,), f32], w1: Tensor[(2, 1, 3, 3, 8), f32], wq: Tensor[(q, 1, 3, 3, 8), f32])\n"
             "         -> Tensor[(n, 16, h - 2, v - 2), f32] {\n"
             "  dataflow {\n    y = %s\n    output y\n  }\n  return y\n}\n",
             cases[i].call);
    loom_graph_module *m = NULL;
    loom_status s = pt_parse_text(text, &m);
    cr_assert_not_null(s, "case %zu was accepted", i);
    const char *msg = loom_status_text(s, 0);
    cr_assert_not_null(strstr(msg, cases[i].want), "case %zu: %s", i, msg);
    loom_status_free(s);
    loom_graph_module_destroy(m);
  }
}

/* test_inline.c — graph/pass_inline.c: calls of a graph function that pass constants are
 * inlined (the callee's symbols read as the caller's dims, checked numerically through the
 * pipeline check), after which pack lays the weights out; calls that do not fit stay; and
 * parameters bound to constants (loom_graph_bind_params), with its errors by message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* Appends `const @name: Tensor[(r, c), f32] = [...]` with values that differ by name. */
static void const_matrix(loom_strbuf *sb, const char *name, int r, int c, int salt) {
  loom_strbuf_printf(sb, "const @%s: Tensor[(%d, %d), f32] = [", name, r, c);
  for (int i = 0; i < r * c; i++) loom_strbuf_printf(sb, "%s%d.25", i ? ", " : "", (i * 7 + salt) % 11 - 5);
  loom_strbuf_printf(sb, "]\n");
}

/* A layer function over its own symbol k (a reshape names it), called twice with constant
 * weights of 4 x 32 and once more with a parameter weight (which stays a call). */
static char *layered_module(void) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const_matrix(&sb, "w0", 4, 32, 1);
  const_matrix(&sb, "w1", 32, 4, 2);
  loom_strbuf_printf(&sb,
                     "fn @layer(x: Tensor[(k, 4), f32], a: Tensor[(4, 32), f32], b: Tensor[(32, 4), f32]) -> Tensor[(k, 4), f32] {\n"
                     "  dataflow {\n"
                     "    h = matmul(x, a)\n"
                     "    g = tanh(h)\n"
                     "    y = matmul(g, b)\n"
                     "    r = reshape(y, shape=[k, 2, 2])\n"
                     "    z = reshape(r, shape=[k, 4])\n"
                     "    o = add(x, z)\n"
                     "    output o\n"
                     "  }\n"
                     "  return o\n"
                     "}\n"
                     "fn @main(x: Tensor[(s, 4), f32], wb: Tensor[(32, 4), f32]) -> Object {\n"
                     "  dataflow {\n"
                     "    l0 = @layer(x, @w0, @w1)\n"
                     "    l1 = @layer(l0, @w0, @w1)\n"
                     "    out = (l0, l1)\n"
                     "    output out\n"
                     "  }\n"
                     "  return out\n"
                     "}\n");
  char *s = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return s;
}

LOOM_TEST(passes, inline_copies_calls_that_pass_constants_then_pack_packs_their_weights) {
  char *text = layered_module();
  loom_graph_module *m = pt_parse(text);
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 5, NULL, &c));
  size_t n = 0;
  cr_assert_null(loom_graph_inline_const_calls(m, &n));
  cr_assert_eq(n, 2, "%zu calls inlined", n);
  pt_verify(m);
  char *fn = pt_checked_main(c, "inline", m);
  cr_assert_null(strstr(fn, "@layer("), "a call is left:\n%s", fn);
  /* the callee's k is the caller's s, in the struct info and in the reshape's attribute */
  cr_assert_not_null(strstr(fn, "l0_h: Tensor[(s, 32), f32] = matmul(x, @w0)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "l1_r: Tensor[(s, 2, 2), f32] = reshape(l1_y, shape=[s, 2, 2])"), "%s", fn);
  cr_assert_not_null(strstr(fn, "l1_h: Tensor[(s, 32), f32] = matmul(l0, @w0)"), "%s", fn);
  free(fn);
  cr_assert_null(loom_graph_normalize(m, NULL));
  cr_assert_null(loom_pipeline_check_begin(m, 4, 6, NULL, &c));
  cr_assert_null(loom_graph_pack_weights(m, 16, &n));
  /* @w0 (32 columns) in both copies; @w1 (4 columns) is narrower than a panel */
  cr_assert_eq(n, 2, "%zu packed", n);
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  fn = pt_checked_main(c, "pack", m);
  cr_assert_not_null(strstr(fn, "packed_b=true"), "%s", fn);
  free(fn);
  free(text);
  loom_graph_module_destroy(m);
}

/* A call with no constant operand, and a callee that defines a symbol with match_cast, stay. */
LOOM_TEST(passes, inline_leaves_calls_without_constants_and_callees_that_do_not_fit) {
  const char *text =
      "const @w: Tensor[(4, 4), f32] = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]\n"
      "fn @plain(x: Tensor[(k, 4), f32], a: Tensor[(4, 4), f32]) -> Tensor[(k, 4), f32] {\n"
      "  dataflow {\n"
      "    y = matmul(x, a)\n"
      "    output y\n"
      "  }\n"
      "  return y\n"
      "}\n"
      "fn @casting(x: Tensor[(k, 4), f32], a: Tensor[(4, 4), f32]) -> Tensor[(k, 4), f32] {\n"
      "  y = matmul(x, a)\n"
      "  z = match_cast(y, Tensor[(j, 4), f32])\n"
      "  return y\n"
      "}\n"
      "fn @main(x: Tensor[(s, 4), f32], v: Tensor[(4, 4), f32]) -> Object {\n"
      "  a = @plain(x, v)\n"
      "  b = @casting(x, @w)\n"
      "  out = (a, b)\n"
      "  return out\n"
      "}\n";
  loom_graph_module *m = pt_parse(text);
  size_t n = 7;
  cr_assert_null(loom_graph_inline_const_calls(m, &n));
  cr_assert_eq(n, 0, "%zu calls inlined", n);
  pt_verify(m);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_func(m, loom_graph_module_find_func(m, "main"), &sb);
  cr_assert_not_null(strstr(loom_strbuf_cstr(&sb), "@plain(x, v)"), "%s", loom_strbuf_cstr(&sb));
  cr_assert_not_null(strstr(loom_strbuf_cstr(&sb), "@casting(x, @w)"), "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
}

/* loom_graph_bind_params: a weight parameter becomes a module constant (and then inlining and
 * pack apply); the errors name the function, the parameter and the types. */
LOOM_TEST(passes, bind_params_makes_weights_constants) {
  char *text = layered_module();
  /* main's wb is the layer's second weight in a third call */
  char *p = strstr(text, "    out = (l0, l1)");
  cr_assert_not_null(p);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "%.*s    l2 = @layer(l1, @w0, wb)\n    out = (l0, l1, l2)%s", (int)(p - text), text,
                     p + strlen("    out = (l0, l1)"));
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&sb));
  float wb[32 * 4];
  for (int i = 0; i < 32 * 4; i++) wb[i] = (float)((i * 5) % 9 - 4) * 0.125f;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *d[2] = {loom_sym_const(cx, 32), loom_sym_const(cx, 4)};
  const loom_sinfo *si = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d, NULL);
  const char *names[1] = {"wb"};
  const void *data[1] = {wb};
  size_t n = 0;
  /* errors first: nothing is changed by them */
  const char *bad[1] = {"wq"};
  loom_status st = loom_graph_bind_params(m, "main", 1, bad, &si, data, &n);
  cr_assert(st && strstr(loom_status_message(st), "@main has no parameter 'wq' to bind") != NULL, "%s", st ? loom_status_message(st) : "ok");
  loom_status_free(st);
  const loom_sym_expr *d2[2] = {loom_sym_const(cx, 4), loom_sym_const(cx, 32)};
  const loom_sinfo *si2 = loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d2, NULL);
  st = loom_graph_bind_params(m, "main", 1, names, &si2, data, &n);
  cr_assert(st && strstr(loom_status_message(st), "parameter 'wb' of @main is Tensor[(32, 4), f32]; the value bound to it is Tensor[(4, 32), f32]") != NULL, "%s", st ? loom_status_message(st) : "ok");
  loom_status_free(st);
  st = loom_graph_bind_params(m, "nope", 1, names, &si, data, &n);
  cr_assert(st && strstr(loom_status_message(st), "no function @nope") != NULL, "%s", st ? loom_status_message(st) : "ok");
  loom_status_free(st);
  cr_assert_null(loom_graph_bind_params(m, "main", 1, names, &si, data, &n));
  cr_assert_eq(n, 1);
  pt_verify(m);
  loom_graph_func *f = loom_graph_module_find_func(m, "main");
  cr_assert_eq(f->nparams, 1, "wb is no longer a parameter (%zu)", f->nparams);
  cr_assert_null(loom_graph_inline_const_calls(m, &n));
  cr_assert_eq(n, 3, "the third call passes @wb now (%zu inlined)", n);
  pt_verify(m);
  loom_strbuf out;
  loom_strbuf_init(&out, NULL);
  loom_graph_print_func(m, f, &out);
  cr_assert_not_null(strstr(loom_strbuf_cstr(&out), "l2_y: Tensor[(s, 4), f32] = matmul(l2_g, @wb)"), "%s",
                     loom_strbuf_cstr(&out));
  loom_strbuf_free(&out);
  loom_strbuf_free(&sb);
  free(text);
  loom_graph_module_destroy(m);
}

/* pack and linear: linear(x, W) without a bias is matmul(x, W, transpose_b=true), so an untied
 * constant W (40 x 3) is laid out in panels (3 of 16, the last padded: n=40); a tied one (also
 * gathered) and a linear with a bias stay. The module computes the same. */
LOOM_TEST(passes, pack_lays_out_a_linear_weight) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const_matrix(&sb, "e", 40, 3, 3);
  const_matrix(&sb, "v", 40, 3, 4);
  loom_strbuf_printf(&sb, "const @bias: Tensor[(40), f32] = [");
  for (int i = 0; i < 40; i++) loom_strbuf_printf(&sb, "%s%d.5", i ? ", " : "", i % 5 - 2);
  loom_strbuf_printf(&sb, "]\n"
                          "fn @main(ids: Tensor[(n), i64], x: Tensor[(n, 3), f32]) -> Object {\n"
                          "  dataflow {\n"
                          "    h = take(@e, ids, axis=0)\n"
                          "    y = add(h, x)\n"
                          "    lm = linear(y, @e)\n"
                          "    other = linear(y, @v)\n"
                          "    biased = linear(y, @e, @bias)\n"
                          "    out = (lm, other, biased)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n");
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&sb));
  char *fn = pt_pack_checked(m, 4, 11, 16, 1); /* only linear(y, @v) */
  cr_assert_not_null(strstr(fn, "other: Tensor[(n, 40), f32] = matmul(y, @main_other_packed, packed_b=true, n=40)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "lm: Tensor[(n, 40), f32] = linear(y, @e)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "biased: Tensor[(n, 40), f32] = linear(y, @e, @bias)"), "%s", fn);
  free(fn);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
}

/* pack with tied copies (loom serve --pack-tied): the tied head linear(y, @e) gets its own
 * panels, take(@e) still reads @e; the module computes the same and keeps both copies. */
LOOM_TEST(passes, pack_tied_copies_give_a_tied_head_its_panels) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const_matrix(&sb, "e", 40, 3, 3);
  loom_strbuf_printf(&sb, "fn @main(ids: Tensor[(n), i64], x: Tensor[(n, 3), f32]) -> Object {\n"
                          "  dataflow {\n"
                          "    h = take(@e, ids, axis=0)\n"
                          "    y = add(h, x)\n"
                          "    lm = linear(y, @e)\n"
                          "    output lm\n"
                          "  }\n"
                          "  return lm\n"
                          "}\n");
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&sb));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 12, NULL, &c));
  size_t n = 0;
  cr_assert_null(loom_graph_pack_weights_tied(m, 16, false, true, NULL, &n));
  cr_assert_eq(n, 1, "%zu packed", n);
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  char *fn = pt_checked_main(c, "pack", m);
  cr_assert_not_null(strstr(fn, "lm: Tensor[(n, 40), f32] = matmul(y, @main_lm_packed, packed_b=true, n=40)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "take(@e, ids, axis=0)"), "%s", fn);
  cr_assert_eq(loom_graph_module_num_consts(m), 2, "@e and its panels");
  free(fn);
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
}

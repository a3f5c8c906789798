/* test_tied_weights.c — a weight that is read twice, as a tied LM head's embedding is (GPT-2:
 * take(wte, ids) and matmul(h, permute_dims(wte))), is kept once: simplify reads it transposed in
 * place instead of leaving fold a transposed copy to make, and pack does not lay out a panel copy
 * of it (issue 22). Each checked numerically through the pipeline check (interpreter before and
 * after), and by the constants the module keeps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* A tied LM head: @e is gathered (the embedding) and transposed for the head. Folding the
 * transposition would keep a second copy of @e, so the head reads @e transposed in place and the
 * dead permute_dims goes before fold; @c, transposed only, is still left to fold. Checked
 * numerically. */
static const char *tied_head_in =
    "const @e: Tensor[(5, 4), f32] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, "
    "15.0, 16.0, 17.0, 18.0, 19.0, 20.0]\n"
    "const @c: Tensor[(3, 4), f32] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0]\n"
    "fn @main(ids: Tensor[(s), i64], x: Tensor[(s, 4), f32]) -> Object {\n"
    "  dataflow {\n"
    "    h = take(@e, ids, axis=0)\n"
    "    y = add(h, x)\n"
    "    et = permute_dims(@e)\n"
    "    lm = matmul(y, et)\n"
    "    ct = permute_dims(@c)\n"
    "    z = matmul(y, ct)\n"
    "    out = (lm, z)\n"
    "    output out\n"
    "  }\n"
    "  return out\n"
    "}\n";

LOOM_TEST(passes, simplify_reads_a_tied_constant_transposed_in_place) {
  loom_graph_module *m = pt_parse(tied_head_in);
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 3, NULL, &c));
  cr_assert_null(loom_graph_normalize(m, NULL));
  cr_assert_null(loom_graph_simplify(m, NULL));
  pt_verify(m);
  char *fn = pt_checked_main(c, "simplify", m);
  cr_assert_not_null(strstr(fn, "lm: Tensor[(s, 5), f32] = matmul(y, @e, transpose_b=true)"), "%s", fn);
  cr_assert_null(strstr(fn, "permute_dims(@e)"), "a transposed copy of the tied constant remains:\n%s", fn);
  cr_assert_not_null(strstr(fn, "ct: Tensor[(4, 3), f32] = permute_dims(@c)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "z: Tensor[(s, 3), f32] = matmul(y, ct)"), "%s", fn);
  free(fn);
  loom_graph_module_destroy(m);
}

/* pack and a tied LM head: @e is read by take (the embedding) and by matmul(.., transpose_b=true)
 * (the head). Packing it would keep a second copy, so it stays and the head reads it where it
 * lies; @v, read by a matmul only, is packed. The module computes the same. */
LOOM_TEST(passes, pack_leaves_a_tied_weight_in_place) {
  enum { K = 3, V = 40 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @e: Tensor[(%d, %d), f32] = [", V, K);
  for (int i = 0; i < K * V; i++) loom_strbuf_printf(&in, "%s%d.5", i ? ", " : "", i % 17 - 8);
  loom_strbuf_printf(&in, "]\nconst @v: Tensor[(%d, %d), f32] = [", V, K);
  for (int i = 0; i < K * V; i++) loom_strbuf_printf(&in, "%s%d.25", i ? ", " : "", i % 13 - 6);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(ids: Tensor[(n), i64], x: Tensor[(n, %d), f32]) -> Object {\n"
                          "  dataflow {\n"
                          "    h = take(@e, ids, axis=0)\n"
                          "    y = add(h, x)\n"
                          "    lm = matmul(y, @e, transpose_b=true)\n"
                          "    other = matmul(y, @v, transpose_b=true)\n"
                          "    out = (lm, other)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K);
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  char *fn = pt_pack_checked(m, 4, 9, 16, 1); /* only @v */
  cr_assert_not_null(strstr(fn, "lm: Tensor[(n, 40), f32] = matmul(y, @e, transpose_b=true)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "other: Tensor[(n, 40), f32] = matmul(y, @main_other_packed, packed_b=true, n=40)"), "%s", fn);
  size_t bytes = 0;
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) bytes += loom_graph_module_const_at(m, i)->expr->u.cnst.nbytes;
  /* @e once (480 bytes) and @v's three padded panels (576): no packed copy of @e */
  cr_assert_eq(bytes, (size_t)(V * K + 3 * K * 16) * sizeof(float), "%zu bytes of constants", bytes);
  free(fn);
  loom_strbuf_free(&in);
  loom_graph_module_destroy(m);
}

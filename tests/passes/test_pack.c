/* test_pack.c — the `pack` pass on matmul weights (graph/pass_pack.c; convolutions: test_pack_conv.c):
 * f32 weights in column panels of every width (transposed B, a linear's bias); int8 weights as i16
 * pair words, as byte quads with column sums where the centred values fit a signed byte
 * (AVX512-VNNI's dot4), and for AVX2's saturating vpmaddubsw only where every byte pair keeps within
 * i16 (dot4s, pairs=true); the last panel padded; the module computes the same (the interpreter on
 * the packed forms) and the panels, words and sums are the weight's. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* pack: a constant weight whose columns are a multiple of the panel is laid out panel by panel
 * (for x @ W and for W read transposed); other columns, a weight that is not a constant and a
 * non-f32 one stay. The packed values are W's, panel by panel, and the module computes the same. */
static void pack_panel_16(loom_graph_module *m) {
  size_t n = 0;
  cr_assert_null(loom_graph_pack_weights(m, 16, &n));
  cr_assert_eq(n, 5);
  cr_assert_null(loom_graph_dce(m, NULL));
}

LOOM_TEST(passes, pack_lays_constant_weights_out_in_panels) {
  enum { K = 3, N = 32 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @w: Tensor[(%d, %d), f32] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.0", i ? ", " : "", i);
  loom_strbuf_printf(&in, "]\nconst @v: Tensor[(%d, %d), f32] = [", N, K);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.5", i ? ", " : "", i);
  loom_strbuf_printf(&in, "]\nconst @o: Tensor[(%d, 24), f32] = [", K);
  for (int i = 0; i < K * 24; i++) loom_strbuf_printf(&in, "%s%d.25", i ? ", " : "", i);
  loom_strbuf_printf(&in, "]\nconst @t: Tensor[(21, %d), f32] = [", K);
  for (int i = 0; i < K * 21; i++) loom_strbuf_printf(&in, "%s%d.75", i ? ", " : "", i);
  loom_strbuf_printf(&in, "]\nconst @s: Tensor[(%d, 15), f32] = [", K);
  for (int i = 0; i < K * 15; i++) loom_strbuf_printf(&in, "%s1.0", i ? ", " : "");
  loom_strbuf_printf(&in, "]\nconst @q: Tensor[(%d, %d), i8] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d", i ? ", " : "", (i * 37) % 256 - 128);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(x: Tensor[(n, %d), f32], u: Tensor[(%d, %d), f32], xi: Tensor[(n, %d), u8]) -> Object {\n"
                          "  dataflow {\n"
                          "    a = matmul(x, @w)\n"
                          "    b = matmul(x, @v, transpose_b=true)\n"
                          "    c = matmul(x, @o)\n"
                          "    d = matmul(x, u)\n"
                          "    e = matmul_integer(xi, @q, const(7, u8), const(-3, i8))\n"
                          "    f = matmul(x, @t, transpose_b=true)\n"
                          "    g = matmul(x, @s)\n"
                          "    out = (a, b, c, d, e, f, g)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K, K, N, K);
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 9, NULL, &c));
  pack_panel_16(m);
  pt_verify(m);
  char *fn = pt_checked_main(c, "pack", m);
  cr_assert_not_null(strstr(fn, "a: Tensor[(n, 32), f32] = matmul(x, @main_a_packed, packed_b=true)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "b: Tensor[(n, 32), f32] = matmul(x, @main_b_packed, packed_b=true)"), "%s", fn);
  /* n not a multiple of the panel: the last panel zero-padded, the true n an attribute; fewer
   * columns than a panel stay */
  cr_assert_not_null(strstr(fn, "c: Tensor[(n, 24), f32] = matmul(x, @main_c_packed, packed_b=true, n=24)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "f: Tensor[(n, 21), f32] = matmul(x, @main_f_packed, packed_b=true, n=21)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "g: Tensor[(n, 15), f32] = matmul(x, @s)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "d: Tensor[(n, 32), f32] = matmul(x, u)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "e: Tensor[(n, 32), i32] = matmul_integer(xi, @main_e_packed, const(7, u8), packed_b=true)"), "%s",
                     fn);
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
    const loom_graph_const *k = loom_graph_module_const_at(m, i);
    cr_assert(strcmp(k->name, "w") && strcmp(k->name, "v") && strcmp(k->name, "q") && strcmp(k->name, "o") && strcmp(k->name, "t"),
              "the packed weight @%s was not dropped", k->name);
    bool tt = !strcmp(k->name, "main_f_packed");
    if (tt || !strcmp(k->name, "main_c_packed")) { /* (2, K, 16): columns past n zero */
      int nn = tt ? 21 : 24;
      const float *d = k->expr->u.cnst.data;
      cr_assert_eq(k->expr->u.cnst.nbytes, (size_t)(2 * K * 16) * sizeof(float), "@%s", k->name);
      for (int q = 0; q < 2; q++)
        for (int r = 0; r < K; r++)
          for (int col = 0; col < 16; col++) {
            int j = q * 16 + col;
            float want = j >= nn ? 0.0f : tt ? (float)(j * K + r) + 0.75f : (float)(r * nn + j) + 0.25f;
            cr_assert_eq(d[(q * K + r) * 16 + col], want, "@%s[%d, %d, %d]", k->name, q, r, col);
          }
    }
    if (!strcmp(k->name, "main_e_packed")) { /* pair words of q + 3 along k (K = 3: the last high half 0) */
      const uint32_t *wd = k->expr->u.cnst.data;
      for (int q = 0; q < N / 16; q++)
        for (int t2 = 0; t2 < (K + 1) / 2; t2++)
          for (int col = 0; col < 16; col++) {
            int j = q * 16 + col, r0 = 2 * t2, r1 = 2 * t2 + 1;
            int lo = ((r0 * N + j) * 37) % 256 - 128 + 3, hi = r1 < K ? ((r1 * N + j) * 37) % 256 - 128 + 3 : 0;
            uint32_t want = ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16);
            cr_assert_eq(wd[(q * ((K + 1) / 2) + t2) * 16 + col], want, "@%s[%d, %d, %d]", k->name, q, t2, col);
          }
    }
    bool tb = !strcmp(k->name, "main_b_packed");
    if (strcmp(k->name, "main_a_packed") && !tb) continue;
    const float *d = k->expr->u.cnst.data;
    for (int q = 0; q < N / 16; q++)
      for (int r = 0; r < K; r++)
        for (int col = 0; col < 16; col++) {
          int j = q * 16 + col;
          float want = tb ? (float)(j * K + r) + 0.5f : (float)(r * N + j);
          cr_assert_eq(d[(q * K + r) * 16 + col], want, "@%s[%d, %d, %d]", k->name, q, r, col);
        }
  }
  free(fn);
  loom_strbuf_free(&in);
  loom_graph_module_destroy(m);
}

/* pack and linear with a bias (ONNX Gemm, torch's 2-D Linear, an LSTM's gates): the weight is
 * packed into a matmul of its own and the bias is added after it (fusion makes that the tile's
 * epilogue), at the top level and inside a loop's body; the module computes the same. A weight
 * that a take also reads stays where it is. */
LOOM_TEST(passes, pack_lays_out_the_weight_of_a_linear_with_a_bias) {
  enum { K = 3, N = 32 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @w: Tensor[(%d, %d), f32] = [", N, K);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.5", i ? ", " : "", i % 17);
  loom_strbuf_printf(&in, "]\nconst @e: Tensor[(%d, %d), f32] = [", N, K);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.25", i ? ", " : "", i % 13);
  loom_strbuf_printf(&in, "]\nconst @bias: Tensor[(%d,), f32] = [", N);
  for (int i = 0; i < N; i++) loom_strbuf_printf(&in, "%s%d.0", i ? ", " : "", i - 7);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(x: Tensor[(n, s, %d), f32], ids: Tensor[(n,), i64]) -> Object {\n"
                          "  dataflow {\n"
                          "    a = linear(x, @w, @bias)\n"
                          "    t = take(@e, ids, axis=0)\n"
                          "    b = linear(t, @e, @bias)\n"
                          "    out = (a, b)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K);
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  char *fn = pt_pack_checked(m, 4, 9, 16, 1);
  cr_assert_not_null(strstr(fn, "a_mm: Tensor[(n, s, 32), f32] = matmul(x, @main_a_packed, packed_b=true)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "a: Tensor[(n, s, 32), f32] = add(a_mm, @bias)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "b: Tensor[(n, 32), f32] = linear(t, @e, @bias)"), "%s", fn);
  free(fn);
  loom_strbuf_free(&in);
  loom_graph_module_destroy(m);
}

/* pack at every panel width: the inlined widths (8, 16, 32) and any other (4) lay W's values out
 * the same way, Wp[q, r, c] = W[r, q*P + c]. */
LOOM_TEST(passes, pack_lays_panels_of_every_width) {
  enum { K = 5, N = 64 };
  static const int panels[] = {4, 8, 16, 32};
  for (size_t pi = 0; pi < sizeof panels / sizeof *panels; pi++) {
    int P = panels[pi];
    loom_strbuf in;
    loom_strbuf_init(&in, NULL);
    loom_strbuf_printf(&in, "const @w: Tensor[(%d, %d), f32] = [", K, N);
    for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.0", i ? ", " : "", i);
    loom_strbuf_printf(&in, "]\nfn @main(x: Tensor[(n, %d), f32]) -> Tensor[(n, %d), f32] {\n"
                            "  dataflow {\n    a = matmul(x, @w)\n    output a\n  }\n  return a\n}\n", K, N);
    loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
    size_t n = 0;
    cr_assert_null(loom_graph_pack_weights(m, P, &n));
    cr_assert_eq(n, 1, "panel %d", P);
    bool seen = false;
    for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
      const loom_graph_const *k = loom_graph_module_const_at(m, i);
      if (strcmp(k->name, "main_a_packed")) continue;
      seen = true;
      const float *d = k->expr->u.cnst.data;
      for (int q = 0; q < N / P; q++)
        for (int r = 0; r < K; r++)
          for (int col = 0; col < P; col++)
            cr_assert_eq(d[(q * K + r) * P + col], (float)(r * N + q * P + col), "panel %d: [%d, %d, %d]", P, q, r, col);
    }
    cr_assert(seen, "panel %d: no packed constant", P);
    loom_strbuf_free(&in);
    loom_graph_module_destroy(m);
  }
}

/* pack with byte quads (a machine with AVX512-VNNI): an int8 weight whose centred values fit a
 * signed byte becomes quads + column sums (k = 5: the last quad partial), one that does not
 * (q - (-3) reaches 130) keeps the pair words; the module computes the same (the interpreter's
 * quads form), and the words and sums are the centred weight's. */
LOOM_TEST(passes, pack_lays_int8_weights_in_byte_quads_where_they_fit) {
  enum { K = 5, N = 32 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @f: Tensor[(%d, %d), u8] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d", i ? ", " : "", (i * 37) % 256);
  loom_strbuf_printf(&in, "]\nconst @g: Tensor[(%d, %d), i8] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d", i ? ", " : "", (i * 37) % 256 - 128);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(xi: Tensor[(n, %d), u8], xs: Tensor[(n, %d), i8]) -> Object {\n"
                          "  dataflow {\n"
                          "    e = matmul_integer(xi, @f, const(7, u8), const(128, u8))\n"
                          "    h = matmul_integer(xs, @g, const(-5, i8), const(-3, i8))\n"
                          "    out = (e, h)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K, K);
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 9, NULL, &c));
  size_t n = 0;
  cr_assert_null(loom_graph_pack_weights_ex(m, 16, true, &n));
  cr_assert_eq(n, 2);
  cr_assert_null(loom_graph_dce(m, NULL));
  pt_verify(m);
  char *fn = pt_checked_main(c, "pack", m);
  cr_assert_not_null(strstr(fn, "e: Tensor[(n, 32), i32] = matmul_integer(xi, @main_e_packed, const(7, u8), @main_e_packed_1, "
                                "packed_b=true, quads=true)"), "%s", fn);
  cr_assert_not_null(strstr(fn, "h: Tensor[(n, 32), i32] = matmul_integer(xs, @main_h_packed, const(-5, i8), packed_b=true)"), "%s", fn);
  bool seen[2] = {false, false};
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
    const loom_graph_const *k = loom_graph_module_const_at(m, i);
    if (!strcmp(k->name, "main_e_packed")) { /* quads of f - 128 along k; bytes past k are 0 */
      const uint32_t *wd = k->expr->u.cnst.data;
      seen[0] = true;
      for (int q = 0; q < N / 16; q++)
        for (int t = 0; t < (K + 3) / 4; t++)
          for (int col = 0; col < 16; col++) {
            uint32_t want = 0;
            for (int b = 0; b < 4 && 4 * t + b < K; b++)
              want |= (uint32_t)(uint8_t)(int8_t)((((4 * t + b) * N + q * 16 + col) * 37) % 256 - 128) << (8 * b);
            cr_assert_eq(wd[(q * ((K + 3) / 4) + t) * 16 + col], want, "@%s[%d, %d, %d]", k->name, q, t, col);
          }
    }
    if (!strcmp(k->name, "main_e_packed_1")) { /* the column sums */
      const int32_t *cs = k->expr->u.cnst.data;
      seen[1] = true;
      for (int j = 0; j < N; j++) {
        int32_t want = 0;
        for (int r = 0; r < K; r++) want += ((r * N + j) * 37) % 256 - 128;
        cr_assert_eq(cs[j], want, "column sum %d", j);
      }
    }
  }
  cr_assert(seen[0] && seen[1]);
  free(fn);
  loom_strbuf_free(&in);
  loom_graph_module_destroy(m);
}

/* An int8 weight with n = 21 columns (not a multiple of the panel of 16): pair words and byte
 * quads (with column sums over the 21 real columns) in 2 panels, the last zero-padded, the
 * call given n=21; the module computes the same (the interpreter reads the padded forms). */
LOOM_TEST(passes, pack_pads_the_last_panel_of_int8_weights) {
  enum { K = 5, N = 21 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @f: Tensor[(%d, %d), u8] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d", i ? ", " : "", (i * 37) % 256);
  loom_strbuf_printf(&in, "]\nconst @g: Tensor[(%d, %d), i8] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d", i ? ", " : "", (i * 37) % 256 - 128);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(xi: Tensor[(n, %d), u8], xs: Tensor[(n, %d), i8]) -> Object {\n"
                          "  dataflow {\n"
                          "    e = matmul_integer(xi, @f, const(7, u8), const(128, u8))\n"
                          "    h = matmul_integer(xs, @g, const(-5, i8), const(-3, i8))\n"
                          "    out = (e, h)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K, K);
  for (int quads = 0; quads < 2; quads++) {
    loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
    loom_pipeline_check *c;
    cr_assert_null(loom_pipeline_check_begin(m, 4, 9, NULL, &c));
    size_t n = 0;
    cr_assert_null(loom_graph_pack_weights_ex(m, 16, quads, &n));
    cr_assert_eq(n, 2);
    cr_assert_null(loom_graph_dce(m, NULL));
    pt_verify(m);
    char *fn = pt_checked_main(c, "pack", m);
    cr_assert_not_null(strstr(fn, quads ? "e: Tensor[(n, 21), i32] = matmul_integer(xi, @main_e_packed, const(7, u8), @main_e_packed_1, "
                                          "packed_b=true, quads=true, n=21)"
                                        : "e: Tensor[(n, 21), i32] = matmul_integer(xi, @main_e_packed, const(7, u8), packed_b=true, n=21)"),
                       "%s", fn);
    cr_assert_not_null(strstr(fn, "h: Tensor[(n, 21), i32] = matmul_integer(xs, @main_h_packed, const(-5, i8), packed_b=true, n=21)"),
                       "%s", fn);
    for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
      const loom_graph_const *k = loom_graph_module_const_at(m, i);
      if (strcmp(k->name, "main_e_packed") && strcmp(k->name, "main_h_packed")) continue;
      int per = quads && !strcmp(k->name, "main_e_packed") ? 4 : 2, kw = (K + per - 1) / per;
      const uint32_t *wd = k->expr->u.cnst.data;
      cr_assert_eq(k->expr->u.cnst.nbytes, (size_t)(2 * kw * 16) * sizeof(uint32_t), "@%s", k->name);
      for (int t = 0; t < kw; t++)
        for (int col = N - 16; col < 16; col++) cr_assert_eq(wd[(kw + t) * 16 + col], 0u, "@%s[1, %d, %d]: the padding", k->name, t, col);
    }
    free(fn);
    loom_graph_module_destroy(m);
  }
  loom_strbuf_free(&in);
}

/* The line of fn that binds `var` (malloc'd). */
static char *call_line(const char *fn, const char *var) {
  char head[64];
  snprintf(head, sizeof head, "    %s: ", var);
  const char *at = strstr(fn, head);
  cr_assert_not_null(at, "no %s in\n%s", var, fn);
  const char *eol = strchr(at, '\n');
  return strndup(at, eol ? (size_t)(eol - at) : strlen(at));
}

/* pack for AVX2 (LOOM_PACK_QUADS_PAIRS): byte quads (pairs=true: dot4s) only for a weight whose
 * byte pairs (rows 2u, 2u + 1 of a column, the second 0 past k) keep u8 x s8 sums within i16:
 * positives summing to at most 128 and negatives to at least -128. @r ([-64, 63], ORT's
 * reduce_range), @b (pairs at the bound: (64, 64), (-64, -64), (127, 1), (-128, 0), (127, -128))
 * and @o (k = 5, odd: the last pair (127 or -128, 0)) take them; @p ((127, 2): 129) and @q (centred by a zero
 * point to (-65, -64): -129) keep the pair words; with LOOM_PACK_QUADS_EXACT @p and @q take exact
 * quads (no pairs). The module computes the same each way (4 shape sets). */
LOOM_TEST(passes, pack_lays_int8_quads_for_avx2_only_where_the_byte_pairs_fit) {
  enum { K = 6, N = 16 };
  static const int bound[5][2] = {{64, 64}, {-64, -64}, {127, 1}, {-128, 0}, {127, -128}};
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  const char *names[] = {"r", "b", "p", "q"};
  for (int w = 0; w < 4; w++) {
    loom_strbuf_printf(&in, "const @%s: Tensor[(%d, %d), i8] = [", names[w], K, N);
    for (int r = 0; r < K; r++)
      for (int j = 0; j < N; j++) {
        int v;
        if (w == 0) v = ((r * N + j) * 37) % 128 - 64;
        else if (w == 1) v = bound[(j + r / 2) % 5][r % 2];
        else if (w == 2) v = j == 5 && r == 2 ? 127 : j == 5 && r == 3 ? 2 : 3; /* column 5, rows 2, 3: (127, 2) */
        else v = j == 9 && r == 2 ? -63 : j == 9 && r == 3 ? -64 : 7;           /* minus zero point 1: (-64, -65) */
        loom_strbuf_printf(&in, "%s%d", r || j ? ", " : "", v);
      }
    loom_strbuf_printf(&in, "]\n");
  }
  loom_strbuf_printf(&in, "const @o: Tensor[(5, %d), i8] = [", N);
  for (int i = 0; i < 5 * N; i++) /* pairs (+-64, +-64), then (127 or -128, 0 past k) */
    loom_strbuf_printf(&in, "%s%d", i ? ", " : "", i / N == 4 ? (i % 2 ? 127 : -128) : (i % N + i / N) % 3 ? 64 : -64);
  loom_strbuf_printf(&in, "]\n"
                          "fn @main(x: Tensor[(n, %d), u8], x5: Tensor[(n, 5), u8]) -> Object {\n"
                          "  dataflow {\n"
                          "    er = matmul_integer(x, @r, const(7, u8), const(0, i8))\n"
                          "    eb = matmul_integer(x, @b, const(255, u8), const(0, i8))\n"
                          "    ep = matmul_integer(x, @p, const(0, u8), const(0, i8))\n"
                          "    eq = matmul_integer(x, @q, const(3, u8), const(1, i8))\n"
                          "    eo = matmul_integer(x5, @o, const(9, u8), const(0, i8))\n"
                          "    out = (er, eb, ep, eq, eo)\n"
                          "    output out\n"
                          "  }\n"
                          "  return out\n"
                          "}\n", K);
  for (int mode = LOOM_PACK_QUADS_EXACT; mode <= LOOM_PACK_QUADS_PAIRS; mode++) {
    loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
    loom_pipeline_check *c;
    cr_assert_null(loom_pipeline_check_begin(m, 4, 9, NULL, &c));
    size_t n = 0;
    cr_assert_null(loom_graph_pack_weights_ex(m, 16, mode, &n));
    cr_assert_eq(n, 5);
    cr_assert_null(loom_graph_dce(m, NULL));
    pt_verify(m);
    char *fn = pt_checked_main(c, "pack", m);
    static const char *const fits[] = {"er", "eb", "eo"};
    for (int i = 0; i < 3; i++) {
      char *line = call_line(fn, fits[i]);
      cr_assert(strstr(line, mode == LOOM_PACK_QUADS_PAIRS ? "packed_b=true, quads=true, pairs=true)" : "packed_b=true, quads=true)"),
                "%s", line);
      free(line);
    }
    cr_assert_not_null(strstr(fn, mode == LOOM_PACK_QUADS_PAIRS
                                      ? "ep: Tensor[(n, 16), i32] = matmul_integer(x, @main_ep_packed, const(0, u8), packed_b=true)"
                                      : "ep: Tensor[(n, 16), i32] = matmul_integer(x, @main_ep_packed, const(0, u8), "
                                        "@main_ep_packed_1, packed_b=true, quads=true)"),
                       "%s", fn);
    cr_assert_not_null(strstr(fn, mode == LOOM_PACK_QUADS_PAIRS
                                      ? "eq: Tensor[(n, 16), i32] = matmul_integer(x, @main_eq_packed, const(3, u8), packed_b=true)"
                                      : "eq: Tensor[(n, 16), i32] = matmul_integer(x, @main_eq_packed, const(3, u8), "
                                        "@main_eq_packed_1, packed_b=true, quads=true)"),
                       "%s", fn);
    free(fn);
    loom_graph_module_destroy(m);
  }
  loom_strbuf_free(&in);
}

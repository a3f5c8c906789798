/* test_onnx_seq.c — the importer's sequence-model ops (onnx_import_seq.c): numerics of the
 * paths the node suite does not reach (bidirectional and reverse recurrences, GRU's
 * linear_before_reset, sequence_lens, top-left causal attention on symbolic lengths,
 * interleaved partial rotary embedding) against values from the ONNX reference evaluator
 * (numpy following the spec for sequence_lens, which the reference ignores), and the errors
 * for bad attributes. Inputs are v[i] = sin(0.7 i + k) / 2 for input k. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "frontend/onnx/onnx_import.h"
#include "graph/graph.h"
#include "onnx/onnx_test.h"

/* Generated with the ONNX reference evaluator (onnx 1.23) on the inputs above. */
static const float lstm_bidi_0[] = {-0.09742986f, 0.03008044f, 0.01678905f, 0.1880133f, -0.05663045f, -0.1262309f, 0.1768981f, 0.064955f, -0.0971788f, 0.1338372f, 0.08103266f, 0.08122329f, -0.1424186f, -0.07275294f, -0.06997123f, 0.04793278f, -0.1303122f, -0.05093438f, 0.1509731f, 0.01469029f, -0.1256532f, 0.1576361f, 0.09222163f, 0.02905177f, -0.1808728f, -0.1429289f, -0.1011013f, 0.01931456f, -0.163127f, -0.1665014f, 0.09006434f, -0.04660569f, -0.142766f, -0.02587132f, 0.1962208f, 0.1164664f}; /* [3, 2, 2, 3] */
static const float lstm_bidi_1[] = {-0.1808728f, -0.1429289f, -0.1011013f, 0.01931456f, -0.163127f, -0.1665014f, 0.1768981f, 0.064955f, -0.0971788f, 0.1338372f, 0.08103266f, 0.08122329f}; /* [2, 2, 3] */
static const float lstm_bidi_2[] = {-0.3774191f, -0.249671f, -0.180619f, 0.04533403f, -0.2591482f, -0.2519077f, 0.4795425f, 0.1927662f, -0.2384138f, 0.3622606f, 0.3206866f, 0.1934233f}; /* [2, 2, 3] */
static const float gru_rev_0[] = {-0.279313f, -0.1206111f, -0.1000322f, -0.1473614f}; /* [2, 1, 1, 2] */
static const float gru_rev_1[] = {-0.279313f, -0.1206111f}; /* [1, 1, 2] */
static const float rnn_lens_0[] = {0.1583678f, 0.006696649f, -0.1561476f, -0.06014182f, 0.3980338f, 0.1736057f, -0.3467036f, -0.2897868f, 0.1011489f, -0.03920795f, 0.08990145f, -0.05388713f, 0.0f, 0.0f, 0.0f, 0.0f, -0.08028711f, -0.1608838f, 0.14846f, 0.08588303f, 0.0f, 0.0f, 0.0f, 0.0f}; /* [3, 1, 2, 4] */
static const float rnn_lens_1[] = {-0.08028711f, -0.1608838f, 0.14846f, 0.08588303f, 0.3980338f, 0.1736057f, -0.3467036f, -0.2897868f}; /* [1, 2, 4] */
static const float attn_causal_3_5_0[] = {0.4546487f, 0.2136899f, -0.1277706f, -0.4091386f, -0.08009802f, -0.1042515f, -0.0793739f, -0.01716551f, 0.1776385f, 0.1312478f, 0.02312928f, -0.09586733f, -0.1439517f, -0.4185709f, -0.4963297f, -0.3406569f, -0.07340401f, 0.008407254f, 0.08626445f, 0.1235501f, 0.01779831f, -0.1247688f, -0.2086553f, -0.1944079f}; /* [1, 2, 3, 4] */
static const float attn_causal_5_3_0[] = {0.4546487f, 0.2136899f, -0.1277706f, -0.4091386f, -0.08009802f, -0.1042515f, -0.0793739f, -0.01716551f, 0.1776385f, 0.1312478f, 0.02312928f, -0.09586733f, 0.1561154f, 0.1052644f, 0.004905874f, -0.09775996f, 0.09805743f, 0.07374842f, 0.01475435f, -0.05117891f, -0.4139132f, -0.4972763f, -0.3467625f, -0.03316095f, -0.09450322f, -0.05489376f, 0.01053312f, 0.0710061f, -0.04612193f, -0.0847562f, -0.08352829f, -0.04301573f, -0.1395951f, -0.2199763f, -0.1968992f, -0.08121733f, -0.02220999f, -0.04112781f, -0.04070258f, -0.02113429f}; /* [1, 2, 5, 4] */
static const float attn_causal_1_4_0[] = {0.4546487f, 0.2136899f, -0.1277706f, -0.4091386f, 0.2960368f, 0.4860038f, 0.4473956f, 0.1983703f}; /* [1, 2, 1, 4] */
static const float rope_0[] = {0.308878f, 0.0913701f, -0.6530467f, -0.05089524f, 0.1674941f, -0.1753916f, -0.5946654f, 0.2785453f, 0.2478363f, -0.1956329f, 0.3284933f, 0.4940841f, -0.322897f, 0.3221464f, 0.2711145f, -0.3918416f, -0.4895889f, -0.3090686f, -0.3114151f, -0.124033f, -0.08822197f, 0.6452631f, 0.1515592f, -0.1910357f}; /* [1, 2, 12] */

/* ---- model building ---------------------------------------------------------------------- */

static void attr_int(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 2), pb_int(&a, 3, v), pb_msg(attrs, 5, &a);
}

static void attr_str(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 3), pb_str(&a, 4, v), pb_msg(attrs, 5, &a);
}

/* A STRINGS attribute of one string. */
static void attr_strs1(pb *attrs, const char *name, const char *v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 8), pb_str(&a, 9, v), pb_msg(attrs, 5, &a);
}

/* One-node model: inputs (NULL-terminated; "" omitted) with rank / dims, outputs unshaped. */
typedef struct io {
  const char *name;
  int elem;           /* ONNX element type (1 float, 7 int64) */
  int rank;
  const char *dims[4]; /* (not const: pb_value_info's parameter) */
} io;

static loom_status import_node(const char *op, const io *ins, size_t nin, const char **outs, pb *attrs, int opset,
                               loom_onnx_model **mm, loom_graph_module **gm) {
  pb g = {0}, model = {0};
  const char *names[9];
  for (size_t i = 0; i < nin; i++) names[i] = ins[i].name;
  names[nin] = NULL;
  pb_node(&g, op, "n", names, outs, attrs);
  for (size_t i = 0; i < nin; i++)
    if (*ins[i].name) pb_value_info(&g, 11, ins[i].name, ins[i].elem, ins[i].rank, (const char **)ins[i].dims);
  for (const char **o = outs; *o; o++)
    if (**o) pb_value_info(&g, 12, *o, 1, -1, NULL);
  pb_model(&model, opset, &g);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  if (s) return s;
  return loom_onnx_import(*mm, gm);
}

/* A float input k of the given shape: v[i] = sin(0.7 i + k) / 2. */
static void fill(loom_graph_value *v, int k, int ndim, const int64_t *shape) {
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, ndim, shape, v));
  for (size_t i = 0; i < v->t.numel; i++) ((float *)v->t.data)[i] = (float)(sin(0.7 * (double)i + k) * 0.5);
}

static void expect_close(const loom_graph_value *v, const float *want, size_t n, const char *what) {
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR, "%s: not a tensor", what);
  cr_assert_eq(v->t.numel, n, "%s: %zu elements, want %zu", what, v->t.numel, n);
  for (size_t i = 0; i < n; i++) {
    double got = loom_graph_tensor_get_f64(&v->t, i);
    cr_assert(fabs(got - want[i]) <= 1e-5 + 1e-4 * fabs(want[i]), "%s[%zu] = %.7g, want %.7g", what, i, got, want[i]);
  }
}

static void run(loom_graph_module *gm, size_t nargs, loom_graph_value *args, loom_graph_value *out) {
  loom_status s = loom_graph_eval(gm, "main", nargs, args, NULL, out);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  for (size_t i = 0; i < nargs; i++) loom_graph_value_free(&args[i]);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- recurrences ------------------------------------------------------------------------- */

LOOM_TEST(onnx, seq_lstm_bidirectional_with_state) {
  pb attrs = {0};
  attr_int(&attrs, "hidden_size", 3), attr_str(&attrs, "direction", "bidirectional");
  const io ins[] = {{"X", 1, 3, {"3", "2", "2"}}, {"W", 1, 3, {"2", "12", "2"}}, {"R", 1, 3, {"2", "12", "3"}},
                    {"B", 1, 2, {"2", "24"}},      {"", 0, 0, {0}},               {"h0", 1, 3, {"2", "2", "3"}},
                    {"c0", 1, 3, {"2", "2", "3"}}};
  const char *outs[] = {"Y", "Yh", "Yc", NULL};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node("LSTM", ins, N(ins), outs, &attrs, 22, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  static const int64_t sh[][3] = {{3, 2, 2}, {2, 12, 2}, {2, 12, 3}, {2, 24}, {2, 2, 3}, {2, 2, 3}};
  static const int nd[] = {3, 3, 3, 2, 3, 3}, k[] = {0, 1, 2, 3, 5, 6};
  loom_graph_value args[6], out;
  for (int i = 0; i < 6; i++) fill(&args[i], k[i], nd[i], sh[i]);
  run(gm, 6, args, &out);
  cr_assert_eq(out.kind, LOOM_SINFO_TUPLE);
  cr_assert_eq(out.n, 3);
  expect_close(&out.items[0], lstm_bidi_0, N(lstm_bidi_0), "Y");
  expect_close(&out.items[1], lstm_bidi_1, N(lstm_bidi_1), "Y_h");
  expect_close(&out.items[2], lstm_bidi_2, N(lstm_bidi_2), "Y_c");
  loom_graph_value_free(&out);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, seq_gru_reverse_linear_before_reset) {
  pb attrs = {0};
  attr_int(&attrs, "hidden_size", 2), attr_str(&attrs, "direction", "reverse"), attr_int(&attrs, "linear_before_reset", 1);
  const io ins[] = {{"X", 1, 3, {"2", "1", "3"}}, {"W", 1, 3, {"1", "6", "3"}}, {"R", 1, 3, {"1", "6", "2"}}, {"B", 1, 2, {"1", "12"}}};
  const char *outs[] = {"Y", "Yh", NULL};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node("GRU", ins, N(ins), outs, &attrs, 22, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  static const int64_t sh[][3] = {{2, 1, 3}, {1, 6, 3}, {1, 6, 2}, {1, 12}};
  loom_graph_value args[4], out;
  for (int i = 0; i < 4; i++) fill(&args[i], i, i == 3 ? 2 : 3, sh[i]);
  run(gm, 4, args, &out);
  expect_close(&out.items[0], gru_rev_0, N(gru_rev_0), "Y");
  expect_close(&out.items[1], gru_rev_1, N(gru_rev_1), "Y_h");
  loom_graph_value_free(&out);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, seq_rnn_sequence_lens_stop_rows) {
  pb attrs = {0};
  attr_int(&attrs, "hidden_size", 4);
  const io ins[] = {{"X", 1, 3, {"3", "b", "2"}}, {"W", 1, 3, {"1", "4", "2"}}, {"R", 1, 3, {"1", "4", "4"}},
                    {"", 0, 0, {0}},               {"lens", 7, 1, {"b"}}};
  const char *outs[] = {"Y", "Yh", NULL};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node("RNN", ins, N(ins), outs, &attrs, 22, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  /* batch 2 with lengths 3 and 1, then batch 0 (an empty batch runs) */
  for (int64_t b = 2; b >= 0; b -= 2) {
    const int64_t sh[][3] = {{3, b, 2}, {1, 4, 2}, {1, 4, 4}}, ls = b;
    loom_graph_value args[4], out;
    for (int i = 0; i < 3; i++) fill(&args[i], i, 3, sh[i]);
    cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_I64, 1, &ls, &args[3]));
    if (b) loom_graph_tensor_set_i64(&args[3].t, 0, 3), loom_graph_tensor_set_i64(&args[3].t, 1, 1);
    run(gm, 4, args, &out);
    if (b) {
      expect_close(&out.items[0], rnn_lens_0, N(rnn_lens_0), "Y");
      expect_close(&out.items[1], rnn_lens_1, N(rnn_lens_1), "Y_h");
    } else {
      cr_assert_eq(out.items[0].t.ndim, 4);
      cr_assert_eq(out.items[0].t.shape[2], 0);
      cr_assert_eq(out.items[1].t.numel, 0);
    }
    loom_graph_value_free(&out);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* ---- attention and rotary embedding --------------------------------------------------------- */

LOOM_TEST(onnx, seq_attention_causal_top_left_on_symbolic_lengths) {
  pb attrs = {0};
  attr_int(&attrs, "is_causal", 1);
  const io ins[] = {{"Q", 1, 4, {"1", "2", "s", "4"}}, {"K", 1, 4, {"1", "2", "t", "4"}}, {"V", 1, 4, {"1", "2", "t", "4"}}};
  const char *outs[] = {"Y", NULL};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node("Attention", ins, N(ins), outs, &attrs, 23, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  static const int64_t st[][2] = {{3, 5}, {5, 3}, {1, 4}, {0, 2}};
  const float *want[] = {attn_causal_3_5_0, attn_causal_5_3_0, attn_causal_1_4_0, NULL};
  const size_t nwant[] = {N(attn_causal_3_5_0), N(attn_causal_5_3_0), N(attn_causal_1_4_0), 0};
  for (int c = 0; c < 4; c++) {
    const int64_t qs[4] = {1, 2, st[c][0], 4}, ks[4] = {1, 2, st[c][1], 4};
    loom_graph_value args[3], out;
    fill(&args[0], 0, 4, qs), fill(&args[1], 1, 4, ks), fill(&args[2], 2, 4, ks);
    run(gm, 3, args, &out);
    char what[32];
    snprintf(what, sizeof what, "Y (s %lld, t %lld)", (long long)st[c][0], (long long)st[c][1]);
    expect_close(&out, want[c], nwant[c], what);
    loom_graph_value_free(&out);
  }
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, seq_rotary_interleaved_partial_3d) {
  pb attrs = {0};
  attr_int(&attrs, "interleaved", 1), attr_int(&attrs, "rotary_embedding_dim", 4), attr_int(&attrs, "num_heads", 2);
  const io ins[] = {{"x", 1, 3, {"1", "2", "12"}}, {"cos", 1, 2, {"8", "2"}}, {"sin", 1, 2, {"8", "2"}}, {"pos", 7, 2, {"1", "2"}}};
  const char *outs[] = {"y", NULL};
  loom_onnx_model *m;
  loom_graph_module *gm;
  loom_status s = import_node("RotaryEmbedding", ins, N(ins), outs, &attrs, 23, &m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  static const int64_t xs[3] = {1, 2, 12}, cs[2] = {8, 2}, ps[2] = {1, 2};
  loom_graph_value args[4], out;
  fill(&args[0], 0, 3, xs);
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, 2, cs, &args[1]));
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_F32, 2, cs, &args[2]));
  for (int p = 0; p < 8; p++)
    for (int j = 0; j < 2; j++) {
      double f = p * (j ? 0.5 : 1.0);
      loom_graph_tensor_set_f64(&args[1].t, (size_t)(p * 2 + j), (float)cos(f));
      loom_graph_tensor_set_f64(&args[2].t, (size_t)(p * 2 + j), (float)sin(f));
    }
  cr_assert(!loom_graph_value_tensor(LOOM_DTYPE_I64, 2, ps, &args[3]));
  loom_graph_tensor_set_i64(&args[3].t, 0, 5), loom_graph_tensor_set_i64(&args[3].t, 1, 2);
  run(gm, 4, args, &out);
  expect_close(&out, rope_0, N(rope_0), "y");
  loom_graph_value_free(&out);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(m);
}

/* ---- errors -------------------------------------------------------------------------------- */

/* Imports a one-node model whose inputs are all float tensors of the given dims. */
static void expect_refused(const char *op, const io *ins, size_t nin, pb *attrs, int opset, loom_code code, const char *needle) {
  const char *outs[] = {"y", NULL};
  loom_onnx_model *m = NULL;
  loom_graph_module *gm = NULL;
  loom_status s = import_node(op, ins, nin, outs, attrs, opset, &m, &gm);
  cr_assert(s != LOOM_OK, "%s: expected an error containing '%s'", op, needle);
  const char *t = loom_status_text(s, 0);
  cr_assert_eq(loom_status_code(s), code, "wrong code: %s", t);
  cr_assert(strstr(t, needle) != NULL, "message lacks '%s': %s", needle, t);
  loom_status_free(s);
  cr_assert_null(gm);
  loom_onnx_model_free(m);
}

LOOM_TEST(onnx, seq_bad_attributes_name_the_node) {
  const io qkv3[] = {{"Q", 1, 3, {"2", "4", "24"}}, {"K", 1, 3, {"2", "6", "24"}}, {"V", 1, 3, {"2", "6", "24"}}};
  pb a = {0};
  expect_refused("Attention", qkv3, 3, NULL, 23, LOOM_CODE_INVALID_ARGUMENT,
                 "node 0 (Attention 'n'): 3-D inputs need q_num_heads and kv_num_heads (got 0 and 0)");
  attr_int(&a, "q_num_heads", 5), attr_int(&a, "kv_num_heads", 3);
  expect_refused("Attention", qkv3, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "hidden size 24 is not a multiple of 5 heads");
  const io qkv4[] = {{"Q", 1, 4, {"1", "2", "3", "4"}}, {"K", 1, 4, {"1", "2", "3", "4"}}, {"V", 1, 4, {"1", "2", "3", "4"}}};
  attr_int(&a, "qk_matmul_output_mode", 7);
  expect_refused("Attention", qkv4, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "qk_matmul_output_mode 7 (0 to 3)");
  const io rnn[] = {{"X", 1, 3, {"2", "1", "2"}}, {"W", 1, 3, {"1", "4", "2"}}, {"R", 1, 3, {"1", "4", "4"}}};
  attr_str(&a, "direction", "sideways");
  expect_refused("RNN", rnn, 3, &a, 22, LOOM_CODE_INVALID_ARGUMENT, "direction 'sideways' (forward | reverse | bidirectional)");
  attr_int(&a, "hidden_size", 5);
  expect_refused("RNN", rnn, 3, &a, 22, LOOM_CODE_INVALID_ARGUMENT, "hidden_size 5 but R has 4 columns");
  attr_strs1(&a, "activations", "Softsign");
  expect_refused("RNN", rnn, 3, &a, 22, LOOM_CODE_UNIMPLEMENTED, "activation 'Softsign' is not supported");
  const io la[] = {{"q", 1, 3, {"1", "2", "8"}}, {"k", 1, 3, {"1", "2", "8"}}, {"v", 1, 3, {"1", "2", "8"}}};
  attr_int(&a, "q_num_heads", 2), attr_int(&a, "kv_num_heads", 2), attr_str(&a, "update_rule", "fancy");
  expect_refused("LinearAttention", la, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "update_rule 'fancy'");
  attr_int(&a, "q_num_heads", 3), attr_int(&a, "kv_num_heads", 2), attr_str(&a, "update_rule", "linear");
  expect_refused("LinearAttention", la, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "q_num_heads (3) must be a positive multiple of kv_num_heads (2)");
  attr_int(&a, "q_num_heads", 2), attr_int(&a, "kv_num_heads", 2);
  expect_refused("LinearAttention", la, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "update_rule 'gated_delta' needs the decay input");
  const io rope[] = {{"x", 1, 4, {"1", "2", "3", "8"}}, {"cos", 1, 3, {"1", "3", "3"}}, {"sin", 1, 3, {"1", "3", "3"}}};
  attr_int(&a, "rotary_embedding_dim", 4);
  expect_refused("RotaryEmbedding", rope, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "the caches' last axis must be rotary_embedding_dim / 2 = 2");
  attr_int(&a, "rotary_embedding_dim", 5);
  expect_refused("RotaryEmbedding", rope, 3, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "rotary_embedding_dim 5 must be even and at most the head size 8");
  const io ts[] = {{"c", 1, 3, {"2", "4", "5"}}, {"u", 1, 3, {"2", "1", "5"}}};
  attr_str(&a, "mode", "ring");
  expect_refused("TensorScatter", ts, 2, &a, 24, LOOM_CODE_INVALID_ARGUMENT, "mode 'ring' (linear | circular)");
  const io cc[] = {{"x", 1, 3, {"1", "2", "5"}}, {"w", 1, 3, {"2", "1", "3"}}};
  attr_str(&a, "activation", "gelu");
  expect_refused("CausalConvWithState", cc, 2, &a, 23, LOOM_CODE_INVALID_ARGUMENT, "activation 'gelu' (none | silu | swish)");
}

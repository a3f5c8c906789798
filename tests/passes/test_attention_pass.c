/* test_attention_pass.c — the `attention` pass (graph/pass_attention.c) as IR text in, IR text
 * out: the composed form exporters write (matmul with a transposed K, a scalar scale before or
 * after it, a causal triangle as an additive bias or as PyTorch's scaled_dot_product_attention
 * exports it (where(tri == 0, -inf, 0), q and k^T scaled), an additive data mask, a `where` with -inf,
 * rank-5 grouped-query reshapes, Hugging Face's repeat_kv, rank-3 views) becomes one `attention`
 * call and dce removes the rest; near misses (another softmax axis, a finite fill of a data mask,
 * a score or probability used elsewhere, a tensor scale, K given transposed, a broadcast batch, V
 * transposed, log_softmax, a rank-5 mask) are left exactly as they were, and a triangle that is
 * not the causal one (a fill under 1e4, another diagonal, t >= s unproven) stays an additive mask.
 * The numeric check (the interpreter before and after) confirms the rewrites. */
#define _POSIX_C_SOURCE 200809L /* strdup, strndup */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/pipeline.h"
#include "graph/passes.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

/* normalize, then (with `attention`) the pass; the printed module, verified and re-parsed to
 * itself. The caller frees it. */
static char *run(const char *in, bool attention, size_t *rewrites) {
  loom_graph_module *m = pt_parse(in);
  cr_assert_null(loom_graph_normalize(m, NULL));
  size_t n = 0;
  if (attention) {
    loom_status s = loom_graph_attention(m, &n);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
  }
  if (rewrites) *rewrites = n;
  pt_verify(m);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  loom_graph_module *back = pt_parse(loom_strbuf_cstr(&sb));
  cr_assert(loom_graph_module_equal(m, back), "the result does not parse back to itself");
  loom_graph_module_destroy(back);
  loom_graph_module_destroy(m);
  char *text = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return text;
}

static void expect(const char *in, const char *want) {
  size_t n;
  char *got = run(in, true, &n);
  cr_assert_eq(n, 1, "one rewrite expected, %zu made:\n%s", n, got);
  cr_assert_str_eq(got, want);
  free(got);
}

/* gpt2 */
static const char *const gpt2_in =
    "fn @gpt2(q: Tensor[(b, 12, s, 64), f32], k: Tensor[(b, 12, s, 64), f32], v: Tensor[(b, 12, s, 64), f32]) -> Tensor[(b, 12, s, 64), f32] {\n"
    "  ones: Tensor[(s, s), f32] = full(shape=[s, s], dtype=f32, value=1.0)\n"
    "  tri: Tensor[(s, s), f32] = tril(ones, k=[0])\n"
    "  sub1: Tensor[(s, s), f32] = sub(tri, const(1.0, f32))\n"
    "  bias: Tensor[(s, s), f32] = mul(sub1, const(1e9, f32))\n"
    "  sc: Tensor[(b, 12, s, s), f32] = matmul(q, k, transpose_b=true)\n"
    "  scaled: Tensor[(b, 12, s, s), f32] = mul(sc, const(0.125, f32))\n"
    "  masked: Tensor[(b, 12, s, s), f32] = add(bias, scaled)\n"
    "  p: Tensor[(b, 12, s, s), f32] = softmax(masked, axis=3)\n"
    "  y: Tensor[(b, 12, s, 64), f32] = matmul(p, v)\n"
    "  return y\n"
    "}\n";
static const char *const gpt2_out =
    "fn @gpt2(q: Tensor[(b, 12, s, 64), f32], k: Tensor[(b, 12, s, 64), f32], v: Tensor[(b, 12, s, 64), f32]) -> Tensor[(b, 12, s, 64), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 12, s, 64), f32] = attention(q, k, v, scale=0.125, causal=true, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* decode */
static const char *const decode_in =
    "fn @decode(x: Tensor[(b, 2, s, 16), f32], pk: Tensor[(b, 2, past, 16), f32], pv: Tensor[(b, 2, past, 16), f32], k: Tensor[(b, 2, s, 16), f32], v: Tensor[(b, 2, s, 16), f32]) -> Tensor[(b, 2, s, 16), f32] {\n"
    "  ka: Tensor[(b, 2, past + s, 16), f32] = concat(pk, k, axis=2)\n"
    "  va: Tensor[(b, 2, past + s, 16), f32] = concat(pv, v, axis=2)\n"
    "  ones: Tensor[(s, past + s), f32] = full(shape=[s, past + s], dtype=f32, value=1.0)\n"
    "  tri: Tensor[(s, past + s), f32] = tril(ones, k=[past])\n"
    "  sub1: Tensor[(s, past + s), f32] = sub(tri, const(1.0, f32))\n"
    "  bias: Tensor[(s, past + s), f32] = mul(sub1, const(1e9, f32))\n"
    "  sc: Tensor[(b, 2, s, past + s), f32] = matmul(x, ka, transpose_b=true)\n"
    "  scaled: Tensor[(b, 2, s, past + s), f32] = div(sc, const(4.0, f32))\n"
    "  masked: Tensor[(b, 2, s, past + s), f32] = add(scaled, bias)\n"
    "  p: Tensor[(b, 2, s, past + s), f32] = softmax(masked, axis=-1)\n"
    "  y: Tensor[(b, 2, s, 16), f32] = matmul(p, va)\n"
    "  return y\n"
    "}\n";
static const char *const decode_out =
    "fn @decode(x: Tensor[(b, 2, s, 16), f32], pk: Tensor[(b, 2, past, 16), f32], pv: Tensor[(b, 2, past, 16), f32], k: Tensor[(b, 2, s, 16), f32], v: Tensor[(b, 2, s, 16), f32]) -> Tensor[(b, 2, s, 16), f32] {\n"
    "  dataflow {\n"
    "    ka: Tensor[(b, 2, s + past, 16), f32] = concat(pk, k, axis=2)\n"
    "    va: Tensor[(b, 2, s + past, 16), f32] = concat(pv, v, axis=2)\n"
    "    y: Tensor[(b, 2, s, 16), f32] = attention(x, ka, va, scale=0.25, causal=true, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* gqa5 */
static const char *const gqa5_in =
    "fn @gqa5(q: Tensor[(b, 8, s, 32), f32], k: Tensor[(b, 2, t, 32), f32], v: Tensor[(b, 2, t, 32), f32]) -> Tensor[(b, 8, s, 32), f32] {\n"
    "  q5: Tensor[(b, 2, 4, s, 32), f32] = reshape(q, shape=[b, 2, 4, s, 32])\n"
    "  k5: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(k, axes=[2])\n"
    "  v5: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(v, axes=[2])\n"
    "  sc: Tensor[(b, 2, 4, s, t), f32] = matmul(q5, k5, transpose_b=true)\n"
    "  scaled: Tensor[(b, 2, 4, s, t), f32] = mul(const(0.17677669, f32), sc)\n"
    "  p: Tensor[(b, 2, 4, s, t), f32] = softmax(scaled, axis=4)\n"
    "  y5: Tensor[(b, 2, 4, s, 32), f32] = matmul(p, v5)\n"
    "  y: Tensor[(b, 8, s, 32), f32] = reshape(y5, shape=[b, 8, s, 32])\n"
    "  return y\n"
    "}\n";
static const char *const gqa5_out =
    "fn @gqa5(q: Tensor[(b, 8, s, 32), f32], k: Tensor[(b, 2, t, 32), f32], v: Tensor[(b, 2, t, 32), f32]) -> Tensor[(b, 8, s, 32), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 8, s, 32), f32] = attention(q, k, v, scale=0.1767766922712326, causal=false, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* repeat_kv */
static const char *const repeat_kv_in =
    "fn @repeat_kv(q: Tensor[(b, 8, s, 32), f32], k: Tensor[(b, 2, t, 32), f32], v: Tensor[(b, 2, t, 32), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 8, s, 32), f32] {\n"
    "  k1: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(k, axes=[2])\n"
    "  k2: Tensor[(b, 2, 4, t, 32), f32] = broadcast_to(k1, shape=[b, 2, 4, t, 32])\n"
    "  k3: Tensor[(b, 8, t, 32), f32] = reshape(k2, shape=[b, 8, t, 32])\n"
    "  v1: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(v, axes=[2])\n"
    "  v2: Tensor[(b, 2, 4, t, 32), f32] = broadcast_to(v1, shape=[b, 2, 4, t, 32])\n"
    "  v3: Tensor[(b, 8, t, 32), f32] = reshape(v2, shape=[b, 8, t, 32])\n"
    "  qs: Tensor[(b, 8, s, 32), f32] = mul(q, const(0.5, f32))\n"
    "  sc: Tensor[(b, 8, s, t), f32] = matmul(qs, k3, transpose_b=true)\n"
    "  masked: Tensor[(b, 8, s, t), f32] = add(sc, m)\n"
    "  p: Tensor[(b, 8, s, t), f32] = softmax(masked, axis=3)\n"
    "  y: Tensor[(b, 8, s, 32), f32] = matmul(p, v3)\n"
    "  return y\n"
    "}\n";
static const char *const repeat_kv_out =
    "fn @repeat_kv(q: Tensor[(b, 8, s, 32), f32], k: Tensor[(b, 2, t, 32), f32], v: Tensor[(b, 2, t, 32), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 8, s, 32), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 8, s, 32), f32] = attention(q, k, v, m, scale=0.5, causal=false, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* rank3 */
static const char *const rank3_in =
    "fn @rank3(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 8), f32], c: Tensor[(s, t), bool]) -> Tensor[(b, 4, s, 8), f32] {\n"
    "  q3: Tensor[(b * 4, s, 16), f32] = reshape(q, shape=[b * 4, s, 16])\n"
    "  k3: Tensor[(b * 4, t, 16), f32] = reshape(k, shape=[b * 4, t, 16])\n"
    "  v3: Tensor[(b * 4, t, 8), f32] = reshape(v, shape=[b * 4, t, 8])\n"
    "  sc: Tensor[(b * 4, s, t), f32] = matmul(q3, k3, transpose_b=true)\n"
    "  masked: Tensor[(b * 4, s, t), f32] = where(c, sc, const(-inf, f32))\n"
    "  p: Tensor[(b * 4, s, t), f32] = softmax(masked, axis=2)\n"
    "  y3: Tensor[(b * 4, s, 8), f32] = matmul(p, v3)\n"
    "  y: Tensor[(b, 4, s, 8), f32] = reshape(y3, shape=[b, 4, s, 8])\n"
    "  return y\n"
    "}\n";
static const char *const rank3_out =
    "fn @rank3(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 8), f32], c: Tensor[(s, t), bool]) -> Tensor[(b, 4, s, 8), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 4, s, 8), f32] = attention(q, k, v, c, scale=1.0, causal=false, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";


/* sdpa: PyTorch's scaled_dot_product_attention as exported (q and k^T each scaled by sqrt(scale)) */
static const char *const sdpa_in =
    "fn @sdpa(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 16), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 4, s, 16), f32] {\n"
    "  kt: Tensor[(b, 4, 16, t), f32] = permute_dims(k, axes=[0, 1, 3, 2])\n"
    "  qs: Tensor[(b, 4, s, 16), f32] = mul(q, const(0.5, f32))\n"
    "  kts: Tensor[(b, 4, 16, t), f32] = mul(kt, const(0.5, f32))\n"
    "  sc: Tensor[(b, 4, s, t), f32] = matmul(qs, kts)\n"
    "  masked: Tensor[(b, 4, s, t), f32] = add(sc, m)\n"
    "  p: Tensor[(b, 4, s, t), f32] = softmax(masked, axis=-1)\n"
    "  y: Tensor[(b, 4, s, 16), f32] = matmul(p, v)\n"
    "  return y\n"
    "}\n";
static const char *const sdpa_out =
    "fn @sdpa(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 16), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 4, s, 16), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 4, s, 16), f32] = attention(q, k, v, m, scale=0.25, causal=false, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* sdpa_nan: torch.onnx's export of scaled_dot_product_attention with a mask: the probabilities'
 * NaN made 0 (where(p != p, 0, p)) — empty_nan=false, the op's default */
static const char *const sdpa_nan_in =
    "fn @sdpa_nan(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 16), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 4, s, 16), f32] {\n"
    "  sc0: Tensor[(b, 4, s, t), f32] = matmul(q, k, transpose_b=true)\n"
    "  sc: Tensor[(b, 4, s, t), f32] = mul(sc0, const(0.25, f32))\n"
    "  masked: Tensor[(b, 4, s, t), f32] = add(m, sc)\n"
    "  p: Tensor[(b, 4, s, t), f32] = softmax(masked, axis=3)\n"
    "  nan: Tensor[(b, 4, s, t), bool] = not_equal(p, p)\n"
    "  pz: Tensor[(b, 4, s, t), f32] = where(nan, const(0.0, f32), p)\n"
    "  y: Tensor[(b, 4, s, 16), f32] = matmul(pz, v)\n"
    "  return y\n"
    "}\n";
static const char *const sdpa_nan_out =
    "fn @sdpa_nan(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, t, 16), f32], v: Tensor[(b, 4, t, 16), f32], m: Tensor[(b, 1, s, t), f32]) -> Tensor[(b, 4, s, 16), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 4, s, 16), f32] = attention(q, k, v, m, scale=0.25, causal=false, empty_nan=false)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* sdpa_causal: PyTorch's scaled_dot_product_attention as exported (q and k^T each scaled by
 * sqrt(scale)), the ones of its triangle given by `ONES` */
#define SDPA_CAUSAL(ONES) \
    "fn @sdpa_causal(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, s, 16), f32], v: Tensor[(b, 4, s, 16), f32]) -> Tensor[(b, 4, s, 16), f32] {\n" \
    "  ones: Tensor[(s, s), f32] = " ONES "\n" \
    "  tri: Tensor[(s, s), f32] = tril(ones, k=[0])\n" \
    "  above: Tensor[(s, s), bool] = equal(tri, const(0.0, f32))\n" \
    "  m: Tensor[(s, s), f32] = where(above, const(-inf, f32), const(0.0, f32))\n" \
    "  kt: Tensor[(b, 4, 16, s), f32] = permute_dims(k, axes=[0, 1, 3, 2])\n" \
    "  qs: Tensor[(b, 4, s, 16), f32] = mul(q, const(0.5, f32))\n" \
    "  kts: Tensor[(b, 4, 16, s), f32] = mul(kt, const(0.5, f32))\n" \
    "  sc: Tensor[(b, 4, s, s), f32] = matmul(qs, kts)\n" \
    "  masked: Tensor[(b, 4, s, s), f32] = add(sc, m)\n" \
    "  p: Tensor[(b, 4, s, s), f32] = softmax(masked, axis=-1)\n" \
    "  y: Tensor[(b, 4, s, 16), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n"
static const char *const sdpa_causal_in = SDPA_CAUSAL("full(shape=[s, s], dtype=f32, value=1.0)");
/* as torch.onnx exports it without dynamo: the ones an Expand of a one-element Constant 1 */
static const char *const sdpa_expand_in = SDPA_CAUSAL("broadcast_to(const(1.0, f32), shape=[s, s])");
static const char *const sdpa_causal_out =
    "fn @sdpa_causal(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, s, 16), f32], v: Tensor[(b, 4, s, 16), f32]) -> Tensor[(b, 4, s, 16), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 4, s, 16), f32] = attention(q, k, v, scale=0.25, causal=true, empty_nan=true)\n"
    "    output y\n"
    "  }\n"
    "  return y\n"
    "}\n";

/* heads_split: heads split from a projection's rows (bshd), K^T as one permute_dims [0, 2, 3, 1], where(not(tril), -inf, S) and the result merged back: the transpositions go too */
static const char *const heads_split_in =
    "fn @heads_split(x: Tensor[(b, s, 192), f32]) -> Tensor[(b, s, 64), f32] {\n"
    "  qs: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[0], end=[64])\n"
    "  ks: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[64], end=[128])\n"
    "  vs: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[128], end=[192])\n"
    "  q4: Tensor[(b, s, 4, 16), f32] = reshape(qs, shape=[b, s, 4, 16])\n"
    "  k4: Tensor[(b, s, 4, 16), f32] = reshape(ks, shape=[b, s, 4, 16])\n"
    "  v4: Tensor[(b, s, 4, 16), f32] = reshape(vs, shape=[b, s, 4, 16])\n"
    "  q: Tensor[(b, 4, s, 16), f32] = permute_dims(q4, axes=[0, 2, 1, 3])\n"
    "  kt: Tensor[(b, 4, 16, s), f32] = permute_dims(k4, axes=[0, 2, 3, 1])\n"
    "  v: Tensor[(b, 4, s, 16), f32] = permute_dims(v4, axes=[0, 2, 1, 3])\n"
    "  sc: Tensor[(b, 4, s, s), f32] = matmul(q, kt)\n"
    "  scaled: Tensor[(b, 4, s, s), f32] = mul(sc, const(0.25, f32))\n"
    "  ones: Tensor[(s, s), bool] = full(shape=[s, s], dtype=bool, value=1.0)\n"
    "  tri: Tensor[(s, s), bool] = tril(ones, k=[0])\n"
    "  above: Tensor[(s, s), bool] = not(tri)\n"
    "  masked: Tensor[(b, 4, s, s), f32] = where(above, const(-inf, f32), scaled)\n"
    "  p: Tensor[(b, 4, s, s), f32] = softmax(masked, axis=3)\n"
    "  y: Tensor[(b, 4, s, 16), f32] = matmul(p, v)\n"
    "  yt: Tensor[(b, s, 4, 16), f32] = permute_dims(y, axes=[0, 2, 1, 3])\n"
    "  r: Tensor[(b, s, 64), f32] = reshape(yt, shape=[b, s, 64])\n"
    "  return r\n"
    "}\n";
static const char *const heads_split_out =
    "fn @heads_split(x: Tensor[(b, s, 192), f32]) -> Tensor[(b, s, 64), f32] {\n"
    "  dataflow {\n"
    "    qs: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[0], end=[64])\n"
    "    ks: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[64], end=[128])\n"
    "    vs: Tensor[(b, s, 64), f32] = strided_slice(x, axes=[2], begin=[128], end=[192])\n"
    "    q4: Tensor[(b, s, 4, 16), f32] = reshape(qs, shape=[b, s, 4, 16])\n"
    "    k4: Tensor[(b, s, 4, 16), f32] = reshape(ks, shape=[b, s, 4, 16])\n"
    "    v4: Tensor[(b, s, 4, 16), f32] = reshape(vs, shape=[b, s, 4, 16])\n"
    "    yt: Tensor[(b, s, 4, 16), f32] = attention(q4, k4, v4, scale=0.25, causal=true, empty_nan=true, layout=\"bshd\")\n"
    "    r: Tensor[(b, s, 64), f32] = reshape(yt, shape=[b, s, 64])\n"
    "    output r\n"
    "  }\n"
    "  return r\n"
    "}\n";

/* heads_given: the result transposed back but q, k, v given in (b, h, s, d): the op in bhsd at y, the transposition stays */
static const char *const heads_given_in =
    "fn @heads_given(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, s, 16), f32], v: Tensor[(b, 4, s, 16), f32]) -> Tensor[(b, s, 4, 16), f32] {\n"
    "  sc: Tensor[(b, 4, s, s), f32] = matmul(q, k, transpose_b=true)\n"
    "  p: Tensor[(b, 4, s, s), f32] = softmax(sc, axis=3)\n"
    "  y: Tensor[(b, 4, s, 16), f32] = matmul(p, v)\n"
    "  yt: Tensor[(b, s, 4, 16), f32] = permute_dims(y, axes=[0, 2, 1, 3])\n"
    "  return yt\n"
    "}\n";
static const char *const heads_given_out =
    "fn @heads_given(q: Tensor[(b, 4, s, 16), f32], k: Tensor[(b, 4, s, 16), f32], v: Tensor[(b, 4, s, 16), f32]) -> Tensor[(b, s, 4, 16), f32] {\n"
    "  dataflow {\n"
    "    y: Tensor[(b, 4, s, 16), f32] = attention(q, k, v, scale=1.0, causal=false, empty_nan=true)\n"
    "    yt: Tensor[(b, s, 4, 16), f32] = permute_dims(y, axes=[0, 2, 1, 3])\n"
    "    output yt\n"
    "  }\n"
    "  return yt\n"
    "}\n";

LOOM_TEST(attention_pass, gpt2_causal_bias_becomes_causal) { expect(gpt2_in, gpt2_out); }
LOOM_TEST(attention_pass, decode_with_past_keys_and_divided_scores) { expect(decode_in, decode_out); }
LOOM_TEST(attention_pass, rank5_grouped_query_reads_k_and_v_once) { expect(gqa5_in, gqa5_out); }
LOOM_TEST(attention_pass, repeat_kv_prescaled_q_and_data_mask) { expect(repeat_kv_in, repeat_kv_out); }
LOOM_TEST(attention_pass, rank3_views_and_where_minus_inf) { expect(rank3_in, rank3_out); }
LOOM_TEST(attention_pass, sdpa_export_scales_q_and_transposed_k) { expect(sdpa_in, sdpa_out); }
LOOM_TEST(attention_pass, sdpa_export_with_nan_made_zero) { expect(sdpa_nan_in, sdpa_nan_out); }
LOOM_TEST(attention_pass, sdpa_export_causal_where_mask) { expect(sdpa_causal_in, sdpa_causal_out); }
LOOM_TEST(attention_pass, sdpa_export_causal_mask_of_an_expanded_constant) { expect(sdpa_expand_in, sdpa_causal_out); }
LOOM_TEST(attention_pass, heads_split_from_rows_read_in_place) { expect(heads_split_in, heads_split_out); }
LOOM_TEST(attention_pass, heads_given_keep_the_transposition_after) { expect(heads_given_in, heads_given_out); }

/* Near misses: the pass leaves each function exactly as normalize made it. */
/* t < s: row i < s - t has no key on or below its diagonal, every score of the row is
 * score - 1e9, which f32 rounds to -1e9 (uniform weights) where the interpreter's attention adds
 * in double: the composed form itself is ill-conditioned there, so the numeric check leaves it out. */
#define T_BELOW_S \
    "fn @t_below_s(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, t, 8), f32], v: Tensor[(b, 2, t, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  ones: Tensor[(s, t), f32] = full(shape=[s, t], dtype=f32, value=1.0)\n" \
    "  tri: Tensor[(s, t), f32] = tril(ones, k=[t - s])\n" \
    "  sub1: Tensor[(s, t), f32] = sub(tri, const(1.0, f32))\n" \
    "  bias: Tensor[(s, t), f32] = mul(sub1, const(1e9, f32))\n" \
    "  sc: Tensor[(b, 2, s, t), f32] = matmul(q, k, transpose_b=true)\n" \
    "  masked: Tensor[(b, 2, s, t), f32] = add(sc, bias)\n" \
    "  p: Tensor[(b, 2, s, t), f32] = softmax(masked, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n"

/* The scores of q and k plus `bias`, softmax, times v: the tail of the near misses' masks. */
#define BIAS_SCORES \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  masked: Tensor[(b, 2, s, s), f32] = add(sc, bias)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(masked, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n"

#define NEAR \
    "fn @axis(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=2)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @small_fill(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  ones: Tensor[(s, s), f32] = full(shape=[s, s], dtype=f32, value=1.0)\n" \
    "  tri: Tensor[(s, s), f32] = tril(ones, k=[0])\n" \
    "  sub1: Tensor[(s, s), f32] = sub(tri, const(1.0, f32))\n" \
    "  bias: Tensor[(s, s), f32] = mul(sub1, const(100.0, f32))\n" \
    BIAS_SCORES \
    "fn @diag_k1(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  ones: Tensor[(s, s), f32] = full(shape=[s, s], dtype=f32, value=1.0)\n" \
    "  tri: Tensor[(s, s), f32] = tril(ones, k=[1])\n" \
    "  sub1: Tensor[(s, s), f32] = sub(tri, const(1.0, f32))\n" \
    "  bias: Tensor[(s, s), f32] = mul(sub1, const(1e9, f32))\n" \
    BIAS_SCORES \
    "fn @twos(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  twos: Tensor[(s, s), f32] = broadcast_to(const(2.0, f32), shape=[s, s])\n" \
    "  tri: Tensor[(s, s), f32] = tril(twos, k=[0])\n" \
    "  sub1: Tensor[(s, s), f32] = sub(tri, const(2.0, f32))\n" \
    "  bias: Tensor[(s, s), f32] = mul(sub1, const(1e9, f32))\n" \
    BIAS_SCORES \
    "fn @nan_to_one(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=3)\n" \
    "  nan: Tensor[(b, 2, s, s), bool] = not_equal(p, p)\n" \
    "  pz: Tensor[(b, 2, s, s), f32] = where(nan, const(1.0, f32), p)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(pz, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @finite_where(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32], c: Tensor[(b, 1, s, s), bool]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  masked: Tensor[(b, 2, s, s), f32] = where(c, sc, const(-3.4028234663852886e38, f32))\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(masked, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @probs_used(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tuple[Tensor[(b, 2, s, 8), f32], Tensor[(b, 2, s, s), f32]] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  out: Tuple[Tensor[(b, 2, s, 8), f32], Tensor[(b, 2, s, s), f32]] = (y, p)\n" \
    "  return out\n" \
    "}\n" \
    "fn @tensor_scale(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32], w: Tensor[(b, 2, s, s), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  scaled: Tensor[(b, 2, s, s), f32] = mul(sc, w)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(scaled, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @kt_given(q: Tensor[(b, 2, s, 8), f32], kt: Tensor[(b, 2, 8, s), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, kt)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @batch_bcast(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(1, 2, s, 8), f32], v: Tensor[(1, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @vt(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, 8, s), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = softmax(sc, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v, transpose_b=true)\n" \
    "  return y\n" \
    "}\n" \
    "fn @log_sm(q: Tensor[(b, 2, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Tensor[(b, 2, s, 8), f32] {\n" \
    "  sc: Tensor[(b, 2, s, s), f32] = matmul(q, k, transpose_b=true)\n" \
    "  p: Tensor[(b, 2, s, s), f32] = log_softmax(sc, axis=3)\n" \
    "  y: Tensor[(b, 2, s, 8), f32] = matmul(p, v)\n" \
    "  return y\n" \
    "}\n" \
    "fn @mask5(q: Tensor[(b, 8, s, 32), f32], k: Tensor[(b, 2, t, 32), f32], v: Tensor[(b, 2, t, 32), f32], m: Tensor[(b, 2, 4, s, t), f32]) -> Tensor[(b, 8, s, 32), f32] {\n" \
    "  q5: Tensor[(b, 2, 4, s, 32), f32] = reshape(q, shape=[b, 2, 4, s, 32])\n" \
    "  k5: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(k, axes=[2])\n" \
    "  v5: Tensor[(b, 2, 1, t, 32), f32] = expand_dims(v, axes=[2])\n" \
    "  sc: Tensor[(b, 2, 4, s, t), f32] = matmul(q5, k5, transpose_b=true)\n" \
    "  masked: Tensor[(b, 2, 4, s, t), f32] = add(sc, m)\n" \
    "  p: Tensor[(b, 2, 4, s, t), f32] = softmax(masked, axis=4)\n" \
    "  y5: Tensor[(b, 2, 4, s, 32), f32] = matmul(p, v5)\n" \
    "  y: Tensor[(b, 8, s, 32), f32] = reshape(y5, shape=[b, 8, s, 32])\n" \
    "  return y\n" \
    "}\n"

static const char *const near_in = NEAR T_BELOW_S;

/* The functions of near_in that keep their composed form. */
static const char *const untouched[] = {"axis", "nan_to_one", "finite_where", "probs_used", "tensor_scale", "kt_given",
                                        "batch_bcast", "vt", "log_sm", "mask5"};

/* The text of function `name` in a printed module (up to the next function). */
static char *func_text(const char *module, const char *name) {
  char head[64];
  snprintf(head, sizeof head, "fn @%s(", name);
  const char *a = strstr(module, head);
  cr_assert_not_null(a, "no @%s in\n%s", name, module);
  const char *e = strstr(a + 1, "\nfn @");
  return strndup(a, e ? (size_t)(e - a) : strlen(a));
}

LOOM_TEST(attention_pass, near_misses_are_left_alone) {
  size_t n;
  char *after = run(near_in, true, &n), *before = run(near_in, false, NULL);
  cr_assert_eq(n, 4, "%s", after); /* the four triangles below, as data masks */
  for (size_t i = 0; i < sizeof untouched / sizeof *untouched; i++) {
    char *a = func_text(after, untouched[i]), *b = func_text(before, untouched[i]);
    cr_assert_str_eq(a, b, "@%s changed", untouched[i]);
    free(a);
    free(b);
  }
  /* a fill of 100, tril with k = 1, t >= s not known, a triangle of twos: exact as an additive
   * mask, not causal */
  static const char *const as_mask[] = {"small_fill", "diag_k1", "t_below_s", "twos"};
  for (size_t i = 0; i < sizeof as_mask / sizeof *as_mask; i++) {
    char *a = func_text(after, as_mask[i]);
    cr_assert(strstr(a, "= attention(q, k, v, bias, scale=1.0, causal=false, empty_nan=true)") != NULL, "%s", a);
    cr_assert(strstr(a, "tril(") != NULL && strstr(a, "softmax") == NULL, "%s", a);
    free(a);
  }
  free(after);
  free(before);
}

/* The interpreter on the module before and after the pass: equal on 1, primes and random shapes
 * (rows a `where` masks completely are NaN both ways). */
static void numeric(const char *text) {
  loom_graph_module *m = pt_parse(text);
  cr_assert_null(loom_graph_normalize(m, NULL));
  loom_pipeline_check *c;
  cr_assert_null(loom_pipeline_check_begin(m, 4, 11, NULL, &c));
  cr_assert_gt(loom_pipeline_check_count(c), 0);
  size_t n;
  cr_assert_null(loom_graph_attention(m, &n));
  cr_assert_gt(n, 0);
  loom_status s = loom_pipeline_check_after(c, "attention");
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_pipeline_check_end(c);
  loom_graph_module_destroy(m);
}

LOOM_TEST(attention_pass, rewrites_keep_the_interpreters_results) {
  numeric(gpt2_in);
  numeric(decode_in);
  numeric(gqa5_in);
  numeric(repeat_kv_in);
  numeric(rank3_in);
  numeric(NEAR);
  numeric(sdpa_in);
  numeric(sdpa_nan_in);
  numeric(sdpa_causal_in);
  numeric(heads_split_in);
  numeric(heads_given_in);
}

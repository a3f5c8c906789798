/* test_serve_torch.c — transformers GPT-2 and Llama decoders exported by torch with past
 * key/values, served on the paged cache (graph/pass_serving.c, pass_serving_match.c;
 * docs/serve.md "ONNX"). tests/serve/data/torch_gpt2.onnx and torch_llama.onnx
 * (tests/serve/data/make_torch.py: 2 layers, width 64, vocabulary 256; Llama with 8 query heads
 * over 2 key/value heads and rotary positions) take input_ids (1, s), attention_mask (1, p + s)
 * and the past, and compute the positions (arange(p, p + s)), the causal + padding mask, the
 * attention scale (sqrt(sqrt(d)) on q and on k), the NaN guard after softmax and Llama's
 * repeat_kv inside the graph; torch_gpt2_dynamo.onnx and torch_llama_dynamo.onnx are the same
 * models through torch's dynamo exporter.
 *   - 6 concurrent greedy requests with prompts of 1 to 23 tokens (chunked prefill, paging and
 *     preemption: 16 pages of 4 slots, 16 tokens a step) must give (a) the reference
 *     interpreter's token-by-token greedy decode of the ORIGINAL ONNX model (attention_mask all
 *     ones, its present key/values fed back as the next step's past) and (b) ONNX Runtime's,
 *     written by make_torch.py to torch_tokens.txt;
 *   - variants of the GPT-2 import whose mask is not provably the causal mask of one unpadded
 *     sequence (a real use of the padding mask, keys and queries swapped, the mask used
 *     elsewhere) are refused with a message that names the binding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/file.h"
#include "base/strbuf.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "loom.h"
#include "serve/serve.h"
#include "serve_test_util.h"
#include "support/loom_test.h"

enum { NREQ = 6, STEPS = 8, VOCAB = 256, LAYERS = 2 };

static const int prompt_lens[NREQ] = {1, 23, 3, 11, 2, 17}; /* make_torch.py's PROMPT_LENS */

/* One exported model: its file, its key/value heads and head width, its name in
 * torch_tokens.txt. */
typedef struct torch_model {
  const char *path, *kind;
  int hk, dh;
} torch_model;

static const torch_model gpt2 = {"tests/serve/data/torch_gpt2.onnx", "gpt2", 4, 16};
static const torch_model llama = {"tests/serve/data/torch_llama.onnx", "llama", 2, 8};
static const torch_model gpt2_dynamo = {"tests/serve/data/torch_gpt2_dynamo.onnx", "gpt2_dynamo", 4, 16};
static const torch_model llama_dynamo = {"tests/serve/data/torch_llama_dynamo.onnx", "llama_dynamo", 2, 8};

static void make_prompt(int r, int64_t *p) { serve_test_prompt(r, prompt_lens[r], VOCAB, p); }

static loom_graph_module *load(const char *path) {
  char *bytes;
  size_t len;
  cr_assert_null(loom_file_read_limited(path, "model", LOOM_FILE_LIMIT_ONNX, &bytes, &len));
  loom_graph_module *m;
  loom_status st = loom_module_load_buffer(bytes, len, path, "onnx", &m);
  free(bytes);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  return m;
}

/* ---- the oracles ---- */

/* The interpreter's greedy decode of the original model: input_ids, attention_mask (ones),
 * past_<L>_k, past_<L>_v; the presents fed back. */
static void oracle_decode(loom_graph_module *m, const torch_model *tm, const int64_t *prompt, int n, int64_t *out) {
  loom_graph_value past[2 * LAYERS];
  int64_t pshape[4] = {1, tm->hk, 0, tm->dh};
  for (int i = 0; i < 2 * LAYERS; i++) cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, 4, pshape, &past[i]));
  int64_t done = 0, cur[64];
  int s = n;
  memcpy(cur, prompt, (size_t)n * sizeof *cur);
  for (int step = 0; step < STEPS; step++) {
    loom_graph_value args[2 + 2 * LAYERS];
    int64_t ishape[2] = {1, s}, mshape[2] = {1, done + s};
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, ishape, &args[0]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, mshape, &args[1]));
    for (int j = 0; j < s; j++) loom_graph_tensor_set_i64(&args[0].t, (size_t)j, cur[j]);
    for (int64_t k = 0; k < done + s; k++) loom_graph_tensor_set_i64(&args[1].t, (size_t)k, 1);
    for (int i = 0; i < 2 * LAYERS; i++) args[2 + i] = past[i];
    loom_graph_value res;
    loom_status st = loom_graph_eval(m, "main", 2 + 2 * LAYERS, args, NULL, &res);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    for (int i = 0; i < 2 + 2 * LAYERS; i++) loom_graph_value_free(&args[i]);
    int64_t best = serve_test_argmax_last(&res.items[0].t, s, VOCAB); /* logits (1, s, V) */
    out[step] = best;
    for (int i = 0; i < 2 * LAYERS; i++) cr_assert_null(loom_graph_value_copy(&res.items[1 + i], &past[i]));
    loom_graph_value_free(&res);
    done += s;
    s = 1;
    cur[0] = best;
  }
  for (int i = 0; i < 2 * LAYERS; i++) loom_graph_value_free(&past[i]);
}

/* ONNX Runtime's tokens for request r of model `kind`, from torch_tokens.txt ("kind r t0 .. t7"). */
static void ort_tokens(const char *kind, int r, int64_t *out) {
  char *text;
  size_t len;
  cr_assert_null(loom_file_read_limited("tests/serve/data/torch_tokens.txt", "tokens", LOOM_FILE_LIMIT_TEXT, &text, &len));
  char head[32];
  snprintf(head, sizeof head, "%s %d ", kind, r);
  const char *at = NULL;
  for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (!strncmp(p, head, strlen(head))) at = p + strlen(head);
  cr_assert_not_null(at, "no line '%s' in torch_tokens.txt", head);
  for (int s = 0; s < STEPS; s++) {
    char *end;
    out[s] = strtoll(at, &end, 10);
    cr_assert(end != at, "line '%s' has fewer than %d tokens", head, STEPS);
    at = end;
  }
  free(text);
}

/* ---- the engine ---- */

/* Serves the NREQ prompts concurrently (all submitted before any finishes). */
static void serve_all(const torch_model *tm, int64_t got[NREQ][STEPS]) {
  loom_serve_options o = {.model = tm->path, .threads = 2, .kv_pages = 16, .page_size = 4, .max_batch = 4,
                          .max_step_tokens = 16, .decode_step_tokens = 32, .max_queue = 64};
  loom_serve_engine *e;
  loom_status st = loom_serve_engine_open(&o, &e);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_eq(loom_serve_vocab(e), VOCAB);
  serve_test_greedy(e, NREQ, prompt_lens, VOCAB, STEPS, &got[0][0]);
  loom_serve_engine_close(e);
}

static void check_model(const torch_model *tm) {
  loom_graph_module *m = load(tm->path);
  int64_t want[NREQ][STEPS], ort[NREQ][STEPS];
  for (int r = 0; r < NREQ; r++) {
    int64_t prompt[64];
    make_prompt(r, prompt);
    oracle_decode(m, tm, prompt, prompt_lens[r], want[r]);
    ort_tokens(tm->kind, r, ort[r]);
  }
  loom_graph_module_destroy(m);
  static int64_t got[NREQ][STEPS];
  serve_all(tm, got);
  for (int r = 0; r < NREQ; r++)
    for (int s = 0; s < STEPS; s++) {
      cr_assert_eq(want[r][s], ort[r][s], "%s request %d (prompt of %d) token %d: interpreter %lld, ONNX Runtime %lld", tm->kind, r,
                   prompt_lens[r], s, (long long)want[r][s], (long long)ort[r][s]);
      cr_assert_eq(got[r][s], want[r][s], "%s request %d (prompt of %d) token %d: served %lld, interpreter on the ONNX %lld", tm->kind, r,
                   prompt_lens[r], s, (long long)got[r][s], (long long)want[r][s]);
    }
}

LOOM_TEST(serve_torch, served_gpt2_equals_interpreter_and_onnxruntime) { check_model(&gpt2); }

LOOM_TEST(serve_torch, served_llama_gqa_rotary_equals_interpreter_and_onnxruntime) { check_model(&llama); }

/* torch's dynamo exporter: the keys transposed through rank 3, the padding mask gathered with
 * gather_nd */
LOOM_TEST(serve_torch, served_dynamo_exports_equal_interpreter_and_onnxruntime) {
  check_model(&gpt2_dynamo);
  check_model(&llama_dynamo);
}

/* ---- what the rewrite finds, and what it refuses ---- */

/* The GPT-2 import as text, with every `from` replaced by `to`, parsed and rewritten: the
 * status; the rewritten module's text in *printed when accepted. */
static loom_status rewrite_variant(const char *from, const char *to, char **printed) {
  loom_graph_module *m = load(gpt2.path);
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  loom_graph_module_destroy(m);
  const char *base = loom_strbuf_cstr(&sb);
  loom_strbuf out;
  loom_strbuf_init(&out, NULL);
  const char *p = base;
  if (from) cr_assert_not_null(strstr(base, from), "'%s' is not in the import's text", from);
  for (const char *at; from && (at = strstr(p, from)); p = at + strlen(from)) {
    loom_strbuf_printf(&out, "%.*s%s", (int)(at - p), p, to);
  }
  loom_strbuf_printf(&out, "%s", p);
  loom_strbuf_free(&sb);
  const char *text = loom_strbuf_cstr(&out);
  loom_source src = {"variant.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_parse(&src, &dl, &m);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  loom_diag_list_destroy(&dl);
  loom_graph_serving_info info;
  st = loom_graph_serving_from_decoder(m, "variant.loom", &info);
  if (!st) {
    cr_assert_eq(info.layers, LAYERS);
    cr_assert_eq(info.position_rows, 128, "wpe's rows, found through the computed positions");
    loom_strbuf pr;
    loom_strbuf_init(&pr, NULL);
    loom_graph_print_module(m, &pr);
    if (printed) *printed = strdup(loom_strbuf_cstr(&pr));
    loom_strbuf_free(&pr);
    loom_diag_list_init(&dl, NULL);
    loom_status vs = loom_graph_verify(m, &dl);
    cr_assert_null(vs, "%s", loom_status_text(vs, 0));
    loom_diag_list_destroy(&dl);
  }
  loom_strbuf_free(&out);
  loom_graph_module_destroy(m);
  return st;
}

static void expect_refused(const char *from, const char *to, const char *needle) {
  serve_test_expect_refused(rewrite_variant(from, to, NULL), from, to, needle);
}

LOOM_TEST(serve_torch, rewrite_proves_the_mask_causal_and_refuses_a_real_padding_mask) {
  char *printed = NULL;
  loom_status st = rewrite_variant(NULL, NULL, &printed);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  /* the scale is the product of the two sqrt(sqrt(1/16)) = 0.5 factors; no mask, no past, no
   * attention_mask, no NaN guard, no arange is left */
  /* (the messages name the text looked for, not the module: a message of the whole printed
   * module would be too long for the test runner's pipe) */
  const char *pa = strstr(printed, "paged_attention(");
  cr_assert_not_null(pa, "no paged_attention in the rewritten module");
  cr_assert(strstr(printed, "scale=0.25"), "the scale is not 0.25: %.200s", pa);
  const char *gone[] = {"attention_mask", "past_0_k", "softmax", "where(", "arange(", "not_equal", "sym_tensor"};
  for (size_t i = 0; i < sizeof gone / sizeof *gone; i++) cr_assert_null(strstr(printed, gone[i]), "'%s' is left in the rewritten module", gone[i]);
  free(printed);
  /* the padding mask really used: a padded key (attention_mask 0) is masked, and the mask is
   * no longer provably causal once attention_mask is not all ones — here it is negated */
  expect_refused("_m_transformer_Cast_2_output_0: Tensor[(1, total), bool] = cast(_m_transformer_Reshape_1_output_0, dtype=bool)",
                 "_m_transformer_Cast_2_output_0: Tensor[(1, total), bool] = equal(_m_transformer_Reshape_1_output_0, const(0, i64))",
                 "the scores' mask is not proven causal: the mask's '_m_transformer_Cast_2_output_0' (equal) is not recognised");
  /* queries <= keys: not the causal mask */
  expect_refused("less_equal(_m_transformer_Unsqueeze_11_output_0, _m_transformer_Unsqueeze_8_output_0)",
                 "less_equal(_m_transformer_Unsqueeze_8_output_0, _m_transformer_Unsqueeze_11_output_0)",
                 "the mask's '_m_transformer_LessOrEqual_output_0' (less_equal) is not recognised");
  /* a mask that keeps the masked keys (where(C, 0, -1)): refused */
  expect_refused("@_m_transformer_h_0_attn_Constant_15_output_0)", "const(-1.0, f32))",
                 "at binding '_m_transformer_h_0_attn_MatMul_1_output_0', the scores are masked by a value computed in the graph that is not");
  /* attention_mask used by the hidden states: the binding is named */
  expect_refused("    _m_transformer_Cast_1_output_0: Tensor[(1, seq, 64), f32] = cast(_m_transformer_wpe_Gather_output_0, dtype=f32)",
                 "    am_f: Tensor[(1, total), f32] = cast(attention_mask, dtype=f32)\n"
                 "    am_s: Tensor[(1, 1), f32] = sum(am_f, axes=[1], keepdims=true)\n"
                 "    am_x: Tensor[(1, 1, 1), f32] = expand_dims(am_s, axes=[2])\n"
                 "    _m_transformer_Cast_1_output_0: Tensor[(1, seq, 64), f32] = mul(_m_transformer_wpe_Gather_output_0, am_x)",
                 "binding 'am_f' uses input 'attention_mask', which the serving form has no value for");
  /* positions not arange(p, p + s): arange(0, s) would count the tokens of every sequence of a
   * step, and is refused */
  expect_refused("_m_transformer_Add_output_0: Tensor[(seq,), i64] = add(_m_transformer_Range_output_0, _m_transformer_Gather_2_output_0)",
                 "_m_transformer_Add_output_0: Tensor[(seq,), i64] = add(_m_transformer_Range_output_0, _m_transformer_Range_output_0)",
                 "binding '_m_transformer_Range_output_0' has attribute 'end' with a symbolic dim other than the token axis");
}

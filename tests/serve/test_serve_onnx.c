/* test_serve_onnx.c — an ONNX decoder with past/present key/values served on the paged cache
 * (graph/pass_serving.c, docs/serve.md "ONNX"):
 *   - tests/serve/data/decoder.onnx (bench/serve/make_model.py --width 64 --heads 4 --layers 2
 *     --vocab 256: input_ids, position_ids, an additive mask, past_k<L> / past_v<L> ->
 *     logits, present_k<L> / present_v<L>) is opened by the engine, which rewrites it into the
 *     serving form; 8 concurrent greedy requests with prompts of 1 to 41 tokens (chunked
 *     prefill, paging and preemption happen: 24 pages of 4 slots, 24 tokens a step) must give
 *     (a) the reference interpreter's token-by-token greedy decode of the ORIGINAL ONNX model,
 *     feeding its present key/values back as the next step's past, and (b) the tokens of the
 *     `.loom` serving form (models/serve_decoder.loom) with the same weights
 *     (tests/serve/data/decoder.safetensors), served the same way;
 *   - decoders whose structure the rewrite does not recognise are refused with a message that
 *     names the input / binding / result (IR text modules in the ONNX import's shape);
 *   - the engine's --step-log: a line per step with its decodes, prompt tokens and their keys. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "graph/graph.h"
#include "graph/passes.h"
#include "graph/safetensors.h"
#include "loom.h"
#include "serve/serve.h"
#include "serve_test_util.h"
#include "support/loom_test.h"

static const char *const onnx_path = "tests/serve/data/decoder.onnx";
enum { NREQ = 8, STEPS = 8, VOCAB = 256, H = 4, DH = 16, LAYERS = 2 };

static const int prompt_lens[NREQ] = {1, 41, 3, 17, 2, 29, 8, 13};

static void make_prompt(int r, int64_t *p) { serve_test_prompt(r, prompt_lens[r], VOCAB, p); }

/* ---- the oracle: the interpreter on the original ONNX model, past/present fed back ---- */

static loom_graph_value tensor_f32(int ndim, const int64_t *shape) {
  loom_graph_value v;
  cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_F32, ndim, shape, &v));
  return v;
}

static void oracle_decode(loom_graph_module *m, const int64_t *prompt, int n, int steps, int64_t *out) {
  loom_graph_value past[2 * LAYERS];
  int64_t pshape[4] = {1, H, 0, DH};
  for (int i = 0; i < 2 * LAYERS; i++) past[i] = tensor_f32(4, pshape);
  int64_t done = 0; /* tokens in the past */
  int64_t cur[64];
  int s = n;
  memcpy(cur, prompt, (size_t)n * sizeof *cur);
  for (int step = 0; step < steps; step++) {
    /* input_ids, position_ids (1, s); mask (s, done + s) causal; past_k0, past_v0, ... */
    loom_graph_value args[3 + 2 * LAYERS];
    int64_t ishape[2] = {1, s}, mshape[2] = {s, done + s};
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, ishape, &args[0]));
    cr_assert_null(loom_graph_value_tensor(LOOM_DTYPE_I64, 2, ishape, &args[1]));
    args[2] = tensor_f32(2, mshape);
    for (int j = 0; j < s; j++) {
      loom_graph_tensor_set_i64(&args[0].t, (size_t)j, cur[j]);
      loom_graph_tensor_set_i64(&args[1].t, (size_t)j, done + j);
      for (int64_t k = 0; k < done + s; k++) loom_graph_tensor_set_f64(&args[2].t, (size_t)(j * (done + s) + k), k > done + j ? -1e9 : 0);
    }
    for (int i = 0; i < 2 * LAYERS; i++) args[3 + i] = past[i];
    loom_graph_value res;
    loom_status st = loom_graph_eval(m, "main", 3 + 2 * LAYERS, args, NULL, &res);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    for (int i = 0; i < 3 + 2 * LAYERS; i++) loom_graph_value_free(&args[i]);
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

/* ---- the engine ---- */

/* Serves the NREQ prompts concurrently (all submitted before any finishes) on `model`. */
static void serve_all(const char *model, const char *weights, int64_t got[NREQ][STEPS]) {
  loom_serve_options o = {.model = model, .weights = weights, .threads = 2, .kv_pages = 24, .page_size = 4, .max_batch = 6,
                          .max_step_tokens = 24, .decode_step_tokens = 32, .max_queue = 64};
  loom_serve_engine *e;
  loom_status st = loom_serve_engine_open(&o, &e);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_eq(loom_serve_vocab(e), VOCAB);
  cr_assert_eq(loom_serve_max_context(e), 24 * 4, "the context is the cache's (below the 1024 rows of wpe)");
  serve_test_greedy(e, NREQ, prompt_lens, VOCAB, STEPS, &got[0][0]);
  loom_serve_engine_close(e);
}

LOOM_TEST(serve_onnx, onnx_weights_are_its_initializers) {
  loom_serve_options o = {.model = onnx_path, .random_weights = true, .kv_pages = 4, .page_size = 4, .max_batch = 1, .max_step_tokens = 4,
                          .max_queue = 1};
  loom_serve_engine *e = NULL;
  loom_status st = loom_serve_engine_open(&o, &e);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_text(st, 0), "an ONNX model's weights are its initializers"), "%s", loom_status_text(st, 0));
  cr_assert_null(e);
  loom_status_free(st);
}

/* Opens the bundled decoder on `weights`; the error text (NULL: it opened). */
static char *open_error(const char *weights, bool random) {
  loom_serve_options o = {.model = "models/serve_decoder.loom", .weights = weights, .random_weights = random, .kv_pages = 4,
                          .page_size = 4, .max_batch = 1, .max_step_tokens = 4, .max_queue = 1};
  loom_serve_engine *e = NULL;
  loom_status st = loom_serve_engine_open(&o, &e);
  if (!st) {
    loom_serve_engine_close(e);
    return NULL;
  }
  char *text = strdup(loom_status_text(st, 0));
  loom_status_free(st);
  return text;
}

/* A .loom decoder's weights are bound as constants before compiling (docs/serve.md "Weights are
 * constants"): a weights file that lacks one, or holds one of another shape, and no weights at
 * all, are refused naming the weight. */
LOOM_TEST(serve_onnx, loom_weights_bound_as_constants_are_checked_by_name) {
  loom_safetensors *f;
  loom_status st = loom_safetensors_open(NULL, "tests/serve/data/decoder.safetensors", &f);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  size_t n = loom_safetensors_count(f);
  loom_safetensors_tensor *t = calloc(n, sizeof *t);
  cr_assert_not_null(t);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strcmp(loom_safetensors_at(f, i)->name, "w_o1")) t[k++] = *loom_safetensors_at(f, i);
  char path[] = "/tmp/loom-serve-weights-XXXXXX.safetensors";
  int fd = mkstemps(path, 12);
  cr_assert(fd >= 0);
  close(fd);
  st = loom_safetensors_write(path, k, t);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  char *err = open_error(path, false);
  cr_assert(err && strstr(err, "weight 'w_o1' is not in"), "%s", err ? err : "opened");
  free(err);
  /* w_o1 back, as a (32, 128) slice of w_fc1's bytes: the model wants (64, 64) */
  const loom_safetensors_tensor *fc = loom_safetensors_find(f, "w_fc1");
  int64_t dims[2] = {32, 128};
  t[k] = (loom_safetensors_tensor){.name = "w_o1", .dtype = LOOM_DTYPE_F32, .rank = 2, .dims = dims, .data = fc->data,
                                   .nbytes = 32 * 128 * sizeof(float)};
  st = loom_safetensors_write(path, k + 1, t);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  err = open_error(path, false);
  cr_assert(err && strstr(err, "weight 'w_o1' axis 0 is 32 in"), "%s", err ? err : "opened");
  cr_assert(strstr(err, "the model wants 64"), "%s", err);
  free(err);
  err = open_error(NULL, false);
  cr_assert(err && strstr(err, "has no value: give --weights FILE or --random-weights SEED"), "%s", err ? err : "opened");
  free(err);
  cr_assert_null(open_error(NULL, true), "random weights open");
  unlink(path);
  free(t);
  loom_safetensors_close(f);
}

LOOM_TEST(serve_onnx, served_onnx_equals_interpreter_and_loom_form) {
  char *bytes;
  size_t len;
  cr_assert_null(loom_file_read_limited(onnx_path, "model", LOOM_FILE_LIMIT_ONNX, &bytes, &len));
  loom_graph_module *m;
  loom_status st = loom_module_load_buffer(bytes, len, onnx_path, "onnx", &m);
  free(bytes);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  int64_t want[NREQ][STEPS];
  for (int r = 0; r < NREQ; r++) {
    int64_t prompt[64];
    make_prompt(r, prompt);
    oracle_decode(m, prompt, prompt_lens[r], STEPS, want[r]);
  }
  loom_graph_module_destroy(m);
  static int64_t got[NREQ][STEPS], got_loom[NREQ][STEPS];
  serve_all(onnx_path, NULL, got);
  serve_all("models/serve_decoder.loom", "tests/serve/data/decoder.safetensors", got_loom);
  for (int r = 0; r < NREQ; r++)
    for (int s = 0; s < STEPS; s++) {
      cr_assert_eq(got[r][s], want[r][s], "request %d (prompt of %d) token %d: served ONNX %lld, interpreter on the ONNX %lld", r,
                   prompt_lens[r], s, (long long)got[r][s], (long long)want[r][s]);
      cr_assert_eq(got[r][s], got_loom[r][s], "request %d (prompt of %d) token %d: served ONNX %lld, served .loom %lld", r,
                   prompt_lens[r], s, (long long)got[r][s], (long long)got_loom[r][s]);
    }
}

/* ---- refusals ---- */

/* A one-layer decoder in the shape the ONNX import gives (2 heads of 4, vocabulary 16, a
 * position table of 4 rows). */
#define Z8 "0, 0, 0, 0, 0, 0, 0, 0"
static const char *const base_text =
    "const @wpe: Tensor[(4, 8), f32] = [" Z8 ", " Z8 ", " Z8 ", " Z8 "]\n"
    "fn @main(input_ids: Tensor[(1, s), i64], position_ids: Tensor[(1, s), i64], mask: Tensor[(s, t), f32],\n"
    "         past_k0: Tensor[(1, 2, p, 4), f32], past_v0: Tensor[(1, 2, p, 4), f32]) -> Object {\n"
    "  dataflow {\n"
    "    wte = zeros(shape=[16, 8], dtype=f32)\n"
    "    wq = zeros(shape=[8, 8], dtype=f32)\n"
    "    wte_t = zeros(shape=[8, 16], dtype=f32)\n"
    "    tok = take(wte, input_ids, axis=0)\n"
    "    pe = take(@wpe, position_ids, axis=0)\n"
    "    h = add(tok, pe)\n"
    "    x = matmul(h, wq)\n"
    "    t0 = reshape(x, shape=[1, -1, 2, 4])\n"
    "    q = permute_dims(t0, axes=[0, 2, 1, 3])\n"
    "    pk = concat(past_k0, q, axis=2)\n"
    "    pv = concat(past_v0, q, axis=2)\n"
    "    kt = permute_dims(pk, axes=[0, 1, 3, 2])\n"
    "    s0 = matmul(q, kt)\n"
    "    s1 = mul(s0, const(0.5, f32))\n"
    "    sc = add(s1, mask)\n"
    "    pr = softmax(sc, axis=-1)\n"
    "    a = matmul(pr, pv)\n"
    "    a1 = permute_dims(a, axes=[0, 2, 1, 3])\n"
    "    a2 = reshape(a1, shape=[1, -1, 8])\n"
    "    logits = matmul(a2, wte_t)\n"
    "    out = (logits, pk, pv)\n"
    "    output out\n"
    "  }\n"
    "  return out\n"
    "}\n";

/* base_text with `from` replaced by `to` (once), parsed, rewritten: the status. */
static loom_status rewrite_variant(const char *from, const char *to, char **printed) {
  /* every occurrence of `from` replaced */
  char text[4096];
  size_t n = 0;
  const char *p = base_text;
  if (from) cr_assert_not_null(strstr(base_text, from), "'%s' is not in the base text", from);
  for (const char *at; from && (at = strstr(p, from)); p = at + strlen(from))
    n += (size_t)snprintf(text + n, sizeof text - n, "%.*s%s", (int)(at - p), p, to);
  snprintf(text + n, sizeof text - n, "%s", p);
  loom_source src = {"variant.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m;
  loom_status st = loom_graph_parse(&src, &dl, &m);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  loom_diag_list_destroy(&dl);
  loom_graph_serving_info info;
  st = loom_graph_serving_from_decoder(m, "variant.loom", &info);
  if (!st && printed) {
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_graph_print_module(m, &sb);
    *printed = strdup(loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    cr_assert_eq(info.layers, 1);
    cr_assert_eq(info.position_rows, 4);
    loom_diag_list_init(&dl, NULL);
    loom_status vs = loom_graph_verify(m, &dl);
    cr_assert_null(vs, "%s", loom_status_text(vs, 0));
    loom_diag_list_destroy(&dl);
    /* the text parses back (the added bindings' names do not clash with the import's t<N>) */
    loom_source src2 = {"printed.loom", *printed, strlen(*printed)};
    loom_graph_module *m2;
    loom_diag_list_init(&dl, NULL);
    vs = loom_graph_parse(&src2, &dl, &m2);
    cr_assert_null(vs, "%s\n%s", loom_status_text(vs, 0), *printed);
    loom_diag_list_destroy(&dl);
    loom_graph_module_destroy(m2);
  }
  loom_graph_module_destroy(m);
  return st;
}

static void expect_refused(const char *from, const char *to, const char *needle) {
  serve_test_expect_refused(rewrite_variant(from, to, NULL), from, to, needle);
}

LOOM_TEST(serve_onnx, rewrite_accepts_the_pattern_and_refuses_what_it_does_not_recognise) {
  char *printed = NULL;
  loom_status st = rewrite_variant(NULL, NULL, &printed);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert(strstr(printed, "paged_attention(") && strstr(printed, "scale=0.5") && strstr(printed, "k_cache0: Tensor[(n, pg, 2, 4), f32]") &&
                strstr(printed, "last_index: Tensor[(b,), i64]") && !strstr(printed, "past_k0") && !strstr(printed, "softmax"),
            "%s", printed);
  free(printed);
  /* the scale as a division, and transpose_b */
  st = rewrite_variant("s1 = mul(s0, const(0.5, f32))", "s1 = div(s0, const(2.0, f32))", &printed);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert(strstr(printed, "scale=0.5"), "%s", printed);
  free(printed);
  /* inputs */
  expect_refused("input_ids", "ids", "no input 'input_ids'");
  /* positions neither an input nor computed from the shapes: the binding using them is named */
  expect_refused("position_ids", "pos_ids", "binding 'pe' uses input 'pos_ids'");
  expect_refused("input_ids: Tensor[(1, s), i64]", "input_ids: Tensor[(2, s), i64]", "input 'input_ids' is not (1, s) i64");
  /* a past input used elsewhere than its concat: the binding and the input are named */
  expect_refused("    a1 = permute_dims(a,", "    bad = add(past_k0, past_k0)\n    a1 = permute_dims(a,", "binding 'bad' uses input 'past_k0'");
  /* the mask used elsewhere */
  expect_refused("    a1 = permute_dims(a,", "    bad = add(mask, mask)\n    a1 = permute_dims(a,", "binding 'bad' uses input 'mask'");
  /* an attention intermediate used elsewhere */
  expect_refused("    a1 = permute_dims(a,", "    bad = add(pr, pr)\n    a1 = permute_dims(a,", "binding 'bad' uses 'pr', an intermediate");
  /* a scale that is not a constant: no attention is recognised; the past is named */
  expect_refused("s1 = mul(s0, const(0.5, f32))", "s1 = mul(s0, s0)", "input 'past_k0' looks like a past key / value");
  /* operators along the token axis (they would mix the sequences of a step): refused; along
   * the last axis: accepted */
  expect_refused("logits = matmul(a2, wte_t)", "a3 = softmax(a2, axis=1)\n    logits = matmul(a3, wte_t)",
                 "binding 'a3' (softmax) may combine different tokens");
  expect_refused("logits = matmul(a2, wte_t)", "a3 = sum(a2, axes=[1], keepdims=true)\n    logits = matmul(a3, wte_t)",
                 "binding 'a3' (sum) may combine different tokens");
  expect_refused("logits = matmul(a2, wte_t)", "a3 = permute_dims(a2, axes=[0, 2, 1])\n    a4 = matmul(a3, a2)\n    logits = matmul(a2, wte_t)",
                 "binding 'a4' (matmul) may combine different tokens");
  st = rewrite_variant("logits = matmul(a2, wte_t)", "a3 = softmax(a2, axis=-1)\n    logits = matmul(a3, wte_t)", &printed);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  free(printed);
  /* a mask computed in the graph */
  expect_refused("sc = add(s1, mask)", "m2 = mul(mask, const(2.0, f32))\n    sc = add(s1, m2)",
                 "at binding 'a', the scores are masked by a value computed in the graph");
  /* the past after the new keys */
  expect_refused("pk = concat(past_k0, q, axis=2)", "pk = concat(q, past_k0, axis=2)", "input 'past_k0'");
  /* softmax over another axis */
  expect_refused("softmax(sc, axis=-1)", "softmax(sc, axis=2)", "input 'past_k0'");
  /* another result */
  expect_refused("out = (logits, pk, pv)", "out = (logits, pk, pv, h)", "result after the logits ('h')");
  /* no logits */
  expect_refused("out = (logits, pk, pv)", "out = (pk, pv)", "no result is the logits");
}

/* ---- --step-log ---- */

/* One request alone (prompt 5, 3 tokens): a prefill step of 5 prompt tokens reading
 * 1 + 2 + .. + 5 = 15 keys, then two decodes at contexts 5 and 6 reading 6 and 7 keys. */
LOOM_TEST(serve_onnx, step_log_has_a_line_per_step_with_its_tokens_and_keys) {
  char path[] = "/tmp/loom-step-log-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  loom_serve_options o = {.model = "models/serve_decoder.loom", .random_weights = true, .weight_seed = 7, .threads = 1, .kv_pages = 8,
                          .page_size = 4, .max_batch = 2, .max_step_tokens = 16, .decode_step_tokens = 32, .max_queue = 4,
                          .step_log = path};
  loom_serve_engine *e;
  loom_status st = loom_serve_engine_open(&o, &e);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  int len = 5;
  int64_t got[3];
  serve_test_greedy(e, 1, &len, 256, 3, got);
  loom_serve_engine_close(e);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  char line[256];
  cr_assert_not_null(fgets(line, sizeof line, f));
  cr_assert_str_eq(line, "# step_ms decodes decode_keys prompt_tokens prompt_keys\n");
  const long long want[3][4] = {{0, 0, 5, 15}, {1, 6, 0, 0}, {1, 7, 0, 0}};
  for (int i = 0; i < 3; i++) {
    double ms;
    long long v[4];
    cr_assert_not_null(fgets(line, sizeof line, f), "step %d is missing", i);
    cr_assert_eq(sscanf(line, "%lf %lld %lld %lld %lld", &ms, &v[0], &v[1], &v[2], &v[3]), 5, "step %d: '%s'", i, line);
    cr_assert_gt(ms, 0.0);
    for (int k = 0; k < 4; k++)
      cr_assert_eq(v[k], want[i][k], "step %d field %d: %lld, want %lld ('%s')", i, k + 2, v[k], want[i][k], line);
  }
  cr_assert_null(fgets(line, sizeof line, f), "one line per step: '%s'", line);
  fclose(f);
  unlink(path);
  /* a file that cannot be written is refused when the engine opens, naming it */
  o.step_log = "/nonexistent-loom-dir/steps.log";
  e = NULL;
  st = loom_serve_engine_open(&o, &e);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_text(st, 0), "--step-log /nonexistent-loom-dir/steps.log: cannot open it for writing"), "%s",
            loom_status_text(st, 0));
  cr_assert_null(e);
  loom_status_free(st);
}

/* test_e2e_torch_models.c — models of the families users bring (BERT, GPT-2 and Llama with a KV
 * cache, a T5 encoder, a ViT, a CNN of torchvision's ResNet / MobileNetV2 / EfficientNet blocks),
 * built with transformers / torchvision and exported by PyTorch's TorchScript and dynamo exporters
 * (models/torch_export/gen.py), each compiled ONCE with every dim symbolic and checked against
 * ONNX Runtime's outputs at every saved shape (C.in<k>.npy -> C.out<k>.npy), at 1 and 2 threads.
 * The signature must read as the exporter named the dims (`batch`, `seq`, `past`), not as an
 * internal expression. */
#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "e2e/e2e_util.h"
#include "graph/npy_io.h"

#define MAX_IO 16

/* Reads dir/case.<kind><k>.npy for k = 0, 1, ... while they exist; returns how many. */
static uint32_t read_all(const char *dir, const char *cs, const char *kind, loom_graph_tensor *out) {
  uint32_t n = 0;
  for (; n < MAX_IO; n++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.%s%u.npy", dir, cs, kind, n);
    if (access(path, R_OK) != 0) break;
    loom_status s = loom_graph_npy_read(path, &out[n]);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
  }
  cr_assert_gt(n, 0, "%s: no %s files for case %s", dir, kind, cs);
  return n;
}

/* The compiled main's parameters and result as text, e.g. "(batch, seq) ... -> (batch, seq, 64)". */
static void signature_text(const e2e_model *md, loom_strbuf *sb) {
  const loom_graph_func *f = loom_graph_module_find_func(md->ref, "main");
  cr_assert_not_null(f);
  for (size_t i = 0; i < f->nparams; i++) {
    loom_sinfo_print(f->params[i]->sinfo, sb);
    loom_strbuf_puts(sb, " ");
  }
  loom_strbuf_puts(sb, "-> ");
  loom_sinfo_print(f->ret, sb);
}

/* Compiles dir/model.onnx once and checks every case against ONNX Runtime's outputs. `want_sig`:
 * substrings the signature must hold (readable dims). */
static void check_model(const char *dir, const char *const *cases, size_t ncases, const char *const *want_sig,
                        double tol) {
  char path[512];
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  e2e_model md = e2e_compile(path);
  loom_strbuf sig;
  loom_strbuf_init(&sig, NULL);
  signature_text(&md, &sig);
  for (const char *const *w = want_sig; *w; w++)
    cr_assert(strstr(loom_strbuf_cstr(&sig), *w), "%s: the signature %s lacks %s", dir, loom_strbuf_cstr(&sig), *w);
  cr_assert_null(strstr(loom_strbuf_cstr(&sig), "max("), "%s: unreadable dims in %s", dir, loom_strbuf_cstr(&sig));
  cr_assert_null(strstr(loom_strbuf_cstr(&sig), "select("), "%s: unreadable dims in %s", dir, loom_strbuf_cstr(&sig));
  loom_strbuf_free(&sig);
  for (size_t c = 0; c < ncases; c++) {
    loom_graph_tensor ins[MAX_IO], want[MAX_IO];
    uint32_t nin = read_all(dir, cases[c], "in", ins), nout = read_all(dir, cases[c], "out", want);
    loom_tensor *args[MAX_IO];
    for (uint32_t i = 0; i < nin; i++) {
      cr_assert_null(loom_rt_tensor_new(md.rt, ins[i].dtype, ins[i].ndim, ins[i].shape, &args[i]));
      memcpy(args[i]->data, ins[i].data, ins[i].numel * loom_dtype_size(ins[i].dtype));
    }
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      loom_rt_outputs out;
      loom_status s = loom_rt_call(md.rt, "main", args, nin, &out);
      cr_assert_null(s, "%s %s: %s", dir, cases[c], loom_status_text(s, 0));
      cr_assert_eq(out.count, nout, "%s %s: %u outputs, ONNX Runtime gave %u", dir, cases[c], out.count, nout);
      for (uint32_t k = 0; k < nout; k++) {
        const loom_tensor *y = (const loom_tensor *)out.items[k];
        cr_assert_eq(y->dtype, want[k].dtype, "%s %s output %u: dtype", dir, cases[c], k);
        cr_assert_eq(y->rank, want[k].ndim, "%s %s output %u: rank %u, ONNX Runtime %d", dir, cases[c], k, y->rank,
                     want[k].ndim);
        for (int d = 0; d < want[k].ndim; d++)
          cr_assert_eq(y->shape[d], want[k].shape[d], "%s %s output %u axis %d: %lld, ONNX Runtime %lld", dir, cases[c],
                       k, d, (long long)y->shape[d], (long long)want[k].shape[d]);
        double scale = 0, worst = 0;
        loom_graph_tensor got = want[k];
        got.data = y->data;
        for (size_t e = 0; e < want[k].numel; e++) scale = fmax(scale, fabs(loom_graph_tensor_get_f64(&want[k], e)));
        for (size_t e = 0; e < want[k].numel; e++) {
          double a = loom_graph_tensor_get_f64(&got, e), b = loom_graph_tensor_get_f64(&want[k], e);
          cr_assert(isfinite(a), "%s %s output %u: element %zu is %g", dir, cases[c], k, e, a);
          worst = fmax(worst, fabs(a - b) / (scale > 0 ? scale : 1));
        }
        cr_assert_lt(worst, tol, "%s %s output %u, %u threads: relative error %g against ONNX Runtime", dir, cases[c],
                     k, threads, worst);
      }
      loom_rt_outputs_free(&out);
    }
    for (uint32_t i = 0; i < nin; i++) {
      loom_tensor_release(args[i]);
      loom_graph_tensor_free(&ins[i]);
    }
    for (uint32_t k = 0; k < nout; k++) loom_graph_tensor_free(&want[k]);
  }
  e2e_model_free(&md);
}

#define CASES(...) (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)
#define SIG(...) (const char *const[]){__VA_ARGS__, NULL}

/* BertModel (TorchScript exporter): padding mask, token types. */
LOOM_TEST(e2e_torch, bert_equals_onnx_runtime) {
  check_model("models/torch_export/bert", CASES("1x1", "1x7", "2x13", "3x64"), SIG("batch, seq"), 1e-5);
}

/* GPT2LMHeadModel with its KV cache (dynamo exporter): prefill with an empty cache (past = 0), decode
 * steps, left padding. */
LOOM_TEST(e2e_torch, gpt2_with_past_equals_onnx_runtime) {
  check_model("models/torch_export/gpt2_past", CASES("1x5p0", "2x1p9", "3x4p17", "1x1p64"), SIG("batch, seq", "past"),
              1e-5);
}

/* LlamaForCausalLM with grouped-query attention (8 query / 2 KV heads), RoPE and a KV cache
 * (TorchScript exporter). */
LOOM_TEST(e2e_torch, llama_gqa_with_past_equals_onnx_runtime) {
  check_model("models/torch_export/llama_past", CASES("1x5p0", "2x1p9", "3x4p17", "1x1p64"), SIG("batch, seq", "past"),
              1e-5);
}

/* T5EncoderModel (dynamo exporter): relative position buckets, RMS norm. */
LOOM_TEST(e2e_torch, t5_encoder_equals_onnx_runtime) {
  check_model("models/torch_export/t5_encoder", CASES("1x1", "1x9", "2x31", "3x130"), SIG("batch, seq"), 1e-5);
}

/* ViTModel at any image size: its position embeddings are bicubic-resized to the patch grid with
 * sizes computed from the input's shape, so the token count reads floordiv(h, 8)*floordiv(w, 8) + 1
 * (not a fresh symbol named after the Resize's output). */
LOOM_TEST(e2e_torch, vit_any_image_size_equals_onnx_runtime) {
  check_model("models/torch_export/vit", CASES("1x64x64", "2x57x43", "1x8x120"),
              SIG("batch, 3, h, w", "(batch, floordiv(h, 8)*floordiv(w, 8) + 1, 64)"), 1e-5);
}

/* torchvision's ResNet / MobileNetV2 / EfficientNet blocks, one compilation for every batch and
 * image size (odd and prime sizes included). */
LOOM_TEST(e2e_torch, cnn_blocks_equal_onnx_runtime) {
  check_model("models/torch_export/cnn", CASES("1x32x32", "2x57x43", "1x97x101", "3x64x64"), SIG("batch, 3, h, w"),
              1e-5);
}

/* test_e2e_models.c — every model in models/ compiled ONCE and run through the VM for a
 * sweep of shapes (0, 1, primes, larger), equal to the reference interpreter, within the
 * planned memory peak; the GPT-2-style decoder runs a prefill and then decode steps with a
 * growing KV cache on the same compiled module. */
#include <stdio.h>
#include <stdlib.h>

#include "e2e/e2e_util.h"

static void sweep(const char *path, const e2e_bind *sets, size_t nb, size_t nsets, bool positive, double tol) {
  e2e_model md = e2e_compile(path);
  for (size_t k = 0; k < nsets; k++) {
    e2e_io io = {0};
    double err = e2e_check(&md, "main", sets + k * nb, nb, positive, &io);
    cr_assert_lt(err, tol, "%s shape set %zu: relative error %g", path, k, err);
    cr_log_info("%s set %zu: worst relative error %.2g, allocated %zu of a planned %lld bytes", path, k, err, io.used,
                (long long)io.planned);
    e2e_io_free(&io);
  }
  e2e_model_free(&md);
}

LOOM_TEST(e2e, mlp_batch_sweep) {
  static const e2e_bind s[] = {{"b", 0}, {"b", 1}, {"b", 2}, {"b", 7}, {"b", 31}, {"b", 64}, {"b", 97}};
  sweep("models/mlp.loom", s, 1, sizeof s / sizeof s[0], false, 1e-4);
}

LOOM_TEST(e2e, gpt2_tiny_batch_and_sequence_sweep) {
  static const e2e_bind s[] = {{"b", 1}, {"s", 1}, {"b", 2}, {"s", 3},  {"b", 1}, {"s", 17},
                               {"b", 3}, {"s", 8}, {"b", 1}, {"s", 64}, {"b", 2}, {"s", 0}};
  sweep("tests/graph/corpus/gpt2_tiny.loom", s, 2, sizeof s / sizeof s[0] / 2, false, 1e-4);
}

LOOM_TEST(e2e, gpt2_small_block) {
  static const e2e_bind s[] = {{"b", 1}, {"s", 1}, {"b", 2}, {"s", 5}};
  sweep("models/gpt2_block.loom", s, 2, 2, false, 1e-4);
}

/* A transformer exported from PyTorch (models/tiny_transformer/gen.py): its Shape -> Gather ->
 * Concat -> Reshape chains were folded to symbolic dims at import, so one compiled module runs
 * every (batch, seq). */
LOOM_TEST(e2e, pytorch_exported_transformer_batch_and_sequence_sweep) {
  static const e2e_bind s[] = {{"batch", 1}, {"seq", 1}, {"batch", 2}, {"seq", 7},  {"batch", 3}, {"seq", 16},
                               {"batch", 1}, {"seq", 61}, {"batch", 2}, {"seq", 0}, {"batch", 5}, {"seq", 33}};
  sweep("models/tiny_transformer/model.onnx", s, 2, sizeof s / sizeof s[0] / 2, false, 1e-4);
}

LOOM_TEST(e2e, bert_block_with_padding_mask) {
  static const e2e_bind s[] = {{"b", 1}, {"s", 1}, {"b", 2}, {"s", 7}, {"b", 1}, {"s", 13}};
  sweep("models/bert_block.loom", s, 2, 3, false, 1e-4);
}

LOOM_TEST(e2e, llama_block_with_cache) {
  static const e2e_bind s[] = {{"b", 1}, {"s", 1}, {"past", 0}, {"b", 2}, {"s", 5}, {"past", 3}, {"b", 1}, {"s", 1}, {"past", 11}};
  sweep("models/llama_block.loom", s, 3, 3, false, 1e-4);
}

LOOM_TEST(e2e, resnet_image_sizes) {
  static const e2e_bind s[] = {{"n", 1}, {"h", 1}, {"w", 1}, {"n", 2}, {"h", 7}, {"w", 5}, {"n", 1}, {"h", 16}, {"w", 13}};
  sweep("models/resnet.loom", s, 3, 3, true, 1e-4);
}

/* Prefill at some length, then decode steps feeding the returned caches back, all on one
 * compiled module; every step equals the interpreter given the same cache. */
LOOM_TEST(e2e, gpt2_decoder_prefill_then_decode_with_growing_cache) {
  e2e_model md = e2e_compile("models/gpt2_decoder.loom");
  e2e_io prev = {0};
  int64_t past = 0;
  for (int step = 0; step < 4; step++) {
    int64_t s = step == 0 ? 5 : 1;
    e2e_bind b[] = {{"b", 1}, {"s", s}, {"past", past}, {"V", 11}, {"P", 16}};
    e2e_io io = {0};
    if (step > 0) {
      io.ngiven = 7; /* ids, wte, wpe fresh; past_k0, past_v0, past_k1, past_v1 from the last step */
      for (int i = 0; i < 4; i++) io.given[3 + i] = prev.out[1 + i];
    }
    double err = e2e_check(&md, "main", b, 5, false, &io);
    cr_assert_lt(err, 1e-4, "step %d (s = %lld, past = %lld): relative error %g", step, (long long)s, (long long)past, err);
    cr_assert_eq(io.out[1]->shape[2], past + s, "the returned cache holds past + s positions");
    e2e_io_free(&prev);
    prev = io;
    past += s;
  }
  e2e_io_free(&prev);
  e2e_model_free(&md);
}

/* A user kernel (libcall, C ABI through libffi) inside a compiled module: built here with cc,
 * called by CALLX with the VM's buffer/symbol layout, equal to the interpreter's call. */
LOOM_TEST(e2e, user_kernel_extern_in_a_compiled_module) {
  char dir[] = "/tmp/loom-uk-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  loom_test_proc p = loom_test_run("cc -O2 -shared -fPIC -o %s/scale_rows.so models/user_kernel/scale_rows.c && "
                                   "cp models/user_kernel/scale_rows.loom %s/", dir, dir);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  char path[128];
  snprintf(path, sizeof path, "%s/scale_rows.loom", dir);
  e2e_model md = e2e_compile(path);
  static const e2e_bind s[] = {{"n", 1}, {"m", 1}, {"n", 3}, {"m", 5}, {"n", 17}, {"m", 64}};
  for (size_t k = 0; k < 3; k++) {
    double err = e2e_check(&md, "main", s + 2 * k, 2, false, NULL);
    cr_assert_lt(err, 1e-6, "shape set %zu: relative error %g", k, err);
  }
  e2e_model_free(&md);
  p = loom_test_run("rm -rf %s", dir);
  loom_test_proc_free(&p);
}

/* Random shapes (seeded: LOOM_TEST_SEED): equal to the interpreter and within the planned peak. */
LOOM_TEST(e2e, gpt2_tiny_random_shapes_within_the_planned_peak) {
  loom_test_rng r = {loom_test_seed()};
  e2e_model md = e2e_compile("tests/graph/corpus/gpt2_tiny.loom");
  for (int k = 0; k < 8; k++) {
    e2e_bind b[] = {{"b", loom_test_rng_range(&r, 1, 4)}, {"s", loom_test_rng_range(&r, 0, 40)}};
    e2e_io io = {0};
    double err = e2e_check(&md, "main", b, 2, false, &io);
    cr_assert_lt(err, 1e-4, "b = %lld, s = %lld (seed %llu): relative error %g", (long long)b[0].value,
                 (long long)b[1].value, (unsigned long long)loom_test_seed(), err);
    cr_assert_leq(io.used, (size_t)io.planned);
    e2e_io_free(&io);
  }
  e2e_model_free(&md);
}

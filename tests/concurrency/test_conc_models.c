/* test_conc_models.c — real compiled models (JIT) called from 2-8 threads at once on ONE
 * runtime, over input sets of mixed shapes (0, 1, primes, larger) that the threads share,
 * every output equal bit for bit to the serial call's. Before the runtime was made safe
 * for this (issue 20) such runs deadlocked in the thread pool or returned wrong results;
 * conc_run_threads turns a hang into a failure instead of a stuck CI job. */
#include "concurrency/conc_util.h"

static const char *const B[] = {"b"};
static const char *const BS[] = {"b", "s"};

LOOM_TEST(concurrency, mlp_mixed_batches_2_4_8_threads) {
  static const int64_t batches[] = {0, 1, 2, 3, 7, 13, 31, 64, 97, 128};
  for (uint32_t pool = 2; pool <= 4; pool += 2) {
    conc_model m;
    conc_model_open(&m, "models/mlp.loom", pool);
    for (size_t i = 0; i < LOOM_ARRAY_LEN(batches); i++) conc_model_add_set(&m, B, &batches[i], 1);
    conc_model_reference(&m);
    for (uint32_t threads = 2; threads <= 8; threads *= 2) conc_hammer(&m, threads, 80, threads + 10 * pool);
    conc_model_close(&m);
  }
}

LOOM_TEST(concurrency, gpt2_block_mixed_shapes) {
  static const int64_t shapes[][2] = {{1, 1}, {1, 7}, {2, 5}, {1, 16}, {3, 2}, {2, 0}, {1, 13}};
  conc_model m;
  conc_model_open(&m, "models/gpt2_block.loom", 2);
  for (size_t i = 0; i < LOOM_ARRAY_LEN(shapes); i++) conc_model_add_set(&m, BS, shapes[i], 2);
  conc_model_reference(&m);
  conc_hammer(&m, 2, 20, 1);
  conc_hammer(&m, 4, 10, 2);
  /* a different pool: the reference is taken again at that thread count */
  cr_assert_null(loom_rt_set_threads(m.rt, 3));
  for (uint32_t k = 0; k < m.nsets; k++)
    for (uint32_t i = 0; i < m.sets[k].nout; i++) free(m.sets[k].out[i]);
  conc_model_reference(&m);
  conc_hammer(&m, 3, 10, 3);
  conc_model_close(&m);
}

/* Many small calls: the pool is entered and left thousands of times by several callers,
 * which is where a lost wake-up or a claim of another loop's chunk would show. */
LOOM_TEST(concurrency, gpt2_tiny_many_small_calls_8_threads) {
  static const int64_t shapes[][2] = {{1, 1}, {2, 3}, {1, 17}, {3, 8}, {1, 64}, {2, 0}, {5, 11}, {1, 2}};
  conc_model m;
  conc_model_open(&m, "tests/graph/corpus/gpt2_tiny.loom", 3);
  for (size_t i = 0; i < LOOM_ARRAY_LEN(shapes); i++) conc_model_add_set(&m, BS, shapes[i], 2);
  conc_model_reference(&m);
  conc_hammer(&m, 8, 150, 4);
  conc_hammer(&m, 5, 150, 5);
  conc_model_close(&m);
}

/* test_e2e_share.c — programs equal but for a constant extent share one kernel (graph/pass_share.c):
 * tests/e2e/data/share.loom has five matmul + bias + residual epilogue programs at K = 1, 2, 7,
 * 13, 31 (packed weights, one N) and one at K = 0 (not packed, a program of its own). Compiled,
 * they are two programs; the shared one, with K bound per call from the arguments' shapes, is
 * checked against the interpreter at rows 0, 1, 2, 5, 13, 17 and 1 and 2 threads. */
#include "e2e/e2e_util.h"
#include "graph/graph.h"

LOOM_TEST(e2e_share, matmuls_equal_but_for_k_share_one_kernel) {
  e2e_model md = e2e_compile("tests/e2e/data/share.loom");
  loom_graph_module *m = loom_compiled_module(md.c);
  cr_assert_eq(loom_graph_module_num_tps(m), 2, "%zu programs: the five packed matmuls are not one",
               loom_graph_module_num_tps(m));
  static const int64_t rows[] = {0, 1, 2, 5, 13, 17};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(rows); i++)
    for (uint32_t threads = 1; threads <= 2; threads++) {
      cr_assert_null(loom_rt_set_threads(md.rt, threads));
      e2e_bind b[1] = {{"n", rows[i]}};
      double err = e2e_check(&md, "main", b, 1, false, NULL);
      cr_assert_lt(err, 1e-4, "n = %lld, %u threads: relative error %g", (long long)rows[i], threads, err);
    }
  e2e_model_free(&md);
}

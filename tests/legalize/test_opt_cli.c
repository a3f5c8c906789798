/* test_opt_cli.c — `loom opt`: passes by name, print-after-all, timing, and misuse. */
#include <stdio.h>
#include <string.h>

#include "support/loom_test.h"

LOOM_TEST(opt_cli, legalize_and_classify_the_mlp) {
  loom_test_proc p = loom_test_run("%s opt models/mlp.loom --passes=legalize,classify --time", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "call_tp(@gelu_f32_f32_r2, (h,), Tensor[(b, 256), f32])") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "prim @softmax_f32_r2_a1(X: Buffer[(d0, d1), f32], Y: Buffer[(d0, d1), f32])") != NULL);
  cr_assert(strstr(p.out, "// @gelu_f32_f32_r2: elemwise") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "// pass legalize") != NULL);
  cr_assert(strstr(p.out, "h: Tensor[(b, 256), f32] = call_tp(@linear_f32_r2_bias, (x, w1, b1), Tensor[(b, 256), f32])") != NULL,
            "%s", p.out);
  cr_assert(strstr(p.out, "// legalize: 4 calls lowered, 0 kept as operators") == NULL, "report only with --print-after-all");
  loom_test_proc_free(&p);
}

LOOM_TEST(opt_cli, the_default_pipeline_schedules_and_the_result_reparses) {
  loom_test_proc p = loom_test_run("%s opt tests/graph/corpus/gpt2_tiny.loom --print-after-all > /tmp/loom-opt-all.txt && "
                                   "%s opt tests/graph/corpus/gpt2_tiny.loom > /tmp/loom-opt-gpt2.loom && %s check /tmp/loom-opt-gpt2.loom",
                                   loom_test_loom_bin(), loom_test_loom_bin(), loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("grep -c 'call_tp' /tmp/loom-opt-gpt2.loom; grep -c 'vectorize' /tmp/loom-opt-gpt2.loom; "
                    "grep -c '// schedule @' /tmp/loom-opt-all.txt; grep -cE '= (reshape|squeeze|expand_dims|flatten)[(]' "
                    "/tmp/loom-opt-gpt2.loom; grep -cE '^    [A-Za-z0-9_]+: ' /tmp/loom-opt-gpt2.loom");
  int calls = 0, vec = 0, sched = 0, views = 0, bindings = 0;
  cr_assert_eq(sscanf(p.out, "%d %d %d %d %d", &calls, &vec, &sched, &views, &bindings), 5, "%s", p.out);
  cr_assert_eq(calls + views, bindings, "every binding of the GPT-2 block is lowered or a view (%d + %d of %d)", calls,
               views, bindings);
  cr_assert_eq(views, 2, "the block's reshapes stay views (q, k and v split into heads: one view of the projection's rows)");
  /* 28 calls after legalize; fuse merges the scale and the causal mask into one call and the
   * bias adds into their consumers, and those elementwise readers (bias, GELU, residual, the
   * scaled causal mask of q k^T) into the matmuls' output loops, and the q, k and v slices into
   * their transpositions (simplify's views before copies; docs/passes.md). */
  cr_assert_eq(calls, 13, "the fused block makes 13 calls");
  cr_assert_gt(vec, 0, "some loops are vectorised");
  cr_assert_gt(sched, 10, "each program reports its schedule");
  loom_test_proc_free(&p);
}

LOOM_TEST(opt_cli, print_after_all_prints_each_stage) {
  loom_test_proc p = loom_test_run("%s opt models/mlp.loom --passes=legalize --print-after-all", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "// ---- after legalize ----") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
}

LOOM_TEST(opt_cli, the_output_parses_back) {
  loom_test_proc p = loom_test_run("%s opt models/mlp.loom --passes=legalize > /tmp/loom-opt-out.loom && %s check /tmp/loom-opt-out.loom",
                                   loom_test_loom_bin(), loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  loom_test_proc_free(&p);
}

LOOM_TEST(opt_cli, misuse_and_bad_files) {
  loom_test_proc p = loom_test_run("%s opt models/mlp.loom --passes=legalize,frobnicate", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 2);
  cr_assert(strstr(p.err, "unknown pass 'frobnicate'; passes: legalize schedule classify offload normalize fold cse dce simplify fuse") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s opt /nonexistent.loom", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "cannot open '/nonexistent.loom'") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("printf 'fn @main(x: Tensor[(n,), f32]) -> Object {\\n  return y\\n}\\n' > /tmp/loom-bad.loom && %s opt /tmp/loom-bad.loom",
                    loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 1);
  cr_assert(strstr(p.err, "/tmp/loom-bad.loom:2:") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
}

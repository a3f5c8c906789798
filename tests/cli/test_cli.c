/* test_cli.c — the `loom` and `loom-run` programs: version, help, misuse (exit 2). */
#include <string.h>

#include "support/loom_test.h"

LOOM_TEST(cli, version_reports_build_llvm_and_cuda) {
  loom_test_proc p = loom_test_run("%s --version", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "stderr: %s", p.err);
  cr_assert(strstr(p.out, "loom ") == p.out, "%s", p.out);
  cr_assert(strstr(p.out, "\nbuild: ") != NULL);
  cr_assert(strstr(p.out, "\nllvm: 19.") != NULL, "%s", p.out);
  cr_assert(strstr(p.out, "\ncuda: ") != NULL);
  loom_test_proc_free(&p);
}

LOOM_TEST(cli, help_lists_commands) {
  loom_test_proc p = loom_test_run("%s --help", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0);
  cr_assert(strstr(p.out, "selfcheck") != NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s version --help", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0);
  cr_assert(strstr(p.out, "usage: loom version") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
}

LOOM_TEST(cli, misuse_exits_2_with_a_message) {
  const char *cases[][2] = {
      {"", "usage: loom COMMAND"},
      {"frobnicate", "unknown command 'frobnicate'"},
      {"--frobnicate", "unknown option '--frobnicate'"},
      {"version --bogus", "unknown option '--bogus'"},
      {"version extra", "unexpected argument 'extra'"},
      {"selfcheck --x=1", "unknown option '--x'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    loom_test_proc p = loom_test_run("%s %s", loom_test_loom_bin(), cases[i][0]);
    cr_assert_eq(p.exit_code, 2, "'%s' exited %d", cases[i][0], p.exit_code);
    cr_assert_str_empty(p.out, "nothing on stdout for '%s'", cases[i][0]);
    cr_assert(strstr(p.err, cases[i][1]) != NULL, "'%s': stderr was: %s", cases[i][0], p.err);
    loom_test_proc_free(&p);
  }
}

LOOM_TEST(cli, selfcheck_passes) {
  loom_test_proc p = loom_test_run("%s selfcheck", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s%s", p.out, p.err);
  cr_assert(strstr(p.out, " 0 failed") != NULL);
  loom_test_proc_free(&p);
}

LOOM_TEST(cli, loom_run_version_and_misuse) {
  loom_test_proc p = loom_test_run("%s --version", loom_test_loom_run_bin());
  cr_assert_eq(p.exit_code, 0);
  cr_assert(strstr(p.out, "no compiler linked") != NULL);
  loom_test_proc_free(&p);
  p = loom_test_run("%s", loom_test_loom_run_bin());
  cr_assert_eq(p.exit_code, 2);
  cr_assert(strstr(p.err, "missing argument") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s model.so --fn", loom_test_loom_run_bin());
  cr_assert_eq(p.exit_code, 2);
  cr_assert(strstr(p.err, "needs a value") != NULL, "%s", p.err);
  loom_test_proc_free(&p);
}

/* scripts/check-layers (docs/architecture.md section 1): this tree passes; a tree with a folder
 * cycle, and one where vm/ includes a compiler header, fail naming the file and line. */
LOOM_TEST(cli, check_layers_passes_here_and_fails_on_a_cycle_or_a_vm_include) {
  loom_test_proc p = loom_test_run("scripts/check-layers");
  cr_assert_eq(p.exit_code, 0, "stdout: %s\nstderr: %s", p.out, p.err);
  cr_assert(strstr(p.out, "no cycle") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
  p = loom_test_run("scripts/check-layers --self-test");
  cr_assert_eq(p.exit_code, 0, "stdout: %s", p.out);
  loom_test_proc_free(&p);
  const char *trees[][2] = {
      {"mkdir -p $d/src/base $d/graph && echo '#include \"graph/g.h\"' > $d/src/base/b.h && "
       "echo '#include \"base/b.h\"' > $d/graph/g.h",
       "folder cycle: graph -> src/base -> graph"},
      {"mkdir -p $d/vm $d/tensorprog && echo '#include <stdint.h>' > $d/tensorprog/tp_ir.h && "
       "printf '#include <stdio.h>\\n#include \"tensorprog/tp_ir.h\"\\n' > $d/vm/interp.c",
       "vm/interp.c:2: vm/ includes \"tensorprog/tp_ir.h\""},
  };
  for (size_t i = 0; i < sizeof trees / sizeof trees[0]; i++) {
    p = loom_test_run("d=$(mktemp -d) && %s && scripts/check-layers --root $d; rc=$?; rm -rf $d; exit $rc", trees[i][0]);
    cr_assert_eq(p.exit_code, 1, "tree %zu exited %d: %s", i, p.exit_code, p.err);
    cr_assert(strstr(p.err, trees[i][1]) != NULL, "tree %zu: stderr was: %s", i, p.err);
    loom_test_proc_free(&p);
  }
}

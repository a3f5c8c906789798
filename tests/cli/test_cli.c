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

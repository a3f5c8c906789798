/* test_sym_cli.c — `loom sym simplify | prove | eval`, through the sanitized loom. */
#include <string.h>

#include "support/loom_test.h"

static void expect(const char *args, int code, const char *out, const char *err) {
  loom_test_proc p = loom_test_run("%s sym %s", loom_test_loom_bin(), args);
  cr_assert_eq(p.exit_code, code, "'%s' exited %d\nstdout: %s\nstderr: %s", args, p.exit_code, p.out, p.err);
  if (out) cr_assert_str_eq(p.out, out, "'%s' stdout", args);
  if (err) cr_assert(strstr(p.err, err) != NULL, "'%s' stderr was: %s", args, p.err);
  loom_test_proc_free(&p);
}

LOOM_TEST(symbolic_cli, simplify) {
  expect("simplify 'floordiv(4*n + 8, 4)'", 0, "n + 2\n", NULL);
  expect("simplify 'n*4 + floordiv(m, 2)'", 0, "4*n + floordiv(m, 2)\n", NULL);
  expect("simplify 'min(s, 4096)'", 0, "min(s, 4096)\n", NULL);
  expect("simplify 'min(s, 4096)' --assume 's <= 4096'", 0, "s\n", NULL);
  expect("simplify 'floordiv(n, 8)' --assume 'n <= 7'", 0, "0\n", NULL);
  expect("simplify 'max(n, n + 1)'", 0, "n + 1\n", NULL);
}

LOOM_TEST(symbolic_cli, prove) {
  expect("prove 'n < n + 1'", 0, "true\n", NULL);
  expect("prove 'n + 1 <= n'", 0, "false\n", NULL);
  expect("prove 'n <= m'", 0, "unknown\n", NULL);
  expect("prove 'n <= m' --assume 'm == n'", 0, "true\n", NULL);
  expect("prove 'floormod(n, 4) == 0' --assume 'n % 8 == 0'", 0, "true\n", NULL);
  /* issue 22's examples: the prover splits cases on min / max and select */
  expect("prove 'min(a, b) + max(a, b) == a + b'", 0, "true\n", NULL);
  expect("prove 'max(n, select(n == 1, 1, n)) == n'", 0, "true\n", NULL);
  expect("prove 'min(a, b) + max(a, b) < a + b'", 0, "false\n", NULL);
}

LOOM_TEST(symbolic_cli, eval) {
  expect("eval '2*n + floordiv(m, 2)' n=3 m=5", 0, "8\n", NULL);
  expect("eval 'n*4 + floordiv(m, 2)' n=3 m=5", 0, "14\n", NULL);
  expect("eval 'min(s, 4096)' s=5000", 0, "4096\n", NULL);
}

LOOM_TEST(symbolic_cli, bad_expressions_exit_1_with_a_caret) {
  expect("simplify 'n +* 2'", 1, "", "<expr>:1:4: error: unexpected '*': expected an expression\n  n +* 2\n     ^");
  expect("simplify 'floordiv(n, 0)'", 1, "", "division by zero: floordiv(n, 0)");
  expect("eval 'n*n' n=4000000000", 1, "", "int64 overflow evaluating 'n*n' with n = 4000000000");
  expect("eval 'floordiv(n, m)' n=3 m=0", 1, "", "division by zero evaluating 'floordiv(n, m)' with n = 3, m = 0");
  expect("eval 'n + k' n=3", 1, "", "unbound symbolic variable 'k'");
  expect("simplify n --assume 'n >='", 1, "", "<fact>:1:5: error: expected an expression");
  expect("simplify n --assume 'n >= 5' --assume 'n <= 2'", 1, "", "contradictory facts");
}

LOOM_TEST(symbolic_cli, misuse_exits_2) {
  expect("", 2, "", "missing argument");
  expect("frob x", 2, "", "unknown verb 'frob'");
  expect("simplify", 2, "", "missing argument EXPR");
  expect("simplify n m", 2, "", "unexpected argument 'm'");
  expect("eval n n=x", 2, "", "bad binding 'n=x'");
  expect("eval n --assume 'n >= 1'", 2, "", "--assume is for simplify and prove");
  expect("simplify n --bogus", 2, "", "unknown option '--bogus'");
}

/* test_cli_plugins.c — passes outside the tree (src/loom_pass.h, docs/passes.md): the example
 * plugin (examples/passes/twice_to_add.c) loaded by `loom opt --load-pass`, run in the pass
 * manager with the verifier and the numeric check, its result compiled; a pipeline stopped
 * after the plugin's pass and resumed from the printed text gives the same module; broken
 * plugins are refused with the file named, and a wrong rewrite is caught naming its pass.
 * The libraries are built by `zig build test` into LOOM_PLUGIN_DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/loom_test.h"

static const char *plugin(const char *name, char *buf, size_t cap) {
  const char *dir = getenv("LOOM_PLUGIN_DIR");
  cr_assert(dir && *dir, "LOOM_PLUGIN_DIR is not set (zig build test sets it)");
  snprintf(buf, cap, "%s/lib%s.so", dir, name);
  cr_assert_eq(access(buf, R_OK), 0, "%s is not built", buf);
  return buf;
}

#define EXAMPLE "examples/passes/twice.loom"

static void expect_ok(const loom_test_proc *p) {
  cr_assert_eq(p->exit_code, 0, "exit %d\nstdout: %s\nstderr: %s", p->exit_code, p->out, p->err);
}

static void expect_has(const char *text, const char *want, const char *what) {
  cr_assert(strstr(text, want), "%s lacks '%s':\n%s", what, want, text);
}

LOOM_TEST(cli_plugins, the_example_pass_rewrites_is_checked_and_compiles) {
  char lib[512];
  plugin("loom_example_passes", lib, sizeof lib);
  loom_test_proc p = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_add,dce --check-passes",
                                   loom_test_loom_bin(), lib);
  expect_ok(&p);
  expect_has(p.out, "d: Tensor[(b, n), f32] = add(x, x)", "stdout");
  expect_has(p.out, "f: Tensor[(b, n), f32] = add(e, e)", "stdout");
  expect_has(p.out, "h: Tensor[(n,), f32] = add(r, r)", "stdout");
  expect_has(p.out, "k: Tensor[(n,), f32] = mul(h, const(3.0, f32))", "stdout");
  expect_has(p.err, "twice_to_add: d = add(x, x) instead of a multiplication by 2", "stderr");
  expect_has(p.err, "twice_to_add: f = add(e, e) instead", "stderr");
  loom_test_proc_free(&p);
  /* printed and timed like a built-in pass; then the rest of the pipeline through codegen */
  p = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_add,legalize,fuse,schedule,memplan,lower,codegen"
                    " --print-after-all --time",
                    loom_test_loom_bin(), lib);
  expect_ok(&p);
  expect_has(p.out, "// ---- after twice_to_add ----", "stdout");
  expect_has(p.out, "// pass twice_to_add", "stdout");
  expect_has(p.out, "// ---- after codegen ----", "stdout");
  loom_test_proc_free(&p);
}

LOOM_TEST(cli_plugins, a_pipeline_stopped_after_the_plugin_and_resumed_from_text_gives_the_same_module) {
  char lib[512], mid[] = "/tmp/loom-plugin-XXXXXX";
  plugin("loom_example_passes", lib, sizeof lib);
  int fd = mkstemp(mid);
  cr_assert_geq(fd, 0);
  close(fd);
  loom_test_proc whole = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_add,dce,legalize,fuse,schedule",
                                       loom_test_loom_bin(), lib);
  expect_ok(&whole);
  loom_test_proc first = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_add > %s",
                                       loom_test_loom_bin(), lib, mid);
  expect_ok(&first);
  loom_test_proc rest = loom_test_run("%s opt %s --passes=dce,legalize,fuse,schedule", loom_test_loom_bin(), mid);
  expect_ok(&rest);
  cr_assert_str_eq(rest.out, whole.out, "resumed from the text after twice_to_add, the module differs");
  loom_test_proc_free(&whole);
  loom_test_proc_free(&first);
  loom_test_proc_free(&rest);
  unlink(mid);
}

LOOM_TEST(cli_plugins, a_wrong_rewrite_is_caught_by_the_numeric_check_naming_the_pass) {
  char lib[512];
  plugin("loom_test_plugin_wrong", lib, sizeof lib);
  loom_test_proc p = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_square --check-passes",
                                   loom_test_loom_bin(), lib);
  cr_assert_eq(p.exit_code, 1, "exit %d\nstdout: %s\nstderr: %s", p.exit_code, p.out, p.err);
  expect_has(p.err, "twice_to_square", "stderr");
  loom_test_proc_free(&p);
}

LOOM_TEST(cli_plugins, broken_plugins_are_refused_naming_the_file) {
  static const struct {
    const char *lib, *want;
  } cases[] = {
      {"loom_test_plugin_abi", "built for pass interface 999, this Loom has 1"},
      {"loom_test_plugin_taken", "a pass named 'dce' exists already (built in)"},
      {"loom_test_plugin_noentry", "no function 'loom_pass_plugin_v1'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char lib[512];
    plugin(cases[i].lib, lib, sizeof lib);
    loom_test_proc p = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize", loom_test_loom_bin(), lib);
    cr_assert_eq(p.exit_code, 1, "%s: exit %d\nstderr: %s", cases[i].lib, p.exit_code, p.err);
    expect_has(p.err, cases[i].want, "stderr");
    expect_has(p.err, lib, "stderr");
    loom_test_proc_free(&p);
  }
  loom_test_proc p = loom_test_run("%s opt " EXAMPLE " --load-pass /nonexistent/libnone.so", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 1, "exit %d\nstderr: %s", p.exit_code, p.err);
  expect_has(p.err, "pass plugin /nonexistent/libnone.so: cannot load", "stderr");
  loom_test_proc_free(&p);
  /* a loaded pass is listed with the built-in ones when a name is unknown */
  char lib[512];
  plugin("loom_example_passes", lib, sizeof lib);
  p = loom_test_run("%s opt " EXAMPLE " --load-pass %s --passes=normalize,twice_to_ad", loom_test_loom_bin(), lib);
  cr_assert_eq(p.exit_code, 2, "exit %d\nstderr: %s", p.exit_code, p.err);
  expect_has(p.err, "unknown pass 'twice_to_ad'", "stderr");
  expect_has(p.err, " twice_to_add", "stderr");
  loom_test_proc_free(&p);
}

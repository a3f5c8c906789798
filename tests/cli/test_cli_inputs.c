/* test_cli_inputs.c — no input hangs or crashes `loom` / `loom-run`: files that are not
 * regular files, negative dims, contradictory flags, out-of-range indices in the data. Each
 * gets exit 1 and a message naming what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/npy.h"
#include "support/loom_test.h"

/* Runs `loom ARGS` (or loom-run when run_tool) and checks exit 1 with `needle` on stderr. */
static void fails(bool run_tool, const char *args, const char *needle) {
  loom_test_proc p = loom_test_run("timeout 60 %s %s", run_tool ? loom_test_loom_run_bin() : loom_test_loom_bin(), args);
  cr_assert_eq(p.exit_code, 1, "'%s' exited %d: %s", args, p.exit_code, p.err);
  cr_assert(strstr(p.err, needle) != NULL, "'%s': expected '%s' in: %s", args, needle, p.err);
  loom_test_proc_free(&p);
}

static char *temp_dir(void) {
  char *d = strdup("/tmp/loom-cli-XXXXXX");
  cr_assert(mkdtemp(d) != NULL);
  return d;
}

static void remove_dir(char *d) {
  loom_test_proc p = loom_test_run("rm -rf %s", d);
  loom_test_proc_free(&p);
  free(d);
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert(f != NULL);
  fputs(text, f);
  fclose(f);
}

LOOM_TEST(cli_inputs, files_that_are_not_regular_are_refused_before_reading) {
  /* /dev/zero read forever (11.7 GB in 10 s) before this check */
  fails(false, "check /dev/zero", "'/dev/zero' is not a regular file (a character device): refusing to read it as a module");
  fails(false, "compile /dev/zero -o /tmp/x.so", "'/dev/zero' is not a regular file");
  fails(false, "check tests", "'tests' is not a regular file (a directory)");
  char *dir = temp_dir(), fifo[200], onnx[200];
  snprintf(fifo, sizeof fifo, "%s/m.loom", dir);
  snprintf(onnx, sizeof onnx, "%s/m.onnx", dir);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(mkfifo(onnx, 0600), 0);
  char args[300];
  snprintf(args, sizeof args, "check %s", fifo);
  fails(false, args, "is not a regular file (a pipe)");
  snprintf(args, sizeof args, "import %s", onnx);
  fails(false, args, "is not a regular file (a pipe)");
  fails(false, "run models/mlp.loom --input x=@/dev/zero --bind b=1", "'/dev/zero' is not a regular file");
  fails(true, "/dev/zero --list", "'/dev/zero' is not a regular file");
  remove_dir(dir);
}

LOOM_TEST(cli_inputs, negative_dims_in_annotations_are_rejected_with_a_location) {
  char *dir = temp_dir(), path[200], args[300];
  snprintf(path, sizeof path, "%s/neg.loom", dir);
  write_file(path, "fn @main(x: Tensor[(b, -784), f32]) -> Tensor[(b, -784), f32] {\n"
                   "  dataflow {\n    y = relu(x)\n    output y\n  }\n  return y\n}\n");
  snprintf(args, sizeof args, "check %s", path);
  fails(false, args, "neg.loom:1:");
  fails(false, args, "parameter 'x': axis 1 is -784, negative for every value of its variables (a dim is a size, >= 0)");
  snprintf(args, sizeof args, "compile %s -o %s/neg.so", path, dir);
  fails(false, args, "axis 1 is -784");
  /* a dim negative for every value of b (b >= 0); one that may be negative is a run-time check */
  write_file(path, "fn @main(x: Tensor[(b, 4), f32], w: Tensor[(-b - 1,), f32]) -> Tensor[(b, 4), f32] {\n"
                   "  dataflow {\n    z = relu(x)\n    output z\n  }\n  return z\n}\n");
  snprintf(args, sizeof args, "check %s", path);
  fails(false, args, "parameter 'w': axis 0 is -b - 1, negative for every value");
  write_file(path, "fn @main(x: Tensor[(b, 4), f32], w: Tensor[(b - 3,), f32]) -> Tensor[(b, 4), f32] {\n"
                   "  dataflow {\n    z = relu(x)\n    output z\n  }\n  return z\n}\n");
  loom_test_proc p = loom_test_run("%s check %s", loom_test_loom_bin(), path);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  remove_dir(dir);
}

LOOM_TEST(cli_inputs, bind_flags_that_repeat_or_contradict_the_inputs) {
  fails(false, "run models/mlp.loom --bind b=3,b=4", "--bind 'b=3,b=4': 'b' is given twice (3 and 4)");
  fails(true, "/nonexistent.so --bind b=3,b=4", "cannot open");
  fails(false, "run models/mlp.loom --bind b=3 --input 'x=random:(2,784)'",
        "--bind b=3 contradicts --input x=random:(2,784): input 'x' axis 0 is b = 3 by --bind, 2 by --input");
  /* agreeing flags run */
  loom_test_proc p = loom_test_run("%s run models/mlp.loom --bind b=2 --input 'x=random:(2,784)'", loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "output 0: f32(2, 10)") != NULL, "%s", p.out);
  loom_test_proc_free(&p);
}

LOOM_TEST(cli_inputs, an_index_out_of_range_names_the_kernel_binding_value_and_range) {
  char *dir = temp_dir(), model[200], xs[200], is[200], args[700];
  snprintf(model, sizeof model, "%s/take.loom", dir);
  snprintf(xs, sizeof xs, "%s/x.npy", dir);
  snprintf(is, sizeof is, "%s/i.npy", dir);
  write_file(model, "fn @main(x: Tensor[(n, 4), f32], i: Tensor[(m, 2), i64]) -> Tensor[(m, 2, 4), f32] {\n"
                    "  dataflow {\n    y = take(x, i, axis=0)\n    output y\n  }\n  return y\n}\n");
  float x[512 * 4] = {0};
  int64_t xshape[2] = {512, 4}, ishape[2] = {2, 2};
  cr_assert_null(loom_npy_write(xs, LOOM_DTYPE_F32, 2, xshape, x));
  const int64_t cases[][2] = {{512, 512}, {-513, -513}};
  for (int k = 0; k < 2; k++) {
    int64_t idx[4] = {0, 1, cases[k][0], 2};
    cr_assert_null(loom_npy_write(is, LOOM_DTYPE_I64, 2, ishape, idx));
    char want[200];
    snprintf(want, sizeof want, "index %lld must be within the inclusive range [-512, 511]", (long long)cases[k][1]);
    snprintf(args, sizeof args, "run %s --input x=@%s --input i=@%s", model, xs, is);
    fails(false, args, want);
    fails(false, args, "out of range: kernel 'take_f32_r2_a0_i64_r2': an index into axis 0 of 'X'");
    fails(false, args, "[y = call_tp(@take_f32_r2_a0_i64_r2, x, i)]");
  }
  /* the same through an artifact and loom-run */
  char so[300];
  snprintf(so, sizeof so, "%s/take.so", dir);
  snprintf(args, sizeof args, "%s compile %s -o %s", loom_test_loom_bin(), model, so);
  loom_test_proc p = loom_test_run("%s", args);
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  loom_test_proc_free(&p);
  snprintf(args, sizeof args, "%s --input x=@%s --input i=@%s", so, xs, is);
  fails(true, args, "index -513 must be within the inclusive range [-512, 511]");
  remove_dir(dir);
}

/* cmd_run.c — `loom run FILE.loom|ARTIFACT ...`: a module is compiled in process (JIT) and
 * run; an artifact is loaded as `loom-run` does. The flags are loom-run's (run_tool.h). */
#include <stdio.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/run_tool.h"
#include "loom.h"

static bool is_module(const char *path) {
  size_t n = strlen(path);
  return (n > 5 && !strcmp(path + n - 5, ".loom")) || (n > 5 && !strcmp(path + n - 5, ".onnx"));
}

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  loom_rt *rt = NULL;
  loom_compiled *c = NULL;
  loom_status st;
  if (is_module(path) && loom_cli_get(args, "--trust")) {
    st = LOOM_ERROR(INVALID_ARGUMENT, "--trust checks the signature of a compiled artifact; '%s' is compiled in this "
                    "process and carries none", path);
  } else if (is_module(path) && loom_cli_get(args, "--device")) {
    st = LOOM_ERROR(INVALID_ARGUMENT, "--device picks where an artifact runs; '%s' is compiled here: give --target", path);
  } else if (is_module(path)) {
    const char *target = loom_cli_get(args, "--target");
    loom_compile_options o = {.target = target, .cpu = loom_cli_get(args, "--cpu"),
                              .emit = LOOM_TARGET_EMIT_JIT,
                              .offload = loom_cli_flag(args, "--offload"), .report = stderr,
                              .no_cache = loom_cli_flag(args, "--no-cache"), .pack_tied = loom_cli_flag(args, "--pack-tied")};
    st = loom_compile_file(path, &o, &c);
    if (!st) st = loom_compiled_open(c, NULL, &rt);
  } else if (loom_cli_get(args, "--target")) {
    st = LOOM_ERROR(INVALID_ARGUMENT, "--target compiles a module (.loom, .onnx); '%s' is an artifact, compiled already", path);
  } else {
    st = loom_run_tool_open(args, path, &rt);
  }
  if (!st) st = loom_run_tool(args, rt);
  loom_rt_close(rt);
  loom_compiled_free(c);
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_run = {
    .name = "run",
    .summary = "compile a module in process (JIT) or load an artifact, and run a function",
    .positional = "FILE",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){LOOM_RUN_TOOL_OPTS,
                                   {"--target", "cpu", "where the module runs: cpu, or cuda[:sm_80|:sm_90] (GPU 0 through the NVIDIA driver)", false},
                                   {"--cpu", "NAME", "LLVM CPU name for JIT kernels (default: this machine)", false},
                                   {"--offload", NULL, "hand large matmuls to BLAS (the offload pass; JIT only)", false},
                                   {"--pack-tied", NULL, "lay a tied weight's matmul operand out in panels too (a second copy; loom serve --pack-tied)", false},
                                   {"--no-cache", NULL, "do not read or write the kernel cache ($LOOM_CACHE_DIR, ~/.cache/loom)", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "FILE is a .loom module or an .onnx model (compiled now) or an artifact from `loom compile` (as loom-run takes).\n"
               "Example: loom run models/mlp.loom --bind b=7 --repeat 10",
};

/* loom_run_main.c — `loom-run`: runs a function of a compiled Loom artifact.
 * Links libloomrt only (no LLVM, no GMP).
 *
 *   loom-run ARTIFACT [--fn main] --input NAME=random:(2,7,768) | NAME=@file.npy ...
 *            [--bind b=4,s=17] [--output out.npy] [--repeat N] [--profile] [--threads N] [--list]
 *            [--trust KEY.pub] [--check-weights]
 *
 * --bind gives symbolic vars values; every parameter without an --input is then made
 * random from its symbolic signature evaluated at those values. */
#include <stdio.h>
#include <string.h>

#include "driver/cli.h"
#include "driver/run_tool.h"
#include "loomrt.h"

static int run(const loom_cli_args *args) {
  loom_rt *rt;
  loom_status st = loom_run_tool_open(args, args->positional[0], &rt);
  if (!st) {
    st = loom_run_tool(args, rt);
    loom_rt_close(rt);
  }
  return loom_cli_exit(st);
}

static const loom_cli_command run_command = {
    .name = "run",
    .summary = "run a function of a compiled Loom artifact",
    .positional = "ARTIFACT",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){LOOM_RUN_TOOL_OPTS, {NULL, NULL, NULL, false}},
    .run = run,
    .details = "ARTIFACT is an AOT shared object (exporting loom_artifact_v1) or an executable file.\n"
               "Example: loom-run model.so --bind b=4,s=17 --repeat 10 --profile",
};
int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--version")) {
    printf("loom-run %s\nbuild: %s\nruntime: libloomrt (no compiler linked)\ncuda: %s\n", LOOM_VERSION,
           LOOM_BUILD_MODE, LOOM_HAVE_CUDA ? "built" : "not built");
    return 0;
  }
  return loom_cli_dispatch("loom-run", &run_command, argc - 1, argv + 1);
}

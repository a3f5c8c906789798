/* loom_run_main.c — `loom-run`: runs a compiled Loom artifact.
 * Links libloomrt only (no LLVM, no GMP). Loading artifacts arrives with the
 * VM (vm/); until then it reports that plainly. */
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "driver/cli.h"

static int run(const loom_cli_args *args) {
  loom_status s = LOOM_ERROR(UNIMPLEMENTED,
                             "cannot load '%s': this build of loom-run has no VM yet (vm/ is not built)",
                             args->positional[0]);
  loom_status_fprint(stderr, s);
  loom_status_free(s);
  return LOOM_EXIT_FAILURE;
}

static const loom_cli_command run_command = {
    .name = "run",
    .summary = "run a function of a compiled Loom artifact",
    .positional = "ARTIFACT",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){
        {"--fn", "NAME", "function to run (default: main)", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
};

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "--version")) {
    printf("loom-run %s\nbuild: %s\nruntime: libloomrt (no compiler linked)\ncuda: %s\n", LOOM_VERSION,
           LOOM_BUILD_MODE, LOOM_HAVE_CUDA ? "built" : "not built");
    return 0;
  }
  return loom_cli_dispatch("loom-run", &run_command, argc - 1, argv + 1);
}

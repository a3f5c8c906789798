/* cmd_version.c — `loom version` / `loom --version`. */
#include <stdio.h>

#include "driver/commands.h"
#include "targets/cpu/host.h"
#include "targets/cuda/device.h"

static int run(const loom_cli_args *args) {
  (void)args;
  unsigned major, minor, patch;
  loom_cpu_llvm_version(&major, &minor, &patch);
  char host[256];
  loom_cpu_host_describe(host, sizeof host);
  printf("loom %s\n", LOOM_VERSION);
  printf("build: %s\n", LOOM_BUILD_MODE);
  printf("llvm: %u.%u.%u (host %s)\n", major, minor, patch, host);
#if LOOM_HAVE_CUDA
  char why[256];
  int rt = 0;
  int n = loom_cuda_device_count(&rt, why, sizeof why);
  printf("cuda: built (runtime %d.%d); %d device%s%s%s\n", rt / 1000, (rt % 1000) / 10, n,
         n == 1 ? "" : "s", n ? "" : ": ", n ? "" : why);
#else
  printf("cuda: not built (no CUDA toolkit at build time)\n");
#endif
  return LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_version = {
    .name = "version",
    .summary = "print the version, build mode, LLVM version and CUDA support",
    .positional = "",
    .min_positional = 0,
    .max_positional = 0,
    .opts = (const loom_cli_opt[]){{NULL, NULL, NULL, false}},
    .run = run,
};

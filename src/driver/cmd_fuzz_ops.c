/* cmd_fuzz_ops.c — `loom fuzz-ops`: the randomized differential checker of the operators
 * (reference interpreter against the compiled JIT path; src/driver/fuzz_ops.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/fuzz_ops.h"

static int run(const loom_cli_args *args) {
  if (loom_cli_flag(args, "--list")) {
    for (int i = 0; i < loom_fuzz_ops_family_count(); i++) printf("%-18s %s\n", loom_fuzz_ops_family_name(i), loom_fuzz_ops_family_ops(i));
    return LOOM_EXIT_OK;
  }
  loom_fuzz_ops_options o = {.seed = 1};
  const char *v;
  if ((v = loom_cli_get(args, "--seed"))) o.seed = strtoull(v, NULL, 10);
  if ((v = loom_cli_get(args, "--cases"))) o.cases = strtol(v, NULL, 10);
  if ((v = loom_cli_get(args, "--seconds"))) o.seconds = strtod(v, NULL);
  if ((v = loom_cli_get(args, "--shrink-seconds"))) o.shrink_seconds = strtod(v, NULL);
  if (o.cases < 0 || o.seconds < 0) return loom_cli_usage_error(args, "--cases and --seconds take non-negative numbers");
  o.op = loom_cli_get(args, "--op");
  o.skip = loom_cli_get(args, "--skip");
  o.no_fork = loom_cli_flag(args, "--no-fork");
  o.no_shrink = loom_cli_flag(args, "--no-shrink");
  o.verbose = loom_cli_flag(args, "--verbose");
  o.target = loom_cli_get(args, "--target");
  if ((v = loom_cli_get(args, "--threads"))) {
    for (const char *p = v; *p && o.nthreads < 4;) {
      char *end;
      long t = strtol(p, &end, 10);
      if (end == p || t < 1 || t > 256) return loom_cli_usage_error(args, "--threads %s: expected a list like 1,2", v);
      o.threads[o.nthreads++] = (uint32_t)t;
      p = *end == ',' ? end + 1 : end;
    }
  }
  loom_fuzz_ops_report r;
  if (!loom_fuzz_ops_run(&o, stdout, &r)) return LOOM_EXIT_USAGE;
  return r.total.mismatches ? LOOM_EXIT_FAILURE : LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_fuzz_ops = {
    .name = "fuzz-ops",
    .summary = "randomized differential check of every operator: interpreter vs compiled (JIT)",
    .positional = "",
    .min_positional = 0,
    .max_positional = 0,
    .opts = (const loom_cli_opt[]){{"--seconds", "N", "stop after N seconds", false},
                                   {"--cases", "N", "stop after N cases (default 200 when neither bound is given)", false},
                                   {"--seed", "S", "seed: case i uses S + i (default 1)", false},
                                   {"--op", "NAMES", "only these families or ops (comma list; --list shows them)", false},
                                   {"--skip", "NAMES", "leave these families or ops out (comma list)", false},
                                   {"--threads", "1,2", "thread counts the compiled module runs with (default 1,2)", false},
                                   {"--target", "cpu", "where the compiled side runs: cpu, or cuda[:sm_80|:sm_90] (the GPU)", false},
                                   {"--list", NULL, "list the families and the ops each covers", false},
                                   {"--verbose", NULL, "print every case", false},
                                   {"--no-shrink", NULL, "report failures without shrinking them", false},
                                   {"--shrink-seconds", "N", "time bound of one shrink (default 60)", false},
                                   {"--no-fork", NULL, "run cases in this process (a crash ends the run)", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Each case is a one-op module with symbolic dims (sometimes static ones), random attributes over the op's valid\n"
               "space and random shapes (0, 1, primes, 6/8/16/32 +- 1), run by the reference interpreter and compiled on the same\n"
               "inputs. Integers must agree exactly, floats within the case's tolerance, NaNs at the same positions. A case runs\n"
               "in a child process, so a crash is a mismatch. Each mismatch prints its seed, a one-line repro and the shrunk\n"
               "module. Compile refusals (UNIMPLEMENTED) count as skipped. Ends with 'fuzz-ops: N cases, M mismatches';\n"
               "exit status 1 when M > 0. Example: loom fuzz-ops --op conv1d --seconds 30",
};

/* cmd_conformance.c — `loom conformance DIR [--filter S]`: runs ONNX backend tests (one
 * directory per test: model.onnx, test_data_set_N) through the importer and the reference
 * interpreter; prints PASS / FAIL / UNSUPPORTED per test, a per-op-type table and totals. */
#include <stdio.h>

#include "base/status.h"
#include "driver/commands.h"
#include "frontend/onnx/onnx_import.h"

static int run(const loom_cli_args *args) {
  loom_onnx_conformance_totals t;
  loom_status s = loom_onnx_conformance_run_ex(args->positional[0], loom_cli_get(args, "--filter"),
                                               loom_cli_flag(args, "--fold-int-inputs"), stdout, &t);
  if (s) {
    loom_status_fprint(stderr, s);
    loom_status_free(s);
    return LOOM_EXIT_FAILURE;
  }
  return t.failed ? LOOM_EXIT_FAILURE : LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_conformance = {
    .name = "conformance",
    .summary = "run ONNX backend tests through the importer and the reference interpreter",
    .positional = "DIR",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{"--filter", "SUBSTRING", "only tests whose directory name contains SUBSTRING", false},
                                   {"--fold-int-inputs", NULL, "when an operand must be constant but is a graph input, freeze the test's integer inputs", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Tolerances: rtol 1e-3, atol 1e-7 for floats; exact for integers and bools. Exit 1 when a test fails.",
};

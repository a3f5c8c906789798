/* cmd_keygen.c — `loom keygen OUT`: a new Ed25519 key pair for signing artifacts
 * (vm/artifact.h): the secret key in OUT (mode 0600) for `loom compile --sign OUT`, the
 * public key in OUT.pub for `loom-run --trust OUT.pub`. */
#include <stdio.h>

#include "driver/commands.h"
#include "vm/artifact.h"

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  loom_status st = loom_vm_artifact_keygen(path);
  if (!st) printf("secret key: %s (keep it private)\npublic key: %s.pub\n", path, path);
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_keygen = {
    .name = "keygen",
    .summary = "make an Ed25519 key pair for signing artifacts (OUT and OUT.pub)",
    .positional = "OUT",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{NULL, NULL, NULL, false}},
    .run = run,
    .details = "Writes the secret key to OUT (mode 0600) and the public key to OUT.pub; refuses to overwrite.\n"
               "Sign with `loom compile model.loom -o m.so --sign OUT`; run only signed artifacts with\n"
               "`loom-run m.so --trust OUT.pub` (docs/vm.md, \"Trust model\").",
};

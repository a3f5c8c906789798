/* cmd_disasm.c — `loom disasm FILE`: prints a Loom executable or AOT artifact as text
 * (format in docs/vm.md). The file is verified first; a corrupt one is an error. */
#include <stdio.h>
#include <stdlib.h>

#include "driver/commands.h"
#include "loomrt.h"
#include "vm/exec.h"

static int run(const loom_cli_args *args) {
  loom_rt *rt;
  loom_status st = loom_rt_open(args->positional[0], NULL, &rt);
  if (st && loom_status_code(st) == LOOM_CODE_NOT_FOUND && !loom_cli_flag(args, "--strict")) {
    /* a plain executable whose kernels are not here still disassembles */
    loom_status_free(st);
    loom_vm_exec *e;
    st = loom_vm_exec_load_file(NULL, args->positional[0], &e);
    if (!st) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      loom_vm_exec_disasm(e, &sb);
      fputs(loom_strbuf_cstr(&sb), stdout);
      loom_strbuf_free(&sb);
      loom_vm_exec_free(e);
      return LOOM_EXIT_OK;
    }
  }
  if (st) {
    loom_status_fprint(stderr, st);
    loom_status_free(st);
    return LOOM_EXIT_FAILURE;
  }
  char *text = loom_rt_disasm(rt);
  fputs(text ? text : "(out of memory)\n", stdout);
  free(text);
  loom_rt_close(rt);
  return LOOM_EXIT_OK;
}

const loom_cli_command loom_cmd_disasm = {
    .name = "disasm",
    .summary = "print a compiled executable or artifact as readable bytecode",
    .positional = "FILE",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{"--strict", NULL, "fail when kernels cannot be bound", false}, {NULL, NULL, NULL, false}},
    .run = run,
    .details = "FILE is an executable (.loomexe) or an AOT shared object. Output format: docs/vm.md.",
};

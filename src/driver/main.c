/* main.c — `loom`: dispatches to the subcommand named by argv[1]. */
#include <stdio.h>
#include <string.h>

#include "driver/commands.h"

static const loom_cli_command *const commands[] = {
#define LOOM_COMMAND(ident) &loom_cmd_##ident,
#include "driver/commands.def"
#undef LOOM_COMMAND
};

static void print_usage(FILE *f) {
  fprintf(f,
          "usage: loom COMMAND [options] [arguments]\n\n"
          "Loom compiles machine-learning models with symbolic shapes and runs them for any shape.\n\n"
          "commands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-12s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "\n'loom COMMAND --help' describes a command; 'loom --version' the build.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return LOOM_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
    print_usage(stdout);
    return LOOM_EXIT_OK;
  }
  if (!strcmp(name, "--version")) name = "version";
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
    if (!strcmp(commands[i]->name, name))
      return loom_cli_dispatch("loom", commands[i], argc - 2, argv + 2);
  }
  if (name[0] == '-')
    fprintf(stderr, "loom: error: unknown option '%s'\n", name);
  else
    fprintf(stderr, "loom: error: unknown command '%s'\n", name);
  fprintf(stderr, "try 'loom --help'\n");
  return LOOM_EXIT_USAGE;
}

/* cli.h — command-line parsing shared by `loom` and `loom-run`.
 *
 * A command is a table entry: name, one-line summary, positional usage,
 * options, and the function that runs it. The parser gives every command
 * `--help`, checks option names and positional counts, and turns misuse into
 * "loom CMD: error: ..." on stderr with exit code 2. Options are `--name VALUE`
 * or `--name=VALUE`; flags are `--name`; an option with an optional value is
 * `--name` or `--name=VALUE`. */
#ifndef LOOM_DRIVER_CLI_H
#define LOOM_DRIVER_CLI_H

#include <stdbool.h>
#include "base/compiler.h"
#include "base/status.h"

enum {
  LOOM_EXIT_OK = 0,      /* success */
  LOOM_EXIT_FAILURE = 1, /* the command ran and failed (bad model, bad input data, ...) */
  LOOM_EXIT_USAGE = 2,   /* the command line itself is wrong */
};

typedef struct loom_cli_opt {
  const char *name;    /* "--fn" */
  const char *metavar; /* "NAME" when the option takes a value; NULL for a flag; "[=N]": an
                          optional value (`--name` alone gives "") */
  const char *help;    /* one line */
  bool repeatable;     /* may be given more than once */
} loom_cli_opt;

typedef struct loom_cli_args loom_cli_args;

typedef struct loom_cli_command {
  const char *name;         /* "check" */
  const char *summary;      /* one line for the command list */
  const char *positional;   /* usage of positional arguments, e.g. "FILE" ("" for none) */
  int min_positional;       /* fewest positional arguments */
  int max_positional;       /* most positional arguments; -1: no limit */
  const loom_cli_opt *opts; /* terminated by an entry with name NULL */
  int (*run)(const loom_cli_args *args); /* returns an exit code */
  const char *details;      /* extra help paragraph, or NULL */
} loom_cli_command;

struct loom_cli_args {
  const char *program;          /* "loom" or "loom-run" */
  const loom_cli_command *cmd;
  int npositional;
  const char **positional;
  int nvalues;
  int *value_opt;               /* option index of each given option, in order */
  const char **value;           /* its value (NULL for a flag) */
};

/* Parses argv (after the command name) for `cmd` and runs it. Returns the exit code. */
int loom_cli_dispatch(const char *program, const loom_cli_command *cmd, int argc, char **argv);
void loom_cli_print_help(const char *program, const loom_cli_command *cmd);

/* Last value of option `name`, or NULL when absent. */
const char *loom_cli_get(const loom_cli_args *a, const char *name);
bool loom_cli_flag(const loom_cli_args *a, const char *name);
/* Number of times `name` was given, and its i-th value. */
int loom_cli_count(const loom_cli_args *a, const char *name);
const char *loom_cli_value_at(const loom_cli_args *a, const char *name, int i);

/* The exit code of a command that ends with status `st`: LOOM_EXIT_OK, or the
 * error printed to stderr (and freed) and LOOM_EXIT_FAILURE. */
int loom_cli_exit(loom_status st);

/* Prints "PROGRAM CMD: error: ..." and a hint, returns LOOM_EXIT_USAGE. */
int loom_cli_usage_error(const loom_cli_args *a, const char *fmt, ...) LOOM_PRINTF(2, 3);

#endif

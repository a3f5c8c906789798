/* cli.c — option parsing, help and usage errors for every command. */
#include "driver/cli.h"

#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int find_opt(const loom_cli_command *cmd, const char *name, size_t len) {
  for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
    if (strlen(cmd->opts[i].name) == len && memcmp(cmd->opts[i].name, name, len) == 0) return i;
  }
  return -1;
}

void loom_cli_print_help(const char *program, const loom_cli_command *cmd) {
  printf("usage: %s %s%s%s%s\n\n%s\n", program, cmd->name, cmd->opts && cmd->opts[0].name ? " [options]" : "",
         cmd->positional[0] ? " " : "", cmd->positional, cmd->summary);
  if (cmd->details) printf("\n%s\n", cmd->details);
  printf("\noptions:\n");
  for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
    const loom_cli_opt *o = &cmd->opts[i];
    char left[64];
    if (o->metavar && o->metavar[0] == '[') snprintf(left, sizeof left, "%s%s", o->name, o->metavar);
    else snprintf(left, sizeof left, "%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
    printf("  %-28s %s%s\n", left, o->help, o->repeatable ? " (repeatable)" : "");
  }
  printf("  %-28s %s\n", "--help", "show this help");
}

static void usage_error_v(const char *program, const loom_cli_command *cmd, const char *fmt,
                          va_list ap) {
  fprintf(stderr, "%s %s: error: ", program, cmd->name);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\ntry '%s %s --help'\n", program, cmd->name);
}

static int usage_error(const char *program, const loom_cli_command *cmd, const char *fmt, ...)
    LOOM_PRINTF(3, 4);
static int usage_error(const char *program, const loom_cli_command *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  usage_error_v(program, cmd, fmt, ap);
  va_end(ap);
  return LOOM_EXIT_USAGE;
}

int loom_cli_usage_error(const loom_cli_args *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  usage_error_v(a->program, a->cmd, fmt, ap);
  va_end(ap);
  return LOOM_EXIT_USAGE;
}

int loom_cli_dispatch(const char *program, const loom_cli_command *cmd, int argc, char **argv) {
  loom_cli_args a = {.program = program, .cmd = cmd};
  size_t n = (size_t)(argc > 0 ? argc : 0) + 1;
  a.positional = calloc(n, sizeof(*a.positional));
  a.value_opt = calloc(n, sizeof(*a.value_opt));
  a.value = calloc(n, sizeof(*a.value));
  int rc;
  if (!a.positional || !a.value_opt || !a.value) {
    fprintf(stderr, "%s: error: out of memory\n", program);
    rc = LOOM_EXIT_FAILURE;
    goto done;
  }
  bool only_positional = false;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i];
    if (only_positional || arg[0] != '-' || arg[1] == '\0') {
      a.positional[a.npositional++] = arg;
      continue;
    }
    if (!strcmp(arg, "--")) {
      only_positional = true;
      continue;
    }
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      loom_cli_print_help(program, cmd);
      rc = LOOM_EXIT_OK;
      goto done;
    }
    const char *eq = strchr(arg, '=');
    size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
    int oi = find_opt(cmd, arg, name_len);
    if (oi < 0) {
      rc = usage_error(program, cmd, "unknown option '%.*s'", (int)name_len, arg);
      goto done;
    }
    const loom_cli_opt *o = &cmd->opts[oi];
    const char *value = NULL;
    if (o->metavar) {
      if (eq) {
        value = eq + 1;
      } else if (o->metavar[0] == '[') {
        value = "";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        rc = usage_error(program, cmd, "option '%s' needs a value (%s)", o->name, o->metavar);
        goto done;
      }
    } else if (eq) {
      rc = usage_error(program, cmd, "option '%s' takes no value", o->name);
      goto done;
    }
    if (!o->repeatable) {
      for (int k = 0; k < a.nvalues; k++) {
        if (a.value_opt[k] == oi) {
          rc = usage_error(program, cmd, "option '%s' given more than once", o->name);
          goto done;
        }
      }
    }
    a.value_opt[a.nvalues] = oi;
    a.value[a.nvalues++] = value;
  }
  if (a.npositional < cmd->min_positional) {
    rc = usage_error(program, cmd, "missing argument: expected %s", cmd->positional);
    goto done;
  }
  if (cmd->max_positional >= 0 && a.npositional > cmd->max_positional) {
    rc = usage_error(program, cmd, "unexpected argument '%s'", a.positional[cmd->max_positional]);
    goto done;
  }
  rc = cmd->run(&a);
done:
  free(a.positional);
  free(a.value_opt);
  free(a.value);
  return rc;
}

int loom_cli_count(const loom_cli_args *a, const char *name) {
  int oi = find_opt(a->cmd, name, strlen(name)), n = 0;
  for (int k = 0; k < a->nvalues; k++) n += a->value_opt[k] == oi;
  return n;
}

const char *loom_cli_value_at(const loom_cli_args *a, const char *name, int i) {
  int oi = find_opt(a->cmd, name, strlen(name));
  for (int k = 0; k < a->nvalues; k++) {
    if (a->value_opt[k] == oi && i-- == 0) return a->value[k];
  }
  return NULL;
}

const char *loom_cli_get(const loom_cli_args *a, const char *name) {
  int n = loom_cli_count(a, name);
  return n ? loom_cli_value_at(a, name, n - 1) : NULL;
}

bool loom_cli_flag(const loom_cli_args *a, const char *name) { return loom_cli_count(a, name) > 0; }

int loom_cli_exit(loom_status st) {
  if (!st) return LOOM_EXIT_OK;
  loom_status_fprint(stderr, st);
  loom_status_free(st);
  return LOOM_EXIT_FAILURE;
}

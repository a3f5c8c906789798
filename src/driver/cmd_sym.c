/* cmd_sym.c — `loom sym`: symbolic shape arithmetic for users debugging shapes.
 *
 *   loom sym simplify "EXPR" [--assume "n >= 1" ...]   canonical, fact-simplified form
 *   loom sym prove "A <= B" [--assume ...]             true / false / unknown
 *   loom sym eval "EXPR" n=3 m=5                       the value
 *
 * Names in EXPR and in facts are shape variables (>= 0); the same name is the same
 * variable. Bad expressions (parse error, overflow, division by zero) print an error
 * with a caret and exit 1; a wrong command line exits 2. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "symbolic/sym.h"

static int report(loom_status s) {
  loom_status_fprint(stderr, s);
  loom_status_free(s);
  return LOOM_EXIT_FAILURE;
}

/* Parses "NAME=INT"; false when malformed. */
static bool parse_binding(const char *arg, size_t *name_len, int64_t *value) {
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg) return false;
  char *end;
  errno = 0;
  long long v = strtoll(eq + 1, &end, 10);
  if (*end || end == eq + 1 || errno) return false;
  *name_len = (size_t)(eq - arg);
  *value = v;
  return true;
}

static int run_verb(const loom_cli_args *args, loom_sym_ctx *cx, loom_sym_names *names) {
  const char *verb = args->positional[0];
  bool simplify = strcmp(verb, "simplify") == 0, prove = strcmp(verb, "prove") == 0,
       eval = strcmp(verb, "eval") == 0;
  if (!simplify && !prove && !eval)
    return loom_cli_usage_error(args, "unknown verb '%s' (expected simplify, prove or eval)", verb);
  if (args->npositional < 2) return loom_cli_usage_error(args, "missing argument EXPR");
  if (!eval && args->npositional > 2)
    return loom_cli_usage_error(args, "unexpected argument '%s'", args->positional[2]);
  if (eval && loom_cli_count(args, "--assume") > 0)
    return loom_cli_usage_error(args, "--assume is for simplify and prove; eval takes NAME=VALUE bindings");
  for (int i = 2; i < args->npositional; i++) {
    size_t len;
    int64_t v;
    if (!parse_binding(args->positional[i], &len, &v))
      return loom_cli_usage_error(args, "bad binding '%s' (expected NAME=INTEGER)", args->positional[i]);
  }

  const loom_sym_expr *e;
  loom_status s = loom_sym_parse_string(cx, names, "<expr>", args->positional[1], &e);
  if (s) return report(s);
  for (int i = 0; i < loom_cli_count(args, "--assume"); i++) {
    const char *fact = loom_cli_value_at(args, "--assume", i);
    s = loom_sym_assume_text(cx, fact);
    if (s) return report(loom_status_annotate(s, __FILE__, __LINE__, "while assuming '%s'", fact));
  }

  if (simplify) {
    const loom_sym_expr *r = loom_sym_simplify(cx, e);
    if (!r) return report(loom_sym_ctx_take_error(cx));
    char *text = loom_sym_to_string(r);
    if (!text) return report(LOOM_OOM());
    printf("%s\n", text);
    free(text);
    return LOOM_EXIT_OK;
  }
  if (prove) {
    loom_sym_truth t = loom_sym_prove_cases(cx, e);
    printf("%s\n", t == LOOM_SYM_TRUE ? "true" : t == LOOM_SYM_FALSE ? "false" : "unknown");
    return LOOM_EXIT_OK;
  }
  loom_sym_env *env;
  s = loom_sym_env_create(NULL, &env);
  if (s) return report(s);
  for (int i = 2; i < args->npositional && !s; i++) {
    size_t len;
    int64_t v;
    parse_binding(args->positional[i], &len, &v);
    const loom_sym_expr *var = loom_sym_names_get(names, args->positional[i], len);
    s = var ? loom_sym_env_set(env, var, v) : loom_sym_ctx_take_error(cx);
  }
  int64_t value = 0;
  if (!s) s = loom_sym_eval(cx, e, env, &value);
  loom_sym_env_destroy(env);
  if (s) return report(s);
  printf("%lld\n", (long long)value);
  return LOOM_EXIT_OK;
}

static int run(const loom_cli_args *args) {
  loom_sym_ctx *cx;
  loom_status s = loom_sym_ctx_create(NULL, &cx);
  if (s) return report(s);
  loom_sym_names *names;
  s = loom_sym_names_create(cx, LOOM_SYM_VAR_SHAPE, &names);
  if (s) {
    loom_sym_ctx_destroy(cx);
    return report(s);
  }
  int rc = run_verb(args, cx, names);
  loom_sym_names_destroy(names);
  loom_sym_ctx_destroy(cx);
  return rc;
}

const loom_cli_command loom_cmd_sym = {
    .name = "sym",
    .summary = "simplify, prove or evaluate symbolic shape expressions",
    .positional = "simplify|prove|eval EXPR [NAME=VALUE ...]",
    .min_positional = 1,
    .max_positional = -1,
    .opts =
        (const loom_cli_opt[]){
            {"--assume", "FACT", "a fact such as \"n >= 1\", \"n <= 4096\", \"n % 8 == 0\", \"m == n\"", true},
            {NULL, NULL, NULL, false},
        },
    .run = run,
    .details = "  loom sym simplify \"floordiv(4*n + 8, 4)\"            ->  n + 2\n"
               "  loom sym simplify \"min(s, 4096)\" --assume \"s <= 100\"  ->  s\n"
               "  loom sym prove \"n < n + 1\"                           ->  true\n"
               "  loom sym eval \"2*n + floordiv(m, 2)\" n=3 m=5          ->  8\n"
               "Variables are shape dims (>= 0). Comparisons: == != < <= > >=; logic: && || !.",
};

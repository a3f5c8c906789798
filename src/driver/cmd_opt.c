/* cmd_opt.c — `loom opt FILE.loom [--load-pass LIB.so]... [--passes=normalize,fold,...]
 * [--print-after-all] [--time] [--check-passes[=N]]`: runs passes on a module and prints the
 * result. By default the pipeline up to the scheduled module; the late passes (memplan, lower,
 * codegen) and passes loaded from plugins (src/loom_pass.h) by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/graph_file.h"
#include "driver/pipeline.h"

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  for (int i = 0; i < loom_cli_count(args, "--load-pass"); i++) {
    loom_status ls = loom_pass_plugin_load(loom_cli_value_at(args, "--load-pass", i), NULL);
    if (ls) {
      fprintf(stderr, "loom opt: error: %s\n", loom_status_text(ls, 0));
      loom_status_free(ls);
      return LOOM_EXIT_FAILURE;
    }
  }
  loom_pass_id passes[64];
  _Static_assert(LOOM_PASS_COUNT <= 64, "the default pipeline fits `passes`");
  size_t npasses = 0;
  const char *list = loom_cli_get(args, "--passes");
  if (list) {
    for (const char *p = list; *p;) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      if (npasses == 64) return loom_cli_usage_error(args, "too many passes");
      if (!loom_pass_lookup(p, len, &passes[npasses++])) {
        fprintf(stderr, "loom opt: error: unknown pass '%.*s'; passes:", (int)len, p);
        for (size_t i = 0; i < loom_pass_count(); i++) fprintf(stderr, " %s", loom_pass_info_of((loom_pass_id)i)->name);
        fputc('\n', stderr);
        return LOOM_EXIT_USAGE;
      }
      p += len + (e != NULL);
    }
  } else {
    npasses = loom_pipeline_default(false, LOOM_PASS_schedule, passes); /* through the scheduled module */
  }
  int check = 0;
  const char *cv = loom_cli_get(args, "--check-passes");
  if (cv) {
    char *end;
    long k = *cv ? strtol(cv, &end, 10) : 3;
    if (*cv && (*end || k < 1 || k > 1000))
      return loom_cli_usage_error(args, "--check-passes takes a number of input sets from 1 to 1000, got '%s'", cv);
    check = (int)k;
  }
  loom_diag_list diags;
  loom_graph_module *m = NULL;
  if (loom_driver_load_graph(path, &diags, &m)) return LOOM_EXIT_FAILURE;
  loom_pass_options opts = {.print_after_all = loom_cli_flag(args, "--print-after-all"),
                            .verify_each = true,
                            .time_passes = loom_cli_flag(args, "--time"),
                            .check_numerics = check};
  loom_status s = loom_pipeline_run(m, passes, npasses, &opts, &diags);
  int rc = LOOM_EXIT_OK;
  if (s) {
    if (diags.errors) loom_diag_list_print(stderr, &diags);
    else loom_status_fprint(stderr, s);
    loom_status_free(s);
    rc = LOOM_EXIT_FAILURE;
  } else {
    for (size_t i = 0; i < diags.items.len; i++) loom_diag_print(stderr, &diags.items.data[i]);
    if (!opts.print_after_all) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      loom_graph_print_module(m, &sb);
      fputs(loom_strbuf_cstr(&sb), stdout);
      loom_strbuf_free(&sb);
    }
  }
  loom_graph_module_destroy(m);
  loom_diag_list_destroy(&diags);
  return rc;
}

const loom_cli_command loom_cmd_opt = {
    .name = "opt",
    .summary = "run compiler passes on a module and print the result",
    .positional = "FILE.loom|FILE.onnx",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){
        {"--load-pass", "LIB.so", "load the passes of a pass plugin (src/loom_pass.h) so --passes can name them", true},
        {"--passes", "P1,P2,...", "passes to run, in order (default: the pipeline through schedule)", false},
        {"--print-after-all", NULL, "print what every pass made (module, memory plans, bytecode, kernels)", false},
        {"--time", NULL, "report the time of every pass", false},
        {"--check-passes", "[=N]", "run the module before and after every pass on N random shape sets (default 3)", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "Passes: normalize (canonical form), simplify (algebraic rewrites), fold (constants and\n"
               "shape computations), cse, dce, offload (matmul/linear to BLAS above a row threshold, guarded\n"
               "by the shape; LOOM_OFFLOAD_THRESHOLD overrides the measured default), legalize (operator calls\n"
               "-> generated tensor programs), fuse (elementwise/injective call chains merged into their consumer,\n"
               "one tensor program per group), schedule (default CPU schedule rules on every tensor program),\n"
               "classify (report each tensor program's access pattern); docs/passes.md. After them: memplan\n"
               "(memory plans), lower (VM bytecode; needs memplan), codegen (JIT kernels; needs lower), e.g.\n"
               "--passes=normalize,simplify,fold,cse,dce,legalize,fuse,schedule,memplan,lower,codegen --time.\n"
               "--load-pass LIB.so adds the passes of a plugin built against src/loom_pass.h (examples/passes/).\n"
               "What every pass made is verified; --check-passes also runs the module in the reference\n"
               "interpreter before and after each pass on random inputs at random symbolic-var values and\n"
               "fails naming the pass that changed a result.",
};

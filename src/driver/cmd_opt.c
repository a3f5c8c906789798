/* cmd_opt.c — `loom opt FILE.loom --passes=legalize,classify [--print-after-all] [--time]`:
 * runs passes on a module and prints the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/graph_file.h"
#include "driver/pipeline.h"

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  loom_pass_id passes[64];
  size_t npasses = 0;
  const char *list = loom_cli_get(args, "--passes");
  if (list) {
    for (const char *p = list; *p;) {
      const char *e = strchr(p, ',');
      size_t len = e ? (size_t)(e - p) : strlen(p);
      if (npasses == 64) return loom_cli_usage_error(args, "too many passes");
      if (!loom_pass_lookup(p, len, &passes[npasses++])) {
        fprintf(stderr, "loom opt: error: unknown pass '%.*s'; passes:", (int)len, p);
        for (int i = 0; i < LOOM_PASS_COUNT; i++) fprintf(stderr, " %s", loom_pass_info_of((loom_pass_id)i)->name);
        fputc('\n', stderr);
        return LOOM_EXIT_USAGE;
      }
      p += len + (e != NULL);
    }
  } else {
    const loom_pass_id *def;
    npasses = loom_pipeline_default(&def);
    memcpy(passes, def, npasses * sizeof *def);
  }
  loom_diag_list diags;
  loom_graph_module *m = NULL;
  if (loom_driver_load_graph(path, &diags, &m)) return LOOM_EXIT_FAILURE;
  loom_pass_options opts = {.print_after_all = loom_cli_flag(args, "--print-after-all"),
                            .verify_each = true,
                            .time_passes = loom_cli_flag(args, "--time")};
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
        {"--passes", "P1,P2,...", "passes to run, in order (default: the pipeline)", false},
        {"--print-after-all", NULL, "print the module after every pass", false},
        {"--time", NULL, "report the time of every pass", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "Passes: legalize (operator calls -> generated tensor programs), schedule (default CPU\n"
               "schedule rules on every tensor program), classify (report each tensor program's access\n"
               "pattern), offload (matmul/linear to BLAS above a row threshold, guarded by the shape;\n"
               "LOOM_OFFLOAD_THRESHOLD overrides the measured default). The module is verified after every pass.",
};

/* cmd_conformance.c — `loom conformance DIR [--filter S]`: runs ONNX backend tests (one
 * directory per test: model.onnx, test_data_set_N) through the importer and the reference
 * interpreter; prints PASS / FAIL / UNSUPPORTED per test, a per-op-type table and totals. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "driver/commands.h"
#include "driver/hostop.h"
#include "frontend/onnx/onnx_import.h"
#include "loom.h"

/* The compiled path: the module is compiled once (pipeline, VM lowering, JIT) and every test
 * data set runs through the VM. */
typedef struct compiled_eval {
  loom_graph_module *m; /* the module `c` was compiled from */
  loom_compiled *c;
  loom_rt *rt;
  loom_code failed;  /* the compile's status code when it failed (repeated for later data sets) */
  char why[512];
} compiled_eval;

static void compiled_eval_reset(compiled_eval *ce) {
  loom_rt_close(ce->rt);
  loom_compiled_free(ce->c);
  *ce = (compiled_eval){0};
}

static void compiled_eval_forget(void *ctx, loom_graph_module *m) {
  compiled_eval *ce = ctx;
  if (ce->m == m) compiled_eval_reset(ce);
}

static loom_status compiled_eval_run(void *ctx, loom_graph_module *m, size_t nargs, const loom_graph_value *args,
                                     loom_graph_value *out) {
  compiled_eval *ce = ctx;
  if (ce->m != m) {
    compiled_eval_reset(ce);
    ce->m = m;
    LOOM_PROPAGATE(loom_compile(m, NULL, &ce->c));
    LOOM_PROPAGATE(loom_compiled_open(ce->c, NULL, &ce->rt));
  }
  if (!ce->rt) return LOOM_ERROR(FAILED_PRECONDITION, "the module did not compile");
  loom_vm_obj *in[256];
  if (nargs > 256) return LOOM_ERROR(UNIMPLEMENTED, "%zu inputs", nargs);
  loom_status st = LOOM_OK;
  size_t made = 0;
  for (; made < nargs && !st; made++) {
    st = loom_driver_obj_of_value(loom_rt_device(ce->rt), &args[made], &in[made]);
    if (st) made--;
  }
  loom_rt_outputs res = {0};
  if (!st) st = loom_rt_call_values(ce->rt, "main", in, (uint32_t)nargs, &res);
  if (!st && res.count == 1) st = loom_driver_value_of_obj(res.items[0], out);
  else if (!st) {
    *out = (loom_graph_value){.kind = LOOM_SINFO_TUPLE, .n = res.count};
    out->items = calloc(res.count, sizeof *out->items);
    if (!out->items) st = LOOM_OOM();
    for (uint32_t i = 0; !st && i < res.count; i++) st = loom_driver_value_of_obj(res.items[i], &out->items[i]);
    if (st) loom_graph_value_free(out);
  }
  loom_rt_outputs_free(&res);
  for (size_t i = 0; i < made; i++) loom_vm_obj_release(in[i]);
  return st;
}

static int run(const loom_cli_args *args) {
  loom_onnx_conformance_totals t;
  compiled_eval ce = {0};
  loom_onnx_conformance_opts o = {.fold_int_inputs = loom_cli_flag(args, "--fold-int-inputs")};
  if (loom_cli_flag(args, "--compiled")) o.eval = compiled_eval_run, o.forget = compiled_eval_forget, o.eval_ctx = &ce;
  loom_status s = loom_onnx_conformance_run_opts(args->positional[0], loom_cli_get(args, "--filter"), &o, stdout, &t);
  compiled_eval_reset(&ce);
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
                                   {"--compiled", NULL, "run through the compiled path (pipeline, VM, JIT kernels) instead of the interpreter", false},
                                   {"--fold-int-inputs", NULL, "when an operand must be constant but is a graph input, freeze the test's integer inputs", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Tolerances: rtol 1e-3, atol 1e-7 for floats; exact for integers and bools. Exit 1 when a test fails.",
};

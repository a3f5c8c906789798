/* cmd_onnx_info.c — `loom onnx-info FILE`: what an ONNX model holds, as the loader sees it.
 * Prints opsets, inputs and outputs with their symbolic dims, initializers with shapes,
 * and the node list (subgraphs indented). With --data DIR, also loads a test_data_set_N
 * directory against the model and lists its tensors. Exit 1 when loading fails. */
#include <inttypes.h>
#include <stdio.h>

#include "base/status.h"
#include "driver/commands.h"
#include "frontend/onnx/onnx_model.h"

/* One test-data value: a tensor's dtype and dims, or a sequence / optional and its items below. */
static void print_value(const loom_onnx_tensor *t, int depth) {
  if (t->kind == LOOM_ONNX_TYPE_SEQUENCE || t->kind == LOOM_ONNX_TYPE_OPTIONAL) {
    printf("%s of %zu%s%s\n", t->kind == LOOM_ONNX_TYPE_SEQUENCE ? "sequence" : "optional", t->nitems, *t->name ? " " : "",
           t->name);
    for (size_t i = 0; i < t->nitems; i++) {
      printf("  %*sitem %zu: ", 2 * depth + 2, "", i);
      print_value(t->items[i], depth + 1);
    }
    return;
  }
  printf("%s[", loom_dtype_name(t->dtype));
  for (size_t k = 0; k < t->rank; k++) printf("%s%" PRId64, k ? ", " : "", t->dims[k]);
  printf("]%s%s\n", *t->name ? " " : "", t->name);
}

static void print_tensors(const char *what, loom_onnx_tensor **ts, size_t n) {
  for (size_t i = 0; i < n; i++) {
    printf("  %s_%zu: ", what, i);
    print_value(ts[i], 0);
  }
}

static int run(const loom_cli_args *args) {
  loom_onnx_model *m;
  loom_status s = loom_onnx_model_load(args->positional[0], &m);
  if (s) {
    loom_status_fprint(stderr, s);
    loom_status_free(s);
    return LOOM_EXIT_FAILURE;
  }
  loom_onnx_model_print(m, stdout);
  const char *data = loom_cli_get(args, "--data");
  int rc = LOOM_EXIT_OK;
  if (data) {
    loom_onnx_test_set *ts;
    s = loom_onnx_test_set_load(data, m, &ts);
    if (s) {
      loom_status_fprint(stderr, s);
      loom_status_free(s);
      rc = LOOM_EXIT_FAILURE;
    } else {
      printf("test data %s:\n", data);
      print_tensors("input", ts->inputs, ts->n_inputs);
      print_tensors("output", ts->outputs, ts->n_outputs);
      loom_onnx_test_set_free(ts);
    }
  }
  loom_onnx_model_free(m);
  return rc;
}

const loom_cli_command loom_cmd_onnx_info = {
    .name = "onnx-info",
    .summary = "load an ONNX model and print its inputs, outputs, initializers and nodes",
    .positional = "FILE",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{"--data", "DIR", "also load a test_data_set_N directory against the model", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Dims print as numbers, dim_param names, or ? when dynamic and unnamed.",
};

/* fuzz_onnx_model.c — the fuzz target of the ONNX model and tensor loaders.
 *
 * LLVMFuzzerTestOneInput parses one input as a model (printing and importing what loads)
 * and as a tensor, and frees everything. Two drivers use it: the bounded mutation loop of the test suite
 * (test_fuzz_onnx.c) and libFuzzer (tests/fuzz/run_libfuzzer). No Criterion here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "fuzz/fuzz_onnx.h"

size_t loom_fuzz_onnx_ok, loom_fuzz_onnx_errors;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  loom_onnx_model *m = NULL;
  loom_status s = loom_onnx_model_parse(data, size, "fuzz.onnx", NULL, &m);
  if (s == LOOM_OK) {
    /* Exercise the printer on whatever loaded. */
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_onnx_model_print_sb(m, &sb);
    loom_strbuf_free(&sb);
    /* ... and the graph importer (which folds constant nodes in the interpreter). */
    loom_graph_module *gm = NULL;
    loom_status is = loom_onnx_import(m, &gm);
    loom_status_free(is);
    loom_graph_module_destroy(gm);
    loom_onnx_model_free(m);
    loom_fuzz_onnx_ok++;
  } else {
    /* Every failure names the input. */
    if (!loom_status_is_static(s) && strstr(loom_status_text(s, 0), "fuzz.onnx") == NULL) {
      fprintf(stderr, "status without the file name: %s\n", loom_status_text(s, 0));
      abort();
    }
    loom_status_free(s);
    loom_fuzz_onnx_errors++;
  }
  loom_arena arena;
  loom_arena_init(&arena, NULL, 0);
  loom_onnx_tensor *t;
  s = loom_onnx_tensor_parse(data, size, "fuzz.pb", &arena, &t);
  loom_status_free(s);
  loom_arena_destroy(&arena);
  return 0;
}


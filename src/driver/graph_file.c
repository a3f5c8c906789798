/* graph_file.c — the one way CLI commands load a module: a .loom file (read, parsed,
 * verified) or an ONNX model (.onnx: loaded, imported to @main, verified). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "driver/graph_file.h"
#include "frontend/onnx/onnx_import.h"

bool loom_driver_is_onnx_path(const char *path) {
  size_t n = strlen(path);
  return n >= 5 && strcmp(path + n - 5, ".onnx") == 0;
}

/* Verifies an imported module; on failure prints and destroys it. */
static int verify_or_drop(loom_diag_list *dl, loom_graph_module **m) {
  loom_status st = loom_graph_verify(*m, dl);
  if (!st) return 0;
  if (dl->errors) loom_diag_list_print(stderr, dl);
  else loom_status_fprint(stderr, st);
  loom_status_free(st);
  loom_graph_module_destroy(*m);
  *m = NULL;
  loom_diag_list_destroy(dl);
  return 1;
}

static int load_onnx(const char *path, loom_diag_list *dl, loom_graph_module **out) {
  loom_onnx_model *model;
  loom_status s = loom_onnx_model_load(path, &model);
  if (!s) s = loom_onnx_import_adopting(model, out); /* the module keeps the model: weights not copied */
  if (s) {
    loom_status_fprint(stderr, s);
    loom_status_free(s);
    loom_diag_list_destroy(dl);
    return 1;
  }
  return verify_or_drop(dl, out);
}

int loom_driver_load_graph(const char *path, loom_diag_list *dl, loom_graph_module **out) {
  *out = NULL;
  loom_diag_list_init(dl, NULL);
  if (loom_driver_is_onnx_path(path)) return load_onnx(path, dl, out);
  char *text;
  size_t len;
  loom_status rs = loom_file_read_limited(path, "module", LOOM_FILE_LIMIT_TEXT, &text, &len);
  if (rs) {
    loom_status_fprint(stderr, rs);
    loom_status_free(rs);
    loom_diag_list_destroy(dl);
    return 1;
  }
  loom_source src = {path, text, len};
  loom_status st = loom_graph_parse(&src, dl, out);
  if (!st) st = loom_graph_verify(*out, dl);
  if (st) {
    if (dl->errors) loom_diag_list_print(stderr, dl);
    else loom_status_fprint(stderr, st);
    loom_status_free(st);
    loom_graph_module_destroy(*out);
    *out = NULL;
    loom_diag_list_destroy(dl);
    free(text);
    return 1;
  }
  free(text);
  return 0;
}

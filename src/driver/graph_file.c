/* graph_file.c — reads, parses and verifies a .loom file for `loom check` / `loom eval`. */
#include <stdio.h>
#include <stdlib.h>

#include "base/file.h"
#include "driver/graph_file.h"

int loom_driver_load_graph(const char *path, loom_diag_list *dl, loom_graph_module **out) {
  *out = NULL;
  loom_diag_list_init(dl, NULL);
  char *text;
  size_t len;
  loom_status rs = loom_file_read(path, &text, &len);
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

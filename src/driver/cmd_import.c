/* cmd_import.c — `loom import MODEL.onnx [-o OUT.loom]`: the ONNX model imported to graph IR
 * text (initializers as module constants), verified, written to OUT.loom (or stdout). The
 * output is written to a temporary file in the same directory and renamed into place, so a
 * failure never leaves a half-written OUT.loom. Bad input: the importer's error, exit 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "driver/commands.h"
#include "driver/graph_file.h"
#include "graph/graph.h"

/* Writes `text` to `path` through `path.tmp.XXXXXX` + rename. */
static int write_atomic(const char *path, const char *text, size_t len) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp) return fprintf(stderr, "error: out of memory\n"), 1;
  snprintf(tmp, n + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fprintf(stderr, "error: %s: cannot create a temporary file next to it: %s\n", path, strerror(errno));
    free(tmp);
    return 1;
  }
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask); /* mkstemp's 0600 -> what a plain create would give */
  FILE *f = fdopen(fd, "wb");
  bool ok = f && fwrite(text, 1, len, f) == len;
  int err = errno;
  if (f) ok = (fclose(f) == 0) && ok;
  else close(fd);
  if (ok && rename(tmp, path) != 0) ok = false, err = errno;
  if (!ok) {
    fprintf(stderr, "error: %s: cannot write: %s\n", path, strerror(err));
    remove(tmp);
  }
  free(tmp);
  return ok ? 0 : 1;
}

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0], *out = loom_cli_get(args, "-o");
  if (!loom_driver_is_onnx_path(path)) {
    fprintf(stderr, "error: %s: expected an ONNX model (a .onnx file)\n", path);
    return LOOM_EXIT_FAILURE;
  }
  loom_graph_module *m;
  loom_diag_list dl;
  if (loom_driver_load_graph(path, &dl, &m)) return LOOM_EXIT_FAILURE;
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "// imported from %s by loom import\n", path);
  loom_graph_print_module(m, &sb);
  int rc = LOOM_EXIT_OK;
  if (sb.oom) fprintf(stderr, "error: out of memory\n"), rc = LOOM_EXIT_FAILURE;
  else if (!out) fputs(loom_strbuf_cstr(&sb), stdout);
  else if (write_atomic(out, loom_strbuf_cstr(&sb), strlen(loom_strbuf_cstr(&sb)))) rc = LOOM_EXIT_FAILURE;
  loom_strbuf_free(&sb);
  loom_graph_module_destroy(m);
  loom_diag_list_destroy(&dl);
  return rc;
}

const loom_cli_command loom_cmd_import = {
    .name = "import",
    .summary = "import an ONNX model and write it as graph IR text (.loom)",
    .positional = "MODEL.onnx",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{"-o", "OUT.loom", "write the module here (default: stdout)", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Graph inputs become @main's parameters (dim_param names become symbolic vars), "
               "initializers module constants. check, eval and opt also take a .onnx file directly.",
};

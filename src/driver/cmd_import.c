/* cmd_import.c — `loom import MODEL.onnx [-o OUT.loom] [--inline-weights]`: the ONNX model
 * imported to graph IR text (initializers as module constants), verified, written to OUT.loom
 * (or stdout). With -o, constants of at least IMPORT_WEIGHTS_MIN elements go to OUT.safetensors
 * beside it (binary, mapped when the module is read: docs/ir.md "Weights files") and the text
 * refers to them by name; --inline-weights (and stdout) writes every value into the text. Both
 * files are written to temporaries in their directory and renamed into place, the weights first,
 * so a failure never leaves a half-written file. Bad input: the importer's error, exit 1. */
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
#include "graph/passes.h"
#include "graph/safetensors.h"

/* Constants with fewer elements stay in the text (scalars, shapes, small biases read better there). */
enum { IMPORT_WEIGHTS_MIN = 64 };

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

/* OUT.loom -> OUT.safetensors (a name not ending in .loom gets .safetensors appended); malloc'd. */
static char *weights_path(const char *out) {
  size_t n = strlen(out);
  if (n > 5 && !strcmp(out + n - 5, ".loom")) n -= 5;
  char *w = malloc(n + 13);
  if (w) memcpy(w, out, n), memcpy(w + n, ".safetensors", 13);
  return w;
}

/* Writes the large constants of m to `wpath` and makes the text refer to them (by the file's
 * base name: it sits beside the module). 0, or 1 after printing the error. */
static int write_weights(loom_graph_module *m, const char *wpath) {
  size_t n = loom_graph_module_num_consts(m), k = 0;
  loom_safetensors_tensor *ts = calloc(n ? n : 1, sizeof *ts);
  int64_t *dims = calloc(n ? n : 1, LOOM_SAFETENSORS_MAX_RANK * sizeof *dims);
  size_t *which = calloc(n ? n : 1, sizeof *which);
  if (!ts || !dims || !which) {
    free(ts), free(dims), free(which);
    return fprintf(stderr, "error: out of memory\n"), 1;
  }
  for (size_t i = 0; i < n; i++) {
    const loom_graph_const *c = loom_graph_module_const_at(m, i);
    const loom_sinfo *si = c->expr->sinfo;
    size_t es = loom_dtype_size(si->dtype);
    if (!loom_safetensors_has_dtype(si->dtype) || si->ndim > LOOM_SAFETENSORS_MAX_RANK ||
        c->expr->u.cnst.nbytes / es < IMPORT_WEIGHTS_MIN)
      continue;
    int64_t *d = dims + k * LOOM_SAFETENSORS_MAX_RANK;
    bool ok = true;
    for (int a = 0; a < si->ndim; a++) ok = ok && loom_sym_is_const(si->dims[a], &d[a]);
    if (!ok) continue;
    ts[k] = (loom_safetensors_tensor){c->name, si->dtype, si->ndim, d, c->expr->u.cnst.data, c->expr->u.cnst.nbytes};
    which[k++] = i;
  }
  loom_status st = k ? loom_safetensors_write(wpath, k, ts) : LOOM_OK;
  const char *slash = strrchr(wpath, '/'), *base = slash ? slash + 1 : wpath;
  for (size_t j = 0; !st && j < k; j++) st = loom_graph_module_const_set_weights(m, which[j], base, ts[j].name);
  free(ts), free(dims), free(which);
  if (st) {
    fprintf(stderr, "error: %s\n", loom_status_message(st));
    loom_status_free(st);
    return 1;
  }
  return 0;
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
  int rc = LOOM_EXIT_OK;
  if (loom_cli_flag(args, "--serving")) {
    loom_graph_serving_info info;
    loom_status st = loom_graph_serving_from_decoder(m, path, &info);
    if (st) rc = loom_cli_exit(st);
  }
  if (!rc && out && !loom_cli_flag(args, "--inline-weights")) {
    char *wpath = weights_path(out);
    if (!wpath || write_weights(m, wpath)) rc = LOOM_EXIT_FAILURE;
    free(wpath);
  }
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_strbuf_printf(&sb, "// imported from %s by loom import\n", path);
  if (!rc) {
    loom_graph_print_module(m, &sb);
    if (sb.oom) fprintf(stderr, "error: out of memory\n"), rc = LOOM_EXIT_FAILURE;
    else if (!out) fputs(loom_strbuf_cstr(&sb), stdout);
    else if (write_atomic(out, loom_strbuf_cstr(&sb), strlen(loom_strbuf_cstr(&sb)))) rc = LOOM_EXIT_FAILURE;
  }
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
                                   {"--inline-weights", NULL, "write every constant's values into the text (no OUT.safetensors)", false},
                                   {"--serving", NULL, "rewrite a decoder with past/present key/values into loom serve's form (docs/serve.md)", false},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Graph inputs become @main's parameters (dim_param names become symbolic vars), "
               "initializers module constants. With -o, constants of 64 elements or more go to OUT.safetensors "
               "beside OUT.loom, which refers to them by name (weights(\"OUT.safetensors\", \"name\")). "
               "check, eval and opt also take a .onnx file directly.",
};

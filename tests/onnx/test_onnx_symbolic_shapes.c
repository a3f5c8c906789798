/* test_onnx_symbolic_shapes.c — shape computations folded to symbolic dims at import.
 *
 * models/tiny_transformer/model.onnx is a 2-layer, d=64 transformer exported from PyTorch with
 * dynamic `batch` and `seq` axes (models/tiny_transformer/gen.py). Its graph computes shapes at
 * run time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range(0, seq), a causal mask from
 * ConstantOfShape). Imported, every dim must be an expression of batch and seq, no shape tensor
 * may be left, and the interpreter must equal ONNX Runtime's outputs (saved by gen.py) at
 * several shapes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "graph/npy_io.h"
#include "onnx/onnx_test.h"

#define TINY "models/tiny_transformer"

static loom_graph_module *import_file(const char *path) {
  loom_onnx_model *m;
  loom_status s = loom_onnx_model_load(path, &m);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(m, &gm);
  cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
  loom_onnx_model_free(m);
  return gm;
}

static char *print_module(const loom_graph_module *gm) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(gm, &sb);
  char *text = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return text;
}

LOOM_TEST(onnx, pytorch_transformer_imports_with_every_dim_symbolic) {
  loom_graph_module *gm = import_file(TINY "/model.onnx");
  char *text = print_module(gm);
  cr_assert(strstr(text, "fn @main(tokens: Tensor[(batch, seq), i64]) -> Tensor[(batch, seq, 256), f32]"), "%.400s", text);
  cr_assert(strstr(text, "reshape(") && strstr(text, "shape=[batch, seq, 4, 16]"), "head split reshape is symbolic");
  cr_assert(strstr(text, "arange(start=[0], end=[seq]"), "positions are arange(0, seq)");
  cr_assert_null(strstr(text, "unk"), "an unknown dim is left");
  cr_assert_null(strstr(text, "tensor_to_shape"), "a shape is read at run time");
  cr_assert_null(strstr(text, "sym_tensor"), "a shape tensor is left");
  cr_assert_null(strstr(text, "shape_of"), "a shape is read at run time");
  free(text);
  loom_graph_module_destroy(gm);
}

LOOM_TEST(onnx, pytorch_transformer_equals_onnx_runtime) {
  loom_graph_module *gm = import_file(TINY "/model.onnx");
  static const char *shapes[] = {"1x1", "2x7", "3x16", "1x61", "4x33"};
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    char path[256];
    loom_graph_value arg = {.kind = LOOM_SINFO_TENSOR}, res;
    loom_graph_tensor want;
    snprintf(path, sizeof path, TINY "/ref_%s_tokens.npy", shapes[i]);
    loom_status s = loom_graph_npy_read(path, &arg.t);
    cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
    snprintf(path, sizeof path, TINY "/ref_%s_logits.npy", shapes[i]);
    s = loom_graph_npy_read(path, &want);
    cr_assert(s == LOOM_OK, "%s", loom_status_text(s, 1));
    s = loom_graph_eval(gm, "main", 1, &arg, NULL, &res);
    cr_assert(s == LOOM_OK, "%s: %s", shapes[i], loom_status_text(s, 1));
    cr_assert_eq(res.t.ndim, 3);
    for (int d = 0; d < 3; d++) cr_assert_eq(res.t.shape[d], want.shape[d], "%s axis %d", shapes[i], d);
    double worst = 0, scale = 0;
    for (size_t k = 0; k < want.numel; k++) scale = fmax(scale, fabs(loom_graph_tensor_get_f64(&want, k)));
    for (size_t k = 0; k < want.numel; k++)
      worst = fmax(worst, fabs(loom_graph_tensor_get_f64(&res.t, k) - loom_graph_tensor_get_f64(&want, k)) / scale);
    cr_assert_lt(worst, 1e-5, "%s: relative error %g against ONNX Runtime", shapes[i], worst);
    loom_graph_value_free(&res);
    loom_graph_value_free(&arg);
    loom_graph_tensor_free(&want);
  }
  loom_graph_module_destroy(gm);
}

/* ViT's position embeddings: a bicubic Resize whose sizes (computed from the image's shape) name
 * every axis, batch and channels kept. Those two are provably their input extents, so they are
 * copied, not interpolated: the resize names axes [2, 3] (4 x 4 taps per element, not 4^4). */
LOOM_TEST(onnx, resize_sizes_from_shapes_resize_only_the_axes_that_change) {
  loom_graph_module *gm = import_file("models/torch_export/vit/model.onnx");
  char *text = print_module(gm);
  const char *r = strstr(text, "= resize(");
  cr_assert(r, "no resize in %.400s", text);
  const char *eol = strchr(r, '\n');
  cr_assert(eol && strstr(r, "axes=[2, 3], by=\"sizes\"") && strstr(r, "axes=[2, 3], by=\"sizes\"") < eol, "%.300s", r);
  free(text);
  loom_graph_module_destroy(gm);
}

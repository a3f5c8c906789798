/* onnx_test.h — what the ONNX test files share: the suite's location, an error check, and
 * one-node models built and imported in memory. */
#ifndef LOOM_TESTS_ONNX_TEST_H
#define LOOM_TESTS_ONNX_TEST_H

#include <string.h>

#include "frontend/onnx/onnx_import.h"
#include "frontend/onnx/onnx_model.h"
#include "onnx/pb_writer.h"
#include "support/loom_test.h"

/* The ONNX backend node tests, relative to the repository root (the tests' working directory). */
#define NODE_DIR "../shared/conformance/onnx-backend-1.22/node"

/* Asserts `s` failed with LOOM_CODE_<code> and a message containing `needle`, then frees it. */
#define EXPECT_ERROR(s, code, needle)                                                                 \
  do {                                                                                                \
    loom_status s_ = (s);                                                                             \
    cr_assert(s_ != LOOM_OK, "expected an error containing '%s'", needle);                            \
    const char *t_ = loom_status_text(s_, 0);                                                         \
    cr_assert_eq(loom_status_code(s_), LOOM_CODE_##code, "wrong code: %s", t_);                       \
    cr_assert(strstr(t_, needle) != NULL, "message lacks '%s': %s", needle, t_);                      \
    loom_status_free(s_);                                                                             \
  } while (0)

/* A one-node model input or output: name, ONNX element type, rank (-1: no shape) and dims
 * (numbers, dim_param names, "?"). */
typedef struct onnx_test_io {
  const char *name;
  int elem, rank;
  const char *dims[4];
} onnx_test_io;

/* Builds a model (opset 25) of one node `op` named `node` on inputs ins with one output out and
 * attributes attrs (consumed), loads it into *mm and imports it into *gm. */
static inline loom_status onnx_test_import_one(const char *op, const char *node, const onnx_test_io *ins, size_t nin,
                                               const onnx_test_io *out, pb *attrs, loom_onnx_model **mm,
                                               loom_graph_module **gm) {
  pb g = {0}, model = {0};
  const char *names[8] = {NULL}, *outs[] = {out->name, NULL};
  for (size_t i = 0; i < nin; i++) names[i] = ins[i].name;
  pb_node(&g, op, node, names, outs, attrs);
  for (size_t i = 0; i < nin; i++) pb_value_info(&g, 11, ins[i].name, ins[i].elem, ins[i].rank, (const char **)ins[i].dims);
  pb_value_info(&g, 12, out->name, out->elem, out->rank, (const char **)out->dims);
  pb_model(&model, 25, &g);
  loom_status s = loom_onnx_model_parse(model.d, model.len, "mem.onnx", NULL, mm);
  pb_free(&model);
  *gm = NULL;
  return s ? s : loom_onnx_import(*mm, gm);
}

/* Appends an int attribute `name` = v to attrs. */
static inline void onnx_test_int_attr(pb *attrs, const char *name, int64_t v) {
  pb a = {0};
  pb_str(&a, 1, name), pb_int(&a, 20, 2), pb_int(&a, 3, v), pb_msg(attrs, 5, &a);
}

/* Decodes the TensorProto in `p` (then frees it) into `arena`; *out (may be NULL) gets it. */
static inline loom_status onnx_test_parse_tensor(pb *p, loom_arena *arena, loom_onnx_tensor **out) {
  loom_onnx_tensor *t = NULL;
  loom_status s = loom_onnx_tensor_parse(p->d, p->len, "t.pb", arena, &t);
  pb_free(p);
  if (out) *out = t;
  return s;
}

#endif

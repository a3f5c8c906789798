/* onnx_test.h — what the ONNX test files share: the suite's location and an error check. */
#ifndef LOOM_TESTS_ONNX_TEST_H
#define LOOM_TESTS_ONNX_TEST_H

#include <string.h>

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

#endif

/* test_status.c — statuses: codes, messages, context chaining, propagation, OOM. */
#include <string.h>

#include "base/alloc.h"
#include "base/status.h"
#include "support/loom_test.h"

static loom_status leaf(int axis) {
  if (axis > 2) return LOOM_ERROR(OUT_OF_RANGE, "axis %d out of range for rank 3", axis);
  return LOOM_OK;
}

static loom_status middle(int axis) {
  LOOM_RETURN_IF_ERROR(leaf(axis), "while inferring %s", "sum");
  return LOOM_OK;
}

static loom_status top(int axis) {
  LOOM_RETURN_IF_ERROR(middle(axis), "while checking function @%s", "main");
  return LOOM_OK;
}

static loom_status passthrough(int axis) {
  LOOM_PROPAGATE(top(axis));
  return LOOM_OK;
}

LOOM_TEST(status, ok_is_null_and_has_code_ok) {
  cr_assert_null(top(1));
  cr_assert_eq(loom_status_code(LOOM_OK), LOOM_CODE_OK);
  cr_assert_str_eq(loom_status_message(LOOM_OK), "");
  loom_status_free(LOOM_OK);
}

LOOM_TEST(status, context_chains_in_order) {
  loom_status s = passthrough(5);
  cr_assert_not_null(s);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_OUT_OF_RANGE);
  cr_assert_str_eq(loom_status_message(s), "axis 5 out of range for rank 3");
  cr_assert_str_eq(loom_status_text(s, 0),
                   "out of range: axis 5 out of range for rank 3\n"
                   "  while inferring sum\n"
                   "  while checking function @main");
  const char *with_origin = loom_status_text(s, 1);
  cr_assert(strstr(with_origin, "[test_status.c:") != NULL, "origin printed: %s", with_origin);
  loom_status_free(s);
}

LOOM_TEST(status, code_names_cover_every_code) {
  for (int c = 0; c < LOOM_CODE_COUNT; c++) cr_assert_str_neq(loom_code_name((loom_code)c), "unknown");
  cr_assert_str_eq(loom_code_name(LOOM_CODE_COUNT), "unknown");
  cr_assert_str_eq(loom_code_name(LOOM_CODE_RESOURCE_EXHAUSTED), "out of memory");
}

LOOM_TEST(status, ok_code_is_never_a_failure) {
  loom_status s = loom_status_make(LOOM_CODE_OK, __FILE__, __LINE__, "misuse");
  cr_assert_not_null(s);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_INTERNAL);
  loom_status_free(s);
}

LOOM_TEST(status, allocation_failure_is_reported_not_crashed) {
  /* Statuses use malloc, not the injectable allocators: an injected OOM in the
   * code under test can still be reported in full. */
  loom_alloc_fail_after(0);
  loom_status s = LOOM_OOM();
  loom_alloc_fail_after(-1);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_RESOURCE_EXHAUSTED);
  loom_status_free(s);
}

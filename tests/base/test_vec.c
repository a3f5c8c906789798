/* test_vec.c — typed vectors: growth, contents, failure leaves the vector intact. */
#include "base/vec.h"
#include "support/loom_test.h"

typedef LOOM_VEC(int64_t) i64_vec;
typedef struct pair {
  int a;
  double b;
} pair;
typedef LOOM_VEC(pair) pair_vec;

LOOM_TEST(vec, push_many_keeps_every_element) {
  i64_vec v = {0};
  for (int64_t i = 0; i < 100000; i++) cr_assert(LOOM_VEC_PUSH(NULL, &v, i * 3));
  cr_assert_eq(v.len, 100000);
  cr_assert_geq(v.cap, v.len);
  for (int64_t i = 0; i < 100000; i++) cr_assert_eq(v.data[i], i * 3);
  cr_assert_eq(LOOM_VEC_POP(&v), 99999 * 3);
  cr_assert_eq(LOOM_VEC_LAST(&v), 99998 * 3);
  LOOM_VEC_FREE(NULL, &v);
  cr_assert_null(v.data);
  cr_assert_eq(v.len, 0);
}

LOOM_TEST(vec, struct_elements) {
  pair_vec v = {0};
  for (int i = 0; i < 50; i++) cr_assert(LOOM_VEC_PUSH(NULL, &v, ((pair){i, i / 2.0})));
  cr_assert_eq(v.data[49].a, 49);
  cr_assert_float_eq(v.data[49].b, 24.5, 0);
  LOOM_VEC_FREE(NULL, &v);
}

LOOM_TEST(vec, reserve_and_failure_keep_contents) {
  i64_vec v = {0};
  cr_assert(LOOM_VEC_RESERVE(NULL, &v, 8));
  for (int i = 0; i < 8; i++) cr_assert(LOOM_VEC_PUSH(NULL, &v, i));
  loom_alloc_fail_after(0);
  cr_assert_not(LOOM_VEC_PUSH(NULL, &v, 8), "growth fails under injected OOM");
  loom_alloc_fail_after(-1);
  cr_assert_eq(v.len, 8);
  for (int i = 0; i < 8; i++) cr_assert_eq(v.data[i], i);
  cr_assert_not(LOOM_VEC_RESERVE(NULL, &v, SIZE_MAX / 2), "overflowing reserve fails");
  cr_assert_eq(v.len, 8);
  LOOM_VEC_FREE(NULL, &v);
}

/* test_alloc.c — allocators: alignment, overflow checks, fault injection. */
#include <string.h>

#include "base/alloc.h"
#include "support/loom_test.h"

LOOM_TEST(alloc, aligned_allocations) {
  for (size_t align = 1; align <= 4096; align *= 2) {
    unsigned char *p = loom_alloc_aligned(NULL, 100, align);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % align, 0);
    memset(p, 0, 100);
    loom_free(NULL, p, 100);
  }
  cr_assert_null(loom_alloc_aligned(NULL, 8, 24), "alignment must be a power of two");
}

LOOM_TEST(alloc, overflow_checked_sizes) {
  size_t out;
  cr_assert_not(loom_size_mul(SIZE_MAX / 2 + 1, 2, &out));
  cr_assert(loom_size_mul(3, 5, &out));
  cr_assert_eq(out, 15);
  cr_assert_not(loom_size_add(SIZE_MAX, 1, &out));
  cr_assert_not(loom_size_align_up(SIZE_MAX - 2, 64, &out));
  cr_assert(loom_size_align_up(65, 64, &out));
  cr_assert_eq(out, 128);
  cr_assert_null(loom_alloc_array(NULL, SIZE_MAX / 4, 8));
}

LOOM_TEST(alloc, fault_injection_counts_down_then_fails_until_reset) {
  loom_alloc_fail_after(2);
  void *a = loom_alloc(NULL, 8), *b = loom_alloc(NULL, 8), *c = loom_alloc(NULL, 8);
  void *d = loom_alloc_zero(NULL, 8);
  cr_assert_not_null(a);
  cr_assert_not_null(b);
  cr_assert_null(c);
  cr_assert_null(d);
  cr_assert_eq(loom_alloc_injected_failures(), 2);
  loom_alloc_fail_after(-1);
  void *e = loom_alloc(NULL, 8);
  cr_assert_not_null(e);
  loom_free(NULL, a, 8);
  loom_free(NULL, b, 8);
  loom_free(NULL, e, 8);
}

LOOM_TEST(alloc, realloc_failure_keeps_the_block) {
  char *p = loom_alloc(NULL, 4);
  memcpy(p, "abc", 4);
  loom_alloc_fail_after(0);
  cr_assert_null(loom_realloc(NULL, p, 4, 1 << 20));
  loom_alloc_fail_after(-1);
  cr_assert_str_eq(p, "abc");
  loom_free(NULL, p, 4);
}

LOOM_TEST(alloc, large_allocations_are_page_aligned_and_injectable) {
  size_t sizes[] = {0, 1, LOOM_ALLOC_LARGE_MIN, 3 * LOOM_ALLOC_LARGE_MIN + 5};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    unsigned char *p = loom_alloc_large(sizes[i]);
    cr_assert_not_null(p, "size %zu", sizes[i]);
    cr_assert_eq((uintptr_t)p % 4096, 0);
    cr_assert_eq(p[sizes[i] ? sizes[i] - 1 : 0], 0, "fresh mappings read as zeros");
    memset(p, 0x5a, sizes[i]);
    loom_free_large(p, sizes[i]);
  }
  loom_free_large(NULL, 0);
  loom_alloc_fail_after(0);
  cr_assert_null(loom_alloc_large(LOOM_ALLOC_LARGE_MIN));
  cr_assert_eq(loom_alloc_injected_failures(), 1);
  loom_alloc_fail_after(-1);
}

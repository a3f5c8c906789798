/* test_arena.c — arena: alignment, marks and reset, large blocks, overflow, OOM. */
#include <string.h>

#include "base/arena.h"
#include "support/loom_test.h"

LOOM_TEST(arena, alignment_for_every_power_of_two) {
  loom_arena a;
  loom_arena_init(&a, NULL, 256);
  for (size_t align = 1; align <= 8192; align *= 2) {
    for (size_t size = 1; size < 40; size += 13) {
      unsigned char *p = loom_arena_alloc(&a, size, align);
      cr_assert_not_null(p);
      cr_assert_eq((uintptr_t)p % align, 0, "align %zu size %zu", align, size);
      memset(p, 0xab, size); /* ASan checks the whole block is ours */
    }
  }
  cr_assert_null(loom_arena_alloc(&a, 8, 3), "non-power-of-two alignment is refused");
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, allocations_do_not_overlap) {
  loom_arena a;
  loom_arena_init(&a, NULL, 128);
  unsigned char *ptrs[500];
  for (int i = 0; i < 500; i++) {
    ptrs[i] = loom_arena_alloc(&a, (size_t)(i % 37) + 1, 8);
    cr_assert_not_null(ptrs[i]);
    memset(ptrs[i], i & 0xff, (size_t)(i % 37) + 1);
  }
  for (int i = 0; i < 500; i++)
    for (int k = 0; k < (i % 37) + 1; k++) cr_assert_eq(ptrs[i][k], i & 0xff);
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, large_blocks_get_their_own_block) {
  loom_arena a;
  loom_arena_init(&a, NULL, 1024);
  void *small = loom_arena_alloc(&a, 16, 16);
  unsigned char *big = loom_arena_alloc(&a, 10 * 1024 * 1024, 64);
  cr_assert_not_null(small);
  cr_assert_not_null(big);
  cr_assert_eq((uintptr_t)big % 64, 0);
  memset(big, 1, 10 * 1024 * 1024);
  cr_assert_geq(a.bytes_reserved, 10u * 1024 * 1024);
  loom_arena_destroy(&a);
  cr_assert_eq(a.bytes_reserved, 0);
}

LOOM_TEST(arena, mark_and_reset_free_what_came_after) {
  loom_arena a;
  loom_arena_init(&a, NULL, 512);
  char *keep = loom_arena_strdup(&a, "kept");
  loom_arena_mark m = loom_arena_get_mark(&a);
  size_t reserved = a.bytes_reserved;
  for (int i = 0; i < 100; i++) cr_assert_not_null(loom_arena_alloc(&a, 200, 8));
  cr_assert_gt(a.bytes_reserved, reserved);
  loom_arena_reset_to(&a, m);
  cr_assert_eq(a.bytes_reserved, reserved);
  cr_assert_str_eq(keep, "kept");
  /* The space after the mark is handed out again. */
  char *again = loom_arena_alloc(&a, 1, 1);
  cr_assert_eq(again, keep + 5);
  loom_arena_reset(&a);
  cr_assert_eq(a.bytes_reserved, 0);
  cr_assert_not_null(loom_arena_alloc(&a, 10, 8), "usable after reset");
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, overflowing_sizes_fail_cleanly) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  cr_assert_null(loom_arena_alloc(&a, SIZE_MAX, 8));
  cr_assert_null(loom_arena_alloc(&a, SIZE_MAX - 8, 16));
  cr_assert_null(loom_arena_array(&a, SIZE_MAX / 2, 4, 4));
  cr_assert_not_null(loom_arena_alloc(&a, 8, 8), "still usable");
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, out_of_memory_returns_null) {
  loom_arena a;
  loom_arena_init(&a, NULL, 256);
  loom_alloc_fail_after(0);
  cr_assert_null(loom_arena_alloc(&a, 10, 8));
  cr_assert_eq(loom_alloc_injected_failures(), 1);
  loom_alloc_fail_after(-1);
  cr_assert_not_null(loom_arena_alloc(&a, 10, 8));
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, printf_and_strndup) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  cr_assert_str_eq(loom_arena_printf(&a, "%s_%d", "n", 42), "n_42");
  cr_assert_str_eq(loom_arena_strndup(&a, "abcdef", 3), "abc");
  loom_arena_destroy(&a);
}

LOOM_TEST(arena, large_blocks_of_the_system_allocator_are_mappings) {
  loom_arena a;
  loom_arena_init(&a, NULL, 256);
  unsigned char *small = loom_arena_alloc(&a, 8, 8);
  unsigned char *big = loom_arena_alloc(&a, 4 * LOOM_ALLOC_LARGE_MIN, 64);
  unsigned char *after = loom_arena_alloc(&a, 8, 8);
  cr_assert(small && big && after);
  memset(big, 7, 4 * LOOM_ALLOC_LARGE_MIN); /* all of it ours */
  cr_assert_eq((uintptr_t)big % 64, 0);
  loom_arena_mark m = loom_arena_get_mark(&a);
  cr_assert_not_null(loom_arena_alloc(&a, LOOM_ALLOC_LARGE_MIN, 16));
  loom_arena_reset_to(&a, m); /* a mapped block freed by a reset */
  cr_assert_eq(big[4 * LOOM_ALLOC_LARGE_MIN - 1], 7);
  loom_alloc_fail_after(0);
  cr_assert_null(loom_arena_alloc(&a, 2 * LOOM_ALLOC_LARGE_MIN, 16), "a large block fails cleanly");
  loom_alloc_fail_after(-1);
  loom_arena_destroy(&a);
  cr_assert_eq(a.bytes_reserved, 0);
}

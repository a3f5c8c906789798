/* test_intern.c — interning gives one pointer per distinct string. */
#include <stdio.h>
#include <string.h>

#include "base/intern.h"
#include "support/loom_test.h"

LOOM_TEST(intern, equal_strings_same_pointer) {
  loom_interner in;
  loom_interner_init(&in, NULL);
  char a[] = "seq_len", b[] = "seq_len_extra";
  const char *p = loom_intern_cstr(&in, a);
  const char *q = loom_intern(&in, b, 7);
  cr_assert_eq(p, q);
  cr_assert_str_eq(p, "seq_len");
  cr_assert_neq(p, a, "the interned copy is not the caller's buffer");
  cr_assert_neq(loom_intern_cstr(&in, "seq"), p);
  cr_assert_eq(in.count, 2);
  loom_interner_destroy(&in);
}

LOOM_TEST(intern, many_strings_and_empty_string) {
  loom_interner in;
  loom_interner_init(&in, NULL);
  const char *first[20000];
  char buf[32];
  for (int i = 0; i < 20000; i++) {
    snprintf(buf, sizeof buf, "v%d", i);
    first[i] = loom_intern_cstr(&in, buf);
    cr_assert_not_null(first[i]);
  }
  for (int i = 0; i < 20000; i++) {
    snprintf(buf, sizeof buf, "v%d", i);
    cr_assert_eq(loom_intern_cstr(&in, buf), first[i]);
  }
  const char *e = loom_intern(&in, "", 0);
  cr_assert_str_eq(e, "");
  cr_assert_eq(loom_intern(&in, "x", 0), e);
  cr_assert_eq(in.count, 20001);
  loom_interner_destroy(&in);
}

LOOM_TEST(intern, embedded_bytes_compare_exactly) {
  loom_interner in;
  loom_interner_init(&in, NULL);
  const char *p = loom_intern(&in, "a\0b", 3);
  const char *q = loom_intern(&in, "a\0c", 3);
  cr_assert_neq(p, q);
  cr_assert_eq(memcmp(p, "a\0b", 3), 0);
  loom_interner_destroy(&in);
}

LOOM_TEST(intern, out_of_memory_returns_null) {
  loom_interner in;
  loom_interner_init(&in, NULL);
  loom_alloc_fail_after(0);
  cr_assert_null(loom_intern_cstr(&in, "x"));
  loom_alloc_fail_after(-1);
  cr_assert_not_null(loom_intern_cstr(&in, "x"));
  loom_interner_destroy(&in);
}

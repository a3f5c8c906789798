/* test_strbuf.c — string builder: appends, printf, sticky OOM. */
#include "base/strbuf.h"
#include "support/loom_test.h"

LOOM_TEST(strbuf, appends_and_printf) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  cr_assert_str_eq(loom_strbuf_cstr(&sb), "");
  loom_strbuf_puts(&sb, "Tensor[(");
  for (int i = 0; i < 1000; i++) loom_strbuf_printf(&sb, "%s%d", i ? ", " : "", i);
  loom_strbuf_putc(&sb, ')');
  cr_assert_not(sb.oom);
  cr_assert_eq(sb.data[sb.len], '\0');
  cr_assert(sb.len > 4000);
  loom_strbuf_clear(&sb);
  cr_assert_str_eq(loom_strbuf_cstr(&sb), "");
  loom_strbuf_free(&sb);
}

LOOM_TEST(strbuf, out_of_memory_is_sticky) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_alloc_fail_after(0);
  loom_strbuf_puts(&sb, "hello");
  loom_alloc_fail_after(-1);
  cr_assert(sb.oom);
  loom_strbuf_puts(&sb, "more");
  cr_assert_eq(sb.len, 0, "no appends after OOM");
  loom_strbuf_free(&sb);
}

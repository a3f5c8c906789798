/* strbuf.h — a growable string for printers.
 *
 * Appends never fail loudly: on out-of-memory the buffer sets `oom` and ignores
 * further appends, so a printer appends freely and checks once at the end:
 *
 *     loom_strbuf sb; loom_strbuf_init(&sb, NULL);
 *     loom_strbuf_printf(&sb, "%s = %d", name, v);
 *     if (sb.oom) { loom_strbuf_free(&sb); return LOOM_OOM(); } */
#ifndef LOOM_BASE_STRBUF_H
#define LOOM_BASE_STRBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include "base/alloc.h"
#include "base/compiler.h"

typedef struct loom_strbuf {
  loom_allocator *alloc;
  char *data; /* NUL-terminated when len > 0 */
  size_t len;
  size_t cap;
  bool oom;   /* an append failed; contents are truncated */
} loom_strbuf;

void loom_strbuf_init(loom_strbuf *sb, loom_allocator *alloc);
void loom_strbuf_free(loom_strbuf *sb);
void loom_strbuf_append(loom_strbuf *sb, const char *s, size_t len);
void loom_strbuf_puts(loom_strbuf *sb, const char *s);
void loom_strbuf_putc(loom_strbuf *sb, char c);
void loom_strbuf_printf(loom_strbuf *sb, const char *fmt, ...) LOOM_PRINTF(2, 3);
void loom_strbuf_vprintf(loom_strbuf *sb, const char *fmt, va_list ap);
/* The contents ("" when empty); valid until the next append. */
const char *loom_strbuf_cstr(const loom_strbuf *sb);
void loom_strbuf_clear(loom_strbuf *sb);

#endif

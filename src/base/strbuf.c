/* strbuf.c — growable string with a sticky out-of-memory flag. */
#include "base/strbuf.h"

#include <stdio.h>
#include <string.h>

void loom_strbuf_init(loom_strbuf *sb, loom_allocator *alloc) {
  *sb = (loom_strbuf){.alloc = alloc};
}

void loom_strbuf_free(loom_strbuf *sb) {
  loom_free(sb->alloc, sb->data, sb->cap);
  loom_strbuf_init(sb, sb->alloc);
}

/* Room for `extra` more bytes plus the NUL. */
static bool reserve(loom_strbuf *sb, size_t extra) {
  if (sb->oom) return false;
  size_t need;
  if (!loom_size_add(sb->len, extra, &need) || !loom_size_add(need, 1, &need)) {
    sb->oom = true;
    return false;
  }
  if (need <= sb->cap) return true;
  size_t cap = sb->cap ? sb->cap : 64;
  while (cap < need) {
    if (!loom_size_mul(cap, 2, &cap)) {
      sb->oom = true;
      return false;
    }
  }
  char *p = loom_realloc(sb->alloc, sb->data, sb->cap, cap);
  if (!p) {
    sb->oom = true;
    return false;
  }
  sb->data = p;
  sb->cap = cap;
  return true;
}

void loom_strbuf_append(loom_strbuf *sb, const char *s, size_t len) {
  if (!reserve(sb, len)) return;
  if (len) memcpy(sb->data + sb->len, s, len);
  sb->len += len;
  sb->data[sb->len] = '\0';
}

void loom_strbuf_puts(loom_strbuf *sb, const char *s) { loom_strbuf_append(sb, s, strlen(s)); }

void loom_strbuf_putc(loom_strbuf *sb, char c) { loom_strbuf_append(sb, &c, 1); }

void loom_strbuf_vprintf(loom_strbuf *sb, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || !reserve(sb, (size_t)n)) return;
  vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
  sb->len += (size_t)n;
}

void loom_strbuf_printf(loom_strbuf *sb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  loom_strbuf_vprintf(sb, fmt, ap);
  va_end(ap);
}

const char *loom_strbuf_cstr(const loom_strbuf *sb) { return sb->len ? sb->data : ""; }

void loom_strbuf_clear(loom_strbuf *sb) {
  sb->len = 0;
  if (sb->data) sb->data[0] = '\0';
}

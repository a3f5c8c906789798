/* diag.c — recording and printing located diagnostics. */
#include "base/diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "base/strbuf.h"

void loom_source_line_col(const loom_source *src, size_t offset, size_t *line, size_t *col) {
  size_t l = 1, c = 1;
  if (offset > src->len) offset = src->len;
  for (size_t i = 0; i < offset; i++) {
    if (src->text[i] == '\n') {
      l++;
      c = 1;
    } else {
      c++;
    }
  }
  *line = l;
  *col = c;
}

void loom_diag_list_init(loom_diag_list *dl, loom_allocator *alloc) {
  *dl = (loom_diag_list){.alloc = alloc};
}

void loom_diag_list_destroy(loom_diag_list *dl) {
  for (size_t i = 0; i < dl->items.len; i++) free(dl->items.data[i].message);
  LOOM_VEC_FREE(dl->alloc, &dl->items);
  dl->errors = 0;
}

void loom_diag_addv(loom_diag_list *dl, loom_diag_severity sev, loom_loc loc, const char *fmt,
                    va_list ap) {
  if (sev == LOOM_DIAG_ERROR) dl->errors++; /* counted even if it cannot be stored */
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  char *msg = n < 0 ? NULL : malloc((size_t)n + 1);
  if (!msg) {
    dl->oom = true;
    return;
  }
  vsnprintf(msg, (size_t)n + 1, fmt, ap);
  loom_diag d = {sev, loc, msg};
  if (!LOOM_VEC_PUSH(dl->alloc, &dl->items, d)) {
    free(msg);
    dl->oom = true;
  }
}

void loom_diag_add(loom_diag_list *dl, loom_diag_severity sev, loom_loc loc, const char *fmt,
                   ...) {
  va_list ap;
  va_start(ap, fmt);
  loom_diag_addv(dl, sev, loc, fmt, ap);
  va_end(ap);
}

static const char *severity_name(loom_diag_severity s) {
  switch (s) {
    case LOOM_DIAG_ERROR: return "error";
    case LOOM_DIAG_WARNING: return "warning";
    case LOOM_DIAG_NOTE: return "note";
  }
  return "error";
}

static void format_into(loom_strbuf *sb, const loom_diag *d) {
  const loom_source *src = d->loc.src;
  if (!src) {
    loom_strbuf_printf(sb, "%s: %s\n", severity_name(d->severity), d->message);
    return;
  }
  size_t line, col;
  loom_source_line_col(src, d->loc.offset, &line, &col);
  loom_strbuf_printf(sb, "%s:%zu:%zu: %s: %s\n", src->name, line, col,
                     severity_name(d->severity), d->message);
  /* The source line, then a caret under the column (tabs kept so it lines up). */
  size_t off = d->loc.offset > src->len ? src->len : d->loc.offset;
  size_t start = off;
  while (start > 0 && src->text[start - 1] != '\n') start--;
  size_t end = off;
  while (end < src->len && src->text[end] != '\n') end++;
  loom_strbuf_puts(sb, "  ");
  loom_strbuf_append(sb, src->text + start, end - start);
  loom_strbuf_puts(sb, "\n  ");
  for (size_t i = start; i < off; i++) loom_strbuf_putc(sb, src->text[i] == '\t' ? '\t' : ' ');
  loom_strbuf_puts(sb, "^\n");
}

char *loom_diag_format(const loom_diag *d) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  format_into(&sb, d);
  if (sb.oom) {
    loom_strbuf_free(&sb);
    return NULL;
  }
  return sb.data; /* allocated by the system allocator: free() releases it */
}

void loom_diag_print(FILE *f, const loom_diag *d) {
  char *s = loom_diag_format(d);
  fputs(s ? s : d->message, f);
  if (!s) fputc('\n', f);
  free(s);
}

void loom_diag_list_print(FILE *f, const loom_diag_list *dl) {
  for (size_t i = 0; i < dl->items.len; i++) loom_diag_print(f, &dl->items.data[i]);
  if (dl->oom) fputs("note: some diagnostics were lost (out of memory)\n", f);
}

loom_status loom_diag_list_status(const loom_diag_list *dl, loom_code code) {
  if (dl->errors == 0) return LOOM_OK;
  for (size_t i = 0; i < dl->items.len; i++) {
    const loom_diag *d = &dl->items.data[i];
    if (d->severity != LOOM_DIAG_ERROR) continue;
    char *text = loom_diag_format(d);
    if (!text) return LOOM_OOM();
    size_t n = strlen(text);
    if (n && text[n - 1] == '\n') text[n - 1] = '\0';
    loom_status s = loom_status_make(code, __FILE__, __LINE__, "%s", text);
    free(text);
    return s;
  }
  return LOOM_OOM(); /* errors were counted but could not be stored */
}

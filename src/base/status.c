/* status.c — failure statuses: code, origin, message and context lines.
 *
 * A status owns one heap string holding every line; each line records where it
 * starts and the file:line it came from. Statuses use malloc directly (not the
 * pluggable allocators) so that reporting an out-of-memory condition injected
 * into an allocator still works. */
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

typedef struct status_line {
  const char *file; /* origin in Loom's sources */
  int line;
  size_t offset;    /* start of this line's text in rec->text */
} status_line;

struct loom_status_rec {
  loom_code code;
  char *text;          /* every line's text, NUL-separated */
  size_t text_len;     /* bytes used in text, including NULs */
  status_line *lines;  /* lines[0] is the message, the rest are context */
  size_t nlines;
  char *rendered;      /* cache for loom_status_text */
};

static const char *const code_names[] = {
#define LOOM_STATUS_CODE(name, text) text,
#include "base/status_codes.def"
#undef LOOM_STATUS_CODE
};
_Static_assert(sizeof(code_names) / sizeof(code_names[0]) == LOOM_CODE_COUNT,
               "status_codes.def and code_names disagree");

/* The status returned when even the status cannot be allocated. */
static struct loom_status_rec oom_status = {
    .code = LOOM_CODE_RESOURCE_EXHAUSTED,
    .text = (char *)"out of memory (while reporting an error)",
    .text_len = 41,
    .lines = (status_line[]){{__FILE__, __LINE__, 0}},
    .nlines = 1,
    .rendered = (char *)"out of memory: out of memory (while reporting an error)",
};

const char *loom_code_name(loom_code code) {
  return (unsigned)code < LOOM_CODE_COUNT ? code_names[code] : "unknown";
}

int loom_status_is_static(loom_status s) { return s == &oom_status; }

/* Appends one formatted line to `s`. Returns 0 when memory ran out. */
static int append_line(loom_status s, const char *file, int line, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  size_t need = s->text_len + (size_t)n + 1;
  char *text = realloc(s->text, need);
  if (!text) return 0;
  s->text = text;
  status_line *lines = realloc(s->lines, (s->nlines + 1) * sizeof(*lines));
  if (!lines) return 0;
  s->lines = lines;
  vsnprintf(s->text + s->text_len, (size_t)n + 1, fmt, ap);
  s->lines[s->nlines++] = (status_line){file, line, s->text_len};
  s->text_len = need;
  free(s->rendered);
  s->rendered = NULL;
  return 1;
}

loom_status loom_status_makev(loom_code code, const char *file, int line, const char *fmt,
                              va_list ap) {
  if (code == LOOM_CODE_OK) code = LOOM_CODE_INTERNAL; /* a failure must not read as success */
  loom_status s = calloc(1, sizeof(*s));
  if (!s) return &oom_status;
  s->code = code;
  if (!append_line(s, file, line, fmt, ap)) {
    loom_status_free(s);
    return &oom_status;
  }
  return s;
}

loom_status loom_status_make(loom_code code, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  loom_status s = loom_status_makev(code, file, line, fmt, ap);
  va_end(ap);
  return s;
}

loom_status loom_status_annotate(loom_status s, const char *file, int line, const char *fmt,
                                 ...) {
  if (s == LOOM_OK || s == &oom_status) return s;
  va_list ap;
  va_start(ap, fmt);
  append_line(s, file, line, fmt, ap); /* on OOM the context is dropped; the error stays */
  va_end(ap);
  return s;
}

loom_code loom_status_code(loom_status s) { return s ? s->code : LOOM_CODE_OK; }

const char *loom_status_message(loom_status s) { return s ? s->text : ""; }

const char *loom_status_text(loom_status s, int with_origin) {
  if (!s) return "ok";
  if (s == &oom_status) return s->rendered;
  free(s->rendered);
  s->rendered = NULL;
  /* Measure, then write. */
  size_t cap = strlen(code_names[s->code]) + 2 + 1;
  for (size_t i = 0; i < s->nlines; i++)
    cap += strlen(s->text + s->lines[i].offset) + 16 + strlen(s->lines[i].file) + 24;
  char *out = malloc(cap);
  if (!out) return s->text;
  size_t len = 0;
  for (size_t i = 0; i < s->nlines; i++) {
    const status_line *l = &s->lines[i];
    if (i == 0)
      len += (size_t)snprintf(out + len, cap - len, "%s: %s", code_names[s->code], s->text);
    else
      len += (size_t)snprintf(out + len, cap - len, "\n  %s", s->text + l->offset);
    if (with_origin) {
      const char *base = strrchr(l->file, '/');
      len += (size_t)snprintf(out + len, cap - len, " [%s:%d]", base ? base + 1 : l->file,
                              l->line);
    }
  }
  s->rendered = out;
  return out;
}

void loom_status_fprint(FILE *f, loom_status s) {
  if (!s) return;
  fprintf(f, "error: %s\n", loom_status_text(s, 0));
}

void loom_status_free(loom_status s) {
  if (!s || s == &oom_status) return;
  free(s->text);
  free(s->lines);
  free(s->rendered);
  free(s);
}

/* diag.h — diagnostics with source locations, printed compiler-style:
 *
 *     model.loom:3:17: error: unknown operator 'matmull'
 *       y = matmull(x, w)
 *           ^
 *
 * A loom_source is a named text (a file, or "<expr>" for a command-line
 * argument). Locations are byte offsets into it; line and column are computed
 * when printing (1-based, columns count bytes). */
#ifndef LOOM_BASE_DIAG_H
#define LOOM_BASE_DIAG_H

#include <stdio.h>
#include <stddef.h>
#include "base/alloc.h"
#include "base/compiler.h"
#include "base/status.h"
#include "base/vec.h"

typedef struct loom_source {
  const char *name; /* file path or "<expr>" */
  const char *text; /* contents (need not be NUL-terminated) */
  size_t len;       /* bytes of text */
} loom_source;

typedef struct loom_loc {
  const loom_source *src; /* NULL: no location */
  size_t offset;          /* byte offset of the offending token */
} loom_loc;

typedef enum loom_diag_severity {
  LOOM_DIAG_ERROR,   /* makes the operation fail */
  LOOM_DIAG_WARNING, /* reported, does not fail */
  LOOM_DIAG_NOTE,    /* attached explanation of the previous diagnostic */
} loom_diag_severity;

typedef struct loom_diag {
  loom_diag_severity severity;
  loom_loc loc;
  char *message; /* owned by the list */
} loom_diag;

typedef struct loom_diag_list {
  loom_allocator *alloc;
  LOOM_VEC(loom_diag) items;
  size_t errors;  /* number of LOOM_DIAG_ERROR items */
  bool oom;       /* a diagnostic could not be recorded */
} loom_diag_list;

/* Line and column (1-based) of `offset` in `src`. */
void loom_source_line_col(const loom_source *src, size_t offset, size_t *line, size_t *col);

void loom_diag_list_init(loom_diag_list *dl, loom_allocator *alloc);
void loom_diag_list_destroy(loom_diag_list *dl);
void loom_diag_add(loom_diag_list *dl, loom_diag_severity sev, loom_loc loc, const char *fmt, ...)
    LOOM_PRINTF(4, 5);
void loom_diag_addv(loom_diag_list *dl, loom_diag_severity sev, loom_loc loc, const char *fmt,
                    va_list ap);
/* Prints one diagnostic with its source line and a caret. */
void loom_diag_print(FILE *f, const loom_diag *d);
void loom_diag_list_print(FILE *f, const loom_diag_list *dl);
/* Formats one diagnostic (as printed) into a malloc'd string; NULL on OOM. */
char *loom_diag_format(const loom_diag *d);
/* LOOM_OK if there are no errors, else a status whose message is the first error,
 * formatted with location, source line and caret. */
loom_status loom_diag_list_status(const loom_diag_list *dl, loom_code code);

#endif

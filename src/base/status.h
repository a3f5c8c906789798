/* status.h — errors as values (after IREE's iree_status_t).
 *
 * A loom_status is NULL (LOOM_OK) on success. A failure carries a code, the
 * file:line where it was made, a formatted message, and the context lines added
 * as it propagates up:
 *
 *     LOOM_RETURN_IF_ERROR(parse_file(path, &m), "while loading %s", path);
 *
 * The caller that handles a failure prints it (loom_status_fprint) and frees it
 * (loom_status_free). If memory runs out while making a status, a static
 * out-of-memory status is returned instead; freeing it is a no-op. */
#ifndef LOOM_BASE_STATUS_H
#define LOOM_BASE_STATUS_H

#include <stddef.h>
#include <stdio.h>
#include <stdarg.h>
#include "base/compiler.h"

typedef enum loom_code {
#define LOOM_STATUS_CODE(name, text) LOOM_CODE_##name,
#include "base/status_codes.def"
#undef LOOM_STATUS_CODE
  LOOM_CODE_COUNT
} loom_code;

typedef struct loom_status_rec *loom_status;
#define LOOM_OK ((loom_status)0)

/* Makes a failure status. `code` must not be LOOM_CODE_OK. */
LOOM_MUST_USE loom_status loom_status_make(loom_code code, const char *file, int line,
                                           const char *fmt, ...) LOOM_PRINTF(4, 5);
LOOM_MUST_USE loom_status loom_status_makev(loom_code code, const char *file, int line,
                                            const char *fmt, va_list ap);
/* Appends a context line ("while ...") to `s` and returns it; LOOM_OK stays LOOM_OK. */
LOOM_MUST_USE loom_status loom_status_annotate(loom_status s, const char *file, int line,
                                               const char *fmt, ...) LOOM_PRINTF(4, 5);

loom_code loom_status_code(loom_status s);
/* The innermost message, without code or context ("" for LOOM_OK). */
const char *loom_status_message(loom_status s);
/* The whole text: "<code text>: message" then one indented line per context annotation (by convention "while ...").
 * With `with_origin`, each line ends with " [file.c:123]". Returns the text, owned by `s`. */
const char *loom_status_text(loom_status s, int with_origin);
/* Prints "error: <text>\n" to `f`. */
void loom_status_fprint(FILE *f, loom_status s);
void loom_status_free(loom_status s);
const char *loom_code_name(loom_code code);
/* True when the status is the static out-of-memory status (no allocation was possible). */
int loom_status_is_static(loom_status s);

#define LOOM_ERROR(code, ...) loom_status_make(LOOM_CODE_##code, __FILE__, __LINE__, __VA_ARGS__)
#define LOOM_OOM() loom_status_make(LOOM_CODE_RESOURCE_EXHAUSTED, __FILE__, __LINE__, "out of memory")

/* Returns from the enclosing function with `expr`'s failure, adding a context line. */
#define LOOM_RETURN_IF_ERROR(expr, ...)                                             \
  do {                                                                              \
    loom_status loom_s_ = (expr);                                                   \
    if (LOOM_UNLIKELY(loom_s_ != LOOM_OK))                                          \
      return loom_status_annotate(loom_s_, __FILE__, __LINE__, __VA_ARGS__);        \
  } while (0)

/* Returns from the enclosing function with `expr`'s failure unchanged. */
#define LOOM_PROPAGATE(expr)                                                        \
  do {                                                                              \
    loom_status loom_s_ = (expr);                                                   \
    if (LOOM_UNLIKELY(loom_s_ != LOOM_OK)) return loom_s_;                          \
  } while (0)

#endif

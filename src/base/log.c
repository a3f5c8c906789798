/* log.c — leveled logging to stderr. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int current_level = -1; /* -1: not read from the environment yet */

static loom_log_level level_from_env(void) {
  const char *e = getenv("LOOM_LOG");
  if (!e) return LOOM_LOG_WARN;
  if (!strcmp(e, "error")) return LOOM_LOG_ERROR;
  if (!strcmp(e, "info")) return LOOM_LOG_INFO;
  if (!strcmp(e, "debug")) return LOOM_LOG_DEBUG;
  return LOOM_LOG_WARN;
}

void loom_log_set_level(loom_log_level level) { current_level = (int)level; }

loom_log_level loom_log_get_level(void) {
  if (current_level < 0) current_level = (int)level_from_env();
  return (loom_log_level)current_level;
}

void loom_log(loom_log_level level, const char *fmt, ...) {
  if (level > loom_log_get_level()) return;
  static const char *const names[] = {"error", "warning", "info", "debug"};
  fprintf(stderr, "loom: %s: ", names[level]);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

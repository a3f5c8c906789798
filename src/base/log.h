/* log.h — a small leveled logger on stderr.
 * The level comes from LOOM_LOG (error, warn, info, debug; default warn) or
 * loom_log_set_level. Library code logs; it never prints errors it returns. */
#ifndef LOOM_BASE_LOG_H
#define LOOM_BASE_LOG_H

#include "base/compiler.h"

typedef enum loom_log_level {
  LOOM_LOG_ERROR, /* something failed */
  LOOM_LOG_WARN,  /* something is off but work goes on */
  LOOM_LOG_INFO,  /* progress a user may want */
  LOOM_LOG_DEBUG, /* details for Loom's developers */
} loom_log_level;

void loom_log_set_level(loom_log_level level);
loom_log_level loom_log_get_level(void);
void loom_log(loom_log_level level, const char *fmt, ...) LOOM_PRINTF(2, 3);

#endif

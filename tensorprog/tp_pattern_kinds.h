/* tp_pattern_kinds.h — the access-pattern kinds (from tp_patterns.def), shared by the
 * graph level (operator hints) and the tensor-program level (classification). */
#ifndef LOOM_TENSORPROG_TP_PATTERN_KINDS_H
#define LOOM_TENSORPROG_TP_PATTERN_KINDS_H

typedef enum loom_tp_pattern {
#define LOOM_TP_PATTERN(name, text) LOOM_TP_PATTERN_##name,
#include "tensorprog/tp_patterns.def"
#undef LOOM_TP_PATTERN
  LOOM_TP_PATTERN_COUNT
} loom_tp_pattern;

const char *loom_tp_pattern_name(loom_tp_pattern p);

#endif

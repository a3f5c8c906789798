/* tp_pattern.h — access-pattern classification of tensor programs (analysis feedback). */
#ifndef LOOM_TENSORPROG_TP_PATTERN_H
#define LOOM_TENSORPROG_TP_PATTERN_H

#include "tensorprog/tp_ir.h"

typedef enum loom_tp_pattern {
#define LOOM_TP_PATTERN(name, text) LOOM_TP_PATTERN_##name,
#include "tensorprog/tp_patterns.def"
#undef LOOM_TP_PATTERN
  LOOM_TP_PATTERN_COUNT
} loom_tp_pattern;

typedef struct loom_tp_class {
  loom_tp_pattern pattern;
  const char *reason; /* one line: why this pattern (static text) */
} loom_tp_class;

const char *loom_tp_pattern_name(loom_tp_pattern p);
/* Classifies `f` by reading its loads and stores (see classify.c for the rules). */
loom_tp_class loom_tp_classify(const loom_tp_func *f);

#endif

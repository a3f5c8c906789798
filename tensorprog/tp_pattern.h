/* tp_pattern.h — access-pattern classification of tensor programs (analysis feedback). */
#ifndef LOOM_TENSORPROG_TP_PATTERN_H
#define LOOM_TENSORPROG_TP_PATTERN_H

#include "tensorprog/tp_ir.h"
#include "tensorprog/tp_pattern_kinds.h"

typedef struct loom_tp_class {
  loom_tp_pattern pattern;
  const char *reason; /* one line: why this pattern (static text) */
} loom_tp_class;

/* Classifies `f` by reading its loads and stores (see classify.c for the rules). */
loom_tp_class loom_tp_classify(const loom_tp_func *f);

#endif

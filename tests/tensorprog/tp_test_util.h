/* tp_test_util.h — helpers shared by the tensor-program tests. */
#ifndef LOOM_TESTS_TP_TEST_UTIL_H
#define LOOM_TESTS_TP_TEST_UTIL_H

#include "support/loom_test.h"
#include "tensorprog/tp_ir.h"

/* A symbolic context and an arena holding one parsed program. */
typedef struct tp_fixture {
  loom_sym_ctx *cx;
  loom_arena arena;
  loom_diag_list diags;
  loom_source src;
  loom_tp_func *f;
} tp_fixture;

/* Parses `text`; returns the status (LOOM_OK and fx->f set on success). */
loom_status tp_parse(tp_fixture *fx, const char *text);
void tp_fixture_free(tp_fixture *fx);
/* print(f) into a malloc'd string. */
char *tp_print(const loom_tp_func *f);

#endif

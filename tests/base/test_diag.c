/* test_diag.c — diagnostics: line/column, caret output, status conversion. */
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "support/loom_test.h"

static const char text[] =
    "fn @main(x: Tensor[(n, 4), f32]) {\n"
    "\ty = matmull(x, x)\n"
    "}";

LOOM_TEST(diag, line_and_column) {
  loom_source src = {"m.loom", text, sizeof text - 1};
  size_t line, col;
  loom_source_line_col(&src, 0, &line, &col);
  cr_assert_eq(line, 1);
  cr_assert_eq(col, 1);
  size_t off = (size_t)(strstr(text, "matmull") - text);
  loom_source_line_col(&src, off, &line, &col);
  cr_assert_eq(line, 2);
  cr_assert_eq(col, 6);
  loom_source_line_col(&src, sizeof text + 100, &line, &col); /* clamps past the end */
  cr_assert_eq(line, 3);
}

LOOM_TEST(diag, caret_under_the_token_with_tabs) {
  loom_source src = {"m.loom", text, sizeof text - 1};
  size_t off = (size_t)(strstr(text, "matmull") - text);
  loom_diag d = {LOOM_DIAG_ERROR, {&src, off}, (char *)"unknown operator 'matmull'"};
  char *s = loom_diag_format(&d);
  cr_assert_str_eq(s,
                   "m.loom:2:6: error: unknown operator 'matmull'\n"
                   "  \ty = matmull(x, x)\n"
                   "  \t    ^\n");
  free(s);
}

LOOM_TEST(diag, caret_at_end_of_input) {
  loom_source src = {"<expr>", "n + ", 4};
  loom_diag d = {LOOM_DIAG_ERROR, {&src, 4}, (char *)"expected an expression"};
  char *s = loom_diag_format(&d);
  cr_assert_str_eq(s, "<expr>:1:5: error: expected an expression\n  n + \n      ^\n");
  free(s);
}

LOOM_TEST(diag, list_counts_errors_and_converts_to_status) {
  loom_source src = {"m.loom", text, sizeof text - 1};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_assert_null(loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR));
  loom_diag_add(&dl, LOOM_DIAG_WARNING, (loom_loc){&src, 0}, "unused %s", "x");
  cr_assert_null(loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR));
  loom_diag_add(&dl, LOOM_DIAG_ERROR, (loom_loc){&src, 36}, "bad %d", 1);
  loom_diag_add(&dl, LOOM_DIAG_ERROR, (loom_loc){NULL, 0}, "bad %d", 2);
  cr_assert_eq(dl.errors, 2);
  cr_assert_eq(dl.items.len, 3);
  loom_status s = loom_diag_list_status(&dl, LOOM_CODE_PARSE_ERROR);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_PARSE_ERROR);
  cr_assert(strncmp(loom_status_message(s), "m.loom:2:2: error: bad 1\n", 25) == 0, "%s",
            loom_status_message(s));
  loom_status_free(s);
  loom_diag_list_destroy(&dl);
}

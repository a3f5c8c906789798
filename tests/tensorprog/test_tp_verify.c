/* test_tp_verify.c — verifier rules, one negative test each (programs built through
 * the constructors, since the parser already refuses most of these). */
#include <stdio.h>
#include <string.h>

#include "tp_test_util.h"

/* A program with one buffer A: Buffer[(n,), f32] and the given body. */
static loom_tp_func *one_buffer_program(tp_fixture *fx, loom_tp_stmt *(*body)(tp_fixture *, loom_tp_buffer *)) {
  cr_assert_null(tp_parse(fx, "prim @p(A: Buffer[(n,), f32]) { }"));
  loom_tp_buffer *A = fx->f->params[0].buf;
  fx->f->body = body(fx, A);
  cr_assert_not_null(fx->f->body);
  return fx->f;
}

static loom_tp_stmt *store_wrong_dtype(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_const(fx->cx, 0));
  return loom_tp_store(&fx->arena, A, idx, loom_tp_const_i(&fx->arena, LOOM_DTYPE_I32, 1));
}

static loom_tp_stmt *unbound_symbol(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_var_new(fx->cx, "stray", LOOM_SYM_VAR_SHAPE));
  return loom_tp_store(&fx->arena, A, idx, loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 1));
}

static loom_tp_stmt *float_index(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 0);
  return loom_tp_store(&fx->arena, A, idx, loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 1));
}

static loom_tp_stmt *mixed_operands(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_const(fx->cx, 0));
  loom_tp_expr *v = loom_tp_op2(&fx->arena, LOOM_TP_OP_ADD, loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 1),
                                loom_tp_const_f(&fx->arena, LOOM_DTYPE_F64, 2));
  return loom_tp_store(&fx->arena, A, idx, v);
}

static loom_tp_stmt *math_on_ints(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_const(fx->cx, 0));
  loom_tp_expr *v = loom_tp_cast(&fx->arena, LOOM_DTYPE_F32,
                                 loom_tp_op1(&fx->arena, LOOM_TP_OP_EXP, loom_tp_const_i(&fx->arena, LOOM_DTYPE_I32, 1)));
  return loom_tp_store(&fx->arena, A, idx, v);
}

static loom_tp_stmt *bitcast_of_another_width(tp_fixture *fx, loom_tp_buffer *A) {
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_const(fx->cx, 0));
  loom_tp_expr *v = loom_tp_op2(&fx->arena, LOOM_TP_OP_BITCAST, loom_tp_const_i(&fx->arena, LOOM_DTYPE_I64, 1),
                                loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 0));
  return loom_tp_store(&fx->arena, A, idx, v);
}

static loom_tp_stmt *reused_loop_var(tp_fixture *fx, loom_tp_buffer *A) {
  (void)A;
  const loom_sym_expr *i = loom_sym_var_new(fx->cx, "i", LOOM_SYM_VAR_SHAPE);
  loom_tp_stmt *inner = loom_tp_seq(&fx->arena, NULL, 0);
  loom_tp_stmt *mid = loom_tp_for(&fx->arena, i, loom_sym_const(fx->cx, 2), LOOM_TP_LOOP_SERIAL, false, inner);
  return loom_tp_for(&fx->arena, i, loom_sym_const(fx->cx, 2), LOOM_TP_LOOP_SERIAL, false, mid);
}

static loom_tp_stmt *foreign_buffer(tp_fixture *fx, loom_tp_buffer *A) {
  const loom_sym_expr *dims[1] = {A->dims[0]};
  loom_tp_buffer *other = loom_tp_buffer_new(&fx->arena, "Other", LOOM_DTYPE_F32, 1, dims, LOOM_TP_SCOPE_LOCAL);
  loom_tp_expr **idx = LOOM_ARENA_ARRAY(&fx->arena, loom_tp_expr *, 1);
  idx[0] = loom_tp_sym(&fx->arena, loom_sym_const(fx->cx, 0));
  return loom_tp_store(&fx->arena, other, idx, loom_tp_const_f(&fx->arena, LOOM_DTYPE_F32, 1));
}

static void expect_rejected(loom_tp_stmt *(*body)(tp_fixture *, loom_tp_buffer *), const char *message) {
  tp_fixture fx;
  loom_tp_func *f = one_buffer_program(&fx, body);
  loom_status s = loom_tp_verify(fx.cx, f);
  cr_assert_not_null(s, "expected: %s", message);
  cr_assert(strstr(loom_status_message(s), message) != NULL, "'%s' not in: %s", message, loom_status_message(s));
  cr_assert(strstr(loom_status_message(s), "program @p") != NULL);
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_verify, each_rule_rejects) {
  expect_rejected(store_wrong_dtype, "store of a i32 value into f32 buffer 'A'");
  expect_rejected(unbound_symbol, "uses 'stray'");
  expect_rejected(float_index, "index has dtype f32");
  expect_rejected(mixed_operands, "different dtypes (f32 and f64)");
  expect_rejected(math_on_ints, "'exp' is not defined on i32");
  expect_rejected(bitcast_of_another_width, "'bitcast' from i64 to f32: the dtypes must be of one width");
  expect_rejected(reused_loop_var, "loop variable 'i' is bound twice");
  expect_rejected(foreign_buffer, "buffer 'Other', which is not in scope");
}

/* min / max are defined on bool (and / or: a reduce_max over bools is an any); the other
 * arithmetic is not. */
LOOM_TEST(tp_verify, min_max_on_bool) {
  static const char *const ok[] = {"max", "min"};
  for (int k = 0; k < 2; k++) {
    tp_fixture fx;
    char text[256];
    snprintf(text, sizeof text, "prim @p(A: Buffer[(n,), bool], B: Buffer[(n,), bool]) { for i in 0..n { B[i] = %s(A[i], B[i]) } }",
             ok[k]);
    cr_assert_null(tp_parse(&fx, text));
    loom_status s = loom_tp_verify(fx.cx, fx.f);
    cr_assert_null(s, "%s on bool: %s", ok[k], s ? loom_status_message(s) : "");
    bool a[3] = {false, true, true}, b[3] = {false, false, true};
    int64_t n = 3;
    loom_tp_arg args[2] = {{a, &n, 0}, {b, &n, 0}};
    cr_assert_null(loom_tp_interpret(fx.cx, fx.f, args, 2));
    for (int i = 0; i < 3; i++) cr_assert_eq(b[i], k == 0 ? (i > 0) : (i == 2), "%s at %d", ok[k], i);
    tp_fixture_free(&fx);
  }
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @p(A: Buffer[(n,), bool], B: Buffer[(n,), bool]) { for i in 0..n { B[i] = A[i] + B[i] } }"));
  loom_status s = loom_tp_verify(fx.cx, fx.f);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "'+' is not defined on bool") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

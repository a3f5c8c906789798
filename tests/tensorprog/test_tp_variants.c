/* test_tp_variants.c — shape-range variants: guarded specialisations with the general
 * body as fallback, equal to the original on shapes on both sides of every guard. */
#include <stdlib.h>
#include <string.h>

#include "tensorprog/tp_rewrite.h"
#include "tp_test_util.h"

static const char *const matmul =
    "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m {\n    for j in 0..n {\n      C[i, j] = 0.0\n"
    "      for r in 0..k reduce {\n        C[i, j] = C[i, j] + A[i, r] * B[r, j]\n      }\n    }\n  }\n}\n";

static const loom_sym_expr *sym_named(const loom_tp_func *f, const char *name) {
  for (size_t i = 0; i < f->nsyms; i++)
    if (!strcmp(loom_sym_var_name(f->syms[i]), name)) return f->syms[i];
  return NULL;
}

typedef struct split_ctx {
  loom_arena *a;
  loom_sym_ctx *cx;
  loom_tp_stmt *tail;
} split_ctx;

static loom_status split_j(void *ud, loom_tp_func *view) {
  split_ctx *c = ud;
  return loom_tp_split(c->a, c->cx, view, loom_tp_find_loop(view, "j"), 8, NULL, NULL, &c->tail);
}

LOOM_TEST(tp_variants, guarded_specialisations_equal_the_general_program) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, matmul));
  cr_assert_null(tp_parse(&fx, matmul));
  const loom_sym_expr *m = sym_named(fx.f, "m"), *n = sym_named(fx.f, "n");
  cr_assert_not_null(m);
  /* m == 1: the row loop collapses to one iteration. */
  loom_status st = loom_tp_add_variant(&fx.arena, fx.cx, fx.f, loom_sym_cmp(fx.cx, LOOM_SYM_EQ, m, loom_sym_const(fx.cx, 1)),
                                       NULL, NULL);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  /* n % 8 == 0: split j by 8 with no tail loop (divisibility is a fact inside the variant). */
  split_ctx sc = {&fx.arena, fx.cx, (loom_tp_stmt *)1};
  const loom_sym_expr *div8 =
      loom_sym_cmp(fx.cx, LOOM_SYM_EQ, loom_sym_floormod(fx.cx, n, loom_sym_const(fx.cx, 8)), loom_sym_const(fx.cx, 0));
  st = loom_tp_add_variant(&fx.arena, fx.cx, fx.f, div8, split_j, &sc);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_null(sc.tail, "no tail loop under n %% 8 == 0");
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  char *text = tp_print(fx.f);
  cr_assert(strstr(text, "if floormod(n, 8) == 0 {") != NULL, "%s", text);
  cr_assert(strstr(text, "if m == 1 {") != NULL, "%s", text);
  cr_assert(strstr(text, "for i in 0..1 {") != NULL, "the m == 1 variant is simplified:\n%s", text);
  free(text);
  static const int64_t ms[] = {0, 1, 2, 5}, ns[] = {1, 7, 8, 16, 17}, ks[] = {1, 3};
  for (size_t a = 0; a < 4; a++)
    for (size_t b = 0; b < 5; b++)
      for (size_t c = 0; c < 2; c++) {
        int64_t M = ms[a], N = ns[b], K = ks[c];
        float A[5 * 3], B[3 * 17], C1[5 * 17], C2[5 * 17];
        for (int i = 0; i < 15; i++) A[i] = (float)i - 7.0f;
        for (int i = 0; i < 51; i++) B[i] = (float)(i % 4) * 0.5f;
        int64_t sa[2] = {M, K}, sb[2] = {K, N}, scs[2] = {M, N};
        loom_tp_arg args1[3] = {{A, sa, 0}, {B, sb, 0}, {C1, scs, 0}}, args2[3] = {{A, sa, 0}, {B, sb, 0}, {C2, scs, 0}};
        cr_assert_null(loom_tp_interpret(ref.cx, ref.f, args1, 3));
        st = loom_tp_interpret(fx.cx, fx.f, args2, 3);
        cr_assert_null(st, "%s", loom_status_text(st, 0));
        cr_assert_arr_eq(C1, C2, (size_t)(M * N) * 4, "m=%lld n=%lld k=%lld", (long long)M, (long long)N, (long long)K);
      }
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
}

/* A guard on a product (fused rows: b * s < 6) is a fact inside the variant: a split of the
 * b * s loop by 6 is refused there (its main loop would never run), not emitted as dead code. */
typedef struct split_rows_ctx {
  loom_arena *a;
  loom_sym_ctx *cx;
  loom_status st;
} split_rows_ctx;

static loom_status split_rows(void *ud, loom_tp_func *view) {
  split_rows_ctx *c = ud;
  c->st = loom_tp_split(c->a, c->cx, view, loom_tp_find_loop(view, "x"), 6, NULL, NULL, NULL);
  if (c->st && loom_status_code(c->st) == LOOM_CODE_FAILED_PRECONDITION) return LOOM_OK;
  return c->st;
}

LOOM_TEST(tp_variants, a_guard_on_a_product_bounds_the_product_inside_the_variant) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @rows(A: Buffer[(b, s), f32], C: Buffer[(b, s), f32]) {\n"
                               "  for x in 0..(b*s) {\n    C[floordiv(x, s), floormod(x, s)] = A[floordiv(x, s), floormod(x, s)] * 2.0\n  }\n}\n"));
  const loom_sym_expr *b = sym_named(fx.f, "b"), *s = sym_named(fx.f, "s");
  cr_assert(b && s);
  const loom_sym_expr *guard = loom_sym_cmp(fx.cx, LOOM_SYM_LT, loom_sym_mul(fx.cx, b, s), loom_sym_const(fx.cx, 6));
  split_rows_ctx c = {&fx.arena, fx.cx, LOOM_OK};
  loom_status st = loom_tp_add_variant(&fx.arena, fx.cx, fx.f, guard, split_rows, &c);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_not_null(c.st, "the split applied under b*s < 6");
  cr_assert_eq(loom_status_code(c.st), LOOM_CODE_FAILED_PRECONDITION, "%s", loom_status_text(c.st, 0));
  loom_status_free(c.st);
  /* outside the variant nothing is known: the split applies */
  st = loom_tp_split(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "x"), 6, NULL, NULL, NULL);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  tp_fixture_free(&fx);
}

/* A fallback that runs only where none of its loops does (the guard 1 <= b*s over a loop of b*s
 * iterations) is dropped: `if guard { variant }` with no else, equal to the reference at b*s = 0 too.
 * A fallback the guard's failure leaves work to (b*s >= 6 under a guard b*s < 6) stays. */
static const char *const rows2 =
    "prim @rows(A: Buffer[(b, s), f32], C: Buffer[(b, s), f32]) {\n"
    "  for x in 0..(b*s) {\n    C[floordiv(x, s), floormod(x, s)] = A[floordiv(x, s), floormod(x, s)] * 2.0\n  }\n}\n";

static void check_rows_against(tp_fixture *ref, tp_fixture *fx) {
  static const int64_t bs[] = {0, 1, 2, 3}, ss[] = {0, 1, 5, 7};
  for (size_t i = 0; i < 4; i++)
    for (size_t j = 0; j < 4; j++) {
      float A[21], C1[21], C2[21];
      for (int k = 0; k < 21; k++) A[k] = (float)k - 3.0f, C1[k] = C2[k] = -1.0f;
      int64_t sh[2] = {bs[i], ss[j]};
      loom_tp_arg a1[2] = {{A, sh, 0}, {C1, sh, 0}}, a2[2] = {{A, sh, 0}, {C2, sh, 0}};
      cr_assert_null(loom_tp_interpret(ref->cx, ref->f, a1, 2));
      loom_status st = loom_tp_interpret(fx->cx, fx->f, a2, 2);
      cr_assert_null(st, "%s", loom_status_text(st, 0));
      cr_assert_arr_eq(C1, C2, sizeof C1, "b=%lld s=%lld", (long long)bs[i], (long long)ss[j]);
    }
}

LOOM_TEST(tp_variants, a_fallback_that_never_runs_is_dropped) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, rows2));
  cr_assert_null(tp_parse(&fx, rows2));
  const loom_sym_expr *b = sym_named(fx.f, "b"), *s = sym_named(fx.f, "s");
  cr_assert(b && s);
  const loom_sym_expr *bs = loom_sym_mul(fx.cx, b, s);
  const loom_sym_expr *some = loom_sym_cmp(fx.cx, LOOM_SYM_LE, loom_sym_const(fx.cx, 1), bs);
  loom_status st = loom_tp_add_variant(&fx.arena, fx.cx, fx.f, some, NULL, NULL);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_eq(fx.f->body->kind, LOOM_TP_STMT_IF);
  char *text = tp_print(fx.f);
  cr_assert_null(fx.f->body->u.if_.else_s, "the fallback runs only with b*s == 0:\n%s", text);
  free(text);
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  check_rows_against(&ref, &fx);
  /* b*s < 6: the fallback holds b*s >= 6 rows and stays */
  const loom_sym_expr *few = loom_sym_cmp(fx.cx, LOOM_SYM_LT, bs, loom_sym_const(fx.cx, 6));
  st = loom_tp_add_variant(&fx.arena, fx.cx, fx.f, few, NULL, NULL);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_not_null(fx.f->body->u.if_.else_s);
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  check_rows_against(&ref, &fx);
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
}

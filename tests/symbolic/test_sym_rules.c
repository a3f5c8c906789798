/* test_sym_rules.c — one test per rewrite rule family, facts and the prover, the
 * match-site binder, the text parser's errors, and an out-of-memory walk. */
#include <stdlib.h>
#include <string.h>

#include "support/loom_test.h"
#include "symbolic/sym.h"

typedef struct fx {
  loom_sym_ctx *cx;
  loom_sym_names *names;
} fx;

static fx fx_new(loom_sym_var_kind kind) {
  fx f;
  cr_assert_eq(loom_sym_ctx_create(NULL, &f.cx), LOOM_OK);
  cr_assert_eq(loom_sym_names_create(f.cx, kind, &f.names), LOOM_OK);
  return f;
}
static void fx_free(fx *f) {
  loom_sym_names_destroy(f->names);
  loom_sym_ctx_destroy(f->cx);
}

static const loom_sym_expr *P(fx *f, const char *text) {
  const loom_sym_expr *e = NULL;
  loom_status s = loom_sym_parse_string(f->cx, f->names, "<t>", text, &e);
  cr_assert_eq(s, LOOM_OK, "'%s': %s", text, loom_status_text(s, 0));
  return e;
}

static const loom_sym_expr *V(fx *f, const char *name) { return loom_sym_names_get(f->names, name, strlen(name)); }

/* The canonical text of `in` is `want`, and `want` parses to the same node. */
static void canon(fx *f, const char *in, const char *want) {
  const loom_sym_expr *e = P(f, in);
  char *got = loom_sym_to_string(e);
  cr_assert_str_eq(got, want, "canonical form of '%s'", in);
  cr_assert_eq(P(f, want), e, "'%s' does not parse back to the same node", want);
  free(got);
}

/* The fact-aware simplification of `in` prints as `want`. */
static void simp(fx *f, const char *in, const char *want) {
  const loom_sym_expr *e = loom_sym_simplify(f->cx, P(f, in));
  cr_assert(e, "simplify('%s') failed", in);
  char *got = loom_sym_to_string(e);
  cr_assert_str_eq(got, want, "simplify('%s')", in);
  cr_assert_eq(loom_sym_simplify(f->cx, e), e, "simplify not idempotent on '%s'", in);
  free(got);
}

LOOM_TEST(symbolic, sums_and_products) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  canon(&f, "n*4 + floordiv(m, 2)", "4*n + floordiv(m, 2)");
  canon(&f, "n + n + 1 - 1", "2*n");                 // like terms, constants fold
  canon(&f, "(n + 1)*(n - 1)", "n*n - 1");             // distribution
  canon(&f, "m*n - n*m", "0");
  canon(&f, "0*n + 1*m", "m");
  canon(&f, "3 - 2*n", "-2*n + 3");
  canon(&f, "9223372036854775807 + 1", "9223372036854775808"); // GMP beyond int64
  canon(&f, "9223372036854775807*n*2 - 9223372036854775807*n", "9223372036854775807*n");
  canon(&f, "(n - m)*(n + m)", "n*n - m*m");
  cr_assert_eq(P(&f, "n*m + 1"), P(&f, "1 + m*n"));
  fx_free(&f);
}

LOOM_TEST(symbolic, floordiv_floormod_rules) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  canon(&f, "floordiv(4*n + 8, 4)", "n + 2");          // floordiv(a*c + b, c) -> a + floordiv(b, c)
  canon(&f, "floormod(2*n, 2)", "0");                  // floormod(a*c, c) -> 0
  canon(&f, "floordiv(n, 1)", "n");                    // floordiv(a, 1) -> a
  canon(&f, "floordiv(floordiv(n, 2), 4)", "floordiv(n, 8)"); // nested
  canon(&f, "floordiv(2*n + 1, 4)", "floordiv(n, 2)"); // gcd divided out
  canon(&f, "floormod(2*n + 1, 4)", "2*floormod(n, 2) + 1");
  canon(&f, "floormod(floormod(n, 8), 4)", "floormod(n, 4)");
  canon(&f, "floordiv(n + 9, 4)", "floordiv(n + 1, 4) + 2");
  canon(&f, "floordiv(n, -2)", "floordiv(n, 2) - n"); // floordiv(a, -c) -> floordiv(-a, c)
  canon(&f, "floormod(7, -2)", "-1");
  canon(&f, "floordiv(-7, 2)", "-4");
  canon(&f, "ceildiv(s, 4)", "floordiv(s + 3, 4)");
  canon(&f, "n // 3 + n % 3", "floordiv(n, 3) + floormod(n, 3)");
  /* k*E*floordiv(u, E) + k*floormod(u, E) -> k*u (the remainder as the simplifier writes it):
   * fused loops' indices summed back to one offset, a run of three axes too */
  canon(&f, "3*floordiv(n, 3) + floormod(n, 3)", "n");
  canon(&f, "0 - 3*floordiv(n, 3) - floormod(n, 3) + 1", "-n + 1");
  canon(&f, "8*floordiv(n*m, 4) + 2*floormod(n*m, 4) + 1", "2*n*m + 1");
  canon(&f, "196*floordiv(n + 190, 196) + 49*floordiv(floormod(n + 190, 196), 49) + floormod(n + 190, 49)", "n + 190");
  canon(&f, "4*floordiv(n, 4) + floormod(m, 4)", "4*floordiv(n, 4) + floormod(m, 4)"); /* other operands */
  canon(&f, "4*floordiv(n, 4) + 2*floormod(n, 4)", "4*floordiv(n, 4) + 2*floormod(n, 4)"); /* other coefficients */
  /* division by a constant zero is an error with the expression in it */
  const loom_sym_expr *e = NULL;
  loom_status s = loom_sym_parse_string(f.cx, f.names, "<t>", "floordiv(n, 0)", &e);
  cr_assert(s);
  cr_assert(strstr(loom_status_message(s), "division by zero: floordiv(n, 0)"), "%s", loom_status_message(s));
  cr_assert(strstr(loom_status_message(s), "^"), "%s", loom_status_message(s));
  loom_status_free(s);
  cr_assert_null(loom_sym_floormod(f.cx, V(&f, "n"), loom_sym_const(f.cx, 0)));
  s = loom_sym_ctx_take_error(f.cx);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_INVALID_ARGUMENT);
  loom_status_free(s);
  fx_free(&f);
}

LOOM_TEST(symbolic, min_max_cmp_logic_rules) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  canon(&f, "max(n, n + 1)", "n + 1");                 // difference is a constant
  canon(&f, "min(n, n + 1)", "n");
  canon(&f, "min(4096, s)", "min(s, 4096)");           // operands ordered, constant last
  canon(&f, "max(s, min(s, 256))", "s");               // absorption: a BERT position slice's dim
  canon(&f, "max(min(256, s), s)", "s");
  canon(&f, "min(n, max(m, n))", "n");
  canon(&f, "max(m, n)", "max(n, m)");
  canon(&f, "n < m + 1", "n <= m");
  canon(&f, "n + 1 > 0", "n >= 0");
  canon(&f, "2*n >= 3", "n >= 2");                     // content divided, bound rounded up
  canon(&f, "2*n == 2*m + 1", "0");                    // parity
  canon(&f, "2*n != 4", "n != 2");
  canon(&f, "!(n < m)", "m <= n");
  canon(&f, "n < m && n < m", "n < m");
  canon(&f, "n < m && !(n < m)", "0");
  canon(&f, "select(1, n, m)", "n");
  canon(&f, "select(n < 3, m, m)", "m");
  canon(&f, "select(n == 1, 1, n)", "n");              // the branches agree at n == 1
  canon(&f, "max(n, select(n == 1, 1, n))", "n");      // BERT's exported batch dim
  canon(&f, "select(n != 0, 2*n + m, m)", "2*n + m");
  canon(&f, "select(n == 2, 5, n + 3)", "n + 3");
  canon(&f, "select(n == 2, 4, n + 3)", "select(n == 2, 4, n + 3)"); // they differ at n == 2
  canon(&f, "select(n == 1, m, n)", "select(n == 1, m, n)");
  canon(&f, "select(n + m == 1, 1, n + m)", "n + m");  // the branches agree where n + m == 1
  canon(&f, "max(select(n + m == 1, 1, n + m), n + m)", "n + m"); // GPT-2's exported total length
  canon(&f, "select(n + m == 2*n, 2*n, n + m)", "n + m");
  canon(&f, "select(n + 1 == m, m - 1, n)", "n");
  canon(&f, "select(n + m == 1, 2, n + m)", "select(n + m == 1, 2, n + m)"); // they differ there
  fx_free(&f);
}

LOOM_TEST(symbolic, facts_and_simplify) {
  fx f = fx_new(LOOM_SYM_VAR_SHAPE);
  loom_sym_ctx *cx = f.cx;
  const loom_sym_expr *n = V(&f, "n"), *m = V(&f, "m");
  simp(&f, "max(n, 0)", "n");                          // shape vars are >= 0
  loom_sym_facts_push(cx);
  cr_assert_eq(loom_sym_assume_range(cx, n, 0, 7), LOOM_OK);
  simp(&f, "floordiv(n, 8)", "0");                     // floordiv(n, 8) -> 0 when 0 <= n < 8
  simp(&f, "floormod(n, 8)", "n");
  simp(&f, "min(n, 4096)", "n");
  cr_assert_eq(loom_sym_prove_lt(cx, n, loom_sym_const(cx, 8)), LOOM_SYM_TRUE);
  loom_sym_facts_pop(cx);
  simp(&f, "floordiv(n, 8)", "floordiv(n, 8)");       // the fact is gone
  loom_sym_facts_push(cx);
  cr_assert_eq(loom_sym_assume_text(cx, "n % 8 == 0"), LOOM_OK);
  simp(&f, "floormod(n, 4)", "0");
  cr_assert_eq(loom_sym_prove_divisible(cx, P(&f, "n + 16"), 8), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_divisible(cx, P(&f, "n + 3"), 8), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_known_divisor(cx, P(&f, "3*n")), 24);
  loom_sym_facts_pop(cx);
  /* learned equalities: m == n, later proofs use it */
  cr_assert_eq(loom_sym_prove_eq(cx, m, n), LOOM_SYM_UNKNOWN);
  loom_sym_facts_push(cx);
  cr_assert_eq(loom_sym_assume_eq(cx, m, n), LOOM_OK);
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "m*2"), P(&f, "n + n")), LOOM_SYM_TRUE);
  simp(&f, "m - n", "0");
  cr_assert_eq(loom_sym_assume_eq(cx, P(&f, "k"), P(&f, "2*n + 1")), LOOM_OK);
  cr_assert_eq(loom_sym_prove_divisible(cx, P(&f, "k"), 2), LOOM_SYM_FALSE);
  loom_sym_facts_pop(cx);
  cr_assert_eq(loom_sym_prove_eq(cx, m, n), LOOM_SYM_UNKNOWN);
  /* contradictions are errors */
  loom_sym_facts_push(cx);
  cr_assert_eq(loom_sym_assume_range(cx, n, 5, 10), LOOM_OK);
  loom_status s = loom_sym_assume_range(cx, n, 11, 20);
  cr_assert(s && strstr(loom_status_message(s), "contradictory"), "%s", loom_status_message(s));
  loom_status_free(s);
  loom_sym_facts_pop(cx);
  /* bounds with infinities */
  loom_sym_interval b = loom_sym_bounds(cx, P(&f, "n - 3"));
  cr_assert(!b.lo_inf && b.lo == -3 && b.hi_inf);
  fx_free(&f);
}

LOOM_TEST(symbolic, nonneg_facts_relate_variables) {
  fx f = fx_new(LOOM_SYM_VAR_SHAPE);
  loom_sym_ctx *cx = f.cx;
  const loom_sym_expr *i = V(&f, "i"), *n = V(&f, "n");
  /* a loop's i < n: x[i : i + 1] along an axis of n has extent 1 */
  simp(&f, "min(n, i + 1) - min(n, i)", "min(n, i + 1) - min(i, n)");
  cr_assert_eq(loom_sym_prove_lt(cx, i, n), LOOM_SYM_UNKNOWN);
  loom_sym_facts_push(cx);
  cr_assert_eq(loom_sym_assume_nonneg(cx, P(&f, "n - i - 1")), LOOM_OK);
  simp(&f, "min(n, i + 1) - min(n, i)", "1");
  cr_assert_eq(loom_sym_prove_lt(cx, i, n), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_le(cx, P(&f, "i + 1"), P(&f, "n + 5")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_le(cx, P(&f, "i + 2"), n), LOOM_SYM_UNKNOWN); /* i = n - 1 */
  cr_assert_eq(loom_sym_assume_nonneg(cx, P(&f, "n + 1")), LOOM_OK);          /* known: no new fact */
  loom_sym_facts_pop(cx);
  simp(&f, "min(n, i + 1) - min(n, i)", "min(n, i + 1) - min(i, n)"); /* the fact is gone */
  loom_status s = loom_sym_assume_nonneg(cx, loom_sym_const(cx, -2));
  cr_assert(s && strstr(loom_status_message(s), "always false"), "%s", s ? loom_status_message(s) : "accepted");
  loom_status_free(s);
  (void)n;
  fx_free(&f);
}

LOOM_TEST(symbolic, prover_three_valued) {
  fx f = fx_new(LOOM_SYM_VAR_SHAPE);
  loom_sym_ctx *cx = f.cx;
  cr_assert_eq(loom_sym_prove(cx, P(&f, "n < n + 1")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "n + 1 <= n")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "n <= m")), LOOM_SYM_UNKNOWN);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "n - min(n, m) >= 0")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "4*floordiv(n, 4) <= n")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "floormod(n, 4) < 4")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "2*n"), P(&f, "2*m + 1")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_le(cx, P(&f, "n*m"), P(&f, "n*m + m")), LOOM_SYM_TRUE);
  /* case splits on min / max / select nodes where the bounds alone do not decide */
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "min(n, m) + max(n, m)"), P(&f, "n + m")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "min(n, m) + max(n, m) + 1"), P(&f, "n + m")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_le(cx, P(&f, "min(n, m)"), P(&f, "max(n, m)")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_lt(cx, P(&f, "max(n, m)"), P(&f, "min(n, m)")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "select(n == 3, 3*m, n*m)"), P(&f, "n*m")), LOOM_SYM_TRUE); /* n = 3 in its case */
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "min(n, m)"), P(&f, "n")), LOOM_SYM_UNKNOWN); /* true only where n <= m */
  /* the cases carry no relation between n and m beyond the node they decide: unknown, not wrong */
  cr_assert_eq(loom_sym_prove_eq(cx, P(&f, "select(n < m, n, m)"), P(&f, "min(n, m)")), LOOM_SYM_UNKNOWN);
  /* loom_sym_prove_cases of a comparison or logic expression splits the same way (loom_sym_prove
   * decides by simplification alone: cheap, for the importer) */
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) == n + m")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) != n + m")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) < n + m")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "!(min(n, m) + max(n, m) <= n + m)")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) == n + m && n <= m")), LOOM_SYM_UNKNOWN);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) == n + m || n <= m")), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "min(n, m) + max(n, m) + 1 == n + m || n < n")), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sym_prove_cases(cx, P(&f, "n < m")), LOOM_SYM_UNKNOWN);
  cr_assert_eq(loom_sym_prove(cx, P(&f, "min(n, m) + max(n, m) == n + m")), LOOM_SYM_UNKNOWN);
  fx_free(&f);
}

LOOM_TEST(symbolic, printer_parser_round_trip) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  const char *cases[] = {"4*n + floordiv(m, 2)", "min(s, 4096)", "n*n*m - 3*m + 7", "-n",
                         "floormod(n + 1, 3)",   "n < m || m == 3", "select(n <= m, n, m)", "!(n + m != 1)",
                         "max(n, m)*2",          "-2*min(n, 0)"};
  for (size_t i = 0; i < LOOM_ARRAY_LEN(cases); i++) {
    const loom_sym_expr *e = P(&f, cases[i]);
    char *text = loom_sym_to_string(e);
    cr_assert_eq(P(&f, text), e, "'%s' printed as '%s' parses to another node", cases[i], text);
    free(text);
  }
  /* two variables with one name print with their ids */
  const loom_sym_expr *a = loom_sym_var_new(f.cx, "x", LOOM_SYM_VAR_INT), *b = loom_sym_var_new(f.cx, "x", LOOM_SYM_VAR_INT);
  char *t = loom_sym_to_string(loom_sym_add(f.cx, a, b));
  cr_assert(strstr(t, "x#") != NULL, "%s", t);
  free(t);
  fx_free(&f);
}

LOOM_TEST(symbolic, parse_errors_have_column_and_caret) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  struct { const char *text, *msg; } cases[] = {
      {"n +* 2", "<t>:1:4: error: unexpected '*': expected an expression\n  n +* 2\n     ^"},
      {"foo(n)", "<t>:1:1: error: unknown function 'foo'"},
      {"min(n)", "'min' takes 2 arguments, got 1"},
      {"(n + 1", "<t>:1:7: error: expected ')'"},
      {"n m", "<t>:1:3: error: unexpected 'm' after the expression"},
      {"", "expected an expression"},
      {NULL, "nested too deeply"}, /* 100000 '(' */
      {NULL, "nested too deeply"}, /* 100000 '-' */
  };
  static char deep[2][100002];
  memset(deep[0], '(', 100000);
  memset(deep[1], '-', 100000);
  deep[0][100000] = deep[1][100000] = 'n';
  cases[6].text = deep[0];
  cases[7].text = deep[1];
  for (size_t i = 0; i < LOOM_ARRAY_LEN(cases); i++) {
    const loom_sym_expr *e = NULL;
    loom_status s = loom_sym_parse_string(f.cx, f.names, "<t>", cases[i].text, &e);
    cr_assert_eq(loom_status_code(s), LOOM_CODE_PARSE_ERROR, "'%.40s'", cases[i].text);
    cr_assert(strstr(loom_status_message(s), cases[i].msg), "'%.40s': got\n%.400s", cases[i].text, loom_status_message(s));
    loom_status_free(s);
  }
  fx_free(&f);
}

LOOM_TEST(symbolic, eval_errors_name_expression_and_bindings) {
  fx f = fx_new(LOOM_SYM_VAR_INT);
  loom_sym_env *env;
  cr_assert_eq(loom_sym_env_create(NULL, &env), LOOM_OK);
  const loom_sym_expr *n = V(&f, "n"), *m = V(&f, "m");
  cr_assert_eq(loom_sym_env_set(env, n, 3037000500), LOOM_OK);
  cr_assert_eq(loom_sym_env_set(env, m, 0), LOOM_OK);
  int64_t v;
  loom_status s = loom_sym_eval(f.cx, P(&f, "n*n + m"), env, &v);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_OUT_OF_RANGE);
  cr_assert(strstr(loom_status_message(s), "int64 overflow evaluating 'n*n + m'"), "%s", loom_status_message(s));
  cr_assert(strstr(loom_status_message(s), "n = 3037000500, m = 0"), "%s", loom_status_message(s));
  loom_status_free(s);
  s = loom_sym_eval(f.cx, P(&f, "floordiv(n, m) + 1"), env, &v);
  cr_assert(s && strstr(loom_status_message(s), "division by zero"), "%s", loom_status_message(s));
  loom_status_free(s);
  s = loom_sym_eval(f.cx, P(&f, "k + 1"), env, &v);
  cr_assert(s && strstr(loom_status_message(s), "unbound symbolic variable 'k'"), "%s", loom_status_message(s));
  loom_status_free(s);
  /* intermediates beyond int64 are fine when the value fits */
  cr_assert_eq(loom_sym_eval(f.cx, P(&f, "n*n - n*n + m"), env, &v), LOOM_OK);
  cr_assert_eq(v, 0);
  loom_sym_env_destroy(env);
  fx_free(&f);
}

/* Binds a pattern like "n, 2*n + 1" against values; returns the status. */
static loom_status bind(fx *f, loom_sym_env *env, const char *const *pats, const int64_t *vals, size_t k) {
  const loom_sym_expr *p[8];
  for (size_t i = 0; i < k; i++) p[i] = P(f, pats[i]);
  return loom_sym_bind(f->cx, p, vals, k, env, "input 'x'");
}

LOOM_TEST(symbolic, binder_bare_affine_and_errors) {
  fx f = fx_new(LOOM_SYM_VAR_SHAPE);
  loom_sym_env *env;
  cr_assert_eq(loom_sym_env_create(NULL, &env), LOOM_OK);
  int64_t v;
  /* bare */
  cr_assert_eq(bind(&f, env, (const char *[]){"b", "s"}, (int64_t[]){2, 128}, 2), LOOM_OK);
  cr_assert(loom_sym_env_get(env, V(&f, "s"), &v) && v == 128);
  /* affine, solved from the second axis, checked on the first */
  loom_sym_env_clear(env);
  cr_assert_eq(bind(&f, env, (const char *[]){"4*n - 1", "2*n + 1"}, (int64_t[]){15, 9}, 2), LOOM_OK);
  cr_assert(loom_sym_env_get(env, V(&f, "n"), &v) && v == 4);
  /* a variable bound by an earlier input is used, not re-bound: m from n bound before */
  cr_assert_eq(bind(&f, env, (const char *[]){"n*m + 1"}, (int64_t[]){13}, 1), LOOM_OK);
  cr_assert(loom_sym_env_get(env, V(&f, "m"), &v) && v == 3);
  /* inconsistent */
  loom_sym_env_clear(env);
  loom_status s = bind(&f, env, (const char *[]){"n", "2*n + 1"}, (int64_t[]){4, 10}, 2);
  cr_assert(s);
  cr_assert_str_eq(loom_status_message(s), "input 'x' axis 1: expected 2*n + 1 = 9 (n = 4 from axis 0), got 10");
  loom_status_free(s);
  /* not divisible */
  loom_sym_env_clear(env);
  s = bind(&f, env, (const char *[]){"2*n + 1"}, (int64_t[]){10}, 1);
  cr_assert(s && strstr(loom_status_message(s), "input 'x' axis 0: expected 2*n + 1 = 10 has no integer solution"),
            "%s", loom_status_message(s));
  loom_status_free(s);
  /* out of the variable's range (shape vars are >= 0) */
  loom_sym_env_clear(env);
  s = bind(&f, env, (const char *[]){"n + 5"}, (int64_t[]){3}, 1);
  cr_assert(s && strstr(loom_status_message(s), "n = -2"), "%s", loom_status_message(s));
  loom_status_free(s);
  /* overflow while checking */
  loom_sym_env_clear(env);
  s = bind(&f, env, (const char *[]){"n", "n*n"}, (int64_t[]){INT64_C(4000000000), 1}, 2);
  cr_assert(s && loom_status_code(s) == LOOM_CODE_OUT_OF_RANGE, "%s", loom_status_message(s));
  cr_assert(strstr(loom_status_text(s, 0), "axis 1"), "%s", loom_status_text(s, 0));
  loom_status_free(s);
  /* overflow while solving */
  loom_sym_env_clear(env);
  s = bind(&f, env, (const char *[]){"n - 9223372036854775807"}, (int64_t[]){INT64_C(-9223372036854775807) - 1 + 100}, 1);
  cr_assert_eq(s, LOOM_OK, "%s", loom_status_message(s));
  s = bind(&f, env, (const char *[]){"m - 5"}, (int64_t[]){INT64_MAX}, 1);
  cr_assert(s && strstr(loom_status_message(s), "overflows"), "%s", loom_status_message(s));
  loom_status_free(s);
  /* not affine in one unbound variable */
  loom_sym_env_clear(env);
  s = bind(&f, env, (const char *[]){"n*m"}, (int64_t[]){12}, 1);
  cr_assert(s && strstr(loom_status_message(s), "cannot bind"), "%s", loom_status_message(s));
  loom_status_free(s);
  loom_sym_env_destroy(env);
  fx_free(&f);
}

/* Every allocation failure while building, simplifying, proving and printing ends in a
 * clean error (or success), without a crash or a leak. */
LOOM_TEST(symbolic, out_of_memory_walk) {
  const char *texts[] = {"floordiv(4*n + 8, 4) * (m + 1)", "min(n, 4096) + (9223372036854775807*n + 1)*(n*2)",
                         "select(n < m, floormod(n, 8), max(m, 3))"};
  long n;
  for (n = 0; n < 100000; n++) {
    loom_alloc_fail_after(n);
    loom_sym_ctx *cx = NULL;
    loom_status s = loom_sym_ctx_create(NULL, &cx);
    loom_sym_names *names = NULL;
    if (!s) s = loom_sym_names_create(cx, LOOM_SYM_VAR_SHAPE, &names);
    for (size_t i = 0; !s && i < LOOM_ARRAY_LEN(texts); i++) {
      const loom_sym_expr *e;
      s = loom_sym_parse_string(cx, names, "<t>", texts[i], &e);
      if (s) break;
      loom_sym_facts_push(cx);
      s = loom_sym_assume_text(cx, "n <= 100");
      if (s) break;
      const loom_sym_expr *r = loom_sym_simplify(cx, e);
      (void)loom_sym_prove_le(cx, e, r);
      if (!r) s = loom_sym_ctx_take_error(cx);
      char *text = r ? loom_sym_to_string(r) : NULL;
      free(text);
      loom_sym_facts_pop(cx);
    }
    long failures = loom_alloc_injected_failures();
    loom_alloc_fail_after(-1);
    if (s) cr_assert_eq(loom_status_code(s), LOOM_CODE_RESOURCE_EXHAUSTED, "step %ld: %s", n, loom_status_text(s, 0));
    loom_status_free(s);
    loom_sym_names_destroy(names);
    loom_sym_ctx_destroy(cx);
    if (failures == 0 && !s) break; /* ran to the end without hitting the injected failure */
  }
  cr_assert_lt(n, 100000);
  cr_log_info("out-of-memory walk: %ld steps", n);
}

/* The example at the top of sym.h, and the inspection API. */
LOOM_TEST(symbolic, header_example_and_inspection) {
  loom_sym_ctx *cx;
  cr_assert_eq(loom_sym_ctx_create(NULL, &cx), LOOM_OK);
  const loom_sym_expr *b = loom_sym_var_new(cx, "b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *s = loom_sym_var_new(cx, "s", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *rows = loom_sym_mul(cx, b, s);
  const loom_sym_expr *half = loom_sym_floordiv(cx, loom_sym_add(cx, rows, rows), loom_sym_const(cx, 2));
  cr_assert_eq(half, rows);
  /* 2*b + 3: ADD with operands [2*b, 3]; 2*b is MUL with operands [2, b] */
  const loom_sym_expr *e = loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, 2), b), loom_sym_const(cx, 3));
  cr_assert_eq(loom_sym_kind_of(e), LOOM_SYM_ADD);
  cr_assert_eq(loom_sym_num_operands(e), 2);
  const loom_sym_expr *t = loom_sym_operand(e, 0);
  int64_t v;
  cr_assert(loom_sym_is_const(loom_sym_operand(e, 1), &v) && v == 3);
  cr_assert_eq(loom_sym_kind_of(t), LOOM_SYM_MUL);
  cr_assert(loom_sym_is_const(loom_sym_operand(t, 0), &v) && v == 2);
  cr_assert_eq(loom_sym_operand(t, 1), b);
  const loom_sym_expr *var;
  int64_t k, c;
  cr_assert(loom_sym_as_affine(e, &var, &k, &c) && var == b && k == 2 && c == 3);
  cr_assert(!loom_sym_as_affine(rows, &var, &k, &c));
  cr_assert_str_eq(loom_sym_kind_name(LOOM_SYM_FLOORDIV), "floordiv");
  cr_assert_str_eq(loom_sym_var_name(s), "s");
  cr_assert_neq(loom_sym_var_id(b), loom_sym_var_id(s));
  cr_assert_eq(loom_sym_hash(e), loom_sym_hash(loom_sym_add(cx, loom_sym_const(cx, 3), loom_sym_mul(cx, b, loom_sym_const(cx, 2)))));
  /* subst: b -> s + 1 in 2*b + 3 gives 2*s + 5 */
  const loom_sym_expr *vals[] = {loom_sym_add(cx, s, loom_sym_const(cx, 1))};
  const loom_sym_expr *r = loom_sym_subst(cx, e, &b, vals, 1);
  char *text = loom_sym_to_string(r);
  cr_assert_str_eq(text, "2*s + 5");
  free(text);
  cr_assert(loom_sym_ctx_size(cx) > 5);
  cr_assert_eq(loom_sym_ctx_take_error(cx), LOOM_OK);
  loom_sym_ctx_destroy(cx);
}

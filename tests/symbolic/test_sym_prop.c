/* test_sym_prop.c — property tests of symbolic/ on random expressions (seeded; the seed
 * is printed on failure, rerun with LOOM_TEST_SEED=<seed>):
 *   - the canonical and the fact-simplified forms evaluate like a naive evaluation of the
 *     original tree (bindings include 0, 1, negatives and near-overflow values);
 *   - simplify is idempotent; commuted builds give the same pointer;
 *   - printing then parsing gives the same pointer;
 *   - the prover never answers TRUE/FALSE wrongly on bindings satisfying the facts. */
#include <stdlib.h>
#include <string.h>

#include "support/loom_test.h"
#include "tests/symbolic/sym_gen.h"

#define EXPRS 100000
#define PER_CTX 2000

static const char *const NAMES[4] = {"a", "b", "c", "d"};

typedef struct world {
  loom_sym_ctx *cx;
  const loom_sym_expr *vars[4];
} world;

static const loom_sym_expr *resolve(void *ud, const char *name, size_t len) {
  world *w = ud;
  for (int i = 0; i < 4; i++)
    if (len == 1 && name[0] == NAMES[i][0]) return w->vars[i];
  return NULL;
}

static void world_new(world *w, loom_sym_var_kind kind) {
  cr_assert_eq(loom_sym_ctx_create(NULL, &w->cx), LOOM_OK);
  for (int i = 0; i < 4; i++) w->vars[i] = loom_sym_var_new(w->cx, NAMES[i], kind);
}

static int64_t pick_value(loom_test_rng *r, bool nonneg) {
  int64_t v;
  switch (loom_test_rng_next(r) % 8) {
  case 0: v = 0; break;
  case 1: v = 1; break;
  case 2: v = loom_test_rng_range(r, 2, 12); break;
  case 3: v = (int64_t)1 << loom_test_rng_range(r, 20, 62); break;
  case 4: v = 3037000499 + loom_test_rng_range(r, -2, 2); break; /* ~sqrt(2^63) */
  case 5: v = INT64_MAX - loom_test_rng_range(r, 0, 5); break;
  default: v = loom_test_rng_range(r, 0, 100); break;
  }
  if (!nonneg && (loom_test_rng_next(r) & 1)) v = -v;
  return v;
}

static void check_roundtrip(world *w, const loom_sym_expr *e, uint64_t seed, long i) {
  char *text = loom_sym_to_string(e);
  cr_assert(text);
  loom_source src = {"<t>", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  size_t pos = 0;
  const loom_sym_expr *back = NULL;
  loom_status s = loom_sym_parse(w->cx, &src, &pos, resolve, w, &dl, &back);
  cr_assert_eq(s, LOOM_OK, "seed %llu expr %ld: '%s' does not parse: %s", (unsigned long long)seed, i, text,
               loom_status_message(s));
  cr_assert_eq(pos, src.len, "seed %llu expr %ld: '%s' parsed partly", (unsigned long long)seed, i, text);
  char *text2 = loom_sym_to_string(back);
  cr_assert_eq(back, e, "seed %llu expr %ld: '%s' parses back as '%s'", (unsigned long long)seed, i, text, text2);
  free(text2);
  loom_diag_list_destroy(&dl);
  free(text);
}

/* Canonical form == naive evaluation; simplify idempotent; commuted build same pointer;
 * print/parse same pointer. Variables are unrestricted integers. */
LOOM_TEST(symbolic_prop, canonical_form_evaluates_like_the_tree, .timeout = 120) {
  uint64_t seed = loom_test_seed();
  uint64_t gs = seed;
  loom_test_rng r = {seed ^ 0x1234};
  world w = {0};
  loom_sym_env *env;
  cr_assert_eq(loom_sym_env_create(NULL, &env), LOOM_OK);
  long checked = 0, canon_overflow = 0, skipped = 0;
  gtree t;
  for (long i = 0; i < EXPRS; i++) {
    if (i % PER_CTX == 0) {
      if (w.cx) loom_sym_ctx_destroy(w.cx);
      world_new(&w, LOOM_SYM_VAR_INT);
    }
    int size = 3 + (int)(gen_next(&gs) % 22);
    int nv = 1 + (int)(gen_next(&gs) % 4);
    uint64_t before = gs;
    gen_tree(&t, &gs, size, nv, i % 4 == 0);
    const loom_sym_expr *e = gen_build(w.cx, &t, t.root, w.vars, false);
    if (!e) { /* a constant division by zero somewhere in the tree */
      loom_status s = loom_sym_ctx_take_error(w.cx);
      cr_assert(s != LOOM_OK);
      loom_status_free(s);
      skipped++;
      continue;
    }
    const loom_sym_expr *e2 = i % 2 ? e : gen_build(w.cx, &t, t.root, w.vars, true);
    cr_assert_eq(e, e2, "seed %llu expr %ld (tree state %llu): commuted build differs", (unsigned long long)seed, i,
                 (unsigned long long)before);
    const loom_sym_expr *s1 = loom_sym_simplify(w.cx, e);
    if (!s1) {
      char *text = loom_sym_to_string(e);
      loom_status err = loom_sym_ctx_take_error(w.cx);
      if (strstr(loom_status_message(err), "division by zero")) { /* every value must then divide by 0 */
        for (int k = 0; k < 3; k++) {
          int64_t vals[4], ignored;
          for (int v = 0; v < 4; v++) vals[v] = pick_value(&r, false);
          cr_assert(!gen_eval(&t, t.root, vals, &ignored), "seed %llu expr %ld: '%s' evaluates, simplify said /0",
                    (unsigned long long)seed, i, text);
        }
        loom_status_free(err);
        free(text);
        skipped++;
        continue;
      }
      cr_assert_fail("seed %llu expr %ld: simplify('%s') failed: %s", (unsigned long long)seed, i, text,
                     loom_status_message(err));
    }
    cr_assert_eq(loom_sym_simplify(w.cx, s1), s1, "seed %llu expr %ld: simplify not idempotent",
                 (unsigned long long)seed, i);
    if (i % 4 == 1) check_roundtrip(&w, e, seed, i);
    for (int k = 0; k < 2; k++) {
      int64_t vals[4];
      loom_sym_env_clear(env);
      for (int v = 0; v < 4; v++) {
        vals[v] = pick_value(&r, false);
        cr_assert_eq(loom_sym_env_set(env, w.vars[v], vals[v]), LOOM_OK);
      }
      int64_t want, got;
      if (!gen_eval(&t, t.root, vals, &want)) continue;
      const loom_sym_expr *forms[2] = {e, s1};
      for (int f = 0; f < (s1 == e ? 1 : 2); f++) { /* s1 == e: one evaluation covers both */
        loom_status s = loom_sym_eval(w.cx, forms[f], env, &got);
        if (s && loom_status_code(s) == LOOM_CODE_OUT_OF_RANGE) { /* an expanded intermediate overflowed */
          canon_overflow++;
          loom_status_free(s);
          continue;
        }
        char *text = loom_sym_to_string(forms[f]);
        cr_assert_eq(s, LOOM_OK, "seed %llu expr %ld: eval of '%s' failed: %s", (unsigned long long)seed, i, text,
                     loom_status_message(s));
        cr_assert_eq(got, want, "seed %llu expr %ld: '%s' = %lld but the tree gives %lld (a=%lld b=%lld c=%lld d=%lld)",
                     (unsigned long long)seed, i, text, (long long)got, (long long)want, (long long)vals[0],
                     (long long)vals[1], (long long)vals[2], (long long)vals[3]);
        free(text);
        checked++;
      }
    }
  }
  loom_sym_ctx_destroy(w.cx);
  loom_sym_env_destroy(env);
  cr_log_info("canonical: %ld evaluations checked, %ld canonical overflows, %ld constant /0 trees", checked,
              canon_overflow, skipped);
  cr_assert_gt(checked, EXPRS / 2, "too few evaluations checked");
  cr_assert_lt(canon_overflow, checked / 10, "the canonical form overflows too often: %ld of %ld", canon_overflow,
               checked);
}

/* The prover and fact-aware simplify on shape variables with facts: sampled bindings
 * that satisfy the facts never contradict a TRUE/FALSE answer or a simplified form. */
LOOM_TEST(symbolic_prop, prover_is_never_wrong, .timeout = 120) {
  uint64_t seed = loom_test_seed();
  uint64_t gs = seed ^ 0xabcdef;
  loom_test_rng r = {seed ^ 0x777};
  world w = {0};
  loom_sym_env *env;
  cr_assert_eq(loom_sym_env_create(NULL, &env), LOOM_OK);
  long definite = 0, samples = 0;
  gtree ta, tb;
  for (long i = 0; i < EXPRS / 10; i++) {
    if (i % PER_CTX == 0) {
      if (w.cx) loom_sym_ctx_destroy(w.cx);
      world_new(&w, LOOM_SYM_VAR_SHAPE);
    }
    int nv = 1 + (int)(gen_next(&gs) % 4);
    gen_tree(&ta, &gs, 3 + (int)(gen_next(&gs) % 10), nv, false);
    gen_tree(&tb, &gs, 1 + (int)(gen_next(&gs) % 8), nv, false);
    const loom_sym_expr *a = gen_build(w.cx, &ta, ta.root, w.vars, false);
    const loom_sym_expr *b = gen_build(w.cx, &tb, tb.root, w.vars, false);
    if (!a || !b) {
      loom_status_free(loom_sym_ctx_take_error(w.cx));
      continue;
    }
    /* facts: a range on var 0, a divisor on var 1 sometimes */
    loom_sym_facts_push(w.cx);
    int64_t lo = 0, hi = INT64_MAX, div = 1;
    if (gen_next(&gs) % 2) {
      lo = gen_range(&gs, 0, 8);
      hi = lo + gen_range(&gs, 0, 40);
      cr_assert_eq(loom_sym_assume_range(w.cx, w.vars[0], lo, hi), LOOM_OK);
    }
    if (gen_next(&gs) % 3 == 0) {
      div = gen_range(&gs, 2, 8);
      cr_assert_eq(loom_sym_assume_divisible(w.cx, w.vars[1], div), LOOM_OK);
    }
    loom_sym_truth le = loom_sym_prove_le(w.cx, a, b), lt = loom_sym_prove_lt(w.cx, a, b),
                   eq = loom_sym_prove_eq(w.cx, a, b);
    int64_t k = gen_range(&gs, 2, 6);
    loom_sym_truth dv = loom_sym_prove_divisible(w.cx, a, k);
    const loom_sym_expr *sa = loom_sym_simplify(w.cx, a);
    if (!sa) {
      char *text = loom_sym_to_string(a);
      loom_status err = loom_sym_ctx_take_error(w.cx);
      if (strstr(loom_status_message(err), "division by zero")) {
        loom_status_free(err);
        free(text);
        loom_sym_facts_pop(w.cx);
        continue;
      }
      cr_assert_fail("seed %llu case %ld: simplify('%s') failed: %s", (unsigned long long)seed, i, text,
                     loom_status_message(err));
    }
    cr_assert_eq(loom_sym_simplify(w.cx, sa), sa, "seed %llu case %ld: simplify under facts not idempotent",
                 (unsigned long long)seed, i);
    definite += (le != LOOM_SYM_UNKNOWN) + (lt != LOOM_SYM_UNKNOWN) + (eq != LOOM_SYM_UNKNOWN) + (dv != LOOM_SYM_UNKNOWN);
    for (int s = 0; s < 4; s++) {
      int64_t vals[4];
      loom_sym_env_clear(env);
      for (int v = 0; v < 4; v++) {
        vals[v] = s == 0 ? (int64_t)v : pick_value(&r, true);
        if (s % 2 == 1 && vals[v] > 1000) vals[v] %= 1000;
      }
      if (vals[0] < lo || vals[0] > hi) vals[0] = lo + (int64_t)(loom_test_rng_next(&r) % (uint64_t)(hi - lo + 1 > 0 ? hi - lo + 1 : 1));
      vals[1] -= vals[1] % div;
      for (int v = 0; v < 4; v++) cr_assert_eq(loom_sym_env_set(env, w.vars[v], vals[v]), LOOM_OK);
      int64_t x, y, z;
      if (!gen_eval(&ta, ta.root, vals, &x) || !gen_eval(&tb, tb.root, vals, &y)) continue;
      samples++;
      char *as = loom_sym_to_string(a), *bs = loom_sym_to_string(b);
#define CHECK(truth, holds, what)                                                                              \
  cr_assert((truth) == LOOM_SYM_UNKNOWN || ((truth) == LOOM_SYM_TRUE) == (holds),                              \
            "seed %llu case %ld: prover said %s for %s with a=%lld b=%lld c=%lld d=%lld (lhs %lld rhs %lld)\n" \
            "  lhs: %s\n  rhs: %s",                                                                            \
            (unsigned long long)seed, i, (truth) == LOOM_SYM_TRUE ? "TRUE" : "FALSE", what, (long long)vals[0], \
            (long long)vals[1], (long long)vals[2], (long long)vals[3], (long long)x, (long long)y, as, bs)
      CHECK(le, x <= y, "a <= b");
      CHECK(lt, x < y, "a < b");
      CHECK(eq, x == y, "a == b");
      CHECK(dv, x % k == 0, "a % k == 0");
      loom_status st = loom_sym_eval(w.cx, sa, env, &z);
      if (st == LOOM_OK) cr_assert_eq(z, x, "seed %llu case %ld: simplified lhs %lld != %lld\n  lhs: %s",
                                      (unsigned long long)seed, i, (long long)z, (long long)x, as);
      loom_status_free(st);
      free(as);
      free(bs);
    }
    loom_sym_facts_pop(w.cx);
  }
  loom_sym_ctx_destroy(w.cx);
  loom_sym_env_destroy(env);
  cr_log_info("prover: %ld definite answers, %ld sampled checks", definite, samples);
  cr_assert_gt(definite, EXPRS / 50);
}

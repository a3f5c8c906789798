/* bench_symbolic.c — throughput of symbolic/: simplifications and proof queries per second
 * on random expressions of 5-40 nodes over 1-4 shape variables.
 *
 *   bench-symbolic [--n N] [--seed S] [--out FILE]
 *
 * Writes FILE (default bench-symbolic.txt) for bench/symbolic/sympy_side.py:
 *   E <tree in Python syntax> \t <Loom's simplified form>
 *   P <op> <lhs tree> \t <rhs tree> \t <Loom's answer: true|false|unknown>
 * and prints "loom simplify/s", "loom prove/s" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/symbolic/sym_gen.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *const NAMES[4] = {"n", "m", "k", "p"};

/* The tree in Python syntax (floordiv as //, floormod as %, min/max as calls). */
static void py(FILE *f, const gtree *t, int i) {
  const gnode *g = &t->n[i];
  switch (g->op) {
  case G_CONST: fprintf(f, "(%lld)", (long long)g->value); return;
  case G_VAR: fputs(NAMES[g->var], f); return;
  case G_NEG: fputs("(-", f); py(f, t, g->a); fputs(")", f); return;
  case G_MIN:
  case G_MAX:
    fputs(g->op == G_MIN ? "Min(" : "Max(", f);
    py(f, t, g->a);
    fputs(", ", f);
    py(f, t, g->b);
    fputs(")", f);
    return;
  case G_CDIV: fputs("(-((-", f); py(f, t, g->a); fputs(") // ", f); py(f, t, g->b); fputs("))", f); return;
  default: break;
  }
  const char *op = g->op == G_ADD ? " + " : g->op == G_SUB ? " - " : g->op == G_MUL ? "*" : g->op == G_FDIV ? " // " : " % ";
  fputs("(", f);
  py(f, t, g->a);
  fputs(op, f);
  py(f, t, g->b);
  fputs(")", f);
}

/* Bench trees: constant divisors only (SymPy has no symbolic floor division to compare). */
static bool bench_tree(gtree *t, uint64_t *s) {
  gen_tree(t, s, 5 + (int)(gen_next(s) % 36), 1 + (int)(gen_next(s) % 4), false);
  for (int i = 0; i < t->len; i++) {
    gnode *g = &t->n[i];
    if (g->op == G_CONST && (g->value > 1000 || g->value < -1000)) g->value %= 1000;
    if ((g->op == G_FDIV || g->op == G_FMOD || g->op == G_CDIV) && t->n[g->b].op != G_CONST) g->op = G_MUL;
    if ((g->op == G_FDIV || g->op == G_FMOD || g->op == G_CDIV) && t->n[g->b].value <= 0) t->n[g->b].value = 3;
  }
  return true;
}

int main(int argc, char **argv) {
  long n = 20000;
  uint64_t seed = 42;
  const char *out = "bench-symbolic.txt";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--n")) n = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
  }
  gtree *trees = malloc(sizeof(gtree) * (size_t)n * 2);
  if (!trees) return 1;
  uint64_t s = seed;
  for (long i = 0; i < 2 * n; i++) bench_tree(&trees[i], &s);

  loom_sym_ctx *cx;
  if (loom_sym_ctx_create(NULL, &cx)) return 1;
  const loom_sym_expr *vars[4];
  for (int v = 0; v < 4; v++) vars[v] = loom_sym_var_new(cx, NAMES[v], LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr **simp = calloc((size_t)n, sizeof *simp);
  loom_sym_truth *ans = calloc((size_t)n * 2, sizeof *ans);
  if (!simp || !ans) return 1;

  /* 1. simplification: build canonical from the tree, then simplify under the default facts */
  double t0 = now();
  for (long i = 0; i < n; i++) simp[i] = loom_sym_simplify(cx, gen_build(cx, &trees[i], trees[i].root, vars, false));
  double t_simp = now() - t0;

  /* 2. proofs: a <= b and a == b for pairs (a = tree i, b = tree n + i) */
  t0 = now();
  for (long i = 0; i < n; i++) {
    const loom_sym_expr *a = gen_build(cx, &trees[i], trees[i].root, vars, false);
    const loom_sym_expr *b = gen_build(cx, &trees[n + i], trees[n + i].root, vars, false);
    ans[2 * i] = loom_sym_prove_le(cx, a, b);
    ans[2 * i + 1] = loom_sym_prove_eq(cx, a, b);
  }
  double t_prove = now() - t0;

  FILE *f = fopen(out, "w");
  if (!f) return 1;
  for (long i = 0; i < n; i++) {
    fputs("E ", f);
    py(f, &trees[i], trees[i].root);
    char *text = simp[i] ? loom_sym_to_string(simp[i]) : NULL;
    fprintf(f, "\t%s\n", text ? text : "error");
    free(text);
  }
  static const char *const tv[] = {"unknown", "true", "false"};
  for (long i = 0; i < n; i++) {
    for (int q = 0; q < 2; q++) {
      fprintf(f, "P %s ", q ? "eq" : "le");
      py(f, &trees[i], trees[i].root);
      fputs("\t", f);
      py(f, &trees[n + i], trees[n + i].root);
      fprintf(f, "\t%s\n", tv[ans[2 * i + q]]);
    }
  }
  fclose(f);
  long definite = 0;
  for (long i = 0; i < 2 * n; i++) definite += ans[i] != LOOM_SYM_UNKNOWN;
  printf("expressions: %ld (5-40 nodes, 1-4 vars, seed %llu)\n", n, (unsigned long long)seed);
  printf("loom simplify/s: %.0f\n", (double)n / t_simp);
  printf("loom prove/s: %.0f\n", (double)(2 * n) / t_prove);
  printf("loom definite proofs: %ld of %ld\n", definite, 2 * n);
  printf("interned nodes: %zu\n", loom_sym_ctx_size(cx));
  loom_sym_ctx_destroy(cx);
  free(simp);
  free(ans);
  free(trees);
  return 0;
}

/* graph_test_util.h — helpers shared by the graph suite: parse text, find bindings, compare. */
#ifndef LOOM_TESTS_GRAPH_UTIL_H
#define LOOM_TESTS_GRAPH_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "support/loom_test.h"

/* Parses `text`; on failure returns NULL and, when `err` is given, the first formatted
 * diagnostic (malloc'd) in *err. */
static inline loom_graph_module *gt_parse(const char *text, char **err) {
  loom_source src = {"test.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = NULL;
  loom_status st = loom_graph_parse(&src, &dl, &m);
  if (err) *err = NULL;
  if (st) {
    if (err) *err = dl.items.len ? loom_diag_format(&dl.items.data[0]) : strdup(loom_status_message(st));
    loom_status_free(st);
  }
  loom_diag_list_destroy(&dl);
  return m;
}

/* Parses and asserts success. */
static inline loom_graph_module *gt_parse_ok(const char *text) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  cr_assert(m, "parse failed: %s", err ? err : "?");
  free(err);
  return m;
}

/* The first binding named `name` in @fn's top-level blocks. */
static inline loom_graph_binding *gt_binding(loom_graph_module *m, const char *fn, const char *name) {
  loom_graph_func *f = loom_graph_module_find_func(m, fn);
  cr_assert(f, "no function @%s", fn);
  for (size_t i = 0; i < f->body->nblocks; i++)
    for (size_t j = 0; j < f->body->blocks[i]->n; j++)
      if (!strcmp(f->body->blocks[i]->bindings[j]->var->u.var.name, name)) return f->body->blocks[i]->bindings[j];
  cr_assert(0, "no binding '%s'", name);
  return NULL;
}

/* The struct info text of a binding (malloc'd). */
static inline char *gt_sinfo_str(const loom_sinfo *si) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_sinfo_print(si, &sb);
  char *r = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r;
}

/* Param i's dim k of @main. */
static inline const loom_sym_expr *gt_pdim(loom_graph_module *m, size_t i, int k) {
  return loom_graph_module_find_func(m, "main")->params[i]->sinfo->dims[k];
}

/* Reads a whole file (malloc'd, NUL-terminated); NULL if missing. */
static inline char *gt_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = '\0';
  fclose(f);
  if (len) *len = (size_t)n;
  return buf;
}

/* Prints a module (malloc'd). */
static inline char *gt_print(loom_graph_module *m) {
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_graph_print_module(m, &sb);
  char *r = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  return r;
}

/* A tensor value from doubles. */
static inline loom_graph_value gt_tensor(loom_dtype dt, int nd, const int64_t *shape, const double *vals) {
  loom_graph_value v;
  loom_status st = loom_graph_value_tensor(dt, nd, shape, &v);
  cr_assert(!st);
  for (size_t i = 0; i < v.t.numel; i++) loom_graph_tensor_set_f64(&v.t, i, vals ? vals[i] : 0);
  return v;
}

/* Runs @main on args (env: symbol values, or NULL) and asserts success. */
static inline loom_graph_value gt_eval_ok(loom_graph_module *m, size_t n, loom_graph_value *args, loom_sym_env *env) {
  loom_graph_value out;
  loom_status st = loom_graph_eval(m, "main", n, args, env, &out);
  cr_assert(!st, "eval failed: %s", st ? loom_status_text(st, 0) : "");
  return out;
}

/* Runs @main on args, asserts it fails and returns the message (malloc'd). */
static inline char *gt_eval_err(loom_graph_module *m, size_t n, loom_graph_value *args) {
  loom_graph_value out;
  loom_status st = loom_graph_eval(m, "main", n, args, NULL, &out);
  cr_assert(st, "eval succeeded but should have failed");
  char *msg = strdup(loom_status_text(st, 0));
  loom_status_free(st);
  return msg;
}

/* v is a tensor of shape[0..nd) whose elements are want[] within tol (equal values, infinities
 * included, always match). */
static inline void gt_expect_values(const loom_graph_value *v, int nd, const int64_t *shape, const double *want, double tol) {
  cr_assert_eq(v->kind, LOOM_SINFO_TENSOR);
  cr_assert_eq(v->t.ndim, nd, "rank %d vs %d", v->t.ndim, nd);
  size_t n = 1;
  for (int i = 0; i < nd; i++) {
    cr_assert_eq(v->t.shape[i], shape[i], "axis %d: %lld vs %lld", i, (long long)v->t.shape[i], (long long)shape[i]);
    n *= (size_t)shape[i];
  }
  for (size_t i = 0; i < n; i++) {
    double g = loom_graph_tensor_get_f64(&v->t, i);
    cr_assert(g == want[i] || fabs(g - want[i]) <= tol, "element %zu: got %.9g want %.9g", i, g, want[i]);
  }
}

static inline void gt_free_args(loom_graph_value *a, size_t n) {
  for (size_t i = 0; i < n; i++) loom_graph_value_free(&a[i]);
}

#endif

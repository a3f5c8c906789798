/* test_onnx_conformance.c — the inventory of the ONNX backend node tests.
 *
 * Loads every node test model of ../shared/conformance/onnx-backend-1.22/node and all of
 * its test_data_set_N directories. Every test must load, except those using what the
 * loader reports as unsupported (UNIMPLEMENTED: an element type it does not load, such as
 * COMPLEX64; none in 1.22 since strings load), which are counted by reason. Prints the totals, the reasons,
 * and a markdown table of op types with how many tests use each (the "Inventory" of
 * docs/conformance.md comes from this output). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/onnx_test.h"

typedef struct count {
  char *key;
  size_t n;
} count;

typedef struct counts {
  count *items;
  size_t len, cap;
} counts;

static void counts_add(counts *c, const char *key) {
  for (size_t i = 0; i < c->len; i++)
    if (strcmp(c->items[i].key, key) == 0) {
      c->items[i].n++;
      return;
    }
  if (c->len == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 64;
    c->items = realloc(c->items, c->cap * sizeof *c->items);
  }
  c->items[c->len++] = (count){strdup(key), 1};
}

static void counts_free(counts *c) {
  for (size_t i = 0; i < c->len; i++) free(c->items[i].key);
  free(c->items);
}

static int by_count_then_name(const void *a, const void *b) {
  const count *x = a, *y = b;
  if (x->n != y->n) return x->n < y->n ? 1 : -1;
  return strcmp(x->key, y->key);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Adds every op type of `g` and its subgraphs to `seen` (each op once per test). */
static void collect_ops(const loom_onnx_graph *g, counts *seen) {
  for (size_t i = 0; i < g->n_nodes; i++) {
    const loom_onnx_node *n = &g->nodes[i];
    char key[256];
    snprintf(key, sizeof key, "%s%s%s", n->domain, *n->domain ? "." : "", n->op_type);
    bool have = false;
    for (size_t k = 0; k < seen->len; k++) have = have || strcmp(seen->items[k].key, key) == 0;
    if (!have) counts_add(seen, key);
    for (size_t a = 0; a < n->n_attrs; a++) {
      if (n->attrs[a].kind == LOOM_ONNX_ATTR_GRAPH) collect_ops(n->attrs[a].g, seen);
      if (n->attrs[a].kind == LOOM_ONNX_ATTR_GRAPHS)
        for (size_t k = 0; k < n->attrs[a].count; k++) collect_ops(n->attrs[a].graphs[k], seen);
    }
  }
}

/* The reason of an UNIMPLEMENTED status: its message after the last ": ". */
static const char *reason_of(loom_status s) {
  const char *msg = loom_status_message(s);
  const char *r = msg;
  for (const char *p = msg; (p = strstr(p, ": ")) != NULL; p += 2) r = p + 2;
  return r;
}

LOOM_TEST(onnx, conformance_inventory) {
  DIR *d = opendir(NODE_DIR);
  cr_assert_not_null(d, "no conformance suite at %s", NODE_DIR);
  char **names = NULL;
  size_t n_names = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "test_", 5) != 0) continue;
    if (n_names == cap) names = realloc(names, (cap = cap ? cap * 2 : 256) * sizeof *names);
    names[n_names++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n_names, sizeof *names, by_name);

  counts ops = {0}, reasons = {0};
  size_t models_ok = 0, models_unsupported = 0, sets_ok = 0, sets_unsupported = 0, tensors = 0, tests_full = 0;
  size_t failures = 0;
  char path[1024];
  for (size_t i = 0; i < n_names; i++) {
    snprintf(path, sizeof path, "%s/%s/model.onnx", NODE_DIR, names[i]);
    loom_onnx_model *m;
    loom_status s = loom_onnx_model_load(path, &m);
    if (s) {
      if (loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED) {
        models_unsupported++;
        counts_add(&reasons, reason_of(s));
        printf("unsupported model: %s (%s)\n", names[i], reason_of(s));
      } else {
        failures++;
        fprintf(stderr, "FAIL %s: %s\n", names[i], loom_status_text(s, 0));
      }
      loom_status_free(s);
      continue;
    }
    models_ok++;
    counts seen = {0};
    collect_ops(m->graph, &seen);
    for (size_t k = 0; k < seen.len; k++) counts_add(&ops, seen.items[k].key);
    counts_free(&seen);
    bool all_sets = true;
    for (int k = 0;; k++) {
      snprintf(path, sizeof path, "%s/%s/test_data_set_%d", NODE_DIR, names[i], k);
      DIR *sd = opendir(path);
      if (!sd) break;
      closedir(sd);
      loom_onnx_test_set *ts;
      s = loom_onnx_test_set_load(path, m, &ts);
      if (s) {
        all_sets = false;
        if (loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED) {
          sets_unsupported++;
          if (k == 0) counts_add(&reasons, reason_of(s));
        } else {
          failures++;
          fprintf(stderr, "FAIL %s: %s\n", names[i], loom_status_text(s, 0));
        }
        loom_status_free(s);
        continue;
      }
      sets_ok++;
      tensors += ts->n_inputs + ts->n_outputs;
      loom_onnx_test_set_free(ts);
    }
    tests_full += all_sets;
    loom_onnx_model_free(m);
  }

  printf("\nONNX node tests (%s): %zu\n", NODE_DIR, n_names);
  printf("  models loaded: %zu, unsupported: %zu, failed: %zu\n", models_ok, models_unsupported, failures);
  printf("  test data sets loaded: %zu (%zu tensors), unsupported: %zu\n", sets_ok, tensors, sets_unsupported);
  printf("  tests loaded completely (model and every data set): %zu\n", tests_full);
  if (reasons.len) qsort(reasons.items, reasons.len, sizeof *reasons.items, by_count_then_name); /* none unsupported: NULL items */
  printf("  unsupported, by reason (tests):\n");
  for (size_t i = 0; i < reasons.len; i++) printf("    %4zu  %s\n", reasons.items[i].n, reasons.items[i].key);
  qsort(ops.items, ops.len, sizeof *ops.items, by_count_then_name);
  printf("\n%zu op types in the loaded models (tests using each; subgraph ops included):\n\n", ops.len);
  printf("| op type | tests |\n| --- | ---: |\n");
  for (size_t i = 0; i < ops.len; i++) printf("| %s | %zu |\n", ops.items[i].key, ops.items[i].n);
  fflush(stdout);

  counts_free(&ops);
  counts_free(&reasons);
  for (size_t i = 0; i < n_names; i++) free(names[i]);
  free(names);
  cr_assert_eq(n_names, 1765, "the node suite has 1765 tests, found %zu", n_names);
  cr_assert_eq(failures, 0, "%zu models or data sets failed to load (listed above)", failures);
}

/* Loads every test of a suite laid out like node/ (one directory per test holding model.onnx and test_data_set_N). */
static void load_suite_dirs(const char *suite, size_t *models, size_t *sets, size_t *unsupported, size_t *failures) {
  char path[1024];
  snprintf(path, sizeof path, "../shared/conformance/onnx-backend-1.22/%s", suite);
  DIR *d = opendir(path);
  cr_assert_not_null(d, "no suite at %s", path);
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strncmp(e->d_name, "test_", 5) != 0) continue;
    snprintf(path, sizeof path, "../shared/conformance/onnx-backend-1.22/%s/%s/model.onnx", suite, e->d_name);
    loom_onnx_model *m;
    loom_status s = loom_onnx_model_load(path, &m);
    if (!s) {
      (*models)++;
      for (int k = 0; !s; k++) {
        snprintf(path, sizeof path, "../shared/conformance/onnx-backend-1.22/%s/%s/test_data_set_%d", suite, e->d_name, k);
        DIR *sd = opendir(path);
        if (!sd) break;
        closedir(sd);
        loom_onnx_test_set *ts;
        s = loom_onnx_test_set_load(path, m, &ts);
        if (!s) (*sets)++, loom_onnx_test_set_free(ts);
      }
      loom_onnx_model_free(m);
    }
    if (s) {
      if (loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED) {
        (*unsupported)++;
      } else {
        (*failures)++;
        fprintf(stderr, "FAIL %s/%s: %s\n", suite, e->d_name, loom_status_text(s, 0));
      }
      loom_status_free(s);
    }
  }
  closedir(d);
}

LOOM_TEST(onnx, other_suites_load) {
  static const char *const suites[] = {"simple", "pytorch-converted", "pytorch-operator"};
  size_t failures = 0;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    size_t models = 0, sets = 0, unsupported = 0;
    load_suite_dirs(suites[i], &models, &sets, &unsupported, &failures);
    printf("ONNX %s tests: %zu models and %zu test data sets loaded, %zu tests unsupported\n", suites[i], models, sets,
           unsupported);
  }
  /* light/: NAME.onnx with NAME_output_0.pb beside it. */
  const char *light = "../shared/conformance/onnx-backend-1.22/light";
  DIR *d = opendir(light);
  cr_assert_not_null(d);
  size_t models = 0, outputs = 0;
  char path[1024];
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (n < 6 || strcmp(e->d_name + n - 5, ".onnx") != 0) continue;
    snprintf(path, sizeof path, "%s/%s", light, e->d_name);
    loom_onnx_model *m;
    loom_status s = loom_onnx_model_load(path, &m);
    if (!s) {
      models++;
      loom_onnx_model_free(m);
      snprintf(path, sizeof path, "%s/%.*s_output_0.pb", light, (int)(n - 5), e->d_name);
      loom_arena arena;
      loom_arena_init(&arena, NULL, 0);
      loom_onnx_tensor *t;
      s = loom_onnx_tensor_load(path, &arena, &t);
      loom_arena_destroy(&arena);
      outputs += s == LOOM_OK;
    }
    if (s) {
      failures++;
      fprintf(stderr, "FAIL light/%s: %s\n", e->d_name, loom_status_text(s, 0));
      loom_status_free(s);
    }
  }
  closedir(d);
  printf("ONNX light models: %zu loaded, %zu expected outputs loaded\n", models, outputs);
  fflush(stdout);
  cr_assert_eq(failures, 0, "%zu failed to load (listed above)", failures);
}

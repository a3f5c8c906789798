/* test_list.c — list values in the graph IR (docs/ir.md "Lists"): struct info text, inference
 * of the list ops (lengths kept where known), their errors naming the operand, and the
 * interpreter on lists of 0, 1 and 5 items whose items differ in shape. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_test_util.h"

/* The struct info text of binding `name` of @main. */
static char *sinfo_of(loom_graph_module *m, const char *name) { return gt_sinfo_str(gt_binding(m, "main", name)->var->sinfo); }

LOOM_TEST(graph_list, inference_keeps_known_lengths) {
  loom_graph_module *m = gt_parse_ok("fn @main(s: List[Tensor[1, f32], n], x: Tensor[(k,), f32]) -> Object {\n"
                                     "  a = list_insert(s, x)\n"
                                     "  b = list_erase(a)\n"
                                     "  c = list_new(x, x)\n"
                                     "  d = list_new(dtype=i64)\n"
                                     "  o = list_new(x, optional=true)\n"
                                     "  g = list_get(o)\n"
                                     "  l = list_length(s)\n"
                                     "  r = (a, b, c, d, g, l)\n"
                                     "  return r\n"
                                     "}\n");
  static const struct {
    const char *name, *want;
  } cases[] = {{"a", "List[Tensor[1, f32], n + 1]"}, {"b", "List[Tensor[1, f32], n]"}, {"c", "List[Tensor[1, f32], 2]"},
               {"d", "List[Tensor[?, i64], 0]"},      {"o", "Optional[Tensor[1, f32], 1]"}, {"g", "Tensor[1, f32]"},
               {"l", "Tensor[(), i64]"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *s = sinfo_of(m, cases[i].name);
    cr_expect_str_eq(s, cases[i].want, "%s", cases[i].name);
    free(s);
  }
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_list, errors_name_the_operand) {
  static const struct {
    const char *body, *want;
  } cases[] = {
      {"  y = list_length(x)\n", "list_length: operand 0 must be a List, got a Tensor"},
      {"  y = list_insert(s, s)\n", "list_insert: operand 1 is a List but the list holds a Tensor"},
      {"  y = list_insert(s, i)\n", "list_insert: operand 1 has dtype i64 but the list holds f32"},
      {"  y = list_get(s, x)\n", "list_get: operand 1 (the position) has dtype f32, expected i32 or i64"},
      {"  y = list_new(x, s)\n", "list_new: operand 1 is a List, operand 0 a Tensor: a list holds one kind"},
      {"  y = list_new(x, x, optional=true)\n", "list_new: an optional holds at most one item, got 2"},
      {"  o = list_new(x, optional=true)\n  y = list_insert(o, x)\n", "operand 0 is an Optional: it holds at most one item"},
      {"  o = list_new(x, optional=true)\n  y = list_select(i, s, o)\n", "list_select: operands 1 and 2 are lists of different kinds"},
      {"  y = list_select(s, s, s)\n", "list_select: operand 0 must be a Tensor, got a List"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[512], *err;
    snprintf(text, sizeof text,
             "fn @main(s: List[Tensor[1, f32]], x: Tensor[(k,), f32], i: Tensor[(), i64]) -> Object {\n%s  return y\n}\n",
             cases[i].body);
    loom_graph_module *m = gt_parse(text, &err);
    cr_assert_null(m, "%s: accepted", cases[i].body);
    cr_expect(err && strstr(err, cases[i].want), "%s: %s", cases[i].body, err ? err : "?");
    free(err);
  }
  /* the verifier: a declared result a list value cannot fit (a tensor, other items, a list where
   * an optional is declared); an optional does fit a list */
  static const struct {
    const char *sig, *want;
  } verr[] = {
      {"(x: Tensor[(n,), f32]) -> List[Tensor[1, f32]] {\n  return x", "declared result List[Tensor[1, f32]] but the function returns Tensor[(n,), f32]"},
      {"(s: List[Tensor[1, f32]]) -> List[Tensor[1, i32]] {\n  return s", "declared result List[Tensor[1, i32]] but the function returns List[Tensor[1, f32]]"},
      {"(s: List[Tensor[1, f32]]) -> Optional[Tensor[1, f32]] {\n  return s", "declared result Optional[Tensor[1, f32]] but the function returns List[Tensor[1, f32]]"},
      {"(s: Optional[Tensor[1, f32]]) -> List[Tensor[1, f32]] {\n  return s", NULL},
  };
  for (size_t i = 0; i < sizeof verr / sizeof verr[0]; i++) {
    char text[512], *e2;
    snprintf(text, sizeof text, "fn @main%s\n}\n", verr[i].sig);
    loom_graph_module *m = gt_parse(text, &e2);
    if (!verr[i].want) {
      cr_expect_not_null(m, "%s: %s", verr[i].sig, e2 ? e2 : "?");
    } else {
      cr_expect_null(m, "%s: accepted", verr[i].sig);
      cr_expect(e2 && strstr(e2, verr[i].want), "%s: %s", verr[i].sig, e2 ? e2 : "?");
    }
    free(e2);
    loom_graph_module_destroy(m);
  }
  /* the text form: items must be tensors or lists */
  char *err;
  cr_assert_null(gt_parse("fn @main(s: List[Shape[2]]) -> Object {\n  return s\n}\n", &err));
  cr_expect(err && strstr(err, "the items of a List must be tensors or lists"), "%s", err ? err : "?");
  free(err);
}

/* A list value of n 1-D f32 items, item k of k % 3 + 1 elements valued k + j / 10. */
static loom_graph_value list_of(size_t n) {
  loom_graph_value v = {.kind = LOOM_SINFO_LIST, .n = n};
  v.items = n ? calloc(n, sizeof *v.items) : NULL;
  for (size_t k = 0; k < n; k++) {
    int64_t len = (int64_t)(k % 3) + 1;
    double vals[3];
    for (int64_t j = 0; j < len; j++) vals[j] = (double)k + (double)j / 10;
    v.items[k] = gt_tensor(LOOM_DTYPE_F32, 1, &len, vals);
  }
  return v;
}

LOOM_TEST(graph_list, the_interpreter_on_lists_of_differing_items) {
  loom_graph_module *m = gt_parse_ok("fn @main(s: List[Tensor[1, f32]], p: Tensor[(), i64], q: Tensor[(), i64]) -> Object {\n"
                                     "  g = list_get(s, p)\n"
                                     "  e = list_erase(s, p)\n"
                                     "  l = list_length(e)\n"
                                     "  a = list_insert(e, g, q)\n"
                                     "  r = (g, l, a)\n"
                                     "  return r\n"
                                     "}\n");
  static const size_t lens[] = {1, 5};
  for (size_t li = 0; li < 2; li++) {
    size_t n = lens[li];
    for (int64_t p = -(int64_t)n; p < (int64_t)n; p++) {
      size_t q = (size_t)(p < 0 ? p + (int64_t)n : p);
      double pv = (double)p, qv = (double)q;
      loom_graph_value args[3] = {list_of(n), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &qv)};
      loom_graph_value r = gt_eval_ok(m, 3, args, NULL);
      int64_t len = (int64_t)(q % 3) + 1;
      double want[3] = {(double)q, (double)q + 0.1, (double)q + 0.2};
      gt_expect_values(&r.items[0], 1, &len, want, 1e-6);
      double nl = (double)n - 1;
      gt_expect_values(&r.items[1], 0, NULL, &nl, 0);
      /* erase then insert at the same (non-negative) position gives the list back */
      cr_assert_eq(r.items[2].kind, LOOM_SINFO_LIST);
      cr_assert_eq(r.items[2].n, n);
      for (size_t k = 0; k < n; k++) cr_expect_eq(r.items[2].items[k].t.shape[0], (int64_t)(k % 3) + 1, "item %zu", k);
      loom_graph_value_free(&r);
      gt_free_args(args, 3);
    }
  }
  /* out of range, and an empty list */
  double pv = 5;
  loom_graph_value args[3] = {list_of(5), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv)};
  char *msg = gt_eval_err(m, 3, args);
  cr_expect(strstr(msg, "list_get: position 5 is out of range for 's' of 5 items (-5 .. 4)"), "%s", msg);
  free(msg);
  gt_free_args(args, 3);
  pv = 0;
  loom_graph_value args0[3] = {list_of(0), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv)};
  msg = gt_eval_err(m, 3, args0);
  cr_expect(strstr(msg, "list_get: position 0 is out of range for 's' of 0 items"), "%s", msg);
  free(msg);
  gt_free_args(args0, 3);
  /* a tensor where a list is expected */
  loom_graph_value bad[3] = {gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv),
                             gt_tensor(LOOM_DTYPE_I64, 0, NULL, &pv)};
  msg = gt_eval_err(m, 3, bad);
  cr_expect(strstr(msg, "expected a list, got a tensor"), "%s", msg);
  free(msg);
  gt_free_args(bad, 3);
  loom_graph_module_destroy(m);
}

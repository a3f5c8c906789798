/* test_memplan.c — memory planning on IR text: storages reused by liveness (across blocks,
 * through tuple aliases), sizes and the peak as symbolic expressions, growth by proof, and
 * symbolic-var scope (a storage never needs a var defined after it is allocated). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e/e2e_util.h"
#include "graph/legalize.h"
#include "graph/memplan.h"

/* Parses `text`, legalizes it, plans @main and returns the printed plan (malloc'd). */
static char *plan_text(const char *text) {
  loom_source src = {"plan.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m;
  loom_status s = loom_graph_parse(&src, &dl, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_graph_verify(m, &dl);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&dl);
  size_t done, kept;
  cr_assert_null(loom_graph_legalize(m, NULL, &done, &kept));
  loom_memplan *p;
  s = loom_memplan_build(m, loom_graph_module_find_func(m, "main"), &p);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_memplan_print(p, &sb);
  char *out = strdup(loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  loom_memplan_free(p);
  loom_graph_module_destroy(m);
  return out;
}

static void expect_lines(const char *plan, const char *const *lines, size_t n) {
  for (size_t i = 0; i < n; i++) cr_assert(strstr(plan, lines[i]), "the plan lacks\n  %s\nplan:\n%s", lines[i], plan);
}

LOOM_TEST(memplan, a_chain_ping_pongs_between_two_storages) {
  char *p = plan_text("fn @main(x: Tensor[(n, 64), f32]) -> Tensor[(n, 64), f32] {\n"
                      "  dataflow {\n    a = exp(x)\n    b = relu(a)\n    c = exp(b)\n    d = relu(c)\n    e = exp(d)\n"
                      "    output e\n  }\n  return e\n}\n");
  static const char *const want[] = {
      "memory plan of @main: 5 tensors in 3 storages",
      "  storage s0: 256*n bytes, a .. d: a, c\n",
      "  storage s1: 256*n bytes, b .. e: b, d\n",
      "  storage s2 (output): 256*n bytes, e .. return: e\n",
      "  peak = 768*n bytes (without reuse: 1280*n bytes)",
  };
  expect_lines(p, want, 5);
  free(p);
}

LOOM_TEST(memplan, tuple_items_keep_their_tensors_alive_across_blocks) {
  char *p = plan_text("fn @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n"
                      "  dataflow {\n    a = exp(x)\n    b = relu(x)\n    t = (a, b)\n    output t\n  }\n"
                      "  dataflow {\n    c = exp(x)\n    u = t.0\n    d = add(u, c)\n    output d\n  }\n  return d\n}\n");
  /* a is read through the tuple at d: its storage cannot take c; b dies at the tuple */
  static const char *const want[] = {
      "memory plan of @main: 4 tensors in 4 storages",
      "  storage s0: 4*n bytes, a .. d: a\n",
      "  storage s1: 4*n bytes, b .. d: b\n",
  };
  expect_lines(p, want, 3);
  free(p);
}

LOOM_TEST(memplan, a_storage_grows_only_by_proof_and_takes_the_tightest_fit) {
  char *p = plan_text("fn @main(x: Tensor[(n, 8), f32]) -> Tensor[(n, 8), f32] {\n"
                      "  dataflow {\n"
                      "    a = exp(x)\n"                              /* 32*n */
                      "    b = reshape(a, shape=[n, 2, 4])\n"          /* 32*n */
                      "    c = sum(b, axes=[2])\n"                     /* 8*n: fits in a's storage */
                      "    d = concat(x, x, axis=1)\n"                 /* 64*n: grows a storage */
                      "    e = strided_slice(d, axes=[1], begin=[0], end=[8])\n"
                      "    f = add(e, x)\n"
                      "    output f\n  }\n  return f\n}\n");
  cr_assert(strstr(p, "64*n bytes"), "%s", p);
  cr_assert_null(strstr(p, "max("), "sizes that are provably ordered need no max:\n%s", p);
  free(p);
}

LOOM_TEST(memplan, vars_defined_by_match_cast_are_never_needed_before_it) {
  char *p = plan_text("fn @main(x: Tensor[(n,), f32]) -> Tensor[(k, 2), f32] {\n"
                      "  dataflow {\n    a = exp(x)\n    b = relu(a)\n"
                      "    y = match_cast(b, Tensor[(2*k,), f32])\n"
                      "    z = reshape(y, shape=[k, 2])\n    w = exp(z)\n    v = relu(w)\n    u = exp(v)\n"
                      "    output u\n  }\n  return u\n}\n");
  /* a's storage (allocated before the match_cast) may not take a tensor sized by k */
  cr_assert(strstr(p, "storage s0: 4*n bytes, a .. b: a\n"), "%s", p);
  cr_assert_null(strstr(p, "max(4*n, 8*k)"), "%s", p);
  free(p);
}

/* A function whose only binding is a view plans no storage at all (it used to copy from an empty
 * binding list). */
LOOM_TEST(memplan, a_function_of_views_only_has_an_empty_plan) {
  char *p = plan_text("fn @main(x: Tensor[(n, 4), f32]) -> Tensor[(4 * n,), f32] {\n"
                      "  dataflow {\n    y = reshape(x, shape=[4 * n])\n    output y\n  }\n  return y\n}\n");
  static const char *const want[] = {"memory plan of @main: "};
  expect_lines(p, want, 1);
  cr_assert_null(strstr(p, "storage s0"), "%s", p);
  free(p);
}

/* A loop's body is planned once: its tensors share storage within an iteration; a storage of a
 * size fixed before the loop (no symbol of the body) is allocated before it and reused by every
 * iteration; what the body returns is an output of each iteration; the peak names the final
 * size of the growing carried value (r_k0), and not the trip count but through the stacked scan
 * items (32*t). */
LOOM_TEST(memplan, a_loop_body_is_planned_once) {
  char *p = plan_text("fn @main(xs: Tensor[(t, b, 8), f32], h0: Tensor[(b, 8), f32]) -> Object {\n"
                      "  r = loop (i < sym(t)) (h: Tensor[(b, 8), f32] = h0, acc: Tensor[(k, 8), f32] = h0) {\n"
                      "    xt = strided_slice(xs, axes=[0], begin=[i], end=[i + 1])\n"
                      "    xi = squeeze(xt, axes=[0])\n"
                      "    u = exp(xi)\n"
                      "    v = add(u, h)\n"
                      "    h1 = tanh(v)\n"
                      "    acc1 = concat(acc, h1, axis=0)\n"
                      "    big = concat(acc1, acc1, axis=0)\n"
                      "    s = sum(big, axes=[0], keepdims=true)\n"
                      "    tp = (h1, acc1, s)\n"
                      "    return tp\n"
                      "  }\n"
                      "  return r\n"
                      "}\n");
  static const char *const want[] = {
      "memory plan of @main: 0 tensors in 0 storages\n",
      "  loop 'r', its body (planned once): 7 tensors in 5 storages\n",
      "    storage s0 (allocated before the loop): 32*b bytes, xt .. h1: xt, v\n",
      "    storage s1: 64*b + 64*k bytes, u .. s: u, big\n",
      "    storage s2 (output, each iteration): 32*b bytes, h1 .. return: h1\n",
      "    storage s3 (output, each iteration): 32*b + 32*k bytes, acc1 .. return: acc1\n",
      "    storage s4 (output, each iteration): 32 bytes, s .. return: s\n",
      "    peak = 160*b + 96*k + 32 bytes (without reuse: 224*b + 96*k + 32 bytes)\n",
      "  loops (bodies, carried values twice, stacked scan items): 32*t + 224*b + 128*r_k0 + 64 bytes\n",
      "  peak = 32*t + 224*b + 128*r_k0 + 64 bytes (without reuse: 0 bytes)\n",
  };
  expect_lines(p, want, sizeof want / sizeof want[0]);
  free(p);
}

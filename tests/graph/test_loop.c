/* test_loop.c — the loop construct (docs/ir.md "Loops"): its struct info, the text form and
 * its errors, the verifier's loop rule, and the reference interpreter at trip counts 0, 1, 2,
 * primes and large, with a carried value that grows per step, scan items, a condition the body
 * computes (greedy decoding) and a count read from a tensor; the passes' walk into a loop's body.
 * (tests/graph/corpus/loops.loom is round-tripped by test_text.c.) */
#include "graph/passes.h"
#include "tests/graph/graph_test_util.h"

/* Running sum h, rows seen so far acc (one more per step) and each step's relu(h) stacked. */
static const char *grow_text =
    "fn @main(x: Tensor[(n, 4), f32], a0: Tensor[(k0, 4), f32]) -> Object {\n"
    "  h0 = zeros(shape=[1, 4], dtype=f32)\n"
    "  r = loop (i < sym(n)) (h: Tensor[(1, 4), f32] = h0, acc: Tensor[(k, 4), f32] = a0) {\n"
    "    xi = strided_slice(x, axes=[0], begin=[i], end=[i + 1])\n"
    "    h1 = add(h, xi)\n"
    "    acc1 = concat(acc, h1, axis=0)\n"
    "    s = relu(h1)\n"
    "    t = (h1, acc1, s)\n"
    "    return t\n"
    "  }\n"
    "  return r\n"
    "}\n";

/* Parses `text` and runs the verifier; returns the first message of either (malloc'd), or NULL. */
static char *first_error(const char *text) {
  char *err;
  loom_graph_module *m = gt_parse(text, &err);
  if (!m) return err;
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_verify(m, &dl);
  char *msg = st && dl.items.len ? loom_diag_format(&dl.items.data[0]) : NULL;
  loom_status_free(st);
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(m);
  return msg;
}

static void expect_error(const char *text, const char *want) {
  char *msg = first_error(text);
  cr_expect(msg && strstr(msg, want), "want '%s' in: %s", want, msg ? msg : "(accepted)");
  free(msg);
}

LOOM_TEST(graph_loop, struct_info_keeps_every_fact) {
  loom_graph_module *m = gt_parse_ok(grow_text);
  char *s = gt_sinfo_str(gt_binding(m, "main", "r")->var->sinfo);
  /* h keeps (1, 4); acc's local k becomes the binding's fresh r_k0; scans stack n rows */
  cr_expect_str_eq(s, "Tuple[Tensor[(1, 4), f32], Tensor[(r_k0, 4), f32], Tensor[(n, 1, 4), f32]]");
  free(s);
  /* inside the body, i < n is known: x[i : i + 1] has one row */
  char *text = gt_print(m);
  cr_expect(strstr(text, "xi: Tensor[(1, 4), f32] = strided_slice"), "%s", text);
  cr_expect(strstr(text, "acc1: Tensor[(k + 1, 4), f32] = concat"), "%s", text);
  free(text);
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_expect(!loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_loop, text_round_trips) {
  loom_graph_module *m1 = gt_parse_ok(grow_text);
  char *p1 = gt_print(m1);
  loom_graph_module *m2 = gt_parse_ok(p1);
  char *p2 = gt_print(m2);
  cr_expect_str_eq(p1, p2);
  cr_expect(loom_graph_module_equal(m1, m2));
  free(p1);
  free(p2);
  loom_graph_module_destroy(m1);
  loom_graph_module_destroy(m2);
}

#define HEAD "fn @main(x: Tensor[(n, 4), f32], m: Tensor[(), i64], w: Tensor[(n, 3), f32]) -> Object {\n"

LOOM_TEST(graph_loop, bad_loops_are_refused_by_name) {
  /* parse errors */
  expect_error(HEAD "  dataflow {\n    r = loop (i < sym(n)) (a: Tensor[(n, 4), f32] = x) {\n      t = (a,)\n      return t\n"
                    "    }\n    output r\n  }\n  return r\n}\n",
               "'loop' is not allowed in a dataflow block");
  expect_error(HEAD "  r = loop (n < sym(3)) (a: Tensor[(n, 4), f32] = x) {\n    t = (a,)\n    return t\n  }\n  return r\n}\n",
               "'n' cannot name the loop's iteration variable");
  expect_error(HEAD "  r = loop (i) (a: Tensor[(n, 4), f32] = x) {\n    t = (a,)\n    return t\n  }\n  return r\n}\n",
               "it needs a trip count, a condition or both");
  expect_error(HEAD "  r = loop (i < x) (a: Tensor[(n, 4), f32] = x) {\n    t = (a,)\n    return t\n  }\n  return r\n}\n",
               "the trip count must be sym(...), a Scalar or a one-element tensor of an integer dtype");
  expect_error(HEAD "  r = loop (i < m, while x) (a: Tensor[(n, 4), f32] = x) {\n    t = (a,)\n    return t\n  }\n  return r\n}\n",
               "the condition must be");
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(n, 4), f32] = x) {\n    return a\n  }\n  return r\n}\n",
               "the body must return a tuple var");
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(n, 4), f32] = x, b: Tensor[(n, 4), f32] = x) {\n    t = (a,)\n"
                    "    return t\n  }\n  return r\n}\n",
               "the body returns 1 values, fewer than 2 carried values");
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(n, 4), f32] = x, a: Tensor[(n, 4), f32] = x) {\n    t = (a, a)\n"
                    "    return t\n  }\n  return r\n}\n",
               "loop-carried variable 'a' is given twice");
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(n, 4), f32] = x) {\n    b = relu(a)\n    t = (b,)\n    return t\n  }\n"
                    "  c = relu(b)\n  return c\n}\n",
               "unknown variable 'b'");
  /* the verifier's loop rule */
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(n, 4), f32] = w) {\n    t = (a,)\n    return t\n  }\n  return r\n}\n",
               "loop-carried 'a' is Tensor[(n, 4), f32], but its initial value is Tensor[(n, 3), f32]: it can never fit");
  expect_error(HEAD "  r = loop (i < m) (a: Tensor[(k, 4), f32] = x) {\n    b = concat(a, a, axis=1)\n    t = (b,)\n"
                    "    return t\n  }\n  return r\n}\n",
               "the body's next value for it (result field 0) is Tensor[(k, 8), f32]: it can never fit");
}

/* Scan items whose shape the body decides (a carried value's local here): the stacked dims are
 * fresh, every item must have the first one's shape, and no iteration leaves the shape unknown. */
static const char *body_shape_text =
    "fn @main(x: Tensor[(n, 4), f32], m: Tensor[(), i64]) -> Object {\n"
    "  r = loop (i < m) (a: Tensor[(k, 4), f32] = x) {\n"
    "    b = concat(a, a, axis=0)\n"
    "    c = strided_slice(b, axes=[0], begin=[0], end=[k])\n"
    "    t = (c, a)\n"
    "    return t\n"
    "  }\n"
    "  return r\n"
    "}\n";

LOOM_TEST(graph_loop, scan_items_whose_shape_the_body_decides) {
  loom_graph_module *m = gt_parse_ok(body_shape_text);
  char *s = gt_sinfo_str(gt_binding(m, "main", "r")->var->sinfo);
  cr_expect_str_eq(s, "Tuple[Tensor[(r_k0, 4), f32], Tensor[(r_n1, r_s2, 4), f32]]");
  free(s);
  int64_t xs[2] = {3, 4};
  for (int64_t it = 0; it < 3; it++) {
    double mv = (double)it;
    loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 2, xs, NULL), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &mv)};
    if (it == 0) {
      char *msg = gt_eval_err(m, 2, args);
      cr_expect(strstr(msg, "scan item 0: the loop ran no iteration, and the items' shape is known only from them"), "%s", msg);
      free(msg);
    } else {
      loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
      cr_expect(r.items[1].t.ndim == 3 && r.items[1].t.shape[0] == it && r.items[1].t.shape[1] == 3, "stacked (%lld, 3, 4)", (long long)it);
      loom_graph_value_free(&r);
    }
    gt_free_args(args, 2);
  }
  loom_graph_module_destroy(m);
  /* an item that changes shape is an error at its iteration */
  m = gt_parse_ok("fn @main(x: Tensor[(n, 4), f32]) -> Object {\n"
                  "  r = loop (i < sym(3)) (a: Tensor[(k, 4), f32] = x) {\n"
                  "    b = concat(a, a, axis=0)\n"
                  "    t = (b, a)\n"
                  "    return t\n"
                  "  }\n"
                  "  return r\n"
                  "}\n");
  loom_graph_value args[1] = {gt_tensor(LOOM_DTYPE_F32, 2, xs, NULL)};
  char *msg = gt_eval_err(m, 1, args);
  cr_expect(strstr(msg, "scan item 0 of iteration 1 differs in shape or dtype from iteration 0's"), "%s", msg);
  free(msg);
  gt_free_args(args, 1);
  loom_graph_module_destroy(m);
}

/* x (n, 4) with x[i][j] = i + j / 10; a0 (k0, 4) of 100s. */
static void grow_inputs(int64_t n, int64_t k0, loom_graph_value *args) {
  int64_t xs[2] = {n, 4}, as[2] = {k0, 4};
  args[0] = gt_tensor(LOOM_DTYPE_F32, 2, xs, NULL);
  args[1] = gt_tensor(LOOM_DTYPE_F32, 2, as, NULL);
  for (int64_t i = 0; i < n; i++)
    for (int j = 0; j < 4; j++) loom_graph_tensor_set_f64(&args[0].t, (size_t)(i * 4 + j), (double)i + j / 10.0);
  for (size_t i = 0; i < args[1].t.numel; i++) loom_graph_tensor_set_f64(&args[1].t, i, 100);
}

LOOM_TEST(graph_loop, interpreter_at_many_trip_counts) {
  loom_graph_module *m = gt_parse_ok(grow_text);
  static const int64_t counts[] = {0, 1, 2, 3, 7, 13, 100};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int64_t n = counts[c], k0 = 2;
    loom_graph_value args[2];
    grow_inputs(n, k0, args);
    loom_sym_env *env;
    cr_assert(!loom_sym_env_create(NULL, &env));
    loom_graph_value r = gt_eval_ok(m, 2, args, env);
    cr_assert_eq(r.kind, LOOM_SINFO_TUPLE);
    cr_assert_eq(r.n, 3);
    /* h = sum of the rows; acc = a0 then the running sums; the scan holds the running sums */
    double h[4] = {0}, *acc = malloc(sizeof *acc * (size_t)(k0 + n) * 4), *scan = malloc(sizeof *scan * (size_t)(n + 1) * 4);
    for (int64_t i = 0; i < k0 * 4; i++) acc[i] = 100;
    for (int64_t i = 0; i < n; i++)
      for (int j = 0; j < 4; j++) {
        h[j] += (double)i + j / 10.0;
        acc[(k0 + i) * 4 + j] = h[j];
        scan[i * 4 + j] = h[j] > 0 ? h[j] : 0;
      }
    int64_t hs[2] = {1, 4}, as[2] = {k0 + n, 4}, ss[3] = {n, 1, 4};
    /* f32 sums of up to 100 rows against double sums */
    gt_expect_values(&r.items[0], 2, hs, h, 1e-2);
    gt_expect_values(&r.items[1], 2, as, acc, 1e-2);
    gt_expect_values(&r.items[2], 3, ss, scan, 1e-2);
    /* the fresh symbol of the final acc is bound */
    const loom_sinfo *rs = gt_binding(m, "main", "r")->var->sinfo;
    int64_t rk;
    cr_expect(loom_sym_env_get(env, rs->fields[1]->dims[0], &rk) && rk == k0 + n, "r_k0 = %lld", (long long)rk);
    free(acc);
    free(scan);
    loom_sym_env_destroy(env);
    loom_graph_value_free(&r);
    gt_free_args(args, 2);
  }
  loom_graph_module_destroy(m);
}

/* Greedy decoding as in tests/graph/corpus/loops.loom: the next token is the argmax of the
 * last token's row of a 4x4 table, until token 3 or `steps` tokens. */
static const char *decode_text =
    "const @table: Tensor[(4, 4), f32] = [0.0, 1.0, 0.5, 0.2, 0.1, 0.0, 2.0, 0.3, 0.0, 0.0, 0.0, 3.0, 1.0, 0.0, 0.0, 0.0]\n"
    "fn @main(prompt: Tensor[(p,), i64], steps: Tensor[(), i64]) -> Object {\n"
    "  last0 = strided_slice(prompt, axes=[0], begin=[p - 1], end=[p])\n"
    "  go = const(1, bool)\n"
    "  r = loop (i < steps, while go) (seq: Tensor[(k,), i64] = prompt, last: Tensor[(1,), i64] = last0) {\n"
    "    row = take(@table, last, axis=0)\n"
    "    nxt = argmax(row, axis=1)\n"
    "    seq1 = concat(seq, nxt, axis=0)\n"
    "    eos = const(3, i64)\n"
    "    more = not_equal(nxt, eos)\n"
    "    c = reshape(more, shape=[])\n"
    "    t = (c, seq1, nxt, nxt)\n"
    "    return t\n"
    "  }\n"
    "  return r\n"
    "}\n";

LOOM_TEST(graph_loop, greedy_decode_stops_on_its_condition) {
  loom_graph_module *m = gt_parse_ok(decode_text);
  /* from 0: 0 -> 1 -> 2 -> 3 (stop); from 3: 3 -> 0 -> 1 -> ... */
  struct {
    int64_t start, steps, want_len;
    double want[8];
  } cases[] = {{0, 10, 4, {0, 1, 2, 3}}, {0, 2, 3, {0, 1, 2}}, {3, 10, 5, {3, 0, 1, 2, 3}}, {1, 0, 1, {1}}, {2, 1, 2, {2, 3}}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    int64_t one = 1;
    double pv = (double)cases[c].start, sv = (double)cases[c].steps;
    loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_I64, 1, &one, &pv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &sv)};
    loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
    int64_t len = cases[c].want_len, nsteps = len - 1;
    gt_expect_values(&r.items[0], 1, &len, cases[c].want, 0);
    int64_t ss[2] = {nsteps, 1};
    gt_expect_values(&r.items[2], 2, ss, cases[c].want + 1, 0);
    loom_graph_value_free(&r);
    gt_free_args(args, 2);
  }
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_loop, a_carried_value_that_breaks_its_struct_info_is_a_named_error) {
  /* b's next value doubles its rows: (n, 4) holds at n = 0 only, so it is checked when the next
   * iteration starts */
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 4), f32]) -> Object {\n"
      "  r = loop (i < sym(3)) (b: Tensor[(n, 4), f32] = x) {\n"
      "    c = concat(b, b, axis=0)\n"
      "    t = (c,)\n"
      "    return t\n"
      "  }\n"
      "  return r\n"
      "}\n");
  int64_t xs[2] = {2, 4};
  loom_graph_value args[1] = {gt_tensor(LOOM_DTYPE_F32, 2, xs, NULL)};
  char *msg = gt_eval_err(m, 1, args);
  cr_expect(strstr(msg, "binding 'r'") && strstr(msg, "loop iteration 1: carried 'b'") && strstr(msg, "got 4"), "%s", msg);
  free(msg);
  gt_free_args(args, 1);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_loop, count_from_a_tensor_and_negative_counts) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(4,), f32], m: Tensor[(), i64]) -> Object {\n"
      "  r = loop (i < m) (a: Tensor[(4,), f32] = x) {\n"
      "    a1 = add(a, a)\n"
      "    t = (a1, a)\n"
      "    return t\n"
      "  }\n"
      "  return r\n"
      "}\n");
  char *s = gt_sinfo_str(gt_binding(m, "main", "r")->var->sinfo);
  cr_expect(strstr(s, "Tensor[(r_n"), "the stacked axis is fresh: %s", s);
  free(s);
  static const int64_t ms[] = {-3, 0, 1, 5};
  for (size_t c = 0; c < 4; c++) {
    int64_t four = 4;
    double xv[4] = {1, 2, 3, 4}, mv = (double)ms[c];
    loom_graph_value args[2] = {gt_tensor(LOOM_DTYPE_F32, 1, &four, xv), gt_tensor(LOOM_DTYPE_I64, 0, NULL, &mv)};
    loom_graph_value r = gt_eval_ok(m, 2, args, NULL);
    int64_t it = ms[c] > 0 ? ms[c] : 0;
    double f = (double)(1 << it), want[4] = {f, 2 * f, 3 * f, 4 * f};
    gt_expect_values(&r.items[0], 1, &four, want, 0);
    cr_expect_eq(r.items[1].t.shape[0], it);
    loom_graph_value_free(&r);
    gt_free_args(args, 2);
  }
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_loop, nested_loops) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(4,), f32]) -> Object {\n"
      "  r = loop (i < sym(3)) (acc: Tensor[(4,), f32] = x) {\n"
      "    inner = loop (j < sym(i + 1)) (a: Tensor[(4,), f32] = acc) {\n"
      "      a1 = add(a, a)\n"
      "      t1 = (a1,)\n"
      "      return t1\n"
      "    }\n"
      "    acc1 = inner.0\n"
      "    t = (acc1, acc1)\n"
      "    return t\n"
      "  }\n"
      "  return r\n"
      "}\n");
  int64_t four = 4;
  double xv[4] = {1, 2, 3, 4};
  loom_graph_value args[1] = {gt_tensor(LOOM_DTYPE_F32, 1, &four, xv)};
  loom_graph_value r = gt_eval_ok(m, 1, args, NULL);
  /* 1 + 2 + 3 doublings */
  double want[4] = {64, 128, 192, 256}, scan[12] = {2, 4, 6, 8, 8, 16, 24, 32, 64, 128, 192, 256};
  int64_t ss[2] = {3, 4};
  gt_expect_values(&r.items[0], 1, &four, want, 0);
  gt_expect_values(&r.items[1], 2, ss, scan, 0);
  loom_graph_value_free(&r);
  gt_free_args(args, 1);
  loom_graph_module_destroy(m);
}

typedef loom_status (*pass_fn)(loom_graph_module *m, size_t *out_changed);

/* Runs the passes in order on `in` (verifying after each) and asserts the printed module is
 * `want`, which parses back to the same text. */
static void expect_passes(const char *in, const pass_fn *passes, size_t n, const char *want) {
  loom_graph_module *m = gt_parse_ok(in);
  for (size_t i = 0; i < n; i++) {
    loom_status s = passes[i](m, NULL);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_diag_list dl;
    loom_diag_list_init(&dl, NULL);
    s = loom_graph_verify(m, &dl);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_diag_list_destroy(&dl);
  }
  char *got = gt_print(m);
  cr_assert_str_eq(got, want);
  loom_graph_module *back = gt_parse_ok(got);
  cr_assert(loom_graph_module_equal(m, back));
  loom_graph_module_destroy(back);
  free(got);
  loom_graph_module_destroy(m);
}

/* The walk goes into a loop's body: fold and DCE there, CSE using what was computed before the
 * loop; what the body binds is not available after it (q2 stays). */
LOOM_TEST(graph_loop, passes_walk_loop_bodies) {
  static const pass_fn p[] = {loom_graph_normalize, loom_graph_fold, loom_graph_cse, loom_graph_dce};
  expect_passes("fn @main(x: Tensor[(n, 4), f32]) -> Object {\n"
         "  a = exp(x)\n"
         "  r = loop (i < sym(3)) (h: Tensor[(n, 4), f32] = x) {\n"
         "    b = exp(x)\n"
         "    dead = relu(h)\n"
         "    q = sqrt(x)\n"
         "    c = add(h, b)\n"
         "    s0 = shape_of(h)\n"
         "    z = zeros(s0, dtype=f32)\n"
         "    d = add(c, z)\n"
         "    e = mul(d, q)\n"
         "    t = (e,)\n"
         "    return t\n"
         "  }\n"
         "  q2 = sqrt(x)\n"
         "  h2 = r.0\n"
         "  out = (h2, q2, a)\n"
         "  return out\n"
         "}\n",
         p, 4,
         "fn @main(x: Tensor[(n, 4), f32]) -> Object {\n"
         "  dataflow {\n"
         "    a: Tensor[(n, 4), f32] = exp(x)\n"
         "    output a\n"
         "  }\n"
         "  r: Tuple[Tensor[(n, 4), f32]] = loop (i < sym(3)) (h: Tensor[(n, 4), f32] = x) {\n"
         "    dataflow {\n"
         "      q: Tensor[(n, 4), f32] = sqrt(x)\n"
         "      c: Tensor[(n, 4), f32] = add(h, a)\n"
         "      z: Tensor[(n, 4), f32] = zeros(dtype=f32, shape=[n, 4])\n"
         "      d: Tensor[(n, 4), f32] = add(c, z)\n"
         "      e: Tensor[(n, 4), f32] = mul(q, d)\n"
         "      t: Tuple[Tensor[(n, 4), f32]] = (e,)\n"
         "      output t\n"
         "    }\n"
         "    return t\n"
         "  }\n"
         "  dataflow {\n"
         "    q2: Tensor[(n, 4), f32] = sqrt(x)\n"
         "    h2: Tensor[(n, 4), f32] = r.0\n"
         "    out: Tuple[Tensor[(n, 4), f32], Tensor[(n, 4), f32], Tensor[(n, 4), f32]] = (h2, q2, a)\n"
         "    output out\n"
         "  }\n"
         "  return out\n"
         "}\n");
}


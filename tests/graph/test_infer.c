/* test_infer.c — struct info (is-base-of, printing) and per-op inference on symbolic
 * inputs, including the cases the design names: concat of n and n+1 rows, a proven
 * reshape, broadcast n vs 1 and n vs m (guarded), symbolic strided_slice, nonzero. */
#include "tests/graph/graph_test_util.h"

LOOM_TEST(graph_infer, concat_n_and_n_plus_1_rows) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(n + 1, 4), f32]) -> Object {\n"
      "  z = concat(x, y, axis=0)\n  return z\n}\n");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *n = gt_pdim(m, 0, 0);
  const loom_sinfo *si = gt_binding(m, "main", "z")->var->sinfo;
  cr_assert_eq(si->ndim, 2);
  cr_assert_eq(si->dims[0], loom_sym_add(cx, loom_sym_mul(cx, loom_sym_const(cx, 2), n), loom_sym_const(cx, 1)));
  cr_assert_eq(si->dims[1], loom_sym_const(cx, 4));
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, reshape_proven) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(b, s, 12, 64), f32]) -> Object {\n"
      "  y = reshape(x, shape=[b, s, 768])\n  z = reshape(y, shape=[b, s, 12, -1])\n  return z\n}\n");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  loom_graph_binding *y = gt_binding(m, "main", "y"), *z = gt_binding(m, "main", "z");
  cr_assert_eq(y->nguards, 0, "the element count is proven: no guard");
  cr_assert_eq(y->var->sinfo->dims[2], loom_sym_const(cx, 768));
  cr_assert_eq(z->nguards, 0);
  cr_assert_eq(z->var->sinfo->dims[3], loom_sym_const(cx, 64));
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, reshape_unprovable_keeps_target_and_guards) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(m,), f32]) -> Object {\n"
      "  z = reshape(x, shape=[m])\n  return z\n}\n");
  loom_graph_binding *z = gt_binding(m, "main", "z");
  cr_assert_eq(z->var->sinfo->ndim, 1);
  cr_assert_eq(z->var->sinfo->dims[0], gt_pdim(m, 1, 0));
  cr_assert_eq(z->nguards, 1);
  cr_assert(strstr(z->guard_why[0], "reshape"), "%s", z->guard_why[0]);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, reshape_impossible_is_an_error) {
  char *err;
  loom_graph_module *m = gt_parse("fn @main(x: Tensor[(n, 4), f32]) -> Object {\n  z = reshape(x, shape=[n + 1, 4])\n  return z\n}\n", &err);
  cr_assert_null(m);
  cr_assert(strstr(err, "reshape: operand 0 (n, 4) has 4*n elements") || strstr(err, "reshape: operand 0"), "%s", err);
  free(err);
}

LOOM_TEST(graph_infer, broadcast_n_vs_1) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 3), f32], y: Tensor[(1, 3), f32]) -> Object {\n  z = add(x, y)\n  return z\n}\n");
  loom_graph_binding *z = gt_binding(m, "main", "z");
  cr_assert_eq(z->var->sinfo->dims[0], gt_pdim(m, 0, 0));
  cr_assert_eq(z->nguards, 0);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, broadcast_n_vs_m_is_guarded) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n,), f32], y: Tensor[(m,), f32]) -> Object {\n  z = add(x, y)\n  return z\n}\n");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *n = gt_pdim(m, 0, 0), *mm = gt_pdim(m, 1, 0);
  loom_graph_binding *z = gt_binding(m, "main", "z");
  cr_assert_eq(z->var->sinfo->dims[0], loom_sym_max(cx, n, mm), "max(n, m), not an unknown dim");
  cr_assert_eq(z->nguards, 1);
  const loom_sym_expr *one = loom_sym_const(cx, 1);
  const loom_sym_expr *want = loom_sym_or(cx, loom_sym_cmp(cx, LOOM_SYM_EQ, n, mm),
                                          loom_sym_or(cx, loom_sym_cmp(cx, LOOM_SYM_EQ, n, one),
                                                      loom_sym_cmp(cx, LOOM_SYM_EQ, mm, one)));
  cr_assert_eq(z->guards[0], want);
  cr_assert(strstr(z->guard_why[0], "add: operand 0 axis 0 is n, operand 1 axis 0 is m"), "%s", z->guard_why[0]);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, broadcast_constant_mismatch_is_an_error) {
  char *err;
  loom_graph_module *m = gt_parse("fn @main(x: Tensor[(3,), f32], y: Tensor[(4,), f32]) -> Object {\n  z = add(x, y)\n  return z\n}\n", &err);
  cr_assert_null(m);
  cr_assert(strstr(err, "add: operand 0 axis 0 is 3, operand 1 axis 0 is 4"), "%s", err);
  free(err);
}

LOOM_TEST(graph_infer, matmul_message_names_operands_axes_and_sizes) {
  char *err;
  loom_graph_module *m = gt_parse(
      "fn @main(x: Tensor[(b, s, 512), f32], w: Tensor[(768, 3072), f32]) -> Object {\n  y = matmul(x, w)\n  return y\n}\n",
      &err);
  cr_assert_null(m);
  cr_assert(strstr(err, "matmul: operand 1 axis 0 is 768, operand 0 axis 2 is 512"), "%s", err);
  cr_assert(strstr(err, "test.loom:2:7"), "%s", err);
  free(err);
}

LOOM_TEST(graph_infer, matmul_shapes) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(a: Tensor[(k,), f32], b: Tensor[(k, m), f32], c: Tensor[(b, n, k), f32],\n"
      "         d: Tensor[(b, 1, n, k), f32], e: Tensor[(h, k, m), f32]) -> Object {\n"
      "  v1 = matmul(a, b)\n  v2 = matmul(c, a)\n  v3 = matmul(d, e)\n  v4 = matmul(a, a)\n  return v1\n}\n");
  char *s1 = gt_sinfo_str(gt_binding(m, "main", "v1")->var->sinfo);
  char *s2 = gt_sinfo_str(gt_binding(m, "main", "v2")->var->sinfo);
  char *s3 = gt_sinfo_str(gt_binding(m, "main", "v3")->var->sinfo);
  char *s4 = gt_sinfo_str(gt_binding(m, "main", "v4")->var->sinfo);
  cr_assert_str_eq(s1, "Tensor[(m,), f32]");
  cr_assert_str_eq(s2, "Tensor[(b, n), f32]");
  cr_assert_str_eq(s3, "Tensor[(b, h, n, m), f32]");
  cr_assert_str_eq(s4, "Tensor[(), f32]");
  free(s1);
  free(s2);
  free(s3);
  free(s4);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, strided_slice_symbolic_extent) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 8), f32]) -> Object {\n"
      "  y = strided_slice(x, axes=[0, 1], begin=[1, 2], end=[n, 6])\n  return y\n}\n");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sinfo *si = gt_binding(m, "main", "y")->var->sinfo;
  int64_t c;
  cr_assert(!loom_sym_is_const(si->dims[0], &c), "a symbolic extent");
  cr_assert_eq(si->dims[1], loom_sym_const(cx, 4));
  /* With n = 10 the extent evaluates to 9. */
  loom_sym_env *env;
  cr_assert(!loom_sym_env_create(NULL, &env));
  cr_assert(!loom_sym_env_set(env, gt_pdim(m, 0, 0), 10));
  cr_assert(!loom_sym_eval(cx, si->dims[0], env, &c));
  cr_assert_eq(c, 9);
  loom_sym_env_destroy(env);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, nonzero_gives_a_fresh_symbol) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 3), f32]) -> Object {\n  y = nonzero(x)\n  z = nonzero(x)\n  return y\n}\n");
  const loom_sinfo *y = gt_binding(m, "main", "y")->var->sinfo, *z = gt_binding(m, "main", "z")->var->sinfo;
  cr_assert_eq(y->ndim, 2);
  cr_assert(loom_sym_is_var(y->dims[1]));
  cr_assert_neq(y->dims[1], gt_pdim(m, 0, 0));
  cr_assert_neq(y->dims[1], z->dims[1], "each nonzero gets its own symbol");
  cr_assert(strstr(loom_sym_var_name(y->dims[1]), "nnz"), "%s", loom_sym_var_name(y->dims[1]));
  loom_graph_module_destroy(m);
}

static void expect_sinfo(loom_graph_module *m, const char *name, const char *want) {
  char *got = gt_sinfo_str(gt_binding(m, "main", name)->var->sinfo);
  cr_expect_str_eq(got, want, "%s: got %s, want %s", name, got, want);
  free(got);
}

LOOM_TEST(graph_infer, reductions_and_shape_ops) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(b, s, d), f32], i: Tensor[(t,), i64]) -> Object {\n"
      "  r1 = sum(x, axes=[1], keepdims=true)\n  r2 = mean(x, axes=[-1])\n  r3 = argmax(x, axis=2)\n"
      "  p = permute_dims(x, axes=[2, 0, 1])\n  e = expand_dims(x, axes=[1])\n  q = squeeze(e, axes=[1])\n"
      "  f = flatten(x, axis=1)\n  g = take(x, i, axis=1)\n  sh = shape_of(x)\n  a = arange(start=[0], end=[s], step=[1])\n"
      "  z = zeros(shape=[b, s], dtype=f16)\n  sm = softmax(x)\n  c = cast(x, dtype=i32)\n  k = greater(x, x)\n"
      "  w = where(k, x, x)\n  bt = broadcast_to(r1, shape=[b, s, d])\n  tl = tril(x, k=[1])\n  return r1\n}\n");
  expect_sinfo(m, "r1", "Tensor[(b, 1, d), f32]");
  expect_sinfo(m, "r2", "Tensor[(b, s), f32]");
  expect_sinfo(m, "r3", "Tensor[(b, s), i64]");
  expect_sinfo(m, "p", "Tensor[(d, b, s), f32]");
  expect_sinfo(m, "e", "Tensor[(b, 1, s, d), f32]");
  expect_sinfo(m, "q", "Tensor[(b, s, d), f32]");
  expect_sinfo(m, "g", "Tensor[(b, t, d), f32]");
  expect_sinfo(m, "sh", "Shape[(b, s, d)]");
  expect_sinfo(m, "a", "Tensor[(s,), i64]");
  expect_sinfo(m, "z", "Tensor[(b, s), f16]");
  expect_sinfo(m, "sm", "Tensor[(b, s, d), f32]");
  expect_sinfo(m, "c", "Tensor[(b, s, d), i32]");
  expect_sinfo(m, "k", "Tensor[(b, s, d), bool]");
  expect_sinfo(m, "w", "Tensor[(b, s, d), f32]");
  expect_sinfo(m, "bt", "Tensor[(b, s, d), f32]");
  expect_sinfo(m, "tl", "Tensor[(b, s, d), f32]");
  const loom_sinfo *f = gt_binding(m, "main", "f")->var->sinfo;
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  cr_assert_eq(f->dims[1], loom_sym_mul(cx, gt_pdim(m, 0, 1), gt_pdim(m, 0, 2)));
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, attribute_errors) {
  static const char *const cases[][2] = {
      {"  y = softmax(x, axis=3)\n", "softmax: axis 3 is out of range for rank 2"},
      {"  y = sum(x, axes=[0, 0])\n", "sum: axis 0 is listed twice"},
      {"  y = cast(x)\n", "cast: missing attribute 'dtype'"},
      {"  y = relu(x, alpha=1.0)\n", "relu: unknown attribute 'alpha'"},
      {"  y = softmax(x, axis=f32)\n", "softmax: attribute 'axis' must be an integer"},
      {"  y = add(x)\n", "add: expects 2 operands, got 1"},
      {"  y = exp(i)\n", "exp: operand 0 has dtype i64; a float dtype is required"},
      {"  y = take(x, x)\n", "take: operand 1 (indices) has dtype f32"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char text[512], *err;
    snprintf(text, sizeof text, "fn @main(x: Tensor[(n, 4), f32], i: Tensor[(n,), i64]) -> Object {\n%s  return x\n}\n",
             cases[k][0]);
    loom_graph_module *m = gt_parse(text, &err);
    cr_expect_null(m, "case %zu parsed", k);
    cr_expect(err && strstr(err, cases[k][1]), "case %zu: %s", k, err ? err : "(none)");
    cr_expect(err && strstr(err, "binding 'y'"), "case %zu names the binding: %s", k, err ? err : "");
    free(err);
    loom_graph_module_destroy(m);
  }
}

LOOM_TEST(graph_infer, is_base_of_three_valued) {
  loom_graph_module *m = gt_parse_ok("fn @main(x: Tensor[(n, 4), f32], y: Tensor[(m, 4), f32]) -> Object {\n  return x\n}\n");
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sinfo *x = loom_graph_module_find_func(m, "main")->params[0]->sinfo;
  const loom_sinfo *y = loom_graph_module_find_func(m, "main")->params[1]->sinfo;
  const loom_sym_expr *d5[] = {gt_pdim(m, 0, 0), loom_sym_const(cx, 5)};
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, x), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sinfo_is_base_of(cx, loom_sinfo_object(m), x), LOOM_SYM_TRUE);
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, loom_sinfo_object(m)), LOOM_SYM_UNKNOWN);
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, y), LOOM_SYM_UNKNOWN, "n vs m needs a runtime check");
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d5, NULL)), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, loom_sinfo_tensor(m, LOOM_DTYPE_I32, 2, x->dims, NULL)), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, loom_sinfo_tensor(m, LOOM_DTYPE_F32, 3, NULL, NULL)), LOOM_SYM_FALSE);
  cr_assert_eq(loom_sinfo_is_base_of(cx, x, loom_sinfo_tensor(m, LOOM_DTYPE_F32, -1, NULL, NULL)), LOOM_SYM_UNKNOWN);
  cr_assert_eq(loom_sinfo_is_base_of(cx, loom_sinfo_tensor(m, LOOM_DTYPE_F32, -1, NULL, NULL), x), LOOM_SYM_TRUE);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, builder_normalises_and_infers) {
  loom_graph_module *m;
  cr_assert(!loom_graph_module_create(NULL, &m));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *b = loom_sym_var_new(cx, "b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *xd[] = {b, loom_sym_const(cx, 8)}, *wd[] = {loom_sym_const(cx, 8), loom_sym_const(cx, 4)};
  loom_graph_builder bld;
  loom_graph_builder_begin(&bld, m, "main");
  loom_graph_expr *x = loom_graph_builder_param(&bld, "x", loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, xd, NULL));
  loom_graph_expr *w = loom_graph_builder_param(&bld, "w", loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, wd, NULL));
  cr_assert(!loom_graph_builder_block(&bld, true));
  /* A nested call: relu(matmul(x, w)) is bound in two steps (ANF). */
  loom_graph_expr *mm_args[] = {x, w};
  loom_graph_expr *mm = loom_graph_call_op(m, LOOM_GRAPH_OP_MATMUL, 2, mm_args, 0, NULL);
  loom_graph_expr *y;
  cr_assert(!loom_graph_builder_op(&bld, "relu", 1, &mm, 0, NULL, "y", &y));
  loom_graph_func *f;
  cr_assert(!loom_graph_builder_end(&bld, y, NULL, &f));
  cr_assert_eq(f->body->nblocks, 1);
  cr_assert_eq(f->body->blocks[0]->n, 2);
  char *s = gt_sinfo_str(y->sinfo);
  cr_assert_str_eq(s, "Tensor[(b, 4), f32]");
  free(s);
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_assert(!loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  /* The printed text parses back to the same text. */
  char *t1 = gt_print(m);
  loom_graph_module *m2 = gt_parse_ok(t1);
  char *t2 = gt_print(m2);
  cr_assert_str_eq(t1, t2);
  free(t1);
  free(t2);
  loom_graph_module_destroy(m2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, conv_pool_and_friends_symbolic) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 16, h, w), f32], k: Tensor[(32, 4, 3, 3), f32], l: Tensor[(n, 8, t), f32],\n"
      "         k1: Tensor[(8, 8, 5), f32], q: Tensor[(b, 8, s, 64), f32], kv: Tensor[(b, g, t, 64), f32],\n"
      "         i: Tensor[(n, t), i64], gam: Tensor[(16,), f32]) -> Object {\n"
      "  c = conv2d(x, k, groups=4, padding=[1], strides=[2])\n  c1 = conv1d(l, k1, dilation=[2])\n"
      "  p = max_pool2d(x, kernel=[2, 2])\n  gp = global_avg_pool2d(x)\n  r = resize2d(x, size=[2 * h, 2 * w], method=\"linear\")\n"
      "  pd = pad(x, pads=[0, 0, 1, 1, 0, 0, 2, t])\n  tl = tile(l, repeats=[1, 2, s])\n  sp = split(l, sections=2, axis=1)\n"
      "  sq = split(l, sections=2, axis=2)\n  oh = one_hot(i, depth=[t + 1])\n  u = unique(x)\n  a = attention(q, kv, kv)\n"
      "  gn = group_norm(x, gam, gam, num_groups=4)\n  rp = repeat(l, repeats=3, axis=2)\n  return c\n}\n");
  expect_sinfo(m, "c", "Tensor[(n, 32, floordiv(h + 1, 2), floordiv(w + 1, 2)), f32]");
  expect_sinfo(m, "c1", "Tensor[(n, 8, t - 8), f32]");
  expect_sinfo(m, "p", "Tensor[(n, 16, floordiv(h, 2), floordiv(w, 2)), f32]");
  expect_sinfo(m, "gp", "Tensor[(n, 16, 1, 1), f32]");
  expect_sinfo(m, "r", "Tensor[(n, 16, 2*h, 2*w), f32]");
  expect_sinfo(m, "pd", "Tensor[(n, 16, h + 3, w + t + 1), f32]");
  expect_sinfo(m, "tl", "Tensor[(n, 16, t*s), f32]");
  expect_sinfo(m, "sp", "Tuple[Tensor[(n, 4, t), f32], Tensor[(n, 4, t), f32]]");
  expect_sinfo(m, "oh", "Tensor[(n, t, t + 1), f32]");
  expect_sinfo(m, "a", "Tensor[(b, 8, s, 64), f32]");
  expect_sinfo(m, "gn", "Tensor[(n, 16, h, w), f32]");
  expect_sinfo(m, "rp", "Tensor[(n, 8, 3*t), f32]");
  cr_assert_eq(gt_binding(m, "main", "sp")->nguards, 0, "8 is a multiple of 2");
  cr_assert_eq(gt_binding(m, "main", "sq")->nguards, 1, "t may be odd: guarded");
  cr_assert_eq(gt_binding(m, "main", "a")->nguards, 1, "8 heads over g kv heads: guarded");
  const loom_sinfo *u = gt_binding(m, "main", "u")->var->sinfo;
  cr_assert(u->ndim == 1 && loom_sym_is_var(u->dims[0]) && strstr(loom_sym_var_name(u->dims[0]), "uniq"));
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_infer, op_errors_name_operands_axes_and_sizes) {
  static const char *const cases[][2] = {
      {"  y = conv2d(x, k)\n", "conv2d: operand 1 axis 1 is 3, operand 0 axis 1 is 16"},
      {"  y = concat(x, z, axis=0)\n", "concat: operand 1 axis 1 is 3, operand 0 axis 1 is 16"},
      {"  y = layer_norm(z, v, v)\n", "layer_norm: operand 1 axis 0 is 5, operand 0 axis 3 is 7"},
      {"  y = attention(x, x, z)\n", "attention: operand 2 axis 1 is 3, operand 1 axis 1 is 16"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char text[1024], *err;
    snprintf(text, sizeof text,
             "fn @main(x: Tensor[(n, 16, h, w), f32], k: Tensor[(8, 3, 3, 3), f32], z: Tensor[(n, 3, 5, 7), f32],\n"
             "         v: Tensor[(5,), f32]) -> Object {\n%s  return x\n}\n",
             cases[c][0]);
    loom_graph_module *m = gt_parse(text, &err);
    cr_expect_null(m);
    cr_expect(err && strstr(err, cases[c][1]), "case %zu: %s", c, err ? err : "");
    free(err);
    loom_graph_module_destroy(m);
  }
}

LOOM_TEST(graph_infer, parse_survives_out_of_memory) {
  /* Every allocation of a parse failing in turn gives an error, never a crash or a leak. */
  const char *text = "fn @main(x: Tensor[(n, 4), f32], y: Tensor[(m,), f32]) -> Object {\n"
                     "  dataflow {\n    z = add(x, y)\n    s = sum(z, axes=[1])\n    output s\n  }\n  return s\n}\n";
  for (long n = 0; n < 5000; n++) {
    loom_alloc_fail_after(n);
    loom_source src = {"oom.loom", text, strlen(text)};
    loom_diag_list dl;
    loom_diag_list_init(&dl, NULL);
    loom_graph_module *m = NULL;
    loom_status st = loom_graph_parse(&src, &dl, &m);
    long failures = loom_alloc_injected_failures();
    loom_alloc_fail_after(-1);
    loom_status_free(st);
    loom_graph_module_destroy(m);
    loom_diag_list_destroy(&dl);
    if (!st && failures == 0) return; /* ran to completion without an injected failure */
  }
  cr_assert(0, "parse never completed");
}

LOOM_TEST(graph_infer, builder_tuples_functions_match_cast) {
  loom_graph_module *m;
  cr_assert(!loom_graph_module_create(NULL, &m));
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  const loom_sym_expr *n = loom_sym_var_new(cx, "n", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *d[] = {n, loom_sym_const(cx, 6)};
  /* @half(x) = split(x, sections=2, axis=1).0 */
  loom_graph_builder bld;
  loom_graph_builder_begin(&bld, m, "half");
  loom_graph_expr *x = loom_graph_builder_param(&bld, "x", loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, d, NULL));
  loom_graph_attr at[] = {loom_graph_attr_int(m, "sections", 2), loom_graph_attr_int(m, "axis", 1)};
  loom_graph_expr *parts;
  cr_assert(!loom_graph_builder_op(&bld, "split", 1, &x, 2, at, "parts", &parts));
  loom_graph_expr *first;
  cr_assert(!loom_graph_builder_emit(&bld, loom_graph_tuple_get_new(m, parts, 0), "first", &first));
  cr_assert(!loom_graph_builder_end(&bld, first, NULL, NULL));
  /* @main(y: Tensor[?, f32]) = match_cast to (k, 6), call @half, pair it with the input. */
  loom_graph_builder_begin(&bld, m, "main");
  loom_graph_expr *y = loom_graph_builder_param(&bld, "y", loom_sinfo_tensor(m, LOOM_DTYPE_F32, -1, NULL, NULL));
  const loom_sym_expr *k = loom_sym_var_new(cx, "k", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *kd[] = {k, loom_sym_const(cx, 6)};
  loom_graph_expr *yc, *h;
  cr_assert(!loom_graph_builder_match_cast(&bld, y, loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, kd, NULL), "yc", &yc));
  cr_assert(!loom_graph_builder_emit(&bld, loom_graph_call_func(m, "half", 1, &yc), "h", &h));
  loom_graph_expr *items[] = {h, yc};
  loom_graph_func *f;
  cr_assert(!loom_graph_builder_end(&bld, loom_graph_tuple_new(m, 2, items), NULL, &f));
  char *s = gt_sinfo_str(f->ret);
  cr_assert_str_eq(s, "Tuple[Tensor[(k, 3), f32], Tensor[(k, 6), f32]]", "the callee's n is replaced by k");
  free(s);
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  cr_assert(!loom_graph_verify(m, &dl));
  loom_diag_list_destroy(&dl);
  char *t1 = gt_print(m);
  loom_graph_module *m2 = gt_parse_ok(t1);
  char *t2 = gt_print(m2);
  cr_assert_str_eq(t1, t2);
  /* And it runs: y of shape (4, 6). */
  loom_graph_value in = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){4, 6}, NULL);
  for (size_t i = 0; i < 24; i++) loom_graph_tensor_set_f64(&in.t, i, (double)i);
  loom_graph_value out;
  cr_assert(!loom_graph_eval(m2, "main", 1, &in, NULL, &out));
  cr_assert_eq(out.items[0].t.shape[0], 4);
  cr_assert_eq(out.items[0].t.shape[1], 3);
  cr_assert_eq(loom_graph_tensor_get_f64(&out.items[0].t, 3), 6.0, "row 1 starts at element 6");
  loom_graph_value_free(&out);
  loom_graph_value_free(&in);
  free(t1);
  free(t2);
  loom_graph_module_destroy(m2);
  loom_graph_module_destroy(m);
}

/* `fn @main(params) -> Object { y = call; return y }` is refused with a message containing `want`. */
static void expect_refused(const char *params, const char *call, const char *want) {
  char text[512], *err;
  snprintf(text, sizeof text, "fn @main(%s) -> Object {\n  y = %s\n  return y\n}\n", params, call);
  cr_assert_null(gt_parse(text, &err), "%s", call);
  cr_assert(strstr(err, want), "%s: %s", call, err);
  free(err);
}

/* matmul packed_b with n: the last panel padded, the result's columns n, which must lie in
 * the last panel ((q - 1) * P, q * P] of constant panels; n without packed_b is refused. */
LOOM_TEST(graph_infer, matmul_packed_b_with_a_padded_last_panel) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(s, 5), f32], w: Tensor[(3, 5, 16), f32]) -> Object {\n"
      "  y = matmul(x, w, packed_b=true, n=37)\n  z = matmul(x, w, packed_b=true)\n  out = (y, z)\n  return out\n}\n");
  expect_sinfo(m, "y", "Tensor[(s, 37), f32]");
  expect_sinfo(m, "z", "Tensor[(s, 48), f32]");
  loom_graph_module_destroy(m);
  static const struct {
    const char *call, *want;
  } bad[] = {
      {"matmul(x, w, packed_b=true, n=32)", "packed_b with n=32: operand 1 (3, k, 16) holds 48 columns; n must lie in (32, 48]"},
      {"matmul(x, w, packed_b=true, n=49)", "packed_b with n=49: operand 1 (3, k, 16) holds 48 columns; n must lie in (32, 48]"},
      {"matmul(x, v, packed_b=true, n=7)", "packed_b with n=7 needs operand 1's panel count and width as constants"},
      {"matmul(x, u, n=7)", "n=7 is an attribute of packed_b only"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    expect_refused("x: Tensor[(s, 5), f32], w: Tensor[(3, 5, 16), f32], v: Tensor[(q, 5, 16), f32], u: Tensor[(5, 7), f32]",
                   bad[i].call, bad[i].want);
  /* matmul_integer's packed forms take n the same way */
  static const struct {
    const char *call, *want;
  } bad8[] = {
      {"matmul_integer(a, w, za, packed_b=true, n=33)", "packed_b with n=33: operand 1 (2, k, 16) holds 32 columns; n must lie in (16, 32]"},
      {"matmul_integer(a, b, za, zb, n=7)", "n=7 is an attribute of packed_b only"},
  };
  for (size_t i = 0; i < sizeof bad8 / sizeof *bad8; i++)
    expect_refused("a: Tensor[(s, 5), u8], w: Tensor[(2, 3, 16), i32], za: Tensor[(), u8], b: Tensor[(5, 7), u8], zb: Tensor[(), u8]",
                   bad8[i].call, bad8[i].want);
  loom_graph_module *m8 = gt_parse_ok(
      "fn @main(a: Tensor[(s, 5), u8], w: Tensor[(2, 3, 16), i32], za: Tensor[(), u8]) -> Object {\n"
      "  y = matmul_integer(a, w, za, packed_b=true, n=21)\n  return y\n}\n");
  expect_sinfo(m8, "y", "Tensor[(s, 21), i32]");
  loom_graph_module_destroy(m8);
}

/* test_interp.c — the reference interpreter on hand-computed cases, symbolic binding from
 * argument shapes, and the runtime errors (input shape, guard, match_cast). */
#include <math.h>

#include "tests/graph/graph_test_util.h"

/* Runs @main of `text` on `args`; asserts success; returns the result. */
LOOM_TEST(graph_interp, broadcast_add_matmul_softmax) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(a: Tensor[(1, 3), f32], b: Tensor[(n, 1), f32], w: Tensor[(3, 2), f32]) -> Object {\n"
      "  c = add(a, b)\n  d = matmul(c, w)\n  e = softmax(d, axis=1)\n  r = (c, d, e)\n  return r\n}\n");
  double av[] = {1, 2, 3}, bv[] = {10, 20}, wv[] = {1, 0, 0, 1, 1, 1};
  loom_graph_value args[3] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 3}, av),
                              gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 1}, bv),
                              gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){3, 2}, wv)};
  loom_sym_env *env;
  cr_assert(!loom_sym_env_create(NULL, &env));
  loom_graph_value r = gt_eval_ok(m, 3, args, env);
  int64_t nval;
  cr_assert(loom_sym_env_get(env, gt_pdim(m, 1, 0), &nval));
  cr_assert_eq(nval, 2, "n is bound from b's shape");
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 3}, (double[]){11, 12, 13, 21, 22, 23}, 0);
  /* [11 12 13] @ [[1 0] [0 1] [1 1]] = [24 25]; [21 22 23] -> [44 45] */
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 2}, (double[]){24, 25, 44, 45}, 0);
  double e1 = 1 / (1 + exp(1.0));
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 2}, (double[]){e1, 1 - e1, e1, 1 - e1}, 1e-6);
  loom_graph_value_free(&r);
  gt_free_args(args, 3);
  loom_sym_env_destroy(env);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, shape_ops) {
  loom_graph_module *m = gt_parse_ok(
      "const @idx: Tensor[(2,), i64] = [2, -3]\n"
      "fn @main(x: Tensor[(2, 3), f32]) -> Object {\n"
      "  r = reshape(x, shape=[3, -1])\n  p = permute_dims(x)\n  c = concat(x, x, axis=1)\n"
      "  s = strided_slice(x, axes=[1], begin=[1], end=[3])\n  t = take(x, @idx, axis=1)\n"
      "  u = sum(x, axes=[0])\n  v = mean(x, axes=[1], keepdims=true)\n  am = argmax(x, axis=1)\n"
      "  tl = tril(x)\n  a = arange(start=[1], end=[7], step=[2])\n  fl = full(shape=[2, 2], value=1.5)\n"
      "  e = expand_dims(x, axes=[0])\n  out = (r, p, c, s, t, u, v, am, tl, a, fl, e)\n  return out\n}\n");
  double xv[] = {1, 5, 3, 4, 2, 6};
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, xv);
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){3, 2}, xv, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){3, 2}, (double[]){1, 4, 5, 2, 3, 6}, 0);
  gt_expect_values(&r.items[2], 2, (int64_t[]){2, 6}, (double[]){1, 5, 3, 1, 5, 3, 4, 2, 6, 4, 2, 6}, 0);
  gt_expect_values(&r.items[3], 2, (int64_t[]){2, 2}, (double[]){5, 3, 2, 6}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){2, 2}, (double[]){3, 1, 6, 4}, 0);
  gt_expect_values(&r.items[5], 1, (int64_t[]){3}, (double[]){5, 7, 9}, 0);
  gt_expect_values(&r.items[6], 2, (int64_t[]){2, 1}, (double[]){3, 4}, 1e-6);
  gt_expect_values(&r.items[7], 1, (int64_t[]){2}, (double[]){1, 2}, 0);
  gt_expect_values(&r.items[8], 2, (int64_t[]){2, 3}, (double[]){1, 0, 0, 4, 2, 0}, 0);
  gt_expect_values(&r.items[9], 1, (int64_t[]){3}, (double[]){1, 3, 5}, 0);
  gt_expect_values(&r.items[10], 2, (int64_t[]){2, 2}, (double[]){1.5, 1.5, 1.5, 1.5}, 0);
  gt_expect_values(&r.items[11], 3, (int64_t[]){1, 2, 3}, xv, 0);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, norms_where_and_elementwise) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 4), f32], g: Tensor[(4,), f32], b: Tensor[(4,), f32]) -> Object {\n"
      "  ln = layer_norm(x, g, b, eps=0.0)\n  rn = rms_norm(x, g, eps=0.0)\n  k = greater(x, b)\n"
      "  w = where(k, x, b)\n  c = clip(x, min=1.5, max=3.0)\n  ci = cast(x, dtype=i32)\n  out = (ln, rn, w, c, ci)\n  return out\n}\n");
  double xv[] = {1, 2, 3, 4}, gv[] = {1, 1, 1, 1}, bv[] = {0, 0, 10, 0};
  loom_graph_value args[3] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 4}, xv), gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){4}, gv),
                              gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){4}, bv)};
  loom_graph_value r = gt_eval_ok(m, 3, args, NULL);
  /* mean 2.5, var 1.25 */
  double sd = sqrt(1.25), rms = sqrt(7.5);
  gt_expect_values(&r.items[0], 2, (int64_t[]){1, 4}, (double[]){-1.5 / sd, -0.5 / sd, 0.5 / sd + 10, 1.5 / sd}, 1e-5);
  gt_expect_values(&r.items[1], 2, (int64_t[]){1, 4}, (double[]){1 / rms, 2 / rms, 3 / rms, 4 / rms}, 1e-6);
  gt_expect_values(&r.items[2], 2, (int64_t[]){1, 4}, (double[]){1, 2, 10, 4}, 0);
  gt_expect_values(&r.items[3], 2, (int64_t[]){1, 4}, (double[]){1.5, 2, 3, 3}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){1, 4}, xv, 0);
  cr_assert_eq(r.items[4].t.dtype, LOOM_DTYPE_I32);
  loom_graph_value_free(&r);
  gt_free_args(args, 3);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, nonzero_binds_its_fresh_symbol) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n,), f32]) -> Object {\n  z = nonzero(x)\n  c = shape_of(z)\n  return c\n}\n");
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){5}, (double[]){0, 1, 0, 2, 3});
  loom_sym_env *env;
  cr_assert(!loom_sym_env_create(NULL, &env));
  loom_graph_value r = gt_eval_ok(m, 1, &x, env);
  cr_assert_eq(r.kind, LOOM_SINFO_SHAPE);
  cr_assert_eq(r.dims[1], 3);
  const loom_sinfo *zs = gt_binding(m, "main", "z")->var->sinfo;
  int64_t nnz;
  cr_assert(loom_sym_env_get(env, zs->dims[1], &nnz));
  cr_assert_eq(nnz, 3);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_sym_env_destroy(env);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, runtime_errors_are_clear) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, 2 * n + 1), f32], y: Tensor[(m,), f32]) -> Object {\n"
      "  z = add(x, y)\n  w = match_cast(z, Tensor[(n, 3), f32])\n  return w\n}\n");
  /* Input shape: axis 1 must be 2*n + 1. */
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){4, 10}, NULL), gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){9}, NULL)};
  char *msg = gt_eval_err(m, 2, a);
  cr_assert(strstr(msg, "input 'x' axis 1") && strstr(msg, "10"), "%s", msg);
  free(msg);
  gt_free_args(a, 2);
  /* Guard: n vs m broadcast. */
  loom_graph_value b[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 3}, NULL), gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){2}, NULL)};
  msg = gt_eval_err(m, 2, b);
  cr_assert(strstr(msg, "guard failed") && strstr(msg, "binding 'z'"), "%s", msg);
  free(msg);
  gt_free_args(b, 2);
  /* match_cast: n = 2 gives (2, 5), not (2, 3). */
  loom_graph_value c[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 5}, NULL), gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){5}, NULL)};
  msg = gt_eval_err(m, 2, c);
  cr_assert(strstr(msg, "match_cast 'w'") && strstr(msg, "axis 1"), "%s", msg);
  free(msg);
  gt_free_args(c, 2);
  /* A wrong dtype. */
  loom_graph_value d[2] = {gt_tensor(LOOM_DTYPE_F64, 2, (int64_t[]){1, 3}, NULL), gt_tensor(LOOM_DTYPE_F32, 1, (int64_t[]){3}, NULL)};
  msg = gt_eval_err(m, 2, d);
  cr_assert(strstr(msg, "input 'x': expected dtype f32, got f64"), "%s", msg);
  free(msg);
  gt_free_args(d, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, half_precision_storage_and_if) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n,), f16], flag: Tensor[(), bool]) -> Object {\n"
      "  y = if (flag) {\n    a = mul(x, x)\n    return a\n  } else {\n    b = neg(x)\n    return b\n  }\n  return y\n}\n");
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F16, 1, (int64_t[]){3}, (double[]){0.5, -2, 3}),
                           gt_tensor(LOOM_DTYPE_BOOL, 0, NULL, (double[]){1})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r, 1, (int64_t[]){3}, (double[]){0.25, 4, 9}, 0);
  cr_assert_eq(r.t.dtype, LOOM_DTYPE_F16);
  loom_graph_value_free(&r);
  loom_graph_tensor_set_f64(&a[1].t, 0, 0);
  r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r, 1, (int64_t[]){3}, (double[]){-0.5, 2, -3}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, conv_pool_resize_hand_computed) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 1, h, w), f32], k: Tensor[(1, 1, 2, 2), f32]) -> Object {\n"
      "  c = conv2d(x, k)\n  cp = conv2d(x, k, padding=[1], strides=[2])\n  mp = max_pool2d(x, kernel=[2, 2])\n"
      "  ap = avg_pool2d(x, kernel=[2, 2], strides=[1, 1])\n  g = global_avg_pool2d(x)\n"
      "  rn = resize2d(x, size=[2 * h, w], method=\"nearest\")\n  out = (c, cp, mp, ap, g, rn)\n  return out\n}\n");
  const loom_sinfo *cs = gt_binding(m, "main", "c")->var->sinfo;
  char *s = gt_sinfo_str(cs);
  cr_assert_str_eq(s, "Tensor[(1, 1, h - 1, w - 1), f32]");
  free(s);
  /* x = [[1 2 3] [4 5 6] [7 8 9]], k = [[1 0] [0 1]] */
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 1, 3, 3}, (double[]){1, 2, 3, 4, 5, 6, 7, 8, 9}),
                           gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 0, 0, 1})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r.items[0], 4, (int64_t[]){1, 1, 2, 2}, (double[]){6, 8, 12, 14}, 0);
  /* padded by 1, stride 2: windows at (-1,-1) (-1,1) (1,-1) (1,1): x[i][j] + x[i+1][j+1] */
  gt_expect_values(&r.items[1], 4, (int64_t[]){1, 1, 2, 2}, (double[]){1, 3, 7, 14}, 0);
  gt_expect_values(&r.items[2], 4, (int64_t[]){1, 1, 1, 1}, (double[]){5}, 0);
  gt_expect_values(&r.items[3], 4, (int64_t[]){1, 1, 2, 2}, (double[]){3, 4, 6, 7}, 0);
  gt_expect_values(&r.items[4], 4, (int64_t[]){1, 1, 1, 1}, (double[]){5}, 0);
  gt_expect_values(&r.items[5], 4, (int64_t[]){1, 1, 6, 3}, (double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6, 7, 8, 9, 7, 8, 9}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);
}

/* conv (N-d) on a 2x2x2 volume: a kernel of ones sums it; padded by 1 with stride 2, each
 * window holds one voxel, so the result is the input. */
LOOM_TEST(graph_interp, conv_3d_hand_computed) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(1, 1, d, h, w), f32], k: Tensor[(1, 1, 2, 2, 2), f32]) -> Object {\n"
      "  c = conv(x, k)\n  cp = conv(x, k, padding=[1], strides=[2])\n  out = (c, cp)\n  return out\n}\n");
  char *s = gt_sinfo_str(gt_binding(m, "main", "c")->var->sinfo);
  cr_assert_str_eq(s, "Tensor[(1, 1, d - 1, h - 1, w - 1), f32]");
  free(s);
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F32, 5, (int64_t[]){1, 1, 2, 2, 2}, (double[]){1, 2, 3, 4, 5, 6, 7, 8}),
                           gt_tensor(LOOM_DTYPE_F32, 5, (int64_t[]){1, 1, 2, 2, 2}, (double[]){1, 1, 1, 1, 1, 1, 1, 1})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r.items[0], 5, (int64_t[]){1, 1, 1, 1, 1}, (double[]){36}, 0);
  gt_expect_values(&r.items[1], 5, (int64_t[]){1, 1, 2, 2, 2}, (double[]){1, 2, 3, 4, 5, 6, 7, 8}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, index_and_shape_ops_hand_computed) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(2, 3), f32], i: Tensor[(2, 2), i64]) -> Object {\n"
      "  ge = gather_elements(x, i, axis=1)\n  u = const(9.0, f32)\n  ub = broadcast_to(u, shape=[2, 2])\n"
      "  se = scatter_elements(x, i, ub, axis=1)\n  oh = one_hot(i, depth=[3])\n  cs = cumsum(x, axis=1)\n"
      "  sp = split(x, sections=3, axis=1)\n  s1 = sp.1\n  pd = pad(x, pads=[0, 1, 1, 0], value=-1.0)\n"
      "  tl = tile(x, repeats=[1, 2])\n  rp = repeat(x, repeats=2, axis=0)\n"
      "  out = (ge, se, oh, cs, s1, pd, tl, rp)\n  return out\n}\n");
  loom_graph_value a[2] = {gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, (double[]){1, 2, 3, 4, 5, 6}),
                           gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){2, 2}, (double[]){2, 0, 1, 1})};
  loom_graph_value r = gt_eval_ok(m, 2, a, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 2}, (double[]){3, 1, 5, 5}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){2, 3}, (double[]){9, 2, 9, 4, 9, 6}, 0);
  gt_expect_values(&r.items[2], 3, (int64_t[]){2, 2, 3}, (double[]){0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0}, 0);
  gt_expect_values(&r.items[3], 2, (int64_t[]){2, 3}, (double[]){1, 3, 6, 4, 9, 15}, 0);
  gt_expect_values(&r.items[4], 2, (int64_t[]){2, 1}, (double[]){2, 5}, 0);
  gt_expect_values(&r.items[5], 2, (int64_t[]){3, 4}, (double[]){-1, 1, 2, 3, -1, 4, 5, 6, -1, -1, -1, -1}, 0);
  gt_expect_values(&r.items[6], 2, (int64_t[]){2, 6}, (double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, 0);
  gt_expect_values(&r.items[7], 2, (int64_t[]){4, 3}, (double[]){1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, 0);
  loom_graph_value_free(&r);
  gt_free_args(a, 2);
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, attention_matches_explicit_ops) {
  /* The composite attention op against the same computation spelled with matmul/softmax,
   * with grouped-query heads (4 query heads, 2 key/value heads) and a causal mask. */
  loom_graph_module *m = gt_parse_ok(
      "fn @main(q: Tensor[(b, 4, s, 8), f32], k: Tensor[(b, 2, s, 8), f32], v: Tensor[(b, 2, s, 8), f32]) -> Object {\n"
      "  a = attention(q, k, v, causal=true)\n"
      "  k4 = repeat(k, repeats=2, axis=1)\n  v4 = repeat(v, repeats=2, axis=1)\n  kt = permute_dims(k4, axes=[0, 1, 3, 2])\n"
      "  sc0 = matmul(q, kt)\n  sc = mul(sc0, const(0.35355339059327373, f32))\n  o = ones(shape=[s, s], dtype=bool)\n  keep = tril(o)\n"
      "  ninf = full(shape=[s, s], value=-1e30)\n  msk = where(keep, sc, ninf)\n  p = softmax(msk)\n  e = matmul(p, v4)\n"
      "  out = (a, e)\n  return out\n}\n");
  loom_test_rng r = {loom_test_seed()};
  for (int64_t s = 1; s <= 7; s += 3) {
    loom_graph_value a[3] = {gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){2, 4, s, 8}, NULL), gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){2, 2, s, 8}, NULL),
                             gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){2, 2, s, 8}, NULL)};
    for (int i = 0; i < 3; i++)
      for (size_t j = 0; j < a[i].t.numel; j++) loom_graph_tensor_set_f64(&a[i].t, j, (double)loom_test_rng_range(&r, -100, 100) / 50);
    loom_graph_value out = gt_eval_ok(m, 3, a, NULL);
    double *want = malloc(out.items[1].t.numel * sizeof *want);
    for (size_t j = 0; j < out.items[1].t.numel; j++) want[j] = loom_graph_tensor_get_f64(&out.items[1].t, j);
    gt_expect_values(&out.items[0], 4, (int64_t[]){2, 4, s, 8}, want, 1e-5);
    free(want);
    loom_graph_value_free(&out);
    gt_free_args(a, 3);
  }
  loom_graph_module_destroy(m);
}

LOOM_TEST(graph_interp, fill_from_a_shape_value) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(n, k), f32]) -> Object {\n  sh = shape_of(x)\n  z: Tensor[(n, k), f32] = full(sh, value=2.5)\n"
      "  w = ones(shape(k, 2 * n), dtype=i32)\n  out = (z, w)\n  return out\n}\n");
  loom_graph_value x = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, NULL);
  loom_graph_value r = gt_eval_ok(m, 1, &x, NULL);
  gt_expect_values(&r.items[0], 2, (int64_t[]){2, 3}, (double[]){2.5, 2.5, 2.5, 2.5, 2.5, 2.5}, 0);
  gt_expect_values(&r.items[1], 2, (int64_t[]){3, 4}, (double[]){1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, 0);
  cr_assert_eq(r.items[1].t.dtype, LOOM_DTYPE_I32);
  loom_graph_value_free(&r);
  loom_graph_value_free(&x);
  loom_graph_module_destroy(m);
}

/* Integer reductions are exact in the dtype's width: sum and prod wrap as NumPy's and the compiled
 * code's (a double accumulator clamped a u8 sum at 255: fuzz-ops reduce seed 9389), max / min of
 * 64-bit values beyond 2^53 compare exactly, unsigned ones as unsigned. */
LOOM_TEST(graph_interp, integer_reductions_wrap_and_compare_exactly) {
  loom_graph_module *m = gt_parse_ok(
      "fn @main(x: Tensor[(2, 3), u8], y: Tensor[(3,), i64], z: Tensor[(2,), u64]) -> Object {\n"
      "  s = sum(x, axes=[1])\n  p = prod(x, axes=[0])\n  a = sum(y)\n  mx = max(y)\n  mu = max(z)\n  au = argmax(z, axis=0)\n"
      "  out = (s, p, a, mx, mu, au)\n  return out\n}\n");
  loom_graph_value a[3] = {gt_tensor(LOOM_DTYPE_U8, 2, (int64_t[]){2, 3}, (double[]){200, 100, 7, 255, 255, 2}),
                           gt_tensor(LOOM_DTYPE_I64, 1, (int64_t[]){3}, (double[]){0, 0, 0}),
                           gt_tensor(LOOM_DTYPE_U64, 1, (int64_t[]){2}, (double[]){0, 0})};
  /* 2^53 + 1 and 2^53 (equal as doubles); u64: 2^63 (negative as i64) against 1 */
  int64_t *yv = a[1].t.data;
  yv[0] = (INT64_C(1) << 53) + 1, yv[1] = INT64_C(1) << 53, yv[2] = -1;
  uint64_t *zv = a[2].t.data;
  zv[0] = 1, zv[1] = UINT64_C(1) << 63;
  loom_graph_value r = gt_eval_ok(m, 3, a, NULL);
  gt_expect_values(&r.items[0], 1, (int64_t[]){2}, (double[]){(200 + 100 + 7) % 256, (255 + 255 + 2) % 256}, 0);
  gt_expect_values(&r.items[1], 1, (int64_t[]){3}, (double[]){(200 * 255) % 256, (100 * 255) % 256, 14}, 0);
  cr_assert_eq(*(int64_t *)r.items[2].t.data, (INT64_C(1) << 54), "sum %lld", (long long)*(int64_t *)r.items[2].t.data);
  cr_assert_eq(*(int64_t *)r.items[3].t.data, (INT64_C(1) << 53) + 1);
  cr_assert_eq(*(uint64_t *)r.items[4].t.data, UINT64_C(1) << 63);
  cr_assert_eq(*(int64_t *)r.items[5].t.data, 1);
  loom_graph_value_free(&r);
  gt_free_args(a, 3);
  loom_graph_module_destroy(m);
}

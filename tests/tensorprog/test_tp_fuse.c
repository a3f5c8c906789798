/* test_tp_fuse.c — merging fused groups: IR text in / IR text out, and numeric equality
 * with running the calls one by one, on several shapes. */
#include <stdlib.h>
#include <string.h>

#include "tensorprog/tp_fuse.h"
#include "tp_test_util.h"

/* Parses a second program into an existing fixture (same context and arena). */
static loom_tp_func *parse_more(tp_fixture *fx, const char *text) {
  loom_source *src = loom_arena_alloc(&fx->arena, sizeof *src, _Alignof(loom_source));
  *src = (loom_source){"more.loom", text, strlen(text)};
  size_t pos = 0;
  loom_tp_func *f = NULL;
  loom_status s = loom_tp_parse_func(&fx->arena, fx->cx, src, &pos, &fx->diags, &f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  return f;
}

static const char *const exp_prog =
    "prim @ex(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
    "  for i in 0..n { for j in 0..m { Y[i, j] = exp(X[i, j] * 0.5) } }\n}\n";
static const char *const rowsum_prog =
    "prim @rs(A: Buffer[(n, k), f32], C: Buffer[(n,), f32]) {\n"
    "  for i in 0..n {\n    C[i] = 0.0\n    for r in 0..k reduce { C[i] = C[i] + A[i, r] } }\n}\n";

LOOM_TEST(tp_fuse, elementwise_producer_disappears_into_reduction) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, exp_prog));
  loom_tp_func *ex = fx.f, *rs = parse_more(&fx, rowsum_prog);
  const loom_sym_expr *b = loom_sym_var_new(fx.cx, "b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *s = loom_sym_var_new(fx.cx, "s", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *rows = loom_sym_mul(fx.cx, b, s), *d = loom_sym_const(fx.cx, 24);
  const loom_sym_expr *dims2[2] = {rows, d}, *dims1[1] = {rows};
  loom_tp_group_buf bufs[3] = {
      {"X", LOOM_DTYPE_F32, 2, dims2, true},
      {"T", LOOM_DTYPE_F32, 2, dims2, false},
      {"O", LOOM_DTYPE_F32, 1, dims1, true},
  };
  size_t args_ex[2] = {0, 1}, args_rs[2] = {1, 2};
  loom_tp_group_call calls[2] = {{ex, args_ex, NULL}, {rs, args_rs, NULL}};
  loom_tp_func *fused = NULL;
  loom_status st = loom_tp_merge(&fx.arena, fx.cx, "fused", bufs, 3, calls, 2, &fused);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_null(loom_tp_verify(fx.cx, fused));
  char *merged = tp_print(fused);
  cr_assert(strstr(merged, "alloc T: Local[(b*s, 24), f32]") != NULL, "%s", merged);
  size_t n = 0;
  cr_assert_null(loom_tp_inline_locals(&fx.arena, fx.cx, fused, &n));
  cr_assert_eq(n, 1);
  cr_assert_null(loom_tp_verify(fx.cx, fused));
  char *out = tp_print(fused);
  cr_assert(strstr(out, "prim @fused(b: i64, s: i64, X: Buffer[(b*s, 24), f32], O: Buffer[(b*s,), f32])") != NULL, "%s", out);
  cr_assert(strstr(out, "O[i] = O[i] + exp(X[i, r] * 0.5)") != NULL, "%s", out);
  cr_assert(strstr(out, "alloc") == NULL, "the intermediate must disappear:\n%s", out);
  /* Numerics: fused == ex then rs, for several (b, s). */
  static const int64_t shapes[][2] = {{1, 1}, {1, 7}, {3, 5}, {2, 0}, {4, 13}};
  for (size_t t = 0; t < 5; t++) {
    int64_t R = shapes[t][0] * shapes[t][1];
    float *X = malloc((size_t)(R * 24 + 1) * 4), *T = malloc((size_t)(R * 24 + 1) * 4);
    float *O1 = calloc((size_t)R + 1, 4), *O2 = calloc((size_t)R + 1, 4);
    for (int64_t i = 0; i < R * 24; i++) X[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
    int64_t s2[2] = {R, 24}, s1[1] = {R};
    loom_tp_arg a_ex[2] = {{X, s2, 0}, {T, s2, 0}}, a_rs[2] = {{T, s2, 0}, {O1, s1, 0}};
    cr_assert_null(loom_tp_interpret(fx.cx, ex, a_ex, 2));
    cr_assert_null(loom_tp_interpret(fx.cx, rs, a_rs, 2));
    loom_tp_arg a_f[4] = {{NULL, NULL, shapes[t][0]}, {NULL, NULL, shapes[t][1]}, {X, s2, 0}, {O2, s1, 0}};
    st = loom_tp_interpret(fx.cx, fused, a_f, 4);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    cr_assert_arr_eq(O1, O2, (size_t)R * 4, "b=%lld s=%lld", (long long)shapes[t][0], (long long)shapes[t][1]);
    free(X);
    free(T);
    free(O1);
    free(O2);
  }
  free(merged);
  free(out);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_fuse, matmul_with_epilogue_keeps_its_accumulator_local) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
                               "  for i in 0..m { for j in 0..n { C[i, j] = 0.0\n"
                               "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] } } }\n}\n"));
  loom_tp_func *mm = fx.f;
  loom_tp_func *ep = parse_more(&fx, "prim @ep(C: Buffer[(m, n), f32], bias: Buffer[(n,), f32], D: Buffer[(m, n), f32]) {\n"
                                     "  for i in 0..m { for j in 0..n { D[i, j] = max(C[i, j] + bias[j], 0.0) } }\n}\n");
  const loom_sym_expr *rows = loom_sym_var_new(fx.cx, "rows", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *K = loom_sym_const(fx.cx, 16), *N = loom_sym_const(fx.cx, 12);
  const loom_sym_expr *da[2] = {rows, K}, *db[2] = {K, N}, *dc[2] = {rows, N}, *dbias[1] = {N};
  loom_tp_group_buf bufs[5] = {{"A", LOOM_DTYPE_F32, 2, da, true},  {"W", LOOM_DTYPE_F32, 2, db, true},
                               {"acc", LOOM_DTYPE_F32, 2, dc, false}, {"bias", LOOM_DTYPE_F32, 1, dbias, true},
                               {"D", LOOM_DTYPE_F32, 2, dc, true}};
  size_t args_mm[3] = {0, 1, 2}, args_ep[3] = {2, 3, 4};
  loom_tp_group_call calls[2] = {{mm, args_mm, NULL}, {ep, args_ep, NULL}};
  loom_tp_func *fused;
  loom_status st = loom_tp_merge(&fx.arena, fx.cx, "mm_bias_relu", bufs, 5, calls, 2, &fused);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  size_t n = 9;
  cr_assert_null(loom_tp_inline_locals(&fx.arena, fx.cx, fused, &n));
  cr_assert_eq(n, 0, "a reduction's output is not inlined");
  cr_assert_null(loom_tp_verify(fx.cx, fused));
  for (int64_t R = 0; R < 6; R++) {
    float A[6 * 16], W[16 * 12], bias[12], acc[6 * 12], D1[6 * 12], D2[6 * 12];
    for (int i = 0; i < 6 * 16; i++) A[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < 16 * 12; i++) W[i] = (float)(i % 5) * 0.5f - 1.0f;
    for (int i = 0; i < 12; i++) bias[i] = (float)i - 6.0f;
    int64_t sa[2] = {R, 16}, sw[2] = {16, 12}, sc[2] = {R, 12}, sb[1] = {12};
    loom_tp_arg a1[3] = {{A, sa, 0}, {W, sw, 0}, {acc, sc, 0}}, a2[3] = {{acc, sc, 0}, {bias, sb, 0}, {D1, sc, 0}};
    cr_assert_null(loom_tp_interpret(fx.cx, mm, a1, 3));
    cr_assert_null(loom_tp_interpret(fx.cx, ep, a2, 3));
    loom_tp_arg af[5] = {{NULL, NULL, R}, {A, sa, 0}, {W, sw, 0}, {bias, sb, 0}, {D2, sc, 0}};
    st = loom_tp_interpret(fx.cx, fused, af, 5);
    cr_assert_null(st, "%s", loom_status_text(st, 0));
    cr_assert_arr_eq(D1, D2, (size_t)(R * 12) * 4, "rows=%lld", (long long)R);
  }
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_fuse, unprovable_shape_match_is_refused_with_a_message) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @sq(A: Buffer[(n, n), f32], B: Buffer[(n, n), f32]) {\n"
                               "  for i in 0..n { for j in 0..n { B[i, j] = A[j, i] } }\n}\n"));
  const loom_sym_expr *b = loom_sym_var_new(fx.cx, "b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *s = loom_sym_var_new(fx.cx, "s", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *dims[2] = {b, s};
  loom_tp_group_buf bufs[2] = {{"X", LOOM_DTYPE_F32, 2, dims, true}, {"Y", LOOM_DTYPE_F32, 2, dims, true}};
  size_t args[2] = {0, 1};
  loom_tp_group_call call = {fx.f, args, NULL};
  loom_tp_func *fused;
  loom_status st = loom_tp_merge(&fx.arena, fx.cx, "g", bufs, 2, &call, 1, &fused);
  cr_assert_not_null(st);
  cr_assert(strstr(loom_status_message(st), "buffer 'A' axis 1: cannot prove b == s") != NULL, "%s",
            loom_status_message(st));
  loom_status_free(st);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_fuse, a_symbol_only_a_scalar_argument_uses_becomes_a_parameter) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @tr(X: Buffer[(n, m), f32], k: i64, Y: Buffer[(n, m), f32]) {\n"
                               "  for i in 0..n { for j in 0..m { Y[i, j] = select(j - i <= k, X[i, j], 0.0) } }\n}\n"));
  const loom_sym_expr *b = loom_sym_var_new(fx.cx, "b", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *past = loom_sym_var_new(fx.cx, "past", LOOM_SYM_VAR_SHAPE);
  const loom_sym_expr *dims[2] = {b, loom_sym_const(fx.cx, 4)};
  loom_tp_group_buf bufs[2] = {{"X", LOOM_DTYPE_F32, 2, dims, true}, {"Y", LOOM_DTYPE_F32, 2, dims, true}};
  size_t args[3] = {0, 0, 1};
  const loom_sym_expr *scalars[3] = {NULL, loom_sym_sub(fx.cx, past, loom_sym_const(fx.cx, 1)), NULL};
  loom_tp_group_call call = {fx.f, args, scalars};
  loom_tp_func *g;
  loom_status st = loom_tp_merge(&fx.arena, fx.cx, "g", bufs, 2, &call, 1, &g);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_null(loom_tp_verify(fx.cx, g));
  char *out = tp_print(g);
  cr_assert(strstr(out, "prim @g(b: i64, past: i64, X: Buffer[(b, 4), f32], Y: Buffer[(b, 4), f32])") != NULL, "%s", out);
  cr_assert(strstr(out, "select(j - i - past + 1 <= 0, X[i, j], 0.0)") != NULL ||
                strstr(out, "<= past - 1") != NULL,
            "%s", out);
  float X[3 * 4], Y1[3 * 4], Y2[3 * 4];
  for (int i = 0; i < 12; i++) X[i] = (float)i + 1.0f;
  int64_t sh[2] = {3, 4};
  loom_tp_arg a1[3] = {{X, sh, 0}, {NULL, NULL, 1}, {Y1, sh, 0}}; /* k = past - 1 at past = 2 */
  cr_assert_null(loom_tp_interpret(fx.cx, fx.f, a1, 3));
  loom_tp_arg a2[4] = {{NULL, NULL, 3}, {NULL, NULL, 2}, {X, sh, 0}, {Y2, sh, 0}};
  st = loom_tp_interpret(fx.cx, g, a2, 4);
  cr_assert_null(st, "%s", loom_status_text(st, 0));
  cr_assert_arr_eq(Y1, Y2, sizeof Y1);
  free(out);
  tp_fixture_free(&fx);
}

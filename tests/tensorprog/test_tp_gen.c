/* test_tp_gen.c — generated programs for operator families against direct C reference
 * computations, on shapes including 0, 1 and primes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensorprog/tp_gen.h"
#include "tp_test_util.h"

typedef struct gen_fixture {
  loom_sym_ctx *cx;
  loom_arena arena;
} gen_fixture;

static void gen_init(gen_fixture *g) {
  cr_assert_null(loom_sym_ctx_create(NULL, &g->cx));
  loom_arena_init(&g->arena, NULL, 0);
}

static void gen_free(gen_fixture *g) {
  loom_arena_destroy(&g->arena);
  loom_sym_ctx_destroy(g->cx);
}

static void fill(float *x, size_t n, int seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)(((int)i * 37 + seed * 11) % 23) / 6.0f - 1.8f;
}

static void check_ok(loom_status s) { cr_assert_null(s, "%s", loom_status_text(s, 0)); }

LOOM_TEST(tp_gen, unary_gelu_and_silu) {
  gen_fixture g;
  gen_init(&g);
  loom_tp_func *gelu, *silu;
  check_ok(loom_tp_gen_unary(&g.arena, g.cx, "gelu", "0.5 * x * (1.0 + erf(x * 0.70710678118654752))", LOOM_DTYPE_F32,
                             LOOM_DTYPE_F32, 3, &gelu));
  check_ok(loom_tp_gen_unary(&g.arena, g.cx, "silu", "x * sigmoid(x)", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, &silu));
  check_ok(loom_tp_verify(g.cx, gelu));
  int64_t shapes[][3] = {{2, 3, 5}, {1, 1, 1}, {0, 4, 7}, {3, 1, 13}};
  for (int t = 0; t < 4; t++) {
    size_t n = (size_t)(shapes[t][0] * shapes[t][1] * shapes[t][2]);
    float *x = malloc(n * 4 + 4), *y = malloc(n * 4 + 4), *z = malloc(n * 4 + 4);
    fill(x, n, t);
    loom_tp_arg a1[2] = {{x, shapes[t], 0}, {y, shapes[t], 0}}, a2[2] = {{x, shapes[t], 0}, {z, shapes[t], 0}};
    check_ok(loom_tp_interpret(g.cx, gelu, a1, 2));
    check_ok(loom_tp_interpret(g.cx, silu, a2, 2));
    for (size_t i = 0; i < n; i++) {
      double v = x[i];
      cr_assert_float_eq(y[i], 0.5 * v * (1 + erf(v / sqrt(2.0))), 1e-6);
      cr_assert_float_eq(z[i], v / (1 + exp(-v)), 1e-6);
    }
    free(x);
    free(y);
    free(z);
  }
  gen_free(&g);
}

LOOM_TEST(tp_gen, binary_broadcast_modes) {
  gen_fixture g;
  gen_init(&g);
  /* A: (d0, 1) broadcast on axis 1; B: (d1,) aligned right. C = (d0, d1). */
  loom_tp_bcast ma[2] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_ONE}, mb[1] = {LOOM_TP_BCAST_FULL};
  loom_tp_func *f, *guarded;
  check_ok(loom_tp_gen_binary(&g.arena, g.cx, "sub", "a - b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, ma, 1, mb, &f));
  cr_assert_eq(f->params[0].buf->ndim, 2);
  /* Unknown whether A's axis 1 is 1: a guarded index. */
  loom_tp_bcast mg[2] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_GUARD};
  check_ok(loom_tp_gen_binary(&g.arena, g.cx, "sub_g", "a - b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, mg, 1, mb, &guarded));
  int64_t sizes[][2] = {{3, 5}, {1, 1}, {0, 2}, {7, 1}};
  for (int t = 0; t < 4; t++) {
    int64_t n0 = sizes[t][0], n1 = sizes[t][1];
    float A[7], B[5], C[35], A2[35], C2[35];
    fill(A, 7, 1);
    fill(B, 5, 2);
    fill(A2, 35, 3);
    int64_t sa[2] = {n0, 1}, sb[1] = {n1}, sc[2] = {n0, n1};
    loom_tp_arg args[3] = {{A, sa, 0}, {B, sb, 0}, {C, sc, 0}};
    check_ok(loom_tp_interpret(g.cx, f, args, 3));
    for (int i = 0; i < n0; i++)
      for (int j = 0; j < n1; j++) cr_assert_float_eq(C[i * n1 + j], A[i] - B[j], 0);
    /* guarded: with A's axis 1 == 1 it broadcasts; with it == d1 it does not */
    check_ok(loom_tp_interpret(g.cx, guarded, args, 3));
    for (int i = 0; i < n0; i++)
      for (int j = 0; j < n1; j++) cr_assert_float_eq(C[i * n1 + j], A[i] - B[j], 0);
    int64_t sa2[2] = {n0, n1};
    loom_tp_arg args2[3] = {{A2, sa2, 0}, {B, sb, 0}, {C2, sc, 0}};
    check_ok(loom_tp_interpret(g.cx, guarded, args2, 3));
    for (int i = 0; i < n0; i++)
      for (int j = 0; j < n1; j++) cr_assert_float_eq(C2[i * n1 + j], A2[i * n1 + j] - B[j], 0);
  }
  gen_free(&g);
}

LOOM_TEST(tp_gen, reductions) {
  gen_fixture g;
  gen_init(&g);
  loom_tp_func *sum1, *mean02, *max_all, *prod_i32;
  check_ok(loom_tp_gen_reduce(&g.arena, g.cx, "sum1", LOOM_TP_REDUCE_SUM, LOOM_DTYPE_F32, 3, 1u << 1, true, &sum1));
  check_ok(loom_tp_gen_reduce(&g.arena, g.cx, "mean02", LOOM_TP_REDUCE_MEAN, LOOM_DTYPE_F64, 3, 1u | 4u, false, &mean02));
  check_ok(loom_tp_gen_reduce(&g.arena, g.cx, "max_all", LOOM_TP_REDUCE_MAX, LOOM_DTYPE_F32, 3, 7u, false, &max_all));
  check_ok(loom_tp_gen_reduce(&g.arena, g.cx, "prod", LOOM_TP_REDUCE_PROD, LOOM_DTYPE_I32, 2, 1u, true, &prod_i32));
  int64_t s[3] = {3, 5, 2};
  float x[30];
  double xd[30];
  fill(x, 30, 4);
  for (int i = 0; i < 30; i++) xd[i] = x[i];
  float y1[6], ymax[1];
  double y2[5];
  int64_t s1[3] = {3, 1, 2}, s2[1] = {5}, s3[1] = {1};
  loom_tp_arg a1[2] = {{x, s, 0}, {y1, s1, 0}}, a2[2] = {{xd, s, 0}, {y2, s2, 0}}, a3[2] = {{x, s, 0}, {ymax, s3, 0}};
  check_ok(loom_tp_interpret(g.cx, sum1, a1, 2));
  check_ok(loom_tp_interpret(g.cx, mean02, a2, 2));
  check_ok(loom_tp_interpret(g.cx, max_all, a3, 2));
  float mx = -INFINITY;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 2; k++) {
      float want = 0;
      for (int j = 0; j < 5; j++) want += x[(i * 5 + j) * 2 + k];
      cr_assert_float_eq(y1[i * 2 + k], want, 1e-5);
    }
  for (int j = 0; j < 5; j++) {
    double want = 0;
    for (int i = 0; i < 3; i++)
      for (int k = 0; k < 2; k++) want += xd[(i * 5 + j) * 2 + k];
    cr_assert_float_eq(y2[j], want / 6, 1e-12);
  }
  for (int i = 0; i < 30; i++) mx = x[i] > mx ? x[i] : mx;
  cr_assert_float_eq(ymax[0], mx, 0);
  /* int32 product over axis 0 of a (4, 3) tensor, and an empty reduction axis. */
  int32_t xi[12] = {1, 2, 3, 4, 5, 6, -1, 2, 1, 2, 2, 2}, yi[3];
  int64_t si[2] = {4, 3}, so[2] = {1, 3};
  loom_tp_arg a4[2] = {{xi, si, 0}, {yi, so, 0}};
  check_ok(loom_tp_interpret(g.cx, prod_i32, a4, 2));
  cr_assert_eq(yi[0], -8);
  cr_assert_eq(yi[1], 40);
  cr_assert_eq(yi[2], 36);
  si[0] = 0;
  check_ok(loom_tp_interpret(g.cx, prod_i32, a4, 2));
  cr_assert_eq(yi[0], 1, "empty product is 1");
  loom_tp_func *bad;
  loom_status st = loom_tp_gen_reduce(&g.arena, g.cx, "bad", LOOM_TP_REDUCE_SUM, LOOM_DTYPE_F32, 2, 1u << 2, false, &bad);
  cr_assert_eq(loom_status_code(st), LOOM_CODE_INVALID_ARGUMENT);
  loom_status_free(st);
  gen_free(&g);
}

LOOM_TEST(tp_gen, batched_matmul_with_broadcast_and_widening) {
  gen_fixture g;
  gen_init(&g);
  loom_tp_bcast ma[1] = {LOOM_TP_BCAST_FULL}, mb[1] = {LOOM_TP_BCAST_ONE};
  loom_tp_func *mm, *mm16;
  check_ok(loom_tp_gen_matmul(&g.arena, g.cx, "bmm", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, ma, 3, mb, &mm));
  check_ok(loom_tp_gen_matmul(&g.arena, g.cx, "mm16", LOOM_DTYPE_F16, LOOM_DTYPE_F32, 2, NULL, 2, NULL, &mm16));
  int64_t dims[][4] = {{2, 3, 4, 5}, {1, 1, 1, 1}, {3, 0, 2, 2}, {2, 5, 0, 3}};
  for (int t = 0; t < 4; t++) {
    int64_t B = dims[t][0], M = dims[t][1], K = dims[t][2], N = dims[t][3];
    float A[60], W[60], C[60];
    fill(A, 60, 5);
    fill(W, 60, 6);
    int64_t sa[3] = {B, M, K}, sw[3] = {1, K, N}, sc[3] = {B, M, N};
    loom_tp_arg args[3] = {{A, sa, 0}, {W, sw, 0}, {C, sc, 0}};
    check_ok(loom_tp_interpret(g.cx, mm, args, 3));
    for (int b = 0; b < B; b++)
      for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
          float want = 0;
          for (int r = 0; r < K; r++) want += A[(b * M + i) * K + r] * W[r * N + j];
          cr_assert_float_eq(C[(b * M + i) * N + j], want, 1e-5);
        }
  }
  uint16_t A16[6], W16[6], C16[4];
  for (int i = 0; i < 6; i++) {
    A16[i] = loom_f32_to_f16((float)i * 0.5f);
    W16[i] = loom_f32_to_f16(1.0f - (float)i * 0.25f);
  }
  int64_t sa[2] = {2, 3}, sw[2] = {3, 2}, sc[2] = {2, 2};
  loom_tp_arg args[3] = {{A16, sa, 0}, {W16, sw, 0}, {C16, sc, 0}};
  check_ok(loom_tp_interpret(g.cx, mm16, args, 3));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      float want = 0;
      for (int r = 0; r < 3; r++) want += loom_f16_to_f32(A16[i * 3 + r]) * loom_f16_to_f32(W16[r * 2 + j]);
      cr_assert_eq(C16[i * 2 + j], loom_f32_to_f16(want));
    }
  gen_free(&g);
}

LOOM_TEST(tp_gen, softmax_and_norms) {
  gen_fixture g;
  gen_init(&g);
  loom_tp_func *sm, *lsm, *ln, *rms;
  check_ok(loom_tp_gen_softmax(&g.arena, g.cx, "softmax", LOOM_DTYPE_F32, 2, 1, false, &sm));
  check_ok(loom_tp_gen_softmax(&g.arena, g.cx, "log_softmax", LOOM_DTYPE_F32, 2, 0, true, &lsm));
  check_ok(loom_tp_gen_layer_norm(&g.arena, g.cx, "ln", LOOM_DTYPE_F32, 2, 1, 1e-5, false, &ln));
  check_ok(loom_tp_gen_layer_norm(&g.arena, g.cx, "rms", LOOM_DTYPE_F32, 2, 1, 1e-6, true, &rms));
  for (int t = 0; t < 3; t++) {
    int64_t R = (int64_t[]){3, 1, 5}[t], Cn = (int64_t[]){7, 1, 13}[t];
    float x[65], y[65], gam[13], bet[13];
    fill(x, 65, t);
    fill(gam, 13, 8);
    fill(bet, 13, 9);
    int64_t s[2] = {R, Cn}, sg[1] = {Cn};
    loom_tp_arg a[2] = {{x, s, 0}, {y, s, 0}};
    check_ok(loom_tp_interpret(g.cx, sm, a, 2));
    for (int i = 0; i < R; i++) {
      double mx = -INFINITY, sum = 0;
      for (int j = 0; j < Cn; j++) mx = fmax(mx, x[i * Cn + j]);
      for (int j = 0; j < Cn; j++) sum += exp(x[i * Cn + j] - mx);
      for (int j = 0; j < Cn; j++) cr_assert_float_eq(y[i * Cn + j], exp(x[i * Cn + j] - mx) / sum, 1e-6);
    }
    check_ok(loom_tp_interpret(g.cx, lsm, a, 2));
    for (int j = 0; j < Cn; j++) {
      double mx = -INFINITY, sum = 0;
      for (int i = 0; i < R; i++) mx = fmax(mx, x[i * Cn + j]);
      for (int i = 0; i < R; i++) sum += exp(x[i * Cn + j] - mx);
      for (int i = 0; i < R; i++) cr_assert_float_eq(y[i * Cn + j], x[i * Cn + j] - mx - log(sum), 1e-5);
    }
    loom_tp_arg al[4] = {{x, s, 0}, {gam, sg, 0}, {bet, sg, 0}, {y, s, 0}};
    check_ok(loom_tp_interpret(g.cx, ln, al, 4));
    for (int i = 0; i < R; i++) {
      double mean = 0, var = 0;
      for (int j = 0; j < Cn; j++) mean += x[i * Cn + j];
      mean /= (double)Cn;
      for (int j = 0; j < Cn; j++) var += (x[i * Cn + j] - mean) * (x[i * Cn + j] - mean);
      var /= (double)Cn;
      for (int j = 0; j < Cn; j++)
        cr_assert_float_eq(y[i * Cn + j], (x[i * Cn + j] - mean) / sqrt(var + 1e-5) * gam[j] + bet[j], 2e-4);
    }
    loom_tp_arg ar[3] = {{x, s, 0}, {gam, sg, 0}, {y, s, 0}};
    check_ok(loom_tp_interpret(g.cx, rms, ar, 3));
    for (int i = 0; i < R; i++) {
      double ms = 0;
      for (int j = 0; j < Cn; j++) ms += (double)x[i * Cn + j] * x[i * Cn + j];
      ms /= (double)Cn;
      for (int j = 0; j < Cn; j++) cr_assert_float_eq(y[i * Cn + j], x[i * Cn + j] / sqrt(ms + 1e-6) * gam[j], 1e-5);
    }
  }
  gen_free(&g);
}

/* layer_norm / rms_norm / group_norm rows of dt (x = s * sin(..), or with a small value every
 * other position) against a reference in double on x / max|x| (exact scaling math, in a wider
 * type for f32): for s near the largest value of dt the squares overflow dt and the programs
 * take their scaled path. */
static double d_at(const void *p, loom_dtype dt, size_t i) {
  return dt == LOOM_DTYPE_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* The program's text parses back to the same text (no let shadows another, ...). */
static void reparses(const loom_tp_func *f) {
  char *text = tp_print(f);
  tp_fixture fx;
  loom_status st = tp_parse(&fx, text);
  cr_assert_null(st, "%s\n%s", loom_status_text(st, 0), text);
  char *again = tp_print(fx.f);
  cr_assert_str_eq(again, text);
  free(again);
  free(text);
  tp_fixture_free(&fx);
}

static void norms_at(gen_fixture *g, loom_dtype dt, double s, bool mixed) {
  loom_tp_func *ln, *rms, *gn;
  check_ok(loom_tp_gen_layer_norm(&g->arena, g->cx, "ln", dt, 2, 1, 1e-5, false, &ln));
  check_ok(loom_tp_gen_layer_norm(&g->arena, g->cx, "rms", dt, 2, 1, 1e-5, true, &rms));
  check_ok(loom_tp_gen_group_norm(&g->arena, g->cx, "gn", dt, 3, 2, 1e-5, &gn));
  reparses(ln);
  reparses(rms);
  reparses(gn);
  static const int64_t rows = 3, cols[] = {1, 2, 7, 64};
  for (size_t t = 0; t < LOOM_ARRAY_LEN(cols); t++) {
    int64_t C = cols[t], n = rows * C;
    _Alignas(8) unsigned char x[3 * 64 * 8], y[3 * 64 * 8], gam[64 * 8], bet[64 * 8];
    for (int64_t i = 0; i < n; i++) {
      double v = mixed && i % 2 ? sin((double)i) : s * sin((double)i * 1.3 + 0.5);
      if (dt == LOOM_DTYPE_F32) ((float *)x)[i] = (float)v;
      else ((double *)x)[i] = v;
    }
    for (int64_t j = 0; j < C; j++) {
      double gv = 0.5 + (double)j / 64, bv = (double)j / 32 - 1;
      if (dt == LOOM_DTYPE_F32) ((float *)gam)[j] = (float)gv, ((float *)bet)[j] = (float)bv;
      else ((double *)gam)[j] = gv, ((double *)bet)[j] = bv;
    }
    /* layer_norm and rms_norm over rows of C; group_norm over (rows, 2 channels, C / 2) in 2
     * groups of one channel each: statistics over runs of C / 2 */
    int64_t s2[2] = {rows, C}, sg[1] = {C}, s3[3] = {rows, 2, C / 2}, sc[1] = {2};
    static const char *const names[3] = {"layer_norm", "rms_norm", "group_norm"};
    for (int which = 0; which < 3; which++) {
      if (which == 2 && C % 2) continue;
      memset(y, 0, sizeof y);
      loom_tp_arg al[4] = {{x, s2, 0}, {gam, sg, 0}, {bet, sg, 0}, {y, s2, 0}}, ar[3] = {{x, s2, 0}, {gam, sg, 0}, {y, s2, 0}};
      loom_tp_arg ag[4] = {{x, s3, 0}, {gam, sc, 0}, {bet, sc, 0}, {y, s3, 0}};
      check_ok(loom_tp_interpret(g->cx, which == 0 ? ln : which == 1 ? rms : gn, which == 0 ? al : which == 1 ? ar : ag,
                                 which == 1 ? 3 : 4));
      int64_t len = which == 2 ? C / 2 : C; /* the elements one statistic covers */
      for (int64_t r0 = 0; r0 < n; r0 += len) {
        double c = 0, mean = 0, var = 0;
        for (int64_t k = 0; k < len; k++) c = fmax(c, fabs(d_at(x, dt, (size_t)(r0 + k))));
        if (c == 0) c = 1;
        for (int64_t k = 0; k < len; k++) mean += d_at(x, dt, (size_t)(r0 + k)) / c;
        mean = which == 1 ? 0 : mean / (double)len;
        for (int64_t k = 0; k < len; k++) {
          double dv = d_at(x, dt, (size_t)(r0 + k)) / c - mean;
          var += dv * dv;
        }
        var /= (double)len;
        for (int64_t k = 0; k < len; k++) {
          size_t i = (size_t)(r0 + k);
          size_t ch = (size_t)(which == 2 ? (r0 / len) % 2 : k); /* group_norm: gamma / beta per channel */
          double num = d_at(x, dt, i) / c - mean; /* 0 over a sqrt that underflowed to 0 is 0 */
          double want = (num == 0 ? 0 : num / sqrt(var + 1e-5 / c / c)) * d_at(gam, dt, ch) + (which == 1 ? 0 : d_at(bet, dt, ch));
          double got = d_at(y, dt, i);
          cr_assert(isfinite(got) && fabs(got - want) <= 2e-4 * (1 + fabs(want)),
                    "%s %s x %g%s, %lld columns, element %zu: got %g, want %g", names[which], loom_dtype_name(dt), s,
                    mixed ? " (mixed)" : "", (long long)C, i, got, want);
        }
      }
    }
  }
}

LOOM_TEST(tp_gen, norms_stay_finite_and_exact_at_huge_magnitudes) {
  gen_fixture g;
  gen_init(&g);
  static const double f32_scales[] = {1.0, 1e19, 1e20, 1e30, 3e38}, f64_scales[] = {1.0, 1e160, 1e300, 1.7e308};
  for (size_t k = 0; k < LOOM_ARRAY_LEN(f32_scales); k++)
    for (int mixed = 0; mixed < 2; mixed++) norms_at(&g, LOOM_DTYPE_F32, f32_scales[k], mixed);
  for (size_t k = 0; k < LOOM_ARRAY_LEN(f64_scales); k++)
    for (int mixed = 0; mixed < 2; mixed++) norms_at(&g, LOOM_DTYPE_F64, f64_scales[k], mixed);
  gen_free(&g);
}

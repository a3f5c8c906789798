/* test_cpu_diff.c — compiled tensor programs (JIT and AOT) against the reference
 * interpreter on random shapes including 0, 1, primes and sizes that are not multiples
 * of any tile or vector width, with 1 and 2 threads. Integers are compared bit-exactly;
 * floats within the stated tolerance (rtol/atol per test: 1e-5 for f32 elementwise, where
 * only libm-vs-LLVM math functions and reassociated reductions can differ). */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_rewrite.h"
#include "tensorprog/tp_schedule_cpu.h"

static const int64_t small[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33};
static const int64_t medium[] = {0, 1, 3, 7, 16, 17, 31, 64, 97, 129};

static cpu_diff_opts opts(const int64_t *sizes, size_t n, double tol) {
  return (cpu_diff_opts){sizes, n, 6, tol, tol, NULL, 3, NULL, NULL};
}

/* Parses, JIT-compiles and differentially tests one program. */
static void diff_program(const char *text, const cpu_diff_opts *o) {
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_cpu_jit *jit;
  loom_status s = loom_cpu_jit_create(NULL, &jit);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int runs = cpu_diff(&fx, fn, o, loom_test_seed());
  cr_assert_gt(runs, 0);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, elementwise_f32) {
  cpu_diff_opts o = opts(medium, 10, 1e-6);
  diff_program("prim @ew(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {\n"
               "  for i in 0..n parallel { for j in 0..m vectorize {\n"
               "    C[i, j] = max(A[i, j] * B[i, j] + A[i, j] - 1.5, B[i, j] / (abs(A[i, j]) + 1.0))\n"
               "  } }\n}\n", &o);
}

LOOM_TEST(cpu, math_functions_f32) {
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  diff_program("prim @mf(A: Buffer[(n,), f32], B: Buffer[(n,), f32], C: Buffer[(n, 9), f32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i, 0] = exp(A[i])\n"
               "    C[i, 1] = log(abs(A[i]) + 0.5)\n"
               "    C[i, 2] = sqrt(abs(B[i]))\n"
               "    C[i, 3] = tanh(A[i]) + sigmoid(B[i])\n"
               "    C[i, 4] = erf(A[i])\n"
               "    C[i, 5] = rsqrt(abs(A[i]) + 1.0)\n"
               "    C[i, 6] = floor(A[i] * 3.0) + ceil(B[i] * 3.0) + round(A[i] * 4.0)\n"
               "    C[i, 7] = fma(A[i], B[i], 1.0) + pow(abs(A[i]) + 0.1, B[i])\n"
               "    C[i, 8] = sin(A[i]) * cos(B[i]) + floormod(A[i], 0.75) + A[i] % 0.5\n"
               "  }\n}\n", &o);
}

/* Inverse trigonometric functions (llvm.asin / acos / atan, vectorized), inputs inside and at
 * the edges of their domains; atan over a wide range. */
LOOM_TEST(cpu, inverse_trigonometric_f32) {
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  diff_program("prim @it(A: Buffer[(n,), f32], C: Buffer[(n, 4), f32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i, 0] = asin(max(min(A[i], 1.0), -1.0))\n"
               "    C[i, 1] = acos(max(min(A[i] * 0.5, 1.0), -1.0))\n"
               "    C[i, 2] = atan(A[i] * 100.0)\n"
               "    C[i, 3] = atan(A[i] * 0.001) + asin(A[i] * 0.0)\n"
               "  }\n}\n", &o);
}

/* shl / shr: counts past the width and negative counts (LLVM's shifts are poison there), signed
 * (arithmetic) and unsigned (logical) right shifts, scalar and vectorized. */
LOOM_TEST(cpu, shifts_past_the_width_bit_exact) {
  cpu_diff_opts o = opts(medium, 10, 0);
  diff_program("prim @sh(A: Buffer[(n,), i32], B: Buffer[(n,), u8], C: Buffer[(n, 4), i32], D: Buffer[(n, 2), u8]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i, 0] = shl(A[i], floormod(A[i], 40i32))\n"
               "    C[i, 1] = shr(A[i], floormod(A[i], 40i32))\n"
               "    C[i, 2] = shr(A[i] * 65537i32, A[i])\n"
               "    C[i, 3] = shl(A[i], 31i32)\n"
               "    D[i, 0] = shl(B[i], floormod(B[i], 11u8))\n"
               "    D[i, 1] = shr(B[i] * 37u8, floormod(B[i], 11u8))\n"
               "  }\n}\n", &o);
  diff_program("prim @sh64(A: Buffer[(n,), i64], C: Buffer[(n, 2), i64]) {\n"
               "  for i in 0..n {\n"
               "    C[i, 0] = shl(A[i] * 1000003i64, floormod(A[i], 70i64))\n"
               "    C[i, 1] = shr(A[i] * -1000003i64, floormod(A[i], 70i64))\n"
               "  }\n}\n", &o);
}

/* The inline tanh (cg_expr.c tanh_f32): both branches of its select, saturation, tiny inputs. */
LOOM_TEST(cpu, inline_tanh_f32_across_its_range) {
  cpu_diff_opts o = opts(medium, 10, 1e-6);
  diff_program("prim @th(A: Buffer[(n,), f32], C: Buffer[(n, 4), f32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i, 0] = tanh(A[i])\n"
               "    C[i, 1] = tanh(A[i] * 12.0)\n"
               "    C[i, 2] = tanh(A[i] * 0.001)\n"
               "    C[i, 3] = tanh(A[i] * 100.0)\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, broadcast_and_symbolic_shapes) {
  cpu_diff_opts o = opts(small, 12, 1e-6);
  diff_program("prim @bc(A: Buffer[(n, m + 1), f32], b: Buffer[(m + 1,), f32], C: Buffer[(n, m + 1), f32],\n"
               "         H: Buffer[(2 * n,), f32]) {\n"
               "  for i in 0..n parallel { for j in 0..m + 1 vectorize { C[i, j] = A[i, j] + b[j] } }\n"
               "  for k in 0..2 * n { H[k] = A[k // 2, 0] * f32(k % 2) }\n"
               "}\n", &o);
}

LOOM_TEST(cpu, reductions_sum_and_max) {
  cpu_diff_opts o = opts(medium, 10, 1e-4);
  diff_program("prim @red(A: Buffer[(n, m), f32], S: Buffer[(n,), f32], M: Buffer[(n,), f32]) {\n"
               "  for i in 0..n parallel {\n"
               "    S[i] = 0.0\n"
               "    for k in 0..m reduce { S[i] = S[i] + A[i, k] }\n"
               "    M[i] = -1.0e18\n"
               "    for l in 0..m reduce { M[i] = max(M[i], A[i, l]) }\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, integer_reductions_bit_exact) {
  cpu_diff_opts o = opts(medium, 10, 0);
  diff_program("prim @ired(A: Buffer[(n, m), i32], S: Buffer[(n,), i64], M: Buffer[(n,), i32]) {\n"
               "  for i in 0..n {\n"
               "    S[i] = 0i64\n"
               "    for k in 0..m reduce { S[i] = S[i] + i64(A[i, k]) * i64(A[i, k]) }\n"
               "    M[i] = -2147483648i32\n"
               "    for l in 0..m reduce { M[i] = max(M[i], A[i, l] * 3i32 - 7i32) }\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, softmax_multi_statement_with_locals) {
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  diff_program("prim @softmax(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
               "  for i in 0..n parallel {\n"
               "    alloc acc: Local[(2,), f32]\n"
               "    acc[0] = -1.0e18\n"
               "    for j in 0..m reduce { acc[0] = max(acc[0], X[i, j]) }\n"
               "    acc[1] = 0.0\n"
               "    for k in 0..m reduce { acc[1] = acc[1] + exp(X[i, k] - acc[0]) }\n"
               "    for l in 0..m vectorize { Y[i, l] = exp(X[i, l] - acc[0]) / acc[1] }\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, matmul) {
  static const int64_t sz[] = {0, 1, 2, 5, 7, 16, 17, 33};
  cpu_diff_opts o = opts(sz, 8, 1e-4);
  diff_program("prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
               "  for i in 0..m parallel { for j in 0..n {\n"
               "    C[i, j] = 0.0\n"
               "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
               "  } }\n}\n", &o);
}

/* Index buffer of a gather: values in [0, rows of the table). */
static void fill_gather(const loom_tp_func *f, size_t param, void *data, size_t count, const int64_t *shape,
                        loom_test_rng *rng) {
  (void)shape;
  if (f->params[param].buf->dtype != LOOM_DTYPE_I64) {
    cpu_fill(f->params[param].buf->dtype, data, count, rng);
    return;
  }
  /* the table T is param 0 with shape (v, d): its rows come from its first dimension */
  int64_t *ix = data;
  for (size_t i = 0; i < count; i++) ix[i] = (int64_t)(loom_test_rng_next(rng) % 5);
}

LOOM_TEST(cpu, gather) {
  static const int64_t sz[] = {5, 6, 7, 13};
  cpu_diff_opts o = opts(sz, 4, 0);
  o.fill = fill_gather;
  diff_program("prim @gather(T: Buffer[(v, d), f32], I: Buffer[(n,), i64], Y: Buffer[(n, d), f32]) {\n"
               "  for i in 0..n parallel { for j in 0..d vectorize { Y[i, j] = T[I[i], j] } }\n}\n", &o);
}

LOOM_TEST(cpu, lets_ifs_selects_casts_locals) {
  cpu_diff_opts o = opts(small, 12, 1e-6);
  diff_program("prim @p(X: Buffer[(n,), f32], Y: Buffer[(n,), i32], Z: Buffer[(n,), f64], W: Buffer[(n,), u8],\n"
               "        Q: Buffer[(n,), i16], R: Buffer[(n,), bool]) {\n"
               "  alloc T: Local[(2,), i32]\n"
               "  T[0] = 10i32\n"
               "  T[1] = T[0] * 3i32\n"
               "  for i in 0..n {\n"
               "    let t: f32 = X[i] * 2.0 + 1.0\n"
               "    if i % 2 == 0 {\n"
               "      Z[i] = f64(select(t > 3.0, t, -t))\n"
               "    } else {\n"
               "      Z[i] = f64(Y[i] + T[1]) / 4.0f64\n"
               "    }\n"
               "    W[i] = u8(X[i] * 100.0)\n"
               "    Q[i] = i16(Y[i]) / (i16(Y[i]) * i16(Y[i]) + 1i16) + floordiv(i16(Y[i]), 7i16) + floormod(i16(Y[i]), -3i16)\n"
               "    R[i] = Y[i] > 0i32 && X[i] < 0.5 || !(Y[i] % 3i32 == 0i32)\n"
               "    if i > 0 { Y[i] = select(i > 1, Y[i - 1], Y[i] - 1i32) } \n"
               "  }\n}\n", &o);
}

/* float -> narrow int casts saturate at the target's range, compiled (vectorised too) as in
 * the interpreter and the graph reference. */
LOOM_TEST(cpu, float_to_narrow_int_casts_saturate_at_the_target_range) {
  cpu_diff_opts o = opts(small, 12, 0);
  diff_program("prim @sat(X: Buffer[(n,), f32], A: Buffer[(n,), i8], B: Buffer[(n,), u16], C: Buffer[(n,), i32],\n"
               "          D: Buffer[(n,), u8], E: Buffer[(n,), i64]) {\n"
               "  for i in 0..n vectorize {\n"
               "    A[i] = i8(X[i] * 1000.0)\n"
               "    B[i] = u16(X[i] * 1000000.0)\n"
               "    C[i] = i32(f64(X[i]) * 1.0e12f64)\n"
               "    D[i] = u8(X[i] * 1000.0)\n"
               "    E[i] = i64(X[i] * 1.0e30)\n"
               "  }\n}\n", &o);
}

/* The 8- and 16-bit targets from f32 and f64 (the quantizing casts of the int8 operators,
 * cg_expr.c narrow_sat: NaN to 0, clamp, vcvttps2dq, vpmovdb), vectorised: truncation toward
 * zero inside the range, saturation at both ends, infinities and NaN. */
LOOM_TEST(cpu, float_to_8_and_16_bit_casts_vectorised_saturate_and_map_nan_to_zero) {
  cpu_diff_opts o = opts(small, 12, 0);
  diff_program("prim @sat8(X: Buffer[(n,), f32], A: Buffer[(n,), u8], B: Buffer[(n,), i8], C: Buffer[(n,), i16],\n"
               "           D: Buffer[(n,), u8], E: Buffer[(n,), i8], F: Buffer[(n,), u16], G: Buffer[(n,), i8]) {\n"
               "  for i in 0..n vectorize {\n"
               "    A[i] = u8(f64(X[i]) * 300.0f64 + 100.0f64)\n"
               "    B[i] = i8(f64(X[i]) * 200.0f64)\n"
               "    C[i] = i16(X[i] * 40000.0)\n"
               "    D[i] = u8(X[i] / 0.0)\n"
               "    E[i] = i8((X[i] - X[i]) / 0.0)\n"
               "    F[i] = u16(f64(X[i]) / 0.0f64)\n"
               "    G[i] = i8(X[i] * 127.9)\n"
               "  }\n}\n", &o);
}

/* The 4- and 2-bit integers: one per byte, arithmetic wraps at their width, float -> narrow int
 * truncates and keeps the low bits (as base/lowp.c), compiled as in the interpreter. */
LOOM_TEST(cpu, four_and_two_bit_integers_wrap_at_their_width) {
  cpu_diff_opts o = opts(small, 12, 0);
  diff_program("prim @nib(X: Buffer[(n,), f32], A: Buffer[(n,), i4], B: Buffer[(n,), u4], C: Buffer[(n,), i2],\n"
               "          D: Buffer[(n,), u2], E: Buffer[(n,), i32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    A[i] = i4(X[i] * 20.0)\n"
               "    B[i] = u4(X[i] * 20.0) + u4(i32(X[i] * 7.0))\n"
               "    C[i] = i2(A[i]) * i2(A[i])\n"
               "    D[i] = u2(B[i]) - u2(C[i])\n"
               "    E[i] = i32(A[i]) * 100i32 + i32(B[i]) * 10i32 + i32(C[i]) + i32(D[i])\n"
               "  }\n}\n", &o);
}

/* float8 / float4 storage: decoded by table, encoded by the IR version of base/lowp.c's rule
 * (round to nearest even, saturate; NaN and infinity codes per format), bit-exact to the
 * interpreter across overflow, subnormals, zeros of both signs, infinities and NaN. */
LOOM_TEST(cpu, float8_and_float4_storage_bit_exact) {
  static const char *const fmts[] = {"f8e4m3fn", "f8e4m3fnuz", "f8e5m2", "f8e5m2fnuz", "f4e2m1"};
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    char text[1024];
    snprintf(text, sizeof text,
             "prim @f8(X: Buffer[(n,), f32], A: Buffer[(n,), %s], B: Buffer[(n,), %s], C: Buffer[(n,), %s], D: Buffer[(n,), f32]) {\n"
             "  for i in 0..n {\n"
             "    A[i] = %s(X[i] * 300.0)\n"
             "    B[i] = %s(X[i] * 0.003)\n"
             "    C[i] = select(i %% 3 == 0, %s(X[i] / 0.0), %s((X[i] - X[i]) / 0.0))\n"
             "    D[i] = f32(A[i]) + f32(B[i]) * 1000.0 + f32(%s(f64(X[i]) * 7.0f64))\n"
             "  }\n}\n",
             fmts[k], fmts[k], fmts[k], fmts[k], fmts[k], fmts[k], fmts[k], fmts[k]);
    cpu_diff_opts o = opts(small, 12, 0);
    diff_program(text, &o);
  }
}

/* e8m0 storage (2^(code-127), 0xff NaN): decoded by table (code 0 is the f32 subnormal 2^-127),
 * encoded from f32 bits (exponent, rounded "up", saturating); random bit patterns reach
 * subnormals, infinities and NaN without arithmetic on them. A store keeps e5m2's infinity
 * (an unsaturated cast's), which a cast saturates. Bit-exact to the interpreter. */
LOOM_TEST(cpu, e8m0_storage_and_e5m2_infinity_bit_exact) {
  cpu_diff_opts o = opts(small, 12, 0);
  diff_program("prim @e8(X: Buffer[(n,), f32], K: Buffer[(n,), i32], E: Buffer[(n,), f8e8m0], A: Buffer[(n,), f8e8m0],\n"
               "         B: Buffer[(n,), f8e8m0], C: Buffer[(n,), f8e8m0], D: Buffer[(n, 3), f32], F: Buffer[(n,), f8e5m2]) {\n"
               "  for i in 0..n {\n"
               "    A[i] = f8e8m0(X[i] * 1.0e30)\n"
               "    B[i] = f8e8m0(bitcast(K[i] * 2654435761i32, 0.0))\n"
               "    C[i] = f8e8m0(f64(X[i]) * 1.0e-30f64)\n"
               "    D[i, 0] = f32(E[i])\n"
               "    D[i, 1] = f32(f16(E[i]))\n"
               "    D[i, 2] = f32(A[i])\n"
               "    F[i] = select(X[i] > 1.0, inff8e5m2, select(X[i] < -1.0, -inff8e5m2, f8e5m2(X[i] / 0.0)))\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, half_precision_storage) {
  cpu_diff_opts o = opts(medium, 10, 0);
  diff_program("prim @h(A: Buffer[(n,), f16], B: Buffer[(n,), bf16], C: Buffer[(n,), f16], D: Buffer[(n,), bf16],\n"
               "        E: Buffer[(n,), f32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i] = A[i] * A[i] + f16(B[i])\n"
               "    D[i] = B[i] * 3.0 - bf16(A[i])\n"
               "    E[i] = f32(A[i]) + f32(B[i])\n"
               "  }\n}\n", &o);
}

/* bitcast between floats and integers of one width, scalar and vectorized (f16 / bf16 lane by
 * lane), bit-exact. */
LOOM_TEST(cpu, bitcast_bit_exact) {
  cpu_diff_opts o = opts(medium, 10, 0);
  diff_program("prim @bc(A: Buffer[(n,), f32], B: Buffer[(n,), i32], C: Buffer[(n, 2), i32], D: Buffer[(n, 2), f32]) {\n"
               "  for i in 0..n vectorize {\n"
               "    C[i, 0] = bitcast(A[i], 0i32)\n"
               "    C[i, 1] = bitcast(A[i] * 3.0 + 1.0, 0i32) + 1i32\n"
               "    D[i, 0] = bitcast(floormod(B[i], 1000i32) + 1065353216i32, 0.0)\n"
               "    D[i, 1] = f32(bitcast(i16(floormod(B[i], 1000i32)) + 15360i16, 0.0f16)) +\n"
               "              f32(bitcast(i16(floormod(B[i], 1000i32)) + 16256i16, 0.0bf16))\n"
               "  }\n}\n", &o);
  diff_program("prim @bc64(A: Buffer[(n,), f64], H: Buffer[(n,), f16], C: Buffer[(n, 2), i64], E: Buffer[(n,), i16]) {\n"
               "  for i in 0..n {\n"
               "    C[i, 0] = bitcast(A[i], 0i64)\n"
               "    C[i, 1] = bitcast(bitcast(A[i], 0u64), 0i64)\n"
               "    E[i] = bitcast(H[i], 0i16)\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, local_buffer_of_symbolic_size_in_parallel_loop) {
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  diff_program("prim @loc(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
               "  for i in 0..n parallel {\n"
               "    alloc T: Local[(m,), f32]\n"
               "    for j in 0..m { T[j] = X[i, j] * 2.0 }\n"
               "    for k in 0..m { Y[i, k] = T[m - 1 - k] + T[k] }\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, scalar_params_and_unroll) {
  cpu_diff_opts o = opts(small, 12, 1e-6);
  o.scalar = 5;
  diff_program("prim @sc(X: Buffer[(n, 4), f32], Y: Buffer[(n, 4), f32], s: i64) {\n"
               "  for i in 0..n { for j in 0..4 unroll { Y[i, j] = X[i, j] * f32(s) + f32(j) } }\n}\n", &o);
}

/* ---- scheduled programs equal unscheduled ones -------------------------------------- */

static const char *const mm_text =
    "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m { for j in 0..n {\n"
    "    C[i, j] = 0.0\n"
    "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
    "  } }\n}\n";

LOOM_TEST(cpu, scheduled_split_vectorize_parallel_equals_unscheduled) {
  tp_fixture plain, sched;
  cpu_parse_ok(&plain, mm_text);
  cpu_parse_ok(&sched, mm_text);
  loom_tp_stmt *outer, *inner, *tail;
  loom_status s = loom_tp_split(&sched.arena, sched.cx, sched.f, loom_tp_find_loop(sched.f, "j"), 8, &outer, &inner,
                                &tail);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_null(loom_tp_set_kind(sched.cx, inner, LOOM_TP_LOOP_VECTORIZE));
  loom_tp_stmt *io, *ii, *it;
  s = loom_tp_split(&sched.arena, sched.cx, sched.f, loom_tp_find_loop(sched.f, "i"), 4, &io, &ii, &it);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_null(loom_tp_set_kind(sched.cx, io, LOOM_TP_LOOP_PARALLEL));
  cr_assert_null(loom_tp_verify(sched.cx, sched.f));
  loom_cpu_jit *jit, *jit2; /* one JIT per program: both are named @mm */
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  cr_assert_null(loom_cpu_jit_create(NULL, &jit2));
  loom_kernel_fn fp = cpu_jit(jit, &plain), fsch = cpu_jit(jit2, &sched);
  static const int64_t dims[][3] = {{0, 3, 5}, {1, 1, 1}, {3, 7, 9}, {13, 5, 17}, {16, 16, 16}, {17, 31, 33}};
  loom_test_rng rng = {loom_test_seed()};
  for (size_t t = 0; t < sizeof dims / sizeof dims[0]; t++) {
    int64_t m = dims[t][0], k = dims[t][1], n = dims[t][2];
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    float *A = malloc((size_t)(m * k + 1) * 4), *B = malloc((size_t)(k * n + 1) * 4);
    float *C1 = malloc((size_t)(m * n + 1) * 4), *C2 = malloc((size_t)(m * n + 1) * 4);
    cpu_fill(LOOM_DTYPE_F32, A, (size_t)(m * k), &rng);
    cpu_fill(LOOM_DTYPE_F32, B, (size_t)(k * n), &rng);
    for (uint32_t th = 1; th <= 2; th++) {
      loom_tp_arg a1[3] = {{A, sa, 0}, {B, sb, 0}, {C1, sc, 0}}, a2[3] = {{A, sa, 0}, {B, sb, 0}, {C2, sc, 0}};
      cpu_ctx c;
      cpu_ctx_init(&c, th);
      cr_assert_eq(cpu_call(plain.cx, plain.f, fp, a1, 3, &c), 0);
      cr_assert_eq(cpu_call(sched.cx, sched.f, fsch, a2, 3, &c), 0);
      for (int64_t e = 0; e < m * n; e++)
        cr_assert_float_eq(C1[e], C2[e], 1e-4 * (1 + fabsf(C1[e])), "(%lld,%lld,%lld) elem %lld", (long long)m,
                           (long long)k, (long long)n, (long long)e);
    }
    free(A);
    free(B);
    free(C1);
    free(C2);
  }
  loom_cpu_jit_destroy(jit);
  loom_cpu_jit_destroy(jit2);
  tp_fixture_free(&plain);
  tp_fixture_free(&sched);
}

/* ---- errors ------------------------------------------------------------------------------ */

LOOM_TEST(cpu, integer_division_by_zero_fails_the_kernel) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @dz(A: Buffer[(n,), i32], B: Buffer[(n,), i32]) {\n"
                    "  for i in 0..n parallel { B[i] = A[i] / B[i] }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int32_t A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 1, 1};
  int64_t shape[1] = {4};
  loom_tp_arg args[2] = {{A, shape, 0}, {B, shape, 0}};
  for (uint32_t th = 1; th <= 2; th++) {
    cpu_ctx c;
    cpu_ctx_init(&c, th);
    int32_t B2[4] = {1, 0, 1, 1};
    args[1].data = B2;
    cr_assert_neq(cpu_call(fx.cx, fx.f, fn, args, 2, &c), 0);
    cr_assert_str_eq(c.error, "integer division by zero");
  }
  (void)B;
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* An index read from memory (take, gather, scatter) outside its buffer fails the kernel with the
 * buffer and axis named, as the interpreter does, instead of reading or writing out of bounds. */
LOOM_TEST(cpu, data_dependent_index_out_of_range_fails_the_kernel) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @tk(X: Buffer[(n,), f32], I: Buffer[(m,), i64], Y: Buffer[(m,), f32]) {\n"
                    "  for i in 0..m parallel { Y[i] = X[I[i]] }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  float X[4] = {1, 2, 3, 4}, Y[3];
  int64_t nx[1] = {4}, ni[1] = {3};
  static const int64_t bad[][3] = {{0, 4, 1}, {2, -1, 0}, {3, 2, 1}};
  for (uint32_t th = 1; th <= 2; th++)
    for (int k = 0; k < 3; k++) {
      int64_t I[3] = {bad[k][0], bad[k][1], bad[k][2]};
      loom_tp_arg args[3] = {{X, nx, 0}, {I, ni, 0}, {Y, ni, 0}};
      cpu_ctx c;
      cpu_ctx_init(&c, th);
      int32_t rc = cpu_call(fx.cx, fx.f, fn, args, 3, &c);
      if (k == 2) {
        cr_assert_eq(rc, 0, "in-range indices: %s", c.error);
        cr_assert(Y[0] == 4 && Y[1] == 3 && Y[2] == 2);
      } else {
        cr_assert_neq(rc, 0, "index set %d", k);
        char want[160];
        snprintf(want, sizeof want, "an index into axis 0 of 'X' (read from data): index %lld must be within the "
                 "inclusive range [0, 3]", (long long)(k == 0 ? 4 : -1));
        cr_assert(strstr(c.error, want) != NULL, "%s", c.error);
      }
    }
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, bad_cpu_name_is_an_error_or_works) {
  /* A generic CPU works (no AVX); the result is the same. */
  loom_cpu_options o = {.cpu = "x86-64"};
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  loom_status s = loom_cpu_describe_target(&o, &sb);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert(strstr(loom_strbuf_cstr(&sb), "x86-64") != NULL, "%s", loom_strbuf_cstr(&sb));
  loom_strbuf_free(&sb);
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @g(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n vectorize { B[i] = A[i] * 2.0 + 1.0 }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(&o, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  cpu_diff_opts d = opts(medium, 10, 0);
  cpu_diff(&fx, fn, &d, 7);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, emitted_ir_has_noalias_and_vectorize_metadata) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @v(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n vectorize { B[i] = A[i] + 1.0 }\n}\n");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const loom_tp_func *fs[1] = {fx.f};
  cr_assert_null(loom_cpu_emit_ir(NULL, fx.cx, fs, 1, false, &sb));
  const char *ir = loom_strbuf_cstr(&sb);
  cr_assert(strstr(ir, "define i32 @loom_kernel_v(ptr") != NULL, "%s", ir);
  cr_assert(strstr(ir, "noalias") != NULL, "%s", ir);
  cr_assert(strstr(ir, "llvm.loop.vectorize.enable") != NULL, "%s", ir);
  loom_strbuf_free(&sb);
  tp_fixture_free(&fx);
}

/* ---- AOT: object -> .so -> dlopen, same results as the JIT ------------------------------- */

LOOM_TEST(cpu, aot_object_linked_into_shared_object_matches_jit) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @aot(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
                    "  for i in 0..n parallel {\n"
                    "    alloc acc: Local[(1,), f32]\n"
                    "    acc[0] = 0.0\n"
                    "    for j in 0..m reduce { acc[0] = acc[0] + X[i, j] * X[i, j] }\n"
                    "    for k in 0..m vectorize { Y[i, k] = X[i, k] * rsqrt(acc[0] / f32(m) + 0.00001) }\n"
                    "  }\n}\n");
  char dir[] = "/tmp/loom-aot-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char obj[300], so[300];
  snprintf(obj, sizeof obj, "%s/k.o", dir);
  snprintf(so, sizeof so, "%s/k.so", dir);
  const loom_tp_func *fs[1] = {fx.f};
  loom_status s = loom_cpu_emit_object(NULL, fx.cx, fs, 1, obj);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_test_proc p = loom_test_run("cc -shared -o %s %s", so, obj);
  cr_assert_eq(p.exit_code, 0, "cc: %s", p.err);
  loom_test_proc_free(&p);
  void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
  cr_assert_not_null(h, "%s", dlerror());
  loom_kernel_fn aot = (loom_kernel_fn)(uintptr_t)dlsym(h, "loom_kernel_aot");
  cr_assert_not_null(aot);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn jf = cpu_jit(jit, &fx);
  int64_t shape[2] = {13, 37};
  size_t n = 13 * 37;
  float *X = malloc(n * 4), *Y1 = malloc(n * 4), *Y2 = malloc(n * 4);
  loom_test_rng rng = {42};
  cpu_fill(LOOM_DTYPE_F32, X, n, &rng);
  cpu_ctx c;
  cpu_ctx_init(&c, 2);
  loom_tp_arg a1[2] = {{X, shape, 0}, {Y1, shape, 0}}, a2[2] = {{X, shape, 0}, {Y2, shape, 0}};
  cr_assert_eq(cpu_call(fx.cx, fx.f, aot, a1, 2, &c), 0);
  cr_assert_eq(cpu_call(fx.cx, fx.f, jf, a2, 2, &c), 0);
  cr_assert(memcmp(Y1, Y2, n * 4) == 0, "AOT and JIT results differ");
  /* and both equal the interpreter */
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  cpu_diff(&fx, aot, &o, 3);
  free(X);
  free(Y1);
  free(Y2);
  dlclose(h);
  loom_cpu_jit_destroy(jit);
  unlink(obj);
  unlink(so);
  rmdir(dir);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, exp_f32_accuracy_over_the_whole_range) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @e(X: Buffer[(n,), f32], Y: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n vectorize { Y[i] = exp(X[i]) }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  enum { N = 20001 };
  float *X = malloc(N * 4), *Y = malloc(N * 4);
  for (int i = 0; i < N; i++) X[i] = -110.0f + 205.0f * (float)i / (N - 1); /* [-110, 95] */
  X[0] = NAN;
  X[1] = INFINITY;
  X[2] = -INFINITY;
  int64_t shape[1] = {N};
  loom_tp_arg args[2] = {{X, shape, 0}, {Y, shape, 0}};
  cpu_ctx c;
  cpu_ctx_init(&c, 1);
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 2, &c), 0);
  cr_assert(isnan(Y[0]));
  cr_assert(isinf(Y[1]) && Y[1] > 0);
  cr_assert_eq(Y[2], 0.0f);
  for (int i = 3; i < N; i++) {
    float want = (float)exp((double)X[i]);
    if (isinf(want)) {
      cr_assert(isinf(Y[i]), "exp(%g) = %g, want inf", X[i], Y[i]);
      continue;
    }
    /* 2 ulp relative for normal results; subnormals within 2 of their ulp (2^-149) */
    double tol = fmax(2.5 * fabs(want) * 1.1920929e-7, 2.5 * 1.4e-45);
    cr_assert(fabs((double)Y[i] - want) <= tol, "exp(%.9g) = %.9g, want %.9g", X[i], Y[i], want);
  }
  free(X);
  free(Y);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* ---- lane mode (explicit vector code) ------------------------------------------------- */

LOOM_TEST(cpu, register_tiled_matmul_with_symbolic_tails) {
  static const int64_t sz[] = {0, 1, 5, 6, 7, 13, 31, 32, 33, 65, 70};
  cpu_diff_opts o = opts(sz, 11, 1e-4);
  o.trials = 10;
  diff_program(loom_tp_cpu_matmul_tiled_text(), &o);
}

LOOM_TEST(cpu, lane_mode_lets_selects_casts_and_uniform_loads) {
  cpu_diff_opts o = opts(medium, 10, 1e-5);
  diff_program("prim @lm(X: Buffer[(n, 16), f32], Y: Buffer[(n, 16), f32], I: Buffer[(n, 8), i32], J: Buffer[(n, 8), f64],\n"
               "         s: Buffer[(n,), f32]) {\n"
               "  for i in 0..n {\n"
               "    for j in 0..16 vectorize {\n"
               "      let t: f32 = X[i, j] * s[i] - 0.25\n"
               "      Y[i, j] = select(t > 0.0, exp(t), sqrt(abs(t)) + f32(i)) + max(t, -0.5)\n"
               "    }\n"
               "    for k in 0..8 vectorize { J[i, k] = f64(I[i, k] * 3i32 + 1i32) / 2.0f64 + f64(X[i, k]) }\n"
               "  }\n}\n", &o);
}

LOOM_TEST(cpu, lane_mode_strided_loads_read_only_their_elements) {
  /* loads at stride 2, 3 and 4 (a strided convolution's input: one masked load and a shuffle),
   * the last lane of each at the last element of its row; a symbolic offset; a stride-2 read
   * of the buffer the body writes is a cross-lane dependence (left to the loop vectoriser) */
  cpu_diff_opts o = opts(medium, 10, 1e-6);
  diff_program("prim @sl(X: Buffer[(n, 23), f32], Y: Buffer[(n, 8), f32], Z: Buffer[(n, 64), f32], W: Buffer[(n, 16), f32],\n"
               "         V: Buffer[(n, 2*m + 14), f32], U: Buffer[(n, m + 8), f32], A: Buffer[(n, 16), f32]) {\n"
               "  for i in 0..n {\n"
               "    for j in 0..8 vectorize { Y[i, j] = X[i, 2*j + 8] + X[i, 3*j + 1] * 2.0 - X[i, j] }\n"
               "    for k in 0..16 vectorize { W[i, k] = Z[i, 4*k + 3] * Z[i, k] }\n"
               "    for q in 0..m { for j in 0..8 vectorize { U[i, q + j] = V[i, 2*j + 2*q + 1] + U[i, q + j] } }\n"
               "    for j in 0..8 vectorize { A[i, j] = A[i, 2*j] + 1.0 }\n"
               "  }\n}\n", &o);
  /* the strided loads are lane-mode code (masked loads), not the loop vectoriser's */
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @sl2(X: Buffer[(n, 23), f32], Y: Buffer[(n, 8), f32]) {\n"
                    "  for i in 0..n { for j in 0..8 vectorize { Y[i, j] = X[i, 3*j + 1] } }\n}\n");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const loom_tp_func *fs[1] = {fx.f};
  cr_assert_null(loom_cpu_emit_ir(NULL, fx.cx, fs, 1, false, &sb));
  const char *ir = loom_strbuf_cstr(&sb);
  cr_assert(strstr(ir, "@llvm.masked.load.v24f32") != NULL, "%s", ir);
  cr_assert(strstr(ir, "<24 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, "
                       "i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, "
                       "i1 true, i1 true, i1 false, i1 false>") != NULL, "%s", ir);
  loom_strbuf_free(&sb);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, lane_mode_refuses_cross_lane_dependences) {
  /* A[i, j + 1] = A[i, j] + X: a recurrence; must run in order (falls back to a loop). */
  cpu_diff_opts o = opts(small, 12, 1e-6);
  diff_program("prim @rec(A: Buffer[(n, 9), f32], X: Buffer[(n, 9), f32]) {\n"
               "  for i in 0..n { for j in 0..8 vectorize { A[i, j + 1] = A[i, j] + X[i, j] } }\n}\n", &o);
}

/* ---- default CPU schedule rules (tensorprog/schedule_cpu.c) ------------------------------ */

/* Schedules `text` for vectors of `vector_bytes` (the register tiles' size) and compares the
 * compiled result with the interpreter's of the unscheduled program (so a schedule that
 * changes the result fails, not only a code generator that miscompiles it); `why` must hold
 * `expect_why`. */
static void schedule_for_and_diff(const char *text, int vector_bytes, const char *expect_why, const cpu_diff_opts *o) {
  tp_fixture fx, ref;
  cpu_parse_ok(&fx, text);
  cpu_parse_ok(&ref, text);
  cpu_diff_opts against_ref = *o;
  against_ref.oracle = &ref;
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_tp_cpu_params params = {.vector_bytes = vector_bytes};
  loom_status s = loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &why);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  /* expect_why: one or more '|'-separated parts, each of which the explanation must contain */
  for (const char *part = expect_why; part;) {
    const char *bar = strchr(part, '|');
    size_t len = bar ? (size_t)(bar - part) : strlen(part);
    char want[256];
    snprintf(want, sizeof want, "%.*s", (int)len, part);
    cr_assert(strstr(loom_strbuf_cstr(&why), want) != NULL, "missing '%s' in why:\n%s", want, loom_strbuf_cstr(&why));
    part = bar ? bar + 1 : NULL;
  }
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  cpu_diff(&fx, fn, &against_ref, loom_test_seed());
  loom_cpu_jit_destroy(jit);
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
  tp_fixture_free(&ref);
}

static void schedule_and_diff(const char *text, const char *expect_why, const cpu_diff_opts *o) {
  schedule_for_and_diff(text, 64, expect_why, o);
}

LOOM_TEST(cpu, schedule_rules_elementwise_1d_2d_softmax_matmul) {
  cpu_diff_opts o = opts(medium, 10, 1e-4);
  schedule_and_diff("prim @a1(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n { B[i] = A[i] * 2.0 + 1.0 }\n}\n",
                    "loop i: split by 64, outer parallel, inner vectorized", &o);
  schedule_and_diff("prim @a2(A: Buffer[(n, m), f32], B: Buffer[(m,), f32], C: Buffer[(n, m), f32]) {\n"
                    "  for i in 0..n { for j in 0..m { C[i, j] = A[i, j] + B[j] } }\n}\n",
                    "loop j: vectorize", &o);
  schedule_and_diff("prim @sm(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
                    "  for i in 0..n {\n"
                    "    alloc acc: Local[(2,), f32]\n"
                    "    acc[0] = -1.0e18\n"
                    "    for j in 0..m reduce { acc[0] = max(acc[0], X[i, j]) }\n"
                    "    acc[1] = 0.0\n"
                    "    for k in 0..m reduce { acc[1] = acc[1] + exp(X[i, k] - acc[0]) }\n"
                    "    for l in 0..m { Y[i, l] = exp(X[i, l] - acc[0]) / acc[1] }\n"
                    "  }\n}\n",
                    "loop j: left serial (innermost, but a reduction)", &o);
  static const int64_t sz[] = {0, 1, 2, 5, 7, 16, 17, 33};
  cpu_diff_opts om = opts(sz, 8, 1e-4);
  schedule_and_diff(mm_text, "register-tiled", &om);
}

/* The default rule on the programs legalization generates for matmul, batched matmul and
 * linear: register-tiled (panels of two vectors, then 8 (4) and 1 columns, 6-row tiles, packed
 * B) for AVX-512, AVX2 and 16-byte vectors, equal to the interpreter for every extent incl. 0,
 * 1, primes and non-multiples of 6/16/32. */
typedef loom_status (*gen_fn)(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out);

/* in_place_at: the vector width (bytes) at which B is read in place (a program whose B is laid
 * out in panels of that many halves), else 0. */
/* The printed text of the program `gen` makes (malloc'd). */
static char *generated_text(gen_fn gen) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  loom_status s = gen(&a, cx, &f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_strbuf text;
  loom_strbuf_init(&text, NULL);
  loom_tp_print_func(f, &text);
  char *out = strdup(loom_strbuf_cstr(&text));
  cr_assert_not_null(out);
  loom_strbuf_free(&text);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
  return out;
}

static void generated_schedule_and_diff_at(gen_fn gen, int in_place_at) {
  char *text = generated_text(gen);
  static const int64_t sz[] = {0, 1, 2, 3, 5, 6, 7, 13, 17, 31, 33, 37};
  cpu_diff_opts o = opts(sz, 12, 1e-4);
  o.trials = 8;
  static const int vbytes[] = {64, 32, 16};
  for (size_t v = 0; v < sizeof vbytes / sizeof *vbytes; v++) {
    /* register-tiled, the widest panel two vectors of f32 */
    char panel[96];
    snprintf(panel, sizeof panel, ": %d columns, B %s", vbytes[v] / 2,
             in_place_at == vbytes[v] ? "laid out in panels|B prefetched 16 rows ahead" : "packed");
    schedule_for_and_diff(text, vbytes[v], panel, &o);
  }
  free(text);
}

static void generated_schedule_and_diff(gen_fn gen) { generated_schedule_and_diff_at(gen, 0); }

static loom_status gen_mm22(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul(a, cx, "mm22", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, NULL, 2, NULL, out);
}
static loom_status gen_mm32(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast ma[] = {LOOM_TP_BCAST_FULL};
  return loom_tp_gen_matmul(a, cx, "mm32", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, ma, 2, NULL, out);
}
static loom_status gen_mm44(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast m[] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL};
  return loom_tp_gen_matmul(a, cx, "mm44", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 4, m, 4, m, out);
}
static loom_status gen_mm43(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  /* B shared across the outer batch axis */
  static const loom_tp_bcast ma[] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL}, mb[] = {LOOM_TP_BCAST_FULL};
  return loom_tp_gen_matmul(a, cx, "mm43", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 4, ma, 3, mb, out);
}

static loom_status gen_mm_packed(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_packed_b(a, cx, "mmp", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, 16, false, out);
}
static loom_status gen_mm_packed3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_packed_b(a, cx, "mmp3", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, 16, false, out);
}

static loom_status gen_mm_packed_ragged(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_packed_b(a, cx, "mmpr", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, 16, true, out);
}
static loom_status gen_mm_packed_ragged3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_packed_b(a, cx, "mmpr3", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, 16, true, out);
}

static loom_status gen_mm_int8_packed_ragged(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_packed_b(a, cx, "mmi8pr", LOOM_DTYPE_U8, 2, 0, 16, true, out);
}
static loom_status gen_mm_int8_quads_ragged(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qr", LOOM_DTYPE_I8, 3, 1, 16, true, 0, out);
}

static loom_status gen_mm_int8(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer(a, cx, "mmi8", LOOM_DTYPE_U8, LOOM_DTYPE_I8, 2, 0, 1, out);
}
static loom_status gen_mm_int8_packed(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_packed_b(a, cx, "mmi8p", LOOM_DTYPE_U8, 2, 0, 16, false, out);
}
static loom_status gen_mm_int8_batched(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer(a, cx, "mmi8b", LOOM_DTYPE_I8, LOOM_DTYPE_U8, 3, 1, 0, out);
}

static loom_status gen_mm_int8_quads(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8q", LOOM_DTYPE_U8, 2, 0, 16, false, 0, out);
}
static loom_status gen_mm_int8_quads3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8q3", LOOM_DTYPE_I8, 3, 1, 32, false, 0, out);
}

/* u8 A with a constant k (a multiple of 4) read in place as quads: no A4 (gen_nn.c kwhole) */
static loom_status gen_mm_int8_quads_in_place(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qa", LOOM_DTYPE_U8, 2, 0, 16, false, 36, out);
}
static loom_status gen_mm_int8_quads_in_place3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qa3", LOOM_DTYPE_U8, 3, 1, 32, false, 8, out);
}

static loom_status gen_linear_bias(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_linear(a, cx, "lin_b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, true, out);
}
static loom_status gen_linear3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_linear(a, cx, "lin3", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, false, out);
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_matmul) { generated_schedule_and_diff(gen_mm22); }

/* The row tiles: 12 rows with AVX-512's 32 registers (the remainder in 6-row tiles, the last
 * ending at the last row), 6 with AVX2's 16; equal to the interpreter at rows around both. */
LOOM_TEST(cpu, schedule_rule_tall_row_tiles_with_avx512_only) {
  char *text = generated_text(gen_mm22);
  static const int64_t sz[] = {0, 1, 5, 6, 7, 11, 12, 13, 17, 23, 24, 25};
  cpu_diff_opts o = opts(sz, 12, 1e-4);
  o.trials = 8;
  schedule_for_and_diff(text, 64, "12x32 register tiles + the row tail in 6x32 tiles", &o);
  schedule_for_and_diff(text, 32, "6x16 register tiles + one overlapping 6x16 tile", &o);
  free(text);
}

/* With at least a panel's width of columns, the column tail is one more whole panel ending at
 * the last column (overlapping the previous one); fewer columns take the narrow variant
 * (panels of 8, then columns one by one). Around each boundary, for every vector width. */
LOOM_TEST(cpu, schedule_rule_matmul_column_tail_is_one_overlapping_panel) {
  char *text = generated_text(gen_mm22);
  static const int64_t sz[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 49, 63, 65};
  cpu_diff_opts o = opts(sz, 14, 1e-4);
  o.trials = 10;
  static const int vbytes[] = {64, 32, 16};
  for (size_t v = 0; v < sizeof vbytes / sizeof *vbytes; v++) {
    char want[96];
    snprintf(want, sizeof want, "column tail: one more %d-column panel ending at the last column", vbytes[v] / 2);
    schedule_for_and_diff(text, vbytes[v], want, &o);
  }
  free(text);
}
LOOM_TEST(cpu, schedule_rule_tiles_generated_batched_matmul_rank3_shared_b) { generated_schedule_and_diff(gen_mm32); }
LOOM_TEST(cpu, schedule_rule_tiles_generated_batched_matmul_rank4) { generated_schedule_and_diff(gen_mm44); }
/* A matmul whose epilogue calls a transcendental (GELU's tanh, erf, a sigmoid): the epilogue
 * runs after the tile is stored, from memory, in a loop over the tile's rows (not unrolled
 * into every row of every tile body); an epilogue of adds stays on the accumulators. Equal to
 * the interpreter at rows around the 6- and 12-row tiles, for AVX-512 and AVX2 tiles. */
LOOM_TEST(cpu, schedule_rule_runs_a_heavy_epilogue_after_the_tile) {
  static const char *const heavy =
      "prim @mmt(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], R: Buffer[(m, n), f32], C: Buffer[(m, n), f32]) {\n"
      "  for i in 0..m { for j in 0..n {\n"
      "    C[i, j] = 0.0\n"
      "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
      "    C[i, j] = 0.5 * C[i, j] * (1.0 + tanh(C[i, j] + R[i, j])) + erf(C[i, j])\n"
      "  } }\n}\n";
  static const int64_t sz[] = {0, 1, 5, 6, 7, 12, 13, 17, 31, 33};
  cpu_diff_opts o = opts(sz, 10, 1e-4);
  o.trials = 10;
  schedule_for_and_diff(heavy, 64, "12x32 register tiles|the epilogue (a transcendental) after the tile is stored", &o);
  schedule_for_and_diff(heavy, 32, "6x16 register tiles|the epilogue (a transcendental) after the tile is stored", &o);
  static const char *const light =
      "prim @mma(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], R: Buffer[(m, n), f32], C: Buffer[(m, n), f32]) {\n"
      "  for i in 0..m { for j in 0..n {\n"
      "    C[i, j] = 0.0\n"
      "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
      "    C[i, j] = max(C[i, j] + R[i, j], 0.0)\n"
      "  } }\n}\n";
  tp_fixture fx;
  cpu_parse_ok(&fx, light);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_status s = loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &(loom_tp_cpu_params){.vector_bytes = 64}, &why);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  cr_assert(strstr(loom_strbuf_cstr(&why), "register tiles") && !strstr(loom_strbuf_cstr(&why), "the epilogue"), "%s",
            loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
  schedule_for_and_diff(light, 64, "12x32 register tiles", &o);
}

/* A (b, s, k) x (k, n) matmul (and linear) with B shared by every batch: b and s fused into one
 * row loop, so the tiles run over b * s rows (fewer than 6 streamed); equal to the interpreter
 * with b * s around the tile boundaries, for every vector width. */
LOOM_TEST(cpu, schedule_rule_fuses_batch_rows_against_a_shared_b) {
  static const gen_fn gens[] = {gen_mm32, gen_linear3};
  static const int64_t sz[] = {0, 1, 2, 3, 4, 5, 6, 7, 11, 13, 33};
  cpu_diff_opts o = opts(sz, 11, 1e-4);
  o.trials = 10;
  static const int vbytes[] = {64, 32};
  for (size_t g = 0; g < 2; g++) {
    char *text = generated_text(gens[g]);
    for (size_t v = 0; v < 2; v++) schedule_for_and_diff(text, vbytes[v], "fused (rows of every batch against the one B)", &o);
    free(text);
  }
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_batched_matmul_broadcast_b) { generated_schedule_and_diff(gen_mm43); }
static void fill_identity_index(const loom_tp_func *f, size_t param, void *data, size_t count, const int64_t *shape,
                                loom_test_rng *rng) {
  if (param != 1) {
    cpu_fill(f->params[param].buf->dtype, data, count, rng);
    return;
  }
  (void)shape;
  for (size_t x = 0; x < count; x++) ((int64_t *)data)[x] = (int64_t)(count - 1 - x);
}

LOOM_TEST(cpu, schedule_rule_falls_back_when_packing_refuses) {
  /* B's row comes from a load (a gather): not packable, so the rule keeps the plain schedule */
  static const int64_t sz[] = {0, 1, 2, 5, 7, 13, 33};
  cpu_diff_opts o = opts(sz, 7, 1e-4);
  o.fill = fill_identity_index;
  schedule_and_diff("prim @mmg(A: Buffer[(m, k), f32], I: Buffer[(k,), i64], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
                    "  for i in 0..m { for j in 0..n {\n"
                    "    C[i, j] = 0.0\n"
                    "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[I[r], j] }\n"
                    "  } }\n}\n",
                    "register tiling refused (cache_read of 'B'", &o);
}
/* B laid out in panels of 16 (graph/pass_pack.c): read in place with AVX2 tiles (16 wide),
 * repacked by the panel packing for the other widths; rank 2 and rank 3 (batch axes of A). */
LOOM_TEST(cpu, schedule_rule_reads_a_weight_laid_out_in_panels_in_place) {
  generated_schedule_and_diff_at(gen_mm_packed, 32);
  generated_schedule_and_diff_at(gen_mm_packed3, 32);
}
/* The column counts of the padded-panel trials: 1, a panel less one, one panel and one more,
 * two panels and three more, primes, a tail of 8 + 1 (the 8-column panel then single columns). */
static const int64_t ragged_n[] = {1, 15, 17, 35, 13, 41, 57, 16, 32, 73};

/* n (C's columns) per trial and q = ceil(n / 16) (the padded panels B holds): the program's
 * bound (q - 1) * 16 < n <= q * 16, which graph inference proves. */
static void bind_ragged(const loom_tp_func *f, loom_sym_env *env, int trial) {
  int64_t n = ragged_n[trial % (int)LOOM_ARRAY_LEN(ragged_n)];
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *nm = loom_sym_var_name(f->syms[j]);
    if (!strcmp(nm, "n")) cr_assert_null(loom_sym_env_set(env, f->syms[j], n));
    if (!strcmp(nm, "q")) cr_assert_null(loom_sym_env_set(env, f->syms[j], (n + 15) / 16));
  }
}

/* B in panels of 16 with n not a multiple of 16 (the last panel zero-padded, matmul /
 * matmul_integer packed_b n=): the panels read in place (AVX2's 16-wide tiles) and the column
 * tail as one panel of 8 and single columns, reading only the real columns of the last panel;
 * every width, rows 0, 1, primes, more than a tile, rank 2 and 3, f32, int8 pair words and
 * byte quads (bit-exact), against the interpreter. */
LOOM_TEST(cpu, schedule_rule_reads_padded_panels_in_place_with_a_column_tail) {
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13, 37};
  cpu_diff_opts o = opts(sz, 8, 1e-4);
  o.trials = (int)LOOM_ARRAY_LEN(ragged_n);
  o.bind = bind_ragged;
  gen_fn gens[] = {gen_mm_packed_ragged, gen_mm_packed_ragged3, gen_mm_int8_packed_ragged, gen_mm_int8_quads_ragged};
  for (size_t g = 0; g < LOOM_ARRAY_LEN(gens); g++) {
    loom_arena a;
    loom_arena_init(&a, NULL, 0);
    loom_sym_ctx *cx;
    cr_assert_null(loom_sym_ctx_create(NULL, &cx));
    loom_tp_func *f;
    cr_assert_null(gens[g](&a, cx, &f));
    loom_strbuf text;
    loom_strbuf_init(&text, NULL);
    loom_tp_print_func(f, &text);
    cr_assert(strstr(loom_strbuf_cstr(&text), "C: Buffer[(m, n), ") || strstr(loom_strbuf_cstr(&text), "C: Buffer[(d0, m, n), "), "%s",
              loom_strbuf_cstr(&text));
    schedule_for_and_diff(loom_strbuf_cstr(&text), 32, ": 16 columns, B laid out in panels (read in place)", &o);
    schedule_for_and_diff(loom_strbuf_cstr(&text), 64, ": 32 columns, B packed", &o);
    schedule_for_and_diff(loom_strbuf_cstr(&text), 16, ": 8 columns, B packed", &o);
    loom_strbuf_free(&text);
    loom_sym_ctx_destroy(cx);
    loom_arena_destroy(&a);
  }
}

/* The int8 matmul (i16 pair words, dot2 on i32 accumulators: vpmaddwd) register-tiled like the
 * f32 one, bit-exact to the interpreter; and dot2's own value at the sign boundaries. */
LOOM_TEST(cpu, schedule_rule_tiles_the_int8_matmul) {
  generated_schedule_and_diff(gen_mm_int8);
  generated_schedule_and_diff(gen_mm_int8_batched);
  generated_schedule_and_diff_at(gen_mm_int8_packed, 32);
}
/* The same in byte quads (dot4: vpdpbusd with AVX512-VNNI, plain arithmetic elsewhere), u8 and
 * i8 A, k not a multiple of 4 (the last, partial quad), bit-exact to the interpreter. */
LOOM_TEST(cpu, schedule_rule_tiles_the_int8_matmul_in_byte_quads) {
  generated_schedule_and_diff_at(gen_mm_int8_quads, 32);
  generated_schedule_and_diff_at(gen_mm_int8_quads3, 64);
}
/* A u8 A of constant k (a multiple of 4) read in place, its quads the dot4 operand (no A4
 * Local): register-tiled as the packed form, bit-exact to the interpreter; the generator
 * refuses an i8 A or a k not a multiple of 4 there. */
LOOM_TEST(cpu, schedule_rule_tiles_the_int8_matmul_reading_u8_quads_in_place) {
  char *text = generated_text(gen_mm_int8_quads_in_place);
  cr_assert_null(strstr(text, "alloc A4"), "%s", text);
  free(text);
  generated_schedule_and_diff_at(gen_mm_int8_quads_in_place, 32);
  generated_schedule_and_diff_at(gen_mm_int8_quads_in_place3, 64);
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  loom_status st = loom_tp_gen_matmul_integer_quads(&a, cx, "bad", LOOM_DTYPE_I8, 2, 0, 16, false, 8, &f);
  cr_assert_eq(loom_status_code(st), LOOM_CODE_INVALID_ARGUMENT);
  cr_assert_not_null(strstr(loom_status_message(st), "reads A in place only for u8 and k a multiple of 4 (given i8, k=8)"), "%s",
                     loom_status_message(st));
  loom_status_free(st);
  st = loom_tp_gen_matmul_integer_quads(&a, cx, "bad", LOOM_DTYPE_U8, 2, 0, 16, false, 6, &f);
  cr_assert_not_null(strstr(loom_status_message(st), "(given u8, k=6)"), "%s", loom_status_message(st));
  loom_status_free(st);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
}

/* dot4's value: unsigned bytes of a times signed bytes of b, in lanes and scalar, on the host's
 * JIT (vpdpbusd where it has AVX512-VNNI, with the accumulator added by the instruction) and on
 * one without AVX-512 (plain arithmetic). */
LOOM_TEST(cpu, dot4_multiplies_unsigned_by_signed_bytes_scalar_and_in_lanes) {
  static const int64_t sz[] = {1, 3, 8, 16, 19};
  cpu_diff_opts o = opts(sz, 5, 0);
  diff_program("prim @d4(A: Buffer[(n, 16), i32], B: Buffer[(n, 16), i32], C: Buffer[(n, 16), i32], D: Buffer[(n,), i32]) {\n"
               "  for i in 0..n {\n"
               "    for j in 0..16 vectorize { C[i, j] = C[i, j] + dot4(A[i, j], B[i, j]) }\n"
               "    D[i] = dot4(A[i, 0], B[i, 1])\n"
               "  }\n}\n", &o);
  static const loom_cpu_options plain = {.features = "+avx2,+fma,-avx512f"};
  for (int k = 0; k < 2; k++) {
    tp_fixture fx;
    /* a = 0xFF7F8001: unsigned bytes (1, 128, 127, 255); b = 0x81010101: signed bytes (1, 1, 1, -127) */
    cpu_parse_ok(&fx, "prim @k(C: Buffer[(16,), i32], D: Buffer[(1,), i32]) {\n"
                      "  for j in 0..16 vectorize { C[j] = C[j] + dot4(-8421375i32, -2130640639i32) }\n"
                      "  D[0] = dot4(-8421375i32, -2130640639i32)\n"
                      "}\n");
    loom_cpu_jit *jit;
    cr_assert_null(loom_cpu_jit_create(k ? NULL : &plain, &jit));
    loom_kernel_fn fn = cpu_jit(jit, &fx);
    int32_t c[16], d[1] = {0};
    for (int j = 0; j < 16; j++) c[j] = 1000 * j;
    int64_t nc[1] = {16}, nd[1] = {1};
    loom_tp_arg args[2] = {{c, nc, 0}, {d, nd, 0}};
    cpu_ctx ctx;
    cpu_ctx_init(&ctx, 1);
    cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 2, &ctx), 0);
    cpu_ctx_fini(&ctx);
    int32_t want = 1 + 128 + 127 - 255 * 127;
    cr_assert_eq(d[0], want, "scalar (%s): %d, want %d", k ? "host" : "no AVX-512", d[0], want);
    for (int j = 0; j < 16; j++)
      cr_assert_eq(c[j], 1000 * j + want, "lane %d (%s): %d, want %d", j, k ? "host" : "no AVX-512", c[j], 1000 * j + want);
    loom_cpu_jit_destroy(jit);
    tp_fixture_free(&fx);
  }
}

LOOM_TEST(cpu, dot2_multiplies_signed_halves_scalar_and_in_lanes) {
  static const int64_t sz[] = {1, 3, 8, 16, 19};
  cpu_diff_opts o = opts(sz, 5, 0);
  diff_program("prim @d2(A: Buffer[(n, 16), i32], B: Buffer[(n, 16), i32], C: Buffer[(n, 16), i32], D: Buffer[(n,), i32]) {\n"
               "  for i in 0..n {\n"
               "    for j in 0..16 vectorize { C[i, j] = dot2(A[i, j], B[i, j]) }\n"
               "    D[i] = dot2(A[i, 0], B[i, 1])\n"
               "  }\n}\n", &o);
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @k(C: Buffer[(2,), i32]) {\n"
                    "  C[0] = dot2(262142i32, 131077i32)\n" /* (3, -2) . (2, 5) = 6 - 10 */
                    "  C[1] = dot2(-2147450880i32, -2147450880i32)\n" /* (-32768, 32768 as -32768)^2 * 2 wraps */
                    "}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int32_t c[2] = {0, 0};
  int64_t nc[1] = {2};
  loom_tp_arg args[1] = {{c, nc, 0}};
  cpu_ctx ctx;
  cpu_ctx_init(&ctx, 1);
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 1, &ctx), 0);
  cpu_ctx_fini(&ctx);
  cr_assert_eq(c[0], -4);
  cr_assert_eq(c[1], (int32_t)0x80000000u);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_linear_with_bias) { generated_schedule_and_diff(gen_linear_bias); }
LOOM_TEST(cpu, schedule_rule_tiles_generated_linear_rank3) { generated_schedule_and_diff(gen_linear3); }

/* The programs legalization generates for the image and linear-algebra ops (resize, grid_sample,
 * det, dft), scheduled by the default CPU rules, equal to the interpreter on extents incl. 0, 1
 * and primes. Scales are positive (S); grids and matrices random in [-2, 2]. */
static void fill_positive_scales(const loom_tp_func *f, size_t param, void *data, size_t count, const int64_t *shape,
                                 loom_test_rng *rng) {
  (void)shape;
  if (strcmp(f->params[param].buf->name, "S")) {
    cpu_fill(f->params[param].buf->dtype, data, count, rng);
    return;
  }
  for (size_t x = 0; x < count; x++) ((double *)data)[x] = 0.25 * (double)loom_test_rng_range(rng, 2, 12);
}

/* min_size: the smallest extent tried (resize of an empty axis and the onesided inverse dft of
 * fewer than 2 bins are errors, in the reference as in the programs). */
static void generated_diff(loom_tp_func *f, int64_t scalar, int min_size) {
  loom_strbuf text;
  loom_strbuf_init(&text, NULL);
  loom_tp_print_func(f, &text);
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13};
  cpu_diff_opts o = opts(sz + min_size, 7 - (size_t)min_size, 1e-4);
  o.trials = 6;
  o.fill = fill_positive_scales;
  o.scalar = scalar;
  schedule_and_diff(loom_strbuf_cstr(&text), "", &o);
  loom_strbuf_free(&text);
}

/* The loop-free programs of resize with run-time scales or sizes (the extents, the full-rank
 * scales and roi): random P (scales in [-2, 2], sizes in [-50, 50]) includes the invalid values
 * whose extents are -1, and empty axes the sizes that the reference refuses. */
LOOM_TEST(cpu, generated_resize_runtime_dims_scales_roi) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  loom_tp_resize_rt rt = {.na = 3, .axes = {0, 1, 2}, .p_t = LOOM_DTYPE_F32};
  cr_assert_null(loom_tp_gen_resize_dims(&a, cx, "rs_dims_scales", LOOM_DTYPE_F32, 3, &rt, &f));
  generated_diff(f, 0, 0);
  cr_assert_null(loom_tp_gen_resize_scales(&a, cx, "rs_scales_scales", LOOM_DTYPE_F32, 3, &rt, &f));
  generated_diff(f, 0, 0);
  rt = (loom_tp_resize_rt){.na = 2, .axes = {3, 1}, .sizes = true, .policy = LOOM_TP_RESIZE_NOT_SMALLER, .p_t = LOOM_DTYPE_I64};
  cr_assert_null(loom_tp_gen_resize_dims(&a, cx, "rs_dims_sizes", LOOM_DTYPE_F32, 4, &rt, &f));
  generated_diff(f, 0, 0);
  rt.policy = LOOM_TP_RESIZE_NOT_LARGER;
  cr_assert_null(loom_tp_gen_resize_scales(&a, cx, "rs_scales_sizes", LOOM_DTYPE_I32, 4, &rt, &f));
  generated_diff(f, 0, 0);
  rt.policy = LOOM_TP_RESIZE_STRETCH;
  cr_assert_null(loom_tp_gen_resize_dims(&a, cx, "rs_dims_stretch", LOOM_DTYPE_F64, 4, &rt, &f));
  generated_diff(f, 0, 0);
  cr_assert_null(loom_tp_gen_resize_roi(&a, cx, "rs_roi", LOOM_DTYPE_F32, 4, &rt, &f));
  generated_diff(f, 0, 0);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
}

LOOM_TEST(cpu, generated_resize_grid_sample_det_dft) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  loom_tp_resize rz = {.mode = LOOM_TP_RESIZE_CUBIC, .coord = LOOM_TP_RESIZE_HALF_PIXEL, .cubic_a = -0.75, .axes = 0xC,
                       .scale_t = LOOM_DTYPE_F64, .roi_t = LOOM_DTYPE_F64};
  cr_assert_null(loom_tp_gen_resize(&a, cx, "rs_cubic", LOOM_DTYPE_F32, 4, &rz, &f));
  generated_diff(f, 0, 1);
  rz.mode = LOOM_TP_RESIZE_NEAREST, rz.coord = LOOM_TP_RESIZE_ASYMMETRIC, rz.nearest = LOOM_TP_RESIZE_ROUND_PREFER_CEIL, rz.axes = 0x5;
  cr_assert_null(loom_tp_gen_resize(&a, cx, "rs_nearest", LOOM_DTYPE_I32, 3, &rz, &f));
  generated_diff(f, 0, 1);
  loom_tp_grid_sample gs = {.n = 2, .mode = LOOM_TP_RESIZE_LINEAR, .padding = LOOM_TP_GRID_REFLECTION};
  cr_assert_null(loom_tp_gen_grid_sample(&a, cx, "gs_lin", LOOM_DTYPE_F32, LOOM_DTYPE_F32, &gs, &f));
  generated_diff(f, 0, 0);
  gs.mode = LOOM_TP_RESIZE_CUBIC, gs.padding = LOOM_TP_GRID_BORDER, gs.align_corners = true;
  cr_assert_null(loom_tp_gen_grid_sample(&a, cx, "gs_cubic", LOOM_DTYPE_F32, LOOM_DTYPE_F32, &gs, &f));
  generated_diff(f, 0, 0);
  cr_assert_null(loom_tp_gen_det(&a, cx, "det3", LOOM_DTYPE_F32, 3, &f));
  generated_diff(f, 0, 0);
  cr_assert_null(loom_tp_gen_det(&a, cx, "det2", LOOM_DTYPE_F64, 2, &f));
  generated_diff(f, 0, 0);
  cr_assert_null(loom_tp_gen_dft(&a, cx, "dft_c", LOOM_DTYPE_F32, 3, 1, 2, false, true, true, &f));
  generated_diff(f, 6, 0);
  cr_assert_null(loom_tp_gen_dft(&a, cx, "dft_h", LOOM_DTYPE_F32, 3, 0, 2, true, true, false, &f));
  generated_diff(f, 0, 2);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
}

/* A division of loop-invariant values read only under a condition, in a reduction LLVM
 * vectorises with masked loads: LLVM 19 computed it for the first lane, under the first
 * lane's condition, and used it for every lane's address (the padded convolution of
 * issue 27). Symbolic divisions are now hoisted (cg_expr.c); loops that still divide under a
 * condition (here a value-level division in an index) are not auto-vectorised. */
LOOM_TEST(cpu, invariant_division_under_a_condition_in_a_vectorised_loop) {
  cpu_diff_opts o = opts(medium, 10, 1e-4);
  /* the generated convolution's form, its input channels equal to a group's */
  diff_program("prim @cdiv(X: Buffer[(n, cg, h0), f32], W: Buffer[(o, cg, k0), f32], Y: Buffer[(n, o, y0), f32]) {\n"
               "  for i0 in 0..n parallel {\n"
               "    for i1 in 0..o {\n"
               "      for j0 in 0..y0 {\n"
               "        alloc S: Local[(1,), f32]\n"
               "        for rc in 0..cg reduce {\n"
               "          for r0 in 0..k0 reduce {\n"
               "            if j0 + r0 - 3 >= 0 && j0 + r0 - 3 < h0 {\n"
               "              S[0] = S[0] + X[i0, cg*floordiv(i1, o) + rc, j0 + r0 - 3] * W[i1, rc, r0]\n"
               "            }\n"
               "          }\n"
               "        }\n"
               "        Y[i0, i1, j0] = S[0]\n"
               "      }\n"
               "    }\n"
               "  }\n"
               "}\n", &o);
  /* nested divisions hoisted to one point (GQA's head group: floordiv(h, floordiv(H, G))) */
  diff_program("prim @nested(X: Buffer[(n, m), f32], Y: Buffer[(n, q), f32]) {\n"
               "  for i in 0..n parallel {\n"
               "    for j in 0..q {\n"
               "      Y[i, j] = X[floordiv(i, floordiv(q, 2) + 1), floormod(j, floordiv(m, 3) + 1)]\n"
               "    }\n"
               "  }\n"
               "}\n", &o);
  /* a value-level division in an index, under a condition: the loop is left scalar */
  diff_program("prim @vdiv(X: Buffer[(n, m), f32], Y: Buffer[(n, q), f32]) {\n"
               "  for i in 0..n parallel {\n"
               "    for j in 0..q {\n"
               "      alloc S: Local[(1,), f32]\n"
               "      for r in 0..m reduce {\n"
               "        if j + r >= 5 && j + r - 5 < m {\n"
               "          S[0] = S[0] + X[i64(i + q) // i64(q + 1), j + r - 5]\n"
               "        }\n"
               "      }\n"
               "      Y[i, j] = S[0]\n"
               "    }\n"
               "  }\n"
               "}\n", &o);
}

/* test_cpu_diff.c — compiled tensor programs (JIT and AOT) against the reference
 * interpreter on random shapes including 0, 1, primes and sizes that are not multiples
 * of any tile or vector width, with 1 and 2 threads. Integers are compared bit-exactly;
 * floats within the stated tolerance (rtol/atol per test: 1e-5 for f32 elementwise, where
 * only libm-vs-LLVM math functions and reassociated reductions can differ). */
#include <ctype.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_rewrite.h"
#include "tensorprog/tp_schedule_cpu.h"

static const int64_t small[] = {0, 1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33};
static const int64_t medium[] = {0, 1, 3, 7, 16, 17, 31, 64, 97, 129};


LOOM_TEST(cpu, elementwise_f32) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-6);
  cpu_diff_program("prim @ew(A: Buffer[(n, m), f32], B: Buffer[(n, m), f32], C: Buffer[(n, m), f32]) {\n"
                   "  for i in 0..n parallel { for j in 0..m vectorize {\n"
                   "    C[i, j] = max(A[i, j] * B[i, j] + A[i, j] - 1.5, B[i, j] / (abs(A[i, j]) + 1.0))\n"
                   "  } }\n}\n", &o);
}

LOOM_TEST(cpu, math_functions_f32) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
  cpu_diff_program("prim @mf(A: Buffer[(n,), f32], B: Buffer[(n,), f32], C: Buffer[(n, 9), f32]) {\n"
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
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
  cpu_diff_program("prim @it(A: Buffer[(n,), f32], C: Buffer[(n, 4), f32]) {\n"
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
  cpu_diff_opts o = cpu_opts(medium, 10, 0);
  cpu_diff_program("prim @sh(A: Buffer[(n,), i32], B: Buffer[(n,), u8], C: Buffer[(n, 4), i32], D: Buffer[(n, 2), u8]) {\n"
                   "  for i in 0..n vectorize {\n"
                   "    C[i, 0] = shl(A[i], floormod(A[i], 40i32))\n"
                   "    C[i, 1] = shr(A[i], floormod(A[i], 40i32))\n"
                   "    C[i, 2] = shr(A[i] * 65537i32, A[i])\n"
                   "    C[i, 3] = shl(A[i], 31i32)\n"
                   "    D[i, 0] = shl(B[i], floormod(B[i], 11u8))\n"
                   "    D[i, 1] = shr(B[i] * 37u8, floormod(B[i], 11u8))\n"
                   "  }\n}\n", &o);
  cpu_diff_program("prim @sh64(A: Buffer[(n,), i64], C: Buffer[(n, 2), i64]) {\n"
                   "  for i in 0..n {\n"
                   "    C[i, 0] = shl(A[i] * 1000003i64, floormod(A[i], 70i64))\n"
                   "    C[i, 1] = shr(A[i] * -1000003i64, floormod(A[i], 70i64))\n"
                   "  }\n}\n", &o);
}

/* The inline tanh (cg_expr.c tanh_f32): both branches of its select, saturation, tiny inputs. */
LOOM_TEST(cpu, inline_tanh_f32_across_its_range) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-6);
  cpu_diff_program("prim @th(A: Buffer[(n,), f32], C: Buffer[(n, 4), f32]) {\n"
                   "  for i in 0..n vectorize {\n"
                   "    C[i, 0] = tanh(A[i])\n"
                   "    C[i, 1] = tanh(A[i] * 12.0)\n"
                   "    C[i, 2] = tanh(A[i] * 0.001)\n"
                   "    C[i, 3] = tanh(A[i] * 100.0)\n"
                   "  }\n}\n", &o);
}

LOOM_TEST(cpu, broadcast_and_symbolic_shapes) {
  cpu_diff_opts o = cpu_opts(small, 12, 1e-6);
  cpu_diff_program("prim @bc(A: Buffer[(n, m + 1), f32], b: Buffer[(m + 1,), f32], C: Buffer[(n, m + 1), f32],\n"
                   "         H: Buffer[(2 * n,), f32]) {\n"
                   "  for i in 0..n parallel { for j in 0..m + 1 vectorize { C[i, j] = A[i, j] + b[j] } }\n"
                   "  for k in 0..2 * n { H[k] = A[k // 2, 0] * f32(k % 2) }\n"
                   "}\n", &o);
}

LOOM_TEST(cpu, reductions_sum_and_max) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-4);
  cpu_diff_program("prim @red(A: Buffer[(n, m), f32], S: Buffer[(n,), f32], M: Buffer[(n,), f32]) {\n"
                   "  for i in 0..n parallel {\n"
                   "    S[i] = 0.0\n"
                   "    for k in 0..m reduce { S[i] = S[i] + A[i, k] }\n"
                   "    M[i] = -1.0e18\n"
                   "    for l in 0..m reduce { M[i] = max(M[i], A[i, l]) }\n"
                   "  }\n}\n", &o);
}

LOOM_TEST(cpu, integer_reductions_bit_exact) {
  cpu_diff_opts o = cpu_opts(medium, 10, 0);
  cpu_diff_program("prim @ired(A: Buffer[(n, m), i32], S: Buffer[(n,), i64], M: Buffer[(n,), i32]) {\n"
                   "  for i in 0..n {\n"
                   "    S[i] = 0i64\n"
                   "    for k in 0..m reduce { S[i] = S[i] + i64(A[i, k]) * i64(A[i, k]) }\n"
                   "    M[i] = -2147483648i32\n"
                   "    for l in 0..m reduce { M[i] = max(M[i], A[i, l] * 3i32 - 7i32) }\n"
                   "  }\n}\n", &o);
}

LOOM_TEST(cpu, softmax_multi_statement_with_locals) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
  cpu_diff_program("prim @softmax(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
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
  cpu_diff_opts o = cpu_opts(sz, 8, 1e-4);
  cpu_diff_program("prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
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
  cpu_diff_opts o = cpu_opts(sz, 4, 0);
  o.fill = fill_gather;
  cpu_diff_program("prim @gather(T: Buffer[(v, d), f32], I: Buffer[(n,), i64], Y: Buffer[(n, d), f32]) {\n"
                   "  for i in 0..n parallel { for j in 0..d vectorize { Y[i, j] = T[I[i], j] } }\n}\n", &o);
}

LOOM_TEST(cpu, lets_ifs_selects_casts_locals) {
  cpu_diff_opts o = cpu_opts(small, 12, 1e-6);
  cpu_diff_program("prim @p(X: Buffer[(n,), f32], Y: Buffer[(n,), i32], Z: Buffer[(n,), f64], W: Buffer[(n,), u8],\n"
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
  cpu_diff_opts o = cpu_opts(small, 12, 0);
  cpu_diff_program("prim @sat(X: Buffer[(n,), f32], A: Buffer[(n,), i8], B: Buffer[(n,), u16], C: Buffer[(n,), i32],\n"
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
  cpu_diff_opts o = cpu_opts(small, 12, 0);
  cpu_diff_program("prim @sat8(X: Buffer[(n,), f32], A: Buffer[(n,), u8], B: Buffer[(n,), i8], C: Buffer[(n,), i16],\n"
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
  cpu_diff_opts o = cpu_opts(small, 12, 0);
  cpu_diff_program("prim @nib(X: Buffer[(n,), f32], A: Buffer[(n,), i4], B: Buffer[(n,), u4], C: Buffer[(n,), i2],\n"
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
    cpu_diff_opts o = cpu_opts(small, 12, 0);
    cpu_diff_program(text, &o);
  }
}

/* e8m0 storage (2^(code-127), 0xff NaN): decoded by table (code 0 is the f32 subnormal 2^-127),
 * encoded from f32 bits (exponent, rounded "up", saturating); random bit patterns reach
 * subnormals, infinities and NaN without arithmetic on them. A store keeps e5m2's infinity
 * (an unsaturated cast's), which a cast saturates. Bit-exact to the interpreter. */
LOOM_TEST(cpu, e8m0_storage_and_e5m2_infinity_bit_exact) {
  cpu_diff_opts o = cpu_opts(small, 12, 0);
  cpu_diff_program("prim @e8(X: Buffer[(n,), f32], K: Buffer[(n,), i32], E: Buffer[(n,), f8e8m0], A: Buffer[(n,), f8e8m0],\n"
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
  cpu_diff_opts o = cpu_opts(medium, 10, 0);
  cpu_diff_program("prim @h(A: Buffer[(n,), f16], B: Buffer[(n,), bf16], C: Buffer[(n,), f16], D: Buffer[(n,), bf16],\n"
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
  cpu_diff_opts o = cpu_opts(medium, 10, 0);
  cpu_diff_program("prim @bc(A: Buffer[(n,), f32], B: Buffer[(n,), i32], C: Buffer[(n, 2), i32], D: Buffer[(n, 2), f32]) {\n"
                   "  for i in 0..n vectorize {\n"
                   "    C[i, 0] = bitcast(A[i], 0i32)\n"
                   "    C[i, 1] = bitcast(A[i] * 3.0 + 1.0, 0i32) + 1i32\n"
                   "    D[i, 0] = bitcast(floormod(B[i], 1000i32) + 1065353216i32, 0.0)\n"
                   "    D[i, 1] = f32(bitcast(i16(floormod(B[i], 1000i32)) + 15360i16, 0.0f16)) +\n"
                   "              f32(bitcast(i16(floormod(B[i], 1000i32)) + 16256i16, 0.0bf16))\n"
                   "  }\n}\n", &o);
  cpu_diff_program("prim @bc64(A: Buffer[(n,), f64], H: Buffer[(n,), f16], C: Buffer[(n, 2), i64], E: Buffer[(n,), i16]) {\n"
                   "  for i in 0..n {\n"
                   "    C[i, 0] = bitcast(A[i], 0i64)\n"
                   "    C[i, 1] = bitcast(bitcast(A[i], 0u64), 0i64)\n"
                   "    E[i] = bitcast(H[i], 0i16)\n"
                   "  }\n}\n", &o);
}

LOOM_TEST(cpu, local_buffer_of_symbolic_size_in_parallel_loop) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
  cpu_diff_program("prim @loc(X: Buffer[(n, m), f32], Y: Buffer[(n, m), f32]) {\n"
                   "  for i in 0..n parallel {\n"
                   "    alloc T: Local[(m,), f32]\n"
                   "    for j in 0..m { T[j] = X[i, j] * 2.0 }\n"
                   "    for k in 0..m { Y[i, k] = T[m - 1 - k] + T[k] }\n"
                   "  }\n}\n", &o);
}

LOOM_TEST(cpu, scalar_params_and_unroll) {
  cpu_diff_opts o = cpu_opts(small, 12, 1e-6);
  o.scalar = 5;
  cpu_diff_program("prim @sc(X: Buffer[(n, 4), f32], Y: Buffer[(n, 4), f32], s: i64) {\n"
                   "  for i in 0..n { for j in 0..4 unroll { Y[i, j] = X[i, j] * f32(s) + f32(j) } }\n}\n", &o);
}

/* ---- scheduled programs equal unscheduled ones -------------------------------------- */


LOOM_TEST(cpu, scheduled_split_vectorize_parallel_equals_unscheduled) {
  tp_fixture plain, sched;
  cpu_parse_ok(&plain, cpu_mm_text);
  cpu_parse_ok(&sched, cpu_mm_text);
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
  cpu_diff_opts d = cpu_opts(medium, 10, 0);
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

/* Parses `text` into fx and returns its unoptimized LLVM IR, held in sb (the caller frees sb). */
static const char *parse_emit_ir(tp_fixture *fx, const char *text, loom_strbuf *sb) {
  cpu_parse_ok(fx, text);
  loom_strbuf_init(sb, NULL);
  const loom_tp_func *fs[1] = {fx->f};
  cr_assert_null(loom_cpu_emit_ir(NULL, fx->cx, fs, 1, false, sb));
  return loom_strbuf_cstr(sb);
}

/* JIT-compiles fx's program and checks it against the interpreter: 24 random shapes from medium,
 * tolerance 1e-5, then frees fx. */
static void jit_diff_24(tp_fixture *fx, uint64_t seed) {
  loom_cpu_options o = {0};
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(&o, &jit));
  loom_kernel_fn fn = cpu_jit(jit, fx);
  cpu_diff_opts d = cpu_opts(medium, 10, 1e-5);
  d.trials = 24;
  cpu_diff(fx, fn, &d, seed);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(fx);
}

/* `if likely(c)`: the else branch is cold code -- its loops carry vectorize.enable false,
 * unroll.disable and interleave.count 1 (the then branch's loop keeps vectorize.enable true), the
 * branch is weighted -- and both branches compute what the interpreter does. */
LOOM_TEST(cpu, likely_if_makes_the_else_branch_cold_code_with_the_same_results) {
  static const char *text = "prim @lk(A: Buffer[(n,), f32], B: Buffer[(n,), f32]) {\n"
                            "  alloc S: Local[(1,), f32]\n"
                            "  for r in 0..n reduce { S[0] = S[0] + A[r] }\n"
                            "  if likely(S[0] < 0.0) {\n"
                            "    for j in 0..n vectorize { B[j] = A[j] * 2.0 }\n"
                            "  } else {\n"
                            "    for k in 0..n vectorize { B[k] = A[k] - S[0] }\n"
                            "  }\n}\n";
  tp_fixture fx;
  loom_strbuf sb;
  const char *ir = parse_emit_ir(&fx, text, &sb);
  cr_assert(strstr(ir, "!\"branch_weights\", i32 2000, i32 1}") != NULL, "%s", ir);
  cr_assert(strstr(ir, "!\"llvm.loop.unroll.disable\"}") != NULL, "%s", ir);
  cr_assert(strstr(ir, "!\"llvm.loop.interleave.count\", i32 1}") != NULL, "%s", ir);
  cr_assert(strstr(ir, "!\"llvm.loop.vectorize.enable\", i1 false}") != NULL, "%s", ir);
  cr_assert(strstr(ir, "!\"llvm.loop.vectorize.enable\", i1 true}") != NULL, "%s", ir);
  loom_strbuf_free(&sb);
  /* the sum is negative for about half of the random inputs: both branches run */
  jit_diff_24(&fx, 11);
}

/* A vector loop under a guard holding its extent below a small constant (the else branch of
 * `n >= 8`, a conjunct `m < 16` of a then branch's `&&`) is folded into masked vectors:
 * llvm.loop.vectorize.predicate.enable on those two loops and not on the long row's loop; all
 * three compute what the interpreter does (a SiLU each) at extents 0 to 129, 1 and 2 threads. */
LOOM_TEST(cpu, loops_a_guard_keeps_short_are_folded_into_masked_vectors) {
  static const char *text = "prim @sh(A: Buffer[(n,), f32], B: Buffer[(n,), f32], C: Buffer[(m,), f32], D: Buffer[(m,), f32]) {\n"
                            "  if n >= 8 {\n"
                            "    for i in 0..n vectorize { B[i] = A[i] * sigmoid(A[i]) }\n"
                            "  } else {\n"
                            "    for j in 0..n vectorize { B[j] = A[j] * sigmoid(A[j]) + 1.0 }\n"
                            "  }\n"
                            "  if m >= 1 && m < 16 {\n"
                            "    for k in 0..m vectorize { D[k] = C[k] * sigmoid(C[k]) }\n"
                            "  }\n}\n";
  tp_fixture fx;
  loom_strbuf sb;
  const char *ir = parse_emit_ir(&fx, text, &sb);
  int n = 0;
  for (const char *at = ir; (at = strstr(at, "!llvm.loop !")) != NULL; at++) n++;
  cr_assert_eq(n, 3, "%d loop latches, want 3\n%s", n, ir);
  const char *pe = "!\"llvm.loop.vectorize.predicate.enable\", i1 true}";
  const char *first = strstr(ir, pe);
  cr_assert(first != NULL, "no loop folded into masked vectors\n%s", ir);
  /* two loops carry it: their metadata nodes are distinct (self-referential), the property node shared */
  int uses = 0;
  char ref[32] = "";
  const char *bang = first;
  while (bang > ir && bang[-1] != '\n') bang--; /* the property's line: !N = !{!"llvm.loop...", i1 true} */
  cr_assert_eq(sscanf(bang, "!%30[0-9] =", ref + 1), 1, "%.80s", bang);
  ref[0] = '!';
  for (const char *at = ir; (at = strstr(at, ref)) != NULL; at++)
    if (!isdigit((unsigned char)at[strlen(ref)])) uses++;
  cr_assert_eq(uses, 3, "the predicate property %s is used by %d loops, want 2\n%s", ref, uses - 1, ir);
  loom_strbuf_free(&sb);
  jit_diff_24(&fx, 13);
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
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
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

/* Whether g is within n ulp (f32) of w, or within 2 * 2^-149 where w is subnormal; and how many
 * ulp apart they are. */
static bool f32_near(double g, double w, double n) { return fabs(g - w) <= fmax(n * fabs(w) * 1.1920929e-7, 2.0 * 1.4012985e-45); }
static double f32_ulps(double g, double w) { return fabs(g - w) / fmax(fabs(w) * 1.1920929e-7, 1.4012985e-45); }

/* sigmoid and SiLU (x * sigmoid(x), either operand order: one fused division) against the
 * double formula of the graph reference, x / (1 + exp(-x)), over [-190, 100] densely and at
 * the special values: within 2 ulp for normal results and 2 * 2^-149 for subnormal ones, NaN
 * where the formula gives NaN (NaN, and -inf for SiLU), +-inf where it does (SiLU of +inf). */
LOOM_TEST(cpu, sigmoid_and_silu_f32_accuracy_over_the_whole_range) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @s(X: Buffer[(n,), f32], S: Buffer[(n,), f32], Y: Buffer[(n,), f32], Z: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n vectorize {\n"
                    "    S[i] = sigmoid(X[i])\n"
                    "    Y[i] = X[i] * sigmoid(X[i])\n"
                    "    Z[i] = sigmoid(X[i]) * X[i]\n"
                    "  }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  static const float special[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f, 1.4e-45f, -1.4e-45f,
                                  1e30f, -1e30f, 3.4e38f, -3.4e38f, -87.3f, -88.8f, -95.0f, -103.9f, -104.1f,
                                  -110.0f, -175.9f, -176.0f, -176.1f, -300.0f, 16.7f, 88.8f, 1e-8f, -1e-8f};
  enum { NS = sizeof special / sizeof special[0], N = NS + 40001 };
  float *X = malloc(N * 4), *S = malloc(N * 4), *Y = malloc(N * 4), *Z = malloc(N * 4);
  memcpy(X, special, sizeof special);
  for (int i = NS; i < N; i++) X[i] = -190.0f + 290.0f * (float)(i - NS) / (N - NS - 1);
  int64_t shape[1] = {N};
  loom_tp_arg args[4] = {{X, shape, 0}, {S, shape, 0}, {Y, shape, 0}, {Z, shape, 0}};
  cpu_ctx c;
  cpu_ctx_init(&c, 1);
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 4, &c), 0);
  for (int i = 0; i < N; i++) {
    double x = X[i], e = exp(-x);
    double want[2] = {(float)(1.0 / (1.0 + e)), (float)(x / (1.0 + e))};
    float got[3] = {S[i], Y[i], Z[i]};
    for (int k = 0; k < 3; k++) {
      double w = want[k > 0], g = got[k];
      const char *what = k ? "silu" : "sigmoid";
      if (isnan(w) || isinf(w)) {
        cr_assert((isnan(w) && isnan(g)) || w == g, "%s(%.9g) = %.9g, want %.9g", what, x, g, w);
        continue;
      }
      cr_assert(f32_near(g, w, 2), "%s(%.9g) = %.9g, want %.9g (%.2g ulp)", what, x, g, w, f32_ulps(g, w));
    }
  }
  free(X);
  free(S);
  free(Y);
  free(Z);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* m * sigmoid(x) with m another value (GELU's tanh form, x * sigmoid(2u), legalizes so: one fused
 * division, either operand order) against m / (1 + exp(-x)) in double, over [-190, 100] with m
 * varied and at the special values of both: within 3 ulp (2 * 2^-149 for subnormal results), NaN
 * where the formula gives NaN (a NaN x or m, inf * 0), +-inf and +-0 where it does -- but below
 * x = -176, where sigmoid(x) is 0 in f32 (cg_sigmoid_f32's clamp), it is m * 0 (NaN for an infinite
 * m, +-0 else, where the double formula has a tiny value for |m| above 2^105), as f32's m * sigmoid(x). */
LOOM_TEST(cpu, a_product_with_a_sigmoid_is_one_division_over_the_whole_range) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @s(X: Buffer[(n,), f32], M: Buffer[(n,), f32], Y: Buffer[(n,), f32], Z: Buffer[(n,), f32]) {\n"
                    "  for i in 0..n vectorize {\n"
                    "    Y[i] = M[i] * sigmoid(X[i])\n"
                    "    Z[i] = sigmoid(X[i]) * M[i]\n"
                    "  }\n}\n");
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  static const float sx[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -88.8f, -104.1f, -176.1f, -300.0f, 16.7f, 3.0f, -3.0f, 2.0f};
  static const float sm[] = {1.0f, NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-30f, 3.4e38f, -2.5f, 1e20f, NAN, INFINITY, -INFINITY};
  enum { NS = sizeof sx / sizeof sx[0], NX = 40001, N = NS * NS + NX };
  float *X = malloc(N * 4), *M = malloc(N * 4), *Y = malloc(N * 4), *Z = malloc(N * 4);
  for (int i = 0; i < NS * NS; i++) X[i] = sx[i / NS], M[i] = sm[i % NS]; /* every pair of special values */
  for (int i = 0; i < NX; i++) {
    X[NS * NS + i] = -190.0f + 290.0f * (float)i / (NX - 1);
    M[NS * NS + i] = (float)(((i * 37) % 201) - 100) * 0.37f + 0.01f;
  }
  int64_t shape[1] = {N};
  loom_tp_arg args[4] = {{X, shape, 0}, {M, shape, 0}, {Y, shape, 0}, {Z, shape, 0}};
  cpu_ctx c;
  cpu_ctx_init(&c, 1);
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 4, &c), 0);
  for (int i = 0; i < N; i++) {
    double x = X[i], m = M[i], w = (float)(m / (1.0 + exp(-x)));
    float got[2] = {Y[i], Z[i]};
    if (x < -176.0) w = m * 0.0;
    for (int k = 0; k < 2; k++) {
      double g = got[k];
      if (isnan(w) || isinf(w) || w == 0) {
        cr_assert((isnan(w) && isnan(g)) || (w == g && signbit(w) == signbit(g)), "%.9g * sigmoid(%.9g) = %.9g, want %.9g", m, x, g, w);
        continue;
      }
      cr_assert(f32_near(g, w, 3), "%.9g * sigmoid(%.9g) = %.9g, want %.9g (%.2g ulp)", m, x, g, w, f32_ulps(g, w));
    }
  }
  free(X);
  free(M);
  free(Y);
  free(Z);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* ---- lane mode (explicit vector code) ------------------------------------------------- */

LOOM_TEST(cpu, register_tiled_matmul_with_symbolic_tails) {
  static const int64_t sz[] = {0, 1, 5, 6, 7, 13, 31, 32, 33, 65, 70};
  cpu_diff_opts o = cpu_opts(sz, 11, 1e-4);
  o.trials = 10;
  cpu_diff_program(loom_tp_cpu_matmul_tiled_text(), &o);
}

LOOM_TEST(cpu, lane_mode_lets_selects_casts_and_uniform_loads) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-5);
  cpu_diff_program("prim @lm(X: Buffer[(n, 16), f32], Y: Buffer[(n, 16), f32], I: Buffer[(n, 8), i32], J: Buffer[(n, 8), f64],\n"
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
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-6);
  cpu_diff_program("prim @sl(X: Buffer[(n, 23), f32], Y: Buffer[(n, 8), f32], Z: Buffer[(n, 64), f32], W: Buffer[(n, 16), f32],\n"
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
  cpu_diff_opts o = cpu_opts(small, 12, 1e-6);
  cpu_diff_program("prim @rec(A: Buffer[(n, 9), f32], X: Buffer[(n, 9), f32]) {\n"
                   "  for i in 0..n { for j in 0..8 vectorize { A[i, j + 1] = A[i, j] + X[i, j] } }\n}\n", &o);
}


/* cg_transpose.c: the square tile of a transposing copy (8 x 8 f32 at a symbolic batch and
 * offsets, 16 x 16 u8, 4 x 4 f64 along a symbolic extent) runs as vector loads, shuffles and
 * vector stores with the interpreter's results; a tile that is not square and a copy with an
 * operator are left to the other paths, with the same results. */
LOOM_TEST(cpu, square_transposing_copy_is_an_in_register_transpose) {
  cpu_diff_opts o = cpu_opts(medium, 10, 0);
  cpu_diff_program("prim @tt(X: Buffer[(n, 16, 24), f32], Y: Buffer[(n, 24, 16), f32], P: Buffer[(n, 16, 16), u8],\n"
                   "         Q: Buffer[(n, 16, 16), u8], R: Buffer[(4*m + 4, 4), f64], S: Buffer[(4, 4*m + 4), f64],\n"
                   "         Z: Buffer[(8, 8), f32], W: Buffer[(8, 8), f32]) {\n"
                   "  for i in 0..n {\n"
                   "    for t in 0..3 { for a in 0..8 unroll { for v in 0..8 vectorize { Y[i, 8*t + a, v + 8] = X[i, v + 8, 8*t + a] } } }\n"
                   "    for a in 0..16 unroll { for v in 0..16 vectorize { Q[i, a, v] = P[i, v, a] } }\n"
                   "  }\n"
                   "  for q in 0..m { for a in 0..4 unroll { for v in 0..4 vectorize { S[a, 4*q + v + 4] = R[4*q + v, a] } } }\n"
                   "  for a in 0..4 unroll { for v in 0..8 vectorize { W[a, v] = Z[v, a + 4] } }\n"
                   "  for a in 0..8 unroll { for v in 0..8 vectorize { W[a, v] = Z[v, a] * 2.0 } }\n"
                   "}\n", &o);
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @tt2(X: Buffer[(n, 8), f32], Y: Buffer[(8, n), f32]) {\n"
                    "  for t in 0..floordiv(n, 8) { for a in 0..8 unroll { for v in 0..8 vectorize { Y[a, 8*t + v] = X[8*t + v, a] } } }\n"
                    "}\n");
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const loom_tp_func *fs[1] = {fx.f};
  cr_assert_null(loom_cpu_emit_ir(NULL, fx.cx, fs, 1, false, &sb));
  const char *ir = loom_strbuf_cstr(&sb);
  cr_assert(strstr(ir, "load <8 x float>") != NULL && strstr(ir, "shufflevector <8 x float>") != NULL &&
            strstr(ir, "store <8 x float>") != NULL, "%s", ir);
  cr_assert(strstr(ir, "llvm.loop.vectorize.enable") == NULL, "%s", ir);
  loom_strbuf_free(&sb);
  tp_fixture_free(&fx);
}


/* A division of loop-invariant values read only under a condition, in a reduction LLVM
 * vectorises with masked loads: LLVM 19 computed it for the first lane, under the first
 * lane's condition, and used it for every lane's address (the padded convolution of
 * issue 27). Symbolic divisions are now hoisted (cg_expr.c); loops that still divide under a
 * condition (here a value-level division in an index) are not auto-vectorised. */
LOOM_TEST(cpu, invariant_division_under_a_condition_in_a_vectorised_loop) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-4);
  /* the generated convolution's form, its input channels equal to a group's */
  cpu_diff_program("prim @cdiv(X: Buffer[(n, cg, h0), f32], W: Buffer[(o, cg, k0), f32], Y: Buffer[(n, o, y0), f32]) {\n"
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
  cpu_diff_program("prim @nested(X: Buffer[(n, m), f32], Y: Buffer[(n, q), f32]) {\n"
                   "  for i in 0..n parallel {\n"
                   "    for j in 0..q {\n"
                   "      Y[i, j] = X[floordiv(i, floordiv(q, 2) + 1), floormod(j, floordiv(m, 3) + 1)]\n"
                   "    }\n"
                   "  }\n"
                   "}\n", &o);
  /* a value-level division in an index, under a condition: the loop is left scalar */
  cpu_diff_program("prim @vdiv(X: Buffer[(n, m), f32], Y: Buffer[(n, q), f32]) {\n"
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

/* A select whose sides load only what its condition loads, or scalars (rank-0 buffers: always
 * in bounds), evaluates both sides with no branch (cg_speculate.c: LeakyRelu's select(x < 0,
 * x * alpha, x), whose branches LLVM had turned into a masked gather of alpha per vector); a side
 * loading anything else still runs only when taken (a padded read out of bounds otherwise, which
 * ASan reports). Equal to the interpreter either way. */
LOOM_TEST(cpu, select_speculates_only_loads_its_condition_makes) {
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-6);
  const char *leaky = "prim @leaky(X: Buffer[(n, m), f32], A: Buffer[(), f32], B: Buffer[(), f32], Y: Buffer[(n, m), f32]) {\n"
                      "  for i in 0..n { for j in 0..m { Y[i, j] = select(X[i, j] < A[], X[i, j] * B[], X[i, j]) } }\n}\n";
  const char *guard = "prim @guard(X: Buffer[(n, m), f32], Y: Buffer[(n, m + 1), f32]) {\n"
                      "  for i in 0..n { for j in 0..m + 1 { Y[i, j] = select(j >= 1 && X[i, 0] > 0.0, X[i, j - 1] * 2.0, 0.0) } }\n}\n";
  cpu_diff_program(leaky, &o);
  cpu_diff_program(guard, &o);
  static const char *const texts[2] = {"leaky", "guard"};
  for (int k = 0; k < 2; k++) {
    tp_fixture fx;
    cpu_parse_ok(&fx, k == 0 ? leaky : guard);
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    const loom_tp_func *fs[1] = {fx.f};
    cr_assert_null(loom_cpu_emit_ir(NULL, fx.cx, fs, 1, false, &sb));
    bool branches = strstr(loom_strbuf_cstr(&sb), "sel.then") != NULL;
    cr_assert(branches == (k == 1), "@%s: %s\n%s", texts[k], branches ? "branches" : "no branch", loom_strbuf_cstr(&sb));
    loom_strbuf_free(&sb);
    tp_fixture_free(&fx);
  }
}

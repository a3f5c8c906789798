/* test_cpu_dot.c — the int8 dot products of the tensor-program IR (tp_ops.def): dot2 on i16
 * pair words (vpmaddwd), dot4 on byte quads (vpdpbusd with AVX512-VNNI, plain arithmetic
 * elsewhere) and dot4s, dot4 under its operands' promise that each byte pair's products sum
 * within i16 (AVX2's saturating vpmaddubsw, then vpmaddwd by ones): scalar and in lanes, on the
 * host's JIT and on a machine without AVX-512, against the interpreter and at their bounds. */
#include <stdio.h>
#include <string.h>

#include "cpu_test_util.h"

/* Runs `op`(a, b) of two i32 literals as a 16-lane accumulate, C[j] = C[j] + op(a, b) from
 * C[j] = 1000 j, and as a scalar D[0] = op(a, b), JIT-compiled for the host (opt NULL) or for
 * `opt`; both must give `want`. */
static void check_lanes_and_scalar(const char *op, int32_t a, int32_t b, const loom_cpu_options *opt, int32_t want) {
  char text[512];
  snprintf(text, sizeof text,
           "prim @k(C: Buffer[(16,), i32], D: Buffer[(1,), i32]) {\n"
           "  for j in 0..16 vectorize { C[j] = C[j] + %s(%di32, %di32) }\n"
           "  D[0] = %s(%di32, %di32)\n"
           "}\n", op, (int)a, (int)b, op, (int)a, (int)b);
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(opt, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int32_t c[16], d[1] = {0};
  for (int j = 0; j < 16; j++) c[j] = 1000 * j;
  int64_t nc[1] = {16}, nd[1] = {1};
  loom_tp_arg args[2] = {{c, nc, 0}, {d, nd, 0}};
  cpu_ctx ctx;
  cpu_ctx_init(&ctx, 1);
  cr_assert_eq(cpu_call(fx.cx, fx.f, fn, args, 2, &ctx), 0);
  cpu_ctx_fini(&ctx);
  const char *where = opt ? opt->features : "host";
  cr_assert_eq(d[0], want, "%s(%#x, %#x) scalar (%s): %d, want %d", op, (unsigned)a, (unsigned)b, where, d[0], want);
  for (int j = 0; j < 16; j++)
    cr_assert_eq(c[j], 1000 * j + want, "%s(%#x, %#x) lane %d (%s): %d, want %d", op, (unsigned)a, (unsigned)b, j, where, c[j],
                 1000 * j + want);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

/* `op`(A, B) accumulated into C in lanes and written to D as a scalar, against the interpreter at
 * row counts 1, 3, 8, 16, 19 (cpu_fill's words). */
static void diff_accumulate(const char *op) {
  static const int64_t sz[] = {1, 3, 8, 16, 19};
  cpu_diff_opts o = cpu_opts(sz, 5, 0);
  char text[512];
  snprintf(text, sizeof text,
           "prim @d(A: Buffer[(n, 16), i32], B: Buffer[(n, 16), i32], C: Buffer[(n, 16), i32], D: Buffer[(n,), i32]) {\n"
           "  for i in 0..n {\n"
           "    for j in 0..16 vectorize { C[i, j] = C[i, j] + %s(A[i, j], B[i, j]) }\n"
           "    D[i] = %s(A[i, 0], B[i, 1])\n"
           "  }\n}\n", op, op);
  cpu_diff_program(text, &o);
}

static const loom_cpu_options avx2_only = {.features = "+avx2,+fma,-avx512f"};

/* dot4's value: unsigned bytes of a times signed bytes of b, in lanes and scalar, on the host's
 * JIT (vpdpbusd where it has AVX512-VNNI, with the accumulator added by the instruction) and on
 * one without AVX-512 (plain arithmetic). */
LOOM_TEST(cpu, dot4_multiplies_unsigned_by_signed_bytes_scalar_and_in_lanes) {
  diff_accumulate("dot4");
  /* a = 0xFF7F8001: unsigned bytes (1, 128, 127, 255); b = 0x81010101: signed bytes (1, 1, 1, -127) */
  for (int k = 0; k < 2; k++) check_lanes_and_scalar("dot4", -8421375, -2130640639, k ? NULL : &avx2_only, 1 + 128 + 127 - 255 * 127);
}

/* dot4s's value where each byte pair's products reach the i16 bound exactly (its operands' promise:
 * 255 * (64 + 64) = 32640, 255 * (127 + 1), 255 * (-128 + 0), 255 * (127 - 128)), in lanes and
 * scalar, on a machine with AVX2 and no AVX-512 (vpmaddubsw, whose pair sums saturate, and
 * vpmaddwd by ones) and on the host's JIT: the exact sums, as the interpreter's. */
LOOM_TEST(cpu, dot4s_sums_byte_pairs_at_the_i16_bound_exactly) {
  diff_accumulate("dot4s"); /* cpu_fill's words: bytes within [-50, 50] and 0 / -1: within the bound */
  /* a = -1: unsigned bytes (255, 255, 255, 255); b bytes (low first), as i32 words */
  static const struct { int32_t b; int32_t want; } cases[] = {
      {0x40404040, 255 * 128 * 2},                      /* (64, 64, 64, 64) */
      {(int32_t)0xC0C0C0C0u, -255 * 128 * 2},           /* (-64, -64, -64, -64) */
      {0x0080017F, 255 * 128 - 255 * 128},             /* (127, 1, -128, 0) */
      {(int32_t)0x807F807Fu, -255 - 255},              /* (127, -128, 127, -128) */
  };
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++)
    for (int k = 0; k < 2; k++) check_lanes_and_scalar("dot4s", -1, cases[ci].b, k ? NULL : &avx2_only, cases[ci].want);
}

LOOM_TEST(cpu, dot2_multiplies_signed_halves_scalar_and_in_lanes) {
  static const int64_t sz[] = {1, 3, 8, 16, 19};
  cpu_diff_opts o = cpu_opts(sz, 5, 0);
  cpu_diff_program("prim @d2(A: Buffer[(n, 16), i32], B: Buffer[(n, 16), i32], C: Buffer[(n, 16), i32], D: Buffer[(n,), i32]) {\n"
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

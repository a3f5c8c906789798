/* test_tp_fuzz.c — the tensor-program parser, verifier and printer never crash on
 * mutants of valid programs (bounded run; LOOM_FUZZ_SECONDS for longer). */
#include <stdlib.h>
#include <string.h>

#include "support/loom_fuzz.h"
#include "tp_test_util.h"

static const char *const seeds[] = {
    ("prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m parallel { for j in 0..n { C[i, j] = 0.0\n"
    "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] } } }\n}\n"),
    ("prim @mixed(X: Buffer[(n,), f16], Y: Buffer[(2*n + 1,), i32], Z: Buffer[(n,), f16], s: i64) {\n"
    "  alloc T: Local[(4,), f16]\n  for i in 0..n {\n    let t: f16 = X[i] * 2.0f16 - -1.5f16\n"
    "    if i < s && Y[i] >= 3i32 { Z[i] = select(Y[i] == 0i32, t, exp(t)) } else { Z[i] = f16(Y[i]) / (t + 1.0f16) }\n"
    "  }\n}\n"),
    ("prim @g(D: Buffer[(v, d), f32], I: Buffer[(n,), i64], O: Buffer[(n, d), f32]) {\n"
    "  for i in 0..floordiv(n + 3, 4) { for j in 0..min(d, 8) vectorize { O[i, j] = D[I[i], j] } }\n}\n"),
};

/* Tokens of the tensor-program text, inserted as mutations. */
static const char *const dict[] = {"for ", " in 0..", " parallel", " vectorize", " reduce", "let ", ": f32 = ", "if ", " else ",
                                   "alloc ", "Local[(4,), f32]", "Buffer[(n,), f32]", "[", "]", "(", ")", "{", "}", ",",
                                   " = ", " + ", " * ", " // ", " % ", "floordiv(", "select(", "exp(", "f16(", "1.5f16",
                                   "-inf", "nan", "true", "3i32", "99999999999999999999", "\n"};

void loom_fuzz_tp_parse_one(const uint8_t *data, size_t size); /* tests/fuzz/fuzz_tp_harness.c */

static void target(const uint8_t *data, size_t len, void *ud) {
  (void)ud;
  loom_fuzz_tp_parse_one(data, len);
}

LOOM_TEST(tp_fuzz, parser_survives_mutants) {
  const uint8_t *in[3];
  size_t lens[3];
  for (int i = 0; i < 3; i++) {
    in[i] = (const uint8_t *)seeds[i];
    lens[i] = strlen(seeds[i]);
  }
  loom_fuzz_opts o = {.max_iterations = 20000, .max_seconds = 4.0, .dict = dict, .ndict = sizeof dict / sizeof dict[0]};
  size_t runs = loom_fuzz_run(&o, in, lens, 3, target, NULL);
  cr_assert_geq(runs, 100, "only %zu inputs ran", runs);
  cr_log_info("tensor-program parser fuzz: %zu inputs", runs);
}

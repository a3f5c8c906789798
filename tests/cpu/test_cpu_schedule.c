/* test_cpu_schedule.c — the default CPU schedule rules (tensorprog/schedule_cpu.c,
 * schedule_matmul.c): each scheduled program compiled and compared with the interpreter's run
 * of the unscheduled program, on random shapes with 0, 1, primes and sizes around the tiles,
 * for AVX-512, AVX2 and 16-byte vectors; and the `why` each rule gives. */
#include <stdlib.h>
#include <string.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_rewrite.h"
#include "tensorprog/tp_schedule_cpu.h"

static const int64_t medium[] = {0, 1, 3, 7, 16, 17, 31, 64, 97, 129};



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
  cpu_diff_opts o = cpu_opts(medium, 10, 1e-4);
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
  cpu_diff_opts om = cpu_opts(sz, 8, 1e-4);
  schedule_and_diff(cpu_mm_text, "register-tiled", &om);
}

/* Rule 0a: an (n, c, h, w) elementwise nest whose two innermost loops index every buffer as its
 * last two axes runs each h x w plane as one vector loop (a 7 x 7 plane's rows of 7 ran scalar);
 * an operand broadcast along w alone (indexed by w but not h) keeps the loops apart. */
LOOM_TEST(cpu, schedule_rule_fuses_the_rows_of_a_plane) {
  static const int64_t sz[] = {0, 1, 2, 3, 7, 13, 14, 17, 31};
  cpu_diff_opts o = cpu_opts(sz, 9, 1e-5);
  const char *plane =
      "prim @silu_se(X: Buffer[(n, c, h, w), f32], S: Buffer[(n, c, 1, 1), f32], Y: Buffer[(n, c, h, w), f32]) {\n"
      "  for i0 in 0..n parallel { for i1 in 0..c { for i2 in 0..h { for i3 in 0..w {\n"
      "    Y[i0, i1, i2, i3] = X[i0, i1, i2, i3] * sigmoid(X[i0, i1, i2, i3]) * S[i0, i1, 0, 0]\n"
      "  } } } }\n}\n";
  schedule_for_and_diff(plane, 64, "loops i2, i3: fused (the rows of a plane are one index)|loops i0, i1: fused", &o);
  schedule_for_and_diff(plane, 32, "loops i2, i3: fused (the rows of a plane are one index)", &o);
  const char *bias_w =
      "prim @bias_w(X: Buffer[(n, c, h, w), f32], B: Buffer[(w,), f32], Y: Buffer[(n, c, h, w), f32]) {\n"
      "  for i0 in 0..n { for i1 in 0..c { for i2 in 0..h { for i3 in 0..w {\n"
      "    Y[i0, i1, i2, i3] = X[i0, i1, i2, i3] + B[i3]\n"
      "  } } } }\n}\n";
  schedule_for_and_diff(bias_w, 64, "loop i3: vectorize", &o);
  tp_fixture fx;
  cpu_parse_ok(&fx, bias_w);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_tp_cpu_params params = {.vector_bytes = 64};
  cr_assert_null(loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &why));
  cr_assert(strstr(loom_strbuf_cstr(&why), "rows of a plane") == NULL, "fused a broadcast along w:\n%s",
            loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
}

/* The default rule on the programs legalization generates for matmul, batched matmul and
 * linear: register-tiled (panels of two vectors, then 8 (4) and 1 columns, 6-row tiles, packed
 * B) for AVX-512, AVX2 and 16-byte vectors, equal to the interpreter for every extent incl. 0,
 * 1, primes and non-multiples of 6/16/32. */
typedef cpu_gen_fn gen_fn;

/* in_place_at: the vector width (bytes) at which B is read in place (a program whose B is laid
 * out in panels of that many halves), else 0. */
static void generated_schedule_and_diff_at(gen_fn gen, int in_place_at) {
  char *text = cpu_generated_text(gen);
  static const int64_t sz[] = {0, 1, 2, 3, 5, 6, 7, 13, 17, 31, 33, 37};
  cpu_diff_opts o = cpu_opts(sz, 12, 1e-4);
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
static loom_status gen_mm_packed32(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_packed_b(a, cx, "mmp32", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, 32, false, out);
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
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qr", LOOM_DTYPE_I8, 3, 1, 16, true, 0, false, out);
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
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8q", LOOM_DTYPE_U8, 2, 0, 16, false, 0, false, out);
}
static loom_status gen_mm_int8_quads3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8q3", LOOM_DTYPE_I8, 3, 1, 32, false, 0, false, out);
}

/* u8 A with a constant k (a multiple of 4) read in place as quads: no A4 (gen_nn.c kwhole) */
static loom_status gen_mm_int8_quads_in_place(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qa", LOOM_DTYPE_U8, 2, 0, 16, false, 36, false, out);
}
static loom_status gen_mm_int8_quads_in_place3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qa3", LOOM_DTYPE_U8, 3, 1, 32, false, 8, false, out);
}

/* dot4s (byte pairs within i16: vpmaddubsw on AVX2), A in place and in A4 */
static loom_status gen_mm_int8_quads_pairs(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qs", LOOM_DTYPE_U8, 2, 0, 16, false, 36, true, out);
}
static loom_status gen_mm_int8_quads_pairs3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_matmul_integer_quads(a, cx, "mmi8qs3", LOOM_DTYPE_I8, 3, 1, 32, true, 0, true, out);
}

static loom_status gen_pad_runtime(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_pad(a, cx, "padr", LOOM_DTYPE_F32, 3, "0.0", true, -1, out);
}

static loom_status gen_linear_bias(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_linear(a, cx, "lin_b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 2, true, out);
}
static loom_status gen_linear3(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  return loom_tp_gen_linear(a, cx, "lin3", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, false, out);
}

/* Rule 0b: a transposing copy (the innermost loop writes with unit stride and reads across the
 * rows of an input) runs in strips of 8 along the input's last axis, innermost; the rows left
 * over (sizes not a multiple of 8) run as they were. A plain copy gets square tiles of one
 * vector a side (16 x 16 f32 with AVX-512, 8 x 8 with AVX2, 4 x 4 with 16 bytes; above 8 only
 * where a tile row is a whole line), transposed in registers by the code generator
 * (cg_transpose.c), its columns and rows left over in strips. A permutation that keeps the last axis is left alone. */
LOOM_TEST(cpu, schedule_rule_strip_mines_a_transposing_copy) {
  static const int64_t sz[] = {0, 1, 3, 7, 8, 9, 16, 17, 31, 40, 47, 64};
  cpu_diff_opts o = cpu_opts(sz, 12, 0);
  static const struct {
    int vector_bytes;
    const char *dtype, *why;
  } square[] = {
    {64, "f32", "square tiles of 16 x 16"}, {32, "f32", "square tiles of 8 x 8"}, {16, "f32", "square tiles of 4 x 4"},
    {64, "u8", "square tiles of 8 x 8"},    {32, "u8", "square tiles of 8 x 8"},   {16, "i16", "square tiles of 8 x 8"},
    {64, "f64", "square tiles of 8 x 8"},   {32, "f64", "square tiles of 4 x 4"},  {16, "f64", "strips of 8"},
    {32, "f16", "square tiles of 8 x 8"},   {32, "bool", "square tiles of 8 x 8"},  {64, "f16", "square tiles of 8 x 8"},
  };
  for (size_t k = 0; k < sizeof square / sizeof *square; k++) {
    char text[256], why[96];
    snprintf(text, sizeof text,
             "prim @t10(X: Buffer[(m, n), %s], Y: Buffer[(n, m), %s]) {\n"
             "  for i0 in 0..n { for i1 in 0..m { Y[i0, i1] = X[i1, i0] } }\n}\n",
             square[k].dtype, square[k].dtype);
    snprintf(why, sizeof why, "i0%s: transposed copy, %s", strstr(square[k].why, "strips") ? "" : ", i1", square[k].why);
    schedule_for_and_diff(text, square[k].vector_bytes, why, &o);
  }
  /* an extent of exactly one tile: the split refuses, the nest stays as it was */
  schedule_for_and_diff("prim @t8(X: Buffer[(m, 8), f32], Y: Buffer[(8, m), f32]) {\n"
                        "  for i0 in 0..8 { for i1 in 0..m { Y[i0, i1] = X[i1, i0] } }\n}\n",
                        32, "loops i0, i1: transposed copy, tiling stopped", &o);
  schedule_and_diff("prim @t021(X: Buffer[(b, m, n), f32], Y: Buffer[(b, n, m), f32]) {\n"
                    "  for i0 in 0..b { for i1 in 0..n { for i2 in 0..m { Y[i0, i1, i2] = X[i0, i2, i1] } } }\n}\n",
                    "loops i1, i2: transposed copy, square tiles|loops i1_o, i0: fused", &o);
  schedule_for_and_diff("prim @t0312(X: Buffer[(b, h, w, c), f32], Y: Buffer[(b, c, h, w), f32]) {\n"
                        "  for i0 in 0..b { for i1 in 0..c { for i2 in 0..h { for i3 in 0..w {\n"
                        "    Y[i0, i1, i2, i3] = X[i0, i2, i3, i1] } } } }\n}\n",
                        32, "loops i1, i3: transposed copy, square tiles of 8 x 8", &o);
  /* an elementwise op with one transposed operand, in f64 */
  schedule_and_diff("prim @add_t(X: Buffer[(m, n), f64], Z: Buffer[(n, m), f64], Y: Buffer[(n, m), f64]) {\n"
                    "  for i0 in 0..n { for i1 in 0..m { Y[i0, i1] = Z[i0, i1] + 2.0 * X[i1, i0] } }\n}\n",
                    "loop i0: transposed copy, strips of 8", &o);
  /* (0, 2, 1, 3): the last axis stays last, nothing strided in the innermost loop */
  schedule_and_diff("prim @t0213(X: Buffer[(b, h, s, d), f32], Y: Buffer[(b, s, h, d), f32]) {\n"
                    "  for i0 in 0..b { for i1 in 0..s { for i2 in 0..h { for i3 in 0..d {\n"
                    "    Y[i0, i1, i2, i3] = X[i0, i2, i1, i3] } } } }\n}\n",
                    "loop i3: vectorize", &o);
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @k(X: Buffer[(b, h, s, d), f32], Y: Buffer[(b, s, h, d), f32]) {\n"
                    "  for i0 in 0..b { for i1 in 0..s { for i2 in 0..h { for i3 in 0..d {\n"
                    "    Y[i0, i1, i2, i3] = X[i0, i2, i1, i3] } } } }\n}\n");
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  cr_assert_null(loom_tp_schedule_cpu(&fx.arena, fx.cx, fx.f, &why));
  cr_assert_null(strstr(loom_strbuf_cstr(&why), "transposed copy"), "%s", loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_matmul) { generated_schedule_and_diff(gen_mm22); }

/* The rows of the tall-tile trials: every count from 0 to 16 (below 6 the few-rows variant;
 * 7..11 one clamped 12-row tile repeating the last row), then remainders of 12 around the 6-row
 * tail (13, 17, 18, 19, 23: one more clamped tile overlapping the previous one), primes, and
 * a few hundred rows (many tiles, each clamping only its rows 6..11). */
static const int64_t tall_m[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 23, 24, 25, 29, 31, 37, 167, 169, 500};

/* m per trial from tall_m (k and n random: 1, primes, around the 32-column panels). */
static void bind_tall(const loom_tp_func *f, loom_sym_env *env, int trial) {
  for (size_t j = 0; j < f->nsyms; j++)
    if (!strcmp(loom_sym_var_name(f->syms[j]), "m"))
      cr_assert_null(loom_sym_env_set(env, f->syms[j], tall_m[trial % (int)LOOM_ARRAY_LEN(tall_m)]));
}

/* The row tiles: 12 rows with AVX-512's 32 registers (a remainder of 7..11 rows one more
 * 12-row tile ending at the last row, or repeating it below 12 rows; of 1..6 one 6-row tile
 * ending at the last row), 6 with AVX2's 16; equal to the interpreter at every row count to
 * 16 and around the tiles, with B packed and B laid out in panels, 1 and 2 threads. */
LOOM_TEST(cpu, schedule_rule_tall_row_tiles_with_avx512_only) {
  static const int64_t sz[] = {1, 3, 7, 16, 31, 32, 33, 65};
  cpu_diff_opts o = cpu_opts(sz, 8, 1e-4);
  o.trials = (int)LOOM_ARRAY_LEN(tall_m);
  o.bind = bind_tall;
  char *text = cpu_generated_text(gen_mm22);
  schedule_for_and_diff(text, 64, "12x32 register tiles (a remainder above 6 rows: one more", &o);
  schedule_for_and_diff(text, 32, "6x16 register tiles (a remainder above 2 rows: one more|one 2x16 tile ending at the last row", &o);
  free(text);
  /* B laid out in panels of 32 (read in place, prefetched): the Linear weights of a model */
  text = cpu_generated_text(gen_mm_packed32);
  schedule_for_and_diff(text, 64, "12x32 register tiles (a remainder above 6 rows: one more|B laid out in panels", &o);
  free(text);
}

/* Schedules `text` for AVX-512 and asserts the explanation does not mention `absent`. */
static void why_lacks(const char *text, const char *absent) {
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_tp_cpu_params params = {.vector_bytes = 64};
  cr_assert_null(loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &why));
  cr_assert(strstr(loom_strbuf_cstr(&why), absent) == NULL, "'%s' in why:\n%s", absent, loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
}

/* linear(x, W) on a W read as [j, r] (not laid out in panels: a graph input, a tied
 * embedding): with r >= 256 and fewer than 64 rows, 4x4 tiles of dot products over r (2x4 with
 * AVX2), the row and column tails one by one; else the general path. Rows 0..7, around the
 * tiles and the 64-row bound; k below, at and above 256 (a symbol: the variant's guard) and a
 * constant k; 1 and 2 threads (cpu_diff). The row tiles prefetch the next column tile's rows
 * (prefetch_l2, clamped to the last column: the interpreter bounds-checks the index). Fewer rows
 * than a tile (a symbol: the variant m < 4; or a constant) run one by one in tiles of 1 x 16
 * columns (AVX2: fewer than 2 rows, 1 x 8). */
static const int64_t dot_m[] = {0, 1, 2, 3, 4, 5, 6, 7, 13, 16, 17, 63, 64, 65};
static const int64_t dot_k[] = {1, 255, 256, 257, 300, 515};

static void bind_dot(const loom_tp_func *f, loom_sym_env *env, int trial) {
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *name = loom_sym_var_name(f->syms[j]);
    if (!strcmp(name, "m")) cr_assert_null(loom_sym_env_set(env, f->syms[j], dot_m[trial % (int)LOOM_ARRAY_LEN(dot_m)]));
    if (!strcmp(name, "k"))
      cr_assert_null(loom_sym_env_set(env, f->syms[j], dot_k[(trial / 2) % (int)LOOM_ARRAY_LEN(dot_k)]));
  }
}

LOOM_TEST(cpu, schedule_rule_dot_product_tiles_for_a_row_major_weight) {
  static const int64_t sz[] = {0, 1, 3, 4, 5, 8, 17, 37};
  cpu_diff_opts o = cpu_opts(sz, 8, 1e-4);
  o.trials = 2 * (int)LOOM_ARRAY_LEN(dot_m);
  o.bind = bind_dot;
  const char *lin = "prim @lin(X: Buffer[(m, k), f32], W: Buffer[(n, k), f32], B: Buffer[(n,), f32], Y: Buffer[(m, n), f32]) {\n"
                    "  for i in 0..m { for j in 0..n {\n"
                    "    Y[i, j] = 0.0\n"
                    "    for r in 0..k reduce { Y[i, j] = Y[i, j] + X[i, r] * W[j, r] }\n"
                    "    Y[i, j] = Y[i, j] + B[j]\n"
                    "  } }\n}\n";
  schedule_for_and_diff(lin, 64, "variant r >= 256 and m < 64:|dot-product tiles 1x16 over r|variant m < 4|"
                        "dot-product tiles 4x4 over r|variant m < 12|next column tile's rows prefetched into L2", &o);
  schedule_for_and_diff(lin, 32, "dot-product tiles 2x4 over r|dot-product tiles 1x8 over r|variant m < 2", &o);
  const char *lin300 = "prim @lin300(X: Buffer[(m, 300), f32], W: Buffer[(n, 300), f32], Y: Buffer[(m, n), f32]) {\n"
                       "  for i in 0..m { for j in 0..n {\n"
                       "    Y[i, j] = 0.0\n"
                       "    for r in 0..300 reduce { Y[i, j] = Y[i, j] + X[i, r] * W[j, r] }\n"
                       "  } }\n}\n";
  schedule_for_and_diff(lin300, 64, "dot-product tiles 4x4 over r", &o);
  /* rows and reduction both constants: the dot tiles alone, no other path in the code */
  const char *lin16 = "prim @lin16(X: Buffer[(13, 300), f32], W: Buffer[(n, 300), f32], Y: Buffer[(13, n), f32]) {\n"
                      "  for i in 0..13 { for j in 0..n {\n"
                      "    Y[i, j] = 0.0\n"
                      "    for r in 0..300 reduce { Y[i, j] = Y[i, j] + X[i, r] * W[j, r] }\n"
                      "  } }\n}\n";
  schedule_for_and_diff(lin16, 64, "dot-product tiles 4x4 over r", &o);
  why_lacks(lin16, "variant");
  const char *lin1 = "prim @lin1(X: Buffer[(3, 300), f32], W: Buffer[(n, 300), f32], Y: Buffer[(3, n), f32]) {\n"
                     "  for i in 0..3 { for j in 0..n {\n"
                     "    Y[i, j] = 0.0\n"
                     "    for r in 0..300 reduce { Y[i, j] = Y[i, j] + X[i, r] * W[j, r] }\n"
                     "  } }\n}\n";
  schedule_for_and_diff(lin1, 64, "dot-product tiles 1x16 over r", &o);
  why_lacks(lin1, "variant");
  /* a short reduction keeps the packed panels */
  const char *lin64 = "prim @lin64(X: Buffer[(m, 64), f32], W: Buffer[(n, 64), f32], Y: Buffer[(m, n), f32]) {\n"
                      "  for i in 0..m { for j in 0..n {\n"
                      "    Y[i, j] = 0.0\n"
                      "    for r in 0..64 reduce { Y[i, j] = Y[i, j] + X[i, r] * W[j, r] }\n"
                      "  } }\n}\n";
  schedule_for_and_diff(lin64, 64, "B packed", &o);
  why_lacks(lin64, "dot-product");
}

/* With at least a panel's width of columns, the column tail is one more whole panel ending at
 * the last column (overlapping the previous one); fewer columns take the narrow variant
 * (panels of 8, then columns one by one). Around each boundary, for every vector width. */
LOOM_TEST(cpu, schedule_rule_matmul_column_tail_is_one_overlapping_panel) {
  char *text = cpu_generated_text(gen_mm22);
  static const int64_t sz[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 49, 63, 65};
  cpu_diff_opts o = cpu_opts(sz, 14, 1e-4);
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
  cpu_diff_opts o = cpu_opts(sz, 10, 1e-4);
  o.trials = (int)LOOM_ARRAY_LEN(tall_m); /* every row count to 16: the clamped tiles store the last row more than once */
  o.bind = bind_tall;
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
  cpu_diff_opts o = cpu_opts(sz, 11, 1e-4);
  o.trials = 10;
  static const int vbytes[] = {64, 32};
  for (size_t g = 0; g < 2; g++) {
    char *text = cpu_generated_text(gens[g]);
    for (size_t v = 0; v < 2; v++) schedule_for_and_diff(text, vbytes[v], "fused (rows of every batch against the one B)", &o);
    free(text);
  }
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_batched_matmul_broadcast_b) { generated_schedule_and_diff(gen_mm43); }

/* Rows fused from a symbolic batch and a constant sequence (ViT's 197 tokens, any batch b; MaxViT's
 * 4 windows of 49): the
 * tail tiles' row index 197*b - 6 + i reads [floordiv(., 197), floormod(.)] which the simplifier
 * writes [b - 1 + floordiv(i + 191, 197), floormod(i + 191, 197)] -- still the one fused index
 * (loom_tp_fused_run), so the accumulator is cached and the nest register-tiled (it was refused,
 * and ViT-B/16 ran 21x slower than ONNX Runtime); and the few-rows variant under rows < 6, whose
 * guard 1 <= 197*b then contradicts b <= 0, is left out instead of refusing the whole tiling. */
LOOM_TEST(cpu, schedule_rule_tiles_rows_of_a_symbolic_batch_times_a_constant) {
  static const char *const text =
      "prim @vitmm(b: i64, X: Buffer[(b, 197, 16), f32], W: Buffer[(3, 16, 32), f32], Y: Buffer[(b, 197, 96), f32]) {\n"
      "  for i in 0..(197*b) {\n"
      "    for j in 0..96 {\n"
      "      Y[floordiv(i, 197), floormod(i, 197), j] = 0.0\n"
      "      for r in 0..16 reduce {\n"
      "        Y[floordiv(i, 197), floormod(i, 197), j] = Y[floordiv(i, 197), floormod(i, 197), j] + X[floordiv(i, 197), floormod(i, 197), r] * "
      "W[floordiv(j, 32), r, floormod(j, 32)]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  /* three axes fused (MaxViT's (b, 4 windows, 49 tokens)): the run's offset summed back by the
   * simplifier (E*floordiv(u, E) + floormod(u, E) == u) */
  static const char *const text3 =
      "prim @maxvitmm(b: i64, X: Buffer[(b, 4, 49, 16), f32], W: Buffer[(2, 16, 32), f32], Y: Buffer[(b, 4, 49, 64), f32]) {\n"
      "  for i in 0..(196*b) {\n"
      "    for j in 0..64 {\n"
      "      Y[floordiv(i, 196), floordiv(floormod(i, 196), 49), floormod(i, 49), j] = 0.0\n"
      "      for r in 0..16 reduce {\n"
      "        Y[floordiv(i, 196), floordiv(floormod(i, 196), 49), floormod(i, 49), j] = Y[floordiv(i, 196), "
      "floordiv(floormod(i, 196), 49), floormod(i, 49), j] + X[floordiv(i, 196), floordiv(floormod(i, 196), 49), floormod(i, 49), r] * "
      "W[floordiv(j, 32), r, floormod(j, 32)]\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  static const int64_t sz[] = {0, 1, 2, 3, 5};
  for (int64_t b = 0; b <= 3; b++) { /* the batch a scalar parameter, as the fused kernel takes it */
    cpu_diff_opts o3 = cpu_opts(sz, 5, 1e-4);
    o3.trials = 2;
    o3.scalar = b;
    schedule_for_and_diff(text3, 64, "register-tiled|12x32 register tiles", &o3);
    cpu_diff_opts o = cpu_opts(sz, 5, 1e-4);
    o.trials = 2;
    o.scalar = b;
    schedule_for_and_diff(text, 64, "register-tiled|12x32 register tiles|guard never holds", &o);
    schedule_for_and_diff(text, 32, "register-tiled", &o);
  }
}

/* Batch axes that broadcast by a run-time test (the legalizer's GUARD mode: an operand's extent
 * not provably the output's, Swin's window attention after its mask reshape): versioned, the
 * plain batched matmul tiled where each such extent equals the output's, else the nest as it was.
 * Trials take both guarded extents equal to the output's (the tiled variant), then A's 1, then
 * B's 1 (the fallback, broadcasting), at every size. */
static loom_status gen_mm44_guard(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast m[] = {LOOM_TP_BCAST_GUARD, LOOM_TP_BCAST_FULL};
  return loom_tp_gen_matmul(a, cx, "mm44g", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 4, m, 4, m, out);
}
static void bind_guards(const loom_tp_func *f, loom_sym_env *env, int trial) {
  int64_t d0 = 0;
  for (size_t j = 0; j < f->nsyms; j++)
    if (!strcmp(loom_sym_var_name(f->syms[j]), "d0")) cr_assert(loom_sym_env_get(env, f->syms[j], &d0));
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *n = loom_sym_var_name(f->syms[j]);
    if (!strcmp(n, "a0")) cr_assert_null(loom_sym_env_set(env, f->syms[j], trial % 3 == 1 ? 1 : d0));
    if (!strcmp(n, "b0")) cr_assert_null(loom_sym_env_set(env, f->syms[j], trial % 3 == 2 ? 1 : d0));
  }
}
LOOM_TEST(cpu, schedule_rule_versions_batch_axes_that_broadcast_at_run_time) {
  char *text = cpu_generated_text(gen_mm44_guard);
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13, 17, 33, 49};
  cpu_diff_opts o = cpu_opts(sz, 10, 1e-4);
  o.trials = 12;
  o.bind = bind_guards;
  static const int vbytes[] = {64, 32};
  for (size_t v = 0; v < 2; v++)
    schedule_for_and_diff(text, vbytes[v], "batch axes broadcast by a run-time test (2)|register-tiled", &o);
  free(text);
}
/* Rule 0d: an elementwise op whose operands' dims have other names than the output's (each may
 * broadcast at run time: the legalizer's GUARD mode) reads its rows through
 * `select(x == 1, 0, i)`; versioned on the innermost axis, the rows plain (vectorised, no gather)
 * where no operand broadcasts along it, else the nest as it was. Trials: every operand's extents
 * the output's, then each operand's last extent 1 (the fallback), then each one's first; the
 * where (3 operands) and an add of rank 3, at every size incl. 0 and 1. */
static loom_status gen_add_guard(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast m[] = {LOOM_TP_BCAST_GUARD, LOOM_TP_BCAST_GUARD, LOOM_TP_BCAST_GUARD};
  return loom_tp_gen_binary(a, cx, "addg", "a + b", LOOM_DTYPE_F32, LOOM_DTYPE_F32, 3, m, 3, m, out);
}
static loom_status gen_where_guard(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out) {
  static const loom_tp_bcast m[] = {LOOM_TP_BCAST_GUARD, LOOM_TP_BCAST_GUARD};
  const loom_tp_bcast *const modes[3] = {m, m, m};
  const loom_dtype in[3] = {LOOM_DTYPE_BOOL, LOOM_DTYPE_F32, LOOM_DTYPE_F32};
  const int ranks[3] = {2, 2, 2};
  return loom_tp_gen_nary(a, cx, "whereg", "select(a, b, c)", 3, in, LOOM_DTYPE_F32, ranks, modes, out);
}
static void bind_row_guards(const loom_tp_func *f, loom_sym_env *env, int trial) {
  /* the output's extents d0.., each operand's last axis (its dims a0.., b0.., c0..) */
  int64_t d[3] = {0, 0, 0};
  int last_axis[3] = {0, 0, 0};
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *n = loom_sym_var_name(f->syms[j]);
    if (strlen(n) != 2 || n[1] < '0' || n[1] > '2') continue;
    if (n[0] == 'd') cr_assert(loom_sym_env_get(env, f->syms[j], &d[n[1] - '0']));
    else if (n[0] >= 'a' && n[0] <= 'c' && n[1] - '0' > last_axis[n[0] - 'a']) last_axis[n[0] - 'a'] = n[1] - '0';
  }
  /* trial 0: no operand broadcasts; then operand (trial - 1) % 3 broadcasts along its last axis
   * (odd rounds of three) or its first */
  int who = trial == 0 ? -1 : (trial - 1) % 3;
  bool along_last = ((trial - 1) / 3) % 2 == 0;
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *n = loom_sym_var_name(f->syms[j]);
    if (strlen(n) != 2 || n[0] < 'a' || n[0] > 'c' || n[1] < '0' || n[1] > '2') continue;
    int op = n[0] - 'a', axis = n[1] - '0';
    bool bc = op == who && axis == (along_last ? last_axis[op] : 0);
    cr_assert_null(loom_sym_env_set(env, f->syms[j], bc ? 1 : d[axis]));
  }
}
LOOM_TEST(cpu, schedule_rule_versions_rows_that_broadcast_at_run_time) {
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 33, 64, 97};
  cpu_diff_opts o = cpu_opts(sz, LOOM_ARRAY_LEN(sz), 1e-6);
  o.trials = 13;
  o.bind = bind_row_guards;
  static const int vbytes[] = {64, 32, 16};
  for (int g = 0; g < 2; g++) {
    char *text = cpu_generated_text(g == 0 ? gen_add_guard : gen_where_guard);
    for (size_t v = 0; v < LOOM_ARRAY_LEN(vbytes); v++)
      schedule_for_and_diff(text, vbytes[v], g == 0 ? "rows broadcast by a run-time test (2)|vectorize"
                                                    : "rows broadcast by a run-time test (3)|vectorize", &o);
    free(text);
  }
}
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
  cpu_diff_opts o = cpu_opts(sz, 7, 1e-4);
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
/* AVX2's f32 row tail: past the 6-row tiles a remainder of 1 or 2 rows is one 2-row tile ending at
 * the last row, 3..5 one more whole 6-row tile (schedule_matmul.c NARROW_TAIL_ROWS); rows with
 * each remainder (6 .. 20), rank 2 and 3 (fused rows), against the interpreter with 1 and 2 threads. */
LOOM_TEST(cpu, avx2_row_tail_of_one_or_two_rows_is_a_two_row_tile) {
  static const int64_t sz[] = {7, 8, 13, 14, 20, 6, 9, 11, 17};
  cpu_diff_opts o = cpu_opts(sz, 9, 1e-4);
  o.trials = 14;
  gen_fn gens[] = {gen_mm_packed, gen_mm_packed3};
  for (int g = 0; g < 2; g++) {
    char *text = cpu_generated_text(gens[g]);
    schedule_for_and_diff(text, 32, "6x16 register tiles (a remainder above 2 rows|one 2x16 tile ending at the last row", &o);
    free(text);
  }
}

/* The few-rows variant of fused rows (b * s < 6) runs 4-row tiles clamped to its rows (a panel
 * read once for up to 4 rows) and holds no 6-row register tile: its guard bounds the product, so the split by 6 whose main loop could
 * never run there is not emitted (6-row tiles only in the general path).
 * LLVM compiled that dead tile in every linear layer of a transformer. */
LOOM_TEST(cpu, few_fused_rows_hold_no_dead_register_tile) {
  char *text = cpu_generated_text(gen_mm_packed3);
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_tp_cpu_params params = {.vector_bytes = 32};
  loom_status s = loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &why);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_strbuf out;
  loom_strbuf_init(&out, NULL);
  loom_tp_print_func(fx.f, &out);
  const char *t = loom_strbuf_cstr(&out), *variant = strstr(t, "if -5 <= -d0*m {"), *general = strstr(t, "} else {");
  cr_assert(variant && general && variant < general, "%s", t);
  const char *tile = strstr(variant, "Local[(6, 16)");
  cr_assert(tile && tile > general, "a 6-row tile in the few-rows variant:\n%s", t);
  /* 2..5 rows share each pass over a panel: 4-row tiles, the last clamped to the rows there are */
  cr_assert(strstr(loom_strbuf_cstr(&why), "4x16 register tiles (the last repeating the last row) + a 1x16 tile"), "%s",
            loom_strbuf_cstr(&why));
  loom_strbuf_free(&out);
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
  static const int64_t sz[] = {0, 1, 2, 3, 5, 6, 7};
  cpu_diff_opts o = cpu_opts(sz, 7, 1e-4);
  o.trials = 12;
  schedule_for_and_diff(text, 32, "B laid out in panels", &o);
  free(text);
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
  cpu_diff_opts o = cpu_opts(sz, 8, 1e-4);
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
/* The same in byte quads (dot4: vpdpbusd with AVX512-VNNI, plain arithmetic elsewhere; dot4s:
 * vpmaddubsw + vpmaddwd with AVX2), u8 and i8 A, k not a multiple of 4 (the last, partial quad),
 * bit-exact to the interpreter (cpu_fill's words keep dot4s's byte pairs within i16). */
LOOM_TEST(cpu, schedule_rule_tiles_the_int8_matmul_in_byte_quads) {
  generated_schedule_and_diff_at(gen_mm_int8_quads, 32);
  generated_schedule_and_diff_at(gen_mm_int8_quads3, 64);
  char *text = cpu_generated_text(gen_mm_int8_quads_pairs3);
  cr_assert_not_null(strstr(text, "dot4s("), "%s", text);
  free(text);
  generated_schedule_and_diff_at(gen_mm_int8_quads_pairs, 32);
  generated_schedule_and_diff_at(gen_mm_int8_quads_pairs3, 64);
}
/* A u8 A of constant k (a multiple of 4) read in place, its quads the dot4 operand (no A4
 * Local): register-tiled as the packed form, bit-exact to the interpreter; the generator
 * refuses an i8 A or a k not a multiple of 4 there. */
LOOM_TEST(cpu, schedule_rule_tiles_the_int8_matmul_reading_u8_quads_in_place) {
  char *text = cpu_generated_text(gen_mm_int8_quads_in_place);
  cr_assert_null(strstr(text, "alloc A4"), "%s", text);
  free(text);
  generated_schedule_and_diff_at(gen_mm_int8_quads_in_place, 32);
  generated_schedule_and_diff_at(gen_mm_int8_quads_in_place3, 64);
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  loom_status st = loom_tp_gen_matmul_integer_quads(&a, cx, "bad", LOOM_DTYPE_I8, 2, 0, 16, false, 8, false, &f);
  cr_assert_eq(loom_status_code(st), LOOM_CODE_INVALID_ARGUMENT);
  cr_assert_not_null(strstr(loom_status_message(st), "reads A in place only for u8 and k a multiple of 4 (given i8, k=8)"), "%s",
                     loom_status_message(st));
  loom_status_free(st);
  st = loom_tp_gen_matmul_integer_quads(&a, cx, "bad", LOOM_DTYPE_U8, 2, 0, 16, false, 6, false, &f);
  cr_assert_not_null(strstr(loom_status_message(st), "(given u8, k=6)"), "%s", loom_status_message(st));
  loom_status_free(st);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
}

LOOM_TEST(cpu, schedule_rule_tiles_generated_linear_with_bias) { generated_schedule_and_diff(gen_linear_bias); }
LOOM_TEST(cpu, schedule_rule_tiles_generated_linear_rank3) { generated_schedule_and_diff(gen_linear3); }

/* Rule 2a on the constant pad legalization generates (ranks 2 to 4, u8 / f32, the pad value a
 * literal or a buffer): the innermost loop's range test is split into the runs before, inside and
 * after it, each vectorised, and the program equals the unscheduled one at output and input
 * extents 0, 1, primes and others drawn independently (pads larger than an output, an input
 * larger than its output) with every pad -2 (a crop), 0, 1 and 3; a pad whose pads are a run-time
 * tensor keeps its form (its bounds are loads, not symbols). */
LOOM_TEST(cpu, schedule_rule_splits_a_pad_by_its_range_test) {
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 8, 13, 17, 33};
  static const int64_t pads[] = {-2, 0, 1, 3};
  static const struct { int rank; loom_dtype t; const char *value; int value_rank; } forms[] = {
      {2, LOOM_DTYPE_F32, "1.5", -1}, {3, LOOM_DTYPE_U8, "128", -1}, {4, LOOM_DTYPE_F32, "0.0", 0}, {4, LOOM_DTYPE_U8, "7", 1}};
  for (size_t fi = 0; fi < sizeof forms / sizeof *forms; fi++) {
    loom_arena a;
    loom_arena_init(&a, NULL, 0);
    loom_sym_ctx *cx;
    cr_assert_null(loom_sym_ctx_create(NULL, &cx));
    loom_tp_func *f;
    cr_assert_null(loom_tp_gen_pad(&a, cx, "padk", forms[fi].t, forms[fi].rank, forms[fi].value, false, forms[fi].value_rank, &f));
    loom_strbuf text;
    loom_strbuf_init(&text, NULL);
    loom_tp_print_func(f, &text);
    for (size_t pi = 0; pi < sizeof pads / sizeof *pads; pi++) {
      cpu_diff_opts o = cpu_opts(sz, sizeof sz / sizeof *sz, 0);
      o.trials = 12;
      o.scalar = pads[pi];
      schedule_for_and_diff(loom_strbuf_cstr(&text), 32, "split by its range test into the runs before, inside and after it", &o);
      schedule_for_and_diff(loom_strbuf_cstr(&text), 64, "split by its range test", &o);
    }
    loom_strbuf_free(&text);
    loom_sym_ctx_destroy(cx);
    loom_arena_destroy(&a);
  }
  char *text = cpu_generated_text(gen_pad_runtime);
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  cr_assert_null(loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &(loom_tp_cpu_params){.vector_bytes = 32}, &why));
  cr_assert_null(strstr(loom_strbuf_cstr(&why), "range test"), "%s", loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
  free(text);
}

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
  cpu_diff_opts o = cpu_opts(sz + min_size, 7 - (size_t)min_size, 1e-4);
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

/* A channels-last Linear (b, h, w, k) x (k, n) (ConvNeXt's MLP): the rule fuses the three row
 * loops into one over b*h*w rows, whose accesses are a run of three axes
 * ([floordiv(x, h*w), floordiv(floormod(x, h*w), w), floormod(floormod(x, h*w), w)]):
 * loom_tp_fused_run makes them the one index x, so the register tiles apply (the accumulator's
 * cache_write saw "two footprint points may be one element" and the nest ran untiled, ~30x
 * slower) and the address needs no division; with a GELU epilogue too. */
LOOM_TEST(cpu, schedule_rule_tiles_rows_fused_from_three_loops) {
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13};
  cpu_diff_opts o = cpu_opts(sz, 7, 1e-4);
  o.trials = 10;
  const char *t = "prim @cnx(A: Buffer[(b, h, w, k), f32], B: Buffer[(q, k, 32), f32], C: Buffer[(b, h, w, 32*q), f32]) {\n"
                  "  for i0 in 0..b { for i1 in 0..h { for i2 in 0..w { for j in 0..(32*q) {\n"
                  "    C[i0, i1, i2, j] = 0.0\n"
                  "    for r in 0..k reduce { C[i0, i1, i2, j] = C[i0, i1, i2, j] + A[i0, i1, i2, r] * B[floordiv(j, 32), r, floormod(j, 32)] }\n"
                  "  } } } }\n}\n";
  schedule_for_and_diff(t, 64, "loops i0, i1_f: fused|12x32 register tiles|B laid out in panels", &o);
  schedule_for_and_diff(t, 32, "loops i0, i1_f: fused|6x16 register tiles", &o);
  const char *g = "prim @cnxg(A: Buffer[(b, h, w, 96), f32], B: Buffer[(12, 96, 32), f32], C: Buffer[(b, h, w, 384), f32]) {\n"
                  "  for i0 in 0..b { for i1 in 0..h { for i2 in 0..w { for j in 0..384 {\n"
                  "    C[i0, i1, i2, j] = 0.0\n"
                  "    for r in 0..96 reduce { C[i0, i1, i2, j] = C[i0, i1, i2, j] + A[i0, i1, i2, r] * B[floordiv(j, 32), r, floormod(j, 32)] }\n"
                  "    C[i0, i1, i2, j] = 0.5 * C[i0, i1, i2, j] * (1.0 + erf(C[i0, i1, i2, j] * 0.707106781))\n"
                  "  } } } }\n}\n";
  schedule_for_and_diff(g, 64, "12x32 register tiles|the epilogue (a transcendental) after the tile is stored", &o);
}

/* Few rows against a B read per batch (a grouped convolution's groups, attention's heads): the
 * streamed columns' chunks are fused with the batch loops B uses into the parallel loop, so 32
 * groups of 840 columns are 32 parallel iterations, not one 1024-column chunk on one thread.
 * Rows 0..5 (the few-rows variant) and 7 (the general path), groups 0..7, columns around the
 * 1024-column chunk; 1 and 2 threads and the pool (cpu_diff). */
static const int64_t grp_m[] = {0, 1, 3, 5, 7, 2, 4};
static const int64_t grp_n[] = {0, 1, 17, 1031, 31, 1024, 2};
static const int64_t grp_g[] = {1, 0, 3, 2, 7, 1, 5};

static void bind_groups(const loom_tp_func *f, loom_sym_env *env, int trial) {
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *name = loom_sym_var_name(f->syms[j]);
    const int64_t *v = !strcmp(name, "m") ? grp_m : !strcmp(name, "n") ? grp_n : !strcmp(name, "g") ? grp_g : NULL;
    if (v) cr_assert_null(loom_sym_env_set(env, f->syms[j], v[trial % (int)LOOM_ARRAY_LEN(grp_m)]));
  }
}

/* Few rows of a (g, m, k) A against X (g, k, n) or, `per_batch` false, one X (k, n) shared by
 * every batch; the text in a static buffer. */
static const char *grp_text(bool per_batch) {
  static char buf[512];
  snprintf(buf, sizeof buf,
           "prim @grp(A: Buffer[(g, m, k), f32], X: Buffer[(%sk, n), f32], Y: Buffer[(g, m, n), f32]) {\n"
           "  for b in 0..g { for i in 0..m { for j in 0..n {\n"
           "    Y[b, i, j] = 0.0\n"
           "    for r in 0..k reduce { Y[b, i, j] = Y[b, i, j] + A[b, i, r] * X[%sr, j] }\n"
           "  } } }\n}\n",
           per_batch ? "g, " : "", per_batch ? "b, " : "");
  return buf;
}

LOOM_TEST(cpu, schedule_rule_streams_groups_in_parallel) {
  static const int64_t sz[] = {1, 3, 5, 7};
  cpu_diff_opts o = cpu_opts(sz, 4, 1e-4);
  o.trials = (int)LOOM_ARRAY_LEN(grp_m);
  o.bind = bind_groups;
  schedule_for_and_diff(grp_text(true), 64, "rows streamed: B read once, row by row, in chunks of 1024 columns (parallel with the batch loops B uses", &o);
  schedule_for_and_diff(grp_text(true), 32, "(parallel with the batch loops B uses", &o);
  /* B shared by the batch (a GEMV per batch row): the chunks alone stay parallel, B read once */
  why_lacks(grp_text(false), "with the batch loops B uses");
}

/* Fewer than 8 column panels, a constant count (64 columns: 2 panels of 32): the row tiles run
 * in parallel inside each panel, the panels one after the other; 16 panels keep the panels
 * parallel. Rows 0, 1, primes and around the tiles; 1 and 2 threads and the pool (cpu_diff). */
/* C (m, n) = A (m, k) B (k, n) with a constant n; the text in a static buffer. */
static const char *cols_text(int n) {
  static char buf[384];
  snprintf(buf, sizeof buf,
           "prim @cols(A: Buffer[(m, k), f32], B: Buffer[(k, %d), f32], C: Buffer[(m, %d), f32]) {\n"
           "  for i in 0..m { for j in 0..%d { C[i, j] = 0.0\n"
           "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] } } }\n}\n",
           n, n, n);
  return buf;
}

LOOM_TEST(cpu, schedule_rule_rows_in_parallel_for_few_panels) {
  static const int64_t sz[] = {0, 1, 5, 6, 7, 13, 31, 37, 97};
  cpu_diff_opts o = cpu_opts(sz, 9, 1e-4);
  o.trials = 9;
  schedule_for_and_diff(cols_text(64), 64, "rows in parallel (few panels)", &o);
  schedule_for_and_diff(cols_text(64), 32, "rows in parallel (few panels)", &o);
  why_lacks(cols_text(512), "rows in parallel");
}

/* Few rows (m < 6) against a B of constant n: the streamed column chunks are narrowed to an even
 * count of about equal width (a 768-column projection was one chunk of 1024: one thread at any
 * thread count; 3072 columns three: 2 + 1 on two threads); 4096 columns keep chunks of 1024.
 * Rows 0..5 and k 0, 1 and primes; n not a multiple of 16 (100: 64 + 36); 1 and 2 threads and
 * the pool (cpu_diff). */
LOOM_TEST(cpu, schedule_rule_stream_chunks_follow_threads) {
  static const int64_t sz[] = {0, 1, 2, 3, 5, 7, 13, 31};
  cpu_diff_opts o = cpu_opts(sz, 8, 1e-4);
  o.trials = 8;
  schedule_for_and_diff(cols_text(768), 64, "rows streamed: B read once, row by row, in chunks of 384 columns", &o);
  schedule_for_and_diff(cols_text(3072), 64, "in chunks of 768 columns", &o);
  schedule_for_and_diff(cols_text(100), 32, "in chunks of 64 columns", &o);
  schedule_for_and_diff(cols_text(4096), 64, "in chunks of 1024 columns", &o);
}

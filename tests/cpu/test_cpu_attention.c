/* test_cpu_attention.c — the attention programs of tensorprog/gen_attn.c, scheduled by the CPU
 * rules and JIT-compiled, against the tensor-program interpreter on the same program (1 and 2
 * threads, the runtime pool), at shapes where K/V heads divide the query heads; and lane mode's
 * reading of the lane variable as a value (the flash kernel's causal test of key j against query
 * row q0 + lane). */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdlib.h>
#include <string.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_schedule_cpu.h"

LOOM_TEST(cpu, lane_mode_reads_the_lane_variable_as_a_value) {
  const char *text = "prim @iota(X: Buffer[(n, 16), f32], Y: Buffer[(n, 16), f32], Z: Buffer[(n, 8), i64], W: Buffer[(n, 8), i32]) {\n"
                     "  for i in 0..n {\n"
                     "    for j in 0..16 vectorize { Y[i, j] = select(j + i > 9, X[i, j], -1.0) + f32(i32(2*j - i)) }\n"
                     "    for k in 0..8 vectorize { Z[i, k] = 3*k + i  W[i, k] = i32(k) * 2i32 }\n"
                     "  }\n}\n";
  cpu_diff_opts o = {.sizes = (const int64_t[]){0, 1, 2, 7, 13, 31}, .nsizes = 6, .trials = 6, .rtol = 1e-6, .atol = 1e-6};
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  cpu_diff(&fx, cpu_jit(jit, &fx), &o, loom_test_seed());
  loom_cpu_jit_destroy(jit);
  /* lane-mode code: the lane variable is lane 0's value plus a constant vector (stride 1, 2, 3),
   * not the loop vectoriser's */
  loom_strbuf sb;
  loom_strbuf_init(&sb, NULL);
  const loom_tp_func *fs[1] = {fx.f};
  cr_assert_null(loom_cpu_emit_ir(NULL, fx.cx, fs, 1, false, &sb));
  const char *ir = loom_strbuf_cstr(&sb);
  cr_assert(strstr(ir, ", <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7, i64 8, i64 9, i64 10, i64 11, i64 12, "
                       "i64 13, i64 14, i64 15>") != NULL, "%s", ir);
  cr_assert(strstr(ir, ", <i64 0, i64 2, i64 4, i64 6, i64 8, i64 10, i64 12, i64 14, i64 16,") != NULL, "%s", ir);
  cr_assert(strstr(ir, ", <i64 0, i64 3, i64 6, i64 9, i64 12, i64 15, i64 18, i64 21>") != NULL, "%s", ir);
  cr_assert(strstr(ir, "store <8 x i32> <i32 0, i32 2, i32 4, i32 6,") != NULL, "%s", ir);
  cr_assert(strstr(ir, "llvm.loop.vectorize.enable") == NULL, "%s", ir);
  loom_strbuf_free(&sb);
  tp_fixture_free(&fx);
}

/* Query rows, keys, query heads and K/V heads per trial (d0 = batch 1 or 2): the row kernel (s <
 * 8), one flash tile and its tail, several tiles, keys unlike the queries (causal rows with
 * none), grouped-query ratios 1, 2, 4, 8; s == t < 8 (self-attention's short sequences). */
static const int64_t trials[][5] = {
    {1, 5, 2, 2, 1},  {2, 1, 16, 4, 2}, {8, 8, 3, 3, 1},  {33, 40, 2, 1, 2}, {40, 33, 2, 2, 1},
    {0, 6, 2, 2, 1},  {9, 0, 1, 1, 1},  {65, 65, 8, 1, 1}, {31, 64, 8, 4, 1}, {7, 300, 4, 4, 2},
    {1, 1, 4, 2, 2},  {5, 5, 2, 1, 1},
};

static void bind_trial(const loom_tp_func *f, loom_sym_env *env, int trial) {
  const int64_t *t = trials[trial];
  static const char *const names[] = {"d2", "d3", "d1", "hk", "d0"};
  for (size_t j = 0; j < f->nsyms; j++) {
    const char *n = loom_sym_var_name(f->syms[j]);
    for (int k = 0; k < 5; k++)
      if (!strcmp(n, names[k])) cr_assert_null(loom_sym_env_set(env, f->syms[j], t[k]));
    if (!strcmp(n, "dq") || !strcmp(n, "dv")) cr_assert_null(loom_sym_env_set(env, f->syms[j], !strcmp(n, "dq") ? 9 : 5));
    if (n[0] == 'm') cr_assert_null(loom_sym_env_set(env, f->syms[j], 1)); /* a guarded mask axis: broadcast */
  }
}

/* Generates attention with these parameters for vectors of `lanes` f32 (the flash tile), schedules
 * it for those vectors, and compares compiled with interpreted on every trial shape. */
static void gen_diff_lanes(bool causal, int mask_rank, const loom_tp_bcast *modes, loom_dtype mask_t, bool empty_nan,
                           bool bshd, bool self_rows, int64_t d, int64_t dv, const char *scale, int lanes) {
  tp_fixture fx = {0};
  cr_assert_null(loom_sym_ctx_create(NULL, &fx.cx));
  loom_arena_init(&fx.arena, NULL, 0);
  loom_diag_list_init(&fx.diags, NULL);
  cr_assert_null(loom_tp_gen_attention(&fx.arena, fx.cx, "attn", LOOM_DTYPE_F32, scale, causal, mask_rank, modes, mask_t,
                                       empty_nan, bshd, self_rows, d, dv, lanes, &fx.f));
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  cr_assert_null(loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &(loom_tp_cpu_params){.vector_bytes = 4 * lanes}, &why));
  loom_strbuf_free(&why);
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  char *text = tp_print(fx.f);
  char qt[48]; /* the tile's query rows: two vectors */
  if (d) snprintf(qt, sizeof qt, "alloc Qt: Local[(%lld, %d)", (long long)d, 2 * lanes);
  else snprintf(qt, sizeof qt, "alloc Qt: Local[(dq, %d)", 2 * lanes);
  cr_assert(strstr(text, qt) != NULL, "%s in %s", qt, text);
  /* the flash kernel, and the row kernel under `if d2 < 8`: its softmax over the keys in SIMD
   * lanes, unless the keys are the queries' rows (then fewer than 8: a plain loop) */
  cr_assert(strstr(text, "alloc Qt: Local[(") != NULL && strstr(text, "if d2 < 8 {") != NULL, "%s", text);
  cr_assert((strstr(text, "for j in 0..d3 vectorize {") != NULL) == !self_rows, "self_rows %d: %s", self_rows, text);
  cr_assert((strstr(text, "for j in 0..d3 {") != NULL) == self_rows, "self_rows %d: %s", self_rows, text);
  free(text);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  cpu_diff_opts o = {.sizes = (const int64_t[]){1}, .nsizes = 1, .trials = (int)LOOM_ARRAY_LEN(trials), .rtol = 2e-5,
                     .atol = 2e-5, .bind = bind_trial};
  cpu_diff(&fx, cpu_jit(jit, &fx), &o, loom_test_seed());
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

static void gen_diff_rows(bool causal, int mask_rank, const loom_tp_bcast *modes, loom_dtype mask_t, bool empty_nan,
                          bool bshd, bool self_rows, int64_t d, int64_t dv, const char *scale) {
  gen_diff_lanes(causal, mask_rank, modes, mask_t, empty_nan, bshd, self_rows, d, dv, scale, 16);
}

static void gen_diff(bool causal, int mask_rank, const loom_tp_bcast *modes, loom_dtype mask_t, bool empty_nan, bool bshd,
                     int64_t d, int64_t dv, const char *scale) {
  gen_diff_rows(causal, mask_rank, modes, mask_t, empty_nan, bshd, false, d, dv, scale);
}

LOOM_TEST(cpu, generated_attention_against_the_interpreter) {
  static const loom_tp_bcast keys[4] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_ONE, LOOM_TP_BCAST_ONE, LOOM_TP_BCAST_FULL};
  static const loom_tp_bcast full[4] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL};
  static const loom_tp_bcast guard[2] = {LOOM_TP_BCAST_GUARD, LOOM_TP_BCAST_FULL};
  gen_diff(false, -1, NULL, LOOM_DTYPE_BOOL, false, false, 16, 16, NULL);
  gen_diff(true, -1, NULL, LOOM_DTYPE_BOOL, false, false, 0, 0, "0.3f64");     /* symbolic head dims */
  gen_diff(false, 4, keys, LOOM_DTYPE_F32, false, false, 16, 8, NULL);         /* a mask along the keys only */
  gen_diff(true, 4, full, LOOM_DTYPE_BOOL, true, false, 16, 16, NULL);         /* packed bool, empty rows NaN */
  gen_diff(true, 2, guard, LOOM_DTYPE_F32, false, false, 8, 8, NULL);          /* a query axis that may be 1 */
  gen_diff(true, 4, keys, LOOM_DTYPE_F32, false, true, 16, 16, NULL);          /* (batch, seq, heads, dim) */
}

/* The flash tile for AVX2's and 16-byte vectors (16 x 6 and 8 x 6: graph/op_nn.c passes the
 * target's lanes): the same results at every trial shape, tiles and their tails included. */
LOOM_TEST(cpu, generated_attention_for_narrower_vectors_against_the_interpreter) {
  static const loom_tp_bcast full[4] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_FULL};
  for (int lanes = 8; lanes >= 4; lanes /= 2) {
    gen_diff_lanes(false, -1, NULL, LOOM_DTYPE_BOOL, false, false, false, 16, 16, NULL, lanes);
    gen_diff_lanes(true, 4, full, LOOM_DTYPE_BOOL, true, false, false, 16, 8, NULL, lanes); /* packed mask, NaN rows */
    gen_diff_lanes(true, -1, NULL, LOOM_DTYPE_BOOL, false, true, false, 0, 0, "0.3f64", lanes); /* symbolic dims, bshd */
  }
}

/* self_rows (graph/op_nn.c: the rows of q and k are one symbol, self-attention without a cache):
 * the row kernel's softmax over the keys is a plain loop; correct at every trial shape (s == t
 * < 8, and, as the program does not rely on it, keys unlike the queries). */
LOOM_TEST(cpu, generated_self_attention_row_kernel_has_a_plain_key_loop) {
  static const loom_tp_bcast keys[4] = {LOOM_TP_BCAST_FULL, LOOM_TP_BCAST_ONE, LOOM_TP_BCAST_ONE, LOOM_TP_BCAST_FULL};
  gen_diff_rows(true, -1, NULL, LOOM_DTYPE_BOOL, true, true, true, 64, 64, NULL);  /* GPT-2's: causal, NaN, bshd */
  gen_diff_rows(false, 4, keys, LOOM_DTYPE_F32, false, false, true, 16, 8, NULL); /* BERT's padding mask */
  gen_diff_rows(true, -1, NULL, LOOM_DTYPE_BOOL, false, false, true, 0, 0, NULL);  /* symbolic head dims */
}

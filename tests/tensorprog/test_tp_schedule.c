/* test_tp_schedule.c — schedule primitives preserve results on shapes smaller than the
 * tile, not divisible by it and divisible by it; scheduled programs verify and round-trip.
 * Also distribution, cache_read/cache_write and the CPU matmul rule built on them. */
#include <stdlib.h>
#include <string.h>

#include "tensorprog/tp_rewrite.h"
#include "tensorprog/tp_schedule_cpu.h"
#include "tp_test_util.h"

static const char *const matmul =
    "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m {\n"
    "    for j in 0..n {\n"
    "      C[i, j] = 0.0\n"
    "      for r in 0..k reduce {\n"
    "        C[i, j] = C[i, j] + A[i, r] * B[r, j]\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char *const add2d =
    "prim @add(A: Buffer[(m, n), f32], B: Buffer[(m, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m {\n"
    "    for j in 0..n {\n"
    "      C[i, j] = A[i, j] * 2.0 + B[i, j]\n"
    "    }\n"
    "  }\n"
    "}\n";

/* Runs `f` (3 buffers: A[d0,d1], B[d1 or d0, d2 ...]) for a matmul-or-add signature. */
static void run(loom_sym_ctx *cx, const loom_tp_func *f, bool is_matmul, int64_t m, int64_t k, int64_t n, float *out) {
  int64_t sa[2] = {m, is_matmul ? k : n}, sb[2] = {is_matmul ? k : m, n}, sc[2] = {m, n};
  size_t na = (size_t)(sa[0] * sa[1]), nb = (size_t)(sb[0] * sb[1]);
  float *A = malloc((na + 1) * 4), *B = malloc((nb + 1) * 4);
  for (size_t i = 0; i < na; i++) A[i] = (float)((i * 7) % 11) - 5.0f;
  for (size_t i = 0; i < nb; i++) B[i] = (float)((i * 5) % 13) * 0.25f;
  loom_tp_arg args[3] = {{A, sa, 0}, {B, sb, 0}, {out, sc, 0}};
  loom_status s = loom_tp_interpret(cx, f, args, 3);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  free(A);
  free(B);
}

typedef loom_status (*schedule_fn)(tp_fixture *fx);

static void check_schedule(const char *text, bool is_matmul, schedule_fn sched, const char *expect_in_text) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, text));
  cr_assert_null(tp_parse(&fx, text));
  loom_status s = sched(&fx);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_verify(fx.cx, fx.f);
  cr_assert_null(s, "scheduled program does not verify: %s", loom_status_text(s, 0));
  char *printed = tp_print(fx.f);
  if (expect_in_text) cr_assert(strstr(printed, expect_in_text) != NULL, "'%s' not in:\n%s", expect_in_text, printed);
  /* The printed schedule parses back into a program that prints the same. */
  tp_fixture again;
  s = tp_parse(&again, printed);
  cr_assert_null(s, "%s\n%s", loom_status_text(s, 0), printed);
  char *printed2 = tp_print(again.f);
  cr_assert_str_eq(printed2, printed);
  static const int64_t dims[] = {1, 2, 3, 4, 5, 8, 13, 17};
  for (size_t a = 0; a < 8; a++)
    for (size_t b = 0; b < 8; b += 3)
      for (size_t c = 0; c < 8; c += 2) {
        int64_t m = dims[a], k = dims[b], n = dims[c];
        float *want = calloc((size_t)(m * n), 4), *got = calloc((size_t)(m * n), 4), *got2 = calloc((size_t)(m * n), 4);
        run(ref.cx, ref.f, is_matmul, m, k, n, want);
        run(fx.cx, fx.f, is_matmul, m, k, n, got);
        run(again.cx, again.f, is_matmul, m, k, n, got2);
        cr_assert_arr_eq(got, want, (size_t)(m * n) * 4, "m=%lld k=%lld n=%lld\n%s", (long long)m, (long long)k,
                         (long long)n, printed);
        cr_assert_arr_eq(got2, want, (size_t)(m * n) * 4);
        free(want);
        free(got);
        free(got2);
      }
  free(printed);
  free(printed2);
  tp_fixture_free(&again);
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
}

static loom_status split_i4(tp_fixture *fx) {
  return loom_tp_split(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "i"), 4, NULL, NULL, NULL);
}
static loom_status split_reduce3(tp_fixture *fx) {
  return loom_tp_split(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "r"), 3, NULL, NULL, NULL);
}
static loom_status split_vectorize(tp_fixture *fx) {
  loom_tp_stmt *inner;
  LOOM_PROPAGATE(loom_tp_split(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "j"), 8, NULL, &inner, NULL));
  return loom_tp_set_kind(fx->cx, inner, LOOM_TP_LOOP_VECTORIZE);
}
static loom_status fuse_ij(tp_fixture *fx) {
  loom_tp_stmt *fused;
  LOOM_PROPAGATE(loom_tp_fuse(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "i"), &fused));
  return loom_tp_set_kind(fx->cx, fused, LOOM_TP_LOOP_PARALLEL);
}
static loom_status reorder_ij(tp_fixture *fx) {
  return loom_tp_reorder(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "i"));
}
static loom_status tile_2d(tp_fixture *fx) {
  loom_tp_stmt *io, *ii;
  LOOM_PROPAGATE(loom_tp_split(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "i"), 4, &io, &ii, NULL));
  LOOM_PROPAGATE(loom_tp_set_kind(fx->cx, io, LOOM_TP_LOOP_PARALLEL));
  LOOM_PROPAGATE(loom_tp_split(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "j"), 8, NULL, NULL, NULL));
  return loom_tp_set_kind(fx->cx, loom_tp_find_loop(fx->f, "j_i"), LOOM_TP_LOOP_VECTORIZE);
}

static loom_status split_ceil_j4_parallel(tp_fixture *fx) {
  loom_tp_stmt *outer;
  LOOM_PROPAGATE(loom_tp_split_ceil(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "j"), 4, &outer, NULL));
  return loom_tp_set_kind(fx->cx, outer, LOOM_TP_LOOP_PARALLEL);
}
LOOM_TEST(tp_schedule, split_ceil_chunks_with_a_partial_last_one) {
  check_schedule(add2d, false, split_ceil_j4_parallel, "for j_i in 0..min(n - 4*j_o, 4)");
}
LOOM_TEST(tp_schedule, split_spatial_loop_with_tail) { check_schedule(matmul, true, split_i4, "for i_t in 0..floormod(m, 4)"); }
LOOM_TEST(tp_schedule, split_reduce_loop_keeps_reduce) { check_schedule(matmul, true, split_reduce3, "for r_i in 0..3 reduce"); }
LOOM_TEST(tp_schedule, split_then_vectorize) { check_schedule(add2d, false, split_vectorize, "for j_i in 0..8 vectorize"); }
LOOM_TEST(tp_schedule, fuse_then_parallel) { check_schedule(add2d, false, fuse_ij, "parallel"); }
LOOM_TEST(tp_schedule, reorder_perfect_nest) { check_schedule(add2d, false, reorder_ij, "for j in 0..n {\n    for i in 0..m"); }
LOOM_TEST(tp_schedule, tile_parallel_vectorize) { check_schedule(matmul, true, tile_2d, "for i_o in 0..floordiv(m, 4) parallel"); }

LOOM_TEST(tp_schedule, rules_that_do_not_apply_leave_the_program_unchanged) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @p(A: Buffer[(n, 3), f32]) {\n"
                               "  for i in 0..n {\n    A[i, 0] = 0.0\n    for j in 0..3 reduce {\n      A[i, 0] = A[i, 0] + 1.0\n    }\n  }\n}\n"));
  char *before = tp_print(fx.f);
  struct {
    loom_status s;
    const char *why;
  } cases[] = {
      {loom_tp_split(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "j"), 4, NULL, NULL, NULL), "extent is at most 4"},
      {loom_tp_split(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "i"), 1, NULL, NULL, NULL), "factor 1 is below 2"},
      {loom_tp_set_kind(fx.cx, loom_tp_find_loop(fx.f, "j"), LOOM_TP_LOOP_PARALLEL), "reduction loop"},
      {loom_tp_set_kind(fx.cx, loom_tp_find_loop(fx.f, "i"), LOOM_TP_LOOP_UNROLL), "not a constant"},
      {loom_tp_fuse(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "i"), NULL), "not a single loop"},
      {loom_tp_reorder(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "i")), "not a single loop"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cr_assert_not_null(cases[i].s, "case %zu should not apply", i);
    cr_assert_eq(loom_status_code(cases[i].s), LOOM_CODE_FAILED_PRECONDITION);
    cr_assert(strstr(loom_status_message(cases[i].s), cases[i].why) != NULL, "%s", loom_status_message(cases[i].s));
    loom_status_free(cases[i].s);
  }
  char *after = tp_print(fx.f);
  cr_assert_str_eq(after, before);
  free(before);
  free(after);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_schedule, split_of_provably_divisible_extent_has_no_tail) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @p(A: Buffer[(8*n,), f32]) {\n  for i in 0..8*n {\n    A[i] = 1.0\n  }\n}\n"));
  loom_tp_stmt *tail = (loom_tp_stmt *)1;
  cr_assert_null(loom_tp_split(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "i"), 4, NULL, NULL, &tail));
  cr_assert_null(tail);
  char *out = tp_print(fx.f);
  cr_assert(strstr(out, "for i_o in 0..(2*n) {") != NULL, "%s", out);
  free(out);
  tp_fixture_free(&fx);
}

/* The matmul of `ref` and its transformed copy `fx` give equal results at each m of ms (k = 5,
 * n = 3); `printed` (fx's text) goes into the failure message. */
static void matmuls_equal(tp_fixture *ref, tp_fixture *fx, const int64_t *ms, size_t nms, const char *printed) {
  for (size_t a = 0; a < nms; a++) {
    int64_t m = ms[a], k = 5, n = 3;
    float *want = calloc((size_t)(m * n), 4), *got = calloc((size_t)(m * n), 4);
    run(ref->cx, ref->f, true, m, k, n, want);
    run(fx->cx, fx->f, true, m, k, n, got);
    cr_assert_arr_eq(got, want, (size_t)(m * n) * 4, "m=%lld\n%s", (long long)m, printed);
    free(want);
    free(got);
  }
}

/* split_overlap: the row tail as one whole tile ending at the last row. Applies only where the
 * extent is provably >= the factor and the body may run twice for one iteration. */
LOOM_TEST(tp_schedule, split_overlap_tail_is_a_whole_tile_ending_at_the_last_row) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, matmul));
  cr_assert_null(tp_parse(&fx, matmul));
  loom_tp_stmt *i = loom_tp_find_loop(fx.f, "i");
  loom_status s = loom_tp_split_overlap(&fx.arena, fx.cx, fx.f, i, 4, NULL, NULL, NULL, NULL);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_FAILED_PRECONDITION);
  cr_assert(strstr(loom_status_message(s), "not provably >= 4") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  /* under the fact m >= 4 (as the matmul rule's general variant is) */
  loom_sym_facts_push(fx.cx);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 4, INT64_MAX));
  loom_tp_stmt *tail = NULL, *tail_inner = NULL;
  cr_assert_null(loom_tp_split_overlap(&fx.arena, fx.cx, fx.f, i, 4, NULL, NULL, &tail, &tail_inner));
  loom_sym_facts_pop(fx.cx);
  cr_assert_not_null(tail);
  cr_assert_not_null(tail_inner);
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  char *printed = tp_print(fx.f);
  cr_assert(strstr(printed, "for i_t in 0..min(floormod(m, 4), 1)") != NULL, "%s", printed);
  static const int64_t ms[] = {4, 5, 6, 7, 8, 13, 17};
  matmuls_equal(&ref, &fx, ms, sizeof ms / sizeof ms[0], printed);
  free(printed);
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
  /* a body that accumulates into what it does not first overwrite may not run twice */
  cr_assert_null(tp_parse(&fx, "prim @acc(A: Buffer[(m,), f32], C: Buffer[(m,), f32]) {\n"
                               "  for i in 0..m {\n    C[i] = C[i] + A[i]\n  }\n}\n"));
  i = loom_tp_find_loop(fx.f, "i");
  loom_sym_facts_push(fx.cx);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 4, INT64_MAX));
  s = loom_tp_split_overlap(&fx.arena, fx.cx, fx.f, i, 4, NULL, NULL, NULL, NULL);
  loom_sym_facts_pop(fx.cx);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_FAILED_PRECONDITION);
  cr_assert(strstr(loom_status_message(s), "does not overwrite what it reads") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

/* split_overlap_small: the remainder in small tiles, the last ending at the last iteration, the
 * first clamped at 0; needs m >= small; equal to the original for every m up to beyond two
 * whole tiles. */
LOOM_TEST(tp_schedule, split_overlap_small_runs_the_remainder_in_small_tiles) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, matmul));
  cr_assert_null(tp_parse(&fx, matmul));
  loom_tp_stmt *i = loom_tp_find_loop(fx.f, "i"), *tail = NULL, *tail_inner = NULL;
  loom_sym_facts_push(fx.cx);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 1, INT64_MAX));
  loom_status s = loom_tp_split_overlap_small(&fx.arena, fx.cx, fx.f, i, 5, 2, NULL, NULL, &tail, &tail_inner);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_FAILED_PRECONDITION); /* m >= 2 is not known */
  cr_assert(strstr(loom_status_message(s), "not provably >= 2") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 2, INT64_MAX));
  cr_assert_null(loom_tp_split_overlap_small(&fx.arena, fx.cx, fx.f, i, 5, 2, NULL, NULL, &tail, &tail_inner));
  loom_sym_facts_pop(fx.cx);
  cr_assert_not_null(tail);
  cr_assert_not_null(tail_inner);
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  char *printed = tp_print(fx.f);
  cr_assert(strstr(printed, "for i_t in 0..floordiv(floormod(m, 5) + 1, 2)") != NULL, "%s", printed);
  static const int64_t ms[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
  matmuls_equal(&ref, &fx, ms, sizeof ms / sizeof ms[0], printed);
  free(printed);
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
}

/* split_clamped: tiles of 5 whose last one ends at the last row (repeating it below 5 rows)
 * when the remainder is above 2, else one tile of 2 ending at the last row; needs m >= 2; equal
 * to the original for every m up to beyond two whole tiles. The main tiles' index repeats the
 * last row: cache_write refuses them, cache_write_aliased accumulates them. Rows below 2 of a
 * tile are never clamped (one base for them once unrolled). */
LOOM_TEST(tp_schedule, split_clamped_runs_a_large_remainder_as_one_more_tile) {
  tp_fixture ref, fx;
  cr_assert_null(tp_parse(&ref, matmul));
  cr_assert_null(tp_parse(&fx, matmul));
  loom_tp_stmt *i = loom_tp_find_loop(fx.f, "i"), *outer = NULL, *tail = NULL, *tail_inner = NULL;
  loom_sym_facts_push(fx.cx);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 1, INT64_MAX));
  loom_status s = loom_tp_split_clamped(&fx.arena, fx.cx, fx.f, i, 5, 2, NULL, NULL, &tail, &tail_inner);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_FAILED_PRECONDITION); /* m >= 2 is not known */
  cr_assert(strstr(loom_status_message(s), "not provably >= 2") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  cr_assert_null(loom_sym_assume_range(fx.cx, i->u.loop.extent, 2, INT64_MAX));
  cr_assert_null(loom_tp_split_clamped(&fx.arena, fx.cx, fx.f, i, 5, 2, &outer, NULL, &tail, &tail_inner));
  loom_sym_facts_pop(fx.cx);
  cr_assert_not_null(tail);
  cr_assert_not_null(tail_inner);
  s = loom_tp_cache_write(&fx.arena, fx.cx, outer, fx.f->params[2].buf, "acc", NULL, NULL);
  cr_assert_eq(loom_status_code(s), LOOM_CODE_FAILED_PRECONDITION);
  cr_assert(strstr(loom_status_message(s), "two footprint points may be one element") != NULL, "%s", loom_status_message(s));
  loom_status_free(s);
  cr_assert_null(loom_tp_cache_write_aliased(&fx.arena, fx.cx, outer, fx.f->params[2].buf, "acc", NULL, NULL));
  cr_assert_null(loom_tp_verify(fx.cx, fx.f));
  char *printed = tp_print(fx.f);
  cr_assert(strstr(printed, "for i_o in 0..floordiv(m + 2, 5)") != NULL, "%s", printed);
  /* a tile's first 2 rows (below the tail's 2, m >= 2) are never past the last: no clamp */
  cr_assert(strstr(printed, "[select(i_i <= 1, i_i + max(min(5*i_o, m - 5), 0), min(m - 1, i_i + max(min(5*i_o, m - 5), 0)))") != NULL,
            "%s", printed);
  static const int64_t ms[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  matmuls_equal(&ref, &fx, ms, sizeof ms / sizeof ms[0], printed);
  free(printed);
  tp_fixture_free(&ref);
  tp_fixture_free(&fx);
}

/* ---- distribution, cache_read, cache_write, and the CPU rule built on them ---------------- */

static loom_status distribute_j(tp_fixture *fx) {
  return loom_tp_distribute(&fx->arena, fx->cx, fx->f, loom_tp_find_loop(fx->f, "j"), NULL, NULL);
}
static loom_status accumulate_row(tp_fixture *fx) {
  return loom_tp_cache_write(&fx->arena, fx->cx, loom_tp_find_loop(fx->f, "i"), fx->f->params[2].buf, "acc", NULL,
                             NULL);
}
static loom_status pack_b(tp_fixture *fx) {
  return loom_tp_cache_read(&fx->arena, fx->cx, loom_tp_find_loop(fx->f, "i"), fx->f->params[1].buf, "Bp", NULL);
}
static loom_status cpu_rule(tp_fixture *fx) {
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_status s = loom_tp_schedule_cpu(&fx->arena, fx->cx, fx->f, &why);
  if (!s && !strstr(loom_strbuf_cstr(&why), "register-tiled"))
    s = LOOM_ERROR(INTERNAL, "not tiled: %s", loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  return s;
}

LOOM_TEST(tp_schedule, distribute_separates_init_from_reduction) {
  check_schedule(matmul, true, distribute_j, "    for j in 0..n {\n      C[i, j] = 0.0\n    }\n    for j in 0..n {\n");
}
LOOM_TEST(tp_schedule, cache_write_accumulates_a_row_in_a_local) {
  check_schedule(matmul, true, accumulate_row, "alloc acc: Local[(n,), f32]");
}
LOOM_TEST(tp_schedule, cache_read_packs_the_footprint) {
  check_schedule(matmul, true, pack_b, "      Bp[j, r] = B[r, j]\n");
}
LOOM_TEST(tp_schedule, cpu_rule_register_tiles_matmul_and_round_trips) {
  /* the 12-row tiles, the last one ending at row m - 1 and repeating it below 12 rows
   * (split_clamped); only rows 6..11 of a tile carry the clamp */
  check_schedule(matmul, true, cpu_rule,
                 "acc[i_i, j_i] = acc[i_i, j_i] + A[select(i_i <= 5, i_i + max(min(12*i_o, m - 12), 0), min(m - 1, i_i + "
                 "max(min(12*i_o, m - 12), 0))), r] * Bp[r, j_i]\n");
}

/* Two axes fused into one loop (loom_tp_fuse): [floordiv(x, s), floormod(x, s)] on axes of
 * extents (b, s) is the one row-major index x, so distinct x reach distinct elements
 * (distribute and cache_write prove it); a divisor other than the axis's extent proves nothing. */
LOOM_TEST(tp_schedule, a_fused_pair_of_axes_is_one_index) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @p(A: Buffer[(b, s, k), f32], C: Buffer[(b, s, n), f32], D: Buffer[(b, s, n), f32]) {\n"
                               "  for f in 0..b * s {\n    for j in 0..n {\n      C[floordiv(f, s), floormod(f, s), j] = 0.0\n    }\n"
                               "    for j2 in 0..n {\n      D[floordiv(f, s), floormod(f, s), j2] = 1.0\n    }\n  }\n"
                               "  for g in 0..b * s {\n    D[floordiv(g, 2), floormod(g, 2), 0] = 1.0\n"
                               "    C[floordiv(g, 2), floormod(g, 2), 0] = 2.0\n  }\n"
                               "  for o in 0..b {\n    for t in 0..4 {\n      for l in 0..n {\n"
                               "        C[floordiv(4 * o + t, s), floormod(4 * o + t, s), l] = A[floordiv(4 * o + t, s), floormod(4 * o + t, s), 0]\n"
                               "      }\n    }\n  }\n"
                               "  for q in 0..b {\n    for u in 0..4 {\n      D[floordiv(4 * q + u, 2), floormod(4 * q + u, 2), 0] = 1.0\n"
                               "    }\n  }\n}\n"));
  loom_status s = loom_tp_distribute(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "f"), NULL, NULL);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_cache_write(&fx.arena, fx.cx, loom_tp_find_loop(fx.f, "o"), fx.f->params[1].buf, "acc", NULL, NULL);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  char *printed = tp_print(fx.f);
  cr_assert(strstr(printed, "alloc acc: Local[(4, n), f32]") != NULL, "%s", printed);
  free(printed);
  s = loom_tp_distribute(&fx.arena, fx.cx, fx.f, loom_tp_find_loop(fx.f, "g"), NULL, NULL);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "two iterations may access one element of 'D'") != NULL, "%s",
            loom_status_message(s));
  loom_status_free(s);
  s = loom_tp_cache_write(&fx.arena, fx.cx, loom_tp_find_loop(fx.f, "q"), fx.f->params[2].buf, "acc2", NULL, NULL);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "two footprint points may be one element") != NULL, "%s",
            loom_status_message(s));
  loom_status_free(s);
  tp_fixture_free(&fx);
}

LOOM_TEST(tp_schedule, distribute_and_caches_refuse_what_they_cannot_prove) {
  tp_fixture fx;
  cr_assert_null(tp_parse(&fx, "prim @p(A: Buffer[(n + 1,), f32], B: Buffer[(n,), f32], C: Buffer[(2 * n,), f32]) {\n"
                               "  for i in 0..n {\n    A[i + 1] = A[i] + 1.0\n    B[i] = A[i]\n  }\n"
                               "  for j in 0..n {\n    C[j] = 1.0\n    C[2 * j] = B[j]\n  }\n"
                               "  for l in 0..n {\n    for t in 0..2 {\n      for u in 0..2 {\n        C[l + t + u] = B[l]\n      }\n    }\n  }\n}\n"));
  char *before = tp_print(fx.f);
  loom_tp_stmt *i = loom_tp_find_loop(fx.f, "i"), *j = loom_tp_find_loop(fx.f, "j"), *l = loom_tp_find_loop(fx.f, "l");
  struct {
    loom_status s;
    const char *why;
  } cases[] = {
      {loom_tp_distribute(&fx.arena, fx.cx, fx.f, i, NULL, NULL), "two iterations may access one element of 'A'"},
      {loom_tp_distribute(&fx.arena, fx.cx, fx.f, j, NULL, NULL), "two iterations may access one element of 'C'"},
      {loom_tp_cache_read(&fx.arena, fx.cx, l, fx.f->params[2].buf, "Cp", NULL), "the loop writes it"},
      {loom_tp_cache_write(&fx.arena, fx.cx, j, fx.f->params[2].buf, "acc", NULL, NULL), "different indices"},
      {loom_tp_cache_write(&fx.arena, fx.cx, l, fx.f->params[2].buf, "acc", NULL, NULL),
       "two footprint points may be one element"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    cr_assert_not_null(cases[k].s, "case %zu should not apply", k);
    cr_assert_eq(loom_status_code(cases[k].s), LOOM_CODE_FAILED_PRECONDITION);
    cr_assert(strstr(loom_status_message(cases[k].s), cases[k].why) != NULL, "%s", loom_status_message(cases[k].s));
    loom_status_free(cases[k].s);
  }
  char *after = tp_print(fx.f);
  cr_assert_str_eq(after, before);
  free(before);
  free(after);
  tp_fixture_free(&fx);
}

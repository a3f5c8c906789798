/* test_cpu_conv.c — the CPU rule for the convolution over packed weights (tensorprog/schedule_conv.c)
 * on the generator's programs (tensorprog/gen_conv_packed.c): scheduled for 64-, 32- and 16-byte
 * vectors, compiled, and compared with the reference interpreter running the program as generated,
 * at grids of 0 to 700 columns (column tiles of 8, 4, 2 and 1 below a vector, 1-, 2- and 3-vector
 * tiles, the overlapping last tile), channel counts that make one column chunk or several, batch 0 to 2, with 1 thread, 2
 * threads and the runtime pool. A nest the rule must not take (the input read at stride 2 along
 * the columns) keeps the generic rules. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_test_util.h"
#include "tensorprog/tp_gen.h"
#include "tensorprog/tp_schedule_cpu.h"

/* One run: the program's symbols from the buffers' shapes; `e` the pitch scalars. */
typedef struct conv_run {
  int64_t n, c, q, p, l; /* batch, channels, weight blocks, grid columns, plane length */
  int64_t e;             /* the row pitch (2-D and 3-D: every pitch scalar) */
  int64_t groups;        /* 0 or 1, or the form's groups (c and q multiples of them) */
} conv_run;

/* Buffers of f for the run r, filled at random: X (n, c, S, l), Wp (q, K*c/G, 8), [Bias (8*q)], Y (n, 8*q, p). */
static void run_args(const loom_tp_func *f, const conv_run *r, int64_t S, int64_t K, loom_tp_arg *args, int64_t shapes[][4],
                     loom_test_rng *rng) {
  size_t nb = 0;
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_tp_param *pp = &f->params[i];
    if (!pp->is_buffer) {
      args[i] = (loom_tp_arg){.scalar = r->e};
      continue;
    }
    int64_t *sh = shapes[nb++];
    const char *name = pp->buf->name;
    if (!strcmp(name, "X")) sh[0] = r->n, sh[1] = r->c, sh[2] = S, sh[3] = r->l;
    else if (!strcmp(name, "Wp")) sh[0] = r->q, sh[1] = K * r->c / (r->groups > 1 ? r->groups : 1), sh[2] = 8;
    else if (!strcmp(name, "Bias")) sh[0] = 8 * r->q;
    else sh[0] = r->n, sh[1] = 8 * r->q, sh[2] = r->p;
    size_t count = 1;
    for (int d = 0; d < pp->buf->ndim; d++) count *= (size_t)sh[d];
    void *data = calloc(count ? count : 1, sizeof(float));
    cr_assert_not_null(data);
    cpu_fill(LOOM_DTYPE_F32, data, count, rng);
    args[i] = (loom_tp_arg){.data = data, .shape = sh};
  }
}

typedef loom_status (*conv_gen_fn)(loom_arena *, loom_sym_ctx *, const char *, loom_dtype, const loom_tp_conv_packed *,
                                   loom_tp_func **);

/* The program gen makes for g, as text (the caller frees it), parsed into fx and scheduled there
 * for `vector_bytes` by the convolution rule (asserted), and parsed unscheduled into ref (optional). */
static char *gen_scheduled_on(conv_gen_fn gen, const loom_tp_conv_packed *g, loom_tp_cpu_params params, tp_fixture *fx,
                              tp_fixture *ref) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f;
  cr_assert_null(gen(&a, cx, "cp", LOOM_DTYPE_F32, g, &f));
  char *text = tp_print(f);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
  if (ref) cpu_parse_ok(ref, text);
  cpu_parse_ok(fx, text);
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  cr_assert_null(loom_tp_schedule_cpu_for(&fx->arena, fx->cx, fx->f, &params, &why));
  cr_assert_null(loom_tp_verify(fx->cx, fx->f));
  cr_assert_not_null(strstr(loom_strbuf_cstr(&why), "convolution over packed weights"), "why:\n%s", loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  return text;
}

static char *gen_scheduled(conv_gen_fn gen, const loom_tp_conv_packed *g, int vector_bytes, tp_fixture *fx, tp_fixture *ref) {
  return gen_scheduled_on(gen, g, (loom_tp_cpu_params){.vector_bytes = vector_bytes}, fx, ref);
}

/* Generates with gen, schedules a copy for `vector_bytes`, and compares the compiled schedule with
 * the interpreter on the runs. */
static void check_on(conv_gen_fn gen, const loom_tp_conv_packed *g, loom_tp_cpu_params params, const conv_run *runs, size_t nruns) {
  tp_fixture ref, fx;
  int vector_bytes = params.vector_bytes;
  char *text = gen_scheduled_on(gen, g, params, &fx, &ref);
  loom_cpu_jit *jit;
  cr_assert_null(loom_cpu_jit_create(NULL, &jit));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int64_t S = loom_tp_conv_phase_planes(g), K = 1;
  for (int i = 0; i < g->n; i++) K *= g->kernel[i];
  loom_test_rng rng = {loom_test_seed()};
  for (size_t k = 0; k < nruns; k++) {
    loom_tp_arg args[8], got[8];
    int64_t shapes[8][4];
    run_args(ref.f, &runs[k], S, K, args, shapes, &rng);
    size_t ny = ref.f->nparams - 1, ycount = (size_t)(runs[k].n * 8 * runs[k].q * runs[k].p);
    cr_assert_null(loom_tp_interpret(ref.cx, ref.f, args, ref.f->nparams));
    static const uint32_t threads[] = {1, 2, CPU_CTX_POOL};
    for (size_t t = 0; t < 3; t++) {
      memcpy(got, args, sizeof got);
      float *y = calloc(ycount ? ycount : 1, sizeof(float));
      cr_assert_not_null(y);
      got[ny].data = y;
      cpu_ctx c;
      cpu_ctx_init(&c, threads[t]);
      cr_assert_eq(cpu_call(fx.cx, fx.f, fn, got, fx.f->nparams, &c), 0, "%s", c.error);
      cpu_ctx_fini(&c);
      const float *want = args[ny].data;
      for (size_t i = 0; i < ycount; i++)
        cr_assert(fabsf(y[i] - want[i]) <= 1e-4f * (1.0f + fabsf(want[i])), "vector bytes %d, run %zu (p %lld, c %lld), threads %u: Y[%zu] %g, want %g",
                  vector_bytes, k, (long long)runs[k].p, (long long)runs[k].c, threads[t], i, (double)y[i], (double)want[i]);
      free(y);
    }
    for (size_t i = 0; i < ref.f->nparams; i++) free(args[i].data);
  }
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
  tp_fixture_free(&ref);
  free(text);
}

static void check(conv_gen_fn gen, const loom_tp_conv_packed *g, int vector_bytes, const conv_run *runs, size_t nruns) {
  check_on(gen, g, (loom_tp_cpu_params){.vector_bytes = vector_bytes}, runs, nruns);
}

/* Runs over grids around every tile width's threshold; l keeps the taps' reads inside X (max_rows
 * rows of pitch e below plus max_cols columns). */
static size_t runs_for(conv_run *out, int64_t max_rows, int64_t max_cols) {
  static const int64_t ps[] = {0, 1, 15, 16, 17, 31, 32, 33, 35, 40, 47, 48, 49, 80, 95, 96, 191, 192, 193, 250};
  static const int64_t cs[] = {3, 1, 5, 2, 4, 7};
  size_t n = 0;
  for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
    conv_run r = {.n = i % 5 == 4 ? 2 : i == 6 ? 0 : 1, .c = cs[i % 6], .q = 1 + (int64_t)(i % 3), .p = ps[i], .e = 5 + (int64_t)(i % 4)};
    r.l = r.p + max_rows * r.e + max_cols + 1;
    out[n++] = r;
  }
  return n;
}

static size_t few_runs(conv_run *out, int64_t max_rows, int64_t max_cols, int64_t cmax);

LOOM_TEST(cpu_conv, packed_3x3_stride_one_every_tile_width) {
  loom_tp_conv_packed g = {.n = 2, .bias = true, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}};
  conv_run runs[32];
  check(loom_tp_gen_conv_packed, &g, 64, runs, runs_for(runs, 2, 2));
  /* 8-lane and 4-lane vectors: one vector per tile */
  check(loom_tp_gen_conv_packed, &g, 32, runs, few_runs(runs, 2, 2, 3));
  check(loom_tp_gen_conv_packed, &g, 16, runs, few_runs(runs, 2, 2, 3));
}

/* 2 vectors of 16 against 1 by the columns each computes (schedule_conv.c: 20 * cover32 <= 23 *
 * cover16): the 64-byte program guards its 2-vector tiles with that comparison, so that 35 columns
 * (a 7 x 5 plane) take three tiles of 16 (48 columns computed), not two of 32 (64); 33 to 47, 80
 * and the other widths against the interpreter in packed_3x3_stride_one_every_tile_width. */
LOOM_TEST(cpu_conv, packed_two_vectors_where_they_waste_fewer_columns) {
  loom_tp_conv_packed g = {.n = 2, .bias = true, .kernel = {1, 1}, .dilation = {1, 1}, .stride = {1, 1}};
  tp_fixture fx;
  free(gen_scheduled(loom_tp_gen_conv_packed, &g, 64, &fx, NULL));
  char *text = tp_print(fx.f);
  cr_assert(strstr(text, "p >= 32 && 368*floordiv(p + 15, 16) >= 640*floordiv(p + 31, 32)") != NULL, "no 2-vs-1 cover guard\n%s", text);
  free(text);
  tp_fixture_free(&fx);
  conv_run runs[4] = {{.n = 2, .c = 3, .q = 2, .p = 35, .e = 7}, {.n = 1, .c = 5, .q = 1, .p = 40, .e = 8}, {.n = 1, .c = 2, .q = 3, .p = 80, .e = 9}};
  for (int i = 0; i < 3; i++) runs[i].l = runs[i].p + 1;
  check(loom_tp_gen_conv_packed, &g, 64, runs, 3);
}

/* Fewer columns than a vector (a 1-D convolution over a few frames, the patch embedding of a small
 * image): column tiles of 8, 4, 2 and 1 columns with the weight block's 8 output channels as the
 * vector (before: the plain nest, scalar, 60x slower at 15 columns). Every tile width, the
 * overlapping last tile, 0, 1 and primes, for 64-, 32- and 16-byte vectors; the scheduled program
 * holds the tiles the vector width allows, their update vectorized over the output channels. */
LOOM_TEST(cpu_conv, packed_fewer_columns_than_a_vector) {
  static const int64_t ps[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 11, 13, 15};
  static const int vbs[] = {64, 32, 16};
  /* Whisper's second convolution (kernel 3, stride 2: two phase planes) and a 3 x 3 */
  const loom_tp_conv_packed forms[] = {{.n = 1, .bias = true, .kernel = {3}, .dilation = {1}, .stride = {2}},
                                       {.n = 2, .bias = false, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}}};
  for (size_t v = 0; v < 3; v++) {
    int lanes = vbs[v] / 4;
    for (size_t f = 0; f < 2; f++) {
      conv_run runs[12];
      size_t n = 0;
      for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
        if (ps[i] >= lanes + 3) continue;
        conv_run r = {.n = i % 4 == 3 ? 2 : 1, .c = 1 + (int64_t)(i % 5), .q = 1 + (int64_t)(i % 3), .p = ps[i], .e = 4 + (int64_t)(i % 3)};
        r.l = r.p + 2 * r.e + 3;
        runs[n++] = r;
      }
      check(loom_tp_gen_conv_packed, &forms[f], vbs[v], runs, n);
      tp_fixture fx;
      free(gen_scheduled(loom_tp_gen_conv_packed, &forms[f], vbs[v], &fx, NULL));
      char *text = tp_print(fx.f);
      for (int C = 1; C <= 8; C *= 2) {
        char want[64];
        snprintf(want, sizeof want, "for ii_uc%d in 0..8 vectorize", C);
        cr_assert_eq(strstr(text, want) != NULL, C < lanes, "vector bytes %d, %zu-D: %s %s\n%s", vbs[v], f + 1, want,
                     C < lanes ? "missing" : "unexpected", text);
      }
      free(text);
      tp_fixture_free(&fx);
    }
  }
}

/* Fewer runs (the interpreter's time): a grid in each tile width's range and past a threshold. */
static size_t few_runs(conv_run *out, int64_t max_rows, int64_t max_cols, int64_t cmax) {
  static const int64_t ps[] = {0, 17, 33, 49, 193};
  for (size_t i = 0; i < 5; i++) {
    out[i] = (conv_run){.n = i == 0 ? 2 : 1, .c = 1 + (int64_t)i % cmax, .q = 1 + (int64_t)(i % 2), .p = ps[i], .e = 6 + (int64_t)i};
    out[i].l = out[i].p + max_rows * out[i].e + max_cols + 1;
  }
  return 5;
}

LOOM_TEST(cpu_conv, packed_strided_dilated_and_1d_3d) {
  conv_run runs[8];
  /* 7 x 7 stride 2: four phase planes, taps reaching 3 rows / columns */
  loom_tp_conv_packed stem = {.n = 2, .bias = false, .kernel = {7, 7}, .dilation = {1, 1}, .stride = {2, 2}};
  check(loom_tp_gen_conv_packed, &stem, 64, runs, few_runs(runs, 3, 3, 2));
  /* stride 3 dilation 2 (three phases), 1-D (the innermost tap loop the only one) */
  loom_tp_conv_packed sd = {.n = 2, .bias = true, .kernel = {3, 2}, .dilation = {2, 2}, .stride = {3, 1}};
  check(loom_tp_gen_conv_packed, &sd, 64, runs, few_runs(runs, 1, 2, 3));
  loom_tp_conv_packed one = {.n = 1, .bias = true, .kernel = {5}, .dilation = {1}, .stride = {1}};
  check(loom_tp_gen_conv_packed, &one, 64, runs, few_runs(runs, 0, 4, 3));
  /* 3-D: the pitches e*e and e, one tap row of each */
  loom_tp_conv_packed three = {.n = 3, .bias = false, .kernel = {2, 3, 2}, .dilation = {1, 1, 1}, .stride = {1, 1, 1}};
  size_t n = few_runs(runs, 0, 0, 2);
  for (size_t i = 0; i < n; i++) runs[i].l = runs[i].p + runs[i].e * runs[i].e + 2 * runs[i].e + 2;
  check(loom_tp_gen_conv_packed, &three, 32, runs, n);
}

/* Channels enough that the columns come in several chunks (2^17 floats of the input per chunk: 1400
 * channels make chunks of one 48-column tile), a 1 x 1 kernel to keep the interpreter's work small. */
LOOM_TEST(cpu_conv, packed_columns_in_several_chunks) {
  loom_tp_conv_packed g = {.n = 2, .bias = true, .kernel = {1, 1}, .dilation = {1, 1}, .stride = {1, 1}};
  const conv_run runs[] = {{.n = 1, .c = 1400, .q = 2, .p = 200, .l = 200, .e = 20}, {.n = 2, .c = 700, .q = 1, .p = 150, .l = 150, .e = 15}};
  check(loom_tp_gen_conv_packed, &g, 64, runs, 2);
}

/* The input read at stride 2 along the output positions: not the nest the rule tiles. */
LOOM_TEST(cpu_conv, strided_column_reads_keep_the_generic_rules) {
  tp_fixture fx;
  cpu_parse_ok(&fx, "prim @s2(X: Buffer[(n, c, 1, l), f32], Wp: Buffer[(q, c, 8), f32], Y: Buffer[(n, 8*q, p), f32]) {\n"
                    "  for i0 in 0..n { for ob in 0..q { for ii in 0..8 { for j in 0..p {\n"
                    "    Y[i0, 8*ob + ii, j] = 0.0\n"
                    "    for r in 0..c reduce { for t0 in 0..1 reduce {\n"
                    "      Y[i0, 8*ob + ii, j] = Y[i0, 8*ob + ii, j] + Wp[ob, r + t0, ii] * X[i0, r, 0, 2*j + t0] } } } } } }\n}\n");
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_tp_cpu_params params = {.vector_bytes = 64};
  cr_assert_null(loom_tp_schedule_cpu_for(&fx.arena, fx.cx, fx.f, &params, &why));
  cr_assert_null(strstr(loom_strbuf_cstr(&why), "convolution over packed weights"), "why:\n%s", loom_strbuf_cstr(&why));
  loom_strbuf_free(&why);
  tp_fixture_free(&fx);
}

/* conv_phases against the interpreter is covered end to end (e2e_conv_packed); here its phase
 * arithmetic: the steps and counts of strides, dilations and 1 x 1 kernels. */
LOOM_TEST(cpu_conv, phase_counts) {
  loom_tp_conv_packed g = {.n = 3, .kernel = {3, 1, 3}, .dilation = {1, 1, 2}, .stride = {2, 2, 4}};
  cr_assert_eq(loom_tp_conv_phase_count(&g, 0), 2);
  cr_assert_eq(loom_tp_conv_phase_count(&g, 1), 1); /* a 1-tap axis reads residue 0 only */
  cr_assert_eq(loom_tp_conv_phase_step(&g, 2), 2);  /* gcd(2, 4): residues 0 and 2 */
  cr_assert_eq(loom_tp_conv_phase_count(&g, 2), 2);
  cr_assert_eq(loom_tp_conv_phase_planes(&g), 4);
}

/* The tiles' parallel loop at (n, c, q, p) (schedule_conv.c tiles, 3-vector tiles): its
 * iterations, and the fewest and most tiles one holds; asserts that together they hold every
 * tile of every (batch, weight block) once. */
typedef struct chunking {
  int64_t iters, lo, hi;
} chunking;

static chunking chunks_at(const loom_tp_conv_packed *g, int64_t n, int64_t c, int64_t q, int64_t p) {
  tp_fixture fx;
  char *text = gen_scheduled(loom_tp_gen_conv_packed, g, 64, &fx, NULL);
  loom_tp_stmt *par = loom_tp_find_loop(fx.f, "iq_v3"), *in = loom_tp_find_loop(fx.f, "jt_v3");
  cr_assert(par && in && par->u.loop.kind == LOOM_TP_LOOP_PARALLEL, "%s", text);
  loom_sym_env *env;
  cr_assert_null(loom_sym_env_create(NULL, &env));
  const int64_t vals[] = {n, c, q, p};
  const char *names[] = {"n", "c", "q", "p"};
  for (size_t j = 0; j < fx.f->nsyms; j++)
    for (size_t k = 0; k < 4; k++)
      if (!strcmp(loom_sym_var_name(fx.f->syms[j]), names[k])) cr_assert_null(loom_sym_env_set(env, fx.f->syms[j], vals[k]));
  chunking r = {0, INT64_MAX, 0};
  cr_assert_null(loom_sym_eval(fx.cx, par->u.loop.extent, env, &r.iters));
  int64_t sum = 0;
  for (int64_t i = 0; i < r.iters; i++) {
    int64_t t;
    cr_assert_null(loom_sym_env_set(env, par->u.loop.var, i));
    cr_assert_null(loom_sym_eval(fx.cx, in->u.loop.extent, env, &t));
    r.lo = t < r.lo ? t : r.lo;
    r.hi = t > r.hi ? t : r.hi;
    sum += t;
  }
  cr_assert_eq(sum, n * q * ((p + 47) / 48), "p %lld: %lld tiles in the chunks", (long long)p, (long long)sum);
  loom_sym_env_destroy(env);
  tp_fixture_free(&fx);
  free(text);
  return r;
}

/* Chunks that follow the threads: at least 16 parallel iterations where batch x weight blocks
 * are fewer (up to one tile each), tiles dealt evenly. ResNet's stem (7x7/2, 3 -> 64, 112 x 115
 * columns: 269 tiles) was 8 weight blocks x chunks of 227 and 42 tiles; 16 output channels at
 * 56 x 58 columns (68 tiles, 64 channels: chunks of 42) were 4 iterations for any number of threads. */
LOOM_TEST(cpu_conv, column_chunks_even_and_enough_for_the_threads) {
  loom_tp_conv_packed stem = {.n = 2, .bias = false, .kernel = {7, 7}, .dilation = {1, 1}, .stride = {2, 2}};
  chunking s = chunks_at(&stem, 1, 3, 8, 112 * 115);
  cr_assert(s.iters == 16 && s.lo == 134 && s.hi == 135, "stem: %lld iterations of %lld..%lld tiles", (long long)s.iters,
            (long long)s.lo, (long long)s.hi);
  loom_tp_conv_packed k3 = {.n = 2, .bias = true, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}};
  chunking few = chunks_at(&k3, 1, 64, 2, 56 * 58);
  cr_assert(few.iters == 16 && few.lo == 8 && few.hi == 9, "q 2: %lld iterations of %lld..%lld tiles", (long long)few.iters,
            (long long)few.lo, (long long)few.hi);
  /* fewer tiles than 16 / q: one tile per chunk; batch x blocks of 16 or more: the cache's chunks */
  chunking small = chunks_at(&k3, 1, 64, 1, 5 * 48 + 1);
  cr_assert(small.iters == 6 && small.lo == 1 && small.hi == 1, "%lld iterations", (long long)small.iters);
  chunking wide = chunks_at(&k3, 2, 64, 16, 56 * 58);
  cr_assert(wide.iters == 64 && wide.lo == 34 && wide.hi == 34, "%lld iterations of %lld..%lld", (long long)wide.iters,
            (long long)wide.lo, (long long)wide.hi);
}

/* Grids of prime columns cut into many small chunks (few weight blocks), batch 0 to 2, against the
 * interpreter with 1 and 2 threads and the pool (check). */
LOOM_TEST(cpu_conv, packed_prime_grids_in_many_chunks) {
  loom_tp_conv_packed g = {.n = 2, .bias = true, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}};
  conv_run runs[] = {{.n = 1, .c = 3, .q = 1, .p = 509, .e = 7}, {.n = 2, .c = 2, .q = 3, .p = 701, .e = 11},
                     {.n = 0, .c = 1, .q = 1, .p = 97, .e = 5}, {.n = 1, .c = 1, .q = 2, .p = 1, .e = 3}};
  for (size_t i = 0; i < 4; i++) runs[i].l = runs[i].p + 2 * runs[i].e + 3;
  check(loom_tp_gen_conv_packed, &g, 64, runs, 4);
}

/* Channel tiles (machines whose 512-bit FMAs are two 256-bit halves, Zen 4: splits_512): 7 columns
 * by 3 weight blocks of 8 lanes, chosen at run time where they compute fewer columns than the
 * 16-lane tiles, counting the blocks a last group repeats (q not a multiple of 3), on at most 256
 * columns. Grids of 0, 1, fewer than 7, a CNN's 7 x 7 (49), a 3 x 3's grid of 7 rows (56), primes,
 * 196 and the bound, with q from 1 to 5 (both choices at 49 columns: q = 3 and 5 take the channel
 * tiles, q = 4 the 2-vector ones), for a 1 x 1, a 3 x 3, a strided 3 x 3 (phase planes) and a 1-D
 * kernel, against the interpreter with 1 and 2 threads; the program holds them only on such a
 * machine. */
LOOM_TEST(cpu_conv, packed_channel_tiles_on_small_planes) {
  static const int64_t ps[] = {0, 1, 6, 7, 8, 13, 49, 56, 97, 196, 256, 257};
  static const int64_t qs[] = {3, 5, 4, 1, 2, 3, 3, 4, 5, 3, 3, 3};
  const loom_tp_conv_packed forms[] = {{.n = 2, .bias = true, .kernel = {1, 1}, .dilation = {1, 1}, .stride = {1, 1}},
                                       {.n = 2, .bias = false, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}},
                                       {.n = 2, .bias = true, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {2, 2}},
                                       {.n = 1, .bias = true, .kernel = {5}, .dilation = {1}, .stride = {1}}};
  const loom_tp_cpu_params zen4 = {.vector_bytes = 64, .splits_512 = true};
  for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
    conv_run runs[sizeof ps / sizeof *ps];
    size_t n = 0;
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
      if (f > 0 && ps[i] > 100 && i % 2) continue; /* the interpreter's time: the larger grids for the 1 x 1 */
      conv_run r = {.n = i == 4 ? 2 : i == 0 ? 0 : 1, .c = 1 + (int64_t)(i % 4), .q = qs[i], .p = ps[i], .e = 7 + (int64_t)(i % 3)};
      r.l = r.p + 2 * r.e + 5;
      runs[n++] = r;
    }
    check_on(loom_tp_gen_conv_packed, &forms[f], zen4, runs, n);
    tp_fixture fx;
    free(gen_scheduled_on(loom_tp_gen_conv_packed, &forms[f], zen4, &fx, NULL));
    char *text = tp_print(fx.f);
    cr_assert(strstr(text, "alloc acc_c7g3: Local[(7, 3, 8), f32]") && strstr(text, "256 >= p"), "no channel tiles\n%s", text);
    free(text);
    tp_fixture_free(&fx);
    free(gen_scheduled(loom_tp_gen_conv_packed, &forms[f], 64, &fx, NULL));
    text = tp_print(fx.f);
    cr_assert(!strstr(text, "acc_c7g3"), "channel tiles on a machine with full-width 512-bit FMAs\n%s", text);
    free(text);
    tp_fixture_free(&fx);
  }
}

/* AVX2's channel tiles (schedule_conv.c NARROW_*: 4 columns by 2 weight blocks, each block's 8 output
 * channels one vector, in the chunked order), chosen at run time where the reduction (input channels
 * x taps) is 128 or longer and the grid has 4 columns or more; else the 8 x 8 tiles. Grids of 0, 1,
 * fewer than 4, 4, primes, a 3 x 3's rows and a grid in several chunks, q odd (the last group
 * repeating a block) and even, reductions on both sides of the bound (1 x 1 over 127 and 128
 * channels; 3 x 3 and a strided 3 x 3 over 15 channels: 135), 1-D, against the interpreter with 1
 * and 2 threads; the program holds them for 32-byte vectors only. */
LOOM_TEST(cpu_conv, packed_channel_tiles_for_avx2) {
  const loom_tp_conv_packed forms[] = {{.n = 2, .bias = true, .kernel = {1, 1}, .dilation = {1, 1}, .stride = {1, 1}},
                                       {.n = 2, .bias = false, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}},
                                       {.n = 2, .bias = true, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {2, 2}},
                                       {.n = 1, .bias = true, .kernel = {5}, .dilation = {1}, .stride = {1}}};
  static const int64_t ps[] = {0, 1, 3, 4, 5, 13, 56, 97};
  for (size_t f = 0; f < sizeof forms / sizeof *forms; f++) {
    conv_run runs[12];
    size_t n = 0;
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) {
      int64_t c = f == 0 ? (i % 2 ? 127 : 128) : f == 3 ? 26 : 15; /* 1-D: 26 x 5 = 130 */
      conv_run r = {.n = i == 4 ? 2 : i == 0 ? 0 : 1, .c = c, .q = 1 + (int64_t)(i % 3), .p = ps[i], .e = 7 + (int64_t)(i % 3)};
      r.l = r.p + 2 * r.e + 5;
      runs[n++] = r;
    }
    if (f == 0) /* several chunks: 2^17 floats of the input per chunk, 1400 channels x 4 columns a tile */
      runs[n++] = (conv_run){.n = 1, .c = 1400, .q = 3, .p = 211, .l = 211, .e = 20};
    check(loom_tp_gen_conv_packed, &forms[f], 32, runs, n);
    static const int vbs[] = {32, 64, 16};
    for (int v = 0; v < 3; v++) {
      tp_fixture fx;
      free(gen_scheduled(loom_tp_gen_conv_packed, &forms[f], vbs[v], &fx, NULL));
      char *text = tp_print(fx.f);
      cr_assert_eq(strstr(text, "alloc acc_c4g2: Local[(4, 2, 8), f32]") != NULL, v == 0, "vector bytes %d\n%s", vbs[v], text);
      free(text);
      tp_fixture_free(&fx);
    }
  }
}

/* AVX2's channel tiles of three blocks for a kernel of one tap (schedule_conv.c NARROW_BLOCKS_1X1: 4
 * columns by 3 weight blocks, 12 accumulators) where the reduction is 128 to 256 and rounding the
 * blocks up to threes costs at most a quarter more than to twos (q 3, 5, 6, 7 take them; 1, 2, 4 and
 * a reduction of 257 keep two blocks), grids of 0, 1, fewer than 4, 4, primes and 7 x 7, against the
 * interpreter with 1 and 2 threads; the program holds them for a 1 x 1 with 32-byte vectors only.
 * Then grouped forms (conv_packed's G: block ob reads its group's input channels): a 3 x 3 of 2
 * groups over 32 channels (a reduction of 144: the two-block channel tiles, whose blocks lie in two
 * groups at q 2) and a 1 x 1 of 3 groups over 390 channels (130 each: the three-block tiles, one
 * block per group at q 3), at 32, 64 and 16-byte vectors. */
LOOM_TEST(cpu_conv, packed_three_block_1x1_tiles_and_groups) {
  const loom_tp_conv_packed k1 = {.n = 2, .bias = true, .kernel = {1, 1}, .dilation = {1, 1}, .stride = {1, 1}};
  static const int64_t ps[] = {0, 1, 3, 4, 5, 13, 49, 97}, qs[] = {3, 5, 1, 2, 4, 6, 7, 3}, cs[] = {128, 200, 256, 257, 144, 129, 160, 130};
  conv_run runs[8];
  for (size_t i = 0; i < 8; i++) {
    runs[i] = (conv_run){.n = i == 4 ? 2 : i == 0 ? 0 : 1, .c = cs[i], .q = qs[i], .p = ps[i], .e = 7};
    runs[i].l = runs[i].p;
  }
  check(loom_tp_gen_conv_packed, &k1, 32, runs, 8);
  const loom_tp_conv_packed k3 = {.n = 2, .bias = false, .kernel = {3, 3}, .dilation = {1, 1}, .stride = {1, 1}};
  static const int vbs[] = {32, 64, 16};
  for (int v = 0; v < 3; v++)
    for (int f = 0; f < 2; f++) {
      tp_fixture fx;
      free(gen_scheduled(loom_tp_gen_conv_packed, f ? &k3 : &k1, vbs[v], &fx, NULL));
      char *text = tp_print(fx.f);
      cr_assert_eq(strstr(text, "alloc acc_c4g3: Local[(4, 3, 8), f32]") != NULL, v == 0 && f == 0, "vector bytes %d, %s\n%s", vbs[v],
                   f ? "3 x 3" : "1 x 1", text);
      free(text);
      tp_fixture_free(&fx);
    }
  loom_tp_conv_packed g3 = k3, g1 = k1;
  g3.groups = 2;
  g1.groups = 3;
  conv_run r3[] = {{.n = 1, .c = 32, .q = 2, .p = 56, .e = 8, .groups = 2}, {.n = 2, .c = 32, .q = 4, .p = 13, .e = 5, .groups = 2},
                   {.n = 1, .c = 2, .q = 2, .p = 97, .e = 11, .groups = 2}};
  conv_run r1[] = {{.n = 1, .c = 390, .q = 3, .p = 49, .e = 7, .groups = 3}, {.n = 2, .c = 390, .q = 6, .p = 5, .e = 5, .groups = 3},
                   {.n = 1, .c = 6, .q = 3, .p = 101, .e = 7, .groups = 3}};
  for (size_t i = 0; i < 3; i++) {
    r3[i].l = r3[i].p + 2 * r3[i].e + 3;
    r1[i].l = r1[i].p;
  }
  for (int v = 0; v < 3; v++) {
    check(loom_tp_gen_conv_packed, &g3, vbs[v], r3, 3);
    check(loom_tp_gen_conv_packed, &g1, vbs[v], r1, 3);
  }
}

/* test_e2e_math.c — compiled math against the reference interpreter at the points where fast
 * forms could differ: pow with a constant exponent (legalization's multiply / square-root
 * forms, graph/op_elemwise.c) at -0, +-inf, NaN and negative bases, in f32, f64 and f16; the
 * inline f32 erf and tanh (targets/cpu/cg_expr.c) over a dense sweep; each with 1 and 2
 * threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom.h"
#include "support/loom_test.h"
#include "targets/cpu/codegen.h"

static loom_graph_module *parse_text(const char *text) {
  loom_source src = {"math.loom", text, strlen(text)};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_graph_module *m = NULL;
  loom_status s = loom_graph_parse(&src, &diags, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&diags);
  return m;
}

/* How close a compiled value must be to the reference. */
typedef struct tol {
  double rel, abs;
  double tiny; /* the smallest normal value: the runtime flushes subnormal results (FTZ/DAZ,
                  vm/threadpool.h), so a subnormal reference may come out as a zero */
} tol;

/* Same class (NaN, +-inf, signed zero) and within the tolerance otherwise. */
static bool close_to(double want, double got, tol t) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return want == got;
  if (want != 0 && fabs(want) < t.tiny && fabs(got) < t.tiny) return true;
  if (want == 0 && got == 0) return signbit(want) == signbit(got);
  return fabs(want - got) <= t.abs + t.rel * fabs(want);
}

/* Runs the one-input module `text` (@main(x: Tensor[(n,), dt])) compiled with 1 and 2 threads
 * and in the interpreter on `xs`; every element must be close_to the reference's. */
static void check_unary(const char *text, loom_dtype dt, const double *xs, size_t n, tol t) {
  loom_graph_module *ref = parse_text(text), *cm = parse_text(text);
  int64_t shape = (int64_t)n;
  loom_graph_value in, want;
  cr_assert_null(loom_graph_value_tensor(dt, 1, &shape, &in));
  for (size_t i = 0; i < n; i++) loom_graph_tensor_set_f64(&in.t, i, xs[i]);
  loom_status s = loom_graph_eval(ref, "main", 1, &in, NULL, &want);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_compiled *c;
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_JIT};
  s = loom_compile(cm, &o, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (uint32_t threads = 1; threads <= 2; threads++) {
    loom_rt *rt;
    loom_rt_options ro = {.threads = threads};
    cr_assert_null(loom_compiled_open(c, &ro, &rt));
    loom_tensor *x;
    cr_assert_null(loom_rt_tensor_new(rt, dt, 1, &shape, &x));
    memcpy(x->data, in.t.data, n * loom_dtype_size(dt));
    loom_rt_outputs out;
    s = loom_rt_call(rt, "main", &x, 1, &out);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    cr_assert_eq(out.count, 1);
    loom_graph_tensor got = want.t;
    got.data = ((const loom_tensor *)out.items[0])->data;
    for (size_t i = 0; i < n; i++) {
      double w = loom_graph_tensor_get_f64(&want.t, i), g = loom_graph_tensor_get_f64(&got, i);
      cr_assert(close_to(w, g, t), "%s\n%d threads: x = %.9g: reference %.9g, compiled %.9g", text, threads, xs[i], w, g);
    }
    loom_rt_outputs_free(&out);
    loom_tensor_release(x);
    loom_rt_close(rt);
  }
  loom_compiled_free(c);
  loom_graph_value_free(&in);
  loom_graph_value_free(&want);
  loom_graph_module_destroy(ref);
  loom_graph_module_destroy(cm);
}

static const double special[] = {-INFINITY, INFINITY, -0.0, 0.0, NAN, -1.5, -1.0, -1e-3, 1e-3, 0.25, 0.3,
                                 1.0, 2.25, 7.0, 1e-30, 3e4, 1e20, -4.0, 0.5, 100.0, 1e-5, 65504.0, -2.0};

/* Legalization writes pow with these constant exponents as multiplies and square roots; the
 * compiled values equal pow's, special points included (f16 rounds after every operation). */
LOOM_TEST(e2e_math, pow_with_a_constant_exponent_at_special_points) {
  static const double ex[] = {1, 2, 3, 4, -1, -2, 0.5, -0.5, 1.5, 2.5};
  static const struct {
    loom_dtype dt;
    tol t;
  } dts[] = {{LOOM_DTYPE_F32, {4e-7, 0, 0x1p-126}}, {LOOM_DTYPE_F64, {1e-15, 0, 0x1p-1022}}, {LOOM_DTYPE_F16, {2e-3, 0, 0}}};
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++)
    for (size_t e = 0; e < sizeof ex / sizeof *ex; e++) {
      const char *tn = loom_dtype_name(dts[d].dt);
      char text[256];
      snprintf(text, sizeof text, "fn @main(x: Tensor[(n,), %s]) -> Tensor[(n,), %s] {\n  y = pow(x, const(%g, %s))\n  return y\n}\n",
               tn, tn, ex[e], tn);
      check_unary(text, dts[d].dt, special, sizeof special / sizeof *special, dts[d].t);
    }
}

/* The inline f32 erf and tanh against the interpreter's double erf / tanh: a dense sweep over
 * [-6, 6] (both tails saturate) and the special points. */
LOOM_TEST(e2e_math, inline_erf_and_tanh_f32) {
  enum { N = 1 << 16 };
  size_t ns = sizeof special / sizeof *special;
  double *xs = malloc((N + ns) * sizeof *xs);
  cr_assert_not_null(xs);
  for (size_t i = 0; i < N; i++) xs[i] = -6.0 + 12.0 * (double)i / (N - 1);
  memcpy(xs + N, special, sizeof special);
  const tol t = {3e-7, 1.5e-7, 0x1p-126};
  check_unary("fn @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  y = erf(x)\n  return y\n}\n", LOOM_DTYPE_F32, xs, N + ns, t);
  check_unary("fn @main(x: Tensor[(n,), f32]) -> Tensor[(n,), f32] {\n  y = tanh(x)\n  return y\n}\n", LOOM_DTYPE_F32, xs, N + ns, t);
  free(xs);
}

/* ---- fused matmul epilogues --------------------------------------------------------------- */

typedef struct bind {
  const char *name;
  int64_t value;
} bind;

typedef struct sym_env_fill {
  loom_sym_env *env;
  const bind *b;
  size_t n;
} sym_env_fill;

static void bind_cb(void *ud, const loom_sym_expr *var) {
  sym_env_fill *f = ud;
  for (size_t i = 0; i < f->n; i++)
    if (!strcmp(loom_sym_var_name(var), f->b[i].name)) cr_assert_null(loom_sym_env_set(f->env, var, f->b[i].value));
}

/* Runs @main of `text` compiled (1 and 2 threads) and in the interpreter on the same inputs
 * (sin-valued) at the symbol values `b`; the one output must agree within rel * (1 + |ref|). */
static void check_random(const char *text, const bind *b, size_t nb, double rel) {
  loom_graph_module *ref = parse_text(text), *cm = parse_text(text);
  loom_graph_func *f = loom_graph_module_find_func(ref, "main");
  size_t np = f->nparams;
  loom_graph_value in[8], want;
  int64_t shapes[8][8];
  cr_assert_leq(np, 8);
  for (size_t p = 0; p < np; p++) {
    const loom_sinfo *si = f->params[p]->sinfo;
    loom_sym_env *env;
    cr_assert_null(loom_sym_env_create(NULL, &env));
    sym_env_fill fill = {env, b, nb};
    for (int d = 0; d < si->ndim; d++) loom_sym_for_each_var(si->dims[d], bind_cb, &fill);
    for (int d = 0; d < si->ndim; d++) cr_assert_null(loom_sym_eval(loom_graph_module_sym(ref), si->dims[d], env, &shapes[p][d]));
    loom_sym_env_destroy(env);
    cr_assert_null(loom_graph_value_tensor(si->dtype, si->ndim, shapes[p], &in[p]));
    loom_dtype dt = in[p].t.dtype;
    for (size_t i = 0; i < in[p].t.numel; i++) /* floats in [-1, 1]; integers over the whole 8-bit range */
      loom_graph_tensor_set_f64(&in[p].t, i,
                                loom_dtype_is_float(dt) ? sin((double)(i * 7 + p * 13 + 1))
                                                        : (double)((i * 37 + p * 11 + 5) % 256) - (loom_dtype_is_signed(dt) ? 128 : 0));
  }
  loom_status s = loom_graph_eval(ref, "main", np, in, NULL, &want);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_compiled *c;
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_JIT};
  s = loom_compile(cm, &o, &c);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  for (uint32_t threads = 1; threads <= 2; threads++) {
    loom_rt *rt;
    loom_rt_options ro = {.threads = threads};
    cr_assert_null(loom_compiled_open(c, &ro, &rt));
    loom_tensor *x[8];
    for (size_t p = 0; p < np; p++) {
      cr_assert_null(loom_rt_tensor_new(rt, in[p].t.dtype, in[p].t.ndim, shapes[p], &x[p]));
      memcpy(x[p]->data, in[p].t.data, in[p].t.numel * loom_dtype_size(in[p].t.dtype));
    }
    loom_rt_outputs out;
    s = loom_rt_call(rt, "main", x, (uint32_t)np, &out);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_graph_tensor got = want.t;
    got.data = ((const loom_tensor *)out.items[0])->data;
    for (size_t i = 0; i < want.t.numel; i++) {
      double w = loom_graph_tensor_get_f64(&want.t, i), g = loom_graph_tensor_get_f64(&got, i);
      cr_assert(fabs(w - g) <= rel * (1 + fabs(w)), "%s\n%d threads, element %zu: reference %.9g, compiled %.9g", text, threads,
                i, w, g);
    }
    loom_rt_outputs_free(&out);
    for (size_t p = 0; p < np; p++) loom_tensor_release(x[p]);
    loom_rt_close(rt);
  }
  loom_compiled_free(c);
  for (size_t p = 0; p < np; p++) loom_graph_value_free(&in[p]);
  loom_graph_value_free(&want);
  loom_graph_module_destroy(ref);
  loom_graph_module_destroy(cm);
}

/* Compiles `text` with the default pipeline and asserts that the printed main of the compiled
 * module contains `needle` (a rewrite or a packed weight took place). */
static void expect_main_holds(const char *text, const char *needle) {
  loom_graph_module *m = parse_text(text);
  loom_compiled *c;
  loom_compile_options o = {0};
  cr_assert_null(loom_compile(m, &o, &c));
  loom_strbuf p;
  loom_strbuf_init(&p, NULL);
  loom_graph_module *cm = loom_compiled_module(c);
  loom_graph_print_func(cm, loom_graph_module_find_func(cm, "main"), &p);
  cr_assert(strstr(loom_strbuf_cstr(&p), needle) != NULL, "no %s in the compiled main:\n%s", needle, loom_strbuf_cstr(&p));
  loom_strbuf_free(&p);
  loom_compiled_free(c);
  loom_graph_module_destroy(m);
}

/* Compiles `text` with every pass printed and fails when a matmul's register tiling was refused
 * (a plain loop nest: an int8 requantizing matmul ran 30x slower that way once, still correct). */
static void expect_every_matmul_tiled(const char *text) {
  loom_graph_module *m = parse_text(text);
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert_not_null(f);
  loom_compiled *c;
  loom_compile_options o = {.print_after_all = true, .report = f};
  cr_assert_null(loom_compile(m, &o, &c));
  fclose(f);
  cr_assert_null(strstr(buf, "register tiling refused"), "%s", strstr(buf, "register tiling refused"));
  cr_assert_not_null(strstr(buf, "register-tiled"), "no matmul was tiled");
  free(buf);
  loom_compiled_free(c);
  loom_graph_module_destroy(m);
}

/* Matmul, batched matmul, transposed-B matmul and linear with their elementwise readers fused
 * into the output loop (graph/pass_fuse.c, loom_tp_fuse_epilogue) and scheduled by the CPU
 * matmul rule (the epilogue on the register tile, the row-streaming variant for few rows):
 * equal to the interpreter at 0, 1, primes and extents that are not multiples of the tiles. */
LOOM_TEST(e2e_math, matmul_epilogues_at_awkward_shapes) {
  static const char *const texts[] = {
      "fn @main(x: Tensor[(n, k), f32], w: Tensor[(k, m), f32], b: Tensor[(m,), f32], r: Tensor[(n, m), f32]) -> Tensor[(n, m), f32] {\n"
      "  h = matmul(x, w)\n  hb = add(h, b)\n  g = gelu_tanh(hb)\n  y = add(g, r)\n  return y\n}\n",
      "fn @main(x: Tensor[(2, n, k), f32], w: Tensor[(k, m), f32], b: Tensor[(m,), f32]) -> Tensor[(2, n, m), f32] {\n"
      "  h = matmul(x, w)\n  hb = add(h, b)\n  y = relu(hb)\n  return y\n}\n",
      "fn @main(q: Tensor[(2, n, k), f32], kk: Tensor[(2, m, k), f32]) -> Tensor[(2, n, m), f32] {\n"
      "  kt = permute_dims(kk, axes=[0, 2, 1])\n  s = matmul(q, kt)\n  y = mul(s, const(0.125, f32))\n  return y\n}\n",
      "fn @main(x: Tensor[(n, k), f32], w: Tensor[(m, k), f32], b: Tensor[(m,), f32]) -> Tensor[(n, m), f32] {\n"
      "  l = linear(x, w, b)\n  y = gelu(l)\n  return y\n}\n",
  };
  static const int64_t ns[] = {0, 1, 5, 7, 13}, ks[] = {1, 17}, ms[] = {1, 7, 16, 37};
  for (size_t t = 0; t < sizeof texts / sizeof *texts; t++)
    for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
      for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        size_t mi = (i + j + t) % (sizeof ms / sizeof *ms);
        const bind b[] = {{"n", ns[i]}, {"k", ks[j]}, {"m", ms[mi]}};
        check_random(texts[t], b, 3, 1e-5);
      }
}

/* Constant weights laid out in the host's panels by the `pack` pass (graph/pass_pack.c) and read
 * in place by the matmul rule (tiled rows, the row-by-row variant below 6 rows), with and
 * without transpose_b and with an epilogue: equal to the interpreter at 0, 1, primes and row
 * counts that are not multiples of the tile; the compiled module holds the packed weight. */
LOOM_TEST(e2e_math, packed_constant_weights_at_awkward_shapes) {
  enum { K = 5, N = 64 };
  loom_strbuf t;
  loom_strbuf_init(&t, NULL);
  loom_strbuf_printf(&t, "const @w: Tensor[(%d, %d), f32] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&t, "%s%.6f", i ? ", " : "", sin(i * 0.37));
  loom_strbuf_printf(&t, "]\nconst @v: Tensor[(%d, %d), f32] = [", N, K);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&t, "%s%.6f", i ? ", " : "", cos(i * 0.23));
  loom_strbuf_printf(&t, "]\nconst @b: Tensor[(%d,), f32] = [", N);
  for (int i = 0; i < N; i++) loom_strbuf_printf(&t, "%s%.6f", i ? ", " : "", 0.1 * i - 3);
  loom_strbuf_printf(&t, "]\n"
                         "fn @main(x: Tensor[(m, %d), f32]) -> Tensor[(m, %d), f32] {\n"
                         "  h = matmul(x, @w)\n  hb = add(h, @b)\n  r = relu(hb)\n"
                         "  g = matmul(x, @v, transpose_b=true)\n  gg = gelu(g)\n"
                         "  y = add(r, gg)\n  return y\n}\n", K, N);
  const char *text = loom_strbuf_cstr(&t);
  static const int64_t ms[] = {0, 1, 5, 6, 7, 13, 37};
  for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
    const bind b[] = {{"m", ms[i]}};
    check_random(text, b, 1, 1e-5);
  }
  expect_main_holds(text, "_packed"); /* a weight was packed */
  loom_strbuf_free(&t);
}

/* The int8 matmul: the composed i32 forms of MatMulInteger (constant and run-time zero points,
 * u8 / i8 on either side, a constant weight) become matmul_integer (i16 pair words, dot2:
 * vpmaddwd) and are exact against the interpreter over the whole 8-bit range at 0, 1, odd k,
 * primes and row / column counts that are not multiples of the tile, 1 and 2 threads. */
LOOM_TEST(e2e_math, int8_matmul_at_awkward_shapes) {
  static const char *const texts[] = {
      "fn @main(a: Tensor[(m, k), u8], b: Tensor[(k, n), i8]) -> Tensor[(m, n), i32] {\n"
      "  ai = cast(a, dtype=i32)\n  ac = sub(ai, const(3, i32))\n  bi = cast(b, dtype=i32)\n"
      "  bc = sub(bi, const(-2, i32))\n  y = matmul(ac, bc)\n  return y\n}\n",
      "fn @main(a: Tensor[(2, m, k), i8], b: Tensor[(k, n), u8], za: Tensor[(), i8]) -> Tensor[(2, m, n), i32] {\n"
      "  ai = cast(a, dtype=i32)\n  zi = cast(za, dtype=i32)\n  ac = sub(ai, zi)\n  bi = cast(b, dtype=i32)\n"
      "  y = matmul(ac, bi)\n  return y\n}\n",
      "fn @main(a: Tensor[(m, k), u8], b: Tensor[(k, n), u8], zb: Tensor[(1,), u8]) -> Tensor[(m, n), i32] {\n"
      "  ai = cast(a, dtype=i32)\n  bi = cast(b, dtype=i32)\n  zi = cast(zb, dtype=i32)\n  bc = sub(bi, zi)\n"
      "  y = matmul(ai, bc)\n  return y\n}\n",
      "fn @main(a: Tensor[(m, k), u8], b: Tensor[(k, n), i8]) -> Tensor[(m, n), u8] {\n"
      "  ai = cast(a, dtype=i32)\n  ac = sub(ai, const(128, i32))\n  bi = cast(b, dtype=i32)\n  acc = matmul(ac, bi)\n"
      "  f = cast(acc, dtype=f64)\n  s = mul(f, const(0.0004, f64))\n  z = add(s, const(120.0, f64))\n  r = round(z)\n"
      "  c = clip(r, min=0.0, max=255.0)\n  y = cast(c, dtype=u8)\n  return y\n}\n",
  };
  static const int64_t ms[] = {0, 1, 5, 7, 13}, ks[] = {1, 2, 17, 64}, ns[] = {1, 7, 16, 37};
  /* (and a QLinearMatMul-style requantization to u8 fused into the int8 matmul's output loop) */
  for (size_t t = 0; t < sizeof texts / sizeof *texts; t++)
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++)
      for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        const bind b[] = {{"m", ms[i]}, {"k", ks[j]}, {"n", ns[(i + j + t) % 4]}};
        check_random(texts[t], b, 3, 0);
      }
  /* the composed form became matmul_integer */
  expect_main_holds(texts[0], "matmul_integer_u8_i8");
}

/* The int8 matmul with a constant weight: the `pack` pass lays its centred pair words out in
 * panels (matmul_integer packed_b) for the kernel to read in place; exact at odd k, 0, 1,
 * primes and row counts that are not multiples of the tile. */
LOOM_TEST(e2e_math, int8_matmul_with_a_constant_weight_laid_out_in_panels) {
  /* n = 64 a multiple of the panel; 37 and 101 not (the last panel zero-padded, n=); weight zero
   * point -5 (pair words) or 0 (byte quads where the target has them) */
  static const int cases[][2] = {{64, -5}, {37, -5}, {101, 0}, {37, 0}};
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    enum { K = 7 };
    int N = cases[ci][0], zb = cases[ci][1];
    loom_strbuf t;
    loom_strbuf_init(&t, NULL);
    loom_strbuf_printf(&t, "const @w: Tensor[(%d, %d), i8] = [", K, N);
    for (int i = 0; i < K * N; i++) loom_strbuf_printf(&t, "%s%d", i ? ", " : "", (i * 53) % 256 - 128);
    loom_strbuf_printf(&t, "]\n"
                           "fn @main(a: Tensor[(m, %d), u8], za: Tensor[(), u8]) -> Tensor[(m, %d), i32] {\n"
                           "  ai = cast(a, dtype=i32)\n  zi = cast(za, dtype=i32)\n  ac = sub(ai, zi)\n"
                           "  wi = cast(@w, dtype=i32)\n  wc = sub(wi, const(%d, i32))\n"
                           "  y = matmul(ac, wc)\n  return y\n}\n", K, N, zb);
    const char *text = loom_strbuf_cstr(&t);
    static const int64_t ms[] = {0, 1, 5, 6, 7, 13, 37};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
      const bind b[] = {{"m", ms[i]}};
      check_random(text, b, 1, 0);
    }
    expect_main_holds(text, "_packed");
    loom_strbuf_free(&t);
  }
}

/* The int8 matmul whose u8 A has k a multiple of 4 and whose weight's centred values are bytes
 * (zero point 0): on AVX512-VNNI the byte quads of A are read in place (no A4 Local, gen_nn.c
 * kwhole), A made by a quantizing producer (which stays its own call: the matmul is out_fusable)
 * or given, with and without a requantizing epilogue; exact at rows 0, 1, primes and
 * non-multiples of the tiles, k = 4, 8 and 36, 1 and 2 threads. */
LOOM_TEST(e2e_math, int8_matmul_reading_u8_quads_in_place) {
  static const int cases[][3] = {{4, 37, 0}, {8, 64, 1}, {36, 37, 2}, {36, 101, 0}};
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    int K = cases[ci][0], N = cases[ci][1], form = cases[ci][2];
    loom_strbuf t;
    loom_strbuf_init(&t, NULL);
    loom_strbuf_printf(&t, "const @w: Tensor[(%d, %d), i8] = [", K, N);
    for (int i = 0; i < K * N; i++) loom_strbuf_printf(&t, "%s%d", i ? ", " : "", (i * 53) % 256 - 128);
    if (form == 1) /* A quantized from f32 in the program */
      loom_strbuf_printf(&t, "]\n"
                             "fn @main(x: Tensor[(m, %d), f32]) -> Tensor[(m, %d), i32] {\n"
                             "  s = mul(x, const(40.0, f32))\n  r = round(s)\n  o = add(r, const(128.0, f32))\n"
                             "  c = clip(o, min=0.0, max=255.0)\n  a = cast(c, dtype=u8)\n"
                             "  ai = cast(a, dtype=i32)\n  ac = sub(ai, const(128, i32))\n  wi = cast(@w, dtype=i32)\n"
                             "  y = matmul(ac, wi)\n  return y\n}\n", K, N);
    else if (form == 2) /* requantized to u8 (QLinearMatMul) */
      loom_strbuf_printf(&t, "]\n"
                             "fn @main(a: Tensor[(m, %d), u8]) -> Tensor[(m, %d), u8] {\n"
                             "  ai = cast(a, dtype=i32)\n  ac = sub(ai, const(128, i32))\n  wi = cast(@w, dtype=i32)\n"
                             "  acc = matmul(ac, wi)\n  f = cast(acc, dtype=f64)\n  q = mul(f, const(0.0004, f64))\n"
                             "  z = add(q, const(120.0, f64))\n  r = round(z)\n  c = clip(r, min=0.0, max=255.0)\n"
                             "  y = cast(c, dtype=u8)\n  return y\n}\n", K, N);
    else
      loom_strbuf_printf(&t, "]\n"
                             "fn @main(a: Tensor[(m, %d), u8], za: Tensor[(), u8]) -> Tensor[(m, %d), i32] {\n"
                             "  ai = cast(a, dtype=i32)\n  zi = cast(za, dtype=i32)\n  ac = sub(ai, zi)\n"
                             "  wi = cast(@w, dtype=i32)\n  y = matmul(ac, wi)\n  return y\n}\n", K, N);
    const char *text = loom_strbuf_cstr(&t);
    static const int64_t ms[] = {0, 1, 5, 6, 7, 13, 37};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
      const bind b[] = {{"m", ms[i]}};
      check_random(text, b, 1, 0);
    }
    expect_main_holds(text, "_packed");
    expect_every_matmul_tiled(text); /* the few-rows variant too, under a requantizing epilogue */
    loom_strbuf_free(&t);
  }
}

/* The int8 matmul whose weight keeps every byte pair's products with two u8 values within i16
 * (ORT's reduce_range weights, [-64, 63]; pairs at the bound, (64, 64), (-64, -64), (127, 1),
 * (-128, 0)): byte quads with AVX2 too (dot4s: vpmaddubsw, whose pair sums saturate, then vpmaddwd),
 * A read in place (k = 36) or packed (k = 7, 13: the last quad partial), A pushed to [250, 255] so
 * that the pair sums come within 2 % of the bound; exact at rows 0, 1, primes and non-multiples of
 * the tiles, 1 and 2 threads, requantized or not. */
LOOM_TEST(e2e_math, int8_matmul_in_byte_pairs_within_i16) {
  static const int cases[][4] = {{36, 37, 0, 0}, {7, 64, 1, 0}, {36, 64, 1, 1}, {13, 37, 0, 1}};
  static const int bound[4][2] = {{64, 64}, {-64, -64}, {127, 1}, {-128, 0}};
  for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
    int K = cases[ci][0], N = cases[ci][1], at_bound = cases[ci][2], requant = cases[ci][3];
    loom_strbuf t;
    loom_strbuf_init(&t, NULL);
    loom_strbuf_printf(&t, "const @w: Tensor[(%d, %d), i8] = [", K, N);
    for (int i = 0; i < K * N; i++) {
      int r = i / N, j = i % N;
      loom_strbuf_printf(&t, "%s%d", i ? ", " : "", at_bound ? bound[(j + r / 2) % 4][r % 2] : (i * 53) % 128 - 64);
    }
    loom_strbuf_printf(&t, "]\n"
                           "fn @main(a0: Tensor[(m, %d), u8]) -> Tensor[(m, %d), %s] {\n"
                           "  a = clip(a0, min=250.0, max=255.0)\n  ai = cast(a, dtype=i32)\n  ac = sub(ai, const(3, i32))\n"
                           "  wi = cast(@w, dtype=i32)\n  acc = matmul(ac, wi)\n",
                       K, N, requant ? "u8" : "i32");
    if (requant)
      loom_strbuf_printf(&t, "  f = cast(acc, dtype=f64)\n  q = mul(f, const(0.00005, f64))\n  z = add(q, const(10.0, f64))\n"
                             "  r = round(z)\n  c = clip(r, min=0.0, max=255.0)\n  y = cast(c, dtype=u8)\n  return y\n}\n");
    else
      loom_strbuf_printf(&t, "  return acc\n}\n");
    const char *text = loom_strbuf_cstr(&t);
    static const int64_t ms[] = {0, 1, 5, 6, 7, 13, 37};
    for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
      const bind b[] = {{"m", ms[i]}};
      check_random(text, b, 1, 0);
    }
    if (loom_cpu_has_avx2(NULL)) expect_main_holds(text, "_packed_1"); /* the column sums: byte quads, on AVX2 as on AVX512-VNNI */
    expect_every_matmul_tiled(text);
    loom_strbuf_free(&t);
  }
}

/* One f32 matmul of a (m, k) input by a constant weight, checked compiled against the
 * interpreter at rows 0, 1, 7 (less than a tile), 64 (tiles) of the symbolic m, 1 and 2
 * threads. `wtext` declares @w; `call` is the matmul. */
static void check_const_matmul(const char *wtext, const char *call, int k, int n) {
  loom_strbuf t;
  loom_strbuf_init(&t, NULL);
  loom_strbuf_printf(&t, "%sfn @main(x: Tensor[(m, %d), f32]) -> Tensor[(m, %d), f32] {\n  y = %s\n  return y\n}\n", wtext, k, n,
                     call);
  static const int64_t ms[] = {0, 1, 7, 64};
  for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
    const bind b[] = {{"m", ms[i]}};
    check_random(loom_strbuf_cstr(&t), b, 1, 1e-5);
  }
  loom_strbuf_free(&t);
}

/* A weight laid out in panels of P with n not a multiple of P (matmul packed_b n=: the last
 * panel zero-padded, graph/pass_pack.c): n = 1, P - 1, P + 1, 2P + 3 and 1001 at k = 1 and
 * primes, panels of 16 and 32 (the target's own width, or repacked by the rule). */
LOOM_TEST(e2e_math, matmul_by_padded_panels_matches_the_interpreter) {
  static const int pw[] = {16, 32};
  for (size_t p = 0; p < 2; p++) {
    int P = pw[p];
    const int shapes[][2] = {{1, 1}, {P - 1, 7}, {P + 1, 13}, {2 * P + 3, 5}, {1001, 3}}; /* n, k */
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
      int n = shapes[s][0], k = shapes[s][1], q = (n + P - 1) / P;
      loom_strbuf w;
      loom_strbuf_init(&w, NULL);
      loom_strbuf_printf(&w, "const @w: Tensor[(%d, %d, %d), f32] = [", q, k, P);
      for (int i = 0; i < q * k * P; i++) {
        int j = (i / (k * P)) * P + i % P; /* the column */
        loom_strbuf_printf(&w, "%s%.6g", i ? ", " : "", j < n ? sin((double)i * 0.37) : 0.0);
      }
      loom_strbuf_printf(&w, "]\n");
      char call[96];
      snprintf(call, sizeof call, "matmul(x, @w, packed_b=true, n=%d)", n);
      check_const_matmul(loom_strbuf_cstr(&w), call, k, n);
      loom_strbuf_free(&w);
    }
  }
}

/* The whole pipeline on a Linear whose out-features is not a multiple of the target's panel
 * (an LM head's vocabulary): pack pads the last panel, the weight as (k, n) and as (n, k) read
 * with transpose_b (tied embeddings); the compiled module holds the packed form. */
LOOM_TEST(e2e_math, linear_with_odd_out_features_is_packed_and_exact) {
  const int shapes[][3] = {{33, 13, 0}, {67, 1, 1}, {1001, 7, 0}, {1001, 5, 1}}; /* n, k, transpose_b */
  for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
    int n = shapes[s][0], k = shapes[s][1];
    bool tb = shapes[s][2];
    loom_strbuf w;
    loom_strbuf_init(&w, NULL);
    loom_strbuf_printf(&w, "const @w: Tensor[(%d, %d), f32] = [", tb ? n : k, tb ? k : n);
    for (int i = 0; i < k * n; i++) loom_strbuf_printf(&w, "%s%.6g", i ? ", " : "", cos((double)i * 0.61));
    loom_strbuf_printf(&w, "]\n");
    const char *call = tb ? "matmul(x, @w, transpose_b=true)" : "matmul(x, @w)";
    check_const_matmul(loom_strbuf_cstr(&w), call, k, n);
    loom_strbuf t;
    loom_strbuf_init(&t, NULL);
    loom_strbuf_printf(&t, "%sfn @main(x: Tensor[(m, %d), f32]) -> Tensor[(m, %d), f32] {\n  y = %s\n  return y\n}\n",
                       loom_strbuf_cstr(&w), k, n, call);
    expect_main_holds(loom_strbuf_cstr(&t), "_packed");
    loom_strbuf_free(&t);
    loom_strbuf_free(&w);
  }
}

/* A weight whose every column is the same, n not a multiple of the panel (the last panel
 * padded): every output column is the same sum in the same order, so a row's values are equal
 * bit for bit — the padded tail is computed like every other panel. (The ONNX light suite's
 * AlexNet, every weight 0.02 and activations near 1e10, ran its 8 tail columns in another
 * order and its softmax came out unequal.) Rows 1, 3 (the few-rows variant), 7 and 64 (tiles),
 * 1 and 2 threads, the weight as (k, n) and with transpose_b, a bias added. */
LOOM_TEST(e2e_math, equal_columns_stay_equal_through_padded_panels) {
  const int k = 509, n = 1000;
  for (int tb = 0; tb <= 1; tb++) {
    loom_strbuf t;
    loom_strbuf_init(&t, NULL);
    loom_strbuf_printf(&t, "const @w: Tensor[(%d, %d), f32] = [", tb ? n : k, tb ? k : n);
    for (int i = 0; i < k * n; i++) loom_strbuf_printf(&t, "%s0.02", i ? ", " : "");
    /* with a bias added after it (a Gemm's: fused into the matmul's program) */
    loom_strbuf_printf(&t, "]\nconst @b: Tensor[(%d,), f32] = [", n);
    for (int j = 0; j < n; j++) loom_strbuf_printf(&t, "%s0.5", j ? ", " : "");
    loom_strbuf_printf(&t, "]\nfn @main(x: Tensor[(m, %d), f32]) -> Tensor[(m, %d), f32] {\n  z = matmul(x, @w%s)\n"
                           "  y = add(z, @b)\n  return y\n}\n", k, n, tb ? ", transpose_b=true" : "");
    loom_graph_module *m = parse_text(loom_strbuf_cstr(&t));
    loom_compiled *c;
    loom_compile_options o = {.emit = LOOM_TARGET_EMIT_JIT};
    loom_status s = loom_compile(m, &o, &c);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    static const int64_t rows[] = {1, 3, 7, 64};
    for (uint32_t threads = 1; threads <= 2; threads++) {
      loom_rt *rt;
      loom_rt_options ro = {.threads = threads};
      cr_assert_null(loom_compiled_open(c, &ro, &rt));
      for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        int64_t shape[2] = {rows[r], k};
        loom_tensor *x;
        cr_assert_null(loom_rt_tensor_new(rt, LOOM_DTYPE_F32, 2, shape, &x));
        float *xd = x->data;
        for (int64_t i = 0; i < rows[r] * k; i++) xd[i] = 1e9f * (float)(1.0 + 0.5 * sin((double)i * 0.7));
        loom_rt_outputs out;
        s = loom_rt_call(rt, "main", &x, 1, &out);
        cr_assert_null(s, "%s", loom_status_text(s, 0));
        const float *y = ((const loom_tensor *)out.items[0])->data;
        for (int64_t i = 0; i < rows[r]; i++)
          for (int j = 1; j < n; j++)
            cr_assert(y[i * n + j] == y[i * n], "transpose_b %d, %lld rows, %u threads: row %lld column %d is %.9g, column 0 %.9g", tb,
                      (long long)rows[r], threads, (long long)i, j, y[i * n + j], y[i * n]);
        loom_rt_outputs_free(&out);
        loom_tensor_release(x);
      }
      loom_rt_close(rt);
    }
    loom_compiled_free(c);
    loom_graph_module_destroy(m);
    loom_strbuf_free(&t);
  }
}

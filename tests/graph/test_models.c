/* test_models.c — the models: `loom check` prints fully symbolic struct info for each file
 * in models/; the MLP and the GPT-2 block (at test width, tests/graph/corpus/gpt2_tiny.loom)
 * run in the interpreter at several shapes (batch 1, odd and prime lengths) and match an
 * independent plain-C computation; `loom eval` runs the full-width GPT-2 block. */
#include <math.h>

#include "tests/graph/graph_test_util.h"

static double rnd(loom_test_rng *r) { return (double)(loom_test_rng_next(r) >> 11) / 9007199254740992.0 * 2 - 1; }

static loom_graph_value rand_tensor(loom_test_rng *r, int nd, const int64_t *shape, double scale) {
  loom_graph_value v = gt_tensor(LOOM_DTYPE_F32, nd, shape, NULL);
  for (size_t i = 0; i < v.t.numel; i++) loom_graph_tensor_set_f64(&v.t, i, rnd(r) * scale);
  return v;
}

/* Element i of a tensor as double. */
#define G(v, i) loom_graph_tensor_get_f64(&(v).t, (size_t)(i))

static loom_graph_module *load(const char *path) {
  char *text = gt_read_file(path, NULL);
  cr_assert(text, "cannot read %s", path);
  loom_graph_module *m = gt_parse_ok(text);
  free(text);
  return m;
}

static void compare(const loom_graph_value *got, const double *want, size_t n, double tol, const char *what) {
  cr_assert_eq(got->t.numel, n, "%s: %zu elements, want %zu", what, got->t.numel, n);
  for (size_t i = 0; i < n; i++) {
    double g = loom_graph_tensor_get_f64(&got->t, i);
    cr_assert(fabs(g - want[i]) <= tol * (1 + fabs(want[i])), "%s: element %zu: %.9g vs %.9g", what, i, g, want[i]);
  }
}

LOOM_TEST(graph_models, check_every_model_fully_symbolic) {
  static const char *const files[] = {"models/mlp.loom", "models/gpt2_block.loom"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    loom_test_proc p = loom_test_run("%s check %s", loom_test_loom_bin(), files[i]);
    cr_expect_eq(p.exit_code, 0, "%s: %s", files[i], p.err);
    cr_expect(strstr(p.out, " 0 unknown dims"), "%s: %s", files[i], p.out);
    cr_expect(!strstr(p.out, "?"), "%s has an unknown rank, dim or dtype", files[i]);
    loom_test_proc_free(&p);
  }
}

/* ---- MLP -------------------------------------------------------------------------------- */

LOOM_TEST(graph_models, mlp_matches_plain_c_at_several_batches) {
  loom_graph_module *m = load("models/mlp.loom");
  loom_test_rng r = {loom_test_seed()};
  static const int64_t batches[] = {1, 7, 13};
  for (size_t bi = 0; bi < 3; bi++) {
    int64_t B = batches[bi];
    loom_graph_value a[5] = {rand_tensor(&r, 2, (int64_t[]){B, 784}, 1), rand_tensor(&r, 2, (int64_t[]){256, 784}, 0.05),
                             rand_tensor(&r, 1, (int64_t[]){256}, 0.1), rand_tensor(&r, 2, (int64_t[]){10, 256}, 0.1),
                             rand_tensor(&r, 1, (int64_t[]){10}, 0.1)};
    loom_graph_value out;
    loom_status st = loom_graph_eval(m, "main", 5, a, NULL, &out);
    cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
    double *want = calloc((size_t)B * 10, sizeof *want), h[256];
    for (int64_t b = 0; b < B; b++) {
      for (int j = 0; j < 256; j++) {
        double acc = G(a[2], j);
        for (int k = 0; k < 784; k++) acc += G(a[0], b * 784 + k) * G(a[1], j * 784 + k);
        h[j] = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
      }
      double lg[10], mx = -1e300, sum = 0;
      for (int j = 0; j < 10; j++) {
        lg[j] = G(a[4], j);
        for (int k = 0; k < 256; k++) lg[j] += h[k] * G(a[3], j * 256 + k);
        if (lg[j] > mx) mx = lg[j];
      }
      for (int j = 0; j < 10; j++) sum += exp(lg[j] - mx);
      for (int j = 0; j < 10; j++) want[b * 10 + j] = exp(lg[j] - mx) / sum;
    }
    compare(&out, want, (size_t)B * 10, 1e-4, "mlp");
    free(want);
    loom_graph_value_free(&out);
    for (int i = 0; i < 5; i++) loom_graph_value_free(&a[i]);
  }
  loom_graph_module_destroy(m);
}

/* ---- GPT-2 block ------------------------------------------------------------------------ */

enum { D = 16, H = 2, HD = 8, F = 64 };

static void layer_norm(const double *x, const loom_graph_value *g, const loom_graph_value *b, double *y) {
  double mean = 0, var = 0;
  for (int i = 0; i < D; i++) mean += x[i];
  mean /= D;
  for (int i = 0; i < D; i++) var += (x[i] - mean) * (x[i] - mean);
  var /= D;
  for (int i = 0; i < D; i++) y[i] = (x[i] - mean) / sqrt(var + 1e-5) * G(*g, i) + G(*b, i);
}

/* The block written out with loops: pre-LN causal attention + GELU(tanh) MLP, residuals. */
static void gpt2_ref(const loom_graph_value *a, int64_t B, int64_t S, double *out) {
  double *x1 = calloc((size_t)(B * S * D), sizeof *x1), *qkv = calloc((size_t)(S * 3 * D), sizeof *qkv);
  double *att = calloc((size_t)(S * D), sizeof *att), *p = calloc((size_t)S, sizeof *p);
  for (int64_t b = 0; b < B; b++) {
    for (int64_t t = 0; t < S; t++) {
      double xr[D], h[D];
      for (int i = 0; i < D; i++) xr[i] = G(a[0], (b * S + t) * D + i);
      layer_norm(xr, &a[1], &a[2], h);
      for (int j = 0; j < 3 * D; j++) {
        double acc = G(a[4], j);
        for (int k = 0; k < D; k++) acc += h[k] * G(a[3], k * 3 * D + j);
        qkv[t * 3 * D + j] = acc;
      }
    }
    for (int hh = 0; hh < H; hh++)
      for (int64_t t = 0; t < S; t++) {
        double mx = -1e300, sum = 0;
        for (int64_t u = 0; u < S; u++) {
          double sc = 0;
          for (int k = 0; k < HD; k++) sc += qkv[t * 3 * D + hh * HD + k] * qkv[u * 3 * D + D + hh * HD + k];
          sc = u <= t ? sc / sqrt((double)HD) : -1e9;
          p[u] = sc;
          if (sc > mx) mx = sc;
        }
        for (int64_t u = 0; u < S; u++) sum += (p[u] = exp(p[u] - mx));
        for (int k = 0; k < HD; k++) {
          double acc = 0;
          for (int64_t u = 0; u < S; u++) acc += p[u] / sum * qkv[u * 3 * D + 2 * D + hh * HD + k];
          att[t * D + hh * HD + k] = acc;
        }
      }
    for (int64_t t = 0; t < S; t++) {
      double *xo = &x1[(b * S + t) * D], h2[D], f[F];
      for (int j = 0; j < D; j++) {
        double acc = G(a[6], j);
        for (int k = 0; k < D; k++) acc += att[t * D + k] * G(a[5], k * D + j);
        xo[j] = G(a[0], (b * S + t) * D + j) + acc;
      }
      layer_norm(xo, &a[7], &a[8], h2);
      for (int j = 0; j < F; j++) {
        double acc = G(a[10], j);
        for (int k = 0; k < D; k++) acc += h2[k] * G(a[9], k * F + j);
        f[j] = 0.5 * acc * (1 + tanh(sqrt(2 / M_PI) * (acc + 0.044715 * acc * acc * acc)));
      }
      for (int j = 0; j < D; j++) {
        double acc = G(a[12], j);
        for (int k = 0; k < F; k++) acc += f[k] * G(a[11], k * D + j);
        out[(b * S + t) * D + j] = xo[j] + acc;
      }
    }
  }
  free(x1);
  free(qkv);
  free(att);
  free(p);
}

LOOM_TEST(graph_models, gpt2_block_matches_plain_c_at_several_shapes) {
  loom_graph_module *m = load("tests/graph/corpus/gpt2_tiny.loom");
  loom_test_rng r = {loom_test_seed() + 1};
  static const int64_t shapes[][2] = {{1, 1}, {1, 7}, {2, 5}, {3, 13}, {1, 2}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t B = shapes[si][0], S = shapes[si][1];
    loom_graph_value a[13] = {
        rand_tensor(&r, 3, (int64_t[]){B, S, D}, 1),  rand_tensor(&r, 1, (int64_t[]){D}, 1),
        rand_tensor(&r, 1, (int64_t[]){D}, 0.1),      rand_tensor(&r, 2, (int64_t[]){D, 3 * D}, 0.3),
        rand_tensor(&r, 1, (int64_t[]){3 * D}, 0.1),  rand_tensor(&r, 2, (int64_t[]){D, D}, 0.3),
        rand_tensor(&r, 1, (int64_t[]){D}, 0.1),      rand_tensor(&r, 1, (int64_t[]){D}, 1),
        rand_tensor(&r, 1, (int64_t[]){D}, 0.1),      rand_tensor(&r, 2, (int64_t[]){D, F}, 0.3),
        rand_tensor(&r, 1, (int64_t[]){F}, 0.1),      rand_tensor(&r, 2, (int64_t[]){F, D}, 0.3),
        rand_tensor(&r, 1, (int64_t[]){D}, 0.1)};
    loom_sym_env *env;
    cr_assert(!loom_sym_env_create(NULL, &env));
    loom_graph_value out;
    loom_status st = loom_graph_eval(m, "main", 13, a, env, &out);
    cr_assert(!st, "(b=%lld, s=%lld): %s", (long long)B, (long long)S, st ? loom_status_text(st, 0) : "");
    int64_t bv, sv;
    const loom_sinfo *xs = loom_graph_module_find_func(m, "main")->params[0]->sinfo;
    cr_assert(loom_sym_env_get(env, xs->dims[0], &bv) && bv == B);
    cr_assert(loom_sym_env_get(env, xs->dims[1], &sv) && sv == S);
    double *want = calloc((size_t)(B * S * D), sizeof *want);
    gpt2_ref(a, B, S, want);
    compare(&out, want, (size_t)(B * S * D), 1e-4, "gpt2 block");
    free(want);
    loom_graph_value_free(&out);
    loom_sym_env_destroy(env);
    for (int i = 0; i < 13; i++) loom_graph_value_free(&a[i]);
  }
  loom_graph_module_destroy(m);
}

/* ---- CLI -------------------------------------------------------------------------------- */

LOOM_TEST(graph_models, eval_full_width_gpt2_block) {
  loom_test_proc p = loom_test_run(
      "%s eval models/gpt2_block.loom --input x=random:'(1,3,768)' --input ln1_g=random:'(768)' --input ln1_b=random:'(768)'"
      " --input w_qkv=random:'(768,2304)' --input b_qkv=random:'(2304)' --input w_o=random:'(768,768)' --input b_o=random:'(768)'"
      " --input ln2_g=random:'(768)' --input ln2_b=random:'(768)' --input w_fc=random:'(768,3072)' --input b_fc=random:'(3072)'"
      " --input w_proj=random:'(3072,768)' --input b_proj=random:'(768)'",
      loom_test_loom_bin());
  cr_assert_eq(p.exit_code, 0, "%s", p.err);
  cr_assert(strstr(p.out, "sym b = 1\n") && strstr(p.out, "sym s = 3\n"), "%s", p.out);
  cr_assert(strstr(p.out, "result: f32 (1, 3, 768) checksum"), "%s", p.out);
  loom_test_proc_free(&p);
}

LOOM_TEST(graph_models, cli_errors) {
  /* A bad file: located error, exit 1. */
  loom_test_proc p = loom_test_run("(printf 'fn @main(x: Tensor[(n,), f32]) -> Object {\\n  y = relu(q)\\n  return y\\n}\\n' > /tmp/loom_bad_$$.loom; "
                                   "%s check /tmp/loom_bad_$$.loom; rc=$?; rm -f /tmp/loom_bad_$$.loom; exit $rc)",
                                   loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 1, "%s", p.err);
  cr_expect(strstr(p.err, ".loom:2:12: error: unknown variable 'q'") && strstr(p.err, "^"), "%s", p.err);
  loom_test_proc_free(&p);
  /* Misuse: exit 2. */
  p = loom_test_run("%s eval models/mlp.loom --input nope", loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 2, "%s", p.err);
  loom_test_proc_free(&p);
  p = loom_test_run("%s eval models/mlp.loom --input x=random:'(2,784)'", loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 2, "missing inputs: %s", p.err);
  loom_test_proc_free(&p);
  /* Runtime shape mismatch: exit 1, names the input and axis. */
  p = loom_test_run("%s eval models/mlp.loom --input x=random:'(2,783)' --input w1=random:'(256,784)' --input b1=random:'(256)'"
                    " --input w2=random:'(10,256)' --input b2=random:'(10)'",
                    loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 1, "%s", p.err);
  cr_expect(strstr(p.err, "input 'x' axis 1"), "%s", p.err);
  loom_test_proc_free(&p);
  /* .npy output, read back as input. */
  p = loom_test_run("(%s eval models/mlp.loom --input x=random:'(3,784)' --input w1=random:'(256,784)' --input b1=random:'(256)'"
                    " --input w2=random:'(10,256)' --input b2=random:'(10)' --output /tmp/loom_y_$$.npy && "
                    "printf 'fn @main(y: Tensor[(b, 10), f32]) -> Object {\\n  s = sum(y)\\n  return s\\n}\\n' > /tmp/loom_s_$$.loom && "
                    "%s eval /tmp/loom_s_$$.loom --input y=@/tmp/loom_y_$$.npy; rc=$?; rm -f /tmp/loom_y_$$.npy /tmp/loom_s_$$.loom; exit $rc)",
                    loom_test_loom_bin(), loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 0, "%s", p.err);
  cr_expect(strstr(p.out, "sym b = 3") && strstr(p.out, "result: f32 () checksum sum=3"), "%s", p.out);
  loom_test_proc_free(&p);
}

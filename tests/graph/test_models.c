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
  static const char *const files[] = {"models/mlp.loom",         "models/gpt2_block.loom", "models/gpt2_decoder.loom",
                                      "models/llama_block.loom", "models/bert_block.loom", "models/resnet.loom"};
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

/* ---- random arguments from the parameters' symbolic shapes --------------------------------- */

/* Values for the named symbols; every param of @fn gets a random tensor of the shape its
 * struct info gives under them (integer params get values in [0, int_high)). Params named in
 * `given` take the given value instead (copied). */
typedef struct sym_val {
  const char *name;
  int64_t value;
} sym_val;

static void sym_cb(void *ud, const loom_sym_expr *var) {
  void **u = ud;
  const sym_val *vals = u[0];
  loom_sym_env *env = u[1];
  for (const sym_val *v = vals; v->name; v++)
    if (!strcmp(v->name, loom_sym_var_name(var))) (void)loom_sym_env_set(env, var, v->value);
}

static loom_graph_value *random_args(loom_graph_module *m, const char *fn, const sym_val *vals, loom_test_rng *r,
                                     int64_t int_high, const char *const *given_names, const loom_graph_value *given) {
  loom_graph_func *f = loom_graph_module_find_func(m, fn);
  loom_sym_env *env;
  cr_assert(!loom_sym_env_create(NULL, &env));
  loom_graph_value *args = calloc(f->nparams, sizeof *args);
  for (size_t i = 0; i < f->nparams; i++) {
    const loom_sinfo *si = f->params[i]->sinfo;
    bool done = false;
    for (size_t g = 0; given_names && given_names[g]; g++)
      if (!strcmp(given_names[g], f->params[i]->u.var.name)) {
        cr_assert(!loom_graph_value_copy(&given[g], &args[i]));
        done = true;
      }
    if (done) continue;
    int64_t shape[8];
    for (int k = 0; k < si->ndim; k++) {
      void *u[2] = {(void *)vals, env};
      loom_sym_for_each_var(si->dims[k], sym_cb, u);
      loom_status st = loom_sym_eval(loom_graph_module_sym(m), si->dims[k], env, &shape[k]);
      cr_assert(!st, "param %s axis %d: %s", f->params[i]->u.var.name, k, st ? loom_status_text(st, 0) : "");
    }
    args[i] = gt_tensor(si->dtype, si->ndim, shape, NULL);
    double scale = strstr(f->params[i]->u.var.name, "_g") || strstr(f->params[i]->u.var.name, "norm") ? 0 : 0.08;
    for (size_t j = 0; j < args[i].t.numel; j++) {
      if (si->dtype == LOOM_DTYPE_BOOL) loom_graph_tensor_set_f64(&args[i].t, j, 1);
      else if (loom_dtype_is_int(si->dtype)) loom_graph_tensor_set_i64(&args[i].t, j, loom_test_rng_range(r, 0, int_high - 1));
      else loom_graph_tensor_set_f64(&args[i].t, j, scale == 0 ? 1 + 0.1 * rnd(r) : rnd(r) * scale * 4);
    }
  }
  loom_sym_env_destroy(env);
  return args;
}

static void free_argv(loom_graph_value *a, size_t n) {
  for (size_t i = 0; i < n; i++) loom_graph_value_free(&a[i]);
  free(a);
}

static size_t nparams(loom_graph_module *m, const char *fn) { return loom_graph_module_find_func(m, fn)->nparams; }

/* Compares rows [row0, row0 + n) of axis `axis` of (b, S, ...) tensors a and b (a has S_a rows,
 * b has S_b rows, b's rows start at `b_off`). */
static void compare_rows(const loom_graph_tensor *a, int64_t a_off, const loom_graph_tensor *b, int64_t b_off, int64_t nrows,
                         double tol, const char *what) {
  int64_t B = a->shape[0], inner = 1;
  for (int i = 2; i < a->ndim; i++) inner *= a->shape[i];
  for (int64_t bb = 0; bb < B; bb++)
    for (int64_t r = 0; r < nrows; r++)
      for (int64_t k = 0; k < inner; k++) {
        double x = loom_graph_tensor_get_f64(a, (size_t)((bb * a->shape[1] + a_off + r) * inner + k));
        double y = loom_graph_tensor_get_f64(b, (size_t)((bb * b->shape[1] + b_off + r) * inner + k));
        cr_assert(fabs(x - y) <= tol * (1 + fabs(x)), "%s: batch %lld row %lld elem %lld: %.9g vs %.9g", what, (long long)bb,
                  (long long)r, (long long)k, x, y);
      }
}

/* KV cache: a prompt of 6 tokens in one call equals 4 tokens then 2 more with the cache. */
LOOM_TEST(graph_models, gpt2_decoder_kv_cache_is_consistent) {
  loom_graph_module *m = load("models/gpt2_decoder.loom");
  loom_test_rng r = {loom_test_seed() + 7};
  sym_val full[] = {{"b", 1}, {"s", 5}, {"past", 0}, {"V", 40}, {"P", 16}, {NULL, 0}};
  loom_graph_value *a = random_args(m, "main", full, &r, 40, NULL, NULL);
  size_t np = nparams(m, "main");
  loom_graph_value out_full;
  loom_status st = loom_graph_eval(m, "main", np, a, NULL, &out_full);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  cr_assert_eq(out_full.items[0].t.shape[2], 40);
  /* First 3 tokens. */
  loom_graph_value ids3 = gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){1, 3}, NULL), ids2 = gt_tensor(LOOM_DTYPE_I64, 2, (int64_t[]){1, 2}, NULL);
  for (int i = 0; i < 3; i++) loom_graph_tensor_set_i64(&ids3.t, (size_t)i, loom_graph_tensor_get_i64(&a[0].t, (size_t)i));
  for (int i = 0; i < 2; i++) loom_graph_tensor_set_i64(&ids2.t, (size_t)i, loom_graph_tensor_get_i64(&a[0].t, (size_t)(3 + i)));
  loom_graph_value_free(&a[0]);
  cr_assert(!loom_graph_value_copy(&ids3, &a[0]));
  loom_graph_value out1;
  st = loom_graph_eval(m, "main", np, a, NULL, &out1);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  /* Then 2 more with the cache (params 3..6 are past_k0, past_v0, past_k1, past_v1). */
  loom_graph_value_free(&a[0]);
  cr_assert(!loom_graph_value_copy(&ids2, &a[0]));
  for (int c = 0; c < 4; c++) {
    loom_graph_value_free(&a[3 + c]);
    cr_assert(!loom_graph_value_copy(&out1.items[1 + c], &a[3 + c]));
  }
  loom_sym_env *env;
  cr_assert(!loom_sym_env_create(NULL, &env));
  loom_graph_value out2;
  st = loom_graph_eval(m, "main", np, a, env, &out2);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  const loom_sinfo *pk = loom_graph_module_find_func(m, "main")->params[3]->sinfo;
  int64_t past;
  cr_assert(loom_sym_env_get(env, pk->dims[2], &past) && past == 3);
  compare_rows(&out_full.items[0].t, 0, &out1.items[0].t, 0, 3, 1e-4, "logits of the prompt");
  compare_rows(&out_full.items[0].t, 3, &out2.items[0].t, 0, 2, 1e-4, "logits with the cache");
  cr_assert_eq(out2.items[1].t.shape[2], 5, "the cache grows to past + s");
  loom_graph_value_free(&out_full);
  loom_graph_value_free(&out1);
  loom_graph_value_free(&out2);
  loom_graph_value_free(&ids3);
  loom_graph_value_free(&ids2);
  loom_sym_env_destroy(env);
  free_argv(a, np);
  loom_graph_module_destroy(m);
}

/* Llama block: the same cache consistency (rotary positions start at past, causal alignment),
 * at a batch of 2. */
LOOM_TEST(graph_models, llama_block_kv_cache_is_consistent) {
  loom_graph_module *m = load("models/llama_block.loom");
  loom_test_rng r = {loom_test_seed() + 11};
  sym_val full[] = {{"b", 2}, {"s", 7}, {"past", 0}, {NULL, 0}};
  loom_graph_value *a = random_args(m, "main", full, &r, 2, NULL, NULL);
  /* inv_freq as in Llama: 10000^(-2i/64) */
  for (int i = 0; i < 32; i++) loom_graph_tensor_set_f64(&a[3].t, (size_t)i, pow(10000.0, -2.0 * i / 64));
  size_t np = nparams(m, "main");
  loom_graph_value out_full;
  loom_status st = loom_graph_eval(m, "main", np, a, NULL, &out_full);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  /* x[:, :5] then x[:, 5:] with the cache. */
  loom_graph_value x = a[0], x5 = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){2, 5, 512}, NULL), x2 = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){2, 2, 512}, NULL);
  for (int64_t bb = 0; bb < 2; bb++)
    for (int64_t t = 0; t < 7; t++)
      for (int64_t k = 0; k < 512; k++) {
        double v = loom_graph_tensor_get_f64(&x.t, (size_t)((bb * 7 + t) * 512 + k));
        if (t < 5) loom_graph_tensor_set_f64(&x5.t, (size_t)((bb * 5 + t) * 512 + k), v);
        else loom_graph_tensor_set_f64(&x2.t, (size_t)((bb * 2 + t - 5) * 512 + k), v);
      }
  a[0] = x5;
  loom_graph_value out1;
  st = loom_graph_eval(m, "main", np, a, NULL, &out1);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  a[0] = x2;
  loom_graph_value_free(&a[1]);
  loom_graph_value_free(&a[2]);
  cr_assert(!loom_graph_value_copy(&out1.items[1], &a[1]));
  cr_assert(!loom_graph_value_copy(&out1.items[2], &a[2]));
  loom_graph_value out2;
  st = loom_graph_eval(m, "main", np, a, NULL, &out2);
  cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
  compare_rows(&out_full.items[0].t, 0, &out1.items[0].t, 0, 5, 1e-4, "llama prompt");
  compare_rows(&out_full.items[0].t, 5, &out2.items[0].t, 0, 2, 1e-4, "llama with the cache");
  a[0] = x;
  loom_graph_value_free(&x5);
  loom_graph_value_free(&x2);
  loom_graph_value_free(&out_full);
  loom_graph_value_free(&out1);
  loom_graph_value_free(&out2);
  free_argv(a, np);
  loom_graph_module_destroy(m);
}

/* BERT block: masking out the padding tail gives the same outputs for the real tokens as
 * running the unpadded sequence; several shapes (batch 1, odd and prime lengths). */
LOOM_TEST(graph_models, bert_block_padding_mask) {
  loom_graph_module *m = load("models/bert_block.loom");
  static const int64_t shapes[][3] = {{1, 1, 1}, {2, 7, 5}, {1, 13, 11}, {3, 4, 1}}; /* b, s_padded, s_real */
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    int64_t B = shapes[si][0], S = shapes[si][1], R = shapes[si][2];
    loom_test_rng r = {loom_test_seed() + 13 + si};
    sym_val sv[] = {{"b", B}, {"s", S}, {NULL, 0}};
    loom_graph_value *a = random_args(m, "main", sv, &r, 2, NULL, NULL);
    size_t np = nparams(m, "main");
    for (int64_t bb = 0; bb < B; bb++)
      for (int64_t t = 0; t < S; t++) loom_graph_tensor_set_f64(&a[1].t, (size_t)(bb * S + t), t < R);
    loom_graph_value padded;
    loom_status st = loom_graph_eval(m, "main", np, a, NULL, &padded);
    cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
    loom_graph_value xr = gt_tensor(LOOM_DTYPE_F32, 3, (int64_t[]){B, R, 256}, NULL), mr = gt_tensor(LOOM_DTYPE_BOOL, 2, (int64_t[]){B, R}, NULL);
    for (int64_t bb = 0; bb < B; bb++)
      for (int64_t t = 0; t < R; t++) {
        loom_graph_tensor_set_f64(&mr.t, (size_t)(bb * R + t), 1);
        for (int64_t k = 0; k < 256; k++)
          loom_graph_tensor_set_f64(&xr.t, (size_t)((bb * R + t) * 256 + k), loom_graph_tensor_get_f64(&a[0].t, (size_t)((bb * S + t) * 256 + k)));
      }
    loom_graph_value_free(&a[0]);
    loom_graph_value_free(&a[1]);
    a[0] = xr;
    a[1] = mr;
    loom_graph_value real;
    st = loom_graph_eval(m, "main", np, a, NULL, &real);
    cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
    compare_rows(&padded.t, 0, &real.t, 0, R, 1e-4, "bert real tokens");
    loom_graph_value_free(&padded);
    loom_graph_value_free(&real);
    free_argv(a, np);
  }
  loom_graph_module_destroy(m);
}

/* ResNet: several spatial sizes (odd, prime, non-square); a batch equals its images run one
 * by one. */
LOOM_TEST(graph_models, resnet_batches_and_spatial_sizes) {
  loom_graph_module *m = load("models/resnet.loom");
  static const int64_t shapes[][3] = {{2, 7, 7}, {2, 11, 13}, {2, 8, 5}, {2, 1, 1}};
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    loom_test_rng r = {loom_test_seed() + 17 + si};
    sym_val sv[] = {{"n", shapes[si][0]}, {"h", shapes[si][1]}, {"w", shapes[si][2]}, {NULL, 0}};
    loom_graph_value *a = random_args(m, "main", sv, &r, 2, NULL, NULL);
    size_t np = nparams(m, "main");
    loom_graph_value both;
    loom_status st = loom_graph_eval(m, "main", np, a, NULL, &both);
    cr_assert(!st, "(%lld, %lld): %s", (long long)shapes[si][1], (long long)shapes[si][2], st ? loom_status_text(st, 0) : "");
    cr_assert_eq(both.t.ndim, 2);
    cr_assert_eq(both.t.shape[0], 2);
    cr_assert_eq(both.t.shape[1], 10);
    int64_t H = shapes[si][1], W = shapes[si][2];
    for (int64_t img = 0; img < 2; img++) {
      loom_graph_value one = gt_tensor(LOOM_DTYPE_F32, 4, (int64_t[]){1, 3, H, W}, NULL);
      memcpy(one.t.data, (float *)a[0].t.data + img * 3 * H * W, (size_t)(3 * H * W) * sizeof(float));
      loom_graph_value keep = a[0];
      a[0] = one;
      loom_graph_value res;
      st = loom_graph_eval(m, "main", np, a, NULL, &res);
      cr_assert(!st, "%s", st ? loom_status_text(st, 0) : "");
      for (int k = 0; k < 10; k++) {
        double x = loom_graph_tensor_get_f64(&both.t, (size_t)(img * 10 + k)), y = loom_graph_tensor_get_f64(&res.t, (size_t)k);
        cr_assert(fabs(x - y) <= 1e-5 * (1 + fabs(x)), "resnet image %lld class %d: %.9g vs %.9g", (long long)img, k, x, y);
      }
      loom_graph_value_free(&res);
      loom_graph_value_free(&one);
      a[0] = keep;
    }
    loom_graph_value_free(&both);
    free_argv(a, np);
  }
  loom_graph_module_destroy(m);
}

/* `loom eval` runs every model at several shapes (batch 1, odd and prime lengths), binding
 * every symbol from the input shapes. */
LOOM_TEST(graph_models, eval_every_model_at_several_shapes) {
  static const char *const runs[][2] = {
      {"models/mlp.loom", "--sym b=1"},
      {"models/mlp.loom", "--sym b=13"},
      {"models/gpt2_decoder.loom", "--sym b=2 --sym s=1 --sym past=11 --sym V=50 --sym P=16"},
      {"models/llama_block.loom", "--sym b=1 --sym s=1 --sym past=0"},
      {"models/llama_block.loom", "--sym b=3 --sym s=5 --sym past=7"},
      {"models/bert_block.loom", "--sym b=1 --sym s=1"},
      {"models/bert_block.loom", "--sym b=2 --sym s=11"},
      {"models/resnet.loom", "--sym n=1 --sym h=1 --sym w=1"},
      {"models/resnet.loom", "--sym n=3 --sym h=17 --sym w=9"},
  };
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    loom_test_proc p = loom_test_run("%s eval %s %s", loom_test_loom_bin(), runs[i][0], runs[i][1]);
    cr_expect_eq(p.exit_code, 0, "%s %s: %s", runs[i][0], runs[i][1], p.err);
    cr_expect(strstr(p.out, "result") && strstr(p.out, "checksum") && !strstr(p.out, "nan"), "%s %s: %s", runs[i][0],
              runs[i][1], p.out);
    /* Every --sym value shows up as a bound symbol. */
    char want[64];
    const char *b = strstr(runs[i][1], "--sym ") + 6;
    snprintf(want, sizeof want, "sym %.*s = %s", (int)(strchr(b, '=') - b), b, strchr(b, '=') + 1);
    char *sp = strchr(want, ' ');
    sp = strchr(sp + 1, ' ');
    sp = strchr(sp + 1, ' ');
    sp = strchr(sp + 1, ' ');
    if (sp) *sp = '\0';
    cr_expect(strstr(p.out, want), "%s %s: want '%s' in %s", runs[i][0], runs[i][1], want, p.out);
    loom_test_proc_free(&p);
  }
  /* A shape that breaks a runtime bound: clear error, exit 1. */
  loom_test_proc p = loom_test_run("%s eval models/llama_block.loom --sym b=1 --sym s=3 --sym past=6 --input inv_freq=random:'(31)'",
                                   loom_test_loom_bin());
  cr_expect_eq(p.exit_code, 1);
  cr_expect(strstr(p.err, "input 'inv_freq' axis 0") && strstr(p.err, "31"), "%s", p.err);
  loom_test_proc_free(&p);
}

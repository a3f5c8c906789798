/* test_legalize_models.c — whole models before and after THE default pipeline (normalize,
 * simplify, fold, cse, dce, legalize, schedule; every intermediate module verified), evaluated
 * by the graph interpreter on the same inputs (legalized calls run their generated tensor
 * programs), at several shapes including 1 and primes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "graph/graph.h"
#include "driver/pipeline.h"
#include "graph/legalize.h"
#include "support/loom_test.h"

typedef struct binding {
  const char *name;
  int64_t value;
} binding;

typedef struct env_fill {
  loom_sym_env *env;
  const binding *b;
  size_t n;
  bool missing;
} env_fill;

static void bind_var(void *ud, const loom_sym_expr *var) {
  env_fill *f = ud;
  for (size_t i = 0; i < f->n; i++) {
    if (!strcmp(loom_sym_var_name(var), f->b[i].name)) {
      cr_assert_null(loom_sym_env_set(f->env, var, f->b[i].value));
      return;
    }
  }
  f->missing = true;
}

static loom_graph_module *load(const char *path, char **text) {
  size_t len;
  cr_assert_null(loom_file_read(path, text, &len));
  loom_source src = {path, *text, len};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_graph_module *m;
  loom_status s = loom_graph_parse(&src, &diags, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&diags);
  return m;
}

/* Random inputs for @main of `m` at the given symbol values. */
static void make_inputs(loom_graph_module *m, const binding *b, size_t nb, bool positive, loom_graph_value *in, size_t *n) {
  loom_graph_func *f = loom_graph_module_find_func(m, "main");
  loom_sym_env *env;
  cr_assert_null(loom_sym_env_create(NULL, &env));
  *n = f->nparams;
  for (size_t p = 0; p < f->nparams; p++) {
    const loom_sinfo *si = f->params[p]->sinfo;
    env_fill fill = {env, b, nb, false};
    int64_t shape[8];
    for (int d = 0; d < si->ndim; d++) {
      loom_sym_for_each_var(si->dims[d], bind_var, &fill);
      cr_assert_not(fill.missing, "no value for a symbol of parameter %zu", p);
      cr_assert_null(loom_sym_eval(loom_graph_module_sym(m), si->dims[d], env, &shape[d]));
    }
    cr_assert_null(loom_graph_value_tensor(si->dtype, si->ndim, shape, &in[p]));
    /* Centered values, or positive ones where the model needs them (batch-norm variances). */
    for (size_t i = 0; i < in[p].t.numel; i++) {
      double v = sin((double)(i * 7 + p * 13));
      loom_graph_tensor_set_f64(&in[p].t, i, positive ? 0.5 + 0.25 * v : 0.5 * v);
    }
  }
  loom_sym_env_destroy(env);
}

static void check_model(const char *path, const binding *shapes, size_t nbind, size_t nsets, bool positive) {
  char *t1, *t2;
  loom_graph_module *ref = load(path, &t1), *leg = load(path, &t2);
  loom_pass_id passes[LOOM_PASS_COUNT];
  size_t npasses = loom_pipeline_default(false, LOOM_PASS_schedule, passes);
  loom_pass_options opts = {.verify_each = true};
  loom_diag_list vd;
  loom_diag_list_init(&vd, NULL);
  loom_status s = loom_pipeline_run(leg, passes, npasses, &opts, &vd);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&vd);
  size_t done = loom_graph_module_num_tps(leg);
  cr_assert_gt(done, 0);
  for (size_t k = 0; k < nsets; k++) {
    const binding *b = shapes + k * nbind;
    loom_graph_value in1[32], in2[32], out1, out2;
    size_t n1, n2;
    make_inputs(ref, b, nbind, positive, in1, &n1);
    make_inputs(leg, b, nbind, positive, in2, &n2);
    s = loom_graph_eval(ref, "main", n1, in1, NULL, &out1);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    s = loom_graph_eval(leg, "main", n2, in2, NULL, &out2);
    cr_assert_null(s, "%s (legalized)", loom_status_text(s, 0));
    cr_assert_eq(out1.t.numel, out2.t.numel);
    double worst = 0;
    for (size_t i = 0; i < out1.t.numel; i++) {
      double a = loom_graph_tensor_get_f64(&out1.t, i), c = loom_graph_tensor_get_f64(&out2.t, i);
      cr_assert(isfinite(a), "%s shape set %zu: the reference output %zu is %g (bad test data)", path, k, i, a);
      cr_assert(isfinite(c), "%s shape set %zu: the legalized output %zu is %g", path, k, i, c);
      double err = fabs(a - c) / (1 + fabs(a));
      if (err > worst) worst = err;
    }
    cr_assert_lt(worst, 1e-5, "%s shape set %zu: relative error %g", path, k, worst);
    cr_log_info("%s shape set %zu: %zu outputs, worst relative error %.2g (%zu programs)", path, k,
                out1.t.numel, worst, done);
    for (size_t p = 0; p < n1; p++) loom_graph_value_free(&in1[p]);
    for (size_t p = 0; p < n2; p++) loom_graph_value_free(&in2[p]);
    loom_graph_value_free(&out1);
    loom_graph_value_free(&out2);
  }
  loom_graph_module_destroy(ref);
  loom_graph_module_destroy(leg);
  free(t1);
  free(t2);
}

LOOM_TEST(legalize_models, mlp_at_several_batches) {
  static const binding shapes[] = {{"b", 1}, {"b", 2}, {"b", 5}};
  check_model("models/mlp.loom", shapes, 1, 3, false);
}

LOOM_TEST(legalize_models, resnet_at_several_image_sizes) {
  static const binding shapes[] = {{"n", 1}, {"h", 1}, {"w", 1}, {"n", 2}, {"h", 7}, {"w", 5}};
  check_model("models/resnet.loom", shapes, 3, 2, true);
}

LOOM_TEST(legalize_models, bert_block_with_padding_mask) {
  static const binding shapes[] = {{"b", 1}, {"s", 3}};
  check_model("models/bert_block.loom", shapes, 2, 1, false);
}

LOOM_TEST(legalize_models, gpt2_tiny_at_several_shapes) {
  static const binding shapes[] = {{"b", 1}, {"s", 1}, {"b", 2}, {"s", 3}, {"b", 1}, {"s", 7}};
  check_model("tests/graph/corpus/gpt2_tiny.loom", shapes, 2, 3, false);
}

LOOM_TEST(legalize_models, llama_block_with_kv_cache) {
  static const binding shapes[] = {{"b", 1}, {"s", 2}, {"past", 3}};
  check_model("models/llama_block.loom", shapes, 3, 1, false);
}

/* e2e_util.c — compile a model once, run it through the VM for a shape, compare with the
 * reference interpreter on the same inputs, and check the planned memory peak. */
#include "e2e/e2e_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/file.h"
#include "frontend/onnx/onnx_import.h"
#include "graph/memplan.h"

typedef struct env_fill {
  loom_sym_env *env;
  const e2e_bind *b;
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

loom_graph_module *e2e_load(const char *path) {
  size_t n = strlen(path);
  if (n > 5 && strcmp(path + n - 5, ".onnx") == 0) {
    loom_onnx_model *om;
    loom_status s = loom_onnx_model_load(path, &om);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    loom_graph_module *m = NULL;
    s = loom_onnx_import(om, &m);
    loom_onnx_model_free(om);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    return m;
  }
  char *text;
  size_t len;
  cr_assert_null(loom_file_read(path, &text, &len), "cannot read %s", path);
  loom_source src = {path, text, len};
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  loom_graph_module *m;
  loom_status s = loom_graph_parse(&src, &diags, &m);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_diag_list_destroy(&diags);
  free(text);
  return m;
}

e2e_model e2e_compile(const char *path) {
  loom_compile_options o = {0};
  return e2e_compile_with(path, &o);
}

e2e_model e2e_compile_with(const char *path, const loom_compile_options *o) {
  e2e_model md = {.path = path, .ref = e2e_load(path)};
  loom_status s = loom_compile_file(path, o, &md.c);
  cr_assert_null(s, "%s: %s", path, loom_status_text(s, 0));
  s = loom_compiled_open(md.c, NULL, &md.rt);
  cr_assert_null(s, "%s: %s", path, loom_status_text(s, 0));
  return md;
}

e2e_model e2e_compile_text(const char *text, char *path) {
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  return e2e_compile(path);
}

void e2e_model_free(e2e_model *md) {
  loom_rt_close(md->rt);
  loom_compiled_free(md->c);
  loom_graph_module_destroy(md->ref);
}

/* Whether every symbol of e has a value in b (then *out = e's value). */
static bool try_eval_env(loom_graph_module *m, const loom_sym_expr *e, const e2e_bind *b, size_t nb, int64_t *out) {
  loom_sym_env *env;
  cr_assert_null(loom_sym_env_create(NULL, &env));
  env_fill fill = {env, b, nb, false};
  loom_sym_for_each_var(e, bind_var, &fill);
  if (!fill.missing) cr_assert_null(loom_sym_eval(loom_graph_module_sym(m), e, env, out));
  loom_sym_env_destroy(env);
  return !fill.missing;
}

const loom_sym_expr *e2e_eval_env(loom_graph_module *m, const loom_sym_expr *e, const e2e_bind *b, size_t nb, int64_t *out) {
  if (!try_eval_env(m, e, b, nb, out)) {
    char *t = loom_sym_to_string(e);
    cr_log_error("no value for a symbol of %s", t ? t : "?");
    free(t);
    cr_assert_fail("a symbol has no value in the test's shape set");
  }
  return e;
}

static double input_value(loom_dtype dt, size_t i, size_t p, bool positive) {
  if (loom_dtype_is_float(dt)) {
    double v = sin((double)(i * 7 + p * 13));
    return positive ? 0.5 + 0.25 * v : 0.5 * v;
  }
  if (dt == LOOM_DTYPE_BOOL) return (double)((i + p) % 3 != 0);
  return (double)((i * 5 + p) % 7); /* small non-negative ints: token ids, indices */
}

/* Flattens a graph value into its tensors (tuples one level or nested). */
static size_t flatten(const loom_graph_value *v, const loom_graph_value **out, size_t n) {
  if (v->kind != LOOM_SINFO_TUPLE) {
    out[n] = v;
    return n + 1;
  }
  for (size_t i = 0; i < v->n; i++) n = flatten(&v->items[i], out, n);
  return n;
}

double e2e_check(e2e_model *md, const char *fn, const e2e_bind *b, size_t nb, bool positive, e2e_io *io) {
  loom_graph_func *f = loom_graph_module_find_func(md->ref, fn);
  cr_assert_not_null(f, "%s has no @%s", md->path, fn);
  size_t np = f->nparams;
  cr_assert_leq(np, E2E_MAX_PARAMS);
  loom_graph_value in[E2E_MAX_PARAMS];
  loom_tensor *tin[E2E_MAX_PARAMS];
  for (size_t p = 0; p < np; p++) {
    const loom_sinfo *si = f->params[p]->sinfo;
    int64_t shape[LOOM_VM_MAX_RANK];
    for (int d = 0; d < si->ndim; d++) e2e_eval_env(md->ref, si->dims[d], b, nb, &shape[d]);
    cr_assert_null(loom_graph_value_tensor(si->dtype, si->ndim, shape, &in[p]));
    const loom_tensor *given = io && p < io->ngiven ? io->given[p] : NULL;
    if (given) { /* a tensor carried from an earlier call (the KV cache) */
      cr_assert_eq(loom_tensor_numel(given), in[p].t.numel, "%s: carried input %zu has the wrong size", md->path, p);
      memcpy(in[p].t.data, given->data, in[p].t.numel * loom_dtype_size(si->dtype));
    } else {
      for (size_t i = 0; i < in[p].t.numel; i++) loom_graph_tensor_set_f64(&in[p].t, i, input_value(si->dtype, i, p, positive));
    }
    cr_assert_null(loom_rt_tensor_new(md->rt, si->dtype, si->ndim, shape, &tin[p]));
    memcpy(tin[p]->data, in[p].t.data, in[p].t.numel * loom_dtype_size(si->dtype));
  }
  loom_graph_value ref;
  loom_status s = loom_graph_eval(md->ref, fn, np, in, NULL, &ref);
  cr_assert_null(s, "%s: reference: %s", md->path, loom_status_text(s, 0));
  loom_device *dev = loom_rt_device(md->rt);
  size_t live0 = loom_device_get_stats(dev).live_bytes;
  loom_device_reset_peak(dev);
  loom_rt_outputs out;
  s = loom_rt_call(md->rt, fn, tin, (uint32_t)np, &out);
  cr_assert_null(s, "%s: compiled: %s", md->path, loom_status_text(s, 0));
  size_t used = loom_device_get_stats(dev).peak_live_bytes - live0;
  /* the planned peak of this function at these shapes bounds what the call allocated */
  loom_graph_module *cm = loom_compiled_module(md->c);
  const loom_sym_expr *peak;
  cr_assert_null(loom_memplan_total_peak(cm, loom_graph_module_find_func(cm, fn), &peak));
  int64_t planned = -1;
  /* a peak that names extents counted in the data (io->data_dims) is checked only where b gives them */
  bool known = io && io->data_dims ? try_eval_env(cm, peak, b, nb, &planned) : e2e_eval_env(cm, peak, b, nb, &planned) != NULL;
  if (known)
    cr_assert_leq(used, (size_t)planned, "%s: the call allocated %zu bytes, the plan's peak is %lld", md->path, used,
                  (long long)planned);
  const loom_graph_value *refs[64];
  size_t nref = flatten(&ref, refs, 0);
  cr_assert_eq(nref, out.count, "%s: %zu reference outputs, %u compiled", md->path, nref, out.count);
  double worst = 0;
  for (size_t k = 0; k < nref; k++) {
    const loom_graph_tensor *rt = &refs[k]->t;
    cr_assert_eq(out.items[k]->kind, LOOM_VM_OBJ_TENSOR);
    const loom_tensor *ct = (const loom_tensor *)out.items[k];
    cr_assert_eq(ct->rank, rt->ndim, "%s output %zu: rank", md->path, k);
    for (int d = 0; d < rt->ndim; d++) cr_assert_eq(ct->shape[d], rt->shape[d], "%s output %zu axis %d", md->path, k, d);
    loom_graph_tensor view = *rt;
    view.data = ct->data;
    for (size_t i = 0; i < rt->numel; i++) {
      double a = loom_graph_tensor_get_f64(rt, i), c = loom_graph_tensor_get_f64(&view, i);
      if (io && io->nan_ok && isnan(a)) {
        cr_assert(isnan(c), "%s output %zu[%zu]: the reference is NaN, compiled value %g", md->path, k, i, c);
        continue;
      }
      cr_assert(isfinite(a), "%s output %zu[%zu]: the reference is %g (bad test data)", md->path, k, i, a);
      cr_assert(isfinite(c), "%s output %zu[%zu]: compiled value %g", md->path, k, i, c);
      double err = fabs(a - c) / (1 + fabs(a));
      if (err > worst) worst = err;
    }
  }
  if (io) {
    io->nout = out.count < E2E_MAX_PARAMS ? out.count : E2E_MAX_PARAMS;
    for (uint32_t k = 0; k < io->nout; k++) {
      io->out[k] = (loom_tensor *)out.items[k];
      loom_vm_obj_retain(out.items[k]);
    }
    io->planned = planned;
    io->used = used;
  }
  loom_rt_outputs_free(&out);
  loom_graph_value_free(&ref);
  for (size_t p = 0; p < np; p++) {
    loom_graph_value_free(&in[p]);
    loom_tensor_release(tin[p]);
  }
  return worst;
}

void e2e_io_free(e2e_io *io) {
  for (uint32_t k = 0; k < io->nout; k++) loom_tensor_release(io->out[k]);
  io->nout = 0;
}

char *e2e_slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

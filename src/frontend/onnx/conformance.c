/* conformance.c — the ONNX backend-test runner on the reference interpreter (see
 * onnx_import.h): load, import, run each test_data_set_N, compare with tolerances. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frontend/onnx/onnx_import.h"

#define RTOL 1e-3
#define ATOL 1e-7

typedef struct family {
  char *name;
  size_t pass, fail, unsup;
} family;

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static int cmp_fam(const void *a, const void *b) { return strcmp(((const family *)a)->name, ((const family *)b)->name); }

/* Compares one output; on mismatch writes why into `why`. */
static bool compare(const loom_graph_value *got, const loom_onnx_tensor *want, char *why, size_t cap) {
  if (want->kind == LOOM_ONNX_TYPE_SEQUENCE || want->kind == LOOM_ONNX_TYPE_OPTIONAL) {
    const char *w = want->kind == LOOM_ONNX_TYPE_OPTIONAL ? "an optional" : "a sequence";
    if (got->kind != LOOM_SINFO_LIST) return snprintf(why, cap, "output is not a list (expected %s)", w), false;
    if (got->n != want->nitems)
      return snprintf(why, cap, "%s of %zu items, expected %zu", w, got->n, want->nitems), false;
    for (size_t i = 0; i < got->n; i++) {
      char w2[300];
      if (!compare(&got->items[i], want->items[i], w2, sizeof w2))
        return snprintf(why, cap, "item %zu: %s", i, w2), false;
    }
    return true;
  }
  if (got->kind != LOOM_SINFO_TENSOR) return snprintf(why, cap, "output is not a tensor"), false;
  const loom_graph_tensor *t = &got->t;
  if (t->dtype != want->dtype)
    return snprintf(why, cap, "dtype %s, expected %s", loom_dtype_name(t->dtype), loom_dtype_name(want->dtype)), false;
  if ((size_t)t->ndim != want->rank) return snprintf(why, cap, "rank %d, expected %zu", t->ndim, want->rank), false;
  for (size_t k = 0; k < want->rank; k++)
    if (t->shape[k] != want->dims[k])
      return snprintf(why, cap, "dim %zu is %lld, expected %lld", k, (long long)t->shape[k], (long long)want->dims[k]), false;
  loom_graph_tensor w = {.dtype = want->dtype, .ndim = (int)want->rank, .numel = (size_t)want->numel, .data = want->data};
  for (size_t i = 0; i < t->numel; i++) {
    if (t->dtype == LOOM_DTYPE_STRING) {
      loom_str a = loom_graph_tensor_get_str(t, i), e = loom_graph_tensor_get_str(&w, i);
      if (!loom_graph_str_equal(a, e))
        return snprintf(why, cap, "element %zu is \"%.*s\", expected \"%.*s\"", i, (int)(a.len > 60 ? 60 : a.len),
                        a.data ? a.data : "", (int)(e.len > 60 ? 60 : e.len), e.data ? e.data : ""), false;
      continue;
    }
    if (loom_dtype_is_float(t->dtype)) {
      double a = loom_graph_tensor_get_f64(t, i), e = loom_graph_tensor_get_f64(&w, i);
      if (isnan(a) && isnan(e)) continue;
      if (a == e) continue;
      if (!(fabs(a - e) <= ATOL + RTOL * fabs(e)))
        return snprintf(why, cap, "element %zu is %.9g, expected %.9g", i, a, e), false;
    } else {
      int64_t a = loom_graph_tensor_get_i64(t, i), e = loom_graph_tensor_get_i64(&w, i);
      if (a != e) return snprintf(why, cap, "element %zu is %lld, expected %lld", i, (long long)a, (long long)e), false;
    }
  }
  return true;
}

typedef enum { R_PASS, R_FAIL, R_UNSUP } result;

/* The graph value of test input t: a tensor, or a list of them (a sequence or optional). */
static loom_status input_value(const loom_onnx_tensor *t, loom_graph_value *out) {
  memset(out, 0, sizeof *out);
  if (t->kind == LOOM_ONNX_TYPE_SEQUENCE || t->kind == LOOM_ONNX_TYPE_OPTIONAL) {
    out->kind = LOOM_SINFO_LIST;
    out->items = t->nitems ? calloc(t->nitems, sizeof *out->items) : NULL;
    if (t->nitems && !out->items) return LOOM_OOM();
    out->n = t->nitems;
    for (size_t i = 0; i < t->nitems; i++) {
      loom_status s = input_value(t->items[i], &out->items[i]);
      if (s) {
        loom_graph_value_free(out);
        return s;
      }
    }
    return LOOM_OK;
  }
  if (t->rank > 8) return LOOM_ERROR(UNIMPLEMENTED, "input rank %zu is over 8", t->rank);
  LOOM_PROPAGATE(loom_graph_value_tensor(t->dtype, (int)t->rank, t->dims, out));
  if (t->dtype == LOOM_DTYPE_STRING) return loom_graph_tensor_copy_strs(&out->t, 0, t->data, (size_t)t->numel);
  if (t->nbytes) memcpy(out->t.data, t->data, t->nbytes);
  return LOOM_OK;
}

static void set_reason(char *why, size_t cap, loom_status s) {
  snprintf(why, cap, "%s", loom_status_message(s));
  for (char *p = why; *p; p++)
    if (*p == '\n') *p = ' ';
}

/* Runs one test directory. */
static result run_test(const char *tdir, const loom_onnx_conformance_opts *opts, bool *folded, char *family_out,
                       size_t fcap, char *why, size_t cap) {
  bool fold_int = opts->fold_int_inputs;
  *folded = false;
  char path[4096];
  snprintf(path, sizeof path, "%s/model.onnx", tdir);
  snprintf(family_out, fcap, "?");
  loom_onnx_model *model;
  loom_status s = loom_onnx_model_load(path, &model);
  if (s) {
    result r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
    set_reason(why, cap, s);
    loom_status_free(s);
    return r;
  }
  const loom_onnx_graph *g = model->graph;
  snprintf(family_out, fcap, "%s", g->n_nodes == 1 ? g->nodes[0].op_type : g->n_nodes ? "(multi-node)" : "(empty)");
  loom_graph_module *gm = NULL;
  s = loom_onnx_import(model, &gm);
  if (s && fold_int && loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED && strstr(loom_status_message(s), "must be a constant")) {
    loom_status_free(s);
    s = LOOM_OK;
    *folded = true;
  }
  if (s) {
    result r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
    set_reason(why, cap, s);
    loom_status_free(s);
    loom_onnx_model_free(model);
    return r;
  }
  result r = R_PASS;
  size_t nsets = 0;
  for (int k = 0; r == R_PASS; k++) {
    char sdir[4200];
    snprintf(sdir, sizeof sdir, "%s/test_data_set_%d", tdir, k);
    struct stat st;
    if (stat(sdir, &st) != 0) break;
    nsets++;
    loom_onnx_test_set *ts;
    s = loom_onnx_test_set_load(sdir, model, &ts);
    if (s) {
      r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
      set_reason(why, cap, s);
      loom_status_free(s);
      break;
    }
    /* fold_int: freeze the set's integer inputs and import for this set */
    const char *fnames[64];
    const loom_onnx_tensor *fvals[64];
    bool frozen[64] = {false};
    size_t nfz = 0;
    if (*folded) {
      size_t j = 0;
      for (size_t i = 0; i < g->n_inputs && j < ts->n_inputs && j < 64; i++) {
        if (loom_onnx_graph_find_initializer(g, g->inputs[i].name)) continue;
        loom_dtype dt = ts->inputs[j]->dtype;
        if (dt == LOOM_DTYPE_I64 || dt == LOOM_DTYPE_I32) frozen[j] = true, fnames[nfz] = g->inputs[i].name, fvals[nfz++] = ts->inputs[j];
        j++;
      }
      if (opts->forget) opts->forget(opts->eval_ctx, gm);
  loom_graph_module_destroy(gm);
      gm = NULL;
      loom_onnx_import_opts o = {.n_frozen = nfz, .frozen_names = fnames, .frozen_values = fvals};
      s = loom_onnx_import_ex(model, &o, &gm);
      if (s) {
        r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
        set_reason(why, cap, s);
        loom_status_free(s);
        loom_onnx_test_set_free(ts);
        break;
      }
    }
    loom_graph_value *args = calloc(ts->n_inputs + 1, sizeof *args);
    size_t made = 0, nargs = 0;
    for (; made < ts->n_inputs && r == R_PASS; made++) {
      if (made < 64 && frozen[made]) continue;
      s = input_value(ts->inputs[made], &args[nargs]);
      if (s) {
        r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
        set_reason(why, cap, s), loom_status_free(s);
        break;
      }
      nargs++;
    }
    if (r == R_PASS) {
      loom_graph_value res;
      s = opts->eval ? opts->eval(opts->eval_ctx, gm, nargs, args, &res) : loom_graph_eval(gm, "main", nargs, args, NULL, &res);
      if (s) {
        r = loom_status_code(s) == LOOM_CODE_UNIMPLEMENTED ? R_UNSUP : R_FAIL;
        set_reason(why, cap, s);
        loom_status_free(s);
      } else {
        if (ts->n_outputs == 1) {
          if (!compare(&res, ts->outputs[0], why, cap)) r = R_FAIL;
        } else if (res.kind != LOOM_SINFO_TUPLE || res.n != ts->n_outputs) {
          r = R_FAIL, snprintf(why, cap, "expected %zu outputs", ts->n_outputs);
        } else {
          for (size_t o = 0; o < ts->n_outputs && r == R_PASS; o++) {
            char w2[400];
            if (!compare(&res.items[o], ts->outputs[o], w2, sizeof w2))
              r = R_FAIL, snprintf(why, cap, "output %zu: %s", o, w2);
          }
        }
        loom_graph_value_free(&res);
      }
    }
    for (size_t i = 0; i < nargs; i++) loom_graph_value_free(&args[i]);
    free(args);
    loom_onnx_test_set_free(ts);
  }
  if (r == R_PASS && nsets == 0) r = R_FAIL, snprintf(why, cap, "no test_data_set_N");
  if (opts->forget) opts->forget(opts->eval_ctx, gm);
  loom_graph_module_destroy(gm);
  loom_onnx_model_free(model);
  return r;
}

loom_status loom_onnx_conformance_run(const char *dir, const char *filter, FILE *out,
                                      loom_onnx_conformance_totals *tot) {
  return loom_onnx_conformance_run_ex(dir, filter, false, out, tot);
}

loom_status loom_onnx_conformance_run_ex(const char *dir, const char *filter, bool fold_int, FILE *out,
                                         loom_onnx_conformance_totals *tot) {
  loom_onnx_conformance_opts o = {.fold_int_inputs = fold_int};
  return loom_onnx_conformance_run_opts(dir, filter, &o, out, tot);
}

loom_status loom_onnx_conformance_run_opts(const char *dir, const char *filter, const loom_onnx_conformance_opts *opts,
                                           FILE *out, loom_onnx_conformance_totals *tot) {
  bool fold_int = opts->fold_int_inputs;
  *tot = (loom_onnx_conformance_totals){0};
  DIR *d = opendir(dir);
  if (!d) return LOOM_ERROR(NOT_FOUND, "%s: cannot open the conformance directory", dir);
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' || (filter && !strstr(de->d_name, filter))) continue;
    if (n == cap) names = realloc(names, (cap = cap ? cap * 2 : 256) * sizeof *names);
    names[n++] = strdup(de->d_name);
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, cmp_str);
  family *fams = calloc(n + 1, sizeof *fams);
  size_t nf = 0;
  for (size_t i = 0; i < n; i++) {
    char tdir[4096], fam[128], why[600] = "";
    snprintf(tdir, sizeof tdir, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(tdir, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
    bool folded;
    result r = run_test(tdir, opts, &folded, fam, sizeof fam, why, sizeof why);
    if (r == R_PASS && folded) tot->passed_folded++;
    size_t f = 0;
    while (f < nf && strcmp(fams[f].name, fam) != 0) f++;
    if (f == nf) fams[nf++].name = strdup(fam);
    tot->total++;
    if (r == R_PASS) tot->passed++, fams[f].pass++;
    else if (r == R_FAIL) tot->failed++, fams[f].fail++;
    else tot->unsupported++, fams[f].unsup++;
    if (out) {
      if (r == R_PASS) fprintf(out, "PASS %s%s\n", names[i], folded ? " (integer inputs folded)" : "");
      else fprintf(out, "%s %s (%s)\n", r == R_FAIL ? "FAIL" : "UNSUPPORTED", names[i], why);
    }
  }
  qsort(fams, nf, sizeof *fams, cmp_fam);
  if (out) {
    fprintf(out, "\n| op type | pass | fail | unsupported |\n| --- | --- | --- | --- |\n");
    for (size_t f = 0; f < nf; f++)
      fprintf(out, "| %s | %zu | %zu | %zu |\n", fams[f].name, fams[f].pass, fams[f].fail, fams[f].unsup);
    fprintf(out, "\n%zu passed, %zu failed, %zu unsupported of %zu\n", tot->passed, tot->failed, tot->unsupported,
            tot->total);
    if (fold_int) fprintf(out, "(%zu of the passes with integer inputs folded as constants)\n", tot->passed_folded);
  }
  for (size_t f = 0; f < nf; f++) free(fams[f].name);
  free(fams);
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return LOOM_OK;
}

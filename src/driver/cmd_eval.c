/* cmd_eval.c — `loom eval FILE.loom [--fn main] --input NAME=SPEC ... [--output out.npy]`:
 * runs a graph function in the reference interpreter. SPEC is random:(2,7,768) (floats
 * uniform in [-1, 1), integers in [0, 2)), randint:HIGH:(2,7) (integers in [0, HIGH)),
 * strings:a,b,c (a 1-D string tensor; string results print their first 16 elements), or
 * @file.npy. With --sym NAME=VALUE, parameters without --input get random data (floats in
 * [-0.1, 0.1), integers in [0, 2), bools true) of the shape their struct info gives. Prints each input, the bound value of every symbolic var, and the result's
 * shape with a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/graph_file.h"
#include "driver/run_tool.h"
#include "graph/graph.h"
#include "graph/npy_io.h"

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* "(2, 7, 768)" -> shape; false when malformed. */
static bool parse_dims(const char *s, int *nd, int64_t *shape) {
  *nd = 0;
  while (*s == ' ') s++;
  if (*s++ != '(') return false;
  for (;;) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') return s[1] == '\0';
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0 || *nd >= 8) return false;
    shape[(*nd)++] = v;
    s = end;
  }
}

/* A string tensor: its dtype and shape, then its first elements quoted (C escapes). */
static void print_string_line(const char *what, const loom_graph_tensor *t) {
  printf("%s: string (", what);
  for (int i = 0; i < t->ndim; i++) printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf("%s) [", t->ndim == 1 ? "," : "");
  loom_run_tool_print_strs(t->data, t->numel);
  printf("]\n");
}

static void print_tensor_line(const char *what, const loom_graph_tensor *t) {
  if (t->dtype == LOOM_DTYPE_STRING) {
    print_string_line(what, t);
    return;
  }
  double sum = 0, asum = 0;
  for (size_t i = 0; i < t->numel; i++) {
    double v = loom_graph_tensor_get_f64(t, i);
    sum += v;
    asum += v < 0 ? -v : v;
  }
  printf("%s: %s (", what, loom_dtype_name(t->dtype));
  for (int i = 0; i < t->ndim; i++) printf("%s%lld", i ? ", " : "", (long long)t->shape[i]);
  printf("%s) checksum sum=%.9g abs=%.9g\n", t->ndim == 1 ? "," : "", sum, asum);
}

static void print_value(const char *what, const loom_graph_value *v) {
  if (v->kind == LOOM_SINFO_TENSOR) {
    print_tensor_line(what, &v->t);
  } else if (v->kind == LOOM_SINFO_SHAPE) {
    printf("%s: shape(", what);
    for (size_t i = 0; i < v->n; i++) printf("%s%lld", i ? ", " : "", (long long)v->dims[i]);
    printf(")\n");
  } else if (v->kind == LOOM_SINFO_SCALAR) {
    printf("%s: scalar %lld\n", what, (long long)v->i);
  } else if (v->kind == LOOM_SINFO_TUPLE) {
    for (size_t i = 0; i < v->n; i++) {
      char w[128];
      snprintf(w, sizeof w, "%s.%zu", what, i);
      print_value(w, &v->items[i]);
    }
  }
}

typedef struct sym_list {
  const loom_sym_expr *v[256];
  size_t n;
} sym_list;

static void collect_cb(void *ud, const loom_sym_expr *var) {
  sym_list *l = ud;
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i] == var) return;
  if (l->n < 256) l->v[l->n++] = var;
}

static void collect(sym_list *l, const loom_sinfo *si) {
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], collect_cb, l);
  if (si->value) loom_sym_for_each_var(si->value, collect_cb, l);
  for (size_t i = 0; i < si->nfields; i++) collect(l, si->fields[i]);
}

static void collect_seq(sym_list *l, const loom_graph_seq *s) {
  for (size_t i = 0; i < s->nblocks; i++)
    for (size_t j = 0; j < s->blocks[i]->n; j++) collect(l, s->blocks[i]->bindings[j]->var->sinfo);
}

static int run(const loom_cli_args *args) {
  const char *path = args->positional[0];
  const char *fn = loom_cli_get(args, "--fn");
  if (!fn) fn = "main";
  const char *seed_s = loom_cli_get(args, "--seed");
  uint64_t seed = seed_s ? strtoull(seed_s, NULL, 10) : 1;
  loom_graph_module *m;
  loom_diag_list dl;
  if (loom_driver_load_graph(path, &dl, &m)) return LOOM_EXIT_FAILURE;
  int rc = LOOM_EXIT_OK;
  loom_graph_func *f = loom_graph_module_find_func(m, fn);
  loom_graph_value *in = NULL;
  loom_sym_env *env = NULL;
  loom_graph_value out;
  memset(&out, 0, sizeof out);
  if (!f) {
    fprintf(stderr, "error: %s has no function @%s\n", path, fn);
    rc = LOOM_EXIT_FAILURE;
    goto done;
  }
  in = calloc(f->nparams ? f->nparams : 1, sizeof *in);
  if (!in) {
    rc = LOOM_EXIT_FAILURE;
    goto done;
  }
  int ninputs = loom_cli_count(args, "--input");
  bool *given = calloc(f->nparams ? f->nparams : 1, sizeof *given);
  for (int k = 0; k < ninputs && rc == LOOM_EXIT_OK; k++) {
    const char *spec = loom_cli_value_at(args, "--input", k);
    const char *eq = strchr(spec, '=');
    if (!eq) {
      rc = loom_cli_usage_error(args, "--input %s: expected NAME=SPEC", spec);
      break;
    }
    size_t idx = f->nparams;
    for (size_t i = 0; i < f->nparams; i++)
      if (strlen(f->params[i]->u.var.name) == (size_t)(eq - spec) && !strncmp(f->params[i]->u.var.name, spec, (size_t)(eq - spec)))
        idx = i;
    if (idx == f->nparams) {
      rc = loom_cli_usage_error(args, "--input %s: @%s has no parameter '%.*s'", spec, fn, (int)(eq - spec), spec);
      break;
    }
    const loom_sinfo *ps = f->params[idx]->sinfo;
    const char *v = eq + 1;
    loom_status st = LOOM_OK;
    if (v[0] == '@') {
      in[idx].kind = LOOM_SINFO_TENSOR;
      st = loom_graph_npy_read(v + 1, &in[idx].t);
    } else if (!strncmp(v, "random:", 7) || !strncmp(v, "randint:", 8)) {
      int64_t high = 2;
      const char *dims = v + 7;
      if (v[4] == 'i') {
        char *end;
        high = strtoll(v + 8, &end, 10);
        if (*end != ':' || high <= 0) {
          rc = loom_cli_usage_error(args, "--input %s: expected randint:HIGH:(dims)", spec);
          break;
        }
        dims = end + 1;
      }
      int nd;
      int64_t shape[8];
      if (!parse_dims(dims, &nd, shape)) {
        rc = loom_cli_usage_error(args, "--input %s: expected a shape like (2,7,768)", spec);
        break;
      }
      loom_dtype dt = ps->kind == LOOM_SINFO_TENSOR && ps->dtype != LOOM_DTYPE_COUNT ? ps->dtype : LOOM_DTYPE_F32;
      st = loom_graph_value_tensor(dt, nd, shape, &in[idx]);
      uint64_t s = seed * 1000003u + idx;
      for (size_t i = 0; !st && i < in[idx].t.numel; i++) {
        uint64_t r = rng_next(&s);
        if (loom_dtype_is_float(dt)) loom_graph_tensor_set_f64(&in[idx].t, i, (double)(r >> 11) / 9007199254740992.0 * 2 - 1);
        else loom_graph_tensor_set_i64(&in[idx].t, i, (int64_t)(r % (uint64_t)high));
      }
    } else if (!strncmp(v, "strings:", 8)) { /* a 1-D string tensor: strings:a,b,c */
      int64_t n = 1;
      for (const char *q = v + 8; *q; q++) n += *q == ',';
      st = loom_graph_value_tensor(LOOM_DTYPE_STRING, 1, &n, &in[idx]);
      const char *q = v + 8;
      for (int64_t i = 0; !st && i < n; i++) {
        const char *e = strchr(q, ',');
        size_t len = e ? (size_t)(e - q) : strlen(q);
        st = loom_graph_tensor_set_str(&in[idx].t, (size_t)i, q, len);
        q += len + (e != NULL);
      }
    } else {
      rc = loom_cli_usage_error(args, "--input %s: SPEC is random:(dims), randint:HIGH:(dims), strings:a,b,c or @file.npy", spec);
      break;
    }
    if (st) {
      fprintf(stderr, "error: input '%s': %s\n", f->params[idx]->u.var.name, loom_status_text(st, 0));
      loom_status_free(st);
      rc = LOOM_EXIT_FAILURE;
      break;
    }
    given[idx] = true;
  }
  /* Params without --input: random data of the shape their struct info gives under --sym. */
  int nsyms = loom_cli_count(args, "--sym");
  for (size_t i = 0; i < f->nparams && rc == LOOM_EXIT_OK; i++) {
    if (given[i]) continue;
    const loom_sinfo *ps = f->params[i]->sinfo;
    if (!nsyms || ps->kind != LOOM_SINFO_TENSOR || !ps->dims || ps->ndim > 8) {
      rc = loom_cli_usage_error(args, "missing --input %s=... (or --sym NAME=VALUE for every symbol of its shape)",
                                f->params[i]->u.var.name);
      break;
    }
    int64_t shape[8];
    for (int k = 0; k < ps->ndim && rc == LOOM_EXIT_OK; k++) {
      sym_list vars = {.n = 0};
      loom_sym_for_each_var(ps->dims[k], collect_cb, &vars);
      loom_sym_env *e2 = NULL;
      loom_status st = loom_sym_env_create(NULL, &e2);
      for (size_t q = 0; q < vars.n && !st; q++) {
        bool found = false;
        for (int j = 0; j < nsyms && !found; j++) {
          const char *sv = loom_cli_value_at(args, "--sym", j), *eq2 = strchr(sv, '=');
          const char *vn = loom_sym_var_name(vars.v[q]);
          if (eq2 && strlen(vn) == (size_t)(eq2 - sv) && !strncmp(sv, vn, (size_t)(eq2 - sv))) {
            st = loom_sym_env_set(e2, vars.v[q], strtoll(eq2 + 1, NULL, 10));
            found = true;
          }
        }
        if (!found && !st) {
          loom_sym_env_destroy(e2);
          e2 = NULL;
          rc = loom_cli_usage_error(args, "parameter '%s' needs --sym %s=VALUE", f->params[i]->u.var.name,
                                    loom_sym_var_name(vars.v[q]));
          break;
        }
      }
      if (rc == LOOM_EXIT_OK && !st) st = loom_sym_eval(loom_graph_module_sym(m), ps->dims[k], e2, &shape[k]);
      loom_sym_env_destroy(e2);
      if (rc == LOOM_EXIT_OK && st) {
        fprintf(stderr, "error: parameter '%s' axis %d: %s\n", f->params[i]->u.var.name, k, loom_status_text(st, 0));
        rc = LOOM_EXIT_FAILURE;
      }
      loom_status_free(st);
    }
    if (rc != LOOM_EXIT_OK) break;
    loom_status st = loom_graph_value_tensor(ps->dtype == LOOM_DTYPE_COUNT ? LOOM_DTYPE_F32 : ps->dtype, ps->ndim, shape, &in[i]);
    uint64_t s = seed * 1000003u + i;
    for (size_t j = 0; !st && j < in[i].t.numel; j++) {
      uint64_t r = rng_next(&s);
      if (loom_dtype_is_float(in[i].t.dtype)) loom_graph_tensor_set_f64(&in[i].t, j, (double)(r >> 11) / 9007199254740992.0 * 0.2 - 0.1);
      else if (in[i].t.dtype == LOOM_DTYPE_BOOL) loom_graph_tensor_set_i64(&in[i].t, j, 1);
      else loom_graph_tensor_set_i64(&in[i].t, j, (int64_t)(r % 2));
    }
    if (st) {
      loom_status_fprint(stderr, st);
      loom_status_free(st);
      rc = LOOM_EXIT_FAILURE;
    }
  }
  free(given);
  if (rc != LOOM_EXIT_OK) goto done;
  for (size_t i = 0; i < f->nparams; i++) {
    char w[160];
    snprintf(w, sizeof w, "input %s", f->params[i]->u.var.name);
    print_value(w, &in[i]);
  }
  loom_status st = loom_sym_env_create(NULL, &env);
  if (!st) st = loom_graph_eval(m, fn, f->nparams, in, env, &out);
  if (st) {
    loom_status_fprint(stderr, st);
    loom_status_free(st);
    rc = LOOM_EXIT_FAILURE;
    goto done;
  }
  sym_list syms = {.n = 0};
  for (size_t i = 0; i < f->nparams; i++) collect(&syms, f->params[i]->sinfo);
  collect_seq(&syms, f->body);
  for (size_t i = 0; i < syms.n; i++) {
    int64_t val;
    if (loom_sym_env_get(env, syms.v[i], &val)) printf("sym %s = %lld\n", loom_sym_var_name(syms.v[i]), (long long)val);
  }
  print_value("result", &out);
  const char *opath = loom_cli_get(args, "--output");
  if (opath) {
    if (out.kind != LOOM_SINFO_TENSOR) {
      fprintf(stderr, "error: --output needs a tensor result\n");
      rc = LOOM_EXIT_FAILURE;
    } else if ((st = loom_graph_npy_write(opath, &out.t))) {
      loom_status_fprint(stderr, st);
      loom_status_free(st);
      rc = LOOM_EXIT_FAILURE;
    }
  }
done:
  loom_graph_value_free(&out);
  for (size_t i = 0; in && i < f->nparams; i++) loom_graph_value_free(&in[i]);
  free(in);
  loom_sym_env_destroy(env);
  loom_graph_module_destroy(m);
  loom_diag_list_destroy(&dl);
  return rc;
}

const loom_cli_command loom_cmd_eval = {
    .name = "eval",
    .summary = "run a graph function of a .loom module in the reference interpreter",
    .positional = "FILE.loom|FILE.onnx",
    .min_positional = 1,
    .max_positional = 1,
    .opts = (const loom_cli_opt[]){{"--fn", "NAME", "function to run (default main)", false},
                                   {"--input", "NAME=SPEC", "random:(2,7,768) | randint:HIGH:(2,7) | strings:a,b,c | @file.npy", true},
                                   {"--output", "PATH", "write the result to a .npy file", false},
                                   {"--seed", "N", "seed of random inputs (default 1)", false},
                                   {"--sym", "NAME=VALUE", "a symbol's value: parameters without --input get random data of that shape", true},
                                   {NULL, NULL, NULL, false}},
    .run = run,
    .details = "Symbolic dims are bound from the input shapes; every match_cast and guard is checked at run time.",
};

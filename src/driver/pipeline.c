/* pipeline.c — the pass manager and THE compile pipeline, one list read top to bottom; the
 * targets the driver can pick; numeric checking of passes. */
#include "driver/pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "tensorprog/tp.h"

/* THE pipeline: every stage from a verified module to kernels, in order (passes.def has
 * what each one is). `offload` runs when asked; a caller stops after `schedule` (the module),
 * `lower` (the executable) or `codegen` (the kernels). */
static const loom_pass_id default_pipeline[] = {
    LOOM_PASS_inline,    /* calls of graph functions that pass constants (weights) inlined */
    LOOM_PASS_normalize, /* canonical form: leaves propagated, commutative operands ordered */
    LOOM_PASS_simplify,  /* algebraic rewrites (transpose/reshape chains, x*1, ...) */
    LOOM_PASS_fold,      /* constants evaluated; shape computations become symbolic literals */
    LOOM_PASS_cse,       /* equal pure bindings computed once */
    LOOM_PASS_dce,       /* dead bindings and constants removed */
    LOOM_PASS_attention, /* attention written out as matmul / scale / mask / softmax / matmul -> the attention op */
    LOOM_PASS_offload,   /* on request: matmul/linear to BLAS above a row threshold */
    LOOM_PASS_pack,      /* constant matmul weights laid out in the target's panels (not with offload) */
    LOOM_PASS_legalize,  /* ops -> call_tp of generated tensor programs */
    LOOM_PASS_fuse,      /* elementwise/injective chains merged into their consumers: one program per group */
    LOOM_PASS_share,     /* programs equal but for constant extents: one program, the constants symbols */
    LOOM_PASS_schedule,  /* the target's schedule rules: parallel outer loops, vectorised inner loops (CPU) */
    LOOM_PASS_memplan,   /* storage of every tensor, reused by proof; symbolic peak */
    LOOM_PASS_lower,     /* VM bytecode: MATCH, CHECK, ALLOC/VIEW, CALLK, KILL */
    LOOM_PASS_codegen,   /* kernels through the target: JIT, or an object for an artifact */
};

size_t loom_pipeline_default(bool offload, loom_pass_id last, loom_pass_id out[LOOM_PASS_COUNT]) {
  size_t n = 0;
  for (size_t i = 0; i < sizeof default_pipeline / sizeof default_pipeline[0]; i++) {
    if (default_pipeline[i] == LOOM_PASS_offload && !offload) continue;
    if (default_pipeline[i] == LOOM_PASS_pack && offload) continue; /* BLAS reads the weights as they are */
    out[n++] = default_pipeline[i];
    if (default_pipeline[i] == last) break;
  }
  return n;
}

/* ---- targets ----------------------------------------------------------------------- */

/* The targets this build generates code for; the driver picks one by name. */
static const loom_target *const targets[] = {
    &loom_target_cpu,
#if LOOM_HAVE_CUDA
    &loom_target_cuda,
#endif
};

loom_status loom_pipeline_target(const char *name, const loom_target **out) {
  *out = NULL;
  if (!name) name = "cpu";
  /* "cuda:sm_90": the target's name, then its machine (the caller passes that as the arch) */
  size_t len = strcspn(name, ":");
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++)
    if (strlen(targets[i]->name) == len && !strncmp(targets[i]->name, name, len)) {
      if (name[len] && targets[i] == &loom_target_cpu) /* the CPU is the host's: no machine to name */
        return LOOM_ERROR(INVALID_ARGUMENT, "target '%s': the cpu target takes no ':MACHINE' (it compiles for this host)", name);
      *out = targets[i];
      return LOOM_OK;
    }
  if (len == 4 && !strncmp(name, "cuda", 4))
    return LOOM_ERROR(UNIMPLEMENTED, "target 'cuda' is not in this build (no CUDA toolkit at build time); targets: cpu");
  return LOOM_ERROR(INVALID_ARGUMENT, "unknown target '%s'; targets: cpu%s", name, LOOM_HAVE_CUDA ? ", cuda" : "");
}

/* ---- numeric checking ------------------------------------------------------------------ */

typedef struct check_case {
  const char *fn;          /* function name (interned in the module) */
  char where[256];         /* "b=3, s=7" */
  size_t nargs;
  loom_graph_value *args;  /* the inputs */
  loom_graph_value ref;    /* the result before the pass */
} check_case;

struct loom_pipeline_check {
  loom_graph_module *m;
  LOOM_VEC(check_case) cases;
};

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

typedef struct var_list {
  const loom_sym_expr *v[64];
  size_t n;
} var_list;

static void collect_var(void *ud, const loom_sym_expr *var) {
  var_list *l = ud;
  for (size_t i = 0; i < l->n; i++)
    if (l->v[i] == var) return;
  if (l->n < 64) l->v[l->n++] = var;
}

static void collect_sinfo(var_list *l, const loom_sinfo *si) {
  if (si->dims)
    for (int i = 0; i < si->ndim; i++) loom_sym_for_each_var(si->dims[i], collect_var, l);
  if (si->value) loom_sym_for_each_var(si->value, collect_var, l);
}

/* Why parameter si cannot be generated, or NULL. */
static const char *cannot_generate(const loom_sinfo *si) {
  switch (si->kind) {
  case LOOM_SINFO_TENSOR:
    if (si->dtype == LOOM_DTYPE_UNKNOWN) return "a tensor parameter of unknown dtype";
    if (si->ndim < 0 || si->ndim > 8 || (si->ndim && !si->dims)) return "a tensor parameter of unknown shape";
    return NULL;
  case LOOM_SINFO_SHAPE:
    return si->ndim < 0 || (si->ndim && !si->dims) ? "a Shape parameter of unknown dims" : NULL;
  case LOOM_SINFO_SCALAR:
    return si->dtype == LOOM_DTYPE_UNKNOWN ? "a Scalar parameter of unknown dtype" : NULL;
  default:
    return "a parameter that is not a tensor, shape or scalar";
  }
}

/* Makes the inputs of f at the var values in env; false (no error) when a dim is negative
 * or the inputs would be too large. */
static loom_status make_args(loom_graph_module *m, const loom_graph_func *f, loom_sym_env *env, int64_t ival,
                             bool positive, uint64_t *rng, loom_graph_value *args, bool *ok) {
  loom_sym_ctx *cx = loom_graph_module_sym(m);
  size_t total = 0;
  *ok = true;
  for (size_t p = 0; p < f->nparams; p++) memset(&args[p], 0, sizeof args[p]);
  for (size_t p = 0; p < f->nparams && *ok; p++) {
    const loom_sinfo *si = f->params[p]->sinfo;
    int64_t dims[8];
    for (int d = 0; d < si->ndim && si->dims; d++) {
      LOOM_PROPAGATE(loom_sym_eval(cx, si->dims[d], env, &dims[d]));
      if (dims[d] < 0) *ok = false;
    }
    if (!*ok) break;
    loom_graph_value *a = &args[p];
    if (si->kind == LOOM_SINFO_SCALAR) {
      a->kind = LOOM_SINFO_SCALAR;
      a->sdtype = si->dtype;
      if (si->value) LOOM_PROPAGATE(loom_sym_eval(cx, si->value, env, &a->i));
      else a->i = (int64_t)(rng_next(rng) % 4) + 1;
      a->f = (double)a->i;
    } else if (si->kind == LOOM_SINFO_SHAPE) {
      a->kind = LOOM_SINFO_SHAPE;
      a->n = (size_t)si->ndim;
      a->dims = malloc(8 * sizeof *a->dims);
      if (!a->dims) return LOOM_OOM();
      memcpy(a->dims, dims, a->n * sizeof *dims);
    } else {
      size_t numel = 1;
      for (int d = 0; d < si->ndim; d++) numel *= (size_t)dims[d];
      total += numel;
      if (total > ((size_t)1 << 24)) {
        *ok = false;
        break;
      }
      LOOM_PROPAGATE(loom_graph_value_tensor(si->dtype, si->ndim, dims, a));
      for (size_t i = 0; i < numel; i++) {
        uint64_t r = rng_next(rng);
        double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
        if (loom_dtype_is_float(si->dtype)) loom_graph_tensor_set_f64(&a->t, i, positive ? 0.25 + u : 2 * u - 1);
        else if (si->dtype == LOOM_DTYPE_BOOL) loom_graph_tensor_set_i64(&a->t, i, (int64_t)(r & 1));
        else loom_graph_tensor_set_i64(&a->t, i, (int64_t)(r % (uint64_t)ival)); /* valid indices of every axis */
      }
    }
  }
  return LOOM_OK;
}

static bool all_finite(const loom_graph_value *v) {
  if (v->kind == LOOM_SINFO_TUPLE) {
    for (size_t i = 0; i < v->n; i++)
      if (!all_finite(&v->items[i])) return false;
    return true;
  }
  if (v->kind != LOOM_SINFO_TENSOR || !loom_dtype_is_float(v->t.dtype)) return true;
  for (size_t i = 0; i < v->t.numel; i++)
    if (!isfinite(loom_graph_tensor_get_f64(&v->t, i))) return false;
  return true;
}

static void free_args(loom_graph_value *args, size_t n) {
  for (size_t i = 0; args && i < n; i++) loom_graph_value_free(&args[i]);
  free(args);
}

loom_status loom_pipeline_check_begin(loom_graph_module *m, int samples, uint64_t seed, loom_diag_list *diags,
                                      loom_pipeline_check **out) {
  static const int64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19};
  static const int64_t pool[] = {1, 2, 3, 4, 5, 7, 8, 11, 13, 16};
  *out = NULL;
  loom_pipeline_check *c = calloc(1, sizeof *c);
  if (!c) return LOOM_OOM();
  c->m = m;
  uint64_t rng = seed * 0x9e3779b97f4a7c15ULL + 0x2545f4914f6cdd1dULL;
  loom_status st = LOOM_OK;
  for (size_t fi = 0; fi < loom_graph_module_num_funcs(m) && !st; fi++) {
    const loom_graph_func *f = loom_graph_module_func_at(m, fi);
    const char *why = NULL;
    var_list vars = {.n = 0};
    for (size_t p = 0; p < f->nparams && !why; p++) {
      why = cannot_generate(f->params[p]->sinfo);
      if (!why) collect_sinfo(&vars, f->params[p]->sinfo);
    }
    const char *first_err = NULL;
    char errbuf[512] = "";
    size_t made = 0;
    for (int k = 0; k < samples && !why && !st; k++) {
      loom_sym_env *env;
      if ((st = loom_sym_env_create(NULL, &env))) break;
      check_case cc = {.fn = f->name};
      int64_t ival = INT64_MAX;
      size_t len = 0;
      for (size_t i = 0; i < vars.n && !st; i++) {
        int64_t v = k == 0 ? 1 : k == 1 ? primes[i % 8] : pool[rng_next(&rng) % 10];
        if (v < ival) ival = v;
        st = loom_sym_env_set(env, vars.v[i], v);
        len += (size_t)snprintf(cc.where + len, len < sizeof cc.where ? sizeof cc.where - len : 0, "%s%s=%lld",
                                i ? ", " : "", loom_sym_var_name(vars.v[i]), (long long)v);
        if (len >= sizeof cc.where) len = sizeof cc.where - 1;
      }
      if (!vars.n) snprintf(cc.where, sizeof cc.where, "no symbolic vars, input set %d", k);
      if (ival == INT64_MAX) ival = 1;
      bool ok = false;
      cc.nargs = f->nparams;
      cc.args = calloc(f->nparams ? f->nparams : 1, sizeof *cc.args);
      if (!st && !cc.args) st = LOOM_OOM();
      /* Even sets hold signed data, odd ones positive data (variances, logs, square roots). */
      if (!st) st = make_args(m, f, env, ival, k % 2 == 1, &rng, cc.args, &ok);
      loom_sym_env_destroy(env);
      if (!st && ok) {
        loom_status es = loom_graph_eval(m, f->name, cc.nargs, cc.args, NULL, &cc.ref);
        if (!es && !all_finite(&cc.ref)) {
          es = LOOM_ERROR(OUT_OF_RANGE, "the result is not finite");
          loom_graph_value_free(&cc.ref);
        }
        if (es) {
          if (!first_err) {
            snprintf(errbuf, sizeof errbuf, "%s (at %s)", loom_status_message(es), cc.where);
            first_err = errbuf;
          }
          loom_status_free(es);
          ok = false;
        }
      }
      if (!st && ok && !LOOM_VEC_PUSH(NULL, &c->cases, cc)) st = LOOM_OOM();
      if (st || !ok) free_args(cc.args, cc.nargs);
      else made++;
    }
    if (!st && !made && diags)
      loom_diag_add(diags, LOOM_DIAG_NOTE, f->loc, "numeric check: @%s is not checked: %s", f->name,
                    why ? why : first_err ? first_err : "no input set");
  }
  if (st) {
    loom_pipeline_check_end(c);
    return st;
  }
  *out = c;
  return LOOM_OK;
}

/* Compares result values; on a difference writes where into `msg`. */
static bool same_value(const loom_graph_value *a, const loom_graph_value *b, char *msg, size_t cap, const char *path) {
  if (a->kind != b->kind) {
    snprintf(msg, cap, "%s is a different kind of value", path);
    return false;
  }
  switch (a->kind) {
  case LOOM_SINFO_TENSOR: {
    if (a->t.dtype != b->t.dtype || a->t.ndim != b->t.ndim || memcmp(a->t.shape, b->t.shape, (size_t)a->t.ndim * sizeof(int64_t))) {
      snprintf(msg, cap, "%s changed dtype or shape", path);
      return false;
    }
    bool fl = loom_dtype_is_float(a->t.dtype);
    double scale = 0; /* the largest magnitude of the tensor: sums of many terms round to it */
    for (size_t i = 0; fl && i < a->t.numel; i++) scale = fmax(scale, fabs(loom_graph_tensor_get_f64(&a->t, i)));
    for (size_t i = 0; i < a->t.numel; i++) {
      if (fl) {
        double x = loom_graph_tensor_get_f64(&a->t, i), y = loom_graph_tensor_get_f64(&b->t, i);
        if ((isnan(x) && isnan(y)) || x == y) continue;
        if (!(fabs(x - y) <= LOOM_PIPELINE_CHECK_RTOL * (fabs(x) + scale))) {
          snprintf(msg, cap, "%s element %zu is %.9g before and %.9g after (tolerance %g of |value| + %.3g)", path, i, x,
                   y, LOOM_PIPELINE_CHECK_RTOL, scale);
          return false;
        }
      } else if (loom_graph_tensor_get_i64(&a->t, i) != loom_graph_tensor_get_i64(&b->t, i)) {
        snprintf(msg, cap, "%s element %zu is %lld before and %lld after", path, i,
                 (long long)loom_graph_tensor_get_i64(&a->t, i), (long long)loom_graph_tensor_get_i64(&b->t, i));
        return false;
      }
    }
    return true;
  }
  case LOOM_SINFO_SHAPE:
    if (a->n != b->n || memcmp(a->dims, b->dims, a->n * sizeof *a->dims)) {
      snprintf(msg, cap, "%s (a shape) differs", path);
      return false;
    }
    return true;
  case LOOM_SINFO_SCALAR:
    if (a->i != b->i || !((isnan(a->f) && isnan(b->f)) || a->f == b->f)) {
      snprintf(msg, cap, "%s (a scalar) is %g before and %g after", path, a->f, b->f);
      return false;
    }
    return true;
  case LOOM_SINFO_TUPLE:
    if (a->n != b->n) {
      snprintf(msg, cap, "%s has %zu fields before and %zu after", path, a->n, b->n);
      return false;
    }
    for (size_t i = 0; i < a->n; i++) {
      char sub[128];
      snprintf(sub, sizeof sub, "%s.%zu", path, i);
      if (!same_value(&a->items[i], &b->items[i], msg, cap, sub)) return false;
    }
    return true;
  default:
    return true;
  }
}

loom_status loom_pipeline_check_after(loom_pipeline_check *c, const char *pass) {
  for (size_t i = 0; i < c->cases.len; i++) {
    check_case *cc = &c->cases.data[i];
    loom_graph_value got;
    loom_status es = loom_graph_eval(c->m, cc->fn, cc->nargs, cc->args, NULL, &got);
    if (es) {
      loom_status st = LOOM_ERROR(FAILED_PRECONDITION, "numeric check: after pass '%s', @%s fails at %s: %s", pass, cc->fn,
                                  cc->where, loom_status_message(es));
      loom_status_free(es);
      return st;
    }
    char msg[512];
    if (!same_value(&cc->ref, &got, msg, sizeof msg, "the result")) {
      loom_graph_value_free(&got);
      return LOOM_ERROR(FAILED_PRECONDITION, "numeric check: pass '%s' changed the result of @%s at %s: %s", pass, cc->fn,
                        cc->where, msg);
    }
    loom_graph_value_free(&cc->ref);
    cc->ref = got;
  }
  return LOOM_OK;
}

size_t loom_pipeline_check_count(const loom_pipeline_check *c) { return c->cases.len; }

void loom_pipeline_check_end(loom_pipeline_check *c) {
  if (!c) return;
  for (size_t i = 0; i < c->cases.len; i++) {
    free_args(c->cases.data[i].args, c->cases.data[i].nargs);
    loom_graph_value_free(&c->cases.data[i].ref);
  }
  LOOM_VEC_FREE(NULL, &c->cases);
  free(c);
}

/* ---- the pass manager ---------------------------------------------------------------- */

/* Verifies what pass `info` made: the module after a MODULE pass, the executable after
 * `lower`, the kernel table against the executable after `codegen` (a plan has no verifier:
 * lowering checks what it reads). */
static loom_status verify_after(const loom_pass_ctx *c, const loom_pass_info *info) {
  switch (info->level) {
  case LOOM_PASS_LEVEL_MODULE: {
    loom_diag_list vd;
    loom_diag_list_init(&vd, NULL);
    loom_status st = loom_graph_verify(c->m, &vd);
    loom_diag_list_destroy(&vd);
    return st;
  }
  case LOOM_PASS_LEVEL_PLAN:
    return LOOM_OK;
  case LOOM_PASS_LEVEL_EXEC:
    return c->exe ? loom_vm_exec_verify(c->exe) : LOOM_ERROR(INTERNAL, "no executable was made");
  case LOOM_PASS_LEVEL_KERNELS:
    if (!c->exe || c->nprograms != c->exe->nkernels)
      return LOOM_ERROR(INTERNAL, "%u kernels were made for an executable of %u", c->nprograms, c->exe ? c->exe->nkernels : 0);
    for (uint32_t k = 0; k < c->nprograms; k++) {
      const char *want = loom_vm_exec_str(c->exe, c->exe->kernels[k].name);
      if (strcmp(loom_tp_func_name(c->programs[k]), want))
        return LOOM_ERROR(INTERNAL, "kernel %u is '%s', the executable calls '%s'", k, loom_tp_func_name(c->programs[k]), want);
      if (c->made == LOOM_TARGET_EMIT_JIT && (!c->kernels || !c->kernels[k].fn || strcmp(c->kernels[k].name, want)))
        return LOOM_ERROR(INTERNAL, "kernel '%s' has no code", want);
    }
    if (c->made == LOOM_TARGET_EMIT_OBJECT && !c->object_written) return LOOM_ERROR(INTERNAL, "no object file was written");
    return LOOM_OK;
  }
  return LOOM_OK;
}

/* Prints what pass `info` made into sb. */
static void print_after(const loom_pass_ctx *c, const loom_pass_info *info, loom_strbuf *sb) {
  switch (info->level) {
  case LOOM_PASS_LEVEL_MODULE:
    loom_graph_print_module(c->m, sb);
    break;
  case LOOM_PASS_LEVEL_PLAN:
    for (size_t i = 0; i < c->nplans; i++) loom_memplan_print(c->plans[i], sb);
    break;
  case LOOM_PASS_LEVEL_EXEC:
    loom_vm_exec_disasm(c->exe, sb);
    break;
  case LOOM_PASS_LEVEL_KERNELS:
    loom_strbuf_printf(sb, "%u kernels (target %s, %s)\n", c->nprograms, c->target->name,
                       c->made == LOOM_TARGET_EMIT_JIT ? "JIT" : "object");
    for (uint32_t k = 0; k < c->nprograms; k++) {
      char sym[256];
      c->target->kernel_symbol(c->programs[k], sym, sizeof sym);
      loom_strbuf_printf(sb, "  k%u @%s -> %s\n", k, loom_tp_func_name(c->programs[k]), sym);
    }
    break;
  }
}

loom_status loom_pipeline_run_ctx(loom_pass_ctx *ctx, const loom_pass_id *passes, size_t n,
                                  const loom_pass_options *opts) {
  FILE *out = opts->out ? opts->out : stdout;
  ctx->out = out;
  ctx->report = opts->print_after_all;
  loom_pipeline_check *check = NULL;
  if (opts->check_numerics > 0)
    LOOM_PROPAGATE(loom_pipeline_check_begin(ctx->m, opts->check_numerics, 1, ctx->diags, &check));
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < n && !st; i++) {
    const loom_pass_info *info = loom_pass_info_of(passes[i]);
    uint64_t t0 = loom_clock_ns();
    st = info->plugin ? info->plugin->run(ctx->m, ctx->diags, info->plugin->user) : info->run(ctx);
    if (st) {
      st = loom_status_annotate(st, __FILE__, __LINE__, "while running pass '%s'", info->name);
      break;
    }
    uint64_t t1 = loom_clock_ns();
    ctx->ms[passes[i]] = (double)(t1 - t0) / 1e6;
    if (opts->verify_each && (st = verify_after(ctx, info))) {
      st = loom_status_annotate(st, __FILE__, __LINE__, info->level == LOOM_PASS_LEVEL_MODULE
                                                            ? "the module is ill-formed after pass '%s'"
                                                            : "what pass '%s' made is ill-formed", info->name);
      break;
    }
    if (check && info->level == LOOM_PASS_LEVEL_MODULE && (st = loom_pipeline_check_after(check, info->name))) break;
    if (opts->time_passes) fprintf(out, "// pass %-10s %8.3f ms\n", info->name, ctx->ms[passes[i]]);
    if (opts->print_after_all) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      print_after(ctx, info, &sb);
      fprintf(out, "// ---- after %s ----\n%s", info->name, loom_strbuf_cstr(&sb));
      bool oom = sb.oom;
      loom_strbuf_free(&sb);
      if (oom) st = LOOM_OOM();
    }
  }
  if (check && !st && opts->print_after_all)
    fprintf(out, "// numeric check: %zu input sets agreed after every pass\n", loom_pipeline_check_count(check));
  loom_pipeline_check_end(check);
  return st;
}

loom_status loom_pipeline_run(loom_graph_module *m, const loom_pass_id *passes, size_t n,
                              const loom_pass_options *opts, loom_diag_list *diags) {
  loom_pass_ctx ctx;
  loom_pass_ctx_init(&ctx, m, diags);
  loom_status st = loom_pipeline_run_ctx(&ctx, passes, n, opts);
  loom_pass_ctx_release(&ctx);
  return st;
}

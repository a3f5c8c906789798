/* cmd_demo.c — `loom demo`: the main job. Compiles the bundled GPT-2-small-style decoder
 * (models/gpt2_decoder.loom, every dim symbolic) ONCE, makes weights from a fixed seed, and
 * serves a stream of requests of varying batch and prompt length: a prefill, then decode
 * steps that feed the growing KV cache back in. Prints per request the shapes, latency and
 * GFLOP/s, and at the end compile time, the number of compilations (1), p50/p99 latency and
 * the measured peak memory next to the plan's symbolic formula evaluated at the largest
 * shape. `--check` compares requests with the reference interpreter. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "driver/commands.h"
#include "graph/memplan.h"
#include "loom.h"

#define MAX_PARAMS 64

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t next(rng *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double uniform(rng *r) { return (double)(next(r) >> 11) / 9007199254740992.0; }
static double normal(rng *r) { return sqrt(-2 * log(uniform(r) + 1e-300)) * cos(6.283185307179586 * uniform(r)); }

typedef struct demo {
  loom_compiled *c;
  loom_rt *rt;
  loom_graph_module *ref; /* the module as written, for --check */
  const loom_graph_func *fmain;
  uint32_t np;
  loom_tensor *weights[MAX_PARAMS]; /* NULL for ids and the caches */
  int64_t V, P;
  int layers;                       /* number of past_k* params */
  const loom_sym_expr *total_peak;  /* bytes, symbolic in b, s, past, V, P */
} demo;

static bool is_cache(const char *name) { return !strncmp(name, "past_", 5); }

static loom_status make_weights(demo *d, uint64_t seed) {
  rng r = {seed};
  for (uint32_t i = 0; i < d->np; i++) {
    const loom_graph_expr *p = d->fmain->params[i];
    const char *name = p->u.var.name;
    if (!strcmp(name, "ids") || is_cache(name)) {
      d->layers += !strncmp(name, "past_k", 6);
      continue;
    }
    const loom_sinfo *si = p->sinfo;
    int64_t shape[LOOM_VM_MAX_RANK];
    for (int k = 0; k < si->ndim; k++) {
      int64_t v;
      if (loom_sym_is_const(si->dims[k], &v)) shape[k] = v;
      else if (!strcmp(loom_sym_var_name(si->dims[k]), "V")) shape[k] = d->V;
      else if (!strcmp(loom_sym_var_name(si->dims[k]), "P")) shape[k] = d->P;
      else return LOOM_ERROR(INVALID_ARGUMENT, "weight '%s' axis %d has an unexpected symbolic dim", name, k);
    }
    LOOM_PROPAGATE(loom_rt_tensor_new(d->rt, LOOM_DTYPE_F32, si->ndim, shape, &d->weights[i]));
    float *w = d->weights[i]->data;
    size_t n = loom_tensor_numel(d->weights[i]);
    bool gain = strstr(name, "_g") != NULL, bias = name[0] == 'b' && name[1] == '_';
    for (size_t k = 0; k < n; k++) w[k] = gain ? 1.0f : bias ? 0.0f : (float)(0.02 * normal(&r));
  }
  return LOOM_OK;
}

/* FLOPs of one call: matmuls only (2 per multiply-add). */
static double flops(const demo *d, int64_t b, int64_t s, int64_t past) {
  double per_tok = d->layers * 2.0 * (768.0 * 2304 + 768.0 * 768 + 2 * 768.0 * 3072) + 2.0 * 768 * (double)d->V;
  double attn = d->layers * 4.0 * (double)s * (double)(past + s) * 768;
  return (double)b * ((double)s * per_tok + attn);
}

typedef struct call_io {
  loom_tensor *in[MAX_PARAMS];
  loom_rt_outputs out;
  double ms;
  size_t mem; /* bytes the call allocated at most */
} call_io;

/* One call of @main; inputs ids (b, s) and the caches (b, 12, past, 64) are given. */
static loom_status call(demo *d, call_io *io) {
  loom_device *dev = loom_rt_device(d->rt);
  size_t live = loom_device_get_stats(dev).live_bytes;
  loom_device_reset_peak(dev);
  uint64_t t0 = loom_clock_ns();
  loom_status st = loom_rt_call(d->rt, "main", io->in, d->np, &io->out);
  io->ms = (double)(loom_clock_ns() - t0) / 1e6;
  io->mem = loom_device_get_stats(dev).peak_live_bytes - live;
  return st;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  size_t i = (size_t)ceil(p / 100.0 * (double)n);
  return v[i ? i - 1 : 0];
}

/* The reference interpreter on the same inputs; returns the worst relative error of the logits. */
static loom_status check_call(demo *d, call_io *io, double *worst) {
  loom_graph_value args[MAX_PARAMS], ref;
  uint32_t made = 0;
  loom_status st = LOOM_OK;
  for (; made < d->np && !st; made++) {
    const loom_tensor *t = io->in[made];
    st = loom_graph_value_tensor(t->dtype, t->rank, t->shape, &args[made]);
    if (!st) memcpy(args[made].t.data, t->data, loom_tensor_numel(t) * loom_dtype_size(t->dtype));
  }
  if (!st) st = loom_graph_eval(d->ref, "main", d->np, args, NULL, &ref);
  if (!st) {
    const loom_graph_tensor *r = &ref.items[0].t;
    const loom_tensor *c = (const loom_tensor *)io->out.items[0];
    *worst = 0;
    for (size_t i = 0; i < r->numel; i++) {
      double a = loom_graph_tensor_get_f64(r, i), e = fabs(a - ((const float *)c->data)[i]) / (1 + fabs(a));
      if (!(e <= *worst)) *worst = e;
    }
    loom_graph_value_free(&ref);
  }
  for (uint32_t i = 0; i < made; i++) loom_graph_value_free(&args[i]);
  return st;
}

static loom_status cache_tensors(demo *d, int64_t b, loom_tensor **in) {
  for (uint32_t i = 0; i < d->np; i++) {
    if (!is_cache(d->fmain->params[i]->u.var.name)) continue;
    int64_t shape[4] = {b, 12, 0, 64};
    LOOM_PROPAGATE(loom_rt_tensor_new(d->rt, LOOM_DTYPE_F32, 4, shape, &in[i]));
  }
  return LOOM_OK;
}

typedef struct stats {
  double prefill_ms[4096], decode_ms[4096];
  size_t nprefill, ndecode;
  size_t peak_mem;
  int64_t planned_at_peak;
  int64_t largest[3]; /* b, s, past of the largest planned call */
  int64_t largest_plan;
} stats;

typedef struct name_fill {
  loom_sym_env *env;
  const char *const *names;
  const int64_t *vals;
  int n;
  loom_status st;
} name_fill;

static void bind_by_name(void *ud, const loom_sym_expr *var) {
  name_fill *f = ud;
  for (int i = 0; i < f->n; i++)
    if (!strcmp(loom_sym_var_name(var), f->names[i])) {
      if (!f->st) f->st = loom_sym_env_set(f->env, var, f->vals[i]);
      return;
    }
  if (!f->st) f->st = LOOM_ERROR(NOT_FOUND, "the memory formula uses '%s', which the demo does not bind", loom_sym_var_name(var));
}

/* The plan's total peak (bytes) at b, s, past. */
static loom_status planned_bytes(demo *d, int64_t b, int64_t s, int64_t past, int64_t *out) {
  loom_sym_ctx *cx = loom_graph_module_sym(loom_compiled_module(d->c));
  loom_sym_env *env;
  LOOM_PROPAGATE(loom_sym_env_create(NULL, &env));
  static const char *const names[] = {"b", "s", "past", "V", "P"};
  int64_t vals[] = {b, s, past, d->V, d->P};
  name_fill f = {env, names, vals, 5, LOOM_OK};
  loom_sym_for_each_var(d->total_peak, bind_by_name, &f);
  loom_status st = f.st ? f.st : loom_sym_eval(cx, d->total_peak, env, out);
  loom_sym_env_destroy(env);
  return st;
}

static void note_call(demo *d, stats *S, const call_io *io, int64_t b, int64_t s, int64_t past) {
  int64_t plan = 0;
  loom_status st = planned_bytes(d, b, s, past, &plan);
  if (st) {
    loom_status_fprint(stderr, st);
    loom_status_free(st);
    return;
  }
  if (io->mem > S->peak_mem) S->peak_mem = io->mem, S->planned_at_peak = plan;
  if (plan > S->largest_plan) {
    S->largest_plan = plan;
    S->largest[0] = b, S->largest[1] = s, S->largest[2] = past;
  }
}

static void release_io(demo *d, call_io *io) {
  loom_rt_outputs_free(&io->out);
  for (uint32_t i = 0; i < d->np; i++)
    if (!d->weights[i]) loom_tensor_release(io->in[i]), io->in[i] = NULL;
}

/* Greedy next tokens: argmax of the logits at the last position of every sequence. */
static loom_status next_ids(demo *d, const loom_tensor *logits, loom_tensor **ids) {
  int64_t b = logits->shape[0], s = logits->shape[1], V = logits->shape[2];
  int64_t shape[2] = {b, 1};
  LOOM_PROPAGATE(loom_rt_tensor_new(d->rt, LOOM_DTYPE_I64, 2, shape, ids));
  for (int64_t i = 0; i < b; i++) {
    const float *row = (const float *)logits->data + (i * s + s - 1) * V;
    int64_t best = 0;
    for (int64_t v = 1; v < V; v++)
      if (row[v] > row[best]) best = v;
    ((int64_t *)(*ids)->data)[i] = best;
  }
  return LOOM_OK;
}

static loom_status serve(demo *d, const loom_cli_args *args, stats *S) {
  long nreq = loom_cli_get(args, "--requests") ? strtol(loom_cli_get(args, "--requests"), NULL, 10) : 12;
  long ndec = loom_cli_get(args, "--decode") ? strtol(loom_cli_get(args, "--decode"), NULL, 10) : 8;
  long maxb = loom_cli_get(args, "--max-batch") ? strtol(loom_cli_get(args, "--max-batch"), NULL, 10) : 4;
  long maxs = loom_cli_get(args, "--max-prompt") ? strtol(loom_cli_get(args, "--max-prompt"), NULL, 10) : 128;
  long nchk = loom_cli_flag(args, "--check") ? 2 : 0;
  if (nreq < 1 || ndec < 0 || maxb < 1 || maxs < 1 || maxs + ndec > d->P)
    return LOOM_ERROR(INVALID_ARGUMENT, "--requests, --decode, --max-batch, --max-prompt must be positive and prompt + decode <= %lld positions",
                      (long long)d->P);
  rng r = {0xC0FFEEull};
  bool tty = isatty(2);
  loom_status st = LOOM_OK;
  printf("%-7s %5s %6s %6s | %10s %9s | %12s %9s | %9s\n", "request", "batch", "prompt", "decode", "prefill ms", "GFLOP/s",
         "decode ms/tok", "GFLOP/s", "peak MB");
  for (long q = 0; q < nreq && !st; q++) {
    int64_t b = 1 + (int64_t)(next(&r) % (uint64_t)maxb), s = 1 + (int64_t)(next(&r) % (uint64_t)maxs);
    if (q < nchk) b = 1, s = 3 + q; /* the checked requests stay small: the interpreter is slow */
    call_io io = {0};
    memcpy(io.in, d->weights, sizeof d->weights);
    int64_t shape[2] = {b, s};
    st = loom_rt_tensor_new(d->rt, LOOM_DTYPE_I64, 2, shape, &io.in[0]);
    for (int64_t i = 0; !st && i < b * s; i++) ((int64_t *)io.in[0]->data)[i] = (int64_t)(next(&r) % (uint64_t)d->V);
    if (!st) st = cache_tensors(d, b, io.in);
    if (!st) st = call(d, &io);
    if (st) {
      release_io(d, &io);
      break;
    }
    double pre_ms = io.ms, pre_fl = flops(d, b, s, 0);
    size_t mem = io.mem;
    S->prefill_ms[S->nprefill++ % 4096] = io.ms;
    note_call(d, S, &io, b, s, 0);
    if (q < nchk) {
      double worst;
      st = check_call(d, &io, &worst);
      if (!st) printf("check: request %ld prefill (b=%lld, s=%lld) logits equal the interpreter's, worst relative error %.2g%s\n",
                      q + 1, (long long)b, (long long)s, worst, worst < 1e-4 ? "" : "  <-- MISMATCH");
      if (!st && worst >= 1e-4) st = LOOM_ERROR(INTERNAL, "--check: request %ld differs from the interpreter", q + 1);
    }
    double dec_ms = 0, dec_fl = 0;
    int64_t past = s;
    for (long k = 0; k < ndec && !st; k++) {
      call_io nx = {0};
      memcpy(nx.in, d->weights, sizeof d->weights);
      st = next_ids(d, (const loom_tensor *)io.out.items[0], &nx.in[0]);
      /* the returned caches (outputs 1..) become the next call's past_* inputs, in order */
      uint32_t o = 1;
      for (uint32_t i = 0; !st && i < d->np; i++)
        if (is_cache(d->fmain->params[i]->u.var.name)) {
          nx.in[i] = (loom_tensor *)io.out.items[o++];
          loom_vm_obj_retain(&nx.in[i]->hdr);
        }
      release_io(d, &io);
      if (!st) st = call(d, &nx);
      io = nx;
      if (st) break;
      dec_ms += nx.ms;
      dec_fl += flops(d, b, 1, past);
      if (nx.mem > mem) mem = nx.mem;
      S->decode_ms[S->ndecode++ % 4096] = nx.ms;
      note_call(d, S, &nx, b, 1, past);
      if (q < nchk && k == 0) {
        double worst;
        st = check_call(d, &nx, &worst);
        if (!st) printf("check: request %ld decode step (past=%lld) logits equal the interpreter's, worst relative error %.2g\n",
                        q + 1, (long long)past, worst);
        if (!st && worst >= 1e-4) st = LOOM_ERROR(INTERNAL, "--check: request %ld differs from the interpreter", q + 1);
      }
      past++;
      if (tty) fprintf(stderr, "\r  request %ld/%ld: decode %ld/%ld ", q + 1, nreq, k + 1, ndec), fflush(stderr);
    }
    if (tty) fprintf(stderr, "\r%60s\r", "");
    release_io(d, &io);
    if (st) break;
    printf("%4ld/%-2ld %5lld %6lld %6ld | %10.2f %9.1f | %12.2f %9.1f | %9.1f\n", q + 1, nreq, (long long)b, (long long)s,
           ndec, pre_ms, pre_fl / pre_ms / 1e6, ndec ? dec_ms / (double)ndec : 0, dec_ms > 0 ? dec_fl / dec_ms / 1e6 : 0,
           (double)mem / 1e6);
    fflush(stdout);
  }
  return st;
}

static int run(const loom_cli_args *args) {
  const char *path = loom_cli_get(args, "--model") ? loom_cli_get(args, "--model") : "models/gpt2_decoder.loom";
  demo d = {.V = loom_cli_get(args, "--vocab") ? strtoll(loom_cli_get(args, "--vocab"), NULL, 10) : 50257, .P = 1024};
  static stats S;
  memset(&S, 0, sizeof S);
  uint64_t t0 = loom_clock_ns();
  loom_compile_options o = {.offload = loom_cli_flag(args, "--offload"), .report = stderr};
  loom_status st = d.V < 1 ? LOOM_ERROR(INVALID_ARGUMENT, "--vocab must be positive") : loom_compile_file(path, &o, &d.c);
  double compile_ms = (double)(loom_clock_ns() - t0) / 1e6;
  if (!st) {
    loom_compile_times t = loom_compiled_times(d.c);
    st = loom_compiled_open(d.c, NULL, &d.rt); /* JIT: the kernels are compiled here, once */
    compile_ms = (double)(loom_clock_ns() - t0) / 1e6;
    t = loom_compiled_times(d.c);
    if (!st) {
      const char *th = loom_cli_get(args, "--threads");
      if (th) st = loom_rt_set_threads(d.rt, (uint32_t)strtoul(th, NULL, 10));
      printf("compiled %s once in %.0f ms (passes %.0f ms, planning + VM lowering %.0f ms, LLVM %.0f ms), %u threads%s\n", path,
             compile_ms, t.passes_ms, t.lower_ms, t.codegen_ms, loom_rt_threads(d.rt),
             o.offload ? ", matmuls offloaded to BLAS" : ", generated kernels only");
    }
  }
  if (!st) {
    loom_graph_module *cm = loom_compiled_module(d.c);
    d.fmain = loom_graph_module_find_func(cm, "main");
    d.np = d.fmain ? (uint32_t)d.fmain->nparams : 0;
    if (!d.fmain || d.np > MAX_PARAMS) st = LOOM_ERROR(INVALID_ARGUMENT, "%s: no @main of at most %d parameters", path, MAX_PARAMS);
    if (!st) st = loom_memplan_total_peak(cm, d.fmain, &d.total_peak);
  }
  if (!st && loom_cli_flag(args, "--check")) {
    char *text;
    size_t len;
    st = loom_file_read_limited(path, "module", LOOM_FILE_LIMIT_TEXT, &text, &len);
    if (!st) {
      loom_source src = {path, text, len};
      loom_diag_list dl;
      loom_diag_list_init(&dl, NULL);
      st = loom_graph_parse(&src, &dl, &d.ref);
      loom_diag_list_destroy(&dl);
      free(text);
    }
  }
  if (!st) st = make_weights(&d, loom_cli_get(args, "--seed") ? strtoull(loom_cli_get(args, "--seed"), NULL, 10) : 42);
  if (!st) {
    printf("weights: %d layers, vocabulary %lld, %lld positions (seeded); requests: prefill then decode with a growing KV cache\n",
           d.layers, (long long)d.V, (long long)d.P);
    st = serve(&d, args, &S);
  }
  if (!st) {
    size_t np = S.nprefill < 4096 ? S.nprefill : 4096, nd = S.ndecode < 4096 ? S.ndecode : 4096;
    printf("\nsummary: compile time %.0f ms, compilations: 1 (every shape above ran on it)\n", compile_ms);
    printf("  prefill latency: p50 %.2f ms, p99 %.2f ms over %zu calls\n", pct(S.prefill_ms, np, 50), pct(S.prefill_ms, np, 99), np);
    printf("  decode latency:  p50 %.2f ms, p99 %.2f ms over %zu calls\n", pct(S.decode_ms, nd, 50), pct(S.decode_ms, nd, 99), nd);
    char *f = loom_sym_to_string(d.total_peak);
    printf("  peak memory of one call: measured %.1f MB; the plan's formula at that call %.1f MB\n", (double)S.peak_mem / 1e6,
           (double)S.planned_at_peak / 1e6);
    printf("  the plan's formula at the largest shape (b=%lld, s=%lld, past=%lld): %.1f MB\n    = %s bytes\n",
           (long long)S.largest[0], (long long)S.largest[1], (long long)S.largest[2], (double)S.largest_plan / 1e6,
           f ? f : "?");
    free(f);
    if ((int64_t)S.peak_mem > S.planned_at_peak) st = LOOM_ERROR(INTERNAL, "a call allocated more than its plan");
  }
  for (uint32_t i = 0; i < MAX_PARAMS; i++) loom_tensor_release(d.weights[i]);
  loom_rt_close(d.rt);
  loom_compiled_free(d.c);
  loom_graph_module_destroy(d.ref);
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_demo = {
    .name = "demo",
    .summary = "compile the bundled GPT-2-style decoder once and serve requests of any shape",
    .positional = "",
    .min_positional = 0,
    .max_positional = 0,
    .opts = (const loom_cli_opt[]){
        {"--model", "FILE", "the decoder module (default: models/gpt2_decoder.loom)", false},
        {"--requests", "N", "requests to serve (default 12)", false},
        {"--decode", "N", "decode steps per request (default 8)", false},
        {"--max-batch", "N", "largest batch (default 4)", false},
        {"--max-prompt", "N", "longest prompt (default 128)", false},
        {"--vocab", "N", "vocabulary size V (default 50257, GPT-2's)", false},
        {"--seed", "N", "seed of the weights (default 42)", false},
        {"--threads", "N", "kernel threads (default: all cores)", false},
        {"--check", NULL, "compare the first requests with the reference interpreter", false},
        {"--offload", NULL, "hand large matmuls to BLAS (the offload pass, libcall/)", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "The model keeps b, s, past, V and P symbolic; one compiled module serves every request.",
};

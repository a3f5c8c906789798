/* fuzz_ops.c — the driver of `loom fuzz-ops` (fuzz_ops.h): draws cases from the family
 * generators (fuzz_ops_cases*.c), runs each in a child process through the reference
 * interpreter and the compiled JIT path, compares, shrinks failures, and prints the report.
 * Also the choice stream the generators draw from (fuzz_ops_internal.h). */
#include "driver/fuzz_ops.h"

#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "driver/fuzz_ops_internal.h"
#include "graph/graph.h"
#include "loom.h"

/* ---- the choice stream ------------------------------------------------------------------ */

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static int64_t draw(fz_gen *g, int64_t lo, int64_t hi, int64_t proposal) {
  if (hi < lo) hi = lo;
  int64_t v;
  if (g->replay) {
    v = g->pos < g->n ? g->choice[g->pos] : lo;
    if (v < lo) v = lo;
    if (v > hi) v = hi;
  } else {
    v = proposal < lo ? lo : proposal > hi ? hi : proposal;
  }
  if (g->pos < FZ_MAX_CHOICES) { /* what was used (replay: after clamping) */
    g->choice[g->pos] = v;
    g->lo[g->pos] = lo;
  }
  g->pos++;
  if (!g->replay) g->n = g->pos < FZ_MAX_CHOICES ? g->pos : FZ_MAX_CHOICES;
  return v;
}

int64_t fz_int(fz_gen *g, int64_t lo, int64_t hi) {
  uint64_t span = hi > lo ? (uint64_t)(hi - lo) + 1 : 1;
  return draw(g, lo, hi, lo + (int64_t)(splitmix(&g->rng) % span));
}

int fz_pick(fz_gen *g, int n) { return (int)fz_int(g, 0, n - 1); }

bool fz_flag(fz_gen *g, int pct) { return fz_int(g, 0, 99) >= 100 - pct; }

int64_t fz_size(fz_gen *g, int64_t lo, int64_t hi) {
  static const int64_t nice[] = {0, 1, 1, 2, 3, 5, 6, 7, 8, 9, 11, 13, 15, 16, 17, 31, 32, 33, 37, 63, 64, 65};
  uint64_t r = splitmix(&g->rng);
  int64_t v;
  if (r % 4 == 0 && hi >= lo) v = lo + (int64_t)((r >> 8) % (uint64_t)(hi - lo + 1));
  else v = nice[(r >> 8) % (sizeof nice / sizeof *nice)];
  if (v > hi) v = lo + (int64_t)((r >> 20) % (uint64_t)(hi - lo + 1 > 0 ? hi - lo + 1 : 1));
  return draw(g, lo, hi, v);
}

double fz_real(fz_gen *g, double lo, double hi) {
  int64_t a = (int64_t)ceil(lo * 8), b = (int64_t)floor(hi * 8);
  /* shrinks toward the value nearest 0 */
  int64_t z = a > 0 ? a : b < 0 ? b : 0;
  int64_t v = fz_int(g, 0, b - a);
  int64_t k = z + (v % 2 ? (v + 1) / 2 : -(v / 2));
  if (k < a || k > b) k = a + v;
  return (double)k / 8;
}

fz_dim fz_lit(int64_t v) {
  fz_dim d = {.v = v};
  snprintf(d.t, sizeof d.t, "%lld", (long long)v);
  return d;
}

fz_dim fz_sym(fz_gen *g, const char *sym, int64_t v) {
  if (g->is_static) return fz_lit(v);
  fz_dim d = {.v = v};
  snprintf(d.t, sizeof d.t, "%s", sym);
  return d;
}

fz_dim fz_expr(fz_gen *g, int64_t v, const char *fmt, ...) {
  if (g->is_static) return fz_lit(v);
  fz_dim d = {.v = v};
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(d.t, sizeof d.t, fmt, ap);
  va_end(ap);
  return d;
}

fz_param *fz_param_add(fz_case *c, const char *name, loom_dtype dt, int rank, const fz_dim *dims) {
  fz_param *p = &c->p[c->np < FZ_MAX_PARAMS ? c->np++ : FZ_MAX_PARAMS - 1];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  p->dt = dt;
  p->rank = rank;
  for (int i = 0; i < rank && i < FZ_MAX_RANK; i++) p->dims[i] = dims[i];
  p->fill = dt == LOOM_DTYPE_BOOL ? FZ_FILL_BOOL : FZ_FILL_RANGE;
  p->lo = loom_dtype_is_float(dt) ? -1 : -5;
  p->hi = loom_dtype_is_float(dt) ? 1 : 5;
  if (loom_dtype_is_int(dt) && !loom_dtype_is_signed(dt)) p->lo = 0, p->hi = 9;
  return p;
}

void fz_cat(char *buf, size_t cap, const char *fmt, ...) {
  size_t n = strlen(buf);
  if (n + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, cap - n, fmt, ap);
  va_end(ap);
}

void fz_call(fz_case *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->call, sizeof c->call, fmt, ap);
  va_end(ap);
}

void fz_attr_list(char *buf, size_t cap, const char *name, int n, const int64_t *v) {
  fz_cat(buf, cap, ", %s=[", name);
  for (int i = 0; i < n; i++) fz_cat(buf, cap, "%s%lld", i ? ", " : "", (long long)v[i]);
  fz_cat(buf, cap, "]");
}

/* ---- cases -------------------------------------------------------------------------------- */

static void fill_param(const fz_param *p, int idx, bool grid, uint64_t seed, loom_graph_tensor *t);

/* The case's module: its constants (values of seed) and @main over the other parameters. */
static void module_text(const fz_case *c, uint64_t seed, char *buf, size_t cap) {
  buf[0] = '\0';
  for (int i = 0; i < c->np; i++) {
    const fz_param *p = &c->p[i];
    if (!p->constant) continue;
    int64_t shape[FZ_MAX_RANK];
    for (int d = 0; d < p->rank; d++) shape[d] = p->dims[d].v;
    loom_graph_value v;
    memset(&v, 0, sizeof v);
    if (loom_graph_value_tensor(p->dt, p->rank, shape, &v)) continue; /* out of memory: the module does not parse */
    fill_param(p, i, c->grid, seed, &v.t);
    fz_cat(buf, cap, "const @%s: Tensor[(", p->name);
    for (int d = 0; d < p->rank; d++) fz_cat(buf, cap, "%s%lld", d ? ", " : "", (long long)p->dims[d].v);
    fz_cat(buf, cap, "%s), %s] = [", p->rank == 1 ? "," : "", loom_dtype_name(p->dt));
    /* 3 digits: the interpreter and the compiled module both read the values as written (appended
     * at a running length: fz_cat's strlen per value would be quadratic in a large weight) */
    size_t len = strlen(buf);
    for (size_t k = 0; k < v.t.numel && len + 1 < cap; k++) {
      int w = snprintf(buf + len, cap - len, "%s%.3g", k ? ", " : "", loom_graph_tensor_get_f64(&v.t, k));
      len += w > 0 ? (size_t)w : 0;
    }
    if (len + 1 < cap) fz_cat(buf, cap, "]\n");
    loom_graph_value_free(&v);
  }
  fz_cat(buf, cap, "fn @main(");
  bool first = true;
  for (int i = 0; i < c->np; i++) {
    const fz_param *p = &c->p[i];
    if (p->constant) continue;
    fz_cat(buf, cap, "%s%s: Tensor[(", first ? "" : ", ", p->name);
    first = false;
    for (int d = 0; d < p->rank; d++) fz_cat(buf, cap, "%s%s", d ? ", " : "", p->dims[d].t);
    fz_cat(buf, cap, "%s), %s]", p->rank == 1 ? "," : "", loom_dtype_name(p->dt));
  }
  fz_cat(buf, cap, ") -> Object {\n  dataflow {\n    y = %s\n    output y\n  }\n  return y\n}\n", c->call);
}

static void shapes_text(const fz_case *c, char *buf, size_t cap) {
  buf[0] = '\0';
  for (int i = 0; i < c->np; i++) {
    fz_cat(buf, cap, "%s%s%s=%s(", i ? " " : "", c->p[i].constant ? "@" : "", c->p[i].name, loom_dtype_name(c->p[i].dt));
    for (int d = 0; d < c->p[i].rank; d++) fz_cat(buf, cap, "%s%lld", d ? "," : "", (long long)c->p[i].dims[d].v);
    fz_cat(buf, cap, ")");
  }
}

/* Generates family f's case from the stream g (set up by the caller: drawing or replaying). */
static bool generate(const fz_family *f, fz_gen *g, fz_case *c) {
  memset(c, 0, sizeof *c);
  g->pos = 0;
  g->c = c;
  c->rtol = 1e-5;
  c->atol = 1e-6;
  g->is_static = fz_flag(g, 20);
  c->grid = fz_flag(g, 40);
  return f->gen(g, c);
}

static bool draw_case(const fz_family *f, uint64_t seed, fz_gen *g, fz_case *c) {
  for (int attempt = 0; attempt < 50; attempt++) {
    memset(g, 0, sizeof *g);
    g->rng = seed * 0x2545F4914F6CDD1DULL + (uint64_t)attempt;
    if (generate(f, g, c)) return true;
  }
  return false;
}

/* ---- running one case --------------------------------------------------------------------- */

typedef enum fz_verdict { FZ_OK, FZ_MISMATCH, FZ_SKIPPED, FZ_INVALID } fz_verdict;
static const char *const verdict_names[] = {"ok", "MISMATCH", "skipped", "invalid"};

typedef struct fz_result {
  int verdict;
  char msg[4000];
} fz_result;

static void set_result(fz_result *r, fz_verdict v, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_result(fz_result *r, fz_verdict v, const char *fmt, ...) {
  r->verdict = v;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  va_end(ap);
}

static void fill_param(const fz_param *p, int idx, bool grid, uint64_t seed, loom_graph_tensor *t) {
  uint64_t s = seed * 1000003u + (uint64_t)idx * 7919u + 1;
  for (size_t i = 0; i < t->numel; i++) {
    uint64_t r = splitmix(&s);
    double u = (double)(r >> 11) / 9007199254740992.0;
    switch (p->fill) {
    case FZ_FILL_VALUES: {
      double v = p->nvals ? p->vals[i % (size_t)p->nvals] : 0;
      if (loom_dtype_is_float(t->dtype)) loom_graph_tensor_set_f64(t, i, v);
      else loom_graph_tensor_set_i64(t, i, (int64_t)v);
      break;
    }
    case FZ_FILL_BOOL: loom_graph_tensor_set_i64(t, i, (int64_t)(r >> 63)); break;
    case FZ_FILL_BITS: memcpy((char *)t->data + i * loom_dtype_size(t->dtype), &r, loom_dtype_size(t->dtype)); break;
    case FZ_FILL_RANGE:
      if (loom_dtype_is_float(t->dtype)) {
        double v = p->lo + u * (p->hi - p->lo);
        if (grid) v = floor(v * 4) / 4;
        loom_graph_tensor_set_f64(t, i, v);
      } else {
        int64_t lo = (int64_t)p->lo, hi = (int64_t)p->hi;
        loom_graph_tensor_set_i64(t, i, lo + (int64_t)((r >> 8) % (uint64_t)(hi - lo + 1)));
      }
      break;
    }
  }
}

static size_t flatten(const loom_graph_value *v, const loom_graph_value **out, size_t n, size_t cap) {
  if (v->kind != LOOM_SINFO_TUPLE) {
    if (n < cap) out[n] = v;
    return n + 1;
  }
  for (size_t i = 0; i < v->n; i++) n = flatten(&v->items[i], out, n, cap);
  return n;
}

/* Compares the interpreter's result with the compiled outputs; false with a message. */
static bool compare(const fz_case *c, const loom_graph_value *ref, const loom_rt_outputs *out, uint32_t threads, fz_result *r) {
  const loom_graph_value *refs[32];
  size_t nref = flatten(ref, refs, 0, 32);
  if (nref > 32 || nref != out->count) {
    set_result(r, FZ_MISMATCH, "threads=%u: the interpreter returns %zu values, compiled %u", threads, nref, out->count);
    return false;
  }
  for (size_t k = 0; k < nref; k++) {
    const loom_graph_tensor *rt = &refs[k]->t;
    if (refs[k]->kind != LOOM_SINFO_TENSOR || out->items[k]->kind != LOOM_VM_OBJ_TENSOR) {
      if (refs[k]->kind == LOOM_SINFO_TENSOR || out->items[k]->kind == LOOM_VM_OBJ_TENSOR) {
        set_result(r, FZ_MISMATCH, "threads=%u output %zu: a tensor on one side only", threads, k);
        return false;
      }
      continue;
    }
    const loom_tensor *ct = (const loom_tensor *)out->items[k];
    bool same = ct->dtype == rt->dtype && ct->rank == rt->ndim;
    for (int d = 0; same && d < rt->ndim; d++) same = ct->shape[d] == rt->shape[d];
    if (!same) {
      char a[160] = "", b[160] = "";
      for (int d = 0; d < rt->ndim; d++) fz_cat(a, sizeof a, "%s%lld", d ? "," : "", (long long)rt->shape[d]);
      for (int d = 0; d < ct->rank; d++) fz_cat(b, sizeof b, "%s%lld", d ? "," : "", (long long)ct->shape[d]);
      set_result(r, FZ_MISMATCH, "threads=%u output %zu: interpreter %s(%s), compiled %s(%s)", threads, k, loom_dtype_name(rt->dtype), a,
                 loom_dtype_name(ct->dtype), b);
      return false;
    }
    loom_graph_tensor view = *rt;
    view.data = ct->data;
    size_t bad = 0, first = 0;
    double fa = 0, fc = 0;
    bool is_float = loom_dtype_is_float(rt->dtype);
    for (size_t i = 0; i < rt->numel; i++) {
      bool ok;
      double a, g;
      if (is_float) {
        a = loom_graph_tensor_get_f64(rt, i);
        g = loom_graph_tensor_get_f64(&view, i);
        if (isnan(a) || isnan(g)) ok = isnan(a) && isnan(g);
        else if (isinf(a) || isinf(g)) ok = a == g;
        else ok = fabs(a - g) <= c->atol + c->rtol * fabs(a);
      } else {
        int64_t ia = loom_graph_tensor_get_i64(rt, i), ig = loom_graph_tensor_get_i64(&view, i);
        ok = ia == ig;
        a = (double)ia;
        g = (double)ig;
      }
      if (!ok && bad++ == 0) first = i, fa = a, fc = g;
    }
    if (bad) {
      char idx[160] = "";
      size_t rem = first;
      for (int d = rt->ndim - 1; d >= 0; d--) {
        char one[32];
        snprintf(one, sizeof one, "%lld%s", rt->shape[d] ? (long long)(rem % (size_t)rt->shape[d]) : 0LL, d == rt->ndim - 1 ? "" : ",");
        char tmp[160];
        snprintf(tmp, sizeof tmp, "%s%s", one, idx);
        memcpy(idx, tmp, sizeof idx);
        if (rt->shape[d]) rem /= (size_t)rt->shape[d];
      }
      set_result(r, FZ_MISMATCH, "threads=%u output %zu (%s): %zu of %zu elements differ; first [%s]: interpreter %.9g, compiled %.9g (rtol %g, atol %g)",
                 threads, k, loom_dtype_name(rt->dtype), bad, rt->numel, idx, fa, fc, c->rtol, c->atol);
      return false;
    }
  }
  return true;
}

static loom_status parse_text(const char *text, loom_graph_module **m) {
  loom_source src = {"fuzz-case.loom", text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_status st = loom_graph_parse(&src, &dl, m);
  if (!st) st = loom_graph_verify(*m, &dl);
  loom_diag_list_destroy(&dl);
  if (st) {
    loom_graph_module_destroy(*m);
    *m = NULL;
  }
  return st;
}

/* Runs the case in this process. */
static void run_case(const fz_case *c, uint64_t seed, const loom_fuzz_ops_options *o, fz_result *r) {
  char *text = malloc(FZ_TEXT_CAP);
  if (!text) {
    set_result(r, FZ_INVALID, "out of memory");
    return;
  }
  module_text(c, seed, text, FZ_TEXT_CAP);
  set_result(r, FZ_OK, "ok");
  loom_graph_module *m1 = NULL, *m2 = NULL;
  loom_compiled *cc = NULL;
  loom_rt *rt = NULL;
  loom_graph_value in[FZ_MAX_PARAMS], ref;
  memset(in, 0, sizeof in);
  memset(&ref, 0, sizeof ref);
  int nin = 0; /* @main's parameters: the case's parameters but its constants */
  loom_status st = parse_text(text, &m1);
  if (st) {
    set_result(r, FZ_INVALID, "the module does not verify: %s", loom_status_text(st, 0));
    goto done;
  }
  for (int i = 0; i < c->np && !st; i++) {
    if (c->p[i].constant) continue;
    int64_t shape[FZ_MAX_RANK];
    for (int d = 0; d < c->p[i].rank; d++) shape[d] = c->p[i].dims[d].v;
    st = loom_graph_value_tensor(c->p[i].dt, c->p[i].rank, shape, &in[nin]);
    if (!st) fill_param(&c->p[i], i, c->grid, seed, &in[nin].t);
    nin++;
  }
  if (!st) st = loom_graph_eval(m1, "main", (size_t)nin, in, NULL, &ref);
  if (st) {
    set_result(r, FZ_INVALID, "the interpreter refuses the case: %s", loom_status_text(st, 0));
    goto done;
  }
  st = parse_text(text, &m2);
  loom_compile_options co = {.report = stderr, .target = o->target};
  if (!st) st = loom_compile(m2, &co, &cc);
  if (st) {
    set_result(r, loom_status_code(st) == LOOM_CODE_UNIMPLEMENTED ? FZ_SKIPPED : FZ_MISMATCH, "compile: %s", loom_status_text(st, 0));
    goto done;
  }
  loom_rt_options ro = {.threads = o->threads[0]};
  st = loom_compiled_open(cc, &ro, &rt);
  if (st) {
    set_result(r, loom_status_code(st) == LOOM_CODE_UNIMPLEMENTED ? FZ_SKIPPED : FZ_MISMATCH, "JIT: %s", loom_status_text(st, 0));
    goto done;
  }
  for (int k = 0; k < o->nthreads; k++) {
    st = loom_rt_set_threads(rt, o->threads[k]);
    loom_tensor *tin[FZ_MAX_PARAMS] = {0};
    for (int i = 0; i < nin && !st; i++) {
      st = loom_rt_tensor_new(rt, in[i].t.dtype, in[i].t.ndim, in[i].t.shape, &tin[i]);
      if (!st && in[i].t.numel) memcpy(tin[i]->data, in[i].t.data, in[i].t.numel * loom_dtype_size(in[i].t.dtype));
    }
    loom_rt_outputs out = {0};
    if (!st) st = loom_rt_call(rt, "main", tin, (uint32_t)nin, &out);
    for (uint32_t i = 0; !st && i < out.count; i++) { /* a GPU's outputs back in host memory */
      if (out.items[i]->kind != LOOM_VM_OBJ_TENSOR) continue;
      loom_tensor *h;
      st = loom_rt_tensor_to_host(rt, (loom_tensor *)out.items[i], &h);
      if (!st) {
        loom_vm_obj_release(out.items[i]);
        out.items[i] = &h->hdr;
      }
    }
    bool ok = true;
    if (st) set_result(r, FZ_MISMATCH, "threads=%u: the compiled call fails: %s", o->threads[k], loom_status_text(st, 0));
    else ok = compare(c, &ref, &out, o->threads[k], r);
    loom_rt_outputs_free(&out);
    for (int i = 0; i < nin; i++) loom_tensor_release(tin[i]);
    if (st || !ok) break;
  }
done:
  free(text);
  loom_status_free(st);
  loom_rt_close(rt);
  loom_compiled_free(cc);
  loom_graph_module_destroy(m2);
  loom_graph_module_destroy(m1);
  loom_graph_value_free(&ref);
  for (int i = 0; i < nin; i++) loom_graph_value_free(&in[i]);
}

/* Runs the case in a child process (unless o->no_fork): a crash or a hang is a mismatch. */
static void run_isolated(const fz_case *c, uint64_t seed, const loom_fuzz_ops_options *o, fz_result *r) {
  if (o->no_fork) {
    run_case(c, seed, o, r);
    return;
  }
  int fd[2];
  if (pipe(fd)) {
    run_case(c, seed, o, r);
    return;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]);
    close(fd[1]);
    run_case(c, seed, o, r);
    return;
  }
  if (pid == 0) {
    close(fd[0]);
    alarm(120);
    run_case(c, seed, o, r);
    size_t len = offsetof(fz_result, msg) + strlen(r->msg) + 1, off = 0;
    while (off < len) {
      ssize_t w = write(fd[1], (const char *)r + off, len - off);
      if (w <= 0) break;
      off += (size_t)w;
    }
    _exit(0);
  }
  close(fd[1]);
  memset(r, 0, sizeof *r);
  size_t off = 0;
  for (;;) {
    ssize_t n = read(fd[0], (char *)r + off, sizeof *r - 1 - off);
    if (n <= 0) break;
    off += (size_t)n;
  }
  close(fd[0]);
  int ws = 0;
  waitpid(pid, &ws, 0);
  if (off <= offsetof(fz_result, msg)) {
    if (WIFSIGNALED(ws))
      set_result(r, FZ_MISMATCH, "the case crashed: signal %d (%s)", WTERMSIG(ws), WTERMSIG(ws) == SIGALRM ? "timeout, 120 s" : strsignal(WTERMSIG(ws)));
    else set_result(r, FZ_MISMATCH, "the case crashed: exit status %d", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
  }
}

/* ---- shrinking ------------------------------------------------------------------------------ */

/* Lowers the recorded choices of a failing case one at a time (to the low end, halfway, minus
 * one) while the case still fails; `g`, `c`, `r` end as the smallest failing case found. */
static int shrink(const fz_family *f, uint64_t seed, const loom_fuzz_ops_options *o, fz_gen *g, fz_case *c, fz_result *r) {
  double limit = o->shrink_seconds > 0 ? o->shrink_seconds : 60;
  uint64_t t0 = loom_clock_ns();
  int steps = 0, runs = 0;
  bool progress = true;
  char *cur = malloc(FZ_TEXT_CAP), *txt = malloc(FZ_TEXT_CAP);
  if (!cur || !txt) {
    free(cur);
    free(txt);
    return 0;
  }
  module_text(c, seed, cur, FZ_TEXT_CAP);
  while (progress && runs < 200) {
    progress = false;
    for (int i = 0; i < g->n && !progress; i++) {
      int64_t v = g->choice[i], lo = g->lo[i];
      int64_t cands[3] = {lo, lo + (v - lo) / 2, v - 1};
      for (int k = 0; k < 3 && !progress; k++) {
        if (cands[k] >= v || (k > 0 && cands[k] == cands[k - 1])) continue;
        if ((double)(loom_clock_ns() - t0) / 1e9 > limit) {
          free(cur);
          free(txt);
          return steps;
        }
        fz_gen t = *g;
        t.replay = true;
        t.choice[i] = cands[k];
        fz_case tc;
        if (!generate(f, &t, &tc)) continue;
        char shp[1024], shp0[1024];
        module_text(&tc, seed, txt, FZ_TEXT_CAP);
        shapes_text(&tc, shp, sizeof shp);
        shapes_text(c, shp0, sizeof shp0);
        if (!strcmp(txt, cur) && !strcmp(shp, shp0) && tc.grid == c->grid) continue;
        fz_result tr;
        runs++;
        run_isolated(&tc, seed, o, &tr);
        if (tr.verdict != FZ_MISMATCH) continue;
        /* keep it, with the choices as the replay used them */
        t.n = t.pos < FZ_MAX_CHOICES ? t.pos : FZ_MAX_CHOICES;
        *g = t;
        *c = tc;
        *r = tr;
        memcpy(cur, txt, FZ_TEXT_CAP);
        steps++;
        progress = true;
      }
    }
  }
  free(cur);
  free(txt);
  return steps;
}

/* ---- the run -------------------------------------------------------------------------------- */

static bool listed(const char *list, const fz_family *f) {
  if (!list) return false;
  const char *p = list;
  while (*p) {
    size_t n = strcspn(p, ",");
    if (n == strlen(f->name) && !strncmp(p, f->name, n)) return true;
    const char *q = f->ops;
    while (*q) {
      size_t m = strcspn(q, " ");
      if (m == n && !strncmp(q, p, n)) return true;
      q += m;
      while (*q == ' ') q++;
    }
    p += n;
    while (*p == ',') p++;
  }
  return false;
}

int loom_fuzz_ops_family_count(void) { return loom_fz_nfamilies; }
const char *loom_fuzz_ops_family_name(int i) { return loom_fz_families[i].name; }
const char *loom_fuzz_ops_family_ops(int i) { return loom_fz_families[i].ops; }

static void report_failure(FILE *out, const fz_family *f, uint64_t seed, const loom_fuzz_ops_options *o, fz_gen *g, fz_case *c,
                           fz_result *r) {
  char shp[1024], thr[64] = "", *text = malloc(FZ_TEXT_CAP);
  if (!text) return;
  for (int k = 0; k < o->nthreads; k++) fz_cat(thr, sizeof thr, "%s%u", k ? "," : "", o->threads[k]);
  shapes_text(c, shp, sizeof shp);
  fprintf(out, "MISMATCH %s seed %llu: %s\n  call: %s\n  inputs: %s\n  repro: loom fuzz-ops --op %s --seed %llu --cases 1 --threads %s\n", f->name,
          (unsigned long long)seed, r->msg, c->call, shp, f->name, (unsigned long long)seed, thr);
  fflush(out);
  if (!o->no_shrink) {
    int steps = shrink(f, seed, o, g, c, r);
    module_text(c, seed, text, FZ_TEXT_CAP);
    shapes_text(c, shp, sizeof shp);
    fprintf(out, "  shrunk (%d steps): %s\n  inputs: %s%s\n", steps, r->msg, shp, c->grid ? " (floats on a 1/4 grid)" : "");
  } else {
    module_text(c, seed, text, FZ_TEXT_CAP);
  }
  fprintf(out, "  module:\n");
  for (const char *p = text; *p;) {
    size_t n = strcspn(p, "\n");
    fprintf(out, "    %.*s\n", (int)n, p);
    p += n + (p[n] == '\n');
  }
  fflush(out);
  free(text);
}

bool loom_fuzz_ops_run(const loom_fuzz_ops_options *oin, FILE *out, loom_fuzz_ops_report *rep) {
  memset(rep, 0, sizeof *rep);
  loom_fuzz_ops_options o = *oin;
  if (o.nthreads <= 0) o.threads[0] = 1, o.threads[1] = 2, o.nthreads = 2;
  if (!o.cases && o.seconds <= 0) o.cases = 200;
  int fams[LOOM_FUZZ_OPS_MAX_FAMILIES], nf = 0;
  for (int i = 0; i < loom_fz_nfamilies && i < LOOM_FUZZ_OPS_MAX_FAMILIES; i++)
    if ((!o.op || listed(o.op, &loom_fz_families[i])) && !listed(o.skip, &loom_fz_families[i])) fams[nf++] = i;
  if (!nf) {
    fprintf(out, "fuzz-ops: no family matches --op %s (--list shows them)\n", o.op ? o.op : "");
    return false;
  }
  uint64_t t0 = loom_clock_ns();
  for (long i = 0; !o.cases || i < o.cases; i++) {
    if (o.seconds > 0 && (double)(loom_clock_ns() - t0) / 1e9 >= o.seconds) break;
    int fi = fams[i % nf];
    const fz_family *f = &loom_fz_families[fi];
    uint64_t seed = o.seed + (uint64_t)i;
    fz_gen g;
    fz_case c;
    fz_result r;
    loom_fuzz_ops_counts *fc = &rep->family[fi];
    if (!draw_case(f, seed, &g, &c)) {
      set_result(&r, FZ_INVALID, "the generator made no case in 50 draws");
    } else {
      run_isolated(&c, seed, &o, &r);
    }
    fc->cases++;
    rep->total.cases++;
    if (o.verbose || r.verdict == FZ_INVALID) {
      char shp[1024];
      shapes_text(&c, shp, sizeof shp);
      fprintf(out, "%s %s seed %llu: %s  [%s]%s%s\n", verdict_names[r.verdict], f->name, (unsigned long long)seed, c.call, shp,
              r.verdict != FZ_OK ? "\n  " : "", r.verdict != FZ_OK ? r.msg : "");
      fflush(out);
    }
    switch (r.verdict) {
    case FZ_MISMATCH:
      fc->mismatches++;
      rep->total.mismatches++;
      report_failure(out, f, seed, &o, &g, &c, &r);
      break;
    case FZ_SKIPPED: fc->skipped++, rep->total.skipped++; break;
    case FZ_INVALID: fc->invalid++, rep->total.invalid++; break;
    default: break;
    }
  }
  double secs = (double)(loom_clock_ns() - t0) / 1e9;
  fprintf(out, "family               cases  mismatches  skipped  invalid\n");
  for (int k = 0; k < nf; k++) {
    const loom_fuzz_ops_counts *fc = &rep->family[fams[k]];
    fprintf(out, "%-20s %6ld %11ld %8ld %8ld\n", loom_fz_families[fams[k]].name, fc->cases, fc->mismatches, fc->skipped, fc->invalid);
  }
  fprintf(out, "%.1f s, seed %llu; %ld skipped (refused as unsupported), %ld invalid (generator refused by the interpreter)\n", secs,
          (unsigned long long)o.seed, rep->total.skipped, rep->total.invalid);
  fprintf(out, "fuzz-ops: %ld cases, %ld mismatches\n", rep->total.cases, rep->total.mismatches);
  fflush(out);
  return true;
}

/* cpu_test_util.c — differential testing of compiled tensor programs. */
#include "cpu_test_util.h"
#include "base/lowp.h"
#include "vm/threadpool.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- a test-local parallel_for -------------------------------------------------- */

typedef struct half_job {
  loom_parallel_body body;
  void *arg;
  int64_t begin, end;
  int32_t rc;
} half_job;

static void *run_half(void *p) {
  half_job *j = p;
  j->rc = j->body(j->arg, j->begin, j->end, 1);
  return NULL;
}

static int32_t pf_serial(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  return n > 0 ? body(arg, 0, n, 0) : 0;
}

static int32_t pf_two(void *pool, int64_t n, loom_parallel_body body, void *arg) {
  (void)pool;
  if (n <= 0) return 0;
  if (n == 1) return body(arg, 0, 1, 0);
  half_job j = {body, arg, n / 2, n, 0};
  pthread_t t;
  if (pthread_create(&t, NULL, run_half, &j) != 0) return body(arg, 0, n, 0);
  int32_t rc = body(arg, 0, n / 2, 0);
  pthread_join(t, NULL);
  return rc ? rc : j.rc;
}

static void set_error(const loom_kernel_ctx *ctx, const char *message) {
  cpu_ctx *c = (cpu_ctx *)ctx; /* ctx is the first member */
  snprintf(c->error, sizeof c->error, "%s", message);
}

static void set_error_index(const loom_kernel_ctx *ctx, const char *message, int64_t index, int64_t lo, int64_t hi) {
  cpu_ctx *c = (cpu_ctx *)ctx;
  snprintf(c->error, sizeof c->error, "%s: index %lld must be within the inclusive range [%lld, %lld]", message,
           (long long)index, (long long)lo, (long long)hi);
}

void cpu_ctx_init(cpu_ctx *c, uint32_t threads) {
  memset(c, 0, sizeof *c);
  c->ctx.abi_version = LOOM_KERNEL_ABI_VERSION;
  c->ctx.size = sizeof(loom_kernel_ctx);
  c->ctx.num_threads = threads;
  c->ctx.parallel_for = threads > 1 ? pf_two : pf_serial;
  c->ctx.set_error = set_error;
  c->ctx.set_error_index = set_error_index;
  if (threads == CPU_CTX_POOL) {
    loom_cpu_pool *p = NULL;
    loom_status s = loom_cpu_pool_create(NULL, 2, &p);
    cr_assert_null(s, "%s", loom_status_text(s, 0));
    c->pool = p;
    c->ctx.num_threads = 2;
    c->ctx.parallel_for = loom_cpu_pool_parallel_for;
    c->ctx.pool = p;
  }
}

void cpu_ctx_fini(cpu_ctx *c) {
  if (c->pool) loom_cpu_pool_destroy(c->pool);
  c->pool = NULL;
}

/* ---- data ---------------------------------------------------------------------------- */

void cpu_fill(loom_dtype t, void *data, size_t count, loom_test_rng *rng) {
  size_t es = loom_dtype_size(t);
  for (size_t i = 0; i < count; i++) {
    char *p = (char *)data + i * es;
    uint64_t r = loom_test_rng_next(rng);
    double f = ((double)(r >> 11) / 9007199254740992.0) * 4.0 - 2.0;
    int64_t v = loom_dtype_kind_of(t) == LOOM_DTYPE_KIND_UINT ? (int64_t)(r % 101) : (int64_t)(r % 101) - 50;
    switch (t) {
      case LOOM_DTYPE_BOOL: { uint8_t x = r & 1; memcpy(p, &x, 1); break; }
      case LOOM_DTYPE_I8: case LOOM_DTYPE_U8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
      case LOOM_DTYPE_I16: case LOOM_DTYPE_U16: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
      case LOOM_DTYPE_I32: case LOOM_DTYPE_U32: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
      case LOOM_DTYPE_I64: case LOOM_DTYPE_U64: memcpy(p, &v, 8); break;
      case LOOM_DTYPE_F16: { uint16_t x = loom_f32_to_f16((float)f); memcpy(p, &x, 2); break; }
      case LOOM_DTYPE_BF16: { uint16_t x = loom_f32_to_bf16((float)f); memcpy(p, &x, 2); break; }
      case LOOM_DTYPE_F32: { float x = (float)f; memcpy(p, &x, 4); break; }
      case LOOM_DTYPE_F64: memcpy(p, &f, 8); break;
      default: /* the low-precision types: any code (floats: NaN and inf too), integers in range */
        *(uint8_t *)p = loom_dtype_is_lowp_float(t) ? (uint8_t)(r >> 56) : loom_lowp_from_i64(t, (int64_t)(r >> 56));
        break;
    }
  }
}

static double as_double(loom_dtype t, const void *p) {
  switch (t) {
    case LOOM_DTYPE_F16: { uint16_t x; memcpy(&x, p, 2); return loom_f16_to_f32(x); }
    case LOOM_DTYPE_BF16: { uint16_t x; memcpy(&x, p, 2); return loom_bf16_to_f32(x); }
    case LOOM_DTYPE_F32: { float x; memcpy(&x, p, 4); return x; }
    case LOOM_DTYPE_F64: { double x; memcpy(&x, p, 8); return x; }
    default: return 0;
  }
}

/* ---- running ------------------------------------------------------------------------- */

int32_t cpu_call(loom_sym_ctx *cx, const loom_tp_func *f, loom_kernel_fn fn, const loom_tp_arg *args, size_t nargs,
                 cpu_ctx *c) {
  int64_t syms[64];
  void *bufs[64];
  cr_assert_leq(f->nsyms, 64);
  loom_status s = loom_cpu_bind_symbols(cx, f, args, nargs, syms);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  size_t k = 0;
  for (size_t i = 0; i < nargs; i++)
    if (f->params[i].is_buffer) bufs[k++] = args[i].data;
  return fn(bufs, syms, &c->ctx);
}

char *cpu_generated_text(cpu_gen_fn gen) {
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_sym_ctx *cx;
  cr_assert_null(loom_sym_ctx_create(NULL, &cx));
  loom_tp_func *f = NULL;
  loom_status s = gen(&a, cx, &f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_strbuf text;
  loom_strbuf_init(&text, NULL);
  loom_tp_print_func(f, &text);
  char *out = strdup(loom_strbuf_cstr(&text));
  cr_assert_not_null(out);
  loom_strbuf_free(&text);
  loom_sym_ctx_destroy(cx);
  loom_arena_destroy(&a);
  return out;
}

void cpu_parse_ok(tp_fixture *fx, const char *text) {
  loom_status s = tp_parse(fx, text);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  s = loom_tp_verify(fx->cx, fx->f);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
}

loom_kernel_fn cpu_jit(loom_cpu_jit *jit, tp_fixture *fx) {
  loom_kernel_fn fn = NULL;
  const loom_tp_func *fs[1] = {fx->f};
  loom_status s = loom_cpu_jit_compile(jit, fx->cx, fs, 1, &fn);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  return fn;
}

enum { MAXP = 16, GUARD = 256, GUARD_BYTE = 0xA5 };

/* A buffer of `bytes` with GUARD bytes of GUARD_BYTE on each side (the kernel's view starts after
 * the first): a store outside it lands on them. */
static void *guarded_alloc(size_t bytes) {
  unsigned char *p = malloc(bytes + 2 * GUARD);
  cr_assert_not_null(p);
  memset(p, GUARD_BYTE, GUARD);
  memset(p + GUARD + bytes, GUARD_BYTE, GUARD);
  return p + GUARD;
}

/* Whether the guards around a guarded_alloc'd buffer of `bytes` are intact. */
static bool guards_intact(const void *data, size_t bytes) {
  const unsigned char *p = (const unsigned char *)data - GUARD;
  for (size_t i = 0; i < GUARD; i++)
    if (p[i] != GUARD_BYTE || p[GUARD + bytes + i] != GUARD_BYTE) return false;
  return true;
}

int cpu_diff(tp_fixture *fx, loom_kernel_fn fn, const cpu_diff_opts *o, uint64_t seed) {
  const loom_tp_func *f = fx->f;
  loom_test_rng rng = {seed};
  int runs = 0;
  cr_assert_leq(f->nparams, MAXP);
  for (int trial = 0; trial < o->trials; trial++) {
    /* symbols: scalars get o->scalar, shape symbols a random size */
    loom_sym_env *env;
    cr_assert_null(loom_sym_env_create(NULL, &env));
    for (size_t j = 0; j < f->nsyms; j++) {
      int64_t v = o->sizes[loom_test_rng_range(&rng, 0, (int64_t)o->nsizes - 1)];
      for (size_t i = 0; i < f->nparams; i++)
        if (!f->params[i].is_buffer && f->params[i].scalar.var == f->syms[j]) v = o->scalar;
      cr_assert_null(loom_sym_env_set(env, f->syms[j], v));
    }
    if (o->bind) o->bind(f, env, trial);
    int64_t shapes[MAXP][8];
    size_t counts[MAXP];
    void *want[MAXP], *init[MAXP];
    loom_tp_arg args[MAXP];
    for (size_t i = 0; i < f->nparams; i++) {
      const loom_tp_param *p = &f->params[i];
      args[i] = (loom_tp_arg){NULL, shapes[i], o->scalar};
      want[i] = init[i] = NULL;
      counts[i] = 0;
      if (!p->is_buffer) continue;
      size_t n = 1;
      for (int d = 0; d < p->buf->ndim; d++) {
        loom_status s = loom_sym_eval(fx->cx, p->buf->dims[d], env, &shapes[i][d]);
        cr_assert_null(s, "%s", loom_status_text(s, 0));
        if (shapes[i][d] < 0) shapes[i][d] = 0;
        n *= (size_t)shapes[i][d];
      }
      counts[i] = n;
      size_t bytes = (n ? n : 1) * loom_dtype_size(p->buf->dtype);
      init[i] = malloc(bytes);
      want[i] = malloc(bytes);
      args[i].data = guarded_alloc(bytes);
      if (o->fill) o->fill(f, i, init[i], n, shapes[i], &rng);
      else cpu_fill(p->buf->dtype, init[i], n, &rng);
    }
    loom_sym_env_destroy(env);
    /* the oracle */
    loom_tp_arg wargs[MAXP];
    for (size_t i = 0; i < f->nparams; i++) {
      wargs[i] = args[i];
      if (f->params[i].is_buffer) {
        memcpy(want[i], init[i], counts[i] * loom_dtype_size(f->params[i].buf->dtype));
        wargs[i].data = want[i];
      }
    }
    loom_status s = o->oracle ? loom_tp_interpret(o->oracle->cx, o->oracle->f, wargs, f->nparams)
                              : loom_tp_interpret(fx->cx, f, wargs, f->nparams);
    cr_assert_null(s, "interpreter: %s", loom_status_text(s, 0));
    for (uint32_t threads = 1; threads <= CPU_CTX_POOL; threads++) {
      for (size_t i = 0; i < f->nparams; i++)
        if (f->params[i].is_buffer) memcpy(args[i].data, init[i], counts[i] * loom_dtype_size(f->params[i].buf->dtype));
      cpu_ctx c;
      cpu_ctx_init(&c, threads);
      int32_t rc = cpu_call(fx->cx, f, fn, args, f->nparams, &c);
      cpu_ctx_fini(&c);
      cr_assert_eq(rc, 0, "kernel failed: %s", c.error);
      for (size_t i = 0; i < f->nparams; i++) {
        const loom_tp_param *p = &f->params[i];
        if (!p->is_buffer) continue;
        loom_dtype t = p->buf->dtype;
        size_t es = loom_dtype_size(t);
        cr_assert(guards_intact(args[i].data, (counts[i] ? counts[i] : 1) * es),
                  "@%s stored outside buffer '%s' (trial %d, %u threads, %zu elements)", f->name, p->buf->name, trial, threads,
                  counts[i]);
        for (size_t e = 0; e < counts[i]; e++) {
          const char *g = (const char *)args[i].data + e * es, *w = (const char *)want[i] + e * es;
          if (loom_dtype_is_float(t) && !loom_dtype_is_lowp(t)) {
            double gv = as_double(t, g), wv = as_double(t, w);
            if (isnan(gv) && isnan(wv)) continue;
            cr_assert(fabs(gv - wv) <= o->atol + o->rtol * fabs(wv) || gv == wv,
                      "@%s buffer '%s' element %zu (trial %d, %u threads): got %.9g, want %.9g", f->name,
                      p->buf->name, e, trial, threads, gv, wv);
          } else {
            cr_assert(memcmp(g, w, es) == 0, "@%s buffer '%s' element %zu (trial %d, %u threads) differs (got 0x%02x, want 0x%02x)",
                      f->name, p->buf->name, e, trial, threads, (unsigned)*(const uint8_t *)g, (unsigned)*(const uint8_t *)w);
          }
        }
      }
      runs++;
    }
    for (size_t i = 0; i < f->nparams; i++) {
      free(init[i]);
      free(want[i]);
      if (args[i].data) free((char *)args[i].data - GUARD);
    }
  }
  return runs;
}

cpu_diff_opts cpu_opts(const int64_t *sizes, size_t n, double tol) {
  return (cpu_diff_opts){sizes, n, 6, tol, tol, NULL, 3, NULL, NULL};
}

const char *const cpu_mm_text =
    "prim @mm(A: Buffer[(m, k), f32], B: Buffer[(k, n), f32], C: Buffer[(m, n), f32]) {\n"
    "  for i in 0..m { for j in 0..n {\n"
    "    C[i, j] = 0.0\n"
    "    for r in 0..k reduce { C[i, j] = C[i, j] + A[i, r] * B[r, j] }\n"
    "  } }\n}\n";

void cpu_diff_program(const char *text, const cpu_diff_opts *o) {
  tp_fixture fx;
  cpu_parse_ok(&fx, text);
  loom_cpu_jit *jit;
  loom_status s = loom_cpu_jit_create(NULL, &jit);
  cr_assert_null(s, "%s", loom_status_text(s, 0));
  loom_kernel_fn fn = cpu_jit(jit, &fx);
  int runs = cpu_diff(&fx, fn, o, loom_test_seed());
  cr_assert_gt(runs, 0);
  loom_cpu_jit_destroy(jit);
  tp_fixture_free(&fx);
}

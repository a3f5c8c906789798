/* conc_util.c — one runtime called from many threads, every output compared bit for bit
 * with the output of a serial call on the same runtime (conc_util.h). Worker threads never
 * assert (Criterion's asserts belong to the test's thread): they count and describe what
 * went wrong, and the test thread asserts after joining them. */
#include "concurrency/conc_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vm/symeval.h"

static void ok(loom_status s, const char *what, const char *path) {
  if (!s) return;
  cr_log_error("%s", loom_status_text(s, 1));
  loom_status_free(s);
  cr_assert_fail("%s: %s failed", path, what);
}

void conc_model_open(conc_model *m, const char *path, uint32_t pool_threads) {
  memset(m, 0, sizeof *m);
  m->path = path;
  ok(loom_compile_file(path, NULL, &m->c), "compile", path);
  loom_rt_options o = {.threads = pool_threads};
  ok(loom_compiled_open(m->c, &o, &m->rt), "open", path);
  cr_assert_eq(loom_rt_threads(m->rt), pool_threads);
}

/* Deterministic values in [-0.5, 0.5] (floats) or [0, 7) (ints), different per parameter. */
static void fill(loom_tensor *t, uint32_t p, uint64_t salt) {
  size_t n = loom_tensor_numel(t);
  for (size_t i = 0; i < n; i++) {
    double v = 0.5 * sin((double)(i * 7 + p * 13 + salt * 101));
    switch (t->dtype) {
    case LOOM_DTYPE_F32: ((float *)t->data)[i] = (float)v; break;
    case LOOM_DTYPE_F64: ((double *)t->data)[i] = v; break;
    case LOOM_DTYPE_I64: ((int64_t *)t->data)[i] = (int64_t)((i * 5 + p) % 7); break;
    case LOOM_DTYPE_I32: ((int32_t *)t->data)[i] = (int32_t)((i * 5 + p) % 7); break;
    default: memset(t->data, 0, n * loom_dtype_size(t->dtype)); return;
    }
  }
}

void conc_model_add_set(conc_model *m, const char *const *names, const int64_t *vals, uint32_t n) {
  cr_assert_lt(m->nsets, CONC_MAX_SETS);
  conc_set *s = &m->sets[m->nsets];
  uint32_t fn = loom_rt_function_find(m->rt, "main");
  cr_assert_neq(fn, UINT32_MAX, "%s has no main", m->path);
  s->nin = loom_rt_param_count(m->rt, fn);
  cr_assert_leq(s->nin, CONC_MAX_PARAMS);
  for (uint32_t p = 0; p < s->nin; p++) {
    loom_rt_param prm;
    loom_rt_param_get(m->rt, fn, p, &prm);
    int64_t shape[LOOM_VM_MAX_RANK];
    bool symbolic = false;
    for (uint32_t d = 0; d < prm.rank; d++) {
      char *end;
      strtoll(prm.dims[d], &end, 10);
      if (*end) symbolic = true;
      ok(loom_vm_symeval(prm.dims[d], names, vals, n, &shape[d]), "evaluating a dim", m->path);
    }
    if (!symbolic && m->nsets > 0) { /* a weight: the first set's tensor, shared */
      s->in[p] = m->sets[0].in[p];
      loom_vm_obj_retain(&s->in[p]->hdr);
      continue;
    }
    ok(loom_rt_tensor_new(m->rt, (loom_dtype)prm.dtype, (int32_t)prm.rank, shape, &s->in[p]), "tensor_new", m->path);
    fill(s->in[p], p, m->nsets);
  }
  m->nsets++;
}

void conc_model_reference(conc_model *m) {
  for (uint32_t k = 0; k < m->nsets; k++) {
    conc_set *s = &m->sets[k];
    loom_rt_outputs out;
    ok(loom_rt_call(m->rt, "main", s->in, s->nin, &out), "the serial call", m->path);
    cr_assert_leq(out.count, CONC_MAX_OUTS);
    s->nout = out.count;
    for (uint32_t i = 0; i < out.count; i++) {
      cr_assert_eq(out.items[i]->kind, LOOM_VM_OBJ_TENSOR);
      const loom_tensor *t = (const loom_tensor *)out.items[i];
      s->out_numel[i] = (int64_t)loom_tensor_numel(t);
      s->out_bytes[i] = loom_tensor_numel(t) * loom_dtype_size(t->dtype);
      s->out[i] = malloc(s->out_bytes[i] ? s->out_bytes[i] : 1);
      memcpy(s->out[i], t->data, s->out_bytes[i]);
    }
    loom_rt_outputs_free(&out);
  }
}

void conc_model_close(conc_model *m) {
  for (uint32_t k = 0; k < m->nsets; k++) {
    for (uint32_t p = 0; p < m->sets[k].nin; p++) loom_tensor_release(m->sets[k].in[p]);
    for (uint32_t i = 0; i < m->sets[k].nout; i++) free(m->sets[k].out[i]);
  }
  loom_rt_close(m->rt);
  loom_compiled_free(m->c);
}

/* ---- the hammer ------------------------------------------------------------------------- */

typedef struct worker {
  conc_model *m;
  uint32_t calls;
  uint64_t rng;
  uint32_t done, wrong, failed;
  char first[512]; /* the first thing that went wrong */
} worker;

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}


static void *work(void *p) {
  worker *w = p;
  conc_model *m = w->m;
  for (uint32_t c = 0; c < w->calls; c++) {
    uint32_t k = (uint32_t)(next(&w->rng) % m->nsets);
    conc_set *s = &m->sets[k];
    loom_rt_outputs out;
    loom_status st = loom_rt_call(m->rt, "main", s->in, s->nin, &out);
    if (st) {
      w->failed++;
      if (!w->first[0]) snprintf(w->first, sizeof w->first, "set %u: call failed: %s", k, loom_status_text(st, 0));
      loom_status_free(st);
      continue;
    }
    bool same = out.count == s->nout;
    for (uint32_t i = 0; same && i < out.count; i++) {
      const loom_tensor *t = (const loom_tensor *)out.items[i];
      same = out.items[i]->kind == LOOM_VM_OBJ_TENSOR && (int64_t)loom_tensor_numel(t) == s->out_numel[i] &&
             memcmp(t->data, s->out[i], s->out_bytes[i]) == 0;
      if (!same && !w->first[0]) snprintf(w->first, sizeof w->first, "set %u output %u differs from the serial call", k, i);
    }
    if (!same) w->wrong++;
    w->done++;
    loom_rt_outputs_free(&out);
  }
  return NULL;
}

void conc_run_threads(uint32_t n, void *(*fn)(void *), void *args, size_t arg_size) {
  pthread_t th[64];
  cr_assert_leq(n, 64);
  for (uint32_t t = 0; t < n; t++) cr_assert_eq(pthread_create(&th[t], NULL, fn, (char *)args + t * arg_size), 0);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += CONC_TIMEOUT_S;
  for (uint32_t t = 0; t < n; t++) {
    if (pthread_timedjoin_np(th[t], NULL, &deadline) != 0) {
      /* the threads cannot be stopped safely: end the test's process (Criterion counts a crash) */
      fprintf(stderr, "concurrency: thread %u of %u has not finished after %d s: deadlock\n", t, n, CONC_TIMEOUT_S);
      fflush(stderr);
      abort();
    }
  }
}

void conc_hammer(conc_model *m, uint32_t threads, uint32_t calls, uint64_t seed) {
  cr_assert_leq(threads, 64);
  worker ws[64];
  for (uint32_t t = 0; t < threads; t++) ws[t] = (worker){.m = m, .calls = calls, .rng = seed * 1000003u + t};
  conc_run_threads(threads, work, ws, sizeof ws[0]);
  uint32_t done = 0, wrong = 0, failed = 0;
  for (uint32_t t = 0; t < threads; t++) {
    done += ws[t].done, wrong += ws[t].wrong, failed += ws[t].failed;
    if (ws[t].first[0]) cr_log_error("thread %u: %s", t, ws[t].first);
  }
  cr_log_info("%s: %u threads on a %u-thread pool: %u calls, %u wrong, %u failed", m->path, threads,
              loom_rt_threads(m->rt), done + failed, wrong, failed);
  cr_assert_eq(failed, 0, "%s: %u of %u concurrent calls failed", m->path, failed, threads * calls);
  cr_assert_eq(wrong, 0, "%s: %u of %u concurrent calls differ from the serial call", m->path, wrong, threads * calls);
  cr_assert_eq(done, threads * calls);
}

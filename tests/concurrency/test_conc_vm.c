/* test_conc_vm.c — the parts under the runtime, called from many threads at once: the
 * thread pool (concurrent loops, more loops than slots, nested pools, chunk boundaries that
 * do not depend on who runs them), the VM (each call's own kernel error message, shared
 * tensors' reference counts) and the device's storage pool. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "concurrency/conc_util.h"
#include "vm/exec.h"
#include "vm/object.h"
#include "vm/threadpool.h"
#include "vm/vm.h"


/* ---- the pool ------------------------------------------------------------------------- */

/* Each index records the begin of the chunk that ran it (and how often it ran). */
typedef struct cover {
  int64_t *begin_of;
  _Atomic int *hits;
  loom_cpu_pool *inner; /* a second pool the body's nested loops go to, or NULL */
} cover;

static int32_t cover_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  cover *c = arg;
  (void)w;
  for (int64_t i = b; i < e; i++) {
    c->begin_of[i] = b;
    atomic_fetch_add(&c->hits[i], 1);
  }
  if (c->inner) { /* nested, on another pool: runs serially on this thread */
    int64_t one = 0;
    _Atomic int h = 0;
    cover d = {&one, &h, NULL};
    if (loom_cpu_pool_parallel_for(c->inner, 1, cover_body, &d) != 0 || atomic_load(&h) != 1) return 9;
  }
  return 0;
}

typedef struct pool_caller {
  loom_cpu_pool *pool, *inner;
  uint32_t threads; /* the pool's */
  uint32_t seed, rounds;
  uint32_t bad;     /* rounds whose coverage or chunks were wrong */
  char first[256];
} pool_caller;

static void *pool_caller_main(void *p) {
  pool_caller *pc = p;
  uint64_t s = pc->seed;
  for (uint32_t r = 0; r < pc->rounds; r++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    int64_t n = (int64_t)((s >> 33) % 300); /* 0, 1, primes, not multiples of the threads */
    cover c = {calloc((size_t)n + 1, sizeof(int64_t)), calloc((size_t)n + 1, sizeof(_Atomic int)), pc->inner};
    int32_t rc = loom_cpu_pool_parallel_for(pc->pool, n, cover_body, &c);
    /* the chunks the pool makes (loom_cpu_pool_chunks of them), chunk k = [k*n/C, (k+1)*n/C) */
    int64_t chunks = loom_cpu_pool_chunks(pc->threads, n);
    for (int64_t k = 0; rc == 0 && k < chunks; k++)
      for (int64_t i = k * n / chunks; i < (k + 1) * n / chunks; i++)
        if (atomic_load(&c.hits[i]) != 1 || c.begin_of[i] != k * n / chunks) {
          if (!pc->first[0])
            snprintf(pc->first, sizeof pc->first, "n %lld index %lld: ran %d times, in a chunk from %lld (expected %lld)",
                     (long long)n, (long long)i, atomic_load(&c.hits[i]), (long long)c.begin_of[i],
                     (long long)(k * n / chunks));
          rc = -1;
          break;
        }
    if (rc != 0) pc->bad++;
    free(c.begin_of);
    free((void *)c.hits);
  }
  return NULL;
}

static void pool_hammer(uint32_t pool_threads, uint32_t callers, uint32_t rounds, bool nested) {
  loom_cpu_pool *pool, *inner = NULL;
  cr_assert_null(loom_cpu_pool_create(NULL, pool_threads, &pool));
  if (nested) cr_assert_null(loom_cpu_pool_create(NULL, 2, &inner));
  pool_caller pcs[64];
  for (uint32_t t = 0; t < callers; t++) pcs[t] = (pool_caller){pool, inner, pool_threads, t * 7919u + 1, rounds, 0, ""};
  conc_run_threads(callers, pool_caller_main, pcs, sizeof pcs[0]);
  for (uint32_t t = 0; t < callers; t++) {
    if (pcs[t].first[0]) cr_log_error("caller %u: %s", t, pcs[t].first);
    cr_assert_eq(pcs[t].bad, 0, "%u-thread pool, %u callers%s: caller %u had %u bad loops", pool_threads, callers,
                 nested ? ", nested" : "", t, pcs[t].bad);
  }
  loom_cpu_pool_destroy(inner);
  loom_cpu_pool_destroy(pool);
}

LOOM_TEST(concurrency, pool_loops_from_many_callers_cover_every_index_in_the_same_chunks) {
  for (uint32_t threads = 2; threads <= 4; threads++)
    for (uint32_t callers = 2; callers <= 8; callers *= 2) pool_hammer(threads, callers, 300, false);
  /* no spinning: every wait sleeps on a condition variable (the lost-wake-up path) */
  cr_assert(setenv("LOOM_POOL_SPIN_US", "0", 1) == 0);
  pool_hammer(3, 6, 300, false);
  cr_assert(unsetenv("LOOM_POOL_SPIN_US") == 0);
}

LOOM_TEST(concurrency, pool_more_callers_than_slots_run_their_loops_alone) {
  pool_hammer(2, LOOM_CPU_POOL_SLOTS + 8, 100, false);
}

LOOM_TEST(concurrency, pool_nested_loops_on_a_second_pool_do_not_deadlock) {
  pool_hammer(3, 4, 200, true);
}

/* ---- the VM: each call's own error message, shared reference counts ------------------ */

/* out[i] = 2 x[i] in parallel chunks; a negative x[0] fails with a message naming it, after
 * a pause that lets other calls' kernels write their own messages meanwhile. */
typedef struct dbl_args {
  const float *x;
  float *o;
} dbl_args;
static int32_t dbl_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  dbl_args *a = arg;
  (void)w;
  for (int64_t i = b; i < e; i++) a->o[i] = 2 * a->x[i];
  return 0;
}
static int32_t kernel_dbl(void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx) {
  dbl_args a = {buf[0], buf[1]};
  if (sym[0] > 0 && a.x[0] < 0) {
    char msg[64];
    snprintf(msg, sizeof msg, "negative input %g", (double)a.x[0]);
    ctx->set_error(ctx, msg);
    for (volatile int spin = 0; spin < 20000; spin++) {
    }
    return 3;
  }
  return ctx->parallel_for(ctx->pool, sym[0], dbl_body, &a);
}
static loom_kernel_fn resolve_dbl(void *ctx, const char *name, int is_extern) {
  (void)ctx, (void)is_extern;
  return !strcmp(name, "dbl") ? kernel_dbl : NULL;
}

/* main(x: f32(n)) -> dbl(x) */
static loom_vm_exec *dbl_exec(void) {
  loom_vm_builder *b;
  cr_assert_null(loom_vm_builder_new(NULL, &b));
  /* dbl(x: f32(n), y: f32(n); n) */
  uint32_t sig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0, LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_SYM, 0,
                    loom_vm_builder_str(b, "n")};
  uint32_t k = loom_vm_builder_kernel(b, "dbl", 2, 1, sig, (uint32_t)(sizeof sig / sizeof *sig));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t out = loom_vm_fb_reg(f, LOOM_VM_OBJ_TENSOR);
  uint32_t n = loom_vm_fb_ireg(f, "n");
  uint32_t px[] = {loom_vm_builder_str(b, "x"), LOOM_DTYPE_F32, 1, LOOM_VM_AXIS_BIND, n, 1, 0};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(f, px, 7)));
  uint32_t le[] = {LOOM_DTYPE_F32, 0, 1, n};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_EMPTY, out, loom_vm_fb_list(f, le, 4)));
  uint32_t lk[] = {2, x, out, 1, n};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(f, lk, 5)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, out, 0, 0));
  loom_vm_exec *e;
  cr_assert_null(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

typedef struct vm_caller {
  loom_vm *vm;
  loom_tensor *shared; /* one input every caller passes (its count is retained concurrently) */
  uint32_t id, rounds;
  uint32_t bad;
  char first[256];
} vm_caller;

static void *vm_caller_main(void *p) {
  vm_caller *vc = p;
  loom_device *dev = loom_vm_device(vc->vm);
  for (uint32_t r = 0; r < vc->rounds; r++) {
    bool fail = (r + vc->id) % 3 == 0;
    int64_t n = 1 + (int64_t)((r * 31 + vc->id * 17) % 200);
    loom_tensor *x;
    if (loom_tensor_alloc(dev, LOOM_DTYPE_F32, 1, &n, &x)) {
      vc->bad++;
      continue;
    }
    /* the value names the caller and the round, so a message from another call shows */
    float v = (float)(vc->id * 1000 + r + 1);
    for (int64_t i = 0; i < n; i++) ((float *)x->data)[i] = fail ? -v : v + (float)i;
    loom_vm_obj *arg = fail ? &x->hdr : &vc->shared->hdr, *out = NULL;
    loom_status st = loom_vm_call(vc->vm, 0, &arg, 1, &out);
    char want[64];
    snprintf(want, sizeof want, "negative input %g", (double)-v);
    bool ok;
    if (fail) ok = st && strstr(loom_status_text(st, 0), want);
    else {
      const loom_tensor *o = (const loom_tensor *)out, *in = vc->shared;
      ok = !st && o->shape[0] == in->shape[0];
      for (int64_t i = 0; ok && i < in->shape[0]; i++) ok = ((float *)o->data)[i] == 2 * ((float *)in->data)[i];
    }
    if (!ok) {
      vc->bad++;
      if (!vc->first[0])
        snprintf(vc->first, sizeof vc->first, "round %u: %s (wanted %s)", r, st ? loom_status_text(st, 0) : "succeeded",
                 fail ? want : "the doubled input");
    }
    loom_status_free(st);
    loom_vm_obj_release(out);
    loom_vm_obj_release(&x->hdr);
  }
  return NULL;
}

LOOM_TEST(concurrency, vm_calls_keep_their_own_kernel_errors_and_share_inputs) {
  loom_vm_exec *e = dbl_exec();
  loom_cpu_pool *pool;
  cr_assert_null(loom_cpu_pool_create(NULL, 3, &pool));
  loom_vm *vm;
  cr_assert_null(loom_vm_create(NULL, e, resolve_dbl, NULL, pool, &vm));
  int64_t n = 97;
  loom_tensor *shared;
  cr_assert_null(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &n, &shared));
  for (int64_t i = 0; i < n; i++) ((float *)shared->data)[i] = (float)i - 40.5f + 41; /* x[0] > 0: no failure */
  vm_caller vcs[8];
  for (uint32_t t = 0; t < 8; t++) vcs[t] = (vm_caller){vm, shared, t, 400, 0, ""};
  conc_run_threads(8, vm_caller_main, vcs, sizeof vcs[0]);
  for (uint32_t t = 0; t < 8; t++) {
    if (vcs[t].first[0]) cr_log_error("caller %u: %s", t, vcs[t].first);
    cr_assert_eq(vcs[t].bad, 0, "caller %u: %u of %u calls went wrong", t, vcs[t].bad, vcs[t].rounds);
  }
  /* every reference the calls took on the shared input was given back */
  cr_assert_eq(atomic_load(&shared->hdr.refs), 1u);
  loom_device_stats ds = loom_device_get_stats(loom_vm_device(vm));
  cr_assert_eq(ds.live_bytes, (size_t)n * 4, "only the shared input is live: %zu bytes", ds.live_bytes);
  loom_vm_obj_release(&shared->hdr);
  loom_vm_destroy(vm);
  loom_cpu_pool_destroy(pool);
  loom_vm_exec_free(e);
}

/* test_exec_mutation.c — no executable that verifies can make a kernel read or write out
 * of bounds (docs/vm.md, "What verification guarantees").
 *
 * The executable section of a real compiled model (models/mlp.loom) is mutated (single-bit
 * flips and byte sets) and each mutant loaded; one that verifies runs on a runtime whose
 * kernels are the artifact's own, each behind a guard that checks, with ASan's shadow
 * memory, that every buffer is addressable for as many bytes as the kernel's own signature
 * (its copy kept with the code) says it will touch at the symbols passed. A guard that
 * finds a buffer too small counts a violation and does not run the kernel; the test wants
 * none. The issue's flip (CALLK linear's argument r1 -> r3) is a regression case.
 *
 * Bounded to a few seconds in the suite; LOOM_EXEC_MUTATIONS=10000 runs that many. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "e2e_util.h"
#include "vm/device.h"
#include "vm/exec.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#endif
#ifdef HAVE_ASAN
/* from ASan's runtime (sanitizer/asan_interface.h, which zig's clang does not ship): the
 * first poisoned byte of [beg, beg + size), or NULL when all of it is addressable */
void *__asan_region_is_poisoned(void *beg, size_t size);
#endif

#define MAX_K 8

static const loom_artifact_kernel *real;   /* the artifact's kernel table */
static loom_vm_kernel real_sig[MAX_K];     /* their signatures (the copies kept with the code) */
static long violations, guarded_calls;

/* The guard of kernel k: every buffer addressable for its signature's extent, then the kernel. */
static int32_t guard(uint32_t k, void *const *bufs, const int64_t *syms, const loom_kernel_ctx *ctx) {
  const loom_vm_kernel *s = &real_sig[k];
  guarded_calls++;
  for (uint32_t b = 0; b < s->nbuf; b++) {
    int64_t dims[LOOM_VM_MAX_RANK];
    uint32_t rank;
    if (!loom_vm_sig_eval_dims(s, b, syms, dims, &rank)) {
      violations++;
      ctx->set_error(ctx, "guard: the signature overflows at these symbols");
      return 99;
    }
    uint32_t dt, r;
    loom_vm_sig_buffer(s, b, &dt, &r);
    uint64_t n = 1;
    for (uint32_t d = 0; d < (rank == LOOM_VM_SIG_FLAT ? 1 : rank); d++) {
      if (dims[d] < 0 || __builtin_mul_overflow(n, (uint64_t)dims[d], &n)) n = UINT64_MAX;
    }
    uint64_t bytes = n == UINT64_MAX ? n : n * loom_dtype_size((loom_dtype)dt);
    bool bad = bytes == UINT64_MAX;
#ifdef HAVE_ASAN
    if (!bad && bytes) bad = __asan_region_is_poisoned(bufs[b], (size_t)bytes) != NULL;
#endif
    if (bad) {
      violations++;
      ctx->set_error(ctx, "guard: a buffer is smaller than the kernel would index");
      return 99;
    }
  }
  return real[k].fn(bufs, syms, ctx);
}

#define GUARD(k)                                                                          \
  static int32_t guard##k(void *const *b, const int64_t *s, const loom_kernel_ctx *c) { \
    return guard(k, b, s, c);                                                             \
  }
GUARD(0) GUARD(1) GUARD(2) GUARD(3) GUARD(4) GUARD(5) GUARD(6) GUARD(7)
static const loom_kernel_fn guards[MAX_K] = {guard0, guard1, guard2, guard3, guard4, guard5, guard6, guard7};

typedef struct fixture {
  char dir[64], so[128];
  loom_device *dev;
  void *image;
  const loom_artifact_desc *desc;
  loom_artifact_kernel table[MAX_K];
} fixture;

static void setup(fixture *fx) {
  snprintf(fx->dir, sizeof fx->dir, "/tmp/loom-mut-XXXXXX");
  cr_assert(mkdtemp(fx->dir) != NULL);
  snprintf(fx->so, sizeof fx->so, "%s/mlp.so", fx->dir);
  loom_compiled *c;
  loom_compile_options o = {.emit = LOOM_TARGET_EMIT_OBJECT};
  loom_status st = loom_compile_file("models/mlp.loom", &o, &c);
  if (!st) st = loom_compiled_save(c, fx->so);
  cr_assert(st == LOOM_OK, "%s", loom_status_text(st, 1));
  loom_compiled_free(c);
  cr_assert(loom_device_cpu_create(NULL, &fx->dev) == LOOM_OK);
  st = fx->dev->vt->image_load(fx->dev, fx->so, NULL, &fx->image, &fx->desc);
  cr_assert(st == LOOM_OK, "%s", loom_status_text(st, 1));
  cr_assert(fx->desc->nkernels <= MAX_K);
  real = fx->desc->kernels;
  for (uint32_t k = 0; k < fx->desc->nkernels; k++) {
    const loom_artifact_kernel *a = &fx->desc->kernels[k];
    cr_assert(a->sig != NULL, "the artifact keeps each kernel's signature");
    /* counts from the executable's table (same kernel order) */
    real_sig[k] = (loom_vm_kernel){0, 0, 0, a->nsig, (uint32_t *)a->sig};
    fx->table[k] = (loom_artifact_kernel){.name = a->name, .fn = guards[k], .sig = a->sig, .nsig = a->nsig};
  }
  loom_vm_exec *e;
  cr_assert(loom_vm_exec_load(NULL, fx->desc->exec, fx->desc->exec_size, NULL, NULL, &e) == LOOM_OK);
  for (uint32_t k = 0; k < e->nkernels; k++) {
    const char *name = loom_vm_exec_str(e, e->kernels[k].name);
    for (uint32_t i = 0; i < fx->desc->nkernels; i++)
      if (!strcmp(name, fx->desc->kernels[i].name)) real_sig[i].nbuf = e->kernels[k].nbuf, real_sig[i].nsym = e->kernels[k].nsym;
  }
  loom_vm_exec_free(e);
}

static void teardown(fixture *fx) {
  fx->dev->vt->image_unload(fx->dev, fx->image);
  loom_device_release(fx->dev);
  loom_test_proc p = loom_test_run("rm -rf %s", fx->dir);
  loom_test_proc_free(&p);
}

/* Does code jump backwards anywhere (a mutant that may loop forever: verified, not run)? */
static bool may_loop(const loom_vm_exec *e) {
  for (uint32_t f = 0; f < e->nfuncs; f++)
    for (uint32_t pc = 0; pc < e->funcs[f].ncode; pc++) {
      loom_vm_insn in = e->funcs[f].code[pc];
      loom_vm_op op = LOOM_VM_OP(in);
      if ((op == LOOM_VM_OP_JMP || op == LOOM_VM_OP_JMPIF || op == LOOM_VM_OP_JMPIFNOT) && LOOM_VM_BX(in) <= pc) return true;
      if (op == LOOM_VM_OP_CALL) return true; /* recursion ends at the depth limit, but slowly */
    }
  return false;
}

/* Loads `bytes` and, when it verifies, runs main on mlp's inputs at b = 2. 0: refused by the
 * loader or the runtime; 1: ran (with or without an error). */
static int try_one(fixture *fx, const uint8_t *bytes, size_t len, loom_status *out_call) {
  *out_call = LOOM_OK;
  uint8_t *copy = loom_alloc_aligned(NULL, len ? len : 1, 64);
  memcpy(copy, bytes, len);
  loom_vm_exec *e;
  loom_status st = loom_vm_exec_load(NULL, copy, len, NULL, NULL, &e);
  if (st) {
    loom_status_free(st);
    loom_free(NULL, copy, len ? len : 1);
    return 0;
  }
  if (may_loop(e)) {
    loom_vm_exec_free(e);
    loom_free(NULL, copy, len ? len : 1);
    return 0;
  }
  loom_rt_options o = {.kernels = fx->table, .nkernels = fx->desc->nkernels, .threads = 1};
  loom_rt *rt;
  st = loom_rt_open_exec(e, &o, &rt);
  if (st) {
    loom_status_free(st);
    loom_free(NULL, copy, len ? len : 1);
    return 0;
  }
  loom_rt_device(rt)->max_alloc_bytes = 64u << 20; /* a mutated size fails cleanly, not slowly */
  static const int64_t shapes[5][2] = {{2, 784}, {256, 784}, {256, 0}, {10, 256}, {10, 0}};
  loom_tensor *in[5] = {0};
  for (int i = 0; i < 5; i++) {
    loom_status ts = loom_rt_tensor_new(rt, LOOM_DTYPE_F32, shapes[i][1] ? 2 : 1, shapes[i], &in[i]);
    cr_assert(ts == LOOM_OK);
    memset(in[i]->data, 0, loom_tensor_numel(in[i]) * 4);
  }
  loom_rt_outputs out = {0};
  *out_call = loom_rt_call(rt, "main", in, 5, &out);
  loom_rt_outputs_free(&out);
  for (int i = 0; i < 5; i++) loom_tensor_release(in[i]);
  loom_rt_close(rt);
  loom_free(NULL, copy, len ? len : 1);
  return 1;
}

/* The word offset, in the executable's LISTS section, of the CALLK list of the first kernel
 * call (the list's first word is its buffer count); its kernel's name in *kname. */
static size_t first_callk_list_offset(const uint8_t *exec, size_t len, char *kname, size_t kcap) {
  loom_vm_exec *e;
  cr_assert(loom_vm_exec_load(NULL, exec, len, NULL, NULL, &e) == LOOM_OK);
  const loom_vm_func *f = &e->funcs[0];
  size_t at = SIZE_MAX;
  for (uint32_t pc = 0; pc < f->ncode && at == SIZE_MAX; pc++) {
    loom_vm_insn in = f->code[pc];
    if (LOOM_VM_OP(in) == LOOM_VM_OP_CALLK) {
      at = LOOM_VM_BX(in);
      snprintf(kname, kcap, "%s", loom_vm_exec_str(e, e->kernels[LOOM_VM_A(in)].name));
    }
  }
  loom_vm_exec_free(e);
  cr_assert(at != SIZE_MAX);
  uint64_t off;
  memcpy(&off, exec + 24 + LOOM_VM_SEC_LISTS * 24 + 8, 8); /* section table entry: id, count, offset, size */
  return (size_t)off + at * 4;
}

LOOM_TEST(exec_mutation, the_flip_from_the_issue_is_caught_before_the_kernel_runs) {
  fixture fx;
  setup(&fx);
  size_t len = fx.desc->exec_size;
  uint8_t *b = malloc(len);
  memcpy(b, fx.desc->exec, len);
  loom_status call;
  violations = 0;
  cr_assert_eq(try_one(&fx, b, len, &call), 1);
  cr_assert(call == LOOM_OK, "%s", loom_status_text(call, 1));
  /* The first linear, CALLK k(r0, r1, r2, r6; b) (its GELU fused in, so its name is the fused
   * kernel's): the second buffer r1 (w1, 256x784) -> r3 (w2, 10x256) */
  char kname[128], want[192];
  size_t l = first_callk_list_offset(b, len, kname, sizeof kname);
  cr_assert_eq(b[l + 8], 1, "buffer 1 is r1");
  b[l + 8] ^= 2;
  cr_assert_eq(try_one(&fx, b, len, &call), 1, "the flipped executable verifies (r3 is a f32 rank-2 tensor too)");
  cr_assert(call != LOOM_OK, "the call must fail");
  const char *t = loom_status_text(call, 0);
  snprintf(want, sizeof want, "kernel '%s' buffer 1 axis 0 is 10, its signature", kname);
  cr_assert(strstr(t, want) != NULL, "%s", t);
  cr_assert(strstr(t, "gives 256 at the symbols passed") != NULL, "%s", t);
  loom_status_free(call);
  cr_assert_eq(violations, 0);
  free(b);
  teardown(&fx);
}

LOOM_TEST(exec_mutation, mutants_that_verify_never_index_out_of_bounds) {
  fixture fx;
  setup(&fx);
  const char *env = getenv("LOOM_EXEC_MUTATIONS");
  long want = env ? strtol(env, NULL, 10) : 10000;
  double budget_s = env ? 1e9 : 4.0; /* the suite: a few seconds; LOOM_EXEC_MUTATIONS: all of them */
  size_t len = fx.desc->exec_size;
  uint8_t *b = malloc(len);
  loom_test_rng r = {loom_test_seed()};
  violations = guarded_calls = 0;
  long done = 0, ran = 0, failed = 0;
  uint64_t t0 = loom_clock_ns();
  for (; done < want && (double)(loom_clock_ns() - t0) / 1e9 < budget_s; done++) {
    memcpy(b, fx.desc->exec, len);
    size_t at = (size_t)loom_test_rng_range(&r, 0, (int64_t)len - 1);
    if (done % 2 == 0) b[at] ^= (uint8_t)(1u << loom_test_rng_range(&r, 0, 7));
    else b[at] = (uint8_t)loom_test_rng_range(&r, 0, 255);
    loom_status call;
    ran += try_one(&fx, b, len, &call);
    failed += call != LOOM_OK;
    loom_status_free(call);
  }
  free(b);
  fprintf(stderr, "exec_mutation: %ld mutants of a %zu-byte executable, %ld verified and ran (%ld calls failed cleanly), "
                  "%ld guarded kernel calls, %ld out-of-bounds\n", done, len, ran, failed, guarded_calls, violations);
  cr_assert_eq(violations, 0, "%ld kernel calls would have gone out of bounds", violations);
  cr_assert(ran > 0 && guarded_calls > 0, "some mutants ran");
  teardown(&fx);
}

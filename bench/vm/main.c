/* bench/vm — dispatch cost of the VM (a program, not a timed test).
 *
 *   scripts/zig build bench -Doptimize=ReleaseFast && zig-out/bin/bench-vm
 *
 * Prints ns per instruction (an int loop of IADD/ILT/JMPIF), ns per empty kernel call
 * through the kernel ABI (CALLK with 2 buffers and 2 symbols, loop overhead
 * subtracted), and ns per loom_vm_call of a small function (argument checks, MATCH,
 * RET, frame setup), all in thread CPU time (the machine may be shared); then the wall
 * time of one parallel_for of the runtime pool on 2 threads (an empty body, and a body of
 * about 2 us per chunk as a decode step's small kernels have), with the pool's spinning
 * wait and with LOOM_POOL_SPIN_US=0 (every wait sleeps on a condition variable). Goal (issue 7): an empty kernel call under 50 ns. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "vm/threadpool.h"
#include "vm/exec.h"
#include "vm/vm.h"

static int32_t empty_kernel(void *const *b, const int64_t *s, const loom_kernel_ctx *c) {
  (void)b, (void)s, (void)c;
  return 0;
}
static loom_kernel_fn resolve(void *ctx, const char *name, int ext) {
  (void)ctx, (void)name, (void)ext;
  return empty_kernel;
}

/* CPU time of this thread: the machine may be shared, so wall time overstates costs. */
static uint64_t cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(loom_status s) {
  if (!s) return;
  loom_status_fprint(stderr, s);
  exit(1);
}

/* loop(n): i = 0; do { [CALLK empty(x, x; i, n)] i += 1 } while (i < n); return x */
static loom_vm_exec *loop_exec(int with_kernel, int64_t n) {
  loom_vm_builder *b;
  die(loom_vm_builder_new(NULL, &b));
  /* empty(x: f32(4), x; i, n): a signature checked at every call, as compiled kernels have */
  uint32_t sig[] = {LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_CONST, 4, 0, LOOM_DTYPE_F32, 1, 1, LOOM_VM_SIG_CONST, 4, 0,
                    loom_vm_builder_str(b, "i"), loom_vm_builder_str(b, "n")};
  uint32_t k = loom_vm_builder_kernel(b, "empty", 2, 2, sig, 14);
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t i = loom_vm_fb_ireg(f, NULL), one = loom_vm_fb_ireg(f, NULL), nn = loom_vm_fb_ireg(f, NULL), c = loom_vm_fb_ireg(f, NULL);
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, i, loom_vm_builder_intconst(b, 0)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, one, loom_vm_builder_intconst(b, 1)));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_ICONST, nn, loom_vm_builder_intconst(b, n)));
  uint32_t top = loom_vm_fb_pc(f);
  if (with_kernel) {
    uint32_t l[] = {2, x, x, 2, i, nn};
    loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_CALLK, k, loom_vm_fb_list(f, l, 6)));
  }
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_IADD, i, i, one));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_ILT, c, i, nn));
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_JMPIF, c, top));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  die(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  return e;
}

/* Best of 5 runs, ns per loop iteration. */
static double time_loop(int with_kernel, int64_t n) {
  loom_vm_exec *e = loop_exec(with_kernel, n);
  loom_vm *vm;
  die(loom_vm_create(NULL, e, resolve, NULL, NULL, &vm));
  int64_t len = 4;
  loom_tensor *x;
  die(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &len, &x));
  loom_vm_obj *arg = &x->hdr, *out;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    uint64_t t0 = cpu_ns();
    die(loom_vm_call(vm, 0, &arg, 1, &out));
    double ns = (double)(cpu_ns() - t0) / (double)n;
    if (ns < best) best = ns;
    loom_vm_obj_release(out);
  }
  loom_vm_obj_release(&x->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
  return best;
}

/* ns per loom_vm_call of main(x: f32(n)): MATCH x, RET x. */
static double time_call(int64_t reps) {
  loom_vm_builder *b;
  die(loom_vm_builder_new(NULL, &b));
  loom_vm_fbuilder *f = loom_vm_builder_func(b, "main");
  const char *dims[] = {"n"};
  uint32_t x = loom_vm_fb_param(f, "x", LOOM_DTYPE_F32, 1, dims);
  uint32_t n = loom_vm_fb_ireg(f, "n");
  uint32_t pat[] = {loom_vm_builder_str(b, "x"), LOOM_DTYPE_F32, 1, LOOM_VM_AXIS_BIND, n, 1, 0};
  loom_vm_fb_emit(f, loom_vm_insn_abx(LOOM_VM_OP_MATCH, x, loom_vm_fb_list(f, pat, 7)));
  loom_vm_fb_emit(f, loom_vm_insn_abc(LOOM_VM_OP_RET, x, 0, 0));
  loom_vm_exec *e;
  die(loom_vm_builder_finish(b, &e));
  loom_vm_builder_free(b);
  loom_vm *vm;
  die(loom_vm_create(NULL, e, resolve, NULL, NULL, &vm));
  int64_t len = 4;
  loom_tensor *t;
  die(loom_tensor_alloc(loom_vm_device(vm), LOOM_DTYPE_F32, 1, &len, &t));
  loom_vm_obj *arg = &t->hdr, *out;
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    uint64_t t0 = cpu_ns();
    for (int64_t i = 0; i < reps; i++) {
      die(loom_vm_call(vm, 0, &arg, 1, &out));
      loom_vm_obj_release(out);
    }
    double ns = (double)(cpu_ns() - t0) / (double)reps;
    if (ns < best) best = ns;
  }
  loom_vm_obj_release(&t->hdr);
  loom_vm_destroy(vm);
  loom_vm_exec_free(e);
  return best;
}

static uint64_t wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static volatile float sink;

/* A chunk of `*(int64_t *)arg` ns of arithmetic per iteration range (0: empty). */
static int32_t busy_body(void *arg, int64_t b, int64_t e, uint32_t w) {
  (void)b, (void)e, (void)w;
  int64_t ns = *(const int64_t *)arg;
  if (ns <= 0) return 0;
  uint64_t end = wall_ns() + (uint64_t)ns;
  float x = 1.0f;
  while (wall_ns() < end)
    for (int i = 0; i < 64; i++) x = x * 1.0000001f + 1e-7f;
  sink = x;
  return 0;
}

/* Median wall ns of one parallel_for over 2 iterations on a 2-thread pool. */
static double time_parallel_for(const char *spin_us, int64_t body_ns, int reps) {
  if (spin_us) setenv("LOOM_POOL_SPIN_US", spin_us, 1);
  else unsetenv("LOOM_POOL_SPIN_US");
  loom_cpu_pool *pool;
  die(loom_cpu_pool_create(NULL, 2, &pool));
  double *t = malloc((size_t)reps * sizeof *t);
  for (int r = 0; r < reps; r++) {
    uint64_t t0 = wall_ns();
    if (loom_cpu_pool_parallel_for(pool, 2, busy_body, &body_ns) != 0) exit(1);
    t[r] = (double)(wall_ns() - t0);
  }
  loom_cpu_pool_destroy(pool);
  for (int i = 1; i < reps; i++)
    for (int j = i; j > 0 && t[j - 1] > t[j]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
  double med = t[reps / 2];
  free(t);
  unsetenv("LOOM_POOL_SPIN_US");
  return med;
}

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : 20000000;
  double loop_ns = time_loop(0, n);
  double kern_ns = time_loop(1, n);
  double call_ns = time_call(n / 20);
  printf("bench-vm (%s build, thread CPU time, best of 5, %lld iterations)\n", LOOM_BUILD_MODE, (long long)n);
  printf("  dispatch per instruction        %6.2f ns   (IADD/ILT/JMPIF loop: %.2f ns per 3 instructions)\n", loop_ns / 3, loop_ns);
  printf("  empty kernel call (CALLK)       %6.2f ns   (2 buffers, 2 symbols; loop overhead subtracted; goal < 50 ns)\n",
         kern_ns - loop_ns);
  printf("  loom_vm_call of MATCH+RET       %6.2f ns   (argument checks, frame, FTZ/DAZ set and restored)\n", call_ns);
  printf("parallel_for on a 2-thread pool (wall time, median of 20000; each of the 2 chunks runs the body once):\n");
  for (int64_t body = 0; body <= 2000; body += 2000) {
    double spin = time_parallel_for(NULL, body, 20000), sleep = time_parallel_for("0", body, 20000);
    printf("  body %4lld ns: spinning wait %8.0f ns, condition-variable wait %8.0f ns (LOOM_POOL_SPIN_US=0)\n",
           (long long)body, spin, sleep);
  }
  return 0;
}

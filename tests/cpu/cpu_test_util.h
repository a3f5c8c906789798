/* cpu_test_util.h — differential testing of compiled tensor programs against the
 * reference interpreter (loom_tp_interpret). */
#ifndef LOOM_TESTS_CPU_TEST_UTIL_H
#define LOOM_TESTS_CPU_TEST_UTIL_H

#include "../tensorprog/tp_test_util.h"
#include "targets/cpu/codegen.h"

/* A kernel context: `threads` 1 runs parallel loops inline, 2 splits each parallel loop
 * into two halves, the second on a fresh pthread (test-local), CPU_CTX_POOL uses the
 * runtime's thread pool (vm/threadpool.h) with 2 threads. */
enum { CPU_CTX_POOL = 3 };
typedef struct cpu_ctx {
  loom_kernel_ctx ctx;
  char error[256]; /* last set_error message */
  void *pool;      /* loom_cpu_pool for CPU_CTX_POOL */
} cpu_ctx;
void cpu_ctx_init(cpu_ctx *c, uint32_t threads);
void cpu_ctx_fini(cpu_ctx *c);

/* Fills a buffer of `count` elements of `t` with values from `rng`: floats in [-2, 2],
 * integers in [-50, 50] (unsigned [0, 100]), bools 0/1. */
void cpu_fill(loom_dtype t, void *data, size_t count, loom_test_rng *rng);

/* Optional hook: fills param `param` (count elements) instead of cpu_fill. */
typedef void (*cpu_fill_fn)(const loom_tp_func *f, size_t param, void *data, size_t count, const int64_t *shape,
                            loom_test_rng *rng);

/* Optional hook: sets the symbols of trial `trial` in env after the random assignment (shapes
 * whose symbols are related: K/V heads that divide the query heads). */
typedef void (*cpu_bind_fn)(const loom_tp_func *f, loom_sym_env *env, int trial);

/* What one differential run checks. */
typedef struct cpu_diff_opts {
  const int64_t *sizes; /* values tried for each shape symbol */
  size_t nsizes;
  int trials;           /* random symbol assignments */
  double rtol, atol;    /* float tolerance: |got - want| <= atol + rtol*|want| */
  cpu_fill_fn fill;     /* NULL: cpu_fill */
  int64_t scalar;       /* value of every scalar param */
  cpu_bind_fn bind;     /* NULL: random sizes only */
  const tp_fixture *oracle; /* the program whose interpretation is the expected result (the
                               unscheduled one, same parameters); NULL: the one compiled */
} cpu_diff_opts;

/* Options for `trials` = 6 random shapes drawn from sizes[0..n), tolerance tol (rtol and atol),
 * scalar params 3, default fill. */
cpu_diff_opts cpu_opts(const int64_t *sizes, size_t n, double tol);

/* A plain f32 matmul C[m, n] = A[m, k] B[k, n] (init + reduction), as program text. */
extern const char *const cpu_mm_text;

/* Runs `fn` (compiled from f) and the interpreter on the same random inputs for
 * `trials` random shapes, with 1 and 2 threads (test-local) and the runtime pool, and asserts every buffer is equal
 * (integers bit-exact, floats within tolerance). Returns the number of runs. */
int cpu_diff(tp_fixture *fx, loom_kernel_fn fn, const cpu_diff_opts *o, uint64_t seed);
/* Parses, JIT-compiles (the host's machine) and differentially tests one program (cpu_diff at the
 * test's seed, at least one run). */
void cpu_diff_program(const char *text, const cpu_diff_opts *o);

/* Runs `fn` once on args (with the symbols bound from them); returns its result. */
int32_t cpu_call(loom_sym_ctx *cx, const loom_tp_func *f, loom_kernel_fn fn, const loom_tp_arg *args, size_t nargs,
                 cpu_ctx *c);

/* A generator of one program (a call of tensorprog/tp_gen.h with its arguments bound). */
typedef loom_status (*cpu_gen_fn)(loom_arena *a, loom_sym_ctx *cx, loom_tp_func **out);
/* The printed text of the program `gen` makes (malloc'd; fails the test if gen fails). */
char *cpu_generated_text(cpu_gen_fn gen);

/* Parses and verifies `text` into fx; fails the test otherwise. */
void cpu_parse_ok(tp_fixture *fx, const char *text);
/* JIT-compiles fx->f; fails the test otherwise. */
loom_kernel_fn cpu_jit(loom_cpu_jit *jit, tp_fixture *fx);

#endif

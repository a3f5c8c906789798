/* loom.h — the compiler's public C API (libloom): compile a graph module once, then run it
 * for any shape through the runtime (src/loomrt.h) or save it as an AOT artifact.
 *
 *     loom_compiled *c;
 *     loom_status s = loom_compile_file("models/mlp.loom", NULL, &c);   // pipeline + VM lowering
 *     if (!s) s = loom_compiled_save(c, "mlp.so");                       // AOT shared object
 *     loom_rt *rt;
 *     if (!s) s = loom_compiled_open(c, NULL, &rt);                      // or JIT, in process
 *     ... loom_rt_call(rt, "main", inputs, n, &out) for any batch size ...
 *     loom_rt_close(rt);
 *     loom_compiled_free(c);
 *
 * Errors name the file (line/column), the function, the binding and the pass. */
#ifndef LOOM_LOOM_H
#define LOOM_LOOM_H

#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"
#include "graph/graph.h"
#include "loomrt.h"

typedef struct loom_compile_options {
  const char *cpu;       /* LLVM CPU name for the kernels ("x86-64-v3"); NULL: the host */
  const char *features;  /* LLVM feature string; NULL: the CPU's */
  bool print_after_all;  /* print the module after every pass */
  bool time_passes;      /* report each pass's time */
  bool no_verify;        /* skip the verifier between passes (it is on by default) */
  bool offload;          /* run the `offload` pass (matmul/linear to BLAS above a measured row
                            count, libcall/) before legalize; JIT only for now: AOT artifacts do
                            not carry extern signatures yet */
  FILE *report;          /* where printing and timings go (stderr when NULL) */
} loom_compile_options;

typedef struct loom_compiled loom_compiled;

/* Wall-clock milliseconds of each compile stage. */
typedef struct loom_compile_times {
  double passes_ms;  /* graph and tensor-program passes */
  double lower_ms;   /* memory planning and VM lowering */
  double codegen_ms; /* LLVM: IR, optimisation, machine code (JIT or object) */
} loom_compile_times;

/* Runs the default pipeline on `m` (which it changes and keeps: it must outlive the
 * result) and lowers it to a VM executable. No machine code is made yet. */
LOOM_MUST_USE loom_status loom_compile(loom_graph_module *m, const loom_compile_options *opts, loom_compiled **out);
/* Reads `path` (.loom text) and compiles it; the result owns the module. */
LOOM_MUST_USE loom_status loom_compile_file(const char *path, const loom_compile_options *opts, loom_compiled **out);
void loom_compiled_free(loom_compiled *c);

const loom_vm_exec *loom_compiled_exec(const loom_compiled *c);
loom_graph_module *loom_compiled_module(const loom_compiled *c);
loom_compile_times loom_compiled_times(const loom_compiled *c);

/* Writes an AOT artifact: one shared object with the kernels (LLVM object code) and the
 * executable, loadable by loom-run / loom_rt_open. Needs a C compiler driver to link
 * (`cc`, or $LOOM_CC). Written to a temporary name and renamed: nothing half-written. */
LOOM_MUST_USE loom_status loom_compiled_save(loom_compiled *c, const char *path);
/* JIT-compiles the kernels (once per compiled module) and opens a runtime on the executable.
 * The runtime must be closed before `c` is freed. */
LOOM_MUST_USE loom_status loom_compiled_open(loom_compiled *c, const loom_rt_options *opts, loom_rt **out);

#endif

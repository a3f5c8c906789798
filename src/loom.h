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
#include "targets/target.h"

typedef struct loom_compile_options {
  const char *target;    /* code generation target (targets/target.h): "cpu" (NULL) is the one built */
  const char *cpu;       /* the target's machine: an LLVM CPU name ("x86-64-v3"); NULL: the host */
  const char *features;  /* LLVM feature string; NULL: the CPU's */
  loom_target_emit emit; /* run codegen inside loom_compile: LOOM_TARGET_EMIT_JIT (for
                            loom_compiled_open) or _OBJECT (for loom_compiled_save); NONE (0):
                            the pipeline stops after VM lowering and codegen runs when the
                            kernels are first needed */
  bool print_after_all;  /* print what every pass made (module, memory plans, bytecode, kernels) */
  bool time_passes;      /* report each pass's time */
  bool no_verify;        /* skip the verifier between passes (it is on by default) */
  bool offload;          /* run the `offload` pass (matmul/linear to BLAS above a measured row
                            count, libcall/) before legalize; JIT only for now: AOT artifacts do
                            not carry extern signatures yet */
  FILE *report;          /* where printing and timings go (stderr when NULL) */
  bool no_cache;         /* no kernel cache on disk (identical programs are still compiled once) */
  const char *cache_dir; /* the kernel cache's directory; NULL: $LOOM_CACHE_DIR, else
                            $XDG_CACHE_HOME/loom, else ~/.cache/loom (docs/codegen.md) */
} loom_compile_options;

typedef struct loom_compiled loom_compiled;

/* Wall-clock milliseconds of each compile stage (the passes' own times, loom opt --time). */
typedef struct loom_compile_times {
  double passes_ms;  /* graph and tensor-program passes (normalize .. schedule) */
  double lower_ms;   /* the memplan and lower passes */
  double codegen_ms; /* the codegen pass (JIT or object; its last run), plus linking the artifact */
  /* the kernel cache in codegen's last run */
  uint32_t kernels;         /* kernel-table entries */
  uint32_t kernels_unique;  /* distinct contents among them (compiled once each) */
  uint32_t cache_hits;      /* distinct contents read from the disk cache */
  uint32_t kernels_compiled; /* distinct contents run through LLVM: 0 on a warm compile */
  uint32_t cache_rejected;  /* cache entries found corrupt or mismatched, ignored (recompiled) */
} loom_compile_times;

/* Runs the default pipeline (src/driver/pipeline.c) on `m` (which it changes and keeps: it
 * must outlive the result) through VM lowering, and through codegen when opts->emit asks. */
LOOM_MUST_USE loom_status loom_compile(loom_graph_module *m, const loom_compile_options *opts, loom_compiled **out);
/* Reads `path` (.loom text) and compiles it; the result owns the module. */
LOOM_MUST_USE loom_status loom_compile_file(const char *path, const loom_compile_options *opts, loom_compiled **out);
void loom_compiled_free(loom_compiled *c);

const loom_vm_exec *loom_compiled_exec(const loom_compiled *c);
loom_graph_module *loom_compiled_module(const loom_compiled *c);
loom_compile_times loom_compiled_times(const loom_compiled *c);

/* Writes an AOT artifact: the kernels (the codegen pass to an object, unless loom_compile
 * made it) linked by the target with the executable into one file loadable by loom-run /
 * loom_rt_open (CPU: a shared object; needs a C compiler driver, `cc` or $LOOM_CC).
 * Written to a temporary name and renamed: nothing half-written. */
LOOM_MUST_USE loom_status loom_compiled_save(loom_compiled *c, const char *path);
/* As loom_compiled_save, and the artifact's trailer carries an Ed25519 signature made with
 * `key` (vm/artifact.h; loom_vm_artifact_seckey_read reads a `loom keygen` key file), so
 * loom_rt_open with loom_rt_options.trust set to the matching public key accepts it. */
LOOM_MUST_USE loom_status loom_compiled_save_signed(loom_compiled *c, const char *path, const loom_vm_artifact_seckey *key);
/* JIT-compiles the kernels (the codegen pass, once per compiled module) and opens a runtime
 * on the executable.
 * The runtime must be closed before `c` is freed. */
LOOM_MUST_USE loom_status loom_compiled_open(loom_compiled *c, const loom_rt_options *opts, loom_rt **out);

#endif

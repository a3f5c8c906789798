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
  const char *target;    /* code generation target (targets/target.h): "cpu" (NULL) is the one built;
                            "cuda:sm_90" names the target's machine after the colon */
  const char *cpu;       /* the target's machine: an LLVM CPU name ("x86-64-v3"), a GPU ("sm_90");
                            NULL: the host's, or the one the target string names */
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
  bool pack_tied;        /* pack: give a tied weight's matmul (an LM head on the embedding it also
                            gathers) its own packed copy: faster at many rows, a second copy of the
                            weight in memory (issue 22: off by default; `loom serve --pack-tied`) */
  const char *cache_dir; /* the kernel cache's directory; NULL: $LOOM_CACHE_DIR, else
                            $XDG_CACHE_HOME/loom, else ~/.cache/loom (docs/codegen.md) */
} loom_compile_options;

typedef struct loom_compiled loom_compiled;

/* loom_compile_options' layout, as loom_rt_abi (loomrt.h) gives the runtime's structs. */
const loom_abi_field *loom_compile_abi(size_t *n);

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
  /* the packed-weight cache (pack; graph/wcache.h) */
  uint32_t packed_hits;     /* packed weights mapped from the cache instead of made */
  uint32_t packed_stored;   /* packed weights made and stored */
  uint32_t packed_rejected; /* entries found corrupt, truncated or mismatched, ignored (packed again) */
  uint64_t packed_bytes_mapped; /* the bytes of the hits */
  uint32_t sources_by_id;   /* packed weights' sources whose hash was found by file identity (not read) */
  uint32_t sources_read;    /* ... in a model file but not found so: hashed from their bytes */
  uint32_t sources_remembered; /* ... of those, remembered under the file's identity for the next compile */
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
/* The kernels alone, as the target's code generator writes them (CUDA: one PTX module with a
 * kernel per program, targets/cuda/ptx.h; CPU: an archive of objects), into `path`. */
LOOM_MUST_USE loom_status loom_compiled_save_kernels(loom_compiled *c, const char *path);
/* JIT-compiles the kernels (the codegen pass, once per compiled module) and opens a runtime
 * on the executable.
 * The runtime must be closed before `c` is freed. */
LOOM_MUST_USE loom_status loom_compiled_open(loom_compiled *c, const loom_rt_options *opts, loom_rt **out);

/* ---- for language bindings (python/loom calls these through ctypes) ---- */

/* Loads a model held in memory into a fresh, verified module: ONNX protobuf bytes or .loom
 * text. `name` ("model.onnx", "net.loom") names it in errors; `format` is "onnx" or "loom",
 * or NULL: by the suffix of `name`, else by content (bytes below 0x20 other than white
 * space mean ONNX's binary protobuf; otherwise text). ONNX external data is refused. */
LOOM_MUST_USE loom_status loom_module_load_buffer(const void *bytes, size_t len, const char *name,
                                                  const char *format, loom_graph_module **out);
/* loom_module_load_buffer then loom_compile; the result owns the module. */
LOOM_MUST_USE loom_status loom_compile_buffer(const void *bytes, size_t len, const char *name, const char *format,
                                              const loom_compile_options *opts, loom_compiled **out);
/* The symbolic peak of the memory plan of function `fn` (graph/memplan.h: its storages
 * plus what the graph functions it calls hold), in bytes, as text ("4096*b + 40"; malloc'd,
 * free() it). NOT_FOUND when there is no such graph function. */
LOOM_MUST_USE loom_status loom_compiled_memory_peak(loom_compiled *c, const char *fn, char **out_text);

/* Runs graph function `fn` of a model in memory (as loom_module_load_buffer reads it, not
 * compiled) in the reference interpreter (graph/interp.c). Inputs are dense CPU tensors,
 * copied in; the results (a returned tuple flattened one level, as loom_rt_call) are fresh
 * dense tensors the caller releases with loom_rt_outputs_free. */
LOOM_MUST_USE loom_status loom_interp_call_buffer(const void *bytes, size_t len, const char *name, const char *format,
                                                  const char *fn, loom_tensor *const *inputs, uint32_t ninputs,
                                                  loom_rt_outputs *out);

/* Symbolic shape arithmetic on text, as `loom sym` (symbolic/sym.h): names are shape vars
 * (>= 0), the same name the same var; `facts` ("n >= 1", "n % 8 == 0") hold while deciding.
 * Errors name the text with a caret. */
LOOM_MUST_USE loom_status loom_sym_text_simplify(const char *expr, const char *const *facts, uint32_t nfacts,
                                                 char **out_text); /* malloc'd: free() */
/* *out: 1 true, 0 false, -1 unknown (the prover is never wrong when definite). */
LOOM_MUST_USE loom_status loom_sym_text_prove(const char *claim, const char *const *facts, uint32_t nfacts,
                                              int32_t *out);
/* The value of `expr` with names[i] = values[i]; an unbound name or an overflow is an error. */
LOOM_MUST_USE loom_status loom_sym_text_eval(const char *expr, const char *const *names, const int64_t *values,
                                             uint32_t n, int64_t *out);

#endif

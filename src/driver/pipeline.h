/* pipeline.h — the pass manager and the compile pipeline.
 *
 * Every stage from a verified module to kernels is a pass of passes.def with ONE signature,
 * `loom_status run(loom_pass_ctx *)`: the graph passes, offload, legalize, fuse, schedule,
 * memory planning, VM lowering and codegen. The context carries the module, the target and
 * its options, and the products of the late stages (memory plans, the VM executable, the
 * kernels). The default pipeline is one list in pipeline.c; `offload` is in it, run when
 * asked (loom_pipeline_default).
 *
 * The manager runs a list of passes and offers, per run: verify after every pass (on by
 * default; a failure names the pass) with the verifier of what the pass made (the graph
 * verifier after a MODULE pass, the executable verifier after `lower`, the kernel table
 * checked against the executable after `codegen`); print after every pass (the module, the
 * memory plans, the bytecode disassembly, the kernel list); time every pass; and check every
 * MODULE pass numerically: the module runs in the reference interpreter before and after the
 * pass on the same random inputs at random symbolic-var values (1, primes, small composites),
 * and a difference beyond tolerance is an error naming the pass, the function and the shapes.
 *
 *     loom_pass_ctx ctx;
 *     loom_pass_ctx_init(&ctx, m, &diags);                   // the CPU target, JIT codegen
 *     loom_pass_id passes[LOOM_PASS_COUNT];
 *     size_t n = loom_pipeline_default(false, LOOM_PASS_codegen, passes);
 *     loom_pass_options o = {.verify_each = true, .time_passes = true};
 *     loom_status s = loom_pipeline_run_ctx(&ctx, passes, n, &o);   // ctx.exe, ctx.kernels
 *     loom_pass_ctx_release(&ctx); */
#ifndef LOOM_DRIVER_PIPELINE_H
#define LOOM_DRIVER_PIPELINE_H

#include <stdbool.h>
#include <stdio.h>

#include "base/diag.h"
#include "driver/lower_vm.h"
#include "graph/graph.h"
#include "graph/memplan.h"
#include "loom_pass.h"
#include "targets/target.h"
#include "vm/exec.h"

typedef enum loom_pass_id {
#define LOOM_PASS(ident, name, level, purpose, requires, invalidates) LOOM_PASS_##ident,
#include "driver/passes.def"
#undef LOOM_PASS
  LOOM_PASS_COUNT
} loom_pass_id;
/* Ids of loaded passes (src/loom_pass.h) follow the built-in ones: LOOM_PASS_COUNT + k. */
#define LOOM_PASS_ID_MAX (LOOM_PASS_COUNT + LOOM_PASS_PLUGIN_MAX)

/* What a pass makes, and so how the manager verifies and prints it. */
typedef enum loom_pass_level {
  LOOM_PASS_LEVEL_MODULE,  /* the graph module (graph verifier; printed as text; checked numerically) */
  LOOM_PASS_LEVEL_PLAN,    /* ctx->plans (printed: storages and peak per function) */
  LOOM_PASS_LEVEL_EXEC,    /* ctx->exe (loom_vm_exec_verify; printed as a disassembly) */
  LOOM_PASS_LEVEL_KERNELS, /* ctx->programs and the code (one kernel per kernel-table entry; listed) */
} loom_pass_level;

/* What every pass works on. The manager sets `out` and `report`; the rest is the caller's
 * (inputs) or the passes' (products, freed by loom_pass_ctx_release). */
typedef struct loom_pass_ctx {
  loom_graph_module *m;            /* the module (MODULE passes change it in place) */
  const loom_target *target;       /* schedule rules and codegen */
  loom_target_options target_opts; /* the target's machine */
  loom_target_emit emit;           /* what `codegen` makes: JIT kernels or an object file */
  const char *object_path;         /* where `codegen` writes with LOOM_TARGET_EMIT_OBJECT */
  loom_diag_list *diags;           /* notes and warnings of the passes (may be NULL) */
  FILE *out;                       /* where reports and printing go */
  bool report;                     /* one-line reports (with print_after_all) */
  struct loom_wcache *wcache;      /* pack: packed weights by content across runs (graph/wcache.h; NULL: none) */
  bool pack_tied;                  /* pack: tied weights get a packed copy too (loom_compile_options.pack_tied) */
  /* products */
  loom_memplan **plans;            /* memplan: one per graph function, in module order */
  size_t nplans;                   /* entries in plans */
  loom_vm_exec *exe;               /* lower: the executable; its kernel table names programs of m */
  loom_lower_hostops hostops;      /* lower: the calls of m its HOSTOP i runs (strings; src/driver/hostop.c) */
  const loom_tp_func **programs;   /* codegen: the program of each kernel-table entry, in order */
  uint32_t nprograms;              /* entries in programs (== exe->nkernels) */
  loom_target_emit made;           /* what codegen made last (NONE: it has not run) */
  loom_target_code *code;          /* codegen, JIT: the code the kernels live in (made once) */
  loom_artifact_kernel *kernels;   /* codegen, JIT: the kernel of each kernel-table entry, for the runtime */
  bool object_written;             /* codegen, object: object_path holds every kernel */
  double ms[LOOM_PASS_ID_MAX];     /* wall-clock milliseconds of each pass's last run */
} loom_pass_ctx;

/* The signature of every pass. */
typedef loom_status (*loom_pass_fn)(loom_pass_ctx *ctx);

typedef struct loom_pass_info {
  const char *name;        /* as `loom opt --passes` takes it */
  loom_pass_level level;   /* what it makes */
  const char *purpose;     /* one line */
  const char *requires;    /* what must hold before it */
  const char *invalidates; /* what it changes */
  loom_pass_fn run;        /* the pass (passes.c); NULL for a loaded one */
  const loom_plugin_pass *plugin; /* a loaded pass (pass_plugin.c): run on ctx->m; NULL when built in */
} loom_pass_info;

/* The pass `id`: built in (passes.def) or loaded (LOOM_PASS_COUNT + k). */
const loom_pass_info *loom_pass_info_of(loom_pass_id id);
/* The pass named `name` (len bytes), built in or loaded; false when unknown. */
bool loom_pass_lookup(const char *name, size_t len, loom_pass_id *out);
/* Passes known now: the built-in ones and those loaded (ids 0 .. count-1). */
size_t loom_pass_count(void);
/* Loaded passes (pass_plugin.c; loom_pass_plugin_load in src/loom_pass.h loads them). */
size_t loom_pass_plugin_count(void);
const loom_pass_info *loom_pass_plugin_info(size_t k);

/* A context on `m` for the CPU target with JIT codegen; no products yet. */
void loom_pass_ctx_init(loom_pass_ctx *ctx, loom_graph_module *m, loom_diag_list *diags);
/* Frees the products (plans, executable, kernels, JIT code); the module stays. */
void loom_pass_ctx_release(loom_pass_ctx *ctx);

typedef struct loom_pass_options {
  bool print_after_all;  /* print what each pass made (module, plans, bytecode, kernels) */
  bool verify_each;      /* verify after every pass (default true) */
  bool time_passes;      /* report each pass's time */
  FILE *out;             /* where printing and reports go (stdout when NULL) */
  int check_numerics;    /* > 0: check every MODULE pass numerically on this many random shape sets */
} loom_pass_options;

/* Runs `passes[0..n)` on ctx. A pass whose input is missing (`lower` before `memplan`) is
 * an error naming both. A verifier failure after a pass is an error naming the pass. */
loom_status loom_pipeline_run_ctx(loom_pass_ctx *ctx, const loom_pass_id *passes, size_t n,
                                  const loom_pass_options *opts);
/* The same on a module alone (a context made and released around the run). Notes and
 * warnings of the passes go to `diags`. */
loom_status loom_pipeline_run(loom_graph_module *m, const loom_pass_id *passes, size_t n,
                              const loom_pass_options *opts, loom_diag_list *diags);

/* The default pipeline (the list in pipeline.c) up to and including `last`, into out:
 * `offload` is in it when asked. LOOM_PASS_schedule ends with the scheduled module (what
 * `loom opt` prints), LOOM_PASS_lower with the executable, LOOM_PASS_codegen with kernels. */
size_t loom_pipeline_default(bool offload, loom_pass_id last, loom_pass_id out[LOOM_PASS_COUNT]);

/* The target named `name` (NULL: "cpu"). Unknown names and targets not built yet (cuda)
 * are errors that say so and list the targets there are. */
loom_status loom_pipeline_target(const char *name, const loom_target **out);

/* ---- numeric checking of passes ------------------------------------------------------- */

/* Tolerance of the check on floating-point elements: |a - b| <= tol * (|a| + max |A|), A the
 * whole tensor before the pass (a long f32 sum rounds relative to its largest terms, not to
 * each result). Integers, bools and shapes must be equal; NaN matches only NaN. */
#define LOOM_PIPELINE_CHECK_RTOL 1e-3

typedef struct loom_pipeline_check loom_pipeline_check;

/* Makes `samples` input sets for every function of m whose parameters have known struct
 * info (the first at every symbolic var = 1, the second at primes, the rest random from
 * {1, 2, 3, 4, 5, 7, 8, 11, 13, 16}; even sets hold float data in [-1, 1), odd sets in
 * [0.25, 1.25), integers lie in [0, smallest var value)) and records each function's result on
 * them. Sets the reference interpreter rejects (a guard fails, an index is out of range, an
 * extern) or whose result is not finite are left out; a function with no usable set gets a
 * note in `diags`. */
loom_status loom_pipeline_check_begin(loom_graph_module *m, int samples, uint64_t seed, loom_diag_list *diags,
                                      loom_pipeline_check **out);
/* Runs the module again on every recorded input set and compares with the recorded result;
 * a difference (or a new failure) is an error naming `pass`, the function, the symbolic var
 * values and the first differing element. The new results become the reference. */
loom_status loom_pipeline_check_after(loom_pipeline_check *c, const char *pass);
/* Number of (function, input set) pairs being checked. */
size_t loom_pipeline_check_count(const loom_pipeline_check *c);
void loom_pipeline_check_end(loom_pipeline_check *c);

#endif

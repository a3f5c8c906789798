/* pipeline.h — the pass manager and the compile pipeline.
 *
 * A pass is a function over one module with a name, a one-line purpose, what it
 * requires and what it invalidates (passes.def). The manager runs a list of passes
 * and offers, per run: print the module after every pass, verify after every pass
 * (on by default; a failure names the pass), and time every pass. */
#ifndef LOOM_DRIVER_PIPELINE_H
#define LOOM_DRIVER_PIPELINE_H

#include <stdbool.h>
#include <stdio.h>

#include "base/diag.h"
#include "graph/graph.h"

typedef enum loom_pass_id {
#define LOOM_PASS(ident, name, purpose, requires, invalidates) LOOM_PASS_##ident,
#include "driver/passes.def"
#undef LOOM_PASS
  LOOM_PASS_COUNT
} loom_pass_id;

typedef struct loom_pass_info {
  const char *name;
  const char *purpose;
  const char *requires;
  const char *invalidates;
} loom_pass_info;

const loom_pass_info *loom_pass_info_of(loom_pass_id id);
/* The pass named `name` (len bytes); false when unknown. */
bool loom_pass_lookup(const char *name, size_t len, loom_pass_id *out);

typedef struct loom_pass_options {
  bool print_after_all;  /* print the module after every pass */
  bool verify_each;      /* verify after every pass (default true) */
  bool time_passes;      /* report each pass's time */
  FILE *out;             /* where printing and reports go (stdout when NULL) */
} loom_pass_options;

/* Runs `passes[0..n)` on `m`. Notes and warnings of the passes go to `diags`. A verifier
 * failure after a pass is an error naming the pass. */
loom_status loom_pipeline_run(loom_graph_module *m, const loom_pass_id *passes, size_t n,
                              const loom_pass_options *opts, loom_diag_list *diags);

/* The default pipeline, in order (one readable list in pipeline.c). */
size_t loom_pipeline_default(const loom_pass_id **out);

#endif

/* pipeline.h — the pass manager and the compile pipeline.
 *
 * A pass is a function over one module with a name, a one-line purpose, what it
 * requires and what it invalidates (passes.def). The manager runs a list of passes
 * and offers, per run: print the module after every pass, verify after every pass
 * (on by default; a failure names the pass), time every pass, and check every pass
 * numerically: the module runs in the reference interpreter before and after the pass on
 * the same random inputs at random symbolic-var values (1, primes, small composites), and
 * a difference beyond tolerance is an error naming the pass, the function and the shapes. */
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
  int check_numerics;    /* > 0: check every pass numerically on this many random shape sets */
} loom_pass_options;

/* Runs `passes[0..n)` on `m`. Notes and warnings of the passes go to `diags`. A verifier
 * failure after a pass is an error naming the pass. */
loom_status loom_pipeline_run(loom_graph_module *m, const loom_pass_id *passes, size_t n,
                              const loom_pass_options *opts, loom_diag_list *diags);

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

/* The default pipeline, in order (one readable list in pipeline.c). */
size_t loom_pipeline_default(const loom_pass_id **out);

#endif

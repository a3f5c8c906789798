/* pipeline.c — the pass manager and THE compile pipeline, one list read top to bottom. */
#include "driver/pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/strbuf.h"
#include "graph/legalize.h"
#include "graph/offload.h"
#include "tensorprog/tp_pattern.h"
#include "tensorprog/tp_schedule_cpu.h"

/* The default pipeline. Each line is a pass of passes.def; later issues add normalize,
 * fold, CSE, DCE, library offload, fuse, merge, schedule, memory planning and VM lowering. */
static const loom_pass_id default_pipeline[] = {
    LOOM_PASS_legalize, /* ops -> call_tp of generated tensor programs */
    LOOM_PASS_schedule, /* default CPU schedules: parallel outer loops, vectorised inner loops */
};

size_t loom_pipeline_default(const loom_pass_id **out) {
  *out = default_pipeline;
  return sizeof default_pipeline / sizeof default_pipeline[0];
}

static const loom_pass_info infos[] = {
#define LOOM_PASS(ident, name, purpose, requires, invalidates) {name, purpose, requires, invalidates},
#include "driver/passes.def"
#undef LOOM_PASS
};
_Static_assert(sizeof infos / sizeof infos[0] == LOOM_PASS_COUNT, "passes.def and the pass table disagree");

const loom_pass_info *loom_pass_info_of(loom_pass_id id) { return &infos[id]; }

bool loom_pass_lookup(const char *name, size_t len, loom_pass_id *out) {
  for (int i = 0; i < LOOM_PASS_COUNT; i++) {
    if (strlen(infos[i].name) == len && !memcmp(infos[i].name, name, len)) {
      *out = (loom_pass_id)i;
      return true;
    }
  }
  return false;
}

/* ---- the passes ------------------------------------------------------------ */

static loom_status run_legalize(loom_graph_module *m, loom_diag_list *diags, FILE *out, bool report) {
  size_t done = 0, kept = 0;
  LOOM_PROPAGATE(loom_graph_legalize(m, diags, &done, &kept));
  if (report) fprintf(out, "// legalize: %zu calls lowered, %zu kept as operators\n", done, kept);
  return LOOM_OK;
}

static loom_status run_schedule(loom_graph_module *m, loom_diag_list *diags, FILE *out, bool report) {
  (void)diags;
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++) {
    loom_tp_func *tp = loom_graph_module_tp_at(m, i);
    loom_strbuf why;
    loom_strbuf_init(&why, NULL);
    loom_status s = loom_tp_schedule_cpu(loom_graph_module_arena(m), loom_graph_module_sym(m), tp, &why);
    if (!s && report) fprintf(out, "// schedule @%s:\n%s", loom_tp_func_name(tp), loom_strbuf_cstr(&why));
    loom_strbuf_free(&why);
    LOOM_RETURN_IF_ERROR(s, "while scheduling @%s", loom_tp_func_name(tp));
  }
  return LOOM_OK;
}

static loom_status run_classify(loom_graph_module *m, loom_diag_list *diags, FILE *out, bool report) {
  (void)diags;
  (void)report;
  for (size_t i = 0; i < loom_graph_module_num_tps(m); i++) {
    loom_tp_func *tp = loom_graph_module_tp_at(m, i);
    loom_tp_class c = loom_tp_classify(tp);
    fprintf(out, "// @%s: %s (%s)\n", loom_tp_func_name(tp), loom_tp_pattern_name(c.pattern), c.reason);
  }
  return LOOM_OK;
}

/* offload: the threshold is LOOM_OFFLOAD_DEFAULT_THRESHOLD rows (measured; docs/libcall.md),
 * or LOOM_OFFLOAD_THRESHOLD from the environment. */
static loom_status run_offload(loom_graph_module *m, loom_diag_list *diags, FILE *out, bool report) {
  (void)diags;
  int64_t thr = LOOM_OFFLOAD_DEFAULT_THRESHOLD;
  const char *env = getenv("LOOM_OFFLOAD_THRESHOLD");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end || v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "LOOM_OFFLOAD_THRESHOLD='%s' is not a row count >= 0", env);
    thr = v;
  }
  loom_graph_offload_stats st;
  LOOM_PROPAGATE(loom_graph_offload(m, thr, &st));
  if (report)
    fprintf(out, "// offload (threshold %lld rows): %zu guarded, %zu to BLAS, %zu kept generated, %zu not BLAS-shaped\n",
            (long long)thr, st.guarded, st.library, st.generated, st.skipped);
  return LOOM_OK;
}

typedef loom_status (*pass_fn)(loom_graph_module *m, loom_diag_list *diags, FILE *out, bool report);

static const pass_fn pass_fns[] = {
#define LOOM_PASS(ident, name, purpose, requires, invalidates) run_##ident,
#include "driver/passes.def"
#undef LOOM_PASS
};
_Static_assert(sizeof pass_fns / sizeof pass_fns[0] == LOOM_PASS_COUNT, "passes.def and pass_fns disagree");

loom_status loom_pipeline_run(loom_graph_module *m, const loom_pass_id *passes, size_t n,
                              const loom_pass_options *opts, loom_diag_list *diags) {
  FILE *out = opts->out ? opts->out : stdout;
  for (size_t i = 0; i < n; i++) {
    const loom_pass_info *info = &infos[passes[i]];
    uint64_t t0 = loom_clock_ns();
    LOOM_RETURN_IF_ERROR(pass_fns[passes[i]](m, diags, out, opts->print_after_all), "while running pass '%s'",
                         info->name);
    uint64_t t1 = loom_clock_ns();
    if (opts->verify_each) {
      loom_diag_list vd;
      loom_diag_list_init(&vd, NULL);
      loom_status s = loom_graph_verify(m, &vd);
      loom_diag_list_destroy(&vd);
      if (s) return loom_status_annotate(s, __FILE__, __LINE__, "the module is ill-formed after pass '%s'", info->name);
    }
    if (opts->time_passes) fprintf(out, "// pass %-10s %8.3f ms\n", info->name, (double)(t1 - t0) / 1e6);
    if (opts->print_after_all) {
      loom_strbuf sb;
      loom_strbuf_init(&sb, NULL);
      loom_graph_print_module(m, &sb);
      fprintf(out, "// ---- after %s ----\n%s", info->name, loom_strbuf_cstr(&sb));
      bool oom = sb.oom;
      loom_strbuf_free(&sb);
      if (oom) return LOOM_OOM();
    }
  }
  return LOOM_OK;
}

/* passes.c — every stage of passes.def behind the one pass signature,
 * `loom_status run(loom_pass_ctx *)`, and the table the pass manager reads (pipeline.c). */
#include <stdlib.h>
#include <string.h>

#include "driver/lower_vm.h"
#include "driver/pipeline.h"
#include "graph/legalize.h"
#include "graph/offload.h"
#include "graph/passes.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_pattern.h"

/* ---- the graph rewrites of graph/passes.h: one adapter for all of them ----------- */

typedef loom_status (*rewrite_fn)(loom_graph_module *m, size_t *rewrites);

/* The rewrites run by the pass `id` (a MODULE pass with a rewrite count). */
static rewrite_fn rewrite_of(loom_pass_id id) {
  switch (id) {
  case LOOM_PASS_normalize: return loom_graph_normalize;
  case LOOM_PASS_simplify: return loom_graph_simplify;
  case LOOM_PASS_fold: return loom_graph_fold;
  case LOOM_PASS_cse: return loom_graph_cse;
  case LOOM_PASS_dce: return loom_graph_dce;
  case LOOM_PASS_attention: return loom_graph_attention;
  case LOOM_PASS_inline: return loom_graph_inline_const_calls;
  default: return NULL;
  }
}

/* Runs the rewrite pass `id` and reports `// <pass>: N rewrites`; each rewrite pass below
 * is this adapter bound to its id. */
static loom_status run_rewrite(loom_pass_ctx *c, loom_pass_id id) {
  size_t n = 0;
  LOOM_PROPAGATE(rewrite_of(id)(c->m, &n));
  if (c->report) fprintf(c->out, "// %s: %zu rewrites\n", loom_pass_info_of(id)->name, n);
  return LOOM_OK;
}

static loom_status pass_normalize(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_normalize); }
static loom_status pass_simplify(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_simplify); }
static loom_status pass_fold(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_fold); }
static loom_status pass_cse(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_cse); }
static loom_status pass_dce(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_dce); }
/* attention: only for targets whose fused attention kernel pays (loom_target.fused_attention). */
static loom_status pass_attention(loom_pass_ctx *c) {
  if (c->target && !c->target->fused_attention) {
    if (c->report) fprintf(c->out, "// attention: kept written out for target '%s'\n", c->target->name);
    return LOOM_OK;
  }
  return run_rewrite(c, LOOM_PASS_attention);
}
static loom_status pass_inline(loom_pass_ctx *c) { return run_rewrite(c, LOOM_PASS_inline); }

/* ---- module passes ------------------------------------------------------------------ */

/* legalize: programs' register tiles for the target's vectors (loom_target.vector_bytes). */
static loom_status pass_legalize(loom_pass_ctx *c) {
  size_t done = 0, kept = 0;
  if (c->target && c->target->vector_bytes) loom_graph_module_set_vector_bytes(c->m, c->target->vector_bytes(&c->target_opts));
  LOOM_PROPAGATE(loom_graph_legalize(c->m, c->diags, &done, &kept));
  if (c->report) fprintf(c->out, "// legalize: %zu calls lowered, %zu kept as operators\n", done, kept);
  return LOOM_OK;
}

/* offload: the threshold is the target's (library_gemm_rows) or LOOM_OFFLOAD_DEFAULT_THRESHOLD
 * rows (measured on the CPU; docs/libcall.md), or LOOM_OFFLOAD_THRESHOLD from the environment. */
static loom_status pass_offload(loom_pass_ctx *c) {
  int64_t thr = c->target && c->target->library_gemm_rows >= 0 ? c->target->library_gemm_rows : LOOM_OFFLOAD_DEFAULT_THRESHOLD;
  const char *env = getenv("LOOM_OFFLOAD_THRESHOLD");
  if (env && *env) {
    char *end;
    long long v = strtoll(env, &end, 10);
    if (*end || v < 0) return LOOM_ERROR(INVALID_ARGUMENT, "LOOM_OFFLOAD_THRESHOLD='%s' is not a row count >= 0", env);
    thr = v;
  }
  loom_graph_offload_stats st;
  LOOM_PROPAGATE(loom_graph_offload(c->m, thr, &st));
  if (c->report)
    fprintf(c->out, "// offload (threshold %lld rows): %zu guarded, %zu to BLAS, %zu kept generated, %zu not BLAS-shaped\n",
            (long long)thr, st.guarded, st.library, st.generated, st.skipped);
  return LOOM_OK;
}

/* pack: the target's panel width; dce then drops the weights the packed ones replaced. */
static loom_status pass_pack(loom_pass_ctx *c) {
  int panel = c->target && c->target->matmul_panel ? c->target->matmul_panel(&c->target_opts) : 0;
  size_t n = 0, dropped = 0;
  loom_target_quads tq = c->target && c->target->int8_quads ? c->target->int8_quads(&c->target_opts) : LOOM_TARGET_QUADS_NONE;
  int quads = tq == LOOM_TARGET_QUADS_EXACT ? LOOM_PACK_QUADS_EXACT : tq == LOOM_TARGET_QUADS_PAIRS ? LOOM_PACK_QUADS_PAIRS : LOOM_PACK_QUADS_NONE;
  LOOM_PROPAGATE(loom_graph_pack_weights_tied(c->m, panel, quads, c->pack_tied, c->wcache, &n));
  if (n) LOOM_PROPAGATE(loom_graph_dce(c->m, &dropped));
  if (c->report) fprintf(c->out, "// pack (panels of %d): %zu weights laid out\n", panel, n);
  return LOOM_OK;
}

static loom_status pass_fuse(loom_pass_ctx *c) {
  loom_graph_fuse_stats st;
  loom_graph_fuse_options o = {.reread_rows = c->target && c->target->reread_rows};
  LOOM_PROPAGATE(loom_graph_fuse_with(c->m, &o, &st));
  if (c->report)
    fprintf(c->out, "// fuse: %zu groups, %zu calls fused into them, %zu merged programs\n", st.groups, st.absorbed,
            st.programs);
  return LOOM_OK;
}

/* share: the target's schedule rule decides whether a group's shared program keeps its schedule. */
static loom_status schedule_one(void *ud, loom_graph_module *m, loom_tp_func *tp) {
  loom_pass_ctx *c = ud;
  loom_strbuf why;
  loom_strbuf_init(&why, NULL);
  loom_status s = c->target->schedule(&c->target_opts, loom_graph_module_arena(m), loom_graph_module_sym(m), tp, &why);
  loom_strbuf_free(&why);
  return s;
}

static loom_status pass_share(loom_pass_ctx *c) {
  size_t n = 0;
  if (c->target && c->target->schedule) LOOM_PROPAGATE(loom_graph_share_programs(c->m, schedule_one, c, &n));
  if (c->report) fprintf(c->out, "// share: %zu programs replaced by shared ones\n", n);
  return LOOM_OK;
}

/* The target's schedule rules on every tensor program. */
static loom_status pass_schedule(loom_pass_ctx *c) {
  for (size_t i = 0; i < loom_graph_module_num_tps(c->m); i++) {
    loom_tp_func *tp = loom_graph_module_tp_at(c->m, i);
    loom_strbuf why;
    loom_strbuf_init(&why, NULL);
    loom_status s = c->target->schedule(&c->target_opts, loom_graph_module_arena(c->m), loom_graph_module_sym(c->m), tp, &why);
    if (!s && c->report) fprintf(c->out, "// schedule @%s:\n%s", loom_tp_func_name(tp), loom_strbuf_cstr(&why));
    loom_strbuf_free(&why);
    LOOM_RETURN_IF_ERROR(s, "while scheduling @%s", loom_tp_func_name(tp));
  }
  return LOOM_OK;
}

static loom_status pass_classify(loom_pass_ctx *c) {
  for (size_t i = 0; i < loom_graph_module_num_tps(c->m); i++) {
    loom_tp_func *tp = loom_graph_module_tp_at(c->m, i);
    loom_tp_class k = loom_tp_classify(tp);
    fprintf(c->out, "// @%s: %s (%s)\n", loom_tp_func_name(tp), loom_tp_pattern_name(k.pattern), k.reason);
  }
  return LOOM_OK;
}

/* ---- memory planning, VM lowering, codegen ------------------------------------------ */

static void free_plans(loom_pass_ctx *c) {
  for (size_t i = 0; i < c->nplans; i++) loom_memplan_free(c->plans[i]);
  free(c->plans);
  c->plans = NULL;
  c->nplans = 0;
}

/* One plan per graph function (graph/memplan.h). */
static loom_status pass_memplan(loom_pass_ctx *c) {
  free_plans(c);
  size_t n = loom_graph_module_num_funcs(c->m);
  c->plans = calloc(n + 1, sizeof *c->plans);
  if (!c->plans) return LOOM_OOM();
  c->nplans = n;
  for (size_t i = 0; i < n; i++) LOOM_PROPAGATE(loom_memplan_build(c->m, loom_graph_module_func_at(c->m, i), &c->plans[i]));
  return LOOM_OK;
}

static loom_status pass_lower(loom_pass_ctx *c) {
  if (c->nplans != loom_graph_module_num_funcs(c->m))
    return LOOM_ERROR(FAILED_PRECONDITION, "pass 'lower' needs the memory plans: run 'memplan' before it");
  loom_vm_exec_free(c->exe);
  c->exe = NULL;
  return loom_status_annotate(loom_lower_vm(c->m, c->plans, &c->hostops, &c->exe), __FILE__, __LINE__, "while lowering to the VM");
}

/* The executable's kernels through the target: JIT-compiled and loaded (ctx->code,
 * ctx->kernels; once), or written to ctx->object_path. ctx->programs lists the programs in
 * kernel-table order either way. */
static loom_status pass_codegen(loom_pass_ctx *c) {
  if (!c->exe) return LOOM_ERROR(FAILED_PRECONDITION, "pass 'codegen' needs the VM executable: run 'lower' before it");
  if (c->emit == LOOM_TARGET_EMIT_NONE) return LOOM_ERROR(INVALID_ARGUMENT, "pass 'codegen': no output asked for (JIT or object)");
  if (c->emit == LOOM_TARGET_EMIT_OBJECT && !c->object_path)
    return LOOM_ERROR(INVALID_ARGUMENT, "pass 'codegen': no object file to write");
  if (c->emit == LOOM_TARGET_EMIT_JIT && c->code)
    return LOOM_ERROR(FAILED_PRECONDITION, "pass 'codegen': the kernels are JIT-compiled already");
  uint32_t n = c->exe->nkernels;
  free(c->programs);
  c->nprograms = 0;
  c->made = LOOM_TARGET_EMIT_NONE;
  c->programs = calloc(n + 1, sizeof *c->programs);
  if (!c->programs) return LOOM_OOM();
  for (uint32_t k = 0; k < n; k++) {
    const char *name = loom_vm_exec_str(c->exe, c->exe->kernels[k].name);
    c->programs[k] = loom_graph_module_find_tp(c->m, name);
    if (!c->programs[k]) return LOOM_ERROR(INTERNAL, "kernel '%s' has no tensor program in the module", name);
  }
  c->nprograms = n;
  loom_sym_ctx *cx = loom_graph_module_sym(c->m);
  if (c->emit == LOOM_TARGET_EMIT_OBJECT) {
    c->object_written = false;
    LOOM_PROPAGATE(c->target->emit_object(&c->target_opts, cx, c->programs, n, c->object_path));
    c->object_written = true;
  } else {
    loom_kernel_fn *fns = calloc(n + 1, sizeof *fns);
    loom_artifact_kernel *ks = calloc(n + 1, sizeof *ks);
    loom_status st = !fns || !ks ? LOOM_OOM() : c->target->jit(&c->target_opts, cx, c->programs, n, &c->code, fns);
    for (uint32_t k = 0; !st && k < n; k++)
      ks[k] = (loom_artifact_kernel){loom_tp_func_name(c->programs[k]), fns[k], c->exe->kernels[k].sig, c->exe->kernels[k].nsig};
    free(fns);
    if (st) {
      free(ks);
      return st;
    }
    c->kernels = ks;
  }
  c->made = c->emit;
  return LOOM_OK;
}

/* ---- the table ------------------------------------------------------------------------ */

static const loom_pass_info infos[] = {
#define LOOM_PASS(ident, name, level, purpose, requires, invalidates) \
  {name, LOOM_PASS_LEVEL_##level, purpose, requires, invalidates, pass_##ident, NULL},
#include "driver/passes.def"
#undef LOOM_PASS
};
_Static_assert(sizeof infos / sizeof infos[0] == LOOM_PASS_COUNT, "passes.def and the pass table disagree");

const loom_pass_info *loom_pass_info_of(loom_pass_id id) {
  return id < LOOM_PASS_COUNT ? &infos[id] : loom_pass_plugin_info((size_t)id - LOOM_PASS_COUNT);
}

size_t loom_pass_count(void) { return LOOM_PASS_COUNT + loom_pass_plugin_count(); }

bool loom_pass_lookup(const char *name, size_t len, loom_pass_id *out) {
  size_t n = loom_pass_count();
  for (size_t i = 0; i < n; i++) {
    const char *have = loom_pass_info_of((loom_pass_id)i)->name;
    if (strlen(have) == len && !memcmp(have, name, len)) {
      *out = (loom_pass_id)i;
      return true;
    }
  }
  return false;
}

void loom_pass_ctx_init(loom_pass_ctx *ctx, loom_graph_module *m, loom_diag_list *diags) {
  memset(ctx, 0, sizeof *ctx);
  ctx->m = m;
  ctx->target = &loom_target_cpu;
  ctx->emit = LOOM_TARGET_EMIT_JIT;
  ctx->diags = diags;
  ctx->out = stdout;
}

void loom_pass_ctx_release(loom_pass_ctx *ctx) {
  free_plans(ctx);
  loom_vm_exec_free(ctx->exe);
  ctx->exe = NULL;
  LOOM_VEC_FREE(NULL, &ctx->hostops);
  free(ctx->programs);
  ctx->programs = NULL;
  ctx->nprograms = 0;
  if (ctx->code) ctx->target->code_free(ctx->code);
  ctx->code = NULL;
  free(ctx->kernels);
  ctx->kernels = NULL;
  ctx->made = LOOM_TARGET_EMIT_NONE;
  ctx->object_written = false;
}

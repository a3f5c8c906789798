/* target_cpu.c — the CPU target (targets/target.h): the CPU schedule rules, LLVM codegen
 * (codegen.h) in process or to an ELF object, and the AOT artifact: the object and the
 * executable linked by the system's C compiler driver into one shared object exporting
 * LOOM_ARTIFACT_SYMBOL, which loom_rt_open loads with the dynamic loader. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/file.h"
#include "targets/cpu/codegen.h"
#include "targets/cpu/link.h"
#include "targets/target.h"
#include "tensorprog/tp.h"
#include "tensorprog/tp_schedule_cpu.h"

static loom_cpu_options cpu_options(const loom_target_options *o) {
  return (loom_cpu_options){.cpu = o ? o->arch : NULL, .features = o ? o->features : NULL};
}

/* The CPU schedule rules with register tiles sized for the machine's vectors. */
static loom_status cpu_schedule(const loom_target_options *o, loom_arena *a, loom_sym_ctx *cx, loom_tp_func *f,
                                loom_strbuf *why) {
  loom_cpu_options co = cpu_options(o);
  loom_tp_cpu_params p = {.vector_bytes = loom_cpu_vector_bytes(&co), .splits_512 = loom_cpu_splits_512(&co)};
  return loom_tp_schedule_cpu_for(a, cx, f, &p, why);
}

static int cpu_vector_bytes(const loom_target_options *o) {
  loom_cpu_options co = cpu_options(o);
  return loom_cpu_vector_bytes(&co);
}

/* Two vectors of f32: the widest panel of the matmul rule (tensorprog/schedule_cpu.c). */
static int cpu_matmul_panel(const loom_target_options *o) {
  loom_cpu_options co = cpu_options(o);
  return loom_cpu_vector_bytes(&co) / 2;
}

static loom_target_quads cpu_int8_quads(const loom_target_options *o) {
  loom_cpu_options co = cpu_options(o);
  return loom_cpu_has_vnni512(&co) ? LOOM_TARGET_QUADS_EXACT : loom_cpu_has_avx2(&co) ? LOOM_TARGET_QUADS_PAIRS : LOOM_TARGET_QUADS_NONE;
}


/* What the cache did into the caller's stats. */
static void note_stats(const loom_target_options *o, const loom_cpu_cache_stats *cs) {
  if (o && o->stats)
    *o->stats = (loom_target_cache_stats){.kernels = cs->kernels, .unique = cs->unique, .hits = cs->hits,
                                          .compiled = cs->compiled, .rejected = cs->rejected};
}

static loom_status cpu_jit(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                           loom_target_code **out_code, loom_kernel_fn *out_fns) {
  *out_code = NULL;
  loom_cpu_options co = cpu_options(o);
  loom_cpu_jit *jit;
  LOOM_PROPAGATE(loom_cpu_jit_create(&co, &jit));
  loom_cpu_cache_stats cs = {0};
  loom_status st = n ? loom_cpu_jit_compile_cached(jit, cx, fs, n, o ? o->cache : NULL, out_fns, &cs) : LOOM_OK;
  note_stats(o, &cs);
  if (st) {
    loom_cpu_jit_destroy(jit);
    return st;
  }
  *out_code = (loom_target_code *)jit;
  return LOOM_OK;
}

static void cpu_code_free(loom_target_code *code) {
  if (code) loom_cpu_jit_destroy((loom_cpu_jit *)code);
}

/* The kernels as an archive of one object per distinct content (cg_cache.c) at `path`, and
 * each program's kernel symbol, one per line, in `path`.syms (what cpu_link_artifact reads). */
static loom_status cpu_emit_object(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                   size_t n, const char *path) {
  loom_cpu_options co = cpu_options(o);
  loom_strbuf syms;
  loom_strbuf_init(&syms, NULL);
  loom_cpu_cache_stats cs = {0};
  loom_status st = loom_cpu_emit_archive(&co, cx, fs, n, o ? o->cache : NULL, path, &syms, &cs);
  note_stats(o, &cs);
  if (!st) {
    char sp[4200];
    snprintf(sp, sizeof sp, "%s.syms", path);
    st = loom_link_write_text(sp, loom_strbuf_cstr(&syms));
  }
  loom_strbuf_free(&syms);
  return st;
}

/* ---- the artifact ------------------------------------------------------------ */

/* The artifact: the executable included with `.incbin` (blob.S), a descriptor naming every
 * kernel symbol (desc.c), and the object, linked with `cc -shared` ($LOOM_CC overrides,
 * clang-19 is the fallback) into workdir/out.so, then `out_path`'s caller moves it. */
static loom_status cpu_link_artifact(const loom_target_artifact *a, const char *workdir, const char *out_path) {
  /* each kernel's symbol, as cpu_emit_object listed them */
  char syms_path[4200];
  snprintf(syms_path, sizeof syms_path, "%s.syms", a->object);
  char *symtext = NULL;
  size_t symlen = 0;
  char **syms = calloc(a->nkernels + 1, sizeof *syms);
  loom_status st = syms ? loom_file_read(syms_path, &symtext, &symlen) : LOOM_OOM();
  for (uint32_t k = 0; !st && k < a->nkernels; k++) {
    char *line = k ? strchr(syms[k - 1], '\0') + 1 : symtext;
    char *nl = line < symtext + symlen ? strchr(line, '\n') : NULL;
    if (!nl) {
      st = LOOM_ERROR(INTERNAL, "'%s' lists fewer than %u kernel symbols", syms_path, a->nkernels);
      break;
    }
    *nl = '\0';
    syms[k] = line;
  }
  loom_strbuf protos;
  loom_strbuf_init(&protos, NULL);
  for (uint32_t k = 0; !st && k < a->nkernels; k++)
    loom_strbuf_printf(&protos, "int32_t %s(void *const *, const int64_t *, const void *);\n", syms[k]);
  /* the archive after what refers to its members */
  const char *objects[] = {a->object, NULL};
  if (!st) st = protos.oom ? LOOM_OOM() : loom_link_artifact(a, workdir, out_path, LOOM_ARTIFACT_MAGIC2, NULL,
                                                             loom_strbuf_cstr(&protos), (const char *const *)syms, objects);
  loom_strbuf_free(&protos);
  free(syms);
  free(symtext);
  return st;
}

const loom_target loom_target_cpu = {
    .name = "cpu",
    .summary = "this machine's CPU (or --cpu NAME) through LLVM: parallel outer loops, vectorised inner loops",
    .device = "cpu",
    .library_gemm_rows = -1,
    .fused_attention = true,
    .schedule = cpu_schedule,
    .vector_bytes = cpu_vector_bytes,
    .matmul_panel = cpu_matmul_panel,
    .int8_quads = cpu_int8_quads,
    .jit = cpu_jit,
    .code_free = cpu_code_free,
    .emit_object = cpu_emit_object,
    .kernel_symbol = loom_cpu_kernel_symbol,
    .link_artifact = cpu_link_artifact,
};

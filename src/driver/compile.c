/* compile.c — the public compile API (src/loom.h): THE pipeline of pipeline.c on one
 * context — passes, memory planning, VM lowering, codegen through the chosen target (JIT in
 * process, or an object the target links into an AOT artifact). */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/file.h"
#include "driver/hostop.h"
#include "driver/pipeline.h"
#include "frontend/onnx/onnx_import.h"
#include "graph/wcache.h"
#include "libcall/libcall.h"
#include "targets/cpu/kcache.h"
#include "loom.h"
#include "tensorprog/tp.h"

struct loom_compiled {
  loom_graph_module *m;
  bool owns_module;
  loom_pass_ctx ctx;               /* the pipeline's context: plans, executable, kernels */
  loom_pass_options po;            /* how its passes run (verify, print, time), also those run later */
  char *arch, *features;           /* copies of the options' strings (ctx.target_opts points here) */
  char workdir[64];                /* scratch directory for the object and the artifact ("" until needed) */
  char object_path[128];           /* workdir/kernels.o */
  loom_libcall_lib *externs;       /* the module's declared externs, loaded by the first open */
  loom_kcache *cache;              /* the kernel cache (NULL with no_cache) */
  loom_wcache *wcache;             /* the packed-weight cache, in the kernel cache's directory (NULL with no_cache) */
  loom_target_cache_stats cstats;  /* what it did in codegen's last run */
  loom_compile_times times;
  loom_driver_hostops host;        /* the runtime's host operators (ctx.hostops of m), set by loom_compiled_open */
};

/* Removes the scratch directory and what the target wrote into it. */
static void remove_workdir(loom_compiled *c) {
  if (!c->workdir[0]) return;
  DIR *d = opendir(c->workdir);
  struct dirent *e;
  char p[4200];
  while (d && (e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    snprintf(p, sizeof p, "%s/%s", c->workdir, e->d_name);
    unlink(p);
  }
  if (d) closedir(d);
  rmdir(c->workdir);
  c->workdir[0] = '\0';
  c->ctx.object_path = NULL;
  c->ctx.object_written = false;
}

static loom_status make_workdir(loom_compiled *c) {
  if (c->workdir[0]) return LOOM_OK;
  snprintf(c->workdir, sizeof c->workdir, "/tmp/loom-aot-XXXXXX");
  if (!mkdtemp(c->workdir)) {
    c->workdir[0] = '\0';
    return LOOM_ERROR(IO_ERROR, "cannot make a temporary directory: %s", strerror(errno));
  }
  snprintf(c->object_path, sizeof c->object_path, "%s/kernels.o", c->workdir);
  c->ctx.object_path = c->object_path;
  return LOOM_OK;
}

void loom_compiled_free(loom_compiled *c) {
  if (!c) return;
  loom_pass_ctx_release(&c->ctx);
  remove_workdir(c);
  loom_libcall_lib_destroy(c->externs);
  loom_kcache_close(c->cache);
  loom_wcache_close(c->wcache);
  free(c->arch);
  free(c->features);
  if (c->owns_module) loom_graph_module_destroy(c->m);
  free(c);
}

const loom_vm_exec *loom_compiled_exec(const loom_compiled *c) { return c->ctx.exe; }
loom_graph_module *loom_compiled_module(const loom_compiled *c) { return c->m; }
loom_compile_times loom_compiled_times(const loom_compiled *c) { return c->times; }

/* The stage times of ctx into c->times (codegen: its last run, plus `extra_ms` of linking). */
static void note_times(loom_compiled *c, double extra_ms) {
  double passes = 0;
  for (int i = 0; i < LOOM_PASS_COUNT; i++)
    if (loom_pass_info_of((loom_pass_id)i)->level == LOOM_PASS_LEVEL_MODULE) passes += c->ctx.ms[i];
  c->times.passes_ms = passes;
  c->times.lower_ms = c->ctx.ms[LOOM_PASS_memplan] + c->ctx.ms[LOOM_PASS_lower];
  c->times.codegen_ms = c->ctx.ms[LOOM_PASS_codegen] + extra_ms;
  c->times.kernels = c->cstats.kernels;
  c->times.kernels_unique = c->cstats.unique;
  c->times.cache_hits = c->cstats.hits;
  c->times.kernels_compiled = c->cstats.compiled;
  c->times.cache_rejected = c->cstats.rejected;
  loom_wcache_stats ws = loom_wcache_stats_of(c->wcache);
  c->times.packed_hits = ws.hits;
  c->times.packed_stored = ws.stored;
  c->times.packed_rejected = ws.rejected;
  c->times.packed_bytes_mapped = ws.bytes_mapped;
  c->times.sources_by_id = ws.memo_hits;
  c->times.sources_read = ws.memo_misses;
  c->times.sources_remembered = ws.memo_stored;
}

/* Runs the codegen pass, making `emit`, unless it is made already. */
static loom_status run_codegen(loom_compiled *c, loom_target_emit emit) {
  if (emit == LOOM_TARGET_EMIT_JIT ? c->ctx.code != NULL : c->ctx.object_written) return LOOM_OK;
  if (emit == LOOM_TARGET_EMIT_OBJECT) LOOM_PROPAGATE(make_workdir(c));
  c->ctx.emit = emit;
  static const loom_pass_id codegen[] = {LOOM_PASS_codegen};
  return loom_pipeline_run_ctx(&c->ctx, codegen, 1, &c->po);
}

#define ABI_FIELD(f) LOOM_ABI_FIELD(loom_compile_options, f)
static const loom_abi_field compile_abi[] = {
    ABI_FIELD(target),   ABI_FIELD(cpu),    ABI_FIELD(features), ABI_FIELD(emit),     ABI_FIELD(print_after_all),
    ABI_FIELD(time_passes), ABI_FIELD(no_verify), ABI_FIELD(offload), ABI_FIELD(report), ABI_FIELD(no_cache),
    ABI_FIELD(pack_tied), ABI_FIELD(cache_dir), LOOM_ABI_END(loom_compile_options),
};

const loom_abi_field *loom_compile_abi(size_t *n) {
  *n = sizeof compile_abi / sizeof compile_abi[0];
  return compile_abi;
}

loom_status loom_compile(loom_graph_module *m, const loom_compile_options *opts, loom_compiled **out) {
  *out = NULL;
  static const loom_compile_options none = {0};
  if (!opts) opts = &none;
  const loom_target *target;
  LOOM_PROPAGATE(loom_pipeline_target(opts->target, &target));
  loom_compiled *c = calloc(1, sizeof *c);
  if (!c) return LOOM_OOM();
  c->m = m;
  loom_pass_ctx_init(&c->ctx, m, NULL);
  c->ctx.target = target;
  /* "cuda:sm_90": the machine after the colon, unless opts->cpu names it (then they must agree) */
  const char *colon = opts->target ? strchr(opts->target, ':') : NULL, *arch = opts->cpu;
  if (colon && arch && strcmp(arch, colon + 1)) {
    loom_compiled_free(c);
    return LOOM_ERROR(INVALID_ARGUMENT, "target '%s' names machine '%s' but the cpu option names '%s'", opts->target,
                      colon + 1, arch);
  }
  if (colon) arch = colon + 1;
  if ((arch && !(c->arch = strdup(arch))) || (opts->features && !(c->features = strdup(opts->features)))) {
    loom_compiled_free(c);
    return LOOM_OOM();
  }
  if (!opts->no_cache) {
    loom_strbuf warn;
    loom_strbuf_init(&warn, NULL);
    c->cache = loom_kcache_open(opts->cache_dir, 0, &warn);
    if (warn.len) fprintf(opts->report ? opts->report : stderr, "warning: %s\n", loom_strbuf_cstr(&warn));
    loom_strbuf_free(&warn);
    if (loom_kcache_usable(c->cache) && !(c->wcache = loom_wcache_open(loom_kcache_dir(c->cache), 0))) {
      loom_compiled_free(c);
      return LOOM_OOM();
    }
    c->ctx.wcache = c->wcache;
  }
  c->ctx.pack_tied = opts->pack_tied;
  c->ctx.target_opts = (loom_target_options){.arch = c->arch, .features = c->features, .cache = c->cache,
                                             .stats = &c->cstats};
  c->po = (loom_pass_options){.print_after_all = opts->print_after_all, .verify_each = !opts->no_verify,
                              .time_passes = opts->time_passes, .out = opts->report ? opts->report : stderr};
  loom_status st = opts->emit == LOOM_TARGET_EMIT_OBJECT ? make_workdir(c) : LOOM_OK;
  c->ctx.emit = opts->emit;
  loom_pass_id passes[LOOM_PASS_COUNT];
  size_t n = loom_pipeline_default(opts->offload || target->library_gemm_rows >= 0, opts->emit == LOOM_TARGET_EMIT_NONE ? LOOM_PASS_lower : LOOM_PASS_codegen,
                                   passes);
  loom_diag_list diags;
  loom_diag_list_init(&diags, NULL);
  c->ctx.diags = &diags;
  if (!st) st = loom_pipeline_run_ctx(&c->ctx, passes, n, &c->po);
  c->ctx.diags = NULL;
  /* an operator legalize kept cannot be lowered: say why legalize kept it (its notes) */
  for (size_t i = 0, shown = 0; st && loom_status_code(st) == LOOM_CODE_UNIMPLEMENTED && i < diags.items.len && shown < 4; i++) {
    if (!strstr(diags.items.data[i].message, "kept as an operator")) continue;
    char *d = loom_diag_format(&diags.items.data[i]);
    st = loom_status_annotate(st, __FILE__, __LINE__, "legalize: %s", d ? d : diags.items.data[i].message);
    free(d);
    shown++;
  }
  loom_diag_list_destroy(&diags);
  note_times(c, 0);
  if (st) {
    loom_compiled_free(c);
    return st;
  }
  *out = c;
  return LOOM_OK;
}

/* An ONNX model: loaded, imported to @main, verified. */
static loom_status load_onnx(const char *path, loom_graph_module **m) {
  loom_onnx_model *model;
  LOOM_PROPAGATE(loom_onnx_model_load(path, &model));
  loom_status st = loom_onnx_import_adopting(model, m); /* the module keeps the model: weights not copied */
  if (st) return st;
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  st = loom_graph_verify(*m, &dl);
  if (st && dl.errors) {
    loom_status_free(st);
    st = loom_diag_list_status(&dl, LOOM_CODE_INVALID_ARGUMENT);
  }
  loom_diag_list_destroy(&dl);
  return st;
}

loom_status loom_compile_file(const char *path, const loom_compile_options *opts, loom_compiled **out) {
  *out = NULL;
  size_t plen = strlen(path);
  if (plen >= 5 && !strcmp(path + plen - 5, ".onnx")) {
    loom_graph_module *m = NULL;
    loom_status st = load_onnx(path, &m);
    if (!st) st = loom_compile(m, opts, out);
    if (st) {
      loom_graph_module_destroy(m);
      return loom_status_annotate(st, __FILE__, __LINE__, "while compiling '%s'", path);
    }
    (*out)->owns_module = true;
    return LOOM_OK;
  }
  char *text;
  size_t len;
  LOOM_PROPAGATE(loom_file_read_limited(path, "module", LOOM_FILE_LIMIT_TEXT, &text, &len));
  loom_graph_module *m = NULL;
  loom_status st = loom_module_load_buffer(text, len, path, "loom", &m); /* parsed and verified (api_bind.c) */
  free(text);
  if (!st) st = loom_compile(m, opts, out);
  if (st) {
    loom_graph_module_destroy(m);
    return st;
  }
  (*out)->owns_module = true;
  return LOOM_OK;
}

loom_status loom_compile_buffer(const void *bytes, size_t len, const char *name, const char *format,
                                const loom_compile_options *opts, loom_compiled **out) {
  *out = NULL;
  loom_graph_module *m;
  LOOM_PROPAGATE(loom_module_load_buffer(bytes, len, name, format, &m));
  loom_status st = loom_compile(m, opts, out);
  if (st) {
    loom_graph_module_destroy(m);
    return st;
  }
  (*out)->owns_module = true;
  return LOOM_OK;
}

/* Loads the externs the module declares (libcall/), once. */
static loom_status load_externs(loom_compiled *c) {
  if (c->externs || !loom_graph_module_num_externs(c->m)) return LOOM_OK;
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(c->m, &a, &sigs, &n);
  loom_libcall_options lo = {.search_dir = loom_graph_module_source_dir(c->m), .device = c->ctx.target->device};
  if (!st) st = loom_libcall_lib_create(NULL, sigs, (uint32_t)n, &lo, &c->externs);
  if (!st) st = loom_libcall_lib_check_exec(c->externs, c->ctx.exe);
  loom_arena_destroy(&a);
  return st;
}

loom_status loom_compiled_open(loom_compiled *c, const loom_rt_options *opts, loom_rt **out) {
  *out = NULL;
  loom_status cs = run_codegen(c, LOOM_TARGET_EMIT_JIT);
  note_times(c, 0);
  LOOM_PROPAGATE(cs);
  LOOM_PROPAGATE(load_externs(c));
  loom_rt_options o = opts ? *opts : (loom_rt_options){0};
  o.device = c->ctx.target->device; /* the target's kernels run there */
  o.kernels = c->ctx.kernels;
  o.nkernels = c->ctx.nprograms;
  if (c->ctx.hostops.len) { /* the string operators: run here, by the interpreter's implementation */
    c->host = (loom_driver_hostops){.m = c->m, .calls = &c->ctx.hostops};
    o.hostop = loom_driver_hostop, o.hostop_ctx = &c->host;
  }
  if (c->externs && !o.nexterns) o.externs = loom_libcall_lib_externs(c->externs, &o.nexterns);
  /* the runtime owns its executable: hand it a copy whose DATA (the weights) is the compiled
   * executable's, which outlives the runtime (loom.h) */
  loom_vm_exec *copy;
  LOOM_PROPAGATE(loom_vm_exec_clone_sharing_data(NULL, c->ctx.exe, &copy));
  return loom_rt_open_exec(copy, &o, out);
}

/* ---- AOT ------------------------------------------------------------------- */

/* The module's extern signatures (libcall's text form), or NULL text when there are none. */
static loom_status externs_text(loom_compiled *c, loom_strbuf *text, bool *any) {
  *any = loom_graph_module_num_externs(c->m) > 0;
  if (!*any) return LOOM_OK;
  loom_arena a;
  loom_arena_init(&a, NULL, 0);
  loom_libcall_sig *sigs;
  size_t n;
  loom_status st = loom_graph_module_libcall_sigs(c->m, &a, &sigs, &n);
  if (!st) loom_libcall_sigs_encode(sigs, (uint32_t)n, text);
  if (!st && text->oom) st = LOOM_OOM();
  loom_arena_destroy(&a);
  return st;
}

/* Moves the linked artifact `from` to `path` (copying across file systems). */
static loom_status move_into_place(const char *from, const char *path) {
  if (rename(from, path) == 0) return LOOM_OK;
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  char *data = NULL;
  size_t dlen = 0;
  loom_status st = loom_file_read_limited(from, "artifact", LOOM_FILE_LIMIT_ARTIFACT, &data, &dlen);
  if (!st) {
    FILE *f = fopen(tmp, "wb");
    bool ok = f && fwrite(data, 1, dlen, f) == dlen;
    if (f) ok &= fclose(f) == 0;
    if (ok) chmod(tmp, 0755);
    if (!ok || rename(tmp, path) != 0) {
      unlink(tmp);
      st = LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
    }
  }
  free(data);
  return st;
}

/* The object (the codegen pass, unless `loom_compile` made it), then the target links it
 * with the executable into one file, sealed (vm/artifact.h: the trailer with the content
 * hash, signed with `key` when given) and moved into place under `path`. */
loom_status loom_compiled_save_signed(loom_compiled *c, const char *path, const loom_vm_artifact_seckey *key) {
  if (c->ctx.hostops.len) /* docs/vm.md "Host operators" */
    return LOOM_ERROR(UNIMPLEMENTED, "operator '%s' takes or makes string tensors, which run on the host through the "
                      "interpreter's implementation: an AOT artifact (loom-run, libloomrt) cannot hold them yet; run the "
                      "model in-process (loom run, loom_compiled_open)", loom_graph_op_name(c->ctx.hostops.data[0]->u.call.op));
  loom_status st = run_codegen(c, LOOM_TARGET_EMIT_OBJECT);
  uint64_t t0 = loom_clock_ns();
  uint8_t *bytes = NULL;
  size_t len = 0;
  loom_strbuf ext;
  loom_strbuf_init(&ext, NULL);
  bool any = false;
  /* the executable without its constants: they go after the linked object, as the DATA region */
  if (!st) st = loom_vm_exec_write_no_data(c->ctx.exe, NULL, &bytes, &len);
  if (!st) st = externs_text(c, &ext, &any);
  if (!st) {
    char so[200];
    snprintf(so, sizeof so, "%s/out.so", c->workdir);
    loom_target_artifact art = {.object = c->object_path, .fs = c->ctx.programs, .nkernels = c->ctx.nprograms,
                                .sigs = c->ctx.exe->kernels,
                                .exec = bytes, .exec_len = len, .externs = any ? loom_strbuf_cstr(&ext) : NULL};
    st = c->ctx.target->link_artifact(&art, c->workdir, so);
    if (!st) st = loom_vm_artifact_seal(so, bytes, len, c->ctx.exe, key);
    if (!st) st = move_into_place(so, path);
  }
  note_times(c, (double)(loom_clock_ns() - t0) / 1e6);
  loom_strbuf_free(&ext);
  if (bytes) loom_free(NULL, bytes, len);
  remove_workdir(c);
  return st;
}

loom_status loom_compiled_save(loom_compiled *c, const char *path) { return loom_compiled_save_signed(c, path, NULL); }

/* The codegen pass's object, moved to `path` as it is (the CUDA target's PTX module). */
loom_status loom_compiled_save_kernels(loom_compiled *c, const char *path) {
  loom_status st = run_codegen(c, LOOM_TARGET_EMIT_OBJECT);
  if (!st) st = move_into_place(c->object_path, path);
  if (!st) chmod(path, 0644);
  c->ctx.object_written = false; /* moved away: a later save makes it again */
  remove_workdir(c);
  return st;
}

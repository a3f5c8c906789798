/* cmd_compile.c — `loom compile FILE.loom -o model.so`: the whole pipeline once, then an
 * AOT artifact (kernels + executable in one shared object) that runs for every shape. */
#include <stdio.h>
#include <string.h>

#include "driver/commands.h"
#include "driver/pipeline.h"
#include "loom.h"
#include "vm/exec.h"

/* `--emit=ptx DIR`: the kernels of FILE as DIR/<file's base name>.ptx. */
static int emit_ptx(const loom_cli_args *args, const loom_compile_options *o, const char *dir) {
  const char *file = args->positional[0];
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t blen = strcspn(base, ".");
  char path[4200];
  snprintf(path, sizeof path, "%s/%.*s.ptx", dir, (int)blen, base);
  loom_compiled *c;
  loom_status st = loom_compile_file(file, o, &c);
  if (!st) {
    st = loom_compiled_save_kernels(c, path);
    if (!st) printf("compiled %s -> %s: %u kernels\n", file, path, loom_compiled_exec(c)->nkernels);
    loom_compiled_free(c);
  }
  return loom_cli_exit(st);
}

static int run(const loom_cli_args *args) {
  const char *emit = loom_cli_get(args, "--emit");
  if (!emit && args->npositional > 1) return loom_cli_usage_error(args, "one FILE (a second positional is --emit=ptx's DIR)");
  if (!emit && !loom_cli_get(args, "-o")) return loom_cli_usage_error(args, "say where to write the artifact: -o OUT.so");
  const char *target = loom_cli_get(args, "--target");
  const loom_target *tgt;
  loom_status ts = loom_pipeline_target(target, &tgt);
  if (ts) {
    int rc = loom_cli_usage_error(args, "--target: %s", loom_status_message(ts));
    loom_status_free(ts);
    return rc;
  }
  loom_compile_options o = {.target = target, .cpu = loom_cli_get(args, "--cpu"),
                            .emit = emit ? LOOM_TARGET_EMIT_NONE : LOOM_TARGET_EMIT_OBJECT,
                            .print_after_all = loom_cli_flag(args, "--print-after-all"),
                            .time_passes = loom_cli_flag(args, "--time"), .offload = loom_cli_flag(args, "--offload"),
                            .report = stderr, .no_cache = loom_cli_flag(args, "--no-cache")};
  if (emit) {
    if (strcmp(emit, "ptx"))
      return loom_cli_usage_error(args, "--emit: expected ptx (--emit=ptx DIR), got '%s'", emit);
    const char *dir = args->npositional > 1 ? args->positional[1] : loom_cli_get(args, "-o");
    if (!dir || !*dir) return loom_cli_usage_error(args, "--emit=ptx: say which directory: --emit=ptx DIR (or -o DIR)");
    if (strcmp(tgt->name, "cuda"))
      return loom_cli_usage_error(args, "--emit=ptx needs --target cuda (target '%s' makes no PTX)", tgt->name);
    return emit_ptx(args, &o, dir);
  }
  /* the signing key is read first: a bad key fails before the compile */
  const char *key_path = loom_cli_get(args, "--sign");
  loom_vm_artifact_seckey key;
  if (key_path) {
    loom_status ks = loom_vm_artifact_seckey_read(key_path, &key);
    if (ks) return loom_cli_exit(loom_status_annotate(ks, __FILE__, __LINE__, "while reading the --sign key"));
  }
  loom_compiled *c;
  loom_status st = loom_compile_file(args->positional[0], &o, &c);
  if (!st) {
    st = loom_compiled_save_signed(c, loom_cli_get(args, "-o"), key_path ? &key : NULL);
    if (!st) {
      const loom_vm_exec *e = loom_compiled_exec(c);
      uint32_t ninsn = 0;
      for (uint32_t i = 0; i < e->nfuncs; i++) ninsn += e->funcs[i].ncode;
      loom_compile_times t = loom_compiled_times(c);
      printf("compiled %s -> %s: %u functions, %u kernels, %u instructions, %u constants\n", args->positional[0],
             loom_cli_get(args, "-o"), e->nfuncs, e->nkernels, ninsn, e->nconsts);
      printf("compile time: passes %.1f ms, planning + VM lowering %.1f ms, codegen + link %.1f ms\n", t.passes_ms,
             t.lower_ms, t.codegen_ms);
      if (o.time_passes)
        printf("kernel cache: %u kernels, %u distinct, %u cache hits, %u misses compiled by LLVM, %u bad entries ignored%s\n",
               t.kernels, t.kernels_unique, t.cache_hits, t.kernels_compiled, t.cache_rejected,
               o.no_cache ? " (--no-cache)" : "");
      if (o.time_passes)
        printf("packed-weight cache: %u hits (%.1f MB mapped), %u stored, %u bad entries ignored%s\n", t.packed_hits,
               (double)t.packed_bytes_mapped / 1e6, t.packed_stored, t.packed_rejected, o.no_cache ? " (--no-cache)" : "");
      if (o.time_passes)
        printf("packed weights' sources: %u found by file identity, %u hashed from their bytes, %u remembered\n",
               t.sources_by_id, t.sources_read, t.sources_remembered);
    }
    loom_compiled_free(c);
  }
  memset(&key, 0, sizeof key);
  return loom_cli_exit(st);
}

const loom_cli_command loom_cmd_compile = {
    .name = "compile",
    .summary = "compile a module once into an AOT artifact that runs for every shape",
    .positional = "FILE [DIR]",
    .min_positional = 1,
    .max_positional = 2,
    .opts = (const loom_cli_opt[]){
        {"-o", "OUT.so", "the artifact to write (required)", false},
        {"--target", "cpu", "code generation target: cpu, or cuda[:sm_80|:sm_90] (with the CUDA toolkit; PTX only)", false},
        {"--emit", "ptx", "write the kernels alone instead of an artifact: --emit=ptx DIR (cuda: DIR/FILE.ptx)", false},
        {"--cpu", "NAME", "LLVM CPU name for the kernels (default: this machine)", false},
        {"--time", NULL, "report each pass's time (every stage, codegen included) and the kernel cache's hits and misses", false},
        {"--no-cache", NULL, "do not read or write the kernel cache ($LOOM_CACHE_DIR, ~/.cache/loom)", false},
        {"--sign", "KEY", "sign the artifact with this secret key (loom keygen); loom-run --trust KEY.pub checks it", false},
        {"--offload", NULL, "hand large matmuls to BLAS (not yet in AOT artifacts: an error)", false},
        {"--print-after-all", NULL, "print what every pass made: the module, memory plans, bytecode, kernels", false},
        {NULL, NULL, NULL, false},
    },
    .run = run,
    .details = "Runs the default pipeline (the passes, memplan, lower, codegen: an object from the target) and\n"
               "links one shared object (with `cc`, or $LOOM_CC), sealed with a trailer holding its content hash (and an\n"
               "Ed25519 signature with --sign; docs/vm.md). Run it with `loom-run OUT.so --bind b=4`.",
};

/* cg_target.c — the target machine, the module of a set of programs, the O3 pipeline
 * (new pass manager), the ORC LLJIT and object-file emission.
 *
 * Every function gets "target-cpu" / "target-features" of the chosen machine; on a
 * machine with AVX-512 also "prefer-vector-width"="512" (LLVM's default for Sapphire
 * Rapids is 256; the compute kernels here are FMA-bound and gain from the full width). */
#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "targets/cpu/cg_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_llvm(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

void loom_cpu_kernel_symbol(const loom_tp_func *f, char *buf, size_t cap) {
  snprintf(buf, cap, "loom_kernel_%s", f->name);
}

/* Takes an LLVMErrorRef into a status. */
loom_status cg_from_llvm_error(LLVMErrorRef err, const char *what) {
  char *m = LLVMGetErrorMessage(err);
  loom_status s = LOOM_ERROR(INTERNAL, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return s;
}

/* A target machine for `opt` (CPU and features of the host unless given). */
loom_status cg_make_tm(const loom_cpu_options *opt, LLVMTargetMachineRef *out, char **out_cpu, char **out_feat) {
  pthread_once(&init_once, init_llvm);
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    loom_status s = LOOM_ERROR(UNAVAILABLE, "no LLVM target for %s: %s", triple, err ? err : "?");
    LLVMDisposeMessage(err);
    LLVMDisposeMessage(triple);
    return s;
  }
  char *cpu = opt && opt->cpu ? strdup(opt->cpu) : NULL;
  char *feat = opt && opt->features ? strdup(opt->features) : NULL;
  if (!cpu) {
    char *h = LLVMGetHostCPUName();
    cpu = strdup(h);
    LLVMDisposeMessage(h);
    if (!feat) {
      char *hf = LLVMGetHostCPUFeatures();
      feat = strdup(hf);
      LLVMDisposeMessage(hf);
    }
  }
  if (!feat) feat = strdup("");
  if (!cpu || !feat) {
    free(cpu);
    free(feat);
    LLVMDisposeMessage(triple);
    return LOOM_OOM();
  }
  int lvl = opt ? opt->opt_level : 0;
  LLVMCodeGenOptLevel cl = lvl < 0 ? LLVMCodeGenLevelNone : lvl == 1 ? LLVMCodeGenLevelLess
                           : lvl == 2 ? LLVMCodeGenLevelDefault : LLVMCodeGenLevelAggressive;
  *out = LLVMCreateTargetMachine(target, triple, cpu, feat, cl, LLVMRelocPIC, LLVMCodeModelDefault);
  LLVMDisposeMessage(triple);
  if (!*out) {
    loom_status s = LOOM_ERROR(INVALID_ARGUMENT, "LLVM cannot make a target machine for cpu '%s'", cpu);
    free(cpu);
    free(feat);
    return s;
  }
  if (out_cpu) *out_cpu = cpu;
  else free(cpu);
  if (out_feat) *out_feat = feat;
  else free(feat);
  return LOOM_OK;
}

loom_status loom_cpu_describe_target(const loom_cpu_options *opt, loom_strbuf *out) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(cg_make_tm(opt, &tm, &cpu, &feat));
  char *triple = LLVMGetTargetMachineTriple(tm);
  loom_strbuf_printf(out, "%s %s %s", triple, cpu, feat);
  LLVMDisposeMessage(triple);
  LLVMDisposeTargetMachine(tm);
  free(cpu);
  free(feat);
  return LOOM_OK;
}

/* CPU names whose widest vectors are 512 bits (LLVM's names of AVX-512 machines), then
 * 256 bits (AVX / AVX2); other names: 128 bits. Used only when a CPU is named without a
 * feature string (LLVM-C cannot list a named CPU's features). */
static const char *const CPUS_512[] = {"x86-64-v4", "skx", "skylake-avx512", "cascadelake", "cooperlake",
                                       "cannonlake", "icelake-client", "icelake-server", "tigerlake",
                                       "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids",
                                       "graniterapids-d", "diamondrapids", "znver4", "znver5", "knl", "knm"};
static const char *const CPUS_256[] = {"x86-64-v3", "sandybridge", "ivybridge", "haswell", "broadwell", "skylake",
                                       "alderlake", "raptorlake", "meteorlake", "arrowlake", "lunarlake",
                                       "gracemont", "sierraforest", "grandridge", "clearwaterforest",
                                       "znver1", "znver2", "znver3", "bdver1", "bdver2", "bdver3", "bdver4",
                                       "btver2", "corei7-avx", "core-avx-i", "core-avx2"};

static bool in_list(const char *const *list, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(list[i], name)) return true;
  return false;
}

/* The widest feature of a feature string ("+avx2,+fma,-avx512f,..."): whole entries only. */
static int feature_vector_bytes(const char *feat) {
  bool avx512 = false, avx = false;
  for (const char *p = feat; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 8 && !strncmp(p, "+avx512f", 8)) avx512 = true;
    if ((n == 4 && !strncmp(p, "+avx", 4)) || (n == 5 && !strncmp(p, "+avx2", 5))) avx = true;
    p = e ? e + 1 : p + n;
  }
  return avx512 ? 64 : avx ? 32 : 16;
}

/* Whether feature string `feat` holds the entry `want` ("+avx512vnni"), whole entries only. */
static bool has_entry(const char *feat, const char *want) {
  size_t wn = strlen(want);
  for (const char *p = feat; p && *p;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == wn && !strncmp(p, want, n)) return true;
    p = e ? e + 1 : p + n;
  }
  return false;
}

/* AVX512-VNNI with 512-bit vectors (vpdpbusd on zmm): from the features, the host's when neither
 * a CPU nor features are named; a named CPU without features: no (LLVM-C cannot list them). */
bool loom_cpu_has_vnni512(const loom_cpu_options *opt) {
  const char *feat = opt ? opt->features : NULL;
  char *host = NULL;
  if (!feat && !(opt && opt->cpu)) feat = host = LLVMGetHostCPUFeatures();
  bool r = feat && has_entry(feat, "+avx512vnni") && has_entry(feat, "+avx512bw") && feature_vector_bytes(feat) == 64;
  if (host) LLVMDisposeMessage(host);
  return r;
}

/* Named CPUs with 256-bit vectors but no AVX2 (AVX only). */
static const char *const CPUS_AVX_ONLY[] = {"sandybridge", "ivybridge", "corei7-avx", "core-avx-i", "btver2", "bdver1", "bdver2"};

bool loom_cpu_has_avx2(const loom_cpu_options *opt) {
  const char *feat = opt ? opt->features : NULL;
  char *host = NULL;
  if (!feat && !(opt && opt->cpu)) feat = host = LLVMGetHostCPUFeatures();
  bool r;
  if (feat) r = strstr(feat, "+avx2") != NULL;
  else r = loom_cpu_vector_bytes(opt) >= 32 && !in_list(CPUS_AVX_ONLY, sizeof CPUS_AVX_ONLY / sizeof *CPUS_AVX_ONLY, opt->cpu);
  if (host) LLVMDisposeMessage(host);
  return r;
}

/* CPUs whose 512-bit FMAs issue as two 256-bit halves (AMD's Zen 4; Zen 5 has full-width units). */
static const char *const CPUS_SPLIT_512[] = {"znver4"};

bool loom_cpu_splits_512(const loom_cpu_options *opt) {
  if (loom_cpu_vector_bytes(opt) != 64) return false;
  if (opt && opt->cpu) return in_list(CPUS_SPLIT_512, sizeof CPUS_SPLIT_512 / sizeof *CPUS_SPLIT_512, opt->cpu);
  if (opt && opt->features) return false; /* features alone name no microarchitecture */
  char *host = LLVMGetHostCPUName();
  bool r = host && in_list(CPUS_SPLIT_512, sizeof CPUS_SPLIT_512 / sizeof *CPUS_SPLIT_512, host);
  LLVMDisposeMessage(host);
  return r;
}

int loom_cpu_vector_bytes(const loom_cpu_options *opt) {
  if (opt && opt->features) return feature_vector_bytes(opt->features);
  if (opt && opt->cpu) {
    if (in_list(CPUS_512, sizeof CPUS_512 / sizeof *CPUS_512, opt->cpu)) return 64;
    return in_list(CPUS_256, sizeof CPUS_256 / sizeof *CPUS_256, opt->cpu) ? 32 : 16;
  }
  char *hf = LLVMGetHostCPUFeatures();
  int v = feature_vector_bytes(hf);
  LLVMDisposeMessage(hf);
  return v;
}

loom_status loom_cpu_bind_symbols(loom_sym_ctx *cx, const loom_tp_func *f, const loom_tp_arg *args, size_t nargs,
                                  int64_t *out_syms) {
  if (nargs != f->nparams)
    return LOOM_ERROR(INVALID_ARGUMENT, "program @%s takes %zu arguments, given %zu", f->name, f->nparams, nargs);
  loom_sym_env *env;
  LOOM_PROPAGATE(loom_sym_env_create(NULL, &env));
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < nargs && !st; i++)
    if (!f->params[i].is_buffer) st = loom_sym_env_set(env, f->params[i].scalar.var, args[i].scalar);
  for (size_t i = 0; i < nargs && !st; i++) {
    const loom_tp_param *p = &f->params[i];
    if (!p->is_buffer) continue;
    char what[160];
    snprintf(what, sizeof what, "program @%s buffer '%s'", f->name, p->buf->name);
    st = loom_sym_bind(cx, p->buf->dims, args[i].shape, (size_t)p->buf->ndim, env, what);
  }
  for (size_t j = 0; j < f->nsyms && !st; j++)
    if (!loom_sym_env_get(env, f->syms[j], &out_syms[j]))
      st = LOOM_ERROR(INVALID_ARGUMENT, "program @%s: symbol '%s' is not bound by the arguments", f->name,
                      loom_sym_var_name(f->syms[j]));
  loom_sym_env_destroy(env);
  return st;
}

/* ---- module -------------------------------------------------------------------------- */

static void cg_init(cg *g, LLVMContextRef c, loom_sym_ctx *cx, const loom_cpu_options *opt) {
  memset(g, 0, sizeof *g);
  char *triple = LLVMGetDefaultTargetTriple();
  g->x86 = !strncmp(triple, "x86_64", 6);
  LLVMDisposeMessage(triple);
  g->avx2 = g->x86 && loom_cpu_has_avx2(opt);
  g->vnni512 = g->x86 && loom_cpu_has_vnni512(opt);
  g->c = c;
  g->cx = cx;
  g->strict_fp = opt && opt->strict_fp;
  g->gpu = opt && opt->nvptx;
  if (g->gpu) g->x86 = g->avx2 = g->vnni512 = false;
  g->b = LLVMCreateBuilderInContext(c);
  g->t_i1 = LLVMInt1TypeInContext(c);
  g->t_i8 = LLVMInt8TypeInContext(c);
  g->t_i16 = LLVMInt16TypeInContext(c);
  g->t_i32 = LLVMInt32TypeInContext(c);
  g->t_i64 = LLVMInt64TypeInContext(c);
  g->t_f16 = LLVMHalfTypeInContext(c);
  g->t_f32 = LLVMFloatTypeInContext(c);
  g->t_f64 = LLVMDoubleTypeInContext(c);
  g->t_ptr = LLVMPointerTypeInContext(c, 0);
  g->t_void = LLVMVoidTypeInContext(c);
  /* struct loom_kernel_ctx: u32 abi_version, size, num_threads, reserved; then
   * parallel_for, pool, set_error, error_slot, user, set_error_index (pointers) */
  LLVMTypeRef f[10] = {g->t_i32, g->t_i32, g->t_i32, g->t_i32, g->t_ptr, g->t_ptr, g->t_ptr, g->t_ptr, g->t_ptr, g->t_ptr};
  g->t_ctx = LLVMStructTypeInContext(c, f, 10, 0);
  LLVMTypeRef bp[4] = {g->t_ptr, g->t_i64, g->t_i64, g->t_i32};
  g->t_body = LLVMFunctionType(g->t_i32, bp, 4, 0);
}

static void cg_fini(cg *g) {
  LLVMDisposeBuilder(g->b);
  LOOM_VEC_FREE(NULL, &g->syms);
  LOOM_VEC_FREE(NULL, &g->bufs);
  LOOM_VEC_FREE(NULL, &g->lets);
  LOOM_VEC_FREE(NULL, &g->divs);
  LOOM_VEC_FREE(NULL, &g->heap);
}

static void add_str_attr(LLVMContextRef c, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(c, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

/* Builds the module of `fs` in context `c`, verified. */
/* LLVM's diagnostics: optimisation remarks and "loop not vectorized" warnings (our loops
 * carry vectorize hints that cannot always be honoured) are dropped; errors are printed. */
static void diagnostic(LLVMDiagnosticInfoRef info, void *ud) {
  (void)ud;
  if (LLVMGetDiagInfoSeverity(info) != LLVMDSError) return;
  char *d = LLVMGetDiagInfoDescription(info);
  fprintf(stderr, "LLVM: %s\n", d);
  LLVMDisposeMessage(d);
}

loom_status cg_build_module(LLVMContextRef c, LLVMTargetMachineRef tm, const char *cpu, const char *feat,
                            const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                            const char *const *bases, size_t n, LLVMModuleRef *out) {
  LLVMContextSetDiagnosticHandler(c, diagnostic, NULL);
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("loom", c);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);
  cg g;
  cg_init(&g, c, cx, opt);
  g.mod = mod;
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < n && !st; i++) st = cg_emit_kernel(&g, fs[i], bases ? bases[i] : NULL);
  cg_fini(&g);
  if (!st) {
    bool wide = strstr(feat, "+avx512f") != NULL;
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
      if (LLVMIsDeclaration(fn)) continue;
      add_str_attr(c, fn, "target-cpu", cpu);
      if (feat[0]) add_str_attr(c, fn, "target-features", feat);
      if (wide) add_str_attr(c, fn, "prefer-vector-width", "512");
      LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(c, nounwind, 0));
    }
    char *msg = NULL;
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
      st = LOOM_ERROR(INTERNAL, "generated LLVM IR does not verify: %s", msg ? msg : "?");
    }
    LLVMDisposeMessage(msg);
  }
  if (st) {
    LLVMDisposeModule(mod);
    return st;
  }
  *out = mod;
  return LOOM_OK;
}

const char *cg_pipeline(const loom_cpu_options *opt, char *buf, size_t cap) {
  int lvl = opt ? opt->opt_level : 0;
  if (lvl < 0) return "";
  const char *env = getenv("LOOM_LLVM_PIPELINE");
  if (env && *env) return env;
  if ((lvl == 0 || lvl == 3) && !(opt && opt->nvptx)) return CG_LOOM_O3_PIPELINE;
  snprintf(buf, cap, "default<O%d>", lvl == 0 ? 3 : lvl);
  return buf;
}

/* Whether `p` runs an `instcombine` that checks its fixpoint: LLVM 19's bare `instcombine` (or one
 * without `no-verify-fixpoint` among its parameters) ends the process when one iteration does not
 * reach it, so such a pipeline is refused before LLVM sees it. */
static bool verifies_fixpoint(const char *p) {
  for (const char *s = strstr(p, "instcombine"); s; s = strstr(s + 11, "instcombine")) {
    if (s > p && (s[-1] == '-' || s[-1] == '_')) continue; /* aggressive-instcombine */
    const char *a = s + 11, *e = *a == '<' ? strchr(a, '>') : NULL;
    if (!e) return true;
    bool off = false;
    for (const char *q = strstr(a, "no-verify-fixpoint"); q && q < e && !off; q = strstr(q + 1, "no-verify-fixpoint"))
      off = true;
    if (!off) return true;
  }
  return false;
}

loom_status cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const loom_cpu_options *opt) {
  char buf[32];
  const char *pipeline = cg_pipeline(opt, buf, sizeof buf);
  if (!pipeline[0]) return LOOM_OK;
  if (verifies_fixpoint(pipeline))
    return LOOM_ERROR(INVALID_ARGUMENT,
                      "LLVM optimisation pipeline '%s' (LOOM_LLVM_PIPELINE when set): write "
                      "instcombine<no-verify-fixpoint> (LLVM ends the process when instcombine's fixpoint check fails)",
                      pipeline);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
  LLVMErrorRef err = LLVMRunPasses(mod, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (!err) return LOOM_OK;
  char *m = LLVMGetErrorMessage(err);
  loom_status st = LOOM_ERROR(INVALID_ARGUMENT, "LLVM optimisation pipeline '%s' (LOOM_LLVM_PIPELINE when set): %s",
                              pipeline, m);
  LLVMDisposeErrorMessage(m);
  return st;
}

loom_status loom_cpu_emit_ir(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                             size_t n, bool do_opt, loom_strbuf *out) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(cg_make_tm(opt, &tm, &cpu, &feat));
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  loom_status st = cg_build_module(c, tm, cpu, feat, opt, cx, fs, NULL, n, &mod);
  if (!st && do_opt) st = cg_optimize(mod, tm, opt);
  if (!st) {
    char *text = LLVMPrintModuleToString(mod);
    loom_strbuf_puts(out, text);
    LLVMDisposeMessage(text);
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  free(cpu);
  free(feat);
  return st;
}

loom_status loom_cpu_emit_object(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                 size_t n, const char *path) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(cg_make_tm(opt, &tm, &cpu, &feat));
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  loom_status st = cg_build_module(c, tm, cpu, feat, opt, cx, fs, NULL, n, &mod);
  if (!st) st = cg_optimize(mod, tm, opt);
  if (!st) {
    char *err = NULL;
    if (LLVMTargetMachineEmitToFile(tm, mod, path, LLVMObjectFile, &err))
      st = LOOM_ERROR(IO_ERROR, "cannot write object file '%s': %s", path, err ? err : "?");
    LLVMDisposeMessage(err);
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  free(cpu);
  free(feat);
  return st;
}

/* ---- JIT ------------------------------------------------------------------------------ */

typedef struct jit_kernel jit_kernel;
struct loom_cpu_jit {
  LLVMOrcLLJITRef lljit;
  LLVMTargetMachineRef tm; /* for the optimisation pipeline and machine code */
  char *triple, *cpu, *feat;
  LOOM_VEC(jit_kernel) have; /* kernels added so far */
  loom_cpu_options opt;
  double t_irgen, t_opt, t_codegen; /* ms, last compile */
};

loom_status loom_cpu_jit_create(const loom_cpu_options *opt, loom_cpu_jit **out) {
  loom_cpu_jit *j = calloc(1, sizeof *j);
  if (!j) return LOOM_OOM();
  if (opt) j->opt = *opt;
  loom_status st = cg_make_tm(opt, &j->tm, &j->cpu, &j->feat);
  if (st) {
    free(j);
    return st;
  }
  j->triple = LLVMGetTargetMachineTriple(j->tm);
  LLVMTargetMachineRef jtm;
  st = cg_make_tm(opt, &jtm, NULL, NULL);
  if (st) {
    loom_cpu_jit_destroy(j);
    return st;
  }
  LLVMOrcLLJITBuilderRef builder = LLVMOrcCreateLLJITBuilder();
  LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(builder, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(jtm));
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&j->lljit, builder); /* takes the builder */
  if (err) {
    j->lljit = NULL;
    loom_cpu_jit_destroy(j);
    return cg_from_llvm_error(err, "cannot create the LLVM JIT");
  }
  /* Generated code calls libm (tanhf, erff, expf via llvm.exp) and calloc/free. */
  LLVMOrcDefinitionGeneratorRef gen;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j->lljit), NULL, NULL);
  if (err) {
    loom_cpu_jit_destroy(j);
    return cg_from_llvm_error(err, "cannot expose process symbols to the JIT");
  }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(j->lljit), gen);
  *out = j;
  return LOOM_OK;
}

/* Kernels whose objects this JIT holds, by content: a later compile of that content reuses them. */
typedef struct jit_kernel {
  char base[40];
  loom_kernel_fn fn;
} jit_kernel;

/* The programs' kernels through cg_cache.c: one object per distinct content, from the kernel
 * cache or compiled (over LOOM_COMPILE_THREADS workers), each added to the JIT once. */
loom_status loom_cpu_jit_compile_cached(loom_cpu_jit *j, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                        loom_kcache *kc, loom_kernel_fn *out_fns, loom_cpu_cache_stats *stats) {
  uint64_t t0 = loom_clock_ns();
  cg_machine m = {.opt = &j->opt, .tm = j->tm, .triple = j->triple, .cpu = j->cpu, .feat = j->feat};
  cg_kobjs ks;
  loom_cpu_cache_stats s;
  LOOM_PROPAGATE(cg_kernel_objects(&m, cx, fs, n, kc, &ks, &s));
  uint64_t t1 = loom_clock_ns();
  loom_kernel_fn *ufn = calloc(ks.n ? ks.n : 1, sizeof *ufn);
  loom_status st = ufn ? LOOM_OK : LOOM_OOM();
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j->lljit);
  bool *added = calloc(ks.n ? ks.n : 1, sizeof *added);
  if (!st && !added) st = LOOM_OOM();
  for (size_t u = 0; u < ks.n && !st; u++) {
    for (size_t h = 0; h < j->have.len && !ufn[u]; h++)
      if (!strcmp(j->have.data[h].base, ks.v[u].base)) ufn[u] = j->have.data[h].fn;
    if (ufn[u]) continue;
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy((const char *)ks.v[u].obj, ks.v[u].len, ks.v[u].base);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(j->lljit, jd, buf); /* takes the buffer */
    if (err) st = cg_from_llvm_error(err, "cannot add a kernel's object to the JIT");
    added[u] = true;
  }
  for (size_t u = 0; u < ks.n && !st; u++) {
    if (!added[u]) continue;
    char sym[64];
    snprintf(sym, sizeof sym, "loom_kernel_%s", ks.v[u].base);
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(j->lljit, &addr, sym);
    if (err) {
      st = cg_from_llvm_error(err, "JIT lookup of a kernel");
      break;
    }
    ufn[u] = (loom_kernel_fn)(uintptr_t)addr;
    jit_kernel k = {.fn = ufn[u]};
    memcpy(k.base, ks.v[u].base, sizeof k.base);
    if (!LOOM_VEC_PUSH(NULL, &j->have, k)) st = LOOM_OOM();
  }
  for (size_t i = 0; i < n && !st; i++) out_fns[i] = ufn[ks.which[i]];
  free(ufn);
  free(added);
  cg_kobjs_free(&ks);
  uint64_t t2 = loom_clock_ns();
  /* wall time of the compiles split in proportion to the phases' summed times (workers run
   * them side by side); loading the objects counts as machine code */
  double wall = (double)(t1 - t0) / 1e6 - s.key_ms, sum = s.irgen_ms + s.opt_ms + s.mc_ms;
  double scale = sum > 0 && wall > 0 ? wall / sum : 0;
  j->t_irgen = s.irgen_ms * scale + s.key_ms;
  j->t_opt = s.opt_ms * scale;
  j->t_codegen = s.mc_ms * scale + (double)(t2 - t1) / 1e6;
  if (stats) *stats = s;
  return st;
}

loom_status loom_cpu_jit_compile(loom_cpu_jit *j, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                 loom_kernel_fn *out_fns) {
  return loom_cpu_jit_compile_cached(j, cx, fs, n, NULL, out_fns, NULL);
}

loom_status loom_cpu_kernel_keys(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                 loom_strbuf *keys) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(cg_make_tm(opt, &tm, &cpu, &feat));
  char *triple = LLVMGetTargetMachineTriple(tm);
  cg_machine m = {.opt = opt, .tm = tm, .triple = triple, .cpu = cpu, .feat = feat};
  loom_status st = LOOM_OK;
  for (size_t i = 0; i < n && !st; i++) st = cg_kernel_key(&m, cx, fs[i], &keys[i]);
  LLVMDisposeMessage(triple);
  LLVMDisposeTargetMachine(tm);
  free(cpu);
  free(feat);
  return st;
}

loom_status loom_cpu_emit_archive(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                  loom_kcache *kc, const char *path, loom_strbuf *symbols, loom_cpu_cache_stats *stats) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(cg_make_tm(opt, &tm, &cpu, &feat));
  char *triple = LLVMGetTargetMachineTriple(tm);
  cg_machine m = {.opt = opt, .tm = tm, .triple = triple, .cpu = cpu, .feat = feat};
  cg_kobjs ks;
  loom_status st = cg_kernel_objects(&m, cx, fs, n, kc, &ks, stats);
  if (!st) {
    loom_strbuf ar;
    loom_strbuf_init(&ar, NULL);
    st = cg_write_archive(&ks, &ar);
    if (!st) {
      FILE *f = fopen(path, "wb");
      bool ok = f && fwrite(ar.data, 1, ar.len, f) == ar.len;
      if (f) ok &= fclose(f) == 0;
      if (!ok) st = LOOM_ERROR(IO_ERROR, "cannot write the kernels' archive '%s'", path);
    }
    loom_strbuf_free(&ar);
    for (size_t i = 0; i < n && !st; i++) loom_strbuf_printf(symbols, "loom_kernel_%s\n", ks.v[ks.which[i]].base);
    if (!st && symbols->oom) st = LOOM_OOM();
    cg_kobjs_free(&ks);
  }
  LLVMDisposeMessage(triple);
  LLVMDisposeTargetMachine(tm);
  free(cpu);
  free(feat);
  return st;
}

void loom_cpu_jit_last_times(const loom_cpu_jit *j, double *irgen_ms, double *opt_ms, double *codegen_ms) {
  if (irgen_ms) *irgen_ms = j->t_irgen;
  if (opt_ms) *opt_ms = j->t_opt;
  if (codegen_ms) *codegen_ms = j->t_codegen;
}

void loom_cpu_jit_destroy(loom_cpu_jit *j) {
  if (!j) return;
  if (j->lljit) {
    LLVMErrorRef err = LLVMOrcDisposeLLJIT(j->lljit);
    if (err) LLVMConsumeError(err);
  }
  if (j->tm) LLVMDisposeTargetMachine(j->tm);
  if (j->triple) LLVMDisposeMessage(j->triple);
  LOOM_VEC_FREE(NULL, &j->have);
  free(j->cpu);
  free(j->feat);
  free(j);
}

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
static loom_status from_llvm_error(LLVMErrorRef err, const char *what) {
  char *m = LLVMGetErrorMessage(err);
  loom_status s = LOOM_ERROR(INTERNAL, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return s;
}

/* A target machine for `opt` (CPU and features of the host unless given). */
static loom_status make_tm(const loom_cpu_options *opt, LLVMTargetMachineRef *out, char **out_cpu, char **out_feat) {
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
  LOOM_PROPAGATE(make_tm(opt, &tm, &cpu, &feat));
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
  g->c = c;
  g->cx = cx;
  g->strict_fp = opt && opt->strict_fp;
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

static loom_status build_module(LLVMContextRef c, LLVMTargetMachineRef tm, const char *cpu, const char *feat,
                                const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                size_t n, LLVMModuleRef *out) {
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
  for (size_t i = 0; i < n && !st; i++) st = cg_emit_kernel(&g, fs[i]);
  cg_fini(&g);
  if (!st) {
    bool wide = strstr(feat, "+avx512f") != NULL;
    unsigned nounwind = LLVMGetEnumAttributeKindForName("nounwind", 8);
    for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
      if (LLVMIsDeclaration(fn)) continue;
      add_str_attr(c, fn, "target-cpu", cpu);
      add_str_attr(c, fn, "target-features", feat);
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

static loom_status optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const loom_cpu_options *opt) {
  int lvl = opt ? opt->opt_level : 0;
  if (lvl < 0) return LOOM_OK;
  char pipeline[32];
  snprintf(pipeline, sizeof pipeline, "default<O%d>", lvl == 0 ? 3 : lvl);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
  LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
  LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
  LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
  LLVMErrorRef err = LLVMRunPasses(mod, pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (err) return from_llvm_error(err, "LLVM optimisation");
  return LOOM_OK;
}

loom_status loom_cpu_emit_ir(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                             size_t n, bool do_opt, loom_strbuf *out) {
  LLVMTargetMachineRef tm;
  char *cpu, *feat;
  LOOM_PROPAGATE(make_tm(opt, &tm, &cpu, &feat));
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  loom_status st = build_module(c, tm, cpu, feat, opt, cx, fs, n, &mod);
  if (!st && do_opt) st = optimize(mod, tm, opt);
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
  LOOM_PROPAGATE(make_tm(opt, &tm, &cpu, &feat));
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  loom_status st = build_module(c, tm, cpu, feat, opt, cx, fs, n, &mod);
  if (!st) st = optimize(mod, tm, opt);
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

struct loom_cpu_jit {
  LLVMOrcLLJITRef lljit;
  LLVMTargetMachineRef tm; /* for the optimisation pipeline (the JIT owns its own copy) */
  char *cpu, *feat;
  loom_cpu_options opt;
  double t_irgen, t_opt, t_codegen; /* ms, last compile */
};

loom_status loom_cpu_jit_create(const loom_cpu_options *opt, loom_cpu_jit **out) {
  loom_cpu_jit *j = calloc(1, sizeof *j);
  if (!j) return LOOM_OOM();
  if (opt) j->opt = *opt;
  loom_status st = make_tm(opt, &j->tm, &j->cpu, &j->feat);
  if (st) {
    free(j);
    return st;
  }
  LLVMTargetMachineRef jtm;
  st = make_tm(opt, &jtm, NULL, NULL);
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
    return from_llvm_error(err, "cannot create the LLVM JIT");
  }
  /* Generated code calls libm (tanhf, erff, expf via llvm.exp) and calloc/free. */
  LLVMOrcDefinitionGeneratorRef gen;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(&gen, LLVMOrcLLJITGetGlobalPrefix(j->lljit), NULL, NULL);
  if (err) {
    loom_cpu_jit_destroy(j);
    return from_llvm_error(err, "cannot expose process symbols to the JIT");
  }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(j->lljit), gen);
  *out = j;
  return LOOM_OK;
}

/* One worker of a parallel compile: programs [begin, end) -> an object file in memory.
 * IR generation touches the shared symbolic context, so it runs under `irgen_lock`;
 * optimisation and machine code (most of the time) run in parallel, each worker with its own
 * LLVM context and target machine. */
typedef struct jit_part {
  loom_cpu_jit *j;
  loom_sym_ctx *cx;
  const loom_tp_func **fs; /* this part's programs */
  size_t n;
  size_t cost;             /* estimated: printed size of its programs */
  pthread_mutex_t *irgen_lock;
  LLVMMemoryBufferRef obj;
  loom_status st;
  uint64_t irgen_ns, opt_ns, mc_ns;
} jit_part;

static void *jit_part_run(void *arg) {
  jit_part *p = arg;
  LLVMTargetMachineRef tm;
  p->st = make_tm(&p->j->opt, &tm, NULL, NULL);
  if (p->st) return NULL;
  LLVMContextRef c = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  uint64_t t0 = loom_clock_ns();
  pthread_mutex_lock(p->irgen_lock);
  p->st = build_module(c, tm, p->j->cpu, p->j->feat, &p->j->opt, p->cx, p->fs, p->n, &mod);
  pthread_mutex_unlock(p->irgen_lock);
  uint64_t t1 = loom_clock_ns();
  if (!p->st) p->st = optimize(mod, tm, &p->j->opt);
  uint64_t t2 = loom_clock_ns();
  if (!p->st) {
    char *err = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &p->obj))
      p->st = LOOM_ERROR(INTERNAL, "LLVM cannot emit machine code: %s", err ? err : "?");
    LLVMDisposeMessage(err);
  }
  p->irgen_ns = t1 - t0, p->opt_ns = t2 - t1, p->mc_ns = loom_clock_ns() - t2;
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return NULL;
}

/* Compile threads: LOOM_COMPILE_THREADS (default 1: the single-module path below). */
static size_t compile_threads(size_t n) {
  const char *env = getenv("LOOM_COMPILE_THREADS");
  long t = env && *env ? strtol(env, NULL, 10) : 1;
  if (t < 1) t = 1;
  if (t > 8) t = 8;
  return (size_t)t < n ? (size_t)t : n;
}

/* One module for all programs, added to the JIT as IR (the JIT's own target machine makes the
 * machine code): the default, proven path. */
static loom_status jit_compile_one(loom_cpu_jit *j, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                   loom_kernel_fn *out_fns) {
  uint64_t t0 = loom_clock_ns();
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef c = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMModuleRef mod = NULL;
  loom_status st = build_module(c, j->tm, j->cpu, j->feat, &j->opt, cx, fs, n, &mod);
  uint64_t t1 = loom_clock_ns();
  if (!st) st = optimize(mod, j->tm, &j->opt);
  uint64_t t2 = loom_clock_ns();
  if (st) {
    if (mod) LLVMDisposeModule(mod);
    LLVMOrcDisposeThreadSafeContext(tsc);
    return st;
  }
  LLVMOrcThreadSafeModuleRef tsm = LLVMOrcCreateNewThreadSafeModule(mod, tsc);
  LLVMOrcDisposeThreadSafeContext(tsc); /* the module keeps it alive */
  LLVMErrorRef err = LLVMOrcLLJITAddLLVMIRModule(j->lljit, LLVMOrcLLJITGetMainJITDylib(j->lljit), tsm);
  if (err) /* the JIT took the module even on failure */
    return from_llvm_error(err, "cannot add the module to the JIT (a kernel of that name already exists?)");
  for (size_t i = 0; i < n; i++) {
    char sym[300];
    loom_cpu_kernel_symbol(fs[i], sym, sizeof sym);
    LLVMOrcExecutorAddress addr = 0;
    err = LLVMOrcLLJITLookup(j->lljit, &addr, sym);
    if (err) return from_llvm_error(err, "JIT lookup of a kernel");
    out_fns[i] = (loom_kernel_fn)(uintptr_t)addr;
  }
  uint64_t t3 = loom_clock_ns();
  j->t_irgen = (double)(t1 - t0) / 1e6;
  j->t_opt = (double)(t2 - t1) / 1e6;
  j->t_codegen = (double)(t3 - t2) / 1e6;
  return LOOM_OK;
}

/* With LOOM_COMPILE_THREADS > 1: programs split over workers, each emitting an object file
 * that is added to the JIT. Opt-in: one run in twelve of the sanitized conformance gemm tests
 * crashed calling a kernel compiled this way (not understood yet; see docs/codegen.md). */
loom_status loom_cpu_jit_compile(loom_cpu_jit *j, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                 loom_kernel_fn *out_fns) {
  size_t np = n ? compile_threads(n) : 0;
  if (np <= 1) return jit_compile_one(j, cx, fs, n, out_fns);
  uint64_t t0 = loom_clock_ns();
  jit_part parts[8];
  pthread_t th[8];
  bool started[8] = {false};
  pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  const loom_tp_func **order = calloc(n ? 2 * n : 1, sizeof *order);
  size_t *cost = calloc(n ? n : 1, sizeof *cost);
  if (!order || !cost) {
    free(order);
    free(cost);
    return LOOM_OOM();
  }
  /* balance the parts: programs by estimated cost (printed size), largest first, each to the
   * part with the least so far */
  for (size_t i = 0; i < n; i++) {
    loom_strbuf sb;
    loom_strbuf_init(&sb, NULL);
    loom_tp_print_func(fs[i], &sb);
    cost[i] = sb.len;
    loom_strbuf_free(&sb);
    order[i] = fs[i];
  }
  for (size_t i = 1; i < n; i++) /* insertion sort by cost, descending (n is small) */
    for (size_t k = i; k > 0 && cost[k] > cost[k - 1]; k--) {
      size_t tc = cost[k];
      cost[k] = cost[k - 1], cost[k - 1] = tc;
      const loom_tp_func *tf = order[k];
      order[k] = order[k - 1], order[k - 1] = tf;
    }
  for (size_t k = 0; k < np; k++) parts[k] = (jit_part){.j = j, .cx = cx, .fs = order + n + 0, .irgen_lock = &lock};
  size_t per[8] = {0};
  const loom_tp_func **slots = order + n; /* parts' arrays, laid out after counting */
  size_t *assign = calloc(n ? n : 1, sizeof *assign);
  if (!assign) {
    free(order);
    free(cost);
    return LOOM_OOM();
  }
  for (size_t i = 0; i < n; i++) {
    size_t best = 0;
    for (size_t k = 1; k < np; k++)
      if (parts[k].cost < parts[best].cost) best = k;
    parts[best].cost += cost[i];
    assign[i] = best;
    per[best]++;
  }
  size_t at = 0;
  for (size_t k = 0; k < np; k++) {
    parts[k].fs = slots + at;
    for (size_t i = 0; i < n; i++)
      if (assign[i] == k) slots[at + parts[k].n++] = order[i];
    at += per[k];
  }
  free(assign);
  for (size_t k = 1; k < np; k++) started[k] = pthread_create(&th[k], NULL, jit_part_run, &parts[k]) == 0;
  if (np) jit_part_run(&parts[0]); /* the calling thread takes the first part */
  for (size_t k = 1; k < np; k++) {
    if (started[k]) pthread_join(th[k], NULL);
    else jit_part_run(&parts[k]); /* no thread: compile it here */
  }
  uint64_t t1 = loom_clock_ns();
  free(order);
  free(cost);
  loom_status st = LOOM_OK;
  uint64_t irgen = 0, opt = 0;
  for (size_t k = 0; k < np; k++) {
    irgen += parts[k].irgen_ns, opt += parts[k].opt_ns;
    if (!st && parts[k].st) st = parts[k].st;
    else if (parts[k].st) loom_status_free(parts[k].st);
  }
  for (size_t k = 0; k < np; k++) {
    if (!parts[k].obj) continue;
    if (st) {
      LLVMDisposeMemoryBuffer(parts[k].obj);
      continue;
    }
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFile(j->lljit, LLVMOrcLLJITGetMainJITDylib(j->lljit), parts[k].obj);
    if (err) st = from_llvm_error(err, "cannot add kernels to the JIT (a kernel of that name already exists?)");
  }
  for (size_t i = 0; i < n && !st; i++) {
    char sym[300];
    loom_cpu_kernel_symbol(fs[i], sym, sizeof sym);
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(j->lljit, &addr, sym);
    if (err) st = from_llvm_error(err, "JIT lookup of a kernel");
    else out_fns[i] = (loom_kernel_fn)(uintptr_t)addr;
  }
  uint64_t t2 = loom_clock_ns();
  /* wall time split in proportion to the workers' summed phase times, plus linking */
  double wall = (double)(t1 - t0) / 1e6, sum = (double)(irgen + opt) / 1e6;
  uint64_t mc = 0;
  for (size_t k = 0; k < np; k++) mc += parts[k].mc_ns;
  double total = sum + (double)mc / 1e6;
  j->t_irgen = total > 0 ? wall * ((double)irgen / 1e6) / total : 0;
  j->t_opt = total > 0 ? wall * ((double)opt / 1e6) / total : 0;
  j->t_codegen = (total > 0 ? wall * ((double)mc / 1e6) / total : 0) + (double)(t2 - t1) / 1e6;
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
  free(j->cpu);
  free(j->feat);
  free(j);
}

/* ptx.c — PTX through LLVM's NVPTX back end (see ptx.h). */
#include "targets/cuda/ptx.h"

#include <llvm-c/BitReader.h>
#include <llvm-c/Linker.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "targets/cpu/cg_internal.h"

static void init_nvptx(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

const char *loom_cuda_libdevice_path(void) {
  const char *p = getenv("LOOM_LIBDEVICE");
  return p && *p ? p : "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc";
}

/* LLVM math intrinsics and libm names the NVPTX back end cannot select: libdevice has them. */
static const char *const math_names[] = {"exp",  "exp2", "exp10", "log",  "log2", "log10", "sin",  "cos",
                                         "tan",  "asin", "acos",  "atan", "sinh", "cosh",  "tanh", "asinh",
                                         "acosh", "atanh", "pow", "erf",  "erfc", "atan2", "expm1", "log1p",
                                         "cbrt", "fmod", "lgamma", "tgamma", "remainder"};

/* The libdevice name for a declared function `name` ("llvm.exp.f32" -> "__nv_expf", "erf" ->
 * "__nv_erf", "erff" -> "__nv_erff"), or false when it is not one of math_names. */
static bool libdevice_name(const char *name, char *out, size_t cap) {
  char base[64];
  bool f32 = false;
  if (!strncmp(name, "llvm.", 5)) {
    const char *dot = strchr(name + 5, '.');
    if (!dot || (strcmp(dot, ".f32") && strcmp(dot, ".f64"))) return false;
    f32 = !strcmp(dot, ".f32");
    snprintf(base, sizeof base, "%.*s", (int)(dot - name - 5), name + 5);
  } else {
    snprintf(base, sizeof base, "%s", name);
    size_t l = strlen(base);
    bool known = false;
    for (size_t i = 0; i < sizeof math_names / sizeof *math_names; i++) known |= !strcmp(base, math_names[i]);
    if (!known && l > 1 && base[l - 1] == 'f') {
      base[l - 1] = '\0';
      f32 = true;
    }
  }
  for (size_t i = 0; i < sizeof math_names / sizeof *math_names; i++)
    if (!strcmp(base, math_names[i])) {
      snprintf(out, cap, "__nv_%s%s", base, f32 ? "f" : "");
      return true;
    }
  return false;
}

/* Redirects math calls to libdevice and links it in (only what is used survives: every
 * definition but the kernels is made internal after the link, so the optimiser drops the rest). */
static loom_status link_libdevice(LLVMContextRef c, LLVMModuleRef mod) {
  bool any = false;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn;) {
    LLVMValueRef next = LLVMGetNextFunction(fn);
    size_t len;
    const char *name = LLVMGetValueName2(fn, &len);
    char nv[80];
    if (LLVMIsDeclaration(fn) && libdevice_name(name, nv, sizeof nv)) {
      LLVMTypeRef fty = LLVMGlobalGetValueType(fn);
      LLVMValueRef repl = LLVMGetNamedFunction(mod, nv);
      if (!repl) repl = LLVMAddFunction(mod, nv, fty);
      LLVMReplaceAllUsesWith(fn, repl);
      LLVMDeleteFunction(fn);
      any = true;
    }
    fn = next;
  }
  if (!any) return LOOM_OK;
  const char *path = loom_cuda_libdevice_path();
  LLVMMemoryBufferRef buf;
  char *msg = NULL;
  if (LLVMCreateMemoryBufferWithContentsOfFile(path, &buf, &msg)) {
    loom_status st = LOOM_ERROR(UNAVAILABLE, "cannot read libdevice '%s' (math functions on the GPU): %s", path,
                                msg ? msg : "?");
    LLVMDisposeMessage(msg);
    return st;
  }
  LLVMModuleRef dev;
  if (LLVMParseBitcodeInContext2(c, buf, &dev)) {
    LLVMDisposeMemoryBuffer(buf);
    return LOOM_ERROR(INTERNAL, "libdevice '%s' is not LLVM bitcode", path);
  }
  LLVMDisposeMemoryBuffer(buf);
  LLVMSetTarget(dev, LLVMGetTarget(mod));
  LLVMSetDataLayout(dev, LLVMGetDataLayoutStr(mod));
  if (LLVMLinkModules2(mod, dev)) return LOOM_ERROR(INTERNAL, "linking libdevice '%s' failed", path);
  /* every definition but the kernels internal: the optimiser drops what no kernel calls */
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    size_t len;
    const char *name = LLVMGetValueName2(fn, &len);
    if (!LLVMIsDeclaration(fn) && strncmp(name, "loom_kernel_", 12)) LLVMSetLinkage(fn, LLVMInternalLinkage);
  }
  for (LLVMValueRef gv = LLVMGetFirstGlobal(mod); gv; gv = LLVMGetNextGlobal(gv))
    if (!LLVMIsDeclaration(gv)) LLVMSetLinkage(gv, LLVMInternalLinkage);
  return LOOM_OK;
}

loom_status loom_cuda_emit_ptx(const char *arch, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                               loom_strbuf *out) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_nvptx);
  if (!arch) arch = LOOM_CUDA_DEFAULT_ARCH;
  /* the architectures LLVM 19's NVPTX back end knows (PTX ISA 7.8 covers them all) */
  static const char *const known[] = {"sm_50", "sm_52", "sm_53", "sm_60", "sm_61", "sm_62", "sm_70", "sm_72",
                                      "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90"};
  bool ok = false;
  for (size_t i = 0; i < sizeof known / sizeof *known; i++) ok |= !strcmp(arch, known[i]);
  if (!ok)
    return LOOM_ERROR(INVALID_ARGUMENT, "CUDA architecture '%s' is not one LLVM's NVPTX back end knows: expected sm_NN "
                      "from sm_50 to sm_90 (sm_80, sm_90)", arch);
  const char *triple = "nvptx64-nvidia-cuda";
  LLVMTargetRef t;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    loom_status st = LOOM_ERROR(UNAVAILABLE, "LLVM has no NVPTX back end: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    return st;
  }
  const char *feat = "+ptx78";
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(t, triple, arch, feat, LLVMCodeGenLevelAggressive, LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm) return LOOM_ERROR(INVALID_ARGUMENT, "LLVM's NVPTX back end does not know architecture '%s'", arch);
  LLVMContextRef c = LLVMContextCreate();
  loom_cpu_options opt = {.nvptx = true};
  LLVMModuleRef mod = NULL;
  loom_status st = cg_build_module(c, tm, arch, feat, &opt, cx, fs, NULL, n, &mod);
  if (!st) st = link_libdevice(c, mod);
  if (!st) st = cg_optimize(mod, tm, &opt);
  if (!st) {
    LLVMMemoryBufferRef mb;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMAssemblyFile, &err, &mb)) {
      st = LOOM_ERROR(INTERNAL, "NVPTX code generation failed: %s", err ? err : "?");
      LLVMDisposeMessage(err);
    } else {
      loom_strbuf_append(out, LLVMGetBufferStart(mb), LLVMGetBufferSize(mb));
      LLVMDisposeMemoryBuffer(mb);
    }
  }
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(c);
  LLVMDisposeTargetMachine(tm);
  return st;
}

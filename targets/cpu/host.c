/* host.c — host description through LLVM-C. */
#include "targets/cpu/host.h"

#include <stdio.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

void loom_cpu_llvm_version(unsigned *major, unsigned *minor, unsigned *patch) {
  LLVMGetVersion(major, minor, patch);
}

void loom_cpu_host_describe(char *buf, size_t cap) {
  char *triple = LLVMGetDefaultTargetTriple();
  char *cpu = LLVMGetHostCPUName();
  snprintf(buf, cap, "%s, cpu %s", triple, cpu);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
}

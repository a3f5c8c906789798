/* host.h — what LLVM knows about the host: version, triple, CPU and features.
 * Compiler side (links LLVM); the header itself includes nothing from LLVM. */
#ifndef LOOM_TARGETS_CPU_HOST_H
#define LOOM_TARGETS_CPU_HOST_H

#include <stddef.h>

/* The LLVM version Loom is linked against. */
void loom_cpu_llvm_version(unsigned *major, unsigned *minor, unsigned *patch);
/* "x86_64-pc-linux-gnu, cpu znver3" into buf (truncated to cap). */
void loom_cpu_host_describe(char *buf, size_t cap);

#endif

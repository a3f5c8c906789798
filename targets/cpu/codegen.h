/* codegen.h — CPU code generation: tensor programs -> LLVM IR -> machine code.
 *
 *     loom_cpu_jit *jit;
 *     LOOM_PROPAGATE(loom_cpu_jit_create(NULL, &jit));          // host CPU, O3
 *     loom_kernel_fn fn;
 *     LOOM_PROPAGATE(loom_cpu_jit_compile(jit, cx, &f, 1, &fn)); // f: a verified loom_tp_func
 *     int64_t syms[8];
 *     LOOM_PROPAGATE(loom_cpu_bind_symbols(cx, f, args, nargs, syms));
 *     void *bufs[] = {A, B, C};
 *     int32_t rc = fn(bufs, syms, &ctx);                         // vm/kernel_abi.h
 *     loom_cpu_jit_destroy(jit);                                 // frees the code
 *
 * Every program becomes ONE function with the kernel ABI of vm/kernel_abi.h:
 *
 *     int32_t kernel(void *const *buffers, const int64_t *symbols, const loom_kernel_ctx *ctx);
 *
 * THE ARGUMENT CONVENTION (the VM lowering follows it):
 *   buffers[k]  data pointer of the k-th BUFFER parameter of the program, in declaration
 *               order, scalar parameters skipped (dense row-major, element 0).
 *   symbols[j]  value of f->syms[j]: the program's signature symbols, in the order the
 *               program lists them (first appearance in buffer shapes, then scalar params,
 *               i.e. exactly f->syms). Scalar parameters are passed ONLY here.
 *   The kernel trusts these values: it does not re-check shapes against each other.
 *   Buffers may alias only when none of the aliased ones is written (params are noalias).
 *
 * The function's symbol name is "loom_kernel_<program name>" (loom_cpu_kernel_symbol).
 * A kernel returns 0, or 1 after ctx->set_error(...) on a run-time error (integer
 * division by zero, a local buffer that cannot be allocated). Parallel loops call
 * ctx->parallel_for with an outlined body; nested ones run serially inside the body.
 *
 * This header includes nothing from LLVM (the layer rule: callers outside targets/). */
#ifndef LOOM_TARGETS_CPU_CODEGEN_H
#define LOOM_TARGETS_CPU_CODEGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "base/strbuf.h"
#include "symbolic/sym.h"
#include "tensorprog/tp_ir.h"
#include "targets/cpu/kcache.h"
#include "vm/kernel_abi.h"

/* The code generator's version, part of every kernel cache key: bump it with any change to
 * targets/cpu (or to what it calls) that changes the code made for some program, so that no
 * cache entry made before the change is used after it. */
#define LOOM_CPU_CODEGEN_VERSION 7

/* How to generate code. Zero-initialised = host CPU, O3, fast reductions. */
typedef struct loom_cpu_options {
  const char *cpu;      /* LLVM CPU name ("sapphirerapids", "x86-64-v3"); NULL = the host's */
  const char *features; /* LLVM feature string ("+avx2,-avx512f"); NULL = host's (or cpu's when cpu set) */
  int opt_level;        /* 0..3; 0 in this struct means 3 (use -1 for no optimisation) */
  bool strict_fp;       /* no reassociation of float reductions (bit-exact to the interpreter's order) */
  bool pic;             /* position-independent code (always on for objects) */
  bool nvptx;           /* GPU kernels for targets/cuda (NVPTX): gpu_block / gpu_thread loops bound to
                           ctaid.x / tid.x, Shared allocs in addrspace(3), barriers, arguments by
                           value (targets/cuda/ptx.h describes the kernel ABI); false: the CPU's */
} loom_cpu_options;

/* The target machine a set of options resolves to: "x86_64-pc-linux-gnu sapphirerapids +avx512f,...". */
loom_status loom_cpu_describe_target(const loom_cpu_options *opt, loom_strbuf *out);

/* The width in bytes of the widest vector registers of the machine `opt` names (64 with
 * AVX-512, 32 with AVX / AVX2, else 16): what the schedule rules size register tiles by. */
int loom_cpu_vector_bytes(const loom_cpu_options *opt);
/* Whether that machine has AVX2 (the feature string, or the named CPU). */
bool loom_cpu_has_avx2(const loom_cpu_options *opt);
/* Whether the machine has AVX512-VNNI on 512-bit vectors (the int8 matmul's byte quads: pass_pack.c). */
bool loom_cpu_has_vnni512(const loom_cpu_options *opt);
/* Whether the machine runs 512-bit vector arithmetic as two 256-bit halves (AMD Zen 4): 256-bit
 * FMAs then reach the same FLOP rate, which the convolution rule's channel tiles use. */
bool loom_cpu_splits_512(const loom_cpu_options *opt);

/* "loom_kernel_<name>" into buf (truncated to cap). */
void loom_cpu_kernel_symbol(const loom_tp_func *f, char *buf, size_t cap);

/* Computes symbols[] for a call of `f` from its arguments (one per param, as for
 * loom_tp_interpret): binds the signature symbols from the buffer shapes and the scalar
 * params; errors name the buffer and axis. `out_syms` has room for f->nsyms values. */
loom_status loom_cpu_bind_symbols(loom_sym_ctx *cx, const loom_tp_func *f, const loom_tp_arg *args,
                                  size_t nargs, int64_t *out_syms);

/* LLVM IR text of the programs (after optimisation when optimize is true). */
loom_status loom_cpu_emit_ir(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                             size_t n, bool optimize, loom_strbuf *out);

/* Writes an ELF object file with one global function per program (named as above). */
loom_status loom_cpu_emit_object(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                                 size_t n, const char *path);

/* ---- JIT (ORC LLJIT) ------------------------------------------------------- */

typedef struct loom_cpu_jit loom_cpu_jit;

/* opt NULL = defaults. */
loom_status loom_cpu_jit_create(const loom_cpu_options *opt, loom_cpu_jit **out);
/* Compiles the programs (one object per distinct content, each optimised and added to the
 * JIT once: loom_cpu_jit_compile_cached with no disk cache); out_fns[i] is the kernel of
 * fs[i], valid until the JIT is destroyed. Identical programs share one kernel. */
loom_status loom_cpu_jit_compile(loom_cpu_jit *jit, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                 loom_kernel_fn *out_fns);
/* Milliseconds spent in the last compile: IR generation, optimisation, machine code. */
void loom_cpu_jit_last_times(const loom_cpu_jit *jit, double *irgen_ms, double *opt_ms, double *codegen_ms);
void loom_cpu_jit_destroy(loom_cpu_jit *jit);

/* ---- kernels by content (cg_cache.c): the kernel cache ------------------------------ */

/* What a compile through the cache did. */
typedef struct loom_cpu_cache_stats {
  uint32_t kernels;  /* programs given */
  uint32_t unique;   /* distinct contents among them (identical programs are compiled once) */
  uint32_t hits;     /* distinct contents whose object came from the disk cache */
  uint32_t compiled; /* distinct contents run through LLVM (misses) */
  uint32_t rejected; /* cache entries found corrupt, truncated or of another key, and ignored */
  double key_ms;     /* computing the keys and reading the cache */
  double irgen_ms, opt_ms, mc_ms; /* LLVM, summed over the compiled kernels (and workers) */
} loom_cpu_cache_stats;

/* The key text of each program (keys[i] appended to; initialised by the caller): what the
 * cache compares; its digest names the entry and the kernel symbol (cg_cache.c). */
loom_status loom_cpu_kernel_keys(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                 loom_strbuf *keys);

/* As loom_cpu_jit_compile (which is this with no disk cache): every program's content is
 * keyed, identical contents are compiled once, each object comes from `kc` (NULL: none) or
 * from LLVM (then stored in kc) and is added to the JIT once; the kernel symbol is
 * `loom_kernel_h<digest>`, so program names need not be unique. The misses are compiled on
 * one worker per available core (at most 8; LOOM_COMPILE_THREADS=N sets it). `stats` may be NULL. */
loom_status loom_cpu_jit_compile_cached(loom_cpu_jit *jit, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                        loom_kcache *kc, loom_kernel_fn *out_fns, loom_cpu_cache_stats *stats);

/* The AOT form: the distinct objects as one `ar` archive at `path` (with a symbol table), and
 * each program's kernel symbol appended to `symbols`, one line per program in fs order. */
loom_status loom_cpu_emit_archive(const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                                  loom_kcache *kc, const char *path, loom_strbuf *symbols, loom_cpu_cache_stats *stats);

#endif

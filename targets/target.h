/* target.h — the target interface: what the compile pipeline asks of a code generator.
 *
 * A target is a table of functions (QBE's `Target`, ggml's backend, IREE's HAL device):
 * the driver picks one by name (src/driver/pipeline.h, loom_pipeline_target) and the
 * pipeline's stages call through it, so adding a target means filling a table, not editing
 * the driver. The CPU (targets/cpu/target_cpu.c) is the first one.
 *
 *     const loom_target *t = &loom_target_cpu;
 *     LOOM_PROPAGATE(t->schedule(&o, arena, cx, f, &why));      // the `schedule` pass, per program
 *     loom_target_code *code;                                   // the `codegen` pass:
 *     LOOM_PROPAGATE(t->jit(&o, cx, fs, n, &code, fns));        //   in process, or
 *     LOOM_PROPAGATE(t->emit_object(&o, cx, fs, n, "k.o"));     //   to a file for an artifact
 *     LOOM_PROPAGATE(t->link_artifact(&art, dir, "m.so"));      // what loom_rt_open loads
 *     t->code_free(code);
 *
 * The pieces, in pipeline order:
 *   schedule       the target's schedule rules, applied to every tensor program (CPU:
 *                  tensorprog/tp_schedule_cpu.h; a GPU target binds threads instead).
 *   jit            codegen in process: one kernel per program with the ABI of
 *                  vm/kernel_abi.h, the code kept alive in `*out_code` until code_free.
 *   emit_object    codegen to a file: one kernel symbol per program (kernel_symbol names
 *                  it). CPU: an ELF object; a GPU target writes its device code here
 *                  (PTX or a cubin) for link_artifact to embed.
 *   runtime loader how a loaded runtime resolves the kernels. In process, the kernels `jit`
 *                  returns are handed to loom_rt_open_exec (loom_rt_options.kernels). For
 *                  an artifact, link_artifact packages the kernels with the executable so
 *                  that loom_rt_open (libloomrt) finds them: the CPU links one shared
 *                  object exporting LOOM_ARTIFACT_SYMBOL, whose kernel table the dynamic
 *                  loader resolves. A GPU target would embed its device code there and
 *                  load it through the runtime's device (not built yet).
 *
 * Every function reports failure as a loom_status naming the program or file. This header
 * includes nothing from LLVM or CUDA (layer rule: the driver includes it). */
#ifndef LOOM_TARGETS_TARGET_H
#define LOOM_TARGETS_TARGET_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "symbolic/sym.h"
#include "tensorprog/tp_ir.h"
#include "vm/exec.h"
#include "vm/kernel_abi.h"

/* What codegen makes. */
typedef enum loom_target_emit {
  LOOM_TARGET_EMIT_NONE,   /* nothing: the pipeline stops after VM lowering */
  LOOM_TARGET_EMIT_JIT,    /* kernels compiled and loaded in this process */
  LOOM_TARGET_EMIT_OBJECT, /* kernels written to a file (CPU: ELF object) for an artifact */
} loom_target_emit;

/* What codegen's kernel cache did (jit and emit_object fill it when asked). */
typedef struct loom_target_cache_stats {
  uint32_t kernels;  /* programs given */
  uint32_t unique;   /* distinct contents among them: identical programs are compiled once */
  uint32_t hits;     /* distinct contents whose code came from the disk cache */
  uint32_t compiled; /* distinct contents the code generator made (cache misses) */
  uint32_t rejected; /* cache entries found corrupt or of another key, and ignored */
} loom_target_cache_stats;

/* The CPU's kernel cache (targets/cpu/kcache.h); opaque here. */
typedef struct loom_kcache loom_kcache;

/* How to generate code. Zero-initialised: the host machine, no disk cache. */
typedef struct loom_target_options {
  const char *arch;     /* the machine: an LLVM CPU name for the CPU ("x86-64-v3"), an sm_NN
                           for a GPU; NULL: the host's */
  const char *features; /* target feature string ("+avx2,-avx512f"); NULL: the arch's */
  loom_kcache *cache;   /* kernels by content across runs (NULL: none; identical programs of
                           one codegen run are compiled once regardless) */
  loom_target_cache_stats *stats; /* where codegen reports what the cache did (may be NULL) */
} loom_target_options;

/* Code made in process by `jit` (CPU: an ORC LLJIT instance). Opaque to the driver. */
typedef struct loom_target_code loom_target_code;

/* What link_artifact packages. */
typedef struct loom_target_artifact {
  const char *object;             /* the file emit_object wrote */
  const loom_tp_func *const *fs;  /* the kernels' programs, in the executable's kernel-table order */
  uint32_t nkernels;              /* entries in fs */
  const loom_vm_kernel *sigs;     /* the executable's kernel table (the signatures kept with the code), nkernels entries */
  const uint8_t *exec;            /* the executable's bytes (vm/exec.h file format) */
  size_t exec_len;                /* their length */
  const char *externs;            /* extern signatures (libcall text form) or NULL when none */
} loom_target_artifact;

/* How a target's int8 matmul reads a constant weight (loom_target.int8_quads). */
typedef enum loom_target_quads {
  LOOM_TARGET_QUADS_NONE,  /* i16 pair words (vpmaddwd) */
  LOOM_TARGET_QUADS_EXACT, /* byte quads where the centred values fit a signed byte (dot4: AVX512-VNNI's vpdpbusd) */
  LOOM_TARGET_QUADS_PAIRS, /* byte quads only where, besides, each byte pair's sums fit i16 (dot4s: AVX2's vpmaddubsw) */
} loom_target_quads;

typedef struct loom_target {
  const char *name;    /* "cpu": what --target takes */
  const char *summary; /* one line for listings */
  /* The runtime device its kernels run on (loom_rt_options.device): "cpu" — host memory, where
   * externs such as the BLAS offload run too — or "cuda". */
  const char *device;
  /* Matmuls of more rows than this go to the device's BLAS library by default (the offload
   * pass; LOOM_OFFLOAD_THRESHOLD overrides it); -1: only when asked (--offload), at the
   * measured CPU threshold. */
  int64_t library_gemm_rows;
  /* Whether attention written out as matmul / scale / mask / softmax / matmul becomes the fused
   * attention op here (the `attention` pass; the CPU's flash kernel). false: it stays written out
   * (on the GPU its matmuls are cuBLAS's; the flash kernel there is the CPU's form, one thread per
   * 32-row tile, until a GPU attention rule exists). */
  bool fused_attention;
  /* Whether a row program that reads its input in several passes (softmax, the norms) takes
   * cheap elementwise producers, recomputed in each pass (the fuse pass's reread_rows): a GPU's
   * warp per row re-reads from cache (the attention mask's add into softmax: one kernel and a
   * round trip of the scores less); false on the CPU, where it measured slower. */
  bool reread_rows;

  /* The schedule rules for the machine `o` names: rewrites program `f` in place (new nodes
   * from `arena`); one line per decision goes to `why` (printed by `loom opt
   * --print-after-all`). */
  loom_status (*schedule)(const loom_target_options *o, loom_arena *arena, loom_sym_ctx *cx, loom_tp_func *f,
                          loom_strbuf *why);

  /* The width in bytes of the widest vector registers of the machine `o` (64 AVX-512, 32 AVX2):
   * legalization sizes the register tiles that generated programs fix to it (graph.h
   * loom_graph_module_set_vector_bytes). NULL: 64. */
  int (*vector_bytes)(const loom_target_options *o);
  /* The column panel width the matmul schedule rule reads B in on the machine `o`: a constant
   * weight with a multiple of it columns is laid out panel by panel at compile time (the
   * `pack` pass, graph/pass_pack.c) and read in place. 0 (or a NULL hook): no such layout. */
  int (*matmul_panel)(const loom_target_options *o);
  /* How the int8 matmul reads a constant weight on the machine `o` (the driver hands it to the
   * `pack` pass as a loom_pack_quads, graph/passes.h). NULL: LOOM_TARGET_QUADS_NONE. */
  loom_target_quads (*int8_quads)(const loom_target_options *o);

  /* Codegen in process: out_fns[i] is the kernel of fs[i], valid until code_free(*out_code).
   * Through o->cache when set; what it did into *o->stats when set. */
  loom_status (*jit)(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                     loom_target_code **out_code, loom_kernel_fn *out_fns);
  /* Frees what `jit` made (NULL is fine); its kernels are invalid afterwards. */
  void (*code_free)(loom_target_code *code);

  /* Codegen to a file: one kernel symbol per program (kernel_symbol) in `path`. */
  loom_status (*emit_object)(const loom_target_options *o, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                             size_t n, const char *path);
  /* The symbol of f's kernel in what emit_object writes, into buf (truncated to cap). */
  void (*kernel_symbol)(const loom_tp_func *f, char *buf, size_t cap);

  /* Runtime loader, artifact side: packages `a` into one file at `out_path` that
   * loom_rt_open loads (scratch files go to the existing directory `workdir`). */
  loom_status (*link_artifact)(const loom_target_artifact *a, const char *workdir, const char *out_path);
} loom_target;

/* The CPU through LLVM (targets/cpu/target_cpu.c). */
extern const loom_target loom_target_cpu;
#if LOOM_HAVE_CUDA
/* NVIDIA GPUs through LLVM's NVPTX back end (targets/cuda/target_cuda.c; with the toolkit only). */
extern const loom_target loom_target_cuda;
#endif

#endif

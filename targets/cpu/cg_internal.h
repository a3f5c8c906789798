/* cg_internal.h — state shared by the CPU code generator's files (cg_*.c).
 *
 * Values in registers: integers as iN of their dtype, bool as i1, f32/f64 as float/double,
 * f16 and bf16 as float holding a value already rounded to the storage type (every
 * arithmetic result of those dtypes is rounded again, as the interpreter does). Index
 * values (symbolic expressions) are i64. */
#ifndef LOOM_TARGETS_CPU_CG_INTERNAL_H
#define LOOM_TARGETS_CPU_CG_INTERNAL_H

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/TargetMachine.h>

#include "base/vec.h"
#include "targets/cpu/codegen.h"

/* A symbolic variable bound to an i64 value (signature symbols, loop variables). `at` is
 * the hoist point of the binding's scope (the terminator of a block that dominates the whole
 * scope), where divisions of symbols are computed once (cg_expr.c); NULL: none (lane mode). */
typedef struct cg_symval {
  const loom_sym_expr *var;
  LLVMValueRef v;
  LLVMValueRef at;
} cg_symval;

/* A hoisted floordiv/floormod of symbols: its value, computed before `at`. */
typedef struct cg_divval {
  const loom_sym_expr *e;
  LLVMValueRef at;
  LLVMValueRef v;
} cg_divval;

/* A buffer bound to its data pointer. */
typedef struct cg_bufval {
  const loom_tp_buffer *buf;
  LLVMValueRef ptr;
} cg_bufval;

/* A let bound to its value. */
typedef struct cg_letval {
  const loom_tp_stmt *let;
  LLVMValueRef v;
} cg_letval;

typedef struct cg {
  LLVMContextRef c;
  LLVMModuleRef mod;
  LLVMBuilderRef b;
  loom_sym_ctx *cx;
  const loom_tp_func *f;
  const char *sym_base;       /* the base of the LLVM symbols of f's functions (f->name, or a content name) */
  bool strict_fp;
  /* types */
  LLVMTypeRef t_i1, t_i8, t_i16, t_i32, t_i64, t_f16, t_f32, t_f64, t_ptr, t_void;
  LLVMTypeRef t_ctx;  /* struct loom_kernel_ctx */
  LLVMTypeRef t_body; /* loom_parallel_body */
  /* the LLVM function being generated */
  LLVMValueRef fn;
  LLVMValueRef ctxp;          /* the kernel ctx pointer */
  int reduce_depth;           /* enclosing reduce loops */
  int cold;                   /* > 0 inside the else branch of an `if likely(..)`: loops stay plain */
  /* extents an enclosing if's guard holds below a small constant (cg_stmt.c short_guards): a
   * vector loop over one of them is folded into masked vectors instead of a scalar remainder */
  const loom_sym_expr *short_ext[8];
  int nshort;
  int nbody;                  /* outlined bodies so far (naming) */
  /* bindings (innermost last) */
  LOOM_VEC(cg_symval) syms;
  LOOM_VEC(cg_bufval) bufs;
  LOOM_VEC(cg_letval) lets;
  LOOM_VEC(cg_divval) divs;    /* hoisted symbolic divisions (cg_sym) */
  int hoisting;                /* > 0 while one is computed at its hoist point: no branches */
  LOOM_VEC(LLVMValueRef) heap; /* malloc'd locals of the current seq scopes, freed at scope end */
  loom_status st;             /* first error */
  /* lane mode (explicit vector code of a VECTORIZE loop, cg_stmt.c): the loop variable
   * is bound to 0 and accesses that use it become <lanes x T> loads and stores */
  unsigned lanes;             /* 0: scalar code */
  const loom_sym_expr *lane_var;
  unsigned lane_max_stride;   /* while checking a loop for lane mode: the largest load stride allowed */
  /* the machine (for the few operations lowered to x86 intrinsics; generic IR elsewhere) */
  bool x86;                   /* the target is x86-64 (SSE2: pmaddwd on 4 lanes) */
  bool avx2;                  /* ... with AVX2 (vpmaddwd on 8 lanes) */
  bool vnni512;               /* ... with AVX512-VNNI (vpdpbusd on 16 lanes) */
  /* NVPTX (loom_cpu_options.nvptx, used by targets/cuda): GPU loops bound to the grid and the
   * block, no parallel_for or lane mode, failures stored into an error word (ctxp points to
   * it) instead of ctx->set_error */
  bool gpu;
} cg;

enum { LOOM_CPU_MAX_LANES = 64 };

/* cg_expr.c */
LLVMTypeRef cg_reg_type(cg *g, loom_dtype t);  /* register type of a dtype */
LLVMTypeRef cg_mem_type(cg *g, loom_dtype t);  /* memory type of a dtype */
LLVMValueRef cg_sym(cg *g, const loom_sym_expr *e);
LLVMValueRef cg_expr(cg *g, const loom_tp_expr *e);
/* x OP y for two register values of dtype t, as an OP expression computes it. */
LLVMValueRef cg_binop(cg *g, loom_tp_op op, loom_dtype t, LLVMValueRef x, LLVMValueRef y);
LLVMValueRef cg_elem_ptr(cg *g, const loom_tp_buffer *buf, loom_tp_expr *const *idx);
LLVMValueRef cg_to_mem(cg *g, loom_dtype t, LLVMValueRef v);   /* register -> memory value */
LLVMValueRef cg_from_mem(cg *g, loom_dtype t, LLVMValueRef v); /* memory -> register value */
LLVMValueRef cg_round_lowp(cg *g, loom_dtype t, LLVMValueRef v); /* f32 -> lowp float t's value, saturating */
LLVMValueRef cg_i64(cg *g, int64_t v);
LLVMValueRef cg_kf(LLVMTypeRef ty, double v);     /* float constant, splatted for vector types */
LLVMValueRef cg_ki(LLVMTypeRef ty, long long v);  /* integer constant, splatted for vector types */
bool cg_is_vec(LLVMValueRef v);
LLVMTypeRef cg_like_ty(LLVMTypeRef like, LLVMTypeRef scalar_ty); /* scalar_ty, a vector as wide as `like` when it is one */
/* cg_numeric.c: inline f32 (or f32-vector) math that vectorises; NaN stays NaN. */
LLVMValueRef cg_exp_f32(cg *g, LLVMValueRef x);  /* <= 2 ulp, subnormal results included */
LLVMValueRef cg_sigmoid_f32(cg *g, LLVMValueRef x, LLVMValueRef m); /* m * sigmoid(x) when m is given; about 2 ulp */
LLVMValueRef cg_tanh_f32(cg *g, LLVMValueRef x); /* about 2e-7 relative */
LLVMValueRef cg_erf_f32(cg *g, LLVMValueRef x);  /* below 1.5e-7 absolute */
LLVMValueRef cg_splat(cg *g, LLVMValueRef v, unsigned lanes);
/* Lane mode: does `e` depend on the lane variable? */
bool cg_expr_uses_lane(cg *g, const loom_tp_expr *e);
/* cg_speculate.c: must `e` stay under its condition -- does it load memory that may be out of
 * bounds there, or divide integers? Loads of rank-0 buffers, and loads that `known` (the
 * condition, evaluated anyway; NULL: none) makes too, are safe to evaluate unconditionally. */
bool cg_unsafe_to_speculate(const loom_tp_expr *e, const loom_tp_expr *known);
/* cg_lanes.c: whether VECTORIZE loop s (a constant extent, checked by the caller) runs in lane mode:
 * its body only stores and lets, unit-stride (or small constant strides) in its variable, each
 * store's buffer read and written at one index tuple. */
bool cg_lanes_ok(cg *g, const loom_tp_stmt *s);
/* cg_transpose.c: emits UNROLL loop s when it is the square tile of a transposing copy
 * (`for a unroll { for v vectorize { Y[.., v] = X[.., v .., a] } }`, n x n, n a power of two up to
 * 16) as vector loads, an in-register transpose and vector stores; false (nothing emitted) when not. */
bool cg_transpose_tile(cg *g, const loom_tp_stmt *s);
/* Lane mode: the stride s of `var` in index `x` (x - s*var free of var, s in [1, 4]), else 0. */
unsigned cg_lane_stride(cg *g, const loom_sym_expr *x, const loom_sym_expr *var);
/* Branches to the function's failure exit when `bad` (i1) is true, after ctx->set_error(msg). */
void cg_fail_if(cg *g, LLVMValueRef bad, const char *msg);
/* As cg_fail_if, for an index read from data: the failure reports `index` (i64) and its valid
 * inclusive range [lo, hi] (i64 values) through ctx->set_error_index. */
void cg_fail_index_if(cg *g, LLVMValueRef bad, const char *msg, LLVMValueRef index, LLVMValueRef lo, LLVMValueRef hi);
void cg_error(cg *g, loom_status s); /* records the first error */
LLVMValueRef cg_call_intrinsic(cg *g, const char *name, LLVMTypeRef overload, LLVMValueRef *args, unsigned n);

/* Ends the current block with a branch to a new one and moves there; returns that branch,
 * the hoist point of a scope that starts here (cg_symval.at). */
LLVMValueRef cg_hoist_point(cg *g);
/* Forgets hoisted divisions whose scope has ended. */
void cg_prune_divs(cg *g);

/* cg_target.c: the machine, modules, the pipeline */
loom_status cg_from_llvm_error(LLVMErrorRef err, const char *what);
loom_status cg_make_tm(const loom_cpu_options *opt, LLVMTargetMachineRef *out, char **out_cpu, char **out_feat);
/* The module of fs (bases[i]: the symbol base of fs[i], NULL for the names), verified. */
loom_status cg_build_module(LLVMContextRef c, LLVMTargetMachineRef tm, const char *cpu, const char *feat,
                            const loom_cpu_options *opt, loom_sym_ctx *cx, const loom_tp_func *const *fs,
                            const char *const *bases, size_t n, LLVMModuleRef *out);
/* The LLVM pass pipeline text for `opt` (part of the kernel cache key): $LOOM_LLVM_PIPELINE when
 * set; else Loom's own (CG_LOOM_O3_PIPELINE) at the default level, `default<O1|2|3>` (written into
 * buf) at levels 1 and 2 and for NVPTX; "" for none (opt_level -1). docs/codegen.md, "The pass
 * pipeline". */
#define CG_LOOM_O3_PIPELINE                                                                                \
  "always-inline,function(sroa,early-cse<memssa>,instcombine<no-verify-fixpoint>,simplifycfg,gvn,"          \
  "loop-mssa(loop-rotate,licm,simple-loop-unswitch),simplifycfg,instcombine<no-verify-fixpoint>,"           \
  "loop-vectorize,instcombine<no-verify-fixpoint>,loop-unroll<O3;no-partial;no-runtime>,"                   \
  "instcombine<no-verify-fixpoint>,simplifycfg,slp-vectorizer,instcombine<no-verify-fixpoint>)"
const char *cg_pipeline(const loom_cpu_options *opt, char *buf, size_t cap);
/* Runs cg_pipeline's passes over mod; a pipeline LLVM cannot parse is an INVALID_ARGUMENT error
 * naming it. */
loom_status cg_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, const loom_cpu_options *opt);

/* cg_cache.c: kernels as content-addressed objects */
typedef struct cg_machine {
  const loom_cpu_options *opt;
  LLVMTargetMachineRef tm; /* for the calling thread */
  const char *triple, *cpu, *feat;
} cg_machine;
typedef struct cg_kobj {
  const loom_tp_func *f; /* the first program with this content */
  char *key;             /* the key text */
  size_t key_len;
  char base[40];         /* "h<digest>": the symbol is loom_kernel_<base> */
  uint8_t *obj;          /* the ELF object */
  size_t len;
  bool hit;              /* from the disk cache */
  uint64_t ns[3];        /* IR generation, optimisation, machine code (when compiled): wall time */
  uint64_t cpu_ns;       /* the compiling thread's CPU time for all three (LOOM_CG_TIMES) */
} cg_kobj;
typedef struct cg_kobjs {
  cg_kobj *v;            /* distinct contents, in order of first appearance */
  size_t n;
  size_t *which;         /* per program: its entry in v */
} cg_kobjs;
/* The key text of f on machine m (see cg_cache.c) appended to `key`. */
loom_status cg_kernel_key(const cg_machine *m, loom_sym_ctx *cx, const loom_tp_func *f, loom_strbuf *key);
/* One object per distinct key of fs: from `kc` (NULL: no disk cache) or compiled (then stored). */
loom_status cg_kernel_objects(const cg_machine *m, loom_sym_ctx *cx, const loom_tp_func *const *fs, size_t n,
                              loom_kcache *kc, cg_kobjs *out, loom_cpu_cache_stats *stats);
void cg_kobjs_free(cg_kobjs *ks);
/* The objects as one `ar` archive with a symbol table (what the artifact's link reads). */
loom_status cg_write_archive(const cg_kobjs *ks, loom_strbuf *out);

/* cg_stmt.c */
/* f's kernel: `loom_kernel_<sym_base>` and internal `<sym_base>.impl` / `.parK`; sym_base NULL: f->name.
 * Nothing of f's name reaches the code otherwise (run-time messages name buffers only: the VM
 * names the kernel), so one object serves every program with f's content. */
loom_status cg_emit_kernel(cg *g, const loom_tp_func *f, const char *sym_base);
void cg_stmt(cg *g, const loom_tp_stmt *s);
/* Binds a loop variable or symbol to its value (`at`: the hoist point of the binding's scope,
 * cg_hoist_point, or NULL) / a buffer to its pointer, until the enclosing scope pops them. */
void cg_push_sym(cg *g, const loom_sym_expr *var, LLVMValueRef v, LLVMValueRef at);
void cg_push_buf(cg *g, const loom_tp_buffer *b, LLVMValueRef p);
/* One iteration's body of loop s with its variable bound to iv (and the fact 0 <= iv < extent). */
void cg_loop_body(cg *g, const loom_tp_stmt *s, LLVMValueRef iv);
/* Loop s as `for (v = begin; v < end; v += step) body` (begin >= 0), with s's kind's metadata. */
void cg_range_loop(cg *g, const loom_tp_stmt *s, LLVMValueRef begin, LLVMValueRef end, int64_t step);
/* Frees the heap-allocated Local buffers above `mark` (the end of their scope). */
void cg_free_heap_to(cg *g, size_t mark);
/* The end of one kernel's emission: the per-function tables emptied, the first error returned. */
loom_status cg_end_kernel(cg *g);

/* cg_gpu.c */
/* NVPTX: __syncthreads(). */
void cg_gpu_barrier(cg *g);
/* NVPTX: a gpu_block or gpu_thread loop (the body under `index < extent`, split at barriers). */
void cg_emit_gpu_loop(cg *g, const loom_tp_stmt *s);
/* NVPTX: a gpu_lanes loop (lane = tid.x & 31 runs iterations lane, lane + 32, ..; a `reduce`
 * one combines its accumulators across the warp), then a warp sync. */
void cg_emit_gpu_lanes(cg *g, const loom_tp_stmt *s);
/* NVPTX: f's kernel `sym` (buffers and symbols by value, the error word last). */
loom_status cg_emit_gpu_kernel(cg *g, const loom_tp_func *f, const char *sym);

#endif

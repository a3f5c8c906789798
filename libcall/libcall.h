/* libcall.h — external functions at run time (libloomrt): signatures, loading, calls.
 *
 *     loom_libcall_lib *lib;
 *     LOOM_PROPAGATE(loom_libcall_lib_create(NULL, sigs, nsigs, &opts, &lib));   // dlopen, dlsym, ffi_prep_cif
 *     LOOM_PROPAGATE(loom_libcall_lib_check_exec(lib, exe));                     // counts agree with CALLX
 *     LOOM_PROPAGATE(loom_vm_create(NULL, exe, loom_libcall_resolve, lib, pool, &vm));
 *     ... loom_vm_call ...; loom_vm_destroy(vm); loom_libcall_lib_destroy(lib);
 *
 * (or give loom_libcall_lib_externs(lib) to loom_rt_options.externs for loom_rt_open.)
 *
 * libcall/ plugs into the runtime from above: it includes vm/ headers (the kernel ABI,
 * the executable, the extern-provider interface of vm/extern.h), vm/ includes nothing of
 * libcall/. loom_libcall_resolve is a loom_vm_resolver (vm/vm.h).
 *
 * Every extern is called by the VM through the fixed kernel ABI of vm/kernel_abi.h with
 * the operand layout the VM lowering uses for `y = call_extern(@f, (args...), out_sinfo)`:
 *
 *     buffers  the tensor arguments in order, then the output tensor (allocated by the VM);
 *     symbols  for each of those buffers in the same order its dims (rank values each),
 *              then the values of the i64 scalar (`sym(...)`) arguments in order.
 *
 * An extern is bound in one of three ways, chosen once at load:
 *   - kernel ABI (`abi` kernel): the symbol already has the kernel signature and is called
 *     directly: no trampoline, no libffi.
 *   - C ABI (`abi` c): an arbitrary C function whose arguments are listed by the
 *     declaration (`loom_libcall_carg`: a buffer pointer, a symbol, a number loaded from a
 *     rank-0 tensor, a constant; converted to ptr / i32 / i64 / f32 / f64). The libffi call
 *     interface is prepared once per signature here; the VM calls an ffi closure with the
 *     kernel ABI that unpacks buffers and symbols into those arguments.
 *   - built-in (`blas.sgemm`, `blas.dgemm_nt`, ...; see libcall/blas.c): CBLAS GEMM in its
 *     transposed and batched forms, leading dims read from the shapes. The CBLAS library is
 *     opened with dlopen (libloomrt never links it): LOOM_BLAS_LIBRARY, else
 *     libopenblas.so.0, libcblas.so.3, libblas.so.3.
 *
 * Load-time errors name the extern and the symbol: missing library, missing symbol,
 * a signature the library describes differently (an optional `<symbol>__loom_sig` string
 * the library exports, e.g. "void(f32*, i64, f64, f32*)"), counts that disagree with the
 * executable, a built-in given the wrong ranks or dtypes. Nothing a declaration could get
 * wrong is left to fail at call time. */
#ifndef LOOM_LIBCALL_LIBCALL_H
#define LOOM_LIBCALL_LIBCALL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "vm/extern.h"
#include "vm/kernel_abi.h"

/* vm/exec.h (only a pointer is taken here). */
typedef struct loom_vm_exec loom_vm_exec;

#define LOOM_LIBCALL_MAX_ARGS 32u /* C arguments of one extern */

/* C types an argument or result can have. */
typedef enum loom_libcall_ctype {
  LOOM_LIBCALL_CT_VOID, /* no value (results only) */
  LOOM_LIBCALL_CT_PTR,  /* a data pointer */
  LOOM_LIBCALL_CT_I32,  /* int32_t */
  LOOM_LIBCALL_CT_I64,  /* int64_t */
  LOOM_LIBCALL_CT_F32,  /* float */
  LOOM_LIBCALL_CT_F64,  /* double */
  LOOM_LIBCALL_CT_COUNT
} loom_libcall_ctype;
const char *loom_libcall_ctype_name(loom_libcall_ctype t);

/* Where a C argument's value comes from at the call. */
typedef enum loom_libcall_src {
  LOOM_LIBCALL_SRC_BUF,   /* buffers[index] (the data pointer) */
  LOOM_LIBCALL_SRC_SYM,   /* symbols[index] */
  LOOM_LIBCALL_SRC_LOAD,  /* element 0 of buffers[index], of dtype load_dtype (a rank-0 tensor) */
  LOOM_LIBCALL_SRC_CONST, /* the constant `value` */
} loom_libcall_src;

/* One argument of a C-ABI extern. */
typedef struct loom_libcall_carg {
  loom_libcall_ctype type; /* the C type passed (PTR only from BUF) */
  loom_libcall_src src;    /* where the value comes from */
  uint32_t index;          /* BUF / LOAD: buffer index; SYM: symbol index */
  loom_dtype load_dtype;   /* LOAD: element type (f32, f64, i32, i64); BUF: the buffer's dtype */
  int64_t value;           /* CONST */
} loom_libcall_carg;

typedef enum loom_libcall_abi {
  LOOM_LIBCALL_ABI_KERNEL, /* the symbol has the kernel ABI: called directly */
  LOOM_LIBCALL_ABI_C,      /* a C function of `cargs`, called through libffi */
} loom_libcall_abi;

/* Everything the run side needs about one extern (made by the compile side,
 * loom_libcall_decl_lower, or written by hand). Strings and arrays are borrowed only
 * while loom_libcall_lib_create runs: the lib keeps its own copy. */
typedef struct loom_libcall_sig {
  const char *name;              /* extern name: the executable's extern table entry */
  const char *symbol;            /* C symbol or built-in name ("blas.sgemm") */
  const char *library;           /* shared object to dlopen, or NULL: host symbols, built-ins, the process */
  loom_libcall_abi abi;
  bool pure;                     /* no side effects besides writing its output */
  uint32_t nbuf;                 /* buffers (tensor args, then the output) */
  const loom_dtype *buf_dtypes;  /* nbuf element types (LOOM_DTYPE_COUNT: any) */
  const int32_t *buf_ranks;      /* nbuf ranks */
  uint32_t nsym;                 /* symbols: sum of buf_ranks + i64 scalars */
  loom_libcall_ctype ret;        /* C ABI: VOID, or I32 (nonzero = failure) */
  uint32_t ncargs;               /* C ABI: arguments */
  const loom_libcall_carg *cargs;
} loom_libcall_sig;

/* "void scale(f32*, i64, f64, f32*)" (C ABI) or "kernel scale(3 buffers, 4 symbols)". */
void loom_libcall_sig_print(const loom_libcall_sig *s, loom_strbuf *sb);
/* The argument list alone, as a library's `<symbol>__loom_sig` writes it: "void(f32*, i64, f64, f32*)". */
void loom_libcall_sig_ctypes(const loom_libcall_sig *s, loom_strbuf *sb);

/* A function the host provides by symbol name (searched before the built-ins and dlsym). */
typedef struct loom_libcall_symbol {
  const char *symbol;
  void *fn; /* a C function of the declared C signature, or a loom_kernel_fn for the kernel ABI */
} loom_libcall_symbol;

typedef struct loom_libcall_options {
  const loom_libcall_symbol *symbols; /* host functions */
  uint32_t nsymbols;
  const char *search_dir; /* relative `library` paths are taken from here (e.g. the model's directory) */
  /* loom_libcall_resolve asks this (a loom_vm_resolver) for kernels and unknown names */
  loom_kernel_fn (*fallback)(void *ctx, const char *name, int is_extern);
  void *fallback_ctx;
  /* Where the buffers live: NULL or "cpu", host memory (every kind of extern); "cuda", GPU
   * memory: only the GEMM built-ins, run by cuBLAS (cublas.c); any other extern is refused. */
  const char *device;
} loom_libcall_options;

typedef struct loom_libcall_lib loom_libcall_lib;

/* Loads every extern of `sigs` (opts may be NULL). On error nothing is kept. */
LOOM_MUST_USE loom_status loom_libcall_lib_create(loom_allocator *alloc, const loom_libcall_sig *sigs, uint32_t n,
                                                  const loom_libcall_options *opts, loom_libcall_lib **out);
void loom_libcall_lib_destroy(loom_libcall_lib *lib);
/* The kernel-ABI entry point of extern `name`, or NULL. */
loom_kernel_fn loom_libcall_lib_find(const loom_libcall_lib *lib, const char *name);
/* A loom_vm_resolver: externs from the lib, kernels (and unknown externs) from opts->fallback. */
loom_kernel_fn loom_libcall_resolve(void *lib, const char *name, int is_extern);
/* {name, entry point} of every extern, for loom_rt_options.externs (owned by the lib). */
const loom_artifact_kernel *loom_libcall_lib_externs(const loom_libcall_lib *lib, uint32_t *out_n);
/* Checks that every extern `exe` calls is in the lib with the same buffer and symbol counts. */
LOOM_MUST_USE loom_status loom_libcall_lib_check_exec(const loom_libcall_lib *lib, const loom_vm_exec *exe);

/* The runtime's extern provider (vm/extern.h; libcall/provider.c): loads the externs an
 * ALM2 artifact declares from their signature text (loom_libcall_sigs_decode), with
 * loom_libcall_lib_create and loom_libcall_lib_check_exec. loom_rt_open uses it. */
extern const loom_vm_extern_provider loom_libcall_extern_provider;
/* The same for a model on the CUDA device: the GEMM built-ins through cuBLAS, nothing else. */
extern const loom_vm_extern_provider loom_libcall_extern_provider_cuda;

/* ---- signatures as text (libcall/sigtext.c): what an AOT artifact carries ---- */
typedef struct loom_arena loom_arena;
/* Appends one line per signature. */
void loom_libcall_sigs_encode(const loom_libcall_sig *sigs, uint32_t n, loom_strbuf *sb);
/* Parses text from loom_libcall_sigs_encode (syntax and ranges checked: DATA_LOSS naming the
 * line); the signatures live in `a`. loom_libcall_lib_create checks their consistency. */
LOOM_MUST_USE loom_status loom_libcall_sigs_decode(const char *text, size_t len, loom_arena *a, loom_libcall_sig **out,
                                                   uint32_t *n);

/* ---- built-ins (libcall/blas.c) ---- */

/* A built-in binding: checks a signature at load, then runs with it. */
typedef struct loom_libcall_builtin {
  const char *name; /* "blas.sgemm" */
  const char *doc;  /* one line */
  loom_status (*check)(const loom_libcall_sig *sig);
  int32_t (*call)(const loom_libcall_sig *sig, void *const *buffers, const int64_t *symbols,
                  const loom_kernel_ctx *ctx);
} loom_libcall_builtin;
/* The built-in called `name`, or NULL. */
const loom_libcall_builtin *loom_libcall_builtin_find(const char *name);
/* All built-ins (for `loom` help and docs). */
const loom_libcall_builtin *loom_libcall_builtins(uint32_t *out_n);
/* Opens the CBLAS library once per process (kept open: OpenBLAS holds buffers in globals). */
LOOM_MUST_USE loom_status loom_libcall_blas_open(void);
/* The same built-ins on GPU memory through cuBLAS (libcall/cublas.c), and its loader. */
const loom_libcall_builtin *loom_libcall_cublas_find(const char *name);
LOOM_MUST_USE loom_status loom_libcall_cublas_open(void);

#endif

/* exec.h — VM executables: the in-memory form, the builder, the file format (writer and
 * loader), the verifier and the disassembler.
 *
 * File format (little-endian; docs/vm.md has the full table):
 *     header   "LOOMEXE\0", u32 version (LOOM_VM_FORMAT_VERSION), u32 section count,
 *              u64 file size, then per section {u32 id, u32 count, u64 offset, u64 size}
 *     sections STRINGS SYMVARS INTCONSTS CONSTS KERNELS EXTERNS FUNCS CODE LISTS DEBUG DATA
 *              each exactly once, in that order, 8-byte aligned; DATA 64-byte aligned so
 *              weights are used in place from a memory-mapped file.
 * Every index in the file is checked at load (loom_vm_exec_load); an instruction stream
 * that loads is safe for the interpreter loop to run without checks. */
#ifndef LOOM_VM_EXEC_H
#define LOOM_VM_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "vm/bytecode.h"
#include "vm/kernel_abi.h"
#include "vm/object.h"

#define LOOM_VM_FORMAT_VERSION 3u /* 2: kernel and extern records carry signatures; 3: constant records carry a check */
#define LOOM_VM_MAX_REGS 65535u /* registers of each bank per function */
#define LOOM_VM_MAX_CALL_ARGS 256u /* operands of one call, buffers or symbols (checked at load) */

typedef enum loom_vm_section {
#define LOOM_VM_SECTIONS(X) \
  X(STRINGS) X(SYMVARS) X(INTCONSTS) X(CONSTS) X(KERNELS) X(EXTERNS) X(FUNCS) X(CODE) X(LISTS) X(DEBUG) X(DATA)
#define X(n) LOOM_VM_SEC_##n,
  LOOM_VM_SECTIONS(X)
#undef X
  LOOM_VM_SEC_COUNT
} loom_vm_section;
const char *loom_vm_section_name(uint32_t id);

/* A tensor constant (weight): its bytes live in DATA. */
typedef struct loom_vm_const {
  uint32_t name;      /* string offset */
  uint32_t dtype;     /* loom_dtype */
  uint32_t rank;      /* <= LOOM_VM_MAX_RANK */
  int64_t dims[LOOM_VM_MAX_RANK]; /* shape */
  uint64_t offset;    /* byte offset in DATA (64-aligned) */
  uint64_t nbytes;    /* dense size */
  uint64_t check;     /* XXH3-64 of its nbytes bytes, set by the writer (loom_vm_exec_write): a loaded
                         executable checks a constant against it before its first use */
} loom_vm_const;

typedef struct loom_vm_exec loom_vm_exec;

/* A kernel or extern: counts of buffers and symbols (the kernel ABI) and its signature.
 *
 * Signature words (`sig`), the kernel's parameters as the code it runs indexes them:
 *     per buffer   dtype, rank, then per axis a dim expression: n, then n postfix items;
 *                  or dtype, LOOM_VM_SIG_FLAT, one expression: the element count (any rank)
 *     per symbol   its name (string offset)
 * Items (LOOM_VM_SIG_*): SYM j (push symbols[j]), CONST lo hi (push the int64
 * lo | hi << 32), then operators popping their operands and pushing the result. The
 * verifier checks the words and every CALLK / CALLX operand's declared kind, dtype and rank
 * against them; before each call the VM checks each buffer's dtype, rank and dims against
 * the expressions evaluated at the symbols passed (kernel_sig.c). */
typedef struct loom_vm_kernel {
  uint32_t name; /* string offset: the symbol the artifact resolves */
  uint32_t nbuf; /* tensor buffers */
  uint32_t nsym; /* int64 symbols */
  uint32_t nsig; /* words in sig */
  uint32_t *sig; /* the signature (above) */
} loom_vm_kernel;

/* Dim-expression items of kernel signatures; the order is part of the format. */
typedef enum loom_vm_sig_item {
  LOOM_VM_SIG_SYM = 0,      /* j: push symbols[j] */
  LOOM_VM_SIG_CONST = 1,    /* lo hi: push (int64)(lo | hi << 32) */
  LOOM_VM_SIG_ADD = 2,      /* a b -> a + b (checked, as every operator) */
  LOOM_VM_SIG_SUB = 3,      /* a b -> a - b */
  LOOM_VM_SIG_MUL = 4,      /* a b -> a * b */
  LOOM_VM_SIG_FLOORDIV = 5, /* a b -> floor(a / b) */
  LOOM_VM_SIG_FLOORMOD = 6, /* a b -> a - floor(a / b) * b */
  LOOM_VM_SIG_MIN = 7,      /* a b -> min(a, b) */
  LOOM_VM_SIG_MAX = 8,      /* a b -> max(a, b) */
  LOOM_VM_SIG_EQ = 9,       /* a b -> a == b (1 or 0) */
  LOOM_VM_SIG_LT = 10,      /* a b -> a < b */
  LOOM_VM_SIG_LE = 11,      /* a b -> a <= b */
  LOOM_VM_SIG_SELECT = 12,  /* c a b -> c != 0 ? a : b */
  LOOM_VM_SIG_ITEM_COUNT
} loom_vm_sig_item;
#define LOOM_VM_SIG_FLAT 0xFFFFFFFFu   /* a buffer's rank: any rank, the expression is its element count */
#define LOOM_VM_SIG_MAX_ITEMS 256u     /* items of one dim expression */
#define LOOM_VM_SIG_MAX_DEPTH 32u      /* its evaluation stack */

/* Checks kernel record k's signature words (called by the verifier). */
LOOM_MUST_USE loom_status loom_vm_sig_verify(const loom_vm_exec *e, const loom_vm_kernel *k);
/* Buffer b's dtype and rank in k's signature (rank LOOM_VM_SIG_FLAT: any); b < k->nbuf. */
void loom_vm_sig_buffer(const loom_vm_kernel *k, uint32_t b, uint32_t *dtype, uint32_t *rank);
/* Before a call: every buffer tensor against k's signature at the symbols' values. */
LOOM_MUST_USE loom_status loom_vm_sig_check_call(const loom_vm_exec *e, const loom_vm_kernel *k, bool is_extern,
                                                 loom_tensor *const *bufs, const int64_t *syms);
/* k's signature as text: "(f32(n, 2*n + 1), f32[n*m]; n, m)". */
void loom_vm_sig_format(const loom_vm_exec *e, const loom_vm_kernel *k, loom_strbuf *sb);
/* The dims buffer b (< k->nbuf) of k's signature has at these symbol values: *rank dims
 * (LOOM_VM_SIG_FLAT: one, the element count); false when they overflow. */
bool loom_vm_sig_eval_dims(const loom_vm_kernel *k, uint32_t b, const int64_t *syms, int64_t *dims, uint32_t *rank);
/* Whether k's signature is exactly these words (a kernel table's own copy, kernel_abi.h). */
bool loom_vm_sig_equal(const loom_vm_kernel *k, const uint32_t *sig, uint32_t nsig);

/* A parameter of a function's symbolic signature. */
typedef struct loom_vm_param {
  uint32_t name;  /* string offset */
  uint32_t dtype; /* loom_dtype or LOOM_VM_ANY_DTYPE */
  uint32_t rank;
  uint32_t dims[LOOM_VM_MAX_RANK]; /* string offsets: "b", "s + past", "768" */
} loom_vm_param;

/* Debug info: instruction pc -> graph binding text. */
typedef struct loom_vm_debug {
  uint32_t pc;   /* instruction index in its function */
  uint32_t text; /* string offset, e.g. "lv3 = matmul(x, w)" */
} loom_vm_debug;

typedef struct loom_vm_func {
  uint32_t name;        /* string offset */
  uint32_t nobj;        /* object registers */
  uint32_t nint;        /* int registers */
  uint32_t nparams;     /* tensor parameters, in R[0 .. nparams) */
  uint32_t nint_params; /* int parameters, in I[0 .. nint_params) (internal calls only) */
  uint8_t *obj_kinds;   /* nobj declared kinds (loom_vm_obj_kind) */
  uint32_t *int_names;  /* nint symbolic-var indices (LOOM_VM_NONE: unnamed) */
  loom_vm_param *params;/* nparams */
  loom_vm_insn *code;   /* ncode instructions */
  uint32_t ncode;
  uint32_t *lists;      /* nlists words of operand lists */
  uint32_t nlists;
  loom_vm_debug *debug; /* ndebug entries, pc ascending */
  uint32_t ndebug;
} loom_vm_func;

typedef struct loom_vm_exec {
  loom_allocator *alloc;
  char *strings;        /* string table; every string NUL-terminated */
  uint32_t strings_len;
  uint32_t *symvars;    /* string offsets of symbolic var names */
  uint32_t nsymvars;
  int64_t *intconsts;
  uint32_t nintconsts;
  loom_vm_const *consts;
  uint32_t nconsts;
  loom_vm_kernel *kernels;
  uint32_t nkernels;
  loom_vm_kernel *externs;
  uint32_t nexterns;
  loom_vm_func *funcs;
  uint32_t nfuncs;
  const uint8_t *data;  /* DATA bytes (in `backing` when loaded from a file, or an artifact's mapped
                           DATA region); NULL when the constants are borrowed (const_src) */
  uint64_t data_len;    /* DATA's size: every constant at its 64-byte aligned offset */
  uint8_t *data_owned;  /* DATA owned by this executable (data_len bytes), or NULL */
  /* Borrowed constants (an executable built in process for the JIT, loom_vm_builder_borrow):
   * const_src[i] is constant i's bytes where the compiler keeps them (the module's weights,
   * 16-byte aligned), which must outlive the executable; NULL: every constant is in `data`.
   * Writing such an executable lays the constants out at their offsets. */
  const void **const_src;
  /* Per constant of an executable loaded from bytes (a file, an artifact): 1 once its bytes
   * have matched its check (set through __atomic stores, so concurrent calls may race to set
   * it); NULL when there is nothing to check (built in process: the bytes are the compiler's). */
  uint8_t *const_ok;
  uint8_t *const_copies;   /* constants whose source was misaligned, copied (owned), or NULL */
  size_t const_copies_len; /* its size */
  /* Keeps loaded bytes alive (a memory-mapped file or a borrowed buffer); NULL if none. */
  void (*backing_free)(void *backing);
  void *backing;
} loom_vm_exec;

const char *loom_vm_exec_str(const loom_vm_exec *e, uint32_t off);
/* The bytes of tensor constant i (in DATA, or where it is borrowed from). */
const void *loom_vm_exec_const_bytes(const loom_vm_exec *e, uint32_t i);
/* DATA's bytes in order, as pieces: `put(ctx, p, n)` for each run of constant bytes and (with
 * p NULL) for the zero padding between them, data_len bytes in all. Stops at the first
 * non-zero return of put and returns it. */
int loom_vm_exec_data_each(const loom_vm_exec *e, int (*put)(void *ctx, const void *p, size_t n), void *ctx);
void loom_vm_exec_free(loom_vm_exec *e);
/* Constant i's bytes against its check, once: OK when the executable checks nothing
 * (const_ok NULL) or the constant has passed already; else its XXH3-64 is computed and a
 * mismatch is DATA_LOSS naming the constant:
 *     constant 6 'main_matmul_51_packed' (f32, 2359296 bytes at DATA offset 164628480) does not
 *       match its check: the weights were modified or corrupted after the executable was written
 * The interpreter calls it at a constant's first TCONST, so loading a large model hashes
 * nothing and every weight is checked before a kernel reads it. */
LOOM_MUST_USE loom_status loom_vm_exec_const_check(const loom_vm_exec *e, uint32_t i);
/* Every constant checked now (loom_rt_options.check_weights, `loom-run --check-weights`). */
LOOM_MUST_USE loom_status loom_vm_exec_check_consts(const loom_vm_exec *e);
/* Index of the function called `name`, or LOOM_VM_NONE. */
uint32_t loom_vm_exec_find_func(const loom_vm_exec *e, const char *name);

/* ---- builder ---- */
typedef struct loom_vm_builder loom_vm_builder;
typedef struct loom_vm_fbuilder loom_vm_fbuilder;

LOOM_MUST_USE loom_status loom_vm_builder_new(loom_allocator *alloc, loom_vm_builder **out);
void loom_vm_builder_free(loom_vm_builder *b);
/* Interns a string; returns its offset. */
uint32_t loom_vm_builder_str(loom_vm_builder *b, const char *s);
uint32_t loom_vm_builder_symvar(loom_vm_builder *b, const char *name);
uint32_t loom_vm_builder_intconst(loom_vm_builder *b, int64_t v);
/* A tensor constant. Its bytes are borrowed: they must stay valid until loom_vm_builder_finish,
 * which copies every constant once into DATA (64-byte aligned each) — or, after
 * loom_vm_builder_borrow, for as long as the executable lives. */
uint32_t loom_vm_builder_const(loom_vm_builder *b, const char *name, loom_dtype dt, uint32_t rank,
                               const int64_t *dims, const void *bytes);
/* A kernel / extern with its signature words (copied; format above). Entries with the same
 * name and signature are one entry. */
uint32_t loom_vm_builder_kernel(loom_vm_builder *b, const char *name, uint32_t nbuf, uint32_t nsym,
                                const uint32_t *sig, uint32_t nsig);
uint32_t loom_vm_builder_extern(loom_vm_builder *b, const char *name, uint32_t nbuf, uint32_t nsym,
                                const uint32_t *sig, uint32_t nsig);
/* Starts a function; its index is the order of creation. */
loom_vm_fbuilder *loom_vm_builder_func(loom_vm_builder *b, const char *name);
/* Adds tensor parameter R[i] (in order) with dims given as text (NULL dims: any rank 0). */
uint32_t loom_vm_fb_param(loom_vm_fbuilder *f, const char *name, uint32_t dtype, uint32_t rank,
                          const char *const *dims);
/* Adds list parameter R[i] (in order): its items' dtype (or LOOM_VM_ANY_DTYPE), rank 0, no dims. */
uint32_t loom_vm_fb_list_param(loom_vm_fbuilder *f, const char *name, uint32_t dtype);
/* Adds an int parameter (internal functions); returns its register. Before any loom_vm_fb_ireg. */
uint32_t loom_vm_fb_int_param(loom_vm_fbuilder *f, const char *symvar);
/* New registers. */
uint32_t loom_vm_fb_reg(loom_vm_fbuilder *f, loom_vm_obj_kind kind);
uint32_t loom_vm_fb_ireg(loom_vm_fbuilder *f, const char *symvar /* or NULL */);
/* Appends a list; returns its offset. */
uint32_t loom_vm_fb_list(loom_vm_fbuilder *f, const uint32_t *words, uint32_t n);
/* Appends an instruction; returns its pc. */
uint32_t loom_vm_fb_emit(loom_vm_fbuilder *f, loom_vm_insn insn);
/* Patches instruction pc. */
void loom_vm_fb_patch(loom_vm_fbuilder *f, uint32_t pc, loom_vm_insn insn);
uint32_t loom_vm_fb_pc(const loom_vm_fbuilder *f);
void loom_vm_fb_debug(loom_vm_fbuilder *f, const char *text); /* for the next instruction */
/* The executable finish makes keeps the constants where the caller holds them instead of
 * copying them into DATA (exec->const_src; those not 16-byte aligned are copied): for an
 * executable run in process next to the module that owns the weights. Writing it to a file
 * lays DATA out as usual. */
void loom_vm_builder_borrow(loom_vm_builder *b);
/* Finishes: a verified executable (the builder stays usable only for freeing).
 * Any builder misuse (out of memory, too many registers) is reported here. */
LOOM_MUST_USE loom_status loom_vm_builder_finish(loom_vm_builder *b, loom_vm_exec **out);

/* ---- file format ---- */
/* Serialises `e` (the bytes are malloc'd through alloc; free with loom_free(alloc, p, len)). */
LOOM_MUST_USE loom_status loom_vm_exec_write(const loom_vm_exec *e, loom_allocator *alloc,
                                             uint8_t **out, size_t *out_len);
/* As loom_vm_exec_write, with an empty DATA section: the constants' bytes are stored apart
 * (an AOT artifact's page-aligned DATA region, vm/artifact.h, written with
 * loom_vm_exec_data_each) and given back by loom_vm_exec_load_ext. */
LOOM_MUST_USE loom_status loom_vm_exec_write_no_data(const loom_vm_exec *e, loom_allocator *alloc,
                                                     uint8_t **out, size_t *out_len);
LOOM_MUST_USE loom_status loom_vm_exec_save(const loom_vm_exec *e, const char *path);
/* Loads and verifies from bytes. The DATA section is used in place: `bytes` must stay
 * valid and 64-byte aligned until `backing_free(backing)` is called by loom_vm_exec_free
 * (pass NULL backing_free to borrow). Unaligned bytes are copied. */
LOOM_MUST_USE loom_status loom_vm_exec_load(loom_allocator *alloc, const uint8_t *bytes, size_t len,
                                            void (*backing_free)(void *), void *backing,
                                            loom_vm_exec **out);
/* As loom_vm_exec_load for bytes written by loom_vm_exec_write_no_data, with the constants'
 * bytes in `data` (data_len bytes, 64-byte aligned, valid until backing_free runs): the
 * executable's own DATA section must be empty, and every constant must lie inside `data`. */
LOOM_MUST_USE loom_status loom_vm_exec_load_ext(loom_allocator *alloc, const uint8_t *bytes, size_t len,
                                                const uint8_t *data, size_t data_len,
                                                void (*backing_free)(void *), void *backing, loom_vm_exec **out);
/* A copy of `src` that shares its DATA (constants, weights) instead of copying it: every
 * other section is copied. `src` must outlive the copy (loom_compiled_open hands a runtime
 * such a copy of the compiled executable). */
LOOM_MUST_USE loom_status loom_vm_exec_clone_sharing_data(loom_allocator *alloc, const loom_vm_exec *src,
                                                          loom_vm_exec **out);
/* Memory-maps `path` and loads it. */
LOOM_MUST_USE loom_status loom_vm_exec_load_file(loom_allocator *alloc, const char *path,
                                                 loom_vm_exec **out);
/* Checks everything the interpreter relies on (run by load and finish). */
LOOM_MUST_USE loom_status loom_vm_exec_verify(const loom_vm_exec *e);

/* ---- disassembler ---- */
void loom_vm_exec_disasm(const loom_vm_exec *e, loom_strbuf *sb);
/* One instruction of function f at pc (no newline). */
void loom_vm_insn_format(const loom_vm_exec *e, const loom_vm_func *f, uint32_t pc, loom_strbuf *sb);

#endif

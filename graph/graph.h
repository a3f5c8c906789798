/* graph.h — the cross-level module and graph functions: the public interface of graph/.
 *
 *     loom_graph_module *m;
 *     LOOM_PROPAGATE(loom_graph_module_create(NULL, &m));
 *     loom_sym_ctx *cx = loom_graph_module_sym(m);
 *     const loom_sym_expr *b = loom_sym_var_new(cx, "b", LOOM_SYM_VAR_SHAPE);
 *     const loom_sym_expr *dims[] = {b, loom_sym_const(cx, 768)};
 *     loom_graph_builder bld;
 *     loom_graph_builder_begin(&bld, m, "main");
 *     loom_graph_expr *x = loom_graph_builder_param(&bld, "x",
 *                             loom_sinfo_tensor(m, LOOM_DTYPE_F32, 2, dims, NULL));
 *     loom_graph_expr *y;
 *     LOOM_PROPAGATE(loom_graph_builder_op(&bld, "relu", 1, &x, 0, NULL, "y", &y));
 *     LOOM_PROPAGATE(loom_graph_builder_end(&bld, y, NULL));   // adds @main to m
 *     loom_graph_module_destroy(m);
 *
 * A module owns an arena (every IR node, struct info and name lives there), one
 * symbolic context and one interner. Graph functions are blocks of bindings in
 * A-normal form: call arguments are leaves (vars, constants, shape and scalar
 * literals). Every binding carries struct info (loom_sinfo); inference runs when a
 * binding is made, and whatever it cannot prove it keeps as a symbolic expression
 * plus a guard (a 0/1 symbolic condition) that must hold at run time.
 *
 * The text format, struct info and the operator list are documented in docs/ir.md. */
#ifndef LOOM_GRAPH_GRAPH_H
#define LOOM_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/dtype.h"
#include "base/file.h"
#include "base/intern.h"
#include "base/status.h"
#include "base/strbuf.h"
#include "libcall/decl.h"
#include "symbolic/sym.h"
#include "tensorprog/tp_pattern_kinds.h"

typedef struct loom_graph_module loom_graph_module;
typedef struct loom_graph_func loom_graph_func;
typedef struct loom_graph_expr loom_graph_expr;
typedef struct loom_graph_binding loom_graph_binding;
typedef struct loom_graph_block loom_graph_block;
typedef struct loom_graph_seq loom_graph_seq;
typedef struct loom_sinfo loom_sinfo;
typedef struct loom_tp_func loom_tp_func;

/* ---- struct info --------------------------------------------------------- */

typedef enum loom_sinfo_kind {
  LOOM_SINFO_OBJECT, /* anything */
  LOOM_SINFO_SCALAR, /* a 0-d host value of a dtype, with an optional symbolic value */
  LOOM_SINFO_SHAPE,  /* a list of int64 dims: ndim (or unknown), values (or unknown) */
  LOOM_SINFO_TENSOR, /* dtype, ndim (or unknown), dims (or unknown), device */
  LOOM_SINFO_TUPLE,  /* fields */
  LOOM_SINFO_FUNC,   /* params -> result */
  LOOM_SINFO_LIST,   /* a list of values of one struct info (`ret`), its length known only at run time
                        (`value`: symbolic, or NULL); `optional`: a list of at most one (docs/ir.md "Lists") */
} loom_sinfo_kind;

/* Unknown dtype of a tensor (`Tensor[(n), ?]`). */
#define LOOM_DTYPE_UNKNOWN LOOM_DTYPE_COUNT
/* Unknown number of dimensions. */
#define LOOM_SINFO_NDIM_UNKNOWN (-1)

struct loom_sinfo {
  loom_sinfo_kind kind;
  loom_dtype dtype;                 /* SCALAR, TENSOR: element type or LOOM_DTYPE_UNKNOWN */
  int ndim;                         /* SHAPE, TENSOR: rank or LOOM_SINFO_NDIM_UNKNOWN */
  const loom_sym_expr *const *dims; /* SHAPE, TENSOR: ndim expressions, or NULL when unknown */
  const loom_sym_expr *value;       /* SCALAR: known symbolic value, or NULL */
  const char *device;               /* TENSOR: interned device name, NULL = default ("cpu") */
  size_t nfields;                   /* TUPLE: fields; FUNC: params */
  const loom_sinfo *const *fields;  /* TUPLE fields / FUNC params */
  const loom_sinfo *ret;            /* FUNC: result; LIST: the items' struct info */
  bool optional;                    /* LIST: an optional (at most one item; printed Optional[...]) */
};

/* Constructors: the result and copies of the arrays live in the module arena.
 * NULL when memory runs out. `dims` NULL means the dims are unknown. */
const loom_sinfo *loom_sinfo_object(loom_graph_module *m);
const loom_sinfo *loom_sinfo_scalar(loom_graph_module *m, loom_dtype dt, const loom_sym_expr *value);
const loom_sinfo *loom_sinfo_shape(loom_graph_module *m, int ndim, const loom_sym_expr *const *dims);
const loom_sinfo *loom_sinfo_tensor(loom_graph_module *m, loom_dtype dt, int ndim,
                                    const loom_sym_expr *const *dims, const char *device);
const loom_sinfo *loom_sinfo_tuple(loom_graph_module *m, size_t n, const loom_sinfo *const *fields);
const loom_sinfo *loom_sinfo_func(loom_graph_module *m, size_t nparams,
                                  const loom_sinfo *const *params, const loom_sinfo *ret);
/* A list of `item`s (a TENSOR, or another LIST) of length `len` (NULL: unknown); `optional`:
 * at most one item. */
const loom_sinfo *loom_sinfo_list(loom_graph_module *m, const loom_sinfo *item, const loom_sym_expr *len,
                                  bool optional);

/* Structural equality (symbolic dims compared by pointer: they are hash-consed). */
bool loom_sinfo_equal(const loom_sinfo *a, const loom_sinfo *b);
/* Whether s holds a string tensor: itself, a tuple's field or a list's items (no tensor program
 * takes strings: the VM runs their operators on the host, docs/vm.md "Host operators"). */
bool loom_sinfo_holds_string(const loom_sinfo *s);
/* Is every value described by `derived` also described by `base`?
 * TRUE: statically; FALSE: never (e.g. dtype or rank differ, dims provably differ);
 * UNKNOWN: needs a runtime check (a match_cast). Uses the prover under current facts. */
loom_sym_truth loom_sinfo_is_base_of(loom_sym_ctx *cx, const loom_sinfo *base,
                                     const loom_sinfo *derived);
/* Appends the text form (`Tensor[(b, s, 768), f32]`). */
void loom_sinfo_print(const loom_sinfo *s, loom_strbuf *sb);

/* ---- expressions ---------------------------------------------------------- */

typedef enum loom_graph_expr_kind {
  LOOM_GRAPH_EXPR_VAR,       /* a variable: a param or the left side of a binding */
  LOOM_GRAPH_EXPR_CONST,     /* a constant tensor (inline literal or named module constant) */
  LOOM_GRAPH_EXPR_SHAPE,     /* a shape literal: shape(b, s + 1) */
  LOOM_GRAPH_EXPR_SYM,       /* a scalar symbolic value: sym(n + 1) */
  LOOM_GRAPH_EXPR_TUPLE,     /* (a, b, ...) */
  LOOM_GRAPH_EXPR_TUPLE_GET, /* a.0 */
  LOOM_GRAPH_EXPR_CALL,      /* op / graph function / tensor program / external call */
  LOOM_GRAPH_EXPR_IF,        /* if (cond) { seq } else { seq } */
  LOOM_GRAPH_EXPR_LOOP,      /* loop (i < count, while cond) (carried = init, ...) { seq } (docs/ir.md "Loops") */
} loom_graph_expr_kind;

typedef enum loom_graph_callee_kind {
  LOOM_GRAPH_CALLEE_OP,     /* an operator of the registry */
  LOOM_GRAPH_CALLEE_FUNC,   /* a graph function of the module: @f(args) */
  LOOM_GRAPH_CALLEE_TP,     /* a tensor program, destination-passing: call_tp(@p, (args), sinfo) */
  LOOM_GRAPH_CALLEE_EXTERN, /* an external function: call_extern("name", (args), sinfo) */
} loom_graph_callee_kind;

/* Operator ids, from graph/ops.def. */
typedef enum loom_graph_op {
#define LOOM_GRAPH_OP(e, name, family, pattern, min_args, max_args, flags) LOOM_GRAPH_OP_##e,
#include "graph/ops.def"
#undef LOOM_GRAPH_OP
  LOOM_GRAPH_OP_COUNT
} loom_graph_op;

typedef enum loom_graph_attr_kind {
  LOOM_GRAPH_ATTR_INT,   /* int64 */
  LOOM_GRAPH_ATTR_FLOAT, /* double */
  LOOM_GRAPH_ATTR_BOOL,  /* true / false */
  LOOM_GRAPH_ATTR_STR,   /* "text" */
  LOOM_GRAPH_ATTR_DTYPE, /* f32 ... */
  LOOM_GRAPH_ATTR_SYMS,  /* [e0, e1, ...] symbolic expressions (int lists are constants) */
  LOOM_GRAPH_ATTR_STRS,  /* ["a", "b", ...] strings (printed with C escapes; no NUL inside) */
} loom_graph_attr_kind;

typedef struct loom_graph_attr {
  const char *name;          /* interned */
  loom_graph_attr_kind kind;
  int64_t i;                 /* INT, BOOL */
  double f;                  /* FLOAT */
  const char *s;             /* STR (arena) */
  loom_dtype dtype;          /* DTYPE */
  size_t n;                  /* SYMS: count */
  const loom_sym_expr *const *syms; /* SYMS */
  const char *const *strs;   /* STRS: n strings (module arena, interned) */
} loom_graph_attr;

struct loom_graph_expr {
  loom_graph_expr_kind kind;
  const loom_sinfo *sinfo;   /* struct info (set for every expression) */
  loom_loc loc;              /* where it was parsed, or no location */
  union {
    struct {                 /* VAR */
      const char *name;      /* interned */
      uint32_t id;           /* unique within the module */
    } var;
    struct {                 /* CONST */
      const char *name;      /* NULL for an inline literal, else the module constant's name */
      void *data;            /* row-major elements of sinfo's dtype and (constant) shape */
      size_t nbytes;
    } cnst;
    struct {                 /* SHAPE */
      size_t n;
      const loom_sym_expr *const *dims;
    } shape;
    const loom_sym_expr *sym; /* SYM */
    struct {                 /* TUPLE */
      size_t n;
      loom_graph_expr *const *items;
    } tuple;
    struct {                 /* TUPLE_GET */
      loom_graph_expr *tuple;
      size_t index;
    } get;
    struct {                 /* CALL */
      loom_graph_callee_kind callee;
      loom_graph_op op;      /* OP */
      const char *target;    /* FUNC / TP / EXTERN: name (interned, without '@') */
      size_t nargs;
      loom_graph_expr *const *args; /* leaves */
      size_t nattrs;
      const loom_graph_attr *attrs;
      const loom_sinfo *out_sinfo; /* TP / EXTERN: the declared result */
    } call;
    struct {                 /* IF */
      loom_graph_expr *cond; /* a leaf: bool tensor of rank 0 or a scalar */
      loom_graph_seq *then_seq, *else_seq;
    } if_;
    struct {                 /* LOOP (graph/loop.c) */
      loom_graph_expr *count;  /* a leaf: the most iterations (sym(e), an integer Scalar, or a one-element
                                  integer tensor; below 1: none), or NULL: no bound */
      loom_graph_expr *cond;   /* a leaf: the condition before the first iteration (sym, Scalar, or a
                                  one-element bool / integer tensor), or NULL: none, and the body returns none */
      const loom_sym_expr *iter; /* the iteration number 0, 1, ...: a symbolic var of the body's scope */
      size_t ncarry;           /* loop-carried values */
      loom_graph_expr *const *params; /* ncarry VARs: each carried value inside the body; their struct
                                  info holds at every iteration (checked, binding `locals`, at its start) */
      loom_graph_expr *const *inits;  /* ncarry leaves: the values before the first iteration */
      size_t nlocals;          /* symbolic vars the params' struct info defines: bound anew each iteration */
      const loom_sym_expr *const *locals;
      loom_graph_seq *body;    /* result: a tuple var (next condition if `cond`, next carried values, then
                                  the scan items, stacked along a new axis 0 in the loop's result) */
    } loop;
  } u;
};

typedef enum loom_graph_binding_kind {
  LOOM_GRAPH_BIND_VAR,        /* v = expr */
  LOOM_GRAPH_BIND_MATCH_CAST, /* v = match_cast(expr, sinfo): checked at run time, defines symbols */
} loom_graph_binding_kind;

struct loom_graph_binding {
  loom_graph_binding_kind kind;
  loom_graph_expr *var;    /* the VAR bound (its sinfo is the binding's struct info) */
  loom_graph_expr *value;  /* the right side */
  size_t nguards;          /* runtime conditions inference recorded (0/1 symbolic exprs) */
  const loom_sym_expr *const *guards;
  const char *const *guard_why; /* one message per guard ("add: operand 0 axis 1 is n, ...") */
  loom_loc loc;
};

struct loom_graph_block {
  bool dataflow;              /* pure, no control flow, no match_cast of side-effecting calls */
  size_t n;
  loom_graph_binding *const *bindings;
  size_t noutputs;            /* dataflow: vars visible after the block (`output a, b`) */
  loom_graph_expr *const *outputs;
};

/* Blocks then a result: a function body, or a branch of `if`. */
struct loom_graph_seq {
  size_t nblocks;
  loom_graph_block *const *blocks;
  loom_graph_expr *result;    /* a leaf */
};

struct loom_graph_func {
  const char *name;           /* interned, without '@' */
  size_t nparams;
  loom_graph_expr *const *params; /* VARs with their struct info */
  const loom_sinfo *ret;      /* declared result (or the inferred one) */
  loom_graph_seq *body;
  loom_loc loc;
};

/* A named constant of the module (weights). */
typedef struct loom_graph_const {
  const char *name;           /* interned, without '@' */
  loom_graph_expr *expr;      /* a CONST expression */
  const char *file;           /* the weights file it is stored in, as the text names it (relative to the
                                 module's directory), or NULL: its values are written inline */
  const char *tensor;         /* its name in that file (file != NULL) */
} loom_graph_const;

typedef struct loom_safetensors loom_safetensors;

/* A declared external function (libcall/; docs/libcall.md). */
typedef struct loom_graph_extern {
  const char *name;           /* interned name (without '@') */
  const loom_sinfo *sig;      /* FUNC struct info: params -> result (symbolic dims of the params) */
  const char *const *param_names; /* sig->nfields names (the named text form), or NULL */
  const loom_libcall_decl *decl;  /* symbol, library, ABI, purity; NULL: kernel ABI, symbol = name, not pure */
} loom_graph_extern;

/* ---- module --------------------------------------------------------------- */

loom_status loom_graph_module_create(loom_allocator *alloc, loom_graph_module **out);
void loom_graph_module_destroy(loom_graph_module *m);
loom_sym_ctx *loom_graph_module_sym(loom_graph_module *m);
loom_arena *loom_graph_module_arena(loom_graph_module *m);
const char *loom_graph_module_intern(loom_graph_module *m, const char *s, size_t len);

size_t loom_graph_module_num_funcs(const loom_graph_module *m);
/* Var ids of the module are below this (for per-var tables). */
uint32_t loom_graph_module_num_var_ids(const loom_graph_module *m);
loom_graph_func *loom_graph_module_func_at(const loom_graph_module *m, size_t i);
loom_graph_func *loom_graph_module_find_func(const loom_graph_module *m, const char *name);
/* The tensor program called `name`, or NULL. */
loom_tp_func *loom_graph_module_find_tp(const loom_graph_module *m, const char *name);
size_t loom_graph_module_num_tps(const loom_graph_module *m);
loom_tp_func *loom_graph_module_tp_at(const loom_graph_module *m, size_t i);
size_t loom_graph_module_num_consts(const loom_graph_module *m);
const loom_graph_const *loom_graph_module_const_at(const loom_graph_module *m, size_t i);
size_t loom_graph_module_num_externs(const loom_graph_module *m);
const loom_graph_extern *loom_graph_module_extern_at(const loom_graph_module *m, size_t i);

loom_status loom_graph_module_add_func(loom_graph_module *m, loom_graph_func *f);
/* Takes function `name` out of the module (its IR stays in the arena); NOT_FOUND when absent. */
loom_status loom_graph_module_remove_func(loom_graph_module *m, const char *name);
loom_status loom_graph_module_add_tp(loom_graph_module *m, loom_tp_func *tp);
loom_status loom_graph_module_add_const(loom_graph_module *m, const char *name, loom_graph_expr *c);
/* `m` takes `p` and calls free_fn(p) when it is destroyed, after everything else: what its
 * borrowed constants (loom_graph_const_borrow) point into, e.g. the ONNX model they were
 * imported from. On failure (out of memory) p is freed at once. */
loom_status loom_graph_module_adopt(loom_graph_module *m, void *p, void (*free_fn)(void *));
/* Records that [base, base + len) holds the bytes of file `path` (copied), which had identity *id
 * when it was mapped: the pack pass then keys a weight lying there by the file's identity and the
 * weight's offset before hashing its bytes (graph/wcache.h). The mapping must live as long as m. */
loom_status loom_graph_module_add_source(loom_graph_module *m, const void *base, size_t len, const char *path,
                                         const loom_file_id *id);
/* Whether the n bytes at p lie inside one source: then its path, identity and p's offset in it. */
bool loom_graph_module_source_of(const loom_graph_module *m, const void *p, size_t n, const char **path,
                                 loom_file_id *id, uint64_t *offset);
/* Records that constant i is stored in weights file `file` (as the text will name it: relative to the
 * module's directory, or absolute) under `tensor`: the printer then writes
 * `const @name: sinfo = weights("file", "tensor")` instead of its values (docs/ir.md). Neither name
 * may hold '"' or a line break. The file is not opened. */
loom_status loom_graph_module_const_set_weights(loom_graph_module *m, size_t i, const char *file, const char *tensor);
/* The safetensors file `file` (relative to the module's directory unless absolute; graph/safetensors.h),
 * mapped and validated on first use and kept open, once per module, until the module is destroyed. */
loom_status loom_graph_module_weights(loom_graph_module *m, const char *file, loom_safetensors **out);
loom_status loom_graph_module_add_extern(loom_graph_module *m, const char *name, const loom_sinfo *sig);
/* Declares an extern with parameter names (may be NULL) and a libcall declaration (may be
 * NULL); both are copied into the module. The declaration is checked against the signature
 * (loom_libcall_decl_lower): errors name the extern and the C argument. */
loom_status loom_graph_module_declare_extern(loom_graph_module *m, const char *name, const loom_sinfo *sig,
                                             const char *const *param_names, const loom_libcall_decl *decl);
/* The extern called `name`, or NULL. */
const loom_graph_extern *loom_graph_module_find_extern(const loom_graph_module *m, const char *name);
/* The run-side signature of `ex` (buffer/symbol layout, C arguments), allocated in `a`. */
loom_status loom_graph_extern_sig(const loom_graph_extern *ex, loom_arena *a, loom_libcall_sig *out);
/* The run-side signatures of every extern (array in `a`): what loom_libcall_lib_create loads. */
loom_status loom_graph_module_libcall_sigs(const loom_graph_module *m, loom_arena *a, loom_libcall_sig **out,
                                           size_t *out_n);
/* The directory of the file the module was parsed from ("." when unknown): relative
 * `library` paths of extern declarations are taken from here. */
const char *loom_graph_module_source_dir(const loom_graph_module *m);
/* The width in bytes of the widest vector registers of the machine the module's programs are
 * made for (64 AVX-512, 32 AVX2, 16): legalization sizes the register tiles a generated program
 * fixes (the flash attention kernel's query rows) to it; results never depend on it. 0 (a new
 * module): 64. The pipeline sets it from the target before legalize (loom_target.vector_bytes). */
void loom_graph_module_set_vector_bytes(loom_graph_module *m, int bytes);
int loom_graph_module_vector_bytes(const loom_graph_module *m);

/* ---- operators ------------------------------------------------------------- */

/* Properties of an operator: ops.def's flags column (NONE, LOWP, VIEW_LOWP, VM, STR, LOWP_STR), one bit each. */
enum {
  LOOM_GRAPH_OPF_NONE = 0,
  LOOM_GRAPH_OPF_LOWP = 1,      /* takes the low-precision dtypes (loom_dtype_is_lowp): it only moves or
                                 * converts elements; the other ops refuse them at inference */
  LOOM_GRAPH_OPF_VIEW = 2,      /* with one operand a view (loom_graph_op_is_view) */
  LOOM_GRAPH_OPF_VIEW_LOWP = 3, /* both */
  LOOM_GRAPH_OPF_VM = 4,        /* run by the VM itself (it reads the values: tensor_to_shape); never
                                 * legalized to a program */
  LOOM_GRAPH_OPF_STR = 8,       /* takes the string dtype (loom_dtype_is_string); the other ops refuse it
                                 * at inference. The legalize pass keeps string calls as operators; the
                                 * VM runs them on the host (docs/vm.md "Host operators") */
  LOOM_GRAPH_OPF_LOWP_STR = 9,  /* LOWP and STR (cast) */
};
/* The flags of op (LOOM_GRAPH_OPF_*). */
unsigned loom_graph_op_flags(loom_graph_op op);

/* Is op a view when called on one operand (reshape, expand_dims, squeeze, flatten: flag VIEW)?
 * Views are not legalized to programs: the VM lowering gives the result the input's memory (no
 * copy) and memory planning treats it as an alias of its input. */
bool loom_graph_op_is_view(loom_graph_op op);

/* Operator by name ("matmul"); false when unknown. */
bool loom_graph_op_lookup(const char *name, size_t len, loom_graph_op *out);
const char *loom_graph_op_name(loom_graph_op op);

/* The fusion hint of an operator: one of the access-pattern kinds of
 * tensorprog/tp_patterns.def (the same kinds loom_tp_classify reads off programs);
 * loom_tp_pattern_name spells them. */
loom_tp_pattern loom_graph_op_pattern(loom_graph_op op);

/* ---- expression constructors (arena of m; NULL on OOM) --------------------- */

loom_graph_expr *loom_graph_var_new(loom_graph_module *m, const char *name, const loom_sinfo *si);
loom_graph_expr *loom_graph_shape_new(loom_graph_module *m, size_t n, const loom_sym_expr *const *dims);
loom_graph_expr *loom_graph_sym_new(loom_graph_module *m, const loom_sym_expr *e);
/* A constant whose data is NOT copied: `data` (nbytes) must outlive the module and is never written
 * (a weights file's mapping, loom_graph_module_weights). It is aligned to the dtype's size, except
 * the weights an ONNX model's file holds (LOOM_ONNX_VIEW_MIN bytes or more, used where they lie,
 * at any alignment): read a constant's elements through loom_graph_tensor_get_* (which read
 * bytewise) or memcpy, never through a typed pointer; the VM copies a constant that is not 16-byte
 * aligned (vm/exec.h, loom_vm_builder_borrow). */
loom_graph_expr *loom_graph_const_borrow(loom_graph_module *m, const loom_sinfo *si, const void *data, size_t nbytes);
/* A constant tensor: copies `nbytes` of row-major `data` of the (constant-shaped) `si`. */
loom_graph_expr *loom_graph_const_new(loom_graph_module *m, const loom_sinfo *si, const void *data,
                                      size_t nbytes);
/* A 0-d constant from a double (converted to `dt`). */
loom_graph_expr *loom_graph_const_scalar(loom_graph_module *m, loom_dtype dt, double v);

/* (a, b, ...); items may be any expressions (the builder binds non-leaves first). */
loom_graph_expr *loom_graph_tuple_new(loom_graph_module *m, size_t n, loom_graph_expr *const *items);
/* t.index */
loom_graph_expr *loom_graph_tuple_get_new(loom_graph_module *m, loom_graph_expr *t, size_t index);
/* @name(args): a call of a graph function of the module. */
loom_graph_expr *loom_graph_call_func(loom_graph_module *m, const char *name, size_t nargs,
                                      loom_graph_expr *const *args);
/* call_tp(@name, (args), out): a tensor program called in destination-passing style; the
 * result (struct info `out`) is allocated by the caller of the program. */
loom_graph_expr *loom_graph_call_tp(loom_graph_module *m, const char *name, size_t nargs,
                                    loom_graph_expr *const *args, const loom_sinfo *out);
/* call_extern(@name, (args), out): a declared external function. */
loom_graph_expr *loom_graph_call_extern(loom_graph_module *m, const char *name, size_t nargs,
                                        loom_graph_expr *const *args, const loom_sinfo *out);

/* loop (iter < count, while cond) (params[i] = inits[i], ...) { body }: a loop (docs/ir.md "Loops").
 * count and cond are leaves or NULL (not both); params are VARs whose struct info may use the
 * `locals` (symbolic vars new in this scope, bound at each iteration); body's result is a tuple
 * var (cond', carried'..., scan items...). The struct info is set by loom_graph_loop_infer (the
 * builder and the parser call it). NULL on OOM. */
loom_graph_expr *loom_graph_loop_new(loom_graph_module *m, loom_graph_expr *count, loom_graph_expr *cond,
                                     const loom_sym_expr *iter, size_t ncarry, loom_graph_expr *const *params,
                                     loom_graph_expr *const *inits, size_t nlocals, const loom_sym_expr *const *locals,
                                     loom_graph_seq *body);
/* A fresh shape symbol "<hint>_<what><N>" (N: the module's counter; "<what><N>" without a hint):
 * what inference names data-dependent extents with, and a loop's fresh symbols. NULL on OOM. */
const loom_sym_expr *loom_graph_fresh_sym(loom_graph_module *m, const char *hint, const char *what);
/* The iteration var of a new loop whose count is `count` (a leaf or NULL): a shape var named
 * `name`, with the fact i < count (graph/loop.c) recorded for the prover when the count is
 * symbolic, so that a body's shapes know it (x[i : i + 1] has extent 1). Make it before the
 * body's bindings. NULL on OOM. */
const loom_sym_expr *loom_graph_loop_iter_new(loom_graph_module *m, const char *name, const loom_graph_expr *count);
/* Scan items the body of loop `e` returns (its result's fields after the condition and the
 * carried values; 0 when the result is not such a tuple). */
size_t loom_graph_loop_nscan(const loom_graph_expr *e);
/* The struct info of loop `e`: Tuple[final carried values..., stacked scan items...]. A carried
 * value's locals become fresh symbols named after `hint` (the binding: "r" -> "r_k0"); the
 * stacked axis is the count (sym(n) without a condition) or a fresh "hint_n0". TYPE_ERROR for a
 * malformed loop (the body's result, the kinds of count and cond, a scan item that is not a
 * tensor of known rank), naming the part. */
loom_status loom_graph_loop_infer(loom_graph_module *m, const loom_graph_expr *e, const char *hint,
                                  const loom_sinfo **out);

/* True for the ANF leaves: VAR, CONST, SHAPE, SYM. */
bool loom_graph_expr_is_leaf(const loom_graph_expr *e);

/* ---- inference --------------------------------------------------------------- */

/* Result of inferring one call. */
typedef struct loom_graph_infer_result {
  const loom_sinfo *sinfo;        /* the struct info of the result */
  size_t nguards;                 /* runtime conditions that must hold */
  const loom_sym_expr *const *guards;
  const char *const *guard_why;
} loom_graph_infer_result;

/* Infers the struct info of a call expression (its args already have struct info).
 * Errors name the op, the operand index, the axis and both shapes. `hint` names
 * fresh symbols for data-dependent dims ("nnz" -> "v_nnz0"); may be NULL. */
loom_status loom_graph_infer_call(loom_graph_module *m, const loom_graph_expr *call, const char *hint,
                                  loom_graph_infer_result *out);

/* ---- builder ------------------------------------------------------------------ */

typedef struct loom_graph_builder {
  loom_graph_module *m;
  const char *name;                   /* function being built */
  LOOM_VEC(loom_graph_expr *) params;
  LOOM_VEC(loom_graph_block *) blocks;
  LOOM_VEC(loom_graph_binding *) cur; /* bindings of the open block */
  bool cur_dataflow;
  unsigned tmp;                       /* counter for generated names */
} loom_graph_builder;

void loom_graph_builder_begin(loom_graph_builder *b, loom_graph_module *m, const char *name);
/* Frees the builder's scratch (use after end, or to abandon a function). */
void loom_graph_builder_reset(loom_graph_builder *b);
loom_graph_expr *loom_graph_builder_param(loom_graph_builder *b, const char *name, const loom_sinfo *si);
/* Starts a new block (closing the open one). */
loom_status loom_graph_builder_block(loom_graph_builder *b, bool dataflow);
/* Binds `value` to a new var named `name` (NULL: generated). Non-leaf arguments of a call
 * are bound first (ANF). Inference runs; guards are recorded on the binding. */
loom_status loom_graph_builder_emit(loom_graph_builder *b, loom_graph_expr *value, const char *name,
                                    loom_graph_expr **out_var);
loom_status loom_graph_builder_match_cast(loom_graph_builder *b, loom_graph_expr *value,
                                          const loom_sinfo *si, const char *name,
                                          loom_graph_expr **out_var);
/* Makes and emits an operator call with attributes. */
loom_status loom_graph_builder_op(loom_graph_builder *b, const char *op, size_t nargs,
                                  loom_graph_expr *const *args, size_t nattrs,
                                  const loom_graph_attr *attrs, const char *name,
                                  loom_graph_expr **out_var);
/* Finishes the function with `result` (a leaf or any expression, bound first) and adds it to
 * the module. `ret` NULL means the result's struct info. */
loom_status loom_graph_builder_end(loom_graph_builder *b, loom_graph_expr *result,
                                   const loom_sinfo *ret, loom_graph_func **out);

/* A nested sequence (a loop's body) being built: what the enclosing sequence had. */
typedef struct loom_graph_builder_nest {
  LOOM_VEC(loom_graph_block *) blocks; /* the enclosing sequence's closed blocks */
  LOOM_VEC(loom_graph_binding *) cur;  /* and its open block */
  bool cur_dataflow;                   /* whether that block is a dataflow block */
} loom_graph_builder_nest;

/* Starts a nested sequence: the bindings made until loom_graph_builder_nest_end go into it
 * (its first block a dataflow block when `dataflow`); the enclosing sequence is saved in *saved. */
loom_status loom_graph_builder_nest_begin(loom_graph_builder *b, loom_graph_builder_nest *saved, bool dataflow);
/* Ends the nested sequence with `result` (bound first unless a leaf): *out is the sequence, and
 * the enclosing sequence continues where it was. With result NULL the nested bindings are
 * dropped (an abandoned body) and *out (may be NULL) is set to NULL. */
loom_status loom_graph_builder_nest_end(loom_graph_builder *b, loom_graph_builder_nest *saved, loom_graph_expr *result,
                                        loom_graph_seq **out);

/* Ends the nested sequence by keeping its bindings in the enclosing one, after what it had (a
 * tentative body that turned out not to need a sequence of its own). */
loom_status loom_graph_builder_nest_splice(loom_graph_builder *b, loom_graph_builder_nest *saved);

/* Makes a call expression (not yet bound). NULL on OOM. */
loom_graph_expr *loom_graph_call_op(loom_graph_module *m, loom_graph_op op, size_t nargs,
                                    loom_graph_expr *const *args, size_t nattrs,
                                    const loom_graph_attr *attrs);
/* Attribute helpers (name interned into m). */
loom_graph_attr loom_graph_attr_int(loom_graph_module *m, const char *name, int64_t v);
loom_graph_attr loom_graph_attr_float(loom_graph_module *m, const char *name, double v);
loom_graph_attr loom_graph_attr_bool(loom_graph_module *m, const char *name, bool v);
loom_graph_attr loom_graph_attr_dtype(loom_graph_module *m, const char *name, loom_dtype v);
loom_graph_attr loom_graph_attr_str(loom_graph_module *m, const char *name, const char *v); /* v interned */
loom_graph_attr loom_graph_attr_ints(loom_graph_module *m, const char *name, size_t n, const int64_t *v);
loom_graph_attr loom_graph_attr_syms(loom_graph_module *m, const char *name, size_t n,
                                     const loom_sym_expr *const *v);
/* A list of n strings (each interned into m; a string holding a NUL byte ends there). */
loom_graph_attr loom_graph_attr_strs(loom_graph_module *m, const char *name, size_t n, const char *const *v);

/* ---- text ------------------------------------------------------------------------ */

/* Parses a whole module. Errors (file:line:col, source line, caret) go to `diags` and the
 * status. */
loom_status loom_graph_parse(const loom_source *src, loom_diag_list *diags, loom_graph_module **out);
void loom_graph_print_module(const loom_graph_module *m, loom_strbuf *sb);
void loom_graph_print_func(const loom_graph_module *m, const loom_graph_func *f, loom_strbuf *sb);
/* Structural equality of two modules (names, struct info printed identically). */
bool loom_graph_module_equal(const loom_graph_module *a, const loom_graph_module *b);

/* ---- verifier ----------------------------------------------------------------------- */

/* Checks well-formedness: var and symbolic-var scoping, dataflow purity, ANF, struct info
 * consistent with re-inference, attributes, call signatures. Every problem is added to
 * `diags` ("in @main, binding 'y': ..."); the status is the first. */
loom_status loom_graph_verify(loom_graph_module *m, loom_diag_list *diags);

/* ---- reference interpreter ------------------------------------------------------------ */

/* A dense row-major host tensor. */
typedef struct loom_graph_tensor {
  loom_dtype dtype;
  int ndim;
  int64_t shape[8];
  size_t numel;
  void *data;            /* numel * dtype size bytes (malloc'd by the allocator); dtype string:
                          * loom_str handles, each non-empty one owning a malloc'd copy of its
                          * bytes with a NUL after them (loom_graph_tensor_set_str; freed with
                          * the tensor) */
} loom_graph_tensor;

/* A runtime value: a tensor, a shape, a scalar, a tuple, or a list. */
typedef struct loom_graph_value loom_graph_value;
struct loom_graph_value {
  loom_sinfo_kind kind;  /* TENSOR, SHAPE, SCALAR (int64 in `i`, float in `f`), TUPLE, LIST */
  loom_graph_tensor t;   /* TENSOR */
  size_t n;              /* SHAPE: dims; TUPLE, LIST: items */
  int64_t *dims;         /* SHAPE */
  loom_graph_value *items; /* TUPLE, LIST (malloc'd; NULL when n is 0) */
  int64_t i;             /* SCALAR */
  double f;
  loom_dtype sdtype;     /* SCALAR dtype */
};

loom_status loom_graph_tensor_alloc(loom_dtype dt, int ndim, const int64_t *shape,
                                    loom_graph_tensor *out);
void loom_graph_tensor_free(loom_graph_tensor *t);
void loom_graph_value_free(loom_graph_value *v);
/* Makes *out a fresh (zeroed) tensor value. */
loom_status loom_graph_value_tensor(loom_dtype dt, int ndim, const int64_t *shape, loom_graph_value *out);
/* Deep copy of a value. */
loom_status loom_graph_value_copy(const loom_graph_value *v, loom_graph_value *out);
/* Element access through double / int64 (the interpreter's only element paths). */
double loom_graph_tensor_get_f64(const loom_graph_tensor *t, size_t i);
int64_t loom_graph_tensor_get_i64(const loom_graph_tensor *t, size_t i);
void loom_graph_tensor_set_f64(loom_graph_tensor *t, size_t i, double v);
void loom_graph_tensor_set_i64(loom_graph_tensor *t, size_t i, int64_t v);
/* String elements (dtype string; the only way to write them): element i of t becomes its own
 * copy of `len` bytes (NUL-terminated, the NUL not counted), the old one freed. */
loom_status loom_graph_tensor_set_str(loom_graph_tensor *t, size_t i, const char *bytes, size_t len);
/* Element i of a string tensor (borrowed from t). */
loom_str loom_graph_tensor_get_str(const loom_graph_tensor *t, size_t i);
/* Elements at..at+n-1 of string tensor t become copies of the n loom_str handles at `src` (any
 * alignment; their bytes are copied, not shared). */
loom_status loom_graph_tensor_copy_strs(loom_graph_tensor *t, size_t at, const void *src, size_t n);
/* Whether two strings hold the same bytes. */
bool loom_graph_str_equal(loom_str a, loom_str b);

/* Evaluates operator call `call` (of module m) on `args` (its operands' values, borrowed) with
 * the reference implementation; *out is the result (free with loom_graph_value_free). Only
 * reads m: safe from several threads. */
loom_status loom_graph_call_eval(loom_graph_module *m, const loom_graph_expr *call, const loom_graph_value *args,
                                 loom_graph_value *out);
/* Runs graph function `fn` on `args` (owned by the caller). Binds symbolic vars from the
 * argument shapes, checks match_cast and guards. On success *out holds the result (free
 * with loom_graph_value_free) and `env` (if not NULL) the bound symbolic values. */
loom_status loom_graph_eval(loom_graph_module *m, const char *fn, size_t nargs,
                            const loom_graph_value *args, loom_sym_env *env,
                            loom_graph_value *out);

#endif

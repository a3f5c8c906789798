/* tp_ir.h — the tensor-program IR: data structures and constructors.
 *
 * A program (loom_tp_func) has buffer parameters with symbolic shapes, optional
 * int64 scalar parameters, and a body statement. Its symbolic variables are the
 * ones that appear in buffer shapes (bound from the actual shapes at entry) and
 * the scalar parameters. Loop variables are symbolic variables too, so index
 * arithmetic is symbolic (`A[i, j + 1]`, `B[floordiv(k, 4)]`) and analyses can
 * reason about it with the prover.
 *
 * Statements: seq, for (extent symbolic; kind serial / parallel / vectorize /
 * unroll / gpu_block / gpu_thread / gpu_lanes; flagged `reduce` when it is a reduction axis),
 * store, let (a scalar value named for the statements after it), if, alloc (a
 * local buffer, or a Shared one for a GPU block), barrier (GPU block-wide sync). Expressions: constants, loads, symbolic index values, let
 * references, operators from tp_ops.def, cast, select.
 *
 * Reductions are explicit: an init store, then loops flagged `reduce` around an
 * update store `C[idx] = C[idx] op e` whose indices do not use the reduce loops:
 *
 *     C[i] = 0.0
 *     for k in 0..K reduce {
 *       C[i] = C[i] + A[i, k]
 *     }
 *
 * Everything lives in an arena; nodes are never freed individually. */
#ifndef LOOM_TENSORPROG_TP_IR_H
#define LOOM_TENSORPROG_TP_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/dtype.h"
#include "symbolic/sym.h"
#include "tensorprog/tp.h"

typedef enum loom_tp_op {
#define LOOM_TP_OP(name, spelling, arity, cls) LOOM_TP_OP_##name,
#include "tensorprog/tp_ops.def"
#undef LOOM_TP_OP
  LOOM_TP_OP_COUNT
} loom_tp_op;

typedef enum loom_tp_op_class {
  LOOM_TP_CLASS_ARITH, /* numeric in, same dtype out */
  LOOM_TP_CLASS_CMP,   /* numeric in, bool out */
  LOOM_TP_CLASS_LOGIC, /* bool or integer in, same out */
  LOOM_TP_CLASS_MATH,  /* float in, float out */
  LOOM_TP_CLASS_BITS,  /* bits of operand 0 read as the dtype of operand 1 (a literal) */
} loom_tp_op_class;

const char *loom_tp_op_spelling(loom_tp_op op);
int loom_tp_op_arity(loom_tp_op op);
loom_tp_op_class loom_tp_op_class_of(loom_tp_op op);

/* Where a buffer lives. */
typedef enum loom_tp_scope {
  LOOM_TP_SCOPE_GLOBAL, /* a parameter: memory owned by the caller */
  LOOM_TP_SCOPE_LOCAL,  /* allocated by the program, private to one thread */
  LOOM_TP_SCOPE_SHARED, /* allocated by the program, shared by a GPU block */
} loom_tp_scope;

typedef struct loom_tp_buffer {
  const char *name;                /* interned in the program's arena */
  loom_dtype dtype;
  int ndim;
  const loom_sym_expr **dims;      /* ndim symbolic extents */
  loom_tp_scope scope;
  int param_index;                 /* position among the params, or -1 for a local */
  bool uninit;                     /* LOCAL: every element read was written first, so no zero fill
                                    * (text `Local[(..), t, uninit]`; the interpreter fills anyway) */
} loom_tp_buffer;

typedef enum loom_tp_expr_kind {
  LOOM_TP_EXPR_CONST,  /* a literal of `dtype` */
  LOOM_TP_EXPR_SYM,    /* an index value: a symbolic expression (i64), e.g. loop vars */
  LOOM_TP_EXPR_LOAD,   /* buffer[indices] */
  LOOM_TP_EXPR_LETREF, /* value of an enclosing let */
  LOOM_TP_EXPR_OP,     /* operator from tp_ops.def */
  LOOM_TP_EXPR_CAST,   /* conversion to `dtype` */
  LOOM_TP_EXPR_SELECT, /* select(cond, a, b) */
} loom_tp_expr_kind;

typedef struct loom_tp_stmt loom_tp_stmt;
typedef struct loom_tp_expr loom_tp_expr;

struct loom_tp_expr {
  loom_tp_expr_kind kind;
  loom_dtype dtype;                /* result type */
  union {
    struct {
      double f;                    /* value when dtype is a float */
      int64_t i;                   /* value when dtype is an integer or bool */
    } c;                           /* CONST */
    const loom_sym_expr *sym;      /* SYM */
    struct {
      const loom_tp_buffer *buf;
      loom_tp_expr **idx;          /* buf->ndim index expressions (i64) */
    } load;                        /* LOAD */
    const loom_tp_stmt *let;       /* LETREF: the LET statement */
    struct {
      loom_tp_op op;
      loom_tp_expr *args[3];       /* arity operands */
    } op;                          /* OP */
    loom_tp_expr *cast_arg;        /* CAST */
    struct {
      loom_tp_expr *cond, *then_e, *else_e;
    } select;                      /* SELECT */
  } u;
};

typedef enum loom_tp_loop_kind {
  LOOM_TP_LOOP_SERIAL,     /* plain loop */
  LOOM_TP_LOOP_PARALLEL,   /* iterations run on the thread pool */
  LOOM_TP_LOOP_VECTORIZE,  /* iterations become SIMD lanes */
  LOOM_TP_LOOP_UNROLL,     /* fully unrolled (extent should be a small constant) */
  LOOM_TP_LOOP_GPU_BLOCK,  /* bound to the GPU grid (blockIdx.x) */
  LOOM_TP_LOOP_GPU_THREAD, /* bound to GPU threads (threadIdx.x) */
  LOOM_TP_LOOP_GPU_LANES,  /* dealt to the 32 lanes of the warp running the enclosing gpu_thread
                              loop (extent 32): lane L runs iterations L, L+32, ...; `reduce`:
                              its accumulators are combined across the lanes (tp_lanes.h) */
  LOOM_TP_LOOP_KIND_COUNT
} loom_tp_loop_kind;

const char *loom_tp_loop_kind_name(loom_tp_loop_kind k);

typedef enum loom_tp_stmt_kind {
  LOOM_TP_STMT_SEQ,   /* statements in order */
  LOOM_TP_STMT_FOR,   /* for var in 0..extent kind [reduce] { body } */
  LOOM_TP_STMT_STORE, /* buf[idx] = value */
  LOOM_TP_STMT_LET,   /* let name: dtype = value; visible in the rest of the enclosing seq */
  LOOM_TP_STMT_IF,    /* if cond { then } else { else } */
  LOOM_TP_STMT_ALLOC, /* alloc buf: Local[(dims), dtype]; visible in the rest of the seq */
  LOOM_TP_STMT_BARRIER, /* barrier: every thread of the GPU block reaches it before any goes on
                           (__syncthreads); only an item of a gpu_thread loop's body (verify.c) */
  LOOM_TP_STMT_PREFETCH, /* prefetch[_l2] buf[idx]: a hint that the element's cache line is read
                            soon (into every cache level, or with _l2 into L2 and below); no effect
                            on results (the interpreter skips it); indices in bounds */
} loom_tp_stmt_kind;

struct loom_tp_stmt {
  loom_tp_stmt_kind kind;
  union {
    struct {
      size_t n;
      loom_tp_stmt **items;
    } seq;
    struct {
      const loom_sym_expr *var;    /* the loop variable (a fresh symbolic INT var) */
      const loom_sym_expr *extent; /* iterations: var runs over [0, extent) */
      loom_tp_loop_kind kind;
      bool reduce;                 /* a reduction axis */
      loom_tp_stmt *body;
    } loop;
    struct {
      const loom_tp_buffer *buf;
      loom_tp_expr **idx;          /* buf->ndim index expressions */
      loom_tp_expr *value;
    } store;
    struct {
      const char *name;
      loom_tp_expr *value;         /* its dtype is the let's dtype */
    } let;
    struct {
      loom_tp_expr *cond;          /* bool */
      loom_tp_stmt *then_s;
      loom_tp_stmt *else_s;        /* may be NULL */
    } if_;
    loom_tp_buffer *alloc;         /* ALLOC: scope LOCAL or SHARED */
    struct {
      const loom_tp_buffer *buf;
      loom_tp_expr **idx;          /* buf->ndim index expressions */
      bool l2;                     /* into L2 and below, not L1 (`prefetch_l2`) */
    } prefetch;                    /* PREFETCH */
  } u;
};

/* Calls fn on each load in e (the loads in a load's indices too; a let's value is not followed:
 * it is walked at the let); true as soon as fn returns true. */
typedef bool (*loom_tp_load_fn)(void *ud, const loom_tp_expr *load);
bool loom_tp_expr_any_load(const loom_tp_expr *e, loom_tp_load_fn fn, void *ud);
/* Whether e loads `buf` anywhere (in a load's indices too; not through a let). */
bool loom_tp_expr_loads(const loom_tp_expr *e, const loom_tp_buffer *buf);
/* Whether a statement under s loads `buf` (stores' values and indices, lets, conditions);
 * true for a statement it does not know. */
bool loom_tp_stmt_loads(const loom_tp_stmt *s, const loom_tp_buffer *buf);
/* Does `e` depend on memory (a load, directly or through a let)? An index that does is data
 * (take, gather and scatter indices), not an affine function of loops and shapes. */
bool loom_tp_expr_reads_memory(const loom_tp_expr *e);
/* Does `e` mention `var` (in a symbol, or in a loaded index)? A let's value is not followed. */
bool loom_tp_expr_uses_var(const loom_tp_expr *e, const loom_sym_expr *var);
/* Does a store under `s` write at an index read from memory (a scatter: two iterations may
 * write one element)? */
bool loom_tp_stmt_scatters(const loom_tp_stmt *s);
/* x when indices d, d + 1 of an access to `buf` are floordiv(x, E), floormod(x, E) with E
 * the extent of axis d + 1 (two loops fused into one, loom_tp_fuse): row-major, the pair is
 * then one index, x — distinct x reach distinct elements, and the offset needs no division
 * (*naxes = 2). With three or more loops fused, a run of n axes d..d+n-1 (*naxes = n):
 * [floordiv(x, E), <the run from d + 1, whose one index is floormod(x, E)>] with E the product
 * of the run's extents -- (b, h, w) fused into one loop over b*h*w rows reads
 * [floordiv(x, h*w), floordiv(floormod(x, h*w), w), floormod(floormod(x, h*w), w)], the one
 * index x. With cx, also any run whose indices' linear offset (idx[d]*(extents after) + ..)
 * simplifies to an expression without floordiv or floormod (fused loops' indices after whole
 * multiples of constant extents were taken out of them): that offset. cx NULL: plain pairs only.
 * NULL when axis d starts no run. */
const loom_sym_expr *loom_tp_fused_run(loom_sym_ctx *cx, const loom_tp_buffer *buf, loom_tp_expr *const *idx, int d,
                                       int *naxes);

/* A scalar (int64) parameter: a symbolic variable the caller passes. */
typedef struct loom_tp_scalar_param {
  const char *name;
  const loom_sym_expr *var;
} loom_tp_scalar_param;

/* A parameter is a buffer or a scalar, in declaration order. */
typedef struct loom_tp_param {
  bool is_buffer;
  loom_tp_buffer *buf;            /* when is_buffer */
  loom_tp_scalar_param scalar;    /* otherwise */
} loom_tp_param;

struct loom_tp_func {
  const char *name;
  size_t nparams;
  loom_tp_param *params;
  loom_tp_stmt *body;
  /* Symbolic variables of the program's signature, in first-appearance order:
   * those in buffer shapes (bound at entry from actual shapes) and scalar params. */
  size_t nsyms;
  const loom_sym_expr **syms;
};

/* ---- constructors (allocate in `a`; NULL on out-of-memory) ---------------- */

loom_tp_expr *loom_tp_const_f(loom_arena *a, loom_dtype t, double v);
loom_tp_expr *loom_tp_const_i(loom_arena *a, loom_dtype t, int64_t v);
loom_tp_expr *loom_tp_sym(loom_arena *a, const loom_sym_expr *e);
loom_tp_expr *loom_tp_load(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx);
loom_tp_expr *loom_tp_letref(loom_arena *a, const loom_tp_stmt *let);
/* Result dtype: bool for CMP, else the first operand's. */
loom_tp_expr *loom_tp_op1(loom_arena *a, loom_tp_op op, loom_tp_expr *x);
loom_tp_expr *loom_tp_op2(loom_arena *a, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y);
loom_tp_expr *loom_tp_op3(loom_arena *a, loom_tp_op op, loom_tp_expr *x, loom_tp_expr *y,
                          loom_tp_expr *z);
loom_tp_expr *loom_tp_cast(loom_arena *a, loom_dtype t, loom_tp_expr *x);
loom_tp_expr *loom_tp_select(loom_arena *a, loom_tp_expr *c, loom_tp_expr *x, loom_tp_expr *y);

loom_tp_stmt *loom_tp_seq(loom_arena *a, loom_tp_stmt **items, size_t n);
loom_tp_stmt *loom_tp_for(loom_arena *a, const loom_sym_expr *var, const loom_sym_expr *extent,
                          loom_tp_loop_kind kind, bool reduce, loom_tp_stmt *body);
loom_tp_stmt *loom_tp_store(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx,
                            loom_tp_expr *value);
loom_tp_stmt *loom_tp_let(loom_arena *a, const char *name, loom_tp_expr *value);
loom_tp_stmt *loom_tp_if(loom_arena *a, loom_tp_expr *cond, loom_tp_stmt *then_s,
                         loom_tp_stmt *else_s);
loom_tp_stmt *loom_tp_alloc_stmt(loom_arena *a, loom_tp_buffer *buf);
/* A block-wide barrier (GPU programs: see LOOM_TP_STMT_BARRIER). */
loom_tp_stmt *loom_tp_barrier(loom_arena *a);
/* A prefetch hint for buf[idx], into L2 and below when l2 (see LOOM_TP_STMT_PREFETCH). */
loom_tp_stmt *loom_tp_prefetch(loom_arena *a, const loom_tp_buffer *buf, loom_tp_expr **idx, bool l2);
/* A buffer description (copies `dims`). */
loom_tp_buffer *loom_tp_buffer_new(loom_arena *a, const char *name, loom_dtype t, int ndim,
                                   const loom_sym_expr *const *dims, loom_tp_scope scope);

/* ---- whole programs -------------------------------------------------------- */

/* Checks a program: every buffer access has ndim indices of integer type, loop and
 * let scoping, dtypes of operators and stores, extents use only signature symbols
 * and enclosing loop variables. Errors name the program and the offending statement. */
loom_status loom_tp_verify(loom_sym_ctx *cx, const loom_tp_func *f);

/* A buffer argument for the interpreter: data laid out densely in row-major order. */
typedef struct loom_tp_arg {
  void *data;                      /* buffer contents (dtype of the param) */
  const int64_t *shape;            /* actual extents, ndim of the param */
  int64_t scalar;                  /* value for a scalar param */
} loom_tp_arg;

/* Runs `f` on `args` (one per param): binds the program's symbols from the buffer
 * shapes (errors name the buffer, axis, expression, expected and actual value) and
 * scalar params, then executes the body naively. Out-of-bounds accesses are errors
 * naming the buffer, axis and index. Obviously correct, not fast: it is the oracle. */
loom_status loom_tp_interpret(loom_sym_ctx *cx, const loom_tp_func *f, const loom_tp_arg *args,
                              size_t nargs);

#endif

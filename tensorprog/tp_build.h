/* tp_build.h — a builder that makes tensor programs directly as IR (no text round trip).
 *
 * It owns what a hand-written generator used to keep in fixed-size buffers: the parameter
 * list, the names in scope (shape symbols, scalars, buffers, loop variables, lets), the stack
 * of open loops and ifs, and the closing. A program reads as the calls that build it:
 *
 *     loom_tpb b;
 *     loom_tpb_init(&b, a, cx, "neg_f32");
 *     const loom_sym_expr *n = loom_tpb_shape_sym(&b, "d0");
 *     loom_tp_buffer *X = loom_tpb_buffer(&b, "X", LOOM_DTYPE_F32, 1, &n);
 *     loom_tp_buffer *Y = loom_tpb_buffer(&b, "Y", LOOM_DTYPE_F32, 1, &n);
 *     loom_tp_expr *i = loom_tp_sym(a, loom_tpb_for(&b, "i0", n, LOOM_TP_LOOP_PARALLEL, false));
 *     loom_tpb_store(&b, Y, &i, loom_tp_op1(a, LOOM_TP_OP_NEG, loom_tpb_load1(&b, X, i)));
 *     return loom_tpb_finish(&b, result);   // closes the loop, verifies the program
 *
 * The program is the one the parser makes of its printed text: symbolic variables are created
 * in the order the parser would create them (shape symbols at their first appearance, loop
 * variables when their loop opens), so printed programs are byte-identical to the text path.
 *
 * Errors are sticky: after the first failure (out of memory, a template that does not parse)
 * every call is a no-op returning NULL, and loom_tpb_finish returns that status. Expression
 * constructors from tp_ir.h return NULL on out-of-memory; the builder accepts NULL operands
 * and reports them as out of memory at the end. */
#ifndef LOOM_TENSORPROG_TP_BUILD_H
#define LOOM_TENSORPROG_TP_BUILD_H

#include "base/vec.h"
#include "tensorprog/tp_ir.h"

/* What a name in scope stands for (the parser's scope entries). */
typedef enum loom_tp_binding_kind {
  LOOM_TP_BIND_SYM,  /* a symbolic variable (shape symbol, scalar param, loop variable): ptr is a loom_sym_expr */
  LOOM_TP_BIND_LET,  /* a let: ptr is its LET statement */
  LOOM_TP_BIND_BUF,  /* a buffer: ptr is a loom_tp_buffer */
  LOOM_TP_BIND_EXPR, /* an expression substituted (copied) at each use: ptr is a loom_tp_expr */
} loom_tp_binding_kind;

typedef struct loom_tp_binding {
  const char *name;           /* NUL-terminated */
  loom_tp_binding_kind kind;
  const void *ptr;
} loom_tp_binding;

/* A deep copy of `e` (NULL on out-of-memory). */
loom_tp_expr *loom_tp_expr_copy(loom_arena *a, const loom_tp_expr *e);

/* Parses one expression `text` (the parser's expression grammar) in which each name means its
 * binding (later bindings hide earlier ones). An untyped literal result takes *store_type when
 * store_type is not NULL, as the value of a store does. A parse error is INTERNAL (templates come from Loom's own code)
 * naming the text. */
loom_status loom_tp_parse_expr(loom_arena *a, loom_sym_ctx *cx, const char *text, const loom_tp_binding *names,
                               size_t n, const loom_dtype *store_type, loom_tp_expr **out);

/* One open block: the body of the program, a loop or an if. */
typedef struct loom_tpb_frame {
  LOOM_VEC(loom_tp_stmt *) items; /* statements so far */
  int kind;                       /* 0 body, 1 for, 2 if-then, 3 if-else */
  const loom_sym_expr *var;       /* for: the loop variable */
  const loom_sym_expr *extent;    /* for: its extent */
  loom_tp_loop_kind loop_kind;    /* for */
  bool reduce;                    /* for */
  loom_tp_expr *cond;             /* if */
  loom_tp_stmt *then_s;           /* if, once its else opened */
  size_t scope_mark;              /* names declared inside go out of scope at the end */
} loom_tpb_frame;

typedef struct loom_tpb {
  loom_arena *a;
  loom_sym_ctx *cx;
  const char *name;                         /* the program's name (in the arena) */
  LOOM_VEC(loom_tp_param) params;           /* in declaration order */
  LOOM_VEC(const loom_sym_expr *) syms;     /* signature symbols, first appearance first */
  LOOM_VEC(loom_tp_binding) scope;          /* names in scope, innermost last */
  LOOM_VEC(loom_tpb_frame) frames;          /* open blocks; frames[0] is the body */
  loom_status status;                       /* first failure (sticky) */
} loom_tpb;

/* Starts program `name` (copied). */
void loom_tpb_init(loom_tpb *b, loom_arena *a, loom_sym_ctx *cx, const char *name);
/* The shape symbol `name`: the one in scope, or a fresh one declared now (a signature symbol). */
const loom_sym_expr *loom_tpb_shape_sym(loom_tpb *b, const char *name);
/* A dimension spelled as in program text: a decimal integer (a constant) or a shape symbol. */
const loom_sym_expr *loom_tpb_dim(loom_tpb *b, const char *text);
/* Declares buffer parameter `name` with symbolic dims. */
loom_tp_buffer *loom_tpb_buffer(loom_tpb *b, const char *name, loom_dtype t, int ndim, const loom_sym_expr *const *dims);
/* Declares a buffer parameter whose dims are spelled (loom_tpb_dim), left to right. */
loom_tp_buffer *loom_tpb_buffer_dims(loom_tpb *b, const char *name, loom_dtype t, int ndim, const char *const *dims);
/* Declares an i64 scalar parameter; returns its symbolic variable. */
const loom_sym_expr *loom_tpb_scalar(loom_tpb *b, const char *name);
/* The symbolic variable `name` in scope (shape symbol, scalar, loop variable); NULL if none. */
const loom_sym_expr *loom_tpb_sym(loom_tpb *b, const char *name);

/* Opens `for var in 0..extent kind [reduce] {`; returns the loop variable. */
const loom_sym_expr *loom_tpb_for(loom_tpb *b, const char *var, const loom_sym_expr *extent, loom_tp_loop_kind kind,
                                  bool reduce);
/* Opens `if cond {`; loom_tpb_else switches to its else block. */
void loom_tpb_if(loom_tpb *b, loom_tp_expr *cond);
void loom_tpb_else(loom_tpb *b);
/* Closes the innermost open loop or if. */
void loom_tpb_end(loom_tpb *b);
/* Closes the `n` innermost blocks. */
void loom_tpb_end_n(loom_tpb *b, int n);

/* Appends `buf[idx] = value` (idx: buf->ndim expressions, deep-copied so nodes are never shared). */
void loom_tpb_store(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *const *idx, loom_tp_expr *value);
/* Appends `let name: dtype = value`; returns a reference to it (a fresh LETREF). */
loom_tp_expr *loom_tpb_let(loom_tpb *b, const char *name, loom_tp_expr *value);
/* Appends `alloc name: Local[(dims), t]` (or Shared) and brings the buffer into scope. */
loom_tp_buffer *loom_tpb_alloc(loom_tpb *b, const char *name, loom_dtype t, int ndim, const loom_sym_expr *const *dims,
                               loom_tp_scope scope);
/* Appends a statement built elsewhere. */
void loom_tpb_emit(loom_tpb *b, loom_tp_stmt *s);

/* A load `buf[idx...]` (idx deep-copied). */
loom_tp_expr *loom_tpb_load(loom_tpb *b, const loom_tp_buffer *buf, loom_tp_expr *const *idx);
/* The index value of a symbolic expression. */
loom_tp_expr *loom_tpb_idx(loom_tpb *b, const loom_sym_expr *e);
/* An untyped integer literal given dtype t, as the parser types one next to an operand of
 * dtype t: an index value when t is i64, else a constant of t. */
loom_tp_expr *loom_tpb_lit_i(loom_tpb *b, loom_dtype t, int64_t v);
/* Shorthands for what generators write often (each returns fresh nodes):
 * the index value of constant v; `buf[k]` of a one-axis buffer; `buf[k] = value`; a one-axis
 * local `alloc name: Local[(n,), t]`; a deep copy of e for a second use (nodes are never
 * shared); `lhs op rhs` on two index values (a comparison: not folded, unlike + - * min max). */
loom_tp_expr *loom_tpb_cidx(loom_tpb *b, int64_t v);
loom_tp_expr *loom_tpb_at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k);
void loom_tpb_store_at(loom_tpb *b, const loom_tp_buffer *buf, int64_t k, loom_tp_expr *value);
const loom_tp_buffer *loom_tpb_local(loom_tpb *b, const char *name, loom_dtype t, int64_t n);
loom_tp_expr *loom_tpb_dup(loom_tpb *b, const loom_tp_expr *e);
loom_tp_expr *loom_tpb_cmp(loom_tpb *b, loom_tp_op op, const loom_sym_expr *lhs, const loom_sym_expr *rhs);
/* Parses an expression template in the current scope, names[i] standing for a copy of vals[i]
 * (so a caller's "exp(x)" becomes exp(X[i0, i1])); an untyped literal result takes *store_type
 * when given. */
loom_tp_expr *loom_tpb_parse(loom_tpb *b, const char *text, const char *const *names, loom_tp_expr *const *vals, int n,
                             const loom_dtype *store_type);

/* Closes every open block, makes the program, verifies it (a failure is a bug in the
 * generator: INTERNAL, with the printed program) and frees the builder. */
loom_status loom_tpb_finish(loom_tpb *b, loom_tp_func **result);

#endif

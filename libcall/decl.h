/* decl.h — declarations of external functions (compile side of libcall/; libloom only).
 *
 * A declaration says how an extern of the module is found and called: the C symbol (or a
 * built-in such as "blas.sgemm"), an optional shared object, the ABI, purity, and for the
 * C ABI the list of C arguments written in terms of the extern's parameters:
 *
 *     extern @scale(x: Tensor[(n, m), f32], alpha: Tensor[(), f64], k: Scalar[i64]) -> Tensor[(n, m), f32]
 *         symbol="scale_rows" library="libscale.so" pure abi=c(x, n, m, f64(alpha), k, out) -> i32
 *
 * A C argument is a tensor parameter or `out` (its data pointer), an i64 scalar parameter,
 * a symbolic var that is a dim of some tensor parameter or of the result (its value, i64),
 * an integer constant, or one of those converted: `i32(..)`, `i64(..)`, `f32(..)`,
 * `f64(..)` (a rank-0 tensor converts to its element). graph/ holds the declaration on its
 * extern and turns the graph signature into `loom_libcall_param`s; loom_libcall_decl_lower
 * checks the declaration and makes the run-side loom_libcall_sig. */
#ifndef LOOM_LIBCALL_DECL_H
#define LOOM_LIBCALL_DECL_H

#include "base/arena.h"
#include "libcall/libcall.h"

/* One C argument as written in a declaration. */
typedef struct loom_libcall_cref {
  loom_libcall_ctype cast; /* VOID: none (the argument's natural type) */
  const char *name;        /* parameter, `out` or dim var; NULL: the constant `value` */
  int64_t value;
} loom_libcall_cref;

typedef struct loom_libcall_decl {
  const char *symbol;        /* C symbol or built-in; NULL: the extern's name */
  const char *library;       /* shared object, or NULL */
  bool pure;                 /* no side effect besides writing the result (may sit in dataflow blocks) */
  loom_libcall_abi abi;      /* KERNEL (default) or C */
  loom_libcall_ctype ret;    /* C ABI: VOID or I32 (a status) */
  size_t ncargs;             /* C ABI arguments */
  const loom_libcall_cref *cargs;
} loom_libcall_decl;

typedef enum loom_libcall_param_kind {
  LOOM_LIBCALL_PARAM_TENSOR, /* passed as a buffer, its dims as symbols */
  LOOM_LIBCALL_PARAM_INT,    /* an i64 scalar: a sym(...) argument, passed as a symbol */
} loom_libcall_param_kind;

/* What libcall needs to know of one parameter (or the result) of the graph signature. */
typedef struct loom_libcall_param {
  const char *name;          /* NULL when unnamed */
  loom_libcall_param_kind kind;
  loom_dtype dtype;          /* TENSOR: element type (LOOM_DTYPE_COUNT: unknown) */
  int32_t rank;              /* TENSOR: >= 0 */
  const char *const *dims;   /* TENSOR: per axis the var name when the dim is a bare var, else NULL */
} loom_libcall_param;

/* Checks `d` (NULL: kernel ABI, symbol = name) against the parameters and result of extern
 * `name` and fills `out` (allocated in `a`). Errors name the extern, the C argument and
 * what is wrong with it. */
LOOM_MUST_USE loom_status loom_libcall_decl_lower(const char *name, const loom_libcall_decl *d, size_t nparams,
                                                  const loom_libcall_param *params, const loom_libcall_param *result,
                                                  loom_arena *a, loom_libcall_sig *out);

/* The attributes after the signature as the text form writes them (leading space), e.g.
 * ` symbol="scale_rows" library="libscale.so" pure abi=c(x, n, f64(alpha), out) -> i32`.
 * Writes nothing for NULL. */
void loom_libcall_decl_print(const loom_libcall_decl *d, loom_strbuf *sb);

#endif

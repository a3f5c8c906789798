/* gemm.h — the GEMM built-ins' shared part (libcall-internal): the signature check and the
 * plan of one call — M, N, K, leading dims, batching — that blas.c (CBLAS, host memory) and
 * cublas.c (cuBLAS, GPU memory) both execute. The layout is blas.c's header comment. */
#ifndef LOOM_LIBCALL_GEMM_H
#define LOOM_LIBCALL_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "libcall/libcall.h"

/* One built-in's fixed parameters. */
typedef struct loom_gemm_kind {
  loom_dtype dtype; /* F32 or F64 */
  bool ta, tb;      /* A, B stored transposed */
} loom_gemm_kind;

/* What one call computes: nb GEMMs (row-major) of rows x N x K, operand i at base + i * stride. */
typedef struct loom_gemm_plan {
  int64_t rows, N, K;       /* op(A) rows x K, op(B) K x N */
  int64_t lda, ldb;         /* the last dim of A and of B as stored */
  int64_t nb;               /* GEMMs */
  int64_t sa, sb, sc;       /* element strides between them (0: one matrix for every batch) */
  bool zero_k;              /* K == 0: C is zeroed, nothing multiplied */
  bool empty;               /* nothing to write */
} loom_gemm_plan;

/* The signature's buffers, dtypes and ranks for a GEMM of kind k (TYPE_ERROR naming the operand). */
loom_status loom_gemm_check_sig(const loom_libcall_sig *s, loom_gemm_kind k);
/* The plan of a call with dims `sym`, or false with the reason in msg (shapes that disagree, dims
 * past `int_max`: the library's int range). */
bool loom_gemm_plan_of(const loom_libcall_sig *s, const int64_t *sym, loom_gemm_kind k, int64_t int_max,
                       loom_gemm_plan *p, char *msg, size_t cap);

/* The GEMM built-ins' names and kinds, once: X(id, "blas.name", dtype, ta, tb, doc). */
#define LOOM_GEMM_BUILTINS(X)                                                                              \
  X(sgemm, "blas.sgemm", F32, false, false, "C = A @ B (f32)")                                             \
  X(sgemm_nt, "blas.sgemm_nt", F32, false, true, "C = A @ B^T (f32): linear with w (out, in)")             \
  X(sgemm_tn, "blas.sgemm_tn", F32, true, false, "C = A^T @ B (f32)")                                      \
  X(sgemm_tt, "blas.sgemm_tt", F32, true, true, "C = A^T @ B^T (f32)")                                     \
  X(dgemm, "blas.dgemm", F64, false, false, "C = A @ B (f64)")                                             \
  X(dgemm_nt, "blas.dgemm_nt", F64, false, true, "C = A @ B^T (f64)")                                      \
  X(dgemm_tn, "blas.dgemm_tn", F64, true, false, "C = A^T @ B (f64)")                                      \
  X(dgemm_tt, "blas.dgemm_tt", F64, true, true, "C = A^T @ B^T (f64)")

#endif

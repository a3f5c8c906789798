/* blas.c — built-in bindings: CBLAS GEMM (OpenBLAS or any CBLAS) in its transposed and
 * batched forms, for the kernel ABI layout of libcall.h.
 *
 *   blas.sgemm / blas.dgemm        C = A @ B      A (.., M, K), B (.., K, N), C (.., M, N)
 *   blas.sgemm_nt / blas.dgemm_nt  C = A @ B^T    B stored (.., N, K)   (linear: x @ w^T)
 *   blas.sgemm_tn / blas.dgemm_tn  C = A^T @ B    A stored (.., K, M)
 *   blas.sgemm_tt / blas.dgemm_tt  C = A^T @ B^T
 *
 * Buffers: A, B, C (dense row-major). Symbols: A's dims, B's dims, C's dims (the libcall
 * layout), from which M, N, K and the leading dims (the last dim of each operand) are read.
 * C has rank r >= 2; A and B have rank r (the same batch dims as C) or rank 2 (one matrix
 * for every batch). A batched A with a shared, untransposed B is one GEMM of batch*M rows.
 * Ranks and dtypes are checked at load; dims are checked at every call (cheap, and a
 * mismatch is reported rather than read out of bounds). */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#include "libcall/gemm.h"
#include "libcall/libcall.h"

/* CBLAS's enum values (cblas.h), so the runtime needs no BLAS header. */
enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                         int);
typedef void (*dgemm_fn)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                         double *, int);

static struct {
  pthread_mutex_t mu;
  bool tried;            /* an open was attempted */
  char error[512];       /* why it failed, or "" */
  void *dl;              /* kept open for the life of the process */
  sgemm_fn sgemm;
  dgemm_fn dgemm;
  void (*set_threads)(int); /* openblas_set_num_threads, if the library has it */
  atomic_int threads;    /* the thread count last given to set_threads */
} blas = {.mu = PTHREAD_MUTEX_INITIALIZER};

loom_status loom_libcall_blas_open(void) {
  pthread_mutex_lock(&blas.mu);
  if (!blas.tried) {
    blas.tried = true;
    const char *env = getenv("LOOM_BLAS_LIBRARY");
    const char *names[] = {env, "libopenblas.so.0", "libcblas.so.3", "libblas.so.3"};
    size_t off = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !blas.sgemm; i++) {
      if (!names[i] || !names[i][0]) continue;
      void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      void *s = dl ? dlsym(dl, "cblas_sgemm") : NULL, *d = dl ? dlsym(dl, "cblas_dgemm") : NULL;
      if (s && d) {
        blas.dl = dl;
        blas.sgemm = (sgemm_fn)(uintptr_t)s;
        blas.dgemm = (dgemm_fn)(uintptr_t)d;
        blas.set_threads = (void (*)(int))(uintptr_t)dlsym(dl, "openblas_set_num_threads");
      } else {
        if (dl) dlclose(dl);
        int w = snprintf(blas.error + off, sizeof blas.error - off, "%s%s%s", off ? ", " : "", names[i],
                         dl ? " (no cblas_sgemm/cblas_dgemm)" : "");
        if (w > 0 && (size_t)w < sizeof blas.error - off) off += (size_t)w;
      }
    }
  }
  loom_status st = blas.sgemm ? LOOM_OK
                              : LOOM_ERROR(UNAVAILABLE, "no CBLAS library found (tried %s; set LOOM_BLAS_LIBRARY)",
                                           blas.error);
  pthread_mutex_unlock(&blas.mu);
  return st;
}

loom_status loom_gemm_check_sig(const loom_libcall_sig *s, loom_gemm_kind k) {
  if (s->nbuf != 3) return LOOM_ERROR(TYPE_ERROR, "GEMM takes 3 buffers (A, B, C), the declaration has %u", s->nbuf);
  static const char *const what[3] = {"A (operand 0)", "B (operand 1)", "C (the result)"};
  for (int i = 0; i < 3; i++)
    if (s->buf_dtypes[i] != k.dtype)
      return LOOM_ERROR(TYPE_ERROR, "%s has dtype %s, this GEMM takes %s", what[i],
                        s->buf_dtypes[i] < LOOM_DTYPE_COUNT ? loom_dtype_name(s->buf_dtypes[i]) : "?",
                        loom_dtype_name(k.dtype));
  int ra = s->buf_ranks[0], rb = s->buf_ranks[1], rc = s->buf_ranks[2];
  if (rc < 2) return LOOM_ERROR(TYPE_ERROR, "C (the result) has rank %d, GEMM needs rank >= 2", rc);
  if (ra != 2 && ra != rc) return LOOM_ERROR(TYPE_ERROR, "A (operand 0) has rank %d, the result has rank %d (A must have rank 2 or %d)", ra, rc, rc);
  if (rb != 2 && rb != rc) return LOOM_ERROR(TYPE_ERROR, "B (operand 1) has rank %d, the result has rank %d (B must have rank 2 or %d)", rb, rc, rc);
  if (s->nsym < (uint32_t)(ra + rb + rc))
    return LOOM_ERROR(TYPE_ERROR, "GEMM reads %d dims from the symbols, the declaration passes %u", ra + rb + rc, s->nsym);
  return LOOM_OK;
}

static loom_status gemm_check(const loom_libcall_sig *s, loom_gemm_kind k) {
  LOOM_PROPAGATE(loom_gemm_check_sig(s, k));
  return loom_libcall_blas_open();
}

static int32_t fail(const loom_kernel_ctx *ctx, const char *msg) {
  ctx->set_error(ctx, msg);
  return 1;
}

bool loom_gemm_plan_of(const loom_libcall_sig *s, const int64_t *sym, loom_gemm_kind k, int64_t int_max,
                       loom_gemm_plan *p, char *msg, size_t cap) {
  int ra = s->buf_ranks[0], rb = s->buf_ranks[1], rc = s->buf_ranks[2];
  const int64_t *a = sym, *b = sym + ra, *c = sym + ra + rb;
  int64_t M = c[rc - 2], N = c[rc - 1];
  int64_t K = k.ta ? a[ra - 2] : a[ra - 1];
  int64_t am = k.ta ? a[ra - 1] : a[ra - 2];
  int64_t bk = k.tb ? b[rb - 1] : b[rb - 2], bn = k.tb ? b[rb - 2] : b[rb - 1];
  if (am != M || bk != K || bn != N) {
    snprintf(msg, cap, "GEMM shapes disagree: op(A) is %lld x %lld, op(B) %lld x %lld, C %lld x %lld", (long long)am,
             (long long)K, (long long)bk, (long long)bn, (long long)M, (long long)N);
    return false;
  }
  int64_t batch = 1;
  for (int i = 0; i < rc - 2; i++) {
    if ((ra == rc && a[i] != c[i]) || (rb == rc && b[i] != c[i])) {
      snprintf(msg, cap, "GEMM batch axis %d: A %lld, B %lld, C %lld", i, (long long)(ra == rc ? a[i] : 1),
               (long long)(rb == rc ? b[i] : 1), (long long)c[i]);
      return false;
    }
    batch *= c[i];
  }
  *p = (loom_gemm_plan){.rows = M, .N = N, .K = K, .lda = a[ra - 1], .ldb = b[rb - 1], .nb = batch,
                        .sa = ra == rc ? M * K : 0, .sb = rb == rc ? K * N : 0, .sc = M * N};
  p->empty = batch == 0 || M == 0 || N == 0;
  p->zero_k = !p->empty && K == 0;
  /* a batched A over one untransposed matrix B: one GEMM of batch*M rows */
  if (batch > 1 && ra == rc && rb == 2 && !k.ta) p->rows = M * batch, p->nb = 1;
  if (!p->empty && !p->zero_k && (p->rows > int_max || N > int_max || K > int_max || p->lda > int_max || p->ldb > int_max)) {
    snprintf(msg, cap, "GEMM dims exceed the int range of the BLAS library");
    return false;
  }
  return true;
}

static int32_t gemm_call(const loom_libcall_sig *s, void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx,
                         loom_gemm_kind k) {
  char msg[200];
  loom_gemm_plan p;
  if (!loom_gemm_plan_of(s, sym, k, INT_MAX, &p, msg, sizeof msg)) return fail(ctx, msg);
  size_t es = k.dtype == LOOM_DTYPE_F32 ? 4 : 8;
  if (p.empty) return 0;
  if (p.zero_k) {
    memset(buf[2], 0, (size_t)(p.nb * p.rows * p.N) * es);
    return 0;
  }
  if (blas.set_threads && atomic_load(&blas.threads) != (int)ctx->num_threads) {
    atomic_store(&blas.threads, (int)ctx->num_threads);
    blas.set_threads((int)ctx->num_threads);
  }
  int ta = k.ta ? TRANS : NO_TRANS, tb = k.tb ? TRANS : NO_TRANS;
  for (int64_t i = 0; i < p.nb; i++) {
    if (k.dtype == LOOM_DTYPE_F32)
      blas.sgemm(ROW_MAJOR, ta, tb, (int)p.rows, (int)p.N, (int)p.K, 1.0f, (const float *)buf[0] + i * p.sa, (int)p.lda,
                 (const float *)buf[1] + i * p.sb, (int)p.ldb, 0.0f, (float *)buf[2] + i * p.sc, (int)p.N);
    else
      blas.dgemm(ROW_MAJOR, ta, tb, (int)p.rows, (int)p.N, (int)p.K, 1.0, (const double *)buf[0] + i * p.sa, (int)p.lda,
                 (const double *)buf[1] + i * p.sb, (int)p.ldb, 0.0, (double *)buf[2] + i * p.sc, (int)p.N);
  }
  return 0;
}

/* One pair of functions per built-in (the table below lists them once). */
#define X(id, name, dt, ta, tb, doc)                                                                      \
  static loom_status check_##id(const loom_libcall_sig *s) {                                              \
    return gemm_check(s, (loom_gemm_kind){LOOM_DTYPE_##dt, ta, tb});                                           \
  }                                                                                                       \
  static int32_t call_##id(const loom_libcall_sig *s, void *const *b, const int64_t *y, const loom_kernel_ctx *c) { \
    return gemm_call(s, b, y, c, (loom_gemm_kind){LOOM_DTYPE_##dt, ta, tb});                                   \
  }
LOOM_GEMM_BUILTINS(X)
#undef X

static const loom_libcall_builtin builtins[] = {
#define X(id, name, dt, ta, tb, doc) {name, doc, check_##id, call_##id},
    LOOM_GEMM_BUILTINS(X)
#undef X
};

const loom_libcall_builtin *loom_libcall_builtin_find(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (!strcmp(builtins[i].name, name)) return &builtins[i];
  return NULL;
}

const loom_libcall_builtin *loom_libcall_builtins(uint32_t *out_n) {
  *out_n = (uint32_t)(sizeof builtins / sizeof builtins[0]);
  return builtins;
}

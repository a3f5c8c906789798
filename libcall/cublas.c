/* cublas.c — the GEMM built-ins of gemm.h on GPU memory, through cuBLAS (loaded at run time:
 * dlopen of libcublas, no header and no link-time dependency). Used by a model that runs on the
 * CUDA device (libcall options `device` "cuda"): the offload pass's `blas.sgemm*` calls become
 * cuBLAS calls on the buffers' device pointers, enqueued on the legacy default stream, so they
 * run in order with the device's kernels (targets/cuda/device_cuda.h). cuBLAS works on the
 * device's primary context, the one that device uses.
 *
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS is called with the
 * operands swapped and the same transposes. FP32 stays FP32 (cuBLAS's default math mode: no
 * TF32) unless $LOOM_CUDA_TF32 is 1 when the handle is made (`loom run --tf32`): then FP32 GEMMs
 * may use the tensor cores' TF32 (10-bit mantissa inputs, FP32 accumulation; what PyTorch's
 * allow_tf32 does), process-wide. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libcall/gemm.h"
#include "libcall/libcall.h"

enum { OP_N = 0, OP_T = 1 }; /* cublasOperation_t */

typedef int (*create_fn)(void **);
typedef int (*sgemm_batched_fn)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                                const float *, int, long long, const float *, float *, int, long long, int);
typedef int (*dgemm_batched_fn)(void *, int, int, int, int, int, const double *, const double *, int, long long,
                                const double *, int, long long, const double *, double *, int, long long, int);
typedef const char *(*status_string_fn)(int);
typedef int (*set_math_mode_fn)(void *, int);
enum { CUBLAS_TF32_TENSOR_OP_MATH = 3 }; /* cublasMath_t */

static struct {
  pthread_mutex_t mu;
  bool tried;
  char error[512];
  void *dl;
  void *handle; /* cublasHandle_t, made at the first call (on the device's context) */
  create_fn create;
  sgemm_batched_fn sgemm;
  dgemm_batched_fn dgemm;
  status_string_fn status_string;
  set_math_mode_fn set_math_mode; /* NULL in a cuBLAS before 11 */
} cublas = {.mu = PTHREAD_MUTEX_INITIALIZER};

loom_status loom_libcall_cublas_open(void) {
  pthread_mutex_lock(&cublas.mu);
  if (!cublas.tried) {
    cublas.tried = true;
    const char *env = getenv("LOOM_CUBLAS_LIBRARY");
    const char *names[] = {env, "libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"};
    size_t off = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !cublas.dl; i++) {
      if (!names[i] || !names[i][0]) continue;
      void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      void *c = dl ? dlsym(dl, "cublasCreate_v2") : NULL, *s = dl ? dlsym(dl, "cublasSgemmStridedBatched") : NULL,
           *d = dl ? dlsym(dl, "cublasDgemmStridedBatched") : NULL;
      if (c && s && d) {
        cublas.dl = dl;
        cublas.create = (create_fn)(uintptr_t)c;
        cublas.sgemm = (sgemm_batched_fn)(uintptr_t)s;
        cublas.dgemm = (dgemm_batched_fn)(uintptr_t)d;
        cublas.status_string = (status_string_fn)(uintptr_t)dlsym(dl, "cublasGetStatusString");
        cublas.set_math_mode = (set_math_mode_fn)(uintptr_t)dlsym(dl, "cublasSetMathMode");
      } else {
        if (dl) dlclose(dl);
        int w = snprintf(cublas.error + off, sizeof cublas.error - off, "%s%s%s", off ? ", " : "", names[i],
                         dl ? " (no cublasCreate_v2 / cublas?gemmStridedBatched)" : "");
        if (w > 0 && (size_t)w < sizeof cublas.error - off) off += (size_t)w;
      }
    }
  }
  loom_status st = cublas.dl ? LOOM_OK
                             : LOOM_ERROR(UNAVAILABLE, "no cuBLAS library found (tried %s; set LOOM_CUBLAS_LIBRARY)",
                                          cublas.error);
  pthread_mutex_unlock(&cublas.mu);
  return st;
}

static int32_t fail(const loom_kernel_ctx *ctx, const char *what, int status) {
  char msg[240];
  snprintf(msg, sizeof msg, "cuBLAS: %s failed: %s (status %d)", what,
           cublas.status_string ? cublas.status_string(status) : "?", status);
  ctx->set_error(ctx, msg);
  return 1;
}

/* Whether FP32 GEMMs may use TF32 ($LOOM_CUDA_TF32=1). */
static bool tf32_allowed(void) {
  const char *v = getenv("LOOM_CUDA_TF32");
  return v && !strcmp(v, "1");
}

/* The library's handle, made once (cublasCreate needs the device's context current: the VM's
 * thread has it, the device made it current), in TF32 math where allowed. */
static void *handle(int *status) {
  pthread_mutex_lock(&cublas.mu);
  if (!cublas.handle) {
    *status = cublas.create(&cublas.handle);
    if (!*status && tf32_allowed()) {
      if (!cublas.set_math_mode) *status = 15; /* CUBLAS_STATUS_NOT_SUPPORTED */
      else *status = cublas.set_math_mode(cublas.handle, CUBLAS_TF32_TENSOR_OP_MATH);
      if (*status) cublas.handle = NULL; /* the next call tries again and fails the same way */
    }
  }
  void *h = cublas.handle;
  pthread_mutex_unlock(&cublas.mu);
  return h;
}

static loom_status cublas_check(const loom_libcall_sig *s, loom_gemm_kind k) {
  LOOM_PROPAGATE(loom_gemm_check_sig(s, k));
  return loom_libcall_cublas_open();
}

static int32_t cublas_call(const loom_libcall_sig *s, void *const *buf, const int64_t *sym, const loom_kernel_ctx *ctx,
                           loom_gemm_kind k) {
  char msg[200];
  loom_gemm_plan p;
  if (!loom_gemm_plan_of(s, sym, k, INT_MAX, &p, msg, sizeof msg)) {
    ctx->set_error(ctx, msg);
    return 1;
  }
  if (p.empty) return 0;
  int status = 0;
  void *h = handle(&status);
  if (!h) return fail(ctx, tf32_allowed() ? "cublasCreate / cublasSetMathMode (TF32: LOOM_CUDA_TF32=1)" : "cublasCreate", status);
  /* column-major: C^T (N x rows) = op(B)^T (N x K) op(A)^T (K x rows) */
  int tb = k.tb ? OP_T : OP_N, ta = k.ta ? OP_T : OP_N;
  int m = (int)p.N, n = (int)p.rows, kk = (int)p.K;
  int ldb = (int)(p.ldb > 0 ? p.ldb : 1), lda = (int)(p.lda > 0 ? p.lda : 1); /* K == 0: C = 0, valid dims */
  if (p.zero_k) ldb = k.tb ? 1 : (m > 0 ? m : 1), lda = k.ta ? (n > 0 ? n : 1) : 1;
  if (k.dtype == LOOM_DTYPE_F32) {
    const float one = 1.0f, zero = 0.0f;
    status = cublas.sgemm(h, tb, ta, m, n, kk, &one, buf[1], ldb, p.sb, buf[0], lda, p.sa, &zero, buf[2], m, p.sc,
                          (int)p.nb);
  } else {
    const double one = 1.0, zero = 0.0;
    status = cublas.dgemm(h, tb, ta, m, n, kk, &one, buf[1], ldb, p.sb, buf[0], lda, p.sa, &zero, buf[2], m, p.sc,
                          (int)p.nb);
  }
  return status ? fail(ctx, k.dtype == LOOM_DTYPE_F32 ? "cublasSgemmStridedBatched" : "cublasDgemmStridedBatched", status)
                : 0;
}

#define X(id, name, dt, ta, tb, doc)                                                                      \
  static loom_status check_##id(const loom_libcall_sig *s) {                                              \
    return cublas_check(s, (loom_gemm_kind){LOOM_DTYPE_##dt, ta, tb});                                    \
  }                                                                                                       \
  static int32_t call_##id(const loom_libcall_sig *s, void *const *b, const int64_t *y, const loom_kernel_ctx *c) { \
    return cublas_call(s, b, y, c, (loom_gemm_kind){LOOM_DTYPE_##dt, ta, tb});                            \
  }
LOOM_GEMM_BUILTINS(X)
#undef X

static const loom_libcall_builtin builtins[] = {
#define X(id, name, dt, ta, tb, doc) {name, doc " on the GPU (cuBLAS)", check_##id, call_##id},
    LOOM_GEMM_BUILTINS(X)
#undef X
};

const loom_libcall_builtin *loom_libcall_cublas_find(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (!strcmp(builtins[i].name, name)) return &builtins[i];
  return NULL;
}

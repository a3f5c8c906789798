/* fake_driver.c — a stand-in for libcuda.so.1 (libloom_test_fakecuda.so), so that the CUDA
 * device's run side is tested on machines without a GPU (tests/cuda/test_cuda_device.c):
 *   - device pointers are host blocks moved by FAKE_SHIFT, an address no host mapping has, so
 *     any dereference of device memory by host code faults (the test crashes);
 *   - kernels are not run (there is no GPU to run PTX): each launch is counted and checked
 *     (a known function, a block of 1..1024 threads, every buffer parameter a device pointer);
 *   - loom_fakecuda_set(fail_alloc_after): allocations fail with CUDA_ERROR_OUT_OF_MEMORY after
 *     that many more (-1: never);
 *   - it stands in for libcublas too (LOOM_CUBLAS_LIBRARY): GEMMs are counted, their operands
 *     checked to be device pointers, not computed; the math mode set is kept;
 *   - events (the profile's timers) all measure FAKE_EVENT_MS.
 * Only the entry points targets/cuda/driver.c and libcall/cublas.c resolve are here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_SHIFT 0x8000000000000000ull /* bit 63: a non-canonical address on x86-64 and AArch64, which faults */
#define FAKE_FN_MAGIC 0x46554e43u

typedef struct fake_fn {
  uint32_t magic;
  char name[248];
} fake_fn;

static long launches, bad_launches, gemms, fail_after = -1;

static uint64_t to_dev(void *p) { return (uint64_t)(uintptr_t)p + FAKE_SHIFT; }
static void *to_host(uint64_t d) { return (void *)(uintptr_t)(d - FAKE_SHIFT); }
static int is_dev(uint64_t d) { return (d & FAKE_SHIFT) != 0; }

/* The test's handles. */
long loom_fakecuda_launches(void);
long loom_fakecuda_bad_launches(void);
long loom_fakecuda_gemms(void);
void loom_fakecuda_set(long fail_alloc_after);
long loom_fakecuda_gemms(void) { return gemms; }
long loom_fakecuda_launches(void) { return launches; }
long loom_fakecuda_bad_launches(void) { return bad_launches; }
void loom_fakecuda_set(long fail_alloc_after) { fail_after = fail_alloc_after; }

/* The driver API (CUresult 0 is success, 2 CUDA_ERROR_OUT_OF_MEMORY, 1 CUDA_ERROR_INVALID_VALUE). */
int cuInit(unsigned f);
int cuDeviceGet(int *d, int i);
int cuDeviceGetCount(int *n);
int cuDevicePrimaryCtxRetain(void **c, int d);
int cuDevicePrimaryCtxRelease_v2(int d);
int cuCtxSetCurrent(void *c);
int cuModuleLoadDataEx(void **m, const void *ptx, unsigned n, int *o, void **v);
int cuModuleUnload(void *m);
int cuModuleGetFunction(void **f, void *m, const char *name);
int cuMemAlloc_v2(uint64_t *p, size_t n);
int cuMemFree_v2(uint64_t p);
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n);
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n);
int cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n);
int cuMemsetD8_v2(uint64_t d, unsigned char c, size_t n);
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,
                   void *st, void **params, void **extra);
int cuCtxSynchronize(void);
int cuGetErrorString(int r, const char **s);

int cuInit(unsigned f) { return f ? 1 : 0; }
int cuDeviceGet(int *d, int i) { *d = i; return i ? 1 : 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)&launches; return d ? 1 : 0; }
int cuDevicePrimaryCtxRelease_v2(int d) { return d ? 1 : 0; }
int cuCtxSetCurrent(void *c) { return c ? 0 : 1; }
int cuModuleLoadDataEx(void **m, const void *ptx, unsigned n, int *o, void **v) {
  (void)n, (void)o, (void)v;
  if (!strstr((const char *)ptx, ".entry")) return 218; /* CUDA_ERROR_INVALID_PTX */
  *m = (void *)ptx;
  return 0;
}
int cuModuleUnload(void *m) { return m ? 0 : 1; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
  char pat[300];
  snprintf(pat, sizeof pat, ".entry %s(", name);
  if (!strstr((const char *)m, pat)) return 500; /* CUDA_ERROR_NOT_FOUND */
  static fake_fn fns[4096]; /* static: they live as long as the process, no heap to leak */
  static unsigned nfns;
  if (nfns == sizeof fns / sizeof *fns) return 2;
  fake_fn *fn = &fns[nfns++];
  fn->magic = FAKE_FN_MAGIC;
  snprintf(fn->name, sizeof fn->name, "%s", name);
  *f = fn;
  return 0;
}
int cuMemAlloc_v2(uint64_t *p, size_t n) {
  if (fail_after == 0) return 2;
  if (fail_after > 0) fail_after--;
  void *h = calloc(1, n ? n : 1);
  if (!h) return 2;
  *p = to_dev(h);
  return 0;
}
int cuMemFree_v2(uint64_t p) {
  if (!is_dev(p)) return 1;
  free(to_host(p));
  return 0;
}
int cuMemcpyHtoD_v2(uint64_t d, const void *s, size_t n) {
  if (!is_dev(d) || is_dev((uint64_t)(uintptr_t)s)) return 1;
  memcpy(to_host(d), s, n);
  return 0;
}
int cuMemcpyDtoH_v2(void *d, uint64_t s, size_t n) {
  if (!is_dev(s) || is_dev((uint64_t)(uintptr_t)d)) return 1;
  memcpy(d, to_host(s), n);
  return 0;
}
int cuMemcpyDtoD_v2(uint64_t d, uint64_t s, size_t n) {
  if (!is_dev(d) || !is_dev(s)) return 1;
  memmove(to_host(d), to_host(s), n);
  return 0;
}
int cuMemsetD8_v2(uint64_t d, unsigned char c, size_t n) {
  if (!is_dev(d)) return 1;
  memset(to_host(d), c, n);
  return 0;
}
/* The parameters are the kernel ABI of targets/cuda/ptx.h: the buffers (device pointers), the
 * symbols, the error word; the fake knows the buffer count from the kernel name's absence of
 * it, so it checks the last (the error word) and the first (a buffer) only. */
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned sh,
                   void *st, void **params, void **extra) {
  (void)sh, (void)st, (void)extra;
  const fake_fn *fn = f;
  launches++;
  if (!fn || fn->magic != FAKE_FN_MAGIC || !gx || gy != 1 || gz != 1 || !bx || bx > 1024 || by != 1 || bz != 1 || !params ||
      !is_dev(*(const uint64_t *)params[0]))
    bad_launches++;
  return 0;
}
int cuCtxSynchronize(void) { return 0; }
/* Events: every elapsed time is FAKE_EVENT_MS (the profile's device times are checked against it). */
#define FAKE_EVENT_MS 0.25f
int cuEventCreate(void **e, unsigned flags);
int cuEventRecord(void *e, void *stream);
int cuEventSynchronize(void *e);
int cuEventElapsedTime(float *ms, void *a, void *b);
int cuEventDestroy_v2(void *e);
int cuEventCreate(void **e, unsigned flags) {
  *e = malloc(1);
  return *e && !flags ? 0 : 1;
}
int cuEventRecord(void *e, void *stream) { return e && !stream ? 0 : 1; }
int cuEventSynchronize(void *e) { return e ? 0 : 1; }
int cuEventElapsedTime(float *ms, void *a, void *b) {
  *ms = FAKE_EVENT_MS;
  return a && b && a != b ? 0 : 1;
}
int cuEventDestroy_v2(void *e) {
  free(e);
  return 0;
}
int cuGetErrorString(int r, const char **s) {
  *s = r == 2 ? "out of memory (fake driver)" : "an error (fake driver)";
  return 0;
}

/* cuBLAS (cublas_status 0 success, 7 CUBLAS_STATUS_INVALID_VALUE). */
int cublasCreate_v2(void **h);
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                              long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc,
                              long long sc, int batch);
int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *a, int lda,
                              long long sa, const double *b, int ldb, long long sb, const double *beta, double *c, int ldc,
                              long long sc, int batch);

/* The math mode last set (-1: never): the TF32 switch (LOOM_CUDA_TF32). */
static int math_mode = -1;
long loom_fakecuda_math_mode(void);
long loom_fakecuda_math_mode(void) { return math_mode; }
int cublasSetMathMode(void *h, int mode);
int cublasSetMathMode(void *h, int mode) {
  if (h != (void *)&gemms) return 7;
  math_mode = mode;
  return 0;
}

int cublasCreate_v2(void **h) {
  *h = (void *)&gemms;
  return 0;
}
static int gemm(void *h, int m, int n, int k, const void *a, const void *b, void *c, int ldc, int batch) {
  gemms++;
  if (h != (void *)&gemms || m < 0 || n < 0 || k < 0 || batch < 1 || ldc < (m > 1 ? m : 1)) bad_launches++;
  if ((m && n && k) && (!is_dev((uint64_t)(uintptr_t)a) || !is_dev((uint64_t)(uintptr_t)b))) bad_launches++;
  if (m && n && !is_dev((uint64_t)(uintptr_t)c)) bad_launches++;
  return 0;
}
int cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *a, int lda,
                              long long sa, const float *b, int ldb, long long sb, const float *beta, float *c, int ldc,
                              long long sc, int batch) {
  (void)ta, (void)tb, (void)alpha, (void)lda, (void)sa, (void)ldb, (void)sb, (void)beta, (void)sc;
  return gemm(h, m, n, k, a, b, c, ldc, batch);
}
int cublasDgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const double *alpha, const double *a, int lda,
                              long long sa, const double *b, int ldb, long long sb, const double *beta, double *c, int ldc,
                              long long sc, int batch) {
  (void)ta, (void)tb, (void)alpha, (void)lda, (void)sa, (void)ldb, (void)sb, (void)beta, (void)sc;
  return gemm(h, m, n, k, a, b, c, ldc, batch);
}

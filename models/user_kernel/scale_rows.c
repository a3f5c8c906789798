/* scale_rows.c — an example user kernel for Loom (models/user_kernel/scale_rows.loom).
 *
 *     cc -O2 -shared -fPIC -o scale_rows.so scale_rows.c
 *
 * A plain C function; Loom calls it through libffi with the arguments its declaration
 * lists: out[i][j] = alpha * x[i][j] * w[j] + k, for an n x m row-major x. It returns 0, or
 * nonzero for a failure (declared `-> i32`). The optional string `<symbol>__loom_sig`
 * describes the C signature; Loom compares it with the declaration when it loads the
 * library and refuses a mismatch. */
#include <stdint.h>

__attribute__((visibility("default"))) const char loom_example_scale_rows__loom_sig[] =
    "i32(f32*, f32*, f32*, i64, i64, f64, i64)";

__attribute__((visibility("default"))) int32_t loom_example_scale_rows(const float *x, const float *w, float *out,
                                                                       int64_t n, int64_t m, double alpha, int64_t k) {
  if (n < 0 || m < 0) return 1;
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < m; j++) out[i * m + j] = (float)(alpha * x[i * m + j] * w[j] + (double)k);
  return 0;
}

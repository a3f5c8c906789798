/* npy.h — NumPy .npy files (format versions 1.0, 2.0, 3.0), read and written.
 * Runtime-safe (libloomrt): loom-run and the graph interpreter use it. Only C-order
 * (fortran_order False), little-endian or byte-order-free dtypes that Loom knows are
 * accepted; anything else is an error that names the file and what is wrong. */
#ifndef LOOM_BASE_NPY_H
#define LOOM_BASE_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "base/dtype.h"
#include "base/status.h"

#define LOOM_NPY_MAX_RANK 16

typedef struct loom_npy {
  loom_dtype dtype;
  int32_t rank;
  int64_t shape[LOOM_NPY_MAX_RANK];
  void *data;    /* malloc'd, nbytes long (free with free()) */
  size_t nbytes;
} loom_npy;

/* Parses .npy bytes (copies the data). */
LOOM_MUST_USE loom_status loom_npy_parse(const uint8_t *bytes, size_t len, loom_npy *out);
LOOM_MUST_USE loom_status loom_npy_read(const char *path, loom_npy *out);
/* Writes a C-order array (format 1.0). */
LOOM_MUST_USE loom_status loom_npy_write(const char *path, loom_dtype dt, int32_t rank, const int64_t *shape,
                                         const void *data);
void loom_npy_free(loom_npy *n);

#endif

/* safetensors.h — weights files in the safetensors format, read by mmap and written whole.
 *
 * The format (https://huggingface.co/docs/safetensors): an 8-byte little-endian header length N,
 * N bytes of a UTF-8 JSON object (padded with spaces), then the data section:
 *
 *     {"w": {"dtype": "F32", "shape": [768, 768], "data_offsets": [0, 2359296]}, ...,
 *      "__metadata__": {"key": "value"}}
 *
 * each tensor's bytes little-endian, row-major, at [begin, end) of the data section. The reader
 * maps the file read-only and checks everything before a byte of data is touched: the header
 * length within the file, well-formed JSON (parsed by jansson, duplicate names refused), known
 * dtypes, shape product times element size equal to end - begin (overflow-checked), and the
 * tensors covering the data section exactly, without overlaps or holes (the format's own rule).
 * Every error names the file and, where there is one, the tensor:
 *
 *     'm.safetensors': tensor 'w': shape [768, 768] of F32 needs 2359296 bytes, data_offsets give 1024
 *
 * A tensor's data points into the mapping (no copy); it stays valid until the file is closed.
 * Mapped pages are shared by every process that opens the file. A file truncated by another
 * process while mapped is outside what a reader can check (reads of the lost pages fault).
 *
 * The writer lays tensors out by element size, largest first, after a header padded so the data
 * section starts 64-aligned: every tensor is then aligned to its element size. */
#ifndef LOOM_GRAPH_SAFETENSORS_H
#define LOOM_GRAPH_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "base/dtype.h"
#include "base/status.h"

/* Most dims of one tensor. */
enum { LOOM_SAFETENSORS_MAX_RANK = 64 };

/* One tensor of a file (reader) or to write (writer). */
typedef struct loom_safetensors_tensor {
  const char *name;     /* its key in the header */
  loom_dtype dtype;     /* element type */
  int rank;             /* number of dims */
  const int64_t *dims;  /* rank dims */
  const void *data;     /* rank-major bytes (reader: into the mapping) */
  size_t nbytes;        /* product of dims * element size */
} loom_safetensors_tensor;

/* An open, validated, mapped file. */
typedef struct loom_safetensors loom_safetensors;

/* Maps `path` and validates it (see the banner). */
LOOM_MUST_USE loom_status loom_safetensors_open(loom_allocator *alloc, const char *path, loom_safetensors **out);
/* Unmaps the file and frees what open allocated (NULL is a no-op). */
void loom_safetensors_close(loom_safetensors *f);
/* The path it was opened with. */
const char *loom_safetensors_path(const loom_safetensors *f);
size_t loom_safetensors_count(const loom_safetensors *f);
/* Tensor i, in header order. */
const loom_safetensors_tensor *loom_safetensors_at(const loom_safetensors *f, size_t i);
/* The tensor called `name`, or NULL. */
const loom_safetensors_tensor *loom_safetensors_find(const loom_safetensors *f, const char *name);

/* Whether the format has a dtype for `dt` (the sub-byte and fnuz types have none). */
bool loom_safetensors_has_dtype(loom_dtype dt);
/* The format's spelling of `dt` ("F32"), or NULL. */
const char *loom_safetensors_dtype_name(loom_dtype dt);

/* Writes `n` tensors (names unique, dtypes the format has) to `path` through a temporary file in
 * the same directory renamed into place, so a failure never leaves a half-written file. */
LOOM_MUST_USE loom_status loom_safetensors_write(const char *path, size_t n, const loom_safetensors_tensor *tensors);

#endif

/* file_write.h — writing a large file front to back: gigabytes of weights (loom import's
 * safetensors file) without filling the page cache.
 *
 * A writer takes the file's bytes in order (loom_file_writer_put) and writes them at
 * consecutive offsets of an open descriptor (from 0, or after what the caller wrote itself). Files of at least LOOM_FILE_WRITE_DIRECT_MIN bytes are written
 * with O_DIRECT from an aligned staging buffer: the bytes go from that buffer to the disk and no
 * page cache is populated. Measured on a 2-core VM importing a 4.1 GB decoder: through the page
 * cache 2.5 to 15.9 s (the kernel's copy into fresh page-cache pages, `perf`: memcpy in
 * copy_folio_from_iter_atomic, its speed varying run to run), with O_DIRECT 2.6 to 2.9 s, the
 * disk's speed. Bytes that lie in a read-only mapping of a file (the ONNX model or its external
 * data, as the importer maps them) are read from that file with pread, so the mapping is never
 * faulted in. Smaller files, and file systems that refuse O_DIRECT, are written through the page
 * cache (copy_file_range from a mapped file, pwrite otherwise).
 *
 * Errors are errno values (0 = success) for the caller to name the file in its message. */
#ifndef LOOM_BASE_FILE_WRITE_H
#define LOOM_BASE_FILE_WRITE_H

#include <stddef.h>
#include <stdint.h>

#define LOOM_FILE_WRITE_DIRECT_MIN (UINT64_C(256) << 20) /* O_DIRECT from this total size */

typedef struct loom_file_writer loom_file_writer;

/* A writer of `total` bytes in all to `fd` (open for writing) from file offset `at` on (pwrite:
 * the descriptor's position is not used), written with O_DIRECT when total >= direct_min
 * (LOOM_FILE_WRITE_DIRECT_MIN; tests pass less) and `at` is a multiple of 4096. 0 or ENOMEM. */
int loom_file_writer_open(int fd, uint64_t at, uint64_t total, uint64_t direct_min, loom_file_writer **out);
/* Appends n bytes. 0 or an errno. */
int loom_file_writer_put(loom_file_writer *w, const void *p, size_t n);
/* Writes what is staged and frees the writer (also after a failed put). 0 or an errno: the
 * first error of the writer's life. The descriptor stays open (the caller closes it). */
int loom_file_writer_close(loom_file_writer *w);

#endif

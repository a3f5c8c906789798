/* file.h — opening and reading whole files, with errors that name the path.
 *
 * Every reader of user files goes through loom_file_open_regular first: it refuses what is
 * not a regular file (a directory, /dev/zero, a FIFO, a terminal) and a file over the
 * reader's size limit BEFORE reading a byte, so no input can make Loom read forever or
 * allocate without bound. The limits are the one table below. */
#ifndef LOOM_BASE_FILE_H
#define LOOM_BASE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "base/status.h"

/* Size limits, one per kind of file (bytes). */
#define LOOM_FILE_LIMIT_TEXT (UINT64_C(1) << 30)     /* .loom modules, tensor programs, keys: 1 GiB */
#define LOOM_FILE_LIMIT_ONNX (UINT64_C(2) << 30)     /* .onnx models: protobuf's own 2 GiB limit */
#define LOOM_FILE_LIMIT_NPY (UINT64_C(64) << 30)     /* .npy tensors and ONNX external data: 64 GiB */
#define LOOM_FILE_LIMIT_WEIGHTS (UINT64_C(1) << 40)  /* safetensors weights files (mapped): 1 TiB */
#define LOOM_FILE_LIMIT_ARTIFACT (UINT64_C(1) << 40) /* executables and AOT artifacts (mapped): 1 TiB */

/* Opens `path` read-only (O_CLOEXEC) and checks it is a regular file of at most `limit`
 * bytes; `what` names the kind in errors ("model", "artifact"). On success *out_fd is the
 * open descriptor (the caller closes it) and *out_size its size. Errors:
 *     cannot open 'x.loom': No such file or directory
 *     '/dev/zero' is not a regular file (a character device): refusing to read it as a model
 *     'big.npy' is 70000000000 bytes, over the limit of 68719476736 bytes for a tensor */
LOOM_MUST_USE loom_status loom_file_open_regular(const char *path, const char *what, uint64_t limit, int *out_fd,
                                                 uint64_t *out_size);

/* Reads all of `path` (a regular file within `limit` bytes) into a malloc'd, NUL-terminated
 * buffer (free with free()). */
LOOM_MUST_USE loom_status loom_file_read_limited(const char *path, const char *what, uint64_t limit, char **out_data,
                                                 size_t *out_len);

/* Maps all of `path` (a regular file within `limit` bytes) read-only (MAP_PRIVATE): no copy, the
 * pages are the page cache's (a 340 MB model is not read into fresh memory). An empty file gives
 * a non-NULL pointer to no bytes. Release with loom_file_unmap(*out_data, *out_len). A file
 * truncated by another process while mapped faults on access (SIGBUS), as any mapped input. */
LOOM_MUST_USE loom_status loom_file_map_limited(const char *path, const char *what, uint64_t limit,
                                                const void **out_data, size_t *out_len);
void loom_file_unmap(const void *data, size_t len);

/* Where the n bytes at p come from, when they lie in one read-only mapping of a regular file
 * (an ONNX model or its external data mapped by the importer): that file opened read-only in
 * *out_fd (the caller closes it) — the very file mapped, compared by device and inode — and
 * the bytes' offset in it. False (and *out_fd -1) for any other memory, or where
 * /proc/self/maps cannot be read: the caller then writes the bytes itself. Lets a writer copy
 * file to file in the kernel (copy_file_range) instead of through the mapping. */
bool loom_file_mapping_of(const void *p, size_t n, int *out_fd, uint64_t *out_offset);

/* What identifies a file's contents without reading them (as ccache's direct mode): the device,
 * the inode, the size and the modification and status-change times to the nanosecond. A write
 * through write(2), truncate(2) or a shared mapping changes the times (and the status-change time
 * cannot be set by a user), a replacement by rename(2) changes the inode. */
typedef struct loom_file_id {
  uint64_t dev, ino;      /* st_dev, st_ino */
  uint64_t size;          /* st_size */
  int64_t mtime_s, mtime_ns; /* st_mtim */
  int64_t ctime_s, ctime_ns; /* st_ctim */
} loom_file_id;

/* loom_file_map_limited, and *out_id the identity of the file mapped (fstat of the descriptor
 * before it is mapped). */
LOOM_MUST_USE loom_status loom_file_map_limited_id(const char *path, const char *what, uint64_t limit,
                                                   const void **out_data, size_t *out_len, loom_file_id *out_id);
/* The identity of `path` now (stat(2)); false when it cannot be stat'ed or is not a regular file. */
bool loom_file_id_of(const char *path, loom_file_id *out);
/* The identity of the open file `fd` (fstat(2)); false as loom_file_id_of. */
bool loom_file_id_of_fd(int fd, loom_file_id *out);
/* Whether two identities are the same. */
bool loom_file_id_equal(const loom_file_id *a, const loom_file_id *b);
/* Whether an identity can stand for the contents: its modification or its status-change time
 * is at least LOOM_FILE_ID_SETTLED_S seconds before now. A file written within the last tick of a
 * coarse clock could be written again within that tick and keep both times; one whose times are
 * that old cannot be changed again without one of them changing (ccache's "file too new"). */
bool loom_file_id_settled(const loom_file_id *id);
#define LOOM_FILE_ID_SETTLED_S 2
/* The identity as text, "dev D ino I size S mtime A.B ctime C.D", into buf (cap >= 160). */
void loom_file_id_text(const loom_file_id *id, char *buf, size_t cap);

/* Least-recently-used eviction in a cache directory: the regular files of `dir` whose names start
 * with `prefix`, oldest modification time first (a cache touches an entry when it uses it), are
 * removed until their sizes sum to at most `max_bytes`. Files named `stale_prefix`... (NULL: none;
 * writers' temporaries) whose modification is over `stale_s` seconds old are removed too (their
 * writer died). Best effort: what cannot be listed or removed is left; returns the entries
 * removed. Safe against other processes using the directory (a file gone meanwhile counts as
 * gone). */
uint64_t loom_file_evict_lru(const char *dir, const char *prefix, uint64_t max_bytes, const char *stale_prefix,
                             int64_t stale_s);

/* loom_file_read_limited(path, "file", LOOM_FILE_LIMIT_TEXT, ...). */
LOOM_MUST_USE loom_status loom_file_read(const char *path, char **out_data, size_t *out_len);

#endif

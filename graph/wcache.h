/* wcache.h — the packed-weight cache: the pack pass's output for a weight, on disk next to the
 * kernel cache's entries, mapped (not read) on a later compile instead of packed again.
 *
 *     loom_wcache *wc = loom_wcache_open(dir, 0);      // dir: the kernel cache's; NULL: none
 *     loom_wcache_blob *b;
 *     if (loom_wcache_get(wc, key, key_len, bytes, &b)) { use loom_wcache_blob_data(b); ... loom_wcache_blob_free(b); }
 *     else { ...pack into buf...; loom_wcache_put(wc, key, key_len, buf, bytes); }
 *     loom_wcache_close(wc);                            // evicts down to its own size bound
 *
 * An entry is one file `<dir>/w-<32 hex>` named by XXH3-128 of its KEY: the text that decides
 * the packed bytes (the layout and its parameters, the source's dtype, dims and content hash,
 * Loom's pack layout version; graph/pass_pack.c writes it). The file is a 64-byte header
 * (magic, format, the key's and the payload's lengths, the payload's offset, the payload's
 * content hash, loom_wcache_content_hash, and a sample hash), the key text, zeros up to the next
 * 4096-byte boundary, and the payload, which is therefore page-aligned once mapped. A lookup maps
 * the file read-only (not populated) and uses it only when the magic, the format, the lengths
 * (against the file's size and the length the caller expects), the key text (byte for byte: a
 * digest collision is a miss) and the sample hash (XXH3-64 of the header, the key and 64 payload
 * pages spread from the first to the last) match: a truncated entry, a damaged header or key, or
 * damage in a sampled page is counted as rejected and never used (the caller packs again and the
 * put replaces it). Damage elsewhere in the payload is found only by loom_wcache_verify (`loom
 * cache verify`), which hashes every byte (docs/codegen.md, the trade-off). Writes go to a temporary file and rename(2)
 * (atomic, as in the kernel cache: concurrent writers of one key both succeed).
 *
 * Size bound: its own, $LOOM_CACHE_WEIGHTS_MAX_MB (default 4096 MiB), apart from the kernels'
 * ($LOOM_CACHE_MAX_MB counts only `k-` files). A hit sets the entry's modification time to now;
 * close (after any put) removes the least recently used `w-` entries until the total is under
 * the bound. An entry mapped by a running process may be evicted or replaced: the process
 * keeps its mapping (unlink and rename do not change a mapped file's bytes). */
#ifndef LOOM_GRAPH_WCACHE_H
#define LOOM_GRAPH_WCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct loom_wcache loom_wcache;
typedef struct loom_wcache_blob loom_wcache_blob;

/* What one cache did (since open). */
typedef struct loom_wcache_stats {
  uint32_t hits;          /* entries found sound and mapped */
  uint32_t misses;        /* lookups that found no usable entry */
  uint32_t rejected;      /* entries found but corrupt, truncated or of another key: ignored (also misses) */
  uint32_t stored;        /* entries written */
  uint32_t evicted;       /* entries removed by the size bound */
  uint64_t bytes_mapped;  /* payload bytes of the hits */
  uint64_t bytes_stored;  /* payload bytes written */
  uint32_t memo_hits;     /* source hashes found by file identity (loom_wcache_memo_get) */
  uint32_t memo_misses;   /* ... not found */
  uint32_t memo_stored;   /* ... written */
} loom_wcache_stats;

/* What loom_wcache_verify found. */
typedef struct loom_wcache_verify_report {
  uint32_t checked;       /* `w-` and `h-` files read */
  uint32_t bad;           /* ... found unsound */
  uint32_t removed;       /* ... of those, removed */
  bool unreadable;        /* the directory could not be listed */
} loom_wcache_verify_report;
/* Told of each unsound file: its name, why, and whether it was removed. */
typedef void (*loom_wcache_bad_fn)(void *ud, const char *name, const char *why, bool removed);

#define LOOM_WCACHE_DEFAULT_MAX_MB 4096
#define LOOM_WCACHE_MEMO_MAX_BYTES ((uint64_t)16 << 20) /* the `h-` files' own bound */

/* A cache in `dir` (which must exist and be writable; NULL or "": a cache that finds and stores
 * nothing). max_bytes 0: $LOOM_CACHE_WEIGHTS_MAX_MB or the default. NULL only when out of memory. */
loom_wcache *loom_wcache_open(const char *dir, uint64_t max_bytes);
/* Whether the cache can be used. */
bool loom_wcache_usable(const loom_wcache *c);
/* The entry stored under `key`, mapped read-only, when it is sound and its payload has exactly
 * `len` bytes; false on a miss. */
bool loom_wcache_get(loom_wcache *c, const char *key, size_t key_len, size_t len, loom_wcache_blob **out);
/* A blob's payload (page-aligned) and its length. */
const void *loom_wcache_blob_data(const loom_wcache_blob *b);
size_t loom_wcache_blob_len(const loom_wcache_blob *b);
/* Unmaps the blob (NULL is fine); a `void *` argument so that a module can adopt it. */
void loom_wcache_blob_free(void *b);
/* Stores `len` bytes of `data` under `key` (atomically; a failure to write only warns once, on stderr). */
void loom_wcache_put(loom_wcache *c, const char *key, size_t key_len, const void *data, size_t len);
/* Removes least recently used `w-` entries until their total size is at most the bound. */
void loom_wcache_evict(loom_wcache *c);
loom_wcache_stats loom_wcache_stats_of(const loom_wcache *c);
/* Evicts if anything was stored (an entry or a source hash), and frees. NULL is fine. */
void loom_wcache_close(loom_wcache *c);

/* Source hashes remembered by file identity (`h-` files): `key` is text that names the source
 * bytes without reading them (graph/pass_pack.c: the file's device, inode, size, modification and
 * status-change times, the offset and the length); get gives the content hash an earlier put
 * stored under exactly that key (false when none, or when the file is not sound: counted as
 * rejected). The caller puts only what it hashed from a file whose identity did not change
 * while it hashed and is settled (base/file.h, loom_file_id_settled). */
bool loom_wcache_memo_get(loom_wcache *c, const char *key, size_t key_len, char hex[33]);
void loom_wcache_memo_put(loom_wcache *c, const char *key, size_t key_len, const char hex[33]);

/* The full check of every `w-` and `h-` file in `dir` (`loom cache verify`): an entry's header,
 * name, sample hash and the XXH3-128 of its whole payload; a source-hash file's name and check
 * line. bad (may be NULL) is told of each unsound file; with `remove` they are unlinked. */
loom_wcache_verify_report loom_wcache_verify(const char *dir, bool remove, loom_wcache_bad_fn bad, void *ud);

/* The content hash of n bytes as 32 hex digits into hex[33] (the content part of a pack key; also
 * what an entry's payload is checked by): XXH3-128 of the bytes up to 1 MiB, else XXH3-128 of the
 * XXH3-128 digests of its 1 MiB chunks, hashed on LOOM_COMPILE_THREADS threads (default: the
 * CPUs available, at most 8); the value does not depend on the thread count. */
void loom_wcache_content_hash(const void *p, size_t n, char hex[33]);

#endif

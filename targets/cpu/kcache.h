/* kcache.h — the kernel cache: content-addressed object code on disk, shared by processes.
 *
 *     loom_strbuf warn;  loom_strbuf_init(&warn, NULL);
 *     loom_kcache *kc = loom_kcache_open(NULL, 0, &warn);  // $LOOM_CACHE_DIR or the default; never fails
 *     uint8_t *obj; size_t len;
 *     if (!loom_kcache_get(kc, key, key_len, &obj, &len)) { ...compile...; loom_kcache_put(kc, key, key_len, obj, len); }
 *     free(obj);
 *     loom_kcache_close(kc);                               // evicts down to the size bound
 *
 * An entry is one file `<dir>/k-<32 hex>` named by a 128-bit digest of its KEY (the full
 * text that decides the code: codegen.c's key, the canonical program, the machine, LLVM's
 * and Loom's versions). The file holds a header (magic, format, lengths, the key's digest, a
 * 64-bit hash of the payload), the key text itself and the payload. A lookup reads the whole
 * file and uses it only when the magic, the lengths (against the file size), the key text
 * (byte for byte: a digest collision is a miss, not a wrong kernel) and the payload hash all
 * match; anything else is counted as rejected and treated as a miss (the caller recompiles and
 * the next put overwrites it). Writes go to a temporary file in the same directory, then
 * rename(2): readers see a whole old entry or a whole new one, never a part, and concurrent
 * writers of one key both succeed (the last rename wins; both wrote the same bytes).
 *
 * Size bound: $LOOM_CACHE_MAX_MB (default 512 MiB). A hit sets the entry's modification
 * time to now; close (after any put) removes the least recently used entries until the
 * total is under the bound, and temporary files older than an hour (a writer that died).
 *
 * The directory: `dir`, else $LOOM_CACHE_DIR, else $XDG_CACHE_HOME/loom, else ~/.cache/loom
 * (created). One that cannot be made or written (a file in the way, no permission) gives a
 * warning line in `warn` and a cache that neither finds nor stores anything: compiling goes
 * on without it. The cache trusts the directory's owner (as a build cache does): whoever can
 * write there can make this process run their code. */
#ifndef LOOM_TARGETS_CPU_KCACHE_H
#define LOOM_TARGETS_CPU_KCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/strbuf.h"

typedef struct loom_kcache loom_kcache;

/* What one cache did (all counters since open). */
typedef struct loom_kcache_stats {
  uint32_t hits;     /* entries found and used */
  uint32_t misses;   /* lookups that found no usable entry */
  uint32_t rejected; /* entries found but corrupt, truncated or of another key: ignored (also misses) */
  uint32_t stored;   /* entries written */
  uint32_t evicted;  /* entries removed by the size bound */
} loom_kcache_stats;

#define LOOM_KCACHE_DEFAULT_MAX_MB 512

/* Opens (creates) the cache directory; never fails (see above). max_bytes 0: $LOOM_CACHE_MAX_MB
 * or the default. NULL only when out of memory (then no cache). */
loom_kcache *loom_kcache_open(const char *dir, uint64_t max_bytes, loom_strbuf *warn);
/* Whether the cache can be used (false after a warning). */
bool loom_kcache_usable(const loom_kcache *c);
/* The directory ("" when none could be chosen). */
const char *loom_kcache_dir(const loom_kcache *c);
/* The payload stored under `key` into a malloc'd *data (caller frees); false on a miss. */
bool loom_kcache_get(loom_kcache *c, const char *key, size_t key_len, uint8_t **data, size_t *len);
/* Whether an entry for `key` is there and sound, without counting or touching it (inspection). */
bool loom_kcache_probe(loom_kcache *c, const char *key, size_t key_len);
/* Stores `data` under `key` (atomically; a failure to write only warns once, on stderr). */
void loom_kcache_put(loom_kcache *c, const char *key, size_t key_len, const uint8_t *data, size_t len);
/* Removes least recently used entries until the total size is at most the bound. */
void loom_kcache_evict(loom_kcache *c);
loom_kcache_stats loom_kcache_stats_of(const loom_kcache *c);
/* Evicts if anything was stored, and frees. NULL is fine. */
void loom_kcache_close(loom_kcache *c);

/* The 32-hex-digit digest of `key` (what names its entry and its kernel symbol), into hex[33]. */
void loom_kcache_digest(const char *key, size_t key_len, char hex[33]);

#endif

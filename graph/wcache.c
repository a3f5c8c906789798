/* wcache.c — the packed-weight cache on disk (wcache.h): mapped entries checked by their header,
 * key and a sample of their pages (the whole payload's XXH3-128 by loom_wcache_verify), source
 * hashes remembered by file identity, atomic writes, least-recently-used eviction under a size
 * bound of its own. */
#include "graph/wcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* header-only (Debian's libxxhash-dev): nothing more to link */
#include <xxhash.h>

#include "base/file.h"
#include "base/file_write.h"

/* The entry header, little-endian on disk as in memory (Loom builds for x86-64 and AArch64 only). */
#define WC_MAGIC "LOOMWC01"
#define WC_FORMAT 2u /* 2: the sample hash in the header */
#define WC_ALIGN 4096u /* the payload's offset in the file: page-aligned once mapped */
/* An entry's payload from this size on is written with O_DIRECT (file_write.h): a compile of a 1B
 * decoder stores 4 GB in 64 MB entries; through the page cache that cost 15 s on a VM whose fresh
 * pages are slow to touch. Smaller entries (a GPT-2's 9 MB panels) stay cached for the next compile. */
#define WC_DIRECT_MIN (UINT64_C(16) << 20)
typedef struct wc_header {
  char magic[8];
  uint32_t format;
  uint32_t reserved;     /* 0 */
  uint64_t key_len;      /* bytes of key text after the header */
  uint64_t payload_len;  /* bytes of payload */
  uint64_t payload_off;  /* where the payload starts: a multiple of WC_ALIGN after header and key */
  uint64_t hash_lo;      /* XXH3-128 of the payload, low half */
  uint64_t hash_hi;      /* ... and high half */
  uint64_t sample;       /* XXH3-64 of this header (sample 0), the key and the sampled pages (sample_hash) */
} wc_header;
_Static_assert(sizeof(wc_header) == 64, "the wcache header is 64 bytes");

struct loom_wcache {
  char dir[4096];      /* the directory ("" when none) */
  bool usable;         /* dir exists and is writable */
  bool warned_write;   /* a failed write has been reported */
  uint64_t max_bytes;  /* the size bound of the `w-` entries */
  loom_wcache_stats st;
};

struct loom_wcache_blob {
  void *base;          /* the whole file's mapping */
  size_t map_len;      /* its length */
  const void *data;    /* the payload inside it */
  size_t len;          /* payload bytes */
};

loom_wcache *loom_wcache_open(const char *dir, uint64_t max_bytes) {
  loom_wcache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  if (!max_bytes) {
    const char *mb = getenv("LOOM_CACHE_WEIGHTS_MAX_MB");
    long long v = mb && *mb ? strtoll(mb, NULL, 10) : 0;
    max_bytes = (uint64_t)(v > 0 ? v : LOOM_WCACHE_DEFAULT_MAX_MB) << 20;
  }
  c->max_bytes = max_bytes;
  if (!dir || !*dir || strlen(dir) >= sizeof c->dir) return c;
  snprintf(c->dir, sizeof c->dir, "%s", dir);
  struct stat sb;
  c->usable = stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode) && access(dir, R_OK | W_OK | X_OK) == 0;
  return c;
}

bool loom_wcache_usable(const loom_wcache *c) { return c && c->usable; }
loom_wcache_stats loom_wcache_stats_of(const loom_wcache *c) { return c ? c->st : (loom_wcache_stats){0}; }
const void *loom_wcache_blob_data(const loom_wcache_blob *b) { return b->data; }
size_t loom_wcache_blob_len(const loom_wcache_blob *b) { return b->len; }

void loom_wcache_blob_free(void *p) {
  loom_wcache_blob *b = p;
  if (!b) return;
  munmap(b->base, b->map_len);
  free(b);
}

/* The content hash: XXH3-128 of the bytes up to HASH_CHUNK, else XXH3-128 of the chunks'
 * XXH3-128 digests (each chunk HASH_CHUNK bytes, the last one the rest), so that the chunks can
 * be hashed on several threads; the value does not depend on how many. */
#define HASH_CHUNK ((size_t)1 << 20)
#define HASH_MAX_THREADS 8

/* Threads for hashing: LOOM_COMPILE_THREADS when set, else the CPUs this process may run on
 * (at most HASH_MAX_THREADS), as codegen's workers. */
static size_t hash_threads(void) {
  const char *env = getenv("LOOM_COMPILE_THREADS");
  long t = 0;
  if (env && *env) t = strtol(env, NULL, 10);
  else {
    cpu_set_t set;
    t = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  return t < 1 ? 1 : t > HASH_MAX_THREADS ? HASH_MAX_THREADS : (size_t)t;
}

/* One thread's share of the chunks: [first, end) of `nchunks` over `n` bytes at `p`. */
typedef struct hash_job {
  const uint8_t *p;
  size_t n, first, end;
  XXH128_hash_t *digests;
} hash_job;

static void *hash_chunks(void *arg) {
  hash_job *j = arg;
  for (size_t i = j->first; i < j->end; i++) {
    size_t at = i * HASH_CHUNK, len = j->n - at < HASH_CHUNK ? j->n - at : HASH_CHUNK;
    j->digests[i] = XXH3_128bits(j->p + at, len);
  }
  return NULL;
}

static XXH128_hash_t content_hash(const void *p, size_t n) {
  if (n <= HASH_CHUNK) return XXH3_128bits(p, n);
  size_t nchunks = (n + HASH_CHUNK - 1) / HASH_CHUNK, nt = hash_threads();
  if (nt > nchunks) nt = nchunks;
  XXH128_hash_t *d = malloc(nchunks * sizeof *d);
  if (!d) { /* the same value, one chunk at a time through a streaming state */
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    for (size_t at = 0; at < n; at += HASH_CHUNK) {
      XXH128_hash_t h = XXH3_128bits((const uint8_t *)p + at, n - at < HASH_CHUNK ? n - at : HASH_CHUNK);
      XXH3_128bits_update(&st, &h, sizeof h);
    }
    return XXH3_128bits_digest(&st);
  }
  hash_job jobs[HASH_MAX_THREADS];
  pthread_t tids[HASH_MAX_THREADS];
  bool started[HASH_MAX_THREADS] = {false};
  for (size_t t = 0; t < nt; t++) {
    jobs[t] = (hash_job){.p = p, .n = n, .first = nchunks * t / nt, .end = nchunks * (t + 1) / nt, .digests = d};
    if (t) started[t] = pthread_create(&tids[t], NULL, hash_chunks, &jobs[t]) == 0;
  }
  hash_chunks(&jobs[0]);
  for (size_t t = 1; t < nt; t++) {
    if (started[t]) pthread_join(tids[t], NULL);
    else hash_chunks(&jobs[t]); /* no thread: this one does that share too */
  }
  XXH128_hash_t h = XXH3_128bits(d, nchunks * sizeof *d); /* the digests as they lie: little-endian hosts only */
  free(d);
  return h;
}

void loom_wcache_content_hash(const void *p, size_t n, char hex[33]) {
  XXH128_hash_t h = content_hash(p, n);
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

static void entry_path(const loom_wcache *c, const char *key, size_t key_len, char *out, size_t cap) {
  XXH128_hash_t h = XXH3_128bits(key, key_len);
  snprintf(out, cap, "%s/w-%016llx%016llx", c->dir, (unsigned long long)h.high64, (unsigned long long)h.low64);
}

/* The payload offset for a key of key_len bytes. */
static uint64_t payload_offset(size_t key_len) {
  return ((uint64_t)sizeof(wc_header) + key_len + WC_ALIGN - 1) / WC_ALIGN * WC_ALIGN;
}

/* The sample hash of an entry: XXH3-64 of its header (with `sample` 0), its key text and
 * WC_SAMPLES pages of its payload spread evenly from the first to the last (every page when it
 * has no more). What a lookup checks instead of hashing the whole payload. */
#define WC_SAMPLES 64u
static uint64_t sample_hash(const wc_header *hdr, const void *key, size_t key_len, const uint8_t *payload) {
  wc_header h = *hdr;
  h.sample = 0;
  XXH3_state_t st;
  XXH3_64bits_reset(&st);
  XXH3_64bits_update(&st, &h, sizeof h);
  XXH3_64bits_update(&st, key, key_len);
  uint64_t n = h.payload_len, pages = (n + WC_ALIGN - 1) / WC_ALIGN;
  uint64_t take = pages < WC_SAMPLES ? pages : WC_SAMPLES;
  for (uint64_t k = 0; k < take; k++) {
    uint64_t pg = take == pages ? k : (take > 1 ? k * (pages - 1) / (take - 1) : 0);
    uint64_t at = pg * WC_ALIGN, len = n - at < WC_ALIGN ? n - at : WC_ALIGN;
    XXH3_64bits_update(&st, payload + at, (size_t)len);
  }
  return XXH3_64bits_digest(&st);
}

/* Whether the header of a mapped file of len bytes is well formed (magic, format, lengths and
 * offsets that fit the file). */
static bool header_ok(const wc_header *h, size_t len) {
  return !memcmp(h->magic, WC_MAGIC, 8) && h->format == WC_FORMAT && h->reserved == 0 &&
         h->key_len <= len - sizeof *h && h->payload_off == payload_offset((size_t)h->key_len) &&
         h->payload_off <= len && len - h->payload_off == h->payload_len;
}

/* Whether the mapped file (len bytes) is a sound entry of `key` with a payload of `want` bytes, as
 * far as a lookup checks: the header, the key text and the sample hash (not every payload byte:
 * loom_wcache_verify does that). */
static bool entry_ok(const uint8_t *buf, size_t len, const char *key, size_t key_len, size_t want) {
  wc_header h;
  if (len < sizeof h) return false;
  memcpy(&h, buf, sizeof h);
  if (!header_ok(&h, len) || h.key_len != key_len || h.payload_len != want) return false;
  if (memcmp(buf + sizeof h, key, key_len)) return false;
  return sample_hash(&h, key, key_len, buf + h.payload_off) == h.sample;
}

bool loom_wcache_get(loom_wcache *c, const char *key, size_t key_len, size_t len, loom_wcache_blob **out) {
  *out = NULL;
  if (!loom_wcache_usable(c)) return false;
  char path[4200];
  entry_path(c, key, key_len, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    c->st.misses++;
    return false;
  }
  struct stat sb;
  void *base = MAP_FAILED;
  size_t flen = 0;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
    flen = (size_t)sb.st_size;
    /* not populated: the check reads only the sampled pages, the rest is faulted in when used */
    base = mmap(NULL, flen, PROT_READ, MAP_PRIVATE, fd, 0);
  }
  close(fd);
  loom_wcache_blob *b = NULL;
  if (base != MAP_FAILED && entry_ok(base, flen, key, key_len, len) && (b = malloc(sizeof *b))) {
    wc_header h;
    memcpy(&h, base, sizeof h);
    *b = (loom_wcache_blob){.base = base, .map_len = flen, .data = (const uint8_t *)base + h.payload_off, .len = len};
    utimensat(AT_FDCWD, path, NULL, 0); /* used now: the most recent for eviction */
    c->st.hits++;
    c->st.bytes_mapped += len;
    *out = b;
    return true;
  }
  if (base != MAP_FAILED) munmap(base, flen);
  c->st.rejected++;
  c->st.misses++;
  return false;
}

static bool write_full(int fd, const void *p, size_t n) {
  const uint8_t *q = p;
  while (n) {
    ssize_t w = write(fd, q, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return false;
    }
    q += w, n -= (size_t)w;
  }
  return true;
}

void loom_wcache_put(loom_wcache *c, const char *key, size_t key_len, const void *data, size_t len) {
  if (!loom_wcache_usable(c)) return;
  static unsigned long counter;
  unsigned long seq = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char path[4200], tmp[4300];
  entry_path(c, key, key_len, path, sizeof path);
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(tmp, sizeof tmp, "%s/tmp-w-%ld-%lu-%llx", c->dir, (long)getpid(), seq,
           (unsigned long long)(now.tv_nsec ^ (uint64_t)(uintptr_t)&seq));
  XXH128_hash_t x = content_hash(data, len);
  wc_header h = {.format = WC_FORMAT, .key_len = key_len, .payload_len = len, .payload_off = payload_offset(key_len),
                 .hash_lo = x.low64, .hash_hi = x.high64};
  memcpy(h.magic, WC_MAGIC, 8);
  h.sample = sample_hash(&h, key, key_len, data);
  static const uint8_t zeros[WC_ALIGN];
  size_t gap = (size_t)h.payload_off - sizeof h - key_len;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  /* the whole entry by file_write.h's writer: one of WC_DIRECT_MIN or more bypasses the page
   * cache (a 1B decoder's compile writes 4 GB of them) */
  loom_file_writer *w = NULL;
  bool ok = fd >= 0 && !loom_file_writer_open(fd, 0, h.payload_off + len, WC_DIRECT_MIN, &w) &&
            !loom_file_writer_put(w, &h, sizeof h) && !loom_file_writer_put(w, key, key_len) &&
            !loom_file_writer_put(w, zeros, gap) && !loom_file_writer_put(w, data, len);
  if (w) ok &= loom_file_writer_close(w) == 0;
  if (fd >= 0) ok &= close(fd) == 0;
  if (ok && rename(tmp, path) == 0) {
    c->st.stored++;
    c->st.bytes_stored += len;
    return;
  }
  int err = errno;
  unlink(tmp);
  if (!c->warned_write) {
    c->warned_write = true;
    fprintf(stderr, "warning: packed-weight cache: cannot write an entry in '%s' (%s); going on without storing\n", c->dir,
            strerror(err));
  }
}

void loom_wcache_evict(loom_wcache *c) {
  if (!loom_wcache_usable(c)) return;
  /* packed-weight entries `w-`; the kernel cache's eviction removes every stale `tmp-` */
  c->st.evicted += loom_file_evict_lru(c->dir, "w-", c->max_bytes, NULL, 0);
  /* remembered source hashes `h-` (~250 bytes each): a bound of their own */
  loom_file_evict_lru(c->dir, "h-", LOOM_WCACHE_MEMO_MAX_BYTES, NULL, 0);
}

/* ---- source hashes by file identity (the `h-` files) ------------------------- */

#define WH_MAGIC "LOOMWH01\n"
#define WH_MAX 8192 /* bytes of an `h-` file at most */

static void memo_path(const loom_wcache *c, const char *key, size_t key_len, char *out, size_t cap) {
  XXH128_hash_t h = XXH3_128bits(key, key_len);
  snprintf(out, cap, "%s/h-%016llx%016llx", c->dir, (unsigned long long)h.high64, (unsigned long long)h.low64);
}

/* The text of an `h-` file: the magic, the key, "xxh3-128 <hex>\n", "check <16 hex>\n" (XXH3-64
 * of everything before it). Its length, or 0 when it does not fit cap. */
static size_t memo_text(const char *key, size_t key_len, const char *hex, char *out, size_t cap) {
  size_t m = sizeof WH_MAGIC - 1;
  if (m + key_len + 9 + 32 + 1 + 6 + 16 + 1 >= cap) return 0;
  memcpy(out, WH_MAGIC, m);
  memcpy(out + m, key, key_len);
  size_t n = m + key_len;
  n += (size_t)snprintf(out + n, cap - n, "xxh3-128 %.32s\n", hex);
  n += (size_t)snprintf(out + n, cap - n, "check %016llx\n", (unsigned long long)XXH3_64bits(out, n));
  return n;
}

bool loom_wcache_memo_get(loom_wcache *c, const char *key, size_t key_len, char hex[33]) {
  if (!loom_wcache_usable(c)) return false;
  char path[4200], buf[WH_MAX], want[WH_MAX];
  memo_path(c, key, key_len, path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = -1;
  if (fd >= 0) {
    n = read(fd, buf, sizeof buf);
    close(fd);
  }
  size_t m = sizeof WH_MAGIC - 1;
  /* sound: the exact text memo_text would write for this key and the hash it holds */
  if (n > 0 && (size_t)n > m + key_len + 9 + 32 && !memcmp(buf, WH_MAGIC, m) && !memcmp(buf + m, key, key_len) &&
      !memcmp(buf + m + key_len, "xxh3-128 ", 9)) {
    char h[33];
    memcpy(h, buf + m + key_len + 9, 32);
    h[32] = '\0';
    size_t w = memo_text(key, key_len, h, want, sizeof want);
    if (w && w == (size_t)n && !memcmp(buf, want, w)) {
      memcpy(hex, h, 33);
      c->st.memo_hits++;
      return true;
    }
    c->st.rejected++;
  }
  c->st.memo_misses++;
  return false;
}

void loom_wcache_memo_put(loom_wcache *c, const char *key, size_t key_len, const char hex[33]) {
  if (!loom_wcache_usable(c)) return;
  char text[WH_MAX], path[4200], tmp[4300];
  size_t n = memo_text(key, key_len, hex, text, sizeof text);
  if (!n) return;
  static unsigned long counter;
  unsigned long seq = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  memo_path(c, key, key_len, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s/tmp-h-%ld-%lu", c->dir, (long)getpid(), seq);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write_full(fd, text, n);
  if (fd >= 0) ok &= close(fd) == 0;
  if (ok && rename(tmp, path) == 0) {
    c->st.memo_stored++;
    return;
  }
  unlink(tmp); /* best effort: the next compile hashes the source again */
}

/* ---- the full check ------------------------------------------------------------ */

/* Checks one `w-` file completely: the header, its name (the key's hash), the sample hash and the
 * payload's XXH3-128; an `h-` file: its name and check line. Why not, into why[cap]. */
static bool verify_file(const char *dir, const char *name, char *why, size_t cap) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    if (fd >= 0) close(fd);
    snprintf(why, cap, "cannot be read");
    return false;
  }
  size_t flen = (size_t)sb.st_size;
  void *base = flen ? mmap(NULL, flen, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (base == MAP_FAILED) {
    snprintf(why, cap, flen ? "cannot be mapped" : "empty");
    return false;
  }
  const uint8_t *buf = base;
  bool ok = false;
  char name_want[64];
  if (name[0] == 'h') {
    size_t m = sizeof WH_MAGIC - 1;
    const char *x = flen > m ? memmem(buf + m, flen - m, "xxh3-128 ", 9) : NULL;
    char text[WH_MAX];
    if (!x || flen > WH_MAX || memcmp(buf, WH_MAGIC, m)) snprintf(why, cap, "not a source-hash file");
    else {
      size_t key_len = (size_t)((const uint8_t *)x - buf) - m;
      char h[33] = "";
      if ((size_t)((const uint8_t *)x - buf) + 9 + 32 <= flen) memcpy(h, x + 9, 32), h[32] = '\0';
      XXH128_hash_t kh = XXH3_128bits(buf + m, key_len);
      snprintf(name_want, sizeof name_want, "h-%016llx%016llx", (unsigned long long)kh.high64, (unsigned long long)kh.low64);
      size_t w = memo_text((const char *)buf + m, key_len, h, text, sizeof text);
      if (strcmp(name, name_want)) snprintf(why, cap, "its name is not its key's hash");
      else if (!w || w != flen || memcmp(text, buf, w)) snprintf(why, cap, "its check line does not match");
      else ok = true;
    }
  } else {
    wc_header h;
    if (flen < sizeof h) snprintf(why, cap, "shorter than a header (%zu bytes)", flen);
    else if (memcpy(&h, buf, sizeof h), !header_ok(&h, flen))
      snprintf(why, cap, "bad header (magic, format or lengths; %zu bytes)", flen);
    else {
      XXH128_hash_t kh = XXH3_128bits(buf + sizeof h, (size_t)h.key_len);
      snprintf(name_want, sizeof name_want, "w-%016llx%016llx", (unsigned long long)kh.high64, (unsigned long long)kh.low64);
      XXH128_hash_t x = content_hash(buf + h.payload_off, (size_t)h.payload_len);
      if (strcmp(name, name_want)) snprintf(why, cap, "its name is not its key's hash");
      else if (x.low64 != h.hash_lo || x.high64 != h.hash_hi)
        snprintf(why, cap, "the payload's XXH3-128 does not match (%llu bytes)", (unsigned long long)h.payload_len);
      else if (sample_hash(&h, buf + sizeof h, (size_t)h.key_len, buf + h.payload_off) != h.sample)
        snprintf(why, cap, "the sample hash does not match");
      else ok = true;
    }
  }
  munmap(base, flen);
  return ok;
}

loom_wcache_verify_report loom_wcache_verify(const char *dir, bool remove, loom_wcache_bad_fn bad, void *ud) {
  loom_wcache_verify_report r = {0};
  DIR *d = dir && *dir ? opendir(dir) : NULL;
  if (!d) {
    r.unreadable = true;
    return r;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncmp(e->d_name, "w-", 2) && strncmp(e->d_name, "h-", 2)) continue;
    char why[200];
    r.checked++;
    if (verify_file(dir, e->d_name, why, sizeof why)) continue;
    r.bad++;
    bool removed = false;
    if (remove) {
      char path[4400];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      removed = unlink(path) == 0;
      r.removed += removed;
    }
    if (bad) bad(ud, e->d_name, why, removed);
  }
  closedir(d);
  return r;
}

void loom_wcache_close(loom_wcache *c) {
  if (!c) return;
  if (c->st.stored || c->st.memo_stored) loom_wcache_evict(c);
  free(c);
}

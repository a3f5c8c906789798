/* kcache.c — the kernel cache on disk (kcache.h): entries, atomic writes, LRU eviction. */
#include "targets/cpu/kcache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "base/hash.h"

/* The entry header, little-endian on disk as in memory (x86-64 and AArch64 only build Loom). */
#define KC_MAGIC "LOOMKC01"
#define KC_FORMAT 1u
typedef struct kc_header {
  char magic[8];
  uint32_t format;
  uint32_t reserved;
  uint64_t key_len;
  uint64_t payload_len;
  uint64_t key_hash;     /* the first half of the digest */
  uint64_t payload_hash; /* loom_hash_bytes of the payload */
} kc_header;

struct loom_kcache {
  char dir[4096];
  bool usable;
  bool warned_write;
  uint64_t max_bytes;
  loom_kcache_stats st;
};

/* A second, independent 64-bit hash (8 bytes at a time, splitmix-mixed) for the digest's other half. */
static uint64_t hash2(const char *p, size_t n) {
  uint64_t h = 0x243f6a8885a308d3ULL ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, 8);
    h = loom_hash_combine(h, w);
  }
  uint64_t w = 0;
  memcpy(&w, p + i, n - i);
  return loom_hash_combine(h, w ^ 0xa5);
}

void loom_kcache_digest(const char *key, size_t key_len, char hex[33]) {
  snprintf(hex, 33, "%016llx%016llx", (unsigned long long)loom_hash_bytes(key, key_len),
           (unsigned long long)hash2(key, key_len));
}

/* mkdir -p; true when `path` is a directory afterwards. */
static bool make_dirs(char *path) {
  for (char *p = path + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    mkdir(path, 0755);
    *p = '/';
  }
  mkdir(path, 0755);
  struct stat sb;
  return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

loom_kcache *loom_kcache_open(const char *dir, uint64_t max_bytes, loom_strbuf *warn) {
  loom_kcache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  const char *env = getenv("LOOM_CACHE_DIR");
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (dir && *dir) snprintf(c->dir, sizeof c->dir, "%s", dir);
  else if (env && *env) snprintf(c->dir, sizeof c->dir, "%s", env);
  else if (xdg && *xdg) snprintf(c->dir, sizeof c->dir, "%s/loom", xdg);
  else if (home && *home) snprintf(c->dir, sizeof c->dir, "%s/.cache/loom", home);
  if (!max_bytes) {
    const char *mb = getenv("LOOM_CACHE_MAX_MB");
    long long v = mb && *mb ? strtoll(mb, NULL, 10) : 0;
    max_bytes = (uint64_t)(v > 0 ? v : LOOM_KCACHE_DEFAULT_MAX_MB) << 20;
  }
  c->max_bytes = max_bytes;
  size_t n = strlen(c->dir);
  while (n > 1 && c->dir[n - 1] == '/') c->dir[--n] = '\0';
  if (!n) {
    if (warn) loom_strbuf_puts(warn, "kernel cache: no directory (set LOOM_CACHE_DIR or HOME); compiling without it");
    return c;
  }
  char tmp[sizeof c->dir];
  memcpy(tmp, c->dir, sizeof tmp);
  if (!make_dirs(tmp)) {
    if (warn) loom_strbuf_printf(warn, "kernel cache: '%s' is not a directory and cannot be made one; compiling without it", c->dir);
    return c;
  }
  if (access(c->dir, R_OK | W_OK | X_OK) != 0) {
    if (warn) loom_strbuf_printf(warn, "kernel cache: '%s' cannot be written (%s); compiling without it", c->dir, strerror(errno));
    return c;
  }
  c->usable = true;
  return c;
}

bool loom_kcache_usable(const loom_kcache *c) { return c && c->usable; }
const char *loom_kcache_dir(const loom_kcache *c) { return c ? c->dir : ""; }
loom_kcache_stats loom_kcache_stats_of(const loom_kcache *c) { return c ? c->st : (loom_kcache_stats){0}; }

static void entry_path(const loom_kcache *c, const char *key, size_t key_len, char *out, size_t cap) {
  char hex[33];
  loom_kcache_digest(key, key_len, hex);
  snprintf(out, cap, "%s/k-%s", c->dir, hex);
}

/* Reads the whole file; NULL when it cannot be read. */
static uint8_t *read_all(const char *path, size_t *len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat sb;
  uint8_t *buf = NULL;
  if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 && (buf = malloc((size_t)sb.st_size))) {
    size_t got = 0;
    while (got < (size_t)sb.st_size) {
      ssize_t r = read(fd, buf + got, (size_t)sb.st_size - got);
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got != (size_t)sb.st_size) {
      free(buf);
      buf = NULL;
    }
    *len = got;
  }
  close(fd);
  return buf;
}

/* Whether `buf` (a whole file) is a sound entry of `key`; its payload at *off. */
static bool entry_ok(const uint8_t *buf, size_t len, const char *key, size_t key_len, size_t *off, size_t *plen) {
  kc_header h;
  if (len < sizeof h) return false;
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, KC_MAGIC, 8) || h.format != KC_FORMAT || h.key_len != key_len) return false;
  if (h.payload_len > len || len - sizeof h - key_len != h.payload_len) return false;
  if (h.key_hash != loom_hash_bytes(key, key_len) || memcmp(buf + sizeof h, key, key_len)) return false;
  const uint8_t *p = buf + sizeof h + key_len;
  if (loom_hash_bytes(p, (size_t)h.payload_len) != h.payload_hash) return false;
  *off = sizeof h + key_len;
  *plen = (size_t)h.payload_len;
  return true;
}

/* 0: no entry; 1: a sound entry (payload copied out when data is given); -1: a bad entry. */
static int lookup(loom_kcache *c, const char *key, size_t key_len, uint8_t **data, size_t *len) {
  char path[4200];
  entry_path(c, key, key_len, path, sizeof path);
  size_t flen = 0;
  uint8_t *buf = read_all(path, &flen);
  if (!buf) return access(path, F_OK) == 0 ? -1 : 0;
  size_t off, plen;
  if (!entry_ok(buf, flen, key, key_len, &off, &plen)) {
    free(buf);
    return -1;
  }
  if (data) {
    memmove(buf, buf + off, plen);
    *data = buf;
    *len = plen;
    utimensat(AT_FDCWD, path, NULL, 0); /* used now: the most recent for eviction */
  } else {
    free(buf);
  }
  return 1;
}

bool loom_kcache_get(loom_kcache *c, const char *key, size_t key_len, uint8_t **data, size_t *len) {
  *data = NULL;
  *len = 0;
  if (!loom_kcache_usable(c)) return false;
  int r = lookup(c, key, key_len, data, len);
  if (r == 1) {
    c->st.hits++;
    return true;
  }
  if (r < 0) c->st.rejected++;
  c->st.misses++;
  return false;
}

bool loom_kcache_probe(loom_kcache *c, const char *key, size_t key_len) {
  return loom_kcache_usable(c) && lookup(c, key, key_len, NULL, NULL) == 1;
}

static bool write_full(int fd, const void *p, size_t n) {
  const uint8_t *b = p;
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w <= 0) {
      if (w < 0 && errno == EINTR) continue;
      return false;
    }
    b += w, n -= (size_t)w;
  }
  return true;
}

void loom_kcache_put(loom_kcache *c, const char *key, size_t key_len, const uint8_t *data, size_t len) {
  if (!loom_kcache_usable(c)) return;
  static unsigned long counter;
  unsigned long seq = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
  char path[4200], tmp[4300];
  entry_path(c, key, key_len, path, sizeof path);
  snprintf(tmp, sizeof tmp, "%s/tmp-%ld-%lu-%llx", c->dir, (long)getpid(), seq,
           (unsigned long long)loom_hash_u64((uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&seq));
  kc_header h = {.format = KC_FORMAT, .key_len = key_len, .payload_len = len,
                 .key_hash = loom_hash_bytes(key, key_len), .payload_hash = loom_hash_bytes(data, len)};
  memcpy(h.magic, KC_MAGIC, 8);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write_full(fd, &h, sizeof h) && write_full(fd, key, key_len) && write_full(fd, data, len);
  if (fd >= 0) ok &= close(fd) == 0;
  if (ok && rename(tmp, path) == 0) {
    c->st.stored++;
    return;
  }
  int err = errno;
  unlink(tmp);
  if (!c->warned_write) {
    c->warned_write = true;
    fprintf(stderr, "warning: kernel cache: cannot write an entry in '%s' (%s); going on without storing\n", c->dir,
            strerror(err));
  }
}

void loom_kcache_evict(loom_kcache *c) {
  if (!loom_kcache_usable(c)) return;
  /* kernel entries `k-`; temporaries `tmp-` of a writer that died an hour ago */
  c->st.evicted += loom_file_evict_lru(c->dir, "k-", c->max_bytes, "tmp-", 3600);
}

void loom_kcache_close(loom_kcache *c) {
  if (!c) return;
  if (c->st.stored) loom_kcache_evict(c);
  free(c);
}

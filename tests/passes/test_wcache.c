/* test_wcache.c — the packed-weight cache (graph/wcache.h) and the pack pass through it: hit and
 * miss, entries checked (corrupt sampled payload, truncated, bad magic, another key's, another
 * length; a flip outside the sampled pages found by loom_wcache_verify), source hashes
 * remembered by key (`h-` files, a damaged one ignored),
 * least-recently-used eviction under its own bound (the kernel cache's `k-` files untouched),
 * concurrent writers of one key, the content hash independent of the thread count, and the
 * pack pass giving the same packed bytes with the cache cold, warm and corrupted. Every test
 * uses its own temporary directory. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "graph/passes.h"
#include "graph/wcache.h"
#include "passes_test_util.h"
#include "support/loom_test.h"

static void tmpdir(char *buf, size_t n) {
  snprintf(buf, n, "/tmp/loom-wcu-XXXXXX");
  cr_assert_not_null(mkdtemp(buf));
}

static void rm_rf(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* The path of the one `w-` entry in dir (fails unless there is exactly one). */
static void only_entry(const char *dir, char *out, size_t cap) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep '^w-'", dir);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  char name[128] = "", extra[128];
  cr_assert_not_null(fgets(name, sizeof name, f), "no entry in %s", dir);
  cr_assert_null(fgets(extra, sizeof extra, f), "more than one entry in %s", dir);
  pclose(f);
  name[strcspn(name, "\n")] = '\0';
  snprintf(out, cap, "%s/%s", dir, name);
}

static uint8_t *pattern(size_t n, unsigned seed) {
  uint8_t *p = malloc(n);
  cr_assert_not_null(p);
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
  return p;
}

#define KEY_A "loom packed weight, test key A\n"
#define KEY_B "loom packed weight, test key B\n"

LOOM_TEST(wcache, hit_miss_and_a_mapped_page_aligned_payload) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_wcache *c = loom_wcache_open(dir, 0);
  cr_assert(loom_wcache_usable(c));
  loom_wcache_blob *b;
  cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), 100000, &b));
  cr_assert_null(b);
  uint8_t *data = pattern(100000, 1);
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, 100000);
  cr_assert(loom_wcache_get(c, KEY_A, strlen(KEY_A), 100000, &b));
  cr_assert_eq(loom_wcache_blob_len(b), 100000);
  cr_assert_eq((uintptr_t)loom_wcache_blob_data(b) % 4096, 0, "the payload is page-aligned");
  cr_assert_eq(memcmp(loom_wcache_blob_data(b), data, 100000), 0);
  loom_wcache_blob_free(b);
  /* another key: a miss, not a wrong payload */
  cr_assert_not(loom_wcache_get(c, KEY_B, strlen(KEY_B), 100000, &b));
  loom_wcache_stats st = loom_wcache_stats_of(c);
  cr_assert(st.hits == 1 && st.misses == 2 && st.rejected == 0 && st.stored == 1 && st.bytes_mapped == 100000,
            "%u %u %u %u", st.hits, st.misses, st.rejected, st.stored);
  loom_wcache_close(c);
  /* a cache without a directory finds and stores nothing */
  c = loom_wcache_open(NULL, 0);
  cr_assert_not(loom_wcache_usable(c));
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, 100000);
  cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), 100000, &b));
  loom_wcache_close(c);
  free(data);
  rm_rf(dir);
}

/* An entry of 16 MiB or more is written with O_DIRECT (wcache.c WC_DIRECT_MIN): its payload,
 * not a multiple of the block, reads back whole and page-aligned. */
LOOM_TEST(wcache, a_large_entry_written_past_the_page_cache_reads_back) {
  char dir[64], path[200];
  tmpdir(dir, sizeof dir);
  loom_wcache *c = loom_wcache_open(dir, 0);
  size_t n = ((size_t)16 << 20) + 4095;
  uint8_t *data = pattern(n, 3);
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, n);
  loom_wcache_blob *b;
  cr_assert(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b));
  cr_assert_eq(loom_wcache_blob_len(b), n);
  cr_assert_eq((uintptr_t)loom_wcache_blob_data(b) % 4096, 0);
  cr_assert_eq(memcmp(loom_wcache_blob_data(b), data, n), 0, "the payload differs");
  loom_wcache_blob_free(b);
  only_entry(dir, path, sizeof path);
  struct stat sb;
  cr_assert(stat(path, &sb) == 0 && (size_t)sb.st_size >= n && (size_t)sb.st_size < n + 2 * 4096, "size %lld",
            (long long)sb.st_size);
  loom_wcache_close(c);
  free(data);
  rm_rf(dir);
}

/* Writes `data` over the entry file at `off` (negative: from the end). */
static void poke(const char *path, long off, const void *data, size_t n) {
  int fd = open(path, O_RDWR);
  cr_assert_geq(fd, 0);
  struct stat sb;
  cr_assert_eq(fstat(fd, &sb), 0);
  off_t at = off >= 0 ? (off_t)off : sb.st_size + off;
  cr_assert_eq(pwrite(fd, data, n, at), (ssize_t)n);
  close(fd);
}

static void copy_file(const char *from, const char *to) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", from, to);
  cr_assert_eq(system(cmd), 0);
}

/* Every way an entry can be unsound is a rejected miss, never a payload; the next put makes it sound again. */
LOOM_TEST(wcache, corrupt_truncated_and_foreign_entries_are_never_used) {
  char dir[64], path[256], saved[300];
  tmpdir(dir, sizeof dir);
  const size_t n = 3 * (1 << 20) + 5; /* several hash chunks */
  uint8_t *data = pattern(n, 2);
  loom_wcache *c = loom_wcache_open(dir, 0);
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, n);
  only_entry(dir, path, sizeof path);
  snprintf(saved, sizeof saved, "%s.saved", path);
  copy_file(path, saved);
  loom_wcache_blob *b;
  struct {
    const char *what;
    long off;   /* where to write (negative: from the end); 0 with truncate */
    int trunc;  /* bytes to cut off the end instead */
  } cases[] = {
      {"one payload byte flipped (the last: a sampled page)", -1, 0},
      {"one payload byte flipped (the first: a sampled page)", 4096, 0},
      {"the payload's hash in the header changed", 40, 0},
      {"bad magic", 0, 0},
      {"the key text changed", 64, 0},
      {"truncated by one byte", 0, 1},
      {"truncated to the header", 0, -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    copy_file(saved, path);
    if (cases[i].trunc > 0) cr_assert_eq(truncate(path, (off_t)(4096 + n - 1)), 0);
    else if (cases[i].trunc < 0) cr_assert_eq(truncate(path, 64), 0);
    else {
      uint8_t x = 0x5a;
      poke(path, cases[i].off, &x, 1);
    }
    uint32_t before = loom_wcache_stats_of(c).rejected;
    cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b), "%s: used", cases[i].what);
    cr_assert_null(b);
    cr_assert_eq(loom_wcache_stats_of(c).rejected, before + 1, "%s: not counted as rejected", cases[i].what);
  }
  /* a sound entry asked for with another length: not used either */
  copy_file(saved, path);
  cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), n - 1, &b));
  /* another key's entry under this key's name */
  loom_wcache_put(c, KEY_B, strlen(KEY_B), data, n);
  char pathb[300], cmd[700];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep '^w-' | grep -v '%s'", dir, strrchr(path, '/') + 1);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  char name[128];
  cr_assert_not_null(fgets(name, sizeof name, f));
  pclose(f);
  name[strcspn(name, "\n")] = '\0';
  snprintf(pathb, sizeof pathb, "%s/%s", dir, name);
  copy_file(pathb, path);
  cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b), "another key's entry used");
  /* stored again: sound */
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, n);
  cr_assert(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b));
  cr_assert_eq(memcmp(loom_wcache_blob_data(b), data, n), 0);
  loom_wcache_blob_free(b);
  loom_wcache_close(c);
  unlink(saved);
  free(data);
  rm_rf(dir);
}

/* Sets path's modification time to `sec` seconds after an old date. */
static void age(const char *path, long sec) {
  struct timespec ts[2] = {{.tv_sec = 1000000000 + sec}, {.tv_sec = 1000000000 + sec}};
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

/* Eviction by its own bound, least recently used first; a hit makes an entry recent; the kernel
 * cache's `k-` files are not counted and not removed. */
LOOM_TEST(wcache, least_recently_used_entries_are_evicted_at_the_bound) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  const size_t n = 70000; /* an entry: 4096 + 70000 bytes */
  loom_wcache *c = loom_wcache_open(dir, 3 * (4096 + n)); /* three fit */
  char keys[4][64];
  uint8_t *data[4];
  char kfile[300];
  snprintf(kfile, sizeof kfile, "%s/k-00000000000000000000000000000000", dir);
  FILE *kf = fopen(kfile, "w");
  cr_assert_not_null(kf);
  for (int i = 0; i < 200000; i++) fputc('k', kf); /* a big kernel entry: not the weights' bound */
  fclose(kf);
  age(kfile, 0);
  for (int i = 0; i < 4; i++) {
    snprintf(keys[i], sizeof keys[i], "key %d\n", i);
    data[i] = pattern(n, (unsigned)i);
  }
  for (int i = 0; i < 3; i++) loom_wcache_put(c, keys[i], strlen(keys[i]), data[i], n);
  loom_wcache_close(c); /* three fit: nothing evicted */
  c = loom_wcache_open(dir, 3 * (4096 + n));
  /* used in the order 1, 2, 0 (a hit sets the entry's time to now): 1 is the least recent */
  loom_wcache_blob *b;
  struct timespec pause = {.tv_nsec = 20 * 1000 * 1000};
  for (int i = 1; i <= 3; i++) {
    int k = i % 3; /* 1, 2, 0 */
    nanosleep(&pause, NULL);
    cr_assert(loom_wcache_get(c, keys[k], strlen(keys[k]), n, &b));
    loom_wcache_blob_free(b);
  }
  nanosleep(&pause, NULL);
  loom_wcache_put(c, keys[3], strlen(keys[3]), data[3], n); /* four: one too many */
  loom_wcache_close(c);                                     /* evicts */
  c = loom_wcache_open(dir, 3 * (4096 + n));
  cr_assert_not(loom_wcache_get(c, keys[1], strlen(keys[1]), n, &b), "the least recently used entry stayed");
  for (int k = 0; k < 4; k++) {
    if (k == 1) continue;
    cr_assert(loom_wcache_get(c, keys[k], strlen(keys[k]), n, &b), "entry %d was evicted", k);
    loom_wcache_blob_free(b);
  }
  struct stat sb;
  cr_assert_eq(stat(kfile, &sb), 0, "the kernel cache's entry was removed");
  loom_wcache_close(c);
  for (int i = 0; i < 4; i++) free(data[i]);
  rm_rf(dir);
}

/* Two processes storing one key at once: both succeed (atomic rename), the entry is sound. */
LOOM_TEST(wcache, concurrent_writers_of_one_key) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  const size_t n = 2 * (1 << 20) + 3;
  uint8_t *data = pattern(n, 3);
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    cr_assert_geq(kids[k], 0);
    if (kids[k] == 0) {
      loom_wcache *c = loom_wcache_open(dir, 0);
      for (int r = 0; r < 20; r++) loom_wcache_put(c, KEY_A, strlen(KEY_A), data, n);
      int ok = loom_wcache_stats_of(c).stored == 20;
      loom_wcache_close(c);
      _exit(ok ? 0 : 1);
    }
  }
  for (int k = 0; k < 2; k++) {
    int status;
    cr_assert_eq(waitpid(kids[k], &status, 0), kids[k]);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", k);
  }
  loom_wcache *c = loom_wcache_open(dir, 0);
  loom_wcache_blob *b;
  cr_assert(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b));
  cr_assert_eq(memcmp(loom_wcache_blob_data(b), data, n), 0);
  loom_wcache_blob_free(b);
  loom_wcache_close(c);
  char path[256];
  only_entry(dir, path, sizeof path); /* no temporary file left */
  free(data);
  rm_rf(dir);
}

/* The content hash: the same at 1, 2 and 5 threads, for sizes around the 1 MiB chunk; one byte
 * changed anywhere changes it. */
LOOM_TEST(wcache, content_hash_does_not_depend_on_the_thread_count) {
  static const size_t sizes[] = {0, 1, 4095, 1 << 20, (1 << 20) + 1, 5 * (1 << 20) + 17};
  const char *saved = getenv("LOOM_COMPILE_THREADS");
  char *keep = saved ? strdup(saved) : NULL;
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    uint8_t *p = pattern(sizes[i] ? sizes[i] : 1, 4);
    char h1[33], h[33];
    setenv("LOOM_COMPILE_THREADS", "1", 1);
    loom_wcache_content_hash(p, sizes[i], h1);
    for (int t = 2; t <= 5; t += 3) {
      char tv[8];
      snprintf(tv, sizeof tv, "%d", t);
      setenv("LOOM_COMPILE_THREADS", tv, 1);
      loom_wcache_content_hash(p, sizes[i], h);
      cr_assert_str_eq(h, h1, "%zu bytes at %d threads", sizes[i], t);
    }
    if (sizes[i]) {
      p[sizes[i] - 1] ^= 1;
      loom_wcache_content_hash(p, sizes[i], h);
      cr_assert_str_neq(h, h1, "%zu bytes: the last byte changed, the hash did not", sizes[i]);
    }
    free(p);
  }
  if (keep) setenv("LOOM_COMPILE_THREADS", keep, 1);
  else unsetenv("LOOM_COMPILE_THREADS");
  free(keep);
}

/* A module with two f32 weights the pack pass lays out, each packed to 77,824 bytes (above the
 * cache's 64 KiB floor): W (64, 300) and, read transposed, V (300, 64); 300 is no multiple of
 * the panel, so the last panel is padded. */
static loom_graph_module *two_weights(void) {
  enum { K = 64, N = 300 };
  loom_strbuf in;
  loom_strbuf_init(&in, NULL);
  loom_strbuf_printf(&in, "const @w: Tensor[(%d, %d), f32] = [", K, N);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.5", i ? ", " : "", (i * 7) % 1000);
  loom_strbuf_printf(&in, "]\nconst @v: Tensor[(%d, %d), f32] = [", N, K);
  for (int i = 0; i < K * N; i++) loom_strbuf_printf(&in, "%s%d.25", i ? ", " : "", (i * 13) % 1000);
  loom_strbuf_printf(&in, "]\nfn @main(x: Tensor[(n, %d), f32]) -> Object {\n"
                          "  dataflow {\n    a = matmul(x, @w)\n    b = matmul(x, @v, transpose_b=true)\n"
                          "    out = (a, b)\n    output out\n  }\n  return out\n}\n", K);
  loom_graph_module *m = pt_parse(loom_strbuf_cstr(&in));
  loom_strbuf_free(&in);
  return m;
}

/* The packed constants' bytes of m, concatenated in module order, into a malloc'd buffer. */
static uint8_t *packed_bytes(loom_graph_module *m, size_t *len) {
  uint8_t *out = NULL;
  *len = 0;
  int seen = 0;
  for (size_t i = 0; i < loom_graph_module_num_consts(m); i++) {
    const loom_graph_const *k = loom_graph_module_const_at(m, i);
    if (!strstr(k->name, "_packed")) continue;
    size_t nb = k->expr->u.cnst.nbytes;
    out = realloc(out, *len + nb);
    memcpy(out + *len, k->expr->u.cnst.data, nb);
    *len += nb;
    seen++;
  }
  cr_assert_eq(seen, 2, "two packed weights");
  return out;
}

LOOM_TEST(wcache, pack_gives_the_same_bytes_cold_warm_and_after_a_corrupt_entry) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_graph_module *m = two_weights();
  size_t n, want_len, len;
  cr_assert_null(loom_graph_pack_weights(m, 16, &n));
  uint8_t *want = packed_bytes(m, &want_len);
  cr_assert_eq(want_len, 2 * 77824);
  loom_graph_module_destroy(m);
  for (int round = 0; round < 4; round++) {
    loom_wcache *c = loom_wcache_open(dir, 0);
    m = two_weights();
    cr_assert_null(loom_graph_pack_weights_cached(m, 16, false, c, &n));
    cr_assert_eq(n, 2);
    uint8_t *got = packed_bytes(m, &len);
    cr_assert(len == want_len && !memcmp(got, want, len), "round %d: other packed bytes", round);
    loom_wcache_stats st = loom_wcache_stats_of(c);
    if (round == 0 || round == 2) /* cold; after the corruption below: one rejected, packed and stored again */
      cr_assert(st.hits == (round ? 1u : 0u) && st.stored == (round ? 1u : 2u) && st.rejected == (round ? 1u : 0u),
                "round %d: hits %u stored %u rejected %u", round, st.hits, st.stored, st.rejected);
    else /* warm: both mapped from the cache */
      cr_assert(st.hits == 2 && st.stored == 0 && st.bytes_mapped == want_len, "round %d: hits %u stored %u", round,
                st.hits, st.stored);
    free(got);
    loom_graph_module_destroy(m); /* unmaps the entries it holds */
    loom_wcache_close(c);
    if (round == 1) { /* flip the last byte of one entry */
      char cmd[300];
      snprintf(cmd, sizeof cmd, "ls '%s' | grep '^w-' | head -1", dir);
      FILE *f = popen(cmd, "r");
      char name[128], path[256];
      cr_assert_not_null(fgets(name, sizeof name, f));
      pclose(f);
      name[strcspn(name, "\n")] = '\0';
      snprintf(path, sizeof path, "%s/%s", dir, name);
      uint8_t x = 0x77;
      poke(path, -1, &x, 1);
    }
  }
  free(want);
  rm_rf(dir);
}

/* Counts the bad files loom_wcache_verify reports. */
static void count_bad(void *ud, const char *name, const char *why, bool removed) {
  (void)name, (void)removed;
  cr_assert(strstr(why, "XXH3-128"), "why: %s", why);
  ++*(int *)ud;
}

/* A lookup checks the sampled pages only: a byte flipped in a page it does not sample is found by
 * the full check (loom_wcache_verify, `loom cache verify`), which names the entry and removes it on
 * request; sound entries pass it. */
LOOM_TEST(wcache, verify_finds_a_flip_outside_the_sampled_pages) {
  char dir[64], path[256];
  tmpdir(dir, sizeof dir);
  const size_t n = 3 * (1 << 20) + 5; /* 769 pages: 64 sampled */
  uint8_t *data = pattern(n, 5);
  loom_wcache *c = loom_wcache_open(dir, 0);
  loom_wcache_put(c, KEY_A, strlen(KEY_A), data, n);
  loom_wcache_put(c, KEY_B, strlen(KEY_B), data, 100000);
  loom_wcache_memo_put(c, "source key\n", 11, "0123456789abcdef0123456789abcdef");
  loom_wcache_verify_report r = loom_wcache_verify(dir, false, NULL, NULL);
  cr_assert(r.checked == 3 && r.bad == 0 && !r.unreadable, "checked %u bad %u", r.checked, r.bad);
  /* page 384 of the payload is not one of the 64 sampled (k * 768 / 63) */
  snprintf(path, sizeof path, "%s", dir);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep '^w-'", dir);
  FILE *f = popen(cmd, "r");
  char name[128], victim[300] = "";
  while (fgets(name, sizeof name, f)) {
    name[strcspn(name, "\n")] = '\0';
    char pth[300];
    snprintf(pth, sizeof pth, "%s/%s", dir, name);
    struct stat sb;
    cr_assert_eq(stat(pth, &sb), 0);
    if ((size_t)sb.st_size == 4096 + n) snprintf(victim, sizeof victim, "%s", pth);
  }
  pclose(f);
  cr_assert(victim[0], "the large entry");
  uint8_t x = (uint8_t)(data[384 * 4096 + 7] ^ 0x40);
  poke(victim, 4096 + 384 * 4096 + 7, &x, 1);
  int bad_seen = 0;
  r = loom_wcache_verify(dir, false, count_bad, &bad_seen);
  cr_assert(r.checked == 3 && r.bad == 1 && r.removed == 0 && bad_seen == 1, "checked %u bad %u", r.checked, r.bad);
  cr_assert(access(victim, F_OK) == 0, "not removed without the flag");
  r = loom_wcache_verify(dir, true, NULL, NULL);
  cr_assert(r.bad == 1 && r.removed == 1);
  cr_assert(access(victim, F_OK) != 0, "removed with the flag");
  loom_wcache_blob *b;
  cr_assert_not(loom_wcache_get(c, KEY_A, strlen(KEY_A), n, &b), "a removed entry is a miss");
  r = loom_wcache_verify(dir, false, NULL, NULL);
  cr_assert(r.checked == 2 && r.bad == 0);
  char missing[300];
  snprintf(missing, sizeof missing, "%s/none", dir);
  cr_assert(loom_wcache_verify(missing, false, NULL, NULL).unreadable);
  loom_wcache_close(c);
  free(data);
  rm_rf(dir);
}

/* Source hashes by key: found after a put, a miss for another key, a damaged file ignored
 * (counted as rejected) and found by verify. */
LOOM_TEST(wcache, source_hashes_are_remembered_by_key_and_a_damaged_one_is_ignored) {
  char dir[64];
  tmpdir(dir, sizeof dir);
  loom_wcache *c = loom_wcache_open(dir, 0);
  const char *k1 = "loom source bytes, version 1\nfile dev 1 ino 2\noffset 0 bytes 8\n";
  const char *k2 = "loom source bytes, version 1\nfile dev 1 ino 3\noffset 0 bytes 8\n";
  char hex[33];
  cr_assert_not(loom_wcache_memo_get(c, k1, strlen(k1), hex));
  loom_wcache_memo_put(c, k1, strlen(k1), "00112233445566778899aabbccddeeff");
  cr_assert(loom_wcache_memo_get(c, k1, strlen(k1), hex));
  cr_assert_str_eq(hex, "00112233445566778899aabbccddeeff");
  cr_assert_not(loom_wcache_memo_get(c, k2, strlen(k2), hex), "another key");
  char cmd[300], name[128], path[300];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep '^h-'", dir);
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(fgets(name, sizeof name, f));
  pclose(f);
  name[strcspn(name, "\n")] = '\0';
  snprintf(path, sizeof path, "%s/%s", dir, name);
  /* one hex digit of the hash changed: the check line no longer matches */
  uint8_t x = '9';
  poke(path, (long)(9 + strlen(k1) + 9), &x, 1);
  uint32_t before = loom_wcache_stats_of(c).rejected;
  cr_assert_not(loom_wcache_memo_get(c, k1, strlen(k1), hex), "a damaged source hash used");
  cr_assert_eq(loom_wcache_stats_of(c).rejected, before + 1);
  cr_assert_eq(loom_wcache_verify(dir, false, NULL, NULL).bad, 1);
  loom_wcache_stats st = loom_wcache_stats_of(c);
  cr_assert(st.memo_hits == 1 && st.memo_misses == 3 && st.memo_stored == 1, "hits %u misses %u stored %u", st.memo_hits,
            st.memo_misses, st.memo_stored);
  loom_wcache_close(c);
  rm_rf(dir);
}

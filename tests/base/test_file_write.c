/* test_file_write.c — writing a large file front to back (base/file_write.h): every size around
 * the O_DIRECT block and the staging buffer, from memory and from a mapped file at an unaligned
 * offset, with O_DIRECT (direct_min 0) and through the page cache (direct_min UINT64_MAX), reads
 * back byte for byte; direct writes leave the page cache empty; a descriptor that cannot be
 * written gives its errno, not a crash. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/file_write.h"
#include "support/loom_test.h"

#define MIB ((size_t)1 << 20)
#define STAGE (8 * MIB) /* file_write.c's staging buffer */

static unsigned char *pattern(size_t n, unsigned seed) {
  unsigned char *p = malloc(n ? n : 1);
  cr_assert_not_null(p);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) x = x * 1664525u + 1013904223u, p[i] = (unsigned char)(x >> 24);
  return p;
}

static void make_dir(char *dir) { cr_assert_not_null(mkdtemp(dir)); }

/* Writes p[0, n) through a writer in pieces of the given sizes (cycled), then checks the file. */
static void write_and_check(const char *path, const unsigned char *p, size_t n, uint64_t direct_min,
                            const size_t *pieces, size_t npieces) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  cr_assert(fd >= 0);
  loom_file_writer *w;
  cr_assert_eq(loom_file_writer_open(fd, 0, n, direct_min, &w), 0);
  for (size_t done = 0, k = 0; done < n; k++) {
    size_t m = pieces[k % npieces] < n - done ? pieces[k % npieces] : n - done;
    cr_assert_eq(loom_file_writer_put(w, p + done, m), 0, "put of %zu at %zu", m, done);
    done += m;
  }
  cr_assert_eq(loom_file_writer_close(w), 0);
  cr_assert_eq(close(fd), 0);
  const void *back;
  size_t len;
  cr_assert_null(loom_file_map_limited(path, "test file", UINT64_MAX, &back, &len));
  cr_assert_eq(len, n, "size %zu, want %zu (direct_min %llu)", len, n, (unsigned long long)direct_min);
  cr_assert(n == 0 || !memcmp(back, p, n), "%zu bytes differ (direct_min %llu)", n, (unsigned long long)direct_min);
  loom_file_unmap(back, len);
}

LOOM_TEST(file_write, every_size_reads_back_direct_and_cached) {
  char dir[] = "/tmp/loom-fw-XXXXXX", path[64];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  const size_t sizes[] = {0, 1, 4095, 4096, 4097, STAGE - 1, STAGE, STAGE + 1, 2 * STAGE + 4096 + 17, 3 * STAGE};
  const size_t pieces[] = {1, 4093, MIB + 3, 3 * MIB, 7};
  const uint64_t mins[] = {0, UINT64_MAX};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    unsigned char *p = pattern(sizes[s], (unsigned)s);
    for (int m = 0; m < 2; m++) {
      write_and_check(path, p, sizes[s], mins[m], pieces, 5);
      write_and_check(path, p, sizes[s], mins[m], (size_t[]){sizes[s] ? sizes[s] : 1}, 1); /* one put */
    }
    free(p);
  }
  unlink(path);
  rmdir(dir);
}

LOOM_TEST(file_write, a_mapped_source_at_an_unaligned_offset_reads_back) {
  char dir[] = "/tmp/loom-fw-XXXXXX", src[64], path[64];
  make_dir(dir);
  snprintf(src, sizeof src, "%s/src.bin", dir);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  size_t n = 2 * STAGE + 12345;
  unsigned char *p = pattern(n + 13, 7);
  FILE *f = fopen(src, "wb");
  cr_assert(f && fwrite(p, 1, n + 13, f) == n + 13 && fclose(f) == 0);
  const void *m;
  size_t len;
  cr_assert_null(loom_file_map_limited(src, "test file", UINT64_MAX, &m, &len));
  const size_t pieces[] = {2 * MIB + 5, 5 * MIB, 11};
  for (uint64_t min = 0; min <= 1; min++) /* direct (pread from the file), then cached (copy_file_range) */
    write_and_check(path, (const unsigned char *)m + 13, n, min ? UINT64_MAX : 0, pieces, 3);
  loom_file_unmap(m, len);
  free(p);
  unlink(src), unlink(path);
  rmdir(dir);
}

LOOM_TEST(file_write, direct_writes_leave_the_page_cache_empty) {
  char dir[] = "/tmp/loom-fw-XXXXXX", path[64];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  int probe = open(path, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0644);
  if (probe < 0) { /* a file system without O_DIRECT: the writer goes through the page cache */
    rmdir(dir);
    cr_skip("no O_DIRECT on %s: %s", dir, strerror(errno));
  }
  close(probe);
  size_t n = 3 * STAGE;
  unsigned char *p = pattern(n, 3);
  const size_t pieces[] = {MIB};
  write_and_check(path, p, n, 0, pieces, 1); /* maps the file: that faults pages in; check anew */
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  cr_assert(fd >= 0);
  cr_assert_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
  close(fd);
  write_and_check(path, p, n, UINT64_MAX, pieces, 1);
  fd = open(path, O_RDWR | O_CLOEXEC);
  loom_file_writer *w;
  cr_assert_eq(loom_file_writer_open(fd, 0, n, 0, &w), 0);
  cr_assert_eq(loom_file_writer_put(w, p, n), 0);
  cr_assert_eq(loom_file_writer_close(w), 0);
  void *map = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
  cr_assert(map != MAP_FAILED);
  unsigned char *vec = malloc(n / 4096);
  cr_assert_eq(mincore(map, n, vec), 0);
  size_t resident = 0;
  for (size_t i = 0; i < n / 4096; i++) resident += vec[i] & 1;
  cr_assert_eq(resident, 0, "%zu of %zu pages written directly are in the page cache", resident, n / 4096);
  munmap(map, n);
  close(fd);
  free(vec), free(p);
  unlink(path);
  rmdir(dir);
}

LOOM_TEST(file_write, a_descriptor_that_cannot_be_written_gives_its_errno) {
  char dir[] = "/tmp/loom-fw-XXXXXX", path[64];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  close(open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  size_t n = 2 * STAGE + 1;
  unsigned char *p = pattern(n, 5);
  for (uint64_t min = 0; min <= 1; min++) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    loom_file_writer *w;
    cr_assert_eq(loom_file_writer_open(fd, 0, n, min ? UINT64_MAX : 0, &w), 0);
    int e = loom_file_writer_put(w, p, n);
    int c = loom_file_writer_close(w);
    cr_assert(c == EBADF && (e == 0 || e == EBADF), "put %d close %d (direct_min %llu)", e, c, (unsigned long long)min);
    close(fd);
  }
  free(p);
  unlink(path);
  rmdir(dir);
}

LOOM_TEST(file_write, starts_at_the_offset_given) {
  char dir[] = "/tmp/loom-fw-XXXXXX", path[64];
  make_dir(dir);
  snprintf(path, sizeof path, "%s/w.bin", dir);
  size_t n = 2 * STAGE + 999;
  unsigned char *p = pattern(n, 9);
  const uint64_t ats[] = {65536, 100}; /* a block boundary (direct), and not one (through the cache) */
  for (int i = 0; i < 2; i++) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert(fd >= 0 && pwrite(fd, "head", 4, 0) == 4);
    loom_file_writer *w;
    cr_assert_eq(loom_file_writer_open(fd, ats[i], n, 0, &w), 0);
    cr_assert_eq(loom_file_writer_put(w, p, n / 2), 0);
    cr_assert_eq(loom_file_writer_put(w, p + n / 2, n - n / 2), 0);
    cr_assert_eq(loom_file_writer_close(w), 0);
    struct stat sb;
    cr_assert(fstat(fd, &sb) == 0 && (uint64_t)sb.st_size == ats[i] + n, "size %lld at %llu", (long long)sb.st_size,
              (unsigned long long)ats[i]);
    unsigned char *back = malloc(n), head[4];
    cr_assert(pread(fd, head, 4, 0) == 4 && !memcmp(head, "head", 4), "the bytes before `at` are kept");
    cr_assert(pread(fd, back, n, (off_t)ats[i]) == (ssize_t)n && !memcmp(back, p, n), "at %llu", (unsigned long long)ats[i]);
    free(back);
    close(fd);
  }
  free(p);
  unlink(path);
  rmdir(dir);
}

/* file.c — opening and reading whole files (file.h): regular files within a size limit. */
#include "base/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

/* What a non-regular file is, for the error. */
static const char *file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a pipe";
  if (S_ISSOCK(m)) return "a socket";
  return "not a plain file";
}

loom_status loom_file_open_regular(const char *path, const char *what, uint64_t limit, int *out_fd, uint64_t *out_size) {
  *out_fd = -1;
  *out_size = 0;
  /* O_NONBLOCK: opening a FIFO without a writer must not wait; regular files ignore it */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    return e == ENOENT ? LOOM_ERROR(NOT_FOUND, "cannot open '%s': %s", path, strerror(e))
                       : LOOM_ERROR(IO_ERROR, "cannot open '%s': %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return LOOM_ERROR(IO_ERROR, "cannot stat '%s': %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return LOOM_ERROR(INVALID_ARGUMENT, "'%s' is not a regular file (%s): refusing to read it as a %s", path,
                      file_kind(st.st_mode), what);
  }
  if (st.st_size < 0 || (uint64_t)st.st_size > limit) {
    close(fd);
    return LOOM_ERROR(OUT_OF_RANGE, "'%s' is %lld bytes, over the limit of %llu bytes for a %s", path,
                      (long long)st.st_size, (unsigned long long)limit, what);
  }
  /* back to blocking reads */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *out_fd = fd;
  *out_size = (uint64_t)st.st_size;
  return LOOM_OK;
}

loom_status loom_file_read_limited(const char *path, const char *what, uint64_t limit, char **out_data,
                                   size_t *out_len) {
  int fd;
  uint64_t size;
  LOOM_PROPAGATE(loom_file_open_regular(path, what, limit, &fd, &size));
  if (size > SIZE_MAX - 1) {
    close(fd);
    return LOOM_ERROR(RESOURCE_EXHAUSTED, "'%s' (%llu bytes) does not fit in memory", path, (unsigned long long)size);
  }
  char *data = malloc((size_t)size + 1);
  if (!data) {
    close(fd);
    return LOOM_ERROR(RESOURCE_EXHAUSTED, "out of memory reading '%s' (%llu bytes)", path, (unsigned long long)size);
  }
  /* read exactly the size fstat gave: a file that grows meanwhile is read up to it */
  size_t len = 0;
  while (len < (size_t)size) {
    ssize_t got = read(fd, data + len, (size_t)size - len);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      int e = errno;
      free(data);
      close(fd);
      return LOOM_ERROR(IO_ERROR, "cannot read '%s': %s", path, strerror(e));
    }
    if (got == 0) break; /* shrank meanwhile: what is there */
    len += (size_t)got;
  }
  close(fd);
  data[len] = '\0';
  *out_data = data;
  *out_len = len;
  return LOOM_OK;
}

static void id_of_stat(const struct stat *st, loom_file_id *id) {
  *id = (loom_file_id){.dev = (uint64_t)st->st_dev, .ino = (uint64_t)st->st_ino, .size = (uint64_t)st->st_size,
                       .mtime_s = (int64_t)st->st_mtim.tv_sec, .mtime_ns = (int64_t)st->st_mtim.tv_nsec,
                       .ctime_s = (int64_t)st->st_ctim.tv_sec, .ctime_ns = (int64_t)st->st_ctim.tv_nsec};
}

bool loom_file_id_of(const char *path, loom_file_id *out) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  id_of_stat(&st, out);
  return true;
}

bool loom_file_id_of_fd(int fd, loom_file_id *out) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return false;
  id_of_stat(&st, out);
  return true;
}

bool loom_file_id_equal(const loom_file_id *a, const loom_file_id *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_s == b->mtime_s &&
         a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s && a->ctime_ns == b->ctime_ns;
}

bool loom_file_id_settled(const loom_file_id *id) {
  struct timespec now;
  if (clock_gettime(CLOCK_REALTIME, &now) != 0) return false;
  int64_t before = (int64_t)now.tv_sec - LOOM_FILE_ID_SETTLED_S;
  return id->mtime_s < before || id->ctime_s < before;
}

void loom_file_id_text(const loom_file_id *id, char *buf, size_t cap) {
  snprintf(buf, cap, "dev %llu ino %llu size %llu mtime %lld.%09lld ctime %lld.%09lld", (unsigned long long)id->dev,
           (unsigned long long)id->ino, (unsigned long long)id->size, (long long)id->mtime_s, (long long)id->mtime_ns,
           (long long)id->ctime_s, (long long)id->ctime_ns);
}

loom_status loom_file_map_limited(const char *path, const char *what, uint64_t limit, const void **out_data,
                                  size_t *out_len) {
  return loom_file_map_limited_id(path, what, limit, out_data, out_len, NULL);
}

loom_status loom_file_map_limited_id(const char *path, const char *what, uint64_t limit, const void **out_data,
                                     size_t *out_len, loom_file_id *out_id) {
  *out_data = NULL;
  *out_len = 0;
  int fd;
  uint64_t size;
  LOOM_PROPAGATE(loom_file_open_regular(path, what, limit, &fd, &size));
  if (out_id) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int e = errno;
      close(fd);
      return LOOM_ERROR(IO_ERROR, "cannot stat '%s': %s", path, strerror(e));
    }
    id_of_stat(&st, out_id);
  }
  if (size > SIZE_MAX - 1) {
    close(fd);
    return LOOM_ERROR(RESOURCE_EXHAUSTED, "'%s' (%llu bytes) does not fit in memory", path, (unsigned long long)size);
  }
  if (size == 0) { /* mmap refuses a length of 0 */
    close(fd);
    *out_data = "";
    return LOOM_OK;
  }
  void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd); /* the mapping keeps the file */
  if (p == MAP_FAILED) return LOOM_ERROR(IO_ERROR, "cannot map '%s' (%llu bytes): %s", path, (unsigned long long)size, strerror(e));
  *out_data = p;
  *out_len = (size_t)size;
  return LOOM_OK;
}

void loom_file_unmap(const void *data, size_t len) {
  if (data && len) munmap((void *)data, len);
}

loom_status loom_file_read(const char *path, char **out_data, size_t *out_len) {
  return loom_file_read_limited(path, "file", LOOM_FILE_LIMIT_TEXT, out_data, out_len);
}

typedef struct lru_file {
  char name[256];        /* the entry's file name */
  uint64_t size;         /* its size */
  struct timespec mtime; /* its last use */
} lru_file;

static int older_first(const void *a, const void *b) {
  const lru_file *x = a, *y = b;
  if (x->mtime.tv_sec != y->mtime.tv_sec) return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if (x->mtime.tv_nsec != y->mtime.tv_nsec) return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

uint64_t loom_file_evict_lru(const char *dir, const char *prefix, uint64_t max_bytes, const char *stale_prefix,
                             int64_t stale_s) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  lru_file *fs = NULL;
  size_t n = 0, cap = 0, plen = strlen(prefix), slen = stale_prefix ? strlen(stale_prefix) : 0;
  uint64_t total = 0, evicted = 0;
  time_t now = time(NULL);
  struct dirent *e;
  char path[4400];
  while ((e = readdir(d))) {
    bool entry = !strncmp(e->d_name, prefix, plen), stale = stale_prefix && !strncmp(e->d_name, stale_prefix, slen);
    if ((!entry && !stale) || strlen(e->d_name) >= sizeof fs->name) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    if (!entry) {
      if (now - sb.st_mtim.tv_sec > stale_s) unlink(path);
      continue;
    }
    if (n == cap) {
      size_t nc = cap ? 2 * cap : 256;
      lru_file *g = realloc(fs, nc * sizeof *fs);
      if (!g) break;
      fs = g, cap = nc;
    }
    snprintf(fs[n].name, sizeof fs[n].name, "%s", e->d_name);
    fs[n].size = (uint64_t)sb.st_size;
    fs[n].mtime = sb.st_mtim;
    total += fs[n].size;
    n++;
  }
  closedir(d);
  if (total > max_bytes) {
    qsort(fs, n, sizeof *fs, older_first);
    for (size_t i = 0; i < n && total > max_bytes; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, fs[i].name);
      if (unlink(path) == 0) evicted++;
      total -= fs[i].size; /* gone either way (another process may have removed it) */
    }
  }
  free(fs);
  return evicted;
}

bool loom_file_mapping_of(const void *p, size_t n, int *out_fd, uint64_t *out_offset) {
  *out_fd = -1;
  *out_offset = 0;
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return false;
  uintptr_t at = (uintptr_t)p;
  char line[4352];
  bool found = false;
  /* "start-end perms offset major:minor inode   path" */
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long long lo, hi, off, ino;
    unsigned maj, mn;
    char perms[8];
    int path_at = 0;
    if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj, &mn, &ino, &path_at) < 7) continue;
    if (at < lo || at >= hi) continue;
    found = true; /* the one mapping holding p: it decides */
    if (n > hi - at || perms[0] != 'r' || perms[1] != '-' || !ino || !path_at || line[path_at] != '/') break;
    char *path = line + path_at;
    path[strcspn(path, "\n")] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_ino == (ino_t)ino && major(sb.st_dev) == maj &&
        minor(sb.st_dev) == mn) {
      *out_fd = fd;
      *out_offset = off + (at - lo);
    } else if (fd >= 0) {
      close(fd);
    }
  }
  fclose(f);
  return *out_fd >= 0;
}

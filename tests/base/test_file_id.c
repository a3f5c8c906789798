/* test_file_id.c — a file's identity (base/file.h, loom_file_id): what the packed-weight cache
 * keys a model's weights by before reading them. The identity fstat'ed at mapping equals stat's;
 * a rewrite in place changes it (status-change time) even with the modification time set back,
 * a replacement by rename changes the inode; "settled" only when a time is 2 s old; the text
 * names every field. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/file.h"
#include "support/loom_test.h"

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
}

static void set_mtime(const char *path, time_t sec) {
  struct timespec ts[2] = {{.tv_sec = sec}, {.tv_sec = sec}};
  cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
}

LOOM_TEST(file_id, changes_with_a_rewrite_or_a_rename_and_settles_after_two_seconds) {
  char dir[] = "/tmp/loom-fid-XXXXXX", path[64], other[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/m.onnx", dir);
  snprintf(other, sizeof other, "%s/n.onnx", dir);
  write_text(path, "weights A");
  const void *data;
  size_t len;
  loom_file_id mapped, now, again;
  cr_assert_null(loom_file_map_limited_id(path, "model", 1 << 20, &data, &len, &mapped));
  cr_assert(len == 9 && !memcmp(data, "weights A", 9));
  loom_file_unmap(data, len);
  cr_assert(loom_file_id_of(path, &now));
  cr_assert(loom_file_id_equal(&mapped, &now), "fstat at mapping and stat agree");
  cr_assert_eq(now.size, 9u);
  cr_assert_not(loom_file_id_settled(&now), "written just now: not settled");
  set_mtime(path, 1000000000);
  cr_assert(loom_file_id_of(path, &now));
  cr_assert(loom_file_id_settled(&now), "modification time in 2001: settled");
  char text[200];
  loom_file_id_text(&now, text, sizeof text);
  cr_assert(strstr(text, "size 9 mtime 1000000000.000000000 ctime ") && strstr(text, "ino "), "%s", text);
  /* rewritten in place, same size, the modification time set back: the status-change time differs */
  usleep(20000);
  write_text(path, "weights B");
  set_mtime(path, 1000000000);
  cr_assert(loom_file_id_of(path, &again));
  cr_assert(again.ino == now.ino && again.size == now.size && again.mtime_s == now.mtime_s);
  cr_assert_not(loom_file_id_equal(&now, &again), "a rewrite in place keeps the identity");
  /* replaced by rename */
  write_text(other, "weights C");
  set_mtime(other, 1000000000);
  cr_assert_eq(rename(other, path), 0);
  cr_assert(loom_file_id_of(path, &now));
  cr_assert_neq(now.ino, again.ino);
  cr_assert_not(loom_file_id_equal(&now, &again));
  /* not a regular file, or none */
  cr_assert_not(loom_file_id_of(dir, &now));
  cr_assert_not(loom_file_id_of(other, &now));
  loom_status s = loom_file_map_limited_id(other, "model", 1 << 20, &data, &len, &now);
  cr_assert_not_null(s);
  cr_assert(strstr(loom_status_message(s), "cannot open"), "%s", loom_status_message(s));
  loom_status_free(s);
  unlink(path);
  rmdir(dir);
}

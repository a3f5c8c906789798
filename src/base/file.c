/* file.c — reading whole files. */
#include "base/file.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_status loom_file_read(const char *path, char **out_data, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return LOOM_ERROR(NOT_FOUND, "cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 16, len = 0;
  char *data = malloc(cap + 1);
  for (;;) {
    if (!data) {
      fclose(f);
      return LOOM_ERROR(RESOURCE_EXHAUSTED, "out of memory reading '%s'", path);
    }
    len += fread(data + len, 1, cap - len, f);
    if (len < cap) break;
    char *grown = cap <= ((size_t)-1) / 4 ? realloc(data, cap * 2 + 1) : NULL;
    if (!grown) free(data);
    data = grown;
    cap *= 2;
  }
  bool failed = ferror(f) != 0;
  fclose(f);
  if (failed) {
    free(data);
    return LOOM_ERROR(IO_ERROR, "cannot read '%s' (is it a directory?)", path);
  }
  data[len] = '\0';
  *out_data = data;
  *out_len = len;
  return LOOM_OK;
}

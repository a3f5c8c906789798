/* file.h — reading whole files, with errors that name the path. */
#ifndef LOOM_BASE_FILE_H
#define LOOM_BASE_FILE_H

#include <stddef.h>
#include "base/status.h"

/* Reads all of `path` into a malloc'd, NUL-terminated buffer (free with free()). */
loom_status loom_file_read(const char *path, char **out_data, size_t *out_len);

#endif

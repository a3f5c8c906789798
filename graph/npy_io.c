/* npy_io.c — NumPy .npy read/write for the reference interpreter and `loom eval`.
 * (A stand-in until src/base/npy.{h,c} lands from the vm branch; only the two functions
 * below are used elsewhere, so switching is one edit.) Little-endian C-order arrays of
 * bool, i8/i16/i32/i64, u8, f16, f32, f64 (and bf16 stored as '<V2' is not supported). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph_internal.h"
#include "graph/npy_io.h"

static const struct {
  const char *descr;
  loom_dtype dt;
} descrs[] = {
    {"|b1", LOOM_DTYPE_BOOL}, {"|i1", LOOM_DTYPE_I8},  {"<i2", LOOM_DTYPE_I16}, {"<i4", LOOM_DTYPE_I32},
    {"<i8", LOOM_DTYPE_I64},  {"|u1", LOOM_DTYPE_U8},  {"<f2", LOOM_DTYPE_F16}, {"<f4", LOOM_DTYPE_F32},
    {"<f8", LOOM_DTYPE_F64},
};

loom_status loom_graph_npy_read(const char *path, loom_graph_tensor *out) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return LOOM_ERROR(NOT_FOUND, "cannot open '%s'", path);
  unsigned char pre[12];
  loom_status st = LOOM_OK;
  char *hdr = NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
    st = LOOM_ERROR(DATA_LOSS, "'%s' is not a .npy file", path);
    goto done;
  }
  size_t hlen = pre[8] | (size_t)pre[9] << 8;
  if (pre[6] >= 2) {
    if (fread(pre + 10, 1, 2, f) != 2) {
      st = LOOM_ERROR(DATA_LOSS, "'%s': truncated header", path);
      goto done;
    }
    hlen |= (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
  }
  if (hlen > 65536) {
    st = LOOM_ERROR(DATA_LOSS, "'%s': header too long", path);
    goto done;
  }
  hdr = calloc(hlen + 1, 1);
  if (!hdr) {
    st = LOOM_OOM();
    goto done;
  }
  if (fread(hdr, 1, hlen, f) != hlen) {
    st = LOOM_ERROR(DATA_LOSS, "'%s': truncated header", path);
    goto done;
  }
  const char *d = strstr(hdr, "'descr'"), *fo = strstr(hdr, "'fortran_order'"), *sh = strstr(hdr, "'shape'");
  if (!d || !fo || !sh) {
    st = LOOM_ERROR(DATA_LOSS, "'%s': malformed header", path);
    goto done;
  }
  if (strstr(fo, "True") && strstr(fo, "True") < strchr(fo, ',')) {
    st = LOOM_ERROR(UNIMPLEMENTED, "'%s': Fortran-order arrays are not supported", path);
    goto done;
  }
  const char *q = strchr(d + 7, '\'');
  loom_dtype dt = LOOM_DTYPE_COUNT;
  for (size_t i = 0; q && i < LOOM_ARRAY_LEN(descrs); i++)
    if (!strncmp(q + 1, descrs[i].descr, 3) && q[4] == '\'') dt = descrs[i].dt;
  if (dt == LOOM_DTYPE_COUNT) {
    st = LOOM_ERROR(UNIMPLEMENTED, "'%s': unsupported dtype in header %s", path, hdr);
    goto done;
  }
  const char *p = strchr(sh, '(');
  int64_t shape[8];
  int nd = 0;
  if (!p) {
    st = LOOM_ERROR(DATA_LOSS, "'%s': malformed shape", path);
    goto done;
  }
  p++;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',') p++;
    if (*p == ')') break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 0 || nd >= 8) {
      st = LOOM_ERROR(DATA_LOSS, "'%s': malformed shape (at most 8 dims)", path);
      goto done;
    }
    shape[nd++] = v;
    p = end;
  }
  st = loom_graph_tensor_alloc(dt, nd, shape, out);
  if (st) goto done;
  size_t bytes = out->numel * loom_dtype_size(dt);
  if (fread(out->data, 1, bytes, f) != bytes) {
    loom_graph_tensor_free(out);
    st = LOOM_ERROR(DATA_LOSS, "'%s': the data is shorter than the shape says", path);
  }
done:
  free(hdr);
  fclose(f);
  return st;
}

loom_status loom_graph_npy_write(const char *path, const loom_graph_tensor *t) {
  const char *descr = NULL;
  for (size_t i = 0; i < LOOM_ARRAY_LEN(descrs); i++)
    if (descrs[i].dt == t->dtype) descr = descrs[i].descr;
  if (!descr) return LOOM_ERROR(UNIMPLEMENTED, "cannot write dtype %s to .npy", loom_dtype_name(t->dtype));
  char hdr[256];
  int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->ndim; i++) n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)t->shape[i], i + 1 < t->ndim ? " " : "");
  n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
  while ((10 + n + 1) % 64) hdr[n++] = ' ';
  hdr[n++] = '\n';
  FILE *f = fopen(path, "wb");
  if (!f) return LOOM_ERROR(IO_ERROR, "cannot write '%s'", path);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 0xff), (unsigned char)(n >> 8)};
  size_t bytes = t->numel * loom_dtype_size(t->dtype);
  bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n && fwrite(t->data, 1, bytes, f) == bytes;
  ok = fclose(f) == 0 && ok;
  return ok ? LOOM_OK : LOOM_ERROR(IO_ERROR, "writing '%s' failed", path);
}

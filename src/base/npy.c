/* npy.c — NumPy .npy reader and writer (npy.h). */
#include "base/npy.h"

#include "base/alloc.h"
#include "base/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

static const struct {
  const char *descr;
  loom_dtype dt;
} descrs[] = {
    {"|b1", LOOM_DTYPE_BOOL}, {"|i1", LOOM_DTYPE_I8},  {"<i2", LOOM_DTYPE_I16}, {"<i4", LOOM_DTYPE_I32},
    {"<i8", LOOM_DTYPE_I64},  {"|u1", LOOM_DTYPE_U8},  {"<u2", LOOM_DTYPE_U16}, {"<u4", LOOM_DTYPE_U32},
    {"<u8", LOOM_DTYPE_U64},  {"<f2", LOOM_DTYPE_F16}, {"<f4", LOOM_DTYPE_F32}, {"<f8", LOOM_DTYPE_F64},
    {"<i1", LOOM_DTYPE_I8},   {"<u1", LOOM_DTYPE_U8},  {"<b1", LOOM_DTYPE_BOOL},
};

void loom_npy_free(loom_npy *n) {
  free(n->data);
  n->data = NULL;
}

/* Finds 'key': in the header dict and returns a pointer after the colon and spaces. */
static const char *find_key(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p != ':') return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

loom_status loom_npy_parse(const uint8_t *b, size_t len, loom_npy *out) {
  memset(out, 0, sizeof *out);
  if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0) return LOOM_ERROR(PARSE_ERROR, "not a .npy file (bad magic)");
  unsigned major = b[6];
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12) return LOOM_ERROR(PARSE_ERROR, ".npy header is truncated");
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    hstart = 12;
  } else {
    return LOOM_ERROR(PARSE_ERROR, ".npy format version %u.%u is not supported", major, b[7]);
  }
  if (hlen > len - hstart) return LOOM_ERROR(PARSE_ERROR, ".npy header says %zu bytes, file has %zu after it", hlen, len - hstart);
  char h[4096];
  if (hlen >= sizeof h) return LOOM_ERROR(PARSE_ERROR, ".npy header of %zu bytes is too long", hlen);
  memcpy(h, b + hstart, hlen);
  h[hlen] = 0;
  const char *d = find_key(h, "descr");
  if (!d || (*d != '\'' && *d != '"')) return LOOM_ERROR(PARSE_ERROR, ".npy header has no 'descr': %s", h);
  char descr[16] = {0};
  size_t i = 0;
  for (d++; *d && *d != '\'' && *d != '"' && i < sizeof descr - 1; d++) descr[i++] = *d;
  if (descr[0] == '=') descr[0] = '<'; /* native order on little-endian hosts */
  bool found = false;
  for (size_t k = 0; k < sizeof descrs / sizeof descrs[0]; k++)
    if (!strcmp(descrs[k].descr, descr)) out->dtype = descrs[k].dt, found = true;
  if (!found) return LOOM_ERROR(UNIMPLEMENTED, ".npy dtype '%s' is not supported (little-endian bool, ints, f16/f32/f64 are)", descr);
  const char *fo = find_key(h, "fortran_order");
  if (!fo) return LOOM_ERROR(PARSE_ERROR, ".npy header has no 'fortran_order'");
  if (!strncmp(fo, "True", 4)) return LOOM_ERROR(UNIMPLEMENTED, ".npy array is in Fortran order; save it C-contiguous");
  const char *s = find_key(h, "shape");
  if (!s || *s != '(') return LOOM_ERROR(PARSE_ERROR, ".npy header has no 'shape' tuple");
  s++;
  for (;;) {
    while (*s == ' ' || *s == ',') s++;
    if (*s == ')') break;
    if (*s < '0' || *s > '9') return LOOM_ERROR(PARSE_ERROR, ".npy shape is malformed near '%.10s'", s);
    if (out->rank >= LOOM_NPY_MAX_RANK) return LOOM_ERROR(OUT_OF_RANGE, ".npy rank exceeds %d", LOOM_NPY_MAX_RANK);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno) return LOOM_ERROR(OUT_OF_RANGE, ".npy dim out of range");
    out->shape[out->rank++] = v;
    s = end;
    while (*s == ' ' || *s == 'L') s++;
  }
  size_t n = loom_dtype_size(out->dtype);
  for (int32_t k = 0; k < out->rank; k++)
    if (!loom_size_mul(n, (size_t)out->shape[k], &n)) return LOOM_ERROR(OUT_OF_RANGE, ".npy array size overflows");
  size_t avail = len - hstart - hlen;
  if (avail != n) return LOOM_ERROR(PARSE_ERROR, ".npy data is %zu bytes, shape and dtype need %zu", avail, n);
  out->data = malloc(n ? n : 1);
  if (!out->data) return LOOM_OOM();
  if (n) memcpy(out->data, b + hstart + hlen, n);
  out->nbytes = n;
  return LOOM_OK;
}

loom_status loom_npy_read(const char *path, loom_npy *out) {
  memset(out, 0, sizeof *out);
  char *buf = NULL;
  size_t len = 0;
  LOOM_PROPAGATE(loom_file_read_limited(path, "tensor (.npy)", LOOM_FILE_LIMIT_NPY, &buf, &len));
  loom_status st = loom_npy_parse((const uint8_t *)buf, len, out);
  free(buf);
  return loom_status_annotate(st, __FILE__, __LINE__, "while reading '%s'", path);
}

loom_status loom_npy_write(const char *path, loom_dtype dt, int32_t rank, const int64_t *shape, const void *data) {
  const char *descr = NULL;
  for (size_t k = 0; k < 12; k++)
    if (descrs[k].dt == dt) descr = descrs[k].descr;
  if (!descr) return LOOM_ERROR(UNIMPLEMENTED, "dtype %s cannot be written to .npy", loom_dtype_name(dt));
  char h[512];
  int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  size_t nbytes = loom_dtype_size(dt);
  for (int32_t i = 0; i < rank; i++) {
    n += snprintf(h + n, sizeof h - (size_t)n, "%lld%s", (long long)shape[i], rank == 1 ? "," : i + 1 < rank ? ", " : "");
    nbytes *= (size_t)shape[i];
  }
  n += snprintf(h + n, sizeof h - (size_t)n, "), }");
  size_t total = 10 + (size_t)n + 1;
  size_t pad = (64 - total % 64) % 64;
  FILE *f = fopen(path, "wb");
  if (!f) return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  uint16_t hl = (uint16_t)(n + pad + 1);
  uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (uint8_t)(hl & 0xFF), (uint8_t)(hl >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(h, 1, (size_t)n, f);
  for (size_t i = 0; i < pad; i++) fputc(' ', f);
  fputc('\n', f);
  size_t w = nbytes ? fwrite(data, 1, nbytes, f) : 0;
  if (fclose(f) != 0 || w != nbytes) return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  return LOOM_OK;
}

/* sigtext.c — extern signatures as text, so an AOT artifact carries the externs it calls
 * (libcall.h: loom_libcall_sigs_encode / loom_libcall_sigs_decode).
 *
 * One line per extern, fields separated by single spaces; strings are written with %XX
 * escapes for bytes outside [!-~] and for '%' itself, '-' is a NULL library:
 *
 *     name symbol library abi pure nbuf dtype,... rank,... nsym ret ncargs type:src:index:dtype:value ...
 *
 * abi: 0 kernel, 1 C; dtypes and ctypes are their enum values. The decoder checks the syntax
 * and every number's range; loom_libcall_lib_create then checks the signature's consistency
 * (indices in range, ranks, counts) before anything is loaded. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "libcall/libcall.h"
#include "vm/object.h"

static void put_str(loom_strbuf *sb, const char *s) {
  if (!s) {
    loom_strbuf_putc(sb, '-');
    return;
  }
  if (!*s) loom_strbuf_puts(sb, "%00");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p > ' ' && *p <= '~' && *p != '%' && !(p == (const unsigned char *)s && *p == '-' && !p[1])) loom_strbuf_putc(sb, (char)*p);
    else loom_strbuf_printf(sb, "%%%02X", *p);
  }
}

void loom_libcall_sigs_encode(const loom_libcall_sig *sigs, uint32_t n, loom_strbuf *sb) {
  for (uint32_t i = 0; i < n; i++) {
    const loom_libcall_sig *s = &sigs[i];
    put_str(sb, s->name);
    loom_strbuf_putc(sb, ' ');
    put_str(sb, s->symbol);
    loom_strbuf_putc(sb, ' ');
    put_str(sb, s->library);
    loom_strbuf_printf(sb, " %d %d %u ", (int)s->abi, (int)s->pure, s->nbuf);
    for (uint32_t k = 0; k < s->nbuf; k++)
      loom_strbuf_printf(sb, "%s%d", k ? "," : "", s->buf_dtypes ? (int)s->buf_dtypes[k] : (int)LOOM_DTYPE_COUNT);
    if (!s->nbuf) loom_strbuf_putc(sb, '.');
    loom_strbuf_putc(sb, ' ');
    for (uint32_t k = 0; k < s->nbuf; k++) loom_strbuf_printf(sb, "%s%d", k ? "," : "", s->buf_ranks ? s->buf_ranks[k] : 0);
    if (!s->nbuf) loom_strbuf_putc(sb, '.');
    loom_strbuf_printf(sb, " %u %d %u", s->nsym, (int)s->ret, s->ncargs);
    for (uint32_t k = 0; k < s->ncargs; k++) {
      const loom_libcall_carg *a = &s->cargs[k];
      loom_strbuf_printf(sb, " %d:%d:%u:%d:%lld", (int)a->type, (int)a->src, a->index, (int)a->load_dtype, (long long)a->value);
    }
    loom_strbuf_putc(sb, '\n');
  }
}

/* ---- decoding ------------------------------------------------------------------ */

typedef struct rd {
  const char *p, *end;
  uint32_t line;
} rd;

#define BAD(r, what) LOOM_ERROR(DATA_LOSS, "extern signature line %u: %s", (r)->line, what)

static loom_status word(rd *r, const char **w, size_t *len) {
  if (r->p >= r->end || *r->p == '\n') return BAD(r, "a field is missing");
  const char *s = r->p;
  while (r->p < r->end && *r->p != ' ' && *r->p != '\n') r->p++;
  *w = s, *len = (size_t)(r->p - s);
  if (r->p < r->end && *r->p == ' ') r->p++;
  return LOOM_OK;
}

static int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

static loom_status str(rd *r, loom_arena *a, const char **out) {
  const char *w;
  size_t len;
  LOOM_PROPAGATE(word(r, &w, &len));
  if (len == 1 && w[0] == '-') {
    *out = NULL;
    return LOOM_OK;
  }
  char *s = loom_arena_alloc(a, len + 1, 1);
  if (!s) return LOOM_OOM();
  size_t k = 0;
  for (size_t i = 0; i < len; i++) {
    if (w[i] != '%') {
      s[k++] = w[i];
      continue;
    }
    if (i + 2 >= len) return BAD(r, "a truncated %XX escape");
    int h = hex(w[i + 1]), l = hex(w[i + 2]);
    if (h < 0 || l < 0) return BAD(r, "a bad %XX escape");
    if (h || l) s[k++] = (char)(h * 16 + l);
    i += 2;
  }
  s[k] = 0;
  *out = s;
  return LOOM_OK;
}

static loom_status num(rd *r, const char *w, size_t len, int64_t lo, int64_t hi, int64_t *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return BAD(r, "a number is malformed");
  memcpy(buf, w, len);
  buf[len] = 0;
  char *e;
  errno = 0;
  long long v = strtoll(buf, &e, 10);
  if (*e || errno || v < lo || v > hi) return BAD(r, "a number is malformed or out of range");
  *out = v;
  return LOOM_OK;
}

static loom_status field_num(rd *r, int64_t lo, int64_t hi, int64_t *out) {
  const char *w;
  size_t len;
  LOOM_PROPAGATE(word(r, &w, &len));
  return num(r, w, len, lo, hi, out);
}

/* "a,b,c" (n numbers) or "." (n = 0). */
static loom_status list(rd *r, uint32_t n, int64_t lo, int64_t hi, int64_t *out) {
  const char *w;
  size_t len;
  LOOM_PROPAGATE(word(r, &w, &len));
  if (n == 0) return len == 1 && w[0] == '.' ? LOOM_OK : BAD(r, "an empty list must be '.'");
  const char *p = w, *end = w + len;
  for (uint32_t i = 0; i < n; i++) {
    const char *q = p;
    while (q < end && *q != ',') q++;
    LOOM_PROPAGATE(num(r, p, (size_t)(q - p), lo, hi, &out[i]));
    if (i + 1 < n && q >= end) return BAD(r, "a list is too short");
    p = q + 1;
  }
  return p >= end ? LOOM_OK : BAD(r, "a list is too long");
}

loom_status loom_libcall_sigs_decode(const char *text, size_t len, loom_arena *a, loom_libcall_sig **out, uint32_t *n) {
  *out = NULL;
  *n = 0;
  uint32_t lines = 0;
  for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
  if (len && text[len - 1] != '\n') return LOOM_ERROR(DATA_LOSS, "extern signatures: the last line is not terminated");
  if (lines > 4096) return LOOM_ERROR(DATA_LOSS, "extern signatures: %u lines is too many", lines);
  loom_libcall_sig *sigs = loom_arena_array(a, lines ? lines : 1, sizeof *sigs, 8);
  if (!sigs) return LOOM_OOM();
  rd r = {text, text + len, 0};
  for (uint32_t i = 0; i < lines; i++) {
    r.line = i + 1;
    loom_libcall_sig *s = &sigs[i];
    memset(s, 0, sizeof *s);
    int64_t v, vals[LOOM_VM_MAX_RANK * 16];
    LOOM_PROPAGATE(str(&r, a, &s->name));
    LOOM_PROPAGATE(str(&r, a, &s->symbol));
    LOOM_PROPAGATE(str(&r, a, &s->library));
    if (!s->name || !s->symbol) return BAD(&r, "an extern needs a name and a symbol");
    LOOM_PROPAGATE(field_num(&r, 0, 1, &v));
    s->abi = (loom_libcall_abi)v;
    LOOM_PROPAGATE(field_num(&r, 0, 1, &v));
    s->pure = v != 0;
    LOOM_PROPAGATE(field_num(&r, 0, LOOM_VM_MAX_RANK * 16, &v));
    s->nbuf = (uint32_t)v;
    loom_dtype *dt = loom_arena_array(a, s->nbuf ? s->nbuf : 1, sizeof *dt, 4);
    int32_t *rk = loom_arena_array(a, s->nbuf ? s->nbuf : 1, sizeof *rk, 4);
    if (!dt || !rk) return LOOM_OOM();
    LOOM_PROPAGATE(list(&r, s->nbuf, 0, LOOM_DTYPE_COUNT, vals));
    for (uint32_t k = 0; k < s->nbuf; k++) dt[k] = (loom_dtype)vals[k];
    LOOM_PROPAGATE(list(&r, s->nbuf, 0, LOOM_VM_MAX_RANK, vals));
    for (uint32_t k = 0; k < s->nbuf; k++) rk[k] = (int32_t)vals[k];
    s->buf_dtypes = dt, s->buf_ranks = rk;
    LOOM_PROPAGATE(field_num(&r, 0, 1 << 20, &v));
    s->nsym = (uint32_t)v;
    LOOM_PROPAGATE(field_num(&r, 0, LOOM_LIBCALL_CT_COUNT - 1, &v));
    s->ret = (loom_libcall_ctype)v;
    LOOM_PROPAGATE(field_num(&r, 0, LOOM_LIBCALL_MAX_ARGS, &v));
    s->ncargs = (uint32_t)v;
    loom_libcall_carg *ca = loom_arena_array(a, s->ncargs ? s->ncargs : 1, sizeof *ca, 8);
    if (!ca) return LOOM_OOM();
    for (uint32_t k = 0; k < s->ncargs; k++) {
      const char *w;
      size_t wl;
      LOOM_PROPAGATE(word(&r, &w, &wl));
      int64_t f[5];
      static const int64_t lo[5] = {0, 0, 0, 0, INT64_MIN}, hi[5] = {LOOM_LIBCALL_CT_COUNT - 1, 3, 1 << 20, LOOM_DTYPE_COUNT,
                                                                       INT64_MAX};
      const char *p = w, *e = w + wl;
      for (int j = 0; j < 5; j++) {
        const char *q = p;
        while (q < e && *q != ':') q++;
        if (j < 4 && q >= e) return BAD(&r, "a C argument has too few fields");
        LOOM_PROPAGATE(num(&r, p, (size_t)(q - p), lo[j], hi[j], &f[j]));
        p = q + 1;
      }
      ca[k] = (loom_libcall_carg){(loom_libcall_ctype)f[0], (loom_libcall_src)f[1], (uint32_t)f[2], (loom_dtype)f[3], f[4]};
    }
    s->cargs = ca;
    if (r.p >= r.end || *r.p != '\n') return BAD(&r, "extra fields at the end of the line");
    r.p++;
  }
  *out = sigs;
  *n = lines;
  return LOOM_OK;
}

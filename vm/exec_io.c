/* exec_io.c — the executable file format: writer, loader (bounds-checked parse), file I/O,
 * and the constants' checks (XXH3-64 of each constant, written into its record and compared
 * before the constant's first use). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL /* header-only: libloomrt links no xxhash library */
#include <xxhash.h>

#include "base/file.h"
#include "base/vec.h"
#include "vm/exec.h"

static const char magic[8] = {'L', 'O', 'O', 'M', 'E', 'X', 'E', '\0'};
#define HEADER_SIZE 24u
#define SECTION_ENTRY 24u

const char *loom_vm_section_name(uint32_t id) {
  static const char *names[] = {
#define X(n) #n,
      LOOM_VM_SECTIONS(X)
#undef X
  };
  _Static_assert(LOOM_ARRAY_LEN(names) == LOOM_VM_SEC_COUNT, "section names");
  return id < LOOM_VM_SEC_COUNT ? names[id] : "?";
}

const char *loom_vm_exec_str(const loom_vm_exec *e, uint32_t off) {
  return off < e->strings_len ? e->strings + off : "?";
}

uint32_t loom_vm_exec_find_func(const loom_vm_exec *e, const char *name) {
  for (uint32_t i = 0; i < e->nfuncs; i++)
    if (!strcmp(loom_vm_exec_str(e, e->funcs[i].name), name)) return i;
  return LOOM_VM_NONE;
}

void loom_vm_exec_free(loom_vm_exec *e) {
  if (!e) return;
  loom_allocator *a = e->alloc;
  for (uint32_t i = 0; i < e->nfuncs; i++) {
    loom_vm_func *f = &e->funcs[i];
    loom_free(a, f->obj_kinds, f->nobj);
    loom_free(a, f->int_names, f->nint * 4u);
    loom_free(a, f->params, f->nparams * sizeof *f->params);
    loom_free(a, f->code, f->ncode * 8u);
    loom_free(a, f->lists, f->nlists * 4u);
    loom_free(a, f->debug, f->ndebug * sizeof *f->debug);
  }
  loom_free(a, e->funcs, (e->nfuncs ? e->nfuncs : 1) * sizeof *e->funcs);
  loom_free(a, e->strings, e->strings_len);
  loom_free(a, e->symvars, e->nsymvars * 4u);
  loom_free(a, e->intconsts, e->nintconsts * 8u);
  loom_free(a, e->consts, e->nconsts * sizeof *e->consts);
  for (uint32_t i = 0; i < e->nkernels; i++) loom_free(a, e->kernels[i].sig, e->kernels[i].nsig * 4u);
  for (uint32_t i = 0; i < e->nexterns; i++) loom_free(a, e->externs[i].sig, e->externs[i].nsig * 4u);
  loom_free(a, e->kernels, e->nkernels * sizeof *e->kernels);
  loom_free(a, e->externs, e->nexterns * sizeof *e->externs);
  if (e->data_owned) loom_free(a, e->data_owned, e->data_len);
  if (e->const_src) loom_free(a, (void *)e->const_src, e->nconsts * sizeof *e->const_src);
  if (e->const_copies) loom_free(a, e->const_copies, e->const_copies_len);
  if (e->const_ok) loom_free(a, e->const_ok, e->nconsts);
  if (e->backing_free) e->backing_free(e->backing);
  loom_free(a, e, sizeof *e);
}

/* ------------------------------------------------------------------ writer */

typedef LOOM_VEC(uint8_t) bytes;
typedef struct writer {
  loom_allocator *a;
  bytes b;
  bool oom;
} writer;

static void put(writer *w, const void *p, size_t n) {
  if (w->oom || !LOOM_VEC_RESERVE(w->a, &w->b, w->b.len + n)) {
    w->oom = true;
    return;
  }
  if (n) memcpy(w->b.data + w->b.len, p, n);
  w->b.len += n;
}
static void put32(writer *w, uint32_t v) { put(w, &v, 4); }
static void put64(writer *w, uint64_t v) { put(w, &v, 8); }
static void pad_to(writer *w, size_t align) {
  static const uint8_t z[64];
  size_t n = (align - w->b.len % align) % align;
  put(w, z, n);
}

const void *loom_vm_exec_const_bytes(const loom_vm_exec *e, uint32_t i) {
  return e->const_src ? e->const_src[i] : e->data + e->consts[i].offset;
}

int loom_vm_exec_data_each(const loom_vm_exec *e, int (*fn)(void *ctx, const void *p, size_t n), void *ctx) {
  if (!e->const_src) return e->data_len ? fn(ctx, e->data, e->data_len) : 0;
  /* borrowed: constants at increasing offsets (the builder's layout), zeros between them */
  uint64_t end = 0;
  for (uint32_t i = 0; i < e->nconsts; i++) {
    const loom_vm_const *c = &e->consts[i];
    int r = c->offset > end ? fn(ctx, NULL, c->offset - end) : 0;
    if (!r && c->nbytes) r = fn(ctx, e->const_src[i], c->nbytes);
    if (r) return r;
    end = c->offset + c->nbytes;
  }
  return end < e->data_len ? fn(ctx, NULL, e->data_len - end) : 0;
}

/* A loom_vm_exec_data_each sink into the writer (NULL p: zeros). */
static int put_piece(void *ctx, const void *p, size_t n) {
  writer *w = ctx;
  if (p) {
    put(w, p, n);
  } else if (!w->oom && LOOM_VEC_RESERVE(w->a, &w->b, w->b.len + n)) {
    memset(w->b.data + w->b.len, 0, n);
    w->b.len += n;
  } else {
    w->oom = true;
  }
  return w->oom;
}

static loom_status write_exec(const loom_vm_exec *e, bool with_data, loom_allocator *alloc, uint8_t **out,
                              size_t *out_len) {
  *out = NULL;
  *out_len = 0;
  /* a string constant's elements are pointers into the compiler's memory (docs/vm.md "Strings") */
  for (uint32_t i = 0; i < e->nconsts; i++)
    if (loom_dtype_is_string((loom_dtype)e->consts[i].dtype))
      return LOOM_ERROR(UNIMPLEMENTED, "constant '%s' is a string tensor: an executable file cannot hold string "
                        "constants yet (they run in the process that compiled them)", loom_vm_exec_str(e, e->consts[i].name));
  writer w = {.a = alloc};
  uint64_t off[LOOM_VM_SEC_COUNT], size[LOOM_VM_SEC_COUNT];
  uint32_t count[LOOM_VM_SEC_COUNT];
  put(&w, magic, 8);
  put32(&w, LOOM_VM_FORMAT_VERSION);
  put32(&w, LOOM_VM_SEC_COUNT);
  put64(&w, 0); /* file size, patched */
  size_t table = w.b.len;
  for (int i = 0; i < LOOM_VM_SEC_COUNT * 3; i++) put64(&w, 0); /* patched */
  for (uint32_t s = 0; s < LOOM_VM_SEC_COUNT; s++) {
    pad_to(&w, s == LOOM_VM_SEC_DATA ? 64 : 8);
    off[s] = w.b.len;
    switch (s) {
    case LOOM_VM_SEC_STRINGS: count[s] = e->strings_len; put(&w, e->strings, e->strings_len); break;
    case LOOM_VM_SEC_SYMVARS: count[s] = e->nsymvars; put(&w, e->symvars, e->nsymvars * 4u); break;
    case LOOM_VM_SEC_INTCONSTS: count[s] = e->nintconsts; put(&w, e->intconsts, e->nintconsts * 8u); break;
    case LOOM_VM_SEC_CONSTS:
      count[s] = e->nconsts;
      for (uint32_t i = 0; i < e->nconsts; i++) {
        const loom_vm_const *c = &e->consts[i];
        put32(&w, c->name), put32(&w, c->dtype), put32(&w, c->rank), put32(&w, 0);
        put64(&w, c->offset), put64(&w, c->nbytes), put64(&w, XXH3_64bits(loom_vm_exec_const_bytes(e, i), c->nbytes));
        put(&w, c->dims, c->rank * 8u);
      }
      break;
    case LOOM_VM_SEC_KERNELS:
    case LOOM_VM_SEC_EXTERNS: {
      const loom_vm_kernel *k = s == LOOM_VM_SEC_KERNELS ? e->kernels : e->externs;
      count[s] = s == LOOM_VM_SEC_KERNELS ? e->nkernels : e->nexterns;
      for (uint32_t i = 0; i < count[s]; i++) {
        put32(&w, k[i].name), put32(&w, k[i].nbuf), put32(&w, k[i].nsym), put32(&w, k[i].nsig);
        put(&w, k[i].sig, k[i].nsig * 4u);
      }
      break;
    }
    case LOOM_VM_SEC_FUNCS: {
      count[s] = e->nfuncs;
      uint32_t code = 0, lists = 0, dbg = 0;
      for (uint32_t i = 0; i < e->nfuncs; i++) {
        const loom_vm_func *f = &e->funcs[i];
        put32(&w, f->name), put32(&w, f->nobj), put32(&w, f->nint), put32(&w, f->nparams);
        put32(&w, f->nint_params), put32(&w, code), put32(&w, f->ncode), put32(&w, lists);
        put32(&w, f->nlists), put32(&w, dbg), put32(&w, f->ndebug), put32(&w, 0);
        code += f->ncode, lists += f->nlists, dbg += f->ndebug;
        put(&w, f->obj_kinds, f->nobj);
        pad_to(&w, 4);
        put(&w, f->int_names, f->nint * 4u);
        for (uint32_t p = 0; p < f->nparams; p++) {
          const loom_vm_param *pr = &f->params[p];
          put32(&w, pr->name), put32(&w, pr->dtype), put32(&w, pr->rank);
          put(&w, pr->dims, pr->rank * 4u);
        }
      }
      break;
    }
    case LOOM_VM_SEC_CODE:
      count[s] = 0;
      for (uint32_t i = 0; i < e->nfuncs; i++) put(&w, e->funcs[i].code, e->funcs[i].ncode * 8u), count[s] += e->funcs[i].ncode;
      break;
    case LOOM_VM_SEC_LISTS:
      count[s] = 0;
      for (uint32_t i = 0; i < e->nfuncs; i++) put(&w, e->funcs[i].lists, e->funcs[i].nlists * 4u), count[s] += e->funcs[i].nlists;
      break;
    case LOOM_VM_SEC_DEBUG:
      count[s] = 0;
      for (uint32_t i = 0; i < e->nfuncs; i++)
        for (uint32_t d = 0; d < e->funcs[i].ndebug; d++)
          put32(&w, e->funcs[i].debug[d].pc), put32(&w, e->funcs[i].debug[d].text), count[s]++;
      break;
    case LOOM_VM_SEC_DATA:
      count[s] = 0;
      if (with_data) (void)loom_vm_exec_data_each(e, put_piece, &w);
      break;
    }
    size[s] = w.b.len - off[s];
  }
  if (w.oom) {
    LOOM_VEC_FREE(alloc, &w.b);
    return LOOM_OOM();
  }
  uint64_t total = w.b.len;
  memcpy(w.b.data + 16, &total, 8);
  for (uint32_t s = 0; s < LOOM_VM_SEC_COUNT; s++) {
    uint8_t *p = w.b.data + table + s * SECTION_ENTRY;
    memcpy(p, &s, 4);
    memcpy(p + 4, &count[s], 4);
    memcpy(p + 8, &off[s], 8);
    memcpy(p + 16, &size[s], 8);
  }
  /* shrink-to-fit is not needed: callers free with the capacity we report */
  *out = w.b.data;
  *out_len = w.b.len;
  if (w.b.cap != w.b.len) {
    uint8_t *q = loom_realloc(alloc, w.b.data, w.b.cap, w.b.len ? w.b.len : 1);
    if (q) *out = q;
    else {
      LOOM_VEC_FREE(alloc, &w.b);
      *out = NULL;
      return LOOM_OOM();
    }
  }
  return LOOM_OK;
}

loom_status loom_vm_exec_write(const loom_vm_exec *e, loom_allocator *alloc, uint8_t **out, size_t *out_len) {
  return write_exec(e, true, alloc, out, out_len);
}

loom_status loom_vm_exec_write_no_data(const loom_vm_exec *e, loom_allocator *alloc, uint8_t **out, size_t *out_len) {
  return write_exec(e, false, alloc, out, out_len);
}

loom_status loom_vm_exec_save(const loom_vm_exec *e, const char *path) {
  uint8_t *p;
  size_t n;
  LOOM_PROPAGATE(loom_vm_exec_write(e, NULL, &p, &n));
  FILE *f = fopen(path, "wb");
  if (!f) {
    loom_free(NULL, p, n);
    return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  }
  size_t wr = fwrite(p, 1, n, f);
  int rc = fclose(f);
  loom_free(NULL, p, n);
  if (wr != n || rc != 0) return LOOM_ERROR(IO_ERROR, "cannot write '%s': %s", path, strerror(errno));
  return LOOM_OK;
}

/* ------------------------------------------------------------------ loader */

/* A bounds-checked cursor over one section. */
typedef struct cursor {
  const uint8_t *p;
  uint64_t left;
  uint32_t sec;    /* section id, for messages */
  uint32_t record; /* record being read */
} cursor;

/* A DATA_LOSS status "in section NAME record I: message". */
static loom_status corrupt(const cursor *c, const char *fmt, ...) LOOM_PRINTF(2, 3);
static loom_status corrupt(const cursor *c, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return LOOM_ERROR(DATA_LOSS, "in section %s record %u: %s", loom_vm_section_name(c->sec), c->record, msg);
}
#define CORRUPT(c, ...) corrupt((c), __VA_ARGS__)

static bool take(cursor *c, void *dst, uint64_t n) {
  if (c->left < n) return false;
  memcpy(dst, c->p, n);
  c->p += n;
  c->left -= n;
  return true;
}

static loom_status rd32(cursor *c, uint32_t *v, const char *what) {
  if (!take(c, v, 4)) return CORRUPT(c, "truncated: %s is missing", what);
  return LOOM_OK;
}

/* Reads `n` elements of `elem` bytes into a new array. */
static loom_status rd_array(loom_allocator *a, cursor *c, uint64_t n, size_t elem, void **out, const char *what) {
  *out = NULL;
  if (n == 0) return LOOM_OK;
  if (n > c->left / elem) return CORRUPT(c, "truncated: %s needs %llu bytes, %llu left", what,
                                         (unsigned long long)(n * elem), (unsigned long long)c->left);
  void *p = loom_alloc_array(a, n, elem);
  if (!p) return LOOM_OOM();
  take(c, p, n * elem);
  *out = p;
  return LOOM_OK;
}

/* Parses FUNCS; offs[i] receives function i's (code, lists, debug) offsets. */
static loom_status parse_funcs(loom_vm_exec *e, cursor *c, uint32_t count, uint32_t (*offs)[3]) {
  loom_allocator *a = e->alloc;
  for (uint32_t i = 0; i < count; i++) {
    c->record = i;
    loom_vm_func *f = &e->funcs[i];
    e->nfuncs = i + 1;
    uint32_t h[12];
    if (!take(c, h, sizeof h)) return CORRUPT(c, "truncated function header");
    f->name = h[0], f->nobj = h[1], f->nint = h[2], f->nparams = h[3], f->nint_params = h[4];
    offs[i][0] = h[5], f->ncode = h[6], offs[i][1] = h[7], f->nlists = h[8], offs[i][2] = h[9], f->ndebug = h[10];
    if (h[11] != 0) return CORRUPT(c, "reserved word is %u, not 0", h[11]);
    if (f->nobj > LOOM_VM_MAX_REGS || f->nint > LOOM_VM_MAX_REGS)
      return CORRUPT(c, "register counts %u/%u exceed %u", f->nobj, f->nint, LOOM_VM_MAX_REGS);
    if (f->nparams > f->nobj) return CORRUPT(c, "%u parameters but %u object registers", f->nparams, f->nobj);
    if (f->nint_params > f->nint) return CORRUPT(c, "%u int parameters but %u int registers", f->nint_params, f->nint);
    uint32_t nobj = f->nobj, nint = f->nint, nparams = f->nparams;
    f->nobj = f->nint = f->nparams = 0; /* counts track what is allocated, for exec_free */
    LOOM_PROPAGATE(rd_array(a, c, nobj, 1, (void **)&f->obj_kinds, "register kinds"));
    f->nobj = nobj;
    uint8_t z[4];
    if (!take(c, z, (4 - nobj % 4) % 4)) return CORRUPT(c, "truncated padding");
    LOOM_PROPAGATE(rd_array(a, c, nint, 4, (void **)&f->int_names, "int register names"));
    f->nint = nint;
    if (nparams) {
      if (nparams > c->left / 12) return CORRUPT(c, "truncated: %u parameters", nparams);
      f->params = loom_alloc_array(a, nparams, sizeof(loom_vm_param));
      if (!f->params) return LOOM_OOM();
      memset(f->params, 0, nparams * sizeof(loom_vm_param));
      f->nparams = nparams;
    }
    for (uint32_t p = 0; p < nparams; p++) {
      loom_vm_param *pr = &f->params[p];
      LOOM_PROPAGATE(rd32(c, &pr->name, "parameter name"));
      LOOM_PROPAGATE(rd32(c, &pr->dtype, "parameter dtype"));
      LOOM_PROPAGATE(rd32(c, &pr->rank, "parameter rank"));
      if (pr->rank > LOOM_VM_MAX_RANK) return CORRUPT(c, "parameter %u rank %u exceeds %d", p, pr->rank, LOOM_VM_MAX_RANK);
      if (!take(c, pr->dims, pr->rank * 4u)) return CORRUPT(c, "truncated: parameter %u dims", p);
    }
  }
  return LOOM_OK;
}

/* Copies [off, off+n) of a section's array into a new one; checks the range. */
static loom_status slice(loom_allocator *a, const void *base, uint64_t total, uint32_t off, uint32_t n,
                         size_t elem, void **out, uint32_t func, const char *sec) {
  *out = NULL;
  if ((uint64_t)off + n > total)
    return LOOM_ERROR(DATA_LOSS, "in section FUNCS record %u: %s range [%u, %llu) is outside %s (%llu entries)",
                      func, sec, off, (unsigned long long)off + n, sec, (unsigned long long)total);
  if (n == 0) return LOOM_OK;
  void *p = loom_alloc_array(a, n, elem);
  if (!p) return LOOM_OOM();
  memcpy(p, (const uint8_t *)base + (size_t)off * elem, (size_t)n * elem);
  *out = p;
  return LOOM_OK;
}

static loom_status load(loom_vm_exec *e, const uint8_t *bytes, size_t len, const uint8_t *ext_data, size_t ext_len) {
  loom_allocator *a = e->alloc;
  if (len < HEADER_SIZE) return LOOM_ERROR(DATA_LOSS, "file is %zu bytes, shorter than the %u-byte header", len, HEADER_SIZE);
  if (memcmp(bytes, magic, 8) != 0) return LOOM_ERROR(DATA_LOSS, "not a Loom executable (bad magic)");
  uint32_t version, nsec;
  uint64_t fsize;
  memcpy(&version, bytes + 8, 4);
  memcpy(&nsec, bytes + 12, 4);
  memcpy(&fsize, bytes + 16, 8);
  if (version != LOOM_VM_FORMAT_VERSION)
    return LOOM_ERROR(DATA_LOSS, "format version %u is not supported (this runtime reads version %u)", version,
                      LOOM_VM_FORMAT_VERSION);
  if (nsec != LOOM_VM_SEC_COUNT) return LOOM_ERROR(DATA_LOSS, "%u sections, expected %d", nsec, LOOM_VM_SEC_COUNT);
  if (len < HEADER_SIZE + (uint64_t)nsec * SECTION_ENTRY) return LOOM_ERROR(DATA_LOSS, "truncated section table");
  cursor sec[LOOM_VM_SEC_COUNT];
  uint32_t count[LOOM_VM_SEC_COUNT];
  uint64_t prev_end = HEADER_SIZE + (uint64_t)nsec * SECTION_ENTRY;
  for (uint32_t s = 0; s < nsec; s++) {
    const uint8_t *p = bytes + HEADER_SIZE + s * SECTION_ENTRY;
    uint32_t id;
    uint64_t off, size;
    memcpy(&id, p, 4), memcpy(&count[s], p + 4, 4), memcpy(&off, p + 8, 8), memcpy(&size, p + 16, 8);
    if (id != s) return LOOM_ERROR(DATA_LOSS, "section table entry %u has id %u, expected %u (%s)", s, id, s, loom_vm_section_name(s));
    if (off < prev_end || off > len || size > len - off)
      return LOOM_ERROR(DATA_LOSS, "section %s: range [%llu, +%llu) is outside the file (%zu bytes) or overlaps the previous section",
                        loom_vm_section_name(s), (unsigned long long)off, (unsigned long long)size, len);
    if (off % (s == LOOM_VM_SEC_DATA ? 64 : 8) != 0)
      return LOOM_ERROR(DATA_LOSS, "section %s: offset %llu is misaligned", loom_vm_section_name(s), (unsigned long long)off);
    prev_end = off + size;
    sec[s] = (cursor){bytes + off, size, s, 0};
  }
  if (fsize != len) return LOOM_ERROR(DATA_LOSS, "header says %llu bytes, file has %zu (truncated or padded)",
                                      (unsigned long long)fsize, len);
  /* fixed-size sections: size must match count */
  static const uint32_t rec[LOOM_VM_SEC_COUNT] = {1, 4, 8, 0, 0, 0, 0, 8, 4, 8, 0};
  for (uint32_t s = 0; s < LOOM_VM_SEC_COUNT; s++)
    if (rec[s] && (uint64_t)count[s] * rec[s] != sec[s].left)
      return LOOM_ERROR(DATA_LOSS, "section %s: %u entries of %u bytes do not fill its %llu bytes",
                        loom_vm_section_name(s), count[s], rec[s], (unsigned long long)sec[s].left);
  /* STRINGS */
  LOOM_PROPAGATE(rd_array(a, &sec[0], count[0], 1, (void **)&e->strings, "strings"));
  e->strings_len = count[0];
  if (e->strings_len && e->strings[e->strings_len - 1] != '\0')
    return LOOM_ERROR(DATA_LOSS, "section STRINGS: the last string is not NUL-terminated");
  LOOM_PROPAGATE(rd_array(a, &sec[1], count[1], 4, (void **)&e->symvars, "symvars"));
  e->nsymvars = count[1];
  LOOM_PROPAGATE(rd_array(a, &sec[2], count[2], 8, (void **)&e->intconsts, "int constants"));
  e->nintconsts = count[2];
  /* CONSTS */
  cursor *c = &sec[LOOM_VM_SEC_CONSTS];
  if (count[3] > c->left / 40) return CORRUPT(c, "%u constants do not fit in %llu bytes", count[3], (unsigned long long)c->left);
  if (count[3]) {
    e->consts = loom_alloc_array(a, count[3], sizeof(loom_vm_const));
    if (!e->consts) return LOOM_OOM();
    memset(e->consts, 0, count[3] * sizeof(loom_vm_const));
    e->nconsts = count[3];
  }
  for (uint32_t i = 0; i < count[3]; i++) {
    c->record = i;
    loom_vm_const *k = &e->consts[i];
    uint32_t h[4];
    if (!take(c, h, 16) || !take(c, &k->offset, 8) || !take(c, &k->nbytes, 8) || !take(c, &k->check, 8))
      return CORRUPT(c, "truncated constant");
    k->name = h[0], k->dtype = h[1], k->rank = h[2];
    if (k->rank > LOOM_VM_MAX_RANK) return CORRUPT(c, "rank %u exceeds %d", k->rank, LOOM_VM_MAX_RANK);
    if (loom_dtype_is_string((loom_dtype)k->dtype)) return CORRUPT(c, "a string constant (its elements would be pointers)");
    if (!take(c, k->dims, k->rank * 8u)) return CORRUPT(c, "truncated: dims");
  }
  if (sec[3].left) return CORRUPT(&sec[3], "%llu bytes left after the last constant", (unsigned long long)sec[3].left);
  /* KERNELS, EXTERNS */
  for (uint32_t s = LOOM_VM_SEC_KERNELS; s <= LOOM_VM_SEC_EXTERNS; s++) {
    cursor *ks = &sec[s];
    if (count[s] > ks->left / 16)
      return CORRUPT(ks, "%u records do not fit in %llu bytes", count[s], (unsigned long long)ks->left);
    loom_vm_kernel *k = count[s] ? loom_alloc_zero(a, count[s] * sizeof *k) : NULL;
    if (count[s] && !k) return LOOM_OOM();
    if (s == LOOM_VM_SEC_KERNELS) e->kernels = k, e->nkernels = count[s];
    else e->externs = k, e->nexterns = count[s];
    for (uint32_t i = 0; i < count[s]; i++) {
      ks->record = i;
      uint32_t r[4];
      if (!take(ks, r, 16)) return CORRUPT(ks, "truncated record");
      if (r[3] > ks->left / 4) return CORRUPT(ks, "signature of %u words runs past the section", r[3]);
      k[i] = (loom_vm_kernel){r[0], r[1], r[2], 0, NULL};
      if (r[3]) {
        k[i].sig = loom_alloc_array(a, r[3], 4);
        if (!k[i].sig) return LOOM_OOM();
        k[i].nsig = r[3];
        take(ks, k[i].sig, r[3] * 4u);
      }
    }
    if (ks->left) return CORRUPT(ks, "%llu bytes left after the last record", (unsigned long long)ks->left);
  }
  /* FUNCS, then their slices of CODE, LISTS, DEBUG */
  c = &sec[LOOM_VM_SEC_FUNCS];
  uint32_t nf = count[LOOM_VM_SEC_FUNCS];
  if (nf > c->left / 48) return CORRUPT(c, "%u functions do not fit in %llu bytes", nf, (unsigned long long)c->left);
  e->funcs = loom_alloc_array(a, nf ? nf : 1, sizeof(loom_vm_func));
  if (!e->funcs) return LOOM_OOM();
  memset(e->funcs, 0, (nf ? nf : 1) * sizeof(loom_vm_func));
  uint32_t(*offs)[3] = loom_alloc_array(a, nf ? nf : 1, sizeof *offs);
  if (!offs) return LOOM_OOM();
  loom_status st = parse_funcs(e, c, nf, offs);
  if (!st && c->left) st = CORRUPT(c, "%llu bytes left after the last function", (unsigned long long)c->left);
  for (uint32_t i = 0; !st && i < nf; i++) {
    loom_vm_func *f = &e->funcs[i];
    uint32_t ncode = f->ncode, nlists = f->nlists, ndebug = f->ndebug;
    f->ncode = f->nlists = f->ndebug = 0;
    st = slice(a, sec[LOOM_VM_SEC_CODE].p, count[LOOM_VM_SEC_CODE], offs[i][0], ncode, 8, (void **)&f->code, i, "CODE");
    if (!st) f->ncode = ncode, st = slice(a, sec[LOOM_VM_SEC_LISTS].p, count[LOOM_VM_SEC_LISTS], offs[i][1], nlists, 4, (void **)&f->lists, i, "LISTS");
    if (!st) f->nlists = nlists, st = slice(a, sec[LOOM_VM_SEC_DEBUG].p, count[LOOM_VM_SEC_DEBUG], offs[i][2], ndebug, 8, (void **)&f->debug, i, "DEBUG");
    if (!st) f->ndebug = ndebug;
  }
  loom_free(a, offs, (nf ? nf : 1) * sizeof *offs);
  LOOM_PROPAGATE(st);
  /* DATA: an artifact's region given apart (load_ext), else used in place when aligned */
  if (ext_data) {
    if (sec[LOOM_VM_SEC_DATA].left)
      return LOOM_ERROR(DATA_LOSS, "section DATA: %llu bytes, where the constants are stored apart (expected none)",
                        (unsigned long long)sec[LOOM_VM_SEC_DATA].left);
    e->data = ext_data;
    e->data_len = ext_len;
    return LOOM_OK;
  }
  e->data_len = sec[LOOM_VM_SEC_DATA].left;
  if (((uintptr_t)sec[LOOM_VM_SEC_DATA].p % 64) == 0) {
    e->data = sec[LOOM_VM_SEC_DATA].p;
  } else if (e->data_len) {
    e->data_owned = loom_alloc_aligned(a, e->data_len, 64);
    if (!e->data_owned) return LOOM_OOM();
    memcpy(e->data_owned, sec[LOOM_VM_SEC_DATA].p, e->data_len);
    e->data = e->data_owned;
  }
  return LOOM_OK;
}

loom_status loom_vm_exec_load(loom_allocator *alloc, const uint8_t *bytes, size_t len,
                              void (*backing_free)(void *), void *backing, loom_vm_exec **out) {
  return loom_vm_exec_load_ext(alloc, bytes, len, NULL, 0, backing_free, backing, out);
}

loom_status loom_vm_exec_load_ext(loom_allocator *alloc, const uint8_t *bytes, size_t len, const uint8_t *data,
                                  size_t data_len, void (*backing_free)(void *), void *backing, loom_vm_exec **out) {
  *out = NULL;
  loom_vm_exec *e = loom_alloc_zero(alloc, sizeof *e);
  if (!e) {
    if (backing_free) backing_free(backing);
    return LOOM_OOM();
  }
  e->alloc = alloc;
  e->backing_free = backing_free;
  e->backing = backing;
  loom_status st = data && ((uintptr_t)data % 64) ? LOOM_ERROR(INVALID_ARGUMENT, "the constants' DATA is not 64-byte aligned")
                                                   : load(e, bytes, len, data, data_len);
  if (!st) st = loom_vm_exec_verify(e);
  /* every constant is checked at its first use (loom_vm_exec_const_check), none now */
  if (!st && e->nconsts && !(e->const_ok = loom_alloc_zero(alloc, e->nconsts))) st = LOOM_OOM();
  if (st) {
    loom_vm_exec_free(e);
    return loom_status_annotate(st, __FILE__, __LINE__, "while loading an executable");
  }
  *out = e;
  return LOOM_OK;
}

loom_status loom_vm_exec_const_check(const loom_vm_exec *e, uint32_t i) {
  if (!e->const_ok || __atomic_load_n(&e->const_ok[i], __ATOMIC_ACQUIRE)) return LOOM_OK;
  const loom_vm_const *c = &e->consts[i];
  if (XXH3_64bits(loom_vm_exec_const_bytes(e, i), c->nbytes) != c->check)
    return LOOM_ERROR(DATA_LOSS, "constant %u '%s' (%s, %llu bytes at DATA offset %llu) does not match its check: the "
                                 "weights were modified or corrupted after the executable was written", i,
                      loom_vm_exec_str(e, c->name), loom_dtype_name((loom_dtype)c->dtype), (unsigned long long)c->nbytes,
                      (unsigned long long)c->offset);
  __atomic_store_n(&e->const_ok[i], 1, __ATOMIC_RELEASE);
  return LOOM_OK;
}

loom_status loom_vm_exec_check_consts(const loom_vm_exec *e) {
  for (uint32_t i = 0; i < e->nconsts; i++) LOOM_PROPAGATE(loom_vm_exec_const_check(e, i));
  return LOOM_OK;
}

typedef struct mapping {
  void *p;
  size_t n;
} mapping;

static void unmap(void *m) {
  mapping *mp = m;
  if (mp->n) munmap(mp->p, mp->n);
  free(mp);
}

loom_status loom_vm_exec_load_file(loom_allocator *alloc, const char *path, loom_vm_exec **out) {
  *out = NULL;
  int fd;
  uint64_t size;
  LOOM_PROPAGATE(loom_file_open_regular(path, "executable", LOOM_FILE_LIMIT_ARTIFACT, &fd, &size));
  mapping *m = malloc(sizeof *m);
  if (!m) {
    close(fd);
    return LOOM_OOM();
  }
  m->n = (size_t)size;
  m->p = NULL;
  if (m->n) {
    m->p = mmap(NULL, m->n, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m->p == MAP_FAILED) {
      close(fd);
      free(m);
      return LOOM_ERROR(IO_ERROR, "cannot map '%s': %s", path, strerror(errno));
    }
  }
  close(fd);
  static const uint8_t empty[1];
  return loom_status_annotate(loom_vm_exec_load(alloc, m->n ? m->p : empty, m->n, unmap, m, out), __FILE__,
                              __LINE__, "file '%s'", path);
}

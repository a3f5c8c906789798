/* safetensors.c — the safetensors reader (mmap, validated) and writer (safetensors.h). The JSON
 * header is parsed and written by jansson. */
#include "graph/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/file.h"
#include "base/file_write.h"

/* The format's dtypes Loom has: one row each. */
static const struct {
  loom_dtype dt;    /* Loom's type */
  const char *name; /* the header's spelling */
} dtypes[] = {
    {LOOM_DTYPE_BOOL, "BOOL"},    {LOOM_DTYPE_U8, "U8"},        {LOOM_DTYPE_I8, "I8"},
    {LOOM_DTYPE_I16, "I16"},      {LOOM_DTYPE_U16, "U16"},      {LOOM_DTYPE_F16, "F16"},
    {LOOM_DTYPE_BF16, "BF16"},    {LOOM_DTYPE_I32, "I32"},      {LOOM_DTYPE_U32, "U32"},
    {LOOM_DTYPE_F32, "F32"},      {LOOM_DTYPE_F64, "F64"},      {LOOM_DTYPE_I64, "I64"},
    {LOOM_DTYPE_U64, "U64"},      {LOOM_DTYPE_F8E5M2, "F8_E5M2"}, {LOOM_DTYPE_F8E4M3FN, "F8_E4M3"},
    {LOOM_DTYPE_F8E8M0, "F8_E8M0"},
};

/* The largest header accepted (the reference implementation's limit). */
#define MAX_HEADER UINT64_C(100000000)
/* Alignment of the data section the writer produces. */
#define DATA_ALIGN 64

struct loom_safetensors {
  loom_allocator *alloc;
  loom_arena arena;                /* path, names, dims, the tensor array */
  const char *path;                /* as given to open */
  const uint8_t *map;              /* the whole file, read-only */
  size_t map_len;                  /* its size */
  loom_safetensors_tensor *tensors; /* header order */
  size_t *by_name;                 /* indices of tensors sorted by name (find) */
  size_t n;                        /* number of tensors */
};

const char *loom_safetensors_dtype_name(loom_dtype dt) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (dtypes[i].dt == dt) return dtypes[i].name;
  return NULL;
}

bool loom_safetensors_has_dtype(loom_dtype dt) { return loom_safetensors_dtype_name(dt) != NULL; }

static bool dtype_from_name(const char *s, loom_dtype *out) {
  for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
    if (!strcmp(dtypes[i].name, s)) return *out = dtypes[i].dt, true;
  return false;
}

const char *loom_safetensors_path(const loom_safetensors *f) { return f->path; }
size_t loom_safetensors_count(const loom_safetensors *f) { return f->n; }
const loom_safetensors_tensor *loom_safetensors_at(const loom_safetensors *f, size_t i) { return &f->tensors[i]; }

const loom_safetensors_tensor *loom_safetensors_find(const loom_safetensors *f, const char *name) {
  size_t lo = 0, hi = f->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(f->tensors[f->by_name[mid]].name, name);
    if (!c) return &f->tensors[f->by_name[mid]];
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return NULL;
}

void loom_safetensors_close(loom_safetensors *f) {
  if (!f) return;
  if (f->map) munmap((void *)f->map, f->map_len);
  loom_allocator *a = f->alloc;
  loom_arena_destroy(&f->arena);
  loom_free(a, f, sizeof *f);
}

/* ---- reader ---------------------------------------------------------------- */

/* One tensor's place in the data section (validation of the layout). */
typedef struct span {
  uint64_t begin, end; /* data_offsets */
  size_t index;        /* tensor index */
} span;

static int span_cmp(const void *a, const void *b) {
  const span *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* A sort key: a name or an element size, and the tensor's index. */
typedef struct key {
  const char *name; /* name order (find) */
  size_t size;      /* element size (the writer's order) */
  size_t index;     /* tensor index */
} sort_key;

static int name_cmp(const void *a, const void *b) { return strcmp(((const sort_key *)a)->name, ((const sort_key *)b)->name); }

/* Stable order by element size, largest first (keeps every tensor aligned to its element). */
static int size_cmp(const void *a, const void *b) {
  const sort_key *x = a, *y = b;
  if (x->size != y->size) return x->size > y->size ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* Reads a JSON integer in [0, 2^63) into *out. */
static bool json_u64(const json_t *v, uint64_t *out) {
  if (!json_is_integer(v) || json_integer_value(v) < 0) return false;
  *out = (uint64_t)json_integer_value(v);
  return true;
}

/* Prints dims as [a, b, c] into buf. */
static const char *dims_str(char *buf, size_t cap, int rank, const int64_t *dims) {
  size_t k = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < rank && k < cap; i++) k += (size_t)snprintf(buf + k, cap - k, "%s%" PRId64, i ? ", " : "", dims[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
  return buf;
}

/* Reads one tensor entry `name: {dtype, shape, data_offsets}` into t and sp. */
static loom_status read_entry(loom_safetensors *f, const char *name, const json_t *v, uint64_t data_len,
                              loom_safetensors_tensor *t, span *sp) {
  const char *p = f->path;
  if (!json_is_object(v)) return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': its header entry is not a JSON object", p, name);
  const json_t *dt = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape"),
               *offs = json_object_get(v, "data_offsets");
  if (!json_is_string(dt)) return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': no \"dtype\" string", p, name);
  if (!dtype_from_name(json_string_value(dt), &t->dtype))
    return LOOM_ERROR(UNIMPLEMENTED, "'%s': tensor '%s': unknown dtype \"%s\"", p, name, json_string_value(dt));
  if (!json_is_array(shape)) return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': no \"shape\" array", p, name);
  size_t rank = json_array_size(shape);
  if (rank > LOOM_SAFETENSORS_MAX_RANK)
    return LOOM_ERROR(UNIMPLEMENTED, "'%s': tensor '%s': rank %zu is over the limit of %d", p, name, rank,
                      LOOM_SAFETENSORS_MAX_RANK);
  int64_t *dims = loom_arena_array(&f->arena, rank ? rank : 1, sizeof(int64_t), 8);
  if (!dims) return LOOM_OOM();
  size_t nbytes = loom_dtype_size(t->dtype);
  bool overflow = false;
  for (size_t i = 0; i < rank; i++) {
    uint64_t d;
    if (!json_u64(json_array_get(shape, i), &d))
      return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': shape entry %zu is not a non-negative integer", p, name, i);
    dims[i] = (int64_t)d;
    if (d > SIZE_MAX || !loom_size_mul(nbytes, (size_t)d, &nbytes)) overflow = true;
  }
  t->name = name, t->rank = (int)rank, t->dims = dims;
  char sbuf[256];
  if (overflow)
    return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': shape %s of %s overflows the byte count", p, name,
                      dims_str(sbuf, sizeof sbuf, t->rank, dims), json_string_value(dt));
  uint64_t b, e;
  if (!json_is_array(offs) || json_array_size(offs) != 2 || !json_u64(json_array_get(offs, 0), &b) ||
      !json_u64(json_array_get(offs, 1), &e))
    return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': \"data_offsets\" is not [begin, end] of non-negative integers", p,
                      name);
  if (b > e) return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") end before they begin", p, name, b, e);
  if (e > data_len)
    return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 ") run past the data section (%" PRIu64 " bytes)",
                      p, name, b, e, data_len);
  if (e - b != nbytes)
    return LOOM_ERROR(DATA_LOSS, "'%s': tensor '%s': shape %s of %s needs %zu bytes, data_offsets give %" PRIu64, p,
                      name, dims_str(sbuf, sizeof sbuf, t->rank, dims), json_string_value(dt), nbytes, e - b);
  t->nbytes = nbytes;
  *sp = (span){b, e, 0};
  return LOOM_OK;
}

/* The data section must be covered exactly: sorted by offset, each tensor begins where the one
 * before ended, and the last ends at the end of the file. */
static loom_status check_layout(loom_safetensors *f, span *sp, uint64_t data_len) {
  qsort(sp, f->n, sizeof *sp, span_cmp);
  uint64_t at = 0;
  const char *prev = NULL;
  for (size_t i = 0; i < f->n; i++) {
    const char *nm = f->tensors[sp[i].index].name;
    if (sp[i].begin < at)
      return LOOM_ERROR(DATA_LOSS, "'%s': tensors '%s' and '%s' overlap (data_offsets [%" PRIu64 ", %" PRIu64 ") begins before %" PRIu64 ")",
                        f->path, prev, nm, sp[i].begin, sp[i].end, at);
    if (sp[i].begin > at)
      return LOOM_ERROR(DATA_LOSS, "'%s': bytes [%" PRIu64 ", %" PRIu64 ") of the data section belong to no tensor (before '%s')",
                        f->path, at, sp[i].begin, nm);
    at = sp[i].end, prev = nm;
  }
  if (at != data_len)
    return LOOM_ERROR(DATA_LOSS, "'%s': the data section has %" PRIu64 " bytes, the tensors cover %" PRIu64, f->path,
                      data_len, at);
  return LOOM_OK;
}

/* Parses and validates the header of the mapped file. */
static loom_status parse_header(loom_safetensors *f) {
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; i--) hlen = hlen << 8 | f->map[i];
  uint64_t room = f->map_len - 8;
  if (hlen > room)
    return LOOM_ERROR(DATA_LOSS, "'%s': header length %" PRIu64 " runs past the end of the file (%zu bytes)", f->path,
                      hlen, f->map_len);
  if (hlen > MAX_HEADER)
    return LOOM_ERROR(DATA_LOSS, "'%s': header length %" PRIu64 " is over the limit of %" PRIu64 " bytes", f->path, hlen,
                      MAX_HEADER);
  json_error_t jerr;
  json_t *root = json_loadb((const char *)f->map + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return LOOM_ERROR(DATA_LOSS, "'%s': the header is not valid JSON (line %d, column %d): %s", f->path, jerr.line,
                      jerr.column, jerr.text);
  loom_status st = LOOM_OK;
  span *sp = NULL;
  if (!json_is_object(root)) {
    st = LOOM_ERROR(DATA_LOSS, "'%s': the header is not a JSON object", f->path);
    goto out;
  }
  size_t n = json_object_size(root);
  uint64_t data_len = room - hlen;
  f->tensors = loom_arena_array(&f->arena, n ? n : 1, sizeof *f->tensors, 8);
  f->by_name = loom_arena_array(&f->arena, n ? n : 1, sizeof(size_t), 8);
  sp = malloc((n ? n : 1) * sizeof *sp);
  if (!f->tensors || !f->by_name || !sp) {
    st = LOOM_OOM();
    goto out;
  }
  const char *key;
  json_t *v;
  const uint8_t *data = f->map + 8 + hlen;
  json_object_foreach(root, key, v) {
    if (!strcmp(key, "__metadata__")) {
      const char *mk;
      json_t *mv;
      if (!json_is_object(v)) st = LOOM_ERROR(DATA_LOSS, "'%s': \"__metadata__\" is not a JSON object", f->path);
      else json_object_foreach(v, mk, mv) if (!st && !json_is_string(mv))
        st = LOOM_ERROR(DATA_LOSS, "'%s': \"__metadata__\" entry '%s' is not a string", f->path, mk);
      if (st) goto out;
      continue;
    }
    const char *name = loom_arena_strdup(&f->arena, key);
    if (!name) {
      st = LOOM_OOM();
      goto out;
    }
    loom_safetensors_tensor *t = &f->tensors[f->n];
    if ((st = read_entry(f, name, v, data_len, t, &sp[f->n]))) goto out;
    t->data = data + sp[f->n].begin;
    sp[f->n].index = f->n;
    f->by_name[f->n] = f->n;
    f->n++;
  }
  if ((st = check_layout(f, sp, data_len))) goto out;
  sort_key *ks = malloc((f->n ? f->n : 1) * sizeof *ks);
  if (!ks) {
    st = LOOM_OOM();
    goto out;
  }
  for (size_t i = 0; i < f->n; i++) ks[i] = (sort_key){f->tensors[i].name, 0, i};
  qsort(ks, f->n, sizeof *ks, name_cmp);
  for (size_t i = 0; i < f->n; i++) f->by_name[i] = ks[i].index;
  free(ks);
out:
  free(sp);
  json_decref(root);
  return st;
}

loom_status loom_safetensors_open(loom_allocator *alloc, const char *path, loom_safetensors **out) {
  *out = NULL;
  if (!alloc) alloc = loom_allocator_system();
  int fd;
  uint64_t size;
  LOOM_PROPAGATE(loom_file_open_regular(path, "weights file", LOOM_FILE_LIMIT_WEIGHTS, &fd, &size));
  if (size < 8) {
    close(fd);
    return LOOM_ERROR(DATA_LOSS, "'%s' is %" PRIu64 " bytes: too short for a safetensors file (an 8-byte header length comes first)",
                      path, size);
  }
  void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
  int err = errno;
  close(fd);
  if (map == MAP_FAILED) return LOOM_ERROR(IO_ERROR, "cannot map '%s': %s", path, strerror(err));
  /* a module's weights are all read (packed, bound, called): ask the disk for them now, not a
   * page fault at a time (loom import writes them past the page cache, file_write.h) */
  (void)madvise(map, (size_t)size, MADV_WILLNEED);
  loom_safetensors *f = loom_alloc_zero(alloc, sizeof *f);
  if (!f) {
    munmap(map, (size_t)size);
    return LOOM_OOM();
  }
  f->alloc = alloc;
  loom_arena_init(&f->arena, alloc, 0);
  f->map = map, f->map_len = (size_t)size;
  loom_status st = (f->path = loom_arena_strdup(&f->arena, path)) ? parse_header(f) : LOOM_OOM();
  if (st) {
    loom_safetensors_close(f);
    return st;
  }
  *out = f;
  return LOOM_OK;
}

/* ---- writer ---------------------------------------------------------------- */

/* The header (compact JSON, malloc'd in *out): every tensor in `order`, at consecutive offsets from 0. */
static loom_status build_header(size_t n, const loom_safetensors_tensor *ts, const size_t *order, const char *path,
                                char **out) {
  json_t *root = json_object();
  if (!root) return LOOM_OOM();
  loom_status st = LOOM_OK;
  uint64_t at = 0;
  for (size_t k = 0; k < n && !st; k++) {
    const loom_safetensors_tensor *t = &ts[order[k]];
    const char *dn = loom_safetensors_dtype_name(t->dtype);
    size_t need = loom_dtype_size(t->dtype);
    bool ok = t->rank >= 0 && t->rank <= LOOM_SAFETENSORS_MAX_RANK;
    for (int i = 0; ok && i < t->rank; i++) ok = t->dims[i] >= 0 && loom_size_mul(need, (size_t)t->dims[i], &need);
    if (!dn) st = LOOM_ERROR(UNIMPLEMENTED, "'%s': tensor '%s': dtype %s has no safetensors form", path, t->name, loom_dtype_name(t->dtype));
    else if (!ok || need != t->nbytes) st = LOOM_ERROR(INVALID_ARGUMENT, "'%s': tensor '%s': its shape does not give %zu bytes", path, t->name, t->nbytes);
    else if (!strcmp(t->name, "__metadata__") || json_object_get(root, t->name))
      st = LOOM_ERROR(ALREADY_EXISTS, "'%s': tensor name '%s' is reserved or given twice", path, t->name);
    if (st) break;
    /* json_*_set_new and _append_new take the value's reference even when they fail */
    json_t *e = json_object(), *shape = json_array();
    bool good = e && shape && !json_object_set_new(e, "dtype", json_string(dn));
    for (int i = 0; good && i < t->rank; i++) good = !json_array_append_new(shape, json_integer(t->dims[i]));
    if (good) good = !json_object_set_new(e, "shape", shape);
    else json_decref(shape);
    good = good && !json_object_set_new(e, "data_offsets", json_pack("[II]", (json_int_t)at, (json_int_t)(at + t->nbytes)));
    if (!good) json_decref(e);
    if (!good || json_object_set_new(root, t->name, e))
      st = LOOM_ERROR(RESOURCE_EXHAUSTED, "'%s': cannot add tensor '%s' to the header (out of memory, or a name that is not UTF-8)", path, t->name);
    at += t->nbytes;
  }
  if (!st && !(*out = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER))) st = LOOM_OOM();
  json_decref(root);
  return st;
}

loom_status loom_safetensors_write(const char *path, size_t n, const loom_safetensors_tensor *tensors) {
  sort_key *ks = malloc((n ? n : 1) * sizeof *ks);
  size_t *order = malloc((n ? n : 1) * sizeof *order);
  if (!ks || !order) {
    free(ks), free(order);
    return LOOM_OOM();
  }
  for (size_t i = 0; i < n; i++) ks[i] = (sort_key){NULL, loom_dtype_size(tensors[i].dtype), i};
  qsort(ks, n, sizeof *ks, size_cmp);
  for (size_t i = 0; i < n; i++) order[i] = ks[i].index;
  free(ks);
  char *hdr = NULL;
  loom_status st = build_header(n, tensors, order, path, &hdr);
  if (st) {
    free(order);
    return st;
  }
  size_t hlen = strlen(hdr), padded = (8 + hlen + DATA_ALIGN - 1) / DATA_ALIGN * DATA_ALIGN - 8;
  size_t plen = strlen(path);
  char *tmp = malloc(plen + 16);
  int fd = -1;
  if (tmp) snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path), fd = mkstemp(tmp);
  if (!tmp || fd < 0) {
    st = tmp ? LOOM_ERROR(IO_ERROR, "'%s': cannot create a temporary file next to it: %s", path, strerror(errno)) : LOOM_OOM();
    goto out;
  }
  mode_t mask = umask(0);
  umask(mask);
  (void)fchmod(fd, 0666 & ~mask); /* mkstemp's 0600 -> what a plain create would give */
  /* the header padded with spaces, then each tensor at the next offset (file_write.h: a file
   * of gigabytes bypasses the page cache, bytes from a mapped model are read from its file) */
  uint64_t total = 8 + padded;
  for (size_t k = 0; k < n; k++) total += tensors[k].nbytes;
  char *head = malloc(8 + padded);
  loom_file_writer *w = NULL;
  int err = head ? loom_file_writer_open(fd, 0, total, LOOM_FILE_WRITE_DIRECT_MIN, &w) : ENOMEM;
  bool ok = !err;
  if (ok) {
    for (int i = 0; i < 8; i++) head[i] = (char)((uint64_t)padded >> (8 * i));
    memcpy(head + 8, hdr, hlen);
    memset(head + 8 + hlen, ' ', padded - hlen);
    ok = !(err = loom_file_writer_put(w, head, 8 + padded));
  }
  free(head);
  for (size_t k = 0; ok && k < n; k++) {
    const loom_safetensors_tensor *t = &tensors[order[k]];
    ok = !(err = loom_file_writer_put(w, t->data, t->nbytes));
  }
  if (w) {
    int e = loom_file_writer_close(w);
    if (ok && e) ok = false, err = e;
  }
  if (close(fd) != 0 && ok) ok = false, err = errno;
  if (ok && rename(tmp, path) != 0) ok = false, err = errno;
  if (!ok) {
    st = LOOM_ERROR(IO_ERROR, "'%s': cannot write: %s", path, strerror(err));
    remove(tmp);
  }
out:
  free(tmp);
  free(hdr);
  free(order);
  return st;
}

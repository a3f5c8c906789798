/* onnx_tensor.c — TensorProto to host tensor, external data, and conformance test data.
 *
 * A tensor's bytes come from one of three places: raw_data (little-endian, the common
 * case), a typed repeated field (float_data, int32_data for every type of 16 bits or
 * less, int64_data, double_data, uint64_data), or an external file next to the model.
 * Every size is computed with overflow checks and compared with the bytes present
 * before anything is allocated, so a corrupt dim cannot ask for a huge buffer. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "base/lowp.h"
#include "frontend/onnx/onnx_internal.h"
#include "frontend/onnx/onnx_view.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ONNX raw_data is little-endian; Loom's decoder copies it as is and needs a little-endian host"
#endif

/* ------------------------------------------------------------------------- */
/* Element types                                                              */
/* ------------------------------------------------------------------------- */

typedef struct elem_info {
  int32_t code;
  const char *name;
  int dtype; /* loom_dtype, or -1 when not loaded */
} elem_info;

#define LOOM_DTYPE_NONE (-1)
static const elem_info elems[] = {
#define LOOM_ONNX_TYPE(code, name, dtype) {code, #name, LOOM_DTYPE_##dtype},
#include "frontend/onnx/onnx_types.def"
#undef LOOM_ONNX_TYPE
};

static const elem_info *find_elem(int32_t code) {
  for (size_t i = 0; i < LOOM_ARRAY_LEN(elems); i++)
    if (elems[i].code == code) return &elems[i];
  return NULL;
}

const char *loom_onnx_elem_name(int32_t code) {
  static _Thread_local char buf[32];
  const elem_info *e = find_elem(code);
  if (e) return e->name;
  snprintf(buf, sizeof buf, "type %" PRId32, code);
  return buf;
}

bool loom_onnx_elem_dtype(int32_t code, loom_dtype *out) {
  const elem_info *e = find_elem(code);
  if (!e || e->dtype < 0) return false;
  *out = (loom_dtype)e->dtype;
  return true;
}

/* ------------------------------------------------------------------------- */
/* Files                                                                      */
/* ------------------------------------------------------------------------- */

/* Reads a whole model or tensor file: a regular file within its size limit (base/file.h),
 * refused before a byte is read otherwise. */
loom_status loom_onnx_read_file(const char *path, const char *what, uint8_t **out, size_t *out_len) {
  char *data = NULL;
  size_t len = 0;
  bool model = !strcmp(what, "model");
  LOOM_PROPAGATE(loom_file_read_limited(path, model ? "model file" : "tensor file",
                                        model ? LOOM_FILE_LIMIT_ONNX : LOOM_FILE_LIMIT_NPY, &data, &len));
  *out = (uint8_t *)data;
  *out_len = len;
  return LOOM_OK;
}

/* ------------------------------------------------------------------------- */
/* External data                                                              */
/* ------------------------------------------------------------------------- */

/* Parses a non-negative decimal integer (the whole string). */
static bool parse_u64(const char *s, uint64_t *out) {
  if (!s || !*s) return false;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v)) return false;
  }
  *out = v;
  return true;
}

/* True when `location` is a relative path with no ".." component. */
static bool location_is_contained(const char *location) {
  if (location[0] == '/') return false;
  const char *p = location;
  while (*p) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return false;
    if (!slash) break;
    p = slash + 1;
  }
  return true;
}

/* Where `nbytes` bytes of external data described by `tp`'s external_data entries are: the
 * resolved file (malloc'd, inside the model's directory, a regular file holding them) and the
 * offset in it; `*shown` (malloc'd) is the path as messages name it. */
static loom_status locate_external(const Onnx__TensorProto *tp, const char *file, const char *what, const char *dir,
                                   size_t nbytes, char **out_file, char **shown, uint64_t *out_offset) {
  *out_file = *shown = NULL;
  const char *location = NULL, *offset_s = NULL, *length_s = NULL;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    if (!e || !e->key) continue;
    if (strcmp(e->key, "location") == 0) location = e->value;
    else if (strcmp(e->key, "offset") == 0) offset_s = e->value;
    else if (strcmp(e->key, "length") == 0) length_s = e->value;
  }
  if (!location || !*location)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data without a 'location'", file, what);
  if (!dir)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data '%s' but the model was not loaded from a file",
                      file, what, location);
  if (!location_is_contained(location))
    return LOOM_ERROR(INVALID_ARGUMENT,
                      "%s: %s: external data location '%s' leaves the model's directory (absolute or '..')",
                      file, what, location);
  uint64_t offset = 0, length = nbytes;
  if (offset_s && !parse_u64(offset_s, &offset))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data offset '%s' is not a non-negative integer",
                      file, what, offset_s);
  if (length_s && !parse_u64(length_s, &length))
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data length '%s' is not a non-negative integer",
                      file, what, length_s);
  if (length != nbytes)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data length %" PRIu64 " but the dims need %zu bytes",
                      file, what, length, nbytes);

  size_t plen = strlen(dir) + 1 + strlen(location) + 1;
  char *path = malloc(plen);
  char *real_dir = realpath(dir, NULL);
  char *real_file = NULL;
  loom_status s = LOOM_OK;
  if (!path) {
    s = LOOM_OOM();
    goto done;
  }
  snprintf(path, plen, "%s/%s", dir, location);
  real_file = realpath(path, NULL);
  if (!real_dir || !real_file) {
    s = LOOM_ERROR(NOT_FOUND, "%s: %s: external data file %s: %s", file, what, path, strerror(errno));
    goto done;
  }
  size_t dl = strlen(real_dir);
  if (strncmp(real_file, real_dir, dl) != 0 || (real_file[dl] != '/' && dl != 1)) {
    s = LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: external data file %s resolves outside the model's directory (%s)",
                   file, what, path, real_file);
    goto done;
  }
  struct stat st;
  if (stat(real_file, &st) != 0 || !S_ISREG(st.st_mode)) {
    s = LOOM_ERROR(IO_ERROR, "%s: %s: cannot read external data file %s", file, what, path);
    goto done;
  }
  uint64_t end;
  if (__builtin_add_overflow(offset, length, &end) || end > (uint64_t)st.st_size || offset > (uint64_t)LLONG_MAX) {
    s = LOOM_ERROR(OUT_OF_RANGE, "%s: %s: external data [%" PRIu64 ", +%" PRIu64 ") runs past the end of %s (%lld bytes)",
                   file, what, offset, length, path, (long long)st.st_size);
    goto done;
  }
done:
  free(real_dir);
  if (s) {
    free(real_file);
    free(path);
    return s;
  }
  *out_file = real_file;
  *shown = path;
  *out_offset = offset;
  return LOOM_OK;
}

/* Reads `nbytes` bytes of external data into `dst`. */
static loom_status read_external(const Onnx__TensorProto *tp, const char *file, const char *what, const char *dir,
                                 size_t nbytes, void *dst) {
  char *real_file, *path;
  uint64_t offset;
  LOOM_PROPAGATE(locate_external(tp, file, what, dir, nbytes, &real_file, &path, &offset));
  loom_status s = LOOM_OK;
  FILE *f = fopen(real_file, "rb");
  if (!f || fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(dst, 1, nbytes, f) != nbytes)
    s = LOOM_ERROR(IO_ERROR, "%s: %s: reading %zu bytes at offset %" PRIu64 " of %s failed", file, what, nbytes,
                   offset, path);
  if (f) fclose(f);
  free(real_file);
  free(path);
  return s;
}

/* The external data in place, in the keeper's mapping of its file (mapped once per file, read
 * only, unmapped by loom_onnx_model_free); NULL in *out when its offset is not 16-byte aligned
 * (the caller copies it). */
static loom_status map_external(const Onnx__TensorProto *tp, const char *file, const char *what, const char *dir,
                                size_t nbytes, loom_onnx_model *keeper, const void **out) {
  *out = NULL;
  char *real_file, *path;
  uint64_t offset;
  LOOM_PROPAGATE(locate_external(tp, file, what, dir, nbytes, &real_file, &path, &offset));
  loom_status s = LOOM_OK;
  loom_onnx_mapping *mp = NULL;
  for (size_t i = 0; i < keeper->nmaps && !mp; i++)
    if (!strcmp(keeper->maps[i].path, real_file)) mp = &keeper->maps[i];
  if (!mp) {
    loom_onnx_mapping *grown = realloc(keeper->maps, (keeper->nmaps + 1) * sizeof *grown);
    int fd = grown ? open(real_file, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (grown) keeper->maps = grown;
    if (!grown) s = LOOM_OOM();
    else if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0)
      s = LOOM_ERROR(IO_ERROR, "%s: %s: cannot read external data file %s", file, what, path);
    else {
      loom_file_id fid; /* before the mapping, as loom_file_map_limited_id */
      bool has_id = loom_file_id_of_fd(fd, &fid);
      void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (base == MAP_FAILED) s = LOOM_ERROR(IO_ERROR, "%s: %s: cannot map external data file %s: %s", file, what, path, strerror(errno));
      else {
        mp = &keeper->maps[keeper->nmaps++];
        *mp = (loom_onnx_mapping){.path = real_file, .base = base, .len = (size_t)st.st_size};
        mp->has_id = has_id, mp->id = fid;
        real_file = NULL; /* the mapping keeps it */
      }
    }
    if (fd >= 0) close(fd);
  }
  /* the file may have shrunk since it was mapped (another tensor's check saw its size then) */
  if (!s && (offset > mp->len || nbytes > mp->len - offset))
    s = LOOM_ERROR(OUT_OF_RANGE, "%s: %s: external data [%" PRIu64 ", +%zu) runs past the end of %s (%zu bytes mapped)",
                   file, what, offset, nbytes, path, mp->len);
  if (!s && offset % 16 == 0) *out = (const uint8_t *)mp->base + offset;
  free(real_file);
  free(path);
  return s;
}

/* ------------------------------------------------------------------------- */
/* TensorProto -> host tensor                                                 */
/* ------------------------------------------------------------------------- */

/* Checks that a typed field holds exactly `numel` values. */
static loom_status check_count(const char *file, const char *what, const char *field,
                               size_t have, int64_t numel) {
  if ((uint64_t)numel == (uint64_t)have) return LOOM_OK;
  return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: %s holds %zu values but the dims need %" PRId64, file,
                    what, field, have, numel);
}

/* Copies the typed field's `n` values into `dst` (packed types: their n packed bytes into `packed`). */
static loom_status decode_typed(const Onnx__TensorProto *tp, const char *file, const char *what, loom_dtype dt,
                                size_t n, void *dst, uint8_t *packed) {
  switch (dt) {
  case LOOM_DTYPE_F32: memcpy(dst, tp->float_data, n * 4); break;
  case LOOM_DTYPE_I32: memcpy(dst, tp->int32_data, n * 4); break;
  case LOOM_DTYPE_I64: memcpy(dst, tp->int64_data, n * 8); break;
  case LOOM_DTYPE_F64: memcpy(dst, tp->double_data, n * 8); break;
  case LOOM_DTYPE_U64: memcpy(dst, tp->uint64_data, n * 8); break;
  case LOOM_DTYPE_U32:
    for (size_t i = 0; i < n; i++) ((uint32_t *)dst)[i] = (uint32_t)tp->uint64_data[i];
    break;
  case LOOM_DTYPE_BOOL:
    for (size_t i = 0; i < n; i++) ((uint8_t *)dst)[i] = tp->int32_data[i] != 0;
    break;
  case LOOM_DTYPE_I16: case LOOM_DTYPE_U16: case LOOM_DTYPE_F16: case LOOM_DTYPE_BF16:
    /* 16-bit types travel in int32_data; half floats as their bit patterns. */
    for (size_t i = 0; i < n; i++) ((uint16_t *)dst)[i] = (uint16_t)(uint32_t)tp->int32_data[i];
    break;
  default:
    if (loom_dtype_size(dt) != 1)
      return LOOM_ERROR(INTERNAL, "%s: %s: no typed-field decoder for %s", file, what, loom_dtype_name(dt));
    /* i8, u8, float8 (bit patterns), and the packed bytes of the 4- / 2-bit types */
    for (size_t i = 0; i < n; i++) packed[i] = (uint8_t)(uint32_t)tp->int32_data[i];
    break;
  }
  return LOOM_OK;
}

/* One element per byte from the packed 4- / 2-bit codes (signed integers sign-extended). */
static void unpack(loom_dtype dt, const uint8_t *packed, size_t n, uint8_t *dst) {
  unsigned width = loom_dtype_width(dt), per = 8 / width, mask = (1u << width) - 1;
  for (size_t i = 0; i < n; i++) {
    uint8_t code = (uint8_t)((packed[i / per] >> ((i % per) * width)) & mask);
    dst[i] = loom_dtype_is_int(dt) ? loom_lowp_from_i64(dt, code) : code;
  }
}

/* A STRING tensor: string_data's entries (bytes, any content) copied into `arena`, each element
 * a loom_str handle to its copy (NUL-terminated there, the NUL not counted). raw_data and
 * external data do not hold strings (onnx.proto): refused by name. */
static loom_status decode_strings(const Onnx__TensorProto *tp, const char *file, const char *what, loom_arena *arena,
                                  loom_onnx_tensor *out) {
  bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (tp->has_raw_data || external)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: a STRING tensor keeps its elements in string_data, not in %s", file,
                      what, external ? "external data" : "raw_data");
  LOOM_PROPAGATE(check_count(file, what, "string_data", tp->n_string_data, out->numel));
  if (!out->nbytes) return LOOM_OK;
  loom_str *e = loom_arena_alloc(arena, out->nbytes, 16);
  if (!e) return LOOM_ERROR(RESOURCE_EXHAUSTED, "%s: %s: out of memory for %zu bytes", file, what, out->nbytes);
  out->data = e;
  for (size_t i = 0; i < tp->n_string_data; i++) {
    size_t len = tp->string_data[i].len;
    char *b = len ? loom_arena_alloc(arena, len + 1, 1) : NULL;
    if (len && !b) return LOOM_ERROR(RESOURCE_EXHAUSTED, "%s: %s: out of memory for string element %zu", file, what, i);
    if (len) memcpy(b, tp->string_data[i].data, len), b[len] = 0;
    e[i] = (loom_str){b, len};
  }
  return LOOM_OK;
}

loom_status loom_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *file, const char *what,
                                    const char *dir, loom_onnx_model *keeper, loom_arena *arena,
                                    loom_onnx_tensor *out) {
  const char *name = tp->name ? tp->name : "";
  memset(out, 0, sizeof *out);
  out->name = loom_arena_strdup(arena, name);
  if (!out->name) return LOOM_OOM();
  if (!tp->has_data_type || tp->data_type == 0)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s has no element type", file, what);
  loom_dtype dt;
  if (!loom_onnx_elem_dtype(tp->data_type, &dt))
    return LOOM_ERROR(UNIMPLEMENTED, "%s: %s: element type %s is not supported", file, what,
                      loom_onnx_elem_name(tp->data_type));
  out->dtype = dt;
  if (tp->segment)
    return LOOM_ERROR(UNIMPLEMENTED, "%s: %s: segmented tensors are not supported", file, what);

  /* Dims and sizes, overflow-checked. */
  out->rank = tp->n_dims;
  out->dims = LOOM_ARENA_ARRAY(arena, int64_t, tp->n_dims ? tp->n_dims : 1);
  if (!out->dims) return LOOM_OOM();
  int64_t numel = 1;
  for (size_t i = 0; i < tp->n_dims; i++) {
    int64_t d = tp->dims[i];
    if (d < 0)
      return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: dim %zu is %" PRId64 " (negative)", file, what, i, d);
    if (__builtin_mul_overflow(numel, d, &numel))
      return LOOM_ERROR(OUT_OF_RANGE, "%s: %s: the element count overflows int64 at dim %zu", file, what, i);
    out->dims[i] = d;
  }
  size_t esize = loom_dtype_size(dt), nbytes;
  if ((uint64_t)numel > SIZE_MAX || !loom_size_mul((size_t)numel, esize, &nbytes))
    return LOOM_ERROR(OUT_OF_RANGE, "%s: %s: %" PRId64 " elements of %s overflow the byte size", file,
                      what, numel, loom_dtype_name(dt));
  out->numel = numel;
  out->nbytes = nbytes;
  if (dt == LOOM_DTYPE_STRING) return decode_strings(tp, file, what, arena, out);
  /* 4- and 2-bit types are packed in the file, first element in the low bits */
  unsigned width = loom_dtype_width(dt), per = 8 / width;
  size_t fbytes = width < 8 ? (size_t)numel / per + ((size_t)numel % per != 0) : nbytes;

  /* Where the bytes are, and whether there are as many as the dims say. */
  /* raw_data: in the unpacked proto, or left in the model file (a view, onnx_view.c) */
  loom_onnx_view view = {0};
  bool viewed = keeper && loom_onnx_view_of(tp, keeper->views, keeper->nviews, &view);
  bool has_raw = tp->has_raw_data || viewed;
  const uint8_t *raw = viewed ? view.data : tp->raw_data.data;
  size_t raw_len = viewed ? view.len : tp->raw_data.len;
  bool external = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  if (tp->has_data_location && !external && tp->data_location != ONNX__TENSOR_PROTO__DATA_LOCATION__DEFAULT)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: unknown data_location %d", file, what,
                      (int)tp->data_location);
  if (!external && has_raw && raw_len != fbytes)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %s: raw_data has %zu bytes but %s dims need %zu", file,
                      what, raw_len, loom_dtype_name(dt), fbytes);
  if (!external && !has_raw) {
    size_t have;
    const char *field;
    switch (dt) {
    case LOOM_DTYPE_F32: have = tp->n_float_data, field = "float_data"; break;
    case LOOM_DTYPE_I64: have = tp->n_int64_data, field = "int64_data"; break;
    case LOOM_DTYPE_F64: have = tp->n_double_data, field = "double_data"; break;
    case LOOM_DTYPE_U32: case LOOM_DTYPE_U64: have = tp->n_uint64_data, field = "uint64_data"; break;
    default: have = tp->n_int32_data, field = "int32_data"; break; /* packed types: one byte per entry */
    }
    LOOM_PROPAGATE(check_count(file, what, field, have, width < 8 ? (int64_t)fbytes : numel));
  }
  if (nbytes == 0) return LOOM_OK;
  if (viewed && !external && width >= 8) {
    out->data = (void *)raw; /* in place in the file's mapping, at any alignment; read only */
    keeper->view_bytes += nbytes;
    return LOOM_OK;
  }
  if (keeper && !external && has_raw && width >= 8 && (uintptr_t)raw % 16 == 0) {
    out->data = (void *)raw; /* in place: the model keeps tp */
    return LOOM_OK;
  }
  if (keeper && external && width >= 8) {
    const void *at;
    LOOM_PROPAGATE(map_external(tp, file, what, dir, nbytes, keeper, &at));
    if (at) {
      out->data = (void *)at; /* in place, read only: constants are never written */
      return LOOM_OK;
    }
  }
  out->data = loom_arena_alloc(arena, nbytes, 16);
  uint8_t *packed = width < 8 ? loom_arena_alloc(arena, fbytes, 16) : out->data;
  if (!out->data || !packed)
    return LOOM_ERROR(RESOURCE_EXHAUSTED, "%s: %s: out of memory for %zu bytes", file, what, nbytes);

  if (external) LOOM_PROPAGATE(read_external(tp, file, what, dir, fbytes, packed));
  else if (has_raw) memcpy(packed, raw, fbytes);
  else LOOM_PROPAGATE(decode_typed(tp, file, what, dt, width < 8 ? fbytes : (size_t)numel, out->data, packed));
  if (width < 8) unpack(dt, packed, (size_t)numel, out->data);
  return LOOM_OK;
}

/* ------------------------------------------------------------------------- */
/* Standalone tensors and test data                                           */
/* ------------------------------------------------------------------------- */

loom_status loom_onnx_tensor_parse(const void *bytes, size_t len, const char *name, loom_arena *arena,
                                   loom_onnx_tensor **out) {
  if (!bytes) bytes = ""; /* (NULL, 0): no pointer arithmetic on NULL below */
  LOOM_PROPAGATE(loom_onnx_wire_check(bytes, len, LOOM_ONNX_WIRE_TENSOR, name));
  Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, bytes);
  if (!tp) return LOOM_ERROR(DATA_LOSS, "%s: not a valid TensorProto (%zu bytes do not parse)", name, len);
  loom_onnx_tensor *t = LOOM_ARENA_NEW(arena, loom_onnx_tensor);
  char what[256];
  if (tp->name && *tp->name) snprintf(what, sizeof what, "tensor '%s'", tp->name);
  else snprintf(what, sizeof what, "tensor");
  loom_status s = t ? loom_onnx_tensor_decode(tp, name, what, NULL, NULL, arena, t) : LOOM_OOM();
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (s) return s;
  *out = t;
  return LOOM_OK;
}

loom_status loom_onnx_tensor_load(const char *path, loom_arena *arena, loom_onnx_tensor **out) {
  uint8_t *buf;
  size_t len;
  LOOM_PROPAGATE(loom_onnx_read_file(path, "tensor", &buf, &len));
  loom_status s = loom_onnx_tensor_parse(buf, len, path, arena, out);
  free(buf);
  return s;
}

static const char *type_kind_name(loom_onnx_type_kind k) {
  switch (k) {
  case LOOM_ONNX_TYPE_NONE: return "untyped value";
  case LOOM_ONNX_TYPE_TENSOR: return "tensor";
  case LOOM_ONNX_TYPE_SEQUENCE: return "sequence";
  case LOOM_ONNX_TYPE_MAP: return "map";
  case LOOM_ONNX_TYPE_OPTIONAL: return "optional";
  case LOOM_ONNX_TYPE_SPARSE_TENSOR: return "sparse tensor";
  }
  return "?";
}

loom_status loom_onnx_tensor_check(const char *path, const loom_onnx_tensor *t, const loom_onnx_value *v) {
  if (v->kind != LOOM_ONNX_TYPE_TENSOR) return LOOM_OK;
  loom_dtype want;
  if (v->elem_type && loom_onnx_elem_dtype(v->elem_type, &want) && want != t->dtype)
    return LOOM_ERROR(TYPE_ERROR, "%s: holds %s but the model declares '%s' as %s", path, loom_dtype_name(t->dtype),
                      v->name, loom_onnx_elem_name(v->elem_type));
  if (!v->has_shape) return LOOM_OK;
  if (v->rank != t->rank)
    return LOOM_ERROR(TYPE_ERROR, "%s: has rank %zu but the model declares '%s' with rank %zu", path, t->rank, v->name,
                      v->rank);
  for (size_t i = 0; i < v->rank; i++)
    if (v->dims[i].kind == LOOM_ONNX_DIM_VALUE && v->dims[i].value != t->dims[i])
      return LOOM_ERROR(TYPE_ERROR, "%s: dim %zu is %" PRId64 " but the model declares '%s' with %" PRId64, path, i,
                        t->dims[i], v->name, v->dims[i].value);
  return LOOM_OK;
}

/* Reads a protobuf varint at *p (below end); false when truncated or longer than 10 bytes. */
static bool wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out) {
  uint64_t v = 0;
  for (int sh = 0; sh < 70 && *p < end; sh += 7) {
    uint8_t b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* Parses a SequenceProto (`optional` false) or an OptionalProto (onnx-data.proto; protobuf-c has
 * no code for them: onnx.proto does not define them) declared as `v` into out. Their fields:
 * 1 name, 2 elem_type, 3 tensor value(s), 4 sparse, 5 sequence value(s), 6 map, 7 optional
 * value(s) (repeated in a SequenceProto, one in an OptionalProto). Items are parsed by the
 * declared element type `v->elem` when known, else by the field they sit in. */
static loom_status parse_list(const uint8_t *b, size_t len, const char *path, const loom_onnx_value *v, int depth,
                              loom_arena *arena, loom_onnx_tensor *out) {
  bool optional = v->kind == LOOM_ONNX_TYPE_OPTIONAL;
  const char *what = optional ? "OptionalProto" : "SequenceProto";
  if (depth > 16) return LOOM_ERROR(UNIMPLEMENTED, "%s: lists nested more than 16 deep", path);
  memset(out, 0, sizeof *out);
  out->name = "";
  out->kind = (int)v->kind;
  out->dtype = LOOM_DTYPE_COUNT; /* no dtype: a list */
  size_t cap = 0;
  const uint8_t *p = b, *end = b + len;
  while (p < end) {
    uint64_t tag, n = 0;
    if (!wire_varint(&p, end, &tag)) return LOOM_ERROR(DATA_LOSS, "%s: %s: a truncated field tag", path, what);
    uint32_t field = (uint32_t)(tag >> 3), wt = (uint32_t)(tag & 7);
    if (wt == 0) {
      if (!wire_varint(&p, end, &n)) return LOOM_ERROR(DATA_LOSS, "%s: %s: field %u is truncated", path, what, field);
      continue;
    }
    if (wt == 1 || wt == 5) {
      size_t k = wt == 1 ? 8 : 4;
      if ((size_t)(end - p) < k) return LOOM_ERROR(DATA_LOSS, "%s: %s: field %u is truncated", path, what, field);
      p += k;
      continue;
    }
    if (wt != 2 || !wire_varint(&p, end, &n) || n > (uint64_t)(end - p))
      return LOOM_ERROR(DATA_LOSS, "%s: %s: field %u has a bad wire type or length", path, what, field);
    const uint8_t *body = p;
    p += n;
    if (field == 1) {
      char *nm = loom_arena_alloc(arena, n + 1, 1);
      if (!nm) return LOOM_OOM();
      memcpy(nm, body, n);
      nm[n] = 0;
      out->name = nm;
      continue;
    }
    if (field != 3 && field != 5 && field != 7) {
      if (field == 4 || field == 6)
        return LOOM_ERROR(UNIMPLEMENTED, "%s: %s '%s' holds %s", path, what, v->name, field == 4 ? "sparse tensors" : "maps");
      continue;
    }
    if (optional && out->nitems) return LOOM_ERROR(DATA_LOSS, "%s: OptionalProto holds more than one value", path);
    loom_onnx_tensor *it = LOOM_ARENA_NEW(arena, loom_onnx_tensor);
    if (!it) return LOOM_OOM();
    const loom_onnx_value *ev = v->elem;
    if (field == 3) {
      loom_onnx_tensor *t;
      LOOM_PROPAGATE(loom_onnx_tensor_parse(body, (size_t)n, path, arena, &t));
      *it = *t;
    } else {
      loom_onnx_value inner = {.name = v->name, .kind = field == 5 ? LOOM_ONNX_TYPE_SEQUENCE : LOOM_ONNX_TYPE_OPTIONAL};
      if (ev && ev->kind == inner.kind) inner = *ev;
      LOOM_PROPAGATE(parse_list(body, (size_t)n, path, &inner, depth + 1, arena, it));
    }
    if (out->nitems == cap) {
      size_t nc = cap ? 2 * cap : 4;
      loom_onnx_tensor **ni = LOOM_ARENA_ARRAY(arena, loom_onnx_tensor *, nc);
      if (!ni) return LOOM_OOM();
      if (cap) memcpy(ni, out->items, cap * sizeof *ni);
      out->items = ni, cap = nc;
    }
    out->items[out->nitems++] = it;
  }
  return LOOM_OK;
}

/* Loads one test-data file declared as a sequence or optional `v`. */
static loom_status load_list(const char *path, const loom_onnx_value *v, loom_arena *arena, loom_onnx_tensor **out) {
  uint8_t *buf;
  size_t len;
  LOOM_PROPAGATE(loom_onnx_read_file(path, "test data", &buf, &len));
  loom_onnx_tensor *t = LOOM_ARENA_NEW(arena, loom_onnx_tensor);
  loom_status s = t ? parse_list(buf, len, path, v, 0, arena, t) : LOOM_OOM();
  free(buf);
  if (!s) *out = t;
  return s;
}

/* Loads `dir`/`prefix`_K.pb for K = 0.. into a vector; `decl` are the values they stand for. */
static loom_status load_series(const char *dir, const char *prefix, const loom_onnx_value *const *decl, size_t n_decl,
                               loom_onnx_test_set *ts, loom_onnx_tensor ***out, size_t *out_n) {
  size_t n = 0;
  char path[4096];
  for (;;) {
    snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, prefix, n);
    if (access(path, F_OK) != 0) break;
    n++;
  }
  loom_onnx_tensor **arr = LOOM_ARENA_ARRAY(&ts->arena, loom_onnx_tensor *, n ? n : 1);
  if (!arr) return LOOM_OOM();
  if (n > n_decl)
    return LOOM_ERROR(INVALID_ARGUMENT, "%s: %zu %s files but the model has %zu graph %ss", dir, n, prefix, n_decl,
                      prefix);
  for (size_t k = 0; k < n; k++) {
    snprintf(path, sizeof path, "%s/%s_%zu.pb", dir, prefix, k);
    const loom_onnx_value *v = decl[k];
    if (v->kind == LOOM_ONNX_TYPE_SEQUENCE || v->kind == LOOM_ONNX_TYPE_OPTIONAL) {
      LOOM_PROPAGATE(load_list(path, v, &ts->arena, &arr[k]));
      continue;
    }
    if (v->kind != LOOM_ONNX_TYPE_TENSOR && v->kind != LOOM_ONNX_TYPE_NONE)
      return LOOM_ERROR(UNIMPLEMENTED, "%s: graph %s '%s' is a %s: %s test data is not supported", path, prefix,
                        v->name, type_kind_name(v->kind), type_kind_name(v->kind));
    LOOM_PROPAGATE(loom_onnx_tensor_load(path, &ts->arena, &arr[k]));
    LOOM_PROPAGATE(loom_onnx_tensor_check(path, arr[k], v));
  }
  *out = arr;
  *out_n = n;
  return LOOM_OK;
}

loom_status loom_onnx_test_set_load(const char *dir, const loom_onnx_model *m, loom_onnx_test_set **out) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
    return LOOM_ERROR(NOT_FOUND, "%s: not a test data directory", dir);
  loom_onnx_test_set *ts = calloc(1, sizeof *ts);
  if (!ts) return LOOM_OOM();
  loom_arena_init(&ts->arena, NULL, 0);
  const loom_onnx_graph *g = m->graph;
  /* Test inputs feed the graph inputs that no initializer provides, in order. */
  const loom_onnx_value **ins = LOOM_ARENA_ARRAY(&ts->arena, const loom_onnx_value *, g->n_inputs + 1);
  const loom_onnx_value **outs = LOOM_ARENA_ARRAY(&ts->arena, const loom_onnx_value *, g->n_outputs + 1);
  loom_status s = LOOM_OK;
  if (!ins || !outs) {
    s = LOOM_OOM();
    goto fail;
  }
  size_t n_ins = 0;
  for (size_t i = 0; i < g->n_inputs; i++)
    if (!loom_onnx_graph_find_initializer(g, g->inputs[i].name)) ins[n_ins++] = &g->inputs[i];
  for (size_t i = 0; i < g->n_outputs; i++) outs[i] = &g->outputs[i];
  s = load_series(dir, "input", ins, n_ins, ts, &ts->inputs, &ts->n_inputs);
  if (!s) s = load_series(dir, "output", outs, g->n_outputs, ts, &ts->outputs, &ts->n_outputs);
  if (s) goto fail;
  *out = ts;
  return LOOM_OK;
fail:
  loom_onnx_test_set_free(ts);
  return s;
}

void loom_onnx_test_set_free(loom_onnx_test_set *ts) {
  if (!ts) return;
  loom_arena_destroy(&ts->arena);
  free(ts);
}

/* test_weights.c — safetensors weights files (graph/safetensors.h) and the text form that refers to
 * them (`const @w: ... = weights("file", "tensor")`, docs/ir.md): the writer's output read back
 * bit for bit and aligned, constants pointing into the mapping, print/parse round trips, and every
 * kind of bad file refused with a message naming the file and the tensor. */
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/file.h"
#include "graph/safetensors.h"
#include "tests/graph/graph_test_util.h"

int loom_fuzz_safetensors_one(const uint8_t *data, size_t size); /* tests/fuzz/fuzz_safetensors.c */

/* A fresh temporary directory (malloc'd path). */
static char *tmp_dir(void) {
  char *d = strdup("/tmp/loom-weights-XXXXXX");
  cr_assert(d && mkdtemp(d), "mkdtemp");
  return d;
}

static void rm_dir(char *d) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", d);
  cr_assert_eq(system(cmd), 0);
  free(d);
}

/* Writes `len` bytes to dir/name. */
static void put_file(const char *dir, const char *name, const void *data, size_t len) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  cr_assert(f);
  cr_assert_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* A safetensors file from a header text and `dlen` data bytes (the 8-byte length is the header's
 * unless `hlen` is given (not UINT64_MAX)). */
static void put_st(const char *dir, const char *name, const char *hdr, uint64_t hlen, size_t dlen) {
  size_t n = strlen(hdr);
  if (hlen == UINT64_MAX) hlen = n;
  unsigned char *b = calloc(1, 8 + n + dlen + 1);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(hlen >> (8 * i));
  memcpy(b + 8, hdr, n);
  for (size_t i = 0; i < dlen; i++) b[8 + n + i] = (unsigned char)i;
  put_file(dir, name, b, 8 + n + dlen);
  free(b);
}

/* Opens dir/name and expects failure with a message containing each of `want` (NULL-ended). */
static void expect_bad(const char *dir, const char *name, const char *const *want) {
  char path[600];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  loom_safetensors *f = NULL;
  loom_status st = loom_safetensors_open(NULL, path, &f);
  cr_assert(st, "%s opened", name);
  cr_assert_null(f);
  const char *msg = loom_status_message(st);
  cr_expect(strstr(msg, path), "message does not name the file: %s", msg);
  for (size_t i = 0; want[i]; i++) cr_expect(strstr(msg, want[i]), "%s: '%s' not in: %s", name, want[i], msg);
  loom_status_free(st);
}

LOOM_TEST(weights, write_read_round_trip) {
  char *dir = tmp_dir();
  float w[3 * 5];
  for (int i = 0; i < 15; i++) w[i] = (float)i * 0.25f - 1.0f;
  int8_t s[7] = {-3, -2, -1, 0, 1, 2, 3};
  double dd[2] = {1.5, -2.25};
  uint16_t h[3] = {0x3c00, 0x4000, 0xc000};
  int64_t wd[] = {3, 5}, sd[] = {7}, hd[] = {3};
  loom_safetensors_tensor ts[] = {
      {"small", LOOM_DTYPE_I8, 1, sd, s, sizeof s},     {"w", LOOM_DTYPE_F32, 2, wd, w, sizeof w},
      {"half", LOOM_DTYPE_F16, 1, hd, h, sizeof h},     {"scalar", LOOM_DTYPE_F64, 0, NULL, dd, 8},
      {"empty", LOOM_DTYPE_F32, 1, (int64_t[]){0}, w, 0}, {"d", LOOM_DTYPE_F64, 1, (int64_t[]){2}, dd, sizeof dd},
  };
  char path[600];
  snprintf(path, sizeof path, "%s/a.safetensors", dir);
  loom_status st = loom_safetensors_write(path, 6, ts);
  cr_assert(!st, "%s", loom_status_message(st));
  loom_safetensors *f;
  st = loom_safetensors_open(NULL, path, &f);
  cr_assert(!st, "%s", loom_status_message(st));
  cr_assert_eq(loom_safetensors_count(f), 6);
  for (size_t i = 0; i < 6; i++) {
    const loom_safetensors_tensor *t = loom_safetensors_find(f, ts[i].name);
    cr_assert(t, "no %s", ts[i].name);
    cr_expect_eq(t->dtype, ts[i].dtype);
    cr_expect_eq(t->rank, ts[i].rank);
    for (int k = 0; k < t->rank; k++) cr_expect_eq(t->dims[k], ts[i].dims[k]);
    cr_assert_eq(t->nbytes, ts[i].nbytes);
    cr_expect(!t->nbytes || !memcmp(t->data, ts[i].data, t->nbytes), "%s differs", t->name);
    cr_expect_eq((uintptr_t)t->data % loom_dtype_size(t->dtype), 0, "%s is not aligned", t->name);
  }
  cr_expect_null(loom_safetensors_find(f, "nope"));
  /* The data section starts 64-aligned. */
  FILE *fp = fopen(path, "rb");
  unsigned char len8[8];
  cr_assert_eq(fread(len8, 1, 8, fp), 8);
  fclose(fp);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--) hl = hl << 8 | len8[i];
  cr_expect_eq((8 + hl) % 64, 0);
  loom_safetensors_close(f);
  /* Duplicate names and dtypes without a safetensors form are refused by the writer. */
  loom_safetensors_tensor dup[] = {ts[1], ts[1]};
  st = loom_safetensors_write(path, 2, dup);
  cr_assert(st && strstr(loom_status_message(st), "'w'"));
  loom_status_free(st);
  loom_safetensors_tensor i4 = {"q", LOOM_DTYPE_I4, 1, sd, s, sizeof s};
  st = loom_safetensors_write(path, 1, &i4);
  cr_assert(st && strstr(loom_status_message(st), "i4"));
  loom_status_free(st);
  rm_dir(dir);
}

/* Tensors whose bytes lie in a read-only file mapping (as the importer maps an ONNX model's
 * external data) are copied file to file by the kernel; the result is byte for byte what
 * writing them from memory gives, wherever they sit in the mapping, whatever their size (one
 * of 1 MiB + 1 bytes, one not at a page boundary, one over the end of the mapping's first
 * page, one beside from the heap). */
LOOM_TEST(weights, tensors_in_a_file_mapping_are_copied_by_the_kernel) {
  char *dir = tmp_dir();
  enum { SRC = 3 << 20 };
  uint8_t *bytes = malloc(SRC);
  for (size_t i = 0; i < SRC; i++) bytes[i] = (uint8_t)(i * 2654435761u >> 13);
  put_file(dir, "src.data", bytes, SRC);
  char src[600], a[600], b[600];
  snprintf(src, sizeof src, "%s/src.data", dir);
  snprintf(a, sizeof a, "%s/a.safetensors", dir);
  snprintf(b, sizeof b, "%s/b.safetensors", dir);
  const void *map;
  size_t len;
  cr_assert_null(loom_file_map_limited(src, "test data", SRC, &map, &len));
  const uint8_t *m = map;
  /* where the bytes come from */
  int fd;
  uint64_t off;
  cr_assert(loom_file_mapping_of(m + 4096 + 64, 1 << 20, &fd, &off));
  cr_assert_eq(off, 4096 + 64);
  close(fd);
  cr_assert(!loom_file_mapping_of(bytes, 1 << 20, &fd, &off), "heap memory is no file");
  cr_assert_eq(fd, -1);
  cr_assert(!loom_file_mapping_of(m + SRC - 16, 4096, &fd, &off), "past the mapping's end");
  int64_t d0[] = {(1 << 20) + 1}, d1[] = {(1 << 20) / 4}, d2[] = {(1 << 20) / 4}, d3[] = {16};
  loom_safetensors_tensor ts[] = {
      {"odd", LOOM_DTYPE_U8, 1, d0, m + 16, (1 << 20) + 1},
      {"w", LOOM_DTYPE_F32, 1, d1, m + (2 << 20) - 4096 + 64, 1 << 20},
      {"heap", LOOM_DTYPE_F32, 1, d2, bytes + 128, 1 << 20},
      {"small", LOOM_DTYPE_F32, 1, d3, m + 4096, 64},
  };
  loom_safetensors_tensor heap[4];
  for (int i = 0; i < 4; i++) heap[i] = ts[i], heap[i].data = bytes + ((const uint8_t *)ts[i].data - m) * (i != 2);
  heap[2].data = bytes + 128;
  loom_status st = loom_safetensors_write(a, 4, ts);
  cr_assert_null(st, "%s", loom_status_message(st));
  st = loom_safetensors_write(b, 4, heap);
  cr_assert_null(st, "%s", loom_status_message(st));
  size_t la, lb;
  char *fa, *fb;
  cr_assert_null(loom_file_read_limited(a, "a", 1u << 30, &fa, &la));
  cr_assert_null(loom_file_read_limited(b, "b", 1u << 30, &fb, &lb));
  cr_assert_eq(la, lb);
  cr_assert(!memcmp(fa, fb, la), "the kernel's copy differs from the bytes written from memory");
  loom_safetensors *f;
  cr_assert_null(loom_safetensors_open(NULL, a, &f));
  for (int i = 0; i < 4; i++) {
    const loom_safetensors_tensor *t = loom_safetensors_find(f, ts[i].name);
    cr_assert(t && t->nbytes == ts[i].nbytes && !memcmp(t->data, heap[i].data, t->nbytes), "%s", ts[i].name);
  }
  loom_safetensors_close(f);
  free(fa), free(fb), free(bytes);
  loom_file_unmap(map, len);
  rm_dir(dir);
}

LOOM_TEST(weights, bad_files) {
  char *dir = tmp_dir();
  put_file(dir, "short", "abc", 3);
  expect_bad(dir, "short", (const char *[]){"3 bytes", "too short", NULL});
  put_st(dir, "hlen", "{}", 1000, 0);
  expect_bad(dir, "hlen", (const char *[]){"header length 1000 runs past the end", NULL});
  put_st(dir, "json", "{\"w\": {\"dtype\": \"F32\", ", UINT64_MAX, 0);
  expect_bad(dir, "json", (const char *[]){"not valid JSON", NULL});
  put_st(dir, "array", "[1, 2]", UINT64_MAX, 0);
  expect_bad(dir, "array", (const char *[]){"not a JSON object", NULL});
  put_st(dir, "dup", "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                      "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", UINT64_MAX, 2);
  expect_bad(dir, "dup", (const char *[]){"not valid JSON", "duplicate", NULL});
  put_st(dir, "dtype", "{\"w\":{\"dtype\":\"F7\",\"shape\":[1],\"data_offsets\":[0,1]}}", UINT64_MAX, 1);
  expect_bad(dir, "dtype", (const char *[]){"tensor 'w'", "unknown dtype \"F7\"", NULL});
  put_st(dir, "size", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2, 3],\"data_offsets\":[0,20]}}", UINT64_MAX, 20);
  expect_bad(dir, "size", (const char *[]){"tensor 'w'", "[2, 3]", "needs 24 bytes", "give 20", NULL});
  put_st(dir, "range", "{\"w\":{\"dtype\":\"U8\",\"shape\":[8],\"data_offsets\":[0,8]}}", UINT64_MAX, 5);
  expect_bad(dir, "range", (const char *[]){"tensor 'w'", "run past the data section (5 bytes)", NULL});
  put_st(dir, "overlap", "{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                          "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", UINT64_MAX, 6);
  expect_bad(dir, "overlap", (const char *[]){"'a' and 'b' overlap", NULL});
  put_st(dir, "hole", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
                       "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]}}", UINT64_MAX, 6);
  expect_bad(dir, "hole", (const char *[]){"[2, 4)", "belong to no tensor", "'b'", NULL});
  put_st(dir, "tail", "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", UINT64_MAX, 9);
  expect_bad(dir, "tail", (const char *[]){"9 bytes", "cover 2", NULL});
  put_st(dir, "rev", "{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[3,2]}}", UINT64_MAX, 3);
  expect_bad(dir, "rev", (const char *[]){"tensor 'a'", "end before they begin", NULL});
  put_st(dir, "neg", "{\"a\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,0]}}", UINT64_MAX, 0);
  expect_bad(dir, "neg", (const char *[]){"tensor 'a'", "shape entry 0", NULL});
  put_st(dir, "ovf", "{\"a\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904, 8],\"data_offsets\":[0,0]}}",
         UINT64_MAX, 0);
  expect_bad(dir, "ovf", (const char *[]){"tensor 'a'", "overflows", NULL});
  put_st(dir, "meta", "{\"__metadata__\":{\"k\":1}}", UINT64_MAX, 0);
  expect_bad(dir, "meta", (const char *[]){"__metadata__", "'k'", NULL});
  put_st(dir, "offs", "{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", UINT64_MAX, 1);
  expect_bad(dir, "offs", (const char *[]){"tensor 'a'", "data_offsets", NULL});
  expect_bad(dir, "missing", (const char *[]){"No such file", NULL});
  /* A well-formed file with metadata, a scalar and an empty tensor opens. */
  put_st(dir, "ok", "{\"__metadata__\":{\"format\":\"pt\"},\"s\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]},"
                    "\"e\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[1,1]}}   ", UINT64_MAX, 1);
  char path[600];
  snprintf(path, sizeof path, "%s/ok", dir);
  loom_safetensors *f;
  loom_status st = loom_safetensors_open(NULL, path, &f);
  cr_assert(!st, "%s", loom_status_message(st));
  cr_expect_eq(loom_safetensors_count(f), 2);
  loom_safetensors_close(f);
  /* Every truncation of a good file is refused, never read past its end. */
  float w[6] = {1, 2, 3, 4, 5, 6};
  loom_safetensors_tensor t = {"w", LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, w, sizeof w};
  snprintf(path, sizeof path, "%s/full", dir);
  cr_assert(!loom_safetensors_write(path, 1, &t));
  struct stat sb;
  cr_assert(!stat(path, &sb));
  for (off_t len = 0; len < sb.st_size; len += 3) {
    cr_assert(!truncate(path, len));
    st = loom_safetensors_open(NULL, path, &f);
    cr_assert(st, "a file cut to %lld bytes opened", (long long)len);
    loom_status_free(st);
  }
  rm_dir(dir);
}

/* Parses `text` as dir/m.loom. */
static loom_graph_module *parse_in(const char *dir, const char *text, char **err) {
  char name[600];
  snprintf(name, sizeof name, "%s/m.loom", dir);
  loom_source src = {name, text, strlen(text)};
  loom_diag_list dl;
  loom_diag_list_init(&dl, NULL);
  loom_graph_module *m = NULL;
  loom_status st = loom_graph_parse(&src, &dl, &m);
  *err = NULL;
  if (st) {
    *err = dl.items.len ? loom_diag_format(&dl.items.data[0]) : strdup(loom_status_message(st));
    loom_status_free(st);
  }
  loom_diag_list_destroy(&dl);
  return m;
}

static const char *weights_text =
    "const @w: Tensor[(2, 3), f32] = weights(\"w.safetensors\", \"w\")\n"
    "const @b: Tensor[(3,), i64] = weights(\"w.safetensors\", \"b\")\n"
    "\n"
    "fn @main(x: Tensor[(n, 2), f32]) -> Tensor[(n, 3), f32] {\n"
    "  y: Tensor[(n, 3), f32] = matmul(x, @w)\n"
    "  c: Tensor[(3,), f32] = cast(@b, dtype=f32)\n"
    "  z: Tensor[(n, 3), f32] = add(y, c)\n"
    "  return z\n"
    "}\n";

static void write_wb(const char *dir) {
  static const float w[6] = {1, 2, 3, 4, 5, 6};
  static const int64_t b[3] = {10, 20, 30};
  loom_safetensors_tensor ts[] = {{"w", LOOM_DTYPE_F32, 2, (int64_t[]){2, 3}, w, sizeof w},
                                  {"b", LOOM_DTYPE_I64, 1, (int64_t[]){3}, b, sizeof b}};
  char path[600];
  snprintf(path, sizeof path, "%s/w.safetensors", dir);
  loom_status st = loom_safetensors_write(path, 2, ts);
  cr_assert(!st, "%s", loom_status_message(st));
}

LOOM_TEST(weights, text_refers_to_the_mapping) {
  char *dir = tmp_dir();
  write_wb(dir);
  char *err;
  loom_graph_module *m = parse_in(dir, weights_text, &err);
  cr_assert(m, "%s", err);
  /* The printer writes the reference back; the text parses to the same module. */
  char *p1 = gt_print(m);
  cr_assert_str_eq(p1, weights_text);
  loom_graph_module *m2 = parse_in(dir, p1, &err);
  cr_assert(m2, "%s", err);
  cr_assert(loom_graph_module_equal(m, m2));
  /* The constants point into the mapped file (one mapping per module), not a copy. */
  loom_safetensors *f;
  loom_status st = loom_graph_module_weights(m, "w.safetensors", &f);
  cr_assert(!st);
  const loom_graph_const *cw = loom_graph_module_const_at(m, 0), *cb = loom_graph_module_const_at(m, 1);
  cr_expect_eq(cw->expr->u.cnst.data, loom_safetensors_find(f, "w")->data);
  cr_expect_eq(cb->expr->u.cnst.data, loom_safetensors_find(f, "b")->data);
  cr_expect_str_eq(cw->file, "w.safetensors");
  cr_expect_eq(((const float *)cw->expr->u.cnst.data)[5], 6.0f);
  cr_expect_eq(((const int64_t *)cb->expr->u.cnst.data)[2], 30);
  /* The interpreter reads them: x = [[1, 1]] -> [1+4+10, 2+5+20, 3+6+30]. */
  loom_graph_value in = gt_tensor(LOOM_DTYPE_F32, 2, (int64_t[]){1, 2}, (double[]){1, 1});
  loom_graph_value out = gt_eval_ok(m, 1, &in, NULL);
  gt_expect_values(&out, 2, (int64_t[]){1, 3}, (double[]){15, 27, 39}, 0);
  loom_graph_value_free(&out);
  gt_free_args(&in, 1);
  free(p1);
  loom_graph_module_destroy(m2);
  loom_graph_module_destroy(m);
  rm_dir(dir);
}

static void expect_parse_error(const char *dir, const char *text, const char *const *want) {
  char *err;
  loom_graph_module *m = parse_in(dir, text, &err);
  cr_assert_null(m, "parsed: %s", text);
  for (size_t i = 0; want[i]; i++) cr_expect(strstr(err, want[i]), "'%s' not in: %s", want[i], err);
  free(err);
}

LOOM_TEST(weights, text_errors) {
  char *dir = tmp_dir();
  write_wb(dir);
  expect_parse_error(dir, "const @w: Tensor[(2, 3), f32] = weights(\"nope.safetensors\", \"w\")\n",
                     (const char *[]){"m.loom:1:", "constant @w", "nope.safetensors", "No such file", NULL});
  expect_parse_error(dir, "const @w: Tensor[(2, 3), f32] = weights(\"w.safetensors\", \"v\")\n",
                     (const char *[]){"constant @w", "has no tensor 'v'", NULL});
  expect_parse_error(dir, "const @w: Tensor[(3, 2), f32] = weights(\"w.safetensors\", \"w\")\n",
                     (const char *[]){"constant @w is declared Tensor[(3, 2), f32]", "tensor 'w'", "[2, 3] of F32", NULL});
  expect_parse_error(dir, "const @w: Tensor[(2, 3), f16] = weights(\"w.safetensors\", \"w\")\n",
                     (const char *[]){"declared Tensor[(2, 3), f16]", "[2, 3] of F32", NULL});
  expect_parse_error(dir, "const @w: Tensor[(6,), f32] = weights(\"w.safetensors\", \"w\")\n",
                     (const char *[]){"declared Tensor[(6,), f32]", "[2, 3] of F32", NULL});
  expect_parse_error(dir, "const @w: Tensor[(2, n), f32] = weights(\"w.safetensors\", \"w\")\n",
                     (const char *[]){"unknown symbolic variable 'n'", NULL});
  expect_parse_error(dir, "const @w: Tensor[(2, 3), f32] = weights(\"w.safetensors\")\n",
                     (const char *[]){"expected ','", NULL});
  /* A bad file is named with the tensor at fault. */
  put_st(dir, "bad.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}", UINT64_MAX, 20);
  expect_parse_error(dir, "const @w: Tensor[(2, 3), f32] = weights(\"bad.safetensors\", \"w\")\n",
                     (const char *[]){"bad.safetensors", "tensor 'w'", "needs 24 bytes", NULL});
  rm_dir(dir);
}

/* Random byte mutations and truncations of a good file never crash the reader: each opens or
 * fails cleanly with the file named, and whatever opens has every tensor's bytes inside the
 * mapping (they are all read here; a byte past it would fault). */
LOOM_TEST(weights, mutated_files_open_or_fail_cleanly) {
  char *dir = tmp_dir();
  float w[12];
  int64_t b[3] = {1, 2, 3};
  for (int i = 0; i < 12; i++) w[i] = (float)i;
  loom_safetensors_tensor ts[] = {{"weight", LOOM_DTYPE_F32, 2, (int64_t[]){3, 4}, w, sizeof w},
                                  {"bias", LOOM_DTYPE_I64, 1, (int64_t[]){3}, b, sizeof b}};
  char path[600], mpath[600];
  snprintf(path, sizeof path, "%s/good", dir);
  snprintf(mpath, sizeof mpath, "%s/mutant", dir);
  cr_assert(!loom_safetensors_write(path, 2, ts));
  char *good = gt_read_file(path, NULL);
  struct stat sb;
  cr_assert(good && !stat(path, &sb));
  size_t len = (size_t)sb.st_size;
  loom_test_rng rng = {loom_test_seed()};
  static const char alphabet[] = "0123456789[]{}\",:- F_UIBx";
  size_t opened = 0;
  for (int it = 0; it < 400; it++) {
    unsigned char *m = malloc(len);
    memcpy(m, good, len);
    int edits = (int)loom_test_rng_range(&rng, 1, 4);
    for (int e = 0; e < edits; e++) {
      size_t at = (size_t)loom_test_rng_range(&rng, 0, (int64_t)len - 1);
      m[at] = at < 8 || loom_test_rng_range(&rng, 0, 3) == 0 ? (unsigned char)loom_test_rng_next(&rng)
                                                             : (unsigned char)alphabet[loom_test_rng_range(&rng, 0, sizeof alphabet - 2)];
    }
    size_t cut = loom_test_rng_range(&rng, 0, 5) == 0 ? (size_t)loom_test_rng_range(&rng, 0, (int64_t)len) : len;
    put_file(dir, "mutant", m, cut);
    loom_safetensors *f = NULL;
    loom_status st = loom_safetensors_open(NULL, mpath, &f);
    if (st) {
      cr_assert(strstr(loom_status_message(st), mpath), "seed %llu: %s", (unsigned long long)loom_test_seed(), loom_status_message(st));
      loom_status_free(st);
    } else {
      opened++;
      for (size_t i = 0; i < loom_safetensors_count(f); i++) {
        const loom_safetensors_tensor *t = loom_safetensors_at(f, i);
        volatile unsigned char sum = 0;
        for (size_t k = 0; k < t->nbytes; k++) sum ^= ((const unsigned char *)t->data)[k];
        (void)sum;
      }
      loom_safetensors_close(f);
    }
    free(m);
  }
  cr_expect_gt(opened, 0, "no mutant opened (data-only edits should)");
  free(good);
  rm_dir(dir);
}

/* A file written by the reference implementation (Python `safetensors` 0.8.0, save_file with
 * metadata; tests/graph/weights/hf_written.safetensors) reads with the values it was given. Loom's
 * own output was read back by that library too (docs/ir.md). */
LOOM_TEST(weights, reads_the_reference_writers_file) {
  loom_safetensors *f;
  loom_status st = loom_safetensors_open(NULL, "tests/graph/weights/hf_written.safetensors", &f);
  cr_assert(!st, "%s", loom_status_message(st));
  cr_assert_eq(loom_safetensors_count(f), 4);
  const loom_safetensors_tensor *w = loom_safetensors_find(f, "w"), *b = loom_safetensors_find(f, "b"),
                                *i = loom_safetensors_find(f, "i"), *u = loom_safetensors_find(f, "u");
  cr_assert(w && b && i && u);
  cr_expect(w->dtype == LOOM_DTYPE_F32 && w->rank == 2 && w->dims[0] == 3 && w->dims[1] == 4);
  for (int k = 0; k < 12; k++) cr_expect_eq(((const float *)w->data)[k], (float)k * 0.5f - 1.0f);
  cr_expect(b->dtype == LOOM_DTYPE_F16 && b->nbytes == 8);
  cr_expect_eq(((const uint16_t *)b->data)[0], 0x3c00); /* 1.0 */
  cr_expect(i->dtype == LOOM_DTYPE_I64 && ((const int64_t *)i->data)[2] == -14);
  cr_expect(u->dtype == LOOM_DTYPE_BOOL && ((const uint8_t *)u->data)[3] == 1 && ((const uint8_t *)u->data)[1] == 0);
  loom_safetensors_close(f);
}

/* The libFuzzer harness (tests/fuzz/fuzz_safetensors.c) on its seed corpus: each seed opens, each
 * seed cut short is refused. */
LOOM_TEST(weights, fuzz_harness_on_its_seeds) {
  const char *seeds[] = {"tests/fuzz/corpus/safetensors/hf_written", "tests/fuzz/corpus/safetensors/two_f32"};
  for (size_t i = 0; i < 2; i++) {
    size_t len;
    char *b = gt_read_file(seeds[i], &len);
    cr_assert(b, "no %s", seeds[i]);
    cr_expect_eq(loom_fuzz_safetensors_one((const uint8_t *)b, len), 1, "%s does not open", seeds[i]);
    cr_expect_eq(loom_fuzz_safetensors_one((const uint8_t *)b, len - 1), 0, "%s cut short opens", seeds[i]);
    free(b);
  }
}

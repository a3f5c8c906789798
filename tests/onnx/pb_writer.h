/* pb_writer.h — a tiny protobuf wire-format writer for building ONNX files in tests.
 *
 * Tests may not include protobuf-c (only src/frontend/onnx/ does), and malformed files
 * are easiest to make by hand anyway:
 *
 *     pb dim = {0}; pb_int(&dim, 1, 3);            // Dimension { dim_value: 3 }
 *     pb shape = {0}; pb_msg(&shape, 1, &dim);     // TensorShapeProto { dim: ... }
 *
 * Field numbers are those of onnx.proto; helpers below build the usual messages. */
#ifndef LOOM_TESTS_ONNX_PB_WRITER_H
#define LOOM_TESTS_ONNX_PB_WRITER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pb {
  uint8_t *d;
  size_t len, cap;
} pb;

static inline void pb_raw(pb *p, const void *data, size_t n) {
  if (p->len + n > p->cap) {
    p->cap = (p->len + n) * 2 + 64;
    p->d = realloc(p->d, p->cap);
  }
  if (n) memcpy(p->d + p->len, data, n);
  p->len += n;
}
static inline void pb_varint(pb *p, uint64_t v) {
  uint8_t b[10];
  size_t n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  pb_raw(p, b, n);
}
static inline void pb_key(pb *p, uint32_t field, unsigned wire) { pb_varint(p, ((uint64_t)field << 3) | wire); }
static inline void pb_int(pb *p, uint32_t field, int64_t v) {
  pb_key(p, field, 0);
  pb_varint(p, (uint64_t)v);
}
static inline void pb_f32(pb *p, uint32_t field, float v) {
  pb_key(p, field, 5);
  pb_raw(p, &v, 4);
}
static inline void pb_bytes(pb *p, uint32_t field, const void *data, size_t n) {
  pb_key(p, field, 2);
  pb_varint(p, n);
  pb_raw(p, data, n);
}
static inline void pb_str(pb *p, uint32_t field, const char *s) { pb_bytes(p, field, s, strlen(s)); }
/* Appends `sub` as a length-delimited field and frees it. */
static inline void pb_msg(pb *p, uint32_t field, pb *sub) {
  pb_bytes(p, field, sub->d, sub->len);
  free(sub->d);
  memset(sub, 0, sizeof *sub);
}
static inline void pb_free(pb *p) {
  free(p->d);
  memset(p, 0, sizeof *p);
}

/* ValueInfoProto for a tensor: `dims` holds numbers or names ("N"), "?" for an unnamed dim;
 * rank < 0 means no shape. */
static inline void pb_value_info(pb *out, uint32_t field, const char *name, int elem, int rank, const char **dims) {
  pb shape = {0}, tt = {0}, tp = {0}, vi = {0};
  for (int i = 0; i < rank; i++) {
    pb d = {0};
    char *end;
    long long v = strtoll(dims[i], &end, 10);
    if (*end == 0 && end != dims[i]) pb_int(&d, 1, v);
    else if (strcmp(dims[i], "?") != 0) pb_str(&d, 2, dims[i]);
    pb_msg(&shape, 1, &d);
  }
  pb_int(&tt, 1, elem);
  if (rank >= 0) pb_msg(&tt, 2, &shape);
  else pb_free(&shape);
  pb_msg(&tp, 1, &tt);
  pb_str(&vi, 1, name);
  pb_msg(&vi, 2, &tp);
  pb_msg(out, field, &vi);
}

/* NodeProto with one input list and one output list (NULL-terminated); `attrs` (may be NULL)
 * is appended as field 5 entries already encoded. */
static inline void pb_node(pb *out, const char *op, const char *name, const char **ins, const char **outs, pb *attrs) {
  pb n = {0};
  for (; ins && *ins; ins++) pb_str(&n, 1, *ins);
  for (; outs && *outs; outs++) pb_str(&n, 2, *outs);
  if (name) pb_str(&n, 3, name);
  pb_str(&n, 4, op);
  if (attrs) {
    pb_raw(&n, attrs->d, attrs->len);
    pb_free(attrs);
  }
  pb_msg(out, 1, &n);
}

/* ModelProto { ir_version 8, opset ai.onnx `opset`, graph `graph` } */
static inline void pb_model(pb *out, int opset, pb *graph) {
  pb op = {0};
  pb_int(out, 1, 8);
  pb_str(out, 2, "loom-test");
  pb_str(&op, 1, "");
  pb_int(&op, 2, opset);
  pb_msg(out, 8, &op);
  if (graph) pb_msg(out, 7, graph);
}

/* Writes the bytes of p to `path`; false if it could not be written whole. */
static inline bool pb_write_file(const pb *p, const char *path) {
  FILE *f = fopen(path, "wb");
  if (!f) return false;
  bool ok = fwrite(p->d, 1, p->len, f) == p->len;
  return fclose(f) == 0 && ok;
}

#endif

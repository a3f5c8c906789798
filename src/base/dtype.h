/* dtype.h — element types, from the one table in dtypes.def. */
#ifndef LOOM_BASE_DTYPE_H
#define LOOM_BASE_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum loom_dtype {
#define LOOM_DTYPE(e, name, bits, width, kind) LOOM_DTYPE_##e,
#include "base/dtypes.def"
#undef LOOM_DTYPE
  LOOM_DTYPE_COUNT
} loom_dtype;

typedef enum loom_dtype_kind {
  LOOM_DTYPE_KIND_BOOL,  /* bool, one byte, 0 or 1 */
  LOOM_DTYPE_KIND_SINT,  /* two's-complement signed integer */
  LOOM_DTYPE_KIND_UINT,  /* unsigned integer */
  LOOM_DTYPE_KIND_FLOAT, /* IEEE binary (f16, f32, f64), bfloat16, or a float8 / float4 / e8m0 format */
  LOOM_DTYPE_KIND_STRING, /* a loom_str handle (string): no arithmetic, no tensor programs */
} loom_dtype_kind;

/* The element of a string tensor: a fixed-size handle, so shapes, strides, views and memory
 * plans treat a string tensor as one of 16-byte elements. The bytes (UTF-8 by ONNX's
 * convention; not NUL-terminated in general) belong to whoever owns the tensor: a graph
 * tensor (graph/tensor.c) owns one allocation per non-empty element and frees them with the
 * tensor; an ONNX model or test set owns the bytes its tensors point into (its arena). A
 * bitwise copy of string elements therefore shares bytes without owning them: copy through
 * the owner's functions (loom_graph_tensor_set_str) instead. */
typedef struct loom_str {
  const char *data; /* the bytes; NULL when len is 0 */
  uint64_t len;     /* byte length */
} loom_str;

const char *loom_dtype_name(loom_dtype t);
/* Parses a dtype spelling ("f32"); false if unknown. */
bool loom_dtype_parse(const char *s, size_t len, loom_dtype *out);
unsigned loom_dtype_bits(loom_dtype t);  /* storage width */
unsigned loom_dtype_width(loom_dtype t); /* value width (4 for i4, stored in 8 bits) */
size_t loom_dtype_size(loom_dtype t);    /* bytes */
loom_dtype_kind loom_dtype_kind_of(loom_dtype t);
bool loom_dtype_is_float(loom_dtype t);
bool loom_dtype_is_int(loom_dtype t); /* signed or unsigned integer (not bool) */
bool loom_dtype_is_signed(loom_dtype t);
/* The low-precision types (float8, float4, e8m0, 4- and 2-bit integers; base/lowp.h):
 * values only the data-movement and conversion ops handle. */
bool loom_dtype_is_lowp(loom_dtype t);
/* The low-precision floats (float8, float4, e8m0): tensor programs do not take them. The 4- and
 * 2-bit integers (stored one per byte, sign-extended) are integers of a narrower width there. */
bool loom_dtype_is_lowp_float(loom_dtype t);
/* The string dtype (its element a loom_str): only the ops that know strings take it. */
bool loom_dtype_is_string(loom_dtype t);

/* Half-precision conversions (round to nearest even; NaN and infinities kept). */
float loom_f16_to_f32(uint16_t h);
uint16_t loom_f32_to_f16(float f);
float loom_bf16_to_f32(uint16_t h);
uint16_t loom_f32_to_bf16(float f);

#endif

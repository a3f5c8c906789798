/* onnx_view.h — large initializers read in place (onnx_view.c): the ModelProto protobuf-c
 * unpacks is a copy of the file without their bytes, which stay in the file's mapping. */
#ifndef LOOM_FRONTEND_ONNX_VIEW_H
#define LOOM_FRONTEND_ONNX_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "frontend/onnx/onnx_internal.h"

/* The TensorProto field number that stands for a raw_data left in place (unused by onnx.proto;
 * a varint: the index of its view). */
#define LOOM_ONNX_VIEW_FIELD 0x0AF1E0u

/* A raw_data in place: `len` bytes at `data` (inside the mapped model file, at any alignment). */
typedef struct loom_onnx_view {
  const uint8_t *data;
  size_t len;
} loom_onnx_view;

/* What loom_onnx_views_strip made (all zero: unpack the original bytes). */
typedef struct loom_onnx_stripped {
  uint8_t *bytes;         /* the rewritten ModelProto (malloc'd), or NULL */
  size_t len;             /* its length */
  loom_onnx_view *views;  /* the views its markers index (malloc'd) */
  size_t nviews;
} loom_onnx_stripped;

/* Rewrites the ModelProto `bytes` (already checked by loom_onnx_wire_check) with every raw_data
 * of `min` bytes or more of an initializer or attribute tensor replaced by a view marker. Gives
 * back nothing (out all zero, LOOM_OK) when there is no such raw_data or the bytes hold
 * something it does not handle; fails only when out of memory. */
LOOM_MUST_USE loom_status loom_onnx_views_strip(const uint8_t *bytes, size_t len, size_t min, loom_onnx_stripped *out);
/* The view tensor `tp` (unpacked from stripped bytes) stands for, if it has a marker; false if
 * not (or its index is out of range: never a view then). */
bool loom_onnx_view_of(const Onnx__TensorProto *tp, const loom_onnx_view *views, size_t nviews, loom_onnx_view *out);

#endif

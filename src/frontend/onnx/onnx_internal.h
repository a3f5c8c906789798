/* onnx_internal.h — what the files of the ONNX frontend share. Includes protobuf-c's
 * generated code: only src/frontend/onnx/ may include this header. */
#ifndef LOOM_FRONTEND_ONNX_INTERNAL_H
#define LOOM_FRONTEND_ONNX_INTERNAL_H

#include <stdint.h>

#include "frontend/onnx/onnx_model.h"
#include "onnx.pb-c.h"

/* Deepest message nesting accepted (subgraph in attribute in node in graph counts 3 levels).
 * Checked before protobuf-c runs, whose recursion has no limit of its own. */
#define LOOM_ONNX_MAX_DEPTH 96

/* The top-level message type a wire check starts from. */
typedef enum loom_onnx_wire_root {
  LOOM_ONNX_WIRE_MODEL,  /* ModelProto */
  LOOM_ONNX_WIRE_TENSOR, /* TensorProto */
} loom_onnx_wire_root;

/* Walks the protobuf wire format of `bytes` along the ONNX schema (field numbers and
 * which fields are messages) without building anything. Returns a DATA_LOSS status
 * naming the path of the first field that is malformed (truncated varint or length,
 * bad wire type, nesting deeper than LOOM_ONNX_MAX_DEPTH), or LOOM_OK when the wire
 * format is sound. `file` prefixes the message. */
LOOM_MUST_USE loom_status loom_onnx_wire_check(const uint8_t *bytes, size_t len,
                                               loom_onnx_wire_root root, const char *file);

/* Reads the whole of `path` into a malloc'd buffer (a NUL is appended, not counted).
 * `what` names the file's role in messages ("model", "external data", "test data"). */
LOOM_MUST_USE loom_status loom_onnx_read_file(const char *path, const char *what, uint8_t **out,
                                              size_t *out_len);

/* Decodes `tp` into `out` (all allocations in `arena`). `file` and `what` ("initializer 'w'",
 * "attribute 'value' of node 3 (Constant 'c')") prefix messages; `dir` is where external
 * data lives (NULL: refused). With a `keeper` (the model being loaded, which keeps its unpacked
 * ModelProto), the bytes of a type of 8 bits or more are used in place instead of copied:
 * raw_data when 16-byte aligned, external data from the keeper's read-only mapping of its file
 * when its offset is 16-byte aligned. */
LOOM_MUST_USE loom_status loom_onnx_tensor_decode(const Onnx__TensorProto *tp, const char *file,
                                                  const char *what, const char *dir, loom_onnx_model *keeper,
                                                  loom_arena *arena, loom_onnx_tensor *out);

/* Checks a decoded tensor against a declared value (element type, rank, fixed dims); a
 * TYPE_ERROR whose message starts with `where` when they disagree. Non-tensor values pass. */
LOOM_MUST_USE loom_status loom_onnx_tensor_check(const char *where, const loom_onnx_tensor *t,
                                                 const loom_onnx_value *v);

#endif

/* fuzz_onnx.h — the ONNX loader fuzz target, shared by its drivers. */
#ifndef LOOM_TESTS_FUZZ_ONNX_H
#define LOOM_TESTS_FUZZ_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "frontend/onnx/onnx_model.h"

/* Parses `data` as an ONNX model (printing it when it loads; and again with every raw_data used
 * in place, which must load the same initializers) and as a TensorProto.
 * Aborts if a failure status does not name the input. Always returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs that loaded as a model / were rejected with a status, since the start. */
extern size_t loom_fuzz_onnx_ok, loom_fuzz_onnx_errors;
/* raw_data the in-place loads (every one in place) left in the input, since the start. */
extern size_t loom_fuzz_onnx_views;

#endif

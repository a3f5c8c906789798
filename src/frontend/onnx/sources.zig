//! src/frontend/onnx/: loading ONNX models, tensors and conformance test data.
//! Compiler-side code (libloom only); the only place that includes protobuf-c headers.
pub const compiler = [_][]const u8{
    "src/frontend/onnx/onnx_model.c",
    "src/frontend/onnx/onnx_tensor.c",
    "src/frontend/onnx/onnx_print.c",
    "src/frontend/onnx/onnx_wire.c",
    "src/frontend/onnx/onnx_import.c",
    "src/frontend/onnx/onnx_import_core.c",
    "src/frontend/onnx/onnx_import_fold.c",
    "src/frontend/onnx/onnx_import_nn.c",
    "src/frontend/onnx/onnx_import_symval.c",
    "src/frontend/onnx/onnx_import_image.c",
    "src/frontend/onnx/onnx_import_imgcomp.c",
    "src/frontend/onnx/onnx_import_seq.c",
    "src/frontend/onnx/onnx_import_quant.c",
    "src/frontend/onnx/onnx_import_misc.c",
    "src/frontend/onnx/onnx_import_dyn.c",
    "src/frontend/onnx/onnx_import_ctl.c",
    "src/frontend/onnx/onnx_import_train.c",
    "src/frontend/onnx/onnx_import_loop.c",
    "src/frontend/onnx/conformance.c",
};

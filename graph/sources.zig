//! graph/: source list (runtime part goes into libloomrt, compiler part into libloom only).
pub const runtime = [_][]const u8{};
pub const compiler = [_][]const u8{
    "graph/sinfo.c",
    "graph/module.c",
    "graph/extern.c",
    "graph/tensor.c",
    "graph/op_registry.c",
    "graph/op_elemwise.c",
    "graph/op_linalg.c",
    "graph/op_reduce.c",
    "graph/op_nn.c",
    "graph/op_conv.c",
    "graph/op_shape.c",
    "graph/op_index.c",
    "graph/op_create.c",
    "graph/print.c",
    "graph/parse.c",
    "graph/verify.c",
    "graph/interp.c",
    "graph/legalize.c",
    "graph/npy_io.c",
    "graph/tp_bridge.c",
};

#!/usr/bin/env python3
"""make.py — builds the small ONNX models of this directory with onnx.helper and saves ONNX
Runtime's outputs as conformance test data (model.onnx, test_data_set_N/{input_*,output_0}.pb),
so `loom conformance tests/e2e/data/onnx [--compiled]` checks Loom against ORT.

  test_conv3d:             Conv on (N, C, D, H, W) (groups, strides, dilation, pads, bias),
                           symbolic batch and spatial dims, three shapes.
  test_roberta_embeddings: RoBERTa's embedding pattern with dynamic batch / sequence: position
                           ids computed from input_ids (cumsum(ids != pad) * mask + pad), word /
                           position / token-type lookups by Gather and GatherElements on computed
                           indices (the token-type buffer expanded to the batch as torch exports
                           `expand(b, -1)`), LayerNormalization, one MatMul + bias.

Run with a Python that has numpy, onnx and onnxruntime (bench/.venv): python make.py
"""
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(27)


def save(name, model, feeds):
    d = os.path.join(HERE, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    onnx.checker.check_model(model, full_check=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for k, feed in enumerate(feeds):
        sd = os.path.join(d, f"test_data_set_{k}")
        os.makedirs(sd)
        for i, inp in enumerate(model.graph.input):
            onnx.save_tensor(numpy_helper.from_array(feed[inp.name], inp.name), os.path.join(sd, f"input_{i}.pb"))
        outs = sess.run(None, feed)
        for i, (o, v) in enumerate(zip(model.graph.output, outs)):
            onnx.save_tensor(numpy_helper.from_array(v, o.name), os.path.join(sd, f"output_{i}.pb"))
        print(name, k, {n: a.shape for n, a in feed.items()}, "->", [v.shape for v in outs])


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def conv3d():
    # kernels < 8 on purpose (a separate fix handles padded kernels >= 8 in the compiled path)
    w = numpy_helper.from_array(f32(6, 2, 3, 2, 3) * 0.5, "w")
    b = numpy_helper.from_array(f32(6), "b")
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], group=2, strides=[1, 2, 1], dilations=[2, 1, 1],
                            pads=[1, 0, 2, 0, 1, 1], kernel_shape=[3, 2, 3])
    g = helper.make_graph([node], "conv3d",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4, "d", "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 6, "od", "oh", "ow"])], [w, b])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    save("test_conv3d", m, [{"x": f32(2, 4, 5, 6, 7)}, {"x": f32(1, 4, 4, 3, 5)}, {"x": f32(3, 4, 6, 4, 4)}])


def roberta():
    V, H, P, O, pad = 50, 16, 40, 8, 1
    c = lambda name, a: numpy_helper.from_array(np.asarray(a), name)
    inits = [
        c("word_emb", f32(V, H)), c("pos_emb", f32(P, H)), c("tt_emb", f32(2, H)),
        c("tt_buffer", np.zeros((1, P), np.int64)), c("pad", np.array(pad, np.int64)),
        c("zero", np.array([0], np.int64)), c("minus1", np.array([-1], np.int64)),
        c("minus1s", np.array([-1, -1], np.int64)), c("ones2", np.array([1, 1], np.int64)),
        c("axis1", np.array(1, np.int64)), c("gamma", f32(H) * 0.1 + 1), c("beta", f32(H) * 0.1),
        c("W", f32(H, O) * 0.3), c("bias", f32(O)),
    ]
    n = helper.make_node
    nodes = [
        # position ids: (cumsum(mask, 1) * mask) + pad, mask = int(ids != pad)
        n("Equal", ["input_ids", "pad"], ["is_pad"]),
        n("Not", ["is_pad"], ["not_pad"]),
        n("Cast", ["not_pad"], ["mask"], to=TensorProto.INT32),
        n("CumSum", ["mask", "axis1"], ["csum"]),
        n("Mul", ["csum", "mask"], ["incr"]),
        n("Cast", ["incr"], ["incr64"], to=TensorProto.INT64),
        n("Add", ["incr64", "pad"], ["position_ids"]),
        # token types: the (1, P) buffer expanded to (b, P) as torch exports expand(b, -1), then
        # gathered along the positions
        n("Shape", ["position_ids"], ["pshape"]),
        n("Gather", ["pshape", "zero"], ["bdim"], axis=0),
        n("Concat", ["bdim", "minus1"], ["shape0"], axis=0),
        n("Equal", ["shape0", "minus1s"], ["is_m1"]),
        n("Where", ["is_m1", "ones2", "shape0"], ["eshape"]),
        n("Expand", ["tt_buffer", "eshape"], ["tt_expanded"]),
        n("GatherElements", ["tt_expanded", "position_ids"], ["token_type_ids"], axis=1),
        # lookups
        n("Gather", ["word_emb", "input_ids"], ["we"], axis=0),
        n("Gather", ["pos_emb", "position_ids"], ["pe"], axis=0),
        n("Gather", ["tt_emb", "token_type_ids"], ["te"], axis=0),
        n("Add", ["we", "te"], ["e1"]),
        n("Add", ["e1", "pe"], ["e2"]),
        n("LayerNormalization", ["e2", "gamma", "beta"], ["ln"], axis=-1, epsilon=1e-5),
        n("MatMul", ["ln", "W"], ["mm"]),
        n("Add", ["mm", "bias"], ["y"]),
    ]
    g = helper.make_graph(nodes, "roberta_embeddings",
                          [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", O])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    def ids(b, s, npad):
        a = rng.integers(2, V, size=(b, s)).astype(np.int64)
        for r in range(b):
            k = npad[r % len(npad)]
            if k:
                a[r, s - k:] = pad
        return a

    save("test_roberta_embeddings", m, [{"input_ids": ids(2, 5, [0, 2])}, {"input_ids": ids(1, 9, [3])},
                                        {"input_ids": ids(3, 17, [0, 5, 16])}])


if __name__ == "__main__":
    conv3d()
    roberta()

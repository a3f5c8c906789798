"""Generates models/wav2vec2_pos/model.onnx: the front of a wav2vec2-style speech encoder, built with
onnx.helper (random weights): a strided feature conv (kernel 10, stride 5) + GELU, a feature
projection (LayerNorm, MatMul), then wav2vec2's positional convolution — Conv1d with kernel 32,
padding 16, groups 16, the last frame dropped, GELU, added to its input — and a final LayerNorm.
Batch (`batch`) and audio length (`samples`) are dynamic. Reference outputs from ONNX Runtime at
several shapes (ref_<b>x<n>_{x,y}.npy) are what tests/e2e/test_e2e_onnx_refs.c compares the
compiled model against (the tests need neither onnx nor onnxruntime). Issue 27: before the fix
the compiled positional conv gave relative errors of 0.46-0.65 or crashed.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install onnx onnxruntime numpy
    /tmp/v/bin/python models/wav2vec2_pos/gen.py          # rewrites this directory's files
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
C, D, K, GROUPS = 32, 64, 32, 16
SHAPES = [(1, 400), (2, 203), (3, 1000)]  # samples -> frames: 79, 39, 199


def main():
    rng = np.random.default_rng(27)
    w = lambda *s: (rng.standard_normal(s) * (1.0 / np.sqrt(np.prod(s[1:])))).astype(np.float32)
    inits = {
        "feat_w": w(C, 1, 10), "feat_b": w(C) * 0.1,
        "ln1_g": 1 + w(C) * 0.1, "ln1_b": w(C) * 0.1, "proj_w": w(C, D).reshape(C, D), "proj_b": w(D) * 0.1,
        "pos_w": w(D, D // GROUPS, K), "pos_b": w(D) * 0.1,
        "ln2_g": 1 + w(D) * 0.1, "ln2_b": w(D) * 0.1,
        "starts": np.array([0], np.int64), "minus1": np.array([-1], np.int64), "axis2": np.array([2], np.int64),
    }
    n = helper.make_node
    nodes = [
        n("Conv", ["audio", "feat_w", "feat_b"], ["f0"], kernel_shape=[10], strides=[5]),
        n("Gelu", ["f0"], ["f1"]),
        n("Transpose", ["f1"], ["f2"], perm=[0, 2, 1]),                      # (b, t, C)
        n("LayerNormalization", ["f2", "ln1_g", "ln1_b"], ["f3"], axis=-1, epsilon=1e-5),
        n("MatMul", ["f3", "proj_w"], ["f4"]),
        n("Add", ["f4", "proj_b"], ["h"]),                                  # (b, t, D)
        n("Transpose", ["h"], ["h1"], perm=[0, 2, 1]),                      # (b, D, t)
        n("Conv", ["h1", "pos_w", "pos_b"], ["p0"], kernel_shape=[K], pads=[K // 2, K // 2], group=GROUPS),
        n("Slice", ["p0", "starts", "minus1", "axis2"], ["p1"]),              # drop the last frame
        n("Gelu", ["p1"], ["p2"]),
        n("Transpose", ["p2"], ["p3"], perm=[0, 2, 1]),
        n("Add", ["h", "p3"], ["r"]),
        n("LayerNormalization", ["r", "ln2_g", "ln2_b"], ["y"], axis=-1, epsilon=1e-5),
    ]
    graph = helper.make_graph(
        nodes, "wav2vec2_pos",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", 1, "samples"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "frames", D])],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    onnx.checker.check_model(model)
    path = os.path.join(HERE, "model.onnx")
    onnx.save(model, path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    for b, s in SHAPES:
        x = rng.standard_normal((b, 1, s)).astype(np.float32)
        (y,) = sess.run(None, {"audio": x})
        np.save(os.path.join(HERE, f"ref_{b}x{s}_x.npy"), x)
        np.save(os.path.join(HERE, f"ref_{b}x{s}_y.npy"), y)
        print(f"{b}x{s}: y {y.shape}")


if __name__ == "__main__":
    main()

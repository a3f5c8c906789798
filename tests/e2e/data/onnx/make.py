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
  test_lstm_dyn:           LSTM over a symbolic sequence length (the graph IR's loop): forward,
                           bias, peepholes, initial state, sequence_lens; Y, Y_h, Y_c at
                           sequence lengths 1, 5, 17.
  test_gru_dyn:            GRU, bidirectional, linear_before_reset, clip, symbolic sequence length
                           (ONNX Runtime takes no layout 1); lengths 1, 6, 13.
  test_rnn_dyn:            RNN, reverse, Relu, symbolic sequence length; lengths 2, 3, 11.
  test_loop_decode:        Loop with a run-time trip count and a data-dependent exit: greedy
                           decoding (the next token the argmax of a table row, until token 3),
                           the tokens a carried value that grows per step and a scan output.
  test_scan_dyn:           Scan over a symbolic length: a running sum in reverse, outputs on
                           axis 1.

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


def lstm_dyn():
    I, H = 3, 4
    W, R, B, P = f32(1, 4 * H, I) * 0.5, f32(1, 4 * H, H) * 0.5, f32(1, 8 * H) * 0.2, f32(1, 3 * H) * 0.3
    inits = [numpy_helper.from_array(a, n) for a, n in ((W, "W"), (R, "R"), (B, "B"), (P, "P"))]
    node = helper.make_node("LSTM", ["X", "W", "R", "B", "lens", "h0", "c0", "P"], ["Y", "Y_h", "Y_c"], hidden_size=H)
    g = helper.make_graph([node], "lstm_dyn",
                          [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["seq", "batch", I]),
                           helper.make_tensor_value_info("lens", TensorProto.INT32, ["batch"]),
                           helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, "batch", H]),
                           helper.make_tensor_value_info("c0", TensorProto.FLOAT, [1, "batch", H])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["seq", 1, "batch", H]),
                           helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, "batch", H]),
                           helper.make_tensor_value_info("Y_c", TensorProto.FLOAT, [1, "batch", H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)

    def feed(t, b, lens):
        return {"X": f32(t, b, I), "lens": np.array(lens, np.int32), "h0": f32(1, b, H), "c0": f32(1, b, H)}

    save("test_lstm_dyn", m, [feed(1, 2, [1, 1]), feed(5, 1, [5]), feed(17, 3, [17, 9, 1])])


def gru_dyn():
    I, H = 5, 3
    W, R, B = f32(2, 3 * H, I) * 0.5, f32(2, 3 * H, H) * 0.5, f32(2, 6 * H) * 0.2
    inits = [numpy_helper.from_array(a, n) for a, n in ((W, "W"), (R, "R"), (B, "B"))]
    node = helper.make_node("GRU", ["X", "W", "R", "B"], ["Y", "Y_h"], hidden_size=H, direction="bidirectional",
                            linear_before_reset=1, clip=2.5)
    g = helper.make_graph([node], "gru_dyn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["seq", "batch", I])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["seq", 2, "batch", H]),
                           helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [2, "batch", H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    save("test_gru_dyn", m, [{"X": f32(1, 2, I)}, {"X": f32(6, 1, I)}, {"X": f32(13, 3, I)}])


def rnn_dyn():
    I, H = 2, 5
    W, R = f32(1, H, I) * 0.5, f32(1, H, H) * 0.4
    inits = [numpy_helper.from_array(a, n) for a, n in ((W, "W"), (R, "R"))]
    node = helper.make_node("RNN", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=H, direction="reverse", activations=["Relu"])
    g = helper.make_graph([node], "rnn_dyn", [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["seq", "batch", I])],
                          [helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["seq", 1, "batch", H]),
                           helper.make_tensor_value_info("Y_h", TensorProto.FLOAT, [1, "batch", H])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)], ir_version=8)
    save("test_rnn_dyn", m, [{"X": f32(2, 2, I)}, {"X": f32(3, 1, I)}, {"X": f32(11, 4, I)}])


def loop_decode():
    V = 5
    table = np.full((V, V), 0.1, np.float32)
    for r in range(V):
        table[r, (r + 1) % V] = 1.0
    n = helper.make_node
    body = helper.make_graph(
        [n("Gather", ["table", "last_in"], ["row"], axis=0),
         n("ArgMax", ["row"], ["nxt"], axis=1, keepdims=0),
         n("Concat", ["seq_in", "nxt"], ["seq_out"], axis=0),
         n("Identity", ["nxt"], ["last_out"]),
         n("Identity", ["nxt"], ["tok"]),
         n("Equal", ["nxt", "eos"], ["is_eos"]),
         n("Not", ["is_eos"], ["more"]),
         n("Squeeze", ["more", "ax0"], ["cond_out"])],
        "decode_step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("seq_in", TensorProto.INT64, ["k"]),
         helper.make_tensor_value_info("last_in", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("seq_out", TensorProto.INT64, ["k1"]),
         helper.make_tensor_value_info("last_out", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("tok", TensorProto.INT64, [1])])
    inits = [numpy_helper.from_array(table, "table"), numpy_helper.from_array(np.array(3, np.int64), "eos"),
             numpy_helper.from_array(np.array(True), "go"), numpy_helper.from_array(np.array([0], np.int64), "ax0")]
    nodes = [n("Slice", ["prompt", "m1", "big"], ["last0"]),
             n("Loop", ["steps", "go", "prompt", "last0"], ["tokens", "last", "stacked"], body=body)]
    inits += [numpy_helper.from_array(np.array([-1], np.int64), "m1"), numpy_helper.from_array(np.array([1 << 30], np.int64), "big")]
    g = helper.make_graph(nodes, "loop_decode",
                          [helper.make_tensor_value_info("prompt", TensorProto.INT64, ["p"]),
                           helper.make_tensor_value_info("steps", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("tokens", TensorProto.INT64, ["t"]),
                           helper.make_tensor_value_info("stacked", TensorProto.INT64, ["n", 1])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    save("test_loop_decode", m, [{"prompt": np.array([0], np.int64), "steps": np.array(10, np.int64)},
                                 {"prompt": np.array([4, 1], np.int64), "steps": np.array(2, np.int64)},
                                 {"prompt": np.array([2, 2, 4], np.int64), "steps": np.array(9, np.int64)}])


def scan_dyn():
    n = helper.make_node
    body = helper.make_graph(
        [n("Add", ["acc_in", "x"], ["acc_out"]), n("Mul", ["acc_out", "two"], ["y"])], "scan_step",
        [helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [3]), helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [3]), helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.array(2, np.float32), "two")])
    node = n("Scan", ["acc0", "xs"], ["acc", "ys"], body=body, num_scan_inputs=1, scan_input_directions=[1],
             scan_output_axes=[1])
    g = helper.make_graph([node], "scan_dyn",
                          [helper.make_tensor_value_info("acc0", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("xs", TensorProto.FLOAT, ["t", 3])],
                          [helper.make_tensor_value_info("acc", TensorProto.FLOAT, [3]),
                           helper.make_tensor_value_info("ys", TensorProto.FLOAT, [3, "t"])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)], ir_version=8)
    save("test_scan_dyn", m, [{"acc0": f32(3), "xs": f32(1, 3)}, {"acc0": f32(3), "xs": f32(4, 3)},
                              {"acc0": f32(3), "xs": f32(23, 3)}])


if __name__ == "__main__":
    conv3d()
    roberta()
    lstm_dyn()
    gru_dyn()
    rnn_dyn()
    loop_decode()
    scan_dyn()

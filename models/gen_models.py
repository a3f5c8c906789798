#!/usr/bin/env python3
"""gen_models.py — writes Loom's benchmark models as ONNX files with dynamic axes.

Every model is built with onnx.helper + NumPy (no torch needed), standard ONNX ops, opset 17, and
random weights drawn from a fixed seed, so the same command always writes the same bytes.

    B1  mlp.onnx          x[batch,1024] -> 1024-4096-4096-1024 MLP, GELU between layers
    B2  gpt2_block.onnx   x[batch,seq,768] -> one GPT-2-small block (pre-LN, 12 heads, causal)
    B3  gpt2_prefill.onnx x[batch,seq,768] -> y, present_{k,v}_i[batch,12,seq,64]   (12 layers)
        gpt2_decode.onnx  x[batch,seq,768], past_{k,v}_i[batch,12,past,64]
                          -> y, present_{k,v}_i[batch,12,past+seq,64]             (same weights)
    B4  bert_encoder.onnx x[batch,seq,768], attention_mask[batch,seq] (int64, 1 = token)
                          -> 12-layer BERT-base-style encoder (post-LN)
    (B5, the request stream, runs gpt2_block.onnx.)

Inputs are hidden states rather than token ids: the embeddings are a gather, not what is measured.
GELU is the tanh form GPT-2 uses (opset 17 has no Gelu op); B4 uses it too so that every system
computes the same function. Prefill and decode are two files (as Hugging Face's exporters do) so
that no system has to run a tensor with a zero-length `past` axis.

Usage: gen_models.py OUTDIR [--only NAME ...]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
D, HEADS, DH, FF = 768, 12, 64, 3072
LAYERS = 12
SEED = 20261122


class Builder:
    """Accumulates nodes and initializers; names are generated so the graph reads in order."""

    def __init__(self, seed):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(seed)
        self.consts = {}

    def name(self, hint):
        self.n += 1
        return f"{hint}_{self.n}"

    def op(self, op_type, inputs, hint=None, n_out=1, **attrs):
        outs = [self.name(hint or op_type.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, **attrs))
        return outs[0] if n_out == 1 else outs

    def weight(self, name, shape, std=0.02):
        w = (self.rng.standard_normal(shape) * std).astype(np.float32)
        self.inits.append(numpy_helper.from_array(w, name))
        return name

    def const(self, value, dtype=np.int64):
        key = (str(dtype), repr(value))
        if key not in self.consts:
            arr = np.array(value, dtype=dtype)
            name = self.name("const")
            self.inits.append(numpy_helper.from_array(arr, name))
            self.consts[key] = name
        return self.consts[key]

    # -- layers ------------------------------------------------------------------------------------
    def linear(self, x, prefix, n_in, n_out):
        w = self.weight(f"{prefix}.w", (n_in, n_out))
        b = self.weight(f"{prefix}.b", (n_out,))
        return self.op("Add", [self.op("MatMul", [x, w]), b])

    def gelu(self, x):
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        f = lambda v: self.const(v, np.float32)
        x3 = self.op("Mul", [self.op("Mul", [x, x]), x])
        inner = self.op("Mul", [self.op("Add", [x, self.op("Mul", [x3, f(0.044715)])]), f(np.sqrt(2 / np.pi))])
        return self.op("Mul", [self.op("Mul", [x, f(0.5)]), self.op("Add", [self.op("Tanh", [inner]), f(1.0)])])

    def layernorm(self, x, prefix):
        g = f"{prefix}.g"
        self.inits.append(numpy_helper.from_array((1 + 0.1 * self.rng.standard_normal(D)).astype(np.float32), g))
        b = self.weight(f"{prefix}.b", (D,))
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=1e-5)

    def heads(self, x):
        """[b, s, 768] -> [b, 12, s, 64]"""
        r = self.op("Reshape", [x, self.const([0, 0, HEADS, DH])])
        return self.op("Transpose", [r], perm=[0, 2, 1, 3])

    def merge_heads(self, x):
        """[b, 12, s, 64] -> [b, s, 768]"""
        t = self.op("Transpose", [x], perm=[0, 2, 1, 3])
        return self.op("Reshape", [t, self.const([0, 0, D])])

    def attention(self, q, k, v, bias):
        """softmax(q k^T / 8 + bias) v, per head; bias broadcasts to [b, 12, s, t]."""
        kt = self.op("Transpose", [k], perm=[0, 1, 3, 2])
        s = self.op("Mul", [self.op("MatMul", [q, kt]), self.const(1.0 / np.sqrt(DH), np.float32)])
        p = self.op("Softmax", [self.op("Add", [s, bias])], axis=-1)
        return self.op("MatMul", [p, v])

    def causal_bias(self, x, k_all):
        """[s, t] additive mask: 0 where key j <= past + i, -1e9 elsewhere (t = past + s)."""
        shape_x = self.op("Shape", [x])
        shape_k = self.op("Shape", [k_all])
        s = self.op("Gather", [shape_x, self.const(1)], axis=0)
        t = self.op("Gather", [shape_k, self.const(2)], axis=0)
        past = self.op("Sub", [t, s])
        # ConstantOfShape + Trilu rather than Range + Greater: the mask's shape then follows from Shape
        # ops alone, which importers that track symbolic shapes (TVM Relax) can keep symbolic.
        ones = self.op("ConstantOfShape", [self.op("Concat", [self.op("Unsqueeze", [s, self.const([0])]),
                                                                  self.op("Unsqueeze", [t, self.const([0])])], axis=0)],
                       value=helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0]))
        keep = self.op("Trilu", [ones, past], upper=0)  # 1 where j <= i + past
        return self.op("Mul", [self.op("Sub", [keep, self.const(1.0, np.float32)]), self.const(1e9, np.float32)])

    def gpt2_block(self, x, prefix, past_k=None, past_v=None):
        """Pre-LN GPT-2 block. Returns (y, k_all, v_all) with k_all/v_all as [b, 12, past+s, 64]."""
        h = self.layernorm(x, f"{prefix}.ln1")
        qkv = self.linear(h, f"{prefix}.attn.qkv", D, 3 * D)
        q, k, v = self.op("Split", [qkv, self.const([D, D, D])], n_out=3, axis=2)
        q, k, v = self.heads(q), self.heads(k), self.heads(v)
        if past_k is not None:
            k = self.op("Concat", [past_k, k], axis=2)
            v = self.op("Concat", [past_v, v], axis=2)
        a = self.merge_heads(self.attention(q, k, v, self.causal_bias(x, k)))
        x = self.op("Add", [x, self.linear(a, f"{prefix}.attn.proj", D, D)])
        h = self.layernorm(x, f"{prefix}.ln2")
        m = self.linear(self.gelu(self.linear(h, f"{prefix}.mlp.fc", D, FF)), f"{prefix}.mlp.proj", FF, D)
        return self.op("Add", [x, m]), k, v

    def bert_layer(self, x, prefix, bias):
        """Post-LN BERT layer; bias is the [b, 1, 1, s] additive attention mask."""
        q = self.heads(self.linear(x, f"{prefix}.attn.q", D, D))
        k = self.heads(self.linear(x, f"{prefix}.attn.k", D, D))
        v = self.heads(self.linear(x, f"{prefix}.attn.v", D, D))
        a = self.merge_heads(self.attention(q, k, v, bias))
        x = self.layernorm(self.op("Add", [x, self.linear(a, f"{prefix}.attn.out", D, D)]), f"{prefix}.ln1")
        m = self.linear(self.gelu(self.linear(x, f"{prefix}.ffn.in", D, FF)), f"{prefix}.ffn.out", FF, D)
        return self.layernorm(self.op("Add", [x, m]), f"{prefix}.ln2")

    def model(self, name, inputs, outputs):
        graph = helper.make_graph(self.nodes, name, inputs, outputs, initializer=self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="loom-models")
        m.ir_version = 8  # readable by every peer's importer
        onnx.checker.check_model(m)
        return m


def f32(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def rename(b, value, name):
    """Routes an internal value to a graph output name."""
    b.nodes.append(helper.make_node("Identity", [value], [name]))


def build_mlp():
    b = Builder(SEED + 1)
    h = b.gelu(b.linear("x", "fc1", 1024, 4096))
    h = b.gelu(b.linear(h, "fc2", 4096, 4096))
    rename(b, b.linear(h, "fc3", 4096, 1024), "y")
    return b.model("mlp", [f32("x", ["batch", 1024])], [f32("y", ["batch", 1024])])


def build_gpt2_block():
    b = Builder(SEED + 2)
    y, _, _ = b.gpt2_block("x", "h0")
    rename(b, y, "y")
    return b.model("gpt2_block", [f32("x", ["batch", "seq", D])], [f32("y", ["batch", "seq", D])])


def build_gpt2_stack(with_past):
    b = Builder(SEED + 3)  # same seed: prefill and decode share every weight
    inputs, outputs = [f32("x", ["batch", "seq", D])], [f32("y", ["batch", "seq", D])]
    x = "x"
    total = "past_plus_seq" if with_past else "seq"
    for i in range(LAYERS):
        pk = pv = None
        if with_past:
            pk, pv = f"past_key_{i}", f"past_value_{i}"
            inputs += [f32(pk, ["batch", HEADS, "past", DH]), f32(pv, ["batch", HEADS, "past", DH])]
        x, k, v = b.gpt2_block(x, f"h{i}", pk, pv)
        rename(b, k, f"present_key_{i}")
        rename(b, v, f"present_value_{i}")
        outputs += [f32(f"present_key_{i}", ["batch", HEADS, total, DH]), f32(f"present_value_{i}", ["batch", HEADS, total, DH])]
    rename(b, b.layernorm(x, "ln_f"), "y")
    return b.model("gpt2_decode" if with_past else "gpt2_prefill", inputs, outputs)


def build_bert():
    b = Builder(SEED + 4)
    mask = b.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    # (1 - mask) * -10000, shaped [b, 1, 1, s]
    neg = b.op("Mul", [b.op("Sub", [b.const(1.0, np.float32), mask]), b.const(-10000.0, np.float32)])
    bias = b.op("Unsqueeze", [neg, b.const([1, 2])])
    x = b.layernorm("x", "emb.ln")
    for i in range(LAYERS):
        x = b.bert_layer(x, f"l{i}", bias)
    rename(b, x, "y")
    return b.model(
        "bert_encoder",
        [f32("x", ["batch", "seq", D]), helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "seq"])],
        [f32("y", ["batch", "seq", D])],
    )


MODELS = {
    "mlp": build_mlp,
    "gpt2_block": build_gpt2_block,
    "gpt2_prefill": lambda: build_gpt2_stack(False),
    "gpt2_decode": lambda: build_gpt2_stack(True),
    "bert_encoder": build_bert,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--only", nargs="*", default=None)
    args = ap.parse_args()
    os.makedirs(args.outdir, exist_ok=True)
    for name, fn in MODELS.items():
        if args.only and name not in args.only:
            continue
        path = os.path.join(args.outdir, name + ".onnx")
        m = fn()
        onnx.save(m, path)
        n_params = sum(int(np.prod(t.dims)) for t in m.graph.initializer)
        print(f"wrote {path}: {len(m.graph.node)} nodes, {n_params / 1e6:.1f} M parameters", file=sys.stderr)


if __name__ == "__main__":
    main()

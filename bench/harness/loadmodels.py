"""loadmodels.py — the decoders bench/load measures, written with onnx.helper (random weights).

  gpt2_124m   GPT-2 small as transformers' GPT2LMHeadModel exports it: token and position
              embeddings, 12 pre-LN blocks (fused QKV projection, causal attention with a padding
              mask, tanh-GELU MLP), final LayerNorm, the LM head tied to the token embedding
              (MatMul with its transpose): 124.4 M parameters, 498 MB of float32.
  decoder_1b  a Llama-style decoder: 20 layers of RMSNorm, grouped-query attention (16 query /
              4 KV heads of 128) with rotary position embeddings, SwiGLU MLP (5632); untied LM
              head over 32000 tokens: 1.03 B parameters, 4.1 GB of float32, so the weights are ONNX
              external data (one .onnx.data file beside the model, the > 2 GB case).

Inputs: input_ids i64 (batch, seq); output: logits f32 (batch, seq, vocab). Weights are N(0, 0.02)
with a fixed seed; the numbers do not matter here, only sizes and structure.

    python bench/harness/loadmodels.py OUTDIR [--only gpt2_124m,decoder_1b]
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32, I64 = TensorProto.FLOAT, TensorProto.INT64


class G:
    """A graph under construction: nodes, initializers, unique names."""

    def __init__(self, seed):
        self.nodes, self.inits, self.n = [], [], 0
        self.rng = np.random.default_rng(seed)

    def w(self, name, shape, scale=0.02, value=None):
        a = value if value is not None else (self.rng.standard_normal(shape, dtype=np.float32) * scale)
        self.inits.append(numpy_helper.from_array(np.asarray(a), name))
        return name

    def c(self, value, dtype=np.int64):
        self.n += 1
        return self.w(f"c{self.n}", None, value=np.asarray(value, dtype=dtype))

    def op(self, kind, *ins, **attrs):
        self.n += 1
        out = f"{kind.lower()}_{self.n}"
        self.nodes.append(helper.make_node(kind, list(ins), [out], **attrs))
        return out


def heads(g, x, n, d):
    """(b, s, n*d) -> (b, n, s, d)"""
    return g.op("Transpose", g.op("Reshape", x, g.c([0, 0, n, d])), perm=[0, 2, 1, 3])


def merge(g, x, n, d):
    return g.op("Reshape", g.op("Transpose", x, perm=[0, 2, 1, 3]), g.c([0, 0, n * d]))


def causal_mask(g):
    """(seq, seq): 0 on and below the diagonal, -1e9 above; made once per model at run time."""
    if not hasattr(g, "mask"):
        ss = g.op("Concat", seq_len_of(g), seq_len_of(g), axis=0)
        full = g.op("ConstantOfShape", ss, value=helper.make_tensor("v", F32, [1], [-1e9]))
        g.mask = g.op("Trilu", full, g.c(1), upper=1)
    return g.mask


def causal_softmax(g, q, k, v, d):
    """softmax(q k^T / sqrt(d) + causal) v"""
    s = g.op("Div", g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2])), g.c(np.sqrt(d), np.float32))
    return g.op("MatMul", g.op("Softmax", g.op("Add", s, causal_mask(g)), axis=-1), v)


def seq_len_of(g):
    if not hasattr(g, "seq"):
        g.seq = g.op("Slice", g.op("Shape", "input_ids"), g.c([1]), g.c([2]))
    return g.seq


def gpt2_124m(g):
    D, H, L, V, P = 768, 12, 12, 50257, 1024
    wte = g.w("wte", (V, D))
    x = g.op("Add", g.op("Gather", wte, "input_ids"),
             g.op("Gather", g.w("wpe", (P, D)), g.op("Range", g.c(0), g.op("Squeeze", seq_len_of(g), g.c([0])), g.c(1))))
    for i in range(L):
        def ln(y, n):
            return g.op("LayerNormalization", y, g.w(f"h{i}.{n}.g", (D,), value=np.ones(D, np.float32)),
                        g.w(f"h{i}.{n}.b", (D,), value=np.zeros(D, np.float32)), axis=-1, epsilon=1e-5)
        qkv = g.op("Add", g.op("MatMul", ln(x, "ln1"), g.w(f"h{i}.attn.w", (D, 3 * D))), g.w(f"h{i}.attn.b", (3 * D,)))
        q, k, v = (g.op("Slice", qkv, g.c([j * D]), g.c([(j + 1) * D]), g.c([2])) for j in range(3))
        a = causal_softmax(g, heads(g, q, H, 64), heads(g, k, H, 64), heads(g, v, H, 64), 64)
        x = g.op("Add", x, g.op("Add", g.op("MatMul", merge(g, a, H, 64), g.w(f"h{i}.proj.w", (D, D))), g.w(f"h{i}.proj.b", (D,))))
        h = g.op("Add", g.op("MatMul", ln(x, "ln2"), g.w(f"h{i}.fc.w", (D, 4 * D))), g.w(f"h{i}.fc.b", (4 * D,)))
        # NewGELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        t = g.op("Tanh", g.op("Mul", g.c(np.sqrt(2 / np.pi), np.float32),
                              g.op("Add", h, g.op("Mul", g.c(0.044715, np.float32), g.op("Pow", h, g.c(3.0, np.float32))))))
        h = g.op("Mul", g.op("Mul", g.c(0.5, np.float32), h), g.op("Add", g.c(1.0, np.float32), t))
        x = g.op("Add", x, g.op("Add", g.op("MatMul", h, g.w(f"h{i}.mlp.w", (4 * D, D))), g.w(f"h{i}.mlp.b", (D,))))
    x = g.op("LayerNormalization", x, g.w("lnf.g", (D,), value=np.ones(D, np.float32)),
             g.w("lnf.b", (D,), value=np.zeros(D, np.float32)), axis=-1, epsilon=1e-5)
    return g.op("MatMul", x, g.op("Transpose", wte, perm=[1, 0])), V  # the tied LM head


def decoder_1b(g):
    D, H, KV, DH, FF, L, V, P = 2048, 16, 4, 128, 5632, 20, 32000, 4096
    x = g.op("Gather", g.w("embed", (V, D)), "input_ids")
    inv = 1.0 / (10000 ** (np.arange(0, DH, 2, dtype=np.float64) / DH))
    ang = np.outer(np.arange(P), inv)
    pos = g.op("Range", g.c(0), g.op("Squeeze", seq_len_of(g), g.c([0])), g.c(1))
    cos = g.op("Gather", g.w("rope_cos", None, value=np.cos(np.concatenate([ang, ang], 1)).astype(np.float32)), pos)
    sin = g.op("Gather", g.w("rope_sin", None, value=np.sin(np.concatenate([ang, ang], 1)).astype(np.float32)), pos)

    def rms(y, name):
        var = g.op("ReduceMean", g.op("Mul", y, y), g.c([-1]), keepdims=1)
        return g.op("Mul", g.op("Div", y, g.op("Sqrt", g.op("Add", var, g.c(1e-5, np.float32)))),
                    g.w(name, None, value=np.ones(D, np.float32)))

    def rope(t):
        half = DH // 2
        a = g.op("Slice", t, g.c([0]), g.c([half]), g.c([3]))
        b = g.op("Slice", t, g.c([half]), g.c([DH]), g.c([3]))
        return g.op("Add", g.op("Mul", t, cos), g.op("Mul", g.op("Concat", g.op("Neg", b), a, axis=3), sin))

    def repeat_kv(t):  # (b, KV, s, DH) -> (b, H, s, DH)
        e = g.op("Unsqueeze", t, g.c([2]))
        shp = g.op("Concat", g.op("Slice", g.op("Shape", t), g.c([0]), g.c([1])), g.c([KV, H // KV]),
                   g.op("Slice", g.op("Shape", t), g.c([2]), g.c([4])), axis=0)
        return g.op("Reshape", g.op("Expand", e, shp), g.c([0, H, -1, DH]))

    for i in range(L):
        y = rms(x, f"l{i}.n1")
        q = rope(heads(g, g.op("MatMul", y, g.w(f"l{i}.q", (D, H * DH))), H, DH))
        k = rope(heads(g, g.op("MatMul", y, g.w(f"l{i}.k", (D, KV * DH))), KV, DH))
        v = heads(g, g.op("MatMul", y, g.w(f"l{i}.v", (D, KV * DH))), KV, DH)
        a = causal_softmax(g, q, repeat_kv(k), repeat_kv(v), DH)
        x = g.op("Add", x, g.op("MatMul", merge(g, a, H, DH), g.w(f"l{i}.o", (H * DH, D))))
        y = rms(x, f"l{i}.n2")
        gate = g.op("MatMul", y, g.w(f"l{i}.gate", (D, FF)))
        up = g.op("MatMul", y, g.w(f"l{i}.up", (D, FF)))
        x = g.op("Add", x, g.op("MatMul", g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), up), g.w(f"l{i}.down", (FF, D))))
    return g.op("MatMul", rms(x, "norm"), g.w("lm_head", (D, V))), V


MODELS = {"gpt2_124m": (gpt2_124m, False), "decoder_1b": (decoder_1b, True)}


def write(name, outdir):
    build, external = MODELS[name]
    g = G(seed=len(name))
    logits, vocab = build(g)
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    graph = helper.make_graph(g.nodes, name, [helper.make_tensor_value_info("input_ids", I64, ["batch", "seq"])],
                              [helper.make_tensor_value_info("logits", F32, ["batch", "seq", vocab])], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], producer_name="loom bench/load")
    model.ir_version = 9
    path = os.path.join(outdir, name + ".onnx")
    params = sum(int(np.prod(t.dims)) for t in g.inits)
    if external:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=name + ".onnx.data", size_threshold=1024)
    else:
        onnx.save_model(model, path)
    print(f"wrote {path}: {len(g.nodes)} nodes, {params / 1e6:.1f} M parameters", file=sys.stderr)
    return params


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--only", default=",".join(MODELS))
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    for n in a.only.split(","):
        write(n, a.outdir)

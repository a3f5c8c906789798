"""models.py — transformers Loom does not ship, written with onnx.helper the way PyTorch's TorchScript
exporter writes them (opset 17, random weights, every batch / sequence / image dim symbolic):

  llama  Llama-style decoder, 2 layers, hidden 512: RMSNorm (Pow, ReduceMean, Add, Sqrt, Reciprocal,
         Mul), RoPE (cos / sin tables gathered by position ids, rotate_half by Slice / Neg / Concat),
         grouped-query attention (8 query / 2 KV heads of 64; K and V repeated by Unsqueeze / Expand /
         Reshape), causal mask by Where over Range comparisons, SiLU-gated MLP (1408), LM head (1000)
  bert   BERT encoder, 4 layers, hidden 384, 12 heads: word + position + token-type embeddings,
         0/1 int64 attention mask made additive (Unsqueeze, Cast, Sub, Mul by finfo.min), LayerNorm
         written out (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div), Erf GELU (1536)
  t5     T5 encoder, 4 layers, hidden 256, 4 heads of 64: relative position buckets computed at run
         time (Range, Sub, Abs, Log, Cast, Min, Where) gathered into a bias added to the scores,
         RMSNorm by Pow / Sqrt / Div, gated GELU FFN (tanh form with Pow, 1024), padding mask
  vit    ViT-S/16, 4 layers, hidden 384, 6 heads: Conv 16x16 stride 16 patch embedding, class token
         Expand + Concat, position embeddings resized (cubic Resize) to the run-time patch grid and
         added, LayerNormalization, Erf GELU (1536)
  conv   a Whisper / wav2vec-like front end: two Conv1D (kernel 3, the second stride 2) with Erf GELU,
         then 2 encoder layers (hidden 384, 6 heads)

Reshape targets are built as the exporter builds them: Shape -> Gather -> Unsqueeze -> Concat.
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))
from loadmodels import G  # noqa: E402

F32, I64 = TensorProto.FLOAT, TensorProto.INT64
FMIN = float(np.finfo(np.float32).min)
END = 9223372036854775807  # the exporter's open end of a Slice (x[..., h:])


def f(v):
    return np.float32(v)


def dim(g, x, i):
    """x.size(i) as a 1-D int64 tensor: Shape, Gather, Unsqueeze (the exporter's chain)."""
    return g.op("Unsqueeze", g.op("Gather", g.op("Shape", x), g.c(i), axis=0), g.c([0]))


def reshape(g, x, *dims):
    """Reshape x to dims; an int is a constant, a string a 1-D tensor (from dim())."""
    parts = [d if isinstance(d, str) else g.c([d]) for d in dims]
    return g.op("Reshape", x, g.op("Concat", *parts, axis=0))


def linear(g, x, name, din, dout, bias=True):
    """nn.Linear: MatMul with the transposed weight (a constant), then Add of the bias."""
    y = g.op("MatMul", x, g.w(name + ".w", (din, dout)))
    return g.op("Add", y, g.w(name + ".b", (dout,), value=g.rng.standard_normal(dout).astype(np.float32) * 0.02)) if bias else y


def layernorm(g, x, name, d, fused):
    gamma = g.w(name + ".g", None, value=(1 + 0.1 * g.rng.standard_normal(d)).astype(np.float32))
    beta = g.w(name + ".b", None, value=(0.1 * g.rng.standard_normal(d)).astype(np.float32))
    if fused:
        return g.op("LayerNormalization", x, gamma, beta, axis=-1, epsilon=1e-12)
    m = g.op("ReduceMean", x, axes=[-1], keepdims=1)
    c = g.op("Sub", x, m)
    v = g.op("ReduceMean", g.op("Pow", c, g.c(2.0, np.float32)), axes=[-1], keepdims=1)
    return g.op("Add", g.op("Mul", g.op("Div", c, g.op("Sqrt", g.op("Add", v, g.c(1e-12, np.float32)))), gamma), beta)


def rmsnorm(g, x, name, d, recip):
    """HF's RMSNorm: x * rsqrt(mean(x^2) + eps) * w (Llama: Reciprocal of Sqrt; T5: Div by Sqrt)."""
    v = g.op("ReduceMean", g.op("Pow", x, g.c(2.0, np.float32)), axes=[-1], keepdims=1)
    s = g.op("Sqrt", g.op("Add", v, g.c(1e-6, np.float32)))
    y = g.op("Mul", x, g.op("Reciprocal", s)) if recip else g.op("Div", x, s)
    return g.op("Mul", g.w(name, None, value=(1 + 0.1 * g.rng.standard_normal(d)).astype(np.float32)), y)


def gelu_erf(g, x):
    e = g.op("Erf", g.op("Div", x, g.c(1.4142135381698608, np.float32)))
    return g.op("Mul", g.op("Mul", x, g.op("Add", e, g.c(1.0, np.float32))), g.c(0.5, np.float32))


def gelu_tanh(g, x):
    t = g.op("Add", x, g.op("Mul", g.c(0.044715, np.float32), g.op("Pow", x, g.c(3.0, np.float32))))
    t = g.op("Tanh", g.op("Mul", g.c(np.sqrt(2 / np.pi), np.float32), t))
    return g.op("Mul", g.op("Mul", g.c(0.5, np.float32), x), g.op("Add", g.c(1.0, np.float32), t))


def split_heads(g, x, h, dh):
    """(b, s, h*dh) -> (b, h, s, dh) with a Reshape target from Shape chains."""
    return g.op("Transpose", reshape(g, x, dim(g, x, 0), dim(g, x, 1), h, dh), perm=[0, 2, 1, 3])


def merge_heads(g, a, d):
    t = g.op("Transpose", a, perm=[0, 2, 1, 3])
    return reshape(g, t, dim(g, t, 0), dim(g, t, 1), d)


def attention(g, q, k, v, bias, dh, scale=True):
    s = g.op("MatMul", q, g.op("Transpose", k, perm=[0, 1, 3, 2]))
    if scale:
        s = g.op("Div", s, g.c(np.sqrt(dh), np.float32))
    for b in bias:
        s = g.op("Add", s, b)
    return g.op("MatMul", g.op("Softmax", s, axis=-1), v)


def padding_mask(g, mask):
    """(b, s) 0/1 int64 -> (b, 1, 1, s) additive: (1 - m) * finfo.min."""
    m = g.op("Cast", g.op("Unsqueeze", g.op("Unsqueeze", mask, g.c([1])), g.c([2])), to=F32)
    return g.op("Mul", g.op("Sub", g.c(1.0, np.float32), m), g.c(FMIN, np.float32))


def encoder_layer(g, x, p, d, h, ff, bias, fused_ln):
    """BERT-style post-LN layer (ViT and conv pass pre_ln through vit_layer)."""
    dh = d // h
    q, k, v = (split_heads(g, linear(g, x, f"{p}.{n}", d, d), h, dh) for n in "qkv")
    a = linear(g, merge_heads(g, attention(g, q, k, v, bias, dh), d), p + ".o", d, d)
    x = layernorm(g, g.op("Add", a, x), p + ".ln1", d, fused_ln)
    y = linear(g, gelu_erf(g, linear(g, x, p + ".fc1", d, ff)), p + ".fc2", ff, d)
    return layernorm(g, g.op("Add", y, x), p + ".ln2", d, fused_ln)


def vit_layer(g, x, p, d, h, ff):
    """Pre-LN layer (ViT, wav2vec's stable layer norm)."""
    dh = d // h
    y = layernorm(g, x, p + ".ln1", d, True)
    q, k, v = (split_heads(g, linear(g, y, f"{p}.{n}", d, d), h, dh) for n in "qkv")
    x = g.op("Add", linear(g, merge_heads(g, attention(g, q, k, v, [], dh), d), p + ".o", d, d), x)
    y = layernorm(g, x, p + ".ln2", d, True)
    return g.op("Add", linear(g, gelu_erf(g, linear(g, y, p + ".fc1", d, ff)), p + ".fc2", ff, d), x)


def positions(g, x, axis=1):
    """Range(0, x.size(axis)) as int64."""
    n = g.op("Gather", g.op("Shape", x), g.c(axis), axis=0)
    return g.op("Range", g.c(0), n, g.c(1))


# -- the models: each returns (inputs, output name, output dims) ---------------------------------------
def llama(g):
    D, H, KV, DH, FF, L, V, P = 512, 8, 2, 64, 1408, 2, 1000, 2048
    x = g.op("Gather", g.w("embed", (V, D)), "input_ids")
    pos = g.op("Unsqueeze", positions(g, "input_ids"), g.c([0]))  # position_ids (1, s)
    inv = 1.0 / (10000 ** (np.arange(0, DH, 2, dtype=np.float64) / DH))
    ang = np.outer(np.arange(P), inv)
    emb = np.concatenate([ang, ang], 1)
    cos = g.op("Unsqueeze", g.op("Gather", g.w("cos", None, value=np.cos(emb).astype(np.float32)), pos), g.c([1]))
    sin = g.op("Unsqueeze", g.op("Gather", g.w("sin", None, value=np.sin(emb).astype(np.float32)), pos), g.c([1]))
    # causal mask: Where(j > i, finfo.min, 0) expanded to (b, 1, s, s)
    r = positions(g, "input_ids")
    causal = g.op("Where", g.op("Greater", g.op("Unsqueeze", r, g.c([0])), g.op("Unsqueeze", r, g.c([1]))),
                  g.c(FMIN, np.float32), g.c(0.0, np.float32))
    n = dim(g, "input_ids", 1)
    mask = g.op("Expand", g.op("Unsqueeze", causal, g.c([0, 1])), g.op("Concat", dim(g, "input_ids", 0), g.c([1]), n, n, axis=0))

    def rope(t):
        a = g.op("Slice", t, g.c([0]), g.c([DH // 2]), g.c([3]), g.c([1]))
        b = g.op("Slice", t, g.c([DH // 2]), g.c([END]), g.c([3]), g.c([1]))
        return g.op("Add", g.op("Mul", t, cos), g.op("Mul", g.op("Concat", g.op("Neg", b), a, axis=-1), sin))

    def repeat_kv(t):  # (b, KV, s, DH) -> (b, H, s, DH)
        e = g.op("Expand", g.op("Unsqueeze", t, g.c([2])),
                 g.op("Concat", dim(g, t, 0), g.c([KV, H // KV]), dim(g, t, 2), g.c([DH]), axis=0))
        return reshape(g, e, dim(g, t, 0), H, dim(g, t, 2), DH)

    for i in range(L):
        y = rmsnorm(g, x, f"l{i}.n1", D, True)
        q = rope(split_heads(g, linear(g, y, f"l{i}.q", D, H * DH, False), H, DH))
        k = rope(split_heads(g, linear(g, y, f"l{i}.k", D, KV * DH, False), KV, DH))
        v = split_heads(g, linear(g, y, f"l{i}.v", D, KV * DH, False), KV, DH)
        a = attention(g, q, repeat_kv(k), repeat_kv(v), [mask], DH)
        x = g.op("Add", x, linear(g, merge_heads(g, a, D), f"l{i}.o", D, D, False))
        y = rmsnorm(g, x, f"l{i}.n2", D, True)
        gate = linear(g, y, f"l{i}.gate", D, FF, False)
        up = linear(g, y, f"l{i}.up", D, FF, False)
        x = g.op("Add", x, linear(g, g.op("Mul", g.op("Mul", gate, g.op("Sigmoid", gate)), up), f"l{i}.down", FF, D, False))
    out = linear(g, rmsnorm(g, x, "norm", D, True), "lm_head", D, V, False)
    return [("input_ids", I64, ["batch", "seq"])], out, ["batch", "seq", V]


def bert(g):
    D, H, FF, L, V, P = 384, 12, 1536, 4, 1000, 512
    pos = g.op("Unsqueeze", positions(g, "input_ids"), g.c([0]))
    tt = g.op("Expand", g.c([[0]]), g.op("Shape", "input_ids"))  # token_type_ids: the buffered zeros
    x = g.op("Add", g.op("Add", g.op("Gather", g.w("word", (V, D)), "input_ids"), g.op("Gather", g.w("type", (2, D)), tt)),
             g.op("Gather", g.w("pos", (P, D)), pos))
    x = layernorm(g, x, "emb.ln", D, False)
    bias = padding_mask(g, "attention_mask")
    for i in range(L):
        x = encoder_layer(g, x, f"l{i}", D, H, FF, [bias], False)
    return [("input_ids", I64, ["batch", "seq"]), ("attention_mask", I64, ["batch", "seq"])], x, ["batch", "seq", D]


def t5_bias(g, H, buckets=32, max_dist=128):
    """T5's bidirectional relative position bias (1, H, s, s), computed as HF does at run time."""
    r = positions(g, "input_ids")
    rel = g.op("Sub", g.op("Unsqueeze", r, g.c([0])), g.op("Unsqueeze", r, g.c([1])))  # memory - context
    nb = buckets // 2
    out = g.op("Mul", g.op("Cast", g.op("Greater", rel, g.c(0)), to=I64), g.c(nb))
    rel = g.op("Abs", rel)
    exact = nb // 2
    small = g.op("Less", rel, g.c(exact))
    lg = g.op("Div", g.op("Log", g.op("Div", g.op("Cast", rel, to=F32), g.c(float(exact), np.float32))),
              g.c(float(np.log(max_dist / exact)), np.float32))
    large = g.op("Add", g.c(exact), g.op("Cast", g.op("Mul", lg, g.c(float(nb - exact), np.float32)), to=I64))
    large = g.op("Min", large, g.c(nb - 1))
    out = g.op("Add", out, g.op("Where", small, rel, large))
    vals = g.op("Gather", g.w("relbias", (buckets, H), scale=0.5), out)  # (s, s, H)
    return g.op("Unsqueeze", g.op("Transpose", vals, perm=[2, 0, 1]), g.c([0]))


def t5(g):
    D, H, DH, FF, L, V = 256, 4, 64, 1024, 4, 1000
    x = g.op("Gather", g.w("shared", (V, D), scale=1.0), "input_ids")
    bias = [t5_bias(g, H), padding_mask(g, "attention_mask")]
    for i in range(L):
        y = rmsnorm(g, x, f"l{i}.n1", D, False)
        q, k, v = (split_heads(g, linear(g, y, f"l{i}.{n}", D, H * DH, False), H, DH) for n in "qkv")
        x = g.op("Add", x, linear(g, merge_heads(g, attention(g, q, k, v, bias, DH, scale=False), H * DH), f"l{i}.o", H * DH, D, False))
        y = rmsnorm(g, x, f"l{i}.n2", D, False)
        h = g.op("Mul", gelu_tanh(g, linear(g, y, f"l{i}.wi0", D, FF, False)), linear(g, y, f"l{i}.wi1", D, FF, False))
        x = g.op("Add", x, linear(g, h, f"l{i}.wo", FF, D, False))
    return [("input_ids", I64, ["batch", "seq"]), ("attention_mask", I64, ["batch", "seq"])], rmsnorm(g, x, "final", D, False), ["batch", "seq", D]


def vit(g):
    D, H, FF, L, PATCH, GRID = 384, 6, 1536, 4, 16, 14
    p = g.op("Conv", "pixel_values", g.w("patch.w", (D, 3, PATCH, PATCH)), g.w("patch.b", (D,)), kernel_shape=[PATCH, PATCH], strides=[PATCH, PATCH])
    b = dim(g, p, 0)
    x = g.op("Transpose", reshape(g, p, b, D, -1), perm=[0, 2, 1])  # (b, n, D)
    cls = g.op("Expand", g.w("cls", (1, 1, D)), g.op("Concat", b, g.c([1, 1]), axis=0))
    x = g.op("Concat", cls, x, axis=1)
    # interpolate_pos_encoding: the 14x14 grid resized (bicubic) to the patch grid of this image
    grid = g.op("Transpose", g.op("Reshape", g.w("pos_patch", (1, GRID * GRID, D)), g.c([1, GRID, GRID, D])), perm=[0, 3, 1, 2])
    sizes = g.op("Concat", g.c([1, D]), dim(g, p, 2), dim(g, p, 3), axis=0)
    grid = g.op("Resize", grid, "", "", sizes, mode="cubic", cubic_coeff_a=-0.75, coordinate_transformation_mode="half_pixel")
    pe = g.op("Concat", g.w("pos_cls", (1, 1, D)), g.op("Transpose", g.op("Reshape", grid, g.c([1, D, -1])), perm=[0, 2, 1]), axis=1)
    x = g.op("Add", x, pe)
    for i in range(L):
        x = vit_layer(g, x, f"l{i}", D, H, FF)
    return [("pixel_values", F32, ["batch", 3, "height", "width"])], layernorm(g, x, "final", D, True), ["batch", "tokens", D]


def conv(g):
    D, H, FF, L, MEL = 384, 6, 1536, 2, 80
    x = gelu_erf(g, g.op("Conv", "input_features", g.w("c1.w", (D, MEL, 3)), g.w("c1.b", (D,)), kernel_shape=[3], pads=[1, 1]))
    x = gelu_erf(g, g.op("Conv", x, g.w("c2.w", (D, D, 3)), g.w("c2.b", (D,)), kernel_shape=[3], pads=[1, 1], strides=[2]))
    x = g.op("Transpose", x, perm=[0, 2, 1])
    # Whisper's sinusoidal positions, sliced to the frames of this input
    pe = g.op("Slice", g.w("pos", (1500, D), scale=0.1), g.c([0]), dim(g, x, 1), g.c([0]), g.c([1]))
    x = g.op("Add", x, pe)
    for i in range(L):
        x = vit_layer(g, x, f"l{i}", D, H, FF)
    return [("input_features", F32, ["batch", MEL, "frames"])], layernorm(g, x, "final", D, True), ["batch", "out_frames", D]


MODELS = {"llama": llama, "bert": bert, "t5": t5, "vit": vit, "conv": conv}


def write(name, path):
    import onnx

    g = G(seed=len(name) + 7)
    ins, out, dims = MODELS[name](g)
    g.nodes.append(helper.make_node("Identity", [out], ["output"]))
    graph = helper.make_graph(g.nodes, name, [helper.make_tensor_value_info(n, t, s) for n, t, s in ins],
                              [helper.make_tensor_value_info("output", F32, dims)], g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="pytorch")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save_model(model, path)
    return ins

"""modeldefs.py — the benchmark models written once, for NumPy, JAX and PyTorch.

These functions compute exactly what models/gen_models.py writes as ONNX (same weights, read from
the ONNX initializers by name). They serve two purposes:
  - the NumPy version, in float64, is the *reference* every system's output is checked against
    (reference.py); Loom's interpreter takes that role once it runs ONNX models;
  - the JAX and PyTorch versions are how those peers run the models (neither imports ONNX).

`F` is a small adapter over the array library so that the model code is written once.
"""
import math

import numpy as np

D, HEADS, DH, FF, LAYERS = 768, 12, 64, 3072, 12
GELU_C = math.sqrt(2 / math.pi)


class NumpyOps:
    name = "numpy"

    def __init__(self, dtype=np.float64):
        self.dtype = dtype

    def asarray(self, a):
        return np.asarray(a, dtype=self.dtype) if a.dtype.kind == "f" else np.asarray(a)

    tanh, exp, sqrt = np.tanh, np.exp, np.sqrt

    def mean(self, x):
        return x.mean(axis=-1, keepdims=True)

    def amax(self, x):
        return x.max(axis=-1, keepdims=True)

    def sum(self, x):
        return x.sum(axis=-1, keepdims=True)

    def perm(self, x, p):
        return np.transpose(x, p)

    def cat(self, xs, axis):
        return np.concatenate(xs, axis=axis)

    def causal_bias(self, s, t, like):
        i = np.arange(s)[:, None] + (t - s)
        j = np.arange(t)[None, :]
        return np.where(j > i, -1e9, 0.0).astype(like.dtype)

    def to_float(self, m, like):
        return m.astype(like.dtype)


class JaxOps(NumpyOps):
    name = "jax"

    def __init__(self):
        import jax.numpy as jnp

        self.np = jnp
        self.tanh, self.exp, self.sqrt = jnp.tanh, jnp.exp, jnp.sqrt

    def asarray(self, a):
        return self.np.asarray(a)

    def perm(self, x, p):
        return self.np.transpose(x, p)

    def cat(self, xs, axis):
        return self.np.concatenate(xs, axis=axis)

    def causal_bias(self, s, t, like):
        jnp = self.np
        i = jnp.arange(s)[:, None] + (t - s)
        j = jnp.arange(t)[None, :]
        return jnp.where(j > i, -1e9, 0.0).astype(like.dtype)


class TorchOps:
    name = "torch"

    def __init__(self):
        import torch

        self.t = torch
        self.tanh, self.exp, self.sqrt = torch.tanh, torch.exp, torch.sqrt

    def asarray(self, a):
        return self.t.from_numpy(np.ascontiguousarray(a))

    def mean(self, x):
        return x.mean(dim=-1, keepdim=True)

    def amax(self, x):
        return x.amax(dim=-1, keepdim=True)

    def sum(self, x):
        return x.sum(dim=-1, keepdim=True)

    def perm(self, x, p):
        return x.permute(*p)

    def cat(self, xs, axis):
        return self.t.cat(xs, dim=axis)

    def causal_bias(self, s, t, like):
        torch = self.t
        i = torch.arange(s).unsqueeze(1) + (t - s)
        j = torch.arange(t).unsqueeze(0)
        zero = torch.zeros((), dtype=like.dtype)
        return torch.where(j > i, zero - 1e9, zero)

    def to_float(self, m, like):
        return m.to(like.dtype)


# -- layers -----------------------------------------------------------------------------------------
def linear(W, x, p):
    return x @ W[p + ".w"] + W[p + ".b"]


def gelu(F, x):
    return 0.5 * x * (1.0 + F.tanh(GELU_C * (x + 0.044715 * (x * x * x))))


def layernorm(F, W, x, p):
    m = F.mean(x)
    c = x - m
    v = F.mean(c * c)
    return c / F.sqrt(v + 1e-5) * W[p + ".g"] + W[p + ".b"]


def softmax(F, x):
    e = F.exp(x - F.amax(x))
    return e / F.sum(e)


def heads(F, x):
    b, s = x.shape[0], x.shape[1]
    return F.perm(x.reshape(b, s, HEADS, DH), (0, 2, 1, 3))


def merge(F, x):
    b, s = x.shape[0], x.shape[2]
    return F.perm(x, (0, 2, 1, 3)).reshape(b, s, D)


def attention(F, q, k, v, bias):
    return softmax(F, (q @ F.perm(k, (0, 1, 3, 2))) * (1.0 / math.sqrt(DH)) + bias) @ v


def gpt2_block(F, W, x, p, past_k=None, past_v=None):
    h = layernorm(F, W, x, p + ".ln1")
    qkv = linear(W, h, p + ".attn.qkv")
    q, k, v = heads(F, qkv[..., :D]), heads(F, qkv[..., D : 2 * D]), heads(F, qkv[..., 2 * D :])
    if past_k is not None:
        k, v = F.cat([past_k, k], 2), F.cat([past_v, v], 2)
    s, t = x.shape[1], k.shape[2]
    a = merge(F, attention(F, q, k, v, F.causal_bias(s, t, x)))
    x = x + linear(W, a, p + ".attn.proj")
    h = layernorm(F, W, x, p + ".ln2")
    return x + linear(W, gelu(F, linear(W, h, p + ".mlp.fc")), p + ".mlp.proj"), k, v


# -- models: each takes (F, W, inputs dict) and returns the output `y` --------------------------------
def mlp(F, W, I):
    h = gelu(F, linear(W, I["x"], "fc1"))
    h = gelu(F, linear(W, h, "fc2"))
    return linear(W, h, "fc3")


def block(F, W, I):
    return gpt2_block(F, W, I["x"], "h0")[0]


def prefill(F, W, I):
    x = I["x"]
    for i in range(LAYERS):
        x = gpt2_block(F, W, x, f"h{i}")[0]
    return layernorm(F, W, x, "ln_f")


def decode(F, W, I):
    x = I["x"]
    for i in range(LAYERS):
        x = gpt2_block(F, W, x, f"h{i}", I[f"past_key_{i}"], I[f"past_value_{i}"])[0]
    return layernorm(F, W, x, "ln_f")


def bert(F, W, I):
    x = I["x"]
    m = F.to_float(I["attention_mask"], x)
    bias = ((1.0 - m) * -10000.0)[:, None, None, :]
    x = layernorm(F, W, x, "emb.ln")
    for i in range(LAYERS):
        p = f"l{i}"
        q, k, v = (heads(F, linear(W, x, f"{p}.attn.{n}")) for n in "qkv")
        a = merge(F, attention(F, q, k, v, bias))
        x = layernorm(F, W, x + linear(W, a, p + ".attn.out"), p + ".ln1")
        x = layernorm(F, W, x + linear(W, gelu(F, linear(W, x, p + ".ffn.in")), p + ".ffn.out"), p + ".ln2")
    return x


FUNCS = {"mlp": mlp, "gpt2_block": block, "gpt2_prefill": prefill, "gpt2_decode": decode, "bert_encoder": bert}


def load_weights(onnx_path):
    """Named weights from the model's initializers (the generator names them `<layer>.<w|b|g>`)."""
    import onnx
    from onnx import numpy_helper

    m = onnx.load(onnx_path)
    return {t.name: numpy_helper.to_array(t) for t in m.graph.initializer if "." in t.name}

"""Generates models/tiny_transformer/model.onnx: a small PyTorch transformer (2 decoder layers, d=64,
4 heads, causal, learned positions, vocabulary 256) exported with dynamic `batch` and `seq` axes, and
reference outputs from ONNX Runtime at several shapes (ref_<b>x<s>_{tokens,logits}.npy) that the tests
compare Loom against (the tests need neither torch nor onnxruntime).

    python3 -m venv /tmp/v && /tmp/v/bin/pip install torch onnx onnxruntime numpy
    /tmp/v/bin/python models/tiny_transformer/gen.py          # rewrites this directory's files
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, D, HEADS, LAYERS, MAXPOS = 256, 64, 4, 2, 512
SHAPES = [(1, 1), (2, 7), (3, 16), (1, 61), (4, 33)]


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x):
        b, s, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q = q.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(b, s, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (D // HEADS) ** 0.5)
        mask = torch.ones(s, s, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, D)
        x = x + self.proj(y)
        return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = nn.Embedding(VOCAB, D), nn.Embedding(MAXPOS, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB, bias=False)

    def forward(self, tokens):
        s = tokens.shape[1]
        x = self.tok(tokens) + self.pos(torch.arange(s, device=tokens.device))
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln(x))


def main():
    import onnxruntime as ort

    torch.manual_seed(0)
    model = Tiny().eval()
    path = os.path.join(HERE, "model.onnx")
    example = torch.zeros(2, 5, dtype=torch.int64)
    torch.onnx.export(model, (example,), path, input_names=["tokens"], output_names=["logits"],
                      dynamic_axes={"tokens": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}},
                      opset_version=17, dynamo=False)
    sess = ort.InferenceSession(path)
    rng = np.random.default_rng(1)
    for b, s in SHAPES:
        tokens = rng.integers(0, VOCAB, size=(b, s), dtype=np.int64)
        (logits,) = sess.run(None, {"tokens": tokens})
        with torch.no_grad():
            want = model(torch.from_numpy(tokens)).numpy()
        assert np.allclose(logits, want, rtol=1e-4, atol=1e-4), (b, s)
        np.save(os.path.join(HERE, f"ref_{b}x{s}_tokens.npy"), tokens)
        np.save(os.path.join(HERE, f"ref_{b}x{s}_logits.npy"), logits)
    print(f"wrote {path} ({os.path.getsize(path)} bytes) and {len(SHAPES)} reference pairs", file=sys.stderr)


if __name__ == "__main__":
    main()

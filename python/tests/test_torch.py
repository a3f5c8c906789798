"""PyTorch: tensors in and out through DLPack, and loom.from_torch (skipped without torch)."""

from __future__ import annotations

import numpy as np
import pytest

import loom

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (pip install torch)")


@pytest.mark.skipif(torch is not None, reason="checks the error given without PyTorch")
def test_from_torch_without_torch_is_a_clear_error():
    with pytest.raises(ImportError, match="loom.from_torch needs PyTorch"):
        loom.from_torch(object(), ())


@needs_torch
def test_torch_tensors_in_and_out(add_module):
    x = torch.arange(10, dtype=torch.float32)
    y = torch.ones(10, dtype=torch.float32)
    np.testing.assert_array_equal(add_module(x, y), (x + y).numpy())
    t = add_module(x, y, dlpack=True)
    z = torch.from_dlpack(t)
    assert torch.equal(z, x + y)
    assert torch.equal(torch.from_dlpack(add_module(x[::2], y[::2], dlpack=True)), x[::2] + 1)  # strided in


@needs_torch
def test_from_torch_dynamic_batch_and_sequence():
    torch.manual_seed(0)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(16, 32)
            self.fc2 = torch.nn.Linear(32, 8)

        def forward(self, x):
            return torch.softmax(self.fc2(torch.nn.functional.gelu(self.fc1(x))), dim=-1)

    net = Net().eval()
    m = loom.from_torch(net, torch.randn(2, 5, 16), dynamic_shapes=[{0: "batch", 1: "seq"}])
    assert m.signature["main"].params[0].shape == ("batch", "seq", "16")
    for b, s in [(1, 1), (3, 7), (2, 13)]:
        x = torch.randn(b, s, 16)
        with torch.no_grad():
            want = net(x).numpy()
        np.testing.assert_allclose(m(x), want, rtol=1e-4, atol=1e-5)


@needs_torch
def test_from_torch_attention_block_every_sequence_length():
    torch.manual_seed(1)

    class Block(torch.nn.Module):
        # single-head self-attention + residual + LayerNorm, written out (torch's fused
        # MultiheadAttention fast path does not export to ONNX)
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(32, 96)
            self.out = torch.nn.Linear(32, 32)
            self.norm = torch.nn.LayerNorm(32)

        def forward(self, x):
            q, k, v = self.qkv(x).split(32, dim=-1)
            p = torch.softmax(q @ k.transpose(1, 2) / 32**0.5, dim=-1)
            return self.norm(x + self.out(p @ v))

    net = Block().eval()
    m = loom.from_torch(net, (torch.randn(2, 6, 32),), dynamic_shapes={"x0": {0: "b", 1: "s"}})
    assert m.signature["main"].params[0].shape[:2] == ("b", "s")
    for b, s in [(1, 1), (2, 5), (3, 17)]:
        x = torch.randn(b, s, 32)
        with torch.no_grad():
            want = net(x)
        got = torch.from_dlpack(m(x, dlpack=True))
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


@needs_torch
def test_from_torch_argument_errors():
    net = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError, match="2 entries for 1 inputs"):
        loom.from_torch(net, torch.randn(1, 4), dynamic_shapes=[{0: "b"}, {0: "c"}])
    with pytest.raises(ValueError, match="names input 'y'"):
        loom.from_torch(net, torch.randn(1, 4), dynamic_shapes={"y": {0: "b"}})


@needs_torch
def test_torch_wrong_shape_is_a_loom_error(add_module):
    with pytest.raises(loom.LoomError, match="'y'"):
        add_module(torch.ones(3), torch.ones(4))
    with pytest.raises(loom.LoomTypeError, match="expected dtype f32, got i64"):
        add_module(torch.ones(3), torch.ones(3, dtype=torch.int64))

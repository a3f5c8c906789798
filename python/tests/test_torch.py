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

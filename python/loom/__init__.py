"""Loom from Python: compile ONNX or .loom models with symbolic shapes once, call them for any
shape, exchange tensors with NumPy and PyTorch (DLPack, zero-copy).

    import numpy as np, loom
    m = loom.compile("models/mlp.loom")          # or an .onnx path, or the model's bytes
    print(m.signature)                            # main(x: f32(b, 784), ...)
    y = m(np.random.rand(3, 784).astype(np.float32), ...)   # any batch size b
    print(m.memory_plan(b=3))                     # the symbolic peak and its value

A thin ctypes layer over the C API (src/loom.h, src/loomrt.h) in the bundled libloom.so:
calls release the GIL, so threads may call one module concurrently.
"""

from __future__ import annotations

from . import sym
from ._errors import (
    InvalidArgumentError,
    LoomError,
    LoomTypeError,
    NotFoundError,
    OutOfRangeError,
    ParseError,
    UnimplementedError,
)
from ._module import Function, MemoryPlan, Module, Param, Signature, compile, interpret, load
from ._tensor import Tensor
from ._torch import from_torch

try:
    from ._version import __version__  # written by the build backend (build.zig.zon)
except ImportError:  # running from the source tree
    __version__ = "0+unknown"

__all__ = [
    "compile",
    "load",
    "interpret",
    "from_torch",
    "Module",
    "Tensor",
    "Signature",
    "Function",
    "Param",
    "MemoryPlan",
    "sym",
    "LoomError",
    "InvalidArgumentError",
    "ParseError",
    "LoomTypeError",
    "OutOfRangeError",
    "NotFoundError",
    "UnimplementedError",
]

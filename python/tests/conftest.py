"""Shared helpers of the Loom Python package's tests (run by scripts/test in python/.venv)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

# Every compile the tests run uses a fresh kernel cache, never the user's (as scripts/test).
if "LOOM_CACHE_DIR" not in os.environ:
    os.environ["LOOM_CACHE_DIR"] = tempfile.mkdtemp(prefix="loom-pytest-cache-")

import loom  # noqa: E402  (after LOOM_CACHE_DIR is set)

ADD_LOOM = """fn @main(x: Tensor[(n), f32], y: Tensor[(n), f32]) -> Tensor[(n), f32] {
  dataflow {
    z = add(x, y)
    output z
  }
  return z
}
"""

# two results (a tuple), a second function, an identity (returns its input)
MULTI_LOOM = """fn @main(x: Tensor[(b, k), f32], w: Tensor[(k, m), f32]) -> Tuple[Tensor[(b, m), f32], Tensor[(b, k), f32]] {
  dataflow {
    y = matmul(x, w)
    z = mul(x, x)
    r = (y, z)
    output r
  }
  return r
}

fn @same(x: Tensor[(n, 2), i32]) -> Tensor[(n, 2), i32] {
  return x
}
"""


@pytest.fixture(scope="session")
def add_module() -> "loom.Module":
    return loom.compile(ADD_LOOM.encode())


@pytest.fixture(scope="session")
def multi_module() -> "loom.Module":
    return loom.compile(MULTI_LOOM.encode())


def random_inputs(fn: "loom.Function", dims: dict[str, int], rng: np.random.Generator) -> list[np.ndarray]:
    """Inputs for every parameter of `fn`, symbolic dims evaluated with `dims`: float matrices
    N(0, 0.1); float vectors in [0.5, 1.5) (norm gains, variances); integers in [0, 2);
    booleans random."""
    out = []
    for p in fn.params:
        shape = tuple(loom.sym.eval(d, **dims) for d in p.shape)
        if p.dtype.startswith("f"):
            dt = {"f32": np.float32, "f64": np.float64, "f16": np.float16}[p.dtype]
            if len(shape) == 1:
                a = rng.uniform(0.5, 1.5, shape).astype(dt)
            else:
                a = (rng.standard_normal(shape) * 0.1).astype(dt)
        elif p.dtype == "bool":
            a = rng.integers(0, 2, shape).astype(bool)
        else:
            a = rng.integers(0, 2, shape).astype({"i64": np.int64, "i32": np.int32}[p.dtype])
        out.append(a)
    return out


@pytest.fixture(params=["extension", "ctypes"])
def call_path(request, monkeypatch):
    """Runs a test through both call paths: the loom._fastcall extension (when the wheel has
    it) and the ctypes path (loom_rt_call_packed)."""
    import loom._module as lm

    if request.param == "ctypes":
        monkeypatch.setattr(lm, "_fast", None)
    elif lm._fast is None:
        pytest.skip("the wheel has no loom._fastcall extension (no Python headers at build time)")
    return request.param

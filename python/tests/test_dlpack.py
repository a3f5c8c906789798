"""DLPack: zero-copy results, results fed back, other producers in, borrowed inputs kept safe."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import loom


@pytest.fixture(autouse=True)
def _both_paths(call_path):
    """Every test here runs through both call paths."""
    return call_path


class Producer:
    """A DLPack producer that is not a NumPy array (as a JAX or CuPy host array would be)."""

    def __init__(self, a: np.ndarray):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_tensor_result_is_zero_copy(add_module):
    x = np.arange(5, dtype=np.float32)
    t = add_module(x, x, dlpack=True)
    assert isinstance(t, loom.Tensor)
    assert t.shape == (5,) and t.dtype == "f32" and t.ndim == 1
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    b = t.numpy()
    np.testing.assert_array_equal(a, 2 * x)
    assert np.shares_memory(a, b)  # both view the runtime's memory
    del t
    gc.collect()
    np.testing.assert_array_equal(a, 2 * x)  # the view keeps the memory alive


def test_tensor_back_in(add_module):
    x = np.arange(6, dtype=np.float32)
    t = add_module(x, x, dlpack=True)
    u = add_module(t, t, dlpack=True)
    np.testing.assert_array_equal(u.numpy(), 4 * x)
    np.testing.assert_array_equal(add_module(t, x), 3 * x)


def test_other_dlpack_producer_in(add_module):
    x = np.arange(9, dtype=np.float32)
    y = np.full(9, 2.0, np.float32)
    np.testing.assert_array_equal(add_module(Producer(x), Producer(y)), x + 2)
    # a consumed capsule cannot be imported twice
    cap = x.__dlpack__()

    class Once:
        def __dlpack__(self, **kw):
            return cap

    add_module(Once(), y)
    with pytest.raises(ValueError):
        add_module(Once(), y)


def test_identity_result_is_copied_not_borrowed(multi_module):
    a = np.arange(8, dtype=np.int32).reshape(4, 2)
    r = multi_module.call("same", a)
    assert not np.shares_memory(r, a)
    t = multi_module.call("same", a, dlpack=True)
    v = np.from_dlpack(t)
    assert not np.shares_memory(v, a)
    a[:] = -1  # the caller's array changes; the results do not
    np.testing.assert_array_equal(r, np.arange(8).reshape(4, 2))
    np.testing.assert_array_equal(v, np.arange(8).reshape(4, 2))


def test_dtypes_round_trip():
    for dt, name in [(np.float64, "f64"), (np.int64, "i64"), (np.int8, "i8"), (np.uint8, "u8"), (np.float16, "f16"), (np.bool_, "bool")]:
        src = f"fn @same(x: Tensor[(n), {name}]) -> Tensor[(n), {name}] {{\n  return x\n}}\n".encode()
        m = loom.compile(src)
        a = (np.arange(5) % 2).astype(dt)
        np.testing.assert_array_equal(m.call("same", a), a)
        assert m.call("same", a).dtype == dt
        t = m.call("same", a, dlpack=True)
        assert t.dtype == name
        np.testing.assert_array_equal(np.from_dlpack(t), a)


def test_empty_tensor(add_module):
    e = np.zeros(0, np.float32)
    assert add_module(e, e).shape == (0,)
    assert np.from_dlpack(add_module(e, e, dlpack=True)).shape == (0,)

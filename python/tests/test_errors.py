"""Errors are LoomError subclasses carrying Loom's message: the input, the axis, both values."""

from __future__ import annotations

import numpy as np
import pytest

import loom
from conftest import MODELS


@pytest.fixture(autouse=True)
def _both_paths(call_path):
    """Every test here runs through both call paths."""
    return call_path


@pytest.fixture(scope="module")
def mlp():
    return loom.compile(MODELS / "mlp.loom")


def mlp_inputs(b: int = 2):
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((b, 784)).astype(np.float32),
        rng.standard_normal((256, 784)).astype(np.float32),
        rng.standard_normal(256).astype(np.float32),
        rng.standard_normal((10, 256)).astype(np.float32),
        rng.standard_normal(10).astype(np.float32),
    ]


def test_wrong_dim_names_input_axis_and_both_values(mlp):
    args = mlp_inputs()
    args[0] = args[0][:, :783].copy()
    with pytest.raises(loom.InvalidArgumentError) as e:
        mlp(*args)
    msg = str(e.value)
    assert "input 'x' axis 1: expected 784, got 783" in msg
    assert e.value.code == "INVALID_ARGUMENT"
    assert isinstance(e.value, ValueError)


def test_inconsistent_symbolic_dim_names_both_values(add_module):
    with pytest.raises(loom.LoomError) as e:
        add_module(np.ones(3, np.float32), np.ones(4, np.float32))
    msg = str(e.value)
    assert "'y'" in msg and "axis 0" in msg and "3" in msg and "4" in msg


def test_wrong_dtype_names_input_and_both_dtypes(mlp):
    args = mlp_inputs()
    args[2] = args[2].astype(np.float64)
    with pytest.raises(loom.LoomTypeError, match="input 'b1' of 'main': expected dtype f32, got f64"):
        mlp(*args)


def test_wrong_rank(mlp):
    args = mlp_inputs()
    args[4] = args[4].reshape(1, 10)
    with pytest.raises(loom.LoomTypeError, match="input 'b2' of 'main': expected rank 1, got 2"):
        mlp(*args)


def test_wrong_count_and_unknown_function(mlp):
    with pytest.raises(loom.LoomError, match="input"):
        mlp(*mlp_inputs()[:4])
    with pytest.raises(loom.NotFoundError, match="no function 'nope'"):
        mlp.call("nope", *mlp_inputs())


def test_runtime_stays_usable_after_errors(mlp):
    args = mlp_inputs(3)
    good = mlp(*args)
    for _ in range(3):
        with pytest.raises(loom.LoomError):
            mlp(args[0][:, :10], *args[1:])
    np.testing.assert_array_equal(mlp(*args), good)


def test_parse_error_has_line_and_caret():
    src = b"fn @main(x: Tensor[(n), f32]) -> Tensor[(n), f32] {\n  return frobnicate(x)\n}\n"
    with pytest.raises(loom.ParseError) as e:
        loom.compile(src)
    msg = str(e.value)
    assert "<bytes>:2:" in msg and "^" in msg


def test_missing_file_and_bad_onnx(tmp_path):
    with pytest.raises(loom.LoomError, match="nope.loom"):
        loom.compile(tmp_path / "nope.loom")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07\x12\x04junk\xff\xff\xff")
    with pytest.raises(loom.LoomError, match="bad.onnx"):
        loom.compile(bad)


def test_unsupported_dtype_from_numpy(add_module):
    with pytest.raises(loom.LoomError, match="complex64"):
        add_module(np.ones(2, np.complex64), np.ones(2, np.float32))


def test_abi_check_names_a_mirror_that_drifted_from_the_library():
    """The import-time check (loom._capi): the library's struct layouts against the ctypes
    mirrors. They agree for this build; a mirror missing a field, or with a field at another
    offset or size, is named with both layouts."""
    import ctypes

    from loom import _capi

    rows = _capi.library_abi()
    assert _capi.abi_mismatches(rows, _capi.MIRRORS) == []
    assert {t for t, f, *_ in rows if f is None} == set(_capi.MIRRORS)

    class Stale(ctypes.Structure):  # loom_compile_options before pack_tied
        _fields_ = [f for f in _capi.CompileOptions._fields_ if f[0] != "pack_tied"]

    bad = _capi.abi_mismatches(rows, {"loom_compile_options": Stale})
    assert len(bad) == 1 and "pack_tied" in bad[0] and "loom_compile_options" in bad[0], bad

    class Narrow(ctypes.Structure):  # loom_rt_options with a 32-bit device pointer
        _fields_ = [(n, ctypes.c_uint32 if n == "device" else t) for n, t in _capi.RtOptions._fields_]

    bad = _capi.abi_mismatches(rows, {"loom_rt_options": Narrow})
    assert any(b.startswith("loom_rt_options.device: offset") for b in bad), bad

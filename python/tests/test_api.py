"""compile / load / save / signature / calls / memory plans / loom.sym."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

import loom
from conftest import ADD_LOOM, MODELS


def test_compile_path_and_bytes_agree(tmp_path):
    p = tmp_path / "add.loom"
    p.write_text(ADD_LOOM)
    x = np.arange(7, dtype=np.float32)
    y = np.full(7, 0.5, np.float32)
    for m in (loom.compile(p), loom.compile(str(p)), loom.compile(ADD_LOOM.encode()), loom.compile(bytearray(ADD_LOOM.encode()))):
        np.testing.assert_array_equal(m(x, y), x + y)


@pytest.mark.parametrize("n", [0, 1, 7, 1000003])
def test_add_any_size(add_module, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = add_module(x, y)
    assert z.shape == (n,) and z.dtype == np.float32
    np.testing.assert_array_equal(z, x + y)


def test_signature(multi_module):
    sig = multi_module.signature
    assert list(sig) == ["main", "same"]
    main = sig["main"]
    assert [p.name for p in main.params] == ["x", "w"]
    assert main.params[0].dtype == "f32" and main.params[0].shape == ("b", "k")
    assert main.params[1].shape == ("k", "m")
    assert sig["same"].params[0] == loom.Param("x", "i32", ("n", "2"))
    assert str(main) == "main(x: f32(b, k), w: f32(k, m))"
    assert sig.symbols == ["b", "k", "m", "n"]


def test_tuple_results_kwargs_and_named_function(multi_module):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    w = rng.standard_normal((5, 2)).astype(np.float32)
    y, z = multi_module(x, w)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(z, x * x)
    y2, z2 = multi_module(w=w, x=x)
    np.testing.assert_array_equal(y2, y)
    np.testing.assert_array_equal(z2, z)
    y3, _ = multi_module.call("main", x, w=w)
    np.testing.assert_array_equal(y3, y)
    a = np.arange(10, dtype=np.int32).reshape(5, 2)
    np.testing.assert_array_equal(multi_module.call("same", a), a)


def test_kwargs_errors(multi_module):
    x = np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match="no parameter 'q'"):
        multi_module(x, q=x)
    with pytest.raises(TypeError, match="missing input"):
        multi_module(x=x)
    with pytest.raises(TypeError, match="given twice"):
        multi_module(x, x=x)


def test_non_contiguous_and_python_inputs(add_module):
    x = np.arange(20, dtype=np.float32)[::2]  # strided view: copied to a dense array
    y = [1.0] * 10  # anything numpy.asarray takes (here f64 -> an error, f32 list below)
    np.testing.assert_array_equal(add_module(x, np.asarray(y, np.float32)), x + 1)
    with pytest.raises(loom.LoomTypeError, match="expected dtype f32, got f64"):
        add_module(x, y)


def test_onnx_model_matches_its_reference_outputs():
    d = MODELS / "tiny_transformer"
    m = loom.compile(d / "model.onnx")
    assert m.signature["main"].params[0].shape == ("batch", "seq")
    done = 0
    for case in ("1x1", "2x7", "3x16", "1x61"):
        tokens = np.load(d / f"ref_{case}_tokens.npy")
        want = np.load(d / f"ref_{case}_logits.npy")
        got = m(tokens)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
        done += 1
    assert done == 4


def test_onnx_bytes():
    data = (MODELS / "tiny_transformer" / "model.onnx").read_bytes()
    m = loom.compile(data)
    tokens = np.load(MODELS / "tiny_transformer" / "ref_2x7_tokens.npy")
    want = np.load(MODELS / "tiny_transformer" / "ref_2x7_logits.npy")
    np.testing.assert_allclose(m(tokens), want, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not (shutil.which("cc") or os.environ.get("LOOM_CC")), reason="saving links with cc or $LOOM_CC")
def test_save_load_roundtrip(tmp_path, multi_module):
    path = tmp_path / "multi.so"
    multi_module.save(path)
    assert path.stat().st_size > 0
    m2 = loom.load(path, threads=1)
    assert m2.signature == multi_module.signature
    assert m2.threads == 1
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 3)).astype(np.float32)
    w = rng.standard_normal((3, 6)).astype(np.float32)
    for a, b in zip(m2(x, w), multi_module(x, w)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(loom.LoomError, match="loaded from an artifact"):
        m2.memory_plan()
    copy = tmp_path / "copy.so"
    m2.save(copy)
    np.testing.assert_array_equal(loom.load(copy)(x, w)[0], m2(x, w)[0])
    with pytest.raises(loom.LoomError, match="loom.load"):
        loom.compile(path)


def test_load_rejects_a_non_artifact(tmp_path):
    p = tmp_path / "junk.so"
    p.write_bytes(b"not an artifact at all" * 10)
    with pytest.raises(loom.LoomError):
        loom.load(p)


def test_memory_plan():
    m = loom.compile(MODELS / "mlp.loom")
    plan = m.memory_plan()
    assert plan.function == "main" and plan.bytes is None
    assert "b" in plan.peak
    # the peak is linear in the batch: its values at b = 1, 2, 3 are equally spaced and positive
    v = [m.memory_plan(b=b).bytes for b in (1, 2, 3)]
    assert v[0] > 0 and v[1] - v[0] == v[2] - v[1] > 0
    assert m.memory_plan(b=5).bytes == loom.sym.eval(plan.peak, b=5)
    with pytest.raises(loom.NotFoundError, match="nope"):
        m.memory_plan("nope")
    with pytest.raises(loom.LoomError):
        m.memory_plan(q=3)  # b is unbound


def test_sym():
    assert loom.sym.simplify("floordiv(4*n + 8, 4)") == "n + 2"
    assert loom.sym.simplify("min(s, 4096)", assume="s <= 100") == "s"
    assert loom.sym.simplify("min(s, 4096)") == "min(s, 4096)"
    assert loom.sym.prove("n < n + 1") is True
    assert loom.sym.prove("n + 1 <= n") is False
    assert loom.sym.prove("n <= m") is None
    assert loom.sym.prove("n <= m", assume=["n <= 4", "m >= 4"]) is True
    assert loom.sym.eval("2*n + floordiv(m, 2)", n=3, m=5) == 8
    assert loom.sym.eval("floormod(n, 7)", n=100) == 2
    with pytest.raises(loom.ParseError, match=r"\^"):
        loom.sym.simplify("n + * 2")
    with pytest.raises(loom.LoomError, match="m"):
        loom.sym.eval("n + m", n=1)
    with pytest.raises(loom.LoomError, match="overflow"):
        loom.sym.eval("n * n", n=2**40)


def test_threads_setting():
    m = loom.compile(ADD_LOOM.encode(), threads=2)
    assert m.threads == 2
    m.threads = 1
    assert m.threads == 1


def test_closed_module(tmp_path):
    m = loom.compile(ADD_LOOM.encode())
    m.close()
    with pytest.raises(loom.LoomError, match="closed"):
        m(np.ones(1, np.float32), np.ones(1, np.float32))
    with loom.compile(ADD_LOOM.encode()) as m2:
        assert m2(np.ones(2, np.float32), np.ones(2, np.float32)).sum() == 4
    assert m2._rt is None


def test_the_installed_package_is_tested():
    # scripts/test-python installs the wheel; the tests must not import python/loom in place
    from pathlib import Path

    import loom._capi

    here = Path(loom.__file__).resolve().parent
    assert here != (Path(__file__).resolve().parents[1] / "loom"), here
    assert (here / "libloom.so").exists() or "LOOM_LIBRARY" in os.environ
    assert loom.__version__ == (here / "_version.py").read_text().split('"')[1]


def test_extension_is_built_and_used(add_module):
    # the wheel built by scripts/test-python has the call-path extension (python3-dev is set up)
    import loom._module as lm

    assert lm._fast is not None, "loom._fastcall missing: was the wheel built without Python's headers?"
    x = np.arange(4, dtype=np.float32)
    assert type(lm._fast.call(add_module._rt, b"main", (x, x))) is list
    # a strided input is not taken by the extension (None): the general path copies it
    assert lm._fast.call(add_module._rt, b"main", (x[::2], x[::2])) is None
    np.testing.assert_array_equal(add_module(x[::2], x[::2]), 2 * x[::2])


def test_both_paths_agree(add_module, multi_module, call_path):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4)).astype(np.float32)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    y, z = multi_module(x, w)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(z, x * x)
    ro = np.arange(5, dtype=np.float32)
    ro.flags.writeable = False  # read-only inputs are fine
    np.testing.assert_array_equal(add_module(ro, ro), 2 * ro)

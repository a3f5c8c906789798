"""Threads: calls release the GIL and one module serves many threads, bit-exact."""

from __future__ import annotations

import ctypes
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import loom
from loom import _capi
from conftest import MODELS


@pytest.fixture(autouse=True)
def _both_paths(call_path):
    """Every test here runs through both call paths."""
    return call_path


def test_library_releases_the_gil():
    # ctypes.CDLL (not PyDLL) drops the GIL around every foreign call
    assert isinstance(_capi.lib, ctypes.CDLL) and not isinstance(_capi.lib, ctypes.PyDLL)


def _mlp_args(b: int, seed: int):
    rng = np.random.default_rng(seed)
    return [
        rng.standard_normal((b, 784)).astype(np.float32),
        (rng.standard_normal((256, 784)) * 0.05).astype(np.float32),
        rng.standard_normal(256).astype(np.float32),
        (rng.standard_normal((10, 256)) * 0.05).astype(np.float32),
        rng.standard_normal(10).astype(np.float32),
    ]


def test_concurrent_calls_equal_sequential_ones():
    for threads in (1, 2):
        m = loom.compile(MODELS / "mlp.loom", threads=threads)
        cases = [_mlp_args(b, seed) for seed, b in enumerate([1, 2, 3, 5, 7, 11, 13, 64])]
        want = [m(*a) for a in cases]
        jobs = [(i % len(cases)) for i in range(64)]

        def run(i):
            return i, m(*cases[i]), m(*cases[i], dlpack=True)

        with ThreadPoolExecutor(max_workers=4) as ex:
            for i, got, t in ex.map(run, jobs):
                np.testing.assert_array_equal(got, want[i])  # bit-exact with the sequential call
                np.testing.assert_array_equal(np.from_dlpack(t), want[i])


def test_other_threads_run_during_a_call():
    # A call that takes a while (a big batch) in one thread while the main thread keeps counting:
    # with the GIL held during the call the counter would stand still.
    m = loom.compile(MODELS / "mlp.loom", threads=1)
    args = _mlp_args(4096, 0)
    m(*args)
    t0 = time.perf_counter()
    m(*args)
    one_call = time.perf_counter() - t0
    calls = max(3, int(0.3 / max(one_call, 1e-4)))
    done = threading.Event()

    def work():
        for _ in range(calls):
            m(*args)
        done.set()

    th = threading.Thread(target=work)
    counter = 0
    th.start()
    while not done.is_set():
        counter += 1
        time.sleep(0)
    th.join()
    assert counter > calls, f"the main thread ran {counter} times during {calls} calls"

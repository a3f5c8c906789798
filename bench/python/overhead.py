#!/usr/bin/env python3
"""bench/python/overhead.py — per-call overhead of Loom's Python package over the C call
(issue 25's goal: < 10 us), a program, not a timed test.

    python/.venv/bin/python bench/python/overhead.py [--c-bench zig-out/bin/bench-pycall-c]
                                                     [--n 16] [--iters 20000] [--rounds 3]

The model is tiny (@main(x, y) = x + y on f32(n)), so a call's cost is the call path itself.
Each round runs, one after the other on the same machine: the C program bench-pycall-c
(loom_rt_call on inputs made once, `scripts/zig build bench -Doptimize=ReleaseFast`), then the
same calls from Python — NumPy in / NumPy out (``m(x, y)``: the loom._fastcall extension
when the wheel has it, and again through the ctypes path), NumPy in / loom.Tensor out
(``dlpack=True``: the ctypes path), and PyTorch tensors in (when torch is installed). Each figure is the median
over rounds of the mean ns per call; the overhead is Python's minus C's. Both use one runtime
thread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import loom

MODEL = """// tiny: one elementwise add, so a call costs its call path
fn @main(x: Tensor[(n), f32], y: Tensor[(n), f32]) -> Tensor[(n), f32] {
  dataflow {
    z = add(x, y)
    output z
  }
  return z
}
"""


def time_py(fn, iters: int) -> float:
    """Mean ns per call of fn() over iters calls."""
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        fn()
    return (time.perf_counter_ns() - t0) / iters


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--c-bench", default=os.path.join(root, "zig-out", "bin", "bench-pycall-c"))
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tiny.loom")
        with open(path, "w") as f:
            f.write(MODEL)
        m = loom.compile(path, threads=1)
        x = np.arange(a.n, dtype=np.float32)
        y = np.ones(a.n, dtype=np.float32)
        assert np.array_equal(m(x, y), x + y)
        import loom._module as lm

        fast = lm._fast

        def ctypes_path():
            lm._fast = None
            try:
                return m(x, y)
            finally:
                lm._fast = fast

        cases = {"numpy in, numpy out": lambda: m(x, y)}
        if fast is not None:
            cases["(same, ctypes path)"] = ctypes_path
        cases["numpy in, loom.Tensor out"] = lambda: m(x, y, dlpack=True)
        try:
            import torch

            tx, ty = torch.from_numpy(x), torch.from_numpy(y)
            cases["torch in, numpy out"] = lambda: m(tx, ty)
        except ImportError:
            print("(torch not installed: no torch row)")
        for fn in cases.values():
            time_py(fn, 1000)  # warm up
        c_ns: list[float] = []
        py_ns: dict[str, list[float]] = {k: [] for k in cases}
        for _ in range(a.rounds):
            if os.path.exists(a.c_bench):
                out = subprocess.run([a.c_bench, path, str(a.n), str(a.iters)], capture_output=True, text=True,
                                     check=True).stdout
                c_ns.append(float(out.split()[1]))
            for k, fn in cases.items():
                py_ns[k].append(time_py(fn, a.iters))
    c = statistics.median(c_ns) if c_ns else None
    print(f"tiny model add(f32({a.n}), f32({a.n})), 1 thread, {a.iters} calls x {a.rounds} rounds, "
          f"Python {sys.version.split()[0]}, NumPy {np.__version__}")
    if c is None:
        print(f"C call: {a.c_bench} not built (scripts/zig build bench -Doptimize=ReleaseFast): no overhead figure")
    else:
        print(f"{'C loom_rt_call':32s} {c / 1000:8.2f} us/call")
    for k, v in py_ns.items():
        p = statistics.median(v)
        extra = f"   overhead over C: {(p - c) / 1000:6.2f} us" if c is not None else ""
        print(f"{'Python ' + k:32s} {p / 1000:8.2f} us/call{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

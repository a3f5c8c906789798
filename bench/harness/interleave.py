"""interleave.py — side-by-side timing that survives a shared machine's drift.

Two systems timed minutes apart see different machines (another process's build, clock changes), so
every comparison here runs its systems case by case in alternation: A, B, A, B, ... Each call is
timed on its own; a burst of noise then lands on both systems instead of on one. Used by bench/ops
(harness/ops.py: both systems in one process) and bench/run (harness/main.py: one serving worker
process per system, driven in turn).

    times = alternate([("loom", fa), ("ort", fb)], rounds=7, budget_s=2.0, min_rounds=3)
    med, spread = summary(times["loom"])
"""
import time

import numpy as np


def alternate(calls, rounds, budget_s=None, min_rounds=1, gap_s=0.0):
    """Runs every (name, fn) once per round, in order, for `rounds` rounds (fewer when `budget_s` of wall
    time is spent, but never fewer than `min_rounds`). fn() returns the seconds of its call (the system's
    own measure) or None (then the wall time of fn is used). `gap_s` is slept between two systems' calls:
    thread pools spin for a while after their work (ORT's and Loom's about 1 ms), and on few cores the
    spinning of one would slow the next system's call. Returns {name: [seconds, ...]}."""
    out = {name: [] for name, _ in calls}
    t0 = time.perf_counter()
    for r in range(rounds):
        if r >= min_rounds and budget_s is not None and time.perf_counter() - t0 > budget_s:
            break
        for name, fn in calls:
            if gap_s:
                time.sleep(gap_s)
            a = time.perf_counter()
            s = fn()
            out[name].append(s if s is not None else time.perf_counter() - a)
    return out


def summary(times):
    """(median, spread): spread is half the interquartile range over the median (0.05 = +-5 %)."""
    if not times:
        return None, None
    t = np.asarray(times, dtype=np.float64)
    med = float(np.median(t))
    q1, q3 = np.percentile(t, [25, 75])
    return med, float((q3 - q1) / 2 / med) if med > 0 else 0.0


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return float(np.exp(np.mean(np.log(xs)))) if xs else None

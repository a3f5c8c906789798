"""interleave.py — side-by-side timing that survives a shared machine's drift.

Two systems timed minutes apart see different machines (another process's build, clock changes), so
every comparison here runs its systems case by case in alternation: A, B, A, B, ... Each call is
timed on its own; a burst of noise then lands on both systems instead of on one. Used by bench/ops
(harness/ops.py: both systems in one process) and bench/run (harness/main.py: one serving worker
process per system, driven in turn).

    times = alternate([("loom", fa), ("ort", fb)], rounds=7, budget_s=2.0, min_rounds=3)
    med, spread = summary(times["loom"])
"""
import os
import threading
import time

import numpy as np


def _tasks(pid):
    """Thread ids of process `pid` and of all its descendants (children files of /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            out.append((p, t))
            try:
                todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    return out


def _running(tasks, skip):
    """How many of `tasks` are running or runnable (state R in /proc/PID/task/TID/stat)."""
    n = 0
    for p, t in tasks:
        if t == skip:
            continue
        try:
            stat = open(f"/proc/{p}/task/{t}/stat").read()
        except OSError:
            continue
        n += stat[stat.rindex(")") + 2] == "R"
    return n


def quiesce(pids, polls=4, poll_s=0.0005, max_s=0.5):
    """Waits until no thread of `pids` (or of their descendants; this thread excluded) is running, in
    `polls` consecutive looks `poll_s` apart (the state letter of /proc/PID/task/TID/stat). Thread pools
    spin after their work (ONNX Runtime's intra-op workers for about 60 ms after each run, Loom's for
    1 ms), and on few cores the spinning of one system's threads runs through the next system's timed
    call: on 2 cores, ORT's spinning made Loom's 2-thread convolution 2x slower than with ORT's spinning
    turned off. Waiting for quiet keeps each system's own defaults (spinning included) and keeps it out
    of the other's time. (The run times in schedstat do not serve: a thread that never leaves the CPU
    has its time brought up to date only at a tick.) Gives up after `max_s`: a machine busy with other
    work is not this harness's to fix. Returns the seconds waited."""
    if not os.path.isdir("/proc/self/task"):
        time.sleep(polls * poll_s)
        return polls * poll_s
    me = str(threading.get_native_id())
    t0 = time.perf_counter()
    tasks = [x for pid in pids for x in _tasks(pid)]
    quiet = 0
    while quiet < polls and time.perf_counter() - t0 < max_s:
        quiet = quiet + 1 if _running(tasks, me) == 0 else 0
        time.sleep(poll_s)
    return time.perf_counter() - t0


def alternate(calls, rounds, budget_s=None, min_rounds=1, quiet_pids=None, burst=1):
    """Runs every (name, fn) in turn, round after round, for `rounds` rounds (fewer when `budget_s` of
    wall time is spent, but never fewer than `min_rounds`). fn() returns the seconds of its call (the
    system's own measure) or None (then the wall time of fn is used). With `quiet_pids` (the processes
    whose threads run the systems), each system's turn starts only when those threads have gone quiet
    (`quiesce`): one system's spinning pool must not run through the other's call. A turn is `burst`
    calls back to back of which the first is not counted when burst > 1: the others run with the
    system's own pool awake, as in a stream of calls (each system's spinning helps only itself).
    Returns {name: [seconds, ...]}."""
    out = {name: [] for name, _ in calls}
    wait = [0.0]
    t0 = time.perf_counter()
    for r in range(rounds):
        if r >= min_rounds and budget_s is not None and time.perf_counter() - t0 - wait[0] > budget_s:
            break
        for name, fn in calls:
            if quiet_pids:
                wait[0] += quiesce(quiet_pids)
            for b in range(burst):
                a = time.perf_counter()
                s = fn()
                if b > 0 or burst == 1:
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

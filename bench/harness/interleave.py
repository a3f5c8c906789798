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


def _tasks(pid, descend=True):
    """Thread ids of process `pid` and (`descend`) of all its descendants (children files of /proc)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tids:
            out.append((p, t))
            if not descend:
                continue
            try:
                todo += [int(c) for c in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                pass
    return out


def _look(tasks, skip):
    """(threads of `tasks` running or runnable -- state R in /proc/PID/task/TID/stat --, and the
    nanoseconds they have run in all -- the first field of .../schedstat)."""
    n, ns = 0, 0
    for p, t in tasks:
        if t == skip:
            continue
        try:
            stat = open(f"/proc/{p}/task/{t}/stat").read()
            ns += int(open(f"/proc/{p}/task/{t}/schedstat").read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        n += stat[stat.rindex(")") + 2] == "R"
    return n, ns


def cpu_ns(pids, descend=True):
    """Nanoseconds run by every thread of `pids` (and, `descend`, of their descendants), the calling
    thread excluded."""
    if not os.path.isdir("/proc/self/task"):
        return 0
    return _look([x for pid in pids for x in _tasks(pid, descend)], str(threading.get_native_id()))[1]


def quiesce(pids, quiet_s=0.005, poll_s=0.0005, max_s=0.5):
    """Waits until no thread of `pids` (or of their descendants; this thread excluded) runs: looks
    `poll_s` apart for `quiet_s` in which none is in state R (/proc/PID/task/TID/stat) and their run
    time (/proc/PID/task/TID/schedstat) has not grown since the first of them. Thread pools spin after
    their work (ONNX Runtime's intra-op workers for about 60-110 ms of wall time after each run on 2
    cores, Loom's for 1 ms), and on few cores the spinning of one system's threads runs through the next
    system's timed call: on 2 cores, ORT's spinning made Loom's 2-thread convolution 2x slower than with
    ORT's spinning turned off. The state letter alone misses a thread that naps between looks and runs
    between them; its run time, brought up to date at every switch, does not, when the nap is shorter
    than `quiet_s` (5 ms: also longer than a tick, which is when a thread that never leaves the CPU has
    its run time brought up to date -- such a thread is in state R anyway). Waiting for quiet keeps each
    system's own defaults (spinning included) and keeps it out of the other's time; `alternate` checks
    it by what the other system ran during each timed call. Gives up after `max_s`: a machine busy with
    other work is not this harness's to fix. Returns the seconds waited."""
    if not os.path.isdir("/proc/self/task"):
        time.sleep(quiet_s)
        return quiet_s
    me = str(threading.get_native_id())
    t0 = time.perf_counter()
    tasks = [x for pid in pids for x in _tasks(pid)]
    start, since = None, None  # when the quiet began, and the run time then
    while time.perf_counter() - t0 < max_s:
        running, ns = _look(tasks, me)
        now = time.perf_counter()
        if running or (since is not None and ns != since):
            start, since = None, None
        elif start is None:
            start, since = now, ns
        elif now - start >= quiet_s:
            break
        time.sleep(poll_s)
    return time.perf_counter() - t0


def alternate(calls, rounds, budget_s=None, min_rounds=1, quiet_pids=None, burst=1, others=None):
    """Runs every (name, fn) in turn, round after round, for `rounds` rounds (fewer when `budget_s` of
    wall time is spent, but never fewer than `min_rounds`). fn() returns the seconds of its call (the
    system's own measure) or None (then the wall time of fn is used). With `quiet_pids` (the processes
    whose threads run the systems), each system's turn starts only when those threads have gone quiet
    (`quiesce`): one system's spinning pool must not run through the other's call. A turn is `burst`
    calls back to back of which the first is not counted when burst > 1: the others run with the
    system's own pool awake, as in a stream of calls (each system's spinning helps only itself).
    `others` ({name: pids of the processes whose threads are NOT that system's, their children not
    included}) checks it: for every counted call, the nanoseconds those threads ran during it go to
    out[name + "/others_ns"] (0 when the interleaving was fair to that call). Returns {name: [seconds, ...], ...}."""
    out = {name: [] for name, _ in calls}
    if others:
        out.update({name + "/others_ns": [] for name, _ in calls})
    wait = [0.0]
    t0 = time.perf_counter()
    for r in range(rounds):
        if r >= min_rounds and budget_s is not None and time.perf_counter() - t0 - wait[0] > budget_s:
            break
        for name, fn in calls:
            if quiet_pids:
                wait[0] += quiesce(quiet_pids)
            for b in range(burst):
                watch = others.get(name) if others else None
                before = cpu_ns(watch, descend=False) if watch else 0
                a = time.perf_counter()
                s = fn()
                if b > 0 or burst == 1:
                    out[name].append(s if s is not None else time.perf_counter() - a)
                    if watch:
                        out[name + "/others_ns"].append(cpu_ns(watch, descend=False) - before)
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

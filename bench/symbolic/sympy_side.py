#!/usr/bin/env python3
"""sympy_side.py — the SymPy half of bench/symbolic: the same expressions and proof
queries Loom's bench-symbolic wrote, done by SymPy, with the agreement rate.

    sympy_side.py FILE [--limit N] [--timeout S]

FILE lines (from bench-symbolic):
    E <tree, Python syntax> \t <Loom's simplified form>
    P le|eq <lhs tree> \t <rhs tree> \t <Loom's answer: true|false|unknown>

Variables are nonnegative integers (Loom's shape variables). SymPy simplifies with
sympy.simplify; a proof query simplifies the difference and asks is_nonnegative /
is_zero. Agreement: a simplified form agrees when SymPy's and Loom's forms evaluate
equal at random points; a proof agrees when both are definite and equal (queries where
either is unknown are counted apart). Prints "key: value" lines for bench/symbolic/run.
"""
import random
import signal
import sys
import time

import sympy
from sympy import Max, Min

N, M, K, P = sympy.symbols("n m k p", integer=True, nonnegative=True)
NS = {"n": N, "m": M, "k": K, "p": P, "Min": Min, "Max": Max}


class Timeout(Exception):
    pass


TIMED_OUT = object()


def _alarm(signum, frame):
    raise Timeout()


def timed(fn, timeout):
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        return fn()
    except Timeout:
        return TIMED_OUT
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def value(expr, point):
    return int(sympy.sympify(expr).subs(point))


# Plain Python integers: the ground truth for both sides (// and % floor like Loom's).
PY_NS = {"Min": min, "Max": max, "min": min, "max": max,
         "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
         "ceildiv": lambda a, b: -((-a) // b)}


def main():
    args = sys.argv[1:]
    path = args[0]
    limit = int(args[args.index("--limit") + 1]) if "--limit" in args else 200
    timeout = float(args[args.index("--timeout") + 1]) if "--timeout" in args else 5.0
    signal.signal(signal.SIGALRM, _alarm)
    exprs, proofs = [], []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("E "):
                tree, loom = line[2:].split("\t")
                exprs.append((tree, loom))
            elif line.startswith("P "):
                op, rest = line[2:].split(" ", 1)
                lhs, rhs, ans = rest.split("\t")
                proofs.append((op, lhs, rhs, ans))
    exprs, proofs = exprs[:limit], proofs[:limit]
    rng = random.Random(1)

    # Simplification.
    done = agree = disagree = timeouts = 0
    t0 = time.perf_counter()
    results = []
    for tree, loom in exprs:
        e = eval(tree, NS)
        s = timed(lambda: sympy.simplify(e), timeout)
        if s is TIMED_OUT:
            timeouts += 1
            s = None
        results.append((s, loom))
        done += 1
    t_simp = time.perf_counter() - t0
    loom_wrong = sympy_wrong = 0
    for (tree, _), (s, loom) in zip(exprs, results):
        if s is None or loom == "error":
            continue
        ok = True
        for _ in range(5):
            ints = {v: rng.choice([0, 1, 2, 3, 7, rng.randint(0, 1000)]) for v in "nmkp"}
            try:
                truth = eval(tree, dict(PY_NS, **ints))
            except ZeroDivisionError:
                continue
            lv = eval(loom, dict(PY_NS, **ints))
            sv = value(s, {NS[v]: x for v, x in ints.items()})
            if lv != sv:
                ok = False
                loom_wrong += lv != truth
                sympy_wrong += sv != truth
        agree += ok
        disagree += not ok
        if not ok:
            print(f"disagree simplify: {tree}\n  loom {loom}\n  sympy {s}", file=sys.stderr)

    # Proofs.
    pdone = pboth = pagree = psympy_only = ploom_only = ptimeouts = 0
    t0 = time.perf_counter()
    answers = []
    for op, lhs, rhs, ans in proofs:
        a, b = eval(lhs, NS), eval(rhs, NS)

        def ask():
            if op == "le":
                return sympy.simplify(b - a).is_nonnegative
            return sympy.simplify(a - b).is_zero
        r = timed(ask, timeout)
        if r is TIMED_OUT:
            ptimeouts += 1
            r = None
        answers.append((r, ans, op, lhs, rhs))
        pdone += 1
    t_prove = time.perf_counter() - t0
    for r, ans, op, lhs, rhs in answers:
        sym = None if r is None else ("true" if r else "false")
        if sym and ans != "unknown":
            pboth += 1
            if sym == ans:
                pagree += 1
            else:
                print(f"disagree prove {op}: {lhs} ? {rhs}: loom {ans}, sympy {sym}", file=sys.stderr)
        elif sym:
            psympy_only += 1
        elif ans != "unknown":
            ploom_only += 1

    print(f"sympy version: {sympy.__version__}")
    print(f"sympy simplify n: {done}")
    print(f"sympy simplify/s: {done / t_simp:.1f}")
    print(f"sympy simplify timeouts: {timeouts}")
    print(f"simplify agreement: {agree}/{agree + disagree}")
    print(f"simplify wrong values: loom {loom_wrong}, sympy {sympy_wrong}")
    print(f"sympy prove n: {pdone}")
    print(f"sympy prove/s: {pdone / t_prove:.1f}")
    print(f"sympy prove timeouts: {ptimeouts}")
    print(f"prove agreement: {pagree}/{pboth}")
    print(f"prove definite only sympy: {psympy_only}")
    print(f"prove definite only loom: {ploom_only}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""bench/serve/steplog.py — reads `loom serve --step-log FILE` (one line per engine step: its time
in ms, the decodes, the keys their attention read, the prompt tokens, the keys theirs read) and
says what the steps cost: percentiles of the step time for steps that only decode and for steps
that decode and carry prompt chunks, and a least-squares fit of the step time on the step's
tokens and keys (ms = fixed + per token * tokens + per key * keys) over steps that decode.

    bench/.venv/bin/python bench/serve/steplog.py FILE [--skip N]
"""
import argparse

import numpy as np


def pct(v, p):
    return float(np.percentile(v, p)) if len(v) else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file")
    ap.add_argument("--skip", type=int, default=0, help="steps to skip at the start")
    a = ap.parse_args()
    rows = np.array([[float(x) for x in ln.split()] for ln in open(a.file) if ln.strip() and not ln.startswith("#")])[a.skip:]
    if not len(rows):
        raise SystemExit("no steps")
    ms, dec, dk, pre, pk = rows.T
    print(f"{len(rows)} steps; {np.mean(dec):.1f} decodes and {np.mean(pre):.1f} prompt tokens a step on average")
    print("| steps | n | decodes | decode keys | prompt tokens | prompt keys | ms p50 | ms p90 | ms p99 |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, sel in [("decode only", (dec > 0) & (pre == 0)), ("decodes + prompt chunks", (dec > 0) & (pre > 0)),
                      ("prompt only", (dec == 0) & (pre > 0)), ("with decodes", dec > 0)]:
        if sel.any():
            print(f"| {name} | {sel.sum()} | {dec[sel].mean():.1f} | {dk[sel].mean():.0f} | {pre[sel].mean():.1f} | {pk[sel].mean():.0f} | "
                  f"{pct(ms[sel], 50):.2f} | {pct(ms[sel], 90):.2f} | {pct(ms[sel], 99):.2f} |")
    sel = dec > 0
    X = np.stack([np.ones(sel.sum()), (dec + pre)[sel], (dk + pk)[sel]], 1)
    if sel.sum() >= 3 and np.linalg.matrix_rank(X) == 3:  # one client: every step one token, no fit
        coef, *_ = np.linalg.lstsq(X, ms[sel], rcond=None)
        print(f"fit over steps that decode: ms = {coef[0]:.3f} + {coef[1] * 1e3:.2f}e-3 * tokens + {coef[2] * 1e6:.2f}e-6 * keys")
        slow = sel & (ms >= pct(ms[sel], 99))
        print(f"the slowest 1% of steps that decode: {dec[slow].mean():.1f} decodes ({dk[slow].mean():.0f} keys), "
              f"{pre[slow].mean():.1f} prompt tokens ({pk[slow].mean():.0f} keys), {ms[slow].mean():.2f} ms")


if __name__ == "__main__":
    main()

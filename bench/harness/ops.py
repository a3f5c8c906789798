"""ops.py — bench/ops: Loom against ONNX Runtime, one small model per operator family (harness/opdefs.py).

Called by bench/ops (which makes the venv and builds the benchmark programs). Per case:
  1. the model is written to bench/out/ops/models/ and compiled by Loom ONCE (bench-loom-serve:
     loom_compile_file with symbolic shapes + JIT) and opened by ONNX Runtime (CPU EP, graph
     optimisation ALL, one session per thread count);
  2. per thread count T: both systems set to T threads (Loom: loom_rt_set_threads on the same
     compilation; ORT: intra_op_num_threads = T), one warm-up call each whose outputs are compared
     (max |loom - ort| / max |ort| <= the case's tolerance; exact for integer results), then rounds
     of one Loom call and one ORT call in alternation (harness/interleave.py) until the rounds or the
     case's time budget run out;
  3. a table row: median ms and spread of each, the ratio, and each system's % of the machine's limit
     (bench-limits on the same cores: FMA peak for cases with flops, triad bandwidth for the rest).
The process runs on the first max(T) cores (sched_setaffinity); at T = 1 both systems use one thread.
Times are each system's own measure of its call: Loom's is bench-loom-serve's clock around
loom_rt_call plus the copy of the output (the pipe round trip to this process is not counted; inputs
are mapped, not copied); ORT's is the wall time of InferenceSession.run in this process (inputs wrapped,
output copied into NumPy). Both are host in, host out.

Ends with exactly one line: `ops: N families, loom/ort geomean X.XX, worst Y.YY (FAMILY)` — N families
measured (the unsupported and wrong ones are listed above it), the geometric mean over families of
each family's geometric-mean ratio at 1 thread, and the worst family's.
"""
import argparse
import csv
import datetime
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import interleave  # noqa: E402
import opdefs  # noqa: E402
import systems  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def limits(threads, quick):
    exe = os.path.join(ROOT, "zig-out", "bin", "bench-limits")
    r = subprocess.run([exe, "--threads", str(max(threads))] + (["--quick"] if quick else []), capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench-limits failed: {r.stderr}")
    return json.loads(r.stdout)


def rel_err(y, ref):
    y, ref = np.asarray(y), np.asarray(ref)
    if y.shape != ref.shape:
        return float("inf"), f"shape {y.shape} vs ORT's {ref.shape}"
    y64, r64 = y.astype(np.float64), ref.astype(np.float64)
    if not np.all(np.isfinite(y64) == np.isfinite(r64)):
        return float("inf"), "non-finite values where ORT has finite ones (or the reverse)"
    fin = np.isfinite(r64)
    d = float(np.max(np.abs(y64[fin] - r64[fin]), initial=0.0))
    return d / (float(np.max(np.abs(r64[fin]), initial=0.0)) + 1e-12), None


def slug(case):
    return "".join(ch if ch.isalnum() else "_" for ch in case.id)


def run_case(case, threads, args, mdir, wdir):
    """Rows (one per thread count) for one case; a case Loom cannot compile gives one `unsupported` row."""
    path = os.path.join(mdir, slug(case) + ".onnx")
    import onnx

    onnx.save(case.model(), path)
    I = case.inputs()
    base = dict(family=case.family, case=case.label, model=case.is_model)
    loom, ort = systems.Loom(threads[0], wdir), systems.OnnxRuntime(threads[0], wdir)
    t0 = time.time()
    try:
        loom.prepare(path, "ops")
    except systems.NotAvailable as ex:
        return [dict(base, status="unsupported", error=str(ex).replace("loom: ", ""))]
    except Exception as ex:
        return [dict(base, status="error", error=f"loom compile: {ex}")]
    compile_s = time.time() - t0
    ort.prepare(path, "ops")
    rows = []
    wbytes = weight_bytes(path) if case.count_weights else None
    variants = [(case.label, case.shapes, case.flops)] + list(case.variants)
    try:
        for label, shapes, flops in variants:
            I = case.inputs(shapes if label != case.label else None)
            for t in threads:
                loom.set_threads(t)
                ort.set_threads(t)
                row = dict(base, case=label, threads=t, loom_compile_s=compile_s, model=case.is_model)
                y_ort = ort.run(I)
                try:
                    y_loom = loom.run(I)
                except Exception as ex:
                    rows.append(dict(row, status="error", error=str(ex)[:300]))
                    continue
                err, why = rel_err(y_loom, y_ort)
                row["err"] = err
                if err > case.tol:
                    rows.append(dict(row, status="wrong", error=why or f"max |loom - ort| / max |ort| = {err:.2e} > {case.tol:g}"))
                    continue

                def loom_call():
                    loom.run(I, want_output=False)
                    return loom.own_time()

                def ort_call():
                    ort.run(I)
                    return None

                # ORT's threads live in this process, Loom's in bench-loom-serve: each call's
                # `others` are the other system's threads (this calling thread excluded)
                times = interleave.alternate([("loom", loom_call), ("ort", ort_call)], rounds=args.rounds,
                                             budget_s=args.case_budget, min_rounds=3,
                                             quiet_pids=[os.getpid(), loom.proc.pid], burst=3 if t > 1 else 1,
                                             others={"loom": [os.getpid()], "ort": [loom.proc.pid]})
                lm, ls = interleave.summary(times["loom"])
                om, osp = interleave.summary(times["ort"])
                out_bytes = np.asarray(y_ort).nbytes
                rows.append(dict(row, status="ok", loom_ms=lm * 1e3, loom_spread=ls, ort_ms=om * 1e3, ort_spread=osp,
                                 ratio=lm / om, rounds=len(times["loom"]), flops=flops,
                                 loom_others_ms=max(times["loom/others_ns"]) / 1e6, ort_others_ms=max(times["ort/others_ns"]) / 1e6,
                                 bytes=sum(a.nbytes for a in I.values()) + out_bytes + (wbytes if wbytes is not None else out_bytes)))
    finally:
        loom.close()
    return rows


def weight_bytes(path):
    import onnx

    m = onnx.load(path)
    return sum(len(t.raw_data) for t in m.graph.initializer)


def pct_limit(row, lim):
    """% of the better-bound machine limit on this thread count: flops over the FMA peak when the case has
    flops, else bytes over the triad bandwidth."""
    ti = lim["threads"].index(row["threads"]) if row["threads"] in lim["threads"] else -1
    def pct(ms):
        s = ms * 1e-3
        if row["flops"]:
            return 100 * row["flops"] / s / 1e9 / lim["fma_gflops"][ti]
        return 100 * row["bytes"] / s / 1e9 / lim["triad_gbs"][ti]
    return pct(row["loom_ms"]), pct(row["ort_ms"])


def fmt_ms(v):
    return f"{v:.3g}" if v < 100 else f"{v:.0f}"


def table(rows, lim, threads):
    L = ["| family | case | T | Loom ms (±) | ORT ms (±) | Loom ÷ ORT | Loom % limit | ORT % limit |",
         "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] == "ok":
            pl, po = pct_limit(r, lim)
            kind = "peak" if r["flops"] else "triad"
            L.append(f"| {r['family']} | {r['case']} | {r['threads']} | {fmt_ms(r['loom_ms'])} (±{100 * r['loom_spread']:.0f}%) | "
                     f"{fmt_ms(r['ort_ms'])} (±{100 * r['ort_spread']:.0f}%) | {r['ratio']:.2f} | {pl:.1f} % {kind} | {po:.1f} % {kind} |")
        else:
            t = r.get("threads", "")
            L.append(f"| {r['family']} | {r['case']} | {t} | {r['status']} | | | | {r['error'][:160]} |")
    return L


def summary_lines(rows, threads):
    L = []
    for r in rows:  # whole networks: reported on their own line, not among the operator families
        if r.get("model") and r["status"] == "ok":
            L.append(f"model {r['family']} {r['case']}, {r['threads']} thread{'s' if r['threads'] > 1 else ''}: loom "
                     f"{fmt_ms(r['loom_ms'])} ms, ort {fmt_ms(r['ort_ms'])} ms, loom/ort {r['ratio']:.2f}")
    rows = [r for r in rows if not r.get("model")]
    fams = list(dict.fromkeys(r["family"] for r in rows))
    per = {}
    for t in threads:
        per[t] = {}
        for f in fams:
            rs = [r["ratio"] for r in rows if r["family"] == f and r.get("threads") == t and r["status"] == "ok"]
            g = interleave.geomean(rs)
            if g:
                per[t][f] = g
    bad = [f for f in fams if not any(f in per[t] for t in threads)]
    for f in bad:
        why = next(r for r in rows if r["family"] == f)
        L.append(f"not measured: {f} ({why['status']}: {why['error'][:200]})")
    for t in threads[1:]:
        g = interleave.geomean(list(per[t].values()))
        if g:
            L.append(f"ops at {t} threads: loom/ort geomean {g:.2f} over {len(per[t])} families")
    scal = []
    for r1 in rows:
        if r1["status"] == "ok" and r1["threads"] == 1 and r1["flops"]:
            r2 = next((r for r in rows if r["status"] == "ok" and r["threads"] == 2 and r["family"] == r1["family"]
                       and r["case"] == r1["case"]), None)
            if r2:
                scal.append(f"{r1['family']} {r1['case']}: loom {r1['loom_ms'] / r2['loom_ms']:.2f}x, ort {r1['ort_ms'] / r2['ort_ms']:.2f}x")
    if scal:
        L.append("1 -> 2 thread scaling (compute-bound cases): " + "; ".join(scal))
    ok = [r for r in rows if r["status"] == "ok"]
    if ok:  # what the other system's threads ran during a timed call: 0 when the interleaving was fair
        lo, oo = max(ok, key=lambda r: r["loom_others_ms"]), max(ok, key=lambda r: r["ort_others_ms"])
        L.append(f"fairness: the other system's threads ran at most {lo['loom_others_ms']:.2f} ms during a timed Loom call "
                 f"({lo['family']} {lo['case']} t{lo['threads']}) and {oo['ort_others_ms']:.2f} ms during a timed ORT call "
                 f"({oo['family']} {oo['case']} t{oo['threads']})")
    bad_rows = [r for r in rows if r["status"] not in ("ok", "unsupported")]
    if bad_rows:
        L.append(f"{len(bad_rows)} case(s) wrong or failed: " + "; ".join(f"{r['family']} {r['case']} t{r.get('threads', '')}: "
                                                                      f"{r['error'][:120]}" for r in bad_rows))
    t1 = per[threads[0]]
    if t1:
        worst = max(t1, key=t1.get)
        L.append(f"ops: {len(t1)} families, loom/ort geomean {interleave.geomean(list(t1.values())):.2f}, "
                 f"worst {t1[worst]:.2f} ({worst})")
    else:
        L.append("ops: 0 families, loom/ort geomean n/a, worst n/a (none)")
    return L


def main():
    ap = argparse.ArgumentParser(prog="bench/ops")
    ap.add_argument("--quick", action="store_true", help="one or two shapes per family, fewer rounds (under 5 minutes)")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--families", default=None, help="comma list of families (default: all; the networks resnet18 and "
                    "mobilenet_v2 run in the full mode or when named here)")
    ap.add_argument("--rounds", type=int, default=None, help="alternating rounds per case (default quick 5, full 15)")
    ap.add_argument("--case-budget", type=float, default=None, help="s of rounds per case and thread count (at least 3 rounds)")
    ap.add_argument("--tag", default=None, help="results file name (default <date>-ops[-quick])")
    ap.add_argument("--no-save", action="store_true", help="print only; write nothing to bench/results")
    args = ap.parse_args()
    threads = [int(t) for t in args.threads.split(",")]
    args.rounds = args.rounds or (5 if args.quick else 15)
    args.case_budget = args.case_budget if args.case_budget is not None else (1.5 if args.quick else 10.0)
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cores[:max(threads)])
    os.environ["LOOM_COMPILE_THREADS"] = "1"

    out = os.path.join(ROOT, "bench", "out", "ops")
    mdir, wdir = os.path.join(out, "models"), os.path.join(out, "work")
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(wdir, exist_ok=True)
    t_start = time.time()
    lim = limits(threads, args.quick)
    log(f"bench/ops: limits {json.dumps(lim)}")
    cases = opdefs.cases(args.quick)
    if args.families:
        want = set(args.families.split(","))
        cases = [c for c in opdefs.all_cases() if c.family in want and (c.quick or not args.quick or c.is_model)]
    rows = []
    for c in cases:
        a = time.time()
        rs = run_case(c, threads, args, mdir, wdir)
        rows += rs
        log(f"  {c.id:50s} {time.time() - a:5.1f} s  " + "  ".join(
            f"t{r['threads']}: {r['ratio']:.2f}" if r["status"] == "ok" else f"{r['status']}: {r['error'][:120]}" for r in rs))
    lim_end = limits(threads, args.quick)
    lim = dict(lim, fma_gflops=[max(a, b) for a, b in zip(lim["fma_gflops"], lim_end["fma_gflops"])],
               triad_gbs=[max(a, b) for a, b in zip(lim["triad_gbs"], lim_end["triad_gbs"])])
    import onnxruntime

    load = os.getloadavg()
    head = [f"# bench/ops{' --quick' if args.quick else ''} — {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC", "",
            f"{cpu_name()}, cores {cores[:max(threads)]}, load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; "
            f"onnxruntime {onnxruntime.__version__}; {time.time() - t_start:.0f} s. Limits (best of start and end, bench-limits): "
            + "; ".join(f"{t} thread{'s' if t > 1 else ''}: {p:.0f} GFLOP/s FMA ({lim['isa']}), triad {b:.1f} GB/s"
                        for t, p, b in zip(lim["threads"], lim["fma_gflops"], lim["triad_gbs"])) + ".",
            "",
            f"Loom and ORT alternate call by call; medians of up to {args.rounds} rounds (at least 3, {args.case_budget:g} s "
            "per case and thread count), ± = half the interquartile range over the median. % limit: of the FMA peak "
            "(cases with flops) or of triad bandwidth over the bytes of inputs, output and weights.", ""]
    lines = head + table(rows, lim, threads) + [""] + summary_lines(rows, threads)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if not args.no_save:
        resdir = os.path.join(ROOT, "bench", "results")
        tag = args.tag or datetime.datetime.utcnow().strftime("%Y-%m-%d") + "-ops" + ("-quick" if args.quick else "")
        open(os.path.join(resdir, tag + ".md"), "w").write(text)
        keys = ["family", "case", "threads", "status", "loom_ms", "loom_spread", "ort_ms", "ort_spread", "ratio", "rounds",
                "err", "flops", "bytes", "loom_compile_s", "loom_others_ms", "ort_others_ms", "error"]
        with open(os.path.join(resdir, tag + ".csv"), "w", newline="") as f:
            w = csv.DictWriter(f, keys, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
        log(f"bench/ops: wrote bench/results/{tag}.md and .csv")


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


if __name__ == "__main__":
    main()

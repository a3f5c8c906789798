"""compile_ab.py — bench/compile's rows for two builds side by side, interleaved (base, new, base,
new, ...), with the CPU time (user + sys) of each process as well as its wall time: on a shared
machine the wall time is mostly waiting for a core, the CPU time is what a compile costs.

    bench/.venv/bin/python bench/harness/compile_ab.py BASE_BIN_DIR NEW_BIN_DIR [--rounds 4] [--threads 2]

Each BIN_DIR holds a bench-compile (zig-out/bin of a release build). Every build gets its own
cache directories. Rows (bench/compile's, issue 23's goals): the GPT-2-small block (B2) and the
12-layer GPT-2 prefill (B3) cold (an empty cache) and warm (the cache a cold compile filled), and
B3 with one layer changed against B3's warm cache (a hard-linked copy of it per run, so every run
is the first after the change). The models are bench/compile's (bench/out/models). Prints one
Markdown table: per row and build, the in-process compile ms, the process's wall ms and its
user + sys seconds, each as min-max over the rounds.
"""
import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r"compile .*: ([0-9.]+) ms \(passes ([0-9.]+) ms, planning\+lowering ([0-9.]+) ms, codegen ([0-9.]+) ms\)")


def run(bindir, model, cache, threads):
    env = dict(os.environ, LOOM_CACHE_DIR=cache, LOOM_COMPILE_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([os.path.join(bindir, "bench-compile"), model], capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - t0) * 1e3
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise SystemExit(f"{bindir}/bench-compile {model}: {r.stderr.strip()}")
    m = LINE.search(r.stdout)
    if not m:
        raise SystemExit(f"no result line: {r.stdout}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return dict(ms=float(m.group(1)), passes=float(m.group(2)), codegen=float(m.group(4)), wall=wall, cpu=cpu)


def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else fmt.format(lo) + "-" + fmt.format(hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=4, help="warm and changed runs per build (cold: half as many)")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    models = os.path.join(ROOT, "bench", "out", "models")
    block, stack, changed = (os.path.join(models, f) for f in ("gpt2_block.onnx", "gpt2_prefill.onnx", "gpt2_prefill_changed.onnx"))
    builds = {"base": args.base, "new": args.new}
    tmp = tempfile.mkdtemp(prefix="loom-compile-ab-")
    res = {}  # (row, build) -> [runs]
    try:
        warm = {}
        cold_rounds = max(1, args.rounds // 2)
        for rnd in range(cold_rounds):
            for name, model in (("B2", block), ("B3", stack)):
                for b, d in builds.items():
                    cache = os.path.join(tmp, f"{b}-{name}-cold{rnd}")
                    res.setdefault((f"{name} cold", b), []).append(run(d, model, cache, args.threads))
                    print(f"{name} cold {b}: {res[(f'{name} cold', b)][-1]}", file=sys.stderr, flush=True)
                    warm[(name, b)] = cache
        for rnd in range(args.rounds):
            for name, model in (("B2", block), ("B3", stack)):
                for b, d in builds.items():
                    res.setdefault((f"{name} warm", b), []).append(run(d, model, warm[(name, b)], args.threads))
                    print(f"{name} warm {b}: {res[(f'{name} warm', b)][-1]}", file=sys.stderr, flush=True)
            for b, d in builds.items():
                copy = os.path.join(tmp, f"{b}-changed{rnd}")
                subprocess.run(["cp", "-al", warm[("B3", b)], copy], check=True)
                res.setdefault(("B3 one layer changed", b), []).append(run(d, changed, copy, args.threads))
                print(f"B3 changed {b}: {res[('B3 one layer changed', b)][-1]}", file=sys.stderr, flush=True)
                shutil.rmtree(copy, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    print(f"{os.cpu_count()} CPUs, LOOM_COMPILE_THREADS={args.threads}, load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}\n")
    print("| row | goal | base ms | new ms | base wall ms | new wall ms | base CPU s | new CPU s | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    goals = {"B2 cold": "< 1000", "B2 warm": "< 100", "B3 cold": "< 2000", "B3 warm": "< 200", "B3 one layer changed": "< 500"}
    for row in ("B2 cold", "B2 warm", "B3 cold", "B3 warm", "B3 one layer changed"):
        b, n = res[(row, "base")], res[(row, "new")]
        print(f"| {row} | {goals[row]} | {span([r['ms'] for r in b], '{:.0f}')} | {span([r['ms'] for r in n], '{:.0f}')} | "
              f"{span([r['wall'] for r in b], '{:.0f}')} | {span([r['wall'] for r in n], '{:.0f}')} | "
              f"{span([r['cpu'] for r in b], '{:.2f}')} | {span([r['cpu'] for r in n], '{:.2f}')} | {len(b)} |")


if __name__ == "__main__":
    main()

"""compile.py — bench/compile: how long Loom takes to compile a model, cold and warm (issue 23).

Called by bench/compile (which makes the venv and builds the benchmark programs). Every compile is
bench-compile in its own process (loom_compile_file + loom_compiled_open: the pipeline, then JIT
codegen through the kernel cache), with LOOM_COMPILE_THREADS = the thread count (default 2) and
LOOM_CACHE_DIR set per row:
  cold     a new, empty cache directory: every distinct kernel goes through LLVM;
  warm     the directory the cold compile filled: no kernel goes through LLVM (median of 3);
  changed  (the 12-layer stack) the same model with one layer changed — the epsilon of its last
           layer's second LayerNormalization, 1e-5 -> 2e-5 — against the cache the base model filled:
           only the kernels that layer changed go through LLVM.
The models are models/gen_models.py's B2 (GPT-2-small block) and B3 prefill (12-layer stack, 340 MB
of weights), written to bench/out/models once. With --conformance, the ONNX node suite through
`loom conformance --compiled` is timed twice on one new cache directory (cold, then warm).

Goals (issue 23): block cold < 1.0 s, warm < 0.1 s; 12 layers cold < 2.0 s, warm < 0.2 s, one changed
layer < 0.5 s; the node suite warm at least 3x faster than cold. Prints the table and writes
bench/results/<date>-compile.md (unless --no-save).
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LINE = re.compile(r"compile .*: ([0-9.]+) ms \(passes ([0-9.]+) ms, planning\+lowering ([0-9.]+) ms, codegen ([0-9.]+) ms\); "
                  r"kernels (\d+), distinct (\d+), cache hits (\d+), compiled by LLVM (\d+)")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def models(outdir):
    os.makedirs(outdir, exist_ok=True)
    want = [m for m in ("gpt2_block", "gpt2_prefill") if not os.path.exists(os.path.join(outdir, m + ".onnx"))]
    if want:
        log(f"bench/compile: writing {', '.join(want)} into {outdir}")
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "gen_models.py"), outdir, "--only", *want], check=True)
    changed = os.path.join(outdir, "gpt2_prefill_changed.onnx")
    if not os.path.exists(changed):
        import onnx
        m = onnx.load(os.path.join(outdir, "gpt2_prefill.onnx"))
        lns = [n for n in m.graph.node if n.op_type == "LayerNormalization"]
        # the stack's LayerNormalizations in order: two per layer, then the final one
        target = lns[-2]
        for a in target.attribute:
            if a.name == "epsilon":
                a.f = 2e-5
        onnx.save(m, changed)
        log(f"bench/compile: wrote {changed} (LayerNormalization '{target.name}' epsilon 1e-5 -> 2e-5)")
    return {"block": os.path.join(outdir, "gpt2_block.onnx"), "stack": os.path.join(outdir, "gpt2_prefill.onnx"),
            "changed": changed}


def compile_once(model, cache, threads):
    env = dict(os.environ, LOOM_CACHE_DIR=cache, LOOM_COMPILE_THREADS=str(threads))
    exe = os.path.join(ROOT, "zig-out", "bin", "bench-compile")
    t0 = time.perf_counter()
    r = subprocess.run([exe, model], capture_output=True, text=True, env=env)
    wall = (time.perf_counter() - t0) * 1e3
    if r.returncode != 0:
        raise SystemExit(f"bench-compile {model} failed: {r.stderr.strip()}")
    m = LINE.search(r.stdout)
    if not m:
        raise SystemExit(f"bench-compile printed no result line: {r.stdout}")
    ms, passes, lower, codegen = (float(x) for x in m.groups()[:4])
    kernels, distinct, hits, compiled = (int(x) for x in m.groups()[4:])
    return dict(ms=ms, wall=wall, passes=passes, lower=lower, codegen=codegen, kernels=kernels, distinct=distinct,
                hits=hits, compiled=compiled)


def median_of(runs):
    best = sorted(runs, key=lambda r: r["ms"])[len(runs) // 2]
    return dict(best, spread=(max(r["ms"] for r in runs) - min(r["ms"] for r in runs)) / 2)


def conformance(threads):
    suite = os.path.join(os.path.dirname(ROOT), "shared", "conformance", "onnx-backend-1.22", "node")
    if not os.path.isdir(suite):
        log(f"bench/compile: no node suite at {suite}; skipping the conformance rows")
        return None
    loom = os.path.join(ROOT, "zig-out", "bin", "loom")
    cache = tempfile.mkdtemp(prefix="loom-bench-conf-")
    rows = []
    try:
        for label in ("cold", "warm"):
            env = dict(os.environ, LOOM_CACHE_DIR=cache, LOOM_COMPILE_THREADS=str(threads))
            t0 = time.perf_counter()
            r = subprocess.run([loom, "conformance", suite, "--compiled"], capture_output=True, text=True, env=env)
            wall = time.perf_counter() - t0
            tail = (r.stdout.strip().splitlines() or ["?"])[-1]
            rows.append((label, wall, tail))
            log(f"bench/compile: node suite {label}: {wall:.1f} s ({tail})")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2, help="compile workers (LOOM_COMPILE_THREADS), default 2")
    ap.add_argument("--conformance", action="store_true", help="also time the ONNX node suite cold and warm")
    ap.add_argument("--no-save", action="store_true", help="print only; write nothing to bench/results")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(ROOT, "zig-out", "bin", "loom")):
        subprocess.run([os.path.join(ROOT, "scripts", "zig"), "build", "-Doptimize=ReleaseFast"], check=True, cwd=ROOT)
    paths = models(os.path.join(ROOT, "bench", "out", "models"))
    rows = []  # (model, state, result, goal ms)
    for name, label, goal_cold, goal_warm in (("block", "GPT-2-small block (B2)", 1000, 100),
                                             ("stack", "12-layer GPT-2 prefill (B3)", 2000, 200)):
        cache = tempfile.mkdtemp(prefix="loom-bench-compile-")
        try:
            cold = compile_once(paths[name], cache, args.threads)
            log(f"bench/compile: {label} cold {cold['ms']:.0f} ms")
            warm = median_of([compile_once(paths[name], cache, args.threads) for _ in range(3)])
            log(f"bench/compile: {label} warm {warm['ms']:.0f} ms")
            rows.append((label, "cold", dict(cold, spread=0.0), goal_cold))
            rows.append((label, "warm (median of 3)", warm, goal_warm))
            if name == "stack":
                ch = compile_once(paths["changed"], cache, args.threads)
                log(f"bench/compile: {label} one layer changed {ch['ms']:.0f} ms")
                rows.append((label, "one layer changed", dict(ch, spread=0.0), 500))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    conf = conformance(args.threads) if args.conformance else None

    load = os.getloadavg()
    out = [f"# bench/compile — {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC", "",
           f"{os.cpu_count()} CPUs, compile workers {args.threads}, load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}. "
           "Each row is one process (bench-compile: loom_compile_file + loom_compiled_open, JIT); ms are the in-process "
           "compile time, wall includes the process start and the weights' load.", "",
           "| model | cache | ms (±) | goal ms | passes | lowering | codegen | kernels | distinct | hits | compiled by LLVM | wall ms |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, state, r, goal in rows:
        ok = "met" if r["ms"] < goal else f"missed ({r['ms'] / goal:.1f}x)"
        out.append(f"| {label} | {state} | {r['ms']:.0f} (±{r['spread']:.0f}) | < {goal} {ok} | {r['passes']:.0f} | {r['lower']:.0f} | "
                   f"{r['codegen']:.0f} | {r['kernels']} | {r['distinct']} | {r['hits']} | {r['compiled']} | {r['wall']:.0f} |")
    if conf:
        out += ["", "ONNX node suite through `loom conformance --compiled`, one new cache directory:", "",
                "| run | seconds | result |", "|---|---|---|"]
        out += [f"| {label} | {wall:.1f} | {tail} |" for label, wall, tail in conf]
        ratio = conf[0][1] / conf[1][1] if conf[1][1] > 0 else float("inf")
        out += ["", f"cold / warm: {ratio:.1f}x (goal: at least 3x)"]
    text = "\n".join(out) + "\n"
    print(text)
    if not args.no_save:
        path = os.path.join(ROOT, "bench", "results", f"{datetime.datetime.utcnow():%Y-%m-%d}-compile.md")
        with open(path, "w") as f:
            f.write(text)
        log(f"bench/compile: wrote {os.path.relpath(path, ROOT)}")


if __name__ == "__main__":
    main()

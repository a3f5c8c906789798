"""load.py — bench/load: how fast Loom takes a large model in and how little memory it uses (issue 22).

Called by bench/load (which makes the venv and builds Loom in release). For each model of
harness/loadmodels.py (GPT-2 small, 124 M parameters; a Llama-style 1 B-parameter decoder whose
weights are ONNX external data), every step is a `loom` / `loom-run` process of its own, timed from
outside (wall time, the process's peak RSS from wait4):
  import    loom import MODEL.onnx -o OUT/m.loom: the module text and its safetensors weights file,
            once with the ONNX file evicted from the page cache (read from the disk) and once with
            it cached (as right after an export; the table's main import column)
  compile   loom compile MODEL.onnx -o OUT/m.so, cold (an empty kernel cache) and warm
  open      loom-run m.so --list: check the artifact, map its weights, load (median of 3)
  call      loom-run m.so --bind batch=1,seq=S: peak RSS against the weights (the artifact's DATA
            region) plus the planned activations (loom inspect --memory's peak at batch=1, seq=S)
Goals (issue 22): import < 5 s, compile of the 124 M model < 10 s, open < 0.2 s, peak RSS of a call
<= 1.2 x (weights + planned activations). Prints the table and writes bench/results/<date>-load.md.
"""
import argparse
import datetime
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = os.environ.get("LOOM_BIN") or os.path.join(ROOT, "zig-out", "bin")  # another build's bin/, for a before/after
LOOM = os.path.join(BIN, "loom")
LOOM_RUN = os.path.join(BIN, "loom-run")
TRAILER = 232  # vm/artifact.h


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_fresh(cmd, env=None):
    """(wall s, peak RSS bytes, stdout) of `cmd` alone: a small Python child runs it and reports its
    children's high-water mark (getrusage RUSAGE_CHILDREN), which is then that one process's. The
    process's CPU time (user + sys) is kept in run_fresh.cpu: on a shared machine the wall time is
    mostly waiting for a core. Before the clock starts, the page cache's dirty pages are written
    back (os.sync): otherwise a step pays for the writeback of the files the step before it wrote
    (the generated ONNX model, the previous step's 4 GB output) instead of for its own work."""
    os.sync()
    code = ("import resource,subprocess,sys,time;t=time.perf_counter();r=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
            "w=time.perf_counter()-t;sys.stdout.write(r.stdout);sys.stderr.write(r.stderr);u=resource.getrusage(resource.RUSAGE_CHILDREN);"
            "print('@@',w,u.ru_maxrss*1024,r.returncode,u.ru_utime+u.ru_stime)")
    p = subprocess.run([sys.executable, "-c", code] + cmd, capture_output=True, text=True, env=env)
    m = re.search(r"@@ ([0-9.e-]+) (\d+) (-?\d+) ([0-9.e-]+)\s*$", p.stdout)
    if not m or int(m.group(3)) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {p.stderr.strip()[-800:]}")
    run_fresh.cpu = float(m.group(4))
    return float(m.group(1)), int(m.group(2)), p.stdout[:m.start()]


def data_size(so):
    with open(so, "rb") as f:
        f.seek(-TRAILER, 2)
        t = f.read(TRAILER)
    return struct.unpack_from("<Q", t, 64)[0]


def planned_peak(model, binds):
    _, _, out = run_fresh([LOOM, "inspect", model, "--memory"])
    m = re.search(r"peak = (.*?) bytes", out)
    if not m:
        return None
    expr = m.group(1)
    _, _, v = run_fresh([LOOM, "sym", "eval", expr] + [f"{k}={v}" for k, v in binds.items()])
    return int(v.strip().splitlines()[-1])


def page_cache(model, keep):
    """Reads the model's files into the page cache (keep) or evicts them (written back first)."""
    os.sync()
    for f in (model, model + ".data"):
        if not os.path.exists(f):
            continue
        fd = os.open(f, os.O_RDONLY)
        try:
            if keep:
                while os.read(fd, 16 << 20):
                    pass
            else:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def measure(name, model, out, seq):
    r = {"model": name}
    onnx_bytes = os.path.getsize(model) + (os.path.getsize(model + ".data") if os.path.exists(model + ".data") else 0)
    r["onnx_mb"] = onnx_bytes / 1e6
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # import with the ONNX file evicted from the page cache (read from the disk), then with it
    # in the page cache (as right after an export): the second one's files are kept
    cold = os.path.join(d, "cold")
    os.makedirs(cold)
    page_cache(model, keep=False)
    log(f"bench/load: {name}: import (ONNX file not in the page cache)")
    r["import_cold_s"], _, _ = run_fresh([LOOM, "import", model, "-o", os.path.join(cold, "m.loom")])
    shutil.rmtree(cold, ignore_errors=True)
    page_cache(model, keep=True)
    log(f"bench/load: {name}: import (ONNX file in the page cache)")
    r["import_s"], r["import_rss"], _ = run_fresh([LOOM, "import", model, "-o", os.path.join(d, "m.loom")])
    r["import_cpu"] = run_fresh.cpu
    r["text_kb"] = os.path.getsize(os.path.join(d, "m.loom")) / 1e3
    r["weights_mb"] = os.path.getsize(os.path.join(d, "m.safetensors")) / 1e6
    cache = tempfile.mkdtemp(prefix="loom-load-cache-")
    env = dict(os.environ, LOOM_CACHE_DIR=cache)
    so = os.path.join(d, "m.so")
    for kind in ("cold", "warm"):
        log(f"bench/load: {name}: compile ({kind} kernel cache)")
        r[f"compile_{kind}_s"], r[f"compile_{kind}_rss"], _ = run_fresh([LOOM, "compile", model, "-o", so], env)
        r[f"compile_{kind}_cpu"] = run_fresh.cpu
    shutil.rmtree(cache, ignore_errors=True)
    r["artifact_mb"] = os.path.getsize(so) / 1e6
    r["data_mb"] = data_size(so) / 1e6
    log(f"bench/load: {name}: open")
    opens = [run_fresh([LOOM_RUN, so, "--list"])[0] for _ in range(3)]
    r["open_s"] = statistics.median(opens)
    log(f"bench/load: {name}: call at batch=1, seq={seq}")
    r["call_s"], r["call_rss"], _ = run_fresh([LOOM_RUN, so, "--bind", f"batch=1,seq={seq}", "--threads", "2"])
    r["planned"] = planned_peak(model, {"batch": 1, "seq": seq})
    r["seq"] = seq
    return r


def table(rows):
    L = ["| model | ONNX MB | import s / CPU s (RSS MB) | import s, ONNX not cached | .loom KB + weights MB | compile cold s / CPU s (RSS MB) | compile warm s / CPU s (RSS MB) | "
         "artifact MB (DATA MB) | open s | call s (peak RSS MB) | weights + activations MB | RSS / that |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        act = (r["planned"] or 0) / 1e6
        need = r["data_mb"] + act
        L.append(f"| {r['model']} | {r['onnx_mb']:.0f} | {r['import_s']:.2f} / {r['import_cpu']:.2f} ({r['import_rss'] / 1e6:.0f}) | "
                 f"{r['import_cold_s']:.2f} | "
                 f"{r['text_kb']:.0f} + {r['weights_mb']:.0f} | {r['compile_cold_s']:.2f} / {r['compile_cold_cpu']:.2f} ({r['compile_cold_rss'] / 1e6:.0f}) | "
                 f"{r['compile_warm_s']:.2f} / {r['compile_warm_cpu']:.2f} ({r['compile_warm_rss'] / 1e6:.0f}) | {r['artifact_mb']:.0f} ({r['data_mb']:.0f}) | "
                 f"{r['open_s']:.3f} | {r['call_s']:.2f} ({r['call_rss'] / 1e6:.0f}) | {r['data_mb']:.0f} + {act:.0f} (seq {r['seq']}) | "
                 f"{r['call_rss'] / 1e6 / need:.2f} |")
    return L


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gpt2_124m,decoder_1b")
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--no-save", action="store_true")
    a = ap.parse_args()
    mdir = os.path.join(ROOT, "bench", "out", "load")
    os.makedirs(mdir, exist_ok=True)
    want = [m for m in a.models.split(",") if not os.path.exists(os.path.join(mdir, m + ".onnx"))]
    if want:
        subprocess.run([sys.executable, os.path.join(HERE, "loadmodels.py"), mdir, "--only", ",".join(want)], check=True)
    rows = [measure(m, os.path.join(mdir, m + ".onnx"), os.path.join(mdir, "out"), a.seq) for m in a.models.split(",")]
    now = datetime.datetime.now(datetime.timezone.utc)
    load = os.getloadavg()
    head = [f"# bench/load — {now:%Y-%m-%d %H:%M} UTC", "",
            f"{os.cpu_count()} CPUs, load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}. Every step is one "
            "process, timed from outside (wall s, peak RSS). Goals (issue 22): import < 5 s, compile of the 124 M model "
            "< 10 s, open < 0.2 s, call peak RSS <= 1.2 x (weights + planned activations).", ""]
    text = "\n".join(head + table(rows)) + "\n"
    print(text)
    if not a.no_save:
        path = os.path.join(ROOT, "bench", "results", f"{now:%Y-%m-%d}-load.md")
        open(path, "w").write(text)
        log(f"bench/load: wrote {path}")


if __name__ == "__main__":
    main()

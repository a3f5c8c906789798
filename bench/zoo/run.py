"""bench/zoo/run.py — transformers Loom does not ship (bench/zoo/models.py: Llama, BERT, T5, ViT, a
Whisper-like conv front end), as a user would try them: `loom run --threads T --repeat N` (the CLI
compiles the ONNX file, then runs it N times) against ONNX Runtime (T intra-op threads, best of N) on
the same inputs (several Loom binaries, comma-separated: each in turn on every row, an A/B side by
side), at T = 1 and 2, batch 1 and 4, sequence 33 and 128 (ViT: image 224, 211 and 48; conv: 15, 127
and 255 frames). Prints max |loom - ort| / max |ort| per row (a row over 1e-4 is marked BAD)
and writes the table to bench/results/DATE-TAG.md.

    bench/.venv/bin/python bench/zoo/run.py [--loom PATH] [--models llama,bert] [--threads 1,2]
                                            [--batches 1,4] [--repeat 5] [--tag w21-zoo]
"""
import argparse
import datetime
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
import models  # noqa: E402

# per model: the run-time sizes of its symbolic dims, by name
# (conv: 15 frames are 8 after the stride-2 convolution, ViT 48: a 3 x 3 patch grid -- fewer output
# columns than a vector, where the convolution over packed weights ran scalar before column tiles)
SIZES = {"llama": [33, 128], "bert": [33, 128], "t5": [33, 128], "vit": [224, 211, 48], "conv": [15, 127, 255]}
TOL = 1e-4


def inputs(name, ins, b, n, rng):
    """Inputs for one case: token ids, a 0/1 padding mask (row i loses 3*i trailing tokens), images, features."""
    out = {}
    for iname, _, _ in ins:
        if iname == "input_ids":
            out[iname] = rng.integers(0, 1000, (b, n), dtype=np.int64)
        elif iname == "attention_mask":
            m = np.ones((b, n), np.int64)
            for i in range(b):
                m[i, max(1, n - 3 * i):] = 0
            out[iname] = m
        elif iname == "pixel_values":
            out[iname] = rng.standard_normal((b, 3, n, n), dtype=np.float32)
        else:
            out[iname] = rng.standard_normal((b, 80, n), dtype=np.float32)
    return out


def ort_time(path, feed, threads, repeat):
    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    y = s.run(None, feed)[0]
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        s.run(None, feed)
        ts.append(time.perf_counter() - t)
    return min(ts) * 1e3, y


def loom_time(loom, path, files, threads, repeat, outp):
    args = [loom, "run", path, "--threads", str(threads), "--repeat", str(repeat), "--output", outp]
    for k, f in files.items():
        args += ["--input", f"{k}=@{f}"]
    t = time.perf_counter()
    r = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - t
    m = re.search(r"min ([\d.]+) ms", r.stdout)
    if r.returncode != 0 or not m:
        return float("nan"), None, wall, (r.stderr or r.stdout).strip().splitlines()[-1:]
    return float(m.group(1)), np.load(outp), wall, []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", default=os.path.join(ROOT, "zig-out", "bin", "loom"), help="one or more binaries, comma-separated")
    ap.add_argument("--models", default=",".join(models.MODELS))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--batches", default="1,4")
    ap.add_argument("--sizes", default="", help="override the per-model sizes, e.g. 33")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tag", default="w21-zoo")
    a = ap.parse_args()
    work = os.path.join(ROOT, "bench", "out", "zoo")
    os.makedirs(work, exist_ok=True)
    looms = a.loom.split(",")
    tags = [""] if len(looms) == 1 else [f" {chr(65 + i)}" for i in range(len(looms))]
    head = "".join(f" loom{t} ms | loom{t}/ort | max rel err{t} | loom{t} wall s |" for t in tags)
    rows = [f"| model | input | T | ort ms |{head}", "|---|---|---|---|" + "---|---|---|---|" * len(looms)]
    legend = "".join(f"loom{t}: {lp}  \n" for t, lp in zip(tags, looms) if t)
    print(legend + rows[0], flush=True)
    bad = 0
    for name in a.models.split(","):
        path = os.path.join(work, name + ".onnx")
        ins = models.write(name, path)
        sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else SIZES[name]
        for b in map(int, a.batches.split(",")):
            for n in sizes:
                feed = inputs(name, ins, b, n, np.random.default_rng(b * 1000 + n))
                files = {}
                for k, v in feed.items():
                    files[k] = os.path.join(work, f"{name}.{b}x{n}.{k}.npy")
                    np.save(files[k], v)
                for t in map(int, a.threads.split(",")):
                    om, y = ort_time(path, feed, t, a.repeat)
                    shape = "x".join(map(str, feed[ins[0][0]].shape))
                    row = f"| {name} | {shape} | {t} | {om:.2f} |"
                    for lp in looms:
                        lm, z, wall, err = loom_time(lp, path, files, t, a.repeat, os.path.join(work, name + ".out.npy"))
                        if z is None or z.shape != y.shape:
                            e, note = float("inf"), " FAILED " + (" ".join(err) if z is None else f"shape {z.shape} vs {y.shape}")
                        else:
                            e = float(np.max(np.abs(z - y)) / max(np.max(np.abs(y)), 1e-30))
                            note = "" if e <= TOL else " BAD"
                        bad += e > TOL
                        row += f" {lm:.2f} | {lm / om:.2f} | {e:.1e}{note} | {wall:.2f} |"
                    rows.append(row)
                    print(row, flush=True)
    load = os.getloadavg()
    stamp = datetime.datetime.now(datetime.timezone.utc)
    out = os.path.join(ROOT, "bench", "results", f"{stamp:%Y-%m-%d}-{a.tag}.md")
    with open(out, "w") as fh:
        fh.write(f"# bench/zoo ({a.tag}), {stamp:%Y-%m-%d %H:%M} UTC\n\n`bench/.venv/bin/python bench/zoo/run.py "
                 + " ".join(sys.argv[1:]) + f"`; best of {a.repeat} each; load average after: "
                 + f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f} ({os.cpu_count()} cores)\n\n" + legend + "\n" + "\n".join(rows) + "\n")
    print(f"wrote {out}; {bad} rows over {TOL} relative error", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

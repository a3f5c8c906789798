#!/usr/bin/env python3
"""bench/serve/steps.py — what one `loom serve` engine step costs, as a function of what the
scheduler puts in it (issue 26): D decoding sequences (one token each, contexts drawn as the load
benchmark's are: log-uniform prompt 1..512 plus half of 16..256 generated), plus one prompt chunk
of P tokens after C cached ones. Each step's six batch tensors (docs/serve.md) are written as
.npy files and the served model's @main is timed on them with `loom run --repeat N` (the same
compiled kernels the server calls), for both forms of the bench model:
  loom   make_model.py's serve.loom (weights are parameters: random here, the time does not
         depend on their values)
  loomc  the same with its weights as module constants from weights.safetensors: what `loom serve`
         compiles (it binds a .loom decoder's weights as constants; docs/serve.md)
  onnx   make_model.py's model.onnx rewritten into the serving form (`loom import --serving`;
         its initializers are module constants)
Rounds alternate the forms and the thread counts call by call; a cell is the best of its
rounds' minima, with the spread of the rounds' minima (the machine is shared: only the minima
mean much). With --split, one more run per cell with --profile at 1 thread splits the mean into
paged_attention, the matmuls (with their fused epilogues) and the rest.

    bench/.venv/bin/python bench/serve/steps.py [--decodes 1,4,16,64] [--chunks 0,16,64] [--threads 1,2]
"""
import argparse
import datetime
import math
import os
import random
import re
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "bench", "out", "serve")
LOOM = os.path.join(ROOT, "zig-out", "bin", "loom")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sizes  # noqa: E402
NAMES = ["tokens", "positions", "seq_ids", "ctx_lens", "block_tables", "last_index"]


def contexts(seed, n):
    """The cached tokens of n decoding sequences, as the load benchmark makes them: a prompt of
    log-uniform length 1..512 and, on average, half of an output of 16..256 tokens."""
    r = random.Random(seed)
    return [max(1, int(math.exp(r.uniform(0, math.log(512))))) + r.randint(16, 256) // 2 for _ in range(n)]


def write_step(d, ctxs, chunk, chunk_ctx, pg):
    """One step's batch tensors in directory d: the decodes (one token at each context), then a
    prompt chunk of `chunk` tokens after `chunk_ctx` cached ones. Returns the pages it uses and
    the keys its attention reads (each token's cached plus causal step keys)."""
    os.makedirs(d, exist_ok=True)
    toks, pos, seq, ctx, tabs, last = [], [], [], [], [], []
    page, keys = 0, 0
    seqs = [(c, 1) for c in ctxs] + ([(chunk_ctx, chunk)] if chunk else [])
    for s, (c, k) in enumerate(seqs):
        for j in range(k):
            toks.append((31 * s + 7 * j) % 4096)
            pos.append(c + j)
            seq.append(s)
            keys += c + j + 1
        ctx.append(c)
        last.append(len(toks) - 1)
        need = (c + k + pg - 1) // pg
        tabs.append(list(range(page, page + need)))
        page += need
    bt = np.full((len(tabs), max(len(t) for t in tabs)), -1, np.int64)
    for i, t in enumerate(tabs):
        bt[i, :len(t)] = t
    for name, v in zip(NAMES, [toks, pos, seq, ctx, bt, last]):
        np.save(os.path.join(d, name + ".npy"), np.asarray(v, np.int64))
    return page, keys


def const_form(src, weights, dst):
    """serve.loom with every weight parameter of @main turned into `const @w = weights(FILE, "w")`
    (the batch inputs and caches stay parameters), written to dst."""
    text = open(src).read()
    i = text.index("fn @main(") + len("fn @main(")
    depth, j = 0, i
    while depth or text[j] != ")":
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(text[j], 0)
        j += 1
    params, depth, cur = [], 0, ""
    for ch in text[i:j]:
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(ch, 0)
        if ch == "," and not depth:
            params.append(cur.strip())
            cur = ""
        else:
            cur += ch
    params.append(cur.strip())
    keep = [p for p in params if p.split(":")[0] in NAMES or p.startswith(("k_cache", "v_cache"))]
    consts = [p for p in params if p not in keep]
    rel = os.path.relpath(weights, os.path.dirname(dst))
    head = "".join(f'const @{p.split(":")[0]}: {p.split(":", 1)[1].strip()} = weights("{rel}", "{p.split(":")[0]}")\n' for p in consts)
    body = text[j:]  # from @main's closing parenthesis: its uses of the weights read the constants
    for p in consts:
        name = p.split(":")[0]
        body = re.sub(r"(?<![@\w.])" + re.escape(name) + r"(?![\w:])", "@" + name, body)
    open(dst, "w").write(head + text[:i] + ", ".join(keep) + body)


def run(model, d, pages, pg, threads, repeat, profile=False, loom=LOOM, extra=""):
    cmd = [loom, "run", model, "--bind", f"n={pages},pg={pg}", "--threads", str(threads), "--repeat", str(repeat)] + extra.split()
    for name in NAMES:
        cmd += ["--input", f"{name}=@{os.path.join(d, name + '.npy')}"]
    if profile:
        cmd.append("--profile")
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, LOOM_CACHE_DIR=os.path.join(OUT, "cache")))
    if out.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    m = re.search(r"mean ([\d.]+) ms, min ([\d.]+) ms", out.stdout)
    if not profile:
        return float(m.group(2))
    split = {"attention": 0.0, "matmul": 0.0, "other": 0.0}
    kernels = False
    for line in out.stdout.splitlines():
        if line.startswith("profile: kernels"):
            kernels = True
            continue
        f = line.split()
        if kernels and len(f) >= 4 and f[1].isdigit():
            c = "attention" if "paged_attention" in f[0] else "matmul" if re.search(r"matmul|linear|gelu|fused_add|blas", f[0]) else "other"
            split[c] += float(f[2]) / 1e3 / repeat
    return split


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decodes", default="0,1,4,16,64", help="decoding sequences in the step")
    ap.add_argument("--chunks", default="0,16,64", help="prompt chunk tokens in the step")
    ap.add_argument("--chunk-ctx", type=int, default=128, help="cached tokens before the chunk")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--forms", default="loom,onnx")
    ap.add_argument("--repeat", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--page-size", type=int, default=16)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--split", action="store_true", help="also split each cell's mean by kernel class (--profile, 1 thread)")
    ap.add_argument("--loom-bin", default=LOOM, help="the loom program (a before/after comparison runs an older build)")
    ap.add_argument("--run-args", default="", help="more options for `loom run` (e.g. --pack-tied)")
    ap.add_argument("--out", default=None, help="results file (default bench/results/<date>-serve-steps.md)")
    sizes.add_argument(ap)
    a = ap.parse_args()
    global OUT
    OUT = sizes.model_dir(a.size)
    models = {"loom": os.path.join(OUT, "serve.loom"), "onnx": os.path.join(OUT, "steps", "onnx-serving.loom"),
              "loomc": os.path.join(OUT, "steps", "serve-const.loom")}
    os.makedirs(os.path.join(OUT, "steps"), exist_ok=True)
    if "loomc" in a.forms:
        const_form(models["loom"], os.path.join(OUT, "weights.safetensors"), models["loomc"])
    if "onnx" in a.forms:
        subprocess.check_call([a.loom_bin, "import", "--serving", os.path.join(OUT, "model.onnx"), "-o", models["onnx"]])
    forms, threads = a.forms.split(","), [int(x) for x in a.threads.split(",")]
    cells = []
    for D in [int(x) for x in a.decodes.split(",")]:
        for P in [int(x) for x in a.chunks.split(",")]:
            if D == 0 and P == 0:
                continue
            d = os.path.join(OUT, "steps", f"d{D}p{P}")
            ctxs = contexts(a.seed, D)
            pages, keys = write_step(d, ctxs, P, a.chunk_ctx, a.page_size)
            cells.append(dict(D=D, P=P, dir=d, pages=pages, keys=keys, times={}, split={}))
    for r in range(a.rounds):
        for c in cells:
            for f in forms:
                for t in threads:
                    ms = run(models[f], c["dir"], c["pages"], a.page_size, t, a.repeat, loom=a.loom_bin, extra=a.run_args)
                    c["times"].setdefault((f, t), []).append(ms)
                    print(f"round {r}: D={c['D']:3} P={c['P']:3} {f:5} {t} threads: min {ms:.3f} ms", flush=True)
    if a.split:
        for c in cells:
            for f in forms:
                c["split"][f] = run(models[f], c["dir"], c["pages"], a.page_size, 1, a.repeat, profile=True, loom=a.loom_bin, extra=a.run_args)
    base = {k: min(v) for k, v in next((c for c in cells if c["D"] == 1 and c["P"] == 0), cells[0])["times"].items()}
    out = a.out or os.path.join(ROOT, "bench", "results", datetime.date.today().isoformat() + "-serve-steps.md")
    with open(out, "w") as fh:
        fh.write(f"# bench/serve/steps.py — {datetime.datetime.now().isoformat(timespec='minutes')}\n\n")
        fh.write(f"`bench/serve/steps.py --decodes {a.decodes} --chunks {a.chunks} --chunk-ctx {a.chunk_ctx} --threads {a.threads} "
                 f"--repeat {a.repeat} --rounds {a.rounds}{' --split' if a.split else ''}`: one engine step of make_model.py's "
                 f"model ({sizes.SIZES[a.size][0]}; --size {a.size}), D decodes at the load benchmark's contexts plus a prompt chunk "
                 f"of P tokens after {a.chunk_ctx} cached; keys: what the step's attention reads (per layer and head). Each cell: the "
                 f"best of {a.rounds} rounds' minima of {a.repeat} calls (ms), [the spread of the rounds' minima], and its ratio to the "
                 "one-decode step of the same form and threads. The machine is shared: compare within a column.\n\n")
        cols = [(f, t) for f in forms for t in threads]
        fh.write("| D | P | keys | " + " | ".join(f"{f} {t}T (ms)" for f, t in cols) + " |\n")
        fh.write("| --- | --- | --- | " + " | ".join("---" for _ in cols) + " |\n")
        for c in cells:
            row = []
            for k in cols:
                v = c["times"][k]
                row.append(f"{min(v):.2f} [{min(v):.2f}-{max(v):.2f}] {min(v) / base[k]:.1f}x")
            fh.write(f"| {c['D']} | {c['P']} | {c['keys']} | " + " | ".join(row) + " |\n")
        if a.split:
            fh.write("\nMean per step by kernel class (`--profile`, 1 thread, ms): attention / matmuls with their fused epilogues / the rest.\n\n")
            fh.write("| D | P | " + " | ".join(f"{f}: attention / matmul / other" for f in forms) + " |\n")
            fh.write("| --- | --- | " + " | ".join("---" for _ in forms) + " |\n")
            for c in cells:
                fh.write(f"| {c['D']} | {c['P']} | " + " | ".join("{attention:.2f} / {matmul:.2f} / {other:.2f}".format(**c["split"][f]) for f in forms) + " |\n")
    print("wrote", out)


if __name__ == "__main__":
    main()

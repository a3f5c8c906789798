"""bench/gpu/run.py — Loom on a GPU against PyTorch eager, torch.compile and ONNX Runtime (CUDA EP), f32,
same inputs, on a GPT-2-small decoder (prefill and KV-cache decode) and a BERT-base encoder, with the
machine's own ceilings measured in the same run (HBM bandwidth by a device-to-device copy, the dense f16
tensor-core peak by a big f16 matmul). bench/gpu/README.md says how to run it on a GPU machine.

    python3 bench/gpu/run.py [--quick] [--out DIR] [--loom PATH] [--systems loom,eager,compile,ort]
    python3 bench/gpu/run.py --device cpu --tiny      # the self-test without a GPU (loom --target cpu)

Models are built with transformers' GPT2LMHeadModel / BertModel (random weights, seed 0) and exported by
models/torch_export/gen.py's exporters (dynamic batch / seq / past). Loom runs each (model, shape) as ONE
subprocess `loom run model.onnx --target cuda --input NAME=@FILE.npy ... --repeat N --output F.npy` and
its printed `time: N runs, mean M ms, min B ms` is parsed: the table shows Loom's best (its mean holds the
cold first call), and the torch columns the median of N after warm-up (CUDA events). A system that fails
shows its error in its cell; the run goes on. Writes gpu-bench.md and gpu-bench.json to --out (or $OUT, else bench/out/gpu).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "models", "torch_export"))


def log(*a):
    print(*a, flush=True)


def short(e, n=110):
    """An error as a table cell: its first line, cut, without pipes."""
    s = (str(e).strip().splitlines() or [type(e).__name__])[0].replace("|", "/")
    return "FAIL: " + (s[:n] + "..." if len(s) > n else s)


# -- models and shapes -----------------------------------------------------------------------------------
def model_specs(tiny, quick):
    """(name, kind, config, shapes); a shape is (label, batch, seq, past)."""
    import transformers as T
    if tiny:
        gpt2 = T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=1000, n_positions=256, bos_token_id=0, eos_token_id=0)
        bert = T.BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                            vocab_size=1000, max_position_embeddings=256)
        pre, dec, bb, bs = [16, 61], [16, 61], [1, 3], 32
    else:  # GPT-2 small, BERT base
        gpt2 = T.GPT2Config(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024)
        bert = T.BertConfig()
        pre, dec, bb, bs = ([128, 512] if quick else [128, 512, 1024]), [128, 512], [1, 8], 128
    gshapes = [(f"prefill 1x{s}", 1, s, 0) for s in pre] + [(f"decode past {p}", 1, 1, p) for p in dec]
    return [("gpt2", "decoder", gpt2, gshapes), ("bert", "encoder", bert, [(f"{b}x{bs}", b, bs, 0) for b in bb])]


def build(name, cfg, path):
    """The torch module (eval, random weights, seed 0) and its ONNX export at path."""
    import torch
    import transformers as T

    import gen
    torch.manual_seed(0)
    if name == "gpt2":
        m = T.GPT2LMHeadModel(cfg)
        gen.export_with_past(m, path, True, max_len=2048)
        return gen.WithPast(m).eval()
    m = gen.export_bert(cfg, path)
    return m.eval()


def inputs_for(name, cfg, b, s, p, seed):
    import gen
    if name == "gpt2":
        return gen.past_case(cfg, b, s, p, seed)
    rng = np.random.default_rng(seed)
    mask = np.ones((b, s), np.int64)
    if b > 1:
        mask[1, -s // 4:] = 0  # a padded sequence
    return [rng.integers(0, min(cfg.vocab_size, 1000), (b, s)).astype(np.int64), mask,
            rng.integers(0, 2, (b, s)).astype(np.int64)]


def n_params(module):
    return sum(t.numel() for t in {id(t): t for t in module.parameters()}.values())


# -- timing ----------------------------------------------------------------------------------------------
class Timer:
    """Median and min of N timed calls after W warm-ups: CUDA events on a GPU, perf_counter on the CPU."""

    def __init__(self, device, warmup, n):
        import torch
        self.torch, self.cuda, self.warmup, self.n = torch, device == "cuda", warmup, n

    def __call__(self, fn):
        torch = self.torch
        for _ in range(self.warmup):
            fn()
        ts = []
        for _ in range(self.n):
            if self.cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                ts.append(a.elapsed_time(b))
            else:
                t0 = time.perf_counter()
                fn()
                ts.append((time.perf_counter() - t0) * 1e3)
        return float(np.median(ts)), float(min(ts))


def ceilings(device):
    """(bytes/s of a device-to-device copy counting read + write, FLOP/s of a dense matmul: f16 on a GPU, f32 on the CPU)."""
    import torch
    t = Timer(device, 2, 5)
    n = (1 << 30) if device == "cuda" else (1 << 26)
    x = torch.empty(n, dtype=torch.uint8, device=device)
    y = torch.empty_like(x)
    bw = 2 * n / (t(lambda: y.copy_(x))[0] / 1e3)
    k, dt = (8192, torch.float16) if device == "cuda" else (1024, torch.float32)
    a = torch.randn(k, k, device=device, dtype=dt)
    bm = torch.randn(k, k, device=device, dtype=dt)
    peak = 2 * k ** 3 / (t(lambda: a @ bm)[0] / 1e3)
    return bw, peak


# -- the systems -----------------------------------------------------------------------------------------
def torch_fn(module, device, ins):
    import torch
    ts = [torch.from_numpy(a).to(device) for a in ins]

    def fn():
        with torch.no_grad():
            return module(*ts)
    return fn


def outputs_np(out):
    out = out if isinstance(out, (tuple, list)) else (out,)
    return [o.detach().float().cpu().numpy() for o in out]


TIME_RE = re.compile(r"time: (\d+) runs, mean ([0-9.]+) ms, min ([0-9.]+) ms")


def loom_run(loom, target, onnx_path, names, ins, repeat, threads, work, want_output, timeout, tf32=False):
    """One `loom run` subprocess: (best ms, mean ms, wall s of the whole process minus the timed calls
    = import + compile + load + copies, outputs or None)."""
    args = [loom, "run", onnx_path, "--target", target, "--repeat", str(repeat)]
    if threads:
        args += ["--threads", str(threads)]
    if tf32:
        args.append("--tf32")
    for n, a in zip(names, ins):
        f = os.path.join(work, n + ".npy")
        np.save(f, a)
        args += ["--input", f"{n}=@{f}"]
    outp = os.path.join(work, "out.npy")
    if want_output:
        args += ["--output", outp]
    t0 = time.perf_counter()
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"loom run timed out after {timeout:.0f} s (--loom-timeout)")
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError((r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()[0])
    m = TIME_RE.search(r.stdout)
    if not m:
        raise RuntimeError("no 'time:' line in loom's output")
    runs, mean, best = int(m.group(1)), float(m.group(2)), float(m.group(3))
    outs = None
    if want_output:  # one output: out.npy; several: out.0.npy, out.1.npy, ...
        outs = [np.load(outp)] if os.path.exists(outp) else []
        while not os.path.exists(outp) and os.path.exists(os.path.join(work, f"out.{len(outs)}.npy")):
            outs.append(np.load(os.path.join(work, f"out.{len(outs)}.npy")))
    return best, mean, wall - runs * mean / 1e3, outs


def ort_session(onnx_path, device):
    import onnxruntime as ort
    prov = ort.get_available_providers()
    want = "CUDAExecutionProvider" if device == "cuda" else "CPUExecutionProvider"
    if want not in prov:
        raise RuntimeError(f"no {want} (providers: {', '.join(prov)})")
    t0 = time.perf_counter()
    s = ort.InferenceSession(onnx_path, providers=[want])
    return s, time.perf_counter() - t0


def max_err(ref, got):
    if len(ref) != len(got):
        return f"{len(got)} outputs, want {len(ref)}"
    e = 0.0
    for a, b in zip(ref, got):
        if a.shape != b.shape:
            return f"shape {b.shape}, want {a.shape}"
        e = max(e, float(np.max(np.abs(a.astype(np.float64) - b))) if a.size else 0.0)
    return e


# -- one model -------------------------------------------------------------------------------------------
def bench_model(a, name, kind, cfg, shapes, work, rows, compile_rows):
    import torch
    path = os.path.join(work, name + ".onnx")
    t0 = time.perf_counter()
    try:
        module = build(name, cfg, path).to(a.device)
    except Exception as e:  # no model, no row: say why
        traceback.print_exc()
        rows.append({"model": name, "shape": "(all)", "error": short(e, 200)})
        return
    log(f"{name}: built and exported in {time.perf_counter() - t0:.1f} s ({os.path.getsize(path) / 1e6:.0f} MB ONNX)")
    import onnx
    names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
    params = n_params(module)
    timer = Timer(a.device, a.warmup, a.repeat)
    compiled, ort_s = None, None
    a.compile_spent = 0.0  # the budget is per model
    if "compile" in a.systems:
        compiled = torch.compile(module)
    if "ort" in a.systems:
        try:
            ort_s, secs = ort_session(path, a.device)
            compile_rows.append((name, "ort session", f"{secs:.2f}"))
        except Exception as e:
            ort_s = e
    for i, (label, b, s, p) in enumerate(shapes):
        ins = inputs_for(name, cfg, b, s, p, 1000 + 31 * i)
        row = {"model": name, "shape": label, "kind": "decode" if p else ("prefill" if kind == "decoder" else "encode"),
               "tokens": b * s, "params": params,
               "kv_bytes": sum(x.nbytes for x in ins[2:]) if name == "gpt2" else 0}
        fn = torch_fn(module, a.device, ins)
        ref = None
        try:
            row["eager"], row["eager_min"] = timer(fn)
            ref = outputs_np(fn())
        except Exception as e:
            row["eager_err"] = short(e)
        if compiled is not None and a.compile_spent > a.compile_budget:
            row["compile_err"] = f"skipped: torch.compile's budget ({a.compile_budget:.0f} s) is spent"
        elif compiled is not None:
            try:
                cfn = torch_fn(compiled, a.device, ins)
                t1 = time.perf_counter()
                cfn()
                if a.device == "cuda":
                    torch.cuda.synchronize()
                a.compile_spent += time.perf_counter() - t1
                compile_rows.append((name, f"torch.compile first call, {label}", f"{time.perf_counter() - t1:.2f}"))
                row["compile"], row["compile_min"] = timer(cfn)
            except Exception as e:
                row["compile_err"] = short(e)
        if isinstance(ort_s, Exception):
            row["ort_err"] = short(ort_s)
        elif ort_s is not None:
            try:
                feed = dict(zip(names, ins))
                row["ort"], row["ort_min"] = Timer("cpu", a.warmup, a.repeat)(lambda: ort_s.run(None, feed))
            except Exception as e:
                row["ort_err"] = short(e)
        if "loom" in a.systems:
            lw = tempfile.mkdtemp(dir=work)
            try:
                best, mean, setup, outs = loom_run(a.loom, a.target, path, names, ins, a.repeat + a.warmup,
                                                   a.threads, lw, ref is not None and i == 0, a.loom_timeout, a.tf32)
                row["loom"], row["loom_mean"] = best, mean
                compile_rows.append((name, f"loom run setup (import, compile, load), {label}", f"{setup:.2f}"))
                if outs is not None:
                    row["err"] = max_err(ref, outs)
            except Exception as e:
                row["loom_err"] = short(e)
            shutil.rmtree(lw, ignore_errors=True)
        log(json.dumps(row))
        rows.append(row)
    del module, compiled
    if a.device == "cuda":
        torch.cuda.empty_cache()


# -- the report ------------------------------------------------------------------------------------------
def cell(row, key):
    if key + "_err" in row:
        return row[key + "_err"]
    return f"{row[key]:.3f}" if key in row else "-"


def ratio(row, a, b):
    return f"{row[a] / row[b]:.2f}" if a in row and b in row and row[b] > 0 else "-"


def roofline(row, key, bw, peak):
    """Decode: bytes of weights + KV read per token / time, as % of the copy bandwidth; prefill /
    encode: 2 * params * tokens FLOPs / time, as % of the matmul peak."""
    if key not in row or "params" not in row:
        return "-"
    s = row[key] / 1e3
    if row["kind"] == "decode":
        return f"{100 * (4 * row['params'] + row['kv_bytes']) / s / bw:.1f}% BW"
    return f"{100 * 2 * row['params'] * row['tokens'] / s / peak:.1f}% peak"


def report(a, rows, compile_rows, bw, peak, info):
    out = [f"# bench/gpu: {info}", "",
           f"Ceilings measured in this run: copy {bw / 1e9:.0f} GB/s (read + write), "
           f"{'f16' if a.device == 'cuda' else 'f32'} matmul {peak / 1e12:.3g} TFLOP/s. "
           f"f32 everywhere{', matmuls in TF32 for every system (--tf32)' if a.tf32 else ''}; loom = best of {a.repeat + a.warmup} (`loom run --repeat`), torch / ort = median of "
           f"{a.repeat} after {a.warmup} warm-ups; err = max |loom - eager| over every output (first shape of each model).", "",
           "| model | shape | loom ms | eager ms | compile ms | ort ms | loom/eager | loom/compile | err | loom roofline | eager roofline |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | {r['shape']} | {r['error']} | | | | | | | | |")
            continue
        err = r.get("err", "-")
        err = f"{err:.2e}" if isinstance(err, float) else str(err)
        out.append(f"| {r['model']} | {r['shape']} | {cell(r, 'loom')} | {cell(r, 'eager')} | {cell(r, 'compile')} | "
                   f"{cell(r, 'ort')} | {ratio(r, 'loom', 'eager')} | {ratio(r, 'loom', 'compile')} | {err} | "
                   f"{roofline(r, 'loom', bw, peak)} | {roofline(r, 'eager', bw, peak)} |")
    out += ["", "Compile and setup times (seconds, apart from the table):", "", "| model | what | s |", "|---|---|---|"]
    out += [f"| {m} | {w} | {s} |" for m, w, s in compile_rows]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--target", help="loom's --target (default: cuda on --device cuda, else cpu)")
    ap.add_argument("--tiny", action="store_true", help="tiny models and shapes (the CPU self-test)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes and runs: under 4 minutes on an H200")
    ap.add_argument("--systems", default="loom,eager,compile,ort")
    ap.add_argument("--models", default="gpt2,bert")
    ap.add_argument("--loom", help="the loom binary (default: loom on PATH, else zig-out/bin/loom)")
    ap.add_argument("--threads", type=int, help="loom --threads (CPU target)")
    ap.add_argument("--repeat", type=int)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--compile-budget", type=float, help="seconds of torch.compile first calls after which its "
                    "model's remaining cells are skipped (default: 75 per model with --quick, else none)")
    ap.add_argument("--loom-timeout", type=float, help="seconds for one loom run (default: 90 with --quick, else 600)")
    ap.add_argument("--tf32", action="store_true", help="let every system's FP32 matmuls use TF32 tensor cores "
                    "(torch allow_tf32, loom run --tf32); the files are then gpu-bench-tf32.*")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "bench", "out", "gpu"))
    a = ap.parse_args()
    a.systems = set(a.systems.split(","))
    a.target = a.target or ("cuda" if a.device == "cuda" else "cpu")
    a.repeat = a.repeat or (10 if a.quick or a.tiny else 30)
    a.compile_budget = a.compile_budget or (75.0 if a.quick else float("inf"))
    a.loom_timeout = a.loom_timeout or (90.0 if a.quick else 600.0)
    a.loom = a.loom or shutil.which("loom") or os.path.join(ROOT, "zig-out", "bin", "loom")
    import torch
    torch.backends.cuda.matmul.allow_tf32 = a.tf32  # f32 means f32 (the default, said out loud) unless --tf32
    torch.backends.cudnn.allow_tf32 = a.tf32
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench/gpu: torch sees no CUDA device (use --device cpu --tiny for the self-test)")
    t_start = time.perf_counter()
    dev = torch.cuda.get_device_name() if a.device == "cuda" else "cpu"
    lv = subprocess.run([a.loom, "version"], capture_output=True, text=True).stdout.splitlines()[:1]
    info = f"{dev}, torch {torch.__version__}, {lv[0] if lv else 'loom ?'} --target {a.target}{' (tiny)' if a.tiny else ''}"
    log(info)
    bw, peak = ceilings(a.device)
    log(f"ceilings: copy {bw / 1e9:.0f} GB/s, matmul {peak / 1e12:.3g} TFLOP/s")
    rows, compile_rows = [], []
    work = tempfile.mkdtemp(prefix="loom-bench-gpu-")
    try:
        for name, kind, cfg, shapes in model_specs(a.tiny, a.quick):
            if name in a.models.split(","):
                bench_model(a, name, kind, cfg, shapes, work, rows, compile_rows)
    finally:
        if not os.environ.get("LOOM_BENCH_KEEP"):  # kept for a profile afterwards (bench/gpu/README.md)
            shutil.rmtree(work, ignore_errors=True)
    md = report(a, rows, compile_rows, bw, peak, info)
    md += f"\nWhole run: {time.perf_counter() - t_start:.0f} s.\n"
    print(md)
    os.makedirs(a.out, exist_ok=True)
    stem = "gpu-bench-tf32" if a.tf32 else "gpu-bench"
    with open(os.path.join(a.out, stem + ".md"), "w") as f:
        f.write(md)
    with open(os.path.join(a.out, stem + ".json"), "w") as f:
        json.dump({"info": info, "bw": bw, "peak": peak, "rows": rows, "compile": compile_rows}, f, indent=1)


if __name__ == "__main__":
    main()

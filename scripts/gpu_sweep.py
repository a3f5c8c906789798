"""scripts/gpu_sweep.py — the model sweep of scripts/test-gpu: every bundled model (models/*.loom,
models/*/model.onnx, models/torch_export/*/model.onnx) run by `loom run --target TARGET` and by
`loom run --target cpu` on the same seeded inputs (.npy files made here), outputs compared by dtype, at
three shapes per model: every symbolic var at 1, at a prime, at a larger value (from `loom run --list`;
OVERRIDES below where a model needs other values or inputs). One line per model and shape:

    ok       MODEL VARS
    MISMATCH MODEL VARS (output K: max abs err E, max rel err R)
    FAIL     MODEL VARS: loom's error (its first line)

then `test-gpu: N passed, M failed, K failed-to-compile` (a model whose `loom compile --target cuda
--emit=ptx` fails counts once in K and runs no shape). Exit 1 when M + K > 0.

    python3 scripts/gpu_sweep.py [--loom PATH] [--target cuda:sm_90] [--models SUBSTR,...] [--log FILE]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}
# Sums are added in another order on the GPU (cuBLAS's blocked GEMMs; the CPU's own BLAS differs from
# Loom's generated matmul as much): where terms cancel, an element's error is relative to the size of
# the terms, not of the result. So each element may also be off by SCALE times the tensor's largest
# magnitude (measured: the random-weight blocks reach |y| ~ 1700 and differ by 2e-5 of that, CPU
# OpenBLAS vs CPU generated as GPU vs CPU).
SCALE = {"float32": 1e-4, "float64": 1e-9, "float16": 1e-2, "bfloat16": 2e-2}
BATCH_VARS = {"b", "batch", "n"}
VALUES = [1, 7, 64]  # per shape index: 1, a prime, a larger value
BATCH_VALUES = [1, 3, 5]

# Per model (a substring of its path): "vars" maps a var to its three values (or a function of the
# shape's other values), "ints" an integer input to its exclusive upper bound (default 10), "ones"
# inputs that are masks of ones, "skip" a reason not to run it ("skip_gpu": on a GPU target only).
OVERRIDES = {
    "torch_export/gpt2_past": {"vars": {"total": lambda v: v["seq"] + v["past"]}, "ones": ["attention_mask"]},
    "torch_export/llama_past": {"vars": {"total": lambda v: v["seq"] + v["past"]}, "ones": ["attention_mask"]},
    "torch_export/bert": {"ints": {"token_type_ids": 2}, "ones": ["attention_mask"]},
    "torch_export/t5_encoder": {"ones": ["attention_mask"]},
    "torch_export/vit": {"vars": {"h": [8, 37, 64], "w": [8, 41, 64]}},
    "torch_export/cnn": {"vars": {"h": [8, 37, 64], "w": [8, 41, 64]}},
    "models/resnet": {"vars": {"h": [4, 31, 64], "w": [4, 37, 64]}},
    "wav2vec2_pos": {"vars": {"samples": [203, 401, 1000]}},
    "tiny_transformer": {"vars": {"seq": [1, 7, 61]}},
    "gpt2_decoder": {"vars": {"V": [50, 50, 50], "P": [128, 128, 128]}},
    "user_kernel": {"skip_gpu": "calls a host C function (extern @scale_rows): a GPU run refuses host code by design"},
    "serve_decoder": {"skip": "a paged KV cache needs consistent block tables (tests/e2e and loom serve cover it)"},
}

SIG_RE = re.compile(r"(\w+): (\w+)\(([^)]*)\)")


def log(f, s):
    print(s, flush=True)
    if f:
        f.write(s + "\n")
        f.flush()


def models():
    pats = ["models/*.loom", "models/*/*.loom", "models/*/model.onnx", "models/torch_export/*/model.onnx"]
    return sorted({os.path.relpath(p, ROOT) for pat in pats for p in glob.glob(os.path.join(ROOT, pat))})


def override(model):
    for k, v in OVERRIDES.items():
        if k in model:
            return v
    return {}


def signature(loom, model, env):
    """[(name, dtype, [dim, ...])] of main, from `loom run --list` (dims: ints or var names)."""
    r = subprocess.run([loom, "run", model, "--list"], capture_output=True, text=True, cwd=ROOT, env=env)
    if r.returncode != 0:
        raise RuntimeError(first_line(r))
    line = next((x for x in r.stdout.splitlines() if x.startswith("main(")), None)
    if line is None:
        raise RuntimeError("no function 'main' in --list")
    return [(n, t, [int(d) if d.strip().lstrip("-").isdigit() else d.strip() for d in dims.split(",") if d.strip()])
            for n, t, dims in SIG_RE.findall(line)]


def shape_values(sig, ov, k):
    vs = sorted({d for _, _, dims in sig for d in dims if isinstance(d, str)})
    spec = ov.get("vars", {})
    out = {v: (BATCH_VALUES if v in BATCH_VARS else VALUES)[k] for v in vs if not callable(spec.get(v))}
    out.update({v: s[k] for v, s in spec.items() if isinstance(s, list) and v in vs})
    out.update({v: s(out) for v, s in spec.items() if callable(s) and v in vs})
    return out


NP_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64, "i32": np.int32,
             "i8": np.int8, "u8": np.uint8, "bool": np.bool_}


def make_inputs(sig, vals, ov, seed, work):
    """Seeded .npy inputs; returns --input flags."""
    rng = np.random.default_rng(seed)
    flags = []
    for name, dt, dims in sig:
        shape = tuple(vals[d] if isinstance(d, str) else d for d in dims)
        if dt not in NP_DTYPES:
            raise RuntimeError(f"input '{name}': dtype {dt} is not handled by the sweep")
        if name in ov.get("ones", []):
            a = np.ones(shape, NP_DTYPES[dt])
        elif dt.startswith("f"):
            a = rng.uniform(-1, 1, shape).astype(NP_DTYPES[dt])
        elif dt == "bool":
            a = rng.random(shape) < 0.8
        else:
            a = rng.integers(0, ov.get("ints", {}).get(name, 10), shape).astype(NP_DTYPES[dt])
        p = os.path.join(work, name + ".npy")
        np.save(p, a)
        flags += ["--input", f"{name}=@{p}"]
    return flags


def first_line(r):
    text = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()
    err = [x for x in text if x.startswith("error")]
    return (err or text)[0][:300]


def run(loom, model, target, flags, out, env):
    tflag = [] if target == "cpu" else ["--target", target]  # cpu: the default (also for a loom before --target)
    r = subprocess.run([loom, "run", model, *tflag, *flags, "--output", out],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    if r.returncode != 0:
        raise RuntimeError(first_line(r))
    if os.path.exists(out):
        return [np.load(out)]
    base, outs = out[:-4], []
    while os.path.exists(f"{base}.{len(outs)}.npy"):
        outs.append(np.load(f"{base}.{len(outs)}.npy"))
    return outs


def compare(ref, got):
    """None when equal within the dtype's tolerance, else the first mismatch in words."""
    if len(ref) != len(got):
        return f"{len(got)} outputs, the CPU gave {len(ref)}"
    for k, (a, b) in enumerate(zip(ref, got)):
        if a.shape != b.shape or a.dtype != b.dtype:
            return f"output {k}: {b.dtype}{b.shape}, the CPU gave {a.dtype}{a.shape}"
        if a.size == 0:
            continue
        if a.dtype.kind in "fc":
            rtol, atol = TOL.get(str(a.dtype), (1e-4, 1e-4))
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            same_nan = np.isnan(a64) == np.isnan(b64)
            d = np.abs(a64 - b64)
            finite = np.abs(a64[np.isfinite(a64)])
            scale = SCALE.get(str(a.dtype), 1e-4) * (finite.max() if finite.size else 0.0)
            bad = ~same_nan | (d > atol + rtol * np.abs(a64) + scale)
            bad &= ~(np.isnan(a64) & np.isnan(b64))
            if bad.any():
                rel = d / np.maximum(np.abs(a64), 1e-30)
                return f"output {k}: max abs err {np.nanmax(d):.3g}, max rel err {np.nanmax(rel):.3g}, {int(bad.sum())} of {a.size} off"
        elif not np.array_equal(a, b):
            return f"output {k}: {int((a != b).sum())} of {a.size} elements differ"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loom", default=os.path.join(ROOT, "zig-out", "bin", "loom"))
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--models", help="only models whose path contains one of these (comma-separated)")
    ap.add_argument("--log", help="also write every line here")
    a = ap.parse_args()
    if not os.access(a.loom, os.X_OK):
        sys.exit(f"gpu_sweep: no loom at {a.loom} (build it, or --prebuilt with loom on PATH)")
    logf = open(a.log, "a") if a.log else None
    env = dict(os.environ)
    passed = failed = no_compile = skipped = 0
    with tempfile.TemporaryDirectory(prefix="loom-gpu-sweep-") as work:
        # the user-kernel example loads scale_rows.so through the library path: build it when cc is here
        if subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", os.path.join(work, "scale_rows.so"),
                           os.path.join(ROOT, "models", "user_kernel", "scale_rows.c")], capture_output=True).returncode == 0:
            env["LD_LIBRARY_PATH"] = work + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        for model in models():
            if a.models and not any(m in model for m in a.models.split(",")):
                continue
            ov = override(model)
            why = ov.get("skip") or (ov.get("skip_gpu") if a.target != "cpu" else None)
            if why:
                log(logf, f"skip     {model}: {why}")
                skipped += 1
                continue
            if a.target.startswith("cuda"):
                r = subprocess.run([a.loom, "compile", model, "--target", a.target, "--emit=ptx", work],
                                   capture_output=True, text=True, cwd=ROOT, env=env)
                if r.returncode != 0:
                    log(logf, f"FAIL-COMPILE {model}: {first_line(r)}")
                    no_compile += 1
                    continue
            try:
                sig = signature(a.loom, model, env)
            except Exception as e:
                log(logf, f"FAIL     {model}: {e}")
                failed += 1
                continue
            for k in range(3):
                vals = shape_values(sig, ov, k)
                label = ",".join(f"{v}={n}" for v, n in vals.items())
                d = tempfile.mkdtemp(dir=work)
                try:
                    flags = make_inputs(sig, vals, ov, 17 + k, d)
                    ref = run(a.loom, model, "cpu", flags, os.path.join(d, "cpu.npy"), env)
                    got = run(a.loom, model, a.target, flags, os.path.join(d, "dev.npy"), env)
                    why = compare(ref, got)
                except Exception as e:
                    log(logf, f"FAIL     {model} {label}: {e}")
                    failed += 1
                    continue
                if why:
                    log(logf, f"MISMATCH {model} {label} ({why})")
                    failed += 1
                else:
                    log(logf, f"ok       {model} {label}")
                    passed += 1
    log(logf, f"test-gpu: {passed} passed, {failed} failed, {no_compile} failed-to-compile"
              + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed or no_compile else 0


if __name__ == "__main__":
    sys.exit(main())

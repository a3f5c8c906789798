#!/usr/bin/env python3
"""fuzz_ops_ort.py — `loom fuzz-ops`'s third opinion: random one-node ONNX models checked
against ONNX Runtime, so bugs that Loom's interpreter and compiled path share are caught.

Each case is an ONNX model built with onnx.helper (batch dim symbolic), random inputs saved as
.npy; ONNX Runtime runs it, then `loom eval` (the reference interpreter, through the ONNX
importer) and, with --compiled, `loom run` (the JIT path) on the same files. Floats agree
within a tolerance of the op, integers exactly, NaNs at the same places.

Families (a subset of fuzz-ops'): conv (Conv 1-D/2-D: kernels 1-13, asymmetric pads below the
kernel, strides, dilations, groups, bias), pool (MaxPool, AveragePool with count_include_pad,
LpPool; ceil_mode), reduce (ReduceSum/Mean/Max/Min/Prod, axes and keepdims), gather (Gather,
GatherElements, negative indices), matmul (MatMul with batch broadcasting, Gemm with
transposes), elementwise (broadcast Add/Sub/Mul/Div/Pow/Max/Min, unary Relu/Exp/Tanh/Sigmoid/
Erf/Sqrt/Log/Abs/Neg/Floor/Ceil, Softmax/LogSoftmax).

    /work/main/bench/.venv/bin/python tests/fuzz/fuzz_ops_ort.py --loom zig-out/bin/loom --seconds 60 [--compiled]

Ends with `fuzz-ops-ort: N cases, M mismatches` (exit 1 when M > 0); a mismatch prints its seed
and the one-line repro (`--family F --seed S --cases 1`), and `--keep DIR` keeps its files.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

try:
    import onnx
    from onnx import TensorProto, helper
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover
    print(f"fuzz-ops-ort: skipped: {e}")
    sys.exit(0)

OPSET = 18
NP2ONNX = {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64, np.int32: TensorProto.INT32}


def size(r, lo, hi):
    nice = [v for v in (0, 1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 32, 33) if lo <= v <= hi]
    return r.choice(nice) if nice and r.random() < 0.7 else r.randint(lo, hi)


def rand(r, shape, lo=-1.0, hi=1.0):
    rs = np.random.RandomState(r.randint(0, 2**31 - 1))
    return rs.uniform(lo, hi, size=shape).astype(np.float32)


class Case:
    def __init__(self, op, inputs, attrs, tol=(1e-5, 1e-6), inits=None, desc=""):
        self.op, self.inputs, self.attrs, self.tol = op, inputs, attrs, tol
        self.inits = inits or {}
        self.desc = desc


def gen_conv(r):
    n = r.randint(1, 2)
    g = 1 if r.random() < 0.6 else r.randint(1, 3)
    cg, og, b = r.randint(1, 6), r.randint(1, 6), r.randint(1, 3)
    ks, st, dl, pads_lo, pads_hi, ins = [], [], [], [], [], []
    for _ in range(n):
        k = r.randint(1, 13)
        d = 1 if r.random() < 0.7 else r.randint(1, 3)
        eff = d * (k - 1) + 1
        lo = 0 if r.random() < 0.3 else r.randint(0, k - 1)
        hi = lo if r.random() < 0.5 else r.randint(0, k - 1)
        need = max(1, eff - lo - hi)
        ks.append(k), st.append(1 if r.random() < 0.6 else r.randint(1, 4)), dl.append(d)
        pads_lo.append(lo), pads_hi.append(hi), ins.append(size(r, need, need + (40 if n == 1 else 20)))
    x = rand(r, [b, g * cg] + ins)
    w = rand(r, [g * og, cg] + ks)
    inputs = {"x": x, "w": w}
    if r.random() < 0.4:
        inputs["bias"] = rand(r, [g * og])
    attrs = dict(kernel_shape=ks, strides=st, dilations=dl, pads=pads_lo + pads_hi, group=g)
    red = cg * int(np.prod(ks))
    return Case("Conv", inputs, attrs, (1e-5, 1e-6 * (red + 4)))


def gen_pool(r):
    kind = r.choice(["MaxPool", "AveragePool", "LpPool"])
    n = r.randint(1, 2)
    ks, st, lo_, hi_, ins = [], [], [], [], []
    for _ in range(n):
        k = r.randint(1, 7)
        lo = 0 if r.random() < 0.4 else r.randint(0, k - 1)
        hi = lo if r.random() < 0.5 else r.randint(0, k - 1)
        lo, hi = min(lo, k // 2), min(hi, k // 2)  # ONNX Runtime wants pads <= kernel / 2
        ks.append(k), st.append(1 if r.random() < 0.5 else r.randint(1, 3)), lo_.append(lo), hi_.append(hi)
        ins.append(size(r, max(1, k - lo - hi), 30))
    x = rand(r, [r.randint(1, 2), r.randint(1, 4)] + ins)
    attrs = dict(kernel_shape=ks, strides=st, pads=lo_ + hi_)
    if kind != "LpPool" and r.random() < 0.3:
        attrs["ceil_mode"] = 1
    if kind == "AveragePool" and r.random() < 0.5:
        attrs["count_include_pad"] = 1
    if kind == "LpPool":
        attrs["p"] = r.randint(1, 3)
    return Case(kind, {"x": x}, attrs, (1e-5, 1e-5))


def gen_reduce(r):
    op = r.choice(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"])
    rank = r.randint(1, 4)
    shape = [size(r, 1, [0, 60, 30, 12, 8][rank]) for _ in range(rank)]
    lo, hi = (0.5, 1.5) if op == "ReduceProd" else (-1, 1)
    x = rand(r, shape, lo, hi)
    axes = sorted(set(r.randrange(-rank, rank) % rank for _ in range(r.randint(1, rank))))
    if r.random() < 0.3:
        axes = [a - rank for a in axes]
    attrs = dict(keepdims=r.randint(0, 1))
    inits = {"axes": np.array(axes, dtype=np.int64)}
    count = int(np.prod([shape[a % rank] for a in axes]))
    return Case(op, {"x": x}, attrs, (1e-4, 2e-6 * (count + 4)), inits=inits)


def gen_gather(r):
    rank = r.randint(1, 3)
    shape = [size(r, 1, 12) for _ in range(rank)]
    axis = r.randrange(-rank, rank)
    a = axis % rank
    x = rand(r, shape)
    rs = np.random.RandomState(r.randint(0, 2**31 - 1))
    dt = np.int64 if r.random() < 0.5 else np.int32
    lo = -shape[a] if r.random() < 0.4 else 0
    if r.random() < 0.5:
        ishape = [size(r, 0, 7) for _ in range(r.randint(0, 2))]
        idx = rs.randint(lo, shape[a], size=ishape).astype(dt)
        return Case("Gather", {"x": x, "i": idx}, dict(axis=axis))
    ishape = list(shape)
    ishape[a] = size(r, 0, 9)
    idx = rs.randint(lo, shape[a], size=ishape).astype(dt)
    return Case("GatherElements", {"x": x, "i": idx}, dict(axis=axis))


def gen_matmul(r):
    m, k, n = size(r, 1, 70), size(r, 1, 70), size(r, 1, 70)
    if r.random() < 0.3:
        ta, tb = r.randint(0, 1), r.randint(0, 1)
        a = rand(r, [k, m] if ta else [m, k])
        b = rand(r, [n, k] if tb else [k, n])
        inputs = {"a": a, "b": b}
        if r.random() < 0.5:
            inputs["c"] = rand(r, r.choice([[n], [1, n], [m, n]]))
        return Case("Gemm", inputs, dict(transA=ta, transB=tb, alpha=r.choice([1.0, 0.5]), beta=r.choice([1.0, 2.0])),
                    (1e-5, 1e-6 * (k + 4)))
    batch = [size(r, 1, 4) for _ in range(r.randint(0, 2))]
    ba = [d if r.random() < 0.7 else 1 for d in batch]
    bb = [d if r.random() < 0.7 else 1 for d in batch][r.randint(0, len(batch)):]
    a = rand(r, ba + [m, k]) if r.random() < 0.9 else rand(r, [k])
    b = rand(r, bb + [k, n]) if r.random() < 0.9 else rand(r, [k])
    return Case("MatMul", {"a": a, "b": b}, {}, (1e-5, 1e-6 * (k + 4)))


def gen_elementwise(r):
    rank = r.randint(0, 4)
    shape = [size(r, 1, [1, 70, 30, 12, 8][rank]) for _ in range(rank)]
    if r.random() < 0.3:
        op = r.choice(["Softmax", "LogSoftmax"])
        if rank == 0:
            shape = [5]
        x = rand(r, shape, -8, 8)
        return Case(op, {"x": x}, dict(axis=r.randrange(-len(shape), len(shape))), (1e-5, 1e-5))
    if r.random() < 0.5:
        op = r.choice(["Relu", "Exp", "Tanh", "Sigmoid", "Erf", "Sqrt", "Log", "Abs", "Neg", "Floor", "Ceil"])
        lo = 0.0 if op in ("Sqrt", "Log") else -4.0
        return Case(op, {"x": rand(r, shape, lo, 4)}, {})
    op = r.choice(["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"])
    sb = [d if r.random() < 0.7 else 1 for d in shape][r.randint(0, rank):]
    lo = 0.1 if op in ("Pow", "Div") else -2.0
    return Case(op, {"a": rand(r, shape, lo, 2), "b": rand(r, sb, lo, 2)}, {})


FAMILIES = {"conv": gen_conv, "pool": gen_pool, "reduce": gen_reduce, "gather": gen_gather, "matmul": gen_matmul,
            "elementwise": gen_elementwise}


def build_model(c, path):
    ins, nodes_in = [], []
    for name, v in c.inputs.items():
        shape = list(v.shape)
        dims = [f"{name}_n" if i == 0 and len(shape) > 1 else d for i, d in enumerate(shape)]  # axis 0 symbolic
        ins.append(helper.make_tensor_value_info(name, NP2ONNX[v.dtype.type], dims))
        nodes_in.append(name)
    inits = [helper.make_tensor(k, TensorProto.INT64, list(v.shape), v.tolist()) for k, v in c.inits.items()]
    nodes_in += list(c.inits)
    node = helper.make_node(c.op, nodes_in, ["y"], **c.attrs)
    out = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)  # every family returns f32
    graph = helper.make_graph([node], "fuzz", ins, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.save(model, path)


def compare(ref, got, tol):
    if ref.shape != got.shape:
        return f"shape: onnxruntime {ref.shape}, loom {got.shape}"
    if ref.dtype.kind in "iub":
        bad = ref != got
    else:
        rtol, atol = tol
        r64, g64 = ref.astype(np.float64), got.astype(np.float64)
        nan = np.isnan(r64) | np.isnan(g64)
        with np.errstate(invalid="ignore"):
            bad = np.where(nan, np.isnan(r64) != np.isnan(g64), ~(np.abs(r64 - g64) <= atol + rtol * np.abs(r64)))
        bad &= ~(np.isinf(r64) & (r64 == g64))
    if bad.any():
        i = tuple(int(v) for v in np.argwhere(bad)[0])
        return f"{int(bad.sum())} of {bad.size} elements differ; first {list(i)}: onnxruntime {ref[i]!r}, loom {got[i]!r}"
    return None


def run_loom(loom, cmd, model, c, d, out):
    args = [loom, cmd, model] + [a for k in c.inputs for a in ("--input", f"{k}=@{d}/{k}.npy")] + ["--output", out]
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if p.returncode:
        text = (p.stderr or p.stdout).strip()
        first = next((l for l in text.splitlines() if "error" in l), text.splitlines()[0] if text else "exit %d" % p.returncode)
        return None, (first, "unimplemented" in text)
    return np.load(out), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loom", default=os.environ.get("LOOM_BIN", "zig-out/bin/loom"))
    ap.add_argument("--seconds", type=float, default=0)
    ap.add_argument("--cases", type=int, default=0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--family", default=None, help="comma list of " + ", ".join(FAMILIES))
    ap.add_argument("--compiled", action="store_true", help="also compare `loom run` (the JIT path) with ONNX Runtime")
    ap.add_argument("--keep", default=None, help="keep the files of failing cases under this directory")
    a = ap.parse_args()
    if not a.cases and not a.seconds:
        a.cases = 60
    fams = [f for f in FAMILIES if not a.family or f in a.family.split(",")]
    if not fams:
        print(f"fuzz-ops-ort: no family matches {a.family}")
        return 2
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    counts = {f: [0, 0, 0] for f in fams}  # cases, mismatches, loom refusals
    t0, i = time.time(), 0
    while (not a.cases or i < a.cases) and (not a.seconds or time.time() - t0 < a.seconds):
        fam, seed = fams[i % len(fams)], a.seed + i
        i += 1
        c = FAMILIES[fam](random.Random(seed))
        d = tempfile.mkdtemp(prefix="fuzz-ort-")
        model = f"{d}/m.onnx"
        build_model(c, model)
        for k, v in c.inputs.items():
            np.save(f"{d}/{k}.npy", v)
        counts[fam][0] += 1
        try:
            ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, c.inputs)[0]
        except Exception as e:  # ONNX Runtime refuses the case: not Loom's business
            counts[fam][2] += 1
            print(f"skip {fam} seed {seed}: onnxruntime: {str(e).splitlines()[0][:200]}")
            shutil.rmtree(d)
            continue
        problems = []
        for cmd in ["eval"] + (["run"] if a.compiled else []):
            got, err = run_loom(a.loom, cmd, model, c, d, f"{d}/out_{cmd}.npy")
            if err:
                if err[1]:  # a documented refusal (UNIMPLEMENTED), not a wrong answer
                    counts[fam][2] += 1
                    print(f"refused {fam} seed {seed}: loom {cmd}: {err[0][:200]}")
                    continue
                problems.append(f"loom {cmd} fails: {err[0]}")
                continue
            msg = compare(ref, got, c.tol)
            if msg:
                problems.append(f"loom {cmd}: {msg}")
        if problems:
            counts[fam][1] += 1
            shapes = " ".join(f"{k}={v.dtype}{list(v.shape)}" for k, v in c.inputs.items())
            print(f"MISMATCH {fam} seed {seed}: {c.op} {c.attrs} [{shapes}]")
            for p in problems:
                print(f"  {p}")
            print(f"  repro: {sys.argv[0]} --family {fam} --seed {seed} --cases 1{' --compiled' if a.compiled else ''}")
            if a.keep:
                os.makedirs(a.keep, exist_ok=True)
                shutil.copytree(d, f"{a.keep}/{fam}-{seed}", dirs_exist_ok=True)
                print(f"  files: {a.keep}/{fam}-{seed}")
        shutil.rmtree(d)
    print("family        cases  mismatches  refused")
    for f in fams:
        print(f"{f:<13} {counts[f][0]:5d} {counts[f][1]:11d} {counts[f][2]:8d}")
    n, m = sum(v[0] for v in counts.values()), sum(v[1] for v in counts.values())
    print(f"{time.time() - t0:.1f} s, seed {a.seed}")
    print(f"fuzz-ops-ort: {n} cases, {m} mismatches")
    return 1 if m else 0


if __name__ == "__main__":
    sys.exit(main())

"""check.py MODEL.onnx SHAPE [SHAPE...]: Loom (`loom run`, 1 thread, best of 3) against ONNX Runtime (1 thread, best of 3)
on the same random input: the output's max abs error over its max abs value, both times and their ratio.
SHAPE like 1x3x224x224 (the first input; float32 random); a model with several outputs is compared on its first. $LOOM: the loom binary (default zig-out/bin/loom). """
import sys, subprocess, re, time, os, numpy as np, onnxruntime as ort
LOOM = os.environ.get("LOOM", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "zig-out", "bin", "loom"))
IN, OUT = f"/tmp/um_in_{os.getpid()}.npy", f"/tmp/um_out_{os.getpid()}.npy"
f = sys.argv[1]
so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
s = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"])
inp = s.get_inputs()[0]
for shp in sys.argv[2:]:
    dims = [int(v) for v in shp.split("x")]
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    np.save(IN, x)
    ref = s.run(None, {inp.name: x})[0]
    ts = []
    for _ in range(3):
        t = time.perf_counter(); s.run(None, {inp.name: x}); ts.append(time.perf_counter() - t)
    r = subprocess.run([LOOM, "run", f, "--threads", "1", "--repeat", "3", "--input", f"{inp.name}=@{IN}", "--output", OUT], capture_output=True, text=True)
    m = re.search(r"min ([\d.]+) ms", r.stdout)
    if r.returncode or not m:
        print(f"{os.path.basename(f):28} {shp:16} LOOM FAILED rc={r.returncode}: {(r.stderr or r.stdout)[-400:]}", flush=True); continue
    y = np.load(OUT if os.path.exists(OUT) else OUT[:-4] + ".0.npy")  # several outputs: FILE.0.npy, ...; the first compared
    if y.shape != ref.shape: err = float("inf")
    elif y.size == 0: err = 0.0  # nothing to compare (a detector keeping no box): the shapes agree
    else: err = float(np.max(np.abs(y.astype(np.float64) - ref)) / max(1e-30, float(np.max(np.abs(ref)))))
    lm, om = float(m.group(1)), min(ts) * 1e3
    print(f"{os.path.basename(f):28} {shp:16} err {err:.1e} {'' if err < 1e-4 else 'WRONG'} loom {lm:9.2f} ms  ort {om:9.2f} ms  ratio {lm/om:5.2f}", flush=True)

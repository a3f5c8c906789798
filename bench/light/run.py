"""bench/light/run.py — the nine ImageNet CNNs of ONNX's light suite (../shared/conformance/onnx-backend-1.22/light:
models Loom does not ship; weights replaced by ConstantOfShape) timed as a user would try them: `loom run
--repeat 5 --threads 1` against ONNX Runtime (1 intra-op thread, best of 5) on the same input shape.

    bench/.venv/bin/python bench/light/run.py [LOOM] [NAME ...]
"""
import glob
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnxruntime as ort

L = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "conformance", "onnx-backend-1.22", "light")
loom = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "zig-out", "bin", "loom")
for f in sorted(glob.glob(L + "/*.onnx")):
    if sys.argv[2:] and not any(k in f for k in sys.argv[2:]): continue
    name = os.path.basename(f)[6:-5]
    so = ort.SessionOptions(); so.intra_op_num_threads = 1; so.inter_op_num_threads = 1
    s = ort.InferenceSession(f, so, providers=["CPUExecutionProvider"])
    i = s.get_inputs()[0]
    shp = [d if isinstance(d, int) else 1 for d in i.shape]
    x = np.random.rand(*shp).astype(np.float32)
    s.run(None, {i.name: x})
    ts = []
    for _ in range(5):
        t = time.perf_counter(); s.run(None, {i.name: x}); ts.append(time.perf_counter() - t)
    o = min(ts) * 1e3
    # the IR names an ONNX input with its other characters as _ (gpu_0/data_0: gpu_0_data_0)
    r = subprocess.run([loom, "run", f, "--repeat", "5", "--threads", "1", "--input", re.sub(r"[^A-Za-z0-9_]", "_", i.name) + "=random:(" + ",".join(map(str, shp)) + ")"], capture_output=True, text=True)
    m = re.search(r"min ([\d.]+) ms", r.stdout)
    lm = float(m.group(1)) if m else float("nan")
    print(f"{name:16} {str(shp):18} loom {lm:9.2f} ms  ort {o:9.2f} ms  ratio {lm / o:5.2f}", flush=True)

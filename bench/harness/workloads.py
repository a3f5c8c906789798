"""workloads.py — the shape sweeps, the seeded inputs and the work (flops, bytes) of each case.

A case is (workload, model file, shape dict). Inputs are a pure function of the case, so the harness,
the reference and every system's worker build the very same arrays without passing them around.
"""
import math
import zlib

import numpy as np

from modeldefs import D, DH, FF, HEADS, LAYERS

B1_BATCH = [1, 2, 3, 4, 7, 8, 9, 16, 31, 32, 33, 64, 127, 128, 255, 256]
B2_BATCH = [1, 2, 4, 8]
B2_SEQ = [1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 384, 511, 512]
# B3 and B4: the issue fixes no sweep; these cover short and long prompts, small and larger batches.
B3_PREFILL = [(1, 32), (1, 128), (1, 512), (4, 128)]
B3_DECODE = [(1, 32), (1, 128), (1, 512), (4, 128), (8, 256)]  # (batch, past), one new token
B4 = [(1, 16), (1, 128), (4, 64), (4, 128), (8, 384)]
B5_REQUESTS, B5_SEED = 200, 5

# --quick: a subset that finishes in under 15 minutes on 2 cores. B3 and B4 are one case each and skip
# the systems whose set-up alone takes minutes on 12 layers here; B1 alone runs on 1 and 2 threads.
QUICK = {
    "B1": [{"batch": b} for b in [1, 7, 32, 33]],
    "B2": [{"batch": b, "seq": s} for b in [1, 4] for s in [17, 129]],
    "B3": [{"phase": "decode", "batch": 1, "past": 128}],
    "B4": [{"batch": 1, "seq": 128}],
}
QUICK_B5_REQUESTS = 30
QUICK_THREADS = {"B1": [1, 2], "B2": [1], "B3": [1], "B4": [1], "B5": [1]}
QUICK_EXCLUDE = {"B1": {"iree-nodt"},  # `iree` compiles B1; iree-nodt is there for B2-B5
                 "B3": {"tvm", "iree", "iree-nodt", "torch-compile"},
                 "B4": {"tvm", "iree", "iree-nodt", "torch-compile"},
                 # TVM's default pipeline needs minutes for one large request here: full run only
                 "B5": {"tvm"}}

MODEL_OF = {"B1": "mlp", "B2": "gpt2_block", "B4": "bert_encoder", "B5": "gpt2_block"}


def full_cases():
    return {
        "B1": [{"batch": b} for b in B1_BATCH],
        "B2": [{"batch": b, "seq": s} for b in B2_BATCH for s in B2_SEQ],
        "B3": [{"phase": "prefill", "batch": b, "seq": s} for b, s in B3_PREFILL]
        + [{"phase": "decode", "batch": b, "past": p} for b, p in B3_DECODE],
        "B4": [{"batch": b, "seq": s} for b, s in B4],
    }


def model_of(workload, shape):
    if workload == "B3":
        return "gpt2_prefill" if shape["phase"] == "prefill" else "gpt2_decode"
    return MODEL_OF[workload]


def case_id(workload, shape):
    return workload + ":" + ",".join(f"{k}={v}" for k, v in shape.items())


def stream(n=B5_REQUESTS, seed=B5_SEED):
    """B5: n requests, batch uniform in 1..8, seq log-uniform in [1, 512] (rounded, clamped)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        b = int(rng.integers(1, 9))
        s = int(min(512, max(1, round(math.exp(rng.uniform(0.0, math.log(512)))))))
        out.append({"batch": b, "seq": s})
    return out


def inputs(workload, shape):
    """Seeded float32 inputs (int64 mask for B4) for one case."""
    seed = zlib.crc32(case_id(workload, shape).encode())
    rng = np.random.default_rng(seed)
    b = shape["batch"]
    if workload == "B1":
        return {"x": rng.standard_normal((b, 1024), dtype=np.float32)}
    if workload in ("B2", "B5"):
        return {"x": rng.standard_normal((b, shape["seq"], D), dtype=np.float32)}
    if workload == "B3":
        if shape["phase"] == "prefill":
            return {"x": rng.standard_normal((b, shape["seq"], D), dtype=np.float32)}
        I = {"x": rng.standard_normal((b, 1, D), dtype=np.float32)}
        for i in range(LAYERS):
            for kv in ("key", "value"):
                I[f"past_{kv}_{i}"] = rng.standard_normal((b, HEADS, shape["past"], DH), dtype=np.float32)
        return I
    if workload == "B4":
        s = shape["seq"]
        lengths = rng.integers(max(1, s // 2), s + 1, size=b)
        mask = (np.arange(s)[None, :] < lengths[:, None]).astype(np.int64)
        return {"x": rng.standard_normal((b, s, D), dtype=np.float32), "attention_mask": mask}
    raise ValueError(workload)


def _block_flops(n_tok, b, s, t):
    dense = 2 * n_tok * (D * 3 * D + D * D + 2 * D * FF)
    attn = 2 * 2 * b * HEADS * s * t * DH
    return dense + attn


def work(workload, shape):
    """(flops, weight bytes) of one case: the roofline's two numerators."""
    b = shape["batch"]
    if workload == "B1":
        return 2 * b * (1024 * 4096 + 4096 * 4096 + 4096 * 1024), 4 * (1024 * 4096 + 4096 * 4096 + 4096 * 1024)
    block_bytes = 4 * (D * 3 * D + D * D + 2 * D * FF)
    if workload in ("B2", "B5"):
        s = shape["seq"]
        return _block_flops(b * s, b, s, s), block_bytes
    if workload == "B3":
        if shape["phase"] == "prefill":
            s, t = shape["seq"], shape["seq"]
        else:
            s, t = 1, shape["past"] + 1
        kv_bytes = 4 * 2 * LAYERS * b * HEADS * t * DH
        return LAYERS * _block_flops(b * s, b, s, t), LAYERS * block_bytes + kv_bytes
    if workload == "B4":
        s = shape["seq"]
        return LAYERS * _block_flops(b * s, b, s, s), LAYERS * block_bytes
    raise ValueError(workload)

#!/usr/bin/env python3
"""bench/serve/ort_server.py — baseline (a) of bench/serve: the same decoder (model.onnx from
make_model.py) run per request with ONNX Runtime in a plain generate loop, what a user would write:
a threaded HTTP server, each request its own loop (prefill, then one decode call per token feeding
past/present back), one shared InferenceSession. Same API subset as `loom serve`:
POST /v1/completions {"prompt": [ids], "max_tokens", "stream"} (greedy), GET /health.

    python3 bench/serve/ort_server.py MODEL.onnx PORT [--threads N]
"""
import os
import sys

import numpy as np
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sse_server import serve  # noqa: E402


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 0
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    pasts = [i for i in sess.get_inputs() if i.name.startswith("past_")]
    H, dh = pasts[0].shape[1], pasts[0].shape[3]
    torch_style = any(i.name == "attention_mask" for i in sess.get_inputs())

    def generate(prompt, max_tokens):
        ids = np.array([prompt], np.int64)
        past = {p.name: np.zeros((1, H, 0, dh), np.float32) for p in pasts}
        n = 0
        for _ in range(max_tokens):
            s = ids.shape[1]
            if torch_style:  # transformers' export (tests/serve/data/make_torch.py): the mask and positions are built inside
                feed = {"input_ids": ids, "attention_mask": np.ones((1, n + s), np.int64), **past}
            else:
                mask = np.triu(np.full((s, n + s), -1e9, np.float32), k=n + 1)
                feed = {"input_ids": ids, "position_ids": np.arange(n, n + s, dtype=np.int64)[None], "mask": mask, **past}
            out = sess.run(None, feed)
            tok = int(np.argmax(out[0][0, -1]))
            yield tok
            for i, p in enumerate(pasts):
                past[p.name] = out[1 + i]
            n += s
            ids = np.array([[tok]], np.int64)

    serve(generate, port, "ort baseline")


if __name__ == "__main__":
    main()

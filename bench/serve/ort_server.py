#!/usr/bin/env python3
"""bench/serve/ort_server.py — baseline (a) of bench/serve: the same decoder (model.onnx from
make_model.py) run per request with ONNX Runtime in a plain generate loop, what a user would write:
a threaded HTTP server, each request its own loop (prefill, then one decode call per token feeding
past/present back), one shared InferenceSession. Same API subset as `loom serve`:
POST /v1/completions {"prompt": [ids], "max_tokens", "stream"} (greedy), GET /health.

    python3 bench/serve/ort_server.py MODEL.onnx PORT [--threads N]
"""
import json
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import onnxruntime as ort


def main():
    path, port = sys.argv[1], int(sys.argv[2])
    threads = int(sys.argv[sys.argv.index("--threads") + 1]) if "--threads" in sys.argv else 0
    so = ort.SessionOptions()
    if threads:
        so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    pasts = [i for i in sess.get_inputs() if i.name.startswith("past_")]
    H, dh = pasts[0].shape[1], pasts[0].shape[3]

    def generate(prompt, max_tokens):
        ids = np.array([prompt], np.int64)
        past = {p.name: np.zeros((1, H, 0, dh), np.float32) for p in pasts}
        n = 0
        for _ in range(max_tokens):
            s = ids.shape[1]
            mask = np.triu(np.full((s, n + s), -1e9, np.float32), k=n + 1)
            feed = {"input_ids": ids, "position_ids": np.arange(n, n + s, dtype=np.int64)[None], "mask": mask, **past}
            out = sess.run(None, feed)
            tok = int(np.argmax(out[0][0, -1]))
            yield tok
            for i, p in enumerate(pasts):
                past[p.name] = out[1 + i]
            n += s
            ids = np.array([[tok]], np.int64)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            # small writes go out at once (no Nagle delay): the baseline is not made slow by its socket
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self):
            body = b'{"status":"ok"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt, mt, stream = req["prompt"], int(req.get("max_tokens", 16)), bool(req.get("stream"))
            if not stream:
                toks = list(generate(prompt, mt))
                body = json.dumps({"choices": [{"index": 0, "tokens": toks, "finish_reason": "length"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(b):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.flush()

            for tok in generate(prompt, mt):
                chunk(b"data: " + json.dumps({"choices": [{"index": 0, "token": tok, "finish_reason": None}]}).encode() + b"\n\n")
            chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")

    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    print(f"ort baseline: listening on http://127.0.0.1:{port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

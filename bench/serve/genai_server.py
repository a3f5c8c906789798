#!/usr/bin/env python3
"""bench/serve/genai_server.py — baseline (b) of bench/serve: the same decoder run by ONNX Runtime
GenAI (make_model.py's genai/ folder: the ONNX model with an attention_mask input and its
genai_config.json), one og.Generator per request (greedy), behind the same threaded HTTP server as
ort_server.py. GenAI is not in bench/.venv: run.py runs this with bench/out/genai-venv's Python
(`python3 -m venv bench/out/genai-venv && bench/out/genai-venv/bin/pip install onnxruntime-genai`).

    bench/out/genai-venv/bin/python bench/serve/genai_server.py GENAI_DIR PORT
"""
import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import onnxruntime_genai as og


def main():
    model = og.Model(sys.argv[1])
    port = int(sys.argv[2])

    def generate(prompt, max_tokens):
        p = og.GeneratorParams(model)
        p.set_search_options(max_length=len(prompt) + max_tokens, do_sample=False)
        g = og.Generator(model, p)
        g.append_tokens(prompt)
        n = 0
        while not g.is_done() and n < max_tokens:
            g.generate_next_token()
            n += 1
            yield int(g.get_next_tokens()[0])

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def do_GET(self):
            body = b'{"status":"ok"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()

            def chunk(b):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(b), b))
                self.wfile.flush()

            for tok in generate(req["prompt"], int(req.get("max_tokens", 16))):
                chunk(b"data: " + json.dumps({"choices": [{"index": 0, "token": tok, "finish_reason": None}]}).encode() + b"\n\n")
            chunk(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")

    srv = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    srv.daemon_threads = True
    print(f"genai baseline: listening on http://127.0.0.1:{port}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

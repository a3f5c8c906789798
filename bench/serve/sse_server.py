"""bench/serve/sse_server.py — the HTTP side both baselines share (ort_server.py, genai_server.py): a
threaded Python HTTP server answering POST /v1/completions ({"prompt": [ids], "max_tokens", "stream"},
greedy) with one server-sent event per token (or one JSON answer), and GET /health — what a user
would put around a generate loop. `generate(prompt, max_tokens)` yields the tokens."""
import json
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(generate, port, label):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            # small writes go out at once (no Nagle delay): a baseline is not made slow by its socket
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def reply(self, body):
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.reply(b'{"status":"ok"}')

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            prompt, mt = req["prompt"], int(req.get("max_tokens", 16))
            if not req.get("stream"):
                toks = list(generate(prompt, mt))
                self.reply(json.dumps({"choices": [{"index": 0, "tokens": toks, "finish_reason": "length"}]}).encode())
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
    print(f"{label}: listening on http://127.0.0.1:{port}", flush=True)
    srv.serve_forever()

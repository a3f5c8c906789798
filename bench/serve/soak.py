#!/usr/bin/env python3
"""bench/serve/soak.py — robustness of `loom serve` (issue 26, item 4): 1,000 requests back to back
on 127.0.0.1 — greedy and sampled, streamed and whole, malformed JSON, unknown fields, prompts over
the context, tokens out of the vocabulary, and clients that disconnect mid-stream — each must be
answered (200) or refused with its HTTP error, the server must stay up, and its resident memory
(VmRSS) is reported every 100 requests: it must stay flat. Then SIGTERM: exit 0.

    bench/.venv/bin/python bench/serve/soak.py [--requests 1000]
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=1000)
    a = ap.parse_args()
    env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(ROOT, "bench", "out", "serve", "cache"))
    proc = subprocess.Popen([os.path.join(ROOT, "zig-out", "bin", "loom"), "serve", os.path.join(ROOT, "models", "serve_decoder.loom"),
                             "--random-weights", "7", "--port", "0", "--kv-pages", "256", "--threads", "2"],
                            stdout=subprocess.PIPE, env=env, text=True)
    port = None
    for line in proc.stdout:
        if "listening on" in line:
            port = int(line.rsplit(":", 1)[1])
            break
    r = random.Random(26)
    counts, rss = {}, []
    for i in range(a.requests):
        kind = r.choice(["greedy", "sampled", "stream", "bad_json", "unknown", "too_long", "vocab", "disconnect"])
        prompt = [r.randrange(256) for _ in range(r.randint(1, 64))]
        body = {"greedy": {"prompt": prompt, "max_tokens": r.randint(1, 32), "temperature": 0},
                "sampled": {"prompt": prompt, "max_tokens": r.randint(1, 32), "temperature": 0.8, "top_p": 0.9, "seed": i},
                "stream": {"prompt": prompt, "max_tokens": r.randint(1, 32), "stream": True},
                "unknown": {"prompt": prompt, "best_of": 2},
                "too_long": {"prompt": prompt * 20, "max_tokens": 1020},
                "vocab": {"prompt": prompt + [256]},
                "disconnect": {"prompt": prompt, "max_tokens": 200, "stream": True}}.get(kind)
        data = b'{"prompt": [1, 2' if kind == "bad_json" else json.dumps(body).encode()
        if kind == "disconnect":
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data))
            s.recv(256)
            s.close()
            status = "cut"
        else:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("POST", "/v1/completions", data, {"Content-Type": "application/json"})
            resp = c.getresponse()
            resp.read()
            status = resp.status
            c.close()
        counts[(kind, status)] = counts.get((kind, status), 0) + 1
        if (i + 1) % 100 == 0:
            rss.append((i + 1, rss_kb(proc.pid)))
            print(f"{i + 1:5} requests: RSS {rss[-1][1] / 1024:.1f} MiB", flush=True)
    time.sleep(0.5)
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/metrics")
    m = c.getresponse().read().decode()
    running = [l for l in m.splitlines() if l.startswith(("loom_serve_running ", "loom_serve_kv_pages_used ", "loom_serve_cancelled_total "))]
    proc.send_signal(signal.SIGTERM)
    rc = proc.wait(timeout=60)
    print("answers by kind and status:", ", ".join(f"{k}/{s}: {n}" for (k, s), n in sorted(counts.items(), key=str)))
    print("after the run:", "; ".join(running))
    print(f"RSS at 100 requests {rss[0][1] / 1024:.1f} MiB, at {rss[-1][0]} {rss[-1][1] / 1024:.1f} MiB; SIGTERM: exit {rc}")
    bad = [(k, s) for (k, s) in counts if (k in ("greedy", "sampled", "stream") and s != 200) or
           (k in ("bad_json", "unknown", "too_long", "vocab") and s != 400)]
    sys.exit(1 if bad or rc != 0 else 0)


if __name__ == "__main__":
    main()

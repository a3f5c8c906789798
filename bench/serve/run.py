#!/usr/bin/env python3
"""bench/serve/run.py — the load benchmark of `loom serve` (issue 26): N concurrent streaming
clients on 127.0.0.1, prompts of log-uniform length 1..512, outputs of 16..256 tokens (greedy),
a fixed seed; each level runs for --seconds and stops by itself (requests still streaming at the
deadline are cut; their tokens so far count). Reported per level: throughput (generated tokens/s),
TTFT p50/p99 and inter-token latency p50/p99, for
  loom   `loom serve` on make_model.py's serve.loom + weights.safetensors
  loom-onnx  `loom serve` on make_model.py's model.onnx (past/present, rewritten onto the paged cache at start)
  ort    baseline (a): the same model as ONNX, per request, in a plain generate loop (ort_server.py)
  genai  baseline (b): the same model run by ONNX Runtime GenAI, a generator per request (genai_server.py;
         needs bench/out/genai-venv with onnxruntime-genai, else skipped)

    bench/.venv/bin/python bench/serve/run.py [--clients 1,4,16,64] [--seconds 20] [--systems loom,ort]
"""
import argparse
import datetime
import http.client
import json
import math
import os
import random
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sizes  # noqa: E402


def workload(seed, n):
    r = random.Random(seed)
    for _ in range(n):
        plen = int(math.exp(r.uniform(0, math.log(512))))
        yield [r.randrange(0, 4096) for _ in range(max(1, plen))], r.randint(16, 256)


def one_request(port, prompt, max_tokens, hard_deadline, rec):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, hard_deadline - time.time()))
    body = json.dumps({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True})
    t0 = time.perf_counter()
    try:
        c.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        resp = c.getresponse()
        last = None
        while time.time() < hard_deadline:
            line = resp.fp.readline()
            if not line:
                break
            if not line.startswith(b"data: "):
                continue
            if line.startswith(b"data: [DONE]"):
                break
            ev = json.loads(line[6:])
            if ev["choices"][0].get("token") is None:
                continue
            now = time.perf_counter()
            if last is None:
                rec["ttft"].append(now - t0)
            else:
                rec["itl"].append(now - last)
            last = now
            rec["tokens"] += 1
    except (OSError, http.client.HTTPException):
        rec["errors"] += 1
    finally:
        c.close()


def level(port, clients, seconds, seed):
    rec = {"ttft": [], "itl": [], "tokens": 0, "errors": 0, "requests": 0}
    lock = threading.Lock()
    work = iter(workload(seed, 100000))
    start = time.time()
    soft, hard = start + seconds, start + seconds * 1.5

    def client():
        while time.time() < soft:
            with lock:
                prompt, mt = next(work)
                rec["requests"] += 1
            one_request(port, prompt, mt, hard, rec)

    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.time() - start
    return rec, wall


def pct(v, p):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, max(0, math.ceil(p / 100 * len(v)) - 1))]


def wait_ready(port, proc, limit=300):
    t0 = time.time()
    while time.time() - t0 < limit:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("server did not become ready")


def metric(port, name):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    for line in c.getresponse().read().decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", default="1,4,16,64")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--systems", default="loom,ort,genai")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--loom-args", default="", help="more options for `loom serve` (e.g. \"--offload --max-step-tokens 64\")")
    sizes.add_argument(ap)
    ap.add_argument("--onnx", default=None, help="the ONNX decoder of loom-onnx and ort (default make_model.py's model.onnx; e.g. "
                    "tests/serve/data/make_torch.py --bench's torch GPT-2 export)")
    ap.add_argument("--loom-bin", default=os.path.join(ROOT, "zig-out", "bin", "loom"),
                    help="the loom program of the loom systems (a before/after comparison runs an older build)")
    ap.add_argument("--out", default=None, help="results file (default bench/results/<date>-serve.md)")
    ap.add_argument("--step-log", default=None, help="a directory: `loom serve --step-log` of each Loom system and level goes to "
                    "DIR/<system>-<clients>.log (read it with steplog.py)")
    a = ap.parse_args()
    OUT = sizes.model_dir(a.size)
    onnx = a.onnx or os.path.join(OUT, "model.onnx")
    rows = []
    for system in a.systems.split(","):
        port = {"loom": 18101, "ort": 18102, "genai": 18103, "loom-onnx": 18104}[system]
        env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(OUT, "cache"))
        if a.step_log and system.startswith("loom"):
            os.makedirs(a.step_log, exist_ok=True)
            a.loom_args_sys = " --step-log " + os.path.join(a.step_log, system + ".log")
        else:
            a.loom_args_sys = ""
        if system == "loom":
            cmd = [a.loom_bin, "serve", os.path.join(OUT, "serve.loom"), "--weights",
                   os.path.join(OUT, "weights.safetensors"), "--port", str(port), "--threads", str(a.threads), "--max-batch", "64"] + (a.loom_args + a.loom_args_sys).split()
        elif system == "loom-onnx":
            cmd = [a.loom_bin, "serve", onnx, "--port", str(port),
                   "--threads", str(a.threads), "--max-batch", "64"] + (a.loom_args + a.loom_args_sys).split()
        elif system == "genai":
            py = os.path.join(ROOT, "bench", "out", "genai-venv", "bin", "python")
            if not os.path.exists(py):
                print("genai: no bench/out/genai-venv (python3 -m venv bench/out/genai-venv && "
                      "bench/out/genai-venv/bin/pip install onnxruntime-genai): skipped", flush=True)
                continue
            cmd = [py, os.path.join(ROOT, "bench", "serve", "genai_server.py"), os.path.join(OUT, "genai"), str(port)]
        else:
            cmd = [sys.executable, os.path.join(ROOT, "bench", "serve", "ort_server.py"), onnx, str(port),
                   "--threads", str(a.threads)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            wait_ready(port, proc)
            for n in [int(x) for x in a.clients.split(",")]:
                if system.startswith("loom"):
                    m0 = {k: metric(port, k) for k in ("loom_serve_step_seconds_sum", "loom_serve_steps_total", "loom_serve_step_tokens_sum")}
                if system.startswith("loom") and a.step_log:
                    log0 = len(open(os.path.join(a.step_log, system + ".log")).readlines())
                rec, wall = level(port, n, a.seconds, a.seed)
                if system.startswith("loom") and a.step_log:
                    lines = open(os.path.join(a.step_log, system + ".log")).readlines()
                    with open(os.path.join(a.step_log, f"{system}-{n}.log"), "w") as f:
                        f.writelines(lines[:1] + lines[log0:])
                row = dict(system=system, clients=n, tok_s=rec["tokens"] / wall, requests=rec["requests"], tokens=rec["tokens"],
                           errors=rec["errors"], ttft50=pct(rec["ttft"], 50), ttft99=pct(rec["ttft"], 99),
                           itl50=pct(rec["itl"], 50), itl99=pct(rec["itl"], 99), wall=wall)
                if system.startswith("loom"):
                    row["compilations"] = metric(port, "loom_serve_compilations")
                    d = {k: metric(port, k) - v for k, v in m0.items()}
                    steps = max(1.0, d["loom_serve_steps_total"])
                    row["busy"] = d["loom_serve_step_seconds_sum"] / wall
                    row["step_ms"] = d["loom_serve_step_seconds_sum"] / steps * 1e3
                    row["step_tokens"] = d["loom_serve_step_tokens_sum"] / steps
                    print(f"      engine: busy {row['busy'] * 100:.0f}% of the wall time, {steps:.0f} steps of {row['step_tokens']:.1f} "
                          f"tokens in {row['step_ms']:.2f} ms on average; compilations {row['compilations']:.0f}", flush=True)
                rows.append(row)
                print("{system:9} {clients:3} clients: {tok_s:8.1f} tok/s  TTFT p50 {ttft50:.3f} s p99 {ttft99:.3f} s  "
                      "ITL p50 {itl50:.4f} s p99 {itl99:.4f} s  ({requests} requests, {tokens} tokens, {errors} errors, {wall:.0f} s)".format(**row),
                      flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    out = a.out or os.path.join(ROOT, "bench", "results", datetime.date.today().isoformat() + "-serve.md")
    with open(out, "w") as f:
        f.write(f"# bench/serve — {datetime.datetime.now().isoformat(timespec='minutes')}\n\n")
        f.write(f"`bench/serve/run.py --clients {a.clients} --seconds {a.seconds} --threads {a.threads} --loom-args '{a.loom_args}'"
                + (f" --onnx {a.onnx}" if a.onnx else "") + f" --size {a.size}`; model: make_model.py's "
                f"({sizes.SIZES[a.size][0]})" + (" architecture, as the given ONNX" if a.onnx else "") + "; greedy; prompts log-uniform 1..512, outputs 16..256, seed "
                f"{a.seed}. The machine has 2 cores shared with other jobs: short runs, figures drift.\n\n")
        f.write("| system | clients | tokens/s | TTFT p50 (s) | TTFT p99 (s) | ITL p50 (ms) | ITL p99 (ms) | requests | errors | engine busy | step (ms) | tokens/step |\n")
        f.write("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
        for r in rows:
            eng = "| {:.0f}% | {:.2f} | {:.1f} ".format(r["busy"] * 100, r["step_ms"], r["step_tokens"]) if "busy" in r else "| | | "
            f.write("| {system} | {clients} | {tok_s:.1f} | {ttft50:.3f} | {ttft99:.3f} | {:.2f} | {:.2f} | {requests} | {errors} ".format(
                r["itl50"] * 1e3, r["itl99"] * 1e3, **r) + eng + "|\n")
    print("wrote", out)


if __name__ == "__main__":
    main()

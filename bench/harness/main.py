"""main.py — Loom's benchmark harness: limits, models, references, every system, the report.

Called by bench/run (which makes the venv and builds bench-limits). Steps:
  1. machine limits: bench-limits under the same taskset as the systems (1 and 2 threads);
  2. models: models/gen_models.py into bench/out/models (skipped when present);
  3. references: the float64 NumPy implementation of each model (reference.py) on every case;
  4. per (workload, threads) every system in its own worker process (worker.py --serve), pinned with
     taskset to the first T cores, with T as the system's thread setting; compiled one after the other,
     then driven case by case in alternation (A, B, A, B, ...: harness/interleave.py's rule) so that the
     systems are compared on the same machine at the same time; B5's cold stream runs one worker at a
     time; a worker that fails or times out is reported;
  5. bench/results/<date>[-quick].{csv,md} and PNG plots.
"""
import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import reference  # noqa: E402
import sweep  # noqa: E402
import systems  # noqa: E402
import workloads  # noqa: E402

TOL = 2e-3  # max |y - ref| / max |ref|; float32 systems vs the float64 reference


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def thread_env(t):
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), TVM_NUM_THREADS=str(t),
        # XLA CPU: one intra-op thread pool of T threads; Eigen's own multi-threading off at T = 1.
        XLA_FLAGS=f"--xla_cpu_multi_thread_eigen={'false' if t == 1 else 'true'} intra_op_parallelism_threads={t}",
        JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3",
        TORCHINDUCTOR_COMPILE_THREADS="1", PYTHONHASHSEED="0",
        LOOM_NUM_THREADS=str(t), LOOM_COMPILE_THREADS=str(t),  # Loom: kernels and its parallel JIT on the T cores
    )
    return env


def fresh_caches(env, tag):
    """Cold means cold: inductor's and Triton's on-disk caches go to a new directory per worker, so
    no system reuses what an earlier run compiled (JAX's persistent cache is off by default)."""
    d = os.path.join(ROOT, "bench", "out", "work", "cache-" + tag + "-" + str(os.getpid()) + "-" + str(time.time_ns()))
    env.update(TORCHINDUCTOR_CACHE_DIR=os.path.join(d, "inductor"), TRITON_CACHE_DIR=os.path.join(d, "triton"))
    return env


def cores(t):
    return ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:t])


def measure_limits(max_t, quick, outdir):
    exe = os.path.join(ROOT, "zig-out", "bin", "bench-limits")
    cmd = ["taskset", "-c", cores(max_t), exe, "--threads", str(max_t)] + (["--quick"] if quick else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"bench-limits failed: {r.stderr}")
    lim = json.loads(r.stdout)
    json.dump(lim, open(os.path.join(outdir, "limits.json"), "w"))
    return lim


def loom_build_id():
    """Loom's columns are only as old as the server binary that measured them."""
    exe = os.path.join(ROOT, "zig-out", "bin", "bench-loom-serve")
    try:
        with open(exe, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return "missing"


def job_key(job, timeout):
    """What makes two workers' results interchangeable: system, threads, workload, cases and limits,
    and for Loom's columns the build that ran them."""
    keep = {k: job[k] for k in ("system", "threads", "workload", "mode", "cases", "repeats", "budget_s", "cap_s",
                                "stream_budget_s")}
    keep["timeout"] = timeout
    if job["system"].startswith("loom"):
        keep["loom_build"] = loom_build_id()
    return json.dumps(keep, sort_keys=True)


def reusable(rpath, key):
    """--resume: the finished result of a worker with the same job key, or None."""
    try:
        res = json.load(open(rpath))
    except (OSError, ValueError):
        return None
    return res if res.get("job_key") == key and res.get("status") != "running" else None


def run_worker(job, outdir, timeout, resume):
    tag = f"{job['workload']}-{job['system']}-t{job['threads']}"
    jpath, rpath = os.path.join(outdir, tag + ".job.json"), os.path.join(outdir, tag + ".result.json")
    key = job_key(job, timeout)
    if resume:
        res = reusable(rpath, key)
        if res is not None:
            res["reused"] = True
            return res
    if os.path.exists(rpath):
        os.remove(rpath)
    job["spawn_time"] = time.time()
    json.dump(job, open(jpath, "w"))
    cmd = ["taskset", "-c", cores(job["threads"]), sys.executable, os.path.join(HERE, "worker.py"), jpath, rpath]
    logf = open(os.path.join(outdir, tag + ".log"), "w")
    try:
        env = thread_env(job["threads"])
        fresh_caches(env, tag)
        p = subprocess.run(cmd, env=env, stdout=logf, stderr=subprocess.STDOUT, timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    res = json.load(open(rpath)) if os.path.exists(rpath) else {"status": "error", "cases": []}
    if rc == "timeout":
        res["status"], res["error"] = "error", f"timed out after {timeout} s (partial results kept)"
    elif rc != 0 and res.get("status") in ("running", None):
        tail = open(os.path.join(outdir, tag + ".log")).read().strip().splitlines()[-1:] or ["?"]
        res["status"], res["error"] = "error", f"worker exited with {rc}: {tail[0][:300]}"
    res.update(system=job["system"], threads=job["threads"], workload=job["workload"], job_key=key,
               finished=time.strftime("%Y-%m-%d %H:%M:%S"))
    json.dump(res, open(rpath, "w"))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--systems", default=",".join(c.name for c in systems.ALL))
    ap.add_argument("--threads", default=None, help="comma list (default 1,2; --quick: see workloads.QUICK_THREADS)")
    ap.add_argument("--workloads", default="B1,B2,B3,B4,B5")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--tag", default=None, help="results file name (default: date, plus -quick)")
    ap.add_argument("--budget", type=float, default=None, help="per worker s (default quick 60, full 900)")
    ap.add_argument("--cap", type=float, default=None, help="per first call s (default quick 3, full 60)")
    ap.add_argument("--timeout", type=float, default=None, help="per worker s (default quick 240, full 3600)")
    ap.add_argument("--stream-budget", type=float, default=None, help="B5 s (default quick 90, full 1800)")
    ap.add_argument("--resume", action="store_true",
                    help="reuse the finished result of every worker whose job (system, threads, cases, limits) is unchanged")
    ap.add_argument("--noise", default=None, help="the report's sentence on how quiet the machine was")
    args = ap.parse_args()

    quick = args.quick
    threads = [int(t) for t in (args.threads or "1,2").split(",")]
    names = args.systems.split(",")
    wls = args.workloads.split(",")
    repeats = args.repeats or (5 if quick else 10)
    # per worker: no new case or repeat round starts after this many s
    budget = args.budget if args.budget is not None else (60 if quick else 900)
    # per call: a case slower than this skips the larger cases of that system
    cap = args.cap if args.cap is not None else (3 if quick else 60)
    timeout = args.timeout if args.timeout is not None else (240 if quick else 3600)
    # B5: requests after this many s (from process start) are not sent
    stream_budget = args.stream_budget if args.stream_budget is not None else (90 if quick else 1800)
    settings = dict(repeats=repeats, budget_s=budget, cap_s=cap, timeout_s=timeout, stream_budget_s=stream_budget,
                    noise=args.noise)

    out = os.path.join(ROOT, "bench", "out")
    wdir = os.path.join(out, "work")
    os.makedirs(wdir, exist_ok=True)
    resdir = os.path.join(ROOT, "bench", "results")
    os.makedirs(resdir, exist_ok=True)
    tag = args.tag or (datetime.datetime.utcnow().strftime("%Y-%m-%d") + ("-quick" if quick else ""))

    log("machine limits (bench-limits)")
    lim = measure_limits(max(threads), quick, out)
    log("  ", json.dumps(lim))

    models_dir = os.path.join(out, "models")
    need = {"mlp", "gpt2_block", "gpt2_prefill", "gpt2_decode", "bert_encoder"}
    if not all(os.path.exists(os.path.join(models_dir, m + ".onnx")) for m in need):
        log("generating models")
        subprocess.run([sys.executable, os.path.join(ROOT, "models", "gen_models.py"), models_dir], check=True)

    cases = workloads.QUICK if quick else workloads.full_cases()
    stream = workloads.stream(workloads.QUICK_B5_REQUESTS if quick else workloads.B5_REQUESTS)

    log("references (float64 NumPy, harness/modeldefs.py)")
    ref_dir = os.path.join(out, "ref")
    ref_names = {}
    for wl in wls:
        shapes = stream if wl == "B5" else cases.get(wl, [])
        for shape in shapes:
            ref_names[workloads.case_id(wl, shape)] = reference.ensure(wl, shape, models_dir, ref_dir)

    results = []
    for wl in wls:
        shapes = stream if wl == "B5" else cases.get(wl, [])
        if not shapes:
            continue
        paths = [os.path.join(models_dir, workloads.model_of(wl, s) + ".onnx") for s in shapes]
        wl_threads = workloads.QUICK_THREADS[wl] if quick and not args.threads else threads
        for t in wl_threads:
            jobs = []
            for name in names:
                if quick and name in workloads.QUICK_EXCLUDE.get(wl, ()):
                    results.append(dict(system=name, threads=t, workload=wl, status="n/a", cases=[],
                                        error="left out of --quick (to stay under 15 minutes); run bench/run"))
                    continue
                jobs.append(dict(system=name, threads=t, workload=wl, mode="stream" if wl == "B5" else "sweep",
                                 cases=shapes, model_paths=paths, repeats=repeats, budget_s=budget, cap_s=cap,
                                 stream_budget_s=stream_budget, ref_dir=ref_dir, ref_names=ref_names, workdir=wdir))
            if wl == "B5":  # a cold stream: one system at a time, from process start
                for job in jobs:
                    t0 = time.time()
                    res = run_worker(job, out, timeout, args.resume)
                    how = "reused (" + res.get("finished", "?") + ")" if res.get("reused") else f"{time.time() - t0:6.1f} s"
                    log(f"{wl} {job['system']:13s} t={t}: {res['status']:5s} {how}  {(res.get('error') or '')[:150]}")
                    results.append(res)
            else:
                results += sweep.run(jobs, out, timeout, args.resume,
                                     dict(job_key=job_key, reusable=reusable, thread_env=thread_env,
                                          fresh_caches=fresh_caches, cores=cores, log=log))
            json.dump(results, open(os.path.join(out, "results.json"), "w"))

    # Limits again at the end: on a shared machine one measurement can land in a busy moment and
    # make every percentage too high; the best of the two is closer to what the hardware does.
    log("machine limits again (bench-limits), best of start and end kept")
    lim_end = measure_limits(max(threads), quick, out)
    lim = dict(lim, fma_gflops=[max(a, b) for a, b in zip(lim["fma_gflops"], lim_end["fma_gflops"])],
               triad_gbs=[max(a, b) for a, b in zip(lim["triad_gbs"], lim_end["triad_gbs"])],
               measured=[dict(lim), lim_end])
    json.dump(lim, open(os.path.join(out, "limits.json"), "w"))

    import report

    report.write(results, lim, resdir, tag, quick, TOL, host_info(), settings)
    log(f"wrote bench/results/{tag}.csv, {tag}.md and plots")


def host_info():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()
    return {"cpu": cpu, "cores_visible": len(os.sched_getaffinity(0)), "python": platform.python_version(),
            "loadavg": f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", "versions": peer_versions()}


def peer_versions():
    from importlib import metadata

    v = {}
    for p in ["numpy", "onnx", "onnxruntime", "apache-tvm", "iree-base-compiler", "iree-base-runtime", "jax", "jaxlib", "torch"]:
        try:
            v[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            v[p] = "not installed"
    return v


if __name__ == "__main__":
    main()

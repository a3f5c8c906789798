"""worker.py — runs ONE system on ONE workload in its own process (started by main.py under taskset).

    python worker.py --serve JOB.json      sweeps (B1-B4): a server that main.py drives
    python worker.py JOB.json RESULT.json  stream mode (B5)

Serve mode: main.py starts one such worker per system and drives them in turn, case by case (A, B,
A, B, ...: harness/interleave.py's rule), so that every system sees the same machine. One JSON
request per line on stdin, one JSON answer per line on the original stdout (library output goes to
stderr, the worker's log):
    {"op": "prepare"}         -> {"ok": true, "compile_s": S}  (compile / session / weight prepacking of
                                  every model file of the job; B3 has two)
    {"op": "warm", "i": K}    -> {"ok": true, "first_s": S, "err": E, "jitted": J, "compiles": N}
                                  case K's first call, its output checked against the reference
    {"op": "time", "i": K}    -> {"ok": true, "t": S}  one timed call of case K
    {"op": "quit"}
    any failure               -> {"ok": false, "na": NOT_AVAILABLE, "error": "...", "traceback": "..."}

Stream mode (B5): measured cold from the moment main.py started this process: imports, prepare,
then every request once, in order. Outputs are checked after the clock stops. The result file is
rewritten after every step, so a worker killed by its timeout still leaves what it had measured.
"""
import json
import os
import sys
import time
import traceback

T_START = time.time()

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402


def rel_err(y, ref):
    y = np.asarray(y, dtype=np.float64)
    if y.shape != ref.shape:
        return float("inf")
    if not np.all(np.isfinite(y)):
        return float("inf")
    return float(np.max(np.abs(y - ref)) / (np.max(np.abs(ref)) + 1e-12))


def main():
    job = json.load(open(sys.argv[1]))
    out_path = sys.argv[2]
    res = {k: job[k] for k in ("system", "threads", "workload", "mode")}
    res.update(status="running", error=None, cases=[])

    def save():
        with open(out_path + ".tmp", "w") as f:
            json.dump(res, f)
        os.replace(out_path + ".tmp", out_path)

    try:
        import systems

        cls = systems.BY_NAME[job["system"]]
        res["description"] = cls.description
        sysobj = cls(job["threads"], job["workdir"])
        t_import_done = time.time()
        shapes = job["cases"]
        wl = job["workload"]

        if job["mode"] == "stream":
            t0 = time.time()
            sysobj.prepare(job["model_paths"][0], wl)
            res["compile_s"] = time.time() - t0
            outs, lat = [], []
            first_result = None
            for shape in shapes:
                if time.time() - job["spawn_time"] > job["stream_budget_s"]:
                    res["error"] = f"stream stopped after {len(lat)} of {len(shapes)} requests: {job['stream_budget_s']} s budget"
                    break
                I = workloads.inputs(wl, shape)
                a = time.time()
                y = sysobj.run(I)
                b = time.time()
                if first_result is None:
                    first_result = b - job["spawn_time"]
                lat.append(b - a)
                outs.append(y)
            total = time.time() - job["spawn_time"]
            if not lat:
                raise RuntimeError(res.get("error") or "no request completed")
            errs = []
            for shape, y in zip(shapes, outs):
                ref = np.load(os.path.join(job["ref_dir"], job["ref_names"][workloads.case_id(wl, shape)]))
                errs.append(rel_err(y, ref))
            shapes = shapes[: len(lat)]
            res["stream"] = {
                "requests": len(shapes),
                "complete": len(shapes) == len(job["cases"]),
                "total_s": total,
                "startup_s": t_import_done - job["spawn_time"],
                "first_result_s": first_result,
                "p50_s": float(np.percentile(lat, 50)),
                "p99_s": float(np.percentile(lat, 99)),
                "sum_latency_s": float(np.sum(lat)),
                "compilations": sysobj.compilations(),
                "max_err": float(np.max(errs)),
            }
            res["status"] = "ok"
            save()
            return

        raise RuntimeError("sweeps run in serve mode (worker.py --serve JOB.json), driven by main.py")
    except Exception as ex:  # a peer that fails is reported with its error; the run goes on
        na = type(ex).__name__ == "NotAvailable"
        res["status"] = "n/a" if na else "error"
        res["error"] = str(ex).strip().splitlines()[0][:400] if str(ex).strip() else type(ex).__name__
        if not na:
            res["traceback"] = traceback.format_exc()[-2000:]
    save()


def failure(ex):
    na = type(ex).__name__ == "NotAvailable"
    msg = str(ex).strip().splitlines()[0][:400] if str(ex).strip() else type(ex).__name__
    return {"ok": False, "na": na, "error": msg, "traceback": None if na else traceback.format_exc()[-2000:]}


def serve():
    job = json.load(open(sys.argv[2]))
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the systems print goes to the log, not into the protocol
    sys.stdout = sys.stderr
    wl, shapes, paths = job["workload"], job["cases"], job["model_paths"]
    prepared, inputs = {}, {}
    for line in sys.stdin:
        req = json.loads(line)
        op = req["op"]
        if op == "quit":
            break
        try:
            if op == "prepare":
                import systems

                cls = systems.BY_NAME[job["system"]]
                compile_s = 0.0
                for p in dict.fromkeys(paths):  # B3 has two model files, each prepared once
                    inst = cls(job["threads"], job["workdir"])
                    t = time.time()
                    inst.prepare(p, wl)
                    compile_s += time.time() - t
                    prepared[p] = inst
                ans = {"ok": True, "compile_s": compile_s, "description": cls.description}
            else:
                k = req["i"]
                inst = prepared[paths[k]]
                if k not in inputs:
                    inputs[k] = workloads.inputs(wl, shapes[k])
                before = inst.compilations()
                a = time.time()
                y = inst.run(inputs[k])
                dt = time.time() - a
                if op == "warm":
                    cid = workloads.case_id(wl, shapes[k])
                    ref = np.load(os.path.join(job["ref_dir"], job["ref_names"][cid]))
                    ans = {"ok": True, "first_s": dt, "err": rel_err(y, ref), "jitted": inst.compilations() > before,
                           "compiles": sum(x.compilations() for x in prepared.values())}
                else:
                    ans = {"ok": True, "t": dt}
        except Exception as ex:  # a peer that fails is reported with its error; the run goes on
            ans = failure(ex)
        proto.write(json.dumps(ans) + "\n")


if __name__ == "__main__":
    serve() if sys.argv[1] == "--serve" else main()

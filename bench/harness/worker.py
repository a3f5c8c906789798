"""worker.py — runs ONE system on ONE workload in its own process (started by main.py under taskset).

    python worker.py JOB.json RESULT.json

Sweep mode: prepare (timed: compile / session creation / weight prepacking), then a warm-up call per
case (timed separately as `first_s`; for JIT systems it includes that shape's compilation) whose
output is checked against the reference, then `repeats` rounds over all cases, interleaved
(case A, B, C, A, B, C, ...), each call timed on its own. A time budget stops the rounds early.

Stream mode (B5): measured cold from the moment main.py started this process: imports, prepare,
then every request once, in order. Outputs are checked after the clock stops.

The result file is rewritten after every step, so a worker killed by its timeout still leaves what it
had measured.
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

        t0 = time.time()
        paths = job["model_paths"]
        prepared = {}
        res["compile_s"] = 0.0
        for p in dict.fromkeys(paths):  # B3 has two model files, each prepared once
            inst = cls(job["threads"], job["workdir"]) if prepared else sysobj
            t = time.time()
            inst.prepare(p, wl)
            res["compile_s"] += time.time() - t
            prepared[p] = inst
        save()
        deadline = time.time() + job["budget_s"]  # warm-up pass: no new case starts after this
        entries = []
        slow_flops = None  # a case slower than cap_s: larger cases of this system are skipped
        for shape, path in zip(shapes, paths):
            inst = prepared[path]
            cid = workloads.case_id(wl, shape)
            flops = workloads.work(wl, shape)[0]
            why = None
            if time.time() > deadline:
                why = f"skipped: worker time budget ({job['budget_s']} s) spent"
            elif slow_flops is not None and flops >= slow_flops:
                why = f"skipped: a smaller case took over {job['cap_s']} s"
            if why:
                res["cases"].append({"case": cid, "shape": shape, "first_s": None, "err": 0.0, "times": [],
                                     "compiles_after": sum(x.compilations() for x in prepared.values()), "skipped": why})
                save()
                continue
            I = workloads.inputs(wl, shape)
            before = inst.compilations()
            a = time.time()
            y = inst.run(I)
            first = time.time() - a
            jitted = inst.compilations() > before  # this call compiled: its time is not the run time
            if jitted:
                deadline += first  # JIT compilation does not eat the measuring budget
            ref = np.load(os.path.join(job["ref_dir"], job["ref_names"][cid]))
            e = {"case": cid, "shape": shape, "first_s": first, "err": rel_err(y, ref), "times": [],
                 "compiles_after": sum(x.compilations() for x in prepared.values())}
            if first > job["cap_s"] and not jitted:  # slow to run, not slow to JIT-compile
                slow_flops = flops if slow_flops is None else min(slow_flops, flops)
            entries.append((e, inst, I))
            res["cases"].append(e)
            save()
        # The rounds get their own budget, counted from the end of the warm-up pass (a JIT system compiles
        # there); one round always runs so that every checked case has a steady-state time.
        deadline = time.time() + job["budget_s"]
        for r in range(job["repeats"]):
            if r > 0 and time.time() > deadline:
                res["budget_hit"] = True
                break
            for e, inst, I in entries:
                a = time.time()
                inst.run(I)
                e["times"].append(time.time() - a)
            save()
        res["compilations"] = sum(x.compilations() for x in prepared.values())
        res["status"] = "ok"
    except Exception as ex:  # a peer that fails is reported with its error; the run goes on
        na = type(ex).__name__ == "NotAvailable"
        res["status"] = "n/a" if na else "error"
        res["error"] = str(ex).strip().splitlines()[0][:400] if str(ex).strip() else type(ex).__name__
        if not na:
            res["traceback"] = traceback.format_exc()[-2000:]
    save()


if __name__ == "__main__":
    main()

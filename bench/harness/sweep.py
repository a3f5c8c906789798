"""sweep.py — bench/run's sweeps (B1-B4): every system of one (workload, threads) driven in alternation.

Each system runs in its own serving worker (worker.py --serve) under `taskset` on the first T cores,
with its own environment, so peers never share a process. The workers are started and prepared one
after the other (compile times are not measured concurrently), then driven from here:

  warm-up   case by case, every system in turn: the first call of each case, checked against the
            reference (`first_s`; for JIT systems it holds that shape's compilation);
  rounds    `repeats` rounds; in each, case by case, one timed call of every system in turn
            (A, B, A, B, ...: the rule of harness/interleave.py), so that a burst of machine noise lands
            on every system and every case instead of on one worker that ran at another time.

The per-system limits of bench/README.md keep their meaning, counted on the system's own time (the
time of its requests, not the wall time spent waiting for the others): the warm-up budget stops new
warm-up cases, a second budget stops its rounds after the first, a first call over the cap skips its
larger cases, and a worker past the timeout is killed (its partial results are kept). Each system's
result is the same record worker.py used to write, so report.py and --resume work unchanged.
"""
import json
import os
import select
import subprocess
import sys
import time

import interleave
import workloads

HERE = os.path.dirname(os.path.abspath(__file__))


class Server:
    """One serving worker: JSON requests on its stdin, answers on its stdout, log to a file."""

    def __init__(self, job, outdir, env, cores, tag):
        self.job, self.spent, self.dead = job, 0.0, None
        jpath = os.path.join(outdir, tag + ".job.json")
        json.dump(job, open(jpath, "w"))
        self.log = open(os.path.join(outdir, tag + ".log"), "w")
        cmd = ["taskset", "-c", cores, sys.executable, os.path.join(HERE, "worker.py"), "--serve", jpath]
        self.proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True, bufsize=1)

    def request(self, req, timeout):
        """The answer, or a failure record; the worker's own time is added to `spent`."""
        if self.dead:
            return {"ok": False, "error": self.dead}
        a = time.time()
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], max(timeout, 0.1))
            line = self.proc.stdout.readline() if ready else None
        except OSError as ex:
            line, self.dead = None, f"worker pipe failed: {ex}"
        self.spent += time.time() - a
        if line:
            return json.loads(line)
        if not self.dead:
            if not ready:
                self.dead = f"timed out after {self.job['timeout_s']:.0f} s (partial results kept)"
            else:
                self.dead = f"worker exited with {self.proc.poll()}: {self._log_tail()}"
        self.kill()
        return {"ok": False, "error": self.dead}

    def _log_tail(self):
        self.log.flush()
        try:
            lines = open(self.log.name).read().strip().splitlines()
        except OSError:
            lines = []
        return (lines[-1] if lines else "?")[:300]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self.log.close()


def run(jobs, outdir, timeout, resume, h):
    """Results (worker.py's record per system) of the jobs of one (workload, threads). `h`: main.py's
    helpers job_key, reusable, thread_env, fresh_caches, cores and log."""
    job_key, reusable, thread_env, fresh_caches, cores, log = (h[k] for k in ("job_key", "reusable", "thread_env",
                                                                             "fresh_caches", "cores", "log"))
    results, live = [], []
    for job in jobs:
        tag = f"{job['workload']}-{job['system']}-t{job['threads']}"
        rpath = os.path.join(outdir, tag + ".result.json")
        key = job_key(job, timeout)
        if resume:
            res = reusable(rpath, key)
            if res is not None:
                res["reused"] = True
                log(f"{job['workload']} {job['system']:13s} t={job['threads']}: {res['status']:5s} reused ({res.get('finished', '?')})")
                results.append(res)
                continue
        if os.path.exists(rpath):
            os.remove(rpath)
        job = dict(job, timeout_s=timeout)
        env = fresh_caches(thread_env(job["threads"]), tag)
        srv = Server(job, outdir, env, cores(job["threads"]), tag)
        res = {k: job[k] for k in ("system", "threads", "workload", "mode")}
        res.update(status="running", error=None, cases=[], job_key=key)
        t0 = time.time()
        ans = srv.request({"op": "prepare"}, timeout)
        if ans.get("ok"):
            res.update(compile_s=ans["compile_s"], description=ans.get("description"))
            live.append((srv, res, rpath))
        else:
            res.update(status="n/a" if ans.get("na") else "error", error=ans["error"], traceback=ans.get("traceback"))
            srv.quit()
            finish(res, rpath)
            results.append(res)
        log(f"{job['workload']} {job['system']:13s} t={job['threads']}: prepared in {time.time() - t0:6.1f} s "
            f"{'' if ans.get('ok') else ans['error'][:150]}")
    if live:
        drive(live, timeout)
    for srv, res, rpath in live:
        srv.quit()
        if srv.dead and res["status"] == "running":
            res.update(status="error", error=srv.dead)
        elif res["status"] == "running":
            res["status"] = "ok"
        finish(res, rpath)
        log(f"{res['workload']} {res['system']:13s} t={res['threads']}: {res['status']:5s} {srv.spent:6.1f} s of its own "
            f"{(res.get('error') or '')[:150]}")
        results.append(res)
    return results


def finish(res, rpath):
    res["finished"] = time.strftime("%Y-%m-%d %H:%M:%S")
    json.dump(res, open(rpath, "w"))


def drive(live, timeout):
    """Warm-up, then the rounds, every system in turn case by case."""
    job = live[0][0].job
    wl, shapes = job["workload"], job["cases"]
    state = {id(srv): {"warm_spent": 0.0, "slow_flops": None, "entries": {}} for srv, _, _ in live}
    for k, shape in enumerate(shapes):
        cid = workloads.case_id(wl, shape)
        flops = workloads.work(wl, shape)[0]
        for srv, res, rpath in live:
            st = state[id(srv)]
            why = None
            if srv.dead:
                continue
            if st["warm_spent"] > job["budget_s"]:
                why = f"skipped: worker time budget ({job['budget_s']} s) spent"
            elif st["slow_flops"] is not None and flops >= st["slow_flops"]:
                why = f"skipped: a smaller case took over {job['cap_s']} s"
            if why:
                res["cases"].append({"case": cid, "shape": shape, "first_s": None, "err": 0.0, "times": [],
                                     "compiles_after": res["cases"][-1]["compiles_after"] if res["cases"] else 1,
                                     "skipped": why})
                continue
            a = srv.spent
            ans = srv.request({"op": "warm", "i": k}, timeout - srv.spent)
            if not ans.get("ok"):
                if not srv.dead:
                    res.update(status="n/a" if ans.get("na") else "error", error=ans["error"], traceback=ans.get("traceback"))
                    srv.dead = ans["error"]
                continue
            # JIT compilation does not eat the measuring budget
            st["warm_spent"] += 0.0 if ans["jitted"] else srv.spent - a
            e = {"case": cid, "shape": shape, "first_s": ans["first_s"], "err": ans["err"], "times": [],
                 "compiles_after": ans["compiles"]}
            if ans["first_s"] > job["cap_s"] and not ans["jitted"]:  # slow to run, not slow to JIT-compile
                st["slow_flops"] = flops if st["slow_flops"] is None else min(st["slow_flops"], flops)
            st["entries"][k] = e
            res["cases"].append(e)
            json.dump(res, open(rpath, "w"))
    # rounds: the budget is counted from the end of the warm-up, on each system's own time
    start = {id(srv): srv.spent for srv, _, _ in live}
    for r in range(job["repeats"]):
        for k in range(len(shapes)):
            for srv, res, rpath in live:
                st = state[id(srv)]
                if srv.dead or k not in st["entries"]:
                    continue
                if r > 0 and srv.spent - start[id(srv)] > job["budget_s"]:
                    res["budget_hit"] = True
                    continue
                # every worker's threads quiet first: a pool still spinning after its own call (ORT's
                # for ~60 ms) would run through this one; at T > 1 one untimed call first wakes this
                # system's own pool, as in a stream of calls (harness/interleave.py, quiesce / burst)
                interleave.quiesce([w.proc.pid for w, _, _ in live])
                if job["threads"] > 1:
                    srv.request({"op": "time", "i": k}, timeout - srv.spent)
                ans = srv.request({"op": "time", "i": k}, timeout - srv.spent)
                if not ans.get("ok"):
                    if not srv.dead:
                        res.update(status="error", error=ans["error"], traceback=ans.get("traceback"))
                        srv.dead = ans["error"]
                    continue
                st["entries"][k]["times"].append(ans["t"])
        for srv, res, rpath in live:
            json.dump(res, open(rpath, "w"))
    for srv, res, _ in live:
        res["compilations"] = max((e["compiles_after"] for e in res["cases"]), default=0)

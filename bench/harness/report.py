"""report.py — turns the workers' results into bench/results/<tag>.csv, <tag>.md and PNG plots.

Every timed figure is also given as a share of the machine's measured limits (bench-limits, same run,
same cores): GFLOP/s as % of the FP32 FMA peak on T threads, and weight-streaming GB/s as % of the
triad bandwidth on T threads. `roofline %` is the better-bound one: max(flops/peak, bytes/bw) / time.
A system whose output differs from the reference by more than TOL is reported as wrong, not timed.
"""
import csv
import datetime
import math
import os

import numpy as np

import workloads

ORDER = ["loom", "loom-offload", "ort", "tvm", "iree", "iree-nodt", "jax-jit", "jax-pow2", "torch-eager", "torch-compile"]


def _rows(results, lim, tol):
    rows = []
    for r in results:
        t = r["threads"]
        ti = lim["threads"].index(t) if t in lim["threads"] else -1
        peak, bw = lim["fma_gflops"][ti], lim["triad_gbs"][ti]
        base = dict(workload=r["workload"], system=r["system"], threads=t, compile_s=r.get("compile_s"),
                    measured_at=r.get("finished", ""))
        if r["workload"] == "B5":
            s = r.get("stream")
            row = dict(base, case="stream", status=r["status"], error=r.get("error") or "")
            if s and s["requests"] == 0:
                row.update(status="error")
            elif s:
                ok = s["max_err"] <= tol
                row.update(status="ok" if ok else "wrong", err=s["max_err"], total_s=s["total_s"],
                           first_result_s=s["first_result_s"], p50_s=s["p50_s"], p99_s=s["p99_s"],
                           compilations=s["compilations"], startup_s=s["startup_s"], requests=s["requests"])
                if not ok:
                    row["error"] = f"output differs from reference: rel err {s['max_err']:.2e} > {tol:g}"
                elif not s.get("complete", True):
                    row["status"] = "partial"
            rows.append(row)
            continue
        if not r.get("cases"):
            rows.append(dict(base, case="*", status=r["status"], error=r.get("error") or ""))
            continue
        for c in r["cases"]:
            row = dict(base, case=c["case"], first_s=c["first_s"], err=c["err"], compilations=c["compiles_after"],
                       status="ok", error="", repeats=len(c["times"]))
            if c.get("skipped"):
                row.update(status="skipped", error=c["skipped"])
            elif c["err"] > tol:
                row.update(status="wrong", error=f"output differs from reference: rel err {c['err']:.2e} > {tol:g}")
            elif not c["times"]:
                row.update(status=r["status"] if r["status"] != "ok" else "error", error=r.get("error") or "no timed repeats")
            else:
                med, mn = float(np.median(c["times"])), float(np.min(c["times"]))
                flops, nbytes = workloads.work(r["workload"], c["shape"])
                row.update(median_s=med, min_s=mn, gflops=flops / med / 1e9, pct_peak=100 * flops / med / 1e9 / peak,
                           gbs=nbytes / med / 1e9, pct_triad=100 * nbytes / med / 1e9 / bw,
                           roofline_pct=100 * max(flops / 1e9 / peak, nbytes / 1e9 / bw) / med)
            rows.append(row)
    return rows


FIELDS = ["workload", "case", "system", "threads", "status", "compile_s", "first_s", "median_s", "min_s", "repeats",
          "compilations", "err", "gflops", "pct_peak", "gbs", "pct_triad", "roofline_pct", "total_s", "startup_s",
          "first_result_s", "p50_s", "p99_s", "requests", "measured_at", "error"]


def _fmt_ms(v):
    return "" if v is None else (f"{v * 1e3:.3g}" if v < 1 else f"{v * 1e3:.0f}")


def write(results, lim, resdir, tag, quick, tol, host, settings):
    rows = _rows(results, lim, tol)
    with open(os.path.join(resdir, tag + ".csv"), "w", newline="") as f:
        w = csv.DictWriter(f, FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    md = _markdown(rows, lim, tag, quick, tol, host, settings)
    open(os.path.join(resdir, tag + ".md"), "w").write(md)
    print(md)
    try:
        _plots(rows, resdir, tag)
    except Exception as ex:  # plots are a convenience; the tables are the result
        print("plots failed:", ex)


def _is_loom(s):
    return s.startswith("loom")


def _ratio(a, b):
    return f"{a / b:.2f}x" if a and b else ""


def _systems(rows):
    present = {r["system"] for r in rows}
    return [s for s in ORDER if s in present]


def _markdown(rows, lim, tag, quick, tol, host, settings):
    L = []
    L.append(f"# Loom benchmarks — {tag}{' (quick subset)' if quick else ''}\n")
    L.append(f"Run {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC on {host['cpu']}, {host['cores_visible']} cores visible, "
             f"load average at the end {host['loadavg']}. Python {host['python']}; "
             + ", ".join(f"{k} {v}" for k, v in host["versions"].items()) + ".\n")
    L.append("**Noise:** " + (settings.get("noise") or "this machine was shared with other engineers compiling and testing "
                                "during the run; treat differences under ~20 % as noise.")
             + f" Medians and minima are over {settings['repeats']} interleaved repeats.\n")
    L.append(f"**Limits of this run:** per worker a warm-up budget and a repeat budget of {settings['budget_s']:g} s each, "
             f"a first call over {settings['cap_s']:g} s skips that system's larger cases, a worker is killed after "
             f"{settings['timeout_s']:g} s (partial results kept), the B5 stream sends no request after "
             f"{settings['stream_budget_s']:g} s. The CSV's `measured_at` is when each worker finished (`--resume` reuses finished workers across invocations).\n")
    L.append("Machine limits (bench-limits, same cores): " + "; ".join(
        f"{t} thread{'s' if t > 1 else ''}: FP32 FMA peak {p:.0f} GFLOP/s, triad {b:.1f} GB/s"
        for t, p, b in zip(lim["threads"], lim["fma_gflops"], lim["triad_gbs"])) + f" ({lim['isa']})"
             + ("; best of a measurement at the start and one at the end of the run: "
                + " / ".join(f"{m['fma_gflops']} GFLOP/s, {m['triad_gbs']} GB/s" for m in lim["measured"])
                if "measured" in lim else "") + ".\n")
    L.append(f"Cells are median latency in ms (lower is better); `wrong` = output differs from the float64 reference by "
             f"more than {tol:g} (max abs error / max abs reference), not timed; `err` = the system failed (see Errors); "
             f"`n/a` = not available or left out of this run; `skip` = not run because the system was too slow on a smaller case or its time budget was spent. "
             f"`% roofline` = max(flops / FMA peak, weight bytes / triad bandwidth) / time; above 100 % means the weights came from cache (B2's 28 MB fit in this CPU's last-level cache). `loom` = Loom's generated kernels, `loom-offload` = the same with large matmuls handed to OpenBLAS; each compiles the ONNX file once with symbolic shapes and runs every shape on it. `loom ÷ best` = Loom's median over the best peer's (below 1 = Loom is faster).\n")
    systems = _systems(rows)
    for wl in ["B1", "B2", "B3", "B4"]:
        wr = [r for r in rows if r["workload"] == wl]
        if not wr:
            continue
        for t in sorted({r["threads"] for r in wr}):
            tr = [r for r in wr if r["threads"] == t]
            cases = list(dict.fromkeys(r["case"] for r in tr if r["case"] != "*"))
            L.append(f"\n## {wl} ({workloads.model_of(wl, {'phase': 'prefill'}) if wl != 'B3' else 'gpt2 prefill/decode'}), {t} thread{'s' if t > 1 else ''}\n")
            looms = [s for s in systems if _is_loom(s)]
            L.append("| case | " + " | ".join(systems) + " | best peer | best peer % roofline |"
                     + "".join(f" {s} ÷ best |" for s in looms))
            L.append("|---|" + "---|" * (len(systems) + 2 + len(looms)))
            for c in cases:
                cells, best, mine = [], None, {}
                for s in systems:
                    m = [r for r in tr if r["system"] == s and r["case"] in (c, "*")]
                    if not m:
                        cells.append("")
                        continue
                    r = m[0]
                    if r["status"] == "ok" and r.get("median_s"):
                        cells.append(_fmt_ms(r["median_s"]))
                        if _is_loom(s):
                            mine[s] = r["median_s"]
                        elif best is None or r["median_s"] < best["median_s"]:
                            best = r
                    else:
                        cells.append({"wrong": "wrong", "n/a": "n/a", "skipped": "skip"}.get(r["status"], "err"))
                bp = f"{best['system']}" if best else ""
                bpr = f"{best['roofline_pct']:.0f} %" if best else ""
                L.append(f"| {c.split(':', 1)[1]} | " + " | ".join(cells) + f" | {bp} | {bpr} |"
                         + "".join(f" {_ratio(mine.get(s), best and best['median_s'])} |" for s in looms))
            # summary: compile time, compilations, geometric mean over cases all systems completed
            L.append("\n| system | compile / session s | compilations | first-call max s | geomean ms (cases all ok) | median % peak | median % triad |")
            L.append("|---|---|---|---|---|---|---|")
            common = [c for c in cases if all(any(r["system"] == s and r["case"] == c and r["status"] == "ok" and r.get("median_s")
                                                  for r in tr) for s in systems if not _is_loom(s) and any(
                r["system"] == s and r["status"] == "ok" for r in tr))]
            for s in systems:
                sr = [r for r in tr if r["system"] == s]
                ok = [r for r in sr if r["status"] == "ok" and r.get("median_s")]
                cs = sr[0].get("compile_s") if sr else None
                comp = max((r.get("compilations") or 0) for r in sr) if sr else ""
                fmax = max((r.get("first_s") or 0) for r in sr) if sr else 0
                gm = [r["median_s"] for r in ok if r["case"] in common]
                g = _fmt_ms(math.exp(np.mean(np.log(gm)))) if gm and len(gm) == len(common) else "—"
                pk = f"{np.median([r['pct_peak'] for r in ok]):.1f}" if ok else "—"
                tb = f"{np.median([r['pct_triad'] for r in ok]):.1f}" if ok else "—"
                L.append(f"| {s} | {cs:.2f} | {comp} | {fmax:.2f} | {g} | {pk} | {tb} |" if cs is not None else
                         f"| {s} | — | {comp} | — | {g} | {pk} | {tb} |")
    L += _loom_vs_peers(rows, systems)
    b5 = [r for r in rows if r["workload"] == "B5"]
    if b5:
        n = next((r.get("requests") for r in b5 if r.get("requests")), "?")
        L.append(f"\n## B5 request stream (gpt2_block, {n} seeded requests, batch 1..8, seq log-uniform 1..512), cold\n")
        L.append("| system | threads | requests | total s | startup s | compile s | first result s | p50 ms | p99 ms | compilations | status |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in sorted(b5, key=lambda r: (r["threads"], ORDER.index(r["system"]) if r["system"] in ORDER else 99)):
            if r.get("total_s") is not None:
                L.append(f"| {r['system']} | {r['threads']} | {r['requests']} | {r['total_s']:.2f} | {r['startup_s']:.2f} | {r.get('compile_s') or 0:.2f} | "
                         f"{r['first_result_s']:.2f} | {_fmt_ms(r['p50_s'])} | {_fmt_ms(r['p99_s'])} | {r['compilations']} | {r['status']} |")
            else:
                L.append(f"| {r['system']} | {r['threads']} | 0 | | | | | | | | {r['status']} |")
    errs = {}
    for r in rows:
        if r["status"] != "ok" and r.get("error"):
            errs.setdefault((r["system"], r["error"]), []).append(f"{r['workload']} t{r['threads']}")
    if errs:
        L.append("\n## Errors and unavailable systems\n")
        for (s, e), where in sorted(errs.items()):
            L.append(f"- **{s}** ({', '.join(sorted(set(where)))}): {e}")
    L.append("")
    return "\n".join(L)


def _loom_vs_peers(rows, systems):
    """Geometric mean over the cases both completed of Loom's median / the peer's median, per workload
    and thread count (above 1: Loom is slower), with the number of cases it covers."""
    looms = [s for s in systems if _is_loom(s)]
    peers = [s for s in systems if not _is_loom(s)]
    ok = {(r["workload"], r["threads"], r["system"], r["case"]): r["median_s"] for r in rows
          if r["status"] == "ok" and r.get("median_s")}
    groups = sorted({(w, t) for (w, t, s, c) in ok if _is_loom(s)})
    if not groups:
        return []
    L = ["\n## Loom ÷ each peer (geometric mean of median ratios over the cases both ran; below 1 = Loom faster)\n",
         "| workload | threads | loom system | " + " | ".join(peers) + " |", "|---|---|---|" + "---|" * len(peers)]
    for w, t in groups:
        for ls in looms:
            cells = []
            for p in peers:
                rs = [ok[(w, t, ls, c)] / ok[(w, t, p, c)] for (w2, t2, s, c) in ok
                      if (w2, t2, s) == (w, t, ls) and (w, t, p, c) in ok]
                cells.append(f"{math.exp(np.mean(np.log(rs))):.2f} ({len(rs)})" if rs else "—")
            if any(c != "—" for c in cells):
                L.append(f"| {w} | {t} | {ls} | " + " | ".join(cells) + " |")
    return L


def _plots(rows, resdir, tag):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = _systems(rows)
    for wl in ["B1", "B2", "B3", "B4"]:
        wr = [r for r in rows if r["workload"] == wl and r["status"] == "ok" and r.get("median_s")]
        if not wr:
            continue
        ts = sorted({r["threads"] for r in wr})
        fig, axes = plt.subplots(1, len(ts), figsize=(6.5 * len(ts), 4.5), squeeze=False)
        for ax, t in zip(axes[0], ts):
            cases = list(dict.fromkeys(r["case"] for r in rows if r["workload"] == wl and r["case"] != "*"))
            for s in systems:
                pts = [(cases.index(r["case"]), r["median_s"] * 1e3) for r in wr if r["system"] == s and r["threads"] == t]
                if pts:
                    x, y = zip(*sorted(pts))
                    ax.plot(x, y, marker="o", ms=3, label=s)
            ax.set_yscale("log")
            ax.set_xticks(range(len(cases)))
            ax.set_xticklabels([c.split(":", 1)[1] for c in cases], rotation=90, fontsize=6)
            ax.set_ylabel("median latency, ms (log)")
            ax.set_title(f"{wl}, {t} thread{'s' if t > 1 else ''}")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(resdir, f"{tag}-{wl}.png"), dpi=110)
        plt.close(fig)
    b5 = [r for r in rows if r["workload"] == "B5" and r.get("total_s") is not None]
    if b5:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        labels = [f"{r['system']}\nt={r['threads']}" + (f"\n{r['requests']} req. only" if r["status"] == "partial" else "") for r in b5]
        startup = [r["startup_s"] for r in b5]
        comp = [r.get("compile_s") or 0 for r in b5]
        rest = [max(0.0, r["total_s"] - a - b) for r, a, b in zip(b5, startup, comp)]
        x = np.arange(len(b5))
        ax.bar(x, startup, label="process start + imports")
        ax.bar(x, comp, bottom=startup, label="compile / session")
        ax.bar(x, rest, bottom=np.add(startup, comp), label="requests (incl. JIT recompiles)")
        ax.set_xticks(x)
        ax.set_xticklabels(labels, fontsize=7)
        ax.set_ylabel("total wall time, s")
        ax.set_title("B5 request stream, cold")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(resdir, f"{tag}-B5.png"), dpi=110)
        plt.close(fig)

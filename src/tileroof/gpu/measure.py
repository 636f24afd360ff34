"""Measure the corpus on a GPU: compile, check against the torch reference, time, and (with --ncu)
read Nsight Compute counters.  Writes DIR/measure-<UTC stamp>.json after every phase (and every few
seconds while a worker runs), so a run stopped by a time limit still leaves its data.

    python -m tileroof.gpu.measure --out DIR (--all | --cases a,b | --sweep S | --match RE)
                                   [--ncu] [--jobs 16] [--time-budget SECONDS]

The GPU work runs in child processes (tileroof.gpu.worker); this parent never touches the GPU, so
a kernel that breaks its CUDA context costs one case: the parent starts a new worker for the rest.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from .ncu import dram_mb
from .provenance import base_provenance, query_smi, utc_now, utc_stamp
from .records import jsonable, read_jsonl, tail, write_json_atomic

SCHEMA = 1
SRC_DIR = Path(__file__).resolve().parents[2]   # .../src, put on the children's PYTHONPATH


def child_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(SRC_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("TQDM_DISABLE", "1")
    return env


def select_cases(all_cases: dict, a) -> list[str]:
    names = list(all_cases)
    if a.cases:
        wanted = [n.strip() for n in a.cases.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in all_cases]
        if unknown:
            raise SystemExit(f"unknown case(s): {', '.join(unknown)}")
        names = wanted
    elif not (a.all or a.sweep or a.match):
        raise SystemExit("choose cases: --all, --cases a,b, --sweep NAME or --match REGEX")
    if a.sweep:
        names = [n for n in names if getattr(all_cases[n], "sweep", None) in a.sweep]
    if a.match:
        names = [n for n in names if re.search(a.match, n)]
    return names


def empty_entry(case) -> dict:
    return {"params": jsonable(case.params), "sweep": case.sweep, "tags": list(case.tags),
            "rtol": case.rtol, "compile": None, "correct": None, "time": None, "ncu": None}


def merge(state: dict, recs: list[dict]) -> None:
    cases = state["cases"]
    for r in recs:
        t, name = r.get("type"), r.get("case")
        if t == "info":
            state["provenance"].update({k: v for k, v in r.items() if k != "type"})
        elif name not in cases:
            continue
        elif t == "compile":
            cases[name]["compile"] = {k: v for k, v in r.items() if k not in ("type", "case")}
        elif t == "result":
            e = cases[name]
            e["correct"] = r.get("correct")
            e["time"] = r.get("time")
            if r.get("error"):
                e["error"] = r["error"]
                e["traceback"] = r.get("traceback")
        elif t == "skipped":
            cases[name].setdefault("error", f"skipped: {r.get('reason')}")


def run_measure_workers(state, names, a, out_dir: Path, deadline, save) -> None:
    """Start measure workers until every case has a record (or restarts / time run out)."""
    env = child_env()
    pending = list(names)
    for attempt in range(a.max_restarts + 1):
        if not pending or (deadline is not None and time.time() > deadline):
            break
        res = out_dir / "logs" / f"measure-worker{attempt}.jsonl"
        log = out_dir / "logs" / f"measure-worker{attempt}.log"
        res.unlink(missing_ok=True)
        cmd = [sys.executable, "-m", "tileroof.gpu.measure", "--worker", "measure", "--cases", ",".join(pending),
               "--results", str(res), "--jobs", str(a.jobs), "--compile-mode", a.compile_mode,
               "--target-s", str(a.target_s)]
        cmd += ["--deadline", str(deadline)] if deadline is not None else []
        cmd += ["--no-graph"] if a.no_graph else []
        cmd += ["--time-all"] if a.time_all else []
        print(f"[measure] worker {attempt}: {len(pending)} case(s), log {log}", flush=True)
        with open(log, "w") as lf:
            proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT, env=env, start_new_session=True)
            last = time.time()
            stopped = False
            while proc.poll() is None:
                time.sleep(1.0)
                if time.time() - last > 15:
                    merge(state, read_jsonl(res))
                    save()
                    last = time.time()
                if deadline is not None and time.time() > deadline + a.grace:
                    print("[measure] time budget: stopping the worker", flush=True)
                    from .profiling import kill_group
                    kill_group(proc)
                    stopped = True
                    break
        rc = proc.returncode
        recs = read_jsonl(res)
        merge(state, recs)
        finished = {r["case"] for r in recs if r.get("type") in ("result", "skipped")}
        finished |= {r["case"] for r in recs if r.get("type") == "compile" and not r.get("ok")}
        started = [r["case"] for r in recs if r.get("type") == "start" and r["case"] not in finished]
        for name in started:   # the worker died (or was stopped) in this case
            if stopped:
                state["cases"][name]["error"] = "skipped: the time budget ran out while this case ran"
            else:
                state["cases"][name]["error"] = f"worker died (rc={rc}) while running this case: " + tail(log, 1200)
                state["cases"][name]["correct"] = {"ok": False, "rel_err": {}, "error": "worker died"}
            finished.add(name)
        state["phases"].setdefault("measure_workers", []).append(
            {"attempt": attempt, "rc": rc, "cases": len(pending), "finished": len(finished & set(pending))})
        save()
        progressed = bool(finished & set(pending))
        pending = [n for n in pending if n not in finished]
        if rc == 0 or not progressed:
            break
    for n in pending:
        e = state["cases"][n]
        if not (e["compile"] and not e["compile"].get("ok")):
            e.setdefault("error", "not measured: time budget or worker failure (see logs/)")


def print_table(state) -> None:
    rows = []
    for name, e in state["cases"].items():
        comp, cor, tim, prof = e.get("compile") or {}, e.get("correct") or {}, e.get("time") or {}, e.get("ncu") or {}
        err = str(e.get("error") or "")
        if not comp.get("ok"):
            status = "SKIP" if (not comp or "skipped" in str(comp.get("error"))) else "COMPILE"
        elif not e.get("correct"):
            status = "SKIP" if ("skipped" in err or "not measured" in err) else "ERROR"
        elif err and not cor.get("rel_err"):
            status = "ERROR"
        else:
            status = "ok" if cor.get("ok") else "WRONG"
        med = tim.get("median_s")
        mb = dram_mb(prof) if prof else None
        rel = max((v for v in (cor.get("rel_err") or {}).values() if v is not None), default=None)
        rows.append((name, status, f"{med * 1e6:.2f}" if med else "-", f"{mb:.1f}" if mb is not None else "-",
                     f"{rel:.1e}" if rel is not None else "-", tim.get("primary", "") or ""))
    w = max([len(r[0]) for r in rows] + [4])
    print(f"{'case':<{w}}  {'ok':<7} {'median_us':>10} {'DRAM_MB':>9} {'rel_err':>8}  timing")
    for r in rows:
        print(f"{r[0]:<{w}}  {r[1]:<7} {r[2]:>10} {r[3]:>9} {r[4]:>8}  {r[5]}")
    n_ok = sum(1 for r in rows if r[1] == "ok")
    print(f"{n_ok}/{len(rows)} cases correct")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tileroof.gpu.measure", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="output folder")
    p.add_argument("--cases", help="comma-separated case names")
    p.add_argument("--all", action="store_true", help="every case in tileroof.corpus.CASES")
    p.add_argument("--sweep", action="append", help="only cases of this sweep (repeatable)")
    p.add_argument("--match", help="only cases whose name matches this regex")
    p.add_argument("--list", action="store_true", help="print the selected case names and exit")
    p.add_argument("--ncu", action="store_true", help="second phase: Nsight Compute counters")
    p.add_argument("--ncu-path", help="ncu executable (default: PATH, then /usr/local/cuda/bin)")
    p.add_argument("--ncu-metrics", help="comma-separated metric list (default: tileroof.gpu.ncu.DEFAULT_METRICS)")
    p.add_argument("--ncu-chunk", type=int, default=30, help="most cases per ncu invocation (the first is smaller under --time-budget)")
    p.add_argument("--ncu-timeout", type=float, default=300.0, help="seconds per ncu invocation")
    p.add_argument("--jobs", type=int, default=16, help="parallel compiles")
    p.add_argument("--compile-mode", choices=("pool", "par"), default="pool",
                   help="pool: one thread pool over all cases (per-case time and error); "
                        "par: each kernel function's .par_compile(configs, ignore_error=True)")
    p.add_argument("--time-budget", type=float, help="seconds for the whole run; remaining work is skipped")
    p.add_argument("--target-s", type=float, default=0.25, help="seconds of timed runs per case")
    p.add_argument("--no-graph", action="store_true", help="no CUDA-graph timing for short kernels")
    p.add_argument("--time-all", action="store_true", help="time cases that failed the check too")
    p.add_argument("--max-restarts", type=int, default=4, help="new workers after a broken CUDA context")
    p.add_argument("--grace", type=float, default=30.0, help=argparse.SUPPRESS)
    # internal: the child processes
    p.add_argument("--worker", choices=("measure", "profile"), help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.worker:
        from .worker import run
        names = [n for n in (a.cases or "").split(",") if n]
        return run(a.worker, names, a.results, jobs=a.jobs, deadline=a.deadline, compile_mode=a.compile_mode,
                   graph=not a.no_graph, target_s=a.target_s, time_all=a.time_all)

    t0 = time.time()
    from tileroof.corpus import CASES
    names = select_cases(CASES, a)
    if a.list:
        print("\n".join(names))
        return 0
    if a.out is None:
        p.error("--out is required")
    out_dir = a.out
    (out_dir / "logs").mkdir(parents=True, exist_ok=True)
    path = out_dir / f"measure-{utc_stamp()}.json"
    budget_end = None if a.time_budget is None else t0 + a.time_budget
    ncu_reserve = min(max(0.35 * (a.time_budget or 0), 90.0), 300.0, 0.5 * (a.time_budget or 0)) if a.ncu else 0.0
    measure_deadline = None if budget_end is None else budget_end - ncu_reserve - 15.0

    state = {"schema": SCHEMA, "provenance": base_provenance("measure", touch_gpu=False),
             "settings": {"cases": len(names), "jobs": a.jobs, "compile_mode": a.compile_mode,
                          "time_budget_s": a.time_budget, "ncu": a.ncu, "graph_below_s": 20e-6,
                          "target_s_per_case": a.target_s},
             "phases": {}, "cases": {n: empty_entry(CASES[n]) for n in names}}

    def save():
        write_json_atomic(path, state)

    save()
    print(f"[measure] {len(names)} case(s) -> {path}", flush=True)
    t = time.time()
    run_measure_workers(state, names, a, out_dir, measure_deadline, save)
    state["phases"]["measure_s"] = time.time() - t
    save()

    if a.ncu:
        from .profiling import profile_cases
        passing = [n for n in names if (state["cases"][n].get("correct") or {}).get("ok")]
        print(f"[measure] ncu over {len(passing)} passing case(s)", flush=True)

        def on_update(res, phase):
            for n, m in res.items():
                state["cases"][n]["ncu"] = m
            state["phases"]["ncu"] = phase
            save()

        t = time.time()
        metrics = a.ncu_metrics.split(",") if a.ncu_metrics else None
        res, phase = profile_cases(passing, out_dir / "ncu", child_env(), ncu_path=a.ncu_path, metrics=metrics,
                                   chunk=a.ncu_chunk, jobs=a.jobs, timeout=a.ncu_timeout,
                                   deadline=None if budget_end is None else budget_end - 10, on_update=on_update)
        phase["seconds"] = time.time() - t
        on_update(res, phase)

    state["provenance"]["smi_after"] = query_smi()
    state["provenance"]["finished_utc"] = utc_now()
    state["provenance"]["wall_s"] = time.time() - t0
    save()
    print_table(state)
    print(f"[measure] wrote {path} ({time.time() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

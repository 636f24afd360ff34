"""The Nsight Compute phase of `measure`: check the metric list once, then run ncu over a child
("profile" worker) for each chunk of passing cases, read the report back as CSV, and return
per-case metrics.  A chunk that fails or times out costs its cases' counters, never the run."""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import ncu as N
from .records import read_jsonl, tail

TINY = ("import torch; x = torch.randn(1 << 20, device='cuda'); torch.cuda.synchronize(); "
        "print(float((x * 2).sum()))")


def find_ncu(explicit: str | None = None) -> str | None:
    if explicit:
        return explicit
    hit = shutil.which("ncu")
    if hit:
        return hit
    for pat in ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda-*/bin/ncu"):
        found = sorted(glob.glob(pat))
        if found:
            return found[-1]
    return None


def profiled_launches(jit_fn, cfgs: list, make_args, marker: str | None, time_runs: int = 0,
                      kernels: list | None = None) -> list:
    """The child side of profile_child: compile every config (TileLang par_compile), run each once
    inside a cudaProfilerStart/Stop region (event-timed `time_runs` times before, outside it, when
    asked), and print the configs that ran on one `marker` line (None: return them unprinted).
    `kernels`: compiled already, one per config (l2probe --streams compiles its kernels one by one:
    par_compile of its block_stream2 configs hung the child in runs 102-103, cause not isolated)."""
    import torch

    from .microbench import events
    if kernels is None:
        kernels = jit_fn.par_compile([c["params"] for c in cfgs], num_workers=16, ignore_error=True)
    done = []
    for c, k in zip(cfgs, kernels):
        if k is None:
            continue
        args = make_args(c["params"])
        if time_runs:
            c["stats"] = events(lambda: k(*args), time_runs)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        k(*args)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        done.append(c)
    if marker:
        print(marker + " " + json.dumps(done))
    return done


def profile_child(module: str, metrics, marker: str, timeout: float, ncu_path: str | None = None,
                  env: dict | None = None, kernels: str | None = "regex:main_kernel",
                  cache_control: str | None = None) -> dict:
    """Run `python -m module --child` under Nsight Compute (clocks left alone, profiling only the
    child's cudaProfilerStart/Stop regions, kernels matching `kernels` -- TileLang's main_kernel;
    None: every kernel) and read back what the child printed on its `marker` line (a JSON list, one
    entry per profiled launch) next to the per-launch metrics and kernel names.  `cache_control`
    "none" leaves the L2 as the program leaves it (ncu's default flushes it before each kernel).
    Used by the probes that study one mechanism (l2probe, l2merge, flushwb)."""
    ncu = find_ncu(ncu_path)
    if not ncu:
        raise SystemExit("ncu not found")
    cmd = [ncu, "--clock-control", "none", *(["--cache-control", cache_control] if cache_control else []),
           "--profile-from-start", "off", "--csv", "--page", "raw", "--print-units", "base",
           *(["-k", kernels] if kernels else []), "--metrics", ",".join(metrics),
           sys.executable, "-m", module, "--child"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env or os.environ.copy())
    lines = r.stdout.splitlines()
    found = [ln for ln in lines if ln.startswith(marker + " ")]
    configs = json.loads(found[-1][len(marker) + 1:]) if found else []
    rows = N.parse_ncu_csv("\n".join(ln for ln in lines if ln.startswith('"')))
    return {"command": cmd, "returncode": r.returncode, "stderr_tail": r.stderr[-3000:], "configs": configs,
            "metrics": [row["metrics"] for row in rows], "kernel_names": [row.get("kernel_name") for row in rows]}


def run_logged(cmd, log_path, timeout, env=None) -> tuple[int | None, str, bool]:
    """Run cmd in its own session with stdout+stderr to log_path; kill its process group on timeout.
    Returns (rc, log text tail, timed_out)."""
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_group(proc)
            rc, timed_out = proc.returncode, True
    return rc, tail(log_path, 200_000), timed_out


def kill_group(proc, grace: float = 5.0) -> None:
    """SIGTERM then SIGKILL the process group this harness started for proc (start_new_session)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def check_metrics(ncu, metrics, workdir: Path, env, budget_s: float = 90.0) -> dict:
    """Drop metrics this ncu/GPU does not know: filter the optional ones against --query-metrics,
    then profile one tiny torch kernel and drop whatever ncu reports missing (repeat until clean).
    Returns {"metrics": kept, "dropped": [...], "ok": bool, "error": str|None, "seconds": ...}."""
    t0 = time.time()
    metrics = list(metrics)
    dropped: list[str] = []
    metrics, gone = N.filter_by_device(ncu, metrics, env=env)
    dropped += gone
    error = None
    ok = False
    for i in range(8):
        if time.time() - t0 > budget_s:
            error = "metric check ran out of time"
            break
        cmd = [ncu, "--clock-control", "none", "--launch-count", "1", "--csv", "--page", "raw",
               "--print-units", "base", "--metrics", ",".join(metrics), sys.executable, "-c", TINY]
        rc, text, timed_out = run_logged(cmd, workdir / f"metric-check-{i}.log", 120, env)
        bad = N.missing_metrics(text, metrics)
        if bad:
            dropped += bad
            metrics = [m for m in metrics if m not in bad]
            continue
        rows = N.parse_ncu_csv(text)
        if rows:
            ok = True
            missing_cols = [m for m in metrics if m not in rows[0]["metrics"]]
            # asked for, no column: ncu could not collect it (only trusted when most names matched)
            if missing_cols and len(missing_cols) <= len(metrics) // 2:
                dropped += missing_cols
                metrics = [m for m in metrics if m not in missing_cols]
        else:
            error = f"ncu profiled nothing (rc={rc}{', timed out' if timed_out else ''}): " + text[-800:]
        break
    return {"metrics": metrics, "dropped": dropped, "ok": ok, "error": error, "seconds": time.time() - t0}


def run_chunk(ncu, metrics, names, idx, workdir: Path, env, timeout, jobs) -> tuple[dict, dict]:
    """Profile one chunk of cases.  Returns ({case: ncu dict}, chunk info)."""
    rep = workdir / f"chunk{idx:02d}"
    results = workdir / f"chunk{idx:02d}-worker.jsonl"
    for p in (results, Path(str(rep) + ".ncu-rep")):
        if p.exists():
            p.unlink()
    child = [sys.executable, "-m", "tileroof.gpu.measure", "--worker", "profile", "--cases", ",".join(names),
             "--results", str(results), "--jobs", str(jobs)]
    cmd = N.profile_command(ncu, metrics, str(rep), child)
    t0 = time.time()
    rc, text, timed_out = run_logged(cmd, workdir / f"chunk{idx:02d}.log", timeout, env)
    info = {"cases": list(names), "rc": rc, "timed_out": timed_out, "seconds": None,
            "missing_metrics": N.missing_metrics(text, metrics)}
    recs = read_jsonl(results)
    starts = [r["t"] for r in recs if r.get("type") == "start" and "t" in r]
    ends = [r["t"] for r in recs if r.get("type") == "result" and "t" in r]
    if starts and ends:   # child start-up (imports, compile from cache) and seconds per case under ncu
        info["startup_s"] = starts[0] - t0
        info["per_case_s"] = (max(ends) - starts[0]) / max(1, len(ends))
    launched = [r["case"] for r in recs if r.get("type") == "launched"]
    worker_err = {r["case"]: r.get("error") for r in recs if r.get("type") == "result" and r.get("error")}
    out: dict = {}
    report = Path(str(rep) + ".ncu-rep")
    rows, plain, plain_rows = [], {}, []
    if report.exists():
        for rename, suffix in ((True, ".csv"), (False, "-kernels.csv")):
            try:
                r = subprocess.run(N.import_command(ncu, str(report), rename), capture_output=True,
                                   text=True, timeout=120, env=env)
                (workdir / f"chunk{idx:02d}{suffix}").write_text(r.stdout)
                parsed = N.parse_ncu_csv(r.stdout)
                if rename:
                    rows = parsed
                else:
                    plain_rows = parsed
                    plain = {p.get("id"): p.get("kernel_name") for p in parsed}
            except (OSError, subprocess.SubprocessError) as e:
                info["import_error"] = f"{type(e).__name__}: {e}"
        if not rows and plain_rows:     # this ncu could not rename by NVTX: map by launch order
            rows = plain_rows
    by_case, unmatched, how = N.assign_rows(rows, launched)
    info.update(rows=len(rows), unmatched_rows=len(unmatched), matched_by=how)
    for name in names:
        if name in by_case:
            m = N.aggregate(by_case[name])
            m["kernel_names"] = sorted({plain.get(r.get("id")) or r.get("kernel_name") for r in by_case[name]})
            m["matched_by"] = how
            out[name] = m
        else:
            why = worker_err.get(name)
            if why is None:
                why = ("ncu timed out" if timed_out else
                       "launched but no ncu row" if name in launched else "not launched")
                why += f" (ncu rc={rc}; see ncu/chunk{idx:02d}.log)"
            out[name] = {"error": why}
    info["seconds"] = time.time() - t0
    return out, info


def profile_cases(names, workdir: Path, env, *, ncu_path=None, metrics=None, chunk=20, jobs=16,
                  timeout=300.0, deadline=None, on_update=None) -> tuple[dict, dict]:
    """The whole phase.  Returns ({case: ncu dict}, phase info).  on_update(partial) is called
    after each chunk so the caller can write its JSON."""
    workdir.mkdir(parents=True, exist_ok=True)
    phase = {"ncu": None, "chunks": [], "metric_check": None}
    results: dict = {}
    if not names:
        phase["error"] = "no passing case to profile"
        return results, phase
    ncu = find_ncu(ncu_path)
    if ncu is None:
        phase["error"] = "ncu not found on PATH"
        return {n: {"error": phase["error"]} for n in names}, phase
    phase["ncu"] = ncu
    try:
        phase["ncu_version"] = subprocess.run([ncu, "--version"], capture_output=True, text=True,
                                              timeout=30).stdout.strip().splitlines()[-1:]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    chk = check_metrics(ncu, metrics or N.DEFAULT_METRICS, workdir, env)
    phase["metric_check"] = chk
    if not chk["ok"]:
        phase["error"] = chk["error"]
        return {n: {"error": f"ncu unusable: {chk['error']}"} for n in names}, phase
    metrics = chk["metrics"]
    todo = list(names)
    idx = 0
    rate = None            # (startup_s, per_case_s) from the last chunk
    while todo:
        left = float("inf") if deadline is None else deadline - time.time()
        size = plan_chunk(len(todo), chunk, left, rate, first=idx == 0)
        if size == 0:
            for n in todo:
                results[n] = {"error": "skipped: time budget"}
            break
        part, todo = todo[:size], todo[size:]
        for attempt in range(3):
            got, info = run_chunk(ncu, metrics, part, idx, workdir, env, min(timeout, left - 10), jobs)
            info["attempt"] = attempt
            phase["chunks"].append(info)
            if info["missing_metrics"] and info["rows"] == 0:
                metrics = [m for m in metrics if m not in info["missing_metrics"]]
                chk["dropped"] += info["missing_metrics"]
                left = float("inf") if deadline is None else deadline - time.time()
                if left >= 45:
                    continue
            break
        results.update(got)
        if info.get("per_case_s") is not None:
            rate = (info["startup_s"], info["per_case_s"])
        idx += 1
        if on_update:
            on_update(results, phase)
    phase["metrics"] = metrics
    return results, phase


def plan_chunk(n_left: int, chunk_max: int, seconds_left: float, rate, first: bool) -> int:
    """How many cases the next ncu invocation takes.  With no time limit: chunk_max.  The first
    chunk under a limit is small (at most 8) to learn the start-up and per-case cost; later
    chunks take what fits in the time left with a 30 % margin; 0 when not even one fits."""
    if seconds_left == float("inf"):
        return min(n_left, chunk_max)
    if seconds_left < 45:
        return 0
    if rate is None:
        return min(n_left, chunk_max, 8 if first else chunk_max)
    startup, per_case = rate
    fit = int((seconds_left - 15 - 1.3 * startup) / max(1.3 * per_case, 1e-3))
    return max(0, min(n_left, chunk_max, fit))

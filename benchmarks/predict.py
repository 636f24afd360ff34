"""Write tileroof's predictions for corpus cases to a JSON file before they are measured, so the
record shows what the model said without having seen the GPU's answer.

    python benchmarks/predict.py --sweep NAME [--sweep NAME] [--cases a,b] --out FILE
    python benchmarks/predict.py --check FILE     # those predictions against the recorded runs
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys

import tileroof
from ablation import (NO_BLOCK_CHAIN, NO_FOLLOWERS, NO_TAKEN_SHARING, OLD_REFILL_LAW,  # benchmarks/ablation.py: functions
                      patched, store_bytes_only, switched_off)       # swapped for a with-block
from tileroof.corpus import CASES


def _without_flush_writeback():
    from tileroof import memory
    return patched(memory, "flush_writeback", lambda *a: 0.0)


def _without_timing_floor():
    from tileroof import model
    return patched(model, "timing_floor", lambda dev: dev.launch_s)


def _without_store_requests():
    """Accumulator stores timed as bytes at the SM's L2 share only (no per-request law)."""
    from tileroof import model
    return patched(model, "accumulator_store_time", store_bytes_only)


def _without_tensor_boost_clock():
    """Tensor work capped at the boost clock (1980 MHz on the H200), as before session 8."""
    from tileroof import model
    return patched(model, "tensor_boost_clock", lambda dev: dev.clock_hz)


def _without_block_chain():
    """Launches without a pipelined loop at the roofline alone, as before session 18."""
    return switched_off(NO_BLOCK_CHAIN)


def _without_refill_law():
    """Warp-specialised pipelines at latency / (stages - 1) with session 18's fitted 600 ns, as
    before session 19 (the refill law and its refit 650 ns)."""
    return switched_off(OLD_REFILL_LAW)


def _without_taken_sharing():
    """Ops under a --taken branch at their share of every tile, sharers or not, as before session 19."""
    return switched_off(NO_TAKEN_SHARING)


def _without_followers():
    """Every block of a group that reads the same loop tiles at the fitted latency, as before
    session 20 (no followers)."""
    return switched_off(NO_FOLLOWERS)


def check(path: str) -> int:
    """Score a predictions file (as written, before the run) against the recorded measurements."""
    import statistics

    from tileroof.score import DEFAULT_RESULTS, RECORDED_GPUS, kendall_tau, load_records, percentile
    with open(path) as f:
        pred = json.load(f)
    # the records of the GPU the predictions were made for (h100_sxm: results/h100)
    recs = load_records(RECORDED_GPUS.get(pred.get("device"), DEFAULT_RESULTS))
    print(f"predictions of {pred['date_utc']} (commit {pred['tileroof_commit']}) against the records")
    by_sweep: dict = {}
    for n, p in pred["cases"].items():
        r = recs.get(n) or {}
        # the event-timed median where the record's primary timing is CUDA-graph replay, as
        # tileroof.score compares (the model predicts do_bench-style timing)
        t = r.get("time") or {}
        meas = t.get("events_median_s") or t.get("median_s")
        if not meas or not (r.get("correct") or {}).get("ok"):
            continue
        by_sweep.setdefault(p["sweep"], []).append((n, p["predicted_s"], meas))
    every = [abs(pr / m - 1) for rows in by_sweep.values() for _, pr, m in rows]
    if every:
        print(f"all: n={len(every)} time |err| median {percentile(every, 0.5):.1%} "
              f"p90 {percentile(every, 0.9):.1%} max {max(every):.1%}  (as tileroof score computes them)")
    for sw, rows in by_sweep.items():
        errs = [abs(pr / m - 1) for _, pr, m in rows]
        best = min(m for _, _, m in rows)
        pick = min(rows, key=lambda x: x[1])
        line = f"{sw or 'not a sweep'}: n={len(rows)} time |err| median {statistics.median(errs):.1%} max {max(errs):.1%}"
        if sw and len(rows) >= 3:       # a ranking of fewer configs says nothing
            line += (f", Kendall tau {kendall_tau([x[1] for x in rows], [x[2] for x in rows]):.2f}, "
                     f"top-1 regret {pick[2] / best - 1:.1%}")
        print(line)
    return 0


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv[:1] == ["--check"]:
        return check(argv[1])
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--cases", default="")
    ap.add_argument("--device", default="h200")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    names = [n for n, c in CASES.items() if c.sweep in a.sweep] + [n for n in a.cases.split(",") if n]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    out = {"schema": "tileroof.predictions/1", "device": a.device, "tileroof_commit": commit + ("+dirty" if dirty else ""),
           "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "cases": {}}
    for n in names:
        c = CASES[n]
        r = tileroof.analyze(c.kernel, device=a.device, taken=c.taken or None, **c.params)
        out["cases"][n] = {"sweep": c.sweep, "predicted_s": r.estimated_time, "predicted_dram_bytes": r.dram_bytes,
                           "predicted_dram_bytes_if_drifting": r.timing.dram_if_drifting, "bound": r.bound,
                           "flush_writeback_bytes": r.timing.flush_writeback}
        # the same model without the harness's flush write-back / per-run floor / accumulator-store law /
        # tensor boost clock / block chain
        for key, without in (("flush_writeback", _without_flush_writeback), ("timing_floor", _without_timing_floor),
                             ("store_requests", _without_store_requests),
                             ("tensor_boost_clock", _without_tensor_boost_clock),
                             ("block_chain", _without_block_chain), ("refill_law", _without_refill_law),
                             ("taken_sharing", _without_taken_sharing), ("followers", _without_followers)):
            with without():
                rw = tileroof.analyze(c.kernel, device=a.device, taken=c.taken or None, **c.params)
                out["cases"][n][f"predicted_s_without_{key}"] = rw.estimated_time
                out["cases"][n][f"predicted_dram_bytes_without_{key}"] = rw.dram_bytes
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{len(names)} predictions -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

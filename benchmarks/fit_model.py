"""Fit the block-pipeline constants of the time model on the FIT split of the recorded H200 data,
and write them into the device profile's [fitted] table.

    python benchmarks/fit_model.py [--device h200] [--write]

Constants (each a mechanism, not a per-kernel factor):
  tensor_efficiency_one_warpgroup  share of the tensor-core peak one consumer warpgroup sustains
                                   (not fitted where the device times gemm iterations from the
                                   measured per-clock law: model.gemm_iteration_law)
  iteration_overhead_s             fixed cost of one pipelined iteration (barrier waits, issue)
  load_latency_s                   latency of one global->shared tile load under load
Only cases in the fit split (tileroof.score.split_of) are used; `tileroof score` then reports
the error on the held-out kernels and sweeps the fit never saw.  Objective: mean
|log(predicted / measured)| over the fit cases.
"""
from __future__ import annotations

import argparse
import datetime as dt
import itertools
import math
import statistics
import sys
from dataclasses import replace
from pathlib import Path

import tileroof
from tileroof import counts as counts_mod
from tileroof import devices, model
from tileroof.corpus import CASES
from tileroof.ir import trace as walk
from tileroof.score import DEFAULT_RESULTS, FIT_SWEEPS, load_records, split_of

GRID = {
    "tensor_efficiency_one_warpgroup": [0.5 + 0.05 * i for i in range(11)],
    "iteration_overhead_s": [i * 50e-9 for i in range(3)],
    "load_latency_s": [i * 50e-9 for i in range(4, 17)],
}


def write_fitted(prof: Path, tables: dict) -> None:
    """Write [fitted.NAME] tables into a device profile: NAME -> (value as TOML, method, fit cases).
    The profile's [fitted.*] tables come last; those of other names (the other fitting scripts')
    are kept, these replace theirs."""
    head, *old = prof.read_text().split("\n[fitted.")
    text = head.rstrip() + "\n" + "".join("\n[fitted." + t.rstrip() + "\n" for t in old
                                           if t.split("]", 1)[0] not in tables)
    for name, (value, method, names) in tables.items():
        text += f"\n[fitted.{name}]\nvalue = {value}\nmethod = \"{method}\"\nfit_cases = \"{names}\"\n"
    prof.write_text(text)


def write_to_profile(device: str, values: dict, method: str, names: str) -> Path:
    """write_fitted into `device`'s profile: NAME -> value as TOML, each with `method` (the date
    appended) and the fit cases' `names`; returns the profile's path."""
    prof = devices.profiles_dir() / f"{device}.toml"
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    write_fitted(prof, {k: (v, f"{method}, {stamp}", names) for k, v in values.items()})
    print(f"wrote [fitted.{', '.join(values)}] into {prof}")
    return prof


def fit_cases():
    out = []
    for name, rec in load_records(DEFAULT_RESULTS).items():
        t = rec.get("time") or {}
        if not ((rec.get("correct") or {}).get("ok") and t.get("median_s")) or name not in CASES:
            continue
        if split_of(name, rec.get("sweep")) != "fit":
            continue
        tr = walk(CASES[name].kernel, rec.get("params") or CASES[name].params)
        out.append((name, tr, counts_mod.count(tr), t["median_s"]))
    return out


def objective(cases, dev) -> float:
    errs = [abs(math.log(model.estimate(tr, c, dev).time_s / meas)) for _, tr, c, meas in cases]
    return statistics.fmean(errs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="h200")
    ap.add_argument("--write", action="store_true", help="write the [fitted] table into the device profile")
    a = ap.parse_args(argv)
    base = devices.load(a.device)
    cases = fit_cases()
    print(f"fitting on {len(cases)} cases: sweeps {FIT_SWEEPS} + a third of the kernels")
    grid = {k: v for k, v in GRID.items()
            if not (k == "tensor_efficiency_one_warpgroup" and model.gemm_iteration_law(base))}
    best = None
    for combo in itertools.product(*grid.values()):
        fitted = dict(zip(grid, combo))
        val = objective(cases, replace(base, fitted=fitted))
        if best is None or val < best[0]:
            best = (val, fitted)
    val, fitted = best
    print(f"mean |log ratio| on the fit split: {val:.4f}")
    for k, v in fitted.items():
        print(f"  {k} = {v:.4g}")
    if a.write:
        write_to_profile(a.device, {k: repr(v) for k, v in fitted.items()},
                         f"grid search minimising mean |log(pred/meas)| over the fit split ({len(cases)} cases), "
                         "benchmarks/fit_model.py", ", ".join(n for n, *_ in cases))
    return 0


if __name__ == "__main__":
    sys.exit(main())

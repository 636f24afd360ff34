"""Fit the cost of one test of a run-time branch inside a T.Pipelined loop (data_branch_check_s)
on the block-sparse density probes (probe_bsparse_*, runs 72-73), and write it into the device
profile's [fitted] table.

    python benchmarks/fit_branch_check.py [--device h200] [--write]

The mechanism (model.pipeline_at_clock): TileLang's pipeline tests a branch on run-time data
(the mask) before each of the loop body's statements and around each tile load's wait and
release, on every trip, taken or skipped -- a dependent chain of local-memory loads and branches
(the lowered CUDA of the block-sparse attention: 18 tests a trip in its consumer).  The probes
run the same kernel at mask densities 3.1-100 % (one and two stages), told their density
(--taken): their times against the taken and skipped trips separate what a test costs.  Grid
search of the cost per test minimising mean |log(predicted / measured)| over the probes; the
upstream-style case up_blocksparse_* (another density, measured in session 8) is not used and is
reported apart.  Only the probes' own family has such branches in the record: the constant is
measured on them like a calibration, not validated on another kernel.
"""
from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import replace

from tileroof import counts as counts_mod
from tileroof import devices, model
from tileroof.corpus import CASES
from tileroof.ir import trace as walk
from tileroof.score import DEFAULT_RESULTS, load_records

PREFIX = "probe_bsparse_"
GRID_NS = [i * 0.5 for i in range(0, 161)]          # 0 .. 80 ns per test


def cases(prefix: str = PREFIX):
    out = []
    for name, rec in load_records(DEFAULT_RESULTS).items():
        t = rec.get("time") or {}
        if not name.startswith(prefix) or name not in CASES or not (rec.get("correct") or {}).get("ok"):
            continue
        c = CASES[name]
        tr = walk(c.kernel, rec.get("params") or c.params, taken=c.taken or None)
        out.append((name, tr, counts_mod.count(tr), t.get("events_median_s") or t["median_s"]))
    return out


def with_check(dev, seconds: float):
    return replace(dev, fitted={**dev.fitted, "data_branch_check_s": seconds})


def objective(rows, dev) -> float:
    return statistics.fmean(abs(math.log(model.estimate(tr, c, dev).time_s / meas)) for _, tr, c, meas in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="h200")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    base = devices.load(a.device)
    rows = cases()
    if not rows:
        print("no recorded probe_bsparse_* cases")
        return 1
    best = min(GRID_NS, key=lambda ns: objective(rows, with_check(base, ns * 1e-9)))
    dev = with_check(base, best * 1e-9)
    print(f"{len(rows)} probes; cost per test {best:.1f} ns, mean |log ratio| {objective(rows, dev):.4f} "
          f"(without the tests: {objective(rows, with_check(base, 0.0)):.4f})")
    for name, tr, c, meas in rows + cases("up_blocksparse_"):
        t = model.estimate(tr, c, dev)
        print(f"  {name:52s} measured {meas * 1e6:8.1f} us  predicted {t.time_s * 1e6:8.1f} us  "
              f"{t.time_s / meas - 1:+6.1%}  ({t.pipeline.get('branch_checks_per_trip')} tests a trip)")
    if a.write:
        from fit_model import write_to_profile      # benchmarks/fit_model.py: the profile's [fitted] tables

        write_to_profile(a.device, {"data_branch_check_s": f"{best * 1e-9:.4g}"},
                         "grid search of the cost of one run-time branch test in a pipelined loop, minimising mean "
                         "|log(pred/meas)| over the block-sparse density probes (runs 72-73), "
                         "benchmarks/fit_branch_check.py", ", ".join(n for n, *_ in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

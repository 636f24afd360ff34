"""Fit one block's uncontended stream rate (block_stream_bps) for the later waves of launches
without a pipelined loop, and write it into the device profile's [fitted] table.

    python benchmarks/fit_block_stream.py [--device h200] [--write]

The mechanism (model.block_chain): from the second wave on, each SM runs its blocks' chains
(a DRAM round trip, the loads, the element work and IEEE divisions, the stores) one after another,
so a wave takes no less than one block's chain with its bytes at the rate one block streams them
uncontended, however idle the DRAM is meanwhile.  The rate is fitted on the one-block-per-SM
SiLU-mul grids of run 130 (overlapcheck_silu_mul_fp16_*_64x256_t256: 2, 4, 16 and 48 waves of the
same block) by grid search of mean |log(predicted / measured)|; every other launch (the
quantisation, the 512-thread, two-block-per-SM and fp32 SiLU-mul checks, the record's SiLU-mul,
RMSNorm, softmax ...) is out of the fit and `tileroof score` reports it.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from tileroof import counts as counts_mod
from tileroof import devices, model
from tileroof.corpus import CASES
from tileroof.ir import trace as walk
from tileroof.score import DEFAULT_RESULTS, load_records

from fit_branch_check import objective      # benchmarks/fit_branch_check.py: mean |log(pred/meas)|

FIT = ("overlapcheck_silu_mul_fp16_1536x2816_64x256_t256", "overlapcheck_silu_mul_fp16_3072x2816_64x256_t256",
       "overlapcheck_silu_mul_fp16_12288x2816_64x256_t256", "overlapcheck_silu_mul_fp16_36864x2816_64x256_t256")
GRID_GBPS = [float(g) for g in range(24, 97, 4)]


def cases(names=FIT):
    recs = load_records(DEFAULT_RESULTS)
    out = []
    for name in names:
        rec = recs.get(name)
        if not rec or name not in CASES or not (rec.get("correct") or {}).get("ok"):
            continue
        t = rec["time"]
        tr = walk(CASES[name].kernel, rec.get("params") or CASES[name].params)
        out.append((name, tr, counts_mod.count(tr), t.get("events_median_s") or t["median_s"]))
    return out


def with_rate(dev, bps: float):
    return replace(dev, fitted={**dev.fitted, "block_stream_bps": bps})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="h200")
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args(argv)
    base = devices.load(a.device)
    rows = cases()
    if not rows:
        print("no recorded fit cases")
        return 1
    best = min(GRID_GBPS, key=lambda g: objective(rows, with_rate(base, g * 1e9)))
    dev = with_rate(base, best * 1e9)
    print(f"{len(rows)} cases; block stream {best:.0f} GB/s, mean |log ratio| {objective(rows, dev):.4f} "
          f"(without the law: {objective(rows, with_rate(base, 0.0)):.4f})")
    for name, tr, c, meas in rows:
        t = model.estimate(tr, c, dev)
        print(f"  {name:52s} measured {meas * 1e6:8.1f} us  predicted {t.time_s * 1e6:8.1f} us  {t.time_s / meas - 1:+6.1%}")
    if a.write:
        from fit_model import write_to_profile      # benchmarks/fit_model.py: the profile's [fitted] tables

        write_to_profile(a.device, {"block_stream_bps": f"{best * 1e9:.4g}"},
                         "grid search of one block's uncontended stream rate in the later waves of a launch without a "
                         "pipelined loop, minimising mean |log(pred/meas)| over run 130's one-block-per-SM SiLU-mul "
                         "grids (2-48 waves), benchmarks/fit_block_stream.py", ", ".join(n for n, *_ in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

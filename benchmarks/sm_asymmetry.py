"""Which SMs run memory-bound GEMM blocks faster, from the recorded timeline runs
(tileroof.gpu.timeline: each block's start, end and SM).

    python benchmarks/sm_asymmetry.py

Per kernel: each SM's mean block time over the kernel's mean.  The SMs' pattern is taken from the
kernels whose pace spread (relative std over SMs) exceeds 5 %: SMs more than 7 % faster than the
mean there form the fast group.  Then, for every kernel: the slow group's mean block time over
the fast group's, and the spread.
"""
from __future__ import annotations

import glob
import json
import sys

import numpy as np

from tileroof.gpu.derive import per_sm_block_means
from tileroof.score import DEFAULT_RESULTS


def kernels(results=DEFAULT_RESULTS):
    out = []
    for f in sorted(glob.glob(str(results / "timeline-*.json"))):
        d = json.load(open(f))
        sms = d.get("sm_count", 132)
        for r in d["results"]:
            if "start_ns" not in r or "kind" in r:      # sets 13-14 time other kernels (the grouped GEMM's loop)
                continue
            means = per_sm_block_means(r["start_ns"], r["end_ns"], r["smid"])
            m = np.array([means.get(k, np.nan) for k in range(sms)])
            m = m / np.nanmean(m)
            out.append({"file": f.split("/")[-1], "params": r["params"], "rel": m, "spread": float(np.nanstd(m)),
                        "kernel_us": (max(r["end_ns"]) - min(r["start_ns"])) / 1e3})
    return out


def fast_group(ks, spread_min=0.05, faster=0.93):
    drifting = [k["rel"] for k in ks if k["spread"] > spread_min]
    avg = np.nanmean(np.array(drifting), axis=0)
    return np.flatnonzero(avg < faster), len(drifting), avg


def main() -> int:
    ks = kernels()
    fast, n, avg = fast_group(ks)
    slow = np.setdiff1d(np.arange(avg.size), fast)
    print(f"{len(ks)} kernels; pattern from {n} with pace spread > 5 %: {fast.size} fast SMs {fast.tolist()}")
    print(f"  their mean relative block time {avg[fast].mean():.3f}, the other {slow.size} SMs {avg[slow].mean():.3f}")
    for k in ks:
        p, m = k["params"], k["rel"]
        ratio = np.nanmean(m[slow]) / np.nanmean(m[fast])
        print(f"{k['file']} M{p['M']} N{p['N']} K{p['K']} {p['block_M']}x{p['block_N']} s{p['num_stages']} "
              f"swizzle={bool(p.get('swizzle'))}: spread {k['spread']:.4f}, slow/fast block time {ratio:.3f}, "
              f"kernel {k['kernel_us']:.0f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())

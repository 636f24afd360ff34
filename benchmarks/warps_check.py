"""gemm_pipe --warps (session 34) against the model: per point (tile shape, block_K, blocks per
SM), the measured time per iteration next to the model's compute for one iteration of the same
launch (tl_kernels.gemm_pipe_nows at those parameters; the probe's tiles are L2-resident and
merged, so its iteration is its compute, as for gemm_pipe --nows), with the rule that a block of w < 4 warps issues
from w schedulers (model.subpartitions_used) and without it (warp_schedulers = 0), in SM cycles
(each at its own clock: the measured block's, the model's).

    python benchmarks/warps_check.py RECORD.json [--device h200]

Since session 34 the profile holds run 156's small-block figures (derive.small_block_entries of
results/h100/gemm_pipe_warps-20261207T063221Z.json): on that record the "model" column is its own
fit; a new record (another GPU, other tiles) is the test.
"""
from __future__ import annotations

import argparse
import json
from dataclasses import replace


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("record")
    ap.add_argument("--device", default="h200")
    a = ap.parse_args(argv)

    import tileroof
    from tileroof import devices
    from tileroof.gpu import tl_kernels

    rec = json.load(open(a.record))
    dev = devices.load(a.device)
    off = replace(dev, warp_schedulers=0)
    sm = rec.get("sm_count") or dev.sm_count
    print(f"{'shape':14s} {'bk':>4s} {'/SM':>4s} {'measured':>9s} {'model':>9s} {'err':>7s} {'no rule':>9s} {'err':>7s}  (cycles an iteration)")
    for p in rec["points"]:
        bm, bn, threads = p["shape"]
        params = dict(block_M=bm, block_N=bn, block_K=p["block_K"], num_stages=2, threads=threads, iters=1600,
                      grid=p["blocks_per_sm"] * sm)
        meas = p["per_iter_s"] * p["sm_clock_hz"]
        out = []
        for d in (dev, off):
            r = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=d, **params)
            terms = r.timing.pipeline["terms_s"]
            out.append(max(terms["compute"], terms.get("chain", 0.0)) * (r.timing.sm_clock_hz or d.tensor_clock_hz))
        print(f"{str(p['shape']):14s} {p['block_K']:4d} {p['blocks_per_sm']:4d} {meas:9.0f} {out[0]:9.0f} "
              f"{out[0] / meas - 1:+7.1%} {out[1]:9.0f} {out[1] / meas - 1:+7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

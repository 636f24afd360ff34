"""What share of the wgmma tensor rate a gemm lowered to mma.sync sustains, from Nsight Compute's
counters in measure records (Hopper: TileLang sends float32 gemms, int8 / fp8 gemms with B stored
(K, N) and every gemm under tl.disable_wgmma to mma.sync; counts.gemm_instruction).

    python benchmarks/mma_share.py RECORD.json [RECORD.json ...] [--device h200]

For each case whose gemms ran mma.sync (HMMA, or for int8 IMMA, instructions; no GMMA), the tensor pipe's rate at its
peak is its HMMA instructions per SM over the SM cycles it was active
(sm__pipe_tensor_op_{hmma,imma}_cycles_active x sm__cycles_elapsed), times the FLOPs one instruction does
(the case's counted tensor FLOPs over its instructions); the share is that over the device's
per-clock wgmma peak for the gemm's dtype (catalog tensor_flops_per_clk_per_sm_*).  A measurement
of the pipe, not a fit to time: the catalog's mma_sync_share_* entries cite its output."""
from __future__ import annotations

import argparse
import json
import statistics

import tileroof
from tileroof import devices
from tileroof.corpus import CASES
from tileroof.counts import MMA_SUFFIX, TENSOR


def shares(path: str, dev) -> list[tuple]:
    data = json.load(open(path))
    out = []
    for name, rec in data["cases"].items():
        nc = rec.get("ncu") or {}
        hmma = nc.get("sm__inst_executed_pipe_tensor_op_hmma.sum") or 0
        gmma = nc.get("sm__inst_executed_pipe_tensor_op_gmma.sum") or 0
        active = nc.get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active")
        if not hmma:        # int8 mma.sync is IMMA: its own pipe counters, where the chip has them
            hmma = nc.get("sm__inst_executed_pipe_tensor_op_imma.sum") or 0
            active = nc.get("sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active")
        cycles = nc.get("sm__cycles_elapsed.avg")
        if not hmma or gmma or not active or not cycles or name not in CASES or not rec["correct"]["ok"]:
            continue
        case = CASES[name]
        r = tileroof.analyze(case.kernel, device=dev, **(rec.get("params") or case.params))
        flops = {d: n for (u, d), n in r.counts.flops.items() if u == TENSOR and n}
        if len(flops) != 1:
            continue
        (dtype, n), = flops.items()
        base = dtype[:-len(MMA_SUFFIX)] if dtype.endswith(MMA_SUFFIX) else dtype
        per_inst = n / hmma
        rate = hmma / dev.sm_count / (active / 100 * cycles) * per_inst      # FLOP / clk / SM at the pipe's peak
        peak = dev.tensor_flops_per_clk(base)
        out.append((name, base, per_inst, rate, rate / peak if peak else float("nan"), data["provenance"]["gpu"]))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("records", nargs="+")
    ap.add_argument("--device", default="h200")
    a = ap.parse_args()
    dev = devices.load(a.device)
    rows = [row for p in a.records for row in shares(p, dev)]
    by = {}
    print(f"{'case':56s} {'dtype':5s} {'FLOP/inst':>9s} {'FLOP/clk/SM':>11s} {'share':>6s}  GPU")
    for name, base, per_inst, rate, share, gpu in rows:
        print(f"{name:56s} {base:5s} {per_inst:9.0f} {rate:11.1f} {share:6.3f}  {gpu}")
        by.setdefault(base, []).append(share)
    for base, v in sorted(by.items()):
        print(f"{base}: median share {statistics.median(v):.3f} over {len(v)} launches (min {min(v):.3f}, max {max(v):.3f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The occupancy estimate against Nsight Compute's launch figures on the recorded H200 cases.

    python benchmarks/register_check.py [--all]

Per case with launch counters: the model's registers per thread and blocks per SM
(model.occupancy) next to ptxas's registers (`launch__registers_per_thread`) and the blocks per
SM the launch could hold (the least of Nsight's register, warp and block limits and the model's
own shared-memory limit: Nsight's shared-memory limit reads the carveout in force while it
profiles, 0 for the warp-specialised kernels).  Prints the cases whose blocks per SM differ (all
with --all) and a count by kind.
"""
from __future__ import annotations

import collections
import sys


def rows() -> list[dict]:
    from tileroof import devices, score
    from tileroof.corpus import CASES

    dev = devices.load("h200")
    out = []
    for name, rec in sorted(score.load_records(score.DEFAULT_RESULTS).items()):
        ncu = rec.get("ncu") if isinstance(rec.get("ncu"), dict) else {}
        if name not in CASES or "launch__registers_per_thread" not in ncu:
            continue
        r = score.analyze_record(CASES[name], rec, dev)
        occ = r.timing.occupancy
        smem = int(dev.smem_per_sm // (occ.smem_per_block + 1024)) if occ.smem_per_block else dev.max_blocks_per_sm
        blocks = min(ncu["launch__occupancy_limit_registers"], ncu["launch__occupancy_limit_warps"],
                     ncu["launch__occupancy_limit_blocks"], smem)
        out.append({"case": name, "model_regs": occ.regs_per_thread, "ptxas_regs": ncu["launch__registers_per_thread"],
                    "model_blocks": occ.blocks_per_sm, "blocks": blocks, "warp_specialized": occ.warp_specialized,
                    "gemm": any(op.kind == "gemm" for op in r.trace.ops), "limiter": occ.limiter})
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    rs = rows()
    off = [r for r in rs if r["model_blocks"] != r["blocks"]]
    for r in (rs if "--all" in argv else off):
        print(f"{r['case'][:64]:64s} regs {r['model_regs']:3d} / ptxas {r['ptxas_regs']:3d}  "
              f"blocks/SM {r['model_blocks']:2d} / {r['blocks']:2d}  ({r['limiter']})")
    kinds = collections.Counter(("gemm" if r["gemm"] else "other") + (" over" if r["model_blocks"] > r["blocks"] else " under")
                                for r in off)
    print(f"{len(rs)} cases, {len(off)} with blocks per SM off: {dict(kinds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

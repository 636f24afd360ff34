"""The L2 read traffic the SMs send to the slices, modelled against Nsight Compute, for every
recorded GEMM (tile-shared loads): tileroof's issued tile bytes, and the same after merging the
identical requests of blocks that run on the two SMs of one TPC (memory.estimate, merge_group 2).

    python benchmarks/l2_merge_check.py

Measured = lts__t_sectors_srcunit_tex_op_read x 32 B.  Also prints the l2merge microbenchmark
runs (benchmarks/results/h200/l2merge-*.json): sectors over issued bytes per sharing pattern.
"""
from __future__ import annotations

import glob
import json
import statistics
import sys
from dataclasses import replace

from tileroof import devices, score


def rows(results=score.DEFAULT_RESULTS):
    import tileroof
    from tileroof.corpus import CASES
    dev = devices.load("h200")
    plain = replace(dev, l2_merge_group=1)
    out = []
    for name, rec in score.load_records(results).items():
        c = CASES.get(name)
        ncu = rec.get("ncu") if isinstance(rec.get("ncu"), dict) else {}
        sectors = ncu.get("lts__t_sectors_srcunit_tex_op_read.sum")
        if c is None or not sectors or "gemm" not in c.tags or not (rec.get("correct") or {}).get("ok"):
            continue
        params = rec.get("params") or c.params
        merged = tileroof.analyze(c.kernel, device=dev, **params).timing.memory
        issued = tileroof.analyze(c.kernel, device=plain, **params).timing.memory
        if merged.l2_read_merged is None:
            continue
        out.append({"case": name, "measured": sectors * 32, "issued": issued.l2_read,
                    "merged": merged.l2_slice_read})
    return out


def main() -> int:
    rs = rows()
    for r in rs:
        print(f"{r['case']:58s} measured/issued {r['measured'] / r['issued']:.3f}  model merged/issued "
              f"{r['merged'] / r['issued']:.3f}")
    e_m = [abs(r["merged"] / r["measured"] - 1) for r in rs]
    e_i = [abs(r["issued"] / r["measured"] - 1) for r in rs]
    print(f"{len(rs)} GEMMs: |error| median {statistics.median(e_m):.1%} merged, {statistics.median(e_i):.1%} issued")
    for f in sorted(glob.glob(str(score.DEFAULT_RESULTS / "l2merge-*.json"))):
        d = json.load(open(f))
        print(f"{f.split('/')[-1]} ({d['provenance'].get('gpu')}, {d['provenance'].get('date_utc')}):")
        for x in d["results"]:
            print(f"  tile {x['tile_bytes'] >> 10} KiB, blocks (b + {x['offset']}) // {x['group']} share: sectors / issued "
                  f"{x['slice_read_over_issued']:.3f}, delivered {x['delivered_gbps']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

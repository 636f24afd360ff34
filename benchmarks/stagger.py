"""Do blocks that share a tile stay in step?  Reads timeline sets 13-14 (tileroof.gpu.timeline:
per-block start / end / SM of the grouped GEMM's loop) and prints per launch: blocks and warps per
SM; the first wave's end times over the median block time T by the block's place on its SM (the
order the SM received its blocks: level 0 first); the level spacing (mean step between levels);
and, for blocks d launches apart both in one later wave, the median start gap over T at d = 32,
gx / 2 and gx (gx: the blocks sharing an A tile are gx apart), with c = gap x slots / d (1 = the
starts spread evenly over a block time, a conveyor; 0 = in step).

    python benchmarks/stagger.py [TIMELINE.json ...]   (default: the set 13-14 records)
"""
from __future__ import annotations

import glob
import json
import statistics as st
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from tileroof.gpu.derive import stagger_levels as analyse, timeline_kind  # noqa: E402


def main(argv=None) -> int:
    paths = (argv if argv else None) or sorted(glob.glob(str(ROOT / "benchmarks/results/h200/timeline-*.json")))
    for path in paths:
        doc = json.loads(Path(path).read_text())
        if timeline_kind(doc) != "stagger":
            continue
        print(f"{Path(path).name} ({doc['provenance']['date_utc']}, {doc['provenance']['gpu']})")
        for r in doc["results"]:
            if "start_ns" not in r:
                print(f"  {r['kind']} {r['params']}: {r.get('error')}")
                continue
            a = analyse(r, doc.get("sm_count", 132))
            a["correct"] = r.get("correct_corner")
            p = r["params"]
            tiles = f"{p['block_M']}x{p['block_N']}x{p['block_K']} s{p['num_stages']} t{p['threads']}"
            print(f"  {r['kind']:8s} G{p.get('G', len(p.get('batch_sizes_list', ())))} {tiles:22s} "
                  f"{a['per_sm']}/SM {a['warps_per_sm']:2d} warps  T {a['T_us']:5.1f} us  wave-0 ends/T "
                  + " ".join(f"{x:.2f}" for x in a["levels"]) + f"  spacing {a['spacing']:.3f}  gap/T (c): "
                  + " ".join(f"d{d} {g:.3f} ({c:.2f})" for d, (g, c) in a["gaps"].items())
                  + ("" if a["correct"] else "  WRONG RESULT"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

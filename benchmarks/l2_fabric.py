"""Where the SMs' L2 reads are served: the near L2 partition, the other one (over the L2 fabric) or
DRAM.  Reads l2fabric-*.json records (the measure harness with Nsight Compute on the L2 lookup
and fabric counters) and prints per case: the share of the SMs' read sectors that miss their
near L2 slice, the share that crosses the fabric (and of those, the share the far partition
misses too), and DRAM read sectors over the SMs' read sectors.

Made on the device with (run 93):
    python3 -m tileroof.gpu.measure --cases CASES --ncu --ncu-metrics gpu__time_duration.sum,
      dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum,
      lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum,
      lts__t_sectors_srcunit_ltcfabric.sum,lts__t_sectors_srcunit_ltcfabric_op_read.sum,
      lts__t_sectors_srcunit_ltcfabric_lookup_hit.sum,lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum,...
      --out $OUT
    python benchmarks/l2_fabric.py [RECORD.json ...]     (default: benchmarks/results/h200/l2fabric-*.json)
"""
from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def shares(ncu: dict) -> dict:
    tex = ncu["lts__t_sectors_srcunit_tex_op_read.sum"]
    miss = ncu["lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum"]
    fab = ncu["lts__t_sectors_srcunit_ltcfabric_op_read.sum"]
    fab_all = ncu["lts__t_sectors_srcunit_ltcfabric.sum"]
    fab_miss = ncu["lts__t_sectors_srcunit_ltcfabric_lookup_miss.sum"]
    return {"near_miss": miss / tex, "fabric": fab / tex, "far_miss_of_fabric": fab_miss / fab_all,
            "dram_over_reads": ncu["dram__bytes_read.sum"] / 32 / tex}


def main(argv=None) -> int:
    paths = argv or sorted(glob.glob(str(ROOT / "benchmarks/results/h200/l2fabric-*.json")))
    for p in paths:
        d = json.loads(Path(p).read_text())
        print(f"{Path(p).name} ({d['provenance'].get('date_utc')}, {d['provenance'].get('gpu')})")
        for name, c in d["cases"].items():
            s = shares(c["ncu"])
            print(f"  {name:48s} near-L2 miss {s['near_miss']:6.1%}  over the fabric {s['fabric']:6.1%} "
                  f"(far miss {s['far_miss_of_fabric']:5.1%})  DRAM / reads {s['dram_over_reads']:6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

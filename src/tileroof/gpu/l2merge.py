"""Do the SMs merge identical tile requests before the L2 slices, and which SMs?  TileLang's
tile_stream kernel (tileroof.gpu.tl_kernels): one block per SM, each streams 1000 tiles of an
L2-resident 4 MiB working set through a 4-stage TMA pipeline; blocks (b + offset) // group read
the same tile at the same iteration (group 1: every block its own sequence).  Nsight Compute
counts the L2 read sectors the SMs send (lts__t_sectors_srcunit_tex_op_read); events time the
launch (delivered bytes / time).  Blocks that start one after another run on SMs 2k, 2k+1 (one
TPC; tileroof.gpu.timeline), so group 2 with offset 0 pairs TPC mates and offset 1 pairs blocks
of neighbouring TPCs: if only TPC mates merge, the first halves the sectors and the second not.

    python -m tileroof.gpu.l2merge --out DIR          # runs ncu over itself (--child)
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

TILES = ((128, 64), (256, 64))        # fp16: 16 and 32 KiB
GROUPS = ((1, 0), (2, 0), (2, 1), (4, 0), (8, 0), (0, 0))   # (group, offset); 0 = all blocks one sequence
ITERS = 1000
STAGES = 4
WORKING_SET = 4 << 20
METRICS = ("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_bytes.sum", "dram__bytes_read.sum",
           "gpu__time_duration.sum")


def configs(sm_count: int) -> list[dict]:
    out = []
    for rows, cols in TILES:
        tile_bytes = rows * cols * 2
        n_tiles = WORKING_SET // tile_bytes
        n_tiles -= n_tiles % 4
        for group, offset in GROUPS:
            g = group or sm_count
            out.append({"group": g, "offset": offset, "tile_bytes": tile_bytes,
                        "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=sm_count, iters=ITERS,
                                       num_stages=STAGES, stride=7, group=g, offset=offset)})
    return out


def child() -> int:
    import torch

    from .profiling import profiled_launches
    from .tl_kernels import tile_stream
    cfgs = configs(torch.cuda.get_device_properties(0).multi_processor_count)
    profiled_launches(tile_stream, cfgs, lambda p: (
        torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda"),
        torch.empty((p["grid"], p["cols"]), dtype=torch.float32, device="cuda")), "L2MERGE-CONFIGS", time_runs=30)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ncu", default="ncu")
    a = ap.parse_args(argv)
    if a.child:
        return child()
    from .profiling import profile_child
    from .provenance import base_provenance, write_record
    prov = base_provenance("l2merge", touch_gpu=True)
    t0 = time.time()
    run = profile_child("tileroof.gpu.l2merge", METRICS, "L2MERGE-CONFIGS", 400, None if a.ncu == "ncu" else a.ncu)
    cfgs, rows = run["configs"], run["metrics"]
    results = []
    for c, m in zip(cfgs, rows):
        p = c["params"]
        issued = p["grid"] * p["iters"] * c["tile_bytes"]
        sectors = m.get("lts__t_sectors_srcunit_tex_op_read.sum") or 0
        results.append({**c, "issued_read_bytes": issued, "ncu": {k: m.get(k) for k in METRICS},
                        "slice_read_over_issued": sectors * 32 / issued,
                        "delivered_gbps": issued / c["stats"]["median_s"] / 1e9,
                        "slice_read_gbps": sectors * 32 / c["stats"]["median_s"] / 1e9})
    path = write_record(a.out, prov, t0, {"command": run["command"], "returncode": run["returncode"],
                                          "results": results, "configs_run": len(cfgs), "rows_profiled": len(rows),
                                          "stderr_tail": run["stderr_tail"]}, __doc__)
    for x in results:
        print(f"tile {x['tile_bytes'] >> 10} KiB group {x['group']:3d} offset {x['offset']}: L2 read sectors / issued "
              f"{x['slice_read_over_issued']:.3f}, delivered {x['delivered_gbps']:.0f} GB/s, "
              f"slices {x['slice_read_gbps']:.0f} GB/s")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

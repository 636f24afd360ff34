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
import json
import os
import subprocess
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
    from .microbench import events
    from .tl_kernels import tile_stream
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    cfgs = configs(sm)
    ks = tile_stream.par_compile([c["params"] for c in cfgs], num_workers=16, ignore_error=True)
    done = []
    for c, k in zip(cfgs, ks):
        if k is None:
            continue
        p = c["params"]
        a = torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda")
        out = torch.empty((p["grid"], p["cols"]), dtype=torch.float32, device="cuda")
        c["stats"] = events(lambda: k(a, out), 30)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        k(a, out)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        done.append(c)
    print("L2MERGE-CONFIGS " + json.dumps(done))
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ncu", default="ncu")
    a = ap.parse_args(argv)
    if a.child:
        return child()
    from . import ncu as N
    from .profiling import find_ncu
    from .provenance import base_provenance, query_smi, utc_stamp
    ncu = find_ncu(None if a.ncu == "ncu" else a.ncu)
    if not ncu:
        raise SystemExit("ncu not found")
    a.out.mkdir(parents=True, exist_ok=True)
    prov = base_provenance("l2merge", touch_gpu=True)
    t0 = time.time()
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
           "--print-units", "base", "-k", "regex:main_kernel", "--metrics", ",".join(METRICS),
           sys.executable, "-m", "tileroof.gpu.l2merge", "--child"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=os.environ.copy())
    text = r.stdout
    cfg_line = [ln for ln in text.splitlines() if ln.startswith("L2MERGE-CONFIGS ")]
    cfgs = json.loads(cfg_line[-1][len("L2MERGE-CONFIGS "):]) if cfg_line else []
    csv = "\n".join(ln for ln in text.splitlines() if ln.startswith('"'))
    rows = N.parse_ncu_csv(csv)
    results = []
    for c, row in zip(cfgs, rows):
        m = row["metrics"]
        p = c["params"]
        issued = p["grid"] * p["iters"] * c["tile_bytes"]
        sectors = m.get("lts__t_sectors_srcunit_tex_op_read.sum") or 0
        results.append({**c, "issued_read_bytes": issued, "ncu": {k: m.get(k) for k in METRICS},
                        "slice_read_over_issued": sectors * 32 / issued,
                        "delivered_gbps": issued / c["stats"]["median_s"] / 1e9,
                        "slice_read_gbps": sectors * 32 / c["stats"]["median_s"] / 1e9})
    prov["smi_after"] = query_smi()
    doc = {"schema": "tileroof.l2merge/1", "provenance": prov, "command": cmd, "returncode": r.returncode,
           "wall_s": time.time() - t0, "results": results, "configs_run": len(cfgs), "rows_profiled": len(rows),
           "stderr_tail": r.stderr[-3000:], "method": __doc__}
    path = a.out / f"l2merge-{utc_stamp()}.json"
    path.write_text(json.dumps(doc, indent=1))
    for x in results:
        print(f"tile {x['tile_bytes'] >> 10} KiB group {x['group']:3d} offset {x['offset']}: L2 read sectors / issued "
              f"{x['slice_read_over_issued']:.3f}, delivered {x['delivered_gbps']:.0f} GB/s, "
              f"slices {x['slice_read_gbps']:.0f} GB/s")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How far apart do identical blocks drift?  One wave of TileLang GEMM blocks (the corpus `matmul`,
grid = one block per SM, every block the same work), profiled by Nsight Compute with the clocks
left alone: the spread of the SMs' active cycles, (max - min) / mean of sm__cycles_active, is how
much earlier the fastest SM finishes the same work than the slowest.  Two regimes: a loop bound by
the SM's share of L2 bandwidth (64x256 tiles, one warpgroup) and a tensor-bound loop (128x256, two
warpgroups; 128x128 one warpgroup), each at two K to tell a steady rate difference (spread
proportional to K) from a random walk (spread ~ sqrt K).  A second pass asks ncu for the
per-SM values (--print-metric-instances values) where it has them.

    python -m tileroof.gpu.driftprobe --out DIR          # runs ncu over itself (--child)
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

METRICS = ("sm__cycles_active.max", "sm__cycles_active.min", "sm__cycles_active.avg", "gpu__time_duration.sum",
           "dram__bytes_read.sum", "gpc__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.max")
# (block_M, block_N, block_K, stages, threads, rows of blocks): columns fill one wave with the rows
SHAPES = ((64, 256, 64, 4, 128, 4), (128, 256, 64, 3, 256, 4), (128, 128, 64, 4, 128, 2))
KS = (8192, 32768)


def configs(sm_count: int) -> list[dict]:
    out = []
    for bm, bn, bk, s, t, rows in SHAPES:
        cols = sm_count // rows
        for K in KS:
            out.append(dict(M=bm * rows, N=bn * cols, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=s,
                            threads=t, in_dtype="float16", out_dtype="float16", accum_dtype="float32",
                            trans_B=False, swizzle=False))
    return out


def child() -> int:
    import torch

    from ..corpus.gemm import matmul
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    cfgs = configs(sm)
    ks = matmul.par_compile(cfgs, num_workers=16, ignore_error=True)
    done = []
    for p, k in zip(cfgs, ks):
        if k is None:
            continue
        a = torch.randn((p["M"], p["K"]), dtype=torch.float16, device="cuda")
        b = torch.randn((p["K"], p["N"]), dtype=torch.float16, device="cuda")
        c = torch.empty((p["M"], p["N"]), dtype=torch.float16, device="cuda")
        k(a, b, c)                                    # warm (module load) outside the profiled range
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        k(a, b, c)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()
        done.append(p)
    print("DRIFTPROBE-CONFIGS " + json.dumps(done))
    return 0


def _ncu(ncu: str, extra: list) -> tuple[list, list, str, str]:
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--csv", "--page", "raw",
           "--print-units", "base", "-k", "regex:main_kernel", "--metrics", ",".join(METRICS), *extra,
           sys.executable, "-m", "tileroof.gpu.driftprobe", "--child"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=400, env=os.environ.copy())
    return cmd, r.stdout.splitlines(), r.stdout, r.stderr


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--instances", action="store_true", help="second pass with --print-metric-instances values")
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
    prov = base_provenance("driftprobe", touch_gpu=True)
    t0 = time.time()
    cmd, lines, text, err = _ncu(ncu, [])
    cfg_line = [ln for ln in lines if ln.startswith("DRIFTPROBE-CONFIGS ")]
    cfgs = json.loads(cfg_line[-1][len("DRIFTPROBE-CONFIGS "):]) if cfg_line else []
    rows = N.parse_ncu_csv("\n".join(ln for ln in lines if ln.startswith('"')))
    results = []
    for p, row in zip(cfgs, rows):
        m = row["metrics"]
        mx, mn, avg = (m.get(f"sm__cycles_active.{s}") for s in ("max", "min", "avg"))
        results.append({"params": p, "ncu": {k: m.get(k) for k in METRICS},
                        "spread": (mx - mn) / avg if avg else None, "max_over_avg": mx / avg if avg else None})
    inst = {}
    if a.instances:
        icmd, ilines, itext, ierr = _ncu(ncu, ["--print-metric-instances", "values"])
        inst = {"command": icmd, "csv": "\n".join(ln for ln in ilines if ln.startswith('"')), "stderr_tail": ierr[-2000:]}
    prov["smi_after"] = query_smi()
    doc = {"schema": "tileroof.driftprobe/1", "provenance": prov, "command": cmd, "wall_s": time.time() - t0,
           "results": results, "instances": inst, "stderr_tail": err[-3000:], "method": __doc__}
    path = a.out / f"driftprobe-{utc_stamp()}.json"
    path.write_text(json.dumps(doc, indent=1))
    for x in results:
        p = x["params"]
        print(f"{p['block_M']}x{p['block_N']} t{p['threads']} K={p['K']}: SM active spread {x['spread']:.3f} "
              f"(max/avg {x['max_over_avg']:.3f}), {x['ncu']['gpu__time_duration.sum'] / 1e3:.0f} us")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What one pipelined GEMM iteration costs besides its math, measured: TileLang's gemm_pipe kernel
(tileroof.gpu.tl_kernels), one block per SM, every block reading the same L2-resident tiles (the
L2 Request Coalescer merges them, so the slices are not the limit), iters = 400 and 1600; time per
iteration = the difference over 1200 iterations.  Per tile shape and consumer warpgroups, time per
iteration against block_K (16..128) is a line: its intercept is the fixed cost per iteration, its
slope the math.

    python -m tileroof.gpu.gemm_pipe --out DIR
    python -m tileroof.gpu.gemm_pipe --nows|--fed|--chain|--warps --out DIR
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

SHAPES = ((128, 128, 128), (128, 128, 256), (128, 256, 256), (64, 256, 128), (256, 128, 256), (64, 128, 128))
BLOCK_KS = (16, 32, 64, 128)
STAGES = 3
ITERS = (400, 1600)
SMEM_LIMIT = 220 * 1024


def configs(sm_count: int) -> list[dict]:
    out = []
    for bm, bn, threads in SHAPES:
        for bk in BLOCK_KS:
            if (bm + bn) * bk * 2 * STAGES > SMEM_LIMIT:
                continue
            for iters in ITERS:
                out.append({"shape": [bm, bn, threads], "block_K": bk, "iters": iters,
                            "params": dict(block_M=bm, block_N=bn, block_K=bk, num_stages=STAGES, threads=threads,
                                           iters=iters, grid=sm_count)})
    return out


def per_iteration(median_by_iters: dict) -> float:
    """Seconds per iteration: the difference between the ITERS runs' medians over the iterations
    between them (what a block's fixed costs cancel out of)."""
    return (median_by_iters[ITERS[1]] - median_by_iters[ITERS[0]]) / (ITERS[1] - ITERS[0])


def measure(kernel, cfgs: list, make_args) -> list:
    """Each config with its timing (microbench._compiled / _timed_configs: compiled once, 30
    event-timed runs on the tensors `make_args(params)` returns, the last one the (grid, 4) Times
    buffer) and "sm_clock_hz": each block's SM cycles over its GPU-timer span, median over the
    blocks."""
    from .microbench import _compiled, _timed_configs

    def clock(row, args):
        t = args[-1].cpu()
        row["sm_clock_hz"] = statistics.median(float(c1 - c0) / float(t1 - t0) * 1e9
                                               for t0, c0, t1, c1 in t.tolist() if t1 > t0)
    return _timed_configs(cfgs, _compiled(kernel, cfgs)[0], 30, make_args, clock)


def fit_lines(cfgs: list, shapes, xs, xname: str, flops) -> list:
    """Per shape: time per iteration (the difference between the ITERS runs) at each x, and the
    line through them against x: its intercept is the fixed cost per iteration (seconds and SM
    cycles), its slope the math.  `flops(shape, x)`: FLOPs of one iteration."""
    import numpy as np
    fits = []
    for shape in shapes:
        pts = []
        for x in xs:
            sel = [c for c in cfgs if c["shape"] == list(shape) and c[xname] == x and "stats" in c
                   and c.get("blocks_per_sm", 1) == 1]
            t = {c["iters"]: c["stats"]["median_s"] for c in sel}
            if len(t) == 2:
                per_iter = per_iteration(t)
                clk = statistics.median(c["sm_clock_hz"] for c in sel if c.get("sm_clock_hz"))
                pts.append((x, per_iter, flops(shape, x) / per_iter, clk))
        if len(pts) >= 2:
            slope, icpt = np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1)
            cyc_slope, cyc_icpt = np.polyfit([p[0] for p in pts], [p[1] * p[3] for p in pts], 1)
            per_x = flops(shape, 1.0)
            fits.append({"shape": list(shape),
                         "points": [{xname: x, "per_iter_s": t, "flops_per_s_sm": f, "sm_clock_hz": ck}
                                    for x, t, f, ck in pts],
                         "intercept_s": float(icpt), "slope_s_per_k": float(slope),
                         "tflops_sm_from_slope": per_x / slope / 1e12 if slope > 0 else None,
                         "intercept_cycles": float(cyc_icpt),
                         "flops_per_clk_sm_from_slope": per_x / cyc_slope if cyc_slope > 0 else None})
    return fits


def report(fits: list, xname: str, sm: int) -> None:
    for f in fits:
        pts = ", ".join(f"{xname} {x[xname]} {x['per_iter_s'] * 1e9:.0f} ns" for x in f["points"])
        print(f"{f['shape']}: {pts}; intercept {f['intercept_s'] * 1e9:.0f} ns = {f['intercept_cycles']:.0f} cycles, "
              f"slope -> {(f['tflops_sm_from_slope'] or 0) * sm:.0f} TF/s = {f['flops_per_clk_sm_from_slope'] or 0:.0f} "
              f"FLOP/clk/SM; clocks {[round(x['sm_clock_hz'] / 1e6) for x in f['points']]} MHz")


def run(argv, tool: str, doc: str, kernel_name: str, configs_for, make_args, shapes, xs, xname: str, flops,
        module: str | None = None) -> int:
    """The command line of a pipe probe (gemm_pipe, attn_pipe): compile and time
    `configs_for(sm_count)` with tl_kernels.<kernel_name> on inputs `make_args(torch, params)`, fit
    time per iteration against `xname`, write the record (schema tileroof.<tool>/1) under --out."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import torch

    from . import tl_kernels
    from .provenance import base_provenance, write_record
    prov = base_provenance(tool, touch_gpu=True, module=module)
    t0 = time.time()
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    cfgs = measure(getattr(tl_kernels, kernel_name), configs_for(sm), lambda p: make_args(torch, p))
    fits = fit_lines(cfgs, shapes, xs, xname, flops)
    path = write_record(a.out, prov, t0, {"sm_count": sm, "configs": cfgs, "fits": fits}, doc)
    report(fits, xname, sm)
    print(f"wrote {path}")
    return 0


def _make_args(torch, p):
    return (torch.randn((16 * p["block_M"], p["block_K"]), dtype=torch.float16, device="cuda"),
            torch.randn((16 * p["block_K"], p["block_N"]), dtype=torch.float16, device="cuda"),
            torch.empty((p["grid"] * p["block_M"], p["block_N"]), dtype=torch.float32, device="cuda"),
            torch.zeros((p["grid"], 4), dtype=torch.int64, device="cuda"))


# --nows: tl_kernels.gemm_pipe_nows (no TMA, no warp specialisation; threads = the consumers), one
# block per SM for the fixed cost, and 2 and 4 blocks per SM for how co-resident blocks share it
NOWS_SHAPES = ((64, 64, 128), (64, 128, 128), (128, 128, 128), (64, 128, 256), (128, 128, 256))
NOWS_STAGES = 2
NOWS_SHARED = ((64, 64, 128), (64, 128, 128))        # also run at 2 and 4 blocks per SM, block_K 64


def nows_configs(sm_count: int) -> list[dict]:
    out = []
    for bm, bn, threads in NOWS_SHAPES:
        for bk in BLOCK_KS:
            for per_sm in ((1, 2, 4) if (bm, bn, threads) in NOWS_SHARED and bk == 64 else (1,)):
                for iters in ITERS:
                    out.append({"shape": [bm, bn, threads], "block_K": bk, "iters": iters, "blocks_per_sm": per_sm,
                                "params": dict(block_M=bm, block_N=bn, block_K=bk, num_stages=NOWS_STAGES,
                                               threads=threads, iters=iters, grid=per_sm * sm_count)})
    return out


# --fed (session 13): tl_kernels.gemm_pipe_fed, the same iteration with tiles that are not
# shared in step: from L2 (an 8 MiB working set, each block its own order) or from DRAM (every
# tile read once), against num_stages 1-4, and the merged L2-resident feed of gemm_pipe as the
# reference: how much of a tile load's latency the stages leave in the iteration
FED_SHAPES = ((128, 128, 128, 32), (128, 128, 128, 64), (64, 128, 128, 64), (128, 256, 256, 64))
FED_STAGES = (1, 2, 3, 4)
FED_FEEDS = ("merged", "l2", "dram")


def fed_configs(sm_count: int) -> list[dict]:
    out = []
    for bm, bn, threads, bk in FED_SHAPES:
        tile = (bm + bn) * bk * 2
        for stages in FED_STAGES:
            for feed in FED_FEEDS:
                if feed == "merged":
                    n_tiles, stride = 16, 0
                elif feed == "l2":
                    n_tiles, stride = (8 << 20) // tile, 7
                else:
                    n_tiles, stride = sm_count * ITERS[1], ITERS[1]
                for iters in ITERS:
                    out.append({"shape": [bm, bn, threads], "block_K": bk, "num_stages": stages, "feed": feed,
                                "iters": iters, "tile_bytes": tile,
                                "params": dict(block_M=bm, block_N=bn, block_K=bk, num_stages=stages, threads=threads,
                                               iters=iters, grid=sm_count, n_tiles=n_tiles, stride=stride)})
    return out


def _fed_args(torch, p):
    n = p["n_tiles"]
    return (torch.randn((n * p["block_M"], p["block_K"]), dtype=torch.float16, device="cuda"),
            torch.randn((n * p["block_K"], p["block_N"]), dtype=torch.float16, device="cuda"),
            torch.empty((p["grid"] * p["block_M"], p["block_N"]), dtype=torch.float32, device="cuda"),
            torch.zeros((p["grid"], 4), dtype=torch.int64, device="cuda"))


def fed_points(cfgs: list) -> list:
    """Per (shape, block_K, feed, stages): time per iteration (the difference between the ITERS
    runs, seconds) and the SM clock."""
    out = []
    keys = sorted({(tuple(c["shape"]), c["block_K"], c["feed"], c["num_stages"]) for c in cfgs})
    for shape, bk, feed, st in keys:
        sel = [c for c in cfgs if (tuple(c["shape"]), c["block_K"], c["feed"], c["num_stages"]) == (shape, bk, feed, st)
               and "stats" in c]
        t = {c["iters"]: c["stats"]["median_s"] for c in sel}
        if len(t) == 2:
            out.append({"shape": list(shape), "block_K": bk, "feed": feed, "num_stages": st,
                        "tile_bytes": sel[0]["tile_bytes"],
                        "per_iter_s": per_iteration(t),
                        "sm_clock_hz": statistics.median(c["sm_clock_hz"] for c in sel if c.get("sm_clock_hz"))})
    return out


def _points_main(argv, tool: str, kernel_name: str, configs_for, make_args, points, line) -> int:
    """The command line of a probe whose record keeps per-config timings and derived points:
    compile and time `configs_for(sm_count)` with tl_kernels.<kernel_name>, write the record
    (schema tileroof.<tool>/1: configs and points(configs)) under --out, print line(point) each."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import torch

    from . import tl_kernels
    from .provenance import base_provenance, write_record
    prov = base_provenance(tool, touch_gpu=True, module="gemm_pipe")
    t0 = time.time()
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    cfgs = measure(getattr(tl_kernels, kernel_name), configs_for(sm), lambda p: make_args(torch, p))
    pts = points(cfgs)
    path = write_record(a.out, prov, t0, {"sm_count": sm, "configs": cfgs, "points": pts}, __doc__)
    for p in pts:
        print(line(p))
    print(f"wrote {path}")
    return 0


def fed_main(argv) -> int:
    return _points_main(argv, "gemm_pipe_fed", "gemm_pipe_fed", fed_configs, _fed_args, fed_points, lambda p: (
        f"{p['shape']} bk{p['block_K']} {p['feed']:6s} s{p['num_stages']}: {p['per_iter_s'] * 1e9:6.0f} ns "
        f"= {p['per_iter_s'] * p['sm_clock_hz']:5.0f} cycles at {p['sm_clock_hz'] / 1e6:.0f} MHz "
        f"({p['tile_bytes'] // 1024} KiB a stage)"))


# --chain (session 13): tl_kernels.gemm_chain_nows, 1-4 gemms of 64x64x64 an iteration without
# warp specialisation, accumulated into one fragment or each fed by the previous one through shared
# memory (a T.copy, or a masked T.Parallel copy as linear attention's s), one block per SM
CHAIN = tuple((n, hop) for n in (1, 2, 3, 4) for hop in (("none",) if n == 1 else ("none", "copy", "masked")))


def chain_configs(sm_count: int) -> list[dict]:
    return [{"n_gemm": n, "hop": hop, "iters": iters,
             "params": dict(n_gemm=n, hop=hop, iters=iters, grid=sm_count)}
            for n, hop in CHAIN for iters in ITERS]


def _chain_args(torch, p):
    return (torch.randn((16 * 64, 64), dtype=torch.float16, device="cuda") / 8,
            torch.randn((16 * 64, 64), dtype=torch.float16, device="cuda") / 8,
            torch.empty((p["grid"] * 64, 64), dtype=torch.float32, device="cuda"),
            torch.zeros((p["grid"], 4), dtype=torch.int64, device="cuda"))


def chain_points(cfgs: list) -> list:
    """Per (n_gemm, hop): time per iteration (the difference between the ITERS runs) and the SM clock."""
    pts = []
    for n, hop in CHAIN:
        t = {c["iters"]: c for c in cfgs if c["n_gemm"] == n and c["hop"] == hop and "stats" in c}
        if len(t) == 2:
            pts.append({"n_gemm": n, "hop": hop, "per_iter_s": per_iteration({i: c["stats"]["median_s"] for i, c in t.items()}),
                        "sm_clock_hz": t[ITERS[1]].get("sm_clock_hz") or 0.0})
    return pts


def chain_main(argv) -> int:
    return _points_main(argv, "gemm_chain", "gemm_chain_nows", chain_configs, _chain_args, chain_points, lambda p: (
        f"{p['n_gemm']} gemms, hop {p['hop']:6s}: {p['per_iter_s'] * 1e9:6.0f} ns = "
        f"{p['per_iter_s'] * p['sm_clock_hz']:5.0f} cycles at {p['sm_clock_hz'] / 1e6:.0f} MHz"))


# --warps (session 34): tl_kernels.gemm_pipe_nows with blocks of fewer warps than the SM has
# schedulers (one warp: 16x64 tiles, mma; two: 32x64), at 1-8 blocks an SM: whether a small
# block's iteration runs at its warps' share of the SM (model.subpartitions_used: flat from 1 to
# 4 one-warp blocks an SM, rising past them) or at the whole SM's rate shared by its blocks
WARPS_SHAPES = ((16, 64, 32), (32, 64, 64))
WARPS_PER_SM = {(16, 64, 32): (1, 2, 3, 4, 8), (32, 64, 64): (1, 2, 4)}


def warps_configs(sm_count: int) -> list[dict]:
    out = []
    for bm, bn, threads in WARPS_SHAPES:
        for bk in BLOCK_KS[1:]:
            for per_sm in (WARPS_PER_SM[(bm, bn, threads)] if bk == 64 else (1,)):
                for iters in ITERS:
                    out.append({"shape": [bm, bn, threads], "block_K": bk, "iters": iters, "blocks_per_sm": per_sm,
                                "params": dict(block_M=bm, block_N=bn, block_K=bk, num_stages=NOWS_STAGES,
                                               threads=threads, iters=iters, grid=per_sm * sm_count)})
    return out


def warps_points(cfgs: list) -> list:
    """Per (shape, block_K, blocks per SM): time per iteration (the difference between the ITERS
    runs) and the SM clock."""
    out = []
    keys = sorted({(tuple(c["shape"]), c["block_K"], c["blocks_per_sm"]) for c in cfgs})
    for shape, bk, per_sm in keys:
        sel = [c for c in cfgs if (tuple(c["shape"]), c["block_K"], c["blocks_per_sm"]) == (shape, bk, per_sm)
               and "stats" in c]
        t = {c["iters"]: c["stats"]["median_s"] for c in sel}
        if len(t) == 2:
            out.append({"shape": list(shape), "block_K": bk, "blocks_per_sm": per_sm, "per_iter_s": per_iteration(t),
                        "sm_clock_hz": statistics.median(c["sm_clock_hz"] for c in sel if c.get("sm_clock_hz"))})
    return out


def warps_main(argv) -> int:
    return _points_main(argv, "gemm_pipe_warps", "gemm_pipe_nows", warps_configs, _make_args, warps_points,
                        lambda p: (f"{p['shape']} bk{p['block_K']} x{p['blocks_per_sm']} an SM: "
                                   f"{p['per_iter_s'] * 1e9:6.0f} ns = {p['per_iter_s'] * p['sm_clock_hz']:5.0f} cycles "
                                   f"at {p['sm_clock_hz'] / 1e6:.0f} MHz"))


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--warps" in argv:
        argv.remove("--warps")
        return warps_main(argv)
    if "--chain" in argv:
        argv.remove("--chain")
        return chain_main(argv)
    if "--fed" in argv:
        argv.remove("--fed")
        return fed_main(argv)
    if "--nows" in argv:
        argv.remove("--nows")
        return run(argv, "gemm_pipe_nows", __doc__, "gemm_pipe_nows", nows_configs, _make_args,
                   NOWS_SHAPES, BLOCK_KS, "block_K", lambda shape, bk: 2 * shape[0] * shape[1] * bk,
                   module="gemm_pipe")
    return run(argv, "gemm_pipe", __doc__, "gemm_pipe", configs, _make_args, SHAPES, BLOCK_KS, "block_K",
               lambda shape, bk: 2 * shape[0] * shape[1] * bk)


if __name__ == "__main__":
    sys.exit(main())

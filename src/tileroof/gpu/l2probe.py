"""How much data survives in L2 between reuses, measured: TileLang's block_stream kernel
(tileroof.gpu.tl_kernels) with 16 x sm_count blocks that each read 8 tiles of 16 KiB from a
working set of W bytes, block b starting at tile b x stride; every tile is read again every
W / (blocks per wave x 128 KiB) waves.  Nsight Compute (cold L2 before the launch, clocks left
alone) counts the DRAM bytes read: about W when the working set stays in L2 between passes, about
every byte read when it does not.  stride 8: each tile read by one block per pass; stride 4: by
two neighbouring blocks of the same wave (shared, as GEMM tiles are); --strides 2,1: by four or
eight -- but then the launch touches only grid x stride tiles (33-66 MiB), too few passes over the
larger working sets to measure reuse (run of 18:28 UTC: uninformative, not recorded).

--rows: the pattern of a GEMM grid whose rows re-read one operand (A when blockIdx.x walks M):
`groups` G sequences of `iters` tiles (W = G x iters x 16 KiB), block b reads sequence b mod G,
16 waves of blocks in all; so each sequence is read by sm_count / G blocks of a wave, G launches
apart, and again by the next wave.  G = sm_count / 4 ... 2 x sm_count, at the same working sets,
next to the two-sharer and private curves (strides 4 and 8) as controls.

--nostore: --rows at G = sm_count / 2 and sm_count and the stride-4 / stride-8 curves, each with
and without the output store (block_stream store=False writes nothing): whether the written
lines take L2 space from the re-read ones.

--streams: --rows at G = sm_count / 2 with a GEMM's second operand (block_stream2: B's sequence
b // G, shared by the G blocks of one column, one B tile per iteration), stored and not, next to
the same launches without B; and the stride-4 / stride-8 launches unstored at 44 and 48 MiB (the
read-only curves' tails).

--pairs: as --rows, but `pair` neighbouring blocks read each sequence in step (block b reads
sequence (b // pair) mod G, G = sm_count / pair): the sharers of a wave are neighbours in launch
order, as in the stride-4 curve, but read each tile at the same iteration, as in --rows; next to
--rows at the same sharers per wave (G = sm_count / 2, sm_count / 4) as controls.

    python -m tileroof.gpu.l2probe --out DIR          # runs ncu over itself (--child)
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

WORKING_SETS_MIB = (16, 24, 28, 30, 32, 34, 36, 38, 40, 44, 48, 56)
TILE = (128, 64)              # fp16 -> 16 KiB
ITERS = 8
ROUNDS = 16
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct", "gpu__time_duration.sum")


def configs(sm_count: int, strides=None) -> list[dict]:
    rows, cols = TILE
    tile_bytes = rows * cols * 2
    out = []
    for stride in strides or (ITERS, ITERS // 2):
        for mib in WORKING_SETS_MIB:
            n_tiles = (mib << 20) // tile_bytes
            n_tiles -= n_tiles % 4
            out.append({"working_set_bytes": n_tiles * tile_bytes, "stride": stride,
                        "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=sm_count * ROUNDS, iters=ITERS,
                                       num_stages=2, stride=stride)})
    return out


ROWS_WORKING_SETS_MIB = (24, 28, 32, 36, 40, 48)


def _sequences(mib: int, groups: int) -> tuple[int, int]:
    """(tiles per sequence, tiles of A) for `groups` sequences making about `mib` MiB (A's tile
    count rounded up to block_stream's 4 tiles a row)."""
    rows, cols = TILE
    iters = max(int(round((mib << 20) / (groups * rows * cols * 2))), 1)
    n_tiles = groups * iters
    return iters, n_tiles + -n_tiles % 4


def configs_rows(sm_count: int) -> list[dict]:
    rows, cols = TILE
    tile_bytes = rows * cols * 2
    out = []
    for mib in ROWS_WORKING_SETS_MIB:
        for groups in (sm_count // 4, sm_count // 2, sm_count, 2 * sm_count):
            iters, n_tiles = _sequences(mib, groups)
            out.append({"working_set_bytes": groups * iters * tile_bytes, "stride": iters, "groups": groups,
                        "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=sm_count * ROUNDS, iters=iters,
                                       num_stages=2, stride=iters, groups=groups)})
    return out + [c for c in configs(sm_count) if c["working_set_bytes"] >> 20 in ROWS_WORKING_SETS_MIB]


def configs_pairs(sm_count: int) -> list[dict]:
    rows, cols = TILE
    tile_bytes = rows * cols * 2
    out = []
    for mib in ROWS_WORKING_SETS_MIB:
        for pair in (2, 4):
            groups = sm_count // pair
            iters, n_tiles = _sequences(mib, groups)
            for p_ in (pair, 1):
                out.append({"working_set_bytes": groups * iters * tile_bytes, "stride": iters, "groups": groups,
                            "pair": p_, "params": dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=sm_count * ROUNDS,
                                                       iters=iters, num_stages=2, stride=iters, groups=groups, pair=p_)})
    return out


def configs_nostore(sm_count: int) -> list[dict]:
    out = []
    for c in configs_rows(sm_count):
        if c.get("groups", sm_count // 2) not in (sm_count // 2, sm_count) or (c["working_set_bytes"] >> 20) >= 48:
            continue
        for store in (True, False):
            out.append({**c, "store": store, "params": {**c["params"], "store": store}})
    return out


def configs_streams(sm_count: int) -> list[dict]:
    rows, cols = TILE
    tile_bytes = rows * cols * 2
    out = []
    groups = sm_count // 2
    grid = sm_count * ROUNDS
    for mib in (24, 28, 32, 36, 40):
        iters, n_tiles = _sequences(mib, groups)
        b_tiles = -(-grid // groups) * iters
        b_tiles += -b_tiles % 4
        for store in (True, False):
            base = dict(n_tiles=n_tiles, rows=rows, cols=cols, grid=grid, iters=iters, num_stages=2, store=store)
            out.append({"working_set_bytes": groups * iters * tile_bytes, "stride": iters, "groups": groups,
                        "store": store, "b_stream": True, "b_bytes": b_tiles * tile_bytes,
                        "params": dict(base, b_tiles=b_tiles, groups=groups)})
            out.append({"working_set_bytes": groups * iters * tile_bytes, "stride": iters, "groups": groups,
                        "store": store, "b_stream": False, "params": dict(base, stride=iters, groups=groups)})
    for stride in (8, 4):
        for mib in (44, 48):
            c = next(c for c in configs(sm_count, (stride,)) if c["working_set_bytes"] >> 20 == mib)
            out.append({**c, "store": False, "params": {**c["params"], "store": False}})
    return out


def child() -> int:
    import torch

    from .profiling import profiled_launches
    from .tl_kernels import block_stream
    strides = tuple(int(x) for x in os.environ.get("L2PROBE_STRIDES", "").split(",") if x) or None
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    mode = os.environ.get("L2PROBE_ROWS")
    cfgs = (configs_pairs(sms) if mode == "pairs" else configs_nostore(sms) if mode == "nostore"
            else configs_streams(sms) if mode == "streams" else configs_rows(sms) if mode else configs(sms, strides))
    def args(p):
        a = [torch.randn((p["n_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda")]
        if "b_tiles" in p:
            a.append(torch.randn((p["b_tiles"] // 4 * p["rows"], 4 * p["cols"]), dtype=torch.float16, device="cuda"))
        return (*a, torch.empty((p["grid"] * p["rows"], p["cols"]), dtype=torch.float16, device="cuda"))

    if mode == "streams":
        from .tl_kernels import block_stream2
        # two jit functions: the launches with B, then those without, on one marker line
        two = [c for c in cfgs if c.get("b_stream")]
        one = [c for c in cfgs if not c.get("b_stream")]
        # one by one (2-3 s each): run 102-103 hung in par_compile here, while a single
        # block_stream2 compiles in 2.6 s and runs (benchmarks/diag_stream2.py)
        k2 = [block_stream2(**c["params"]) for c in two]
        k1 = [block_stream(**c["params"]) for c in one]
        done = (profiled_launches(block_stream2, two, args, None, kernels=k2)
                + profiled_launches(block_stream, one, args, None, kernels=k1))
        print("L2PROBE-CONFIGS " + json.dumps(done))
        return 0
    profiled_launches(block_stream, cfgs, args, "L2PROBE-CONFIGS")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--strides", default="", help="comma-separated strides (default 8,4); 8 / stride blocks share a tile")
    ap.add_argument("--rows", action="store_true", help="the row re-read pattern (see the module text)")
    ap.add_argument("--pairs", action="store_true", help="the row pattern, neighbours in step (see the module text)")
    ap.add_argument("--nostore", action="store_true", help="with and without the output store (see the module text)")
    ap.add_argument("--streams", action="store_true", help="the row pattern with a second operand (see the module text)")
    ap.add_argument("--timeout", type=float, default=540, help="seconds the profiled child may run")
    a = ap.parse_args(argv)
    if a.child:
        return child()
    from .profiling import profile_child
    from .provenance import base_provenance, write_record
    prov = base_provenance("l2probe", touch_gpu=True)
    t0 = time.time()
    env = os.environ.copy()
    if a.strides:
        env["L2PROBE_STRIDES"] = a.strides
    if a.rows or a.pairs or a.nostore or a.streams:
        env["L2PROBE_ROWS"] = ("pairs" if a.pairs else "nostore" if a.nostore else "streams" if a.streams
                               else "1")
    run = profile_child("tileroof.gpu.l2probe", METRICS, "L2PROBE-CONFIGS", a.timeout, None if a.ncu == "ncu" else a.ncu,
                        env)
    cfgs, rows = run["configs"], run["metrics"]
    results = []
    for c, m in zip(cfgs, rows):
        p = c["params"]
        issued = p["grid"] * p["iters"] * p["rows"] * p["cols"] * 2
        sharers = p["grid"] / ROUNDS / c["groups"] if c.get("groups") else p["iters"] // c["stride"]
        results.append({**c, "sharers": sharers, "issued_read_bytes": issued, "ncu": {k: m.get(k) for k in METRICS},
                        "dram_read_over_issued": (m.get("dram__bytes_read.sum") or 0) / issued})
    path = write_record(a.out, prov, t0, {"command": run["command"], "returncode": run["returncode"],
                                          "results": results, "configs_run": len(cfgs), "rows_profiled": len(rows),
                                          "stderr_tail": run["stderr_tail"]}, __doc__)
    for x in results:
        print(f"W {x['working_set_bytes'] / 2**20:5.1f} MiB stride {x['stride']} groups {x.get('groups', 0)} "
              f"pair {x.get('pair', 1)} store {x.get('store', True)} B {x.get('b_stream', False)}: DRAM read / issued "
              f"{x['dram_read_over_issued']:.3f}  ({x['ncu']['dram__bytes_read.sum'] / 1e6:.1f} MB)")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Add quantities measured by a later, partial calibration run (`gpu_run.sh --cal-only ...`) to a
committed device profile, each with the run it came from, and derive the model's per-block fixed
cost from the block_stream intercept.

    python benchmarks/merge_calibration.py [--device h200] RUN.json [RUN.json ...]

What is written into src/tileroof/devices/profiles/<device>.toml, before its [fitted.*] tables:
  [measured.tma_load_latency_us]  latency of one TMA tile load, L2-resident (tile_stream, 1 stage)
  [measured.block_overhead_us]    intercept of time per block vs iterations (block_stream, DRAM, 2 stages)
  [measured.block_fixed_us]       that intercept less the 16 KiB epilogue store at the SM's share of the
                                  profile's L2 bandwidth (the model charges epilogue stores separately):
                                  the fixed cost a pipelined block pays (start, first tile, exit)
  [measured.gemm_tile_tflops_fp16] T.gemm rate of a 128x256x64 tile, 2 warpgroups (gemm_loop)
  [measured.wgmma_min_n]          an m64nNk16 wgmma takes as long as one with N = wgmma_min_n when N is
                                  smaller: 128 x t(64x32x128 call) / t(64x128x128 call) (8 instructions
                                  each, one warpgroup, one block per SM), median over the run's repeats
  [measured.wgmma_accumulator_spill_factor]  128x256x64 on one warpgroup over 2 x 128x128x64 (gemm_loop):
                                  the slowdown of a gemm whose accumulator does not fit a thread's registers
  [measured.loop_alu_factor]      } from reduce_chain (row reduction + elementwise update in a dependent
  [measured.reduce_latency_ns]    } loop): time per iteration = reduce_latency + loop_alu_factor x the
                                    model's own CUDA-core time for that kernel (tileroof.analyze of the same
                                    TIR), least squares over the 1-warpgroup, 1-block-per-SM configs
  [measured.l2_reuse_hit_curve]   from an l2probe-*.json run (tileroof.gpu.l2probe): for tiles read by two
                                  blocks of a wave (stride 4), the share of re-reads served by L2 against
                                  the working set between two uses: (DRAM read - W) / (issued / 2 - W)
                                  missed; points (working set bytes, hit share), monotone non-increasing
Numbers are copied from the run files (medians over the runs' repeats); nothing is typed in.

    python benchmarks/merge_calibration.py [--device h200] RUN.json [RUN.json ...] [l2probe-*.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from tileroof import devices
from tileroof.gpu import tomlw

STORE_BYTES = 128 * 64 * 2          # block_stream's epilogue tile (tileroof.gpu.tl_kernels)


def _entry(res: dict, run: dict, fname: str) -> dict:
    prov = run["provenance"]
    return {"value": round(float(res["value"]), 4), "unit": res.get("unit"),
            "method": f"{res.get('method')} [run {fname}, {prov.get('gpu')}, driver {prov.get('driver')}, "
                      f"{prov.get('date_utc')}, tilelang {prov.get('tilelang')}, commit {prov.get('tileroof_commit')}]",
            "repeats": [round(v, 4) for v in res.get("repeats", [])],
            "spread_pct": None if res.get("spread_pct") is None else round(res["spread_pct"], 3),
            "reproduces_within_5pct": res.get("reproduces_within_5pct")}


def _hit_curve(run: dict, fname: str) -> dict:
    """Hit share of re-reads against the working set, from the shared-tile (stride 4) rows."""
    pts = []
    for r in sorted((x for x in run["results"] if x["stride"] == 4), key=lambda x: x["working_set_bytes"]):
        w, issued = r["working_set_bytes"], r["issued_read_bytes"]
        dram = r["ncu"]["dram__bytes_read.sum"]
        miss = min(max((dram - w) / (issued / 2 - w), 0.0), 1.0)
        pts.append([w, 1.0 - miss])
    for i in range(1, len(pts)):               # a larger working set never hits more
        pts[i][1] = min(pts[i][1], pts[i - 1][1])
    prov = run["provenance"]
    return {"value": [[int(w), round(h, 4)] for w, h in pts], "unit": "[bytes, hit share]",
            "method": "tileroof.gpu.l2probe: block_stream reading 16 KiB tiles of a W-byte working set, each tile "
                      "by two neighbouring blocks per pass, 16 waves; Nsight Compute DRAM read bytes (cold L2 "
                      "before the launch); hit share of re-reads = 1 - (DRAM read - W) / (issued / 2 - W), made "
                      f"non-increasing [run {fname}, {prov.get('gpu')}, {prov.get('date_utc')}, commit "
                      f"{prov.get('tileroof_commit')}]"}


def _reduce_fit(res: dict, run: dict, fname: str, dev) -> dict:
    """Least squares of measured time per iteration against the model's CUDA-core time per
    iteration of the same reduce_chain kernel (analysed here from its TIR, no GPU needed)."""
    import numpy as np

    import tileroof
    from tileroof.gpu.tl_kernels import reduce_chain
    fits = []
    for rep in res["raw"]:
        xs, ys = [], []
        for c in rep.get("configs", []):
            p = c["params"]
            if c.get("per_iter_s") is None or c["threads"] != 128 or c["blocks_per_sm"] != 1:
                continue
            r = tileroof.analyze(reduce_chain, device=dev, **{**p, "iters": 100})
            cuda = sum(v for (u, _), v in r.counts.flops.items() if u == "cuda")
            xs.append(cuda / 100 / p["grid"] / (dev.cuda_rate("fp32") / dev.sm_count))
            ys.append(c["per_iter_s"])
        if len(xs) >= 3:
            fits.append(np.polyfit(xs, ys, 1))
    if not fits:
        return {}
    k = [float(f[0]) for f in fits]
    a = [float(f[1]) * 1e9 for f in fits]
    prov = run["provenance"]
    src = f"[reduce_chain, run {fname}, {prov.get('gpu')}, {prov.get('date_utc')}, commit {prov.get('tileroof_commit')}]"

    def entry(vals, unit, what):
        med = statistics.median(vals)
        sp = (max(vals) - min(vals)) / abs(med) * 100 if med else 0.0
        return {"value": round(med, 4), "unit": unit, "method": f"{what} {src}", "repeats": [round(v, 4) for v in vals],
                "spread_pct": round(sp, 3), "reproduces_within_5pct": sp <= 5.0}
    return {
        "loop_alu_factor": entry(k, "ratio", "slope of time per iteration against the model's CUDA-core time per "
                                 "iteration (FP32 peak of one SM), 64/128 x 32/64/128 fragments, 128 threads, 1 block per SM"),
        "reduce_latency_ns": entry(a, "ns", "intercept of the same line: the time one row reduction adds"),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--device", default="h200")
    a = ap.parse_args(argv)
    prof = devices.profiles_dir() / f"{a.device}.toml"
    base = devices.load(a.device)
    tables = {}
    for path in a.runs:
        run = json.loads(path.read_text())
        if run.get("schema") == "tileroof.l2probe/1":
            tables["l2_reuse_hit_curve"] = _hit_curve(run, path.name)
            continue
        for key in ("tma_load_latency_us", "block_overhead_us", "gemm_tile_tflops_fp16"):
            res = (run.get("results") or {}).get(key)
            if res and res.get("value") is not None:
                if key in tables and key == "block_overhead_us":
                    # a later run of the same benchmark: pool the repeats of both runs
                    prev = tables[key]
                    reps = prev["repeats"] + [round(v, 4) for v in res.get("repeats", [])]
                    res = {**res, "repeats": reps, "value": statistics.median(reps),
                           "spread_pct": (max(reps) - min(reps)) / statistics.median(reps) * 100,
                           "reproduces_within_5pct": (max(reps) - min(reps)) / statistics.median(reps) <= 0.05,
                           "method": f"{res.get('method')}; repeats pooled with {prev['method'].split('[run ')[-1][:-1]}"}
                tables[key] = _entry(res, run, path.name)
                if key == "gemm_tile_tflops_fp16":
                    ns = []
                    for rep in res.get("raw", []):
                        t = {(tuple(c["shape"]), c["threads"], c["blocks_per_sm"]): c.get("per_call_s")
                             for c in rep.get("configs", [])}
                        a, b = t.get(((64, 32, 128), 128, 1)), t.get(((64, 128, 128), 128, 1))
                        if a and b:
                            ns.append(128 * a / b)
                    spill = []
                    for rep in res.get("raw", []):
                        t = {(tuple(c["shape"]), c["threads"], c["blocks_per_sm"]): c.get("per_call_s")
                             for c in rep.get("configs", [])}
                        a, b = t.get(((128, 256, 64), 128, 1)), t.get(((128, 128, 64), 128, 1))
                        if a and b:
                            spill.append(a / (2 * b))
                    if spill:
                        tables["wgmma_accumulator_spill_factor"] = {
                            "value": round(statistics.median(spill), 3), "unit": "ratio",
                            "method": "time per T.gemm call of 128x256x64 on one warpgroup (a 256-register fp32 "
                                      "accumulator per thread, more than the 240 a consumer has) over twice that of "
                                      f"128x128x64 on one warpgroup [gemm_loop, run {path.name}]",
                            "repeats": [round(v, 3) for v in spill],
                            "spread_pct": round((max(spill) - min(spill)) / statistics.median(spill) * 100, 3),
                            "reproduces_within_5pct": (max(spill) - min(spill)) / statistics.median(spill) <= 0.05}
                    if ns:
                        tables["wgmma_min_n"] = {
                            "value": round(statistics.median(ns), 2), "unit": "columns",
                            "method": "128 x (time per T.gemm call of 64x32x128) / (time per call of 64x128x128), one "
                                      "warpgroup, one block per SM, both 8 m64nNk16 wgmma instructions per call "
                                      f"[gemm_loop, run {path.name}]",
                            "repeats": [round(v, 2) for v in ns],
                            "spread_pct": round((max(ns) - min(ns)) / statistics.median(ns) * 100, 3),
                            "reproduces_within_5pct": (max(ns) - min(ns)) / statistics.median(ns) <= 0.05}
        res = (run.get("results") or {}).get("reduce_latency_us")
        if res and res.get("raw"):
            tables.update(_reduce_fit(res, run, path.name, base))
    if "block_overhead_us" in tables:
        b = tables["block_overhead_us"]
        store_s = STORE_BYTES / (base.l2_bw / base.sm_count)
        tables["block_fixed_us"] = {
            "value": round(b["value"] - store_s * 1e6, 4), "unit": "us",
            "method": f"block_overhead_us ({b['value']} us) less the {STORE_BYTES}-byte epilogue store at the SM's "
                      f"share of the profile's L2 bandwidth ({base.l2_bw / 1e9:.0f} GB/s / {base.sm_count} SMs = "
                      f"{store_s * 1e6:.3f} us)",
            "spread_pct": b["spread_pct"], "reproduces_within_5pct": b["reproduces_within_5pct"]}
    text = prof.read_text()
    head, sep, fitted = text.partition("\n[fitted.")
    for key in tables:                       # replace earlier copies of the same tables
        marker = f"\n[measured.{key}]\n"
        while marker in head:
            i = head.index(marker)
            j = head.find("\n[", i + 1)
            head = head[:i] + (head[j:] if j >= 0 else "\n")
    add = tomlw.dumps({"measured": {k: {kk: vv for kk, vv in v.items() if vv is not None} for k, v in tables.items()}})
    prof.write_text(head.rstrip() + "\n\n" + add.strip() + "\n" + (sep + fitted if sep else ""))
    for k, v in tables.items():
        print(f"{k} = {v['value']} {v['unit']}")
    print(f"wrote {prof}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Model constants derived from calibration microbenchmark records (no GPU needed): used by
`calibrate` when it writes a profile and by benchmarks/merge_calibration.py when a partial run is
merged into a committed one.  Every function reads recorded numbers and returns profile entries
({"value", "unit", "method", "repeats", "spread_pct", "reproduces_within_5pct"})."""
from __future__ import annotations

import statistics

from .stats import spread_pct

STORE_BYTES = 128 * 64 * 2          # block_stream's epilogue tile (tileroof.gpu.tl_kernels)


def _entry(vals: list, unit: str, method: str, digits: int = 4) -> dict:
    med = statistics.median(vals)
    sp = (max(vals) - min(vals)) / abs(med) * 100 if med else 0.0
    return {"value": round(med, digits), "unit": unit, "method": method, "repeats": [round(v, digits) for v in vals],
            "spread_pct": round(sp, 3), "reproduces_within_5pct": sp <= 5.0}


def _per_call(rep: dict) -> dict:
    return {(tuple(c["shape"]), c["threads"], c["blocks_per_sm"]): c.get("per_call_s") for c in rep.get("configs", [])}


def gemm_shape_entries(res: dict, where: str) -> dict:
    """From gemm_loop: wgmma_min_n (an m64nNk16 with N below it takes as long as N = it) and the
    slowdown of a gemm whose accumulator exceeds a thread's registers."""
    ns, spill = [], []
    for rep in res.get("raw", []):
        t = _per_call(rep)
        a, b = t.get(((64, 32, 128), 128, 1)), t.get(((64, 128, 128), 128, 1))
        if a and b:
            ns.append(128 * a / b)
        a, b = t.get(((128, 256, 64), 128, 1)), t.get(((128, 128, 64), 128, 1))
        if a and b:
            spill.append(a / (2 * b))
    out = {}
    if ns:
        out["wgmma_min_n"] = _entry(ns, "columns", "128 x (time per T.gemm call of 64x32x128) / (time per call of "
                                    "64x128x128), one warpgroup, one block per SM, both 8 m64nNk16 wgmma "
                                    f"instructions per call [gemm_loop, {where}]", 2)
    if spill:
        out["wgmma_accumulator_spill_factor"] = _entry(
            spill, "ratio", "time per T.gemm call of 128x256x64 on one warpgroup (a 256-register fp32 accumulator "
            "per thread, more than the 240 a consumer has) over twice that of 128x128x64 on one warpgroup "
            f"[gemm_loop, {where}]", 3)
    return out


def block_fixed_entry(block_overhead: dict, l2_bw: float, sm_count: int) -> dict:
    """block_stream's intercept less its 16 KiB epilogue store at the SM's share of L2 bandwidth."""
    store_s = STORE_BYTES / (l2_bw / sm_count)
    v = block_overhead["value"]
    return {"value": round(v - store_s * 1e6, 4), "unit": "us",
            "method": f"block_overhead_us ({v} us) less the {STORE_BYTES}-byte epilogue store at the SM's share of "
                      f"the L2 bandwidth ({l2_bw / 1e9:.0f} GB/s / {sm_count} SMs = {store_s * 1e6:.3f} us)",
            "spread_pct": block_overhead.get("spread_pct"),
            "reproduces_within_5pct": block_overhead.get("reproduces_within_5pct")}


def reduce_entries(res: dict, dev, where: str) -> dict:
    """Least squares of reduce_chain's time per iteration against the model's own CUDA-core time
    per iteration of the same kernel (analysed from its TIR): slope = loop_alu_factor, intercept
    = reduce_latency_ns.  One-warpgroup, one-block-per-SM configs."""
    import numpy as np

    import tileroof
    from .tl_kernels import reduce_chain
    k_, a_ = [], []
    for rep in res.get("raw", []):
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
            k, a = np.polyfit(xs, ys, 1)
            k_.append(float(k))
            a_.append(float(a) * 1e9)
    if not k_:
        return {}
    return {"loop_alu_factor": _entry(k_, "ratio", "slope of time per iteration against the model's CUDA-core time "
                                      "per iteration (FP32 peak of one SM), 64/128 x 32/64/128 fragments, 128 "
                                      f"threads, 1 block per SM [reduce_chain, {where}]"),
            "reduce_latency_ns": _entry(a_, "ns", f"intercept of the same line: the time one row reduction adds "
                                        f"[reduce_chain, {where}]")}


L2PROBE_MODES = ("--rows", "--pairs", "--nostore", "--streams")


def is_hit_curve_run(run: dict) -> bool:
    """An l2probe run of the default launches (the profile's hit curve), not one of the modes that
    study other patterns (--rows, --pairs, --nostore, --streams: benchmarks/l2_sharers.py reads those)."""
    argv = (run.get("provenance") or {}).get("argv") or []
    return run.get("schema") == "tileroof.l2probe/1" and not any(a in L2PROBE_MODES for a in argv)


def hit_curve_entry(run: dict, where: str) -> dict:
    """l2probe: share of re-reads served by L2 against the working set, for tiles read by two
    blocks per pass: 1 - (DRAM read - W) / (issued / 2 - W), made non-increasing (the default
    launches' stride-4 rows: stored, one operand, no groups)."""
    pts = []
    rows = [x for x in run["results"] if x["stride"] == 4 and not x.get("groups") and x.get("store", True)
            and not x.get("b_stream")]
    for r in sorted(rows, key=lambda x: x["working_set_bytes"]):
        w, issued = r["working_set_bytes"], r["issued_read_bytes"]
        miss = min(max((r["ncu"]["dram__bytes_read.sum"] - w) / (issued / 2 - w), 0.0), 1.0)
        pts.append([w, 1.0 - miss])
    for i in range(1, len(pts)):
        pts[i][1] = min(pts[i][1], pts[i - 1][1])
    return {"value": [[int(w), round(h, 4)] for w, h in pts], "unit": "[bytes, hit share]",
            "method": "tileroof.gpu.l2probe: block_stream reading 16 KiB tiles of a W-byte working set, each tile "
                      "by two neighbouring blocks per pass, 16 waves; Nsight Compute DRAM read bytes (cold L2 "
                      "before the launch); hit share of re-reads = 1 - (DRAM read - W) / (issued / 2 - W), made "
                      f"non-increasing [{where}]"}


def stream_table_entry(res: dict, where: str) -> dict:
    """tile_stream, DRAM-fed: time per pipelined iteration of one block per SM streaming tiles it
    reads once, by tile bytes and stages (median over the repeats)."""
    tab: dict = {}
    for rep in res.get("raw", []):
        for c in rep.get("configs", []):
            if c.get("where") == "dram" and c.get("per_iter_s"):
                tab.setdefault((c["tile_bytes"], c["params"]["num_stages"]), []).append(c["per_iter_s"])
    rows = [[b, s, round(statistics.median(v) * 1e9, 1)] for (b, s), v in sorted(tab.items())]
    return {"value": rows, "unit": "[tile bytes, stages, ns per iteration]",
            "method": "tile_stream (tileroof.gpu.tl_kernels), every tile read once from DRAM, one warp-specialised "
                      f"block per SM, consumer reads one row per tile; median over the repeats [{where}]"}


PACE_MIN_KERNEL_NS = 400_000     # shorter runs: per-SM means over too few blocks, launch skew dominates


def per_sm_block_means(start_ns, end_ns, smid) -> dict:
    """SM id -> the mean duration of the blocks that SM ran."""
    per_sm: dict = {}
    for s, e, sm in zip(start_ns, end_ns, smid):
        per_sm.setdefault(sm, []).append(e - s)
    return {sm: statistics.fmean(v) for sm, v in per_sm.items()}


def sm_pace(start_ns, end_ns, smid) -> dict:
    """How evenly the SMs ran identical blocks: the mean block time of each SM, and the relative
    std and range of those means."""
    means = list(per_sm_block_means(start_ns, end_ns, smid).values())
    mean = statistics.fmean(means)
    return {"std_over_mean": statistics.pstdev(means) / mean, "range_over_mean": (max(means) - min(means)) / mean,
            "sms": len(means)}


def pace_spreads(doc: dict) -> list:
    """(config, relative std of the SMs' mean block time) for every kernel of a timeline run
    (tileroof.gpu.timeline) that ran at least PACE_MIN_KERNEL_NS, from its per-block records."""
    return [(r["params"], sm_pace(r["start_ns"], r["end_ns"], r["smid"])["std_over_mean"])
            for r in doc.get("results", [])
            if "start_ns" in r and max(r["end_ns"]) - min(r["start_ns"]) >= PACE_MIN_KERNEL_NS]


# per-SM pace spreads: a launch keeps pace below EVEN_PACE and its SMs have split into the fast
# and slow groups (benchmarks/sm_asymmetry.py: slow/fast block time 1.1-1.26) from SPLIT_PACE up;
# between them (1.9-4.1 % seen: 3 stages, block_K 32 with 6, a B that fits L2) the split is partial
EVEN_PACE, SPLIT_PACE = 0.015, 0.05


def pace_entries(docs: list, where: str) -> dict:
    """sm_pace_spread (typical) and sm_pace_spread_drifting from timeline runs: the median per-SM
    pace spread of the kernels that keep pace (< EVEN_PACE) and of those whose SMs split
    (>= SPLIT_PACE); partial splits in between are in neither."""
    vals = sorted(v for d in docs for _, v in pace_spreads(d) if v > 0)
    low = [v for v in vals if v < EVEN_PACE]
    high = [v for v in vals if v >= SPLIT_PACE]
    if not low:
        return {}
    method = ("relative std over SMs of the mean block time, per kernel of tileroof.gpu.timeline (the corpus GEMM "
              "recording each block's start, end and SM); median of the {} group, of "
              f"{len(vals)} kernels ({len(vals) - len(low) - len(high)} partial splits between "
              f"{EVEN_PACE:.1%} and {SPLIT_PACE:.0%} left out) [{where}]")

    def entry(group, name):
        return {"value": round(statistics.median(group), 4), "unit": "1", "method": method.format(name),
                "kernel_values": [round(v, 4) for v in group]}
    out = {"sm_pace_spread": entry(low, f"even (< {EVEN_PACE:.1%}: {len(low)})")}
    if high:
        out["sm_pace_spread_drifting"] = entry(high, f"split (>= {SPLIT_PACE:.0%}: {len(high)})")
    return out


def timeline_kind(doc: dict) -> str:
    """What a timeline run measured: "attention" (set 9: flash-attention blocks' phases), "clock"
    (set 10: set 8's launches again with the loop's SM clock apart; these two feed only
    tensor_clock_entry), "wave" (sets 11 and 12: one-wave launches with the first gemm's time,
    which feed wave_store_entries), "epilogue" (set 8: the GEMM epilogue, which feeds
    epilogue_entries and tensor_clock_entry), "stagger" (sets 13-14 and 16: the grouped GEMM's loop, cp.async
    and TMA, and upstream's grouped GEMM, read by benchmarks/stagger.py; they feed
    stagger_entry), "iters" (set 15: thread 0's
    timer after every iteration; no profile entry) or "pace" (the other sets,
    which feed pace_entries)."""
    results = doc.get("results", [])
    if any(r.get("kind") in ("cpasync", "tma") for r in results):
        return "stagger"
    if any(r.get("kind") == "iters" for r in results):
        return "iters"
    if any("seq_len" in r.get("params", {}) for r in results):
        return "attention"
    if any("first_gemm_ns_median" in r for r in results):
        return "wave"
    if any("sm_clock_loop_hz_median" in r for r in results):
        return "clock"
    if any("epilogue_ns_median" in r for r in results):
        return "epilogue"
    return "pace"


def stagger_levels(r: dict, sms: int) -> dict:
    """One launch of timeline sets 13-14 (per-block start / end / SM): blocks per SM and warps per
    SM; the first wave's end times over the median block time T by the block's place on its SM
    (level 0: the first block the SM received); the level spacing (the mean step between levels);
    and for blocks d launches apart in one later wave, the median start gap over T at d = 32,
    gx / 2 and gx (blocks gx apart share an A tile) with c = gap x slots / d (1: starts spread
    evenly over a block time, 0: in step)."""
    s, e, sm = r["start_ns"], r["end_ns"], r["smid"]
    R = r["resident_blocks"]
    gx = r["grid"][0]
    n = len(s)
    T = statistics.median(b - a for a, b in zip(s, e))
    per_sm = max(R // sms, 1)
    by_sm: dict = {}
    for b in range(min(R, n)):
        by_sm.setdefault(sm[b], []).append((s[b], b, e[b]))
    levels = [[] for _ in range(per_sm)]
    for v in by_sm.values():
        for i, (_, _, end) in enumerate(sorted(v)[:per_sm]):
            levels[i].append(end / T)
    lv = [statistics.median(x) for x in levels if x]
    spacing = (lv[-1] - lv[0]) / (len(lv) - 1) if len(lv) > 1 else 0.0
    gaps = {}
    sharer_gaps = []
    for d in sorted({32, gx // 2, gx}):
        g = [(s[b] - s[b - d]) / T for b in range(R, n) if (b - d) // R == b // R]
        if g:
            med = statistics.median(g)
            gaps[d] = (med, med * R / d)
            if d == gx and med > 0:
                sharer_gaps = [x / med for x in g]
    return {"per_sm": per_sm, "warps_per_sm": r["params"]["threads"] // 32 * per_sm, "T_us": T / 1e3, "levels": lv,
            "spacing": spacing, "gaps": gaps, "sharer_gaps": sharer_gaps}


def stagger_entry(docs: list, where: str) -> dict:
    """From timeline sets 13-14, per launch with two or more blocks per SM:
    block_stagger_per_resident_warp, c (stagger_levels: the median start gap of two blocks gx
    launches apart -- the sharers of an A tile -- in one later wave, x slots / gx) over the blocks
    per SM times the warps resident on the SM, the median over launches (the quantity
    memory.drift_misses uses: sharers d launches apart start d / slots x c block times apart);
    block_stagger_gap_deciles, the deciles of those gaps over their launch's median, per decile the
    median over the launches: how evenly one launch's sharers are spaced (pooling the gaps instead
    mixes the heavy tails of the 128-thread launches, p90 / median 3-7, into every launch; the
    256-thread ones have 1.3-1.9)."""
    vals, spacing, per_launch = [], [], []
    for d in docs:
        for r in d.get("results", []):
            if "start_ns" not in r:
                continue
            a = stagger_levels(r, d.get("sm_count", 132))
            gx = r["grid"][0]
            if a["per_sm"] >= 2 and gx in a["gaps"] and a["sharer_gaps"]:
                vals.append(a["gaps"][gx][1] / (a["per_sm"] * a["warps_per_sm"]))
                spacing.append(a["spacing"] / a["warps_per_sm"])
                g = sorted(a["sharer_gaps"])
                per_launch.append([g[min(int(q * len(g)), len(g) - 1)] for q in (0.05 + 0.1 * i for i in range(10))])
    if not vals:
        return {}
    deciles = [statistics.median(col) for col in zip(*per_launch)]
    return {"block_stagger_per_resident_warp": {
        "value": round(statistics.median(vals), 5), "unit": "1 (block times, per block and resident warp per SM)",
        "method": ("tileroof.gpu.timeline sets 13, 14 and 16 (the grouped GEMM's loop, cp.async without producer "
                   "warps, and upstream's grouped GEMM; benchmarks/stagger.py): blocks sharing an SM finish in arrival "
                   "order, so in later waves the blocks sharing an A tile (gx launches apart) start staggered; per "
                   "launch of two or more blocks per SM c = their median start gap over the median block time x slots / gx, over the blocks "
                   f"per SM x the warps resident on the SM; median of {len(vals)} launches [{where}]"),
        "launch_values": [round(v, 5) for v in sorted(vals)],
        "level_spacing_per_warp": [round(v, 5) for v in sorted(spacing)]},
        "block_stagger_gap_deciles": {
        "value": [round(v, 3) for v in deciles], "unit": "1 (start gap over its launch's median, deciles 5 ... 95 %)",
        "method": ("the same launches' start gaps of blocks gx launches apart in one later wave, each over its "
                   f"launch's median; per decile the median over the {len(vals)} launches [{where}]"),
        "launch_deciles": [[round(v, 3) for v in row] for row in per_launch]}}


def chain_hop_entry(run: dict, where: str) -> dict:
    """gemm_shared_hop_cycles from a gemm_pipe --chain run (schema tileroof.gemm_chain/1): what a
    gemm fed by another gemm of its iteration through shared memory (a T.copy of the fragment)
    adds to the iteration besides its own gemm -- per chain length n, (cycles with n - 1 T.copy
    hops - cycles with n accumulated gemms) / (n - 1); the median over n."""
    pts = {(p["n_gemm"], p["hop"]): p["per_iter_s"] * p["sm_clock_hz"] for p in run.get("points", [])
           if p.get("sm_clock_hz")}
    vals = [(pts[(n, "copy")] - pts[(n, "none")]) / (n - 1) for n in sorted({n for n, _ in pts})
            if n > 1 and (n, "copy") in pts and (n, "none") in pts]
    if not vals:
        return {}
    return {"gemm_shared_hop_cycles": {
        "value": round(statistics.median(vals), 1), "unit": "SM cycles",
        "method": ("tileroof.gpu.gemm_pipe --chain: 1-4 gemms of 64x64x64 an iteration without warp specialisation "
                   "(128 threads, one block per SM, L2-resident merged tiles), accumulated into one fragment or each "
                   "fed by the previous one through shared memory (T.copy); per chain length n the cycles per "
                   f"iteration with the hops less those accumulated, over n - 1; median of {len(vals)} [{where}]"),
        "per_chain": [round(v, 1) for v in vals]}}


def epilogue_entries(docs: list, where: str) -> dict:
    """accumulator_store_ns_per_request and accumulator_store_queue_requests from timeline runs that
    timed the epilogue (set 8: the GPU timer after the main loop and after the store): a block
    storing its accumulator straight from the fragment (T.copy(C_local, C)) spends, after its loop,
    s x max(R - R0, 0) with R its L2 write requests (one per row segment of
    counts.ACCUM_ROW_SEGMENT elements): least squares of the per-config median epilogue on R,
    slope s, R0 where the line crosses zero (requests a block queues for free)."""
    from ..counts import ACCUM_ROW_SEGMENT
    pts = [(r["params"]["block_M"] * r["params"]["block_N"] / ACCUM_ROW_SEGMENT, r["epilogue_ns_median"])
           for d in docs for r in d.get("results", [])
           if r.get("epilogue_ns_median") is not None and r["params"].get("epilogue", "direct") == "direct"]
    if len({x for x, _ in pts}) < 2:
        return {}
    n = len(pts)
    mx, my = sum(x for x, _ in pts) / n, sum(y for _, y in pts) / n
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    queue = max(mx - my / slope, 0.0)
    by_r = {}
    for x, y in pts:
        by_r.setdefault(int(x), []).append(y)
    seen = "; ".join(f"{r} requests: {statistics.median(v):.0f} ns" for r, v in sorted(by_r.items()))
    method = ("tileroof.gpu.timeline set 8: the corpus GEMM storing its fp16 accumulator straight from the fragment, "
              "GPU timer after the main loop and after the store (thread 0); median per config over its blocks, "
              f"{n} configs (5 tiles, one and many waves, K 256 and 2048: {seen}); least squares of the epilogue on "
              f"the block's L2 write requests (one per {ACCUM_ROW_SEGMENT}-element row segment) [{where}]")
    return {"accumulator_store_ns_per_request": {"value": round(slope, 4), "unit": "ns", "method": method},
            "accumulator_store_queue_requests": {"value": round(queue, 1), "unit": "requests",
                                                 "method": method + "; the requests where the line crosses zero"}}


def wave_store_entries(docs: list, where: str, full_wave: float = 0.9) -> dict:
    """accumulator_store_requests_per_us_all from timeline runs of one-wave launches (set 11): when
    the blocks of a full wave (at least `full_wave` of the SMs, one block each) reach their
    epilogue together, their L2 write requests (one per counts.ACCUM_ROW_SEGMENT-element row
    segment of the fragment) leave at a rate the whole GPU shares: the wave's requests over the
    time from its first block's loop end to its last block's end; median over the launches."""
    from ..counts import ACCUM_ROW_SEGMENT
    pts = []
    for d in docs:
        sms = d.get("sm_count") or 0
        for r in d.get("results", []):
            p = r.get("params", {})
            n = len(r.get("end_ns") or [])
            if not (sms and n >= full_wave * sms and n <= sms and r.get("loop_end_ns")) \
                    or p.get("epilogue", "direct") != "direct":
                continue
            span = max(r["end_ns"]) - min(r["loop_end_ns"])
            req = n * p["block_M"] * p["block_N"] / ACCUM_ROW_SEGMENT
            if span > 0:
                pts.append((f"{p['block_M']}x{p['block_N']} K{p['K']}", req / span * 1e3))
    if not pts:
        return {}
    seen = "; ".join(f"{k}: {v:.0f}" for k, v in pts)
    method = ("tileroof.gpu.timeline set 11: one-wave launches of the corpus GEMM (one block per SM on at least "
              f"{full_wave:.0%} of the SMs) storing the fp16 accumulator straight from the fragment: the wave's L2 "
              f"write requests (one per {ACCUM_ROW_SEGMENT}-element row segment) over the time from the first block's "
              f"loop end to the last block's end; median of {len(pts)} launches ({seen} requests per us) [{where}]")
    return {"accumulator_store_requests_per_us_all": {
        "value": round(statistics.median(v for _, v in pts), 1), "unit": "requests/us", "method": method,
        "kernel_values": [round(v, 1) for _, v in pts]}}


def division_entry(run: dict, where: str) -> dict:
    """fp32_division_ns_per_thread from a divchain run: the time per iteration of the division
    loop over the elements each thread holds (the multiply control, 1-8 % of it, is reported, not
    subtracted), median over its configurations (1, 2 and 4 warps per scheduler)."""
    vals = [r["div_ns_per_thread_element"] for r in run.get("results", []) if r.get("div_ns_per_thread_element")]
    if not vals:
        return {}
    seen = "; ".join(f"{r['M']}x{r['N']} {r['threads']} threads: {r['div_ns_per_thread_element']:.1f} "
                     f"(mul {r.get('mul_ns_per_thread_element', float('nan')):.1f})" for r in run["results"]
                     if r.get("div_ns_per_thread_element"))
    method = ("tileroof.gpu.divchain: a gemm-layout fp32 fragment divided element-wise by its row's value in a "
              "serial loop (IEEE division, as TileLang emits it), one block per SM; (time at 40 - time at 8 "
              f"iterations) / 32 / elements per thread, median over {len(vals)} configs ({seen} ns) [{where}]")
    return {"fp32_division_ns_per_thread": {"value": round(statistics.median(vals), 3), "unit": "ns",
                                            "method": method, "kernel_values": [round(v, 3) for v in vals]}}


UNCONTENDED_BLOCKS = (1, 8, 33)    # blockstream grids that leave the memory system to those blocks


def block_stream_entry(run: dict, where: str) -> dict:
    """block_stream_gbps from a blockstream run: one block's stream rate (bytes over the slope of
    kernel time against the block's bytes), median over the element-wise add and the tile copy
    at the grids of UNCONTENDED_BLOCKS blocks (one an SM, the rest of the GPU idle); the full-wave
    grid's rate is reported beside it, not used."""
    rows = [r for r in run.get("results", []) if r.get("stream_bps")]
    vals = [r["stream_bps"] for r in rows if r["blocks"] in UNCONTENDED_BLOCKS]
    if not vals:
        return {}
    seen = "; ".join(f"{r['kernel']} G={r['blocks']}: {r['stream_bps'] / 1e9:.1f}" for r in rows)
    method = ("tileroof.gpu.blockstream: the corpus element-wise add (fp16, element loads) and tile copy "
              f"(global -> shared -> global), {run.get('threads')} threads, {run.get('cols')} columns and "
              f"{'/'.join(map(str, run.get('rows', [])))} rows a block, G blocks of one wave; per kernel and G "
              "the block's bytes over the slope of event-timed kernel time (L2 flushed) against them; median "
              f"over the two kernels at G = {', '.join(map(str, UNCONTENDED_BLOCKS))} ({seen} GB/s) [{where}]")
    return {"block_stream_gbps": {"value": round(statistics.median(vals) / 1e9, 2), "unit": "GB/s",
                                  "method": method, "kernel_values": [round(v / 1e9, 2) for v in vals]}}


def block_start_entry(run: dict, where: str) -> dict:
    """block_start_interval_ns from a blockrate run: one SM's interval between two block starts, the
    slope of kernel time against the number of blocks times the SM count, for blocks that store one
    element a thread (per_thread 0: their own memory time least); the median over the thread
    counts, each thread count's value and the copying blocks' beside it."""
    if run.get("mode", "touch") != "touch":      # the bounce series measures a block's shared phase
        return {}
    rows = run.get("results", [])
    vals = [r["interval_s"] for r in rows if r["per_thread"] == 0 and r.get("interval_s", 0) > 0]
    if not vals:
        return {}
    seen = "; ".join(f"{r['threads']} threads x {r['per_thread']}: {r['interval_s'] * 1e9:.0f}" for r in rows)
    method = ("tileroof.gpu.blockrate: 1-D grids of G = SMs x " + "/".join(map(str, run.get("wave_multiples", [])))
              + " blocks; each thread stores one fp16 element (per_thread 0) or copies "
              + " / ".join(str(k) for k in run.get("per_thread", []) if k) + " of them; per (threads, "
              "per_thread) the least-squares slope of event-timed kernel time (L2 flushed) against G, times the SM "
              f"count; median over the thread counts of the store-only blocks (all, ns: {seen}) [{where}]")
    floor = statistics.median(vals)
    out = {"block_start_interval_ns": {"value": round(floor * 1e9, 2), "unit": "ns",
                                       "method": method, "kernel_values": [round(v * 1e9, 2) for v in vals]}}
    # blocks of so many warps that the SM takes longer than the block floor to launch them: their
    # interval over their warps is one warp launch (run 144, H100: 1024 threads 137.4 ns, 32 warps)
    wide = [r for r in rows if r["per_thread"] == 0 and r.get("interval_s", 0) > WARP_BOUND_MARGIN * floor]
    if wide:
        per_warp = [r["interval_s"] / (r["threads"] // 32) for r in wide]
        out["warp_start_interval_ns"] = {
            "value": round(statistics.median(per_warp) * 1e9, 3), "unit": "ns",
            "method": ("tileroof.gpu.blockrate, the store-only blocks (per_thread 0) whose interval between block "
                       f"starts exceeds {WARP_BOUND_MARGIN:g}x the block floor ({floor * 1e9:.1f} ns): their interval "
                       "over their warps, median ("
                       + "; ".join(f"{r['threads']} threads: {r['interval_s'] * 1e9:.1f} ns" for r in wide)
                       + f") [{where}]"),
            "kernel_values": [round(v * 1e9, 3) for v in per_warp]}
    return out


WARP_BOUND_MARGIN = 1.2    # an interval this far above the block floor is set by the block's warps


SHORT_LAUNCH_US = 50.0     # launches this short finish before the power limiter pulls the clock down


def tensor_clock_entry(docs: list, where: str) -> dict:
    """tensor_boost_clock_mhz from timeline runs that read each block's SM cycles: the median SM
    clock (cycles over GPU-timer time, per block, median per launch) of launches shorter than
    SHORT_LAUNCH_US, over their main loop where the run read it apart (set 10), else over blocks
    that keep their tensor cores busy to the end -- the GEMMs whose accumulator goes out through
    shared memory (set 8) and the flash-attention launches (set 9); a GEMM storing straight from
    its fragments spends up to half its block in the store, at a higher clock (set 10: epilogues
    at 1702-1943 MHz, loops at 1688-1893).  The highest clock tensor work runs at, inside the
    timing loop (L2 flushed before every run); the datasheet's tensor peaks assume 1830 MHz."""
    pts = []
    for d in docs:
        for r in d.get("results", []):
            # the loop's own clock where the run read it (set 10), else the whole block's, which
            # only blocks that stay tensor-bound to their end give
            clk = r.get("sm_clock_loop_hz_median")
            if clk is None:
                clk = r.get("sm_clock_hz_median") if r.get("params", {}).get("epilogue") != "direct" else None
            if not clk or not r.get("start_ns"):
                continue
            launch_us = (max(r["end_ns"]) - min(r["start_ns"])) / 1e3
            if launch_us <= SHORT_LAUNCH_US:
                pts.append((launch_us, clk / 1e6))
    if not pts:
        return {}
    seen = ", ".join(f"{mhz:.0f}" for _, mhz in sorted(pts))
    method = (f"tileroof.gpu.timeline sets 8-10: median SM clock (each block's SM cycles over its GPU-timer time, "
              f"median per launch) of the {len(pts)} launches shorter than {SHORT_LAUNCH_US:.0f} us: over the main loop "
              "where the run read it (set 10), else over blocks that keep the tensor cores busy to their end (GEMMs "
              "staged through shared memory, flash attention); timed as measure times (L2 flushed before each run): "
              f"{seen} MHz [{where}]")
    return {"tensor_boost_clock_mhz": {"value": round(statistics.median(mhz for _, mhz in pts), 1), "unit": "MHz",
                                       "method": method}}

EXPOSED_AT = 1.1     # a two-warpgroup point counts as exposed when it takes over 1.1x its math


def _fixed_cycles(doc: dict, x_key: str, math_cycles, warpgroups) -> tuple[list, list]:
    """Each point's cycles besides its math, (one consumer warpgroup, several): per point of a
    gemm_pipe / attn_pipe run, time per iteration x the block's SM clock, less the math
    (`math_cycles(shape, x)`), or with several warpgroups (`warpgroups(shape)`) less their share of
    it, for the points whose time exceeds EXPOSED_AT x the math (elsewhere another warpgroup's math
    hides it)."""
    one, many = [], []
    for f in doc.get("fits", []):
        wgs = warpgroups(f["shape"])
        for p in f["points"]:
            if not p.get("sm_clock_hz"):
                continue
            cycles = p["per_iter_s"] * p["sm_clock_hz"]
            math = math_cycles(f["shape"], p[x_key])
            if wgs == 1:
                one.append(cycles - math)
            elif cycles > EXPOSED_AT * math:
                many.append(cycles - math / wgs)
    return one, many


def iteration_cost_entries(doc: dict, flops_per_clk: float, where: str) -> dict:
    """gemm_iteration_cycles and gemm_iteration_cycles_overlapped from a tileroof.gpu.gemm_pipe run
    (the per-block GPU timer and SM cycles give each point's clock): with one consumer warpgroup,
    an iteration's cycles less its math at `flops_per_clk` (the fp16 per-clock peak), median over
    the points; with several, the cycles less their share of the math, median over the points
    whose time exceeds EXPOSED_AT x the math (elsewhere the other warpgroup's math hides it)."""
    one, many = _fixed_cycles(doc, "block_K", lambda sh, bk: 2 * sh[0] * sh[1] * bk / flops_per_clk,
                              lambda sh: max(sh[2] // 128, 1))
    out = {}
    base = (f"tileroof.gpu.gemm_pipe: time per pipelined gemm iteration (one block per SM, merged L2-resident "
            f"tiles, block_K 16-128) times the block's SM clock, less its math at {flops_per_clk:.0f} FLOP/clk/SM")
    if one:
        out["gemm_iteration_cycles"] = {
            "value": round(statistics.median(one), 1), "unit": "cycles", "points": [round(v) for v in one],
            "method": f"{base}; one consumer warpgroup, median of {len(one)} points [{where}]"}
    if many:
        out["gemm_iteration_cycles_overlapped"] = {
            "value": round(statistics.median(many), 1), "unit": "cycles", "points": [round(v) for v in many],
            "method": f"{base} over the warpgroups; several consumer warpgroups, the points above {EXPOSED_AT}x "
                      f"the math (the other's math hides the rest), median of {len(many)} [{where}]"}
    return out


def nows_entries(doc: dict, flops_per_clk: float, where: str) -> dict:
    """The pipelined gemm iteration without warp specialisation, from a `gemm_pipe --nows` run
    (tileroof.gemm_pipe_nows/1): per tile shape the line of cycles per iteration against block_K
    (one block per SM) gives a fixed part (intercept) and a math rate (slope); the profile keeps
    the median intercept (gemm_iteration_cycles_nows), the median slope as a share of the fp16
    per-clock peak `flops_per_clk` (tensor_rate_share_nows), and, from the shapes also run with 2
    and 4 blocks per SM (block_K 64), the SM's cycles for one iteration of each co-resident block
    over one block's alone, median per count (coresidency_nows)."""
    fits = doc.get("fits", [])
    icpt = [f["intercept_cycles"] for f in fits if f.get("intercept_cycles") is not None]
    share = [f["flops_per_clk_sm_from_slope"] / flops_per_clk for f in fits if f.get("flops_per_clk_sm_from_slope")]
    runs: dict = {}
    for c in doc.get("configs", []):
        if c.get("block_K") != 64 or "stats" not in c or not c.get("sm_clock_hz"):
            continue
        runs.setdefault((tuple(c["shape"]), c.get("blocks_per_sm", 1)), {})[c["iters"]] = c
    per_iter = {}
    for (shape, per_sm), v in runs.items():
        if len(v) == 2:
            lo, hi = sorted(v)
            t = (v[hi]["stats"]["median_s"] - v[lo]["stats"]["median_s"]) / (hi - lo)
            per_iter[(shape, per_sm)] = t * statistics.median([v[lo]["sm_clock_hz"], v[hi]["sm_clock_hz"]])
    ratios: dict = {}
    for (shape, per_sm), cyc in per_iter.items():
        if per_sm > 1 and (shape, 1) in per_iter:
            ratios.setdefault(per_sm, []).append(cyc / per_iter[(shape, 1)])
    base = ("tileroof.gpu.gemm_pipe --nows: time per pipelined gemm iteration compiled with tl.disable_tma_lower and "
            "tl.disable_warp_specialized (cp.async loads issued by the consumer threads), merged L2-resident tiles, "
            "times the block's SM clock")
    out = {}
    if icpt:
        out["gemm_iteration_cycles_nows"] = {
            "value": round(statistics.median(icpt), 1), "unit": "cycles", "points": [round(v) for v in icpt],
            "method": f"{base}; intercept of the line against block_K 16-128 (one block per SM), median over "
                      f"{len(icpt)} tile shapes [{where}]"}
    if share:
        out["tensor_rate_share_nows"] = {
            "value": round(statistics.median(share), 4), "unit": "ratio", "points": [round(v, 3) for v in share],
            "method": f"{base}; slope of that line (FLOP per cycle per SM) over the {flops_per_clk:.0f} FLOP/clk/SM fp16 "
                      f"peak, median over {len(share)} tile shapes [{where}]"}
    if ratios:
        pts = [[1, 1.0]] + [[b, round(statistics.median(r), 3)] for b, r in sorted(ratios.items())]
        out["coresidency_nows"] = {
            "value": pts, "unit": "[blocks per SM, SM cycles per iteration of each over one block's]",
            "method": f"{base}; block_K 64 at 1, 2 and 4 blocks per SM, median over "
                      f"{max(len(r) for r in ratios.values())} tile shapes [{where}]"}
    return out


def small_block_entries(doc: dict, flops_per_clk: float, schedulers: int, where: str) -> dict:
    """Blocks of fewer warps than the SM's schedulers, from a `gemm_pipe --warps` run
    (tileroof.gemm_pipe_warps/1): per block size (warps), the line of cycles per iteration against
    block_K at one block per SM gives a fixed part (intercept) and a math rate (slope), kept as
    [warps, rate over those warps' schedulers' share of the fp16 per-clock peak, intercept cycles]
    (small_block_nows); and, at block_K 64, the SM's cycles for one iteration of each co-resident
    block over one block's alone against the warps on the SM (blocks x warps), median per count
    (coresidency_warps)."""
    import numpy as np

    pts = doc.get("points", [])
    lines = []
    ratios: dict = {}
    for shape in sorted({tuple(p["shape"]) for p in pts}):
        w = max(shape[2] // 32, 1)
        mine = [p for p in pts if tuple(p["shape"]) == shape]
        one = sorted((p["block_K"], p["per_iter_s"] * p["sm_clock_hz"]) for p in mine if p["blocks_per_sm"] == 1)
        if len(one) >= 2:
            slope, icpt = np.polyfit([k for k, _ in one], [c for _, c in one], 1)
            rate = 2 * shape[0] * shape[1] / slope               # FLOP per cycle of the block
            lines.append([w, round(float(rate / (flops_per_clk * min(w, schedulers) / schedulers)), 4),
                          round(float(icpt), 1)])
        at = {p["blocks_per_sm"]: p["per_iter_s"] * p["sm_clock_hz"] for p in mine if p["block_K"] == 64}
        for per_sm, cyc in at.items():
            if per_sm > 1 and 1 in at:
                ratios.setdefault(per_sm * w, []).append(cyc / at[1])
    base = ("tileroof.gpu.gemm_pipe --warps: time per pipelined gemm iteration of blocks of one and two warps (mma, "
            "cp.async, no warp specialisation), merged L2-resident tiles, times the block's SM clock")
    out = {}
    if lines:
        out["small_block_nows"] = {
            "value": sorted(lines), "unit": "[warps a block, math rate over its schedulers' share of the fp16 "
                                            "mma.sync peak, fixed cycles an iteration]",
            "method": f"{base}; slope and intercept of the line against block_K 32-128 at one block per SM, the "
                      f"slope over {flops_per_clk:.0f} FLOP/clk/SM x warps / {schedulers} [{where}]"}
    if ratios:
        out["coresidency_warps"] = {
            "value": [[1, 1.0]] + [[n, round(statistics.median(r), 3)] for n, r in sorted(ratios.items())],
            "unit": "[warps on the SM (blocks x warps a block), SM cycles per iteration of each block over one "
                    "block's alone]",
            "method": f"{base}; block_K 64 at 1-8 blocks per SM, median over the block sizes [{where}]"}
    return out


def second_gemm_entries(doc: dict, flops_per_clk: float, one_gemm: float, one_gemm_overlapped: float,
                        where: str) -> dict:
    """gemm_wait_cycles and gemm_wait_cycles_overlapped from a tileroof.gpu.attn_pipe run: what a
    second gemm in a pipelined iteration adds to its fixed cost.  Each point's cycles besides its
    math (two gemms of block_M x block_N x dim) as in iteration_cost_entries, median per
    warpgroup count, less the one-gemm iteration's (`one_gemm`, `one_gemm_overlapped`: gemm_pipe):
    the per-gemm part (issue, commit, wait), the rest of the one-gemm cost being the iteration's
    own (producer/consumer barriers)."""
    # shape: (block_M, threads[, head dim]; the first run had only head dim 128)
    one, many = _fixed_cycles(doc, "block_N",
                              lambda sh, bn: 2 * 2 * sh[0] * bn * (sh[2] if len(sh) > 2 else 128) / flops_per_clk,
                              lambda sh: max(sh[1] // 128, 1))
    base = (f"tileroof.gpu.attn_pipe: time per pipelined iteration of S = Q K^T, P = cast(S), O += P V (one "
            f"block per SM, merged L2-resident tiles, block_N 32-96) times the block's SM clock, less its math at "
            f"{flops_per_clk:.0f} FLOP/clk/SM")
    out = {}
    if one:
        f2 = statistics.median(one)
        out["gemm_wait_cycles"] = {
            "value": round(f2 - one_gemm, 1), "unit": "cycles", "points": [round(v) for v in one],
            "method": f"{base}; one consumer warpgroup: median {f2:.1f} cycles of {len(one)} points, less the "
                      f"one-gemm iteration's {one_gemm} (gemm_iteration_cycles) [{where}]"}
    if many:
        f2 = statistics.median(many)
        out["gemm_wait_cycles_overlapped"] = {
            "value": round(f2 - one_gemm_overlapped, 1), "unit": "cycles", "points": [round(v) for v in many],
            "method": f"{base} over the warpgroups; several consumer warpgroups, the points above {EXPOSED_AT}x the "
                      f"math: median {f2:.1f} cycles of {len(many)}, less the one-gemm iteration's "
                      f"{one_gemm_overlapped} (gemm_iteration_cycles_overlapped) [{where}]"}
    return out


def flushwb_entries(run: dict, where: str) -> dict:
    """flushwb: the dirty bytes the harness's flush (zero_ of its buffer) leaves in L2, what their
    write-back costs a timed kernel by the kernel's DRAM read share, and DRAM bandwidth by read
    share (streams of 512 MiB per array after a clean flush)."""
    from ..memory import flush_writeback
    from .timing import FLUSH_BYTES
    l2 = run["provenance"].get("l2_cache_bytes") or 0
    pairs = (run.get("ncu") or {}).get("pairs") or []
    left = [FLUSH_BYTES - p["flush_op"]["dram__bytes_write.sum"] for p in pairs if p["mode"] == "dirty"]
    if not left:
        return {}
    dirty = statistics.median(left)
    # the read flush after a zero_ writes the zero_'s dirty lines back (beside its own temporary)
    out = {"timing_flush_dirty_mb": {
        "value": round(dirty / 1e6, 2), "unit": "MB", "repeats": [round(v / 1e6, 2) for v in left],
        "spread_pct": round(spread_pct(left), 2),
        "method": "tileroof.gpu.flushwb under Nsight Compute (--cache-control none): the harness's L2 flush "
                  f"(zero_ of {FLUSH_BYTES >> 20} MiB) after a clean L2 writes that many bytes less to DRAM than it "
                  f"issues -- the lines it leaves dirty in L2; median over {len(left)} launches [{where}]"}}
    costs, bws = {}, []
    for r in run["timed"]:
        reads, writes = r["read_bytes"], r["write_bytes"]
        share = reads / (reads + writes)
        if r["mib_per_array"] >= 128:
            evicted = flush_writeback(reads, writes, dirty, l2)     # the model's own eviction law
            for a, b in (("dirty", "clean"), ("dirty2", "clean2")):
                costs.setdefault(round(share, 4), []).append(
                    max(r[f"{a}_median_s"] - r[f"{b}_median_s"], 0.0) / evicted)
        if r["mib_per_array"] == max(x["mib_per_array"] for x in run["timed"]):
            dram_write = writes - min(writes, dirty)          # its own last writes stay dirty at the end
            moved = reads + dram_write
            t = statistics.median([r["clean_median_s"], r["clean2_median_s"]])
            bws.append([round(reads / moved, 4), round(moved / t / 1e9, 1)])
    out["flush_writeback_ns_per_mb"] = {
        "value": [[s, round(statistics.median(v) * 1e9 * 1e6, 1)] for s, v in sorted(costs.items())],
        "unit": "[read share of the kernel's DRAM bytes, ns per MB written back]",
        "method": "tileroof.gpu.flushwb: Triton streams (N_IN fp32 arrays read, N_OUT written, 128-512 MiB each) "
                  "event-timed after the harness's dirty flush and after a clean one (a full read of the same "
                  "buffer), twice each; (dirty - clean) median over the sizes and both pairs, per byte of the "
                  "dirty lines the stream evicts (timing_flush_dirty_mb x (1 - exp(-bytes / L2))), by the stream's "
                  f"read share [{where}]"}
    out["dram_bandwidth_by_read_share"] = {
        "value": sorted(bws), "unit": "[read share of DRAM bytes, GB/s]",
        "method": "tileroof.gpu.flushwb: Triton streams of 512 MiB per array after a clean flush, DRAM bytes "
                  "(reads + writes less the last timing_flush_dirty_mb of writes, which stay in L2) over the median "
                  f"time of the two clean timings [{where}]"}
    return out


INTEGER_PIPES = ("smsp__inst_executed_pipe_alu.sum", "smsp__inst_executed_pipe_fmaheavy.sum")


def integer_alu_share_entry(record: dict, where: str) -> dict:
    """integer_alu_share from a measure record run with the per-pipe Nsight counters
    (benchmarks/ncu_pipe_metrics.txt): for each case with both counters, its ALU-pipe warp
    instructions over ALU plus FMA-heavy (where ptxas issues IMAD: shifts left, adds, moves); the
    median over the cases.  Read on kernels whose work besides the tensor cores is integer (FP4
    decoding, im2col address arithmetic), the FMA-heavy pipe's instructions are IMADs."""
    shares = {}
    for name, case in sorted(record.get("cases", {}).items()):
        n = case.get("ncu") or {}
        alu, fmah = (n.get(k) for k in INTEGER_PIPES)
        if alu and fmah is not None and alu + fmah > 0:
            shares[name] = alu / (alu + fmah)
    if not shares:
        return {}
    return {"integer_alu_share": {
        "value": round(statistics.median(shares.values()), 3), "unit": "ratio",
        "points": [round(v, 3) for v in shares.values()],
        "method": "Nsight Compute smsp__inst_executed_pipe_alu over alu + fmaheavy (warp instructions) of the "
                  f"{len(shares)} cases run with the per-pipe counters ({', '.join(shares)}), median "
                  f"(tileroof.gpu.derive.integer_alu_share_entry) [{where}]"}}


TILE_BLOCKS_PER_SM = 8      # blockrate's block_tiles: 256 threads a block, 2048 a Hopper SM


def widths_wave_run_bytes(cols: int, place: str, sms: int, wide: int = 1, element_bytes: int = 2) -> int:
    """The contiguous run a wave of blockrate's block_tiles (TILE_BLOCKS_PER_SM blocks on each of
    `sms` SMs) sweeps in its spread matrix: "scatter" / "gather" with A `cols` wide in tiles of
    32 x 32 `wide` elements, the wave's 8 x sms blocks cover that many tiles of A in row-major
    order, cols / (32 wide) a row of tiles, so each row of the moved matrix gets one piece of
    32 wide elements from each row of tiles the wave covers; "rows", every tile in place, one span
    of the wave's bytes."""
    wave = TILE_BLOCKS_PER_SM * sms
    piece = 32 * wide * element_bytes
    if place == "rows":
        return wave * 32 * piece
    return piece * max(1, wave // (cols // (32 * wide)))


def dram_spread_entries(run: dict, where: str) -> dict:
    """dram_spread_write / dram_spread_read from a blockrate --mode widths or pieces run that holds
    its contiguous references (place "rows": the same grid and bytes, whole lines in one span a
    wave): per piece (the contiguous bytes of a row one block moves: 32 x wide elements) and run
    length of the spread side (widths_wave_run_bytes), the DRAM time a byte of that side takes over
    the reference's, k = 2 T / T_ref - 1 (each launch reads and writes the same bytes, only one side
    spread: T = (R + k W) / bw against (R + W) / bw), median over the passes; each piece's curve
    closes at 1 at the run the memory model sees of its reference (2 x LONG_RUN_BYTES)."""
    from ..memory import LONG_RUN_BYTES
    if run.get("mode") not in ("widths", "pieces"):
        return {}
    rows = [r for r in run.get("results", []) if r.get("correct", True)]
    sms = run.get("sm_count") or run["provenance"].get("sm_count")
    long_run = 2 * LONG_RUN_BYTES

    def piece(r):
        return r.get("piece_bytes", 64)

    refs: dict = {}
    for r in rows:
        if r.get("place") == "rows":
            refs.setdefault(piece(r), []).append(r["median_s"])
    out = {}
    for place, key, side in (("scatter", "dram_spread_write", "writes"), ("gather", "dram_spread_read", "reads")):
        by: dict = {}
        for r in rows:
            if r.get("place", "scatter") == place and piece(r) in refs:
                by.setdefault((piece(r), r["cols"], r.get("wide", 1), piece(r) // (32 * r.get("wide", 1))),
                              []).append(r["median_s"])
        if not by:
            continue
        curve, seen = [], []
        for p in sorted({k[0] for k in by}):
            t_ref = statistics.median(refs[p])
            pts = sorted((widths_wave_run_bytes(c, place, sms, w, eb), round(2 * statistics.median(t) / t_ref - 1, 4))
                         for (pp, c, w, eb), t in by.items() if pp == p)
            curve += [[p, b, f] for b, f in pts if b < long_run] + [[p, long_run, 1.0]]
            seen.append(f"{p}-byte pieces, T_ref {t_ref * 1e6:.2f} us: " + ", ".join(
                f"{c} columns {statistics.median(t) * 1e6:.2f}" for (pp, c, w, eb), t in sorted(by.items()) if pp == p))
        out[key] = {
            "value": curve, "unit": "[piece bytes, contiguous run bytes, DRAM time a byte over a stream's]",
            "method": (f"tileroof.gpu.blockrate --mode {run.get('mode')}: SMs x 512 / wide blocks each copy a 32 x 32 wide "
                       f"tile (its rows' pieces 32 wide elements), their {side} placed at the tile's transposed "
                       f"position in the grid of tiles ({place}) in an A of each width, the other side in place; the "
                       f"wave's {TILE_BLOCKS_PER_SM} x SMs blocks sweep runs of a piece x the rows of tiles they cover "
                       f"in each row of the moved matrix; k = 2 T / T_ref - 1 against the same launch with both sides "
                       f"in place (one span a wave); each piece's curve closes at 1 at {long_run} B, the run the "
                       f"memory model sees of the reference (between the longest measured spread run and it the curve "
                       f"is interpolated, not measured); medians over the passes, us ({'; '.join(seen)}) [{where}]")}
    return out

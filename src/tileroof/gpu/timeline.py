"""When does each block of a GEMM start and end, and on which SM?  tl_kernels.timed_matmul (the
corpus GEMM, NN, unswizzled) writes the GPU timer at each block's start and end and its SM id;
this script runs each configuration (L2 flushed before every run, like measure), keeps the
per-block records of the last of `--runs` runs, and writes them with summary statistics:
block duration, and for blocks `gx` launches apart (the blocks of one column that share a B tile
in an unswizzled grid) the gap between their starts, per wave, over the block duration.

    python -m tileroof.gpu.timeline --out DIR
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

# (M, N, K, block_M, block_N, block_K, stages, threads[, swizzle])
CONFIGS = (
    (4096, 8192, 8192, 64, 256, 64, 4, 128),
    (2048, 8192, 16384, 64, 256, 64, 4, 128),
    (2048, 8192, 2048, 64, 256, 64, 4, 128),
    (8192, 8192, 8192, 128, 128, 32, 3, 128),
    (8192, 8192, 8192, 128, 256, 64, 3, 256),
    (4096, 8192, 8192, 128, 256, 64, 3, 256),
)
# second run: what sets the SMs' pace spread?  L2-bound tiles that share well (64x128, 64x64,
# 128x64), the drifting 64x256 swizzled (less DRAM traffic) and again, and a wide grid
CONFIGS_2 = (
    (4096, 6144, 4096, 64, 128, 64, 4, 128),
    (4096, 8192, 8192, 64, 128, 64, 4, 128),
    (8192, 8192, 8192, 64, 64, 64, 4, 128),
    (2048, 8192, 8192, 128, 64, 64, 4, 128),
    (4096, 8192, 8192, 64, 256, 64, 4, 128, True),
    (4096, 8192, 8192, 64, 256, 64, 4, 128),
    (2048, 16384, 8192, 64, 256, 64, 4, 128),
    (2048, 8192, 8192, 128, 128, 64, 3, 128),
)
# fourth run: the SM clock under do_bench-style timing (flush + launch back to back) for GEMMs
# that keep the tensor cores more or less busy, short and long
CONFIGS_4 = (
    (8192, 8192, 1024, 128, 256, 64, 3, 256, True), (8192, 8192, 4096, 128, 256, 64, 3, 256, True),
    (8192, 8192, 16384, 128, 256, 64, 3, 256, True), (8192, 8192, 4096, 128, 128, 64, 3, 128, True),
    (8192, 8192, 16384, 128, 128, 64, 3, 128, True), (8192, 8192, 8192, 64, 128, 64, 4, 128, True),
    (8192, 8192, 8192, 64, 64, 64, 4, 128, True), (8192, 8192, 2048, 128, 128, 32, 2, 128, True),
)
# fifth run (session 4): does the SMs' pace split (24 SMs run memory-bound blocks ~1.2x faster)
# appear in the unswizzled 64x256 GEMM with 2 and 3 stages, which drift less or not at all?
CONFIGS_5 = tuple((4096, 8192, 8192, 64, 256, 64, s, 128) for s in (2, 3, 4)) + (
    (6144, 6144, 8192, 64, 256, 64, 4, 128), (6144, 6144, 8192, 64, 256, 64, 3, 128, True),
    (4096, 8192, 8192, 64, 128, 64, 4, 128))
# sixth run (session 5): the per-SM pace of the pace probes (corpus.extra.PACE_PROBES), which vary
# one thing at a time against the drifting 64x256x64 four-stage GEMM
def _configs_6():
    from ..corpus.extra import PACE_PROBES
    return tuple(PACE_PROBES)


# seventh run (session 5): the unswizzled configs of the gemm_deep_bf16 sweep (written to test the
# drift rule), in fp16 (the instrumented GEMM's type)
def _configs_7():
    from ..corpus.extra import _GEMM_DEEP_CONFIGS
    return tuple((6144, 12288, 6144, bm, bn, bk, s, t) for bm, bn, bk, s, t, sw in _GEMM_DEEP_CONFIGS if not sw)


# third run: a GEMM block's cost besides its iterations (block time against K, and the gap between
# blocks on one SM), for the common tiles
CONFIGS_3 = tuple((M, N, K, bm, bn, 64, 3, t) for bm, bn, t, M, N in ((128, 128, 128, 4096, 4096),
                                                                    (128, 256, 256, 8192, 4096),
                                                                    (64, 128, 128, 4096, 4096))
                  for K in (64, 128, 256, 512, 2048))


# eighth run (session 7): what a GEMM block spends after its main loop (the epilogue: the
# accumulator stored to C directly from the fragment, or staged through shared memory), with one
# and many waves, short and long K, for the common tiles
CONFIGS_8 = tuple((M, N, K, bm, bn, 64, st, t, False, ep)
                  for bm, bn, st, t in ((128, 128, 3, 128), (128, 256, 3, 256), (64, 128, 4, 128), (128, 64, 4, 128),
                                        (64, 256, 4, 128))
                  for M, N in ((4096, 4096), (8192, 8192))
                  for K in (256, 2048)
                  for ep in ("direct", "shared"))


# tenth run (session 8): set 8's 4096 x 4096 launches again, with the SM cycles after the main loop
# too: the clock of the loop (tensor work) and of the epilogue apart (model.tensor_boost_clock)
CONFIGS_10 = tuple(c for c in CONFIGS_8 if c[0] == 4096)


# eleventh run (session 12): one-wave GEMMs, whose blocks all start together (the probe_onewave
# cases run 15-22 % slower than the model): where the time goes -- the first gemm's wait (the first
# tiles' DRAM round trip), the loop, the epilogue, the spread of the blocks' starts and ends -- at
# 1, 16 and 128 iterations, and with 8 or 32 blocks instead of a full wave (contention or a
# per-block cost?)
CONFIGS_11 = tuple((M, N, K, bm, bn, 64, 3, t, False, "direct")
                   for bm, bn, t, shapes in (
                       (128, 128, 256, ((2048, 1024, 64), (2048, 1024, 1024), (2048, 1024, 8192), (1024, 512, 1024),
                                        (1024, 512, 8192), (256, 512, 1024))),
                       (128, 256, 256, ((2048, 2048, 64), (2048, 2048, 1024), (2048, 2048, 4096), (1024, 1024, 1024))),
                       (128, 128, 128, ((2048, 1024, 1024),)),
                       (64, 256, 128, ((512, 4096, 1024), (256, 1024, 1024))))
                   for M, N, K in shapes)


# twelfth run (session 12): CONFIGS_11 again with the SM cycles after the main loop too (set 10's
# method): the clock of one-wave loops, whose 128x256 iterations run 4-14 % slower than the model's
# at its 1748 MHz cap

# thirteenth run (session 13): the grouped GEMM's loop with its groups written out
# (corpus.upstream._grouped_probes, sweep grouped_fp16's tiles), cp.async without producer warps at
# 2-4 blocks per SM and its TMA twin at one: the 64x128 cp.async launches read 1.6-2.4x the DRAM
# bytes the in-step L2 model gives while the TMA twin and the 128x128 control are exact -- are the
# blocks that share an A tile (gx launches apart) still in step?  (kind, G, M, N, K, bM, bN, bK,
# stages, threads)
CONFIGS_13 = tuple(("cpasync", 8, 8192, 4096, 4096) + c for c in (
    (64, 128, 64, 2, 256), (64, 128, 64, 3, 128), (128, 128, 32, 3, 128), (64, 64, 64, 3, 128),
    (128, 128, 64, 2, 256), (64, 256, 64, 2, 256), (128, 256, 32, 2, 256))) + (
    ("tma", 8, 8192, 4096, 4096, 64, 128, 64, 2, 256),
    ("cpasync", 1, 4096, 4096, 4096, 64, 128, 64, 2, 128), ("cpasync", 1, 4096, 4096, 4096, 128, 128, 32, 3, 128))
# fourteenth run (session 13): upstream's grouped GEMM itself (tl_kernels.timed_grouped_gemm, the
# sweep grouped_fp16's groups, its 64x128 tiles read 1.4-1.6x the in-step model's DRAM where the
# affine control's 128x128 reads 1.0x), the affine 64x128 at 128 threads (4 blocks per SM with 16
# warps, against 32 at 256 threads), and set 13's 64x128 256-thread launch again (repeatability).
# ("grouped", block_M, block_N, block_K, stages, threads) or set 13's tuple
CONFIGS_14 = tuple(("grouped",) + c for c in ((64, 128, 64, 2, 256), (64, 128, 64, 3, 128), (128, 128, 32, 3, 128),
                                               (64, 256, 64, 2, 256))) + (
    ("cpasync", 8, 8192, 4096, 4096, 64, 128, 64, 2, 128), ("cpasync", 8, 8192, 4096, 4096, 64, 128, 64, 2, 256))

# sixteenth run (session 14): set 13's affine grouped loop (8 groups, 8192 x 4096 x 4096, cp.async)
# at 5-8 blocks per SM, past the 2-4 the stagger law was read on: SM-paced 64x128x32 tiles (5 per
# SM at 2 and 3 stages) and L2-paced 64x64 (8 and 6 per SM) and 128x64 (5) ones
CONFIGS_16 = tuple(("cpasync", 8, 8192, 4096, 4096) + c for c in (
    (64, 128, 32, 3, 128), (64, 128, 32, 2, 128), (64, 64, 32, 2, 128), (64, 64, 64, 2, 128), (128, 64, 32, 2, 128)))


def affine_run(out: Path, runs: int, configs=None) -> int:
    """Timeline sets 13, 14 and 16: tl_kernels.timed_affine_* / timed_grouped_gemm per-block timers
    for CONFIGS_13 / CONFIGS_14 / CONFIGS_16 (start, loop end, end, SM), with summarise's per-wave sharer gaps
    for the blocks gx launches apart (same A tile)."""
    import torch

    from ..corpus.upstream import _GROUP_SIZES, _grouped_inputs, _grouped_ref
    from .provenance import base_provenance, write_record
    from .derive import sm_pace
    from .timing import flush_buffer
    from .tl_kernels import timed_affine_cpasync, timed_affine_tma, timed_grouped_gemm
    prov = base_provenance("timeline", touch_gpu=True)
    t0 = time.time()
    keys = ("G", "M", "N", "K", "block_M", "block_N", "block_K", "num_stages", "threads")
    gkeys = ("block_M", "block_N", "block_K", "num_stages", "threads")
    params = [(c[0], dict(batch_sizes_list=tuple(_GROUP_SIZES), K=4096, N=4096, dtype="float16", **dict(zip(gkeys, c[1:]))))
              if c[0] == "grouped" else (c[0], dict(zip(keys, c[1:]))) for c in (configs or CONFIGS_13)]
    compiled = {}
    for kind, fn in (("cpasync", timed_affine_cpasync), ("tma", timed_affine_tma), ("grouped", timed_grouped_gemm)):
        ps = [p for k_, p in params if k_ == kind]
        if not ps:
            continue
        compiled[kind] = dict(zip(range(len(ps)), fn.par_compile(ps, num_workers=16, ignore_error=True)))
    flush = flush_buffer()
    results = []
    seen = {"cpasync": 0, "tma": 0, "grouped": 0}
    for kind, p in params:
        k = compiled[kind][seen[kind]]
        seen[kind] += 1
        if k is None:
            results.append({"kind": kind, "params": p, "error": "did not compile"})
            continue
        if kind == "grouped":
            sizes = p["batch_sizes_list"]
            G, M, N, K = len(sizes), sum(sizes), p["N"], p["K"]
            gx, gy = -(-M // p["block_M"]) + G, -(-N // p["block_N"])
            args = _grouped_inputs(p, "cuda")
        else:
            G, M, N, K = p["G"], p["M"], p["N"], p["K"]
            gx, gy = -(-M // p["block_M"]), -(-N // p["block_N"])
            args = [torch.randn((M, K), dtype=torch.float16, device="cuda"),
                    torch.randn((G, K, N), dtype=torch.float16, device="cuda"),
                    torch.empty((M, N), dtype=torch.float16, device="cuda")]
        times = torch.zeros((gx * gy, 4), dtype=torch.int64, device="cuda")
        k(*args, times)
        runs_ = []
        for _ in range(runs):
            _run_after_flush(k, (*args, times), flush)
            runs_.append(times.cpu())
        A, B, C = args[:3]
        if kind == "grouped":
            ok = bool(torch.allclose(C.float(), _grouped_ref(args)[2], rtol=1e-2, atol=1e-1))
        else:
            rows = M // G
            ok = bool(torch.allclose(C[:64, :64].float(), A[:64].float() @ B[0, :, :64].float(), rtol=2e-2, atol=1e-1)
                      and torch.allclose(C[M - rows:M - rows + 64, :64].float(),
                                         A[M - rows:M - rows + 64].float() @ B[G - 1, :, :64].float(), rtol=2e-2,
                                         atol=1e-1))
        last = runs_[-1]
        base = int(last[:, 0].min())
        start, loop_end, end = ([int(x) - base for x in last[:, c]] for c in range(3))
        smid = [int(x) for x in last[:, 3]]
        slots = resident(start, end)
        summ = [summarise([int(x) - int(r[:, 0].min()) for x in r[:, 0]], [int(x) - int(r[:, 0].min()) for x in r[:, 2]],
                          gx, slots) for r in runs_]
        pace = sm_pace(start, end, smid)
        results.append({"kind": kind, "params": p, "grid": [gx, gy], "correct_corner": ok, "resident_blocks": slots,
                        "sm_pace": pace, "summary_per_run": summ, "start_ns": start, "loop_end_ns": loop_end,
                        "end_ns": end, "smid": smid})
        print(f"{kind} G{G} {M}x{N}x{K} {p['block_M']}x{p['block_N']}x{p['block_K']} s{p['num_stages']} "
              f"t{p['threads']}: block {summ[-1]['block_median_ns'] / 1e3:.1f} us (p10 {summ[-1]['block_p10_ns'] / 1e3:.1f}, "
              f"p90 {summ[-1]['block_p90_ns'] / 1e3:.1f}), kernel {summ[-1]['kernel_ns'] / 1e3:.0f} us, resident {slots}, "
              f"SM pace spread {pace['std_over_mean']:.3f}{'' if ok else ' WRONG RESULT'}; A-sharer gap / T by wave "
              + " ".join(f"{w['sharer_gap_median_over_T']:.2f}" if w["sharer_gap_median_over_T"] is not None else "-"
                         for w in summ[-1]["waves"]))
        del A, B, C, args, times
    path = write_record(out, prov, t0, {"sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                                        "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


# fifteenth run (session 13): where a many-wave GEMM's iterations wait.  The fitted tile-load
# latency (600 ns) is twice the L2-fed latency gemm_pipe --fed measures, yet the 8192^3 GEMMs of
# the fit split run between its L2-fed and DRAM-fed paces: which iterations of which blocks wait?
# tl_kernels.timed_matmul_iters records thread 0's GPU timer after every iteration's gemm;
# (M, N, K, bM, bN, bK, stages, threads, swizzle)
CONFIGS_15 = (
    (8192, 8192, 4096, 128, 128, 32, 2, 128, True), (8192, 8192, 4096, 128, 128, 32, 3, 128, True),
    (8192, 8192, 4096, 128, 128, 32, 3, 128, False), (8192, 8192, 4096, 128, 128, 64, 3, 128, True),
    (8192, 8192, 4096, 128, 256, 64, 3, 256, True), (4096, 4096, 4096, 64, 128, 64, 4, 128, False))


def iters_run(out: Path, runs: int) -> int:
    """Timeline set 15: per block start / end / SM and thread 0's timer after every iteration
    (tl_kernels.timed_matmul_iters) for CONFIGS_15; the per-iteration timers of the last run are
    written beside the record as iters-<i>.npz (int32 ns after the block's start, blocks x
    iterations, block = by * gx + bx after the swizzle), the record keeps summaries."""
    import numpy as np
    import torch

    from .provenance import base_provenance, write_record
    from .timing import flush_buffer
    from .tl_kernels import timed_matmul_iters
    prov = base_provenance("timeline", touch_gpu=True)
    t0 = time.time()
    keys = ("M", "N", "K", "block_M", "block_N", "block_K", "num_stages", "threads", "swizzle")
    params = [dict(zip(keys, c)) for c in CONFIGS_15]
    kernels = timed_matmul_iters.par_compile(params, num_workers=16, ignore_error=True)
    flush = flush_buffer()
    results = []
    out.mkdir(parents=True, exist_ok=True)
    for i, (p, k) in enumerate(zip(params, kernels)):
        if k is None:
            results.append({"kind": "iters", "params": p, "error": "did not compile"})
            continue
        gx, gy = -(-p["N"] // p["block_N"]), -(-p["M"] // p["block_M"])
        nk = -(-p["K"] // p["block_K"])
        A = torch.randn((p["M"], p["K"]), dtype=torch.float16, device="cuda")
        B = torch.randn((p["K"], p["N"]), dtype=torch.float16, device="cuda")
        C = torch.empty((p["M"], p["N"]), dtype=torch.float16, device="cuda")
        times = torch.zeros((gx * gy, 3), dtype=torch.int64, device="cuda")
        it = torch.zeros((gx * gy, nk), dtype=torch.int64, device="cuda")
        k(A, B, C, times, it)
        for _ in range(runs):
            _run_after_flush(k, (A, B, C, times, it), flush)
        ok = bool(torch.allclose(C[:64, :64].float(), (A[:64].float() @ B[:, :64].float()), rtol=2e-2, atol=1e-1))
        t = times.cpu().numpy()
        base = int(t[:, 0].min())
        start, end = t[:, 0] - base, t[:, 1] - base
        rel = (it.cpu().numpy() - t[:, :1]).astype(np.int32)
        np.savez_compressed(out / f"iters-{i}.npz", iters_ns=rel)
        steps = np.diff(rel, axis=1)
        slots = resident([int(x) for x in start], [int(x) for x in end])
        later = steps[slots:] if steps.shape[0] > slots else steps
        q = lambda a, x: float(np.quantile(a, x)) if a.size else None   # noqa: E731
        summary = {"step_ns_p10": q(later, 0.1), "step_ns_median": q(later, 0.5), "step_ns_p90": q(later, 0.9),
                   "first_wave_step_ns_median": q(steps[:slots], 0.5), "kernel_ns": int(end.max()),
                   "block_ns_median": float(np.median(end - start))}
        results.append({"kind": "iters", "params": p, "grid": [gx, gy], "correct_corner": ok, "resident_blocks": slots,
                        "iters_file": f"iters-{i}.npz", **summary, "start_ns": start.tolist(), "end_ns": end.tolist(),
                        "smid": t[:, 2].tolist()})
        print(f"{p}: kernel {summary['kernel_ns'] / 1e3:.0f} us, resident {slots}; iteration steps (later waves) p10 / "
              f"median / p90 {summary['step_ns_p10']:.0f} / {summary['step_ns_median']:.0f} / {summary['step_ns_p90']:.0f} "
              f"ns, first wave median {summary['first_wave_step_ns_median']:.0f}{'' if ok else ' WRONG RESULT'}")
        del A, B, C, times, it
    path = write_record(out, prov, t0, {"sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                                        "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


# ninth run (session 7): where a flash-attention block's time goes (prologue: the Q tile and the
# fills; the key-tile loop; the epilogue) and the gap to the SM's next block, one and many waves
CONFIGS_9 = tuple(dict(batch=b, heads=h, seq_len=s, dim=d, block_M=bm, block_N=bn, num_stages=st, threads=t)
                  for bm, bn, st, t in ((128, 128, 2, 256), (128, 64, 2, 256), (64, 128, 2, 128))
                  for b, h, s, d in ((1, 16, 1024, 128), (4, 32, 2048, 128), (8, 16, 4096, 64)))


def _run_after_flush(kernel, args, flush) -> None:
    """One run of `kernel` behind the harness's L2 flush (as measure times it), finished."""
    import torch
    flush.zero_()
    torch.cuda.synchronize()
    kernel(*args)
    torch.cuda.synchronize()


# set 19 (session 20): one-stage 64x32 attention, heads of 64, 16 and 48 blocks (straddling the 132
# slots) and 66 (whole heads a wave): do a head's later blocks start apart from its first ones and
# run their loops faster (model._schedule_followers)?
CONFIGS_19 = tuple(dict(batch=b, heads=h, seq_len=s, dim=128, block_M=64, block_N=32, num_stages=1, threads=128)
                   for b, h, s in ((2, 16, 4096), (1, 32, 4224), (8, 16, 1024), (2, 16, 3072)))


def attention_run(out: Path, runs: int, configs=CONFIGS_9) -> int:
    """Timeline sets 9 and 19: timed_attention's per-block timers for `configs`, with the same
    summaries."""
    import torch

    from .provenance import base_provenance, write_record
    from .timing import flush_buffer
    from .tl_kernels import timed_attention
    prov = base_provenance("timeline", touch_gpu=True)
    t0 = time.time()
    params = [dict(p) for p in configs]
    kernels = timed_attention.par_compile(params, num_workers=16, ignore_error=True)
    flush = flush_buffer()
    results = []
    for p, k in zip(params, kernels):
        if k is None:
            results.append({"params": p, "error": "did not compile"})
            continue
        shape = (p["batch"], p["heads"], p["seq_len"], p["dim"])
        q, kk, v = (torch.randn(shape, dtype=torch.float16, device="cuda") for _ in range(3))
        o = torch.empty(shape, dtype=torch.float16, device="cuda")
        gx = -(-p["seq_len"] // p["block_M"])
        times = torch.zeros((p["batch"] * p["heads"] * gx, 7), dtype=torch.int64, device="cuda")
        k(q, kk, v, o, times)
        for _ in range(runs):
            _run_after_flush(k, (q, kk, v, o, times), flush)
        ref = torch.nn.functional.scaled_dot_product_attention(q[:1, :2].float(), kk[:1, :2].float(), v[:1, :2].float())
        ok = bool(torch.allclose(o[:1, :2].float(), ref, rtol=2e-2, atol=2e-2))
        t = times.cpu()
        base = int(t[:, 0].min())
        cols = [[int(x) - base for x in t[:, c]] for c in range(4)]
        smid = [int(x) for x in t[:, 4]]
        med = lambda xs: sorted(xs)[len(xs) // 2]
        parts = {"prologue_ns_median": med([b - a for a, b in zip(cols[0], cols[1])]),
                 "loop_ns_median": med([b - a for a, b in zip(cols[1], cols[2])]),
                 "epilogue_ns_median": med([b - a for a, b in zip(cols[2], cols[3])]),
                 "block_ns_median": med([b - a for a, b in zip(cols[0], cols[3])])}
        by_sm: dict = {}
        for s_, e_, sm_ in zip(cols[0], cols[3], smid):
            by_sm.setdefault(sm_, []).append((s_, e_))
        gaps = [b[0] - a[1] for v_ in by_sm.values() for a, b in zip(sorted(v_), sorted(v_)[1:])]
        parts["gap_ns_median"] = med(gaps) if gaps else None
        parts["kernel_ns"] = max(cols[3]) - min(cols[0])
        clk = [(int(c1) - int(c0)) / (int(e) - int(s_)) * 1e9 for s_, e, c0, c1 in zip(t[:, 0], t[:, 3], t[:, 5], t[:, 6])
               if int(e) > int(s_)]
        parts["sm_clock_hz_median"] = med(clk) if clk else None
        results.append({"params": p, "correct_corner": ok, **parts, "start_ns": cols[0], "prologue_end_ns": cols[1],
                        "loop_end_ns": cols[2], "end_ns": cols[3], "smid": smid})
        print(f"attention {p}: block {parts['block_ns_median'] / 1e3:.2f} us = prologue {parts['prologue_ns_median'] / 1e3:.2f}"
              f" + loop {parts['loop_ns_median'] / 1e3:.2f} + epilogue {parts['epilogue_ns_median'] / 1e3:.2f}; gap "
              f"{(parts['gap_ns_median'] or 0) / 1e3:.2f}; kernel {parts['kernel_ns'] / 1e3:.1f} us; SM clock "
              f"{(parts['sm_clock_hz_median'] or 0) / 1e6:.0f} MHz{'' if ok else ' WRONG RESULT'}")
        del q, kk, v, o, times
    path = write_record(out, prov, t0, {"sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                                        "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


# set 17 (session 18): where a one-wave launch without a pipelined loop spends the time its block
# chain does not explain -- the corpus tile copy timed per block (start, load done, store issued)
# at one block of 128 B to 1056 blocks, 8-128 KiB a block: (M, N, block_M, block_N, threads)
CONFIGS_17 = ((1, 64, 1, 64, 32), (132, 64, 1, 64, 32), (1056, 64, 1, 64, 32), (768, 704, 64, 64, 256),
              (768, 2816, 64, 256, 256), (3072, 2816, 256, 256, 256), (4608, 2816, 64, 256, 256),
              (6144, 2816, 256, 256, 256))


# set 18 (session 18): the one-block-per-SM load phase against the threads that issue it: 132 blocks
# of 32 and 128 KiB at 64 ... 1024 threads, and 2 / 4 blocks per SM of 32 KiB at 128 threads
CONFIGS_18 = tuple((12 * bm, 11 * bn, bm, bn, t) for bm, bn in ((64, 256), (256, 256)) for t in (64, 128, 256, 512, 1024)) + (
    (24 * 64, 11 * 256, 64, 256, 128), (48 * 64, 11 * 256, 64, 256, 128))


def copy_run(out: Path, runs: int, configs=CONFIGS_17) -> int:
    """Timeline sets 17-18: tl_kernels.timed_copy's per-block timers for CONFIGS_17 / _18, each run behind
    the harness's flush; per config the spread of the blocks' starts (the wave's dispatch), the
    load and store phases, the span from the first start to the last end, and CUDA events around
    each run: with the same buffers every run (warm TLBs) and with a fresh buffer pair each run
    (as measure rotates its inputs)."""
    import torch

    from .provenance import base_provenance, write_record
    from .timing import elapsed_s, flush_buffer, flushed_runs
    from .tl_kernels import timed_copy
    prov = base_provenance("timeline", touch_gpu=True)
    t0 = time.time()
    params = [dict(M=c[0], N=c[1], block_M=c[2], block_N=c[3], threads=c[4]) for c in configs]
    kernels = [timed_copy(**p) for p in params]
    flush = flush_buffer()
    med = lambda xs: sorted(xs)[len(xs) // 2]
    results = []
    for p, k in zip(params, kernels):
        gx, gy = -(-p["N"] // p["block_N"]), -(-p["M"] // p["block_M"])
        pairs = [(torch.randn((p["M"], p["N"]), dtype=torch.float16, device="cuda"),
                  torch.empty((p["M"], p["N"]), dtype=torch.float16, device="cuda")) for _ in range(max(runs, 2))]
        times = torch.zeros((gx * gy, 6), dtype=torch.int64, device="cuda")
        k(pairs[0][0], pairs[0][1], times)
        torch.cuda.synchronize()
        ev = {}
        for mode in ("same", "fresh"):
            ms = []
            for r in range(runs):
                a, b = pairs[0] if mode == "same" else pairs[r % len(pairs)]
                ms.append(elapsed_s(flushed_runs(lambda: k(a, b, times), 1, flush))[0] * 1e6)
            ev[mode] = ms
        a, b = pairs[0]
        flush.zero_()
        torch.cuda.synchronize()
        k(a, b, times)
        torch.cuda.synchronize()
        ok = bool(torch.equal(a, b))
        t = times.cpu()
        base = int(t[:, 0].min())
        start = [int(x) - base for x in t[:, 0]]
        load = [int(x) - base for x in t[:, 1]]
        end = [int(x) - base for x in t[:, 2]]
        smid = [int(x) for x in t[:, 3]]
        row = {"params": p, "blocks": gx * gy, "correct": ok,
               "events_us_same_median": med(ev["same"]), "events_us_fresh_median": med(ev["fresh"]),
               "events_us_same": ev["same"], "events_us_fresh": ev["fresh"],
               "start_spread_ns": max(start) - min(start), "load_ns_median": med([l - s for s, l in zip(start, load)]),
               "load_ns_max": max(l - s for s, l in zip(start, load)),
               "store_issue_ns_median": med([e - l for l, e in zip(load, end)]),
               "block_ns_median": med([e - s for s, e in zip(start, end)]), "span_ns": max(end) - min(start),
               "start_ns": start, "load_ns": load, "end_ns": end, "smid": smid}
        results.append(row)
        print(f"copy {p['block_M']}x{p['block_N']} x{gx * gy}: starts spread {row['start_spread_ns'] / 1e3:.2f} us, load "
              f"{row['load_ns_median'] / 1e3:.2f} (max {row['load_ns_max'] / 1e3:.2f}), store issue "
              f"{row['store_issue_ns_median'] / 1e3:.2f}, span {row['span_ns'] / 1e3:.2f} us; events same "
              f"{row['events_us_same_median']:.2f} fresh {row['events_us_fresh_median']:.2f} us{'' if ok else ' WRONG'}")
        del pairs, times
    path = write_record(out, prov, t0, {"sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
                                        "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


def resident(start, end) -> int:
    """The most blocks alive at one time (a block ending at t frees its slot before one starting
    at t takes it)."""
    alive = peak = 0
    for _, d in sorted([(x, 1) for x in start] + [(x, -1) for x in end]):
        alive += d
        peak = max(peak, alive)
    return peak


def summarise(start, end, gx: int, slots: int) -> dict:
    n = len(start)
    dur = [e - s for s, e in zip(start, end)]
    T = statistics.median(dur)
    waves = []
    for w in range(0, (n + slots - 1) // slots):
        idx = range(w * slots, min((w + 1) * slots, n))
        starts = [start[i] for i in idx]
        gaps = [start[i] - start[i - gx] for i in idx if i - gx >= w * slots]
        waves.append({"wave": w, "start_spread_over_T": (max(starts) - min(starts)) / T,
                      "sharer_gap_median_over_T": statistics.median(gaps) / T if gaps else None,
                      "sharer_gap_p90_over_T": sorted(gaps)[int(0.9 * (len(gaps) - 1))] / T if gaps else None})
    return {"block_median_ns": T, "block_p10_ns": sorted(dur)[n // 10], "block_p90_ns": sorted(dur)[9 * n // 10],
            "kernel_ns": max(end) - min(start), "waves": waves}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--set", type=int, default=1, choices=tuple(range(1, 20)), help="configuration set")
    a = ap.parse_args(argv)
    if a.set in (9, 19):
        return attention_run(a.out, a.runs, CONFIGS_9 if a.set == 9 else CONFIGS_19)
    if a.set in (17, 18):
        return copy_run(a.out, a.runs, CONFIGS_17 if a.set == 17 else CONFIGS_18)
    if a.set == 15:
        return iters_run(a.out, a.runs)
    if a.set in (13, 14, 16):
        return affine_run(a.out, a.runs, {13: CONFIGS_13, 14: CONFIGS_14, 16: CONFIGS_16}[a.set])
    import torch

    from .provenance import base_provenance, write_record
    from .derive import sm_pace
    from .timing import flush_buffer
    from .tl_kernels import timed_matmul, timer_columns
    prov = base_provenance("timeline", touch_gpu=True)
    t0 = time.time()
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    loop_clock = a.set in (10, 12)
    first_gemm = a.set in (11, 12)
    params = [dict(M=c[0], N=c[1], K=c[2], block_M=c[3], block_N=c[4], block_K=c[5], num_stages=c[6], threads=c[7],
                   swizzle=bool(c[8]) if len(c) > 8 else False, epilogue=c[9] if len(c) > 9 else "direct",
                   **({"loop_clock": True} if loop_clock else {}), **({"first_gemm": True} if first_gemm else {}))
              for c in {1: CONFIGS, 2: CONFIGS_2, 3: CONFIGS_3, 4: CONFIGS_4, 5: CONFIGS_5, 6: _configs_6(), 7: _configs_7(),
                        8: CONFIGS_8, 10: CONFIGS_10, 11: CONFIGS_11, 12: CONFIGS_11}[a.set]]
    kernels = timed_matmul.par_compile(params, num_workers=16, ignore_error=True)
    flush = flush_buffer()
    results = []
    for p, k in zip(params, kernels):
        if k is None:
            results.append({"params": p, "error": "did not compile"})
            continue
        gx, gy = -(-p["N"] // p["block_N"]), -(-p["M"] // p["block_M"])
        A = torch.randn((p["M"], p["K"]), dtype=torch.float16, device="cuda")
        B = torch.randn((p["K"], p["N"]), dtype=torch.float16, device="cuda")
        C = torch.empty((p["M"], p["N"]), dtype=torch.float16, device="cuda")
        times = torch.zeros((gx * gy, timer_columns(loop_clock, first_gemm)), dtype=torch.int64, device="cuda")
        k(A, B, C, times)
        if a.set == 4:
            # do_bench-style: flush + launch back to back for ~0.3 s, so the clock settles where the
            # measure harness sees it; the records below are of the runs after that
            t_end = time.time() + 0.3
            while time.time() < t_end:
                for _ in range(10):
                    flush.zero_()
                    k(A, B, C, times)
                torch.cuda.synchronize()
        runs = []
        for _ in range(a.runs):
            _run_after_flush(k, (A, B, C, times), flush)
            runs.append(times.cpu())
        ok = bool(torch.allclose(C[:64, :64].float(), (A[:64].float() @ B[:, :64].float()), rtol=2e-2, atol=1e-1))
        last = runs[-1]
        start = [int(x) - int(last[:, 0].min()) for x in last[:, 0]]
        end = [int(x) - int(last[:, 0].min()) for x in last[:, 1]]
        smid = [int(x) for x in last[:, 2]]
        loop_end = [int(x) - int(last[:, 0].min()) for x in last[:, 5]]
        epi = sorted(e - l for e, l in zip(end, loop_end))
        clock_hz = [(int(c1) - int(c0)) / (int(e1) - int(s0)) * 1e9 for s0, e1, c0, c1 in
                    zip(last[:, 0], last[:, 1], last[:, 3], last[:, 4]) if int(e1) > int(s0)]
        phase_clocks = {}
        if loop_clock:
            # the loop's clock (start to the loop's end) and the epilogue's (loop end to the end)
            loop_hz = [(int(cl) - int(c0)) / (int(l) - int(s0)) * 1e9 for s0, l, c0, cl in
                       zip(last[:, 0], last[:, 5], last[:, 3], last[:, 6]) if int(l) > int(s0)]
            epi_hz = [(int(c1) - int(cl)) / (int(e1) - int(l)) * 1e9 for l, e1, cl, c1 in
                      zip(last[:, 5], last[:, 1], last[:, 6], last[:, 4]) if int(e1) > int(l)]
            phase_clocks = {"sm_clock_loop_hz_median": statistics.median(loop_hz) if loop_hz else None,
                            "sm_clock_epilogue_hz_median": statistics.median(epi_hz) if epi_hz else None}
        slots = resident(start, end)
        summ = [summarise([int(x) - int(r[:, 0].min()) for x in r[:, 0]], [int(x) - int(r[:, 0].min()) for x in r[:, 1]],
                          gx, slots) for r in runs]
        pace = sm_pace(start, end, smid)
        if first_gemm:
            # the first gemm's end (its tiles' wait included), and the spread of starts and ends
            first = [int(x) - int(last[:, 0].min()) for x in last[:, 7]]
            phase_clocks.update({
                "first_gemm_ns_median": statistics.median([f - s for f, s in zip(first, start)]),
                "first_gemm_ns_max": max(f - s for f, s in zip(first, start)),
                "loop_after_first_ns_median": statistics.median([l - f for l, f in zip(loop_end, first)]),
                "start_spread_ns": max(start) - min(start), "end_spread_ns": max(end) - min(end),
                "loop_end_spread_ns": max(loop_end) - min(loop_end), "first_gemm_ns": first})
            print(f"  first gemm done {phase_clocks['first_gemm_ns_median'] / 1e3:.2f} us after the start (max "
                  f"{phase_clocks['first_gemm_ns_max'] / 1e3:.2f}), then {phase_clocks['loop_after_first_ns_median'] / 1e3:.2f}"
                  f" us of loop; spread of starts {phase_clocks['start_spread_ns'] / 1e3:.2f}, loop ends "
                  f"{phase_clocks['loop_end_spread_ns'] / 1e3:.2f}, ends {phase_clocks['end_spread_ns'] / 1e3:.2f} us")
        results.append({"params": p, "grid": [gx, gy], "correct_corner": ok, "resident_blocks": slots, "sm_pace": pace,
                        "sm_clock_hz_median": statistics.median(clock_hz) if clock_hz else None, **phase_clocks,
                        "epilogue_ns_median": epi[len(epi) // 2], "epilogue_ns_p10": epi[len(epi) // 10],
                        "epilogue_ns_p90": epi[9 * len(epi) // 10],
                        "summary_per_run": summ, "start_ns": start, "end_ns": end, "loop_end_ns": loop_end, "smid": smid})
        print(f"{p['block_M']}x{p['block_N']} M{p['M']} N{p['N']} K{p['K']} {p['epilogue']}: block "
              f"{summ[-1]['block_median_ns'] / 1e3:.1f} us (epilogue {epi[len(epi) // 2] / 1e3:.2f} us), "
              f"kernel {summ[-1]['kernel_ns'] / 1e3:.0f} us, resident {slots}, SM pace spread {pace['std_over_mean']:.3f} "
              f"(range {pace['range_over_mean']:.3f}), SM clock {statistics.median(clock_hz) / 1e6 if clock_hz else 0:.0f} MHz"
              + (f" (loop {(phase_clocks['sm_clock_loop_hz_median'] or 0) / 1e6:.0f}, epilogue "
                 f"{(phase_clocks['sm_clock_epilogue_hz_median'] or 0) / 1e6:.0f})" if loop_clock else "")
              + f"{'' if ok else ' WRONG RESULT'}; sharer gap / T by wave "
              + " ".join(f"{w['sharer_gap_median_over_T']:.2f}" if w["sharer_gap_median_over_T"] is not None else "-"
                         for w in summ[-1]["waves"]))
        del A, B, C, times
    path = write_record(a.out, prov, t0, {"sm_count": sm, "results": results}, __doc__)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

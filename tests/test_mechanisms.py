"""Session-2 model mechanisms, each on a small case with the expected number derived by hand, and
the profile's microbenchmark-derived values reproduced from the recorded calibration runs."""
import glob
import json
import statistics
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import tileroof
from tileroof import counts, devices, memory, model, score
from tileroof import corpus
from tileroof.corpus import CASES
from tileroof.ir import trace as walk
from tileroof.gpu import derive
from tileroof.rank import order_key

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "h200"


def test_dirty_at_end_by_hand():
    # 30 MB of L2 holds the last reads and writes in the kernel's 1:3 mix -> 22.5 MB of writes
    assert memory.dirty_at_end(10e6, 30e6, 30e6) == pytest.approx(22.5e6)
    # all of a small output stays in L2
    assert memory.dirty_at_end(4e6, 2e6, 30e6) == pytest.approx(2e6)
    assert memory.dirty_at_end(4e6, 0, 30e6) == 0


def test_accumulator_store_waste_half_sector_for_16_bit_c():
    # fp16 C of the 4096x4096x512 GEMM: 8 contiguous 2-byte elements per row segment fill 16 of
    # 32 sector bytes, so the waste equals C's bytes; an fp32 C fills whole sectors
    c = CASES["gemm_nn_fp16_4096x4096x512"]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    assert r.counts.excess[("global", "sector_waste")] == 4096 * 4096 * 2
    c32 = CASES["gemm_nn_fp16_fp32out_4096"]
    r32 = tileroof.analyze(c32.kernel, device="h200", **c32.params)
    assert r32.counts.excess.get(("global", "sector_waste"), 0) == 0


def _gemm_rec(case):
    c = CASES[case]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    return [rec for rec in r.trace.ops if rec.kind == "gemm"]


def test_wgmma_shape_factor():
    dev = devices.load("h200")
    # flash attention block_N = 32: S = Q K^T issues m64n32k16 -> 48 / 32; O += P V has N = d = 128
    s_gemm, pv_gemm = _gemm_rec("sweep_fafwd_bm128_bn32_s2_t128")
    assert model.wgmma_shape_factor(s_gemm, dev) == pytest.approx(dev.wgmma_min_n / 32)
    assert model.wgmma_shape_factor(pv_gemm, dev) == 1.0
    assert model.wgmma_shape_factor(s_gemm, dev, "mma") == 1.0          # an mma.sync gemm has no narrow-wgmma cost


def test_consumer_compute_and_buffer_hold():
    assert model.consumer_compute(3.0, 1.0) == 4.0              # gemms, then the ALU work (warpgroups in phase)
    assert model.consumer_compute(0.0, 1.0) == 1.0
    assert model.buffer_hold(5.0, 3.0, 1) == 5.0                # one gemm holds its buffer all iteration
    assert model.buffer_hold(5.0, 3.0, 2) == 1.5                # two: each only during its own gemm


@pytest.mark.parametrize("threads,regs", [(128, 240), (256, 240), (384, 160)])
def test_consumer_registers_after_setmaxnreg(threads, regs):
    # (65536 - 24 x 128) / consumers, at most 240, in steps of 8
    c = CASES["sweep_fafwd_bm128_bn64_s2_t256"]
    r = tileroof.analyze(c.kernel, device="h200", **{**c.params, "threads": threads})
    assert r.timing.occupancy.warp_specialized
    assert r.timing.occupancy.consumer_regs_per_thread == regs


def test_accumulator_spill_applies_only_when_one_accumulator_does_not_fit():
    big = CASES["sweep_gemmntbf16_bm128_bn256_bk64_s3_t128_sw0"]       # 128x256 fp32 on 128 threads
    ok = CASES["sweep_gemmntbf16_bm128_bn256_bk64_s3_t256_sw0"]        # same tile, 256 threads
    dev = devices.load("h200")
    r_big = tileroof.analyze(big.kernel, device=dev, **big.params)
    r_ok = tileroof.analyze(ok.kernel, device=dev, **ok.params)
    no = replace(dev, accumulator_spill_factor=0.0)
    r_no = tileroof.analyze(big.kernel, device=no, **big.params)
    assert r_big.estimated_time > 3 * r_ok.estimated_time
    assert r_big.timing.pipeline["accumulator_spill_factor"] == dev.accumulator_spill_factor
    assert r_ok.timing.pipeline["accumulator_spill_factor"] == 1.0
    # the factor replaces the generic fragment-spill factor and multiplies the iteration's math
    # (one consumer warpgroup, no other compute): 2 x 128 x 256 x 64 FLOP = 1024 cycles at 4096
    # FLOP/clk/SM, plus the fixed cycles of a gemm iteration, at each kernel's modelled clock
    c_big, c_no = (r.timing.pipeline["terms_s"]["compute"] for r in (r_big, r_no))
    generic = r_no.timing.pipeline["register_spill_factor"]
    assert r_big.timing.pipeline["register_spill_factor"] == 1.0 and generic > 1.0
    ov, fixed = dev.fitted.get("iteration_overhead_s", 0.0), dev.gemm_iteration_cycles
    assert dev.tensor_flops_per_clk("bf16") == 4096
    f_big, f_no = r_big.timing.sm_clock_hz, r_no.timing.sm_clock_hz
    assert c_big == pytest.approx((1024 * dev.accumulator_spill_factor + fixed) / f_big + ov, rel=1e-6)
    assert c_no == pytest.approx((1024 + fixed) / f_no * generic + ov, rel=1e-6)


def test_register_spill_factor_prices_the_spilled_share_at_the_accumulator_spill_cost():
    dev = devices.load("h200")
    # fits: no slowdown
    assert model.register_spill_factor(200, 240, dev) == 1.0
    # 324 needed of 240: 84 / 324 of the fragments in local memory, at 4.64x for the whole
    assert model.register_spill_factor(324, 240, dev) == pytest.approx(1 + (dev.accumulator_spill_factor - 1) * 84 / 324)
    # a device without the measured factor: the plain ratio
    assert model.register_spill_factor(324, 240, replace(dev, accumulator_spill_factor=0.0)) == pytest.approx(1.35)
    # the 128x128 one-warpgroup flash attention spills: its iteration's compute scales by the factor
    c = CASES["sweep_fafwd_bm128_bn128_s1_t128"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert r.timing.pipeline["register_spill_factor"] > 1.8


def test_spilled_accumulator_moves_through_l2_and_the_hit_curve_share_to_dram():
    """128x256 fp32 accumulator (128 KiB, two 128-register wgmma fragments for one free slot: all
    of it moves) stored and reloaded each of 64 iterations by 768 blocks; the reuse distance of a
    spilled line is the 132 resident blocks' spill footprint, 132 x 131072 B = 17.30 MB, plus the
    tiles the wave streams per iteration: a full wave (132 of the 24 x 32 grid, row-major) touches
    6 rows of A (1 MiB each: 128 x 4096 bf16) and all 24 column panels of B (2 MiB each), 54 MiB
    over 64 iterations = 884736 B.  On the H200 hit curve (16.78 MB: 0.9901, 25.17 MB: 0.9363)
    18186240 B is 0.98144 hits, so 1.9 % of the 6.44 GB spilled comes back from DRAM and is
    written there."""
    big = CASES["sweep_gemmntbf16_bm128_bn256_bk64_s3_t128_sw0"]
    ok = CASES["sweep_gemmntbf16_bm128_bn256_bk64_s3_t256_sw0"]
    dev = devices.load("h200")
    m_big = tileroof.analyze(big.kernel, device=dev, **big.params).timing.memory
    m_ok = tileroof.analyze(ok.kernel, device=dev, **ok.params).timing.memory
    moved = 131072 * 768 * 64
    distance = 132 * 131072 + 54 * 2**20 / 64
    hit = 0.9901 + (distance - 16777216) / (25165824 - 16777216) * (0.9363 - 0.9901)
    assert m_big.l2_read - m_ok.l2_read == moved
    assert m_big.l2_write - m_ok.l2_write == moved
    assert m_big.dram_read - m_ok.dram_read == pytest.approx(moved * (1 - hit), abs=2)
    assert m_big.dram_write - m_ok.dram_write == pytest.approx(moved * (1 - hit), abs=2)
    assert any(op.buffer == "local (register spill)" for op in m_big.per_operand)


@pytest.mark.parametrize("bm,bn,threads,share", [
    (128, 256, 128, 1.0),    # 256 accumulator registers: 2 fragments of 128, 208 free -> 1 slot
    (256, 128, 128, 0.5),    # 4 fragments of 64, 3 slots: 2 stay, 2 pass through the third
    (128, 256, 256, 0.0),    # two consumer warpgroups: 128 registers each, fits
    (128, 128, 128, 0.0),    # 128 registers, fits
])
def test_spilled_share_from_wgmma_fragments(bm, bn, threads, share):
    c = CASES["sweep_gemmntbf16_bm128_bn256_bk64_s3_t128_sw0"]
    params = {**c.params, "block_M": bm, "block_N": bn, "threads": threads}
    r = tileroof.analyze(c.kernel, device="h200", **params)
    trace = r.trace
    occ = r.timing.occupancy
    gemm = next(rec for rec in trace.ops if rec.kind == "gemm")
    assert model.spilled_share(gemm, occ) == share
    moved = [op for op in r.timing.memory.per_operand if op.buffer == "local (register spill)"]
    per_iteration = share * bm * bn * 4
    if share:
        assert moved[0].issued == 2 * per_iteration * (4096 // bm) * (6144 // bn) * (4096 // 64)
    else:
        assert not moved


def test_drift_misses_solves_the_refetch_feedback():
    """Ten blocks each re-read a 10 MB tile 66 launches after its first reader (132 slots, wave 0,
    100 MB of distinct bytes per block time), SM pace spread 0.5, a sharp 25 MB cache.  Median gap
    distance: 66/132 x 0.5 x (0 + 1/2) x 100 MB = 12.5 MB; the |normal| deciles (x0.093 ... x2.906
    of the median) beyond 25 MB are the top two (26.7, 36.3 MB): 20 % of 100 MB re-fetched.  Those
    20 MB raise the intake to 120 MB per block time: median 15 MB, three deciles beyond (25.6 MB
    from x1.706): 30 MB; intake 130 MB: median 16.25 MB, x1.386 gives 22.5 MB (hit), still three:
    the fixed point is 30 MB (20 MB without the feedback)."""
    f = (np.zeros(10, dtype=np.int64), np.full(10, 66.0), np.full(10, 10e6))
    out = memory.drift_misses([f, None], np.array([100e6]), 132, 0.5, 25e6)
    assert out[1] == 0.0
    assert out[0] == pytest.approx(30e6, rel=1e-9)
    # no drift, or every distance inside the cache: nothing re-fetched
    assert memory.drift_misses([f], np.array([100e6]), 132, 0.0, 25e6) == [0.0]
    assert memory.drift_misses([f], np.array([10e6]), 132, 0.5, 25e6) == [0.0]


def test_pace_spreads_in_the_profile_come_from_the_recorded_timelines():
    docs = [json.loads(Path(f).read_text()) for f in sorted(glob.glob(str(RESULTS / "timeline-*.json")))]
    docs = [d for d in docs if derive.timeline_kind(d) == "pace"]
    assert len(docs) >= 2
    entries = derive.pace_entries(docs, "test")
    dev = devices.load("h200")
    assert entries["sm_pace_spread"]["value"] == pytest.approx(dev.pace_spread, abs=1e-4)
    assert entries["sm_pace_spread_drifting"]["value"] == pytest.approx(dev.pace_spread_drifting, abs=1e-4)


def test_accumulator_store_cost_in_the_profile_comes_from_the_recorded_epilogue_timeline():
    docs = [json.loads(Path(f).read_text()) for f in sorted(glob.glob(str(RESULTS / "timeline-*.json")))]
    docs = [d for d in docs if derive.timeline_kind(d) == "epilogue"]
    assert docs
    entries = derive.epilogue_entries(docs, "test")
    dev = devices.load("h200")
    assert entries["accumulator_store_ns_per_request"]["value"] * 1e-9 == pytest.approx(dev.store_request_s, rel=1e-3)
    assert entries["accumulator_store_queue_requests"]["value"] == pytest.approx(dev.store_queue_requests, abs=0.1)


def test_accumulator_store_time_counts_requests_past_the_queue():
    """A 128x256 fp16 accumulator stored from its fragment: 32768 / 8 = 4096 requests; with 1 ns per
    request and 400 queued, 3696 ns; its 64 KiB at 100 GB/s (655 ns) is the smaller bound."""
    from dataclasses import replace

    from tileroof import model
    dev = replace(devices.load("h200"), store_request_s=1e-9, store_queue_requests=400)
    assert model.accumulator_store_time(65536, 4096, dev, 100e9) == pytest.approx(3696e-9)
    assert model.accumulator_store_time(65536, 300, dev, 100e9) == pytest.approx(65536 / 100e9)
    # a device without the measurement: bytes at the L2 share only
    bare = replace(dev, store_request_s=0.0)
    assert model.accumulator_store_time(65536, 4096, bare, 100e9) == pytest.approx(65536 / 100e9)


# unswizzled 64x256 GEMMs seen to drift apart on the H200 (timeline: per-SM pace spread ~8 %)
DRIFTING = ("sweep_gemmwide_bm64_bn256_bk64_s4_t128_sw0", "probe_wave_m2048_n8192_k16384_bm64_bn256_s4_t128",
            "probe_wave_m4096_n8192_k8192_bm64_bn256_s4_t128", "probe_wave_m2048_n16384_k8192_bm64_bn256_s4_t128")


@pytest.mark.parametrize("name", DRIFTING)
def test_drifting_gemms_measured_dram_matches_the_drifting_estimate(name):
    """Recorded Nsight Compute DRAM bytes of the GEMMs whose blocks drifted apart lie within 25 % of
    the model's estimate for drifting blocks (and far above the in-step estimate)."""
    rec = score.load_records(score.DEFAULT_RESULTS)[name]
    meas = rec["ncu"]["dram__bytes_read.sum"] + rec["ncu"]["dram__bytes_write.sum"]
    r = tileroof.analyze(CASES[name].kernel, device="h200", **rec["params"])
    assert r.timing.dram_if_drifting == pytest.approx(meas, rel=0.25)
    assert r.timing.dram_in_step < 0.7 * meas


def _timeline_kernels():
    out = []
    for f in sorted(glob.glob(str(score.DEFAULT_RESULTS / "timeline-*.json"))):
        for r in json.load(open(f))["results"]:
            # (sets 13-14 time other kernels: the grouped GEMM's loop, "kind" cpasync / tma / grouped)
            if "sm_pace" in r and "kind" not in r and r["params"]["K"] >= 4096:     # short-K: mostly prologue/epilogue
                out.append((f.rsplit("/", 1)[-1], r["params"], r["sm_pace"]["std_over_mean"]))
    return out


# drifts on the H200 although the model says it keeps pace (NOTES, known gaps): the three-stage 64x256
# of the gemm_deep_bf16 grid (spread 5.8 %; window 0.76 of the round trip; measured after the rule
# was written: in bf16 its DRAM lies between the two estimates)
# and, since session 7 (the gemm iteration without the fitted 50 ns overhead, refitted to 0), a false
# positive at the rule's edge: gemm_deep's 128x128x64 four-stage tile keeps pace (0.4 %) but its
# drifting state's DRAM time (1720 us) just exceeds its in-step time (1708 us; measured 1982)
DRIFT_MISSED = {(6144, 12288, 6144, 64, 256, 64, 3), (6144, 12288, 6144, 128, 128, 64, 4)}


def test_drift_rule_against_the_recorded_sm_pace():
    """Every recorded timeline GEMM whose SMs split (pace spread >= 5 %) is predicted to drift, and
    none whose SMs keep pace (<= 1.5 %), but the one listed miss.  Partial splits (1.5-5 %) are left
    out: the rule is binary."""
    base = CASES["probe_drift_bm64_bn256_bk64_s3_t128"]
    seen = {"split": 0, "even": 0}
    for f, p, spread in _timeline_kernels():
        key = (p["M"], p["N"], p["K"], p["block_M"], p["block_N"], p["block_K"], p["num_stages"])
        if 0.015 < spread < 0.05 or key in DRIFT_MISSED:
            continue
        # the timer kernel's own switches (epilogue, first_gemm, ...) are not the corpus GEMM's
        r = tileroof.analyze(base.kernel, device="h200", **{**base.params, **{k: v for k, v in p.items() if k in base.params}})
        assert r.timing.pipeline["drifting"] == (spread >= 0.05), (f, key, spread)
        seen["split" if spread >= 0.05 else "even"] += 1
    assert seen["split"] >= 8 and seen["even"] >= 15


def test_drift_rule_parts():
    """model.drifts: a prefetch window ((stages - 1) x the iteration without latency stalls) of at
    least one DRAM round trip of a tile, and memory the bound: the L2 share in step, or DRAM once
    drifting (a drifting state slower at DRAM bandwidth than the launch in step) with a window of
    at least COMPUTE_BOUND_DRIFT_WINDOW round trips."""
    dev = devices.load("h200")
    rt = model.stream_time(dev.dram_stream, 40960, 1)      # 64x256x64 fp16 tile, one stage
    # compute-bound in step: a window of 1.5 round trips (past COMPUTE_BOUND_DRIFT_WINDOW)
    info = {"stages": 4, "tile_bytes": 40960, "iteration_s": 1e-6, "terms_s": {"compute": rt / 2, "l2": 0.0}}
    t = 1e-3
    assert model.drifts(info, t, 1.01 * t * dev.dram_bw, dev)
    assert not model.drifts(info, t, 0.99 * t * dev.dram_bw, dev)                 # not DRAM-bound when drifting
    assert not model.drifts({**info, "stages": 2}, t, 2 * t * dev.dram_bw, dev)    # window half the round trip
    # one round trip is not enough for a compute-bound launch (run 152: in step at 1.07 and 1.18)
    assert not model.drifts({**info, "stages": 3}, t, 2 * t * dev.dram_bw, dev)
    assert not model.drifts({**info, "terms_s": {"compute": rt / 3, "l2": 0.0}}, t, 2 * t * dev.dram_bw, dev)
    assert not model.drifts({**info, "stages": 1}, t, 2 * t * dev.dram_bw, dev)
    assert model.drifts({**info, "terms_s": {"compute": 0.0, "l2": rt / 3}}, t, 2 * t * dev.dram_bw, dev)
    # L2-share-bound in step: drifts even if the drifting state is not DRAM-bound
    assert model.drifts({**info, "terms_s": {"compute": rt / 3.1, "l2": rt / 3}}, t, 0.5 * t * dev.dram_bw, dev)


def test_rank_ties_ordered_by_dram():
    assert order_key(1e-3, dram_bytes=5e8) < order_key(1e-3, dram_bytes=6e8)
    assert order_key(1e-3 * (1 + 1e-9), dram_bytes=6e8) < order_key(1e-3 * (1 + 1e-9), dram_bytes=7e8)
    assert order_key(0.9e-3, dram_bytes=9e9) < order_key(1e-3, dram_bytes=1)   # a real time difference wins
    # equal estimates: less L2 slice traffic first, then fewer main-loop iterations, then less DRAM
    assert order_key(1e-3, l2_slice_bytes=1e9, loop_iterations=128, dram_bytes=9e8) < \
        order_key(1e-3, l2_slice_bytes=2e9, loop_iterations=64, dram_bytes=5e8)
    assert order_key(1e-3, loop_iterations=64, dram_bytes=9e8) < order_key(1e-3, loop_iterations=128, dram_bytes=5e8)
    assert order_key(1e-3, loop_iterations=64, dram_bytes=5e8) < order_key(1e-3, loop_iterations=64, dram_bytes=9e8)
    assert order_key(0.9e-3, l2_slice_bytes=9e9, loop_iterations=128, dram_bytes=9e8) < \
        order_key(1e-3, l2_slice_bytes=1e9, loop_iterations=64, dram_bytes=5e8)


def test_profile_microbenchmark_values_reproduce_from_recorded_runs():
    """The values merged into the H200 profile are what merge_calibration.py derives from the
    committed calibration runs (nothing typed in)."""
    from tileroof.gpu import derive
    dev = devices.load("h200")
    run = json.loads((RESULTS / "calibrate-20261129T180041Z.json").read_text())
    fit = derive.reduce_entries(run["results"]["reduce_latency_us"], dev, "x")
    assert dev.calibrated["loop_alu_factor"] == pytest.approx(fit["loop_alu_factor"]["value"], rel=1e-3)
    assert dev.reduce_latency_s * 1e9 == pytest.approx(fit["reduce_latency_ns"]["value"], rel=1e-3)
    gemm = json.loads((RESULTS / "calibrate-20261129T175640Z.json").read_text())["results"]["gemm_tile_tflops_fp16"]
    ns = []
    for rep in gemm["raw"]:
        t = {(tuple(c["shape"]), c["threads"], c["blocks_per_sm"]): c["per_call_s"] for c in rep["configs"]}
        ns.append(128 * t[((64, 32, 128), 128, 1)] / t[((64, 128, 128), 128, 1)])
    assert dev.wgmma_min_n == pytest.approx(statistics.median(ns), rel=1e-3)


def test_reuse_hit_share_curve_and_sharp_edge():
    curve = ((10.0, 1.0), (20.0, 0.5), (30.0, 0.0))
    assert memory.reuse_hit_share([5, 10, 15, 20, 25, 40], 99, curve).tolist() == [1.0, 1.0, 0.75, 0.5, 0.25, 0.0]
    assert memory.reuse_hit_share([29.0, 30.0, 31.0], 30.0).tolist() == [1.0, 1.0, 0.0]


def test_profile_hit_curve_reproduces_from_l2probe_run():
    from tileroof.gpu import derive
    run = json.loads((RESULTS / "l2probe-20261129T182454Z.json").read_text())
    curve = derive.hit_curve_entry(run, "x")["value"]
    dev = devices.load("h200")
    assert [tuple(p) for p in curve] == [(pytest.approx(d), pytest.approx(h)) for d, h in dev.l2_hit_curve]
    # by hand from the 30 MiB shared-tile row: 1 - (DRAM read - W) / (issued / 2 - W)
    row = next(r for r in run["results"] if r["stride"] == 4 and r["working_set_bytes"] == 30 << 20)
    w, issued, dram = row["working_set_bytes"], row["issued_read_bytes"], row["ncu"]["dram__bytes_read.sum"]
    assert dict((int(d), h) for d, h in curve)[w] == pytest.approx(1 - (dram - w) / (issued / 2 - w), abs=1e-4)


def test_only_the_default_l2probe_run_gives_the_hit_curve():
    """Of the committed l2probe records only the default launches' run (2026-11-29) is a hit-curve
    run; the session-15 mode runs (--rows, --pairs, --nostore, --streams) hold stride-4 rows too
    (unstored, or next to other patterns), which must not enter the profile's curve when a glob
    passes them all to merge_calibration.py."""
    from tileroof.gpu import derive
    runs = {p.name: json.loads(p.read_text()) for p in sorted(RESULTS.glob("l2probe-*.json"))}
    assert [n for n, r in runs.items() if derive.is_hit_curve_run(r)] == ["l2probe-20261129T182454Z.json"]
    nostore = runs["l2probe-20261202T171411Z.json"]
    assert any(r["stride"] == 4 and not r.get("groups") and r.get("store") is False for r in nostore["results"])
    # its stored stride-4 rows alone give a curve: the unstored ones are left out
    got = derive.hit_curve_entry(nostore, "x")["value"]
    assert len(got) == sum(1 for r in nostore["results"] if r["stride"] == 4 and not r.get("groups") and r["store"])


def test_l2_sharers_table_by_hand():
    """benchmarks/l2_sharers.py on run 99's l2probe --rows record: its stride-4 rows give the hit
    share the profile curve's formula gives, and a --rows row is 1 - (passes - 1) / (waves - 1),
    worked by hand (G = 132 groups on 132 SMs: one reader a wave, 2112 blocks = 16 waves)."""
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    import l2_sharers
    run = json.loads((RESULTS / "l2probe-20261202T165938Z.json").read_text())
    rows = l2_sharers.table(run)
    assert len(rows) == len(run["results"]) == 36
    for raw, row in zip(run["results"], rows):
        w, dram = raw["working_set_bytes"], raw["ncu"]["dram__bytes_read.sum"]
        if raw.get("groups") == 132:
            assert row["sharers"] == 1 and row["gap"] == 132 and row["reads"] == 16
            assert row["hit"] == pytest.approx(1 - (dram / w - 1) / 15)
        if not raw.get("groups") and raw["stride"] == 4:
            assert row["hit"] == pytest.approx(1 - (dram - w) / (raw["issued_read_bytes"] / 2 - w))
    # run 104 (--streams): B's bytes, read once, come off the DRAM reads before A's passes
    run = json.loads((RESULTS / "l2probe-20261202T175405Z.json").read_text())
    for raw, row in zip(run["results"], l2_sharers.table(run)):
        if raw.get("b_stream"):
            w = raw["working_set_bytes"]
            passes = (raw["ncu"]["dram__bytes_read.sum"] - raw["b_bytes"]) / w
            assert row["gap"] == 66 and row["sharers"] == 2 and row["dram_passes"] == pytest.approx(passes)
            assert row["hit"] == pytest.approx(1 - (passes - 1) / 15)


def test_calibrate_derives_the_same_gemm_constants_as_the_profile():
    """A full calibrate run writes the derived constants itself (tileroof.gpu.derive): on the
    recorded gemm_loop run they equal what the profile holds."""
    from tileroof.gpu import calibrate
    run = json.loads((RESULTS / "calibrate-20261129T175640Z.json").read_text())
    doc = calibrate.profile_doc("h200", run["provenance"], run["results"])
    got = calibrate.derived("h200", doc, run["results"], "x")
    dev = devices.load("h200")
    assert got["wgmma_min_n"]["value"] == pytest.approx(dev.wgmma_min_n)
    assert got["wgmma_accumulator_spill_factor"]["value"] == pytest.approx(dev.accumulator_spill_factor)


def test_stream_time_interpolates_the_measured_table():
    table = ((8192.0, 2, 400e-9), (16384.0, 2, 500e-9), (8192.0, 4, 250e-9), (16384.0, 4, 460e-9))
    assert model.stream_time(table, 12288, 2) == pytest.approx(450e-9)       # between sizes
    assert model.stream_time(table, 4096, 2) == pytest.approx(400e-9)        # below: the smallest's time
    assert model.stream_time(table, 32768, 2) == pytest.approx(1000e-9)      # above: proportional to bytes
    assert model.stream_time(table, 8192, 1) == pytest.approx(400e-9)        # fewer stages than measured: shallowest
    assert model.stream_time(table, 8192, 6) == pytest.approx(250e-9)        # more: the deepest


def test_profile_stream_table_reproduces_from_the_recorded_run():
    from tileroof.gpu import derive
    run = json.loads((RESULTS / "calibrate-20261129T173721Z.json").read_text())
    rows = derive.stream_table_entry(run["results"]["tma_load_latency_us"], "x")["value"]
    dev = devices.load("h200")
    assert [(b, s, pytest.approx(ns * 1e-9)) for b, s, ns in rows] == list(dev.dram_stream)


def test_power_limited_clock_by_hand():
    """Cube law from the sustained-matmul point (activity 1 at 1481.25 MHz), capped at the tensor
    boost clock: on the catalog device the 1830 MHz the datasheet's tensor peaks are computed at
    (not the 1980 MHz FP32/FP64 boost), on the calibrated H200 the clock timeline sets 8 and 9
    measured for tensor work in short launches (derive.tensor_clock_entry)."""
    catalog = devices.load("h200", calibrated=False)
    assert catalog.clock_hz == pytest.approx(1980e6)
    assert model.tensor_boost_clock(catalog) == pytest.approx(989.5e12 / (132 * 4096), rel=1e-3)
    dev = devices.load("h200")
    assert dev.tensor_clock_hz == pytest.approx(1481.25e6)
    ceiling = model.tensor_boost_clock(dev)
    assert ceiling == pytest.approx(dev.calibrated["tensor_boost_clock_mhz"] * 1e6)
    assert 1481.25e6 < ceiling < 1830e6
    gap = model.TIMING_FLUSH_BYTES / dev.dram_bw + dev.launch_s
    long = 1e9 * gap                                      # duty ~ 1
    assert model.power_limited_clock(1.0, long, dev) == pytest.approx(1481.25e6, rel=1e-6)
    assert model.power_limited_clock(0.7, long, dev) == pytest.approx(1481.25e6 * 0.7 ** (-1 / 3), rel=1e-6)
    assert model.power_limited_clock(1.0, 3 * gap, dev) == pytest.approx(1481.25e6 * 0.75 ** (-1 / 3), rel=1e-9)  # duty 3/4
    assert model.power_limited_clock(0.1, long, dev) == pytest.approx(ceiling)   # capped at the tensor boost clock
    # a device whose catalog gives no tensor boost clock is capped at its boost clock
    assert model.tensor_boost_clock(devices.load("a100_80gb")) == pytest.approx(1410e6)


def test_tensor_clock_entry_by_hand():
    """The measured ceiling is the median clock of short launches whose blocks stay tensor-bound:
    a direct-epilogue GEMM (stores at a higher clock) and a long launch (power-limited) are left out."""
    from tileroof.gpu import derive

    def launch(us, mhz, **params):
        return {"params": params, "sm_clock_hz_median": mhz * 1e6, "start_ns": [0, 100], "end_ns": [us * 1e3, 500]}
    doc = {"results": [launch(20, 1700, epilogue="shared"), launch(30, 1800, epilogue="shared"), launch(25, 1760),
                       launch(40, 1990, epilogue="direct"), launch(900, 1400, epilogue="shared")]}
    entry = derive.tensor_clock_entry([doc], "x")["tensor_boost_clock_mhz"]
    assert entry["value"] == pytest.approx(1760.0)
    assert derive.tensor_clock_entry([{"results": [launch(900, 1400)]}], "x") == {}


def test_model_clock_tracks_the_nsight_clock():
    """The model's power-limited clock against Nsight Compute's SM clock (gpc__cycles_elapsed per
    second; single replay, clocks not locked) over every recorded kernel with tensor work: median
    |error| 6.8 % when written, 5.1 % before the tensor boost clock cap, 2.1 % with the measured one
    (session 8, 352 kernels; Nsight's replay has no flush gaps, so it is a loose check)."""
    recs = score.load_records(score.DEFAULT_RESULTS)
    errs = []
    for name, rec in recs.items():
        ncu = rec.get("ncu") or {}
        if name not in CASES or not (rec.get("correct") or {}).get("ok") \
                or "gpc__cycles_elapsed.avg.per_second" not in ncu:
            continue
        r = tileroof.analyze(CASES[name].kernel, device="h200", **(rec.get("params") or CASES[name].params))
        if r.timing.sm_clock_hz and any(k.startswith("tensor") for k in r.timing.resource_s):
            errs.append(abs(r.timing.sm_clock_hz / ncu["gpc__cycles_elapsed.avg.per_second"] - 1))
    assert len(errs) > 100
    assert statistics.median(errs) < 0.03


def test_tpc_mates_merge_identical_tile_requests_by_hand():
    """M=256 N=512 K=128, 128x128 tiles, one wave of 8 blocks in launch order (x fastest).
    Blocks 2j and 2j+1 run on one TPC and read the same A row panel (same by), different B
    columns: 8 x (32 KiB A + 32 KiB B) issued; merged, A counts once per pair: 4 x 32 + 8 x 32 KiB."""
    from tests.kernels import gemm
    from tileroof.ir import trace as walk
    tr = walk(gemm, dict(M=256, N=512, K=128, bm=128, bn=128, bk=64))
    kib = 1024
    plain = memory.estimate(tr, 132, 60e6, 2)
    merged = memory.estimate(tr, 132, 60e6, 2, merge_group=2)
    assert plain.l2_read == merged.l2_read == 8 * 64 * kib
    assert plain.l2_read_merged is None and plain.l2_slice_read == plain.l2_read
    assert merged.l2_slice_read == 4 * 32 * kib + 8 * 32 * kib
    # one block per wave: nothing to merge
    assert memory.estimate(tr, 1, 60e6, 2, merge_group=2).l2_slice_read == 8 * 64 * kib
    # DRAM traffic does not depend on merging
    assert merged.dram_read == plain.dram_read


def test_modelled_l2_read_sectors_match_nsight_over_recorded_gemms():
    """Recorded H200 GEMMs: L2 read sectors the SMs send (Nsight) against the modelled tile bytes
    after TPC merging (median within 10 %), and better than the issued bytes."""
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    import l2_merge_check
    rows = l2_merge_check.rows()
    assert len(rows) >= 100
    merged = statistics.median(abs(r["merged"] / r["measured"] - 1) for r in rows)
    issued = statistics.median(abs(r["issued"] / r["measured"] - 1) for r in rows)
    assert merged <= 0.10 and merged < issued / 3


def test_l2merge_run_shows_tpc_mates_merge():
    """The recorded l2merge run: TPC mates reading one tile sequence send about half the sectors
    of blocks that read their own (the device catalog's l2_request_merge_sms = 2)."""
    runs = sorted(glob.glob(str(RESULTS / "l2merge-*.json")))
    assert runs
    res = json.load(open(runs[-1]))["results"]
    for tile in {x["tile_bytes"] for x in res}:
        own = next(x for x in res if x["tile_bytes"] == tile and x["group"] == 1)
        mates = next(x for x in res if x["tile_bytes"] == tile and x["group"] == 2 and x["offset"] == 0)
        assert own["slice_read_over_issued"] > 0.9
        assert mates["slice_read_over_issued"] == pytest.approx(0.5, abs=0.05)
    assert devices.load("h200").l2_merge_group == 2


@pytest.mark.parametrize("threads, cycles", [(128, 256 + 197.7), (256, max(256, 256 / 2 + 396.7))])
def test_gemm_iteration_law_by_hand(threads, cycles):
    """A 128x128x32 fp16 iteration is 2 x 128 x 128 x 32 / 4096 = 256 cycles of math; one consumer
    warpgroup adds the fixed 197.7 cycles, two take max(math, math / 2 + 396.7) (the profile's
    gemm_pipe values), at the kernel's modelled clock, plus the fitted per-iteration overhead."""
    from tests.kernels import gemm
    dev = devices.load("h200")
    assert (dev.gemm_iteration_cycles, dev.gemm_iteration_cycles_overlapped) == (197.7, 396.7)
    r = tileroof.analyze(gemm, device=dev, M=4096, N=4096, K=4096, bm=128, bn=128, bk=32, stages=3,
                         threads=threads)
    ov = dev.fitted.get("iteration_overhead_s", 0.0)
    assert r.timing.pipeline["terms_s"]["compute"] == pytest.approx(cycles / r.timing.sm_clock_hz + ov, rel=1e-6)


def test_refill_law_by_hand():
    """A warp-specialised loop's producer refills a stage only after the gemm that read it: S stages
    cover the tile latency plus the stage's hold, (L + hold) / S; a cp.async loop without a producer
    loads tile k + S - 1 at the top of trip k, L / (S - 1).  A 128x128x32 fp16 GEMM at one warpgroup
    on an L2-resident problem (no DRAM-streamed share): the latency term is (L + compute) / 2 at two
    stages, (L + compute) / 3 at three."""
    from tests.kernels import gemm
    assert model.ws_refill_period(650e-9, 250e-9, 2) == pytest.approx(450e-9)
    assert model.ws_refill_period(650e-9, 250e-9, 1) == pytest.approx(900e-9)
    dev = replace(devices.load("h200"), dram_stream=())    # (no DRAM-streamed share to mix in)
    L = dev.fitted["load_latency_s"]
    for stages in (2, 3):
        r = tileroof.analyze(gemm, device=dev, M=1024, N=1024, K=1024, bm=128, bn=128, bk=32, stages=stages,
                             threads=128)
        assert r.timing.occupancy.warp_specialized
        terms = r.timing.pipeline["terms_s"]
        assert terms["latency"] == pytest.approx((L + terms["compute"]) / stages, rel=1e-6)
    case = CASES["gemm_nows_fp16_1024x1024x8192_bm128_bn128_bk64_s2_t256"]       # cp.async, two stages
    r = tileroof.analyze(case.kernel, device=dev, **case.params)
    assert not r.timing.occupancy.warp_specialized
    assert r.timing.pipeline["terms_s"]["latency"] == pytest.approx(L / (2 - 1), rel=1e-6)
    # a latency-bound loop says which law set its iterations
    case = CASES["stagecheck_gemm_fp16_6144x6144x4096_bm128_bn128_bk32_s2_t128_sw1"]
    r = tileroof.analyze(case.kernel, **case.params)
    assert r.timing.pipeline["iteration_bound"] == "latency"
    assert any("refills a stage" in a and "/ 2" in a for a in r.assumptions)


def test_followers_schedule_by_hand():
    """model._schedule_followers on 2 slots, blocks of 10 s in step and 4 s as followers, lag 1 s.
    Groups of two blocks (0 0 1 1 2 2): both of group 0 start at 0 together (in step, end 10),
    then group 1 likewise (10 .. 20): no block ever follows -- the aligned launch, 30 s.  Groups
    of three (0 0 0 1 1 1): blocks 0, 1 start at 0 (end 10); block 2 starts at 10, ten seconds
    after its group's first, and follows: max(10 + 4, 0 + 10) = 14; block 3 (group 1) starts at
    10 alone (end 20); block 4 at 14 follows it: max(18, 10 + 10) = 20; block 5 at 20: max(24,
    20) = 24: block 4 started 4 s after its leader and could not pass it."""
    slow, fast = np.full(6, 10.0), np.full(6, 4.0)
    order = np.arange(6)
    t, share = model._schedule_followers(slow, fast, None, np.array([0, 0, 1, 1, 2, 2]), order, 2, 1.0)
    assert (t, share) == (30.0, 0.0)
    t, share = model._schedule_followers(slow, fast, None, np.array([0, 0, 0, 1, 1, 1]), order, 2, 1.0)
    assert t == 24.0 and share == pytest.approx(3 / 6)
    # without groups to follow (every block its own), the plain schedule
    t, share = model._schedule_followers(slow, fast, None, np.arange(6), order, 2, 1.0)
    assert t == model._schedule(slow, order, 2) == 30.0 and share == 0.0


def test_followers_schedule_in_part_for_long_launches(monkeypatch):
    """A launch past FOLLOWER_SIM_BLOCKS is scheduled in part (here its first quarter, 31 waves)
    and scaled: within 1 % of the whole schedule, causal-like unequal blocks too."""
    n = 16384
    groups, order = np.arange(n) // 64, np.arange(n)
    for slow in (np.full(n, 10.0), np.tile(np.arange(1.0, 65.0), n // 64)):
        whole = model._schedule_followers(slow, 0.7 * slow, None, groups, order, 132, 0.5)
        monkeypatch.setattr(model, "FOLLOWER_SIM_BLOCKS", 4096)
        part = model._schedule_followers(slow, 0.7 * slow, None, groups, order, 132, 0.5)
        monkeypatch.setattr(model, "FOLLOWER_SIM_BLOCKS", 16384)
        assert part[0] == pytest.approx(whole[0], rel=0.01)


def test_loop_sharer_groups():
    """memory.loop_sharer_groups: flash attention's blocks share K and V with the other blocks of
    their (batch, head) -- one group per head, query tiles along x; a GEMM's blocks share A with
    their row and B with their column, never both (no groups); a block-sparse loop picks its own
    tiles (no groups); a PrimFunc of several launches has no single grid (each launch is asked)."""
    c = CASES["sweep_fafwd_bm64_bn32_s1_t128"]                      # b4 h32 s2048, 64-row query tiles
    r = tileroof.analyze(c.kernel, **c.params)
    g = memory.loop_sharer_groups(r.trace)
    assert r.trace.grid == (32, 32, 4)
    assert g is not None and int(g.max()) + 1 == 32 * 4
    assert (g.reshape(4, 32, 32) == g.reshape(4, 32, 32)[:, :, :1]).all()      # constant along x
    c = CASES["gemm_nn_fp16_4096_s1"]
    assert memory.loop_sharer_groups(tileroof.analyze(c.kernel, **c.params).trace) is None
    c = CASES["up_blocksparse_attn_fp16_b2_h32_s8192_d128_sink1_win8"]
    assert memory.loop_sharer_groups(tileroof.analyze(c.kernel, **c.params).trace) is None
    # two launches in one PrimFunc: groups belong to each launch's own grid
    c = CASES["up_gqa_decode_split16_fp16_b16_h32_g8_s8192_d128"]
    r = tileroof.analyze(c.kernel, **c.params)
    assert r.trace.launches and memory.loop_sharer_groups(r.trace) is None


def test_followers_in_straddling_and_aligned_attention():
    """The one-stage 64x32 attention on the H200's 132 slots: 64 blocks a head straddle waves and
    most blocks run as followers at their compute; 66 blocks a head fill each wave with whole
    heads that start together, and none follows (runs 115, 122-124: ~0.56 against ~0.75-0.80 us an
    iteration)."""
    straddle = CASES["stagecheck_fa_fp16_b2_h16_s4096_d128_bm64_bn32_s1_t128"]
    aligned = CASES["stagecheck_fa_fp16_b1_h32_s4224_d128_bm64_bn32_s1_t128"]
    ps = tileroof.analyze(straddle.kernel, **straddle.params).timing.pipeline
    pa = tileroof.analyze(aligned.kernel, **aligned.params).timing.pipeline
    assert ps["follower_share"] > 0.5 and pa["follower_share"] == 0.0
    assert ps["follower_iteration_s"] == pytest.approx(ps["terms_s"]["compute"], rel=1e-6)
    assert ps["follower_iteration_s"] < 0.75 * ps["iteration_s"]


def test_second_gemm_cost_by_hand():
    """model.gemm_fixed_cycles: one gemm pays gemm_pipe's cost; each further gemm what attn_pipe
    measured a second one to add -- one warpgroup 197.7 + 118.8 = 316.5 cycles for attention's
    two gemms, two warpgroups 396.7 + 49.7 = 446.4 -- and without that measurement as much as the
    first."""
    dev = devices.load("h200")
    assert (dev.gemm_wait_cycles, dev.gemm_wait_cycles_overlapped) == (118.8, 49.7)
    assert model.gemm_fixed_cycles(dev, 1, 1) == 197.7
    assert model.gemm_fixed_cycles(dev, 2, 1) == pytest.approx(316.5)
    assert model.gemm_fixed_cycles(dev, 2, 2) == pytest.approx(446.4)
    bare = replace(dev, gemm_wait_cycles=None, gemm_wait_cycles_overlapped=None)
    assert model.gemm_fixed_cycles(bare, 2, 1) == pytest.approx(2 * 197.7)
    assert model.gemm_fixed_cycles(bare, 2, 2) == pytest.approx(2 * 396.7)


def test_profile_second_gemm_cost_reproduces_from_the_attn_pipe_run():
    """Run 43 (head dims 64, 96, 128; block_N 32-96): one warpgroup, twelve points of 291-435
    cycles besides the math (median 316.5); two, the eight exposed points of 360-546 (median
    446.4); less gemm_pipe's one-gemm costs."""
    run = json.loads((RESULTS / "attn_pipe-20261129T225015Z.json").read_text())
    dev = devices.load("h200")
    e = derive.second_gemm_entries(run, dev.tensor_flops_per_clk("fp16"), dev.gemm_iteration_cycles,
                                   dev.gemm_iteration_cycles_overlapped, "test")
    assert e["gemm_wait_cycles"]["value"] == dev.gemm_wait_cycles
    assert e["gemm_wait_cycles_overlapped"]["value"] == dev.gemm_wait_cycles_overlapped
    assert len(e["gemm_wait_cycles"]["points"]) == 12 and len(e["gemm_wait_cycles_overlapped"]["points"]) == 8


def test_profile_iteration_cycles_reproduce_from_the_gemm_pipe_run():
    run = json.loads((RESULTS / "gemm_pipe-20261129T204951Z.json").read_text())
    dev = devices.load("h200")
    e = derive.iteration_cost_entries(run, dev.tensor_flops_per_clk("fp16"), "test")
    assert e["gemm_iteration_cycles"]["value"] == dev.gemm_iteration_cycles
    assert e["gemm_iteration_cycles_overlapped"]["value"] == dev.gemm_iteration_cycles_overlapped
    # the one-warpgroup slopes of that run are the per-clock peak the catalog derives from the
    # whitepaper (4096 FLOP/clk/SM), within 5 %
    slopes = [f["flops_per_clk_sm_from_slope"] for f in run["fits"] if f["shape"][2] == 128]
    assert all(abs(s / 4096 - 1) < 0.05 for s in slopes)


def test_reuse_distance_is_the_union_of_the_waves_in_between():
    """512x512x1024 fp16 GEMM, 128x128 tiles, unswizzled: a 4x4 grid, 3 blocks per wave.  Each A
    row panel and B column panel is P = 128 x 1024 x 2 B.  Waves (row, col): w0 r0c0-2, w1 r0c3
    r1c0-1, w2 r1c2-3 r2c0, w3 r2c1-3, w4 r3c0-2, w5 r3c3.  B2 is used in w0 and again in w2: the
    waves between touch {A0 A1 B3 B0 B1} and {A1 A2 B2 B3 B0}, 10 P summed but 7 P distinct; B1
    (w1 -> w3) 9 P summed, 6 P distinct; B0 (w2 -> w4) 8 P, 6 P; B3 (w3 -> w5) 6 P, 5 P; every
    other reuse spans one wave of at most 5 P.  With a sharp 7 P cache all reuses hit: A and B
    each come from DRAM once (4 P); with 5.5 P, B0, B1 and B2 miss once more (7 P)."""
    c = CASES["gemm_nn_fp16_4096"]
    params = {**c.params, "M": 512, "N": 512, "K": 1024, "block_M": 128, "block_N": 128}
    trace = tileroof.analyze(c.kernel, device="h200", **params).trace
    P = 128 * 1024 * 2
    for cap, b_tiles in ((7 * P, 4), (5.5 * P, 7)):
        mem = memory.estimate(trace, 3, cap, 1, (), 0.0, 1)
        dram = {op.buffer: op.dram for op in mem.per_operand}
        assert dram["A"] == 4 * P and dram["B"] == b_tiles * P, (cap / P, dram)


def test_memory_states_from_one_pass_equal_separate_passes():
    """model.estimate asks memory.estimates for the in-step and the drifting state at once; each
    equals what a pass for that state alone gives (nothing of one state leaks into the other)."""
    c = CASES["probe_wave_m4096_n8192_k8192_bm64_bn256_s4_t128"]
    dev = devices.load("h200")
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    args = (r.trace, r.timing.slots, dev.l2_bytes, dev.l2_partitions, dev.l2_hit_curve)
    states = ((dev.pace_spread, dev.l2_merge_group), (dev.pace_spread_drifting, 1))
    both = memory.estimates(*args, states)
    alone = [memory.estimates(*args, (s,))[0] for s in states]
    assert both == alone
    assert both[1].dram_bytes > 2 * both[0].dram_bytes           # the drifting state re-fetches B
    assert both[0].l2_read_merged is not None and both[1].l2_read_merged is None


FLUSHWB = RESULTS / "flushwb-20261201T105859Z.json"


def test_flush_writeback_by_hand():
    # a kernel that brings in one L2's worth evicts 1 - 1/e of the flush's dirty lines
    assert memory.flush_writeback(60e6, 0, 30e6, 60e6) == pytest.approx(30e6 * (1 - np.exp(-1)))
    assert memory.flush_writeback(10e6, 50e6, 30e6, 60e6) == pytest.approx(30e6 * (1 - np.exp(-1)))
    assert memory.flush_writeback(1e12, 0, 30e6, 60e6) == pytest.approx(30e6)      # a long stream evicts them all
    assert memory.flush_writeback(1e9, 0, 0.0, 60e6) == 0.0                        # no flush state known


def test_dram_time_adds_the_flush_writeback_by_read_share():
    dev = replace(devices.load("h200"), dram_bw=4e12, flush_dirty_bytes=30e6, l2_bytes=60e6,
                  flush_writeback_cost=((0.0, 0.0), (1.0, 0.3e-12)))
    wb = 30e6 * (1 - np.exp(-2))
    # 120 MB read: 30 us at 4 TB/s, plus wb bytes at the read-only cost (0.3 ns per kB)
    t, got = model.dram_time(120e6, 0, dev)
    assert got == pytest.approx(wb) and t == pytest.approx(30e-6 + wb * 0.3e-12)
    # half reads: half the cost per byte; write-only: none
    assert model.dram_time(60e6, 60e6, dev)[0] == pytest.approx(30e-6 + wb * 0.15e-12)
    assert model.dram_time(0, 120e6, dev)[0] == pytest.approx(30e-6)
    assert model.dram_time(0, 0, dev) == (0.0, 0.0)


def test_profile_flush_entries_reproduce_from_the_flushwb_run():
    run = json.loads(FLUSHWB.read_text())
    got = derive.flushwb_entries(run, "x")
    dev = devices.load("h200")
    assert got["timing_flush_dirty_mb"]["value"] * 1e6 == pytest.approx(dev.flush_dirty_bytes)
    assert [(pytest.approx(s), pytest.approx(ns * 1e-15)) for s, ns in got["flush_writeback_ns_per_mb"]["value"]] \
        == list(dev.flush_writeback_cost)
    # by hand: the zero_ of 256 MiB after a clean L2 writes 239.0 MB of its 268.4 to DRAM
    dirty = [p for p in run["ncu"]["pairs"] if p["mode"] == "dirty"]
    assert statistics.median((256 << 20) - p["flush_op"]["dram__bytes_write.sum"] for p in dirty) / 1e6 \
        == pytest.approx(29.49, abs=0.01)
    # and the read flush that follows a zero_ writes the same lines back (besides its own 512 MiB temporary)
    clean = [p["flush_op"]["dram__bytes_write.sum"] - (512 << 20) for p in run["ncu"]["pairs"] if p["mode"] == "clean"]
    assert 25e6 < statistics.median(clean) < 30e6


def test_flush_writeback_against_the_recorded_streams():
    """The eviction law against what Nsight counted (stream writes beyond its own after a dirty
    flush) and the time law against the event-timed dirty - clean difference, on every stream of
    8 MiB or more per array (the cost table was read off the 128-512 MiB ones only)."""
    run = json.loads(FLUSHWB.read_text())
    dev = devices.load("h200")
    for p in run["ncu"]["pairs"]:
        if p["mode"] != "dirty" or p["n_out"]:
            continue     # read-only streams: every DRAM write is a written-back flush line
        wb = memory.flush_writeback(p["read_bytes"], 0, dev.flush_dirty_bytes, dev.l2_bytes)
        assert abs(wb - p["stream"]["dram__bytes_write.sum"]) < 3.5e6, p["mib_per_array"]
    for r in run["timed"]:
        if r["mib_per_array"] < 8:
            continue
        measured = statistics.median([r["dirty_median_s"] - r["clean_median_s"], r["dirty2_median_s"] - r["clean2_median_s"]])
        t_clean, _ = model.dram_time(r["read_bytes"], r["write_bytes"], replace(dev, flush_dirty_bytes=0.0))
        t_dirty, _ = model.dram_time(r["read_bytes"], r["write_bytes"], dev)
        assert abs((t_dirty - t_clean) - measured) < 1.3e-6, (r["n_in"], r["n_out"], r["mib_per_array"])


def test_untiled_read_by_hand():
    curve = ((10e6, 1.0), (30e6, 0.5), (50e6, 0.0))
    # a gather computed from the block index re-reading a 100 MB buffer 9x over 20 waves: re-reads come
    # after a wave's share (5 MB) plus the wave's tiles (5 MB) -> 10 MB: all hit, the footprint once
    d, _ = memory.untiled_read(900e6, 100e6, False, 20, 5e6, 60e6, 30e6, curve)
    assert d == pytest.approx(100e6)
    # over 4 waves: 25 MB + 5 MB = 30 MB -> half the re-reads miss
    d, _ = memory.untiled_read(900e6, 100e6, False, 4, 5e6, 60e6, 30e6, curve)
    assert d == pytest.approx(100e6 + 800e6 * 0.5)
    # indices read from a tensor: the buffer once only if it fits the L2, else every issued byte
    assert memory.untiled_read(900e6, 100e6, True, 20, 5e6, 60e6, 30e6, curve)[0] == pytest.approx(900e6)
    assert memory.untiled_read(900e6, 50e6, True, 20, 5e6, 60e6, 30e6, curve)[0] == pytest.approx(50e6)


def test_untiled_reread_distance_bounded_by_the_launch_traffic():
    curve = ((10e6, 1.0), (30e6, 0.5), (50e6, 0.0))
    # a 1 MB table re-read 4096x (4.3 GB issued) by a launch that moves 10.7 GB in all: between two
    # touches of a byte the launch moves 10.7 GB / 4096 = 2.6 MB on average, whatever the walk's
    # wave-apart distance (1 MB / 16 + 55 MB, past the curve's end): all hit, the table once
    issued, unique = 4096 * 1.048576e6, 1.048576e6
    d, _ = memory.untiled_read(issued, unique, False, 16, 55e6, 60e6, 30e6, curve, kernel_bytes=10.7e9)
    assert d == pytest.approx(unique)
    # without the launch's traffic: the wave-apart distance, every re-read a miss
    d, _ = memory.untiled_read(issued, unique, False, 16, 55e6, 60e6, 30e6, curve)
    assert d == pytest.approx(issued)
    # the bound only shortens the distance: the 9x gather above (900 MB of a 1 GB launch: 111 MB
    # between touches, longer than its 30 MB walk) keeps the walk's distance
    d, _ = memory.untiled_read(900e6, 100e6, False, 4, 5e6, 60e6, 30e6, curve, kernel_bytes=1e9)
    assert d == pytest.approx(100e6 + 800e6 * 0.5)


def test_group_scale_table_stays_in_l2():
    # the int4 dequant GEMM's scale table (N = 8192 rows x 64 groups x 2 B = 1 MiB) scale table, read
    # through a non-affine group index by every block each K tile: DRAM brings it once
    r = tileroof.analyze(CASES["probe_dequant_int4_gscale_fp16_m2048_n8192_k8192"].kernel,
                         **CASES["probe_dequant_int4_gscale_fp16_m2048_n8192_k8192"].params)
    scale = [o for o in r.timing.memory.per_operand if o.buffer == "Scale"]
    assert scale and scale[0].unique == 8192 * 64 * 2 and scale[0].dram == scale[0].unique


def test_gathered_convolution_against_the_recorded_run():
    """Run 51 (the model's untiled rule was written after it): the gathered 3x3 convolution over a
    143 MB input reads its footprint from DRAM, not the 9x it issues."""
    rec = json.loads((RESULTS / "measure-20261201T114854Z.json").read_text())["cases"]
    name = "conv2d_im2col_gather_fp16_n64_66x66_c256_f256_k3_p0"
    c = CASES[name]
    r = tileroof.analyze(c.kernel, **c.params)
    ncu = rec[name]["ncu"]
    assert r.dram_bytes == pytest.approx(ncu["dram__bytes_read.sum"] + ncu["dram__bytes_write.sum"], rel=0.05)
    assert r.global_bytes > 8 * r.dram_bytes        # what it issues: every tap re-reads the input


def test_data_indexed_storages_are_listed():
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def lookup(N=4096, V=1 << 20, D=64):
        @T.prim_func
        def main(Idx: T.Tensor((N,), "int32"), E: T.Tensor((V, D), "float16"), O: T.Tensor((N, D), "float16")):
            with T.Kernel(N // 64, threads=128) as bx:
                for i, j in T.Parallel(64, D):
                    O[bx * 64 + i, j] = E[Idx[bx * 64 + i], j]
        return main
    r = tileroof.analyze(lookup)
    assert "E" in r.trace.data_indexed and "Idx" not in r.trace.data_indexed


def test_a_block_beyond_the_shared_memory_limit_is_flagged_and_ranked_last():
    """Run 58: the 64x256 attention tile at head dim 128 (272 KiB of shared memory) failed to launch
    on the H200 (227 KiB per block): the result says so, and rank puts it after every config that
    launches."""
    from tileroof.rank import rank_configs
    case = CASES["sweep_fas7_bm64_bn256_s2_t128"]
    r = tileroof.analyze(case.kernel, device="h200", **case.params)
    assert r.launch_error and "shared memory" in r.launch_error
    assert r.to_dict()["launch_error"] == r.launch_error
    ok = CASES["sweep_fas7_bm128_bn128_s2_t256"]
    assert tileroof.analyze(ok.kernel, device="h200", **ok.params).launch_error is None
    base = {k: v for k, v in case.params.items() if k not in ("block_M", "block_N", "threads")}
    ranked = rank_configs(case.kernel, base, [dict(block_M=64, block_N=256, threads=128),
                                              dict(block_M=128, block_N=32, threads=256)], device="h200")
    assert [x["config"]["block_N"] for x in ranked] == [32, 256]
    assert ranked[1]["launch_error"]


def test_disabled_warp_specialisation_keeps_every_thread():
    """@tilelang.jit(pass_configs={"tl.disable_warp_specialized": True}): TileLang adds no producer
    warpgroup, so the 128-thread pipelined GEMM launches 128 threads and its registers come from
    its fragments (the same kernel without the option: 256 threads, one block per SM)."""
    from tests.kernels import gemm, gemm_no_ws
    p = dict(M=1024, N=1024, K=1024, bm=128, bn=128, bk=32, stages=3)
    ws = tileroof.analyze(gemm, device="h200", **p).timing.occupancy
    plain = tileroof.analyze(gemm_no_ws, device="h200", **p)
    assert plain.trace.pass_config("tl.disable_warp_specialized") is True
    assert ws.warp_specialized and ws.threads_per_block == 256
    occ = plain.timing.occupancy
    assert not occ.warp_specialized and occ.threads_per_block == 128
    # 128 x 128 fp32 accumulator over 128 threads: 128 registers + 32 base
    assert occ.regs_per_thread == 160


def test_loop_from_a_block_dependent_start_walks_one_tile_sequence():
    """Block by reads Q tiles by..3 (the causal backward's query loop from the diagonal): the tile
    copy is still tiled (affine in the loop variable), its L2 key is the sequence the loop walks --
    the same for every block -- and the blocks' reads add up to 4 + 3 + 2 + 1 tiles."""
    import tilelang.language as T

    from tileroof.ir import trace as walk

    S, bM, D = 256, 64, 64

    @T.prim_func
    def main(Q: T.Tensor((S, D), "float16"), O: T.Tensor((S, D), "float32")):
        with T.Kernel(S // bM, threads=128) as by:
            q = T.alloc_shared((bM, D), "float16")
            acc = T.alloc_fragment((bM, D), "float32")
            T.clear(acc)
            for k in T.Pipelined(by, S // bM, num_stages=2):
                T.copy(Q[k * bM, 0], q)
                for i, j in T.Parallel(bM, D):
                    acc[i, j] += q[i, j]
            T.copy(acc, O[by * bM, 0])

    tr = walk(main)
    (copy,) = [r for r in tr.ops if r.kind == "copy" and r.attrs.get("src_scope") == "global"]
    (q_op,) = [o for o in copy.operands if o.buffer == "Q"]
    assert q_op.elements == (4 + 3 + 2 + 1) * bM * D
    assert q_op.block_start is not None
    row_key = np.asarray(q_op.block_start[0]).reshape(-1)
    assert np.all(row_key == row_key[0])
    r = tileroof.analyze(main, device="h200")
    (q_mem,) = [o for o in r.timing.memory.per_operand if o.buffer == "Q"]
    assert q_mem.dram == S * D * 2            # one wave: each tile from DRAM once


def test_element_loads_of_one_tile_share_it_in_l2():
    """Run 67's linear attention loads Q element by element (T.Parallel, not T.copy), and the
    blocks of both value slices read the same Q rows: Nsight Compute saw Q come from DRAM once.
    Element accesses key their tiles as copies do: here the two blocks that differ only in bx read
    one 64x256 tile of a 256 MB A, launched one after the other -- A from DRAM exactly once (the
    untiled rule, which times the re-reads by a wave's share of the traffic, charged 271 MB)."""
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def twice(M=16384, N=8192, bm=64, bn=256):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float16"), C: T.Tensor((2, M, N), "float16")):
            with T.Kernel(2, N // bn, M // bm, threads=256) as (bx, by, bz):
                for i, j in T.Parallel(bm, bn):
                    C[bx, bz * bm + i, by * bn + j] = A[bz * bm + i, by * bn + j] * 2
        return main
    r = tileroof.analyze(twice, device="h200")
    a = next(op for op in r.timing.memory.per_operand if op.buffer == "A")
    assert a.issued == 2 * 16384 * 8192 * 2
    assert a.dram == 16384 * 8192 * 2
    load = next(op for rec in r.trace.ops for op in rec.operands if op.buffer == "A")
    assert load.element and load.block_start is not None


def test_shared_allocation_by_hand():
    """TileLang merges a block's shared buffers: two whose lifetimes do not overlap share space
    (8 KiB and 16 KiB -> 16 KiB), touched in one loop they both live for all of it (24 KiB); a row
    reduction over 256 threads adds tl::AllReduce's workspace, a word per thread (1 KiB)."""
    import tilelang
    import tilelang.language as T

    from .kernels import two_phases as phases

    @tilelang.jit
    def rowsum(N=2048):
        @T.prim_func
        def main(A: T.Tensor((1, N), "float32"), S: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=256) as bx:
                a = T.alloc_fragment((1, N), "float32")
                s = T.alloc_fragment((1,), "float32")
                T.copy(A, a)
                T.reduce_sum(a, s, dim=1)
                T.copy(s, S)
        return main

    from tileroof.ir import trace
    t = trace(phases)
    assert t.shared_bytes_per_block() == 24 * 1024
    assert model.shared_allocation(t) == 16 * 1024
    assert model.shared_allocation(trace(phases, {"looped": True})) == 24 * 1024
    assert model.shared_allocation(trace(rowsum)) == 1024
    assert model.occupancy(t, devices.load("h200")).smem_per_block == 16 * 1024


def test_shared_allocation_matches_nsight_on_recorded_kernels():
    """Nsight Compute's shared memory per block (less the driver's 1 KiB) against
    model.shared_allocation on recorded kernels of every family whose buffers alias, are
    multi-buffered or need a reduction workspace: flash-attention forward (output tile over the
    query tile), its backward (dV, dK over K, V), the gathered convolution (element-wise input
    tile, lowered to cp.async: three copies), linear attention (its fragment -> shared copies are
    not multi-buffered), rmsnorm (AllReduce workspace), and plain GEMMs: all within 1 KiB."""
    from tileroof.ir import trace

    recs = score.load_records(RESULTS)
    names = ["fa_fwd_fp16_b4_h32_s2048_d128", "sweep_fafwd_bm64_bn32_s1_t128", "fa_fwd_causal_bf16_b2_h16_s8192_d128_bm64",
             "up_mha_bwd_fp16_b2_h16_s2048_d64", "conv2d_gather_fp16_n32_68x68_c128_f256_k5_p0",
             "up_linear_attn_fwd_fp16_b2_s4096_h16_d128", "probe_linattn_qcopy_fp16_b2_s4096_h16_d128",
             "rmsnorm_bf16_1024x8192", "gemm_bias_relu_fp16_4096", "gemm_nn_fp16_4096", "sweep_gemm8192_bm128_bn256_bk64_s3_t256_sw1",
             "up_grouped_gemm_fp16_g8_m8192_n4096_k4096"]
    for name in names:
        ncu = recs[name]["ncu"]
        measured = ncu["launch__shared_mem_per_block_allocated"] - ncu["launch__shared_mem_per_block_driver"]
        c = CASES[name]
        got = model.shared_allocation(trace(c.kernel, recs[name].get("params") or c.params))
        assert abs(got - measured) <= 1024, (name, got, measured)


def test_buffers_that_take_turns_fit_the_block_limit():
    """Upstream's MLA decode keeps its output tile only after the loop: the buffers sum to more
    than the H200's 227 KiB per block but are never all live, so the block launches (the model
    once flagged it as unable to).  Here two 128 KiB tiles used one after the other: 128 KiB, no
    launch error."""
    from .kernels import two_phases

    r = tileroof.analyze(two_phases, device="h200", rows_a=512, rows_b=512, cols=128)
    assert r.timing.occupancy.smem_per_block == 128 * 1024
    assert r.launch_error is None


def test_run_time_branch_tests_cost_every_trip_by_hand():
    """A branch on run-time data around a pipelined loop's body is tested on every trip before
    each of the consumer's statements, once more per gemm, and at the wait and release of each
    group of tile loads one gemm consumes: the block-sparse attention's 12 statements, 2 gemms and
    2 groups (K, V) give 18 tests a trip (its lowered CUDA's consumer has 18), each at the fitted
    cost; a skipped trip costs those tests, a taken one its work besides."""
    c = CASES["probe_bsparse_win4_fp16_b2_h32_s8192_d128"]
    dev = devices.load("h200")
    r = tileroof.analyze(c.kernel, device=dev, taken=c.taken, **c.params)
    p = r.timing.pipeline
    assert p["branch_checks_per_trip"] == 18
    assert p["branch_check_s"] == pytest.approx(18 * dev.fitted["data_branch_check_s"])
    off = tileroof.analyze(c.kernel, device=replace(dev, fitted={**dev.fitted, "data_branch_check_s": 0.0}),
                           taken=c.taken, **c.params)
    # the tests add trips x their cost to every block: the makespan grows by about that much per
    # block round (1 block per SM; trips per block 1..128, 64.5 on average, over 8192 blocks)
    trips = sum(i + 1 for i in range(128)) * 64
    rounds_cost = trips * p["branch_check_s"] / 132
    assert r.estimated_time - off.estimated_time == pytest.approx(rounds_cost, rel=0.05)


def test_profile_branch_check_cost_reproduces_from_the_recorded_probes():
    """The profile's data_branch_check_s is what benchmarks/fit_branch_check.py finds on the
    recorded block-sparse density probes (runs 72-73)."""
    import sys
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fit_branch_check as fb
    rows = fb.cases()
    assert len(rows) >= 6
    base = devices.load("h200")
    best = min(fb.GRID_NS, key=lambda ns: fb.objective(rows, fb.with_check(base, ns * 1e-9)))
    assert best * 1e-9 == pytest.approx(base.fitted["data_branch_check_s"])


def test_integer_bit_work_joins_the_pipelined_iteration():
    # the FP4 dequantising GEMM decodes 11 integer bit operations per weight inside its loop; its
    # two consumer warpgroups split the gemm's N and each decodes the whole B tile (TileLang's
    # layout of a register operand: counts.fragment_replicas), and the compiler leaves the measured
    # share (integer_alu_share) of those instructions on the integer pipe (64 results a clock an SM),
    # the rest as IMAD on the FMA-heavy pipe: that share lengthens each iteration's chain
    c = CASES["up_dequant_fp4_fp16_m2048_n4096_k4096"]
    dev = devices.load("h200")
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    r0 = tileroof.analyze(c.kernel, device=replace(dev, alu_per_clk=0), **c.params)
    t, t0 = (x.timing.pipeline["terms_s"]["compute"] for x in (r, r0))
    loop = [oc for rec, oc in zip(r.trace.ops, r.counts.ops) if rec.pipeline and rec.kind == "elementwise"]
    bits = sum(oc.int_bits for oc in loop)
    # every block (2048 / 128 rows of blocks) decodes all 4096 x 4096 weights twice: 11 operations each
    assert [oc.replicas for oc in loop] == [2]
    assert bits == 2 * 11 * (2048 // 128) * 4096 * 4096
    total_iters = r.timing.pipeline["loop_iterations"] * r.trace.num_blocks
    per_iter = bits * dev.integer_alu_share / (dev.alu_per_clk * dev.sm_count * dev.clock_hz) * dev.sm_count \
        / total_iters * r.timing.pipeline["resident_blocks"]
    # (the rest of the iteration moves a little with the modelled clock, which the time sets)
    assert t - t0 == pytest.approx(per_iter, rel=0.03)
    # without the measured split every instruction stays on the integer pipe
    r1 = tileroof.analyze(c.kernel, device=replace(dev, integer_alu_share=1.0), **c.params)
    assert r1.timing.pipeline["terms_s"]["compute"] - t0 == pytest.approx(per_iter / dev.integer_alu_share, rel=0.03)


def test_element_gather_producer_is_as_wide_as_the_consumers_and_keeps_its_registers():
    # upstream's convolution gathers its zero-padded input tile element by element inside the
    # pipelined loop: no TMA, so TileLang's producer is 256 cp.async threads beside the 256
    # consumers, no setmaxnreg; its 64 x 128 fp32 accumulator over 256 threads (32 registers) plus
    # the base 32 -> 64 registers (Nsight: 512 threads, 58 used / 64 allocated, 2 blocks per SM)
    c = CASES["up_conv_fp16_n128_64x64_c128_f128_k3_s1_p1"]
    occ = tileroof.analyze(c.kernel, device="h200", **c.params).timing.occupancy
    assert occ.warp_specialized and occ.threads_per_block == 512
    assert occ.regs_per_thread == 64 and occ.consumer_regs_per_thread == 64
    assert occ.blocks_per_sm == 2 and occ.limiter == "registers"
    # a TMA-only loop keeps the 128-thread producer and setmaxnreg's 240 consumer registers
    g = CASES["gemm_nn_fp16_4096"]
    occ = tileroof.analyze(g.kernel, device="h200", **g.params).timing.occupancy
    assert occ.threads_per_block == g.params.get("threads", 128) + 128 and occ.consumer_regs_per_thread == 240


# ----------------------------------------------------------------------------- the first wave in step
SET11 = "timeline-20261201T234802Z.json"


def test_whole_wave_store_rate_in_the_profile_comes_from_timeline_set_11():
    """accumulator_store_requests_per_us_all is what derive.wave_store_entries gives on the recorded
    one-wave launches; by hand for one of them: 128 blocks of 128x256 fp16 (4096 requests each)
    over the time from the first loop end to the last end."""
    doc = json.loads((RESULTS / SET11).read_text())
    assert derive.timeline_kind(doc) == "wave"
    entry = derive.wave_store_entries([doc], "test")["accumulator_store_requests_per_us_all"]
    dev = devices.load("h200")
    assert entry["value"] * 1e6 == pytest.approx(dev.store_request_rate_all, rel=1e-4)
    r = next(r for r in doc["results"] if (r["params"]["block_N"], r["params"]["K"], len(r["end_ns"])) == (256, 1024, 128))
    by_hand = 128 * 4096 / (max(r["end_ns"]) - min(r["loop_end_ns"])) * 1e3
    assert by_hand in [pytest.approx(v, rel=1e-3) for v in entry["kernel_values"]]
    # launches of fewer blocks than SMs do not enter it
    assert len(entry["kernel_values"]) == sum(1 for r in doc["results"] if len(r["end_ns"]) >= 0.9 * doc["sm_count"])


def test_dram_tile_round_trip_from_tile_stream():
    """566 ns + bytes / 105 GB/s on the H200: the one-stage DRAM pace of the 8 KiB tile (644 ns)
    less its transfer at the one-SM load rate tile_stream's L2 line measured."""
    dev = devices.load("h200")
    rt8 = model.dram_tile_round_trip(dev, 8192)
    assert rt8 == pytest.approx(643.9e-9, rel=1e-3)
    assert model.dram_tile_round_trip(dev, 32768) - rt8 == pytest.approx(24576 / 105.0133e9, rel=1e-3)
    from dataclasses import replace
    assert model.dram_tile_round_trip(replace(dev, tma_load_rate_per_sm=0.0), 32768) == 0.0


def _set11_rows():
    from tileroof.corpus.gemm import matmul
    doc = json.loads((RESULTS / SET11).read_text())
    for r in doc["results"]:
        p = r["params"]
        kw = {k: p[k] for k in ("M", "N", "K", "block_M", "block_N", "block_K", "num_stages", "threads")}
        yield p, r, tileroof.analyze(matmul, device="h200", **kw).timing.pipeline


def test_first_wave_iteration_against_timeline_set_11():
    """The first wave's iteration (every tile a DRAM round trip away: (round trip + compute) /
    stages, or the compute) against the recorded one-wave loops after their first gemm, at 16 and
    128 iterations and with 8, 16, 32 or 128 blocks: within 12 % each (measured 418-512 ns)."""
    seen = 0
    for p, r, pipe in _set11_rows():
        if p["K"] < 1024:
            continue
        measured = r["loop_after_first_ns_median"] * 1e-9 / (p["K"] // p["block_K"] - 1)
        assert pipe["first_wave_iteration_s"] == pytest.approx(measured, rel=0.12), p
        seen += 1
    assert seen >= 10


def test_one_wave_block_span_against_timeline_set_11():
    """The modelled body of a one-wave launch (its makespan) against the recorded span from the
    first block's start to the last block's end: within 10 % for 16-iteration and longer launches
    (the model's start and block fixed cost are not the timer's: the 1-iteration launches are
    left out)."""
    for p, r, pipe in _set11_rows():
        if p["K"] < 1024:
            continue
        span = (max(r["end_ns"]) - min(r["start_ns"])) * 1e-9
        assert pipe["makespan_s"] == pytest.approx(span, rel=0.10), p


# ----------------------------------------------------------------------------- IEEE divisions in series
def test_division_latency_in_the_profile_comes_from_the_divchain_run():
    run = json.loads((RESULTS / "divchain-20261202T003606Z.json").read_text())
    entry = derive.division_entry(run, "test")["fp32_division_ns_per_thread"]
    assert entry["value"] * 1e-9 == pytest.approx(devices.load("h200").division_latency_s, rel=1e-4)
    # by hand, one config: (t(40) - t(8)) / 32 iterations / 64 elements a thread; the multiply control
    # is at least 10x cheaper (a division is a chain, a multiply pipelines)
    r = next(r for r in run["results"] if (r["M"], r["N"], r["threads"]) == (128, 128, 256))
    raw = run["raw_median_s"]
    t40, t8 = raw["128|128|256|40|div"], raw["128|128|256|8|div"]
    assert r["div_ns_per_thread_element"] == pytest.approx((t40 - t8) / 32 / 64 * 1e9, rel=1e-6)
    assert all(x["div_ns_per_thread_element"] > 10 * x["mul_ns_per_thread_element"] for x in run["results"])


def test_division_chain_counts_each_threads_divisions():
    """flash attention's epilogue divides its 128 x 128 accumulator by the row sums: 16384
    divisions over 256 threads, 64 each, one after another at the measured latency."""
    from tileroof.ir import trace
    case = CASES["fa_fwd_fp16_b1_h16_s1024_d128"]
    tr = trace(case.kernel, case.params)
    dev = devices.load("h200")
    recs = [r for r in tr.ops if any(k[2] == "div" for k in r.ops_per_exec)]
    assert len(recs) == 1
    chain = model.division_chain(recs[0], tr, dev)
    assert np.allclose(chain, 64 * dev.division_latency_s)
    assert model.division_chain(recs[0], tr, replace(dev, division_latency_s=0.0)) == 0.0
    # compiled with fast math (upstream's MHA forward in BSHD), a division is approximate and pipelines
    fast = replace(tr, pass_configs=(("tl.enable_fast_math", True),))
    assert model.division_chain(recs[0], fast, dev) == 0.0


def test_attention_epilogue_against_timeline_set_9():
    """The modelled work after the key loop (division by the row sums, the O tile staged and
    stored) against the recorded epilogue of flash-attention blocks (timeline set 9, thread 0's
    timer after the loop and at the end): within 35 % for each of its tiles (measured 1.2-2.5 us;
    the model is +31 % on the 128 x 128 d128 tile, whose staged store it over-charges by ~0.6 us,
    and -13 % on the 64 x 64 one)."""
    from tileroof.corpus.attention import flash_attn_fwd
    doc = json.loads((RESULTS / "timeline-20261201T131721Z.json").read_text())
    dev = devices.load("h200")
    for r in doc["results"]:
        pipe = tileroof.analyze(flash_attn_fwd, device=dev, is_causal=False, **r["params"]).timing.pipeline
        rest = pipe["prologue_epilogue_s"] - dev.block_fixed_s
        assert rest == pytest.approx(r["epilogue_ns_median"] * 1e-9, rel=0.35), r["params"]


def test_stagger_adds_the_arrival_order_gap_from_the_second_wave_on():
    """drift_misses with drift 0 and stagger 0.25: a follower in wave 1 has the gap spread
    0.25 (0 x (1 + 1/2) + 0.25), the spread the test above has in wave 0 (0.5 x 1/2) -- the same
    30 MB fixed point; a follower in the first wave (all blocks started together) re-fetches
    nothing."""
    ws = np.array([100e6, 100e6])
    later = (np.ones(10, dtype=np.int64), np.full(10, 66.0), np.full(10, 10e6))
    first = (np.zeros(10, dtype=np.int64), np.full(10, 66.0), np.full(10, 10e6))
    assert memory.drift_misses([later], ws, 132, 0.0, 25e6, stagger=0.25)[0] == pytest.approx(30e6, rel=1e-9)
    assert memory.drift_misses([first], ws, 132, 0.0, 25e6, stagger=0.25) == [0.0]
    assert memory.drift_misses([later], ws, 132, 0.0, 25e6) == [0.0]


def test_block_stagger_scales_with_blocks_and_warps_per_sm():
    """4 blocks of 256 threads per SM (32 warps): 4 x 32 x the profile's step per warp; one block
    per SM, or a grid that gives each SM one block, staggers nothing."""
    dev = devices.load("h200")
    assert dev.block_stagger_per_warp > 0
    for name, per_sm, warps in (("probe_grouped_cpasync_bm64_bn128_bk64_s2_t256", 4, 32),
                                ("probe_grouped_cpasync_bm128_bn128_bk32_s3_t128", 3, 12)):
        c = corpus.get(name)
        tr = walk(c.kernel, c.params)
        occ = model.occupancy(tr, dev)
        assert occ.blocks_per_sm == per_sm
        assert model.block_stagger(tr, dev, occ) == pytest.approx(per_sm * warps * dev.block_stagger_per_warp)
    c = corpus.get("probe_grouped_tma_bm64_bn128_bk64_s2_t256")
    tr = walk(c.kernel, c.params)
    assert model.block_stagger(tr, dev, model.occupancy(tr, dev)) == 0.0
    c = corpus.get("gemm_nows_fp16_1024x1024x8192_bm128_bn128_bk64_s2_t256")      # 64 blocks: one per SM
    tr = walk(c.kernel, c.params)
    assert model.occupancy(tr, dev).blocks_per_sm >= 2
    assert model.block_stagger(tr, dev, model.occupancy(tr, dev)) == 0.0


def test_stagger_levels_of_a_hand_made_timeline():
    """Two SMs, two blocks each (4 resident), grid (4, 2).  Wave 0 starts at 0 and ends at
    10, 10, 14, 14 (blocks 0-3 on SMs 0, 1, 0, 1); each replacement runs 12: durations median 12.
    Levels: 10/12 and 14/12, spacing 4/12.  Blocks 6 and 7 start 4 after blocks 4 and 5 (d = 2,
    one wave): gap 1/3, c = 1/3 x 4 / 2 = 2/3; d = 4 crosses the wave, no pair."""
    r = {"start_ns": [0, 0, 0, 0, 10, 10, 14, 14], "end_ns": [10, 10, 14, 14, 22, 22, 26, 26],
         "smid": [0, 1, 0, 1, 0, 1, 0, 1], "resident_blocks": 4, "grid": [4, 2], "params": {"threads": 128}}
    a = derive.stagger_levels(r, 2)
    assert a["per_sm"] == 2 and a["warps_per_sm"] == 8
    assert a["levels"] == pytest.approx([10 / 12, 14 / 12])
    assert a["spacing"] == pytest.approx(4 / 12)
    assert set(a["gaps"]) == {2}
    assert a["gaps"][2] == pytest.approx((1 / 3, 2 / 3))


def test_block_stagger_in_the_profile_comes_from_the_recorded_timelines():
    docs = [json.loads(Path(f).read_text()) for f in sorted(glob.glob(str(RESULTS / "timeline-*.json")))]
    docs = [d for d in docs if derive.timeline_kind(d) == "stagger"]
    assert len(docs) >= 2
    entries = derive.stagger_entry(docs, "test")
    entry = entries["block_stagger_per_resident_warp"]
    dev = devices.load("h200")
    assert entry["value"] == pytest.approx(dev.block_stagger_per_warp, abs=1e-5)
    assert len(entry["launch_values"]) >= 10
    deciles = entries["block_stagger_gap_deciles"]["value"]
    assert deciles == pytest.approx(list(dev.block_stagger_gap_deciles), abs=1e-3)
    # gaps over their launch's median: the middle deciles straddle 1, the deciles rise
    assert deciles[4] < 1.0 < deciles[5] and deciles == sorted(deciles)


def test_shared_hops_count_the_staged_gemm_operands():
    """Linear attention's chunk stages its masked s and h into shared memory for the two later
    gemms: 2 hops; retention also its decayed v: 3; the attention backward its dS: 1; a plain GEMM
    and the flash-attention forward (P stays in registers): 0."""
    for name, n in (("up_linear_attn_fwd_fp16_b2_s4096_h16_d128", 2), ("up_retention_fwd_bf16_b1_s4096_h32_d128", 3),
                    ("up_mha_bwd_fp16_b2_h16_s2048_d64", 1), ("gemm_nn_fp16_4096", 0),
                    ("fa_fwd_fp16_b2_h16_s2048_d128", 0)):
        c = corpus.get(name)
        tr = walk(c.kernel, c.params)
        t = tr.launches[-1] if tr.launches and not tr.ops else tr
        cn = counts.count(t)
        loop = model.pipelined_loop(t, cn)
        assert model.shared_hops(loop[0], loop[2]) == pytest.approx(n), name


def test_hop_cost_in_the_profile_comes_from_the_gemm_chain_run():
    rec = json.loads(Path(sorted(glob.glob(str(RESULTS / "gemm_chain-*.json")))[-1]).read_text())
    entry = derive.chain_hop_entry(rec, "test")["gemm_shared_hop_cycles"]
    assert entry["value"] == pytest.approx(devices.load("h200").gemm_hop_cycles)
    # (n = 2, 3, 4: 137, 148, 150 cycles a hop)
    assert 130 < min(entry["per_chain"]) and max(entry["per_chain"]) < 160


def test_each_hop_adds_its_cycles_to_the_iteration_chain():
    """gemm_chain_nows with three gemms and two T.copy hops, one block per SM: the modelled
    iteration's compute term grows by 2 x gemm_hop_cycles at the modelled clock."""
    from tileroof.gpu.tl_kernels import gemm_chain_nows
    dev = devices.load("h200")
    tr = walk(gemm_chain_nows, dict(n_gemm=3, hop="copy", iters=1600, grid=132))
    cn = counts.count(tr)
    occ = model.occupancy(tr, dev)
    at = model.pipeline_at_clock(tr, cn, dev, occ)
    at0 = model.pipeline_at_clock(tr, cn, replace(dev, gemm_hop_cycles=0.0), occ)
    clk = 1.7e9
    d = at(clk)[1]["terms_s"]["compute"] - at0(clk)[1]["terms_s"]["compute"]
    assert d == pytest.approx(2 * dev.gemm_hop_cycles / clk * model.coresidency(dev, 1), rel=1e-6)


def test_sharers_kept_apart_count_every_sharers_window():
    """drift_misses with apart=True: two followers of one tile in wave 1, 10 launches behind their
    leader of 100 slots, stagger 0.5 (drift 0): median gap 10 / 100 x 0.5 = 0.05 block times.  With
    an empty working set the distance in a window q x 0.05 is only the fronts': 2 x 1000 bytes x
    min(0.05, q x 0.05) = 100 x min(1, q).  At a sharp 99-byte capacity the deciles of q above 1 (the
    five from 0.55 up) miss: 2 x 1000 x 5 / 10 = 1000 bytes.  Without apart the followers ride in
    the leader's window: an empty working set misses nothing."""
    ws = np.zeros(2)
    f = (np.ones(2, dtype=np.int64), np.full(2, 10.0), np.full(2, 1000.0))
    assert memory.drift_misses([f], ws, 100, 0.0, 99.0, stagger=0.5, apart=True)[0] == pytest.approx(1000.0)
    assert memory.drift_misses([f], ws, 100, 0.0, 99.0, stagger=0.5) == [0.0]
    # at a 101-byte capacity the windows (at most 100 bytes) all fit
    assert memory.drift_misses([f], ws, 100, 0.0, 101.0, stagger=0.5, apart=True) == [0.0]


def test_staggered_sharers_stay_apart_only_where_the_sm_sets_the_pace():
    """The 4-block cp.async grouped loop is shared-memory-bound: its staggered A sharers keep their
    gaps (the assumption says so, DRAM above the caught-up estimate); the num_stages 0 64 x 64 GEMM at
    8 blocks per SM waits on its loads (pipeline latency): its followers that hit catch up, no
    note, the caught-up estimate stands."""
    dev = devices.load("h200")
    c = corpus.get("probe_wavesplit_g4_m8192_n4096_k4096_bm64_bn128_bk64_s2_t256")
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert not model.memory_paced(r.timing.bound)
    assert any("keep those gaps" in a for a in r.timing.assumptions)
    tr = walk(c.kernel, c.params)
    occ = model.occupancy(tr, dev)
    caught_up = memory.estimates(tr, occ.blocks_per_sm * dev.sm_count, dev.l2_bytes, dev.l2_partitions,
                                 dev.l2_hit_curve, ((dev.pace_spread, dev.l2_merge_group,
                                                     model.block_stagger(tr, dev, occ), False,
                                                     dev.block_stagger_gap_deciles),))[0]
    assert r.timing.memory.dram_bytes > 1.3 * caught_up.dram_bytes
    c = corpus.get("gemm_nn_fp16_4096_bm64_s0")
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert model.memory_paced(r.timing.bound)
    assert not any("keep those gaps" in a for a in r.timing.assumptions)


def _first_wave_chain(name, dev):
    """(analysis, the block chain's first-wave times) of a corpus case on `dev`."""
    c = CASES[name]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    tm = r.timing
    wave = memory.launch_order(r.trace)[:tm.slots]
    return r, model.block_chain(r.trace, r.counts, dev, tm.occupancy, tm.memory, wave)[0]


def test_block_chain_of_a_one_wave_copy_by_hand():
    # 132 blocks, one a SM: each loads 32 KiB into shared memory (a DRAM round trip, then the wave's
    # 132 x 32 KiB at the DRAM bandwidth), then stores it (the same bytes again); nothing after the
    # first wave, so the launch's chain is the first wave's
    dev = devices.load("h200")
    r, first = _first_wave_chain("probe_chain_copy_64x256_g132", dev)
    tm = r.timing
    rt = model.dram_tile_round_trip(dev, 0.0)
    assert rt == pytest.approx(566e-9, rel=0.05)          # the profile's tile_stream (H200)
    # the timing flush's dirty lines the copy's 2 x 4.3 MB evict (flush_writeback), half of them in
    # the load phase at the read-stream cost (292.5 ns per MB on the H200), half in the store phase
    # at the write-stream cost (3 ns per MB)
    b = 132 * 32768
    wb = 29.49e6 * (1 - np.exp(-2 * b / dev.l2_bytes))
    assert dev.flush_dirty_bytes == pytest.approx(29.49e6)
    # and the block's 8 warps start one after another, 4.294 ns apart (run 144)
    span = 8 * 4.294e-9
    assert model.warp_launch_span(dev, 256) == pytest.approx(span)
    want = span + rt + 2 * b / dev.dram_bw + wb / 2 * 292.5e-15 + wb / 2 * 3.0e-15
    assert first == pytest.approx(np.full(132, want), rel=1e-6)
    assert tm.bound == "block chain"
    assert tm.time_s == pytest.approx(want + model.timing_floor(dev), rel=1e-6)


def test_block_chain_after_the_first_wave_is_the_roofline_share():
    # 1584 blocks of the same copy: the first wave's chain, then the rest of the bytes at the
    # roofline's DRAM time (the launch is one kind of block: the rest is 1 - slots / blocks of it)
    dev = devices.load("h200")
    r, first = _first_wave_chain("probe_chain_copy_64x256_g1584", dev)
    tm = r.timing
    rest = 1.0 - tm.slots / 1584
    roof = max(v for k, v in tm.resource_s.items() if k != "block chain")
    assert tm.resource_s["block chain"] == pytest.approx(first.max() + rest * roof, rel=1e-9)


def test_block_chain_loads_into_registers_wait_together():
    # SiLU-mul copies G and U into fragments back to back: one round trip for both; the copy of a
    # tile into shared memory ends in a barrier, so two such copies would wait twice
    dev = devices.load("h200")
    _, first = _first_wave_chain("probe_chain_silu_mul_64x256_g132", dev)
    _, first0 = _first_wave_chain("probe_chain_silu_mul_64x256_g132", replace(dev, dram_stream=()))
    assert first[0] - first0[0] == pytest.approx(model.dram_tile_round_trip(dev, 0.0), rel=1e-9)


def test_block_chain_only_for_launches_without_a_pipelined_loop():
    dev = devices.load("h200")
    c = CASES["tiny_gemm_fp16_512"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert "block chain" not in r.timing.resource_s and r.timing.bound.startswith("pipeline")


def test_live_fragments_of_rmsnorm_by_hand():
    # the 512-thread bf16 RMSNorm of an 8192 row: x (1 x 8192 float32, 32768 B) lives throughout;
    # sq = x * x is written by element code and read only by the next op's reduce_sum, so it is
    # not held; rstd (4 B) lives with x.  16 + ceil(32772 / 4 / 512) = 33 -> 40 registers (units of
    # 8), 65536 // (40 x 512) = 3 blocks per SM (ptxas: 38 registers, Nsight: 3 blocks, recorded)
    dev = devices.load("h200")
    c = CASES["rmsnorm_bf16_8192x8192"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert model.live_fragment_bytes(r.trace) == 32768 + 4
    occ = r.timing.occupancy
    assert (occ.regs_per_thread, occ.blocks_per_sm, occ.limiter) == (40, 3, "registers")


def test_loads_in_flight_by_hand():
    # fp32 add, 32 x 256 tile, 256 threads: each thread loads 32 elements of A and of B before its
    # first add (ptxas hoists the unrolled loads): 2 x 32 x 4 B = 256 B a thread, 64 registers.
    # 16 + 64 = 80 registers, 65536 // (80 x 256) = 3 blocks per SM (ptxas 72 registers, Nsight 3)
    dev = devices.load("h200")
    c = CASES["ew_add_fp32_2048"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert model.live_fragment_bytes(r.trace) == 2 * 32 * 256 * 4
    occ = r.timing.occupancy
    assert (occ.regs_per_thread, occ.blocks_per_sm, occ.limiter) == (80, 3, "registers")
    # a 64 x 256 fp16 tile copied global -> shared -> global by 256 threads through registers: one
    # tile's 32 KiB in flight at a time, 128 B a thread: 16 + 32 = 48 registers, 5 blocks per SM
    # (ptxas 42 registers, Nsight 5)
    c = CASES["copy_tile_fp16_2048"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    assert model.live_fragment_bytes(r.trace) == 64 * 256 * 2
    assert (r.timing.occupancy.regs_per_thread, r.timing.occupancy.blocks_per_sm) == (48, 5)


def test_later_waves_no_faster_than_the_uncontended_chain():
    # SiLU-mul 16384 x 16384 at one block per SM: 16384 blocks, 132 in the first wave.  Each later
    # block's chain, uncontended, is at least a round trip, its 64 KiB of loads and 32 KiB of stores at
    # one block's stream rate, and its thread's 64 IEEE divisions (64 x 256 elements / 256 threads)
    dev = devices.load("h200")
    rate = dev.fitted["block_stream_bps"]
    c = CASES["ew_silu_mul_fp16_16384"]
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    tm = r.timing
    assert tm.slots == 132 and tm.bound == "block chain"
    chain = model.dram_tile_round_trip(dev, 0.0) + 3 * 32768 / rate + 64 * dev.division_latency_s
    assert tm.resource_s["block chain"] >= (16384 - 132) / 132 * chain
    # without the fitted rate the later blocks take the roofline's share (the launch's DRAM)
    dev0 = replace(dev, fitted={k: v for k, v in dev.fitted.items() if k != "block_stream_bps"})
    r0 = tileroof.analyze(c.kernel, device=dev0, **c.params)
    assert r0.timing.resource_s["block chain"] < 0.75 * tm.resource_s["block chain"]


def test_gathered_row_index_read_once_per_row_from_dram():
    # Out[i, d] = Tab[Idx[bx * 64 + i], d] in T.Parallel(64, D): each thread re-reads its row's index
    # for every column it writes, so the walk counts 64 x D index loads a block (what the threads
    # issue), but the block's distinct index bytes are 64 x 4 B: DRAM reads each once (Idx's size),
    # not once per column.  The 8 MiB table fits the L2: read from DRAM once.
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def gather(R, NROWS, D, BI=64, threads=256):
        @T.prim_func
        def main(Tab: T.Tensor((NROWS, D), "bfloat16"), Idx: T.Tensor((R,), "int32"),
                 Out: T.Tensor((R, D), "bfloat16")):
            with T.Kernel(R // BI, threads=threads) as bx:
                S = T.alloc_shared((BI, D), "bfloat16")
                for i, d in T.Parallel(BI, D):
                    S[i, d] = Tab[Idx[bx * BI + i], d]
                T.copy(S, Out[bx * BI, 0])
        return main

    R, NROWS, D = 1 << 16, 8192, 512
    r = tileroof.analyze(gather, device="h200", R=R, NROWS=NROWS, D=D)
    ops = {o.buffer: o for o in r.timing.memory.per_operand}
    assert ops["Idx"].issued == R * D * 4
    assert ops["Idx"].dram == R * 4
    assert ops["Tab"].dram == NROWS * D * 2


def test_paged_tiles_shared_by_blocks_that_read_the_same_table_entries():
    # KV pages read through a block table at the loop's step, Table[bx, k]: the two blocks of one bx
    # (by = 0, 1) read the same pages in the same order.  64 x 2 = 128 blocks, one wave: every page
    # is issued twice (2 x 64 x 4096 x 128 x 2 B) and read from DRAM once (64 MiB), as if the pages
    # were addressed affinely; before, the table hid the sharing and DRAM was every issued byte
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def paged(B, S, D, block_N=64):
        @T.prim_func
        def main(KV: T.Tensor((B * S, D), "float16"), Table: T.Tensor((B, S // block_N), "int32"),
                 Out: T.Tensor((B * 2, block_N, D), "float32")):
            with T.Kernel(B, 2, threads=128) as (bx, by):
                KV_s = T.alloc_shared((block_N, D), "float16")
                acc = T.alloc_fragment((block_N, D), "float32")
                T.clear(acc)
                for k in T.Pipelined(S // block_N, num_stages=2):
                    T.copy(KV[Table[bx, k] * block_N:Table[bx, k] * block_N + block_N, :], KV_s)
                    for i, j in T.Parallel(block_N, D):
                        acc[i, j] += KV_s[i, j]
                T.copy(acc, Out[bx * 2 + by, 0, 0])
        return main

    r = tileroof.analyze(paged, device="h200", B=64, S=4096, D=128)
    kv = {o.buffer: o for o in r.timing.memory.per_operand}["KV"]
    assert kv.issued == 2 * 64 * 4096 * 128 * 2
    assert kv.dram == 64 * 4096 * 128 * 2
    assert "Table" in r.bounded and any("block table" in a for a in r.assumptions)


def test_a_blocks_second_read_of_its_own_row_hits_l2():
    # two passes over each block's row of X (8 KiB): the second op reads the same tile of every
    # block, after at most the wave's working set (a few MB): from L2, so X comes from DRAM once.
    # Two different tiles of one block (RoPE's two halves of a row) are not a re-read (the corpus
    # rope case keeps both halves' DRAM).
    import tilelang
    import tilelang.language as T

    @tilelang.jit
    def twopass(M, N):
        @T.prim_func
        def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
            with T.Kernel(M, threads=256) as bx:
                acc = T.alloc_fragment((N,), "float32")
                for j in T.Parallel(N):
                    acc[j] = X[bx, j] * 2.0
                for j in T.Parallel(N):
                    Y[bx, j] = X[bx, j] + acc[j]
        return main

    r = tileroof.analyze(twopass, device="h200", M=4096, N=2048)
    xs = [o for o in r.timing.memory.per_operand if o.buffer == "X"]
    assert [o.issued for o in xs] == [4096 * 2048 * 4] * 2
    assert [o.dram for o in xs] == [4096 * 2048 * 4, 0]
    c = CASES["rope_fp16_b4_s4096_h32_d128"]
    rope = tileroof.analyze(c.kernel, device="h200", **c.params)
    assert sum(o.dram for o in rope.timing.memory.per_operand if o.buffer == "X") == 4 * 4096 * 32 * 128 * 2


def test_untiled_read_indexed_after_an_earlier_read():
    """An index-table read of a buffer an earlier op read: nothing more from DRAM when the buffer
    fits the L2 (it came with the earlier op), every issued byte when it does not."""
    curve = ((16e6, 1.0), (48e6, 0.0))
    assert memory.untiled_read(900e6, 50e6, True, 20, 5e6, 60e6, 30e6, curve, read_before=True)[0] == 0.0
    assert memory.untiled_read(900e6, 80e6, True, 20, 5e6, 60e6, 30e6, curve, read_before=True)[0] == pytest.approx(900e6)
    # not indexed by data: the earlier read does not matter to this rule
    assert memory.untiled_read(900e6, 50e6, False, 20, 5e6, 60e6, 30e6, curve, read_before=True)[0] == \
        memory.untiled_read(900e6, 50e6, False, 20, 5e6, 60e6, 30e6, curve)[0]


def test_causal_mask_selects_join_a_one_warpgroup_iteration_only():
    # the causal flash-attention forward initialises each score tile with T.if_then_else(mask, 0, -inf):
    # one select per score element on the ALU pipe, no FLOP.  Block (bx, by, bz) of 64 query rows
    # runs ceil((bx + 1) * 64 / 64) = bx + 1 key tiles of 64, so the selects total
    # batch * heads * 64 * 64 * sum_{bx < 128} (bx + 1) = 2 * 32 * 4096 * 8256
    c = CASES["sweep_fafin_bm64_bn64_s2_t128"]
    dev = devices.load("h200")
    r = tileroof.analyze(c.kernel, device=dev, **c.params)
    sel = [oc.selects for rec, oc in zip(r.trace.ops, r.counts.ops) if oc.selects]
    assert sel == [2 * 32 * 64 * 64 * sum(bx + 1 for bx in range(8192 // 64))]
    # one consumer warpgroup: the selects lengthen each iteration by their time at the ALU pipe's
    # rate times the loop's issue factor (the rest of the iteration moves a little with the
    # modelled clock, which the time sets)
    r0 = tileroof.analyze(c.kernel, device=replace(dev, alu_per_clk=0), **c.params)
    t, t0 = (x.timing.pipeline["terms_s"]["compute"] for x in (r, r0))
    total_iters = r.timing.pipeline["loop_iterations"] * r.trace.num_blocks
    per_iter = sel[0] * dev.loop_alu_factor / (dev.alu_per_clk * dev.clock_hz) / total_iters
    assert r.timing.pipeline["consumer_warpgroups"] == 1 and r.timing.pipeline["resident_blocks"] == 1
    assert t - t0 == pytest.approx(per_iter, rel=0.03)
    # two consumer warpgroups: not charged (the records show the other warpgroup hides most of them)
    c2 = CASES["sweep_facausald64_bm128_bn64_s2_t256"]
    r2 = tileroof.analyze(c2.kernel, device=dev, **c2.params)
    r20 = tileroof.analyze(c2.kernel, device=replace(dev, alu_per_clk=0), **c2.params)
    assert r2.timing.pipeline["consumer_warpgroups"] == 2
    assert any(oc.selects for oc in r2.counts.ops)
    assert r2.timing.pipeline["terms_s"]["compute"] == pytest.approx(r20.timing.pipeline["terms_s"]["compute"], rel=1e-9)


def test_block_starts_bound_many_small_blocks():
    """Runs 141, 144 (tileroof.gpu.blockrate): an SM starts a block no faster than every 79.36 ns, so
    67584 store-one-element blocks on 132 SMs take 512 x 79.36 ns = 40.6 us of body, whatever
    the blocks do; without the measured interval the same launch is timed by its chains alone."""
    from tileroof.gpu.blockrate import block_touch
    dev = devices.load("h200")
    assert dev.block_start_s == pytest.approx(79.36e-9)
    f = block_touch.get_tir(G=132 * 512, threads=128, per_thread=0)
    r = tileroof.analyze(f, device=dev)
    assert r.timing.bound == "block starts"
    assert r.timing.resource_s["block starts"] == pytest.approx(512 * 79.36e-9)
    assert r.timing.time_s == pytest.approx(512 * 79.36e-9 + model.timing_floor(dev))
    bare = tileroof.analyze(f, device=replace(dev, block_start_s=0.0, warp_start_s=0.0))
    assert "block starts" not in bare.timing.resource_s and bare.timing.time_s < 0.6 * r.timing.time_s


def test_warp_launch_bounds_wide_blocks():
    """Run 144 (tileroof.gpu.blockrate on the H100): store-only blocks of 1024 threads start every
    137.4 ns on an SM, not every 79.4 ns: its 32 warps launch one every 4.29 ns.  The launch of
    132 x 512 such blocks is timed at 512 x 32 x 4.294 ns; a block's chain carries its own warps'
    launch span (a 1024-thread copy block: 137 ns longer than with no warp cost)."""
    from tileroof.gpu.blockrate import block_touch
    dev = devices.load("h200")
    assert dev.warp_start_s == pytest.approx(4.294e-9)
    assert model.block_start_interval(dev, 1024) == pytest.approx(32 * 4.294e-9)
    assert model.block_start_interval(dev, 256) == pytest.approx(dev.block_start_s)
    f = block_touch.get_tir(G=132 * 512, threads=1024, per_thread=0)
    r = tileroof.analyze(f, device=dev)
    assert r.timing.resource_s["block starts"] == pytest.approx(512 * 32 * 4.294e-9)
    g = block_touch.get_tir(G=132 * 32, threads=1024, per_thread=1)
    with_warps = tileroof.analyze(g, device=dev).timing.resource_s["block chain"]
    without = tileroof.analyze(g, device=replace(dev, warp_start_s=0.0)).timing.resource_s["block chain"]
    assert with_warps > without + 10 * 32 * 4.294e-9 * 0.9


def test_first_wave_blocks_start_one_interval_apart():
    """An SM starts its first-wave blocks one block-start interval apart (blocks go to the SMs in
    turn), and a late-starting block still runs its own chain uncontended: the k-th block of an SM
    ends no earlier than k x 79.36 ns + its uncontended chain.  A first wave of 8 one-copy blocks of
    256 threads per SM (blockrate, run 144: 5.07 us measured, 4.49 modelled without it)."""
    from tileroof.gpu.blockrate import block_touch
    dev = devices.load("h200")
    f = block_touch.get_tir(G=132 * 8, threads=256, per_thread=1)
    r = tileroof.analyze(f, device=dev)
    tm = r.timing
    wave = memory.launch_order(r.trace)[:tm.slots]
    first, alone = model.block_chain(r.trace, r.counts, dev, tm.occupancy, tm.memory, wave)
    k = np.arange(len(wave)) // 132
    assert (first >= k * dev.block_start_s + alone - 1e-15).all()
    assert first[-1] == pytest.approx(7 * dev.block_start_s + alone[-1])
    late = tileroof.analyze(f, device=replace(dev, block_start_s=0.0, warp_start_s=0.0)).timing.time_s
    assert tm.time_s > late + dev.block_start_s


def test_compute_bound_launch_drifts_only_past_the_window_margin():
    """Run 152 (H100): unswizzled 128x128 bf16 GEMMs, compute-bound in step, stay in step with a
    prefetch window of 1.18 DRAM round trips (4 stages: 5586 MB, 1963 us) and drift from 1.44 on
    (two warpgroups, 5 stages: 7323 MB, 2445 us); the model drifts them from
    COMPUTE_BOUND_DRIFT_WINDOW = 1.36 round trips on."""
    assert 1.28 < model.COMPUTE_BOUND_DRIFT_WINDOW < 1.44
    stay = CASES["sweep_gemmdeep_bm128_bn128_bk64_s4_t128_sw0"]
    go = CASES["driftcheck_gemm_bf16_6144x12288x6144_bm128_bn128_bk64_s5_t256_sw0"]
    rs = tileroof.analyze(stay.kernel, device="h100_sxm", **stay.params).timing
    rg = tileroof.analyze(go.kernel, device="h100_sxm", **go.params).timing
    assert rs.memory.dram_bytes == pytest.approx(rs.dram_in_step) and rs.dram_if_drifting > 1.2 * rs.dram_in_step
    assert rg.memory.dram_bytes == pytest.approx(rg.dram_if_drifting) and rg.dram_if_drifting > 1.2 * rg.dram_in_step
    assert any("drift apart" in a for a in rg.assumptions)


def test_order_key_runner_up_breaks_full_ties_only():
    # same time, L2 bytes, iterations and DRAM: the config whose runner-up resource is further
    # behind its bound goes first; any earlier key still decides before it
    assert order_key(1e-3, dram_bytes=5e8, runner_up=0.7e-3) < order_key(1e-3, dram_bytes=5e8, runner_up=0.9e-3)
    assert order_key(1e-3, dram_bytes=5e8, runner_up=0.9e-3) < order_key(1e-3, dram_bytes=6e8, runner_up=0.1e-3)
    # Result.runner_up_s: the H100's DRAM-bound 16-row row sum has its pipelined loop behind the DRAM
    r = tileroof.analyze(CASES["sweep_rowsum_bm16_bn256_s3_t128"].kernel, device="h100_sxm",
                         **CASES["sweep_rowsum_bm16_bn256_s3_t128"].params)
    assert r.bound == "dram"
    assert r.runner_up_s == pytest.approx(r.timing.pipeline["makespan_s"])
    assert r.runner_up_s < r.timing.resource_s["dram"]


def test_unpipelined_tile_copies_go_through_registers():
    """num_stages=0: no cp.async, each iteration's A and B tiles pass through registers (loads
    issued before the shared stores). 64x64x64 fp16 tiles: 2 x 64 x 64 x 2 = 16384 bytes a block;
    with the 64x64 fp32 accumulator 32 + (16384 + 16384) / 4 / 128 = 96 registers, 5 blocks an SM
    (65536 / (96 x 128)); ptxas allocates 84 and Nsight Compute reports 5 blocks an SM."""
    c = CASES["gemm_nn_fp16_4096_bm64_s0"]
    tr = walk(c.kernel, c.params)
    assert model.unpipelined_tile_bytes(tr) == 2 * 64 * 64 * 2
    occ = model.occupancy(tr, devices.load("h200"))
    assert occ.regs_per_thread == 96 and occ.blocks_per_sm == 5
    # a pipelined copy (cp.async stages) holds nothing in registers
    p = CASES["gemm_nows_fp16_4096x4096x4096_bm64_bn128_bk64_s2_t128"]
    assert model.unpipelined_tile_bytes(walk(p.kernel, p.params)) == 0


def test_serial_loop_blocks_hide_each_others_tile_waits():
    """A one-stage loop without a producer at 5 blocks an SM: a block's trip is its tile latency
    plus its own compute (a fifth of the SM's), not plus all five blocks' compute; the SM's compute
    still bounds the iteration. Measured on the H200: 558 us; the in-phase reading gave +44 %, this one -13 %."""
    c = CASES["gemm_nn_fp16_4096_bm64_s0"]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    p = r.timing.pipeline
    assert p["resident_blocks"] == 5
    compute, latency = p["terms_s"]["compute"], p["terms_s"]["latency"]
    lat = devices.load("h200").fitted["load_latency_s"]
    assert latency < lat + compute / 2          # far below latency + the whole SM's compute
    assert p["iteration_s"] == pytest.approx(max(compute, latency, p["terms_s"]["l2"]))


def test_wave_union_by_hand():
    """Two boxes side by side over rows 0-1 of an 8 x 16 buffer: one 8-element run a row; boxes
    of whole rows: one run over both rows."""
    lo = [np.array([0, 0]), np.array([0, 4])]
    hi = [np.array([2, 2]), np.array([4, 8])]
    segs, piece = memory._wave_union(lo, hi, (8, 16))
    assert sorted(segs.tolist()) == [8, 8] and piece == 4
    lo = [np.array([0, 1]), np.array([0, 0])]
    hi = [np.array([1, 3]), np.array([16, 16])]
    segs, piece = memory._wave_union(lo, hi, (8, 16))
    assert segs.tolist() == [48] and piece == 24          # whole rows: 16 and 32 contiguous, median 24
    # the same two boxes as one block's two ops (per_block 2): the block's piece spans both, 8; two
    # blocks with two boxes each, the second block's apart (columns 0-4 and 8-12): 8 and 8 -> 8
    lo = [np.array([0, 0]), np.array([0, 4])]
    hi = [np.array([2, 2]), np.array([4, 8])]
    assert memory._wave_union(lo, hi, (8, 16), per_block=2)[1] == 8
    lo = [np.array([0, 0, 2, 2]), np.array([0, 4, 0, 8])]
    hi = [np.array([2, 2, 4, 4]), np.array([4, 8, 4, 12])]
    assert memory._wave_union(lo, hi, (8, 16), per_block=2)[1] == 8


def test_wave_runs_scatter_by_hand():
    """blockrate's block_tiles(G=64, cols=256, "scatter"): 8 tiles a row of A (R x 256, R = 524288).
    With 16 slots the middle wave (w = 64 // 16 // 2 = 2) is blocks 32-47, tile rows 4 and 5 of A:
    rows 128-191 whole, one run of 64 x 256 x 2 = 32768 bytes; block b writes tile (b % 8, b // 8)
    of B (256 x R), so each of B's 256 rows gets tile columns 4 and 5: one run of 64 x 2 = 128
    bytes a row, as derive.widths_wave_run_bytes says of a wave covering two rows of tiles."""
    from tileroof.gpu.blockrate import block_tiles
    tr = walk(block_tiles.get_tir(G=64, cols=256, place="scatter"))
    runs = memory.wave_runs(tr, 16, np.arange(64))
    (a, pa), (b, pb) = runs[("A", False)], runs[("B", True)]
    assert sorted(runs) == [("A", False), ("B", True)]
    assert a.tolist() == [32768]
    assert b.tolist() == [128] * 256
    assert pa == pb == 64                       # each block: 32 fp16 elements of each row
    assert derive.widths_wave_run_bytes(256, "scatter", 2) == 128      # 8 x 2 blocks = 2 rows of tiles


def test_spread_factor_by_hand():
    curve = ((64, 64, 1.2), (64, 1024, 1.1), (64, 65536, 1.0))
    # 256 bytes: halfway between 64 and 1024 in log2 -> halfway between 1.2 and 1.1
    assert model.spread_factor(curve, [256]) == pytest.approx(1.15)
    # byte-weighted over runs: (64 x 1.2 + 1024 x 1.1) / 1088
    assert model.spread_factor(curve, [64, 1024]) == pytest.approx((64 * 1.2 + 1024 * 1.1) / 1088)
    assert model.spread_factor(curve, [16]) == pytest.approx(1.2)          # held at the ends
    assert model.spread_factor(curve, [1 << 20]) == pytest.approx(1.0)
    assert model.spread_factor((), [64]) == 1.0
    # a second piece size: 256-byte pieces cost 1.04 at 1024-byte runs; 128-byte pieces lie
    # halfway in log2 between the two curves: (1.1 + 1.04) / 2
    two = curve + ((256, 1024, 1.04), (256, 65536, 1.0))
    assert model.spread_factor(two, [1024], 128) == pytest.approx(1.07)
    assert model.spread_factor(two, [1024], 16) == pytest.approx(1.1)      # held at the smallest piece
    # beyond the largest measured piece the excess shrinks as 1 / piece: 0.04 x 256 / 4096
    assert model.spread_factor(two, [1024], 4096) == pytest.approx(1.0025)
    assert model.spread_factor(curve, [64], 512) == pytest.approx(1.025)    # 0.2 x 64 / 512


def test_dram_time_spread_by_hand():
    """Reads and writes each at their spread factor: (R + 1.2 W) / bw."""
    dev = replace(devices.load("h200"), flush_dirty_bytes=0.0)
    t, wb = model.dram_time(1e9, 1e9, dev, 0.0, (1.0, 1.2))
    assert wb == 0
    assert t == pytest.approx(2.2e9 / dev.dram_bw)


def test_dram_spread_entries_by_hand():
    """A widths run: reference 100 us; the scatter at 2048 columns 110 us -> writes of 1024-byte
    runs (a wave of 8 x 132 blocks over 64 tiles a row: 16 rows of tiles) cost k = 2 x 1.1 - 1 = 1.2;
    the gather at 32768 columns 130 us -> reads of 64-byte runs 1.6; both curves close at 1 at the
    run the memory model sees of the reference's span (a band of 2 x LONG_RUN_BYTES)."""
    res = [{"place": "rows", "cols": 16384, "median_s": 100e-6},
           {"place": "scatter", "cols": 2048, "median_s": 110e-6},
           {"place": "gather", "cols": 32768, "median_s": 130e-6}]
    run = {"mode": "widths", "sm_count": 132, "results": res, "provenance": {}}
    out = derive.dram_spread_entries(run, "test")
    assert out["dram_spread_write"]["value"] == [[64, 1024, 1.2], [64, 2 * memory.LONG_RUN_BYTES, 1.0]]
    assert out["dram_spread_read"]["value"] == [[64, 64, 1.6], [64, 2 * memory.LONG_RUN_BYTES, 1.0]]
    # a pieces run: fp32 tiles 32 x 64 (256-byte pieces) against their own reference
    more = [{"place": "rows", "cols": 16384, "median_s": 200e-6, "piece_bytes": 256, "wide": 2},
            {"place": "scatter", "cols": 16384, "median_s": 210e-6, "piece_bytes": 256, "wide": 2}]
    out = derive.dram_spread_entries({**run, "mode": "pieces", "results": res + more}, "test")
    # 8 x 132 blocks over 16384 / 64 = 256 tiles a row: 4 rows of tiles, runs of 4 x 256 bytes; 2 x 1.05 - 1
    assert out["dram_spread_write"]["value"] == [[64, 1024, 1.2], [64, 2 * memory.LONG_RUN_BYTES, 1.0],
                                                 [256, 1024, 1.1], [256, 2 * memory.LONG_RUN_BYTES, 1.0]]
    assert derive.dram_spread_entries({**run, "mode": "touch"}, "test") == {}


def test_dram_spread_profile_reproduces_run_154():
    """The profile's spread curves are derive.dram_spread_entries of the committed widths run (H100,
    run 154) and the model prices a transpose's 64-byte writes dearer than its whole-line reads."""
    prof = devices._read(devices.profiles_dir() / "h200.toml")["measured"]
    run = json.loads((REPO / "benchmarks/results/h100/blockrate-20261206T195201Z.json").read_text())
    out = derive.dram_spread_entries(run, "x")
    for key in ("dram_spread_read", "dram_spread_write"):
        assert out[key]["value"] == prof[key]["value"]
    dev = devices.load("h200")
    assert model.spread_factor(dev.dram_spread_write, [64], 64) > 1.15
    assert model.spread_factor(dev.dram_spread_read, [2 * memory.LONG_RUN_BYTES], 64) == pytest.approx(1.0)


def test_spread_reported_and_priced_for_a_scatter():
    """block_tiles(G=64, cols=256, "scatter") on the H200: all 64 blocks are one wave (1056 slots),
    8 rows of tiles of A, so each of B's 256 rows gets 8 pieces of 64 bytes side by side: runs of
    512 bytes.  Its writes cost the profile's write table at (64, 512); its reads (rows 0-255 of A
    whole, one run) a stream's.  The result's JSON reports both."""
    from tileroof.gpu.blockrate import block_tiles
    dev = devices.load("h200")
    r = tileroof.analyze(block_tiles.get_tir(G=64, cols=256, place="scatter"), device=dev)
    d = r.to_dict()
    assert d["dram_spread_read"] == pytest.approx(1.0)
    assert d["dram_spread_write"] == pytest.approx(model.spread_factor(dev.dram_spread_write, [512], 64))
    assert d["dram_spread_write"] > 1.05
    assert any("short runs" in a for a in d["assumptions"])
    # without the tables the same launch is a stream, and no slower
    bare = replace(dev, dram_spread_read=(), dram_spread_write=())
    r0 = tileroof.analyze(block_tiles.get_tir(G=64, cols=256, place="scatter"), device=bare)
    assert r0.to_dict()["dram_spread_write"] == 1.0
    assert r0.timing.time_s <= r.timing.time_s


def test_first_wave_epilogue_counts_the_wave_once_at_several_blocks_per_sm():
    """A one-wave launch of 4 blocks per SM (512 blocks of 64x128 fp16 tiles stored straight from
    the fragment): the first wave's blocks store together, the whole wave's requests (512 x 1024,
    one a row segment of 8 elements) at the GPU's rate, so its blocks end that long after their
    loops, where a later wave's 4 co-resident blocks take 4 x t_store at the SM's rate: the first
    wave's block is longer by max(t_store0 - 4 t_store, 0), not 4 x (t_store0 - t_store)."""
    dev = devices.load("h200")
    case = CASES["probe_densesplit_m8192_n512_k2048_bm64_bn128_bk64_s2_t256"]
    res = tileroof.analyze(case.kernel, device=dev, **case.params)
    occ = model.occupancy(res.trace, dev)
    assert (occ.blocks_per_sm, res.trace.num_blocks) == (4, 512)
    block, info = model.pipeline_at_clock(res.trace, res.counts, dev, occ, res.timing.memory)()
    first = np.asarray(info["first_wave_block_s"], dtype=float)
    requests = 64 * 128 // 8
    t_store = model.accumulator_store_time(64 * 128 * 2, requests, dev, dev.l2_bw / dev.sm_count)
    t_store0 = 512 * requests / dev.store_request_rate_all
    assert t_store0 > 4 * t_store > 0
    extra = float(first.max() - np.asarray(block, dtype=float).max())
    assert extra == pytest.approx(t_store0 - 4 * t_store, rel=1e-6)
    assert extra < 4 * (t_store0 - t_store) / 2


def test_persistent_gemm_is_timed_as_the_grid_it_stands_for():
    from . import kernels as K
    # 4096 x 4096 x 1024, 128 x 256 tiles: 32 x 16 = 512 tiles over 132 blocks, 4 trips each (16
    # trips past the last tile do nothing).  Counts by hand: 2 M N K FLOPs; each tile reads its
    # 16 K steps of A (128 x 64) and B (64 x 256) fp16 tiles; C written once
    p = dict(M=4096, N=4096, K=1024)
    pers = tileroof.analyze(K.persistent_gemm, **p)
    assert pers.tensor_flops == 2 * 4096 * 4096 * 1024
    assert pers.counts.level_bytes("global", "read") == 512 * 16 * (128 * 64 + 64 * 256) * 2
    assert pers.counts.level_bytes("global", "write") == 4096 * 4096 * 2
    # the walk runs trip w of block b as block (b, w) of a 132 x 4 grid, at most 132 resident:
    # the L2 model sees the tiles each wave shares, as for the plain grid of the same tile order
    assert pers.trace.grid == (132, 4, 1) and pers.trace.resident_blocks == 132
    plain = tileroof.analyze(K.persistent_gemm, virtual=True, **p)
    assert plain.trace.resident_blocks == 0
    assert pers.dram_bytes == plain.dram_bytes
    assert pers.estimated_time == pytest.approx(plain.estimated_time, rel=1e-9)
    assert any("persistent kernel: 132 blocks launched" in a for a in pers.assumptions)
    # before: the tile starts (w * 132 + b) // 8 % 32 are no affine key, every re-read an untiled
    # miss; now A and B come from DRAM a few times over, not once per issued tile (2.6 GB)
    assert pers.dram_bytes < 0.2 * pers.counts.level_bytes("global", "read")


def test_persistent_grid_caps_residency():
    from . import kernels as K
    # a 64 x 64 fp16 tile copy: 8 KiB of shared memory and 128 threads, many blocks would fit an
    # SM, but the kernel launches 132, one an SM (264: two)
    for sm_num, per_sm in ((132, 1), (264, 2)):
        r = tileroof.analyze(K.persistent_copy, sm_num=sm_num)
        occ = r.timing.occupancy
        assert occ.blocks_per_sm == per_sm and occ.limiter == "persistent grid"
        # every one of the 64 x 64 tiles copied once: 32 MiB read, 32 MiB written
        assert r.counts.level_bytes("global", "read") == r.counts.level_bytes("global", "write") == 4096 * 4096 * 2


def test_residual_read_of_swept_rows_hits_l2():
    from . import kernels as K
    # 128 blocks each stream their 64 x 64 fp16 rows of A (8 KiB) in 16-row steps, then read the
    # same rows whole: the second read is of bytes the block just brought in (1 MiB in all, far
    # under the L2): no DRAM.  Reading another tensor's rows instead costs their 1 MiB.
    def second(res):
        r = tileroof.analyze(K.loop_then_residual, residual=res)
        ops = [o for o in r.timing.memory.per_operand if o.buffer in ("A", "R")]
        return ops[-1]
    again = second("A")
    assert again.issued == 8192 * 64 * 2 and again.dram == 0 and "read again" in again.note
    other = second("R")
    assert other.dram == 8192 * 64 * 2


def test_overlapping_halo_tiles_read_their_footprint():
    from . import kernels as K
    # 256 blocks of 32 + 2 rows x 64 fp16: 256 * 34 * 128 B issued, over a footprint of 8194 rows;
    # the 2 halo rows a block shares with the next are re-read while the L2 holds them (the whole
    # input is 1 MiB): DRAM reads the footprint once
    r = tileroof.analyze(K.row_stencil)
    a = [o for o in r.timing.memory.per_operand if o.buffer == "A"][0]
    assert a.issued == 256 * 34 * 64 * 2 and a.unique == 8194 * 64 * 2
    assert a.dram == pytest.approx(a.unique) and "overlapping" in a.note

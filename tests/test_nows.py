"""The pipelined gemm iteration without warp specialisation (gemm_pipe --nows): the law, the
co-residency curve, the profile entries derived from a run, and the blocks that share an SM."""
from dataclasses import replace

import pytest

import tileroof
from tileroof import devices, model
from tileroof.counts import MMA_SUFFIX
from tileroof.gpu import derive, tl_kernels

CURVE = ((1.0, 1.0), (2.0, 1.692), (4.0, 2.44))


def test_coresidency_curve_and_fallback():
    dev = replace(devices.load("h200"), coresidency_nows=CURVE)
    assert model.coresidency(dev, 1) == 1.0
    assert model.coresidency(dev, 2) == pytest.approx(1.692)
    assert model.coresidency(dev, 3) == pytest.approx((1.692 + 2.44) / 2)        # between the points
    assert model.coresidency(dev, 6) == pytest.approx(2.44 + (2.44 - 1.692) / 2 * 2)   # the last segment on
    assert model.coresidency(replace(dev, coresidency_nows=()), 3) == 3.0       # no curve: no overlap


def test_nows_iteration_law():
    dev = replace(devices.load("h200"), tensor_rate_share_nows=0.5, gemm_iteration_cycles_nows=100.0)
    # 1000 cycles of math at the peak run at half of it, and each of the two gemms pays 100 cycles
    assert model.nows_iteration(dev, 1000.0, 2) == pytest.approx(2200.0)


def test_nows_entries_from_a_run():
    fits = [{"shape": [64, 64, 128], "intercept_cycles": 100.0, "flops_per_clk_sm_from_slope": 2048.0},
            {"shape": [64, 128, 128], "intercept_cycles": 200.0, "flops_per_clk_sm_from_slope": 3072.0},
            {"shape": [128, 128, 128], "intercept_cycles": 300.0, "flops_per_clk_sm_from_slope": 4096.0}]

    def cfg(bps, iters, t):
        return {"shape": [64, 64, 128], "block_K": 64, "iters": iters, "blocks_per_sm": bps,
                "stats": {"median_s": t}, "sm_clock_hz": 1e9}
    # one block: 1 us per iteration (1000 cycles); two: 1.5 us for both blocks' iteration
    configs = [cfg(1, 400, 400e-6), cfg(1, 1600, 1600e-6), cfg(2, 400, 600e-6), cfg(2, 1600, 2400e-6)]
    out = derive.nows_entries({"fits": fits, "configs": configs}, 4096.0, "test")
    assert out["gemm_iteration_cycles_nows"]["value"] == 200.0
    assert out["tensor_rate_share_nows"]["value"] == 0.75
    assert out["coresidency_nows"]["value"] == [[1, 1.0], [2, 1.5]]


def test_blocks_share_an_sm_only_as_many_as_are_there():
    """gemm_pipe_nows fits 4 blocks per SM by shared memory; with one block per SM (grid = SMs) its
    iteration is one block's chain, with two the chain times the co-residency curve at 2."""
    dev = devices.load("h200")
    p = dict(block_M=64, block_N=128, block_K=64, num_stages=2, threads=128, iters=400)
    one = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=dev, grid=dev.sm_count, **p)
    two = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=dev, grid=2 * dev.sm_count, **p)
    assert one.timing.occupancy.blocks_per_sm == 4
    c1, c2 = one.timing.pipeline["terms_s"]["compute"], two.timing.pipeline["terms_s"]["compute"]
    assert c2 / c1 == pytest.approx(model.coresidency(dev, 2), rel=1e-6)


def test_a_block_of_fewer_warps_than_schedulers_issues_from_that_many():
    """A warp stays on its SM sub-partition: without the small-block measurement, a one-warp
    block's gemms and arithmetic go at a quarter of the SM's rates and three such blocks on an SM
    do not contend (three schedulers); with it (gemm_pipe --warps, run 161), the one-warp block's
    iteration is the measured rate and fixed cycles, and its co-resident blocks contend by the
    warps on the SM (the measured curve at 3 over 1)."""
    dev = devices.load("h200")
    assert [model.subpartitions_used(dev, t) for t in (32, 64, 96, 128, 512)] == [1, 2, 3, 4, 4]
    assert model.subpartitions_used(replace(dev, warp_schedulers=0), 32) == 0
    p = dict(block_M=16, block_N=64, block_K=64, num_stages=2, iters=400, threads=32, grid=3 * dev.sm_count)
    unmeasured = replace(dev, small_block_nows=(), coresidency_warps=())
    r_on = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=unmeasured, **p)
    r_meas = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=dev, **p)
    r_off = tileroof.analyze(tl_kernels.gemm_pipe_nows, device=replace(dev, warp_schedulers=0), **p)
    on, meas, off = r_on.timing.pipeline, r_meas.timing.pipeline, r_off.timing.pipeline
    # the report says so where it applies, and only there
    assert any("1 of the SM's 4 warp schedulers" in a for a in r_on.assumptions)
    assert not any("warp schedulers" in a for a in r_off.assumptions)
    assert on["resident_blocks"] == off["resident_blocks"] == 3
    # one iteration's cycles at the SM's peak: a one-warp block's gemm is mma.sync (counts.gemm_instruction)
    math = 2 * 16 * 64 * 64 / dev.tensor_flops_per_clk("fp16" + MMA_SUFFIX)
    # without the rule: the SM's rates, three blocks contending (the co-residency curve at 3); with
    # it: a quarter of them, the three blocks on three schedulers side by side (all at the clock the
    # launch runs at: the ratios do not depend on it)
    ratio = on["terms_s"]["compute"] / off["terms_s"]["compute"]
    assert ratio == pytest.approx(model.nows_iteration(dev, 4 * math, 1)
                                  / (model.nows_iteration(dev, math, 1) * model.coresidency(dev, 3)), rel=1e-6)
    # measured: 16x64x64 at 0.5117 of a quarter of mma.sync's peak + 126.4 cycles, x curve(3) / curve(1)
    want = (4 * math / 0.5117 + 126.4) * 1.181
    assert model.small_block_iteration(dev, math, 1, 32) == pytest.approx(4 * math / 0.5117 + 126.4)
    assert model.small_block_coresidency(dev, 3, 32) == pytest.approx(1.181)
    assert model.small_block_coresidency(dev, 2, 64) == pytest.approx(1.331 / 1.044)
    assert model.small_block_iteration(dev, math, 1, 128) is None and model.small_block_coresidency(dev, 2, 128) is None
    assert meas["terms_s"]["compute"] / on["terms_s"]["compute"] == pytest.approx(
        want / model.nows_iteration(dev, 4 * math, 1), rel=1e-6)


def test_small_block_entries_are_the_records():
    """The profile's small_block_nows and coresidency_warps are derive.small_block_entries of the
    committed gemm_pipe --warps record of the H200 (run 161), against the fp16 mma.sync peak (such
    blocks' gemms are mma.sync): one-warp blocks 0.512 of their scheduler's share of it and 126.4
    cycles an iteration; 1.33 at four warps an SM."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "h200"
    rec = json.loads((root / "gemm_pipe_warps-20261207T175804Z.json").read_text())
    dev = devices.load("h200")
    out = derive.small_block_entries(rec, dev.tensor_flops_per_clk("fp16" + MMA_SUFFIX), 4, "x")
    assert tuple(tuple(float(v) for v in row) for row in out["small_block_nows"]["value"]) == dev.small_block_nows
    assert tuple(tuple(float(v) for v in row) for row in out["coresidency_warps"]["value"]) == dev.coresidency_warps
    assert dev.small_block_nows[0][:2] == (1.0, pytest.approx(0.512, abs=1e-3))
    assert dict(dev.coresidency_warps)[4.0] == pytest.approx(1.33, abs=0.01)

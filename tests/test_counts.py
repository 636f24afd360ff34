"""Exact counts on small hand-written kernels; each expected number is derived in its comment."""
import pytest

import tileroof
from tileroof import TileroofError
from tileroof.ir import trace

from . import kernels as K


def by_kind(result, kind):
    return [op for op in result.counts.ops if op.kind == kind]


def test_gemm_4096_counts():
    r = tileroof.analyze(K.gemm, M=4096, N=4096, K=4096, bm=128, bn=128, bk=32)
    # 32×32 blocks, 128 k-steps each: 131072 gemm executions of 2·128·128·32 FLOPs = 2·4096³
    assert r.tensor_flops == 2 * 4096**3
    # every block reads a 128×32 A tile and a 32×128 B tile per k-step: 2 · 131072 · 4096 elems · 2 B
    assert r.counts.level_bytes("global", "read") == 2 * 131072 * 4096 * 2
    # C (fp32) written once: 4096² · 4 B
    assert r.counts.level_bytes("global", "write") == 4096 * 4096 * 4
    # unique: A and B fp16, C fp32
    assert r.unique_bytes == 4096 * 4096 * (2 + 2 + 4)
    assert r.trace.grid == (32, 32, 1)
    assert not r.partial


def test_gemm_ragged_edges_clip_bytes():
    r = tileroof.analyze(K.gemm, M=4000, N=4000, K=4000, bm=128, bn=128, bk=32)
    # 32 block columns each read all of A (4000×4000) once over k; B likewise per block row
    assert r.counts.level_bytes("global", "read") == 32 * 4000 * 4000 * 2 * 2
    assert r.counts.level_bytes("global", "write") == 4000 * 4000 * 4
    # the tensor cores still run full 128×128×32 tiles: 32·32 blocks · 125 k-steps
    assert r.tensor_flops == 32 * 32 * 125 * 2 * 128 * 128 * 32


def test_gemm_8192_no_wrap():
    r = tileroof.analyze(K.gemm, M=8192, N=8192, K=8192, bm=128, bn=256, bk=64, threads=256)
    assert r.tensor_flops == 2 * 8192**3 > 2**31
    # A re-read by 32 block columns, B by 64 block rows: (32 + 64) · 8192² · 2 B
    assert r.counts.level_bytes("global", "read") == (32 + 64) * 8192 * 8192 * 2
    assert r.estimated_time > 0


def test_transposed_gemm_same_counts():
    nn = tileroof.analyze(K.gemm, M=1024, N=1024, K=1024, bm=128, bn=128, bk=32)
    nt = tileroof.analyze(K.gemm, M=1024, N=1024, K=1024, bm=128, bn=128, bk=32, trans_b=True)
    assert nn.tensor_flops == nt.tensor_flops == 2 * 1024**3
    assert nn.global_bytes == nt.global_bytes
    assert any(op.attrs["trans_b"] for op in nt.trace.ops if op.kind == "gemm")


def test_batched_gemm_uses_blockidx_z():
    r = tileroof.analyze(K.batched_gemm, Bt=8, M=512, N=512, K=256, bm=128, bn=128, bk=32)
    assert r.trace.grid == (4, 4, 8)
    assert r.tensor_flops == 8 * 2 * 512 * 512 * 256
    # per batch: A read by 4 block columns, B by 4 block rows
    assert r.counts.level_bytes("global", "read") == 8 * (4 * 512 * 256 + 4 * 256 * 512) * 2
    assert r.counts.level_bytes("global", "write") == 8 * 512 * 512 * 2


def test_fp32_add_16384_squared_exact():
    r = tileroof.analyze(K.add2d, M=16384, N=16384, bm=64, bn=256)
    n = 16384 * 16384
    assert r.counts.level_bytes("global", "read") == 2 * n * 4
    assert r.counts.level_bytes("global", "write") == n * 4
    assert r.cuda_flops == n
    assert r.unique_bytes == 3 * n * 4


def test_guarded_elementwise_counts_only_live_iterations():
    # N = 1000 with blocks of 128: 8 blocks, 1024 iterations, 1000 pass the guard
    r = tileroof.analyze(K.add_guarded, N=1000, block=128)
    assert r.cuda_flops == 1000
    assert r.counts.level_bytes("global", "read") == 2 * 1000 * 4
    assert r.counts.level_bytes("global", "write") == 1000 * 4


def test_triangular_loop_counts_per_block():
    # S=1024, bm=128, bn=64: block bx runs 2(bx+1) iterations -> 2·(1+…+8) = 72 copies of 64×64
    r = tileroof.analyze(K.triangle, S=1024, bm=128, bn=64)
    copies = [op for op in r.trace.ops if op.kind == "copy" and op.operands[0].buffer == "K"]
    assert copies[0].executions == 72
    assert list(copies[0].per_block) == [2 * (b + 1) for b in range(8)]
    assert r.counts.level_bytes("global", "read") == 72 * 64 * 64 * 2
    # the multiply-add in the T.Parallel body is one FMA (2 FLOPs) per element per iteration
    assert r.cuda_flops == 72 * 64 * 64 * 2


def test_sfu_and_fma_classified():
    r = tileroof.analyze(K.fma_exp, N=4096, block=256)
    assert r.sfu_ops == 4096                     # one exp per element
    assert r.cuda_flops == 2 * 4096              # exp(x)*3 + x is one FMA
    # X[i] read twice in one expression: one load per element (the compiler's common subexpression)
    assert r.counts.level_bytes("global", "read") == 4096 * 4


def test_data_dependent_condition_is_bounded_and_assumable():
    r = tileroof.analyze(K.masked, N=64 * 128, NB=64, block=128)
    assert "Mask" in r.bounded                   # counted as if every block works: an upper bound
    assert r.cuda_flops == 64 * 128
    r0 = tileroof.analyze(K.masked, N=64 * 128, NB=64, block=128, assume={"Mask": 0})
    assert r0.cuda_flops == 0 and "Mask" in r0.trace.assumed


def test_symbolic_shape_needs_a_value():
    with pytest.raises(TileroofError, match="symbolic shape m"):
        trace(K.symbolic_copy())
    r = tileroof.analyze(K.symbolic_copy(), m=1000)
    # 16 blocks of 64 rows; the last holds 1000-960 = 40 rows: 1000·256 fp16 read and written
    assert r.counts.level_bytes("global", "read") == 1000 * 256 * 2
    assert r.counts.level_bytes("global", "write") == 1000 * 256 * 2


def test_scalar_argument_that_shapes_no_buffer_is_a_run_time_value():
    # 32 blocks each read one 64 x 256 fp16 tile of A (at a run-time row offset) and write it to B:
    # 32 * 64 * 256 * 2 = 1 MiB each way, whatever the offset; unbound, the offset is named as a
    # run-time value the copy's address reads; bound (-p) or assumed (--assume), it is not
    r = tileroof.analyze(K.offset_copy())
    assert r.bounded == ["off"]
    assert r.counts.level_bytes("global", "read") == r.counts.level_bytes("global", "write") == 32 * 64 * 256 * 2
    assert tileroof.analyze(K.offset_copy(), off=64).bounded == []
    ra = tileroof.analyze(K.offset_copy(), assume={"off": 64})
    assert ra.bounded == [] and "off" in ra.trace.assumed
    assert ra.counts.level_bytes("global", "read") == 32 * 64 * 256 * 2


def test_missing_parameter_and_bad_input():
    with pytest.raises(TileroofError, match="missing parameter"):
        tileroof.analyze(K.gemm, M=128)
    with pytest.raises(TileroofError, match="not a TileLang function"):
        tileroof.analyze(lambda x: x)
    with pytest.raises(TileroofError, match="unknown device"):
        tileroof.analyze(K.add_guarded, device="no-such-gpu", N=128, block=128)


def test_data_dependent_branch_taken_share():
    """--taken Mask=0.25: the branch on the mask holds in a quarter of the blocks: a quarter of the
    dense counts (64 blocks x 128 multiplies -> 2048), no longer an upper bound; shares outside
    [0, 1] are a clear error."""
    r = tileroof.analyze(K.masked, N=64 * 128, NB=64, block=128, taken={"Mask": 0.25})
    assert r.cuda_flops == 64 * 128 // 4
    assert r.counts.level_bytes("global", "write") == 64 * 128 * 4 // 4
    assert "Mask" not in r.bounded and dict(r.trace.taken) == {"Mask": 0.25}
    assert r.to_dict()["taken"] == {"Mask": 0.25}
    with pytest.raises(TileroofError, match=r"\[0, 1\]"):
        tileroof.analyze(K.masked, N=64 * 128, NB=64, block=128, taken={"Mask": 1.5})


def test_taken_share_scales_a_pipelined_loops_iterations():
    """A T.Pipelined loop whose body sits under a data branch (the block-sparse attention's tile
    check) runs `share` of its trips: the model's loop iterations are the taken ones (each with its
    whole tile), not all trips with a fraction of a tile each."""
    from tileroof.corpus import CASES

    c = CASES["up_blocksparse_attn_fp16_b2_h32_s8192_d128_sink1_win8"]
    dense = tileroof.analyze(c.kernel, **c.params)
    share = 0.125
    r = tileroof.analyze(c.kernel, taken={"block_mask": share}, **c.params)
    assert r.tensor_flops == pytest.approx(dense.tensor_flops * share, rel=1e-3)
    assert r.timing.pipeline["loop_iterations"] == pytest.approx(dense.timing.pipeline["loop_iterations"] * share)
    assert r.timing.pipeline["tile_bytes"] == pytest.approx(dense.timing.pipeline["tile_bytes"])


# ---- register operands held by several warps (counts.fragment_replicas) ---------------------------
# scaled_register_a(M=N=256, K=128, 128x128x64 tiles, 256 threads): 4 blocks x 2 iterations x a
# 128x64 A tile = 65,536 scaled elements.  TileLang's lowering (sm_90a) gives each thread
# `half_t Al[64]` under the Square policy (wgmma: 4 x 2 warps, the two warpgroups split N and each
# holds all of A) and `Al[32]` under FullRow (8 x 1): the Square kernel scales every element twice.
def _scaled(policy, device="h200"):
    import tilelang.language as T
    pol = getattr(T.GemmWarpPolicy, policy)
    return tileroof.analyze(K.scaled_register_a, device=device, M=256, N=256, K=128, bm=128, bn=128, bk=64,
                            threads=256, policy=pol)


@pytest.mark.parametrize("policy,device,copies", [("Square", "h200", 2), ("FullRow", "h200", 1),
                                                   ("Square", "a100_80gb", 4), ("FullRow", "a100_80gb", 1)])
def test_register_operand_replicas(policy, device, copies):
    r = _scaled(policy, device)
    (scale,) = [oc for oc in r.counts.ops if oc.kind == "elementwise"]
    assert scale.replicas == copies
    assert scale.executions == 65536 * copies
    assert scale.flops[("cuda", "fp16")] == 65536 * copies     # one multiply per held element
    gemm = next(oc for oc in r.counts.ops if oc.kind == "gemm")
    assert gemm.replicas == 1 and gemm.flops[("tensor", "fp16")] == 2 * 256 * 256 * 128
    # the JSON result says so per op
    (op,) = [o for o in r.to_dict()["ops"] if o["kind"] == "elementwise"]
    assert op["replicas"] == copies and op["executions"] == 65536 * copies


def test_gemm_warp_partition_is_tilelangs():
    from tileroof.counts import gemm_warp_partition
    # Square / FullRow / FullCol as TileLang 0.1.15 lays out 128x128 on 8 warps
    assert gemm_warp_partition(0, 128, 128, 256, "wgmma") == (4, 2)
    assert gemm_warp_partition(0, 128, 128, 256, "mma") == (2, 4)
    assert gemm_warp_partition(1, 128, 128, 256, "wgmma") == (8, 1)
    assert gemm_warp_partition(2, 128, 128, 256, "mma") == (1, 8)


def test_integer_alu_share_is_the_recorded_split():
    """The profile's integer_alu_share is what derive.integer_alu_share_entry reads off the
    committed per-pipe Nsight record (run 80)."""
    import gzip
    import json
    from pathlib import Path

    from tileroof import devices
    from tileroof.gpu.derive import integer_alu_share_entry
    raw = Path(__file__).resolve().parents[1] / "benchmarks/results/h200/raw/measure-20261201T225752Z.json.gz"
    entry = integer_alu_share_entry(json.load(gzip.open(raw)), "run 80")["integer_alu_share"]
    assert entry["value"] == pytest.approx(devices.load("h200").integer_alu_share, abs=5e-4)
    assert 0.5 < entry["value"] < 0.7


@pytest.mark.parametrize("case,held,spill", [
    # one consumer warpgroup: Ct_local 128x128 fp32 (65,536 B) + B_dequantize_prev_local 128x128 fp16
    # (32,768 B) + B_local 128x64 uint8 (8,192 B); B_dequantize_local, copied whole into the
    # prev buffer, shares its registers: 106,496 B = 208 registers a thread of 128 (ptxas: 240
    # allocated, no spill; the sum with it, 272, made the model spill)
    ("up_dequant_fp4_fp16_m4096_n4096_k4096_t128", 106496, 1.0),
    # two warpgroups each holding the whole decoded tile: the prev buffer and B_local twice
    ("up_dequant_fp4_fp16_m4096_n4096_k2048", 65536 + 2 * 32768 + 2 * 8192, 1.0),
])
def test_held_fragments_of_the_dequantising_gemm(case, held, spill):
    from tileroof.corpus import CASES
    c = CASES[case]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    assert r.counts.held_fragment_bytes == held
    assert r.timing.pipeline["register_spill_factor"] == spill


def test_column_scan_bank_conflicts():
    # TileLang's 2-D scan puts a warp's 32 lanes on 32 consecutive elements of the scanned line: down
    # a column of a 64-wide fp32 tile they are 256 B (64 words) apart, all on one bank: each access
    # replays 32 times (gcd(64, 32) = 32), 31 extra passes over the scan's 2 x 128 x 64 x 4 bytes a
    # block (read and write), 2 blocks; along a row the lanes are adjacent: no replay
    col = tileroof.analyze(K.tile_cumsum, dim=0)
    scan = [o for o in col.counts.ops if o.kind == "cumsum"][0]
    assert scan.excess[("shared", "conflict")] == 31 * 2 * (2 * 128 * 64 * 4)
    row = tileroof.analyze(K.tile_cumsum, dim=1)
    scan = [o for o in row.counts.ops if o.kind == "cumsum"][0]
    assert scan.excess.get(("shared", "conflict"), 0) == 0


def test_guard_on_two_loop_variables_decided_by_intervals():
    # k runs by .. 63, i 0 .. 63: k * 64 + i <= 4095 < 4096 always.  Too many (block, k, i) to
    # enumerate at 4096, so the interval bound decides it: no run-time branch, every atomic counted.
    # Trips: 64 - by over 64 row blocks = 2080, times 256 head blocks; 64 x 64 fp32 atomics a trip
    r = tileroof.analyze(K.guarded_atomic, M=4096, N=4096)
    assert r.bounded == []
    atomic = [o for o in r.counts.ops if o.kind.startswith("atomic")][0]
    assert atomic.bytes[("global", "atomic")] == 2080 * 256 * 64 * 64 * 4
    # small enough to enumerate: the same count
    small = tileroof.analyze(K.guarded_atomic, M=512, N=512)
    assert small.bounded == []
    assert [o for o in small.counts.ops if o.kind.startswith("atomic")][0].bytes[("global", "atomic")] == \
        (8 * 9 // 2) * 256 * 64 * 64 * 4

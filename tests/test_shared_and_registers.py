"""Shared-memory wavefronts from the lanes' addresses, warp shuffles on the shared pipe, per-thread
local arrays, and the register allocation of warp-specialised kernels that turn setmaxnreg off:
hand-derived counts on small kernels, and the recorded Nsight Compute counters they reproduce."""
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

import tileroof
from tileroof import devices, model
from tileroof.corpus import CASES
from tileroof.counts import P_SHFL, OpCounts

from . import kernels as K

H100_BLIND2 = Path(__file__).parents[1] / "benchmarks/results/h100/measure-20261205T180653Z.json"


def _shared_operands(r):
    return [(op_.access, op_.elements, op_.wavefront_factor) for rec in r.trace.ops for op_ in rec.operands
            if op_.scope == "shared"]


@pytest.mark.parametrize("pattern, write, read", [
    # the fill S[tx, i] of a 32-word-wide tile: lane t at word 32 t, all 32 lanes on bank 0
    ("row", 32.0, 1.0),            # S[i, tx]: 32 consecutive words, one wavefront
    ("col", 32.0, 32.0),           # S[tx, i]: the fill's pattern again, 32 wavefronts
    ("padded", 1.0, 1.0),          # rows of 33 words: lane t on bank (33 t + i) % 32, all distinct
    ("stride2", 32.0, 2.0),        # S[0, 2 tx]: words 0, 2, .., 62 -> 16 banks, two words each
    ("broadcast", 32.0, 1.0),      # S[0, 0]: one word for every lane, one wavefront
])
def test_warp_wavefronts_from_lane_addresses_by_hand(pattern, write, read):
    r = tileroof.analyze(K.shared_lanes, device="h200", pattern=pattern)
    ops = _shared_operands(r)
    assert [(a, f) for a, _e, f in ops] == [("write", write), ("read", read)]
    # each extra wavefront replays the access's bytes once more: the conflict excess
    extra = sum(e * 4 * (f - 1) for _a, e, f in ops)
    assert r.counts.excess.get(("shared", "conflict"), 0) == extra


def test_local_array_is_per_thread():
    # T.alloc_local((8,), float32) in a 128-thread block: 32 B a thread, 4096 B a block
    r = tileroof.analyze(K.local_array, device="h200", n=8, threads=128)
    (x,) = [b for b in r.trace.buffers.values() if b.scope == "local"]
    assert (x.nbytes, r.trace.block_nbytes(x), r.trace.fragment_bytes_per_block()) == (32, 4096, 4096)


def test_shared_pipe_bytes_by_hand():
    # 100 B read, 28 B of conflict replays, 32 thread shuffles (one warp SHFL = one 128 B wavefront)
    nbytes = Counter({("shared", "read"): 100, ("global", "read"): 1000})
    work = OpCounts("x", "elementwise", 1, bytes=nbytes, excess=Counter({("shared", "conflict"): 28}),
                    inst=Counter({P_SHFL: 32}))
    assert model.shared_pipe_bytes(work) == 256
    assert model.shared_pipe_bytes(OpCounts("x", "elementwise", 1, bytes=nbytes)) == 100


def _h100_ncu(name):
    return json.loads(H100_BLIND2.read_text())["cases"][name]["ncu"]


@pytest.mark.parametrize("name", ["blind2_hadamard_fp32_b8192_n8192", "blind2_hadamard_fp32_b1024_n32768"])
def test_shared_wavefronts_of_the_hadamard_transforms_against_nsight(name):
    # the transposes through the 128-byte-swizzled shared tile (eight lanes on one bank group for the
    # transposed side) plus one wavefront per warp shuffle: Nsight's shared wavefronts, run 139
    c = CASES[name]
    r = tileroof.analyze(c.kernel, device="h100_sxm", **c.params)
    modelled = model.shared_pipe_bytes(r.counts) / 128
    measured = _h100_ncu(name)["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
    assert modelled == pytest.approx(measured, rel=0.02)


def test_no_set_max_nreg_keeps_one_register_allocation_by_hand():
    # warp-specialised 64 x 64 x 32 fp16 GEMM, 128 consumer threads + 128 producer threads.  With
    # setmaxnreg (TileLang's default) the launch asks for the most a 256-thread block may have (255)
    # and re-balances to 24 / 240 after launch: 1 block per SM.  With T.no_set_max_nreg() the one
    # allocation is what the live fragments need: 16 + 64 x 64 x 4 B / 4 / 128 threads = 48
    # registers, 65536 // (48 x 256) = 5 blocks per SM.
    kw = dict(M=4096, N=4096, K=4096, bm=64, bn=64, bk=32)
    on = tileroof.analyze(K.gemm, device="h200", **kw)
    off = tileroof.analyze(K.gemm, device="h200", no_set_max_nreg=True, **kw)
    assert off.trace.register_hints == (("tl.no_set_max_nreg",),)
    assert (model._setmaxnreg(on.trace), model._setmaxnreg(off.trace)) == ((24, 240), None)
    assert (on.timing.occupancy.regs_per_thread, on.timing.occupancy.blocks_per_sm) == (255, 1)
    o = off.timing.occupancy
    assert (o.regs_per_thread, o.blocks_per_sm, o.threads_per_block, o.limiter) == (48, 5, 256, "registers")
    assert any("no setmaxnreg" in a for a in off.timing.assumptions)


def test_explicit_set_max_nreg_counts():
    r = tileroof.analyze(K.gemm, device="h200", M=1024, N=1024, K=1024, bm=64, bn=64, bk=32)
    hinted = replace(r.trace, register_hints=(("tl.set_max_nreg", 40, 0), ("tl.set_max_nreg", 232, 1)))
    assert model._setmaxnreg(hinted) == (40, 232)
    assert model._setmaxnreg(replace(r.trace, register_hints=(("tl.disable_warp_group_reg_alloc",),))) is None


def test_gdn_kkt_registers_against_nsight():
    # T.disable_warp_group_reg_alloc in the gated-delta-net K K^T: ptxas gave 79 registers a thread,
    # Nsight 3 blocks per SM by registers (run 139, H100); setmaxnreg would have allowed one.  Live
    # fragments: the 64 x 64 float32 accumulator with either the bf16 Beta K tile (in the loop) or the
    # float32 gate differences (after it): 16 + (16384 + 16384) / 4 / 128 = 80 registers
    name = "blind2_gdn_kkt_bf16_b1_s32768_h32_dk128"
    c = CASES[name]
    r = tileroof.analyze(c.kernel, device="h100_sxm", **c.params)
    ncu = _h100_ncu(name)
    o = r.timing.occupancy
    assert o.blocks_per_sm == ncu["launch__occupancy_limit_registers"] == 3
    assert abs(o.regs_per_thread - ncu["launch__registers_per_thread"]) <= 8


def test_reads_after_the_loop_wait_a_round_trip():
    # the K K^T's one read after its loop (the chunk's gates, element loads into shared memory): one
    # group, one DRAM round trip in the block's time beyond the loop; a plain GEMM reads nothing after
    c = CASES["blind2_gdn_kkt_bf16_b1_s32768_h32_dk128"]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    assert model.read_groups_after_loop(r.trace, r.counts) == 1
    g = tileroof.analyze(K.gemm, device="h200", M=1024, N=1024, K=1024, bm=64, bn=64, bk=32)
    assert model.read_groups_after_loop(g.trace, g.counts) == 0
    dev = devices.load("h200")
    assert r.timing.pipeline["prologue_epilogue_s"] >= model.dram_tile_round_trip(dev, 0.0) > 0


@pytest.mark.parametrize("name, write, read", [
    # float32, 32 x 32 tile: the write tile[r, tx] is 32 consecutive words (1); the read tile[tx, r]
    # strides a 128-byte row, every lane on bank r % 32 (32)
    ("bankcheck_transpose_naive_float32_8192x8192", 1.0, 32.0),
    ("bankcheck_transpose_padded_float32_8192x8192", 1.0, 1.0),     # 33-word rows: banks (33 tx + r) % 32
    ("bankcheck_transpose_swizzle_float32_8192x8192", 1.0, 1.0),    # column tx ^ r: distinct banks
    # float16: a warp's 64 bytes still take a whole wavefront (2 over 64 / 128); the naive read's
    # lanes at 64-byte strides fall on two banks, 16 distinct words each: 16 wavefronts (32 over 0.5)
    ("bankcheck_transpose_naive_float16_8192x16384", 2.0, 32.0),
    # 66-byte rows, read at row r = ty + 8 j: even lanes 2k take word 33 k + r // 2 (bank k + r // 2),
    # odd lanes 2k + 1 word 33 k + 16 + (r + 1) // 2.  At even r the two halves take banks r/2 + 0..15
    # and r/2 + 16..31: one wavefront; at odd r lane 31 (k = 15) lands on word 512 + (r - 1) / 2, lane
    # 0's bank: two.  Half the warps' rows are odd: 1.5 wavefronts a warp, 3.0 over 64 / 128 (only
    # the first warp's first row, r = 0, said 2.0)
    ("bankcheck_transpose_padded_float16_8192x16384", 2.0, 3.0),
])
def test_transpose_bank_conflicts_by_hand(name, write, read):
    c = CASES[name]
    r = tileroof.analyze(c.kernel, device="h200", **c.params)
    assert [(a, f) for a, _e, f in _shared_operands(r)] == [("write", write), ("read", read)]

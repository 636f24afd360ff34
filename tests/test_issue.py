"""The SIMT instruction estimate (counts.instructions) and the issue / pipe bounds it feeds
(model.simt_issue_times); each expected number is derived in its comment."""
import numpy as np

import tileroof
from tileroof import counts, devices, model
from tileroof.trace import OpRecord, Operand

from . import kernels as K


def test_row_onehot_instructions_by_pipe():
    r = tileroof.analyze(K.row_onehot_max, M=4096, N=128, bm=64, threads=128)
    blocks = 4096 // 64
    # per block: the 64x128 fp32 tile in and out, one 16-byte LDG / STG per 4 elements: 2 x 2048
    mem = 2 * 64 * 128 // 4
    # reduce_max: one FMNMX per element (8192), then a row's 128 elements sit 4 to a thread on 32
    # neighbouring lanes: 5 butterfly steps (SHFL + FMNMX) for each of the 64 x 32 (row, lane) pairs
    shfl = 64 * 32 * 5
    alu = 8192 + 64 * 32 * 5
    # the one-hot: an FSETP and an FSEL per element; the fragment lives in registers
    alu += 2 * 8192
    assert r.counts.inst == {"mem": blocks * mem, "shfl": blocks * shfl, "alu": blocks * alu}
    assert r.warp_instructions == blocks * (mem + shfl + alu) / 32
    # the select is an instruction, not a FLOP: FLOPs are the max (8192) and the compare (8192)
    assert r.total_flops == blocks * 2 * 8192


def test_special_functions_issue_their_library_sequence():
    # Y = exp(X) * 3 + X on 4096 fp32 elements, 16 blocks of 256: per element one 4-byte LDG and one
    # STG (fp32, vectorised 4 to a 16-byte instruction: 2 / 4), the FFMA of * 3 + X, and expf: without
    # fast math (TileLang's default) its SASS is FFMA.SAT, FFMA.RM, FADD, two FFMA and an FMUL around
    # MUFU.EX2, plus a SHF (benchmarks/sass_special.py): 6 FMA, 1 ALU, 1 XU
    n = 4096
    r = tileroof.analyze(K.fma_exp, N=n, block=256)
    assert r.counts.inst == {"mem": n * 2 / 4, "fma": n * (1 + 6), "alu": n * 1, "xu": n * 1}
    # with tl.enable_fast_math (--use_fast_math) expf is an FMUL by log2(e) and MUFU.EX2
    r = tileroof.analyze(K.fma_exp_fast, N=n, block=256)
    assert r.counts.inst == {"mem": n * 2 / 4, "fma": n * (1 + 1), "xu": n * 1}
    # the FLOPs do not depend on the build: one special-function result and one FMA an element
    assert r.sfu_ops == n and r.cuda_flops == 2 * n


def test_loop_invariant_subexpressions_issue_once_a_thread():
    # Y = X * exp(S[0]) on 4096 fp32 elements, blocks of 256 elements and 128 threads: each thread
    # runs 2 elements, and exp(S[0]) reads no T.Parallel variable, so the compiler computes it once
    # a thread: 4096 / 2 = 2048 expf (6 FMA + 1 ALU + 1 MUFU each, accurate), and 4096 FMULs.
    # Memory: X and Y 16-byte vectors (4096 / 4 each), S[0] one load an element (not hoisted).
    n = 4096
    r = tileroof.analyze(K.scale_by_exp, N=n, block=256)
    assert r.counts.inst == {"fma": n + n // 2 * 6, "alu": n // 2, "xu": n // 2, "mem": 2 * n // 4 + n}
    # FLOPs count the program as written: one exp and one multiply an element
    assert r.sfu_ops == n and r.cuda_flops == n


def test_reduce_row_threads_follow_the_fragment_layout():
    def rec(ext, dim, buf="x"):
        return OpRecord("reduce", "r", 1, np.ones(1),
                        (Operand(buf, "fragment", "float32", "read", ext, 0),
                         Operand("y", "fragment", "float32", "write", (ext[1 - dim],), 0)),
                        {"reduce": "max", "dim": dim})
    # a row of 128 fp32 = 32 vectors of 16 bytes over 32 neighbouring lanes
    assert counts.reduce_row_threads(rec((64, 128), 1), 128, frozenset()) == (32, 1)
    # a column: the 128 threads cover 32 vectors of a row, the 4 left over 4 rows, 32 lanes apart
    assert counts.reduce_row_threads(rec((64, 128), 0), 128, frozenset()) == (4, 32)
    # rows of 8192 over 256 threads: every thread of the block shares each row
    assert counts.reduce_row_threads(rec((2, 8192), 1), 256, frozenset()) == (256, 1)
    # a gemm accumulator: a quad holds a row
    assert counts.reduce_row_threads(rec((64, 128), 1), 128, frozenset({"x"})) == (4, 1)


def test_issue_bounds_need_the_device_figures():
    r = tileroof.analyze(K.row_onehot_max, M=262144, N=128, bm=64, threads=128)
    h200 = devices.load("h200")
    assert h200.issue_rate == 4 * 132 * h200.clock_hz          # four schedulers per SM, one each a clock
    t = model.simt_issue_times(r.counts, h200)
    # ALU results at 64 per clock per SM
    assert np.isclose(t["alu"], r.counts.inst["alu"] / (64 * 132 * h200.clock_hz))
    assert np.isclose(t["shuffle"], r.counts.inst["shfl"] / (32 * 132 * h200.clock_hz))
    assert set(t) <= set(r.timing.resource_s)
    # a catalog device without the per-clock figures times none of them
    assert model.simt_issue_times(r.counts, devices.load("l40s", calibrated=False)) == {}


def test_upstream_topk_is_alu_bound():
    from tileroof.corpus import CASES
    case = CASES["up_topk_fp32_m262144_n128_k6"]
    r = tileroof.analyze(case.kernel, **case.params)
    # six rounds of two row max-reductions and two compare/selects per element, 64 elements a
    # thread: the integer/compare pipe, not DRAM (134 MB read), sets the time
    # (session 18: the launch's bound is its block chain -- the first wave's phases in lock-step, then
    # the rest at the roofline -- whose phases are these compare/select rounds)
    roofline = {k: v for k, v in r.timing.resource_s.items() if k != "block chain"}
    assert max(roofline, key=roofline.get) == "alu"
    assert r.timing.resource_s["alu"] > r.timing.resource_s["dram"]
    assert r.bound == "block chain" and r.timing.resource_s["block chain"] > r.timing.resource_s["alu"]
    # Nsight Compute on the H200 (measure-20261201T152843Z.json): 66.06 M warp instructions
    assert abs(r.warp_instructions / 66.06e6 - 1) < 0.1

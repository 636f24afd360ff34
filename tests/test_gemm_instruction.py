"""Which tensor-core instruction a T.gemm lowers to (counts.gemm_instruction), against the rule read
in TileLang 0.1.15's Gemm::GetGemmInst / CheckWGMMA and against TileLang's own lowering to CUDA
(which runs on a CPU), and the rate a gemm lowered to mma.sync is timed at."""
import re

import numpy as np
import pytest

import tileroof
from tileroof import counts, devices
from tileroof.corpus import CASES
from tileroof.trace import Operand, OpRecord


def _gemm(a="float16", c="float32", m=128, n=128, k=32, threads=128, trans_a=False, trans_b=False,
          b_scope="shared", kind="gemm"):
    attrs = {"m": m, "n": n, "k": k, "trans_a": trans_a, "trans_b": trans_b, "policy": 0, "a_dtype": a,
             "b_dtype": a, "c_dtype": c, "a_scope": "shared", "b_scope": b_scope, "threads": threads}
    return OpRecord(kind, "g", 1, np.ones(1), (), attrs)


@pytest.mark.parametrize("rec, want", [
    (_gemm(), "wgmma"),                                           # fp16 x fp16 -> fp32, any major
    (_gemm(c="float16"), "wgmma"),
    (_gemm(a="bfloat16"), "wgmma"),
    (_gemm(a="bfloat16", c="float16"), "mma"),                    # bf16 needs an fp32 accumulator
    (_gemm(threads=64), "mma"),                                   # two warps: no warpgroup
    (_gemm(threads=96), "mma"),
    (_gemm(threads=256), "wgmma"),
    (_gemm(m=32), "mma"),                                         # M below 64
    (_gemm(k=40), "mma"),                                         # K not a multiple of 16
    (_gemm(b_scope="fragment"), "mma"),                           # B in registers
    (_gemm(a="float32", trans_b=True), "mma"),                    # float32 buffers are not tf32
    (_gemm(a="int8", c="int32", k=64, trans_b=True), "wgmma"),   # 8-bit: both operands K-major
    (_gemm(a="int8", c="int32", k=64), "mma"),
    (_gemm(a="int8", c="int32", k=64, trans_a=True, trans_b=True), "mma"),
    (_gemm(a="int8", c="int32", k=16, trans_b=True), "mma"),     # K not a multiple of 32
    (_gemm(a="float8_e4m3fn", c="float32", k=64, trans_b=True), "wgmma"),
    (_gemm(a="float8_e5m2", c="float16", k=64, trans_b=True), "wgmma"),
    (_gemm(a="float8_e4m3fn", c="float32", k=64), "mma"),
    (_gemm(kind="gemm_sp", a="int8", c="int32"), "wgmma"),       # a sparse gemm keeps the native one
])
def test_rule(rec, want):
    assert counts.gemm_instruction(rec, "wgmma") == want


def test_native_mma_and_disable_wgmma():
    assert counts.gemm_instruction(_gemm(), "mma") == "mma"
    assert counts.gemm_instruction(_gemm(), "wgmma", (("tl.disable_wgmma", True),)) == "mma"
    assert counts.gemm_instruction(_gemm(), "wgmma", (("tl.disable_wgmma", False),)) == "wgmma"
    assert counts.gemm_instruction(OpRecord("copy", "c", 1, np.ones(1)), "wgmma") == ""


# one case per path: lowered by TileLang for sm_90a (a few seconds each on a CPU)
@pytest.mark.parametrize("name", ["gemm_nn_fp16_4096", "gemm_nt_fp8e4m3_4096", "sweep_gemmtf32_bm128_bn128_bk32_s3_t128_sw1",
                                  "sweep_gemmint8_bm128_bn128_bk128_s3_t128_sw1",
                                  "probe_mma_fp16_nowgmma_bm128_bn128_bk32_s3_t128",
                                  "probe_mma_int8_nn_bm128_bn256_bk64_s3_t256"])
def test_rule_matches_tilelangs_lowering(name):
    import tilelang
    from tilelang import tvm

    case = CASES[name]
    target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
    configs = dict(getattr(case.kernel, "pass_configs", None) or {})
    with tvm.transform.PassContext(opt_level=3, config=configs), target:
        src = tilelang.lower(case.kernel.get_tir(**case.params), target=target).kernel_source
    lowered = "wgmma" if "wgmma" in src else "mma" if "mma_sync" in src else "?"
    r = tileroof.analyze(case.kernel, device="h200", **case.params)
    assert {oc.instruction for oc in r.counts.ops if oc.instruction} == {lowered}
    # the operands TileLang loads element by element (no ldmatrix) are those counts.scalar_operands
    # names: `X_local[..] = ((T*)X_shared)[..]` in the lowered source
    element_loaded = {x for x in "AB" if re.search(rf"{x}_local\[[^\]]*\] = \(\([^)]*\*\){x}_shared\)\[", src)}
    from tileroof.ir import trace as walk
    gemm = next(rec for rec in walk(case.kernel, case.params, None).ops if rec.kind == "gemm")
    want = {("A" if op is gemm.operands[0] else "B") for op, _ in counts.scalar_operands(gemm)} if lowered == "mma" else set()
    assert element_loaded == want


@pytest.mark.parametrize("bits, row_bytes, want", [
    (8, 256, 2),     # int8 B (64 x 256): rows k, k+4, k+8, k+12 of one 128-byte atom column; XOR 0,4,0,4
    (8, 128, 2),
    (8, 64, 2),      # 64-byte rows, two to a 128-byte line: chunk XOR (row / 2) mod 4 = 0,2,0,2 (run 163)
    (32, 1024, 2),   # tf32 B (32 x 256): rows k..k+3, two 16-byte chunks each; XOR pairs them up
    (32, 64, 2),     # rows k, k+1 share a line and k+2, k+3 the next, their chunks XOR 1: banks repeat
    (32, 32, 1),     # four 32-byte rows fill one line: all 32 banks once
])
def test_scalar_load_wavefronts(bits, row_bytes, want):
    assert counts.scalar_load_wavefronts(bits, row_bytes) == want


@pytest.mark.parametrize("name, gpu", [("probe_mma_int8_nn_bm128_bn256_bk64_s3_t256", "h100"),
                                       ("probe_mma_int8_nn_bm128_bn64_bk64_s3_t128", "h100"),
                                       ("probe_mma_int8_nn_bm128_bn128_bk64_s3_t128", "h100"),
                                       ("probe_mma_tf32_nn_bm128_bn64_bk32_s3_t128", "h100"),
                                       ("probe_mma_fp8_nn_bm128_bn256_bk64_s3_t256", "h200"),
                                       ("probe_mma_tf32_nn_bm128_bn256_bk32_s3_t256", "h200"),
                                       ("probe_mma_fp16_nowgmma_bm128_bn256_bk32_s3_t256", "h200")])
def test_operand_wavefronts_match_nsight(name, gpu):
    """The mma.sync gemm's shared-pipe wavefronts (ldmatrix, element loads and their bank replays)
    against Nsight Compute's l1tex__data_pipe_lsu_wavefronts_mem_shared in the recorded runs (the
    TMA producer's writes into shared memory are not LSU wavefronts)."""
    import json
    from pathlib import Path

    from tileroof.model import shared_pipe_bytes
    root = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / gpu
    rec = next(json.load(open(p))["cases"][name] for p in sorted(root.glob("measure-2026120[78]T*.json"))
               if name in json.load(open(p))["cases"])
    measured = rec["ncu"]["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
    case = CASES[name]
    r = tileroof.analyze(case.kernel, device="h200" if gpu == "h200" else "h100_sxm", **case.params)
    model = sum(shared_pipe_bytes(oc) for oc in r.counts.ops if oc.instruction == "mma") / 128
    assert model == pytest.approx(measured, rel=0.02)


def test_mma_gemm_is_timed_at_the_measured_share():
    dev = devices.load("h200")
    case = CASES["sweep_gemmtf32_bm128_bn256_bk32_s3_t256_sw1"]
    r = tileroof.analyze(case.kernel, device=dev, **case.params)
    # the float32 gemm's FLOPs are keyed as an mma.sync gemm's, and that key is timed at the
    # catalog's measured share of the tf32 rate
    assert {d for (u, d) in r.counts.flops if u == counts.TENSOR} == {"fp32" + counts.MMA_SUFFIX}
    assert dev.tensor_rate("fp32" + counts.MMA_SUFFIX) == pytest.approx(dev.tensor_rate("fp32") * dev.mma_share["tf32"])
    assert dev.tensor_flops_per_clk("fp16" + counts.MMA_SUFFIX) == pytest.approx(4096 * dev.mma_share["fp16"])
    # a dtype with no measured share takes the lowest measured one
    assert "fp4" not in dev.mma_share and dev.mma_rate_share("fp4") == min(dev.mma_share.values())
    # on a GPU whose native instruction is mma the same gemm keeps the plain key
    a100 = tileroof.analyze(case.kernel, device="a100_80gb", **case.params)
    assert {d for (u, d) in a100.counts.flops if u == counts.TENSOR} == {"fp32"}
    assert any("mma.sync" in a for a in r.timing.assumptions)


def test_a_rate_measured_on_an_mma_sync_library_kernel():
    """A profile's tensor rate whose library GEMM ran mma.sync (`instruction = "mma.sync"`, read by
    tileroof.gpu.cublas_instr) is mma.sync's rate: the wgmma rate is it over the measured share, and
    a gemm lowered to mma.sync runs at the measured rate itself."""
    base = devices.load("h200", calibrated=False)
    share = base.mma_share["int8"]
    prof = {"measured": {"tensor_tops_int8": {"value": 800.0, "instruction": "mma.sync", "method": "m"},
                         "tensor_tflops_fp8": {"value": 1200.0, "method": "m"}}}
    dev = devices.apply_profile(base, prof, "test")
    assert dev.tensor_rate("int8") == pytest.approx(800e12 / share)
    assert dev.tensor_rate("int8" + counts.MMA_SUFFIX) == pytest.approx(800e12)
    assert dev.tensor_rate("fp8") == pytest.approx(1200e12)          # a wgmma measurement stays as it is
    assert "mma.sync library kernel" in dev.sources["tensor_peak.int8"]


def test_element_loaded_operands_bound_the_loop_on_the_shared_pipe():
    """The int8 NN probe's iteration is its shared-pipe wavefronts (its IMMA pipe 31 % busy, the shared
    pipe ~91 %: run 162), within 10 % of its recorded H200 time; the fp16 ldmatrix probe stays
    tensor-bound."""
    import json
    from pathlib import Path
    root = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "h200"
    rec = json.load(open(root / "measure-20261207T175600Z.json"))["cases"]
    for name, bound in (("probe_mma_int8_nn_bm128_bn256_bk64_s3_t256", "shared"),
                        ("probe_mma_fp16_nowgmma_bm128_bn256_bk32_s3_t256", "compute")):
        case = CASES[name]
        r = tileroof.analyze(case.kernel, device="h200", **case.params)
        assert r.to_dict()["pipeline"]["iteration_bound"] == bound
        assert r.estimated_time == pytest.approx(rec[name]["time"]["median_s"], rel=0.10)

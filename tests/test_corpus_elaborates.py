"""The kernel corpus elaborates on a CPU-only machine, and its input makers and references agree
with the kernels' signatures.

  * every case's kernel.get_tir(**params) elaborates (timed; a few ms each);
  * case / sweep bookkeeping (>= 26 non-sweep cases, sweep sizes, unique names);
  * Expected counts are Python ints (or None) and non-negative;
  * with a tiny copy of each case's params, make_inputs on CPU gives one tensor per kernel
    argument with the PrimFunc's shape and dtype, and reference(args) returns finite tensors of
    the output arguments' shapes;
  * opt-in (TILEROOF_CORPUS_LOWER=1, needs nvcc): every case lowers for sm_90a through
    TileLang's full pass pipeline and nvcc (no GPU needed, ~1-2 s per case).

Run:  /work/venv/bin/python -m pytest tests/test_corpus_elaborates.py -s
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import time

import pytest

from tileroof.corpus import CASES, SWEEPS, Expected
from tileroof.corpus import attention, conv, elementwise, extra, gemm, gemv, misc, norm, reduce, upstream
from tileroof.corpus import up_attn, up_conv_fp8, up_dequant, up_gemm_variants, up_mla, up_simple, up_blind2

# --------------------------------------------------------------------------- tiny params
# Per kernel, overrides that shrink the problem (keeping it tile-divisible where the case is)
# so make_inputs / reference run in milliseconds on CPU.
_TINY = [
    (gemm.matmul, lambda p: dict(M=200, N=200, K=200) if p["M"] % p["block_M"]
     else dict(M=256, N=256, K=256)),
    (gemm.matmul_nowgmma, lambda p: dict(M=256, N=256, K=256)),
    (gemm.matmul_bias_relu, lambda p: dict(M=256, N=256, K=256)),
    (gemm.bmm, lambda p: dict(batch=2, M=128, N=128, K=128)),
    (gemm.matmul_splitk, lambda p: dict(M=128, N=128, K=512)),
    (attention.flash_attn_fwd, lambda p: dict(batch=1, heads=2, seq_len=256)),
    (attention.gqa_decode, lambda p: dict(batch=2, heads=16, kv_heads=2, seqlen_kv=256)),
    (conv.conv2d_im2col, lambda p: dict(N=2, H=8 + 2 * (p["P"] == 0), W=8 + 2 * (p["P"] == 0),
                                        C=64, F=128)),
    (elementwise.elementwise_add, lambda p: dict(M=256, N=256)),
    (elementwise.elementwise_fma, lambda p: dict(M=256, N=256)),
    (elementwise.gelu_tanh, lambda p: dict(M=128, N=256)),
    (elementwise.silu_mul, lambda p: dict(M=128, N=256)),
    (elementwise.tile_copy, lambda p: dict(M=128, N=256)),
    (elementwise.scale_guarded, lambda p: dict(N=5000)),
    (norm.softmax, lambda p: dict(M=4, N=512)),
    (norm.rms_norm, lambda p: dict(M=4, N=512)),
    (norm.layer_norm, lambda p: dict(M=4, N=512)),
    (reduce.row_reduce, lambda p: dict(M=16, N=1024)),
    (reduce.col_sum, lambda p: dict(M=128, N=128)),
    (reduce.row_absmax, lambda p: dict(M=4, N=512)),
    (gemv.gemv_elem, lambda p: dict(M=32, K=512)),
    (gemv.gemv_tiled, lambda p: dict(M=32, K=512)),
    (misc.row_cumsum, lambda p: dict(M=16, N=128)),
    (misc.histogram, lambda p: dict(N=4096, bins=16)),
    (misc.col_max_atomic, lambda p: dict(M=128, N=256)),
    (misc.transpose_op, lambda p: dict(M=128, N=128)),
    (misc.transpose_swap, lambda p: dict(M=128, N=128)),
    (extra.elementwise_mul, lambda p: dict(M=128, N=256)),
    (extra.transpose_simt, lambda p: dict(M=64, N=96)),
    (extra.rope, lambda p: dict(batch=1, seq_len=64, heads=2)),
    (extra.add_rms_norm, lambda p: dict(M=4, N=512)),
    (extra.quant_fp8_rowwise, lambda p: dict(M=4, N=512)),
    (extra.masked_gemm, lambda p: dict(M=256, N=256, K=512)),
    (extra.gemm_exp_prologue, lambda p: dict(M=256, N=256, K=256)),
    *upstream.TINY,
    *up_attn.TINY,
    *up_mla.TINY,
    *up_conv_fp8.TINY,
    *up_gemm_variants.TINY,
    *up_blind2.TINY,
    (up_dequant.dequant_gemm_fp4_fp16, lambda p: dict(M=256, N=256, K=256)),
    (up_dequant.dequant_gemm_fp4_bf16, lambda p: dict(M=256, N=256, K=256)),
    (up_dequant.dequant_gemm_int4_group_scale, lambda p: dict(M=256, N=256, K=256)),
    (up_simple.up_elementwise_add, lambda p: dict(M=128, N=128)),
    (up_simple.up_rms_norm, lambda p: dict(M=4, N=512)),
    (up_simple.up_per_token_cast_to_fp8, lambda p: dict(M=16, N=512)),
]


def _tiny_params(case):
    for kern, fn in _TINY:
        if case.kernel is kern:
            return {**case.params, **fn(case.params)}
    raise AssertionError(f"no tiny-params rule for the kernel of {case.name}")


# one representative case per distinct kernel (plus every non-sweep case)
_SAMPLE = [c for c in CASES.values() if c.sweep is None]
_SAMPLE += [CASES[names[0]] for names in SWEEPS.values()]


# --------------------------------------------------------------------------- tests
def test_bookkeeping():
    non_sweep = [c for c in CASES.values() if c.sweep is None]
    print(f"\ncorpus: {len(CASES)} cases, {len(non_sweep)} non-sweep; sweeps: "
          + ", ".join(f"{k}={len(v)}" for k, v in SWEEPS.items()))
    assert len(non_sweep) >= 26
    assert len(SWEEPS["gemm_8192"]) >= 12
    assert len(SWEEPS["gemm_skinny"]) >= 10
    assert len(SWEEPS["fa_fwd"]) >= 10
    for sweep, names in SWEEPS.items():
        assert len(set(names)) == len(names)
        for n in names:
            assert CASES[n].sweep == sweep
    swept = {n for names in SWEEPS.values() for n in names}
    for c in CASES.values():
        assert (c.sweep is not None) == (c.name in swept), c.name
        assert c.name == c.name.strip() and " " not in c.name
        assert c.rtol >= 0


def test_expected_are_ints():
    for c in CASES.values():
        assert isinstance(c.expected, Expected)
        for f in dataclasses.fields(Expected):
            v = getattr(c.expected, f.name)
            assert v is None or (type(v) is int and v >= 0), (c.name, f.name, v)
        # every case asserts at least its memory traffic
        assert c.expected.global_read_bytes is not None, c.name
        assert c.expected.unique_bytes is not None, c.name


def test_all_cases_elaborate():
    failures, t0 = [], time.perf_counter()
    for c in CASES.values():
        try:
            c.kernel.get_tir(**c.params)
        except Exception as e:  # collect every failure, report them together
            failures.append(f"{c.name}: {type(e).__name__}: {e}")
    dt = time.perf_counter() - t0
    print(f"\nelaborated {len(CASES)} cases in {dt:.2f} s")
    assert not failures, "\n".join(failures)


def _prim_func_signature(func):
    sig = []
    for v in func.params:
        buf = func.buffer_map.get(v)
        # a scalar argument (an int32 offset) is passed as a Python int: shape None
        sig.append((None, str(v.dtype)) if buf is None else (tuple(int(s) for s in buf.shape), str(buf.dtype)))
    return sig


_TORCH_NAME = {
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e5m2": "float8_e5m2", "int32": "int32",
    "int8": "int8", "uint8": "uint8", "bool": "bool",
}


@pytest.mark.parametrize("name", [c.name for c in _SAMPLE])
def test_tiny_inputs_match_signature_and_reference_runs(name):
    torch = pytest.importorskip("torch")
    case = CASES[name]
    tiny = _tiny_params(case)
    func = case.kernel.get_tir(**tiny)
    sig = _prim_func_signature(func)
    args = case.make_inputs(tiny, "cpu")
    assert len(args) == len(sig), f"{name}: {len(args)} inputs for {len(sig)} kernel arguments"
    for i, (a, (shape, dtype)) in enumerate(zip(args, sig)):
        if shape is None:
            assert type(a) is int and dtype.startswith("int"), (name, i, a, dtype)
            continue
        assert isinstance(a, torch.Tensor), (name, i)
        assert tuple(a.shape) == shape, (name, i, tuple(a.shape), shape)
        assert str(a.dtype) == "torch." + _TORCH_NAME[dtype], (name, i, a.dtype, dtype)
        assert a.is_contiguous(), (name, i)
    ref = case.reference(args)
    assert isinstance(ref, dict) and ref, name
    for idx, t in ref.items():
        assert 0 <= idx < len(args), (name, idx)
        assert tuple(t.shape) == tuple(args[idx].shape), (name, idx, tuple(t.shape))
        assert bool(torch.isfinite(t.double()).all()), (name, idx)
    # outputs that are not accumulated into start as NaN / sentinel so unwritten elements show
    for idx in ref:
        a = args[idx]
        if a.dtype.is_floating_point and "atomic" not in case.tags and "split-k" not in case.tags:
            assert bool(torch.isnan(a.float()).all()), (name, idx)


@pytest.mark.skipif(os.environ.get("TILEROOF_CORPUS_LOWER") != "1" or not shutil.which("nvcc"),
                    reason="set TILEROOF_CORPUS_LOWER=1 (needs nvcc) to lower every case")
def test_all_cases_lower_for_sm90():
    import tilelang
    from tvm.target import Target

    target = Target({"kind": "cuda", "arch": "sm_90a"})
    failures, t0 = [], time.perf_counter()
    for c in CASES.values():
        try:
            func = c.kernel.get_tir(**c.params)
            with target:
                tilelang.lower(func, target=target, enable_device_compile=True)
        except Exception as e:
            failures.append(f"{c.name}: {type(e).__name__}: {str(e)[-800:]}")
    print(f"\nlowered + nvcc-compiled {len(CASES)} cases in {time.perf_counter() - t0:.1f} s")
    assert not failures, "\n".join(failures)


if __name__ == "__main__":
    test_bookkeeping()
    test_all_cases_elaborate()

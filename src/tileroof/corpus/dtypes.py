"""Tensor-core dtypes the rest of the corpus lacks: TileLang GEMMs on float32 inputs (tf32 tensor
cores) and on int8 inputs (int32 accumulate), written in session 35 and never fitted on (a LATE
family).

The kernel is gemm.matmul (one bm x bn output tile a block, a T.Pipelined loop of two T.copy and
one T.gemm), with B stored (N, K): Hopper's tf32 and int8 wgmma read both operands K-major from
shared memory, as its fp8 wgmma does (gemm_nt_fp8e4m3_4096).  The profile's tf32 / int8 rates
were measured on cuBLAS (torch.matmul with allow_tf32, torch._int_mm), not on a TileLang kernel:
these sweeps check the model's per-dtype tensor rate and its pipelined iteration at another
operand width (a block_K of bytes, not elements, sets the copy) against TileLang's own code.

Counts: as gemm.py's plain GEMMs (_matmul_expected): 2*(gm*bm)*(gn*bn)*(gk*bk) tensor FLOPs
(int8: integer ops, counted the same), A read gn times, B gm times, C written once.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

from .case import Case
from .gemm import _matmul_expected, _matmul_ref_nn, _matmul_ref_nt, matmul, matmul_nowgmma
from ._util import generator, nan_out, randn

# (block_M, block_N, block_K, num_stages, threads, swizzle); block_K in elements
_TF32_CONFIGS = [
    (128, 256, 32, 3, 256, True),
    (128, 128, 32, 3, 128, True),
    (128, 128, 32, 4, 256, True),
    (64, 256, 32, 3, 128, True),
    (128, 128, 16, 4, 128, False),
    (64, 128, 32, 4, 128, True),
]
_INT8_CONFIGS = [
    (128, 256, 128, 3, 256, True),
    (128, 128, 128, 3, 128, True),
    (128, 128, 64, 4, 256, True),
    (64, 256, 128, 3, 128, True),
    (128, 128, 64, 3, 128, False),
    (64, 128, 128, 4, 128, True),
]
_SWEEPS = {
    # name: (kernel dtype triple, configs, M, N, K, rtol)
    "gemm_tf32": (("float32", "float32", "float32"), _TF32_CONFIGS, 8192, 8192, 4096, 2e-2),
    "gemm_int8": (("int8", "int32", "int32"), _INT8_CONFIGS, 8192, 8192, 8192, 1e-5),
}
_PREFIX = {"gemm_tf32": "gemmtf32", "gemm_int8": "gemmint8"}


def _dtype_inputs(p, device):
    """A (M, K) and B (N, K) (or (K, N) where not trans_B) of p's in_dtype; int8 operands are small integers (normal x 3,
    truncated: |x| <= 12 or so), so that every int32 sum, and the float32 reference of it, is exact."""
    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    dt = p["in_dtype"]
    scale = 3.0 if dt == "int8" else 1.0
    b_shape = (N, K) if p["trans_B"] else (K, N)
    return [randn((M, K), dt, device, g, scale=scale), randn(b_shape, dt, device, g, scale=scale),
            nan_out((M, N), p["out_dtype"], device)]


def _params(M, N, K, cfg, dts, trans_B=True):
    bm, bn, bk, s, t, sw = cfg
    return dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=t,
                in_dtype=dts[0], out_dtype=dts[1], accum_dtype=dts[2], trans_B=trans_B, swizzle=sw)


def _name(prefix, cfg):
    bm, bn, bk, s, t, sw = cfg
    return f"sweep_{prefix}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}_sw{int(sw)}"


# probes of mma.sync on a wgmma GPU: (name, kernel, dtype triple, trans_B, config, rtol); 8192 x
# 8192 x 4096.  TileLang lowers a T.gemm to wgmma only for the dtype / transpose combinations its
# CheckWGMMA accepts (counts.gemm_instruction), so int8, fp8 and float32 with B stored (K, N) fall
# back to mma.sync, as does any gemm under tl.disable_wgmma
_MMA_PROBES = [
    ("probe_mma_fp16_nowgmma", matmul_nowgmma, ("float16", "float16", "float32"), True, (128, 256, 32, 3, 256, True), 1e-2),
    ("probe_mma_fp16_nowgmma", matmul_nowgmma, ("float16", "float16", "float32"), True, (128, 128, 32, 3, 128, True), 1e-2),
    ("probe_mma_bf16_nowgmma", matmul_nowgmma, ("bfloat16", "bfloat16", "float32"), True, (128, 256, 32, 3, 256, True), 1e-2),
    ("probe_mma_int8_nn", matmul, ("int8", "int32", "int32"), False, (128, 256, 64, 3, 256, True), 1e-5),
    ("probe_mma_fp8_nn", matmul, ("float8_e4m3fn", "float16", "float32"), False, (128, 256, 64, 3, 256, True), 5e-2),
    ("probe_mma_tf32_nn", matmul, ("float32", "float32", "float32"), False, (128, 256, 32, 3, 256, True), 2e-2),
    # session 36, predicted before they ran: the element-wise operand loads' bank model at other
    # row widths (64-byte int8 rows: a half-bank swizzle atom, 4 wavefronts an instruction in the
    # model; 128-byte int8 and 256-byte float32 rows: 2)
    ("probe_mma_int8_nn", matmul, ("int8", "int32", "int32"), False, (128, 64, 64, 3, 128, True), 1e-5),
    ("probe_mma_int8_nn", matmul, ("int8", "int32", "int32"), False, (128, 128, 64, 3, 128, True), 1e-5),
    ("probe_mma_tf32_nn", matmul, ("float32", "float32", "float32"), False, (128, 64, 32, 3, 128, True), 2e-2),
]


def probe_cases() -> list[Case]:
    out = []
    for prefix, kernel, dts, trans_B, cfg, rtol in _MMA_PROBES:
        p = _params(8192, 8192, 4096, cfg, dts, trans_B)
        bm, bn, bk, s, t, sw = cfg
        out.append(Case(name=f"{prefix}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}", kernel=kernel, params=p,
                        make_inputs=_dtype_inputs, reference=_matmul_ref_nt if trans_B else _matmul_ref_nn,
                        expected=_matmul_expected(p), rtol=rtol, tags=("gemm", dts[0], "probe", "mma"),
                        note=f"{dts[0]} in, B stored {'(N, K)' if trans_B else '(K, N)'}, "
                             f"{'tl.disable_wgmma' if kernel is matmul_nowgmma else 'default passes'}: mma.sync"))
    return out


def cases() -> list[Case]:
    return []


def sweeps() -> tuple[list[Case], dict[str, list[str]]]:
    out, names = [], {}
    for sweep, (dts, configs, M, N, K, rtol) in _SWEEPS.items():
        names[sweep] = []
        for cfg in configs:
            p = _params(M, N, K, cfg, dts)
            name = _name(_PREFIX[sweep], cfg)
            out.append(Case(name=name, kernel=matmul, params=p, make_inputs=_dtype_inputs,
                            reference=_matmul_ref_nt, expected=_matmul_expected(p), rtol=rtol,
                            sweep=sweep, tags=("gemm", dts[0], "nt", "dtype"),
                            note=f"{dts[0]} in, {dts[2]} accumulate, {dts[1]} out; "
                                 f"M x N x K = {M} x {N} x {K}, B stored (N, K)"))
            names[sweep].append(name)
    return out, names

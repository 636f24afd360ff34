"""Convolution family: implicit-GEMM 2-D convolution (NHWC data, (KH, KW, C, F) weights) with
T.im2col feeding the A tile, as in TileLang's examples/convolution (Hopper path).

GEMM view: M = N*OH*OW output pixels, N_gemm = F filters, K_gemm = KH*KW*C. im2col column k
maps to tap (kh, kw) = (k // (KW*C), (k // C) % KW) and channel c = k % C, which matches the
row order of the weights flattened to (KH*KW*C, F).
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, randn


def _out_size(H, K, S, D, P):
    return (H + 2 * P - D * (K - 1) - 1) // S + 1


@tilelang.jit
def conv2d_im2col(N, C, H, W, F, K, S, D, P, block_M=128, block_N=128, block_K=64,
                  num_stages=3, threads=256, dtype="float16", accum_dtype="float32"):
    KH, KW = K, K
    OH = _out_size(H, K, S, D, P)
    OW = _out_size(W, K, S, D, P)

    @T.prim_func
    def main(
            data: T.Tensor((N, H, W, C), dtype),
            kernel: T.Tensor((KH, KW, C, F), dtype),
            out: T.Tensor((N, OH, OW, F), dtype),
    ):
        with T.Kernel(T.ceildiv(F, block_N), T.ceildiv(N * OH * OW, block_M),
                      threads=threads) as (bx, by):
            data_shared = T.alloc_shared((block_M, block_K), dtype)
            kernel_shared = T.alloc_shared((block_K, block_N), dtype)
            out_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            out_shared = T.alloc_shared((block_M, block_N), dtype)

            kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), dtype, out.data)

            T.clear(out_local)
            for k_iter in T.Pipelined(T.ceildiv(KH * KW * C, block_K), num_stages=num_stages):
                T.im2col(data, data_shared, by, k_iter, KH, S, D, P)
                T.copy(kernel_flat[k_iter * block_K, bx * block_N], kernel_shared)
                T.gemm(data_shared, kernel_shared, out_local)
            T.copy(out_local, out_shared)
            T.copy(out_shared, out_flat[by * block_M, bx * block_N])

    return main


def _conv_inputs(p, device):
    g = generator(device, 0)
    N, C, H, W, F, K = p["N"], p["C"], p["H"], p["W"], p["F"], p["K"]
    OH = _out_size(H, K, p["S"], p["D"], p["P"])
    OW = _out_size(W, K, p["S"], p["D"], p["P"])
    dt = p.get("dtype", "float16")
    return [randn((N, H, W, C), dt, device, g), randn((K, K, C, F), dt, device, g, scale=0.1),
            nan_out((N, OH, OW, F), dt, device)]


def _conv_ref_for(p):
    S, D, P = p["S"], p["D"], p["P"]

    def ref(args):
        import torch

        x = args[0].float().permute(0, 3, 1, 2)      # N H W C -> N C H W
        w = args[1].float().permute(3, 2, 0, 1)      # KH KW C F -> F C KH KW
        y = torch.nn.functional.conv2d(x, w, stride=S, padding=P, dilation=D)
        return {2: y.permute(0, 2, 3, 1)}            # N F OH OW -> N OH OW F

    return ref


def _taps_in_bounds(H, OH, K, S, D, P):
    """sum over taps kh of #{oh in [0, OH) : 0 <= oh*S + kh*D - P < H}"""
    return sum(sum(1 for oh in range(OH) if 0 <= oh * S + kh * D - P < H) for kh in range(K))


def _conv_expected(p) -> Expected:
    N, C, H, W, F, K, S, D, P = (p[k] for k in ("N", "C", "H", "W", "F", "K", "S", "D", "P"))
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    OH, OW = _out_size(H, K, S, D, P), _out_size(W, K, S, D, P)
    M, Kg = N * OH * OW, K * K * C
    gm, gn, gk = cdiv(M, bm), cdiv(F, bn), cdiv(Kg, bk)
    # T.im2col reads, over all (m, k) of the col matrix, the elements whose input pixel is
    # inside the image (padding is not read). Since bk divides C, each k tile has one tap
    # (kh, kw); the in-image (m, k) pairs factor into
    #   N * C * (sum_kh #valid oh) * (sum_kw #valid ow)
    # (for S=1, D=1, P=1, K=3: sum_kh #valid oh = 3*H - 2). Every block column bx (gn of
    # them) runs the im2col for all of M and K.
    col_reads = N * C * _taps_in_bounds(H, OH, K, S, D, P) * _taps_in_bounds(W, OW, K, S, D, P)
    return Expected(
        # gm*gn blocks x gk iterations x one bm*bn*bk gemm
        tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk),
        # im2col patches per block column + the (Kg x F) weights once per block row
        global_read_bytes=(gn * col_reads + gm * Kg * F) * 2,
        global_write_bytes=M * F * 2,
        global_atomic_bytes=0,
        # with S=1 every input pixel is in some window: data, weights, output all touched
        unique_bytes=(N * H * W * C + Kg * F + M * F) * 2,
    )


def _conv_case(name, p, note=""):
    return Case(name=name, kernel=conv2d_im2col, params=p, make_inputs=_conv_inputs,
                reference=_conv_ref_for(p), expected=_conv_expected(p), rtol=1e-2,
                tags=("conv", "float16", "im2col"), note=note)


def cases() -> list[Case]:
    base = dict(N=16, C=256, H=64, W=64, F=256, K=3, S=1, D=1, block_M=128, block_N=128,
                block_K=64, num_stages=3, threads=256, dtype="float16", accum_dtype="float32")
    return [
        _conv_case("conv2d_im2col_fp16_n16_64x64_c256_f256_k3_p1", dict(base, P=1),
                   note="same-padding 3x3: the im2col tile skips the 1-pixel zero border"),
        _conv_case("conv2d_im2col_fp16_n16_66x66_c256_f256_k3_p0", dict(base, H=66, W=66, P=0),
                   note="valid 3x3 on a 66x66 image (64x64 output): every col element is read"),
    ]

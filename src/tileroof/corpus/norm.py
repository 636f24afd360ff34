"""Row-wise normalisations: softmax, RMSNorm, LayerNorm. Each block owns block_M whole rows,
loads them with one T.copy into a float32 fragment (the copy converts), reduces with
T.reduce_max / T.reduce_sum along dim 1, and writes the rows back with one T.copy.
Per-column parameters (weight, bias) are copied once per block into shared memory.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn

LOG2E = 1.44269504


@tilelang.jit
def softmax(M, N, block_M=1, threads=256, dtype="float16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            row_max = T.alloc_fragment((block_M,), "float32")
            row_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp2(x[i, j] * LOG2E - row_max[i] * LOG2E)
            T.reduce_sum(x, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return main


@tilelang.jit
def rms_norm(M, N, block_M=2, threads=256, eps=1e-6, dtype="float16"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Wt: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            w_shared = T.alloc_shared((N,), dtype)
            x = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            rstd = T.alloc_fragment((block_M,), "float32")
            T.copy(Wt, w_shared)
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, rstd, dim=1)
            for i in T.Parallel(block_M):
                rstd[i] = T.rsqrt(rstd[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * rstd[i] * w_shared[j]
            T.copy(x, Y[bx * block_M, 0])

    return main


@tilelang.jit
def layer_norm(M, N, block_M=2, threads=256, eps=1e-5, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Gamma: T.Tensor((N,), dtype),
             Beta: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            g_shared = T.alloc_shared((N,), dtype)
            b_shared = T.alloc_shared((N,), dtype)
            x = T.alloc_fragment((block_M, N), "float32")
            d2 = T.alloc_fragment((block_M, N), "float32")
            mean = T.alloc_fragment((block_M,), "float32")
            rstd = T.alloc_fragment((block_M,), "float32")
            T.copy(Gamma, g_shared)
            T.copy(Beta, b_shared)
            T.copy(X[bx * block_M, 0], x)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                d2[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(d2, rstd, dim=1)
            for i in T.Parallel(block_M):
                rstd[i] = T.rsqrt(rstd[i] / N + eps)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = (x[i, j] - mean[i]) * rstd[i] * g_shared[j] + b_shared[j]
            T.copy(x, Y[bx * block_M, 0])

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _softmax_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["M"], p["N"]), p["dtype"], device, g, scale=4.0),
            nan_out((p["M"], p["N"]), p["dtype"], device)]


def _softmax_ref(args):
    import torch

    return {1: torch.softmax(args[0].float(), dim=-1)}


def _rms_inputs(p, device):
    g = generator(device, 0)
    M, N, dt = p["M"], p["N"], p["dtype"]
    return [randn((M, N), dt, device, g), randn((N,), dt, device, g), nan_out((M, N), dt, device)]


def _rms_ref_for(eps):
    def ref(args):
        x, w = args[0].float(), args[1].float()
        return {2: x * (x.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w}

    return ref


def _ln_inputs(p, device):
    g = generator(device, 0)
    M, N, dt = p["M"], p["N"], p["dtype"]
    return [randn((M, N), dt, device, g, scale=2.0, offset=0.5), randn((N,), dt, device, g),
            randn((N,), dt, device, g), nan_out((M, N), dt, device)]


def _ln_ref_for(eps):
    def ref(args):
        import torch

        x = args[0].double()
        y = torch.nn.functional.layer_norm(x, (x.shape[-1],), args[1].double(), args[2].double(),
                                           eps)
        return {3: y}

    return ref


# ----------------------------------------------------------------------------- cases
def cases() -> list[Case]:
    out = []
    p = dict(M=8192, N=8192, block_M=1, threads=256, dtype="float16")
    M, N, bm = p["M"], p["N"], p["block_M"]
    out.append(Case(
        "softmax_fp16_8192x8192", softmax, p, _softmax_inputs, _softmax_ref,
        Expected(
            # every row read once and written once by the block that owns it
            global_read_bytes=M * N * 2, global_write_bytes=M * N * 2, global_atomic_bytes=0,
            tensor_flops=0,
            # one exp2 per element
            sfu_ops=cdiv(M, bm) * bm * N,
            unique_bytes=2 * M * N * 2),
        rtol=2e-3, tags=("softmax", "float16", "reduce"),
        note="one 8192-wide row per block held in a float32 fragment; exp2 with log2(e) scale"))

    p = dict(M=16384, N=4096, block_M=2, threads=256, eps=1e-6, dtype="float16")
    M, N, bm = p["M"], p["N"], p["block_M"]
    out.append(Case(
        "rmsnorm_fp16_16384x4096", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]),
        Expected(
            # X once + the whole weight vector once per block (M/bm blocks)
            global_read_bytes=M * N * 2 + cdiv(M, bm) * N * 2,
            global_write_bytes=M * N * 2, global_atomic_bytes=0, tensor_flops=0,
            # one rsqrt per row
            sfu_ops=cdiv(M, bm) * bm,
            unique_bytes=(2 * M * N + N) * 2),
        rtol=2e-3, tags=("norm", "float16", "reduce")))

    p = dict(M=16384, N=4096, block_M=2, threads=256, eps=1e-5, dtype="float32")
    M, N, bm = p["M"], p["N"], p["block_M"]
    b = nbytes(p["dtype"])
    out.append(Case(
        "layernorm_fp32_16384x4096", layer_norm, p, _ln_inputs, _ln_ref_for(p["eps"]),
        Expected(
            # X once + gamma and beta once per block
            global_read_bytes=M * N * b + cdiv(M, bm) * 2 * N * b,
            global_write_bytes=M * N * b, global_atomic_bytes=0, tensor_flops=0,
            # one rsqrt per row
            sfu_ops=cdiv(M, bm) * bm,
            unique_bytes=(2 * M * N + 2 * N) * b),
        rtol=1e-4, tags=("norm", "float32", "reduce")))
    return out

"""Elementwise family: memory-bound kernels written as element loads/stores inside T.Parallel
(TileLang's examples/elementwise style), a tile copy through shared memory, and a 1-D kernel
whose size is not a multiple of the tile so every access sits behind an `if idx < N` guard.

Counting: in a T.Parallel(bm, bn) body every global load/store executes once per (i, j) of
every block, i.e. once per element of the (tile-divisible) M x N problem.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn

GELU_C = 0.7978845608028654  # sqrt(2/pi)


@tilelang.jit
def elementwise_add(M, N, block_M=128, block_N=256, threads=128, dtype="float32"):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = (A[by * block_M + i, bx * block_N + j] +
                                                         B[by * block_M + i, bx * block_N + j])

    return main


@tilelang.jit
def elementwise_fma(M, N, block_M=128, block_N=256, threads=128, dtype="float32"):
    """Y = X * W + Bv (all M x N): one FMA per element."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((M, N), dtype), Bv: T.Tensor((M, N), dtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                Y[by * block_M + i, bx * block_N + j] = (
                    X[by * block_M + i, bx * block_N + j] * W[by * block_M + i, bx * block_N + j]
                    + Bv[by * block_M + i, bx * block_N + j])

    return main


@tilelang.jit
def gelu_tanh(M, N, block_M=64, block_N=256, threads=256, dtype="float16"):
    """Y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), computed in float32. The tile is
    staged through a fragment so X is loaded once per element."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            x = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(X[by * block_M, bx * block_N], x)
            for i, j in T.Parallel(block_M, block_N):
                x[i, j] = 0.5 * x[i, j] * (
                    1.0 + T.tanh(GELU_C * (x[i, j] + 0.044715 * x[i, j] * x[i, j] * x[i, j])))
            T.copy(x, Y[by * block_M, bx * block_N])

    return main


@tilelang.jit
def silu_mul(M, N, block_M=64, block_N=256, threads=256, dtype="float16"):
    """SwiGLU gate: Y = silu(G) * U = G / (1 + exp(-G)) * U, computed in float32."""

    @T.prim_func
    def main(G: T.Tensor((M, N), dtype), U: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            g = T.alloc_fragment((block_M, block_N), "float32")
            u = T.alloc_fragment((block_M, block_N), "float32")
            T.copy(G[by * block_M, bx * block_N], g)
            T.copy(U[by * block_M, bx * block_N], u)
            for i, j in T.Parallel(block_M, block_N):
                g[i, j] = g[i, j] / (1.0 + T.exp(-g[i, j])) * u[i, j]
            T.copy(g, Y[by * block_M, bx * block_N])

    return main


@tilelang.jit
def scale_guarded(N, alpha=1.5, block=1024, threads=256, dtype="float32"):
    """1-D Y = alpha * X where N is not a multiple of the tile: the last block is partial and
    every access is behind `if idx < N`."""

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = X[bx * block + i] * alpha

    return main


@tilelang.jit
def tile_copy(M, N, block_M=64, block_N=256, threads=256, dtype="float16"):
    """B = A through shared memory with two T.copy's per tile."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            tile = T.alloc_shared((block_M, block_N), dtype)
            T.copy(A[by * block_M, bx * block_N], tile)
            T.copy(tile, B[by * block_M, bx * block_N])

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _inputs_2d(n_in):
    def make(p, device):
        g = generator(device, 0)
        M, N, dt = p["M"], p["N"], p["dtype"]
        return [randn((M, N), dt, device, g) for _ in range(n_in)] + [nan_out((M, N), dt, device)]

    return make


def _ref_add(args):
    return {2: args[0].float() + args[1].float()}


def _ref_fma(args):
    return {3: args[0].double() * args[1].double() + args[2].double()}


def _ref_gelu(args):
    import torch

    x = args[0].float()
    return {1: torch.nn.functional.gelu(x, approximate="tanh")}


def _ref_silu_mul(args):
    import torch

    return {2: torch.nn.functional.silu(args[0].float()) * args[1].float()}


def _ref_copy(args):
    return {1: args[0].float()}


def _scale_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["N"],), p["dtype"], device, g), nan_out((p["N"],), p["dtype"], device)]


def _scale_ref_for(alpha):
    def ref(args):
        return {1: args[0].double() * alpha}

    return ref


# ----------------------------------------------------------------------------- expected
def _ew_expected(p, n_in, flops_per_elem=None, sfu_per_elem=None) -> Expected:
    M, N = p["M"], p["N"]
    b = nbytes(p["dtype"])
    return Expected(
        # n_in loads and one store per element (T.Parallel element accesses or clipped-free
        # tile copies: the shapes are tile-divisible)
        global_read_bytes=n_in * M * N * b,
        global_write_bytes=M * N * b,
        global_atomic_bytes=0,
        tensor_flops=0,
        cuda_flops=None if flops_per_elem is None else flops_per_elem * M * N,
        sfu_ops=None if sfu_per_elem is None else sfu_per_elem * M * N,
        unique_bytes=(n_in + 1) * M * N * b,
    )


def cases() -> list[Case]:
    out = []
    p = dict(M=16384, N=16384, block_M=32, block_N=256, threads=256, dtype="float32")
    out.append(Case("ew_add_fp32_16384", elementwise_add, p, _inputs_2d(2), _ref_add,
                    # one add per element
                    _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5,
                    tags=("elementwise", "float32"),
                    note="C = A + B, 3 GiB of traffic; 32x256 tile, 32 elements per thread"))
    p = dict(M=16384, N=16384, block_M=128, block_N=256, threads=128, dtype="float16")
    out.append(Case("ew_add_fp16_16384", elementwise_add, p, _inputs_2d(2), _ref_add,
                    _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-3,
                    tags=("elementwise", "float16"),
                    note="TileLang example's default tile (128x256, 128 threads): 256 elements "
                         "per thread, ~254 registers"))
    p = dict(M=16384, N=16384, block_M=32, block_N=256, threads=256, dtype="float32")
    out.append(Case("ew_fma_fp32_16384", elementwise_fma, p, _inputs_2d(3), _ref_fma,
                    # x*w + b contracts to one FMA = 2 FLOPs per element
                    _ew_expected(p, 3, flops_per_elem=2, sfu_per_elem=0), rtol=1e-5,
                    tags=("elementwise", "float32", "fma")))
    p = dict(M=16384, N=16384, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("ew_gelu_tanh_fp16_16384", gelu_tanh, p, _inputs_2d(1), _ref_gelu,
                    # one tanh per element; the CUDA-core FLOPs depend on how the polynomial
                    # is contracted, not asserted
                    _ew_expected(p, 1, sfu_per_elem=1), rtol=2e-3,
                    tags=("elementwise", "float16", "sfu"),
                    note="tile staged via T.copy into a float32 fragment"))
    p = dict(M=16384, N=16384, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("ew_silu_mul_fp16_16384", silu_mul, p, _inputs_2d(2), _ref_silu_mul,
                    # one exp per element
                    _ew_expected(p, 2, sfu_per_elem=1), rtol=2e-3,
                    tags=("elementwise", "float16", "sfu")))
    p = dict(M=16384, N=16384, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("copy_tile_fp16_16384", tile_copy, p, _inputs_2d(1), _ref_copy,
                    _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                    tags=("copy", "float16"), note="global -> shared -> global"))

    N = (1 << 28) + 1000           # 1000 = not a multiple of 1024: last block has 1000 live lanes
    p = dict(N=N, alpha=1.5, block=1024, threads=256, dtype="float32")
    out.append(Case(
        "scale_guarded_fp32_n268436456", scale_guarded, p, _scale_inputs, _scale_ref_for(1.5),
        Expected(
            # the guard admits exactly N of the ceil(N/1024)*1024 lanes: one load, one store,
            # one multiply per element
            global_read_bytes=N * 4, global_write_bytes=N * 4, global_atomic_bytes=0,
            tensor_flops=0, cuda_flops=N, sfu_ops=0, unique_bytes=2 * N * 4),
        rtol=1e-6, tags=("elementwise", "float32", "guard", "edge"),
        note=f"{cdiv(N, 1024)} blocks, the last one {N % 1024} of 1024 lanes live"))
    return out

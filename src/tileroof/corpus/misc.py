"""Scans, atomics and transposes: T.cumsum on a shared tile, a histogram with one global
T.atomic_add per element, a column max with a tile-region T.atomic_max, and two transposes
(T.transpose shared -> shared, and a T.Parallel index swap)."""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn, zeros


@tilelang.jit
def row_cumsum(M, N, block_M=8, threads=256, dtype="float32"):
    """B[i, :] = cumsum(A[i, :]); block_M whole rows per block, scanned in shared memory."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            tile = T.alloc_shared((block_M, N), dtype)
            T.copy(A[bx * block_M, 0], tile)
            T.cumsum(src=tile, dim=1)
            T.copy(tile, B[bx * block_M, 0])

    return main


@tilelang.jit
def histogram(N, bins, block=1024, threads=256):
    """Hist[Vals[i]] += 1 with one global atomic per element (Hist zero on entry)."""

    @T.prim_func
    def main(Vals: T.Tensor((N,), "int32"), Hist: T.Tensor((bins,), "int32")):
        with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
            for i in T.Parallel(block):
                T.atomic_add(Hist[Vals[bx * block + i]], 1)

    return main


@tilelang.jit
def col_max_atomic(M, N, block_M=64, block_N=128, threads=128, dtype="float32"):
    """Out[j] = max_i A[i, j]: each block reduces its tile over rows and merges the block_N
    partial maxima into Out with a tile-region T.atomic_max (Out = -inf on entry)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            tile = T.alloc_fragment((block_M, block_N), dtype)
            res = T.alloc_fragment((block_N,), dtype)
            T.copy(A[by * block_M, bx * block_N], tile)
            T.reduce_max(tile, res, dim=0)
            T.atomic_max(Out[bx * block_N:(bx + 1) * block_N], res)

    return main


@tilelang.jit
def transpose_op(M, N, block_M=64, block_N=64, threads=128, dtype="float16"):
    """B = A^T using the T.transpose tile op between two shared tiles."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            a_shared = T.alloc_shared((block_M, block_N), dtype)
            t_shared = T.alloc_shared((block_N, block_M), dtype)
            T.copy(A[by * block_M, bx * block_N], a_shared)
            T.transpose(a_shared, t_shared)
            T.copy(t_shared, B[bx * block_N, by * block_M])

    return main


@tilelang.jit
def transpose_swap(M, N, block_M=64, block_N=64, threads=256, dtype="float32"):
    """B = A^T with the swap written as a T.Parallel loop between shared tiles."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            a_shared = T.alloc_shared((block_M, block_N), dtype)
            t_shared = T.alloc_shared((block_N, block_M), dtype)
            T.copy(A[by * block_M, bx * block_N], a_shared)
            for i, j in T.Parallel(block_N, block_M):
                t_shared[i, j] = a_shared[j, i]
            T.copy(t_shared, B[bx * block_N, by * block_M])

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _cumsum_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["M"], p["N"]), p["dtype"], device, g),
            nan_out((p["M"], p["N"]), p["dtype"], device)]


def _cumsum_ref(args):
    return {1: args[0].double().cumsum(dim=1)}


def _hist_inputs(p, device):
    import torch

    g = generator(device, 0)
    vals = torch.randint(0, p["bins"], (p["N"],), dtype=torch.int32, device=device, generator=g)
    # Hist is accumulated into with atomics, so it must be zero on entry
    return [vals, zeros((p["bins"],), "int32", device)]


def _hist_ref(args):
    import torch

    return {1: torch.bincount(args[0].long(), minlength=args[1].shape[0]).to(torch.int64)}


def _colmax_inputs(p, device):
    import torch

    g = generator(device, 0)
    # Out is max-reduced into with atomics: start at -inf
    return [randn((p["M"], p["N"]), p["dtype"], device, g),
            torch.full((p["N"],), float("-inf"), dtype=torch.float32, device=device)]


def _colmax_ref(args):
    return {1: args[0].float().amax(dim=0)}


def _transpose_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["M"], p["N"]), p["dtype"], device, g),
            nan_out((p["N"], p["M"]), p["dtype"], device)]


def _transpose_ref(args):
    return {1: args[0].float().T.contiguous()}


# ----------------------------------------------------------------------------- cases
def cases() -> list[Case]:
    out = []
    p = dict(M=65536, N=1024, block_M=8, threads=256, dtype="float32")
    M, N = p["M"], p["N"]
    out.append(Case(
        "cumsum_rows_fp32_65536x1024", row_cumsum, p, _cumsum_inputs, _cumsum_ref,
        Expected(
            # one tile copy in and one out per block, covering the matrix once
            global_read_bytes=M * N * 4, global_write_bytes=M * N * 4, global_atomic_bytes=0,
            tensor_flops=0, sfu_ops=0, unique_bytes=2 * M * N * 4),
        rtol=1e-5, tags=("scan", "float32"), note="T.cumsum(dim=1) on a (8, 1024) shared tile"))

    p = dict(N=1 << 26, bins=4096, block=1024, threads=256)
    N, bins = p["N"], p["bins"]
    out.append(Case(
        "histogram_atomic_int32_n67108864_b4096", histogram, p, _hist_inputs, _hist_ref,
        Expected(
            # one int32 value load per element (the guard-free T.Parallel covers N exactly)
            global_read_bytes=N * 4, global_write_bytes=0,
            # one int32 atomic add per element
            global_atomic_bytes=N * 4,
            tensor_flops=0, sfu_ops=0, unique_bytes=N * 4 + bins * 4),
        rtol=0.0, tags=("atomic", "int32", "histogram"),
        note="Hist must be zero before every launch (atomics accumulate into it)"))

    p = dict(M=16384, N=16384, block_M=64, block_N=128, threads=128, dtype="float32")
    M, N, bm = p["M"], p["N"], p["block_M"]
    out.append(Case(
        "colmax_atomic_fp32_16384", col_max_atomic, p, _colmax_inputs, _colmax_ref,
        Expected(
            global_read_bytes=M * N * 4, global_write_bytes=0,
            # every block (M/bm block rows) merges block_N floats: (M/bm) * N * 4 bytes
            global_atomic_bytes=cdiv(M, bm) * N * 4,
            tensor_flops=0, sfu_ops=0, unique_bytes=M * N * 4 + N * 4),
        rtol=0.0, tags=("atomic", "float32", "reduce"),
        note="Out must be -inf before every launch (atomic_max accumulates into it)"))

    for name, kern, dt, threads in (("transpose_op_fp16_16384", transpose_op, "float16", 128),
                                    ("transpose_swap_fp32_16384", transpose_swap, "float32", 256)):
        p = dict(M=16384, N=16384, block_M=64, block_N=64, threads=threads, dtype=dt)
        M, N, b = p["M"], p["N"], nbytes(dt)
        out.append(Case(
            name, kern, p, _transpose_inputs, _transpose_ref,
            Expected(
                # one tile in, one tile out per block; each element moved once
                global_read_bytes=M * N * b, global_write_bytes=M * N * b,
                global_atomic_bytes=0, tensor_flops=0, cuda_flops=0, sfu_ops=0,
                unique_bytes=2 * M * N * b),
            rtol=0.0, tags=("transpose", dt)))
    return out

"""Reductions: row sum, row max, column sum (T.reduce_sum over dim 0), row abs-max.

Row/column sums stream the matrix through shared memory with a pipelined T.copy, accumulate
elementwise into a float32 fragment, and reduce the fragment once at the end.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import generator, nan_out, randn


@tilelang.jit
def row_reduce(M, N, op="sum", block_M=8, block_N=512, num_stages=2, threads=128,
               dtype="float32", out_dtype="float32"):
    """Out[i] = sum_j A[i, j] (op="sum") or max_j A[i, j] (op="max")."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M,), out_dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            tile = T.alloc_shared((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            res = T.alloc_fragment((block_M,), "float32")
            if op == "sum":
                T.clear(acc)
            else:
                T.fill(acc, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=num_stages):
                T.copy(A[bx * block_M, k * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    if op == "sum":
                        acc[i, j] += tile[i, j]
                    else:
                        acc[i, j] = T.max(acc[i, j], tile[i, j])
            if op == "sum":
                T.reduce_sum(acc, res, dim=1)
            else:
                T.reduce_max(acc, res, dim=1)
            T.copy(res, Out[bx * block_M])

    return main


@tilelang.jit
def col_sum(M, N, block_M=64, block_N=64, num_stages=3, threads=128, dtype="float32"):
    """Out[j] = sum_i A[i, j]: each block owns block_N columns and walks down all M rows."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), threads=threads) as bx:
            tile = T.alloc_shared((block_M, block_N), dtype)
            acc = T.alloc_fragment((block_M, block_N), "float32")
            res = T.alloc_fragment((block_N,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(M, block_M), num_stages=num_stages):
                T.copy(A[k * block_M, bx * block_N], tile)
                for i, j in T.Parallel(block_M, block_N):
                    acc[i, j] += tile[i, j]
            T.reduce_sum(acc, res, dim=0)
            T.copy(res, Out[bx * block_N])

    return main


@tilelang.jit
def row_absmax(M, N, block_M=2, threads=256, dtype="bfloat16"):
    """Out[i] = max_j |A[i, j]| (float32) with T.reduce_absmax over whole rows in a fragment."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), Out: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            res = T.alloc_fragment((block_M,), "float32")
            T.copy(A[bx * block_M, 0], x)
            T.reduce_absmax(x, res, dim=1)
            T.copy(res, Out[bx * block_M])

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _inputs(p, device, out_shape, out_dtype):
    g = generator(device, 0)
    return [randn((p["M"], p["N"]), p["dtype"], device, g), nan_out(out_shape, out_dtype, device)]


def _row_inputs(p, device):
    return _inputs(p, device, (p["M"],), p["out_dtype"])


def _col_inputs(p, device):
    return _inputs(p, device, (p["N"],), p["dtype"])


def _absmax_inputs(p, device):
    return _inputs(p, device, (p["M"],), "float32")


def _ref_rowsum(args):
    return {1: args[0].double().sum(dim=1)}


def _ref_rowmax(args):
    return {1: args[0].float().amax(dim=1)}


def _ref_colsum(args):
    return {1: args[0].double().sum(dim=0)}


def _ref_absmax(args):
    return {1: args[0].float().abs().amax(dim=1)}


# ----------------------------------------------------------------------------- cases
def _reduce_expected(in_elems, in_b, out_elems, out_b) -> Expected:
    return Expected(
        # the whole input is streamed once (tile-divisible copies), each output written once
        global_read_bytes=in_elems * in_b,
        global_write_bytes=out_elems * out_b,
        global_atomic_bytes=0,
        tensor_flops=0,
        sfu_ops=0,
        unique_bytes=in_elems * in_b + out_elems * out_b,
    )


def cases() -> list[Case]:
    out = []
    p = dict(M=16384, N=16384, op="sum", block_M=8, block_N=512, num_stages=2, threads=128,
             dtype="float32", out_dtype="float32")
    out.append(Case("rowsum_fp32_16384", row_reduce, p, _row_inputs, _ref_rowsum,
                    _reduce_expected(p["M"] * p["N"], 4, p["M"], 4), rtol=1e-5,
                    tags=("reduce", "float32"),
                    note="8 rows per block, 512-wide pipelined shared tiles"))
    p = dict(M=16384, N=16384, op="max", block_M=8, block_N=512, num_stages=2, threads=128,
             dtype="float16", out_dtype="float16")
    out.append(Case("rowmax_fp16_16384", row_reduce, p, _row_inputs, _ref_rowmax,
                    _reduce_expected(p["M"] * p["N"], 2, p["M"], 2), rtol=0.0,
                    tags=("reduce", "float16")))
    p = dict(M=16384, N=16384, block_M=64, block_N=64, num_stages=3, threads=128,
             dtype="float32")
    out.append(Case("colsum_fp32_16384", col_sum, p, _col_inputs, _ref_colsum,
                    _reduce_expected(p["M"] * p["N"], 4, p["N"], 4), rtol=1e-5,
                    tags=("reduce", "float32", "column"),
                    note="T.reduce_sum(dim=0); 256 blocks, each walking 16384 rows of 64 columns"))
    p = dict(M=32768, N=4096, block_M=2, threads=256, dtype="bfloat16")
    out.append(Case("row_absmax_bf16_32768x4096", row_absmax, p, _absmax_inputs, _ref_absmax,
                    _reduce_expected(p["M"] * p["N"], 2, p["M"], 4), rtol=0.0,
                    tags=("reduce", "bfloat16", "absmax"),
                    note="T.reduce_absmax over whole rows held in a float32 fragment"))
    return out

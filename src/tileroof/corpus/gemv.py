"""GEMV y = A @ x (A: M x K fp16, row-major): one version with element loads of A and x inside
T.Parallel (no T.copy), one that stages A and x tiles through shared memory with pipelined
T.copy's. Both accumulate a (block_M x block_K) float32 fragment and reduce it along dim 1.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, randn


@tilelang.jit
def gemv_elem(M, K, block_M=16, block_K=256, threads=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), x: T.Tensor((K,), dtype), y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            acc = T.alloc_fragment((block_M, block_K), "float32")
            res = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for k in T.serial(T.ceildiv(K, block_K)):
                for i, j in T.Parallel(block_M, block_K):
                    acc[i, j] += (A[bx * block_M + i, k * block_K + j].astype("float32") *
                                  x[k * block_K + j].astype("float32"))
            T.reduce_sum(acc, res, dim=1)
            for i in T.Parallel(block_M):
                y[bx * block_M + i] = res[i]

    return main


@tilelang.jit
def gemv_tiled(M, K, block_M=16, block_K=256, num_stages=3, threads=128, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), x: T.Tensor((K,), dtype), y: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            a_shared = T.alloc_shared((block_M, block_K), dtype)
            x_shared = T.alloc_shared((block_K,), dtype)
            acc = T.alloc_fragment((block_M, block_K), "float32")
            res = T.alloc_fragment((block_M,), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[bx * block_M, k * block_K], a_shared)
                T.copy(x[k * block_K], x_shared)
                for i, j in T.Parallel(block_M, block_K):
                    acc[i, j] += a_shared[i, j] * x_shared[j]
            T.reduce_sum(acc, res, dim=1)
            T.copy(res, y[bx * block_M])

    return main


def _inputs(p, device):
    g = generator(device, 0)
    M, K, dt = p["M"], p["K"], p["dtype"]
    return [randn((M, K), dt, device, g), randn((K,), dt, device, g), nan_out((M,), dt, device)]


def _ref(args):
    return {2: args[0].float() @ args[1].float()}


def cases() -> list[Case]:
    out = []
    p = dict(M=16384, K=16384, block_M=16, block_K=256, threads=128, dtype="float16")
    M, K, bm, bk = p["M"], p["K"], p["block_M"], p["block_K"]
    out.append(Case(
        "gemv_elem_fp16_16384", gemv_elem, p, _inputs, _ref,
        Expected(
            # the T.Parallel body runs (M/bm)*(K/bk) times per (i, j) of a bm x bk tile,
            # i.e. M*K executions, each loading one A element and one x element
            global_read_bytes=2 * M * K * 2,
            # one y element per row (T.Parallel over block_M, once per block)
            global_write_bytes=M * 2,
            global_atomic_bytes=0, tensor_flops=0, sfu_ops=0,
            unique_bytes=(M * K + K + M) * 2),
        rtol=1e-2, tags=("gemv", "float16", "element-loads"),
        note="A and x loaded element by element in T.Parallel; x re-read by every row"))

    p = dict(M=16384, K=16384, block_M=16, block_K=256, num_stages=3, threads=128,
             dtype="float16")
    M, K, bm, bk = p["M"], p["K"], p["block_M"], p["block_K"]
    out.append(Case(
        "gemv_tiled_fp16_16384", gemv_tiled, p, _inputs, _ref,
        Expected(
            # A once; the block_K slice of x once per iteration of every block: (M/bm)*K
            global_read_bytes=(M * K + cdiv(M, bm) * K) * 2,
            global_write_bytes=M * 2,
            global_atomic_bytes=0, tensor_flops=0, sfu_ops=0,
            unique_bytes=(M * K + K + M) * 2),
        rtol=1e-2, tags=("gemv", "float16"),
        note="A and x tiles through shared memory with a 3-stage pipeline"))
    return out

"""Upstream-style small memory-bound kernels: TileLang's own examples (github tile-ai/tilelang,
examples/) of the simplest kinds, each kept in the example's structure (tile sizes, threads,
layout annotations, pass configs) and run at shapes a user would benchmark on an H200.

    up_ew_add_*      examples/elementwise/example_elementwise_add.py (elementwise_add)
    up_rmsnorm_*     examples/norm/rms_norm.py (rms_norm, the kernel its __main__ benchmarks)
    up_cast_fp8_*    examples/cast/example_per_token_cast_to_fp8.py (per_token_cast_to_fp8)

As in upstream.py, every @tilelang.jit below takes every argument (no out_idx): the harness
passes all of them, the outputs pre-filled with NaN.  Counting conventions are upstream.py's
(its module docstring): CUDA-core FLOPs per element-level result (add, sub, mul, div, max,
min = 1; a float a*b+c = FMA = 2; T.reduce_* 1 per source element; casts free), SFU ops per
special-function result (rsqrt), bytes as issued to global memory by tile copies and element
accesses, summed over every block.  All shapes below divide their tiles exactly, so no copy is
clipped and read/write bytes equal the tensors' sizes times how often they are read/written.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from .elementwise import _ref_add
from ._util import cdiv, generator, nan_out, nbytes, randn

FP8_E4M3_MAX = 448.0
FP8_GROUP = 128          # upstream's group_size (columns sharing one scale)


# ============================================================================= kernels
# ----------------------------------------------------------------------------- elementwise add
@tilelang.jit
def up_elementwise_add(M, N, block_M=32, block_N=32, threads=128, in_dtype="float32",
                       out_dtype="float32"):
    """C = A + B, examples/elementwise/example_elementwise_add.py as upstream writes it now:
    one block per (block_M, block_N) tile, A and B tiles copied to shared memory, added in a
    T.Parallel into a fragment, staged through a shared C tile and copied out.  Upstream's
    default config (block_M = block_N = 32, 128 threads, float32) is the default here; its
    autotuner's space is block_M, block_N in {64, 128, 256}, threads in {64, 128, 256}.
    Changed: no out_idx (C is an argument), no @tilelang.autotune (the config is a parameter)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), in_dtype), B: T.Tensor((M, N), in_dtype),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_N), in_dtype)
            B_shared = T.alloc_shared((block_M, block_N), in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), out_dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)

            T.copy(A[by * block_M, bx * block_N], A_shared)
            T.copy(B[by * block_M, bx * block_N], B_shared)
            for ly, lx in T.Parallel(block_M, block_N):
                C_local[ly, lx] = A_shared[ly, lx] + B_shared[ly, lx]
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


# ----------------------------------------------------------------------------- RMS norm
@tilelang.jit(pass_configs={"tl.disable_tma_lower": True})
def up_rms_norm(M, N, blk_m=1):
    """B = A * (rsqrt(mean(A^2)) + 1e-12) per row, examples/norm/rms_norm.py's rms_norm (the
    kernel its __main__ checks and benchmarks, at M = N = 8192, blk_m = 1): float32, 128
    threads, blk_m whole rows copied global -> shared -> fragment, squared into a second
    fragment, T.reduce_sum, rsqrt, scaled in place and copied out; pass config
    tl.disable_tma_lower as upstream.  Upstream adds the 1e-12 after the rsqrt (its torch
    reference adds it inside); the kernel is kept as written and the reference here follows
    the kernel.  Changed: no out_idx (B is an argument)."""
    dtype = "float"

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=128) as bx:
            A_shared = T.alloc_shared((blk_m, N), dtype)
            A_pow_local = T.alloc_fragment((blk_m, N), dtype)
            A_local = T.alloc_fragment((blk_m, N), dtype)
            A_powsum = T.alloc_fragment((blk_m,), dtype)

            T.copy(A[bx * blk_m:(bx + 1) * blk_m, :], A_shared)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(blk_m, N):
                A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow_local, A_powsum, dim=1)
            for i in T.Parallel(blk_m):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N) + 1e-12
            for i, j in T.Parallel(blk_m, N):
                A_local[i, j] *= A_powsum[i]
            T.copy(A_local, B[bx * blk_m:(bx + 1) * blk_m, :])

    return main


# ----------------------------------------------------------------------------- per-token fp8 cast
@tilelang.jit
def up_per_token_cast_to_fp8(M, N, blk_m=8):
    """Per-token-group fp8 quantisation, examples/cast/example_per_token_cast_to_fp8.py: one
    block (128 threads) per (blk_m rows, 128-column group); the float32 tile is copied into a
    fragment with upstream's hand-written layout (thread (i // (blk_m/4)) * 32 + j % 32),
    T.reduce_absmax per row, s = max(amax, 1e-4) / 448, q = clamp(x / s, -448, 448) converted to
    float8_e4m3fn by a fragment copy and written out, and s stored per (row, group) by element
    stores.  Upstream's main() shape (M = N = 8192, blk_m = 8) is the first case.
    Changed: no out_idx (X_fp8 and X_amax are arguments); fp8 dtype spelled float8_e4m3fn (as
    upstream's current version)."""
    dtype = "float"
    group_size = FP8_GROUP
    fp8_min = -FP8_E4M3_MAX
    fp8_max = FP8_E4M3_MAX

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), X_fp8: T.Tensor((M, N), "float8_e4m3fn"),
             X_amax: T.Tensor((M, T.ceildiv(N, group_size)), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), T.ceildiv(N, group_size), threads=128) as (bx, by):
            row = bx
            row_g_id = by
            y_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_amax_local = T.alloc_fragment((blk_m,), dtype)
            y_s_local = T.alloc_fragment((blk_m,), dtype)
            y_q_local = T.alloc_fragment((blk_m, group_size), dtype)
            y_q_local_fp8 = T.alloc_fragment((blk_m, group_size), "float8_e4m3fn")

            T.annotate_layout({
                y_local: T.Fragment(
                    y_local.shape,
                    forward_thread_fn=lambda i, j: (i // (blk_m // 4)) * 32 + j % 32),
            })

            T.copy(X[row * blk_m:(row + 1) * blk_m,
                     row_g_id * group_size:(row_g_id + 1) * group_size], y_local)
            T.reduce_absmax(y_local, y_amax_local, dim=1)
            for i in T.Parallel(blk_m):
                y_amax_local[i] = T.max(y_amax_local[i], 1e-4)
                y_s_local[i] = y_amax_local[i] / fp8_max
            for i, j in T.Parallel(blk_m, group_size):
                y_q_local[i, j] = T.clamp(y_local[i, j] / y_s_local[i], fp8_min, fp8_max)
            T.copy(y_q_local, y_q_local_fp8)
            for i in T.Parallel(blk_m):
                X_amax[row * blk_m + i, row_g_id] = y_s_local[i]
            T.copy(y_q_local_fp8, X_fp8[row * blk_m:(row + 1) * blk_m,
                                        row_g_id * group_size:(row_g_id + 1) * group_size])

    return main


# ============================================================================= inputs / references
def _ew_inputs(p, device):
    g = generator(device, 0)
    M, N = p["M"], p["N"]
    return [randn((M, N), p["in_dtype"], device, g), randn((M, N), p["in_dtype"], device, g),
            nan_out((M, N), p["out_dtype"], device)]


def _rms_inputs(p, device):
    g = generator(device, 0)
    M, N = p["M"], p["N"]
    return [randn((M, N), "float32", device, g), nan_out((M, N), "float32", device)]


def _rms_ref(args):
    """The kernel's formula: x * (rsqrt(mean(x^2)) + 1e-12), in float64."""
    import torch

    x = args[0].double()
    return {1: x * (torch.rsqrt(x.pow(2).mean(-1, keepdim=True)) + 1e-12)}


def _cast_inputs(p, device):
    g = generator(device, 0)
    M, N = p["M"], p["N"]
    return [randn((M, N), "float32", device, g), nan_out((M, N), "float8_e4m3fn", device),
            nan_out((M, cdiv(N, FP8_GROUP)), "float32", device)]


def _cast_ref(args):
    """As the kernel computes it: s = max(amax over each row's 128-column group, 1e-4) / 448,
    q = fp8(clamp(x / s, -448, 448)); the fp8 output compared as float32 (a last-bit rounding
    difference of x / s moves an element by one fp8 step, ~1e-3 of the norm at worst for a
    few elements), the scales compared directly."""
    import torch

    x = args[0].float()
    M, N = x.shape
    xg = x.view(M, N // FP8_GROUP, FP8_GROUP)
    s = xg.abs().amax(dim=2).clamp_min(1e-4) / FP8_E4M3_MAX
    q = (xg / s.unsqueeze(2)).clamp(-FP8_E4M3_MAX, FP8_E4M3_MAX).to(torch.float8_e4m3fn)
    return {1: q.view(M, N).float(), 2: s}


# ============================================================================= expected
def _ew_expected(p) -> Expected:
    M, N, bm, bn = p["M"], p["N"], p["block_M"], p["block_N"]
    bi, bo = nbytes(p["in_dtype"]), nbytes(p["out_dtype"])
    blocks = cdiv(M, bm) * cdiv(N, bn)
    return Expected(
        # each block copies one (bm, bn) tile of A and of B in (tiles divide M, N: no clipping)
        global_read_bytes=blocks * 2 * bm * bn * bi,
        # and one (bm, bn) tile of C out
        global_write_bytes=blocks * bm * bn * bo,
        global_atomic_bytes=0,
        tensor_flops=0,
        # one add per element
        cuda_flops=blocks * bm * bn,
        sfu_ops=0,
        unique_bytes=M * N * (2 * bi + bo),
    )


def _rms_expected(p) -> Expected:
    M, N, bm = p["M"], p["N"], p["blk_m"]
    blocks = cdiv(M, bm)
    return Expected(
        # each block copies its blk_m rows of A in and its blk_m rows of B out (float32)
        global_read_bytes=blocks * bm * N * 4,
        global_write_bytes=blocks * bm * N * 4,
        global_atomic_bytes=0,
        tensor_flops=0,
        # per element: the square (1), reduce_sum (1), the scale A_local *= powsum (1);
        # per row: powsum / N (1) and + 1e-12 (1)
        cuda_flops=blocks * bm * (3 * N + 2),
        # one rsqrt per row
        sfu_ops=blocks * bm,
        unique_bytes=2 * M * N * 4,
    )


def _cast_expected(p) -> Expected:
    M, N, bm = p["M"], p["N"], p["blk_m"]
    G = cdiv(N, FP8_GROUP)
    blocks = cdiv(M, bm) * G
    tile = bm * FP8_GROUP
    return Expected(
        # each block copies one (blk_m, 128) float32 tile of X in
        global_read_bytes=blocks * tile * 4,
        # and one (blk_m, 128) fp8 tile out, plus blk_m float32 scales (element stores)
        global_write_bytes=blocks * (tile * 1 + bm * 4),
        global_atomic_bytes=0,
        tensor_flops=0,
        # per element: reduce_absmax (1), x / s (1), clamp = max + min (2);
        # per row: max(amax, 1e-4) (1), / 448 (1)
        cuda_flops=blocks * (tile * 4 + bm * 2),
        sfu_ops=0,
        unique_bytes=M * N * 4 + M * N * 1 + M * G * 4,
    )


# ============================================================================= cases
def _ew_case(name, M, N, block_M, block_N, threads, note) -> Case:
    p = dict(M=M, N=N, block_M=block_M, block_N=block_N, threads=threads, in_dtype="float32",
             out_dtype="float32")
    return Case(name, up_elementwise_add, p, _ew_inputs, _ref_add, _ew_expected(p), rtol=1e-6,
                tags=("elementwise", "upstream", "float32"), note=note)


def _rms_case(name, M, N, blk_m, note) -> Case:
    p = dict(M=M, N=N, blk_m=blk_m)
    return Case(name, up_rms_norm, p, _rms_inputs, _rms_ref, _rms_expected(p), rtol=1e-5,
                tags=("norm", "reduce", "upstream", "float32"), note=note)


def _cast_case(name, M, N, blk_m, note) -> Case:
    p = dict(M=M, N=N, blk_m=blk_m)
    return Case(name, up_per_token_cast_to_fp8, p, _cast_inputs, _cast_ref, _cast_expected(p),
                rtol=1e-2, tags=("quant", "fp8", "reduce", "upstream", "float32"), note=note)


def cases() -> list[Case]:
    return [
        _ew_case("up_ew_add_fp32_4096x2048_b32x32_t128", 4096, 2048, 32, 32, 128,
                 "examples/elementwise/example_elementwise_add.py, upstream's default config "
                 "(32 x 32 tiles, 128 threads): 8192 blocks, 100 MB of traffic"),
        _ew_case("up_ew_add_fp32_10240x10240_b32x32_t128", 10240, 10240, 32, 32, 128,
                 "examples/elementwise/example_elementwise_add.py, default config: "
                 "102400 blocks, 1.26 GB of traffic"),
        _ew_case("up_ew_add_fp32_10240x10240_b64x128_t256", 10240, 10240, 64, 128, 256,
                 "examples/elementwise/example_elementwise_add.py, a config from upstream's "
                 "autotuner space (64 x 128 tiles, 256 threads): 12800 blocks, 1.26 GB"),
        _rms_case("up_rmsnorm_fp32_8192x8192", 8192, 8192, 1,
                  "examples/norm/rms_norm.py (rms_norm), upstream's benchmark shape: one "
                  "8192-wide float32 row per block (32 KB shared), 128 threads"),
        _rms_case("up_rmsnorm_fp32_16384x2048", 16384, 2048, 1,
                  "examples/norm/rms_norm.py (rms_norm), blk_m = 1: 2048-wide rows, "
                  "16 elements per thread per fragment"),
        # session 11: short launches (10-30 us) whose outputs stay in L2, written after the
        # write-allocation rule of the flush write-back (memory.flush_writeback) and predicted first
        _ew_case("up_ew_add_fp32_2048x2048_b32x32_t128", 2048, 2048, 32, 32, 128,
                 "default config at 2048^2: 4096 blocks, 50 MB of traffic"),
        _rms_case("up_rmsnorm_fp32_2048x4096", 2048, 4096, 1, "a short one: 2048 rows of 4096"),
        _cast_case("up_cast_fp8_2048x7168_blk8", 2048, 7168, 8, "a short one: 2048 tokens"),
        _cast_case("up_cast_fp8_8192x8192_blk8", 8192, 8192, 8,
                   "examples/cast/example_per_token_cast_to_fp8.py, upstream main()'s shape "
                   "(M = N = 8192, blk_m = 8): 65536 blocks of 8 x 128"),
        _cast_case("up_cast_fp8_16384x7168_blk8", 16384, 7168, 8,
                   "examples/cast/example_per_token_cast_to_fp8.py, blk_m = 8 at a "
                   "DeepSeek-V3 hidden size (7168 = 56 groups of 128): 114688 blocks"),
    ]

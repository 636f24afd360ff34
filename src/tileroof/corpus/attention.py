"""Attention family: flash-attention forward (online softmax, BHSD layout, non-causal and
causal), a split-free GQA decode kernel, and the "fa_fwd" config sweep.

The forward kernel follows TileLang's examples/flash_attention/example_mha_fwd_bhsd.py: one
block per (query tile bx, head, batch); Q tile copied once; a T.Pipelined loop over key tiles
that copies K and V tiles, does S = Q K^T (T.gemm transpose_B), the online-softmax update with
T.reduce_max / T.exp2 / T.reduce_sum, rescales O and does O += P V (second T.gemm).
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, randn

LOG2E = 1.44269504


def key_tile_step(block_M, block_N, dim, scale, is_causal, accum_dtype):
    """One iteration of flash_attn_fwd's key loop as a T.macro (tileroof.gpu.tl_kernels.timed_attention
    runs the same one): the K tile, S = Q K^T (masked when causal), the online-softmax update, O
    rescaled, the V tile, O += P V."""

    @T.macro
    def step(K, V, bx, by, bz, k, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o,
             scores_max, scores_max_prev, scores_scale, scores_sum, logsum):
        T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], K_shared)
        if is_causal:
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                             -T.infinity(accum_dtype))
        else:
            T.clear(acc_s)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
               policy=T.GemmWarpPolicy.FullRow)
        # online softmax
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        if is_causal:
            # with block_N < block_M a key tile can mask a whole row: keep the running max
            # (-inf - -inf would be NaN).  Measured run 2 lacked this and those configs failed.
            for i in T.Parallel(block_M):
                scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]
        T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    return step


@tilelang.jit
def flash_attn_fwd(batch, heads, seq_len, dim, is_causal=False, block_M=128, block_N=128,
                   num_stages=2, threads=256, dtype="float16", accum_dtype="float32"):
    scale = (1.0 / dim) ** 0.5 * LOG2E  # softmax in base 2: exp(x/sqrt(d)) = exp2(x*scale)
    shape = (batch, heads, seq_len, dim)
    key_tile = key_tile_step(block_M, block_N, dim, scale, is_causal, accum_dtype)

    @T.prim_func
    def main(
            Q: T.Tensor(shape, dtype),
            K: T.Tensor(shape, dtype),
            V: T.Tensor(shape, dtype),
            Output: T.Tensor(shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            O_shared = T.alloc_shared((block_M, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_M,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            scores_scale = T.alloc_fragment((block_M,), accum_dtype)
            scores_sum = T.alloc_fragment((block_M,), accum_dtype)
            logsum = T.alloc_fragment((block_M,), accum_dtype)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (T.min(T.ceildiv(seq_len, block_N),
                                T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len, block_N))

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                key_tile(K, V, bx, by, bz, k, Q_shared, K_shared, V_shared, acc_s, acc_s_cast, acc_o,
                         scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return main


@tilelang.jit
def gqa_decode(batch, heads, kv_heads, seqlen_kv, dim, block_N=128, block_H=64, num_stages=2,
               threads=128, dtype="float16", accum_dtype="float32"):
    """One query token per head; the `groups = heads // kv_heads` query heads sharing a KV head
    are processed together by one block (rows padded to block_H for the tensor cores), which
    streams that KV head's whole K and V (no split-KV, no combine kernel)."""
    groups = heads // kv_heads
    scale = (1.0 / dim) ** 0.5 * LOG2E

    @T.prim_func
    def main(
            Q: T.Tensor((batch, heads, dim), dtype),
            K: T.Tensor((batch, seqlen_kv, kv_heads, dim), dtype),
            V: T.Tensor((batch, seqlen_kv, kv_heads, dim), dtype),
            Output: T.Tensor((batch, heads, dim), dtype),
    ):
        with T.Kernel(kv_heads, batch, threads=threads) as (bx, by):
            Q_shared = T.alloc_shared((block_H, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            O_shared = T.alloc_shared((groups, dim), dtype)
            acc_s = T.alloc_fragment((block_H, block_N), accum_dtype)
            acc_s_cast = T.alloc_fragment((block_H, block_N), dtype)
            acc_o = T.alloc_fragment((block_H, dim), accum_dtype)
            scores_max = T.alloc_fragment((block_H,), accum_dtype)
            scores_max_prev = T.alloc_fragment((block_H,), accum_dtype)
            scores_scale = T.alloc_fragment((block_H,), accum_dtype)
            scores_sum = T.alloc_fragment((block_H,), accum_dtype)
            logsum = T.alloc_fragment((block_H,), accum_dtype)

            # rows >= groups stay zero: they are computed and thrown away
            T.clear(Q_shared)
            T.copy(Q[by, bx * groups:(bx + 1) * groups, :], Q_shared[0:groups, :], disable_tma=True)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=num_stages):
                T.copy(K[by, k * block_N:(k + 1) * block_N, bx, :], K_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[by, k * block_N:(k + 1) * block_N, bx, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o[0:groups, :], O_shared)
            T.copy(O_shared, Output[by, bx * groups:(bx + 1) * groups, :])

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _fa_inputs(p, device):
    g = generator(device, 0)
    shape = (p["batch"], p["heads"], p["seq_len"], p["dim"])
    dt = p.get("dtype", "float16")
    return [randn(shape, dt, device, g), randn(shape, dt, device, g), randn(shape, dt, device, g),
            nan_out(shape, dt, device)]


def _sdpa_ref(q, k, v, causal):
    """float32 attention, one (batch) slice at a time to bound the memory on CPU."""
    import torch
    import torch.nn.functional as F

    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for b in range(q.shape[0]):
        out[b] = F.scaled_dot_product_attention(q[b].float(), k[b].float(), v[b].float(),
                                                is_causal=causal)
    return out


def _fa_ref(args):
    return {3: _sdpa_ref(args[0], args[1], args[2], False)}


def _fa_ref_causal(args):
    return {3: _sdpa_ref(args[0], args[1], args[2], True)}


def _gqa_inputs(p, device):
    g = generator(device, 0)
    B, H, KVH, S, D = p["batch"], p["heads"], p["kv_heads"], p["seqlen_kv"], p["dim"]
    dt = p.get("dtype", "float16")
    return [randn((B, H, D), dt, device, g), randn((B, S, KVH, D), dt, device, g),
            randn((B, S, KVH, D), dt, device, g), nan_out((B, H, D), dt, device)]


def _gqa_ref(args):
    import torch

    q, k, v = args[0].float(), args[1].float(), args[2].float()
    B, H, D = q.shape
    KVH = k.shape[2]
    G = H // KVH
    qg = q.view(B, KVH, G, D)                       # head h = kvh * G + g
    s = torch.einsum("bhgd,bshd->bhgs", qg, k) / D ** 0.5
    p = torch.softmax(s, dim=-1)
    o = torch.einsum("bhgs,bshd->bhgd", p, v)
    return {3: o.reshape(B, H, D)}


# ----------------------------------------------------------------------------- expected
def _fa_expected(p) -> Expected:
    B, H, S, D = p["batch"], p["heads"], p["seq_len"], p["dim"]
    bM, bN = p["block_M"], p["block_N"]
    nq = cdiv(S, bM)                       # query tiles (blockIdx.x extent)
    if p.get("is_causal", False):
        # the loop for query tile bx runs min(ceil(S/bN), ceil((bx+1)*bM/bN)) iterations;
        # diagonal tiles run their full gemms (masking is done with -inf, not by skipping)
        iters = sum(min(cdiv(S, bN), cdiv((bx + 1) * bM, bN)) for bx in range(nq))
    else:
        iters = nq * cdiv(S, bN)           # every query tile visits every key tile
    iters *= B * H                         # summed over all blocks
    return Expected(
        # two gemms per iteration: S = Q K^T (bM x bN x D) and O += P V (bM x D x bN)
        tensor_flops=iters * 2 * (2 * bM * bN * D),
        # Q tile once per block (B*H*nq*bM*D = all of Q), K and V tiles each iteration
        global_read_bytes=(B * H * nq * bM * D + iters * 2 * bN * D) * 2,
        # output tile once per block
        global_write_bytes=B * H * nq * bM * D * 2,
        global_atomic_bytes=0,
        # exp2 per iteration: bM for the rescale factors + bM*bN for the probabilities
        sfu_ops=iters * (bM + bM * bN),
        unique_bytes=4 * B * H * S * D * 2,
    )


def _gqa_expected(p) -> Expected:
    B, H, KVH, S, D = p["batch"], p["heads"], p["kv_heads"], p["seqlen_kv"], p["dim"]
    bN, bH = p["block_N"], p["block_H"]
    G = H // KVH
    blocks = B * KVH
    iters = blocks * cdiv(S, bN)
    return Expected(
        # two gemms per iteration on the padded bH-row tile: bH x bN x D and bH x D x bN
        tensor_flops=iters * 2 * (2 * bH * bN * D),
        # Q: G rows per block; K and V: bN x D tile each per iteration (the whole KV cache once)
        global_read_bytes=(blocks * G * D + iters * 2 * bN * D) * 2,
        # G output rows per block
        global_write_bytes=blocks * G * D * 2,
        global_atomic_bytes=0,
        # exp2 on all bH rows: bH rescale factors + bH*bN probabilities per iteration
        sfu_ops=iters * (bH + bH * bN),
        unique_bytes=(2 * B * H * D + 2 * B * S * KVH * D) * 2,
    )


# ----------------------------------------------------------------------------- cases
def _fa_params(batch=4, heads=32, seq_len=2048, dim=128, is_causal=False, bM=128, bN=128,
               stages=2, threads=256):
    return dict(batch=batch, heads=heads, seq_len=seq_len, dim=dim, is_causal=is_causal,
                block_M=bM, block_N=bN, num_stages=stages, threads=threads,
                dtype="float16", accum_dtype="float32")


def _fa_case(name, p, sweep=None, note=""):
    causal = p["is_causal"]
    return Case(name=name, kernel=flash_attn_fwd, params=p, make_inputs=_fa_inputs,
                reference=_fa_ref_causal if causal else _fa_ref, expected=_fa_expected(p),
                rtol=1e-2, sweep=sweep,
                tags=("attention", "float16") + (("causal",) if causal else ()), note=note)


def cases() -> list[Case]:
    out = [
        _fa_case("fa_fwd_fp16_b4_h32_s2048_d128", _fa_params(),
                 note="non-causal; 128x128 tiles, 2 stages, 256 threads"),
        _fa_case("fa_fwd_causal_fp16_b4_h32_s2048_d128", _fa_params(is_causal=True),
                 note="causal: query tile bx loops over ceil((bx+1)*128/128) key tiles"),
    ]
    p = dict(batch=16, heads=64, kv_heads=8, seqlen_kv=8192, dim=128, block_N=128, block_H=64,
             num_stages=2, threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("gqa_decode_fp16_b16_h64_kv8_s8192_d128", gqa_decode, p, _gqa_inputs,
                    _gqa_ref, _gqa_expected(p), rtol=1e-2,
                    tags=("attention", "float16", "decode", "gqa"),
                    note="8 query heads per KV head padded to a 64-row gemm tile; one block "
                         "per (kv head, batch) = 128 blocks streaming 512 MiB of KV"))
    return out


# (block_M, block_N, num_stages, threads); block_M=64 only with 128 threads (one warpgroup)
_FA_CONFIGS = [
    (64, 32, 1, 128), (64, 64, 1, 128), (64, 64, 2, 128), (64, 128, 1, 128), (64, 128, 2, 128),
    (128, 32, 2, 128), (128, 64, 1, 128), (128, 64, 2, 256), (128, 128, 1, 128),
    (128, 128, 1, 256), (128, 128, 2, 256), (128, 64, 1, 256),
]


def sweeps():
    out, names = [], {"fa_fwd": []}
    for bM, bN, s, t in _FA_CONFIGS:
        name = f"sweep_fafwd_bm{bM}_bn{bN}_s{s}_t{t}"
        out.append(_fa_case(name, _fa_params(bM=bM, bN=bN, stages=s, threads=t), sweep="fa_fwd",
                            note="B=4 H=32 S=2048 D=128, non-causal"))
        names["fa_fwd"].append(name)
    return out, names

"""Upstream-style DeepSeek MLA decoding attention: examples/deepseek_mla/example_mla_decode.py
(flashattn) of github tile-ai/tilelang, with its two paths -- the no-split kernel upstream's
main() runs (num_split = 1) and the split-KV kernel followed by a combine launch (num_split > 1).

MLA decode attends every one of the `heads` query heads of a token to one shared latent KV cache
(kv_head_num = 1): the scores are q k^T + q_pe k_pe^T over the dim = 512 latent and the
pe_dim = 64 rotary part, and the values are the latent KV itself (no separate V).  Counting
conventions are upstream.py's (its module docstring).
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import generator, nan_out, nbytes, randn

LOG2E = 1.44269504


# ============================================================================= kernel
@tilelang.jit
def mla_decode(batch, heads, kv_head_num, seqlen_kv, dim, pe_dim, block_N=64, block_H=64,
               num_split=1, dtype="float16", accum_dtype="float32"):
    """examples/deepseek_mla/example_mla_decode.py (flashattn): 256 threads, T.Pipelined with 2
    stages, FullCol gemm policy, swizzled O_shared (and S_shared in the split kernel),
    T.use_swizzle(10) in the split kernel, 128-thread combine, as upstream.

    num_split == 1 (upstream main()'s path): one launch (heads / block_H, batch); each block
    keeps block_H query heads (Q and Q_pe) in shared memory and walks the whole KV cache in
    block_N-key tiles: acc_s = Q KV^T + Q_pe K_pe^T, online softmax in base 2, acc_o += P KV.
    num_split > 1: launch 1 (batch, heads / block_H, num_split) does the same over one
    1/num_split slice and writes its partial output and base-2 log-sum-exp; launch 2
    (heads, batch) rescales the num_split partials by exp2(lse_split - lse_total) and sums them.

    Changed for the harness: no out_idx (every tensor is an argument; glse and Output_partial
    are unused by the no-split path, as upstream's main_no_split); dtype / accum_dtype are
    parameters (upstream fixes float16 / float).  Nothing else changed."""
    scale = (1.0 / (dim + pe_dim)) ** 0.5 * LOG2E  # log2(e)
    kv_group_num = heads // kv_head_num
    VALID_BLOCK_H = min(block_H, kv_group_num)
    assert kv_head_num == 1, "kv_head_num must be 1"
    shape_q = [batch, heads, dim]
    shape_qpe = [batch, heads, pe_dim]
    shape_kv = [batch, seqlen_kv, kv_head_num, dim]
    shape_kpe = [batch, seqlen_kv, kv_head_num, pe_dim]
    shape_lse = [batch, heads, num_split]
    shape_part = [batch, heads, num_split, dim]

    @T.macro
    def flash_attn(
            Q: T.Tensor(shape_q, dtype),
            Q_pe: T.Tensor(shape_qpe, dtype),
            KV: T.Tensor(shape_kv, dtype),
            K_pe: T.Tensor(shape_kpe, dtype),
            Output: T.Tensor(shape_q, dtype),
    ):
        with T.Kernel(heads // VALID_BLOCK_H, batch, threads=256) as (hid, bid):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            O_shared = T.alloc_shared([block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            cur_kv_head = hid // (kv_group_num // block_H)
            T.annotate_layout({O_shared: tilelang.layout.make_swizzled_layout(O_shared)})

            T.copy(Q[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, :], Q_shared)
            T.copy(Q_pe[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for k in T.Pipelined(T.ceildiv(seqlen_kv, block_N), num_stages=2):
                T.copy(KV[bid, k * block_N:(k + 1) * block_N, cur_kv_head, :], KV_shared)
                T.copy(K_pe[bid, k * block_N:(k + 1) * block_N, cur_kv_head, :], K_pe_shared)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, :])

    @T.macro
    def flash_attn_split(
            Q: T.Tensor(shape_q, dtype),
            Q_pe: T.Tensor(shape_qpe, dtype),
            KV: T.Tensor(shape_kv, dtype),
            K_pe: T.Tensor(shape_kpe, dtype),
            glse: T.Tensor(shape_lse, dtype),
            Output_partial: T.Tensor(shape_part, dtype),
    ):
        with T.Kernel(batch, heads // VALID_BLOCK_H, num_split, threads=256) as (bid, hid, bz):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            S_shared = T.alloc_shared([block_H, block_N], dtype)
            Q_pe_shared = T.alloc_shared([block_H, pe_dim], dtype)
            KV_shared = T.alloc_shared([block_N, dim], dtype)
            K_pe_shared = T.alloc_shared([block_N, pe_dim], dtype)
            O_shared = T.alloc_shared([block_H, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_H], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_H], accum_dtype)
            scores_scale = T.alloc_fragment([block_H], accum_dtype)
            scores_sum = T.alloc_fragment([block_H], accum_dtype)
            logsum = T.alloc_fragment([block_H], accum_dtype)

            cur_kv_head = hid // (kv_group_num // block_H)
            T.use_swizzle(10)
            T.annotate_layout({
                O_shared: tilelang.layout.make_swizzled_layout(O_shared),
                S_shared: tilelang.layout.make_swizzled_layout(S_shared),
            })

            T.copy(Q[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, :], Q_shared)
            T.copy(Q_pe[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, :], Q_pe_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for k in T.Pipelined(T.ceildiv((seqlen_kv // num_split), block_N), num_stages=2):
                kv_start = (seqlen_kv // num_split) * bz + k * block_N
                kv_end = (seqlen_kv // num_split) * bz + (k + 1) * block_N
                T.copy(KV[bid, kv_start:kv_end, cur_kv_head, :], KV_shared)
                T.copy(K_pe[bid, kv_start:kv_end, cur_kv_head, :], K_pe_shared)
                T.clear(acc_s)
                T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
                       policy=T.GemmWarpPolicy.FullCol)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                T.copy(acc_s, S_shared)
                T.copy(S_shared, acc_s_cast)
                for i in T.Parallel(block_H):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.gemm(acc_s_cast, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(block_H, dim):
                acc_o[i, j] /= logsum[i]
            for i in T.Parallel(block_H):
                logsum[i] = T.log2(logsum[i]) + scores_max[i] * scale
            T.copy(logsum, glse[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, bz])
            T.copy(acc_o, O_shared)
            T.copy(O_shared,
                   Output_partial[bid, hid * VALID_BLOCK_H:(hid + 1) * VALID_BLOCK_H, bz, :])

    @T.macro
    def combine(
            glse: T.Tensor(shape_lse, dtype),
            Output_partial: T.Tensor(shape_part, dtype),
            Output: T.Tensor(shape_q, dtype),
    ):
        with T.Kernel(heads, batch, threads=128) as (hid, bz):
            po_local = T.alloc_fragment([dim], dtype)
            o_accum_local = T.alloc_fragment([dim], accum_dtype)
            lse_local_split = T.alloc_local([1], accum_dtype)
            lse_logsum_local = T.alloc_local([1], accum_dtype)
            lse_max_local = T.alloc_local([1], accum_dtype)
            scale_local = T.alloc_local([1], accum_dtype)

            T.annotate_layout({
                lse_logsum_local: T.Fragment(lse_logsum_local.shape, forward_thread_fn=lambda i: i),
            })

            T.clear(lse_logsum_local)
            T.clear(o_accum_local)
            lse_max_local[0] = -T.infinity(accum_dtype)
            for k in T.serial(num_split):
                lse_max_local[0] = T.max(lse_max_local[0], glse[bz, hid, k])
            for k in T.Pipelined(num_split, num_stages=1):
                lse_local_split[0] = glse[bz, hid, k]
                lse_logsum_local[0] += T.exp2(lse_local_split[0] - lse_max_local[0])
            lse_logsum_local[0] = T.log2(lse_logsum_local[0]) + lse_max_local[0]
            for k in T.serial(num_split):
                for i in T.Parallel(dim):
                    po_local[i] = Output_partial[bz, hid, k, i]
                lse_local_split[0] = glse[bz, hid, k]
                scale_local[0] = T.exp2(lse_local_split[0] - lse_logsum_local[0])
                for i in T.Parallel(dim):
                    o_accum_local[i] += po_local[i] * scale_local[0]
            for i in T.Parallel(dim):
                Output[bz, hid, i] = o_accum_local[i]

    @T.prim_func
    def main_split(
            Q: T.Tensor(shape_q, dtype),
            Q_pe: T.Tensor(shape_qpe, dtype),
            KV: T.Tensor(shape_kv, dtype),
            K_pe: T.Tensor(shape_kpe, dtype),
            glse: T.Tensor(shape_lse, dtype),
            Output_partial: T.Tensor(shape_part, dtype),
            Output: T.Tensor(shape_q, dtype),
    ):
        flash_attn_split(Q, Q_pe, KV, K_pe, glse, Output_partial)
        combine(glse, Output_partial, Output)

    @T.prim_func
    def main_no_split(
            Q: T.Tensor(shape_q, dtype),
            Q_pe: T.Tensor(shape_qpe, dtype),
            KV: T.Tensor(shape_kv, dtype),
            K_pe: T.Tensor(shape_kpe, dtype),
            glse: T.Tensor(shape_lse, dtype),
            Output_partial: T.Tensor(shape_part, dtype),
            Output: T.Tensor(shape_q, dtype),
    ):
        flash_attn(Q, Q_pe, KV, K_pe, Output)

    if num_split > 1:
        return main_split
    return main_no_split


# ============================================================================= inputs, reference
def _mla_inputs(p, device):
    B, H, HKV, S, D, DPE, ns = (p["batch"], p["heads"], p["kv_head_num"], p["seqlen_kv"], p["dim"],
                                p["pe_dim"], p["num_split"])
    dt = p.get("dtype", "float16")
    g = generator(device, 0)
    # upstream's profiler supplies torch.randn for every input (TensorSupplyType.Randn)
    return [randn((B, H, D), dt, device, g), randn((B, H, DPE), dt, device, g),
            randn((B, S, HKV, D), dt, device, g), randn((B, S, HKV, DPE), dt, device, g),
            nan_out((B, H, ns), dt, device), nan_out((B, H, ns, D), dt, device),
            nan_out((B, H, D), dt, device)]


def _mla_ref(args):
    """Upstream's ref_program in float32: softmax((q kv^T + q_pe k_pe^T) / sqrt(dim + pe_dim)) kv
    over the one latent KV head (kv_head_num = 1)."""
    import torch

    q, q_pe, kv, k_pe = (a.float() for a in args[:4])
    D, DPE = q.shape[-1], q_pe.shape[-1]
    kv0, kpe0 = kv[:, :, 0, :], k_pe[:, :, 0, :]                # (B, S, D), (B, S, DPE)
    s = (torch.einsum("bhd,bsd->bhs", q, kv0) + torch.einsum("bhd,bsd->bhs", q_pe, kpe0))
    o = torch.einsum("bhs,bsd->bhd", torch.softmax(s / (D + DPE) ** 0.5, dim=-1), kv0)
    return {6: o}


# ============================================================================= expected
def _mla_expected(p) -> Expected:
    B, H, S, D, DPE = p["batch"], p["heads"], p["seqlen_kv"], p["dim"], p["pe_dim"]
    bN, bH, ns = p["block_N"], p["block_H"], p["num_split"]
    assert p["kv_head_num"] == 1
    b = nbytes(p["dtype"])
    vH = min(bH, H)                        # query heads per block (VALID_BLOCK_H)
    assert H % vH == 0 and vH == bH, "the derivation assumes whole head tiles"
    hb = H // vH                           # head blocks per batch entry
    split = ns > 1
    L = S // ns if split else S            # keys per block
    assert L % bN == 0, "the derivation assumes whole key tiles"
    nk = L // bN                           # iterations per block
    blocks1 = B * hb * (ns if split else 1)
    iters = blocks1 * nk
    T_COMBINE = 128                        # the combine kernel's threads
    blocks2 = H * B if split else 0        # combine kernel

    # three gemms per iteration: acc_s = Q KV^T (bH x bN x D), += Q_pe K_pe^T (bH x bN x DPE),
    # acc_o += P KV (bH x D x bN)
    tensor = iters * 2 * bH * bN * (D + DPE + D)
    # per iteration: scores_scale = exp2(prev*scale - max*scale) (mul, mul, sub = 3 per row);
    # reduce_max and reduce_sum (1 per score each); acc_s = exp2(s*scale - max*scale)
    # (3 per score); logsum = logsum*scale + sum (FMA, 2 per row); acc_o *= scale (1 per acc_o
    # element): 5 per score, 5 per row, 1 per acc_o element.  Per block acc_o /= logsum (bH x D).
    cuda = iters * (5 * bH * bN + 5 * bH + bH * D) + blocks1 * bH * D
    sfu = iters * (bH + bH * bN)           # exp2 of the rescale factors and of the scores
    # per block Q and Q_pe (bH rows), per iteration a bN-key tile of KV and of K_pe
    read = blocks1 * bH * (D + DPE) * b + iters * bN * (D + DPE) * b
    # per block the bH x D output (or partial output) tile
    write = blocks1 * bH * D * b
    # Q, Q_pe, KV, K_pe, Output, each in full
    unique = (B * H * (D + DPE) + B * S * (D + DPE) + B * H * D) * b
    if split:
        # split kernel, per block: logsum = log2(logsum) + max*scale (FMA, 2 per row; one log2
        # per row); the bH lse values are written too.
        cuda += blocks1 * 2 * bH
        sfu += blocks1 * bH
        write += blocks1 * bH * b
        # combine kernel, per block: the scalar statements (alloc_local) run in every one of its
        # 128 threads: the running max over the splits (1 per split), lse_logsum += exp2(a - b)
        # (add, sub per split), log2(.) + max (add) once, scale = exp2(a - b) (sub per split);
        # o_accum += po * scale (FMA) per split and dim element.
        cuda += blocks2 * (4 * ns * T_COMBINE + T_COMBINE + 2 * ns * D)
        # exp2 twice per split and thread, log2 once per thread
        sfu += blocks2 * (2 * ns * T_COMBINE + T_COMBINE)
        # the scalar glse loads of its three loops over the splits are one element per block
        # and split (every thread reads the same address); the ns partial rows of D values
        read += blocks2 * (3 * ns * b + ns * D * b)
        # one D row of Output per block
        write += blocks2 * D * b
        # glse and Output_partial, in full
        unique += (B * H * ns + B * H * ns * D) * b
    return Expected(tensor_flops=tensor, cuda_flops=cuda, sfu_ops=sfu,
                    global_read_bytes=read, global_write_bytes=write, global_atomic_bytes=0,
                    unique_bytes=unique)


# ============================================================================= cases
def _mla_params(batch, seqlen_kv, num_split, heads=128, dim=512, pe_dim=64, block_N=64,
                block_H=64, dtype="float16"):
    return dict(batch=batch, heads=heads, kv_head_num=1, seqlen_kv=seqlen_kv, dim=dim,
                pe_dim=pe_dim, block_N=block_N, block_H=block_H, num_split=num_split,
                dtype=dtype, accum_dtype="float32")


def _mla_case(name, p, note) -> Case:
    path = "split-kv" if p["num_split"] > 1 else "no-split"
    return Case(name, mla_decode, p, _mla_inputs, _mla_ref, _mla_expected(p), rtol=1e-2,
                tags=("attention", "decode", "mla", path, "upstream", p["dtype"]),
                note="examples/deepseek_mla/example_mla_decode.py (flashattn); " + note)


def cases() -> list[Case]:
    return [
        _mla_case("up_mla_decode_fp16_b64_h128_kv8192_nosplit", _mla_params(64, 8192, 1),
                  "upstream main()'s path and tiles (num_split = 1, block_N = block_H = 64, "
                  "heads 128, kv_heads 1, kv_ctx 8192, dim 512 + pe 64); batch 64 (upstream's "
                  "CLI default is 132): 128 blocks of 128 key tiles, one wave"),
        _mla_case("up_mla_decode_split8_fp16_b16_h128_kv8192", _mla_params(16, 8192, 8),
                  "split-KV path: KV split 8 ways (256 blocks of 16 key tiles), then a combine "
                  "launch of 2048 blocks; upstream's tiles and shapes, batch 16"),
        _mla_case("up_mla_decode_split16_fp16_b4_h128_kv32768", _mla_params(4, 32768, 16),
                  "split-KV path, long context: kv_ctx 32768 split 16 ways (128 blocks of 32 "
                  "key tiles), then a combine launch of 512 blocks; batch 4"),
        # session 12: written after the division rule, predicted before they ran
        _mla_case("up_mla_decode_fp16_b32_h128_kv4096_nosplit", _mla_params(32, 4096, 1),
                  "no-split path, half a wave (64 blocks of 64 key tiles); written after the division "
                  "rule, predicted before it ran"),
        # session 13: written after the shared-memory hop rule, predicted before it ran
        _mla_case("up_mla_decode_fp16_b96_h128_kv4096_nosplit", _mla_params(96, 4096, 1),
                  "no-split path, 192 blocks of 64 key tiles (1.5 waves); written after the hop rule, "
                  "predicted before it ran"),
        _mla_case("up_mla_decode_split4_fp16_b32_h128_kv8192", _mla_params(32, 8192, 4),
                  "split-KV path, 4 ways (256 blocks of 32 key tiles) and the combine launch; written "
                  "after the division rule, predicted before it ran"),
    ]


# Per kernel, overrides that shrink a case for CPU tests (as upstream.TINY)
TINY = [(mla_decode, lambda p: dict(batch=2, heads=128, seqlen_kv=64 * 4 * p["num_split"]))]


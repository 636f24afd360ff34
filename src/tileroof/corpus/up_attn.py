"""Upstream-style flash-attention forward kernels in the BSHD layout (github tile-ai/tilelang,
examples/flash_attention/), of families the corpus lacks: the GQA forward (query heads in groups
sharing one KV head) and the MHA forward with upstream's own tiles and pass configs.

    cases()            the kernels at upstream's tiles, non-causal and causal
    TINY               per-kernel overrides that shrink a case for CPU tests

Counting conventions are upstream.py's (its module docstring): tensor FLOPs 2*M*N*K per T.gemm
execution on the whole tile; CUDA-core FLOPs per element-level float result (add, sub, mul, div,
max = 1, a*b+c = 2, T.reduce_* 1 per source element; integer index math, integer comparisons and
T.if_then_else free); bytes as issued to global memory by tile copies, summed over every block
and loop iteration.

Both kernels are upstream's flashattn (MMA0 / Softmax / Rescale / MMA1 macros, one block per
(query tile bx, query head by, batch bz), a T.Pipelined loop over key tiles, the causal mask
applied by filling acc_s with 0 / -inf before the Q K^T gemm).  As upstream, the running max has
no -inf guard: with block_M == block_N (every case here) no row of a key tile the loop visits is
wholly masked, so no exp2(-inf - -inf) arises.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn

LOG2E = 1.44269504


# ============================================================================= kernels
def _fwd_macros(k_head, block_M, block_N, dim, scale, is_causal, dtype, accum_dtype, q_shape,
                kv_shape):
    """Upstream's four macros; k_head(by) is the K/V head a query head reads (by // groups for
    GQA, by for MHA)."""

    @T.macro
    def MMA0(
        K: T.Tensor(kv_shape, dtype),
        Q_shared: T.SharedBuffer([block_M, dim], dtype),
        K_shared: T.SharedBuffer([block_N, dim], dtype),
        acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype),
        k: T.int32,
        bx: T.int32,
        by: T.int32,
        bz: T.int32,
    ):
        T.copy(K[bz, k * block_N:(k + 1) * block_N, k_head(by), :], K_shared)
        if is_causal:
            for i, j in T.Parallel(block_M, block_N):
                acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0,
                                             -T.infinity(acc_s.dtype))
        else:
            T.clear(acc_s)
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def MMA1(
        V: T.Tensor(kv_shape, dtype),
        V_shared: T.SharedBuffer([block_N, dim], dtype),
        acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
        acc_o: T.FragmentBuffer([block_M, dim], accum_dtype),
        k: T.int32,
        by: T.int32,
        bz: T.int32,
    ):
        T.copy(V[bz, k * block_N:(k + 1) * block_N, k_head(by), :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def Softmax(
            acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype),
            acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
            scores_max: T.FragmentBuffer([block_M], accum_dtype),
            scores_max_prev: T.FragmentBuffer([block_M], accum_dtype),
            scores_scale: T.FragmentBuffer([block_M], accum_dtype),
            scores_sum: T.FragmentBuffer([block_M], accum_dtype),
            logsum: T.FragmentBuffer([block_M], accum_dtype),
    ):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        for i in T.Parallel(block_M):
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
        for i, j in T.Parallel(block_M, block_N):
            # exp(x - max) as exp2(x * log2(e) - max * log2(e)): one FFMA instead of FADD + FMUL
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(
            acc_o: T.FragmentBuffer([block_M, dim], accum_dtype),
            scores_scale: T.FragmentBuffer([block_M], accum_dtype),
    ):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    return MMA0, MMA1, Softmax, Rescale


def _fwd_body(batch, heads, seq_len, dim, is_causal, k_head, kv_heads, block_M, block_N,
              num_stages, threads, dtype, accum_dtype, pipeline=None):
    """The PrimFunc both @tilelang.jit kernels below return; pipeline, when given, holds the
    order / stage / group of T.Pipelined (the wgmma-pipelined example's schedule)."""
    scale = (1.0 / dim) ** 0.5 * LOG2E  # log2(e)
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, kv_heads, dim]
    MMA0, MMA1, Softmax, Rescale = _fwd_macros(k_head, block_M, block_N, dim, scale, is_causal,
                                               dtype, accum_dtype, q_shape, kv_shape)
    schedule = pipeline or {}

    @T.prim_func
    def main(
            Q: T.Tensor(q_shape, dtype),
            K: T.Tensor(kv_shape, dtype),
            V: T.Tensor(kv_shape, dtype),
            Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N))

            for k in T.Pipelined(loop_range, num_stages=num_stages, **schedule):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum,
                        logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


@tilelang.jit
def gqa_fwd_bshd(batch, heads, seq_len, dim, is_causal=False, groups=8, block_M=64, block_N=64,
                 num_stages=2, threads=128, dtype="float16", accum_dtype="float32"):
    """GQA flash-attention forward, examples/flash_attention/example_gqa_fwd_bshd.py (flashattn):
    Q, Output (batch, seq, heads, dim); K, V (batch, seq, heads // groups, dim) -- `groups` is
    upstream's: the number of query heads sharing one KV head, query head by reads KV head
    by // groups.  Upstream's main() tiles (block_M = block_N = 64, num_stages=2, threads=128) are
    the defaults; upstream's @autotune wrapper and out_idx=[3] are dropped (no autotuning here;
    the harness passes Output), and dtype / accum_dtype are parameters (upstream fixes fp16 /
    float)."""
    assert heads % groups == 0
    return _fwd_body(batch, heads, seq_len, dim, is_causal, lambda by: by // groups,
                     heads // groups, block_M, block_N, num_stages, threads, dtype, accum_dtype)


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def mha_fwd_bshd(batch, heads, seq_len, dim, is_causal=False, block_M=128, block_N=128,
                 num_stages=1, threads=128, dtype="float16", accum_dtype="float32"):
    """MHA flash-attention forward in BSHD, examples/flash_attention/example_mha_fwd_bshd.py
    (flashattn): Q, K, V, Output all (batch, seq, heads, dim).  Upstream's main() tiles
    (block_M = block_N = 128, num_stages=1, threads=128) and its pass config (fast math) are
    kept; the @autotune wrapper and out_idx=[3] are dropped, dtype / accum_dtype are
    parameters."""
    return _fwd_body(batch, heads, seq_len, dim, is_causal, lambda by: by, heads, block_M,
                     block_N, num_stages, threads, dtype, accum_dtype)


@tilelang.jit
def mha_fwd_bshd_wgmma(batch, heads, seq_len, dim, is_causal=False, block_M=128, block_N=128,
                       num_stages=2, threads=256, dtype="float16", accum_dtype="float32"):
    """MHA forward in BSHD, examples/flash_attention/example_mha_fwd_bshd_wgmma_pipelined.py: as
    mha_fwd_bshd with upstream's hand schedule of the key loop (T.Pipelined order / stage /
    group: the K copy and Q K^T of tile k+1 overlap the softmax and P V of tile k) and its tiles
    (128 x 128, num_stages=2, threads=256); no pass configs, as upstream.
    Changed for tilelang 0.1.15, which has no T.Pipelined(group=): upstream's six per-group
    order / stage entries are written out per statement (see below).  0.1.15's warp-specialised
    TMA lowering does not use them: lowered for sm_90 on CPU, this kernel's CUDA source is the
    same as with num_stages=2 alone (and as with other order / stage lists) -- a TMA producer
    warpgroup feeding two consumer warpgroups that run each key tile's Q K^T, softmax and P V in
    sequence -- so upstream's intra-warpgroup overlap is not reproduced."""
    # upstream's per-group schedule, order=[-1, 0, 3, 1, -1, 2], stage=[-1, 0, 0, 1, -1, 1] over
    # group=[[0], [1, 2], [3..10], [11], [12], [13]], written out per statement (tilelang 0.1.15
    # has no group=): the K copy (-1), mask/clear + Q K^T (order 0, 1), the 8 softmax statements
    # (4..11), the rescale (2), the V copy (-1), P V (3)
    pipeline = dict(order=[-1, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 2, -1, 3],
                    stage=[-1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, -1, 1])
    return _fwd_body(batch, heads, seq_len, dim, is_causal, lambda by: by, heads, block_M,
                     block_N, num_stages, threads, dtype, accum_dtype, pipeline=pipeline)


# ============================================================================= inputs / refs
def _kv_heads(p):
    return p["heads"] // p.get("groups", 1)


def _fwd_inputs(p, device):
    g = generator(device, 0)
    B, S, H, D = p["batch"], p["seq_len"], p["heads"], p["dim"]
    HK = _kv_heads(p)
    dt = p.get("dtype", "float16")
    return [randn((B, S, H, D), dt, device, g), randn((B, S, HK, D), dt, device, g),
            randn((B, S, HK, D), dt, device, g), nan_out((B, S, H, D), dt, device)]


def _sdpa_bshd(q, k, v, causal):
    """float32 scaled-dot-product attention on BSHD tensors; K, V heads repeated to the query
    heads (query head h reads KV head h // groups, upstream's repeat_interleave); one batch at a
    time to bound the memory."""
    import torch
    import torch.nn.functional as F

    groups = q.shape[2] // k.shape[2]
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for b in range(q.shape[0]):
        qb = q[b].float().transpose(0, 1)                                     # (H, S, D)
        kb = k[b].float().repeat_interleave(groups, dim=1).transpose(0, 1)
        vb = v[b].float().repeat_interleave(groups, dim=1).transpose(0, 1)
        out[b] = F.scaled_dot_product_attention(qb, kb, vb, is_causal=causal).transpose(0, 1)
    return out


def _ref_for(causal):
    def ref(args):
        return {3: _sdpa_bshd(args[0], args[1], args[2], causal)}

    return ref


# ============================================================================= expected
def _fwd_iters(p):
    """Key-tile iterations summed over every block: query tile bx runs min(ceil(S/bN),
    ceil((bx+1)*bM/bN)) of them when causal (diagonal tiles are full gemms, masked with -inf),
    ceil(S/bN) otherwise; B * H blocks per query tile."""
    B, H, S, bM, bN = p["batch"], p["heads"], p["seq_len"], p["block_M"], p["block_N"]
    nq, nk = cdiv(S, bM), cdiv(S, bN)
    if p["is_causal"]:
        per_head = sum(min(nk, cdiv((bx + 1) * bM, bN)) for bx in range(nq))
    else:
        per_head = nq * nk
    return B * H * per_head


def _fwd_expected(p) -> Expected:
    B, H, S, D, bM, bN = p["batch"], p["heads"], p["seq_len"], p["dim"], p["block_M"], p["block_N"]
    assert S % bM == 0 and S % bN == 0, "the derivation assumes whole tiles"
    HK = _kv_heads(p)
    b = nbytes(p["dtype"])
    blocks = B * H * (S // bM)
    it = _fwd_iters(p)
    return Expected(
        # two gemms per iteration: S = Q K^T (bM x bN x D), O += P V (bM x D x bN)
        tensor_flops=it * 2 * (2 * bM * bN * D),
        # per iteration: per score element reduce_max 1, acc_s*scale - max*scale 3, reduce_sum 1;
        # per row scores_scale 3 (two muls, a sub) and logsum*scale + sum 2; acc_o *= scale 1 per
        # acc_o element.  Once per block acc_o /= logsum (1 per element).  The causal mask's
        # if_then_else on integer indices is free.
        cuda_flops=it * (5 * bM * bN + 5 * bM + bM * D) + blocks * bM * D,
        # exp2: bM rescale factors and bM*bN probabilities per iteration
        sfu_ops=it * (bM + bM * bN),
        # the Q tile once per block (all of Q once), a K and a V tile per iteration (KV head
        # by // groups: each KV tile is read by `groups` query heads' blocks)
        global_read_bytes=(blocks * bM * D + it * 2 * bN * D) * b,
        # the output tile once per block (all of Output once)
        global_write_bytes=blocks * bM * D * b,
        global_atomic_bytes=0,
        # Q and Output (B S H D each), K and V (B S HK D each); every key tile is some query
        # tile's diagonal, so causal touches all of K and V too
        unique_bytes=(2 * B * S * H * D + 2 * B * S * HK * D) * b,
    )


# ============================================================================= cases
def _params(batch, heads, seq_len, dim, is_causal, block_M, block_N, num_stages, threads,
            groups=None, dtype="float16"):
    p = dict(batch=batch, heads=heads, seq_len=seq_len, dim=dim, is_causal=is_causal)
    if groups is not None:
        p["groups"] = groups
    p.update(block_M=block_M, block_N=block_N, num_stages=num_stages, threads=threads, dtype=dtype,
             accum_dtype="float32")
    return p


def _case(name, kernel, p, example, note) -> Case:
    causal = p["is_causal"]
    tags = ("attention", "forward", "bshd", "upstream", p["dtype"])
    tags += (("gqa",) if "groups" in p else ()) + (("causal",) if causal else ())
    return Case(name=name, kernel=kernel, params=p, make_inputs=_fwd_inputs,
                reference=_ref_for(causal), expected=_fwd_expected(p), rtol=1e-2, tags=tags,
                note=f"examples/flash_attention/{example}; {note}")


def cases() -> list[Case]:
    out = []
    # GQA at upstream's main() tiles (64 x 64, 2 stages, 128 threads); 8 query heads per KV head
    p = _params(1, 64, 2048, 128, False, 64, 64, 2, 128, groups=8)
    out.append(_case("up_gqa_fwd_fp16_b1_h64_g8_s2048_d128", gqa_fwd_bshd, p,
                     "example_gqa_fwd_bshd.py (flashattn)",
                     "upstream's main() tiles and heads=64, with groups=8 (8 KV heads) and seq "
                     "2048 instead of 16 and 4096; non-causal; 32 x 64 = 2048 blocks, 32 key "
                     "tiles each"))
    p = _params(1, 32, 4096, 128, True, 64, 64, 2, 128, groups=4)
    out.append(_case("up_gqa_fwd_causal_fp16_b1_h32_g4_s4096_d128", gqa_fwd_bshd, p,
                     "example_gqa_fwd_bshd.py (flashattn)",
                     "upstream's main() tiles, causal; 4 query heads per KV head (8 KV heads); "
                     "query tile bx runs bx + 1 key tiles"))
    # MHA BSHD at upstream's main() tiles (128 x 128, 1 stage, 128 threads, fast math)
    p = _params(2, 32, 2048, 128, False, 128, 128, 1, 128)
    out.append(_case("up_mha_fwd_bshd_fp16_b2_h32_s2048_d128", mha_fwd_bshd, p,
                     "example_mha_fwd_bshd.py (flashattn)",
                     "upstream's main() tiles (128 x 128, 1 stage, 128 threads) and fast-math "
                     "pass config; batch 2 and seq 2048 instead of 8 and 4096; non-causal"))
    # the wgmma-pipelined variant's schedule and tiles (128 x 128, 2 stages, 256 threads)
    p = _params(1, 32, 4096, 128, True, 128, 128, 2, 256)
    out.append(_case("up_mha_fwd_bshd_wgmma_causal_fp16_b1_h32_s4096_d128", mha_fwd_bshd_wgmma, p,
                     "example_mha_fwd_bshd_wgmma_pipelined.py (flashattn)",
                     "upstream's tiles (128 x 128, 2 stages, 256 threads) and T.Pipelined "
                     "order / stage / group; batch 1 instead of 8; causal"))
    # session 12: written after the division rule, predicted before they ran (new shapes)
    p = _params(2, 32, 2048, 128, False, 64, 64, 2, 128, groups=8)
    out.append(_case("up_gqa_fwd_fp16_b2_h32_g8_s2048_d128", gqa_fwd_bshd, p,
                     "example_gqa_fwd_bshd.py (flashattn)",
                     "upstream's main() tiles; batch 2, 32 query heads over 4 KV heads; written after the "
                     "division rule, predicted before it ran"))
    p = _params(4, 16, 1024, 128, False, 128, 128, 1, 128)
    out.append(_case("up_mha_fwd_bshd_fp16_b4_h16_s1024_d128", mha_fwd_bshd, p,
                     "example_mha_fwd_bshd.py (flashattn)",
                     "upstream's main() tiles, a short launch (512 blocks of 8 key tiles); written after "
                     "the division rule, predicted before it ran"))
    return out


# ----------------------------------------------------------------------------- tiny params
TINY = [
    (gqa_fwd_bshd, lambda p: dict(batch=1, heads=2 * p["groups"], seq_len=4 * p["block_M"])),
    (mha_fwd_bshd, lambda p: dict(batch=1, heads=2, seq_len=4 * p["block_M"])),
    (mha_fwd_bshd_wgmma, lambda p: dict(batch=1, heads=2, seq_len=4 * p["block_M"])),
]


"""Blind set 2: TileLang's own examples (github tile-ai/tilelang, examples/) of kernel families the
rest of the corpus lacks, ported to tilelang 0.1.15 and never fitted on (a LATE family).

    blind2_hadamard_*     examples/hadamard_transform/example_hadamard.py (hadamard): a fast
                          Walsh-Hadamard transform per row: in-thread butterflies on a local
                          array, warp-shuffle rounds (T.tvm_warp_shuffle), a shared-memory
                          transpose between warps; no tile ops, no tensor cores
    blind2_online_softmax_*  examples/online_softmax/online_softmax.py (softmax_kernel): one
                          row per block, a two-pass (log-sum-exp, then normalise) softmax over a
                          whole-row 1-D fragment
    blind2_deepgemm_fp8_*  examples/deepseek_deepgemm/example_deepgemm_fp8_2xAcc.py (tl_gemm):
                          DeepSeek-style fp8 GEMM with per-(row, 128-k) A scales and per-(128 x
                          128) B scales, each k-tile's partial C promoted into a second float32
                          accumulator (the "2xAcc" trick)
    blind2_gdn_kkt_*      examples/gdn/example_chunk_scaled_dot_kkt.py
                          (tilelang_chunk_scaled_dot_kkt_fwd): gated delta net, beta-scaled
                          K K^T within each 64-token chunk, gated and strictly-lower masked
    blind2_gdn_delta_h_*  examples/gdn/example_chunk_delta_h.py
                          (tilelang_chunk_gated_delta_rule_fwd_h): gated delta net, the
                          chunk-recurrent state update (one block walks every chunk of a head
                          in sequence, the state in a fragment)
    blind2_nsa_fwd_*      examples/deepseek_nsa/example_tilelang_nsa_fwd.py
                          (native_sparse_attention): DeepSeek native sparse attention, the
                          selected-block branch: one 32-thread block per (token, kv head),
                          gathering the key/value blocks an index tensor names
    blind2_attn_sink_*    examples/attention_sink/example_mha_sink_fwd_bhsd.py (flashattn):
                          gpt-oss style causal sliding-window attention with a learned
                          per-head sink logit

Upstream version: each kernel follows the upstream file at the tile-ai/tilelang commit named in
its docstring and its case's note (a recent main; the ports are checked to elaborate and analyse
under tilelang 0.1.15, not yet compiled or run on a GPU); every @tilelang.jit below takes every argument (no out_idx, the
harness passes all of them, outputs pre-filled with NaN) and has no @autotune (the config is a
parameter).  What else had to change for 0.1.15 is said per kernel.

Counting conventions are upstream.py's (its module docstring): tensor FLOPs 2*M*N*K per T.gemm;
bytes as issued to global memory by tile copies, element loads / stores, summed over every block
and loop trip; scalar loads outside T.Parallel once per block and trip.  Only fields derived by
hand (each with its comment) are filled in; the rest are None.

    TINY               per-kernel overrides that shrink a case for CPU tests (the role of
                       upstream.py's TINY; tests/test_corpus_elaborates.py needs `*up_blind2.TINY`
                       in its _TINY list)
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import math

import tilelang
import tilelang.language as T
from tilelang.cuda.intrinsics import make_mma_swizzle_layout   # upstream: tilelang.intrinsics
from tilelang.layout import make_swizzled_layout

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn, torch_dtype

LOG2E = 1.44269504


# ============================================================================= kernels
# ----------------------------------------------------------------------------- Hadamard
def _is_pow_of_2(n):
    return isinstance(n, int) and n > 0 and (n & (n - 1)) == 0


def hadamard_config(n, dtype):
    """Upstream's launch arithmetic (threads per row, elements per thread, rounds)."""
    elem_size = {"float32": 4, "float16": 2, "bfloat16": 2}[dtype]
    logN = int(math.log2(n))
    threads = [0, 1, 1, 1, 2, 4, 8, 16, 32, 32, 128, 256, 256, 256, 256, 256][logN]
    thread_elem = n // threads
    thread_round = int(math.log2(thread_elem))
    warps = 1 if threads <= 32 else threads // 32
    warp_round = int(math.log2(threads / warps))
    warp_size = threads // warps
    block_round = int(math.log2(warps))
    exchange_round = n * elem_size // 32768 if n * elem_size > 32768 else 1
    thread_elem_in_smem = thread_elem // exchange_round if exchange_round > 1 else thread_elem
    return dict(threads=threads, thread_elem=thread_elem, thread_round=thread_round, warps=warps,
                warp_round=warp_round, warp_size=warp_size, block_round=block_round,
                exchange_round=exchange_round, thread_elem_in_smem=thread_elem_in_smem)


@tilelang.jit
def hadamard(b, n, dtype="float32"):
    """Unnormalised Walsh-Hadamard transform of each row, B = A @ H_n,
    examples/hadamard_transform/example_hadamard.py (hadamard) at commit 0973611 (tile-ai/tilelang):
    one block per row; each thread loads n/threads contiguous elements into a local array,
    does the in-thread butterfly rounds serially, then warp_round shuffle rounds
    (T.tvm_warp_shuffle + a select of a+b / b-a), and, with more than one warp, writes its
    elements to a swizzled shared (threads, n/threads) array, reads a transposed thread's back
    (exchange_round times if the row exceeds 32 KB), shuffles block_round more rounds and swaps
    back.  Changed: no out_idx (B is an argument); make_mma_swizzle_layout is imported from
    tilelang.cuda.intrinsics (0.1.15 has no tilelang.intrinsics)."""
    assert _is_pow_of_2(n), "n must be a power of 2"
    assert 2 <= n <= 32768, "n must be in [2, 32768]"
    cfg = hadamard_config(n, dtype)
    threads, thread_elem, thread_round = cfg["threads"], cfg["thread_elem"], cfg["thread_round"]
    warps, warp_round, warp_size = cfg["warps"], cfg["warp_round"], cfg["warp_size"]
    block_round, exchange_round = cfg["block_round"], cfg["exchange_round"]
    thread_elem_in_smem = cfg["thread_elem_in_smem"]

    @T.macro
    def warp_shfl(local: T.Tensor((thread_elem,), dtype), buf: T.Tensor((thread_elem,), dtype),
                  round: int):
        tx = T.get_thread_binding(0)
        for i in T.serial(round):
            tx_stride = 1 << i
            another_tx = tx ^ tx_stride
            sign = (tx >> i) & 1  # i-th lowest bit of tx: which of a+b / b-a this thread keeps

            for j in T.Pipelined(thread_elem, num_stages=1):
                buf[j] = T.tvm_warp_shuffle(
                    0xffffffff,  # mask of all threads
                    local[j],
                    another_tx % warp_size,
                    warp_size,
                    warp_size)
                local[j] = T.if_then_else(sign == 0, local[j] + buf[j], buf[j] - local[j])

    @T.prim_func
    def main(A: T.Tensor((b, n), dtype), B: T.Tensor((b, n), dtype)):
        with T.Kernel(b, threads=threads) as bx:
            local = T.alloc_local((thread_elem,), dtype)
            shared = T.alloc_shared((threads, thread_elem_in_smem), dtype)
            T.annotate_layout({shared: make_mma_swizzle_layout(shared)})
            tx = T.get_thread_binding(0)

            # 1. Load from HBM to register
            for i in T.vectorized(thread_elem):
                local[i] = A[bx, tx * thread_elem + i]

            # 2. Hadamard inside thread, n<=8
            for i in T.serial(thread_round):
                chunksize = 1 << (i + 1)
                chunknum = thread_elem // chunksize
                for j in T.serial(chunknum):
                    chunkbase = j * chunksize
                    for k in T.serial(chunksize // 2):
                        local[chunkbase + k] = local[chunkbase + k] + local[chunkbase + k + chunksize // 2]
                        local[chunkbase + k + chunksize // 2] = (
                            local[chunkbase + k] - 2 * local[chunkbase + k + chunksize // 2])

            # 3. Hadamard inside warp, n<=512 (warp shuffles, no shared memory)
            another_val = T.alloc_local((thread_elem,), dtype)

            warp_shfl(local, another_val, warp_round)

            # 4. Hadamard inside block, n<=32768
            if block_round > 0:
                warp_id = tx // warp_size
                lane_id = tx % warp_size
                src_tx = warp_id * warp_size + lane_id
                tgt_warp_id = tx % warps
                tgt_lane_id = tx // warps
                tgt_tx = tgt_warp_id * warp_size + tgt_lane_id

                # 4.1 Write to smem, swap, read from smem
                for cur_round in T.serial(exchange_round):
                    exchange_base = thread_elem_in_smem * cur_round
                    for j in T.vectorized(thread_elem_in_smem):
                        shared[src_tx, j] = local[exchange_base + j]

                    for j in T.vectorized(thread_elem_in_smem):
                        local[exchange_base + j] = shared[tgt_tx, j]

                # 4.2 Warp shuffle
                warp_shfl(local, another_val, block_round)

                # 4.3 Write to smem, swap, read from smem
                for cur_round in T.serial(exchange_round):
                    exchange_base = thread_elem_in_smem * cur_round
                    for j in T.vectorized(thread_elem_in_smem):
                        shared[tgt_tx, j] = local[exchange_base + j]

                    for j in T.vectorized(thread_elem_in_smem):
                        local[exchange_base + j] = shared[src_tx, j]

            # 5. Write back to HBM
            for i in T.vectorized(thread_elem):
                B[bx, tx * thread_elem + i] = local[i]

    return main


# ----------------------------------------------------------------------------- online softmax
@tilelang.jit
def online_softmax(M, N, dtype="float16"):
    """Row softmax, examples/online_softmax/online_softmax.py (softmax_kernel) at commit 06c86f1:
    one 128-thread block per row; BN = min(next_pow2(N), 8192) columns at a time into a 1-D
    fragment; pass 1 keeps lse = log2-sum-exp2 online over the NN = N / BN chunks (reduce_max,
    exp2, reduce_sum, a log2 per chunk), pass 2 re-reads the row and writes exp2(x*log2e - lse).
    Upstream's script shape (M = N = 8192, fp16) is the first case.  Changed: no out_idx."""
    BN = min(tilelang.math.next_power_of_2(N), 8192)
    NN = tilelang.cdiv(N, BN)
    accum_dtype = "float"
    scale = 1.44269504  # log2(e)

    @T.prim_func
    def main(X: T.Tensor([M, N], dtype), Y: T.Tensor([M, N], dtype)):
        with T.Kernel(M, threads=128) as (i_m):
            x = T.alloc_fragment([BN], dtype)
            y = T.alloc_fragment([BN], dtype)
            lse = T.alloc_fragment([1], accum_dtype)
            max_x = T.alloc_fragment([1], dtype)
            exp_x = T.alloc_fragment([BN], accum_dtype)
            sum_exp_x = T.alloc_fragment([1], accum_dtype)
            T.fill(lse, -T.infinity(accum_dtype))

            for i_n in T.Pipelined(0, NN):
                T.copy(X[i_m, i_n * BN:(i_n + 1) * BN], x)

                T.reduce_max(x, max_x, dim=0, clear=True)

                for j in T.Parallel(BN):
                    exp_x[j] = T.if_then_else(j + i_n * BN < N,
                                              T.exp2(x[j] * scale - max_x[0] * scale), 0)

                T.reduce_sum(exp_x, sum_exp_x, dim=0, clear=True)

                lse[0] = max_x[0] * scale + T.log2(T.exp2(lse[0] - max_x[0] * scale) + sum_exp_x[0])

            for i_n in T.Pipelined(0, NN):
                T.copy(X[i_m, i_n * BN:(i_n + 1) * BN], x)

                for j in T.Parallel(BN):
                    if j + i_n * BN < N:
                        y[j] = T.exp2(x[j] * scale - lse[0])

                T.copy(y, Y[i_m, i_n * BN:(i_n + 1) * BN])

    return main


# ----------------------------------------------------------------------------- DeepGEMM fp8 2xAcc
@tilelang.jit
def deepgemm_fp8_2xacc(M, N, K, block_N=128, in_dtype="float8_e4m3fn", out_dtype="bfloat16",
                       accum_dtype="float32"):
    """C = (A_fp8 * sA) @ (B_fp8 * sB)^T, examples/deepseek_deepgemm/example_deepgemm_fp8_2xAcc.py
    (tl_gemm) at commit 0985636: 128 x block_N x 128 tiles, 128 threads, 4 stages,
    T.use_swizzle(10); per k-tile the block multiplies its A scales (one per row, per 128 k) by
    the one B scale of its (128 n, 128 k) block into a shared vector, runs the fp8 gemm into a
    fresh fragment, adds it scaled into the float32 C_local_accum and clears it.  Changed: no
    out_idx; the fp8 dtype is spelled float8_e4m3fn (upstream's e4m3_float8 is 0.1.15's old
    name for it, which it still accepts); the scale tensors come last as upstream's signature."""
    group_size = 128
    block_M = 128
    block_K = 128

    A_shape = (M, K)
    Scales_A_shape = (M, T.ceildiv(K, group_size))
    B_shape = (N, K)
    Scales_B_shape = (T.ceildiv(N, group_size), T.ceildiv(K, group_size))
    A_shared_shape = (block_M, block_K)
    B_shared_shape = (block_N, block_K)
    C_shared_shape = (block_M, block_N)

    @T.prim_func
    def main(
            A: T.Tensor(A_shape, in_dtype),
            B: T.Tensor(B_shape, in_dtype),
            C: T.Tensor((M, N), out_dtype),
            scales_a: T.Tensor(Scales_A_shape, "float32"),
            scales_b: T.Tensor(Scales_B_shape, "float32"),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, in_dtype)
            C_shared = T.alloc_shared(C_shared_shape, out_dtype)
            Scale_C_shared = T.alloc_shared((block_M), "float32")
            C_local = T.alloc_fragment(C_shared_shape, accum_dtype)
            C_local_accum = T.alloc_fragment(C_shared_shape, accum_dtype)

            # Improve L2 Cache
            T.use_swizzle(panel_size=10)

            T.clear(C_local)
            T.clear(C_local_accum)
            K_iters = T.ceildiv(K, block_K)
            for k in T.Pipelined(K_iters, num_stages=4):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K], B_shared)
                Scale_B = scales_b[bx * block_N // group_size, k]
                for i in T.Parallel(block_M):
                    Scale_C_shared[i] = scales_a[by * block_M + i, k] * Scale_B

                T.gemm(A_shared, B_shared, C_local, transpose_B=True)
                # Promote to enable 2xAcc
                for i, j in T.Parallel(block_M, block_N):
                    C_local_accum[i, j] += C_local[i, j] * Scale_C_shared[i]
                T.clear(C_local)
            # TMA store
            T.copy(C_local_accum, C_shared)
            T.copy(C_shared, C[by * block_M, bx * block_N])

    return main


# ----------------------------------------------------------------------------- GDN: scaled K K^T
@tilelang.jit
def gdn_chunk_scaled_dot_kkt(B, S, H, DK, chunk_size=64, input_dtype="bfloat16",
                             output_dtype="bfloat16", accum_dtype="float32", use_g=True,
                             block_S=64, block_DK=64, threads=128, num_stages=2):
    """A[b, t, h, :] = strictly-lower (beta_t k_t . k_s) * exp(g_t - g_s) within each chunk,
    examples/gdn/example_chunk_scaled_dot_kkt.py (tilelang_chunk_scaled_dot_kkt_fwd) at commit
    3579a27: one block per (chunk, batch * head); Beta and G of the chunk to shared by element
    loads; over DK / block_DK k-tiles the K tile is copied to shared, scaled by beta into a
    fragment, and Beta_K @ K^T accumulated; then A *= exp(G_i - G_j) where G_i - G_j <= 0 and
    i > j, else 0 (T.If / T.Then / T.Else); out through a swizzled shared tile.  The config is
    upstream main()'s (B=1, S=32768, H=32, DK=128, block_DK=64, 128 threads, 2 stages).
    Changed: no out_idx; dtypes as strings."""
    K_shape = (B, S, H, DK)
    Beta_shape = (B, S, H)
    G_shape = (B, S, H)
    assert chunk_size == block_S, "chunk_size must be equal to block_S"
    BS = chunk_size
    output_shape = (B, S, H, BS)

    @T.prim_func
    def kernel(
        K: T.Tensor(K_shape, dtype=input_dtype),
        Beta: T.Tensor(Beta_shape, dtype=input_dtype),
        G: T.Tensor(G_shape, dtype=accum_dtype),
        A: T.Tensor(output_shape, dtype=output_dtype),
    ):
        with T.Kernel(T.ceildiv(S, block_S), B * H, threads=threads) as (bs, bbh):
            bb, bh = bbh // H, bbh % H
            Beta_shared = T.alloc_shared((block_S,), dtype=input_dtype, scope="shared")
            K_shared = T.alloc_shared((block_S, block_DK), dtype=input_dtype)
            A_shared = T.alloc_shared((block_S, block_S), dtype=output_dtype)
            Beta_K_fragment = T.alloc_fragment((block_S, block_DK), dtype=input_dtype)
            A_fragment = T.alloc_fragment((block_S, block_S), dtype=accum_dtype)

            # Tensor used for gated:
            G_shared = T.alloc_shared((block_S,), dtype=accum_dtype, scope="shared")
            G_diff_local = T.alloc_fragment((block_S, block_S), dtype=accum_dtype)

            T.annotate_layout({A_shared: make_swizzled_layout(A_shared)})

            T.fill(A_fragment, 0)
            T.disable_warp_group_reg_alloc()
            for i_s in T.Parallel(block_S):
                Beta_shared[i_s] = Beta[bb, bs * block_S + i_s, bh]

            for i_k in T.Pipelined(T.ceildiv(DK, block_DK), num_stages=num_stages):
                T.copy(K[bb, bs * block_S:(bs + 1) * block_S, bh, i_k * block_DK:(i_k + 1) * block_DK],
                       K_shared)
                for i_s, i_k2 in T.Parallel(block_S, block_DK):
                    Beta_K_fragment[i_s, i_k2] = K_shared[i_s, i_k2] * Beta_shared[i_s]
                T.gemm(Beta_K_fragment, K_shared, A_fragment, transpose_B=True)

            if use_g:
                for i_s in T.Parallel(block_S):
                    G_shared[i_s] = G[bb, bs * block_S + i_s, bh]
                for i_s1, i_s2 in T.Parallel(block_S, block_S):
                    G_diff_local[i_s1, i_s2] = G_shared[i_s1] - G_shared[i_s2]
                for i_s1, i_s2 in T.Parallel(block_S, block_S):
                    with T.If(G_diff_local[i_s1, i_s2] <= 0 and i_s1 > i_s2):
                        with T.Then():
                            A_fragment[i_s1, i_s2] = A_fragment[i_s1, i_s2] * T.exp(G_diff_local[i_s1, i_s2])
                        with T.Else():
                            A_fragment[i_s1, i_s2] = 0
            else:
                for i_s1, i_s2 in T.Parallel(block_S, block_S):
                    with T.If(i_s1 <= i_s2):  # noqa: SIM117
                        with T.Then():
                            A_fragment[i_s1, i_s2] = 0

            T.copy(A_fragment, A_shared)
            T.copy(A_shared, A[bb, bs * block_S:(bs + 1) * block_S, bh, :])

    return kernel


# ----------------------------------------------------------------------------- GDN: chunk state
@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def gdn_chunk_delta_h(B, S, H, DK, DV, input_dtype="bfloat16", output_dtype="bfloat16",
                      accum_dtype="float32", gate_dtype="float32", state_dtype="float32",
                      chunk_size=64, use_g=True, use_initial_state=True, store_final_state=True,
                      save_new_value=True, block_DK=64, block_DV=32, threads=128, num_stages=1):
    """Gated delta rule, the inter-chunk state pass, examples/gdn/example_chunk_delta_h.py
    (tilelang_chunk_gated_delta_rule_fwd_h) at commit 10bbc31: one block per (DV tile,
    batch * head) walks the S / chunk_size chunks in order, holding the state h (DK x block_DV)
    in a fragment and its bf16 copy in shared: per chunk it stores h, computes
    V_new = U - W h (gemm), stores V_new, decays V_new by exp2((g_last - g) log2e) (0 where
    positive), decays h by exp(g_last), and adds K^T V_new (gemm).  Upstream's defaults
    (block_DK 64 -- unused by the body --, block_DV 32, 128 threads) with all four flags on.
    Changed: no out_idx, no @autotune; dtypes as strings; the pass config is upstream's."""
    block_S = chunk_size
    BS = S // block_S

    K_shape = (B, S, H, DK)
    V_shape = (B, S, H, DV)
    W_shape = (B, S, H, DK)
    U_shape = (B, S, H, DV)
    G_shape = (B, S, H)
    h_shape = (B, BS, H, DK, DV)
    initial_state_shape = (B, H, DK, DV)
    final_state_shape = (B, H, DK, DV)

    @T.prim_func
    def kernel(
            K: T.Tensor(K_shape, dtype=input_dtype),
            W: T.Tensor(W_shape, dtype=input_dtype),
            U: T.Tensor(U_shape, dtype=input_dtype),
            G: T.Tensor(G_shape, dtype=gate_dtype),
            initial_state: T.Tensor(initial_state_shape, dtype=input_dtype),
            h: T.Tensor(h_shape, dtype=output_dtype),
            final_state: T.Tensor(final_state_shape, dtype=state_dtype),
            V_new: T.Tensor(V_shape, dtype=output_dtype),
    ):
        with T.Kernel(T.ceildiv(DV, block_DV), B * H, threads=threads) as (bv, bbh):
            bb, bh = bbh // H, bbh % H

            b_h_shared = T.alloc_shared((DK, block_DV), dtype=input_dtype)
            b_h_fragment = T.alloc_fragment((DK, block_DV), dtype=accum_dtype)

            U_shared = T.alloc_shared((block_S, block_DV), dtype=input_dtype)
            U_fragment = T.alloc_fragment((block_S, block_DV), dtype=accum_dtype)
            W_shared = T.alloc_shared((block_S, DK), dtype=input_dtype)
            V_new_fragment = T.alloc_fragment((block_S, block_DV), dtype=accum_dtype)
            V_new_shared = T.alloc_shared((block_S, block_DV), dtype=output_dtype)
            K_shared = T.alloc_shared((block_S, DK), dtype=input_dtype)
            G_last_local = T.alloc_local((1), dtype=gate_dtype)
            G_shared = T.alloc_shared((block_S, block_DV), dtype=gate_dtype)
            G_fragment = T.alloc_fragment((block_S, block_DV), dtype=gate_dtype)

            T.annotate_layout({
                b_h_shared: make_swizzled_layout(b_h_shared),
                U_shared: make_swizzled_layout(U_shared),
                W_shared: make_swizzled_layout(W_shared),
                V_new_shared: make_swizzled_layout(V_new_shared),
                K_shared: make_swizzled_layout(K_shared),
                G_shared: make_swizzled_layout(G_shared),
            })

            T.use_swizzle(10)

            if use_initial_state:
                T.copy(initial_state[bb, bh, 0:DK, bv * block_DV:(bv + 1) * block_DV], b_h_shared)
                T.copy(b_h_shared, b_h_fragment)
            else:
                T.clear(b_h_fragment)

            for i_s in T.Pipelined(T.ceildiv(S, block_S), num_stages=num_stages):
                # Store previous result to the hidden tensor, like the epilogue
                T.copy(b_h_shared, h[bb, i_s, bh, 0:DK, bv * block_DV:(bv + 1) * block_DV])

                # Recurrence
                T.copy(W[bb, i_s * block_S:(i_s + 1) * block_S, bh, 0:DK], W_shared)
                T.gemm(W_shared, b_h_shared, V_new_fragment, clear_accum=True)

                # U - W * S
                T.copy(U[bb, i_s * block_S:(i_s + 1) * block_S, bh, bv * block_DV:(bv + 1) * block_DV],
                       U_shared)
                T.copy(U_shared, U_fragment)
                for i_s2, i_v in T.Parallel(block_S, block_DV):
                    V_new_fragment[i_s2, i_v] = -V_new_fragment[i_s2, i_v] + U_fragment[i_s2, i_v]

                # Save V_new
                if save_new_value:
                    T.copy(V_new_fragment, dst=V_new_shared)
                    T.copy(V_new_shared,
                           V_new[bb, i_s * block_S:(i_s + 1) * block_S, bh, bv * block_DV:(bv + 1) * block_DV])

                T.copy(K[bb, i_s * block_S:(i_s + 1) * block_S, bh, 0:DK], K_shared)
                # use_g
                if use_g:
                    G_last_local[0] = G[bb, (i_s + 1) * block_S - 1, bh]
                    for i_s2, i_v in T.Parallel(block_S, block_DV):
                        G_shared[i_s2, i_v] = G[bb, i_s * block_S + i_s2, bh]
                    T.copy(G_shared, G_fragment)
                    for i_s2, i_v in T.Parallel(block_S, block_DV):
                        with T.If(G_last_local[0] - G_fragment[i_s2, i_v] <= 0):
                            with T.Then():
                                V_new_fragment[i_s2, i_v] = V_new_fragment[i_s2, i_v] * T.exp2(
                                    (G_last_local[0] - G_fragment[i_s2, i_v]) * 1.442695)
                            with T.Else():
                                V_new_fragment[i_s2, i_v] = 0
                    G_last_local[0] = T.exp2(G_last_local[0] * 1.442695)
                    for i_k, i_v in T.Parallel(DK, block_DV):
                        b_h_fragment[i_k, i_v] *= G_last_local[0]

                # Update intermediate results
                T.copy(V_new_fragment, V_new_shared)
                T.gemm(K_shared, V_new_shared, b_h_fragment, transpose_A=True)

                T.copy(b_h_fragment, b_h_shared)

            # Save final state
            if store_final_state:
                T.copy(b_h_fragment, final_state[bb, bh, 0:DK, bv * block_DV:(bv + 1) * block_DV])

    return kernel


# ----------------------------------------------------------------------------- NSA forward
@tilelang.jit(pass_configs={
    tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True,
    tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
})
def nsa_fwd(batch, heads, seq_len, dim, is_causal=True, scale=None, block_size=64, groups=1,
            selected_blocks=16):
    """Native sparse attention, the selected-blocks branch,
    examples/deepseek_nsa/example_tilelang_nsa_fwd.py (native_sparse_attention) at commit
    1565bf8: one 32-thread block per (token, value tile, batch * kv head); the token's `groups`
    query heads (G x D) stay in shared; over the selected_blocks entries of BlockIndices it
    gathers the named (block_size x D) K block when it starts at or before the token
    (i_s <= i_t, i_s >= 0: a branch on run-time data), masks causally, runs the G x BS x D
    score gemm, an online softmax, and the G x D x BS value gemm.  Upstream's pass configs
    (fast math, no TMA, no warp specialisation), 2 stages, 32 threads.  Changed: no out_idx."""
    if scale is None:
        scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    else:
        scale = scale * 1.44269504  # log2(e)

    head_kv = heads // groups
    q_shape = [batch, seq_len, heads, dim]
    kv_shape = [batch, seq_len, head_kv, dim]
    block_indices_shape = [batch, seq_len, head_kv, selected_blocks]
    block_indices_dtype = "int32"
    dtype = "float16"
    accum_dtype = "float"
    block_S = block_size
    block_T = min(128, tilelang.math.next_power_of_2(dim))

    NK = tilelang.cdiv(dim, block_T)
    NV = tilelang.cdiv(dim, block_T)
    assert NK == 1, "The key dimension can not be larger than 256"

    S = selected_blocks
    G = groups
    BS = block_S
    BK = BV = block_T
    num_stages = 2
    threads = 32

    @T.prim_func
    def native_sparse_attention(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        BlockIndices: T.Tensor(block_indices_shape, block_indices_dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(seq_len, NV, batch * head_kv, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([G, BK], dtype)
            K_shared = T.alloc_shared([BS, BK], dtype)
            V_shared = T.alloc_shared([BS, BV], dtype)
            O_shared = T.alloc_shared([G, BV], dtype)

            acc_s = T.alloc_fragment([G, BS], accum_dtype)
            acc_s_cast = T.alloc_fragment([G, BS], dtype)
            acc_o = T.alloc_fragment([G, BV], accum_dtype)
            scores_max = T.alloc_fragment([G], accum_dtype)
            scores_max_prev = T.alloc_fragment([G], accum_dtype)
            scores_scale = T.alloc_fragment([G], accum_dtype)
            scores_sum = T.alloc_fragment([G], accum_dtype)
            logsum = T.alloc_fragment([G], accum_dtype)

            i_t, i_v, i_bh = bx, by, bz
            i_b, i_h = i_bh // head_kv, i_bh % head_kv

            NS = S
            T.copy(Q[i_b, i_t, i_h * G:(i_h + 1) * G, :], Q_shared)

            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            for i in T.Pipelined(NS, num_stages=num_stages):
                i_s = BlockIndices[i_b, i_t, i_h, i] * BS
                if i_s <= i_t and i_s >= 0:
                    # [BS, BK]
                    T.copy(K[i_b, i_s:i_s + BS, i_h, :], K_shared)

                    if is_causal:
                        for i, j in T.Parallel(G, BS):
                            acc_s[i, j] = T.if_then_else(i_t >= (i_s + j), 0, -T.infinity(acc_s.dtype))
                    else:
                        T.clear(acc_s)

                    T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                    # Softmax
                    T.copy(scores_max, scores_max_prev)
                    T.fill(scores_max, -T.infinity(accum_dtype))
                    T.reduce_max(acc_s, scores_max, dim=1, clear=True)
                    for i in T.Parallel(G):
                        scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                    for i, j in T.Parallel(G, BS):
                        acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                    T.reduce_sum(acc_s, scores_sum, dim=1)
                    for i in T.Parallel(G):
                        logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                    T.copy(acc_s, acc_s_cast)

                    # Rescale
                    for i, j in T.Parallel(G, BV):
                        acc_o[i, j] *= scores_scale[i]

                    # V * softmax(Q * K)
                    T.copy(V[i_b, i_s:i_s + BS, i_h, i_v * BV:(i_v + 1) * BV], V_shared)
                    T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(G, BV):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[i_b, i_t, i_h * G:(i_h + 1) * G, i_v * BV:(i_v + 1) * BV])

    return native_sparse_attention


# ----------------------------------------------------------------------------- attention sink
@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
def attn_sink_fwd(batch, heads, seq_q, seq_kv, dim, window_size=None, sm_scale=None, block_M=64,
                  block_N=64, num_stages=1, threads=128, dtype="float16"):
    """Causal (optionally sliding-window) attention with a per-head sink logit,
    examples/attention_sink/example_mha_sink_fwd_bhsd.py (flashattn) at commit 00b47e9: as
    the BHSD flash-attention forward, but the key-tile loop runs from
    max(0, (bx*block_M + past_len - window) // block_N) to the diagonal, the mask keeps
    q - window < k <= q, a row max of -inf is reset to 0 (check_inf) when windowed, and after the
    loop logsum += exp2(sink*log2e - max*scale) (the sink takes probability mass but adds no
    value).  Changed: no out_idx, no @autotune (upstream main()'s non-tuned config is the
    parameters: 128 x 128 tiles, 2 stages, 256 threads); dtypes as strings; the macros are
    inlined as T.macro with the same bodies."""
    if window_size is not None:
        assert window_size % block_N == 0, "window_size must be divisible by block_N"

    if sm_scale is None:
        sm_scale = (1.0 / dim) ** 0.5
    scale = sm_scale * 1.44269504  # log2(e)
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]
    accum_dtype = "float"

    past_len = seq_kv - seq_q
    assert past_len >= 0, "seq_kv must be greater than or equal to seq_q"

    @T.macro
    def MMA0(K: T.Tensor(kv_shape, dtype), Q_shared: T.SharedBuffer([block_M, dim], dtype),
             K_shared: T.SharedBuffer([block_N, dim], dtype),
             acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype), k: T.int32, bx: T.int32,
             by: T.int32, bz: T.int32):
        T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], K_shared)
        for i, j in T.Parallel(block_M, block_N):
            q_idx = bx * block_M + i + past_len
            k_idx = k * block_N + j
            if window_size is not None:
                acc_s[i, j] = T.if_then_else(q_idx >= k_idx and q_idx < k_idx + window_size, 0,
                                             -T.infinity(acc_s.dtype))
            else:
                acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
        T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def MMA1(V: T.Tensor(kv_shape, dtype), V_shared: T.SharedBuffer([block_M, dim], dtype),
             acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
             acc_o: T.FragmentBuffer([block_M, dim], accum_dtype), k: T.int32, by: T.int32,
             bz: T.int32):
        T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], V_shared)
        T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

    @T.macro
    def Softmax(acc_s: T.FragmentBuffer([block_M, block_N], accum_dtype),
                acc_s_cast: T.FragmentBuffer([block_M, block_N], dtype),
                scores_max: T.FragmentBuffer([block_M], accum_dtype),
                scores_max_prev: T.FragmentBuffer([block_M], accum_dtype),
                scores_scale: T.FragmentBuffer([block_M], accum_dtype),
                scores_sum: T.FragmentBuffer([block_M], accum_dtype),
                logsum: T.FragmentBuffer([block_M], accum_dtype)):
        T.copy(scores_max, scores_max_prev)
        T.fill(scores_max, -T.infinity(accum_dtype))
        T.reduce_max(acc_s, scores_max, dim=1, clear=False)
        for i in T.Parallel(block_M):
            scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
        # check_inf (FlashAttention3): needed for sliding-window attention
        for i in T.Parallel(block_M):
            if window_size is not None:
                scores_max[i] = T.if_then_else(scores_max[i] == -T.infinity(accum_dtype), 0,
                                               scores_max[i])
            scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)

        for i, j in T.Parallel(block_M, block_N):
            acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
        T.reduce_sum(acc_s, scores_sum, dim=1)
        for i in T.Parallel(block_M):
            logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
        T.copy(acc_s, acc_s_cast)

    @T.macro
    def Rescale(acc_o: T.FragmentBuffer([block_M, dim], accum_dtype),
                scores_scale: T.FragmentBuffer([block_M], accum_dtype)):
        for i, j in T.Parallel(block_M, dim):
            acc_o[i, j] *= scores_scale[i]

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
        Sinks: T.Tensor([heads], dtype),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
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
            sinks = T.alloc_fragment([block_M], dtype)

            T.annotate_layout({
                Q_shared: make_swizzled_layout(Q_shared),
                K_shared: make_swizzled_layout(K_shared),
                V_shared: make_swizzled_layout(V_shared),
                O_shared: make_swizzled_layout(O_shared),
            })

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            for i in T.Parallel(block_M):
                sinks[i] = Sinks[by]

            end = T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))

            start = T.max(0, (bx * block_M + past_len - window_size) // block_N) if window_size is not None else 0

            for k in T.Pipelined(start, end, num_stages=num_stages):
                MMA0(K, Q_shared, K_shared, acc_s, k, bx, by, bz)
                Softmax(acc_s, acc_s_cast, scores_max, scores_max_prev, scores_scale, scores_sum, logsum)
                Rescale(acc_o, scores_scale)
                MMA1(V, V_shared, acc_s_cast, acc_o, k, by, bz)
            for i in T.Parallel(block_M):
                logsum[i] += T.exp2(sinks[i] * 1.44269504 - scores_max[i] * scale)  # the sink
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return main


# ============================================================================= inputs / references
# ----------------------------------------------------------------------------- Hadamard
def _hadamard_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["b"], p["n"]), p["dtype"], device, g), nan_out((p["b"], p["n"]), p["dtype"], device)]


def fwht(x):
    """x @ H_n (Sylvester order, H symmetric, unnormalised) by the butterfly recursion, float64:
    the same matrix upstream's reference builds with scipy.linalg.hadamard."""
    import torch

    b, n = x.shape
    y = x.double()
    h = 1
    while h < n:
        y = y.reshape(b, n // (2 * h), 2, h)
        a, c = y[:, :, 0], y[:, :, 1]
        y = torch.stack((a + c, a - c), dim=2)
        h *= 2
    return y.reshape(b, n)


def _hadamard_ref(args):
    return {1: fwht(args[0])}


# ----------------------------------------------------------------------------- online softmax
def _softmax_inputs(p, device):
    g = generator(device, 0)
    return [randn((p["M"], p["N"]), p["dtype"], device, g), nan_out((p["M"], p["N"]), p["dtype"], device)]


def _softmax_ref(args):
    return {1: args[0].double().softmax(dim=1)}


# ----------------------------------------------------------------------------- DeepGEMM fp8
def _per_token_cast_to_fp8(x):
    """upstream's per_token_cast_to_fp8: scale per (row, 128 columns) = amax / 448."""
    import torch

    m, n = x.shape
    xv = x.view(m, -1, 128)
    amax = xv.abs().float().amax(dim=2).view(m, -1).clamp(1e-4)
    return (xv * (448.0 / amax.unsqueeze(2))).to(torch.float8_e4m3fn).view(m, n), (amax / 448.0).view(m, -1)


def _per_block_cast_to_fp8(x):
    """upstream's per_block_cast_to_fp8: scale per (128 x 128) block = amax / 448 (shapes here are
    multiples of 128, so upstream's padding is not needed)."""
    import torch

    m, n = x.shape
    xv = x.view(m // 128, 128, n // 128, 128)
    amax = xv.abs().float().amax(dim=(1, 3), keepdim=True).clamp(1e-4)
    xs = (xv * (448.0 / amax)).to(torch.float8_e4m3fn)
    return xs.view(m, n).contiguous(), (amax / 448.0).view(m // 128, n // 128)


def _deepgemm_inputs(p, device):
    import torch

    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    A = torch.randn(M, K, device=device, generator=g).to(torch.bfloat16)
    B = torch.randn(N, K, device=device, generator=g).to(torch.bfloat16)
    A_fp8, A_scale = _per_token_cast_to_fp8(A)
    B_fp8, B_scale = _per_block_cast_to_fp8(B)
    return [A_fp8, B_fp8, nan_out((M, N), p["out_dtype"], device), A_scale.contiguous(), B_scale.contiguous()]


def _deepgemm_ref(args):
    """(A_fp8 * sA) @ (B_fp8 * sB)^T in float64: the kernel's per-k-tile sum of
    sA[m, k] * sB[n/128, k] * (A_fp8 B_fp8^T over the tile) is this product exactly."""
    A, B, _, sa, sb = args
    a = A.double() * sa.double().repeat_interleave(128, dim=1)
    b = B.double() * sb.double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)
    return {2: a @ b.T}


# ----------------------------------------------------------------------------- GDN
def _chunk_local_logsigmoid_cumsum(shape, chunk, device, g):
    """G as the gated delta net feeds it (upstream chunk_delta_h's prepare_input): logsigmoid of a
    normal sample, cumulated within each chunk along the sequence (dim 1), float32.  Within a
    chunk G decreases, so both kernels' gate conditions hold wherever the mask allows."""
    import torch

    B, S, H = shape
    x = torch.nn.functional.logsigmoid(torch.randn(B, S, H, device=device, generator=g))
    return x.view(B, S // chunk, chunk, H).cumsum(dim=2).view(B, S, H).contiguous()


def _kkt_inputs(p, device):
    g = generator(device, 0)
    B, S, H, DK, BS = p["B"], p["S"], p["H"], p["DK"], p["chunk_size"]
    K = randn((B, S, H, DK), p["input_dtype"], device, g)
    Beta = randn((B, S, H), p["input_dtype"], device, g)
    G = _chunk_local_logsigmoid_cumsum((B, S, H), BS, device, g)
    return [K, Beta, G, nan_out((B, S, H, BS), p["output_dtype"], device)]


def _kkt_ref(args):
    """A[b, c*BS + i, h, j] = beta_i (k_i . k_j) exp(g_i - g_j) for j < i (and g_i <= g_j),
    else 0, within each chunk c; beta * k rounded to the input dtype as the kernel's fragment."""
    import torch

    K, Beta, G, A = args
    B, S, H, DK = K.shape
    BS = A.shape[-1]
    NC = S // BS
    k = K.double().view(B, NC, BS, H, DK).permute(0, 1, 3, 2, 4)               # b c h i d
    bk = (K * Beta.unsqueeze(-1)).to(K.dtype).double().view(B, NC, BS, H, DK).permute(0, 1, 3, 2, 4)
    g = G.double().view(B, NC, BS, H).permute(0, 1, 3, 2)                        # b c h i
    a = bk @ k.transpose(-1, -2)                                                 # b c h i j
    gd = g.unsqueeze(-1) - g.unsqueeze(-2)
    i = torch.arange(BS, device=K.device)
    keep = (gd <= 0) & (i.view(BS, 1) > i.view(1, BS))
    a = torch.where(keep, a * torch.exp(gd), torch.zeros_like(a))
    return {3: a.permute(0, 1, 3, 2, 4).reshape(B, S, H, BS)}


def _delta_h_inputs(p, device):
    import torch

    g = generator(device, 0)
    B, S, H, DK, DV, BS = p["B"], p["S"], p["H"], p["DK"], p["DV"], p["chunk_size"]
    F = torch.nn.functional
    idt = p["input_dtype"]
    K = F.normalize(randn((B, S, H, DK), "float32", device, g), dim=-1, p=2).to(torch_dtype(idt))
    W = F.normalize(randn((B, S, H, DK), "float32", device, g), dim=-1, p=2).to(torch_dtype(idt))
    U = F.normalize(randn((B, S, H, DV), "float32", device, g), dim=-1, p=2).to(torch_dtype(idt))
    G = _chunk_local_logsigmoid_cumsum((B, S, H), BS, device, g)
    h0 = randn((B, H, DK, DV), idt, device, g)
    return [K, W, U, G, h0,
            nan_out((B, S // BS, H, DK, DV), p["output_dtype"], device),
            nan_out((B, H, DK, DV), p["state_dtype"], device),
            nan_out((B, S, H, DV), p["output_dtype"], device)]


def _delta_h_ref(args):
    """The chunk recurrence as the kernel runs it (all flags on), float64, with the kernel's two
    roundings to the input dtype (the state's shared copy, which the W gemm and the h store read;
    the gated V_new's shared copy, which the K^T gemm reads):
        h[c] = bf16(S);  v = U_c - W_c bf16(S);  V_new_c = v
        v' = v * exp(g_last - g) where g_last - g <= 0 else 0;  S = S exp(g_last) + K_c^T bf16(v')
    final_state = S."""
    import torch

    K, W, U, G, h0, h, fs, vn = args
    B, S, H, DK = K.shape
    DV = U.shape[-1]
    NT = h.shape[1]
    BS = S // NT
    lp = K.dtype
    st = h0.double()                                               # b h k v
    hs, vs = [], []
    for c in range(NT):
        sl = slice(c * BS, (c + 1) * BS)
        st_lp = st.to(lp).double()
        hs.append(st_lp)
        w = W[:, sl].double().permute(0, 2, 1, 3)                   # b h s k
        u = U[:, sl].double().permute(0, 2, 1, 3)                   # b h s v
        k = K[:, sl].double().permute(0, 2, 1, 3)
        g = G[:, sl].double().permute(0, 2, 1)                      # b h s
        v = u - w @ st_lp
        vs.append(v)
        gl = g[:, :, -1:]
        d = gl - g
        vg = torch.where((d <= 0).unsqueeze(-1), v * torch.exp(d).unsqueeze(-1),
                         torch.zeros_like(v)).to(lp).double()
        st = st * torch.exp(gl).unsqueeze(-1) + k.transpose(-1, -2) @ vg
    h_ref = torch.stack(hs, dim=1)                                  # b c h k v
    v_ref = torch.stack(vs, dim=2).reshape(B, H, S, DV).permute(0, 2, 1, 3)
    return {5: h_ref, 6: st, 7: v_ref}


# ----------------------------------------------------------------------------- NSA
def nsa_block_indices(B, T, Hkv, S, BS, device, g):
    """Upstream main()'s selection, vectorised: for each (b, t, h) a random subset of at most S
    of the blocks strictly before t's own block (block 0 while t < BS), padded with T (never
    taken: T * BS > t), sorted."""
    import torch

    nb = max(1, T // BS)
    lim = torch.clamp(torch.arange(T, device=device) // BS, min=1)                # blocks allowed
    r = torch.rand(B, T, Hkv, nb, device=device, generator=g)
    blk = torch.arange(nb, device=device)
    r = torch.where(blk.view(1, 1, 1, nb) < lim.view(1, T, 1, 1), r, torch.full_like(r, 2.0))
    order = r.argsort(dim=-1)[..., :S]
    valid = order < lim.view(1, T, 1, 1)
    if order.shape[-1] < S:                                                        # S > nb
        pad = torch.full((B, T, Hkv, S - order.shape[-1]), T, device=device, dtype=order.dtype)
        order = torch.cat((torch.where(valid, order, torch.full_like(order, T)), pad), dim=-1)
    else:
        order = torch.where(valid, order, torch.full_like(order, T))
    return order.sort(dim=-1)[0].to(torch.int32).contiguous()


def nsa_taken_share(p) -> float:
    """Share of the (token, selected entry) trips whose block is taken: min(S, max(1, t // BS))
    of the S entries of token t (every batch and kv head alike)."""
    T_, S, BS = p["seq_len"], p["selected_blocks"], p["block_size"]
    return sum(min(S, max(1, t // BS)) for t in range(T_)) / (T_ * S)


def _nsa_inputs(p, device):
    g = generator(device, 0)
    B, T_, HQ, D, G = p["batch"], p["seq_len"], p["heads"], p["dim"], p["groups"]
    Hkv = HQ // G
    Q = randn((B, T_, HQ, D), "float16", device, g)
    K = randn((B, T_, Hkv, D), "float16", device, g)
    V = randn((B, T_, Hkv, D), "float16", device, g)
    idx = nsa_block_indices(B, T_, Hkv, p["selected_blocks"], p["block_size"], device, g)
    return [Q, K, V, idx, nan_out((B, T_, HQ, D), "float16", device)]


def _nsa_ref_for(BS):
    def ref(args):
        """Per (b, t, kv head): softmax over the keys of the taken selected blocks (key position
        <= t), of the group's G query heads; scale 1/sqrt(D).  Tokens in chunks of 256 (the gathered
        keys are S * BS per token)."""
        import torch

        Q, K, V, idx, O = args
        B, T_, HQ, D = Q.shape
        Hkv = K.shape[2]
        G = HQ // Hkv
        out = torch.empty(B, T_, HQ, D, dtype=torch.float32, device=Q.device)
        ar = torch.arange(BS, device=Q.device)
        for t0 in range(0, T_, 256):
            t1 = min(T_, t0 + 256)
            tt = torch.arange(t0, t1, device=Q.device).view(1, -1, 1, 1, 1)
            blk = idx[:, t0:t1].long()                                                 # b t h s
            start = blk * BS
            taken = (start.unsqueeze(-1) <= tt) & (start.unsqueeze(-1) >= 0)          # b t h s 1
            pos = (start.unsqueeze(-1) + ar).clamp(max=T_ - 1)                        # b t h s bs
            ok = (taken & ((start.unsqueeze(-1) + ar) <= tt)).flatten(3)              # b t h (s bs)
            pos = pos.flatten(3)
            hidx = torch.arange(Hkv, device=Q.device).view(1, 1, Hkv, 1)
            bidx = torch.arange(B, device=Q.device).view(B, 1, 1, 1)
            k = K[bidx, pos, hidx].float()                                             # b t h n d
            v = V[bidx, pos, hidx].float()
            q = Q[:, t0:t1].float().view(B, t1 - t0, Hkv, G, D)
            s = torch.einsum("bthgd,bthnd->bthgn", q, k) * (D ** -0.5)
            s = s.masked_fill(~ok.unsqueeze(3), float("-inf"))
            pr = s.softmax(dim=-1)
            out[:, t0:t1] = torch.einsum("bthgn,bthnd->bthgd", pr, v).reshape(B, t1 - t0, HQ, D)
        return {4: out}

    return ref


# ----------------------------------------------------------------------------- attention sink
def _sink_inputs(p, device):
    g = generator(device, 0)
    B, H, Sq, Skv, D = p["batch"], p["heads"], p["seq_q"], p["seq_kv"], p["dim"]
    dt = p["dtype"]
    return [randn((B, H, Sq, D), dt, device, g), randn((B, H, Skv, D), dt, device, g),
            randn((B, H, Skv, D), dt, device, g), nan_out((B, H, Sq, D), dt, device),
            randn((H,), dt, device, g)]


def _sink_ref_for(window):
    def ref(args):
        """upstream ref_program (gpt-oss attention with sinks) in BHSD, float32, a few heads at a
        time: causal, keys older than q - window + 1 masked, the sink logit in the normaliser."""
        import torch

        Q, K, V, _, sinks = args
        B, H, Sq, D = Q.shape
        Skv = K.shape[2]
        start_q = Skv - Sq
        pk = torch.arange(Skv, device=Q.device)
        pq = torch.arange(Sq, device=Q.device) + start_q
        mask = pk[None, :] > pq[:, None]
        if window:
            mask = mask | (pk[None, :] < (pq[:, None] - window + 1))
        out = torch.empty(B, H, Sq, D, dtype=torch.float32, device=Q.device)
        step = max(1, 8 * 4096 * 4096 // (Sq * Skv))
        for b in range(B):
            for h0 in range(0, H, step):
                h1 = min(H, h0 + step)
                lg = Q[b, h0:h1].float() @ K[b, h0:h1].float().transpose(-1, -2) * D ** -0.5
                lg = lg.masked_fill(mask, float("-inf"))
                sk = sinks[h0:h1].float().view(-1, 1, 1)
                mx = torch.maximum(lg.amax(dim=-1, keepdim=True), sk)
                e = torch.exp(lg - mx)
                den = e.sum(dim=-1, keepdim=True) + torch.exp(sk - mx)
                out[b, h0:h1] = (e / den) @ V[b, h0:h1].float()
        return {3: out}

    return ref


# ============================================================================= expected
def _hadamard_expected(p) -> Expected:
    b, n, e = p["b"], p["n"], nbytes(p["dtype"])
    c = hadamard_config(n, p["dtype"])
    te, thr = c["thread_elem"], c["threads"]
    rounds = c["warp_round"] + c["block_round"]          # = log2(threads) shuffle rounds
    return Expected(
        # each thread loads its thread_elem contiguous elements of the row and stores them back
        global_read_bytes=b * n * e,
        global_write_bytes=b * n * e,
        global_atomic_bytes=0,
        tensor_flops=0,
        # per thread: thread_round in-thread rounds of te/2 butterflies, each a + b (1) and
        # a - 2*b (an FMA, 2); each shuffle round, per element, both arms of the select
        # (a + b and b - a: 1 + 1; the sign test is integer)
        cuda_flops=b * thr * (c["thread_round"] * (te // 2) * 3 + rounds * te * 2),
        sfu_ops=0,
        unique_bytes=2 * b * n * e,
    )


def _softmax_expected(p) -> Expected:
    M, N, e = p["M"], p["N"], nbytes(p["dtype"])
    assert N <= 8192 and N & (N - 1) == 0, "derived for one chunk per row (BN = N)"
    return Expected(
        # pass 1 and pass 2 each copy the whole row in; pass 2 copies it out
        global_read_bytes=2 * M * N * e,
        global_write_bytes=M * N * e,
        global_atomic_bytes=0,
        tensor_flops=0,
        # per element: reduce_max (1), x*scale - max*scale (FMA 2 + the mul 1), reduce_sum (1),
        # pass 2's x*scale - lse (FMA 2); the lse update is scalar code on a 1-element
        # fragment, run by each of the 128 threads: 5 FLOPs (two max*scale, a sub, two adds)
        cuda_flops=M * (N * (1 + 3 + 1 + 2) + 128 * 5),
        # an exp2 per element in each pass; exp2 + log2 of the lse update per thread
        sfu_ops=M * (2 * N + 128 * 2),
        unique_bytes=2 * M * N * e,
    )


def _deepgemm_expected(p) -> Expected:
    M, N, K, bN = p["M"], p["N"], p["K"], p["block_N"]
    assert M % 128 == 0 and N % 128 == 0 and K % 128 == 0 and 128 % bN == 0
    blocks = (M // 128) * (N // bN)
    kt = K // 128
    oe = nbytes(p["out_dtype"])
    return Expected(
        tensor_flops=2 * M * N * K,
        # per k-tile: Scale_C = scales_a * Scale_B (128), C_accum += C_local * Scale_C (FMA, 2
        # per element of the 128 x block_N tile)
        cuda_flops=blocks * kt * (128 + 2 * 128 * bN),
        sfu_ops=0,
        # per block and k-tile: the 128 x 128 fp8 A tile, the block_N x 128 fp8 B tile, 128
        # float32 A scales (element loads in T.Parallel) and the one float32 B scale (a scalar
        # load outside T.Parallel)
        global_read_bytes=blocks * kt * (128 * 128 + bN * 128 + 128 * 4 + 4),
        global_write_bytes=M * N * oe,
        global_atomic_bytes=0,
        # A, B (fp8), C, the (M, K/128) and (N/128, K/128) float32 scales
        unique_bytes=M * K + N * K + M * N * oe + M * kt * 4 + (N // 128) * kt * 4,
    )


def _kkt_expected(p) -> Expected:
    B, S, H, DK, BS, bDK = p["B"], p["S"], p["H"], p["DK"], p["block_S"], p["block_DK"]
    ie, oe = nbytes(p["input_dtype"]), nbytes(p["output_dtype"])
    blocks = (S // BS) * B * H
    return Expected(
        # per block: DK / block_DK gemms of (BS x block_DK) x (block_DK x BS)
        tensor_flops=blocks * (DK // bDK) * 2 * BS * BS * bDK,
        # per block: BS betas and BS float32 gates (element loads), the BS x DK K slab
        # (DK / block_DK tile copies)
        global_read_bytes=blocks * (BS * ie + BS * 4 + BS * DK * ie),
        # the BS x BS tile of A
        global_write_bytes=blocks * BS * BS * oe,
        global_atomic_bytes=0,
        unique_bytes=B * S * H * (DK * ie + ie + 4 + BS * oe),
        # cuda_flops / sfu_ops not asserted: the gate's branch is on G's values
    )


def _delta_h_expected(p) -> Expected:
    B, S, H, DK, DV, BS, bDV = p["B"], p["S"], p["H"], p["DK"], p["DV"], p["chunk_size"], p["block_DV"]
    assert p["use_g"] and p["use_initial_state"] and p["store_final_state"] and p["save_new_value"]
    ie, oe, ge, se = (nbytes(p["input_dtype"]), nbytes(p["output_dtype"]), nbytes(p["gate_dtype"]),
                      nbytes(p["state_dtype"]))
    blocks = (DV // bDV) * B * H
    NT = S // BS
    return Expected(
        # per chunk: V_new = W (BS x DK) @ h (DK x bDV), h += K^T (DK x BS) @ V_new (BS x bDV)
        tensor_flops=blocks * NT * 2 * (2 * BS * DK * bDV),
        # per block: the DK x bDV initial state; per chunk: the BS x DK W and K slabs, the
        # BS x bDV U tile, the last gate (a scalar load) and the gates G[t] once per element of
        # the (BS, bDV) T.Parallel that broadcasts them (BS * bDV float32 loads)
        global_read_bytes=blocks * (DK * bDV * ie + NT * (2 * BS * DK * ie + BS * bDV * ie + ge
                                                          + BS * bDV * ge)),
        # per chunk the DK x bDV state into h and the BS x bDV V_new tile; the final state once
        global_write_bytes=blocks * (NT * (DK * bDV * oe + BS * bDV * oe) + DK * bDV * se),
        global_atomic_bytes=0,
        unique_bytes=(B * S * H * (2 * DK * ie + DV * ie + ge + DV * oe) + B * H * DK * DV * (ie + se)
                      + B * NT * H * DK * DV * oe),
        # cuda_flops / sfu_ops not asserted: the V_new gate's branch is on G's values
    )


def nsa_active_trips(p) -> int:
    """Selected-block trips whose block is taken (BlockIndices as nsa_block_indices builds it)."""
    T_, S, BS = p["seq_len"], p["selected_blocks"], p["block_size"]
    return p["batch"] * (p["heads"] // p["groups"]) * sum(min(S, max(1, t // BS)) for t in range(T_))


def _nsa_expected(p) -> Expected:
    """What runs (tileroof, not told the indices, counts every trip: an upper bound)."""
    B, T_, HQ, D, G, S, BS = (p["batch"], p["seq_len"], p["heads"], p["dim"], p["groups"],
                              p["selected_blocks"], p["block_size"])
    assert D <= 128
    Hkv = HQ // G
    blocks = T_ * B * Hkv
    act = nsa_active_trips(p)
    # K / V rows ever read: blocks 0 .. T/BS - 2 (a token selects only blocks before its own, and
    # with this seed every such block is some token's pick); the last block is never read
    kv_rows = (T_ // BS - 1) * BS
    return Expected(
        # per taken trip: S = Q K^T (G x BS x D) and O += P V (G x D x BS)
        tensor_flops=act * 2 * (2 * G * BS * D),
        # per block: the G x D query tile and the S block indices (scalar loads, int32); per
        # taken trip: the BS x D K and V blocks
        global_read_bytes=blocks * (G * D * 2 + S * 4) + act * 2 * BS * D * 2,
        global_write_bytes=blocks * G * D * 2,
        global_atomic_bytes=0,
        unique_bytes=2 * B * T_ * HQ * D * 2 + B * T_ * Hkv * S * 4 + 2 * B * kv_rows * Hkv * D * 2,
    )


def sink_trips(p) -> int:
    """Key tiles run per (batch, head): for query tile bx, from max(0, (bx*bM + past - window)
    // bN) to min(ceil(Skv / bN), ceil(((bx+1)*bM + past) / bN))."""
    Sq, Skv, bM, bN, w = p["seq_q"], p["seq_kv"], p["block_M"], p["block_N"], p["window_size"]
    past = Skv - Sq
    n = 0
    for bx in range(cdiv(Sq, bM)):
        end = min(cdiv(Skv, bN), cdiv((bx + 1) * bM + past, bN))
        start = max(0, (bx * bM + past - w) // bN) if w is not None else 0
        n += max(0, end - start)
    return n


def _sink_expected(p) -> Expected:
    B, H, Sq, Skv, D, bM, bN = (p["batch"], p["heads"], p["seq_q"], p["seq_kv"], p["dim"],
                                p["block_M"], p["block_N"])
    e = nbytes(p["dtype"])
    assert Sq % bM == 0 and Skv % bN == 0
    blocks = B * H * (Sq // bM)
    trips = B * H * sink_trips(p)
    return Expected(
        # two gemms per key tile: bM x bN x D and bM x D x bN
        tensor_flops=trips * 2 * (2 * bM * bN * D),
        # per block: the Q tile and the head's sink (one element, the same address for every
        # thread of the T.Parallel); per key tile the K and V tiles
        global_read_bytes=blocks * (bM * D * e + e) + trips * 2 * bN * D * e,
        global_write_bytes=blocks * bM * D * e,
        global_atomic_bytes=0,
        unique_bytes=B * H * (2 * Sq + 2 * Skv) * D * e + H * e,
        # cuda_flops / sfu_ops not asserted (not derived by hand here)
    )


# ============================================================================= cases
_UP = "tile-ai/tilelang "


def _hadamard_case(name, b, n, note):
    p = dict(b=b, n=n, dtype="float32")
    return Case(name, hadamard, p, _hadamard_inputs, _hadamard_ref, _hadamard_expected(p), rtol=1e-4,
                tags=("hadamard", "warp-shuffle", "upstream", "blind2", "float32"),
                note=_UP + "examples/hadamard_transform/example_hadamard.py (commit 0973611); " + note)


def _softmax_case(name, M, N, note):
    p = dict(M=M, N=N, dtype="float16")
    return Case(name, online_softmax, p, _softmax_inputs, _softmax_ref, _softmax_expected(p), rtol=1e-2,
                tags=("softmax", "reduce", "upstream", "blind2", "float16"),
                note=_UP + "examples/online_softmax/online_softmax.py (commit 06c86f1); " + note)


def _deepgemm_case(name, M, N, K, block_N, note):
    p = dict(M=M, N=N, K=K, block_N=block_N, in_dtype="float8_e4m3fn", out_dtype="bfloat16",
             accum_dtype="float32")
    return Case(name, deepgemm_fp8_2xacc, p, _deepgemm_inputs, _deepgemm_ref, _deepgemm_expected(p),
                rtol=1e-2, tags=("gemm", "fp8", "block-scaled", "upstream", "blind2", "bfloat16"),
                note=_UP + "examples/deepseek_deepgemm/example_deepgemm_fp8_2xAcc.py (commit 0985636); "
                + note)


def _kkt_case(name, B, S, H, DK, note):
    p = dict(B=B, S=S, H=H, DK=DK, chunk_size=64, input_dtype="bfloat16", output_dtype="bfloat16",
             accum_dtype="float32", use_g=True, block_S=64, block_DK=64, threads=128, num_stages=2)
    return Case(name, gdn_chunk_scaled_dot_kkt, p, _kkt_inputs, _kkt_ref, _kkt_expected(p), rtol=2e-2,
                tags=("linear-attention", "gated-delta-net", "upstream", "blind2", "bfloat16"),
                note=_UP + "examples/gdn/example_chunk_scaled_dot_kkt.py (commit 3579a27); " + note)


def _delta_h_case(name, B, S, H, DK, DV, note, **kw):
    p = dict(B=B, S=S, H=H, DK=DK, DV=DV, input_dtype="bfloat16", output_dtype="bfloat16",
             accum_dtype="float32", gate_dtype="float32", state_dtype="float32", chunk_size=64,
             use_g=True, use_initial_state=True, store_final_state=True, save_new_value=True,
             block_DK=64, block_DV=32, threads=128, num_stages=1)
    p.update(kw)
    return Case(name, gdn_chunk_delta_h, p, _delta_h_inputs, _delta_h_ref, _delta_h_expected(p), rtol=2e-2,
                tags=("linear-attention", "gated-delta-net", "recurrent", "upstream", "blind2", "bfloat16"),
                note=_UP + "examples/gdn/example_chunk_delta_h.py (commit 10bbc31); " + note)


def _nsa_case(name, batch, heads, seq_len, groups, selected_blocks, block_size, note):
    p = dict(batch=batch, heads=heads, seq_len=seq_len, dim=128, is_causal=True, scale=None,
             block_size=block_size, groups=groups, selected_blocks=selected_blocks)
    return Case(name, nsa_fwd, p, _nsa_inputs, _nsa_ref_for(block_size), _nsa_expected(p), rtol=1e-2,
                tags=("attention", "sparse-attention", "nsa", "gather", "data-dependent", "upstream",
                      "blind2", "float16"),
                note=_UP + "examples/deepseek_nsa/example_tilelang_nsa_fwd.py (commit 1565bf8); " + note,
                taken={"BlockIndices": nsa_taken_share(p)})


def _sink_case(name, batch, heads, seq, window, note):
    p = dict(batch=batch, heads=heads, seq_q=seq, seq_kv=seq, dim=128, window_size=window,
             sm_scale=None, block_M=128, block_N=128, num_stages=2, threads=256, dtype="float16")
    return Case(name, attn_sink_fwd, p, _sink_inputs, _sink_ref_for(window), _sink_expected(p), rtol=1e-2,
                tags=("attention", "sliding-window", "attention-sink", "upstream", "blind2", "float16"),
                note=_UP + "examples/attention_sink/example_mha_sink_fwd_bhsd.py (commit 00b47e9); " + note)


def cases() -> list[Case]:
    return [
        _hadamard_case("blind2_hadamard_fp32_b8192_n8192", 8192, 8192,
                       "256 threads x 32 elements per row: 5 in-thread, 5 warp-shuffle and 3 "
                       "cross-warp shuffle rounds, one shared-memory exchange each way; 512 MB"),
        _hadamard_case("blind2_hadamard_fp32_b1024_n32768", 1024, 32768,
                       "upstream main()'s dim (32768, fp32): 128 elements per thread, the 128 KB "
                       "row exchanged through 32 KB of shared memory in 4 rounds; 256 MB"),
        _softmax_case("blind2_online_softmax_fp16_8192x8192", 8192, 8192,
                      "upstream's script shape: one 8192-wide fp16 row per 128-thread block, read "
                      "twice (lse pass, output pass)"),
        _deepgemm_case("blind2_deepgemm_fp8_2xacc_4096x4096x8192", 4096, 4096, 8192, 128,
                       "block_N = 128 (upstream's loop covers 16-128), 128 x 128 x 128 tiles, 4 "
                       "stages: per k-tile a fresh fp8 gemm promoted into a second float32 "
                       "accumulator with per-row x per-block scales"),
        _kkt_case("blind2_gdn_kkt_bf16_b1_s32768_h32_dk128", 1, 32768, 32, 128,
                  "upstream main()'s task (B=1, S=32768, H=32, DK=128, chunk 64, block_DK 64, 128 "
                  "threads, 2 stages); G a chunk-local cumsum of logsigmoid (as GDN feeds it)"),
        _delta_h_case("blind2_gdn_delta_h_bf16_b1_s16384_h32_d128", 1, 16384, 32, 128, 128,
                      "upstream's kernel defaults (block_DV 32, 128 threads, 1 stage), all flags "
                      "on; 128 blocks, each walking 256 chunks in order"),
        _sink_case("blind2_attn_sink_win512_fp16_b8_h32_s4096_d128", 8, 32, 4096, 512,
                   "upstream main()'s non-tuned config (128 x 128 tiles, 2 stages, 256 threads) "
                   "and shape (B=8, H=32, S=4096, D=128) with a 512-token sliding window: at most "
                   "5 key tiles per query tile"),
    ]


def data_dependent_cases() -> list[Case]:
    """NSA: which (and how many) selected blocks run depends on BlockIndices; tileroof, told the
    taken share (case.taken), scales the trips; Expected holds what runs."""
    return [
        _nsa_case("blind2_nsa_fwd_fp16_b1_h32_g16_s4096_sel16_bs64", 1, 32, 4096, 16, 16, 64,
                  "16 query heads per kv head (2 kv heads), 16 selected 64-token blocks per "
                  "token, 32-thread blocks, 2 stages, fast math, no TMA / warp specialisation; "
                  "86.8 % of the selected entries are taken (told: --taken BlockIndices)"),
    ]


# ----------------------------------------------------------------------------- tiny params
# Per kernel, overrides that shrink a case so make_inputs / reference run in milliseconds on CPU
# (tests/test_corpus_elaborates.py's _TINY needs `*up_blind2.TINY`).
TINY = [
    (hadamard, lambda p: dict(b=4, n=p["n"])),
    (online_softmax, lambda p: dict(M=4)),
    (deepgemm_fp8_2xacc, lambda p: dict(M=256, N=256, K=512)),
    (gdn_chunk_scaled_dot_kkt, lambda p: dict(B=1, S=256, H=2)),
    (gdn_chunk_delta_h, lambda p: dict(B=1, S=256, H=2)),
    (nsa_fwd, lambda p: dict(batch=1, heads=16, seq_len=256)),
    # the window (and NSA's block_size) stay: the references take them from the case
    (attn_sink_fwd, lambda p: dict(batch=1, heads=2, seq_q=1024, seq_kv=1024)),
]


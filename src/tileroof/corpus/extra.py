"""Extra cases, added as held-out evidence: the existing kernels (gemm, attention, norm, reduce,
gemv, misc) at new shapes, dtypes and tile configurations, four new kernels (bf16 elementwise
multiply, rotary embedding with cos/sin tables, fused residual-add + RMSNorm, row-wise fp8
quantisation), and the "fa_causal" sweep (causal flash-attention forward, B=4 H=32 S=4096
D=128, over block_M / block_N / num_stages / threads).

Counting conventions are those of case.py and of the kernels' home modules; every case below
states its formulas.  CUDA-core FLOPs follow the element-level arithmetic as written in the TIR:
add, sub, mul, div, max = 1 per result, a float `a * b + c` = one FMA = 2; T.reduce_* costs 1
per source element; integer index math, comparisons on integers, casts and T.if_then_else cost
nothing.
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import dataclasses

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn
from .attention import (_fa_inputs, _fa_ref, _fa_ref_causal, _gqa_inputs, _gqa_ref,
                        flash_attn_fwd, gqa_decode)
from .gemm import (_bias_relu_inputs, _bias_relu_ref, _bmm_inputs, _bmm_ref, _matmul_inputs,
                   _matmul_ref_nn, _matmul_ref_nt, _splitk_inputs, _splitk_ref, bmm, matmul,
                   matmul_bias_relu, matmul_splitk)
from .conv import _conv_case
from .gemv import _inputs as _gemv_inputs
from .gemv import _ref as _gemv_ref
from .gemv import gemv_tiled
from .misc import _transpose_inputs, _transpose_ref, transpose_op
from .norm import (_ln_inputs, _ln_ref_for, _rms_inputs, _rms_ref_for, _softmax_inputs,
                   _softmax_ref, layer_norm, rms_norm, softmax)
from .elementwise import (_ew_expected, _inputs_2d, _ref_add, _ref_copy, _ref_fma, _ref_gelu, _ref_silu_mul,
                          elementwise_add, elementwise_fma, gelu_tanh, silu_mul, tile_copy)
from .reduce import _absmax_inputs, _reduce_expected, _ref_absmax, _ref_rowsum, _row_inputs, row_absmax, row_reduce

FP8_E4M3_MAX = 448.0


# ----------------------------------------------------------------------------- new kernels
@tilelang.jit
def elementwise_mul(M, N, block_M=64, block_N=256, threads=256, dtype="bfloat16"):
    """C = A * B elementwise, element loads/stores in T.Parallel (examples/elementwise style)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = (A[by * block_M + i, bx * block_N + j] *
                                                         B[by * block_M + i, bx * block_N + j])

    return main


@tilelang.jit
def rope(batch, seq_len, heads, dim, block_S=32, threads=256, dtype="float16"):
    """Rotary embedding, rotate-half (GPT-NeoX) form, on X[batch, seq, heads, dim]:
        Y[..., j]        = x1 * cos[s, j] - x2 * sin[s, j]
        Y[..., j + D/2]  = x2 * cos[s, j] + x1 * sin[s, j]       (x1 = X[..., j], x2 = X[..., j + D/2])
    with float32 cos/sin tables (seq, D/2).  One block per (block_S positions, head, batch), so
    the tables are re-read by every head and batch (from L2)."""
    half = dim // 2

    @T.prim_func
    def main(X: T.Tensor((batch, seq_len, heads, dim), dtype),
             Cos: T.Tensor((seq_len, half), "float32"),
             Sin: T.Tensor((seq_len, half), "float32"),
             Y: T.Tensor((batch, seq_len, heads, dim), dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_S), heads, batch, threads=threads) as (bx, by, bz):
            for i, j in T.Parallel(block_S, half):
                s = bx * block_S + i
                x1 = X[bz, s, by, j].astype("float32")
                x2 = X[bz, s, by, j + half].astype("float32")
                c = Cos[s, j]
                sn = Sin[s, j]
                Y[bz, s, by, j] = (x1 * c - x2 * sn).astype(dtype)
                Y[bz, s, by, j + half] = (x2 * c + x1 * sn).astype(dtype)

    return main


@tilelang.jit
def add_rms_norm(M, N, block_M=2, threads=256, eps=1e-6, dtype="bfloat16"):
    """Fused residual add + RMSNorm (the transformer pre-norm step):
        H = X + R  (written to Rout),   Y = H * rsqrt(mean(H^2) + eps) * w
    block_M whole rows per block held in float32 fragments; the weight vector is copied once per
    block into shared memory (as norm.rms_norm)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), Wt: T.Tensor((N,), dtype),
             Y: T.Tensor((M, N), dtype), Rout: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            w_shared = T.alloc_shared((N,), dtype)
            x = T.alloc_fragment((block_M, N), "float32")
            r = T.alloc_fragment((block_M, N), "float32")
            sq = T.alloc_fragment((block_M, N), "float32")
            rstd = T.alloc_fragment((block_M,), "float32")
            T.copy(Wt, w_shared)
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M, 0], r)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] + r[i, j]
            T.copy(x, Rout[bx * block_M, 0])
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
def quant_fp8_rowwise(M, N, block_M=2, threads=256, dtype="bfloat16",
                      out_dtype="float8_e4m3fn"):
    """Per-row dynamic fp8 quantisation: scale[i] = max(max_j |X[i, j]|, 1e-6) / 448,
    Q[i, j] = fp8(X[i, j] / scale[i]).  Whole rows in a float32 fragment, T.reduce_absmax, the
    conversion to fp8 done by the fragment -> global T.copy."""

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), out_dtype),
             Scale: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), "float32")
            amax = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_absmax(x, amax, dim=1)
            for i in T.Parallel(block_M):
                amax[i] = T.max(amax[i], 1e-6) / FP8_E4M3_MAX
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] / amax[i]
            T.copy(x, Q[bx * block_M, 0])
            T.copy(amax, Scale[bx * block_M])

    return main


def _quant_case(name: str, M: int, N: int, block_M: int = 2, tags=("extra",)) -> Case:
    """quant_fp8_rowwise on bf16 rows, its counts derived by hand."""
    p = dict(M=M, N=N, block_M=block_M, threads=256, dtype="bfloat16", out_dtype="float8_e4m3fn")
    return Case(
        name, quant_fp8_rowwise, p, _quant_inputs, _quant_ref,
        Expected(
            # X once (bf16)
            global_read_bytes=M * N * 2,
            # Q once (1 byte per element) + one float32 scale per row
            global_write_bytes=M * N * 1 + M * 4,
            global_atomic_bytes=0, tensor_flops=0,
            # per element: reduce_absmax (1), x / scale (1); per row: max(amax, eps) / 448 (2)
            cuda_flops=M * N * 2 + M * 2,
            sfu_ops=0,
            unique_bytes=M * N * 2 + M * N * 1 + M * 4),
        rtol=1e-2, tags=("quant", "bfloat16", "fp8", "reduce") + tuple(tags),
        note="row absmax -> scale -> fp8 e4m3 (saturating convert in the fragment copy)")


# ----------------------------------------------------------------------------- inputs / refs
def _mul_inputs(p, device):
    g = generator(device, 0)
    M, N, dt = p["M"], p["N"], p["dtype"]
    return [randn((M, N), dt, device, g), randn((M, N), dt, device, g), nan_out((M, N), dt, device)]


def _mul_ref(args):
    return {2: args[0].float() * args[1].float()}


def _rope_tables(seq_len, dim, device, base=10000.0):
    import torch

    half = dim // 2
    inv_freq = base ** (-torch.arange(half, dtype=torch.float64, device=device) * 2.0 / dim)
    ang = torch.arange(seq_len, dtype=torch.float64, device=device)[:, None] * inv_freq[None, :]
    return torch.cos(ang).float().contiguous(), torch.sin(ang).float().contiguous()


def _rope_inputs(p, device):
    g = generator(device, 0)
    B, S, H, D, dt = p["batch"], p["seq_len"], p["heads"], p["dim"], p["dtype"]
    cos, sin = _rope_tables(S, D, device)
    return [randn((B, S, H, D), dt, device, g), cos, sin, nan_out((B, S, H, D), dt, device)]


def _rope_ref(args):
    import torch

    x, cos, sin = args[0].float(), args[1].float(), args[2].float()
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return {3: torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)}


def _add_rms_inputs(p, device):
    g = generator(device, 0)
    M, N, dt = p["M"], p["N"], p["dtype"]
    return [randn((M, N), dt, device, g), randn((M, N), dt, device, g), randn((N,), dt, device, g),
            nan_out((M, N), dt, device), nan_out((M, N), dt, device)]


def _add_rms_ref_for(eps):
    def ref(args):
        h = args[0].float() + args[1].float()
        w = args[2].float()
        return {3: h * (h.pow(2).mean(-1, keepdim=True) + eps).rsqrt() * w, 4: h}

    return ref


def _quant_inputs(p, device):
    g = generator(device, 0)
    M, N = p["M"], p["N"]
    return [randn((M, N), p["dtype"], device, g), nan_out((M, N), p["out_dtype"], device),
            nan_out((M,), "float32", device)]


def _quant_ref(args):
    import torch

    x = args[0].float()
    scale = x.abs().amax(dim=1).clamp_min(1e-6) / FP8_E4M3_MAX
    q = (x / scale[:, None]).to(args[1].dtype).float()
    return {1: q, 2: scale}


# ----------------------------------------------------------------------------- expected
def _mm_expected(p) -> Expected:
    """matmul (gemm.py): derivation in gemm.py's header."""
    M, N, K = p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    ib, ob = nbytes(p["in_dtype"]), nbytes(p["out_dtype"])
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    return Expected(
        # gm*gn blocks x gk iterations x one full bm x bn x bk tile gemm
        tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk),
        # no element-level arithmetic: T.clear is a fill, the gemm runs on the tensor cores
        cuda_flops=0,
        sfu_ops=0,
        # A read once per block column (gn), B once per block row (gm)
        global_read_bytes=(gn * M * K + gm * K * N) * ib,
        # C written once
        global_write_bytes=M * N * ob,
        global_atomic_bytes=0,
        unique_bytes=(M * K + K * N) * ib + M * N * ob,
    )


def _fa_counts(p) -> Expected:
    """flash_attn_fwd (attention.py), with the CUDA-core FLOPs added."""
    B, H, S, D = p["batch"], p["heads"], p["seq_len"], p["dim"]
    bM, bN = p["block_M"], p["block_N"]
    b = nbytes(p["dtype"])
    nq = cdiv(S, bM)                       # query tiles
    blocks = B * H * nq
    if p["is_causal"]:
        # query tile bx loops over min(ceil(S/bN), ceil((bx+1)*bM/bN)) key tiles; diagonal tiles
        # run whole (masked with -inf, not skipped)
        iters = sum(min(cdiv(S, bN), cdiv((bx + 1) * bM, bN)) for bx in range(nq))
    else:
        iters = nq * cdiv(S, bN)
    iters *= B * H                         # summed over every block
    return Expected(
        # two gemms per iteration: S = Q K^T (bM x bN x D) and O += P V (bM x D x bN)
        tensor_flops=iters * 2 * (2 * bM * bN * D),
        # per iteration: reduce_max over bM*bN (1 each); rescale factor exp2(prev*c - max*c) per
        # row = mul, mul, sub (3); probabilities exp2(s*c - max*c) per element (3); reduce_sum
        # over bM*bN (1); logsum = logsum*scale + sum per row = one FMA (2); acc_o *= scale
        # per bM*D element (1).  The causal mask compares integer indices: free.
        # Causal only: the running max is kept, max(new, prev) per row (1).
        # Per block after the loop: acc_o /= logsum, bM*D divisions.
        cuda_flops=iters * (5 * bM * bN + (6 if p["is_causal"] else 5) * bM + bM * D) + blocks * bM * D,
        # exp2: bM rescale factors + bM*bN probabilities per iteration
        sfu_ops=iters * (bM + bM * bN),
        # Q tile once per block, K and V tiles every iteration
        global_read_bytes=(blocks * bM * D + iters * 2 * bN * D) * b,
        # the output tile once per block
        global_write_bytes=blocks * bM * D * b,
        global_atomic_bytes=0,
        # Q, K, V, O each touched in full
        unique_bytes=4 * B * H * S * D * b,
    )


def _gqa_counts(p) -> Expected:
    """gqa_decode (attention.py): derivation of attention._gqa_expected, CUDA-core FLOPs added."""
    B, H, KVH, S, D = p["batch"], p["heads"], p["kv_heads"], p["seqlen_kv"], p["dim"]
    bN, bH = p["block_N"], p["block_H"]
    G = H // KVH                           # query heads per KV head
    blocks = B * KVH
    iters = blocks * cdiv(S, bN)
    return Expected(
        # both gemms run on the bH-row padded tile: bH x bN x D and bH x D x bN
        tensor_flops=iters * 2 * (2 * bH * bN * D),
        # as flash_attn_fwd with bM -> bH: 5 per score element, 5 per row, 1 per acc_o element
        # per iteration; the final division over the bH x D accumulator once per block
        cuda_flops=iters * (5 * bH * bN + 5 * bH + bH * D) + blocks * bH * D,
        sfu_ops=iters * (bH + bH * bN),
        # Q: G rows per block (the T.clear of Q_shared reads nothing); K, V: one bN x D tile each
        # per iteration = the whole KV cache once
        global_read_bytes=(blocks * G * D + iters * 2 * bN * D) * 2,
        # G output rows per block
        global_write_bytes=blocks * G * D * 2,
        global_atomic_bytes=0,
        # Q and O (B*H*D each), K and V (B*S*KVH*D each)
        unique_bytes=(2 * B * H * D + 2 * B * S * KVH * D) * 2,
    )


# ----------------------------------------------------------------------------- case builders
def _mm_params(M, N, K, bm, bn, bk, stages, threads, in_dtype="float16", out_dtype="float16",
               trans_B=False, swizzle=False, c_shared=False):
    p = dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=stages,
             threads=threads, in_dtype=in_dtype, out_dtype=out_dtype,
             accum_dtype="float32", trans_B=trans_B, swizzle=swizzle)
    if c_shared:
        p["c_shared"] = True
    return p


def _mm_case(name, p, rtol=1e-2, tags=(), note="", sweep=None):
    return Case(name=name, kernel=matmul, params=p, make_inputs=_matmul_inputs,
                reference=_matmul_ref_nt if p["trans_B"] else _matmul_ref_nn,
                expected=_mm_expected(p), rtol=rtol, sweep=sweep,
                tags=("gemm", p["in_dtype"], "nt" if p["trans_B"] else "nn", "extra") + tuple(tags),
                note=note)


def _fa_params(batch, heads, seq_len, dim, is_causal, bM, bN, stages, threads, dtype="float16"):
    return dict(batch=batch, heads=heads, seq_len=seq_len, dim=dim, is_causal=is_causal,
                block_M=bM, block_N=bN, num_stages=stages, threads=threads, dtype=dtype,
                accum_dtype="float32")


def _fa_case(name, p, rtol=1e-2, sweep=None, note=""):
    causal = p["is_causal"]
    return Case(name=name, kernel=flash_attn_fwd, params=p, make_inputs=_fa_inputs,
                reference=_fa_ref_causal if causal else _fa_ref, expected=_fa_counts(p),
                rtol=rtol, sweep=sweep,
                tags=("attention", p["dtype"], "extra") + (("causal",) if causal else ()),
                note=note)


# ----------------------------------------------------------------------------- cases
def _gemm_cases() -> list[Case]:
    out = [
        _mm_case("gemm_nn_bf16_2048x8192x1024",
                 _mm_params(2048, 8192, 1024, 128, 256, 64, 3, 256, "bfloat16", "bfloat16"),
                 note="wide N, short K (16 iterations); 128x256x64 tiles, 3 stages, 256 threads"),
        _mm_case("gemm_nn_bf16_8192x2048x4096",
                 _mm_params(8192, 2048, 4096, 64, 128, 64, 4, 128, "bfloat16", "bfloat16"),
                 note="tall M; small 64x128x64 tiles with 4 stages and one warpgroup"),
        _mm_case("gemm_nn_fp16_8192x8192x256",
                 _mm_params(8192, 8192, 256, 128, 128, 64, 2, 128),
                 note="K = 256: 4 K-iterations per block, the 128 MiB C write dominates"),
        _mm_case("gemm_nn_fp16_4096x4096x512",
                 _mm_params(4096, 4096, 512, 128, 128, 64, 3, 128),
                 note="short loop: 8 K-iterations per block, 1024 blocks"),
        _mm_case("gemm_nn_bf16_8192x4096x128",
                 _mm_params(8192, 4096, 128, 128, 256, 64, 2, 256, "bfloat16", "bfloat16"),
                 note="shortest loop: 2 K-iterations per block, two consumer warpgroups"),
        _mm_case("gemm_nn_fp16_16384x1024x1024",
                 _mm_params(16384, 1024, 1024, 128, 128, 64, 4, 128),
                 note="16 K-iterations per block, 1024 blocks, 4 stages"),
        _mm_case("gemm_nt_fp16_6144_swizzle",
                 _mm_params(6144, 6144, 6144, 128, 256, 64, 3, 256, trans_B=True, swizzle=True),
                 note="B stored (N, K); 48 x 24 tile grid with block rasterisation (panel 10)"),
        _mm_case("gemm_nt_fp8e4m3_bf16out_8192",
                 _mm_params(8192, 8192, 8192, 128, 256, 128, 3, 256, "float8_e4m3fn", "bfloat16",
                            trans_B=True),
                 rtol=5e-2, tags=("fp8",),
                 note="fp8 e4m3 in (K-major B), fp32 accumulate, bf16 out; 128x256x128 tiles"),
    ]

    p = dict(M=4096, N=8192, K=2048, block_M=128, block_N=128, block_K=64, num_stages=3,
             threads=256, dtype="bfloat16", accum_dtype="float32")
    M, N, K, bm, bn, bk = p["M"], p["N"], p["K"], p["block_M"], p["block_N"], p["block_K"]
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    out.append(Case(
        "gemm_bias_relu_bf16_4096x8192x2048", matmul_bias_relu, p, _bias_relu_inputs,
        _bias_relu_ref,
        Expected(
            tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk),
            # epilogue max(acc + bias, 0): one add and one max per accumulator element
            cuda_flops=2 * (gm * bm) * (gn * bn),
            sfu_ops=0,
            # A per block column, B per block row, the bn-slice of Bias once per block
            global_read_bytes=(gn * M * K + gm * K * N + gm * gn * bn) * 2,
            global_write_bytes=M * N * 2,
            global_atomic_bytes=0,
            unique_bytes=(M * K + K * N + N + M * N) * 2),
        rtol=1e-2, tags=("gemm", "bfloat16", "epilogue", "extra"),
        note="bf16 GEMM with the bias + ReLU epilogue; 128x128x64, 3 stages, 256 threads"))

    p = dict(batch=64, M=512, N=512, K=512, block_M=128, block_N=128, block_K=64, num_stages=3,
             threads=128, dtype="float16", accum_dtype="float32")
    Bt, M, N, K = p["batch"], p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    out.append(Case(
        "bmm_fp16_b64_512", bmm, p, _bmm_inputs, _bmm_ref,
        Expected(
            # per batch the plain GEMM: gm*gn blocks x gk full-tile gemms
            tensor_flops=Bt * 2 * (gm * bm) * (gn * bn) * (gk * bk),
            cuda_flops=0, sfu_ops=0,
            # per batch: A once per block column, B once per block row
            global_read_bytes=Bt * (gn * M * K + gm * K * N) * 2,
            global_write_bytes=Bt * M * N * 2,
            global_atomic_bytes=0,
            unique_bytes=Bt * (M * K + K * N + M * N) * 2),
        rtol=1e-2, tags=("gemm", "float16", "batched", "extra"),
        note="64 small 512^3 GEMMs in one launch: 16 blocks per batch, 1024 blocks"))

    p = dict(M=2048, N=2048, K=8192, split_k=4, block_M=128, block_N=128, block_K=64,
             num_stages=3, threads=256, dtype="float16", accum_dtype="float32")
    M, N, K, S = p["M"], p["N"], p["K"], p["split_k"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K // S, bk)
    out.append(Case(
        "gemm_splitk4_fp16_2048x2048x8192", matmul_splitk, p, _splitk_inputs, _splitk_ref,
        Expected(
            # gm*gn*S blocks, each gk = (K/S)/bk full-tile gemms
            tensor_flops=2 * (gm * bm) * (gn * bn) * (S * gk * bk),
            cuda_flops=0, sfu_ops=0,
            # the S slices of a block position together read its A rows and B columns over all K
            global_read_bytes=(gn * M * K + gm * K * N) * 2,
            global_write_bytes=0,
            # each of the gm*gn*S blocks atomically adds a bm x bn float32 tile
            global_atomic_bytes=S * M * N * 4,
            unique_bytes=(M * K + K * N) * 2 + M * N * 4),
        rtol=1e-2, tags=("gemm", "float16", "split-k", "atomic", "extra"),
        note="C must be zero before every launch (atomics accumulate into it); 1024 blocks "
             "of 32 K-iterations"))
    return out


def _attention_cases() -> list[Case]:
    out = [
        _fa_case("fa_fwd_fp16_b8_h16_s4096_d64",
                 _fa_params(8, 16, 4096, 64, False, 128, 128, 2, 256),
                 note="head dim 64, non-causal; 128x128 tiles, 2 stages, 256 threads"),
        _fa_case("fa_fwd_causal_bf16_b2_h16_s8192_d128_bm64",
                 _fa_params(2, 16, 8192, 128, True, 64, 64, 2, 128, dtype="bfloat16"),
                 rtol=2e-2,
                 note="bf16 causal, block_M = 64 with one warpgroup: query tile bx runs bx+1 "
                      "key tiles (1..128)"),
    ]
    p = dict(batch=32, heads=64, kv_heads=4, seqlen_kv=8192, dim=128, block_N=64, block_H=64,
             num_stages=2, threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("gqa_decode_fp16_b32_h64_kv4_s8192_d128", gqa_decode, p, _gqa_inputs,
                    _gqa_ref, _gqa_counts(p), rtol=1e-2,
                    tags=("attention", "float16", "decode", "gqa", "extra"),
                    note="16 query heads per KV head (padded to 64 gemm rows), 64-key tiles; "
                         "128 blocks streaming 512 MiB of KV"))
    return out


def _softmax_expected(p) -> Expected:
    M, N, bm, b = p["M"], p["N"], p["block_M"], nbytes(p["dtype"])
    return Expected(
        # every row read once and written once by the block that owns it
        global_read_bytes=M * N * b, global_write_bytes=M * N * b, global_atomic_bytes=0,
        tensor_flops=0,
        # per element: reduce_max (1), x*log2e - max*log2e (mul, mul, sub = 3),
        # reduce_sum (1), x / sum (1)
        cuda_flops=cdiv(M, bm) * bm * N * 6,
        # one exp2 per element
        sfu_ops=cdiv(M, bm) * bm * N,
        unique_bytes=2 * M * N * b)


def _rms_expected(p) -> Expected:
    M, N, bm, b = p["M"], p["N"], p["block_M"], nbytes(p["dtype"])
    return Expected(
        # X once + the whole weight vector once per block (M/bm blocks)
        global_read_bytes=M * N * b + cdiv(M, bm) * N * b,
        global_write_bytes=M * N * b, global_atomic_bytes=0, tensor_flops=0,
        # per element: x*x (1), reduce_sum (1), x*rstd*w (2 muls);
        # per row: rstd/N + eps (div, add = 2)
        cuda_flops=M * N * 4 + M * 2,
        # one rsqrt per row
        sfu_ops=cdiv(M, bm) * bm,
        unique_bytes=(2 * M * N + N) * b)


def _rowwise_cases() -> list[Case]:
    out = []
    p = dict(M=4096, N=16384, block_M=1, threads=256, dtype="float32")
    out.append(Case(
        "softmax_fp32_4096x16384", softmax, p, _softmax_inputs, _softmax_ref, _softmax_expected(p),
        rtol=1e-4, tags=("softmax", "float32", "reduce", "extra"),
        note="one 16384-wide float32 row per block (64 values per thread)"))

    p = dict(M=8192, N=8192, block_M=1, threads=512, eps=1e-6, dtype="bfloat16")
    out.append(Case(
        "rmsnorm_bf16_8192x8192", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]), _rms_expected(p),
        rtol=1e-2, tags=("norm", "bfloat16", "reduce", "extra"),
        note="one row per block, 512 threads"))

    p = dict(M=32768, N=2048, block_M=4, threads=256, eps=1e-5, dtype="float16")
    M, N, bm = p["M"], p["N"], p["block_M"]
    out.append(Case(
        "layernorm_fp16_32768x2048", layer_norm, p, _ln_inputs, _ln_ref_for(p["eps"]),
        Expected(
            # X once + gamma and beta once per block
            global_read_bytes=M * N * 2 + cdiv(M, bm) * 2 * N * 2,
            global_write_bytes=M * N * 2, global_atomic_bytes=0, tensor_flops=0,
            # per element: reduce_sum(x) (1); (x-mean)*(x-mean) (sub, sub, mul = 3);
            # reduce_sum(d2) (1); (x-mean)*rstd*g + b (sub, mul, then mul+add = FMA 2 -> 4);
            # per row: mean/N (1), rstd/N + eps (div, add = 2)
            cuda_flops=M * N * 9 + M * 3,
            # one rsqrt per row
            sfu_ops=cdiv(M, bm) * bm,
            unique_bytes=(2 * M * N + 2 * N) * 2),
        rtol=2e-3, tags=("norm", "float16", "reduce", "extra"),
        note="4 rows of 2048 per block"))

    p = dict(M=16384, N=4096, block_M=2, threads=256, eps=1e-6, dtype="bfloat16")
    M, N, bm = p["M"], p["N"], p["block_M"]
    out.append(Case(
        "add_rmsnorm_bf16_16384x4096", add_rms_norm, p, _add_rms_inputs,
        _add_rms_ref_for(p["eps"]),
        Expected(
            # X and R once each + the weight vector once per block
            global_read_bytes=2 * M * N * 2 + cdiv(M, bm) * N * 2,
            # Rout (the residual sum) and Y once each
            global_write_bytes=2 * M * N * 2, global_atomic_bytes=0, tensor_flops=0,
            # per element: x + r (1), x*x (1), reduce_sum (1), x*rstd*w (2);
            # per row: rstd/N + eps (2)
            cuda_flops=M * N * 5 + M * 2,
            # one rsqrt per row
            sfu_ops=cdiv(M, bm) * bm,
            unique_bytes=(4 * M * N + N) * 2),
        rtol=1e-2, tags=("norm", "bfloat16", "reduce", "fused", "extra"),
        note="residual add + RMSNorm, two outputs"))

    out.append(_quant_case("quant_fp8_rowwise_bf16_16384x8192", 16384, 8192))

    p = dict(M=65536, N=4096, op="sum", block_M=16, block_N=256, num_stages=3, threads=128,
             dtype="float16", out_dtype="float32")
    M, N, bm, bn = p["M"], p["N"], p["block_M"], p["block_N"]
    out.append(Case(
        "rowsum_fp16_65536x4096", row_reduce, p, _row_inputs, _ref_rowsum,
        Expected(
            # the matrix streamed once through shared tiles (tile-divisible), one float32 per row
            global_read_bytes=M * N * 2, global_write_bytes=M * 4, global_atomic_bytes=0,
            tensor_flops=0,
            # acc += tile: one add per element; the final reduce_sum over the (bm, bn)
            # accumulator once per block: (M/bm) * bm * bn
            cuda_flops=M * N + cdiv(M, bm) * bm * bn,
            sfu_ops=0,
            unique_bytes=M * N * 2 + M * 4),
        rtol=1e-5, tags=("reduce", "float16", "extra"),
        note="fp16 in, fp32 out; 16 rows per block, 256-wide tiles, 3 stages"))
    return out


def _other_cases() -> list[Case]:
    out = []
    p = dict(M=8192, N=16384, block_M=64, block_N=256, threads=256, dtype="bfloat16")
    M, N = p["M"], p["N"]
    out.append(Case(
        "ew_mul_bf16_8192x16384", elementwise_mul, p, _mul_inputs, _mul_ref,
        Expected(
            # two element loads and one store per element
            global_read_bytes=2 * M * N * 2, global_write_bytes=M * N * 2,
            global_atomic_bytes=0, tensor_flops=0,
            # one bf16 multiply per element
            cuda_flops=M * N, sfu_ops=0,
            unique_bytes=3 * M * N * 2),
        rtol=5e-3, tags=("elementwise", "bfloat16", "extra"),
        note="C = A * B in bf16, 768 MiB of traffic"))

    p = dict(batch=4, seq_len=4096, heads=32, dim=128, block_S=32, threads=256, dtype="float16")
    B, S, H, D = p["batch"], p["seq_len"], p["heads"], p["dim"]
    half = D // 2
    pairs = B * S * H * half           # T.Parallel (i, j) executions summed over every block
    out.append(Case(
        "rope_fp16_b4_s4096_h32_d128", rope, p, _rope_inputs, _rope_ref,
        Expected(
            # per (i, j): x1 and x2 (2 fp16), cos and sin (2 float32)
            global_read_bytes=pairs * (2 * 2 + 2 * 4),
            # per (i, j): two fp16 stores
            global_write_bytes=pairs * 2 * 2,
            global_atomic_bytes=0, tensor_flops=0,
            # x1*c - x2*s: mul, mul, sub (3); x2*c + x1*s: FMA (2) + mul (1) = 3
            cuda_flops=pairs * 6, sfu_ops=0,
            # X and Y in full, the two (S, D/2) float32 tables in full
            unique_bytes=2 * B * S * H * D * 2 + 2 * S * half * 4),
        rtol=1e-3, tags=("elementwise", "float16", "rope", "extra"),
        note="cos/sin tables (2 x 1 MiB) re-read by all 128 (head, batch) pairs"))

    p = dict(M=8192, K=8192, block_M=8, block_K=512, num_stages=2, threads=128,
             dtype="float32")
    M, K, bm, bk = p["M"], p["K"], p["block_M"], p["block_K"]
    out.append(Case(
        "gemv_tiled_fp32_8192", gemv_tiled, p, _gemv_inputs, _gemv_ref,
        Expected(
            # A once; the bk-slice of x once per iteration of every block: (M/bm) * K
            global_read_bytes=(M * K + cdiv(M, bm) * K) * 4,
            global_write_bytes=M * 4, global_atomic_bytes=0, tensor_flops=0,
            # acc += a * x: one FMA (2) per element of A; reduce_sum over the (bm, bk)
            # accumulator once per block
            cuda_flops=2 * M * K + cdiv(M, bm) * bm * bk,
            sfu_ops=0,
            unique_bytes=(M * K + K + M) * 4),
        rtol=1e-4, tags=("gemv", "float32", "extra"),
        note="8 rows x 512 columns per tile, 2 stages, 1024 blocks"))

    p = dict(M=8192, N=16384, block_M=128, block_N=128, threads=256, dtype="float16")
    M, N = p["M"], p["N"]
    out.append(Case(
        "transpose_op_fp16_8192x16384", transpose_op, p, _transpose_inputs, _transpose_ref,
        Expected(
            # one tile in, one tile out per block; each element moved once
            global_read_bytes=M * N * 2, global_write_bytes=M * N * 2,
            global_atomic_bytes=0, tensor_flops=0, cuda_flops=0, sfu_ops=0,
            unique_bytes=2 * M * N * 2),
        rtol=0.0, tags=("transpose", "float16", "extra"),
        note="non-square matrix, 128x128 shared tiles with T.transpose"))
    return out


# Session 3 probes, each written with its prediction before it ran.
# (a) unswizzled GEMMs whose wave covers every column tile and several rows: how often does a B
#     tile shared inside a wave come from DRAM, as K (iterations), N (sharers per wave) and M
#     (waves) change?  (M, N, K, block_M, block_N, block_K, stages, threads), fp16 NN.
_WAVE_PROBES = [
    (2048, 8192, 2048, 64, 256, 64, 4, 128), (2048, 8192, 4096, 64, 256, 64, 4, 128),
    (2048, 8192, 16384, 64, 256, 64, 4, 128), (2048, 4096, 8192, 64, 256, 64, 4, 128),
    (2048, 16384, 8192, 64, 256, 64, 4, 128), (4096, 8192, 8192, 64, 256, 64, 4, 128),
    (2048, 8192, 8192, 128, 256, 64, 3, 256), (4096, 8192, 8192, 128, 256, 64, 3, 256),
    (4096, 8192, 8192, 128, 128, 64, 3, 128),
]
# (b) one-warpgroup tiles whose 128 KiB accumulator does not fit the registers: local-memory
#     traffic per iteration and its reuse distance change with block_K.  bf16 NT, M=4096 N=6144
#     K=4096: (block_M, block_N, block_K, stages)
_SPILL_PROBES = [(128, 256, 32, 4), (128, 256, 128, 2), (256, 128, 64, 3)]

# Session 4 (c): what puts an unswizzled launch into the drifting state?  All drifting launches
# so far are one-warpgroup 64x256 tiles with 4 stages; the same shape as the drifting
# probe_wave_m4096_n8192_k8192 with fewer stages, and other one-warpgroup tiles with 4 stages.
_DRIFT_PROBES = [  # fp16 NN, M=4096 N=8192 K=8192, unswizzled: (block_M, block_N, block_K, stages)
    (64, 256, 64, 3), (64, 256, 64, 2), (64, 256, 32, 4), (64, 128, 64, 4), (128, 64, 64, 4),
]


# Session 5 (d): which unswizzled launches split into fast and slow SMs?  One variable at a time
# against the drifting 64x256x64 s4 (M=4096 N=8192 K=8192): more stages; a taller grid (N=4096,
# less DRAM re-fetch at stake); a B that fits L2 (N=1024: drift costs no DRAM); the same bytes in
# flight with the L2 under-subscribed (block_K 32 with 6 and 8 stages); L2 over-subscribed with
# one tile in flight (block_K 128, 2 stages); other tiles near the L2 limit (64x192, 64x128 deep)
# or well below it (128x128 one warpgroup, 128x256 two).  (M, N, K, block_M, block_N, block_K,
# stages, threads), fp16 NN.  timeline set 6 records each one's per-SM pace.
PACE_PROBES = [
    (4096, 8192, 8192, 64, 256, 64, 5, 128), (8192, 4096, 8192, 64, 256, 64, 4, 128),
    (16384, 1024, 8192, 64, 256, 64, 4, 128), (4096, 8192, 8192, 64, 256, 32, 6, 128),
    (4096, 8192, 8192, 64, 256, 32, 8, 128), (4096, 8192, 8192, 64, 256, 128, 2, 128),
    (4096, 8192, 8192, 64, 192, 64, 5, 128), (4096, 8192, 8192, 64, 128, 64, 6, 128),
    (4096, 8192, 8192, 128, 128, 64, 4, 128), (4096, 8192, 8192, 128, 256, 64, 4, 256),
]


# Session 5 (e): is the spilling 128x256 tiles' DRAM excess (2.2x the model's spill share) spill
# traffic or tile re-fetch?  One wave (4 x 32 = 128 blocks), B (N = 1024) fits L2: the tiles come
# from DRAM once, so any excess is the spill's.  bf16 NT, 128x256 one warpgroup:
# (M, N, K, block_K, stages)
_SPILL_WAVE_PROBES = [(4096, 1024, 4096, 64, 3), (4096, 1024, 16384, 64, 3), (4096, 1024, 4096, 32, 4)]
# one and two waves of the 128x256x64 three-stage tile (256 threads, warp-specialised) against K:
# session 10 found one-wave launches of it 4.5-6 us slower than the model, many-wave ones not.
# Time per block round against the iterations at 1 and 2 waves: whether the extra cost comes once
# per launch or once per block.  Not yet measured.
_ONEWAVE_PROBES = [(2048, 2048, K) for K in (1024, 4096, 8192, 16384)] + [(4096, 2048, K) for K in (1024, 4096)]
# one wave of other tiles at two depths: does the one-wave launch's extra cost follow the tile's
# accumulator (its epilogue) or come once per block?  (M, N, block_M, block_N, threads)
_ONEWAVE_TILES = [(2048, 1024, 128, 128, 256), (2048, 1024, 128, 128, 128), (512, 4096, 64, 256, 128),
                  (4096, 1024, 256, 128, 256)]


# Session 5 (f): written after the exact reuse distance to test it out of sample -- swizzled small
# tiles whose B (or A) panels are re-touched wave after wave, where the union of the waves in
# between and their summed working sets differ most (64x64: 335 against 521 MB predicted at
# M=12288), and an unswizzled control.  fp16 NN: (M, N, K, block_M, block_N, swizzle)
_REUSE_PROBES = [
    (12288, 3072, 4096, 64, 64, True), (12288, 3072, 4096, 128, 64, True), (12288, 3072, 4096, 64, 128, True),
    (12288, 3072, 4096, 64, 64, False), (8192, 4096, 4096, 64, 64, True), (8192, 4096, 4096, 64, 128, True),
    (8192, 4096, 4096, 128, 64, True),
]


# Session 5 (g): the drift rule, out of sample once more -- other shapes, bf16 with B stored (N, K),
# 64x192 with 4 stages (its window 1.1x the round trip), and three the rule says keep pace.
# (M, N, K, block_M, block_N, block_K, stages, dtype, trans_B, swizzle), 128 threads
_DRIFT_CHECKS = [
    (4096, 12288, 8192, 64, 256, 64, 4, "bfloat16", True, False),
    (4096, 12288, 8192, 64, 256, 64, 3, "bfloat16", True, False),
    (4096, 12288, 8192, 64, 256, 32, 6, "bfloat16", True, False),
    (6144, 10240, 8192, 64, 128, 64, 6, "float16", False, False),
    (6144, 10240, 8192, 64, 192, 64, 4, "float16", False, False),
    (8192, 8192, 8192, 128, 128, 64, 4, "float16", False, False),
    (4096, 8192, 8192, 64, 256, 64, 4, "float16", False, True),
]


def _probe_cases() -> list[Case]:
    out = []
    for M, N, K, bm, bn, bk, s, dt, tb, sw in _DRIFT_CHECKS:
        out.append(_mm_case(f"probe_driftval_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_bk{bk}_s{s}_{'nt' if tb else 'nn'}{'_sw' if sw else ''}",
                            _mm_params(M, N, K, bm, bn, bk, s, 128, dt, dt, trans_B=tb, swizzle=sw), tags=("probe",),
                            rtol=2e-2 if dt == "bfloat16" else 1e-2,
                            note="written after the drift rule: does it drift as predicted?"))
    for M, N, K, bm, bn, sw in _REUSE_PROBES:
        out.append(_mm_case(f"probe_reuse_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_sw{int(sw)}",
                            _mm_params(M, N, K, bm, bn, 64, 4, 128, swizzle=sw), tags=("probe",),
                            note="small tiles whose panels are re-touched wave after wave: L2 reuse distance"))
    for M, N, K, bk, s in _SPILL_WAVE_PROBES:
        out.append(_mm_case(f"probe_spillwave_m{M}_n{N}_k{K}_bk{bk}_s{s}",
                            _mm_params(M, N, K, 128, 256, bk, s, 128, "bfloat16", "bfloat16", trans_B=True),
                            tags=("probe",), note="one wave of spilling 128x256 tiles whose inputs fit L2"))
    for M, N, K, bm, bn, bk, s, t in PACE_PROBES:
        out.append(_mm_case(f"probe_pace_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}",
                            _mm_params(M, N, K, bm, bn, bk, s, t), tags=("probe",),
                            note="unswizzled: do its SMs split into fast and slow, and its blocks drift apart?"))
    for bm, bn, bk, s in _DRIFT_PROBES:
        out.append(_mm_case(f"probe_drift_bm{bm}_bn{bn}_bk{bk}_s{s}_t128",
                            _mm_params(4096, 8192, 8192, bm, bn, bk, s, 128), tags=("probe",),
                            note="unswizzled one-warpgroup tile: do its blocks drift apart?"))
    for M, N, K, bm, bn, bk, s, t in _WAVE_PROBES:
        out.append(_mm_case(f"probe_wave_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_s{s}_t{t}",
                            _mm_params(M, N, K, bm, bn, bk, s, t), tags=("probe",),
                            note="unswizzled: B tiles shared by the rows of one wave"))
    for M, N, K in _ONEWAVE_PROBES:
        out.append(_mm_case(f"probe_onewave_m{M}_n{N}_k{K}_bm128_bn256_s3_t256",
                            _mm_params(M, N, K, 128, 256, 64, 3, 256), tags=("probe",),
                            note="one or two waves of the 128x256 tile against K: the one-wave launch's extra cost"))
    for M, N, bm, bn, t in _ONEWAVE_TILES:
        for K in (1024, 8192):
            out.append(_mm_case(f"probe_onewave_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_s3_t{t}",
                                _mm_params(M, N, K, bm, bn, 64, 3, t), tags=("probe",),
                                note="one wave of another tile at two depths: the one-wave launch's extra cost"))
    for bm, bn, bk, s in _SPILL_PROBES:
        out.append(_mm_case(f"probe_spill_bm{bm}_bn{bn}_bk{bk}_s{s}_t128",
                            _mm_params(4096, 6144, 4096, bm, bn, bk, s, 128, "bfloat16", "bfloat16", trans_B=True),
                            tags=("probe",), note="accumulator larger than one warpgroup's registers"))
    return out


# Written in session 6 (2026-12-01) after the flush write-back (tileroof.gpu.flushwb) was modelled,
# predicted before they ran: memory-bound kernels of the corpus at smaller sizes (67-805 MB of
# traffic), where the harness's flush costs a timed run most, as a share of its time.
def _size_cases() -> list[Case]:
    out = []
    for n in (4096, 8192):
        p = dict(M=n, N=n, block_M=64, block_N=256, threads=256, dtype="float16")
        out.append(Case(f"copy_tile_fp16_{n}", tile_copy, p, _inputs_2d(1), _ref_copy,
                        _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                        tags=("copy", "float16", "size"), note="copy_tile_fp16_16384 at a smaller size"))
        p = dict(M=n, N=n, block_M=32, block_N=256, threads=256, dtype="float32")
        out.append(Case(f"ew_add_fp32_{n}", elementwise_add, p, _inputs_2d(2), _ref_add,
                        _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5,
                        tags=("elementwise", "float32", "size"), note="ew_add_fp32_16384 at a smaller size"))
    p = dict(M=8192, N=8192, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("ew_gelu_tanh_fp16_8192", gelu_tanh, p, _inputs_2d(1), _ref_gelu,
                    _ew_expected(p, 1, sfu_per_elem=1), rtol=2e-3, tags=("elementwise", "float16", "sfu", "size"),
                    note="ew_gelu_tanh_fp16_16384 at a smaller size"))
    for m in (8192, 16384):
        p = dict(M=m, N=4096, block_M=2, threads=256, dtype="bfloat16")
        out.append(Case(f"row_absmax_bf16_{m}x4096", row_absmax, p, _absmax_inputs, _ref_absmax,
                        _reduce_expected(p["M"] * p["N"], 2, p["M"], 4), rtol=0.0,
                        tags=("reduce", "bfloat16", "absmax", "size"), note="read-only; row_absmax_bf16_32768x4096 smaller"))
    for m in (2048, 4096):
        p = dict(M=m, N=8192, block_M=1, threads=512, eps=1e-6, dtype="bfloat16")
        out.append(Case(f"rmsnorm_bf16_{m}x8192", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]), _rms_expected(p),
                        rtol=1e-2, tags=("norm", "bfloat16", "reduce", "size"), note="rmsnorm_bf16_8192x8192 smaller"))
    for m in (1024, 2048):
        p = dict(M=m, N=16384, block_M=1, threads=256, dtype="float32")
        out.append(Case(f"softmax_fp32_{m}x16384", softmax, p, _softmax_inputs, _softmax_ref, _softmax_expected(p),
                        rtol=1e-4, tags=("softmax", "float32", "reduce", "size"), note="softmax_fp32_4096x16384 smaller"))
    for s in (2048, 4096):
        p = dict(batch=32, heads=64, kv_heads=4, seqlen_kv=s, dim=128, block_N=64, block_H=64,
                 num_stages=2, threads=128, dtype="float16", accum_dtype="float32")
        out.append(Case(f"gqa_decode_fp16_b32_h64_kv4_s{s}_d128", gqa_decode, p, _gqa_inputs, _gqa_ref, _gqa_counts(p),
                        rtol=1e-2, tags=("attention", "float16", "decode", "gqa", "size"),
                        note="read-only KV stream; gqa_decode_fp16_b32_h64_kv4_s8192_d128 shorter"))
    return out


# Written in session 6 after the per-run floor (model.timing_floor) was adopted, to test it out of
# sample: short kernels (about 5-60 us) of every family, predicted before they ran.
def _short_cases() -> list[Case]:
    out = [
        _mm_case("gemm_nn_fp16_2048", _mm_params(2048, 2048, 2048, 128, 128, 32, 3, 128), tags=("short",),
                 note="2048^3: 256 blocks, 64 iterations each"),
        _mm_case("gemm_nn_bf16_4096x4096x1024", _mm_params(4096, 4096, 1024, 128, 256, 64, 3, 256, "bfloat16",
                                                            "bfloat16", swizzle=True), rtol=2e-2, tags=("short",),
                 note="two warpgroups, 128x256 tiles, 16 iterations"),
        _mm_case("gemm_nt_fp16_1024x8192x2048", _mm_params(1024, 8192, 2048, 128, 128, 64, 4, 128, trans_B=True),
                 tags=("short",), note="B stored (N, K)"),
        _fa_case("fa_fwd_fp16_b1_h16_s1024_d128", _fa_params(1, 16, 1024, 128, False, 128, 128, 2, 256),
                 note="128 blocks, 8 key tiles each"),
        _fa_case("fa_fwd_causal_bf16_b2_h16_s2048_d64", _fa_params(2, 16, 2048, 64, True, 128, 64, 2, 256,
                                                                  dtype="bfloat16"), rtol=2e-2,
                 note="causal, head dim 64"),
    ]
    p = dict(M=2048, N=2048, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("copy_tile_fp16_2048", tile_copy, p, _inputs_2d(1), _ref_copy,
                    _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                    tags=("copy", "float16", "short"), note="16 MB of traffic"))
    p = dict(M=2048, N=2048, block_M=32, block_N=256, threads=256, dtype="float32")
    out.append(Case("ew_add_fp32_2048", elementwise_add, p, _inputs_2d(2), _ref_add,
                    _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5,
                    tags=("elementwise", "float32", "short"), note="50 MB of traffic"))
    p = dict(M=1024, N=8192, block_M=1, threads=512, eps=1e-6, dtype="bfloat16")
    out.append(Case("rmsnorm_bf16_1024x8192", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]), _rms_expected(p),
                    rtol=1e-2, tags=("norm", "bfloat16", "reduce", "short"), note="34 MB of traffic"))
    p = dict(M=512, N=16384, block_M=1, threads=256, dtype="float32")
    out.append(Case("softmax_fp32_512x16384", softmax, p, _softmax_inputs, _softmax_ref, _softmax_expected(p),
                    rtol=1e-4, tags=("softmax", "float32", "reduce", "short"), note="67 MB of traffic"))
    p = dict(M=4096, N=4096, block_M=2, threads=256, dtype="bfloat16")
    out.append(Case("row_absmax_bf16_4096x4096", row_absmax, p, _absmax_inputs, _ref_absmax,
                    _reduce_expected(p["M"] * p["N"], 2, p["M"], 4), rtol=0.0,
                    tags=("reduce", "bfloat16", "absmax", "short"), note="read-only, 34 MB"))
    return out


# Session 17 (2026-12-02): the corpus had one case under 10 us.  Small kernels of every family
# (about 2-15 us of body, 1-130 blocks or a few waves), written before any model change of the
# session and predicted before they ran: the launch floor, the first tiles' DRAM round trip and
# one-wave lock-step phases decide their time.
def _tiny_cases() -> list[Case]:
    out = [
        _mm_case("tiny_gemm_fp16_512", _mm_params(512, 512, 512, 128, 128, 32, 3, 128), tags=("tiny",),
                 note="16 blocks, 16 iterations"),
        _mm_case("tiny_gemm_fp16_1024x1024x512", _mm_params(1024, 1024, 512, 128, 128, 64, 3, 128), tags=("tiny",),
                 note="64 blocks, 8 iterations"),
        _mm_case("tiny_gemm_fp16_1024x2048x1024", _mm_params(1024, 2048, 1024, 128, 128, 64, 3, 128),
                 tags=("tiny",), note="128 blocks, 16 iterations"),
        _mm_case("tiny_gemm_bf16_2048x2048x512_bn256", _mm_params(2048, 2048, 512, 128, 256, 64, 3, 256, "bfloat16",
                                                                  "bfloat16"), rtol=2e-2, tags=("tiny",),
                 note="128 blocks of 128x256, 8 iterations, two consumer warpgroups"),
        _fa_case("tiny_fa_fwd_fp16_b1_h8_s512_d64", _fa_params(1, 8, 512, 64, False, 128, 128, 2, 256),
                 note="32 blocks, 4 key tiles each"),
        _fa_case("tiny_fa_fwd_fp16_b1_h32_s512_d128", _fa_params(1, 32, 512, 128, False, 128, 128, 2, 256),
                 note="128 blocks, 4 key tiles each"),
        _fa_case("tiny_fa_fwd_causal_fp16_b1_h16_s1024_d64", _fa_params(1, 16, 1024, 64, True, 128, 64, 2, 256),
                 note="causal, 128 blocks, 2-16 key tiles"),
    ]
    for M, N in ((1024, 1024), (1536, 1536)):
        p = dict(M=M, N=N, block_M=64, block_N=256, threads=256, dtype="float16")
        out.append(Case(f"tiny_copy_tile_fp16_{M}", tile_copy, p, _inputs_2d(1), _ref_copy,
                        _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                        tags=("copy", "float16", "tiny"), note=f"{cdiv(M, 64) * cdiv(N, 256)} blocks"))
    for M, N in ((1024, 1024), (1024, 2048)):
        p = dict(M=M, N=N, block_M=32, block_N=256, threads=256, dtype="float32")
        out.append(Case(f"tiny_ew_add_fp32_{M}x{N}", elementwise_add, p, _inputs_2d(2), _ref_add,
                        _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5,
                        tags=("elementwise", "float32", "tiny"), note=f"{cdiv(M, 32) * cdiv(N, 256)} blocks"))
    p = dict(M=2048, N=2048, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("tiny_ew_gelu_tanh_fp16_2048", gelu_tanh, p, _inputs_2d(1), _ref_gelu,
                    _ew_expected(p, 1, sfu_per_elem=1), rtol=2e-3, tags=("elementwise", "float16", "sfu", "tiny"),
                    note="256 blocks, one tanh per element"))
    p = dict(M=1024, N=4096, block_M=64, block_N=256, threads=256, dtype="bfloat16")
    M, N = p["M"], p["N"]
    out.append(Case("tiny_ew_mul_bf16_1024x4096", elementwise_mul, p, _mul_inputs, _mul_ref,
                    Expected(global_read_bytes=2 * M * N * 2, global_write_bytes=M * N * 2, global_atomic_bytes=0,
                             tensor_flops=0, cuda_flops=M * N, sfu_ops=0, unique_bytes=3 * M * N * 2),
                    rtol=5e-3, tags=("elementwise", "bfloat16", "tiny"), note="256 blocks"))
    for m in (256, 512):
        p = dict(M=m, N=8192, block_M=1, threads=512, eps=1e-6, dtype="bfloat16")
        out.append(Case(f"tiny_rmsnorm_bf16_{m}x8192", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]),
                        _rms_expected(p), rtol=1e-2, tags=("norm", "bfloat16", "reduce", "tiny"),
                        note=f"{m} rows, one per block"))
    for m in (128, 256):
        p = dict(M=m, N=16384, block_M=1, threads=256, dtype="float32")
        out.append(Case(f"tiny_softmax_fp32_{m}x16384", softmax, p, _softmax_inputs, _softmax_ref,
                        _softmax_expected(p), rtol=1e-4, tags=("softmax", "float32", "reduce", "tiny"),
                        note=f"{m} rows, one per block"))
    p = dict(M=1024, N=4096, block_M=2, threads=256, dtype="bfloat16")
    out.append(Case("tiny_row_absmax_bf16_1024x4096", row_absmax, p, _absmax_inputs, _ref_absmax,
                    _reduce_expected(p["M"] * p["N"], 2, p["M"], 4), rtol=0.0,
                    tags=("reduce", "bfloat16", "absmax", "tiny"), note="512 blocks, read-only 8 MB"))
    p = dict(M=4096, N=4096, op="sum", block_M=16, block_N=256, num_stages=3, threads=128, dtype="float16",
             out_dtype="float32")
    out.append(dataclasses.replace(_rowsum_case("tiny_rowsum_fp16_4096x4096", p, None),
                                   tags=("reduce", "float16", "tiny"), note="256 blocks of 16 rows, 16 iterations"))
    p = dict(M=2048, K=2048, block_M=8, block_K=512, num_stages=2, threads=128, dtype="float32")
    M, K, bm, bk = p["M"], p["K"], p["block_M"], p["block_K"]
    out.append(Case("tiny_gemv_tiled_fp32_2048", gemv_tiled, p, _gemv_inputs, _gemv_ref,
                    Expected(global_read_bytes=(M * K + cdiv(M, bm) * K) * 4, global_write_bytes=M * 4,
                             global_atomic_bytes=0, tensor_flops=0, cuda_flops=2 * M * K + cdiv(M, bm) * bm * bk,
                             sfu_ops=0, unique_bytes=(M * K + K + M) * 4),
                    rtol=1e-4, tags=("gemv", "float32", "tiny"), note="256 blocks of 8 rows, 4 iterations"))
    p = dict(M=2048, N=2048, block_M=128, block_N=128, threads=256, dtype="float16")
    M, N = p["M"], p["N"]
    out.append(Case("tiny_transpose_op_fp16_2048", transpose_op, p, _transpose_inputs, _transpose_ref,
                    Expected(global_read_bytes=M * N * 2, global_write_bytes=M * N * 2, global_atomic_bytes=0,
                             tensor_flops=0, cuda_flops=0, sfu_ops=0, unique_bytes=2 * M * N * 2),
                    rtol=0.0, tags=("transpose", "float16", "tiny"), note="256 blocks of 128x128"))
    p = dict(batch=8, heads=64, kv_heads=4, seqlen_kv=1024, dim=128, block_N=64, block_H=64,
             num_stages=2, threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("tiny_gqa_decode_fp16_b8_h64_kv4_s1024_d128", gqa_decode, p, _gqa_inputs, _gqa_ref,
                    _gqa_counts(p), rtol=1e-2, tags=("attention", "float16", "decode", "gqa", "tiny"),
                    note="32 blocks, 16 KV tiles each"))
    return out


# Session 18: the tiny cases of run 108 were under-predicted wherever no pipelined loop hides a
# block's waits (DRAM-bound element-wise, copy and row kernels: -4 ... -35 %; Nsight's duration 3-7 us
# above their bytes at the copy bandwidth).  A block of such a kernel loads, waits a DRAM round trip,
# computes and stores, one phase after the other.  These probes time that chain: a copy of 64 B to
# 128 KiB per block at one block per SM (132 blocks), then rounds of 128 KiB blocks at one per SM
# (264 ... 1056 blocks: shared memory admits one), co-resident 32 KiB blocks (2 and 6 per SM, two
# waves), and the same single round with compute in the chain (add, tanh, SiLU's division).
def chain_probes() -> list[Case]:
    out = []

    def copy(tag, bm, bn, gy, gx, threads=256):
        p = dict(M=bm * gy, N=bn * gx, block_M=bm, block_N=bn, threads=threads, dtype="float16")
        out.append(Case(f"probe_chain_copy_{bm}x{bn}_g{gx * gy}{tag}", tile_copy, p, _inputs_2d(1), _ref_copy,
                        _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                        tags=("copy", "float16", "chain", "probe"),
                        note=f"{gx * gy} blocks, {bm * bn * 2} B in and out per block"))

    copy("", 1, 64, 1, 1, threads=32)
    copy("", 1, 64, 132, 1, threads=32)
    copy("", 1, 64, 1056, 1, threads=32)
    copy("", 64, 64, 12, 11)
    copy("", 64, 256, 12, 11)
    for rounds in (1, 2, 4, 8):
        copy("", 256, 256, 12 * rounds, 11)
    for per_sm in (2, 6, 12):
        copy("", 64, 256, 12 * per_sm, 11)
    p = dict(M=32 * 12, N=256 * 11, block_M=32, block_N=256, threads=256, dtype="float32")
    out.append(Case("probe_chain_add_32x256_g132", elementwise_add, p, _inputs_2d(2), _ref_add,
                    _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5,
                    tags=("elementwise", "float32", "chain", "probe"), note="132 blocks, two 32 KiB loads"))
    p = dict(M=64 * 12, N=256 * 11, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case("probe_chain_gelu_64x256_g132", gelu_tanh, p, _inputs_2d(1), _ref_gelu,
                    _ew_expected(p, 1, sfu_per_elem=1), rtol=2e-3,
                    tags=("elementwise", "float16", "sfu", "chain", "probe"), note="132 blocks, a tanh per element"))
    for gy in (12, 96):
        p = dict(M=64 * gy, N=256 * 11, block_M=64, block_N=256, threads=256, dtype="float16")
        out.append(Case(f"probe_chain_silu_mul_64x256_g{gy * 11}", silu_mul, p, _inputs_2d(2), _ref_silu_mul,
                        _ew_expected(p, 2, sfu_per_elem=1), rtol=2e-3,
                        tags=("elementwise", "float16", "chain", "probe"),
                        note=f"{gy * 11} blocks, an IEEE division per element"))
    return out


# Session 18: kernels without a pipelined loop at shapes and tiles the corpus lacked (one wave, a
# few waves, other tiles and block sizes), written after the block-chain rule (model.block_chain)
# and predicted before they ran, to check it out of sample: "chaincheck" (run 110), then
# "chaincheck2" after the flush write-back in the chain's phases.
CHAIN_CHECKS = {
    "chaincheck": dict(
        copies=((2048, 1024, 128, 128, 256), (3072, 3072, 64, 128, 128), (3072, 2048, 256, 128, 256)),
        adds=((2048, 512, 32, "float32"), (1024, 4096, 64, "float16")), gelu=(1024, 4096), silu=(2048, 2048),
        softmaxes=((384, 8192, "float32"), (1024, 4096, "float16")), rmsnorm=(128, 16384, 512),
        layernorm=(1024, 2048), absmax=(512, 8192), transpose=(1024, 2048), mul=(2048, 2048)),
    "chaincheck2": dict(
        copies=((4096, 1024, 128, 64, 128), (1024, 1024, 256, 64, 256)),
        adds=((1024, 4096, 32, "float32"), (2048, 2048, 128, "float16")), gelu=(2048, 4096), silu=(1024, 4096),
        softmaxes=((768, 4096, "float32"), (256, 16384, "float16")), rmsnorm=(1024, 4096, 256),
        layernorm=(2048, 1024), absmax=(2048, 2048), transpose=(2048, 1024), mul=(1024, 8192)),
}


def _chain_check_cases(prefix: str = "chaincheck") -> list[Case]:
    spec = CHAIN_CHECKS[prefix]
    out = []
    tags = (prefix, "extra")

    for M, N, bm, bn, threads in spec["copies"]:
        p = dict(M=M, N=N, block_M=bm, block_N=bn, threads=threads, dtype="float16")
        out.append(Case(f"{prefix}_copy_fp16_{M}x{N}_{bm}x{bn}_t{threads}", tile_copy, p, _inputs_2d(1), _ref_copy,
                        _ew_expected(p, 1, flops_per_elem=0, sfu_per_elem=0), rtol=0.0,
                        tags=("copy", "float16") + tags, note=f"{cdiv(M, bm) * cdiv(N, bn)} blocks"))
    for M, N, bm, dt in spec["adds"]:
        p = dict(M=M, N=N, block_M=bm, block_N=256, threads=256 if dt == "float32" or bm < 128 else 128, dtype=dt)
        out.append(Case(f"{prefix}_ew_add_{dt}_{M}x{N}", elementwise_add, p, _inputs_2d(2), _ref_add,
                        _ew_expected(p, 2, flops_per_elem=1, sfu_per_elem=0), rtol=1e-5 if dt == "float32" else 1e-3,
                        tags=("elementwise", dt) + tags, note=f"{cdiv(M, bm) * cdiv(N, 256)} blocks"))
    M, N = spec["gelu"]
    p = dict(M=M, N=N, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case(f"{prefix}_gelu_tanh_fp16_{M}x{N}", gelu_tanh, p, _inputs_2d(1), _ref_gelu,
                    _ew_expected(p, 1, sfu_per_elem=1), rtol=2e-3, tags=("elementwise", "float16", "sfu") + tags,
                    note=f"{cdiv(M, 64) * cdiv(N, 256)} blocks, a tanh per element"))
    M, N = spec["silu"]
    p = dict(M=M, N=N, block_M=64, block_N=256, threads=256, dtype="float16")
    out.append(Case(f"{prefix}_silu_mul_fp16_{M}x{N}", silu_mul, p, _inputs_2d(2), _ref_silu_mul,
                    _ew_expected(p, 2, sfu_per_elem=1), rtol=2e-3, tags=("elementwise", "float16") + tags,
                    note=f"{cdiv(M, 64) * cdiv(N, 256)} blocks, an IEEE division per element"))
    for M, N, dt in spec["softmaxes"]:
        p = dict(M=M, N=N, block_M=1, threads=256, dtype=dt)
        out.append(Case(f"{prefix}_softmax_{dt}_{M}x{N}", softmax, p, _softmax_inputs, _softmax_ref,
                        _softmax_expected(p), rtol=1e-4 if dt == "float32" else 2e-3,
                        tags=("softmax", dt, "reduce") + tags, note=f"{M} rows, one per block"))
    M, N, threads = spec["rmsnorm"]
    p = dict(M=M, N=N, block_M=1, threads=threads, eps=1e-6, dtype="bfloat16")
    out.append(Case(f"{prefix}_rmsnorm_bf16_{M}x{N}", rms_norm, p, _rms_inputs, _rms_ref_for(p["eps"]),
                    _rms_expected(p), rtol=1e-2, tags=("norm", "bfloat16", "reduce") + tags,
                    note=f"{M} rows of {N}, one per block"))
    M, N = spec["layernorm"]
    p = dict(M=M, N=N, block_M=4, threads=256, eps=1e-5, dtype="float16")
    bm = p["block_M"]
    out.append(Case(f"{prefix}_layernorm_fp16_{M}x{N}", layer_norm, p, _ln_inputs, _ln_ref_for(p["eps"]),
                    Expected(global_read_bytes=M * N * 2 + cdiv(M, bm) * 2 * N * 2, global_write_bytes=M * N * 2,
                             global_atomic_bytes=0, tensor_flops=0, cuda_flops=M * N * 9 + M * 3,
                             sfu_ops=cdiv(M, bm) * bm, unique_bytes=(2 * M * N + 2 * N) * 2),
                    rtol=2e-3, tags=("norm", "float16", "reduce") + tags, note=f"{cdiv(M, bm)} blocks of 4 rows"))
    M, N = spec["absmax"]
    p = dict(M=M, N=N, block_M=2, threads=256, dtype="bfloat16")
    out.append(Case(f"{prefix}_row_absmax_bf16_{M}x{N}", row_absmax, p, _absmax_inputs, _ref_absmax,
                    _reduce_expected(M * N, 2, M, 4), rtol=0.0,
                    tags=("reduce", "bfloat16", "absmax") + tags, note=f"{M // 2} blocks, read-only"))
    M, N = spec["transpose"]
    p = dict(M=M, N=N, block_M=128, block_N=128, threads=256, dtype="float16")
    out.append(Case(f"{prefix}_transpose_fp16_{M}x{N}", transpose_op, p, _transpose_inputs, _transpose_ref,
                    Expected(global_read_bytes=M * N * 2, global_write_bytes=M * N * 2, global_atomic_bytes=0,
                             tensor_flops=0, cuda_flops=0, sfu_ops=0, unique_bytes=2 * M * N * 2),
                    rtol=0.0, tags=("transpose", "float16") + tags, note=f"{cdiv(M, 128) * cdiv(N, 128)} blocks of 128x128"))
    M, N = spec["mul"]
    p = dict(M=M, N=N, block_M=64, block_N=256, threads=256, dtype="bfloat16")
    out.append(Case(f"{prefix}_ew_mul_bf16_{M}x{N}", elementwise_mul, p, _mul_inputs, _mul_ref,
                    Expected(global_read_bytes=2 * M * N * 2, global_write_bytes=M * N * 2, global_atomic_bytes=0,
                             tensor_flops=0, cuda_flops=M * N, sfu_ops=0, unique_bytes=3 * M * N * 2),
                    rtol=5e-3, tags=("elementwise", "bfloat16") + tags, note=f"{cdiv(M, 64) * cdiv(N, 256)} blocks"))
    return out


# Written in session 19 after the warp-specialised pipeline's refill law ((latency + the time a stage
# is held) / stages, model.pipeline_at_clock) replaced latency / (stages - 1), predicted under both
# before they ran: WS GEMMs at 2-3 stages and one-warpgroup flash attention with small K/V tiles on
# shapes the record does not have.
STAGE_CHECKS_GEMM = [  # (M, N, K, block_M, block_N, block_K, stages, threads, dtype, swizzle)
    (6144, 6144, 4096, 128, 128, 32, 2, 128, "float16", True),
    (6144, 6144, 4096, 128, 128, 64, 2, 128, "float16", True),
    (6144, 6144, 4096, 128, 256, 32, 2, 256, "float16", True),
    (6144, 6144, 4096, 64, 128, 64, 2, 128, "float16", True),
    (6144, 6144, 4096, 128, 128, 32, 3, 128, "float16", True),
    (6144, 6144, 4096, 256, 128, 32, 2, 256, "float16", True),
    (4096, 12288, 3072, 128, 128, 32, 2, 128, "bfloat16", True),
    (4096, 12288, 3072, 64, 256, 32, 2, 128, "bfloat16", True),
    (8192, 4096, 2048, 128, 64, 64, 2, 128, "float16", False),
]
STAGE_CHECKS_FA = [  # (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads)
    (2, 16, 4096, 128, False, 64, 32, 2, 128),
    (4, 16, 2048, 64, False, 64, 32, 2, 128),
    (2, 16, 4096, 128, False, 64, 64, 2, 128),
    (1, 32, 4096, 128, False, 128, 32, 2, 256),
    (2, 16, 4096, 128, True, 64, 32, 2, 128),
    (2, 16, 4096, 128, False, 64, 32, 1, 128),
    (4, 16, 2048, 64, False, 64, 64, 1, 128),
    # one wave (132 blocks, starting together) against 16 waves of the same blocks (session 19's plan:
    # do the K/V tiles of a one-stage loop wait less when the blocks sharing them run staggered?)
    (1, 2, 4224, 128, False, 64, 32, 1, 128),
    (1, 32, 4224, 128, False, 64, 32, 1, 128),
    (1, 2, 4224, 128, False, 64, 32, 2, 128),
    (1, 32, 4224, 128, False, 64, 32, 2, 128),
    # heads that never straddle a wave with a 4 KiB head stride, and heads that do with 8 KiB: which
    # of the two made run 115's one-stage case iterate 25 % faster than run 122's
    (2, 16, 4224, 128, False, 64, 32, 1, 128),
    (1, 32, 4096, 128, False, 64, 32, 1, 128),
    # heads of 44 and 33 blocks: no straddling, a head on a third / a quarter of the SMs (run 123)
    (1, 24, 2816, 128, False, 64, 32, 1, 128),
    (1, 32, 2112, 128, False, 64, 32, 1, 128),
]


def _stage_check_cases() -> list[Case]:
    return ([_gemm_check_case("stagecheck", *row, note="warp-specialised pipeline at 2-3 stages (session 19 refill law)")
             for row in STAGE_CHECKS_GEMM]
            + _fa_table_cases("stagecheck", STAGE_CHECKS_FA,
                              "one- or two-warpgroup attention, small K/V tiles (session 19 refill law)"))


def _dtype_tag(dtype: str) -> str:
    """The short dtype name of a check case's name (fp16, bf16, fp32)."""
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}[dtype]


def _gemm_check_case(prefix, M, N, K, bm, bn, bk, s, t, dt, sw, note) -> Case:
    """The corpus GEMM (A and C in `dt`) of a check set, named
    prefix_gemm_{fp16|bf16}_MxNxK_bm.._bn.._bk.._s.._t.._sw{0|1} and tagged with the prefix."""
    return _mm_case(f"{prefix}_gemm_{_dtype_tag(dt)}_{M}x{N}x{K}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}_sw{int(sw)}",
                    _mm_params(M, N, K, bm, bn, bk, s, t, dt, dt, swizzle=sw),
                    rtol=1e-2 if dt == "float16" else 2e-2, tags=(prefix,), note=note)


def _fa_check_case(prefix, b, h, S, d, causal, bm, bn, s, t, note, dtype="float16", rtol=1e-2) -> Case:
    """The corpus flash-attention forward of a check set, named
    prefix_fa[_causal]_{fp16|bf16}_b.._h.._s.._d.._bm.._bn.._s.._t..."""
    return _fa_case(f"{prefix}_fa{'_causal' if causal else ''}_{_dtype_tag(dtype)}_b{b}_h{h}_s{S}_d{d}_bm{bm}_bn{bn}_s{s}_t{t}",
                    _fa_params(b, h, S, d, causal, bm, bn, s, t, dtype=dtype), rtol=rtol, note=note)


def _fa_table_cases(prefix: str, table, note: str) -> list[Case]:
    """_fa_check_case (fp16) at each (batch, heads, seq_len, dim, causal, block_M, block_N, stages,
    threads) of `table`."""
    return [_fa_check_case(prefix, *row, note=note) for row in table]


# Session 20: written after model._schedule_followers (blocks that read the same loop tiles as an
# earlier-started block of their group wait the L2 tile latency), predicted before they ran: one-
# stage attention at other head sizes in blocks (16, 48, 128 a head straddle the 132 slots; 132 a
# head fills each wave with one head, in step), 64x64 tiles at head dim 64 and 128, straddling and
# aligned, causal, and GQA (four query heads' blocks on one K/V head: one group of 256 blocks)
FOLLOW_CHECKS_FA = [  # (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads)
    (2, 16, 3072, 128, False, 64, 32, 1, 128),
    (8, 16, 1024, 128, False, 64, 32, 1, 128),
    (1, 16, 8192, 128, False, 64, 32, 1, 128),
    (1, 8, 8448, 128, False, 64, 32, 1, 128),
    (2, 16, 4096, 64, False, 64, 64, 1, 128),
    (1, 32, 2112, 128, False, 64, 64, 1, 128),
    (1, 32, 4096, 128, True, 64, 64, 1, 128),
    (2, 16, 2048, 128, True, 64, 32, 1, 128),
]
FOLLOW_CHECKS_GQA = [  # (batch, heads, groups, seq_len, dim, causal, block_M, block_N, stages, threads)
    (1, 32, 4, 4096, 128, False, 64, 32, 1, 128),
    (1, 32, 4, 4224, 128, False, 64, 32, 1, 128),
]


def _follow_check_cases() -> list[Case]:
    from .up_attn import _case as _up_case, _params as _up_params, gqa_fwd_bshd
    out = _fa_table_cases("followcheck", FOLLOW_CHECKS_FA,
                          "one-stage attention: followers of a head's first blocks (session 20)")
    for b, h, g, S, d, causal, bm, bn, s, t in FOLLOW_CHECKS_GQA:
        out.append(_up_case(f"followcheck_gqa_fp16_b{b}_h{h}_g{g}_s{S}_d{d}_bm{bm}_bn{bn}_s{s}_t{t}", gqa_fwd_bshd,
                            _up_params(b, h, S, d, causal, bm, bn, s, t, groups=g),
                            "example_gqa_fwd_bshd.py (flashattn)",
                            "one stage, 64x32 tiles: the query heads of one K/V head follow its first blocks (session 20)"))
    return out


# Session 20: a blind check of the whole model, not of one mechanism -- GEMMs and attention forwards
# drawn (seeded, before anything was measured) from the shapes and autotune configurations a user
# would try, at sizes the corpus does not hold, predicted before they ran
_BLIND_MNK = (1536, 2560, 3072, 3584, 5120, 6144, 7168, 10240)
_BLIND_GEMM_TILES = ((128, 128, 32, 3, 128), (128, 128, 64, 3, 128), (128, 256, 64, 3, 256), (64, 128, 64, 4, 128),
                     (64, 256, 64, 3, 128), (128, 64, 64, 4, 128), (256, 128, 32, 3, 256), (128, 128, 64, 2, 256))
_BLIND_FA_TILES = ((128, 128, 2, 256), (128, 64, 2, 256), (64, 64, 2, 128), (64, 128, 2, 128), (128, 128, 1, 256),
                   (64, 64, 1, 128))


def _blind_check_cases() -> list[Case]:
    import random
    rng = random.Random(20261204)
    out = []
    note = "drawn at random from typical shapes and autotune tiles (session 20 blind check)"
    for _ in range(10):
        M, N, K = (rng.choice(_BLIND_MNK) for _ in range(3))
        bm, bn, bk, s, t = rng.choice(_BLIND_GEMM_TILES)
        dt, sw = rng.choice(("float16", "bfloat16")), rng.random() < 0.5
        out.append(_gemm_check_case("blindcheck", M, N, K, bm, bn, bk, s, t, dt, sw, note=note))
    for _ in range(8):
        b, h, S = rng.choice((1, 2, 4)), rng.choice((8, 16, 32)), rng.choice((1536, 2560, 3584))
        d, causal, dt = rng.choice((64, 128)), rng.random() < 0.5, rng.choice(("float16", "bfloat16"))
        bm, bn, s, t = rng.choice(_BLIND_FA_TILES)
        out.append(_fa_check_case("blindcheck", b, h, S, d, causal, bm, bn, s, t, note=note, dtype=dt, rtol=2e-2))
    return out


# Written in session 6 after unannotated copy loops became one-stage pipelines (walk._serial_pipeline),
# predicted before they ran: GEMMs with num_stages = 0 (no pipelining, no warp specialisation; several
# blocks per SM) and 1.
def _stage_cases() -> list[Case]:
    return [
        _mm_case("gemm_nn_fp16_4096_s0", _mm_params(4096, 4096, 4096, 128, 128, 32, 0, 128), tags=("stages",),
                 note="T.Pipelined(num_stages=0): a serial load -> wait -> gemm loop"),
        _mm_case("gemm_nn_fp16_4096_s1", _mm_params(4096, 4096, 4096, 128, 128, 32, 1, 128), tags=("stages",),
                 note="one stage, warp-specialised"),
        _mm_case("gemm_nn_fp16_4096_bm64_s0", _mm_params(4096, 4096, 4096, 64, 64, 64, 0, 128), tags=("stages",),
                 note="num_stages=0 with 64x64 tiles: more blocks per SM"),
        _mm_case("gemm_nn_bf16_4096_bk64_s0_t256", _mm_params(4096, 4096, 4096, 128, 128, 64, 0, 256, "bfloat16",
                                                               "bfloat16"), rtol=2e-2, tags=("stages",),
                 note="num_stages=0, two warpgroups"),
    ]


# Written in session 6 to measure what the L2 model does with gathers whose indices are not affine in
# the block index (no tile key: DRAM = every issued byte once the buffer exceeds the L2), predicted
# before they ran: the corpus convolutions with an input of 143 / 134 MB instead of 36 / 34 MB.
def _conv_cases() -> list[Case]:
    base = dict(N=64, C=256, H=64, W=64, F=256, K=3, S=1, D=1, block_M=128, block_N=128,
                block_K=64, num_stages=3, threads=256, dtype="float16", accum_dtype="float32")
    return [
        _conv_case("conv2d_im2col_fp16_n64_64x64_c256_f256_k3_p1", dict(base, P=1),
                   note="conv2d_im2col_fp16_n16_64x64_c256_f256_k3_p1 with a 134 MB input (T.im2col, TMA)"),
        _conv_case("conv2d_im2col_gather_fp16_n64_66x66_c256_f256_k3_p0", dict(base, H=66, W=66, P=0, im2col="gather"),
                   note="the gathered convolution with a 143 MB input: the A tile read element-wise, untiled"),
    ]


# Written after the untiled-read rule (memory.untiled_read), predicted before they ran: gathered
# convolutions of other shapes (5x5, stride 2) with inputs beyond the L2.
def _conv_check_cases() -> list[Case]:
    base = dict(N=32, C=128, F=256, D=1, P=0, block_M=128, block_N=128, block_K=64, num_stages=3, threads=256,
                dtype="float16", accum_dtype="float32", im2col="gather")
    return [
        _conv_case("conv2d_gather_fp16_n32_68x68_c128_f256_k5_p0", dict(base, H=68, W=68, K=5, S=1),
                   note="valid 5x5 (64x64 output), 38 MB input re-read 25x"),
        _conv_case("conv2d_gather_fp16_n32_130x130_c128_f256_k3_s2", dict(base, H=130, W=130, K=3, S=2),
                   note="valid 3x3 stride 2 (64x64 output), 138 MB input"),
    ]


# Written in session 7 after the accumulator-store law (timeline set 8: a fragment stored straight to
# global memory costs the SM ~1.27 ns per L2 write request past the first ~450), predicted before they
# ran: GEMMs of 5-300 us with either epilogue, and two short attention launches.
def _epilogue_cases() -> list[Case]:
    return [
        _mm_case("gemm_nn_fp16_1024", _mm_params(1024, 1024, 1024, 128, 128, 32, 3, 128), tags=("short", "epilogue"),
                 note="TileLang's quickstart GEMM: 64 blocks, 32 iterations"),
        _mm_case("gemm_nn_fp16_2048_bn256", _mm_params(2048, 2048, 2048, 128, 256, 64, 3, 256), tags=("short", "epilogue"),
                 note="128 blocks of 128x256, 32 iterations"),
        _mm_case("gemm_nn_fp16_4096x4096x2048", _mm_params(4096, 4096, 2048, 128, 128, 64, 3, 128),
                 tags=("short", "epilogue"), note="8 waves of 32 iterations"),
        _mm_case("gemm_nn_bf16_8192x8192x512", _mm_params(8192, 8192, 512, 128, 256, 64, 3, 256, "bfloat16",
                                                           "bfloat16", swizzle=True), rtol=2e-2,
                 tags=("short", "epilogue"), note="16 waves of 8 iterations: the epilogue is a third of a block"),
        _mm_case("gemm_nn_fp16_4096x4096x256_bm64", _mm_params(4096, 4096, 256, 64, 128, 64, 4, 128),
                 tags=("short", "epilogue"), note="64x128 tiles, 4 iterations"),
        _mm_case("gemm_nn_fp16_4096x4096x1024_cshared", _mm_params(4096, 4096, 1024, 128, 128, 64, 3, 128, c_shared=True),
                 tags=("short", "epilogue"), note="the accumulator staged through shared memory"),
        _mm_case("gemm_nn_fp16_4096x8192x1024_bn256_cshared",
                 _mm_params(4096, 8192, 1024, 128, 256, 64, 3, 256, c_shared=True), tags=("short", "epilogue"),
                 note="128x256 staged through shared memory"),
        _mm_case("gemm_nt_fp16_2048x2048x8192", _mm_params(2048, 2048, 8192, 128, 128, 64, 4, 128, trans_B=True),
                 tags=("epilogue",), note="one wave of 128 iterations"),
        _fa_case("fa_fwd_fp16_b2_h16_s2048_d128", _fa_params(2, 16, 2048, 128, False, 128, 128, 2, 256),
                 note="512 blocks, 16 key tiles each"),
        _fa_case("fa_fwd_causal_bf16_b4_h8_s1024_d64", _fa_params(4, 8, 1024, 64, True, 128, 64, 2, 256,
                                                                 dtype="bfloat16"), rtol=2e-2,
                 note="causal, 256 blocks of 1-16 key tiles"),
    ]


# Session 7, after runs 55-58: does the store law (measured on fp16 C) hold for fp32 C, whose row
# segments fill whole sectors?  Predicted before they ran.
def _fp32_store_cases() -> list[Case]:
    return [
        _mm_case("gemm_nn_fp16_fp32out_4096x4096x512", _mm_params(4096, 4096, 512, 128, 128, 64, 3, 128,
                                                                  out_dtype="float32"), tags=("short", "epilogue"),
                 note="fp32 C straight from the fragment: 2048 full-sector requests a block"),
        _mm_case("gemm_nn_bf16_fp32out_8192x8192x512_bn256", _mm_params(8192, 8192, 512, 128, 256, 64, 3, 256,
                                                                        "bfloat16", "float32", swizzle=True),
                 rtol=2e-2, tags=("short", "epilogue"), note="128x256 fp32 C: 4096 requests a block"),
        _mm_case("gemm_nn_fp16_fp32out_2048x8192x1024_bm64", _mm_params(2048, 8192, 1024, 64, 128, 64, 4, 128,
                                                                        out_dtype="float32"),
                 tags=("short", "epilogue"), note="64x128 fp32 C"),
        _mm_case("gemm_nn_fp16_fp32out_4096x4096x1024_cshared",
                 _mm_params(4096, 4096, 1024, 128, 128, 64, 3, 128, out_dtype="float32", c_shared=True),
                 tags=("short", "epilogue"), note="fp32 C staged through shared memory"),
    ]


# Session 8, after the tensor boost clock (model.tensor_boost_clock: tensor work runs at 1830 MHz at
# most, not the 1980 MHz boost), predicted before they ran: short and medium tensor kernels of
# shapes and tiles not recorded before.
def _clock_cases() -> list[Case]:
    bf16 = dict(in_dtype="bfloat16", out_dtype="bfloat16")
    return [
        _mm_case("gemm_nn_fp16_3072x3072x1024", _mm_params(3072, 3072, 1024, 128, 128, 64, 3, 128), tags=("short", "clock"),
                 note="576 blocks of 16 iterations, one warpgroup"),
        _mm_case("gemm_nn_bf16_2048x4096x2048_bn256", _mm_params(2048, 4096, 2048, 128, 256, 64, 3, 256, **bf16,
                                                                 swizzle=True),
                 rtol=2e-2, tags=("short", "clock"), note="256 blocks of 128x256, two warpgroups"),
        _mm_case("gemm_nt_fp16_2048x2048x4096_bn256", _mm_params(2048, 2048, 4096, 128, 256, 64, 3, 256, trans_B=True),
                 tags=("short", "clock"), note="one wave of 128 blocks, 64 iterations"),
        _mm_case("gemm_nn_fp16_1024x4096x4096", _mm_params(1024, 4096, 4096, 128, 128, 32, 4, 128),
                 tags=("short", "clock"), note="256 blocks of 128 iterations"),
        _mm_case("gemm_nn_fp16_4096x2048x512_bm64", _mm_params(4096, 2048, 512, 64, 128, 64, 4, 128),
                 tags=("short", "clock"), note="1024 blocks of 8 iterations"),
        _mm_case("gemm_nn_bf16_4096x4096x4096_bn256", _mm_params(4096, 4096, 4096, 128, 256, 64, 3, 256, **bf16,
                                                                 swizzle=True),
                 rtol=2e-2, tags=("clock",), note="a medium two-warpgroup GEMM, 4 waves of 64 iterations"),
        _fa_case("fa_fwd_fp16_b2_h8_s1024_d128", _fa_params(2, 8, 1024, 128, False, 128, 128, 2, 256),
                 note="128 blocks, 8 key tiles each"),
        _fa_case("fa_fwd_causal_fp16_b1_h32_s2048_d128", _fa_params(1, 32, 2048, 128, True, 128, 128, 2, 256),
                 note="causal, 512 blocks of 1-16 key tiles"),
        _fa_case("fa_fwd_bf16_b4_h16_s1024_d64", _fa_params(4, 16, 1024, 64, False, 64, 128, 2, 128, dtype="bfloat16"),
                 rtol=2e-2, note="one warpgroup, head dim 64"),
    ]


def _nows_cases() -> list[Case]:
    """Dense GEMMs compiled without TMA and warp specialisation (the grouped GEMM's loop with one
    group: tl.disable_tma_lower, tl.disable_warp_specialized), written after session 9's
    non-warp-specialised iteration law and resident-block share and predicted before they ran:
    three tiles on 4096^3 (2-4 blocks per SM), and 1024 x 1024 x 8192 (64 blocks: fewer than the
    SMs, one per SM)."""
    from .upstream import affine_case, grouped_affine_cpasync

    out = []
    for M, N, K, bM, bN, bK, s, t in ((4096, 4096, 4096, 64, 128, 64, 2, 128),
                                       (4096, 4096, 4096, 128, 128, 32, 3, 128),
                                       (4096, 4096, 4096, 128, 256, 32, 2, 256),
                                       (1024, 1024, 8192, 128, 128, 64, 2, 256)):
        p = dict(G=1, M=M, N=N, K=K, block_M=bM, block_N=bN, block_K=bK, num_stages=s, threads=t, dtype="float16")
        out.append(affine_case(f"gemm_nows_fp16_{M}x{N}x{K}_bm{bM}_bn{bN}_bk{bK}_s{s}_t{t}", grouped_affine_cpasync, p,
                               ("gemm", "float16", "nows", "extra"),
                               "cp.async, no warp specialisation; grid (M tiles, N tiles), M fastest"))
    return out


def _cpasync_loop_case(prefix, G, M, N, K, bM, bN, bK, s, t, tags, note) -> Case:
    """The grouped GEMM's loop with its groups written out, cp.async without producer warps
    (upstream.grouped_affine_cpasync), named {prefix}_g.._m.._n.._k.._bm.._bn.._bk.._s.._t..."""
    from .upstream import affine_case, grouped_affine_cpasync

    p = dict(G=G, M=M, N=N, K=K, block_M=bM, block_N=bN, block_K=bK, num_stages=s, threads=t, dtype="float16")
    return affine_case(f"{prefix}_g{G}_m{M}_n{N}_k{K}_bm{bM}_bn{bN}_bk{bK}_s{s}_t{t}", grouped_affine_cpasync, p,
                       tags, note)


def _stagger_check_cases() -> list[Case]:
    """Session 13: the grouped GEMM's loop (groups written out, cp.async, no producer warps) at
    other groups, shapes and warps per SM, and a dense many-wave cp.async GEMM, written after the
    arrival-order stagger (model.block_stagger) and predicted before they ran: their DRAM bytes
    test the rule."""
    return [_cpasync_loop_case("staggercheck", *c, ("gemm", "float16", "nows", "extra"),
                               "cp.async, no warp specialisation, the grouped GEMM's loop with its groups written out; "
                               "written after the arrival-order stagger, predicted before it ran")
            for c in ((4, 8192, 4096, 4096, 64, 128, 64, 2, 256), (8, 16384, 2048, 4096, 64, 128, 64, 2, 256),
                      (8, 8192, 4096, 4096, 64, 128, 64, 2, 128), (1, 8192, 8192, 2048, 64, 128, 64, 2, 256))]


def _wave_split_probes() -> list[Case]:
    """Session 13: run 95's 4-group cp.async launch (DRAM 2.06 GB measured, 0.80 modelled) cut to
    1, 2, 4 and 8 waves by N (the grid's second axis: 512 ... 4096 columns; 4 of its 128-block rows
    make a wave at 4 blocks per SM): how the re-reads of A grow with the waves -- inside a wave (the
    sharers of an A tile are 128 launches apart) or across them."""
    return [_cpasync_loop_case("probe_wavesplit", 4, 8192, N, 4096, 64, 128, 64, 2, 256,
                               ("gemm", "float16", "nows", "probe"),
                               "cp.async, the grouped GEMM's loop with 4 groups written out, cut to fewer waves by N")
            for N in (512, 1024, 2048, 4096)]


def _apart_check_cases() -> list[Case]:
    """Session 14: the grouped GEMM's loop (groups written out, cp.async, no producer warps) at other
    groups, shapes, tiles and blocks per SM, written after the rule that staggered sharers the SM
    paces keep their gaps (memory.drift_misses apart) and predicted before they ran; one 64 x 64
    launch whose pace the L2 sets (the rule does not apply); and the dense launch the rule made
    worse (staggercheck_g1, +64 %) cut to 1, 2 and 4 waves by N, as run 96 cut the 4-group one."""
    from .upstream import affine_case, grouped_affine_cpasync

    out = [_cpasync_loop_case("apartcheck", *c, ("gemm", "float16", "nows", "extra"),
                              "cp.async, no warp specialisation, the grouped GEMM's loop with its groups written out; "
                              "written after the rule that SM-paced staggered sharers keep their gaps, predicted "
                              "before it ran")
           for c in ((2, 8192, 4096, 4096, 64, 128, 64, 2, 256), (4, 4096, 8192, 8192, 64, 128, 64, 2, 256),
                     (1, 8192, 8192, 4096, 64, 128, 64, 2, 256), (1, 16384, 4096, 2048, 64, 128, 64, 2, 256),
                     (4, 8192, 4096, 4096, 64, 256, 64, 2, 256), (8, 8192, 4096, 4096, 128, 128, 32, 3, 128),
                     (4, 8192, 4096, 4096, 64, 64, 64, 3, 128), (4, 8192, 4096, 4096, 64, 128, 32, 3, 128))]
    # (named without the group count, as run 97 recorded them)
    for N in (512, 1024, 2048):
        p = dict(G=1, M=8192, N=N, K=2048, block_M=64, block_N=128, block_K=64, num_stages=2, threads=256,
                 dtype="float16")
        out.append(affine_case(f"probe_densesplit_m8192_n{N}_k2048_bm64_bn128_bk64_s2_t256", grouped_affine_cpasync,
                               p, ("gemm", "float16", "nows", "probe"),
                               "cp.async dense GEMM (staggercheck_g1) cut to fewer waves by N"))
    return out


def _occupancy_check_cases() -> list[Case]:
    """Session 14: timeline set 16's launches (the grouped loop, 8 groups, cp.async) at 5-8 blocks per
    SM, past the 2-4 the stagger law was read on, predicted before they ran: their DRAM bytes test
    the law's extrapolation (c = blocks x warps per SM x the step, capped at 1) and the apart rule."""
    return [_cpasync_loop_case("occcheck", 8, 8192, 4096, 4096, *c, ("gemm", "float16", "nows", "extra"),
                               "cp.async, no warp specialisation, the grouped GEMM's loop at 5-8 blocks per SM; "
                               "predicted before it ran")
            for c in ((64, 128, 32, 3, 128), (64, 128, 32, 2, 128), (64, 64, 32, 2, 128), (64, 64, 64, 2, 128),
                      (128, 64, 32, 2, 128))]


def _spill_cases() -> list[Case]:
    """Session 11: flash-attention forwards whose fragments do not fit one consumer warpgroup's
    registers (model.register_spill_factor), written after the rule and predicted before they ran:
    other shapes, dtype, head dim, stages and causality than the three the rule was read from, and
    a 128x64 control that fits."""
    return [
        _fa_case("fa_spill_fp16_b2_h16_s4096_d128_bm128_bn128_s2_t128",
                 _fa_params(2, 16, 4096, 128, False, 128, 128, 2, 128),
                 note="128x128 tiles on one consumer warpgroup, 2 stages: S and O accumulators 1.35x its registers"),
        _fa_case("fa_spill_bf16_b4_h16_s2048_d128_bm128_bn128_s1_t128",
                 _fa_params(4, 16, 2048, 128, False, 128, 128, 1, 128, dtype="bfloat16"),
                 note="bf16, 128x128 on one warpgroup, 1 stage"),
        _fa_case("fa_spill_causal_fp16_b2_h32_s4096_d128_bm128_bn128_s1_t128",
                 _fa_params(2, 32, 4096, 128, True, 128, 128, 1, 128),
                 note="causal, 128x128 on one warpgroup, 1 stage"),
        _fa_case("fa_spill_fp16_b4_h32_s2048_d64_bm128_bn128_s1_t128",
                 _fa_params(4, 32, 2048, 64, False, 128, 128, 1, 128),
                 note="head dim 64: 1.07x the registers, a small spill"),
        _fa_case("fa_spill_control_fp16_b4_h32_s2048_d128_bm128_bn64_s1_t128",
                 _fa_params(4, 32, 2048, 128, False, 128, 64, 1, 128),
                 note="control: 128x64 on one warpgroup fits its registers"),
    ]


# Session 12 (2026-12-01): written after the first-wave rules (timeline set 11: the first wave's
# blocks wait a DRAM round trip for every tile and store at the rate the whole GPU's L2 takes),
# predicted before they ran: one wave, a wave and a tail, half a wave, two waves, of other shapes,
# dtypes, stages and launch orders.  (M, N, K, block_M, block_N, stages, threads, dtype, trans_B, swizzle)
_WAVE_CHECKS = [
    (2048, 2048, 2048, 128, 256, 3, 256, "bfloat16", False, False),
    (1024, 2048, 4096, 128, 128, 4, 256, "float16", False, False),
    (2048, 1024, 2048, 64, 128, 4, 128, "float16", False, False),
    (4096, 2048, 2048, 128, 256, 3, 256, "float16", False, False),
    (1536, 1536, 1536, 128, 128, 3, 256, "float16", False, False),
    (3072, 1024, 2048, 128, 128, 3, 256, "float16", True, False),
    (1024, 1024, 2048, 128, 128, 3, 256, "float16", False, False),
    (2048, 4096, 512, 128, 256, 3, 256, "float16", False, True),
]


# Session 12, written after the few-SM stream rule (a grid of fewer blocks than SMs streams its
# DRAM tiles at its own share of the bandwidth, down to the pipeline's round trip), predicted before
# they ran: small GEMMs of 16-64 blocks
_SMALL_GRID_CHECKS = [
    (512, 512, 4096, 128, 128, 3, 256, "float16", False, False),
    (256, 1024, 8192, 64, 128, 4, 128, "float16", False, False),
    (1024, 1024, 1024, 128, 128, 3, 256, "float16", False, False),
    (512, 2048, 2048, 128, 256, 3, 256, "bfloat16", False, False),
    (768, 768, 3072, 128, 128, 4, 256, "float16", True, False),
    (512, 1024, 2048, 64, 64, 4, 128, "float16", False, False),
]


# Session 12, written after the division rule (a thread's IEEE divisions run one after another,
# tileroof.gpu.divchain), predicted before they ran: flash-attention forwards whose epilogue divides
# the accumulator by the row sums, short and long, causal, head dims 64 and 128, one and two
# consumer warpgroups.  (batch, heads, seq_len, dim, causal, block_M, block_N, stages, threads, dtype)
_DIV_CHECKS = [
    (1, 8, 2048, 128, False, 128, 128, 2, 256, "float16"),
    (2, 16, 1024, 64, False, 64, 64, 2, 128, "float16"),
    (1, 32, 1024, 128, True, 128, 64, 2, 256, "bfloat16"),
    (4, 16, 4096, 128, False, 128, 64, 2, 256, "float16"),
    (2, 32, 2048, 64, True, 128, 128, 2, 256, "float16"),
]


def _div_check_cases() -> list[Case]:
    out = []
    for b, h, s, d, causal, bm, bn, st, t, dt in _DIV_CHECKS:
        name = (f"divcheck_fa{'_causal' if causal else ''}_{'bf16' if dt == 'bfloat16' else 'fp16'}_b{b}_h{h}_s{s}_d{d}"
                f"_bm{bm}_bn{bn}_s{st}_t{t}")
        out.append(_fa_case(name, _fa_params(b, h, s, d, causal, bm, bn, st, t, dt),
                            rtol=2e-2 if dt == "bfloat16" else 1e-2,
                            note="written after the division rule, predicted before it ran"))
    return out


def _wave_check_cases() -> list[Case]:
    out = []
    for M, N, K, bm, bn, s, t, dt, tb, sw, rule in ([c + ("the first-wave rules",) for c in _WAVE_CHECKS]
                                                    + [c + ("the few-SM stream rule",) for c in _SMALL_GRID_CHECKS]):
        name = (f"wavecheck_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_s{s}_t{t}_{'bf16' if dt == 'bfloat16' else 'fp16'}"
                f"{'_nt' if tb else ''}{'_sw' if sw else ''}")
        out.append(_mm_case(name, _mm_params(M, N, K, bm, bn, 64, s, t, dt, dt, trans_B=tb, swizzle=sw),
                            rtol=2e-2 if dt == "bfloat16" else 1e-2, tags=("probe",),
                            note=f"written after {rule}, predicted before it ran"))
    return out


# ----------------------------------------------------------------------------- session 16
@tilelang.jit
def gemm_exp_prologue(M, N, K, block_M=128, block_N=128, block_K=64, num_stages=2, threads=256,
                      policy="Square"):
    """C = exp2(A / 4) @ B, the exp2 taken in registers on each A tile before the gemm reads it:
    A's fragment is the gemm's register operand, held once per warp column along N
    (counts.fragment_replicas: Square on two warpgroups = 2 copies, FullRow = 1)."""
    pol = getattr(T.GemmWarpPolicy, policy)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            As = T.alloc_shared((block_M, block_K), "float16")
            Bs = T.alloc_shared((block_K, block_N), "float16")
            Al = T.alloc_fragment((block_M, block_K), "float16")
            Cl = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(Cl)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], As)
                T.copy(B[k * block_K, bx * block_N], Bs)
                for i, j in T.Parallel(block_M, block_K):
                    Al[i, j] = T.exp2(T.cast(As[i, j], "float32") * 0.25)
                T.gemm(Al, Bs, Cl, policy=pol)
            T.copy(Cl, C[by * block_M, bx * block_N])
    return main


def _exp_prologue_inputs(p, device):
    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    return [randn((M, K), "float16", device, g), randn((K, N), "float16", device, g),
            nan_out((M, N), "float16", device)]


def _exp_prologue_ref(args):
    import torch
    a = torch.exp2(args[0].float() * 0.25).half().float()
    return {2: a @ args[1].float()}


def _exp_prologue_expected(p, copies) -> Expected:
    """gm*gn blocks x gk iterations: one block_M x block_K tile of exp2 (one multiply and one exp2 a
    held element, `copies` copies of each: 2 for Square on two warpgroups, 1 for FullRow) and one
    block_M x block_N x block_K gemm."""
    M, N, K = p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    held = gm * gn * gk * bm * bk * copies
    return Expected(tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk), cuda_flops=held, sfu_ops=held,
                    global_read_bytes=(gn * M * K + gm * K * N) * 2, global_write_bytes=M * N * 2,
                    global_atomic_bytes=0, unique_bytes=(M * K + K * N + M * N) * 2)


def _register_operand_cases() -> list[Case]:
    """Session 16: written after counts.fragment_replicas to test it on a kernel other than the
    dequantising GEMM it was read on, predicted before they ran: the same exp2 prologue with the
    gemm's A fragment held twice (Square) and once (FullRow)."""
    out = []
    for policy, copies in (("Square", 2), ("FullRow", 1)):
        p = dict(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=64, num_stages=2, threads=256,
                 policy=policy)
        out.append(Case(f"regop_exp_gemm_fp16_4096_{policy.lower()}", gemm_exp_prologue, p, _exp_prologue_inputs,
                        _exp_prologue_ref, _exp_prologue_expected(p, copies), rtol=1e-2,
                        tags=("gemm", "float16", "register-operand", "extra"),
                        note=f"exp2 of each A tile in registers before the gemm, {policy} policy, "
                             f"128x128x64 tiles, 2 stages, 256 threads: {copies} held cop{'ies' if copies > 1 else 'y'}"))
    return out


def cases() -> list[Case]:
    return (_register_operand_cases() + _wave_check_cases() + _div_check_cases() + _gemm_cases() + _attention_cases() + _rowwise_cases() + _other_cases() + _probe_cases()
            + _size_cases() + _short_cases() + _stage_cases() + _conv_cases() + _conv_check_cases()
            + _epilogue_cases() + _fp32_store_cases() + _clock_cases() + _nows_cases() + masked_probes()
            + _spill_cases() + _stagger_check_cases() + _wave_split_probes() + _apart_check_cases()
            + _occupancy_check_cases() + _tiny_cases() + chain_probes() + _chain_check_cases()
            + _chain_check_cases("chaincheck2") + _stage_check_cases() + _sparse_check_cases()
            + _follow_check_cases() + _blind_check_cases() + _overlap_check_cases() + _register_check_cases()
            + _bank_check_cases() + _drift_check_cases())


# Session 22: element-wise launches whose blocks per SM the loads in flight set (model.live_fragment_bytes:
# ptxas hoists a thread's unrolled loads before its math): tiles and thread counts the corpus lacked,
# 1 to 10 blocks per SM by the estimate, grids of many waves; predicted before they ran.
REGISTER_CHECKS = [  # (kernel, dtype, M, N, block_M, threads)
    ("add", "float16", 8192, 4096, 64, 128), ("add", "float16", 8192, 4096, 32, 128),
    ("add", "float32", 4096, 4096, 64, 256), ("add", "float32", 4096, 4096, 16, 256),
    ("fma", "float32", 4096, 4096, 32, 128), ("copy", "float16", 8192, 4096, 128, 256),
    ("copy", "float16", 8192, 4096, 32, 128), ("fma", "float16", 8192, 4096, 64, 256)]


def _register_check_cases() -> list[Case]:
    out = []
    tags = ("regcheck", "extra")
    kernels = {"add": (elementwise_add, 2, _ref_add, 1), "fma": (elementwise_fma, 3, _ref_fma, 2),
               "copy": (tile_copy, 1, _ref_copy, 0)}
    for kind, dt, M, N, bm, threads in REGISTER_CHECKS:
        fn, n_in, ref, flops = kernels[kind]
        p = dict(M=M, N=N, block_M=bm, block_N=256, threads=threads, dtype=dt)
        out.append(Case(f"regcheck_{kind}_{_dtype_tag(dt)}_{M}x{N}_{bm}x256_t{threads}", fn, p, _inputs_2d(n_in), ref,
                        _ew_expected(p, n_in, flops_per_elem=flops, sfu_per_elem=0),
                        rtol=0.0 if kind == "copy" else (1e-5 if dt == "float32" else 2e-3),
                        tags=(("copy" if kind == "copy" else "elementwise"), dt) + tags,
                        note=f"{cdiv(M, bm) * cdiv(N, 256)} blocks, {bm * 256 // threads} elements a thread"))
    return out


# Session 21: launches without a pipelined loop whose blocks run a long IEEE division chain between
# their loads and stores (SiLU-mul -32 %, the fp8 row quantisation -31 %: the model overlaps the
# later waves' chains with DRAM at the roofline, the record says they add up).  Grids of 2-48 waves
# of the same SiLU-mul block (how the later waves' phases overlap as the launch goes on), other
# tiles and dtypes (the chain against the bytes, blocks per SM) and the quantisation at other row
# counts and rows per block; predicted before they ran.
OVERLAP_CHECKS_SILU = [  # (dtype, block_M, threads, rows of 12-row groups: M = block_M x 12 x this)
    ("float16", 64, 256, 2), ("float16", 64, 256, 4), ("float16", 64, 256, 16), ("float16", 64, 256, 48),
    ("float32", 64, 256, 16), ("float16", 32, 256, 16), ("float16", 32, 256, 48), ("float16", 64, 512, 16)]
OVERLAP_CHECKS_QUANT = [(4096, 8192, 2), (32768, 4096, 2), (16384, 8192, 1), (8192, 8192, 4)]  # (M, N, block_M)


def _overlap_check_cases() -> list[Case]:
    out = []
    tags = ("overlapcheck", "extra")
    for dt, bm, threads, groups in OVERLAP_CHECKS_SILU:
        p = dict(M=bm * 12 * groups, N=256 * 11, block_M=bm, block_N=256, threads=threads, dtype=dt)
        out.append(Case(f"overlapcheck_silu_mul_{_dtype_tag(dt)}_{p['M']}x{p['N']}_{bm}x256_t{threads}", silu_mul, p,
                        _inputs_2d(2), _ref_silu_mul, _ew_expected(p, 2, sfu_per_elem=1),
                        rtol=2e-3 if dt == "float16" else 1e-5, tags=("elementwise", dt) + tags,
                        note=f"{132 * groups} blocks, an IEEE division per element"))
    for M, N, bm in OVERLAP_CHECKS_QUANT:
        out.append(_quant_case(f"overlapcheck_quant_fp8_bf16_{M}x{N}_bm{bm}", M, N, bm, tags=tags))
    return out


# ----------------------------------------------------------------------------- sweeps
# causal flash-attention forward, B=4 H=32 S=4096 D=128 fp16: (block_M, block_N, num_stages,
# threads); block_M = 64 only with 128 threads (one warpgroup), as in the fa_fwd sweep.  Shared
# memory per block (Q + O tiles + stages x (K + V) tiles) <= 192 KB (bM = bN = 128, 2 stages).
_FA_CAUSAL_CONFIGS = [
    (64, 32, 1, 128), (64, 64, 1, 128), (64, 64, 2, 128), (64, 128, 1, 128), (64, 128, 2, 128),
    (128, 32, 2, 128), (128, 64, 1, 128), (128, 64, 2, 256), (128, 64, 1, 256),
    (128, 128, 1, 128), (128, 128, 1, 256), (128, 128, 2, 256),
]


# Written and added after the session-2 model changes, measured once, never fitted on: a bf16 NT
# GEMM autotuning space (tiles, stages, warpgroups, rasterisation; one 128x256 tile on a single
# warpgroup, whose 256-register accumulator cannot fit) and a head-dim-64 bf16 attention space.
_GEMM_NT_CONFIGS = [  # (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, False), (128, 128, 64, 4, 128, True), (128, 256, 64, 3, 256, False),
    (128, 256, 64, 3, 256, True), (256, 128, 64, 3, 256, True), (64, 128, 64, 4, 128, False),
    (64, 256, 64, 3, 128, True), (128, 64, 64, 4, 128, True), (128, 128, 32, 4, 128, False),
    (128, 256, 32, 4, 256, True), (64, 64, 64, 5, 128, False), (128, 256, 64, 3, 128, False),
]
_FA_D64_CONFIGS = [  # (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 128), (128, 128, 2, 256),
    (128, 64, 2, 256), (128, 128, 1, 256), (64, 256, 2, 128), (128, 256, 2, 256),
]


# Session 2, last: written after every model change of the session, predicted
# (predictions-*.json) and only then measured, to test the final model on sweeps it has not seen.
_GEMM_WIDE_CONFIGS = [  # fp16 NN, M=2048 N=8192 K=8192: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, False), (128, 128, 64, 4, 128, True), (128, 256, 64, 3, 256, True),
    (128, 256, 64, 4, 256, False), (256, 128, 64, 3, 256, True), (64, 256, 64, 4, 128, False),
    (128, 128, 32, 3, 128, True), (64, 128, 64, 4, 128, True), (128, 64, 64, 4, 128, False),
    (64, 64, 64, 4, 128, True),
]
_FA_CAUSAL_BF16_CONFIGS = [  # B=1 H=32 S=8192 D=128 bf16 causal: (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 256), (128, 128, 2, 256),
    (128, 128, 1, 256), (128, 64, 1, 128), (64, 32, 2, 128), (128, 32, 2, 256),
]


# Session 2, after the L2 hit curve: an fp8 autotuning space, predicted before it runs.
_GEMM_FP8_CONFIGS = [  # e4m3 NT, bf16 out, M=N=4096 K=8192: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 128, 3, 128, False), (128, 128, 128, 4, 128, True), (128, 256, 128, 3, 256, True),
    (128, 256, 128, 3, 256, False), (256, 128, 128, 3, 256, True), (64, 256, 128, 4, 128, True),
    (128, 128, 64, 4, 128, True), (128, 256, 64, 4, 256, True), (64, 128, 128, 4, 128, False),
    (128, 64, 128, 4, 128, True),
]


# Session 2, last: a memory-streaming space (row sums), predicted before it runs.
_ROWSUM_CONFIGS = [  # fp16 32768 x 8192 -> fp32: (block_M, block_N, stages, threads)
    (8, 512, 2, 128), (16, 256, 3, 128), (16, 512, 2, 128), (32, 256, 2, 128),
    (8, 1024, 2, 256), (32, 512, 3, 256), (64, 128, 4, 128), (4, 1024, 3, 128),
]


# Session 3, last: written after every model change of the session (spill traffic, drift
# estimate, power-limited clock), predicted (predictions-*.json) and only then measured.
_GEMM_TALL_CONFIGS = [  # bf16 NN, M=16384 N=2048 K=4096: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, True), (128, 128, 64, 4, 128, False), (128, 256, 64, 3, 256, True),
    (256, 128, 64, 3, 256, True), (64, 256, 64, 3, 128, True), (128, 64, 64, 4, 128, True),
    (64, 128, 64, 4, 128, False), (128, 128, 32, 4, 128, True), (128, 256, 32, 4, 256, False),
    (64, 64, 64, 4, 128, True),
]
_FA_BF16_CONFIGS = [  # B=2 H=16 S=4096 D=128 bf16, not causal: (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 256), (128, 128, 2, 256),
    (128, 128, 1, 256), (128, 64, 1, 128), (64, 32, 2, 128), (128, 32, 2, 256),
]


# Session 4: written after the TPC request-merging change (L2 slices see the tile requests left
# after the two SMs of a TPC merge identical ones), predicted (predictions-*.json) before measured.
_GEMM_SQ_CONFIGS = [  # bf16 NN, M=N=6144 K=8192: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 4, 128, True), (128, 128, 32, 3, 128, False), (128, 256, 64, 3, 256, True),
    (256, 128, 64, 3, 256, False), (64, 256, 64, 3, 128, True), (64, 128, 64, 4, 128, True),
    (128, 64, 64, 4, 128, False), (64, 64, 64, 4, 128, True), (64, 256, 64, 4, 128, False),
    (128, 256, 32, 4, 256, True),
]
_GEMM_NTWIDE_CONFIGS = [  # fp16 NT, M=3072 N=12288 K=4096: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, True), (128, 128, 64, 4, 256, False), (128, 256, 64, 3, 256, False),
    (256, 128, 64, 3, 256, True), (64, 256, 64, 3, 128, True), (128, 64, 64, 4, 128, True),
    (64, 128, 64, 4, 128, False), (64, 64, 64, 5, 128, True), (128, 128, 32, 4, 128, True),
    (128, 256, 64, 4, 256, True),
]

# Session 4, last: written after every session-4 change (TPC request merging, the one-warpgroup
# refit, the iterations tie-break), predicted before measured.
_GEMM_MID_CONFIGS = [  # fp16 NN, M=8192 N=4096 K=6144: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, True), (128, 128, 64, 4, 128, False), (128, 256, 64, 3, 256, True),
    (128, 256, 32, 4, 256, True), (256, 128, 64, 3, 256, True), (64, 256, 64, 3, 128, True),
    (64, 128, 64, 4, 128, True), (128, 64, 64, 4, 128, False), (64, 64, 64, 4, 128, True),
    (128, 128, 32, 4, 256, True),
]
_FA_CAUSAL_D64_CONFIGS = [  # B=4 H=16 S=4096 D=64 fp16, causal: (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 128), (128, 128, 2, 256),
    (128, 64, 2, 256), (128, 128, 1, 256), (64, 256, 2, 128), (128, 256, 2, 256),
]

# Session 4, after the gemm iteration law: block_K and warpgroups across common tiles, and a long
# non-causal attention, predicted before measured.
_GEMM_BK_CONFIGS = [  # fp16 NN, M=N=8192 K=4096, all swizzled: (block_M, block_N, block_K, stages, threads)
    (128, 128, 32, 4, 128), (128, 128, 64, 3, 128), (128, 128, 32, 4, 256), (128, 128, 64, 4, 256),
    (128, 128, 128, 3, 256), (128, 256, 32, 4, 256), (128, 256, 64, 3, 256), (64, 256, 32, 4, 128),
    (64, 256, 64, 3, 128), (256, 128, 32, 4, 256),
]
_FA_LONG_CONFIGS = [  # B=1 H=32 S=8192 D=128 fp16, not causal: (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 32, 2, 256), (128, 64, 2, 256), (128, 128, 2, 256),
    (128, 64, 2, 128), (64, 32, 2, 128), (128, 128, 1, 256),
]

# Session 4, last of all: written after the L2-slice tie-break, predicted before measured.
_GEMM_FIN_CONFIGS = [  # bf16 NT, M=6144 N=4096 K=8192: (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 256, 64, 3, 256, True), (256, 128, 64, 3, 256, True), (128, 128, 64, 4, 256, True),
    (128, 128, 64, 3, 128, True), (128, 256, 32, 4, 256, False), (64, 256, 64, 3, 128, True),
    (128, 64, 64, 4, 128, True), (64, 128, 64, 4, 128, False), (128, 128, 32, 4, 128, True),
    (128, 128, 128, 3, 256, True),
]
# Session 5: written after the drift rule (model.drifts), to test it out of sample: unswizzled
# one-warpgroup tiles with prefetch windows on both sides of a tile's DRAM round trip, tiles that
# keep pace by compute, and one swizzled control.  bf16 NN, M=6144 N=12288 K=6144:
# (block_M, block_N, block_K, stages, threads, swizzle)
_GEMM_DEEP_CONFIGS = [
    (64, 256, 64, 3, 128, False), (64, 256, 64, 4, 128, False), (64, 256, 64, 5, 128, False),
    (64, 256, 32, 6, 128, False), (64, 192, 64, 5, 128, False), (64, 128, 64, 4, 128, False),
    (64, 128, 64, 6, 128, False), (128, 128, 64, 4, 128, False), (128, 256, 64, 3, 256, False),
    (64, 256, 64, 4, 128, True),
]
# Session 5: written after the second-gemm cost (attn_pipe) to test it out of sample.
# (block_M, block_N, stages, threads)
_FA_VAL_CONFIGS = [
    (128, 32, 2, 256), (128, 64, 2, 256), (128, 128, 2, 256), (128, 64, 1, 256), (64, 32, 2, 128),
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 128, 1, 256),
]
_FA_FIN_CONFIGS = [  # B=2 H=32 S=8192 D=64 bf16, causal: (block_M, block_N, stages, threads)
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 128), (128, 128, 2, 256),
    (128, 64, 2, 256), (128, 32, 2, 256), (64, 256, 2, 128), (128, 256, 2, 256),
]

# Session 7: written after the in-phase warpgroups and the tensor-only clock activity (timeline set
# 9) to test them out of sample: two new attention shapes, predicted before they ran.
# Session 8: a short GEMM autotuning space (about 15-40 us a config), written after the tensor boost
# clock and predicted before it ran.
_GEMM_SHORT_CONFIGS = [  # (block_M, block_N, block_K, stages, threads, swizzle)
    (128, 128, 64, 3, 128, False), (128, 128, 32, 4, 128, True), (128, 256, 64, 3, 256, True),
    (64, 128, 64, 4, 128, False), (64, 256, 64, 3, 128, False), (128, 64, 64, 4, 128, False),
    (64, 64, 64, 4, 128, False), (256, 128, 64, 3, 256, True), (128, 128, 64, 3, 256, False),
    (128, 256, 32, 4, 256, False),
]

_FA_S7_CONFIGS = [  # (block_M, block_N, stages, threads)
    (128, 128, 2, 256), (128, 64, 2, 256), (128, 32, 2, 256), (128, 128, 1, 256),
    (64, 64, 2, 128), (64, 128, 2, 128), (128, 64, 2, 128), (64, 256, 2, 128),
]


def _rowsum_case(name, p, sweep):
    M, N, bm, bn = p["M"], p["N"], p["block_M"], p["block_N"]
    return Case(name, row_reduce, p, _row_inputs, _ref_rowsum,
                Expected(global_read_bytes=M * N * 2, global_write_bytes=M * 4, global_atomic_bytes=0,
                         tensor_flops=0, cuda_flops=M * N + cdiv(M, bm) * bm * bn, sfu_ops=0,
                         unique_bytes=M * N * 2 + M * 4),
                rtol=1e-5, sweep=sweep, tags=("reduce", "float16", "extra"),
                note="fp16 32768 x 8192 row sums, fp32 out")


# Session 2, after the DRAM-streaming change: a GEMV space, predicted before it runs.
_GEMV_CONFIGS = [  # fp16 y = A x, A 32768 x 8192: (block_M, block_K, stages, threads)
    (8, 512, 2, 128), (16, 256, 3, 128), (16, 512, 2, 128), (32, 256, 3, 128),
    (4, 1024, 2, 128), (8, 1024, 3, 256), (32, 512, 2, 256), (64, 128, 4, 128),
]


def _gemv_case(name, p, sweep):
    M, K, bm = p["M"], p["K"], p["block_M"]
    return Case(name, gemv_tiled, p, _gemv_inputs, _gemv_ref,
                Expected(global_read_bytes=(M * K + cdiv(M, bm) * K) * 2, global_write_bytes=M * 2,
                         global_atomic_bytes=0, tensor_flops=0, sfu_ops=0, unique_bytes=(M * K + K + M) * 2),
                rtol=1e-2, sweep=sweep, tags=("gemv", "float16", "extra"),
                note="fp16 GEMV 32768 x 8192, A and x tiles through a shared-memory pipeline")


def _gemm_sweep(prefix, sweep, configs, M, N, K, note, in_dtype="float16", out_dtype="float16", trans_B=False,
                rtol=1e-2, tags=(), swizzle=False):
    """One GEMM autotuning sweep: configs are (block_M, block_N, block_K, stages, threads[, swizzle]);
    the name carries _sw0/_sw1 when the config sets the swizzle."""
    for cfg in configs:
        bm, bn, bk, s, t = cfg[:5]
        sw = cfg[5] if len(cfg) > 5 else swizzle
        name = f"sweep_{prefix}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}" + (f"_sw{int(sw)}" if len(cfg) > 5 else "")
        yield _mm_case(name, _mm_params(M, N, K, bm, bn, bk, s, t, in_dtype, out_dtype, trans_B=trans_B, swizzle=sw),
                       rtol=rtol, tags=tags, sweep=sweep, note=note)


def _fa_sweep(prefix, sweep, configs, batch, heads, seq_len, dim, causal, note, dtype="float16", rtol=1e-2):
    """One flash-attention autotuning sweep: configs are (block_M, block_N, stages, threads)."""
    for bM, bN, s, t in configs:
        yield _fa_case(f"sweep_{prefix}_bm{bM}_bn{bN}_s{s}_t{t}",
                       _fa_params(batch, heads, seq_len, dim, causal, bM, bN, s, t, dtype=dtype),
                       rtol=rtol, sweep=sweep, note=note)


def sweeps():
    bf16 = dict(in_dtype="bfloat16", out_dtype="bfloat16", rtol=2e-2)
    out = [
        *_fa_sweep("facausal", "fa_causal", _FA_CAUSAL_CONFIGS, 4, 32, 4096, 128, True, "B=4 H=32 S=4096 D=128, causal"),
        *_gemm_sweep("gemmntbf16", "gemm_nt_bf16", _GEMM_NT_CONFIGS, 4096, 6144, 4096,
                     "M=4096 N=6144 K=4096 bf16, B stored (N, K)", "bfloat16", "bfloat16", trans_B=True),
        *_fa_sweep("fad64bf16", "fa_d64_bf16", _FA_D64_CONFIGS, 2, 16, 8192, 64, False, "B=2 H=16 S=8192 D=64 bf16",
                   dtype="bfloat16", rtol=2e-2),
        *_gemm_sweep("gemmwide", "gemm_wide_fp16", _GEMM_WIDE_CONFIGS, 2048, 8192, 8192, "M=2048 N=8192 K=8192 fp16 NN"),
        *_fa_sweep("facausalbf16", "fa_causal_bf16", _FA_CAUSAL_BF16_CONFIGS, 1, 32, 8192, 128, True,
                   "B=1 H=32 S=8192 D=128 bf16, causal", dtype="bfloat16", rtol=2e-2),
        *_gemm_sweep("gemmfp8", "gemm_fp8", _GEMM_FP8_CONFIGS, 4096, 4096, 8192, "M=N=4096 K=8192 fp8 e4m3 NT, bf16 out",
                     "float8_e4m3fn", "bfloat16", trans_B=True, rtol=5e-2, tags=("fp8",)),
    ]
    for bM, bN, s, t in _ROWSUM_CONFIGS:
        name = f"sweep_rowsum_bm{bM}_bn{bN}_s{s}_t{t}"
        out.append(_rowsum_case(name, dict(M=32768, N=8192, op="sum", block_M=bM, block_N=bN, num_stages=s,
                                           threads=t, dtype="float16", out_dtype="float32"), "rowsum_fp16"))
    for bM, bK, s, t in _GEMV_CONFIGS:
        name = f"sweep_gemv_bm{bM}_bk{bK}_s{s}_t{t}"
        out.append(_gemv_case(name, dict(M=32768, K=8192, block_M=bM, block_K=bK, num_stages=s, threads=t,
                                         dtype="float16"), "gemv_fp16"))
    out += [
        *_gemm_sweep("gemmtall", "gemm_tall_bf16", _GEMM_TALL_CONFIGS, 16384, 2048, 4096, "M=16384 N=2048 K=4096 bf16 NN",
                     **bf16),
        *_fa_sweep("fabf16", "fa_bf16", _FA_BF16_CONFIGS, 2, 16, 4096, 128, False, "B=2 H=16 S=4096 D=128 bf16",
                   dtype="bfloat16", rtol=2e-2),
        *_gemm_sweep("gemmsq", "gemm_sq_bf16", _GEMM_SQ_CONFIGS, 6144, 6144, 8192, "M=N=6144 K=8192 bf16 NN", **bf16),
        *_gemm_sweep("gemmntwide", "gemm_ntwide_fp16", _GEMM_NTWIDE_CONFIGS, 3072, 12288, 4096,
                     "M=3072 N=12288 K=4096 fp16, B stored (N, K)", trans_B=True),
        *_gemm_sweep("gemmmid", "gemm_mid_fp16", _GEMM_MID_CONFIGS, 8192, 4096, 6144, "M=8192 N=4096 K=6144 fp16 NN"),
        *_fa_sweep("facausald64", "fa_causal_d64", _FA_CAUSAL_D64_CONFIGS, 4, 16, 4096, 64, True,
                   "B=4 H=16 S=4096 D=64 fp16, causal"),
        *_gemm_sweep("gemmbk", "gemm_bk_fp16", _GEMM_BK_CONFIGS, 8192, 8192, 4096, "M=N=8192 K=4096 fp16 NN, swizzled",
                     swizzle=True),
        *_fa_sweep("falong", "fa_long", _FA_LONG_CONFIGS, 1, 32, 8192, 128, False, "B=1 H=32 S=8192 D=128 fp16"),
        *_gemm_sweep("gemmfin", "gemm_fin_bf16", _GEMM_FIN_CONFIGS, 6144, 4096, 8192,
                     "M=6144 N=4096 K=8192 bf16, B stored (N, K)", trans_B=True, **bf16),
        *_fa_sweep("fafin", "fa_fin_bf16", _FA_FIN_CONFIGS, 2, 32, 8192, 64, True, "B=2 H=32 S=8192 D=64 bf16, causal",
                   dtype="bfloat16", rtol=2e-2),
        *_gemm_sweep("gemmdeep", "gemm_deep_bf16", _GEMM_DEEP_CONFIGS, 6144, 12288, 6144,
                     "M=6144 N=12288 K=6144 bf16 NN, mostly unswizzled", **bf16),
        *_fa_sweep("faval", "fa_val_fp16", _FA_VAL_CONFIGS, 2, 24, 6144, 128, False, "B=2 H=24 S=6144 D=128 fp16"),
        *_fa_sweep("favald64", "fa_val_d64", _FA_VAL_CONFIGS, 1, 32, 8192, 64, False, "B=1 H=32 S=8192 D=64 fp16"),
        *_fa_sweep("fas7", "fa_s7_fp16", _FA_S7_CONFIGS, 2, 24, 3072, 128, False, "B=2 H=24 S=3072 D=128 fp16"),
        *_fa_sweep("fas7causal", "fa_s7_causal_d64", _FA_S7_CONFIGS, 4, 24, 4096, 64, True,
                   "B=4 H=24 S=4096 D=64 bf16, causal", dtype="bfloat16", rtol=2e-2),
        *_gemm_sweep("gemmshort", "gemm_short_fp16", _GEMM_SHORT_CONFIGS, 2048, 2048, 1024, "M=N=2048 K=1024 fp16 NN"),
    ]
    names: dict = {}
    for c in out:                      # each sweep's configs, in the order written above
        names.setdefault(c.sweep, []).append(c.name)
    return out, names


# ----------------------------------------------------------------------------- block-sparse GEMM
@tilelang.jit
def masked_gemm(M, N, K, block_M=128, block_N=128, block_K=64, num_stages=3, threads=256, density=4):
    """C = A @ B over the k-tiles a block mask keeps: row tile i uses k-tile k where
    Mask[i, k] != 0 (tileroof's own probe of a run-time branch inside a pipelined GEMM loop, in the
    manner of upstream's block-sparse GEMM; the mask is input data, built by _masked_inputs with
    Mask[i, k] = ((5 i + 3 k) mod 8) < density, so `density` / 8 of the tiles run)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"),
             Mask: T.Tensor((M // block_M, K // block_K), "int8"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), "float16")
            B_shared = T.alloc_shared((block_K, block_N), "float16")
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if Mask[by, k] != 0:
                    T.copy(A[by * block_M, k * block_K], A_shared)
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                    T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


def _mask_pattern(p):
    mi, mk = p["M"] // p["block_M"], p["K"] // p["block_K"]
    return [[1 if (5 * i + 3 * k) % 8 < p["density"] else 0 for k in range(mk)] for i in range(mi)]


def _masked_inputs(p, device):
    import torch

    g = generator(device, 0)
    mask = torch.tensor(_mask_pattern(p), dtype=torch.int8, device=device)
    return [randn((p["M"], p["K"]), "float16", device, g), randn((p["K"], p["N"]), "float16", device, g),
            mask, nan_out((p["M"], p["N"]), "float16", device)]


def _masked_ref(args):
    a, b, mask = args[0].float(), args[1].float(), args[2]
    bm, bk = a.shape[0] // mask.shape[0], a.shape[1] // mask.shape[1]
    keep = mask.repeat_interleave(bm, 0).repeat_interleave(bk, 1).float()
    return {3: (a * keep) @ b}


def _masked_case(M, N, K, d, bm=128, bn=128, bk=64, s=3, t=256) -> Case:
    p = dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=t, density=d)
    kept = sum(map(sum, _mask_pattern(p)))
    nbx, nby, nk = N // bn, M // bm, K // bk
    return Case(
        name=f"probe_bsgemm_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}_d{d}", kernel=masked_gemm, params=p,
        make_inputs=_masked_inputs, reference=_masked_ref,
        # global reads: the A and B tiles of the kept k-tiles; the mask's own reads (a byte per block
        # and trip, in the branch's condition) are not counted -- tileroof's records are ops, not
        # conditions -- nor is the mask in the footprint (A, B and C are whole: every row tile keeps
        # some k-tile and every k-tile is kept by some row tile, 5 being invertible mod 8)
        expected=Expected(tensor_flops=kept * nbx * 2 * bm * bn * bk, cuda_flops=0,
                          global_read_bytes=kept * nbx * (bm * bk + bk * bn) * 2, global_write_bytes=M * N * 2,
                          unique_bytes=(M * K + K * N + M * N) * 2),
        rtol=1e-2, tags=("gemm", "block-sparse", "data-dependent", "probe", "float16"),
        note=f"tileroof's block-sparse GEMM, {d}/8 of the k-tiles kept, told the density (--taken Mask)",
        taken={"Mask": kept / (nby * nk)})


def _random_mask(p) -> list:
    """A seeded random block mask: each (row tile, k-tile) kept with probability density / 8,
    independently (as upstream's block-sparse GEMM example draws its mask)."""
    import numpy as np

    mi, mk = p["M"] // p["block_M"], p["K"] // p["block_K"]
    rng = np.random.default_rng(1000 * p["density"] + mi + mk)
    return (rng.random((mi, mk)) < p["density"] / 8).astype(int).tolist()


def _random_masked_inputs(p, device):
    import torch

    g = generator(device, 0)
    mask = torch.tensor(_random_mask(p), dtype=torch.int8, device=device)
    return [randn((p["M"], p["K"]), "float16", device, g), randn((p["K"], p["N"]), "float16", device, g),
            mask, nan_out((p["M"], p["N"]), "float16", device)]


# Written in session 19 after the taken-sharing rule (memory.taken_sharing: a tile that blocks
# deciding apart may take is fetched when any of them does), predicted with and without it before
# they ran: tileroof's block-sparse GEMM with random masks (upstream's kind), densities 1/8 .. 6/8.
SPARSE_CHECKS = [  # (M, N, K, block_M, block_N, block_K, stages, threads, density / 8)
    (4096, 4096, 8192, 128, 128, 64, 3, 256, 1),
    (4096, 4096, 8192, 128, 128, 64, 3, 256, 3),
    (4096, 4096, 8192, 128, 128, 64, 3, 256, 6),
    (8192, 8192, 4096, 128, 256, 64, 3, 256, 2),
    (4096, 8192, 8192, 128, 128, 64, 3, 256, 2),
    (6144, 6144, 8192, 128, 128, 64, 3, 256, 4),
]


def _sparse_check_cases() -> list[Case]:
    out = []
    for M, N, K, bm, bn, bk, s, t, d in SPARSE_CHECKS:
        p = dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=s, threads=t, density=d)
        mask = _random_mask(p)
        kept = sum(map(sum, mask))
        nbx, nby, nk = N // bn, M // bm, K // bk
        out.append(Case(
            name=f"sparsecheck_bsgemm_m{M}_n{N}_k{K}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}_r{d}", kernel=masked_gemm,
            params=p, make_inputs=_random_masked_inputs, reference=_masked_ref,
            expected=Expected(tensor_flops=kept * nbx * 2 * bm * bn * bk, cuda_flops=0,
                              global_read_bytes=kept * nbx * (bm * bk + bk * bn) * 2, global_write_bytes=M * N * 2,
                              # (the footprint is the whole of A, B and C: tileroof's, not the mask's)
                              unique_bytes=(M * K + K * N + M * N) * 2),
            rtol=1e-2, tags=("gemm", "block-sparse", "data-dependent", "sparsecheck", "float16"),
            note=f"tileroof's block-sparse GEMM, a random mask keeping {kept} of {nby * nk} k-tiles "
                 f"(~{d}/8), told the density (--taken Mask)",
            taken={"Mask": kept / (nby * nk)}))
    return out


def masked_probes() -> list[Case]:
    """Out of sample for the run-time branch tests (fitted on the block-sparse attention): another
    loop body (2 loads and a gemm: 7 tests a trip by the rule), another mask read (from global
    memory each trip, not a local copy), three densities."""
    return [_masked_case(4096, 4096, 8192, d) for d in (1, 4, 8)]


# Session 26: the classic shared-memory transpose written with thread indices (no T.Parallel, no tile
# op), one 32 x 32 tile per block of 32 x 8 threads, each thread moving four elements in and four
# out: the lane-address bank-conflict count (Walker._warp_wavefronts) and the SM's shared pipe
# under it, predicted before they ran.
@tilelang.jit
def transpose_simt(M, N, pattern="naive", dtype="float32"):
    """B = A^T through a shared tile, NVIDIA's transpose example written in TileLang: the threads
    write tile[r, tx] from a row of A (coalesced) and read tile[tx, r] for a row of B.  "naive": a
    32-wide tile, so the read's lanes stride a whole row (32 words in float32: every lane on one
    bank, 32 wavefronts; 16 words in float16: two banks, 16); "padded": 33-wide rows, no conflict;
    "swizzle": column c of row r stored at c ^ r, no conflict and no padding."""
    TILE, ROWS = 32, 8
    cols = TILE + 1 if pattern == "padded" else TILE

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((N, M), dtype)):
        with T.Kernel(T.ceildiv(N, TILE), T.ceildiv(M, TILE), threads=[TILE, ROWS]) as (bx, by):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            tile = T.alloc_shared((TILE, cols), dtype)
            for j in T.serial(TILE // ROWS):
                if pattern == "swizzle":
                    tile[ty + j * ROWS, T.bitwise_xor(tx, ty + j * ROWS)] = A[by * TILE + ty + j * ROWS, bx * TILE + tx]
                else:
                    tile[ty + j * ROWS, tx] = A[by * TILE + ty + j * ROWS, bx * TILE + tx]
            for j in T.serial(TILE // ROWS):
                if pattern == "swizzle":
                    B[bx * TILE + ty + j * ROWS, by * TILE + tx] = tile[tx, T.bitwise_xor(ty + j * ROWS, tx)]
                else:
                    B[bx * TILE + ty + j * ROWS, by * TILE + tx] = tile[tx, ty + j * ROWS]

    return main


BANK_CHECKS = [  # (pattern, dtype, M, N)
    ("naive", "float32", 8192, 8192), ("padded", "float32", 8192, 8192), ("swizzle", "float32", 8192, 8192),
    ("naive", "float16", 8192, 16384), ("padded", "float16", 8192, 16384), ("naive", "float32", 4096, 2048)]


def _bank_check_cases() -> list[Case]:
    out = []
    for pattern, dt, M, N in BANK_CHECKS:
        p = dict(M=M, N=N, pattern=pattern, dtype=dt)
        b = nbytes(dt)
        out.append(Case(f"bankcheck_transpose_{pattern}_{dt}_{M}x{N}", transpose_simt, p, _transpose_inputs,
                        _transpose_ref,
                        # every element read once from A and written once to B; no arithmetic
                        Expected(global_read_bytes=M * N * b, global_write_bytes=M * N * b, global_atomic_bytes=0,
                                 tensor_flops=0, cuda_flops=0, sfu_ops=0, unique_bytes=2 * M * N * b),
                        rtol=0.0, tags=("transpose", dt, "bankcheck", "extra"),
                        note=f"{cdiv(M, 32) * cdiv(N, 32)} blocks of 32x8 threads, {pattern} 32x32 shared tile"))
    return out


# Session 28: 128x128 unswizzled bf16 GEMMs, compute-bound in step, with prefetch windows of 1.1-3.3
# DRAM round trips (benchmarks/drift_position.py's x): on the H100 the 4-stage one stays in step at
# x 1.18 where the model sends it drifting; these say from which window such launches drift.
DRIFT_CHECKS = [(64, 5, 128), (64, 6, 128), (32, 6, 128), (32, 8, 128), (32, 10, 128), (64, 5, 256), (64, 6, 256)]


def _drift_check_cases() -> list[Case]:
    bf16 = dict(in_dtype="bfloat16", out_dtype="bfloat16")
    return [_mm_case(f"driftcheck_gemm_bf16_6144x12288x6144_bm128_bn128_bk{bk}_s{s}_t{t}_sw0",
                     _mm_params(6144, 12288, 6144, 128, 128, bk, s, t, **bf16), rtol=2e-2, tags=("driftcheck",),
                     note="unswizzled 128x128 tiles, compute-bound in step: from which prefetch window do they drift")
            for bk, s, t in DRIFT_CHECKS]

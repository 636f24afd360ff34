"""GEMM family: NN / NT, fp16 / bf16 / fp8, ragged edges, fp32 output, bias+ReLU epilogue,
batched GEMM on blockIdx.z, split-K with a tile atomic_add, and the two GEMM sweeps.

All kernels follow TileLang's examples/gemm: one (block_M x block_N) output tile per block,
a T.Pipelined loop over K that T.copy's an A tile and a B tile into shared memory and issues one
T.gemm into a float32 fragment, then one T.copy of the fragment to global memory.

Count derivations shared by the plain GEMMs (tile grid gm = ceil(M/bm), gn = ceil(N/bn),
gk = ceil(K/bk)):
  * tensor_flops: gm*gn blocks each run gk gemms of a full bm x bn x bk tile (the tile op is
    issued on the whole tile even where the copy was clipped), so 2*(gm*bm)*(gn*bn)*(gk*bk).
  * A reads: block (bx, by) copies A[by*bm : +bm, k*bk : +bk] for every k; clipped at the
    edges, the rows summed over by give M and the columns summed over k give K, so every block
    column bx reads all of A once: gn * M*K elements.
  * B reads: likewise every block row by reads all of B once: gm * K*N elements.
  * writes: the fragment copy to C is clipped, each element of C written once: M*N elements.
"""
# NOTE: no `from __future__ import annotations` here: T.prim_func reads parameter
# annotations (T.Tensor(shape, dtype)) through the closure, and stringified annotations
# would hide closure variables used only in annotations (NameError at elaboration).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from ._util import cdiv, generator, nan_out, nbytes, randn, zeros


# ----------------------------------------------------------------------------- kernels
def matmul(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
           in_dtype="float16", out_dtype="float16", accum_dtype="float32",
           trans_B=False, swizzle=False, panel_size=10, c_shared=False):
    """C[M, N] = A[M, K] @ B, with B stored (K, N) (NN) or (N, K) (NT, trans_B=True).  c_shared:
    the accumulator goes to C through a shared-memory tile (else straight from the fragment)."""
    b_shape = (N, K) if trans_B else (K, N)
    b_tile = (block_N, block_K) if trans_B else (block_K, block_N)

    @T.prim_func
    def main(
            A: T.Tensor((M, K), in_dtype),
            B: T.Tensor(b_shape, in_dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), in_dtype)
            B_shared = T.alloc_shared(b_tile, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            if c_shared:
                C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            T.use_swizzle(panel_size=panel_size, enable=swizzle)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                if trans_B:
                    T.copy(B[bx * block_N, k * block_K], B_shared)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B)
            if c_shared:
                T.copy(C_local, C_shared)
                T.copy(C_shared, C[by * block_M, bx * block_N])
            else:
                T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# the same kernel with Hopper's wgmma switched off (pass config tl.disable_wgmma): every T.gemm
# lowers to mma.sync (corpus.dtypes' probes of mma's tensor rate on a wgmma GPU)
matmul_nowgmma = tilelang.jit(pass_configs={"tl.disable_wgmma": True})(matmul)
matmul = tilelang.jit(matmul)


@tilelang.jit
def matmul_bias_relu(M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
                     dtype="float16", accum_dtype="float32"):
    """C = relu(A @ B + bias[None, :]) with the epilogue fused on the fragment."""

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            Bias: T.Tensor((N,), dtype),
            C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            bias_shared = T.alloc_shared((block_N,), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.copy(Bias[bx * block_N], bias_shared)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            for i, j in T.Parallel(block_M, block_N):
                C_local[i, j] = T.max(C_local[i, j] + bias_shared[j], 0)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


@tilelang.jit
def bmm(batch, M, N, K, block_M=128, block_N=128, block_K=32, num_stages=3, threads=128,
        dtype="float16", accum_dtype="float32"):
    """C[b] = A[b] @ B[b]; the batch index is blockIdx.z."""

    @T.prim_func
    def main(
            A: T.Tensor((batch, M, K), dtype),
            B: T.Tensor((batch, K, N), dtype),
            C: T.Tensor((batch, M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), batch,
                      threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[bz, by * block_M:(by + 1) * block_M, k * block_K:(k + 1) * block_K],
                       A_shared)
                T.copy(B[bz, k * block_K:(k + 1) * block_K, bx * block_N:(bx + 1) * block_N],
                       B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[bz, by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N])

    return main


@tilelang.jit
def matmul_splitk(M, N, K, split_k, block_M=128, block_N=128, block_K=32, num_stages=3,
                  threads=128, dtype="float16", accum_dtype="float32"):
    """C (float32, zero on entry) += A @ B; blockIdx.z picks one of split_k K-slices and the
    partial tile is added to C with a tile-region T.atomic_add from the fragment."""
    split_len = K // split_k

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), accum_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k,
                      threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(split_len, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, bz * split_len + ko * block_K], A_shared)
                T.copy(B[bz * split_len + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.atomic_add(C[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N],
                         C_local)

    return main


# ----------------------------------------------------------------------------- inputs / refs
def _matmul_inputs(p, device):
    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    in_dt = p.get("in_dtype", "float16")
    out_dt = p.get("out_dtype", "float16")
    a = randn((M, K), in_dt, device, g)
    b = randn((N, K) if p.get("trans_B", False) else (K, N), in_dt, device, g)
    return [a, b, nan_out((M, N), out_dt, device)]


def _matmul_ref_nn(args):
    a, b = args[0].float(), args[1].float()
    return {2: a @ b}


def _matmul_ref_nt(args):
    a, b = args[0].float(), args[1].float()
    return {2: a @ b.T}


def _bias_relu_inputs(p, device):
    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    dt = p.get("dtype", "float16")
    return [randn((M, K), dt, device, g), randn((K, N), dt, device, g),
            randn((N,), dt, device, g, scale=8.0), nan_out((M, N), dt, device)]


def _bias_relu_ref(args):
    import torch

    a, b, bias = args[0].float(), args[1].float(), args[2].float()
    return {3: torch.relu(a @ b + bias[None, :])}


def _bmm_inputs(p, device):
    g = generator(device, 0)
    Bt, M, N, K = p["batch"], p["M"], p["N"], p["K"]
    dt = p.get("dtype", "float16")
    return [randn((Bt, M, K), dt, device, g), randn((Bt, K, N), dt, device, g),
            nan_out((Bt, M, N), dt, device)]


def _bmm_ref(args):
    import torch

    return {2: torch.bmm(args[0].float(), args[1].float())}


def _splitk_inputs(p, device):
    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    dt = p.get("dtype", "float16")
    # C is accumulated into with atomics, so it must be zero on entry (not NaN).
    return [randn((M, K), dt, device, g), randn((K, N), dt, device, g),
            zeros((M, N), p.get("out_dtype", "float32"), device)]


def _splitk_ref(args):
    return {2: args[0].float() @ args[1].float()}


# ----------------------------------------------------------------------------- expected
def _matmul_expected(p) -> Expected:
    M, N, K = p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    ib = nbytes(p.get("in_dtype", "float16"))
    ob = nbytes(p.get("out_dtype", "float16"))
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    return Expected(
        # gm*gn blocks x gk iterations x one full bm*bn*bk tile gemm each
        tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk),
        # A: each of the gn block columns reads all of A (clipped copies);
        # B: each of the gm block rows reads all of B
        global_read_bytes=(gn * M * K + gm * K * N) * ib,
        # C written once, element by element (clipped at the edges)
        global_write_bytes=M * N * ob,
        global_atomic_bytes=0,
        # A, B read in full, C written in full
        unique_bytes=(M * K + K * N) * ib + M * N * ob,
    )


def _bias_relu_expected(p) -> Expected:
    M, N, K = p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    b = nbytes(p.get("dtype", "float16"))
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    return Expected(
        tensor_flops=2 * (gm * bm) * (gn * bn) * (gk * bk),
        # as the plain GEMM, plus every block copying its bn-slice of Bias: gm*N elements
        global_read_bytes=(gn * M * K + gm * K * N + gm * N) * b,
        global_write_bytes=M * N * b,
        global_atomic_bytes=0,
        # epilogue: one add (acc + bias) and one max per output element -> 2 FLOPs;
        # shapes are tile-divisible so the fragment elements equal M*N
        cuda_flops=2 * (gm * bm) * (gn * bn),
        sfu_ops=0,
        unique_bytes=(M * K + K * N + N + M * N) * b,
    )


def _bmm_expected(p) -> Expected:
    Bt, M, N, K = p["batch"], p["M"], p["N"], p["K"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    b = nbytes(p.get("dtype", "float16"))
    gm, gn, gk = cdiv(M, bm), cdiv(N, bn), cdiv(K, bk)
    return Expected(
        # per batch (blockIdx.z) exactly the plain GEMM counts
        tensor_flops=Bt * 2 * (gm * bm) * (gn * bn) * (gk * bk),
        global_read_bytes=Bt * (gn * M * K + gm * K * N) * b,
        global_write_bytes=Bt * M * N * b,
        global_atomic_bytes=0,
        unique_bytes=Bt * (M * K + K * N + M * N) * b,
    )


def _splitk_expected(p) -> Expected:
    M, N, K, S = p["M"], p["N"], p["K"], p["split_k"]
    bm, bn, bk = p["block_M"], p["block_N"], p["block_K"]
    b = nbytes(p.get("dtype", "float16"))
    gm, gn = cdiv(M, bm), cdiv(N, bn)
    gk = cdiv(K // S, bk)  # iterations per K-slice
    return Expected(
        # gm*gn*S blocks, each gk full-tile gemms
        tensor_flops=2 * (gm * bm) * (gn * bn) * (S * gk * bk),
        # the S slices of block (bx, by) together read the bm rows of A over all of K and
        # the bn columns of B over all of K: same totals as an unsplit GEMM
        global_read_bytes=(gn * M * K + gm * K * N) * b,
        # no plain stores: C is only touched by atomics
        global_write_bytes=0,
        # every block atomically adds its bm x bn float32 tile: S * M * N elements x 4 B
        global_atomic_bytes=S * M * N * 4,
        unique_bytes=(M * K + K * N) * b + M * N * 4,
    )


# ----------------------------------------------------------------------------- cases
def _mm_params(M, N, K, bm=128, bn=128, bk=32, stages=3, threads=128, in_dtype="float16",
               out_dtype="float16", trans_B=False, swizzle=False):
    return dict(M=M, N=N, K=K, block_M=bm, block_N=bn, block_K=bk, num_stages=stages,
                threads=threads, in_dtype=in_dtype, out_dtype=out_dtype,
                accum_dtype="float32", trans_B=trans_B, swizzle=swizzle)


def _mm_case(name, p, rtol=1e-2, tags=(), sweep=None, note=""):
    return Case(
        name=name, kernel=matmul, params=p, make_inputs=_matmul_inputs,
        reference=_matmul_ref_nt if p["trans_B"] else _matmul_ref_nn,
        expected=_matmul_expected(p), rtol=rtol, sweep=sweep,
        tags=("gemm", p["in_dtype"], "nt" if p["trans_B"] else "nn") + tuple(tags), note=note)


def cases() -> list[Case]:
    out = [
        _mm_case("gemm_nn_fp16_4096", _mm_params(4096, 4096, 4096),
                 note="the classic: 128x128x32 tiles, 3 stages, 128 threads"),
        _mm_case("gemm_nt_fp16_4096", _mm_params(4096, 4096, 4096, trans_B=True),
                 note="B stored (N, K), T.gemm(transpose_B=True)"),
        _mm_case("gemm_nn_bf16_4096", _mm_params(4096, 4096, 4096, in_dtype="bfloat16",
                                                 out_dtype="bfloat16")),
        _mm_case("gemm_nt_fp8e4m3_4096",
                 _mm_params(4096, 4096, 4096, bk=64, in_dtype="float8_e4m3fn", trans_B=True),
                 rtol=5e-2, tags=("fp8",),
                 note="fp8 e4m3 in, fp32 accumulate, fp16 out; K-major B (NT) as Hopper fp8 "
                      "wgmma needs"),
        _mm_case("gemm_nn_fp16_8192",
                 _mm_params(8192, 8192, 8192, bm=128, bn=256, bk=64, stages=3, threads=256,
                            swizzle=True),
                 note="TileLang's sm90 heuristic config (128x256x64, 3 stages, 256 threads, "
                      "rasterization on)"),
        _mm_case("gemm_nn_fp16_edge_4000",
                 _mm_params(4000, 4000, 4000, bm=128, bn=128, bk=64, stages=3),
                 tags=("edge",),
                 note="M = N = 4000 leave a 32-row/col edge tile (31*128 + 32) and K = 4000 a "
                      "32-wide last K tile (62*64 + 32): copies are clipped, gemm tiles are not"),
        _mm_case("gemm_nn_fp16_fp32out_4096", _mm_params(4096, 4096, 4096, out_dtype="float32"),
                 note="fp16 in, fp32 accumulate and fp32 output"),
    ]

    p = dict(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=32, num_stages=3,
             threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("gemm_bias_relu_fp16_4096", matmul_bias_relu, p, _bias_relu_inputs,
                    _bias_relu_ref, _bias_relu_expected(p), rtol=1e-2,
                    tags=("gemm", "float16", "epilogue"),
                    note="bias add + ReLU fused on the accumulator fragment"))

    p = dict(batch=16, M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32,
             num_stages=3, threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("bmm_fp16_b16_1024", bmm, p, _bmm_inputs, _bmm_ref, _bmm_expected(p),
                    rtol=1e-2, tags=("gemm", "float16", "batched"),
                    note="batch on blockIdx.z (3-axis T.Kernel)"))

    p = dict(M=1024, N=1024, K=16384, split_k=8, block_M=128, block_N=128, block_K=32,
             num_stages=3, threads=128, dtype="float16", accum_dtype="float32")
    out.append(Case("gemm_splitk8_fp16_1024x1024x16384", matmul_splitk, p, _splitk_inputs,
                    _splitk_ref, _splitk_expected(p), rtol=1e-2,
                    tags=("gemm", "float16", "split-k", "atomic"),
                    note="C must be zero before every launch (atomics accumulate into it): "
                         "re-zero C between timed repetitions or the result keeps growing"))
    return out


# ----------------------------------------------------------------------------- sweeps
# (block_M, block_N, block_K, num_stages, threads, swizzle); shared memory per block
# (bm*bk + bk*bn) * 2 B * stages stays <= 227 KB and the float32 accumulator per thread
# (bm*bn/threads) stays <= 128 registers.
_GEMM8192_CONFIGS = [
    (128, 128, 32, 3, 128, False),
    (128, 128, 32, 3, 128, True),
    (128, 128, 32, 2, 128, True),
    (128, 128, 64, 3, 128, True),
    (128, 128, 64, 4, 256, True),
    (128, 256, 64, 3, 256, True),
    (128, 256, 64, 3, 256, False),
    (128, 256, 32, 4, 256, True),
    (256, 128, 64, 3, 256, True),
    (256, 128, 32, 2, 256, False),
    (64, 128, 64, 4, 128, True),
    (128, 64, 64, 4, 128, True),
    (64, 256, 64, 3, 128, True),
    (64, 64, 64, 4, 128, False),
]

_GEMM_SKINNY_CONFIGS = [
    (128, 128, 32, 3, 128, False),
    (128, 128, 32, 3, 128, True),
    (128, 128, 64, 3, 128, True),
    (128, 128, 64, 4, 256, False),
    (128, 256, 64, 3, 256, True),
    (256, 128, 64, 3, 256, True),
    (64, 128, 64, 4, 128, False),
    (128, 64, 64, 4, 128, True),
    (64, 256, 64, 3, 128, False),
    (64, 64, 64, 4, 128, False),
    (128, 128, 64, 2, 128, False),
    (256, 128, 32, 4, 256, False),
]


def _sweep_name(prefix, c):
    bm, bn, bk, s, t, sw = c
    return f"sweep_{prefix}_bm{bm}_bn{bn}_bk{bk}_s{s}_t{t}_sw{int(sw)}"


def sweeps() -> tuple[list[Case], dict[str, list[str]]]:
    out, names = [], {"gemm_8192": [], "gemm_skinny": []}
    for c in _GEMM8192_CONFIGS:
        bm, bn, bk, s, t, sw = c
        name = _sweep_name("gemm8192", c)
        out.append(_mm_case(name, _mm_params(8192, 8192, 8192, bm, bn, bk, s, t, swizzle=sw),
                            sweep="gemm_8192"))
        names["gemm_8192"].append(name)
    for c in _GEMM_SKINNY_CONFIGS:
        bm, bn, bk, s, t, sw = c
        name = _sweep_name("gemmskinny", c)
        out.append(_mm_case(name, _mm_params(16384, 1024, 4096, bm, bn, bk, s, t, swizzle=sw),
                            sweep="gemm_skinny",
                            note="M x N x K = 16384 x 1024 x 4096"))
        names["gemm_skinny"].append(name)
    return out, names

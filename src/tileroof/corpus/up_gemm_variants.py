"""Upstream-style GEMM work decompositions: TileLang's own examples (github tile-ai/tilelang,
examples/) that split the K loop of a GEMM over several blocks and add the partial C tiles
with atomics, kept in the example's structure (tile sizes, pipelining, threads).

    up_gemm_splitk_*   examples/gemm_splitk/example_tilelang_gemm_splitk.py (matmul)
    up_gemm_streamk_*  examples/gemm_streamk/example_tilelang_gemm_streamk.py (tl_matmul_streamk)

    cases()            the four cases (in CASES once the package lists this module)
    TINY               per-kernel overrides that shrink a case for CPU tests

As in upstream.py, every @tilelang.jit below takes every argument (no out_idx).  The outputs
here are accumulated into with atomics, so the harness passes them zero-filled (_util.zeros),
as upstream's main() does (torch.zeros).  Counting conventions are upstream.py's (its module
docstring): tensor FLOPs 2*M*N*K per T.gemm execution on the whole tile; bytes as issued to
global memory by tile copies (clipped at tensor edges), element stores and atomics, summed over
every block and iteration.  Neither kernel has CUDA-core FLOPs or SFU ops (the partial sums are
added by the atomics, which count as atomic bytes, not FLOPs).
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T

from .case import Case, Expected
from .gemm import _matmul_ref_nt, _splitk_inputs, _splitk_ref
from ._util import cdiv, generator, nbytes, randn, zeros

H200_SMS = 132           # streaming multiprocessors of an H200 (upstream's total_sm is 108, an A100)


# ============================================================================= kernels
# ----------------------------------------------------------------------------- split-K
@tilelang.jit
def up_gemm_splitk(M, N, K, block_M=128, block_N=128, block_K=32, split_k=4, num_stages=0,
                   threads=128, dtype="float16", accum_dtype="float32", out_dtype="float32"):
    """Split-K GEMM, examples/gemm_splitk/example_tilelang_gemm_splitk.py (matmul) as upstream
    writes it now: grid (N/block_N, M/block_M, split_k); block (bx, by, bz) runs the K slice
    [bz*K/split_k, (bz+1)*K/split_k) through an unpipelined (num_stages=0) T.Pipelined loop of
    A and B tile copies into shared memory and a T.gemm into a float32 fragment, stages the
    partial tile through a shared C tile and adds it into C (float32, zero on entry) one element
    at a time with T.atomic_add in a T.Parallel.  Upstream main()'s config (128 x 128 x 32
    tiles, split_k = 4, 128 threads, fp16 in, float32 out) is the default.
    Changed: B is declared (K, N), the shape upstream's copies index it with and its main()
    passes (upstream declares (N, K), which only works for square B); num_stages and threads are
    parameters with upstream's values as defaults."""
    splitK = K // split_k

    @T.prim_func
    def main(
            A: T.Tensor((M, K), dtype),
            B: T.Tensor((K, N), dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k,
                      threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(splitK, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, bz * splitK + ko * block_K], A_shared)
                T.copy(B[bz * splitK + ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)

            T.copy(C_local, C_shared)
            for i, j in T.Parallel(block_M, block_N):
                T.atomic_add(C[by * block_M + i, bx * block_N + j], C_shared[i, j])

    return main


# ----------------------------------------------------------------------------- stream-K
def streamk_schedule(M, N, K, total_sm, block_M, block_N, block_K):
    """Upstream's module-level schedule (example_tilelang_gemm_streamk.py, "Two-tile SK + DP"):
    the tiles left over after whole waves of total_sm tiles (plus one more wave if there is more
    than one) are shared out as K iterations, as evenly as possible, over the total_sm programs
    (the stream-K first wave); the remaining tiles, a multiple of total_sm, are then computed
    whole, sm_patition_factor per program (data parallel)."""
    num_block_m, num_block_n = cdiv(M, block_M), cdiv(N, block_N)
    iters_per_tile = cdiv(K, block_K)
    total_tiles = num_block_m * num_block_n
    streamk_tiles = total_tiles % total_sm
    if total_tiles - streamk_tiles > total_sm:
        streamk_tiles += total_sm
    blocking_tiles = total_tiles - streamk_tiles
    streamk_iters = streamk_tiles * iters_per_tile
    return dict(
        num_block_n=num_block_n, iters_per_tile=iters_per_tile, total_tiles=total_tiles,
        streamk_tiles=streamk_tiles, blocking_tiles=blocking_tiles,
        streamk_full_tiles=streamk_iters // total_sm,       # iterations every program runs
        streamk_partial_tiles=streamk_iters % total_sm,     # programs that run one more
        sm_patition_factor=max(blocking_tiles // total_sm, 1),
    )


@tilelang.jit
def up_gemm_streamk(M, N, K, total_sm=H200_SMS, block_M=16, block_N=128, block_K=32,
                    trans_B=True, dtypeAB="float16", dtypeC="float16", accum_dtype="float32",
                    num_stages=2, threads=64):
    """Stream-K GEMM, examples/gemm_streamk/example_tilelang_gemm_streamk.py (tl_matmul_streamk):
    C = A @ B^T (B stored (N, K)) with one block per SM (total_sm programs).  compute_first_wave:
    program pid runs the K iterations [pid*full + min(pid, partial), (pid+1)*full + min(pid+1,
    partial)) of the stream-K tiles in a while loop, one tile's run of iterations per trip
    (T.Pipelined, num_stages), and stores the tile's fragment with a plain T.copy when it ran
    the whole tile or atomically adds it (T.atomic_add per element in a T.Parallel) otherwise;
    compute_full_tiles: then sm_patition_factor whole tiles pid + streamk_tiles + p*total_sm
    (T.Pipelined, num_stages=1), each stored with T.copy.  Upstream's config (16 x 128 x 32
    tiles, num_stages=2, 64 threads, fp16 in and out, float32 accumulation, trans_B) is the
    default; C (fp16) must be zero on entry, as upstream's b_c = torch.zeros.
    Changed: upstream computes the schedule (streamk_tiles, streamk_full_tiles, ...) from its
    module-level globals and a fixed A100 total_sm = 108; here it is computed from the
    parameters by streamk_schedule (same formulas) and total_sm defaults to the H200's 132; the
    macros' buffer annotations are T.SharedBuffer / T.FragmentBuffer (tilelang 0.1.15 has no
    T.SharedTensor / T.LocalTensor); trans_B must stay True (upstream's B copies assume it) and a
    shape with no data-parallel tiles is refused (upstream would run one tile past the end)."""
    assert trans_B, "upstream's B copies index B as (N, K)"
    s = streamk_schedule(M, N, K, total_sm, block_M, block_N, block_K)
    # with no data-parallel tiles upstream's max(..., 1) still runs one, past the last tile
    assert s["blocking_tiles"] > 0, "the schedule needs more than total_sm tiles"
    iters_per_tile = s["iters_per_tile"]
    streamk_tiles = s["streamk_tiles"]
    streamk_full_tiles = s["streamk_full_tiles"]
    streamk_partial_tiles = s["streamk_partial_tiles"]
    sm_patition_factor = s["sm_patition_factor"]
    A_shape = (M, K)
    B_shape = (N, K)
    A_shared_shape = (block_M, block_K)
    B_shared_shape = (block_N, block_K)

    @T.macro
    def compute_first_wave(pid: T.int32, A_buf: T.Tensor, A_buf_shared: T.SharedBuffer,
                           B_buf: T.Tensor, B_buf_shared: T.SharedBuffer, C: T.Tensor,
                           C_local: T.FragmentBuffer):
        start_iter = T.alloc_fragment((1,), "int32", "local")
        end_iter = T.alloc_fragment((1,), "int32", "local")

        start_iter[0] = pid * streamk_full_tiles + T.min(pid, streamk_partial_tiles)
        last_iter = (pid + 1) * streamk_full_tiles + T.min(pid + 1, streamk_partial_tiles)

        while start_iter[0] < last_iter:
            end_iter[0] = T.min(start_iter[0] + (iters_per_tile - (start_iter[0] % iters_per_tile)),
                                last_iter)
            tile_id = start_iter[0] // iters_per_tile
            remain_iters = start_iter[0] % iters_per_tile
            pid_m = tile_id // T.ceildiv(N, block_N)
            pid_n = tile_id % T.ceildiv(N, block_N)

            T.clear(C_local)
            for k in T.Pipelined(end_iter[0] - start_iter[0], num_stages=num_stages):
                T.copy(A_buf[pid_m * block_M, (k + (start_iter[0] % iters_per_tile)) * block_K],
                       A_buf_shared)
                T.copy(B_buf[pid_n * block_N, (k + (start_iter[0] % iters_per_tile)) * block_K],
                       B_buf_shared)
                T.gemm(A_buf_shared, B_buf_shared, C_local, transpose_B=trans_B)

            # the last iteration of a tile always runs before its start on another SM
            if remain_iters == 0 and (end_iter[0] % iters_per_tile == 0):
                T.copy(C_local, C[pid_m * block_M, pid_n * block_N])
            else:
                for i, j in T.Parallel(block_M, block_N):
                    T.atomic_add(C[pid_m * block_M + i, pid_n * block_N + j], C_local[i, j])

            start_iter[0] = end_iter[0]

    @T.macro
    def compute_full_tiles(pid: T.int32, A_buf: T.Tensor, A_shared: T.SharedBuffer,
                           B_buf: T.Tensor, B_shared: T.SharedBuffer, C: T.Tensor,
                           C_local: T.FragmentBuffer):
        for p in T.serial(sm_patition_factor):
            tile_id = pid + streamk_tiles + p * total_sm
            pid_m = tile_id // T.ceildiv(N, block_N)
            pid_n = tile_id % T.ceildiv(N, block_N)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=1):
                T.copy(A_buf[pid_m * block_M, k * block_K], A_shared)
                T.copy(B_buf[pid_n * block_N, k * block_K], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_B=trans_B)
            T.copy(C_local, C[pid_m * block_M, pid_n * block_N])

    @T.prim_func
    def main(
            A: T.Tensor(A_shape, dtypeAB),
            B: T.Tensor(B_shape, dtypeAB),
            C: T.Tensor((M, N), dtypeC),
    ):
        with T.Kernel(total_sm, threads=threads) as pid:
            A_shared = T.alloc_shared(A_shared_shape, dtypeAB)
            B_shared = T.alloc_shared(B_shared_shape, dtypeAB)
            A_shared_full_tiles = T.alloc_shared(A_shared_shape, dtypeAB)
            B_shared_full_tiles = T.alloc_shared(B_shared_shape, dtypeAB)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)

            compute_first_wave(pid, A, A_shared, B, B_shared, C, C_local)
            if sm_patition_factor > 0:
                compute_full_tiles(pid, A, A_shared_full_tiles, B, B_shared_full_tiles, C, C_local)

    return main


# ============================================================================= inputs / refs
def _streamk_inputs(p, device):
    g = generator(device, 0)
    M, N, K, dt = p["M"], p["N"], p["K"], p.get("dtypeAB", "float16")
    # B is stored (N, K) (trans_B); C is partly accumulated into with atomics: zero on entry
    return [randn((M, K), dt, device, g), randn((N, K), dt, device, g),
            zeros((M, N), p.get("dtypeC", "float16"), device)]


# ============================================================================= expected
def _splitk_expected(p) -> Expected:
    M, N, K, S = p["M"], p["N"], p["K"], p["split_k"]
    bM, bN, bK = p["block_M"], p["block_N"], p["block_K"]
    assert M % bM == 0 and N % bN == 0 and K % (S * bK) == 0, "the derivation assumes whole tiles"
    b, ob = nbytes(p.get("dtype", "float16")), nbytes(p.get("out_dtype", "float32"))
    blocks = cdiv(N, bN) * cdiv(M, bM) * S
    nk = cdiv(K // S, bK)                  # iterations per block (its K slice)
    return Expected(
        # one bM x bN x bK gemm per iteration: 2*M*N*K in all
        tensor_flops=blocks * nk * 2 * bM * bN * bK,
        cuda_flops=0, sfu_ops=0,
        # per iteration an A tile (bM x bK) and a B tile (bK x bN)
        global_read_bytes=blocks * nk * (bM * bK + bK * bN) * b,
        # C is only added into (the C_local -> C_shared copy stays on chip)
        global_write_bytes=0,
        # every block adds its whole bM x bN partial tile, element by element: C split_k times
        global_atomic_bytes=S * M * N * ob,
        # A, B and C, each in full
        unique_bytes=(M * K + K * N) * b + M * N * ob,
    )


def streamk_work(p):
    """Walk upstream's schedule per program: (K iterations, tiles stored with T.copy, tiles
    added with atomics), summed over the total_sm programs and both phases."""
    P = p["total_sm"]
    s = streamk_schedule(p["M"], p["N"], p["K"], P, p["block_M"], p["block_N"], p["block_K"])
    ipt, full, part = s["iters_per_tile"], s["streamk_full_tiles"], s["streamk_partial_tiles"]
    iters = stores = atomics = 0
    for pid in range(P):                   # compute_first_wave: the kernel's while loop
        start = pid * full + min(pid, part)
        last = (pid + 1) * full + min(pid + 1, part)
        while start < last:
            end = min(start + (ipt - start % ipt), last)
            iters += end - start
            if start % ipt == 0 and end % ipt == 0:
                stores += 1                # the program ran the whole tile
            else:
                atomics += 1               # a share of a tile another program also runs
            start = end
    n_full = P * s["sm_patition_factor"]   # compute_full_tiles: whole tiles, T.copy out
    return iters + n_full * ipt, stores + n_full, atomics


def _streamk_expected(p) -> Expected:
    M, N, K = p["M"], p["N"], p["K"]
    bM, bN, bK = p["block_M"], p["block_N"], p["block_K"]
    assert M % bM == 0 and N % bN == 0 and K % bK == 0, "the derivation assumes whole tiles"
    b, cb = nbytes(p.get("dtypeAB", "float16")), nbytes(p.get("dtypeC", "float16"))
    iters, stores, atomics = streamk_work(p)
    assert iters == cdiv(M, bM) * cdiv(N, bN) * cdiv(K, bK)   # every tile's K loop exactly once
    return Expected(
        # one bM x bN x bK gemm per iteration: 2*M*N*K in all
        tensor_flops=iters * 2 * bM * bN * bK,
        cuda_flops=0, sfu_ops=0,
        # per iteration an A tile (bM x bK) and a B tile (bN x bK, B stored (N, K))
        global_read_bytes=iters * (bM * bK + bN * bK) * b,
        # a bM x bN C tile per tile a program ran whole
        global_write_bytes=stores * bM * bN * cb,
        # a bM x bN C tile per share of a split tile, element by element
        global_atomic_bytes=atomics * bM * bN * cb,
        # A, B and C, each in full
        unique_bytes=(M * K + N * K) * b + M * N * cb,
    )


# ============================================================================= cases
def _splitk_case(name, M, N, K, note, split_k=4) -> Case:
    p = dict(M=M, N=N, K=K, block_M=128, block_N=128, block_K=32, split_k=split_k, num_stages=0,
             threads=128, dtype="float16", accum_dtype="float32", out_dtype="float32")
    return Case(name, up_gemm_splitk, p, _splitk_inputs, _splitk_ref, _splitk_expected(p),
                rtol=1e-2, tags=("gemm", "splitk", "atomic", "upstream", "float16"), note=note)


def _streamk_case(name, M, N, K, note, total_sm=H200_SMS) -> Case:
    p = dict(M=M, N=N, K=K, total_sm=total_sm, block_M=16, block_N=128, block_K=32, trans_B=True,
             dtypeAB="float16", dtypeC="float16", accum_dtype="float32", num_stages=2, threads=64)
    return Case(name, up_gemm_streamk, p, _streamk_inputs, _matmul_ref_nt, _streamk_expected(p),
                rtol=1e-2, tags=("gemm", "streamk", "atomic", "upstream", "float16"), note=note)


def cases() -> list[Case]:
    return [
        _splitk_case("up_gemm_splitk4_atomic_fp16_2048x2048x2048", 2048, 2048, 2048,
                     "examples/gemm_splitk/example_tilelang_gemm_splitk.py, upstream main()'s "
                     "config (128 x 128 x 32 tiles, split_k = 4, num_stages = 0) at twice its "
                     "1024^3 shape (~16 us there): 1024 blocks, 16 iterations each, C added "
                     "4 times with element atomics"),
        _splitk_case("up_gemm_splitk4_atomic_fp16_2048x2048x8192", 2048, 2048, 8192,
                     "examples/gemm_splitk/example_tilelang_gemm_splitk.py, upstream config at a "
                     "skinny-output shape (K = 4 M): 1024 blocks, 64 iterations each; the same "
                     "shape as gemm.py's gemm_splitk4_fp16_2048x2048x8192 (tile-region atomic, "
                     "3 stages)"),
        _streamk_case("up_gemm_streamk_atomic_fp16_2048x2048x1024_sm132", 2048, 2048, 1024,
                      "examples/gemm_streamk/example_tilelang_gemm_streamk.py, upstream config "
                      "(16 x 128 x 32 tiles, 2 stages, 64 threads) on 132 programs: 2048 tiles, "
                      "200 stream-K (first wave), 1848 data-parallel (14 per program); does not compile "
                      "with tilelang 0.1.15 (run 78: ProducerConsumerWS: failed to replace pipeline "
                      "loop), kept for its counts"),
        _streamk_case("up_gemm_streamk_atomic_fp16_1024x1024x4096_sm132", 1024, 1024, 4096,
                      "examples/gemm_streamk/example_tilelang_gemm_streamk.py, upstream config on "
                      "132 programs at a long-K shape: 512 tiles of 128 iterations, 248 of them "
                      "stream-K, 264 data-parallel (2 per program); does not compile with tilelang 0.1.15 "
                      "(run 78), kept for its counts"),
    ]


# ----------------------------------------------------------------------------- tiny params
# Per kernel, overrides that shrink a case so that make_inputs / reference run in milliseconds on
# CPU (the same role as tests/test_corpus_elaborates.py's _TINY).
TINY = [
    (up_gemm_splitk, lambda p: dict(M=256, N=256, K=512)),
    # upstream main()'s own shape and A100 program count (128 tiles: 20 stream-K, 108 whole)
    (up_gemm_streamk, lambda p: dict(M=256, N=1024, K=512, total_sm=108)),
]


"""Upstream-style dequantizing GEMMs: weight-only 4-bit quantised GEMM as TileLang's
examples/dequantize_gemm/ writes it.  Activations A (M, K) are fp16 / bf16; the weights B are
packed FP4 (e2m1, two per uint8 byte, element (n, k) in byte (n, k // 2), nibble k % 2, the low
nibble first) of shape (N, K // 2); each block dequantises its B tile with upstream's bit
operations and feeds it to T.gemm with transpose_B.

    dequant_gemm_fp4_fp16   example_dequant_gemm_fp4_hopper.py (matmul's `main`, split=1): the
                            tile is dequantised in registers (fragment) and is the gemm's *A*
                            operand: the kernel computes Ct = (A B^T)^T, stored (N, M)
    dequant_gemm_fp4_bf16   example_dequant_gemm_bf16_fp4_hopper.py with fast_dequant=False (the
                            pure-TIR `simple_dequant_bf16_fp4` path): the tile is dequantised into
                            shared memory and the kernel computes C = A B^T, stored (M, N)

Counting conventions are upstream.py's.  The dequantisation is integer bit arithmetic (shifts,
ands, ors, integer adds / min, casts, a reinterpret), which is free in cuda_flops; so both kernels
have tensor FLOPs only.

Decoding (both kernels, the same values): s = bit 3, e = bits 2..1, m = bit 0 of the nibble; the
fp16 kernel builds the half with exponent field e + 14 and mantissa m << 9, the bf16 kernel the
bfloat16 with exponent field e + 126 and mantissa m << 6 -- both mean (-1)^s 2^(e - 1) (1 + m/2),
so a zero exponent is 0.5, not 0 (upstream's commented-out "e_f4 == 0 -> 0" Select is not
applied; the references decode bit for bit as the kernels do, see fp4_to_float).

All four cases were compiled and checked against their references on an H200 once by the helper
that wrote them (tilelang 0.1.15 from .dev; not kept); their recorded measurement is run 76
(NOTES.md).
"""
# NOTE: no `from __future__ import annotations` (see gemm.py).

import tilelang
import tilelang.language as T
from tilelang import tvm

from .case import Case, Expected
from ._util import generator, nan_out, nbytes, randn

tir = tvm.tirx      # tilelang 0.1.15's TVM names the TIR module `tirx` (upstream: `from tvm import tir`)


# ============================================================================= dequant helpers
def _u8_to_f4_to_f16(nbit, val, pos, dtype):
    """example_dequant_gemm_fp4_hopper.py's _tir_u8_to_f4_to_f16: nibble `pos` of the uint8
    `val` (s1e2m1) to a float16 bit pattern: exponent e_f4 + 14 (the bias 15 - 1), mantissa bit
    at 9."""
    assert nbit == 4 and dtype == "float16" and val.dtype == "uint8"
    mask = tir.const((1 << nbit) - 1, "uint16")
    f4 = (val >> (pos.astype("uint16") * tir.const(nbit, "uint16"))) & mask
    s = f4 >> tir.const(3, "uint16")
    e_f4 = (f4 & tir.const(6, "uint16")) >> tir.const(1, "uint16")
    e_f16 = e_f4 + tir.const(14, "uint16")
    m_f16 = f4 & tir.const(1, "uint16")
    return tir.reinterpret(
        "float16",
        ((e_f16 | (s << tir.const(5, "uint16"))) << tir.const(10, "uint16")
         | m_f16 << tir.const(9, "uint16")).astype("uint16"))


def _u8_to_f4_to_bf16(nbit, val, pos, scale, dtype):
    """example_dequant_gemm_bf16_fp4_hopper.py's _tir_u8_to_f4_to_bf16: exponent e_f4 + 126 (the
    bias 127 - 1) plus an exponent `scale` (0 in the example's simple path), clamped to 8 bits
    with T.min; mantissa bit at 6."""
    assert nbit == 4 and dtype == "bfloat16" and val.dtype == "uint8"
    mask = tir.const((1 << nbit) - 1, "uint16")
    f4 = (val >> (pos.astype("uint16") * tir.const(nbit, "uint16"))) & mask
    s = f4 >> tir.const(3, "uint16")
    e_f4 = (f4 & tir.const(6, "uint16")) >> tir.const(1, "uint16")
    e_bf16 = e_f4 + tir.const(126, "uint16")
    e_bf16 = T.min(e_bf16 + scale, tir.const((1 << 8) - 1, "uint16"))
    m_f4 = f4 & tir.const(1, "uint16")
    return tir.reinterpret(
        "bfloat16",
        ((((s << tir.const(8, "uint16")) | e_bf16) << tir.const(7, "uint16"))
         | (m_f4 << tir.const(6, "uint16"))).astype("uint16"))


# ============================================================================= kernels
@tilelang.jit
def dequant_gemm_fp4_fp16(M, N, K, block_M=128, block_N=128, block_K=128, num_stages=2,
                          threads=256, num_bits=4, in_dtype="float16", out_dtype="float16",
                          accum_dtype="float32"):
    """FP4-weight GEMM, examples/dequantize_gemm/example_dequant_gemm_fp4_hopper.py (matmul's
    kernel_func, split == 1 `main`), upstream main()'s config (block 128 x 128 x 128, 2 stages,
    256 threads, fp16 in and out, float32 accumulation).  Grid (N / block_N, M / block_M); per K
    tile: A and packed-B tiles to shared memory (B_shared swizzled), B_shared -> B_local
    fragment, a T.Parallel over (block_N, block_K) dequantises into the B_dequantize_local
    fragment, which is copied to B_dequantize_prev_local and used as the gemm's A operand:
    Ct_local (block_N x block_M) += B_deq A_shared^T.  The transposed tile leaves through the
    swizzled Ct_shared into Ct (N, M).
    Changed: upstream's out_idx=[2] dropped (Ct is an argument); M, N, K and the tiles are
    arguments of one @tilelang.jit function instead of the matmul(...)(...) closure;
    `tir` is tvm.tirx in tilelang 0.1.15."""
    num_elems_per_byte = 8 // num_bits
    storage_dtype = "uint8"
    A_shape = (M, K)
    B_shape = (N, K // num_elems_per_byte)
    A_shared_shape = (block_M, block_K)
    B_shared_shape = (block_N, block_K // num_elems_per_byte)
    B_dequantize_shared_shape = (block_N, block_K)
    assert K % block_K == 0

    @T.prim_func
    def main(
            A: T.Tensor(A_shape, in_dtype),
            B: T.Tensor(B_shape, storage_dtype),
            Ct: T.Tensor((N, M), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, storage_dtype)
            B_local = T.alloc_fragment(B_shared_shape, storage_dtype)
            B_dequantize_local = T.alloc_fragment(B_dequantize_shared_shape, in_dtype)
            B_dequantize_prev_local = T.alloc_fragment(B_dequantize_shared_shape, in_dtype)
            Ct_local = T.alloc_fragment((block_N, block_M), accum_dtype)
            Ct_shared = T.alloc_shared((block_N, block_M), out_dtype)

            T.annotate_layout({
                B_shared: tilelang.layout.make_swizzled_layout(B_shared),
                Ct_shared: tilelang.layout.make_swizzled_layout(Ct_shared),
            })

            T.clear(Ct_local)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_shared)
                T.copy(B_shared, B_local)
                for i, j in T.Parallel(block_N, block_K):
                    B_dequantize_local[i, j] = _u8_to_f4_to_f16(
                        num_bits, B_local[i, j // num_elems_per_byte], j % num_elems_per_byte,
                        dtype=in_dtype)
                T.copy(B_dequantize_local, B_dequantize_prev_local)
                T.gemm(B_dequantize_prev_local, A_shared, Ct_local, transpose_B=True)
            T.copy(Ct_local, Ct_shared)
            T.copy(Ct_shared, Ct[bx * block_N:(bx + 1) * block_N, by * block_M:(by + 1) * block_M])

    return main


@tilelang.jit(pass_configs={
    tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER: True,
    tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True,
})
def dequant_gemm_fp4_bf16(M, N, K, block_M=256, block_N=128, block_K=128, num_stages=2,
                          threads=256, num_bits=4, in_dtype="bfloat16", out_dtype="bfloat16",
                          accum_dtype="float32"):
    """FP4-weight GEMM in bf16, examples/dequantize_gemm/example_dequant_gemm_bf16_fp4_hopper.py
    with fast_dequant=False (its `simple_dequant_bf16_fp4` macro), upstream main()'s fixed config
    (block 256 x 128 x 128, 2 stages, 256 threads, split 1) and its pass configs (TMA lowering and
    warp specialisation off).  Grid (N / block_N, M / block_M); per K tile: A and packed-B tiles
    to shared memory, the macro copies B_shared to a B_local fragment (unused afterwards, as
    upstream: the T.Parallel reads B_shared), dequantises the (block_N, block_K) tile with
    exponent scale 0 into a fragment and copies it to B_dequantize_shared; then
    C_local += A_shared B_dequantize_shared^T.  C leaves through the swizzled C_shared.
    Changed: upstream's @tilelang.autotune and out_idx=[-1] dropped (C is an argument); only the
    simple (pure-TIR) dequant path is kept: the fast path calls an external twiddling intrinsic
    (T.import_source + T.call_extern) on a bit-twiddled B layout; `tir` is tvm.tirx in 0.1.15."""
    num_elems_per_byte = 8 // num_bits
    storage_dtype = "uint8"
    QK = K // num_elems_per_byte
    Block_QK = block_K // num_elems_per_byte
    A_shape = (M, K)
    B_shape = (N, QK)
    A_shared_shape = (block_M, block_K)
    B_shared_shape = (block_N, Block_QK)
    B_dequantize_shared_shape = (block_N, block_K)
    assert K % block_K == 0

    @T.macro
    def simple_dequant_bf16_fp4(B_shared, B_dequantize_shared):
        B_local = T.alloc_fragment(B_shared_shape, storage_dtype)
        B_dequantize_local = T.alloc_fragment(B_dequantize_shared_shape, out_dtype)
        T.copy(B_shared, B_local)
        for i, j in T.Parallel(block_N, block_K):
            B_dequantize_local[i, j] = _u8_to_f4_to_bf16(
                num_bits, B_shared[i, j // num_elems_per_byte], j % num_elems_per_byte,
                0,  # no scale (upstream: "No scale for test")
                dtype=out_dtype)
        T.copy(B_dequantize_local, B_dequantize_shared)

    @T.prim_func
    def main(
            A: T.Tensor(A_shape, in_dtype),
            B: T.Tensor(B_shape, storage_dtype),
            C: T.Tensor((M, N), out_dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared(A_shared_shape, in_dtype)
            B_shared = T.alloc_shared(B_shared_shape, storage_dtype)
            B_dequantize_shared = T.alloc_shared(B_dequantize_shared_shape, in_dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            C_shared = T.alloc_shared((block_M, block_N), out_dtype)

            T.annotate_layout({
                C_shared: tilelang.layout.make_swizzled_layout(C_shared),
            })

            T.clear(C_local)
            for k in T.Pipelined(K // block_K, num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[bx * block_N, k * block_K // num_elems_per_byte], B_shared)
                simple_dequant_bf16_fp4(B_shared, B_dequantize_shared)
                T.gemm(A_shared, B_dequantize_shared, C_local, transpose_B=True)
            T.copy(C_local, C_shared)
            T.copy(C_shared, C[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N])

    return main


@tilelang.jit
def dequant_gemm_int4_group_scale(M, N, K, group_size=128, block_M=128, block_N=128, block_K=64,
                                  num_stages=2, threads=256, dtype="float16", accum_dtype="float32"):
    """W4A16 GEMM with per-group weight scales (session 37; the pattern of upstream's
    examples/dequantize_gemm fine-grained-scale kernels, written for tileroof's robustness sweep):
    B stored as unsigned int4 pairs (N, K / 2) with a float16 scale per row and group of
    group_size K elements (N, K / group_size); each K tile's B is dequantised element-wise in a
    T.Parallel, (q - 8) * Scale[n, k // group_size], into shared memory, then C += A B^T.  The
    scale table (1 MiB at N = 8192, K = 8192) is re-read by every block every K tile through a
    non-affine index: an untiled read that stays in L2."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), Bq: T.Tensor((N, K // 2), "uint8"),
             Scale: T.Tensor((N, K // group_size), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            Bq_s = T.alloc_shared((block_N, block_K // 2), "uint8")
            B_s = T.alloc_shared((block_N, block_K), dtype)
            C_l = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(Bq[bx * block_N, k * block_K // 2], Bq_s)
                for i, j in T.Parallel(block_N, block_K):
                    q = (Bq_s[i, j // 2] >> ((j % 2).astype("uint8") * T.uint8(4))) & T.uint8(15)
                    B_s[i, j] = (q.astype(dtype) - T.float16(8)) * \
                        Scale[bx * block_N + i, (k * block_K + j) // group_size]
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return main


# ============================================================================= inputs / refs
def fp4_to_float(qB):
    """Decode packed FP4 (N, K // 2) uint8 to float32 (N, K) bit for bit as the kernels do:
    element (n, k) = nibble k % 2 (low first) of byte (n, k // 2); with s = bit 3, e = bits 2..1,
    m = bit 0, the fp16 kernel's half is ((e + 14) | s << 5) << 10 | m << 9 (and the bf16 kernel's
    bfloat16 ((s << 8) | (e + 126)) << 7 | m << 6, the same value); built here as the fp16 bit
    pattern and viewed as float16 (every value, +-{0.5, 0.75, 1, 1.5, 2, 3, 4, 6}, is exact in
    both)."""
    import torch

    b = qB.to(torch.int32)
    nib = torch.stack((b & 0xF, (b >> 4) & 0xF), dim=-1).reshape(qB.shape[0], qB.shape[1] * 2)
    s = nib >> 3
    e = (nib & 6) >> 1
    m = nib & 1
    bits = (((e + 14) | (s << 5)) << 10) | (m << 9)          # < 2^16
    half = (bits - ((bits >> 15) << 16)).to(torch.int16).view(torch.float16)
    return half.to(torch.float32)


def _inputs(p, device):
    """A: randn in the activation dtype; B: uniform random bytes (every FP4 code in both nibbles);
    the output NaN-filled."""
    import torch

    g = generator(device, 0)
    M, N, K = p["M"], p["N"], p["K"]
    dt = p["in_dtype"]
    a = randn((M, K), dt, device, g)
    qb = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, device=device, generator=g)
    out_shape = (N, M) if p["transposed"] else (M, N)
    return [a, qb, nan_out(out_shape, p["out_dtype"], device)]


def _ref(args, transposed):
    import torch

    a, qb = args[0], args[1]
    c = torch.matmul(a.float(), fp4_to_float(qb).T)
    return {2: c.T.contiguous() if transposed else c}


def _fp16_inputs(p, device):
    return _inputs({**p, "transposed": True}, device)


def _bf16_inputs(p, device):
    return _inputs({**p, "transposed": False}, device)


def _fp16_ref(args):
    return _ref(args, True)


def _bf16_ref(args):
    return _ref(args, False)


def _scale_inputs(p, device):
    """A randn; B uniform random bytes (every int4 code in both nibbles); scales around 0.05."""
    import torch

    g = generator(device, 0)
    M, N, K, gs = p["M"], p["N"], p["K"], p.get("group_size", 128)
    a = randn((M, K), "float16", device, g)
    qb = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8, device=device, generator=g)
    sc = randn((N, K // gs), "float16", device, g, scale=0.01, offset=0.05)
    return [a, qb, sc, nan_out((M, N), "float16", device)]


def _scale_ref(args):
    import torch

    a, qb, sc = args[0], args[1], args[2]
    lo, hi = (qb & 15).to(torch.float32), (qb >> 4).to(torch.float32)
    q = torch.stack((lo, hi), dim=-1).reshape(qb.shape[0], -1) - 8.0      # element j: nibble j % 2
    gs = q.shape[1] // sc.shape[1]
    b = (q.half() * sc.repeat_interleave(gs, dim=1)).float()             # (q - 8) * scale in fp16
    return {3: torch.matmul(a.float(), b.T)}


def _scale_expected(p) -> Expected:
    M, N, K = p["M"], p["N"], p["K"]
    bM, bN, bK, gs = p["block_M"], p["block_N"], p["block_K"], p.get("group_size", 128)
    assert M % bM == 0 and N % bN == 0 and K % bK == 0 and gs % bK == 0
    blocks, iters = (N // bN) * (M // bM), K // bK
    return Expected(
        tensor_flops=blocks * iters * 2 * bM * bN * bK,
        cuda_flops=None,       # the dequant's fp16 subtract and multiply: counted by arith rules
        sfu_ops=0,
        # per block and K tile: the A tile, the packed B tile, and one fp16 scale load per
        # dequantised element (bN x bK element loads through the non-affine group index)
        global_read_bytes=blocks * iters * (bM * bK * 2 + bN * bK // 2 + bN * bK * 2),
        global_write_bytes=M * N * 2,
        global_atomic_bytes=0,
        unique_bytes=M * K * 2 + N * K // 2 + N * (K // gs) * 2 + M * N * 2,
    )


# ============================================================================= expected
def _expected(p) -> Expected:
    M, N, K = p["M"], p["N"], p["K"]
    bM, bN, bK = p["block_M"], p["block_N"], p["block_K"]
    assert M % bM == 0 and N % bN == 0 and K % bK == 0, "the derivation assumes whole tiles"
    a_b, o_b = nbytes(p["in_dtype"]), nbytes(p["out_dtype"])
    epb = 8 // p["num_bits"]                 # FP4 elements per uint8 byte
    blocks, iters = (N // bN) * (M // bM), K // bK
    return Expected(
        # one (bM x bN x bK) gemm per block and K tile (= 2 M N K); the dequant is integer bit
        # math (shifts, masks, ors, an integer add / min, casts, a reinterpret): free
        tensor_flops=blocks * iters * 2 * bM * bN * bK,
        cuda_flops=0,
        sfu_ops=0,
        # per block and K tile: the A tile (bM x bK) and the packed B tile (bN x bK / 2 bytes)
        global_read_bytes=blocks * iters * (bM * bK * a_b + bN * bK // epb),
        # every output element once (Ct (N, M) or C (M, N))
        global_write_bytes=M * N * o_b,
        global_atomic_bytes=0,
        # A, packed B, the output
        unique_bytes=M * K * a_b + N * K // epb + M * N * o_b,
    )


# ============================================================================= cases
def _fp16_params(M, N, K):
    return dict(M=M, N=N, K=K, block_M=128, block_N=128, block_K=128, num_stages=2, threads=256,
                num_bits=4, in_dtype="float16", out_dtype="float16", accum_dtype="float32")


def _bf16_params(M, N, K):
    return dict(M=M, N=N, K=K, block_M=256, block_N=128, block_K=128, num_stages=2, threads=256,
                num_bits=4, in_dtype="bfloat16", out_dtype="bfloat16", accum_dtype="float32")


def _fp16_case(name, p, note) -> Case:
    return Case(name, dequant_gemm_fp4_fp16, p, _fp16_inputs, _fp16_ref, _expected(p), rtol=1e-2,
                tags=("gemm", "dequant", "fp4", "weight-only", "upstream", "float16"),
                note="examples/dequantize_gemm/example_dequant_gemm_fp4_hopper.py (matmul, split=1), "
                     "upstream main()'s tiles 128 x 128 x 128, 2 stages, 256 threads; B dequantised "
                     "in registers, output transposed Ct (N, M); " + note)


def _bf16_case(name, p, note) -> Case:
    return Case(name, dequant_gemm_fp4_bf16, p, _bf16_inputs, _bf16_ref, _expected(p), rtol=1e-2,
                tags=("gemm", "dequant", "fp4", "weight-only", "upstream", "bfloat16"),
                note="examples/dequantize_gemm/example_dequant_gemm_bf16_fp4_hopper.py "
                     "(fast_dequant=False), upstream main()'s tiles 256 x 128 x 128, 2 stages, 256 "
                     "threads, TMA lowering and warp specialisation off; B dequantised into shared "
                     "memory; " + note)


def _scale_case(name, p, note) -> Case:
    return Case(name, dequant_gemm_int4_group_scale, p, _scale_inputs, _scale_ref, _scale_expected(p), rtol=1e-2,
                tags=("gemm", "dequant", "int4", "weight-only", "group-scale", "float16"), note=note)


def cases() -> list[Case]:
    # sizes: M = N = K = 4096 in fp16 ran 566 us on the H200 (over the corpus's 500 us), so the
    # fp16 cases halve M or K
    return [
        _fp16_case("up_dequant_fp4_fp16_m2048_n4096_k4096", _fp16_params(2048, 4096, 4096),
                   "M = 2048, N = K = 4096: 32 x 16 blocks of 32 K tiles"),
        _fp16_case("up_dequant_fp4_fp16_m4096_n4096_k2048", _fp16_params(4096, 4096, 2048),
                   "M = N = 4096, K = 2048: 32 x 32 blocks of 16 K tiles"),
        _bf16_case("up_dequant_fp4_bf16_m4096_n4096_k4096", _bf16_params(4096, 4096, 4096),
                   "M = N = K = 4096: 32 x 16 blocks of 32 K tiles"),
        _bf16_case("up_dequant_fp4_bf16_m1024_n8192_k8192", _bf16_params(1024, 8192, 8192),
                   "a 1024-token batch through an 8192 x 8192 weight: 64 x 4 blocks of 64 K tiles"),
        # session 11: tiles other than upstream main()'s, written after the integer-chain rule
        # (model: integer bit work in the iteration's chain) and predicted before they ran
        _fp16_case("up_dequant_fp4_fp16_m4096_n4096_k2048_bm64_bk64",
                   {**_fp16_params(4096, 4096, 2048), "block_M": 64, "block_K": 64, "num_stages": 3},
                   "64 x 128 x 64 tiles, 3 stages (not upstream's)"),
        _bf16_case("up_dequant_fp4_bf16_m4096_n4096_k4096_bm128",
                   {**_bf16_params(4096, 4096, 4096), "block_M": 128},
                   "128 x 128 x 128 tiles (not upstream's)"),
        # session 16: written after the register-operand copies (counts.fragment_replicas) and the
        # measured integer pipe split (integer_alu_share), predicted before they ran
        _fp16_case("up_dequant_fp4_fp16_m4096_n4096_k4096_t128",
                   {**_fp16_params(4096, 4096, 4096), "threads": 128},
                   "one consumer warpgroup (128 threads): the decoded tile is held once, not twice"),
        _fp16_case("up_dequant_fp4_fp16_m8192_n4096_k4096_bm256",
                   {**_fp16_params(8192, 4096, 4096), "block_M": 256},
                   "128 x 256 x 128 tiles: two warpgroups along the wider N, each holding all of B"),
        _fp16_case("up_dequant_fp4_fp16_m1024_n8192_k8192", _fp16_params(1024, 8192, 8192),
                   "a 1024-token batch through an 8192 x 8192 weight"),
        _bf16_case("up_dequant_fp4_bf16_m8192_n8192_k2048", _bf16_params(8192, 8192, 2048),
                   "M = N = 8192, K = 2048: 64 x 32 blocks of 16 K tiles"),
        _bf16_case("up_dequant_fp4_bf16_m2048_n4096_k4096_bm128_s3",
                   {**_bf16_params(2048, 4096, 4096), "block_M": 128, "num_stages": 3},
                   "128 x 128 x 128 tiles, 3 stages"),
        # session 16, after run 106: written after the spill need's copy liveness
        # (counts.held_fragment_bytes), predicted before it ran
        _fp16_case("up_dequant_fp4_fp16_m2048_n8192_k4096_t128",
                   {**_fp16_params(2048, 8192, 4096), "threads": 128},
                   "one consumer warpgroup at another shape: 208 of 240 registers held, no spill"),
        # session 37 (robustness sweep): a group-scale table every block re-reads each K tile
        # through a non-affine index (memory.walked_retouches' launch-traffic bound), predicted first
        _scale_case("probe_dequant_int4_gscale_fp16_m2048_n8192_k8192",
                    dict(M=2048, N=8192, K=8192, group_size=128, block_M=128, block_N=128, block_K=64,
                         num_stages=2, threads=256, dtype="float16", accum_dtype="float32"),
                    "int4 weights with a float16 scale per 128 K elements, dequantised in a T.Parallel "
                    "into shared memory; 64 x 16 blocks of 128 K tiles"),
    ]

"""One builder per TileLang tile op: the call's arguments in, one neutral OpRecord out.

Argument positions follow the builders in tilelang/language/*_op.py (tilelang 0.1.15):
  copy/async_copy/tma_copy/transpose(src, dst)
  gemm(A, B, C, trans_A, trans_B, M, N, K, policy, clear_accum, mbar, C_row, C_col)  (gemm_op.py)
  fill(region, value); reduce(src, dst, kind, dim, clear); cumsum/cummax(src, dst, dim, reverse)
  atomicadd/atomicmax/atomicmin(value, dst); im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)
"""
from __future__ import annotations

import re

import numpy as np
from tvm import tirx

from ..trace import FRAGMENT, GLOBAL, LOCAL, SHARED, Operand, dtype_bytes
from . import affine
from .arith import ArithCount
from .evaluate import DataDependent


def _prod(xs) -> int:
    n = 1
    for x in xs:
        n *= int(x)
    return n


def _int(x) -> int:
    return int(x.value) if hasattr(x, "value") else int(x)


def _str(x) -> str:
    return str(x.value) if hasattr(x, "value") else str(x)


def copy(w, call, m, kind="copy"):
    args = call.args[:]                 # the arguments as a list, read from TVM in one pass
    src, s_starts, s_ext, _ = w.region(args[0])
    dst, d_starts, d_ext, _ = w.region(args[1])
    s_n, s_key, s_box = w.tile_elements(src, s_starts, s_ext, m)
    d_n, d_key, d_box = w.tile_elements(dst, d_starts, d_ext, m)
    # the global side decides what moves: edge tiles read fewer elements (the rest of the shared
    # tile is zero-filled, still written) and write only the in-bounds part
    if src.scope == GLOBAL and dst.scope != GLOBAL:
        d_n = d_n if d_n else s_n
    elif dst.scope == GLOBAL and src.scope != GLOBAL:
        s_n = d_n
    # (only loads from global memory are multi-buffered: a fragment -> shared copy in the loop
    # writes one buffer, as Nsight's shared-memory size per block shows for linear attention)
    if src.scope == GLOBAL:
        w.mark_pipelined(dst)
    operands = (
        Operand(src.name, src.scope, src.dtype, "read", tuple(s_ext), s_n, s_key, block_range=s_box),
        Operand(dst.name, dst.scope, dst.dtype, "write", tuple(d_ext), d_n, d_key, block_range=d_box),
    )
    attrs = {"src_scope": src.scope, "dst_scope": dst.scope, "tile_elements": _prod(s_ext)}
    w.record(kind, f"{kind} {src.name} -> {dst.name}", m, operands, attrs)


def gemm_sp(w, call, m):
    """T.gemm_sp(A_sparse, E, B, C, trans_A, trans_B, trans_E, M, N, K, policy, clear): a 2:4
    structured-sparse gemm.  A holds the kept half of an M x K operand (M x K/2), E its metadata.
    The sparse tensor cores execute half the dense gemm's multiply-adds: M*N*K FLOPs (its
    dense-equivalent 2*M*N*K at twice the dense rate)."""
    args = call.args[:]
    a, _, a_ext, _ = w.region(args[0])
    e, _, e_ext, _ = w.region(args[1])
    b, _, b_ext, _ = w.region(args[2])
    c, _, c_ext, _ = w.region(args[3])
    trans_a, trans_b = bool(_int(args[4])), bool(_int(args[5]))
    M, N, K = _int(args[7]), _int(args[8]), _int(args[9])
    policy = _int(args[10]) if len(args) > 10 else 0
    n = int(w._executions(m))
    operands = (
        Operand(a.name, a.scope, a.dtype, "read", tuple(a_ext), n * _prod(a_ext)),
        Operand(b.name, b.scope, b.dtype, "read", tuple(b_ext), n * N * K),
        Operand(c.name, c.scope, c.dtype, "readwrite", tuple(c_ext), n * M * N),
        Operand(e.name, e.scope, e.dtype, "read", tuple(e_ext), n * _prod(e_ext)),
    )
    _record_gemm(w, m, "gemm_sp", f"gemm_sp {a.name}×{b.name} -> {c.name} ({M}×{N}×{K}, 2:4 sparse)", operands,
                 (a, b, c), (M, N, K), trans_a, trans_b, policy, {("tensor", b.dtype, "mma_sp"): M * N * K})


def gemm(w, call, m):
    args = call.args[:]                 # the arguments as a list, read from TVM in one pass
    a, _, a_ext, _ = w.region(args[0])
    b, _, b_ext, _ = w.region(args[1])
    c, _, c_ext, _ = w.region(args[2])
    trans_a, trans_b = bool(_int(args[3])), bool(_int(args[4]))
    M, N, K = _int(args[5]), _int(args[6]), _int(args[7])
    policy = _int(args[8]) if len(args) > 8 else 0
    n = int(w._executions(m))
    operands = (
        Operand(a.name, a.scope, a.dtype, "read", tuple(a_ext), n * M * K),
        Operand(b.name, b.scope, b.dtype, "read", tuple(b_ext), n * N * K),
        Operand(c.name, c.scope, c.dtype, "readwrite", tuple(c_ext), n * M * N),
    )
    _record_gemm(w, m, "gemm", f"gemm {a.name}×{b.name} -> {c.name} ({M}×{N}×{K})", operands,
                 (a, b, c), (M, N, K), trans_a, trans_b, policy, {("tensor", a.dtype, "mma"): 2 * M * N * K})


def _record_gemm(w, m, kind, label, operands, abc, mnk, trans_a, trans_b, policy, ops_per_exec):
    """The record of a dense or sparse tile gemm: the attrs the counts and the time model read
    (shape, transposes, warp policy, operand dtypes and scopes, the block's threads)."""
    (a, b, c), (M, N, K) = abc, mnk
    attrs = {"m": M, "n": N, "k": K, "trans_a": trans_a, "trans_b": trans_b, "policy": policy,
             "a_dtype": a.dtype, "b_dtype": b.dtype, "c_dtype": c.dtype, "a_scope": a.scope,
             "b_scope": b.scope, "sparse": kind == "gemm_sp", "threads": int(np.prod(w.threads))}
    w.record(kind, label, m, operands, attrs, ops_per_exec)


def fill(w, call, m):
    dst, starts, ext, _ = w.region(call.args[0])
    n, key, box = w.tile_elements(dst, starts, ext, m)
    w.record("fill", f"fill {dst.name}", m,
             (Operand(dst.name, dst.scope, dst.dtype, "write", tuple(ext), n, key, block_range=box),))


def reduce(w, call, m):
    src, _, s_ext, _ = w.region(call.args[0])
    dst, _, d_ext, _ = w.region(call.args[1])
    kind = _str(call.args[2])
    dim = _int(call.args[3])
    execs = int(w._executions(m))
    cost = 2 if kind == "abssum" else 1
    elems = _prod(s_ext)
    w.record("reduce", f"reduce_{kind} {src.name} -> {dst.name}", m,
             (Operand(src.name, src.scope, src.dtype, "read", tuple(s_ext), execs * elems),
              Operand(dst.name, dst.scope, dst.dtype, "write", tuple(d_ext), execs * _prod(d_ext))),
             {"reduce": kind, "dim": dim},
             {("cuda", dst.dtype, kind): cost * elems})


def _scan_lane_stride(w, buf, dim: int) -> int | None:
    """Bytes between neighbouring lanes' elements in TileLang 0.1.15's 2-D scan of a shared buffer
    (tl_templates/cuda/scan.h, InclusiveScan2D): a warp scans one line, its 32 lanes on 32
    consecutive elements of it -- along a row (dim 1: adjacent) or down a column (dim 0: one
    row apart, a bank conflict of gcd(row words, 32) ways for an unswizzled buffer)."""
    if buf.scope != SHARED or len(buf.shape) != 2 or dim not in (0, 1):
        return None
    if any(str(getattr(data, "name", "")) == buf.storage for data in w.layouts):
        return None                       # an annotated (swizzled) layout: lanes not worked out
    size = dtype_bytes(buf.dtype)
    stride = int(buf.shape[1]) * size if dim == 0 else size
    return int(stride) if float(stride).is_integer() else None


def scan(w, call, m, kind):
    src, _, s_ext, _ = w.region(call.args[0])
    dst, _, d_ext, _ = w.region(call.args[1])
    execs = int(w._executions(m))
    elems = _prod(s_ext)
    dim = _int(call.args[2])
    w.record(kind, f"{kind} {src.name} -> {dst.name}", m,
             (Operand(src.name, src.scope, src.dtype, "read", tuple(s_ext), execs * elems,
                      access_stride=_scan_lane_stride(w, src, dim)),
              Operand(dst.name, dst.scope, dst.dtype, "write", tuple(d_ext), execs * _prod(d_ext),
                      access_stride=_scan_lane_stride(w, dst, dim))),
             {"dim": dim}, {("cuda", dst.dtype, "add" if kind == "cumsum" else "max"): elems})


def atomic(w, call, m, kind):
    val = call.args[0]
    dst, starts, ext, _ = w.region(call.args[1])
    n, key, box = w.tile_elements(dst, starts, ext, m)
    operands = [Operand(dst.name, dst.scope, dst.dtype, "atomic", tuple(ext), n, key, block_range=box)]
    if isinstance(val, tirx.Call) or isinstance(val, (tirx.BufferRegion, tirx.BufferLoad)):
        try:
            src, _, s_ext, _ = w.region(val)
            if src.scope != GLOBAL:
                operands.insert(0, Operand(src.name, src.scope, src.dtype, "read", tuple(s_ext), n))
        except Exception:  # noqa: BLE001 — a scalar value operand reads no buffer
            pass
    w.record(kind, f"{kind} -> {dst.name}", m, tuple(operands), {"op": kind})


def im2col(w, call, m):
    img, _, i_ext, _ = w.region(call.args[0])
    col, _, c_ext, _ = w.region(call.args[1])
    kernel, stride, dilation, pad = (_int(w.ev(a)) for a in call.args[4:8])
    execs = int(w._executions(m))
    tile = _prod(c_ext)
    # NHWC image: the share of (output pixel, kernel tap) pairs that fall inside the image
    _, H, W, _ = img.shape
    oh = (H + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    ow = (W + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
    vh = sum(sum(1 for o in range(oh) if 0 <= o * stride - pad + t * dilation < H) for t in range(kernel))
    vw = sum(sum(1 for o in range(ow) if 0 <= o * stride - pad + t * dilation < W) for t in range(kernel))
    inside = vh * vw / (kernel * kernel * oh * ow)
    reads = int(round(execs * tile * inside))
    w._tile_footprint(img, [0] * len(img.shape), list(img.shape))
    w.mark_pipelined(col)
    # which output-pixel tile a block works on names the part of the image it reads (L2 model)
    try:
        lin = affine.linearize(w.ev, call.args[2])
        key = (lin.base,) if lin is not None else None
    except DataDependent:
        key = None
    w.record("im2col", f"im2col {img.name} -> {col.name}", m,
             (Operand(img.name, img.scope, img.dtype, "read", tuple(c_ext), reads, key,
                      reuse_in_block=max(kernel * kernel / (stride * stride), 1.0)),
              Operand(col.name, col.scope, col.dtype, "write", tuple(c_ext), execs * tile)),
             {"kernel": kernel, "stride": stride, "dilation": dilation, "pad": pad, "inside": inside})


def finalize_reducer(w, call, m):
    buf, _, ext, _ = w.region(call.args[0])
    execs = int(w._executions(m))
    w.record("finalize_reducer", f"finalize_reducer {buf.name}", m,
             (Operand(buf.name, buf.scope, buf.dtype, "readwrite", tuple(ext), execs * _prod(ext)),),
             {}, {("cuda", buf.dtype, "allreduce"): _prod(ext)})


def element_atomic(w, call, m):
    """tl.atomic_*_elem_op(access_ptr(dst[idx]) | dst[idx], value): one element per execution;
    loads in the index or the value (a histogram's bin lookup) are element reads."""
    name = call.op.name
    target = call.args[0]
    if isinstance(target, tirx.Call):
        target = next((a for a in target.args if isinstance(a, tirx.BufferLoad)), None)
    if not isinstance(target, tirx.BufferLoad):
        w._unmodeled(name, m, "atomic target not recognised")
        return
    value = call.args[1] if len(call.args) > 1 else None
    if isinstance(value, tirx.Call) and getattr(value.op, "name", "") == "tl.access_ptr":
        value = next((a for a in value.args if isinstance(a, tirx.BufferLoad)), value)   # vector source
    arith = ArithCount()
    for a in [value] + list(call.args[2:]):
        if isinstance(a, tirx.PrimExpr):
            arith.visit(a)
    for i in target.indices:
        arith._indices(i)
    for unknown in arith.unknown:
        w._unmodeled(unknown, m, "operation in an atomic's value not modelled")
    execs = int(w._executions(m))
    lanes = 4 if "x4" in name else 2 if "x2" in name else 1
    operands = []
    for load in arith.loads:
        info = w._register(load.buffer)
        n = lanes if load.same_as(value) else 1       # atomic_addx2(dst, src): src holds 2 lanes
        operands.append(Operand(info.name, info.scope, info.dtype, "read", (n,), execs * n))
        if info.scope == GLOBAL:
            w._element_footprint(info, load.indices, m)
    info = w._register(target.buffer)
    operands.append(Operand(info.name, info.scope, info.dtype, "atomic", (lanes,), execs * lanes))
    if info.scope == GLOBAL:
        w._element_footprint(info, target.indices, m)
    w.record("atomic_elem", f"{name.split('.')[-1]} -> {info.name}", m, tuple(operands), {"op": name},
             dict(arith.ops))


def thread_allreduce(w, call, m):
    """tirx.tvm_thread_allreduce(n, value, cond, result, threads...): every participating thread
    adds (or maxes) its value into the group's result: one combine per thread."""
    value, target = call.args[1], call.args[3]
    arith = ArithCount()
    arith.visit(value)
    execs = int(w._executions(m))
    operands = []
    for load in arith.loads:
        info = w._register(load.buffer)
        operands.append(Operand(info.name, info.scope, info.dtype, "read", (1,), execs))
    if isinstance(target, tirx.BufferLoad):
        info = w._register(target.buffer)
        operands.append(Operand(info.name, info.scope, info.dtype, "write", (1,), execs))
    ops = dict(arith.ops)
    key = ("cuda", str(value.dtype), "allreduce")
    ops[key] = ops.get(key, 0) + 1
    w.record("allreduce", f"thread allreduce -> {getattr(getattr(target, 'buffer', None), 'name', '?')}", m,
             tuple(operands), {}, ops)


_MMA_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)")
# PTX operand type abbreviations -> TVM dtype names (counts.normalize_dtype maps those)
_PTX_DTYPES = {
    "fp16": "float16", "f16": "float16", "bf16": "bfloat16", "tf32": "float32", "fp32": "float32",
    "f32": "float32", "fp64": "float64", "f64": "float64", "e4m3": "float8_e4m3", "e5m2": "float8_e5m2",
    "float8_e4m3": "float8_e4m3", "float8_e5m2": "float8_e5m2", "s8": "int8", "u8": "uint8", "int8": "int8",
    "uint8": "uint8", "s4": "int4", "u4": "int4", "int4": "int4", "uint4": "int4", "e2m1": "float4_e2m1",
    "e2m3": "float6_e2m3", "e3m2": "float6_e3m2",
}


def warp_mma(w, call, m, threads_per_instruction):
    """A tensor-core instruction issued from SIMT code (TensorCoreIntrinEmitter, hand-written
    PTX): ptx_mma runs per warp (32 threads), wgmma per warpgroup (128).  Each thread's execution
    carries its share, 2*m*n*k / threads, of the instruction's FLOPs."""
    name = call.op.name
    strings = [str(a.value) for a in call.args if isinstance(a, tirx.StringImm)]
    shape = next((_MMA_SHAPE.fullmatch(x) for x in strings if _MMA_SHAPE.fullmatch(x)), None)
    dtype = next((_PTX_DTYPES[x] for x in strings if x in _PTX_DTYPES), None)
    if shape is None or dtype is None:
        w._unmodeled(name, m, "tensor-core instruction whose shape or type could not be read")
        return
    mm, nn, kk = (int(g) for g in shape.groups())
    flops = 2 * mm * nn * kk
    share = flops // threads_per_instruction if flops % threads_per_instruction == 0 \
        else flops / threads_per_instruction
    w.record("mma", f"{name.split('.')[-1]} {shape.group(0)} {dtype}", m, (),
             {"m": mm, "n": nn, "k": kk, "threads_per_instruction": threads_per_instruction, "dtype": dtype},
             {("tensor", dtype, "mma"): share})


def ldmatrix(w, call, m):
    """ptx_ldmatrix(trans, num, src_ptr, dst_ptr): a warp loads `num` 8x8 matrices of 16-bit
    values from shared memory, 4 bytes per matrix and thread."""
    src = call.args[2]
    load = next((a for a in getattr(src, "args", []) if isinstance(a, tirx.BufferLoad)), None)
    if load is None:
        w._unmodeled(call.op.name, m, "ldmatrix source not recognised")
        return
    num = _int(call.args[1])
    info = w._register(load.buffer)
    execs = int(w._executions(m))
    elems = execs * num * 4 / dtype_bytes(info.dtype)
    w.record("ldmatrix", f"ldmatrix x{num} {info.name}", m,
             (Operand(info.name, info.scope, info.dtype, "read", (num * 4,), int(round(elems))),), {"num": num})


TILE_OPS = {
    "tl.tileop.copy": copy,
    "tl.tileop.async_copy": lambda w, c, m: copy(w, c, m, "copy"),
    "tl.tileop.tma_copy": lambda w, c, m: copy(w, c, m, "copy"),
    "tl.tileop.transpose": lambda w, c, m: copy(w, c, m, "transpose"),
    "tl.tileop.gemm": gemm,
    "tl.tileop.wgmma_gemm": gemm,
    "tl.tileop.tcgen05_gemm": gemm,
    "tl.tileop.gemm_sp": lambda w, c, m: gemm_sp(w, c, m),
    "tl.tileop.wgmma_gemm_sp": lambda w, c, m: gemm_sp(w, c, m),
    "tl.tileop.tcgen05_gemm_sp": lambda w, c, m: gemm_sp(w, c, m),
    "tl.tileop.gemm_blockscaled": gemm,
    "tl.tileop.tcgen05_gemm_blockscaled": gemm,
    "tl.tileop.fill": fill,
    "tl.tileop.reduce": reduce,
    "tl.tileop.cumsum": lambda w, c, m: scan(w, c, m, "cumsum"),
    "tl.tileop.cummax": lambda w, c, m: scan(w, c, m, "cummax"),
    "tl.tileop.atomicadd": lambda w, c, m: atomic(w, c, m, "atomic_add"),
    "tl.tileop.atomicmax": lambda w, c, m: atomic(w, c, m, "atomic_max"),
    "tl.tileop.atomicmin": lambda w, c, m: atomic(w, c, m, "atomic_min"),
    "tl.tileop.im2col": im2col,
    "tl.tileop.c2d_im2col": im2col,
    "tl.tileop.finalize_reducer": finalize_reducer,
    "tl.tileop.finalize_reducer_v2": finalize_reducer,
    "tirx.tvm_thread_allreduce": thread_allreduce,
    "tirx.ptx_mma": lambda w, c, m: warp_mma(w, c, m, 32),
    "tirx.ptx_mma_sp": lambda w, c, m: warp_mma(w, c, m, 32),
    "tl.ptx_mma_sm70": lambda w, c, m: warp_mma(w, c, m, 32),
    "tl.ptx_wgmma_ss": lambda w, c, m: warp_mma(w, c, m, 128),
    "tl.ptx_wgmma_rs": lambda w, c, m: warp_mma(w, c, m, 128),
    "tl.ptx_wgmma_sp_ss": lambda w, c, m: warp_mma(w, c, m, 128),
    "tl.ptx_wgmma_sp_rs": lambda w, c, m: warp_mma(w, c, m, 128),
    "tl.ptx_ldmatrix": ldmatrix,
    "tirx.ptx_ldmatrix": ldmatrix,
}
for _op in ("add", "max", "min", "addx2", "addx4"):
    for _ret in ("", "_ret"):
        TILE_OPS[f"tl.atomic_{_op}{_ret}_elem_op"] = element_atomic

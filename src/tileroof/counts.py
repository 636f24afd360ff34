"""Records in, numbers out: FLOPs by (unit, dtype), bytes by (level, direction), per op and in total.

One formula per record kind lives here (torch.utils.flop_counter's pattern): each reads an
OpRecord and returns its OpCounts.  Nothing here knows TVM or the hardware.
"""
from __future__ import annotations

import contextlib
import math
import os
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache

from .trace import FRAGMENT, GLOBAL, LOCAL, SHARED, KernelTrace, OpRecord, dtype_bytes

TENSOR, CUDA, SFU, CVT, ALU = "tensor", "cuda", "sfu", "cvt", "alu"
# the SM's execution pipes the instruction estimate (instructions()) sorts thread instructions into:
# FP32 add/mul/fma; integer, compare, min/max, select and logic; special functions (MUFU);
# memory (LDG/STG/LDS/STS); warp shuffles; everything else (branches, barriers)
P_FMA, P_ALU, P_XU, P_MEM, P_SHFL, P_OTHER = "fma", "alu", "xu", "mem", "shfl", "other"


def normalize_dtype(dtype: str) -> str:
    """Map TVM dtypes to the peak table's keys: fp16, bf16, fp8, tf32/fp32, fp64, int8, int32..."""
    d = str(dtype)
    if d.startswith("float8") or d.startswith("float6") or d.startswith("float4"):
        return "fp8" if d.startswith("float8") else "fp4"
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
            "int8": "int8", "uint8": "int8", "int32": "int32", "int4": "int4", "int64": "int64"}.get(d, d)


# ---- which tensor-core instruction a T.gemm lowers to ------------------------------------------
# TileLang (Gemm::GetGemmInst and CheckWGMMA in its src/op/gemm.cc, as read in upstream main, and
# checked against tilelang 0.1.15's own lowering for fp16, bf16, fp8, int8 and float32 gemms) lowers a T.gemm on a Hopper target to
# wgmma only where the block's warps make whole warpgroups, the gemm's M is at least 64,
# B lies in shared memory, tl.disable_wgmma is not set and the (A/B, C) dtypes are one of the
# combinations below, each with its operand-major and K rule; every other gemm is mma.sync.  A
# float32 buffer is not tf32: float32 gemms always take mma.sync (m16n8k8.tf32).  Checked by
# lowering to CUDA on a CPU (benchmarks/lower_cuda.py: corpus.dtypes' sweeps and mma probes;
# tests/test_gemm_instruction.py) and by Nsight Compute's hmma / gmma instruction counts (run 160).
# (A/B dtype, C dtype) -> (both operands K-major: A not transposed and B transposed, K multiple)
_WGMMA_DTYPES = {
    ("float16", "float16"): (False, 16), ("float16", "float32"): (False, 16),
    ("bfloat16", "float32"): (False, 16), ("tfloat32", "float32"): (True, 8),
    ("float8", "float16"): (True, 32), ("float8", "float32"): (True, 32),
    ("int8", "int32"): (True, 32),
}
MMA_SUFFIX = ".mma"      # a tensor FLOP dtype key's suffix for a gemm that runs mma.sync on a wgmma GPU


def _wgmma_dtype(d: str) -> str:
    d = str(d)
    return "float8" if d.startswith("float8") else "int8" if d in ("int8", "uint8") else d


def gemm_instruction(rec: OpRecord, native: str, pass_configs: tuple = ()) -> str:
    """The tensor-core instruction a T.gemm record lowers to on a GPU whose native one is `native`
    ("wgmma" on Hopper, "mma" before it): `native`, or "mma" where TileLang's rule above sends the
    gemm to mma.sync ("" for a record that is no gemm; a sparse gemm keeps `native`)."""
    if rec.kind not in GEMM_KINDS:
        return ""
    if native != "wgmma" or rec.kind != "gemm":
        return native
    attrs = rec.attrs
    if dict(pass_configs).get("tl.disable_wgmma"):
        return "mma"
    warps = int(attrs.get("threads", 128)) // 32
    a, b = _wgmma_dtype(attrs.get("a_dtype")), _wgmma_dtype(attrs.get("b_dtype"))
    rule = _WGMMA_DTYPES.get((a, str(attrs.get("c_dtype")))) if a == b else None
    if rule is None or attrs.get("m", 0) < 64 or warps % 4 or attrs.get("b_scope") != SHARED:
        return "mma"
    k_major, k_mult = rule
    if k_major and (attrs.get("trans_a") or not attrs.get("trans_b")):
        return "mma"
    return "wgmma" if attrs.get("k", 0) % k_mult == 0 else "mma"


@dataclass
class OpCounts:
    label: str
    kind: str
    executions: int
    flops: Counter = field(default_factory=Counter)      # (unit, dtype) -> FLOPs (or SFU results)
    conversions: int = 0
    bytes: Counter = field(default_factory=Counter)      # (level, direction) -> bytes
    excess: Counter = field(default_factory=Counter)     # ("shared","conflict") / ("global","sector_waste")
    # L2 write requests of an accumulator fragment stored straight to global memory (one per row
    # segment of ACCUM_ROW_SEGMENT elements): the SM issues them one after another
    store_requests: int = 0
    inst: Counter = field(default_factory=Counter)       # pipe -> thread instructions (instructions())
    # thread instructions of its integer bit operations (integer_bit_instructions), every execution
    int_bits: float = 0.0
    # thread instructions of its selects and compares (select_instructions), every execution
    selects: float = 0.0
    # copies of its output fragment the block's warps hold (fragment_replicas): its work runs this
    # many times over (executions, instructions and FLOPs above include it)
    replicas: int = 1
    # a gemm's tensor-core instruction (gemm_instruction); "" for every other op
    instruction: str = ""

    @property
    def total_flops(self) -> int:
        return sum(self.flops.values())


@dataclass
class Counts:
    ops: list
    flops: Counter          # (unit, dtype) -> FLOPs summed over ops
    bytes: Counter          # (level, direction) -> bytes
    conversions: int
    unique_bytes: int       # sum over global storages of bytes touched at least once
    footprints: dict
    excess: Counter = field(default_factory=Counter)
    inst: Counter = field(default_factory=Counter)       # pipe -> thread instructions, summed over ops
    # fragment bytes a block's consumer threads hold at once (held_fragment_bytes)
    held_fragment_bytes: int = 0

    def warp_instructions(self, warp_size: int = 32) -> float:
        """Warp instructions the SMs issue for the counted SIMT work: thread instructions over the
        warp's lanes (one instruction issues for all 32 threads of a warp)."""
        return sum(self.inst.values()) / max(warp_size, 1)

    @property
    def total_flops(self) -> int:
        return sum(v for (u, _), v in self.flops.items())

    @property
    def tensor_flops(self) -> int:
        return sum(v for (u, _), v in self.flops.items() if u == TENSOR)

    @property
    def cuda_flops(self) -> int:
        return sum(v for (u, _), v in self.flops.items() if u == CUDA)

    @property
    def sfu_ops(self) -> int:
        return sum(v for (u, _), v in self.flops.items() if u == SFU)

    def level_bytes(self, level: str, direction: str | None = None) -> int:
        return sum(v for (lv, d), v in self.bytes.items() if lv == level and (direction is None or d == direction))

    @property
    def global_bytes(self) -> int:
        return self.level_bytes(GLOBAL)


def warp_partition(m: int, n: int, warps: int) -> tuple[int, int]:
    """Warps along M and N for a gemm tile, the most square per-warp tile that divides evenly
    (TileLang's GemmWarpPolicy.Square)."""
    best, best_score = (warps, 1), None
    for wm in range(1, warps + 1):
        if warps % wm:
            continue
        wn = warps // wm
        if m % wm or n % wn:
            continue
        score = abs(m / wm - n / wn)
        if best_score is None or score < best_score:
            best, best_score = (wm, wn), score
    return best


@contextlib.contextmanager
def _quiet_stderr():
    """File descriptor 2 sent to /dev/null: TVM's C++ logs a failed check ("Fatal: ...") to stderr
    before it raises, and tileroof reports that failure itself, in one line."""
    try:
        saved = os.dup(2)
    except OSError:                                      # pragma: no cover - no stderr to redirect
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@lru_cache(maxsize=4096)
def _tilelang_partition(policy: int, m: int, n: int, threads: int, inst: str, arch: str):
    """TileLang's GemmWarpPolicy.compute_warp_partition: (m_warp, n_warp), or the first line of
    the message it raised with (a str)."""
    from tilelang import tvm
    from tilelang.ir import GemmWarpPolicy
    try:
        with _quiet_stderr():
            pol = GemmWarpPolicy(policy_type=int(policy), m_warp=0, n_warp=0)
            target = tvm.target.Target({"kind": "cuda", "arch": arch})
            wm, wn = pol.compute_warp_partition(int(m), int(n), int(threads), target, inst)
        return int(wm), int(wn)
    except Exception as exc:                             # noqa: BLE001 - TVM raises InternalError
        return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


@lru_cache(maxsize=512)
def gemm_warp_partition(policy: int, m: int, n: int, threads: int, instruction: str) -> tuple[int, int]:
    """(warps along M, warps along N) of a T.gemm as TileLang lays it out: its own
    GemmWarpPolicy.compute_warp_partition for the instruction ("wgmma": sm_90a, warpgroups of four
    warps along M; otherwise mma), which raises where the instruction cannot take the tile; then
    mma's, then the Square rule above."""
    try:
        import tilelang  # noqa: F401
    except Exception:                                   # pragma: no cover - tilelang is a dependency
        return warp_partition(m, n, max(threads // 32, 1))
    tries = (("cuda.wgmma", "sm_90a"), ("cuda.mma", "sm_80")) if instruction == "wgmma" else (("cuda.mma", "sm_80"),)
    for inst, arch in tries:
        got = _tilelang_partition(int(policy), int(m), int(n), int(threads), inst, arch)
        if not isinstance(got, str) and got[0] >= 1 and got[1] >= 1:
            return got
    return warp_partition(m, n, max(threads // 32, 1))


def gemm_lowering_error(trace: KernelTrace, native: str) -> str | None:
    """Why TileLang cannot lower one of the trace's T.gemm ops for a GPU whose native instruction
    is `native`, or None: a gemm TileLang sends to wgmma (gemm_instruction) whose tile its wgmma
    warp partition cannot cover (M = 96 on one warpgroup: "No valid warp partition for T.gemm
    (Warp-Group MMA)") fails to compile; tileroof says so instead of timing it as mma."""
    if native != "wgmma":
        return None
    try:
        import tilelang  # noqa: F401
    except Exception:                                   # pragma: no cover - tilelang is a dependency
        return None
    for rec in trace.ops:
        if rec.kind != "gemm" or gemm_instruction(rec, native, trace.pass_configs) != "wgmma":
            continue
        a = rec.attrs
        threads = int(a.get("threads", trace.threads_per_block) or 128)
        got = _tilelang_partition(int(a.get("policy", 0) or 0), int(a["m"]), int(a["n"]), threads, "cuda.wgmma", "sm_90a")
        if isinstance(got, str):
            return f"TileLang cannot lower its T.gemm ({a['m']} x {a['n']}, {threads} threads) to wgmma: {got}"
    return None


def fragment_replicas(trace: KernelTrace, instruction: str = "mma") -> dict:
    """Fragments whose every element the block's warps hold more than once: buffer -> copies.

    A gemm's register operand is laid out as its instruction reads it: the A fragment (M x K) is
    held whole by each warp column along N, so it is held n_warp times; a B fragment m_warp times.
    A fragment whose layout no gemm fixes takes the copies of the fragment it is computed into
    (layout inference propagates the consumer's layout), and element-wise code writing it runs on
    every copy.  Read in the lowered CUDA of upstream's FP4 dequantising GEMM (fp16, registers into
    wgmma_rs, Square policy, two consumer warpgroups split along N): each consumer thread loads all
    64 bytes of the B tile's two halves and decodes 128 values, twice the tile; Nsight Compute's
    ALU-pipe instructions (run 80) are 5.9 per decoded value with the copies counted, 11.7 without."""
    reps: dict = {}
    fixed: set = set()
    for rec in trace.ops:
        if rec.kind not in GEMM_KINDS or len(rec.operands) < 3:
            continue
        a = rec.attrs
        threads = int(a.get("threads", trace.threads_per_block) or 128)
        wm, wn = gemm_warp_partition(int(a.get("policy", 0) or 0), int(a["m"]), int(a["n"]), threads,
                                     gemm_instruction(rec, instruction, trace.pass_configs))
        A, B, C = rec.operands[0], rec.operands[1], rec.operands[2]
        fixed.add(C.buffer)
        if A.scope == FRAGMENT and wn > 1:
            reps[A.buffer] = max(reps.get(A.buffer, 1), wn)
        if B.scope == FRAGMENT and wm > 1 and rec.kind == "gemm":
            reps[B.buffer] = max(reps.get(B.buffer, 1), wm)
        for o in (A, B):
            if o.scope == FRAGMENT:
                fixed.add(o.buffer)
    if not reps:
        return reps
    for _ in range(len(trace.ops)):
        changed = False
        for rec in trace.ops:
            if rec.kind in GEMM_KINDS:
                continue
            f = _copies(rec, reps)
            if f <= 1:
                continue
            for o in rec.operands:
                if o.scope == FRAGMENT and o.access == "read" and o.buffer not in fixed and reps.get(o.buffer, 1) < f:
                    reps[o.buffer] = f
                    changed = True
        if not changed:
            break
    return reps


def _copies(rec: OpRecord, reps: dict) -> int:
    """The most copies (fragment_replicas) of any fragment the record writes: how often it runs."""
    return max((reps.get(o.buffer, 1) for o in rec.operands
                if o.scope == FRAGMENT and o.access in ("write", "readwrite")), default=1)


def _replicated(rec: OpRecord, reps: dict) -> tuple[OpRecord, int]:
    """The record as the warps run it: a non-gemm op writing a replicated fragment, with its
    executions and operand elements times the copies."""
    if rec.kind in GEMM_KINDS or not reps:
        return rec, 1
    f = _copies(rec, reps)
    if f <= 1:
        return rec, 1
    ops = tuple(replace(o, elements=o.elements * f) for o in rec.operands)
    return replace(rec, executions=rec.executions * f, per_block=rec.per_block * f, operands=ops), f


SECTOR = 32            # bytes of one L2 sector
BANKS, BANK_BYTES = 32, 4
# an mma/wgmma accumulator fragment gives each thread 2 adjacent columns of a row and a quad of 4
# threads one row segment: a store straight from it writes 8 contiguous elements per row
ACCUM_ROW_SEGMENT = 8
GEMM_KINDS = ("gemm", "gemm_sp")


def _accumulator_stores(rec: OpRecord, accumulators: frozenset) -> list:
    """The global operands a copy writes straight from a gemm accumulator fragment."""
    if rec.kind != "copy":
        return []
    if not any(o.scope == FRAGMENT and o.buffer in accumulators and o.access == "read" for o in rec.operands):
        return []
    return [o for o in rec.operands if o.scope == GLOBAL and o.access == "write"]


def accumulator_store_waste(rec: OpRecord, accumulators: frozenset) -> int:
    """Sector bytes wasted when a gemm accumulator fragment is copied straight to global memory:
    a row segment of 8 x 2-byte elements fills half a 32-byte sector (Nsight Compute on the H200:
    L2 write sectors = 2x C's bytes for fp16/bf16 C, 1x for fp32 C)."""
    waste = 0
    for o in _accumulator_stores(rec, accumulators):
        seg = ACCUM_ROW_SEGMENT * dtype_bytes(o.dtype)
        if seg < SECTOR:
            waste += int(o.elements * (SECTOR - seg) * dtype_bytes(o.dtype) / seg)
    return waste


def accumulator_store_requests(rec: OpRecord, accumulators: frozenset) -> int:
    """L2 write requests of a copy from a gemm accumulator fragment straight to global memory: one
    per row segment a quad of threads holds (ACCUM_ROW_SEGMENT elements)."""
    return sum(-(-o.elements // ACCUM_ROW_SEGMENT) for o in _accumulator_stores(rec, accumulators))


def access_excess(op) -> tuple[str, float] | None:
    """Extra traffic of element accesses whose neighbouring threads are not adjacent: shared-memory
    bank conflicts (a warp's access replays once per thread sharing a bank) and partly used L2
    sectors for global memory.  Returns (counter key, extra bytes) or None."""
    if op.scope == SHARED and op.wavefront_factor:
        extra = op.elements * dtype_bytes(op.dtype) * (op.wavefront_factor - 1.0)
        return (("shared", "conflict"), extra) if extra > 0 else None
    stride = op.access_stride
    if not stride:
        return None
    size = dtype_bytes(op.dtype)
    nbytes = op.elements * size
    if op.scope == SHARED and stride >= BANK_BYTES and stride % BANK_BYTES == 0:
        words = stride // BANK_BYTES
        degree = math.gcd(words, BANKS)
        return ("shared", "conflict"), nbytes * (degree - 1) if degree > 1 else None
    if op.scope == GLOBAL and stride > size:
        return ("global", "sector_waste"), op.elements * (min(SECTOR, stride) - size)
    return None


def _operand_bytes(rec: OpRecord, out: Counter, shared_read_factor: dict | None = None,
                   excess: Counter | None = None) -> None:
    for op in rec.operands:
        if op.scope in (FRAGMENT, LOCAL):
            continue
        level = op.scope
        nbytes = op.elements * dtype_bytes(op.dtype)
        extra = access_excess(op)
        if extra and extra[1] and excess is not None:
            excess[extra[0]] += extra[1]
        if shared_read_factor and op.buffer in shared_read_factor and op.scope == SHARED:
            nbytes *= shared_read_factor[op.buffer]
        if op.access == "readwrite":
            out[(level, "read")] += nbytes
            out[(level, "write")] += nbytes
        else:
            out[(level, op.access)] += nbytes


def _arith(rec: OpRecord, oc: OpCounts) -> None:
    for (unit, dtype, _name), n in rec.ops_per_exec.items():
        if unit == CVT:
            oc.conversions += n * rec.executions
        elif unit == ALU:
            continue                  # selects: instructions, not FLOPs (see instructions())
        else:
            oc.flops[(unit, normalize_dtype(dtype))] += n * rec.executions


def count_gemm(rec: OpRecord, oc: OpCounts) -> None:
    a = rec.attrs
    warps = max(a.get("threads", 128) // 32, 1)
    wm, wn = warp_partition(a["m"], a["n"], warps)
    # each warp row reads its slice of A once per warp column and vice versa (ldmatrix traffic)
    factors = {rec.operands[0].buffer: wn, rec.operands[1].buffer: wm}
    if rec.operands[0].buffer == rec.operands[1].buffer:
        factors = {}
    _operand_bytes(rec, oc.bytes, factors)
    if oc.instruction == "mma":
        # element-wise fragment loads: their wavefronts, beyond the bytes, as bank-conflict replays
        for op, bits in scalar_operands(rec):
            nbytes = op.elements * dtype_bytes(op.dtype) * factors.get(op.buffer, 1)
            inst = nbytes / (32 * dtype_bytes(op.dtype))
            row_bytes = int(round(int(op.extents[-1]) * dtype_bytes(op.dtype))) if getattr(op, "extents", None) else 128
            oc.excess[("shared", "conflict")] += inst * scalar_load_wavefronts(bits, row_bytes) * 128 - nbytes
    _arith(rec, oc)


# ---- mma.sync operands a warp cannot ldmatrix -------------------------------------------------
# TileLang's mma.sync emitter (tilelang/cuda/intrinsics/macro/mma_macro_generator.py, 0.1.15:
# ldmatrix_a / ldmatrix_b) loads a shared operand with ldmatrix unless its dtype is not 16-bit and
# the operand is stored M/N-major (A transposed, B not transposed: ldmatrix's transpose moves
# 16-bit halves only); then every thread loads its fragment one element at a time (LDS.U8 / LDS.32:
# the lowered CUDA of probe_mma_int8_nn, `B_local[..] = B_shared[..]`).  A warp instruction then
# reads 32 elements: 8 consecutive along M/N from each of 4 rows along K (lane / 4, lane % 4: the
# mma_load_*_to_shared layouts), the rows `K_ROW_STEP` apart (int8's 16x32 micro tile: a lane's
# elements k = 4 (lane % 4) + j; tf32's 16x8: k = lane % 4 + 4 j).
K_ROW_STEP = {8: 4, 32: 1}


def swizzle_bytes(row_bytes: int) -> int:
    """The XOR swizzle's atom TileLang lays a gemm's shared operand out in (makeGemmABLayout: the
    full-bank 128-byte swizzle where the tile's contiguous dimension is a multiple of 128 bytes, the
    half-bank 64 and quarter-bank 32 below that, none otherwise)."""
    for b in (128, 64, 32):
        if row_bytes % b == 0:
            return b
    return 0


@lru_cache(maxsize=64)
def scalar_load_wavefronts(bits: int, row_bytes: int) -> int:
    """Shared-memory wavefronts one warp instruction of element-wise operand loads takes: the most
    distinct 4-byte words any of the 32 banks serves (lanes reading one word share it), the rows laid
    out in TileLang's XOR swizzle of `swizzle_bytes(row_bytes)`: within an atom column of rows of
    min(row, atom) bytes, address bits 4.. (the 16-byte chunk) XOR bits 7.. (the 128-byte line), as
    many as the atom has chunk bits (CUTLASS's Swizzle<3,4,3> / <2,4,3> / <1,4,3>; read in the
    lowered CUDA of the int8 NN probes: 128-byte rows XOR chunk with row mod 8, 64-byte rows with
    (row / 2) mod 4).  The int8 probes at 256-, 128- and 64-byte rows and the tf32 ones at 1024 and
    256: 2 (Nsight Compute, runs 161-163: one bank conflict per instruction)."""
    eb, row_bytes = max(int(bits) // 8, 1), int(row_bytes)
    step = K_ROW_STEP.get(bits, 1)
    atom = swizzle_bytes(row_bytes)
    line = min(row_bytes, atom) if atom else row_bytes
    nbits = {128: 3, 64: 2, 32: 1}.get(atom, 0)
    words: dict = {}
    for lane in range(32):
        row, col = (lane % 4) * step, (lane // 4) * eb           # bytes along the contiguous dim
        addr = row * line + (col % line)
        if nbits:
            addr ^= ((addr >> 7) & ((1 << nbits) - 1)) << 4
        addr += (col // line) * (1 << 20)                         # another atom column: far apart
        words.setdefault((addr // 4) % 32, set()).add(addr // 4)
    return max(len(w) for w in words.values())


def scalar_operands(rec: OpRecord) -> list:
    """(operand, bits) of a gemm's shared operands that mma.sync loads element by element."""
    a = rec.attrs
    out = []
    for i, major in ((0, bool(a.get("trans_a"))), (1, not a.get("trans_b"))):
        if i >= len(rec.operands):
            continue
        op = rec.operands[i]
        bits = int(round(dtype_bytes(op.dtype) * 8))
        if op.scope == SHARED and bits != 16 and major:
            out.append((op, bits))
    return out


def count_default(rec: OpRecord, oc: OpCounts) -> None:
    _operand_bytes(rec, oc.bytes, None, oc.excess)
    _arith(rec, oc)


FORMULAS = {k: count_gemm for k in GEMM_KINDS}

# ---- the instruction estimate ------------------------------------------------------------------
# Thread instructions per counted operation, by pipe: what nvcc emits on sm_80+ for the operation,
# as read in the SASS of the corpus's kernels (cuobjdump on the H200, NOTES.md run 65b): one FSETP
# per compare, one FMNMX/IMNMX per min/max, one SEL/FSEL per select, one FADD/FMUL/FFMA per
# add/mul/fma; an IEEE fp32 division is one MUFU.RCP, about 4 FFMA, an FCHK and a branch around
# its slow path (BSSY/BRA/BSYNC).  Keyed by the op name in OpRecord.ops_per_exec, the value is
# ((pipe, instructions per counted unit), ...): a counted unit is a FLOP for the "cuda" ops (an
# fma counts 2 FLOPs and is one instruction), a result for the others.
_OP_INST = {
    "add": ((P_FMA, 1),), "sub": ((P_FMA, 1),), "mul": ((P_FMA, 1),), "fma": ((P_FMA, 0.5),),
    "sum": ((P_FMA, 1),), "abssum": ((P_FMA, 0.5),),     # |x| is an operand modifier of the FADD
    "max": ((P_ALU, 1),), "min": ((P_ALU, 1),), "cmp": ((P_ALU, 1),), "absmax": ((P_ALU, 1),),
    "clamp": ((P_ALU, 1),), "select": ((P_ALU, 1),), "allreduce": ((P_ALU, 1),), "shfl": ((P_SHFL, 1),),
    "div": ((P_XU, 1), (P_FMA, 4), (P_ALU, 1), (P_OTHER, 3)),
    "floor": ((P_OTHER, 1),), "ceil": ((P_OTHER, 1),), "round": ((P_OTHER, 1),), "trunc": ((P_OTHER, 1),),
    "abs": (),                                            # an operand modifier (|x|) of its reader
}
# a special function: TileLang emits the CUDA math library's float call (exp2f, expf, tanhf,
# rsqrtf: its lowered source), compiled without --use_fast_math unless tl.enable_fast_math is set.
# What each issues on its common path (no denormal or overflow branch taken), read from the SASS of
# `nvcc 13.0 -arch=sm_90a -O3 [-use_fast_math]` via cuobjdump 13.5 (benchmarks/sass_special.py
# prints it): predicated instructions issue whether their predicate holds or not; constants the
# compiler hoists out of a loop and address arithmetic are left out.  Accurate exp2f is a range
# test, two predicated FMULs and a MUFU.EX2; expf a 6-instruction reduction around the MUFU; logf
# and log2f a polynomial with no MUFU at all; tanhf an EX2 and an RCP in a polynomial blend.
# With fast math each is its MUFU (and the FMUL that scales exp / log to base 2).
_SFU_ACCURATE = {
    "exp2": ((P_XU, 1), (P_FMA, 2), (P_ALU, 1)),
    "exp": ((P_XU, 1), (P_FMA, 6), (P_ALU, 1)),
    "exp10": ((P_XU, 1), (P_FMA, 6), (P_ALU, 1)),
    "log": ((P_FMA, 15), (P_ALU, 9)),
    "log2": ((P_FMA, 17), (P_ALU, 9)),
    "log10": ((P_FMA, 15), (P_ALU, 9)),
    "rsqrt": ((P_XU, 1), (P_FMA, 2), (P_ALU, 1)),
    "sqrt": ((P_XU, 1), (P_FMA, 4), (P_ALU, 2), (P_OTHER, 3)),
    "tanh": ((P_XU, 2), (P_FMA, 9), (P_ALU, 4)),
    "erf": ((P_XU, 1), (P_FMA, 9), (P_ALU, 11)),
    "sin": ((P_XU, 1), (P_FMA, 11), (P_ALU, 7), (P_OTHER, 3)),
    "cos": ((P_XU, 1), (P_FMA, 11), (P_ALU, 7), (P_OTHER, 3)),
}
_SFU_FAST = {
    "exp2": ((P_XU, 1),), "log2": ((P_XU, 1),), "rsqrt": ((P_XU, 1),), "sqrt": ((P_XU, 1),),
    "tanh": ((P_XU, 1),),
}
# the rest (exp, exp10, log, log10, sin, cos, and the __expf-style intrinsics, which are the fast
# forms whatever the flag): the MUFU and the FMUL that scales its argument or result
_SFU_INST = ((P_XU, 1), (P_FMA, 1))
# an IEEE division under --use_fast_math: MUFU.RCP and an FMUL
_DIV_FAST = ((P_XU, 1), (P_FMA, 1))
# a memory instruction moves at most 16 bytes per thread (LDG/STG/LDS/STS.128)
VECTOR_BYTES = 16
# the threads a row of an mma/wgmma accumulator fragment is spread over (a quad: PTX ISA, the
# m16n8 / m64nN accumulator layouts give each thread 2 adjacent columns of a row per 8 columns)
ACCUM_ROW_THREADS = 4


# 16-bit float arithmetic in T.Parallel code issues as paired instructions (HADD2, HMUL2, HFMA2,
# HMNMX2 on f16x2 / bf16x2: PTX add.f16x2 etc.), two elements each: the CUDA guide's 16-bit
# add/mul/fma rate is twice the FP32 one for that reason (256 results/clk/SM on cc 8.0, the A100
# catalog's fp16_tflops).  Nsight Compute on ew_add_fp16_16384: 0.95 instructions per element, below
# the 1.375 that unpaired adds and 16-byte loads and stores would take
_PAIRED = ("float16", "bfloat16")


def _op_instructions(key, n: float, out: Counter, paired: bool = False, fast_math: bool = False) -> None:
    """Add the thread instructions of `n` counted units of ops_per_exec entry `key` to `out`
    (paired: the loop is vectorised, so 16-bit float arithmetic issues two elements at a time;
    fast_math: the kernel is compiled with --use_fast_math, tl.enable_fast_math)."""
    unit, dtype, name = key
    if paired and unit == CUDA and str(dtype) in _PAIRED:
        n = n / 2
    if unit == TENSOR:
        return
    if unit == CVT:
        src, _, dst = str(dtype).partition("->")
        fs, fd = src.startswith(("float", "bfloat")), dst.startswith(("float", "bfloat"))
        if fs != fd:
            out[P_XU] += n                    # I2F / F2I run on the special-function pipe
        elif fs and min(dtype_bytes(src), dtype_bytes(dst)) <= 2:
            out[P_ALU] += n / 2               # F2FP packs two narrowed values, HADD2.F32 / PRMT widen two
        elif fs:
            out[P_ALU] += n
        # integer to integer (uint8 -> uint16 -> int32): registers are 32 bits wide; a widening is
        # no instruction and a narrowing's mask folds into the LOP3 that uses it
        return
    if unit == SFU:
        for pipe, k in (_SFU_FAST.get(name, _SFU_INST) if fast_math else _SFU_ACCURATE.get(name, _SFU_INST)):
            out[pipe] += k * n
        return
    entry = _DIV_FAST if (fast_math and name == "div") else _OP_INST.get(name)
    if entry is None:
        out[P_ALU if unit == ALU else P_OTHER] += n
        return
    for pipe, k in entry:
        out[pipe] += k * n


def _memory_instructions(op, executions: float, simt: bool) -> float:
    """Memory instructions of one element operand: one per execution, or one per 16 bytes where
    neighbouring iterations touch neighbouring elements (T.Parallel vectorises them)."""
    if op.scope not in (GLOBAL, SHARED):
        return 0.0
    size = dtype_bytes(op.dtype)
    if simt or op.access_stride is None or op.access_stride != size:
        return float(executions)
    return executions / max(VECTOR_BYTES // max(int(size), 1), 1)


def _tile_memory_instructions(op) -> float:
    """Memory instructions of a tile op's operand (copy, fill): one per 16 bytes of a global or
    shared tile; fragments live in registers."""
    if op.scope not in (GLOBAL, SHARED):
        return 0.0
    return op.elements * dtype_bytes(op.dtype) / VECTOR_BYTES


def reduce_row_threads(rec: OpRecord, threads: int, accumulators: frozenset) -> tuple[int, int]:
    """(threads that share one reduced row of a T.reduce source fragment, lanes between them).

    A gemm accumulator: a quad of neighbouring lanes.  Else TileLang's default fragment layout:
    each thread holds 16 bytes of consecutive elements along the last dimension, consecutive
    threads take consecutive such vectors, and the threads left over spread along the dimension
    before it -- so a last-dimension (row) reduction is shared by as many neighbouring threads as a
    row has vectors (at most the block's), a reduction over the dimension before it by the threads
    left over, one row of vectors apart (tl::AllReduce's `scale`).  Powers of two."""
    src = rec.operands[0]
    if src.buffer in accumulators:
        return ACCUM_ROW_THREADS, 1
    ext = [int(e) for e in src.extents] or [1]
    dim = rec.attrs.get("dim", len(ext) - 1)
    dim = dim + len(ext) if dim < 0 else dim
    vec = max(VECTOR_BYTES // max(int(dtype_bytes(src.dtype)), 1), 1)
    across_last = max(min(threads, ext[-1] // vec), 1)
    across_last = 1 << (across_last.bit_length() - 1)
    if dim >= len(ext) - 1:
        return across_last, 1
    tpr = max(min(threads // across_last, ext[dim] if 0 <= dim < len(ext) else 1), 1)
    return 1 << (tpr.bit_length() - 1), across_last


def _reduce_instructions(rec: OpRecord, threads: int, accumulators: frozenset, out: Counter) -> None:
    """T.reduce: each thread combines its own elements of a row (one instruction per element),
    then the threads sharing the row combine theirs in a butterfly (tl::AllReduce): log2 of them
    steps, each a SHFL and a combine between lanes of a warp, between warps a shared-memory
    exchange (a barrier, STS, a barrier, LDS) and a combine."""
    src, dst = rec.operands[0], rec.operands[1]
    execs = rec.executions
    elems = 1
    for e in src.extents:
        elems *= int(e)
    rows = 1
    for e in dst.extents:
        rows *= int(e)
    kind = rec.attrs.get("reduce", "sum")
    float_src = str(src.dtype).startswith(("float", "bfloat"))
    pipe = P_FMA if kind in ("sum", "abssum") and float_src else P_ALU
    tpr, scale = reduce_row_threads(rec, threads, accumulators)
    held = max(rows * tpr, threads)                  # (row, thread) pairs: every thread takes part
    offsets = [scale << i for i in range(tpr.bit_length() - 1)]
    warp_steps = sum(1 for o in offsets if o < 32)
    smem_steps = len(offsets) - warp_steps
    out[pipe] += execs * (elems + held * len(offsets))
    out[P_SHFL] += execs * held * warp_steps
    out[P_MEM] += execs * held * smem_steps * 2
    out[P_OTHER] += execs * held * (smem_steps * 2 + (1 if smem_steps else 0))


def instructions(rec: OpRecord, threads: int = 128, accumulators: frozenset = frozenset(),
                 fast_math: bool = False) -> Counter:
    """Thread instructions (pipe -> count, over every execution) the SMs issue for one record's
    SIMT work: its arithmetic (_OP_INST), its selects, its memory instructions, and a reduction's
    butterfly.  A lower estimate: index and address arithmetic, loop control and predicates are
    not counted, nor the instructions that feed the tensor cores."""
    out: Counter = Counter()
    _record_instructions(rec, threads, accumulators, out, fast_math)
    return Counter({k: v for k, v in out.items() if v})


def _record_instructions(rec: OpRecord, threads: int, accumulators: frozenset, out: Counter,
                         fast_math: bool = False) -> None:
    if rec.kind == "reduce" and len(rec.operands) >= 2:
        _reduce_instructions(rec, threads, accumulators, out)
        return
    if rec.kind in ("copy", "transpose", "fill"):
        for op in rec.operands:
            out[P_MEM] += _tile_memory_instructions(op)
        if rec.kind != "fill" and len(rec.operands) == 2:
            a, b = rec.operands
            if str(a.dtype) != str(b.dtype):
                _op_instructions((CVT, f"{a.dtype}->{b.dtype}", "cvt"), max(a.elements, b.elements), out)
        return
    if rec.kind in GEMM_KINDS or rec.kind in ("mma", "im2col"):
        return
    execs = rec.executions
    simt = "simt_threads" in rec.attrs
    # subexpressions that no T.Parallel variable reaches (max_x[0] * scale) run once a thread for
    # all its elements: (executions / parallel elements) region runs x threads, not executions
    inv = rec.attrs.get("invariant_ops") or {}
    par = rec.attrs.get("parallel_elements") or 0
    inv_share = min(1.0, threads / par) if par else 1.0
    for key, n in rec.ops_per_exec.items():
        k_inv = min(inv.get(key, 0), n)
        _op_instructions(key, ((n - k_inv) + k_inv * inv_share) * execs, out, paired=not simt,
                         fast_math=fast_math)
    for op in rec.operands:
        if rec.kind == "ldmatrix":
            out[P_MEM] += execs
        else:
            out[P_MEM] += _memory_instructions(op, execs, simt)


def _alu_instructions(rec: OpRecord, bits: bool) -> float:
    """Thread instructions, over every execution, of a record's ALU-unit element work (ir.arith
    counts it; no FLOPs): its integer bit operations when `bits`, else its selects and compares."""
    return float(sum(n for (unit, _, name), n in rec.ops_per_exec.items()
                     if unit == ALU and (name == "bit") == bits) * rec.executions)


def integer_bit_instructions(rec: OpRecord) -> float:
    """Thread instructions of a record's integer bit operations (shifts, and / or / xor on
    integers: a dequantisation's bit twiddling), over every execution: work with no FLOPs.  Only
    element code has them (ir.arith counts them there)."""
    return _alu_instructions(rec, bits=True)


def select_instructions(rec: OpRecord) -> float:
    """Thread instructions of a record's selects and compares (T.if_then_else, a causal mask's
    index test): ALU-pipe work with no FLOPs, every execution.  Only element code has them."""
    return _alu_instructions(rec, bits=False)


def count_op(rec: OpRecord, accumulators: frozenset = frozenset(), threads: int = 128,
             replicas: dict | None = None, fast_math: bool = False, native: str = "mma",
             pass_configs: tuple = ()) -> OpCounts:
    """Counts of one record; `native` is the GPU's tensor-core instruction: a gemm that lowers to
    mma.sync on a wgmma GPU (gemm_instruction) keys its tensor FLOPs dtype + MMA_SUFFIX, timed at
    mma.sync's rate (Device.tensor_rate)."""
    rec, copies = _replicated(rec, replicas or {})
    oc = OpCounts(rec.label, rec.kind, rec.executions, replicas=copies,
                  instruction=gemm_instruction(rec, native, pass_configs))
    oc.int_bits = integer_bit_instructions(rec)
    oc.selects = select_instructions(rec)
    FORMULAS.get(rec.kind, count_default)(rec, oc)
    if oc.instruction == "mma" and native == "wgmma":
        oc.flops = Counter({(u, d + MMA_SUFFIX if u == TENSOR else d): v for (u, d), v in oc.flops.items()})
    oc.bytes = Counter({k: int(round(v)) for k, v in oc.bytes.items()})
    waste = accumulator_store_waste(rec, accumulators)
    if waste:
        oc.excess[("global", "sector_waste")] += waste
    oc.store_requests = accumulator_store_requests(rec, accumulators)
    oc.inst = instructions(rec, threads, accumulators, fast_math)
    return oc


def gemm_accumulators(trace: KernelTrace) -> frozenset:
    """The fragments gemms accumulate into (their layout is the tensor core's, not the default)."""
    return frozenset(r.operands[2].buffer for r in trace.ops
                     if r.kind in GEMM_KINDS and len(r.operands) > 2 and r.operands[2].scope == FRAGMENT)


def count(trace: KernelTrace, instruction: str = "mma") -> Counts:
    """Counts of every op record; `instruction` is the device's tensor-core instruction ("wgmma"
    on Hopper), which sets how gemms lay out their register operands (fragment_replicas)."""
    accumulators = gemm_accumulators(trace)
    threads = max(trace.threads_per_block, 1)
    reps = fragment_replicas(trace, instruction)
    ops = [count_op(r, accumulators, threads, reps, trace.fast_math, instruction, trace.pass_configs)
           for r in trace.ops]
    flops, nbytes, excess, inst, conv = Counter(), Counter(), Counter(), Counter(), 0
    for oc in ops:
        flops.update(oc.flops)
        nbytes.update(oc.bytes)
        excess.update(oc.excess)
        inst.update(oc.inst)
        conv += oc.conversions
    footprints = {k: v for k, v in trace.footprints.items()}
    return Counts(ops, flops, nbytes, conv, sum(footprints.values()), footprints, excess, inst,
                  held_fragment_bytes(trace, reps))


def held_fragment_bytes(trace: KernelTrace, replicas: dict | None = None) -> int:
    """Bytes of the fragments and thread-local buffers a block holds at once, the register
    operands' copies (fragment_replicas) counted: every fragment but one whose every reader is a
    whole copy into another fragment (the copy's source is dead once it ran and the compiler gives
    both one set of registers: the FP4 dequantising GEMM's B_dequantize_local, copied into
    B_dequantize_prev_local for the gemm -- ptxas 240 registers and no spill where the sum without
    this is 272)."""
    replicas = replicas or {}
    readers: dict = {}
    for rec in trace.ops:
        for o in rec.operands:
            if o.scope in (FRAGMENT, LOCAL) and o.access in ("read", "readwrite"):
                readers.setdefault(o.buffer, []).append(rec)

    def copied_away(name: str) -> bool:
        recs = readers.get(name)
        return bool(recs) and all(
            r.kind == "copy" and any(o.scope == FRAGMENT and o.access == "write" and o.buffer != name
                                     for o in r.operands) for r in recs)

    return int(sum(trace.block_nbytes(b) * replicas.get(b.name, 1) for b in trace.buffers.values()
                   if b.scope in (FRAGMENT, LOCAL) and not copied_away(b.name)))

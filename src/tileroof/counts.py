"""Records in, numbers out: FLOPs by (unit, dtype), bytes by (level, direction), per op and in total.

One formula per record kind lives here (torch.utils.flop_counter's pattern): each reads an
OpRecord and returns its OpCounts.  Nothing here knows TVM or the hardware.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from .trace import FRAGMENT, GLOBAL, LOCAL, SHARED, KernelTrace, OpRecord, dtype_bytes

TENSOR, CUDA, SFU, CVT = "tensor", "cuda", "sfu", "cvt"


def normalize_dtype(dtype: str) -> str:
    """Map TVM dtypes to the peak table's keys: fp16, bf16, fp8, tf32/fp32, fp64, int8, int32..."""
    d = str(dtype)
    if d.startswith("float8") or d.startswith("float6") or d.startswith("float4"):
        return "fp8" if d.startswith("float8") else "fp4"
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
            "int8": "int8", "uint8": "int8", "int32": "int32", "int4": "int4", "int64": "int64"}.get(d, d)


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
    _arith(rec, oc)


def count_default(rec: OpRecord, oc: OpCounts) -> None:
    _operand_bytes(rec, oc.bytes, None, oc.excess)
    _arith(rec, oc)


FORMULAS = {k: count_gemm for k in GEMM_KINDS}


def count_op(rec: OpRecord, accumulators: frozenset = frozenset()) -> OpCounts:
    oc = OpCounts(rec.label, rec.kind, rec.executions)
    FORMULAS.get(rec.kind, count_default)(rec, oc)
    oc.bytes = Counter({k: int(round(v)) for k, v in oc.bytes.items()})
    waste = accumulator_store_waste(rec, accumulators)
    if waste:
        oc.excess[("global", "sector_waste")] += waste
    oc.store_requests = accumulator_store_requests(rec, accumulators)
    return oc


def count(trace: KernelTrace) -> Counts:
    accumulators = frozenset(r.operands[2].buffer for r in trace.ops
                             if r.kind in GEMM_KINDS and len(r.operands) > 2 and r.operands[2].scope == FRAGMENT)
    ops = [count_op(r, accumulators) for r in trace.ops]
    flops, nbytes, excess, conv = Counter(), Counter(), Counter(), 0
    for oc in ops:
        flops.update(oc.flops)
        nbytes.update(oc.bytes)
        excess.update(oc.excess)
        conv += oc.conversions
    footprints = {k: v for k, v in trace.footprints.items()}
    return Counts(ops, flops, nbytes, conv, sum(footprints.values()), footprints, excess)

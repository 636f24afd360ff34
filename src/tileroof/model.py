"""Counts + device -> time: a hierarchical roofline with occupancy, waves and launch cost.

Each resource (tensor cores per dtype, CUDA cores, SFU, shared memory, L2, DRAM) gets the time its
work needs at its peak; the kernel body runs at the slowest of them (they overlap in a pipelined
kernel), stretched by wave quantisation and load imbalance across SMs, plus pipeline fill and the
launch overhead.  The bound is the resource with the largest time.  Pure functions, no I/O.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

from . import memory
from .counts import CUDA, SFU, TENSOR, Counts
from .devices import Device
from .trace import KernelTrace

# registers a thread needs besides its share of the fragments (addresses, loop state, pipeline)
BASE_REGS_PER_THREAD = 32


@dataclass
class Occupancy:
    blocks_per_sm: int
    limiter: str
    regs_per_thread: int
    smem_per_block: int
    threads_per_block: int

    def as_dict(self):
        return self.__dict__.copy()


@dataclass
class Timing:
    time_s: float
    bound: str
    resource_s: dict            # resource -> seconds at peak
    utilisation: dict           # resource -> fraction of its peak used over the kernel's time
    waves: float
    slots: int
    imbalance: float            # makespan over perfectly balanced work (>= 1)
    launch_s: float
    fill_s: float
    occupancy: Occupancy
    memory: memory.MemoryEstimate
    assumptions: list = field(default_factory=list)


def occupancy(trace: KernelTrace, dev: Device) -> Occupancy:
    threads = max(trace.threads_per_block, 1)
    smem = trace.shared_bytes_per_block()
    regs = min(BASE_REGS_PER_THREAD + int(np.ceil(trace.fragment_bytes_per_block() / 4 / threads)),
               dev.max_regs_per_thread)
    regs = int(np.ceil(regs / 8) * 8)           # registers are allocated in units of 8 per thread
    limits = {"blocks": dev.max_blocks_per_sm,
              "threads": dev.max_threads_per_sm // threads if threads else dev.max_blocks_per_sm}
    if smem:
        reserved = 1024                          # per-block shared memory the runtime reserves (cc >= 8.0)
        limits["shared memory"] = int(dev.smem_per_sm // (smem + reserved)) if dev.smem_per_sm else 1
    if regs and dev.regs_per_sm:
        limits["registers"] = int(dev.regs_per_sm // (regs * threads))
    limiter = min(limits, key=limits.get)
    return Occupancy(max(limits[limiter], 1), limiter, regs, smem, threads)


def _makespan(per_block: np.ndarray, order: np.ndarray, slots: int) -> float:
    """Greedy list scheduling of blocks (in launch order) onto `slots`: makespan in block-work units."""
    work = per_block[order]
    if work.size == 0:
        return 0.0
    if np.all(work == work[0]):
        return float(np.ceil(work.size / slots) * work[0])
    if work.size > 50_000:
        return max(float(work.sum() / slots), float(work.max()))
    heap = [0.0] * min(slots, work.size)
    for w in work:
        t = heapq.heappop(heap)
        heapq.heappush(heap, t + float(w))
    return max(heap)


def estimate(trace: KernelTrace, counts: Counts, dev: Device) -> Timing:
    occ = occupancy(trace, dev)
    slots = occ.blocks_per_sm * dev.sm_count
    nblocks = max(trace.num_blocks, 1)
    mem = memory.estimate(trace, slots, dev.l2_bytes, dev.l2_partitions)
    assumptions = list(mem.assumptions)

    res: dict[str, float] = {}
    for (unit, dtype), n in counts.flops.items():
        if not n:
            continue
        if unit == TENSOR:
            rate, key = dev.tensor_rate(dtype), f"tensor {dtype}"
        elif unit == CUDA:
            rate, key = dev.cuda_rate(dtype), f"cuda {dtype}"
        elif unit == SFU:
            rate, key = dev.sfu_rate, "sfu"
        else:
            continue
        if rate <= 0:
            assumptions.append(f"{dev.name} has no {unit} {dtype} rate: that work is not timed")
            continue
        res[key] = res.get(key, 0.0) + n / rate
    shared = counts.level_bytes("shared")
    if shared and dev.shared_bw:
        res["shared"] = shared / dev.shared_bw
    if dev.l2_bw:
        res["l2"] = (mem.l2_read + mem.l2_write) / dev.l2_bw
    else:
        assumptions.append(f"{dev.name}: no L2 bandwidth in the catalog, L2 not timed")
    if dev.dram_bw:
        res["dram"] = mem.dram_bytes / dev.dram_bw

    # wave quantisation and imbalance: work per block in launch order onto the resident slots;
    # compute resources are per-SM, so their time stretches by makespan / balanced time
    per_block = np.zeros(nblocks)
    for rec in trace.ops:
        if rec.kind in ("gemm", "gemm_sp", "elementwise", "reduce"):
            per_block += rec.per_block * max(sum(rec.ops_per_exec.values()), 1)
    if not per_block.any():
        for rec in trace.ops:
            per_block += rec.per_block
    order = memory.launch_order(trace)
    balanced = per_block.sum() / min(slots, nblocks) if per_block.sum() else 0.0
    imbalance = _makespan(per_block, order, slots) / balanced if balanced else 1.0
    body = {k: (v * imbalance if not k in ("dram", "l2") else v) for k, v in res.items()}
    bound = max(body, key=body.get) if body else "launch"
    t_body = body.get(bound, 0.0)
    launch = dev.launch_s
    waves = nblocks / slots
    time_s = t_body + launch
    util = {k: (v / time_s if time_s else 0.0) for k, v in res.items()}
    return Timing(time_s, bound, res, util, waves, slots, imbalance, launch, 0.0, occ, mem, assumptions)

"""Counts + device -> time: a hierarchical roofline with occupancy, waves, pipelining and launch cost.

Two levels:
1. Kernel roofline: each resource (tensor cores per dtype, CUDA cores, SFU, shared memory, L2,
   DRAM) gets the time its whole work needs at its peak.
2. Block pipeline (kernels with a T.Pipelined main loop): a block runs its loop as
   fixed block cost + iterations × steady state + epilogue, where one iteration costs the slowest
   of its compute (tensor work with the narrow-wgmma and accumulator-spill factors, then the
   CUDA-core and SFU work of the same warps at the loop ALU rate plus the row-reduction latency,
   one after the other: consumer warpgroups run in phase), its global→shared traffic at the SM's share of L2
   bandwidth, and the load pipeline (L2-served tiles: the load latency over the stages in flight;
   DRAM-served tiles: the measured streaming pace for their size and depth).  Blocks are
   list-scheduled, in launch order, onto the resident slots (occupancy × SMs): waves, tails and
   causal imbalance come out of that schedule.  Every constant is a device field (measured by
   calibrate) or a [fitted] value of the device profile.
The estimate is the larger of the two levels plus the launch overhead; the bound names the
resource that set it.  The tensor work runs at a power-limited SM clock (power_limited_clock:
the measured rates hold at the sustained-matmul clock; kernels whose tensor cores are less busy,
and the idle L2 flush between do_bench launches, let the clock rise), solved with the time as a fixed point.  Gemm
accumulators that do not fit the registers add their local-memory traffic (spill_memory).
Pure functions, no I/O.
"""
from __future__ import annotations

import functools
import heapq
import re
from dataclasses import dataclass, field, replace

import numpy as np

from . import memory
from .counts import (CUDA, MMA_SUFFIX, P_ALU, P_FMA, P_SHFL, SFU, TENSOR, Counts, gemm_accumulators,
                     gemm_lowering_error, reduce_row_threads)
from .devices import Device
from .gpu.timing import FLUSH_BYTES
from .trace import FRAGMENT, GLOBAL, LOCAL, SHARED, KernelTrace, dtype_bytes

# registers a thread needs besides its share of the fragments (addresses, loop state, pipeline)
BASE_REGS_PER_THREAD = 32
# the same for a launch without a pipelined loop, whose fragments are counted by liveness
# (live_fragment_bytes): the base that brings the most of the 100-odd recorded such launches to
# ptxas's blocks per SM (benchmarks/register_check.py: 16 / 20 / 24 / 32 -> 72 / 76 / 85 / 93 of the
# 707 launches off, against 94 with 32 + every fragment; session 21)
BASE_REGS_LIVE = 16
# TileLang on Hopper (wgmma targets) warp-specialises pipelined loops that copy global -> shared:
# it adds one producer warpgroup (128 threads) and raises the register budget to fill the SM
# (seen in Nsight Compute on the H200: 128 -> 256 launched threads, 240 registers, 1 block/SM).
PRODUCER_THREADS = 128
# ...and re-balances registers at run time with setmaxnreg: the producer warpgroup drops to 24, the
# consumers rise to 240 (tilelang/language/builtin.py: annotate_producer_reg_dealloc(24),
# annotate_consumer_reg_alloc(240); the generated code calls warpgroup_reg_dealloc<24> /
# warpgroup_reg_alloc<240>).  Nsight Compute's launch figure (168 for 384 threads) is the
# allocation before that.
PRODUCER_REGS, CONSUMER_REGS = 24, 240


@dataclass
class Occupancy:
    blocks_per_sm: int
    limiter: str
    regs_per_thread: int
    smem_per_block: int
    threads_per_block: int           # launched (producer warpgroup included)
    warp_specialized: bool = False
    consumer_warpgroups: int = 1
    consumer_regs_per_thread: int = 0    # registers a consumer thread has after setmaxnreg (WS)
    launch_error: str | None = None      # why the launch cannot start on the device (None: it can)

    def as_dict(self):
        return self.__dict__.copy()


@dataclass
class Timing:
    time_s: float
    bound: str
    resource_s: dict            # resource -> seconds at peak (whole kernel)
    utilisation: dict           # resource -> fraction of its peak used over the kernel's time
    waves: float
    slots: int
    imbalance: float            # makespan over perfectly balanced work (>= 1)
    launch_s: float
    fill_s: float
    occupancy: Occupancy
    memory: memory.MemoryEstimate
    pipeline: dict = field(default_factory=dict)
    assumptions: list = field(default_factory=list)
    dram_if_drifting: float | None = None   # DRAM bytes if the blocks drift apart (see model.estimate)
    sm_clock_hz: float | None = None        # power-limited SM clock the tensor work runs at (None: no tensor work)
    dram_in_step: float | None = None       # DRAM bytes if the blocks keep pace (the estimate unless they drift)
    flush_writeback: float = 0.0            # bytes of the harness's L2 flush written back inside the timed run


# a table of atomics targets at most this large is "hot": its lines stay in L2 and updates to the
# same line serialise there (a histogram); larger targets spread over the L2 slices
HOT_ATOMIC_BYTES = 1 << 20


def _atomic_ops(trace: KernelTrace):
    """(atomic updates onto small hot tables, atomic updates spread over large targets)."""
    hot = spread = 0
    for rec in trace.ops:
        for op in rec.operands:
            if op.access != "atomic" or op.scope != GLOBAL:
                continue
            info = trace.buffers.get(op.buffer)
            target = trace.footprints.get(info.storage, info.nbytes) if info else 0
            if target <= HOT_ATOMIC_BYTES:
                hot += op.elements
            else:
                spread += op.elements
    return (hot, spread) if hot or spread else None


def _pipelined_g2s(trace: KernelTrace) -> bool:
    """A T.Pipelined loop (num_stages annotated) copies global -> shared: TileLang warp-specialises it
    on Hopper.  Serial loops that copy without the annotation are not (attrs "unpipelined")."""
    return any(op.pipeline and not op.attrs.get("unpipelined") and op.kind == "copy" and op.attrs.get("src_scope") == GLOBAL
               and op.attrs.get("dst_scope") == SHARED for op in trace.ops)


# TileLang places the shared buffers of a block in one dynamic allocation at offsets rounded up to
# 1 KiB (the lowered CUDA of the attention backward: its 256-byte delta and lse tiles each take 1 KiB)
SMEM_ALIGN = 1024
WARP_THREADS = 32


def _lifetimes(trace: KernelTrace, scopes: tuple) -> dict:
    """Storage -> (first op, last op) touching it, over the buffers of `scopes`, in program order; a
    buffer touched inside a loop lives for the whole loop (from the loop's first op to its last)."""
    ops = trace.ops
    loop_span: dict = {}
    for i, rec in enumerate(ops):
        for lid in rec.loops:
            lo, hi = loop_span.get(lid, (i, i))
            loop_span[lid] = (min(lo, i), max(hi, i))
    live: dict = {}
    for i, rec in enumerate(ops):
        lo, hi = loop_span[rec.loops[0]] if rec.loops else (i, i)
        for op in rec.operands:
            if op.scope in scopes:
                st = trace.storage_of(op.buffer)
                a, b = live.get(st, (lo, hi))
                live[st] = (min(a, lo), max(b, hi))
    return live


def _peak_live(live: dict, sizes: dict) -> int:
    """The most bytes live at once (`live`: storage -> lifetime, `sizes`: storage -> bytes), plus the
    storages no op touches (alive throughout)."""
    always = sum(n for st, n in sizes.items() if st not in live)
    peak = 0
    for t in sorted({a for a, _ in live.values()}):   # the live set only grows at a lifetime's start
        peak = max(peak, sum(sizes[st] for st, (a, b) in live.items() if a <= t <= b and st in sizes))
    return peak + always


def shared_allocation(trace: KernelTrace) -> int:
    """Shared memory one block allocates, as TileLang lays it out: its shared buffers merged into
    one allocation in which buffers whose lifetimes do not overlap take the same space (the
    attention forward's output tile reuses the query tile's, the backward's dV and dK tiles those
    of K and V), each rounded up to SMEM_ALIGN; a buffer touched inside a sequential loop lives
    for the whole loop; plus the workspace of a reduction that spans warps (tl::AllReduce: a
    4-byte word per thread).  The peak of the live bytes over the ops in program order; against
    Nsight Compute's shared memory per block all 450 kernels recorded by session 9 come within
    1 KiB, where the plain sum over the buffers had 313."""
    sizes = {}
    for b in trace.buffers.values():
        if b.scope == SHARED:
            n = -(-int(b.nbytes * b.stages) // SMEM_ALIGN) * SMEM_ALIGN
            sizes[b.storage] = max(sizes.get(b.storage, 0), n)
    live = _lifetimes(trace, (SHARED,))
    workspace = 0
    accumulators = gemm_accumulators(trace)
    for rec in trace.ops:
        if rec.kind == "reduce" and rec.operands:
            row_threads, _ = reduce_row_threads(rec, trace.threads_per_block, accumulators)
            if row_threads > WARP_THREADS:
                workspace = max(workspace, 4 * trace.threads_per_block)
    return _peak_live(live, sizes) + -(-workspace // SMEM_ALIGN) * SMEM_ALIGN


def live_fragment_bytes(trace: KernelTrace) -> int:
    """The most fragment and thread-local bytes a block holds at once, for the register estimate of
    a launch without a pipelined loop: a buffer lives from the first op that touches it to the last
    (the whole loop for one touched inside a loop), the peak over the ops in program order (as
    `shared_allocation` reads shared memory).  A fragment that element code writes and only the
    next op's reductions read (RMSNorm's x * x before its T.reduce_sum) is not held: the compiler
    reduces the values as it makes them (ptxas: 38 registers for the 512-thread bf16 RMSNorm of an
    8192 row, where holding both fragments would take 48)."""
    sizes: dict = {}
    for b in trace.buffers.values():
        if b.scope in (FRAGMENT, LOCAL):
            sizes[b.storage] = max(sizes.get(b.storage, 0), trace.block_nbytes(b))
    live = _lifetimes(trace, (FRAGMENT, LOCAL))
    touches: dict = {}
    for i, rec in enumerate(trace.ops):
        for op in rec.operands:
            if op.scope in (FRAGMENT, LOCAL):
                touches.setdefault(trace.storage_of(op.buffer), []).append((i, rec.kind, op.access == "read"))
    for st, t in touches.items():
        writes = [(i, k) for i, k, read in t if not read]
        reads = [(i, k) for i, k, read in t if read]
        last_write = max((i for i, _ in writes), default=-1)
        if (writes and reads and all(k in ("elementwise", "copy") for _, k in writes)
                and all(k == "reduce" and i == last_write + 1 for i, k in reads)):
            live.pop(st)
            sizes.pop(st, None)
    # Loads in flight: TileLang unrolls a thread's share of a tile and ptxas issues every load
    # before the first use, so the loaded values are live together (in the loaded dtype, packed)
    #  - element code that reads global memory straight into its math (C[i, j] = A[i, j] + B[i, j]
    #    in a T.Parallel): every such operand's share (ptxas: 72 registers for a 32x256 fp32 add
    #    of 256 threads, 110 for the three-input FMA, 254 for a 128x256 fp16 add of 128 threads);
    #  - a T.copy between global and shared memory outside a pipelined loop, which goes through
    #    registers: its tile (42-44 registers for 128 B a thread);
    #  - a T.copy from global into a fragment that only the next op's reduction reads (dropped
    #    above): its loaded values (the bf16 row_absmax: 30 registers, not the fp32 fragment's 48)
    for i, rec in enumerate(trace.ops):
        if not rec.executions:
            continue
        held = 0.0
        if rec.kind == "elementwise" and rec.attrs.get("parallel_elements"):
            held = _element_load_bytes(rec)
        elif rec.kind == "copy" and not rec.pipeline:
            src, dst = rec.attrs.get("src_scope"), rec.attrs.get("dst_scope")
            dropped = dst in (FRAGMENT, LOCAL) and not any(
                trace.storage_of(o.buffer) in live for o in rec.operands if o.scope == dst)
            if {src, dst} == {GLOBAL, SHARED} or (src == GLOBAL and dropped):
                held = _copy_global_bytes(rec)
        if held:
            key = ("loads in flight", i)
            live[key], sizes[key] = (i, i), int(held)
    return _peak_live(live, sizes)


def _element_load_bytes(rec) -> float:
    """The global bytes one run of a T.Parallel element op loads into its math (its tile: each
    thread's unrolled share is loaded into registers before the first use)."""
    return sum(o.elements * dtype_bytes(o.dtype) for o in rec.operands
               if o.scope == GLOBAL and o.access == "read" and o.element) \
        * rec.attrs["parallel_elements"] / rec.executions


def _copy_global_bytes(rec) -> float:
    """One execution's global-memory bytes of a copy (its tile, which passes through registers
    when no cp.async or TMA moves it)."""
    return sum(o.elements * dtype_bytes(o.dtype) for o in rec.operands if o.scope == GLOBAL) / rec.executions


def unpipelined_tile_bytes(trace: KernelTrace) -> float:
    """Bytes a block holds in registers for a serial loop's global -> shared tile copies when the
    loop is not pipelined (T.Pipelined(num_stages=0) or a plain loop: walk's "unpipelined"): no
    cp.async or TMA, so each tile goes through registers, and ptxas issues all of an iteration's
    loads (A's and B's tiles) before their stores to shared memory -- the same loads in flight as
    live_fragment_bytes counts for copies outside a loop."""
    return float(sum(_copy_global_bytes(rec) for rec in trace.ops
                     if rec.kind == "copy" and rec.attrs.get("unpipelined") and rec.executions
                     and rec.attrs.get("src_scope") == GLOBAL and rec.attrs.get("dst_scope") == SHARED))


def pipelined_element_load_bytes(trace: KernelTrace) -> float:
    """Bytes a block holds in registers for element code inside a pipelined loop that loads global
    memory into its math (upstream's linear attention: q = Q * scale in a T.Parallel; ptxas 150
    registers where the fragments and the base give 128): no cp.async can move it (the value is not
    a plain or zero-filled load, as a convolution's gathered tile is), so a thread's unrolled share
    of the tile is loaded into registers, all loads before the first use, as live_fragment_bytes
    counts outside a loop.  The largest one op holds (the ops of an iteration run one after another)."""
    held = 0.0
    for rec in trace.ops:
        if not (rec.pipeline and rec.kind == "elementwise" and rec.executions
                and rec.attrs.get("parallel_elements") and not rec.attrs.get("unpipelined")):
            continue
        dst = [trace.buffers.get(o.buffer) for o in rec.operands if o.scope == SHARED and o.access == "write"]
        if any(b is not None and b.stages > 1 for b in dst) or all(k[2] == "select" for k in rec.ops_per_exec):
            continue                        # a plain (or zero-filled) move into a shared tile: cp.async
        held = max(held, _element_load_bytes(rec))
    return held


def _element_gather_producer(trace: KernelTrace) -> bool:
    """A pipelined loop fills a shared tile element by element from global memory (a
    convolution's gathered, zero-padded input tile): no TMA can load it, so TileLang's warp
    specialisation gives the loop a producer of cp.async threads as many as the consumers
    (lowered CUDA of upstream's convolution: `threadIdx.x < 256` produce, __launch_bounds__(512, 1),
    no setmaxnreg; Nsight: 512 threads, 58 registers, 2 blocks per SM)."""
    return any(op.pipeline and not op.attrs.get("unpipelined") and op.kind == "elementwise"
               and any(o.scope == SHARED and o.access == "write" for o in op.operands)
               and any(o.scope == GLOBAL and o.access == "read" for o in op.operands) for op in trace.ops)


def _setmaxnreg(trace: KernelTrace) -> tuple[int, int] | None:
    """(producer, consumer) registers a thread gets after setmaxnreg in a warp-specialised launch,
    or None where the kernel turns it off (T.no_set_max_nreg / T.disable_warp_group_reg_alloc;
    TileLang's AnnotateWarpGroupRegAlloc then leaves the launch's one allocation alone).  Explicit
    T.set_max_nreg(count, 0 / 1) or annotate_*_reg_* calls set the counts, else TileLang's 24 / 240."""
    producer, consumer = PRODUCER_REGS, CONSUMER_REGS
    for name, *args in trace.register_hints:
        if name in ("tl.no_set_max_nreg", "tl.disable_warp_group_reg_alloc"):
            return None
        if name == "tl.set_max_nreg" and len(args) == 2:
            if args[1]:
                consumer = args[0]
            else:
                producer = args[0]
        elif name == "tl.annotate_producer_reg_dealloc" and args:
            producer = args[0]
        elif name == "tl.annotate_consumer_reg_alloc" and args:
            consumer = args[0]
    return producer, consumer


def occupancy(trace: KernelTrace, dev: Device) -> Occupancy:
    threads = max(trace.threads_per_block, 1)
    # (a kernel compiled with tl.disable_warp_specialized keeps every thread on loads and math)
    ws = (dev.tensor_instruction == "wgmma" and _pipelined_g2s(trace)
          and not trace.pass_config("tl.disable_warp_specialized", False))
    smem = shared_allocation(trace)
    gather = ws and _element_gather_producer(trace)
    rebalance = _setmaxnreg(trace) if ws and not gather else None
    if rebalance:
        launched = threads + PRODUCER_THREADS
        regs = min(dev.max_regs_per_thread, int(dev.regs_per_sm // launched) // 8 * 8)
    else:
        # without setmaxnreg every thread gets what the fragments need (a cp.async producer: as
        # many producer warps as consumers, one register allocation for all of them; a
        # warp-specialised launch that turns setmaxnreg off (T.no_set_max_nreg): its producer
        # warpgroup and the consumers, sized by the live fragments -- the GDN KKT: ptxas 79
        # registers for 256 threads, 3 blocks per SM, where setmaxnreg would have pinned 1)
        one_ws_allocation = ws and not gather
        launched = threads + PRODUCER_THREADS if one_ws_allocation else 2 * threads if gather else threads
        if any(op.pipeline for op in trace.ops) and not one_ws_allocation:
            # (a liveness reading here gives the grouped GEMMs ptxas's blocks per SM but moves their
            # DRAM the wrong way: session 15, Tried and not kept)
            regs = BASE_REGS_PER_THREAD + int(np.ceil((trace.fragment_bytes_per_block()
                                                         + unpipelined_tile_bytes(trace)
                                                         + pipelined_element_load_bytes(trace)) / 4 / threads))
        else:
            regs = BASE_REGS_LIVE + int(np.ceil(live_fragment_bytes(trace) / 4 / threads))
        regs = min(regs, dev.max_regs_per_thread)
        regs = int(np.ceil(regs / 8) * 8)       # registers are allocated in units of 8 per thread
    limits = {"blocks": dev.max_blocks_per_sm,
              "threads": dev.max_threads_per_sm // launched if launched else dev.max_blocks_per_sm}
    if smem:
        reserved = 1024                          # per-block shared memory the runtime reserves (cc >= 8.0)
        limits["shared memory"] = int(dev.smem_per_sm // (smem + reserved)) if dev.smem_per_sm else 1
    if regs and dev.regs_per_sm:
        limits["registers"] = int(dev.regs_per_sm // (regs * launched))
    if trace.resident_blocks and dev.sm_count:
        # a persistent kernel's real grid: no more of its (virtual) blocks run at once than it launched
        limits["persistent grid"] = max(1, trace.resident_blocks // dev.sm_count)
    limiter = min(limits, key=limits.get)
    consumer_regs = regs
    if rebalance and dev.regs_per_sm:
        producer_regs, most = rebalance
        consumer_regs = min(most, int((dev.regs_per_sm - producer_regs * PRODUCER_THREADS) // threads) // 8 * 8)
    return Occupancy(max(limits[limiter], 1), limiter, regs, smem, launched, ws, max(threads // 128, 1), consumer_regs,
                     launch_error(smem, launched, dev) or gemm_lowering_error(trace, dev.tensor_instruction))


def launch_error(smem: int, threads: int, dev: Device) -> str | None:
    """Why a block of `smem` bytes of shared memory and `threads` threads cannot launch on `dev`
    (the runtime refuses: "Failed to set the allowed dynamic shared memory size"), or None."""
    if dev.smem_per_block and smem > dev.smem_per_block:
        return (f"needs {smem / 1024:.0f} KiB of shared memory per block, the {dev.name} allows "
                f"{dev.smem_per_block / 1024:.0f} KiB: it cannot launch")
    if dev.max_threads_per_block and threads > dev.max_threads_per_block:
        return f"{threads} threads per block, the {dev.name} allows {dev.max_threads_per_block}: it cannot launch"
    return None


def _schedule(block_times: np.ndarray, order: np.ndarray, slots: int) -> float:
    """Greedy list scheduling of blocks (in launch order) onto `slots`: the makespan."""
    work = block_times[order]
    if work.size == 0:
        return 0.0
    if (work == work[0]).all():
        return float(np.ceil(work.size / slots) * work[0])
    if work.size > 50_000:
        return max(float(work.sum() / slots), float(work.max()))
    heap = [0.0] * min(slots, work.size)
    for w in work:
        t = heapq.heappop(heap)
        heapq.heappush(heap, t + float(w))
    return max(heap)


def _schedule_first_wave(block_times: np.ndarray, first, order: np.ndarray, slots: int) -> float:
    """_schedule with the first wave -- the first `slots` blocks in launch order, which start
    together -- at their own times (`first`, per block; model.pipeline_at_clock: every tile a DRAM
    round trip away, the stores at the whole GPU's request rate)."""
    if first is None or np.array_equal(first, block_times):
        return _schedule(block_times, order, slots)
    first = np.broadcast_to(np.asarray(first, dtype=np.float64), block_times.shape)
    wave0, rest = order[:slots], max(block_times.size - slots, 0)
    f0 = first[wave0]
    if (block_times == block_times.flat[0]).all() and (f0 == f0[0]).all() and f0[0] >= block_times.flat[0]:
        # identical blocks, the first wave's longer: each later wave starts when it ends
        return float(f0[0] + np.ceil(rest / slots) * block_times.flat[0])
    bt = np.array(block_times, dtype=np.float64)
    bt[wave0] = f0
    return _schedule(bt, order, slots)


# launches longer than this (in blocks) are scheduled in part (_schedule_followers)
FOLLOWER_SIM_BLOCKS = 16384


def _schedule_followers(block_times: np.ndarray, follower_times: np.ndarray, first, groups: np.ndarray,
                        order: np.ndarray, slots: int, lag: float) -> tuple[float, float]:
    """_schedule_first_wave for blocks in groups that read the same tiles in their loops (the
    blocks of one attention head): a block that starts `lag` (a DRAM round trip) or more after the
    first block of its group finds the tiles the group fetched in L2 and runs at its follower time,
    but it cannot pass the group's first block (it would fetch the tiles itself): it ends no
    earlier than that block's start plus its own in-step time.  Blocks that start with the first
    of their group wait on the same fills, in step.  Measured (runs 115, 122-124): the one-stage
    64x32 attention iterates at its compute (~0.56 us) where the heads' blocks straddle waves and
    fall out of step, at ~0.75-0.80 us where every wave holds whole heads that start together.
    Returns (makespan, share of blocks that ran as followers).  Past FOLLOWER_SIM_BLOCKS (and 8
    waves) the first blocks in launch order are scheduled both ways and the whole launch's in-step
    makespan scaled by their ratio (the schedule is steady after its first waves)."""
    first = block_times if first is None else np.broadcast_to(np.asarray(first, dtype=np.float64), block_times.shape)
    limit = max(FOLLOWER_SIM_BLOCKS, 8 * slots)
    if order.size > limit:
        head = order[:limit]
        t, share = _schedule_followers(block_times, follower_times, first, groups, head, slots, lag)
        return t / _schedule_first_wave(block_times, first, head, slots) * _schedule_first_wave(
            block_times, first, order, slots), share
    n = order.size
    heap = [0.0] * min(slots, n)
    lead: dict = {}
    followers = 0
    bt, ft, f0, grp = block_times.tolist(), follower_times.tolist(), first.tolist(), groups.tolist()
    for i, b in enumerate(order.tolist()):
        t = heapq.heappop(heap)
        slow = f0[b] if i < slots else bt[b]
        g = grp[b]
        s = lead.setdefault(g, t)
        if t - s < lag:
            end = t + slow
        else:
            end = max(t + ft[b], s + slow)
            followers += 1
        heapq.heappush(heap, end)
    return max(heap), followers / max(n, 1)


def _unit_times_per_sm(op_counts, dev: Device) -> tuple[float, float, float]:
    """(tensor, CUDA-core, SFU) seconds of one op's whole work at one SM's share of peak."""
    cuda = sfu = 0.0
    for (unit, dtype), n in op_counts.flops.items():
        if unit == CUDA:
            rate = dev.cuda_rate(dtype)
            cuda += n / rate if rate else 0.0
        elif unit == SFU:
            sfu += n / dev.sfu_rate if dev.sfu_rate else 0.0
    return _tensor_time_per_sm(op_counts, dev), cuda * dev.sm_count, sfu * dev.sm_count


def _tensor_time_per_sm(op_counts, dev: Device, clock: float = 1.0) -> float:
    """Tensor-core seconds of one op's whole work at one SM's share of peak, the tensor rates
    scaled by `clock` (the SM clock over dev.tensor_clock_hz, at which they were measured)."""
    tc = 0.0
    for (unit, dtype), n in op_counts.flops.items():
        if unit == TENSOR:
            rate = dev.tensor_rate(dtype) * clock
            tc += n / rate if rate else 0.0
    return tc * dev.sm_count


def _op_time_per_sm(op_counts, dev: Device) -> tuple[float, float]:
    """(tensor seconds, CUDA-core + SFU seconds) of one op's whole work at one SM's share of peak."""
    tc, cuda, sfu = _unit_times_per_sm(op_counts, dev)
    return tc, cuda + sfu


def stream_time(table: tuple, tile_bytes: float, stages: int) -> float:
    """Seconds per iteration of a DRAM-fed tile pipeline (measured table of (tile bytes, stages,
    seconds)): linear in tile bytes between the measured sizes, the smallest size's time below
    them, proportional to bytes above them; stages beyond the measured ones use the deepest."""
    depths = sorted({s for _, s, _ in table})
    depth = min(max(stages, depths[0]), depths[-1])
    pts = sorted((b, t) for b, s, t in table if s == depth)
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    if tile_bytes >= xs[-1]:
        return ys[-1] * tile_bytes / xs[-1]
    return float(np.interp(tile_bytes, xs, ys))


def dram_tile_round_trip(dev: Device, tile_bytes: float) -> float:
    """Seconds from issuing one block's tile loads to their data in shared memory when they come
    from DRAM with nothing queued ahead: the one-stage DRAM pace of the smallest measured tile
    (calibrate's tile_stream: latency plus that tile's transfer) less that tile's transfer at one
    SM's load rate, plus this tile's (0: not measured).  H200: 566 ns + bytes / 105 GB/s."""
    if not (dev.dram_stream and dev.tma_load_rate_per_sm):
        return 0.0
    one = [(b, t) for b, st, t in dev.dram_stream if st == 1]
    if not one:
        return 0.0
    b0, t0 = min(one)
    return max(t0 - b0 / dev.tma_load_rate_per_sm, 0.0) + tile_bytes / dev.tma_load_rate_per_sm


def division_chain(rec, trace: KernelTrace, dev: Device) -> np.ndarray | float:
    """Seconds per block a record's IEEE fp32 divisions keep each of its threads busy, one after
    another: TileLang emits them without fast math, each a MUFU.RCP, a few dependent FFMA and an
    FCHK around a branch to its slow path, so a thread's independent divisions do not overlap
    (tileroof.gpu.divchain: ~30 ns each on the H200 at 1-4 warps per scheduler, where a multiply
    takes ~1 ns).  Threads of one block and of co-resident blocks run their chains side by side.
    0 where the device has not measured it, and for kernels compiled with tl.enable_fast_math
    (--use_fast_math: approximate division, a MUFU.RCP and an FMUL that pipeline like a multiply)."""
    if not dev.division_latency_s or trace.fast_math:
        return 0.0
    n = sum(v for (unit, _dt, name), v in rec.ops_per_exec.items() if unit == CUDA and name == "div")
    if not n:
        return 0.0
    return rec.per_block * (n / max(trace.threads_per_block, 1)) * dev.division_latency_s


def division_chain_total(rec, trace: KernelTrace, dev: Device) -> float:
    """division_chain summed over the blocks (0.0 without one, no array made)."""
    chain = division_chain(rec, trace, dev)
    return float(np.sum(chain)) if isinstance(chain, np.ndarray) else chain


def per_block_share(trace: KernelTrace) -> np.ndarray:
    """Each block's share of the launch's work: its op executions over all of them (equal shares
    where no op says)."""
    n = max(trace.num_blocks, 1)
    tot = np.zeros(n)
    for rec in trace.ops:
        if rec.executions:
            tot += rec.per_block / rec.executions
    return tot / tot.sum() if tot.sum() else np.full(n, 1.0 / n)


def _op_compute_s(oc, dev: Device) -> float:
    """Seconds one op's arithmetic and SIMT instructions keep the whole GPU busy: the slowest of its
    FLOP units (tensor, CUDA core, SFU) and its instruction pipes (simt_issue_times)."""
    tc, cuda, sfu = _unit_times_per_sm(oc, dev)
    n = max(dev.sm_count, 1)
    shim = Counts(ops=[oc], flops=oc.flops, bytes=oc.bytes, conversions=0, unique_bytes=0, footprints={},
                  inst=oc.inst)
    return max([tc / n, cuda / n, sfu / n] + list(simt_issue_times(shim, dev).values()))


def shared_pipe_bytes(c) -> float:
    """Bytes' worth of the SM's shared-memory data pipe the work of `c` (a Counts or an OpCounts)
    takes (128 bytes a wavefront): its shared bytes, the bank-conflict replays, and its warp
    shuffles -- a warp's SHFL takes one wavefront of the same pipe (Nsight Compute on the blind2
    Hadamard transforms, run 139: the shared wavefronts equal the stores' and loads' wavefronts
    plus one per warp shuffle, to 0.3 %); `inst[P_SHFL]` counts thread shuffles, 4 bytes each."""
    shared = sum(v for (lv, _d), v in c.bytes.items() if lv == SHARED)
    return shared + c.excess.get(("shared", "conflict"), 0) + c.inst.get(P_SHFL, 0) * 4


def loop_operand_pipe_bytes(loop_ops, occ, dev: Device) -> float:
    """Bytes' worth of the SM's shared-memory pipe (128 a wavefront, one wavefront a clock) a
    warp-specialised loop's mma.sync gemms take to read their operands: ldmatrix, or element loads
    with their bank replays (counts.scalar_operands); wgmma reads shared memory itself, and the
    producer's TMA writes are not on this pipe.  Nsight Compute on the int8 / fp8 M/N-major probes
    (runs 161-162): 302 M wavefronts, the pipe ~90 % busy over the launch.  (Without warp
    specialisation the kernel's shared term already holds them.)"""
    if not (occ.warp_specialized and dev.smem_bytes_per_clk):
        return 0.0
    return sum(shared_pipe_bytes(oc) for _, oc in loop_ops if oc.instruction == "mma")


def block_start_interval(dev: Device, threads: int) -> float:
    """One SM's interval between the starts of two blocks of `threads` threads: the block floor,
    or the launch of the block's warps one after another where that takes longer
    (tileroof.gpu.blockrate, run 144 on the H100: store-only blocks of 32-512 threads every 79.4 ns,
    of 1024 threads every 137.4 ns = 32 warps x 4.29 ns)."""
    return max(dev.block_start_s, warp_launch_span(dev, threads))


def warp_launch_span(dev: Device, threads: int) -> float:
    """How long after a block's first warp its last one starts: the SM launches them one after
    another, one every warp_start_s."""
    return -(-threads // 32) * dev.warp_start_s


def phase_overlap(lock_step, overlapped, k: int):
    """The first wave's chain with k blocks an SM (block_chain): the lock-step sum less (k - 1) / k
    of its excess over the fully overlapped bound."""
    if k <= 1:
        return lock_step
    return np.minimum(lock_step, overlapped + (lock_step - overlapped) / k)


def block_chain(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy, mem, wave: np.ndarray):
    """(seconds each block of the first wave (`wave`: their indices) takes, seconds each of them
    would take uncontended) for a launch without a pipelined loop; None where the device lacks the
    rates.

    Nothing overlaps a block's phases but other blocks: each op runs after the one before it, so a
    block loads, waits for its data, computes, then stores (TileLang's T.copy to shared memory ends
    in a barrier; element code waits on its loads before it computes).  The first wave starts
    together and runs its phases in lock-step, so its blocks' time is the sum of their ops' phases,
    each the slowest of
      - its bytes at the wave's share of DRAM (the share of reads that misses L2, and the writes)
        and of the L2 slices (every byte), side by side;
      - its compute at the wave's share of the SMs (_op_compute_s: FLOP units and instruction pipes;
        its shared-memory bytes and bank-conflict replays on the shared pipes);
      - each thread's IEEE division chain (a latency: the wave's blocks run theirs side by side);
    plus a DRAM round trip before each group of ops that read global memory (the first touch waits
    for its data; copies into registers issued back to back wait together) and the row reductions'
    latency.  The blocks after the first wave overlap each other's phases: model._timed gives them
    the roofline's time for their share of the work, but no less than each SM's own chain takes
    uncontended, the second array: the same phases with every op's bytes at one block's stream
    rate (the profile's fitted block_stream_bps, benchmarks/fit_block_stream.py) in place of the
    wave's DRAM share and its compute at the SM's share over its co-resident blocks (run 130: a
    wave of the one-block-per-SM SiLU-mul takes 4.6-4.7 us from the second on, its bytes 3.2 us at
    the DRAM rate, its division chain 1.9 us; the roofline overlapped the chain with other SMs'
    memory, -30 %).
    tileroof.gpu.measure's probe_chain_* cases (run 109): a one-wave copy of 32 KiB per block takes
    3.7 us of body where its bytes at the copy bandwidth take 2.1.
    Each block's warps start one every warp_start_s, and an SM starts the first wave's blocks one
    block-start interval apart, each block then taking no less than its own uncontended chain
    (tileroof.gpu.blockrate, runs 144 and 151: one wave of 8 one-copy blocks of 256 threads a SM,
    5.07 us measured, 4.49 modelled in lock-step alone, 4.64 with the starts)."""
    if not (dev.dram_bw and trace.ops):
        return None
    rt = dram_tile_round_trip(dev, 0.0)
    n_first = len(wave)
    g_read = counts.bytes.get((GLOBAL, "read"), 0)
    f_miss = min(mem.dram_read / g_read, 1.0) if g_read else 1.0
    # the timing flush's dirty lines that the launch's allocations evict (memory.flush_writeback), each
    # op's share by the lines it allocates, written back at the cost per byte flushwb measured for
    # the op's read share: into a read phase they cost more than the reads' own bytes, into a write
    # phase nearly nothing (timeline sets 17-18: a one-wave copy's reads arrive at ~3 TB/s)
    allocated = mem.dram_read + mem.dram_write + mem.dirty_at_end
    wb_total = memory.flush_writeback(mem.dram_read, mem.dram_write + mem.dirty_at_end, dev.flush_dirty_bytes,
                                      dev.l2_bytes)
    # the block's warps start one after another: its last warp runs the chain that much later
    span = warp_launch_span(dev, occ.threads_per_block)
    first = np.full(n_first, span)
    alone = np.full(n_first, span)
    pipe = np.zeros(n_first)           # the block's co-resident blocks' time on the SM's shared pipe
    stream = dev.fitted.get("block_stream_bps", 0.0)
    per_sm = resident_blocks(trace, dev, occ)
    sched = scheduler_share(dev, occ.threads_per_block)
    loading = False                    # the previous op read global memory (its loads are in flight)
    ov_moved = np.zeros(n_first)
    ov_comp = np.zeros(n_first)
    ov_fixed = np.full(n_first, span)
    op_spread = mem.op_spread if len(mem.op_spread) == len(trace.ops) else ((1.0, 1.0),) * len(trace.ops)
    for rec, oc, (kr, kw) in zip(trace.ops, counts.ops, op_spread):
        execs = rec.per_block[wave]
        share = execs / rec.executions if rec.executions else np.zeros(n_first)
        rd = oc.bytes.get((GLOBAL, "read"), 0) + oc.excess.get(("global", "sector_waste"), 0)
        wr = oc.bytes.get((GLOBAL, "write"), 0) + oc.bytes.get((GLOBAL, "atomic"), 0)
        dram = rd * f_miss + wr
        t_dram = (rd * f_miss * kr + wr * kw) / dev.dram_bw
        if wb_total and dram and allocated:
            t_dram += wb_total * dram / allocated * writeback_cost_per_byte(dev, rd * f_miss / dram)
        moved = max(t_dram, (rd + wr) / dev.l2_bw if dev.l2_bw else 0.0)
        comp = _op_compute_s(oc, dev)
        t_shared = 0.0
        if dev.shared_bw and not occ.warp_specialized:
            # the op's shared-memory traffic, bank-conflict replays and shuffles included, on the
            # SMs' shared pipes
            t_shared = shared_pipe_bytes(oc) / dev.shared_bw
            comp = max(comp, t_shared)
        chain = division_chain(rec, trace, dev)
        chain = chain[wave] if np.ndim(chain) else chain
        if rec.kind == "reduce":
            chain = chain + dev.reduce_latency_s * execs
        first += np.maximum(share * max(moved, comp) * n_first, chain)
        ov_moved += share * moved * n_first
        ov_comp += np.maximum(share * comp * n_first, chain)
        if stream:
            # one block's compute at the whole SM's rates (co-resident blocks fill each other's
            # dependency stalls), or at the share of them its warps' schedulers have
            alone += np.maximum(np.maximum(share * (rd + wr) / stream, share * comp * n_first / per_sm / sched),
                                chain)
            pipe += share * t_shared * n_first
        reads = rd > 0
        if reads and not loading:
            trip = np.where(execs > 0, rt, 0.0)
            first += trip
            alone += trip
            ov_fixed += trip
        # copies into registers issue their loads and go on (the next load joins them); a copy into
        # shared memory ends in a barrier, and element code uses what it loads
        loading = bool(reads and rec.kind == "copy" and rec.attrs.get("dst_scope") in (FRAGMENT, LOCAL))
    # k blocks of the wave on one SM: the DRAM serves their loads one after another over the load
    # phase, not all at its end, so the blocks served first compute while the others still wait,
    # and the SM's phases overlap by a k-th of the shorter side: a phase of loads T and compute C
    # takes max(T, C) + min(T, C) / k, not T + C (one block an SM: the lock-step sum).  Summed over
    # the ops: the round trips and warp starts, plus the larger of the bytes' and the compute's
    # (division chains and reduction latencies counted with the compute) sums, plus a k-th of the
    # lock-step sum's excess over that
    k = min(per_sm, max(-(-n_first // max(dev.sm_count, 1)), 1))
    first = phase_overlap(first, ov_fixed + np.maximum(ov_moved, ov_comp), k)
    # but the SM's one shared-memory pipe serves its co-resident blocks in turn, and one block alone
    # keeps it full (a queue of independent requests): the SM takes no less than all of its blocks'
    # shared wavefronts and shuffles (the Hadamard transforms' exchanges and shuffles, run 139);
    # while one block waits on its loads or a reduction, the others use the pipe
    if stream:
        # an SM starts the first wave's blocks one after another too (blocks go to the SMs in turn,
        # so the k-th block of an SM starts k block-start intervals after the launch), and a late
        # one still takes its own chain uncontended
        starts = (np.arange(n_first) // max(dev.sm_count, 1)) * block_start_interval(dev, occ.threads_per_block)
        first = np.maximum(first, starts + alone)
    return first, (np.maximum(alone, pipe) if stream else None)


def read_groups_after_loop(trace: KernelTrace, counts: Counts) -> int:
    """Groups of ops after a kernel's last pipelined-loop op that read global memory: each waits a
    DRAM round trip with nothing else of its block to hide it (the loop's tiles are done), as
    block_chain counts them (copies into registers issued back to back wait together).  The gated
    delta net's K K^T reads its chunk's gates after the gemm loop, then masks with them; the split-KV
    decode attentions' combine reads each split's partial output and log-sum-exp after its loop."""
    last_loop = max((i for i, rec in enumerate(trace.ops) if rec.pipeline), default=len(trace.ops))
    groups, loading = 0, False
    for rec, oc in list(zip(trace.ops, counts.ops))[last_loop + 1:]:
        reads = oc.bytes.get((GLOBAL, "read"), 0) > 0 and rec.executions > 0
        groups += reads and not loading
        loading = reads and rec.kind == "copy" and rec.attrs.get("dst_scope") in (FRAGMENT, LOCAL)
    return groups


def consumer_compute(tensor: float, other: float) -> float:
    """Compute time of the consumer warpgroups per iteration: their gemms, then their CUDA-core and
    SFU work, one after the other, however many warpgroups there are.  TileLang's consumer
    warpgroups wait on the same tile barriers and so run in phase: both issue their gemm, then both
    run their softmax on the SM's shared units (timeline set 9, run 57: the two-warpgroup
    flash-attention iterations take 1.02-1.06x this serial sum at the clock they ran; a
    one-warpgroup softmax hidden under the other's gemm would make them 0.7-0.8x of it)."""
    return tensor + other


def buffer_hold(t_compute: float, t_tensor: float, gemms: int) -> float:
    """How long a single-stage buffer is held by its consumer per iteration: the whole iteration
    for one gemm, only its own gemm when the loop has several (flash attention: K for S = QK^T,
    V for O += PV)."""
    return t_compute if gemms == 1 else t_tensor / gemms


def ws_refill_period(latency: float, hold: float, stages: int) -> float:
    """The shortest iteration a warp-specialised pipeline's tile loads allow: the producer refills
    a stage only once the consumers have released it, after the gemm that reads it, so S stages
    cover one tile latency plus the time a stage is held ((latency + hold) / S; the one-stage rule
    with S = 1).  Timeline set 15 (run 92): the two-stage 128x128x32 GEMM's iterations alternate
    530 / 360 ns, a pair of 890 ns = one iteration's compute plus a ~640 ns tile latency."""
    return (latency + hold) / stages


def wgmma_shape_factor(rec, dev: Device, instruction: str = "wgmma") -> float:
    """How much longer a gemm's tensor work takes than its FLOPs at the tensor rate because its
    wgmma instructions are narrow: an m64nNk16 with N below dev.wgmma_min_n takes as long as one
    with N = wgmma_min_n (calibrate's gemm_loop: 64x32x128 runs at 0.6 of the 64x128x128 rate).
    N per instruction: the gemm's N (up to 256), split when the warpgroups outnumber its m64
    slices."""
    if instruction != "wgmma" or not dev.wgmma_min_n or rec.kind not in ("gemm", "gemm_sp"):
        return 1.0
    a = rec.attrs
    warpgroups = max(a.get("threads", 128) // 128, 1)
    n_split = max(warpgroups // max(a["m"] // 64, 1), 1)
    n_inst = min(a["n"] / n_split, 256)
    return max(dev.wgmma_min_n / n_inst, 1.0) if n_inst > 0 else 1.0


def shared_hops(loop_ops, total_iters: float) -> float:
    """Ops of a pipelined loop's body that stage a fragment (or thread-local values) into shared
    memory for a later gemm of the same iteration (linear attention's masked s and h, the attention
    backward's dS, MLA decode's S), per iteration: each makes that gemm wait for the store and a
    barrier (tileroof.gpu.gemm_pipe --chain: ~150 cycles a hop besides the gemm's own cost)."""
    recs = [rec for rec, _ in loop_ops]
    n = 0.0
    for i, rec in enumerate(recs):
        if rec.kind in ("gemm", "gemm_sp"):
            continue
        staged = {o.buffer for o in rec.operands if o.scope == SHARED and o.access in ("write", "readwrite")}
        if not staged or not any(o.scope in (FRAGMENT, LOCAL) and o.access == "read" for o in rec.operands):
            continue
        # as many hops an iteration as the first later gemm reading the staged buffer runs (one
        # record stands for repeated statements: a chain of n gemms staged n - 1 times)
        g = next((g for g in recs[i + 1:] if g.kind in ("gemm", "gemm_sp")
                  and any(o.buffer in staged and o.access == "read" for o in g.operands)), None)
        if g is not None and total_iters:
            n += g.executions / total_iters
    return n


def loop_iterations(loop_ops) -> np.ndarray:
    """Trip count per block of the T.Pipelined loop: executions per block of its first
    global->shared copy (or of its first op)."""
    copies = [rec for rec, _ in loop_ops if rec.kind == "copy" and rec.attrs.get("src_scope") == GLOBAL]
    driver = copies[0] if copies else loop_ops[0][0]
    trips = driver.attrs.get("pipeline_trips")
    if trips is not None and np.size(trips) == np.size(driver.per_block):
        return np.asarray(trips, dtype=np.float64)
    # a SIMT record (code outside T.Parallel) counts one execution per thread
    return driver.per_block.astype(np.float64) / driver.attrs.get("simt_threads", 1.0)


def pipelined_loop(trace: KernelTrace, counts: Counts):
    """(the T.Pipelined loop's (record, counts) pairs, trip count per block, total trips), or
    None for a kernel without one (or whose loop never runs)."""
    loop_ops = [(rec, oc) for rec, oc in zip(trace.ops, counts.ops) if rec.pipeline]
    if not any(o.scope == GLOBAL for rec, _ in loop_ops for o in rec.operands):
        # a T.Pipelined loop that touches no global memory (a Hadamard transform's register
        # shuffles, num_stages=1) streams nothing: it is one more phase of the block's chain
        return None
    iters = loop_iterations(loop_ops)
    total_iters = float(iters.sum())
    return (loop_ops, iters, total_iters) if total_iters > 0 else None


def consumer_registers(occ: Occupancy) -> tuple[int, int]:
    """(consumer threads per block, registers one consumer thread has)."""
    return min(max(occ.consumer_warpgroups * 128, 1), occ.threads_per_block), occ.consumer_regs_per_thread or occ.regs_per_thread


def spilled_share(rec, occ: Occupancy) -> float:
    """Share of a gemm's accumulator a consumer thread stores to local memory and reloads every
    iteration, when the accumulator alone (plus the thread's base registers) does not fit its
    registers; 0 when it fits.

    A wgmma needs the whole fragment of one instruction (m64 x N_inst: N_inst / 2 fp32 registers
    per thread) in registers.  The registers left after the base hold `slots` such fragments; with
    `frags` > slots fragments cycled through them every iteration, the best the compiler can do is
    keep slots - 1 in place and pass the others through the last slot.  128x256 on one warpgroup:
    2 fragments of 128 registers, 1 slot, the whole accumulator moves; 256x128: 4 of 64, 3 slots,
    half moves (Nsight Compute on the spill probes: 0.77-1.05 and 0.53 of the accumulator written to
    L2 per iteration)."""
    consumer_threads, regs = consumer_registers(occ)
    if not regs or rec.kind not in ("gemm", "gemm_sp"):
        return 0.0
    a = rec.attrs
    acc = a["m"] * a["n"] / consumer_threads            # accumulator registers per consumer thread
    if acc + BASE_REGS_PER_THREAD <= regs:
        return 0.0
    warpgroups = max(consumer_threads // 128, 1)
    n_split = max(warpgroups // max(a["m"] // 64, 1), 1)
    frag = 64 * min(a["n"] / n_split, 256) / 128        # registers of one instruction's fragment
    frags = acc / frag
    slots = max(int((regs - BASE_REGS_PER_THREAD) // frag), 1)
    if frags <= slots:
        return 0.0
    return min((frags - (slots - 1)) / frags, 1.0)


def spilled_accumulators(loop_ops, occ: Occupancy) -> list:
    """(record, spilled share) of the loop's gemms whose accumulator does not fit the registers a
    consumer thread has (spilled_share)."""
    out = [(rec, spilled_share(rec, occ)) for rec, _ in loop_ops]
    return [(rec, s) for rec, s in out if s > 0]


def spill_memory(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy,
                 mem: memory.MemoryEstimate) -> memory.MemoryEstimate:
    """`mem` plus the local-memory traffic of spilled gemm accumulators (their spilled share stored
    and reloaded every iteration), through L2 and, for the share the hit curve loses, DRAM."""
    loop = pipelined_loop(trace, counts)
    spilled = spilled_accumulators(loop[0], occ) if loop else []
    if not spilled:
        return mem
    loop_ops, iters, total_iters = loop
    per_iter = sum(share * rec.attrs["m"] * rec.attrs["n"] * dtype_bytes(rec.attrs["c_dtype"])
                   for rec, share in spilled)
    resident = min(occ.blocks_per_sm * dev.sm_count, max(trace.num_blocks, 1))
    # between two uses of a spilled line L2 also takes in the tiles the wave streams in one
    # iteration (its distinct bytes over the block's iterations)
    streamed = mem.wave_bytes / max(total_iters / max(trace.num_blocks, 1), 1.0)
    return memory.local_spill(mem, per_iter, total_iters, resident, dev.l2_bytes, dev.l2_partitions, dev.l2_hit_curve,
                              streamed)


def gemm_iteration_law(dev: Device) -> bool:
    """Whether the device times a pipelined gemm iteration from its parts (math at the per-clock
    tensor peak plus the measured fixed cycles) rather than at the sustained matmul rate."""
    return bool(dev.tensor_per_clk and dev.gemm_iteration_cycles and dev.tensor_clock_hz
                and dev.tensor_instruction == "wgmma")


def resident_blocks(trace: KernelTrace, dev: Device, occ: Occupancy) -> int:
    """Blocks resident together on the busiest SM: as many as occupancy allows, or fewer when the
    grid has fewer blocks than slots (the block scheduler spreads them over the SMs first)."""
    if not dev.sm_count:
        return occ.blocks_per_sm
    return min(occ.blocks_per_sm, max(-(-trace.num_blocks // dev.sm_count), 1))


def nows_law(dev: Device) -> bool:
    """Whether the device measured the pipelined gemm iteration without warp specialisation
    (gemm_pipe --nows: gemm_iteration_cycles_nows and tensor_rate_share_nows)."""
    return bool(dev.gemm_iteration_cycles_nows and dev.tensor_rate_share_nows)


def nows_iteration(dev: Device, math_cycles: float, n_gemm: int) -> float:
    """Cycles of one block's pipelined iteration without warp specialisation (tl.disable_warp_
    specialized; its loads cp.async, issued and waited for by the consumer threads): its math at
    the measured share of the per-clock tensor peak plus the measured fixed cycles for each gemm
    (gemm_pipe --nows, run 68 on the H200: 2322-2844 FLOP/clk/SM against the 4096 peak, 165-194
    cycles; each gemm of an iteration waits for its result, so each pays the fixed part -- an
    assumption: the probe has one gemm)."""
    return math_cycles / dev.tensor_rate_share_nows + max(n_gemm, 1) * dev.gemm_iteration_cycles_nows


def subpartitions_used(dev: Device, threads: int) -> int:
    """SM sub-partitions (warp schedulers) one block's warps occupy, or 0 where the device does not
    say: a warp stays on the scheduler it was given, so a block of fewer warps than schedulers
    issues from that many of them only, and its math and SIMT work go at that share of the SM's
    rates (the catalog's warp_schedulers: four processing blocks an SM on Hopper, each with its
    own scheduler, H100 whitepaper; tileroof.gpu.gemm_pipe --warps measures it)."""
    if not dev.warp_schedulers:
        return 0
    return min(max(-(-threads // 32), 1), dev.warp_schedulers)


def scheduler_share(dev: Device, threads: int) -> float:
    """The share of an SM's schedulers (and of its rates) one block of `threads` threads issues
    from: subpartitions_used over the SM's schedulers (1 where the device does not say)."""
    sub = subpartitions_used(dev, threads)
    return sub / dev.warp_schedulers if sub else 1.0


def _small_block_warps(dev: Device, threads: int) -> int | None:
    """Warps of a block that fills fewer than all of the SM's schedulers, or None (a larger block,
    or a device that does not say how many schedulers it has)."""
    sub = subpartitions_used(dev, threads)
    return -(-threads // 32) if sub and sub < dev.warp_schedulers else None


def small_block_iteration(dev: Device, math_cycles: float, n_gemm: int, threads: int) -> float | None:
    """Cycles of one pipelined iteration without warp specialisation of a block of fewer warps
    than the SM's schedulers, from what the device measured for such blocks (gemm_pipe --warps:
    [warps, math rate over those warps' schedulers' share of the peak, fixed cycles], linear
    between the measured block sizes): `math_cycles` (at the SM's per-clock peak) at that share,
    plus the fixed cycles for each gemm; None for larger blocks or without the measurement."""
    pts = dev.small_block_nows
    warps = _small_block_warps(dev, threads)
    if not pts or warps is None:
        return None
    ws = [p[0] for p in pts]
    rate = float(np.interp(warps, ws, [p[1] for p in pts]))
    fixed = float(np.interp(warps, ws, [p[2] for p in pts]))
    return math_cycles / scheduler_share(dev, threads) / rate + max(n_gemm, 1) * fixed


def small_block_coresidency(dev: Device, blocks: int, threads: int) -> float | None:
    """The SM's time for one iteration of each of `blocks` co-resident blocks of fewer warps than
    schedulers over one block's alone, from the device's measured curve against the warps on the
    SM (gemm_pipe --warps: one- and two-warp blocks contend by their warps together, 1.40 at four,
    ~2.1 at eight): curve(blocks x warps) / curve(warps); None for larger blocks or without it."""
    pts = dev.coresidency_warps
    warps = _small_block_warps(dev, threads)
    if not pts or warps is None:
        return None
    return _along_curve(pts, max(blocks, 1) * warps) / _along_curve(pts, warps)


def _along_curve(pts, x: float) -> float:
    """A measured co-residency curve at x: linear between its points, along its last segment past
    them."""
    xs, ys = memory.curve_arrays(pts)
    if x >= xs[-1] and len(xs) > 1:
        return float(ys[-1] + (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]) * (x - xs[-1]))
    return float(np.interp(x, xs, ys))


def coresidency(dev: Device, blocks: float) -> float:
    """The SM's time for one iteration of each of `blocks` co-resident blocks without warp
    specialisation, over one block's iteration alone: the measured curve (gemm_pipe --nows: 1.69 at
    2, 2.44 at 4 blocks per SM; linear between points, along the last segment past them), or
    `blocks` (no overlap) without it."""
    pts = dev.coresidency_nows
    if not pts or blocks <= 1:
        return float(max(blocks, 1))
    return _along_curve(pts, blocks)


def gemm_fixed_cycles(dev: Device, n_gemm: int, warpgroups: int) -> float:
    """Cycles a pipelined iteration with `n_gemm` gemms adds to its math: with one consumer
    warpgroup, what gemm_pipe measured for one gemm (gemm_iteration_cycles) plus, for each further
    gemm, what attn_pipe measured a second one to add (gemm_wait_cycles); with several, the exposed
    part over their share of the math (the *_overlapped pair).  Without the second measurement each
    gemm pays the first one's cost."""
    if warpgroups > 1:
        first, more = dev.gemm_iteration_cycles_overlapped, dev.gemm_wait_cycles_overlapped
    else:
        first, more = dev.gemm_iteration_cycles, dev.gemm_wait_cycles
    if n_gemm <= 0:
        return 0.0
    return first + (n_gemm - 1) * (first if more is None else max(more, 0.0))


def accumulator_store_time(nbytes: float, requests: float, dev: Device, per_sm_l2: float) -> float:
    """One block's store of its gemm accumulators straight from the fragments (T.copy(C_local, C)):
    its bytes at the SM's share of the L2 bandwidth, or, where the device measured it (timeline set
    8), its L2 write requests one after another -- s x max(R - R0, 0), the first R0 queued for
    free: 0.7 / 2.0 / 4.6 us for 64x128 / 128x128 / 128x256 fp16 tiles on the H200, whatever the K
    and the waves, where their bytes at the L2 share take 0.2 / 0.5 / 0.9 us.  Staged through
    shared memory the same tiles take 0.5-0.9 us (those copies are timed as bytes)."""
    t_bytes = nbytes / per_sm_l2 if per_sm_l2 else 0.0
    t_requests = dev.store_request_s * max(requests - dev.store_queue_requests, 0.0)
    return max(t_bytes, t_requests)


def register_spill_factor(need: float, regs: float, dev: Device) -> float:
    """Slowdown of a consumer thread whose fragments need `need` registers where it has `regs`:
    the share of its fragments that lives in local memory, (need - regs) / need, at the cost the
    device measured for a wgmma accumulator that lives there whole (accumulator_spill_factor: 4.6x
    on the H200).  Flash-attention forward with 128x128 tiles on one consumer warpgroup (S and O
    accumulators of 128 registers each, P, row statistics: 1.35x the 240 registers; ptxas spills
    848 B a thread) runs 2.1x its unspilled time; this gives 1.94x, the plain ratio 1.35x.  Without
    the measured factor: the ratio."""
    if not regs or need <= regs:
        return 1.0
    if dev.accumulator_spill_factor:
        return 1.0 + (dev.accumulator_spill_factor - 1.0) * (need - regs) / need
    return need / regs


def block_pipeline(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy, mem=None, clock_hz=None):
    """Per-block times for a kernel whose main loop is T.Pipelined, or None.  clock_hz: the SM
    clock the kernel runs at (default: the sustained-matmul clock dev.tensor_clock_hz)."""
    at_clock = pipeline_at_clock(trace, counts, dev, occ, mem)
    return None if at_clock is None else at_clock(clock_hz)


def pipeline_at_clock(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy, mem=None):
    """block_pipeline as a function of the SM clock, or None: what does not depend on the clock
    (the loop's work, spills, traffic, latencies) is worked out once; the returned
    at_clock(clock_hz=None, clock=1.0) gives (block times, pipeline figures) at clock_hz with the
    tensor rates scaled by `clock` (clock_hz over dev.tensor_clock_hz; _clocked's fixed point
    calls it once per step)."""
    loop = pipelined_loop(trace, counts)
    if loop is None:
        return None
    loop_ops, iters, total_iters = loop
    c = dev.fitted
    # one consumer warpgroup issuing wgmma cannot keep the tensor cores busy alone (Hopper)
    one_wg = occ.consumer_warpgroups < 2 and any(oc.instruction == "wgmma" for _, oc in loop_ops)
    wg_eff = c.get("tensor_efficiency_one_warpgroup", 1.0) if one_wg else 1.0
    other = g2s = 0.0
    # fragments that do not fit the consumer threads' registers spill to local memory
    consumer_threads, regs = consumer_registers(occ)
    need = counts.held_fragment_bytes / consumer_threads / 4
    spill = register_spill_factor(need, regs, dev)
    # a wgmma needs its whole accumulator in registers: when one gemm's accumulator alone does
    # not fit, every instruction waits on local memory (calibrate's gemm_loop: 4.8x slower)
    # (measured on 128x256, whose whole accumulator moves; a gemm that moves a share of it waits
    # on that share)
    acc_slow = {}
    if dev.accumulator_spill_factor:
        acc_slow = {id(rec): 1.0 + (dev.accumulator_spill_factor - 1.0) * share
                    for rec, share in spilled_accumulators(loop_ops, occ)}
    acc_spill = max(acc_slow.values(), default=1.0)
    if acc_spill > 1.0:
        spill = 1.0                     # the measured factor is the whole slowdown
    n_reduce = 0
    sync_read = 0.0                    # global bytes element-wise code loads in the loop (not T.copy)
    law = gemm_iteration_law(dev)
    math_cycles = 0.0                  # tensor work at the per-clock peak, one SM's share, all blocks
    n_gemm = 0
    tensor_work = []                   # (counts, slowdown) of the loop's ops: their tensor time is the clock's
    for rec, oc in loop_ops:
        _, cuda, sfu = _unit_times_per_sm(oc, dev)
        slow = wgmma_shape_factor(rec, dev, oc.instruction) * acc_slow.get(id(rec), 1.0)
        tensor_work.append((oc, slow))
        if law:
            math_cycles += sum(n / dev.tensor_flops_per_clk(dtype) for (unit, dtype), n in oc.flops.items()
                               if unit == TENSOR) * slow
            n_gemm += rec.kind in ("gemm", "gemm_sp")
        # fragment arithmetic inside a loop issues below the FP32 peak (calibrate's reduce_chain:
        # 1.5x the time at the peak rate, whatever the number of warps)
        # integer bit operations (a dequantisation's nibble decoding) are no FLOPs: their
        # instructions on the integer pipe join the same chain
        bits = oc.int_bits
        # (the compiler issues part of them as IMAD on the FMA-heavy pipe beside it: the integer
        # pipe takes dev.integer_alu_share, the measured split, and bounds the chain)
        other += cuda * (dev.loop_alu_factor or 1.0) + sfu + (
            bits * dev.integer_alu_share / dev.alu_rate * dev.sm_count if dev.alu_rate else 0.0)
        # selects and compares (a causal mask's T.if_then_else: one a score element) are ALU-pipe
        # instructions with no FLOPs.  With one consumer warpgroup (one consumer warp a scheduler)
        # they issue in its dependent chain like its arithmetic: the records' causal flash-attention
        # iterations take 51 / 104 / 185 ns more than non-causal ones of the same tiles at block_N
        # 64 / 128 / 256, the selects at the ALU pipe's rate x loop_alu_factor 55 / 110 / 220.  With
        # two, causal and non-causal iterations differ by less than half of that and both run below
        # the serial sum (NOTES, session 25: an overlap of the warpgroups the model lacks), so the
        # selects are not charged there
        if dev.alu_rate and occ.consumer_warpgroups < 2:
            other += oc.selects * (dev.loop_alu_factor or 1.0) / dev.alu_rate * dev.sm_count
        # IEEE divisions: a chain in each thread (division_chain), summed over the blocks' iterations
        other += division_chain_total(rec, trace, dev)
        if rec.kind == "reduce":
            n_reduce += rec.executions
        g2s += oc.bytes.get((GLOBAL, "read"), 0)
        if rec.kind != "copy":
            sync_read += oc.bytes.get((GLOBAL, "read"), 0)
    stages = max(op.pipeline_stages for op, _ in loop_ops)
    per_sm_l2 = dev.l2_bw / dev.sm_count if dev.l2_bw else 0.0
    latency = c.get("load_latency_s", 0.0)
    # blocks resident on one SM share its tensor cores, ALUs and L2 port: as many as occupancy
    # allows, or fewer when the grid has fewer blocks than slots (the block scheduler spreads
    # them over the SMs first: ceil(blocks / SMs) on the busiest)
    share = resident_blocks(trace, dev, occ)
    n_wg = occ.consumer_warpgroups
    # the L2 slices see the tile requests left after the two SMs of a TPC merge identical ones
    merged = mem.l2_slice_read / mem.l2_read if (mem is not None and mem.l2_read) else 1.0
    t_l2 = share * (g2s * merged / total_iters) / per_sm_l2 if per_sm_l2 else 0.0
    groups = max(sum(1 for rec, _ in loop_ops if rec.kind in ("gemm", "gemm_sp")
                     and any(o.scope == SHARED for o in rec.operands)), 1)
    # tiles that come from DRAM stream at the measured pace of a DRAM-fed tile pipeline of that
    # tile size and depth (calibrate's tile_stream); the share of the loop's bytes that misses L2
    # follows it, the rest the fitted load latency
    f_dram = min(mem.dram_read / mem.l2_read, 1.0) if (mem is not None and mem.l2_read) else 0.0
    streamed = bool(dev.dram_stream and f_dram > 0 and g2s)
    t_stream_fed = stream_time(dev.dram_stream, share * g2s / total_iters, stages) if streamed else 0.0
    # work outside the loop (accumulator clear, epilogue stores) at one SM's share of the rates
    rest_other = rest_bytes = rest_div = 0.0
    store_bytes = store_requests = 0.0
    rest_work = []                     # the counts of the ops outside the loop (their tensor time: the clock's)
    t_after = read_groups_after_loop(trace, counts) * dram_tile_round_trip(dev, 0.0)
    for rec, oc in zip(trace.ops, counts.ops):
        if rec.pipeline:
            continue
        _, o = _op_time_per_sm(oc, dev)
        rest_work.append(oc)
        rest_other += o
        rest_div += division_chain_total(rec, trace, dev)
        nbytes = oc.bytes.get((GLOBAL, "write"), 0) + oc.bytes.get((GLOBAL, "read"), 0) \
            + oc.bytes.get((GLOBAL, "atomic"), 0) + oc.excess.get(("global", "sector_waste"), 0)
        if oc.store_requests:
            store_bytes += nbytes
            store_requests += oc.store_requests
        else:
            rest_bytes += nbytes
    nblocks = max(trace.num_blocks, 1)
    t_store = accumulator_store_time(store_bytes / nblocks, store_requests / nblocks, dev, per_sm_l2)
    # the first wave's blocks also reach their epilogue together: their store requests leave at
    # the rate the whole GPU's L2 takes them (timeline set 11: ~75 requests per ns; the per-SM law
    # holds for the staggered later waves): the last block is done when all the wave's requests are
    n_wave = min(nblocks, occ.blocks_per_sm * dev.sm_count)
    t_store0 = t_store
    if store_requests and dev.store_request_rate_all:
        t_store0 = max(t_store, n_wave * (store_requests / nblocks) / dev.store_request_rate_all)
    # a block's fixed cost besides its iterations (start, first tile, exit): measured by
    # calibrate's block_stream where the profile has it, else one load latency
    prologue = dev.block_fixed_s or latency

    # a branch on run-time data around the loop's body (a block-sparse mask's tile check): the
    # lowered pipeline tests it on every trip, taken or not, before each of the consumer's
    # statements, once more for each gemm (its wait), and before the wait and the release of each
    # group of tile loads one gemm consumes -- a chain of dependent loads and branches, at the
    # fitted cost per test (data_branch_check_s).  Read in the lowered CUDA: the block-sparse
    # attention's consumer tests 18 times a trip (12 statements, 2 gemms, K and V: 2 groups), a
    # block-sparse GEMM's 4 (its gemm, A and B: one group)
    branch_ops = [rec for rec, _ in loop_ops if rec.attrs.get("data_branch")]
    loads = [rec for rec in branch_ops if rec.kind == "copy" and rec.attrs.get("src_scope") == GLOBAL]
    gemms = [rec for rec in branch_ops if rec.kind in ("gemm", "gemm_sp")]
    load_groups = set()
    for ld in loads:
        dst = ld.operands[1].buffer if len(ld.operands) > 1 else None
        consumer = next((i for i, g in enumerate(gemms) if any(o.buffer == dst for o in g.operands)), None)
        load_groups.add(("gemm", consumer) if consumer is not None else ("load", id(ld)))
    n_checks = (len(branch_ops) - len(loads)) + len(gemms) + 2 * len(load_groups)
    t_checks = n_checks * c.get("data_branch_check_s", 0.0)
    all_trips = iters
    if branch_ops and branch_ops[0].attrs.get("pipeline_all_trips") is not None \
            and np.size(branch_ops[0].attrs["pipeline_all_trips"]) == np.size(iters):
        all_trips = np.asarray(branch_ops[0].attrs["pipeline_all_trips"], dtype=np.float64)

    # without warp specialisation the consumer threads issue the loads, wait for them and run the
    # gemms themselves (cp.async): one block's iteration is one chain (nows_iteration), and element
    # loads from global memory in the loop wait for their data every iteration
    # (measured with two stages: a one-stage loop, whose loads wait for the previous iteration's
    # consumers, keeps the one-stage rule below)
    nows = bool(law and stages >= 2 and not occ.warp_specialized and nows_law(dev))
    round_trip = dram_tile_round_trip(dev, g2s / total_iters) if g2s else 0.0
    streaming_sms = min(max(trace.num_blocks, 1), dev.sm_count)
    sync_wait = (stream_time(dev.dram_stream, sync_read / total_iters, 1)
                 if (nows and sync_read and dev.dram_stream) else 0.0)

    # blocks whose loops read the very same tiles (the blocks of one attention head): one that
    # starts a DRAM round trip or more after the first of its group finds the group's tiles in L2,
    # and waits a tile's L2 latency instead of the fitted one (_schedule_followers)
    sharers = memory.loop_sharer_groups(trace) if (dev.l2_tile_latency_s and dev.tma_load_rate_per_sm and g2s) else None
    l2_tile = (dev.l2_tile_latency_s + g2s / total_iters / groups / dev.tma_load_rate_per_sm
               if sharers is not None else 0.0)
    # the followers' share of the loop's DRAM bytes: what misses beyond the group's one fetch
    group_size = sharers.size / (int(sharers.max()) + 1) if sharers is not None else 1.0
    f_follow = max(f_dram - 1.0 / group_size, 0.0) / (1.0 - 1.0 / group_size) if group_size > 1 else f_dram

    # (a device without the measured hop cost or without an SM clock: none)
    n_hops = shared_hops(loop_ops, total_iters) if dev.gemm_hop_cycles else 0.0
    other_work = other
    lsu_bytes = loop_operand_pipe_bytes(loop_ops, occ, dev)

    def at_clock(clock_hz=None, clock: float = 1.0):
        clock_hz = clock_hz or dev.tensor_clock_hz
        # each hop a wait in every iteration's chain (a latency: not a share of the SM's throughput)
        hop = n_hops * dev.gemm_hop_cycles / clock_hz if (n_hops and clock_hz) else 0.0
        other = other_work + hop * total_iters
        tc = 0.0
        for oc, slow in tensor_work:
            tc += _tensor_time_per_sm(oc, dev, clock) * slow
        eff = wg_eff
        chain = 0.0
        if nows and math_cycles:
            eff = 1.0
            # a block of fewer warps than schedulers: its work at their share of the SM's rates (its
            # gemms at the rate and fixed cycles measured for such blocks, where the device has them),
            # its co-resident blocks contending by the warps on the SM (the measured curve; without
            # it, by the schedulers they fill: three one-warp blocks, none)
            sched = scheduler_share(dev, occ.threads_per_block)
            t_tens = small_block_iteration(dev, math_cycles / total_iters, n_gemm, occ.threads_per_block)
            if t_tens is None:
                t_tens = nows_iteration(dev, math_cycles / total_iters / sched, n_gemm)
            t_tens /= clock_hz
            chain = consumer_compute(t_tens, other / total_iters / sched) * spill
            co = small_block_coresidency(dev, share, occ.threads_per_block) or coresidency(dev, share * sched)
            t_compute = chain * co
            t_tc_iter = t_tens * spill * co
            chain += sync_wait
        elif law and math_cycles:
            # Hopper, measured (gemm_pipe): one consumer warpgroup's iteration is its math at the
            # per-clock peak plus a fixed cost (barrier round trip, wgmma wait); with several, one's
            # fixed cost hides behind the others' math until it exceeds them
            eff = 1.0
            t_math = math_cycles / total_iters / clock_hz
            fixed = gemm_fixed_cycles(dev, n_gemm, n_wg) / clock_hz
            t_tens = max(t_math, t_math / n_wg + fixed) if n_wg > 1 else t_math + fixed
            if occ.warp_specialized:
                # warp-specialised blocks resident together (a cp.async producer leaves registers for
                # two) share the SM's tensor and CUDA cores, not the latency of each other's gemm
                # waits: a block's iteration is its own chain or its share of the SM's throughput,
                # whichever is longer (one block per SM: the chain)
                t_compute = max(consumer_compute(t_tens, other / total_iters),
                                share * consumer_compute(t_math, other_work / total_iters)) * spill
                t_tc_iter = max(t_tens, share * t_math) * spill
            else:
                # the consumer threads issue their own loads (no producer): co-resident blocks
                # take turns with the whole iteration
                t_compute = (consumer_compute(t_tens, other_work / total_iters) * share + hop) * spill
                t_tc_iter = t_tens * spill * share
        else:
            t_compute = (consumer_compute(tc / eff, other_work) * share / total_iters + hop) * spill
            t_tc_iter = (tc / eff) * spill * share / total_iters
        if not (law and math_cycles):
            # the fitted per-iteration overhead stands for what the gemm iteration law measured
            # (gemm_pipe times whole TileLang iterations: barriers, TMA issue, wgmma waits)
            t_compute += c.get("iteration_overhead_s", 0.0)
        # each row reduction (shuffles across the threads of a row, then a barrier) adds its latency to
        # the iteration's dependent chain (reduce_chain: ~36 ns on the H200, not hidden by more warps)
        t_compute += dev.reduce_latency_s * n_reduce / total_iters * share
        t_stream = 0.0
        if streamed:
            t_stream = t_stream_fed
            if round_trip and stages > 1 and streaming_sms < dev.sm_count:
                # tile_stream's pace is every SM streaming at once (DRAM-bandwidth-bound from 16 KiB
                # tiles): fewer streaming SMs share that bandwidth, down to the pipeline's round
                # trip, (round trip + compute) / stages (timeline set 11: 8 blocks of 128x128 at
                # 3 stages, 420 ns an iteration)
                t_stream = max(t_stream_fed * streaming_sms / dev.sm_count, (round_trip + t_compute) / stages)
            if stages == 1:
                t_stream += buffer_hold(t_compute, t_tc_iter, groups)
        hold = buffer_hold(t_compute, t_tc_iter, groups)

        def tile_wait(tile_latency: float, dram_share: float) -> float:
            """The iteration the loop's tile loads allow when a tile takes `tile_latency`, with
            `dram_share` of its tiles at the DRAM-fed pace (tile_stream) instead."""
            if stages > 1 and occ.warp_specialized:
                wait = ws_refill_period(tile_latency, hold, stages)
            elif stages > 1:
                # cp.async without a producer (lowered CUDA of the grouped GEMM: at the top of trip
                # k the threads load tile k + S - 1 into the stage trip k - 1 freed, then wait for
                # tile k): S - 1 loads are in flight while a trip computes
                wait = tile_latency / (stages - 1)
            else:
                # one buffer per operand: the next tile of an operand loads once its consumer is
                # done, so only the compute of the loop's later consumers hides it (flash attention:
                # K then V).  Without a producer, `hold` is the SM's co-resident blocks' compute
                # taken in turns (t_compute): one block waits its tile and its own compute while
                # the others compute, so its trip is the latency plus its own share, and the SM's
                # compute bounds the iteration apart (t_iter's max) -- the serial num_stages-0
                # GEMMs at 2-5 blocks an SM, +12 … +44 % with the whole share added (session 27)
                wait = tile_latency + (hold / share if not occ.warp_specialized and share > 1 else hold)
            return (1.0 - dram_share) * wait + dram_share * t_stream if streamed else wait

        # (nothing in the loop loads from global memory -- register shuffles of a Hadamard
        # transform: no tile to wait for, the loop is its work)
        t_latency = tile_wait(latency, f_dram) if g2s else 0.0
        t_smem = lsu_bytes / total_iters / (dev.smem_bytes_per_clk * clock_hz) * share if lsu_bytes else 0.0
        t_iter = max(t_compute, chain, t_l2, t_latency, t_smem)
        # a follower of its group's first block waits its tiles' L2 latency (_schedule_followers)
        t_iter_f = (max(t_compute, chain, t_l2, t_smem, min(tile_wait(l2_tile, f_follow), t_latency))
                    if l2_tile else t_iter)
        # the first wave's blocks start together (timeline set 11: within 0.3 us), so the blocks
        # sharing a tile ask for it at the same moment and all wait for its DRAM fill: every
        # tile of their loop arrives a DRAM round trip after its loads were issued, however many
        # blocks share it (set 11: 128x128 tiles at 3 stages, 32 KiB an iteration, 0.42-0.46 us
        # whether 8 or 128 blocks run, where later waves' staggered blocks hit the L2)
        # a stage's buffer is reloaded only once its gemm has finished, so S stages cover one
        # round trip plus one iteration's compute: the period is at least (round trip + compute) / S
        t_latency0 = t_latency
        if g2s and round_trip and occ.warp_specialized and stages > 1:
            t_latency0 = max(t_latency, (round_trip + t_compute) / stages)
        t_iter0 = max(t_compute, chain, t_l2, t_latency0, t_smem)
        rest_tc = 0.0
        for oc in rest_work:
            rest_tc += _tensor_time_per_sm(oc, dev, clock)
        # (division chains are latency: co-resident blocks run theirs side by side, not x share)
        t_rest = share * ((rest_tc + rest_other) / nblocks + ((rest_bytes / nblocks) / per_sm_l2 if per_sm_l2 else 0.0)
                          + t_store) + rest_div / nblocks + t_after
        block_times = iters * t_iter + all_trips * t_checks + prologue + t_rest
        follower_times = iters * t_iter_f + all_trips * t_checks + prologue + t_rest if l2_tile else None
        # (t_rest holds the co-resident blocks' stores at the SM's rate, share x t_store; the first
        # wave's stores take t_store0 for all of the wave's blocks together, those on this SM included)
        first_wave_times = (iters * t_iter0 + all_trips * t_checks + prologue + t_rest
                            + max(t_store0 - share * t_store, 0.0))
        terms = {"compute": t_compute, "l2": t_l2, "latency": t_latency}
        if chain > t_compute:
            terms["chain"] = chain
        if t_smem:
            terms["shared"] = t_smem
        return block_times, {"iteration_s": t_iter, "stages": stages, "tile_bytes": g2s / total_iters,
                             "pipelined": not all(op.attrs.get("unpipelined") for op, _ in loop_ops),
                             "loop_iterations": total_iters / nblocks,
                             "iteration_bound": max(terms, key=terms.get),
                             "terms_s": terms, "tensor_efficiency": eff, "prologue_epilogue_s": prologue + t_rest,
                             "register_spill_factor": spill, "accumulator_spill_factor": acc_spill,
                             "reductions_per_iteration": n_reduce / total_iters, "consumer_warpgroups": n_wg,
                             "gemm_iteration_law": bool(law and math_cycles),
                             "nows_iteration_law": bool(nows and math_cycles), "resident_blocks": share,
                             "branch_checks_per_trip": n_checks, "branch_check_s": t_checks,
                             "shared_hops_per_iteration": n_hops,
                             "first_wave_iteration_s": t_iter0, "first_wave_block_s": first_wave_times,
                             "follower_iteration_s": t_iter_f, "follower_block_s": follower_times,
                             "sharer_groups": sharers, "follower_lag_s": round_trip}
    return at_clock


def drifts(pipe_info: dict, time_s: float, dram_if_drifting: float | None, dev: Device) -> bool:
    """Whether the blocks of a launch drift apart (tileroof.gpu.timeline: 24 of the H200's SMs run
    memory-bound blocks ~1.2x faster than the other 108, and blocks sharing a tile then reach it
    too far apart for L2 to keep it).

    An SM whose pipeline prefetches far enough ahead to cover the loaded DRAM round trip of a tile
    (its stages - 1 iterations at least the one-stage time of a DRAM-fed tile pipeline, calibrate's
    tile_stream) is not held by that latency, so its pace follows its share of the memory system,
    which differs between SMs; with a shorter window every SM waits the same round trip and they
    keep pace.  The shares set the pace only where memory is the bound: in step already (the
    iteration's L2 share at least its compute), or once drifting (the re-fetches take longer at
    DRAM bandwidth than the launch in step); a compute-bound SM runs its math at the same clock as
    the others.  Timeline sets 5 and 6: the unswizzled 64x256x64 GEMM with 2, 3 stages (window
    0.5, 1.0 us against 1.34 us) keeps pace (spread 0.2, 2.0 %), with 4 and 5 drifts (7-10 %);
    64x128 with 6 stages and 64x192 with 5 drift, 128x128 one-warpgroup and 128x256 two-warpgroup
    tiles with 4 (windows past the round trip, compute-bound both ways) do not.  A launch that is
    compute-bound in step and would be memory-bound drifting drifts only once its window covers
    COMPUTE_BOUND_DRIFT_WINDOW round trips (run 152 on the H100: the 128x128 bf16 GEMMs stay in
    step at 1.07 and 1.18, drift from 1.44 on)."""
    if not pipe_info or not dram_if_drifting or not dev.dram_stream or not dev.dram_bw:
        return False
    stages = pipe_info.get("stages", 1)
    if stages < 2 or not pipe_info.get("tile_bytes"):
        return False
    window = (stages - 1) * prefetch_iteration(pipe_info)
    round_trip = stream_time(dev.dram_stream, pipe_info["tile_bytes"], 1)
    if window < round_trip:
        return False
    terms = pipe_info.get("terms_s") or {}
    share_bound = terms.get("l2", 0.0) >= terms.get("compute", 0.0)
    if share_bound:
        return True
    # compute-bound in step: its SMs keep the same pace until the window outruns the round trip
    # by a margin (COMPUTE_BOUND_DRIFT_WINDOW)
    return window >= COMPUTE_BOUND_DRIFT_WINDOW * round_trip and dram_if_drifting / dev.dram_bw > time_s


# a launch compute-bound in step drifts apart only when its prefetch window covers this many
# DRAM round trips: between the largest window seen in step (1.28: the H200's 128x128 s4 GEMMs,
# f 0.0-0.2 of the way to the drifting DRAM; the H100's 128x128 s4 at 1.07 and 1.18, runs 144
# and 152) and the smallest seen drifting (1.44: the H100's two-warpgroup 128x128 s5, run 152;
# then 1.57-3.24 on the H100 and 1.61-2.31 on the H200), at their geometric mean
# (benchmarks/drift_position.py)
COMPUTE_BOUND_DRIFT_WINDOW = 1.36


def prefetch_iteration(pipe_info: dict) -> float:
    """Time of one pipeline iteration when the loads are not waiting on latency (the slower of its
    compute and its share of the L2 bandwidth): how fast the producer's prefetch window moves."""
    terms = pipe_info.get("terms_s") or {}
    return max(terms.get("compute", 0.0), terms.get("l2", 0.0)) or pipe_info["iteration_s"]


def _clocked(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy, tile_mem, mem, assumptions: list,
             order):
    """(timed, clock ratio, clocked) of one memory state: the block pipeline and the launch's
    resources at the power-limited SM clock.  The measured tensor rates hold at the clock of
    sustained matmuls (dev.tensor_clock_hz); a kernel that keeps its tensor cores less busy, or
    that runs with idle gaps between launches, draws less power and runs at a higher clock.  Only
    the tensor rates are re-scaled (the CUDA-core rates were measured at their own, unthrottled
    clock).  order: the blocks' launch order (memory.launch_order)."""
    at_clock = pipeline_at_clock(trace, counts, dev, occ, tile_mem)
    pipe = at_clock() if at_clock else None
    timed = _timed(trace, counts, dev, occ, pipe, mem, assumptions, order)
    clock = 1.0
    # the power that pulls the clock down is the tensor cores': CUDA-core and SFU work (attention's
    # softmax) draws little (Nsight: two-warpgroup attention runs at 1700-1790 MHz, the sustained
    # matmul at 1481)
    busy = sum(v for k, v in timed[2].items() if k.startswith("tensor "))
    clocked = bool(dev.tensor_clock_hz) and any(k.startswith("tensor ") for k in timed[2])
    if clocked and tensor_boost_clock(dev) > dev.tensor_clock_hz:
        for _ in range(6):
            f = power_limited_clock(busy / timed[0], timed[0], dev)
            if abs(f / dev.tensor_clock_hz - clock) < 1e-3:
                break
            clock = f / dev.tensor_clock_hz
            pipe = at_clock(f, clock) if at_clock else None
            timed = _timed(trace, counts, dev, occ, pipe, mem, [], order, clock)
    return timed, clock, clocked


# bounds at which memory sets a block's pace: a block whose tiles hit L2 runs faster than one
# whose tiles come from DRAM (memory.drift_misses: such followers catch up with their leader)
MEMORY_PACED = frozenset({"dram", "l2", "pipeline (l2)", "pipeline (latency)"})


def memory_paced(bound: str) -> bool:
    """Whether a launch timed at `bound` runs at the pace its memory traffic sets."""
    return bound in MEMORY_PACED


def block_stagger(trace: KernelTrace, dev: Device, occ: Occupancy) -> float:
    """c, how far apart the blocks sharing a tile start in later waves: blocks sharing an SM finish
    in the order they arrived and those replacing them start as staggered, so sharers `gap`
    launches apart start gap / slots x c block times apart (memory.drift_misses), c = n x warps x
    the profile's step (n blocks per SM, warps resident on the SM; tileroof.gpu.timeline sets 13, 14
    and 16, benchmarks/stagger.py: c 0.12-0.69 over 2-8 blocks per SM, the step per block and warp
    0.0048, derive.stagger_entry).  0 with one block per SM."""
    per_sm = resident_blocks(trace, dev, occ)
    if per_sm < 2 or not dev.block_stagger_per_warp:
        return 0.0
    warps = per_sm * -(-occ.threads_per_block // 32)
    return per_sm * warps * dev.block_stagger_per_warp


def estimate(trace: KernelTrace, counts: Counts, dev: Device) -> Timing:
    occ = occupancy(trace, dev)
    slots = occ.blocks_per_sm * dev.sm_count
    nblocks = max(trace.num_blocks, 1)
    # the launch with its blocks in step, and (where the device knows how fast SMs drift apart) the
    # same launch with them drifting apart: TPC mates then no longer send their requests together,
    # so nothing merges
    # (co-resident blocks finish in arrival order while the SM sets their pace; once memory sets it --
    # drifting -- they do not: the L2-bound 64x64 launch of timeline set 13 steps 0.007 per level)
    stagger = block_stagger(trace, dev, occ)
    states = ((dev.pace_spread, dev.l2_merge_group, stagger, False, dev.block_stagger_gap_deciles),)
    if stagger:
        # the same staggered launch with its sharers kept apart (used where the SM sets the pace)
        states += ((dev.pace_spread, dev.l2_merge_group, stagger, True, dev.block_stagger_gap_deciles),)
    if dev.pace_spread_drifting > dev.pace_spread:
        states += ((dev.pace_spread_drifting, 1, 0.0),)
    order = memory.launch_order(trace)
    tile_mem, *others = memory.estimates(trace, slots, dev.l2_bytes, dev.l2_partitions, dev.l2_hit_curve, states,
                                         order)
    if dev.dram_spread_read or dev.dram_spread_write:
        # what the runs the waves sweep cost the DRAM, the same in every memory state
        kr, kw, op_spread = spread_costs(trace, dev, memory.wave_runs(trace, slots, order), tile_mem)
        tile_mem, *others = (replace(m, spread_read=kr, spread_write=kw, op_spread=op_spread)
                             for m in (tile_mem, *others))
    apart = others.pop(0) if stagger else None
    drifted = others
    mem = spill_memory(trace, counts, dev, occ, tile_mem)
    notes: list = []
    timed, clock, clocked = _clocked(trace, counts, dev, occ, tile_mem, mem, notes, order)
    apart_note = None
    if apart is not None and apart.dram_bytes > tile_mem.dram_bytes and not memory_paced(timed[1]):
        # staggered sharers that the SM paces keep their gaps, hit or miss: the distinct bytes
        # between two of them are every sharer's window (memory.drift_misses, apart).  Whether the SM
        # sets the pace is read in step, the state the launch starts in (its first wave): the
        # stagger forms there; run 97's 64x128x32 launch, latency-bound once its sharers are apart,
        # still re-fetches as they do (1428 MB measured, 1583 apart, 695 caught up)
        apart_mem = spill_memory(trace, counts, dev, occ, apart)
        apart_notes: list = []
        apart_timed = _clocked(trace, counts, dev, occ, apart, apart_mem, apart_notes, order)
        apart_note = (f"blocks sharing an SM finish in arrival order, so from the second wave on the sharers of a "
                      f"tile start staggered ({stagger:.2f} of a block time per wave of launches); the SM sets "
                      f"their pace ({timed[1]} in step), so they keep those gaps and each sweeps its own part of "
                      f"the tile: {apart.dram_bytes / 1e9:.2f} GB from DRAM ({tile_mem.dram_bytes / 1e9:.2f} GB "
                      "if followers that hit caught up)")
        tile_mem, mem, notes = apart, apart_mem, apart_notes
        timed, clock, clocked = apart_timed
    dram_if_drifting = None
    dram_in_step = mem.dram_bytes
    drift_note = None
    drifting = False
    if drifted:
        drifted = drifted[0]
        drifted_mem = spill_memory(trace, counts, dev, occ, drifted)
        dram_if_drifting = drifted_mem.dram_bytes
        if drifts(timed[4], timed[0], dram_if_drifting, dev):
            drifting = True
            window = (timed[4]["stages"] - 1) * prefetch_iteration(timed[4])
            drift_note = (f"blocks drift apart: the pipeline prefetches {timed[4]['stages'] - 1} iterations "
                          f"({window * 1e6:.2f} us), past a tile's DRAM round trip, and memory is the bound, so the "
                          f"SMs' unequal memory shares set their pace (spread {dev.pace_spread_drifting:.1%}); sharers "
                          f"re-fetch tiles ({dram_if_drifting / 1e9:.2f} GB from DRAM, {dram_in_step / 1e9:.2f} GB in "
                          "step) and TPC mates' requests no longer merge; a swizzled launch order (T.use_swizzle) "
                          "keeps sharers together")
            tile_mem, mem = drifted, drifted_mem
            notes = []
            timed, clock, clocked = _clocked(trace, counts, dev, occ, tile_mem, mem, notes, order)
        elif dram_if_drifting > 1.1 * mem.dram_bytes:
            drift_note = (f"if the SMs drift apart (pace spread {dev.pace_spread_drifting:.1%}, as in deep unswizzled "
                          f"pipelines) blocks sharing a tile reach it too far apart and DRAM traffic rises to "
                          f"{dram_if_drifting / 1e9:.2f} GB; a swizzled launch order (T.use_swizzle) keeps sharers together")
    assumptions = list(mem.assumptions)
    if max(mem.spread_read, mem.spread_write) > 1.005:
        # the run the table came from names its GPU: "[run FILE, GPU, date, commit]" (merge_calibration)
        gpu = re.search(r"\[run [^,\]]+, ([^,\]]+),", dev.sources.get("dram_spread_write", ""))
        assumptions.append(
            f"the waves read / write global memory in short runs across many rows (memory.wave_runs): a byte "
            f"costs the DRAM {mem.spread_read:.3f} / {mem.spread_write:.3f} x a stream's (tileroof.gpu.blockrate "
            f"--mode widths / pieces{', measured on an ' + gpu.group(1) if gpu else ''})")
    if drift_note:
        assumptions.append(drift_note)
    if apart_note and not drifting:
        assumptions.append(apart_note)
    mma = sorted({d[:-len(MMA_SUFFIX)] for (u, d), n in counts.flops.items() if u == TENSOR and n and d.endswith(MMA_SUFFIX)})
    if mma:
        shares = ", ".join(f"{d} {dev.mma_rate_share(d):.3f}{'' if ('tf32' if d == 'fp32' else d) in dev.mma_share else ' (not measured: the lowest measured share)'}"
                           for d in mma)
        assumptions.append(
            f"gemms TileLang lowers to mma.sync, not wgmma (its dtypes, operand majors, M, warps or "
            f"tl.disable_wgmma: counts.gemm_instruction) run at mma.sync's measured share of the wgmma rate: {shares} "
            f"(benchmarks/mma_share.py, Nsight Compute's HMMA pipe)")
    # the tensor dtype the laws' math is stated in (the kernel's first tensor-core dtype)
    tdt = next((d for (u, d), n in counts.flops.items() if u == TENSOR and n), "fp16")
    if timed[4].get("nows_iteration_law"):
        assumptions.append(
            f"the pipelined loop runs without warp specialisation (its threads load, wait and compute): one "
            f"block's iteration is its gemms' math at {dev.tensor_rate_share_nows:.2f} of "
            f"{dev.tensor_flops_per_clk(tdt):.0f} FLOP/clk/SM ({tdt}) plus {dev.gemm_iteration_cycles_nows:.0f} cycles "
            f"per gemm, {timed[4].get('resident_blocks', 1)} co-resident blocks taking "
            f"{coresidency(dev, timed[4].get('resident_blocks', 1)):.2f}x one block's time (tileroof.gpu.gemm_pipe --nows)")
    elif timed[4].get("gemm_iteration_law"):
        more = ""
        if dev.gemm_wait_cycles is not None or dev.gemm_wait_cycles_overlapped is not None:
            more = (f"; each further gemm of an iteration adds {gemm_fixed_cycles(dev, 2, 1) - gemm_fixed_cycles(dev, 1, 1):.0f}"
                    f" / {gemm_fixed_cycles(dev, 2, 2) - gemm_fixed_cycles(dev, 1, 2):.0f} cycles (tileroof.gpu.attn_pipe)")
        assumptions.append(
            f"the pipelined loop's gemms: math at {dev.tensor_flops_per_clk(tdt):.0f} FLOP/clk/SM ({tdt}) at the "
            f"modelled clock, plus {dev.gemm_iteration_cycles:.0f} cycles with one consumer warpgroup, or "
            f"max(math, math / n + {dev.gemm_iteration_cycles_overlapped:.0f} cycles) with n (tileroof.gpu.gemm_pipe"
            f"{more}; measured on an H200, the device's sources say where its values come from)")
    if timed[4].get("first_wave_iteration_s", 0.0) > 1.0001 * timed[4].get("iteration_s", 0.0):
        assumptions.append(
            f"the first wave's blocks start together: every tile they share is asked for at once and arrives a "
            f"DRAM round trip later, so their iterations take {timed[4]['first_wave_iteration_s'] * 1e6:.2f} us "
            f"(later waves {timed[4]['iteration_s'] * 1e6:.2f} us; tileroof.gpu.timeline set 11)")
    if timed[4].get("iteration_bound") == "latency" and timed[4].get("stages", 0) >= 1:
        st = timed[4]["stages"]
        lat = dev.fitted.get("load_latency_s", 0.0)
        law = ("the producer refills a stage once the gemm reading it has released it, so an iteration waits "
               f"at least (tile latency + the stage's hold) / {st}" if occ.warp_specialized or st == 1 else
               f"the threads load tile k + {st - 1} at the top of trip k, so an iteration waits at least the tile "
               f"latency / {st - 1}")
        loop = "the pipelined loop"
        if not timed[4].get("pipelined", True):
            loop = "the loop (a serial one, no T.Pipelined)"
            law = "each trip loads its tiles, waits for them and then computes, so an iteration waits at least the tile latency"
        assumptions.append(
            f"{loop} is latency-bound: {law} (tile latency {lat * 1e9:.0f} ns, fitted on the fit split; "
            "the share of tiles from DRAM follows calibrate's tile_stream pace)")
    if timed[4].get("follower_share") is not None:
        assumptions.append(
            f"blocks whose loops read the very same tiles (an attention head's) follow the first of their group: "
            f"{timed[4]['follower_share']:.0%} of the blocks start a DRAM round trip or more after it, find its tiles "
            f"in L2 and wait their L2 latency ({dev.l2_tile_latency_s * 1e9:.0f} ns + bytes at "
            f"{dev.tma_load_rate_per_sm / 1e9:.0f} GB/s, calibrate's tile_stream): iterations of "
            f"{timed[4]['follower_iteration_s'] * 1e6:.2f} us, against {timed[4]['iteration_s'] * 1e6:.2f} us for "
            f"blocks in step with it; a follower never passes it (tileroof.gpu.timeline set 19)")
    if timed[4].get("shared_hops_per_iteration"):
        assumptions.append(
            f"{timed[4]['shared_hops_per_iteration']:g} gemm operand(s) an iteration staged through shared memory by "
            f"the iteration's own ops: each gemm waits {dev.gemm_hop_cycles:.0f} cycles for the store and the barrier "
            "(tileroof.gpu.gemm_pipe --chain)")
    if timed[1] == "block chain":
        assumptions.append(
            f"no pipelined loop: each block loads, waits, computes and stores one op after another, and the "
            f"first wave's {min(nblocks, slots)} blocks start together and run those phases in lock-step (a DRAM "
            f"round trip before each group of loads, each phase at the wave's share of DRAM, L2 and the SMs, with "
            f"its share of the timing flush's write-back); the blocks after it at the roofline, but no faster than "
            f"each SM runs its blocks' chains uncontended (their bytes at one block's stream rate, "
            f"{dev.fitted.get('block_stream_bps', 0.0) / 1e9:.0f} GB/s fitted on run 130): "
            f"{timed[2]['block chain'] * 1e6:.2f} us (tileroof.gpu.measure's probe_chain_* cases, timeline sets 17-18)")
    if scheduler_share(dev, occ.threads_per_block) < 1.0 and (timed[1] == "block chain" or timed[4].get("nows_iteration_law")):
        w = subpartitions_used(dev, occ.threads_per_block)
        measured = timed[1] != "block chain" and dev.small_block_nows and dev.coresidency_warps
        assumptions.append(
            f"a block of {occ.threads_per_block} threads issues from {w} of the SM's {dev.warp_schedulers} warp "
            f"schedulers: its math and SIMT work run at {w}/{dev.warp_schedulers} of the SM's rates, " + (
                "its gemms at the rate and fixed cycles measured for such blocks and its co-resident blocks "
                "contending by the warps on the SM (tileroof.gpu.gemm_pipe --warps; model.small_block_iteration)"
                if measured else
                "and its co-resident blocks contend only for the schedulers they fill (model.subpartitions_used)"))
    if any(division_chain_total(rec, trace, dev) for rec in trace.ops):
        if dev.division_latency_s:
            assumptions.append(
                f"IEEE fp32 divisions (no fast math) run one after another in each thread, "
                f"{dev.division_latency_s * 1e9:.0f} ns each (tileroof.gpu.divchain)")
    if timed[4].get("branch_checks_per_trip") and timed[4].get("branch_check_s"):
        assumptions.append(
            f"the pipelined loop's body is under a branch on run-time data: every trip, taken or skipped, "
            f"tests it {timed[4]['branch_checks_per_trip']} times ({timed[4]['branch_check_s'] * 1e9:.0f} ns "
            "a trip: the consumer's statements, its gemms' waits, each load group's wait and release, at the "
            "cost per test fitted on block-sparse probes, benchmarks/fit_branch_check.py)")
    if "fitted" in dev.sources:
        assumptions.append(f"pipeline constants {dev.sources['fitted']}")
    if occ.warp_specialized:
        rebalance = _setmaxnreg(trace)
        assumptions.append(f"warp-specialised on {dev.arch}: {PRODUCER_THREADS} producer threads added; " + (
            f"after setmaxnreg the producer has {rebalance[0]} and each consumer thread "
            f"{occ.consumer_regs_per_thread} registers" if rebalance else
            f"no setmaxnreg (the kernel turns it off): every thread has {occ.regs_per_thread} registers"))
    assumptions += notes
    if clocked and tensor_boost_clock(dev) > dev.tensor_clock_hz:
        assumptions.append(f"power-limited SM clock {clock * dev.tensor_clock_hz / 1e6:.0f} MHz (tensor rates measured "
                           f"at {dev.tensor_clock_hz / 1e6:.0f} MHz), for do_bench-style timing with an L2 flush "
                           "between launches")
    time_s, bound, res, imbalance, pipe_info = timed
    _, flush_wb = dram_time(mem.dram_read, mem.dram_write, dev, mem.dirty_at_end)
    if flush_wb and dev.flush_writeback_cost:
        assumptions.append(
            f"timed as do_bench does (the L2 flushed by zeroing a buffer before each run): the flush leaves "
            f"{dev.flush_dirty_bytes / 1e6:.1f} MB of the L2 dirty and this launch evicts {flush_wb / 1e6:.1f} MB of "
            "it, written back inside its time (tileroof.gpu.flushwb); Nsight Compute, which cleans the L2 first, "
            "does not count those bytes")
    if clock > 1.0 and pipe_info:
        pipe_info["sm_clock_hz"] = clock * dev.tensor_clock_hz
    if pipe_info:
        pipe_info["drifting"] = drifting
    util = {k: (v / time_s if time_s else 0.0) for k, v in res.items()}
    return Timing(time_s, bound, res, util, nblocks / slots, slots, imbalance, timing_floor(dev),
                  pipe_info.get("prologue_epilogue_s", 0.0), occ, mem, pipe_info, assumptions, dram_if_drifting,
                  clock * dev.tensor_clock_hz if clocked else None, dram_in_step, flush_wb)


# Predictions are for do_bench-style timing (tileroof.gpu.timing, triton.testing.do_bench): before
# every launch the harness's flush buffer (256 MiB) is zeroed to flush the L2 -- a gap in which the
# SMs idle.  (tileroof.gpu.timing imports nothing GPU-side at import time.)
TIMING_FLUSH_BYTES = FLUSH_BYTES


def power_limited_clock(busy_share: float, time_s: float, dev: Device) -> float:
    """SM clock of a kernel whose tensor work (at the measured rates) takes `busy_share` of its
    `time_s`.  Dynamic power ~ activity x f^3 (voltage follows
    frequency): the sustained matmul that measured the tensor rates (activity 1, no gaps) sits at
    the power limit at dev.tensor_clock_hz, so a kernel busy `busy_share` of its time and `duty` of
    the time between launches (the L2 flush, at DRAM bandwidth, and the launch overhead between)
    reaches the same power at tensor_clock x (busy_share x duty)^(-1/3), at most the tensor boost
    clock (tensor_boost_clock).
    Seen by Nsight Compute on the H200: 1490-1580 MHz for two-warpgroup GEMMs, 1740-1800 MHz for
    one-warpgroup GEMMs and attention (two-warpgroup attention 1700-1790 too: its softmax half of
    the time draws little), 1940-1980 MHz without tensor work."""
    gap = TIMING_FLUSH_BYTES / dev.dram_bw + dev.launch_s if dev.dram_bw else 0.0
    duty = time_s / (time_s + gap) if time_s > 0 else 1.0
    activity = min(max(busy_share * duty, 1e-6), 1.0)
    return min(tensor_boost_clock(dev), dev.tensor_clock_hz * activity ** (-1.0 / 3.0))


def tensor_boost_clock(dev: Device) -> float:
    """The highest SM clock while tensor cores work: the device's tensor_boost_clock_hz -- in the
    catalog the clock the datasheet's tensor peaks are computed at (Hopper SXM: 1830 MHz, below the
    1980 MHz FP32/FP64 boost; Nsight Compute on the H200 never reads more than 1832 MHz over the 321
    recorded kernels with tensor work), in a calibrated profile the clock of short tensor-bound
    launches inside the timing loop (derive.tensor_clock_entry: 1748 MHz on the H200) -- or the
    boost clock where neither gives a separate figure."""
    return min((f for f in (dev.tensor_boost_clock_hz, dev.clock_hz) if f), default=0.0)


def timing_floor(dev: Device) -> float:
    """What a do_bench-style measurement (events around one run, the L2 flush queued before it) adds
    to a launch's body: its start and end -- an empty kernel reads 3.46 us so on the H200
    (calibrate's behind_flush_us), where CUDA-graph replay spends 0.49 us a launch (launch_s, the
    fallback for devices without the measurement)."""
    return dev.timing_floor_s or dev.launch_s


def spread_factor(curve: tuple, runs, piece: float = 64.0) -> float:
    """DRAM time per byte over a contiguous stream's, for bytes moved in contiguous `runs` (bytes
    each, an array) by blocks that each move `piece` contiguous bytes of a row: each run's factor
    read off the device's measured table ((piece bytes, run bytes, factor), tileroof.gpu.blockrate
    --mode widths / pieces) by linear interpolation in log2 of the run length on the curve of each
    measured piece (held at its ends), then in log2 of the piece between the two curves around it;
    a piece smaller than the smallest measured one costs as that one, a larger piece than the
    largest its excess over 1 scaled by largest / piece: a short run's cost is the DRAM row
    activations it needs, one a piece where the pieces of a row come apart in time, amortised over
    the piece's bytes (run 148 on the H100: the fp32 scatter's 128-byte pieces +5.5 % over a
    contiguous copy where the fp16 scatter's 64-byte ones +10.6 %); the runs' factors averaged over
    their bytes."""
    runs = np.asarray(runs, dtype=np.float64)
    if not curve or not runs.size or runs.sum() <= 0:
        return 1.0
    curves = _spread_curves(curve)
    x = np.log2(np.maximum(runs, 1.0))
    sizes = [c[0] for c in curves]
    piece = float(piece) or sizes[0]
    lp = np.log2(min(max(piece, sizes[0]), sizes[-1]))
    i = int(np.searchsorted(np.log2(sizes), lp, side="right")) - 1
    i = min(max(i, 0), len(curves) - 1)
    f = np.interp(x, curves[i][1], curves[i][2])
    if i + 1 < len(curves):
        t = (lp - np.log2(sizes[i])) / (np.log2(sizes[i + 1]) - np.log2(sizes[i]))
        f = (1 - t) * f + t * np.interp(x, curves[i + 1][1], curves[i + 1][2])
    if piece > sizes[-1]:
        f = 1.0 + (f - 1.0) * sizes[-1] / piece
    return float((f * runs).sum() / runs.sum())


@functools.lru_cache(maxsize=16)
def _spread_curves(curve: tuple) -> tuple:
    """A spread table's curves: per piece size (ascending), (piece, log2 runs, factors), runs ascending."""
    out = []
    for p in sorted({c[0] for c in curve}):
        pts = sorted((c[1], c[2]) for c in curve if c[0] == p)
        out.append((p, np.log2([r for r, _ in pts]), np.array([f for _, f in pts])))
    return tuple(out)


def spread_costs(trace: KernelTrace, dev: Device, runs: dict, mem) -> tuple:
    """(read factor, write factor, per op (read factor, write factor)): what a byte read / written
    costs the DRAM over a contiguous stream's, from the runs the wave's blocks sweep in each global
    buffer and the pieces each block moves (memory.wave_runs) against the device's measured tables
    (dram_spread_read / _write, spread_factor); a buffer the wave sweeps in one piece is a stream.
    An op's factor is its operands' weighted by their elements' bytes; the launch's, its buffers'
    weighted by their DRAM bytes (`mem`'s per_operand).  A transpose whose wave writes 64-byte
    pieces in runs of 64 bytes into many rows pays ~1.2x a stream's DRAM time for its writes on the
    H100 (run 154); runs of a few KiB and up ~1.1x, where the table closes at 1 at the same probe's
    contiguous reference."""
    # each group of runs priced once a side; a buffer the wave sweeps in one piece is a stream
    factor: dict = {}
    by_buffer: dict = {}
    ops = []
    for rec in trace.ops:
        acc = {"read": [0.0, 0.0], "write": [0.0, 0.0]}
        for o in rec.operands:
            if o.scope != GLOBAL or o.access not in ("read", "write", "readwrite"):
                continue
            w = float(o.elements) * dtype_bytes(o.dtype)
            key = memory.spread_key(o)
            for side in ("read", "write"):
                if side not in o.access or not w:
                    continue
                if (key, side) not in factor:
                    r, piece = runs[key]
                    curve = dev.dram_spread_read if side == "read" else dev.dram_spread_write
                    factor[(key, side)] = spread_factor(curve, r, piece) if r is not None and len(r) > 1 else 1.0
                by_buffer[(o.buffer, side)] = factor[(key, side)]
                acc[side][0] += w * factor[(key, side)]
                acc[side][1] += w
        ops.append(tuple(a[0] / a[1] if a[1] else 1.0 for a in (acc["read"], acc["write"])))
    dram: dict = {}
    for t in mem.per_operand:
        side = "write" if t.note.startswith("write-back") else "read"
        dram[(t.buffer, side)] = dram.get((t.buffer, side), 0.0) + float(t.dram)
    tot = {"read": [0.0, 0.0], "write": [0.0, 0.0]}
    for (buf, side), f in by_buffer.items():
        d = dram.get((buf, side), 0.0)
        tot[side][0] += d * f
        tot[side][1] += d
    kr, kw = (t[0] / t[1] if t[1] else 1.0 for t in (tot["read"], tot["write"]))
    return kr, kw, tuple(ops)


def dram_time(dram_read: float, dram_write: float, dev: Device, dirty_at_end: float = 0.0,
              spread: tuple = (1.0, 1.0)) -> tuple[float, float]:
    """(seconds, flush bytes written back) of a launch's DRAM traffic under do_bench-style timing:
    its bytes at the copy bandwidth (each side times its spread factor, spread_costs: reads and
    writes in short runs across many rows cost more), plus the write-back of the dirty lines the
    harness's flush left and the launch evicts (memory.flush_writeback), at the cost per byte flushwb
    measured for the launch's read share: written back into a read stream a byte costs most (0.29
    ns/kB: the bus turns around), into a write stream nearly nothing."""
    total = float(dram_read) + float(dram_write)
    if not total or not dev.dram_bw:
        return 0.0, 0.0
    t = (float(dram_read) * spread[0] + float(dram_write) * spread[1]) / dev.dram_bw
    wb = memory.flush_writeback(dram_read, dram_write + dirty_at_end, dev.flush_dirty_bytes, dev.l2_bytes)
    if wb:
        t += wb * writeback_cost_per_byte(dev, float(dram_read) / total)
    return t, wb


def writeback_cost_per_byte(dev: Device, read_share: float) -> float:
    """Seconds a byte of the timing flush's write-back costs the traffic it lands in, by that
    traffic's read share (tileroof.gpu.flushwb's measured table; 0 without it)."""
    if not dev.flush_writeback_cost:
        return 0.0
    xs, ys = memory.curve_arrays(dev.flush_writeback_cost)
    return float(np.interp(read_share, xs, ys))


def simt_issue_times(counts: Counts, dev: Device) -> dict:
    """Seconds the SMs need to issue and execute the kernel's SIMT instructions (counts.inst, the
    instruction estimate), at the documented per-clock rates of the device, each a bound of its own:

      issue    every warp instruction, at dev.warp_schedulers per SM per clock (one each);
      alu      compares, min/max, selects and integer/logic work on the 16-lane integer pipe of each
               scheduler (dev.alu_per_clk, 64 results per clock per SM on Hopper): a warp's compare
               holds it two clocks, half the FP32 pipe's rate (the FLOP-based "cuda" time charged a
               compare a quarter of that);
      fma      FP32 add/mul/fma instructions at the measured FP32 rate (one FMA = 2 FLOPs: a lone add
               or mul takes an FMA's slot, which the FLOP-based "cuda" time counts as half);
      shuffle  warp shuffles (dev.shuffle_per_clk, 32 per clock per SM).

    Element-wise and reduction kernels that run out of one of these before DRAM are
    instruction-bound (upstream's top-k: six rounds of two row maxima, two compares and two selects
    per element, 78 % of its ALU pipe busy in Nsight Compute).  Throughput bounds only: warps that
    wait on dependent chains issue below them.  Devices without the per-clock figures time none."""
    out: dict = {}
    inst = counts.inst
    if not inst:
        return out
    warp = max(dev.warp_size, 1)
    if dev.issue_rate:
        out["issue"] = counts.warp_instructions(warp) / dev.issue_rate
    if dev.alu_rate and inst.get(P_ALU):
        # integer bit work: the share the compiler leaves on the ALU pipe (the rest issues as IMAD)
        bits = sum(oc.int_bits for oc in counts.ops)
        out["alu"] = (inst[P_ALU] - (1.0 - dev.integer_alu_share) * bits) / dev.alu_rate
    fma_rate = dev.cuda_rate("fp32") / 2         # FMA instructions per second (FLOP rate, FMA = 2 FLOPs)
    if dev.issue_rate and fma_rate and inst.get(P_FMA):
        out["fma"] = inst[P_FMA] / fma_rate
    if dev.shuffle_rate and inst.get(P_SHFL):
        out["shuffle"] = inst[P_SHFL] / dev.shuffle_rate
    return out


def _timed(trace: KernelTrace, counts: Counts, dev: Device, occ: Occupancy, pipe, mem, assumptions: list, order,
           clock: float = 1.0):
    """Resource times, the block schedule and the bound of one launch: (time_s, bound, res,
    imbalance, pipe_info).  order: the blocks' launch order (memory.launch_order); clock: the
    tensor rates' scale (the SM clock over dev.tensor_clock_hz)."""
    slots = occ.blocks_per_sm * dev.sm_count
    nblocks = max(trace.num_blocks, 1)
    if trace.resident_blocks:
        gx, gy, gz = trace.grid
        note = (f"persistent kernel: {trace.resident_blocks} blocks launched, their {gy}-trip tile loop timed as "
                f"the grid it stands for ({gx * gz} x {gy} blocks, tile = trip x {gx * gz} + block), at most "
                f"{trace.resident_blocks} resident")
        if note not in assumptions:
            assumptions.append(note)
    res: dict[str, float] = {}
    for (unit, dtype), n in counts.flops.items():
        if not n:
            continue
        if unit == TENSOR:
            rate, key = dev.tensor_rate(dtype) * clock, f"tensor {dtype}"
            note = dev.tensor_rate_note(dtype)
            if note and note not in assumptions:
                assumptions.append(note)
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
    res.update(simt_issue_times(counts, dev))
    if (dev.block_start_s or dev.warp_start_s) and dev.sm_count:
        # an SM takes in a new block no faster than one every block_start_s, nor faster than it
        # launches the block's warps (tileroof.gpu.blockrate: near-empty blocks of 32-512 threads
        # every 79.3 ns, of 1024 threads every 137.4 ns): launches of many small blocks run at that rate
        res["block starts"] = -(-nblocks // dev.sm_count) * block_start_interval(dev, occ.threads_per_block)
    # bank conflicts replay shared-memory wavefronts; strided global accesses waste sector bytes
    shared = shared_pipe_bytes(counts)
    if shared and dev.shared_bw and not occ.warp_specialized:
        res["shared"] = shared / dev.shared_bw
    if dev.l2_bw:
        res["l2"] = (mem.l2_slice_bytes + counts.excess.get(("global", "sector_waste"), 0)) / dev.l2_bw
    else:
        assumptions.append(f"{dev.name}: no L2 bandwidth in the catalog, L2 not timed")
    if dev.dram_bw:
        res["dram"], _ = dram_time(mem.dram_read, mem.dram_write, dev, mem.dirty_at_end,
                                   (mem.spread_read, mem.spread_write))
    # atomics execute in the L2 slices: many threads hitting a small table serialise on its lines
    atomics = _atomic_ops(trace)
    if atomics:
        hot, spread = atomics
        rate_hot = dev.atomic_rate_contended or dev.atomic_rate
        t_atomic = (hot / rate_hot if rate_hot else 0.0) + (spread / dev.atomic_rate if dev.atomic_rate else 0.0)
        if t_atomic:
            res["atomics"] = t_atomic
        else:
            assumptions.append(f"{dev.name}: no measured atomic throughput, atomics not timed")

    if pipe is not None:
        block_times, pipe_info = pipe
        if pipe_info["register_spill_factor"] > 1.0:
            assumptions.append(f"fragments need {pipe_info['register_spill_factor']:.2f}x the registers a consumer "
                               "thread has: spills slow its compute by that factor")
        first = pipe_info.pop("first_wave_block_s", None)
        follower_times = pipe_info.pop("follower_block_s", None)
        sharers = pipe_info.pop("sharer_groups", None)
        lag = pipe_info.pop("follower_lag_s", 0.0)
        if follower_times is not None and sharers is not None and lag > 0 and order.size > slots:
            makespan, pipe_info["follower_share"] = _schedule_followers(
                np.broadcast_to(np.asarray(block_times, dtype=np.float64), (nblocks,)),
                np.broadcast_to(np.asarray(follower_times, dtype=np.float64), (nblocks,)),
                first, sharers, order, slots, lag)
        else:
            makespan = _schedule_first_wave(block_times, first, order, slots)
        balanced = block_times.sum() / min(slots, nblocks)
        imbalance = makespan / balanced if balanced else 1.0
        res_body = dict(res)
        res_body["pipeline"] = makespan
        pipe_info["makespan_s"] = makespan
    else:
        pipe_info = {}
        # each thread's IEEE divisions in series (division_chain): the blocks' chains over the slots
        chains = sum(division_chain_total(rec, trace, dev) for rec in trace.ops)
        if chains:
            res["division chain"] = chains / min(slots, nblocks)
        # compute resources are per SM: their time stretches by the schedule's makespan over the
        # balanced time (wave quantisation, uneven blocks)
        per_block = np.zeros(nblocks)
        for rec in trace.ops:
            per_block += rec.per_block * max(sum(rec.ops_per_exec.values()), 1)
        balanced = per_block.sum() / min(slots, nblocks) if per_block.sum() else 0.0
        imbalance = _schedule(per_block, order, slots) / balanced if balanced else 1.0
        res_body = {k: (v if k in ("dram", "l2") else v * imbalance) for k, v in res.items()}
        wave0 = order[:slots]
        chained = block_chain(trace, counts, dev, occ, mem, wave0)
        if chained is not None:
            # the first wave in lock-step, then the later blocks at the roofline's time for their
            # share of the work, but no faster than each SM runs its own blocks' chains uncontended
            first, alone = chained
            rest = 1.0 - float(np.sum(per_block_share(trace)[wave0]))
            t_rest = max(res_body.values(), default=0.0) * rest
            if alone is not None and nblocks > len(wave0):
                t_rest = max(t_rest, float(np.max(alone)) * (nblocks - len(wave0)) / slots)
            res_body["block chain"] = float(np.max(first, initial=0.0)) + t_rest
            res["block chain"] = res_body["block chain"]
    bound = max(res_body, key=res_body.get) if res_body else "launch"
    if bound == "pipeline":
        bound = f"pipeline ({pipe_info['iteration_bound']})"
        t_body = res_body["pipeline"]
    else:
        t_body = res_body.get(bound, 0.0)
    time_s = t_body + timing_floor(dev)
    return time_s, bound, res, imbalance, pipe_info


def sequence(timings: list) -> Timing:
    """Launches run one after another: times, resource times and memory traffic add up; the
    launch that takes longest names the bound and lends its occupancy and pipeline figures."""
    main = max(timings, key=lambda t: t.time_s)
    time_s = sum(t.time_s for t in timings)
    res: dict[str, float] = {}
    for t in timings:
        for k, v in t.resource_s.items():
            res[k] = res.get(k, 0.0) + v
    mem = memory.MemoryEstimate(
        sum(t.memory.dram_read for t in timings), sum(t.memory.dram_write for t in timings),
        sum(t.memory.l2_read for t in timings), sum(t.memory.l2_write for t in timings),
        [op for t in timings for op in t.memory.per_operand],
        list(dict.fromkeys(a for t in timings for a in t.memory.assumptions)),
        (sum(t.memory.l2_slice_read for t in timings)
         if any(t.memory.l2_read_merged is not None for t in timings) else None),
        dirty_at_end=sum(t.memory.dirty_at_end for t in timings))
    drifting = [t.dram_if_drifting for t in timings]
    dram_if_drifting = sum(drifting) if all(d is not None for d in drifting) else None
    assumptions = [f"{len(timings)} kernel launches in one PrimFunc, timed one after another"]
    assumptions += list(dict.fromkeys(a for t in timings for a in t.assumptions))
    return Timing(time_s, main.bound, res, {k: (v / time_s if time_s else 0.0) for k, v in res.items()},
                  sum(t.waves for t in timings), main.slots, main.imbalance, sum(t.launch_s for t in timings),
                  sum(t.fill_s for t in timings), main.occupancy, mem, main.pipeline, assumptions, dram_if_drifting,
                  main.sm_clock_hz, sum((t.dram_in_step or t.memory.dram_bytes) for t in timings),
                  sum(t.flush_writeback for t in timings))

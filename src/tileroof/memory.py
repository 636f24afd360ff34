"""DRAM traffic from the blocks that run together and what they share in L2.

Mechanism: blocks start in launch order (row-major over the grid, or T.use_swizzle's panels) and
`slots` of them are resident at once (occupancy × SMs).  Blocks resident together that read the
same tile of a buffer (same block_start key) share it through L2: the tile comes from DRAM once
per group, not once per block.  Between groups, a tile survives in L2 with the share the device's
measured hit curve gives for the distinct bytes streamed in the meantime (or while they fit one
partition, without a curve).  Writes still dirty in L2 when the kernel ends are not DRAM traffic
of the kernel.  Every global buffer costs at least its unique
footprint (each byte read once) and at most what the ops issue.  Blocks sharing a tile inside a
wave reach it at different times when the SMs' paces differ (drift_misses: the gap grows with
the waves, and re-fetches shorten the L2 window further); register spills add their
local-memory traffic (local_spill).

Pure functions over the trace, counts and device; no I/O, no TVM.
"""
from __future__ import annotations

import functools
import math
from collections import Counter

from dataclasses import dataclass, field, replace

import numpy as np

from .trace import GLOBAL, KernelTrace, dtype_bytes


def launch_order(trace: KernelTrace) -> np.ndarray:
    """Flat (x-fastest) block ids in the order blocks start.

    TileLang's T.use_swizzle(panel, order) remaps blockIdx with rasterization2DRow/Column
    (tl_templates/cuda/threadblock_swizzle.h); this reproduces that formula."""
    gx, gy, gz = trace.grid
    n2d = gx * gy
    idx = np.arange(n2d, dtype=np.int64)
    panel = trace.swizzle_panel
    if panel <= 0:
        order2d = idx
    else:
        span = gy if trace.swizzle_order == "column" else gx
        panel_size = panel * span
        offset = idx % panel_size
        pidx = idx // panel_size
        total = -(-n2d // panel_size)
        stride = np.where(pidx + 1 < total, panel, (n2d - pidx * panel_size) // span)
        stride = np.maximum(stride, 1)
        major = np.where(pidx & 1, span - 1 - offset // stride, offset // stride)
        minor = offset % stride + pidx * panel
        if trace.swizzle_order == "column":
            col, row = minor, major
        else:
            col, row = major, minor
        order2d = row * gx + col
    if gz == 1:
        return order2d
    return (np.arange(gz, dtype=np.int64)[:, None] * n2d + order2d[None, :]).reshape(-1)


@dataclass
class OperandTraffic:
    buffer: str
    issued: int          # bytes the ops ask L2 for
    dram: int            # modelled bytes from/to DRAM
    unique: int          # footprint share (lower bound)
    note: str = ""


@dataclass
class MemoryEstimate:
    dram_read: int
    dram_write: int
    l2_read: int
    l2_write: int
    per_operand: list = field(default_factory=list)
    assumptions: list = field(default_factory=list)
    # read bytes that reach the L2 slices once identical tile requests of the blocks sharing a
    # request path (the two SMs of a TPC) are merged; None = no merging (= l2_read)
    l2_read_merged: int | None = None
    # distinct bytes of tiled reads one wave of resident blocks touches (mean over the full waves)
    wave_bytes: float = 0.0
    # the kernel's writes still dirty in L2 when it ends (not in dram_write): they allocated L2
    # lines like the rest, evicting what the cache held before
    dirty_at_end: int = 0
    # DRAM time a read / written byte takes over a contiguous stream's, by the runs the waves'
    # accesses make (model.spread_costs: wave_runs against the device's measured spread curves);
    # the kernel's, weighted by its buffers' DRAM bytes, and per op (read, write)
    spread_read: float = 1.0
    spread_write: float = 1.0
    op_spread: tuple = ()

    @property
    def l2_slice_read(self) -> int:
        return self.l2_read if self.l2_read_merged is None else self.l2_read_merged

    @property
    def l2_slice_bytes(self) -> int:
        """Reads and writes at the L2 slices (reads after TPC merging)."""
        return self.l2_slice_read + self.l2_write

    @property
    def dram_bytes(self) -> int:
        return self.dram_read + self.dram_write


# reuse distances are exact unions of the waves' tiles up to this many waves (a waves x waves
# table); beyond, the sum of the waves' distinct bytes (an upper bound)
MAX_EXACT_WAVES = 1024


def _stable_order(values, size: int) -> np.ndarray:
    """np.argsort(values, kind="stable") of integers in [0, size).  numpy radix-sorts 8- and 16-bit
    integers, so values that fit one are sorted at that width: the same order, in linear time."""
    if size <= 1 << 8:
        values = values.astype(np.uint8)
    elif size <= 1 << 16:
        values = values.astype(np.uint16)
    return values.argsort(kind="stable")


def _run_heads(ordered) -> np.ndarray:
    """Where each run of equal values of a sorted array starts (a boolean mask)."""
    head = np.empty(ordered.size, dtype=bool)
    head[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=head[1:])
    return head


def _unique(values, size: int):
    """np.unique(values, return_index=True, return_inverse=True) of a 1-d array of integers in
    [0, size), through _stable_order (the sort np.unique does, made linear)."""
    order = _stable_order(values, size)
    ordered = values[order]
    head = _run_heads(ordered)
    inverse = np.empty(values.size, dtype=np.int64)
    inverse[order] = np.cumsum(head) - 1
    return ordered[head], order[head], inverse


def _keys_per_block(op, grid_shape: tuple):
    """An integer id per block naming the tile of the buffer it reads (None when not tiled)."""
    if op.block_start is None:
        return None
    key = None
    for v in op.block_start:
        if isinstance(v, np.ndarray):
            # the ids of the coordinate's distinct values, spread over the grid (the coordinate
            # holds only the grid axes it varies on)
            coord = np.asarray(v, dtype=np.int64)
            distinct = np.sort(coord, axis=None)
            distinct = distinct[np.concatenate(([True], distinct[1:] != distinct[:-1]))]
            ids = np.searchsorted(distinct, coord)     # = np.unique(coord, return_inverse=True)[1]
            spread = np.empty(grid_shape, dtype=ids.dtype)
            spread[...] = ids.reshape(v.shape + (1,) * (3 - v.ndim))
            ids = spread.reshape(-1)
            key = ids if key is None else key * (int(ids.max()) + 1) + ids
    return np.zeros(int(np.prod(grid_shape)), dtype=np.int64) if key is None else key


# a wave's pieces of one operand enumerated at most (beyond, a band of rows: _wave_union)
WAVE_RUN_PIECES = 1 << 12
# runs this long are whole streams to the DRAM: a band of rows is cut no shorter than twice this
LONG_RUN_BYTES = 1 << 16


def _box_pieces(lo: list, hi: list, shape: tuple, k: int) -> tuple[int, list, np.ndarray]:
    """For boxes [lo_d, hi_d) whole inside dimension k of a row-major `shape`: (the elements of the
    dimensions inside k, each box's extents outside it, each box's count of contiguous pieces: the
    product of those extents)."""
    inner = int(np.prod(shape[k + 1:], dtype=np.int64))
    ext = [np.maximum(hi[j] - lo[j], 0) for j in range(k)]
    pieces = np.ones(len(lo[0]), dtype=np.int64)
    for e in ext:
        pieces *= e
    return inner, ext, pieces


def _wave_union(lo: list, hi: list, shape: tuple, long_run: int = 0, per_block: int = 1) -> tuple[np.ndarray, int]:
    """(the lengths (elements) of the contiguous segments that make up the union of boxes
    [lo_d, hi_d) in a row-major buffer of `shape`, the blocks' median piece: the contiguous
    elements one block covers in each of its rows) (lo, hi: per dimension, one value per box, each
    block's `per_block` boxes one after another); a band of rows cut to bound the work keeps at
    least 2 x `long_run` elements of whole rows."""
    nd = len(shape)
    # the innermost dimension some block covers only in part: every dimension inside it is whole,
    # so a block's box is Π (outer extents) pieces of (its extent there) x (the inner dimensions)
    k = nd - 1
    while k > 0 and not np.any(lo[k] > 0) and not np.any(hi[k] < shape[k]):
        k -= 1
    lo, hi = list(lo), list(hi)
    nbox = len(lo[0])
    inner, ext, pieces = _box_pieces(lo, hi, shape, k)
    # a block's boxes side by side in a row (a RoPE's two halves): their span, at most their sum
    b_lo, b_hi = (np.where(pieces > 0, v, -1).reshape(-1, per_block) for v in (lo[k], hi[k]))
    live = b_hi > b_lo
    span = np.where(live, b_hi, 0).max(1) - np.where(live, b_lo, np.iinfo(np.int64).max).min(1)
    widths = np.minimum(span, np.where(live, b_hi - b_lo, 0).sum(1))[live.any(1)] * inner
    piece = int(np.median(widths)) if widths.size else 0
    if k and pieces.sum() > WAVE_RUN_PIECES:
        # too many: a band of rows of the next outer dimension, from the first row of the wave's
        # middle box (a GEMM's B: every block sweeps all K rows of its columns, and a band of them
        # shows the same runs; the wave's first and last rows of tiles may be partial ones; a
        # transpose's wave may cover some columns of its output in one more row of tiles than the
        # rest, and the band then sees one of the two run lengths: 3 x 64 or 2 x 64 bytes, which
        # cost the DRAM alike)
        band = max(WAVE_RUN_PIECES // max(int(pieces.sum() // max(int(ext[k - 1].sum()), 1)), 1) // nbox,
                   -(-2 * long_run // (shape[k] * inner)), 1)
        first = lo[k - 1][nbox // 2]
        lo[k - 1] = np.maximum(lo[k - 1], first)
        hi[k - 1] = np.minimum(hi[k - 1], first + band)
    return _wave_segments(lo, hi, shape, k, WAVE_RUN_PIECES), piece


def _wave_segments(lo: list, hi: list, shape: tuple, k: int, limit: int) -> np.ndarray:
    """_wave_union's segments for boxes that are whole inside dimension k, enumerating at most
    `limit` pieces (the boxes' first ones in their order)."""
    strides = [int(np.prod(shape[j + 1:], dtype=np.int64)) for j in range(len(shape))]
    nbox = len(lo[0])
    inner, ext, pieces = _box_pieces(lo, hi, shape, k)
    width = np.maximum(hi[k] - lo[k], 0) * inner
    keep = (pieces > 0) & (width > 0)
    if not keep.any():
        return np.zeros(0, dtype=np.int64)
    pieces = np.where(keep, pieces, 0)
    ends = np.cumsum(pieces)
    cut = int(np.searchsorted(ends, limit, side="right"))
    if cut < nbox:
        pieces = pieces.copy()
        pieces[cut:] = 0
        if cut == 0:                                # one block alone: its first pieces
            pieces[0] = limit
    total = int(pieces.sum())
    owner = np.repeat(np.arange(nbox), pieces)
    local = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    start = lo[k][owner] * inner
    for j in range(k - 1, -1, -1):             # the piece's outer indices, innermost first
        e = ext[j][owner]
        start = start + (lo[j][owner] + local % np.maximum(e, 1)) * strides[j]
        local = local // np.maximum(e, 1)
    length = width[owner]
    order = np.argsort(start, kind="stable")
    start, end = start[order], start[order] + length[order]
    reach = np.maximum.accumulate(end)
    new = np.empty(total, dtype=bool)
    new[:1] = True
    new[1:] = start[1:] > reach[:-1]
    seg_start = start[new]
    seg_end = np.maximum.reduceat(end, np.flatnonzero(new))
    return seg_end - seg_start


def _at_blocks(v, coords: tuple) -> np.ndarray:
    """A per-block value (a number, or an array over the leading grid axes (z, y, x) like
    Operand.block_start's) at the blocks whose (z, y, x) coordinates are `coords`."""
    v = np.asarray(v, dtype=np.int64)
    if not v.ndim:
        return np.full(coords[0].shape, int(v), dtype=np.int64)
    # an axis of one (the value the same along it) indexed at 0 for every block
    return v[tuple(c if n > 1 else np.zeros_like(c) for c, n in zip(coords, v.shape))]


def spread_key(op) -> tuple:
    """The group wave_runs prices a global operand in: its buffer, and whether it only writes
    (reads, read-writes together)."""
    return op.buffer, op.access == "write"


def wave_runs(trace: KernelTrace, slots: int, order=None) -> dict:
    """Per buffer and side (spread_key), over every global operand that reads or writes it: (run
    bytes, piece bytes) -- the lengths in bytes (an int64 array) of the contiguous runs of the
    buffer that the blocks resident together (the middle full wave of `slots` blocks in launch
    order) sweep in it over their whole life (Operand.block_range), and the contiguous bytes one of
    them sweeps in each row it touches (the median block's); (None, 0) where the ranges are not
    known.  A transpose's write of 32 x 32 fp16 tiles whose wave covers two tile columns of B writes
    runs of 2 x 64 bytes in pieces of 64; a GEMM's A, each block sweeping whole rows, one run the
    size of its wave's rows.  All ops on a buffer count together: the DRAM sees the kernel's
    accesses, not one op's (a RoPE reads a row's two halves in two ops).  What short runs and pieces
    cost the DRAM is the time model's (model.spread_costs)."""
    gx, gy, gz = trace.grid
    nblocks = gx * gy * gz
    order = launch_order(trace) if order is None else order
    slots = max(1, min(int(slots), nblocks))
    w = max(nblocks // slots, 1) // 2
    blocks = order[w * slots:(w + 1) * slots]
    coords = np.unravel_index(blocks, (gz, gy, gx))
    groups: dict = {}
    for rec in trace.ops:
        for op in rec.operands:
            if op.scope == GLOBAL and op.access in ("read", "write", "readwrite"):
                groups.setdefault(spread_key(op), []).append(op)
    return {key: _operand_runs(ops, trace.buffers.get(key[0]), coords) for key, ops in groups.items()}


def _operand_runs(ops: list, buf, coords) -> tuple:
    """wave_runs' (run bytes, piece bytes) of operands `ops` of one buffer at the wave's blocks
    `coords` (their boxes together); (None, 0) where one of them has no known ranges."""
    boxes = [op.block_range for op in ops]
    if buf is None or any(b is None or len(b) != len(buf.shape) or any(np.ndim(v) > 3 for pair in b for v in pair)
                          for b in boxes):
        return None, 0
    shape = tuple(int(d) for d in buf.shape)
    # distinct boxes once (the same ranges in several ops)
    uniq = list({tuple((np.shape(v), np.asarray(v).tobytes()) for pair in b for v in pair): b for b in boxes}.values())
    # block-major (a block's boxes side by side), so that a cut to the first pieces keeps whole blocks
    lo, hi = ([np.stack([np.clip(_at_blocks(b[d][side], coords), 0, shape[d]) for b in uniq], axis=1).ravel()
               for d in range(len(shape))] for side in (0, 1))
    size = int(dtype_bytes(ops[0].dtype)) or 1
    segs, piece = _wave_union(lo, hi, shape, LONG_RUN_BYTES // size, len(uniq))
    return (segs * size if len(segs) else None), piece * size


def loop_sharer_groups(trace: KernelTrace) -> np.ndarray | None:
    """A group id per block (flat, x fastest) naming the tiles its pipelined loop reads from global
    memory: blocks of one group read the very same tiles (flash attention: the blocks of one head,
    whatever their query rows).  None where no two blocks read the same tiles in their loop (a
    GEMM's blocks share A with their row and B with their column, never both), where the loop reads
    global memory through an untiled index or under a branch on run-time data (a block-sparse
    mask: each block takes its own tiles), or where there is no such loop."""
    if trace.launches:
        return None                    # several launches: each has its own grid and groups
    gx, gy, gz = trace.grid
    shape = (gz, gy, gx)
    key = None
    for rec in trace.ops:
        if not rec.pipeline:
            continue
        if rec.attrs.get("data_branch"):
            # a branch on run-time data (a block-sparse mask) picks each block's own tiles
            return None
        for op in rec.operands:
            if op.scope != GLOBAL or op.access != "read":
                continue
            k = _keys_per_block(op, shape)
            if k is None:
                return None
            key = k if key is None else key * (int(k.max()) + 1) + k
    if key is None:
        return None
    groups = np.unique(key, return_inverse=True)[1].reshape(-1)
    if np.bincount(groups).max() < 2:
        return None
    return groups


def reuse_hit_share(distance, capacity: float, hit_curve: tuple = ()):
    """Share of re-reads that hit L2 after `distance` distinct bytes: the measured curve
    (linear between its points, 1 before the first, its last value after) or a sharp edge at
    `capacity`."""
    distance = np.asarray(distance, dtype=np.float64)
    if hit_curve:
        xs, ys = curve_arrays(hit_curve)
        return np.interp(distance, xs, ys, left=1.0, right=ys[-1])
    return (distance <= capacity).astype(np.float64)


@functools.lru_cache(maxsize=None)
def curve_arrays(points: tuple):
    """A measured table of (x, y) points (a hit curve, a cost curve) as its two columns,
    read-only float arrays made once per table (for np.interp)."""
    xs, ys = (np.array(v, dtype=np.float64) for v in zip(*points))
    xs.flags.writeable = ys.flags.writeable = False
    return xs, ys


def dirty_at_end(dram_read: float, dram_write: float, capacity: float) -> float:
    """Bytes of the kernel's DRAM writes still dirty in L2 when it ends: the last `capacity` bytes
    the cache holds, in the kernel's read/write mix."""
    if not dram_write or not capacity:
        return 0.0
    return min(dram_write, capacity * dram_write / (dram_read + dram_write))


def flush_writeback(dram_read: float, dram_write: float, dirty_bytes: float, l2_bytes: float) -> float:
    """Bytes of the timing harness's flush (do_bench-style: a buffer zeroed before every run) that
    the kernel writes back to DRAM inside its timed window: the flush leaves `dirty_bytes` of the L2
    dirty (29 MB on the H200), and the kernel evicts a share 1 - exp(-allocated / L2) of them while it
    brings its own `dram_read + dram_write` bytes into the cache (tileroof.gpu.flushwb, run 46:
    read-only streams of 8-268 MB wrote back 1.9-28.3 MB; the formula gives 3.7-29.0).  Callers pass
    as dram_write every line the kernel writes, those still dirty at its end included: a written
    line allocates in the write-back L2 like a read one (session 11: short norms and copies whose
    outputs stay in L2, -25 ... -10 % before).  Nsight Compute cleans the L2 before it measures, so
    these bytes are not in the kernel's DRAM count."""
    if not dirty_bytes:
        return 0.0
    allocated = float(dram_read) + float(dram_write)
    if not l2_bytes:
        return float(dirty_bytes)
    return float(dirty_bytes) * (1.0 - math.exp(-allocated / float(l2_bytes)))


def walked_retouches(issued: float, unique: float, waves: int, wave_bytes: float, capacity: float,
                     hit_curve: tuple = (), kernel_bytes: float = 0.0) -> tuple[float, float, float]:
    """(DRAM bytes, reuse distance, hit share) of `issued` bytes over a `unique`-byte target that
    the blocks walk as they launch: a wave touches about its 1/waves share of the target, so a
    byte touched again is touched again after about that share and the wave's tiles; the target
    comes from DRAM once, plus the re-touches the hit curve loses at that distance.
    `kernel_bytes` (the launch's issued global bytes, every operand): a byte touched issued /
    unique times in a launch that moves kernel_bytes has, on average, at most kernel_bytes *
    unique / issued bytes moved between two of its touches (the gaps sum to at most the launch's
    traffic), whatever the walk: a small table every block re-reads each loop trip (a dequant
    GEMM's group scales) is re-touched far sooner than a wave apart."""
    distance = unique / max(waves, 1) + wave_bytes
    if kernel_bytes > 0 and issued > 0:
        distance = min(distance, float(kernel_bytes) * float(unique) / float(issued))
    hit = float(reuse_hit_share(distance, capacity, hit_curve))
    return unique + (float(issued) - unique) * (1.0 - hit), distance, hit


def untiled_read(issued: float, unique: float, data_indexed: bool, waves: int, wave_bytes: float,
                 l2_bytes: float, capacity: float, hit_curve: tuple = (), read_before: bool = False,
                 kernel_bytes: float = 0.0) -> tuple[float, str]:
    """(DRAM bytes, note) of a read with no tile coordinates to follow (element loads in T.Parallel,
    gathers whose indices are not affine in the block index).  Indices computed from block, thread
    and loop indices (a convolution's im2col gather, a stencil) walk the buffer as the blocks launch:
    a wave reads about its 1/waves share of the footprint, so an element read again (another kernel
    tap, a neighbouring block's halo) is read again after about that share and the wave's tiles --
    the footprint comes from DRAM once plus the re-reads the hit curve loses at that distance
    (run 51: a gathered 3x3 convolution re-reading its 143 MB input 9x read 144 MB from DRAM).
    Indices read from a tensor (an index table): the buffer once if it fits the L2, else every
    issued byte (an upper bound; which elements is known only at run time); none when an earlier op
    read the buffer (`read_before`) and it fits the L2: it came from DRAM with that op."""
    if data_indexed and read_before and float(unique) <= float(l2_bytes or 0.0):
        return 0.0, "untiled, indexed by tensor data, after an earlier read of the buffer that fits in L2"
    unique = min(float(unique), float(issued))
    if data_indexed or waves <= 0:
        d = unique if unique <= float(l2_bytes or 0.0) else float(issued)
        return d, "untiled, indexed by tensor data: from DRAM once if the buffer fits in L2, else every issued byte"
    d, distance, hit = walked_retouches(issued, unique, waves, wave_bytes, capacity, hit_curve, kernel_bytes)
    return d, (f"untiled: the footprint once, re-reads after ~{distance / 1e6:.1f} MB (a wave's share, or the "
               f"launch's traffic over the re-reads when smaller): {hit:.0%} hit in L2")


def local_spill(mem: MemoryEstimate, bytes_per_iteration: float, block_iterations: float, resident_blocks: int,
                l2_bytes: float, l2_partitions: int = 1, hit_curve: tuple = (),
                streamed_per_iteration: float = 0.0) -> MemoryEstimate:
    """`mem` plus the local-memory traffic of registers spilled in a loop: every iteration a block
    stores `bytes_per_iteration` and loads them back (a wgmma needs its whole fragment in
    registers; Nsight Compute on the spilling one-warpgroup GEMMs: 0.77-1.05 of a 128x256
    accumulator, 0.53 of a 256x128 one, written to L2 every iteration).  Between two uses of a
    spilled line L2 takes in every resident block's spill and the distinct tile bytes the wave
    streams in one iteration (`streamed_per_iteration`: tiles shared by the wave's blocks count
    once -- counting every block's issued tile bytes would lose 3-34 % where 3-7 % is measured).
    The hit curve gives the share that misses at that reuse distance (132 x 128 KiB + 0.4-1.8 MB
    on the H200: 1.6-2.5 %), charged as a dirty line written back and read again: one DRAM read
    and one write.  Measured (one wave of spilling tiles whose inputs fit L2, run 37): no re-reads,
    write-backs of 2.0-3.2 % of the moved bytes -- about the same total, split otherwise."""
    if bytes_per_iteration <= 0 or block_iterations <= 0:
        return mem
    capacity = float(l2_bytes or 0.0) / max(l2_partitions, 1)
    distance = resident_blocks * bytes_per_iteration + streamed_per_iteration
    hit = float(reuse_hit_share(distance, capacity, hit_curve))
    moved = bytes_per_iteration * block_iterations
    miss = moved * (1.0 - hit)
    per_operand = mem.per_operand + [OperandTraffic(
        "local (register spill)", int(2 * moved), int(2 * miss), 0,
        f"stored and reloaded every iteration; reuse distance {distance / 1e6:.1f} MB, {hit:.1%} hit in L2")]
    assumptions = mem.assumptions + [
        f"register spill: {bytes_per_iteration / 1024:.0f} KiB stored and reloaded per block-iteration "
        f"({2 * moved / 1e9:.2f} GB at L2, {2 * miss / 1e6:.0f} MB at DRAM)"]
    return replace(mem, dram_read=int(round(mem.dram_read + miss)), dram_write=int(round(mem.dram_write + miss)),
                   l2_read=int(round(mem.l2_read + moved)), l2_write=int(round(mem.l2_write + moved)),
                   per_operand=per_operand, assumptions=assumptions,
                   l2_read_merged=None if mem.l2_read_merged is None else int(round(mem.l2_read_merged + moved)))


def drift_misses(followers: list, working_set, slots: int, drift: float, capacity: float,
                 hit_curve: tuple = (), stagger: float = 0.0, apart: bool = False,
                 stagger_deciles: tuple = ()) -> list:
    """Bytes re-fetched from DRAM, per operand, because blocks that share a tile inside one wave
    reach it at different times.

    Identical blocks do not run at the same pace: the SMs differ (tileroof.gpu.timeline on the
    H200: the per-SM mean block time has a relative spread `drift` of 7.7-8.3 % in the unswizzled
    64x256 GEMMs seen to drift, 0.03-2 % in 16 other GEMMs), so blocks started in launch order
    drift apart wave after wave.  Measured, the start-time gap of two sharers `gap` launches apart has a median
    of gap/slots x drift x (w + 1/2) block times in wave w, spread like |normal| (p90 / median
    1.5-2.5).  While the sharers are that far apart, L2 takes in the wave's distinct bytes plus the
    re-fetches themselves (`working_set[w]` + misses per block time), so the reuse distance is
    gap time x that rate; the hit curve gives the share still in L2.  The rate and the misses are
    solved together (a few fixed-point steps).

    `stagger`: blocks sharing an SM finish in the order they arrived (timeline sets 13-14: the first
    wave's ends step by a share of a block time per level), so from the second wave on the blocks
    that replace them start that far apart too: a gap of gap/slots x stagger block times, in every
    wave after the first, on top of the drift's.

    `apart`: the sharers keep their gaps, whether they hit or miss (blocks whose pace the SM sets:
    an L2 hit does not make them faster).  Then every sharer of a tile sweeps its own part of it,
    and the distinct bytes in a window of g block times are the union of the sharers' windows:
    a tile read by sharers starting t_1 < t_2 < ... is touched over g + sum_j min(t_j - t_(j-1), g)
    block times' worth of its bytes (_fronts), not g's.  Without it (the default: blocks that memory
    paces, which an L2 hit speeds up, catch up with the sharer ahead) only the re-fetches add to
    the distinct bytes, the followers that hit ride in their leader's window.

    `followers`: per operand, (wave, gap in launches, bytes) of every block that reads a tile an
    earlier block of its wave reads too."""
    out = [0.0] * len(followers)
    live = [i for i, f in enumerate(followers) if f is not None and f[0].size]
    if (drift <= 0 and stagger <= 0) or not live:
        return out
    # a follower's median gap to its sharer, in block times: gap / slots x this, by wave
    w = np.arange(working_set.size)
    drifted, staggered = drift * (w + 0.5), stagger * (w >= 1)
    spread = np.minimum(drifted + staggered, 1.0)
    # the gaps' deciles over their median, by wave: the drift's |normal|, the stagger's measured ones
    q = np.broadcast_to(_DECILES[:, None], (_DECILES.size, w.size))
    if stagger_deciles and stagger > 0:
        qs = np.asarray(stagger_deciles, dtype=np.float64)[:, None]
        q = (drifted * q + staggered * qs) / np.maximum(drifted + staggered, 1e-300)
    # no sharer can miss when even the longest distance (no re-fetches yet) is one the cache holds
    # whole (the feedback only starts from misses); in each wave the longest is the widest gap's
    sure_hit = hit_curve[0][0] if hit_curve else capacity
    longest = 0.0
    # kept apart, the sharers behind the first add at most their bytes per block time to the rate
    behind = np.zeros(working_set.size)
    if apart:
        for i in live:
            np.add.at(behind, followers[i][0], followers[i][2])
    for i in live:
        wave, gap, _ = followers[i]
        widest = np.zeros(working_set.size)
        np.maximum.at(widest, wave, gap)
        longest = max(longest, float((widest / slots * spread * (working_set + behind)).max()))
    if longest * q.max() <= sure_hit:
        return out
    # the median gap is the same for every follower of one wave with the same gap in launches: the
    # hit curve is read once per distinct (wave, gap), `inverse` maps them back to the followers
    gaps = {}
    for i in live:
        wave, gap, _ = followers[i]
        g = gap / slots * spread[wave]
        span = int(gap.max()) + 1
        _, first, inverse = _unique(wave * span + gap.astype(np.int64), (int(wave.max()) + 1) * span)
        gaps[i] = (g[first], wave[first], inverse)
    follower_waves = np.concatenate([followers[i][0] for i in gaps])      # operand after operand
    fronts = _fronts(followers, live, slots, spread) if apart else None
    # each distinct (wave, gap)'s windows over the deciles, in block times (the same every step)
    windows = {i: q[:, w] * g for i, (g, w, _) in gaps.items()}
    extra = np.zeros_like(working_set)
    for _ in range(30):
        rate = working_set + extra                     # bytes L2 takes in per block time, by wave
        late = []
        for i, (g, w, inverse) in gaps.items():
            b = followers[i][2]
            window = windows[i]
            distance = window * rate[w]
            if fronts is not None:
                distance = distance + fronts(w, window)
            # the mean over the deciles (what ndarray.mean computes: the sum, then / their count)
            miss = 1.0 - reuse_hit_share(distance, capacity, hit_curve).sum(axis=0) / q.shape[0]
            late.append(b * miss[inverse])
            out[i] = float(late[-1].sum())
        if fronts is not None:          # kept apart: the windows count every sharer already
            break
        # the re-fetches by wave (bincount adds them up in order, operand after operand)
        new = np.bincount(follower_waves, np.concatenate(late), minlength=working_set.size)
        if (np.abs(new - extra) <= 1.0 + 1e-3 * np.abs(extra)).all():     # np.allclose(rtol=1e-3, atol=1)
            break
        extra = new
    return out


@dataclass(frozen=True)
class _Distinct:
    """A read operand whose blocks each read a tile no other block reads (its L2 model: none)."""
    per_block_bytes: np.ndarray


@dataclass(frozen=True)
class _Again(_Distinct):
    """A _Distinct read whose blocks read the same tiles an earlier op of the launch read (a radix
    top-k's second pass over its row): the block's re-read hits L2 unless the wave's working set
    pushed the row out in between."""


def _grid3(v) -> np.ndarray:
    """A block_range bound (a number, or an array over the leading grid axes z, y, x) as a 3-D
    array that numpy broadcasts over the grid."""
    a = np.asarray(v)
    return a.reshape(a.shape + (1,) * (3 - a.ndim)) if a.ndim < 3 else a


def _inside(inner, outer) -> bool:
    """Whether every block's box `inner` (Operand.block_range) lies in its own box `outer`."""
    if inner is None or outer is None or len(inner) != len(outer):
        return False
    try:
        return all(bool(np.all(_grid3(lo_o) <= _grid3(lo_i)) and np.all(_grid3(hi_i) <= _grid3(hi_o)))
                   for (lo_i, hi_i), (lo_o, hi_o) in zip(inner, outer))
    except ValueError:                       # boxes over grids that do not broadcast: not compared
        return False


def _same_tiles(a: tuple, b: tuple) -> bool:
    """Whether two reads' (block_start, extents, bytes) name the same tile of every block."""
    (sa, ea, na), (sb, eb, nb) = a, b
    if ea != eb or na != nb or sa is None or sb is None or len(sa) != len(sb):
        return False
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(sa, sb))


def _decision_key(blocks, axes: tuple, grid_shape: tuple) -> np.ndarray:
    """Each block's (flat id, x fastest) coordinates on the grid axes a data branch's condition
    reads (0 z, 1 y, 2 x), as one integer: blocks with equal keys decide the branch alike."""
    coords = np.unravel_index(blocks, grid_shape)
    key = np.zeros(np.size(blocks), dtype=np.int64)
    for a in axes:
        key = key * grid_shape[a] + coords[a]
    return key


def independent_takers(by_pair, head, axes: tuple, grid_shape: tuple, share: float) -> np.ndarray:
    """Per (wave, tile) group of sharers of an op under a branch on run-time data that holds
    `share` of the time (a block-sparse mask, --taken): how many times the share its group's
    first block's bytes carry the tile is fetched.  Blocks that differ on the grid axes the
    condition reads (`axes`: 0 z, 1 y, 2 x) decide apart: a tile that n of them may take is read
    when any one does, 1 - (1 - share)^n of the time (taken as independent), not `share`; blocks
    equal on those axes (a GEMM row's blocks, one mask row) decide together.  A block-sparse GEMM
    whose mask is indexed by the row tile: its A tiles stay at `share`, its B tiles, shared by the
    rows of a wave, rise toward 1."""
    key = _decision_key(by_pair, axes, grid_shape)
    group = np.cumsum(head) - 1
    span = int(key.max()) + 1 if key.size else 1
    distinct = np.unique(group * span + key) // span
    n = np.bincount(distinct, minlength=int(group[-1]) + 1 if group.size else 0).astype(np.float64)
    return (1.0 - (1.0 - share) ** n) / share


def taken_sharing(rec, by_pair, head, keys, grid_shape: tuple, bytes_of_pair):
    """A read op under a branch on run-time data that holds a given share of the time (--taken):
    its (wave, tile) groups' bytes when any of a group's independent deciders fetches the tile
    (independent_takers), the share of each group's bytes an earlier wave's fetch of the tile
    holds (1 where the tile's readers decide alike, decides_alike; else its fetched share), and the
    share of the footprint some reader takes (None: the whole footprint).  Other ops: unchanged."""
    held = np.ones(bytes_of_pair.size)
    share, axes = rec.attrs.get("taken_share"), rec.attrs.get("taken_axes")
    if share is None or not 0.0 < share < 1.0 or axes is None or not bytes_of_pair.sum():
        return bytes_of_pair, held, None
    f = independent_takers(by_pair, head, axes, grid_shape, share)
    fetched = float((bytes_of_pair * f).sum() / (bytes_of_pair.sum() / share))
    if not decides_alike(keys, axes, grid_shape):
        held = f * share
    return bytes_of_pair * f, held, fetched


def decides_alike(keys, axes: tuple, grid_shape: tuple) -> bool:
    """Whether every block that reads a tile decides the branch as every other reader of that tile
    does, in any wave: all the tile's readers are equal on the condition's grid axes (the A tiles
    of a block-sparse GEMM whose mask is indexed by the row tile).  Then a tile fetched in one wave
    is the one a later wave's reader takes; otherwise a later wave's readers take a different share
    of it (memory.estimates: its L2 hits scale by the share of it fetched before)."""
    dkey = _decision_key(np.arange(keys.size), axes, grid_shape)
    span = int(dkey.max()) + 1 if dkey.size else 1
    pairs = np.unique(keys.astype(np.int64) * span + dkey)
    return np.unique(pairs // span).size == pairs.size


def _sharers(pair, size: int, order):
    """The blocks grouped by the (wave, tile) they read: (block ids by pair, then launch
    position; their pairs; whether each starts its group).  pair: each block's wave x tiles +
    tile, below `size`; order: the blocks in launch order."""
    by_pair = order[_stable_order(pair[order], size)]
    pairs = pair[by_pair]
    return by_pair, pairs, _run_heads(pairs)


def _followers(wave, pos, nbytes, by_pair, head):
    """(wave, gap in launches to the previous sharer, bytes) of every block whose tile an earlier
    block (in launch order) of the same wave also reads (_sharers' grouping)."""
    w, p, b = wave[by_pair], pos[by_pair], nbytes[by_pair]
    f = ~head
    gap = (p - np.concatenate((p[:1], p[:-1])))[f].astype(np.float64)
    return w[f], gap, b[f]


def _fronts(followers, live, slots, spread):
    """The distinct bytes that the sharers behind the first of each (wave, tile) add to a window
    when they keep their gaps (drift_misses, apart): a tile read by sharers starting t_1 < t_2 < ...
    (block times) is touched in a window of g over the union of [t_j, t_j + g], g + sum_j
    min(t_j - t_(j-1), g) block times' worth of its bytes; the first term is the wave's working
    set.  Returns at(wave, window) -> the sum over that wave's followers of their bytes x
    min(their median gap, window), for arrays of waves and windows (block times)."""
    w = np.concatenate([followers[i][0] for i in live])
    gt = np.concatenate([followers[i][1] / slots * spread[followers[i][0]] for i in live])
    b = np.concatenate([followers[i][2] for i in live])
    gt = np.minimum(gt, 3.9)
    key = w * 4.0 + gt
    o = np.argsort(key, kind="stable")
    key, b, gt = key[o], b[o], gt[o]
    cum_b = np.concatenate(([0.0], np.cumsum(b)))
    cum_bg = np.concatenate(([0.0], np.cumsum(b * gt)))

    def at(wave, window):
        window = np.minimum(window, 3.9)
        base = wave * 4.0
        lo = np.searchsorted(key, base, "left")
        mid = np.searchsorted(key, base + window, "right")
        hi = np.searchsorted(key, base + 4.0, "left")
        return (cum_bg[mid] - cum_bg[lo]) + window * (cum_b[hi] - cum_b[mid])

    return at


def _erfinv(y):
    """Inverse error function (Giles' single-precision approximation is enough for deciles)."""
    y = np.asarray(y, dtype=np.float64)
    w = -np.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws, wl = w - 2.5, np.sqrt(np.maximum(w, 5.0)) - 3.0
    ps = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        ps = c + ps * ws
    pl = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        pl = c + pl * wl
    return np.where(small, ps, pl) * y


# deciles of |normal| with median 1 (drift_misses' spread of the sharers' gaps)
_DECILES = np.sqrt(2.0) * _erfinv(np.arange(0.05, 1.0, 0.1)) / 0.6745


def estimate(trace: KernelTrace, slots: int, l2_bytes: float, l2_partitions: int = 1,
             hit_curve: tuple = (), drift: float = 0.0, merge_group: int = 1) -> MemoryEstimate:
    """`hit_curve`: measured ((reuse distance, share of re-reads that hit L2), ...) points
    (calibrate's l2probe); without it a re-read hits when the distance fits one L2 partition.
    `drift`: how fast blocks of one wave drift apart (see drift_misses); 0 = a tile shared inside
    a wave comes from DRAM once.
    `merge_group`: blocks that start one after another are placed `merge_group` at a time on the
    SMs of one TPC, whose identical tile requests reach the L2 slices once (l2_read_merged)."""
    return estimates(trace, slots, l2_bytes, l2_partitions, hit_curve, ((drift, merge_group),))[0]


def estimates(trace: KernelTrace, slots: int, l2_bytes: float, l2_partitions: int = 1, hit_curve: tuple = (),
              states: tuple = ((0.0, 1),), order=None) -> list:
    """One MemoryEstimate per (drift, merge_group[, stagger[, apart]]) of `states` (see estimate and
    drift_misses): the launch order,
    the tiles each wave touches and their reuse distances are worked out once for all of them.
    order: launch_order(trace), where the caller has it already."""
    gx, gy, gz = trace.grid
    nblocks = trace.num_blocks
    order = launch_order(trace) if order is None else order
    slots = max(1, min(slots, nblocks))
    waves = -(-nblocks // slots)
    # wave of each block in launch order
    wave_of = np.empty(nblocks, dtype=np.int64)
    wave_of[order] = np.repeat(np.arange(waves), slots)[:nblocks]          # launch position // slots
    pos = np.empty(nblocks, dtype=np.int64)
    pos[order] = np.arange(nblocks)
    # an SM caches global data in its own L2 partition: the capacity that decides whether a tile
    # survives until its next use is one partition's share of the L2
    capacity = float(l2_bytes or 0.0) / max(l2_partitions, 1)

    reads, writes = [], []
    total_issued_read = 0
    for rec in trace.ops:
        for op in rec.operands:
            if op.scope != GLOBAL:
                continue
            nbytes = int(op.elements * dtype_bytes(op.dtype))
            if op.access in ("write",):
                writes.append((op, nbytes))
            elif op.access in ("atomic", "readwrite"):
                writes.append((op, nbytes))
                reads.append((rec, op, nbytes))
            else:
                reads.append((rec, op, nbytes))
    # per read operand: the distinct tiles (keys) each wave touches, and the bytes of each
    tiled = []
    working_set = np.zeros(waves)          # distinct bytes each wave touches, all operands together
    distinct_keys: dict = {}               # storage -> the tiles of its _Distinct reads so far
    read_storage = [trace.storage_of(op.buffer) for _, op, _ in reads]
    for i, (rec, op, nbytes) in enumerate(reads):
        total_issued_read += nbytes
        keys = _keys_per_block(op, (gz, gy, gx))
        weights = rec.per_block
        executions = weights.sum()
        if keys is None or executions == 0:
            tiled.append((rec, op, nbytes, None))
            continue
        issued_per_block = nbytes * weights / executions
        per_block_bytes = issued_per_block / op.reuse_in_block if op.reuse_in_block != 1.0 else issued_per_block
        nkeys = int(keys.max()) + 1
        if nkeys >= nblocks and np.bincount(keys, minlength=nkeys).max() == 1:
            # every block its own tile (an element-wise kernel's rows): nobody shares, nothing is
            # used twice -- each wave touches its blocks' bytes, all from DRAM
            storage = trace.storage_of(op.buffer)
            # the same bytes again: the same tile of each block (start and size), not just the same
            # key (RoPE reads the two halves of a row, two tiles of one key)
            mine = (op.block_start, op.extents, float(per_block_bytes.sum()))
            if any(_same_tiles(mine, k) for k in distinct_keys.get(storage, ())) or \
                    any(read_storage[j] == storage and _inside(op.block_range, reads[j][1].block_range)
                        for j in range(i)):
                # its bytes are in the set already: the same tile read by an earlier op, or a part of
                # what the block swept before (a residual read of the rows its loop streamed)
                tiled.append((rec, op, nbytes, _Again(per_block_bytes)))
                continue
            distinct_keys.setdefault(storage, []).append(mine)
            np.add.at(working_set, wave_of, per_block_bytes)
            tiled.append((rec, op, nbytes, _Distinct(per_block_bytes)))
            continue
        pair = wave_of * nkeys + keys
        by_pair, grouped, head = _sharers(pair, waves * nkeys, order)
        starts = head.nonzero()[0]
        # each (wave, tile) and the first block (by id) that reads it: np.unique(pair, return_index=True)
        uniq, first = grouped[starts], np.minimum.reduceat(by_pair, starts)
        w_of_pair = uniq // nkeys
        bytes_of_pair = per_block_bytes[first]
        bytes_of_pair, held, fetched = taken_sharing(rec, by_pair, head, keys, (gz, gy, gx), bytes_of_pair)
        np.add.at(working_set, w_of_pair, bytes_of_pair)
        tiled.append((rec, op, nbytes, (uniq % nkeys, w_of_pair, bytes_of_pair, keys, per_block_bytes,
                                        issued_per_block, nkeys, by_pair, head, held, fetched)))
    cum = np.concatenate([[0.0], np.cumsum(working_set)])

    # reuse distances at wave granularity: the distinct bytes of waves w'+1..w are their summed
    # working sets less the re-touches inside that span (a tile used in wave v whose previous use,
    # prev, is after w'): R(w', w) = the bytes of uses with prev > w' and v <= w
    uses = []
    for _, _, _, pairs in tiled:
        if pairs is None or isinstance(pairs, _Distinct):
            uses.append(None)
            continue
        key, wave, b = pairs[:3]
        order_kw = _stable_order(key * waves + wave, pairs[6] * waves)      # by tile, then wave
        key, wave, b, held = key[order_kw], wave[order_kw], b[order_kw], pairs[9][order_kw]
        # the wave of the tile's previous use (-1: its first)
        again = np.concatenate(([False], key[1:] == key[:-1]))
        prev = np.where(again, np.concatenate(([-1], wave[:-1])), -1)
        # the share of this use's bytes the previous use fetched (1 but under a data branch)
        held_prev = np.where(again, np.concatenate(([1.0], held[:-1])), 1.0)
        uses.append((prev, wave, b, held_prev))
    retouch = None
    if waves <= MAX_EXACT_WAVES:
        m = np.zeros((waves + 1, waves))
        for u in uses:
            if u is not None:
                r = u[0] >= 0
                np.add.at(m, (u[0][r], u[1][r]), u[2][r])
        retouch = m[::-1].cumsum(axis=0)[::-1].cumsum(axis=1)     # [a, v]: prev >= a, use wave <= v

    # each read operand's DRAM bytes with the sharers of a wave in step (drift adds to it), and
    # the lower and upper bounds: its footprint and what it issues
    foot = trace.footprints
    wave_bytes = float(working_set[:max(nblocks // slots, 1)].mean()) if waves else 0.0
    kernel_bytes = float(total_issued_read + sum(nb for _, nb in writes))
    readers = Counter(read_storage)        # storage -> the read ops of it
    in_step = []
    read_before = set()
    for (rec, op, nbytes, pairs), use in zip(tiled, uses):
        storage = trace.storage_of(op.buffer)
        unique = foot.get(storage, nbytes)
        again = isinstance(pairs, _Again)
        if pairs is None:
            indexed, seen = storage in trace.data_indexed, storage in read_before
            d, note = untiled_read(nbytes, unique, indexed, waves, wave_bytes, l2_bytes, capacity, hit_curve,
                                   read_before=seen, kernel_bytes=kernel_bytes)
            # read through an index table after an earlier op: that op's read holds the footprint
            again = again or (indexed and seen)
        elif isinstance(pairs, _Again):
            # the same blocks read these tiles before, in an earlier op: in between, the wave's
            # blocks touched at most the wave's working set
            hit = float(reuse_hit_share(np.asarray([wave_bytes]), capacity, hit_curve)[0])
            d = float(pairs.per_block_bytes.sum()) * (1.0 - hit)
            note = f"each block its own tile, read again by a later op: {hit:.0%} hit in L2 (a wave's working set between)"
        elif isinstance(pairs, _Distinct):
            d, note = float(pairs.per_block_bytes.sum()), "each block its own tile: no reuse"
            if unique < d and readers.get(storage, 0) == 1:
                # tiles that overlap their neighbours' (a convolution's halo rows): the footprint
                # once, the overlap re-read by blocks launched near each other, as a walk
                d, distance, hit = walked_retouches(d, unique, waves, wave_bytes, capacity, hit_curve, kernel_bytes)
                note = (f"each block its own tile, overlapping its neighbours': the footprint once, the overlap "
                        f"re-read after ~{distance / 1e6:.1f} MB: {hit:.0%} hit in L2")
        else:
            # LRU at wave granularity: a tile used again in wave w after wave w' hits in L2 when the
            # distinct bytes touched by waves w'+1..w fit in the cache
            prev, wave, b, held_prev = use
            after = np.maximum(prev, 0) + 1
            reuse = cum[wave + 1] - cum[after]
            if retouch is not None:
                reuse = reuse - retouch[after, wave]
            p_hit = reuse_hit_share(reuse, capacity, hit_curve) * held_prev
            p_hit = np.where(prev >= 0, p_hit, 0.0)
            d = float((b * (1.0 - p_hit)).sum())
            note = f"{p_hit.sum():.0f} of {p_hit.size} (tile, wave) uses hit in L2"
        read_before.add(storage)
        floor = 0.0 if again else min(unique, nbytes)
        if pairs is not None and not isinstance(pairs, _Distinct) and pairs[10] is not None:
            floor = min(unique * pairs[10], nbytes)    # the share of the footprint some reader takes
        in_step.append((d, note, floor))
    written_storage: dict = {}
    for op, nbytes in writes:
        storage = trace.storage_of(op.buffer)
        written_storage[storage] = written_storage.get(storage, 0) + nbytes
    written = []
    for storage, nbytes in written_storage.items():
        unique = foot.get(storage, nbytes)
        # L2 is write-back: repeated writes to one line merge, so DRAM sees at least the footprint
        # (all of it when the target fits one partition: split-K's atomics onto C); a larger
        # target's line written again (the attention backward's dQ atomics) is still in L2 when
        # the distinct bytes since its last write fit, as for an untiled read (walked_retouches)
        note = "write-back"
        if nbytes <= unique:
            d = nbytes
        elif unique <= capacity:
            d = unique
        else:
            d, distance, hit = walked_retouches(nbytes, unique, waves, wave_bytes, capacity, hit_curve, kernel_bytes)
            note = (f"write-back; rewritten lines after ~{distance / 1e6:.1f} MB (a wave's share): "
                    f"{hit:.0%} merge in L2")
        written.append(OperandTraffic(storage, nbytes, int(d), int(unique), note))
    l2_write = sum(n for _, n in writes)
    followers = [None if (pairs is None or isinstance(pairs, _Distinct)) else
                 _followers(wave_of, pos, pairs[4], pairs[7], pairs[8])
                 for _, _, _, pairs in tiled]

    out = []
    merged_reads: dict = {}              # merge_group -> _merged_read (states may share one)
    for drift, merge_group, *rest in states:
        merge_group = max(int(merge_group or 1), 1)
        if merge_group > 1 and merge_group not in merged_reads:
            merged_reads[merge_group] = int(round(_merged_read(tiled, order, slots, merge_group)))
        late_by_op = drift_misses(followers, working_set, slots, drift, capacity, hit_curve, *rest)
        dram_read = 0.0
        per_operand = []
        for (rec, op, nbytes, pairs), late, (d, note, floor) in zip(tiled, late_by_op, in_step):
            if late:
                d += late
                note += f"; {late / 1e6:.0f} MB fetched again by sharers that drifted apart"
            d = min(max(d, floor), nbytes)
            dram_read += d
            per_operand.append(OperandTraffic(op.buffer, nbytes, int(d), int(floor), note))
        per_operand += written
        dram_write = float(sum(w.dram for w in written))
        # L2 is write-back: lines written near the end of the kernel are still dirty in L2 when it
        # ends and reach DRAM only later (Nsight Compute: a 4096x4096x512 GEMM writes 10 of its 34
        # MB of C to DRAM).  The cache's last `capacity` bytes hold reads and writes in the kernel's mix.
        resident_dirty = dirty_at_end(dram_read, dram_write, capacity)
        dram_write -= resident_dirty
        notes = [f"{slots} blocks resident at once, {waves} waves; L2 capacity {capacity / 1e6:.1f} MB; "
                 f"{resident_dirty / 1e6:.1f} MB of writes still dirty in L2 at the end (written back after the kernel)"]
        unkeyed = sorted({trace.storage_of(op.buffer)
                          for _, op, nb, pairs in tiled if pairs is None and nb > capacity / 8} - set(trace.data_indexed))
        if unkeyed:
            notes.append(f"tiles of {', '.join(unkeyed)} are not keyed by block: their starts are not affine in the "
                         "block index and loop variables (a persistent loop's own tile order, say), so blocks are not "
                         "seen sharing them and their re-reads are timed as an untiled stream: their DRAM traffic may "
                         "be over-estimated")
        if trace.data_keyed:
            notes.append(f"tiles of {', '.join(trace.data_keyed)} start at values read from a tensor (one per block, "
                         "or one a loop trip, as a paged cache's block table): the blocks they depend on are taken "
                         "to spread evenly, in launch order, over the tile positions, each walking its own run of "
                         "tiles, and blocks that read the same table entries to share them (which block reads "
                         "which tile is known only at run time)")
        out.append(MemoryEstimate(
            int(round(dram_read)), int(round(dram_write)), int(total_issued_read), int(l2_write), per_operand,
            notes,
            merged_reads.get(merge_group),
            wave_bytes, int(round(resident_dirty))))
    return out


def _merged_read(tiled: list, order, slots: int, merge_group: int) -> float:
    """Read bytes at the L2 slices when blocks that start one after another are placed
    `merge_group` at a time on the SMs of one TPC: the same tile read by the blocks of one TPC in
    one wave counts once (untiled reads count whole).  order: the blocks in launch order."""
    # the TPC each launch position runs on: positions merge_group*j .. merge_group*j + merge_group-1
    # of a wave share one, so a TPC's blocks are neighbours in launch order
    waves = -(-order.size // slots)
    tpc = np.add.outer(np.arange(waves) * slots, np.arange(slots) // merge_group).reshape(-1)[:order.size]
    merged = 0.0
    for _, op, nbytes, pairs in tiled:
        # (the merge was measured for tile loads: element loads are counted whole)
        if pairs is None or op.element or isinstance(pairs, _Distinct):
            merged += nbytes
            continue
        keys, issued_per_block = pairs[3][order], pairs[5]
        # per launch position, the blocks of its TPC that read its tile (itself included)
        sharers = np.ones(order.size, dtype=np.int64)
        for d in range(1, merge_group):
            same = (tpc[d:] == tpc[:-d]) & (keys[d:] == keys[:-d])
            sharers[d:] += same
            sharers[:-d] += same
        per_block = np.empty_like(sharers)
        per_block[order] = sharers
        merged += float((issued_per_block / per_block).sum())
    return merged

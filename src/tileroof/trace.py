"""Neutral records of what a kernel does: the only thing the IR walk hands to the rest of tileroof.

Nothing here knows TVM.  Counting, the memory model, the time model and the reports read these
records and never the IR.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

# storage levels a buffer can live in
GLOBAL, SHARED, FRAGMENT, LOCAL = "global", "shared", "fragment", "local"


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a TVM dtype string ("float16", "float8_e4m3fn", "int4", "bool")."""
    return _dtype_bytes(str(dtype))


@functools.lru_cache(maxsize=None)
def _dtype_bytes(dtype: str) -> float:
    if dtype == "bool":
        return 1
    lanes = 1
    if "x" in dtype:                      # vector dtypes such as float16x2
        dtype, lanes_s = dtype.rsplit("x", 1)
        lanes = int(lanes_s) if lanes_s.isdigit() else 1
    digits = ""
    for ch in dtype:
        if ch.isdigit():
            digits += ch
        elif digits:
            break
    if not digits:
        raise ValueError(f"unknown dtype {dtype!r}")
    return int(digits) * lanes / 8


@dataclass(frozen=True)
class BufferInfo:
    name: str
    scope: str                 # GLOBAL, SHARED, FRAGMENT or LOCAL
    dtype: str
    shape: tuple[int, ...]
    storage: str               # name of the underlying allocation (views of one tensor share it)
    is_param: bool = False
    stages: int = 1            # copies of it a software pipeline keeps (multi-buffering)

    @property
    def elements(self) -> int:
        n = 1
        for s in self.shape:
            n *= int(s)
        return n

    @property
    def nbytes(self) -> int:
        return int(self.elements * dtype_bytes(self.dtype))


@dataclass(frozen=True)
class Operand:
    """One buffer an op touches.  `elements` is the total over every execution (tile edges clipped)."""

    buffer: str
    scope: str
    dtype: str
    access: str                # "read", "write", "readwrite" or "atomic"
    extents: tuple[int, ...]   # tile shape of one execution
    elements: int              # total elements touched, summed over all executions
    # Per-block start coordinate of the tile with every loop variable at its first value: a key
    # per block telling which part of the buffer the block works on (used by the L2 model).
    block_start: tuple | None = None
    # times one block reads each distinct element of this operand (im2col: one pixel per kernel tap)
    reuse_in_block: float = 1.0
    # bytes between the elements that neighbouring threads touch (innermost T.Parallel variable);
    # None when not element code
    access_stride: int | None = None
    # shared-memory wavefronts one warp's access takes over its bytes / 128 (bank conflicts: 8.0 for
    # eight lanes of a quarter-warp on the same 16-byte bank group; 2.0 for 32 lanes of 2-byte
    # elements, one wavefront for 64 bytes), from the lanes' addresses; 0.0 where not worked out
    # (the stride stands in)
    wavefront_factor: float = 0.0
    # accessed by element code (per-thread loads and stores), not by a tile op
    element: bool = False
    # per dimension, the [lo, hi) each block sweeps over all its loops and threads (numbers, or
    # arrays over the grid axes like block_start's); None when not worked out (global buffers only):
    # the memory model's wave runs (memory.wave_runs) read it
    block_range: tuple | None = None


@dataclass(frozen=True)
class OpRecord:
    kind: str                          # "copy", "gemm", "elementwise", "reduce", "fill", ...
    label: str                         # short human label, e.g. "copy A -> A_shared"
    executions: int                    # times it runs, summed over every block
    per_block: np.ndarray              # executions per block, flat in launch order (x fastest)
    operands: tuple[Operand, ...] = ()
    attrs: dict = field(default_factory=dict)
    # arithmetic of one execution: {(unit, dtype, opname): count}; units: "tensor", "cuda", "sfu", "cvt"
    ops_per_exec: dict = field(default_factory=dict)
    pipeline_stages: int = 0           # num_stages of the enclosing T.Pipelined loop (0: not pipelined)
    pipeline: int = 0                  # id of the enclosing T.Pipelined loop (0: none)
    flags: frozenset = frozenset()     # "bounded" (upper bound), "assumed" (used --assume values)
    loops: tuple = ()                  # ids of the sequential loops around it, outermost first


@dataclass(frozen=True)
class Unmodeled:
    name: str
    executions: int
    reason: str


@dataclass(frozen=True)
class KernelTrace:
    name: str
    grid: tuple[int, int, int]                 # (x, y, z) blocks
    threads: tuple[int, int, int]
    buffers: dict                              # name -> BufferInfo
    ops: tuple[OpRecord, ...]
    unmodeled: tuple[Unmodeled, ...] = ()
    bounded: tuple[str, ...] = ()              # run-time quantities that were bounded above
    assumed: tuple[str, ...] = ()              # run-time quantities the user bound with --assume
    # (name, share) of run-time values whose branches the user said hold that share of the time (--taken)
    taken: tuple = ()
    swizzle_panel: int = 0                     # T.use_swizzle panel size (0: plain row-major launch)
    swizzle_order: str = "row"
    footprints: dict = field(default_factory=dict)   # storage name -> unique bytes touched
    # storages some access indexes through values read from a tensor (which elements: known at run time)
    data_indexed: tuple = ()
    # storages whose tile starts read a tensor but are one value per block (a grouped GEMM's group):
    # the L2 model takes them to spread the blocks evenly, in launch order, over the dimension
    data_keyed: tuple = ()
    # a persistent kernel walked as the grid its tile loop stands for (walk._virtual_grid_loop): the
    # blocks really launched, which cap those resident at once (0: the grid is the launch's own)
    resident_blocks: int = 0
    # a PrimFunc with several T.Kernel launches: one trace per launch, run one after another (this
    # trace then holds all their records, the first launch's grid and the footprint over all)
    launches: tuple = ()
    # compiler pass options the kernel was written with (@tilelang.jit(pass_configs=...)), as sorted
    # (key, value) pairs: "tl.disable_warp_specialized" changes how its pipelined loops run
    pass_configs: tuple = ()
    # register-budget calls the kernel makes (T.no_set_max_nreg / T.disable_warp_group_reg_alloc,
    # T.set_max_nreg(count, is_inc)), as (name, *int args): they decide whether a warp-specialised
    # launch re-balances registers with setmaxnreg
    register_hints: tuple = ()

    def storage_of(self, buffer: str) -> str:
        """The allocation a buffer (or view) belongs to: its own name when the trace does not know it."""
        info = self.buffers.get(buffer)
        return info.storage if info else buffer

    def pass_config(self, key: str, default=None):
        return next((v for k, v in self.pass_configs if k == key), default)

    @property
    def fast_math(self) -> bool:
        """Built with tl.enable_fast_math (nvcc --use_fast_math): approximate divisions and
        special functions."""
        return bool(self.pass_config("tl.enable_fast_math", False))

    @property
    def num_blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]

    @property
    def threads_per_block(self) -> int:
        return self.threads[0] * self.threads[1] * self.threads[2]

    def shared_bytes_per_block(self) -> int:
        """Every shared buffer's bytes (times its pipeline copies), summed: what the block would
        allocate if no two buffers shared space (model.shared_allocation: what TileLang allocates)."""
        return sum(b.nbytes * b.stages for b in self.buffers.values() if b.scope == SHARED)

    def block_nbytes(self, b: BufferInfo) -> int:
        """Bytes of `b` one block holds: a fragment's shape is the block's tile (its layout spreads
        it over the threads), a T.alloc_local buffer's shape is one thread's (every thread has one)."""
        return b.nbytes * max(self.threads_per_block, 1) if b.scope == LOCAL else b.nbytes

    def fragment_bytes_per_block(self) -> int:
        return sum(self.block_nbytes(b) for b in self.buffers.values() if b.scope in (FRAGMENT, LOCAL))

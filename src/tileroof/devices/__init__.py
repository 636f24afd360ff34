"""Devices as data: catalog files (datasheet numbers, each with its source), calibrated profiles
(numbers measured on the GPU by `tileroof calibrate`), a user's own file, or the live GPU."""
from __future__ import annotations

import copy
import functools
import sys
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

from ..errors import TileroofError
from ..counts import MMA_SUFFIX

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_DEVICE = "h200"

# spec key in the files -> (Device field, factor to base units)
_SPECS = {
    "sm_count": ("sm_count", 1),
    "boost_clock_mhz": ("clock_hz", 1e6),
    "tensor_boost_clock_mhz": ("tensor_boost_clock_hz", 1e6),
    "dram_bandwidth_gbps": ("dram_bw", 1e9),
    "dram_size_gb": ("dram_bytes", 1e9),
    "l2_size_mb": ("l2_bytes", 1e6),
    "l2_partitions": ("l2_partitions", 1),
    "l2_bandwidth_gbps": ("l2_bw", 1e9),
    "shared_mem_per_sm_kb": ("smem_per_sm", 1024),
    "shared_mem_per_block_kb": ("smem_per_block", 1024),
    "registers_per_sm": ("regs_per_sm", 1),
    "max_threads_per_sm": ("max_threads_per_sm", 1),
    "max_blocks_per_sm": ("max_blocks_per_sm", 1),
    "max_threads_per_block": ("max_threads_per_block", 1),
    "max_registers_per_thread": ("max_regs_per_thread", 1),
    "shared_mem_bytes_per_clk_per_sm": ("smem_bytes_per_clk", 1),
    "shared_mem_bandwidth_gbps": ("smem_bw", 1e9),
    "sfu_ops_per_clk_per_sm": ("sfu_per_clk", 1),
    "warp_schedulers_per_sm": ("warp_schedulers", 1),
    "alu_ops_per_clk_per_sm": ("alu_per_clk", 1),
    "shuffle_ops_per_clk_per_sm": ("shuffle_per_clk", 1),
    "launch_overhead_us": ("launch_s", 1e-6),
    "sm_clock_mhz": ("tensor_clock_hz", 1e6),
    "block_fixed_us": ("block_fixed_s", 1e-6),
    "wgmma_min_n": ("wgmma_min_n", 1),
    "wgmma_accumulator_spill_factor": ("accumulator_spill_factor", 1),
    "loop_alu_factor": ("loop_alu_factor", 1),
    "reduce_latency_ns": ("reduce_latency_s", 1e-9),
    "tma_load_latency_us": ("l2_tile_latency_s", 1e-6),
    "sm_pace_spread": ("pace_spread", 1),
    "sm_pace_spread_drifting": ("pace_spread_drifting", 1),
    "block_stagger_per_resident_warp": ("block_stagger_per_warp", 1),
    "l2_request_merge_sms": ("l2_merge_group", 1),
    "gemm_iteration_cycles": ("gemm_iteration_cycles", 1),
    "gemm_iteration_cycles_overlapped": ("gemm_iteration_cycles_overlapped", 1),
    "gemm_wait_cycles": ("gemm_wait_cycles", 1),
    "gemm_wait_cycles_overlapped": ("gemm_wait_cycles_overlapped", 1),
    "gemm_iteration_cycles_nows": ("gemm_iteration_cycles_nows", 1),
    "tensor_rate_share_nows": ("tensor_rate_share_nows", 1),
    "l2_atomic_throughput_gops": ("atomic_rate_contended", 1e9),
    "atomic_throughput_distinct_gops": ("atomic_rate", 1e9),
    "timing_flush_dirty_mb": ("flush_dirty_bytes", 1e6),
    "accumulator_store_ns_per_request": ("store_request_s", 1e-9),
    "accumulator_store_queue_requests": ("store_queue_requests", 1),
    "accumulator_store_requests_per_us_all": ("store_request_rate_all", 1e6),
    "fp32_division_ns_per_thread": ("division_latency_s", 1e-9),
    "block_stream_gbps": ("block_stream_bps", 1e9),
    "block_start_interval_ns": ("block_start_s", 1e-9),
    "warp_start_interval_ns": ("warp_start_s", 1e-9),
    "gemm_shared_hop_cycles": ("gemm_hop_cycles", 1),
    "integer_alu_share": ("integer_alu_share", 1),
}
_TENSOR = {"tensor_tflops_fp16": "fp16", "tensor_tflops_bf16": "bf16", "tensor_tflops_fp8": "fp8",
           "tensor_tflops_tf32": "tf32", "tensor_tops_int8": "int8", "tensor_tflops_fp4": "fp4"}
_TENSOR_CLK = {"tensor_flops_per_clk_per_sm_fp16": "fp16", "tensor_flops_per_clk_per_sm_bf16": "bf16",
               "tensor_flops_per_clk_per_sm_fp8": "fp8", "tensor_flops_per_clk_per_sm_tf32": "tf32",
               "tensor_flops_per_clk_per_sm_int8": "int8"}
_MMA_SHARE = {f"mma_sync_share_{d}": d for d in ("fp16", "bf16", "tf32", "fp8", "int8")}
_CUDA = {"fp32_tflops": "fp32", "fp16_tflops": "fp16", "fp64_tflops": "fp64", "bf16_tflops": "bf16"}


def _tensor_key(table: dict, dtype: str) -> str:
    """The key of a per-dtype tensor-core table that stands for `dtype`: its own, fp32 as tf32,
    fp4/int4 as fp8 where the table lacks them, anything else unknown as fp16."""
    if dtype in table:
        return dtype
    if dtype == "fp32" and "tf32" in table:
        return "tf32"
    if dtype in ("fp4", "int4") and "fp8" in table:
        return "fp8"
    return "fp16"


def _tensor_entry(table: dict, dtype: str) -> float:
    """A per-dtype tensor-core figure (_tensor_key's; 0 where the table lacks even fp16)."""
    return table.get(_tensor_key(table, dtype), 0.0)


@dataclass(frozen=True)
class Device:
    key: str
    name: str
    vendor: str = "nvidia"
    arch: str = ""
    tensor_instruction: str = "mma"
    warp_size: int = 32
    sm_count: int = 0
    clock_hz: float = 0.0
    tensor_boost_clock_hz: float = 0.0    # highest SM clock while the tensor cores work (0: clock_hz)
    tensor_peak: dict = field(default_factory=dict)   # dtype -> FLOP/s (dense)
    cuda_peak: dict = field(default_factory=dict)     # dtype -> FLOP/s
    sfu_per_clk: float = 16.0
    warp_schedulers: int = 0              # per SM, each issuing one warp instruction per clock (0: not timed)
    alu_per_clk: float = 0.0              # compare/min/max/select/integer results per clock per SM (0: not timed)
    shuffle_per_clk: float = 0.0          # warp-shuffle results per clock per SM (0: not timed)
    dram_bw: float = 0.0
    dram_bytes: float = 0.0
    l2_bytes: float = 0.0
    l2_partitions: int = 1
    l2_bw: float = 0.0
    smem_per_sm: float = 0.0
    smem_per_block: float = 0.0
    smem_bytes_per_clk: float = 128.0
    smem_bw: float = 0.0
    regs_per_sm: int = 65536
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    max_threads_per_block: int = 1024
    max_regs_per_thread: int = 255
    launch_s: float = 0.0                 # per launch, launches back to back (CUDA-graph replay)
    timing_floor_s: float = 0.0           # events around one launch behind the timing harness's flush: what a
                                          # do_bench-style measurement adds to a kernel's run (0: use launch_s)
    tensor_clock_hz: float = 0.0          # SM clock at which the measured tensor rates hold (sustained matmul)
    block_fixed_s: float = 0.0            # fixed cost of one pipelined block besides its iterations
    l2_hit_curve: tuple = ()              # ((reuse distance bytes, share of re-reads that hit), ...) measured
    dram_stream: tuple = ()               # ((tile bytes, stages, seconds per iteration), ...) measured
    store_request_rate_all: float = 0.0   # accumulator-store L2 write requests per s, all SMs storing at once (0: unknown)
    division_latency_s: float = 0.0       # one IEEE fp32 division in a thread's element-wise code, in series (0: unknown)
    block_stream_bps: float = 0.0         # bytes a second one block moves with the rest of the GPU idle (0: unknown)
    block_start_s: float = 0.0            # one SM's interval between two block starts, at most (0: unknown)
    warp_start_s: float = 0.0             # one SM's interval between two warp launches (0: unknown)
    tma_load_rate_per_sm: float = 0.0     # bytes/s one SM's tile load moves, one load in flight (0: unknown)
    l2_tile_latency_s: float = 0.0        # one tile load's latency when the tile is in L2, less its transfer (0: unknown)
    wgmma_min_n: float = 0.0              # an m64nNk16 wgmma with N below this takes as long as N = this
    accumulator_spill_factor: float = 0.0  # slowdown of a gemm whose accumulator exceeds a thread's registers
    loop_alu_factor: float = 0.0          # time of fragment arithmetic in a loop over its time at the FP32 peak
    reduce_latency_s: float = 0.0         # latency one row reduction adds to a loop iteration
    pace_spread: float = 0.0              # relative std of the SMs' pace on identical blocks (typical)
    pace_spread_drifting: float = 0.0     # ... in the kernels seen to drift apart (DRAM-saturated)
    # blocks sharing an SM finish in arrival order, so in later waves sharers d launches apart start
    # d / slots x c block times apart, c this x blocks per SM x warps per SM (timeline sets 13, 14
    # and 16; 0 = in step)
    block_stagger_per_warp: float = 0.0
    # deciles of the staggered sharers' start gaps over their median (memory.drift_misses), measured
    block_stagger_gap_deciles: tuple = ()
    # SM cycles a gemm waits when its operand is another gemm's result of the same iteration staged
    # through shared memory (the fragment's store, the barrier), besides its own math
    gemm_hop_cycles: float = 0.0
    tensor_per_clk: dict = field(default_factory=dict)  # dtype -> dense tensor FLOP per clock per SM (peak)
    # on a wgmma GPU: dtype -> share of the wgmma rate (tensor_peak, tensor_per_clk) that a gemm
    # lowered to mma.sync sustains at its tensor pipe's peak (counts.gemm_instruction); measured
    mma_share: dict = field(default_factory=dict)
    gemm_iteration_cycles: float = 0.0    # one consumer warpgroup: cycles a pipelined gemm iteration adds to its math
    gemm_iteration_cycles_overlapped: float = 0.0  # several: cycles one's iteration adds to its share of the math
    # a pipelined gemm iteration without warp specialisation (cp.async, consumers load): its fixed
    # cycles, its math's share of the per-clock tensor peak, and the SM's time for B co-resident
    # blocks' iterations over one block's ((B, ratio), ...): tileroof.gpu.gemm_pipe --nows
    gemm_iteration_cycles_nows: float = 0.0
    tensor_rate_share_nows: float = 0.0
    coresidency_nows: tuple = ()
    small_block_nows: tuple = ()          # (warps a block, rate over its schedulers' share, fixed cycles)
    coresidency_warps: tuple = ()         # (warps on the SM, cycles of each block's iteration over one alone)
    gemm_wait_cycles: float | None = None  # what each further gemm of an iteration adds (one warpgroup; None: as much
    gemm_wait_cycles_overlapped: float | None = None  # as the first)   ... several warpgroups
    l2_merge_group: int = 1               # SMs (one TPC) that consecutive blocks land on and whose identical
                                          # tile requests reach the L2 slices once
    atomic_rate: float = 0.0              # atomics/s to distinct addresses (all SMs)
    atomic_rate_contended: float = 0.0    # atomics/s onto a small table that lives in L2 (histogram)
    flush_dirty_bytes: float = 0.0        # L2 lines the timing harness's flush (zero_) leaves dirty
    flush_writeback_cost: tuple = ()      # ((read share of a kernel's DRAM bytes, seconds per byte written back), ...)
    # ((piece bytes, run bytes, DRAM time per byte over a contiguous stream's), ...): reads / writes
    # that a wave makes in runs of that length across many rows, each block moving pieces of that
    # many contiguous bytes of a row (tileroof.gpu.blockrate --mode widths / pieces)
    dram_spread_read: tuple = ()
    dram_spread_write: tuple = ()
    store_request_s: float = 0.0          # an SM's time per L2 write request of an accumulator stored from its fragment
    store_queue_requests: float = 0.0     # ... of which a block's first this many cost it nothing (queued)
    # share of integer bit work the compiler leaves on the integer (ALU) pipe; the rest it issues as
    # IMAD (shifts left, adds, moves) on the FMA-heavy pipe beside it (1: all on the ALU pipe)
    integer_alu_share: float = 1.0
    sources: dict = field(default_factory=dict)       # field -> citation
    calibrated: dict = field(default_factory=dict)    # field -> {"value", "method", ...} from a profile
    fitted: dict = field(default_factory=dict)        # time-model constants fitted on recorded kernels
    origin: str = "catalog"
    calibrated_on: str = ""       # catalog key of the GPU whose profile gave `calibrated` ("" when none)

    # ---- derived rates -------------------------------------------------------------------------
    @property
    def sfu_rate(self) -> float:
        return self.sfu_per_clk * self.sm_count * self.clock_hz

    @property
    def issue_rate(self) -> float:
        """Warp instructions per second all SMs can issue (0 when the device does not say)."""
        return self.warp_schedulers * self.sm_count * self.clock_hz

    @property
    def alu_rate(self) -> float:
        """Thread results per second of the integer/compare/logic pipe, all SMs (0: unknown)."""
        return self.alu_per_clk * self.sm_count * self.clock_hz

    @property
    def shuffle_rate(self) -> float:
        """Thread results per second of warp shuffles, all SMs (0: unknown)."""
        return self.shuffle_per_clk * self.sm_count * self.clock_hz

    @property
    def shared_bw(self) -> float:
        return self.smem_bw or self.smem_bytes_per_clk * self.sm_count * self.clock_hz

    def tensor_rate(self, dtype: str) -> float:
        """Dense tensor FLOP/s of `dtype`; a dtype key ending in counts.MMA_SUFFIX (a gemm that runs
        mma.sync on a wgmma GPU) at mma.sync's share of it (mma_rate_share)."""
        base, mma = _mma_key(dtype)
        return _tensor_entry(self.tensor_peak, base) * (self.mma_rate_share(base) if mma else 1.0)

    def tensor_flops_per_clk(self, dtype: str) -> float:
        """Dense tensor FLOP per clock per SM at the tensor cores' peak (0 when unknown); mma.sync's
        share of it for a dtype key ending in counts.MMA_SUFFIX."""
        base, mma = _mma_key(dtype)
        return _tensor_entry(self.tensor_per_clk, base) * (self.mma_rate_share(base) if mma else 1.0)

    def tensor_rate_note(self, dtype: str) -> str | None:
        """What the tensor rate of `dtype` stands in for when the catalog entry has none of its own
        (_tensor_entry's fallbacks), or None: said in the result's assumptions, never silently."""
        base, _ = _mma_key(dtype)
        key = _tensor_key(self.tensor_peak, base)
        if key == base or (base, key) == ("fp32", "tf32") or key not in self.tensor_peak:
            return None
        return f"{self.name}: no tensor rate for {base} in its catalog entry: timed at {key}'s"

    def mma_rate_share(self, dtype: str) -> float:
        """The share of the wgmma rate mma.sync sustains for `dtype` (fp32 as tf32; a dtype not
        measured takes the lowest share measured; 1 where none is)."""
        d = "tf32" if dtype == "fp32" else dtype
        return self.mma_share.get(d, min(self.mma_share.values(), default=1.0))

    def cuda_rate(self, dtype: str) -> float:
        if dtype in self.cuda_peak:
            return self.cuda_peak[dtype]
        if dtype == "bf16" and "fp16" in self.cuda_peak:
            return self.cuda_peak["fp16"]
        return self.cuda_peak.get("fp32", 0.0)

    def describe(self) -> dict:
        return {"key": self.key, "name": self.name, "origin": self.origin, "sm_count": self.sm_count,
                "clock_mhz": self.clock_hz / 1e6, "dram_bw_GBps": self.dram_bw / 1e9,
                "l2_MB": self.l2_bytes / 1e6, "tensor_TFLOPs": {k: v / 1e12 for k, v in self.tensor_peak.items()},
                "cuda_TFLOPs": {k: v / 1e12 for k, v in self.cuda_peak.items()},
                "calibrated": sorted(self.calibrated), "calibrated_on": self.calibrated_on}


def _mma_key(dtype: str) -> tuple[str, bool]:
    """(the dtype, whether the key names a gemm run as mma.sync on a wgmma GPU: counts.MMA_SUFFIX)."""
    d = str(dtype)
    return (d[:-len(MMA_SUFFIX)], True) if d.endswith(MMA_SUFFIX) else (d, False)


def _value(entry):
    return entry["value"] if isinstance(entry, dict) else entry


def _apply(fields: dict, specs: dict, sources: dict, cites: dict | None) -> None:
    mma_measured: dict = {}             # dtype -> (rate, cite) of rates measured on mma.sync kernels
    for key, entry in specs.items():
        value = _value(entry)
        src = entry.get("source", entry.get("method", "")) if isinstance(entry, dict) else ""
        cite = (cites or {}).get(src, src)
        if key == "launch_overhead_us" and isinstance(entry, dict) and entry.get("behind_flush_us"):
            # calibrate's launch benchmark also times one launch behind the harness's 256 MiB flush
            fields["timing_floor_s"] = float(entry["behind_flush_us"]) * 1e-6
            sources["timing_floor_s"] = f"{cite} (behind_flush_us)"
        if key == "tma_load_latency_us" and isinstance(entry, dict) and entry.get("single_load_gbps_per_sm"):
            # calibrate's tile_stream also fits the one-stage L2 line's slope: one SM's load rate
            fields["tma_load_rate_per_sm"] = float(entry["single_load_gbps_per_sm"]) * 1e9
            sources["tma_load_rate_per_sm"] = f"{cite} (single_load_gbps_per_sm)"
        if key in _SPECS:
            name, factor = _SPECS[key]
            fields[name] = type(fields.get(name, 0.0))(value * factor) if name in ("sm_count", "l2_partitions", "regs_per_sm",
                                                                                  "max_threads_per_sm", "max_blocks_per_sm",
                                                                                  "max_threads_per_block", "max_regs_per_thread",
                                                                                  "l2_merge_group", "warp_schedulers") else value * factor
            sources[name] = cite
        elif key == "tma_stream_dram_ns":
            fields["dram_stream"] = tuple((float(b), int(st), float(ns) * 1e-9) for b, st, ns in value)
            sources["dram_stream"] = cite
        elif key == "flush_writeback_ns_per_mb":
            fields["flush_writeback_cost"] = tuple((float(r), float(ns) * 1e-15) for r, ns in value)
            sources["flush_writeback_cost"] = cite
        elif key in ("dram_spread_read", "dram_spread_write"):
            fields[key] = tuple((float(p), float(b), float(f)) for p, b, f in value)
            sources[key] = cite
        elif key in ("coresidency_nows", "coresidency_warps"):
            fields[key] = tuple((float(b), float(g)) for b, g in value)
            sources[key] = cite
        elif key == "small_block_nows":
            fields[key] = tuple((float(w), float(r), float(c)) for w, r, c in value)
            sources[key] = cite
        elif key == "block_stagger_gap_deciles":
            fields["block_stagger_gap_deciles"] = tuple(float(v) for v in value)
            sources["block_stagger_gap_deciles"] = cite
        elif key == "l2_reuse_hit_curve":
            fields["l2_hit_curve"] = tuple((float(d), float(h)) for d, h in value)
            sources["l2_hit_curve"] = cite
        elif key in _TENSOR and isinstance(entry, dict) and entry.get("instruction") == "mma.sync":
            # the library GEMM that measured it ran mma.sync (tileroof.gpu.cublas_instr): its rate is
            # mma.sync's; the tensor cores' (wgmma) rate is it over mma.sync's measured share, below
            mma_measured[_TENSOR[key]] = (value * 1e12, cite)
        elif key in _TENSOR:
            fields.setdefault("tensor_peak", {})[_TENSOR[key]] = value * 1e12
            sources[f"tensor_peak.{_TENSOR[key]}"] = cite
        elif key in _CUDA:
            fields.setdefault("cuda_peak", {})[_CUDA[key]] = value * 1e12
            sources[f"cuda_peak.{_CUDA[key]}"] = cite
        elif key in _MMA_SHARE:
            fields.setdefault("mma_share", {})[_MMA_SHARE[key]] = float(value)
            sources[f"mma_share.{_MMA_SHARE[key]}"] = cite
        elif key in _TENSOR_CLK:
            fields.setdefault("tensor_per_clk", {})[_TENSOR_CLK[key]] = float(value)
            sources[f"tensor_per_clk.{_TENSOR_CLK[key]}"] = cite
    for d, (rate, cite) in mma_measured.items():
        share = fields.get("mma_share", {}).get(d)
        fields.setdefault("tensor_peak", {})[d] = rate / share if share else rate
        sources[f"tensor_peak.{d}"] = (f"{cite} (measured on an mma.sync library kernel: {rate / 1e12:.1f} T/s over "
                                       f"mma_sync_share_{d} {share})" if share else cite)


def from_dict(data: dict, origin: str) -> Device:
    if "spec" not in data or "key" not in data:
        raise TileroofError(f"{origin}: not a tileroof device file (needs `key` and a [spec] table)")
    fields: dict = {"tensor_peak": {}, "cuda_peak": {}, "tensor_per_clk": {}, "mma_share": {}}
    sources: dict = {}
    _apply(fields, data["spec"], sources, data.get("sources"))
    ints = {"sm_count", "l2_partitions", "regs_per_sm", "max_threads_per_sm", "max_blocks_per_sm",
            "max_threads_per_block", "max_regs_per_thread", "l2_merge_group", "warp_schedulers"}
    for k in ints & fields.keys():
        fields[k] = int(fields[k])
    return Device(key=data["key"], name=data.get("name", data["key"]), vendor=data.get("vendor", "nvidia"),
                  arch=data.get("arch", ""), tensor_instruction=data.get("tensor_instruction", "mma"),
                  warp_size=int(data.get("warp_size", 32)), sources=sources, origin=origin, **fields)


def apply_profile(dev: Device, profile: dict, origin: str, measured_on: str = "") -> Device:
    """Overlay measured values from a calibration profile onto a catalog device.  measured_on: the
    catalog key of the GPU the profile was measured on (default: the device itself)."""
    measured = profile.get("measured", {})
    fields = {"tensor_peak": dict(dev.tensor_peak), "cuda_peak": dict(dev.cuda_peak),
              "tensor_per_clk": dict(dev.tensor_per_clk), "mma_share": dict(dev.mma_share)}
    sources = dict(dev.sources)
    _apply(fields, measured, sources, None)
    prov = profile.get("provenance", {})
    where = f"measured by tileroof calibrate on {prov.get('gpu', '?')} ({prov.get('date', '?')})"
    for k in list(sources):
        if k not in dev.sources or sources[k] != dev.sources.get(k):
            sources[k] = f"{where}: {sources[k]}"
    fitted = {k: _value(v) for k, v in profile.get("fitted", {}).items() if isinstance(v, dict) or isinstance(v, (int, float))}
    return replace(dev, sources=sources, calibrated={k: _value(v) for k, v in measured.items()},
                   fitted=fitted, origin=f"{dev.origin}+{origin}", calibrated_on=measured_on or dev.key, **fields)


def catalog_dir() -> Path:
    return Path(str(resources.files("tileroof.devices") / "catalog"))


def profiles_dir() -> Path:
    return Path(str(resources.files("tileroof.devices") / "profiles"))


def catalog_keys() -> list[str]:
    return sorted(p.stem for p in catalog_dir().glob("*.toml"))


def _read(path: Path) -> dict:
    """The parsed TOML of a device file (a copy: parsing is most of a device load, and `rank` or a
    sweep loads the same device for every config; re-read when the file changes)."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise TileroofError(f"cannot read device file {path}: {exc}") from None
    return copy.deepcopy(_parse(str(path), stamp))


@functools.lru_cache(maxsize=64)
def _parse(path: str, stamp: int) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TileroofError(f"cannot read device file {path}: {exc}") from None


def load(name: str | None = None, calibrated: bool = True) -> Device:
    """A device by catalog key ("h200"), by a path to a device or profile TOML, or "live"."""
    name = name or DEFAULT_DEVICE
    if isinstance(name, Device):
        return name
    if name == "live":
        from .live import live_device
        return live_device()
    path = Path(name)
    if path.suffix == ".toml" and path.exists():
        data = _read(path)
        if "measured" in data and "spec" not in data:
            base = load(data.get("key", ""), calibrated=False)
            return apply_profile(base, data, str(path))
        return from_dict(data, str(path))
    key = name.lower().replace("-", "_")
    file = catalog_dir() / f"{key}.toml"
    if not file.exists():
        raise TileroofError(f"unknown device {name!r}: choose one of {', '.join(catalog_keys())}, "
                            "'live', or a path to a device .toml")
    # a catalog device is rebuilt only when one of its files changes (Device is frozen: the cached
    # one is shared); this saves a TOML deep copy per call, not measurable time (session 16)
    files = (file, profiles_dir() / f"{key}.toml", profiles_dir() / f"{DEFAULT_DEVICE}.toml", _transfer_rules_path())
    stamps = tuple(f.stat().st_mtime_ns if f.exists() else 0 for f in files)
    return _load_catalog(key, calibrated, stamps)


@functools.lru_cache(maxsize=64)
def _load_catalog(key: str, calibrated: bool, stamps: tuple) -> Device:
    """load() of a catalog key, for one set of its files' modification times."""
    file = catalog_dir() / f"{key}.toml"
    data = _read(file)
    dev = from_dict(data, f"catalog/{key}.toml")
    prof = profiles_dir() / f"{key}.toml"
    if calibrated and prof.exists():
        dev = apply_profile(dev, _read(prof), f"profiles/{key}.toml")
    elif calibrated:
        ref = _same_architecture_profile(key, data)
        if ref is not None:
            profile = transferred_profile(_read(ref), _read(catalog_dir() / f"{ref.stem}.toml"), data)
            dev = apply_profile(dev, profile, f"profiles/{ref.stem}.toml transferred", measured_on=ref.stem)
    if not dev.fitted:
        # time-model constants were fitted on one GPU only: borrow them, and say so
        ref = profiles_dir() / f"{DEFAULT_DEVICE}.toml"
        if ref.exists() and key != DEFAULT_DEVICE:
            fitted = {k: _value(v) for k, v in _read(ref).get("fitted", {}).items()}
            dev = replace(dev, fitted=fitted, sources={**dev.sources, "fitted": f"borrowed from profiles/{DEFAULT_DEVICE}.toml "
                                                       "(no measurements on this GPU)"})
    return dev


def _transfer_rules_path() -> Path:
    return Path(str(resources.files("tileroof.devices"))) / "transfer.toml"


def _same_architecture_profile(key: str, mine: dict) -> Path | None:
    """The measured profile of another GPU of the architecture and compute capability of `mine`
    (catalog entry `key`; the H200's for an H100), or None."""
    for prof in sorted(profiles_dir().glob("*.toml")):
        cat = catalog_dir() / f"{prof.stem}.toml"
        if prof.stem == key or not cat.exists():
            continue
        other = _read(cat)
        if (other.get("arch"), other.get("compute_capability")) == (mine.get("arch"), mine.get("compute_capability")):
            return prof
    return None


def _spec(catalog: dict, key: str) -> float:
    entry = catalog.get("spec", {}).get(key)
    if entry is None:
        raise KeyError(key)
    return float(_value(entry))


def transferred_profile(profile: dict, source: dict, target: dict) -> dict:
    """`profile` (measured on the GPU of catalog entry `source`) carried over to the GPU of catalog
    entry `target`, which has the same architecture, by the rules of transfer.toml: each measured
    value scaled by the ratio of the two datasheets' figures its rule names.  Keys without a rule,
    or whose ratio a datasheet lacks, are left out; the fitted constants are kept."""
    rules = tomllib.loads(_transfer_rules_path().read_text())["rules"]

    def ratio(spec: str) -> float:
        return _spec(target, spec) / _spec(source, spec)

    def chip(cat):
        return _spec(cat, "sm_count") * _spec(cat, "boost_clock_mhz")

    gpu = profile.get("provenance", {}).get("gpu", source.get("name", "?"))
    out = {"schema": profile.get("schema", 1), "key": target["key"], "fitted": profile.get("fitted", {}),
           "provenance": {**profile.get("provenance", {}), "transferred_to": target["key"]}, "measured": {}}
    for key, entry in profile.get("measured", {}).items():
        rule = rules.get(key)
        if rule is None or not isinstance(entry, dict):
            continue
        v = entry["value"]
        try:
            if rule == "same":
                f = 1.0
            elif rule in ("dram", "dram_axis2"):
                f = ratio("dram_bandwidth_gbps")
            elif rule == "dram_time_axis2":
                f = 1.0 / ratio("dram_bandwidth_gbps")
            elif rule == "chip":
                f = chip(target) / chip(source)
            elif rule == "clock":
                f = ratio("boost_clock_mhz")
            elif rule == "peak":
                f = ratio(key)
            elif rule in ("l2", "l2_axis"):
                f = ratio("l2_size_mb")
            else:
                raise TileroofError(f"transfer.toml: unknown rule {rule!r} for {key}")
        except KeyError:
            continue
        if rule == "same":
            pass
        elif rule == "l2_axis":
            v = [[a * f, *rest] for a, *rest in v]
        elif rule in ("dram_axis2", "dram_time_axis2"):
            v = [[a, b * f, *rest] for a, b, *rest in v]
        else:
            v = v * f
        note = "" if f == 1.0 else f" x {f:.4g} ({rule} ratio of the datasheets)"
        out["measured"][key] = {**entry, "value": v,
                                "method": f"measured on {gpu}, carried to {target.get('name', target['key'])} "
                                          f"by transfer.toml rule '{rule}'{note}: {entry.get('method', '')}"}
    return out


def from_carver(arch) -> Device:
    """A tilelang.carver.arch device (what TileLang's own Analyzer takes) mapped onto the catalog."""
    name = getattr(getattr(arch, "device", None), "name", "") or str(getattr(arch, "name", ""))
    key = match_name(name)
    return load(key) if key else load(DEFAULT_DEVICE)


def match_name(gpu_name: str) -> str | None:
    """Catalog key for a GPU marketing name such as 'NVIDIA H200' or 'NVIDIA H100 80GB HBM3'."""
    n = gpu_name.lower()
    table = [("h200", "h200"), ("h100 pcie", "h100_pcie"), ("h100", "h100_sxm"), ("a100", "a100_80gb"),
             ("l40s", "l40s"), ("4090", "rtx_4090"), ("b200", "b200"), ("mi300x", "mi300x")]
    for needle, key in table:
        if needle in n:
            if key == "a100_80gb" and "40gb" in n:
                return "a100_40gb"
            return key
    return None


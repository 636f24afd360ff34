"""Ablation: the accuracy each model component buys, on the recorded H200 data.

    python benchmarks/ablation.py                  # the cumulative table (sessions 1-9)
    python benchmarks/ablation.py --leave-one-out [S11 S20 ...]  # sessions 11-20's mechanisms, each
                                                                 # switched off alone (all groups, or those named)

Each row switches on one more mechanism and re-scores every recorded kernel and sweep
(tileroof.score): median / p90 |time error| on the held-out split, DRAM median error, and the
sweeps' Kendall tau.  Components are switched off by replacing the function that implements them
for the duration of one row (nothing in the library carries ablation flags).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np

import tilelang  # noqa: F401  (puts TileLang's TVM on the path, for tileroof.ir.walk)

from tileroof import counts, devices, memory, model, score
from tileroof.ir import walk


@contextlib.contextmanager
def patched(obj, name, value):
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextlib.contextmanager
def switched_off(stack):
    """Every (object, name, value) of `stack` patched in, for the with-block."""
    with contextlib.ExitStack() as es:
        for obj, name, value in stack:
            es.enter_context(patched(obj, name, value))
        yield


def _no_l2_model(trace, slots, l2_bytes, l2_partitions=1, hit_curve=(), states=((0.0, 1),), order=None):
    """No L2 reuse: every global byte the ops issue comes from DRAM (in every state asked for)."""
    out = []
    for est in ORIG_MEMORY(trace, slots, l2_bytes, l2_partitions, (), ((0.0, 1),) * len(states), order):
        est.dram_read = est.l2_read
        est.dram_write = est.l2_write
        out.append(est)
    return out


def _datasheet_device(name="h200", calibrated=True):
    return ORIG_LOAD(name, calibrated=False)


def _no_ws(trace, dev):
    return ORIG_OCC(trace, replace(dev, tensor_instruction="mma"))


def _launch_regs(trace, dev):
    """Consumers keep the launch-time register share (no setmaxnreg re-balancing)."""
    occ = ORIG_OCC(trace, dev)
    occ.consumer_regs_per_thread = occ.regs_per_thread
    return occ


def _without(*fields):
    """The calibrated device with some measured mechanism constants switched off."""
    def load(name="h200", calibrated=True):
        return replace(ORIG_LOAD(name, calibrated=calibrated),
                       **{f: (() if f in ("l2_hit_curve", "dram_stream", "block_stagger_gap_deciles")
                             else 1 if f in ("l2_merge_group", "integer_alu_share") else 0.0)
                          for f in fields})
    return load


def _whole_iteration(t_compute, t_tensor, gemms):
    return t_compute / gemms


def _whole_spill(rec, occ):
    """A spilled accumulator moves whole (no wgmma-fragment slots), its reuse distance only the spills."""
    return 1.0 if ORIG_SHARE(rec, occ) > 0 else 0.0


def _spill_only_distance(*a, **k):
    k.pop("streamed_per_iteration", None)
    return ORIG_LOCAL_SPILL(*a[:7], **k)


def _per_gemm(dev, n_gemm, warpgroups):
    """Every gemm of an iteration pays the one-gemm cost (no attn_pipe measurement)."""
    return ORIG_FIXED(replace(dev, gemm_wait_cycles=None, gemm_wait_cycles_overlapped=None), n_gemm, warpgroups)


def _untiled_upper_bound(issued, unique, data_indexed, *a, **k):
    """Every untiled read as if indexed by tensor data (the rule before session 6)."""
    return ORIG_UNTILED(issued, unique, True, *a, **k)


ORIG_UNTILED = memory.untiled_read
ORIG_STORE = model.accumulator_store_time


def store_bytes_only(nbytes, requests, dev, per_sm_l2):
    """Accumulator stores timed as their bytes at the SM's L2 share (no per-request law: before
    session 7)."""
    return ORIG_STORE(nbytes, requests, replace(dev, store_request_s=0.0), per_sm_l2)
ORIG_FIXED = model.gemm_fixed_cycles
ORIG_SHARE = model.spilled_share
ORIG_LOCAL_SPILL = memory.local_spill
ORIG_MEMORY = memory.estimates
ORIG_LOAD = devices.load
ORIG_OCC = model.occupancy


# session 9, off in every row before its own: tile starts read from a tensor keyed by the blocks they
# depend on (off: every issued byte once the buffer exceeds the L2); SIMT issue bounds (off: FLOPs
# at the FP32 peak only); blocks share an SM as many as are resident (off: the occupancy limit);
# the non-warp-specialised gemm iteration of gemm_pipe --nows (off: the warp-specialised law)
S9 = [(walk.Walker, "_data_keyed_starts", lambda self, *a: None),
      (model, "simt_issue_times", lambda counts_, dev: {}),
      (model, "resident_blocks", lambda trace, dev, occ: occ.blocks_per_sm),
      (model, "nows_law", lambda dev: False)]


def run(label, stack, s9_on=0):
    """One row: `stack` switched off, and the session-9 mechanisms after the first `s9_on`."""
    with switched_off(list(stack) + S9[s9_on:]):
        rep = score.evaluate()
    h, a = rep["summary"]["holdout"], rep["summary"]["all"]
    taus = " ".join(f"{k}={v['kendall_tau']:.2f}" for k, v in rep["sweeps"].items())
    print(f"| {label:58s} | {h['time_median']:6.1%} | {h['time_p90']:6.1%} | {a['time_median']:6.1%} | "
          f"{a['time_p90']:6.1%} | {a['dram_median']:6.1%} | {a['dram_p90']:6.1%} | {a['dram_worst']:6.1%} | {taus} |")


def main() -> int:
    # session-5 mechanisms, off in every row before their own
    no_drift = (model, "drifts", lambda *a: False)
    summed = (memory, "MAX_EXACT_WAVES", 0)
    whole = [(model, "spilled_share", _whole_spill), (memory, "local_spill", _spill_only_distance)]
    per_gemm = (model, "gemm_fixed_cycles", _per_gemm)
    # sessions 6-8, off in every row before its own: the flush write-back, the per-run floor, untiled
    # reads that walk their buffer (off: every issued byte once the buffer exceeds the L2), the
    # accumulator store by its L2 write requests (off: its bytes at the SM's L2 share)
    # session 8: tensor work capped at the tensor boost clock (off: at the FP32/FP64 boost clock)
    no_flush = [(memory, "flush_writeback", lambda *a: 0.0), (model, "timing_floor", lambda dev: dev.launch_s),
                (memory, "untiled_read", _untiled_upper_bound),
                (model, "accumulator_store_time", store_bytes_only),
                (model, "tensor_boost_clock", lambda dev: dev.clock_hz)]
    s5 = [no_drift, summed, per_gemm] + no_flush + whole
    no_pipe = (model, "pipeline_at_clock", lambda *a, **k: None)
    no_spill = (model, "spill_memory", lambda trace, counts_, dev, occ, mem: mem)
    no_clock = (devices, "load", _without("tensor_clock_hz", "l2_merge_group", "gemm_iteration_cycles"))
    print("| model | holdout time med | holdout time p90 | all time med | all time p90 | DRAM med | DRAM p90 | DRAM worst "
          "| Kendall tau per sweep |")
    print("|---|---|---|---|---|---|---|---|---|")
    run("roofline, datasheet peaks, no L2 reuse, no WS, no pipeline", [
        (devices, "load", _datasheet_device), (memory, "estimates", _no_l2_model), (model, "occupancy", _no_ws), no_pipe,
        no_spill] + s5)
    run("+ calibrated peaks (tileroof calibrate)", [
        (memory, "estimates", _no_l2_model), (model, "occupancy", _no_ws), no_pipe, no_spill, no_clock] + s5)
    run("+ L2 reuse (tiles shared by resident blocks, LRU across waves)", [(model, "occupancy", _no_ws), no_pipe,
                                                                            no_spill, no_clock] + s5)
    run("+ warp-specialised occupancy (Hopper)", [no_pipe, no_spill, no_clock] + s5)
    # session-2 and -3 mechanisms, each switched on in turn on top of the block pipeline
    late = ["block_fixed_s", "accumulator_spill_factor", "wgmma_min_n", "loop_alu_factor", "reduce_latency_s",
            "l2_hit_curve", "dram_stream", "tensor_clock_hz", "l2_merge_group", "gemm_iteration_cycles"]
    base = [(memory, "dirty_at_end", lambda *a: 0.0), (counts, "accumulator_store_waste", lambda *a: 0),
            (model, "buffer_hold", _whole_iteration),
            (model, "occupancy", _launch_regs), no_spill]
    run("+ block pipeline (stages, latency, per-iteration cost)", base + [(devices, "load", _without(*late))] + s5)
    run("+ L2 write-back: writes still dirty in L2 at the end", base[1:] + [(devices, "load", _without(*late))] + s5)
    run("+ accumulator stores fill half sectors; measured per-block cost", base[2:] + [
        (devices, "load", _without(*late[1:]))] + s5)
    run("+ a single-stage buffer is held by its own gemm only (attention: K by S = QK^T, V by O += PV)", base[4:] + [
        (devices, "load", _without(*late[1:]))] + s5)
    run("+ consumer registers after setmaxnreg (240)", [no_spill, (devices, "load", _without(*late[1:]))] + s5)
    run("+ gemm accumulator larger than the registers: x4.64 (measured)", [no_spill, (devices, "load", _without(*late[2:]))] + s5)
    run("+ narrow wgmma (N < 48) at the N = 48 rate (measured)", [no_spill, (devices, "load", _without(*late[3:]))] + s5)
    run("+ loop ALU rate and row-reduction latency (measured)", [no_spill, (devices, "load", _without(*late[5:]))] + s5)
    run("+ measured L2 hit share against reuse distance (l2probe)", [no_spill, (devices, "load", _without(*late[6:]))] + s5)
    run("+ DRAM-fed tiles at the measured streaming pace (tile_stream)", [no_spill, (devices, "load", _without(*late[7:]))] + s5)
    run("+ spilled accumulators move through L2 (local memory)", [(devices, "load", _without(*late[7:]))] + s5)
    run("+ power-limited SM clock (cube law from the sustained-matmul clock)", [
        (devices, "load", _without(*late[8:]))] + s5)
    run("+ L2 request coalescing: TPC mates' identical tile loads (l2merge)", [
        (devices, "load", _without(*late[9:]))] + s5)
    run("+ gemm iteration = math at the per-clock peak + fixed cycles (gemm_pipe)", s5)
    run("+ spilled share by wgmma fragment slots; spill distance with the wave's tiles", [no_drift, summed, per_gemm]
        + no_flush)
    run("+ reuse distance = distinct bytes of the waves in between (not their sum)", [no_drift, per_gemm] + no_flush)
    run("+ drift predicted: prefetch window past a tile's DRAM round trip, memory-bound", [per_gemm] + no_flush)
    run("+ a second gemm per iteration adds what attn_pipe measured (not a whole gemm's cost)", no_flush)
    run("+ the harness's L2 flush: its dirty lines written back inside the timed run (flushwb)", no_flush[1:])
    run("+ the harness's per-run floor (an empty launch behind the flush: 3.46 us), not graph replay's 0.49 us",
        no_flush[2:])
    run("+ untiled reads indexed from block/thread/loop indices walk their buffer (the footprint once)", no_flush[3:])
    run("+ accumulator stored from the fragment costs the SM per L2 write request (timeline set 8)", no_flush[4:])
    run("+ tensor work at most at the tensor boost clock (1748 MHz measured; datasheet 1830)", [])
    for s9_on, label in enumerate((
            "+ tile starts read from a tensor, one per block: keyed by the blocks they depend on (grouped GEMM)",
            "+ SIMT issue: instructions per pipe (ALU, FP32, shuffle) at the schedulers' rate",
            "+ blocks share an SM only as many as are resident (grids smaller than the slots)",
            "+ non-warp-specialised gemm iterations at the measured law, co-resident blocks overlap (gemm_pipe --nows)"),
            start=1):
        run(label, [], s9_on)
    return 0


@dataclass
class _NoDirtyAllocation(memory.MemoryEstimate):
    """A memory estimate whose writes still dirty at the end allocate nothing (before session 11)."""

    def __post_init__(self):
        self.dirty_at_end = 0


# session 11, each switched off alone on the current record
S11 = [
    ("writes still dirty at the end allocate L2 lines in the flush write-back",
     [(memory, "MemoryEstimate", _NoDirtyAllocation)]),
    ("spilled share of the fragments at the accumulator-spill cost (off: the ratio need / regs)",
     [(model, "register_spill_factor", lambda need, regs, dev: max(need / regs, 1.0) if regs else 1.0)]),
    ("integer bit operations in the pipelined iteration's chain",
     [(counts, "integer_bit_instructions", lambda rec: 0.0)]),
    ("cp.async producer as wide as the consumers for element-gathered tiles",
     [(model, "_element_gather_producer", lambda trace: False)]),
]


# session 12, each switched off alone: the first wave in step (timeline set 11)
S12 = [
    ("the first wave's accumulator stores at the whole GPU's L2 request rate (off: the per-SM law)",
     [(devices, "load", _without("store_request_rate_all"))]),
    ("tiles a DRAM round trip away: the first wave's, and streams of fewer SMs than the GPU's",
     [(devices, "load", _without("tma_load_rate_per_sm"))]),
    ("each thread's IEEE divisions one after another (divchain; off: their instructions only)",
     [(devices, "load", _without("division_latency_s"))]),
]


# session 13, switched off alone: co-resident blocks finish in arrival order (timeline sets 13-14)
S13 = [
    ("blocks sharing an SM finish in arrival order, their successors start staggered (off: in step)",
     [(devices, "load", _without("block_stagger_per_warp"))]),
    ("a gemm fed through shared memory by a gemm of its iteration waits its hop (gemm_pipe --chain; off: no wait)",
     [(devices, "load", _without("gemm_hop_cycles"))]),
]


# session 14, switched off alone: staggered sharers that the SM paces keep their gaps (drift_misses, apart)
S14 = [
    ("staggered sharers the SM paces keep their gaps, each sweeping its own window (off: followers that hit "
     "catch up)", [(model, "memory_paced", lambda bound: True)]),
    ("the stagger's own measured gap deciles (off: the drift's |normal| ones)",
     [(devices, "load", _without("block_stagger_gap_deciles"))]),
]


# session 16, switched off alone: register gemm operands and the integer pipes (run 80 / 106)
S16 = [
    ("a register gemm operand held once per warp column, the code writing it run on each copy (off: once)",
     [(counts, "fragment_replicas", lambda *a, **k: {})]),
    ("integer bit work split over the ALU and FMA-heavy pipes at the measured share (off: all on the ALU pipe)",
     [(devices, "load", _without("integer_alu_share"))]),
]


# session 18, switched off alone: a launch without a pipelined loop runs its first wave's phases in
# lock-step (model.block_chain; probe_chain_*, run 109)
NO_BLOCK_CHAIN = [(model, "block_chain", lambda *a, **k: None)]
S18 = [
    ("the first wave's load-wait-compute-store chain in lock-step, the rest at the roofline (off: the roofline)",
     NO_BLOCK_CHAIN),
]


def _fitted_latency(value):
    """The calibrated device with load_latency_s at `value` (the fit of an earlier law)."""
    def load(name="h200", calibrated=True):
        d = ORIG_LOAD(name, calibrated=calibrated)
        return replace(d, fitted={**d.fitted, "load_latency_s": value})
    return load


# session 19, switched off alone: the warp-specialised refill law (run 115) and the taken-sharing
# rule of data branches (run 116)
# (the switches benchmarks/predict.py also writes its without-predictions with)
OLD_REFILL_LAW = [(model, "ws_refill_period", lambda latency, hold, stages: latency / (stages - 1)),
                  (devices, "load", _fitted_latency(600e-9))]
NO_TAKEN_SHARING = [(memory, "taken_sharing", lambda rec, by_pair, head, keys, grid, b: (b, np.ones(b.size), None))]
S19 = [
    ("a WS stage refilled after its gemm releases it, (latency + hold) / S, latency refit 650 ns "
     "(off: latency / (S - 1) at session 18's 600 ns)", OLD_REFILL_LAW),
    ("a tile that blocks deciding a data branch apart may take is fetched when any does "
     "(off: every tile at the branch's share)", NO_TAKEN_SHARING),
]
# session 20, switched off alone: blocks that read the same tiles as an earlier-started block of
# their group follow it at the L2 tile latency (model._schedule_followers; runs 115, 122-124)
NO_FOLLOWERS = [(memory, "loop_sharer_groups", lambda trace: None)]
S20 = [
    ("a block that starts a DRAM round trip after the first of its group (same loop tiles) finds "
     "them in L2 and waits the L2 tile latency (off: every block at the fitted latency)", NO_FOLLOWERS),
]
# session 33, switched off alone: the special functions' SASS sequences (benchmarks/sass_special.py),
# the registers of element loads in a pipelined loop, and the first wave's phase overlap across an
# SM's blocks
NO_SFU_TABLE = [(counts, "_SFU_ACCURATE", {}), (counts, "_SFU_FAST", {}), (counts, "_DIV_FAST", counts._OP_INST["div"])]
S33 = [
    ("special functions issue their math-library SASS (accurate expf: 6 FMA + 1 ALU + MUFU; fast math: "
     "the MUFU) (off: every one a MUFU and an FMUL)", NO_SFU_TABLE),
    ("element code in a pipelined loop that loads global memory into its math holds its loads in "
     "registers (off: not counted)", [(model, "pipelined_element_load_bytes", lambda trace: 0.0)]),
    ("the first wave's load and compute phases overlap by a k-th across an SM's k blocks "
     "(off: the lock-step sum)", [(model, "phase_overlap", lambda first, over, k: first)]),
]
# session 34, switched off alone: a block of fewer warps than the SM's schedulers issues from that
# many (model.subpartitions_used)
S34 = [
    ("a block of w < 4 warps issues from w of the SM's schedulers: its math and SIMT work at w / 4 "
     "of the SM's rates (off: the whole SM's, shared by its blocks)",
     [(model, "subpartitions_used", lambda dev, threads: 0)]),
    ("such a block's iteration at the measured small-block mma rate and fixed cycles, its co-resident "
     "blocks by the measured warps-on-the-SM curve (gemm_pipe --warps, run 156) (off: the four-warp "
     "nows share and no contention below four warps)",
     [(model, "small_block_iteration", lambda *a: None), (model, "small_block_coresidency", lambda *a: None)]),
]
# session 35, switched off alone: each gemm runs the instruction TileLang lowers it to
# (counts.gemm_instruction), mma.sync at its measured share of the wgmma rate
S35 = [
    ("a gemm TileLang lowers to mma.sync (float32 / tf32, 8-bit with B stored (K, N), blocks of 1-3 warps, "
     "tl.disable_wgmma) runs at mma.sync's measured share of the wgmma rate (off: every gemm the GPU's "
     "native instruction)",
     [(counts, "gemm_instruction", lambda rec, native, pass_configs=(): native if rec.kind in counts.GEMM_KINDS else "")]),
]
# session 36, switched off alone: mma.sync operands TileLang cannot ldmatrix are loaded element by
# element (counts.scalar_operands), their wavefronts on the warp-specialised loop's shared pipe
S36 = [
    ("mma.sync operands that are not 16-bit and M/N-major load element by element, their bank "
     "replays under the XOR swizzle on the shared pipe, which bounds a warp-specialised loop's "
     "iteration (off: no element loads, no shared term in such loops)",
     [(counts, "scalar_operands", lambda rec: []), (model, "loop_operand_pipe_bytes", lambda *a: 0.0)]),
]
GROUPS = {"S11": S11, "S12": S12, "S13": S13, "S14": S14, "S16": S16, "S18": S18, "S19": S19, "S20": S20,
          "S33": S33, "S34": S34, "S35": S35, "S36": S36}


def leave_one_out(groups=None) -> int:
    print("| switched off | holdout time med | holdout time p90 | all time med | all time p90 | DRAM med | DRAM p90 "
          "| DRAM worst | Kendall tau per sweep |")
    print("|---|---|---|---|---|---|---|---|---|")
    run("nothing (the current model)", [], len(S9))
    for g in groups or GROUPS:
        for label, stack in GROUPS[g]:
            run(label, stack, len(S9))
    return 0


if __name__ == "__main__":
    import sys
    args = sys.argv[1:]
    raise SystemExit(leave_one_out([a for a in args if a in GROUPS]) if "--leave-one-out" in args else main())

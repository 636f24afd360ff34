"""The analysis result: counts, memory estimate and time, with a versioned JSON form in base units."""
from __future__ import annotations

from dataclasses import dataclass, field

from .counts import Counts
from .devices import Device
from .model import Timing
from .trace import KernelTrace

SCHEMA = "tileroof.result/1"


@dataclass
class Result:
    trace: KernelTrace
    counts: Counts
    device: Device
    timing: Timing
    params: dict
    launches: list = field(default_factory=list)   # one Result per T.Kernel launch when there are several

    # ---- the headline numbers (same names in the JSON) -----------------------------------------
    @property
    def total_flops(self) -> int:
        return self.counts.total_flops

    @property
    def tensor_flops(self) -> int:
        return self.counts.tensor_flops

    @property
    def cuda_flops(self) -> int:
        return self.counts.cuda_flops

    @property
    def sfu_ops(self) -> int:
        return self.counts.sfu_ops

    @property
    def warp_instructions(self) -> float:
        """Warp instructions of the kernel's SIMT work, as estimated (counts.instructions): a lower
        estimate that leaves out address arithmetic, loop control and the gemms' own instructions."""
        return self.counts.warp_instructions(self.device.warp_size)

    @property
    def global_bytes(self) -> int:
        return self.counts.global_bytes

    @property
    def unique_bytes(self) -> int:
        return self.counts.unique_bytes

    @property
    def dram_bytes(self) -> int:
        return self.timing.memory.dram_bytes

    @property
    def l2_slice_bytes(self) -> int:
        return self.timing.memory.l2_slice_bytes

    @property
    def loop_iterations(self) -> float:
        """Main-loop (T.Pipelined) iterations per block, 0 without one."""
        return self.timing.pipeline.get("loop_iterations", 0.0)

    @property
    def estimated_time(self) -> float:
        return self.timing.time_s

    @property
    def runner_up_s(self) -> float:
        """The longest resource time after the bound's (the pipelined loop's makespan included): what
        the max() over resources leaves uncharged, though a resource close behind the bound does
        not hide under it whole."""
        t = self.timing
        times = dict(t.resource_s)
        if (t.pipeline or {}).get("makespan_s"):
            times["pipeline"] = t.pipeline["makespan_s"]
        times.pop(t.bound.split(" (")[0], None)
        return max(times.values(), default=0.0)

    @property
    def bound(self) -> str:
        return self.timing.bound

    @property
    def unmodeled(self) -> list[dict]:
        return [{"name": u.name, "executions": u.executions, "reason": u.reason} for u in self.trace.unmodeled]

    @property
    def partial(self) -> bool:
        return bool(self.trace.unmodeled)

    @property
    def launch_error(self) -> str | None:
        """Why the kernel (or one of its launches) cannot start on the device, or None."""
        parts = [p.timing.occupancy.launch_error for p in self.launches] or [self.timing.occupancy.launch_error]
        return next((e for e in parts if e), None)

    @property
    def assumptions(self) -> list[str]:
        """What the estimate assumes (occupancy, laws, clocks), as the report lists them."""
        return list(self.timing.assumptions)

    @property
    def bounded(self) -> list[str]:
        return list(self.trace.bounded)

    def to_dict(self) -> dict:
        c, t = self.counts, self.timing
        total_flops = max(c.total_flops, 1)
        ops = []
        for oc, rec in zip(c.ops, self.trace.ops):
            ops.append({
                "label": oc.label, "kind": oc.kind, "executions": oc.executions,
                "flops": oc.total_flops, "flops_share": oc.total_flops / total_flops,
                "flops_by_unit": {f"{u}:{d}": v for (u, d), v in oc.flops.items()},
                "bytes": {f"{lv}:{d}": v for (lv, d), v in oc.bytes.items()},
                "pipeline_stages": rec.pipeline_stages,
                # copies of its output fragment the warps hold (a gemm's register operand): its
                # executions, FLOPs and instructions include every copy
                "replicas": oc.replicas,
            })
        return {
            "schema": SCHEMA,
            "kernel": self.trace.name,
            "params": {k: v for k, v in self.params.items()},
            "device": self.device.describe(),
            "grid": list(self.trace.grid),
            "threads": list(self.trace.threads),
            "total_flops": c.total_flops,
            "tensor_flops": c.tensor_flops,
            "cuda_flops": c.cuda_flops,
            "sfu_ops": c.sfu_ops,
            "conversions": c.conversions,
            "warp_instructions": self.warp_instructions,
            "thread_instructions_by_pipe": dict(sorted(c.inst.items())),
            "flops_by_unit": {f"{u}:{d}": v for (u, d), v in sorted(c.flops.items())},
            "bytes_by_level": {f"{lv}:{d}": v for (lv, d), v in sorted(c.bytes.items())},
            "global_bytes": c.global_bytes,
            "unique_bytes": c.unique_bytes,
            "footprints": dict(c.footprints),
            "dram_bytes": t.memory.dram_bytes,
            "dram_read_bytes": t.memory.dram_read,
            "dram_write_bytes": t.memory.dram_write,
            "l2_bytes": t.memory.l2_read + t.memory.l2_write,
            # what reaches the L2 slices: reads after the TPC mates' identical requests merge
            "l2_slice_bytes": self.l2_slice_bytes,
            "dram_bytes_if_drifting": t.dram_if_drifting,
            "dram_bytes_in_step": t.dram_in_step,
            # the harness's flush lines this launch writes back inside its timed run (not in dram_bytes)
            "flush_writeback_bytes": t.flush_writeback,
            # DRAM time a byte read / written takes over a stream's, by the runs the waves sweep
            # (model.spread_costs; 1.0 where the device has no spread tables)
            "dram_spread_read": t.memory.spread_read,
            "dram_spread_write": t.memory.spread_write,
            "drifting": bool((t.pipeline or {}).get("drifting")),
            "sm_clock_hz": t.sm_clock_hz,
            "estimated_time": t.time_s,
            "bound": t.bound,
            "resource_time": dict(t.resource_s),
            "utilisation": dict(t.utilisation),
            "waves": t.waves,
            "slots": t.slots,
            "imbalance": t.imbalance,
            "pipeline": {k: v for k, v in t.pipeline.items()},
            "launch_time": t.launch_s,
            "occupancy": t.occupancy.as_dict(),
            "ops": ops,
            "unmodeled": self.unmodeled,
            "partial": self.partial,
            "launch_error": self.launch_error,
            "bounded": self.bounded,
            "assumed": list(self.trace.assumed),
            # branches on run-time data counted at the share the user gave (--taken): name -> share
            "taken": dict(self.trace.taken),
            "assumptions": list(t.assumptions),
            "launches": [{
                "grid": list(p.trace.grid), "threads": list(p.trace.threads),
                "estimated_time": p.estimated_time, "bound": p.bound, "total_flops": p.total_flops,
                "tensor_flops": p.tensor_flops, "global_bytes": p.global_bytes, "dram_bytes": p.dram_bytes,
                "ops": len(p.trace.ops)} for p in self.launches],
        }

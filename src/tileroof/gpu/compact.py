"""Reduce a raw `measure` JSON to the record committed under benchmarks/results/: provenance, and
per case the parameters, correctness, timing and the Nsight Compute counters the score uses.
Numbers are copied, never computed.

    python -m tileroof.gpu.compact RAW.json OUT.json
"""
from __future__ import annotations

import json
import sys

# counters kept (the `.sum` of per-unit metrics, plus rates and launch facts)
KEEP_PREFIXES = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "lts__t_sector_hit_rate.pct",
                 "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum",
                 "lts__t_sectors_srcunit_tex_op_atom.sum", "lts__t_sectors_srcunit_tex_op_red.sum",
                 "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum", "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                 "l1tex__t_bytes.sum", "gpu__time_duration.sum", "sm__cycles_elapsed.avg",
                 "gpc__cycles_elapsed.avg.per_second", "dram__cycles_elapsed.avg.per_second",
                 "sm__inst_executed_pipe_tensor.sum", "sm__inst_executed_pipe_tensor_op_gmma.sum",
                 "sm__inst_executed_pipe_tensor_op_hmma.sum", "sm__ops_path_tensor_src_fp16.sum",
                 "sm__ops_path_tensor_src_bf16_dst_fp32.sum", "smsp__inst_executed.sum", "smsp__inst_executed_pipe_xu.sum",
                 "sm__warps_active.avg.pct_of_peak_sustained_active", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
                 "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
                 "smsp__sass_thread_inst_executed_op_", "launch__")
DROP = (".avg", ".min", ".max")


def _keep(key: str) -> bool:
    if key.startswith("smsp__sass_thread_inst_executed_op_"):
        return key.endswith(".sum")
    return any(key.startswith(p) for p in KEEP_PREFIXES)


def compact(raw: dict) -> dict:
    cases = {}
    for name, c in raw.get("cases", {}).items():
        ncu = c.get("ncu") or {}
        cases[name] = {
            "params": c.get("params"), "sweep": c.get("sweep"), "tags": c.get("tags"),
            "compile": {k: (c.get("compile") or {}).get(k) for k in ("ok", "seconds", "error", "kernel_names")},
            "correct": c.get("correct"),
            "time": _time(c.get("time") or {}),
            "ncu": {k: v for k, v in ncu.items() if _keep(k)} if isinstance(ncu, dict) else ncu,
        }
    return {"schema": raw.get("schema"), "provenance": raw.get("provenance"), "settings": raw.get("settings"),
            "compacted_by": "python -m tileroof.gpu.compact", "cases": cases}


def _time(t: dict) -> dict:
    """The primary timing; where that is the CUDA-graph replay (kernels under 20 us), the
    event-timed median beside it too (the do_bench-style timing the model predicts)."""
    out = {k: v for k, v in t.items() if k not in ("events", "graph")}
    ev = t.get("events") if isinstance(t.get("events"), dict) else {}
    if t.get("primary") == "graph" and ev.get("median_s"):
        out["events_median_s"] = ev["median_s"]
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print(__doc__)
        return 2
    with open(argv[0]) as f:
        raw = json.load(f)
    with open(argv[1], "w") as f:
        json.dump(compact(raw), f, indent=None, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

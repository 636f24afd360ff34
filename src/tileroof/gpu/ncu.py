"""Nsight Compute: the metric list, command lines, and a parser for its CSV (pure functions).

The harness runs `ncu ... --export R` around a child process that launches each case once inside an
NVTX push/pop range named after the case (between cudaProfilerStart/Stop), then reads the report
back with `ncu --import R --csv --page raw --print-units base --print-nvtx-rename kernel`, so each
row's "Kernel Name" is the case name.  The parser also accepts ncu's long format (one row per
metric with "Metric Name"/"Metric Value" columns) and lines that are not CSV (==PROF== lines,
program output)."""
from __future__ import annotations

import csv
import io
import re
import subprocess

# Asked for on every run.  A metric that ncu says does not exist is dropped (see missing_metrics).
CORE_METRICS = (
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_bytes.sum",
    "lts__t_sector_hit_rate.pct",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "lts__t_sectors_srcunit_tex_op_write.sum",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "l1tex__t_bytes.sum",
    "smsp__inst_executed_pipe_tensor.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    "launch__shared_mem_per_block_static",
    "launch__shared_mem_per_block_dynamic",
    "launch__waves_per_multiprocessor",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
)

# Names that may or may not exist in this ncu / on this chip: filtered against
# `ncu --query-metrics` when that works, and dropped on ncu's "Failed to find metric" otherwise.
OPTIONAL_METRICS = (
    "sm__inst_executed_pipe_tensor_op_hmma.sum",
    "sm__inst_executed_pipe_tensor_op_gmma.sum",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__inst_executed_pipe_tensor_op_imma.sum",
    "sm__pipe_tensor_op_imma_cycles_active.avg.pct_of_peak_sustained_active",
    "sm__ops_path_tensor_src_fp16_dst_fp32.sum",
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "smsp__inst_executed_pipe_xu.sum",
    "smsp__inst_executed.sum",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "lts__t_sectors_srcunit_tex_op_red.sum",
    "lts__t_sectors_srcunit_tex_op_atom.sum",
    "sm__maximum_warps_per_active_cycle_pct",
    "sm__cycles_elapsed.avg",
    "gpc__cycles_elapsed.avg.per_second",
    "dram__cycles_elapsed.avg.per_second",
)

DEFAULT_METRICS = CORE_METRICS + OPTIONAL_METRICS

# Columns of the raw page that are launch facts, not metrics.
INFO_COLUMNS = {
    "ID": "id", "Process ID": "process_id", "Process Name": "process_name", "Host Name": "host",
    "Kernel Name": "kernel_name", "Context": "context", "Stream": "stream",
    "Block Size": "block_size", "Grid Size": "grid_size", "Device": "device", "CC": "cc",
}

_NUMBER = re.compile(r"^[-+]?(\d{1,3}(,\d{3})+|\d+)(\.\d*)?([eE][-+]?\d+)?$")


def metric_base(name: str) -> str:
    """'dram__bytes_read.sum' -> 'dram__bytes_read' (the name --query-metrics lists)."""
    return name.split(".", 1)[0]


def parse_value(text: str):
    """ncu prints '1,048,576', '12.5', 'n/a', '(128, 1, 1)'; numbers come back as int/float
    (thousands separators dropped), 'n/a' and '' as None, anything else as the text."""
    t = (text or "").strip()
    if t == "" or t.lower() in ("n/a", "na", "-"):
        return None
    if _NUMBER.match(t):
        plain = t.replace(",", "")
        if re.match(r"^[-+]?\d+$", plain):
            return int(plain)
        return float(plain)
    return t


def _csv_rows(text: str) -> list[list[str]]:
    """The CSV part of ncu's output: from the header line (first field 'ID') on, skipping lines
    that are not CSV records (==PROF==, ==WARNING==, program output)."""
    lines = text.splitlines()
    start = None
    for i, line in enumerate(lines):
        s = line.lstrip()
        if s.startswith('"ID"') or s.startswith("ID,"):
            try:
                fields = next(csv.reader([s]))
            except csv.Error:
                continue
            if "Kernel Name" in fields:
                start = i
                break
    if start is None:
        return []
    # ncu quotes every field; keep lines that look like records (program output may interleave)
    body = [ln for ln in lines[start:] if ln.lstrip()[:1] == '"' or ln.lstrip()[:1].isdigit()]
    return [r for r in csv.reader(io.StringIO("\n".join(body)))]


def parse_ncu_csv(text: str) -> list[dict]:
    """Rows of `ncu --csv --page raw [--print-units base]` (or the long per-metric format), one
    dict per profiled kernel launch in report order:
    {"id": int, "kernel_name": str, "block_size": str, "grid_size": str, ..., "metrics": {name: value},
     "units": {name: unit}}."""
    rows = _csv_rows(text)
    if not rows:
        return []
    header = rows[0]
    if "Metric Name" in header and "Metric Value" in header:
        return _parse_long(header, rows[1:])
    units: dict[str, str] = {}
    out = []
    for r in rows[1:]:
        if len(r) < len(header):
            r = r + [""] * (len(header) - len(r))
        rec = dict(zip(header, r))
        if rec.get("ID", "").strip() == "":          # the units row
            units.update({k: v for k, v in rec.items() if k not in INFO_COLUMNS and v})
            continue
        if not isinstance(parse_value(rec.get("ID", "")), int):
            continue
        item = {"metrics": {}, "units": units}
        for col, val in rec.items():
            if col in INFO_COLUMNS:
                key = INFO_COLUMNS[col]
                item[key] = parse_value(val) if key in ("id", "process_id") else val
            elif col:
                item["metrics"][col] = parse_value(val)
        out.append(item)
    for item in out:
        item["units"] = dict(units)
    return out


def _parse_long(header: list[str], rows: list[list[str]]) -> list[dict]:
    by_id: dict = {}
    order = []
    for r in rows:
        rec = dict(zip(header, r))
        rid = parse_value(rec.get("ID", ""))
        if not isinstance(rid, int):
            continue
        if rid not in by_id:
            item = {"metrics": {}, "units": {}}
            for col, key in INFO_COLUMNS.items():
                if col in rec:
                    item[key] = parse_value(rec[col]) if key in ("id", "process_id") else rec[col]
            by_id[rid] = item
            order.append(rid)
        name = rec.get("Metric Name", "")
        if name:
            by_id[rid]["metrics"][name] = parse_value(rec.get("Metric Value", ""))
            if rec.get("Metric Unit"):
                by_id[rid]["units"][name] = rec["Metric Unit"]
    return [by_id[i] for i in order]


_FAILED = re.compile(r"Failed to find metric[s]?\s*:?\s*(?:regex:)?\^?([A-Za-z0-9_]+(?:\\?\.[A-Za-z0-9_]+)*)")


def missing_metrics(output: str, requested) -> list[str]:
    """The requested metrics that ncu's messages say do not exist or cannot be collected."""
    requested = list(requested)
    bad: list[str] = []
    for m in _FAILED.finditer(output):
        name = m.group(1).replace("\\.", ".")
        base = metric_base(name)
        exact = [r for r in requested if r == name]
        hits = exact or [r for r in requested if metric_base(r) == base]
        bad.extend(h for h in hits if h not in bad)
    # any other ==ERROR== line that names a requested metric
    for line in output.splitlines():
        if "==ERROR==" not in line or "Failed to find metric" in line:
            continue
        for r in requested:
            if r not in bad and re.search(rf"(?<![A-Za-z0-9_.]){re.escape(r)}(?![A-Za-z0-9_])", line):
                bad.append(r)
    return bad


def parse_query_metrics(text: str) -> set[str]:
    """Base metric names from `ncu --query-metrics` (first token of each table line)."""
    names = set()
    for line in text.splitlines():
        tok = line.strip().split(" ", 1)[0] if line.strip() else ""
        if re.match(r"^[a-z0-9]+__[a-z0-9_]+$", tok):
            names.add(tok)
    return names


def filter_by_query(metrics, known_bases: set[str], keep=CORE_METRICS) -> tuple[list[str], list[str]]:
    """(kept, dropped): drop metrics whose base name the device does not list; never drop `keep`
    (only ncu's own error drops those).  An empty or tiny list means the query failed: keep all."""
    metrics = list(metrics)
    if len(known_bases) < 50:
        return metrics, []
    kept = [m for m in metrics if m in keep or metric_base(m) in known_bases]
    return kept, [m for m in metrics if m not in kept]


def filter_by_device(ncu: str, metrics, keep=CORE_METRICS, env=None) -> tuple[list[str], list[str]]:
    """filter_by_query against this ncu's own `ncu --query-metrics` (kept, dropped); everything
    kept when the query cannot run."""
    try:
        q = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return list(metrics), []
    return filter_by_query(metrics, parse_query_metrics(q.stdout), keep)


def profile_command(ncu: str, metrics, export_base: str, child: list[str]) -> list[str]:
    """ncu over a child that brackets each case's launch with cudaProfilerStart/Stop and an NVTX
    range.  Clocks are left alone (--clock-control none); caches are flushed before each replay
    pass (ncu's default --cache-control all), so DRAM counts are for a cold L2."""
    return [ncu, "--clock-control", "none", "--target-processes", "all",
            "--profile-from-start", "off", "--nvtx", "--replay-mode", "kernel",
            "--metrics", ",".join(metrics), "--export", export_base, "--force-overwrite", *child]


def import_command(ncu: str, report: str, nvtx_rename: bool = True) -> list[str]:
    cmd = [ncu, "--import", report, "--csv", "--page", "raw", "--print-units", "base"]
    if nvtx_rename:
        cmd += ["--print-nvtx-rename", "kernel"]
    return cmd


def match_case(kernel_name: str, cases) -> str | None:
    """The case a (NVTX-renamed) kernel name belongs to: exact, else the longest case name that
    the kernel name ends with, starts with or contains (ranges may print as 'domain/range')."""
    name = (kernel_name or "").strip()
    cases = list(cases)
    if name in cases:
        return name
    for sep in ("/", ":", "@"):
        tail = name.rsplit(sep, 1)[-1].strip()
        if tail in cases:
            return tail
    hits = [c for c in cases if c and (name.endswith(c) or name.startswith(c) or c in name)]
    return max(hits, key=len) if hits else None


def assign_rows(rows: list[dict], launched: list[str]) -> tuple[dict, list[dict], str]:
    """Group rows by case.  By name first (NVTX rename); if no row's name matches a case and there
    is exactly one row per launched case, by launch order.  Returns (by_case, unmatched, how)."""
    by_case: dict[str, list[dict]] = {}
    unmatched = []
    for r in rows:
        c = match_case(r.get("kernel_name", ""), launched)
        if c is None:
            unmatched.append(r)
        else:
            by_case.setdefault(c, []).append(r)
    if by_case:
        return by_case, unmatched, "nvtx"
    if rows and len(rows) == len(launched):
        return {c: [r] for c, r in zip(launched, rows)}, [], "order"
    return {}, list(rows), "none"


def aggregate(rows: list[dict]) -> dict:
    """One case's metrics from its kernel rows: '.sum' metrics (and the duration) add up over the
    launches; every other metric is taken from the longest launch.  Adds n_kernels."""
    if not rows:
        return {}
    dur = "gpu__time_duration.sum"

    def duration(r):
        v = r["metrics"].get(dur)
        return v if isinstance(v, (int, float)) else -1

    main = max(rows, key=duration)
    out = dict(main["metrics"])
    if len(rows) > 1:
        for k in out:
            if k.endswith(".sum") and not k.startswith("launch__"):
                vals = [r["metrics"].get(k) for r in rows]
                nums = [v for v in vals if isinstance(v, (int, float))]
                out[k] = sum(nums) if nums else out[k]
    out["n_kernels"] = len(rows)
    return out


def dram_mb(metrics: dict) -> float | None:
    r, w = metrics.get("dram__bytes_read.sum"), metrics.get("dram__bytes_write.sum")
    if not isinstance(r, (int, float)) and not isinstance(w, (int, float)):
        return None
    return ((r or 0) + (w or 0)) / 1e6

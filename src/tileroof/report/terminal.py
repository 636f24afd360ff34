"""A readable terminal report (rich), drawn from Result.to_dict()."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table


def _si(x: float, unit: str) -> str:
    for p, s in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= p:
            return f"{x / p:.3g} {s}{unit}"
    return f"{x:.3g} {unit}"


def _time(s: float) -> str:
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.2f} µs"


def render(d: dict, console: Console | None = None) -> None:
    console = console or Console()
    dev = d["device"]
    console.print(f"[bold]{d['kernel']}[/] on [bold]{dev['name']}[/] ({dev['origin']})  "
                  f"grid {tuple(d['grid'])} × {d['threads'][0]} threads")
    for i, part in enumerate(d.get("launches") or [], 1):
        console.print(f"  launch {i}: grid {tuple(part['grid'])} × {part['threads'][0]} threads, "
                      f"{_time(part['estimated_time'])}, bound by {part['bound']}")
    ops = Table(title="per op", show_lines=False)
    for col in ("op", "runs", "FLOPs", "share", "global R", "global W", "shared R/W"):
        ops.add_column(col, justify="right" if col != "op" else "left")
    for op in d["ops"]:
        b = op["bytes"]
        ops.add_row(op["label"], f"{op['executions']:,}", _si(op["flops"], ""), f"{op['flops_share']:.1%}",
                    _si(b.get("global:read", 0), "B"),
                    _si(b.get("global:write", 0) + b.get("global:atomic", 0), "B"),
                    _si(b.get("shared:read", 0) + b.get("shared:write", 0), "B"))
    console.print(ops)
    tot = Table(title="totals", show_header=False)
    tot.add_column("what")
    tot.add_column("value", justify="right")
    tot.add_row("FLOPs (all units)", f"{d['total_flops']:,}")
    for k, v in d["flops_by_unit"].items():
        tot.add_row(f"  {k}", f"{v:,}")
    for k, v in d["bytes_by_level"].items():
        tot.add_row(f"bytes {k}", f"{v:,}")
    tot.add_row("unique global footprint", f"{d['unique_bytes']:,}")
    tot.add_row("modelled L2 bytes (issued / slices)", f"{d['l2_bytes']:,} / {d['l2_slice_bytes']:,}")
    tot.add_row("modelled DRAM bytes", f"{d['dram_bytes']:,}")
    if d.get("flush_writeback_bytes"):
        tot.add_row("  + timing flush written back", f"{int(round(d['flush_writeback_bytes'])):,}")
    tot.add_row("occupancy", f"{d['occupancy']['blocks_per_sm']} blocks/SM ({d['occupancy']['limiter']}), "
                f"{d['waves']:.2f} waves")
    console.print(tot)
    res = Table(title="roofline (time at each peak)")
    res.add_column("resource")
    res.add_column("time", justify="right")
    res.add_column("% of peak used", justify="right")
    for k, v in sorted(d["resource_time"].items(), key=lambda kv: -kv[1]):
        res.add_row(("[bold]" + k + "[/]") if k == d["bound"] else k, _time(v), f"{d['utilisation'].get(k, 0):.0%}")
    pipe = d.get("pipeline") or {}
    if pipe.get("makespan_s"):
        res.add_row("[bold]block pipeline[/]" if d["bound"].startswith("pipeline") else "block pipeline",
                    _time(pipe["makespan_s"]), f"{pipe.get('stages', 0)} stages, {pipe.get('iteration_bound', '')}-bound "
                    f"iterations of {_time(pipe.get('iteration_s', 0))}")
    console.print(res)
    achieved = d["total_flops"] / d["estimated_time"] if d["estimated_time"] else 0
    console.print(f"estimated time [bold]{_time(d['estimated_time'])}[/], bound by [bold]{d['bound']}[/]; "
                  f"{_si(achieved, 'FLOP/s')}, {_si(d['dram_bytes'] / d['estimated_time'] if d['estimated_time'] else 0, 'B/s')} DRAM")
    if d.get("launch_error"):
        console.print(f"[bold red]does not launch: {d['launch_error']}[/]")
    if d["unmodeled"]:
        console.print("[yellow]partial estimate: ops not modelled[/]")
        for u in d["unmodeled"]:
            console.print(f"  [yellow]{u['name']}[/] ×{u['executions']:,}: {u['reason']}")
    if d["bounded"]:
        console.print(f"[yellow]upper bounds: depends on run-time values {', '.join(d['bounded'])}[/]")
    if d["assumed"]:
        console.print(f"assumed values used for: {', '.join(d['assumed'])}")
    if d.get("taken"):
        console.print("branches on run-time data counted as taken "
                      + ", ".join(f"{share:.1%} of the time ({name})" for name, share in d["taken"].items()))
    for a in d["assumptions"]:
        console.print(f"[dim]assumption: {a}[/]")

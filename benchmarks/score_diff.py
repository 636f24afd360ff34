"""Snapshot `score.evaluate()` rows to JSON, or diff two snapshots.

    python benchmarks/score_diff.py save OUT.json
    python benchmarks/score_diff.py diff BEFORE.json AFTER.json [--pp 2]

diff prints the summary figures (time median / p90 per split) of both and every case whose
|time error| moves by more than --pp percentage points (signed errors shown)."""
from __future__ import annotations

import json
import sys


def save(path: str) -> None:
    from tileroof import score

    rep = score.evaluate()
    with open(path, "w") as f:
        json.dump({"rows": rep["rows"], "summary": rep["summary"], "sweeps": rep["sweeps"]}, f, indent=1, default=float)


def diff(before: str, after: str, pp: float = 2.0) -> None:
    a, b = (json.load(open(p)) for p in (before, after))
    print(f"{'split':8s} {'n':>4s}  {'median before':>13s} {'after':>7s}  {'p90 before':>10s} {'after':>7s}")
    for split, s in a["summary"].items():
        t = b["summary"][split]
        print(f"{split:8s} {s['n']:4d}  {s['time_median']:13.1%} {t['time_median']:7.1%}  "
              f"{s['time_p90']:10.1%} {t['time_p90']:7.1%}")
    for sw, s in a["sweeps"].items():
        t = b["sweeps"].get(sw, {})
        if abs(s["kendall_tau"] - t.get("kendall_tau", s["kendall_tau"])) > 1e-9 or \
                abs(s["top1_regret"] - t.get("top1_regret", s["top1_regret"])) > 1e-9:
            print(f"sweep {sw}: tau {s['kendall_tau']:.3f} -> {t['kendall_tau']:.3f}, "
                  f"regret {s['top1_regret']:.1%} -> {t['top1_regret']:.1%}")
    rows_b = {r["case"]: r for r in b["rows"]}
    moved = []
    for r in a["rows"]:
        q = rows_b.get(r["case"])
        if q is None:
            continue
        d = abs(q["time_err"]) - abs(r["time_err"])
        if abs(q["time_err"] - r["time_err"]) * 100 > pp:
            moved.append((d, r, q))
    moved.sort(key=lambda x: x[0])
    print(f"\n{len(moved)} cases whose time error moves by more than {pp} pp:")
    for d, r, q in moved:
        print(f"  {r['case'][:56]:56s} {r['split']:7s} {r['time_err']:+7.1%} -> {q['time_err']:+7.1%}  "
              f"({r['bound']} -> {q['bound']})")
    same = sum(1 for r in a["rows"] if r["case"] in rows_b and r["predicted_s"] == rows_b[r["case"]]["predicted_s"])
    print(f"{same} of {len(a['rows'])} predictions identical")


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2])
    else:
        pp = float(sys.argv[sys.argv.index("--pp") + 1]) if "--pp" in sys.argv else 2.0
        diff(sys.argv[2], sys.argv[3], pp)

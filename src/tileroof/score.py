"""Score the model against recorded GPU measurements (CPU only).

    tileroof score [--results DIR] [--check]

For every recorded case that compiled, passed its correctness check and was timed: predicted vs
measured time and DRAM bytes (Nsight Compute), FLOPs vs the counter-derived FLOPs; then the
summary (median / p90 |relative error|) for the fit split and the held-out split, and per sweep
Kendall τ, top-1 regret and whether keeping the predicted top 5 % loses a near-best config.
With --check, exits 1 when a figure is worse than the accepted one in benchmarks/accepted.json.
"""
from __future__ import annotations

import functools
import glob
import json
import math
import statistics
import zlib
from pathlib import Path

from .errors import TileroofError
from .rank import order_key

REPO = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = REPO / "benchmarks" / "results" / "h200"
# every GPU with recorded runs: catalog key -> its results folder.  The first is the default, the
# one the model's profile was measured on; figures of the others are keyed "<device>:<figure>"
RECORDED_GPUS = {"h200": DEFAULT_RESULTS, "h100_sxm": REPO / "benchmarks" / "results" / "h100"}
ACCEPTED = REPO / "benchmarks" / "accepted.json"
# kernels that move fewer DRAM bytes than this are left out of the DRAM error figures (their time
# is still scored): each launch also reads ~3 KB of code and parameters that no model counts
DRAM_FLOOR_BYTES = 64 * 1024
# sweeps the model's constants were fitted on; everything else is held out
FIT_SWEEPS = ("gemm_8192",)


@functools.lru_cache(maxsize=1)
def _late_cases() -> frozenset:
    """Kernels and sweeps added after the model was designed and fitted (corpus.LATE_FAMILIES:
    corpus/extra.py and the upstream-style families): they are never fitted on and are reported on
    their own as "new"."""
    from .corpus import LATE_FAMILIES

    names = set()
    for fam in LATE_FAMILIES:
        names |= {c.name for c in fam.cases()}
        if hasattr(fam, "data_dependent_cases"):
            names |= {c.name for c in fam.data_dependent_cases()}
        if hasattr(fam, "sweeps"):
            names |= {c.name for c in fam.sweeps()[0]}
    return frozenset(names)


def split_of(name: str, sweep: str | None) -> str:
    """Deterministic split: "fit" (the fit sweeps plus a third of the original kernels, chosen by
    a hash of the name), "probe" (probe_* cases: measured to study one mechanism, then used to
    shape it, so never unseen), "new" (added after the fit), "holdout" (everything else)."""
    if name.startswith("probe_"):
        return "probe"
    if name in _late_cases():
        return "new"
    if sweep is not None:
        return "fit" if sweep in FIT_SWEEPS else "holdout"
    return "fit" if zlib.crc32(name.encode()) % 3 == 0 else "holdout"


def load_records(results: Path) -> dict:
    """Newest record per case across the measure-*.json files in `results`; a record timed without
    Nsight Compute keeps the counters of the newest earlier run that profiled the case (`_ncu_file`
    names it): a re-timing adds a time, it does not take the DRAM bytes away."""
    files = sorted(glob.glob(str(results / "measure-*.json")))
    if not files:
        raise TileroofError(f"no measure-*.json under {results}")
    cases = {}
    for f in files:
        with open(f) as fh:
            data = json.load(fh)
        for name, c in data["cases"].items():
            c = dict(c)
            c["_file"] = Path(f).name
            c["_gpu"] = (data.get("provenance") or {}).get("gpu")
            prev = cases.get(name)
            if not c.get("ncu") and prev and prev.get("ncu"):
                c["ncu"], c["_ncu_file"] = prev["ncu"], prev.get("_ncu_file", prev["_file"])
            cases[name] = c
    return cases


def counter_flops(ncu: dict) -> float | None:
    """FLOPs from Nsight Compute: tensor-pipe ops plus FP32/FP16/FP64 thread instructions (FMA = 2)."""
    if not isinstance(ncu, dict):
        return None
    tensor = sum(v for k, v in ncu.items() if k.startswith("sm__ops_path_tensor") and k.endswith(".sum")
                 and isinstance(v, (int, float)))
    cuda = 0.0
    for op, w in (("fadd", 1), ("fmul", 1), ("ffma", 2), ("hadd", 1), ("hmul", 1), ("hfma", 2),
                  ("dadd", 1), ("dmul", 1), ("dfma", 2)):
        v = ncu.get(f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum")
        if isinstance(v, (int, float)):
            cuda += w * v
    return tensor + cuda


def kendall_tau(xs, ys) -> float:
    n = len(xs)
    conc = disc = 0
    for i in range(n):
        for j in range(i + 1, n):
            s = (xs[i] - xs[j]) * (ys[i] - ys[j])
            if s > 0:
                conc += 1
            elif s < 0:
                disc += 1
    tot = conc + disc
    return (conc - disc) / tot if tot else 1.0


def percentile(values, q):
    """The q-quantile of `values`, linearly interpolated (nan for none): the figures' median and p90."""
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def analyze_record(case, rec: dict, dev):
    """tileroof's analysis of a recorded corpus case, at the parameters the record ran with (its
    own, where it has them) and the case's taken-tile counts."""
    import tileroof
    return tileroof.analyze(case.kernel, device=dev, taken=case.taken or None, **(rec.get("params") or case.params))


def evaluate(results: Path | None = None, device: str = "h200") -> dict:
    from . import devices
    from .corpus import CASES

    dev = devices.load(device)
    records = load_records(results or DEFAULT_RESULTS)
    rows = []
    for name, rec in records.items():
        t = rec.get("time") or {}
        ok = (rec.get("correct") or {}).get("ok") and t.get("median_s")
        if not ok or name not in CASES:
            continue
        case = CASES[name]
        r = analyze_record(case, rec, dev)
        ncu = rec.get("ncu") if isinstance(rec.get("ncu"), dict) else {}
        dram = None
        if "dram__bytes_read.sum" in ncu:
            dram = ncu["dram__bytes_read.sum"] + ncu.get("dram__bytes_write.sum", 0)
        rows.append({
            "case": name, "sweep": rec.get("sweep"), "split": split_of(name, rec.get("sweep")),
            # the model predicts do_bench-style timing (events, L2 flushed before each run): where the
            # record's primary timing is CUDA-graph replay, its event-timed median is the comparison
            "measured_s": t.get("events_median_s") or t["median_s"], "predicted_s": r.estimated_time,
            "measured_dram": dram, "predicted_dram": r.dram_bytes,
            "predicted_dram_if_drifting": r.timing.dram_if_drifting,
            "predicted_dram_in_step": r.timing.dram_in_step,
            "loop_iterations": r.loop_iterations, "l2_slice_bytes": r.l2_slice_bytes, "runner_up_s": r.runner_up_s,
            "counter_flops": counter_flops(ncu), "flops": r.total_flops, "bound": r.bound,
            # the instruction estimate against Nsight Compute's warp instructions executed
            "warp_instructions": r.warp_instructions,
            "measured_warp_instructions": ncu.get("smsp__inst_executed.sum"),
        })
    for row in rows:
        row["time_err"] = row["predicted_s"] / row["measured_s"] - 1
        # a launch reads its code and parameters from DRAM too (~3 KB: run 109's one-block copy of
        # 128 B read 3072 B): below DRAM_FLOOR_BYTES the relative error measures that, not the model
        m = row["measured_dram"]
        row["dram_err"] = (row["predicted_dram"] / m - 1) if (m and m >= DRAM_FLOOR_BYTES) else None
        # against the range [in step, drifting apart]: 0 inside it, else the error of the nearer end
        ends = [row["predicted_dram"], row["predicted_dram_if_drifting"] or row["predicted_dram"],
                row["predicted_dram_in_step"] or row["predicted_dram"]]
        lo, hi = min(ends), max(ends)
        row["dram_range_err"] = ((0.0 if lo <= m <= hi else (lo / m - 1 if m < lo else hi / m - 1))
                                 if (m and m >= DRAM_FLOOR_BYTES) else None)
        cf = row["counter_flops"]
        row["flops_err"] = (row["flops"] / cf - 1) if cf else None
    summary = {}
    for split in ("fit", "holdout", "new", "probe", "unseen", "all"):
        sel = [r for r in rows if split == "all" or r["split"] == split
               or (split == "unseen" and r["split"] in ("holdout", "new"))]
        te = [abs(r["time_err"]) for r in sel]
        de = [abs(r["dram_err"]) for r in sel if r["dram_err"] is not None]
        dr = [abs(r["dram_range_err"]) for r in sel if r["dram_range_err"] is not None]
        summary[split] = {"n": len(sel), "time_median": percentile(te, 0.5), "time_p90": percentile(te, 0.9),
                          "dram_median": percentile(de, 0.5), "dram_p90": percentile(de, 0.9),
                          "dram_worst": max(de) if de else float("nan"),
                          "dram_range_worst": max(dr) if dr else float("nan")}
    sweeps = {}
    for sw in sorted({r["sweep"] for r in rows if r["sweep"]}):
        sel = [r for r in rows if r["sweep"] == sw]
        if len(sel) < 3:
            continue       # a ranking of one or two measured configs says nothing (a sampled GPU's run)
        meas = [r["measured_s"] for r in sel]
        pred = [r["predicted_s"] for r in sel]
        best = min(meas)
        ranked = sorted(sel, key=lambda r: order_key(r["predicted_s"], l2_slice_bytes=r["l2_slice_bytes"],
                                                     loop_iterations=r["loop_iterations"],
                                                     dram_bytes=r["predicted_dram"],
                                                     runner_up=r.get("runner_up_s", 0.0)))
        pick = ranked[0]
        keep = max(1, math.ceil(0.05 * len(sel)))
        kept = ranked[:keep]
        near_best = [r for r in sel if r["measured_s"] <= 1.05 * best]
        sweeps[sw] = {"n": len(sel), "split": sel[0]["split"], "kendall_tau": kendall_tau(pred, meas),
                      "top1_regret": pick["measured_s"] / best - 1,
                      "top5pct_keeps_near_best": any(r in kept for r in near_best)}
    return {"device": dev.name, "rows": rows, "summary": summary, "sweeps": sweeps}


def _print(report: dict) -> None:
    print(f"{'case':48s} {'split':7s} {'meas µs':>9s} {'pred µs':>9s} {'err':>7s}  {'DRAM MB':>8s} {'pred MB':>8s} "
          f"{'err':>7s}  {'FLOPs err':>9s}  bound")
    for r in sorted(report["rows"], key=lambda r: (r["sweep"] or "", r["case"])):
        de = f"{r['dram_err']:+7.1%}" if r["dram_err"] is not None else "      -"
        fe = f"{r['flops_err']:+9.2%}" if r["flops_err"] is not None else "        -"
        md = f"{r['measured_dram'] / 1e6:8.1f}" if r["measured_dram"] else "       -"
        print(f"{r['case'][:48]:48s} {r['split']:7s} {r['measured_s'] * 1e6:9.1f} {r['predicted_s'] * 1e6:9.1f} "
              f"{r['time_err']:+7.1%}  {md} {r['predicted_dram'] / 1e6:8.1f} {de}  {fe}  {r['bound']}")
    print()
    for split, s in report["summary"].items():
        print(f"{split:8s} n={s['n']:3d}  time |err| median {s['time_median']:.1%} p90 {s['time_p90']:.1%}   "
              f"DRAM |err| median {s['dram_median']:.1%} p90 {s['dram_p90']:.1%} worst {s['dram_worst']:.1%} "
              f"(vs the in-step..drifting range: worst {s['dram_range_worst']:.1%})")
    for sw, s in report["sweeps"].items():
        print(f"sweep {sw:12s} ({s['split']}, n={s['n']}): Kendall tau {s['kendall_tau']:.2f}, top-1 regret "
              f"{s['top1_regret']:.1%}, top-5% keeps a near-best config: {s['top5pct_keeps_near_best']}")


def _figure_prefix(device: str) -> str:
    """The accepted figures of the first recorded GPU are unprefixed, another GPU's "<device>:"."""
    return "" if device == next(iter(RECORDED_GPUS)) else f"{device}:"


def figures(report: dict, device: str = "h200") -> dict:
    """The numbers the accepted file pins (worse is a regression); another GPU's keyed by it."""
    prefix = _figure_prefix(device)
    out = {}
    for split, s in report["summary"].items():
        for k in ("time_median", "time_p90", "dram_median", "dram_p90", "dram_worst", "dram_range_worst"):
            out[f"{prefix}{split}.{k}"] = s[k]
    for sw, s in report["sweeps"].items():
        out[f"{prefix}sweep.{sw}.kendall_tau"] = s["kendall_tau"]
        out[f"{prefix}sweep.{sw}.top1_regret"] = s["top1_regret"]
    return out


def check(report: dict, accepted_path: Path = ACCEPTED, device: str = "h200") -> list[str]:
    with open(accepted_path) as f:
        accepted = json.load(f)["figures"]
    got = figures(report, device)
    prefix = _figure_prefix(device)
    failures = []
    for key, limit in accepted.items():
        if key.rpartition(":")[0] != prefix.rstrip(":"):
            continue                                   # another GPU's figure
        if key not in got:
            failures.append(f"{key}: not computed")
            continue
        v = got[key]
        worse = v < limit - 1e-9 if key.endswith("kendall_tau") else v > limit + 1e-9
        if worse:
            failures.append(f"{key}: {v:.4f} is worse than the accepted {limit:.4f}")
    return failures


def main(results=None, do_check=False, device=None) -> int:
    """Score one GPU's records (--device, --results), or with neither every recorded GPU's."""
    if device is None and results is None:
        runs = list(RECORDED_GPUS.items())
    else:
        device = device or next(iter(RECORDED_GPUS))
        runs = [(device, Path(results) if results else RECORDED_GPUS.get(device, DEFAULT_RESULTS))]
    failures = []
    for dev, folder in runs:
        report = evaluate(folder, dev)
        print(f"== {report['device']} ({dev}): {folder}")
        _print(report)
        print()
        if do_check:
            failures += check(report, device=dev)
    for f in failures:
        print(f"REGRESSION {f}")
    return 1 if failures else 0

"""The model against a blockrate run (tileroof.gpu.blockrate, any mode): every
launch's measured median next to tileroof's time for the same kernel and grid on the run's GPU,
and per (threads, per_thread) series the interval between block starts on one SM, measured (the
run's fit) and modelled (the same least-squares line through the modelled times).

    python benchmarks/blockrate_check.py RUN.json [--device h100_sxm]
    python benchmarks/blockrate_check.py OUT.json --predict pieces --device h200   # before a run

The device defaults to the catalog entry of the run's GPU (h200 for an H200, h100_sxm for an
H100).  Prints a table; writes nothing."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def device_for(gpu: str) -> str:
    return "h100_sxm" if "H100" in gpu else "h200"


def predict(mode: str, device: str, out: Path) -> int:
    """The model's time for every launch of blockrate --mode widths / pieces on `device`, written
    to `out` before the run (the record's rows are matched by dtype, wide, cols and place)."""
    import datetime
    import subprocess

    import tileroof
    from tileroof import devices
    from tileroof.gpu.blockrate import block_tiles, spread_launches
    dev = devices.load(device)
    rows = []
    for v in spread_launches(mode, dev.sm_count):
        r = tileroof.analyze(block_tiles.get_tir(**v), device=dev)
        rows.append({**v, "predicted_s": r.timing.time_s, "dram_spread_read": r.timing.memory.spread_read,
                     "dram_spread_write": r.timing.memory.spread_write, "bound": r.timing.bound})
        print(f"{v['dtype']} x{v['wide']} {v['cols']:6d} {v['place']:7s} {r.timing.time_s * 1e6:8.2f} us "
              f"(spread {r.timing.memory.spread_read:.3f} / {r.timing.memory.spread_write:.3f})")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out.write_text(json.dumps({"schema": "tileroof.blockrate_predictions/1", "mode": mode, "device": device,
                               "tileroof_commit": commit,
                               "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "launches": rows}, indent=1))
    print(f"wrote {out}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a blockrate record, or with --predict the file to write")
    ap.add_argument("--device")
    ap.add_argument("--predict", choices=("widths", "pieces"),
                    help="write the model's times for that mode's launches to RUN (before the run)")
    a = ap.parse_args(argv)
    if a.predict:
        return predict(a.predict, a.device or "h200", a.run)
    import tileroof
    from tileroof.gpu.blockrate import PAIR_COLS, SCATTER_DTYPES, SCATTER_SHAPE, block_bounce, block_tiles, block_touch
    from tileroof.score import percentile
    run = json.loads(a.run.read_text())
    prov = run["provenance"]
    dev = a.device or device_for(prov.get("gpu") or prov.get("smi_before", {}).get("gpu", ""))
    mode = run.get("mode", "touch")
    if mode in ("pair", "widths", "pieces"):
        print(f"{a.run.name} ({mode}, {prov.get('smi_before', {}).get('gpu')}), model on {dev}")
        key = "D" if mode == "pair" else "cols"
        errs = []
        for r in run["results"]:
            f = (block_tiles.get_tir(G=r["G"], cols=PAIR_COLS, place="pair", D=r["D"]) if mode == "pair"
                 else block_tiles.get_tir(G=r["G"], cols=r["cols"], place=r.get("place", "scatter"),
                                          dtype=r.get("dtype", "float16"), wide=r.get("wide", 1)))
            t = tileroof.analyze(f, device=dev).timing.time_s
            errs.append(t / r["median_s"] - 1)
            print(f"{key}={r[key]:6d} {r.get('place', '')} {r.get('dtype', '')} x{r.get('wide', 1)} pass {r['pass']}: "
                  f"measured {r['median_s'] * 1e6:8.2f} us, modelled {t * 1e6:8.2f} us ({errs[-1]:+.1%})")
        abs_errs = [abs(e) for e in errs]
        print(f"|error| median {percentile(abs_errs, 0.5):.1%}, p90 {percentile(abs_errs, 0.9):.1%}, worst {max(abs_errs):.1%} over {len(errs)} launches")
        return 0

    def kernel(g, row):
        if mode == "rows":
            return block_tiles.get_tir(G=g, cols=row["pitch"])
        if mode == "scatter":
            return block_tiles.get_tir(G=g, cols=SCATTER_SHAPE[1], place="scatter",
                                       dtype=SCATTER_DTYPES[row.get("element_bytes", 2)])
        jit = block_bounce if mode == "bounce" else block_touch
        return jit.get_tir(G=g, threads=row["threads"], per_thread=row["per_thread"])
    sms = run["sm_count"]
    errs = []
    print(f"{a.run.name} ({run.get('mode', 'touch')}, {prov.get('smi_before', {}).get('gpu')}), model on {dev}")
    print(f"{'threads':>7} {'per_th':>6} {'G':>7} {'meas us':>9} {'pred us':>9} {'err':>7}  bound")
    for row in run["results"]:
        pred_pts = []
        for g, meas in row["points"]:
            r = tileroof.analyze(kernel(g, row), device=dev)
            t = r.timing.time_s
            pred_pts.append((g, t))
            errs.append(t / meas - 1)
            print(f"{row['threads']:7d} {row['per_thread']:6d} {g:7d} {meas * 1e6:9.2f} {t * 1e6:9.2f} "
                  f"{t / meas - 1:+7.1%}  {r.timing.bound}")
        slope = np.polyfit([p[0] for p in pred_pts], [p[1] for p in pred_pts], 1)[0]
        print(f"{'':>22} interval a block a SM: measured {row['interval_s'] * 1e9:7.1f} ns, "
              f"modelled {slope * sms * 1e9:7.1f} ns")
    abs_errs = [abs(e) for e in errs]
    print(f"{len(errs)} launches: |error| median {percentile(abs_errs, 0.5):.1%}, "
          f"p90 {percentile(abs_errs, 0.9):.1%}, worst {max(abs_errs):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

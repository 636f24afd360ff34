"""Write tileroof's predictions for corpus cases to a JSON file before they are measured, so the
record shows what the model said without having seen the GPU's answer.

    python benchmarks/predict.py --sweep NAME [--sweep NAME] [--cases a,b] --out FILE
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys

import tileroof
from tileroof.corpus import CASES


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--cases", default="")
    ap.add_argument("--device", default="h200")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    names = [n for n, c in CASES.items() if c.sweep in a.sweep] + [n for n in a.cases.split(",") if n]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True).stdout.strip())
    out = {"schema": "tileroof.predictions/1", "device": a.device, "tileroof_commit": commit + ("+dirty" if dirty else ""),
           "date_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "cases": {}}
    for n in names:
        c = CASES[n]
        r = tileroof.analyze(c.kernel, device=a.device, **c.params)
        out["cases"][n] = {"sweep": c.sweep, "predicted_s": r.estimated_time, "predicted_dram_bytes": r.dram_bytes,
                           "bound": r.bound}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"{len(names)} predictions -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Analysis time per kernel (TIR already elaborated): tileroof vs tilelang.tools.Analyzer.

    python benchmarks/analysis_speed.py [--repeat 20] [--json out.json]

Prints, per corpus case, the median time of one tileroof analysis (walk + counts + memory +
time model) and of TileLang's own Analyzer on the same PrimFunc, and the ratio.  The target is a
median of at most 5 ms per kernel.  TileLang's Analyzer needs a device object; a stand-in with
the fields it reads (bandwidth, compute_capability) is passed, since a carver device needs a GPU.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time


class _SeedDevice:
    bandwidth = [0, 4_800_000]
    compute_capability = "90"


def _median_time(fn, repeat: int) -> float:
    fn()
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--json")
    ap.add_argument("--include-sweeps", action="store_true")
    args = ap.parse_args(argv)

    import logging

    import tileroof
    from tileroof import devices

    logging.getLogger("TileLang").setLevel(logging.WARNING)
    from tileroof.corpus import CASES
    from tileroof.ir import to_primfunc

    dev = devices.load("h200")
    rows = []
    for name, case in CASES.items():
        if case.sweep and not args.include_sweeps:
            continue
        func, rest = to_primfunc(case.kernel, case.params)
        ours = _median_time(lambda: tileroof.analyze(func, device=dev, **rest), args.repeat)
        try:
            from tilelang.tools import Analyzer

            seed = _median_time(lambda: Analyzer.analysis(func, _SeedDevice()), args.repeat)
        except Exception as exc:  # noqa: BLE001 — the seed fails on some kernels; say so
            seed = float("nan")
            print(f"  tilelang Analyzer failed on {name}: {type(exc).__name__}: {str(exc)[:80]}")
        rows.append({"case": name, "tileroof_ms": ours * 1e3, "tilelang_analyzer_ms": seed * 1e3})
    print(f"{'case':40s} {'tileroof ms':>12s} {'Analyzer ms':>12s} {'ratio':>7s}")
    for r in rows:
        ratio = r["tileroof_ms"] / r["tilelang_analyzer_ms"] if r["tilelang_analyzer_ms"] == r["tilelang_analyzer_ms"] else float("nan")
        print(f"{r['case']:40s} {r['tileroof_ms']:12.3f} {r['tilelang_analyzer_ms']:12.3f} {ratio:7.2f}")
    med = statistics.median(r["tileroof_ms"] for r in rows)
    worst = max(r["tileroof_ms"] for r in rows)
    print(f"tileroof median {med:.3f} ms, worst {worst:.3f} ms over {len(rows)} kernels (target: median <= 5 ms)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "median_ms": med, "worst_ms": worst}, f, indent=1)
    return 0 if med <= 5.0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

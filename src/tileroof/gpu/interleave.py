"""Time a set of configurations (a sweep) interleaved, so that every config sees the GPU in the same
states (on the GPU machine).

    python -m tileroof.gpu.interleave --sweep NAME [--sweep NAME] [--cases a,b] [--rounds 8]
                                      [--per-round 10] --out DIR

Why: timed one after another (tileroof.gpu.measure), a config's runs can all fall in a slow or a
fast state of the GPU that lasts tens of runs to a whole process (session 19, runs 117-118:
benchmarks/diag_bimodal.py; a 64x256 unswizzled GEMM ran at ~3090 us in one process and ~2230 us
in the next at equal SM clocks), so the medians of two runs of a sweep rank its configs
differently (the grouped GEMM's sweep: Kendall tau 0.71 between runs 65 and 74).  Here every
config is compiled as the measure worker compiles it and checked against its torch reference
once; then `rounds` rounds each run every config `per_round` times in turn, each run as
tileroof.gpu.timing.time_events times it (the 256 MiB flush before it, events around the
kernel).  A config's time is the median of all its runs; each round's median is kept too.

Writes interleave-<UTC>.json: per case its params, sweep, correctness and a `time` entry in the
measure harness's form (median_s, p10_s, p90_s, n, method, primary "events").  tileroof.score does
not read these files: run 120 showed the interleaved runs in a warmer regime than the measure
harness's (which times each case alone after its compile and check), the grouped GEMM's 128x256
config 914-923 us against 775 (its first, cool round 783), so its times are not comparable with
the record; they rank a sweep's configs the same way run after run (Kendall tau 1.0 between two
processes for the grouped GEMM's sweep, where two measure runs gave 0.71).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import statistics
import time
from pathlib import Path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tileroof.gpu.interleave", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sweep", action="append", default=[])
    ap.add_argument("--cases", default="")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--per-round", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=16, help="parallel compiles")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import torch

    from ..corpus import CASES
    from .provenance import base_provenance, write_record
    from .stats import summarize
    from .timing import elapsed_s, flush_buffer, flushed_runs, warm_up
    from .worker import _compile_one, check

    names = [n for n, c in CASES.items() if c.sweep in a.sweep] + [n for n in a.cases.split(",") if n]
    prov = base_provenance("interleave", touch_gpu=True)
    t0 = time.time()
    dev = torch.device("cuda")
    runs, cases = {}, {}
    # elaborate one after another (get_tir is not known to be thread-safe), compile in a pool
    funcs = {n: CASES[n].kernel.get_tir(**CASES[n].params) for n in names}
    with cf.ThreadPoolExecutor(max_workers=max(1, min(a.jobs, len(names)))) as ex:
        compiled = dict(zip(names, ex.map(lambda n: _compile_one(CASES[n].kernel, funcs[n]), names)))
    for name in names:
        c = CASES[name]
        k, secs, err = compiled[name]
        rec = {"params": c.params, "sweep": c.sweep, "tags": list(c.tags), "rtol": c.rtol,
               "compile": {"ok": k is not None, "seconds": secs, "error": err}}
        cases[name] = rec
        if k is None:
            continue
        args = c.make_inputs(c.params, dev)
        rec["correct"] = check(c, k, args)
        if rec["correct"]["ok"]:
            runs[name] = (lambda k=k, args=args: k(*args))
    buf = flush_buffer()
    warm_up(runs.values(), buf)                   # as time_events does
    times = {n: [] for n in runs}
    rounds = {n: [] for n in runs}
    for _ in range(a.rounds):
        for n, f in runs.items():
            t = elapsed_s(flushed_runs(f, a.per_round, buf))
            times[n] += t
            rounds[n].append(statistics.median(t))
    method = (f"cuda-events around each run, 256 MiB L2 flush (zero_) before each run, interleaved: {a.rounds} "
              f"rounds of {a.per_round} runs of every config in turn (tileroof.gpu.interleave)")
    for n in runs:
        s = summarize(times[n], method)
        cases[n]["time"] = {**{k: s[k] for k in ("median_s", "p10_s", "p90_s", "n", "method")}, "primary": "events",
                            "events": s, "round_medians_s": rounds[n]}
        print(f"{n:60s} median {s['median_s'] * 1e6:9.1f} us  rounds "
              + " ".join(f"{r * 1e6:.0f}" for r in rounds[n]))
    path = write_record(a.out, prov, t0, {"cases": cases, "settings": {"rounds": a.rounds, "per_round": a.per_round}},
                        "tileroof.gpu.interleave")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

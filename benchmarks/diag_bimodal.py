"""Device diagnostic (session 19): why are some launches' event-timed runs bimodal (the grouped
GEMM's sweep: p10 and median 10 % apart, the two runs' medians ranking its configs at Kendall tau
0.71 against each other)?  Each case is compiled as the measure worker compiles it (its
kernel function's pass configs and flags: the grouped GEMM's disable warp specialisation); then, in one
process, rounds of `--per-round` runs of every case in turn (interleaved, so a slow period of the
GPU shows in every case's samples alike), each run as tileroof.gpu.timing.time_events times it (a
256 MiB zero_ before it, events around the kernel), and after each run the SM clock NVML reports
(pynvml, where installed) and the GPU's clock-event reasons (power or thermal caps).

    python benchmarks/diag_bimodal.py [--cases a,b] [--rounds 10] [--per-round 30] [--sets 1] [--out DIR]

--sets N allocates N input sets per case and times each as its own series: whether the mode
follows the buffers (their placement in memory) or the process.
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

CASES = ("sweep_grouped_bm64_bn256_bk64_s2_t256", "sweep_grouped_bm128_bn128_bk64_s2_t256",
         "sweep_gemmdeep_bm64_bn256_bk32_s6_t128_sw0", "sweep_gemmdeep_bm64_bn256_bk64_s4_t128_sw0")


def _nvml():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception:          # not installed or no driver access: samples without clocks
        return None, None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--per-round", type=int, default=30)
    ap.add_argument("--sets", type=int, default=1,
                    help="input sets per case, each allocated anew and timed as its own series (CASE#i)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)

    from tileroof.corpus import CASES as ALL
    from tileroof.gpu.provenance import base_provenance, write_record
    from tileroof.gpu.timing import elapsed_s, flush_buffer, flushed_runs, warm_up
    from tileroof.gpu.worker import _compile_one

    prov = base_provenance("diag_bimodal", touch_gpu=True)
    t0 = time.time()
    nv, handle = _nvml()
    fns = {}
    for name in a.cases.split(","):
        c = ALL[name]
        k, _, err = _compile_one(c.kernel, c.kernel.get_tir(**c.params))    # as the measure worker does
        if k is None:
            raise SystemExit(f"{name}: {err}")
        for i in range(a.sets):
            args = c.make_inputs(c.params, "cuda")
            fns[name if a.sets == 1 else f"{name}#{i}"] = (lambda k=k, args=args: k(*args))
    buf = flush_buffer()
    warm_up(fns.values(), buf)                 # as time_events does
    res = {n: {"us": [], "sm_mhz": [], "reasons": [], "round": []} for n in fns}
    for r in range(a.rounds):
        for n, f in fns.items():
            for _ in range(a.per_round):
                res[n]["us"].append(elapsed_s(flushed_runs(f, 1, buf))[0] * 1e6)
                res[n]["round"].append(r)
                if nv is not None:
                    res[n]["sm_mhz"].append(nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM))
                    try:
                        res[n]["reasons"].append(int(nv.nvmlDeviceGetCurrentClocksEventReasons(handle)))
                    except Exception:
                        res[n]["reasons"].append(-1)
    summary = {}
    for n, d in res.items():
        us = sorted(d["us"])
        k = len(us)
        summary[n] = {**d, "median_us": statistics.median(us), "p10_us": us[k // 10], "p90_us": us[(9 * k) // 10],
                      "round_medians_us": [statistics.median([u for u, rr in zip(d["us"], d["round"]) if rr == r])
                                           for r in range(a.rounds)]}
        print(f"{n:48s} median {summary[n]['median_us']:8.1f} p10 {summary[n]['p10_us']:8.1f} "
              f"p90 {summary[n]['p90_us']:8.1f}  rounds {' '.join(f'{x:.0f}' for x in summary[n]['round_medians_us'])}")
        if d["sm_mhz"]:
            pairs = sorted(zip(d["us"], d["sm_mhz"]))
            lo, hi = pairs[: k // 2], pairs[k // 2:]
            print(f"{'':48s} SM clock after the faster half {statistics.median(m for _, m in lo):.0f} MHz, "
                  f"slower half {statistics.median(m for _, m in hi):.0f} MHz")
    if a.out:
        path = write_record(a.out, prov, t0, {"results": summary,
                                              "settings": {"rounds": a.rounds, "per_round": a.per_round,
                                                           "sets": a.sets, "nvml": nv is not None}}, __doc__)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

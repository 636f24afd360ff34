"""Device diagnostic (session 18): is the event-timed floor of a TileLang launch in the measure
harness the floor calibrate measured with an empty Triton kernel (behind_flush_us)?  In one process,
interleaved, each timed by tileroof.gpu.timing.time_events (the measure harness's events: a 256 MiB
zero_ before each run): calibrate's empty Triton kernel, the corpus tile copies of run 109 compiled
as the measure worker compiles them (tilelang.compile of get_tir), and timeline set 17's timed copy.

    python benchmarks/diag_floor.py [--rounds 3] [--out DIR]     (on the GPU machine)
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

CASES = ("probe_chain_copy_1x64_g1", "probe_chain_copy_1x64_g132", "probe_chain_copy_64x64_g132",
         "probe_chain_copy_64x256_g132", "probe_chain_copy_256x256_g132")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    import tilelang
    import torch
    import triton

    from tileroof.corpus import CASES as ALL
    from tileroof.gpu.provenance import base_provenance, write_record
    from tileroof.gpu.timing import time_events
    from tileroof.gpu.tl_kernels import timed_copy

    @triton.jit
    def _noop(x):
        pass

    dummy = torch.zeros(1, device="cuda")
    prov = base_provenance("diag_floor", touch_gpu=True)
    t0 = time.time()
    fns = {"triton_empty": lambda: _noop[(1,)](dummy)}
    for name in CASES:
        c = ALL[name]
        k = tilelang.compile(c.kernel.get_tir(**c.params))
        args = c.make_inputs(c.params, "cuda")
        fns[name] = (lambda k=k, args=args: k(*args))
        p = c.params
        tk = timed_copy(p["M"], p["N"], p["block_M"], p["block_N"], p["threads"])
        gx, gy = -(-p["N"] // p["block_N"]), -(-p["M"] // p["block_M"])
        targs = (args[0], args[1], torch.zeros((gx * gy, 6), dtype=torch.int64, device="cuda"))
        fns["timed:" + name] = (lambda tk=tk, targs=targs: tk(*targs))
    res = {n: [] for n in fns}
    for _ in range(a.rounds):
        for n, f in fns.items():
            res[n].append(time_events(f, target_s=0.1)["median_s"] * 1e6)
    summary = {n: {"median_us": statistics.median(v), "rounds_us": v} for n, v in res.items()}
    for n, s in summary.items():
        print(f"{n:40s} {s['median_us']:7.2f} us  rounds {' '.join(f'{x:.2f}' for x in s['rounds_us'])}")
    if a.out:
        path = write_record(a.out, prov, t0, {"results": summary}, __doc__)
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How long does an fp32 division take inside a thread's element-wise work?  TileLang emits IEEE
division (no --use_fast_math by default): MUFU.RCP, a few FFMA, an FCHK and a branch to a slow
path around each one, so a thread's divisions may not overlap the way its multiplies do.
tl_kernels.div_chain divides (or, the control, multiplies) every element of a gemm-layout
fragment by its row's value `iters` times, one block per SM; the time per iteration over the
elements a thread holds is the cost of one division per thread element, at 1, 2 and 4 warps per
scheduler (128, 256, 512 threads) and 32 or 64 elements per thread.

    python -m tileroof.gpu.divchain --out DIR
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

# (M, N, threads): elements per thread = M * N / threads
CONFIGS = ((64, 64, 128), (64, 128, 128), (128, 64, 256), (128, 128, 256), (128, 128, 512), (128, 256, 512))
ITERS = (8, 40)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import torch

    from .provenance import base_provenance, write_record
    from .timing import time_events
    from .tl_kernels import div_chain
    prov = base_provenance("divchain", touch_gpu=True)
    t0 = time.time()
    grid = torch.cuda.get_device_properties(0).multi_processor_count
    params = [dict(M=M, N=N, threads=t, iters=it, grid=grid, op=op)
              for M, N, t in CONFIGS for it in ITERS for op in ("div", "mul")]
    kernels = div_chain.par_compile(params, num_workers=16, ignore_error=True)
    times = {}
    for p, k in zip(params, kernels):
        if k is None:
            continue
        A = torch.randn((p["M"], 64), dtype=torch.float16, device="cuda")
        B = torch.randn((p["N"], 64), dtype=torch.float16, device="cuda")
        D = torch.rand((p["M"],), dtype=torch.float32, device="cuda") + 1.0
        O = torch.empty((grid * p["M"], p["N"]), dtype=torch.float32, device="cuda")
        st = time_events(lambda: k(A, B, D, O))
        times[(p["M"], p["N"], p["threads"], p["iters"], p["op"])] = st["median_s"]
    results = []
    for M, N, t in CONFIGS:
        per_thread = M * N // t
        row = {"M": M, "N": N, "threads": t, "elements_per_thread": per_thread}
        for op in ("div", "mul"):
            lo, hi = times.get((M, N, t, ITERS[0], op)), times.get((M, N, t, ITERS[1], op))
            if lo and hi:
                per_iter = (hi - lo) / (ITERS[1] - ITERS[0])
                row[f"{op}_ns_per_iteration"] = per_iter * 1e9
                row[f"{op}_ns_per_thread_element"] = per_iter * 1e9 / per_thread
        results.append(row)
        print(f"{M}x{N} {t} threads ({per_thread} elements a thread): div "
              f"{row.get('div_ns_per_thread_element', float('nan')):.2f} ns, mul "
              f"{row.get('mul_ns_per_thread_element', float('nan')):.2f} ns per element per thread")
    ns = [r["div_ns_per_thread_element"] for r in results if "div_ns_per_thread_element" in r]
    path = write_record(a.out, prov, t0, {"sm_count": grid, "iters": list(ITERS), "results": results,
                                          "raw_median_s": {"|".join(map(str, k)): v for k, v in times.items()},
                                          "div_ns_per_thread_element_median": statistics.median(ns) if ns else None},
                        __doc__)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

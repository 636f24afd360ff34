"""How fast does one block move its bytes when nothing else is running?  The later waves of a
launch without a pipelined loop are timed no faster than each SM's own load-compute-store chain
(model.block_chain, the second array), whose bytes go at one block's stream rate.  This probe
measures that rate: the corpus element-wise add (fp16, two element loads and one store a thread
element, no shared memory) and tile copy (global -> shared -> global through two T.copy's), 256
threads, one 256-column tile of `rows` rows a block, on G blocks of one wave (G <= SMs: one block
an SM).  At each G the kernel time, L2 flushed before each run, against the block's bytes
(3 x rows x 256 x 2 for the add, 2 x for the copy) is a line: its slope is 1 / the block's
stream rate, its intercept the launch, the round trip and the block's fixed cost.  G = 1, 8, 33
leave the memory system idle but for those blocks (the uncontended rate); G = 132 is one block
on every SM, started together.

    python -m tileroof.gpu.blockstream --out DIR
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

ROWS = (8, 16, 32, 64, 128)
GRIDS = (1, 8, 33, 132)
COLS, THREADS = 256, 256
KERNELS = ("add", "copy")


def bytes_per_block(kernel: str, rows: int) -> int:
    """fp16 bytes one block reads and writes: the add two tiles in, one out; the copy one each way."""
    return (3 if kernel == "add" else 2) * rows * COLS * 2


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    import numpy as np
    import torch

    from ..corpus.elementwise import elementwise_add, tile_copy
    from .provenance import base_provenance, write_record
    from .timing import time_events
    prov = base_provenance("blockstream", touch_gpu=True)
    t0 = time.time()
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grids = sorted({min(g, sms) for g in GRIDS})
    jits = {"add": elementwise_add, "copy": tile_copy}
    times = {}
    for kernel in KERNELS:
        params = [dict(M=g * r, N=COLS, block_M=r, block_N=COLS, threads=THREADS, dtype="float16")
                  for g in grids for r in ROWS]
        compiled = jits[kernel].par_compile(params, num_workers=16, ignore_error=True)
        for p, k in zip(params, compiled):
            if k is None:
                continue
            g, r = p["M"] // p["block_M"], p["block_M"]
            A = torch.randn((p["M"], COLS), dtype=torch.float16, device="cuda")
            out = torch.empty_like(A)
            if kernel == "add":
                B = torch.randn_like(A)
                fn = lambda k=k, A=A, B=B, out=out: k(A, B, out)      # noqa: E731
                fn()
                ok = bool(torch.allclose(out, A + B))
            else:
                fn = lambda k=k, A=A, out=out: k(A, out)              # noqa: E731
                fn()
                ok = bool(torch.equal(out, A))
            st = time_events(fn)
            times[(kernel, g, r)] = {"median_s": st["median_s"], "p10_s": st.get("p10_s"), "p90_s": st.get("p90_s"),
                                     "n": st.get("n"), "correct": ok}
            print(f"{kernel} G={g:4d} rows={r:4d}: {st['median_s'] * 1e6:8.2f} us  correct={ok}", flush=True)
    results = []
    for kernel in KERNELS:
        for g in grids:
            pts = [(bytes_per_block(kernel, r), times[(kernel, g, r)]["median_s"]) for r in ROWS
                   if (kernel, g, r) in times and times[(kernel, g, r)]["correct"]]
            if len(pts) < 3:
                continue
            slope, icpt = (float(v) for v in np.polyfit([p[0] for p in pts], [p[1] for p in pts], 1))
            row = {"kernel": kernel, "blocks": g, "points": [[b, t] for b, t in pts],
                   "slope_s_per_byte": slope, "intercept_s": icpt,
                   "stream_bps": (1.0 / slope) if slope > 0 else None}
            # the rate from the largest two tiles alone (does the line bend: more loads in flight)
            (b1, t1), (b2, t2) = pts[-2], pts[-1]
            row["stream_bps_largest_pair"] = (b2 - b1) / (t2 - t1) if t2 > t1 else None
            results.append(row)
            print(f"{kernel} G={g:4d}: stream {row['stream_bps'] and row['stream_bps'] / 1e9:.1f} GB/s a block "
                  f"(largest pair {row['stream_bps_largest_pair'] and row['stream_bps_largest_pair'] / 1e9:.1f}), "
                  f"intercept {icpt * 1e6:.2f} us", flush=True)
    path = write_record(a.out, prov, t0, {"sm_count": sms, "rows": list(ROWS), "grids": grids, "cols": COLS,
                                          "threads": THREADS, "results": results,
                                          "raw": {"|".join(map(str, k)): v for k, v in times.items()}},
                        __doc__)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

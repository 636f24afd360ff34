"""What the harness's L2 flush leaves behind, and DRAM bandwidth against the read/write mix.

Timing like triton.testing.do_bench (tileroof.gpu.timing.time_events) zeroes a 256 MiB buffer
before every run.  The L2 is write-back: the zero_ ends with the L2 full of its dirty lines, and
the timed kernel, as it brings its own data in, evicts them -- their write-back lands inside the
timed window.  Nsight Compute (cache control "all") flushes and cleans the L2 before it measures,
so it does not see that traffic.  This probe measures it three ways:

1. events: a Triton streaming kernel (reads N_IN fp32 arrays, writes N_OUT, each S bytes; one
   16 KiB chunk per program) timed after a *dirty* flush (zero_ of the harness's buffer, as
   measure does), after a *clean* flush (a full read of the same buffer: the L2 ends holding clean
   lines, the dirty ones written back before the timed window) and with no flush at all; the
   dirty - clean difference is what the flush's write-back costs the kernel;
2. ncu with --cache-control none (the L2 left as the program leaves it) on [zero_, kernel] and
   [read, kernel] sequences: the DRAM bytes each kernel reads and writes, so the write-back shows
   as DRAM writes the kernel did not issue, and the read-flush's own DRAM writes after a zero_
   are the dirty bytes the zero_ left;
3. the clean-flush times of large streams give DRAM bandwidth by read share.

    python -m tileroof.gpu.flushwb --out DIR         # runs ncu over itself (--child)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

MIX = ((1, 0), (0, 1), (1, 1), (2, 1), (3, 1), (1, 2))       # (arrays read, arrays written)
SIZES_MIB = (4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512)   # bytes per array
NCU_MIX = ((1, 0), (1, 1), (0, 1))
NCU_SIZES_MIB = (8, 16, 32, 64, 256)
BLOCK = 4096                                                  # fp32 per program: 16 KiB
METRICS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum", "lts__t_sectors_op_write.sum")
MARKER = "FLUSHWB-LAUNCHES"


def _kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def stream_rw(a0, a1, a2, o0, o1, sink, N_IN: tl.constexpr, N_OUT: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        acc = tl.zeros([BLOCK], dtype=tl.float32) + 1.0
        if N_IN >= 1:
            acc += tl.load(a0 + offs)
        if N_IN >= 2:
            acc += tl.load(a1 + offs)
        if N_IN >= 3:
            acc += tl.load(a2 + offs)
        if N_OUT >= 1:
            tl.store(o0 + offs, acc)
        if N_OUT >= 2:
            tl.store(o1 + offs, acc * 2.0)
        if N_OUT == 0:
            tl.store(sink + pid, tl.sum(acc, axis=0))

    return stream_rw


class Streams:
    """Arrays and a launcher for one (n_in, n_out, bytes per array) stream."""

    def __init__(self, kern, n_in: int, n_out: int, mib: int):
        import torch
        n = (mib << 20) // 4
        self.grid = n // BLOCK
        self.ins = [torch.rand(n, device="cuda") for _ in range(n_in)]
        self.outs = [torch.empty(n, device="cuda") for _ in range(n_out)]
        self.sink = torch.empty(self.grid, device="cuda")
        dummy = self.sink
        a = (self.ins + [dummy] * 3)[:3]
        o = (self.outs + [dummy] * 2)[:2]
        self.fn = lambda: kern[(self.grid,)](a[0], a[1], a[2], o[0], o[1], self.sink, N_IN=n_in, N_OUT=n_out,
                                             BLOCK=BLOCK, num_warps=8)
        self.read_bytes = n_in * n * 4
        self.write_bytes = n_out * n * 4
        self.info = {"n_in": n_in, "n_out": n_out, "mib_per_array": mib, "read_bytes": self.read_bytes,
                     "write_bytes": self.write_bytes}

    def free(self) -> None:
        self.ins, self.outs, self.sink, self.fn = [], [], None, None


def each_stream(mixes, sizes):
    """A Streams for every (arrays read, arrays written) of `mixes` and size of `sizes`, its GPU
    memory given back before the next one is made."""
    import torch
    kern = _kernel()
    for n_in, n_out in mixes:
        for mib in sizes:
            s = Streams(kern, n_in, n_out, mib)
            yield s
            s.free()
            torch.cuda.empty_cache()


def flushes():
    """The dirty flush (the harness's: zero_ of its 256 MiB buffer) and the clean one (a full read of
    the same buffer, whose lines stay clean; it writes back whatever was dirty before it)."""
    import torch

    from .timing import flush_buffer
    buf = flush_buffer()
    return {"dirty": buf.zero_, "clean": lambda: torch.sum(buf, dtype=torch.int64), "none": None}


def time_all(runs: int) -> list[dict]:
    from .microbench import events
    fl = flushes()
    out = []
    for s in each_stream(MIX, SIZES_MIB):
        row = dict(s.info)
        for mode in ("dirty", "clean", "none", "dirty2", "clean2"):   # the first two again: drift check
            st = events(s.fn, runs, before=fl[mode.rstrip("2")])
            row[f"{mode}_median_s"] = st["median_s"]
            row[f"{mode}_p10_s"] = st.get("p10_s")
            row[f"{mode}_p90_s"] = st.get("p90_s")
        out.append(row)
    return out


def child() -> int:
    """Under ncu (--cache-control none): for each stream, [clean read] outside the profiled range,
    then profiled [zero_, kernel]; then [zero_] outside, profiled [read, kernel]."""
    import torch
    fl = flushes()
    done = []
    for s in each_stream(NCU_MIX, NCU_SIZES_MIB):
        s.fn()
        for mode, before, first in (("dirty", fl["clean"], fl["dirty"]), ("clean", fl["dirty"], fl["clean"])):
            for _ in range(2):
                before()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            first()
            s.fn()
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            done.append({**s.info, "mode": mode})
    print(MARKER + " " + json.dumps(done), flush=True)
    return 0


def profile(timeout: float, ncu_path: str | None) -> dict:
    from .profiling import profile_child
    run = profile_child("tileroof.gpu.flushwb", METRICS, MARKER, timeout, ncu_path, kernels=None, cache_control="none")
    launches = run["configs"]
    kernels = [{"kernel_name": name, **{k: m.get(k) for k in METRICS}}
               for name, m in zip(run["kernel_names"], run["metrics"])]
    # each launch record: the flush op's kernel(s), then the stream kernel
    pairs, i = [], 0
    for l in launches:
        ops = []
        while i < len(kernels) and "stream_rw" not in str(kernels[i]["kernel_name"]):
            ops.append(kernels[i])
            i += 1
        if i >= len(kernels):
            break
        flush_op = {k: sum((o.get(k) or 0) for o in ops) for k in METRICS}
        flush_op["kernel_names"] = [o["kernel_name"] for o in ops]
        pairs.append({**l, "flush_op": flush_op, "stream": kernels[i]})
        i += 1
    return {"command": run["command"], "returncode": run["returncode"], "stderr_tail": run["stderr_tail"],
            "pairs": pairs, "kernels": kernels if len(pairs) != len(launches) else None, "launches": len(launches)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--ncu", default=None)
    ap.add_argument("--no-ncu", action="store_true")
    a = ap.parse_args(argv)
    if a.child:
        return child()
    from .provenance import base_provenance, write_record
    prov = base_provenance("flushwb", touch_gpu=True)
    t0 = time.time()
    timed = time_all(a.runs)
    prof = {} if a.no_ncu else profile(400, a.ncu)
    path = write_record(a.out, prov, t0, {"block_floats": BLOCK, "runs": a.runs, "timed": timed, "ncu": prof}, __doc__)
    for r in timed:
        d, c = r["dirty_median_s"], r["clean_median_s"]
        moved = r["read_bytes"] + r["write_bytes"]
        print(f"R{r['n_in']}W{r['n_out']} {r['mib_per_array']:4d} MiB: dirty {d * 1e6:8.1f} us clean {c * 1e6:8.1f} us "
              f"none {r['none_median_s'] * 1e6:8.1f} us  diff {(d - c) * 1e6:6.1f} us  clean {moved / c / 1e9:6.0f} GB/s")
    for p in prof.get("pairs") or []:
        st, fo = p["stream"], p["flush_op"]
        extra_w = (st["dram__bytes_write.sum"] or 0) - p["write_bytes"]
        print(f"ncu {p['mode']:5s} R{p['n_in']}W{p['n_out']} {p['mib_per_array']:4d} MiB: stream DRAM read "
              f"{st['dram__bytes_read.sum'] / 1e6:8.1f} MB write {st['dram__bytes_write.sum'] / 1e6:8.1f} MB "
              f"(issued {p['write_bytes'] / 1e6:7.1f}; extra {extra_w / 1e6:7.1f}) {st['gpu__time_duration.sum'] / 1e3:7.1f} us; "
              f"flush op writes {fo['dram__bytes_write.sum'] / 1e6:7.1f} MB")
    if prof and not prof.get("pairs"):
        print("ncu: no pairs", prof.get("returncode"), prof.get("launches"), (prof.get("stderr_tail") or "")[-800:])
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

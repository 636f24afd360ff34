"""Timing on the GPU with CUDA events (torch imported lazily, inside the functions).

- `time_events`: like triton.testing.do_bench — before every timed run a 256 MiB buffer is
  written (zero_), so the kernel starts with a cold L2 and the CPU launch overlaps that write;
  events bracket the kernel alone; the median of n runs is reported.
- `time_graph`: a CUDA graph of L launches, cycling over several input sets whose total size
  exceeds ~3x L2 when memory allows (so successive launches do not hit the previous launch's
  data in L2), replayed n times; each replay's time / L.  For kernels of a few microseconds, where
  per-launch event timing is dominated by launch gaps."""
from __future__ import annotations

import time

from .stats import choose_reps, summarize

FLUSH_BYTES = 256 << 20
_flush_buf = None


def flush_buffer():
    global _flush_buf
    import torch
    if _flush_buf is None:
        _flush_buf = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    return _flush_buf


def time_flush(n: int = 5) -> float:
    """Median seconds of one L2 flush (a 256 MiB zero_), used to size the repetition count."""
    import torch
    buf = flush_buffer()
    s = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        s[i].record()
        buf.zero_()
        e[i].record()
    torch.cuda.synchronize()
    return summarize([a.elapsed_time(b) * 1e-3 for a, b in zip(s, e)])["median_s"]


def warm_up(fns, buf=None, n: int = 3) -> None:
    """n runs of each callable, each after a flush (buf.zero_(); none when buf is None)."""
    import torch
    for fn in fns:
        for _ in range(n):
            if buf is not None:
                buf.zero_()
            fn()
    torch.cuda.synchronize()


def flushed_runs(fn, n: int, buf=None) -> list:
    """n runs of fn(), each after a flush (buf.zero_(); none when buf is None) and bracketed by CUDA
    events: the (start, end) event pairs, not yet synchronised (elapsed_s reads them)."""
    import torch
    pairs = []
    for _ in range(n):
        if buf is not None:
            buf.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        pairs.append((s, e))
    return pairs


def elapsed_s(pairs) -> list:
    """Seconds between each (start, end) event pair, after a device synchronisation."""
    import torch
    torch.cuda.synchronize()
    return [a.elapsed_time(b) * 1e-3 for a, b in pairs]


def time_events(fn, *, target_s: float = 0.3, warmup: int = 3, min_n: int = 10, max_n: int = 200,
                flush: bool = True) -> dict:
    """Median/p10/p90 of event-timed single runs of fn(), L2 flushed before each run."""
    buf = flush_buffer() if flush else None
    warm_up([fn], buf, warmup)
    # a first estimate of one run, to size n
    est = summarize(elapsed_s(flushed_runs(fn, 3, buf)))["median_s"]
    flush_s = time_flush(3) if buf is not None else 0.0
    n = choose_reps(est, flush_s + 10e-6, target_s, min_n, max_n)
    times = elapsed_s(flushed_runs(fn, n, buf))
    method = ("cuda-events around each run, 256 MiB L2 flush (zero_) before each run"
              if flush else "cuda-events around each run, no L2 flush")
    out = summarize(times, method)
    out["warmup"] = warmup
    return out


def time_graph(fns, *, launches_min: int = 20, replays: int = 50, warmup_replays: int = 3) -> dict:
    """Capture a CUDA graph of launches cycling over fns (one callable per input set; at least
    launches_min launches), replay it `replays` times with events around each replay, and report
    per-launch times (replay time / launches)."""
    import torch
    fns = list(fns)
    per_cycle = len(fns)
    cycles = max(1, -(-launches_min // per_cycle))
    launches = cycles * per_cycle
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):      # warm-up outside capture, on a side stream (torch's advice)
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(cycles):
            for f in fns:
                f()
    for _ in range(warmup_replays):
        g.replay()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(replays)]
    for i in range(replays):
        starts[i].record()
        g.replay()
        ends[i].record()
    torch.cuda.synchronize()
    times = [a.elapsed_time(b) * 1e-3 / launches for a, b in zip(starts, ends)]
    out = summarize(times, f"cuda-graph replay of {launches} launches over {per_cycle} input "
                           f"set(s), time per replay / {launches}")
    out["launches_per_replay"] = launches
    out["input_sets"] = per_cycle
    del g
    return out


def rotation_sets(bytes_per_set: int, l2_bytes: int, max_sets: int = 64,
                  max_total_bytes: int = 2 << 30) -> int:
    """How many input sets to cycle over so their total exceeds 3x L2 (bounded by max_sets and
    max_total_bytes of extra memory)."""
    if bytes_per_set <= 0:
        return 1
    want = -(-3 * l2_bytes // bytes_per_set)
    by_mem = max(1, max_total_bytes // bytes_per_set)
    return int(max(1, min(want, max_sets, by_mem)))


class Stopwatch:
    """Wall-clock helper: seconds since creation, and whether a deadline (epoch s) has passed."""

    def __init__(self, deadline: float | None = None):
        self.t0 = time.time()
        self.deadline = deadline

    def elapsed(self) -> float:
        return time.time() - self.t0

    def left(self) -> float:
        return float("inf") if self.deadline is None else self.deadline - time.time()

    def expired(self, margin: float = 0.0) -> bool:
        return self.left() <= margin

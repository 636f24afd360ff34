"""Rank tile configurations by estimated time, without compiling any of them."""
from __future__ import annotations

import math

from .errors import TileroofError

# estimates this close are the same number (identical work on the same bound): the model cannot
# tell such configs apart by time
TIE_RTOL = 1e-6


def order_key(estimated_time: float, *, l2_slice_bytes: float = 0.0, loop_iterations: float = 0.0,
              dram_bytes: float = 0.0, runner_up: float = 0.0):
    """Sort key for configs: estimated time; estimates within TIE_RTOL of each other (the same
    work on the same bound, usually the tensor cores) are ordered by what the model's max() over
    resources does not charge them, in the order of the keywords: first the bytes they put on the
    L2 slices (after TPC mates' requests merge: less contention below the compute bound), then
    main-loop iterations per block (each pays a fixed cost besides its math:
    tileroof.gpu.gemm_pipe), then DRAM traffic, then the runner-up resource's time
    (Result.runner_up_s: the closer it is behind the bound, the less of it hides; the H100's
    DRAM-bound row sums of 16 and 32 rows a block, whose pipelined loops take 180 / 146 us beside
    196 us of DRAM, run 208 / 198 us)."""
    ties = (l2_slice_bytes or 0, loop_iterations or 0, dram_bytes or 0, runner_up or 0)
    if not math.isfinite(estimated_time) or estimated_time <= 0:
        return (math.inf, *ties)
    return (round(math.log(estimated_time) / math.log1p(TIE_RTOL)), *ties)


def rank_configs(kernel, base: dict, configs: list[dict], device=None) -> list[dict]:
    import tileroof
    from . import devices

    dev = devices.load(device)
    out = []
    for cfg in configs:
        params = {**base, **cfg}
        try:
            r = tileroof.analyze(kernel, device=dev, **params)
        except TileroofError as exc:
            out.append({"config": cfg, "error": str(exc), "estimated_time": float("inf")})
            continue
        out.append({"config": cfg, "estimated_time": r.estimated_time, "bound": r.bound,
                    "total_flops": r.total_flops, "dram_bytes": r.dram_bytes, "partial": r.partial,
                    "launch_error": r.launch_error,
                    "loop_iterations": r.loop_iterations, "l2_slice_bytes": r.l2_slice_bytes,
                    "runner_up_s": r.runner_up_s})
    # configs that cannot launch (shared memory or threads beyond the device's per-block limit) go last
    out.sort(key=lambda x: (bool(x.get("launch_error")),) + order_key(
        x["estimated_time"], l2_slice_bytes=x.get("l2_slice_bytes", 0), loop_iterations=x.get("loop_iterations", 0),
        dram_bytes=x.get("dram_bytes", 0), runner_up=x.get("runner_up_s", 0)))
    return out

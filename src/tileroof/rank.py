"""Rank tile configurations by estimated time, without compiling any of them."""
from __future__ import annotations

from .errors import TileroofError


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
                    "total_flops": r.total_flops, "dram_bytes": r.dram_bytes, "partial": r.partial})
    out.sort(key=lambda x: x["estimated_time"])
    return out
